//! The training report (JSON and Markdown): only public or privatized facts.

use std::path::PathBuf;

use dp_erm::{Mechanism, RegularizationRule};
use dp_schema::Encoder;
use serde_json::json;

use crate::model_file::Model as Released;
use crate::output::sha256_hex;
use crate::train::{Outcome, TrainRequest};
use dp_fit::Ledger;
use dp_fit::outlook::Outlook;

/// The ledger a run charged, as it stands after the run's spend.
pub struct LedgerEntry {
    /// The path given.
    pub path: PathBuf,
    /// The ledger after the spend.
    pub ledger: Ledger,
    /// The spend's number in it.
    pub sequence: u64,
}

/// Only public or privatized facts: the request, the schema, the public sizes, the
/// released model's own metadata and the tuning's private outputs. No statistic of the
/// data (no error rate, no count of clamped values or of missing cells, no run count).
pub fn report(
    req: &TrainRequest,
    outcome: &Outcome,
    bytes: &[u8],
    hash: &str,
    (n, d): (usize, usize),
    encoder: &Encoder,
    ledger: Option<&LedgerEntry>,
) -> serde_json::Value {
    let meta = outcome.model.metadata();
    let add_remove = matches!(meta.mechanism, Mechanism::DpSgdAddRemove { .. });
    let grouped = meta.noise_groups.is_some();
    // From public sizes and ε alone, as the rules are: no data read. A kernel's model has D
    // features; a tuned model saw its own part of the rows.
    let model_features = meta.features;
    let outlook = outcome.outlook.clone().or_else(|| {
        let o =
            RegularizationRule::outlook(outcome.training_rows, model_features, req.epsilon).ok()?;
        Some(Outlook {
            noise_ratio: Some(o.noise_ratio),
            at_risk: o.at_risk,
            near_chance: o.near_chance,
            basis: "d/(nε) with the whole ε",
            warning: o.warning().map(str::to_string),
        })
    });
    json!({
        "report": "dpml train",
        "dpml_version": env!("CARGO_PKG_VERSION"),
        "dp_erm_version": meta.crate_version,
        "contains": "only public or privatized facts: the parameters chosen, the public schema, \
                     the number of rows and features, and the released model's metadata",
        // File names only: the names the user gave, nothing of the local filesystem.
        "data_file": file_name(&req.data),
        "schema": {
            "file": file_name(&req.schema),
            "sha256": hash,
        },
        "model_file": {
            "path": file_name(&req.out),
            "sha256": sha256_hex(bytes),
            "kind": match outcome.model {
                Released::Linear(_) => "linear (dp-erm LinearModel)",
                Released::Kernel(_) => "kernel (dp-kernel KernelModel, random features)",
                Released::Regression(_) => "linear regression (dp-erm RegressionModel)",
            },
        },
        "neighbouring_relation": if add_remove {
            "add or remove one row (--neighbouring add-remove: the row count is private)"
        } else {
            "replace one row (datasets of the same size)"
        },
        "rows": n,
        "rows_note": if add_remove {
            "the public estimate n̂ given with --public-rows, not the file's row count: under \
             add/remove the count itself is private, and nothing in this run read it into \
             the schedule, the model or this report"
        } else {
            "the row count is treated as public: it is taken from the file, which is \
             what the replace-one relation allows (neighbouring datasets have the same \
             size); where the size itself is secret, this report must not be released"
        },
        "features": d,
        "feature_groups": encoder.groups().count(),
        "mechanism": outcome.mechanism,
        "noise": match meta.mechanism {
            Mechanism::DpSgd { .. } | Mechanism::DpSgdAddRemove { .. } => "Gaussian N(0, σ²C²I) on each batch's sum of clipped gradients",
            Mechanism::GaussianObjectivePerturbation { .. }
            | Mechanism::GaussianOutputPerturbation { .. } => "spherical Gaussian",
            Mechanism::AdaSsp { .. } => "AdaSSP: discrete Gaussian on λ_min(XᵀX), XᵀX (a symmetric \
                                         matrix) and Xᵀt, a third of the zCDP budget each",
            _ if grouped => "shaped to the schema's feature groups (a categorical column's one-hot \
                             levels form one group, a numeric column is a group of its own): \
                             density ∝ exp(−β‖b‖_G), same ε",
            _ => "Euclidean: density ∝ exp(−β‖b‖₂)",
        },
        "loss": meta.loss.name(),
        "regularization": meta.regularization,
        "regularization_choice": outcome.regularization_choice,
        "tuning": outcome.tuning,
        "kernel": outcome.kernel,
        "dp_sgd": outcome.sgd,
        "out_of_core": req.out_of_core.on.then(|| json!({
            "block_rows": req.out_of_core.block_rows(),
            "note": "the file was read once into a row cache (deleted after the fit) and every \
                     Newton pass read the cache block by block: the same mechanism, noise and \
                     guarantee as an in-memory fit, with memory bounded by the block size",
        })),
        "outlook": outlook.map(|o| json!({
            "noise_ratio": o.noise_ratio,
            "at_risk": o.at_risk,
            "near_chance": o.near_chance,
            "warning": o.warning,
            "basis": o.basis,
            "note": "from public facts alone (the rows and features the released model was \
                     trained on, its ε, δ and calibration), before any fit; no data read",
        })),
        "epsilon_spent": outcome.epsilon_steps,
        "epsilon_total": outcome.epsilon,
        "delta_total": outcome.delta,
        "private_description": req.described.map(|(epsilon, delta)| json!({
            "epsilon": epsilon,
            "delta": delta,
            "epsilon_with_fit": epsilon + outcome.epsilon,
            "delta_with_fit": delta + outcome.delta,
            "note": "the schema's bounds, levels and classes were released privately from the \
                     same data (dpml train --private-schema), a spend of its own: the schema \
                     and this model together are (epsilon_with_fit, delta_with_fit)-DP by \
                     sequential composition",
        })),
        "ledger": ledger.map(|LedgerEntry { path, ledger: l, sequence }| json!({
            "path": file_name(path),
            // `dpml ledger check` matches these against the ledger: a spend it no longer
            // holds shows the ledger was edited or restored from an older copy.
            "id": l.id,
            "sequence": sequence,
            "dataset": l.dataset,
            "total_epsilon": l.total_epsilon,
            "spent_after_this_run": l.summary().composition.epsilon,
            "total_delta": l.total_delta,
            "delta_spent_after_this_run": l.summary().composition.delta,
            "composition": l.summary().composition.method.name(),
            "runs": l.spends.len(),
        })),
    })
}

