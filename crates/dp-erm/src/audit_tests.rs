//! Empirical privacy audit of objective perturbation (docs/src/reference/privacy-testing.md §2), on the
//! dp-audit harness (runner, Clopper–Pearson bound, verdict). It stays in this crate's
//! tests, with dp-audit as a dev-dependency, because its mutation checks need the
//! test-only `fit_with_rate_factor`, which no public API offers.
//!
//! Two neighbouring datasets of n = 50 rows in one dimension differ only in the label of a
//! canary row `x* = e₁`. Each is trained on 10⁵ times with the public API; each model is
//! scored by its canary margin `f·x*`. A threshold chosen on half the runs turns the other
//! half's exceedance counts into a lower bound on the privacy loss,
//! `ε_LB = ln CP_low(p₀) − ln CP_high(p₁)` (Clopper–Pearson at confidence 1 − 1e-6 each).
//!
//! For the logistic loss, flipping the canary's label shifts the recovered noise by exactly
//! `x*` at every f (ℓ'(z) + ℓ'(−z) = −1) and leaves the Jacobian unchanged (ℓ'' is even),
//! so the best possible distinguisher of the exact minimizers reaches `β‖x*‖ = ε'/2`; the
//! minimizer noise (rate `ε₂/(2r)`) can add at most `ε₂` to that, so
//! `ε_pair = ε'/2 + ε₂`. The audit asserts `ε_LB ≤ ε_pair ≤ ε` and, so that it has power,
//! `ε_LB ≥ 0.8 ε'/2`; with half the noise (β = ε' instead of ε'/2, the classic missing
//! factor 2) the bound lands near ε' and the first assertion fails — the mutation check.
//!
//! The audit does not trust the code it audits: ε', Δ, β and ε₂ are computed here from
//! docs/src/reference/algorithms.md §4 ([`spec_calibration`]), not read from the mechanism, and the
//! mechanism's reported β must agree with them.
//!
//! For the Huber loss the shift lies between `x*` and `2x*` and the Jacobian changes too, so
//! `ε_pair` has no closed form. In one dimension every model is a monotone function of the
//! noise, and in the tails the Huber shift is exactly `x*` as for the logistic loss, so this
//! threshold audit measures about β for both losses (measured: 0.76 for β = 0.82, 0.45 for
//! β = 0.50). It asserts `ε_LB ≤ ε` and the power floor `ε_LB ≥ 0.8 β`. It can only see a
//! broken calibration once the shrunken noise's `β` exceeds ε, so its mutation check shrinks
//! the noise by the smallest power of two `k` with `0.9 k β > ε` (4 on the Δ = 0 branch, 8
//! on the Δ > 0 branch) — a weaker check than the logistic one, stated as such.

use dp_audit::{LowerBound, Verdict, judge};
use dp_noise::InsecureSeededRng;
use dp_noise::stats::clopper_pearson;

use crate::{ErmParams, Loss, Mechanism, ObjectiveCalibration, TrainingSet};

pub(crate) const ROWS: usize = 50;
pub(crate) const RUNS: usize = 100_000;
pub(crate) const ALPHA: f64 = 1e-6;

/// `ε_LB = ln((CP_low(p₀) − δ)/CP_high(p₁))` (docs/src/reference/privacy-testing.md §2) on the counts of
/// dp-audit's threshold bound (threshold chosen on half the runs, counted on the other
/// half; one-sided Clopper–Pearson at α each).
pub(crate) fn epsilon_lower_bound_at(bound: &LowerBound, delta: f64) -> f64 {
    let trials = bound.trials as u64;
    let (low, _) = clopper_pearson(bound.favoured_count as u64, trials, 2.0 * bound.alpha);
    let (_, high) = clopper_pearson(bound.other_count as u64, trials, 2.0 * bound.alpha);
    if low <= delta {
        0.0
    } else {
        ((low - delta) / high).ln().max(0.0)
    }
}

