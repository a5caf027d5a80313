//! What a private model can be expected to reach, from public facts alone (no data read),
//! for every fit the recipe plans: the same warning whichever face trains it.
//!
//! dp-erm's [`RegularizationRule::outlook`] says from `d/(nε)` whether a pure-ε linear model
//! is expected to beat predicting the majority class; its thresholds were measured on the
//! rules' synthetic family. That ratio is the size of objective perturbation's linear term
//! per row, `E‖b‖/(2n)` with `E‖b‖ = 2d/ε`. The same quantity, in the same units, is defined
//! for the other mechanisms the recipe plans, and judged by the same thresholds:
//!
//! - output perturbation at ε: noise of expected norm `2d/(nΛε)` on the minimizer is the
//!   minimizer's response to a linear term of norm `Λ·2d/(nΛε) = 2d/(nε)` per row, so again
//!   `d/(nε)`;
//! - the Gaussian mechanisms with noise multiplier z (σ over the L2 sensitivity it covers):
//!   objective perturbation's linear term is `b ~ N(0, (2z)²I)`, `E‖b‖ ≈ 2z√d`, and output
//!   perturbation's noise corresponds to the same term (dp-erm's `GaussianRule` reads z the
//!   same way), so `z·√d/n`;
//! - DP-SGD has no such ratio; its rule and defaults were fitted and checked at about
//!   30,000 rows (dp-erm's `DpSgdRule::FITTED`), so the outlook warns below
//!   [`SGD_CHECKED_ROWS`].
//!
//! The Gaussian and output ratios are a translation of the measured thresholds, not a new
//! measurement; each outlook says which basis it used.

use dp_erm::{RegularizationRule, UtilityOutlook};
use serde::Serialize;

use dp_kernel::Kernel;

use crate::recipe::{ErmPlan, ErmTrainer};

/// Above this `d/(nε)` a regressor's outlook warns: on the regression rule's synthetic
/// family (dp-erm's `examples/regression_rule_sweep.rs`) every cell whose R² at the rule's
/// Λ fell below 0 had `d/(nε) ≥ 0.0105`, and none below; but in the regression study
/// (`python/bench/regression_study.py`) objective perturbation on diamonds at ε = 0.1
/// (`d/(nε)` = 0.0063) measured R² −0.008, and the Gaussian one on Adult's hours at
/// (0.1, 10⁻⁵) (0.0085 in its units) −0.001: the line is drawn below both.
pub const REGRESSION_AT_RISK_RATIO: f64 = 0.005;

/// [`REGRESSION_AT_RISK_RATIO`] for output perturbation (pure ε and Gaussian), whose noise
/// is added after the solve: on the output rule's synthetic sweep (`regression_rule_sweep
/// -- --output`) no Λ beat predicting the mean by 1% in any cell with `d/(nε) ≥ 0.0101`,
/// and in most from 0.003; in the regression study it measured below the mean on diamonds
/// at ε = 0.1 (`d/(nε)` = 0.0063), on Adult's hours at ε = 0.5 (0.0029), and in one run of
/// three on Adult's hours at ε = 1 (0.0014: R² −0.39, the others 0.08 and 0.10); then
/// (`cargo xtask reproduce regression`, 3 runs per cell, intercept feature c = 0.5) at a
/// mean R² of −0.17 on the synthetic table at ε = 1 (`d/(nε)` = 0.00033, where ε = 0.5
/// gave +0.15 and ε = 2 +0.37). Its noise is heavy-tailed in effect, so the line sits
/// below that; objective perturbation was ahead of it in every cell measured.
pub const REGRESSION_OUTPUT_AT_RISK_RATIO: f64 = 0.0003;

/// Below this many rows a regressor's outlook warns: the smallest n of the regression
/// rule's synthetic family. On scikit-learn's diabetes table (353 training rows, 10
/// features) every private fit measured was no better than the mean, at every ε to 5
/// (`python/bench/regression_vs_diffprivlib.py`).
pub const REGRESSION_CHECKED_ROWS: usize = 2_000;

/// Below this many rows DP-SGD's outlook warns: its rule was fitted on synthetic problems of
/// 30,000 rows, and outside reviewers found it below majority-class prediction on a few
/// thousand.
pub const SGD_CHECKED_ROWS: usize = 10_000;

