//! The one error type of this crate.

use std::fmt;

/// What can go wrong setting up an audit.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AuditError {
    /// Too few runs for the requested confidence: even a perfect distinguisher could not
    /// show a privacy loss of `target` with `runs` runs per dataset.
    TooFewRuns {
        /// Runs per dataset given.
        runs: usize,
        /// The loss the audit must be able to show (the claimed ε).
        target: f64,
        /// The largest lower bound these runs could show at this confidence.
        largest: f64,
        /// The false-alarm rate α (confidence 1 − α).
        alpha: f64,
    },
    /// More runs per dataset than an audit holds in memory.
    TooManyRuns {
        /// Runs per dataset asked for (exact: a count, never rounded).
        runs: usize,
        /// The most accepted ([`crate::MAX_RUNS`]).
        max: usize,
    },
    /// A count or index is out of range (printed exactly, as an integer).
    InvalidCount {
        /// Which.
        what: &'static str,
        /// Its value.
        value: usize,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A size is above the documented cap of this crate; refused before allocating.
    TooLarge {
        /// Which.
        what: &'static str,
        /// The size asked for (exact; for a product that overflows, `usize::MAX`).
        size: usize,
        /// The largest accepted.
        limit: usize,
    },
    /// Two inputs that must have matching lengths do not.
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        found: usize,
    },
    /// A parameter is out of range.
    InvalidParameter {
        /// Which.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A score is NaN: it cannot be compared with a threshold.
    NanScore {
        /// Which dataset's runs (0 or 1).
        dataset: usize,
        /// The run.
        run: usize,
    },
    /// Building a neighbouring dataset failed.
    Data(dp_erm::ErmError),
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooFewRuns {
                runs,
                target,
                largest,
                alpha,
            } => {
                write!(
                    f,
                    "{runs} runs per dataset are too few: at confidence 1 - {alpha:?} "
                )?;
                if *largest > 0.0 {
                    write!(
                        f,
                        "even a perfect distinguisher would show at most epsilon {largest:.3}, \
                         below the {target:?} to be audited"
                    )?;
                } else {
                    write!(
                        f,
                        "even a perfect distinguisher would show no leakage at all"
                    )?;
                }
                match crate::bound::runs_needed(*target, *alpha) {
                    Ok(Some(needed)) => write!(f, "; use at least {needed} runs"),
                    Ok(None) => write!(
                        f,
                        "; no number of runs up to {} would be enough",
                        crate::MAX_RUNS
                    ),
                    // Not reached: the error is made only after both were checked.
                    Err(_) => Ok(()),
                }
            }
            Self::InvalidParameter {
                what,
                value,
                requirement,
            } => write!(f, "{what} = {value:?} is invalid: it must be {requirement}"),
            Self::InvalidCount {
                what,
                value,
                requirement,
            } => write!(f, "{what} = {value} is invalid: it must be {requirement}"),
            Self::TooLarge { what, size, limit } => write!(
                f,
                "{what} = {size} is too large: an audit accepts at most {limit}"
            ),
            Self::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what} has {found} entries, expected {expected}"),
            Self::TooManyRuns { runs, max } => write!(
                f,
                "{runs} runs per dataset are too many: an audit holds every score in memory, \
                 at most {max}"
            ),
            Self::NanScore { dataset, run } => {
                write!(f, "run {run} on dataset {dataset} scored NaN")
            }
            Self::Data(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for AuditError {}

impl From<dp_erm::ErmError> for AuditError {
    fn from(e: dp_erm::ErmError) -> Self {
        Self::Data(e)
    }
}
