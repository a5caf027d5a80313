//! Noise calibration of output and objective perturbation (docs/src/reference/algorithms.md §3–§4), every
//! rounding in the safe direction.

use dp_noise::rounding::add_step_up;
use serde::{Deserialize, Serialize};

use crate::ErmError;

/// How objective perturbation splits ε between the noise and the Jacobian term. Model
/// files store it by a fixed code (`Cms11` 0, `CliffFree` 1), not by declaration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ObjectiveCalibration {
    /// CMS11 Algorithm 2 as published: `ε' = ε − ln(1 + 2c/(nΛ) + c²/(n²Λ²))`; if that is
    /// not positive, add `Δ = c/(n(e^{ε/4} − 1)) − Λ` and use `ε' = ε/2`. Kept for
    /// reproducing the papers (`reproduce linear` uses it). It has a cliff: when ε' comes out
    /// positive but tiny, the noise explodes, so a larger ε can give a worse model.
    Cms11,
    /// `Δ = max(0, c/(n(e^{ε/4} − 1)) − Λ)`, `ε' = ε − 2 ln(1 + c/(n(Λ+Δ)))`: never below
    /// ε/2, no cliff. Equally ε-DP (any Δ ≥ 0 with ε' > 0 is, by the same proof). The
    /// default.
    #[default]
    CliffFree,
}

/// The noise parameters a private fit used, all functions of the public parameters and n
/// (never of the data). The noise vectors themselves are secret and never reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NoiseCalibration {
    /// The ε of the guarantee: everything the release spends.
    pub epsilon: f64,
    /// The part of ε spent on the noise density (objective perturbation), or ε (output).
    pub epsilon_prime: f64,
    /// Extra regularization Δ added by objective perturbation (0 for output perturbation).
    pub extra_regularization: f64,
    /// Rate of the noise density `∝ exp(−β‖b‖)`.
    pub beta: f64,
    /// L2 sensitivity the noise covers (output perturbation), if any.
    pub l2_sensitivity: Option<f64>,
    /// The gradient-norm tolerance γ the solver certifies (chosen before the data are seen).
    pub tolerance: f64,
    /// The second noise vector that covers the solver's distance to the exact minimizer
    /// (objective perturbation only).
    pub minimizer_noise: Option<MinimizerNoise>,
    /// The power of two every released weight is rounded to a multiple of: 2⁻³⁰ of the
    /// noise's scale on the model (see [`release_grid`]).
    pub release_grid: f64,
}

/// The largest power of two at most `2⁻³⁰ · scale`, where `scale` is the noise's typical
/// size per weight: rounding to it changes a release by far less than the noise (relative
/// 10⁻⁹) and erases the low bits that would tell which point the noise was added to.
pub fn release_grid(scale: f64) -> f64 {
    // Saturating: a zero or infinite scale (refused by the noise's sampler) must not overflow.
    let exponent = (scale.log2().floor() as i32)
        .saturating_sub(30)
        .clamp(-1000, 1000);
    2f64.powi(exponent)
}

/// Approximate-minima perturbation in pure-ε form (docs/src/reference/algorithms.md §4, refinement (b); Iyengar
/// et al., S&P 2019): objective perturbation's proof covers the exact minimizer, the solver
/// releases a point within `radius = (γ + floor)/(Λ+Δ)` of it, and adding noise of density
/// `∝ exp(−β‖·‖)` with `β = ε/(2·radius)` makes that point as private as the exact one, at
/// the price of this ε.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct MinimizerNoise {
    /// The share of ε it spends.
    pub epsilon: f64,
    /// Certified distance `(γ + floor)/(Λ+Δ)` (the rounding floor added to γ) from the solver's point to the exact minimizer.
    pub radius: f64,
    /// Rate of its density `∝ exp(−β‖b‖)`.
    pub beta: f64,
}

