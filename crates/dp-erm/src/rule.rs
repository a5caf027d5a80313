//! A data-independent choice of Λ and the loss for objective perturbation: what to train
//! with when tuning would cost privacy.

use crate::calibration::{NoiseCalibration, ObjectiveCalibration};
use crate::data::MAX_FEATURES;
use crate::error::{MAX_REGULARIZATION, MIN_REGULARIZATION, check_epsilon};
use crate::estimator::Task;
use crate::{ErmError, ErmParams, Loss};

/// The rule `Λ = κ · d^a / (n^b · ε^c)` with a fixed loss (see [`ErmParams::recommended`]).
///
/// **Why this shape.** Objective perturbation minimizes `J(f) + bᵀf/n` (plus Δ), with
/// `E‖b‖ = 2d/ε'`. A linear term of norm `g = ‖b‖/n` moves the minimizer of a Λ-strongly
/// convex objective by at most `g/Λ` and raises its objective by about `g²/(2Λ)`, while the
/// regularization's own bias is about `Λ‖f₀‖²/2` for a comparator `f₀` (CMS11 §4's utility
/// analysis, Theorem 18: Λ = ε_g/‖f₀‖² with `ε_g ∝ d‖f₀‖/(nε)`). Balancing the two gives
/// `Λ = g/‖f₀‖ = 2d/(nε'‖f₀‖)`: `a = b = c = 1` up to a constant that depends on the
/// problem. Measured on 0-1 error the exponents differ: the best Λ also regularizes
/// against sampling error, which falls with n but not with ε (so `b ≠ c`), and a group of
/// one-hot levels shares its noise (so d enters beyond `d/(nε)`); all four constants are
/// fitted (per loss and noise shape) on a synthetic family only — never on Adult or KDD,
/// which validate them (`cargo xtask reproduce utility` re-fits them and reports both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegularizationRule {
    /// The constant κ.
    pub scale: f64,
    /// The exponent a of the dimension d.
    pub features_exponent: f64,
    /// The exponent b of the number of rows n.
    pub rows_exponent: f64,
    /// The exponent c of ε.
    pub epsilon_exponent: f64,
    /// The loss the fit uses.
    pub loss: Loss,
}

/// What a private linear model can be expected to reach, from n, d and ε alone (no data
/// read): see [`RegularizationRule::outlook`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UtilityOutlook {
    /// `d/(nε)`: the noise's size relative to the data's pull (objective perturbation's
    /// linear term has norm about `2d/(nε)` per unit of the loss's gradient).
    pub noise_ratio: f64,
    /// `noise_ratio > UtilityOutlook::AT_RISK_RATIO`: on some tabular problems (a weak
    /// signal, an imbalanced class) a private linear model is already no better than
    /// predicting the majority class.
    pub at_risk: bool,
    /// `noise_ratio > UtilityOutlook::NEAR_CHANCE_RATIO`: on most problems it is.
    pub near_chance: bool,
}

impl UtilityOutlook {
    /// The smallest `d/(nε)` at which a private model was near chance on the synthetic
    /// family (0.0255), rounded down: below it, none of the family's 216 cells per noise
    /// shape was; between it and [`Self::NEAR_CHANCE_RATIO`], 24% were.
    pub const AT_RISK_RATIO: f64 = 0.025;
    /// Above this `d/(nε)`, 78% of the synthetic family's cells were near chance.
    pub const NEAR_CHANCE_RATIO: f64 = 0.3;

    /// The warning in words, if any (for reports).
    pub fn warning(&self) -> Option<&'static str> {
        if self.near_chance {
            Some(
                "d/(nε) > 0.3: a private linear model is expected to be near chance \
                 (no better than predicting the majority class)",
            )
        } else if self.at_risk {
            Some(
                "d/(nε) > 0.025: on a weak or imbalanced problem a private linear model may be \
                 near chance; compare it with majority-class prediction",
            )
        } else {
            None
        }
    }
}

