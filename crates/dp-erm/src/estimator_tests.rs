//! Tests of the losses, the data contract, the calibration, the estimators and the model
//! format. The empirical privacy audit lives in `audit_tests.rs`.

use dp_noise::InsecureSeededRng;
use dp_optim::{GlmObjective, MarginLoss};
use rand::RngExt;

use super::*;
use crate::calibration::output_perturbation;

/// Objective perturbation's (ε', Δ, β) split of `epsilon` as given (the share for the
/// minimizer noise is taken before this split and is tested separately).
#[derive(Debug)]
struct Split {
    epsilon_prime: f64,
    extra_regularization: f64,
    beta: f64,
}

fn objective_perturbation(
    epsilon: f64,
    n: usize,
    lambda: f64,
    c: f64,
    rule: ObjectiveCalibration,
) -> Result<Split, ErmError> {
    let (epsilon_prime, extra_regularization, beta) =
        crate::calibration::objective_noise(epsilon, n, lambda, c, rule)?;
    Ok(Split {
        epsilon_prime,
        extra_regularization,
        beta,
    })
}

fn logistic_closed_form(z: f64) -> (f64, f64, f64) {
    let s = 1.0 / (1.0 + (-z).exp());
    ((1.0 + (-z).exp()).ln(), s - 1.0, s * (1.0 - s))
}

/// Losses against closed forms (logistic: textbook formulas; Huber: docs/src/reference/algorithms.md §1) and
/// their derivatives against central differences.
#[test]
fn losses_match_closed_forms_and_finite_differences() {
    let huber = Loss::huber(0.5).unwrap();
    for z in [
        -30.0, -3.0, -0.7, 0.0, 0.4, 0.5, 0.9, 1.2, 1.49, 1.6, 4.0, 30.0,
    ] {
        let (v, d1, d2) = Loss::Logistic.evaluate(z);
        let (cv, cd1, cd2) = logistic_closed_form(z);
        assert!(
            (v - cv).abs() <= 1e-12 * cv.max(1.0),
            "logistic value at {z}"
        );
        assert!(
            (d1 - cd1).abs() < 1e-12 && (d2 - cd2).abs() < 1e-12,
            "logistic derivatives at {z}"
        );
        let expected_huber = if z > 1.5 {
            0.0
        } else if z < 0.5 {
            1.0 - z
        } else {
            (1.5 - z) * (1.5 - z) / 2.0
        };
        assert!(
            (huber.value(z) - expected_huber).abs() < 1e-15,
            "huber at {z}"
        );
        for loss in [Loss::Logistic, huber] {
            let step = 1e-6;
            let numeric_d1 = (loss.value(z + step) - loss.value(z - step)) / (2.0 * step);
            let numeric_d2 = (loss.derivative(z + step) - loss.derivative(z - step)) / (2.0 * step);
            assert!(
                (loss.derivative(z) - numeric_d1).abs() < 1e-6,
                "{loss:?} ℓ' at {z}"
            );
            if (z - 0.5).abs() > 1e-3 && (z - 1.5).abs() > 1e-3 {
                assert!(
                    (loss.second_derivative(z) - numeric_d2).abs() < 1e-5,
                    "{loss:?} ℓ'' at {z}"
                );
            }
            assert!(loss.derivative(z).abs() <= loss.lipschitz());
            assert!((0.0..=loss.curvature_bound()).contains(&loss.second_derivative(z)));
        }
    }
    // Large margins do not overflow.
    assert_eq!(Loss::Logistic.value(1e4), 0.0);
    assert!((Loss::Logistic.value(-1e4) - 1e4).abs() < 1e-9);
    assert_eq!(Loss::Logistic.curvature_bound(), 0.25);
    assert_eq!(huber.curvature_bound(), 1.0);
}

/// A separable-ish synthetic problem in the unit ball.
fn synthetic(n: usize, d: usize, seed: u64) -> TrainingSet {
    let mut rng = InsecureSeededRng::new(seed);
    let truth: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut values = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let mut row: Vec<f64> = (0..d).map(|_| rng.random_range(-1.0..1.0)).collect();
        let norm = row.iter().map(|v| v * v).sum::<f64>().sqrt();
        let radius = rng.random_range(0.0..1.0f64);
        row.iter_mut().for_each(|v| *v *= radius / norm);
        let score: f64 = row.iter().zip(&truth).map(|(a, b)| a * b).sum();
        let flip = rng.random_range(0.0..1.0) < 0.1;
        labels.push(if (score > 0.0) != flip { 1.0 } else { -1.0 });
        values.extend(row);
    }
    TrainingSet::builder(d)
        .dense_rows(values)
        .labels(labels)
        .build()
        .unwrap()
}

