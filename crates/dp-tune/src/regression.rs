//! Split-and-select over regressors: the classifiers' [`crate::SplitAndSelect`] with a
//! held-out score of bounded sensitivity in place of the mistake count — the sum, over the
//! held-out rows, of the squared error of the prediction clamped to the public target
//! bounds, divided by the squared width of those bounds, so that every row's term lies in
//! [0, 1].

use dp_erm::{
    ErmError, ErmParams, FeatureRow, Features, GaussianErm, RegressionModel, RegressionSet,
    TargetClipping, TargetScale, TrainingSet,
};
use dp_noise::{ExponentialMechanism, PrivacyBudget, ReleaseRng};

use crate::TuneError;
use crate::candidates::guarantee_of;
use crate::error::check_epsilon;
use crate::partition::{part_ranges, shuffled};
use crate::split::MIN_ROWS_PER_PART;

/// A private regressor a selection can train: its guarantee and its fit.
pub trait RegressionTrainer {
    /// The ε of the guarantee (`None`: not private, refused as a candidate).
    fn epsilon(&self) -> Option<f64>;
    /// The δ of the guarantee (0 for pure ε).
    fn delta(&self) -> f64;
    /// Every refusal the fit makes from the sizes and parameters alone, before any data.
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError>;
    /// Trains on `data`, every draw from `rng`.
    fn train(
        &self,
        data: &RegressionSet,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionModel, ErmError>;
}

impl RegressionTrainer for ErmParams {
    fn epsilon(&self) -> Option<f64> {
        self.mechanism().epsilon()
    }

    fn delta(&self) -> f64 {
        0.0
    }

    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        self.regression_noise_calibration(rows, features).map(drop)
    }

    fn train(
        &self,
        data: &RegressionSet,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionModel, ErmError> {
        Ok(self.fit_regression(data, rng)?.into_model())
    }
}

impl RegressionTrainer for GaussianErm {
    fn epsilon(&self) -> Option<f64> {
        Some(GaussianErm::epsilon(self))
    }

    fn delta(&self) -> f64 {
        GaussianErm::delta(self)
    }

    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        self.regression_calibration(rows, features).map(drop)
    }

    fn train(
        &self,
        data: &RegressionSet,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionModel, ErmError> {
        Ok(self.fit_regression(data, rng)?.0)
    }
}

/// Regression data for a selection: rows in the unit ball (checked when built, as
/// [`RegressionSet`] checks them) and one target per row within the public bounds.
#[derive(Clone)]
pub struct RegressionData {
    rows: Features,
    targets: Vec<f64>,
    scale: TargetScale,
}

/// Shows the shape only: rows and targets are the data the guarantees protect.
impl std::fmt::Debug for RegressionData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegressionData")
            .field("rows", &self.rows.len())
            .field("features", &self.rows.features())
            .field("target_scale", &self.scale)
            .finish_non_exhaustive()
    }
}

impl RegressionData {
    /// `rows` with `targets` (one per row) within `scale`'s public bounds — a target
    /// outside them refused by `clipping`'s rule naming its row, or clipped — every row
    /// checked against the unit ball now, by [`RegressionSet::new`].
    pub fn new(
        rows: Features,
        targets: &[f64],
        scale: TargetScale,
        clipping: TargetClipping,
    ) -> Result<Self, ErmError> {
        let checked = RegressionSet::new(builder_of(&rows)?, targets, scale, clipping)?;
        let targets = checked
            .scaled_targets()
            .iter()
            .map(|&t| scale.unscale(t))
            .collect();
        Ok(Self {
            rows,
            targets,
            scale,
        })
    }

    /// The rows and targets of `set` (already checked by it).
    pub fn from_set(set: &RegressionSet) -> Result<Self, ErmError> {
        let rows = set.rows();
        let mut entries = Vec::with_capacity(rows.len());
        for i in 0..rows.len() {
            let mut row = Vec::new();
            rows.for_each_entry(i, |j, v| row.push((j, v)));
            entries.push(row);
        }
        let scale = set.target_scale();
        Ok(Self {
            rows: Features::sparse(rows.features(), entries)?,
            targets: set
                .scaled_targets()
                .iter()
                .map(|&t| scale.unscale(t))
                .collect(),
            scale,
        })
    }

    /// The number of rows n.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// The number of features d.
    pub(crate) fn features(&self) -> usize {
        self.rows.features()
    }

    /// The public target bounds.
    pub(crate) fn scale(&self) -> TargetScale {
        self.scale
    }

