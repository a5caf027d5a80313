//! Stable regularized ERM for regression with Laplace noise on the prediction (Dwork &
//! Feldman 2018, §4 for convex Lipschitz losses; docs/src/reference/algorithms.md §7.7).
//! The classification version's sensitivity and solver machinery ([`StableErmParams`]),
//! applied to dp-erm's Huber regression on targets scaled into [−1, 1].

use dp_erm::{Loss, RegressionModel, RegressionSet, TargetScale};
use dp_noise::{Laplace, ReleaseRng};

use crate::error::PredictError;
use crate::interface::PrivatePredictor;
use crate::pool::{Drawn, NoiseSource, release_with};
use crate::stable::{StableErmParams, check_row, score_in_unit_ball};

/// Parameters of stable ERM for regression (§7.7): a regression loss
/// ([`Loss::huber_regression`]: 1-Lipschitz in the residual), regularization λ, per-query
/// ε, and optionally the solver's gradient tolerance. Every value is checked by
/// [`StableRegressionParams::fit`] (or [`StableRegressionParams::sensitivity`]) before any
/// work; a classification loss is refused there.
///
/// ```
/// use dp_erm::{Loss, RegressionSet, TargetClipping, TargetScale, TrainingSet};
/// use dp_noise::DpRng;
/// use dp_predict::{PredictionInterface, StableRegressionParams};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // y = 4·x on rows x ∈ [0, 1), targets within the public bounds [0, 4].
/// let xs: Vec<f64> = (0..2000).map(|i| i as f64 / 2000.0).collect();
/// let ys: Vec<f64> = xs.iter().map(|x| 4.0 * x).collect();
/// let rows = TrainingSet::builder(1).dense_rows(xs).append_intercept(1.0);
/// let data = RegressionSet::new(rows, &ys, TargetScale::new(0.0, 4.0)?, TargetClipping::Refuse)?;
///
/// let mut rng = DpRng::from_os_entropy()?;
/// let lambda = StableRegressionParams::balanced_regularization(1.0, 1.0, data.len())?;
/// let regressor = StableRegressionParams::new(Loss::huber_regression(1.0)?, lambda, 1.0)
///     .fit(&data, &mut rng)?;
/// // Five answers at ε = 1 each; every answer lies within [0, 4].
/// let mut interface = PredictionInterface::new(regressor, 5.0)?;
/// let query = [0.5 / 2f64.sqrt(), 1.0 / 2f64.sqrt()]; // the row 0.5 with its intercept
/// let answer = interface.answer(&query, &mut rng)?;
/// assert!((0.0..=4.0).contains(&answer));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StableRegressionParams {
    stable: StableErmParams,
}

impl StableRegressionParams {
    /// Stable ERM with the regression `loss`, λ = `regularization`, per-query `epsilon`.
    pub fn new(loss: Loss, regularization: f64, epsilon: f64) -> Self {
        Self {
            stable: StableErmParams::new(loss, regularization, epsilon),
        }
    }

    /// The λ balancing regularization bias and noise for a comparator of norm B =
    /// `comparator_norm` (on the scaled target): `λ = (2/B)·√((1 + 1/ε)/n)`, the
    /// classification formula ([`StableErmParams::balanced_regularization`]), because the
    /// bound it minimizes — `λB²/2` of bias plus `2/(λn)` of instability plus `2/(λnε)` of
    /// expected noise, each for a 1-Lipschitz loss — is the same for the residual's loss
    /// (derivation: docs/src/reference/algorithms.md §7.7).
    pub fn balanced_regularization(
        comparator_norm: f64,
        epsilon: f64,
        examples: usize,
    ) -> Result<f64, PredictError> {
        StableErmParams::balanced_regularization(comparator_norm, epsilon, examples)
    }

    /// The gradient-norm tolerance the solver must certify (see
    /// [`StableErmParams::tolerance`]). It enters the sensitivity.
    pub fn tolerance(self, tolerance: f64) -> Self {
        Self {
            stable: self.stable.tolerance(tolerance),
        }
    }

    /// The per-query ε.
    pub fn epsilon(&self) -> f64 {
        self.stable.epsilon()
    }

    /// The sensitivity of the scaled prediction `⟨w, x⟩` for `‖x‖ ≤ 1` over neighbouring
    /// regression sets of `examples` rows and `features` columns: the bound of
    /// [`StableErmParams::sensitivity`], `2/(λn) + 2(γ + floor)/λ` plus the dot product's
    /// rounding allowance. Checks every parameter (a classification loss is refused).
    pub fn sensitivity(&self, examples: usize, features: usize) -> Result<f64, PredictError> {
        self.stable.regression_sensitivity(examples, features)
    }

