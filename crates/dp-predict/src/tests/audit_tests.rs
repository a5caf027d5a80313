//! Empirical audits (docs/src/reference/privacy-testing.md §2) of the Laplace-based mechanisms: answers on two
//! neighbouring datasets built so that the answer's centre moves by (nearly) the whole
//! sensitivity, a Clopper–Pearson lower bound on ε from 10^5 answers each, and the
//! assertions `ε_LB ≤ ε`, `ε_LB ≤ ε_pair`, `ε_LB ≥ 0.8·ε_pair`. Mutation checks: the same
//! mechanisms with half the noise push `ε_LB` above `ε_pair`.

use dp_audit::{LowerBound, Verdict, epsilon_lower_bound, judge, run_scores};
use dp_erm::Loss;
use rand::RngExt;

use super::{ALPHA, examples, rng};
use crate::vote::{LaplaceAverage, VoteMutation};
use crate::{PrivatePredictor, SgdParams, StableErmParams};

const RUNS: usize = 100_000;

/// The canary pair: row 0 is the canary `e₁` with label `canary_label`; the other rows lie
/// along `e₂` (orthogonal: they do not touch the weight on `e₁`), with random labels.
pub(super) fn canary_examples(n: usize, canary_label: f64) -> dp_erm::Examples {
    let mut r = rng(40);
    let mut rows = vec![vec![1.0, 0.0]];
    let mut labels = vec![canary_label];
    for _ in 1..n {
        rows.push(vec![0.0, r.random_range(-1.0..1.0)]);
        labels.push(if r.random::<bool>() { 1.0 } else { -1.0 });
    }
    examples(2, &rows, &labels)
}

pub(super) fn audit<P: PrivatePredictor<Query = [f64]> + Sync>(
    first: &P,
    second: &P,
    score: fn(&P::Answer) -> f64,
    seed: u64,
) -> LowerBound {
    let query = [1.0, 0.0];
    let a = run_scores(RUNS, seed, |r| {
        score(&first.answer_unchecked(&query, r).unwrap())
    })
    .unwrap();
    let b = run_scores(RUNS, seed + 1, |r| {
        score(&second.answer_unchecked(&query, r).unwrap())
    })
    .unwrap();
    epsilon_lower_bound(&a, &b, ALPHA).unwrap()
}

/// Asserts the three inequalities of a passing audit.
pub(super) fn assert_passes(bound: &LowerBound, epsilon: f64, pair: f64) {
    assert_eq!(
        judge(bound, epsilon, Some(pair)).unwrap(),
        Verdict::Consistent,
        "{bound:?}"
    );
    assert!(
        bound.epsilon >= 0.8 * pair,
        "no power: {bound:?}, pair {pair}"
    );
}

pub(super) fn assert_caught(bound: &LowerBound, epsilon: f64, pair: f64) {
    assert_ne!(
        judge(bound, epsilon, Some(pair)).unwrap(),
        Verdict::Consistent,
        "{bound:?}"
    );
}

/// Stable ERM with the Huber loss (h = 0.5), λ = 0.1, n = 50: the canary alone sets the
/// weight on `e₁`; in the loss's linear part it is `y*/(λn) = ±0.2`, so flipping the
/// canary's label moves the score at `e₁` by `0.4 = 2/(λn)` — the whole stability term of
/// the sensitivity (§7.3).
#[test]
fn stable_erm_audit_reaches_its_pair_epsilon_and_halved_noise_is_caught() {
    let epsilon = 1.0;
    let params = StableErmParams::new(Loss::huber(0.5).unwrap(), 0.1, epsilon);
    let first = params.fit(&canary_examples(50, 1.0), &mut rng(1)).unwrap();
    let second = params.fit(&canary_examples(50, -1.0), &mut rng(1)).unwrap();
    let moved =
        first.secret_score(&[1.0, 0.0]).unwrap() - second.secret_score(&[1.0, 0.0]).unwrap();
    assert!((moved - 0.4).abs() < 1e-6, "score moved by {moved}");
    // The pair's loss: the centres' distance over the noise scale (expected from §7.3:
    // Δ = 2/(λn) + 2(γ + floor)/λ, so ε_pair ≈ ε).
    let pair = moved / first.laplace().scale();
    assert!(pair <= epsilon && pair > 0.99 * epsilon, "{pair}");
    let bound = audit(&first, &second, |a| a.score, 11);
    assert_passes(&bound, epsilon, pair);
    let (m1, m2) = (
        first.with_noise_epsilon_factor(2.0),
        second.with_noise_epsilon_factor(2.0),
    );
    assert_caught(&audit(&m1, &m2, |a| a.score, 13), epsilon, pair);
}