    /// Always false: the data has at least one row.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// The rows at `indices` with their targets.
    pub(crate) fn select(&self, indices: &[usize]) -> Result<(Features, Vec<f64>), ErmError> {
        let rows = self.rows.select(indices)?;
        Ok((rows, indices.iter().map(|&i| self.targets[i]).collect()))
    }

    /// The rows at `indices` as a regression set (already checked: only rebuilt).
    pub(crate) fn part(&self, indices: &[usize]) -> Result<RegressionSet, ErmError> {
        let (rows, targets) = self.select(indices)?;
        RegressionSet::new(
            builder_of(&rows)?,
            &targets,
            self.scale,
            TargetClipping::Refuse,
        )
    }
}

/// A builder holding `rows` as they are (dense or sparse), labels left to the regression
/// set.
fn builder_of(rows: &Features) -> Result<dp_erm::TrainingSetBuilder, ErmError> {
    let d = rows.features();
    Ok(match rows.dense_values() {
        Some(values) => TrainingSet::builder(d).dense_rows(values.to_vec()),
        None => TrainingSet::builder(d).sparse_rows(
            (0..rows.len())
                .map(|i| match rows.row(i) {
                    FeatureRow::Sparse(indices, values) => indices
                        .iter()
                        .copied()
                        .zip(values.iter().copied())
                        .collect(),
                    FeatureRow::Dense(values) => values.iter().copied().enumerate().collect(),
                })
                .collect(),
        ),
    })
}

/// How a held-out row is scored. Only `Bounded` is reachable outside the tests; the others
/// are the classic bugs the tests must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scoring {
    /// `((clamp(ŷ) − y)/(U − L))²`, in [0, 1].
    Bounded,
    /// The mutant that forgets to divide by the squared width: terms up to (U − L)².
    #[cfg_attr(not(test), allow(dead_code))]
    Unnormalized,
    /// The mutant that scores the linear prediction before the clamp.
    #[cfg_attr(not(test), allow(dead_code))]
    Unclamped,
}

/// The held-out score of `model`: the sum over `rows` of each row's term under
/// `scoring` ([`row_terms`]), in floating point (split-and-select's utility).
pub(crate) fn held_out_error(
    model: &RegressionModel,
    rows: &Features,
    targets: &[f64],
    scale: TargetScale,
    scoring: Scoring,
) -> f64 {
    row_terms(model, rows, targets, scale, scoring).sum()
}

/// Units per row term of random stopping's regression score
/// ([`crate::RegressionRandomStopping`]): a term in [0, 1] becomes a whole number of units
/// in `[0, REGRESSION_SCORE_UNITS]` (2²⁰: a rounding of at most 2⁻²¹ per row), so the
/// score moves by at most this many units between neighbours.
pub const REGRESSION_SCORE_UNITS: u64 = 1 << 20;

/// The held-out score in whole units, summed exactly in integers (random stopping adds
/// integer noise to it): each row's term ([`row_terms`]) times
/// [`REGRESSION_SCORE_UNITS`], rounded to the nearest whole unit. Rounding maps [0, 1]
/// onto `[0, UNITS]`, so one row's term moves the sum by at most `UNITS`, whatever the
/// floating-point error in the term; an exact integer sum keeps it so (no rounding in the
/// sum).
pub(crate) fn held_out_units(
    model: &RegressionModel,
    rows: &Features,
    targets: &[f64],
    scale: TargetScale,
    scoring: Scoring,
) -> i128 {
    row_terms(model, rows, targets, scale, scoring)
        // `as` saturates: only the mutants' unbounded terms can reach it.
        .map(|term| (term * REGRESSION_SCORE_UNITS as f64).round() as i128)
        .sum()
}

/// Each held-out row's term under `scoring`. A prediction that overflows (or is not a
/// number) scores the largest term, 1, so the score never fails and every `Bounded` term
/// lies in [0, 1].
fn row_terms<'a>(
    model: &'a RegressionModel,
    rows: &'a Features,
    targets: &'a [f64],
    scale: TargetScale,
    scoring: Scoring,
) -> impl Iterator<Item = f64> + 'a {
    let (lower, upper) = (scale.lower(), scale.upper());
    let width = upper - lower;
    let weights = model.weights();
    let mut dense = vec![0.0; rows.features()];
    (0..rows.len()).map(move |i| {
        dense.iter_mut().for_each(|v| *v = 0.0);
        match rows.row(i) {
            FeatureRow::Dense(values) => dense.copy_from_slice(values),
            FeatureRow::Sparse(indices, values) => {
                for (&j, &v) in indices.iter().zip(values) {
                    dense[j] = v;
                }
            }
        }
        let prediction = match scoring {
            Scoring::Unclamped => {
                let raw: f64 = weights.iter().zip(&dense).map(|(w, v)| w * v).sum();
                lower + 0.5 * width * (raw + 1.0)
            }
            _ => match model.predict(&dense) {
                Ok(p) => p.clamp(lower, upper),
                Err(_) => return 1.0,
            },
        };
        let residual = prediction - targets[i].clamp(lower, upper);
        let term = match scoring {
            Scoring::Unnormalized => residual * residual,
            _ => (residual / width).powi(2),
        };
        if term.is_nan() {
            1.0
        } else if scoring == Scoring::Bounded {
            term.min(1.0)
        } else {
            term
        }
    })
}