impl RegularizationRule {
    /// The library's rule for Euclidean noise: `Λ = 6.204 · d^1.5625 / (n·ε)^1.6875`, a
    /// Huber SVM of width 1 — the least mean regret on the synthetic sweep of
    /// `cargo xtask reproduce utility` (seed 2011: twelve tabular problems drawn as
    /// [`RegularizationRule`] describes, n = 2,000 / 6,000 / 20,000, ε from 0.05 to 2;
    /// mean regret 0.0026 in test error against each problem's best Λ in hindsight, 0.0031
    /// for logistic regression, 0.0040 for the previous rule `6.31·(d/(nε))^1.75`). The
    /// free slopes in n and ε came out equal (1.6875); d's exponent is smaller.
    pub const DEFAULT: RegularizationRule = RegularizationRule {
        scale: 6.204,
        features_exponent: 1.5625,
        rows_exponent: 1.6875,
        epsilon_exponent: 1.6875,
        loss: Loss::Huber { width: 1.0 },
    };

    /// The rule for objective perturbation with group-shaped noise
    /// ([`ErmParams::group_noise`]) over G groups:
    /// `Λ = 14.58 · d^0.625 · G^0.4375 / (n·ε)^1.5625`, Huber width 1 — fitted as
    /// [`Self::DEFAULT`] with the noise shaped to the problems' groups, on the same twelve
    /// problems and six numeric-heavy ones (12–60 numeric columns beside 0–3 one-hot
    /// attributes): mean regret 0.0030 (logistic 0.0031; the best rule of d alone 0.0040;
    /// the previous rule `13.58·d^0.875/(nε)^1.5625` 0.0051, and 0.0091 on the
    /// numeric-heavy problems, where it regularized too little). The noise's size follows
    /// `√(dG)` rather than d (see [`GroupedRule`]), so the rule reads G. See
    /// [`ErmParams::recommended_grouped`].
    pub const GROUPED: GroupedRule = GroupedRule {
        scale: 14.58,
        features_exponent: 0.625,
        groups_exponent: 0.4375,
        rows_exponent: 1.5625,
        epsilon_exponent: 1.5625,
        loss: Loss::Huber { width: 1.0 },
    };

    /// The rule for Huber regression (threshold 1 on targets scaled into [−1, 1]):
    /// `Λ = 472.3 · d^1.408 / (n·ε)^1.729`, objective perturbation, fitted on a synthetic
    /// family only (`cargo run --release -p dp-erm --example regression_rule_sweep`: six
    /// problems — 5, 20 and 60 numeric columns plus an intercept, 3 to 60 informative,
    /// Gaussian noise 0.1 or 0.3 on a [−1, 1] target — at n = 2,000 / 6,000 / 20,000 and
    /// ε = 0.1 / 0.3 / 1 / 3, 3 seeds, Λ on a grid of quarter decades): mean relative
    /// regret in test RMSE against each cell's best Λ in hindsight 0.36%, worst 3.0%.
    /// See [`ErmParams::recommended_regression`].
    pub const REGRESSION: RegularizationRule = RegularizationRule {
        scale: 472.3,
        features_exponent: 1.408,
        rows_exponent: 1.729,
        epsilon_exponent: 1.729,
        loss: Loss::HuberRegression { threshold: 1.0 },
    };

    /// The rule for Huber regression trained by output perturbation:
    /// `Λ = 31.15 · d^0.3509 / (n·ε)^0.9584`, fitted as [`Self::REGRESSION`] was
    /// (`regression_rule_sweep -- --output`; 37 Λ from 10⁻⁶ to 10³) on the 36 of its 72
    /// cells where some Λ beats predicting the mean by 1% (in the others output
    /// perturbation is no better than the mean at any Λ, and the grid's edge would pull
    /// the fit): mean relative regret 0.88%, worst 4.7%. Output perturbation's noise is
    /// added after the solve and not damped by the data's curvature, so it needs a far
    /// larger Λ than objective perturbation's rule (which gave test R² −2.6 on 30,000
    /// synthetic rows at ε = 1 where this rule's Λ gives a positive R²).
    pub const REGRESSION_OUTPUT: RegularizationRule = RegularizationRule {
        scale: 31.15,
        features_exponent: 0.3509,
        rows_exponent: 0.9584,
        epsilon_exponent: 0.9584,
        loss: Loss::HuberRegression { threshold: 1.0 },
    };

