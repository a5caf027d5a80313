//! `cargo xtask reproduce`: the papers' experiments, end to end, beside the published numbers.

mod fetch;
mod index;
mod kernel;
mod linear;
pub(crate) mod plot;
mod predict;
mod preflight;
mod published;
mod regression;
mod report;
mod tuning;
mod utility;

use std::path::{Path, PathBuf};
use std::time::Instant;

use dp_datasets::{
    ADULT_FILES, DataDir, DataFile, Dataset, KDD_FILES, Scaling, load_adult, load_kddcup99,
};
use serde::Serialize;

use crate::keep::{self, Holdings};
use crate::safe_write::{OutDir, PathError};

pub use fetch::{WHAT_TO_DO, ensure_data};
pub use index::{INDEX_FILE, RunEntry, regenerate as regenerate_index};
use linear::{Cell, Experiment, Method};
use preflight::{check_data, origin};
use published::{ADULT_BY_LAMBDA, ADULT_EPSILONS, BEST_ERRORS, KDD_BY_LAMBDA, KDD_EPSILONS};

/// Runs the private-prediction experiments (`reproduce predict`): see `predict.rs`.
pub fn predict(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    predict::run(options)
}

/// How an experiment that wrote its results ended.
pub struct Finished {
    /// Whether every sanity bound held.
    pub sane: bool,
    /// Where the results went: the experiment's folder, or a subfolder of it when the
    /// results already there hold more than this run (see `keep`).
    pub folder: PathBuf,
    /// A part of the experiment that could not run (its data files missing), to be named
    /// among the experiments that could not run.
    pub not_run: Option<&'static str>,
}

impl Finished {
    fn complete(sane: bool, out: &OutDir) -> Self {
        Self {
            sane,
            folder: out.path().to_path_buf(),
            not_run: None,
        }
    }
}

/// The folder for `experiment`'s results under `--out`: its own folder, unless the results
/// there hold more than a run holding `this` (a full run under a quick one, predict's
/// real-data part under a run without it); then a subfolder, announced (see `keep`).
fn experiment_folder(
    options: &Options,
    experiment: &str,
    files: &[&str],
    this: &Holdings,
    earlier: fn(&Path) -> Option<Holdings>,
) -> Result<OutDir, PathError> {
    let folder = options.out.join(experiment);
    keep::destination(&folder, files, this, earlier)
}

/// The mode of the results in `folder`, from their `run.json`, or from `cells.json` for
/// results of versions that wrote no `run.json`.
fn recorded_mode(folder: &Path) -> Option<Holdings> {
    keep::recorded_mode(folder, &[index::RUN_FILE, "cells.json"])
}

