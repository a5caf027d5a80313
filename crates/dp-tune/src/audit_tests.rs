//! Empirical privacy audits (docs/src/reference/privacy-testing.md §2) of both selections, each with a
//! mutation check. The neighbouring datasets differ in one held-out example (a label
//! flip); the trainers ignore their data, so the held-out part is where all the privacy
//! loss is. Every expected ε is computed here from the spec, never read from the code.

use dp_audit::{Verdict, epsilon_lower_bound, judge, require_power, run_scores};
use dp_noise::{DiscreteLaplace, ExponentialMechanism};

use crate::split::select_among;
use crate::stopping::{Stopping, run_on_split};
use crate::stopping_tests::released_score_law;
use crate::test_trainers::{FixedTrainer, Stump, labelled};

const RUNS: usize = 100_000;
const ALPHA: f64 = 1e-6;

/// Split-and-select's selection step at ε on two held-out parts of 20 rows: 12 negatives
/// and 8 positives, and the same with one negative flipped. Candidates: always +1 (z₀ =
/// negatives) and always −1 (z₁ = positives). Returns (claimed ε, pair ε, lower bound).
fn audit_selection(claimed: f64, mechanism: &ExponentialMechanism) -> (f64, f64, Verdict) {
    let first = labelled(8, 12);
    let second = labelled(9, 11);
    let release = |held_out| {
        move |rng: &mut dp_noise::InsecureSeededRng| {
            let models = vec![Stump::new(f64::NEG_INFINITY), Stump::new(f64::INFINITY)];
            select_among(models, held_out, mechanism, rng).unwrap().0 as f64
        }
    };
    // P(choose 0) = 1/(1 + e^{ε(z₀ − z₁)/2}) (docs/src/reference/algorithms.md §6): z₀ − z₁ = 4, then 2.
    let p0 = |gap: f64| 1.0 / (1.0 + (claimed * gap / 2.0).exp());
    let (a, b) = (p0(4.0), p0(2.0));
    let pair = ((b / a).ln()).max(((1.0 - a) / (1.0 - b)).ln());
    require_power(RUNS, pair, ALPHA).unwrap();
    let bound = epsilon_lower_bound(
        &run_scores(RUNS, 1, release(&first)).unwrap(),
        &run_scores(RUNS, 2, release(&second)).unwrap(),
        ALPHA,
    )
    .unwrap();
    eprintln!(
        "split-and-select at {claimed}: pair ε {pair:.3}, lower bound {:.3}",
        bound.epsilon
    );
    (
        pair,
        bound.epsilon,
        judge(&bound, claimed, Some(pair)).unwrap(),
    )
}

#[test]
fn split_and_select_selection_is_epsilon_dp_and_the_audit_has_power() {
    let epsilon = 1.0;
    let (pair, bound, verdict) =
        audit_selection(epsilon, &ExponentialMechanism::new(epsilon, 1.0).unwrap());
    assert!(pair <= epsilon && pair > 0.8, "pair ε {pair}");
    assert_eq!(
        verdict,
        Verdict::Consistent,
        "lower bound {bound} vs pair {pair}"
    );
    assert!(
        bound >= 0.8 * pair,
        "no power: lower bound {bound} vs pair {pair}"
    );
}

/// Mutation check: the same audit against a selection run at 2ε (the claim still ε) must
/// fail — the lower bound exceeds the claim.
#[test]
fn split_and_select_audit_catches_selection_at_twice_epsilon() {
    let epsilon = 1.0;
    let (_, bound, verdict) = audit_selection(
        epsilon,
        &ExponentialMechanism::new(2.0 * epsilon, 1.0).unwrap(),
    );
    assert_eq!(verdict, Verdict::ExceedsClaim, "lower bound {bound}");
}

