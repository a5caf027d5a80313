//! Subsample-and-aggregate for real values (Dwork & Feldman 2018, §4;
//! docs/src/reference/algorithms.md §7.8): `k` regressors on disjoint parts, whose
//! predictions, each clamped to the public target bounds, are aggregated privately per
//! query — by a private median (the exponential mechanism over rank utilities) or by a
//! clipped mean with Laplace noise.

use dp_erm::{ErmParams, RegressionModel, RegressionSet, TargetScale};
use dp_noise::{ExponentialMechanism, ReleaseRng};

use crate::aggregate::{part_positions, random_order};
use crate::error::{PredictError, check_epsilon};
use crate::interface::PrivatePredictor;
use crate::pool::{Drawn, NoiseSource};
use crate::stable::score_in_unit_ball;
use crate::vote::{LaplaceAverage, check_parts, quantize_vote};

/// Candidates of the private median: `2^10 + 1` equally spaced values of the scaled target,
/// −1 to 1 (a resolution of 1/1024 of the target's public range).
const MEDIAN_CANDIDATES: usize = 1025;

/// `k` regressors, regressor `j` trained on part `j` of a uniformly random partition of the
/// training data into `k` disjoint parts of nearly equal size (as [`crate::Ensemble`]:
/// replacing one example changes exactly one part, whatever the permutation, and the
/// output's law does not depend on the rows' order).
///
/// Each regressor's prediction at a query is its score `⟨w_j, x̂⟩` on the scaled target, with
/// `x̂` the query moved into the unit ball, clamped to [−1, 1] (the public bounds): whatever
/// one part trains, its prediction lies in that range — all the aggregators rely on.
///
/// `Debug` prints the shape only.
#[derive(Clone)]
pub struct RegressionEnsemble {
    models: Vec<RegressionModel>,
    features: usize,
    scale: TargetScale,
}

