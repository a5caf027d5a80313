//! Random stopping with (ε, δ) candidates (`RandomStopping::approximate`, `calibrated`):
//! the reported ε against Papernot & Steinke's Theorem 2 and Balle et al.'s conversion
//! evaluated here from the papers' formulas, each with a mutant the comparison catches;
//! the δ split; calibration; refusals.

use dp_erm::{ErmError, Examples, GaussianErm, Loss, Trainer};
use dp_noise::{InsecureSeededRng, RdpCurve, ReleaseRng, Zcdp, default_orders};

use crate::test_trainers::Stump;
use crate::{CAP_DELTA_SHARE, RandomStopping, TuneError};

/// A trainer whose model ignores the data and whose claimed curve is ρ-zCDP's `λρ`
/// (true, since the model does not depend on the data).
#[derive(Debug, Clone)]
struct ZcdpTrainer {
    rho: f64,
    cut: f64,
}

impl Trainer for ZcdpTrainer {
    type Model = Stump;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        Some(1.0)
    }

    fn delta(&self) -> f64 {
        1e-6
    }

    fn rdp_curve(&self, orders: &[f64]) -> Option<RdpCurve> {
        RdpCurve::from_zcdp(Zcdp::new(self.rho).ok()?, orders).ok()
    }

    fn train(&self, _data: &Examples, _rng: &mut dyn ReleaseRng) -> Result<Stump, ErmError> {
        Ok(Stump::new(self.cut))
    }
}

/// Papernot–Steinke Theorem 2 with η = 1 (geometric K of mean 1/γ) on the curve `r`, made
/// non-decreasing from above, then Balle et al. 2020 Theorem 21 at δ, minimized over the
/// default orders. Written from the papers, not from the code under test.
fn paper_epsilon(r: impl Fn(f64) -> f64, gamma: f64, mean: f64, delta: f64) -> f64 {
    let orders = default_orders();
    let cross = orders
        .iter()
        .map(|&h| (1.0 - 1.0 / h) * r(h) + (1.0 / gamma).ln() / h)
        .fold(f64::INFINITY, f64::min);
    let tuned: Vec<f64> = orders
        .iter()
        .map(|&l| r(l) + 2.0 * cross + mean.ln() / (l - 1.0))
        .collect();
    (0..orders.len())
        .map(|i| {
            let l = orders[i];
            let value = tuned[i..].iter().copied().fold(f64::INFINITY, f64::min);
            value + (1.0 - 1.0 / l).ln() - (delta.ln() + l.ln()) / (l - 1.0)
        })
        .fold(f64::INFINITY, f64::min)
}

/// One run's curve from the spec: the largest of the candidates' `λρ` and the score's
/// `min(ε_S, λε_S²/2)`.
fn run_curve(rho: f64, score: f64) -> impl Fn(f64) -> f64 {
    move |l: f64| (l * rho).max(score.min(l * score * score / 2.0))
}

fn candidates(rhos: &[f64]) -> Vec<ZcdpTrainer> {
    rhos.iter()
        .enumerate()
        .map(|(i, &rho)| ZcdpTrainer { rho, cut: i as f64 })
        .collect()
}

fn close(reported: f64, expected: f64) -> bool {
    // The code evaluates at a γ lower by a relative 1e-12 and rounds every step up.
    reported >= expected && reported <= expected * (1.0 + 1e-9)
}

