//! Every bad input the issue lists is refused with an error naming the value, never a
//! panic, before any expensive work.

use dp_erm::{ErmError, ErmParams, Loss};

use super::{examples, line_examples, rng, threshold_data};
use crate::{
    Ensemble, LaplaceAverage, LaplaceAverageEnsemble, LineData, MAX_CANDIDATES, MAX_PARTS,
    PredictError, PredictionInterface, PrivateThresholdLearner, SgdParams, SoftMajority,
    SoftMajorityEnsemble, StableErmParams, ThresholdErm, VoteKind, WalkParams, suggested_parts,
};

const BAD_EPSILONS: [f64; 5] = [0.0, -1.0, f64::NAN, f64::INFINITY, 1e4];

fn is_bad_parameter(e: &PredictError, what: &str) -> bool {
    matches!(e, PredictError::InvalidParameter { what: w, .. } if *w == what)
}

#[test]
fn rejects_empty_data() {
    assert_eq!(
        LineData::new(vec![], vec![]).unwrap_err(),
        PredictError::EmptyData
    );
    assert_eq!(
        StableErmParams::balanced_regularization(1.0, 1.0, 0).unwrap_err(),
        PredictError::EmptyData
    );
}

#[test]
fn rejects_too_few_rows_for_k_parts() {
    let data = line_examples(&threshold_data(7, 0.5, 0.0, 1));
    let err = Ensemble::train(&ThresholdErm, &data, 8, &mut rng(1)).unwrap_err();
    assert_eq!(err, PredictError::TooFewRows { rows: 7, parts: 8 });
    assert!(err.to_string().contains("7 training rows"));
    assert!(Ensemble::train(&ThresholdErm, &data, 0, &mut rng(1)).is_err());
    let too_many = Ensemble::train(&ThresholdErm, &data, MAX_PARTS + 1, &mut rng(1));
    assert!(matches!(too_many, Err(PredictError::TooLarge { .. })));
}

/// Training data with more than one feature is refused up front (before the shuffle and
/// any part trains), naming the training rows' features — not "the query".
#[test]
fn rejects_threshold_training_data_with_more_than_one_feature() {
    let data = examples(2, &[vec![0.5, 0.1], vec![-0.5, 0.2]], &[1.0, -1.0]);
    let err = Ensemble::train(&ThresholdErm, &data, 2, &mut rng(1)).unwrap_err();
    let PredictError::TrainerRefuses { message } = &err else {
        panic!("not refused up front: {err:?}");
    };
    assert!(
        message.contains("features per training row") && message.contains("found 2"),
        "{message}"
    );
    assert!(!err.to_string().contains("query"), "{err}");
    // Directly, too: the same refusal, from the sizes alone.
    let direct = dp_erm::Trainer::train(&ThresholdErm, &data, &mut rng(2)).unwrap_err();
    assert!(
        matches!(direct, PredictError::LengthMismatch { found: 2, .. }),
        "{direct:?}"
    );
    assert_eq!(
        dp_erm::Trainer::check_shape(&ThresholdErm, 0, 1).unwrap_err(),
        PredictError::EmptyData
    );
    assert!(matches!(
        dp_erm::Trainer::check_shape(&ThresholdErm, crate::MAX_POINTS + 1, 1),
        Err(PredictError::TooLarge { .. })
    ));
}

#[test]
fn rejects_alpha_outside_open_half() {
    for alpha in [0.0, 0.5, -0.1, 0.7, f64::NAN, f64::INFINITY] {
        let err = WalkParams::new(1.0, alpha).unwrap_err();
        assert!(is_bad_parameter(&err, "alpha"), "{alpha}: {err:?}");
        assert!(suggested_parts(1.0, alpha).is_err(), "{alpha}");
    }
}

#[test]
fn rejects_bad_epsilon_everywhere() {
    let data = threshold_data(20, 0.5, 0.0, 2);
    let rows = line_examples(&data);
    let ensemble = Ensemble::train(&ThresholdErm, &rows, 2, &mut rng(2)).unwrap();
    let unit = examples(1, &[vec![0.5], vec![-0.5]], &[1.0, -1.0]);
    for e in BAD_EPSILONS {
        assert!(
            is_bad_parameter(&WalkParams::new(e, 0.1).unwrap_err(), "epsilon"),
            "{e}"
        );
        assert!(is_bad_parameter(
            &SoftMajority::new(e).unwrap_err(),
            "epsilon"
        ));
        assert!(is_bad_parameter(
            &LaplaceAverage::new(e, 3).unwrap_err(),
            "epsilon"
        ));
        assert!(SoftMajorityEnsemble::new(ensemble.clone(), e).is_err());
        assert!(LaplaceAverageEnsemble::new(ensemble.clone(), e, VoteKind::Hard).is_err());
        assert!(PrivateThresholdLearner::new(e, vec![0.5]).is_err());
        let stable = StableErmParams::new(Loss::Logistic, 0.1, e).fit(&unit, &mut rng(1));
        assert!(is_bad_parameter(&stable.unwrap_err(), "epsilon"));
        let sgd = SgdParams::new(Loss::Logistic, 0.1, 1.0, e).fit(&unit);
        assert!(is_bad_parameter(&sgd.unwrap_err(), "epsilon"));
        assert!(suggested_parts(e, 0.1).is_err());
    }
}

