//! Regression selection: the score's sensitivity on adversarial neighbouring held-out
//! parts (and the two mutants it must catch), the exponential mechanism's ratio on them,
//! and an end-to-end selection charging its budget.

use dp_erm::{Loss, TrainingSet};
use dp_noise::InsecureSeededRng;

use super::*;

const BOUNDS: (f64, f64) = (-4.0, 4.0);

fn scale() -> TargetScale {
    TargetScale::new(BOUNDS.0, BOUNDS.1).unwrap()
}

/// A model trained without noise on `n` rows whose scaled target is `slope·x₀`: its weight
/// on x₀ is near `slope`, so a held-out row (1, 0) has a linear prediction far outside the
/// bounds for a steep slope.
fn model(slope: f64, lambda: f64) -> RegressionModel {
    let n = 400;
    let mut rows = Vec::new();
    let mut targets = Vec::new();
    for i in 0..n {
        let x0 = (i as f64 / n as f64 - 0.5) * 0.4;
        rows.extend([x0, 0.1]);
        targets.push(scale().unscale(slope * x0));
    }
    let set = RegressionSet::new(
        TrainingSet::builder(2).dense_rows(rows),
        &targets,
        scale(),
        TargetClipping::Refuse,
    )
    .unwrap();
    ErmParams::non_private(Loss::huber_regression(1.0).unwrap(), lambda)
        .fit_regression(&set, &mut InsecureSeededRng::new(0))
        .unwrap()
        .into_model()
}

/// Two held-out parts differing in their last row: the same extreme row with a target at
/// either bound.
fn neighbours() -> ((Features, Vec<f64>), (Features, Vec<f64>)) {
    let rows = Features::dense(2, vec![0.3, 0.2, -0.1, 0.5, 1.0, 0.0]).unwrap();
    let d = (rows.clone(), vec![1.0, -2.0, BOUNDS.1]);
    let d_prime = (rows, vec![1.0, -2.0, BOUNDS.0]);
    (d, d_prime)
}

fn largest_change(scoring: Scoring, models: &[RegressionModel]) -> f64 {
    let ((x, y), (x2, y2)) = neighbours();
    models
        .iter()
        .map(|m| {
            (held_out_error(m, &x, &y, scale(), scoring)
                - held_out_error(m, &x2, &y2, scale(), scoring))
            .abs()
        })
        .fold(0.0, f64::max)
}

#[test]
fn the_score_moves_by_at_most_one_and_both_mutants_are_caught() {
    // A steep model (its linear prediction on (1, 0) is far above the bounds) and a flat
    // one (heavily regularized: near the bounds' centre).
    let steep = model(4.0, 1e-4);
    let flat = model(4.0, 10.0);
    assert!(steep.weights()[0] > 2.0, "{:?}", steep.weights());
    let models = [steep, flat];
    let bounded = largest_change(Scoring::Bounded, &models);
    assert!(bounded <= 1.0, "{bounded}");
    // The extreme row moves a clamped prediction's term from 0 to 1: the bound is tight.
    assert!(bounded > 0.99, "{bounded}");
    for mutant in [Scoring::Unclamped, Scoring::Unnormalized] {
        let change = largest_change(mutant, &models);
        assert!(change > 1.5, "{mutant:?}: {change}");
    }
    // The selection probabilities on the neighbours: within e^{ε} with the real score,
    // beyond it with either mutant (the sensitivity-1 calibration no longer holds).
    let epsilon = 1.0;
    let mechanism = ExponentialMechanism::new(epsilon, 1.0).unwrap();
    let ratio = |scoring| {
        let ((x, y), (x2, y2)) = neighbours();
        let p = |x: &Features, y: &[f64]| {
            let utilities: Vec<f64> = models
                .iter()
                .map(|m| -held_out_error(m, x, y, scale(), scoring))
                .collect();
            mechanism.selection_probabilities(&utilities).unwrap()
        };
        let (a, b) = (p(&x, &y), p(&x2, &y2));
        a.iter()
            .zip(&b)
            .map(|(p, q)| (p / q).max(q / p))
            .fold(0.0, f64::max)
    };
    assert!(ratio(Scoring::Bounded) <= epsilon.exp() * (1.0 + 1e-12));
    assert!(ratio(Scoring::Unclamped) > epsilon.exp());
    assert!(ratio(Scoring::Unnormalized) > epsilon.exp());
}

