//! What a solver returns: the point, how good it is, and why it stopped.

use crate::OptimError;

/// The default gradient tolerance: ‖∇F(ŵ)‖ ≤ 1e-10.
///
/// The privacy proofs of objective perturbation recover the noise from the optimality
/// condition and assume the exact minimizer; output perturbation inflates its noise by the
/// distance bound `‖ŵ − w*‖ ≤ ‖∇F(ŵ)‖/μ`. With μ ≥ 1e-7 this tolerance keeps that distance
/// ≤ 1e-3 in the worst case and typically far below the sensitivity `2/(nμ)`.
pub const DEFAULT_TOLERANCE: f64 = 1e-10;

/// Why a solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// `‖∇F‖ ≤ tolerance`: the point is certified.
    Converged,
    /// The iteration limit was reached first.
    IterationLimit,
    /// No step along the search direction decreased the objective, even at the resolution
    /// of floating point.
    LineSearchFailed,
    /// A non-finite value, or a Hessian that floating point could not factor.
    NumericalFailure,
}

/// The result of a minimization. Only a [`Termination::Converged`] solution is certified;
/// anything else carries the honest gradient norm at the point it stopped.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    pub(crate) weights: Vec<f64>,
    pub(crate) value: f64,
    pub(crate) gradient_norm: f64,
    pub(crate) iterations: usize,
    pub(crate) termination: Termination,
    pub(crate) tolerance: f64,
    pub(crate) regularization: f64,
}

impl Solution {
    /// The last point ŵ (certified only if [`Solution::is_converged`]).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// `F(ŵ)`.
    pub fn value(&self) -> f64 {
        self.value
    }

    /// `‖∇F(ŵ)‖₂`, computed from scratch at ŵ (margins `X ŵ` recomputed, not updated).
    ///
    /// It is a floating-point sum of n terms: for rows in the unit ball, as the private
    /// mechanisms require, its rounding error is around `1e-16·√n` relative and negligible
    /// beside the 1e-10 tolerance; for badly scaled data (entries ~1e6) it can be off by
    /// tens of percent at that level, so normalize first.
    pub fn gradient_norm(&self) -> f64 {
        self.gradient_norm
    }

    /// Iterations taken (Newton steps or L-BFGS steps).
    pub fn iterations(&self) -> usize {
        self.iterations
    }

    /// Why the solver stopped.
    pub fn termination(&self) -> Termination {
        self.termination
    }

    /// The tolerance the solver had to reach.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Whether `‖∇F(ŵ)‖ ≤ tolerance` at the returned point (so `Converged` also when the
    /// last step of an iteration limit happened to reach it).
    pub fn is_converged(&self) -> bool {
        self.termination == Termination::Converged
    }

    /// Bound on the distance to the exact minimizer from μ-strong convexity:
    /// `‖ŵ − w*‖ ≤ ‖∇F(ŵ)‖ / μ` (rounded up).
    pub fn distance_bound(&self) -> f64 {
        (self.gradient_norm / self.regularization).next_up()
    }

    /// The certified weights, or [`OptimError::NotConverged`] with the numbers.
    pub fn into_converged(self) -> Result<Vec<f64>, OptimError> {
        if self.is_converged() {
            Ok(self.weights)
        } else {
            Err(OptimError::NotConverged {
                termination: self.termination,
                gradient_norm: self.gradient_norm,
                tolerance: self.tolerance,
            })
        }
    }
}

pub(crate) fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

pub(crate) fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
