//! The one error type of this crate.

use std::fmt;

use dp_noise::NoiseError;
use dp_optim::OptimError;

/// Everything that can go wrong in `dp-erm`, with the offending values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErmError {
    /// The training set has no rows.
    EmptyData,
    /// A row has the wrong number of features.
    RowLength {
        /// The row.
        row: usize,
        /// Features expected.
        expected: usize,
        /// Features found.
        found: usize,
    },
    /// A feature value is NaN or infinite.
    NonFiniteFeature {
        /// The row.
        row: usize,
        /// The feature.
        col: usize,
        /// The value.
        value: f64,
    },
    /// A row's L2 norm exceeds 1: every guarantee assumes `‖x_i‖ ≤ 1`.
    RowNormAboveOne {
        /// The first offending row.
        row: usize,
        /// Its norm.
        norm: f64,
    },
    /// A label is not −1 or +1.
    InvalidLabel {
        /// The row.
        row: usize,
        /// The label.
        label: f64,
    },
    /// A value lies outside the public bound declared for its column.
    OutsidePublicBound {
        /// The row.
        row: usize,
        /// The feature.
        col: usize,
        /// The value.
        value: f64,
        /// The declared bound on |value|.
        bound: f64,
    },
    /// The number of labels, bounds or weights does not match.
    DimensionMismatch {
        /// Which input.
        what: &'static str,
        /// Length expected.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// A parameter is invalid (ε ≤ 0, Λ ≤ 0, Huber width ≤ 0, …).
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// The solver did not certify convergence, so no model is released. The wrapped error's
    /// numbers (gradient norm) depend on the data and are not private.
    NotConverged(OptimError),
    /// A model file could not be read.
    InvalidModelFile(String),
    /// From the noise samplers.
    Noise(NoiseError),
    /// From the solvers.
    Optim(OptimError),
}

impl fmt::Display for ErmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyData => write!(f, "the training set has no rows"),
            Self::RowLength {
                row,
                expected,
                found,
            } => {
                write!(f, "row {row} has {found} features, expected {expected}")
            }
            Self::NonFiniteFeature { row, col, value } => {
                write!(f, "feature {col} of row {row} is not finite: {value}")
            }
            Self::RowNormAboveOne { row, norm } => write!(
                f,
                "row {row} has norm {norm} > 1; the privacy guarantees need every row in the unit \
                 ball (scale by public bounds or clip rows explicitly)"
            ),
            Self::InvalidLabel { row, label } => {
                write!(f, "label of row {row} is {label}; labels must be -1 or +1")
            }
            Self::OutsidePublicBound {
                row,
                col,
                value,
                bound,
            } => write!(
                f,
                "feature {col} of row {row} is {value}, outside the declared public bound {bound}"
            ),
            Self::DimensionMismatch {
                what,
                expected,
                found,
            } => {
                write!(f, "{what} has length {found}, expected {expected}")
            }
            Self::InvalidParameter {
                what,
                value,
                requirement,
            } => {
                write!(f, "{what} = {value} is invalid: it must be {requirement}")
            }
            // The wrapped solver error holds data-dependent numbers; the message does not.
            Self::NotConverged(_) => write!(
                f,
                "no model released: the solver could not certify the gradient tolerance"
            ),
            Self::InvalidModelFile(why) => write!(f, "invalid model file: {why}"),
            Self::Noise(e) => write!(f, "{e}"),
            Self::Optim(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ErmError {}

impl From<NoiseError> for ErmError {
    fn from(e: NoiseError) -> Self {
        Self::Noise(e)
    }
}

impl From<OptimError> for ErmError {
    fn from(e: OptimError) -> Self {
        match e {
            OptimError::NotConverged { .. } => Self::NotConverged(e),
            other => Self::Optim(other),
        }
    }
}

/// Checks `value` is finite and > 0.
pub(crate) fn check_positive(what: &'static str, value: f64) -> Result<f64, ErmError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ErmError::InvalidParameter {
            what,
            value,
            requirement: "finite and > 0",
        })
    }
}
