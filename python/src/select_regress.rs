//! Private selection of a regressor's Λ (`dpml.model_selection.PrivateRegressionSearch`):
//! dp-fit's regression tuner (split-and-select or random stopping) over dp-fit's regression
//! candidates, one per Λ, as `dpml train --tune` selects on a regression schema.

use dp_erm::{ErmParams, Loss, RegressionModel, RegressionSet, TargetClipping};
use dp_fit::recipe::{ErmRecipe, Regularization};
use dp_fit::tuning::{RegressionTuner, TuneMethod};
use dp_noise::ReleaseRng;
use dp_tune::{RegressionData, RegressionTrainer};

use crate::error::CoreError;
use crate::fit::{Randomness, generator, named_row_error, row_builder};
use crate::regress::RegressionSpec;
use crate::rows::Rows;

/// A search checked against its data, nothing drawn yet: every refusal made, the ε and
/// the part sizes known (for the ledger's charge, which comes next).
pub struct RegressionSearch {
    tuner: RegressionTuner<ErmParams>,
    data: RegressionData,
    rng: Box<dyn ReleaseRng + Send>,
}

/// What a search released.
pub struct RegressionChoice {
    /// The chosen model.
    pub model: RegressionModel,
    /// Its position in the grid.
    pub index: usize,
    /// Random stopping's noisy held-out score (split-and-select releases none).
    pub noisy_score: Option<f64>,
}

impl RegressionSearch {
    /// The selection dp-fit built (its ε, δ, step ε, cap).
    pub fn tuner(&self) -> &RegressionTuner<ErmParams> {
        &self.tuner
    }

    /// Rows each candidate trains on and rows held out (functions of n and the method).
    pub fn sizes(&self) -> (usize, usize) {
        self.tuner.parts(self.data.len())
    }

    /// Runs the selection (after the caller has charged the tuner's ε and δ).
    pub fn run(mut self) -> Result<RegressionChoice, CoreError> {
        let chosen = self
            .tuner
            .select(&self.data, &mut *self.rng)
            .map_err(CoreError::Tune)?;
        Ok(RegressionChoice {
            index: chosen.index,
            model: chosen.model,
            noisy_score: chosen.noisy_score,
        })
    }
}

/// Prepares the search `method` among `lambdas` at a total ε of `spec.mechanism`'s ε
/// (pure ε; dp-fit's tuner decides the candidates' step), every refusal made before the
/// generator is drawn from: the parameters, the grid, a target outside the bounds (by
/// row, never by value), too few rows for the parts.
pub fn prepare_regression_search(
    rows: Rows<'_>,
    targets: &[f64],
    spec: &RegressionSpec,
    lambdas: &[f64],
    method: TuneMethod,
    randomness: Randomness,
) -> Result<RegressionSearch, CoreError> {
    let rows = rows.checked()?;
    let transform = spec.transform.checked()?;
    let Some(epsilon) = spec.mechanism.epsilon() else {
        return Err(CoreError::value(
            "epsilon",
            "must be finite: a private search selects among private regressors",
        ));
    };
    if spec.mechanism.delta() > 0.0 {
        return Err(CoreError::value(
            "delta",
            "must be 0: the regressors' search selects among pure-ε candidates",
        ));
    }
    if targets.len() != rows.len() {
        return Err(CoreError::value(
            "y",
            format!("has {} targets for {} rows of X", targets.len(), rows.len()),
        ));
    }
    let recipe = ErmRecipe {
        loss: Loss::huber_regression(spec.threshold)?,
        mechanism: spec.mechanism,
        regularization: Regularization::Rule,
        groups: None,
        tolerance: spec.tolerance,
        feature_map: transform.id(),
    };
    let tuner = RegressionTuner::new(method, epsilon, |step| {
        Ok::<_, CoreError>(
            lambdas
                .iter()
                .map(|&lambda| recipe.params_at(lambda, Some(step)))
                .collect(),
        )
    })?;
    let clipping = if spec.clip_targets {
        TargetClipping::Clip
    } else {
        TargetClipping::Refuse
    };
    let set = RegressionSet::new(
        row_builder(&rows, &transform)?,
        targets,
        spec.target,
        clipping,
    )
    .map_err(|e| match e {
        dp_erm::ErmError::TargetOutsideBounds { row, lower, upper } => CoreError::value(
            "y",
            format!(
                "row {row} is not a number within the public bounds [{lower:?}, \
                     {upper:?}]: widen the bounds (never from the data) or pass \
                     clip_targets=True"
            ),
        ),
        other => named_row_error(other, &transform, 0),
    })?;
    let data = RegressionData::from_set(&set)?;
    if data.len() < tuner.min_rows() {
        return Err(CoreError::value(
            "X",
            format!(
                "has {} rows; this search over {} values needs at least {} ({} per part)",
                data.len(),
                lambdas.len(),
                tuner.min_rows(),
                dp_tune::MIN_ROWS_PER_PART
            ),
        ));
    }
    // Every candidate's refusals for its part's size, before any charge or draw.
    let (part, _) = tuner.parts(data.len());
    for (candidate, trainer) in tuner.candidates().iter().enumerate() {
        RegressionTrainer::check_shape(trainer, part, set.features()).map_err(|e| {
            CoreError::value("param_grid", format!("value {candidate} is refused: {e}"))
        })?;
    }
    Ok(RegressionSearch {
        tuner,
        data,
        rng: generator(randomness)?,
    })
}