/// Private selection among `m` candidate regressors (Λ values, Huber thresholds,
/// mechanisms…) by splitting the data, as [`crate::SplitAndSelect`] selects classifiers:
/// shuffle with fresh randomness, cut into `m + 1` parts of nearly equal size, train
/// candidate `i` on part `i`, score each model on the last part by
/// `Z_i = Σ ((clamp(ŷ) − y)/(U − L))²` (predictions clamped to the public bounds
/// `[L, U]`, targets within them: every term in [0, 1]), and release model `i` with
/// probability `∝ exp(−ε_S·Z_i/2)` (dp-noise's exponential mechanism, utility `−Z_i`,
/// sensitivity 1).
///
/// # Privacy
///
/// The argument of [`crate::SplitAndSelect`]'s `# Privacy`, with the score's sensitivity
/// derived here. For datasets of the same size n differing in one row `(x, y)` replaced,
/// the released pair (index, model) is **`(max(ε_T, ε_S), δ_T)`-DP**
/// ([`RegressionSplitAndSelect::epsilon`], [`RegressionSplitAndSelect::delta`]):
///
/// 1. The permutation and cut depend on n and fresh randomness only; condition on them.
///    The changed row lies in exactly one part.
/// 2. In training part `i`: only model `i` changes, by the trainer's `(ε_i, δ_i)`; the
///    scores are post-processing of the models and the unchanged held-out part.
/// 3. In the held-out part: the models do not change, and each `Z_j` changes in one term.
///    Both terms are `((p − t)/(U − L))²` with `p` clamped into `[L, U]` (the score clamps
///    it, whatever the model) and `t` within `[L, U]` (the data's contract), so
///    `|p − t| ≤ U − L` and each term lies in [0, 1] (one that is not a number, or whose
///    prediction overflows, scores 1); hence `|Z_j − Z′_j| ≤ 1`, and the exponential
///    mechanism with sensitivity 1 is `ε_S`-DP.
/// 4. Parallel composition over the parts, and a mixture over permutations, give the
///    total. Nothing composes across candidates.
///
/// Without the clamp a prediction outside the bounds makes a term unbounded, and without
/// the division a term reaches `(U − L)²`: the tests show both mutants break the ratio
/// `e^{ε_S}` on neighbouring held-out parts.
pub struct RegressionSplitAndSelect<T> {
    candidates: Vec<T>,
    training_epsilon: f64,
    training_delta: f64,
    mechanism: ExponentialMechanism,
}

impl<T: RegressionTrainer> RegressionSplitAndSelect<T> {
    /// Checks and freezes the candidates (each must report a finite ε in (0, 1000] and a
    /// δ in [0, 1)) and the selection's ε, before any data.
    pub fn new(candidates: Vec<T>, selection_epsilon: f64) -> Result<Self, TuneError> {
        let (training_epsilon, training_delta) =
            guarantee_of(candidates.iter().map(|t| (t.epsilon(), t.delta())))?;
        let selection_epsilon = check_epsilon("selection epsilon", selection_epsilon)?;
        Ok(Self {
            candidates,
            training_epsilon,
            training_delta,
            mechanism: ExponentialMechanism::new(selection_epsilon, 1.0)?,
        })
    }

    /// The candidates, in their frozen order.
    pub fn candidates(&self) -> &[T] {
        &self.candidates
    }

    /// `ε_T`: the largest ε a candidate spends.
    pub fn training_epsilon(&self) -> f64 {
        self.training_epsilon
    }

    /// `ε_S`: the exponential mechanism's ε.
    pub fn selection_epsilon(&self) -> f64 {
        self.mechanism.epsilon()
    }

    /// The end-to-end ε: `max(ε_T, ε_S)`.
    pub fn epsilon(&self) -> f64 {
        self.training_epsilon.max(self.mechanism.epsilon())
    }

