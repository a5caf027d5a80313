//! Unlabelled rows, raw examples and the trainer trait.

use dp_noise::InsecureSeededRng;

use crate::{
    Classifier, ErmError, ErmParams, Examples, FeatureRow, Features, Loss, Trainer, TrainingSet,
};

const ROWS: [f64; 8] = [0.6, 0.75, -0.5, 0.1, 0.3, -0.9, -0.7, -0.2];
const LABELS: [f64; 4] = [1.0, -1.0, -1.0, -1.0];

fn training_set() -> TrainingSet {
    TrainingSet::builder(2)
        .dense_rows(ROWS.to_vec())
        .labels(LABELS.to_vec())
        .build()
        .unwrap()
}

#[test]
fn dense_and_sparse_features_hold_the_same_rows() {
    let dense = Features::dense(2, ROWS.to_vec()).unwrap();
    let sparse = Features::sparse(
        2,
        ROWS.chunks(2)
            .map(|r| vec![(1, r[1]), (0, r[0])]) // out of order on purpose
            .collect(),
    )
    .unwrap();
    assert_eq!((dense.len(), dense.features()), (4, 2));
    assert_eq!((sparse.len(), sparse.features()), (4, 2));
    let w = [0.25, -2.0];
    assert_eq!(dense.scores(&w).unwrap(), sparse.scores(&w).unwrap());
    let mut row = [0.0; 2];
    sparse.row(2).write_dense(&mut row);
    assert_eq!(row, [0.3, -0.9]);
    assert!(matches!(dense.row(3), FeatureRow::Dense(&[-0.7, -0.2])));
}

#[test]
fn select_picks_rows_in_order_and_refuses_bad_indices() {
    let features = Features::dense(2, ROWS.to_vec()).unwrap();
    let picked = features.select(&[3, 0, 3]).unwrap();
    assert_eq!(
        picked.dense_values().unwrap(),
        &[-0.7, -0.2, 0.6, 0.75, -0.7, -0.2]
    );
    let examples = Examples::new(features, LABELS.to_vec()).unwrap();
    assert_eq!(examples.select(&[0, 2]).unwrap().labels(), &[1.0, -1.0]);
    assert!(matches!(
        examples.select(&[4]),
        Err(ErmError::IndexOutOfRange { index: 4, .. })
    ));
    assert_eq!(examples.select(&[]), Err(ErmError::EmptyData));
}

#[test]
fn rejects_bad_features_naming_the_value() {
    assert_eq!(Features::dense(2, vec![]), Err(ErmError::EmptyData));
    assert_eq!(Features::sparse(2, vec![]), Err(ErmError::EmptyData));
    assert!(matches!(
        Features::dense(0, vec![1.0]),
        Err(ErmError::InvalidCount {
            what: "feature count",
            ..
        })
    ));
    assert!(matches!(
        Features::dense(1 << 40, vec![1.0]),
        Err(ErmError::InvalidCount {
            what: "feature count",
            ..
        })
    ));
    assert!(matches!(
        Features::dense(2, vec![1.0, 2.0, 3.0]),
        Err(ErmError::DimensionMismatch { found: 3, .. })
    ));
    assert!(matches!(
        Features::dense(2, vec![1.0, 2.0, f64::NAN, 0.0]),
        Err(ErmError::NonFiniteFeature { row: 1, col: 0, .. })
    ));
    assert!(matches!(
        Features::sparse(2, vec![vec![(0, 1.0)], vec![(1, f64::INFINITY)]]),
        Err(ErmError::NonFiniteFeature { row: 1, col: 1, .. })
    ));
    assert_eq!(
        Features::sparse(2, vec![vec![(2, 1.0)]]),
        Err(ErmError::FeatureIndexOutOfRange {
            row: 0,
            col: 2,
            features: 2
        })
    );
    assert_eq!(
        Features::sparse(3, vec![vec![(1, 1.0), (0, 2.0), (1, 3.0)]]),
        Err(ErmError::RepeatedFeature { row: 0, col: 1 })
    );
    // Raw inputs carry no norm contract.
    assert!(Features::dense(1, vec![1e300]).is_ok());
}

