//! The GLM objective over a block source, and damped Newton on it.

use faer::Mat;

use crate::blocks::oracle::{BlockPass, SumsOracle};
use crate::blocks::sums::{HessianRows, RowBlocks};
use crate::error::{check_finite, check_length};
use crate::iteration::check_tolerance;
use crate::newton::{cholesky_factor, newton_direction};
use crate::objective::check_hessian_dimension;
use crate::solution::{DEFAULT_TOLERANCE, Solution, Termination, dot, norm};
use crate::{MarginLoss, OptimError};

/// `F(w) = (1/n) Σ_i ℓ(y_i wᵀx_i) + (μ/2)‖w‖² + gᵀw` over rows whose sums a
/// [`SumsOracle`] answers (a [`RowBlocks`] source through [`BlockPass`], or rows in other
/// processes), as [`crate::GlmObjective`] is over a [`crate::Design`].
///
/// `n` is given, not counted: a private mechanism's noise is calibrated to it before any
/// row is read (under replace-one neighbours n is public). A block source's declared count
/// must equal it (checked at construction), and every pass checks the rows it actually
/// summed.
pub struct BlockObjective<'a, O: SumsOracle> {
    oracle: O,
    regularization: f64,
    linear: Option<&'a [f64]>,
    examples: usize,
}

/// Value, gradient and (optionally) the Hessian's lower triangle at one point, all from one
/// fresh pass over the rows.
pub(crate) struct BlockEvaluation {
    value: f64,
    /// `|mean loss| + (μ/2)‖w‖² + |gᵀw|`, the scale of the value's rounding error.
    magnitude: f64,
    gradient: Vec<f64>,
    pub(crate) hessian: Option<Mat<f64>>,
    /// The rows the Hessian was asked over (the oracle may have answered with all of them).
    hessian_rows: HessianRows,
}

impl<'a, S: RowBlocks + ?Sized, L: MarginLoss> BlockObjective<'a, BlockPass<'a, S, L>> {
    /// The objective over `source`'s rows, which must number exactly `examples` (> 0),
    /// with loss `loss` and regularization `μ > 0`.
    pub fn new(
        source: &'a S,
        loss: L,
        regularization: f64,
        examples: usize,
    ) -> Result<Self, OptimError> {
        let objective = Self::over_sums(BlockPass::new(source, loss), regularization, examples)?;
        check_row_count(examples, source.rows())?;
        Ok(objective)
    }
}

impl<'a, O: SumsOracle> BlockObjective<'a, O> {
    /// The objective over the rows `oracle` sums, which must number exactly `examples`
    /// (> 0; every pass checks the count the oracle reports), with regularization `μ > 0`.
    /// The loss is the oracle's.
    pub fn over_sums(oracle: O, regularization: f64, examples: usize) -> Result<Self, OptimError> {
        if examples == 0 || oracle.cols() == 0 {
            return Err(OptimError::EmptyData {
                rows: examples,
                cols: oracle.cols(),
            });
        }
        if !(regularization.is_finite() && regularization > 0.0) {
            return Err(OptimError::InvalidRegularization(regularization));
        }
        Ok(Self {
            oracle,
            regularization,
            linear: None,
            examples,
        })
    }

    /// Adds the linear term `gᵀw` (length d, finite).
    pub fn with_linear_term(mut self, linear: &'a [f64]) -> Result<Self, OptimError> {
        check_length("linear term", linear, self.dim())?;
        check_finite("linear term", linear)?;
        self.linear = Some(linear);
        Ok(self)
    }

    /// The dimension d.
    pub fn dim(&self) -> usize {
        self.oracle.cols()
    }

    /// The (given) number of examples n.
    pub fn examples(&self) -> usize {
        self.examples
    }

    /// The regularization μ.
    pub fn regularization(&self) -> f64 {
        self.regularization
    }

    /// `F(w)` and `∇F(w)`, from one pass.
    pub fn value_and_gradient(&self, w: &[f64]) -> Result<(f64, Vec<f64>), O::Error> {
        check_length("w", w, self.dim())?;
        check_finite("w", w)?;
        let evaluation = self.evaluate(w, HessianRows::None)?;
        Ok((evaluation.value, evaluation.gradient))
    }

