//! Stable regularized ERM with Laplace noise on the score (Dwork & Feldman 2018, Thm 4.9;
//! docs/src/reference/algorithms.md §7.3), and the released-score answer it shares with projected SGD.

use dp_erm::{ErmParams, Examples, LinearModel, Loss, ROUNDING_MARGIN, tolerance_floor};
use dp_noise::{Laplace, ReleaseRng};

use crate::error::{PredictError, check_epsilon, check_finite, check_positive};
use crate::interface::PrivatePredictor;
use crate::pool::{Drawn, NoiseSource, release_with};

/// An answer that releases a real score: `score` is the ε-DP noisy `⟨w, x⟩`, `label` its
/// sign (+1 when `score ≥ 0`), which is post-processing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreAnswer {
    /// The released score.
    pub score: f64,
    /// Its sign.
    pub label: f64,
}

/// Default gradient-norm tolerance of the non-private solve (raised to the solver's
/// rounding floor where that is larger).
pub const DEFAULT_TOLERANCE: f64 = 1e-10;

/// Parameters of stable ERM with Laplace (§7.3): loss, regularization λ, per-query ε, and
/// optionally the solver's gradient tolerance. A consuming builder; every value is checked
/// by [`StableErmParams::fit`] (or [`StableErmParams::sensitivity`]) before any work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StableErmParams {
    loss: Loss,
    regularization: f64,
    epsilon: f64,
    tolerance: Option<f64>,
}

impl StableErmParams {
    /// Stable ERM with `loss` (logistic or Huber: 1-Lipschitz), λ = `regularization`,
    /// per-query `epsilon`.
    pub fn new(loss: Loss, regularization: f64, epsilon: f64) -> Self {
        Self {
            loss,
            regularization,
            epsilon,
            tolerance: None,
        }
    }

    /// The λ of DF Cor 4.10/4.11 balancing regularization and noise for a comparator of
    /// norm `comparator_norm` = B: `λ = (2LR/B)·√((1 + 1/ε)/n)`, with L = R = 1 here.
    pub fn balanced_regularization(
        comparator_norm: f64,
        epsilon: f64,
        examples: usize,
    ) -> Result<f64, PredictError> {
        let b = check_positive("comparator norm", comparator_norm)?;
        let epsilon = check_epsilon(epsilon)?;
        if examples == 0 {
            return Err(PredictError::EmptyData);
        }
        let lambda = 2.0 / b * ((1.0 + 1.0 / epsilon) / examples as f64).sqrt();
        // An Ok λ is one a fit accepts (dp-erm's range); else the inputs are the problem.
        if !(dp_erm::MIN_REGULARIZATION..=dp_erm::MAX_REGULARIZATION).contains(&lambda) {
            return Err(PredictError::InvalidParameter {
                what: "balanced regularization (2/comparator norm)·√((1 + 1/epsilon)/n)",
                value: lambda,
                requirement: "between 1e-12 and 1e6, the regularizations a fit accepts \
                              (choose another comparator norm)",
            });
        }
        Ok(lambda)
    }

