//! Newton's method with a Cholesky solve: quadratic convergence for moderate d.

use faer::MatMut;
use faer::linalg::solvers::Solve;

use crate::design::Design;
use crate::iteration::{Point, check_stop, check_tolerance, finish, starting_point};
use crate::line_search::backtrack;
use crate::objective::{GlmObjective, HESSIAN_SIDE};
use crate::solution::{DEFAULT_TOLERANCE, Solution, Termination};
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