/// The neighbouring pair: 49 shared random rows, plus the canary `x* = 1` labelled +1 / −1
/// (dp-audit's standard audit dataset, built into this crate's own `TrainingSet`).
pub(crate) fn neighbours(seed: u64) -> (TrainingSet, TrainingSet) {
    let base = dp_audit::label_flip_canary(ROWS - 1, seed).unwrap();
    let build = |labels: Vec<f64>| {
        TrainingSet::builder(1)
            .sparse_rows(base.rows.clone())
            .labels(labels)
            .build()
            .unwrap()
    };
    let mut labels = base.labels.clone();
    let with_canary = build(labels.clone());
    *labels.last_mut().unwrap() = -1.0;
    (with_canary, build(labels))
}

/// Canary margins of `RUNS` models trained on `data` (dp-audit's runner: parallel runs,
/// per-run seeds).
fn canary_scores(params: &ErmParams, data: &TrainingSet, seed: u64, rate_factor: f64) -> Vec<f64> {
    dp_audit::run_scores(RUNS, seed, |rng| {
        let (fit, _) = params.fit_with_rate_factor(data, rng, rate_factor).unwrap();
        dp_audit::canary_margin(fit.model().weights(), &[(0, 1.0)], 1.0)
    })
    .unwrap()
}

/// Objective perturbation's noise as docs/src/reference/algorithms.md §4 states it, for total ε, n, Λ and
/// curvature bound c: ε₂ = ε/100 for the minimizer noise (`# Privacy` of `ErmParams`),
/// ε₁ = ε − ε₂ split by the rule into the Jacobian term and ε', β = ε'/2.
struct SpecCalibration {
    beta: f64,
    minimizer_epsilon: f64,
}

fn spec_calibration(
    epsilon: f64,
    n: f64,
    lambda: f64,
    c: f64,
    rule: ObjectiveCalibration,
) -> SpecCalibration {
    let minimizer_epsilon = epsilon / 100.0;
    let objective_epsilon = epsilon - minimizer_epsilon;
    let half_budget_delta = c / (n * (objective_epsilon / 4.0).exp_m1()) - lambda;
    let epsilon_prime = match rule {
        ObjectiveCalibration::Cms11 => {
            let plain = objective_epsilon
                - (1.0 + 2.0 * c / (n * lambda) + c * c / (n * n * lambda * lambda)).ln();
            if plain > 0.0 {
                plain
            } else {
                objective_epsilon / 2.0
            }
        }
        ObjectiveCalibration::CliffFree => {
            let delta = half_budget_delta.max(0.0);
            objective_epsilon - 2.0 * (c / (n * (lambda + delta))).ln_1p()
        }
    };
    SpecCalibration {
        beta: epsilon_prime / 2.0,
        minimizer_epsilon,
    }
}

struct Audit {
    bound: dp_audit::LowerBound,
    spec: SpecCalibration,
    epsilon: f64,
}

fn audit(params: &ErmParams, rule: ObjectiveCalibration, rate_factor: f64, seed: u64) -> Audit {
    let (with_canary, flipped) = neighbours(seed);
    let first = canary_scores(params, &with_canary, 10 * seed + 1, rate_factor);
    let second = canary_scores(params, &flipped, 10 * seed + 2, rate_factor);
    let Mechanism::ObjectivePerturbation { epsilon, .. } = params.mechanism() else {
        panic!("the audit is of objective perturbation");
    };
    let spec = spec_calibration(
        epsilon,
        ROWS as f64,
        params.regularization(),
        params.loss().curvature_bound(),
        rule,
    );
    // The mechanism's own report must agree with the spec (to rounding).
    let reported = params.noise_calibration(ROWS, 1).unwrap().unwrap();
    assert!(
        (reported.beta - spec.beta).abs() <= 1e-9 * spec.beta,
        "reported β {} vs spec β {}",
        reported.beta,
        spec.beta
    );
    dp_audit::require_power(RUNS, epsilon, ALPHA).unwrap();
    let bound = dp_audit::epsilon_lower_bound(&first, &second, ALPHA).unwrap();
    eprintln!(
        "audit {} Λ = {:e}, {rule:?}, noise rate ×{rate_factor}: ε_LB = {:.3}, \
         ε'/2 = {:.3}, ε_pair = {:.3}, ε = {epsilon}",
        params.loss().name(),
        params.regularization(),
        bound.epsilon,
        spec.beta,
        spec.beta + spec.minimizer_epsilon
    );
    Audit {
        bound,
        spec,
        epsilon,
    }
}