/// The largest |ln P(T ≤ t) − ln P'(T ≤ t)| (and upper tails) over thresholds t of the
/// released-score laws on the two held-out parts: what any threshold event can show.
fn threshold_pair_epsilon(first: &[(i64, f64)], second: &[(i64, f64)]) -> f64 {
    let mut below = (0.0, 0.0);
    let mut worst = 0.0f64;
    for ((_, p), (_, q)) in first.iter().zip(second) {
        below = (below.0 + p, below.1 + q);
        let above = (1.0 - below.0, 1.0 - below.1);
        for (x, y) in [below, above] {
            // Events rarer than 1e-6 are beyond any audit of 1e5 runs, and their tail
            // probabilities (1 − a sum) lose all precision.
            if x > 1e-6 && y > 1e-6 {
                worst = worst.max((x / y).ln().abs());
            }
        }
    }
    worst
}

/// Random stopping with γ = 0.1 (cap 200), one always-+1 candidate claiming ε_T = 1 and
/// scores at ε_S = 1: the claim is 3·1. The held-out parts have 10 and 11 negatives among
/// 20 rows. `scale` is the discrete Laplace scale the runs use (1/ε_S when correct).
/// Returns (pair ε, lower bound, verdict).
fn audit_stopping(scale: f64) -> (f64, f64, Verdict) {
    let (gamma, cap, claimed) = (0.1, 200, 3.0);
    let training = labelled(30, 0);
    let (first, second) = (labelled(10, 10), labelled(9, 11));
    let candidates = vec![FixedTrainer::new(f64::NEG_INFINITY, 1.0)];
    let noise = DiscreteLaplace::with_scale_at_least(scale).unwrap();
    let stopping = Stopping {
        probability: gamma,
        max_runs: cap,
    };
    let release = |held_out| {
        let (candidates, stopping, training, noise) = (&candidates, &stopping, &training, &noise);
        move |rng: &mut dp_noise::InsecureSeededRng| {
            run_on_split(candidates, stopping, training, held_out, noise, rng)
                .unwrap()
                .noisy_mistakes() as f64
        }
    };
    // The law at the correct scale 1/ε_S = 1: the pair ε of the mechanism as specified.
    let pair = threshold_pair_epsilon(
        &released_score_law(10, 1.0, gamma, cap, (-60, 80)),
        &released_score_law(11, 1.0, gamma, cap, (-60, 80)),
    );
    require_power(RUNS, pair, ALPHA).unwrap();
    let bound = epsilon_lower_bound(
        &run_scores(RUNS, 3, release(&first)).unwrap(),
        &run_scores(RUNS, 4, release(&second)).unwrap(),
        ALPHA,
    )
    .unwrap();
    eprintln!(
        "random stopping, scale {scale}: pair ε {pair:.3}, lower bound {:.3}",
        bound.epsilon
    );
    (
        pair,
        bound.epsilon,
        judge(&bound, claimed, Some(pair)).unwrap(),
    )
}

/// The best-of-geometric release is within its 3ε claim and within what the exact law
/// allows for this pair (about 1.8ε: more than one run's ε, which a single-run audit
/// would never show), and the audit comes within 80% of that.
#[test]
fn random_stopping_is_within_three_epsilon_and_the_audit_has_power() {
    let (pair, bound, verdict) = audit_stopping(1.0);
    assert!(pair > 1.5 && pair < 3.0, "pair ε {pair}");
    assert_eq!(
        verdict,
        Verdict::Consistent,
        "lower bound {bound} vs pair {pair}"
    );
    assert!(
        bound >= 0.8 * pair,
        "no power: lower bound {bound} vs pair {pair}"
    );
}

/// Mutation checks: scores with less noise are caught against the pair's exact ε (about
/// 1.8, far below the 3ε claim, so the check has a margin the claim alone would not give):
/// a quarter less noise (ε_S × 4/3) already exceeds it, and half the noise (ε_S doubled)
/// exceeds even the claim.
#[test]
fn random_stopping_audit_catches_less_score_noise() {
    let (pair, bound, verdict) = audit_stopping(0.75);
    assert_eq!(
        verdict,
        Verdict::ExceedsPairEpsilon,
        "lower bound {bound} vs pair {pair}"
    );
    let (pair, bound, verdict) = audit_stopping(0.5);
    assert_eq!(
        verdict,
        Verdict::ExceedsClaim,
        "lower bound {bound} vs pair {pair}"
    );
}

