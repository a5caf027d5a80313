//! Private prediction of real values (docs/src/reference/algorithms.md §7.7, §7.8): the
//! stable regressor's sensitivity on adversarial neighbouring pairs (exact recomputation),
//! audits of the Laplace answers with halved-sensitivity mutants, the private median's
//! exact law, the budget, and utility on synthetic data. Every expected ε and sensitivity is
//! computed from the spec's formulas, not read from the code under test.

use dp_erm::{ErmParams, Features, Loss, RegressionSet, TargetClipping, TargetScale, TrainingSet};
use rand::{Rng, RngExt};

use super::audit::{assert_caught, assert_passes, audit};
use super::{max_log_ratio, rng};
use crate::{
    PredictError, PredictionInterface, PrivatePredictor, RegressionEnsemble,
    RegressionMeanEnsemble, RegressionMedianEnsemble, StableRegressionParams,
};

/// Targets in [−10, 10]: the scaled target is `y/10`.
fn bounds() -> TargetScale {
    TargetScale::new(-10.0, 10.0).unwrap()
}

fn huber() -> Loss {
    Loss::huber_regression(0.5).unwrap()
}

/// A regression set of dense rows (clipped into the unit ball: rows drawn on the sphere may
/// round an ulp outside) and targets in the target's units.
fn regression_set(d: usize, rows: &[Vec<f64>], targets: &[f64]) -> RegressionSet {
    let values = rows.iter().flatten().copied().collect();
    let builder = TrainingSet::builder(d)
        .dense_rows(values)
        .clip_rows_to_unit_ball();
    RegressionSet::new(builder, targets, bounds(), TargetClipping::Refuse).unwrap()
}

/// A uniformly random point of the unit sphere in d dimensions.
fn on_sphere(r: &mut impl Rng, d: usize) -> Vec<f64> {
    loop {
        let x: Vec<f64> = (0..d).map(|_| r.random_range(-1.0..1.0)).collect();
        let norm = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        if norm > 0.1 && norm <= 1.0 {
            return x.iter().map(|v| v / norm).collect();
        }
    }
}

/// The canary pair: row 0 is `e₁` with target `canary_target`; the other rows lie along
/// `e₂` with random extreme targets (orthogonal: they leave the weight on `e₁` alone).
fn canary_set(n: usize, canary_target: f64) -> RegressionSet {
    let mut r = rng(41);
    let mut rows = vec![vec![1.0, 0.0]];
    let mut targets = vec![canary_target];
    for _ in 1..n {
        rows.push(vec![0.0, if r.random::<bool>() { 1.0 } else { -1.0 }]);
        targets.push(if r.random::<bool>() { 10.0 } else { -10.0 });
    }
    regression_set(2, &rows, &targets)
}

