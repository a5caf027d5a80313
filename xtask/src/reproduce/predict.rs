//! `cargo xtask reproduce predict`: private prediction (Dwork & Feldman 2018 has no
//! experiments; these are docs/src/reference/experiments.md's "Private prediction").
//!
//! (a) Thresholds on a line (synthetic, no data files): error versus n at ε ∈ {0.1, 1},
//!     label noise 0 and 0.1, for the exponential projected walk, the private threshold
//!     learner, subsample-and-aggregate (soft majority) and the non-private ERM threshold.
//! (b) Prediction versus training on Adult and KDDCup99 (needs the data files, checked
//!     before (a) runs): error versus the number of queries answered under a fixed total
//!     budget, for §7.1–§7.4 against objective perturbation trained once at the whole
//!     budget. Without the files (missing or corrupt), (a) runs alone, its results do not
//!     replace earlier ones that have (b) (see `keep`), and the run reports (b) as not run.

use std::fmt::Write as _;
use std::time::Instant;

use dp_datasets::{ADULT_FILES, DataDir, Dataset, KDD_FILES, Scaling, load_adult, load_kddcup99};
use dp_erm::{ErmParams, Examples, Loss, ObjectiveCalibration, TrainingSet};
use dp_noise::{InsecureSeededRng, PrivacyBudget};
use dp_predict::{
    Ensemble, LaplaceAverageEnsemble, LineData, PrivatePredictor, PrivateThresholdLearner,
    SgdParams, SoftMajority, SoftMajorityEnsemble, StableErmParams, ThresholdErm, VoteKind,
    WalkParams, erm_threshold, suggested_parts,
};
use rand::RngExt;
use rayon::prelude::*;
use serde::Serialize;

use super::linear::shuffled;
use super::plot::{self, Figure, Scale, Series};
use super::{Finished, Options};
use crate::keep::{self, Holdings};
use crate::safe_write::OutDir;

/// The true threshold of the synthetic data.
const THETA: f64 = 0.3;
/// Candidate thresholds of the private learner: a grid of 2^16 + 1 points on [0, 1].
const LEARNER_GRID: usize = 1 << 16;
/// Target error α of the suggested number of parts of subsample-and-aggregate.
const PARTS_TARGET_ERROR: f64 = 0.05;
/// Parts of subsample-and-aggregate on the real data.
const REAL_PARTS: usize = 100;
/// Rows of KDD used (a random subset, as in the linear experiments).
const KDD_SUBSET: usize = 60_000;
/// Λ of the non-private logistic regressions on the parts.
const PART_LAMBDA: f64 = 1e-4;
/// Comparator norm B of stable ERM's regularization rule.
const COMPARATOR_NORM: f64 = 5.0;

const EPSILONS: [f64; 2] = [0.1, 1.0];
const NOISES: [f64; 2] = [0.0, 0.1];

/// The files this experiment writes, in `<out>/predict`.
const FILES: [&str; 11] = [
    "cells.json",
    "cells.csv",
    "summary.md",
    "thresholds_eps0.1_noise0.svg",
    "thresholds_eps0.1_noise0.1.svg",
    "thresholds_eps1_noise0.svg",
    "thresholds_eps1_noise0.1.svg",
    "queries_adult_eps0.1.svg",
    "queries_adult_eps1.svg",
    "queries_kddcup99_eps0.1.svg",
    "queries_kddcup99_eps1.svg",
];

/// One cell of (a): a method at (ε, label noise, n), over trials.
#[derive(Debug, Clone, Serialize)]
pub struct ThresholdCell {
    pub method: &'static str,
    pub epsilon: f64,
    pub label_noise: f64,
    pub n: usize,
    pub trials: usize,
    /// Mean error against the true threshold's labels on fresh test points.
    pub mean_error: f64,
    pub std_error: f64,
    /// The same against noisy test labels: `η + (1 − 2η)·error`.
    pub mean_noisy_error: f64,
    /// Parts of subsample-and-aggregate, floor α of the walk.
    pub parts: Option<usize>,
    pub alpha: Option<f64>,
}

/// One cell of (b): a method on a dataset, answering `queries` queries under a total budget.
#[derive(Debug, Clone, Serialize)]
pub struct QueryCell {
    pub dataset: &'static str,
    pub method: &'static str,
    pub total_epsilon: f64,
    pub queries: usize,
    /// The ε of each answer: the largest share of the total that `queries` answers fit in
    /// (the training-time ε for objective perturbation).
    pub epsilon_per_answer: f64,
    pub mean_error: f64,
    /// Test queries the error was estimated on.
    pub evaluated: usize,
}

#[derive(Serialize)]
struct Record<'a> {
    experiment: &'static str,
    mode: &'static str,
    seed: u64,
    threshold_trials: usize,
    threshold_test_points: usize,
    wall_seconds: f64,
    real_data: &'a str,
    thresholds: &'a [ThresholdCell],
    queries: &'a [QueryCell],
}

/// The optional part of this experiment, as `keep` and the final message name it.
pub const REAL_DATA_PART: &str = "predict (real data)";

