//! `cargo xtask reproduce utility`: how accurate a pure-ε linear classifier can be at a
//! fixed guarantee. An ablation on Adult and KDD (calibration rule, loss and Huber width, a
//! fine Λ grid, encoding levers), the data-independent Λ rule fitted on synthetic data, and
//! the three ways to choose Λ end to end (rule, split-and-select, random stopping).

mod end_to_end;
mod grid;
mod output;
mod rule_fit;
mod variant;

use std::time::Instant;

use dp_datasets::{DataDir, Dataset, KddEncoding, Scaling, load_adult, load_kddcup99_encoded};
use serde::Serialize;

use super::linear::shuffled;
use super::tuning::prepare_real_data_run;
use super::{Finished, KDD_SUBSET, Options};

use end_to_end::Choice;
use variant::Lever;

pub use end_to_end::EndToEndCell;
pub use grid::GridCell;
pub use rule_fit::RuleFit;

/// The files this experiment writes in `<out>/utility`.
pub const FILES: [&str; 7] = [
    "run.json",
    "summary.md",
    "cells.json",
    "cells.csv",
    "end_to_end.csv",
    "adult_error_vs_lambda.svg",
    "kddcup99_error_vs_lambda.svg",
];

/// The privacy levels of the study.
pub const EPSILONS: [f64; 5] = [0.05, 0.1, 0.2, 0.5, 1.0];

/// The dataset name of the end-to-end runs on KDD with its count columns logged.
pub const LOG_COUNTS_NAME: &str = "kddcup99 (log counts)";

/// Settings of one mode.
struct Plan {
    folds: usize,
    draws: usize,
    /// Λ grid points per decade (the papers use 1).
    per_decade: u32,
    end_to_end_runs: usize,
    /// The grid runs from 1e-1 down to 10^−smallest_lambda.
    smallest_lambda: u32,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Self {
                folds: 3,
                draws: 1,
                per_decade: 2,
                end_to_end_runs: 1,
                smallest_lambda: 4,
            }
        } else {
            Self {
                folds: 10,
                draws: 2,
                per_decade: 4,
                end_to_end_runs: 2,
                smallest_lambda: 5,
            }
        }
    }
}

#[derive(Serialize)]
pub struct DatasetRecord {
    pub name: String,
    pub rows: usize,
    pub features: usize,
    pub checksums: Vec<(String, String)>,
    pub seconds: f64,
    /// Of which the ablation grid and the end-to-end runs (the rest: loading the data).
    pub grid_seconds: f64,
    pub end_to_end_seconds: f64,
}

#[derive(Serialize)]
pub struct UtilityRecord {
    pub experiment: &'static str,
    pub mode: &'static str,
    pub folds: usize,
    pub noise_draws: usize,
    pub end_to_end_runs: usize,
    pub lambdas: Vec<f64>,
    pub epsilons: Vec<f64>,
    pub seed: u64,
    pub crate_version: &'static str,
    pub datasets: Vec<DatasetRecord>,
    pub wall_seconds: f64,
    pub rule_fit_seconds: f64,
    pub rule_fit: RuleFit,
    pub cells: Vec<GridCell>,
    pub end_to_end: Vec<EndToEndCell>,
}