#[test]
fn rejects_bad_labels_and_wrong_dimensions() {
    let features = Features::dense(2, ROWS.to_vec()).unwrap();
    assert!(matches!(
        Examples::new(features.clone(), vec![1.0; 3]),
        Err(ErmError::DimensionMismatch { what: "labels", .. })
    ));
    assert!(matches!(
        Examples::new(features.clone(), vec![1.0, 0.0, 1.0, 1.0]),
        Err(ErmError::InvalidLabel { row: 1, .. })
    ));
    assert!(matches!(
        features.scores(&[1.0, 2.0, 3.0]),
        Err(ErmError::DimensionMismatch {
            expected: 3,
            found: 2,
            ..
        })
    ));
    let model = ErmParams::non_private(Loss::Logistic, 0.1)
        .fit(&training_set(), &mut InsecureSeededRng::new(1))
        .unwrap()
        .into_model();
    let wide = Features::dense(3, vec![0.1; 3]).unwrap();
    assert!(matches!(
        model.decision_values(&wide),
        Err(ErmError::DimensionMismatch { .. })
    ));
}

#[test]
fn rejects_raw_examples_outside_the_unit_ball_when_training_linearly() {
    let features = Features::dense(2, vec![0.6, 0.75, 3.0, 4.0]).unwrap();
    let examples = Examples::new(features, vec![1.0, -1.0]).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    let err = params
        .train(&examples, &mut InsecureSeededRng::new(1))
        .unwrap_err();
    assert!(matches!(err, ErmError::RowNormAboveOne { row: 1, norm } if norm == 5.0));
}

#[test]
fn rejects_bad_parameters_before_looking_at_the_data() {
    // The data would be refused too; the parameter refusal comes first.
    let features = Features::dense(1, vec![7.0]).unwrap();
    let examples = Examples::new(features, vec![1.0]).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 0.1, -1.0);
    let err = params
        .train(&examples, &mut InsecureSeededRng::new(1))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ErmError::InvalidParameter {
                what: "epsilon",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn erm_params_train_as_fit_does_and_report_their_epsilon() {
    let data = training_set();
    let examples = data.to_examples();
    assert_eq!(examples.labels(), &LABELS);
    for params in [
        ErmParams::non_private(Loss::Logistic, 0.1),
        ErmParams::output_perturbation(Loss::huber(0.5).unwrap(), 0.1, 0.7),
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 2.0),
    ] {
        let by_fit = params
            .fit(&data, &mut InsecureSeededRng::new(9))
            .unwrap()
            .into_model();
        let by_trait = params
            .train(&examples, &mut InsecureSeededRng::new(9))
            .unwrap();
        assert_eq!(by_fit, by_trait);
        assert_eq!(Trainer::epsilon(&params), by_fit.epsilon());
        assert_eq!(
            Classifier::mistakes(&by_trait, &examples).unwrap(),
            by_fit.mistakes(&data).unwrap()
        );
        let batch = by_trait.decision_values(examples.inputs()).unwrap();
        // Same values up to summation order (faer's product vs a plain dot product).
        for (a, b) in batch.iter().zip(by_fit.training_scores(&data).unwrap()) {
            assert!((a - b).abs() <= 1e-14 * b.abs().max(1.0), "{a} vs {b}");
        }
        assert_eq!(by_trait.input_features(), 2);
    }
    assert_eq!(
        Trainer::epsilon(&ErmParams::objective_perturbation(Loss::Logistic, 0.1, 2.0)),
        Some(2.0)
    );
    assert_eq!(
        Trainer::epsilon(&ErmParams::non_private(Loss::Logistic, 0.1)),
        None
    );
}

#[test]
fn large_batches_score_in_parallel_as_small_ones_do() {
    let n = 10_000;
    let values: Vec<f64> = (0..n * 3)
        .map(|k| ((k * 37 % 101) as f64) / 50.0 - 1.0)
        .collect();
    let features = Features::dense(3, values.clone()).unwrap();
    let w = [0.3, -0.2, 0.9];
    let expected: Vec<f64> = values
        .chunks(3)
        .map(|r| r.iter().zip(&w).map(|(a, b)| a * b).sum())
        .collect();
    assert_eq!(features.scores(&w).unwrap(), expected);
    let huge = Features::dense(1, vec![1.0, 1e308, 2.0]).unwrap();
    assert_eq!(
        huge.scores(&[1e10]),
        Err(ErmError::DecisionOverflow { row: 1 })
    );
}

#[test]
fn debug_shows_the_shape_only() {
    let features = Features::dense(2, vec![0.123456, 0.654321]).unwrap();
    let examples = Examples::new(features.clone(), vec![1.0]).unwrap();
    for text in [format!("{features:?}"), format!("{examples:?}")] {
        assert!(
            !text.contains("123456") && !text.contains("654321"),
            "{text}"
        );
        assert!(text.contains("rows: 1"), "{text}");
    }
}

