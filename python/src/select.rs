//! Private model selection (`dpml.model_selection.PrivateSearch`): the candidates a Python
//! grid describes, handed to dp-tune's selections, so that the privacy argument is
//! dp-tune's (`SplitAndSelect`, `RandomStopping`) and nothing here re-derives it.
//!
//! The caller gives a total ε. Split-and-select is `max(ε_T, ε_S)`-DP, so every candidate
//! and the selection get the total. Random stopping is `3·max(ε_T, ε_S)`-DP (rounded up)
//! plus a δ from its cap, so every candidate and each score get the largest `b` whose
//! `3b`, rounded up as dp-tune rounds it, is at most the total; the selection's own
//! `epsilon()` is then checked against the total before anything is drawn.
//!
//! (ε, δ) candidates (the Gaussian mechanisms, `delta > 0`) are accepted by split-and-select,
//! whose δ is the largest candidate δ (dp-tune's `SplitAndSelect::delta`), and by random
//! stopping when they have a Rényi curve (Gaussian output perturbation; objective
//! perturbation has none and is refused): dp-tune's `RandomStopping::calibrated` then finds
//! the largest step ε whose Papernot–Steinke accounting meets the total ε at the largest
//! candidate δ, and every candidate is built at that step.

use dp_erm::{Examples, Trainer};
use dp_kernel::{FeatureMap, KernelParams};
use dp_noise::ReleaseRng;
use dp_tune::{RandomStopping, SplitAndSelect, TuneError};

use crate::error::CoreError;
use crate::fit::{
    LinearSpec, MapSpec, Mechanism, Randomness, binary_labels, check_classes, features, generator,
    kernel_plan, training_set,
};
use crate::models::Models;
use crate::rows::{RowTransform, Rows};
use dp_fit::candidate::Candidate;

/// How the candidates are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Method {
    /// CMS11 Algorithm 4: one part per candidate, the exponential mechanism on a held-out
    /// part. End-to-end ε: the total.
    Split,
    /// Liu–Talwar random stopping: every candidate on `(1 − h)·n` rows, noisy held-out
    /// scores, a geometric number of runs. End-to-end `(≤ total, δ)`: `3b` and the cap's δ
    /// for pure-ε candidates, Papernot–Steinke's accounting at the largest candidate δ for
    /// (ε, δ) ones.
    RandomStopping {
        /// γ, the probability of stopping after each run.
        stop_probability: f64,
        /// h, the held-out share.
        holdout_fraction: f64,
    },
}

/// The candidates, all of one estimator class.
#[derive(Clone, Debug)]
pub enum Candidates {
    /// Linear estimators; all share the row transform of the first (the rows are
    /// transformed once, before the selection splits them).
    Linear(Vec<LinearSpec>),
    /// Random-features estimators: each draws its own map (no data involved).
    Kernel(Vec<(LinearSpec, MapSpec)>),
}

impl Candidates {
    fn len(&self) -> usize {
        match self {
            Candidates::Linear(c) => c.len(),
            Candidates::Kernel(c) => c.len(),
        }
    }
}

/// The public facts of a selection: what it spends and how it splits the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchPlan {
    /// The end-to-end ε (dp-tune's `epsilon()`), at most the total asked for.
    pub epsilon: f64,
    /// The end-to-end δ (dp-tune's `delta()`: random stopping's from its cap;
    /// split-and-select's the largest candidate δ, 0 for pure-ε candidates).
    pub delta: f64,
    /// The ε each candidate trains at, and the ε of the selection (or of each score).
    pub step_epsilon: f64,
    /// Rows each candidate trains on (split: the smallest part).
    pub training_rows: usize,
    /// Rows of the held-out part.
    pub held_out_rows: usize,
    /// Random stopping's cap on runs.
    pub max_runs: Option<usize>,
    /// Random stopping's ε of each noisy score.
    pub score_epsilon: Option<f64>,
    /// Whether the guarantee is accounted by Rényi DP (random stopping among (ε, δ)
    /// candidates) rather than as `3b` and the cap's δ.
    pub renyi: bool,
    /// Λ of each candidate, in order.
    pub regularization: Vec<f64>,
}

/// What a selection released: the chosen candidate's index and model, and its noisy
/// held-out score (random stopping). Nothing else the selection saw.
pub struct Released {
    /// The chosen candidate's position in the grid.
    pub index: usize,
    /// Its model (one binary model).
    pub models: Models,
    /// Random stopping's released score: held-out mistakes plus discrete Laplace noise.
    pub noisy_mistakes: Option<i128>,
}