/// The share of objective perturbation's ε spent on [`MinimizerNoise`]. Its noise norm is
/// about `2dγ/((Λ+Δ)·ε₂)`, which is `γ·n·ε'/ε₂` times the objective noise's effect on the
/// model (`2d/(ε'n(Λ+Δ))`): 2·10⁻⁴ at n = 45,000, γ = 10⁻¹⁰, ε₂ = ε/100, and at most 0.35%
/// anywhere on the papers' Adult grids (where the rounding floor raises γ).
pub const MINIMIZER_NOISE_SHARE: f64 = 0.01;

/// Largest gradient tolerance any mechanism accepts: looser solves are not cheaper in any
/// way that matters and only add noise (output perturbation) or minimizer noise.
pub const MAX_TOLERANCE: f64 = 1e-6;

/// How far above the modelled rounding error of `‖∇F‖` a tolerance must stay
/// ([`tolerance_floor`]).
pub const ROUNDING_MARGIN: f64 = 64.0;

/// A bound that the norm of objective perturbation's noise (`Gamma(d, 1/β)`) exceeds with
/// probability at most `e^{−40}` ≈ 4·10⁻¹⁸: Gamma(d, 1) is sub-gamma, so
/// `P(X ≥ d + √(2dt) + t) ≤ e^{−t}`; here `t = 40`.
pub fn noise_norm_bound(features: usize, beta: f64) -> f64 {
    let d = features as f64;
    ((d + (80.0 * d).sqrt() + 40.0) / beta).next_up()
}

/// The smallest gradient tolerance a fit may ask for, so that every accepted input reaches
/// it (docs/src/reference/algorithms.md §4, refinement (a)), in three parts whose sum is the floor. It depends
/// on public sizes and parameters only, never on the data.
///
/// The computed `∇F = (1/n) Σ ℓ'(z_i) y_i x_i + μw + g` can only be trusted to the rounding
/// error of its terms. With rows in the unit ball the data term has norm ≤ 1 and, at the
/// minimizer, `‖μw‖ ≤ 1 + ‖g‖`; objective perturbation's linear term `g = b/n` has norm at
/// most `G =` [`noise_norm_bound`]`/n` except with probability e^{−40}. Modelling sums of k
/// terms as erring by `√k` roundings (errors of random sign), with `u = 2⁻⁵²`:
/// - `rounding = M·u·√n`: the sum over the n examples;
/// - `noise = M·u·√d·(2 + 2G)`: the cancellation of `μw` against `g` and the data term;
/// - `conditioning = M·u·√d·c·‖w‖max`: each margin `x_iᵀw` errs by `u·√d·‖w‖`, and the
///   curvature `c` turns that into gradient error. `‖w‖max` is `(1 + G)/μ` with noise
///   (directions the data do not constrain follow the noise), else `min(1/μ, √(2ℓ(0)/μ))`.
///
/// The rounding model does not depend on the order or grouping of the additions, so it
/// covers a sum computed row by row in memory, block by block ([`crate::ErmParams::fit_blocks`])
/// or partition by partition and merged on a driver ([`crate::ErmParams::fit_sums`]) alike:
/// any summation tree over k terms has k − 1 additions, every partial sum of the data term
/// is bounded by `Σ_i |ℓ'(z_i)|·‖x_i‖ ≤ k` whatever terms it holds, so errors of random sign
/// total at most `√(k−1)·u·k` in every order. It is a model (M standard deviations of it),
/// not a worst-case bound, in every order: the worst case of any order is `(k−1)·u·k`.
///
/// `M =` [`ROUNDING_MARGIN`] = 64. On Adult's sizes and the papers' Λ and ε grids the
/// resulting tolerance is at most 5·10⁻⁹ (logistic objective perturbation at Λ = 10⁻⁵,
/// ε = 1, where the Δ = 0 branch leaves μ = Λ), and the minimizer noise stays below 0.35% of
/// the objective noise's effect on the model (tested).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToleranceFloor {
    /// The examples' sum.
    pub rounding: f64,
    /// The noise term's cancellation (0 without noise in the objective).
    pub noise: f64,
    /// Rounding of the margins, amplified by the curvature.
    pub conditioning: f64,
    /// The bound on the minimizer's norm the conditioning term uses.
    pub largest_weights: f64,
}