#[test]
fn epsilon_is_papernot_steinke_theorem_2_at_the_renyi_share_of_delta() {
    let delta = 1e-5;
    let rdp_delta = delta * (1.0 - CAP_DELTA_SHARE);
    for (rhos, score, gamma) in [
        (vec![0.01, 0.004, 0.02], 0.05, 0.1),
        (vec![0.5], 0.2, 0.5),
        // The score's pure curve dominates at every order here.
        (vec![1e-4, 2e-4], 0.3, 0.02),
        (vec![0.003; 5], 0.07, 1.0),
    ] {
        let largest = rhos.iter().copied().fold(0.0, f64::max);
        let selection =
            RandomStopping::approximate(candidates(&rhos), score, gamma, delta).unwrap();
        let expected = paper_epsilon(run_curve(largest, score), gamma, 1.0 / gamma, rdp_delta);
        assert!(
            close(selection.epsilon(), expected),
            "ρ {rhos:?}, ε_S {score}, γ {gamma}: reported {} expected {expected}",
            selection.epsilon()
        );
        assert!(selection.accounted_by_renyi());
        assert!(selection.delta() <= delta && selection.delta() >= rdp_delta * (1.0 - 1e-15));

        // Mutants the comparison catches: the score's curve left out, the largest candidate
        // left out (the first one's curve only), the number of runs ignored (E[K] = 1 and
        // no ln(1/γ) term), and the whole δ given to the conversion.
        let mutants = [
            paper_epsilon(|l| l * largest, gamma, 1.0 / gamma, rdp_delta),
            paper_epsilon(run_curve(rhos[0], score), gamma, 1.0 / gamma, rdp_delta),
            paper_epsilon(run_curve(largest, score), 1.0, 1.0, rdp_delta),
            paper_epsilon(run_curve(largest, score), gamma, 1.0 / gamma, delta),
        ];
        for (i, mutant) in mutants.into_iter().enumerate() {
            let same = (mutant - expected).abs() <= 1e-9 * expected;
            // A mutant may coincide with the truth where its change does not bind (the score
            // below the candidates, one candidate, γ = 1): it is caught where it binds.
            let binds = match i {
                0 => run_curve(largest, score)(2.0) > 2.0 * largest,
                1 => rhos[0] < largest,
                2 => gamma < 1.0,
                _ => true,
            };
            assert!(
                !binds || (!same && !close(selection.epsilon(), mutant)),
                "mutant {i} not caught for ρ {rhos:?}, γ {gamma}: {mutant} vs {expected}"
            );
        }
    }
}

#[test]
fn more_expected_runs_cost_more() {
    let at = |gamma: f64| {
        RandomStopping::approximate(candidates(&[0.01]), 0.1, gamma, 1e-5)
            .unwrap()
            .epsilon()
    };
    assert!(at(1.0) < at(0.5) && at(0.5) < at(0.1) && at(0.1) < at(0.01));
}

#[test]
fn the_cap_keeps_the_total_delta_within_the_one_asked() {
    for delta in [1e-3, 1e-5, 1e-9] {
        let selection =
            RandomStopping::approximate(candidates(&[0.02, 0.01]), 0.1, 0.05, delta).unwrap();
        let cap = selection.delta() - delta * (1.0 - CAP_DELTA_SHARE);
        assert!(
            selection.delta() <= delta,
            "δ {delta}: {}",
            selection.delta()
        );
        // The cap's δ, (1 + e^ε)(1 − γ)^T, is within half its share.
        let exact = (1.0 + selection.epsilon().exp()) * 0.95f64.powi(selection.max_runs() as i32);
        assert!(exact <= delta * CAP_DELTA_SHARE / 2.0 && cap >= exact * 0.999);
        // A smaller cap that would exceed the share is refused.
        let refused = RandomStopping::approximate(candidates(&[0.02]), 0.1, 0.05, delta)
            .unwrap()
            .with_max_runs(10);
        assert!(matches!(refused, Err(TuneError::DeltaTooLarge { .. })));
    }
}

fn gaussian_output(lambdas: &[f64], epsilon: f64, delta: f64) -> Vec<GaussianErm> {
    lambdas
        .iter()
        .map(|&l| GaussianErm::output_perturbation(Loss::Logistic, l, epsilon, delta))
        .collect()
}

#[test]
fn calibration_spends_all_of_the_total_and_no_more() {
    let lambdas = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2];
    for (total, delta, gamma) in [(1.0, 1e-5, 0.1), (0.3, 1e-6, 0.2), (4.0, 1e-5, 0.02)] {
        let mut steps = Vec::new();
        let selection = RandomStopping::calibrated(total, delta, gamma, |b| {
            steps.push(b);
            Ok::<_, TuneError>(gaussian_output(&lambdas, b, delta))
        })
        .unwrap();
        assert!(selection.epsilon() <= total && selection.delta() <= delta);
        // Within the bisection's resolution of the total: a step 10⁻⁶ larger overspends.
        let step = selection.training_epsilon();
        let larger = RandomStopping::approximate(
            gaussian_output(&lambdas, step * (1.0 + 1e-6), delta),
            selection.score_epsilon() * (1.0 + 1e-6),
            gamma,
            delta,
        )
        .unwrap();
        assert!(
            selection.epsilon() > total * 0.999,
            "{} of {total}",
            selection.epsilon()
        );
        assert!(larger.epsilon() >= selection.epsilon());
        // The score costs no more than the candidates at any order.
        let rho = Zcdp::largest_for(step, delta).unwrap().rho();
        let score = selection.score_epsilon();
        assert!(
            default_orders()
                .iter()
                .all(|&l| score.min(l * score * score / 2.0) <= l * rho)
        );
        assert!(steps.len() <= 80, "{} bisection steps", steps.len());
    }
}

