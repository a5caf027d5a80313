//! What the mechanisms are for: accurate answers where the data speak clearly, no data in
//! `Debug`, thread safety.

use dp_erm::{ErmParams, Loss};
use rand::RngExt;

use super::{examples, line_examples, rng, threshold_data};
use crate::{
    Ensemble, LaplaceAverageEnsemble, PredictionInterface, PrivateThresholdLearner, SgdParams,
    SoftMajorityEnsemble, StableErmParams, ThresholdErm, VoteKind, WalkParams, erm_threshold,
};

#[test]
fn walk_answers_match_a_clean_threshold_away_from_it() {
    let data = threshold_data(2000, 0.4, 0.0, 1);
    let params = WalkParams::new(1.0, 0.01).unwrap();
    let walk = params.fit(&data).unwrap();
    // m = 2 ln 99 ≈ 9.2: the walk needs ~2m ≈ 19 points (≈ 0.01 of the line) to climb.
    assert!((params.clamp_bound() - 2.0 * 99f64.ln()).abs() < 1e-12);
    for x in [0.0, 0.1, 0.3, 0.39] {
        let p = walk.secret_probability_of_one(x).unwrap();
        assert!((p - 0.01).abs() < 1e-6, "{x}: {p}");
    }
    for x in [0.42, 0.6, 0.99] {
        let p = walk.secret_probability_of_one(x).unwrap();
        assert!((p - 0.99).abs() < 1e-6, "{x}: {p}");
    }
    // Sampled answers follow it.
    let mut r = rng(2);
    let ones = (0..2000)
        .filter(|_| walk.answer(0.8, &mut r).unwrap())
        .count();
    assert!(ones > 1900, "{ones}");
}

#[test]
fn threshold_baselines_find_the_threshold() {
    let data = threshold_data(5000, 0.3, 0.0, 3);
    assert!((erm_threshold(&data).theta() - 0.3).abs() < 0.002);
    let candidates: Vec<f64> = (0..=1000).map(|k| k as f64 / 1000.0).collect();
    let learner = PrivateThresholdLearner::new(1.0, candidates).unwrap();
    let theta = learner.fit(&data, &mut rng(4)).unwrap().theta();
    assert!((theta - 0.3).abs() < 0.01, "{theta}");
}

#[test]
fn subsample_and_aggregate_answers_well_on_separable_data() {
    let data = line_examples(&threshold_data(3000, 0.5, 0.0, 5));
    let ensemble = Ensemble::train(&ThresholdErm, &data, 30, &mut rng(6)).unwrap();
    let soft = SoftMajorityEnsemble::new(ensemble.clone(), 1.0).unwrap();
    // All 30 votes agree far from θ: P[wrong] = 1/(1 + e^{15}).
    let p = soft.secret_probability_of_positive(&[0.9]).unwrap();
    assert!((p - 1.0 / (1.0 + (-15f64).exp())).abs() < 1e-6, "{p}");
    let mut average = PredictionInterface::new(
        LaplaceAverageEnsemble::new(ensemble, 1.0, VoteKind::Hard).unwrap(),
        100.0,
    )
    .unwrap();
    let mut r = rng(7);
    let right = (0..100)
        .filter(|_| average.answer(&[0.9], &mut r).unwrap().label == 1.0)
        .count();
    assert!(right >= 90, "{right}");
}

