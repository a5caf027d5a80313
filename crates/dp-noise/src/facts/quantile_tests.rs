//! The private quantile: its exact law (chi-square against `∝ exp(ε u/2)`), ε on random
//! neighbours from the exact probabilities, an empirical audit on an extreme-value pair
//! with mutants the audit must catch, utility, streaming, and refusals.

use super::*;
use crate::InsecureSeededRng;
use crate::facts::audit_tests::{count_hits, epsilon_lower_bound};
use crate::stats::{self, FALSE_ALARM_RATE};

fn counts_of(data: &[f64], grid: &CandidateGrid) -> GridCounts {
    let mut counts = GridCounts::new(grid.clone());
    counts.add_chunk(data).unwrap();
    counts
}

/// The ideal law `∝ exp(ε·u(c_j)/2)`, `u(c_j)` minus the distance from `p·n` to the ranks
/// `[#{x ≤ c_{j−1}}, #{x ≤ c_j}]` (0 below the first candidate), computed by brute force
/// (O(n·m)) independently of the code under test.
fn ideal_law(data: &[f64], grid: &[f64], p: f64, epsilon: f64) -> Vec<f64> {
    let target = p * data.len() as f64;
    let rank = |c: f64| data.iter().filter(|&&x| x <= c).count() as f64;
    let weights: Vec<f64> = grid
        .iter()
        .enumerate()
        .map(|(j, &c)| {
            let (low, high) = (if j == 0 { 0.0 } else { rank(grid[j - 1]) }, rank(c));
            let distance = if target < low {
                low - target
            } else if target > high {
                target - high
            } else {
                0.0
            };
            (-epsilon * distance / 2.0).exp()
        })
        .collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| w / total).collect()
}

fn selection_counts(
    mechanism: &PrivateQuantile,
    counts: &GridCounts,
    runs: usize,
    seed: u64,
) -> Vec<u64> {
    let mut rng = InsecureSeededRng::new(seed);
    let grid = counts.grid().values();
    let mut seen = vec![0u64; grid.len()];
    for _ in 0..runs {
        let value = *mechanism
            .release_from_counts(counts, &mut rng)
            .unwrap()
            .value();
        seen[grid.iter().position(|&c| c == value).unwrap()] += 1;
    }
    seen
}

const DATA: [f64; 8] = [0.3, 1.2, 1.7, 2.5, 3.1, 4.8, 5.0, 7.2];

fn small_grid() -> CandidateGrid {
    CandidateGrid::new((0..=8).map(f64::from).collect()).unwrap()
}

fn chi_square_against_ideal(
    mechanism: &PrivateQuantile,
    claimed_epsilon: f64,
) -> stats::ChiSquareTest {
    let grid = small_grid();
    let counts = counts_of(&DATA, &grid);
    let seen = selection_counts(mechanism, &counts, 100_000, 7);
    let expected: Vec<f64> = ideal_law(&DATA, grid.values(), 0.3, claimed_epsilon)
        .iter()
        .map(|p| p * 100_000.0)
        .collect();
    stats::chi_square_test(&seen, &expected, FALSE_ALARM_RATE)
}

/// Goodness of fit: p·n = 2.4 (fractional), ε = 1.5.
#[test]
fn selections_follow_exp_epsilon_u_over_two() {
    let mechanism = PrivateQuantile::new(1.5, 0.3).unwrap();
    let test = chi_square_against_ideal(&mechanism, 1.5);
    assert!(test.passes(), "{test:?}");
    let exact = mechanism
        .selection_probabilities(&counts_of(&DATA, &small_grid()))
        .unwrap();
    for (a, b) in exact
        .iter()
        .zip(ideal_law(&DATA, small_grid().values(), 0.3, 1.5))
    {
        assert!((a - b).abs() < 1e-5 * b.max(1e-3), "{a} vs {b}");
    }
}

