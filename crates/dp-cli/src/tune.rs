//! `dpml train --tune`: private selection of Λ among a grid through dp-tune, its ε (and δ)
//! known before the data are read, and what the selection releases for the report.

use dp_erm::{Examples, Trainer};
use dp_noise::ReleaseRng;
use dp_tune::{RandomStopping, SplitAndSelect};
use serde_json::{Value, json};

use crate::model_file::Model as Released;
use dp_fit::recipe::KERNEL_MECHANISM;

use crate::train::{Outcome, Plan, TuneMethod};
use crate::{Failure, fail};

/// A private selection, built (and its ε and δ known) before the data are read.
pub enum Tuner<T> {
    Split(SplitAndSelect<T>),
    Stopping(RandomStopping<T>),
}

/// Why a Rényi-accounted random stopping could not be built: a candidate the recipe
/// refused, or dp-tune's refusal.
enum Calibration {
    Candidates(Failure),
    Tune(dp_tune::TuneError),
}

impl From<dp_tune::TuneError> for Calibration {
    fn from(e: dp_tune::TuneError) -> Self {
        Calibration::Tune(e)
    }
}

/// What a tuned run released besides the model (all private outputs, or public sizes).
pub struct Tuned<M> {
    model: M,
    index: usize,
    facts: Value,
}

impl<T: Trainer> Tuner<T> {
    /// The selection `method` over `candidates(ε_candidate)` spending at most `epsilon` end
    /// to end: split-and-select at ε for both the candidates and the selection (and the
    /// candidates' δ); random stopping at the largest base ε whose 3ε_B, rounded up, is at
    /// most `epsilon` for pure-ε candidates (`delta` 0), and with `delta` > 0 accounted by
    /// Rényi DP at (`epsilon`, `delta`), its candidates at the largest step that allows
    /// (dp-tune's `RandomStopping::calibrated`).
    pub fn new(
        method: TuneMethod,
        epsilon: f64,
        delta: f64,
        stop_probability: f64,
        mut candidates: impl FnMut(f64) -> Result<Vec<T>, Failure>,
    ) -> Result<Self, Failure> {
        let refused = |e: dp_tune::TuneError| fail(format!("the tuning was refused: {e}"));
        match method {
            TuneMethod::Split => SplitAndSelect::new(candidates(epsilon)?, epsilon)
                .map(Tuner::Split)
                .map_err(refused),
            TuneMethod::Stopping if delta > 0.0 => {
                RandomStopping::calibrated(epsilon, delta, stop_probability, |b| {
                    candidates(b).map_err(Calibration::Candidates)
                })
                .map(Tuner::Stopping)
                .map_err(|e| match e {
                    Calibration::Candidates(failure) => failure,
                    Calibration::Tune(e) => refused(e),
                })
            }
            TuneMethod::Stopping => {
                let base = dp_tune::stopping_base_epsilon(epsilon).ok_or_else(|| {
                    fail(format!(
                        "--epsilon {epsilon:?}: no base ε gives random stopping an end-to-end ε \
                         of at most {epsilon:?}"
                    ))
                })?;
                RandomStopping::new(candidates(base)?, base, stop_probability)
                    .map(Tuner::Stopping)
                    .map_err(refused)
            }
        }
    }

    pub fn epsilon(&self) -> f64 {
        match self {
            Tuner::Split(t) => t.epsilon(),
            Tuner::Stopping(t) => t.epsilon(),
        }
    }

    pub fn delta(&self) -> f64 {
        match self {
            Tuner::Split(t) => t.delta(),
            Tuner::Stopping(t) => t.delta(),
        }
    }

    /// Rows each candidate trains on (a function of n: public).
    pub fn training_rows(&self, n: usize) -> usize {
        match self {
            Tuner::Split(t) => n / t.parts(),
            Tuner::Stopping(t) => n - t.held_out_rows(n),
        }
    }

    pub fn select<R: ReleaseRng>(
        &self,
        data: &Examples,
        rng: &mut R,
    ) -> Result<Tuned<T::Model>, Failure> {
        let refused = |e: dp_tune::TuneError| fail(format!("the tuning was refused: {e}"));
        match self {
            Tuner::Split(t) => {
                let s = t.select(data, rng).map_err(refused)?;
                let facts = json!({
                    "method": "split-and-select (Chaudhuri, Monteleoni and Sarwate 2011, \
                               Algorithm 4): the rows shuffled with fresh randomness and cut \
                               into one part per candidate plus a held-out part; the \
                               exponential mechanism picks a candidate by its held-out mistakes",
                    "parts": t.parts(),
                    "rows_per_candidate": data.len() / t.parts(),
                    "held_out_rows": s.validation_rows(),
                    "candidate_epsilon": t.training_epsilon(),
                    "selection_epsilon": t.selection_epsilon(),
                    "privacy": "max(ε_candidates, ε_selection) by parallel composition \
                                (dp-tune's SplitAndSelect)",
                });
                Ok(Tuned {
                    index: s.index(),
                    model: s.into_model(),
                    facts,
                })
            }
            Tuner::Stopping(t) => {
                let s = t.select(data, rng).map_err(refused)?;
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
                let facts = json!({
                    "method": "random stopping (Liu and Talwar 2019): runs of a uniformly \
                               drawn candidate on the training part, each scored by its \
                               held-out mistakes plus discrete Laplace noise, stopping after \
                               each run with probability γ; the best run is released",
                    "stop_probability": t.stop_probability(),
                    "max_runs": t.max_runs(),
                    "training_rows": data.len() - s.held_out_rows(),
                    "held_out_rows": s.held_out_rows(),
                    "noisy_held_out_mistakes": s.noisy_mistakes().to_string(),
                    "candidate_epsilon": t.training_epsilon(),
                    "score_epsilon": t.score_epsilon(),
                    "base_epsilon": t.base_epsilon(),
                    "privacy": privacy,
                });
                Ok(Tuned {
                    index: s.index(),
                    model: s.into_model(),
                    facts,
                })
            }
        }
    }
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
    let t = tuner.select(data, rng)?;
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