/// Noisy linear data in the unit ball: stable ERM and projected SGD answer most queries
/// right at ε = 1.
#[test]
fn score_mechanisms_answer_well_on_linear_data() {
    let mut r = rng(8);
    let n = 20_000;
    let mut rows = Vec::new();
    let mut labels = Vec::new();
    for _ in 0..n {
        let x = [r.random_range(-0.7..0.7), r.random_range(-0.7..0.7)];
        labels.push(if x[0] + 0.5 * x[1] > 0.0 { 1.0 } else { -1.0 });
        rows.push(x.to_vec());
    }
    let data = examples(2, &rows, &labels);
    let lambda = StableErmParams::balanced_regularization(10.0, 1.0, n).unwrap();
    let stable = StableErmParams::new(Loss::Logistic, lambda, 1.0)
        .fit(&data, &mut rng(9))
        .unwrap();
    let step = SgdParams::suggested_step(Loss::Logistic, 10.0, n).unwrap();
    let sgd = SgdParams::new(Loss::Logistic, step, 10.0, 1.0)
        .fit(&data)
        .unwrap();
    let mut stable = PredictionInterface::new(stable, 1000.0).unwrap();
    let mut sgd = PredictionInterface::new(sgd, 1000.0).unwrap();
    let (mut right_stable, mut right_sgd) = (0, 0);
    for (x, &y) in rows.iter().zip(&labels).take(1000) {
        right_stable += usize::from(stable.answer(x, &mut r).unwrap().label == y);
        right_sgd += usize::from(sgd.answer(x, &mut r).unwrap().label == y);
    }
    assert!(right_stable > 800, "{right_stable}");
    assert!(right_sgd > 800, "{right_sgd}");
}

#[test]
fn debug_output_shows_no_data() {
    let data = threshold_data(50, 0.5, 0.0, 10);
    let secret = data.points()[7];
    let walk = WalkParams::new(1.0, 0.1).unwrap().fit(&data).unwrap();
    let ensemble = Ensemble::train(&ThresholdErm, &line_examples(&data), 5, &mut rng(1)).unwrap();
    let soft = SoftMajorityEnsemble::new(ensemble, 1.0).unwrap();
    let unit = examples(1, &[vec![secret], vec![-0.5]], &[1.0, -1.0]);
    let stable = StableErmParams::new(Loss::Logistic, 0.1, 1.0)
        .fit(&unit, &mut rng(1))
        .unwrap();
    let sgd = SgdParams::new(Loss::Logistic, 0.1, 1.0, 1.0)
        .fit(&unit)
        .unwrap();
    let weight = stable.secret_model().weights()[0];
    let shown = format!(
        "{data:?} {walk:?} {soft:?} {stable:?} {sgd:?} {:?}",
        PredictionInterface::new(walk.clone(), 1.0).unwrap()
    );
    for value in [secret, weight, sgd.secret_weights()[0]] {
        assert!(!shown.contains(&format!("{value}")), "{value} in {shown}");
    }
    assert!(
        shown.contains("ExponentialWalk") && shown.contains("len: 50"),
        "{shown}"
    );
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<crate::ExponentialWalk>();
    check::<crate::StableErm>();
    check::<crate::ProjectedSgd>();
    check::<SoftMajorityEnsemble<dp_erm::LinearModel>>();
    check::<LaplaceAverageEnsemble<dp_erm::LinearModel>>();
    check::<PredictionInterface<crate::ExponentialWalk>>();
    check::<crate::PredictError>();
    let _ = ErmParams::non_private(Loss::Logistic, 0.1);
}

/// Unions of intervals: the same walk, label 1 on [0.2, 0.4) ∪ [0.7, 0.8); away from the
/// four switches (about 2m points each) the answers follow the labels.
#[test]
fn walk_answers_unions_of_intervals() {
    let mut r = rng(11);
    let points: Vec<f64> = (0..20_000).map(|_| r.random::<f64>()).collect();
    let inside = |x: f64| (0.2..0.4).contains(&x) || (0.7..0.8).contains(&x);
    let labels = points.iter().map(|&x| inside(x)).collect();
    let data = crate::LineData::new(points, labels).unwrap();
    let walk = WalkParams::new(1.0, 0.01).unwrap().fit(&data).unwrap();
    for x in [0.1, 0.25, 0.35, 0.5, 0.65, 0.75, 0.9] {
        let p = walk.secret_probability_of_one(x).unwrap();
        let expected = if inside(x) { 0.99 } else { 0.01 };
        assert!((p - expected).abs() < 1e-6, "{x}: {p}");
    }
}

