//! The regularized GLM objective `F(w) = (1/n) Σ ℓ(y_i wᵀx_i − t_i) + (μ/2)‖w‖² + gᵀw`.

use faer::Mat;
use rayon::prelude::*;

use crate::design::{Design, RowBuffers};
use crate::error::{check_finite, check_length};
use crate::{MarginLoss, OptimError};

/// `F(w) = (1/n) Σ_i ℓ(y_i · wᵀx_i) + (μ/2)‖w‖² + gᵀw`: a regularized generalized linear
/// model with an optional linear term.
///
/// With `ℓ` convex and `μ > 0`, `F` is μ-strongly convex, so it has a unique minimizer `w*`
/// and every point satisfies `‖w − w*‖ ≤ ‖∇F(w)‖ / μ` — the certificate the private
/// mechanisms rely on. Objective perturbation supplies `g = b/n` and folds its extra
/// regularization Δ into μ.
///
/// Derivatives: `∇F = (1/n) Σ ℓ'(z_i) y_i x_i + μw + g` and
/// `∇²F = (1/n) Σ ℓ''(z_i) y_i² x_i x_iᵀ + μI`, with `z_i = y_i wᵀx_i`, or
/// `z_i = y_i wᵀx_i − t_i` with offsets ([`GlmObjective::with_offsets`], regression).
pub struct GlmObjective<'a, D: Design + ?Sized, L: MarginLoss> {
    design: &'a D,
    labels: &'a [f64],
    offsets: Option<&'a [f64]>,
    loss: L,
    regularization: f64,
    linear: Option<&'a [f64]>,
}

/// Examples per chunk when summing losses in parallel (fixed, so sums are reproducible).
const LOSS_CHUNK_ROWS: usize = 4096;

impl<'a, D: Design + ?Sized, L: MarginLoss> GlmObjective<'a, D, L> {
    /// The objective for rows `design`, labels `labels` (one per row, finite), loss `loss`
    /// and regularization `μ > 0`.
    pub fn new(
        design: &'a D,
        labels: &'a [f64],
        loss: L,
        regularization: f64,
    ) -> Result<Self, OptimError> {
        check_length("labels", labels, design.rows())?;
        check_finite("labels", labels)?;
        if !(regularization.is_finite() && regularization > 0.0) {
            return Err(OptimError::InvalidRegularization(regularization));
        }
        Ok(Self {
            design,
            labels,
            offsets: None,
            loss,
            regularization,
            linear: None,
        })
    }

    /// Shifts every margin by an offset: `z_i = y_i · wᵀx_i − t_i` (`offsets` one per row,
    /// finite). With labels 1 and the targets as offsets, a loss of the margin becomes a
    /// loss of the residual `wᵀx_i − t_i`: regression.
    pub fn with_offsets(mut self, offsets: &'a [f64]) -> Result<Self, OptimError> {
        check_length("offsets", offsets, self.examples())?;
        check_finite("offsets", offsets)?;
        self.offsets = Some(offsets);
        Ok(self)
    }

    /// Adds the linear term `gᵀw` (length d, finite).
    pub fn with_linear_term(mut self, linear: &'a [f64]) -> Result<Self, OptimError> {
        check_length("linear term", linear, self.dim())?;
        check_finite("linear term", linear)?;
        self.linear = Some(linear);
        Ok(self)
    }

    /// The dimension d of `w`.
    pub fn dim(&self) -> usize {
        self.design.cols()
    }

    /// The number of examples n.
    pub fn examples(&self) -> usize {
        self.design.rows()
    }

    /// Stored entries of the data: the work of one pass over it.
    pub(crate) fn pass_entries(&self) -> usize {
        self.design.stored_entries()
    }

    /// The regularization μ (also the strong-convexity constant).
    pub fn regularization(&self) -> f64 {
        self.regularization
    }

    /// `F(w)`.
    pub fn value(&self, w: &[f64]) -> Result<f64, OptimError> {
        self.check_point("w", w)?;
        Ok(self.evaluate_fresh(w).1.value)
    }

    /// `∇F(w)`.
    pub fn gradient(&self, w: &[f64]) -> Result<Vec<f64>, OptimError> {
        self.check_point("w", w)?;
        Ok(self.evaluate_fresh(w).1.gradient)
    }

    /// `∇²F(w)`, the full symmetric d×d matrix (d ≤ [`MAX_HESSIAN_DIMENSION`]).
    pub fn hessian(&self, w: &[f64]) -> Result<Mat<f64>, OptimError> {
        self.check_point("w", w)?;
        check_hessian_dimension(self.dim())?;
        let mut h = self.hessian_lower_from(&self.evaluate_fresh(w).1.curvatures);
        for j in 0..h.ncols() {
            for i in 0..j {
                h[(i, j)] = h[(j, i)];
            }
        }
        Ok(h)
    }

