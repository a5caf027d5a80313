//! Shared configuration and synthetic problems of the workspace's criterion benchmarks
//! (in `benches/`).
//!
//! Run them all with `cargo bench -p dp-benches`, or one group with e.g.
//! `cargo bench -p dp-benches --bench optim -- adult_shaped`. Conventions (linfa's): fixed
//! seeds, problem sizes in the benchmark id, inputs built outside the timed closure, one
//! configuration ([`criterion_config`], and [`configure_for_rows`] for groups whose size
//! varies), the sizes of [`ROW_COUNTS`].
//!
//! ```
//! // 1,000 rows shaped like Adult after one-hot encoding, as the optimizer benchmarks use.
//! let (rows, labels, dim) = dp_benches::adult_shaped_rows(1_000, 1);
//! assert_eq!((rows.len(), labels.len(), dim), (1_000, 1_000, 104));
//! assert!(labels.iter().all(|&y| y == 1.0 || y == -1.0));
//! ```

use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use dp_datasets::{ADULT_FILES, ADULT_TRAIN_ROWS, DataDir, Scaling, load_adult};
use dp_erm::TrainingSet;
use dp_noise::InsecureSeededRng;
use dp_optim::{CsrRows, DenseRows};
use rand::RngExt;
use rand_distr::{Distribution, Normal};

/// The one criterion configuration all benchmark files use: short enough to run the whole
/// suite in a few minutes on 2 cores, long enough for stable medians.
pub fn criterion_config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

/// The row counts size-dependent benchmarks run at: 1k and 10k, Adult's 45,222 rows (as
/// 45,000) and the nested-balls experiment's 240,000.
pub const ROW_COUNTS: [usize; 4] = [1_000, 10_000, 45_000, 240_000];

/// Sample count and measurement time for a group at `rows` rows, so the whole suite stays
/// within minutes: 50 samples over 3 s up to 10k rows, 20 over 5 s at Adult's size, 10 over
/// 10 s beyond.
pub fn configure_for_rows(group: &mut BenchmarkGroup<'_, WallTime>, rows: usize) {
    let (samples, seconds) = match rows {
        0..=10_000 => (50, 3),
        10_001..=50_000 => (20, 5),
        _ => (10, 10),
    };
    group
        .sample_size(samples)
        .measurement_time(Duration::from_secs(seconds));
}

/// [`adult_shaped_rows`] as a checked training set (rows clipped: normalizing can leave a
/// row a hair above norm 1).
pub fn adult_shaped_training_set(rows: usize, seed: u64) -> TrainingSet {
    let (sparse, labels, dim) = adult_shaped_rows(rows, seed);
    TrainingSet::builder(dim)
        .sparse_rows(sparse)
        .labels(labels)
        .clip_rows_to_unit_ball()
        .build()
        .expect("generated rows are valid")
}

/// The real Adult training and test rows (paper preprocessing, rows `0..30,162` and the
/// rest), from `$DP_ML_DATA_DIR` or `data/`; `None`, with a message saying how to get the
/// files, when they are missing.
pub fn real_adult() -> Option<(TrainingSet, TrainingSet)> {
    let dir = DataDir::resolve(None);
    if !dir.has_all(&ADULT_FILES) {
        eprintln!(
            "real-Adult benchmarks skipped: Adult's files are not in {} (set DP_ML_DATA_DIR; \
             `cargo xtask datasets fetch` gets them)",
            dir.path().display()
        );
        return None;
    }
    let adult = load_adult(&dir, Scaling::PaperColumnMax).expect("verified Adult files load");
    let train = adult
        .training_set(&(0..ADULT_TRAIN_ROWS).collect::<Vec<_>>())
        .expect("Adult's rows are valid");
    let test = adult
        .training_set(&(ADULT_TRAIN_ROWS..adult.len()).collect::<Vec<_>>())
        .expect("Adult's rows are valid");
    Some((train, test))
}

