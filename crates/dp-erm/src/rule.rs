//! A data-independent choice of Λ and the loss for objective perturbation: what to train
//! with when tuning would cost privacy (issue 14's rule).

use crate::calibration::ObjectiveCalibration;
use crate::data::MAX_FEATURES;
use crate::error::{MAX_REGULARIZATION, MIN_REGULARIZATION, check_epsilon};
use crate::{ErmError, ErmParams, Loss};

/// The rule `Λ = scale · (d / (n · ε))^exponent` with a fixed Huber width (see
/// [`ErmParams::recommended`]).
///
/// **Why this shape.** Objective perturbation minimizes `J(f) + bᵀf/n` (plus Δ), with
/// `E‖b‖ = 2d/ε'`. A linear term of norm `g = ‖b‖/n` moves the minimizer of a Λ-strongly
/// convex objective by at most `g/Λ` and raises its objective by about `g²/(2Λ)`, while the
/// regularization's own bias is about `Λ‖f₀‖²/2` for a comparator `f₀` (CMS11 §4's utility
/// analysis, Theorem 18: Λ = ε_g/‖f₀‖² with `ε_g ∝ d‖f₀‖/(nε)`). Balancing the two gives
/// `Λ = g/‖f₀‖ = 2d/(nε'‖f₀‖)`: a function of `d/(nε)` alone, up to a constant, `2/‖f₀‖`,
/// that depends on the problem and not on n, d or ε. Measured on 0-1 error rather than on
/// the objective, the best Λ grows faster than linearly in `d/(nε)` (the noise also
/// swamps a model whose norm `‖f_Λ‖ ≤ √(2ℓ(0)/Λ)` shrinks with Λ, which alone would give
/// an exponent 2), so the exponent is fitted too. The constants ([`Self::scale`],
/// [`Self::exponent`], [`Self::huber_width`]) were fitted on synthetic data only — never
/// on Adult or KDD, which validate them (`cargo xtask reproduce utility` re-fits them and
/// reports both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegularizationRule {
    /// The constant κ in `Λ = κ · (d/(nε))^p`.
    pub scale: f64,
    /// The exponent p.
    pub exponent: f64,
    /// The Huber width h (loss `Loss::Huber { width: h }`).
    pub huber_width: f64,
}

impl RegularizationRule {
    /// The library's rule: `Λ = 6.31 · (d/(nε))^1.75`, Huber width 1 — the least mean
    /// regret on the synthetic sweep of `cargo xtask reproduce utility` (seed 2011: eight
    /// tabular and noisy-linear problems from hard to nearly separable, n = 4,000 / 16,000 /
    /// 64,000, ε from 0.05 to 1; mean regret 0.0127 in test error against each problem's
    /// best Λ in hindsight, against 0.014–0.017 for the other losses). Validated on Adult
    /// and KDD in the README's utility section.
    pub const DEFAULT: RegularizationRule = RegularizationRule {
        scale: 6.310,
        exponent: 1.75,
        huber_width: 1.0,
    };

    /// The rule for objective perturbation with group-shaped noise
    /// ([`ErmParams::group_noise`]): `Λ = 12.59 · (d/(nε))^2`, Huber width 1 — fitted the same
    /// way on the same synthetic sweep with the noise shaped to the problems' one-hot groups
    /// (mean regret 0.0166; logistic 0.0190). The smaller noise lets Λ fall faster with
    /// `nε`. At Adult's size: Λ ≈ 8.4·10⁻³ at ε = 0.1, 8.4·10⁻⁵ at ε = 1. See
    /// [`ErmParams::recommended_grouped`].
    pub const GROUPED: RegularizationRule = RegularizationRule {
        scale: 12.589,
        exponent: 2.0,
        huber_width: 1.0,
    };