/// Options shared by every experiment.
pub struct Options {
    pub quick: bool,
    pub data_dir: Option<PathBuf>,
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

/// The files the linear experiments write, in `<out>/linear`.
const LINEAR_FILES: [&str; 7] = [
    "cells.json",
    "cells.csv",
    "summary.md",
    "fig3a_adult_error_vs_lambda.svg",
    "fig1a_adult_error_vs_epsilon.svg",
    "fig3b_kdd_error_vs_lambda.svg",
    "fig1b_kdd_error_vs_epsilon.svg",
];

/// Where the results of a linear run in progress go until every dataset has finished, so
/// that an interrupted run keeps what it finished without replacing a complete earlier run
/// (not `keep`'s `partial/`, which holds a finished run that lacks a part).
pub(crate) const UNFINISHED_FOLDER: &str = "unfinished";

/// `cargo xtask reproduce tuning` (Figure 1(d), 1(e); the cost of private tuning on Adult).
pub use tuning::run as tuning;

/// `cargo xtask reproduce utility` (the utility study: ablation, Λ rule, end to end).
pub use utility::run as utility;

/// `cargo xtask reproduce regression` (the regression study, in the bench environment).
pub use regression::run as regression;

pub(crate) type Loader = fn(&DataDir, u64) -> Result<Dataset, dp_datasets::DatasetError>;

/// Runs the linear experiments; `Ok(false)` when a sanity bound is broken.
///
/// Every path is checked before any work: the data directory must exist and hold every
/// requested experiment's files with their published checksums, and the output folder
/// must accept files. Results replace the old ones only when every experiment finished.
pub fn linear(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let dir = DataDir::resolve(options.data_dir.as_deref());
    dir.check_folder()
        .map_err(|e| format!("{e} (data directory taken from {})", origin(options)))?;
    // `--out` itself first, so that an error names the folder the user gave.
    OutDir::prepare(&options.out, &[])?;
    let experiments: [(Experiment, &[DataFile], Loader); 2] = [
        (linear::adult_experiment(), &ADULT_FILES, |dir, _| {
            load_adult(dir, Scaling::PaperColumnMax)
        }),
        (linear::kdd_experiment(), &KDD_FILES, |dir, seed| {
            let full = load_kddcup99(dir)?;
            let keep = &linear::shuffled(full.len(), seed)[..KDD_SUBSET.min(full.len())];
            Ok(Dataset {
                rows: keep.iter().map(|&i| full.rows[i].clone()).collect(),
                labels: keep.iter().map(|&i| full.labels[i]).collect(),
                ..full
            })
        }),
    ];
    check_data(&dir, &experiments, options)?;
    let this = Holdings::new(options.quick);
    let out = experiment_folder(options, "linear", &LINEAR_FILES, &this, recorded_mode)?;
    let unfinished = OutDir::prepare(&out.path().join(UNFINISHED_FOLDER), &LINEAR_FILES)?;
    let (folds, draws) = if options.quick { (3, 2) } else { (10, 50) };
    let mut cells: Vec<Cell> = Vec::new();
    let mut records = Vec::new();
    let last = experiments.len() - 1;
    let run_all = || -> Result<(), Box<dyn std::error::Error>> {
        for (k, (experiment, _, load)) in experiments.into_iter().enumerate() {
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
            if k < last {
                // A long run that stops keeps what it finished, beside the earlier results.
                let run = Run::new(options, folds, draws, &records, &cells, start);
                let _replacing = crate::interrupt::defer();
                write_outputs(
                    &unfinished,
                    &run,
                    "unfinished: later datasets still running",
                )?;
            }
        }
        Ok(())
    };
    if let Err(e) = run_all() {
        // Only removes the folder if nothing was finished into it.
        let _ = std::fs::remove_dir(unfinished.path());
        let finished = if unfinished.path().exists() {
            format!("; finished datasets are in {}", unfinished.path().display())
        } else {
            String::new()
        };
        return Err(format!(
            "{e}\nthe run stopped; earlier results in {} are untouched{finished}",
            out.path().display()
        )
        .into());
    }
    let run = Run::new(options, folds, draws, &records, &cells, start);
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    write_outputs(&out, &run, "complete")?;
    if unfinished.path().exists() {
        std::fs::remove_dir_all(unfinished.path()).map_err(PathError::on(
            "remove the unfinished results",
            unfinished.path(),
        ))?;
    }
    linear_entry(&cells, options.quick, start).write(&out)?;
    drop(replacing);
    let ok = sanity_checks(&cells);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, figures) in {:.1} s",
        out.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Finished::complete(ok, &out))
}

/// What one run has produced so far, as recorded in cells.json.
struct Run<'a> {
    record: RunRecord<'a>,
}

impl<'a> Run<'a> {
    fn new(
        options: &Options,
        folds: usize,
        draws: usize,
        records: &'a [DatasetRecord],
        cells: &'a [Cell],
        start: Instant,
    ) -> Self {
        let mode = if options.quick {
            "quick"
        } else {
            "full (paper protocol)"
        };
        Self {
            record: RunRecord {
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
            },
        }
    }
}

/// Writes cells.json, cells.csv, summary.md and the figures into `out`, each atomically.
fn write_outputs(
    out: &OutDir,
    run: &Run<'_>,
    status: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let record = &run.record;
    out.write("cells.json", serde_json::to_string_pretty(record)?)?;
    out.write("cells.csv", report::csv(record.cells))?;
    let header = header(record, status);
    out.write("summary.md", report::markdown(record.cells, &header))?;
    figures(out, record)
}

