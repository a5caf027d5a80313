//! One-pass projected SGD with averaged iterates, answered with Laplace noise (Dwork &
//! Feldman 2018, Thm 4.12 / Cor 4.13 via Hardt–Recht–Singer; docs/src/reference/algorithms.md §7.4).

use dp_erm::{ErmParams, Examples, Loss, ROUNDING_MARGIN};
use dp_noise::{Laplace, ReleaseRng};
use dp_optim::MarginLoss;

use crate::error::{PredictError, check_epsilon, check_positive};
use crate::interface::PrivatePredictor;
use crate::pool::{Drawn, NoiseSource};
use crate::stable::{
    ScoreAnswer, check_row, release_score, release_score_with, score_in_unit_ball,
};

/// Parameters of projected SGD (§7.4): a smooth 1-Lipschitz loss, step size η, radius B of
/// the ball the iterates are projected onto, and the per-query ε.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdParams {
    loss: Loss,
    step: f64,
    radius: f64,
    epsilon: f64,
}

impl SgdParams {
    /// Projected SGD with `loss`, step `step` (η), projection radius `radius` (B) and
    /// per-query `epsilon`; checked by [`SgdParams::check`].
    pub fn new(loss: Loss, step: f64, radius: f64, epsilon: f64) -> Self {
        Self {
            loss,
            step,
            radius,
            epsilon,
        }
    }

    /// The step of DF Cor 4.13 for `examples` rows: `η = B/(L R √n)` (L = R = 1), capped at
    /// the stability limit `2/(σR²)`. Refuses, naming it, a loss [`SgdParams::check`]
    /// refuses, a radius B that is not finite and > 0, zero rows, and a radius so small
    /// that the step rounds to 0: an Ok step is one `check` accepts.
    pub fn suggested_step(loss: Loss, radius: f64, examples: usize) -> Result<f64, PredictError> {
        ErmParams::non_private(loss, 1.0).check()?;
        let radius = check_positive("projection radius", radius)?;
        if examples == 0 {
            return Err(PredictError::EmptyData);
        }
        let step = (radius / (examples as f64).sqrt()).min(step_limit(loss));
        if step > 0.0 {
            Ok(step)
        } else {
            Err(PredictError::InvalidParameter {
                what: "projection radius",
                value: radius,
                requirement: "large enough that radius/√n is above 0 in floating point",
            })
        }
    }

    /// Checks ε, B, the loss, and `0 < η ≤ 2/(σR²)` (σ the loss's smoothness, R the rows'
    /// norm bound `1 + NORM_SLACK`): the step limit under which a gradient step is
    /// non-expansive, which the privacy proof needs.
    pub fn check(&self) -> Result<(), PredictError> {
        check_epsilon(self.epsilon)?;
        check_positive("projection radius", self.radius)?;
        // dp-erm validates the loss (Huber width in range).
        ErmParams::non_private(self.loss, 1.0).check()?;
        if !(self.step > 0.0 && self.step <= step_limit(self.loss)) {
            return Err(PredictError::InvalidParameter {
                what: "step size",
                value: self.step,
                requirement: "in (0, 2/(σR²)] for the loss's smoothness σ (1/4 for logistic, \
                              1/(2h) for Huber) and the rows' norm bound R = 1 + 1e-9: just \
                              under 8 for logistic, 4h for Huber",
            });
        }
        Ok(())
    }

    /// The score's sensitivity `2ηLR²` (L = 1, R = 1 up to a slack of 1e-9 on the rows' norms) plus a rounding
    /// allowance.
    pub fn sensitivity(&self, features: usize) -> Result<f64, PredictError> {
        self.check()?;
        let lipschitz = self.loss.lipschitz();
        // Each iterate is computed in floating point; the allowance covers d-term dot
        // products with ‖w‖ ≤ B, twice, with the crate-wide safety factor.
        let rounding = 2.0 * ROUNDING_MARGIN * (features as f64 + 1.0) * f64::EPSILON * self.radius;
        // R² with R = 1 + NORM_SLACK (rows) and the query scaled into the unit ball: the
        // score moves by 2ηL·R·1; R is rounded up.
        let radius_of_rows = 1.0 + 2.0 * NORM_SLACK;
        Ok((2.0 * self.step * lipschitz * radius_of_rows + rounding).next_up())
    }

