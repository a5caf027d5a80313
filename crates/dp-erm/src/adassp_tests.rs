//! AdaSSP: the replace-one sensitivities against exact statistics on adversarial pairs, the
//! calibration against the spec (recomputed here), an audit of the three releases with its
//! mutants, refusals, utility against non-private ridge, and the model file.

use dp_noise::InsecureSeededRng;
use rand::RngExt;
use statrs::distribution::{ContinuousCDF, Normal};

use super::*;
use crate::audit::{ALPHA, epsilon_lower_bound_at};
use crate::{StoredModel, TargetClipping, TargetScale, TrainingSet};

fn set(rows: Vec<f64>, d: usize, targets: &[f64], scale: TargetScale) -> RegressionSet {
    RegressionSet::new(
        TrainingSet::builder(d).dense_rows(rows),
        targets,
        scale,
        TargetClipping::Refuse,
    )
    .unwrap()
}

fn unit_scale() -> TargetScale {
    TargetScale::new(-1.0, 1.0).unwrap()
}

/// The exact (λ_min, upper triangle of XᵀX, Xᵀt) of a set, as the mechanism releases them.
fn statistics(data: &RegressionSet) -> (f64, Vec<f64>, Vec<f64>) {
    let (gram, moment) = exact_statistics(data, SspMutation::Honest);
    let d = gram.ncols();
    let upper = (0..d)
        .flat_map(|j| (0..=j).map(move |i| (i, j)))
        .map(|(i, j)| gram[(j, i)])
        .collect();
    (smallest_eigenvalue(&gram).unwrap(), upper, moment)
}

