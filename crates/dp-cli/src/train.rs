//! `dpml train`: a schema-encoded file → an ε-DP model, its report, and a ledger entry.

use std::path::{Path, PathBuf};

use dp_erm::{ErmParams, Examples, Loss, ObjectiveCalibration, RegularizationRule, Trainer};
use dp_kernel::{FeatureMap, Kernel, KernelParams, Sampling};
use dp_noise::DpRng;
use dp_schema::{Encoder, Schema};
use dp_tune::{RandomStopping, SplitAndSelect};
use serde_json::{Value, json};

use crate::ledger::{Ledger, LedgerLock, Spend};
use crate::model_file::Model as Released;
use crate::output::{check_free, sha256_hex, write_all_or_none};
use crate::{Failure, fail, grid, progress};

/// The model to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// Huber SVM of width 1 (the library's rule's loss).
    Huber,
    /// Logistic regression (predict --proba gives probabilities).
    Logistic,
    /// Kernel SVM (Huber loss) on random Fourier features of the encoded rows (dp-kernel).
    Kernel,
}

/// The shape of objective perturbation's noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Noise {
    /// Shaped to the schema's one-hot groups (same ε, less noise per level).
    Grouped,
    /// Euclidean (the papers' mechanism).
    Euclidean,
}

/// How `--tune` selects among its candidates (dp-tune).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TuneMethod {
    /// Split-and-select (CMS11 Alg. 4): a part of the data per candidate; pure ε.
    Split,
    /// Random stopping (Liu-Talwar 2019): 90% of the rows per run; ε plus a δ ≤ 1e-6.
    Stopping,
}

/// The kernel of `--model kernel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KernelKind {
    /// exp(−γ‖x − x'‖²).
    Gaussian,
    /// exp(−γ‖x − x'‖₁).
    Laplacian,
}

/// How `--model kernel` draws its frequencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SamplingKind {
    /// Independent frequencies (Rahimi-Recht).
    Standard,
    /// Orthogonal random features (Yu et al. 2016; Gaussian kernel only).
    Orthogonal,
}

/// `--model kernel`'s public defaults: encoded rows lie in the unit ball, so squared
/// distances are in [0, 4] and γ = 1 keeps kernel values in [e⁻⁴, 1]; D = 200 is what the
/// library's kernel experiments chose by their sweep.
pub const DEFAULT_GAMMA: f64 = 1.0;
/// See [`DEFAULT_GAMMA`].
pub const DEFAULT_RANDOM_FEATURES: usize = 200;
/// Random stopping's default γ: about 10 trainings.
pub const DEFAULT_STOP_PROBABILITY: f64 = 0.1;

/// The kernel options as given (`None`: not given).
pub struct KernelRequest {
    pub kind: Option<KernelKind>,
    pub gamma: Option<f64>,
    pub features: Option<usize>,
    pub sampling: Option<SamplingKind>,
}

/// What `dpml train` was asked.
pub struct TrainRequest {
    pub data: PathBuf,
    pub schema: PathBuf,
    pub epsilon: f64,
    pub model: Model,
    pub regularization: Option<f64>,
    pub noise: Option<Noise>,
    pub tune: Option<String>,
    pub tune_method: TuneMethod,
    pub stop_probability: Option<f64>,
    pub kernel: KernelRequest,
    pub ledger: Option<PathBuf>,
    pub out: PathBuf,
    pub force: bool,
}

/// The model's `feature_map` entry: the schema's hash, so predictions refuse another schema.
pub fn schema_tag(hash: &str) -> String {
    format!("dp-schema:sha256:{hash}")
}

