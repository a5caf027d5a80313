//! Bounds: the histogram mechanism's exact law (chi-square), ε on random neighbours from
//! that law, an empirical audit on an extreme-value pair with mutants, utility on a known
//! distribution, the "none" release, clipping, and refusals.

use std::collections::BTreeMap;

use super::*;
use crate::InsecureSeededRng;
use crate::facts::audit_tests::{ALPHA, epsilon_lower_bound_at};
use crate::stats::{self, FALSE_ALARM_RATE};

/// Outcome of a histogram release as (first, last) passing cells, or None.
type Outcome = Option<(usize, usize)>;

/// An event on a release, fixed before the runs.
type Event = dyn Fn(&Option<Bounds>) -> bool;

/// The exact law of (first, last) passing cells: cells pass independently, cell j with
/// probability `P(c_j + Z ≥ τ) = 1 − F(τ − c_j − 1)`.
fn outcome_law(counts: &[u64], noise: &DiscreteLaplace, threshold: i64) -> BTreeMap<Outcome, f64> {
    let pass: Vec<f64> = counts
        .iter()
        .map(|&c| 1.0 - noise.cdf(threshold - c as i64 - 1))
        .collect();
    let fail = |range: std::ops::Range<usize>| range.map(|j| 1.0 - pass[j]).product::<f64>();
    let m = counts.len();
    let mut law = BTreeMap::new();
    law.insert(None, fail(0..m));
    for i in 0..m {
        for k in i..m {
            let inner = if i == k { 1.0 } else { pass[i] * pass[k] };
            let p = if i == k { pass[i] } else { inner } * fail(0..i) * fail(k + 1..m);
            law.insert(Some((i, k)), p);
        }
    }
    law
}

/// The (first, last) cells a released pair of bounds came from.
fn outcome_of(grid: &CandidateGrid, bounds: Option<Bounds>) -> Outcome {
    bounds.map(|b| {
        let first = (0..grid.cells())
            .find(|&j| grid.cell_range(j).0 == b.lower())
            .unwrap();
        let last = (0..grid.cells())
            .find(|&j| grid.cell_range(j).1 == b.upper())
            .unwrap();
        (first, last)
    })
}

/// The small grid of the tests: cells (−∞,1], (1,2], (2,1024], (1024,2048], (2048,∞).
fn small_grid() -> CandidateGrid {
    CandidateGrid::new(vec![1.0, 2.0, 1024.0, 2048.0]).unwrap()
}

fn chi_square_of_outcomes(
    mechanism: &HistogramBounds,
    claimed: &HistogramBounds,
) -> stats::ChiSquareTest {
    let grid = small_grid();
    let data = [0.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.7, 1500.0];
    let mut counts = GridCounts::new(grid.clone());
    counts.add_chunk(&data).unwrap();
    let law = outcome_law(
        counts.cells(),
        claimed.noise(),
        claimed.threshold(grid.cells()),
    );
    let index: BTreeMap<Outcome, usize> = law.keys().enumerate().map(|(i, o)| (*o, i)).collect();
    let mut seen = vec![0u64; law.len()];
    let mut rng = InsecureSeededRng::new(17);
    let runs = 100_000;
    for _ in 0..runs {
        let released = mechanism.release_from_counts(&counts, &mut rng).unwrap();
        seen[index[&outcome_of(&grid, *released.value())]] += 1;
    }
    let expected: Vec<f64> = law.values().map(|p| p * runs as f64).collect();
    stats::chi_square_test(&seen, &expected, FALSE_ALARM_RATE)
}

#[test]
fn outcomes_follow_the_exact_law() {
    let law = outcome_law(&[1, 6, 0, 1, 0], &histogram_noise(1.0).unwrap(), 4);
    assert!((law.values().sum::<f64>() - 1.0).abs() < 1e-12);
    let mechanism = HistogramBounds::new(1.0, 0.5).unwrap();
    let test = chi_square_of_outcomes(&mechanism, &mechanism);
    assert!(test.passes(), "{test:?}");
}

