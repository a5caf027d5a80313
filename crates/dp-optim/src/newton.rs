//! Newton's method with a Cholesky solve: quadratic convergence for moderate d.

use faer::MatMut;
use faer::linalg::solvers::Solve;

use crate::design::Design;
use crate::line_search::{Point, backtrack};
use crate::objective::{GlmObjective, HESSIAN_SIDE};
use crate::solution::{DEFAULT_TOLERANCE, Solution, Termination, norm};
use crate::{MarginLoss, OptimError};

/// Damped Newton: solve `∇²F(w) p = −∇F(w)` by Cholesky (faer), backtrack along `p`.
///
/// Each iteration forms the d×d Hessian (`O(nnz·k)` for sparse rows with k entries each,
/// `O(n d²)` dense), so this is the solver for d up to a few thousand; use
/// [`crate::Lbfgs`] beyond. Converges in a handful of steps once near the optimum, which is
/// what makes the tight default tolerance ([`DEFAULT_TOLERANCE`]) cheap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Newton {
    tolerance: f64,
    max_iterations: usize,
}

impl Default for Newton {
    /// Tolerance [`DEFAULT_TOLERANCE`] (1e-10), at most 100 iterations.
    fn default() -> Self {
        Self {
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: 100,
        }
    }
}

impl Newton {
    /// Stop once `‖∇F‖ ≤ tolerance` (default 1e-10).
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Give up after this many Newton steps (default 100).
    pub fn max_iterations(mut self, max_iterations: usize) -> Self {
        self.max_iterations = max_iterations;
        self
    }

    /// Minimizes `objective` from `start` (a warm start) or from 0.
    pub fn minimize<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        start: Option<&[f64]>,
    ) -> Result<Solution, OptimError> {
        check_tolerance(self.tolerance)?;
        let mut current = Point::fresh(objective, starting_point(objective, start)?);
        let mut iterations = 0;
        loop {
            let stop = check_stop(
                objective,
                &mut current,
                self.tolerance,
                iterations,
                self.max_iterations,
            );
            if let Some(termination) = stop {
                return Ok(finish(
                    objective,
                    current,
                    iterations,
                    termination,
                    self.tolerance,
                ));
            }
            iterations += 1;
            let hessian = objective.hessian_lower_from(&current.evaluation.curvatures);
            let Ok(cholesky) = hessian.llt(HESSIAN_SIDE) else {
                let failure = Termination::NumericalFailure;
                return Ok(finish(
                    objective,
                    current,
                    iterations,
                    failure,
                    self.tolerance,
                ));
            };
            let mut direction: Vec<f64> = current.gradient().iter().map(|g| -g).collect();
            let d = direction.len();
            cholesky.solve_in_place(MatMut::from_column_major_slice_mut(&mut direction, d, 1));
            match backtrack(objective, &current, &direction) {
                Some(next) => current = next,
                None => {
                    let failure = Termination::LineSearchFailed;
                    return Ok(finish(
                        objective,
                        current,
                        iterations,
                        failure,
                        self.tolerance,
                    ));
                }
            }
        }
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
    Solution {
        gradient_norm: norm(point.gradient()),
        value: point.value(),
        weights: point.w,
        iterations,
        termination,
        tolerance,
        regularization: objective.regularization(),
    }
}
