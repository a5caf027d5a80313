//! `cargo xtask bench`: measured speed, accuracy and memory of this workspace's private
//! fits beside the tools users would otherwise pick (`peers`), and how a private fit's
//! cost grows with the data (`scale`). Reports go to `results/bench/`.

mod exchange;
mod memory;
pub mod peers;
mod plot;
pub(crate) mod python;
mod report;
pub mod scale;

use dp_erm::TrainingSet;

/// The fraction of `data`'s rows whose label differs from the sign of `wᵀx` (a score of
/// exactly 0 counts as +1, as dp-erm's classifiers do).
fn test_error(data: &TrainingSet, weights: &[f64]) -> f64 {
    let mut scores = vec![0.0; data.len()];
    data.design().multiply(weights, &mut scores);
    let wrong = scores
        .iter()
        .zip(data.labels())
        .filter(|&(&s, &y)| (if s >= 0.0 { 1.0 } else { -1.0 }) != y)
        .count();
    wrong as f64 / data.len() as f64
}