    /// The gradient-norm tolerance the solver must certify (default
    /// [`DEFAULT_TOLERANCE`], or the rounding floor if larger). It enters the sensitivity.
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = Some(tolerance);
        self
    }

    /// The per-query ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The rounding floor of the solver's gradient norm on `examples` × `features`
    /// (dp-erm's [`tolerance_floor`]; public: sizes and parameters only).
    fn rounding_floor(&self, examples: usize, features: usize) -> f64 {
        tolerance_floor(examples, features, self.loss, self.regularization, None).total()
    }

    /// The solver tolerance a fit on `examples` × `features` certifies (public: sizes and
    /// parameters only).
    fn effective_tolerance(&self, examples: usize, features: usize) -> f64 {
        self.tolerance_above(self.rounding_floor(examples, features))
    }

    /// The requested tolerance, else the default or the rounding `floor` if larger.
    fn tolerance_above(&self, floor: f64) -> f64 {
        self.tolerance.unwrap_or(DEFAULT_TOLERANCE.max(floor))
    }

    /// The sensitivity of the score `⟨w, x⟩` for `‖x‖ ≤ 1` over neighbouring datasets of
    /// `examples` rows and `features` columns:
    /// `Δ = 2LR²/(λn) + 2(γ + floor)R/λ + rounding`, L = R = 1, γ the solver tolerance and
    /// `floor` the rounding floor of the gradient norm it is checked with (as dp-erm's output
    /// perturbation counts it). Checks every parameter.
    pub fn sensitivity(&self, examples: usize, features: usize) -> Result<f64, PredictError> {
        check_epsilon(self.epsilon)?;
        // dp-erm checks loss (a classifier's), λ and the tolerance against its floor.
        self.erm_params(examples, features)
            .noise_calibration(examples, features)?;
        self.checked_sensitivity(examples, features)
    }

    /// As [`StableErmParams::sensitivity`] for a regression loss (the residual's loss is
    /// 1-Lipschitz like the margin's, so the bound is the same).
    pub(crate) fn regression_sensitivity(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<f64, PredictError> {
        check_epsilon(self.epsilon)?;
        self.erm_params(examples, features)
            .regression_noise_calibration(examples, features)?;
        self.checked_sensitivity(examples, features)
    }

    /// The bound of [`StableErmParams::sensitivity`], once dp-erm has accepted the loss for
    /// its task.
    fn checked_sensitivity(&self, examples: usize, features: usize) -> Result<f64, PredictError> {
        if examples == 0 {
            return Err(PredictError::EmptyData);
        }
        let lambda = self.regularization;
        let lipschitz = self.loss.lipschitz();
        let stability = 2.0 * lipschitz / (lambda * examples as f64);
        // The solver's computed ‖∇F‖ ≤ γ holds for the exact gradient only up to the
        // rounding floor: the minimizer is within (γ + floor)/λ, rounded up.
        let floor = self.rounding_floor(examples, features);
        let certified = (self.tolerance_above(floor) + floor).next_up();
        let inexact = 2.0 * certified / lambda;
        // The score is a floating-point dot product of d terms with ‖w‖ ≤ L/λ, ‖x‖ ≤ 1: each
        // evaluation errs by at most about d·u·L/λ; two evaluations (one per dataset),
        // with the crate-wide safety factor.
        let rounding =
            2.0 * ROUNDING_MARGIN * (features as f64 + 1.0) * f64::EPSILON * lipschitz / lambda;
        Ok(((stability + inexact) + rounding).next_up())
    }

    pub(crate) fn erm_params(&self, examples: usize, features: usize) -> ErmParams {
        ErmParams::non_private(self.loss, self.regularization)
            .tolerance(self.effective_tolerance(examples, features))
    }

    /// Trains non-privately (to the certified tolerance) and prepares the per-query
    /// Laplace mechanism. The rows must satisfy `‖x‖ ≤ 1` ([`Examples::to_training_set`]
    /// refuses a row that does not, naming it). `rng` is unused by the deterministic solver
    /// and taken for uniformity with [`dp_erm::Trainer`].
    pub fn fit(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<StableErm, PredictError> {
        let sensitivity = self.sensitivity(data.len(), data.features())?;
        let laplace = Laplace::new(self.epsilon, sensitivity)?;
        let training = data.to_training_set()?;
        let fit = self
            .erm_params(data.len(), data.features())
            .fit(&training, rng)?;
        Ok(StableErm {
            model: fit.into_model(),
            laplace,
        })
    }
}

/// A trained stable-ERM predictor (§7.3): answers `⟨w, x̂⟩ + Lap(Δ/ε)` with `x̂` the query
/// scaled into the unit ball.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data, for neighbouring datasets
/// that differ in one example (replaced), rows in the unit ball and a 1-Lipschitz loss: the
/// regularized minimizer is `λ`-strongly convex, so replacing one example moves it by at
/// most `2L R/(λn)`, and the certified solver tolerance γ adds at most `(γ + floor)/λ` per
/// dataset (the computed gradient norm is exact up to its rounding floor); with `‖x̂‖ ≤ 1`
/// the score moves by at most `Δ = 2LR²/(λn) + 2(γ + floor)R/λ` (plus a rounding
/// allowance for the score's dot product). The score is released by dp-noise's snapping
/// [`Laplace`] at sensitivity Δ; the label is its sign (post-processing). The query is scaled by `1/max(1, ‖x‖)`
/// (public, data-independent), which does not change the sign of `⟨w, x⟩`. `q` answers
/// cost `q·ε` ([`crate::PredictionInterface`]).
#[derive(Clone)]
pub struct StableErm {
    model: LinearModel,
    laplace: Laplace,
}

impl StableErm {
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

    /// The Laplace mechanism each answer uses (ε, Δ, grid, scale).
    pub fn laplace(&self) -> &Laplace {
        &self.laplace
    }

    /// **Not private**: the trained weights.
    pub fn secret_model(&self) -> &LinearModel {
        &self.model
    }

    /// **Not private**: the noiseless score at the (scaled) query.
    pub fn secret_score(&self, x: &[f64]) -> Result<f64, PredictError> {
        check_row(x, self.model.weights().len())?;
        Ok(score_in_unit_ball(self.model.weights(), x))
    }
}

impl PrivatePredictor for StableErm {
    type Query = [f64];
    type Answer = ScoreAnswer;

    fn epsilon(&self) -> f64 {
        self.laplace.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        check_row(query, self.model.weights().len())
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<ScoreAnswer, PredictError> {
        release_score(
            &self.laplace,
            score_in_unit_ball(self.model.weights(), query),
            rng,
        )
    }

    fn noise_source(&self) -> Option<NoiseSource> {
        Some(NoiseSource::of(&self.laplace))
    }

    fn answer_with(&self, query: &[f64], drawn: Drawn) -> Result<ScoreAnswer, PredictError> {
        release_score_with(
            &self.laplace,
            score_in_unit_ball(self.model.weights(), query),
            drawn,
        )
    }
}

impl std::fmt::Debug for StableErm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StableErm")
            .field("epsilon", &self.laplace.epsilon())
            .field("sensitivity", &self.laplace.sensitivity())
            .field("features", &self.model.weights().len())
            .finish_non_exhaustive()
    }
}