    /// One pass over `data` in its row order, then the Laplace mechanism for queries. Rows
    /// must satisfy `‖x‖ ≤ 1` (refused otherwise, naming the first row).
    ///
    /// **The row order must not depend on the data** (shuffle with fresh randomness first,
    /// as [`crate::Ensemble::train`] does): in data sorted by value or label, replacing one
    /// example shifts many positions, and the guarantee below does not hold.
    pub fn fit(&self, data: &Examples) -> Result<ProjectedSgd, PredictError> {
        let sensitivity = self.sensitivity(data.features())?;
        let laplace = Laplace::new(self.epsilon, sensitivity)?;
        check_unit_ball(data)?;
        let d = data.features();
        let (mut w, mut sum) = (vec![0.0; d], vec![0.0; d]);
        let mut row = vec![0.0; d];
        for (i, &y) in data.labels().iter().enumerate() {
            data.inputs().row(i).write_dense(&mut row);
            let margin = y * dot(&w, &row);
            let coefficient = self.step * self.loss.derivative(margin) * y;
            for (wj, xj) in w.iter_mut().zip(&row) {
                *wj -= coefficient * xj;
            }
            let norm = dot(&w, &w).sqrt();
            if norm > self.radius {
                let shrink = self.radius / norm;
                w.iter_mut().for_each(|wj| *wj *= shrink);
            }
            for (s, wj) in sum.iter_mut().zip(&w) {
                *s += wj;
            }
        }
        let n = data.len() as f64;
        let average = sum.into_iter().map(|s| s / n).collect();
        Ok(ProjectedSgd {
            weights: average,
            laplace,
        })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Slack on the rows' norm bound in the sensitivity: rows are checked exactly (dp-erm's
/// check, in the safe direction), so `R = 1 + NORM_SLACK` is margin, kept for the query's
/// scaling into the unit ball, which rounds.
const NORM_SLACK: f64 = 1e-9;

/// The largest step, `2/(σR²)` with `R = 1 + NORM_SLACK`, rounded down: a gradient step on
/// the σ-smooth loss of a row of norm at most R is then non-expansive.
fn step_limit(loss: Loss) -> f64 {
    let radius = 1.0 + NORM_SLACK;
    (2.0 / (loss.curvature_bound() * radius * radius)).next_down()
}

/// Every row of `data` in the unit ball, else an error naming the first
/// (dp-erm's check, decided exactly in the safe direction: every accepted row has exact
/// norm ≤ 1, inside the `1 + NORM_SLACK` the sensitivity covers.)
fn check_unit_ball(data: &Examples) -> Result<(), PredictError> {
    Ok(data.check_unit_ball()?)
}

/// A trained projected-SGD predictor (§7.4): answers `⟨w̄, x̂⟩ + Lap(2ηLR²/ε)`, `w̄` the
/// average of the iterates `w_2 … w_{n+1}`, `x̂` the query scaled into the unit ball.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data, for neighbouring datasets
/// that differ in one example (replaced, at the same position of the pass), rows in the
/// unit ball (to `R = 1 + 1e-9`), a 1-Lipschitz, σ-smooth loss and `η ≤ 2/(σR²)`: the pass
/// visits the data in their given order (independent of their values); until the differing
/// example the iterates agree, its step moves them apart by at most `2ηLR`, and every later
/// gradient step and the projection are non-expansive, so every iterate — and their average
/// — moves by at most `2ηLR`, the score by at most `2ηLR²`. It is released by dp-noise's
/// snapping [`Laplace`] at that sensitivity (plus a rounding allowance for the score). The
/// pass is analysed in idealized real arithmetic (as the Gamma-norm noise of dp-erm is):
/// its floating-point rounding is not bounded by a proof. `q` answers cost `q·ε`. The
/// caller supplies the order: it must not depend on the data (see [`SgdParams::fit`]).
#[derive(Clone)]
pub struct ProjectedSgd {
    weights: Vec<f64>,
    laplace: Laplace,
}

impl ProjectedSgd {
    /// The same predictor with its noise calibrated for `factor·ε` (tests' mutation checks:
    /// factor 2 halves the noise).
    #[cfg(test)]
    pub(crate) fn with_noise_epsilon_factor(&self, factor: f64) -> Self {
        let laplace = Laplace::new(self.laplace.epsilon() * factor, self.laplace.sensitivity())
            .expect("valid test parameters");
        Self {
            laplace,
            ..self.clone()
        }
    }

    /// The Laplace mechanism each answer uses.
    pub fn laplace(&self) -> &Laplace {
        &self.laplace
    }

    /// **Not private**: the averaged iterate.
    pub fn secret_weights(&self) -> &[f64] {
        &self.weights
    }
}

impl PrivatePredictor for ProjectedSgd {
    type Query = [f64];
    type Answer = ScoreAnswer;

    fn epsilon(&self) -> f64 {
        self.laplace.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        check_row(query, self.weights.len())
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<ScoreAnswer, PredictError> {
        release_score(&self.laplace, score_in_unit_ball(&self.weights, query), rng)
    }

    fn noise_source(&self) -> Option<NoiseSource> {
        Some(NoiseSource::of(&self.laplace))
    }

    fn answer_with(&self, query: &[f64], drawn: Drawn) -> Result<ScoreAnswer, PredictError> {
        release_score_with(
            &self.laplace,
            score_in_unit_ball(&self.weights, query),
            drawn,
        )
    }
}

impl std::fmt::Debug for ProjectedSgd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectedSgd")
            .field("epsilon", &self.laplace.epsilon())
            .field("sensitivity", &self.laplace.sensitivity())
            .field("features", &self.weights.len())
            .finish_non_exhaustive()
    }
}