#[test]
fn rejects_rows_outside_the_unit_ball_naming_the_row() {
    let err = TrainingSet::builder(2)
        .dense_rows(vec![0.1, 0.2, 0.9, 0.9, 0.0, 1.0])
        .labels(vec![1.0, -1.0, 1.0])
        .build()
        .unwrap_err();
    assert!(
        matches!(err, ErmError::RowNormAboveOne { row: 1, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("row 1 has a norm > 1"), "{err}");
    // The row's norm (1.2728…) is the data's: never in the message.
    assert!(!err.to_string().contains("1.27"), "{err}");
    assert!(!err.to_string().contains("rounding"), "{err}");
}

/// A row divided by its computed norm can land a few ulps above 1: refused like any other
/// (no slack in the contract), with a message that says it is rounding and what fixes it.
#[test]
fn a_row_above_one_by_rounding_is_refused_saying_so() {
    // Rows (t, 1 − t) divided by their computed norm: some compute a few ulps above 1.
    let rows: Vec<f64> = (1..200)
        .map(|k| f64::from(k) / 200.0)
        .flat_map(|t| {
            let (a, b) = (t, 1.0 - t);
            let norm = (a * a + b * b).sqrt();
            [a / norm, b / norm]
        })
        .collect();
    let err = TrainingSet::builder(2)
        .dense_rows(rows.clone())
        .labels(vec![1.0; rows.len() / 2])
        .build()
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("rounding only") && message.contains("clip_rows_to_unit_ball"),
        "{message}"
    );
    let clipped = TrainingSet::builder(2)
        .dense_rows(rows.clone())
        .labels(vec![1.0; rows.len() / 2])
        .clip_rows_to_unit_ball()
        .build();
    assert!(clipped.is_ok(), "the fix the message names works");
}

#[test]
fn rejects_invalid_labels_non_finite_values_and_bad_shapes() {
    let build = |values: Vec<f64>, labels: Vec<f64>| {
        TrainingSet::builder(2)
            .dense_rows(values)
            .labels(labels)
            .build()
    };
    assert!(matches!(
        build(vec![0.1, 0.2], vec![0.0]),
        Err(ErmError::InvalidLabel { row: 0, .. })
    ));
    assert!(matches!(
        build(vec![0.1, 0.2, 0.1, 0.1], vec![1.0, 2.0]),
        Err(ErmError::InvalidLabel { row: 1, .. })
    ));
    assert!(matches!(
        build(vec![0.1, f64::NAN], vec![1.0]),
        Err(ErmError::NonFiniteFeature { row: 0, col: 1, .. })
    ));
    assert!(matches!(
        build(vec![0.1, 0.2, 0.3], vec![1.0]),
        Err(ErmError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        build(vec![0.1, 0.2], vec![1.0, 1.0]),
        Err(ErmError::DimensionMismatch { what: "labels", .. })
    ));
    assert!(matches!(build(vec![], vec![]), Err(ErmError::EmptyData)));
    assert!(matches!(
        TrainingSet::builder(2).labels(vec![1.0]).build(),
        Err(ErmError::EmptyData)
    ));
    let sparse = TrainingSet::builder(3)
        .sparse_rows(vec![vec![(5, 0.1)]])
        .labels(vec![1.0])
        .build();
    assert!(matches!(
        sparse,
        Err(ErmError::FeatureIndexOutOfRange {
            row: 0,
            col: 5,
            features: 3
        })
    ));
    // An index near usize::MAX is named as it is (no `c + 1` overflow).
    let far = TrainingSet::builder(3)
        .sparse_rows(vec![vec![(usize::MAX, 0.1)]])
        .labels(vec![1.0])
        .build()
        .unwrap_err();
    assert!(far.to_string().contains(&usize::MAX.to_string()), "{far}");
}

#[test]
fn public_bounds_clipping_and_intercept_are_explicit() {
    // Public bounds: a value beyond its bound is an error, not clipped.
    let outside = TrainingSet::builder(2)
        .dense_rows(vec![5.0, 1.0])
        .labels(vec![1.0])
        .scale_by_public_bounds(vec![4.0, 10.0])
        .build();
    assert!(matches!(
        outside,
        Err(ErmError::OutsidePublicBound { row: 0, col: 0, .. })
    ));
    // Bounds then clipping: row (3/4, 4/10)·… has norm ≤ 1 after clipping; the clipped row
    // points the same way.
    let data = TrainingSet::builder(2)
        .dense_rows(vec![3.0, 8.0, 0.4, 0.3])
        .labels(vec![1.0, -1.0])
        .scale_by_public_bounds(vec![4.0, 10.0])
        .clip_rows_to_unit_ball()
        .build()
        .unwrap();
    let model = ErmParams::non_private(Loss::Logistic, 1.0)
        .fit(&data, &mut InsecureSeededRng::new(1))
        .unwrap();
    assert_eq!(model.model().weights().len(), 2);
    // Intercept: one more feature, rows still in the unit ball.
    let with_intercept = TrainingSet::builder(2)
        .dense_rows(vec![0.6, 0.75, 0.0, 1.0])
        .labels(vec![1.0, -1.0])
        .append_intercept(1.0)
        .build()
        .unwrap();
    assert_eq!(with_intercept.features(), 3);
    assert!(matches!(
        TrainingSet::builder(1)
            .dense_rows(vec![0.5])
            .labels(vec![1.0])
            .append_intercept(0.0)
            .build(),
        Err(ErmError::InvalidParameter { .. })
    ));
}

#[test]
fn clipping_leaves_computed_norms_at_most_one() {
    let mut rng = InsecureSeededRng::new(2);
    let values: Vec<f64> = (0..3000).map(|_| rng.random_range(-5.0..5.0)).collect();
    let data = TrainingSet::builder(3)
        .dense_rows(values)
        .labels(vec![1.0; 1000])
        .clip_rows_to_unit_ball()
        .build();
    assert!(data.is_ok(), "{data:?}");
}

#[test]
fn objective_calibration_follows_cms11_on_both_branches() {
    let (c, n) = (0.25, 50);
    // Λ = 0.1: ε' = ε − 2 ln(1 + c/(nΛ)) > 0, no extra regularization.
    let easy = objective_perturbation(1.0, n, 0.1, c, ObjectiveCalibration::Cms11).unwrap();
    let expected = 1.0 - (1.0f64 + 2.0 * 0.05 + 0.05 * 0.05).ln();
    assert!((easy.epsilon_prime - expected).abs() < 1e-12 && easy.epsilon_prime <= expected);
    assert_eq!(easy.extra_regularization, 0.0);
    assert!((easy.beta - easy.epsilon_prime / 2.0).abs() < 1e-15);
    // Λ = 1e-3: the slack exceeds ε, so Δ = c/(n(e^{ε/4} − 1)) − Λ and ε' = ε/2.
    let hard = objective_perturbation(1.0, n, 1e-3, c, ObjectiveCalibration::Cms11).unwrap();
    // ε/2, or a few ulps less where the Jacobian term's rounding margin caps it.
    assert!(hard.epsilon_prime <= 0.5 && 0.5 - hard.epsilon_prime < 1e-13);
    let delta = c / (n as f64 * 0.25f64.exp_m1()) - 1e-3;
    assert!(hard.extra_regularization >= delta && hard.extra_regularization - delta < 1e-15);
    // In both branches the Jacobian term plus ε' stays within ε.
    for (lambda, cal) in [(0.1, easy), (1e-3, hard)] {
        let jacobian = 2.0 * (c / (n as f64 * (lambda + cal.extra_regularization))).ln_1p();
        assert!(jacobian + 2.0 * cal.beta <= 1.0, "Λ = {lambda}");
    }
}

/// At the branch boundary the paper's rule has its cliff; the cliff-free rule never goes
/// below ε/2.
#[test]
fn cliff_free_calibration_keeps_half_the_budget() {
    let (c, n, epsilon) = (0.25, 1000, 0.2);
    // Λ where 2 ln(1 + c/(nΛ)) = ε exactly: c/(nΛ) = e^{ε/2} − 1.
    let boundary = c / (n as f64 * (epsilon / 2.0f64).exp_m1());
    let just_inside = objective_perturbation(
        epsilon,
        n,
        boundary * 1.000001,
        c,
        ObjectiveCalibration::Cms11,
    )
    .unwrap();
    assert!(
        just_inside.epsilon_prime < 1e-5,
        "the paper's cliff: ε' = {}",
        just_inside.epsilon_prime
    );
    let just_outside = objective_perturbation(
        epsilon,
        n,
        boundary * 0.999999,
        c,
        ObjectiveCalibration::Cms11,
    )
    .unwrap();
    assert!((just_outside.epsilon_prime - epsilon / 2.0).abs() < 1e-12);
    for factor in [1e-3, 0.5, 0.999999, 1.000001, 2.0, 1e3] {
        let lambda = boundary * factor;
        let cal =
            objective_perturbation(epsilon, n, lambda, c, ObjectiveCalibration::CliffFree).unwrap();
        assert!(
            cal.epsilon_prime >= epsilon / 2.0 * (1.0 - 1e-12),
            "Λ factor {factor}: {cal:?}"
        );
        let jacobian = 2.0 * (c / (n as f64 * (lambda + cal.extra_regularization))).ln_1p();
        assert!(
            jacobian + cal.epsilon_prime <= epsilon + 1e-15,
            "Λ factor {factor}"
        );
    }
}

#[test]
fn output_perturbation_sensitivity_includes_the_solver_tolerance() {
    let floor = crate::tolerance_floor(1000, 3, Loss::Logistic, 1e-2, None);
    let cal = output_perturbation(0.5, 1000, 1e-2, 1.0, 1e-10, &floor);
    let sensitivity = cal.l2_sensitivity.unwrap();
    assert!(floor.total() > 0.0);
    assert!(sensitivity >= 2.0 / (1000.0 * 1e-2) + 2.0 * (1e-10 + floor.total()) / 1e-2);
    assert!(cal.beta * sensitivity <= 0.5);
}

/// The first-order condition of the perturbed objective recovers the drawn noise at the
/// solver's point (before the minimizer noise): b = −n ∇(J + (Δ/2)‖·‖²)(f̂), up to n times
/// the solver tolerance.
#[test]
fn first_order_condition_recovers_the_noise() {
    let data = synthetic(200, 4, 3);
    for loss in [Loss::Logistic, Loss::huber(0.5).unwrap()] {
        for (lambda, rule) in [
            (0.1, ObjectiveCalibration::Cms11),
            (1e-4, ObjectiveCalibration::Cms11),
            (1e-4, ObjectiveCalibration::CliffFree),
        ] {
            let params =
                ErmParams::objective_perturbation(loss, lambda, 0.5).objective_calibration(rule);
            let (fit, noise) = params
                .fit_revealing_noise(&data, &mut InsecureSeededRng::new(4))
                .unwrap();
            let noise = noise.unwrap();
            let total = lambda + fit.calibration().unwrap().extra_regularization;
            let objective = GlmObjective::new(data.design(), data.labels(), loss, total).unwrap();
            let gradient = objective.gradient(fit.secret_solver_weights()).unwrap();
            let n = data.len() as f64;
            for (g, b) in gradient.iter().zip(&noise) {
                assert!(
                    (-n * g - b).abs() <= n * 1e-10 * 1.01,
                    "{loss:?} Λ={lambda}: {} vs {b}",
                    -n * g
                );
            }
        }
    }
}

/// The regularization used is the Λ passed in: the non-private model satisfies the
/// first-order condition of J with that Λ, and not with 2Λ.
#[test]
fn the_regularization_used_is_the_one_passed_in() {
    let data = synthetic(300, 3, 5);
    for lambda in [1e-1, 1e-3] {
        let fit = ErmParams::non_private(Loss::Logistic, lambda)
            .fit(&data, &mut InsecureSeededRng::new(6))
            .unwrap();
        let w = fit.model().weights();
        let gradient_norm = |mu: f64| {
            let objective =
                GlmObjective::new(data.design(), data.labels(), Loss::Logistic, mu).unwrap();
            objective
                .gradient(w)
                .unwrap()
                .iter()
                .map(|g| g * g)
                .sum::<f64>()
                .sqrt()
        };
        assert!(gradient_norm(lambda) <= 1e-10);
        assert!(gradient_norm(2.0 * lambda) > 1e-6, "Λ = {lambda}");
        assert_eq!(fit.model().metadata().regularization, lambda);
    }
    // Stronger regularization gives a smaller model.
    let norm = |lambda: f64| {
        let fit = ErmParams::non_private(Loss::Logistic, lambda)
            .fit(&data, &mut InsecureSeededRng::new(6))
            .unwrap();
        fit.model()
            .weights()
            .iter()
            .map(|w| w * w)
            .sum::<f64>()
            .sqrt()
    };
    assert!(norm(1.0) < norm(1e-2));
}

#[test]
fn fits_report_what_they_spent() {
    let data = synthetic(100, 3, 7);
    let mut rng = InsecureSeededRng::new(8);
    let none = ErmParams::non_private(Loss::Logistic, 1e-2)
        .fit(&data, &mut rng)
        .unwrap();
    assert_eq!(none.epsilon(), None);
    assert!(none.calibration().is_none() && none.secret_noise_norm().is_none());
    let output = ErmParams::output_perturbation(Loss::Logistic, 1e-2, 0.3)
        .fit(&data, &mut rng)
        .unwrap();
    assert_eq!(output.epsilon(), Some(0.3));
    assert!(output.calibration().unwrap().l2_sensitivity.is_some());
    let objective = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 0.3)
        .fit(&data, &mut rng)
        .unwrap();
    assert_eq!(objective.model().epsilon(), Some(0.3));
    assert!(objective.secret_noise_norm().unwrap() > 0.0);
    assert!(objective.solver_gradient_norm() <= 1e-10);
}

#[test]
fn rejects_invalid_parameters() {
    let data = synthetic(20, 2, 9);
    let mut rng = InsecureSeededRng::new(10);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        for params in [
            ErmParams::non_private(Loss::Logistic, bad),
            ErmParams::output_perturbation(Loss::Logistic, 1e-2, bad),
            ErmParams::objective_perturbation(Loss::Logistic, 1e-2, bad),
            ErmParams::objective_perturbation(Loss::Huber { width: bad }, 1e-2, 1.0),
            ErmParams::non_private(Loss::Logistic, 1e-2).tolerance(bad),
        ] {
            assert!(
                matches!(
                    params.fit(&data, &mut rng),
                    Err(ErmError::InvalidParameter { .. })
                ),
                "{params:?}"
            );
        }
        assert!(Loss::huber(bad).is_err());
    }
    let misplaced = ErmParams::output_perturbation(Loss::Logistic, 1e-2, 1.0)
        .objective_calibration(ObjectiveCalibration::CliffFree);
    assert!(matches!(
        misplaced.check(),
        Err(ErmError::MisplacedOption {
            option: "objective calibration",
            ..
        })
    ));
}