/// A query row of the right length with finite values.
pub(crate) fn check_row(x: &[f64], features: usize) -> Result<(), PredictError> {
    if x.len() != features {
        return Err(PredictError::QueryDimension {
            expected: features,
            found: x.len(),
        });
    }
    check_finite("query feature", x)
}

/// `⟨w, x⟩` for the query `x` moved into the unit ball: unchanged when it is inside (decided
/// exactly, as the training sets' check is, by [`dp_erm::within_unit_ball`]), otherwise
/// scaled by `1/‖x‖` and shrunk by ulps until the exact check accepts it
/// ([`dp_erm::clip_row_to_unit_ball`]). The sensitivity of the score in the training data is
/// `‖w − w'‖·‖x‖`, so `‖x‖ ≤ 1` must hold exactly: a rounded `‖x‖ ≤ 1` test, or a scaling
/// by a rounded norm, can leave `‖x‖` an ulp above 1. The scaling divides by the largest
/// magnitude before any square is formed, so every finite query gives a finite score: an
/// overflow there would depend on w, that is on the data, and leak outside ε.
pub(crate) fn score_in_unit_ball(w: &[f64], x: &[f64]) -> f64 {
    if dp_erm::within_unit_ball(x) {
        return w.iter().zip(x).map(|(a, b)| a * b).sum();
    }
    let mut row: Vec<(usize, f64)> = x.iter().copied().enumerate().collect();
    if dp_erm::clip_row_to_unit_ball(&mut row).is_err() {
        // Unreachable for a checked query (finite values); a non-finite one scores 0, an
        // answer that does not depend on w.
        return 0.0;
    }
    row.iter().map(|&(j, v)| w[j] * v).sum()
}

/// Releases `score` with `laplace`; the label is the released score's sign.
pub(crate) fn release_score<R: ReleaseRng + ?Sized>(
    laplace: &Laplace,
    score: f64,
    rng: &mut R,
) -> Result<ScoreAnswer, PredictError> {
    let score = laplace.release(score, rng)?;
    Ok(ScoreAnswer {
        score,
        label: if score >= 0.0 { 1.0 } else { -1.0 },
    })
}

/// As [`release_score`] with the noise drawn ahead.
pub(crate) fn release_score_with(
    laplace: &Laplace,
    score: f64,
    drawn: Drawn,
) -> Result<ScoreAnswer, PredictError> {
    let score = release_with(laplace, score, drawn.laplace)?;
    Ok(ScoreAnswer {
        score,
        label: if score >= 0.0 { 1.0 } else { -1.0 },
    })
}
