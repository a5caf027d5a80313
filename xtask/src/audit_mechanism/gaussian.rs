//! The (ε, δ) mechanisms of `cargo xtask audit mechanism`: dp-erm's `GaussianErm`
//! (objective perturbation, logistic and Huber; output perturbation, logistic) at
//! (ε, δ) = (2, 10⁻⁵) on the same label-flip pair as the pure-ε audits (replace one
//! record), scored by the canary margin (in one dimension every release is monotone in the
//! noise, so a threshold on it is the best test).
//!
//! The bound is δ-aware (docs/src/reference/privacy-testing.md §2): on dp-audit's counts,
//! `ε_LB = ln((CP_low(p₀) − δ)/CP_high(p₁))`, 0 where `CP_low(p₀) ≤ δ`.
//!
//! The pair's ε at δ, where the proof gives it in closed form:
//! - logistic objective perturbation: the label flip shifts the recovered noise by exactly
//!   `x*` (ℓ'(z) + ℓ'(−z) = −1) and leaves the Jacobian unchanged (ℓ'' even), so the exact
//!   minimizer is a Gaussian mechanism of shift 1/σ; the minimizer noise adds ε/100 to ε and
//!   multiplies δ by e^{ε/200}: `ε_AG(1/σ, δe^{−ε₂/2}) + ε₂`;
//! - output perturbation: the release is a discrete Gaussian on a grid 2⁻³⁰σ fine around
//!   the snapped solver point, which the flip moves by the solver points' distance (plus
//!   the certified slack `2(γ + 10⁻¹²)/Λ` and a grid step): the continuous Gaussian's
//!   `ε_AG(shift/σ, δ)` (Balle & Wang 2018, Theorem 8), a reference rather than a proof for
//!   the discrete noise;
//! - Huber objective perturbation: the shift lies between `x*` and `2x*` and the Jacobian
//!   changes; no closed form, only the claim is checked.

use dp_audit::{LowerBound, canary_margin, epsilon_lower_bound, judge, run_scores};
use dp_erm::{ErmParams, GaussianCalibration, GaussianErm, Loss, TrainingSet};
use dp_noise::InsecureSeededRng;
use dp_noise::stats::{clopper_pearson, normal_upper_tail};

use super::{ALPHA, Branch, EPSILON};

/// The δ of every (ε, δ) audit.
pub const DELTA: f64 = 1e-5;

/// The Gaussian mechanisms' names.
pub const NAMES: [&str; 3] = [
    "gaussian-objective-logistic",
    "gaussian-objective-huber",
    "gaussian-output-logistic",
];

/// The audited mechanism at Λ, or `None` for a name not listed in [`NAMES`].
pub fn params(name: &str, lambda: f64) -> Option<GaussianErm> {
    let huber = Loss::huber(0.5).ok()?;
    Some(match name {
        "gaussian-objective-logistic" => {
            GaussianErm::objective_perturbation(Loss::Logistic, lambda, EPSILON, DELTA)
        }
        "gaussian-objective-huber" => {
            GaussianErm::objective_perturbation(huber, lambda, EPSILON, DELTA)
        }
        "gaussian-output-logistic" => {
            GaussianErm::output_perturbation(Loss::Logistic, lambda, EPSILON, DELTA)
        }
        _ => return None,
    })
}

/// `ε_LB` at δ from the bound's counts (0 when `CP_low(p₀) ≤ δ`).
pub fn epsilon_at_delta(bound: &LowerBound, delta: f64) -> f64 {
    let trials = bound.trials as u64;
    let (low, _) = clopper_pearson(bound.favoured_count as u64, trials, 2.0 * bound.alpha);
    let (_, high) = clopper_pearson(bound.other_count as u64, trials, 2.0 * bound.alpha);
    if low <= delta {
        0.0
    } else {
        ((low - delta) / high).ln().max(0.0)
    }
}

/// The ε at δ of a Gaussian shift of `mu` standard deviations (Balle & Wang 2018,
/// Theorem 8: `δ(ε) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)`), bisected and returned from the
/// side whose δ is at most the target.
pub fn gaussian_shift_epsilon(mu: f64, delta: f64) -> f64 {
    let delta_at = |e: f64| {
        normal_upper_tail(e / mu - mu / 2.0) - e.exp() * normal_upper_tail(e / mu + mu / 2.0)
    };
    let (mut low, mut high) = (0.0f64, 100.0f64);
    for _ in 0..200 {
        let middle = (low + high) / 2.0;
        if delta_at(middle) > delta {
            low = middle;
        } else {
            high = middle;
        }
    }
    high
}