/// Whether part (b) can run: every Adult and KDD file in `dir` with its published checksum.
/// Checked before part (a), so that a missing or a corrupt file is reported at once and
/// either way part (a) runs alone, keeping earlier real-data results.
fn real_data_status(dir: &DataDir) -> Result<(), String> {
    let missing: Vec<&str> = dir
        .missing(&ADULT_FILES)
        .into_iter()
        .chain(dir.missing(&KDD_FILES))
        .map(|f| f.name)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "data files missing in {}: {} (see `cargo xtask datasets fetch`)",
            dir.path().display(),
            missing.join(", ")
        ));
    }
    for file in ADULT_FILES.iter().chain(&KDD_FILES) {
        dir.verified(file).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// What the predict results in `folder` hold: their mode, and the real-data part when
/// their `cells.json` has query cells.
fn recorded_holdings(folder: &std::path::Path) -> Option<Holdings> {
    let holdings = super::recorded_mode(folder)?;
    let has_queries = keep::read_json(&folder.join("cells.json"))
        .and_then(|cells| Some(!cells.get("queries")?.as_array()?.is_empty()))
        .unwrap_or(false);
    Some(if has_queries {
        holdings.with_part(REAL_DATA_PART)
    } else {
        holdings
    })
}

/// Runs the experiment; `Finished::sane` is false when a sanity check fails, and
/// `Finished::not_run` names the real-data part when it could not run.
pub fn run(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    OutDir::prepare(&options.out, &[])?;
    let dir = DataDir::resolve(options.data_dir.as_deref());
    let real_data = real_data_status(&dir);
    let mut this = Holdings::new(options.quick);
    match &real_data {
        Ok(()) => this = this.with_part(REAL_DATA_PART),
        Err(why) => eprintln!("predict (b): will not run: {why}; part (a) runs alone"),
    }
    let out = super::experiment_folder(options, "predict", &FILES, &this, recorded_holdings)?;
    let (ns, trials, tests): (&[usize], usize, usize) = if options.quick {
        (&[100, 1000, 10_000], 8, 4000)
    } else {
        (
            &[100, 200, 500, 1000, 2000, 5000, 10_000, 30_000],
            40,
            20_000,
        )
    };
    eprintln!(
        "predict (a): thresholds on a line, n ∈ {ns:?}, {trials} trials per cell, {tests} test points"
    );
    let thresholds = thresholds_experiment(ns, trials, tests, options.seed)?;
    eprintln!(
        "predict (a): done in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    let real_data_ran = real_data.is_ok();
    let (queries, real_data) = match real_data {
        Ok(()) => {
            let started = Instant::now();
            let cells = real_data_experiment(&dir, options)?;
            eprintln!(
                "predict (b): done in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            (
                cells,
                format!("Adult and KDDCup99 from {}", dir.path().display()),
            )
        }
        Err(why) => (Vec::new(), format!("skipped: {why}")),
    };
    let record = Record {
        experiment: "predict",
        mode: if options.quick { "quick" } else { "full" },
        seed: options.seed,
        threshold_trials: trials,
        threshold_test_points: tests,
        wall_seconds: start.elapsed().as_secs_f64(),
        real_data: &real_data,
        thresholds: &thresholds,
        queries: &queries,
    };
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    out.write("cells.json", serde_json::to_string_pretty(&record)?)?;
    out.write("cells.csv", csv(&thresholds, &queries))?;
    let (summary, ok) = markdown(&record);
    out.write("summary.md", summary)?;
    figures(&out, &thresholds, &queries, options.quick)?;
    entry(&thresholds, &queries, options.quick, start).write(&out)?;
    drop(replacing);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, figures) in {:.1} s",
        out.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Finished {
        sane: ok,
        folder: out.path().to_path_buf(),
        not_run: (!real_data_ran).then_some(REAL_DATA_PART),
    })
}

/// The index entry (the paper has no tables to compare with): the walk against the private
/// learner at ε = 1 on the smallest n, and one query on Adult at the smallest total ε.
fn entry(
    thresholds: &[ThresholdCell],
    queries: &[QueryCell],
    quick: bool,
    start: Instant,
) -> super::RunEntry {
    let smallest_n = thresholds.iter().map(|c| c.n).min().unwrap_or(0);
    let threshold = |method: &str| {
        thresholds
            .iter()
            .find(|c| {
                c.method == method && c.epsilon == 1.0 && c.label_noise == 0.0 && c.n == smallest_n
            })
            .map_or(f64::NAN, |c| c.mean_error)
    };
    let total = queries
        .iter()
        .filter(|c| c.dataset == "adult")
        .map(|c| c.total_epsilon)
        .fold(f64::INFINITY, f64::min);
    let one_query = |method: &str| {
        queries
            .iter()
            .find(|c| {
                c.dataset == "adult"
                    && c.method == method
                    && c.queries == 1
                    && c.total_epsilon == total
            })
            .map_or(f64::NAN, |c| c.mean_error)
    };
    super::RunEntry::new(
        "predict",
        "private prediction (Dwork–Feldman 2018): thresholds, prediction versus training",
        quick,
        start,
    )
    .headline(
        &format!("thresholds, ε = 1, n = {smallest_n}: {METHOD_WALK}"),
        threshold(METHOD_WALK),
        None,
    )
    .headline(
        &format!("thresholds, ε = 1, n = {smallest_n}: {METHOD_DOMAIN_LEARNER}"),
        threshold(METHOD_DOMAIN_LEARNER),
        None,
    )
    .headline(
        &format!("Adult, one query, total ε = {total}: {METHOD_SOFT}"),
        one_query(METHOD_SOFT),
        None,
    )
    .headline(
        &format!("Adult, one query, total ε = {total}: {METHOD_OBJECTIVE}"),
        one_query(METHOD_OBJECTIVE),
        None,
    )
}

