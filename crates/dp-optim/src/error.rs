//! The one error type of this crate.

use std::fmt;

use crate::Termination;

/// Everything that can go wrong in `dp-optim`, with the offending values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OptimError {
    /// The data has no rows or no columns.
    EmptyData {
        /// Number of rows given.
        rows: usize,
        /// Number of columns given.
        cols: usize,
    },
    /// A data entry is NaN or infinite.
    NonFiniteData {
        /// Row of the entry.
        row: usize,
        /// Column of the entry.
        col: usize,
        /// The entry.
        value: f64,
    },
    /// A vector argument (labels, linear term, starting point, …) has the wrong length.
    DimensionMismatch {
        /// Which argument.
        what: &'static str,
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A vector argument has a NaN or infinite entry.
    NonFiniteInput {
        /// Which argument.
        what: &'static str,
        /// Position of the entry.
        index: usize,
        /// The entry.
        value: f64,
    },
    /// The regularization μ must be finite and > 0 (it makes the objective strongly convex).
    InvalidRegularization(f64),
    /// The gradient tolerance must be finite and > 0.
    InvalidTolerance(f64),
    /// A solver parameter is out of range.
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Why.
        why: String,
    },
    /// The compressed-sparse-row arrays are inconsistent.
    InvalidSparseStructure(String),
    /// An array sized by the input could not be allocated (not enough memory).
    AllocationFailed {
        /// What the array holds.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
    /// The hook set by [`crate::stop_when`] asked the solve to stop (no solution).
    Interrupted,
    /// The solver stopped without certifying convergence.
    NotConverged {
        /// Why it stopped.
        termination: Termination,
        /// ‖∇F‖ at the last point.
        gradient_norm: f64,
        /// The tolerance it had to reach.
        tolerance: f64,
    },
}

impl fmt::Display for OptimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Interrupted => write!(f, "the solve was interrupted"),
            Self::AllocationFailed { what, bytes } => write!(
                f,
                "could not allocate {bytes} bytes for {what}: not enough memory (use fewer \
                 rows or features, or raise the memory limit)"
            ),
            Self::EmptyData { rows, cols } => {
                write!(
                    f,
                    "data must have at least one row and one column, got {rows} x {cols}"
                )
            }
            Self::NonFiniteData { row, col, value } => {
                write!(
                    f,
                    "data entry at row {row}, column {col} is not finite: {value:?}"
                )
            }
            Self::DimensionMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what} has length {found}, expected {expected}"),
            Self::NonFiniteInput { what, index, value } => {
                write!(f, "{what}[{index}] is not finite: {value:?}")
            }
            Self::InvalidRegularization(mu) => {
                write!(f, "regularization must be finite and > 0, got {mu:?}")
            }
            Self::InvalidTolerance(t) => write!(f, "tolerance must be finite and > 0, got {t:?}"),
            Self::InvalidParameter { what, why } => write!(f, "invalid {what}: {why}"),
            Self::InvalidSparseStructure(why) => write!(f, "invalid sparse rows: {why}"),
            Self::NotConverged {
                termination,
                gradient_norm,
                tolerance,
            } => write!(
                f,
                "solver did not converge ({termination:?}): gradient norm {gradient_norm:e} > \
                 tolerance {tolerance:e}"
            ),
        }
    }
}

impl std::error::Error for OptimError {}

/// Checks that every entry of `values` is finite.
pub(crate) fn check_finite(what: &'static str, values: &[f64]) -> Result<(), OptimError> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(OptimError::NonFiniteInput {
            what,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// Checks the length of a vector argument.
pub(crate) fn check_length(
    what: &'static str,
    values: &[f64],
    expected: usize,
) -> Result<(), OptimError> {
    if values.len() == expected {
        Ok(())
    } else {
        Err(OptimError::DimensionMismatch {
            what,
            expected,
            found: values.len(),
        })
    }
}
