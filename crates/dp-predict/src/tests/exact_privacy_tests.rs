//! Exact privacy verification (docs/src/reference/privacy-testing.md §2, last paragraph): where the output law
//! is computable, compare it on many random neighbouring datasets (one example replaced)
//! and check `max |ln P_D(out) − ln P_D'(out)| ≤ ε` to 1e-12 — and that each plausible
//! bug violates it (mutation checks).

use rand::RngExt;

use super::{max_log_ratio, rng};
use crate::aggregate::{Ensemble, SoftMajorityEnsemble};
use crate::vote::{SoftMajority, VoteMutation};
use crate::walk::{ExponentialWalk, WalkMutation};
use crate::{LineData, PrivateThresholdLearner, ThresholdErm, WalkParams};

type Raw = (Vec<f64>, Vec<bool>);

/// A random dataset on the integers 0..10 (many ties) and a neighbour with the example at
/// one position replaced, in their given (unsorted) order.
fn neighbouring_raw(r: &mut impl rand::Rng, n: usize) -> (Raw, Raw) {
    let points: Vec<f64> = (0..n).map(|_| r.random_range(0..10) as f64).collect();
    let labels: Vec<bool> = (0..n).map(|_| r.random::<bool>()).collect();
    let (mut points2, mut labels2) = (points.clone(), labels.clone());
    let i = r.random_range(0..n);
    points2[i] = r.random_range(0..10) as f64;
    labels2[i] = r.random::<bool>();
    ((points, labels), (points2, labels2))
}

/// As [`neighbouring_raw`], as line data (sorted: the walk sees a multiset).
fn neighbouring_lines(r: &mut impl rand::Rng, n: usize) -> (LineData, LineData) {
    let (a, b) = neighbouring_raw(r, n);
    (
        LineData::new(a.0, a.1).unwrap(),
        LineData::new(b.0, b.1).unwrap(),
    )
}

/// One-feature examples in the given order (the ensemble's partition is over positions).
fn raw_examples(raw: &Raw) -> dp_erm::Examples {
    let labels = raw.1.iter().map(|&y| if y { 1.0 } else { -1.0 }).collect();
    dp_erm::Examples::new(dp_erm::Features::dense(1, raw.0.clone()).unwrap(), labels).unwrap()
}

/// Queries between and on every possible point.
fn line_queries() -> Vec<f64> {
    (-2..=21).map(|k| k as f64 / 2.0).collect()
}

/// The largest privacy loss of the walk (with `mutation`) over random neighbouring pairs,
/// divided by the ε the spec promises.
fn worst_walk_loss_ratio(mutation: WalkMutation, pairs: usize, seed: u64) -> f64 {
    let mut r = rng(seed);
    let mut worst: f64 = 0.0;
    for _ in 0..pairs {
        let n = r.random_range(1..40);
        let epsilon = 10f64.powf(r.random_range(-1.5..0.5));
        let alpha = r.random_range(0.001..0.45);
        let params = WalkParams::new(epsilon, alpha).unwrap();
        let (d, d2) = neighbouring_lines(&mut r, n);
        let walk = ExponentialWalk::build(params, &d, mutation).unwrap();
        let walk2 = ExponentialWalk::build(params, &d2, mutation).unwrap();
        for x in line_queries() {
            let loss = max_log_ratio(&walk.law(x).unwrap(), &walk2.law(x).unwrap());
            worst = worst.max(loss / epsilon);
        }
    }
    worst
}

#[test]
fn walk_is_epsilon_dp_exactly_over_random_neighbours() {
    let worst = worst_walk_loss_ratio(WalkMutation::None, 3000, 1);
    // ≤ ε + 1e-12 for every ε drawn (all ≥ 0.03): as a ratio, ≤ 1 + 1e-12/0.03.
    assert!(worst <= 1.0 + 4e-11, "worst loss / ε = {worst}");
    // The bound is tight: some pair reaches it (within the 2^-20 grid).
    assert!(worst >= 0.99, "worst loss / ε = {worst}");
}