// ---------------------------------------------------------------------------------------
// (a) Thresholds on a line.
//
// The domain is the grid X = {k/2^b : 0 ≤ k ≤ 2^b} with b = 48, and the data are spread
// over every scale around the true threshold θ: x = θ ± 2^(−U·b), U uniform on [0, 1]
// (snapped to X). A learner that must output a threshold of X pays for the size of X
// (pure ε-DP: about ln|X|/ε samples, Feldman–Xiao); the walk only uses the order of the
// points and does not.

/// Bits of the domain grid.
const DOMAIN_BITS: i32 = 48;

fn grid_scale() -> f64 {
    2f64.powi(DOMAIN_BITS)
}

/// `x` rounded to the domain grid.
fn snap(x: f64) -> f64 {
    (x * grid_scale()).round() / grid_scale()
}

/// The true threshold, on the grid.
fn theta() -> f64 {
    snap(THETA)
}

/// One point of the data distribution: θ ± 2^(−U·b), snapped, in [0, 1].
fn draw_point(rng: &mut InsecureSeededRng) -> f64 {
    let distance = 2f64.powf(-rng.random::<f64>() * f64::from(DOMAIN_BITS));
    let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
    snap((theta() + sign * distance).clamp(0.0, 1.0))
}

/// The walk's floor for `n` points at ε: `α ≈ 2/(εn)` minimizes `α + m/n` with
/// `m = (2/ε) ln(1/α)`, kept within [10⁻³, ¼].
fn walk_alpha(epsilon: f64, n: usize) -> f64 {
    (2.0 / (epsilon * n as f64)).clamp(1e-3, 0.25)
}

/// `n` points of the distribution labelled `x ≥ θ`, each flipped with probability `noise`.
fn line_data(n: usize, noise: f64, seed: u64) -> Result<LineData, dp_predict::PredictError> {
    let mut rng = InsecureSeededRng::new(seed);
    let points: Vec<f64> = (0..n).map(|_| draw_point(&mut rng)).collect();
    let labels = points
        .iter()
        .map(|&x| (x >= theta()) != (rng.random::<f64>() < noise))
        .collect();
    LineData::new(points, labels)
}

const METHOD_WALK: &str = "exponential projected walk (§7.5)";
const METHOD_DOMAIN_LEARNER: &str = "private learner over all 2^48 + 1 thresholds";
const METHOD_GRID_LEARNER: &str = "private learner over a 2^16 + 1 grid (exact)";
const METHOD_AGGREGATE: &str = "subsample-and-aggregate, soft majority (§7.1)";
const METHOD_ERM: &str = "non-private ERM threshold";
const THRESHOLD_METHODS: [&str; 5] = [
    METHOD_WALK,
    METHOD_DOMAIN_LEARNER,
    METHOD_GRID_LEARNER,
    METHOD_AGGREGATE,
    METHOD_ERM,
];

/// Error of a threshold on the test points (against the true labels).
fn threshold_error(theta_hat: f64, test: &[f64]) -> f64 {
    let t = theta();
    test.iter()
        .filter(|&&x| (x >= theta_hat) != (x >= t))
        .count() as f64
        / test.len() as f64
}

/// Mean probability of a wrong answer on the test points for answers that are 1 with
/// probability `p(x)`.
fn answer_error_on_line(
    test: &[f64],
    p: impl Fn(f64) -> Result<f64, dp_predict::PredictError>,
) -> Result<f64, dp_predict::PredictError> {
    let t = theta();
    let mut total = 0.0;
    for &x in test {
        let one = p(x)?;
        total += if x >= t { 1.0 - one } else { one };
    }
    Ok(total / test.len() as f64)
}

/// The exponential mechanism (utility −mistakes, sensitivity 1) over **every** threshold
/// of the domain grid, sampled through the groups of thresholds that agree on the data
/// (between consecutive points): group j has weight `size_j · exp(−ε·mistakes_j/2)`. An
/// experiment's simulation of the ideal mechanism in floating point (log-sum-exp), not a
/// release path: the library's exact learner takes an explicit candidate list.
fn domain_learner(data: &LineData, epsilon: f64, rng: &mut InsecureSeededRng) -> f64 {
    let (points, labels) = (data.points(), data.labels());
    let n = points.len();
    let scale = grid_scale();
    // (lowest threshold of the group, number of grid thresholds in it, mistakes).
    let mut groups: Vec<(f64, f64, usize)> = Vec::with_capacity(n + 1);
    let mut mistakes = labels.iter().filter(|&&y| !y).count();
    // t ∈ [0, x_(1)]: every point labelled 1.
    groups.push((0.0, points[0] * scale + 1.0, mistakes));
    for k in 1..=n {
        if labels[k - 1] {
            mistakes += 1;
        } else {
            mistakes -= 1;
        }
        let upper = if k == n { 1.0 } else { points[k] };
        let size = (upper - points[k - 1]) * scale;
        if size >= 1.0 {
            groups.push((points[k - 1], size, mistakes));
        }
    }
    let log_weights: Vec<f64> = groups
        .iter()
        .map(|&(_, size, m)| size.ln() - epsilon * m as f64 / 2.0)
        .collect();
    let top = log_weights
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = log_weights.iter().map(|w| (w - top).exp()).collect();
    let mut target = rng.random::<f64>() * weights.iter().sum::<f64>();
    let mut chosen = groups.len() - 1;
    for (j, w) in weights.iter().enumerate() {
        if target < *w {
            chosen = j;
            break;
        }
        target -= w;
    }
    let (lower, size, _) = groups[chosen];
    // A uniform threshold of the group: (lower, lower + size/2^b], or [0, x_(1)] for the
    // first group.
    let offset = (rng.random::<f64>() * size).floor();
    if chosen == 0 {
        offset / scale
    } else {
        lower + (offset + 1.0) / scale
    }
}

