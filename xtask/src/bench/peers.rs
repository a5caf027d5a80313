//! `cargo xtask bench peers`: this workspace's logistic regression beside scikit-learn
//! (liblinear and lbfgs, non-private) and diffprivlib (objective perturbation) on Adult's
//! training rows, the same rows and objective for every tool, runs interleaved.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dp_datasets::{ADULT_FILES, ADULT_TRAIN_ROWS, DataDir, load_adult};
use dp_erm::{ErmParams, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;
use dp_optim::{DEFAULT_TOLERANCE, GlmObjective};
use serde::Serialize;

use super::memory::{Memory, measure};
use super::python::{self, Job, Outcome, TOOLS};
use super::report::{self, Machine};
use super::{exchange, test_error};
use crate::folder_lock::FolderLock;
use crate::keep::{self, Holdings};
use crate::safe_write::{OutDir, PathError, Temporary, temporary_name};

/// The problems of the issue: Λ × ε on Adult (paper preprocessing).
const LAMBDAS: [f64; 3] = [1e-3, 1e-4, 1e-5];
const EPSILONS: [f64; 2] = [0.1, 0.2];
/// How much higher (relative) our non-private objective may end than a peer's.
const OBJECTIVE_SLACK: f64 = 1e-9;

/// What `bench peers` was asked to do.
pub struct Options {
    pub setup: bool,
    pub python: String,
    pub repeats: usize,
    pub data_dir: Option<PathBuf>,
    pub out: PathBuf,
}

/// One fit by one tool.
#[derive(Debug, Clone, Serialize)]
struct Run {
    tool: String,
    lambda: f64,
    epsilon: Option<f64>,
    round: usize,
    seconds: f64,
    iterations: u64,
    memory: Memory,
    /// J(w) of the returned weights on the training rows (non-private fits only: a private
    /// fit minimizes a perturbed objective).
    objective: Option<f64>,
    gradient_norm: Option<f64>,
    test_error: f64,
    /// The weights of a private fit of the Python row or of the Rust row that builds its set
    /// (the two must be the same model: [`same_model_count`]).
    #[serde(skip)]
    weights: Option<Vec<f64>>,
}

/// Medians over the rounds of one (tool, Λ, ε).
#[derive(Debug, Clone, Serialize)]
struct Row {
    tool: String,
    lambda: f64,
    epsilon: Option<f64>,
    runs: usize,
    median_ms: f64,
    /// The tool's median time over ours on the same problem (private against private).
    ratio_to_ours: f64,
    objective: Option<f64>,
    /// `(J_tool − J_ours)/J_ours`: positive when ours is lower.
    objective_gap_to_ours: Option<f64>,
    gradient_norm: Option<f64>,
    median_test_error: f64,
    max_memory_growth_mib: Option<f64>,
    max_peak_mib: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    machine: Machine,
    rows_train: usize,
    rows_test: usize,
    features: usize,
    entries_train: usize,
    repeats: usize,
    tolerances: Tolerances,
    skipped: Vec<String>,
    peer_versions: serde_json::Value,
    rows: Vec<Row>,
    /// `(same, compared)`: private fits in which `dpml` returned, bit for bit, the weights
    /// of the Rust fit that builds its set (both seeded alike).
    python_same_model: (usize, usize),
    runs: Vec<Run>,
}

/// The tolerance each tool was given for `‖∇J‖ ≤ γ` (see [`tolerances`]).
#[derive(Debug, Clone, Copy, Serialize)]
struct Tolerances {
    gamma: f64,
    liblinear: f64,
    lbfgs: f64,
}

pub fn run(options: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    if options.repeats == 0 || options.repeats > 1000 {
        return Err(format!(
            "--repeats must be between 1 and 1000, not {}",
            options.repeats
        )
        .into());
    }
    let bench = options.out.join("bench");
    // Claimed and checked now; the folder the report goes to is chosen once the tools that
    // ran are known.
    let lock = keep::claim(&bench)?;
    OutDir::prepare(&bench, &REPORT_FILES)?;
    let dir = DataDir::resolve(options.data_dir.as_deref());
    dir.check_folder()?;
    let missing: Vec<&str> = dir.missing(&ADULT_FILES).iter().map(|f| f.name).collect();
    if !missing.is_empty() {
        return Err(format!(
            "bench peers needs Adult ({} missing in {}): {}",
            missing.join(", "),
            dir.path().display(),
            dp_datasets::HOW_TO_GET
        )
        .into());
    }
    if options.setup {
        python::setup(&options.python)?;
    }
    let machine_before = Machine::now();
    let adult = load_adult(&dir, dp_datasets::Scaling::PaperColumnMax)?;
    let train = adult.training_set(&(0..ADULT_TRAIN_ROWS).collect::<Vec<_>>())?;
    let test = adult.training_set(&(ADULT_TRAIN_ROWS..adult.len()).collect::<Vec<_>>())?;
    let tolerances = tolerances(&train)?;
    let data_file = Temporary::new(temporary_name(
        &std::env::temp_dir().join("dp-ml-bench-adult.bin"),
    ));
    exchange::write(data_file.path(), &train, &test)?;
    let train_arrays = exchange::csr_arrays(&train);

    let mut skipped = Vec::new();
    let interpreter = python::interpreter();
    if interpreter.is_none() {
        skipped.push(format!(
            "every Python peer: no environment at {} (run `cargo xtask bench peers --setup`)",
            python::venv().display()
        ));
    }
    let mut runs = Vec::new();
    let mut versions = serde_json::Value::Null;
    let mut dead_tools: Vec<&str> = Vec::new();
    for round in 0..options.repeats {
        eprintln!(
            "xtask: bench peers, round {} of {}",
            round + 1,
            options.repeats
        );
        runs.extend(our_round(&train, &train_arrays, &test, round)?);
        let Some(python) = &interpreter else { continue };
        for tool in TOOLS {
            if dead_tools.contains(&tool) {
                continue;
            }
            let jobs = jobs_for(tool, tolerances, round);
            match python::run_tool(python, data_file.path(), tool, &jobs) {
                Outcome::Fits(fits) => {
                    for fit in fits {
                        versions = fit.versions.clone();
                        runs.push(evaluate_peer(tool, &fit, &train, &test, round)?);
                    }
                }
                Outcome::Skipped(why) => {
                    eprintln!("xtask: skipped {why}");
                    skipped.push(why);
                    dead_tools.push(tool);
                }
            }
        }
    }
    let rows = summarize(&runs);
    let python_same_model = same_model_count(&runs);
    let objectives_ok = rows.iter().all(|r| {
        r.objective_gap_to_ours
            .is_none_or(|gap| gap >= -OBJECTIVE_SLACK)
    });
    let out = report_folder(&lock, &bench, rows.iter().map(|r| r.tool.as_str()))?;
    let report = Report {
        machine: machine_before.until_now(),
        rows_train: train.len(),
        rows_test: test.len(),
        features: train.features(),
        entries_train: train.design().stored_entries(),
        repeats: options.repeats,
        tolerances,
        skipped,
        peer_versions: versions,
        rows,
        python_same_model,
        runs,
    };
    out.write("peers.json", serde_json::to_string_pretty(&report)?)?;
    out.write("peers.md", markdown(&report))?;
    println!("{}", markdown(&report));
    println!("wrote {}", out.path().join("peers.md").display());
    if !objectives_ok {
        eprintln!("xtask: a peer reached a lower non-private objective than ours (see the table)");
    }
    Ok(objectives_ok)
}

/// The report's files, in `<out>/bench`.
const REPORT_FILES: [&str; 2] = ["peers.md", "peers.json"];
/// This workspace's name in the report's rows.
const OURS: &str = "dp-ml";
/// Our private fits again, timed from the training rows as CSR arrays: the training set
/// built (checks, the column copy) and then fitted, as a Rust user with rows in memory
/// does and as every fit through Python does. The `dp-ml` row times the fit alone, on a
/// set built once before the rounds.
const OURS_FROM_ARRAYS: &str = "dp-ml (set built in the timing)";

/// What a report with rows of `tools` holds: the peers among them.
fn holdings<'a>(tools: impl Iterator<Item = &'a str>) -> Holdings {
    tools
        .filter(|&tool| tool != OURS && tool != OURS_FROM_ARRAYS)
        .fold(Holdings::new(false), Holdings::with_part)
}

