//! `cargo xtask reproduce tuning`: the SVM paper's learning curves with Λ chosen privately
//! (Figure 1(d), 1(e)) by dp-tune's split-and-select and random stopping, and on Adult the
//! honest cost of tuning: end-to-end private error of each tuning method beside the "best
//! Λ in hindsight" number the linear tables report.

mod output;

use std::time::Instant;

use dp_datasets::{
    ADULT_FILES, DataDir, DataFile, Dataset, KDD_FILES, Scaling, load_adult, load_kddcup99,
};
use dp_erm::{Classifier, ErmError, ErmParams, Examples, Loss, ObjectiveCalibration};
use dp_noise::InsecureSeededRng;
use dp_tune::{RandomStopping, SplitAndSelect, TuneError};
use rayon::prelude::*;
use serde::Serialize;

use super::linear::shuffled;
use super::preflight::origin;
use super::{Finished, Options};
use crate::keep::Holdings;
use crate::safe_write::OutDir;

/// The paper's 7 candidate values of Λ (docs/src/reference/experiments.md, the KDD grid), fixed before data.
pub const LAMBDAS: [f64; 7] = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7];
/// Figure 1(d) and 1(e).
pub const KDD_EPSILONS: [f64; 2] = [0.05, 0.005];
/// The Adult tuning-cost table.
pub const ADULT_EPSILONS: [f64; 5] = [0.05, 0.1, 0.2, 0.5, 1.0];
/// Random stopping's γ: expected runs 1/γ = 14, twice the number of candidates (a given
/// candidate is then never drawn with probability G(6/7) ≈ 0.30; each further doubling
/// of the runs costs as many trainings for a smaller gain).
pub const STOP_PROBABILITY: f64 = 1.0 / 14.0;
/// Share of KDD held out as the test set of the learning curves.
const KDD_TEST_SHARE: f64 = 0.1;

/// The learning methods, as in the linear experiments (Huber width 0.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Method {
    NonPrivateSvm,
    OutputSvm,
    ObjectiveLogistic,
    ObjectiveSvm,
}

impl Method {
    pub const PRIVATE: [Method; 3] = [Self::ObjectiveSvm, Self::ObjectiveLogistic, Self::OutputSvm];

    pub fn label(self) -> &'static str {
        match self {
            Self::NonPrivateSvm => "non-private Huber SVM",
            Self::OutputSvm => "output perturbation Huber SVM",
            Self::ObjectiveLogistic => "objective perturbation logistic",
            Self::ObjectiveSvm => "objective perturbation Huber SVM",
        }
    }

    /// The papers' calibration rule throughout, as in `reproduce linear`.
    fn params(self, lambda: f64, epsilon: f64) -> ErmParams {
        let huber = Loss::huber(0.5).expect("0.5 is a valid Huber width");
        let paper_rule = |loss| {
            ErmParams::objective_perturbation(loss, lambda, epsilon)
                .objective_calibration(ObjectiveCalibration::Cms11)
        };
        match self {
            Self::NonPrivateSvm => ErmParams::non_private(huber, lambda),
            Self::OutputSvm => ErmParams::output_perturbation(huber, lambda, epsilon),
            Self::ObjectiveLogistic => paper_rule(Loss::Logistic),
            Self::ObjectiveSvm => paper_rule(huber),
        }
    }
}

/// How Λ was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Tuning {
    /// Non-private: 7/8 of the training rows fit each Λ, the other 1/8 picks the best.
    NonPrivateValidation,
    /// dp-tune's split-and-select at ε (candidates at ε, selection at ε): ε end to end.
    SplitAndSelect,
    /// dp-tune's random stopping at total ε (candidates and scores at ε/3).
    RandomStopping,
    /// Every Λ trained at ε on all training rows, the best mean test error reported: what
    /// the published tables do. **Not private** (the choice looks at the test results).
    BestInHindsight,
}

impl Tuning {
    pub fn label(self) -> &'static str {
        match self {
            Self::NonPrivateValidation => "non-private validation",
            Self::SplitAndSelect => "split-and-select (private)",
            Self::RandomStopping => "random stopping (private)",
            Self::BestInHindsight => "best Λ in hindsight (NOT private)",
        }
    }
}