/// Errors of the methods on one dataset (the same data and test points for all).
fn threshold_trial(
    epsilon: f64,
    noise: f64,
    n: usize,
    tests: usize,
    seed: u64,
    grid_learner: &PrivateThresholdLearner,
) -> Result<[f64; 5], Box<dyn std::error::Error + Send + Sync>> {
    let data = line_data(n, noise, seed)?;
    let mut rng = InsecureSeededRng::new(seed ^ 0x9e37_79b9);
    let test: Vec<f64> = (0..tests).map(|_| draw_point(&mut rng)).collect();
    let walk = WalkParams::new(epsilon, walk_alpha(epsilon, n))?.fit(&data)?;
    let walk_error = answer_error_on_line(&test, |x| walk.secret_probability_of_one(x))?;
    let domain = threshold_error(domain_learner(&data, epsilon, &mut rng), &test);
    let grid = threshold_error(grid_learner.fit(&data, &mut rng)?.theta(), &test);
    let parts = aggregate_parts(epsilon, n)?;
    let ensemble = Ensemble::train(&ThresholdErm, &line_examples(&data)?, parts, &mut rng)?;
    // The soft majority's answer at x depends on the number of parts' thresholds ≤ x:
    // its law for every count, then a binary search per test point.
    let mut thresholds: Vec<f64> = ensemble.secret_models().iter().map(|t| t.theta()).collect();
    thresholds.sort_by(f64::total_cmp);
    let vote = SoftMajority::new(epsilon)?;
    let law: Vec<f64> = (0..=parts)
        .map(|ones| vote.probability_of_positive(ones, parts - ones))
        .collect::<Result<_, _>>()?;
    let aggregate_error =
        answer_error_on_line(&test, |x| Ok(law[thresholds.partition_point(|&t| t <= x)]))?;
    let erm = threshold_error(erm_threshold(&data).theta(), &test);
    Ok([walk_error, domain, grid, aggregate_error, erm])
}

/// `k = ⌈(4/ε) ln(2/α)⌉` for α = 5%, at most n/4 (at least 1) so every part has data.
fn aggregate_parts(epsilon: f64, n: usize) -> Result<usize, dp_predict::PredictError> {
    Ok(suggested_parts(epsilon, PARTS_TARGET_ERROR)?.min((n / 4).max(1)))
}

fn line_examples(data: &LineData) -> Result<Examples, dp_erm::ErmError> {
    let inputs = dp_erm::Features::dense(1, data.points().to_vec())?;
    let labels = data
        .labels()
        .iter()
        .map(|&y| if y { 1.0 } else { -1.0 })
        .collect();
    Examples::new(inputs, labels)
}

fn thresholds_experiment(
    ns: &[usize],
    trials: usize,
    tests: usize,
    seed: u64,
) -> Result<Vec<ThresholdCell>, Box<dyn std::error::Error>> {
    let candidates: Vec<f64> = (0..=LEARNER_GRID)
        .map(|k| k as f64 / LEARNER_GRID as f64)
        .collect();
    let mut cells = Vec::new();
    for &epsilon in &EPSILONS {
        let grid_learner = PrivateThresholdLearner::new(epsilon, candidates.clone())?;
        for &noise in &NOISES {
            for &n in ns {
                let errors: Vec<[f64; 5]> = (0..trials)
                    .into_par_iter()
                    .map(|t| {
                        let cell_seed = seed
                            ^ (epsilon.to_bits().rotate_left(17))
                            ^ (noise.to_bits().rotate_left(31))
                            ^ ((n as u64) << 20)
                            ^ (t as u64);
                        threshold_trial(epsilon, noise, n, tests, cell_seed, &grid_learner)
                    })
                    .collect::<Result<_, _>>()
                    .map_err(|e| e.to_string())?;
                for (k, method) in THRESHOLD_METHODS.into_iter().enumerate() {
                    let values: Vec<f64> = errors.iter().map(|e| e[k]).collect();
                    let (mean, std) = mean_std(&values);
                    cells.push(ThresholdCell {
                        method,
                        epsilon,
                        label_noise: noise,
                        n,
                        trials,
                        mean_error: mean,
                        std_error: std,
                        mean_noisy_error: noise + (1.0 - 2.0 * noise) * mean,
                        parts: (method == METHOD_AGGREGATE)
                            .then(|| aggregate_parts(epsilon, n))
                            .transpose()?,
                        alpha: (method == METHOD_WALK).then(|| walk_alpha(epsilon, n)),
                    });
                }
            }
        }
    }
    Ok(cells)
}