/// A fit's a-priori outlook: public facts only.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outlook {
    /// The noise's pull per row in the units of `d/(nε)` (`None` where no such ratio is
    /// defined: DP-SGD, non-private fits).
    pub noise_ratio: Option<f64>,
    /// Above `UtilityOutlook::AT_RISK_RATIO`: on a weak or imbalanced problem the model may
    /// be no better than the majority class.
    pub at_risk: bool,
    /// Above `UtilityOutlook::NEAR_CHANCE_RATIO` (or, for DP-SGD, below
    /// [`SGD_CHECKED_ROWS`] rows): expected to be near chance.
    pub near_chance: bool,
    /// What the ratio is, for this mechanism.
    pub basis: &'static str,
    /// What to tell the user, if anything.
    pub warning: Option<String>,
}

impl Outlook {
    fn of_ratio(noise_ratio: f64, basis: &'static str) -> Outlook {
        let judged = UtilityOutlook {
            noise_ratio,
            at_risk: noise_ratio > UtilityOutlook::AT_RISK_RATIO,
            near_chance: noise_ratio > UtilityOutlook::NEAR_CHANCE_RATIO,
        };
        Outlook {
            noise_ratio: Some(noise_ratio),
            at_risk: judged.at_risk,
            near_chance: judged.near_chance,
            basis,
            warning: judged.warning().map(str::to_string),
        }
    }

    /// A regressor's outlook from its noise ratio `d/(nε)` and its `rows`: at risk above
    /// `at_risk_ratio` ([`REGRESSION_AT_RISK_RATIO`], or
    /// [`REGRESSION_OUTPUT_AT_RISK_RATIO`] for output perturbation), where a private
    /// regressor may be no better than predicting the training mean (R² ≤ 0), and below
    /// [`REGRESSION_CHECKED_ROWS`] rows, under the smallest n its rule was fitted at.
    pub(crate) fn of_regression_ratio(
        noise_ratio: f64,
        at_risk_ratio: f64,
        rows: usize,
        basis: &'static str,
    ) -> Outlook {
        let noisy = noise_ratio > at_risk_ratio;
        let small = rows < REGRESSION_CHECKED_ROWS;
        let warning = if noisy {
            Some(format!(
                "d/(nε) = {noise_ratio:.3} > {at_risk_ratio}: a private linear \
                 regressor is expected to be no better than predicting the mean (R² near or \
                 below 0); compare with it, use fewer features, more rows or a larger ε"
            ))
        } else if small {
            Some(format!(
                "{rows} rows: the regression rule was fitted from {REGRESSION_CHECKED_ROWS} \
                 rows, and below that a private linear regressor can be no better than \
                 predicting the mean; compare with it"
            ))
        } else {
            None
        };
        Outlook {
            noise_ratio: Some(noise_ratio),
            at_risk: noisy || small,
            near_chance: noisy,
            basis,
            warning,
        }
    }

    /// The outlook of a DP-SGD fit on `rows` public rows.
    pub fn sgd(rows: usize) -> Outlook {
        let small = rows < SGD_CHECKED_ROWS;
        Outlook {
            noise_ratio: None,
            at_risk: small,
            near_chance: small,
            basis: "DP-SGD's rule and defaults were fitted and checked at about 30,000 rows",
            warning: small.then(|| {
                format!(
                    "DP-SGD on {rows} rows: its rule and defaults were fitted at about 30,000 \
                     rows, and below {SGD_CHECKED_ROWS} a DP-SGD model can be no better than \
                     predicting the majority class; compare with it, or use objective \
                     perturbation (its rules were fitted from 2,000 rows)"
                )
            }),
        }
    }
}

/// The ε below which a DP-SGD regressor with the default settings is warned of: at ε = 0.1
/// on 30,000 synthetic rows (d = 10, averaged iterates) its test R² was below the training
/// mean's in 3 of 3 fits (about −0.1), where objective perturbation reached 0.12; at 0.5 it
/// was 0.43–0.49 against the ridge's 0.54.
pub const SGD_REGRESSION_MIN_EPSILON: f64 = 0.5;

impl Outlook {
    /// The outlook of a DP-SGD regressor on `rows` public rows at `epsilon`: DP-SGD's (its
    /// rows), and a warning below [`SGD_REGRESSION_MIN_EPSILON`].
    pub fn sgd_regression(rows: usize, epsilon: f64) -> Outlook {
        let sgd = Outlook::sgd(rows);
        if sgd.at_risk || epsilon >= SGD_REGRESSION_MIN_EPSILON {
            return sgd;
        }
        Outlook {
            at_risk: true,
            near_chance: true,
            warning: Some(format!(
                "DP-SGD regression at epsilon = {epsilon}: below \
                 {SGD_REGRESSION_MIN_EPSILON} its test R² was below predicting the mean on \
                 30,000 synthetic rows; compare with the mean, or use objective perturbation \
                 (dpml.LinearRegression)"
            )),
            ..sgd
        }
    }
}

