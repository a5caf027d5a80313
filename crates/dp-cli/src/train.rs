//! `dpml train`: a schema-encoded file → an ε-DP (or, with `--delta`, (ε, δ)-DP) model, its
//! report, and a ledger entry.

use std::path::{Path, PathBuf};

use dp_erm::{
    DpSgd, Examples, LinearModel, Loss, ObjectiveCalibration, RegularizationRule, RowCache,
    SgdNeighbours,
};
use dp_fit::outlook::{Outlook, RowScale};
use dp_fit::recipe::{
    ErmRecipe, KERNEL_MECHANISM, KernelName, Mechanism, RecipeError, Regularization, SamplingName,
};
use dp_fit::regression::DEFAULT_HUBER_THRESHOLD;
use dp_fit::sgd::{
    DEFAULT_BATCH_SIZE, DEFAULT_CLIP_NORM, DEFAULT_EPOCHS, DEFAULT_LEARNING_RATE, SgdOptions,
};
use dp_fit::spec::Neighbouring;
use dp_fit::{Charge, Pending, Spend};
use dp_kernel::{FeatureMap, Kernel, KernelParams, Sampling};
use dp_noise::{DpRng, ReleaseRng, Witnessed};
use dp_schema::{Encoder, Schema};
use serde_json::{Value, json};

use crate::model_file::Model as Released;
use crate::output::{ScratchFile, check_free, commit_all, parent, stage_all};
use crate::report::{LedgerEntry, markdown, report};
use crate::tune::{tuned, tuner};
use crate::{Failure, fail, grid, progress};

/// What the schema's label column asks for: classes or a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Task {
    /// A label with public classes (`type = "label"`).
    Classification,
    /// A number within public bounds (`type = "target"`): Huber regression.
    Regression,
}

/// `--mechanism`: how a linear model is trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MechanismChoice {
    /// Objective perturbation (pure ε, or Gaussian with --delta).
    Objective,
    /// Output perturbation (pure ε, or Gaussian with --delta): the exact minimizer plus
    /// noise. Its Gaussian form has a Rényi curve, so `--tune-method stopping` accepts it
    /// with --delta.
    Output,
    /// AdaSSP (regressors only, needs --delta): ridge regression on Gaussian releases of
    /// λ_min(XᵀX), XᵀX and Xᵀt, λ chosen from the noisy λ_min.
    Adassp,
}

/// The model to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// Huber SVM of width 1 (the library's rule's loss).
    Huber,
    /// Logistic regression (predict --proba gives probabilities).
    Logistic,
    /// Kernel SVM (Huber loss) on random Fourier features of the encoded rows (dp-kernel).
    Kernel,
    /// Logistic regression trained by DP-SGD (dp-erm DpSgd): (ε, δ), needs --delta.
    DpSgd,
}

/// `--model dp-sgd`'s options as given (`None`: not given).
pub struct SgdRequest {
    pub batch_size: Option<usize>,
    pub epochs: Option<f64>,
    pub learning_rate: Option<f64>,
    pub clip_norm: Option<f64>,
    /// `--sgd-rule`: the four settings from dp-erm's `DpSgdRule::FITTED`.
    pub rule: bool,
    /// `--neighbouring`: the relation of the guarantee.
    pub neighbouring: Neighbouring,
    /// `--public-rows`: the public n̂ an add/remove fit is scheduled on.
    pub public_rows: Option<usize>,
    /// `--accountant` (`None`: not given, privacy-loss distributions).
    pub accountant: Option<dp_fit::spec::Accountant>,
}

impl SgdRequest {
    /// The public n̂ of an add/remove fit (`None` under replace-one).
    fn add_remove_rows(&self) -> Option<usize> {
        match self.neighbouring {
            Neighbouring::ReplaceOne => None,
            Neighbouring::AddRemove => self.public_rows,
        }
    }
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
    /// Split-and-select (CMS11 Alg. 4): a part of the data per candidate; pure ε, or
    /// (ε, δ) with --delta.
    Split,
    /// Random stopping (Liu-Talwar 2019): 90% of the rows per run; ε plus a δ ≤ 1e-6, or
    /// with --delta (ε, δ) accounted by Rényi DP (Papernot-Steinke 2022).
    Stopping,
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
    pub kind: Option<KernelName>,
    pub gamma: Option<f64>,
    pub features: Option<usize>,
    pub sampling: Option<SamplingName>,
}

/// What `dpml train` was asked.
pub struct TrainRequest {
    pub data: PathBuf,
    pub schema: PathBuf,
    pub epsilon: f64,
    pub delta: f64,
    pub model: Model,
    /// `--mechanism`.
    pub mechanism: MechanismChoice,
    /// `--task`: as the schema says when not given (a target column: regression).
    pub task: Option<Task>,
    pub sgd: SgdRequest,
    pub regularization: Option<f64>,
    pub noise: Option<Noise>,
    pub tune: Option<String>,
    pub tune_method: TuneMethod,
    pub stop_probability: Option<f64>,
    pub kernel: KernelRequest,
    pub out_of_core: OutOfCoreRequest,
    pub ledger: Option<PathBuf>,
    pub out: PathBuf,
    pub force: bool,
    /// With `--private-schema`: the (ε, δ) its description spent on the same data, which
    /// the report states beside the fit's (`None`: a schema given).
    pub described: Option<(f64, f64)>,
}

/// `--out-of-core` and its options as given (`None`: not given).
pub struct OutOfCoreRequest {
    pub on: bool,
    pub block_rows: Option<usize>,
    pub cache_dir: Option<PathBuf>,
}

/// `--block-rows`' default: dp-erm's usual block, about 3 MB of Adult-shaped rows.
const DEFAULT_BLOCK_ROWS: usize = 16_384;