/// A warm start changes the solver's path only: output perturbation from the non-private
/// minimizer takes no step and releases the same model as a cold start; objective
/// perturbation lands within its certificate of the cold answer with the same noise.
#[test]
fn warm_starts_change_the_path_not_the_release() {
    let data = synthetic(400, 4, 31);
    let huber = Loss::huber(0.5).unwrap();
    let lambda = 1e-3;
    let non_private = ErmParams::non_private(huber, lambda)
        .fit(&data, &mut InsecureSeededRng::new(0))
        .unwrap();
    let start = non_private.model().weights();
    let output = ErmParams::output_perturbation(huber, lambda, 0.5);
    let cold = output.fit(&data, &mut InsecureSeededRng::new(32)).unwrap();
    let warm = output
        .clone()
        .warm_start(start)
        .fit(&data, &mut InsecureSeededRng::new(32))
        .unwrap();
    assert_eq!(warm.solver_iterations(), 0);
    assert_eq!(warm.model(), cold.model());
    for loss in [huber, Loss::Logistic] {
        let objective = ErmParams::objective_perturbation(loss, lambda, 0.5);
        let cold = objective
            .fit(&data, &mut InsecureSeededRng::new(33))
            .unwrap();
        let warm = objective
            .clone()
            .warm_start(start)
            .fit(&data, &mut InsecureSeededRng::new(33))
            .unwrap();
        assert_eq!(warm.secret_noise_norm(), cold.secret_noise_norm());
        assert_eq!(warm.calibration(), cold.calibration());
        let total = lambda + cold.calibration().unwrap().extra_regularization;
        let distance = l2_distance(warm.model().weights(), cold.model().weights());
        // Each is within γ/(Λ+Δ) of the exact minimizer.
        assert!(distance <= 2.0 * 1e-10 / total, "{loss:?}: {distance}");
        assert!(warm.solver_iterations() > 0);
    }
}