impl RegressionEnsemble {
    /// Trains `parts` regressors with `params` (a regression loss; the privacy comes from
    /// the aggregation, so `ErmParams::non_private` is the intended use — a private one adds
    /// nothing this crate accounts for). Refuses, before drawing or training anything, zero
    /// parts, more than [`crate::MAX_PARTS`], fewer rows than parts, and every refusal
    /// `params` makes at the parts' sizes ([`PredictError::TrainerRefuses`]).
    ///
    /// A solver that still fails on its part fails the whole call with an error naming the
    /// part (dp-erm's `NotConverged`, which carries no numbers).
    pub fn train(
        params: &ErmParams,
        data: &RegressionSet,
        parts: usize,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Self, PredictError> {
        let parts = check_parts(parts)?;
        let n = data.len();
        if n < parts {
            return Err(PredictError::TooFewRows { rows: n, parts });
        }
        for rows in [n / parts, n.div_ceil(parts)] {
            params
                .regression_noise_calibration(rows, data.features())
                .map_err(|e| PredictError::TrainerRefuses {
                    message: e.to_string(),
                })?;
        }
        let order = random_order(n, rng);
        let mut models = Vec::with_capacity(parts);
        for part in 0..parts {
            let subset = data.select(part_positions(&order, part, parts))?;
            let fit = params
                .fit_regression(&subset, rng)
                .map_err(|e| PredictError::Training {
                    part,
                    message: e.to_string(),
                })?;
            models.push(fit.into_model());
        }
        Ok(Self {
            models,
            features: data.features(),
            scale: data.target_scale(),
        })
    }

    /// Number of regressors k.
    pub fn parts(&self) -> usize {
        self.models.len()
    }

    /// The input dimension.
    pub fn features(&self) -> usize {
        self.features
    }

    /// The public target bounds.
    pub fn target_scale(&self) -> TargetScale {
        self.scale
    }

    /// Checks a query's length and values (no training data involved).
    pub fn check_query(&self, x: &[f64]) -> Result<(), PredictError> {
        crate::aggregate::check_query_row(self.features, x)
    }

    /// **Not private**: the regressors (trained without privacy on their parts).
    pub fn secret_models(&self) -> &[RegressionModel] {
        &self.models
    }

    /// **Not private**: each regressor's clamped prediction at `x`, on the scaled target.
    pub fn secret_scaled_predictions(&self, x: &[f64]) -> Result<Vec<f64>, PredictError> {
        self.check_query(x)?;
        Ok(self.scaled_predictions(x))
    }

    /// The clamped scaled predictions at a checked query. A score that is not finite
    /// (unreachable for a query moved into the unit ball) counts as 0, a fixed value.
    fn scaled_predictions(&self, x: &[f64]) -> Vec<f64> {
        self.models
            .iter()
            .map(|m| {
                let score = score_in_unit_ball(m.weights(), x);
                if score.is_finite() {
                    score.clamp(-1.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl std::fmt::Debug for RegressionEnsemble {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegressionEnsemble")
            .field("parts", &self.models.len())
            .field("features", &self.features)
            .field("target_scale", &self.scale)
            .finish_non_exhaustive()
    }
}

/// Subsample-and-aggregate, clipped mean (§7.8): answers the mean of the `k` clamped
/// predictions plus Laplace noise of scale `range/(kε)`, clamped to the public bounds.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data (replace one example): the
/// example lies in one part, so one regressor's prediction changes, within the public
/// range. Each prediction `s ∈ [−1, 1]` enters as the vote `(s + 1)/2 ∈ [0, 1]`, quantized
/// so that the sum of the k votes is exact ([`quantize_vote`]), which then moves by at most
/// 1; it is released with dp-noise's snapping Laplace at sensitivity 1 ([`LaplaceAverage`]).
/// Dividing by k, clamping and unscaling are post-processing. `q` answers cost `q·ε`.
#[derive(Debug, Clone)]
pub struct RegressionMeanEnsemble {
    ensemble: RegressionEnsemble,
    average: LaplaceAverage,
}

impl RegressionMeanEnsemble {
    /// The ensemble, answering with the ε-DP clipped mean.
    pub fn new(ensemble: RegressionEnsemble, epsilon: f64) -> Result<Self, PredictError> {
        let average = LaplaceAverage::new(epsilon, ensemble.parts())?;
        Ok(Self { ensemble, average })
    }

    /// The same answers with the Laplace noise calibrated for sensitivity 1/2 (tests'
    /// mutation checks).
    #[cfg(test)]
    pub(crate) fn with_halved_sensitivity(&self) -> Self {
        let average = LaplaceAverage::build(
            self.average.epsilon(),
            self.ensemble.parts(),
            crate::vote::VoteMutation::DoubledEpsilon,
        )
        .expect("valid test parameters");
        Self {
            average,
            ..self.clone()
        }
    }

    /// The regressors.
    pub fn ensemble(&self) -> &RegressionEnsemble {
        &self.ensemble
    }

    /// The exact sum of the quantized votes `(s_j + 1)/2`.
    fn vote_sum(&self, query: &[f64]) -> f64 {
        self.ensemble
            .scaled_predictions(query)
            .into_iter()
            .map(|s| quantize_vote(0.5 * (s + 1.0)))
            .sum()
    }

    /// The released mean vote `q ∈ [0, 1]` in the target's units.
    fn unscale(&self, mean_vote: f64) -> f64 {
        self.ensemble.scale.unscale(2.0 * mean_vote - 1.0)
    }
}

impl PrivatePredictor for RegressionMeanEnsemble {
    type Query = [f64];
    type Answer = f64;

    fn epsilon(&self) -> f64 {
        self.average.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        self.ensemble.check_query(query)
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<f64, PredictError> {
        let released = self.average.release_sum(self.vote_sum(query), rng)?;
        Ok(self.unscale(released.probability))
    }

    fn noise_source(&self) -> Option<NoiseSource> {
        Some(self.average.noise_source())
    }

    fn answer_with(&self, query: &[f64], drawn: Drawn) -> Result<f64, PredictError> {
        let released = self.average.release_sum_with(self.vote_sum(query), drawn)?;
        Ok(self.unscale(released.probability))
    }
}

/// Subsample-and-aggregate, private median (§7.8): each of the `k` clamped predictions is
/// snapped to the nearest of 1025 public, equally spaced candidates spanning the target's
/// bounds, and the answer is a candidate drawn by the exponential mechanism with the rank
/// utility `u(c) = −max(#{s < c}, #{s > c})`, unscaled.
///
/// The utility counts the predictions strictly on each side, so a candidate that many
/// predictions share scores well: when the parts agree (large n), their common value is
/// the answer with high probability. (A one-sided count `#{s ≤ c}` would give every
/// candidate the same utility when all predictions share one cell, and answer uniformly.)
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data (replace one example): one
/// part changes, so one snapped prediction changes (snapping reads that prediction only).
/// For every candidate, `#{s < c}` and `#{s > c}` each move by at most 1, so `u(c)` moves by
/// at most 1, and the candidate is drawn with probability `∝ exp(ε·u(c)/2)` by dp-noise's
/// exact [`ExponentialMechanism`] at sensitivity 1. The candidates depend on nothing but
/// the public bounds; unscaling is post-processing. Its law depends on the data, so no
/// noise is drawn ahead (through a [`crate::ServingInterface`] only the fixed slots apply).
/// `q` answers cost `q·ε`.
#[derive(Debug, Clone)]
pub struct RegressionMedianEnsemble {
    ensemble: RegressionEnsemble,
    selector: ExponentialMechanism,
}

impl RegressionMedianEnsemble {
    /// The ensemble, answering with the ε-DP median.
    pub fn new(ensemble: RegressionEnsemble, epsilon: f64) -> Result<Self, PredictError> {
        let epsilon = check_epsilon(epsilon)?;
        Ok(Self {
            ensemble,
            selector: ExponentialMechanism::new(epsilon, 1.0)?,
        })
    }

    /// The regressors.
    pub fn ensemble(&self) -> &RegressionEnsemble {
        &self.ensemble
    }

    /// **Not private**: the exact probability of each candidate at `x` (tests and analysis),
    /// candidate `j` being `−1 + j/512` on the scaled target.
    pub fn secret_law(&self, x: &[f64]) -> Result<Vec<f64>, PredictError> {
        self.ensemble.check_query(x)?;
        self.law_of(&self.ensemble.scaled_predictions(x))
    }

    /// The exact law of the answer's candidate for given scaled predictions in [−1, 1].
    pub(crate) fn law_of(&self, predictions: &[f64]) -> Result<Vec<f64>, PredictError> {
        Ok(self
            .selector
            .selection_probabilities(&rank_utilities(predictions))?)
    }
}

/// Spacing of the median's candidates on the scaled target: 2/1024, a power of two, so
/// every candidate `−1 + j·step` is exact.
const CANDIDATE_STEP: f64 = 2.0 / (MEDIAN_CANDIDATES - 1) as f64;

/// The candidate nearest a scaled prediction in [−1, 1].
fn nearest_candidate(s: f64) -> usize {
    (((s + 1.0) / CANDIDATE_STEP).round().max(0.0) as usize).min(MEDIAN_CANDIDATES - 1)
}

/// `u(c_j) = −max(#{s < c_j}, #{s > c_j})` for the predictions snapped to the candidates:
/// integers, so the exponential mechanism's utilities are exact.
fn rank_utilities(predictions: &[f64]) -> Vec<f64> {
    let mut at = vec![0usize; MEDIAN_CANDIDATES];
    for &s in predictions {
        at[nearest_candidate(s)] += 1;
    }
    let mut below = 0;
    at.iter()
        .map(|&here| {
            let above = predictions.len() - below - here;
            let utility = -(below.max(above) as f64);
            below += here;
            utility
        })
        .collect()
}

impl PrivatePredictor for RegressionMedianEnsemble {
    type Query = [f64];
    type Answer = f64;

    fn epsilon(&self) -> f64 {
        self.selector.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        self.ensemble.check_query(query)
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<f64, PredictError> {
        let utilities = rank_utilities(&self.ensemble.scaled_predictions(query));
        let chosen = self.selector.select(&utilities, rng)?;
        let scaled = -1.0 + chosen as f64 * CANDIDATE_STEP;
        Ok(self.ensemble.scale.unscale(scaled))
    }
}