impl ToleranceFloor {
    /// The floor: the sum of its parts, rounded up.
    pub fn total(&self) -> f64 {
        (self.rounding + self.noise + self.conditioning).next_up()
    }
}

/// The [`ToleranceFloor`] of a fit on `examples` rows of `features` columns with `loss`,
/// total regularization μ (Λ, or Λ + Δ) and, for objective perturbation, noise rate β.
pub fn tolerance_floor(
    examples: usize,
    features: usize,
    loss: crate::Loss,
    total_regularization: f64,
    noise_beta: Option<f64>,
) -> ToleranceFloor {
    let scale = ROUNDING_MARGIN * f64::EPSILON;
    let root_d = (features as f64).sqrt();
    let noise_gradient = noise_beta.map_or(0.0, |beta| {
        noise_norm_bound(features, beta) / examples as f64
    });
    let largest_weights = match noise_beta {
        Some(_) => (1.0 + noise_gradient) / total_regularization,
        None => (1.0 / total_regularization)
            .min((2.0 * loss.start_loss_bound() / total_regularization).sqrt()),
    };
    ToleranceFloor {
        rounding: scale * (examples as f64).sqrt(),
        noise: scale * root_d * (2.0 + 2.0 * noise_gradient),
        conditioning: scale * root_d * loss.curvature_bound() * largest_weights,
        largest_weights,
    }
}

/// Checks a requested tolerance against the limits that need no sizes: finite, > 0 and at
/// most [`MAX_TOLERANCE`].
pub(crate) fn check_tolerance(tolerance: f64) -> Result<f64, ErmError> {
    if !(tolerance.is_finite() && tolerance > 0.0) {
        return Err(ErmError::InvalidParameter {
            what: "tolerance",
            value: tolerance,
            requirement: "finite and > 0",
        });
    }
    if tolerance > MAX_TOLERANCE {
        return Err(ErmError::InvalidParameter {
            what: "tolerance",
            value: tolerance,
            requirement: "at most 1e-6",
        });
    }
    Ok(tolerance)
}

/// The tolerance a fit certifies: the requested one if it lies in `[floor, MAX_TOLERANCE]`,
/// else (nothing requested) the larger of the default 10⁻¹⁰ and the floor. When nothing
/// was requested and the floor itself exceeds [`MAX_TOLERANCE`], the error names the
/// dominant cause: noise too large for double precision (`noise`: ε and the noise-norm
/// bound, for objective perturbation) or an objective too ill-conditioned (the total
/// regularization).
pub(crate) fn resolve_tolerance(
    examples: usize,
    requested: Option<f64>,
    floor: &ToleranceFloor,
    regularization: f64,
    noise: Option<(f64, f64)>,
) -> Result<f64, ErmError> {
    let total = floor.total();
    let unattainable = || match noise {
        Some((epsilon, noise_norm)) if floor.noise >= floor.conditioning.max(floor.rounding) => {
            ErmError::NoiseBeyondPrecision {
                epsilon,
                noise_norm,
            }
        }
        _ if floor.rounding >= floor.conditioning => ErmError::InvalidCount {
            what: "number of rows",
            value: examples,
            requirement: "small enough that the rounding of a sum over the rows stays below \
                          1e-6 (about 10^15 rows)",
        },
        _ => ErmError::IllConditioned {
            regularization,
            floor: total,
        },
    };
    if total > MAX_TOLERANCE {
        // No accepted tolerance can be certified: name the cause, not the tolerance.
        if let Some(tolerance) = requested {
            check_tolerance(tolerance)?;
        }
        return Err(unattainable());
    }
    match requested {
        Some(tolerance) => {
            let tolerance = check_tolerance(tolerance)?;
            if tolerance < total {
                Err(ErmError::ToleranceBelowRounding {
                    tolerance,
                    floor: total,
                })
            } else {
                Ok(tolerance)
            }
        }
        None => Ok(dp_optim::DEFAULT_TOLERANCE.max(total)),
    }
}

