//! Levels: the stability threshold against its derivation, the δ it spends (measured),
//! empirical audits on a rare-level pair and a shifted-counts pair with mutants, the noisy
//! counts' law, a label's classes, and refusals.

use super::*;
use crate::InsecureSeededRng;
use crate::facts::audit_tests::{ALPHA, count_hits, epsilon_lower_bound};
use crate::stats::{self, FALSE_ALARM_RATE};

/// `P(1 + Z ≥ τ) = q^{τ−1}/(1 + q)` for the mechanism's exact noise.
fn delta_one(mechanism: &StabilityLevels) -> f64 {
    let q = (-1.0 / mechanism.noise().scale()).exp();
    q.powi((mechanism.threshold() - 1) as i32) / (1.0 + q)
}

#[test]
fn the_threshold_is_the_smallest_that_keeps_delta() {
    for epsilon in [0.1, 0.5, 1.0, 3.0] {
        for delta in [1e-10, 1e-6, 1e-5, 1e-3, 0.1] {
            let mechanism = StabilityLevels::new(epsilon, delta).unwrap();
            let tau = mechanism.threshold();
            let q = (-1.0 / mechanism.noise().scale()).exp();
            assert!(
                delta_one(&mechanism) <= delta,
                "ε {epsilon} δ {delta}: τ {tau}"
            );
            // Minimal (up to the 1e-9 margin): one less would exceed δ.
            assert!(
                q.powi((tau - 2) as i32) / (1.0 + q) > delta * (1.0 - 1e-6),
                "ε {epsilon} δ {delta}: τ {tau} is not the smallest"
            );
            // Never below the continuous-Laplace form 1 + (2/ε)·ln(1/(2δ)).
            assert!(tau as f64 >= 1.0 + 2.0 / epsilon * (1.0 / (2.0 * delta)).ln());
        }
    }
    // Pinned: ε = 1, δ = 1e-5 → 1 + ⌈2·(ln 10⁵ − ln(1 + e^{−1/2}))⌉ = 1 + ⌈22.08⌉ = 24.
    assert_eq!(StabilityLevels::new(1.0, 1e-5).unwrap().threshold(), 24);
}

/// The rare-level pair: D holds 50 records of level "a"; D′ replaces one by "rare".
fn rare_pair() -> (LevelCounts<&'static str>, LevelCounts<&'static str>) {
    let d: LevelCounts<&str> = std::iter::repeat_n("a", 50).collect();
    let mut d_prime: LevelCounts<&str> = std::iter::repeat_n("a", 49).collect();
    d_prime.add("rare");
    (d, d_prime)
}

fn releases_rare(
    mechanism: &StabilityLevels,
    counts: &LevelCounts<&str>,
    rng: &mut InsecureSeededRng,
) -> bool {
    let released = mechanism.release(counts, rng).unwrap();
    released.value().iter().any(|l| l.level == "rare")
}

/// The δ spent, measured: with δ set just above `q⁴/(1 + q)` the threshold is 5 and a
/// level held by one record is released with probability exactly `δ₁ = q⁴/(1+q) ≈ 0.084`.
/// A threshold one lower (the "+1" of the derivation forgotten) releases it with
/// probability `q³/(1+q) = δ₁·e^{1/2}`, above δ, and the Clopper–Pearson interval sees it.
#[test]
fn a_single_record_level_is_released_with_probability_delta() {
    let noise = histogram_noise(1.0).unwrap();
    let q = (-1.0 / noise.scale()).exp();
    let delta = q.powi(4) / (1.0 + q) * (1.0 + 1e-7);
    let mechanism = StabilityLevels::new(1.0, delta).unwrap();
    assert_eq!(mechanism.threshold(), 5);
    let (_, d_prime) = rare_pair();
    let runs = 100_000;
    let mut rng = InsecureSeededRng::new(41);
    let hits = count_hits(
        runs,
        || releases_rare(&mechanism, &d_prime, &mut rng),
        |&r| r,
    );
    let check = stats::binomial_check(hits, runs, delta_one(&mechanism), FALSE_ALARM_RATE);
    assert!(check.passes(), "{check:?}");
    eprintln!(
        "stability δ: {hits}/{runs} releases of a single-record level, δ = {delta:.4}, interval {:?}",
        check.interval
    );
    assert!(check.interval.0 <= delta);

    let off_by_one = StabilityLevels {
        threshold: mechanism.threshold() - 1,
        ..mechanism
    };
    let hits = count_hits(
        runs,
        || releases_rare(&off_by_one, &d_prime, &mut rng),
        |&r| r,
    );
    let (low, _) = stats::clopper_pearson(hits, runs, ALPHA);
    eprintln!("stability δ mutant (τ − 1): {hits}/{runs}, CP low {low:.4} > δ {delta:.4}");
    assert!(
        low > delta,
        "the off-by-one threshold was not caught: {low} ≤ {delta}"
    );
}

const AUDIT_RUNS: u64 = 100_000;