#[test]
fn rejects_warm_starts_of_the_wrong_length_or_not_finite() {
    let data = synthetic(50, 3, 34);
    let mut rng = InsecureSeededRng::new(35);
    let params = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0);
    let short = params.clone().warm_start(&[0.0; 2]).fit(&data, &mut rng);
    assert!(matches!(
        short,
        Err(ErmError::DimensionMismatch {
            what: "warm-start weights",
            expected: 3,
            found: 2
        })
    ));
    let nan = params
        .warm_start(&[0.0, f64::NAN, 0.0])
        .fit(&data, &mut rng);
    assert!(
        matches!(
            nan,
            Err(ErmError::InvalidParameter {
                what: "warm-start weight",
                ..
            })
        ),
        "{nan:?}"
    );
}

/// The calibration can be read before training, and it is the one the fit then uses.
#[test]
fn noise_calibration_is_known_before_training() {
    let data = synthetic(300, 3, 36);
    let n = data.len();
    let huber = Loss::huber(0.5).unwrap();
    for params in [
        ErmParams::output_perturbation(huber, 1e-2, 0.5),
        ErmParams::objective_perturbation(huber, 1e-2, 0.5),
        ErmParams::objective_perturbation(Loss::Logistic, 1e-4, 0.5)
            .objective_calibration(ObjectiveCalibration::CliffFree),
    ] {
        let before = params.noise_calibration(n, data.features()).unwrap();
        let fit = params.fit(&data, &mut InsecureSeededRng::new(37)).unwrap();
        assert_eq!(before.as_ref(), fit.calibration(), "{params:?}");
    }
    let non_private = ErmParams::non_private(huber, 1e-2);
    assert_eq!(non_private.noise_calibration(n, 3).unwrap(), None);
    assert_eq!(
        non_private.noise_calibration(0, 3),
        Err(ErmError::EmptyData)
    );
    assert!(matches!(
        ErmParams::output_perturbation(huber, 1e-2, -1.0).noise_calibration(n, 3),
        Err(ErmError::InvalidParameter {
            what: "epsilon",
            ..
        })
    ));
    // The two rules agree away from the cliff and differ inside it (c = 1, n = 300, ε = 1:
    // Λ ∈ (c/(n(e^{ε/2} − 1)), c/(n(e^{ε/4} − 1))) = (0.0051, 0.0117)).
    let rules = |lambda: f64| {
        let paper = ErmParams::objective_perturbation(huber, lambda, 1.0)
            .objective_calibration(ObjectiveCalibration::Cms11);
        let cliff_free = paper
            .clone()
            .objective_calibration(ObjectiveCalibration::CliffFree);
        (
            paper.noise_calibration(n, 3).unwrap(),
            cliff_free.noise_calibration(n, 3).unwrap(),
        )
    };
    for lambda in [1e-1, 2e-2, 1e-3, 1e-4] {
        let (paper, cliff_free) = rules(lambda);
        assert_eq!(paper, cliff_free, "Λ = {lambda}");
    }
    let (paper, cliff_free) = rules(8e-3);
    assert_ne!(paper, cliff_free);
}