/// The mechanism with noise for sensitivity 1 (scale 1/ε, the error §8.4 warns of).
fn sensitivity_one_mutant(epsilon: f64, beta: f64) -> HistogramBounds {
    HistogramBounds {
        noise: DiscreteLaplace::with_scale_at_least(1.0 / epsilon).unwrap(),
        ..HistogramBounds::new(epsilon, beta).unwrap()
    }
}

/// Mutation check: noise for sensitivity 1 fails the chi-square against the claimed law.
#[test]
fn chi_square_catches_noise_for_sensitivity_one() {
    let claimed = HistogramBounds::new(1.0, 0.5).unwrap();
    assert!(!chi_square_of_outcomes(&sensitivity_one_mutant(1.0, 0.5), &claimed).passes());
}

/// Worst log-ratio of the exact outcome law over random neighbouring histograms (one
/// record moved from one cell to another).
fn worst_log_ratio(noise: &DiscreteLaplace, threshold: i64, seed: u64) -> f64 {
    use rand::RngExt;
    let mut rng = InsecureSeededRng::new(seed);
    let mut worst = 0.0f64;
    for _ in 0..400 {
        let counts: Vec<u64> = (0..5).map(|_| rng.random_range(0..8)).collect();
        let from: Vec<usize> = (0..5).filter(|&j| counts[j] > 0).collect();
        if from.is_empty() {
            continue;
        }
        let a = from[rng.random_range(0..from.len())];
        let b = rng.random_range(0..5);
        let mut neighbour = counts.clone();
        neighbour[a] -= 1;
        neighbour[b] += 1;
        let (p, q) = (
            outcome_law(&counts, noise, threshold),
            outcome_law(&neighbour, noise, threshold),
        );
        for (x, y) in p.values().zip(q.values()) {
            worst = worst.max((x.ln() - y.ln()).abs());
        }
    }
    worst
}

#[test]
fn the_exact_law_is_epsilon_dp_on_random_neighbours() {
    let epsilon = 1.0;
    let honest = HistogramBounds::new(epsilon, 0.5).unwrap();
    let worst = worst_log_ratio(honest.noise(), honest.threshold(5), 3);
    assert!(worst <= epsilon * (1.0 + 1e-9), "{worst}");
    assert!(worst > 0.9 * epsilon, "{worst}");
    let mutant = sensitivity_one_mutant(epsilon, 0.5);
    let broken = worst_log_ratio(mutant.noise(), mutant.threshold(5), 3);
    assert!(broken > 1.5 * epsilon, "{broken}");
}

/// The extreme-value pair: D holds five records at 1.5; D′ replaces one by 1500. On the
/// small grid at ε = 1, β = ½ the threshold is 4, and the event "only the cell
/// (1024, 2048] passes" has probability 0.229·0.084·0.768 = 0.0148 on D and
/// 0.378·0.139·0.768 = 0.0402 on D′: a ratio of e^1, the pair's ε.
fn extreme_pair() -> (Vec<f64>, Vec<f64>) {
    let d = vec![1.5; 5];
    let mut d_prime = d.clone();
    d_prime[4] = 1500.0;
    (d, d_prime)
}

const AUDIT_RUNS: u64 = 200_000;

/// The audit: runs of `release` on D′ and D; two events fixed in advance, "only the far
/// cell passes" and "the upper end is the far cell's", each at half the false-alarm rate;
/// the larger lower bound.
fn audit(mut release: impl FnMut(&[f64], &mut InsecureSeededRng) -> Option<Bounds>) -> f64 {
    let (d, d_prime) = extreme_pair();
    let mut rng = InsecureSeededRng::new(77);
    let on_d_prime: Vec<Option<Bounds>> = (0..AUDIT_RUNS)
        .map(|_| release(&d_prime, &mut rng))
        .collect();
    let on_d: Vec<Option<Bounds>> = (0..AUDIT_RUNS).map(|_| release(&d, &mut rng)).collect();
    let only_far =
        |b: &Option<Bounds>| b.is_some_and(|b| b.lower() == 1024.0 && b.upper() == 2048.0);
    let upper_far = |b: &Option<Bounds>| b.is_some_and(|b| b.upper() == 2048.0);
    let events: [&Event; 2] = [&only_far, &upper_far];
    let mut best = 0.0f64;
    for (name, event) in ["only the far cell", "upper end far"].iter().zip(events) {
        let likely = on_d_prime.iter().filter(|b| event(b)).count() as u64;
        let unlikely = on_d.iter().filter(|b| event(b)).count() as u64;
        let bound = epsilon_lower_bound_at(likely, unlikely, AUDIT_RUNS, 0.0, ALPHA / 2.0);
        eprintln!(
            "histogram bounds audit, {name}: hits {likely} on D', {unlikely} on D, ε_LB = {bound:.3}"
        );
        best = best.max(bound);
    }
    best
}

