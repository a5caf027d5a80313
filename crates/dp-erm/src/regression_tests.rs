//! Regression: the data contract, the sensitivity against exact minimizers on adversarial
//! neighbouring pairs, an empirical audit with its mutation check, the model file.

use dp_audit::{Verdict, judge};
use dp_noise::InsecureSeededRng;
use rand::RngExt;

use super::*;
use crate::{Features, Loss, Mechanism, StoredModel};

fn scale() -> TargetScale {
    TargetScale::new(-1.0, 1.0).unwrap()
}

fn regression_set(rows: Vec<f64>, d: usize, targets: &[f64]) -> RegressionSet {
    RegressionSet::new(
        TrainingSet::builder(d).dense_rows(rows),
        targets,
        scale(),
        TargetClipping::Refuse,
    )
    .unwrap()
}

fn exact(data: &RegressionSet, loss: Loss, lambda: f64) -> Vec<f64> {
    let mut rng = InsecureSeededRng::new(0);
    ErmParams::non_private(loss, lambda)
        .fit_regression(data, &mut rng)
        .unwrap()
        .into_model()
        .weights()
        .to_vec()
}

fn distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// Random rows on the unit sphere in d dimensions, targets ±1 or uniform in [−1, 1].
fn sphere_rows(
    n: usize,
    d: usize,
    extreme: bool,
    rng: &mut InsecureSeededRng,
) -> (Vec<f64>, Vec<f64>) {
    let mut rows = Vec::with_capacity(n * d);
    let mut targets = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        rows.extend(row.iter().map(|v| v / norm * (1.0 - 1e-12)));
        targets.push(if extreme {
            if rng.random_range(0.0..1.0) < 0.5 {
                1.0
            } else {
                -1.0
            }
        } else {
            rng.random_range(-1.0..1.0)
        });
    }
    (rows, targets)
}

/// docs/src/reference/algorithms.md §10: the replace-one sensitivity of Huber regression's
/// (normalized) minimizer is `2/(nΛ)`. Checked against exact minimizers on adversarial pairs —
/// extreme targets, rows on the unit sphere, the replaced row moved to its opposite with the
/// opposite target — and shown tight: on the saturated pair (every residual beyond h) the
/// distance is the bound to 10⁻⁶, so a halved sensitivity would fail here.
#[test]
fn minimizer_moves_at_most_the_stated_sensitivity_and_the_bound_is_attained() {
    let mut rng = InsecureSeededRng::new(11);
    let mut largest_ratio = 0.0f64;
    for (n, d, lambda, threshold, extreme) in [
        (40, 3, 0.1, 0.1, true),
        (40, 3, 0.01, 0.5, true),
        (25, 5, 1.0, 0.05, true),
        (60, 2, 0.05, 1.0, false),
        (10, 4, 1e-3, 2.0, true),
    ] {
        let loss = Loss::huber_regression(threshold).unwrap();
        let bound = 2.0 / (n as f64 * lambda);
        for trial in 0..6 {
            let (rows, targets) = sphere_rows(n, d, extreme, &mut rng);
            let mut other_rows = rows.clone();
            let mut other_targets = targets.clone();
            let last = n - 1;
            for v in &mut other_rows[last * d..] {
                *v = -*v;
            }
            other_targets[last] =
                -targets[last]
                    .signum()
                    .max(if trial % 2 == 0 { -1.0 } else { 1.0 });
            let a = exact(&regression_set(rows, d, &targets), loss, lambda);
            let b = exact(&regression_set(other_rows, d, &other_targets), loss, lambda);
            let ratio = distance(&a, &b) / bound;
            assert!(
                ratio <= 1.0 + 1e-6,
                "n {n} d {d} Λ {lambda} h {threshold}: {ratio}"
            );
            largest_ratio = largest_ratio.max(ratio);
        }
    }
    // The saturated pair: 48 shared rows x = 1 with targets ±1 (their gradients cancel)
    // and the replaced row (1, +1) vs (1, −1): w = ±1/(nΛ), every residual beyond h.
    let (n, lambda) = (49usize, 0.1);
    let shared: Vec<f64> = (0..n - 1)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let loss = Loss::huber_regression(0.1).unwrap();
    let pair: Vec<Vec<f64>> = [1.0, -1.0]
        .iter()
        .map(|&t| {
            let mut targets = shared.clone();
            targets.push(t);
            exact(&regression_set(vec![1.0; n], 1, &targets), loss, lambda)
        })
        .collect();
    let ratio = distance(&pair[0], &pair[1]) / (2.0 / (n as f64 * lambda));
    assert!((ratio - 1.0).abs() < 1e-6, "saturated pair: {ratio}");
    assert!(
        largest_ratio > 0.3,
        "the random pairs reach {largest_ratio} of the bound"
    );
}

