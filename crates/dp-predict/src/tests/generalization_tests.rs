//! The generalization property of private prediction (DF §6, docs/src/reference/algorithms.md §7.6): for an
//! ε-DP prediction algorithm and a loss in [0, 1],
//! `e^{−ε} E[L_S] ≤ E[L_D] ≤ e^{ε} E[L_S]`, with `L_S` the loss of the answers at the
//! training points and `L_D` at fresh points. Checked on synthetic thresholds with the
//! walk, whose answer laws are exact, so that both losses of each dataset are computed
//! exactly and only the average over datasets carries sampling error.

use super::{rng, threshold_data};
use crate::{ExponentialWalk, LineData, WalkParams};

const THETA: f64 = 0.5;
const NOISE: f64 = 0.2;

/// Expected 0-1 loss against a label drawn at `x` (true label `x ≥ θ`, flipped with
/// probability `NOISE`) of an answer that is 1 with probability `p`.
fn loss_at(x: f64, p: f64) -> f64 {
    let wrong_vs_clean = if x >= THETA { 1.0 - p } else { p };
    (1.0 - NOISE) * wrong_vs_clean + NOISE * (1.0 - wrong_vs_clean)
}

/// `(L_S, L_D)` of a predictor whose answer at x is 1 with probability `p(x)`, piecewise
/// constant between the sorted training points (the walk, and 1-NN below): `L_D`
/// integrates exactly over x ~ U[0, 1), splitting each piece at θ.
fn losses(data: &LineData, p: impl Fn(f64) -> f64) -> (f64, f64) {
    let points = data.points();
    let empirical = points
        .iter()
        .zip(data.labels())
        .map(|(&x, &y)| if y { 1.0 - p(x) } else { p(x) })
        .sum::<f64>()
        / points.len() as f64;
    let mut cuts: Vec<f64> = points.to_vec();
    cuts.push(THETA);
    cuts.push(0.0);
    cuts.push(1.0);
    cuts.sort_by(f64::total_cmp);
    let true_loss = cuts
        .windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| {
            // Constant on [w0, w1): evaluate at the left end, where the walk already
            // counts the point w0 itself (x_i ≤ x).
            (w[1] - w[0]) * loss_at(w[0], p(w[0]))
        })
        .sum();
    (empirical, true_loss)
}

/// Means of `L_S` and `L_D` over `trials` datasets of `n` points.
fn mean_losses(
    trials: usize,
    n: usize,
    predictor: impl Fn(&LineData) -> Box<dyn Fn(f64) -> f64>,
) -> (f64, f64) {
    let (mut s, mut d) = (0.0, 0.0);
    for t in 0..trials {
        let data = threshold_data(n, THETA, NOISE, 500 + t as u64);
        let p = predictor(&data);
        let (ls, ld) = losses(&data, p);
        s += ls;
        d += ld;
    }
    (s / trials as f64, d / trials as f64)
}

/// Hoeffding: each dataset's loss lies in [0, 1], so a mean over `trials` datasets is
/// within this of its expectation except with probability `ALPHA/2` (two means tested).
fn sampling_error(trials: usize) -> f64 {
    ((4.0 / super::ALPHA).ln() / (2.0 * trials as f64)).sqrt()
}

fn walk_predictor(epsilon: f64) -> impl Fn(&LineData) -> Box<dyn Fn(f64) -> f64> {
    move |data: &LineData| {
        let walk: ExponentialWalk = WalkParams::new(epsilon, 0.1).unwrap().fit(data).unwrap();
        Box::new(move |x| walk.secret_probability_of_one(x).unwrap())
    }
}

/// Whether `(E[L_S], E[L_D])` estimated from `trials` datasets is consistent with the
/// two-sided bound at ε.
fn consistent(means: (f64, f64), epsilon: f64, trials: usize) -> bool {
    let (s, d) = means;
    let tol = sampling_error(trials);
    // Each mean may be off by `tol`: the bound must hold for some values within it.
    d - tol <= epsilon.exp() * (s + tol) && (-epsilon).exp() * (s - tol) <= d + tol
}

#[test]
fn walk_answers_generalize_within_e_to_the_epsilon() {
    let trials = 4000;
    for epsilon in [0.25, 1.0] {
        let means = mean_losses(trials, 100, walk_predictor(epsilon));
        assert!(
            consistent(means, epsilon, trials),
            "ε = {epsilon}: {means:?}"
        );
    }
}

/// Mutation check: 1-nearest-neighbour answers (not private) repeat each training label,
/// so `L_S = 0` while `L_D ≈ 2η(1 − η)`: the test catches the gap.
#[test]
fn generalization_test_catches_a_memorizing_predictor() {
    let trials = 4000;
    let nearest = |data: &LineData| -> Box<dyn Fn(f64) -> f64> {
        let (points, labels) = (data.points().to_vec(), data.labels().to_vec());
        Box::new(move |x| {
            // The training point at or left of x (the piece's left end), else the first.
            let i = points.partition_point(|&p| p <= x).max(1) - 1;
            if labels[i] { 1.0 } else { 0.0 }
        })
    };
    let means = mean_losses(trials, 100, nearest);
    assert!(means.0 < 0.02, "{means:?}");
    assert!(!consistent(means, 1.0, trials), "{means:?}");
    let _ = rng(0);
}
