//! `cargo xtask reproduce`: the papers' experiments, end to end, beside the published numbers.

mod linear;
mod plot;
mod published;
mod report;

use std::path::{Path, PathBuf};
use std::time::Instant;

use dp_datasets::{
    ADULT_FILES, DataDir, DataFile, Dataset, HOW_TO_GET, KDD_FILES, Scaling, load_adult,
    load_kddcup99,
};
use serde::Serialize;

use linear::{Cell, Experiment, Method};
use published::{ADULT_BY_LAMBDA, ADULT_EPSILONS, KDD_BY_LAMBDA, KDD_EPSILONS};

/// Options shared by every experiment.
pub struct Options {
    pub quick: bool,
    pub data_dir: Option<PathBuf>,
    pub require_data: bool,
    pub out: PathBuf,
    pub seed: u64,
}

/// Rows of KDD used by the linear experiments (a random subset, as in the paper).
const KDD_SUBSET: usize = 60_000;

#[derive(Serialize)]
struct RunRecord<'a> {
    experiment: &'a str,
    mode: &'a str,
    folds: usize,
    noise_draws: usize,
    /// Noise draws per cell of the not-private SCM09 diagnostic.
    diagnostic_noise_draws: usize,
    seed: u64,
    crate_version: &'a str,
    datasets: &'a [DatasetRecord],
    /// Since the start of the run, including loading the data.
    wall_seconds: f64,
    cells: &'a [Cell],
}

#[derive(Serialize)]
struct DatasetRecord {
    name: String,
    rows: usize,
    features: usize,
    checksums: Vec<(String, String)>,
    seconds: f64,
}

/// Runs the linear experiments; `Ok(false)` when a sanity bound is broken.
pub fn linear(options: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let dir = DataDir::resolve(options.data_dir.as_deref());
    let (folds, draws) = if options.quick { (3, 2) } else { (10, 50) };
    let mut cells: Vec<Cell> = Vec::new();
    let mut records = Vec::new();
    let mut skipped = Vec::new();
    type Loader = fn(&DataDir, u64) -> Result<Dataset, dp_datasets::DatasetError>;
    let experiments: [(Experiment, &[DataFile], Loader); 2] = [
        (linear::adult_experiment(), &ADULT_FILES, |dir, _| {
            load_adult(dir, Scaling::PaperColumnMax)
        }),
        (linear::kdd_experiment(), &KDD_FILES, |dir, seed| {
            let full = load_kddcup99(dir)?;
            let keep = &linear::shuffled(full.len(), seed)[..KDD_SUBSET];
            Ok(Dataset {
                rows: keep.iter().map(|&i| full.rows[i].clone()).collect(),
                labels: keep.iter().map(|&i| full.labels[i]).collect(),
                ..full
            })
        }),
    ];
    for (experiment, files, load) in experiments {
        if !dir.has_all(files) {
            let message = format!(
                "skipped {}: data files missing in {}; {HOW_TO_GET}",
                experiment.name,
                dir.path().display()
            );
            if options.require_data {
                return Err(message.into());
            }
            eprintln!("{message}");
            skipped.push(experiment.name);
            continue;
        }
        let started = Instant::now();
        let data = load(&dir, options.seed)?;
        eprintln!(
            "{}: {} rows, {} features; {folds} folds × {draws} noise draws",
            experiment.name,
            data.len(),
            data.features()
        );
        cells.extend(linear::run(&experiment, &data, folds, draws, options.seed)?);
        let seconds = started.elapsed().as_secs_f64();
        eprintln!("{}: done in {seconds:.1} s", experiment.name);
        records.push(DatasetRecord {
            name: data.name.clone(),
            rows: data.len(),
            features: data.features(),
            checksums: data.checksums.clone(),
            seconds,
        });
        // Written after each dataset, so a long run that stops keeps what it finished.
        write_outputs(options, folds, draws, &records, &cells, &skipped, start)?;
    }
    write_outputs(options, folds, draws, &records, &cells, &skipped, start)?;
    let ok = sanity_checks(&cells);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, figures) in {:.1} s",
        options.out.join("linear").display(),
        start.elapsed().as_secs_f64()
    );
    Ok(ok)
}