/// The (ε, δ) audit on the rare-level pair, event "the rare level is released":
/// `ln((CP_low(p′) − δ)/CP_high(p))`.
fn rare_audit(mechanism: &StabilityLevels, delta: f64) -> f64 {
    let (d, d_prime) = rare_pair();
    let mut rng = InsecureSeededRng::new(43);
    let likely = count_hits(
        AUDIT_RUNS,
        || releases_rare(mechanism, &d_prime, &mut rng),
        |&r| r,
    );
    let unlikely = count_hits(
        AUDIT_RUNS,
        || releases_rare(mechanism, &d, &mut rng),
        |&r| r,
    );
    let bound = epsilon_lower_bound(likely, unlikely, AUDIT_RUNS, delta);
    eprintln!(
        "stability rare-level audit: hits {likely} on D', {unlikely} on D, ε_LB = {bound:.3}"
    );
    bound
}

#[test]
fn audit_on_a_rare_level_pair_stays_below_epsilon_and_catches_a_count_one_level() {
    let (epsilon, delta) = (1.0, 1e-3);
    let mechanism = StabilityLevels::new(epsilon, delta).unwrap();
    assert!(rare_audit(&mechanism, delta) <= epsilon);
    // Mutant: a level is kept whenever its noisy count reaches 1 (no stability threshold).
    let no_threshold = StabilityLevels {
        threshold: 1,
        ..mechanism
    };
    let caught = rare_audit(&no_threshold, delta);
    assert!(caught > 5.0 * epsilon, "{caught}");
}

/// The shifted-counts pair: D holds 50 "r" and 50 "s"; D′ moves one record from "s" to
/// "r". Both levels are far above τ, so this is the pure part of the guarantee: the event
/// "ñ_r ≥ 51 and ñ_s ≤ 49" has probability `(q/(1+q))² = 0.1425` on D and
/// `(1/(1+q))² = 0.3875` on D′ at ε = 1, a ratio of exactly e^ε.
fn shift_audit(mechanism: &StabilityLevels, delta: f64) -> (f64, f64) {
    let d: LevelCounts<&str> = std::iter::repeat_n("r", 50)
        .chain(std::iter::repeat_n("s", 50))
        .collect();
    let d_prime: LevelCounts<&str> = std::iter::repeat_n("r", 51)
        .chain(std::iter::repeat_n("s", 49))
        .collect();
    let event = |released: &Vec<LevelCount<&str>>| {
        let count = |name: &str| {
            released
                .iter()
                .find(|l| l.level == name)
                .map(|l| l.noisy_count)
        };
        count("r").is_some_and(|r| r >= 51) && count("s").is_none_or(|s| s <= 49)
    };
    let mut rng = InsecureSeededRng::new(45);
    let mut run = |counts: &LevelCounts<&'static str>| {
        count_hits(
            AUDIT_RUNS,
            || mechanism.release(counts, &mut rng).unwrap().into_value(),
            event,
        )
    };
    let likely = run(&d_prime);
    let unlikely = run(&d);
    let with_delta = epsilon_lower_bound(likely, unlikely, AUDIT_RUNS, delta);
    let pure = epsilon_lower_bound(likely, unlikely, AUDIT_RUNS, 0.0);
    eprintln!(
        "stability shift audit: hits {likely} on D', {unlikely} on D, ε_LB = {with_delta:.3} \
         (δ-aware), {pure:.3} (pure)"
    );
    (with_delta, pure)
}

#[test]
fn audit_on_a_shifted_pair_stays_below_epsilon_and_catches_noise_for_sensitivity_one() {
    let (epsilon, delta) = (1.0, 1e-3);
    let mechanism = StabilityLevels::new(epsilon, delta).unwrap();
    let (with_delta, pure) = shift_audit(&mechanism, delta);
    assert!(
        with_delta <= epsilon && pure <= epsilon,
        "{with_delta} {pure}"
    );
    assert!(pure >= 0.8 * epsilon, "the audit has power: {pure}");
    let mutant = StabilityLevels {
        noise: DiscreteLaplace::with_scale_at_least(1.0 / epsilon).unwrap(),
        ..mechanism
    };
    let (caught, _) = shift_audit(&mutant, delta);
    assert!(caught > epsilon, "{caught}");
}

/// Candidate levels: the noisy count of a present level is its count plus DLap(2/ε)
/// (KS on the integers), the absent candidate and the non-candidate are never released,
/// and the list's order is kept.
fn candidate_noise_ks(mechanism: &CandidateLevels, claimed: &DiscreteLaplace) -> stats::KsTest {
    let mut counts: LevelCounts<&str> = std::iter::repeat_n("a", 200).collect();
    counts.add_chunk(std::iter::repeat_n("c", 137));
    counts.add_chunk(std::iter::repeat_n("z", 5));
    let candidates = ["c", "b", "a"];
    let mut rng = InsecureSeededRng::new(47);
    let deviations: Vec<i64> = (0..20_000)
        .map(|_| {
            let released = mechanism.release(&counts, &candidates, &mut rng).unwrap();
            let levels: Vec<&str> = released.value().iter().map(|l| l.level).collect();
            assert_eq!(levels, ["c", "a"]);
            released.value()[1].noisy_count - 200
        })
        .collect();
    stats::ks_test_integer(&deviations, |k| claimed.cdf(k), FALSE_ALARM_RATE)
}