    /// One pass at `w`: the value, the gradient, and the Hessian over the rows asked for
    /// (lower triangle, μ on the diagonal). Refuses a pass that saw a different number of
    /// rows than n.
    pub(crate) fn evaluate(
        &self,
        w: &[f64],
        hessian_rows: HessianRows,
    ) -> Result<BlockEvaluation, O::Error> {
        let with_hessian = hessian_rows != HessianRows::None;
        let sums = self.oracle.sums_with(w, hessian_rows)?;
        check_row_count(self.examples, sums.rows())?;
        if sums.gradient_sum().len() != self.dim()
            || sums.hessian_sum_lower().is_some() != with_hessian
        {
            return Err(OptimError::DimensionMismatch {
                what: "gradient sums the oracle returned (Hessian as asked)",
                expected: self.dim(),
                found: sums.gradient_sum().len(),
            }
            .into());
        }
        let inverse_n = 1.0 / self.examples as f64;
        let mean_loss = sums.loss_sum() * inverse_n;
        let regularizer = 0.5 * self.regularization * dot(w, w);
        let linear = self.linear.map_or(0.0, |g| dot(g, w));
        let gradient = sums
            .gradient_sum()
            .iter()
            .enumerate()
            .map(|(j, s)| {
                s * inverse_n + self.regularization * w[j] + self.linear.map_or(0.0, |g| g[j])
            })
            .collect();
        let hessian = sums.hessian_sum_lower().map(|packed| {
            let d = self.dim();
            let mut h = Mat::<f64>::zeros(d, d);
            for i in 0..d {
                let row = &packed[i * (i + 1) / 2..i * (i + 1) / 2 + i + 1];
                for (j, &v) in row.iter().enumerate() {
                    h[(i, j)] = v * inverse_n;
                }
                h[(i, i)] += self.regularization;
            }
            h
        });
        Ok(BlockEvaluation {
            value: mean_loss + regularizer + linear,
            magnitude: mean_loss.abs() + regularizer + linear.abs(),
            gradient,
            hessian,
            hessian_rows,
        })
    }
}

fn check_row_count(examples: usize, found: usize) -> Result<(), OptimError> {
    if found == examples {
        Ok(())
    } else {
        Err(OptimError::DimensionMismatch {
            what: "rows of the block source (n is given, not counted)",
            expected: examples,
            found,
        })
    }
}

/// Damped Newton over a [`BlockObjective`]: one pass per trial point, each computing the
/// value, the gradient and the Hessian the next step needs together (rows not held in
/// memory are read once per point, so the Hessian rides along instead of costing a second
/// read).
///
/// Out of core, a pass is the rows' read plus its arithmetic, and forming the exact Hessian
/// (`k(k+1)/2` updates for a row of k entries) is most of that arithmetic: measured on
/// Adult-shaped rows from the page cache, a pass with it takes 1.7–2× one without. So:
/// - with many rows per dimension (at least 2,000 per column), the first passes form the
///   Hessian from every s-th row of each block (s = n / (1,000·d), at most 8), scaled to
///   all rows: still a thousand rows per dimension or more, so the steps far from the
///   optimum move almost as Newton's do. Once `‖∇F‖` is below 1% of its start, or a step
///   shrinks it by less than half or fails its line search, the exact Hessian takes over
///   for the rest of the solve (near the optimum its quadratic convergence takes fewer
///   passes than the sample's linear one; after a weak or failed step, from a pass at the
///   same point rather than one more step with the sample);
/// - a pass predicted to be the last (`‖∇F‖` times the last contraction — squared after
///   two exact steps — reaches a tenth of the tolerance) forms no Hessian; if it is not the
///   last after all, the next step reuses the previous factor (a chord step), and if that
///   finds no decrease, one more pass forms the exact Hessian at the same point.
///
/// Only the path changes, not what is returned: every step is checked by the line search,
/// and the certificate is the same — the gradient norm in the returned [`Solution`] is
/// computed from scratch, by a full pass, at the returned point. An oracle that cannot
/// sample ([`SumsOracle::sums_with`]'s default) answers with the exact Hessian.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BlockNewton {
    tolerance: f64,
    max_iterations: usize,
}