fn mean_std(values: &[f64]) -> (f64, f64) {
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>()
        / values.len().max(2).saturating_sub(1) as f64;
    (mean, variance.sqrt())
}

// ---------------------------------------------------------------------------------------
// (b) Prediction versus training on real data.

const METHOD_SOFT: &str = "subsample-and-aggregate, soft majority (§7.1)";
const METHOD_AVERAGE: &str = "subsample-and-aggregate, Laplace averaging (§7.2)";
const METHOD_STABLE: &str = "stable ERM + Laplace (§7.3)";
const METHOD_SGD: &str = "projected SGD + Laplace (§7.4)";
const METHOD_OBJECTIVE: &str = "objective perturbation, trained once at the total ε";
const METHOD_NON_PRIVATE: &str = "non-private logistic regression";

fn real_data_experiment(
    dir: &DataDir,
    options: &Options,
) -> Result<Vec<QueryCell>, Box<dyn std::error::Error>> {
    let (totals, query_counts, evaluated): (&[f64], &[usize], usize) = if options.quick {
        (&[0.1, 1.0], &[1, 10, 100, 1000], 1000)
    } else {
        (
            &[0.1, 1.0],
            &[1, 3, 10, 30, 100, 300, 1000, 3000, 10_000],
            4000,
        )
    };
    let mut cells = Vec::new();
    let adult = load_adult(dir, Scaling::PaperColumnMax)?;
    cells.extend(dataset_cells(
        "adult",
        &adult,
        totals,
        query_counts,
        evaluated,
        options.seed,
    )?);
    let full = load_kddcup99(dir)?;
    let subset = if options.quick { 20_000 } else { KDD_SUBSET };
    let keep = &shuffled(full.len(), options.seed)[..subset.min(full.len())];
    let kdd = Dataset {
        rows: keep.iter().map(|&i| full.rows[i].clone()).collect(),
        labels: keep.iter().map(|&i| full.labels[i]).collect(),
        ..full
    };
    cells.extend(dataset_cells(
        "kddcup99",
        &kdd,
        totals,
        query_counts,
        evaluated,
        options.seed,
    )?);
    Ok(cells)
}

/// Mean error of `predictor`'s answers on the test queries (each answer at the
/// predictor's ε; the budget would allow only some of them: every answer has the same law
/// given its query, so their mean estimates the error of each).
fn answer_error<P>(
    predictor: &P,
    queries: &[Vec<f64>],
    labels: &[f64],
    label: impl Fn(&P::Answer) -> f64,
    seed: u64,
) -> Result<f64, dp_predict::PredictError>
where
    P: PrivatePredictor<Query = [f64]>,
{
    let mut rng = InsecureSeededRng::new(seed);
    let mut wrong = 0usize;
    for (x, &y) in queries.iter().zip(labels) {
        predictor.check_query(x)?;
        if label(&predictor.answer_unchecked(x, &mut rng)?) != y {
            wrong += 1;
        }
    }
    Ok(wrong as f64 / queries.len() as f64)
}

