//! What both solvers share: the current point, when to stop, and how to report.

use crate::design::Design;
use crate::objective::{Evaluation, GlmObjective};
use crate::solution::{Solution, Termination, norm};
use crate::{MarginLoss, OptimError};

/// A point with its margins `X w` and the objective's value, gradient and Hessian weights.
pub(crate) struct Point {
    pub w: Vec<f64>,
    pub xw: Vec<f64>,
    pub evaluation: Evaluation,
    /// Whether `xw` was computed as `X w` from scratch (rather than updated along steps):
    /// only such a point's gradient norm is reported as a certificate.
    pub fresh: bool,
}

impl Point {
    /// The point `w`, margins computed from scratch (in the same pass as the gradient).
    pub fn fresh<D: Design + ?Sized, L: MarginLoss>(
        objective: &GlmObjective<'_, D, L>,
        w: Vec<f64>,
    ) -> Self {
        let (xw, evaluation) = objective.evaluate_fresh(&w);
        Self {
            w,
            xw,
            evaluation,
            fresh: true,
        }
    }

    pub fn value(&self) -> f64 {
        self.evaluation.value
    }

    pub fn gradient(&self) -> &[f64] {
        &self.evaluation.gradient
    }
}

pub(crate) fn check_tolerance(tolerance: f64) -> Result<(), OptimError> {
    if tolerance.is_finite() && tolerance > 0.0 {
        Ok(())
    } else {
        Err(OptimError::InvalidTolerance(tolerance))
    }
}

pub(crate) fn starting_point<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    start: Option<&[f64]>,
) -> Result<Vec<f64>, OptimError> {
    match start {
        Some(w) => {
            objective.check_point("starting point", w)?;
            Ok(w.to_vec())
        }
        None => Ok(vec![0.0; objective.dim()]),
    }
}

/// Whether to stop at `point`, and why. A point that looks converged is re-evaluated from
/// fresh margins `X w` first (the line search updates margins incrementally), so that
/// convergence is only ever claimed for the gradient at the returned weights.
pub(crate) fn check_stop<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    point: &mut Point,
    tolerance: f64,
    iterations: usize,
    max_iterations: usize,
) -> Option<Termination> {
    if norm(point.gradient()) <= tolerance && !point.fresh {
        *point = Point::fresh(objective, std::mem::take(&mut point.w));
    }
    let gradient_norm = norm(point.gradient());
    if !(point.value().is_finite() && gradient_norm.is_finite()) {
        Some(Termination::NumericalFailure)
    } else if gradient_norm <= tolerance {
        Some(Termination::Converged)
    } else if iterations >= max_iterations {
        Some(Termination::IterationLimit)
    } else {
        None
    }
}

/// Packs the point, re-evaluated from fresh margins `X w` if it is not already, so the
/// reported gradient norm is the true one at the returned weights.
pub(crate) fn finish<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    point: Point,
    iterations: usize,
    termination: Termination,
    tolerance: f64,
) -> Solution {
    let point = if point.fresh {
        point
    } else {
        Point::fresh(objective, point.w)
    };
    let gradient_norm = norm(point.gradient());
    // The returned point is what counts: certified whenever its fresh gradient norm is
    // within the tolerance, whatever stopped the iterations.
    let termination = if point.value().is_finite() && gradient_norm <= tolerance {
        Termination::Converged
    } else {
        termination
    };
    Solution {
        gradient_norm,
        value: point.value(),
        weights: point.w,
        iterations,
        termination,
        tolerance,
        regularization: objective.regularization(),
    }
}