/// The folder for a report with rows of `tools`: `bench` itself, unless the report already
/// there has peers this one lacks (no Python environment, a tool that failed), which it
/// keeps (see `keep`).
fn report_folder<'a>(
    lock: &Arc<FolderLock>,
    bench: &Path,
    tools: impl Iterator<Item = &'a str>,
) -> Result<OutDir, PathError> {
    let earlier = keep::read_json(&bench.join("peers.json")).and_then(|report| {
        let rows = report.get("rows")?.as_array()?;
        Some(holdings(
            rows.iter().filter_map(|row| row.get("tool")?.as_str()),
        ))
    });
    keep::destination_claimed(
        lock,
        bench,
        &REPORT_FILES,
        &holdings(tools),
        earlier.as_ref(),
    )
}

/// γ = 10⁻¹⁰ on `‖∇J‖₂`, in each tool's terms. liblinear (TRON) stops at
/// `‖∇f‖ ≤ tol·max(min(#pos, #neg), 1)/n · ‖∇f(0)‖` with `f = J/Λ`, so
/// `tol = γ·n / (max(min(#pos, #neg), 1)·‖∇J(0)‖)`; lbfgs (and diffprivlib) stop at
/// `max_i |∂J/∂w_i| ≤ tol`, so `tol = γ/√d` (or at a relative decrease of 64 ulps, which
/// the APIs do not expose).
fn tolerances(train: &TrainingSet) -> Result<Tolerances, Box<dyn std::error::Error>> {
    let gamma = DEFAULT_TOLERANCE;
    let objective = GlmObjective::new(train.design(), train.labels(), Loss::Logistic, 1.0)?;
    let start_gradient = norm(&objective.gradient(&vec![0.0; train.features()])?);
    let positives = train.labels().iter().filter(|&&y| y > 0.0).count();
    let smaller_class = positives.min(train.len() - positives).max(1) as f64;
    Ok(Tolerances {
        gamma,
        liblinear: gamma * train.len() as f64 / (smaller_class * start_gradient),
        lbfgs: gamma / (train.features() as f64).sqrt(),
    })
}

