//! Out-of-core private logistic regression on synthetic Adult-shaped rows (d = 105, 14
//! stored entries a row): writes a row cache block by block, times a pass over it against
//! `cat FILE > /dev/null` on the same file, then trains ε = 1 objective perturbation over it
//! and reports passes, time and peak memory (VmHWM; run under `/usr/bin/time -v` for the
//! kernel's own count).
//!
//! ```text
//! cargo run --release -p dp-erm --example out_of_core -- ROWS [BLOCK_ROWS] [PATH] [--in-memory] [--floor]
//! ```
//! `--in-memory` also trains the same fit in memory (needs the rows in RAM) and compares.
//! `--floor` also times the pass's arithmetic alone: the same blocks, decoded and checked
//! once and held in memory (needs the rows in RAM), summed with and without the Hessian —
//! what a pass costs with no read, checksum, decoding or row check at all.
//! The cache file is deleted at the end.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use dp_erm::{ErmError, ErmParams, Loss, RowCache, RowCacheWriter, TrainingSet};
use dp_noise::DpRng;
use dp_optim::{OptimError, PartialSums, RowBlock, RowBlocks, sum_blocks};
use rayon::prelude::*;

use dp_datasets::{ADULT_SHAPED_COLUMNS as COLS, adult_shaped_row as adult_row};

/// Counts the blocks read, to report passes.
struct Counted<'a> {
    inner: &'a RowCache,
    reads: AtomicUsize,
}

impl RowBlocks for Counted<'_> {
    type Error = ErmError;
    fn cols(&self) -> usize {
        self.inner.cols()
    }
    fn rows(&self) -> usize {
        self.inner.rows()
    }
    fn block_count(&self) -> usize {
        self.inner.block_count()
    }
    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), ErmError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.with_block(index, visit)
    }
}

/// A block's offsets, indices, values and labels, decoded once and held in memory.
type OwnedBlock = (Vec<u32>, Vec<u32>, Vec<f64>, Vec<f64>);

/// Every block of `cache`, decoded.
fn hold(cache: &RowCache) -> Result<Vec<OwnedBlock>, ErmError> {
    let mut blocks = Vec::with_capacity(cache.block_count());
    for index in 0..cache.block_count() {
        cache.with_block(index, &mut |block| {
            let mut offsets = vec![0_u32];
            let (mut indices, mut values) = (Vec::new(), Vec::new());
            for i in 0..block.rows() {
                let (idx, val) = block.row(i);
                indices.extend_from_slice(idx);
                values.extend_from_slice(val);
                offsets.push(indices.len() as u32);
            }
            blocks.push((offsets, indices, values, block.labels().to_vec()));
        })?;
    }
    Ok(blocks)
}