#[test]
fn audit_on_an_extreme_value_pair_stays_below_epsilon_and_catches_mutants() {
    let epsilon = 1.0;
    let grid = small_grid();
    let mechanism = HistogramBounds::new(epsilon, 0.5).unwrap();
    assert_eq!(mechanism.threshold(grid.cells()), 4);
    let honest = audit(|data, rng| *mechanism.release(data, &grid, rng).unwrap().value());
    assert!(honest <= epsilon, "ε_LB {honest} > ε {epsilon}");
    assert!(honest >= 0.6 * epsilon, "the audit has power: {honest}");

    // Mutant 1: the exact minimum and maximum, snapped out to the cells that hold them.
    let exact = audit(|data, _| {
        let min = data.iter().copied().fold(f64::INFINITY, f64::min);
        let max = data.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Bounds::ordered(
            grid.cell_range(grid.cell(min)).0,
            grid.cell_range(grid.cell(max)).1,
        ))
    });
    assert!(exact > 5.0 * epsilon, "{exact}");

    // Mutant 2: noise for sensitivity 1 (Lap(1/ε) instead of Lap(2/ε)).
    let mutant = sensitivity_one_mutant(epsilon, 0.5);
    let halved = audit(|data, rng| *mutant.release(data, &grid, rng).unwrap().value());
    assert!(halved > epsilon, "{halved}");
}

/// On the extreme-value pair, D can release the far cell as its upper end too, and every
/// outcome keeps positive probability on both sides: the extreme record moves the law
/// (by at most e^ε), it does not decide the value.
#[test]
fn the_extreme_record_changes_the_law_not_the_value() {
    let (d, d_prime) = extreme_pair();
    let grid = small_grid();
    let mechanism = HistogramBounds::new(1.0, 0.5).unwrap();
    let law = |data: &[f64]| {
        let mut counts = GridCounts::new(grid.clone());
        counts.add_chunk(data).unwrap();
        outcome_law(counts.cells(), mechanism.noise(), 4)
    };
    for (x, y) in law(&d).values().zip(law(&d_prime).values()) {
        assert!(*x > 0.0 && *y > 0.0);
        assert!((x.ln() - y.ln()).abs() <= 1.0 + 1e-9);
    }
    let mut rng = InsecureSeededRng::new(8);
    let far = (0..20_000)
        .filter(|_| {
            mechanism
                .release(&d, &grid, &mut rng)
                .unwrap()
                .value()
                .is_some_and(|b| b.upper() == 2048.0)
        })
        .count();
    assert!(far > 0, "D never released the far cell");
}

fn normal_draws(n: usize, seed: u64) -> Vec<f64> {
    use rand_distr::{Distribution, Normal};
    let mut rng = InsecureSeededRng::new(seed);
    let normal = Normal::new(0.0, 1.0).unwrap();
    (0..n).map(|_| normal.sample(&mut rng)).collect()
}

/// 10⁴ standard normal draws with nothing known of their range: the histogram bounds are
/// the powers of two around ±2..4 (the cells (2, 4] hold about 230 records each, (4, 8] a
/// handful at most), covering all but ~0.005% of the mass.
#[test]
fn histogram_bounds_of_a_normal_sample_cover_it() {
    let data = normal_draws(10_000, 31);
    let grid = CandidateGrid::for_f64();
    let mechanism = HistogramBounds::new(1.0, 1e-6).unwrap();
    assert_eq!(mechanism.threshold(grid.cells()), 44);
    let mut rng = InsecureSeededRng::new(32);
    let mut counts = GridCounts::new(grid);
    counts.add_chunk(&data).unwrap();
    for _ in 0..10 {
        let released = mechanism.release_from_counts(&counts, &mut rng).unwrap();
        assert_eq!(released.mechanism(), FactMechanism::HistogramBounds);
        assert_eq!((released.epsilon(), released.delta()), (1.0, 0.0));
        let bounds = released.value().unwrap();
        assert_eq!((bounds.lower(), bounds.upper()), (-4.0, 4.0));
    }
}

