//! Newton's method with a Cholesky solve: quadratic convergence for moderate d.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::{cholesky_in_place, cholesky_in_place_scratch};
use faer::linalg::cholesky::llt::solve::{solve_in_place_scratch, solve_in_place_with_conj};
use faer::{Conj, Mat, MatMut, Par};
use rayon::prelude::*;

use crate::design::Design;
use crate::iteration::{Point, check_stop, check_tolerance, finish, starting_point};
use crate::line_search::backtrack;
use crate::objective::{GlmObjective, check_hessian_dimension};
use crate::pool::on_worker;
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
/// 1% of its starting value or a step shrinks it by less than 0.7. Near the optimum, where
/// two steps that reuse the last Cholesky factor (chord steps: no new Hessian) are
/// predicted to reach the tolerance, they replace Newton's last step, which would overshoot
/// it by orders of magnitude. Every step is checked by the line search, and the certificate
/// is the gradient at the final point as before.
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
        on_worker(objective.pass_entries(), || {
            self.minimize_on_worker(objective, start)
        })
    }

    fn minimize_on_worker<D: Design + ?Sized, L: MarginLoss>(
        &self,
        objective: &GlmObjective<'_, D, L>,
        start: Option<&[f64]>,
    ) -> Result<Solution, OptimError> {
        check_tolerance(self.tolerance)?;
        check_hessian_dimension(objective.dim())?;
        let mut current = Point::fresh(objective, starting_point(objective, start)?);
        let mut iterations = 0;
        let mut hessian = HessianPlan::new(objective, &current, self.tolerance);
        loop {
            if crate::stop::requested() {
                return Err(OptimError::Interrupted);
            }
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
/// A chord step from the point a Newton step reached, with that step's factor, is predicted
/// to shrink `‖∇F‖` this many times less than the Newton step did.
///
/// A chord step from `w` with the factor of `H(w₀)` contracts `‖∇F‖` by about
/// `‖H(w₀)⁻¹ (H(w) − H(w₀))‖`, which grows with `‖w − w₀‖`, as did the contraction of the
/// Newton step that left `w₀`. Measured on Adult and KDDCup99 (logistic and Huber): chord
/// contractions 2.2–3.6 times the Newton step's.
const CHORD_AFTER_NEWTON: f64 = 4.0;
/// A chord step after a chord step is predicted to shrink `‖∇F‖` this many times less than
/// the one before (measured on the same fits: about as much, 1.0–1.04 times; 2 is margin).
const CHORD_AFTER_CHORD: f64 = 2.0;
/// Chord steps are taken only when this many are predicted to reach the tolerance.
///
/// A chord step costs one evaluation at the full step (`X(w + p)`, the loss and `Xᵀ` of its
/// slopes, in one pass where the design fuses them); a Newton step adds forming the
/// Hessian (on sparse rows with k entries several times that) and factoring it. Two chord
/// steps are cheaper than one Newton step whenever the Hessian costs more than one
/// evaluation, which is why near the optimum, where Newton's last step overshoots the
/// tolerance by orders of magnitude, the last Hessian is skipped.
const CHORD_MAX_STEPS: i32 = 2;

/// Which Hessian the next step uses. Far from the optimum any positive definite matrix
/// gives a descent direction and the line search keeps every step safe, so the first steps
/// use the Hessian of every `stride`-th row (scaled by `stride`): a fraction of the cost of
/// the full one (forming it is most of a Newton step on sparse data) with nearly the same
/// steps. Near the optimum the full Hessian takes over for Newton's quadratic convergence.
/// The rows are a fixed stride, not a random draw: the same path on every run.
struct HessianPlan {
    stride: usize,
    end_gradient: f64,
    /// The Cholesky factor of the last full Hessian, while chord steps may reuse it.
    reusable: Option<Mat<f64>>,
    tolerance: f64,
}

impl HessianPlan {
    fn new<D: Design + ?Sized, L: MarginLoss>(
        objective: &GlmObjective<'_, D, L>,
        start: &Point,
        tolerance: f64,
    ) -> Self {
        Self {
            stride: sampling_stride(objective.examples(), objective.dim()),
            end_gradient: SAMPLED_PHASE_GRADIENT_FRACTION * norm(start.gradient()),
            reusable: None,
            tolerance,
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
        // In parallel: on 10⁶ rows a serial pass here was a visible share of a 16-thread fit.
        let sampled: Vec<f64> = curvatures
            .par_iter()
            .with_min_len(4096)
            .enumerate()
            .map(|(i, &c)| if i % self.stride == 0 { c * scale } else { 0.0 })
            .collect();
        objective.hessian_lower_from(&sampled)
    }

    /// After a step from gradient norm `before` to `after` with the lower Cholesky factor
    /// `factor` (reused if `chord`): whether to keep sampling, and whether the next step may
    /// reuse `factor` — only a full Hessian's, and only if [`CHORD_MAX_STEPS`] chord steps
    /// are predicted to reach the tolerance.
    fn update(&mut self, before: f64, after: f64, factor: Mat<f64>, chord: bool) {
        let full = self.stride == 1;
        if after <= self.end_gradient || after > SAMPLED_PHASE_MIN_CONTRACTION * before {
            self.stride = 1;
        }
        let worsening = if chord {
            CHORD_AFTER_CHORD
        } else {
            CHORD_AFTER_NEWTON
        };
        let predicted = worsening * after / before;
        let reaches = predicted.powi(CHORD_MAX_STEPS) * after <= self.tolerance;
        self.reusable = (full && reaches).then_some(factor);
    }
}

/// Every how many rows the sampled Hessian takes one, for n rows of dimension d.
fn sampling_stride(rows: usize, dim: usize) -> usize {
    let keep = SAMPLED_ROWS_PER_DIMENSION
        .saturating_mul(dim)
        .max(MIN_SAMPLED_ROWS);
    (rows / keep).max(1)
}

/// One damped Newton (or chord) step from `current`: `None` after moving, or why no step
/// was possible.
fn newton_step<D: Design + ?Sized, L: MarginLoss>(
    objective: &GlmObjective<'_, D, L>,
    current: &mut Point,
    plan: &mut HessianPlan,
) -> Option<Termination> {
    let chord = plan.reusable.is_some();
    let factor = match plan.reusable.take() {
        Some(factor) => factor,
        None => match cholesky_factor(plan.hessian(objective, &current.evaluation.curvatures)) {
            Some(factor) => factor,
            // A sampled Hessian misses levels seen only in skipped rows: use the full one.
            None if plan.stride > 1 => {
                plan.stride = 1;
                return None;
            }
            None => return Some(Termination::NumericalFailure),
        },
    };
    let step = newton_direction(&factor, current.gradient())
        .and_then(|direction| backtrack(objective, current, &direction));
    match step {
        Some(next) => {
            plan.update(
                norm(current.gradient()),
                norm(next.gradient()),
                factor,
                chord,
            );
            *current = next;
            None
        }
        // A stale factor or a sampled Hessian found no decrease: retry with the full one.
        None if chord || plan.stride > 1 => {
            plan.stride = 1;
            None
        }
        None => Some(Termination::LineSearchFailed),
    }
}

/// Dimension from which the Cholesky factorization runs on every thread of the pool.
const PARALLEL_FACTOR_DIMENSION: usize = 256;

/// Whether a `d`×`d` factorization is large enough to share among threads: its `d³/3`
/// flops (3·10⁸ at d = 1,000, a third of a fit there on one thread) outweigh forming
/// the Hessian from about `50·d` rows.
fn factor_dimension_is_parallel(d: usize) -> bool {
    d >= PARALLEL_FACTOR_DIMENSION
}

/// The lower Cholesky factor of the matrix whose lower triangle is `hessian`, or `None` if
/// floating point cannot factor it.
///
/// From [`PARALLEL_FACTOR_DIMENSION`] on, in parallel on the current rayon pool. faer's
/// blocked factorization fixes its blocks by the dimension alone and parallelizes over
/// independent blocks of its products, each entry summed in the same order: the same
/// bits as the sequential factorization on any number of threads (tested at d = 256,
/// 700 and 1,001 on 1 to 4 threads).
pub(crate) fn cholesky_factor(mut hessian: Mat<f64>) -> Option<Mat<f64>> {
    let d = hessian.nrows();
    let par = if factor_dimension_is_parallel(d) {
        Par::rayon(0)
    } else {
        Par::Seq
    };
    let mut scratch = MemBuffer::new(cholesky_in_place_scratch::<f64>(d, par, Default::default()));
    cholesky_in_place(
        hessian.as_mut(),
        Default::default(),
        par,
        MemStack::new(&mut scratch),
        Default::default(),
    )
    .ok()?;
    Some(hessian)
}

/// Solves `L Lᵀ p = −g` for the lower Cholesky factor `factor`, or `None` if the result is
/// not finite.
pub(crate) fn newton_direction(factor: &Mat<f64>, gradient: &[f64]) -> Option<Vec<f64>> {
    let d = gradient.len();
    let mut direction: Vec<f64> = gradient.iter().map(|g| -g).collect();
    let rhs = MatMut::from_column_major_slice_mut(&mut direction, d, 1);
    let mut scratch = MemBuffer::new(solve_in_place_scratch::<f64>(d, 1, Par::Seq));
    solve_in_place_with_conj(
        factor.as_ref(),
        Conj::No,
        rhs,
        Par::Seq,
        MemStack::new(&mut scratch),
    );
    direction.iter().all(|p| p.is_finite()).then_some(direction)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Cholesky factor of a dense SPD matrix of dimension `d`, as bits, factored on a
    /// pool of `threads` threads.
    fn factor_bits(d: usize, threads: usize) -> Vec<u64> {
        let a = Mat::<f64>::from_fn(d, d, |i, j| {
            (((i * 7919 + j * 104_729) % 1000) as f64 / 1000.0 - 0.5) / d as f64
        });
        let mut h = &a * a.transpose();
        for i in 0..d {
            h[(i, i)] += 1e-3;
        }
        let factor = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| cholesky_factor(h))
            .unwrap();
        (0..d)
            .flat_map(|j| (j..d).map(move |i| (i, j)))
            .map(|(i, j)| factor[(i, j)].to_bits())
            .collect()
    }

    #[test]
    fn a_large_factorization_runs_in_parallel_with_the_same_bits_on_any_thread_count() {
        assert!(factor_dimension_is_parallel(PARALLEL_FACTOR_DIMENSION));
        assert!(!factor_dimension_is_parallel(PARALLEL_FACTOR_DIMENSION - 1));
        for d in [PARALLEL_FACTOR_DIMENSION, 700, 1_001] {
            let one = factor_bits(d, 1);
            for threads in [2, 3, 4] {
                assert!(one == factor_bits(d, threads), "d = {d}, {threads} threads");
            }
        }
    }

    #[test]
    fn the_sampled_phase_keeps_fifty_rows_per_dimension_and_ends_on_either_signal() {
        assert_eq!(sampling_stride(30_162, 105), 5);
        assert_eq!(sampling_stride(8_000, 105), 1);
        assert_eq!(sampling_stride(1_000_000, 10), 244);
        assert_eq!(sampling_stride(1_000_000, usize::MAX), 1);
        let plan = |stride| HessianPlan {
            stride,
            end_gradient: 1e-3,
            reusable: None,
            tolerance: 1e-10,
        };
        let factor = || Mat::<f64>::identity(2, 2);
        let mut slow = plan(5);
        slow.update(1.0, 0.8, factor(), false);
        assert_eq!(
            slow.stride, 1,
            "a step that shrinks ‖∇F‖ by less than 0.7 ends it"
        );
        let mut close = plan(5);
        close.update(0.01, 0.0009, factor(), false);
        assert_eq!(
            close.stride, 1,
            "reaching 1% of the starting gradient ends it"
        );
        let mut going = plan(5);
        going.update(1.0, 0.5, factor(), false);
        assert_eq!(going.stride, 5);
    }

    #[test]
    fn a_factor_is_reused_only_from_a_full_hessian_and_when_two_chord_steps_should_finish() {
        let plan = |stride| HessianPlan {
            stride,
            end_gradient: 0.0,
            reusable: None,
            tolerance: 1e-10,
        };
        let factor = || Mat::<f64>::identity(2, 2);
        // Adult's last Newton steps: 4e-5 → 2.5e-8 predicts chord steps contracting by
        // 4·6.25e-4, two of which end at 1.6e-13; 1.85e-3 → 4e-5 predicts 3e-7.
        let mut near = plan(1);
        near.update(4e-5, 2.5e-8, factor(), false);
        assert!(near.reusable.is_some());
        let mut far = plan(1);
        far.update(1.85e-3, 4e-5, factor(), false);
        assert!(far.reusable.is_none());
        let mut sampled = plan(5);
        sampled.update(4e-5, 2.5e-8, factor(), false);
        assert!(
            sampled.reusable.is_none(),
            "a sampled Hessian's factor is never reused"
        );
        // A step from 2.5e-7 to 1e-8 contracted by 0.04. After a chord step the next is
        // predicted at 2·0.04, two of which end at 6.4e-11; after a Newton step at 4·0.04,
        // which would end at 2.6e-10.
        let mut after_chord = plan(1);
        after_chord.update(2.5e-7, 1e-8, factor(), true);
        assert!(after_chord.reusable.is_some());
        let mut after_newton = plan(1);
        after_newton.update(2.5e-7, 1e-8, factor(), false);
        assert!(after_newton.reusable.is_none());
    }
}
