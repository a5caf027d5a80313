//! `dpml train --tune`: private selection of Λ among a grid through dp-tune, its ε (and δ)
//! known before the data are read, and what the selection releases for the report.

use dp_erm::{Examples, Trainer};
use dp_fit::tuning::{TuneMethod as Method, Tuner};
use dp_noise::ReleaseRng;
use serde_json::{Value, json};

use crate::model_file::Model as Released;
use dp_fit::recipe::KERNEL_MECHANISM;

use crate::Failure;
use crate::train::{Outcome, Plan, TuneMethod};

/// What a tuned run released besides the model (all private outputs, or public sizes).
pub struct Tuned<M> {
    model: M,
    index: usize,
    facts: Value,
}

/// dp-fit's tuner for `--tune-method` over `candidates(step)` at a total `epsilon` and the
/// candidates' δ (dp-fit's `tuning` says each method's step ε), built before the data are
/// read; random stopping holds out dp-tune's default share.
pub fn tuner<T: Trainer>(
    method: TuneMethod,
    epsilon: f64,
    stop_probability: f64,
    candidates: impl FnMut(f64) -> Result<Vec<T>, Failure>,
) -> Result<Tuner<T>, Failure> {
    Tuner::new(dp_fit_method(method, stop_probability), epsilon, candidates)
}

/// dp-fit's method for `--tune-method` (classifiers and regressors alike): random stopping
/// holds out dp-tune's default share.
pub(crate) fn dp_fit_method(method: TuneMethod, stop_probability: f64) -> Method {
    match method {
        TuneMethod::Split => Method::Split,
        TuneMethod::Stopping => Method::Stopping {
            stop_probability,
            holdout_fraction: dp_tune::DEFAULT_HOLDOUT_FRACTION,
        },
    }
}

/// The selection run on `data`, and the facts the report gives about it.
fn select<T: Trainer, R: ReleaseRng>(
    tuner: &Tuner<T>,
    data: &Examples,
    rng: &mut R,
) -> Result<Tuned<T::Model>, Failure> {
    let released = tuner.select(data, rng)?;
    let facts = match tuner {
        Tuner::Split(t) => json!({
            "method": "split-and-select (Chaudhuri, Monteleoni and Sarwate 2011, \
                       Algorithm 4): the rows shuffled with fresh randomness and cut \
                       into one part per candidate plus a held-out part; the \
                       exponential mechanism picks a candidate by its held-out mistakes",
            "parts": t.parts(),
            "rows_per_candidate": data.len() / t.parts(),
            "held_out_rows": released.held_out_rows,
            "candidate_epsilon": t.training_epsilon(),
            "selection_epsilon": t.selection_epsilon(),
            "privacy": "max(ε_candidates, ε_selection) by parallel composition \
                        (dp-tune's SplitAndSelect)",
        }),
        Tuner::Stopping(t) => {
            // The number of runs is not covered by the guarantee: never reported.
            let privacy = if t.accounted_by_renyi() {
                "Rényi DP (Papernot and Steinke 2022, Theorem 2, a geometric number of \
                 runs): one run's curve is the largest of the candidates' and the score's, \
                 the best-of-runs curve is converted to ε at 99% of δ, and the cap on \
                 runs adds at most 0.5% of δ (dp-tune's RandomStopping::approximate); the \
                 number of runs is not released"
            } else {
                "3·ε_base (rounded up) and the cap's δ (dp-tune's RandomStopping); the \
                 number of runs is not released"
            };
            json!({
                "method": "random stopping (Liu and Talwar 2019): runs of a uniformly \
                           drawn candidate on the training part, each scored by its \
                           held-out mistakes plus discrete Laplace noise, stopping after \
                           each run with probability γ; the best run is released",
                "stop_probability": t.stop_probability(),
                "max_runs": t.max_runs(),
                "training_rows": data.len() - released.held_out_rows,
                "held_out_rows": released.held_out_rows,
                "noisy_held_out_mistakes": released.noisy_mistakes.map(|m| m.to_string()),
                "candidate_epsilon": t.training_epsilon(),
                "score_epsilon": t.score_epsilon(),
                "base_epsilon": t.base_epsilon(),
                "privacy": privacy,
            })
        }
    };
    Ok(Tuned {
        index: released.index,
        model: released.model,
        facts,
    })
}

/// The selection run on `data`, with every step's ε for the report.
pub fn tuned<T: Trainer, R: ReleaseRng>(
    tuner: &Tuner<T>,
    data: &Examples,
    rng: &mut R,
    plan: &Plan,
    wrap: impl Fn(T::Model) -> Released,
) -> Result<Outcome, Failure> {
    let grid = plan.grid.as_deref().unwrap_or_default();
    let t = select(tuner, data, rng)?;
    let mut facts = t.facts;
    facts["grid"] = json!(grid);
    facts["chosen_index"] = json!(t.index);
    facts["chosen_regularization"] = json!(grid[t.index]);
    let (steps, delta) = match tuner {
        Tuner::Split(s) => (
            json!([
                { "step": format!("train {} candidates, each on its own part (parallel composition)", grid.len()),
                  "epsilon": s.training_epsilon(), "delta": s.delta() },
                { "step": "select (exponential mechanism on held-out mistakes)",
                  "epsilon": s.selection_epsilon() },
            ]),
            s.delta(),
        ),
        Tuner::Stopping(s) => (
            json!([
                { "step": "each run: train a candidate on the training part", "epsilon": s.training_epsilon() },
                { "step": "each run: noisy held-out mistakes (discrete Laplace)", "epsilon": s.score_epsilon() },
                { "step": if s.accounted_by_renyi() {
                      "random stopping: the best of a geometric number of runs (Rényi DP, Papernot-Steinke)"
                  } else {
                      "random stopping: the best of a geometric number of runs (3·ε_base)"
                  },
                  "epsilon": s.epsilon(), "delta": s.delta() },
            ]),
            s.delta(),
        ),
    };
    let mechanism = match plan.map {
        Some(_) => KERNEL_MECHANISM,
        None => plan.recipe.mechanism.description(),
    };
    Ok(Outcome {
        model: wrap(t.model),
        mechanism: format!("{mechanism}; Λ chosen privately by --tune"),
        regularization_choice: format!(
            "chosen privately among --tune's {} values ({}); the choice is part of the ε spent",
            grid.len(),
            match tuner {
                Tuner::Split(_) => "split-and-select",
                Tuner::Stopping(_) => "random stopping",
            }
        ),
        epsilon_steps: steps,
        epsilon: tuner.epsilon(),
        delta,
        tuning: Some(facts),
        kernel: None,
        training_rows: tuner.training_rows(data.len()),
        outlook: None,
        sgd: None,
    })
}