/// The step ε for a total ε (see the module's documentation).
pub fn step_epsilon(total: f64, method: Method) -> Result<f64, CoreError> {
    if !(total.is_finite() && total > 0.0 && total <= dp_erm::MAX_EPSILON) {
        return Err(CoreError::value(
            "epsilon",
            format!("= {total}; it must be finite, > 0 and at most 1000"),
        ));
    }
    Ok(match method {
        Method::Split => total,
        Method::RandomStopping { .. } => dp_tune::stopping_base_epsilon(total)
            .ok_or_else(|| CoreError::value("epsilon", format!("= {total}: no base ε fits")))?,
    })
}

/// The rows held out of `rows` at share `h`: dp-tune's `⌈h·n⌉`, at most n.
fn held_out(rows: usize, method: Method, candidates: usize) -> (usize, usize) {
    match method {
        Method::Split => {
            let parts = candidates + 1;
            // dp-tune's cut: part k is k·n/(m+1) .. (k+1)·n/(m+1); the last is held out.
            let last = (rows as u128 * candidates as u128 / parts as u128) as usize;
            (rows / parts, rows - last)
        }
        Method::RandomStopping {
            holdout_fraction, ..
        } => {
            let held = ((rows as f64 * holdout_fraction).ceil() as usize).min(rows);
            (rows - held, held)
        }
    }
}

/// One of dp-tune's selections over trainers `T`.
enum Selector<T> {
    Split(SplitAndSelect<T>),
    Stopping(RandomStopping<T>),
}

impl<T: Trainer> Selector<T> {
    /// Random stopping accounted by Rényi DP at a total (ε, δ), its candidates built by
    /// `build` at the largest step that total allows (dp-tune's `RandomStopping::calibrated`).
    fn calibrated(
        total: f64,
        delta: f64,
        stop_probability: f64,
        holdout_fraction: f64,
        build: impl FnMut(f64) -> Result<Vec<T>, CoreError>,
    ) -> Result<Self, CoreError> {
        let stopping = RandomStopping::calibrated(total, delta, stop_probability, build)?
            .with_holdout_fraction(holdout_fraction)
            .map_err(CoreError::Tune)?;
        Ok(Selector::Stopping(stopping))
    }

    /// The ε each candidate trains at.
    fn step_epsilon(&self) -> f64 {
        match self {
            Selector::Split(s) => s.training_epsilon(),
            Selector::Stopping(s) => s.training_epsilon(),
        }
    }

    fn new(candidates: Vec<T>, step: f64, method: Method) -> Result<Self, TuneError> {
        Ok(match method {
            Method::Split => Selector::Split(SplitAndSelect::new(candidates, step)?),
            Method::RandomStopping {
                stop_probability,
                holdout_fraction,
            } => Selector::Stopping(
                RandomStopping::new(candidates, step, stop_probability)?
                    .with_holdout_fraction(holdout_fraction)?,
            ),
        })
    }

    fn epsilon(&self) -> f64 {
        match self {
            Selector::Split(s) => s.epsilon(),
            Selector::Stopping(s) => s.epsilon(),
        }
    }

    fn delta(&self) -> f64 {
        match self {
            Selector::Split(s) => s.delta(),
            Selector::Stopping(s) => s.delta(),
        }
    }

    fn max_runs(&self) -> Option<usize> {
        match self {
            Selector::Split(_) => None,
            Selector::Stopping(s) => Some(s.max_runs()),
        }
    }

    /// Random stopping's score ε, and whether it is accounted by Rényi DP.
    fn stopping_facts(&self) -> (Option<f64>, bool) {
        match self {
            Selector::Split(_) => (None, false),
            Selector::Stopping(s) => (Some(s.score_epsilon()), s.accounted_by_renyi()),
        }
    }

