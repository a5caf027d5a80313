//! Random stopping over regressors: the reported (ε, δ) against Liu–Talwar's formula
//! computed here, the score's sensitivity in units and one run's exact law on adversarial
//! neighbouring held-out parts (with the clamp-dropped and unscaled mutants caught), the
//! noise scale, refusals by name, and the budget charged once or not at all.

use dp_erm::TrainingSet;
use dp_erm::{ErmParams, Features, GaussianErm, Loss, RegressionSet, TargetClipping, TargetScale};
use dp_noise::{InsecureSeededRng, PrivacyBudget};
use rand::RngExt;

use super::*;
use crate::RandomStopping;

const BOUNDS: (f64, f64) = (-5.0, 3.0);
const UNITS: f64 = REGRESSION_SCORE_UNITS as f64;

fn scale() -> TargetScale {
    TargetScale::new(BOUNDS.0, BOUNDS.1).unwrap()
}

fn huber() -> Loss {
    Loss::huber_regression(1.0).unwrap()
}

fn pure(lambda: f64, epsilon: f64) -> ErmParams {
    ErmParams::objective_perturbation(huber(), lambda, epsilon)
}

/// A regressor fitted without noise to the scaled targets `slope·x₀`: a steep slope puts
/// its linear prediction at (1, 0) far outside the bounds; a large Λ keeps it near the
/// centre.
fn fitted(slope: f64, lambda: f64) -> RegressionModel {
    let (mut rows, mut targets) = (Vec::new(), Vec::new());
    for i in 0..300 {
        let x0 = (i as f64 / 300.0 - 0.5) * 0.5;
        rows.extend([x0, -0.2]);
        targets.push(scale().unscale(slope * x0));
    }
    let set = RegressionSet::new(
        TrainingSet::builder(2).dense_rows(rows),
        &targets,
        scale(),
        TargetClipping::Refuse,
    )
    .unwrap();
    ErmParams::non_private(huber(), lambda)
        .fit_regression(&set, &mut InsecureSeededRng::new(5))
        .unwrap()
        .into_model()
}

/// The score in units of `model` on `rows` with `targets` under `scoring`.
fn units(model: &RegressionModel, rows: &[f64], targets: &[f64], scoring: Scoring) -> i128 {
    let rows = Features::dense(2, rows.to_vec()).unwrap();
    held_out_units(model, &rows, targets, scale(), scoring)
}

/// The largest change of the score over neighbouring held-out parts: the fixed
/// adversarial pair (the last row (1, 0), its target at either bound) and random pairs
/// (rows in the unit ball, targets within the bounds, one row replaced).
fn largest_change(models: &[RegressionModel], scoring: Scoring) -> i128 {
    let rows = [0.2, 0.4, -0.5, 0.1, 1.0, 0.0];
    let mut largest = 0;
    for m in models {
        let (a, b) = (
            units(m, &rows, &[0.5, -1.0, BOUNDS.1], scoring),
            units(m, &rows, &[0.5, -1.0, BOUNDS.0], scoring),
        );
        largest = largest.max((a - b).abs());
    }
    let mut rng = InsecureSeededRng::new(11);
    for _ in 0..2_000 {
        let mut point = || {
            let angle: f64 = rng.random_range(0.0..std::f64::consts::TAU);
            let radius: f64 = rng.random_range(0.0..=1.0);
            let target: f64 = rng.random_range(BOUNDS.0..=BOUNDS.1);
            ([radius * angle.cos(), radius * angle.sin()], target)
        };
        let shared: Vec<_> = (0..4).map(|_| point()).collect();
        let (replaced, replacement) = (point(), point());
        let part = |last: ([f64; 2], f64)| {
            let mut rows: Vec<f64> = shared.iter().flat_map(|(x, _)| *x).collect();
            rows.extend(last.0);
            let mut targets: Vec<f64> = shared.iter().map(|(_, y)| *y).collect();
            targets.push(last.1);
            (rows, targets)
        };
        let ((x, y), (x2, y2)) = (part(replaced), part(replacement));
        for m in models {
            let change = (units(m, &x, &y, scoring) - units(m, &x2, &y2, scoring)).abs();
            largest = largest.max(change);
        }
    }
    largest
}