/// Quantile bounds at p = 0.005 on a fine grid cover about 99% of the sample.
#[test]
fn quantile_bounds_of_a_normal_sample_cover_the_intended_mass() {
    let data = normal_draws(10_000, 33);
    let grid = CandidateGrid::new((-1000..=1000).map(|i| f64::from(i) * 0.01).collect()).unwrap();
    let mechanism = QuantileBounds::new(1.0, 0.005).unwrap();
    let mut rng = InsecureSeededRng::new(34);
    for _ in 0..10 {
        let released = mechanism.release(&data, &grid, &mut rng).unwrap();
        assert_eq!(released.mechanism(), FactMechanism::QuantileBounds);
        let b = released.value();
        let inside = data
            .iter()
            .filter(|&&x| b.lower() <= x && x <= b.upper())
            .count();
        let covered = inside as f64 / data.len() as f64;
        assert!((0.985..=0.995).contains(&covered), "{b:?}: {covered}");
    }
}

/// Three records cannot beat a threshold of 44: the release is "none", still charged.
#[test]
fn no_cell_above_the_threshold_releases_none() {
    let mechanism = HistogramBounds::new(1.0, 1e-6).unwrap();
    let mut rng = InsecureSeededRng::new(35);
    let released = mechanism
        .release(&[1.0, 2.0, 3.0], &CandidateGrid::for_f64(), &mut rng)
        .unwrap();
    assert_eq!(*released.value(), None);
    assert_eq!(released.epsilon(), 1.0);
}

#[test]
fn clipping_clamps_into_the_bounds() {
    let bounds = Bounds::ordered(4.0, -2.0);
    assert_eq!((bounds.lower(), bounds.upper()), (-2.0, 4.0));
    let mut values = [-10.0, 0.5, 7.0];
    bounds.clip_all(&mut values);
    assert_eq!(values, [-2.0, 0.5, 4.0]);
    assert!(bounds.clip(f64::NAN).is_nan());
}

#[test]
fn rejects_bad_parameters_and_data_by_name() {
    for bad in [0.0, -1.0, f64::NAN] {
        assert!(matches!(
            HistogramBounds::new(bad, 0.1),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            QuantileBounds::new(bad, 0.1),
            Err(NoiseError::InvalidEpsilon(_))
        ));
    }
    for bad in [0.0, 1.0, -0.5, f64::NAN] {
        assert!(matches!(
            HistogramBounds::new(1.0, bad),
            Err(NoiseError::InvalidProbability { .. })
        ));
    }
    for bad in [0.6, -0.1, f64::NAN] {
        assert!(matches!(
            QuantileBounds::new(1.0, bad),
            Err(NoiseError::InvalidProbability { .. })
        ));
    }
    let mut rng = InsecureSeededRng::new(1);
    let grid = small_grid();
    let histogram = HistogramBounds::new(1.0, 0.1).unwrap();
    let quantiles = QuantileBounds::new(1.0, 0.1).unwrap();
    assert_eq!(
        histogram.release(&[], &grid, &mut rng),
        Err(NoiseError::EmptyData)
    );
    assert_eq!(
        quantiles.release(&[], &grid, &mut rng),
        Err(NoiseError::EmptyData)
    );
    assert!(matches!(
        histogram.release(&[1.0, f64::NEG_INFINITY], &grid, &mut rng),
        Err(NoiseError::NonFiniteValue { index: 1, .. })
    ));
    assert!(matches!(
        quantiles.release(&[f64::NAN], &grid, &mut rng),
        Err(NoiseError::NonFiniteValue { index: 0, .. })
    ));
}