const ROWS: usize = 49;
const RUNS: usize = 40_000;
const ALPHA: f64 = 1e-6;

/// The saturated pair above, trained on `RUNS` times each with output perturbation at ε = 1;
/// the score is the released weight. The minimizers differ by the full sensitivity, so the
/// best distinguisher of the releases reaches ε: the audit must find at least 0.7 ε and
/// never more than ε; with the noise rate doubled (the sensitivity halved) it exceeds ε.
fn output_perturbation_audit(rate_factor: f64, seed: u64) -> dp_audit::LowerBound {
    let lambda = 0.1;
    let params = ErmParams::output_perturbation(Loss::huber_regression(0.1).unwrap(), lambda, 1.0);
    // The spec's sensitivity, not the mechanism's: 2/(nΛ) plus at most 10⁻⁶ of solver gap.
    let reported = params
        .calibrate_for(Task::Regression, ROWS, 1)
        .unwrap()
        .calibration()
        .unwrap()
        .l2_sensitivity
        .unwrap();
    let spec = 2.0 / (ROWS as f64 * lambda);
    assert!(
        reported >= spec && reported <= spec * (1.0 + 1e-6),
        "{reported} vs {spec}"
    );
    let data: Vec<RegressionSet> = [1.0, -1.0]
        .iter()
        .map(|&t| {
            let mut targets: Vec<f64> = (0..ROWS - 1)
                .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
                .collect();
            targets.push(t);
            regression_set(vec![1.0; ROWS], 1, &targets)
        })
        .collect();
    let scores: Vec<Vec<f64>> = data
        .iter()
        .enumerate()
        .map(|(i, set)| {
            dp_audit::run_scores(RUNS, 10 * seed + i as u64, |rng| {
                let fit = params
                    .fit_regression_with(set, rng, Mutation::NoiseRate(rate_factor))
                    .unwrap();
                fit.model().weights()[0]
            })
            .unwrap()
        })
        .collect();
    dp_audit::require_power(RUNS, 1.0, ALPHA).unwrap();
    let bound = dp_audit::epsilon_lower_bound(&scores[0], &scores[1], ALPHA).unwrap();
    eprintln!(
        "regression output perturbation ×{rate_factor}: ε_LB = {:.3}",
        bound.epsilon
    );
    bound
}

#[test]
fn output_perturbation_audit_reaches_but_never_exceeds_epsilon() {
    let bound = output_perturbation_audit(1.0, 1);
    assert!(
        bound.epsilon <= 1.0 && bound.epsilon >= 0.7,
        "{}",
        bound.epsilon
    );
    assert_eq!(judge(&bound, 1.0, None).unwrap(), Verdict::Consistent);
}

/// Mutation check: the sensitivity halved (twice the noise rate) is caught.
#[test]
fn output_perturbation_audit_catches_a_halved_sensitivity() {
    let bound = output_perturbation_audit(2.0, 2);
    assert!(bound.epsilon > 1.0, "{}", bound.epsilon);
    assert_ne!(judge(&bound, 1.0, None).unwrap(), Verdict::Consistent);
}

