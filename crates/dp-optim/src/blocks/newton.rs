//! The GLM objective over a block source, and damped Newton on it.

use faer::Mat;

use crate::blocks::oracle::{BlockPass, SumsOracle};
use crate::blocks::sums::RowBlocks;
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
        let evaluation = self.evaluate(w, false)?;
        Ok((evaluation.value, evaluation.gradient))
    }

    /// One pass at `w`: the value, the gradient, and the Hessian (lower triangle, μ on the
    /// diagonal) if asked for. Refuses a pass that saw a different number of rows than n.
    pub(crate) fn evaluate(
        &self,
        w: &[f64],
        with_hessian: bool,
    ) -> Result<BlockEvaluation, O::Error> {
        let sums = self.oracle.sums(w, with_hessian)?;
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
/// value, the gradient and the Hessian together (rows not held in memory are read once per
/// point, so the Hessian rides along instead of costing a second read).
///
/// Simpler than [`crate::Newton`] (no sampled Hessian, no chord steps: those save
/// arithmetic, and out of core a pass costs its read whatever it computes). The certificate
/// is the same: the gradient norm in the returned [`Solution`] is computed from scratch, by
/// a full pass, at the returned point.
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
        let mut current = objective.evaluate(&w, true)?;
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
            // Every point is evaluated with its Hessian.
            let Some(direction) = current
                .hessian
                .take()
                .and_then(cholesky_factor)
                .and_then(|f| newton_direction(&f, &current.gradient))
            else {
                break Termination::NumericalFailure;
            };
            match line_search(objective, &w, &current, &direction)? {
                Some((next_w, next)) => (w, current) = (next_w, next),
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

/// Backtracking along `p` from `w` (Armijo; below the value's rounding level, a decrease of
/// `‖∇F‖` instead, as [`crate::Newton`]'s line search): the accepted point with its fresh
/// evaluation, or `None`.
fn line_search<O: SumsOracle>(
    objective: &BlockObjective<'_, O>,
    w: &[f64],
    current: &BlockEvaluation,
    p: &[f64],
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
        let evaluation = objective.evaluate(&trial, true)?;
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