#[test]
fn candidate_noisy_counts_follow_discrete_laplace_two_over_epsilon() {
    let mechanism = CandidateLevels::new(0.5, 1e-6).unwrap();
    assert!((mechanism.noise().scale() - 4.0).abs() < 1e-12);
    let test = candidate_noise_ks(&mechanism, mechanism.noise());
    assert!(test.passes(), "{test:?}");
    // Mutation check: noise for sensitivity 1 (scale 1/ε) fails against the claim.
    let mutant = CandidateLevels {
        noise: DiscreteLaplace::with_scale_at_least(2.0).unwrap(),
        ..mechanism
    };
    assert!(!candidate_noise_ks(&mutant, mechanism.noise()).passes());
}

/// A label's classes, with no list given: the stability histogram on the label column.
#[test]
fn the_classes_of_a_label_are_its_levels() {
    let labels: Vec<i64> = (0..1000).map(|i| if i % 3 == 0 { -1 } else { 1 }).collect();
    let counts: LevelCounts<i64> = labels.iter().copied().collect();
    let mechanism = StabilityLevels::new(1.0, 1e-6).unwrap();
    let released = mechanism
        .release(&counts, &mut InsecureSeededRng::new(49))
        .unwrap();
    assert_eq!(released.mechanism(), FactMechanism::StabilityLevels);
    assert_eq!((released.epsilon(), released.delta()), (1.0, 1e-6));
    let classes: Vec<i64> = released.value().iter().map(|l| l.level).collect();
    assert_eq!(classes, [-1, 1]);
}

#[test]
fn chunks_and_merges_count_the_same() {
    let words = ["x", "y", "x", "z", "x", "y"];
    let whole: LevelCounts<&str> = words.iter().copied().collect();
    let mut first: LevelCounts<&str> = words[..2].iter().copied().collect();
    let mut second = LevelCounts::new();
    second.add_chunk(words[2..].iter().copied());
    first.merge(second);
    assert_eq!(whole, first);
    assert_eq!(whole.rows(), 6);
    assert_eq!(format!("{whole:?}"), "LevelCounts { rows: 6, .. }");
}

#[test]
fn counts_round_trip_and_zero_or_overflowing_counts_are_refused() {
    let whole: LevelCounts<&str> = ["x", "y", "x"].into_iter().collect();
    let listed: Vec<(&str, u64)> = whole.counts().map(|(l, c)| (*l, c)).collect();
    assert_eq!(listed, [("x", 2), ("y", 1)]);
    let again = LevelCounts::from_counts(listed.into_iter().collect()).unwrap();
    assert_eq!(again, whole);
    assert_eq!(again.rows(), 3);
    assert!(LevelCounts::from_counts(BTreeMap::from([("x", 0)])).is_err());
    assert!(LevelCounts::from_counts(BTreeMap::from([("x", u64::MAX), ("y", 1)])).is_err());
}

#[test]
fn rejects_bad_parameters_and_data_by_name() {
    for bad in [0.0, -1.0, f64::NAN] {
        assert!(matches!(
            StabilityLevels::new(bad, 1e-6),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            CandidateLevels::new(bad, 0.1),
            Err(NoiseError::InvalidEpsilon(_))
        ));
    }
    for bad in [0.0, -1e-6, 0.2, 1.0, f64::NAN] {
        assert!(matches!(
            StabilityLevels::new(1.0, bad),
            Err(NoiseError::InvalidDelta(_))
        ));
    }
    for bad in [0.0, 1.0, f64::NAN] {
        assert!(matches!(
            CandidateLevels::new(1.0, bad),
            Err(NoiseError::InvalidProbability { .. })
        ));
    }
    let mut rng = InsecureSeededRng::new(1);
    let counts: LevelCounts<&str> = ["a", "b"].into_iter().collect();
    let empty: LevelCounts<&str> = LevelCounts::new();
    let candidates = CandidateLevels::new(1.0, 0.1).unwrap();
    assert_eq!(
        candidates.release(&counts, &["a", "b", "a"], &mut rng),
        Err(NoiseError::DuplicateCandidate { position: 2 })
    );
    assert_eq!(
        candidates.release(&counts, &[], &mut rng),
        Err(NoiseError::NoCandidates)
    );
    assert_eq!(
        candidates.release(&empty, &["a"], &mut rng),
        Err(NoiseError::EmptyData)
    );
    let stability = StabilityLevels::new(1.0, 1e-6).unwrap();
    assert_eq!(
        stability.release(&empty, &mut rng),
        Err(NoiseError::EmptyData)
    );
}
