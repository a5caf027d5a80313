//! Newton's method with a Cholesky solve: quadratic convergence for moderate d.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::cholesky::llt::solve::solve_in_place_with_conj;
use faer::{Conj, Mat, MatMut, Par};

use crate::design::Design;
use crate::iteration::{Point, check_stop, check_tolerance, finish, starting_point};
use crate::line_search::backtrack;
use crate::objective::{GlmObjective, check_hessian_dimension};
use crate::solution::{DEFAULT_TOLERANCE, Solution, Termination, norm};
use crate::{MarginLoss, OptimError};

/// Damped Newton: solve `∇²F(w) p = −∇F(w)` by Cholesky (faer), backtrack along `p`.
///
/// Each iteration forms the d×d Hessian (`O(nnz·k)` for sparse rows with k entries each,
/// `O(n d²)` dense), so this is the solver for d up to a few thousand; use
/// [`crate::Lbfgs`] beyond. Converges in a handful of steps once near the optimum, which is
/// what makes the tight default tolerance ([`DEFAULT_TOLERANCE`]) cheap. With many rows
/// (over 100 per dimension and 8,192 in all) the first steps, far from the optimum, use the
/// Hessian of a fixed stride of the rows (50 per dimension), which costs a fraction of the
/// full one and moves almost as far; the full Hessian takes over once `‖∇F‖` has fallen to
/// 1% of its starting value or a step shrinks it by less than 0.7.
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
        let mut hessian = HessianPlan::new(objective, &current);
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
                newton_step(objective, &mut current, &mut hessian)
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

/// Rows below which the Hessian is always formed from every row.
const MIN_SAMPLED_ROWS: usize = 4096;
/// Rows per dimension a sampled Hessian keeps (at least [`MIN_SAMPLED_ROWS`] in all).
const SAMPLED_ROWS_PER_DIMENSION: usize = 50;
/// The sampled phase ends once `‖∇F‖` is below this fraction of its value at the start…
const SAMPLED_PHASE_GRADIENT_FRACTION: f64 = 1e-2;
/// …or once a step shrinks `‖∇F‖` by less than this factor.
const SAMPLED_PHASE_MIN_CONTRACTION: f64 = 0.7;

/// Which Hessian the next step uses. Far from the optimum any positive definite matrix
/// gives a descent direction and the line search keeps every step safe, so the first steps
/// use the Hessian of every `stride`-th row (scaled by `stride`): a fraction of the cost of
/// the full one (forming it is most of a Newton step on sparse data) with nearly the same
/// steps. Near the optimum the full Hessian takes over for Newton's quadratic convergence.
/// The rows are a fixed stride, not a random draw: the same path on every run.
struct HessianPlan {
    stride: usize,
    end_gradient: f64,
}

impl HessianPlan {
    fn new<D: Design + ?Sized, L: MarginLoss>(
        objective: &GlmObjective<'_, D, L>,
        start: &Point,
    ) -> Self {
        Self {
            stride: sampling_stride(objective.examples(), objective.dim()),
            end_gradient: SAMPLED_PHASE_GRADIENT_FRACTION * norm(start.gradient()),
        }
    }

    fn hessian<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        curvatures: &[f64],
    ) -> Mat<f64> {
        if self.stride == 1 {
            return objective.hessian_lower_from(curvatures);
        }
        let scale = self.stride as f64;
        // Rows of weight 0 cost one comparison in the designs' Gram loops.
        let sampled: Vec<f64> = curvatures
            .iter()
            .enumerate()
            .map(|(i, &c)| if i % self.stride == 0 { c * scale } else { 0.0 })
            .collect();
        objective.hessian_lower_from(&sampled)
    }

    /// After a step from gradient norm `before` to `after`: whether to keep sampling.
    fn update(&mut self, before: f64, after: f64) {
        if after <= self.end_gradient || after > SAMPLED_PHASE_MIN_CONTRACTION * before {
            self.stride = 1;
        }
    }
}

/// Every how many rows the sampled Hessian takes one, for n rows of dimension d.
fn sampling_stride(rows: usize, dim: usize) -> usize {
    let keep = SAMPLED_ROWS_PER_DIMENSION
        .saturating_mul(dim)
        .max(MIN_SAMPLED_ROWS);
    (rows / keep).max(1)
}

/// One damped Newton step from `current`: `None` after moving, or why no step was possible.
fn newton_step<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    current: &mut Point,
    plan: &mut HessianPlan,
) -> Option<Termination> {
    let hessian = plan.hessian(objective, &current.evaluation.curvatures);
    let Some(direction) = newton_direction(hessian, current.gradient()) else {
        if plan.stride > 1 {
            // A sampled Hessian misses levels seen only in skipped rows: use the full one.
            plan.stride = 1;
            return None;
        }
        return Some(Termination::NumericalFailure);
    };
    match backtrack(objective, current, &direction) {
        Some(next) => {
            plan.update(norm(current.gradient()), norm(next.gradient()));
            *current = next;
            None
        }
        None if plan.stride > 1 => {
            // The sampled Hessian's direction found no decrease: retry with the full one.
            plan.stride = 1;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sampled_phase_keeps_fifty_rows_per_dimension_and_ends_on_either_signal() {
        assert_eq!(sampling_stride(30_162, 105), 5);
        assert_eq!(sampling_stride(8_000, 105), 1);
        assert_eq!(sampling_stride(1_000_000, 10), 244);
        assert_eq!(sampling_stride(1_000_000, usize::MAX), 1);
        let plan = |stride| HessianPlan {
            stride,
            end_gradient: 1e-3,
        };
        let mut slow = plan(5);
        slow.update(1.0, 0.8);
        assert_eq!(
            slow.stride, 1,
            "a step that shrinks ‖∇F‖ by less than 0.7 ends it"
        );
        let mut close = plan(5);
        close.update(0.01, 0.0009);
        assert_eq!(
            close.stride, 1,
            "reaching 1% of the starting gradient ends it"
        );
        let mut going = plan(5);
        going.update(1.0, 0.5);
        assert_eq!(going.stride, 5);
    }
}