/// Λ = 0.1: the Δ = 0 branch; Λ = 1e-3: the Δ > 0 branch (n = 50, ε = 2).
const BRANCHES: [f64; 2] = [0.1, 1e-3];

fn logistic(lambda: f64) -> ErmParams {
    ErmParams::objective_perturbation(Loss::Logistic, lambda, 2.0)
        .objective_calibration(ObjectiveCalibration::Cms11)
}

/// The bound the best distinguisher of this pair reaches (logistic loss; module docs).
fn pair_epsilon(spec: &SpecCalibration) -> f64 {
    spec.beta + spec.minimizer_epsilon
}

#[test]
fn logistic_objective_perturbation_audit_reaches_but_never_exceeds_the_pair_bound() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let result = audit(
            &logistic(lambda),
            ObjectiveCalibration::Cms11,
            1.0,
            100 + i as u64,
        );
        let pair = pair_epsilon(&result.spec);
        let lb = result.bound.epsilon;
        assert!(
            lb <= pair && pair <= result.epsilon,
            "Λ = {lambda}: ε_LB {lb} vs ε_pair {pair}"
        );
        assert_eq!(
            judge(&result.bound, result.epsilon, Some(pair)).unwrap(),
            Verdict::Consistent
        );
        assert!(
            lb >= 0.8 * result.spec.beta,
            "Λ = {lambda}: audit lacks power, ε_LB {lb} vs ε'/2 = {}",
            result.spec.beta
        );
    }
}

/// Mutation check: with half the noise (β = ε' instead of ε'/2) the same audit exceeds the
/// pair bound computed from the spec.
#[test]
fn logistic_audit_catches_halved_noise() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let result = audit(
            &logistic(lambda),
            ObjectiveCalibration::Cms11,
            2.0,
            200 + i as u64,
        );
        assert!(
            result.bound.epsilon > pair_epsilon(&result.spec),
            "Λ = {lambda}: {}",
            result.bound.epsilon
        );
        assert_ne!(
            judge(
                &result.bound,
                result.epsilon,
                Some(pair_epsilon(&result.spec))
            )
            .unwrap(),
            Verdict::Consistent
        );
    }
}

fn huber(lambda: f64) -> ErmParams {
    ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), lambda, 2.0)
        .objective_calibration(ObjectiveCalibration::Cms11)
}

#[test]
fn huber_objective_perturbation_audit_stays_within_epsilon() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let result = audit(
            &huber(lambda),
            ObjectiveCalibration::Cms11,
            1.0,
            300 + i as u64,
        );
        let lb = result.bound.epsilon;
        assert!(lb <= result.epsilon, "Λ = {lambda}: ε_LB {lb} > ε");
        assert!(
            lb >= 0.8 * result.spec.beta,
            "Λ = {lambda}: audit lacks power, ε_LB {lb}, β {}",
            result.spec.beta
        );
    }
}

/// Mutation check: with the noise shrunk until its shift-x* loss exceeds ε (see the module
/// docs), the Huber audit exceeds ε.
#[test]
fn huber_audit_catches_noise_shrunk_past_epsilon() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let spec = spec_calibration(2.0, ROWS as f64, lambda, 1.0, ObjectiveCalibration::Cms11);
        let factor = (2.0 / (0.9 * spec.beta)).log2().ceil().exp2();
        let result = audit(
            &huber(lambda),
            ObjectiveCalibration::Cms11,
            factor,
            400 + i as u64,
        );
        let lb = result.bound.epsilon;
        assert!(lb > result.epsilon, "Λ = {lambda}, noise / {factor}: {lb}");
    }
}

