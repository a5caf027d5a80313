//! `cargo xtask audit mia`: membership inference against a private model and against a
//! deliberately overfit non-private one (docs/src/reference/privacy-testing.md §3).
//!
//! Membership is randomized in pairs: the pool holds 2m rows, and each of K models trains on
//! one row of every pair, chosen by a fair coin. Every pool row is then a member of about
//! half the models, every training set has m rows, and two training sets that differ in one
//! coin are neighbours under *replace one record* — the relation of the guarantees — so an
//! ε-DP model caps any attack's advantage `TPR − FPR` at `tanh(ε/2)` (see
//! `dp_audit::mia::advantage_ceiling`).
//!
//! Attacks on each (model, pool row): the loss-threshold attack (score: the margin `y·fᵀx`,
//! a decreasing function of the loss) and a likelihood-ratio attack with shadow models (for
//! each row, Gaussians fitted to its margins in the *other* models where it was in and out;
//! score: the log-likelihood ratio).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use dp_audit::mia::{
    Roc, TprAtFpr, advantage, advantage_ceiling, advantage_upper_bound,
    gaussian_log_likelihood_ratio, roc, tpr_at_fpr,
};
use dp_datasets::{
    ADULT_FILES, DataDir, Dataset, KDD_FILES, Scaling, load_adult, load_kddcup99, noisy_linear,
};
use dp_erm::{ErmParams, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;
use indicatif::{ProgressBar, ProgressStyle};
use rand::RngExt;
use serde::Serialize;

use crate::keep::{self, Holdings};

/// Datasets the command knows.
pub const DATASETS: [&str; 3] = ["synthetic", "adult", "kdd"];
const FPRS: [f64; 3] = [0.1, 0.01, 0.001];
/// The private model must keep the attack's advantage under the ε-DP ceiling with
/// confidence `1 − CONFIDENCE_ALPHA`.
const CONFIDENCE_ALPHA: f64 = 1e-3;
/// The stated threshold: the overfit model must give the attack at least this advantage,
/// or the attack is not shown to work.
pub const OVERFIT_ADVANTAGE_FLOOR: f64 = 0.3;
/// Shadow models of the full audit (`--quick` trains 16).
const FULL_MODELS: usize = 64;

/// One model family's attack results.
#[derive(Serialize)]
struct AttackResult {
    attack: &'static str,
    auc: f64,
    advantage: f64,
    /// Upper confidence bound on the true advantage at `1 − CONFIDENCE_ALPHA` (DKW, assuming
    /// independent trials).
    advantage_upper_bound: f64,
    tpr_at_fpr: Vec<TprAtFpr>,
    #[serde(skip)]
    roc: Roc,
}

#[derive(Serialize)]
struct ModelResult {
    model: String,
    claimed_epsilon: Option<f64>,
    advantage_ceiling: Option<f64>,
    attacks: Vec<AttackResult>,
}

#[derive(Serialize)]
struct Report {
    dataset: String,
    pool_rows: usize,
    features: usize,
    models: usize,
    results: Vec<ModelResult>,
}

/// The pool: 2m rows of the dataset, shuffled from `seed`.
fn pool(
    name: &str,
    quick: bool,
    data_dir: Option<&Path>,
    seed: u64,
) -> Result<Dataset, Box<dyn std::error::Error>> {
    // Few rows for the dimension, so that the non-private model can memorize (overfit on
    // purpose): the attack must be shown to work before its failure on the private model
    // means anything.
    let (synthetic_rows, real_rows) = if quick { (200, 200) } else { (400, 400) };
    let full = match name {
        // High dimension, few rows, noisy labels: a non-private model memorizes them.
        "synthetic" => return Ok(noisy_linear(synthetic_rows, 200, 0.3, seed)?),
        "adult" | "kdd" => {
            let dir = DataDir::resolve(data_dir);
            let files = if name == "adult" {
                &ADULT_FILES[..]
            } else {
                &KDD_FILES[..]
            };
            let missing: Vec<&str> = dir.missing(files).iter().map(|f| f.name).collect();
            if !missing.is_empty() {
                return Err(format!(
                    "cannot attack {name}: missing {} in {}; {}",
                    missing.join(", "),
                    dir.path().display(),
                    dp_datasets::HOW_TO_GET
                )
                .into());
            }
            if name == "adult" {
                load_adult(&dir, Scaling::PaperColumnMax)?
            } else {
                load_kddcup99(&dir)?
            }
        }
        other => {
            return Err(
                format!("unknown dataset {other:?}; known: {}", DATASETS.join(", ")).into(),
            );
        }
    };
    let mut rng = InsecureSeededRng::new(seed);
    let mut order: Vec<usize> = (0..full.len()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    order.truncate(real_rows.min(full.len() & !1));
    Ok(Dataset {
        rows: order.iter().map(|&i| full.rows[i].clone()).collect(),
        labels: order.iter().map(|&i| full.labels[i]).collect(),
        ..full
    })
}

/// Margins `y·fᵀx` of every pool row under each model, and each row's membership per model.
fn margins(
    params: &ErmParams,
    pool: &Dataset,
    memberships: &[Vec<bool>],
    seed: u64,
    progress: &ProgressBar,
) -> Result<Vec<Vec<f64>>, Box<dyn std::error::Error>> {
    let everyone = pool.training_set(&(0..pool.len()).collect::<Vec<_>>())?;
    memberships
        .iter()
        .enumerate()
        .map(|(k, member)| {
            let rows: Vec<usize> = (0..pool.len()).filter(|&j| member[j]).collect();
            let train: TrainingSet = pool.training_set(&rows)?;
            let model = params.fit(&train, &mut InsecureSeededRng::new(seed ^ (k as u64) << 20))?;
            let values = model.model().training_scores(&everyone)?;
            progress.inc(1);
            Ok(values
                .iter()
                .zip(everyone.labels())
                .map(|(v, y)| v * y)
                .collect())
        })
        .collect()
}

fn attacks(
    margins: &[Vec<f64>],
    memberships: &[Vec<bool>],
) -> Result<Vec<AttackResult>, dp_audit::AuditError> {
    let (models, rows) = (margins.len(), margins[0].len());
    let mut loss = (Vec::new(), Vec::new());
    let mut likelihood = (Vec::new(), Vec::new());
    for k in 0..models {
        for j in 0..rows {
            let (mut inside, mut outside) = (Vec::new(), Vec::new());
            for other in (0..models).filter(|&o| o != k) {
                if memberships[other][j] {
                    inside.push(margins[other][j])
                } else {
                    outside.push(margins[other][j])
                }
            }
            let member = memberships[k][j];
            if member { &mut loss.0 } else { &mut loss.1 }.push(margins[k][j]);
            // The likelihood ratio needs shadow models on both sides; a target that no
            // other model trained on (or every one did) is left out of that attack.
            if !inside.is_empty() && !outside.is_empty() {
                let ratio = gaussian_log_likelihood_ratio(margins[k][j], &inside, &outside)?;
                if member {
                    &mut likelihood.0
                } else {
                    &mut likelihood.1
                }
                .push(ratio);
            }
        }
    }
    let mut results = Vec::new();
    for (attack, (members, others)) in [
        ("loss threshold", loss),
        ("likelihood ratio (shadow models)", likelihood),
    ] {
        let Some(curve) = roc(&members, &others) else {
            continue;
        };
        results.push(AttackResult {
            attack,
            auc: curve.auc,
            advantage: advantage(&curve),
            advantage_upper_bound: advantage_upper_bound(&curve, CONFIDENCE_ALPHA)?,
            tpr_at_fpr: tpr_at_fpr(&curve, &FPRS)?,
            roc: curve,
        });
    }
    Ok(results)
}

/// Runs the attacks on `dataset`; `Ok(false)` when the private model's advantage passes its
/// ceiling or the overfit model fails to show the attack works.
pub fn run(
    dataset: &str,
    quick: bool,
    epsilon: f64,
    data_dir: Option<PathBuf>,
    seed: u64,
    out: &Path,
) -> Result<bool, Box<dyn std::error::Error>> {
    if !(epsilon.is_finite() && epsilon > 0.0) {
        return Err(format!("epsilon = {epsilon:?} must be finite and > 0").into());
    }
    let names: Vec<&str> = if dataset == "all" {
        DATASETS.to_vec()
    } else {
        vec![dataset]
    };
    if let Some(unknown) = names.iter().find(|n| !DATASETS.contains(n)) {
        return Err(format!(
            "unknown dataset {unknown:?}; known: {}, all",
            DATASETS.join(", ")
        )
        .into());
    }
    let files: Vec<String> = names
        .iter()
        .flat_map(|n| {
            [
                format!("mia_{n}.json"),
                format!("mia_{n}.md"),
                format!("mia_{n}_roc.svg"),
            ]
        })
        .collect();
    // Every pool before the output folder: missing data fails without creating it.
    let pools = names
        .iter()
        .map(|&name| pool(name, quick, data_dir.as_deref(), seed))
        .collect::<Result<Vec<_>, _>>()?;
    // A quick run does not replace a full run's report of any of its datasets.
    let earlier = |out: &Path| {
        names
            .iter()
            .filter_map(|name| keep::read_json(&out.join(format!("mia_{name}.json"))))
            .filter_map(|report| report.get("models")?.as_u64())
            .max()
            .map(|models| Holdings::new(models < FULL_MODELS as u64))
    };
    let files: Vec<&str> = files.iter().map(String::as_str).collect();
    let out = keep::destination(out, &files, &Holdings::new(quick), earlier)?;
    let mut all_pass = true;
    for (name, pool) in names.into_iter().zip(pools) {
        let models = if quick { 16 } else { FULL_MODELS };
        let mut rng = InsecureSeededRng::new(seed ^ 0x5eed);
        let memberships: Vec<Vec<bool>> = (0..models)
            .map(|_| {
                (0..pool.len() / 2)
                    .flat_map(|_| {
                        let first = rng.random_range(0.0..1.0) < 0.5;
                        [first, !first]
                    })
                    .collect()
            })
            .collect();
        let families = [
            (
                "objective perturbation, logistic, Λ = 1e-2".to_owned(),
                ErmParams::objective_perturbation(Loss::Logistic, 1e-2, epsilon),
                Some(epsilon),
            ),
            (
                "non-private, logistic, Λ = 1e-6 (overfit on purpose)".to_owned(),
                ErmParams::non_private(Loss::Logistic, 1e-6),
                None,
            ),
        ];
        let progress = ProgressBar::new((2 * models) as u64).with_style(
            ProgressStyle::with_template("{prefix:>9} [{bar:40}] {pos}/{len} models, {elapsed}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        progress.set_prefix(name.to_owned());
        let mut results = Vec::new();
        for (label, params, claimed) in families {
            let margins = margins(&params, &pool, &memberships, seed, &progress)?;
            results.push(ModelResult {
                model: label,
                claimed_epsilon: claimed,
                advantage_ceiling: claimed.map(advantage_ceiling).transpose()?,
                attacks: attacks(&margins, &memberships)?,
            });
        }
        progress.finish_and_clear();
        let (private, overfit) = (&results[0], &results[1]);
        let private_ok = private
            .attacks
            .iter()
            .all(|a| a.advantage_upper_bound <= private.advantage_ceiling.unwrap_or(1.0));
        let attack_works = overfit
            .attacks
            .iter()
            .any(|a| a.advantage >= OVERFIT_ADVANTAGE_FLOOR);
        for result in &results {
            for attack in &result.attacks {
                println!(
                    "{name}: {} — {}: AUC {:.3}, advantage {:.3} (≤ {:.3} at 99.9%){}",
                    result.model,
                    attack.attack,
                    attack.auc,
                    attack.advantage,
                    attack.advantage_upper_bound,
                    result
                        .advantage_ceiling
                        .map_or(String::new(), |c| format!(" (ε-DP ceiling {c:.3})"))
                );
            }
        }
        if !attack_works {
            println!(
                "{name}: the overfit model's best advantage is below {OVERFIT_ADVANTAGE_FLOOR}: the attack is not shown to work on this data"
            );
        }
        let report = Report {
            dataset: name.to_owned(),
            pool_rows: pool.len(),
            features: pool.features(),
            models,
            results,
        };
        out.write(
            &format!("mia_{name}.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
        out.write(&format!("mia_{name}.md"), markdown(&report))?;
        out.write(&format!("mia_{name}_roc.svg"), roc_svg(&report)?)?;
        all_pass &= private_ok && (attack_works || name != "synthetic");
    }
    crate::audit_summary::regenerate(&out)?;
    println!("wrote {}", out.path().display());
    Ok(all_pass)
}

fn markdown(report: &Report) -> String {
    let mut s = format!(
        "# Membership inference: {}\n\n\
         Pool of {} rows ({} features) in pairs; each of {} models trains on one row of every \
         pair (fair coin), so each row is a member of about half the models and neighbouring \
         training sets differ in one record. An ε-DP model caps every attack's advantage \
         TPR − FPR at tanh(ε/2); the upper bound on the advantage holds with confidence 99.9% \
         (DKW, assuming independent trials). TPR values marked * rest on fewer than 10 \
         non-members.\n\n\
         | model | attack | AUC | advantage | upper bound | ε-DP ceiling | TPR at FPR 0.1 | 0.01 | 0.001 |\n\
         |---|---|---|---|---|---|---|---|---|\n",
        report.dataset, report.pool_rows, report.features, report.models
    );
    for result in &report.results {
        for attack in &result.attacks {
            let tprs: Vec<String> = attack
                .tpr_at_fpr
                .iter()
                .map(|t| format!("{:.3}{}", t.tpr, if t.enough_samples { "" } else { "*" }))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {:.3} | {:.3} | {:.3} | {} | {} |",
                result.model,
                attack.attack,
                attack.auc,
                attack.advantage,
                attack.advantage_upper_bound,
                result
                    .advantage_ceiling
                    .map_or("none (not private)".into(), |c| format!("{c:.3}")),
                tprs.join(" | ")
            );
        }
    }
    s
}

fn roc_svg(report: &Report) -> Result<String, Box<dyn std::error::Error>> {
    use crate::reproduce::plot::{Figure, Scale, Series, render};
    let mut figure = Figure {
        title: format!("Membership inference ROC: {}", report.dataset),
        x_label: "false positive rate".into(),
        x_scale: Scale::Linear,
        y_label: "true positive rate".into(),
        y_scale: Scale::Linear,
        series: Vec::new(),
        subtitle: None,
        dodge: false,
    };
    figure.push(Series::line(
        "chance (AUC 0.5)",
        vec![(0.0, 0.0), (1.0, 1.0)],
    ));
    for result in &report.results {
        for attack in &result.attacks {
            figure.push(Series::line(
                format!(
                    "{}: {} (AUC {:.2})",
                    short(&result.model),
                    attack.attack,
                    attack.auc
                ),
                attack.roc.points.clone(),
            ));
        }
    }
    Ok(render(&figure)?.ok_or("no ROC point to draw")?)
}

fn short(model: &str) -> &str {
    model.split(',').next().unwrap_or(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("xtask-mia-{name}-{}", std::process::id()))
    }

    /// The attack works on the overfit model (advantage ≥ the stated floor) and stays under
    /// the ε-DP ceiling on the private one.
    #[test]
    fn synthetic_attack_shows_the_overfit_leak_and_respects_the_ceiling() {
        let out = scratch("synthetic");
        assert!(run("synthetic", true, 1.0, None, 7, &out).unwrap());
        let report = std::fs::read_to_string(out.join("mia_synthetic.json")).unwrap();
        assert!(report.contains("likelihood ratio"));
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn rejects_unknown_datasets_and_missing_data() {
        let err = run("adlt", true, 1.0, None, 1, &scratch("unknown")).unwrap_err();
        assert!(err.to_string().contains("adult"), "{err}");
        let empty = scratch("empty-data");
        std::fs::create_dir_all(&empty).unwrap();
        let out = scratch("missing");
        let err = run("adult", true, 1.0, Some(empty.clone()), 1, &out).unwrap_err();
        assert!(err.to_string().contains("adult.data"), "{err}");
        assert!(!out.exists(), "no output folder is left behind");
        std::fs::remove_dir_all(&empty).unwrap();
        assert!(run("synthetic", true, f64::NAN, None, 1, &scratch("nan")).is_err());
    }
}