/// Mutation check: a quantile that forgot the /2 (∝ exp(ε u)) fails the same test.
#[test]
fn chi_square_catches_a_missing_half() {
    let broken = PrivateQuantile::new(3.0, 0.3).unwrap();
    assert!(!chi_square_against_ideal(&broken, 1.5).passes());
}

/// Worst log-ratio of the exact selection probabilities over random neighbouring pairs
/// (one record replaced, ties and fractional p·n included).
fn worst_log_ratio(mechanism: &PrivateQuantile, seed: u64) -> f64 {
    use rand::RngExt;
    let mut rng = InsecureSeededRng::new(seed);
    let grid = CandidateGrid::new(vec![-2.0, -1.0, 0.0, 1.0, 2.0, 3.0]).unwrap();
    let mut worst = 0.0f64;
    for _ in 0..3000 {
        let n = rng.random_range(1..12);
        let data: Vec<f64> = (0..n).map(|_| f64::from(rng.random_range(-3..5))).collect();
        let mut neighbour = data.clone();
        neighbour[rng.random_range(0..n)] = f64::from(rng.random_range(-3..5));
        let p = mechanism
            .selection_probabilities(&counts_of(&data, &grid))
            .unwrap();
        let q = mechanism
            .selection_probabilities(&counts_of(&neighbour, &grid))
            .unwrap();
        for (a, b) in p.iter().zip(&q) {
            worst = worst.max((a.ln() - b.ln()).abs());
        }
    }
    worst
}

#[test]
fn exact_probabilities_are_epsilon_dp_on_random_neighbours() {
    for (epsilon, p) in [(1.0, 0.5), (0.7, 0.3), (2.0, 0.9)] {
        let worst = worst_log_ratio(&PrivateQuantile::new(epsilon, p).unwrap(), 11);
        assert!(
            worst <= epsilon * (1.0 + 1e-9),
            "ε = {epsilon}, p = {p}: {worst}"
        );
        // Random pairs on six candidates reach 0.72ε at (2, 0.9), ≥ 0.8ε at the others.
        assert!(
            worst > 0.7 * epsilon,
            "the pairs come close to the bound: {worst}"
        );
        // Mutation check: the same mechanism at 2ε breaks the claim for ε.
        let broken = worst_log_ratio(&PrivateQuantile::new(2.0 * epsilon, p).unwrap(), 11);
        assert!(broken > epsilon * 1.1, "{broken}");
    }
}

/// The extreme-value pair: D = {0.5, 10³⁰⁰}, D′ replaces 10³⁰⁰ by −10³⁰⁰, on the grid
/// {0, 1, …, 21} with p = ½ (target 1). On D candidate 0 has utility −1 (its ranks [0, 0]),
/// every other 0; on D′ candidates 0 and 1 have 0 and the twenty others −1 (ranks [2, 2]).
/// At ε = 1, P_D(0) = e^{−½}/(e^{−½} + 21) = 0.0281 and P_D′(0) = 1/(2 + 20e^{−½}) =
/// 0.0708: the pair's ε for "the release is 0" is 0.925, near ε (the one candidate gains
/// what the twenty lose). At 2ε (the missing-half mutant) the same event has 0.0172 and
/// 0.107, a ratio of e^{1.83}.
fn extreme_pair() -> (Vec<f64>, Vec<f64>, CandidateGrid) {
    let d = vec![0.5, 1e300];
    let d_prime = vec![0.5, -1e300];
    let grid = CandidateGrid::new((0..=21).map(f64::from).collect()).unwrap();
    (d, d_prime, grid)
}

const AUDIT_RUNS: u64 = 200_000;