/// Huge finite queries: whether `⟨w, x⟩` overflows depends on w, that is on the data, so
/// an error (or a changed score) there would be a data-dependent output outside ε. Every
/// mechanism must answer them on both datasets of a neighbouring pair, and scaling must
/// keep the direction (found by review: `[1e200, 0]` scored 0, `f64::MAX`-sized queries
/// failed on one dataset and answered on the other).
#[test]
fn huge_queries_answer_on_neighbouring_datasets_alike() {
    let rows: Vec<Vec<f64>> = (0..40)
        .map(|i| {
            vec![
                0.9 * ((i as f64) * 0.37).cos(),
                0.9 * ((i as f64) * 0.37).sin(),
            ]
        })
        .collect();
    let labels: Vec<f64> = rows
        .iter()
        .map(|r| if r[0] > 0.0 { 1.0 } else { -1.0 })
        .collect();
    let mut neighbour_labels = labels.clone();
    neighbour_labels[0] = -neighbour_labels[0];
    let huge = [
        vec![f64::MAX, f64::MAX],
        vec![f64::MAX / 3.0, -1e300],
        vec![1e200, 0.0],
        vec![-5e-324, 1e308],
    ];
    for labels in [&labels, &neighbour_labels] {
        let data = examples(2, &rows, labels);
        let stable = StableErmParams::new(Loss::Logistic, 1e-3, 1.0)
            .fit(&data, &mut rng(3))
            .unwrap();
        let sgd = SgdParams::new(Loss::Logistic, 0.5, 10.0, 1.0)
            .fit(&data)
            .unwrap();
        // Scaling into the unit ball keeps the direction: [1e200, 0] scores as [1, 0].
        let unit = stable.secret_score(&[1.0, 0.0]).unwrap();
        let far = stable.secret_score(&[1e200, 0.0]).unwrap();
        assert!(
            (far - unit).abs() <= 1e-12 * unit.abs().max(1.0),
            "{far} vs {unit}"
        );
        let ensemble = Ensemble::train(
            &ErmParams::non_private(Loss::Logistic, 1e-6),
            &data,
            4,
            &mut rng(4),
        )
        .unwrap();
        let mut soft = PredictionInterface::new(
            SoftMajorityEnsemble::new(ensemble.clone(), 1.0).unwrap(),
            100.0,
        )
        .unwrap();
        let mut average = PredictionInterface::new(
            LaplaceAverageEnsemble::new(ensemble, 1.0, VoteKind::Sigmoid).unwrap(),
            100.0,
        )
        .unwrap();
        let mut stable = PredictionInterface::new(stable, 100.0).unwrap();
        let mut sgd = PredictionInterface::new(sgd, 100.0).unwrap();
        let mut r = rng(5);
        for x in &huge {
            stable.answer(x, &mut r).unwrap();
            sgd.answer(x, &mut r).unwrap();
            soft.answer(x, &mut r).unwrap();
            average.answer(x, &mut r).unwrap();
        }
    }
}

/// A query whose rounded norm is 1 but whose exact norm is above: the score's sensitivity
/// `‖w − w'‖·‖x‖` needs `‖x‖ ≤ 1` exactly, so the query must be scaled. A rounded
/// `‖x‖ ≤ 1` test (the earlier code) let it through unchanged and scored it 1 here.
#[test]
fn a_query_an_ulp_outside_the_unit_ball_is_scaled_into_it() {
    let x: [f64; 2] = [1.0, 1e-9];
    assert_eq!(
        (x[0] * x[0] + x[1] * x[1]).sqrt(),
        1.0,
        "rounds to the unit sphere"
    );
    assert!(!dp_erm::within_unit_ball(&x));
    // With w = e₁ the score is x's first coordinate, which is < 1 for every point of the
    // closed unit ball with a non-zero second coordinate.
    let score = crate::stable::score_in_unit_ball(&[1.0, 0.0], &x);
    assert!(score < 1.0, "score {score} of a query outside the ball");
    assert!(score > 1.0 - 1e-12, "score {score}: scaled, not zeroed");
    // Inside the ball the query is used as it is.
    assert_eq!(
        crate::stable::score_in_unit_ball(&[2.0, 3.0], &[0.5, 0.25]),
        1.75
    );
}
