use super::*;
use crate::PrivacyBudget;

/// Published conversions of the CKS20 bound, from OpenDP's test suite (opendp/opendp,
/// Python `test_gaussian_curve`: a Gaussian of scale 4 on sensitivity 1, ρ = 1/32; Rust
/// `zcdp_delta` tests): (ρ, δ) → ε and (ρ, ε) → δ.
const PUBLISHED_EPSILON: [(f64, f64, f64); 1] = [(1.0 / 32.0, 1e-3, 0.6880024554878085)];
const PUBLISHED_DELTA: [(f64, f64, f64); 3] = [
    (1.0 / 32.0, 0.0, 0.1508457845622862),
    (0.05, 0.25, 8.17727531036956e-2),
    (0.5, 0.0, 0.5588356393474351),
];

/// The same bound recomputed here independently of the code under test, in the form of
/// Balle et al. 2020, Theorem 21 — `ε = αρ + ln((α−1)/α) − (ln δ + ln α)/(α−1)` — by brute
/// force over a fine grid of α.
fn brute_force_epsilon(rho: f64, delta: f64) -> f64 {
    brute_force_min(|a| a * rho + ((a - 1.0) / a).ln() - (delta.ln() + a.ln()) / (a - 1.0))
}

/// The minimum of `f` over α = 1 + e^s: a grid of step 10⁻⁴ in s over [−12, 8], then a
/// grid of step 10⁻⁸ around its best point.
fn brute_force_min(f: impl Fn(f64) -> f64) -> f64 {
    let at = |s: f64| f(1.0 + s.exp());
    let (_, best) = (1..200_000)
        .map(|i| i as f64 * 1e-4 - 12.0)
        .map(|s| (at(s), s))
        .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a });
    (-20_000..=20_000)
        .map(|j| at(best + j as f64 * 1e-8))
        .fold(f64::INFINITY, f64::min)
}

/// CKS20 Corollary 13 for δ, `δ = e^{(α−1)(αρ−ε)}/(α−1) · (1 − 1/α)^α`, brute force.
fn brute_force_delta(rho: f64, epsilon: f64) -> f64 {
    brute_force_min(|a| {
        ((a - 1.0) * (a * rho - epsilon)).exp() / (a - 1.0) * (1.0 - 1.0 / a).powf(a)
    })
    .min(1.0)
}

/// Whether a conversion reproduces every published ε and δ to 10⁻⁶, relative.
fn matches_published(
    epsilon_of: impl Fn(f64, f64) -> f64,
    delta_of: impl Fn(f64, f64) -> f64,
) -> bool {
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
    PUBLISHED_EPSILON
        .iter()
        .all(|&(rho, delta, eps)| close(epsilon_of(rho, delta), eps))
        && PUBLISHED_DELTA
            .iter()
            .all(|&(rho, eps, delta)| close(delta_of(rho, eps), delta))
}

#[test]
fn the_independent_recomputation_agrees_with_the_published_values() {
    assert!(matches_published(brute_force_epsilon, brute_force_delta));
}

#[test]
fn conversion_matches_published_values_and_never_undercuts_them() {
    let epsilon_of = |rho, delta| Zcdp::new(rho).unwrap().epsilon(delta).unwrap();
    let delta_of = |rho, eps| Zcdp::new(rho).unwrap().delta(eps).unwrap();
    assert!(matches_published(epsilon_of, delta_of));
    // Rounded in the safe direction: never below the bound's infimum, found here to a
    // relative 10⁻¹⁴ or so (the brute force's own rounding is a few ulps).
    for &(rho, delta, _) in &PUBLISHED_EPSILON {
        let exact = brute_force_epsilon(rho, delta);
        let ours = epsilon_of(rho, delta);
        assert!(
            ours >= exact * (1.0 - 1e-13),
            "{rho} {delta}: {ours} < {exact}"
        );
        assert!(
            ours <= exact * (1.0 + 1e-9),
            "{rho} {delta}: {ours} > {exact}"
        );
    }
    for &(rho, eps, _) in &PUBLISHED_DELTA {
        let exact = brute_force_delta(rho, eps);
        let ours = delta_of(rho, eps);
        assert!(
            ours >= exact * (1.0 - 1e-13),
            "{rho} {eps}: {ours} < {exact}"
        );
        assert!(
            ours <= exact * (1.0 + 1e-9),
            "{rho} {eps}: {ours} > {exact}"
        );
    }
}

/// Mutation check: Mironov's older RDP conversion (ε = αρ + ln(1/δ)/(α−1)), and a
/// conversion that forgets the `−ln α/(α−1)` term, both fail the published values.
#[test]
fn wrong_conversions_fail_the_published_values() {
    let grid = || (1..20_000).map(|i| 1.0 + (i as f64 * 1e-3 - 12.0).exp());
    let mironov = |rho: f64, delta: f64| {
        grid()
            .map(|a| a * rho - delta.ln() / (a - 1.0))
            .fold(f64::INFINITY, f64::min)
    };
    let mironov_delta = |rho: f64, eps: f64| {
        grid()
            .map(|a| ((a - 1.0) * (a * rho - eps)).exp())
            .fold(1.0, f64::min)
    };
    assert!(!matches_published(mironov, mironov_delta));
    let no_log_alpha = |rho: f64, delta: f64| {
        grid()
            .map(|a| a * rho + ((a - 1.0) / a).ln() - delta.ln() / (a - 1.0))
            .fold(f64::INFINITY, f64::min)
    };
    assert!(!matches_published(no_log_alpha, brute_force_delta));
}