/// §7.7: `Δ = 2/(λn) + 2(γ + floor)/λ`, with γ the default tolerance raised to dp-erm's
/// rounding floor, before the dot product's rounding allowance.
fn spec_sensitivity(n: usize, d: usize, lambda: f64) -> f64 {
    let floor = dp_erm::tolerance_floor(n, d, huber(), lambda, None).total();
    let gamma = crate::DEFAULT_TOLERANCE.max(floor);
    2.0 / (lambda * n as f64) + 2.0 * (gamma + floor) / lambda
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[test]
fn stable_regression_sensitivity_is_the_spec_bound_up_to_the_dot_product_allowance() {
    for (n, d, lambda) in [(20, 3, 0.1), (1000, 5, 1e-3), (10_000_000, 2, 1e-5)] {
        let expected = spec_sensitivity(n, d, lambda);
        let sensitivity = StableRegressionParams::new(huber(), lambda, 1.0)
            .sensitivity(n, d)
            .unwrap();
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

/// Exact recomputation on neighbouring pairs: rows on the unit sphere, extreme targets,
/// one example replaced by another with the opposite extreme target (random pairs, the
/// replaced row reflected, and the canary pair). The largest move of a prediction at a
/// unit query, `‖w − w'‖`, stays within the spec's Δ, and the canary pair moves it by more
/// than Δ/2 — a halved sensitivity would fail here.
#[test]
fn stable_regression_prediction_moves_within_its_sensitivity_on_adversarial_pairs() {
    let (lambda, d, n) = (0.1, 3, 20);
    let params = StableRegressionParams::new(huber(), lambda, 1.0);
    let delta = params.sensitivity(n, d).unwrap();
    let mut r = rng(5);
    let mut largest: f64 = 0.0;
    for trial in 0..60 {
        let rows: Vec<Vec<f64>> = (0..n).map(|_| on_sphere(&mut r, d)).collect();
        let targets: Vec<f64> = (0..n)
            .map(|_| if r.random::<bool>() { 10.0 } else { -10.0 })
            .collect();
        let (mut rows2, mut targets2) = (rows.clone(), targets.clone());
        rows2[0] = if trial % 2 == 0 {
            rows[0].iter().map(|v| -v).collect()
        } else {
            on_sphere(&mut r, d)
        };
        targets2[0] = -targets[0];
        let w = params
            .fit(&regression_set(d, &rows, &targets), &mut rng(1))
            .unwrap();
        let w2 = params
            .fit(&regression_set(d, &rows2, &targets2), &mut rng(1))
            .unwrap();
        let moved = distance(w.secret_model().weights(), w2.secret_model().weights());
        assert!(moved <= delta, "trial {trial}: moved {moved} > Δ = {delta}");
        largest = largest.max(moved);
    }
    let canary_params = StableRegressionParams::new(huber(), lambda, 1.0);
    let first = canary_params
        .fit(&canary_set(50, 10.0), &mut rng(1))
        .unwrap();
    let second = canary_params
        .fit(&canary_set(50, -10.0), &mut rng(1))
        .unwrap();
    let canary_delta = canary_params.sensitivity(50, 2).unwrap();
    let moved = first.secret_scaled_prediction(&[1.0, 0.0]).unwrap()
        - second.secret_scaled_prediction(&[1.0, 0.0]).unwrap();
    assert!(moved <= canary_delta, "{moved} > {canary_delta}");
    assert!(
        moved > 0.5 * canary_delta,
        "{moved} ≤ Δ/2 = {}",
        0.5 * canary_delta
    );
    assert!(largest > 0.0);
}

/// The canary's residual stays in the loss's linear part (|1 − 0.2| > h = 0.5), so its
/// weight on `e₁` is `t/(λn) = ±0.2` and flipping its extreme target moves the scaled
/// prediction at `e₁` by `0.4 = 2/(λn)`: the pair's ε is the whole ε. Scored by the answer
/// in the target's units (clamping and unscaling keep every tail event above the centres).
#[test]
fn stable_regression_audit_reaches_its_pair_epsilon_and_halved_sensitivity_is_caught() {
    let epsilon = 1.0;
    let params = StableRegressionParams::new(huber(), 0.1, epsilon);
    let first = params.fit(&canary_set(50, 10.0), &mut rng(1)).unwrap();
    let second = params.fit(&canary_set(50, -10.0), &mut rng(1)).unwrap();
    let moved = first.secret_scaled_prediction(&[1.0, 0.0]).unwrap()
        - second.secret_scaled_prediction(&[1.0, 0.0]).unwrap();
    assert!((moved - 0.4).abs() < 1e-6, "moved by {moved}");
    // ε_pair = moved/scale with scale ≥ Δ/ε and Δ ≥ 2/(λn) = 0.4 (§7.7): at most ε.
    let pair = moved / first.laplace().scale();
    assert!(pair <= epsilon && pair > 0.99 * epsilon, "{pair}");
    assert_passes(&audit(&first, &second, |a| *a, 51), epsilon, pair);
    let (m1, m2) = (
        first.with_sensitivity_factor(0.5),
        second.with_sensitivity_factor(0.5),
    );
    assert_caught(&audit(&m1, &m2, |a| *a, 53), epsilon, pair);
}

/// k = 10 parts of one row each, every row `e₁`: nine targets at +10, the canary at +10 or
/// −10. Whatever the partition, one regressor's clamped prediction moves from about +1 to
/// about −1, its vote `(s + 1)/2` by about 1: the whole sensitivity of the vote sum (§7.8).
#[test]
fn regression_mean_audit_reaches_its_pair_epsilon_and_halved_sensitivity_is_caught() {
    let epsilon = 1.0;
    let ensemble = |canary: f64| {
        let mut targets = vec![10.0; 10];
        targets[0] = canary;
        let data = regression_set(2, &vec![vec![1.0, 0.0]; 10], &targets);
        let params = ErmParams::non_private(huber(), 1e-3);
        let ensemble = RegressionEnsemble::train(&params, &data, 10, &mut rng(2)).unwrap();
        RegressionMeanEnsemble::new(ensemble, epsilon).unwrap()
    };
    let (first, second) = (ensemble(10.0), ensemble(-10.0));
    let sum = |e: &RegressionMeanEnsemble| -> f64 {
        let s = e.ensemble().secret_scaled_predictions(&[1.0, 0.0]).unwrap();
        s.iter().map(|v| (v + 1.0) / 2.0).sum()
    };
    let moved = sum(&first) - sum(&second);
    assert!(moved > 0.99 && moved <= 1.0, "vote sum moved by {moved}");
    // Sum units: the snapping Laplace at sensitivity 1 has scale (1 + 2^-20)/ε.
    let pair = moved / (1.0 + 2f64.powi(-20)) * epsilon;
    assert_passes(&audit(&first, &second, |a| *a, 61), epsilon, pair);
    let (m1, m2) = (
        first.with_halved_sensitivity(),
        second.with_halved_sensitivity(),
    );
    assert_caught(&audit(&m1, &m2, |a| *a, 63), epsilon, pair);
}

/// The private median's exact law on neighbouring prediction vectors (one of k replaced,
/// extreme moves included) changes by at most `e^ε` at every candidate, and by most of that
/// somewhere; the mechanism at 2ε (a utility sensitivity halved) exceeds `e^ε`.
#[test]
fn regression_median_law_is_epsilon_dp_exactly_and_a_doubled_epsilon_is_caught() {
    let epsilon = 1.0;
    let data = regression_set(2, &vec![vec![1.0, 0.0]; 11], &[0.0; 11]);
    let params = ErmParams::non_private(huber(), 1e-3);
    let ensemble = RegressionEnsemble::train(&params, &data, 11, &mut rng(3)).unwrap();
    let median = RegressionMedianEnsemble::new(ensemble.clone(), epsilon).unwrap();
    let broken = RegressionMedianEnsemble::new(ensemble, 2.0 * epsilon).unwrap();
    let mut r = rng(4);
    let (mut worst, mut worst_broken): (f64, f64) = (0.0, 0.0);
    for trial in 0..300 {
        // Clustered (few distinct values, ties) or spread predictions.
        let spread = if trial % 2 == 0 { 0.02 } else { 1.0 };
        let predictions: Vec<f64> = (0..11).map(|_| r.random_range(-spread..=spread)).collect();
        let mut neighbour = predictions.clone();
        let i = r.random_range(0..11);
        neighbour[i] = match trial % 3 {
            0 => 1.0,
            1 => -1.0,
            _ => r.random_range(-1.0..=1.0),
        };
        let law = |m: &RegressionMedianEnsemble, p: &[f64]| m.law_of(p).unwrap();
        let ratio = max_log_ratio(&law(&median, &predictions), &law(&median, &neighbour));
        assert!(ratio <= epsilon * (1.0 + 1e-9), "trial {trial}: {ratio}");
        worst = worst.max(ratio);
        worst_broken = worst_broken.max(max_log_ratio(
            &law(&broken, &predictions),
            &law(&broken, &neighbour),
        ));
    }
    // The change moves utilities one way on one side of it only, so the normalizer does not
    // move against the candidate fully: the ratio reaches about e^{0.82ε}, and the mutant's
    // about e^{1.64ε}.
    assert!(worst > 0.75 * epsilon, "no pair near ε: {worst}");
    assert!(
        worst_broken > 1.25 * epsilon,
        "mutant not caught: {worst_broken}"
    );
}

/// When the parts agree to within a candidate's width, their common value is the answer
/// with probability near 1 (the rank utility counts ties for a candidate, not against it).
#[test]
fn regression_median_answers_the_common_value_of_agreeing_parts() {
    let data = regression_set(2, &vec![vec![1.0, 0.0]; 40], &[2.5; 40]);
    let params = ErmParams::non_private(huber(), 1e-3);
    let ensemble = RegressionEnsemble::train(&params, &data, 40, &mut rng(3)).unwrap();
    let median = RegressionMedianEnsemble::new(ensemble, 1.0).unwrap();
    let law = median.law_of(&[0.25001; 40]).unwrap();
    // 0.25001 snaps to candidate 640 (−1 + 640/512 = 0.25).
    assert!(law[640] > 0.999, "{}", law[640]);
}

/// End to end: two ensembles trained on neighbouring datasets with the same generator (so
/// the same partition) answer with laws within `e^ε` of each other at every candidate.
#[test]
fn regression_median_is_epsilon_dp_end_to_end_on_a_neighbouring_pair() {
    let epsilon = 0.5;
    let mut r = rng(6);
    let rows: Vec<Vec<f64>> = (0..40).map(|_| on_sphere(&mut r, 2)).collect();
    let targets: Vec<f64> = (0..40).map(|_| r.random_range(-10.0..=10.0)).collect();
    let (mut rows2, mut targets2) = (rows.clone(), targets.clone());
    rows2[7] = vec![1.0, 0.0];
    targets2[7] = 10.0;
    let params = ErmParams::non_private(huber(), 0.01);
    let law = |rows: &[Vec<f64>], targets: &[f64]| {
        let data = regression_set(2, rows, targets);
        let ensemble = RegressionEnsemble::train(&params, &data, 8, &mut rng(7)).unwrap();
        let median = RegressionMedianEnsemble::new(ensemble, epsilon).unwrap();
        median.secret_law(&[0.6, 0.8]).unwrap()
    };
    let ratio = max_log_ratio(&law(&rows, &targets), &law(&rows2, &targets2));
    assert!(ratio <= epsilon * (1.0 + 1e-9), "{ratio}");
}

#[test]
fn regression_answers_are_charged_and_refused_whole_beyond_the_budget() {
    let mut r = rng(8);
    let rows: Vec<Vec<f64>> = (0..30).map(|_| on_sphere(&mut r, 2)).collect();
    let targets = vec![1.0; 30];
    let data = regression_set(2, &rows, &targets);
    let stable = StableRegressionParams::new(huber(), 0.1, 0.5)
        .fit(&data, &mut rng(1))
        .unwrap();
    let mut interface = PredictionInterface::new(stable, 1.5).unwrap();
    let batch = Features::dense(2, vec![0.5; 8]).unwrap();
    // Four answers at ε = 0.5 cost 2 > 1.5: refused whole, nothing charged.
    let refused = interface.answer_rows(&batch, &mut r);
    assert!(matches!(
        refused,
        Err(PredictError::BudgetExceeded { queries: 4, .. })
    ));
    assert_eq!(interface.queries_left(), 3);
    for _ in 0..3 {
        let answer = interface.answer(&[0.6, 0.0], &mut r).unwrap();
        assert!((-10.0..=10.0).contains(&answer));
    }
    assert!(matches!(
        interface.answer(&[0.6, 0.0], &mut r),
        Err(PredictError::BudgetExceeded { queries: 1, .. })
    ));
    assert_eq!(interface.budget().spent(), 1.5);
}

#[test]
fn regression_ensemble_refuses_before_training() {
    let data = regression_set(2, &vec![vec![0.5, 0.0]; 5], &[1.0; 5]);
    let params = ErmParams::non_private(huber(), 0.1);
    let too_many = RegressionEnsemble::train(&params, &data, 6, &mut rng(1));
    assert!(matches!(
        too_many,
        Err(PredictError::TooFewRows { rows: 5, parts: 6 })
    ));
    let classifier = ErmParams::non_private(Loss::Logistic, 0.1);
    let wrong_loss = RegressionEnsemble::train(&classifier, &data, 2, &mut rng(1));
    assert!(matches!(
        wrong_loss,
        Err(PredictError::TrainerRefuses { .. })
    ));
    let wrong_stable =
        StableRegressionParams::new(Loss::Logistic, 0.1, 1.0).fit(&data, &mut rng(1));
    assert!(wrong_stable.is_err());
}

/// Synthetic linear data, n = 20,000, d = 5: `y = 10·(⟨w*, x⟩ + noise)` with `‖w*‖ = 1`,
/// rows uniform in a cube of half-width 1/√d, noise uniform in ±0.1, targets within the
/// public bounds [−10, 10]. At ε = 1 per answer, each mechanism's mean absolute error
/// over 200 queries is below 2.5% of the range (20) and a quarter of the constant answer's.
/// Stable ERM's λ = 0.01 balances its bias (about `λh/σ²` of the signal, σ² = 1/(3d) the
/// rows' variance per coordinate) against its noise `2/(λnε)` for these data.
#[test]
fn regression_answers_are_close_to_the_truth_at_epsilon_one() {
    let (n, d, epsilon) = (20_000, 5, 1.0);
    let mut r = rng(9);
    let truth = on_sphere(&mut r, d);
    let side = 1.0 / (d as f64).sqrt();
    let draw_row = |r: &mut dp_noise::InsecureSeededRng| -> Vec<f64> {
        (0..d).map(|_| r.random_range(-side..side)).collect()
    };
    let signal = |x: &[f64]| truth.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
    let rows: Vec<Vec<f64>> = (0..n).map(|_| draw_row(&mut r)).collect();
    let targets: Vec<f64> = rows
        .iter()
        .map(|x| (10.0 * (signal(x) + r.random_range(-0.1..0.1))).clamp(-10.0, 10.0))
        .collect();
    let data = regression_set(d, &rows, &targets);
    let queries: Vec<Vec<f64>> = (0..200).map(|_| draw_row(&mut r)).collect();
    let mean_error = |answer: &mut dyn FnMut(&[f64]) -> f64| -> f64 {
        queries
            .iter()
            .map(|x| (answer(x) - 10.0 * signal(x)).abs())
            .sum::<f64>()
            / queries.len() as f64
    };
    let constant = mean_error(&mut |_| 0.0);

    let stable = StableRegressionParams::new(huber(), 0.01, epsilon)
        .fit(&data, &mut rng(1))
        .unwrap();
    let stable_error = mean_error(&mut |x| stable.answer_unchecked(x, &mut r).unwrap());

    let params = ErmParams::non_private(huber(), 1e-3);
    let ensemble = RegressionEnsemble::train(&params, &data, 100, &mut rng(2)).unwrap();
    let mean = RegressionMeanEnsemble::new(ensemble.clone(), epsilon).unwrap();
    let median = RegressionMedianEnsemble::new(ensemble, epsilon).unwrap();
    let mean_error_ = mean_error(&mut |x| mean.answer_unchecked(x, &mut r).unwrap());
    let median_error = mean_error(&mut |x| median.answer_unchecked(x, &mut r).unwrap());

    eprintln!(
        "constant {constant:.3}, stable {stable_error:.3}, mean {mean_error_:.3}, median {median_error:.3}"
    );
    for (name, error) in [
        ("stable", stable_error),
        ("mean", mean_error_),
        ("median", median_error),
    ] {
        assert!(error < 0.5, "{name}: mean absolute error {error}");
        assert!(
            error < 0.25 * constant,
            "{name}: {error} against {constant}"
        );
    }
}

#[test]
fn regression_predictors_print_no_data() {
    let data = regression_set(2, &vec![vec![0.5, 0.25]; 4], &[3.25, 3.25, 3.25, 3.25]);
    let stable = StableRegressionParams::new(huber(), 0.1, 1.0)
        .fit(&data, &mut rng(1))
        .unwrap();
    let params = ErmParams::non_private(huber(), 0.1);
    let ensemble = RegressionEnsemble::train(&params, &data, 2, &mut rng(1)).unwrap();
    let printed = format!(
        "{stable:?} {ensemble:?} {:?}",
        RegressionMedianEnsemble::new(ensemble.clone(), 1.0).unwrap()
    );
    let weight = stable.secret_model().weights()[0];
    assert!(!printed.contains("0.325"), "{printed}");
    assert!(!printed.contains(&format!("{weight}")), "{printed}");
}

/// The clipped mean serves from a pool drawn ahead: the pooled answer from the same
/// stream equals the direct one.
#[test]
fn regression_mean_serves_from_its_noise_pool() {
    let data = regression_set(2, &vec![vec![0.5, 0.25]; 20], &[4.0; 20]);
    let params = ErmParams::non_private(huber(), 0.1);
    let ensemble = RegressionEnsemble::train(&params, &data, 4, &mut rng(1)).unwrap();
    let mean = RegressionMeanEnsemble::new(ensemble, 1.0).unwrap();
    let source = mean.noise_source().unwrap();
    let mut pool = source.draw(1, &mut rng(10)).unwrap();
    let pooled = mean
        .answer_with(&[0.5, 0.25], pool.take().unwrap())
        .unwrap();
    let direct = mean.answer_unchecked(&[0.5, 0.25], &mut rng(10)).unwrap();
    assert_eq!(pooled, direct);
    let stable = StableRegressionParams::new(huber(), 0.1, 1.0)
        .fit(&data, &mut rng(1))
        .unwrap();
    let mut pool = stable
        .noise_source()
        .unwrap()
        .draw(1, &mut rng(11))
        .unwrap();
    let pooled = stable
        .answer_with(&[0.5, 0.25], pool.take().unwrap())
        .unwrap();
    let direct = stable.answer_unchecked(&[0.5, 0.25], &mut rng(11)).unwrap();
    assert_eq!(pooled, direct);
}