#[test]
fn targets_outside_their_bounds_are_refused_by_row_or_clipped_when_asked() {
    let bounds = TargetScale::new(0.0, 10.0).unwrap();
    let rows = || TrainingSet::builder(1).dense_rows(vec![0.5, 0.2, 0.1]);
    for bad in [11.0, f64::NAN, -0.5, f64::INFINITY] {
        let error = RegressionSet::new(rows(), &[1.0, bad, 2.0], bounds, TargetClipping::Refuse)
            .unwrap_err();
        assert!(
            matches!(error, ErmError::TargetOutsideBounds { row: 1, .. }),
            "{error:?}"
        );
        // The message names the row and the bounds, never the value.
        let message = error.to_string();
        assert!(
            message.contains("row 1") && !message.contains("11"),
            "{message}"
        );
    }
    let clipped =
        RegressionSet::new(rows(), &[1.0, 11.0, -3.0], bounds, TargetClipping::Clip).unwrap();
    assert_eq!(clipped.scaled_targets(), &[-0.8, 1.0, -1.0]);
    assert!(matches!(
        RegressionSet::new(rows(), &[1.0, f64::NAN, 2.0], bounds, TargetClipping::Clip),
        Err(ErmError::TargetOutsideBounds { row: 1, .. })
    ));
    assert!(TargetScale::new(1.0, 1.0).is_err());
    assert!(TargetScale::new(0.0, f64::INFINITY).is_err());
    assert!(TargetScale::new(-f64::MAX, f64::MAX).is_err());
    // Rows are checked as a classifier's are.
    assert!(matches!(
        RegressionSet::new(
            TrainingSet::builder(1).dense_rows(vec![0.5, 2.0]),
            &[1.0, 2.0],
            bounds,
            TargetClipping::Refuse
        ),
        Err(ErmError::RowNormAboveOne { row: 1, .. })
    ));
    assert!(format!("{clipped:?}").contains("rows: 3"));
}

#[test]
fn each_task_refuses_the_other_tasks_losses_before_any_work() {
    let data = regression_set(vec![0.5, -0.5], 1, &[0.2, -0.3]);
    let mut rng = InsecureSeededRng::new(1);
    let classification = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    assert!(matches!(
        classification.fit_regression(&data, &mut rng),
        Err(ErmError::MisplacedOption { .. })
    ));
    let labelled = TrainingSet::builder(1)
        .dense_rows(vec![0.5, -0.5])
        .labels(vec![1.0, -1.0])
        .build()
        .unwrap();
    let regression =
        ErmParams::objective_perturbation(Loss::huber_regression(0.5).unwrap(), 0.1, 1.0);
    assert!(matches!(
        regression.fit(&labelled, &mut rng),
        Err(ErmError::MisplacedOption { .. })
    ));
    let gaussian =
        GaussianErm::output_perturbation(Loss::huber_regression(0.5).unwrap(), 0.1, 1.0, 1e-6);
    assert!(matches!(
        gaussian.fit(&labelled, &mut rng),
        Err(ErmError::MisplacedOption { .. })
    ));
    assert!(matches!(
        GaussianErm::output_perturbation(Loss::Logistic, 0.1, 1.0, 1e-6)
            .fit_regression(&data, &mut rng),
        Err(ErmError::MisplacedOption { .. })
    ));
}