fn l2_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

/// A tolerance below the rounding floor is refused before any work, from n and d alone —
/// not at fit time by a solver that fails on some datasets and not on others.
#[test]
fn rejects_tolerances_below_the_rounding_floor_up_front() {
    let data = synthetic(100, 3, 11);
    for tolerance in [1e-300, 1e-17, 1e-14] {
        let params =
            ErmParams::objective_perturbation(Loss::Logistic, 1e-3, 1.0).tolerance(tolerance);
        let err = params
            .fit(&data, &mut InsecureSeededRng::new(12))
            .unwrap_err();
        assert!(
            matches!(err, ErmError::ToleranceBelowRounding { tolerance: t, floor } if t == tolerance && floor > tolerance),
            "{err}"
        );
        assert_eq!(params.noise_calibration(100, 3).unwrap_err(), err);
        assert!(err.to_string().contains(&format!("{tolerance:?}")), "{err}");
    }
}

#[test]
fn models_round_trip_and_bad_files_are_refused() {
    let data = synthetic(100, 3, 13);
    let model = ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), 1e-2, 0.5)
        .feature_map("identity")
        .fit(&data, &mut InsecureSeededRng::new(14))
        .unwrap()
        .into_model();
    let bytes = model.to_bytes().unwrap();
    assert_eq!(LinearModel::from_bytes(&bytes).unwrap(), model);
    let path = std::env::temp_dir().join(format!("dp-erm-test-{}.model", std::process::id()));
    model.save(&path).unwrap();
    assert_eq!(LinearModel::load(&path).unwrap(), model);
    std::fs::remove_file(&path).unwrap();
    let expect = |bytes: &[u8], fragment: &str| {
        let err = LinearModel::from_bytes(bytes).unwrap_err().to_string();
        assert!(err.contains(fragment), "{err} (wanted '{fragment}')");
    };
    expect(&bytes[..10], "shorter than");
    expect(&bytes[..bytes.len() - 3], "truncated");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 5;
    flipped[last] ^= 0x40;
    expect(&flipped, "checksum");
    let mut foreign = bytes.clone();
    foreign[0] = b'X';
    expect(&foreign, "magic");
    let mut future = bytes.clone();
    future[8..12].copy_from_slice(&(MODEL_FORMAT_VERSION + 1).to_le_bytes());
    expect(
        &future,
        &format!(
            "format version {} is not supported",
            MODEL_FORMAT_VERSION + 1
        ),
    );
    assert!(LinearModel::load("/nonexistent/dir/model.bin").is_err());
}