/// Where the rows a kernel maps lie, as far as public facts say: what its width γ is
/// judged against in [`Outlook::with_kernel_width`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowScale {
    /// Rows in the unit ball (a schema's encoding): two rows on the sphere at random are
    /// about `‖x − x'‖² = 2` apart, `‖x − x'‖₁ = 2√(d/π)` (at most 4 and `2√d`).
    UnitBall,
    /// Features of unit scale, as after min-max scaling to [0, 1] (assumed, not known: raw
    /// arrays carry no public bound): two rows at random are about `‖x − x'‖² = d/6` and
    /// `‖x − x'‖₁ = d/3` apart, for independent uniform features.
    UnitFeatures,
}

/// Above this typical kernel exponent (γ‖x − x'‖² or γ‖x − x'‖₁ between two rows at random)
/// typical pairs of rows have kernel values below e⁻⁵ ≈ 0.007: the kernel sees every row as
/// unlike every other, and a private model on its random features learns little (an outside
/// review: γ = 1 on Adult after min-max and one-hot scaling, d = 105, exponent about 17,
/// fell below majority-class prediction).
pub const NARROW_KERNEL_EXPONENT: f64 = 5.0;

impl Outlook {
    /// This outlook, warning also where the kernel is too narrow for rows of `scale` with
    /// `input_features` columns: the typical exponent above [`NARROW_KERNEL_EXPONENT`].
    /// Public facts only: γ, d and the stated scale.
    pub fn with_kernel_width(
        mut self,
        kernel: &Kernel,
        input_features: usize,
        scale: RowScale,
    ) -> Outlook {
        let d = input_features as f64;
        let gamma = kernel.gamma();
        let typical_distance = match (kernel, scale) {
            (Kernel::Gaussian { .. }, RowScale::UnitBall) => 2.0,
            (Kernel::Gaussian { .. }, RowScale::UnitFeatures) => d / 6.0,
            (Kernel::Laplacian { .. }, RowScale::UnitBall) => {
                2.0 * (d / std::f64::consts::PI).sqrt()
            }
            (Kernel::Laplacian { .. }, RowScale::UnitFeatures) => d / 3.0,
        };
        let exponent = gamma * typical_distance;
        if exponent > NARROW_KERNEL_EXPONENT {
            // The γ at which the typical exponent is 1.
            let suggestion = 1.0 / typical_distance;
            let assumed = match scale {
                RowScale::UnitBall => "rows in the unit ball",
                RowScale::UnitFeatures => "features scaled to [0, 1] (assumed)",
            };
            let narrow = format!(
                "gamma = {gamma} is narrow for {input_features} features: with {assumed}, \
                 typical pairs of rows have kernel values near exp(-{exponent:.1}), so the \
                 random features carry little signal and the model can be no better than \
                 predicting the majority class; try gamma = {suggestion:.2e} or smaller"
            );
            self.at_risk = true;
            self.warning = Some(match self.warning.take() {
                Some(noise) => format!("{noise}; {narrow}"),
                None => narrow,
            });
        }
        self
    }
}