/// This process's CPU time (user + system) in seconds, from /proc (10 ms ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    (ticks(11) + ticks(12)) / 100.0
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let in_memory = args.iter().any(|a| a == "--in-memory");
    let floor = args.iter().any(|a| a == "--floor");
    let positional: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let rows: u64 = positional.first().map_or(Ok(1_000_000), |s| s.parse())?;
    let block_rows: usize = positional.get(1).map_or(Ok(16_384), |s| s.parse())?;
    let path = PathBuf::from(
        positional
            .get(2)
            .map_or("/tmp/dp-ml-out-of-core.rows", |s| s.as_str()),
    );
    println!(
        "rows {rows}, block rows {block_rows}, threads {}",
        rayon::current_num_threads()
    );

    let start = Instant::now();
    let mut writer = RowCacheWriter::create(&path, COLS, block_rows)?;
    for i in 0..rows {
        let (row, label) = adult_row(i);
        writer.push_row(&row, label)?;
    }
    writer.finish()?;
    let cache = RowCache::open(&path)?;
    let bytes = cache.file_bytes();
    println!(
        "write: {:.2} s, {:.1} MB ({:.1} bytes a row), {} blocks",
        start.elapsed().as_secs_f64(),
        bytes as f64 / 1e6,
        bytes as f64 / rows as f64,
        cache.block_count()
    );

    let cat = || -> Result<f64, Box<dyn std::error::Error>> {
        let start = Instant::now();
        let status = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("cat '{}' > /dev/null", path.display()))
            .status()?;
        assert!(status.success());
        Ok(start.elapsed().as_secs_f64())
    };
    let w: Vec<f64> = (0..COLS)
        .map(|j| ((j * 7) % 5) as f64 * 0.1 - 0.2)
        .collect();
    let cpu_in_passes = std::cell::Cell::new(0.0);
    let time_pass = |hessian: bool| -> Result<f64, Box<dyn std::error::Error>> {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let sums = sum_blocks(&cache, &w, &Loss::Logistic, hessian)?;
        assert_eq!(sums.rows() as u64, rows);
        if hessian {
            cpu_in_passes.set(cpu_in_passes.get() + cpu_seconds() - cpu);
        }
        Ok(start.elapsed().as_secs_f64())
    };
    // Warm the page cache once, then alternate so both see the same state.
    cat()?;
    let mut cats = Vec::new();
    let mut passes = Vec::new();
    let mut gradient_passes = Vec::new();
    for _ in 0..3 {
        cats.push(cat()?);
        passes.push(time_pass(true)?);
        gradient_passes.push(time_pass(false)?);
    }
    let best = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    println!(
        "cat FILE > /dev/null: {:.3} s ({:.2} GB/s); pass with Hessian {:.3} s ({:.2}× cat); \
         gradient-only pass {:.3} s ({:.2}× cat)  [best of 3]",
        best(&cats),
        bytes as f64 / best(&cats) / 1e9,
        best(&passes),
        best(&passes) / best(&cats),
        best(&gradient_passes),
        best(&gradient_passes) / best(&cats)
    );

    println!(
        "CPU time of a pass with Hessian (user + system, mean of 3): {:.3} s",
        cpu_in_passes.get() / 3.0
    );
    if floor {
        // Each block checked once, here (`RowBlock::new`); the timed sums do nothing else.
        let held = hold(&cache)?;
        let blocks = held
            .iter()
            .map(|(offsets, indices, values, labels)| {
                RowBlock::new(COLS, offsets, indices, values, labels)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sum = |hessian: bool| -> Result<PartialSums, OptimError> {
            let parts = blocks
                .par_iter()
                .map(|block| PartialSums::of_block(block, &w, &Loss::Logistic, hessian))
                .collect::<Result<Vec<_>, _>>()?;
            let mut total = PartialSums::zero(COLS, hessian);
            for part in &parts {
                total.merge(part)?;
            }
            Ok(total)
        };
        let mut with_hessian = Vec::new();
        let mut gradient_only = Vec::new();
        for _ in 0..3 {
            for (hessian, times) in [(true, &mut with_hessian), (false, &mut gradient_only)] {
                let start = Instant::now();
                let sums = sum(hessian)?;
                assert_eq!(sums.rows() as u64, rows);
                times.push(start.elapsed().as_secs_f64());
            }
        }
        println!(
            "arithmetic alone (the blocks held in memory and checked once; no read, checksum, \
             decoding or check in the timing): with Hessian {:.3} s ({:.2}× cat), gradient only {:.3} s ({:.2}× cat)  [best of 3]",
            best(&with_hessian),
            best(&with_hessian) / best(&cats),
            best(&gradient_only),
            best(&gradient_only) / best(&cats)
        );
    }
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-3, 1.0);
    let counted = Counted {
        inner: &cache,
        reads: AtomicUsize::new(0),
    };
    let (start, cpu) = (Instant::now(), cpu_seconds());
    let fit = params.fit_blocks(&counted, rows as usize, &mut DpRng::from_os_entropy()?)?;
    let seconds = start.elapsed().as_secs_f64();
    let total_passes = counted.reads.load(Ordering::Relaxed) as f64 / cache.block_count() as f64;
    println!(
        "out-of-core fit (objective perturbation, ε = 1, Λ = 1e-3): {seconds:.2} s, {} Newton \
         steps, {total_passes} passes ({:.3} s a pass, CPU {:.3} s a pass), gradient norm {:.1e}",
        fit.solver_iterations(),
        seconds / total_passes,
        (cpu_seconds() - cpu) / total_passes,
        fit.solver_gradient_norm()
    );
    println!("peak RSS so far: {:.1} MiB", peak_rss_mib());

    if in_memory {
        let start = Instant::now();
        let (x, y): (Vec<_>, Vec<_>) = (0..rows).map(adult_row).unzip();
        let data = TrainingSet::builder(COLS)
            .sparse_rows(x)
            .labels(y)
            .build()?;
        let built = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let memory = params.fit(&data, &mut DpRng::from_os_entropy()?)?;
        println!(
            "in-memory fit: {:.2} s ({} Newton steps; building the training set took {built:.2} s); \
             peak RSS {:.1} MiB",
            start.elapsed().as_secs_f64(),
            memory.solver_iterations(),
            peak_rss_mib()
        );
    }
    drop(cache);
    std::fs::remove_file(&path)?;
    Ok(())
}