#[test]
fn predictions_and_error_rates() {
    let data = synthetic(2000, 3, 15);
    let model = ErmParams::non_private(Loss::Logistic, 1e-3)
        .fit(&data, &mut InsecureSeededRng::new(16))
        .unwrap()
        .into_model();
    let error = model.error_rate(&data).unwrap();
    assert!(error < 0.2, "{error}");
    assert_eq!(model.mistakes(&data).unwrap() as f64 / 2000.0, error);
    assert!(matches!(
        model.predict(&[0.1]),
        Err(ErmError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        model.predict(&[0.1, f64::NAN, 0.0]),
        Err(ErmError::NonFiniteFeature { .. })
    ));
    let other = synthetic(10, 4, 17);
    assert!(matches!(
        model.error_rate(&other),
        Err(ErmError::DimensionMismatch { .. })
    ));
}

/// ‖f_priv − f*‖ over `runs` output-perturbation fits (f* from the same deterministic solve).
fn output_noise_norms(
    params: &ErmParams,
    data: &TrainingSet,
    runs: usize,
    rate_factor: f64,
) -> Vec<f64> {
    let exact = ErmParams::non_private(params.loss(), params.regularization())
        .fit(data, &mut InsecureSeededRng::new(0))
        .unwrap()
        .into_model();
    let mut rng = InsecureSeededRng::new(18);
    (0..runs)
        .map(|_| {
            let (fit, _) = params
                .fit_with_rate_factor(data, &mut rng, rate_factor)
                .unwrap();
            let released = fit.model().weights();
            released
                .iter()
                .zip(exact.weights())
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt()
        })
        .collect()
}

/// Objective perturbation adds the minimizer noise its `# Privacy` states: released minus
/// solver point has norm ~ Gamma(d, 1/β₂) with β₂ = (ε/100) / (2γ/(Λ+Δ)), computed here
/// from docs/src/reference/algorithms.md §4 (b), not read from the code. The same KS test rejects a mechanism
/// whose minimizer noise is half as large, or missing (mutation checks on the draws).
#[test]
fn minimizer_noise_has_the_stated_law() {
    use statrs::distribution::{ContinuousCDF, Gamma};
    let data = synthetic(50, 3, 41);
    let (epsilon, lambda, n, c): (f64, f64, f64, f64) = (1.0, 0.1, 50.0, 0.25);
    // Δ = 0 here: the Jacobian term 2 ln(1 + c/(nΛ)) is below ε₁ = 0.99.
    assert!(2.0 * (c / (n * lambda)).ln_1p() < 0.99 * epsilon);
    let radius = 1e-10 / lambda;
    let beta = (epsilon / 100.0) / (2.0 * radius);
    let law = Gamma::new(3.0, beta).unwrap(); // statrs: shape, rate β
    let params = ErmParams::objective_perturbation(Loss::Logistic, lambda, epsilon);
    let mut rng = InsecureSeededRng::new(42);
    let norms: Vec<f64> = (0..4000)
        .map(|_| {
            let fit = params.fit(&data, &mut rng).unwrap();
            l2_distance(fit.model().weights(), fit.secret_solver_weights())
        })
        .collect();
    let ks = |norms: &[f64]| {
        dp_noise::stats::ks_test(norms, |r| law.cdf(r), dp_noise::stats::FALSE_ALARM_RATE)
    };
    assert!(ks(&norms).passes(), "{:?}", ks(&norms));
    let halved: Vec<f64> = norms.iter().map(|r| r / 2.0).collect();
    assert!(
        !ks(&halved).passes(),
        "half the minimizer noise went unnoticed"
    );
    let missing = vec![0.0; norms.len()];
    assert!(
        !ks(&missing).passes(),
        "a missing minimizer noise went unnoticed"
    );
}

/// Output perturbation adds noise with ‖b‖ ~ Gamma(d, 1/β), β = ε/(2/(nΛ) + 2γ/Λ): KS of the
/// released-minus-exact norms against that law; the same test rejects a mechanism whose
/// noise is half as large (the classic missing factor 2 in the sensitivity).
#[test]
fn output_perturbation_noise_has_the_calibrated_law() {
    use statrs::distribution::{ContinuousCDF, Gamma};
    let data = synthetic(50, 3, 19);
    let (epsilon, lambda) = (1.0, 0.1);
    let params = ErmParams::output_perturbation(Loss::Logistic, lambda, epsilon);
    let sensitivity = 2.0 / (50.0 * lambda) + 2.0 * 1e-10 / lambda;
    let law = Gamma::new(3.0, epsilon / sensitivity).unwrap(); // statrs: shape, rate β
    let ks = |norms: &[f64]| {
        dp_noise::stats::ks_test(norms, |r| law.cdf(r), dp_noise::stats::FALSE_ALARM_RATE)
    };
    let correct = ks(&output_noise_norms(&params, &data, 3000, 1.0));
    assert!(correct.passes(), "{correct:?}");
    let halved = ks(&output_noise_norms(&params, &data, 3000, 2.0));
    assert!(!halved.passes(), "{halved:?}");
}

/// Three well-separated classes in the unit ball of ℝ²: centres at angles 0, 2π/3, 4π/3.
fn three_blobs(n: usize, seed: u64) -> (TrainingSet, Vec<usize>) {
    let mut rng = InsecureSeededRng::new(seed);
    let mut values = Vec::with_capacity(2 * n);
    let mut classes = Vec::with_capacity(n);
    for i in 0..n {
        let class = i % 3;
        let angle = class as f64 * 2.0 * std::f64::consts::PI / 3.0;
        values.push(0.6 * angle.cos() + rng.random_range(-0.15..0.15));
        values.push(0.6 * angle.sin() + rng.random_range(-0.15..0.15));
        classes.push(class);
    }
    let rows = TrainingSet::builder(2)
        .dense_rows(values)
        .labels(vec![1.0; n])
        .build()
        .unwrap();
    (rows, classes)
}

#[test]
fn one_vs_rest_splits_the_budget_and_classifies() {
    let (rows, classes) = three_blobs(3000, 20);
    let mut rng = InsecureSeededRng::new(21);
    let exact = OneVsRest::fit(
        &ErmParams::non_private(Loss::Logistic, 1e-3),
        &rows,
        &classes,
        3,
        &mut rng,
    )
    .unwrap();
    assert!(exact.error_rate(&rows, &classes).unwrap() < 0.01);
    assert_eq!(exact.epsilon(), None);
    let private = OneVsRest::fit(
        &ErmParams::objective_perturbation(Loss::Logistic, 1e-3, 3.0),
        &rows,
        &classes,
        3,
        &mut rng,
    )
    .unwrap();
    let shares: Vec<f64> = private
        .models()
        .iter()
        .map(|m| m.epsilon().unwrap())
        .collect();
    assert!(shares.iter().all(|&e| e <= 1.0 && e > 0.999_999));
    assert!(dp_noise::sequential_composition(&shares).unwrap() <= 3.0);
    assert_eq!(private.epsilon(), Some(3.0));
    assert!(private.error_rate(&rows, &classes).unwrap() < 0.1);
    assert_eq!(private.predict(&[0.6, 0.0]).unwrap(), 0);
}

#[test]
fn one_vs_rest_rejects_bad_classes() {
    let (rows, classes) = three_blobs(30, 22);
    let params = ErmParams::non_private(Loss::Logistic, 1e-2);
    let mut rng = InsecureSeededRng::new(23);
    assert!(matches!(
        OneVsRest::fit(&params, &rows, &classes, 1, &mut rng),
        Err(ErmError::InvalidCount { .. })
    ));
    assert!(matches!(
        OneVsRest::fit(&params, &rows, &classes[1..], 3, &mut rng),
        Err(ErmError::DimensionMismatch { .. })
    ));
    let mut bad = classes.clone();
    bad[4] = 3;
    assert!(matches!(
        OneVsRest::fit(&params, &rows, &bad, 3, &mut rng),
        Err(ErmError::InvalidClass {
            row: 4,
            class: 3,
            class_count: 3
        })
    ));
    // error_rate refuses what fit refuses: a class label outside 0..K is an error naming
    // it, not a row counted wrong.
    let model = OneVsRest::fit(&params, &rows, &classes, 3, &mut rng).unwrap();
    for class in [3, usize::MAX] {
        bad[4] = class;
        assert_eq!(
            model.error_rate(&rows, &bad).unwrap_err(),
            ErmError::InvalidClass {
                row: 4,
                class,
                class_count: 3
            }
        );
    }
    assert!(matches!(
        model.error_rate(&rows, &classes[1..]),
        Err(ErmError::DimensionMismatch { .. })
    ));
}

/// 2β + J(fl(Λ+Δ)) ≤ ε with no slack, over many random settings and both rules, where J is
/// an upper bound on the Jacobian term the proof charges. (Checked to fail when the code's
/// rounding margin is a single ulp, as it once was.)
#[test]
fn objective_calibration_never_overspends_over_random_settings() {
    let mut rng = InsecureSeededRng::new(30);
    for _ in 0..20_000 {
        let epsilon = 10f64.powf(rng.random_range(-3.0..1.0));
        let n = rng.random_range(10..100_000usize);
        let lambda = 10f64.powf(rng.random_range(-7.0..0.0));
        let c = if rng.random_range(0.0..1.0) < 0.5 {
            0.25
        } else {
            1.0
        };
        for rule in [ObjectiveCalibration::Cms11, ObjectiveCalibration::CliffFree] {
            if let Ok(cal) = objective_perturbation(epsilon, n, lambda, c, rule) {
                let total = lambda + cal.extra_regularization;
                // An upper bound on the exact Jacobian term: the f64 value is within 4 ulps of
                // it (a product, a quotient and ln_1p, each within about one ulp).
                let jacobian = 2.0 * (c / (n as f64 * total)).ln_1p() * (1.0 + 4.0 * f64::EPSILON);
                assert!(
                    2.0 * cal.beta + jacobian <= epsilon,
                    "ε={epsilon} n={n} Λ={lambda} c={c} {rule:?}"
                );
            }
        }
    }
}

/// Neighbouring datasets move the non-private minimizer by at most 2/(nΛ) + 2γ/Λ — and a
/// Huber pair kept in the loss's linear region (where ℓ' = −1 everywhere) attains 2/(nΛ), so
/// a sensitivity missing its factor 2 would be caught.
#[test]
fn neighbouring_minimizers_are_within_the_sensitivity_and_it_is_tight() {
    let (n, lambda) = (50usize, 2.5);
    let mut rng = InsecureSeededRng::new(31);
    let values: Vec<f64> = (0..n - 1).map(|_| rng.random_range(-1.0..1.0)).collect();
    let labels: Vec<f64> = (0..n - 1)
        .map(|_| {
            if rng.random_range(0.0..1.0) < 0.5 {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let (first, second) = canary_pair(values, labels);
    let params = ErmParams::non_private(Loss::huber(0.5).unwrap(), lambda);
    let f = |data: &TrainingSet| {
        params
            .fit(data, &mut InsecureSeededRng::new(0))
            .unwrap()
            .model()
            .weights()[0]
    };
    let moved = (f(&first) - f(&second)).abs();
    let sensitivity = 2.0 / (n as f64 * lambda) + 2.0 * 1e-10 / lambda;
    assert!(moved <= sensitivity, "{moved} > {sensitivity}");
    assert!(
        moved >= 0.999 * 2.0 / (n as f64 * lambda),
        "{moved}: the pair should attain 2/(nΛ)"
    );
    assert!(
        moved > 1.0 / (n as f64 * lambda),
        "a sensitivity of 1/(nΛ) would be too small"
    );
}

/// Neighbouring one-dimensional datasets: the shared rows plus a canary `x* = 1` labelled
/// +1 in the first and −1 in the second (one row replaced).
pub(crate) fn canary_pair(
    mut values: Vec<f64>,
    mut labels: Vec<f64>,
) -> (TrainingSet, TrainingSet) {
    values.push(1.0);
    labels.push(1.0);
    let build = |labels: Vec<f64>| {
        TrainingSet::builder(1)
            .dense_rows(values.clone())
            .labels(labels)
            .build()
            .unwrap()
    };
    let with_canary = build(labels.clone());
    *labels.last_mut().unwrap() = -1.0;
    (with_canary, build(labels))
}

/// Tolerances above 1e-6 are refused for every mechanism; up to it both private
/// mechanisms account for the tolerance (sensitivity, minimizer noise) and fit.
#[test]
fn rejects_loose_tolerances_and_accounts_for_accepted_ones() {
    let data = synthetic(50, 2, 32);
    for params in [
        ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0),
        ErmParams::output_perturbation(Loss::Logistic, 1e-2, 1.0),
        ErmParams::non_private(Loss::Logistic, 1e-2),
    ] {
        assert!(matches!(
            params
                .clone()
                .tolerance(1e-4)
                .fit(&data, &mut InsecureSeededRng::new(1)),
            Err(ErmError::InvalidParameter {
                what: "tolerance",
                ..
            })
        ));
        let fit = params
            .tolerance(1e-6)
            .fit(&data, &mut InsecureSeededRng::new(1))
            .unwrap();
        if let Some(calibration) = fit.calibration() {
            assert_eq!(calibration.tolerance, 1e-6);
        }
    }
}

#[test]
fn model_files_with_hostile_lengths_or_metadata_are_refused() {
    let model = |mechanism| {
        LinearModel::new(
            vec![0.5, -0.25],
            crate::ModelMetadata {
                mechanism,
                loss: Loss::Logistic,
                regularization: 1e-3,
                features: 2,
                noise_groups: None,
                feature_map: None,
                crate_version: "test".into(),
            },
        )
    };
    let with_header = |payload: &[u8]| {
        let valid = model(Mechanism::NonPrivate).to_bytes().unwrap();
        let mut bytes = valid[..12].to_vec();
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        let checksum = payload.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        bytes.extend_from_slice(&checksum.to_le_bytes());
        bytes.extend_from_slice(payload);
        bytes
    };
    // A valid checksum over a payload whose first length prefix claims 2^40 elements.
    let mut hostile = vec![0xfd];
    hostile.extend_from_slice(&(1u64 << 40).to_le_bytes());
    hostile.extend_from_slice(&[0u8; 16]);
    assert!(LinearModel::from_bytes(&with_header(&hostile)).is_err());
    // Decodes fine, but ε = NaN or −5 is not a model this crate could have made.
    for epsilon in [f64::NAN, -5.0] {
        let bytes = model(Mechanism::OutputPerturbation { epsilon })
            .to_bytes()
            .unwrap();
        let err = LinearModel::from_bytes(&bytes).unwrap_err().to_string();
        assert!(err.contains("metadata out of range"), "{err}");
    }
    // Random corruption with a recomputed checksum never panics.
    let valid = model(Mechanism::NonPrivate).to_bytes().unwrap();
    let mut rng = InsecureSeededRng::new(33);
    for _ in 0..2000 {
        let mut payload = valid[28..].to_vec();
        let at = rng.random_range(0..payload.len());
        payload[at] = rng.random_range(0..=255u8);
        let _ = LinearModel::from_bytes(&with_header(&payload));
    }
}

#[test]
fn rejects_bad_public_bounds_intercepts_and_feature_counts() {
    let base = || {
        TrainingSet::builder(2)
            .dense_rows(vec![0.1, 0.2])
            .labels(vec![1.0])
    };
    for bounds in [vec![0.0, 1.0], vec![f64::NAN, 1.0], vec![1.0]] {
        assert!(
            base()
                .scale_by_public_bounds(bounds.clone())
                .build()
                .is_err(),
            "{bounds:?}"
        );
    }
    for constant in [f64::NAN, f64::INFINITY] {
        assert!(matches!(
            base().append_intercept(constant).build(),
            Err(ErmError::InvalidParameter { .. })
        ));
    }
    let duplicate = TrainingSet::builder(2)
        .sparse_rows(vec![vec![(0, 0.1), (0, 0.2)]])
        .labels(vec![1.0])
        .build();
    assert!(matches!(
        duplicate,
        Err(ErmError::RepeatedFeature { row: 0, col: 0 })
    ));
    assert!(matches!(
        TrainingSet::builder(0)
            .dense_rows(vec![])
            .labels(vec![])
            .build(),
        Err(ErmError::InvalidCount {
            what: "feature count",
            ..
        })
    ));
    let huge = TrainingSet::builder(usize::MAX)
        .sparse_rows(vec![vec![(0, 0.5)]])
        .labels(vec![1.0])
        .append_intercept(1.0)
        .build();
    assert!(
        matches!(
            huge,
            Err(ErmError::InvalidCount { .. } | ErmError::Optim(_))
        ),
        "{huge:?}"
    );
}

/// Norms of huge rows do not overflow: clipping keeps their direction, and a huge
/// intercept constant does not zero the other features.
#[test]
fn huge_values_are_scaled_not_destroyed() {
    let clipped = TrainingSet::builder(2)
        .dense_rows(vec![1e200, 1e200])
        .labels(vec![1.0])
        .clip_rows_to_unit_ball()
        .build()
        .unwrap();
    let margin = clipped.margins(&[1.0, 1.0])[0];
    assert!((margin - 2f64.sqrt()).abs() < 1e-9, "{margin}");
    let intercept = TrainingSet::builder(1)
        .dense_rows(vec![0.5])
        .labels(vec![1.0])
        .append_intercept(1e200)
        .build()
        .unwrap();
    let first_feature = intercept.margins(&[1.0, 0.0])[0];
    assert!(
        first_feature > 0.0 && first_feature.is_finite(),
        "{first_feature}"
    );
}

#[test]
fn fit_debug_does_not_show_the_noise() {
    let data = synthetic(50, 2, 34);
    let fit = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0)
        .fit(&data, &mut InsecureSeededRng::new(1))
        .unwrap();
    let shown = format!("{fit:?}");
    assert!(
        shown.contains("<not shown>")
            && !shown.contains(&fit.secret_noise_norm().unwrap().to_string())
    );
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<TrainingSet>();
    check::<ErmParams>();
    check::<Fit>();
    check::<LinearModel>();
    check::<ErmError>();
}