/// One result: a method tuned one way at one ε and training-set size, over repetitions.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub dataset: &'static str,
    pub figure: &'static str,
    pub method: Method,
    pub method_label: &'static str,
    pub tuning: Tuning,
    pub tuning_label: &'static str,
    /// End-to-end ε (None: non-private).
    pub epsilon: Option<f64>,
    pub training_rows: usize,
    pub mean_error: f64,
    pub std_error: f64,
    /// Selections (or, for hindsight, noise draws per Λ) that produced a model.
    pub repetitions: usize,
    /// Selections refused by the library (a candidate's solver could not certify).
    pub refusals: usize,
    /// Mean models trained per selection.
    pub mean_trainings: f64,
    /// How often each Λ of [`LAMBDAS`] was chosen.
    pub chosen: [usize; 7],
    pub cpu_seconds: f64,
}

/// What one selection produced.
struct Outcome {
    /// Test error per model reported: one for a selection, one per Λ for hindsight.
    errors: Vec<Option<f64>>,
    chosen: Option<usize>,
    trainings: usize,
    seconds: f64,
}

/// One unit of work: a method, a tuning rule and an ε on one training set.
#[derive(Clone, Copy)]
struct Job {
    method: Method,
    tuning: Tuning,
    epsilon: Option<f64>,
    seed: u64,
}

fn test_error<M: Classifier>(model: &M, test: &Examples) -> Result<f64, ErmError> {
    Ok(model.mistakes(test)? as f64 / test.len() as f64)
}

