//! The loss as a function of the margin.

/// A convex, twice-differentiable loss of the margin `z = y · wᵀx`.
///
/// The solver needs `ℓ`, `ℓ'` and `ℓ''`; `ℓ'' ≥ 0` everywhere (convexity) makes the
/// objective's Hessian positive definite once the regularization μ > 0 is added. The
/// concrete losses (logistic, Huber hinge) and their privacy constants live in `dp-erm`.
pub trait MarginLoss: Sync {
    /// `ℓ(z)`.
    fn value(&self, z: f64) -> f64;
    /// `ℓ'(z)`.
    fn derivative(&self, z: f64) -> f64;
    /// `ℓ''(z)`, which must be ≥ 0.
    fn second_derivative(&self, z: f64) -> f64;
    /// `(ℓ(z), ℓ'(z), ℓ''(z))` together, which the solvers need at every point; override
    /// when they share work (the logistic loss needs one `exp` for all three).
    fn evaluate(&self, z: f64) -> (f64, f64, f64) {
        (self.value(z), self.derivative(z), self.second_derivative(z))
    }
}

impl<L: MarginLoss + ?Sized> MarginLoss for &L {
    fn value(&self, z: f64) -> f64 {
        (**self).value(z)
    }
    fn derivative(&self, z: f64) -> f64 {
        (**self).derivative(z)
    }
    fn second_derivative(&self, z: f64) -> f64 {
        (**self).second_derivative(z)
    }
    fn evaluate(&self, z: f64) -> (f64, f64, f64) {
        (**self).evaluate(z)
    }
}