    /// `∇²F(w) · v` without forming the Hessian (two passes over the data).
    pub fn hessian_vector(&self, w: &[f64], v: &[f64]) -> Result<Vec<f64>, OptimError> {
        self.check_point("w", w)?;
        self.check_point("v", v)?;
        let xw = self.margins(w);
        let xv = self.margins(v);
        let n = self.examples() as f64;
        let weights: Vec<f64> = (0..self.examples())
            .into_par_iter()
            .with_min_len(LOSS_CHUNK_ROWS)
            .map(|i| {
                let y = self.labels[i];
                let offset = self.offsets.map_or(0.0, |t| t[i]);
                self.loss.second_derivative(y * xw[i] - offset) * y * y * xv[i] / n
            })
            .collect();
        let mut out = vec![0.0; self.dim()];
        self.design.multiply_transpose(&weights, &mut out);
        out.iter_mut()
            .zip(v)
            .for_each(|(o, vi)| *o += self.regularization * vi);
        Ok(out)
    }

    pub(crate) fn check_point(&self, what: &'static str, w: &[f64]) -> Result<(), OptimError> {
        check_length(what, w, self.dim())?;
        check_finite(what, w)
    }

    /// `X w` (the margins before the labels are applied). At `w = 0`, where every solve
    /// without a warm start begins, no pass over the data: the margins are 0.
    pub(crate) fn margins(&self, w: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.examples()];
        if w.iter().any(|&wj| wj != 0.0) {
            self.design.multiply(w, &mut out);
        }
        out
    }

    fn value_from_loss_sum(&self, w: &[f64], loss_sum: f64) -> (f64, f64) {
        let mean_loss = loss_sum / self.examples() as f64;
        let regularizer = 0.5 * self.regularization * w.iter().map(|x| x * x).sum::<f64>();
        let linear = self
            .linear
            .map_or(0.0, |g| g.iter().zip(w).map(|(a, b)| a * b).sum());
        (
            mean_loss + regularizer + linear,
            mean_loss.abs() + regularizer + linear.abs(),
        )
    }

    /// Value, gradient and the Hessian's per-example weights at `w`, given `xw = X w`, from
    /// one pass over the examples (ℓ, ℓ', ℓ'' share their work) and one product with `Xᵀ`.
    pub(crate) fn evaluate_at(&self, w: &[f64], xw: &[f64]) -> Evaluation {
        self.complete(w, self.loss_pass(w, xw))
    }

    /// The margins `X w` and everything [`GlmObjective::evaluate_at`] gives, with the
    /// margins, the loss and the gradient's `Xᵀ` in one pass over the data where the design
    /// allows ([`Design::multiply_weigh_transpose`]): what a point reached by a full step
    /// needs. The value has the same bits as [`GlmObjective::loss_pass`] at these margins.
    /// At `w = 0` the margins are known to be 0, and the pass skips them.
    pub(crate) fn evaluate_fresh(&self, w: &[f64]) -> (Vec<f64>, Evaluation) {
        let n = self.examples();
        let mut xw = vec![0.0; n];
        if w.iter().all(|&wj| wj == 0.0) {
            let evaluation = self.evaluate_at(w, &xw);
            return (xw, evaluation);
        }
        let mut slopes = vec![0.0; n];
        let mut curvatures = vec![0.0; n];
        let mut gradient = vec![0.0; self.dim()];
        let weigh = |first: usize, margins: &[f64], slopes: &mut [f64], curvatures: &mut [f64]| {
            self.weigh_chunk(first, margins, slopes, curvatures)
        };
        let loss_sums = self.design.multiply_weigh_transpose(
            w,
            LOSS_CHUNK_ROWS,
            &weigh,
            RowBuffers {
                margins: &mut xw,
                weights: &mut slopes,
                extra: &mut curvatures,
            },
            &mut gradient,
        );
        let (value, magnitude) = self.value_from_loss_sum(w, loss_sums.iter().sum());
        self.add_penalty_gradient(w, &mut gradient);
        let evaluation = Evaluation {
            value,
            magnitude,
            gradient,
            curvatures,
        };
        (xw, evaluation)
    }

    /// The value and the per-example weights at `w`, given `xw = X w`, without the gradient's
    /// product with `Xᵀ`: what a line search needs to judge a trial step. Bit for bit the
    /// value [`GlmObjective::evaluate_at`] reports.
    pub(crate) fn loss_pass(&self, w: &[f64], xw: &[f64]) -> LossPass {
        let n = self.examples();
        let mut slopes = vec![0.0; n];
        let mut curvatures = vec![0.0; n];
        // Fixed chunks, summed in order: the same value whatever the thread count.
        let loss_sums: Vec<f64> = slopes
            .par_chunks_mut(LOSS_CHUNK_ROWS)
            .zip(curvatures.par_chunks_mut(LOSS_CHUNK_ROWS))
            .enumerate()
            .map(|(chunk, (slope_chunk, curvature_chunk))| {
                let first = chunk * LOSS_CHUNK_ROWS;
                let margins = &xw[first..first + slope_chunk.len()];
                self.weigh_chunk(first, margins, slope_chunk, curvature_chunk)
            })
            .collect();
        let (value, magnitude) = self.value_from_loss_sum(w, loss_sums.iter().sum());
        LossPass {
            value,
            magnitude,
            slopes,
            curvatures,
        }
    }

    /// The loss of the examples from `first` on, given their margins: sets their slopes
    /// `ℓ'(z_i) y_i / n` and curvatures `ℓ''(z_i) y_i² / n`, returns `Σ ℓ(z_i)`.
    fn weigh_chunk(
        &self,
        first: usize,
        margins: &[f64],
        slopes: &mut [f64],
        curvatures: &mut [f64],
    ) -> f64 {
        let inverse_n = 1.0 / self.examples() as f64;
        let labels = &self.labels[first..first + margins.len()];
        for ((slope, &y), &margin) in slopes.iter_mut().zip(labels).zip(margins) {
            *slope = y * margin;
        }
        if let Some(offsets) = self.offsets {
            let offsets = &offsets[first..first + margins.len()];
            for (slope, &t) in slopes.iter_mut().zip(offsets) {
                *slope -= t;
            }
        }
        let loss_sum = self.loss.evaluate_in_place(slopes, curvatures);
        for ((slope, curvature), &y) in slopes.iter_mut().zip(curvatures.iter_mut()).zip(labels) {
            *slope *= y * inverse_n;
            *curvature *= y * y * inverse_n;
        }
        loss_sum
    }

    /// Adds the gradient `Xᵀ(ℓ'·y/n) + μw + g` to a loss pass at `w`.
    pub(crate) fn complete(&self, w: &[f64], pass: LossPass) -> Evaluation {
        let mut gradient = vec![0.0; self.dim()];
        self.design.multiply_transpose(&pass.slopes, &mut gradient);
        self.add_penalty_gradient(w, &mut gradient);
        Evaluation {
            value: pass.value,
            magnitude: pass.magnitude,
            gradient,
            curvatures: pass.curvatures,
        }
    }

    /// Adds `μw + g` to the loss's gradient.
    fn add_penalty_gradient(&self, w: &[f64], gradient: &mut [f64]) {
        for (j, gj) in gradient.iter_mut().enumerate() {
            *gj += self.regularization * w[j] + self.linear.map_or(0.0, |l| l[j]);
        }
    }

    /// The lower triangle (diagonal included) of `∇²F` from the per-example weights
    /// `ℓ''(z_i) y_i² / n`; the strict upper triangle is zero.
    pub(crate) fn hessian_lower_from(&self, curvatures: &[f64]) -> Mat<f64> {
        let d = self.dim();
        let mut h = Mat::<f64>::zeros(d, d);
        self.design.add_weighted_gram_lower(curvatures, h.as_mut());
        for j in 0..d {
            h[(j, j)] += self.regularization;
        }
        h
    }
}

