//! `dpml train --tune` on a regression schema: Λ chosen privately among Huber regressors,
//! one per value of the grid, by dp-fit's regression tuner (`--tune-method split`:
//! dp-tune's `RegressionSplitAndSelect`; `--tune-method stopping`: its
//! `RegressionRandomStopping`), scored on the held-out part by the squared error of
//! predictions clamped to the target's public bounds.

use dp_erm::{ErmParams, RegressionSet};
use dp_fit::tuning::RegressionTuner;
use dp_noise::ReleaseRng;
use dp_tune::RegressionData;
use serde_json::json;

use crate::model_file::Model as Released;
use crate::train::{Outcome, Plan, TuneMethod};
use crate::tune::dp_fit_method;
use crate::{Failure, fail};

/// The selection over the grid's regressors at a total ε (dp-fit decides each method's
/// step ε), built before the data are read; `None` without `--tune`.
pub fn regression_tuner(
    method: TuneMethod,
    epsilon: f64,
    stop_probability: f64,
    plan: &Plan,
) -> Result<Option<RegressionTuner<ErmParams>>, Failure> {
    let Some(grid) = &plan.grid else {
        return Ok(None);
    };
    if plan.recipe.mechanism.delta() > 0.0 {
        return Err(fail(
            "--tune with --delta on a regression: regressors are tuned among pure-ε fits only \
             (leave --delta out, or give --regularization)",
        ));
    }
    RegressionTuner::new(dp_fit_method(method, stop_probability), epsilon, |step| {
        Ok::<_, Failure>(
            grid.iter()
                .map(|&lambda| plan.recipe.params_at(lambda, Some(step)))
                .collect(),
        )
    })
    .map(Some)
}

const SCORE: &str = "the held-out sum of ((clamp(prediction) − target)/(upper − lower))², each \
                     row's term in [0, 1]: sensitivity 1";

/// The selection run on `set`, with every step's ε for the report.
pub fn tuned_regression<R: ReleaseRng>(
    tuner: &RegressionTuner<ErmParams>,
    set: &RegressionSet,
    rng: &mut R,
    plan: &Plan,
) -> Result<Outcome, Failure> {
    let data = RegressionData::from_set(set).map_err(|e| fail(format!("the rows: {e}")))?;
    let grid = plan.grid.as_deref().unwrap_or_default();
    let chosen = tuner.select(&data, rng)?;
    let (n, d) = (set.len(), set.features());
    let (training_rows, held_out_rows) = tuner.parts(n);
    let step = tuner.step_epsilon();
    let (mut facts, name, steps) = match tuner {
        RegressionTuner::Split(t) => (
            json!({
                "method": format!("split-and-select over regressors: the rows shuffled with \
                                   fresh randomness and cut into one part per candidate plus a \
                                   held-out part; the exponential mechanism picks a candidate \
                                   by {SCORE}"),
                "parts": t.parts(),
                "rows_per_candidate": training_rows,
                "selection_epsilon": tuner.selection_epsilon(),
                "privacy": "max(ε_candidates, ε_selection) by parallel composition (dp-tune's \
                            RegressionSplitAndSelect)",
            }),
            "split-and-select over regressors",
            json!([
                { "step": format!("train {} Huber regressors, each on its own part (parallel composition)", grid.len()),
                  "epsilon": step },
                { "step": "select (exponential mechanism on the held-out clamped squared error)",
                  "epsilon": tuner.selection_epsilon() },
            ]),
        ),
        RegressionTuner::Stopping(t) => (
            // The number of runs is not covered by the guarantee: never reported.
            json!({
                "method": format!("random stopping over regressors (Liu and Talwar 2019): runs \
                                   of a uniformly drawn candidate on the training part, each \
                                   scored by {SCORE}, plus discrete Laplace noise, stopping \
                                   after each run with probability γ; the best run is released"),
                "stop_probability": t.stop_probability(),
                "max_runs": t.max_runs(),
                "training_rows": training_rows,
                "score_epsilon": t.score_epsilon(),
                "base_epsilon": t.base_epsilon(),
                "noisy_held_out_score": chosen.noisy_score,
                "privacy": "3·ε_base (rounded up) and the cap's δ (dp-tune's \
                            RegressionRandomStopping, the classifiers' accounting); the number \
                            of runs is not released",
            }),
            "random stopping over regressors",
            json!([
                { "step": "each run: train one Huber regressor on the training part, and its noisy held-out score",
                  "epsilon": t.base_epsilon() },
                { "step": "the best of a geometric number of runs (Liu-Talwar: 3 × the run's ε; the cap adds δ)",
                  "epsilon": tuner.epsilon(), "delta": tuner.delta() },
            ]),
        ),
    };
    facts["held_out_rows"] = json!(held_out_rows);
    facts["candidate_epsilon"] = json!(step);
    facts["grid"] = json!(grid);
    facts["chosen_index"] = json!(chosen.index);
    facts["chosen_regularization"] = json!(grid[chosen.index]);
    let outlook = plan
        .recipe
        .plan_regression(training_rows, d)
        .ok()
        .and_then(|p| p.outlook(training_rows, d));
    Ok(Outcome {
        model: Released::Regression(chosen.model),
        mechanism: format!(
            "{}, Huber regression (threshold: half the target's public range); Λ chosen \
             privately by --tune",
            plan.recipe.mechanism.description()
        ),
        regularization_choice: format!(
            "chosen privately among --tune's {} values ({name}); the choice is part of the ε \
             spent",
            grid.len()
        ),
        epsilon_steps: steps,
        epsilon: tuner.epsilon(),
        delta: tuner.delta(),
        tuning: Some(facts),
        kernel: None,
        sgd: None,
        training_rows,
        outlook,
    })
}
