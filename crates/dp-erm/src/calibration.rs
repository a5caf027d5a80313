//! Noise calibration of output and objective perturbation (ALGORITHMS.md §3–§4), every
//! rounding in the safe direction.

use serde::{Deserialize, Serialize};

use crate::ErmError;

/// How objective perturbation splits ε between the noise and the Jacobian term.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ObjectiveCalibration {
    /// CMS11 Algorithm 2 as published: `ε' = ε − ln(1 + 2c/(nΛ) + c²/(n²Λ²))`; if that is
    /// not positive, add `Δ = c/(n(e^{ε/4} − 1)) − Λ` and use `ε' = ε/2`. The default, for
    /// reproduction. It has a cliff: when ε' comes out positive but tiny, the noise explodes.
    #[default]
    Cms11,
    /// `Δ = max(0, c/(n(e^{ε/4} − 1)) − Λ)`, `ε' = ε − 2 ln(1 + c/(n(Λ+Δ)))`: never below
    /// ε/2, no cliff. Equally ε-DP (any Δ ≥ 0 with ε' > 0 is, by the same proof).
    CliffFree,
}

/// The noise parameters a private fit used. The noise vector itself is secret and never
/// reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseCalibration {
    /// The ε of the guarantee.
    pub epsilon: f64,
    /// The part of ε spent on the noise density (objective perturbation), or ε (output).
    pub epsilon_prime: f64,
    /// Extra regularization Δ added by objective perturbation (0 for output perturbation).
    pub extra_regularization: f64,
    /// Rate of the noise density `∝ exp(−β‖b‖)`.
    pub beta: f64,
    /// L2 sensitivity the noise covers (output perturbation), if any.
    pub l2_sensitivity: Option<f64>,
}

/// Objective perturbation's (ε', Δ, β) for `n` examples, regularization Λ and curvature
/// bound c.
pub fn objective_perturbation(
    epsilon: f64,
    examples: usize,
    regularization: f64,
    curvature: f64,
    rule: ObjectiveCalibration,
) -> Result<NoiseCalibration, ErmError> {
    let n = examples as f64;
    // 2 ln(1 + c/(n(Λ+Δ))) = ln((1 + c/(n(Λ+Δ)))²), the Jacobian term, rounded up: the
    // product, quotient and ln_1p each err by an ulp or so; 16 ulps cover them.
    let jacobian = |total_regularization: f64| {
        2.0 * (curvature / (n * total_regularization)).ln_1p() * (1.0 + 16.0 * f64::EPSILON)
    };
    // c/(n(e^{ε/4} − 1)): the total regularization that makes the Jacobian term exactly ε/2.
    let half_budget_regularization = curvature / (n * (epsilon / 4.0).exp_m1());
    let (extra_regularization, epsilon_prime) = match rule {
        ObjectiveCalibration::Cms11 => {
            let epsilon_prime = (epsilon - jacobian(regularization)).next_down();
            if epsilon_prime > 0.0 {
                (0.0, epsilon_prime)
            } else {
                (
                    (half_budget_regularization - regularization).next_up(),
                    (epsilon / 2.0).next_down(),
                )
            }
        }
        ObjectiveCalibration::CliffFree => {
            let extra = (half_budget_regularization - regularization).max(0.0);
            let extra = if extra > 0.0 { extra.next_up() } else { 0.0 };
            (
                extra,
                (epsilon - jacobian(regularization + extra)).next_down(),
            )
        }
    };
    // Whatever the rule, ε' never exceeds ε minus the Jacobian term at the total
    // regularization the solver will actually receive, fl(Λ + Δ).
    let epsilon_prime =
        epsilon_prime.min((epsilon - jacobian(regularization + extra_regularization)).next_down());
    if !(epsilon_prime > 0.0 && extra_regularization >= 0.0 && extra_regularization.is_finite()) {
        return Err(ErmError::InvalidParameter {
            what: "epsilon",
            value: epsilon,
            requirement: "large enough for a positive noise budget at this n and regularization",
        });
    }
    Ok(NoiseCalibration {
        epsilon,
        epsilon_prime,
        extra_regularization,
        beta: (epsilon_prime / 2.0).next_down(),
        l2_sensitivity: None,
    })
}

/// Output perturbation's sensitivity `2L/(nΛ) + 2γ/Λ` (ALGORITHMS.md §3, γ the certified
/// gradient tolerance) and rate `β = ε / sensitivity`.
pub fn output_perturbation(
    epsilon: f64,
    examples: usize,
    regularization: f64,
    lipschitz: f64,
    tolerance: f64,
) -> NoiseCalibration {
    let exact_part = 2.0 * lipschitz / (examples as f64 * regularization);
    let solver_part = 2.0 * tolerance / regularization;
    let l2_sensitivity = (exact_part + solver_part).next_up().next_up();
    NoiseCalibration {
        epsilon,
        epsilon_prime: epsilon,
        extra_regularization: 0.0,
        beta: (epsilon / l2_sensitivity).next_down(),
        l2_sensitivity: Some(l2_sensitivity),
    }
}
