//! Batch scoring of plain rows and logistic class probabilities.

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use crate::{
    Classifier, ErmError, ErmParams, Features, LinearModel, Loss, Probabilities, TrainingSet,
    logistic_probability,
};

const D: usize = 5;

/// `n` rows of `D` values in [−scale, scale], with every third value zero (for sparse storage).
fn rows(n: usize, scale: f64, seed: u64) -> Vec<f64> {
    let mut rng = InsecureSeededRng::new(seed);
    (0..n * D)
        .map(|k| {
            if k % 3 == 0 {
                0.0
            } else {
                scale * (2.0 * rng.random::<f64>() - 1.0)
            }
        })
        .collect()
}

/// A model trained (non-privately) with `loss` on a noisy linear rule.
fn model(loss: Loss) -> LinearModel {
    let values: Vec<f64> = rows(400, 0.4, 1);
    let labels = values
        .chunks(D)
        .enumerate()
        .map(|(i, x)| {
            let flip = i % 7 == 0;
            if (x[1] - x[2] + 0.5 * x[4] >= 0.0) != flip {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let data = TrainingSet::builder(D)
        .dense_rows(values)
        .labels(labels)
        .build()
        .unwrap();
    ErmParams::non_private(loss, 1e-3)
        .fit(&data, &mut InsecureSeededRng::new(2))
        .unwrap()
        .into_model()
}

fn sparse(values: &[f64]) -> Features {
    let rows = values
        .chunks(D)
        .map(|x| {
            x.iter()
                .enumerate()
                .filter(|(_, v)| **v != 0.0)
                .map(|(j, &v)| (j, v))
                .collect()
        })
        .collect();
    Features::sparse(D, rows).unwrap()
}

#[test]
fn batches_equal_row_by_row_dense_and_sparse_serial_and_parallel() {
    let model = model(Loss::Logistic);
    // 5,000 rows take the parallel path, 50 the serial one.
    for n in [50, 5000] {
        let values = rows(n, 3.0, 3);
        for batch in [Features::dense(D, values.clone()).unwrap(), sparse(&values)] {
            let scores = model.decision_values(&batch).unwrap();
            let labels = model.predictions(&batch).unwrap();
            let probabilities = model.probabilities(&batch).unwrap();
            for (i, x) in values.chunks(D).enumerate() {
                assert_eq!(scores[i], model.decision_function(x).unwrap(), "row {i}");
                assert_eq!(
                    labels[i],
                    Classifier::predict(&model, x).unwrap(),
                    "row {i}"
                );
                assert_eq!(probabilities[i], model.predict_proba(x).unwrap(), "row {i}");
            }
        }
    }
}

#[test]
fn probabilities_lie_in_the_open_interval_and_agree_with_labels() {
    let model = model(Loss::Logistic);
    // Scale 1e6 drives scores far beyond where σ rounds to 0 or 1 in doubles.
    for scale in [0.1, 3.0, 1e6] {
        let batch = Features::dense(D, rows(2000, scale, 4)).unwrap();
        let probabilities = model.probabilities(&batch).unwrap();
        let labels = model.predictions(&batch).unwrap();
        let scores = model.decision_values(&batch).unwrap();
        for ((&p, &label), &s) in probabilities.iter().zip(&labels).zip(&scores) {
            assert!(p > 0.0 && p < 1.0, "p = {p} at score {s}");
            if p > 0.5 {
                assert_eq!(label, 1.0, "p = {p}, score {s}");
            }
            if p < 0.5 {
                assert_eq!(label, -1.0, "p = {p}, score {s}");
            }
        }
        // Both classes occur, so the checks above were not vacuous.
        assert!(labels.contains(&1.0) && labels.contains(&-1.0), "{scale}");
    }
}

#[test]
fn logistic_probability_is_the_sigmoid_without_overflow() {
    assert_eq!(logistic_probability(0.0), 0.5);
    for s in [0.3_f64, 2.0, 10.0, 30.0] {
        let exact = 1.0 / (1.0 + (-s).exp());
        assert!((logistic_probability(s) - exact).abs() < 1e-15, "{s}");
        // σ(−s) = e^{−s}/(1 + e^{−s}) keeps its relative precision where 1 − σ(s) would not.
        let low = logistic_probability(-s);
        let low_exact = (-s).exp() / (1.0 + (-s).exp());
        assert!(((low - low_exact) / low_exact).abs() < 1e-15, "{s}");
    }
    assert_eq!(logistic_probability(-800.0), f64::MIN_POSITIVE);
    assert_eq!(logistic_probability(f64::MAX), 1.0 - f64::EPSILON / 2.0);
    assert!(logistic_probability(-700.0) > 0.0 && logistic_probability(-700.0) < 1e-300);
    // Monotone through 0, with the tie rule of the documentation.
    assert!(logistic_probability(-1e-20) <= 0.5 && logistic_probability(1e-20) >= 0.5);
}

#[test]
fn huber_svm_asks_for_probabilities_get_an_error() {
    let model = model(Loss::huber(0.5).unwrap());
    let batch = Features::dense(D, rows(10, 1.0, 5)).unwrap();
    let expected = ErmError::NoProbabilities {
        loss: "huber(h=0.5)".into(),
    };
    assert_eq!(model.probabilities(&batch), Err(expected.clone()));
    assert_eq!(model.predict_proba(&[0.0; D]), Err(expected.clone()));
    // Decided from the model alone: a malformed row does not change the answer.
    assert_eq!(model.predict_proba(&[0.0; 2]), Err(expected.clone()));
    assert!(expected.to_string().contains("huber"), "{expected}");
    // Labels and scores still work.
    assert_eq!(model.predictions(&batch).unwrap().len(), 10);
}

#[test]
fn rejects_rows_of_the_wrong_dimension() {
    let model = model(Loss::Logistic);
    let narrow = Features::dense(D - 1, rows(3, 1.0, 6)[..3 * (D - 1)].to_vec()).unwrap();
    for result in [
        model.probabilities(&narrow),
        model.decision_values(&narrow),
        model.predictions(&narrow),
    ] {
        assert_eq!(
            result,
            Err(ErmError::DimensionMismatch {
                what: "features of the rows",
                expected: D,
                found: D - 1,
            })
        );
    }
    assert_eq!(
        model.predict_proba(&[0.1; D + 1]),
        Err(ErmError::DimensionMismatch {
            what: "row",
            expected: D,
            found: D + 1,
        })
    );
}

#[test]
fn rejects_non_finite_entries() {
    let model = model(Loss::Logistic);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let mut x = [0.1; D];
        x[3] = bad;
        assert!(
            matches!(
                model.predict_proba(&x),
                Err(ErmError::NonFiniteFeature { col: 3, .. })
            ),
            "{bad}"
        );
        let mut values = rows(4, 1.0, 7);
        values[2 * D + 1] = bad;
        assert!(matches!(
            Features::dense(D, values),
            Err(ErmError::NonFiniteFeature { row: 2, col: 1, .. })
        ));
    }
}

#[test]
fn rejects_scores_that_overflow_instead_of_guessing_a_probability() {
    let model = model(Loss::Logistic);
    let batch = Features::dense(D, vec![f64::MAX; 2 * D]).unwrap();
    assert!(matches!(
        model.probabilities(&batch),
        Err(ErmError::DecisionOverflow { row: 0 })
    ));
}