fn norm_of_difference(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

fn sphere_row(d: usize, rng: &mut InsecureSeededRng) -> Vec<f64> {
    let row: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
    let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
    row.iter().map(|v| v / norm * (1.0 - 1e-12)).collect()
}

fn sign(rng: &mut InsecureSeededRng) -> f64 {
    if rng.random_range(0.0..1.0) < 0.5 {
        1.0
    } else {
        -1.0
    }
}

/// algorithms.md §10.1: replacing one row moves λ_min(XᵀX) by at most 1, XᵀX's upper
/// triangle by at most √2 and Xᵀt by at most 2 — checked on random pairs with rows on the
/// unit sphere and extreme targets ±1, and each bound attained by a pair built for it, so a
/// halved sensitivity would fail here.
#[test]
fn each_release_moves_at_most_its_sensitivity_and_each_bound_is_attained() {
    let mut rng = InsecureSeededRng::new(7);
    let (n, d) = (12, 3);
    let mut largest = [0.0f64; 3];
    for _ in 0..300 {
        let mut rows = Vec::new();
        let mut targets = Vec::new();
        for _ in 0..n {
            rows.extend(sphere_row(d, &mut rng));
            targets.push(sign(&mut rng));
        }
        let first = set(rows.clone(), d, &targets, unit_scale());
        rows.splice((n - 1) * d.., sphere_row(d, &mut rng));
        *targets.last_mut().unwrap() = sign(&mut rng);
        let second = set(rows, d, &targets, unit_scale());
        let (l1, g1, m1) = statistics(&first);
        let (l2, g2, m2) = statistics(&second);
        let moved = [
            (l1 - l2).abs(),
            norm_of_difference(&g1, &g2),
            norm_of_difference(&m1, &m2),
        ];
        for (largest, moved) in largest.iter_mut().zip(moved) {
            *largest = largest.max(moved);
        }
    }
    let bounds = [
        ADASSP_EIGENVALUE_SENSITIVITY,
        ADASSP_GRAM_SENSITIVITY,
        ADASSP_MOMENT_SENSITIVITY,
    ];
    for (largest, bound) in largest.iter().zip(bounds) {
        assert!(*largest <= bound + 1e-9, "{largest} > {bound}");
    }
    // Attained: λ_min by e₁ against e₂ beside copies of e₂; XᵀX by the same pair; Xᵀt by
    // x against −x with the same target.
    let shared = [0.0, 1.0, 0.0, 1.0];
    let with = |canary: [f64; 2], t: f64| {
        let rows = [&shared[..], &canary[..]].concat();
        statistics(&set(rows, 2, &[1.0, -1.0, t], unit_scale()))
    };
    let (l1, g1, _) = with([1.0, 0.0], 1.0);
    let (l2, g2, _) = with([0.0, 1.0], 1.0);
    assert!(((l1 - l2).abs() - 1.0).abs() < 1e-12);
    assert!((norm_of_difference(&g1, &g2) - 2f64.sqrt()).abs() < 1e-12);
    let on_sphere = 1.0 - 1e-12;
    let (_, _, m1) = with([0.6 * on_sphere, 0.8 * on_sphere], 1.0);
    let (_, _, m2) = with([-0.6 * on_sphere, -0.8 * on_sphere], 1.0);
    assert!((norm_of_difference(&m1, &m2) - 2.0).abs() < 1e-9);
}

/// The CKS20 ε of ρ-zCDP at δ, minimized over a fine grid of orders: the spec's
/// conversion, computed here rather than read from dp-noise.
fn spec_epsilon(rho: f64, delta: f64) -> f64 {
    // α = 1 + e^u for u from −9 to 7 in steps of 10⁻³.
    (0..16_000)
        .map(|k| 1.0 + (-9.0 + k as f64 * 1e-3).exp())
        .map(|a: f64| {
            a * rho + ((1.0 / delta).ln() + (a - 1.0) * (1.0 - 1.0 / a).ln() - a.ln()) / (a - 1.0)
        })
        .fold(f64::INFINITY, f64::min)
}

/// The largest ρ whose conversion is within ε at δ, by bisection.
fn spec_rho(epsilon: f64, delta: f64) -> f64 {
    let (mut lo, mut hi) = (0.0, epsilon);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if spec_epsilon(mid, delta) <= epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// σ of each release from the spec: a third of ρ each, σ = Δ/√(2ρ/3).
fn spec_sigmas(epsilon: f64, delta: f64) -> [f64; 3] {
    let share = spec_rho(epsilon, delta) / 3.0;
    [1.0, 2f64.sqrt(), 2.0].map(|sensitivity| sensitivity / (2.0 * share).sqrt())
}

#[test]
fn the_calibration_is_the_specs_and_certifies_the_asked_epsilon() {
    for (epsilon, delta, d) in [(1.0, 1e-5, 3), (0.3, 1e-6, 10), (8.0, 1e-5, 2)] {
        let calibration = AdaSsp::new(epsilon, delta).unwrap().calibration(d).unwrap();
        let reported = [
            calibration.sigma_eigenvalue,
            calibration.sigma_gram,
            calibration.sigma_moment,
        ];
        for (reported, spec) in reported.iter().zip(spec_sigmas(epsilon, delta)) {
            // Never less noise than the spec; at most the snapping's and the α grid's
            // rounding more.
            assert!(
                *reported >= spec * (1.0 - 1e-6) && *reported <= spec * 1.001,
                "{reported} vs {spec} at ε {epsilon}"
            );
        }
        assert!(calibration.epsilon <= epsilon, "{calibration:?}");
        assert!(calibration.epsilon > 0.999 * epsilon, "{calibration:?}");
    }
}

fn phi(x: f64) -> f64 {
    Normal::standard().cdf(x)
}

/// The ε at `delta` of a Gaussian shift of `mu` standard deviations (Balle & Wang 2018,
/// Theorem 8), by bisection.
fn gaussian_pair_epsilon(mu: f64, delta: f64) -> f64 {
    let delta_at = |e: f64| phi(mu / 2.0 - e / mu) - e.exp() * phi(-mu / 2.0 - e / mu);
    let (mut lo, mut hi) = (0.0, 50.0);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if delta_at(mid) > delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

const AUDIT_EPSILON: f64 = 8.0;
const AUDIT_DELTA: f64 = 1e-5;
/// The δ at which the audit reads its bound: large enough that 4·10⁴ runs resolve it.
const READ_DELTA: f64 = 1e-2;
const AUDIT_RUNS: usize = 40_000;

/// The audit's pair (d = 2, targets in [0, 100]): nine copies of e₂ shared, and the canary
/// e₁ with the largest target against e₂ with the smallest. λ_min moves by 1, XᵀX by
/// diag(1, −1) (√2) and Xᵀt by (1, 1) (√2), so the pair's releases are a Gaussian shift of
/// `μ² = 2ρ/3 · (1 + 1 + 1/2)` standard deviations.
fn audit_pair() -> [RegressionSet; 2] {
    let scale = TargetScale::new(0.0, 100.0).unwrap();
    let shared_rows: Vec<f64> = [0.0, 1.0].repeat(9);
    let shared_targets: Vec<f64> = (0..9)
        .map(|i| if i % 2 == 0 { 80.0 } else { 20.0 })
        .collect();
    [([1.0, 0.0], 100.0), ([0.0, 1.0], 0.0)].map(|(canary, target)| {
        let rows = [&shared_rows[..], &canary[..]].concat();
        let targets = [&shared_targets[..], &[target]].concat();
        set(rows, 2, &targets, scale)
    })
}

/// The likelihood-ratio score of one release against the pair: the released statistics
/// weighted by their exact difference over the spec's variance (the optimal test of a
/// Gaussian shift; a wrong weight costs power, never validity).
fn audit(mutation: SspMutation, seed: u64) -> (dp_audit::LowerBound, f64) {
    let pair = audit_pair();
    let [s1, s2] = [&pair[0], &pair[1]].map(statistics);
    let [sl, sg, sm] = spec_sigmas(AUDIT_EPSILON, AUDIT_DELTA);
    let weights: Vec<f64> = [(s1.0 - s2.0) / (sl * sl)]
        .into_iter()
        .chain(s1.1.iter().zip(&s2.1).map(|(a, b)| (a - b) / (sg * sg)))
        .chain(s1.2.iter().zip(&s2.2).map(|(a, b)| (a - b) / (sm * sm)))
        .collect();
    let mu = weights
        .iter()
        .zip([sl, sg, sg, sg, sm, sm])
        .map(|(w, s)| w * w * s * s)
        .sum::<f64>()
        .sqrt();
    let mechanism = AdaSsp::new(AUDIT_EPSILON, AUDIT_DELTA).unwrap();
    let noise = mechanism.noise(2, mutation).unwrap();
    let scores: Vec<Vec<f64>> = pair
        .iter()
        .enumerate()
        .map(|(i, data)| {
            dp_audit::run_scores(AUDIT_RUNS, 10 * seed + i as u64, |rng| {
                let r = release(data, &noise, rng, mutation).unwrap();
                let values = [r.eigenvalue]
                    .into_iter()
                    .chain(r.gram_upper)
                    .chain(r.moment);
                values.zip(&weights).map(|(v, w)| v * w).sum()
            })
            .unwrap()
        })
        .collect();
    dp_audit::require_power(AUDIT_RUNS, 1.0, ALPHA).unwrap();
    let bound = dp_audit::epsilon_lower_bound(&scores[0], &scores[1], ALPHA).unwrap();
    (bound, mu)
}

/// The honest releases stay within the pair's exact Gaussian curve (from the spec's σ, and
/// itself within the claim); the sensitivity halved and the target bound dropped (Xᵀt of
/// targets in their own units, up to 100) both exceed it.
#[test]
fn the_audit_of_the_releases_stays_within_the_pair_and_catches_both_mutants() {
    let (honest, mu) = audit(SspMutation::Honest, 1);
    assert!((mu * mu - 5.0 / 3.0 * spec_rho(AUDIT_EPSILON, AUDIT_DELTA)).abs() < 1e-9);
    assert!(gaussian_pair_epsilon(mu, AUDIT_DELTA) <= AUDIT_EPSILON);
    let pair = gaussian_pair_epsilon(mu, READ_DELTA);
    let read = |bound: &dp_audit::LowerBound| epsilon_lower_bound_at(bound, READ_DELTA);
    let (halved, _) = audit(SspMutation::SensitivityScale(0.5), 2);
    let (raw, _) = audit(SspMutation::RawTargets, 3);
    eprintln!(
        "AdaSSP audit: μ {mu:.3}, pair ε({READ_DELTA}) {pair:.3}; ε_LB honest {:.3}, \
         halved {:.3}, raw targets {:.3}",
        read(&honest),
        read(&halved),
        read(&raw)
    );
    assert!(read(&honest) <= pair, "{}", read(&honest));
    assert!(read(&honest) >= 0.5 * pair, "no power: {}", read(&honest));
    assert!(read(&halved) > pair, "halved sensitivity not caught");
    assert!(read(&raw) > pair, "raw targets not caught");
}

#[test]
fn bad_parameters_and_sizes_are_refused_by_name_before_any_work() {
    let delta_zero = AdaSsp::new(1.0, 0.0).unwrap_err().to_string();
    assert!(
        delta_zero.contains("delta") && delta_zero.contains("objective"),
        "{delta_zero}"
    );
    for (epsilon, delta, what) in [
        (0.0, 1e-5, "epsilon"),
        (f64::NAN, 1e-5, "epsilon"),
        (2000.0, 1e-5, "epsilon"),
        (1.0, 0.5, "delta"),
        (1.0, -1e-5, "delta"),
        (1.0, f64::INFINITY, "delta"),
    ] {
        let error = AdaSsp::new(epsilon, delta).unwrap_err().to_string();
        assert!(error.contains(what), "{error}");
    }
    let mechanism = AdaSsp::new(1.0, 1e-5).unwrap();
    assert!(mechanism.extra_ridge(-1.0).is_err());
    assert!(mechanism.extra_ridge(f64::NAN).is_err());
    let too_wide = mechanism.calibration(MAX_ADASSP_FEATURES + 1).unwrap_err();
    assert!(too_wide.to_string().contains("AdaSSP"), "{too_wide}");
    // Empty data cannot even be built.
    let empty = RegressionSet::new(
        TrainingSet::builder(2).dense_rows(vec![]),
        &[],
        unit_scale(),
        TargetClipping::Refuse,
    );
    assert!(matches!(empty, Err(ErmError::EmptyData)));
    // Nothing data-dependent in Debug.
    let shown = format!("{mechanism:?} {:?}", mechanism.calibration(2).unwrap());
    assert!(!shown.contains("0.123456"), "{shown}");
}

/// Synthetic data: rows uniform in the unit ball's cube corner, a linear truth plus noise,
/// targets within [−1, 1].
fn synthetic(n: usize, d: usize, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = InsecureSeededRng::new(seed);
    let truth: Vec<f64> = (0..d)
        .map(|j| if j % 2 == 0 { 0.8 } else { -0.5 })
        .collect();
    let mut rows = Vec::with_capacity(n * d);
    let mut targets = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d)
            .map(|_| rng.random_range(-1.0..1.0) / (d as f64).sqrt())
            .collect();
        let y: f64 = row.iter().zip(&truth).map(|(x, w)| x * w).sum::<f64>()
            + 0.1 * rng.random_range(-1.0..1.0);
        rows.extend(row);
        targets.push(y.clamp(-1.0, 1.0));
    }
    (rows, targets)
}

fn mean_square_error(weights: &[f64], rows: &[f64], targets: &[f64]) -> f64 {
    let d = weights.len();
    rows.chunks(d)
        .zip(targets)
        .map(|(x, y)| {
            let p: f64 = x.iter().zip(weights).map(|(a, b)| a * b).sum();
            (p - y) * (p - y)
        })
        .sum::<f64>()
        / targets.len() as f64
}

/// n = 20,000, d = 5 at (ε, δ) = (1, 10⁻⁵): the fit's mean squared error is within 10 % of
/// non-private ridge's (λ = 1) on fresh data from the same law, and its weights near them.
#[test]
fn at_twenty_thousand_rows_the_fit_is_close_to_non_private_ridge() {
    let d = 5;
    let (rows, targets) = synthetic(20_000, d, 1);
    let data = set(rows.clone(), d, &targets, unit_scale());
    let (gram, moment) = exact_statistics(&data, SspMutation::Honest);
    let exact = NoisyStatistics {
        eigenvalue: 0.0,
        gram_upper: (0..d)
            .flat_map(|j| (0..=j).map(move |i| (i, j)))
            .map(|(i, j)| gram[(j, i)])
            .collect(),
        moment,
    };
    let no_noise = AdaSspCalibration {
        rho: 0.0,
        epsilon: 0.0,
        sigma_eigenvalue: 0.0,
        sigma_gram: 0.0,
        sigma_moment: 0.0,
    };
    let (ridge_weights, _) = ridge(&exact, &no_noise, 1.0).unwrap();
    let (test_rows, test_targets) = synthetic(20_000, d, 2);
    let baseline = mean_square_error(&ridge_weights, &test_rows, &test_targets);
    let mut rng = InsecureSeededRng::new(3);
    for _ in 0..5 {
        let (model, calibration) = AdaSsp::new(1.0, 1e-5)
            .unwrap()
            .fit_regression(&data, &mut rng)
            .unwrap();
        let private = mean_square_error(model.weights(), &test_rows, &test_targets);
        eprintln!(
            "AdaSSP n=20000: MSE {private:.5} vs ridge {baseline:.5}; σ_gram {:.2}",
            calibration.sigma_gram
        );
        assert!(private <= 1.1 * baseline, "{private} vs {baseline}");
        assert!(norm_of_difference(model.weights(), &ridge_weights) < 0.1);
    }
}

#[test]
fn the_model_records_adassp_and_round_trips_through_the_regressors_container() {
    let (rows, targets) = synthetic(500, 3, 4);
    let targets: Vec<f64> = targets.iter().map(|t| 10.0 + 5.0 * t).collect();
    let data = set(rows, 3, &targets, TargetScale::new(5.0, 15.0).unwrap());
    let (model, calibration) = AdaSsp::new(2.0, 1e-6)
        .unwrap()
        .extra_ridge(3.0)
        .unwrap()
        .fit_regression(&data, &mut InsecureSeededRng::new(5))
        .unwrap();
    let meta = model.metadata();
    assert_eq!(
        meta.mechanism,
        Mechanism::AdaSsp {
            epsilon: 2.0,
            delta: 1e-6
        }
    );
    assert!(calibration.epsilon <= 2.0);
    assert_eq!(model.replace_one_guarantee(), Some((2.0, 1e-6)));
    // The extra ridge is in the recorded Λ = λ/(2n).
    assert!(meta.regularization >= 3.0 / (2.0 * 500.0));
    assert!(meta.loss.is_regression());
    let bytes = model.to_bytes().unwrap();
    let back = RegressionModel::from_bytes(&bytes).unwrap();
    assert_eq!(back, model);
    assert!(crate::LinearModel::from_bytes(&bytes).is_err());
    let p = model.predict(&[0.1, 0.2, 0.3]).unwrap();
    assert!((5.0..=15.0).contains(&p));
    // A classifier's file claiming AdaSSP is refused.
    let json = serde_json::to_string(&model).unwrap();
    let classifier = json.replace(
        r#""loss":{"HuberRegression":{"threshold":2.0}}"#,
        r#""loss":"Logistic""#,
    );
    assert_ne!(classifier, json);
    let error = serde_json::from_str::<crate::LinearModel>(
        &classifier.replace(r#","target":{"lower":5.0,"upper":15.0}"#, ""),
    )
    .unwrap_err();
    assert!(error.to_string().contains("AdaSSP"), "{error}");
}
