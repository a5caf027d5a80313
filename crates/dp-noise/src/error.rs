//! The one error type of this crate.

use std::fmt;

/// Everything that can go wrong in `dp-noise`. Every variant carries the offending value so
/// the message says what was wrong, not only that something was.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum NoiseError {
    /// ε must be finite and strictly positive.
    InvalidEpsilon(f64),
    /// A sensitivity must be finite and strictly positive.
    InvalidSensitivity(f64),
    /// The rate β of the vector noise must be finite, strictly positive, and not so small
    /// that the norm's e^−40 tail bound `(d + √(80d) + 40)/β` overflows.
    InvalidBeta(f64),
    /// A noise scale must be finite and strictly positive.
    InvalidScale(f64),
    /// A ratio `numerator / denominator` used as an exact scale needs both parts ≥ 1.
    InvalidRatio {
        /// The numerator given.
        numerator: u64,
        /// The denominator given.
        denominator: u64,
    },
    /// The vector noise needs dimension d ≥ 1.
    ZeroDimension,
    /// A partition of coordinates into groups that is not one (a group number skipped).
    InvalidGroups(String),
    /// A dimension beyond what a vector may allocate.
    DimensionTooLarge {
        /// The dimension requested.
        dim: usize,
        /// The largest accepted.
        max: usize,
    },
    /// A buffer or input has the wrong length.
    DimensionMismatch {
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// An entry names a coordinate at or past the dimension.
    IndexOutOfRange {
        /// Position of the entry in its input.
        position: usize,
        /// The coordinate it names.
        index: usize,
        /// The dimension: valid coordinates are `0..len`.
        len: usize,
    },
    /// A sparse input names the same coordinate twice.
    RepeatedIndex {
        /// Position of the later entry in its input.
        position: usize,
        /// The coordinate named twice.
        index: usize,
    },
    /// An input value (to be released, or a utility) is NaN or infinite.
    NonFiniteValue {
        /// Position of the value in its input (0 for a single value).
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// The exponential mechanism needs at least one candidate.
    NoCandidates,
    /// A mechanism that releases a fact about a data set needs at least one record (n ≥ 1).
    EmptyData,
    /// A candidate grid must be finite and strictly increasing (and, for norms, positive):
    /// the candidate at `position` is not.
    InvalidCandidate {
        /// Position of the candidate in the grid.
        position: usize,
        /// The offending candidate.
        value: f64,
    },
    /// A list of candidate levels names the same level twice.
    DuplicateCandidate {
        /// Position of the later occurrence in the list.
        position: usize,
    },
    /// A probability parameter (a quantile's p, a failure probability) outside its range.
    InvalidProbability {
        /// Which parameter.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A parameter combination that the exact samplers cannot represent.
    UnsupportedParameters(String),
    /// A spend would take the budget past its limit; nothing was charged.
    BudgetExceeded {
        /// The ε of the refused spend.
        requested: f64,
        /// The ε spent before it.
        spent: f64,
        /// The budget's limit.
        limit: f64,
    },
    /// The operating system could not provide entropy to seed the generator.
    EntropyUnavailable(String),
    /// A δ must be finite and ≥ 0, and a δ limit below 1 (a spend's δ may be 1).
    InvalidDelta(f64),
    /// A zCDP ρ must be finite and strictly positive.
    InvalidRho(f64),
    /// A spend would take a zCDP budget's ρ past its limit; nothing was charged.
    RhoBudgetExceeded {
        /// The ρ of the refused spend.
        requested: f64,
        /// The ρ spent before it.
        spent: f64,
        /// The budget's limit on ρ.
        limit: f64,
    },
    /// A spend's δ would take the budget past its δ limit (0 for a pure-ε budget); nothing
    /// was charged.
    DeltaBudgetExceeded {
        /// The δ of the refused spend.
        requested: f64,
        /// The δ spent before it.
        spent: f64,
        /// The budget's δ limit.
        limit: f64,
    },
}

impl fmt::Display for NoiseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidEpsilon(e) => write!(f, "epsilon must be finite and > 0, got {e:?}"),
            Self::InvalidSensitivity(s) => {
                write!(f, "sensitivity must be finite and > 0, got {s:?}")
            }
            Self::InvalidBeta(b) => {
                write!(
                    f,
                    "beta must be finite and > 0, and large enough that the noise norm's tail bound \
                     (d + sqrt(80 d) + 40)/beta is finite (smaller rates overflow), got {b:?}"
                )
            }
            Self::InvalidScale(s) => write!(f, "scale must be finite and > 0, got {s:?}"),
            Self::InvalidRatio {
                numerator,
                denominator,
            } => write!(
                f,
                "scale ratio {numerator}/{denominator} needs numerator and denominator >= 1"
            ),
            Self::ZeroDimension => write!(f, "dimension must be at least 1, got 0"),
            Self::InvalidGroups(why) => write!(f, "invalid feature groups: {why}"),
            Self::DimensionTooLarge { dim, max } => {
                write!(f, "dimension {dim} exceeds the largest accepted, {max}")
            }
            Self::DimensionMismatch { expected, found } => {
                write!(f, "expected length {expected}, found {found}")
            }
            Self::IndexOutOfRange {
                position,
                index,
                len,
            } => write!(
                f,
                "entry {position} names coordinate {index}, but there are {len} coordinates \
                 (0..{len})"
            ),
            Self::RepeatedIndex { position, index } => write!(
                f,
                "entry {position} names coordinate {index}, which an earlier entry already names"
            ),
            Self::NonFiniteValue { index, value } => {
                write!(f, "value at index {index} is not finite: {value:?}")
            }
            Self::NoCandidates => write!(f, "the candidate list is empty"),
            Self::EmptyData => write!(f, "the data set is empty: n must be at least 1"),
            Self::InvalidCandidate { position, value } => write!(
                f,
                "candidate {position} is {value:?}: a candidate grid must be finite and strictly \
                 increasing (and positive for norms)"
            ),
            Self::DuplicateCandidate { position } => write!(
                f,
                "candidate {position} repeats an earlier candidate: candidate levels must be \
                 distinct"
            ),
            Self::InvalidProbability { name, value } => {
                write!(f, "{name} is outside its allowed range, got {value:?}")
            }
            Self::UnsupportedParameters(why) => write!(f, "unsupported parameters: {why}"),
            Self::BudgetExceeded {
                requested,
                spent,
                limit,
            } => write!(
                f,
                "privacy budget exceeded: spending epsilon {requested:?} on top of {spent:?} \
                 already spent would pass the limit {limit:?}"
            ),
            Self::EntropyUnavailable(why) => {
                write!(f, "the operating system could not provide entropy: {why}")
            }
            Self::InvalidDelta(delta) => {
                write!(
                    f,
                    "delta must be finite, > 0 and at most MAX_DELTA = {MAX_DELTA:?} for a \
                     guarantee, a calibration or a budget's limit (0 only for a pure-epsilon \
                     limit; keep delta far below 1/n for n records), got {delta:?}"
                )
            }
            Self::InvalidRho(rho) => write!(f, "rho must be finite and > 0, got {rho:?}"),
            Self::RhoBudgetExceeded {
                requested,
                spent,
                limit,
            } => write!(
                f,
                "zCDP budget exceeded: spending rho {requested:?} on top of {spent:?} already \
                 spent would pass the limit {limit:?}"
            ),
            Self::DeltaBudgetExceeded {
                requested,
                spent,
                limit,
            } if *limit == 0.0 => write!(
                f,
                "privacy budget exceeded: the spend is (epsilon, delta)-DP with delta \
                 {requested:?}, and this is a pure-epsilon budget (delta limit 0); create it \
                 with PrivacyBudget::with_delta to accept a delta (spent so far {spent:?})"
            ),
            Self::DeltaBudgetExceeded {
                requested,
                spent,
                limit,
            } => write!(
                f,
                "privacy budget exceeded: spending delta {requested:?} on top of {spent:?} \
                 already spent would pass the delta limit {limit:?}"
            ),
        }
    }
}