/// Liu–Talwar's guarantee, written out here from the paper and the cap's argument (not
/// through dp-tune's code): `ε = 3·max(ε_T, ε_S)`, `δ = (1 + e^ε)(1 − γ)^T`.
fn formula(candidates: &[f64], score: f64, gamma: f64, cap: usize) -> (f64, f64) {
    let epsilon = 3.0 * candidates.iter().fold(score, |a, &b| a.max(b));
    (
        epsilon,
        (1.0 + epsilon.exp()) * (1.0 - gamma).powf(cap as f64),
    )
}

#[test]
fn reports_liu_talwars_epsilon_and_the_caps_delta() {
    for (epsilons, score, gamma) in [
        ([0.2, 0.3], 0.25, 0.05),
        ([0.1, 0.1], 0.5, 0.2),
        ([1.5, 0.7], 1.0, 1.0 / 3.0),
    ] {
        let candidates = vec![pure(1e-2, epsilons[0]), pure(1e-1, epsilons[1])];
        let s = RegressionRandomStopping::new(candidates, score, gamma).unwrap();
        let cap = s.max_runs();
        let (epsilon, delta) = formula(&epsilons, score, gamma, cap);
        // Rounded up, never below the formula, and only by rounding.
        assert!(
            s.epsilon() >= epsilon && s.epsilon() <= epsilon * (1.0 + 1e-15),
            "{s:?}"
        );
        assert!(
            s.delta() >= delta && s.delta() <= delta * (1.0 + 1e-9),
            "{s:?}"
        );
        // The default cap: (1 − γ)^T at most 1e-9, and not far beyond the first T that is.
        assert!((1.0 - gamma).powf(cap as f64) <= 1e-9);
        assert!((1.0 - gamma).powf(cap as f64 - 2.0) > 1e-9, "{cap}");
        // The accounting is the classifiers': the same ε, δ and cap for the same claims.
        let classifiers = epsilons
            .iter()
            .map(|&e| ErmParams::objective_perturbation(Loss::Logistic, 1e-2, e))
            .collect();
        let c = RandomStopping::new(classifiers, score, gamma).unwrap();
        assert_eq!(
            (c.epsilon(), c.delta(), c.max_runs()),
            (s.epsilon(), s.delta(), cap)
        );
    }
}

#[test]
fn score_noise_is_the_units_over_the_score_epsilon() {
    for score in [0.05, 0.5, 2.0] {
        let s = RegressionRandomStopping::new(vec![pure(1e-2, 0.5)], score, 0.1).unwrap();
        let t = s.score_noise().scale();
        assert!(
            t >= UNITS / score && t <= UNITS / score * (1.0 + 1e-12),
            "{t}"
        );
    }
}

/// The score's change between neighbouring held-out parts is at most one row's worth of
/// units (and reaches it: the bound is tight); one run's noisy score then changes its law
/// by at most `e^{ε_S}` (exact discrete Laplace probabilities at the selection's own
/// noise scale). Dropping the clamp or the division by the width breaks both.
#[test]
fn one_runs_score_is_score_epsilon_dp_and_both_mutants_are_caught() {
    let steep = fitted(4.0, 1e-4);
    assert!(steep.weights()[0] > 2.0, "{:?}", steep.weights());
    let models = [steep, fitted(4.0, 10.0), fitted(-1.0, 1e-2)];
    let bounded = largest_change(&models, Scoring::Bounded);
    assert!(bounded <= REGRESSION_SCORE_UNITS as i128, "{bounded}");
    assert!(bounded as f64 > 0.99 * UNITS, "{bounded}");
    let score_epsilon = 0.8;
    let s = RegressionRandomStopping::new(vec![pure(1e-2, 0.5)], score_epsilon, 0.1).unwrap();
    let noise = s.score_noise();
    // The largest log-ratio of the laws of S + N and S' + N is at an output beyond both;
    // at output S it is ln P(N = 0) − ln P(N = S − S').
    let loss = |change: i128| noise.pmf(0).ln() - noise.pmf(change as i64).ln();
    assert!(
        loss(bounded) <= score_epsilon * (1.0 + 1e-12),
        "{}",
        loss(bounded)
    );
    for mutant in [Scoring::Unclamped, Scoring::Unnormalized] {
        let change = largest_change(&models, mutant);
        assert!(change as f64 > 1.5 * UNITS, "{mutant:?}: {change}");
        assert!(loss(change) > score_epsilon, "{mutant:?}: {}", loss(change));
    }
}

