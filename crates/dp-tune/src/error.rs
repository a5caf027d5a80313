//! The one error type of this crate.

use std::fmt;

use dp_erm::ErmError;
use dp_noise::NoiseError;

/// Everything that can go wrong in `dp-tune`, with the offending values. Parameter and
/// size refusals come before any data is read or any model trained.
#[derive(Debug)]
#[non_exhaustive]
pub enum TuneError {
    /// The candidate list is empty.
    NoCandidates,
    /// A candidate's trainer reports no privacy guarantee (`Trainer::epsilon` is `None`).
    CandidateNotPrivate {
        /// The candidate's position in the list.
        candidate: usize,
    },
    /// A candidate's trainer reports an ε that is not finite, > 0 and at most
    /// [`dp_erm::MAX_EPSILON`].
    InvalidCandidateEpsilon {
        /// The candidate's position in the list.
        candidate: usize,
        /// The ε it reports.
        value: f64,
    },
    /// A candidate's trainer is (ε, δ)-DP with δ > 0 (`Trainer::delta`) and the selection
    /// (random stopping) composes pure ε only: it would under-report the δ.
    /// Split-and-select accepts such candidates.
    CandidateNotPureEpsilon {
        /// The candidate's position in the list.
        candidate: usize,
        /// The δ it reports.
        delta: f64,
    },
    /// A candidate's trainer has no Rényi curve (`Trainer::rdp_curve` is `None`, or not
    /// for replace-one neighbours), and the selection accounts by Rényi DP (random stopping
    /// with (ε, δ) candidates, [`crate::RandomStopping::approximate`]).
    CandidateWithoutCurve {
        /// The candidate's position in the list.
        candidate: usize,
    },
    /// A candidate's trainer reports a δ that is not finite and in [0, 1).
    InvalidCandidateDelta {
        /// The candidate's position in the list.
        candidate: usize,
        /// The δ it reports.
        delta: f64,
    },
    /// A tuning parameter is out of range.
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A count parameter is out of range (printed exactly, as an integer).
    InvalidCount {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: usize,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// Random stopping's cap on runs leaves a δ above the largest accepted
    /// ([`crate::MAX_DELTA`] for pure-ε candidates, the cap's share of the δ asked for with
    /// (ε, δ) candidates): refused at construction.
    DeltaTooLarge {
        /// The δ it would give (rounded up).
        delta: f64,
        /// The largest δ accepted.
        limit: f64,
        /// The end-to-end ε.
        epsilon: f64,
        /// The stop probability γ.
        stop_probability: f64,
        /// The cap on runs T.
        max_runs: usize,
    },
    /// The data cannot be split into parts of the documented minimum size.
    TooFewRows {
        /// Rows given.
        rows: usize,
        /// Parts the method splits them into.
        parts: usize,
        /// Rows the smallest part must have.
        min_per_part: usize,
    },
    /// Random stopping's held-out or training part would be below the minimum size.
    TooFewRowsToHoldOut {
        /// Rows given.
        rows: usize,
        /// Rows the held-out share would take from them.
        held_out: usize,
        /// The held-out share.
        fraction: f64,
        /// Rows each part must have.
        min_per_part: usize,
        /// Fewest rows accepted at this share.
        min_rows: usize,
    },
    /// A candidate refuses the data before anything ran (its parameters at its training
    /// part's size, or a row outside its input contract); nothing was charged or trained.
    CandidateRefuses {
        /// The candidate's position in the list.
        candidate: usize,
        /// What the trainer's check returned.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A candidate's trainer failed; its own error is the source.
    Training {
        /// The candidate's position in the list.
        candidate: usize,
        /// What the trainer returned.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A trained model could not count its mistakes on the held-out rows.
    Scoring {
        /// The candidate's position in the list.
        candidate: usize,
        /// What the model returned.
        source: ErmError,
    },
    /// The budget cannot pay for the selection; nothing was charged or trained.
    Budget(NoiseError),
    /// Selecting rows of the data failed.
    Data(ErmError),
    /// A sampler refused its parameters.
    Noise(NoiseError),
}

impl fmt::Display for TuneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoCandidates => {
                write!(f, "the candidate list is empty: give at least one trainer")
            }
            Self::CandidateNotPrivate { candidate } => write!(
                f,
                "candidate {candidate} reports no privacy guarantee (epsilon is None): every \
                 candidate of a private selection must be an epsilon-DP trainer"
            ),
            Self::InvalidCandidateEpsilon { candidate, value } => write!(
                f,
                "candidate {candidate} reports epsilon {value:?}, which must be finite, > 0 and \
                 at most 1000"
            ),
            Self::InvalidCount {
                what,
                value,
                requirement,
            } => write!(f, "{what} is {value} but must be {requirement}"),
            Self::DeltaTooLarge {
                delta,
                limit,
                epsilon,
                stop_probability,
                max_runs,
            } => write!(
                f,
                "random stopping with at most {max_runs} runs, stop probability \
                 {stop_probability:?} and end-to-end epsilon {epsilon:?} gives delta \
                 {delta:e}, above the largest accepted {limit:e}: raise max runs or the stop \
                 probability, or lower the epsilons"
            ),
            Self::CandidateNotPureEpsilon { candidate, delta } => write!(
                f,
                "candidate {candidate} is (epsilon, delta)-DP with delta {delta:?}: random \
                 stopping's pure-epsilon accounting composes pure-epsilon trainers only \
                 (split-and-select accepts a delta, and so does random stopping's (epsilon, \
                 delta) accounting of classifiers; regressors have none)"
            ),
            Self::CandidateWithoutCurve { candidate } => write!(
                f,
                "candidate {candidate} has no Renyi-DP curve (an (epsilon, delta) pair bounds \
                 no Renyi divergence): random stopping with (epsilon, delta) candidates \
                 accounts by Renyi DP and accepts pure-epsilon trainers, Gaussian output \
                 perturbation and DP-SGD; split-and-select accepts any (epsilon, delta) trainer"
            ),
            Self::InvalidCandidateDelta { candidate, delta } => write!(
                f,
                "candidate {candidate} reports delta {delta:?}, which must be finite and in [0, 1)"
            ),
            Self::InvalidParameter {
                what,
                value,
                requirement,
            } => write!(f, "{what} is {value:?} but must be {requirement}"),
            Self::TooFewRows {
                rows,
                parts,
                min_per_part,
            } => write!(
                f,
                "{rows} rows cannot be split into {parts} parts of at least {min_per_part} rows \
                 each (need at least {})",
                parts.saturating_mul(*min_per_part)
            ),
            Self::TooFewRowsToHoldOut {
                rows,
                held_out,
                fraction,
                min_per_part,
                min_rows,
            } => write!(
                f,
                "{rows} rows with held-out share {fraction} give a held-out part of {held_out} \
                 and a training part of {} rows; both need at least {min_per_part} (at least \
                 {min_rows} rows at this share)",
                rows - held_out
            ),
            Self::CandidateRefuses { candidate, source } => write!(
                f,
                "candidate {candidate} refuses this data (nothing was charged or trained): \
                 {source}"
            ),
            Self::Training { candidate, source } => {
                write!(f, "candidate {candidate} failed to train: {source}")
            }
            Self::Scoring { candidate, source } => write!(
                f,
                "the model of candidate {candidate} could not be scored on the held-out rows: \
                 {source}"
            ),
            Self::Budget(e) => write!(f, "the privacy budget cannot pay for this selection: {e}"),
            Self::Data(e) => write!(f, "{e}"),
            Self::Noise(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for TuneError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Training { source, .. } | Self::CandidateRefuses { source, .. } => {
                Some(source.as_ref())
            }
            Self::Scoring { source, .. } | Self::Data(source) => Some(source),
            Self::Budget(e) | Self::Noise(e) => Some(e),
            _ => None,
        }
    }
}

impl From<NoiseError> for TuneError {
    fn from(e: NoiseError) -> Self {
        Self::Noise(e)
    }
}

/// Checks a user's ε: finite and in (0, [`dp_erm::MAX_EPSILON`]].
pub(crate) fn check_epsilon(what: &'static str, value: f64) -> Result<f64, TuneError> {
    if value.is_finite() && value > 0.0 && value <= dp_erm::MAX_EPSILON {
        Ok(value)
    } else {
        Err(TuneError::InvalidParameter {
            what,
            value,
            requirement: "finite, > 0 and at most 1000",
        })
    }
}