/// Runs `job` on `train`, tests on `test`. A selection the library refuses because a
/// candidate's solver could not certify its tolerance is counted, not fatal.
fn run_job(
    job: Job,
    train: &Examples,
    test: &Examples,
) -> Result<Outcome, Box<dyn std::error::Error + Send + Sync>> {
    let started = Instant::now();
    let mut rng = InsecureSeededRng::new(job.seed);
    let epsilon = job.epsilon.unwrap_or(1.0);
    let candidates = |epsilon: f64| -> Vec<ErmParams> {
        LAMBDAS
            .iter()
            .map(|&l| job.method.params(l, epsilon))
            .collect()
    };
    let refused = |e: &TuneError| {
        matches!(e, TuneError::Training { source, .. }
            if matches!(source.downcast_ref::<ErmError>(), Some(ErmError::NotConverged)))
    };
    let (errors, chosen, trainings) = match job.tuning {
        Tuning::SplitAndSelect => {
            match SplitAndSelect::new(candidates(epsilon), epsilon)?.select(train, &mut rng) {
                Ok(s) => (
                    vec![Some(test_error(s.model(), test)?)],
                    Some(s.index()),
                    LAMBDAS.len(),
                ),
                Err(e) if refused(&e) => (vec![None], None, LAMBDAS.len()),
                Err(e) => return Err(e.into()),
            }
        }
        Tuning::RandomStopping => {
            let third = epsilon / 3.0;
            let tuning = RandomStopping::new(candidates(third), third, STOP_PROBABILITY)?;
            match tuning.select(train, &mut rng) {
                Ok(s) => (
                    vec![Some(test_error(s.model(), test)?)],
                    Some(s.index()),
                    s.secret_runs(),
                ),
                Err(e) if refused(&e) => (vec![None], None, 0),
                Err(e) => return Err(e.into()),
            }
        }
        Tuning::BestInHindsight => {
            let mut errors = Vec::new();
            for params in candidates(epsilon) {
                errors.push(match dp_erm::Trainer::train(&params, train, &mut rng) {
                    Ok(model) => Some(test_error(&model, test)?),
                    Err(ErmError::NotConverged) => None,
                    Err(e) => return Err(e.into()),
                });
            }
            (errors, None, LAMBDAS.len())
        }
        Tuning::NonPrivateValidation => {
            let order = shuffled(train.len(), job.seed);
            let cut = train.len() / 8;
            let validation = train.select(&order[..cut])?;
            let fitting = train.select(&order[cut..])?;
            let mut best: Option<(usize, f64, f64)> = None;
            for (k, &lambda) in LAMBDAS.iter().enumerate() {
                let model = dp_erm::Trainer::train(
                    &Method::NonPrivateSvm.params(lambda, 1.0),
                    &fitting,
                    &mut rng,
                )?;
                let validation_error = test_error(&model, &validation)?;
                if best.is_none_or(|b| validation_error < b.1) {
                    best = Some((k, validation_error, test_error(&model, test)?));
                }
            }
            let (k, _, error) = best.expect("7 candidates");
            (vec![Some(error)], Some(k), LAMBDAS.len())
        }
    };
    Ok(Outcome {
        errors,
        chosen,
        trainings,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The jobs of one training set: every private method × tuning × ε, and the non-private
/// baseline (`hindsight` adds the best-Λ-in-hindsight rows).
fn jobs(epsilons: &[f64], hindsight: bool, seed: u64) -> Vec<Job> {
    let mut jobs = vec![Job {
        method: Method::NonPrivateSvm,
        tuning: Tuning::NonPrivateValidation,
        epsilon: None,
        seed,
    }];
    if hindsight {
        jobs.push(Job {
            method: Method::NonPrivateSvm,
            tuning: Tuning::BestInHindsight,
            epsilon: None,
            seed,
        });
    }
    let mut tunings = vec![Tuning::RandomStopping, Tuning::SplitAndSelect];
    if hindsight {
        tunings.push(Tuning::BestInHindsight);
    }
    for &epsilon in epsilons {
        for method in Method::PRIVATE {
            for &tuning in &tunings {
                let k = jobs.len() as u64;
                jobs.push(Job {
                    method,
                    tuning,
                    epsilon: Some(epsilon),
                    seed: seed ^ k.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                });
            }
        }
    }
    jobs
}

/// Results keyed by (method, tuning, ε, rows), accumulated over repetitions.
#[derive(Default)]
struct Tally {
    /// Per reported model slot (one, or one per Λ): errors over repetitions.
    errors: Vec<Vec<f64>>,
    refusals: usize,
    chosen: [usize; 7],
    trainings: usize,
    runs: usize,
    seconds: f64,
}

type Key = (Method, Tuning, Option<u64>, usize);

fn record(
    tallies: &mut std::collections::BTreeMap<Key, Tally>,
    job: &Job,
    rows: usize,
    outcome: Outcome,
) {
    let tally = tallies
        .entry((job.method, job.tuning, job.epsilon.map(f64::to_bits), rows))
        .or_default();
    if tally.errors.is_empty() {
        tally.errors = vec![Vec::new(); outcome.errors.len()];
    }
    for (slot, error) in tally.errors.iter_mut().zip(&outcome.errors) {
        match error {
            Some(e) => slot.push(*e),
            None => tally.refusals += 1,
        }
    }
    if let Some(k) = outcome.chosen {
        tally.chosen[k] += 1;
    }
    tally.trainings += outcome.trainings;
    tally.runs += 1;
    tally.seconds += outcome.seconds;
}

fn mean_std(errors: &[f64]) -> (f64, f64) {
    let mean = errors.iter().sum::<f64>() / errors.len().max(1) as f64;
    let variance = errors.iter().map(|e| (e - mean).powi(2)).sum::<f64>()
        / errors.len().max(2).saturating_sub(1) as f64;
    (mean, variance.sqrt())
}

fn cells(
    dataset: &'static str,
    figure: &'static str,
    tallies: std::collections::BTreeMap<Key, Tally>,
) -> Vec<Cell> {
    tallies
        .into_iter()
        .map(|((method, tuning, epsilon, rows), tally)| {
            // Hindsight: the Λ whose mean test error is lowest (what the tables report).
            let (slot, (mean, std)) = tally
                .errors
                .iter()
                .map(|e| mean_std(e))
                .enumerate()
                .filter(|(k, _)| !tally.errors[*k].is_empty())
                .min_by(|a, b| a.1.0.total_cmp(&b.1.0))
                .unwrap_or((0, (f64::NAN, f64::NAN)));
            let mut chosen = tally.chosen;
            if tuning == Tuning::BestInHindsight {
                chosen[slot] = tally.errors[slot].len();
            }
            Cell {
                dataset,
                figure,
                method,
                method_label: method.label(),
                tuning,
                tuning_label: tuning.label(),
                epsilon: epsilon.map(f64::from_bits),
                training_rows: rows,
                mean_error: mean,
                std_error: std,
                repetitions: tally.errors.get(slot).map_or(0, Vec::len),
                refusals: tally.refusals,
                mean_trainings: tally.trainings as f64 / tally.runs.max(1) as f64,
                chosen,
                cpu_seconds: tally.seconds,
            }
        })
        .collect()
}

/// Runs `jobs` on one training set, in parallel, largest first.
fn run_jobs(
    jobs: &[Job],
    train: &Examples,
    test: &Examples,
) -> Result<Vec<(Job, Outcome)>, Box<dyn std::error::Error>> {
    let results: Vec<_> = jobs
        .par_iter()
        .map(|&job| run_job(job, train, test).map(|o| (job, o)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    Ok(results)
}

/// The rows at `indices` as examples (clipped into the unit ball, as every experiment).
fn examples(data: &Dataset, indices: &[usize]) -> Result<Examples, Box<dyn std::error::Error>> {
    Ok(data.training_set(indices)?.to_examples())
}

/// Figure 1(d), 1(e): KDD error versus training-set size at each ε of [`KDD_EPSILONS`].
fn kdd_learning_curves(
    data: &Dataset,
    quick: bool,
    seed: u64,
) -> Result<Vec<Cell>, Box<dyn std::error::Error>> {
    let order = shuffled(data.len(), seed);
    let test_rows = (data.len() as f64 * KDD_TEST_SHARE) as usize;
    let test = examples(data, &order[..test_rows])?;
    let pool = &order[test_rows..];
    let (sizes, repetitions): (Vec<usize>, usize) = if quick {
        (vec![20_000, 100_000], 1)
    } else {
        (
            vec![5_000, 10_000, 20_000, 50_000, 100_000, 200_000, pool.len()],
            3,
        )
    };
    let mut tallies = std::collections::BTreeMap::new();
    for repetition in 0..repetitions {
        let rep_seed = seed ^ (repetition as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        let rep_order = shuffled(pool.len(), rep_seed);
        for &size in &sizes {
            let size = size.min(pool.len());
            let indices: Vec<usize> = rep_order[..size].iter().map(|&i| pool[i]).collect();
            let train = examples(data, &indices)?;
            let started = Instant::now();
            let jobs = jobs(&KDD_EPSILONS, false, rep_seed ^ size as u64);
            for (job, outcome) in run_jobs(&jobs, &train, &test)? {
                record(&mut tallies, &job, size, outcome);
            }
            eprintln!(
                "kddcup99 learning curve: repetition {}/{repetitions}, {size} rows, {:.1} s",
                repetition + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(cells("kddcup99", "1(d), 1(e)", tallies))
}

/// Adult at every ε of [`ADULT_EPSILONS`]: k-fold cross-validation, each tuning method
/// beside the best Λ in hindsight.
fn adult_tuning_cost(
    data: &Dataset,
    quick: bool,
    seed: u64,
) -> Result<Vec<Cell>, Box<dyn std::error::Error>> {
    let (folds, draws) = if quick { (3, 1) } else { (10, 2) };
    let order = shuffled(data.len(), seed);
    let mut tallies = std::collections::BTreeMap::new();
    for fold in 0..folds {
        let (start, end) = (fold * order.len() / folds, (fold + 1) * order.len() / folds);
        let test = examples(data, &order[start..end])?;
        let train_rows: Vec<usize> = order[..start]
            .iter()
            .chain(&order[end..])
            .copied()
            .collect();
        let train = examples(data, &train_rows)?;
        let started = Instant::now();
        for draw in 0..draws {
            let draw_seed =
                seed ^ ((fold * draws + draw) as u64 + 1).wrapping_mul(0xA24B_AED4_963E_E407);
            let mut jobs = jobs(&ADULT_EPSILONS, true, draw_seed);
            if draw > 0 {
                // The non-private fits have no noise: one draw says all.
                jobs.retain(|j| j.method != Method::NonPrivateSvm);
            }
            for (job, outcome) in run_jobs(&jobs, &train, &test)? {
                record(&mut tallies, &job, train.len(), outcome);
            }
        }
        eprintln!(
            "adult: fold {}/{folds} ({draws} draws), {:.1} s",
            fold + 1,
            started.elapsed().as_secs_f64()
        );
    }
    // Fold sizes differ by a row: report them under one size (the mean).
    let rows = data.len() - data.len() / folds;
    let merged = merge_sizes(tallies, rows);
    Ok(cells("adult", "tuning cost", merged))
}

/// Re-keys every tally to `rows` (folds of slightly different sizes), merging them.
fn merge_sizes(
    tallies: std::collections::BTreeMap<Key, Tally>,
    rows: usize,
) -> std::collections::BTreeMap<Key, Tally> {
    let mut merged: std::collections::BTreeMap<Key, Tally> = std::collections::BTreeMap::new();
    for ((method, tuning, epsilon, _), tally) in tallies {
        let into = merged.entry((method, tuning, epsilon, rows)).or_default();
        if into.errors.is_empty() {
            into.errors = vec![Vec::new(); tally.errors.len()];
        }
        for (a, b) in into.errors.iter_mut().zip(tally.errors) {
            a.extend(b);
        }
        into.refusals += tally.refusals;
        for k in 0..7 {
            into.chosen[k] += tally.chosen[k];
        }
        into.trainings += tally.trainings;
        into.runs += tally.runs;
        into.seconds += tally.seconds;
    }
    merged
}

/// Figure 1(f) (nested balls, private kernel SVM at ε = 0.1) is drawn by `reproduce kernel`:
/// dp-kernel's `KernelParams` implements `dp_erm::Trainer`, so one `KernelParams` per Λ is
/// the candidate list of a [`SplitAndSelect`] there, beside the best Λ in hindsight.
pub const FIGURE_1F_STATUS: &str = "drawn by `cargo xtask reproduce kernel` \
     (results/kernel/summary.md): split-and-select over one dp-kernel `KernelParams` per Λ, \
     end-to-end ε = 0.1, beside the best Λ in hindsight";

/// The files this experiment writes, in `<out>/tuning`.
pub const FILES: [&str; 6] = [
    "cells.json",
    "cells.csv",
    "summary.md",
    "fig1d_kdd_learning_curve_eps0.05.svg",
    "fig1e_kdd_learning_curve_eps0.005.svg",
    "adult_tuning_cost_vs_epsilon.svg",
];

#[derive(Serialize)]
struct DatasetRecord {
    name: String,
    rows: usize,
    features: usize,
    checksums: Vec<(String, String)>,
    seconds: f64,
}

#[derive(Serialize)]
struct RunRecord<'a> {
    experiment: &'a str,
    mode: &'a str,
    seed: u64,
    crate_version: &'a str,
    lambdas: [f64; 7],
    stop_probability: f64,
    random_stopping_holdout: f64,
    figure_1f: &'a str,
    datasets: &'a [DatasetRecord],
    wall_seconds: f64,
    cells: &'a [Cell],
}

/// The data directory and the experiment's output folder `<out>/<experiment>`, every path
/// checked before any work: the data directory, `--out` itself (so that an error names the
/// folder the user gave), then Adult's and KDD's files, so that a run that cannot start
/// does not even create its results folder.
pub(super) fn prepare_real_data_run(
    options: &Options,
    experiment: &str,
    files: &[&str],
) -> Result<(DataDir, OutDir), Box<dyn std::error::Error>> {
    let dir = DataDir::resolve(options.data_dir.as_deref());
    dir.check_folder()
        .map_err(|e| format!("{e} (data directory taken from {})", origin(options)))?;
    OutDir::prepare(&options.out, &[])?;
    check_files(&dir, options, experiment)?;
    let this = Holdings::new(options.quick);
    let out = super::experiment_folder(options, experiment, files, &this, super::recorded_mode)?;
    Ok((dir, out))
}

/// Fails unless Adult's and KDD's files are in `dir` with their published checksums (the
/// error names `experiment`, the missing files and how to get them).
fn check_files(
    dir: &DataDir,
    options: &Options,
    experiment: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    let needed: Vec<&DataFile> = ADULT_FILES.iter().chain(&KDD_FILES).collect();
    let missing: Vec<String> = needed
        .iter()
        .filter(|f| !dir.has_all(std::slice::from_ref(**f)))
        .map(|f| f.name.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "cannot run the {experiment} experiment: missing {} in {} (data directory taken \
             from {}); nothing was run and earlier results are untouched; {}",
            missing.join(", "),
            dir.path().display(),
            origin(options),
            dp_datasets::HOW_TO_GET
        )
        .into());
    }
    for file in needed {
        dir.verified(file)?;
    }
    Ok(())
}

/// Runs the tuning experiment; `Ok(false)` when a sanity bound is broken. Every path is
/// checked before any work (the output folder, then the data files and their checksums,
/// then the experiment's own folder); results replace earlier ones only when complete.
pub fn run(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (dir, out) = prepare_real_data_run(options, "tuning", &FILES)?;
    let mut records = Vec::new();
    let mut all = Vec::new();
    for name in ["adult", "kddcup99"] {
        let started = Instant::now();
        let data = if name == "adult" {
            load_adult(&dir, Scaling::PaperColumnMax)?
        } else {
            load_kddcup99(&dir)?
        };
        eprintln!("{name}: {} rows, {} features", data.len(), data.features());
        all.extend(if name == "adult" {
            adult_tuning_cost(&data, options.quick, options.seed)?
        } else {
            kdd_learning_curves(&data, options.quick, options.seed)?
        });
        records.push(DatasetRecord {
            name: data.name.clone(),
            rows: data.len(),
            features: data.features(),
            checksums: data.checksums.clone(),
            seconds: started.elapsed().as_secs_f64(),
        });
    }
    let record = RunRecord {
        experiment: "tuning",
        mode: if options.quick { "quick" } else { "full" },
        seed: options.seed,
        crate_version: env!("CARGO_PKG_VERSION"),
        lambdas: LAMBDAS,
        stop_probability: STOP_PROBABILITY,
        random_stopping_holdout: dp_tune::DEFAULT_HOLDOUT_FRACTION,
        figure_1f: FIGURE_1F_STATUS,
        datasets: &records,
        wall_seconds: start.elapsed().as_secs_f64(),
        cells: &all,
    };
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    let notes = write_all(&out, &record, options.quick)?;
    output::entry(&all, options.quick, start)
        .notes(notes)
        .write(&out)?;
    drop(replacing);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, figures) in {:.1} s",
        out.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Finished::complete(output::sanity(&all), &out))
}

/// Writes cells.json, cells.csv, summary.md and the figures; returns the index's notes on
/// the figures.
fn write_all(
    out: &OutDir,
    record: &RunRecord<'_>,
    quick: bool,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    out.write("cells.json", serde_json::to_string_pretty(record)?)?;
    out.write("cells.csv", output::csv(record.cells))?;
    let mut header = format!(
        "Mode: {}; seed {}; dp-ml {}; wall time {:.1} s on this machine (loading included). \
         Candidates Λ ∈ {{1e-1, …, 1e-7}}; random stopping γ = 1/14 (14 runs expected), \
         held-out share {}.\n\n",
        record.mode,
        record.seed,
        record.crate_version,
        record.wall_seconds,
        record.random_stopping_holdout
    );
    for d in record.datasets {
        header += &format!(
            "- {}: {} rows, {} features, {:.1} s; ",
            d.name, d.rows, d.features, d.seconds
        );
        header += &d
            .checksums
            .iter()
            .map(|(f, h)| format!("{f} sha256 {h}"))
            .collect::<Vec<_>>()
            .join(", ");
        header += "\n";
    }
    out.write("summary.md", output::markdown(record.cells, &header))?;
    output::figures(out, record.cells, &FILES[3..], quick)
}