impl Default for BlockNewton {
    /// Tolerance [`DEFAULT_TOLERANCE`] (1e-10), at most 100 iterations.
    fn default() -> Self {
        Self {
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: 100,
        }
    }
}

/// Sufficient decrease, and the largest number of step halvings, as [`crate::Newton`]'s.
const ARMIJO: f64 = 1e-4;
const MAX_HALVINGS: usize = 40;

/// Rows per dimension that a sampled Hessian keeps at least: its relative error is about
/// `√(d/m)` for m rows, a few percent here, which costs Newton's steps little.
pub(crate) const HESSIAN_ROWS_PER_DIMENSION: usize = 1000;
/// The largest stride of a sampled Hessian: at 8 its arithmetic is about a fifth of the
/// gradient's on Adult-shaped rows, and a longer stride saves little more.
pub(crate) const MAX_HESSIAN_STRIDE: usize = 8;
/// A step with a sampled Hessian that shrinks `‖∇F‖` by less than this factor hands over
/// to the exact Hessian.
pub(crate) const SAMPLED_MIN_CONTRACTION: f64 = 0.5;
/// Sampling ends once `‖∇F‖` is below this fraction of its value at the start: from there
/// the exact Hessian's quadratic convergence takes fewer passes than the sample's linear
/// one (a contraction of about the sample's relative error per step), as in
/// [`crate::Newton`].
pub(crate) const SAMPLED_PHASE_GRADIENT_FRACTION: f64 = 1e-2;
/// A pass forms no Hessian when the predicted gradient norm is this many times below the
/// tolerance.
const LAST_PASS_MARGIN: f64 = 10.0;

/// The stride of the sampled Hessian for n rows of dimension d (1: the exact Hessian).
pub(crate) fn hessian_stride(rows: usize, dim: usize) -> usize {
    let keep = HESSIAN_ROWS_PER_DIMENSION.saturating_mul(dim.max(1));
    (rows / keep).clamp(1, MAX_HESSIAN_STRIDE)
}

impl BlockNewton {
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
    pub fn minimize<O: SumsOracle>(
        &self,
        objective: &BlockObjective<'_, O>,
        start: Option<&[f64]>,
    ) -> Result<Solution, O::Error> {
        check_tolerance(self.tolerance)?;
        check_hessian_dimension(objective.dim())?;
        let mut w = match start {
            Some(w) => {
                check_length("starting point", w, objective.dim())?;
                check_finite("starting point", w)?;
                w.to_vec()
            }
            None => vec![0.0; objective.dim()],
        };
        let mut plan = Plan::new(objective.examples(), objective.dim());
        let mut current = objective.evaluate(&w, plan.hessian_rows())?;
        plan.end_sampling_below(SAMPLED_PHASE_GRADIENT_FRACTION * norm(&current.gradient));
        // The factor of the last step, for a chord step after a pass without a Hessian.
        let mut previous_factor: Option<Mat<f64>> = None;
        // The last step's contraction of ‖∇F‖, and whether it stepped with an exact Hessian.
        let mut last_step: Option<(f64, bool)> = None;
        let mut iterations = 0;
        let termination = loop {
            let gradient_norm = norm(&current.gradient);
            if !(current.value.is_finite() && gradient_norm.is_finite()) {
                break Termination::NumericalFailure;
            }
            if gradient_norm <= self.tolerance {
                break Termination::Converged;
            }
            if iterations >= self.max_iterations {
                break Termination::IterationLimit;
            }
            iterations += 1;
            let exact = current.hessian_rows == HessianRows::All;
            let factor = match current.hessian.take() {
                Some(hessian) => cholesky_factor(hessian),
                None => previous_factor.take(),
            };
            let direction = factor
                .as_ref()
                .and_then(|f| newton_direction(f, &current.gradient));
            // The next pass forms no Hessian if it is predicted to certify convergence:
            // after two exact steps the contraction squares (quadratic convergence),
            // otherwise it is taken to repeat.
            let last = last_step.is_some_and(|(c, was_exact)| {
                let predicted = if exact && was_exact { c * c } else { c };
                predicted * gradient_norm * LAST_PASS_MARGIN <= self.tolerance
            });
            let next_rows = if last {
                HessianRows::None
            } else {
                plan.hessian_rows()
            };
            let step = match &direction {
                Some(direction) => line_search(objective, &w, &current, direction, next_rows)?,
                None => None,
            };
            match step {
                Some((next_w, next)) => {
                    let next_norm = norm(&next.gradient);
                    let contraction = next_norm / gradient_norm;
                    let weak = contraction > SAMPLED_MIN_CONTRACTION;
                    if weak || next_norm <= plan.end_gradient {
                        plan.exact();
                    }
                    last_step = Some((contraction, exact));
                    previous_factor = factor;
                    (w, current) = (next_w, next);
                    // A sampled Hessian or a reused factor that served badly is not stepped
                    // with again: the exact Hessian here, one more pass (a poor sample's
                    // next step would cost more passes in halvings or short steps).
                    if weak && !exact && current.hessian_rows != HessianRows::All {
                        current = objective.evaluate(&w, HessianRows::All)?;
                    }
                }
                // A sampled Hessian or a reused factor found no descent: the exact Hessian
                // here, one more pass.
                None if !exact => {
                    plan.exact();
                    last_step = None;
                    current = objective.evaluate(&w, HessianRows::All)?;
                }
                None if direction.is_none() => break Termination::NumericalFailure,
                None => break Termination::LineSearchFailed,
            }
        };
        Ok(Solution {
            gradient_norm: norm(&current.gradient),
            value: current.value,
            weights: w,
            iterations,
            termination,
            tolerance: self.tolerance,
            regularization: objective.regularization(),
        })
    }
}

