//! Private model selection (`dpml.model_selection.PrivateSearch`): the candidates a Python
//! grid describes, handed to dp-fit's tuner over dp-tune's selections — the command line's
//! `--tune` goes through the same tuner — so that the privacy argument is dp-tune's
//! (`SplitAndSelect`, `RandomStopping`) and nothing here re-derives it.
//!
//! The caller gives a total ε (dp-fit's `tuning` says what step each candidate gets). With
//! (ε, δ) candidates (the Gaussian mechanisms, `delta > 0`) split-and-select's δ is the
//! largest candidate δ, and random stopping is accounted by Rényi DP at that δ (Gaussian
//! output perturbation only: objective perturbation has no Rényi curve and is refused here,
//! by name). The selection's own `epsilon()` is checked against the total before anything
//! is drawn.

use dp_erm::Examples;
use dp_fit::tuning::Tuner;
use dp_kernel::KernelParams;
use dp_noise::ReleaseRng;

use crate::error::CoreError;
use crate::fit::{
    LinearSpec, MapSpec, Mechanism, Randomness, binary_labels, check_classes, features, generator,
    kernel_plan, training_set,
};
use crate::models::Models;
use crate::rows::{RowTransform, Rows};
use dp_fit::candidate::Candidate;

/// How the candidates are compared (dp-fit's).
pub use dp_fit::tuning::TuneMethod as Method;

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
        Method::Stopping { .. } => dp_tune::stopping_base_epsilon(total)
            .ok_or_else(|| CoreError::value("epsilon", format!("= {total}: no base ε fits")))?,
    })
}

enum Prepared {
    Linear {
        selector: Tuner<Candidate>,
        data: Examples,
        transform: RowTransform,
    },
    Kernel {
        selector: Tuner<KernelParams>,
        data: Examples,
    },
}

/// What a tuner spends and how: (ε, δ, cap on runs, step ε, score ε, Rényi-accounted).
fn facts<T: dp_erm::Trainer>(t: &Tuner<T>) -> (f64, f64, Option<usize>, f64, Option<f64>, bool) {
    let score = matches!(t, Tuner::Stopping(_)).then(|| t.selection_epsilon());
    (
        t.epsilon(),
        t.delta(),
        t.max_runs(),
        t.step_epsilon(),
        score,
        t.accounted_by_renyi(),
    )
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
/// `RandomStopping`: `3·ε_B` rounded up plus its cap's δ, or Papernot–Steinke's Rényi bound
/// with (ε, δ) candidates), given that the candidates — built here from the grid, the
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
    step_epsilon(total_epsilon, method)?;
    let (training_rows, held_out_rows) = method.parts(rows.len(), candidates.len());
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
    let (prepared, regularization, spends) = match candidates {
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
            let selector = Tuner::new(method, total_epsilon, |b| {
                built(b).map(|(params, _)| params)
            })?;
            // Λ as the candidates were built (the rule's Λ depends on the step ε).
            let lambdas = built(selector.step_epsilon())?.1;
            let data = training_set(&rows, labels, &transform)?.to_examples();
            let spends = facts(&selector);
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
            if specs.iter().any(|(spec, _)| {
                spec.transform.intercept.is_some() || spec.feature_groups.is_some()
            }) {
                return Err(CoreError::value(
                    "RandomFeaturesSVC",
                    "takes no intercept or feature groups (its features are random cosines)",
                ));
            }
            // Pure ε only: the tuner builds the candidates once, at its step.
            let mut lambdas = Vec::with_capacity(specs.len());
            let selector = Tuner::new(method, total_epsilon, |step| {
                lambdas.clear();
                let mut trainers = Vec::with_capacity(specs.len());
                for (spec, map) in specs {
                    let (_, params) =
                        kernel_plan(&with_step(spec, step)?, training_rows, map.components, 2)?;
                    lambdas.push(params.regularization());
                    // The map is public randomness, drawn before any row is read.
                    trainers.push(KernelParams::new(
                        map.draw(rows.features(), &mut *rng)?,
                        params,
                    ));
                }
                Ok::<_, CoreError>(trainers)
            })?;
            let data = Examples::new(features(&rows)?, labels)?;
            let spends = facts(&selector);
            (Prepared::Kernel { selector, data }, lambdas, spends)
        }
    };
    let (epsilon, delta, max_runs, step, score_epsilon, renyi) = spends;
    if epsilon > total_epsilon {
        // Defensive: step_epsilon mirrors dp-tune's rounding; never spend above the total.
        return Err(CoreError::value(
            "epsilon",
            format!("= {total_epsilon}: the selection would spend {epsilon}, above it"),
        ));
    }
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
                let tuned = selector.select(data, rng)?;
                Ok(Released {
                    index: tuned.index,
                    models: Models::linear(vec![tuned.model], *transform)?,
                    noisy_mistakes: tuned.noisy_mistakes,
                })
            }
            Prepared::Kernel { selector, data } => {
                let tuned = selector.select(data, rng)?;
                Ok(Released {
                    index: tuned.index,
                    models: Models::kernel(vec![tuned.model]),
                    noisy_mistakes: tuned.noisy_mistakes,
                })
            }
        })
    }
}