impl std::error::Error for NoiseError {}

/// Checks that ε is finite and strictly positive.
pub(crate) fn check_epsilon(epsilon: f64) -> Result<f64, NoiseError> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(epsilon)
    } else {
        Err(NoiseError::InvalidEpsilon(epsilon))
    }
}

/// The largest δ that any (ε, δ) guarantee, calibration, conversion or budget limit of the
/// workspace accepts: 0.1.
///
/// An (ε, δ) guarantee lets a mechanism ignore ε with probability δ: the mechanism that
/// publishes each record whole with probability δ is (0, δ)-DP and leaks δ·n of n records
/// on average. A guarantee protects every record only when δ ≪ 1/n (10⁻⁵ or 1/n² are usual
/// choices); that needs n, which most constructors never see, so the choice of δ below
/// 1/n is the user's (the guide's "Choosing δ"). What the workspace refuses everywhere is a
/// δ that is no guarantee for any dataset of more than ten records: δ > 0.1, and δ = 1 −
/// 2⁻⁵³ or any other value near 1 that would make an "(ε, δ)-DP" label vacuous.
pub const MAX_DELTA: f64 = 0.1;

/// Checks a δ limit: finite and in `[0, MAX_DELTA]` (0 makes a budget pure); −0 becomes +0
/// (which a report prints as 0, not "-0").
pub(crate) fn check_delta(delta: f64) -> Result<f64, NoiseError> {
    check_spent_delta(delta).and_then(|d| {
        if d <= MAX_DELTA {
            Ok(d)
        } else {
            Err(NoiseError::InvalidDelta(delta))
        }
    })
}

/// Checks the δ of a guarantee, a calibration target or a conversion: finite and in
/// `(0, MAX_DELTA]`.
pub(crate) fn check_guarantee_delta(delta: f64) -> Result<f64, NoiseError> {
    if delta.is_finite() && delta > 0.0 && delta <= MAX_DELTA {
        Ok(delta)
    } else {
        Err(NoiseError::InvalidDelta(delta))
    }
}

/// Checks that a spend's δ is finite, ≥ 0 and ≤ 1 (δ = 1, no guarantee, is a valid claim
/// that every limit refuses); −0 becomes +0.
pub(crate) fn check_spent_delta(delta: f64) -> Result<f64, NoiseError> {
    if delta.is_finite() && (0.0..=1.0).contains(&delta) {
        Ok(if delta == 0.0 { 0.0 } else { delta })
    } else {
        Err(NoiseError::InvalidDelta(delta))
    }
}

/// Checks that a sensitivity is finite and strictly positive.
pub(crate) fn check_sensitivity(sensitivity: f64) -> Result<f64, NoiseError> {
    if sensitivity.is_finite() && sensitivity > 0.0 {
        Ok(sensitivity)
    } else {
        Err(NoiseError::InvalidSensitivity(sensitivity))
    }
}