fn header(record: &RunRecord<'_>, status: &str) -> String {
    let mut s = format!(
        "Run {status}. Mode: {}; {} folds of cross-validation, {} noise draws per private cell ({} for the \
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
    s += &format!(
        "Figures 1(a) and 1(b) draw ε ∈ {:?}; the ε values the tables do not need use a fifth \
         of the noise draws, at least 1 and at most {} per fold (see `fits` in cells.csv).\n\n",
        linear::FIGURE1_EPSILONS,
        linear::FIGURE1_DRAWS
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
    s
}

/// The linear figures. A quick run's keep the published points (the quick protocol differs
/// only in folds and noise draws, on the papers' data), with error bars and a subtitle
/// saying how little stands behind each point (`fits` in cells.csv).
fn figures(out: &OutDir, record: &RunRecord<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let cells = record.cells;
    let quick = record.mode == "quick";
    let subtitle = quick.then(|| {
        plot::quick_subtitle(
            &format!(
                "{} folds × ≤ {} noise draws",
                record.folds, record.noise_draws
            ),
            None,
        )
    });
    let subtitle = subtitle.as_deref();
    let has = |dataset: &str| cells.iter().any(|c| c.dataset == dataset);
    if has("adult") {
        let published: Vec<(f64, Vec<f64>)> = ADULT_BY_LAMBDA
            .iter()
            .map(|(l, row)| (*l, row.to_vec()))
            .collect();
        let lambdas: Vec<f64> = ADULT_BY_LAMBDA.iter().map(|r| r.0).collect();
        plot::error_versus_lambda(
            out,
            LINEAR_FILES[3],
            cells,
            "adult",
            &lambdas,
            &ADULT_EPSILONS,
            &published,
            false,
            subtitle,
        )?;
        plot::error_versus_epsilon(out, LINEAR_FILES[4], cells, "adult", subtitle)?;
    }
    if has("kddcup99") {
        let published: Vec<(f64, Vec<f64>)> = KDD_BY_LAMBDA
            .iter()
            .map(|(l, row)| (*l, row.to_vec()))
            .collect();
        let lambdas: Vec<f64> = KDD_BY_LAMBDA.iter().map(|r| r.0).collect();
        plot::error_versus_lambda(
            out,
            LINEAR_FILES[5],
            cells,
            "kddcup99",
            &lambdas,
            &KDD_EPSILONS,
            &published,
            true,
            subtitle,
        )?;
        plot::error_versus_epsilon(out, LINEAR_FILES[6], cells, "kddcup99", subtitle)?;
    }
    Ok(())
}

/// The index entry: best error over Λ of the paper's methods at ε = 0.1 (and non-private),
/// beside Figure 2a.
fn linear_entry(cells: &[Cell], quick: bool, start: Instant) -> RunEntry {
    let mut entry = RunEntry::new(
        "linear",
        "linear classifiers on Adult and KDDCup99 (SVM paper, Figures 1a, 1b, 2a, 3)",
        quick,
        start,
    );
    for (label, dataset, epsilon, published) in BEST_ERRORS {
        if epsilon.is_some_and(|e| e != 0.1) {
            continue;
        }
        let Some(method) = Method::ALL.into_iter().find(|m| m.label() == label) else {
            continue;
        };
        let what = match epsilon {
            Some(e) => format!("{dataset}, {label}, ε = {e} (best over Λ)"),
            None => format!("{dataset}, {label} (best over Λ)"),
        };
        let measured =
            report::best_over_lambda(cells, dataset, method, epsilon).map_or(f64::NAN, |b| b.0);
        entry = entry.headline(&what, measured, Some(published));
    }
    entry
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
            "SANITY FAILED: best objective-perturbation Adult error at ε = 0.2 is {objective:?} ≥ 0.2478 (trivial)"
        );
        ok = false;
    }
    ok
}

#[derive(Serialize)]
struct KernelRecord<'a> {
    experiment: &'a str,
    mode: &'a str,
    seed: u64,
    crate_version: &'a str,
    /// Random features used for Figures 2(b), 1(c) and 1(f) (chosen by the sweep).
    features: usize,
    wall_seconds: f64,
    cells: &'a [kernel::KernelCell],
}

/// Runs the kernel experiments (synthetic: no data files); `Ok(false)` when a sanity bound
/// is broken. The output folder is checked first; files are replaced only at the end.
pub fn kernel(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    OutDir::prepare(&options.out, &[])?;
    let this = Holdings::new(options.quick);
    let out = experiment_folder(
        options,
        "kernel",
        &kernel::KERNEL_FILES,
        &this,
        recorded_mode,
    )?;
    crate::interrupt::pause_point("computing", None);
    let (cells, chosen) = kernel::run(options.quick, options.seed)?;
    let mode = if options.quick { "quick" } else { "full" };
    let record = KernelRecord {
        experiment: "kernel",
        mode,
        seed: options.seed,
        crate_version: env!("CARGO_PKG_VERSION"),
        features: chosen,
        wall_seconds: start.elapsed().as_secs_f64(),
        cells: &cells,
    };
    let header = format!(
        "Run complete. Mode: {mode}; seed {}; dp-ml {}; wall time {:.1} s on this machine.\n",
        options.seed,
        env!("CARGO_PKG_VERSION"),
        record.wall_seconds
    );
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    out.write("cells.json", serde_json::to_string_pretty(&record)?)?;
    crate::interrupt::pause_point("replacing", Some(std::time::Duration::from_secs(2)));
    out.write("cells.csv", kernel::csv(&cells))?;
    out.write("summary.md", kernel::markdown(&cells, chosen, &header))?;
    let notes = kernel::figures(&out, &cells, options.quick)?;
    kernel::entry(&cells, options.quick, start)
        .notes(notes)
        .write(&out)?;
    drop(replacing);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, figures) in {:.1} s",
        out.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Finished::complete(kernel::sanity(&cells), &out))
}