/// The objective's value and per-example weights at one point, before the gradient.
pub(crate) struct LossPass {
    pub value: f64,
    /// As [`Evaluation::magnitude`].
    pub magnitude: f64,
    /// `ℓ'(z_i) y_i / n` per example: the gradient's loss term is `Xᵀ` of these.
    pub slopes: Vec<f64>,
    /// As [`Evaluation::curvatures`].
    pub curvatures: Vec<f64>,
}

/// The objective's value, gradient and Hessian weights at one point.
pub(crate) struct Evaluation {
    pub value: f64,
    /// `|mean loss| + (μ/2)‖w‖² + |gᵀw|`: the scale of `value`'s rounding error even when
    /// its terms cancel.
    pub magnitude: f64,
    pub gradient: Vec<f64>,
    /// `ℓ''(z_i) y_i² / n` per example: the Hessian is `Σ_i c_i x_i x_iᵀ + μI`.
    pub curvatures: Vec<f64>,
}

/// Largest dimension for which a d×d Hessian is formed (2 GiB of f64): beyond, use L-BFGS.
pub const MAX_HESSIAN_DIMENSION: usize = 16_384;

/// Refuses dimensions whose d×d Hessian would not fit in memory.
pub(crate) fn check_hessian_dimension(dim: usize) -> Result<(), OptimError> {
    if dim <= MAX_HESSIAN_DIMENSION {
        Ok(())
    } else {
        Err(OptimError::InvalidParameter {
            what: "dimension",
            why: format!(
                "a {dim}x{dim} Hessian exceeds the limit of {MAX_HESSIAN_DIMENSION}; use Lbfgs"
            ),
        })
    }
}