    /// Λ for `rows` examples with `features` features at `epsilon`, clamped into
    /// `[MIN_REGULARIZATION, MAX_REGULARIZATION]`. Errors name a zero size, a dimension above
    /// [`MAX_FEATURES`], an ε that is not finite or not in `(0, 1000]`, or a scale that is
    /// not finite and > 0.
    pub fn regularization(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<f64, ErmError> {
        if rows == 0 {
            return Err(ErmError::EmptyData);
        }
        if features == 0 || features > MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "features",
                value: features,
                requirement: "between 1 and 2^24",
            });
        }
        let epsilon = check_epsilon(epsilon)?;
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(ErmError::InvalidParameter {
                what: "rule scale",
                value: self.scale,
                requirement: "finite and > 0",
            });
        }
        if !(0.0..=4.0).contains(&self.exponent) {
            return Err(ErmError::InvalidParameter {
                what: "rule exponent",
                value: self.exponent,
                requirement: "between 0 and 4",
            });
        }
        // In logarithms: no intermediate overflows or underflows before the clamp.
        let log_ratio = (features as f64).ln() - (rows as f64).ln() - epsilon.ln();
        let lambda = (self.scale.ln() + self.exponent * log_ratio).exp();
        Ok(lambda.clamp(MIN_REGULARIZATION, MAX_REGULARIZATION))
    }

    /// Objective perturbation (cliff-free) with this rule's Λ and loss, checked against the
    /// public sizes (see [`ErmParams::recommended`]).
    ///
    /// At billions of rows the rule's Λ can fall below what double precision lets a solver
    /// certify (see [`crate::tolerance_floor`]); Λ is then doubled until a fit accepts it —
    /// a function of the public sizes only. No Λ is accepted beyond about 10¹⁵ rows, or
    /// where `nε` is below about `10⁻⁷·√d·(d + 9√d + 40)` (the noise's rounding is then
    /// above every accepted solver tolerance); the error says which.
    pub fn params(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<ErmParams, ErmError> {
        let loss = Loss::huber(self.huber_width)?;
        let mut lambda = self.regularization(rows, features, epsilon)?;
        loop {
            let params = ErmParams::objective_perturbation(loss, lambda, epsilon)
                .objective_calibration(ObjectiveCalibration::CliffFree);
            // Every refusal that depends on parameters and sizes, made now.
            match params.noise_calibration(rows, features) {
                Ok(_) => return Ok(params),
                Err(
                    ErmError::IllConditioned { .. }
                    | ErmError::NoiseBeyondPrecision { .. }
                    | ErmError::InvalidParameter {
                        what: "regularization",
                        ..
                    },
                ) if lambda < MAX_REGULARIZATION => {
                    lambda = (2.0 * lambda).min(MAX_REGULARIZATION);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl ErmParams {
    /// ε-DP objective perturbation with everything chosen from the public sizes and ε
    /// alone: the cliff-free calibration, a Huber SVM of width 1 and
    /// `Λ = 6.31 · (d/(nε))^1.75` ([`RegularizationRule::DEFAULT`]; the type documents where
    /// the rule comes from). At Adult's size (n = 40,700, d = 105) that is Λ ≈ 10⁻² at
    /// ε = 0.1 and 1.9·10⁻⁴ at ε = 1.
    /// Returns parameters that [`ErmParams::fit`] accepts for any training set of `rows`
    /// rows and `features` features; errors name a zero size, more than 2²⁴ features or an
    /// ε outside `(0, 1000]`.
    ///
    /// # Privacy
    /// The choice reads nothing but `rows`, `features` and `epsilon`, so it costs no privacy
    /// (unlike tuning Λ on the data, which needs dp-tune and a share of the budget). The
    /// number of rows is public under the replace-one relation every guarantee here uses;
    /// where n itself is secret (add/remove neighbours), pass a public bound or estimate
    /// instead. The fit is then ε-DP as [`ErmParams`]'s `# Privacy` states.
    pub fn recommended(rows: usize, features: usize, epsilon: f64) -> Result<ErmParams, ErmError> {
        RegularizationRule::DEFAULT.params(rows, features, epsilon)
    }

    /// [`ErmParams::recommended`] for one-hot data: objective perturbation with the noise
    /// shaped to `groups` ([`ErmParams::group_noise`]) and Λ from
    /// [`RegularizationRule::GROUPED`]. `groups` must have `features` coordinates. On Adult
    /// (10-fold CV) this reaches 0.207 at ε = 0.1 and 0.178 at ε = 0.2, against 0.218 and
    /// 0.188 for [`ErmParams::recommended`] (README, "Utility at a fixed guarantee").
    ///
    /// # Privacy
    /// As [`ErmParams::recommended`]: the choice reads only the public sizes, ε and the
    /// public groups; the fit is ε-DP as `group_noise`'s `# Privacy` states.
    pub fn recommended_grouped(
        rows: usize,
        features: usize,
        epsilon: f64,
        groups: dp_noise::FeatureGroups,
    ) -> Result<ErmParams, ErmError> {
        let params = RegularizationRule::GROUPED
            .params(rows, features, epsilon)?
            .group_noise(groups);
        // The calibration refuses groups of the wrong dimension, as a fit would.
        params.noise_calibration(rows, features)?;
        Ok(params)
    }
}