    fn run(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<(usize, T::Model, Option<i128>), TuneError> {
        match self {
            Selector::Split(s) => {
                let chosen = s.select(data, rng)?;
                Ok((chosen.index(), chosen.into_model(), None))
            }
            Selector::Stopping(s) => {
                let stopped = s.select(data, rng)?;
                let score = stopped.noisy_mistakes();
                Ok((stopped.index(), stopped.into_model(), Some(score)))
            }
        }
    }
}

enum Prepared {
    Linear {
        selector: Selector<Candidate>,
        data: Examples,
        transform: RowTransform,
    },
    Kernel {
        selector: Selector<KernelParams>,
        data: Examples,
    },
}

/// A selection with its candidates built and frozen, its data in dp-tune's form and its
/// generator: nothing charged, no noise drawn on the data. [`PreparedSearch::plan`] says
/// what [`PreparedSearch::run`] will spend.
pub struct PreparedSearch {
    prepared: Prepared,
    plan: SearchPlan,
    rng: Box<dyn ReleaseRng + Send>,
}

/// One linear candidate and its Λ (dp-fit's `Candidate` of the spec's binary plan).
fn linear_candidate(
    spec: &LinearSpec,
    rows: usize,
    features: usize,
) -> Result<(Candidate, f64), CoreError> {
    let plan = spec.plan(rows, features, 2)?;
    Ok((Candidate::of_plan(&plan), plan.regularization))
}

/// Builds the selection of `candidates` on `rows` (two classes only: dp-tune compares
/// binary models' held-out mistakes) at a total ε. Every parameter refusal comes here,
/// before the caller charges anything.
///
/// # Privacy
/// For training sets of the same size that differ in one row (replace-one), the released
/// (index, model, noisy score) of [`PreparedSearch::run`] is `(plan.epsilon, plan.delta)`-DP
/// by dp-tune's theorems (`SplitAndSelect`: `max(ε_T, ε_S)` and the largest candidate δ;
/// `RandomStopping`: `3·ε_B` rounded up, plus its cap's δ), given that the candidates — built here from the grid, the
/// public n and the row transform, never from the rows' values — and the transform are
/// fixed before the rows are read. The row transform (÷ B, optional clipping, intercept) is
/// per row, so it preserves the neighbouring relation. Λ from `regularization = "auto"`
/// uses the public n of the rows each candidate trains on. Not covered: the time taken, the
/// number of runs, and a failure after the selection started (dp-tune's `# Privacy`).
pub fn prepare(
    rows: Rows<'_>,
    classes: &[usize],
    class_count: usize,
    candidates: &Candidates,
    total_epsilon: f64,
    method: Method,
    randomness: Randomness,
) -> Result<PreparedSearch, CoreError> {
    let rows = rows.checked()?;
    check_classes(classes, rows.len(), class_count)?;
    if class_count != 2 {
        return Err(CoreError::value(
            "classes",
            format!(
                "has {class_count} classes; PrivateSearch selects among binary models \
                 (dp-tune compares held-out mistakes of one model per candidate): pass two"
            ),
        ));
    }
    if candidates.len() == 0 {
        return Err(CoreError::value("param_grid", "describes no candidate"));
    }
    let step = step_epsilon(total_epsilon, method)?;
    let (training_rows, held_out_rows) = held_out(rows.len(), method, candidates.len());
    // Random stopping over (ε, δ) candidates: accounted by Rényi DP at the largest δ.
    let stopping_delta = match (method, candidates) {
        (Method::RandomStopping { .. }, Candidates::Linear(specs)) => specs
            .iter()
            .map(|s| s.mechanism.delta())
            .fold(0.0, f64::max),
        _ => 0.0,
    };
    let with_step = |spec: &LinearSpec, step: f64| -> Result<LinearSpec, CoreError> {
        let mechanism = match spec.mechanism {
            Mechanism::NonPrivate => {
                return Err(CoreError::value(
                    "mechanism",
                    "is not private: every candidate of a private search must be",
                ));
            }
            Mechanism::GaussianObjective { .. } if method != Method::Split => {
                return Err(CoreError::value(
                    "mechanism",
                    "= 'objective' with delta > 0: method='random-stopping' accounts (ε, δ) \
                     candidates by Rényi DP, and Gaussian objective perturbation has no Rényi \
                     bound; use mechanism='output' (Gaussian output perturbation) or pure-ε \
                     candidates, or method='split', which accepts any (ε, δ) candidate",
                ));
            }
            private => private.with_epsilon(step),
        };
        Ok(LinearSpec {
            mechanism,
            ..spec.clone()
        })
    };
    let labels = binary_labels(classes);
    let mut rng = generator(randomness)?;
    let (prepared, regularization, epsilon_delta) = match candidates {
        Candidates::Linear(specs) => {
            let transform = specs[0].transform.checked()?;
            if let Some(i) = specs.iter().position(|s| s.transform != transform) {
                return Err(CoreError::value(
                    "param_grid",
                    format!(
                        "candidate {i} scales the rows differently from candidate 0 \
                         (data_norm, clip_rows, fit_intercept, intercept_scaling): the rows \
                         are scaled once for every candidate, so these must not vary"
                    ),
                ));
            }
            let built = |step: f64| -> Result<(Vec<Candidate>, Vec<f64>), CoreError> {
                specs
                    .iter()
                    .map(|spec| {
                        linear_candidate(&with_step(spec, step)?, training_rows, rows.features())
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(|pairs| pairs.into_iter().unzip())
            };
            let selector = match method {
                Method::RandomStopping {
                    stop_probability,
                    holdout_fraction,
                } if stopping_delta > 0.0 => Selector::calibrated(
                    total_epsilon,
                    stopping_delta,
                    stop_probability,
                    holdout_fraction,
                    |b| built(b).map(|(params, _)| params),
                )?,
                _ => Selector::new(built(step)?.0, step, method).map_err(CoreError::Tune)?,
            };
            // Λ as the candidates were built (the rule's Λ depends on the step ε).
            let lambdas = built(selector.step_epsilon())?.1;
            let data = training_set(&rows, labels, &transform)?.to_examples();
            let spends = (selector.epsilon(), selector.delta(), selector.max_runs());
            (
                Prepared::Linear {
                    selector,
                    data,
                    transform,
                },
                lambdas,
                spends,
            )
        }
        Candidates::Kernel(specs) => {
            let mut trainers = Vec::with_capacity(specs.len());
            let mut lambdas = Vec::with_capacity(specs.len());
            for (spec, map) in specs {
                if spec.transform.intercept.is_some() || spec.feature_groups.is_some() {
                    return Err(CoreError::value(
                        "RandomFeaturesSVC",
                        "takes no intercept or feature groups (its features are random cosines)",
                    ));
                }
                let (_, params) =
                    kernel_plan(&with_step(spec, step)?, training_rows, map.components, 2)?;
                lambdas.push(params.regularization());
                // The map is public randomness, drawn before any row is read.
                let drawn = FeatureMap::draw(
                    map.kernel,
                    map.sampling,
                    rows.features(),
                    map.components,
                    &mut *rng,
                )?;
                trainers.push(KernelParams::new(drawn, params));
            }
            let selector = Selector::new(trainers, step, method).map_err(CoreError::Tune)?;
            let data = Examples::new(features(&rows)?, labels)?;
            let spends = (selector.epsilon(), selector.delta(), selector.max_runs());
            (Prepared::Kernel { selector, data }, lambdas, spends)
        }
    };
    let (epsilon, delta, max_runs) = epsilon_delta;
    if epsilon > total_epsilon {
        // Defensive: step_epsilon mirrors dp-tune's rounding; never spend above the total.
        return Err(CoreError::value(
            "epsilon",
            format!("= {total_epsilon}: the selection would spend {epsilon}, above it"),
        ));
    }
    let (step, (score_epsilon, renyi)) = match &prepared {
        Prepared::Linear { selector, .. } => (selector.step_epsilon(), selector.stopping_facts()),
        Prepared::Kernel { selector, .. } => (selector.step_epsilon(), selector.stopping_facts()),
    };
    Ok(PreparedSearch {
        prepared,
        plan: SearchPlan {
            epsilon,
            delta,
            step_epsilon: step,
            training_rows,
            held_out_rows,
            max_runs,
            score_epsilon,
            renyi,
            regularization,
        },
        rng,
    })
}

impl PreparedSearch {
    /// What the selection spends and how it splits the rows (public: from n, the grid and
    /// the total ε only).
    pub fn plan(&self) -> &SearchPlan {
        &self.plan
    }

    /// Runs the selection (dp-tune's `select`: its size and input refusals come first,
    /// before anything is drawn on the data).
    pub fn run(mut self) -> Result<Released, CoreError> {
        let prepared = &self.prepared;
        crate::fit::drawing(&mut *self.rng, |rng| match prepared {
            Prepared::Linear {
                selector,
                data,
                transform,
            } => {
                let (index, model, noisy) = selector.run(data, rng).map_err(CoreError::Tune)?;
                Ok(Released {
                    index,
                    models: Models::linear(vec![model], *transform)?,
                    noisy_mistakes: noisy,
                })
            }
            Prepared::Kernel { selector, data } => {
                let (index, model, noisy) = selector.run(data, rng).map_err(CoreError::Tune)?;
                Ok(Released {
                    index,
                    models: Models::kernel(vec![model]),
                    noisy_mistakes: noisy,
                })
            }
        })
    }
}