impl ErmPlan {
    /// The outlook of this plan's fits on `rows` rows of `features` trained features (a
    /// kernel's: its D random features), from the plan's public calibration.
    pub fn outlook(&self, rows: usize, features: usize) -> Option<Outlook> {
        match &self.trainer {
            ErmTrainer::Pure(params) => {
                let share = params.mechanism().epsilon()?;
                let ratio = RegularizationRule::outlook(rows, features, share)
                    .ok()?
                    .noise_ratio;
                Some(Outlook::of_ratio(
                    ratio,
                    "d/(nε) with each model's ε (objective and output perturbation alike)",
                ))
            }
            ErmTrainer::Gaussian(_) => {
                let calibration = self.gaussian.as_ref()?;
                let z = calibration.sigma / calibration.l2_sensitivity;
                let ratio = z * (features as f64).sqrt() / rows as f64;
                Some(Outlook::of_ratio(
                    ratio,
                    "z·√d/n, the Gaussian mechanism's noise multiplier z in d/(nε)'s units \
                     (its linear term's expected norm per row)",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dp_erm::{Loss, ObjectiveCalibration};

    use crate::recipe::{ErmRecipe, Mechanism, Regularization};

    use super::*;

    fn plan(mechanism: Mechanism, rows: usize, features: usize) -> ErmPlan {
        ErmRecipe {
            loss: Loss::Logistic,
            mechanism,
            regularization: Regularization::Rule,
            groups: None,
            tolerance: None,
            feature_map: "outlook-test".into(),
        }
        .plan(rows, features, 2)
        .unwrap()
    }

    #[test]
    fn pure_epsilon_fits_read_d_over_n_epsilon() {
        let objective = Mechanism::Objective {
            epsilon: 0.1,
            calibration: ObjectiveCalibration::CliffFree,
        };
        // d/(nε) = 100/(2,000·0.1) = 0.5 > 0.3: near chance; 100/(200,000·1) = 5e-4: fine.
        let o = plan(objective, 2_000, 100).outlook(2_000, 100).unwrap();
        assert!((o.noise_ratio.unwrap() - 0.5).abs() < 1e-12);
        assert!(o.near_chance && o.warning.is_some());
        let fine = Mechanism::Output { epsilon: 1.0 };
        let o = plan(fine, 200_000, 100).outlook(200_000, 100).unwrap();
        assert!(!o.at_risk && o.warning.is_none());
    }

    #[test]
    fn gaussian_fits_read_their_noise_multiplier() {
        for (n, warned) in [(500, true), (500_000, false)] {
            let p = plan(
                Mechanism::GaussianObjective {
                    epsilon: 0.5,
                    delta: 1e-6,
                },
                n,
                50,
            );
            let c = p.gaussian.unwrap();
            let o = p.outlook(n, 50).unwrap();
            let expected = c.sigma / c.l2_sensitivity * 50f64.sqrt() / n as f64;
            assert!((o.noise_ratio.unwrap() / expected - 1.0).abs() < 1e-12);
            assert_eq!(o.warning.is_some(), warned, "n = {n}: {o:?}");
        }
    }

    fn gaussian(gamma: f64) -> Kernel {
        Kernel::gaussian(gamma).unwrap()
    }

    fn laplacian(gamma: f64) -> Kernel {
        Kernel::laplacian(gamma).unwrap()
    }

    #[test]
    fn a_kernel_too_narrow_for_the_rows_scale_is_warned_of() {
        let quiet = Outlook::sgd(30_000);
        assert!(quiet.warning.is_none());
        // γ·d/6 = 1·105/6 = 17.5 > 5 (the reviewed Adult pipeline); γ = 0.01: 0.175.
        let narrow = quiet
            .clone()
            .with_kernel_width(&gaussian(1.0), 105, RowScale::UnitFeatures);
        let warning = narrow.warning.unwrap();
        assert!(warning.contains("gamma = 1 is narrow") && warning.contains("exp(-17.5)"));
        assert!(narrow.at_risk);
        let wide = quiet
            .clone()
            .with_kernel_width(&gaussian(0.01), 105, RowScale::UnitFeatures);
        assert!(wide.warning.is_none());
        // In the unit ball γ·2: γ = 1 is fine, γ = 3 is not; Laplacian γ·2√(d/π).
        let ball = |kernel: Kernel| {
            quiet
                .clone()
                .with_kernel_width(&kernel, 105, RowScale::UnitBall)
                .warning
                .is_some()
        };
        assert!(!ball(gaussian(1.0)) && ball(gaussian(3.0)));
        let l1 = 2.0 * (105.0 / std::f64::consts::PI).sqrt();
        assert!(!ball(laplacian(4.9 / l1)) && ball(laplacian(5.1 / l1)));
        // A noise warning already there is kept, the width's appended.
        let both = Outlook::sgd(300).with_kernel_width(&laplacian(1.0), 30, RowScale::UnitFeatures);
        let text = both.warning.unwrap();
        assert!(text.contains("300 rows") && text.contains("gamma = 1 is narrow"));
    }

    #[test]
    fn dp_sgd_warns_below_the_rows_it_was_checked_at() {
        assert!(Outlook::sgd(3_000).warning.unwrap().contains("3000 rows"));
        assert!(Outlook::sgd(30_000).warning.is_none());
    }

    #[test]
    fn a_dpsgd_regressor_is_warned_below_its_measured_epsilon() {
        assert!(Outlook::sgd_regression(30_000, 1.0).warning.is_none());
        assert!(Outlook::sgd_regression(30_000, 0.5).warning.is_none());
        let low = Outlook::sgd_regression(30_000, 0.1);
        assert!(low.at_risk && low.warning.unwrap().contains("DP-SGD regression"));
        // Few rows: DP-SGD's own warning, at any ε.
        let small = Outlook::sgd_regression(500, 5.0).warning.unwrap();
        assert!(small.contains("500 rows"), "{small}");
    }
}
