//! `dpml train --tune` on a regression schema: split-and-select among Huber regressors,
//! one per Λ of the grid (dp-tune's `RegressionSplitAndSelect`), scored on the held-out
//! part by the squared error of predictions clamped to the target's public bounds.

use dp_erm::{ErmParams, RegressionSet};
use dp_noise::ReleaseRng;
use dp_tune::{RegressionData, RegressionSplitAndSelect};
use serde_json::json;

use crate::model_file::Model as Released;
use crate::train::{Outcome, Plan, TuneMethod};
use crate::{Failure, fail};

/// The selection over the grid's regressors, each at ε, with a selection at ε (total ε, as
/// the classifiers' split-and-select), built before the data are read; `None` without
/// `--tune`. Random stopping's noisy score counts mistakes: refused for a regression.
pub fn regression_tuner(
    method: TuneMethod,
    epsilon: f64,
    plan: &Plan,
) -> Result<Option<RegressionSplitAndSelect<ErmParams>>, Failure> {
    let Some(grid) = &plan.grid else {
        return Ok(None);
    };
    if plan.recipe.mechanism.delta() > 0.0 {
        return Err(fail(
            "--tune with --delta on a regression: regressors are tuned among pure-ε fits only \
             (leave --delta out, or give --regularization)",
        ));
    }
    if method != TuneMethod::Split {
        return Err(fail(
            "--tune-method stopping does not apply to a regression (its noisy score counts a \
             classifier's mistakes): regressors are tuned by split-and-select, --tune-method \
             split",
        ));
    }
    let candidates = grid
        .iter()
        .map(|&lambda| plan.recipe.params_at(lambda, Some(epsilon)))
        .collect();
    RegressionSplitAndSelect::new(candidates, epsilon)
        .map(Some)
        .map_err(|e| fail(format!("the tuning was refused: {e}")))
}

/// The selection run on `set`, with every step's ε for the report.
pub fn tuned_regression<R: ReleaseRng>(
    tuner: &RegressionSplitAndSelect<ErmParams>,
    set: &RegressionSet,
    rng: &mut R,
    plan: &Plan,
) -> Result<Outcome, Failure> {
    let refused = |e: dp_tune::TuneError| fail(format!("the tuning was refused: {e}"));
    let data = RegressionData::from_set(set).map_err(|e| fail(format!("the rows: {e}")))?;
    let grid = plan.grid.as_deref().unwrap_or_default();
    let chosen = tuner.select(&data, rng).map_err(refused)?;
    let (n, d) = (set.len(), set.features());
    let rows_per_candidate = n / tuner.parts();
    let facts = json!({
        "method": "split-and-select over regressors: the rows shuffled with fresh \
                   randomness and cut into one part per candidate plus a held-out part; the \
                   exponential mechanism picks a candidate by its held-out score, the sum of \
                   ((clamp(prediction) − target)/(upper − lower))² (each row's term in [0, 1]: \
                   sensitivity 1)",
        "parts": tuner.parts(),
        "rows_per_candidate": rows_per_candidate,
        "held_out_rows": chosen.validation_rows(),
        "candidate_epsilon": plan.recipe.mechanism.epsilon(),
        "selection_epsilon": tuner.epsilon(),
        "privacy": "max(ε_candidates, ε_selection) by parallel composition (dp-tune's \
                    RegressionSplitAndSelect)",
        "grid": grid,
        "chosen_index": chosen.index(),
        "chosen_regularization": grid[chosen.index()],
    });
    let outlook = plan
        .recipe
        .plan_regression(rows_per_candidate, d)
        .ok()
        .and_then(|p| p.outlook(rows_per_candidate, d));
    Ok(Outcome {
        model: Released::Regression(chosen.into_model()),
        mechanism: format!(
            "{}, Huber regression (threshold: half the target's public range); Λ chosen \
             privately by --tune",
            plan.recipe.mechanism.description()
        ),
        regularization_choice: format!(
            "chosen privately among --tune's {} values (split-and-select over regressors); the \
             choice is part of the ε spent",
            grid.len()
        ),
        epsilon_steps: json!([
            { "step": format!("train {} Huber regressors, each on its own part (parallel composition)", grid.len()),
              "epsilon": plan.recipe.mechanism.epsilon() },
            { "step": "select (exponential mechanism on the held-out clamped squared error)",
              "epsilon": tuner.epsilon() },
        ]),
        epsilon: tuner.epsilon(),
        delta: 0.0,
        tuning: Some(facts),
        kernel: None,
        sgd: None,
        training_rows: rows_per_candidate,
        outlook,
    })
}