fn dataset_cells(
    name: &'static str,
    data: &Dataset,
    totals: &[f64],
    query_counts: &[usize],
    evaluated: usize,
    seed: u64,
) -> Result<Vec<QueryCell>, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let order = shuffled(data.len(), seed ^ 0x5eed);
    let cut = data.len() * 4 / 5;
    let train: TrainingSet = data.training_set(&order[..cut])?;
    let test: TrainingSet = data.training_set(&order[cut..])?;
    let train_examples = train.to_examples();
    let test_examples = test.to_examples();
    let count = test_examples.len().min(evaluated);
    let queries: Vec<Vec<f64>> = (0..count)
        .map(|i| {
            let mut x = vec![0.0; test_examples.features()];
            test_examples.inputs().row(i).write_dense(&mut x);
            x
        })
        .collect();
    let labels = &test_examples.labels()[..count];
    eprintln!(
        "predict (b) {name}: {} training rows, {} features, {count} test queries",
        train.len(),
        train.features()
    );
    let mut rng = InsecureSeededRng::new(seed ^ 0xda7a);
    // The ensemble does not depend on ε: trained once, aggregated at each per-answer ε.
    let part_trainer = ErmParams::non_private(Loss::Logistic, PART_LAMBDA);
    let ensemble = Ensemble::train(&part_trainer, &train_examples, REAL_PARTS, &mut rng)?;
    let non_private = ErmParams::non_private(Loss::Logistic, 1e-4)
        .fit(&train, &mut rng)?
        .into_model();
    let non_private_error = non_private.mistakes(&test)? as f64 / test.len() as f64;
    let mut cells = Vec::new();
    for &total in totals {
        // Objective perturbation at the whole budget, best Λ of a small grid on the test
        // set (optimistic for the baseline), 3 noise draws each.
        let mut objective = f64::INFINITY;
        for lambda in [1e-2, 1e-3, 1e-4] {
            let mut errors = Vec::new();
            for draw in 0..3u64 {
                let model = ErmParams::objective_perturbation(Loss::huber(0.5)?, lambda, total)
                    .objective_calibration(ObjectiveCalibration::Cms11)
                    .fit(&train, &mut InsecureSeededRng::new(seed ^ draw << 8))?
                    .into_model();
                errors.push(model.mistakes(&test)? as f64 / test.len() as f64);
            }
            objective = objective.min(mean_std(&errors).0);
        }
        for &q in query_counts {
            let Some(per_answer) = PrivacyBudget::new(total)?.even_share(q as u32) else {
                continue;
            };
            let soft = SoftMajorityEnsemble::new(ensemble.clone(), per_answer)?;
            let average =
                LaplaceAverageEnsemble::new(ensemble.clone(), per_answer, VoteKind::Sigmoid)?;
            let lambda =
                StableErmParams::balanced_regularization(COMPARATOR_NORM, per_answer, train.len())?;
            let stable = StableErmParams::new(Loss::Logistic, lambda.max(1e-6), per_answer)
                .fit(&train_examples, &mut rng)?;
            let step = SgdParams::suggested_step(Loss::Logistic, COMPARATOR_NORM, train.len())?;
            let sgd = SgdParams::new(Loss::Logistic, step, COMPARATOR_NORM, per_answer)
                .fit(&train_examples)?;
            let cell_seed = seed ^ (q as u64) << 16 ^ total.to_bits();
            let errors = [
                (
                    METHOD_SOFT,
                    answer_error(&soft, &queries, labels, |a| *a, cell_seed)?,
                ),
                (
                    METHOD_AVERAGE,
                    answer_error(&average, &queries, labels, |a| a.label, cell_seed + 1)?,
                ),
                (
                    METHOD_STABLE,
                    answer_error(&stable, &queries, labels, |a| a.label, cell_seed + 2)?,
                ),
                (
                    METHOD_SGD,
                    answer_error(&sgd, &queries, labels, |a| a.label, cell_seed + 3)?,
                ),
            ];
            for (method, mean_error) in errors {
                cells.push(QueryCell {
                    dataset: name,
                    method,
                    total_epsilon: total,
                    queries: q,
                    epsilon_per_answer: per_answer,
                    mean_error,
                    evaluated: count,
                });
            }
            for (method, epsilon, mean_error) in [
                (METHOD_OBJECTIVE, total, objective),
                (METHOD_NON_PRIVATE, f64::INFINITY, non_private_error),
            ] {
                cells.push(QueryCell {
                    dataset: name,
                    method,
                    total_epsilon: total,
                    queries: q,
                    epsilon_per_answer: epsilon,
                    mean_error,
                    evaluated: test.len(),
                });
            }
        }
    }
    eprintln!(
        "predict (b) {name}: done in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(cells)
}

// ---------------------------------------------------------------------------------------
// Reports.

fn csv(thresholds: &[ThresholdCell], queries: &[QueryCell]) -> String {
    let mut s = String::from(
        "part,dataset,method,epsilon,label_noise,n,total_epsilon,queries,mean_error,std_error,mean_noisy_error,parts,alpha,trials_or_evaluated\n",
    );
    for c in thresholds {
        let _ = writeln!(
            s,
            "thresholds,synthetic,\"{}\",{},{},{},,,{},{},{},{},{},{}",
            c.method,
            c.epsilon,
            c.label_noise,
            c.n,
            c.mean_error,
            c.std_error,
            c.mean_noisy_error,
            c.parts.map_or(String::new(), |p| p.to_string()),
            c.alpha.map_or(String::new(), |a| a.to_string()),
            c.trials
        );
    }
    for c in queries {
        let _ = writeln!(
            s,
            "queries,{},\"{}\",{},,,{},{},{},,,,,{}",
            c.dataset,
            c.method,
            c.epsilon_per_answer,
            c.total_epsilon,
            c.queries,
            c.mean_error,
            c.evaluated
        );
    }
    s
}

fn threshold_cell_error(
    cells: &[ThresholdCell],
    method: &str,
    epsilon: f64,
    noise: f64,
    n: usize,
) -> Option<f64> {
    cells
        .iter()
        .find(|c| c.method == method && c.epsilon == epsilon && c.label_noise == noise && c.n == n)
        .map(|c| c.mean_error)
}