/// The pair's ε at δ (module docs), how it was derived.
fn pair_epsilon(
    name: &str,
    params: &GaussianErm,
    calibration: &GaussianCalibration,
    first: &TrainingSet,
    second: &TrainingSet,
) -> Result<(Option<f64>, &'static str), dp_erm::ErmError> {
    let sigma = calibration.sigma;
    if name == "gaussian-objective-logistic" {
        let share = calibration.minimizer_noise.map_or(0.0, |m| m.epsilon);
        let delta = DELTA * (-share / 2.0).exp();
        return Ok((
            Some(gaussian_shift_epsilon(1.0 / sigma, delta) + share),
            "ε_AG(1/σ, δe^{−ε₂/2}) + ε₂ (the flip shifts the noise by x*)",
        ));
    }
    if name == "gaussian-output-logistic" {
        let lambda = params.regularization();
        let centre = |data: &TrainingSet| -> Result<f64, dp_erm::ErmError> {
            Ok(ErmParams::non_private(params.loss(), lambda)
                .fit(data, &mut InsecureSeededRng::new(0))?
                .model()
                .weights()[0])
        };
        let shift = (centre(first)? - centre(second)?).abs();
        let slack = 2.0 * (calibration.tolerance + 1e-12) / lambda + calibration.release_grid;
        return Ok((
            Some(gaussian_shift_epsilon((shift + slack) / sigma, DELTA)),
            "ε_AG(shift/σ, δ), shift the solver points' distance plus slack",
        ));
    }
    Ok((None, "no closed form"))
}

/// One branch of a Gaussian audit: δ-aware bound, verdict against (ε, pair ε).
pub fn audit_branch(
    name: &str,
    lambda: f64,
    runs: usize,
    base_seed: u64,
    first: &TrainingSet,
    second: &TrainingSet,
) -> Result<Branch, Box<dyn std::error::Error>> {
    let params = params(name, lambda).ok_or("not a Gaussian mechanism")?;
    let calibration = params.calibration(first.len(), first.features())?;
    let (pair, how) = pair_epsilon(name, &params, &calibration, first, second)?;
    let score = |data: &TrainingSet, run_seed: u64| {
        run_scores(runs, run_seed, |rng| match params.fit(data, rng) {
            Ok((model, _)) => canary_margin(model.weights(), &[(0, 1.0)], 1.0),
            Err(_) => f64::NAN,
        })
    };
    let (a, b) = (score(first, base_seed + 1)?, score(second, base_seed + 2)?);
    let mut bound = epsilon_lower_bound(&a, &b, ALPHA)?;
    bound.epsilon = epsilon_at_delta(&bound, DELTA);
    let verdict = judge(&bound, EPSILON, pair)?;
    Ok(Branch {
        bound,
        verdict,
        pair_epsilon: pair,
        how_pair_epsilon: how,
        score: "canary margin",
        claimed_delta: DELTA,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shift curve's ε meets its δ (the definition, evaluated here with the normal
    /// CDF) and is the smallest that does.
    #[test]
    fn gaussian_shift_epsilon_meets_its_delta() {
        for (mu, delta) in [(1.0, 1e-5), (0.2, 1e-3), (3.0, 1e-6)] {
            let e = gaussian_shift_epsilon(mu, delta);
            let phi = |x: f64| normal_upper_tail(-x);
            let at = |e: f64| phi(mu / 2.0 - e / mu) - e.exp() * phi(-mu / 2.0 - e / mu);
            assert!(at(e) <= delta * (1.0 + 1e-9), "{mu}: δ {} at {e}", at(e));
            assert!(at(e * (1.0 - 1e-6)) > delta, "{mu}: {e} not the smallest");
        }
    }

    /// Subtracting δ lowers the bound, and to 0 once the favoured rate's lower end is ≤ δ.
    #[test]
    fn delta_aware_bound_subtracts_delta() {
        let bound = LowerBound {
            epsilon: 1.0,
            threshold: 0.0,
            tail: dp_audit::Tail::Above,
            favours_first: true,
            favoured_count: 3000,
            other_count: 1000,
            trials: 10_000,
            alpha: ALPHA,
        };
        let (pure, small, large) = (
            epsilon_at_delta(&bound, 0.0),
            epsilon_at_delta(&bound, 1e-5),
            epsilon_at_delta(&bound, 0.5),
        );
        assert!(
            pure > small && small > 0.8 && large == 0.0,
            "{pure} {small} {large}"
        );
    }
}