/// `model.dpm` → `model.report.json`, `model.report.md`.
pub fn report_paths(out: &Path) -> (PathBuf, PathBuf) {
    (
        out.with_extension("report.json"),
        out.with_extension("report.md"),
    )
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The request's parameters, checked: everything decided before the data are read.
struct Plan {
    noise: Noise,
    loss: Loss,
    grid: Option<Vec<f64>>,
    map: Option<FeatureMap>,
}

/// Refuses every parameter that can be refused without the data, naming it.
fn check_parameters(req: &TrainRequest) -> Result<(Noise, Option<Vec<f64>>), Failure> {
    if !(req.epsilon.is_finite() && req.epsilon > 0.0 && req.epsilon <= dp_erm::MAX_EPSILON) {
        return Err(fail(format!(
            "--epsilon {}: must be a finite ε in (0, {}]",
            req.epsilon,
            dp_erm::MAX_EPSILON
        )));
    }
    if let Some(lambda) = req.regularization
        && !(lambda.is_finite()
            && (dp_erm::MIN_REGULARIZATION..=dp_erm::MAX_REGULARIZATION).contains(&lambda))
    {
        return Err(fail(format!(
            "--regularization {lambda}: must be \"auto\" or a Λ in [{}, {}]",
            dp_erm::MIN_REGULARIZATION,
            dp_erm::MAX_REGULARIZATION
        )));
    }
    let grid = match &req.tune {
        None => None,
        Some(text) => {
            if let Some(lambda) = req.regularization {
                return Err(fail(format!(
                    "--tune {text:?} with --regularization {lambda}: --tune chooses Λ; give one \
                     or the other"
                )));
            }
            let values = grid::parse(text, dp_erm::MIN_REGULARIZATION, dp_erm::MAX_REGULARIZATION)
                .map_err(|why| fail(format!("--tune {text:?}: {why}")))?;
            Some(values)
        }
    };
    if let Some(gamma) = req.stop_probability
        && req.tune_method != TuneMethod::Stopping
    {
        return Err(fail(format!(
            "--tune-stop-probability {gamma}: applies to --tune-method stopping only"
        )));
    }
    let k = &req.kernel;
    if req.model != Model::Kernel {
        let given = [
            ("--kernel", k.kind.is_some()),
            ("--gamma", k.gamma.is_some()),
            ("--random-features", k.features.is_some()),
            ("--sampling", k.sampling.is_some()),
        ];
        if let Some((option, _)) = given.iter().find(|(_, given)| *given) {
            return Err(fail(format!("{option}: applies to --model kernel only")));
        }
    }
    let noise = match (req.model, req.noise) {
        (Model::Kernel, Some(Noise::Grouped)) => {
            return Err(fail(
                "--noise grouped with --model kernel: random features are dense, their group \
                 norm is not bounded by 1; kernels use Euclidean noise (leave --noise out)",
            ));
        }
        (Model::Kernel, _) => Noise::Euclidean,
        (_, noise) => noise.unwrap_or(Noise::Grouped),
    };
    Ok((noise, grid))
}

/// Draws `--model kernel`'s map for `d` encoded features (public randomness, before the
/// data are read; refused here if its sizes are).
fn draw_map(k: &KernelRequest, d: usize, rng: &mut DpRng) -> Result<FeatureMap, Failure> {
    let gamma = k.gamma.unwrap_or(DEFAULT_GAMMA);
    let kind = k.kind.unwrap_or(KernelKind::Gaussian);
    let kernel = match kind {
        KernelKind::Gaussian => Kernel::gaussian(gamma),
        KernelKind::Laplacian => Kernel::laplacian(gamma),
    }
    .map_err(|e| fail(format!("--gamma {gamma}: {e}")))?;
    let sampling = match (k.sampling, kind) {
        (Some(SamplingKind::Standard), _) | (None, KernelKind::Laplacian) => Sampling::Standard,
        (Some(SamplingKind::Orthogonal), _) | (None, KernelKind::Gaussian) => Sampling::Orthogonal,
    };
    let features = k.features.unwrap_or(DEFAULT_RANDOM_FEATURES);
    FeatureMap::draw(kernel, sampling, d, features, rng)
        .map_err(|e| fail(format!("the kernel's options were refused (--random-features {features}, --sampling, --kernel): {e}")))
}

/// The loss: the rule's Huber width where its loss is Huber, else the width of 1 the rules
/// were fitted with; or logistic.
fn loss_of(model: Model, noise: Noise) -> Result<Loss, Failure> {
    let rule = rule_of(noise);
    match model {
        Model::Logistic => Ok(Loss::Logistic),
        Model::Huber | Model::Kernel => match rule.loss {
            huber @ Loss::Huber { .. } => Ok(huber),
            _ => Loss::huber(1.0),
        }
        .map_err(|e| fail(format!("the loss was refused: {e}"))),
    }
}

fn rule_of(noise: Noise) -> RegularizationRule {
    match noise {
        Noise::Grouped => RegularizationRule::GROUPED,
        Noise::Euclidean => RegularizationRule::DEFAULT,
    }
}

/// Objective perturbation with the cliff-free calibration, for the linear models.
fn linear_params(
    plan: &Plan,
    lambda: f64,
    epsilon: f64,
    encoder: &Encoder,
    tag: &str,
) -> ErmParams {
    let p = ErmParams::objective_perturbation(plan.loss, lambda, epsilon)
        .objective_calibration(ObjectiveCalibration::CliffFree);
    match plan.noise {
        Noise::Grouped => p.group_noise(encoder.groups().clone()),
        Noise::Euclidean => p,
    }
    .feature_map(tag)
}

fn kernel_params(map: &FeatureMap, loss: Loss, lambda: f64, epsilon: f64) -> KernelParams {
    KernelParams::new(
        map.clone(),
        ErmParams::objective_perturbation(loss, lambda, epsilon)
            .objective_calibration(ObjectiveCalibration::CliffFree),
    )
}

/// A private selection, built (and its ε and δ known) before the data are read.
enum Tuner<T> {
    Split(SplitAndSelect<T>),
    Stopping(RandomStopping<T>),
}

/// What a tuned run released besides the model (all private outputs, or public sizes).
struct Tuned<M> {
    model: M,
    index: usize,
    facts: Value,
}

impl<T: Trainer> Tuner<T> {
    /// The selection `method` over `candidates(ε_candidate)` spending at most `epsilon` end
    /// to end: split-and-select at ε for both the candidates and the selection; random
    /// stopping at the largest base ε whose 3ε_B, rounded up, is at most `epsilon`.
    fn new(
        method: TuneMethod,
        epsilon: f64,
        stop_probability: f64,
        candidates: impl Fn(f64) -> Vec<T>,
    ) -> Result<Self, Failure> {
        let refused = |e: dp_tune::TuneError| fail(format!("the tuning was refused: {e}"));
        match method {
            TuneMethod::Split => SplitAndSelect::new(candidates(epsilon), epsilon)
                .map(Tuner::Split)
                .map_err(refused),
            TuneMethod::Stopping => {
                let mut base = epsilon / 3.0;
                // 3·(ε/3) rounded up is at most a few ulps above ε: a few steps down suffice.
                for _ in 0..16 {
                    let t = RandomStopping::new(candidates(base), base, stop_probability)
                        .map_err(refused)?;
                    if t.epsilon() <= epsilon {
                        return Ok(Tuner::Stopping(t));
                    }
                    base = base.next_down();
                }
                Err(fail(format!(
                    "--epsilon {epsilon}: no base ε gives random stopping an end-to-end ε of \
                     at most {epsilon}"
                )))
            }
        }
    }

    fn epsilon(&self) -> f64 {
        match self {
            Tuner::Split(t) => t.epsilon(),
            Tuner::Stopping(t) => t.epsilon(),
        }
    }

    fn delta(&self) -> f64 {
        match self {
            Tuner::Split(_) => 0.0,
            Tuner::Stopping(t) => t.delta(),
        }
    }

    /// Rows each candidate trains on (a function of n: public).
    fn training_rows(&self, n: usize) -> usize {
        match self {
            Tuner::Split(t) => n / t.parts(),
            Tuner::Stopping(t) => n - t.held_out_rows(n),
        }
    }

    fn select(&self, data: &Examples, rng: &mut DpRng) -> Result<Tuned<T::Model>, Failure> {
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
                    "base_epsilon": t.base_epsilon(),
                    "privacy": "3·ε_base (rounded up) and the cap's δ (dp-tune's \
                                RandomStopping); the number of runs is not released",
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

/// What the run released and how, for the report.
struct Outcome {
    model: Released,
    mechanism: String,
    regularization_choice: String,
    epsilon_steps: Value,
    epsilon: f64,
    delta: f64,
    tuning: Option<Value>,
    kernel: Option<Value>,
    /// Rows each released model was trained on (for the outlook).
    training_rows: usize,
}

pub fn run(req: TrainRequest) -> Result<(), Failure> {
    // Everything that can be refused without the data is refused first, in this order:
    // parameters, outputs, schema, the kernel's map and the tuning, ledger.
    let (noise, grid) = check_parameters(&req)?;
    let stop_probability = req.stop_probability.unwrap_or(DEFAULT_STOP_PROBABILITY);
    let (report_json, report_md) = report_paths(&req.out);
    for path in [&req.out, &report_json, &report_md] {
        check_free(path, req.force)?;
    }
    let schema = Schema::load(&req.schema).map_err(|e| fail(e.to_string()))?;
    let hash = schema.hash();
    let tag = schema_tag(&hash);
    let encoder = Encoder::new(&schema);
    let mut rng =
        DpRng::from_os_entropy().map_err(|e| fail(format!("no secure randomness: {e}")))?;
    let map = match req.model {
        Model::Kernel => Some(draw_map(&req.kernel, encoder.features(), &mut rng)?),
        _ => None,
    };
    let plan = Plan {
        noise,
        loss: loss_of(req.model, noise)?,
        grid,
        map,
    };
    let linear_tuner = match (&plan.grid, &plan.map) {
        (Some(grid), None) => Some(Tuner::new(
            req.tune_method,
            req.epsilon,
            stop_probability,
            |e| {
                grid.iter()
                    .map(|&l| linear_params(&plan, l, e, &encoder, &tag))
                    .collect()
            },
        )?),
        _ => None,
    };
    let kernel_tuner = match (&plan.grid, &plan.map) {
        (Some(grid), Some(map)) => Some(Tuner::new(
            req.tune_method,
            req.epsilon,
            stop_probability,
            |e| {
                grid.iter()
                    .map(|&l| kernel_params(map, plan.loss, l, e))
                    .collect()
            },
        )?),
        _ => None,
    };
    let (epsilon, delta) = match (&linear_tuner, &kernel_tuner) {
        (Some(t), _) => (t.epsilon(), t.delta()),
        (_, Some(t)) => (t.epsilon(), t.delta()),
        _ => (req.epsilon, 0.0),
    };
    let ledger = match &req.ledger {
        None => None,
        Some(path) => {
            let lock = LedgerLock::take(path)?;
            let ledger = Ledger::load(path)?;
            ledger.check_spend(path, epsilon, delta)?;
            Some((path, lock, ledger))
        }
    };

    let file = req.data.display().to_string();
    let bar = progress::reading(&file);
    let started = std::time::Instant::now();
    let needs_examples = plan.grid.is_some() || plan.map.is_some();
    let data = if needs_examples {
        Data::Examples(
            dp_schema::read_examples(&req.data, &schema, &encoder, &mut progress::updater(&bar))
                .map_err(|e| fail(e.to_string()))?,
        )
    } else {
        Data::Training(
            dp_schema::read_training_set(
                &req.data,
                &schema,
                &encoder,
                &mut progress::updater(&bar),
            )
            .map_err(|e| fail(e.to_string()))?,
        )
    };
    bar.finish_and_clear();
    report_throughput(&req.data, started.elapsed());
    // Public under the replace-one relation every guarantee here uses (neighbouring
    // datasets have the same size); the report says so.
    let (n, d) = data.shape();

    let spinner = progress::spinner("fitting (objective perturbation)");
    let outcome = match (data, linear_tuner, kernel_tuner, &plan.map) {
        (Data::Examples(x), Some(t), _, _) => tuned(&t, &x, &mut rng, &plan, Released::Linear)?,
        (Data::Examples(x), _, Some(t), Some(map)) => {
            let mut o = tuned(&t, &x, &mut rng, &plan, Released::Kernel)?;
            o.kernel = Some(kernel_facts(map));
            o
        }
        (Data::Examples(x), None, None, Some(map)) => {
            let lambda = match req.regularization {
                Some(l) => l,
                None => RegularizationRule::DEFAULT
                    .regularization(n, map.output_features(), req.epsilon)
                    .map_err(|e| fail(format!("the parameters were refused: {e}")))?,
            };
            let fit = kernel_params(map, plan.loss, lambda, req.epsilon)
                .fit(&x, &mut rng)
                .map_err(|e| fail(format!("the fit was refused: {e}")))?;
            Outcome {
                model: Released::Kernel(fit.into_model()),
                mechanism: KERNEL_MECHANISM.into(),
                regularization_choice: choice(
                    req.regularization,
                    "RegularizationRule::DEFAULT at d = D (the random features)",
                ),
                epsilon_steps: json!([{ "step": "train (objective perturbation on random features)", "epsilon": req.epsilon }]),
                epsilon: req.epsilon,
                delta: 0.0,
                tuning: None,
                kernel: Some(kernel_facts(map)),
                training_rows: n,
            }
        }
        (Data::Training(t), _, _, _) => {
            let params = match (req.model, req.regularization) {
                (Model::Huber, None) if noise == Noise::Grouped => {
                    ErmParams::recommended_grouped(n, d, req.epsilon, encoder.groups().clone())
                        .map(|p| p.feature_map(&tag))
                }
                (Model::Huber, None) => {
                    ErmParams::recommended(n, d, req.epsilon).map(|p| p.feature_map(&tag))
                }
                (_, lambda) => match lambda {
                    Some(l) => Ok(l),
                    None => rule_of(noise).regularization(n, d, req.epsilon),
                }
                .map(|l| linear_params(&plan, l, req.epsilon, &encoder, &tag)),
            }
            .map_err(|e| fail(format!("the parameters were refused: {e}")))?;
            let fit = params
                .fit(&t, &mut rng)
                .map_err(|e| fail(format!("the fit was refused: {e}")))?;
            Outcome {
                model: Released::Linear(fit.into_model()),
                mechanism: LINEAR_MECHANISM.into(),
                regularization_choice: choice(
                    req.regularization,
                    if noise == Noise::Grouped {
                        "RegularizationRule::GROUPED"
                    } else {
                        "RegularizationRule::DEFAULT"
                    },
                ),
                epsilon_steps: json!([{ "step": "train (objective perturbation)", "epsilon": req.epsilon }]),
                epsilon: req.epsilon,
                delta: 0.0,
                tuning: None,
                kernel: None,
                training_rows: n,
            }
        }
        _ => unreachable!("tuning and kernels read examples"),
    };
    spinner.finish_and_clear();
    let bytes = outcome.model.to_bytes()?;

    // The spend is recorded before the model is written: a crash in between over-counts,
    // never under-counts.
    let ledger_state = match ledger {
        None => None,
        Some((path, lock, mut ledger)) => {
            ledger.spends.push(Spend {
                epsilon: outcome.epsilon,
                delta: outcome.delta,
                command: "train".into(),
                model: req.out.display().to_string(),
                schema_sha256: hash.clone(),
                time_unix: unix_time(),
            });
            ledger.store(path)?;
            drop(lock);
            Some((path.clone(), ledger))
        }
    };
    let report = report(
        &req,
        &outcome,
        &bytes,
        &hash,
        (n, d),
        &encoder,
        ledger_state.as_ref(),
    );
    let markdown = markdown(&report);
    write_all_or_none(
        vec![
            (req.out.clone(), bytes),
            (
                report_json.clone(),
                (serde_json::to_string_pretty(&report).expect("json") + "\n").into_bytes(),
            ),
            (report_md.clone(), markdown.into_bytes()),
        ],
        req.force,
    )?;
    if let Some(warning) = report["outlook"]["warning"].as_str() {
        eprintln!("warning: {warning}");
    }
    let delta = if outcome.delta > 0.0 {
        format!(", δ = {:e}", outcome.delta)
    } else {
        String::new()
    };
    eprintln!(
        "wrote {} (ε = {}{delta} spent), {} and {}",
        req.out.display(),
        outcome.epsilon,
        report_json.display(),
        report_md.display()
    );
    Ok(())
}

const LINEAR_MECHANISM: &str = "objective perturbation (Chaudhuri, Monteleoni and Sarwate \
     2011), cliff-free calibration, minimizer noise covering the solver's tolerance";
const KERNEL_MECHANISM: &str = "random Fourier features drawn before and independently of \
     the data (dp-kernel; every mapped row in the unit ball), then objective perturbation \
     (cliff-free calibration) on the mapped rows";

fn choice(given: Option<f64>, rule: &str) -> String {
    match given {
        Some(_) => "given by the user (--regularization)".to_string(),
        None => format!(
            "the library's data-independent rule ({rule}) from the public n, d and ε: no \
             privacy spent on the choice"
        ),
    }
}

/// The data as the trainer takes them.
enum Data {
    Training(dp_erm::TrainingSet),
    Examples(Examples),
}

impl Data {
    fn shape(&self) -> (usize, usize) {
        match self {
            Data::Training(t) => (t.len(), t.features()),
            Data::Examples(x) => (x.len(), x.features()),
        }
    }
}

/// Prints the read's throughput (file bytes per second: compressed bytes for a gzip file)
/// on standard error, for the user; not in the report, which holds only what may be
/// released, and the time a read takes is not.
fn report_throughput(path: &Path, elapsed: std::time::Duration) {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let mb = bytes as f64 / 1e6;
    eprintln!(
        "read {} ({mb:.1} MB) in {seconds:.2} s: {:.1} MB/s",
        path.display(),
        mb / seconds
    );
}

fn tuned<T: Trainer>(
    tuner: &Tuner<T>,
    data: &Examples,
    rng: &mut DpRng,
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
                  "epsilon": s.training_epsilon() },
                { "step": "select (exponential mechanism on held-out mistakes)",
                  "epsilon": s.selection_epsilon() },
            ]),
            0.0,
        ),
        Tuner::Stopping(s) => (
            json!([
                { "step": "each run: train a candidate on the training part", "epsilon": s.training_epsilon() },
                { "step": "each run: noisy held-out mistakes (discrete Laplace)", "epsilon": s.score_epsilon() },
                { "step": "random stopping: the best of a geometric number of runs (3·ε_base)",
                  "epsilon": s.epsilon(), "delta": s.delta() },
            ]),
            s.delta(),
        ),
    };
    let mechanism = match plan.map {
        Some(_) => KERNEL_MECHANISM,
        None => LINEAR_MECHANISM,
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
    })
}