/// Objective perturbation's full calibration for total ε: [`MINIMIZER_NOISE_SHARE`] of ε
/// for the [`MinimizerNoise`], the rest split into the Jacobian term and the noise density
/// by `rule`, then the tolerance (`requested`, or the default above the rounding floor).
/// The minimizer noise is returned beside the calibration that also records it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn objective_perturbation(
    epsilon: f64,
    examples: usize,
    features: usize,
    regularization: f64,
    loss: crate::Loss,
    rule: ObjectiveCalibration,
    tolerance: Option<f64>,
) -> Result<(NoiseCalibration, MinimizerNoise), ErmError> {
    let curvature = loss.curvature_bound();
    let minimizer_epsilon = (epsilon * MINIMIZER_NOISE_SHARE).next_down();
    // ε₁ + ε₂ ≤ ε: the difference is rounded down.
    let objective_epsilon = (epsilon - minimizer_epsilon).next_down();
    let (epsilon_prime, extra_regularization, beta) =
        objective_noise(objective_epsilon, examples, regularization, curvature, rule)?;
    // The solver's strong convexity is fl(Λ + Δ), the same sum it is given.
    let total_regularization = regularization + extra_regularization;
    let floor = tolerance_floor(examples, features, loss, total_regularization, Some(beta));
    let tolerance = resolve_tolerance(
        examples,
        tolerance,
        &floor,
        total_regularization,
        Some((epsilon, noise_norm_bound(features, beta))),
    )?;
    // The solver certifies the *computed* ‖∇‖ ≤ γ; the true gradient (and the exact
    // minimizer of the objective with the rounded linear term b/n) can be off by the
    // rounding the floor models, 1/64 of it. The radius charges the whole floor on top.
    let radius = (add_step_up(tolerance, floor.total()) / total_regularization).next_up();
    let minimizer = MinimizerNoise {
        epsilon: minimizer_epsilon,
        radius,
        beta: (minimizer_epsilon / (2.0 * radius)).next_down(),
    };
    let calibration = NoiseCalibration {
        epsilon,
        epsilon_prime,
        extra_regularization,
        beta,
        l2_sensitivity: None,
        tolerance,
        minimizer_noise: Some(minimizer),
        // The objective noise moves the model by about ‖b‖/(n(Λ+Δ)), ‖b‖ ≈ d/β.
        release_grid: release_grid(1.0 / (beta * examples as f64 * total_regularization)),
    };
    Ok((calibration, minimizer))
}

/// (ε', Δ, β) of objective perturbation's noise for `epsilon`, n, Λ and curvature bound c.
pub(crate) fn objective_noise(
    epsilon: f64,
    examples: usize,
    regularization: f64,
    curvature: f64,
    rule: ObjectiveCalibration,
) -> Result<(f64, f64, f64), ErmError> {
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
    Ok((
        epsilon_prime,
        extra_regularization,
        (epsilon_prime / 2.0).next_down(),
    ))
}

/// Output perturbation's sensitivity `2L/(nΛ) + 2(γ + floor)/Λ` (docs/src/reference/algorithms.md §3: γ the
/// certified gradient tolerance, `floor` the rounding floor, a margin for the error of the
/// computed gradient norm) and rate `β = ε / sensitivity`.
pub(crate) fn output_perturbation(
    epsilon: f64,
    examples: usize,
    regularization: f64,
    lipschitz: f64,
    tolerance: f64,
    floor: &ToleranceFloor,
) -> NoiseCalibration {
    // Λ ≥ 1e-12, n ≥ 1 and γ ≤ 1e-6 keep the sensitivity finite; the caller checks that
    // the noise norm is representable.
    let exact_part = 2.0 * lipschitz / (examples as f64 * regularization);
    let solver_part = 2.0 * add_step_up(tolerance, floor.total()) / regularization;
    let l2_sensitivity = (exact_part + solver_part).next_up().next_up();
    NoiseCalibration {
        epsilon,
        epsilon_prime: epsilon,
        extra_regularization: 0.0,
        beta: (epsilon / l2_sensitivity).next_down(),
        l2_sensitivity: Some(l2_sensitivity),
        tolerance,
        minimizer_noise: None,
        release_grid: release_grid(l2_sensitivity / epsilon),
    }
}