/// The textbook law 1/(1 + e^{−εv/2}) obeys the same bound, and the sampled law is within
/// the grid's rounding of it.
#[test]
fn walk_ideal_law_is_epsilon_dp_and_matches_the_sampled_law() {
    let mut r = rng(2);
    for _ in 0..500 {
        let n = r.random_range(1..30);
        let (epsilon, alpha) = (r.random_range(0.1..2.0), r.random_range(0.01..0.45));
        let params = WalkParams::new(epsilon, alpha).unwrap();
        let (d, d2) = neighbouring_lines(&mut r, n);
        let (walk, walk2) = (params.fit(&d).unwrap(), params.fit(&d2).unwrap());
        for x in line_queries() {
            let p = walk.secret_ideal_probability_of_one(x).unwrap();
            let p2 = walk2.secret_ideal_probability_of_one(x).unwrap();
            assert!(max_log_ratio(&[p, 1.0 - p], &[p2, 1.0 - p2]) <= epsilon + 1e-12);
            // The floor: every answer has probability in [α, 1 − α].
            assert!(p >= alpha * (1.0 - 1e-9) && p <= 1.0 - alpha * (1.0 - 1e-9));
            let sampled = walk.secret_probability_of_one(x).unwrap();
            assert!((sampled - p).abs() <= 1e-5, "{sampled} vs {p}");
        }
    }
}

#[test]
fn mutation_double_step_breaks_walk_privacy() {
    let worst = worst_walk_loss_ratio(WalkMutation::DoubleStep, 500, 3);
    assert!(worst > 1.5, "double step: worst loss / ε = {worst}");
}

#[test]
fn mutation_absorbing_clamp_breaks_walk_privacy() {
    let worst = worst_walk_loss_ratio(WalkMutation::AbsorbingClamp, 500, 4);
    assert!(worst > 1.5, "absorbing clamp: worst loss / ε = {worst}");
}

#[test]
fn mutation_full_epsilon_log_odds_breaks_walk_privacy() {
    let worst = worst_walk_loss_ratio(WalkMutation::FullEpsilonLogOdds, 500, 5);
    assert!(worst > 1.5, "log-odds ε·v: worst loss / ε = {worst}");
}

/// Worst loss / ε of the soft majority over random vote counts and a neighbour whose one
/// changed model moves each count by at most 1.
fn worst_vote_loss_ratio(mutation: VoteMutation, pairs: usize, seed: u64) -> f64 {
    let mut r = rng(seed);
    let mut worst: f64 = 0.0;
    for _ in 0..pairs {
        let k: usize = r.random_range(1..300);
        let positive = r.random_range(0..=k);
        // The changed model: its vote goes from + to −, − to +, or stays.
        let (positive2, negative2) = match r.random_range(0..3) {
            0 if positive > 0 => (positive - 1, k - positive + 1),
            1 if positive < k => (positive + 1, k - positive - 1),
            _ => (positive, k - positive),
        };
        let epsilon = 10f64.powf(r.random_range(-2.0..0.7));
        let vote = SoftMajority::build(epsilon, mutation).unwrap();
        let p = vote.law(positive, k - positive).unwrap();
        let p2 = vote.law(positive2, negative2).unwrap();
        // Far from the middle one outcome's probability underflows (to a subnormal or 0)
        // in floating point and loses its relative precision; those pairs say nothing
        // about the ratio.
        if p.iter().chain(&p2).all(|v| v.is_normal()) {
            worst = worst.max(max_log_ratio(&p, &p2) / epsilon);
        }
    }
    worst
}

#[test]
fn soft_majority_is_epsilon_dp_exactly_over_random_votes() {
    let worst = worst_vote_loss_ratio(VoteMutation::None, 20_000, 6);
    assert!(worst <= 1.0 + 1e-10, "worst loss / ε = {worst}");
    assert!(worst >= 0.9, "worst loss / ε = {worst}");
}