#[test]
fn a_score_that_cannot_be_computed_is_the_largest_term() {
    let model = model(1.0, 1e-2);
    let rows = Features::dense(2, vec![f64::MAX, f64::MAX]).unwrap();
    let score = held_out_error(&model, &rows, &[0.0], scale(), Scoring::Bounded);
    assert!((0.0..=1.0).contains(&score), "{score}");
}

fn data(n: usize) -> RegressionData {
    let mut rows = Vec::with_capacity(2 * n);
    let mut targets = Vec::with_capacity(n);
    for i in 0..n {
        let a = (i as f64 * 0.37).sin() * 0.6;
        let b = (i as f64 * 0.11).cos() * 0.6;
        rows.extend([a, b]);
        targets.push(3.0 * a - 2.0 * b + 0.3 * (i as f64 * 1.7).sin());
    }
    RegressionData::new(
        Features::dense(2, rows).unwrap(),
        &targets,
        scale(),
        TargetClipping::Refuse,
    )
    .unwrap()
}

#[test]
fn a_selection_charges_its_epsilon_and_prefers_the_better_regressors() {
    let loss = Loss::huber_regression(1.0).unwrap();
    let candidates: Vec<ErmParams> = [1e-3, 1e-2, 30.0]
        .into_iter()
        .map(|lambda| ErmParams::objective_perturbation(loss, lambda, 1.0))
        .collect();
    let tuning = RegressionSplitAndSelect::new(candidates, 1.0).unwrap();
    assert_eq!(tuning.epsilon(), 1.0);
    assert_eq!(tuning.delta(), 0.0);
    let data = data(8_000);
    let mut budget = PrivacyBudget::new(2.0).unwrap();
    let chosen = tuning
        .select_charging(&data, &mut budget, &mut InsecureSeededRng::new(3))
        .unwrap();
    assert_eq!(budget.spent(), 1.0);
    assert_eq!(chosen.validation_rows(), 2_000);
    assert!(chosen.index() < 3);
    let scores = chosen.secret_scores();
    // The over-regularized candidate predicts near the centre: the worst held-out score.
    assert!(scores[2] > scores[0].min(scores[1]), "{scores:?}");
    assert!(scores.iter().all(|&z| (0.0..=2_000.0).contains(&z)));
}

#[test]
fn refusals_come_before_any_draw_or_charge() {
    let loss = Loss::huber_regression(1.0).unwrap();
    let private = ErmParams::objective_perturbation(loss, 1e-2, 1.0);
    // Too few rows for the parts.
    let tuning =
        RegressionSplitAndSelect::new(vec![private.clone(), private.clone()], 1.0).unwrap();
    let mut budget = PrivacyBudget::new(1.0).unwrap();
    let refused = tuning.select_charging(&data(50), &mut budget, &mut InsecureSeededRng::new(1));
    assert!(matches!(refused, Err(TuneError::TooFewRows { .. })));
    assert_eq!(budget.spent(), 0.0);
    // A non-private candidate is refused when the list is frozen.
    let refused = RegressionSplitAndSelect::new(vec![ErmParams::non_private(loss, 1e-2)], 1.0);
    assert!(matches!(
        refused,
        Err(TuneError::CandidateNotPrivate { candidate: 0 })
    ));
    // A target outside the public bounds is refused by row, never by value.
    let error = RegressionData::new(
        Features::dense(1, vec![0.5, 0.2]).unwrap(),
        &[1.0, 99.25],
        scale(),
        TargetClipping::Refuse,
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("row 1") && !error.contains("99.25"),
        "{error}"
    );
    // The Gaussian regressors' δ is the selection's.
    let gaussian = GaussianErm::objective_perturbation(loss, 1e-2, 1.0, 1e-6);
    let tuning = RegressionSplitAndSelect::new(vec![gaussian], 0.5).unwrap();
    assert_eq!((tuning.epsilon(), tuning.delta()), (1.0, 1e-6));
}