    /// Λ for `rows` examples with `features` features at `epsilon`, clamped into
    /// `[MIN_REGULARIZATION, MAX_REGULARIZATION]`. Errors name a zero size, a dimension above
    /// [`MAX_FEATURES`], an ε that is not finite or not in `(0, 1000]`, a scale that is
    /// not finite and > 0, or an exponent outside `[0, 4]`.
    pub fn regularization(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<f64, ErmError> {
        let (rows, features, epsilon) = check_sizes(rows, features, epsilon)?;
        check_constants(
            self.scale,
            [
                ("rule features exponent", self.features_exponent),
                ("rule rows exponent", self.rows_exponent),
                ("rule epsilon exponent", self.epsilon_exponent),
            ],
        )?;
        // In logarithms: no intermediate overflows or underflows before the clamp.
        let log_lambda = self.scale.ln() + self.features_exponent * features.ln()
            - self.rows_exponent * rows.ln()
            - self.epsilon_exponent * epsilon.ln();
        Ok(log_lambda
            .exp()
            .clamp(MIN_REGULARIZATION, MAX_REGULARIZATION))
    }

    /// The a-priori [`UtilityOutlook`] at these public sizes: `d/(nε)` against two
    /// thresholds. Reads no data and costs no privacy; the same errors as
    /// [`Self::regularization`] for sizes or an ε no fit accepts.
    ///
    /// The thresholds were measured on the synthetic family the rules are fitted on
    /// (`cargo xtask reproduce utility`, "Outlook"): a cell is near chance when the rule's
    /// model keeps less than 10% of a non-private model's gain over majority-class
    /// prediction (where that gain is at least 0.01). Whether it is depends on the problem
    /// (its signal, its class balance), which no public size tells, hence two levels.
    ///
    /// # Privacy
    /// Reads only `rows`, `features` and `epsilon` (public, as for
    /// [`ErmParams::recommended`]): it costs no privacy and says nothing about the data.
    pub fn outlook(rows: usize, features: usize, epsilon: f64) -> Result<UtilityOutlook, ErmError> {
        let (rows, features, epsilon) = check_sizes(rows, features, epsilon)?;
        // ln, then exp: n·ε can underflow (ε ≥ 1e-300) or overflow nothing, but stay uniform.
        let noise_ratio = (features.ln() - rows.ln() - epsilon.ln()).exp();
        Ok(UtilityOutlook {
            noise_ratio,
            at_risk: noise_ratio > UtilityOutlook::AT_RISK_RATIO,
            near_chance: noise_ratio > UtilityOutlook::NEAR_CHANCE_RATIO,
        })
    }

    /// Objective perturbation (cliff-free) with this rule's Λ and loss, checked against the
    /// public sizes (see [`ErmParams::recommended`]).
    ///
    /// At many rows the rule's Λ can fall below what double precision lets a solver
    /// certify well (see [`crate::tolerance_floor`]); Λ is then doubled until a fit accepts
    /// it and the noise covering the solver's tolerance stays small
    /// ([`minimizer_noise_ratio`] at most [`MAX_MINIMIZER_NOISE_RATIO`]) — a function of the
    /// public sizes only. No Λ is accepted beyond about 10¹⁵ rows, or
    /// where `nε` is below about `10⁻⁷·√d·(d + 9√d + 40)` (the noise's rounding is then
    /// above every accepted solver tolerance); the error says which.
    pub fn params(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<ErmParams, ErmError> {
        let lambda = self.regularization(rows, features, epsilon)?;
        certified_params(self.loss, lambda, rows, features, epsilon)
    }
}

/// The largest share of objective perturbation's effect on the model that the minimizer
/// noise (which covers the solver's distance to the exact minimizer) may add under a rule's
/// Λ: see [`minimizer_noise_ratio`].
pub const MAX_MINIMIZER_NOISE_RATIO: f64 = 0.05;

/// The minimizer noise's expected norm over the objective noise's effect on the model:
/// `2d·r/ε₂` against `2d/(ε'·n·μ)` (`r = (γ + floor)/μ` the certified radius, μ = Λ + Δ),
/// that is `r·μ·n·ε'/ε₂`. The solver's rounding floor grows as `1/μ` and the radius as
/// `1/μ²`, so at many rows a rule's small Λ lets this ratio pass 1: on KDD's 10% file
/// (494,021 rows, d = 124) at ε = 1 the grouped rule's Λ of about 10⁻⁶ gave a training
/// error of 0.61 (ε = 10: 0.87), and 0.013 (0.013) once Λ is raised to meet
/// [`MAX_MINIMIZER_NOISE_RATIO`]. On Adult it stays below 1% and no Λ changes.
pub fn minimizer_noise_ratio(c: &NoiseCalibration, lambda: f64, rows: usize) -> f64 {
    match &c.minimizer_noise {
        Some(m) => {
            m.radius * (lambda + c.extra_regularization) * rows as f64 * c.epsilon_prime / m.epsilon
        }
        None => 0.0,
    }
}

/// The largest expected norm of the minimizer noise a regression rule's Λ may leave, in
/// the scaled problem's units (targets in [−1, 1], rows in the unit ball: a weight vector
/// of this norm moves no prediction by more than 1% of half the target's range).
///
/// **Why a regressor needs it.** [`MAX_MINIMIZER_NOISE_RATIO`] compares the minimizer noise
/// with the objective noise's effect where the data do not curve the objective (`‖b‖/(nμ)`).
/// The objective noise is damped by the data's curvature, the minimizer noise (added after
/// the solve) is not, and its norm grows as `1/μ²` (the solver's rounding floor as `1/μ`,
/// the certified radius as floor/μ). At the regression rule's small Λ for large ε (n = 30,000,
/// d = 11: Λ ≈ 1.6·10⁻⁵ at ε = 5, 5.7·10⁻⁶ at ε = 20) the ratio test passed while the
/// minimizer noise moved the weights by about 0.3 — test RMSE up to 1.8× the non-private
/// fit's at ε = 20, worse than at ε = 2. Capping its norm raises Λ there only.
pub const MAX_REGRESSION_MINIMIZER_NOISE_NORM: f64 = 0.01;

/// The minimizer noise's expected norm `d/β₂` (Gamma(d, 1/β₂)); 0 without one.
pub fn minimizer_noise_norm(c: &NoiseCalibration, features: usize) -> f64 {
    c.minimizer_noise
        .as_ref()
        .map_or(0.0, |m| features as f64 / m.beta)
}

/// Objective perturbation (cliff-free) with `loss` at `lambda`, Λ doubled until a fit at
/// these sizes accepts it and its minimizer noise adds at most
/// [`MAX_MINIMIZER_NOISE_RATIO`] to the objective noise's effect (see
/// [`RegularizationRule::params`]): a function of the public sizes only.
fn certified_params(
    loss: Loss,
    mut lambda: f64,
    rows: usize,
    features: usize,
    epsilon: f64,
) -> Result<ErmParams, ErmError> {
    loss.check()?;
    loop {
        let params = ErmParams::objective_perturbation(loss, lambda, epsilon)
            .objective_calibration(ObjectiveCalibration::CliffFree);
        // Every refusal that depends on parameters and sizes, made now.
        let plan = params.calibrate_for(Task::of(loss), rows, features);
        match plan.map(|p| p.calibration()) {
            Ok(Some(c))
                if (minimizer_noise_ratio(&c, lambda, rows) > MAX_MINIMIZER_NOISE_RATIO
                    || (loss.is_regression()
                        && minimizer_noise_norm(&c, features)
                            > MAX_REGRESSION_MINIMIZER_NOISE_NORM))
                    && lambda < MAX_REGULARIZATION =>
            {
                lambda = (2.0 * lambda).min(MAX_REGULARIZATION);
            }
            Ok(_) => return Ok(params),
            Err(
                ErmError::IllConditioned { .. }
                | ErmError::NoiseBeyondPrecision { .. }
                | ErmError::GaussianNoiseBeyondPrecision { .. }
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

/// A scale that is finite and > 0 and exponents in `[0, 4]`, or the error naming the first
/// that is not.
fn check_constants<const K: usize>(
    scale: f64,
    exponents: [(&'static str, f64); K],
) -> Result<(), ErmError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(ErmError::InvalidParameter {
            what: "rule scale",
            value: scale,
            requirement: "finite and > 0",
        });
    }
    for (what, value) in exponents {
        if !(0.0..=4.0).contains(&value) {
            return Err(ErmError::InvalidParameter {
                what,
                value,
                requirement: "between 0 and 4",
            });
        }
    }
    Ok(())
}

/// The rule `Λ = κ · d^a · G^g / (n^b · ε^c)` for objective perturbation with the noise
/// shaped to G feature groups ([`ErmParams::group_noise`]), with a fixed loss: the
/// group-shaped counterpart of [`RegularizationRule`] (see
/// [`ErmParams::recommended_grouped`]).
///
/// **Why it reads G.** The group-shaped noise's norm `‖b‖_G` is Gamma(d) with scale
/// `2/ε'`, and its groups' ℓ1 norms divide it in proportion to independent `χ(s_g)` draws
/// (`s_g` the group sizes), so `E‖b‖₂² = (2/ε')²·(d + 1)·Σ_g 2s_g/(s_g + 1)`: its Euclidean
/// size is between `√(dG)` and `√(2dG)` times `2/ε'`, against `d·2/ε'` for the Euclidean
/// noise (all groups single columns: the same). With a few large one-hot groups (G ≪ d)
/// the noise is far smaller than d says; with mostly single numeric columns (G ≈ d) it is
/// as large as the Euclidean noise, and a rule of d alone cannot serve both. The constants
/// are fitted as [`RegularizationRule`]'s, on a synthetic family that also holds
/// numeric-heavy schemas. G is a public fact of the schema, like d.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupedRule {
    /// The constant κ.
    pub scale: f64,
    /// The exponent a of the dimension d.
    pub features_exponent: f64,
    /// The exponent g of the number of groups G.
    pub groups_exponent: f64,
    /// The exponent b of the number of rows n.
    pub rows_exponent: f64,
    /// The exponent c of ε.
    pub epsilon_exponent: f64,
    /// The loss the fit uses.
    pub loss: Loss,
}

impl GroupedRule {
    /// Λ for `rows` examples with `features` features in `groups` groups at `epsilon`,
    /// clamped into `[MIN_REGULARIZATION, MAX_REGULARIZATION]`. The errors of
    /// [`RegularizationRule::regularization`], and one naming a number of groups that is 0
    /// or above `features`.
    pub fn regularization(
        &self,
        rows: usize,
        features: usize,
        groups: usize,
        epsilon: f64,
    ) -> Result<f64, ErmError> {
        let (rows, features, epsilon) = check_sizes(rows, features, epsilon)?;
        if groups == 0 || groups as f64 > features {
            return Err(ErmError::InvalidCount {
                what: "groups",
                value: groups,
                requirement: "between 1 and the number of features",
            });
        }
        check_constants(
            self.scale,
            [
                ("rule features exponent", self.features_exponent),
                ("rule groups exponent", self.groups_exponent),
                ("rule rows exponent", self.rows_exponent),
                ("rule epsilon exponent", self.epsilon_exponent),
            ],
        )?;
        let log_lambda = self.scale.ln()
            + self.features_exponent * features.ln()
            + self.groups_exponent * (groups as f64).ln()
            - self.rows_exponent * rows.ln()
            - self.epsilon_exponent * epsilon.ln();
        Ok(log_lambda
            .exp()
            .clamp(MIN_REGULARIZATION, MAX_REGULARIZATION))
    }

    /// Objective perturbation (cliff-free) with this rule's Λ and loss and the noise shaped
    /// to `groups`, checked against the public sizes as [`RegularizationRule::params`]
    /// (whose doubling of Λ at extreme sizes it shares). `groups` must have `features`
    /// coordinates.
    pub fn params(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
        groups: dp_noise::FeatureGroups,
    ) -> Result<ErmParams, ErmError> {
        if groups.dim() != features {
            // Before Λ, which reads the groups' count.
            check_sizes(rows, features, epsilon)?;
            return Err(ErmError::DimensionMismatch {
                what: "feature groups",
                expected: features,
                found: groups.dim(),
            });
        }
        let lambda = self.regularization(rows, features, groups.count(), epsilon)?;
        let params =
            certified_params(self.loss, lambda, rows, features, epsilon)?.group_noise(groups);
        // The calibration refuses groups of the wrong dimension, as a fit would.
        params.noise_calibration(rows, features)?;
        Ok(params)
    }
}

/// `(n, d, ε)` as floats, or the error naming the first that no fit accepts.
fn check_sizes(rows: usize, features: usize, epsilon: f64) -> Result<(f64, f64, f64), ErmError> {
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
    Ok((rows as f64, features as f64, epsilon))
}

impl ErmParams {
    /// ε-DP objective perturbation with everything chosen from the public sizes and ε
    /// alone: the cliff-free calibration, a Huber SVM of width 1 and
    /// `Λ = 6.204 · d^1.5625 / (nε)^1.6875` ([`RegularizationRule::DEFAULT`]; the type
    /// documents where the rule comes from). At Adult's official training size
    /// (n = 30,162, d = 105) that is Λ ≈ 1.2·10⁻² at ε = 0.1 and 2.5·10⁻⁴ at ε = 1.
    /// [`RegularizationRule::outlook`] says from the same public facts whether a private
    /// model is expected to beat majority-class prediction at all.
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

    /// Objective perturbation (cliff-free) for Huber regression with Λ from
    /// [`RegularizationRule::REGRESSION`] (raised where the calibration needs it, as
    /// [`ErmParams::recommended`]'s): train it with [`ErmParams::fit_regression`].
    ///
    /// # Privacy
    /// The choice reads only the public sizes and ε; the fit is ε-DP as
    /// [`ErmParams::fit_regression`] states.
    pub fn recommended_regression(
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<ErmParams, ErmError> {
        RegularizationRule::REGRESSION.params(rows, features, epsilon)
    }

    /// Output perturbation of Huber regression (threshold 1 on the scaled targets) with Λ
    /// from [`RegularizationRule::REGRESSION_OUTPUT`]: train it with
    /// [`ErmParams::fit_regression`].
    ///
    /// # Privacy
    /// The choice reads only the public sizes and ε; the fit is ε-DP as
    /// [`ErmParams::fit_regression`] states.
    pub fn recommended_regression_output(
        rows: usize,
        features: usize,
        epsilon: f64,
    ) -> Result<ErmParams, ErmError> {
        let rule = RegularizationRule::REGRESSION_OUTPUT;
        let lambda = rule.regularization(rows, features, epsilon)?;
        Ok(ErmParams::output_perturbation(rule.loss, lambda, epsilon))
    }

    /// [`ErmParams::recommended`] for one-hot data: objective perturbation with the noise
    /// shaped to `groups` ([`ErmParams::group_noise`]) and Λ from
    /// [`RegularizationRule::GROUPED`], which reads the number of groups as well as d.
    /// `groups` must have `features` coordinates. At Adult's official training size
    /// (d = 105 in 14 groups) that is Λ ≈ 3.1·10⁻³ at ε = 0.1 (for the errors it
    /// reaches, see the guide's "What accuracy to expect at each ε",
    /// docs/src/choosing/utility.md).
    ///
    /// # Privacy
    /// As [`ErmParams::recommended`]: the choice reads only the public sizes, ε and the
    /// public groups (their number); the fit is ε-DP as `group_noise`'s `# Privacy` states.
    pub fn recommended_grouped(
        rows: usize,
        features: usize,
        epsilon: f64,
        groups: dp_noise::FeatureGroups,
    ) -> Result<ErmParams, ErmError> {
        RegularizationRule::GROUPED.params(rows, features, epsilon, groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The raw Λ of a rule and the minimizer-noise ratio of a fit at it, for these sizes.
    fn raw_ratio(rule: &RegularizationRule, n: usize, d: usize, epsilon: f64) -> (f64, f64) {
        let lambda = rule.regularization(n, d, epsilon).unwrap();
        let c = ErmParams::objective_perturbation(rule.loss, lambda, epsilon)
            .objective_calibration(ObjectiveCalibration::CliffFree)
            .noise_calibration(n, d)
            .unwrap()
            .unwrap();
        (lambda, minimizer_noise_ratio(&c, lambda, n))
    }

    #[test]
    fn many_rows_raise_lambda_until_the_minimizer_noise_is_small() {
        // KDD's 10% file: at ε = 1 and 10 the Euclidean rule's own Λ leaves the noise that
        // covers the solver's tolerance far above the objective noise's effect; params()
        // doubles Λ until it is at most 5% of it.
        for epsilon in [1.0, 10.0] {
            let (n, d) = (494_021, 124);
            let (raw, ratio) = raw_ratio(&RegularizationRule::DEFAULT, n, d, epsilon);
            assert!(ratio > MAX_MINIMIZER_NOISE_RATIO, "ε {epsilon}: {ratio}");
            let params = RegularizationRule::DEFAULT.params(n, d, epsilon).unwrap();
            let lambda = params.regularization();
            let c = params.noise_calibration(n, d).unwrap().unwrap();
            assert!(minimizer_noise_ratio(&c, lambda, n) <= MAX_MINIMIZER_NOISE_RATIO);
            assert!(lambda > raw, "ε {epsilon}: {lambda} vs {raw}");
            // The smallest doubling that meets it.
            let half = ErmParams::objective_perturbation(params.loss(), lambda / 2.0, epsilon)
                .objective_calibration(ObjectiveCalibration::CliffFree)
                .noise_calibration(n, d)
                .unwrap()
                .unwrap();
            assert!(minimizer_noise_ratio(&half, lambda / 2.0, n) > MAX_MINIMIZER_NOISE_RATIO);
        }
        // Adult's sizes: the rule's Λ stands, at every ε of the study.
        for epsilon in [0.05, 0.1, 0.2, 0.5, 1.0, 2.0] {
            let (raw, ratio) = raw_ratio(&RegularizationRule::DEFAULT, 30_162, 105, epsilon);
            assert!(ratio < 0.01, "ε {epsilon}: {ratio}");
            let params = RegularizationRule::DEFAULT
                .params(30_162, 105, epsilon)
                .unwrap();
            assert_eq!(params.regularization(), raw);
        }
    }

    /// The rules' Λ at Adult's official training size (d = 105 in 14 groups), from the
    /// documented formulas written out here (not from the code under test).
    #[test]
    fn rules_give_the_documented_lambda() {
        let (n, d, g) = (30_162.0f64, 105.0f64, 14.0f64);
        for epsilon in [0.05, 0.1, 0.2, 1.0] {
            let default = 6.204 * d.powf(1.5625) / (n * epsilon).powf(1.6875);
            let grouped = 14.58 * d.powf(0.625) * g.powf(0.4375) / (n * epsilon).powf(1.5625);
            let got = RegularizationRule::DEFAULT
                .regularization(30_162, 105, epsilon)
                .unwrap();
            assert!((got / default - 1.0).abs() < 1e-12, "{got} vs {default}");
            let got = RegularizationRule::GROUPED
                .regularization(30_162, 105, 14, epsilon)
                .unwrap();
            assert!((got / grouped - 1.0).abs() < 1e-12, "{got} vs {grouped}");
        }
        // The values the docs quote.
        let at = |epsilon| {
            RegularizationRule::DEFAULT
                .regularization(30_162, 105, epsilon)
                .unwrap()
        };
        assert!((at(0.1) / 1.2e-2 - 1.0).abs() < 0.05);
        assert!((at(1.0) / 2.5e-4 - 1.0).abs() < 0.05);
        let grouped = RegularizationRule::GROUPED
            .regularization(30_162, 105, 14, 0.1)
            .unwrap();
        assert!((grouped / 3.1e-3 - 1.0).abs() < 0.05);
        // The loss is the documented one, and a fit's parameters carry it.
        let params = ErmParams::recommended(30_162, 105, 0.1).unwrap();
        assert_eq!(params.loss(), Loss::Huber { width: 1.0 });
    }

    /// The grouped rule reads the groups: more groups for the same d (numeric columns instead
    /// of one-hot levels) give a larger Λ, by `G^0.4375`; `recommended_grouped` uses the
    /// groups it is given; a count of groups no partition of d has is refused.
    #[test]
    fn the_grouped_rule_reads_the_number_of_groups() {
        let rule = RegularizationRule::GROUPED;
        let few = rule.regularization(5_000, 60, 3, 0.5).unwrap();
        let many = rule.regularization(5_000, 60, 42, 0.5).unwrap();
        assert!((many / few / 14f64.powf(0.4375) - 1.0).abs() < 1e-12);
        let numeric = dp_noise::FeatureGroups::singletons(60).unwrap();
        let params = ErmParams::recommended_grouped(5_000, 60, 0.5, numeric).unwrap();
        let all = rule.regularization(5_000, 60, 60, 0.5).unwrap();
        assert!((params.regularization() / all - 1.0).abs() < 1e-12);
        assert_eq!(params.loss(), Loss::Huber { width: 1.0 });
        for groups in [0, 61] {
            let e = rule
                .regularization(5_000, 60, groups, 0.5)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("groups = {groups}")), "{e}");
        }
        // Groups of another dimension: the dimension error, as from a fit.
        let wrong = dp_noise::FeatureGroups::singletons(70).unwrap();
        assert!(matches!(
            ErmParams::recommended_grouped(5_000, 60, 0.5, wrong),
            Err(ErmError::DimensionMismatch { .. })
        ));
    }

    #[test]
    fn outlook_warns_by_the_documented_thresholds() {
        let outlook = |n, d, epsilon| RegularizationRule::outlook(n, d, epsilon).unwrap();
        // Adult's official split at ε = 1: d/(nε) = 0.0035, no warning.
        let adult = outlook(30_162, 105, 1.0);
        assert!((adult.noise_ratio - 105.0 / 30_162.0).abs() < 1e-12);
        assert_eq!(
            (adult.at_risk, adult.near_chance, adult.warning()),
            (false, false, None)
        );
        // ε = 0.1: 0.035, at risk.
        let adult = outlook(30_162, 105, 0.1);
        assert!(adult.at_risk && !adult.near_chance);
        assert!(adult.warning().unwrap().contains("may be near chance"));
        // 512 rows, d = 100, ε = 0.5: 0.39, near chance.
        let small = outlook(512, 100, 0.5);
        assert!(small.at_risk && small.near_chance);
        assert!(
            small
                .warning()
                .unwrap()
                .contains("expected to be near chance")
        );
        // Just below the thresholds.
        assert!(!outlook(1_000, 24, 1.0).at_risk);
        assert!(!outlook(1_000, 299, 1.0).near_chance);
        // Bad input: the same errors as the rules, naming the value.
        assert!(matches!(
            RegularizationRule::outlook(0, 5, 1.0),
            Err(ErmError::EmptyData)
        ));
        let e = RegularizationRule::outlook(10, 0, 1.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("features = 0"), "{e}");
        let e = RegularizationRule::outlook(10, 5, f64::NAN)
            .unwrap_err()
            .to_string();
        assert!(e.contains("NaN"), "{e}");
    }
}