fn kernel_facts(map: &FeatureMap) -> Value {
    json!({
        "kernel": match map.kernel() {
            Kernel::Gaussian { .. } => "gaussian exp(−γ‖x − x'‖²)",
            Kernel::Laplacian { .. } => "laplacian exp(−γ‖x − x'‖₁)",
        },
        "gamma": map.kernel().gamma(),
        "sampling": match map.sampling() {
            Sampling::Standard => "standard",
            Sampling::Orthogonal => "orthogonal",
        },
        "random_features": map.output_features(),
        "input_features": map.input_features(),
        "map_id": map.id(),
        "note": "the map is drawn from fresh randomness before the data are read and is \
                 released with the model; it costs no privacy",
    })
}

/// Only public or privatized facts: the request, the schema, the public sizes, the
/// released model's own metadata and the tuning's private outputs. No statistic of the
/// data (no error rate, no count of clamped values or of missing cells, no run count).
fn report(
    req: &TrainRequest,
    outcome: &Outcome,
    bytes: &[u8],
    hash: &str,
    (n, d): (usize, usize),
    encoder: &Encoder,
    ledger: Option<&(PathBuf, Ledger)>,
) -> serde_json::Value {
    let meta = outcome.model.metadata();
    let grouped = meta.noise_groups.is_some();
    // From public sizes and ε alone, as the rules are: no data read. A kernel's model has D
    // features; a tuned model saw its own part of the rows.
    let model_features = meta.features;
    let outlook =
        RegularizationRule::outlook(outcome.training_rows, model_features, req.epsilon).ok();
    json!({
        "report": "dpml train",
        "dpml_version": env!("CARGO_PKG_VERSION"),
        "dp_erm_version": meta.crate_version,
        "contains": "only public or privatized facts: the parameters chosen, the public schema, \
                     the number of rows and features, and the released model's metadata",
        "data_file": req.data.display().to_string(),
        "schema": {
            "file": req.schema.display().to_string(),
            "sha256": hash,
        },
        "model_file": {
            "path": req.out.display().to_string(),
            "sha256": sha256_hex(bytes),
            "kind": match outcome.model {
                Released::Linear(_) => "linear (dp-erm LinearModel)",
                Released::Kernel(_) => "kernel (dp-kernel KernelModel, random features)",
            },
        },
        "neighbouring_relation": "replace one row (datasets of the same size)",
        "rows": n,
        "rows_note": "the row count is treated as public: it is taken from the file, which is \
                     what the replace-one relation allows (neighbouring datasets have the same \
                     size); where the size itself is secret, this report must not be released",
        "features": d,
        "feature_groups": encoder.groups().count(),
        "mechanism": outcome.mechanism,
        "noise": if grouped {
            "shaped to the schema's one-hot groups: density ∝ exp(−β‖b‖_G), same ε"
        } else {
            "Euclidean: density ∝ exp(−β‖b‖₂)"
        },
        "loss": meta.loss.name(),
        "regularization": meta.regularization,
        "regularization_choice": outcome.regularization_choice,
        "tuning": outcome.tuning,
        "kernel": outcome.kernel,
        "outlook": outlook.map(|o| json!({
            "noise_ratio": o.noise_ratio,
            "at_risk": o.at_risk,
            "near_chance": o.near_chance,
            "warning": o.warning(),
            "note": "from the public n, d and ε alone (d/(nε), with the rows and features the \
                     released model was trained on), before any fit; no data read",
        })),
        "epsilon_spent": outcome.epsilon_steps,
        "epsilon_total": outcome.epsilon,
        "delta_total": outcome.delta,
        "ledger": ledger.map(|(path, l)| json!({
            "path": path.display().to_string(),
            "dataset": l.dataset,
            "total_epsilon": l.total_epsilon,
            "spent_after_this_run": l.spent(),
            "total_delta": l.total_delta,
            "delta_spent_after_this_run": l.spent_delta(),
            "runs": l.spends.len(),
        })),
    })
}