/// Adult's shape after one-hot encoding: 6 numeric columns and 8 categorical ones with
/// Adult's category counts (98 one-hot columns, 104 in all, 14 non-zeros per row), rows
/// scaled into the unit ball, labels from a noisy linear rule (~24% positive).
pub fn adult_shaped(rows: usize, seed: u64) -> (CsrRows, Vec<f64>) {
    let (sparse_rows, labels, dim) = adult_shaped_rows(rows, seed);
    (
        CsrRows::from_rows(dim, &sparse_rows).expect("valid rows"),
        labels,
    )
}

/// [`adult_shaped`]'s rows as `(column, value)` pairs, its labels, and the dimension.
#[allow(clippy::type_complexity)]
pub fn adult_shaped_rows(rows: usize, seed: u64) -> (Vec<Vec<(usize, f64)>>, Vec<f64>, usize) {
    const NUMERIC: usize = 6;
    const CATEGORIES: [usize; 8] = [7, 16, 7, 14, 6, 5, 2, 41];
    let mut rng = InsecureSeededRng::new(seed);
    let dim = NUMERIC + CATEGORIES.iter().sum::<usize>();
    let truth: Vec<f64> = (0..dim).map(|_| rng.random_range(-2.0..2.0)).collect();
    let mut sparse_rows = Vec::with_capacity(rows);
    let mut labels = Vec::with_capacity(rows);
    for _ in 0..rows {
        let mut row: Vec<(usize, f64)> = (0..NUMERIC)
            .map(|c| (c, rng.random_range(0.0..1.0)))
            .collect();
        let mut offset = NUMERIC;
        for size in CATEGORIES {
            row.push((offset + rng.random_range(0..size), 1.0));
            offset += size;
        }
        let length = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        row.iter_mut().for_each(|(_, v)| *v /= length);
        let score: f64 = row.iter().map(|&(c, v)| v * truth[c]).sum::<f64>() - 0.6;
        let noisy = score + 0.3 * rng.random_range(-1.0..1.0);
        labels.push(if noisy > 0.0 { 1.0 } else { -1.0 });
        sparse_rows.push(row);
    }
    (sparse_rows, labels, dim)
}

/// A random-feature problem: points in the unit ball of ℝ⁵ labelled by radius (the nested
/// balls' shape), mapped to `D` Gaussian-kernel random Fourier features
/// `cos(ωᵀx + ψ)/√D` (γ = 0.5), dense.
pub fn random_features(rows: usize, features: usize, seed: u64) -> (DenseRows, Vec<f64>) {
    const INPUT_DIM: usize = 5;
    let mut rng = InsecureSeededRng::new(seed);
    let omega_law = Normal::new(0.0, 1.0).expect("valid normal"); // √(2γ) = 1 for γ = 0.5
    let omegas: Vec<f64> = (0..features * INPUT_DIM)
        .map(|_| omega_law.sample(&mut rng))
        .collect();
    let phases: Vec<f64> = (0..features)
        .map(|_| rng.random_range(-std::f64::consts::PI..std::f64::consts::PI))
        .collect();
    let scale = 1.0 / (features as f64).sqrt();
    let mut values = Vec::with_capacity(rows * features);
    let mut labels = Vec::with_capacity(rows);
    for _ in 0..rows {
        let x: Vec<f64> = (0..INPUT_DIM)
            .map(|_| rng.random_range(-0.45..0.45))
            .collect();
        let radius = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        labels.push(if radius < 0.35 { 1.0 } else { -1.0 });
        for j in 0..features {
            let projection: f64 = (0..INPUT_DIM)
                .map(|k| omegas[j * INPUT_DIM + k] * x[k])
                .sum();
            values.push(scale * (projection + phases[j]).cos());
        }
    }
    (
        DenseRows::from_row_major(rows, features, &values).expect("finite features"),
        labels,
    )
}