/// A linear truth in 4 features, targets in [0, 100]: the non-private fit recovers it
/// closely, every private mechanism at ε = 5 beats the mean (measured RMSE 1.7, 1.1, 5.5,
/// 1.2 against a spread of 7.3), and predictions come back
/// in the target's units, inside its bounds.
#[test]
fn every_mechanism_fits_a_linear_truth_and_predicts_in_target_units() {
    let mut rng = InsecureSeededRng::new(5);
    let (n, d) = (20_000, 4);
    let truth = [30.0, -20.0, 10.0, 50.0];
    // Rows in [0, 0.4]⁴ with an intercept column 0.5: norms below 1.
    let mut rows = Vec::with_capacity(n * (d + 1));
    let mut targets = Vec::with_capacity(n);
    for _ in 0..n {
        let row: Vec<f64> = (0..d).map(|_| rng.random_range(0.0..0.4)).collect();
        let y: f64 = 40.0
            + row.iter().zip(&truth).map(|(x, w)| x * w).sum::<f64>()
            + rng.random_range(-2.0..2.0);
        rows.extend(&row);
        rows.push(0.5);
        targets.push(y);
    }
    let bounds = TargetScale::new(0.0, 100.0).unwrap();
    let data = RegressionSet::new(
        TrainingSet::builder(d + 1).dense_rows(rows.clone()),
        &targets,
        bounds,
        TargetClipping::Refuse,
    )
    .unwrap();
    let loss = Loss::huber_regression(1.0).unwrap();
    let test = Features::dense(d + 1, rows[..1000 * (d + 1)].to_vec()).unwrap();
    let rmse = |model: &RegressionModel| {
        let predictions = model.predictions(&test).unwrap();
        assert!(predictions.iter().all(|p| (0.0..=100.0).contains(p)));
        (predictions
            .iter()
            .zip(&targets)
            .map(|(p, y)| (p - y) * (p - y))
            .sum::<f64>()
            / 1000.0)
            .sqrt()
    };
    let plain = ErmParams::non_private(loss, 1e-6)
        .fit_regression(&data, &mut rng)
        .unwrap();
    // The noise's own RMSE is 4/√12 ≈ 1.15.
    assert!(rmse(plain.model()) < 1.3, "{}", rmse(plain.model()));
    let spread = {
        let mean = targets.iter().sum::<f64>() / n as f64;
        (targets.iter().map(|y| (y - mean) * (y - mean)).sum::<f64>() / n as f64).sqrt()
    };
    let private: Vec<(String, RegressionModel)> = vec![
        (
            "output".into(),
            ErmParams::output_perturbation(loss, 1e-3, 5.0)
                .fit_regression(&data, &mut rng)
                .unwrap()
                .into_model(),
        ),
        (
            "objective".into(),
            ErmParams::objective_perturbation(loss, 1e-4, 5.0)
                .fit_regression(&data, &mut rng)
                .unwrap()
                .into_model(),
        ),
        (
            "gaussian output".into(),
            GaussianErm::output_perturbation(loss, 1e-3, 5.0, 1e-6)
                .fit_regression(&data, &mut rng)
                .unwrap()
                .0,
        ),
        (
            "gaussian objective".into(),
            GaussianErm::objective_perturbation(loss, 1e-4, 5.0, 1e-6)
                .fit_regression(&data, &mut rng)
                .unwrap()
                .0,
        ),
    ];
    for (name, model) in &private {
        let error = rmse(model);
        eprintln!("{name}: RMSE {error:.3} (spread {spread:.3})");
        assert!(
            error < 0.8 * spread,
            "{name}: RMSE {error} vs spread {spread}"
        );
        assert!(model.epsilon() == Some(5.0));
    }
}

