//! Newton's method with a Cholesky solve: quadratic convergence for moderate d.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::cholesky::llt::solve::solve_in_place_with_conj;
use faer::{Conj, Mat, MatMut, Par};

use crate::design::Design;
use crate::iteration::{Point, check_stop, check_tolerance, finish, starting_point};
use crate::line_search::backtrack;
use crate::objective::{GlmObjective, check_hessian_dimension};
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
        check_hessian_dimension(objective.dim())?;
        let mut current = Point::fresh(objective, starting_point(objective, start)?);
        let mut iterations = 0;
        loop {
            let stop = check_stop(
                objective,
                &mut current,
                self.tolerance,
                iterations,
                self.max_iterations,
            )
            .or_else(|| {
                iterations += 1;
                newton_step(objective, &mut current)
            });
            if let Some(termination) = stop {
                return Ok(finish(
                    objective,
                    current,
                    iterations,
                    termination,
                    self.tolerance,
                ));
            }
        }
    }
}

/// One damped Newton step from `current`: `None` after moving, or why no step was possible.
fn newton_step<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    current: &mut Point,
) -> Option<Termination> {
    let hessian = objective.hessian_lower_from(&current.evaluation.curvatures);
    let Some(direction) = newton_direction(hessian, current.gradient()) else {
        return Some(Termination::NumericalFailure);
    };
    match backtrack(objective, current, &direction) {
        Some(next) => {
            *current = next;
            None
        }
        None => Some(Termination::LineSearchFailed),
    }
}

/// Solves `H p = −g` by Cholesky on the lower triangle of `hessian`, or `None` if floating
/// point cannot factor it. Sequential on purpose: the same bits for any thread count (the
/// factorization is `d³/3` flops, small beside forming the Hessian).
fn newton_direction(mut hessian: Mat<f64>, gradient: &[f64]) -> Option<Vec<f64>> {
    let d = gradient.len();
    let mut scratch = MemBuffer::new(cholesky_in_place_scratch::<f64>(
        d,
        Par::Seq,
        Default::default(),
    ));
    let stack = MemStack::new(&mut scratch);
    cholesky_in_place(
        hessian.as_mut(),
        Default::default(),
        Par::Seq,
        stack,
        Default::default(),
    )
    .ok()?;
    let mut direction: Vec<f64> = gradient.iter().map(|g| -g).collect();
    let rhs = MatMut::from_column_major_slice_mut(&mut direction, d, 1);
    solve_in_place_with_conj(hessian.as_ref(), Conj::No, rhs, Par::Seq, stack);
    direction.iter().all(|p| p.is_finite()).then_some(direction)
}