#[test]
fn dense_matrix_training_sets_match_built_ones_and_are_checked() {
    let x = faer::Mat::from_fn(4, 2, |i, j| ROWS[2 * i + j]);
    let from_matrix = TrainingSet::from_dense_matrix(x, LABELS.to_vec()).unwrap();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    let a = params
        .fit(&from_matrix, &mut InsecureSeededRng::new(3))
        .unwrap();
    let b = params
        .fit(&training_set(), &mut InsecureSeededRng::new(3))
        .unwrap();
    assert_eq!(a.model(), b.model());

    let outside = faer::Mat::from_fn(3, 2, |i, j| if i == 1 { 0.8 } else { 0.1 * j as f64 });
    assert!(matches!(
        TrainingSet::from_dense_matrix(outside, vec![1.0; 3]),
        Err(ErmError::RowNormAboveOne { row: 1, .. })
    ));
    let nan = faer::Mat::from_fn(3, 2, |i, j| if (i, j) >= (1, 1) { f64::NAN } else { 0.1 });
    assert!(matches!(
        TrainingSet::from_dense_matrix(nan, vec![1.0; 3]),
        Err(ErmError::NonFiniteFeature { row: 1, col: 1, .. })
    ));
    assert_eq!(
        TrainingSet::from_dense_matrix(faer::Mat::zeros(0, 2), vec![]).unwrap_err(),
        ErmError::EmptyData
    );
    assert!(matches!(
        TrainingSet::from_dense_matrix(faer::Mat::zeros(2, 2), vec![1.0, 2.0]),
        Err(ErmError::InvalidLabel { row: 1, .. })
    ));
}

#[test]
fn raw_examples_train_as_built_training_sets_do_dense_or_sparse() {
    // Mostly-zero rows (stored sparse) and full rows (stored dense).
    let sparse_rows: Vec<Vec<(usize, f64)>> = (0..60)
        .map(|i| vec![(i % 7, 0.5 * ((i as f64) * 0.3).cos()), (7 + i % 5, 0.4)])
        .collect();
    let labels: Vec<f64> = (0..60)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 0.05, 1.0);
    let built = TrainingSet::builder(12)
        .sparse_rows(sparse_rows.clone())
        .labels(labels.clone())
        .build()
        .unwrap();
    let raw = Examples::new(Features::sparse(12, sparse_rows).unwrap(), labels.clone()).unwrap();
    let a = params
        .fit(&built, &mut InsecureSeededRng::new(4))
        .unwrap()
        .into_model();
    let b = params.train(&raw, &mut InsecureSeededRng::new(4)).unwrap();
    assert_eq!(a, b);
    let outside = Examples::new(
        Features::sparse(2, vec![vec![(0, 0.5)], vec![(1, 0.9), (0, 0.9)]]).unwrap(),
        vec![1.0, -1.0],
    )
    .unwrap();
    assert!(matches!(
        outside.to_training_set(),
        Err(ErmError::RowNormAboveOne { row: 1, .. })
    ));
}

/// A fit's end point moves with its solver's start (within the tolerance), so a start taken
/// from the data would tie a composition's models to every row: through the trait a warm
/// start is refused before any work, while a single fit accepts it.
#[test]
fn the_trainer_trait_refuses_warm_starts_but_single_fits_accept_them() {
    let examples =
        Examples::new(Features::dense(2, ROWS.to_vec()).unwrap(), LABELS.to_vec()).unwrap();
    let mut rng = InsecureSeededRng::new(9);
    for params in [
        ErmParams::non_private(Loss::Logistic, 0.1),
        ErmParams::output_perturbation(Loss::Logistic, 0.1, 1.0),
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0),
    ] {
        let warm = params.clone().warm_start(&[0.3, -0.2]);
        for refusal in [
            warm.check_shape(4, 2),
            Trainer::train(&warm, &examples, &mut rng).map(drop),
        ] {
            let err = refusal.unwrap_err();
            assert!(
                matches!(
                    err,
                    ErmError::MisplacedOption {
                        option: "a warm start",
                        ..
                    }
                ),
                "{err}"
            );
            assert!(err.to_string().contains("Trainer trait"), "{err}");
        }
        assert!(warm.fit(&training_set(), &mut rng).is_ok());
        assert!(Trainer::train(&params, &examples, &mut rng).is_ok());
    }
}