/// The audit: runs of `release` on D′ and D, event "the release is 0".
fn audit(mut release: impl FnMut(&[f64], &mut InsecureSeededRng) -> f64) -> f64 {
    let (d, d_prime, _) = extreme_pair();
    let mut rng = InsecureSeededRng::new(99);
    let likely = count_hits(AUDIT_RUNS, || release(&d_prime, &mut rng), |&v| v == 0.0);
    let unlikely = count_hits(AUDIT_RUNS, || release(&d, &mut rng), |&v| v == 0.0);
    let bound = epsilon_lower_bound(likely, unlikely, AUDIT_RUNS, 0.0);
    eprintln!("quantile audit: hits {likely} on D', {unlikely} on D, ε_LB = {bound:.3}");
    bound
}

#[test]
fn audit_on_an_extreme_value_pair_stays_below_epsilon_and_catches_mutants() {
    let epsilon = 1.0;
    let (_, _, grid) = extreme_pair();
    let mechanism = PrivateQuantile::new(epsilon, 0.5).unwrap();
    let honest = audit(|data, rng| *mechanism.release(data, &grid, rng).unwrap().value());
    let (d, d_prime, _) = extreme_pair();
    let law = |data: &[f64]| {
        mechanism
            .selection_probabilities(&counts_of(data, &grid))
            .unwrap()[0]
    };
    let pair_epsilon = (law(&d_prime) / law(&d)).ln();
    assert!((pair_epsilon - 0.9247).abs() < 1e-3, "{pair_epsilon}");
    assert!(
        honest <= pair_epsilon,
        "ε_LB {honest} > ε_pair {pair_epsilon}"
    );
    assert!(honest <= epsilon, "ε_LB {honest} > ε {epsilon}");
    assert!(honest >= 0.6 * epsilon, "the audit has power: {honest}");

    // Mutant 1: the release reads the exact minimum (the smallest candidate above it).
    let exact_min = audit(|data, _| {
        let min = data.iter().copied().fold(f64::INFINITY, f64::min);
        grid.values()
            .iter()
            .copied()
            .find(|&c| c >= min)
            .unwrap_or(1.0)
    });
    assert!(exact_min > 5.0 * epsilon, "{exact_min}");

    // Mutant 2: the exponential mechanism without the /2 (twice the claimed ε).
    let doubled = PrivateQuantile::new(2.0 * epsilon, 0.5).unwrap();
    let missing_half = audit(|data, rng| *doubled.release(data, &grid, rng).unwrap().value());
    assert!(missing_half > epsilon, "{missing_half}");
}

/// On the extreme-value pair, both data sets can release every candidate: the extreme
/// record moves the law by at most e^ε, it does not decide the value (the exact-minimum
/// mutant's laws have disjoint supports).
#[test]
fn the_extreme_record_changes_the_law_not_the_value() {
    let (d, d_prime, grid) = extreme_pair();
    let mechanism = PrivateQuantile::new(1.0, 0.5).unwrap();
    let p = mechanism
        .selection_probabilities(&counts_of(&d, &grid))
        .unwrap();
    let q = mechanism
        .selection_probabilities(&counts_of(&d_prime, &grid))
        .unwrap();
    for (a, b) in p.iter().zip(&q) {
        assert!(*a > 0.0 && *b > 0.0);
        assert!((a.ln() - b.ln()).abs() <= 1.0 + 1e-9);
    }
    let mut rng = InsecureSeededRng::new(5);
    for data in [&d, &d_prime] {
        let outputs: std::collections::BTreeSet<u64> = (0..20_000)
            .map(|_| {
                mechanism
                    .release(data, &grid, &mut rng)
                    .unwrap()
                    .value()
                    .to_bits()
            })
            .collect();
        assert_eq!(outputs.len(), grid.values().len(), "every candidate seen");
    }
}

