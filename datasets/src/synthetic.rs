//! Synthetic data sets with known structure.

use dp_noise::InsecureSeededRng;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use crate::dataset::{Dataset, Scaling};

/// A point uniform in the annulus `a ≤ ‖x‖ ≤ b` of ℝ^d: uniform direction, radius
/// `(a^d + U·(b^d − a^d))^{1/d}`.
fn in_annulus(d: usize, inner: f64, outer: f64, rng: &mut InsecureSeededRng) -> Vec<(usize, f64)> {
    let direction: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
    let length = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
    let dim = d as i32;
    let u: f64 = rng.random_range(0.0..1.0);
    let radius = (inner.powi(dim) + u * (outer.powi(dim) - inner.powi(dim))).powf(1.0 / d as f64);
    direction
        .iter()
        .enumerate()
        .map(|(c, v)| (c, v * radius / length))
        .collect()
}

/// The SVM paper's "nested balls" in ℝ⁵ (EXPERIMENTS.md): with probability 0.45 uniform in
/// the ball of radius 0.1, label +1; 0.45 uniform in the annulus 0.2–0.5, label −1; 0.1 in
/// the annulus 0.1–0.2 with a random label. Bayes error 0.05.
pub fn nested_balls(rows: usize, seed: u64) -> Dataset {
    let mut rng = InsecureSeededRng::new(seed);
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let u: f64 = rng.random_range(0.0..1.0);
        let (row, label) = if u < 0.45 {
            (in_annulus(5, 0.0, 0.1, &mut rng), 1.0)
        } else if u < 0.9 {
            (in_annulus(5, 0.2, 0.5, &mut rng), -1.0)
        } else {
            let label = if rng.random_range(0.0..1.0) < 0.5 {
                1.0
            } else {
                -1.0
            };
            (in_annulus(5, 0.1, 0.2, &mut rng), label)
        };
        data.push(row);
        labels.push(label);
    }
    Dataset {
        name: "nested-balls".into(),
        feature_names: (0..5).map(|c| format!("x{c}")).collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    }
}

/// A noisy linear problem: rows uniform in the unit ball of ℝ^d, label the sign along a
/// fixed random direction, flipped with probability `flip`.
pub fn noisy_linear(rows: usize, d: usize, flip: f64, seed: u64) -> Dataset {
    let mut rng = InsecureSeededRng::new(seed);
    let direction: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let row = in_annulus(d, 0.0, 1.0, &mut rng);
        let score: f64 = row.iter().map(|&(c, v)| v * direction[c]).sum();
        let flipped = rng.random_range(0.0..1.0) < flip;
        labels.push(if (score > 0.0) != flipped { 1.0 } else { -1.0 });
        data.push(row);
    }
    Dataset {
        name: "noisy-linear".into(),
        feature_names: (0..d).map(|c| format!("x{c}")).collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    }
}
