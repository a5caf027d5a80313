//! `cargo xtask bench scale`: how the cost of a private fit (objective perturbation,
//! logistic loss, Λ = 10⁻³, ε = 0.1) grows with the number of rows n and the dimension d,
//! on synthetic Adult-like rows (`dp_datasets::adult_like`: 14 stored entries per row).

use std::path::PathBuf;

use dp_datasets::adult_like;
use dp_erm::{ErmParams, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;
use serde::Serialize;

use super::memory::{Memory, measure};
use super::plot::{self, Curve};
use super::report::{self, Machine};
use crate::keep::{self, Holdings};

const LAMBDA: f64 = 1e-3;
const EPSILON: f64 = 0.1;
/// Rows of the dimension sweep.
const SWEEP_ROWS: usize = 30_000;

pub struct Options {
    pub quick: bool,
    pub out: PathBuf,
}

/// One (n, d) point: medians over its repeats.
#[derive(Debug, Clone, Serialize)]
struct Point {
    sweep: &'static str,
    rows: usize,
    features: usize,
    stored_entries: usize,
    repeats: usize,
    median_ms: f64,
    /// Median time per stored entry and solver iteration: flat if the cost is linear in
    /// n·nnz per iteration.
    ns_per_entry_iteration: f64,
    iterations: usize,
    memory: Memory,
    /// The training set's own size: CSR plus the column-major copy (8 + 4 bytes per entry
    /// each) plus labels and row offsets.
    data_mib: f64,
}

#[derive(Serialize)]
struct Report {
    /// "quick" or "full".
    mode: &'static str,
    machine: Machine,
    lambda: f64,
    epsilon: f64,
    points: Vec<Point>,
}

/// The report's files, in `<out>/bench`.
const FILES: [&str; 4] = [
    "scale.md",
    "scale.json",
    "scale_rows.svg",
    "scale_features.svg",
];

/// The mode of the report in `bench`; reports of older versions, without a mode, are full
/// when they measured more than the quick sweep's 10^5 rows.
fn recorded_holdings(bench: &std::path::Path) -> Option<Holdings> {
    let report = keep::read_json(&bench.join("scale.json"))?;
    if let Some(mode) = report.get("mode").and_then(|m| m.as_str()) {
        return Some(Holdings::from_mode(mode));
    }
    let most_rows = report
        .get("points")?
        .as_array()?
        .iter()
        .filter_map(|p| p.get("rows")?.as_u64())
        .max()?;
    Some(Holdings::new(most_rows <= 100_000))
}

pub fn run(options: &Options) -> Result<bool, Box<dyn std::error::Error>> {
    let bench = options.out.join("bench");
    let this = Holdings::new(options.quick);
    let out = keep::destination(&bench, &FILES, &this, recorded_holdings)?;
    let machine = Machine::now();
    let row_counts: &[usize] = if options.quick {
        &[10_000, 30_000, 100_000]
    } else {
        &[10_000, 30_000, 100_000, 300_000, 1_000_000]
    };
    let dimensions: &[usize] = if options.quick {
        &[10, 100, 1_000]
    } else {
        &[10, 100, 1_000, 10_000]
    };
    let mut points = Vec::new();
    for &rows in row_counts {
        points.push(measure_point("rows", rows, 105)?);
    }
    for &d in dimensions {
        points.push(measure_point("features", SWEEP_ROWS, d)?);
    }
    let report = Report {
        mode: if options.quick { "quick" } else { "full" },
        machine: machine.until_now(),
        lambda: LAMBDA,
        epsilon: EPSILON,
        points,
    };
    out.write("scale.json", serde_json::to_string_pretty(&report)?)?;
    let sweep = |name: &str, x: fn(&Point) -> f64| -> Vec<(f64, f64)> {
        report
            .points
            .iter()
            .filter(|p| p.sweep == name)
            .map(|p| (x(p), p.median_ms))
            .collect()
    };
    plot::log_log(
        &out,
        "scale_rows.svg",
        "private fit (objective perturbation, logistic) versus n, d = 105",
        "rows n",
        &[Curve {
            name: "median time (ms)".into(),
            points: sweep("rows", |p| p.rows as f64),
        }],
    )?;
    plot::log_log(
        &out,
        "scale_features.svg",
        &format!("private fit versus d, n = {SWEEP_ROWS}"),
        "features d",
        &[Curve {
            name: "median time (ms)".into(),
            points: sweep("features", |p| p.features as f64),
        }],
    )?;
    let md = markdown(&report);
    out.write("scale.md", &md)?;
    println!("{md}");
    println!("wrote {}", out.path().join("scale.md").display());
    Ok(true)
}

fn measure_point(
    sweep: &'static str,
    rows: usize,
    d: usize,
) -> Result<Point, Box<dyn std::error::Error>> {
    eprintln!("xtask: bench scale, n = {rows}, d = {d}");
    let data = adult_like(rows, d, 7)?;
    let train: TrainingSet = data.training_set(&(0..rows).collect::<Vec<_>>())?;
    drop(data);
    let params = ErmParams::objective_perturbation(Loss::Logistic, LAMBDA, EPSILON);
    let repeats = if rows * d <= 30_000 * 1_000 && rows <= 100_000 {
        5
    } else {
        2
    };
    let mut rng = InsecureSeededRng::new(11);
    let (mut times, mut iterations, mut memory) = (Vec::new(), Vec::new(), Memory::default());
    for _ in 0..repeats {
        let (fit, seconds, used) = measure(|| params.fit(&train, &mut rng));
        let fit = fit?;
        times.push(seconds);
        iterations.push(fit.solver_iterations() as f64);
        if used.growth_mib() >= memory.growth_mib() {
            memory = used;
        }
    }
    let entries = train.design().stored_entries();
    let median_ms = report::median(times.iter().map(|s| s * 1e3));
    let median_iterations = report::median(iterations.into_iter());
    Ok(Point {
        sweep,
        rows,
        features: d,
        stored_entries: entries,
        repeats,
        median_ms,
        ns_per_entry_iteration: median_ms * 1e6 / (entries as f64 * median_iterations.max(1.0)),
        iterations: median_iterations.round() as usize,
        memory,
        data_mib: (entries * 24 + rows * 16) as f64 / (1024.0 * 1024.0),
    })
}

fn markdown(report: &Report) -> String {
    let mut md = format!(
        "# How a private fit's cost grows\n\nMode: {}.\n\n",
        report.mode
    );
    md += &format!(
        "Objective perturbation, logistic loss, Λ = {}, ε = {}, on synthetic Adult-like rows \
         (`dp_datasets::adult_like`: min(6, d/2) numeric columns and min(8, d − numeric) \
         one-hot attributes, 14 stored entries per row from d = 14 on, rows of norm 1); \
         the solver is chosen as `ErmParams` chooses it (Newton up to d = 2,000, L-BFGS \
         beyond). Time per entry and iteration is the median time over (stored entries × \
         solver iterations): flat where the cost is linear in n·nnz. Memory: the peak \
         resident set during the fit minus the resident set before it, and the process's \
         peak during the fit (which holds the training set, sized in the last column). The \
         first is a lower bound: the allocator reuses memory the data generator freed, so \
         only the first fit of a fresh process shows the fit's working set (about six \
         vectors of n doubles and the d×d Hessian).\n\n",
        report.lambda, report.epsilon
    );
    md += &report.machine.describe();
    md += "\n\n| sweep | n | d | stored entries | median time | iterations | ns per entry·iteration | fit's extra memory MiB | process peak MiB | training set MiB |\n";
    md += "|---|---|---|---|---|---|---|---|---|---|\n";
    for p in &report.points {
        md += &format!(
            "| {} | {} | {} | {} | {:.1} ms | {} | {:.2} | {} | {} | {:.1} |\n",
            p.sweep,
            p.rows,
            p.features,
            p.stored_entries,
            p.median_ms,
            p.iterations,
            p.ns_per_entry_iteration,
            p.memory
                .growth_mib()
                .map_or("n/a".into(), |m| format!("{m:.1}")),
            p.memory
                .peak_mib()
                .map_or("n/a".into(), |m| format!("{m:.0}")),
            p.data_mib,
        );
    }
    md += "\nFigures: `scale_rows.svg`, `scale_features.svg` (log-log).\n";
    md
}
