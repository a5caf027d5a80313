//! The admissible losses: convex, 1-Lipschitz, with bounded curvature (ALGORITHMS.md §1).

use dp_optim::MarginLoss;
use serde::{Deserialize, Serialize};

use crate::ErmError;
use crate::error::check_positive;

/// A loss of the margin `z = y·fᵀx` that the privacy proofs admit: convex, differentiable,
/// `|ℓ'| ≤ 1`, and `ℓ'' ≤ c`. (Squared loss is not Lipschitz; the plain hinge is not
/// differentiable — objective perturbation with it is not private.)
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Loss {
    /// `ln(1 + e^{−z})`: c = 1/4.
    Logistic,
    /// The Huber hinge of width h: 0 for `z > 1+h`, `(1+h−z)²/(4h)` for `|1−z| ≤ h`,
    /// `1 − z` for `z < 1−h`: c = 1/(2h). The papers use h = 0.5.
    Huber {
        /// The width h > 0.
        width: f64,
    },
}

impl Loss {
    /// Narrowest Huber width accepted: the curvature bound 1/(2h) enters the privacy
    /// calibration, and below this it would swamp any ε at realistic n.
    pub const MIN_HUBER_WIDTH: f64 = 1e-3;
    /// Widest Huber width accepted: beyond it the loss is a scaled square on every margin a
    /// model reaches and its values overflow for wider ones (1e155 squared is infinite).
    pub const MAX_HUBER_WIDTH: f64 = 1e3;

    /// The Huber hinge with width `width`, finite and in
    /// `[MIN_HUBER_WIDTH, MAX_HUBER_WIDTH]`.
    pub fn huber(width: f64) -> Result<Self, ErmError> {
        check_huber_width(width)?;
        Ok(Self::Huber { width })
    }

    /// The Lipschitz constant of ℓ in the margin: 1 for both.
    pub fn lipschitz(&self) -> f64 {
        1.0
    }

    /// `c = sup ℓ''`: 1/4 (logistic), 1/(2h) (Huber).
    pub fn curvature_bound(&self) -> f64 {
        match *self {
            Self::Logistic => 0.25,
            Self::Huber { width } => 1.0 / (2.0 * width),
        }
    }

    pub(crate) fn check(&self) -> Result<(), ErmError> {
        match *self {
            Self::Logistic => Ok(()),
            Self::Huber { width } => check_huber_width(width),
        }
    }

    /// A short name for metadata and reports.
    pub fn name(&self) -> String {
        match self {
            Self::Logistic => "logistic".into(),
            Self::Huber { width } => format!("huber(h={width})"),
        }
    }
}

fn check_huber_width(width: f64) -> Result<(), ErmError> {
    check_positive("Huber width", width)?;
    if (Loss::MIN_HUBER_WIDTH..=Loss::MAX_HUBER_WIDTH).contains(&width) {
        Ok(())
    } else {
        Err(ErmError::InvalidParameter {
            what: "Huber width",
            value: width,
            requirement: "between 1e-3 and 1e3",
        })
    }
}

impl MarginLoss for Loss {
    #[inline]
    fn value(&self, z: f64) -> f64 {
        self.evaluate(z).0
    }

    #[inline]
    fn derivative(&self, z: f64) -> f64 {
        self.evaluate(z).1
    }

    #[inline]
    fn second_derivative(&self, z: f64) -> f64 {
        self.evaluate(z).2
    }

    #[inline]
    fn evaluate(&self, z: f64) -> (f64, f64, f64) {
        match *self {
            Self::Logistic => {
                // e = e^{−|z|} ∈ (0, 1]: no overflow; ℓ = ln(1 + e) + max(−z, 0).
                let e = (-z.abs()).exp();
                let value = e.ln_1p() + (-z).max(0.0);
                let slope = if z >= 0.0 {
                    -e / (1.0 + e)
                } else {
                    -1.0 / (1.0 + e)
                };
                (value, slope, e / ((1.0 + e) * (1.0 + e)))
            }
            Self::Huber { width: h } => {
                if z > 1.0 + h {
                    (0.0, 0.0, 0.0)
                } else if z < 1.0 - h {
                    (1.0 - z, -1.0, 0.0)
                } else {
                    let gap = 1.0 + h - z;
                    (gap * gap / (4.0 * h), -gap / (2.0 * h), 1.0 / (2.0 * h))
                }
            }
        }
    }
}