/// The law of the minimum of K draws of `z + L` (L discrete Laplace of scale t) over
/// `from ..= to`, computed without cancellation: with `S(y) = P(z + L ≥ y)` and
/// `R(y) = 1 − S(y)` each summed from its own end, `P(min = y) = P(K-draw law)` is
/// `γ·p(y) / ((γ + (1−γ)R(y))·(γ + (1−γ)R(y+1)))` for K geometric (the difference of
/// `G(u) = γu/(1 − (1−γ)u)` at `S(y)` and `S(y+1)`), and `p(y)·Σ_{j<T} S(y)^j S(y+1)^{T−1−j}`
/// for K fixed at T.
fn exact_best_of(z: i64, t: f64, runs: Runs, (from, to): (i64, i64)) -> Vec<f64> {
    let q = (-1.0 / t).exp();
    let pmf = |y: i64| (1.0 - q) / (1.0 + q) * q.powi((y - z).unsigned_abs() as i32);
    let values: Vec<i64> = (from..=to).collect();
    let mut at_least = vec![0.0; values.len() + 1];
    for (i, &y) in values.iter().enumerate().rev() {
        at_least[i] = at_least[i + 1] + pmf(y);
    }
    let mut below = vec![0.0; values.len() + 1];
    for (i, &y) in values.iter().enumerate() {
        below[i + 1] = below[i] + pmf(y);
    }
    values
        .iter()
        .enumerate()
        .map(|(i, &y)| match runs {
            Runs::Geometric(g) => {
                g * pmf(y) / ((g + (1.0 - g) * below[i]) * (g + (1.0 - g) * below[i + 1]))
            }
            Runs::Fixed(k) => {
                let (u, v) = (at_least[i], at_least[i + 1]);
                pmf(y) * (0..k).map(|j| u.powi(j) * v.powi(k - 1 - j)).sum::<f64>()
            }
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Runs {
    Geometric(f64),
    Fixed(i32),
}

/// The largest |ln P(y) − ln P'(y)| over single released values with P, P' > 1e-250.
fn pointwise_loss(first: &[f64], second: &[f64]) -> f64 {
    first
        .iter()
        .zip(second)
        .filter(|&(p, q)| *p > 1e-250 && *q > 1e-250)
        .map(|(p, q)| (p / q).ln().abs())
        .fold(0.0, f64::max)
}

/// The theorem checked on exact laws: for held-out counts z and z + 1, score ε from 0.1 to
/// 2 and γ from 0.02 to 1, the best of a geometric number of runs never loses more than
/// 3ε on any single output. The same check fails for the best of a fixed number of runs
/// (the mean 1/γ): so it is a check that can fail. And the factor 3 is needed: at small ε
/// and γ the exact loss passes 2.5ε, so a 2ε claim for the geometric rule would be false
/// (Papernot–Steinke's 2ε is for a different, logarithmic law of K).
#[test]
fn three_epsilon_holds_on_exact_laws_and_fails_for_a_fixed_run_count() {
    for epsilon in [0.1, 0.5, 1.0, 2.0] {
        for gamma in [0.02, 0.1, 0.3, 1.0] {
            let t = 1.0 / epsilon;
            let range = (-(40.0 * t) as i64 - 5, (40.0 * t) as i64 + 6);
            let loss = pointwise_loss(
                &exact_best_of(0, t, Runs::Geometric(gamma), range),
                &exact_best_of(1, t, Runs::Geometric(gamma), range),
            );
            eprintln!(
                "ε {epsilon}, γ {gamma}: worst loss {loss:.4} = {:.3}ε",
                loss / epsilon
            );
            assert!(
                loss <= 3.0 * epsilon + 1e-9,
                "ε {epsilon}, γ {gamma}: loss {loss}"
            );
            if epsilon == 0.1 && gamma == 0.02 {
                assert!(loss > 2.5 * epsilon, "loss {loss}");
            }
            if gamma <= 0.1 {
                let fixed = Runs::Fixed((1.0 / gamma) as i32);
                let loss = pointwise_loss(
                    &exact_best_of(0, t, fixed, range),
                    &exact_best_of(1, t, fixed, range),
                );
                assert!(loss > 3.0 * epsilon, "fixed runs, ε {epsilon}: loss {loss}");
            }
        }
    }
}