/// A point mass holding the quantile (every row of one-hot data has the same norm): its own
/// cell is released, not a candidate drawn uniformly from those above it, as the utility
/// `−|#{x ≤ c} − p·n|` (flat above the data) did.
#[test]
fn a_point_mass_releases_its_own_cell() {
    let grid = CandidateGrid::log_spaced(2f64.powi(-64), 2f64.powi(64), 4).unwrap();
    let data = vec![3f64.sqrt(); 5_000];
    let counts = counts_of(&data, &grid);
    let mechanism = PrivateQuantile::new(0.1, 0.9).unwrap();
    let mut rng = InsecureSeededRng::new(4);
    let cell = grid
        .values()
        .iter()
        .copied()
        .find(|&c| c >= 3f64.sqrt())
        .unwrap();
    for _ in 0..50 {
        let released = *mechanism
            .release_from_counts(&counts, &mut rng)
            .unwrap()
            .value();
        assert_eq!(released, cell);
    }
}

#[test]
fn the_median_of_ten_thousand_draws_lands_near_the_true_one() {
    use rand_distr::{Distribution, Normal};
    let mut rng = InsecureSeededRng::new(21);
    let normal = Normal::new(3.0, 1.0).unwrap();
    let data: Vec<f64> = (0..10_000).map(|_| normal.sample(&mut rng)).collect();
    let fine = CandidateGrid::new((-1000..=1000).map(|i| f64::from(i) * 0.01).collect()).unwrap();
    let mechanism = PrivateQuantile::new(1.0, 0.5).unwrap();
    let counts = counts_of(&data, &fine);
    for _ in 0..20 {
        let released = mechanism.release_from_counts(&counts, &mut rng).unwrap();
        assert_eq!(released.mechanism(), FactMechanism::Quantile);
        assert_eq!((released.epsilon(), released.delta()), (1.0, 0.0));
        let rank = data.iter().filter(|&&x| x <= *released.value()).count();
        assert!((rank as i64 - 5000).abs() <= 50, "rank {rank}");
    }
    // With nothing known, the signed powers of two resolve the median to a factor of 2.
    let log_counts = counts_of(&data, &CandidateGrid::for_f64());
    for _ in 0..20 {
        let value = *mechanism
            .release_from_counts(&log_counts, &mut rng)
            .unwrap()
            .value();
        assert!(value == 2.0 || value == 4.0, "{value}");
    }
}

/// Streaming: counts accumulated chunk by chunk give the release one pass gives.
#[test]
fn a_streamed_release_equals_the_in_memory_one() {
    let data: Vec<f64> = (0..100_000)
        .map(|i| ((i * 7919) % 100_003) as f64 / 1000.0)
        .collect();
    let grid = CandidateGrid::for_f64();
    let mut streamed = GridCounts::new(grid.clone());
    for chunk in data.chunks(4096) {
        streamed.add_chunk(chunk).unwrap();
    }
    let mechanism = PrivateQuantile::new(1.0, 0.25).unwrap();
    let a = mechanism
        .release(&data, &grid, &mut InsecureSeededRng::new(3))
        .unwrap();
    let b = mechanism
        .release_from_counts(&streamed, &mut InsecureSeededRng::new(3))
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn rejects_bad_parameters_and_data_by_name() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            PrivateQuantile::new(bad, 0.5),
            Err(NoiseError::InvalidEpsilon(_))
        ));
    }
    for bad in [-0.1, 1.1, f64::NAN] {
        assert!(matches!(
            PrivateQuantile::new(1.0, bad),
            Err(NoiseError::InvalidProbability { .. })
        ));
    }
    let mechanism = PrivateQuantile::new(1.0, 0.5).unwrap();
    let grid = small_grid();
    let mut rng = InsecureSeededRng::new(1);
    assert_eq!(
        mechanism.release(&[], &grid, &mut rng),
        Err(NoiseError::EmptyData)
    );
    assert!(matches!(
        mechanism.release(&[1.0, 2.0, f64::NAN], &grid, &mut rng),
        Err(NoiseError::NonFiniteValue { index: 2, .. })
    ));
    assert!(matches!(
        CandidateGrid::new(vec![1.0, 0.0]),
        Err(NoiseError::InvalidCandidate { position: 1, .. })
    ));
}