/// The sensitivity counts the solver's tolerance as dp-erm's output perturbation does:
/// `2/(λn) + 2(γ + floor)/λ`, the floor being the rounding error the computed gradient norm
/// may carry (dp-erm's `tolerance_floor`). At n = 10⁷, λ = 1e-5 the floor is a visible part
/// of the tolerance term, so a sensitivity of `2/(λn) + 2γ/λ` falls short and fails here.
#[test]
fn stable_erm_sensitivity_counts_the_tolerance_and_its_rounding_floor() {
    for (n, d, lambda) in [(10_000_000, 2, 1e-5), (1_000_000, 10, 1e-3), (50, 2, 0.1)] {
        let params = StableErmParams::new(Loss::Logistic, lambda, 1.0);
        let floor = dp_erm::tolerance_floor(n, d, Loss::Logistic, lambda, None).total();
        let gamma = crate::stable::DEFAULT_TOLERANCE.max(floor);
        let expected = 2.0 / (lambda * n as f64) + 2.0 * (gamma + floor) / lambda;
        let sensitivity = params.sensitivity(n, d).unwrap();
        // Above the bound, by no more than the allowance for the score's dot product (d + 1
        // roundings of a score at most 1/λ, twice, with the crate-wide margin).
        let dot_rounding = 2.0 * dp_erm::ROUNDING_MARGIN * (d as f64 + 1.0) * f64::EPSILON / lambda;
        assert!(
            sensitivity >= expected,
            "n = {n}: {sensitivity} < {expected}"
        );
        assert!(
            sensitivity <= (expected + dot_rounding) * (1.0 + 1e-12),
            "n = {n}: {sensitivity} against {expected} + {dot_rounding}"
        );
    }
}

/// Projected SGD with the Huber loss, η = 0.1: the canary comes first, its step sets the
/// weight on `e₁` to `η·y*` and no later step changes it, so flipping its label moves the
/// averaged iterate's score at `e₁` by `2η` — the whole sensitivity of §7.4.
#[test]
fn projected_sgd_audit_reaches_its_pair_epsilon_and_halved_noise_is_caught() {
    let epsilon = 1.0;
    let params = SgdParams::new(Loss::huber(0.5).unwrap(), 0.1, 10.0, epsilon);
    let first = params.fit(&canary_examples(50, 1.0)).unwrap();
    let second = params.fit(&canary_examples(50, -1.0)).unwrap();
    let moved = first.secret_weights()[0] - second.secret_weights()[0];
    assert!((moved - 0.2).abs() < 1e-12, "score moved by {moved}");
    let pair = moved / first.laplace().scale();
    assert!(pair <= epsilon && pair > 0.99 * epsilon, "{pair}");
    assert_passes(&audit(&first, &second, |a| a.score, 21), epsilon, pair);
    let (m1, m2) = (
        first.with_noise_epsilon_factor(2.0),
        second.with_noise_epsilon_factor(2.0),
    );
    assert_caught(&audit(&m1, &m2, |a| a.score, 23), epsilon, pair);
}

/// Laplace averaging of k = 10 votes: one model's vote flips, the vote sum moves by 1 —
/// the whole sensitivity of §7.2. Scored by the released (clipped) fraction q.
#[test]
fn laplace_average_audit_reaches_its_pair_epsilon_and_halved_noise_is_caught() {
    let epsilon = 1.0;
    let run = |mutation, sum: f64, seed| {
        let average = LaplaceAverage::build(epsilon, 10, mutation).unwrap();
        run_scores(RUNS, seed, move |r| {
            average.release_sum(sum, r).unwrap().probability
        })
        .unwrap()
    };
    // Sum units: the scale of the snapping Laplace at sensitivity 1 is (1 + 2^-20)/ε.
    let pair = 1.0 / (1.0 + 2f64.powi(-20)) * epsilon;
    let bound = epsilon_lower_bound(
        &run(VoteMutation::None, 5.0, 31),
        &run(VoteMutation::None, 6.0, 32),
        ALPHA,
    )
    .unwrap();
    assert_passes(&bound, epsilon, pair);
    let broken = epsilon_lower_bound(
        &run(VoteMutation::DoubledEpsilon, 5.0, 33),
        &run(VoteMutation::DoubledEpsilon, 6.0, 34),
        ALPHA,
    )
    .unwrap();
    assert_caught(&broken, epsilon, pair);
}
