//! `dpml train`: a schema-encoded file → an ε-DP model, its report, and a ledger entry.

use std::path::{Path, PathBuf};

use dp_erm::{ErmParams, Loss, ObjectiveCalibration, RegularizationRule};
use dp_schema::{Encoder, Schema};
use serde_json::json;

use crate::ledger::{Ledger, LedgerLock, Spend};
use crate::output::{check_free, sha256_hex, write_all_or_none};
use crate::{Failure, fail, progress};

/// The loss to train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Model {
    /// Huber SVM of width 1 (the library's rule's loss).
    Huber,
    /// Logistic regression (predict --proba gives probabilities).
    Logistic,
}

/// The shape of objective perturbation's noise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Noise {
    /// Shaped to the schema's one-hot groups (same ε, less noise per level).
    Grouped,
    /// Euclidean (the papers' mechanism).
    Euclidean,
}

/// What `dpml train` was asked.
pub struct TrainRequest {
    pub data: PathBuf,
    pub schema: PathBuf,
    pub epsilon: f64,
    pub model: Model,
    pub regularization: Option<f64>,
    pub noise: Noise,
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

pub fn run(req: TrainRequest) -> Result<(), Failure> {
    // Everything that can be refused without the data is refused first, in this order:
    // parameters, outputs, schema, ledger.
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
    let (report_json, report_md) = report_paths(&req.out);
    for path in [&req.out, &report_json, &report_md] {
        check_free(path, req.force)?;
    }
    let schema = Schema::load(&req.schema).map_err(|e| fail(e.to_string()))?;
    let hash = schema.hash();
    let encoder = Encoder::new(&schema);
    let ledger = match &req.ledger {
        None => None,
        Some(path) => {
            let lock = LedgerLock::take(path)?;
            let ledger = Ledger::load(path)?;
            ledger.check_spend(path, req.epsilon)?;
            Some((path, lock, ledger))
        }
    };

    let file = req.data.display().to_string();
    let bar = progress::reading(&file);
    let data =
        dp_schema::read_training_set(&req.data, &schema, &encoder, &mut progress::updater(&bar))
            .map_err(|e| fail(e.to_string()))?;
    bar.finish_and_clear();
    // Public under the replace-one relation every guarantee here uses (neighbouring
    // datasets have the same size); the report says so.
    let (n, d) = (data.len(), data.features());
    let groups = encoder.groups().clone();
    let params = match (req.model, req.regularization) {
        (Model::Huber, None) if req.noise == Noise::Grouped => {
            ErmParams::recommended_grouped(n, d, req.epsilon, groups)
        }
        (Model::Huber, None) => ErmParams::recommended(n, d, req.epsilon),
        (model, lambda) => {
            let rule = match req.noise {
                Noise::Grouped => RegularizationRule::GROUPED,
                Noise::Euclidean => RegularizationRule::DEFAULT,
            };
            let lambda = match lambda {
                Some(l) => Ok(l),
                None => rule.regularization(n, d, req.epsilon),
            };
            let loss = match model {
                // The rule's own Huber width where its loss is Huber; else the width of 1 the
                // rules were fitted with.
                Model::Huber => match rule.loss {
                    huber @ Loss::Huber { .. } => Ok(huber),
                    _ => Loss::huber(1.0),
                },
                Model::Logistic => Ok(Loss::Logistic),
            };
            loss.and_then(|loss| {
                lambda.map(|lambda| {
                    let p = ErmParams::objective_perturbation(loss, lambda, req.epsilon)
                        .objective_calibration(ObjectiveCalibration::CliffFree);
                    match req.noise {
                        Noise::Grouped => p.group_noise(groups),
                        Noise::Euclidean => p,
                    }
                })
            })
        }
    }
    .map_err(|e| fail(format!("the parameters were refused: {e}")))?
    .feature_map(&schema_tag(&hash));

    let spinner = progress::spinner("fitting (objective perturbation)");
    let mut rng = dp_noise::DpRng::from_os_entropy()
        .map_err(|e| fail(format!("no secure randomness: {e}")))?;
    let fit = params
        .fit(&data, &mut rng)
        .map_err(|e| fail(format!("the fit was refused: {e}")))?;
    spinner.finish_and_clear();
    let model = fit.into_model();
    let bytes = model
        .to_bytes()
        .map_err(|e| fail(format!("cannot encode the model: {e}")))?;

    // The spend is recorded before the model is written: a crash in between over-counts,
    // never under-counts.
    let ledger_state = match ledger {
        None => None,
        Some((path, lock, mut ledger)) => {
            ledger.spends.push(Spend {
                epsilon: req.epsilon,
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
        &model,
        &bytes,
        &hash,
        n,
        d,
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
    eprintln!(
        "wrote {} (ε = {} spent), {} and {}",
        req.out.display(),
        req.epsilon,
        report_json.display(),
        report_md.display()
    );
    Ok(())
}

/// Only public or privatized facts: the request, the schema, the public sizes, and the
/// released model's own metadata. No statistic of the data (no error rate, no count of
/// clamped values or of missing cells).
#[allow(clippy::too_many_arguments)]
fn report(
    req: &TrainRequest,
    model: &dp_erm::LinearModel,
    bytes: &[u8],
    hash: &str,
    n: usize,
    d: usize,
    encoder: &Encoder,
    ledger: Option<&(PathBuf, Ledger)>,
) -> serde_json::Value {
    let meta = model.metadata();
    let grouped = meta.noise_groups.is_some();
    // From the public n, d and ε alone, as the rules are: no data read.
    let outlook = RegularizationRule::outlook(n, d, req.epsilon).ok();
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
        },
        "neighbouring_relation": "replace one row (datasets of the same size)",
        "rows": n,
        "rows_note": "the row count is treated as public: it is taken from the file, which is \
                     what the replace-one relation allows (neighbouring datasets have the same \
                     size); where the size itself is secret, this report must not be released",
        "features": d,
        "feature_groups": encoder.groups().count(),
        "mechanism": "objective perturbation (Chaudhuri, Monteleoni and Sarwate 2011), \
                      cliff-free calibration, minimizer noise covering the solver's tolerance",
        "noise": if grouped {
            "shaped to the schema's one-hot groups: density ∝ exp(−β‖b‖_G), same ε"
        } else {
            "Euclidean: density ∝ exp(−β‖b‖₂)"
        },
        "loss": meta.loss.name(),
        "regularization": meta.regularization,
        "regularization_choice": match req.regularization {
            Some(_) => "given by the user (--regularization)".to_string(),
            None => format!(
                "the library's data-independent rule ({}) from the public n, d and ε: no \
                 privacy spent on the choice",
                if grouped { "RegularizationRule::GROUPED" } else { "RegularizationRule::DEFAULT" }
            ),
        },
        "outlook": outlook.map(|o| json!({
            "noise_ratio": o.noise_ratio,
            "at_risk": o.at_risk,
            "near_chance": o.near_chance,
            "warning": o.warning(),
            "note": "from the public n, d and ε alone (d/(nε)), before any fit; no data read",
        })),
        "epsilon_spent": [{ "step": "train (objective perturbation)", "epsilon": req.epsilon }],
        "epsilon_total": req.epsilon,
        "ledger": ledger.map(|(path, l)| json!({
            "path": path.display().to_string(),
            "dataset": l.dataset,
            "total_epsilon": l.total_epsilon,
            "spent_after_this_run": l.spent(),
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
         | ε spent | {} |\n\
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
    out.push_str(&format!("\n**Rows.** {}.\n", s("rows_note")));
    if let Some(warning) = r["outlook"]["warning"].as_str() {
        out.push_str(&format!(
            "\n**Expected utility.** {warning} (d/(nε) = {:.3}, from public sizes only).\n",
            r["outlook"]["noise_ratio"].as_f64().unwrap_or(f64::NAN)
        ));
    }
    out
}
