//! The crate's tests: exact privacy of the walk and the soft majority, empirical audits of
//! the Laplace mechanisms, the generalization property, the budget, refusals, behaviour.
//! Every expected ε comes from docs/src/reference/algorithms.md §7, never from the code under test.

#[path = "audit_tests.rs"]
mod audit;
#[path = "behaviour_tests.rs"]
mod behaviour;
#[path = "budget_tests.rs"]
mod budget;
#[path = "exact_privacy_tests.rs"]
mod exact_privacy;
#[path = "generalization_tests.rs"]
mod generalization;
#[path = "parameter_properties_tests.rs"]
mod parameter_properties;
#[path = "regression_tests.rs"]
mod regression;
#[path = "rejects_tests.rs"]
mod rejects;
#[path = "serving_tests.rs"]
mod serving;

use dp_erm::{Examples, Features};
use dp_noise::InsecureSeededRng;
use rand::RngExt;

use crate::LineData;

/// False-alarm rate of every statistical test (docs/src/reference/privacy-testing.md).
pub(crate) const ALPHA: f64 = 1e-6;

pub(crate) fn rng(seed: u64) -> InsecureSeededRng {
    InsecureSeededRng::new(seed)
}

/// `n` uniform points on [0, 1) labelled by `x ≥ theta`, each label flipped with
/// probability `noise`.
pub(crate) fn threshold_data(n: usize, theta: f64, noise: f64, seed: u64) -> LineData {
    let mut r = rng(seed);
    let points: Vec<f64> = (0..n).map(|_| r.random::<f64>()).collect();
    let labels = points
        .iter()
        .map(|&x| (x >= theta) != (r.random::<f64>() < noise))
        .collect();
    LineData::new(points, labels).unwrap()
}

/// One-feature examples (labels ±1) from line data.
pub(crate) fn line_examples(data: &LineData) -> Examples {
    let inputs = Features::dense(1, data.points().to_vec()).unwrap();
    let labels = data
        .labels()
        .iter()
        .map(|&y| if y { 1.0 } else { -1.0 })
        .collect();
    Examples::new(inputs, labels).unwrap()
}

/// Dense d-dimensional examples from rows and labels.
pub(crate) fn examples(d: usize, rows: &[Vec<f64>], labels: &[f64]) -> Examples {
    let values = rows.iter().flatten().copied().collect();
    Examples::new(Features::dense(d, values).unwrap(), labels.to_vec()).unwrap()
}

/// Largest `|ln p − ln p'|` over the outcomes of two laws.
pub(crate) fn max_log_ratio(p: &[f64], q: &[f64]) -> f64 {
    p.iter()
        .zip(q)
        .map(|(a, b)| (a.ln() - b.ln()).abs())
        .fold(0.0, f64::max)
}