/// The Gaussian mechanism of ρ = Δ²/(2σ²) is exactly `μ`-GDP with μ = Δ/σ (Balle & Wang
/// 2018, Theorem 8): `δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)`. No valid conversion from ρ
/// may certify a smaller δ than that mechanism really has.
#[test]
fn conversion_is_never_below_the_gaussian_mechanisms_exact_curve() {
    use statrs::distribution::{ContinuousCDF, Normal};
    let phi = |x: f64| Normal::standard().cdf(x);
    for mu in [0.05, 0.3, 1.0, 3.0] {
        let zcdp = Zcdp::gaussian(mu, 1.0).unwrap();
        for eps in [0.0, 0.1, 0.5, 1.0, 2.0, 5.0] {
            let exact = phi(mu / 2.0 - eps / mu) - eps.exp() * phi(-mu / 2.0 - eps / mu);
            let converted = zcdp.delta(eps).unwrap();
            assert!(
                converted >= exact,
                "mu {mu} eps {eps}: {converted} < {exact}"
            );
            // And not absurdly loose either (CKS20 is within a small factor here).
            assert!(
                converted <= 10.0 * exact + 1e-12,
                "mu {mu} eps {eps}: {converted} vs {exact}"
            );
        }
    }
}

#[test]
fn composition_adds_rho_rounding_up_and_gaussian_rho_is_an_upper_bound() {
    let a = Zcdp::new(0.1).unwrap();
    let b = Zcdp::new(0.2).unwrap();
    assert!(a.compose(b).rho() >= 0.1 + 0.2);
    let g = Zcdp::gaussian(1.0, 3.0).unwrap();
    assert!(g.rho() >= 1.0 / 18.0 && g.rho() <= 1.0 / 18.0 * (1.0 + 1e-15));
    assert_eq!(
        Zcdp::from_pure_epsilon(1.0).unwrap().rho(),
        0.5f64.next_up()
    );
    assert_eq!(a.renyi_divergence(2.0).unwrap(), 0.2f64.next_up());
    assert!(a.renyi_divergence(1.0).is_err());
}

#[test]
fn largest_rho_for_a_target_fits_and_is_tight() {
    for (eps, delta) in [
        (0.1, 1e-5),
        (1.0, 1e-5),
        (0.6880024554878085, 1e-3),
        (8.0, 1e-9),
    ] {
        let rho = Zcdp::largest_for(eps, delta).unwrap();
        assert!(rho.epsilon(delta).unwrap() <= eps);
        let above = Zcdp::new(rho.rho() * (1.0 + 1e-9)).unwrap();
        assert!(above.epsilon(delta).unwrap() > eps, "{eps} {delta}");
    }
    // The published pair round-trips to about ρ = 1/32.
    let rho = Zcdp::largest_for(0.6880024554878085, 1e-3).unwrap().rho();
    assert!((rho - 1.0 / 32.0).abs() < 1e-8, "{rho}");
}

#[test]
fn a_zcdp_budget_composes_tightly_and_refuses_overspending() {
    let mut budget = ZcdpBudget::new(1.0, 1e-5).unwrap();
    let limit = budget.rho_limit();
    // Ten equal Gaussian releases compose to exactly the limit's (ε, δ), where basic
    // composition of their (ε_i, δ/10) points would promise far more.
    let share = Zcdp::new(limit / 10.0 * (1.0 - 1e-12)).unwrap();
    for i in 0..10 {
        budget.spend(&format!("release {i}"), share).unwrap();
    }
    assert!(budget.spent_epsilon() <= 1.0);
    let basic: f64 = 10.0 * share.epsilon(1e-6).unwrap();
    assert!(basic > 2.0 * budget.spent_epsilon(), "{basic}");
    let err = budget.spend("one more", share).unwrap_err();
    assert!(matches!(err, NoiseError::RhoBudgetExceeded { .. }), "{err}");
    assert_eq!(budget.ledger().len(), 10);
    assert!(budget.spend_pure("pure", 1.0).is_err());
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(Zcdp::new(bad), Err(NoiseError::InvalidRho(_))));
    }
    for bad in [0.0, 1.0, -1e-9, f64::NAN] {
        assert!(matches!(
            ZcdpBudget::new(1.0, bad),
            Err(NoiseError::InvalidDelta(_))
        ));
    }
}

#[test]
fn a_pure_budget_refuses_a_zcdp_spend_and_an_approximate_one_takes_its_point() {
    let cost = Zcdp::gaussian(1.0, 5.0).unwrap();
    let mut pure = PrivacyBudget::new(10.0).unwrap();
    assert!(matches!(
        pure.spend_zcdp("gaussian", cost, 1e-6),
        Err(NoiseError::DeltaBudgetExceeded { limit, .. }) if limit == 0.0
    ));
    assert!(pure.spend_zcdp("gaussian", cost, 0.0).is_err());
    assert_eq!(pure.spent(), 0.0);
    let mut approx = PrivacyBudget::with_delta(10.0, 1e-5).unwrap();
    approx.spend_zcdp("gaussian", cost, 1e-6).unwrap();
    assert_eq!(approx.spent(), cost.epsilon(1e-6).unwrap());
    assert_eq!(approx.delta_spent(), 1e-6);
}