#[test]
fn rejects_non_finite_points_naming_them() {
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = LineData::new(vec![0.1, bad], vec![true, false]).unwrap_err();
        assert!(
            matches!(
                err,
                PredictError::NonFinite {
                    what: "point",
                    index: 1,
                    ..
                }
            ),
            "{err:?}"
        );
    }
}

#[test]
fn rejects_unsorted_or_non_finite_candidates() {
    let err = PrivateThresholdLearner::new(1.0, vec![0.1, 0.3, 0.3]).unwrap_err();
    assert_eq!(
        err,
        PredictError::Unsorted {
            what: "candidate thresholds",
            index: 2,
            previous: 0.3,
            value: 0.3
        }
    );
    assert!(PrivateThresholdLearner::new(1.0, vec![0.5, 0.1]).is_err());
    assert!(PrivateThresholdLearner::new(1.0, vec![0.1, f64::NAN]).is_err());
    assert!(PrivateThresholdLearner::new(1.0, vec![]).is_err());
    let too_many = PrivateThresholdLearner::new(1.0, vec![0.0; MAX_CANDIDATES + 1]);
    assert!(matches!(too_many, Err(PredictError::TooLarge { .. })));
}

#[test]
fn rejects_mismatched_lengths() {
    let err = LineData::new(vec![0.1, 0.2], vec![true]).unwrap_err();
    assert!(matches!(
        err,
        PredictError::LengthMismatch {
            expected: 2,
            found: 1,
            ..
        }
    ));
    let average = LaplaceAverage::new(1.0, 3).unwrap();
    assert!(average.release(&[1.0, 0.0], &mut rng(1)).is_err());
}

#[test]
fn rejects_query_of_the_wrong_dimension_or_non_finite() {
    let unit = examples(
        2,
        &[
            vec![0.5, 0.1],
            vec![-0.5, 0.2],
            vec![0.3, -0.4],
            vec![-0.1, -0.6],
        ],
        &[1.0, -1.0, 1.0, -1.0],
    );
    let ensemble = Ensemble::train(
        &ErmParams::non_private(Loss::Logistic, 0.1),
        &unit,
        2,
        &mut rng(1),
    )
    .unwrap();
    let stable = StableErmParams::new(Loss::Logistic, 0.1, 1.0)
        .fit(&unit, &mut rng(1))
        .unwrap();
    let sgd = SgdParams::new(Loss::Logistic, 0.1, 1.0, 1.0)
        .fit(&unit)
        .unwrap();
    let mut r = rng(2);
    let wrong = PredictError::QueryDimension {
        expected: 2,
        found: 3,
    };
    let mut soft = PredictionInterface::new(
        SoftMajorityEnsemble::new(ensemble.clone(), 1.0).unwrap(),
        5.0,
    )
    .unwrap();
    assert_eq!(soft.answer(&[0.1, 0.2, 0.3], &mut r).unwrap_err(), wrong);
    assert!(matches!(
        soft.answer(&[0.1, f64::NAN], &mut r).unwrap_err(),
        PredictError::NonFinite { index: 1, .. }
    ));
    let mut average = PredictionInterface::new(
        LaplaceAverageEnsemble::new(ensemble, 1.0, VoteKind::Sigmoid).unwrap(),
        5.0,
    )
    .unwrap();
    assert_eq!(average.answer(&[0.1, 0.2, 0.3], &mut r).unwrap_err(), wrong);
    let mut stable = PredictionInterface::new(stable, 5.0).unwrap();
    assert_eq!(stable.answer(&[0.1, 0.2, 0.3], &mut r).unwrap_err(), wrong);
    assert!(stable.answer(&[f64::INFINITY, 0.0], &mut r).is_err());
    let mut sgd = PredictionInterface::new(sgd, 5.0).unwrap();
    assert_eq!(
        sgd.answer(&[0.1], &mut r).unwrap_err(),
        PredictError::QueryDimension {
            expected: 2,
            found: 1
        }
    );
    // None of the refusals was charged.
    assert_eq!(soft.budget().spent() + average.budget().spent(), 0.0);
    assert_eq!(stable.budget().spent() + sgd.budget().spent(), 0.0);
    let mut walk = PredictionInterface::new(
        WalkParams::new(1.0, 0.1)
            .unwrap()
            .fit(&threshold_data(10, 0.5, 0.0, 3))
            .unwrap(),
        5.0,
    )
    .unwrap();
    assert!(walk.answer(&f64::NAN, &mut r).is_err());
    assert_eq!(walk.budget().spent(), 0.0);
}