fn markdown(r: &serde_json::Value) -> String {
    let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
    let mut out = format!(
        "# dpml train report\n\n\
         This report holds only public or privatized facts: the parameters chosen, the public \
         schema, the number of rows and features, and the released model's metadata.\n\n\
         | | |\n|---|---|\n\
         | ε spent | {} (δ = {}) |\n\
         | mechanism | {} |\n\
         | noise | {} |\n\
         | neighbouring relation | {} |\n\
         | loss | {} |\n\
         | Λ | {} ({}) |\n\
         | rows n | {} (public; see below) |\n\
         | features d | {} in {} groups |\n\
         | schema | `{}`, SHA-256 `{}` |\n\
         | data | `{}` |\n\
         | model | `{}`, SHA-256 `{}` |\n",
        r["epsilon_total"],
        r["delta_total"],
        s("mechanism"),
        s("noise"),
        s("neighbouring_relation"),
        s("loss"),
        r["regularization"],
        s("regularization_choice"),
        r["rows"],
        r["features"],
        r["feature_groups"],
        r["schema"]["file"].as_str().unwrap_or_default(),
        r["schema"]["sha256"].as_str().unwrap_or_default(),
        s("data_file"),
        r["model_file"]["path"].as_str().unwrap_or_default(),
        r["model_file"]["sha256"].as_str().unwrap_or_default(),
    );
    if let Some(l) = r["ledger"].as_object() {
        out.push_str(&format!(
            "| ledger | `{}`: {} of {} spent for {} in {} runs |\n",
            l["path"].as_str().unwrap_or_default(),
            l["spent_after_this_run"],
            l["total_epsilon"],
            l["dataset"],
            l["runs"],
        ));
    }
    if let Some(t) = r["tuning"].as_object() {
        out.push_str(&format!(
            "| tuning | {}; grid {}; chosen Λ = {} (candidate {}) |\n",
            t["method"].as_str().unwrap_or_default(),
            t["grid"],
            t["chosen_regularization"],
            t["chosen_index"],
        ));
    }
    if let Some(k) = r["kernel"].as_object() {
        out.push_str(&format!(
            "| kernel | {}, γ = {}, D = {} random features ({}) |\n",
            k["kernel"].as_str().unwrap_or_default(),
            k["gamma"],
            k["random_features"],
            k["sampling"].as_str().unwrap_or_default(),
        ));
    }
    out.push_str(&format!("\n**Rows.** {}.\n", s("rows_note")));
    if let Some(warning) = r["outlook"]["warning"].as_str() {
        out.push_str(&format!(
            "\n**Expected utility.** {warning} (d/(nε) = {:.3}, from public sizes only).\n",
            r["outlook"]["noise_ratio"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    out
}