    /// Trains non-privately (to the certified tolerance) on `data` and prepares the
    /// per-query Laplace mechanism. `rng` is unused by the deterministic solver.
    pub fn fit(
        &self,
        data: &RegressionSet,
        rng: &mut dyn ReleaseRng,
    ) -> Result<StableRegression, PredictError> {
        let (n, d) = (data.len(), data.features());
        let sensitivity = self.sensitivity(n, d)?;
        let laplace = Laplace::new(self.epsilon(), sensitivity)?;
        let fit = self.stable.erm_params(n, d).fit_regression(data, rng)?;
        Ok(StableRegression {
            model: fit.into_model(),
            laplace,
        })
    }
}

/// A trained stable-ERM regressor (§7.7): answers `unscale(clamp(⟨w, x̂⟩ + Lap(Δ/ε), −1, 1))`,
/// with `x̂` the query moved into the unit ball and `unscale` the public target scaling
/// undone: a value within the public target bounds, in the target's units.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data, for neighbouring regression
/// sets that differ in one example `(x, y)` (replaced), rows in the unit ball and targets
/// within the public bounds. The Huber-regression loss is 1-Lipschitz in the residual
/// `⟨w, x⟩ − t`, so each example's gradient has norm at most 1 whatever its target, and the
/// λ-strongly convex regularized minimizer moves by at most `2/(λn)` when one example is
/// replaced; the certified solver tolerance γ adds at most `(γ + floor)/λ` per dataset.
/// With `‖x̂‖ ≤ 1` the scaled prediction moves by at most `Δ = 2/(λn) + 2(γ + floor)/λ`
/// (plus a rounding allowance for the dot product), and is released by dp-noise's snapping
/// [`Laplace`] at sensitivity Δ. Clamping to [−1, 1] and unscaling are post-processing;
/// moving the query into the unit ball depends on the query only. `q` answers cost `q·ε`
/// ([`crate::PredictionInterface`]).
#[derive(Clone)]
pub struct StableRegression {
    model: RegressionModel,
    laplace: Laplace,
}

impl StableRegression {
    /// The same regressor with its noise calibrated for `factor`·Δ (tests' mutation checks:
    /// factor 1/2 halves the sensitivity).
    #[cfg(test)]
    pub(crate) fn with_sensitivity_factor(&self, factor: f64) -> Self {
        let laplace = Laplace::new(self.laplace.epsilon(), self.laplace.sensitivity() * factor)
            .expect("valid test parameters");
        Self {
            laplace,
            ..self.clone()
        }
    }

    /// The Laplace mechanism each answer uses (ε, Δ on the scaled target, grid, scale).
    pub fn laplace(&self) -> &Laplace {
        &self.laplace
    }

    /// The public target bounds answers are unscaled to.
    pub fn target_scale(&self) -> TargetScale {
        self.model.target_scale()
    }

    /// **Not private**: the trained regressor.
    pub fn secret_model(&self) -> &RegressionModel {
        &self.model
    }

    /// **Not private**: the noiseless scaled prediction `⟨w, x̂⟩` at the query.
    pub fn secret_scaled_prediction(&self, x: &[f64]) -> Result<f64, PredictError> {
        check_row(x, self.model.weights().len())?;
        Ok(score_in_unit_ball(self.model.weights(), x))
    }

    fn scaled_prediction(&self, query: &[f64]) -> f64 {
        score_in_unit_ball(self.model.weights(), query)
    }

    /// The released scaled value, clamped and mapped to the target's units.
    fn post_process(&self, released: f64) -> f64 {
        self.model.target_scale().unscale(released.clamp(-1.0, 1.0))
    }
}

impl PrivatePredictor for StableRegression {
    type Query = [f64];
    type Answer = f64;

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
    ) -> Result<f64, PredictError> {
        let released = self.laplace.release(self.scaled_prediction(query), rng)?;
        Ok(self.post_process(released))
    }

    fn noise_source(&self) -> Option<NoiseSource> {
        Some(NoiseSource::of(&self.laplace))
    }

    fn answer_with(&self, query: &[f64], drawn: Drawn) -> Result<f64, PredictError> {
        let released = release_with(&self.laplace, self.scaled_prediction(query), drawn.laplace)?;
        Ok(self.post_process(released))
    }
}

impl std::fmt::Debug for StableRegression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StableRegression")
            .field("epsilon", &self.laplace.epsilon())
            .field("sensitivity", &self.laplace.sensitivity())
            .field("features", &self.model.weights().len())
            .field("target_scale", &self.model.target_scale())
            .finish_non_exhaustive()
    }
}