/// Runs the study; `Ok(false)` when a sanity bound is broken. The output folder and the
/// data files are checked before any work; results are written only at the end.
pub fn run(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    let (dir, out) = prepare_real_data_run(options, "utility", &FILES)?;
    let plan = Plan::new(options.quick);
    eprintln!("utility: fitting the Λ rule on synthetic data");
    let rule_started = Instant::now();
    let rule_fit = rule_fit::run(options.quick, options.seed)?;
    let rule_fit_seconds = rule_started.elapsed().as_secs_f64();
    eprintln!("utility: rule fitted in {rule_fit_seconds:.1} s");
    for fit in &rule_fit.losses {
        eprintln!(
            "  {}: κ = {:.3}, p = {}, mean regret {:.4} (the library's rule: {:.4})",
            fit.loss, fit.scale, fit.exponent, fit.mean_regret, fit.library_regret
        );
    }
    let lambdas = grid::log_grid(1, plan.smallest_lambda, plan.per_decade);
    let variants = variant::ablation_variants();
    let mut cells = Vec::new();
    let mut end_to_end = Vec::new();
    let mut datasets = Vec::new();
    for name in ["adult", "kddcup99"] {
        let started = Instant::now();
        let data = load(&dir, name, KddEncoding::Paper, options.seed)?;
        // KDD's log-count encoding comes from the raw values: loaded again, same subset.
        let log_counts = if name == "kddcup99" {
            Some(Dataset {
                name: LOG_COUNTS_NAME.into(),
                ..load(&dir, name, KddEncoding::LogCounts, options.seed)?
            })
        } else {
            None
        };
        let encoded: Vec<(Lever, &Dataset)> =
            log_counts.iter().map(|d| (Lever::LogCounts, d)).collect();
        eprintln!(
            "{name}: {} rows, {} features; {} folds × {} noise draws over {} Λ × {} ε × {} variants",
            data.len(),
            data.features(),
            plan.folds,
            plan.draws,
            lambdas.len(),
            EPSILONS.len(),
            variants.len()
        );
        let protocol = grid::Protocol {
            variants: &variants,
            lambdas: &lambdas,
            epsilons: &EPSILONS,
            folds: plan.folds,
            draws: plan.draws,
            seed: options.seed,
        };
        let grid_started = Instant::now();
        cells.extend(grid::run(&data, &encoded, &protocol)?);
        let grid_seconds = grid_started.elapsed().as_secs_f64();
        let end_to_end_started = Instant::now();
        let choose_end_to_end = |data: &Dataset, choices: &[Choice]| {
            end_to_end::run(
                data,
                choices,
                &lambdas,
                &EPSILONS,
                plan.folds,
                plan.end_to_end_runs,
                options.seed,
            )
        };
        end_to_end.extend(choose_end_to_end(&data, &Choice::ALL)?);
        if let Some(log_counts) = &log_counts {
            // The rules only: what a user who encodes the counts so gets with no tuning.
            end_to_end.extend(choose_end_to_end(
                log_counts,
                &[Choice::Rule, Choice::GroupedRule],
            )?);
        }
        let end_to_end_seconds = end_to_end_started.elapsed().as_secs_f64();
        let seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "{name}: done in {seconds:.1} s (grid {grid_seconds:.1} s, end to end \
             {end_to_end_seconds:.1} s)"
        );
        datasets.push(DatasetRecord {
            name: data.name.clone(),
            rows: data.len(),
            features: data.features(),
            checksums: data.checksums.clone(),
            seconds,
            grid_seconds,
            end_to_end_seconds,
        });
    }
    let record = UtilityRecord {
        experiment: "utility",
        mode: if options.quick { "quick" } else { "full" },
        folds: plan.folds,
        noise_draws: plan.draws,
        end_to_end_runs: plan.end_to_end_runs,
        lambdas,
        epsilons: EPSILONS.to_vec(),
        seed: options.seed,
        crate_version: env!("CARGO_PKG_VERSION"),
        datasets,
        wall_seconds: start.elapsed().as_secs_f64(),
        rule_fit_seconds,
        rule_fit,
        cells,
        end_to_end,
    };
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    output::write(&out, &record)?;
    output::entry(&record, options.quick, start).write(&out)?;
    drop(replacing);
    eprintln!(
        "wrote {} (summary.md, cells.json, cells.csv, end_to_end.csv, figures) in {:.1} s",
        out.path().display(),
        start.elapsed().as_secs_f64()
    );
    Ok(Finished::complete(output::sanity(&record), &out))
}

/// Adult with the papers' preprocessing, or KDD's 60,000-row random subset (as the linear
/// experiments use; the same rows for every encoding).
fn load(
    dir: &DataDir,
    name: &str,
    encoding: KddEncoding,
    seed: u64,
) -> Result<Dataset, Box<dyn std::error::Error>> {
    if name == "adult" {
        return Ok(load_adult(dir, Scaling::PaperColumnMax)?);
    }
    let full = load_kddcup99_encoded(dir, encoding)?;
    let keep = &shuffled(full.len(), seed)[..KDD_SUBSET.min(full.len())];
    Ok(Dataset {
        rows: keep.iter().map(|&i| full.rows[i].clone()).collect(),
        labels: keep.iter().map(|&i| full.labels[i]).collect(),
        ..full
    })
}