/// The bug the issue warns about: probability ∝ exp(ε·count) is 2ε-DP.
#[test]
fn mutation_vote_scale_exp_epsilon_count_breaks_soft_majority() {
    let worst = worst_vote_loss_ratio(VoteMutation::DoubledEpsilon, 20_000, 6);
    assert!(worst > 1.8, "exp(ε·count): worst loss / ε = {worst}");
}

/// End to end: subsample-and-aggregate of ERM thresholds on neighbouring datasets (the
/// example at one position replaced; the same partition seed, as the partition does not
/// depend on the data), exact answer laws.
fn worst_ensemble_loss_ratio(mutation: VoteMutation, seed: u64) -> f64 {
    let mut r = rng(seed);
    let mut worst: f64 = 0.0;
    for trial in 0..300 {
        let n = r.random_range(5..60);
        let parts = r.random_range(1..=5usize.min(n));
        let epsilon = r.random_range(0.2..2.0);
        let (d, d2) = neighbouring_raw(&mut r, n);
        let train = |data: &Raw| {
            let ensemble =
                Ensemble::train(&ThresholdErm, &raw_examples(data), parts, &mut rng(trial))
                    .unwrap();
            SoftMajorityEnsemble::with_vote(
                ensemble,
                SoftMajority::build(epsilon, mutation).unwrap(),
            )
        };
        let (a, b) = (train(&d), train(&d2));
        for x in line_queries() {
            let (p, p2) = (a.law(&[x]).unwrap(), b.law(&[x]).unwrap());
            worst = worst.max(max_log_ratio(&p, &p2) / epsilon);
        }
    }
    worst
}

#[test]
fn subsample_and_aggregate_is_epsilon_dp_exactly_end_to_end() {
    let worst = worst_ensemble_loss_ratio(VoteMutation::None, 7);
    assert!(worst <= 1.0 + 1e-10, "worst loss / ε = {worst}");
    assert!(worst >= 0.9, "worst loss / ε = {worst}");
}

#[test]
fn mutation_exp_epsilon_count_breaks_subsample_and_aggregate_end_to_end() {
    let worst = worst_ensemble_loss_ratio(VoteMutation::DoubledEpsilon, 7);
    assert!(worst > 1.8, "worst loss / ε = {worst}");
}

/// The private threshold learner: the exponential mechanism over candidates, utility
/// −mistakes (sensitivity 1), exact law over random neighbours; the same learner built at
/// 2ε (a mis-scaled utility) breaks the bound for ε.
#[test]
fn threshold_learner_is_epsilon_dp_exactly_and_mutation_is_caught() {
    let candidates: Vec<f64> = (0..=20).map(|k| k as f64 / 2.0 - 0.25).collect();
    let mut r = rng(8);
    let (mut worst, mut worst_mutant): (f64, f64) = (0.0, 0.0);
    for _ in 0..1000 {
        let n = r.random_range(1..40);
        let epsilon = r.random_range(0.1..2.0);
        let (d, d2) = neighbouring_lines(&mut r, n);
        let loss = |learner: &PrivateThresholdLearner| {
            max_log_ratio(
                &learner.secret_selection_probabilities(&d).unwrap(),
                &learner.secret_selection_probabilities(&d2).unwrap(),
            )
        };
        let learner = PrivateThresholdLearner::new(epsilon, candidates.clone()).unwrap();
        let mutant = PrivateThresholdLearner::new(2.0 * epsilon, candidates.clone()).unwrap();
        worst = worst.max(loss(&learner) / epsilon);
        worst_mutant = worst_mutant.max(loss(&mutant) / epsilon);
    }
    assert!(worst <= 1.0 + 1e-10, "{worst}");
    assert!(worst_mutant > 1.5, "{worst_mutant}");
}
