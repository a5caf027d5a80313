//! The one error type of this crate.

use std::fmt;

use dp_erm::ErmError;

/// Everything that can go wrong in `dp-kernel`, with the offending values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum KernelError {
    /// A parameter outside its accepted range.
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A count or size (features, map entries, work) outside its accepted range; shown as
    /// the integer it is.
    InvalidCount {
        /// Which count.
        what: &'static str,
        /// Its value (saturated at `usize::MAX` where a product overflows).
        value: usize,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// Orthogonal random features need a rotation-invariant spectral measure: the Gaussian
    /// kernel has one, the Laplacian kernel (Cauchy coordinates) does not.
    OrthogonalNeedsGaussian,
    /// From training or prediction (data checks, the mechanism, the solver, model files).
    Erm(ErmError),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::InvalidParameter {
                what,
                value,
                requirement,
            } => write!(f, "invalid {what}: {value:?}; it must be {requirement}"),
            KernelError::InvalidCount {
                what,
                value,
                requirement,
            } => write!(f, "invalid {what}: {value}; it must be {requirement}"),
            KernelError::OrthogonalNeedsGaussian => write!(
                f,
                "orthogonal random features need a rotation-invariant spectral measure: use \
                 them with the Gaussian kernel (the Laplacian kernel's Cauchy coordinates are \
                 not rotation invariant); use standard features for the Laplacian kernel"
            ),
            KernelError::Erm(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for KernelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            KernelError::Erm(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ErmError> for KernelError {
    fn from(e: ErmError) -> Self {
        KernelError::Erm(e)
    }
}
