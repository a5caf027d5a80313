//! Frequency tests of the selection mechanisms (chi-square, docs/src/reference/privacy-testing.md §1), exact
//! privacy-ratio checks, and mutation checks that prove the tests can fail.

use super::*;
use crate::InsecureSeededRng;
use crate::exact::exact_comparison;
use crate::stats::{self, ChiSquareTest, FALSE_ALARM_RATE};

/// Counts how often each index is chosen in `n` runs of `select`.
fn frequencies(
    m: usize,
    n: usize,
    seed: u64,
    mut select: impl FnMut(&mut InsecureSeededRng) -> usize,
) -> Vec<u64> {
    let mut rng = InsecureSeededRng::new(seed);
    let mut counts = vec![0u64; m];
    for _ in 0..n {
        counts[select(&mut rng)] += 1;
    }
    counts
}

/// Chi-square of observed selections against the ideal exponential-mechanism law
/// ∝ exp(ε u_i / (2Δ)), computed directly from the utilities in floating point.
fn chi_square_against_ideal(
    counts: &[u64],
    utilities: &[f64],
    epsilon: f64,
    sensitivity: f64,
) -> ChiSquareTest {
    let best = utilities.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let weights: Vec<f64> = utilities
        .iter()
        .map(|u| (epsilon * (u - best) / (2.0 * sensitivity)).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let n = counts.iter().sum::<u64>() as f64;
    let expected: Vec<f64> = weights.iter().map(|w| n * w / total).collect();
    stats::chi_square_test(counts, &expected, FALSE_ALARM_RATE)
}

#[test]
fn frequencies_match_on_small_utility_vectors() {
    let cases: [(&[f64], f64, f64); 4] = [
        (&[0.0, 1.0, 2.0, 3.0], 2.0, 1.0),
        (&[5.0, 5.0, 5.0], 1.0, 1.0),
        (&[0.25, -0.5, 0.1, 0.0, -1.0], 3.0, 0.5),
        (&[10.0, 7.0, 3.5, -2.0], 0.8, 2.0),
    ];
    for (i, (utilities, epsilon, sensitivity)) in cases.into_iter().enumerate() {
        let mechanism = ExponentialMechanism::new(epsilon, sensitivity).unwrap();
        let counts = frequencies(utilities.len(), 100_000, 10 + i as u64, |rng| {
            mechanism.select(utilities, rng).unwrap()
        });
        let test = chi_square_against_ideal(&counts, utilities, epsilon, sensitivity);
        assert!(test.passes(), "{utilities:?}: {test:?}");
    }
}

/// Utilities 2 apart at ε/(2Δ) = 1: exponents 0, 2, …, 12. The candidates 10 and 12 away
/// are chosen ~80 and ~10 times in 2·10^6 draws; a bounded-range sampler cannot do that.
const SPREAD: [f64; 7] = [0.0, -2.0, -4.0, -6.0, -8.0, -10.0, -12.0];
const SPREAD_DRAWS: usize = 2_000_000;

#[test]
fn far_candidates_are_chosen_in_exact_proportion() {
    let mechanism = ExponentialMechanism::new(2.0, 1.0).unwrap();
    let counts = frequencies(SPREAD.len(), SPREAD_DRAWS, 20, |rng| {
        mechanism.select(&SPREAD, rng).unwrap()
    });
    let test = chi_square_against_ideal(&counts, &SPREAD, 2.0, 1.0);
    assert!(test.passes(), "{test:?}");
    assert!(
        counts[6] > 0,
        "the farthest candidate was never chosen: {counts:?}"
    );
}

/// Mutation check: a Gumbel-max trick on 12-bit uniforms — the bounded-range flaw that
/// zeroes far candidates, made coarse enough to observe — fails the same test.
#[test]
fn chi_square_catches_a_bounded_range_gumbel_trick() {
    let counts = frequencies(SPREAD.len(), SPREAD_DRAWS, 21, |rng| {
        let mut best = (0, f64::NEG_INFINITY);
        for (i, u) in SPREAD.iter().enumerate() {
            let uniform = (rng.next_u32() >> 20) as f64 / 4096.0 + 1.0 / 8192.0;
            let score = u - (-uniform.ln()).ln();
            if score > best.1 {
                best = (i, score);
            }
        }
        best.0
    });
    let test = chi_square_against_ideal(&counts, &SPREAD, 2.0, 1.0);
    assert!(!test.passes(), "{test:?}");
}

/// Mutation check: a sampler that forgot the factor 2 in ε/(2Δ) (twice the ε it claims).
#[test]
fn chi_square_catches_missing_factor_two() {
    let utilities = [0.0, 1.0, 2.0, 3.0];
    let mechanism = ExponentialMechanism::new(2.0, 1.0).unwrap();
    let counts = frequencies(4, 100_000, 30, |rng| {
        let doubled: Vec<Ratio> = mechanism
            .scoring
            .exponents(&utilities)
            .unwrap()
            .iter()
            .map(|x| Ratio::new(2 * x.numerator, x.denominator))
            .collect();
        select_by_rejection(&doubled, rng)
    });
    let test = chi_square_against_ideal(&counts, &utilities, 2.0, 1.0);
    assert!(!test.passes(), "{test:?}");
}

#[test]
fn astronomically_far_candidates_are_handled() {
    // Gaps far beyond floating-point exp's range: no NaN, no panic, the best one wins.
    let utilities = [0.0, -1e9, -4e12, 3.0, -50.0];
    let mechanism = ExponentialMechanism::new(1.0, 1.0).unwrap();
    let probabilities = mechanism.selection_probabilities(&utilities).unwrap();
    assert!(probabilities.iter().all(|p| p.is_finite()));
    let counts = frequencies(5, 20_000, 40, |rng| {
        mechanism.select(&utilities, rng).unwrap()
    });
    let test = chi_square_against_ideal(&counts, &utilities, 1.0, 1.0);
    assert!(test.passes(), "{test:?}");
}

/// Random neighbouring utility vectors (every utility moved by at most Δ): the exact
/// selection probabilities differ by at most a factor e^ε.
#[test]
fn selection_probabilities_satisfy_epsilon_dp_on_neighbours() {
    use rand::RngExt;
    let (epsilon, sensitivity) = (0.9, 1.5);
    let mechanism = ExponentialMechanism::new(epsilon, sensitivity).unwrap();
    let broken = ExponentialMechanism::new(2.0 * epsilon, sensitivity).unwrap();
    let mut rng = InsecureSeededRng::new(50);
    let (mut worst, mut worst_broken) = (0.0f64, 0.0f64);
    for _ in 0..2000 {
        let m = rng.random_range(2..8);
        let u: Vec<f64> = (0..m).map(|_| rng.random_range(-5.0..5.0)).collect();
        let v: Vec<f64> = u
            .iter()
            .map(|x| x + sensitivity * rng.random_range(-1.0..=1.0f64).signum())
            .collect();
        let log_ratio = |mech: &ExponentialMechanism| {
            let (p, q) = (
                mech.selection_probabilities(&u).unwrap(),
                mech.selection_probabilities(&v).unwrap(),
            );
            p.iter()
                .zip(&q)
                .map(|(a, b)| (a.ln() - b.ln()).abs())
                .fold(0.0, f64::max)
        };
        worst = worst.max(log_ratio(&mechanism));
        worst_broken = worst_broken.max(log_ratio(&broken));
    }
    assert!(
        worst <= epsilon + 1e-9,
        "privacy loss {worst} > ε = {epsilon}"
    );
    // The check has teeth: the neighbours come close to the bound, and 2ε breaks it.
    assert!(worst > 0.9 * epsilon, "{worst}");
    assert!(worst_broken > epsilon, "{worst_broken}");
}

fn coefficient_cases() -> Vec<(f64, f64)> {
    use rand::RngExt;
    let mut rng = InsecureSeededRng::new(32);
    let mut cases = vec![(1.0, 1.0), (0.1, 3.0), (1e-6, 1.0), (50.0, 1e-4)];
    cases.extend((0..5000).map(|_| {
        (
            10f64.powf(rng.random_range(-6.0..2.0)),
            10f64.powf(rng.random_range(-4.0..3.0)),
        )
    }));
    cases
}

/// Whether numerator / 2^shift ≤ ε / (2S), exactly.
fn coefficient_within(numerator: u128, shift: u32, epsilon: f64, index_sensitivity: u64) -> bool {
    exact_comparison::product_le(
        numerator * 2 * u128::from(index_sensitivity),
        &[],
        1,
        &[epsilon, 2f64.powi(shift as i32)],
    )
}

#[test]
fn coefficient_never_exceeds_epsilon_over_2s_exactly() {
    for (epsilon, sensitivity) in coefficient_cases() {
        let scoring = ExactScoring::new(epsilon, sensitivity, None).unwrap();
        let s = scoring.grid.index_sensitivity();
        let shift = scoring.coefficient.denominator.trailing_zeros();
        assert!(
            coefficient_within(scoring.coefficient.numerator, shift, epsilon, s),
            "ε = {epsilon}, Δ = {sensitivity}"
        );
        let c = scoring.coefficient.to_f64();
        assert!(
            c >= epsilon / (2.0 * s as f64) * (1.0 - 1e-14),
            "ε = {epsilon}"
        );
    }
}

/// Mutation check: the coefficient without the "− 1" (round to nearest) violates the
/// exact bound in many cases.
#[test]
fn exact_coefficient_check_catches_round_to_nearest() {
    let violations = coefficient_cases()
        .into_iter()
        .filter(|&(epsilon, sensitivity)| {
            let scoring = ExactScoring::new(epsilon, sensitivity, None).unwrap();
            let shift = scoring.coefficient.denominator.trailing_zeros();
            let naive = scoring.coefficient.numerator + 1;
            !coefficient_within(naive, shift, epsilon, scoring.grid.index_sensitivity())
        })
        .count();
    assert!(violations > 100, "{violations}");
}

#[test]
fn shifting_all_utilities_changes_nothing() {
    let mechanism = ExponentialMechanism::new(1.0, 1.0).unwrap();
    let u = [0.5, 1.5, -2.0];
    let shifted: Vec<f64> = u.iter().map(|x| x + 1000.0).collect();
    assert_eq!(
        mechanism.selection_probabilities(&u).unwrap(),
        mechanism.selection_probabilities(&shifted).unwrap()
    );
}

/// Exact permute-and-flip law: P(i) = p_i · (1/m) Σ_k e_k(q_{−i}) / C(m−1, k), with
/// p_j = exp(−x_j), q_j = 1 − p_j and e_k the elementary symmetric polynomials: the set
/// visited before i is a uniformly random subset of a uniformly random size.
fn permute_and_flip_law(utilities: &[f64], epsilon: f64, sensitivity: f64) -> Vec<f64> {
    let best = utilities.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let p: Vec<f64> = utilities
        .iter()
        .map(|u| (epsilon * (u - best) / (2.0 * sensitivity)).exp())
        .collect();
    let m = p.len();
    (0..m)
        .map(|i| {
            let mut e = vec![0.0; m];
            e[0] = 1.0;
            for (j, pj) in p.iter().enumerate().filter(|&(j, _)| j != i) {
                let _ = j;
                for k in (1..m).rev() {
                    e[k] += e[k - 1] * (1.0 - pj);
                }
            }
            let mut binomial = 1.0;
            let mut sum = 0.0;
            for (k, ek) in e.iter().enumerate().take(m) {
                sum += ek / binomial;
                binomial = binomial * (m - 1 - k) as f64 / (k + 1) as f64;
            }
            p[i] * sum / m as f64
        })
        .collect()
}

fn permute_and_flip_chi_square(counts: &[u64], utilities: &[f64], epsilon: f64) -> ChiSquareTest {
    let n = counts.iter().sum::<u64>() as f64;
    let expected: Vec<f64> = permute_and_flip_law(utilities, epsilon, 1.0)
        .iter()
        .map(|p| n * p)
        .collect();
    stats::chi_square_test(counts, &expected, FALSE_ALARM_RATE)
}

#[test]
fn permute_and_flip_law_sums_to_one() {
    let law = permute_and_flip_law(&[0.0, 1.0, 2.0, 3.0, -4.0], 1.3, 1.0);
    assert!((law.iter().sum::<f64>() - 1.0).abs() < 1e-12);
}

#[test]
fn permute_and_flip_matches_its_exact_law() {
    let utilities = [0.0, 1.0, 2.0, 3.0, 0.5];
    let mechanism = PermuteAndFlip::new(1.5, 1.0).unwrap();
    let counts = frequencies(5, 100_000, 60, |rng| {
        mechanism.select(&utilities, rng).unwrap()
    });
    let test = permute_and_flip_chi_square(&counts, &utilities, 1.5);
    assert!(test.passes(), "{test:?}");
}

/// Mutation check: permute-and-flip run at 2ε fails against the law at ε.
#[test]
fn permute_and_flip_test_catches_doubled_epsilon() {
    let utilities = [0.0, 1.0, 2.0, 3.0, 0.5];
    let broken = PermuteAndFlip::new(3.0, 1.0).unwrap();
    let counts = frequencies(5, 100_000, 61, |rng| {
        broken.select(&utilities, rng).unwrap()
    });
    assert!(!permute_and_flip_chi_square(&counts, &utilities, 1.5).passes());
}

#[test]
fn rejects_empty_candidates() {
    let mut rng = InsecureSeededRng::new(1);
    let em = ExponentialMechanism::new(1.0, 1.0).unwrap();
    assert_eq!(em.select(&[], &mut rng), Err(NoiseError::NoCandidates));
    let pf = PermuteAndFlip::new(1.0, 1.0).unwrap();
    assert_eq!(pf.select(&[], &mut rng), Err(NoiseError::NoCandidates));
}

#[test]
fn rejects_non_finite_utility_naming_its_index() {
    let mut rng = InsecureSeededRng::new(1);
    let em = ExponentialMechanism::new(1.0, 1.0).unwrap();
    assert!(matches!(
        em.select(&[0.0, 1.0, f64::NAN], &mut rng),
        Err(NoiseError::NonFiniteValue { index: 2, .. })
    ));
    assert!(matches!(
        em.select(&[f64::INFINITY], &mut rng),
        Err(NoiseError::NonFiniteValue { index: 0, .. })
    ));
}

#[test]
fn huge_utilities_are_clamped_not_refused() {
    let mut rng = InsecureSeededRng::new(1);
    let em = ExponentialMechanism::new(1.0, 1.0).unwrap();
    assert_eq!(em.select(&[0.0, 1e300], &mut rng), Ok(1));
    // Two utilities beyond the clamp tie: both equally likely.
    let p = em.selection_probabilities(&[1e300, 1e299, -1e300]).unwrap();
    assert_eq!(p[0], p[1]);
}

#[test]
fn rejects_invalid_epsilon_and_sensitivity() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            ExponentialMechanism::new(bad, 1.0),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            ExponentialMechanism::new(1.0, bad),
            Err(NoiseError::InvalidSensitivity(_))
        ));
        assert!(matches!(
            PermuteAndFlip::new(bad, 1.0),
            Err(NoiseError::InvalidEpsilon(_))
        ));
    }
    for tiny in [1e-300, 5e-324] {
        assert!(matches!(
            ExponentialMechanism::new(tiny, 1.0),
            Err(NoiseError::UnsupportedParameters(_))
        ));
        assert!(matches!(
            PermuteAndFlip::new(tiny, 1.0),
            Err(NoiseError::UnsupportedParameters(_))
        ));
    }
}