/// Writes cells.json, cells.csv, summary.md and the figures for the datasets done so far.
fn write_outputs(
    options: &Options,
    folds: usize,
    draws: usize,
    records: &[DatasetRecord],
    cells: &[Cell],
    skipped: &[&str],
    start: Instant,
) -> Result<(), Box<dyn std::error::Error>> {
    let out = options.out.join("linear");
    std::fs::create_dir_all(&out)?;
    let mode = if options.quick {
        "quick"
    } else {
        "full (paper protocol)"
    };
    let record = RunRecord {
        experiment: "linear",
        mode,
        folds,
        noise_draws: draws,
        diagnostic_noise_draws: draws.min(linear::DIAGNOSTIC_DRAWS),
        seed: options.seed,
        crate_version: env!("CARGO_PKG_VERSION"),
        datasets: records,
        wall_seconds: start.elapsed().as_secs_f64(),
        cells,
    };
    std::fs::write(
        out.join("cells.json"),
        serde_json::to_string_pretty(&record)?,
    )?;
    std::fs::write(out.join("cells.csv"), report::csv(cells))?;
    let header = header(&record, skipped);
    std::fs::write(out.join("summary.md"), report::markdown(cells, &header))?;
    figures(&out, cells)
}

fn header(record: &RunRecord<'_>, skipped: &[&str]) -> String {
    let mut s = format!(
        "Mode: {}; {} folds of cross-validation, {} noise draws per private cell ({} for the \
         not-private SCM09 diagnostic, run at Λ ≥ {:.0e}); seed {}; dp-ml {}; wall time {:.1} s \
         on this machine (loading included).\n\n",
        record.mode,
        record.folds,
        record.noise_draws,
        record.diagnostic_noise_draws,
        linear::DIAGNOSTIC_MIN_LAMBDA,
        record.seed,
        record.crate_version,
        record.wall_seconds
    );
    for d in record.datasets {
        s += &format!(
            "- {}: {} rows, {} features, {:.1} s; ",
            d.name, d.rows, d.features, d.seconds
        );
        s += &d
            .checksums
            .iter()
            .map(|(f, h)| format!("{f} sha256 {h}"))
            .collect::<Vec<_>>()
            .join(", ");
        s += "\n";
    }
    for name in skipped {
        s += &format!("- {name}: **skipped** (data files missing; `cargo xtask datasets fetch`)\n");
    }
    s
}

fn figures(out: &Path, cells: &[Cell]) -> Result<(), Box<dyn std::error::Error>> {
    let has = |dataset: &str| cells.iter().any(|c| c.dataset == dataset);
    if has("adult") {
        let published: Vec<(f64, Vec<f64>)> = ADULT_BY_LAMBDA
            .iter()
            .map(|(l, row)| (*l, row[1..].to_vec()))
            .collect();
        let lambdas: Vec<f64> = ADULT_BY_LAMBDA.iter().map(|r| r.0).collect();
        plot::error_versus_lambda(
            &out.join("fig3a_adult_error_vs_lambda.svg"),
            cells,
            "adult",
            &lambdas,
            &ADULT_EPSILONS,
            &published,
        )?;
        plot::error_versus_epsilon(
            &out.join("fig1a_adult_error_vs_epsilon.svg"),
            cells,
            "adult",
            &ADULT_EPSILONS,
        )?;
    }
    if has("kddcup99") {
        let published: Vec<(f64, Vec<f64>)> = KDD_BY_LAMBDA
            .iter()
            .map(|(l, row)| (*l, vec![row[1], row[3], row[5]]))
            .collect();
        let lambdas: Vec<f64> = KDD_BY_LAMBDA.iter().map(|r| r.0).collect();
        plot::error_versus_lambda(
            &out.join("fig3b_kdd_error_vs_lambda.svg"),
            cells,
            "kddcup99",
            &lambdas,
            &KDD_EPSILONS,
            &published,
        )?;
        plot::error_versus_epsilon(
            &out.join("fig1b_kdd_error_vs_epsilon.svg"),
            cells,
            "kddcup99",
            &KDD_EPSILONS,
        )?;
    }
    Ok(())
}

/// The bounds CI enforces on Adult: best non-private error over Λ ≤ 0.17, and best
/// objective-perturbation error at ε = 0.2 below the trivial 0.2478.
fn sanity_checks(cells: &[Cell]) -> bool {
    if !cells.iter().any(|c| c.dataset == "adult") {
        return true;
    }
    let mut ok = true;
    let non_private =
        report::best_over_lambda(cells, "adult", Method::NonPrivateSvm, None).map(|b| b.0);
    if !non_private.is_some_and(|e| e <= 0.17) {
        eprintln!("SANITY FAILED: best non-private Adult error {non_private:?} > 0.17");
        ok = false;
    }
    let objective = [Method::ObjectiveSvm, Method::ObjectiveLogistic]
        .iter()
        .filter_map(|&m| report::best_over_lambda(cells, "adult", m, Some(0.2)).map(|b| b.0))
        .fold(f64::INFINITY, f64::min);
    if objective >= 0.2478 {
        eprintln!(
            "SANITY FAILED: best objective-perturbation Adult error at ε = 0.2 is {objective} ≥ 0.2478 (trivial)"
        );
        ok = false;
    }
    ok
}