/// The report as Markdown.
pub fn markdown(r: &serde_json::Value) -> String {
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
    if let Some(d) = r["private_description"].as_object() {
        out.push_str(&format!(
            "| private schema | described from the same data: ε = {} (δ = {}); with this \
             fit ε = {} (δ = {}) |\n",
            d["epsilon"], d["delta"], d["epsilon_with_fit"], d["delta_with_fit"],
        ));
    }
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
    if let Some(g) = r["dp_sgd"].as_object() {
        out.push_str(&format!(
            "| DP-SGD | σ = {}, q = {}, T = {} steps, C = {}, η = {}; settings: {} |\n",
            g["noise_multiplier"],
            g["sampling_rate"],
            g["steps"],
            g["clip_norm"],
            g["learning_rate"],
            g["settings"].as_str().unwrap_or("given"),
        ));
    }
    if let Some(o) = r["out_of_core"].as_object() {
        out.push_str(&format!(
            "| out of core | a row cache in blocks of {} rows, read by every pass |\n",
            o["block_rows"],
        ));
    }
    out.push_str(&format!("\n**Rows.** {}.\n", s("rows_note")));
    if let Some(warning) = r["outlook"]["warning"].as_str() {
        let basis = match r["outlook"]["noise_ratio"].as_f64() {
            Some(ratio) => format!(
                "noise ratio {} ({})",
                crate::text::compact(ratio, 3),
                r["outlook"]["basis"].as_str().unwrap_or_default()
            ),
            None => r["outlook"]["basis"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        };
        out.push_str(&format!(
            "\n**Expected utility.** {warning} ({basis}; from public facts only).\n"
        ));
    }
    out
}

/// The last component of `path` (the file's name as the user gave it), never its directories.
pub fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}