/// Which Hessian the passes form: sampled while it serves, then exact.
struct Plan {
    stride: usize,
    /// Sampling ends once `‖∇F‖` is at most this.
    end_gradient: f64,
}

impl Plan {
    fn new(rows: usize, dim: usize) -> Self {
        Self {
            stride: hessian_stride(rows, dim),
            end_gradient: 0.0,
        }
    }

    fn end_sampling_below(&mut self, gradient_norm: f64) {
        self.end_gradient = gradient_norm;
    }

    fn exact(&mut self) {
        self.stride = 1;
    }

    fn hessian_rows(&self) -> HessianRows {
        if self.stride > 1 {
            HessianRows::EveryNth(self.stride)
        } else {
            HessianRows::All
        }
    }
}

/// Backtracking along `p` from `w` (Armijo; below the value's rounding level, a decrease of
/// `‖∇F‖` instead, as [`crate::Newton`]'s line search): the accepted point with its fresh
/// evaluation (its Hessian over `hessian_rows`), or `None`.
fn line_search<O: SumsOracle>(
    objective: &BlockObjective<'_, O>,
    w: &[f64],
    current: &BlockEvaluation,
    p: &[f64],
    hessian_rows: HessianRows,
) -> Result<Option<(Vec<f64>, BlockEvaluation)>, O::Error> {
    let slope = dot(&current.gradient, p);
    if slope.is_nan() || slope >= 0.0 {
        return Ok(None);
    }
    let rounding_level = 64.0 * f64::EPSILON * current.magnitude.max(f64::MIN_POSITIVE);
    let below_rounding = -ARMIJO * slope <= rounding_level;
    let current_norm = norm(&current.gradient);
    let mut t = 1.0;
    for _ in 0..MAX_HALVINGS {
        let trial: Vec<f64> = w.iter().zip(p).map(|(a, b)| a + t * b).collect();
        let evaluation = objective.evaluate(&trial, hessian_rows)?;
        let accepted = if below_rounding {
            evaluation.value.is_finite() && norm(&evaluation.gradient) < current_norm
        } else {
            evaluation.value <= current.value + ARMIJO * t * slope
        };
        if accepted {
            return Ok(Some((trial, evaluation)));
        }
        t *= 0.5;
    }
    Ok(None)
}