/// The cliff-free calibration, audited the same way on the Δ > 0 side.
#[test]
fn cliff_free_logistic_audit_stays_within_the_pair_bound() {
    let rule = ObjectiveCalibration::CliffFree;
    let result = audit(&logistic(1e-3).objective_calibration(rule), rule, 1.0, 500);
    let lb = result.bound.epsilon;
    assert!(
        lb <= pair_epsilon(&result.spec) && lb >= 0.8 * result.spec.beta,
        "{lb}"
    );
}

/// Output perturbation on the label-flip pair at Λ = 10⁻³ (Huber): the idealized privacy
/// loss of the pair is `β‖f̂ − f̂'‖ ≈ 0.023`. An exact likelihood-ratio score computed from
/// the released doubles stays within it; the same score on the unrounded `fl(f̂ + b)` — the
/// release before `snap_to_grid`, rebuilt here from the secret noise — exceeds it by far:
/// the floating-point leak the rounding closes (the mutation check).
#[test]
fn output_perturbation_release_leaks_nothing_through_its_low_bits() {
    let params = ErmParams::output_perturbation(Loss::huber(0.5).unwrap(), 1e-3, 2.0);
    let (with_canary, flipped) = neighbours(7);
    let centre = |data: &TrainingSet| {
        params
            .fit(data, &mut InsecureSeededRng::new(0))
            .unwrap()
            .secret_solver_weights()[0]
    };
    let (a, b) = (centre(&with_canary), centre(&flipped));
    let beta = params.noise_calibration(ROWS, 1).unwrap().unwrap().beta;
    let pair = beta * (a - b).abs();
    let likelihood_ratio = |o: f64| (o - b).abs() - (o - a).abs();
    let scores = |data: &TrainingSet, seed: u64, snapped: bool| {
        dp_audit::run_scores(RUNS, seed, |rng| {
            let (fit, noise) = params.fit_revealing_noise(data, rng).unwrap();
            let released = if snapped {
                fit.model().weights()[0]
            } else {
                fit.secret_solver_weights()[0] + noise.unwrap()[0]
            };
            likelihood_ratio(released)
        })
        .unwrap()
    };
    let bound = |snapped: bool| {
        let first = scores(&with_canary, 71, snapped);
        let second = scores(&flipped, 72, snapped);
        dp_audit::epsilon_lower_bound(&first, &second, ALPHA)
            .unwrap()
            .epsilon
    };
    let (released, raw) = (bound(true), bound(false));
    eprintln!("output perturbation, pair ε {pair:.3}: released {released:.3}, unrounded {raw:.3}");
    assert!(released <= pair, "{released} > {pair}");
    assert!(
        raw > 2.0 * pair,
        "the unrounded sum should leak: {raw} vs {pair}"
    );
}

/// Mutation check for the missing 1/n: objective perturbation that sums the losses instead
/// of averaging them lets the data outweigh the noise n = 50 times over; the audit's bound
/// passes the pair bound (and the claim).
#[test]
fn logistic_audit_catches_the_missing_one_over_n() {
    let params = logistic(0.1);
    let (with_canary, flipped) = neighbours(600);
    let scores = |data: &TrainingSet, seed: u64| {
        dp_audit::run_scores(RUNS, seed, |rng| {
            let (fit, _) = params
                .fit_with(data, rng, crate::estimator::Mutation::SummedLoss)
                .unwrap();
            fit.model().weights()[0]
        })
        .unwrap()
    };
    let bound =
        dp_audit::epsilon_lower_bound(&scores(&with_canary, 601), &scores(&flipped, 602), ALPHA)
            .unwrap();
    let spec = spec_calibration(2.0, ROWS as f64, 0.1, 0.25, ObjectiveCalibration::Cms11);
    eprintln!(
        "summed loss: ε_LB = {:.3} against the pair bound {:.3}",
        bound.epsilon,
        pair_epsilon(&spec)
    );
    assert!(bound.epsilon > pair_epsilon(&spec), "{bound:?}");
}