fn data(n: usize) -> RegressionData {
    let (mut rows, mut targets) = (Vec::with_capacity(2 * n), Vec::with_capacity(n));
    for i in 0..n {
        let (a, b) = ((i as f64 * 0.29).sin() * 0.6, (i as f64 * 0.13).cos() * 0.6);
        rows.extend([a, b]);
        targets.push(2.5 * a - 1.5 * b - 0.5 + 0.2 * (i as f64 * 1.3).sin());
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
fn a_selection_charges_once_and_releases_a_noisy_bounded_score() {
    let candidates = vec![pure(1e-3, 0.3), pure(1e-2, 0.3), pure(30.0, 0.3)];
    let s = RegressionRandomStopping::new(candidates, 0.3, 0.2)
        .unwrap()
        .with_holdout_fraction(0.2)
        .unwrap();
    let mut budget = PrivacyBudget::with_delta(2.0, 1e-5).unwrap();
    let out = s
        .select_charging(&data(2_000), &mut budget, &mut InsecureSeededRng::new(4))
        .unwrap();
    assert_eq!(
        (budget.spent(), budget.delta_spent()),
        (s.epsilon(), s.delta())
    );
    assert_eq!(budget.ledger().len(), 1);
    assert_eq!(out.held_out_rows(), 400);
    assert!(out.index() < 3);
    assert_eq!((out.epsilon(), out.delta()), (s.epsilon(), s.delta()));
    assert_eq!(out.noisy_score(), out.noisy_mistakes() as f64 / UNITS);
    // 400 terms in [0, 1] plus noise of scale 1/0.3 (in score units).
    assert!(
        out.noisy_score() > -60.0 && out.noisy_score() < 460.0,
        "{out:?}"
    );
}

#[test]
fn refusals_are_named_and_charge_nothing() {
    // An (ε, δ) regressor, by position: the pure accounting would not charge its δ.
    let gaussian = GaussianErm::objective_perturbation(huber(), 1e-2, 0.5, 1e-6);
    let refused = RegressionRandomStopping::new(vec![gaussian.clone(), gaussian], 0.5, 0.1);
    assert!(matches!(
        refused,
        Err(TuneError::CandidateNotPureEpsilon { candidate: 0, delta }) if delta == 1e-6
    ));
    for bad in [0.0, 5e-5, 1.5, f64::NAN] {
        let refused = RegressionRandomStopping::new(vec![pure(1e-2, 0.5)], 0.5, bad);
        assert!(
            matches!(
                refused,
                Err(TuneError::InvalidParameter {
                    what: "stop probability",
                    ..
                })
            ),
            "{bad}"
        );
    }
    // A score ε whose noise scale 2^20/ε would reach 2^63.
    let refused = RegressionRandomStopping::new(vec![pure(1e-2, 0.5)], 1e-14, 0.1);
    assert!(matches!(
        refused,
        Err(TuneError::InvalidParameter {
            what: "score epsilon",
            ..
        })
    ));
    let refused =
        RegressionRandomStopping::new(vec![ErmParams::non_private(huber(), 1.0)], 1.0, 0.1);
    assert!(matches!(
        refused,
        Err(TuneError::CandidateNotPrivate { candidate: 0 })
    ));
    let s = RegressionRandomStopping::new(vec![pure(1e-2, 0.5)], 0.5, 0.1).unwrap();
    let mut budget = PrivacyBudget::with_delta(5.0, 1e-5).unwrap();
    // Too few rows for the held-out part: refused before the charge.
    let refused = s.select_charging(&data(100), &mut budget, &mut InsecureSeededRng::new(1));
    assert!(matches!(
        refused,
        Err(TuneError::TooFewRowsToHoldOut { .. })
    ));
    // A pure-ε budget cannot pay for the cap's δ.
    let mut pure_budget = PrivacyBudget::new(5.0).unwrap();
    let refused = s.select_charging(&data(400), &mut pure_budget, &mut InsecureSeededRng::new(1));
    assert!(matches!(refused, Err(TuneError::Budget(_))));
    assert_eq!((budget.spent(), pure_budget.spent()), (0.0, 0.0));
    assert!(budget.ledger().is_empty() && pure_budget.ledger().is_empty());
}