#[test]
fn rejects_step_size_above_the_stability_limit() {
    let unit = examples(1, &[vec![0.5]], &[1.0]);
    // Logistic: σ = 1/4, η ≤ 8/R². Huber h = 0.5: σ = 1, η ≤ 2/R². Rows are accepted up
    // to R = 1 + 1e-9, so η = 2/σ itself could expand a step by 1 + 4e-9.
    let limit = |two_over_sigma: f64| two_over_sigma / (1.0 + 1e-9_f64).powi(2);
    assert!(
        SgdParams::new(Loss::Logistic, limit(8.0) * (1.0 - 1e-12), 1.0, 1.0)
            .fit(&unit)
            .is_ok()
    );
    for step in [8.5, 8.0, limit(8.0) * (1.0 + 1e-12)] {
        let err = SgdParams::new(Loss::Logistic, step, 1.0, 1.0)
            .fit(&unit)
            .unwrap_err();
        assert!(is_bad_parameter(&err, "step size"), "{step}: {err:?}");
    }
    assert!(
        SgdParams::suggested_step(Loss::Logistic, 1e9, 1).unwrap() <= limit(8.0),
        "the suggestion keeps to the limit"
    );
    let huber = Loss::huber(0.5).unwrap();
    assert!(SgdParams::new(huber, 2.5, 1.0, 1.0).fit(&unit).is_err());
    assert!(SgdParams::new(huber, 2.0, 1.0, 1.0).fit(&unit).is_err());
    assert!(SgdParams::new(huber, 1.99, 1.0, 1.0).fit(&unit).is_ok());
    for bad in [0.0, -0.1, f64::NAN] {
        assert!(SgdParams::new(huber, bad, 1.0, 1.0).fit(&unit).is_err());
        assert!(SgdParams::new(huber, 0.1, bad, 1.0).fit(&unit).is_err());
    }
}

#[test]
fn rejects_rows_outside_the_unit_ball() {
    let data = examples(2, &[vec![0.5, 0.5], vec![0.9, 0.9]], &[1.0, -1.0]);
    let sgd = SgdParams::new(Loss::Logistic, 0.1, 1.0, 1.0)
        .fit(&data)
        .unwrap_err();
    assert!(
        matches!(
            sgd,
            PredictError::Erm(ErmError::RowNormAboveOne { row: 1, .. })
        ),
        "{sgd:?}"
    );
    let stable = StableErmParams::new(Loss::Logistic, 0.1, 1.0)
        .fit(&data, &mut rng(1))
        .unwrap_err();
    assert!(
        matches!(
            stable,
            PredictError::Erm(ErmError::RowNormAboveOne { row: 1, .. })
        ),
        "{stable:?}"
    );
}

#[test]
fn rejects_bad_regularization_and_tolerance() {
    let data = examples(1, &[vec![0.5], vec![-0.5]], &[1.0, -1.0]);
    for lambda in [0.0, -1.0, f64::NAN] {
        let params = StableErmParams::new(Loss::Logistic, lambda, 1.0);
        assert!(params.fit(&data, &mut rng(1)).is_err(), "{lambda}");
    }
    let loose = StableErmParams::new(Loss::Logistic, 0.1, 1.0).tolerance(1.0);
    assert!(loose.fit(&data, &mut rng(1)).is_err());
}

#[test]
fn rejects_a_walk_whose_clamp_is_beyond_exact_arithmetic() {
    // m = (2/ε)·ln(9) ≈ 4.4e16 ≥ 2^52 at ε = 1e-16: refused; at 1e-12 accepted.
    let err = crate::WalkParams::new(1e-16, 0.1).unwrap_err();
    assert!(err.to_string().contains("2^52"), "{err}");
    assert!(crate::WalkParams::new(1e-12, 0.1).is_ok());
}

/// What the trainer refuses from the parts' sizes or its input contract is refused before
/// anything is drawn or trained, as `TrainerRefuses`: a row of norm above 1 (named, for
/// the data's owner), Λ = 0, and a warm start (it would tie every part's model to the
/// data it came from).
#[test]
fn rejects_what_the_trainer_refuses_before_training() {
    let mut rows: Vec<Vec<f64>> = (0..40).map(|i| vec![0.5, 0.01 * i as f64]).collect();
    let labels: Vec<f64> = (0..40)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let fine = examples(2, &rows, &labels);
    rows[17] = vec![0.8, 0.7];
    let outlier = examples(2, &rows, &labels);
    let trainer = ErmParams::non_private(Loss::Logistic, 0.1);
    assert!(Ensemble::train(&trainer, &fine, 4, &mut rng(1)).is_ok());
    let err = Ensemble::train(&trainer, &outlier, 4, &mut rng(1)).unwrap_err();
    assert!(matches!(err, PredictError::TrainerRefuses { .. }), "{err}");
    assert!(err.to_string().contains("row 17"), "{err}");
    let unregularized = ErmParams::non_private(Loss::Logistic, 0.0);
    let err = Ensemble::train(&unregularized, &fine, 4, &mut rng(1)).unwrap_err();
    assert!(matches!(err, PredictError::TrainerRefuses { .. }), "{err}");
    assert!(err.to_string().contains("regularization"), "{err}");
    let warm = trainer.clone().warm_start(&[0.5, 0.0]);
    let err = Ensemble::train(&warm, &fine, 4, &mut rng(1)).unwrap_err();
    assert!(matches!(err, PredictError::TrainerRefuses { .. }), "{err}");
    assert!(err.to_string().contains("warm start"), "{err}");
}