impl OutOfCoreRequest {
    /// `--block-rows`, or its default.
    pub fn block_rows(&self) -> usize {
        self.block_rows.unwrap_or(DEFAULT_BLOCK_ROWS)
    }
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

/// The request's parameters, checked: everything decided before the data are read.
pub struct Plan {
    pub grid: Option<Vec<f64>>,
    pub map: Option<FeatureMap>,
    /// dp-fit's recipe for the empirical-risk fits (every model but DP-SGD).
    pub recipe: ErmRecipe,
}

/// Refuses every parameter that can be refused without the data, naming it.
pub(crate) fn check_parameters(req: &TrainRequest) -> Result<(Noise, Option<Vec<f64>>), Failure> {
    if !(req.epsilon.is_finite() && req.epsilon > 0.0 && req.epsilon <= dp_erm::MAX_EPSILON) {
        return Err(fail(format!(
            "--epsilon {:?}: must be a finite ε in (0, {:?}]",
            req.epsilon,
            dp_erm::MAX_EPSILON
        )));
    }
    check_delta_options(req)?;
    if req.mechanism == MechanismChoice::Output && req.model == Model::DpSgd {
        return Err(fail(
            "--mechanism output with --model dp-sgd: DP-SGD is its own mechanism; --mechanism \
             applies to --model huber, logistic and kernel",
        ));
    }
    if req.mechanism == MechanismChoice::Adassp && req.delta == 0.0 {
        return Err(fail(
            "--mechanism adassp needs --delta > 0: AdaSSP releases Gaussian noise and has no \
             pure-ε form; leave --mechanism out for pure-ε objective perturbation",
        ));
    }
    check_out_of_core(req)?;
    if let Some(lambda) = req.regularization
        && req.model != Model::DpSgd
        && !(lambda.is_finite()
            && (dp_erm::MIN_REGULARIZATION..=dp_erm::MAX_REGULARIZATION).contains(&lambda))
    {
        return Err(fail(format!(
            "--regularization {lambda:?}: must be \"auto\" or a Λ in [{:?}, {:?}]",
            dp_erm::MIN_REGULARIZATION,
            dp_erm::MAX_REGULARIZATION
        )));
    }
    let grid = match &req.tune {
        None => None,
        Some(text) => {
            if let Some(lambda) = req.regularization {
                return Err(fail(format!(
                    "--tune {text:?} with --regularization {lambda:?}: --tune chooses Λ; give one \
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
            "--tune-stop-probability {gamma:?}: applies to --tune-method stopping only"
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
        // Spherical Gaussian noise (checked above that --noise was not asked otherwise).
        _ if req.delta > 0.0 => Noise::Euclidean,
        (Model::Kernel, Some(Noise::Grouped)) => {
            return Err(fail(
                "--noise grouped with --model kernel: random features are dense, their group \
                 norm is not bounded by 1; kernels use Euclidean noise (leave --noise out)",
            ));
        }
        (Model::Kernel, _) => Noise::Euclidean,
        // Output perturbation adds spherical noise to the minimizer: no groups to shape.
        (_, Some(Noise::Grouped)) if req.mechanism == MechanismChoice::Output => {
            return Err(fail(
                "--noise grouped with --mechanism output: group-shaped noise applies to \
                 objective perturbation only (leave --noise out)",
            ));
        }
        _ if req.mechanism == MechanismChoice::Output => Noise::Euclidean,
        // Checked above that --noise grouped was not asked with --out-of-core.
        _ if req.out_of_core.on => Noise::Euclidean,
        (_, noise) => noise.unwrap_or(Noise::Grouped),
    };
    Ok((noise, grid))
}

/// `--out-of-core`'s options, and what it does not combine with, named when refused.
fn check_out_of_core(req: &TrainRequest) -> Result<(), Failure> {
    let o = &req.out_of_core;
    if !o.on {
        let given = [
            ("--block-rows", o.block_rows.is_some()),
            ("--cache-dir", o.cache_dir.is_some()),
        ];
        return match given.iter().find(|(_, given)| *given) {
            Some((option, _)) => Err(fail(format!("{option}: applies to --out-of-core only"))),
            None => Ok(()),
        };
    }
    let not_with =
        |option: &str, why: &str| Err(fail(format!("--out-of-core with {option}: {why}")));
    match req.model {
        Model::Kernel => {
            return not_with(
                "--model kernel",
                "out-of-core fits train linear models (huber, logistic); a kernel model's \
                 random features are computed on rows held in memory",
            );
        }
        Model::DpSgd => {
            return not_with(
                "--model dp-sgd",
                "out-of-core fits use objective perturbation; DP-SGD samples its batches \
                 from rows held in memory",
            );
        }
        Model::Huber | Model::Logistic => {}
    }
    if req.tune.is_some() {
        return not_with(
            "--tune",
            "private tuning trains its candidates on parts of the rows held in memory; give \
             --regularization or leave Λ to the rule",
        );
    }
    if req.delta > 0.0 {
        return not_with(
            "--delta",
            "out-of-core fits are pure ε (objective perturbation)",
        );
    }
    if req.noise == Some(Noise::Grouped) {
        return not_with(
            "--noise grouped",
            "group-shaped noise checks every row's group norms before the noise is drawn, \
             which needs the rows in memory; out-of-core fits use Euclidean noise (leave \
             --noise out)",
        );
    }
    if let Some(rows) = o.block_rows
        && !(1..=dp_erm::MAX_BLOCK_ROWS).contains(&rows)
    {
        return Err(fail(format!(
            "--block-rows {rows}: must be between 1 and {}",
            dp_erm::MAX_BLOCK_ROWS
        )));
    }
    if let Some(dir) = &o.cache_dir
        && !dir.is_dir()
    {
        return Err(fail(format!(
            "--cache-dir {}: is not an existing folder",
            dir.display()
        )));
    }
    Ok(())
}

/// `--delta` and `--model dp-sgd`'s options: what applies to what, named when refused.
fn check_delta_options(req: &TrainRequest) -> Result<(), Failure> {
    let delta = req.delta;
    if !(delta == 0.0 || (delta > 0.0 && delta <= dp_fit::spec::MAX_DELTA)) {
        return Err(fail(format!(
            "--delta {delta:?}: must be 0 (pure ε) or a δ in (0, {:?}], well below 1/n (e.g. \
             1e-6 for a million rows)",
            dp_fit::spec::MAX_DELTA
        )));
    }
    let s = &req.sgd;
    if req.model != Model::DpSgd {
        let given = [
            ("--batch-size", s.batch_size.is_some()),
            ("--epochs", s.epochs.is_some()),
            ("--learning-rate", s.learning_rate.is_some()),
            ("--clip-norm", s.clip_norm.is_some()),
            ("--sgd-rule", s.rule),
            (
                "--neighbouring add-remove",
                s.neighbouring == Neighbouring::AddRemove,
            ),
            ("--public-rows", s.public_rows.is_some()),
            ("--accountant", s.accountant.is_some()),
        ];
        if let Some((option, _)) = given.iter().find(|(_, given)| *given) {
            return Err(fail(format!(
                "{option}: applies to --model dp-sgd only (the other mechanisms' guarantees \
                 are for replace-one neighbours)"
            )));
        }
    }
    match (s.neighbouring, s.public_rows) {
        (Neighbouring::AddRemove, None) => {
            return Err(fail(
                "--neighbouring add-remove needs --public-rows N: under add/remove the number \
                 of rows is private, so q, the steps and each step's divisor come from a public \
                 estimate N of it, never from the file",
            ));
        }
        (Neighbouring::AddRemove, Some(0)) => {
            return Err(fail(
                "--public-rows 0: the public estimate of the rows must be ≥ 1",
            ));
        }
        (Neighbouring::ReplaceOne, Some(rows)) => {
            return Err(fail(format!(
                "--public-rows {rows} without --neighbouring add-remove: under replace-one the \
                 row count is read from the file; leave --public-rows out"
            )));
        }
        _ => {}
    }
    if req.model == Model::DpSgd && s.rule {
        let given = [
            ("--batch-size", s.batch_size.is_some()),
            ("--epochs", s.epochs.is_some()),
            ("--learning-rate", s.learning_rate.is_some()),
            ("--clip-norm", s.clip_norm.is_some()),
            ("--regularization", req.regularization.is_some()),
        ];
        if let Some((option, _)) = given.iter().find(|(_, given)| *given) {
            return Err(fail(format!(
                "{option} with --sgd-rule: the rule chooses the batch size, epochs, learning \
                 rate and clipping norm itself (no regularization); leave {option} out"
            )));
        }
    }
    if delta == 0.0 {
        return match req.model {
            Model::DpSgd => Err(fail(
                "--model dp-sgd needs --delta: DP-SGD is (ε, δ)-DP and has no pure-ε form; \
                 pass a δ in (0, 1) well below 1/n",
            )),
            _ => Ok(()),
        };
    }
    if req.model == Model::Kernel {
        return Err(fail(
            "--delta with --model kernel: kernel models are pure ε only (leave --delta out)",
        ));
    }
    if let (Some(grid), Model::DpSgd) = (&req.tune, req.model) {
        return Err(fail(format!(
            "--tune {grid:?} with --model dp-sgd: --tune chooses Λ among objective- or \
             output-perturbation fits; DP-SGD's settings are given or from --sgd-rule"
        )));
    }
    if let Some(noise) = req.noise {
        return Err(fail(format!(
            "--noise {noise:?} with --delta {delta:?}: the Gaussian mechanisms add spherical \
             Gaussian noise (leave --noise out)"
        )));
    }
    if req.model == Model::DpSgd
        && let Some(lambda) = req.regularization
        && !(lambda.is_finite() && (0.0..=dp_erm::MAX_REGULARIZATION).contains(&lambda))
    {
        return Err(fail(format!(
            "--regularization {lambda:?}: DP-SGD takes a Λ in [0, {:?}] (\"auto\" is 0)",
            dp_erm::MAX_REGULARIZATION
        )));
    }
    Ok(())
}

/// DP-SGD for `n` public rows (the file's under replace-one, `--public-rows` under
/// add/remove), σ calibrated to (ε, δ) for the relation, with the expected batch and the
/// epochs it was configured with; refused naming the option.
fn sgd_trainer(req: &TrainRequest, n: usize, loss: Loss) -> Result<(DpSgd, usize, f64), Failure> {
    let s = &req.sgd;
    let options = SgdOptions {
        loss,
        batch_size: s.batch_size.unwrap_or(DEFAULT_BATCH_SIZE),
        epochs: s.epochs.unwrap_or(DEFAULT_EPOCHS),
        learning_rate: s.learning_rate.unwrap_or(DEFAULT_LEARNING_RATE),
        clip_norm: s.clip_norm.unwrap_or(DEFAULT_CLIP_NORM),
        regularization: req.regularization.unwrap_or(0.0),
        average_iterates: false,
        rule: s.rule,
        neighbouring: s.neighbouring,
        public_rows: s.public_rows,
        accountant: s.accountant.unwrap_or_default(),
    };
    // `n` is already the schedule's n (n̂ under add/remove): dp-fit's options read it so.
    let (sgd, resolved) = options.trainer(req.epsilon, req.delta, n).map_err(|e| {
        fail(match e {
            _ if s.rule => format!("--sgd-rule was refused: {e}"),
            dp_erm::ErmError::BatchSizeOutOfRange { .. }
            | dp_erm::ErmError::InvalidCount { .. } => {
                format!("--batch-size {} ({n} rows): {e}", options.batch_size)
            }
            dp_erm::ErmError::InvalidParameter { what: "epochs", .. } => {
                format!("--epochs {:?} ({n} rows): {e}", options.epochs)
            }
            // DpSgd's errors name the parameter (learning_rate, clip_norm, …).
            _ => format!("the DP-SGD options were refused: {e}"),
        })
    })?;
    Ok((sgd, resolved.batch_size, resolved.epochs))
}

/// The public facts of a DP-SGD model's accounting, for the report.
fn sgd_facts(sgd: &DpSgd, batch: usize, epochs: f64, req: &TrainRequest) -> Value {
    json!({
        "noise_multiplier": sgd.noise_multiplier(),
        "sampling_rate": sgd.sampling_rate(),
        "steps": sgd.config().steps,
        "clip_norm": sgd.config().clip_norm,
        "learning_rate": sgd.config().learning_rate,
        "batch_size": batch,
        "epochs": epochs,
        "average_iterates": sgd.config().average_iterates,
        "settings": if req.sgd.rule { "the library's DP-SGD rule (--sgd-rule)" } else { "given" },
        "neighbouring": match sgd.config().neighbours {
            SgdNeighbours::ReplaceOne => json!("replace-one"),
            SgdNeighbours::AddRemove { expected_batch } => json!({
                "relation": "add-remove",
                "public_rows": req.sgd.public_rows,
                "divisor": expected_batch,
                "replace_one_epsilon": sgd.replace_one_epsilon(),
                "note": "ε is for one row added or removed (Opacus' relation); each step's \
                         noisy sum is divided by the public expected batch; the same fit's \
                         replace-one ε, comparable with the library's other mechanisms, is \
                         replace_one_epsilon",
            }),
        },
        "accountant": sgd.accountant().name(),
        "accounting": match (sgd.config().neighbours, sgd.accountant()) {
            (SgdNeighbours::ReplaceOne, dp_fit::spec::Accountant::Rdp) => "RDP of the \
                Poisson-subsampled Gaussian for replace-one neighbours (dp-noise), T-fold, \
                converted to (ε, δ) by Balle et al. 2020 (--accountant rdp)",
            (SgdNeighbours::AddRemove { .. }, dp_fit::spec::Accountant::Rdp) => "RDP of the \
                Poisson-subsampled Gaussian for add/remove neighbours (MTZ19, dp-noise), \
                T-fold, converted to (ε, δ) by Balle et al. 2020 (--accountant rdp)",
            (SgdNeighbours::ReplaceOne, dp_fit::spec::Accountant::Pld) => "privacy-loss \
                distribution of the Poisson-subsampled Gaussian for replace-one neighbours \
                (dp-noise, connect the dots, pessimistic), T-fold by FFT convolution, ε at δ \
                (--accountant pld, the default)",
            (SgdNeighbours::AddRemove { .. }, dp_fit::spec::Accountant::Pld) => "privacy-loss \
                distribution of the Poisson-subsampled Gaussian for add/remove neighbours \
                (dp-noise, connect the dots, pessimistic), T-fold by FFT convolution, ε at δ \
                (--accountant pld, the default)",
        },
    })
}

/// Draws `--model kernel`'s map for `d` encoded features (public randomness, before the
/// data are read; refused here if its sizes are).
fn draw_map<R: ReleaseRng + ?Sized>(
    k: &KernelRequest,
    d: usize,
    rng: &mut R,
) -> Result<FeatureMap, Failure> {
    let gamma = k.gamma.unwrap_or(DEFAULT_GAMMA);
    let kind = k.kind.unwrap_or(KernelName::Gaussian);
    let kernel = kind
        .kernel(gamma)
        .map_err(|e| fail(format!("--gamma {gamma:?}: {e}")))?;
    let sampling = match (k.sampling, kind) {
        (Some(given), _) => given.into(),
        (None, KernelName::Laplacian) => Sampling::Standard,
        (None, KernelName::Gaussian) => Sampling::Orthogonal,
    };
    let features = k.features.unwrap_or(DEFAULT_RANDOM_FEATURES);
    FeatureMap::draw(kernel, sampling, d, features, rng)
        .map_err(|e| fail(format!("the kernel's options were refused (--random-features {features}, --sampling, --kernel): {e}")))
}

/// The loss: the rule's Huber width where its loss is Huber, else the width of 1 the rules
/// were fitted with; or logistic.
fn loss_of(model: Model, noise: Noise) -> Result<Loss, Failure> {
    let rule_loss = match noise {
        Noise::Grouped => RegularizationRule::GROUPED.loss,
        Noise::Euclidean => RegularizationRule::DEFAULT.loss,
    };
    match model {
        Model::Logistic | Model::DpSgd => Ok(Loss::Logistic),
        Model::Huber | Model::Kernel => match rule_loss {
            huber @ Loss::Huber { .. } => Ok(huber),
            _ => Loss::huber(1.0),
        }
        .map_err(|e| fail(format!("the loss was refused: {e}"))),
    }
}

/// What the run released and how, for the report.
pub struct Outcome {
    pub model: Released,
    pub mechanism: String,
    pub regularization_choice: String,
    pub epsilon_steps: Value,
    pub epsilon: f64,
    pub delta: f64,
    pub tuning: Option<Value>,
    pub kernel: Option<Value>,
    /// DP-SGD's accounting (σ, q, T, C, …), for `--model dp-sgd`.
    pub sgd: Option<Value>,
    /// Rows each released model was trained on (for the outlook).
    pub training_rows: usize,
    /// dp-fit's outlook of the fit, from public facts (`None`: the report computes the
    /// pure-ε one, as for a tuned model).
    pub outlook: Option<Outlook>,
}

/// Runs `dpml train` with a generator keyed from the operating system (the only private
/// choice).
pub fn run(req: TrainRequest) -> Result<(), Failure> {
    // Refused parameters are named before the generator is asked for (as ever).
    check_parameters(&req)?;
    let rng = DpRng::from_os_entropy().map_err(|e| fail(format!("no secure randomness: {e}")))?;
    run_with(req, rng)
}

/// [`run`] with the release's generator given: `DpRng` in the command; the tests' seeded
/// generator (dp-noise's `insecure-seeded-rng`, a dev-dependency feature, so never in the
/// binary) where they compare the command line's models with the other faces'.
pub(crate) fn run_with<R: ReleaseRng>(req: TrainRequest, mut rng: R) -> Result<(), Failure> {
    // Everything that can be refused without the data is refused first, in this order:
    // parameters, outputs, schema, the kernel's map and the tuning, ledger.
    let (noise, grid) = check_parameters(&req)?;
    let stop_probability = req.stop_probability.unwrap_or(DEFAULT_STOP_PROBABILITY);
    let (report_json, report_md) = report_paths(&req.out);
    for path in [&req.out, &report_json, &report_md] {
        check_free(path, req.force)?;
    }
    let schema = Schema::load(&req.schema).map_err(|e| fail(e.to_string()))?;
    let regression = check_task(&req, &schema)?;
    let hash = schema.hash();
    let tag = schema_tag(&hash);
    let encoder = Encoder::new(&schema);
    let map = match req.model {
        Model::Kernel => Some(draw_map(&req.kernel, encoder.features(), &mut rng)?),
        _ => None,
    };
    let loss = if regression {
        Loss::huber_regression(DEFAULT_HUBER_THRESHOLD)
            .map_err(|e| fail(format!("the loss was refused: {e}")))?
    } else {
        loss_of(req.model, noise)?
    };
    let plan = Plan {
        grid,
        map,
        recipe: ErmRecipe {
            loss,
            mechanism: match (req.mechanism, req.delta > 0.0) {
                (MechanismChoice::Adassp, _) => Mechanism::AdaSsp {
                    epsilon: req.epsilon,
                    delta: req.delta,
                },
                (MechanismChoice::Output, true) => Mechanism::GaussianOutput {
                    epsilon: req.epsilon,
                    delta: req.delta,
                },
                (MechanismChoice::Output, false) => Mechanism::Output {
                    epsilon: req.epsilon,
                },
                (MechanismChoice::Objective, true) => Mechanism::GaussianObjective {
                    epsilon: req.epsilon,
                    delta: req.delta,
                },
                (MechanismChoice::Objective, false) => Mechanism::Objective {
                    epsilon: req.epsilon,
                    calibration: ObjectiveCalibration::CliffFree,
                },
            },
            regularization: req
                .regularization
                .map_or(Regularization::Rule, Regularization::Fixed),
            groups: (noise == Noise::Grouped).then(|| encoder.groups().clone()),
            tolerance: None,
            feature_map: tag.clone(),
        },
    };
    // dp-fit's candidates: pure ε, or Gaussian at the recipe's δ.
    let linear_tuner = match (&plan.grid, &plan.map) {
        (Some(grid), None) if !regression => Some(tuner(
            req.tune_method,
            req.epsilon,
            stop_probability,
            |e| {
                grid.iter()
                    .map(|&l| plan.recipe.candidate_at(l, e).map_err(refused))
                    .collect()
            },
        )?),
        _ => None,
    };
    let kernel_tuner = match (&plan.grid, &plan.map) {
        (Some(grid), Some(map)) => Some(tuner(
            req.tune_method,
            req.epsilon,
            stop_probability,
            |e| {
                Ok(grid
                    .iter()
                    .map(|&l| KernelParams::new(map.clone(), plan.recipe.params_at(l, Some(e))))
                    .collect())
            },
        )?),
        _ => None,
    };
    let (epsilon, delta) = match (&linear_tuner, &kernel_tuner) {
        (Some(t), _) => (t.epsilon(), t.delta()),
        (_, Some(t)) => (t.epsilon(), t.delta()),
        _ => (req.epsilon, req.delta),
    };
    // A regression's --tune: dp-fit's regression tuner over pure-ε regressors
    // (split-and-select or random stopping, as --tune-method says).
    let regression_tuner = match regression {
        true => crate::tune_regression::regression_tuner(
            req.tune_method,
            req.epsilon,
            stop_probability,
            &plan,
        )?,
        false => None,
    };
    let (epsilon, delta) = regression_tuner
        .as_ref()
        .map_or((epsilon, delta), |t| (t.epsilon(), t.delta()));
    // Add/remove DP-SGD is scheduled on the public n̂, so it is built (and refused) before
    // the data are read; a ledger, which adds replace-one ε, is charged the same fit's
    // replace-one ε.
    let mut add_remove_sgd = match req.sgd.add_remove_rows() {
        Some(rows) if req.model == Model::DpSgd => Some(sgd_trainer(&req, rows, loss)?),
        _ => None,
    };
    let ledger_epsilon = add_remove_sgd
        .as_ref()
        .map_or(epsilon, |(sgd, ..)| sgd.replace_one_epsilon());
    // The ledger's lock is held from here to the end of the run; the spend is checked now,
    // before any data are read, and stored by dp-fit's rule: once the fit may have drawn
    // noise (after a failure that followed a draw, or after the outputs are staged).
    let charge = Charge {
        epsilon: ledger_epsilon,
        delta,
    };
    let mut pending = match &req.ledger {
        None => None,
        Some(path) => Some(Pending::begin(path, charge).map_err(|e| fail(e.to_string()))?),
    };
    let spend = Spend {
        schema_sha256: hash.clone(),
        ..Spend::new(
            charge.epsilon,
            charge.delta,
            "train",
            &req.out.display().to_string(),
        )
    };

    let file = req.data.display().to_string();
    let bar = progress::reading(&file);
    let started = std::time::Instant::now();
    let needs_examples = plan.grid.is_some() || plan.map.is_some() || req.model == Model::DpSgd;
    let data = if req.out_of_core.on {
        let folder = match &req.out_of_core.cache_dir {
            Some(dir) => dir.as_path(),
            None => parent(&req.out),
        };
        let cache = ScratchFile::reserve(folder, "dpml-train", "rows")?;
        let written = dp_schema::write_row_cache(
            &req.data,
            &schema,
            &encoder,
            cache.path(),
            req.out_of_core.block_rows(),
            &mut progress::updater(&bar),
        )
        .map_err(|e| fail(e.to_string()))?;
        let rows = RowCache::open(cache.path()).map_err(|e| fail(format!("the row cache: {e}")))?;
        let n = usize::try_from(written)
            .map_err(|_| fail("the file has more rows than this platform can count"))?;
        Data::Cache {
            rows,
            shape: (n, encoder.features()),
            _file: cache,
        }
    } else if regression {
        Data::Regression(
            dp_schema::read_regression_set(
                &req.data,
                &schema,
                &encoder,
                &mut progress::updater(&bar),
            )
            .map_err(|e| fail(e.to_string()))?,
        )
    } else if needs_examples {
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

    let spinner = progress::spinner(match (req.model, req.delta > 0.0) {
        (Model::DpSgd, _) => "fitting (DP-SGD)",
        (_, true) => "fitting (Gaussian objective perturbation)",
        _ => "fitting (objective perturbation)",
    });
    let mut witness = Witnessed::new(&mut rng);
    let fitted = (|| -> Result<Outcome, Failure> {
        Ok(match (data, linear_tuner, kernel_tuner, &plan.map) {
            (Data::Examples(x), None, None, None) if req.model == Model::DpSgd => {
                let (sgd, batch, epochs) = match add_remove_sgd.take() {
                    Some(trainer) => trainer,
                    None => sgd_trainer(&req, n, loss)?,
                };
                let model = sgd
                    .fit(&x, &mut witness)
                    .and_then(|m| m.into_model().with_feature_map(&tag))
                    .map_err(|e| fail(format!("the fit was refused: {e}")))?;
                Outcome {
                    model: Released::Linear(model),
                    mechanism: dp_fit::sgd::sgd_mechanism(sgd.accountant()),
                    regularization_choice: choice(req.regularization, "Λ = 0 for DP-SGD"),
                    epsilon_steps: json!([{ "step": "train (DP-SGD)", "epsilon": req.epsilon, "delta": req.delta }]),
                    epsilon: req.epsilon,
                    delta: req.delta,
                    tuning: None,
                    kernel: None,
                    sgd: Some(sgd_facts(&sgd, batch, epochs, &req)),
                    training_rows: req.sgd.add_remove_rows().unwrap_or(n),
                    outlook: Some(Outlook::sgd(req.sgd.add_remove_rows().unwrap_or(n))),
                }
            }
            (Data::Examples(x), Some(t), _, _) => {
                tuned(&t, &x, &mut witness, &plan, Released::Linear)?
            }
            (Data::Examples(x), _, Some(t), Some(map)) => {
                let mut o = tuned(&t, &x, &mut witness, &plan, Released::Kernel)?;
                o.kernel = Some(kernel_facts(map));
                o
            }
            (Data::Examples(x), None, None, Some(map)) => {
                let planned = plan
                    .recipe
                    .plan(n, map.output_features(), 2)
                    .map_err(refused)?;
                let Some(params) = planned.params() else {
                    return Err(fail("kernel models are pure ε only (leave --delta out)"));
                };
                let fit = KernelParams::new(map.clone(), params.clone())
                    .fit(&x, &mut witness)
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
                    sgd: None,
                    training_rows: n,
                    // The schema's rows lie in the unit ball.
                    outlook: planned.outlook(n, map.output_features()).map(|o| {
                        o.with_kernel_width(&map.kernel(), map.input_features(), RowScale::UnitBall)
                    }),
                }
            }
            (Data::Regression(set), None, None, None) if regression_tuner.is_some() => {
                let Some(t) = &regression_tuner else {
                    return Err(fail("the regression's tuning is missing"));
                };
                crate::tune_regression::tuned_regression(t, &set, &mut witness, &plan)?
            }
            (Data::Regression(set), None, None, None) if req.model == Model::DpSgd => {
                let (sgd, batch, epochs) = match add_remove_sgd.take() {
                    Some(trainer) => trainer,
                    None => sgd_trainer(&req, n, loss)?,
                };
                let model = sgd
                    .fit_regression(&set, &mut witness)
                    .and_then(|m| m.with_feature_map(&tag))
                    .map_err(|e| fail(format!("the fit was refused: {e}")))?;
                Outcome {
                    model: Released::Regression(model),
                    mechanism: format!(
                        "{}, Huber regression (threshold: half the target's public range)",
                        dp_fit::sgd::sgd_mechanism(sgd.accountant())
                    ),
                    regularization_choice: choice(req.regularization, "Λ = 0 for DP-SGD"),
                    epsilon_steps: json!([{ "step": "train (DP-SGD, Huber regression)", "epsilon": req.epsilon, "delta": req.delta }]),
                    epsilon: req.epsilon,
                    delta: req.delta,
                    tuning: None,
                    kernel: None,
                    sgd: Some(sgd_facts(&sgd, batch, epochs, &req)),
                    training_rows: req.sgd.add_remove_rows().unwrap_or(n),
                    outlook: Some(Outlook::sgd_regression(
                        req.sgd.add_remove_rows().unwrap_or(n),
                        req.epsilon,
                    )),
                }
            }
            (Data::Regression(set), None, None, None) => {
                let planned = plan.recipe.plan_regression(n, d).map_err(refused)?;
                let model = planned
                    .fit(&set, &mut witness)
                    .map_err(|e| fail(format!("the fit was refused: {e}")))?;
                let gaussian = req.delta > 0.0;
                Outcome {
                    model: Released::Regression(model),
                    mechanism: match planned.adassp {
                        Some(_) => format!(
                            "{}: ridge regression (least squares) on the scaled target",
                            plan.recipe.mechanism.description()
                        ),
                        None => format!(
                            "{}, Huber regression (threshold: half the target's public range)",
                            plan.recipe.mechanism.description()
                        ),
                    },
                    regularization_choice: choice(
                        req.regularization,
                        plan.recipe.regression_rule_name(),
                    ),
                    epsilon_steps: if let Some(c) = planned.adassp {
                        adassp_steps(&c, req.delta)
                    } else if gaussian {
                        json!([{ "step": "train (Gaussian objective perturbation, Huber regression)", "epsilon": req.epsilon, "delta": req.delta }])
                    } else {
                        json!([{ "step": "train (objective perturbation, Huber regression)", "epsilon": req.epsilon }])
                    },
                    epsilon: req.epsilon,
                    delta: req.delta,
                    tuning: None,
                    kernel: None,
                    sgd: None,
                    training_rows: n,
                    outlook: planned.outlook(n, d),
                }
            }
            (Data::Training(t), _, _, _) => {
                let planned = plan.recipe.plan(n, d, 2).map_err(refused)?;
                let classes: Vec<usize> =
                    t.labels().iter().map(|&y| usize::from(y > 0.0)).collect();
                let model = planned
                    .fit(&t, &classes, &mut witness)
                    .map_err(|e| fail(format!("the fit was refused: {e}")))?
                    .remove(0);
                linear_outcome(&req, &plan, model, planned.outlook(n, d), n)
            }
            (Data::Cache { rows, _file, .. }, _, _, _) => {
                let planned = plan.recipe.plan(n, d, 2).map_err(refused)?;
                let Some(params) = planned.params() else {
                    return Err(fail("out-of-core fits are pure ε (leave --delta out)"));
                };
                let fit = params
                    .fit_blocks(&rows, n, &mut witness)
                    .map_err(|e| fail(format!("the fit was refused: {e}")))?;
                linear_outcome(&req, &plan, fit.into_model(), planned.outlook(n, d), n)
            }
            _ => unreachable!("tuning and kernels read examples"),
        })
    })();
    let drew = witness.drew();
    spinner.finish_and_clear();
    let outcome = match fitted {
        Ok(outcome) => outcome,
        Err(failure) => return Err(settle_failure(pending, drew, spend, failure)),
    };
    let bytes = outcome.model.to_bytes()?;

    // The spend is recorded in the ledger held in memory (for the report), the outputs are
    // staged (written and synced under temporary names), and only then is the spend
    // stored and the outputs moved into place: an output that cannot be written costs
    // nothing; a crash after the spend is stored over-counts, never under-counts.
    let ledger_entry = match (&mut pending, &req.ledger) {
        (Some(pending), Some(path)) => {
            // DP-SGD's curve (its σ, rate and steps, known only now) lets the ledger compose
            // it tightly; the spend was checked as its (ε, δ) pair, which dominates it.
            let metadata = match &outcome.model {
                Released::Linear(m) if req.model == Model::DpSgd => Some(m.metadata()),
                Released::Regression(m) if req.model == Model::DpSgd => Some(m.metadata()),
                _ => None,
            };
            let sgd_curve = metadata.and_then(|m| m.mechanism.sgd_record()).map(|r| {
                dp_fit::Curve::SubsampledGaussian {
                    sampling_rate: r.sampling_rate,
                    noise_multiplier: r.noise_multiplier,
                    steps: r.steps,
                }
            });
            // An untuned Gaussian output-perturbation classifier is ρ-zCDP (its curve known
            // from (ε, δ) alone), as Python's ledger records it.
            let output_curve = match (plan.recipe.mechanism, &plan.grid, &outcome.model) {
                (Mechanism::GaussianOutput { epsilon, delta }, None, Released::Linear(_)) => {
                    dp_fit::Curve::gaussian_output_perturbation(epsilon, delta, 2)
                }
                _ => None,
            };
            let curve = sgd_curve.or(output_curve);
            let (sequence, after) = pending
                .record(spend.with_curve(curve))
                .map_err(|e| fail(e.to_string()))?;
            Some(LedgerEntry {
                path: path.clone(),
                ledger: after.clone(),
                sequence,
            })
        }
        _ => None,
    };
    let report = report(
        &req,
        &outcome,
        &bytes,
        &hash,
        // Under add/remove the file's row count is private: the report gives n̂.
        (req.sgd.add_remove_rows().unwrap_or(n), d),
        &encoder,
        ledger_entry.as_ref(),
    );
    let markdown = markdown(&report);
    let staged = stage_all(
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
    if let Some(pending) = pending {
        pending.store().map_err(|e| fail(e.to_string()))?;
    }
    commit_all(staged, req.force)?;
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
        crate::text::number(outcome.epsilon),
        report_json.display(),
        report_md.display()
    );
    Ok(())
}

/// A fit that failed: its spend is stored if it may have drawn noise (dp-fit's rule), and
/// the message says so.
fn settle_failure(pending: Option<Pending>, drew: bool, spend: Spend, failure: Failure) -> Failure {
    let Some(pending) = pending else {
        return failure;
    };
    let charged = format!(
        " (ε = {}{})",
        crate::text::number(spend.epsilon),
        if spend.delta > 0.0 {
            format!(", δ = {:e}", spend.delta)
        } else {
            String::new()
        }
    );
    match pending.settle_failure(drew, spend) {
        Ok(None) => failure,
        Ok(Some(sequence)) => fail(format!(
            "{}; the fit had drawn its noise, so its spend{charged} stands and was \
             charged to the ledger (spend {sequence})",
            failure.0
        )),
        Err(e) => fail(format!(
            "{}; and its spend could not be stored: {e}",
            failure.0
        )),
    }
}

fn choice(given: Option<f64>, rule: &str) -> String {
    match given {
        Some(_) => "given by the user (--regularization)".to_string(),
        None => format!(
            "the library's data-independent rule ({rule}) from the public n, d and ε: no \
             privacy spent on the choice"
        ),
    }
}

/// Whether the schema makes this a regression (a `type = "target"` column) — refusing a
/// `--task` that says otherwise, and the options a regressor does not take yet, before
/// anything is read.
fn check_task(req: &TrainRequest, schema: &Schema) -> Result<bool, Failure> {
    let regression = schema.target_bounds().is_some();
    match (req.task, regression) {
        (Some(Task::Regression), false) => {
            return Err(fail(
                "--task regression: the schema has no target column (type = \"target\", with \
                 public lower and upper); its label column makes it a classification",
            ));
        }
        (Some(Task::Classification), true) => {
            return Err(fail(
                "--task classification: the schema's label is a regression target (type = \
                 \"target\"); declare a label with classes for a classifier",
            ));
        }
        _ => {}
    }
    if !regression && req.mechanism == MechanismChoice::Adassp {
        return Err(fail(
            "--mechanism adassp applies to a regression (a schema with a target column) only: \
             AdaSSP trains ridge regressors",
        ));
    }
    if regression {
        let unsupported = [
            // Its settings were fitted on classifiers.
            (req.model == Model::DpSgd && req.sgd.rule, "--sgd-rule"),
            (req.model == Model::Kernel, "--model kernel"),
            (req.model == Model::Logistic, "--model logistic"),
            (req.out_of_core.on, "--out-of-core"),
        ];
        if let Some((_, option)) = unsupported.iter().find(|(given, _)| *given) {
            return Err(fail(format!(
                "{option} does not apply to a regression (the schema's target column): a \
                 regressor trains Huber regression by objective perturbation, pure ε or with \
                 --delta, or by DP-SGD (--model dp-sgd with --delta and its own options)"
            )));
        }
    }
    Ok(regression)
}

/// AdaSSP's split for the report: its three releases at a third of ρ each, and the
/// (ε, δ) their composed ρ certifies.
fn adassp_steps(c: &dp_erm::AdaSspCalibration, delta: f64) -> Value {
    let third = c.rho / 3.0;
    json!([
        { "step": "AdaSSP: release λ_min(XᵀX) (sensitivity 1)", "rho": third, "sigma": c.sigma_eigenvalue },
        { "step": "AdaSSP: release XᵀX (sensitivity √2)", "rho": third, "sigma": c.sigma_gram },
        { "step": "AdaSSP: release Xᵀt (sensitivity 2)", "rho": third, "sigma": c.sigma_moment },
        { "step": "AdaSSP: the three composed (zCDP, CKS20 conversion); the ridge solve is post-processing", "rho": c.rho, "epsilon": c.epsilon, "delta": delta },
    ])
}

/// What a linear fit (`--model huber/logistic`, pure ε or Gaussian) released.
fn linear_outcome(
    req: &TrainRequest,
    plan: &Plan,
    model: LinearModel,
    outlook: Option<Outlook>,
    n: usize,
) -> Outcome {
    let name = match plan.recipe.mechanism {
        Mechanism::GaussianObjective { .. } => "Gaussian objective perturbation",
        Mechanism::GaussianOutput { .. } => "Gaussian output perturbation",
        Mechanism::Output { .. } => "output perturbation",
        _ => "objective perturbation",
    };
    let step = if req.delta > 0.0 {
        json!([{ "step": format!("train ({name})"), "epsilon": req.epsilon, "delta": req.delta }])
    } else {
        json!([{ "step": format!("train ({name})"), "epsilon": req.epsilon }])
    };
    Outcome {
        model: Released::Linear(model),
        mechanism: plan.recipe.mechanism.description().into(),
        regularization_choice: choice(req.regularization, plan.recipe.rule_name()),
        epsilon_steps: step,
        epsilon: req.epsilon,
        delta: req.delta,
        tuning: None,
        kernel: None,
        sgd: None,
        training_rows: n,
        outlook,
    }
}

/// A refusal of dp-fit's recipe, naming the option.
fn refused(e: RecipeError) -> Failure {
    match e {
        RecipeError::Refused { parameter, why } => {
            fail(format!("{} {why}", parameter.option_name()))
        }
        RecipeError::Erm(e) => fail(format!("the parameters were refused: {e}")),
    }
}

/// The data as the trainer takes them.
enum Data {
    Training(dp_erm::TrainingSet),
    /// A regression schema's rows and targets.
    Regression(dp_erm::RegressionSet),
    Examples(Examples),
    /// `--out-of-core`: the file's encoded rows (n, d) in a row cache, deleted with its
    /// [`ScratchFile`] once the fit is done.
    Cache {
        rows: RowCache,
        shape: (usize, usize),
        _file: ScratchFile,
    },
}

impl Data {
    fn shape(&self) -> (usize, usize) {
        match self {
            Data::Training(t) => (t.len(), t.features()),
            Data::Regression(r) => (r.len(), r.features()),
            Data::Examples(x) => (x.len(), x.features()),
            Data::Cache { shape, .. } => *shape,
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