#[test]
fn candidates_without_a_curve_are_refused_by_position() {
    let mut list = gaussian_output(&[1e-3, 1e-2], 0.5, 1e-6);
    list.push(GaussianErm::objective_perturbation(
        Loss::Logistic,
        1e-2,
        0.5,
        1e-6,
    ));
    let refused = RandomStopping::approximate(list, 0.1, 0.1, 1e-5);
    assert!(matches!(
        refused,
        Err(TuneError::CandidateWithoutCurve { candidate: 2 })
    ));
    // The pure-ε accounting still refuses every (ε, δ) candidate.
    let pure = RandomStopping::new(gaussian_output(&[1e-3], 0.5, 1e-6), 0.1, 0.1);
    assert!(matches!(
        pure,
        Err(TuneError::CandidateNotPureEpsilon { candidate: 0, .. })
    ));
    for delta in [0.0, -1e-5, 0.2, f64::NAN] {
        let refused = RandomStopping::approximate(candidates(&[0.01]), 0.1, 0.1, delta);
        assert!(
            matches!(
                refused,
                Err(TuneError::InvalidParameter { what: "delta", .. })
            ),
            "δ {delta}"
        );
    }
}

#[test]
fn pure_candidates_are_accepted_with_their_pure_curve() {
    // ε-DP candidates have min(ε, λε²/2) (dp-erm's default `rdp_curve`).
    let list = vec![dp_erm::ErmParams::objective_perturbation(
        Loss::Logistic,
        1e-2,
        0.1,
    )];
    let selection = RandomStopping::approximate(list, 0.1, 0.2, 1e-5).unwrap();
    let expected = paper_epsilon(
        run_curve(0.0, 0.1),
        0.2,
        5.0,
        1e-5 * (1.0 - CAP_DELTA_SHARE),
    );
    assert!(close(selection.epsilon(), expected));
}

#[test]
fn the_selection_runs_charges_and_releases_one_candidate() {
    // Rows in the unit ball (Gaussian ERM's contract): x = ±i/n, labelled by the sign.
    let n = 600;
    let values: Vec<f64> = (0..n).map(|i| (i as f64 - 300.0) / n as f64).collect();
    let labels = values
        .iter()
        .map(|&x| if x >= 0.0 { 1.0 } else { -1.0 })
        .collect();
    let data = Examples::new(dp_erm::Features::dense(1, values).unwrap(), labels).unwrap();
    let list = gaussian_output(&[1e-3, 1e-2, 1e-1], 1.0, 1e-6);
    let selection = RandomStopping::approximate(list, 0.2, 0.3, 1e-5).unwrap();
    let mut rng = InsecureSeededRng::new(7);
    let stopped = selection.select(&data, &mut rng).unwrap();
    assert!(stopped.index() < 3);
    assert_eq!(stopped.epsilon(), selection.epsilon());
    assert_eq!(stopped.delta(), selection.delta());
    let mut budget = dp_noise::PrivacyBudget::with_delta(2.0 * selection.epsilon(), 1e-5).unwrap();
    selection
        .select_charging(&data, &mut budget, &mut rng)
        .unwrap();
    assert_eq!(budget.spent(), selection.epsilon());
    assert_eq!(budget.delta_spent(), selection.delta());
    // A pure-ε budget refuses it, and nothing is spent.
    let mut pure = dp_noise::PrivacyBudget::new(10.0).unwrap();
    assert!(
        selection
            .select_charging(&data, &mut pure, &mut rng)
            .is_err()
    );
    assert_eq!(pure.spent(), 0.0);
}
