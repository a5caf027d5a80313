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
    /// [`MarginLoss::evaluate`] at many margins at once, the solvers' hot loop: on entry
    /// `slopes` holds the margins `z_i`, on exit `ℓ'(z_i)`; `curvatures[i]` receives
    /// `ℓ''(z_i)` (same length). Returns `Σ_i ℓ(z_i)`. The default calls `evaluate` per
    /// margin and sums in order; override with code the compiler can vectorize. The sum's
    /// order must be fixed, so that results do not depend on the thread count.
    fn evaluate_in_place(&self, slopes: &mut [f64], curvatures: &mut [f64]) -> f64 {
        let mut total = 0.0;
        for (slope, curvature) in slopes.iter_mut().zip(curvatures) {
            let (value, first, second) = self.evaluate(*slope);
            total += value;
            *slope = first;
            *curvature = second;
        }
        total
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
    fn evaluate_in_place(&self, slopes: &mut [f64], curvatures: &mut [f64]) -> f64 {
        (**self).evaluate_in_place(slopes, curvatures)
    }
}
