//! The one error type of this crate.

use std::fmt;

use dp_erm::ErmError;
use dp_noise::NoiseError;

/// Largest per-query ε accepted: beyond it an answer guarantees nothing useful (dp-erm's
/// ceiling, one value for every mechanism and face).
pub use dp_erm::MAX_EPSILON;

/// Most training points (or candidates, or parts) any mechanism of this crate accepts:
/// larger inputs are refused before allocating, rather than exhausting memory.
pub const MAX_POINTS: usize = 1 << 30;

/// Everything that can go wrong in `dp-predict`, with the offending values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PredictError {
    /// The training data has no rows.
    EmptyData,
    /// Fewer rows than parts: every part of subsample-and-aggregate needs a row.
    TooFewRows {
        /// Rows given.
        rows: usize,
        /// Parts asked for.
        parts: usize,
    },
    /// Two inputs that must have the same length do not.
    LengthMismatch {
        /// Which input.
        what: &'static str,
        /// Length expected.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// A parameter is out of range (ε ≤ 0, α ∉ (0, ½), a step size too large, …).
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A count (parts, points) outside its accepted range; shown as the integer it is.
    InvalidCount {
        /// Which count.
        what: &'static str,
        /// Its value.
        value: usize,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A size computed from parameters (not given) is beyond what this crate accepts: the
    /// parameters, named in `what`, are the problem.
    ComputedTooLarge {
        /// What was computed, and from which parameters.
        what: &'static str,
        /// The value computed (a whole number, possibly beyond any integer type).
        value: f64,
        /// The largest accepted.
        limit: usize,
    },
    /// An input value is NaN or infinite.
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Its position.
        index: usize,
        /// The value.
        value: f64,
    },
    /// A list that must be strictly increasing is not.
    Unsorted {
        /// Which input.
        what: &'static str,
        /// Position of the first value not above its predecessor.
        index: usize,
        /// The predecessor.
        previous: f64,
        /// The value.
        value: f64,
    },
    /// A query has the wrong number of features.
    QueryDimension {
        /// Features the model expects.
        expected: usize,
        /// Features the query has.
        found: usize,
    },
    /// An input is larger than this crate accepts (it would exhaust memory or time).
    TooLarge {
        /// Which input.
        what: &'static str,
        /// Its size.
        size: usize,
        /// The largest accepted.
        limit: usize,
    },
    /// Answering would exceed the interface's privacy budget; nothing was computed or charged.
    BudgetExceeded {
        /// Queries asked for in this call.
        queries: usize,
        /// ε those queries would cost (per-query ε times their number, rounded up).
        requested: f64,
        /// ε left in the budget.
        remaining: f64,
        /// The budget's limit.
        limit: f64,
    },
    /// The trainer of subsample-and-aggregate refuses the data before anything ran (its
    /// parameters at a part's size, or a row outside its input contract).
    TrainerRefuses {
        /// The trainer's error message.
        message: String,
    },
    /// Training one part of subsample-and-aggregate failed.
    Training {
        /// The part.
        part: usize,
        /// The trainer's error message.
        message: String,
    },
    /// A [`crate::ServingInterface`] has pre-drawn noise for fewer answers than asked for;
    /// nothing was computed or charged. Depends on the counts only: refill the pool off the
    /// request path.
    NoisePoolEmpty {
        /// Answers asked for in this call.
        needed: usize,
        /// Answers the pool has noise for.
        pooled: usize,
    },
    /// A noise pool was drawn for a mechanism with a different noise law (or for one that
    /// takes no pre-drawn noise).
    NoisePoolMismatch,
    /// An error from dp-erm (data contract, solver, model).
    Erm(ErmError),
    /// An error from dp-noise (samplers, budget).
    Noise(NoiseError),
}

impl fmt::Display for PredictError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyData => write!(f, "the training data has no rows"),
            Self::TooFewRows { rows, parts } => write!(
                f,
                "{rows} training rows cannot be split into {parts} non-empty parts"
            ),
            Self::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what}: expected {expected} entries, found {found}"),
            Self::InvalidParameter {
                what,
                value,
                requirement,
            } => write!(f, "{what} must be {requirement}, got {value:?}"),
            Self::InvalidCount {
                what,
                value,
                requirement,
            } => write!(f, "{what} must be {requirement}, got {value}"),
            Self::ComputedTooLarge { what, value, limit } => {
                // Whole numbers: digits where they fit in 21, else scientific notation.
                if *value < 1e21 {
                    write!(f, "{what} is {value:.0}, above the limit {limit}")
                } else {
                    write!(f, "{what} is {value:e}, above the limit {limit}")
                }
            }
            Self::NonFinite { what, index, value } => {
                write!(f, "{what} {index} is not finite: {value:?}")
            }
            Self::Unsorted {
                what,
                index,
                previous,
                value,
            } => write!(
                f,
                "{what} must be strictly increasing, but entry {index} ({value:?}) follows {previous:?}"
            ),
            Self::QueryDimension { expected, found } => write!(
                f,
                "the query has {found} features, the model expects {expected}"
            ),
            Self::TooLarge { what, size, limit } => {
                write!(f, "{what} {size} exceeds the limit {limit}")
            }
            Self::BudgetExceeded {
                queries,
                requested,
                remaining,
                limit,
            } => write!(
                f,
                "privacy budget exceeded: {queries} queries cost epsilon {requested:?}, only \
                 {remaining:?} of {limit:?} remains; nothing was answered"
            ),
            Self::TrainerRefuses { message } => write!(
                f,
                "the trainer refuses this data (nothing was trained): {message}"
            ),
            Self::Training { part, message } => {
                write!(f, "training part {part} failed: {message}")
            }
            Self::NoisePoolEmpty { needed, pooled } => write!(
                f,
                "the noise pool holds draws for {pooled} answers, {needed} asked for; nothing \
                 was answered or charged (refill it off the request path)"
            ),
            Self::NoisePoolMismatch => write!(
                f,
                "the noise pool was drawn for a different noise law than this mechanism's"
            ),
            Self::Erm(e) => write!(f, "{e}"),
            Self::Noise(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for PredictError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Erm(e) => Some(e),
            Self::Noise(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ErmError> for PredictError {
    fn from(e: ErmError) -> Self {
        Self::Erm(e)
    }
}

impl From<NoiseError> for PredictError {
    fn from(e: NoiseError) -> Self {
        Self::Noise(e)
    }
}

/// A per-query ε: finite, > 0 and at most [`MAX_EPSILON`].
pub(crate) fn check_epsilon(epsilon: f64) -> Result<f64, PredictError> {
    if epsilon.is_finite() && epsilon > 0.0 && epsilon <= MAX_EPSILON {
        Ok(epsilon)
    } else {
        Err(PredictError::InvalidParameter {
            what: "epsilon",
            value: epsilon,
            requirement: "finite, > 0 and at most 1000",
        })
    }
}

/// A finite, strictly positive parameter.
pub(crate) fn check_positive(what: &'static str, value: f64) -> Result<f64, PredictError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(PredictError::InvalidParameter {
            what,
            value,
            requirement: "finite and > 0",
        })
    }
}

/// The first non-finite entry of `values`, as an error.
pub(crate) fn check_finite(what: &'static str, values: &[f64]) -> Result<(), PredictError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(PredictError::NonFinite {
            what,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// A size within [`MAX_POINTS`].
pub(crate) fn check_size(what: &'static str, size: usize) -> Result<usize, PredictError> {
    if size <= MAX_POINTS {
        Ok(size)
    } else {
        Err(PredictError::TooLarge {
            what,
            size,
            limit: MAX_POINTS,
        })
    }
}