    /// The end-to-end δ: the largest candidate δ.
    pub fn delta(&self) -> f64 {
        self.training_delta
    }

    /// `m + 1`: one part per candidate and the held-out part.
    pub fn parts(&self) -> usize {
        self.candidates.len() + 1
    }

    /// The fewest rows a selection takes: [`MIN_ROWS_PER_PART`] per part.
    pub fn min_rows(&self) -> usize {
        self.parts().saturating_mul(MIN_ROWS_PER_PART)
    }

    /// Runs the selection on `data` with fresh randomness from `rng`. Refused before
    /// anything is drawn: too few rows, and what a candidate refuses for its part's size.
    pub fn select(
        &self,
        data: &RegressionData,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionSelection, TuneError> {
        self.check_data(data)?;
        self.select_checked(data, rng, Scoring::Bounded)
    }

    /// As [`RegressionSplitAndSelect::select`], first charging
    /// [`RegressionSplitAndSelect::epsilon`] (and δ) to `budget`, after the refusals and
    /// before any model is trained; a failure after the charge keeps it.
    pub fn select_charging(
        &self,
        data: &RegressionData,
        budget: &mut PrivacyBudget,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionSelection, TuneError> {
        self.check_data(data)?;
        budget
            .spend_approximate("regression split-and-select", self.epsilon(), self.delta())
            .map_err(TuneError::Budget)?;
        self.select_checked(data, rng, Scoring::Bounded)
    }

    fn check_data(&self, data: &RegressionData) -> Result<(), TuneError> {
        let rows = data.len();
        if rows < self.min_rows() {
            return Err(TuneError::TooFewRows {
                rows,
                parts: self.parts(),
                min_per_part: MIN_ROWS_PER_PART,
            });
        }
        let ranges = part_ranges(rows, self.parts());
        for (candidate, trainer) in self.candidates.iter().enumerate() {
            trainer
                .check_shape(ranges[candidate].len(), data.rows.features())
                .map_err(|e| TuneError::CandidateRefuses {
                    candidate,
                    source: Box::new(e),
                })?;
        }
        Ok(())
    }

    pub(crate) fn select_checked(
        &self,
        data: &RegressionData,
        rng: &mut dyn ReleaseRng,
        scoring: Scoring,
    ) -> Result<RegressionSelection, TuneError> {
        let order = shuffled(data.len(), rng);
        let ranges = part_ranges(data.len(), self.parts());
        let (training, held_out) = ranges.split_at(self.candidates.len());
        let (rows, targets) = data
            .select(&order[held_out[0].clone()])
            .map_err(TuneError::Data)?;
        let mut models = Vec::with_capacity(self.candidates.len());
        let mut scores = Vec::with_capacity(self.candidates.len());
        for (candidate, (trainer, range)) in self.candidates.iter().zip(training).enumerate() {
            let part = data.part(&order[range.clone()]).map_err(TuneError::Data)?;
            let model = trainer.train(&part, rng).map_err(|e| TuneError::Training {
                candidate,
                source: Box::new(e),
            })?;
            scores.push(held_out_error(&model, &rows, &targets, data.scale, scoring));
            models.push(model);
        }
        let utilities: Vec<f64> = scores.iter().map(|z| -z).collect();
        let index = self.mechanism.select(&utilities, rng)?;
        Ok(RegressionSelection {
            index,
            model: models.swap_remove(index),
            epsilon: self.epsilon(),
            delta: self.delta(),
            validation_rows: rows.len(),
            secret_scores: scores,
        })
    }
}

/// What a regression selection releases: the chosen candidate's index and model, with the
/// end-to-end ε and δ. The held-out scores are **not private** (`secret_` accessor).
#[derive(Debug)]
pub struct RegressionSelection {
    index: usize,
    model: RegressionModel,
    epsilon: f64,
    delta: f64,
    validation_rows: usize,
    secret_scores: Vec<f64>,
}

impl RegressionSelection {
    /// The chosen candidate's position.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The chosen model.
    pub fn model(&self) -> &RegressionModel {
        &self.model
    }

    /// The chosen model, consuming the selection.
    pub fn into_model(self) -> RegressionModel {
        self.model
    }

    /// The end-to-end ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The end-to-end δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// Rows in the held-out part (public: a function of n and m).
    pub fn validation_rows(&self) -> usize {
        self.validation_rows
    }

    /// Every candidate's held-out score. **Not private**: diagnostics only.
    pub fn secret_scores(&self) -> &[f64] {
        &self.secret_scores
    }
}

#[cfg(test)]
#[path = "regression_tests.rs"]
mod tests;