/// The Markdown summary and whether the sanity checks hold: the walk beats the private
/// learner over the whole domain at the smallest n at ε = 1 without noise (the paper's
/// claim), and the non-private ERM threshold errs on at most 0.2% at the largest n.
fn markdown(record: &Record<'_>) -> (String, bool) {
    let cells = record.thresholds;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Private prediction (Dwork & Feldman 2018)\n\nMode: {}; seed {}; {} trials per \
         threshold cell; wall time {:.1} s. Real data: {}.\n",
        record.mode, record.seed, record.threshold_trials, record.wall_seconds, record.real_data
    );
    if record.queries.is_empty() {
        let _ = writeln!(
            s,
            "Part (b) did not run, so no figure of it is written (no `queries_*.svg`).\n"
        );
    }
    let _ = writeln!(
        s,
        "## (a) Thresholds on a line\n\nDomain: the grid {{k/2^{DOMAIN_BITS}}} of [0, 1]. \
         Data at every scale around the true threshold θ = {THETA}: x = θ ± 2^(−U·{DOMAIN_BITS}), \
         U uniform on [0, 1], each training label flipped with probability η. Error: against \
         the true threshold's labels on {} fresh test points per trial (for the walk and the \
         soft majority, the exact probability of a wrong answer at each test point), mean over \
         trials; against noisy labels add η(1 − 2·error). The walk's floor is α = \
         clamp(2/(εn), 10⁻³, ¼); subsample-and-aggregate uses k = min(⌈(4/ε) ln(2/0.05)⌉, n/4) \
         parts of ERM thresholds. The private learners are the exponential mechanism with \
         utility −mistakes: over all 2^{DOMAIN_BITS} + 1 thresholds of the domain (sampled \
         through the groups of thresholds that agree on the data, in floating point: a \
         simulation of the ideal mechanism), and the library's exact `PrivateThresholdLearner` \
         over a grid of {} thresholds, which cannot resolve the data's finer scales. The \
         paper's claim: the walk's sample complexity does not depend on the domain, a pure-DP \
         learner's grows with ln|X|.\n",
        record.threshold_test_points,
        LEARNER_GRID + 1
    );
    let ns: Vec<usize> = {
        let mut ns: Vec<usize> = cells.iter().map(|c| c.n).collect();
        ns.sort_unstable();
        ns.dedup();
        ns
    };
    for &epsilon in &EPSILONS {
        for &noise in &NOISES {
            let _ = writeln!(s, "### ε = {epsilon}, η = {noise}\n");
            let _ = write!(s, "| method |");
            for n in &ns {
                let _ = write!(s, " n = {n} |");
            }
            let _ = writeln!(s, "\n|---|{}", "---|".repeat(ns.len()));
            for method in THRESHOLD_METHODS {
                let _ = write!(s, "| {method} |");
                for &n in &ns {
                    let value = threshold_cell_error(cells, method, epsilon, noise, n)
                        .map_or("—".into(), |e| format!("{e:.4}"));
                    let _ = write!(s, " {value} |");
                }
                let _ = writeln!(s);
            }
            let _ = writeln!(s);
        }
    }
    for target in [0.15, 0.02] {
        let _ = writeln!(
            s,
            "Samples needed for error ≤ {target} (first n of the grid that reaches it, η = 0):\n\n\
             | method | ε = 0.1 | ε = 1 |\n|---|---|---|"
        );
        for method in THRESHOLD_METHODS {
            let needed = |epsilon: f64| {
                ns.iter()
                    .find(|&&n| {
                        threshold_cell_error(cells, method, epsilon, 0.0, n)
                            .is_some_and(|e| e <= target)
                    })
                    .map_or(format!("> {}", ns.last().copied().unwrap_or(0)), |n| {
                        n.to_string()
                    })
            };
            let _ = writeln!(s, "| {method} | {} | {} |", needed(0.1), needed(1.0));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "The walk answers with error ~α + m/n whatever the domain; the learner over the whole \
         domain needs εn of the order of ln|X| = {DOMAIN_BITS}·ln 2 before its choice \
         concentrates (and is then exact, as a learned threshold on data without noise can \
         be); the grid learner is stuck at the mass its grid cannot resolve.\n"
    );
    // Sanity: the paper's claim at the smallest n (ε = 1, no noise), and the ERM threshold
    // at the largest.
    let mut ok = true;
    if let (Some(&smallest), Some(&largest)) = (ns.first(), ns.last()) {
        let walk = threshold_cell_error(cells, METHOD_WALK, 1.0, 0.0, smallest);
        let learner = threshold_cell_error(cells, METHOD_DOMAIN_LEARNER, 1.0, 0.0, smallest);
        if let (Some(w), Some(l)) = (walk, learner)
            && w >= l
        {
            eprintln!(
                "SANITY FAILED: walk error {w} not below the domain learner's {l} at ε = 1, n = {smallest}"
            );
            ok = false;
        }
        let erm = threshold_cell_error(cells, METHOD_ERM, 1.0, 0.0, largest);
        if erm.is_none_or(|e| e > 0.002) {
            eprintln!("SANITY FAILED: ERM threshold error {erm:?} > 0.002 at n = {largest}");
            ok = false;
        }
    }
    let _ = writeln!(s, "\n## (b) Prediction versus training\n");
    if record.queries.is_empty() {
        let _ = writeln!(s, "Not run: {}.", record.real_data);
    } else {
        let _ = writeln!(
            s,
            "80/20 train/test split. Each prediction interface answers `q` queries under the \
             total budget, each answer at ε = total/q (the largest share that fits); its \
             error is the mean over {} test queries of answers at that ε. §7.1/§7.2 aggregate \
             {REAL_PARTS} non-private logistic regressions (Λ = {PART_LAMBDA:e}) on disjoint parts \
             (§7.2 averages their sigmoid scores); §7.3 uses logistic loss with λ = \
             (2/B)√((1 + 1/ε)/n), B = {COMPARATOR_NORM}; §7.4 one pass with η = B/√n. \
             Objective perturbation (Huber SVM) is trained once at the total ε (best Λ of \
             1e-2, 1e-3, 1e-4 on the test set, 3 draws: optimistic) and answers any number \
             of queries. The crossover is the largest q at which a prediction interface \
             still beats it.\n",
            record.queries.first().map_or(0, |c| c.evaluated)
        );
        let mut datasets: Vec<&str> = record.queries.iter().map(|c| c.dataset).collect();
        datasets.dedup();
        let mut totals: Vec<f64> = record.queries.iter().map(|c| c.total_epsilon).collect();
        totals.sort_by(f64::total_cmp);
        totals.dedup();
        let mut qs: Vec<usize> = record.queries.iter().map(|c| c.queries).collect();
        qs.sort_unstable();
        qs.dedup();
        for dataset in &datasets {
            for &total in &totals {
                let _ = writeln!(s, "### {dataset}, total ε = {total}\n");
                let _ = write!(s, "| method |");
                for q in &qs {
                    let _ = write!(s, " q = {q} |");
                }
                let _ = writeln!(s, " crossover |\n|---|{}---|", "---|".repeat(qs.len()));
                let error = |method: &str, q: usize| {
                    record
                        .queries
                        .iter()
                        .find(|c| {
                            c.dataset == *dataset
                                && c.method == method
                                && c.total_epsilon == total
                                && c.queries == q
                        })
                        .map(|c| c.mean_error)
                };
                for method in [
                    METHOD_SOFT,
                    METHOD_AVERAGE,
                    METHOD_STABLE,
                    METHOD_SGD,
                    METHOD_OBJECTIVE,
                    METHOD_NON_PRIVATE,
                ] {
                    let _ = write!(s, "| {method} |");
                    for &q in &qs {
                        let value = error(method, q).map_or("—".into(), |e| format!("{e:.4}"));
                        let _ = write!(s, " {value} |");
                    }
                    let crossover = if [METHOD_OBJECTIVE, METHOD_NON_PRIVATE].contains(&method) {
                        "—".to_owned()
                    } else {
                        qs.iter()
                            .filter(|&&q| {
                                matches!((error(method, q), error(METHOD_OBJECTIVE, q)),
                                    (Some(e), Some(o)) if e <= o)
                            })
                            .max()
                            .map_or("never better".into(), |q| format!("beats it up to q = {q}"))
                    };
                    let _ = writeln!(s, " {crossover} |");
                }
                let _ = writeln!(s);
            }
        }
    }
    (s, ok)
}