fn jobs_for(tool: &str, tolerances: Tolerances, round: usize) -> Vec<Job> {
    let private = tool == "diffprivlib" || tool == "dpml";
    let tol = if tool == "sklearn-liblinear" {
        tolerances.liblinear
    } else {
        tolerances.lbfgs
    };
    let epsilons: Vec<Option<f64>> = if private {
        EPSILONS.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    LAMBDAS
        .iter()
        .flat_map(|&lambda| {
            epsilons.iter().map(move |&epsilon| Job {
                lambda,
                epsilon,
                tol,
                seed: private_seed(round),
            })
        })
        .collect()
}

/// The seed of the private fits of round `round` through Python and of the Rust fit that
/// builds its set (which then train the same model: the like-for-like comparison).
fn private_seed(round: usize) -> u64 {
    1000 + round as u64
}

/// `(same, compared)`: the (Λ, ε, round) with both a `dpml` fit and a Rust fit that builds
/// its set, and how many of them returned the same weights bit for bit.
fn same_model_count(runs: &[Run]) -> (usize, usize) {
    let weights_of = |tool: &str, run: &Run| {
        runs.iter()
            .find(|r| {
                r.tool == tool
                    && r.lambda == run.lambda
                    && r.epsilon == run.epsilon
                    && r.round == run.round
            })
            .and_then(|r| r.weights.as_ref())
    };
    let pairs: Vec<bool> = runs
        .iter()
        .filter(|r| r.tool == "dpml" && r.epsilon.is_some())
        .filter_map(|python| {
            let rust = weights_of(OURS_FROM_ARRAYS, python)?;
            let python = python.weights.as_ref()?;
            Some(
                python.len() == rust.len()
                    && python
                        .iter()
                        .zip(rust)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
            )
        })
        .collect();
    (pairs.iter().filter(|same| **same).count(), pairs.len())
}

/// Our fits of one round: non-private per Λ, objective perturbation per Λ and ε.
fn our_round(
    train: &TrainingSet,
    arrays: &exchange::CsrArrays,
    test: &TrainingSet,
    round: usize,
) -> Result<Vec<Run>, Box<dyn std::error::Error>> {
    let mut rng = InsecureSeededRng::new(2016 + round as u64);
    // One unmeasured fit first, as each peer's process makes (peers.py): after the Python
    // processes of the previous round, caches are cold and the worker threads asleep.
    ErmParams::non_private(Loss::Logistic, LAMBDAS[0]).fit(train, &mut rng)?;
    let mut runs = Vec::new();
    for lambda in LAMBDAS {
        let problems = std::iter::once((None, ErmParams::non_private(Loss::Logistic, lambda)))
            .chain(EPSILONS.iter().map(|&e| {
                (
                    Some(e),
                    ErmParams::objective_perturbation(Loss::Logistic, lambda, e),
                )
            }));
        for (epsilon, params) in problems {
            let (fit, seconds, memory) = measure(|| params.fit(train, &mut rng));
            let fit = fit?;
            let weights = fit.model().weights();
            let (objective, gradient_norm) = match epsilon {
                None => objective_at(train, lambda, weights)?,
                Some(_) => (None, None),
            };
            runs.push(Run {
                tool: OURS.into(),
                lambda,
                epsilon,
                round,
                seconds,
                iterations: fit.solver_iterations() as u64,
                memory,
                objective,
                gradient_norm,
                test_error: test_error(test, weights),
                weights: None,
            });
            if epsilon.is_some() {
                runs.push(fit_from_arrays(&params, arrays, train, test, round)?);
            }
        }
    }
    Ok(runs)
}

/// [`OURS_FROM_ARRAYS`]: the set built from `arrays` (moved into the builder, as a caller
/// that owns them does: the copies are made before the timer) and fitted, timed together,
/// with the seed of the round's fits through Python: the same model as `dpml`'s, so that
/// the two rows time the same work (the noise decides the solver's steps).
fn fit_from_arrays(
    params: &ErmParams,
    arrays: &exchange::CsrArrays,
    train: &TrainingSet,
    test: &TrainingSet,
    round: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    let mut rng = InsecureSeededRng::new(private_seed(round));
    let (offsets, indices, values, labels) = (
        arrays.offsets.clone(),
        arrays.indices.clone(),
        arrays.values.clone(),
        train.labels().to_vec(),
    );
    let (fit, seconds, memory) = measure(|| {
        let set = TrainingSet::builder(train.features())
            .csr_rows(offsets, indices, values)
            .labels(labels)
            .build()?;
        params.fit(&set, &mut rng)
    });
    let fit = fit?;
    Ok(Run {
        tool: OURS_FROM_ARRAYS.into(),
        lambda: params.regularization(),
        epsilon: fit.epsilon(),
        round,
        seconds,
        iterations: fit.solver_iterations() as u64,
        memory,
        objective: None,
        gradient_norm: None,
        test_error: test_error(test, fit.model().weights()),
        weights: Some(fit.model().weights().to_vec()),
    })
}

fn evaluate_peer(
    tool: &str,
    fit: &python::PeerFit,
    train: &TrainingSet,
    test: &TrainingSet,
    round: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    if fit.weights.len() != train.features() || fit.weights.iter().any(|w| !w.is_finite()) {
        return Err(format!(
            "{tool} returned {} weights (expected {} finite ones)",
            fit.weights.len(),
            train.features()
        )
        .into());
    }
    let (objective, gradient_norm) = match fit.epsilon {
        None => objective_at(train, fit.lambda, &fit.weights)?,
        Some(_) => (None, None),
    };
    Ok(Run {
        tool: tool.into(),
        lambda: fit.lambda,
        epsilon: fit.epsilon,
        round,
        seconds: fit.seconds,
        iterations: fit.iterations,
        memory: fit.memory(),
        objective,
        gradient_norm,
        test_error: test_error(test, &fit.weights),
        weights: (tool == "dpml" && fit.epsilon.is_some()).then(|| fit.weights.clone()),
    })
}

/// `J(w)` and `‖∇J(w)‖` on the training rows, computed here for every tool alike.
fn objective_at(
    train: &TrainingSet,
    lambda: f64,
    weights: &[f64],
) -> Result<(Option<f64>, Option<f64>), Box<dyn std::error::Error>> {
    let objective = GlmObjective::new(train.design(), train.labels(), Loss::Logistic, lambda)?;
    Ok((
        Some(objective.value(weights)?),
        Some(norm(&objective.gradient(weights)?)),
    ))
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn summarize(runs: &[Run]) -> Vec<Row> {
    let mut keys: Vec<(String, f64, Option<f64>)> = Vec::new();
    for run in runs {
        let key = (run.tool.clone(), run.lambda, run.epsilon);
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    let select = |tool: &str, lambda: f64, epsilon: Option<f64>| -> Vec<&Run> {
        runs.iter()
            .filter(|r| r.tool == tool && r.lambda == lambda && r.epsilon == epsilon)
            .collect()
    };
    let median_ms = |group: &[&Run]| report::median(group.iter().map(|r| r.seconds * 1e3));
    let mut rows: Vec<Row> = keys
        .iter()
        .map(|(tool, lambda, epsilon)| {
            let group = select(tool, *lambda, *epsilon);
            let ours = select(OURS, *lambda, *epsilon);
            let objective = group.iter().find_map(|r| r.objective);
            let our_objective = ours.iter().find_map(|r| r.objective);
            Row {
                tool: tool.clone(),
                lambda: *lambda,
                epsilon: *epsilon,
                runs: group.len(),
                median_ms: median_ms(&group),
                ratio_to_ours: median_ms(&group) / median_ms(&ours),
                objective,
                objective_gap_to_ours: objective
                    .zip(our_objective)
                    .map(|(theirs, ours)| (theirs - ours) / ours),
                gradient_norm: group.iter().find_map(|r| r.gradient_norm),
                median_test_error: report::median(group.iter().map(|r| r.test_error)),
                max_memory_growth_mib: group
                    .iter()
                    .filter_map(|r| r.memory.growth_mib())
                    .reduce(f64::max),
                max_peak_mib: group
                    .iter()
                    .filter_map(|r| r.memory.peak_mib())
                    .reduce(f64::max),
            }
        })
        .collect();
    rows.sort_by(|a, b| {
        b.lambda
            .total_cmp(&a.lambda)
            .then(
                a.epsilon
                    .unwrap_or(0.0)
                    .total_cmp(&b.epsilon.unwrap_or(0.0)),
            )
            .then_with(|| tool_order(&a.tool).cmp(&tool_order(&b.tool)))
    });
    rows
}

/// Our private fit against each non-private peer on the same Λ: `(Λ, ε, peer, the peer's
/// median time over ours)` — what a user pays for privacy here against what the usual
/// non-private tool costs (issue 16's comparison).
fn private_against_non_private(rows: &[Row]) -> Vec<(f64, f64, String, f64)> {
    let mut ratios = Vec::new();
    for ours in rows.iter().filter(|r| r.tool == OURS) {
        let Some(epsilon) = ours.epsilon else {
            continue;
        };
        for peer in rows
            .iter()
            .filter(|r| r.tool != OURS && r.epsilon.is_none() && r.lambda == ours.lambda)
        {
            ratios.push((
                ours.lambda,
                epsilon,
                peer.tool.clone(),
                peer.median_ms / ours.median_ms,
            ));
        }
    }
    ratios
}

/// The fit through Python (`dpml`) against the Rust fit and against diffprivlib on the same
/// (Λ, ε): `(Λ, ε, dpml over dp-ml, dpml over dp-ml with the set built in the timing,
/// diffprivlib over dpml)` — issue 32's targets (within 10% of Rust, at least 20×
/// diffprivlib). A Python fit builds its training set from the array it is given, so the
/// like-for-like Rust row is the one that builds its set in the timing.
type PythonRatios = (f64, f64, f64, Option<f64>, Option<f64>);

fn python_against_rust_and_diffprivlib(rows: &[Row]) -> Vec<PythonRatios> {
    let median = |tool: &str, lambda: f64, epsilon: f64| {
        rows.iter()
            .find(|r| r.tool == tool && r.lambda == lambda && r.epsilon == Some(epsilon))
            .map(|r| r.median_ms)
    };
    rows.iter()
        .filter(|r| r.tool == "dpml")
        .filter_map(|python| {
            let epsilon = python.epsilon?;
            Some((
                python.lambda,
                epsilon,
                python.ratio_to_ours,
                median(OURS_FROM_ARRAYS, python.lambda, epsilon).map(|m| python.median_ms / m),
                median("diffprivlib", python.lambda, epsilon).map(|m| m / python.median_ms),
            ))
        })
        .collect()
}

fn tool_order(tool: &str) -> usize {
    std::iter::once(OURS)
        .chain(TOOLS)
        .position(|t| t == tool)
        .unwrap_or(usize::MAX)
}

fn markdown(report: &Report) -> String {
    let mut md = String::from("# Logistic regression on Adult: dp-ml beside its peers\n\n");
    md += &format!(
        "Training rows {} (adult.data, paper preprocessing: columns scaled by their maximum, \
         rows clipped to the unit ball), test rows {}, d = {}, {} stored entries. Objective \
         J(w) = (1/n) Σ log(1 + exp(−y wᵀx)) + (Λ/2)‖w‖², no intercept, for every tool \
         (scikit-learn C = 1/(nΛ)); J, ‖∇J‖ and the test errors are computed here, in Rust, \
         from the weights each tool returned. Tolerance ‖∇J‖ ≤ {:e}: liblinear tol = {:.3e}, \
         lbfgs and diffprivlib tol = {:.3e} (see the README). Medians over {} rounds, runs \
         interleaved (dp-ml, liblinear, lbfgs, diffprivlib, dpml per round). Ratio: the tool's \
         median time over dp-ml's on the same problem (private against private); above 1, \
         dp-ml is faster. Memory: peak resident set during the fit minus the resident set \
         before it (the whole process's peak in brackets).\n\n",
        report.rows_train,
        report.rows_test,
        report.features,
        report.entries_train,
        report.tolerances.gamma,
        report.tolerances.liblinear,
        report.tolerances.lbfgs,
        report.repeats,
    );
    md += &report.machine.describe();
    md += "\n\n";
    if report.peer_versions != serde_json::Value::Null {
        md += &format!("Peer versions: {}\n\n", report.peer_versions);
    }
    for why in &report.skipped {
        md += &format!("- skipped: {why}\n");
    }
    md += "\n| Λ | ε | tool | median time | ratio | J(w) | (J − J_dp-ml)/J_dp-ml | ‖∇J‖ | test error | memory MiB |\n";
    md += "|---|---|---|---|---|---|---|---|---|---|\n";
    for row in &report.rows {
        md += &format!(
            "| {:.0e} | {} | {} | {:.1} ms | {:.2}× | {} | {} | {} | {:.4} | {} |\n",
            row.lambda,
            row.epsilon.map_or("—".into(), |e| e.to_string()),
            row.tool,
            row.median_ms,
            row.ratio_to_ours,
            row.objective.map_or("—".into(), |j| format!("{j:.12}")),
            row.objective_gap_to_ours
                .map_or("—".into(), |g| format!("{g:+.1e}")),
            row.gradient_norm.map_or("—".into(), |g| format!("{g:.1e}")),
            row.median_test_error,
            match (row.max_memory_growth_mib, row.max_peak_mib) {
                (Some(growth), Some(peak)) => format!("{growth:.1} ({peak:.0})"),
                _ => "n/a".into(),
            },
        );
    }
    let ratios = private_against_non_private(&report.rows);
    if !ratios.is_empty() {
        md += "\nOur private fit against the non-private peers on the same Λ (the peer's median \
               time over ours; above 1, our private fit is faster than their non-private one):\n\n\
               | Λ | ε | peer (non-private) | ratio |\n|---|---|---|---|\n";
        for (lambda, epsilon, peer, ratio) in ratios {
            md += &format!("| {lambda:.0e} | {epsilon} | {peer} | {ratio:.2}× |\n");
        }
    }
    let python = python_against_rust_and_diffprivlib(&report.rows);
    if !python.is_empty() {
        let (same, compared) = report.python_same_model;
        md += &format!(
            "\nThe fit through Python (`dpml`, the same rows as a scipy CSR matrix read in place, \
             the same Λ, ε and seed as the Rust fit that builds its set: the same model, bit for \
             bit, in {same} of {compared} fits) against the Rust fit alone, against the Rust fit \
             that builds its training set from the rows in the timing as Python does (target: \
             within 10%), and diffprivlib against it (target: at least 20×):\n\n"
        );
        md += "\
               | Λ | ε | dpml / dp-ml (fit alone) | dpml / dp-ml (set built in the timing) | diffprivlib / dpml |\n\
               |---|---|---|---|---|\n";
        let ratio =
            |r: Option<f64>, digits: usize| r.map_or("—".into(), |r| format!("{r:.digits$}×"));
        for (lambda, epsilon, to_rust, to_rust_built, diffprivlib) in python {
            md += &format!(
                "| {lambda:.0e} | {epsilon} | {to_rust:.3}× | {} | {} |\n",
                ratio(to_rust_built, 3),
                ratio(diffprivlib, 1)
            );
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_fits_are_compared_with_the_non_private_peers_of_the_same_lambda() {
        let row = |tool: &str, lambda: f64, epsilon: Option<f64>, median_ms: f64| Row {
            tool: tool.into(),
            lambda,
            epsilon,
            runs: 5,
            median_ms,
            ratio_to_ours: 1.0,
            objective: None,
            objective_gap_to_ours: None,
            gradient_norm: None,
            median_test_error: 0.2,
            max_memory_growth_mib: None,
            max_peak_mib: None,
        };
        let rows = [
            row(OURS, 1e-3, None, 5.0),
            row(OURS, 1e-3, Some(0.1), 4.0),
            row("sklearn-liblinear", 1e-3, None, 60.0),
            row("diffprivlib", 1e-3, Some(0.1), 100.0),
            row(OURS, 1e-4, Some(0.2), 8.0),
            row("sklearn-liblinear", 1e-4, None, 120.0),
        ];
        assert_eq!(
            private_against_non_private(&rows),
            vec![
                (1e-3, 0.1, "sklearn-liblinear".to_string(), 15.0),
                (1e-4, 0.2, "sklearn-liblinear".to_string(), 15.0),
            ]
        );
    }

    #[test]
    fn the_python_row_is_compared_with_rust_and_diffprivlib() {
        let row = |tool: &str, epsilon: Option<f64>, median_ms: f64, ratio: f64| Row {
            tool: tool.into(),
            lambda: 1e-4,
            epsilon,
            runs: 1,
            median_ms,
            ratio_to_ours: ratio,
            objective: None,
            objective_gap_to_ours: None,
            gradient_norm: None,
            median_test_error: 0.2,
            max_memory_growth_mib: None,
            max_peak_mib: None,
        };
        let rows = [
            row(OURS, Some(0.1), 10.0, 1.0),
            row(OURS_FROM_ARRAYS, Some(0.1), 20.0, 2.0),
            row("dpml", Some(0.1), 10.5, 1.05),
            row("diffprivlib", Some(0.1), 420.0, 42.0),
            row("dpml", Some(0.2), 11.0, 1.1),
        ];
        assert_eq!(
            python_against_rust_and_diffprivlib(&rows),
            vec![
                (1e-4, 0.1, 1.05, Some(0.525), Some(40.0)),
                (1e-4, 0.2, 1.1, None, None)
            ]
        );
    }

    #[test]
    fn a_report_without_peers_keeps_an_earlier_one_with_peers() {
        let bench = std::env::temp_dir().join(format!("xtask-peers-keep-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&bench);
        std::fs::create_dir_all(&bench).unwrap();
        let earlier =
            r#"{"rows": [{"tool": "dp-ml"}, {"tool": "sklearn-lbfgs"}, {"tool": "diffprivlib"}]}"#;
        std::fs::write(bench.join("peers.json"), earlier).unwrap();
        let lock = keep::claim(&bench).unwrap();
        // No Python environment: only our rows.
        let out = report_folder(&lock, &bench, [OURS].into_iter()).unwrap();
        assert_eq!(out.path(), bench.join(keep::PARTIAL_FOLDER));
        // One peer fewer than before is still less.
        let out = report_folder(&lock, &bench, [OURS, "sklearn-lbfgs"].into_iter()).unwrap();
        assert_eq!(out.path(), bench.join(keep::PARTIAL_FOLDER));
        // Every earlier peer (and more) replaces the report.
        let all = [OURS, "sklearn-liblinear", "sklearn-lbfgs", "diffprivlib"];
        assert_eq!(
            report_folder(&lock, &bench, all.into_iter())
                .unwrap()
                .path(),
            bench
        );
        // A report of an older version without rows, or none at all, is replaced.
        std::fs::write(bench.join("peers.json"), "{}").unwrap();
        assert_eq!(
            report_folder(&lock, &bench, [OURS].into_iter())
                .unwrap()
                .path(),
            bench
        );
        assert_eq!(
            std::fs::read_to_string(bench.join("peers.json")).unwrap(),
            "{}"
        );
        std::fs::remove_dir_all(&bench).unwrap();
    }
}