/// Group-shaped noise (`ErmParams::group_noise`) in two dimensions forming one group: the
/// noise density is `∝ exp(−β(|b₁| + |b₂|))`, so the canary coordinate's noise is Laplace
/// and flipping the canary's label shifts it by exactly `‖x*‖_G = 1`: the best distinguisher
/// reaches the same `ε_pair = ε'/2 + ε₂` as the Euclidean audit. The shared rows alternate
/// between the two columns (one non-zero each, group norm ≤ 1).
fn grouped_audit(lambda: f64, rate_factor: f64, seed: u64) -> Audit {
    let (base, _) = neighbours(seed);
    let build = |canary_label: f64| {
        let mut rows: Vec<Vec<(usize, f64)>> = Vec::with_capacity(ROWS);
        let mut labels = base.labels().to_vec();
        for i in 0..ROWS - 1 {
            let entries = base.row_entries(i);
            rows.push(entries.iter().map(|&(_, v)| (i % 2, v)).collect());
        }
        rows.push(vec![(0, 1.0)]);
        *labels.last_mut().unwrap() = canary_label;
        TrainingSet::builder(2)
            .sparse_rows(rows)
            .labels(labels)
            .build()
            .unwrap()
    };
    let groups = dp_noise::FeatureGroups::new(&[0, 0]).unwrap();
    let params = logistic(lambda).group_noise(groups);
    let first = canary_scores(&params, &build(1.0), 10 * seed + 1, rate_factor);
    let second = canary_scores(&params, &build(-1.0), 10 * seed + 2, rate_factor);
    let spec = spec_calibration(2.0, ROWS as f64, lambda, 0.25, ObjectiveCalibration::Cms11);
    // The reported β is the one the grouped noise uses: the spec's, divided by 1 + 2e-12
    // for the rounding slack of the group-norm check.
    let reported = params.noise_calibration(ROWS, 2).unwrap().unwrap();
    let expected = spec.beta / (1.0 + 2e-12);
    assert!(
        (reported.beta - expected).abs() <= 1e-9 * expected,
        "reported β {} vs spec β {expected}",
        reported.beta
    );
    let bound = dp_audit::epsilon_lower_bound(&first, &second, ALPHA).unwrap();
    eprintln!(
        "grouped audit Λ = {lambda:e}, noise rate ×{rate_factor}: ε_LB = {:.3}, ε'/2 = {:.3}",
        bound.epsilon, spec.beta
    );
    Audit {
        bound,
        spec,
        epsilon: 2.0,
    }
}

#[test]
fn group_noise_audit_reaches_but_never_exceeds_the_pair_bound() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let result = grouped_audit(lambda, 1.0, 600 + i as u64);
        let (lb, pair) = (result.bound.epsilon, pair_epsilon(&result.spec));
        assert!(
            lb <= pair && pair <= result.epsilon,
            "Λ = {lambda}: {lb} vs {pair}"
        );
        assert!(
            lb >= 0.8 * result.spec.beta,
            "Λ = {lambda}: lacks power, {lb}"
        );
    }
}

/// Mutation check: group-shaped noise at half the scale exceeds the pair bound.
#[test]
fn group_noise_audit_catches_halved_noise() {
    for (i, lambda) in BRANCHES.into_iter().enumerate() {
        let result = grouped_audit(lambda, 2.0, 700 + i as u64);
        assert!(
            result.bound.epsilon > pair_epsilon(&result.spec),
            "Λ = {lambda}: {}",
            result.bound.epsilon
        );
    }
}