// ---------------------------------------------------------------------------------------
// Figures.

/// The threshold figures (log error axis: the walk's zero errors sit on its floor) and,
/// per dataset and total ε, the query figures; none for a part that did not run. Several
/// methods share values (zeros on the floor, the same error at every query count), so the
/// curves are spread sideways a few pixels (`dodge`) and differ in dash and marker; the
/// threshold points have ± s.e. bars over trials (the query cells record no s.e.: one
/// training each). A quick run's figures say so in their subtitle.
fn figures(
    out: &OutDir,
    thresholds: &[ThresholdCell],
    queries: &[QueryCell],
    quick: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    for (file, epsilon, noise) in [
        (FILES[3], 0.1, 0.0),
        (FILES[4], 0.1, 0.1),
        (FILES[5], 1.0, 0.0),
        (FILES[6], 1.0, 0.1),
    ] {
        let mut figure = Figure::error_versus(
            format!("thresholds on a line: error vs n, ε = {epsilon}, label noise {noise}"),
            "n (training points)",
        );
        figure.y_scale = Scale::Log;
        figure.y_label = "error".into();
        figure.dodge = true;
        let trials = thresholds.iter().map(|c| c.trials).max().unwrap_or(0);
        figure.subtitle = quick.then(|| plot::quick_subtitle(&format!("{trials} trials"), None));
        for method in THRESHOLD_METHODS {
            let points = thresholds
                .iter()
                .filter(|c| c.method == method && c.epsilon == epsilon && c.label_noise == noise)
                .map(|c| (c.n as f64, c.mean_error, c.std_error))
                .collect();
            figure.push(Series::line_se(method, points));
        }
        plot::draw(out, file, &figure)?;
    }
    for (k, dataset) in ["adult", "kddcup99"].into_iter().enumerate() {
        for (j, total) in [0.1, 1.0].into_iter().enumerate() {
            let mut figure = Figure::error_versus(
                format!("{dataset}: test error vs queries answered, total ε = {total}"),
                "queries answered under the budget",
            );
            figure.dodge = true;
            let evaluated = queries.iter().map(|c| c.evaluated).max().unwrap_or(0);
            figure.subtitle = quick.then(|| {
                plot::quick_subtitle(
                    &format!("one training, {evaluated} test queries"),
                    Some("no error bars: a single training per point"),
                )
            });
            for method in [
                METHOD_SOFT,
                METHOD_AVERAGE,
                METHOD_STABLE,
                METHOD_SGD,
                METHOD_OBJECTIVE,
                METHOD_NON_PRIVATE,
            ] {
                let points = queries
                    .iter()
                    .filter(|c| {
                        c.dataset == dataset && c.method == method && c.total_epsilon == total
                    })
                    .map(|c| (c.queries as f64, c.mean_error))
                    .collect();
                figure.push(Series::line(method, points));
            }
            plot::draw(out, FILES[7 + 2 * k + j], &figure)?;
        }
    }
    Ok(())
}