#[test]
fn a_regressor_round_trips_through_the_one_container_and_is_no_classifier() {
    let data = regression_set(vec![0.5, -0.5, 0.1], 1, &[0.2, -0.3, 0.0]);
    let mut rng = InsecureSeededRng::new(2);
    let model = ErmParams::objective_perturbation(Loss::huber_regression(0.5).unwrap(), 0.1, 1.0)
        .fit_regression(&data, &mut rng)
        .unwrap()
        .into_model();
    let bytes = model.to_bytes().unwrap();
    let back = RegressionModel::from_bytes(&bytes).unwrap();
    assert_eq!(back, model);
    assert_eq!(back.target_scale(), scale());
    assert!(matches!(
        back.metadata().mechanism,
        Mechanism::ObjectivePerturbation { .. }
    ));
    // A classifier's loader refuses it by type; a forged classifier payload with a
    // regression loss is refused by the loss.
    let error = crate::LinearModel::from_bytes(&bytes)
        .unwrap_err()
        .to_string();
    assert!(error.contains("linear-regression"), "{error}");
    let (weights, metadata) = (model.weights().to_vec(), model.metadata().clone());
    let forged = crate::LinearModel::new(weights, metadata);
    let error = crate::LinearModel::from_bytes(&forged.to_bytes().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("regression loss"), "{error}");
    // And a regressor's loader refuses a classifier's payload under its own type name.
    let classifier = ErmParams::non_private(Loss::Logistic, 0.1)
        .fit(
            &TrainingSet::builder(1)
                .dense_rows(vec![0.5, -0.5])
                .labels(vec![1.0, -1.0])
                .build()
                .unwrap(),
            &mut rng,
        )
        .unwrap()
        .into_model();
    let forged = RegressionModel::from_linear(classifier, scale());
    let error = RegressionModel::from_bytes(&forged.to_bytes().unwrap())
        .unwrap_err()
        .to_string();
    assert!(error.contains("classification loss"), "{error}");
    assert_eq!(RegressionModel::MODEL_TYPE, "dp-erm/linear-regression");
}

/// The regression rule caps the minimizer noise's norm where the plain rule's Λ would let
/// it dominate (large ε, many rows), and leaves Λ alone where it is small.
#[test]
fn the_regression_rule_caps_the_minimizer_noise() {
    use crate::{MAX_REGRESSION_MINIMIZER_NOISE_NORM, RegularizationRule, minimizer_noise_norm};
    for (n, d, epsilon, raised) in [
        (30_000, 11, 20.0, true),
        (30_000, 11, 5.0, true),
        (2_000, 6, 0.3, false),
    ] {
        let plain = RegularizationRule::REGRESSION
            .regularization(n, d, epsilon)
            .unwrap();
        let params = ErmParams::recommended_regression(n, d, epsilon).unwrap();
        let calibration = params.regression_noise_calibration(n, d).unwrap().unwrap();
        let norm = minimizer_noise_norm(&calibration, d);
        assert!(
            norm <= MAX_REGRESSION_MINIMIZER_NOISE_NORM,
            "{n} {d} {epsilon}: {norm}"
        );
        assert_eq!(params.regularization() > plain, raised, "{n} {d} {epsilon}");
        // Without the cap, the plain Λ's minimizer noise is above it where Λ was raised.
        let at_plain = ErmParams::objective_perturbation(params.loss(), plain, epsilon)
            .regression_noise_calibration(n, d)
            .unwrap()
            .unwrap();
        assert_eq!(
            minimizer_noise_norm(&at_plain, d) > MAX_REGRESSION_MINIMIZER_NOISE_NORM,
            raised
        );
    }
}

#[test]
fn a_selection_keeps_the_chosen_rows_targets_and_bounds_and_refuses_bad_indices() {
    let data = regression_set(vec![0.5, 0.0, 0.0, 0.5, 0.3, 0.4], 2, &[-1.0, 0.25, 1.0]);
    let part = data.select(&[2, 0]).unwrap();
    assert_eq!(part.scaled_targets(), &[1.0, -1.0]);
    assert_eq!(part.target_scale(), data.target_scale());
    assert_eq!(part.rows().row_entries(0), vec![(0, 0.3), (1, 0.4)]);
    assert_eq!(part.rows().row_entries(1), vec![(0, 0.5)]);
    assert!(matches!(data.select(&[]), Err(ErmError::EmptyData)));
    assert!(matches!(
        data.select(&[0, 3]),
        Err(ErmError::IndexOutOfRange {
            index: 3,
            len: 3,
            ..
        })
    ));
}
