//! Data-independent choices for the (ε, δ) trainers: Λ for [`GaussianErm`] as a function of
//! the noise the mechanism reports, and DP-SGD's batch size, epochs, learning rate and
//! clipping norm. Both were fitted on synthetic data only (`cargo xtask reproduce
//! utility`, "(ε, δ) rules"), as the pure-ε [`crate::RegularizationRule`]s were.

use dp_noise::Neighbouring;
use serde::Serialize;

use crate::data::MAX_FEATURES;
use crate::error::check_epsilon;
use crate::estimator::Task;
use crate::gaussian::check_delta;
use crate::rule::{MAX_MINIMIZER_NOISE_RATIO, MAX_REGRESSION_MINIMIZER_NOISE_NORM};
use crate::{
    DpSgd, DpSgdConfig, ErmError, GaussianCalibration, GaussianErm, GaussianMechanism, Loss,
};

/// Λ = κ · d^a · (z/n)^p for a Gaussian mechanism, where z is the noise multiplier the
/// mechanism reports at that Λ ([`crate::GaussianCalibration`]: σ divided by the L2
/// sensitivity σ covers) — a fixed point, found by bisection.
///
/// **Why in terms of z, not ε.** What Λ has to balance is the noise's pull against the
/// regularization's bias; the noise's pull per unit of sensitivity is z/n (objective
/// perturbation's linear term `b/n` with `b ~ N(0, (2z)²I)`; output perturbation's noise on
/// the model relative to its `2/(nΛ)` sensitivity). ε and δ enter only through z, so a
/// tighter calibration of σ (a smaller z at the same (ε, δ)) moves Λ the way the fit
/// says it should, without refitting. z itself depends on Λ for objective perturbation
/// (the Jacobian term's share of ε falls as Λ grows) — hence the fixed point, which is
/// unique: `ln Λ − ln rule(z(Λ))` increases with Λ wherever z does not grow faster than
/// `Λ^{1/p}` (z falls or stays flat with Λ for both mechanisms).
///
/// The constants come from least mean regret (test error against each problem's best Λ
/// in hindsight) on a synthetic family of tabular problems ([`Self::OBJECTIVE`] and
/// [`Self::OUTPUT`] say on which); neither Adult nor KDD is read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianRule {
    /// The mechanism the constants were fitted for.
    pub mechanism: GaussianMechanism,
    /// The constant κ.
    pub scale: f64,
    /// The exponent a of the dimension d.
    pub features_exponent: f64,
    /// The exponent p of the noise scale z/n.
    pub noise_exponent: f64,
    /// The loss the fit uses.
    pub loss: Loss,
}

/// Bisection steps on ln Λ over [`GaussianRule::LAMBDA_RANGE`]: 2⁻⁶⁰ of its width.
const BISECTION_STEPS: usize = 60;

/// [`crate::minimizer_noise_ratio`] for the Gaussian mechanisms: the minimizer noise's
/// expected norm `d/β₂` over the objective noise's effect on the model `σ√d/(n·μ)` (μ = Λ + Δ),
/// that is `√d·n·μ/(β₂·σ)`; 0 for output perturbation, which has no minimizer noise. On KDD's
/// 494,021 rows at (ε = 1, δ = 10⁻⁶) the fixed point Λ ≈ 5·10⁻⁷ let it dominate: training
/// error 0.94.
pub fn gaussian_minimizer_noise_ratio(
    c: &GaussianCalibration,
    lambda: f64,
    rows: usize,
    features: usize,
) -> f64 {
    match &c.minimizer_noise {
        Some(m) => {
            (features as f64).sqrt() * rows as f64 * (lambda + c.extra_regularization)
                / (m.beta * c.sigma)
        }
        None => 0.0,
    }
}

impl GaussianRule {
    /// Gaussian objective perturbation, logistic loss:
    /// `Λ = 3.981 · d^1.25 · (z/n)^2` — the least mean regret (0.0115 in test error; 90th
    /// percentile 0.030) on the synthetic sweep of `cargo xtask reproduce utility` (seed
    /// 2011: eight problems of the pure-ε rules' family, n = 2,000 / 6,000 / 20,000 with
    /// 10,000 test rows each, ε = 0.05 / 0.1 / 0.2 / 0.5 / 1 / 2, δ = 10⁻⁵, Λ from 1 to
    /// 10⁻⁶ at three points a decade, two noise draws a cell; a searched on quarters in
    /// [0, 1.5], p on eighths in [0.25, 2], κ on tenths of a decade). p came out at the
    /// edge of its range (2): Λ falls fast with z/n.
    pub const OBJECTIVE: GaussianRule = GaussianRule {
        mechanism: GaussianMechanism::ObjectivePerturbation,
        scale: 3.981,
        features_exponent: 1.25,
        noise_exponent: 2.0,
        loss: Loss::Logistic,
    };

    /// Gaussian output perturbation, logistic loss: `Λ = 8.414 · d^0.5 · (z/n)^1.375`,
    /// fitted on the same sweep as [`Self::OBJECTIVE`] (mean regret 0.0162; 90th
    /// percentile 0.042).
    pub const OUTPUT: GaussianRule = GaussianRule {
        mechanism: GaussianMechanism::OutputPerturbation,
        scale: 8.414,
        features_exponent: 0.5,
        noise_exponent: 1.375,
        loss: Loss::Logistic,
    };

    /// Gaussian objective perturbation, Huber regression (threshold 1 on targets scaled into
    /// [−1, 1]): `Λ = 61.35 · d^0.6692 · (z/n)^1.569`, fitted on Gaussian fits at δ = 10⁻⁵
    /// (`cargo run --release -p dp-erm --example regression_rule_sweep -- --gaussian`: the
    /// pure rule's six synthetic problems plus three high-signal ones (noise 0.03), n = 2,000
    /// / 6,000 / 20,000, ε = 0.1 / 0.3 / 1 / 3, 3 seeds, Λ on quarter decades; fitted on the
    /// 68 of 108 cells where some Λ beats predicting the mean by 1%): mean relative regret in
    /// test RMSE 0.90%, worst 9.1% — against 1.94% for the constants used before, carried
    /// over from the pure rule (`472.3·d^0.5435·(z/n)^1.729`) by matching the linear terms'
    /// norms.
    pub const REGRESSION_OBJECTIVE: GaussianRule = GaussianRule {
        mechanism: GaussianMechanism::ObjectivePerturbation,
        scale: 61.35,
        features_exponent: 0.6692,
        noise_exponent: 1.569,
        loss: Loss::HuberRegression { threshold: 1.0 },
    };

    /// Gaussian output perturbation, Huber regression: the pure output rule
    /// [`crate::RegularizationRule::REGRESSION_OUTPUT`] (`31.15·d^0.3509/(nε)^0.9584`) carried over
    /// by ε ↦ √d/z, which gives `31.15·d^−0.128·(z/n)^0.9584`; the d exponent, below the
    /// rules' range, is taken as 0 (d^−0.128 is within 0.6–1 for d up to 60). Objective
    /// perturbation's constants, used here before, gave test R² −32 on 30,000 synthetic
    /// rows at (1, 10⁻⁵).
    pub const REGRESSION_OUTPUT: GaussianRule = GaussianRule {
        mechanism: GaussianMechanism::OutputPerturbation,
        scale: 31.15,
        features_exponent: 0.0,
        noise_exponent: 0.9584,
        loss: Loss::HuberRegression { threshold: 1.0 },
    };

    /// The Λ the bisection may return, clamped into: wider than any fit on the synthetic
    /// family needed, narrower than what the solver can certify at tiny Λ.
    pub const LAMBDA_RANGE: (f64, f64) = (1e-9, 10.0);

    /// The rule's Λ for a noise multiplier z on `rows` examples of `features` features, with
    /// no fixed point (z given): `κ·d^a·(z/n)^p`, unclamped.
    pub fn lambda_at(&self, noise_multiplier: f64, rows: usize, features: usize) -> f64 {
        (self.scale.ln()
            + self.features_exponent * (features as f64).ln()
            + self.noise_exponent * (noise_multiplier.ln() - (rows as f64).ln()))
        .exp()
    }

    /// The trainer at this rule's Λ for (ε, δ) and the public sizes: the fixed point
    /// `Λ = κ·d^a·(z(Λ)/n)^p` (clamped into [`Self::LAMBDA_RANGE`]), z from
    /// [`GaussianErm::calibration`]. Errors name a zero size, too many features, an ε or δ
    /// no fit accepts, bad constants, or what the calibration refuses at the chosen Λ.
    ///
    /// # Privacy
    /// Reads only `rows`, `features`, ε and δ (public), never the data: the choice costs no
    /// privacy, and the returned trainer is (ε, δ)-DP as [`GaussianErm`]'s `# Privacy`
    /// states. As for [`crate::ErmParams::recommended`], n is public under the replace-one
    /// relation; where it is not, pass a public bound.
    pub fn trainer(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
        delta: f64,
    ) -> Result<GaussianErm, ErmError> {
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
        check_epsilon(epsilon)?;
        check_delta(delta)?;
        self.check_constants()?;
        let task = Task::of(self.loss);
        let at = |lambda: f64| match self.mechanism {
            GaussianMechanism::ObjectivePerturbation => {
                GaussianErm::objective_perturbation(self.loss, lambda, epsilon, delta)
            }
            GaussianMechanism::OutputPerturbation => {
                GaussianErm::output_perturbation(self.loss, lambda, epsilon, delta)
            }
        };
        // g(ln Λ) = ln Λ − ln rule(z(Λ)): increasing, so its root is found by bisection.
        let gap = |log_lambda: f64| -> Result<f64, ErmError> {
            let lambda = log_lambda.exp();
            let calibration = at(lambda).calibration_for(task, rows, features)?;
            let z = calibration.sigma / calibration.l2_sensitivity;
            Ok(log_lambda - self.lambda_at(z, rows, features).ln())
        };
        let (mut lo, mut hi) = (Self::LAMBDA_RANGE.0.ln(), Self::LAMBDA_RANGE.1.ln());
        // At a large ε the fixed point can sit below the smallest Λ the solver certifies for
        // these sizes: raise the range's floor to it (doubling, as the pure rule does), a
        // function of the public sizes only.
        while lo < hi {
            match at(lo.exp()).calibration_for(task, rows, features) {
                Err(ErmError::IllConditioned { .. }) => lo = (lo + std::f64::consts::LN_2).min(hi),
                _ => break,
            }
        }
        let chosen = if gap(lo)? >= 0.0 {
            lo
        } else if gap(hi)? <= 0.0 {
            hi
        } else {
            for _ in 0..BISECTION_STEPS {
                let mid = 0.5 * (lo + hi);
                if gap(mid)? < 0.0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            hi
        };
        // At many rows the fixed point can leave the noise that covers the solver's
        // tolerance dominant, as for the pure rules: Λ doubled until it adds at most
        // MAX_MINIMIZER_NOISE_RATIO to the objective noise's effect (public sizes only).
        let mut lambda = chosen.exp();
        loop {
            let trainer = at(lambda);
            let calibration = trainer.calibration_for(task, rows, features)?;
            let ratio = gaussian_minimizer_noise_ratio(&calibration, lambda, rows, features);
            // A regressor's minimizer noise is also capped in norm (see
            // MAX_REGRESSION_MINIMIZER_NOISE_NORM); output perturbation has none, but its
            // sensitivity carries the solver's radius 2(γ + floor)/Λ: capped the same way.
            let regression_noise = match &calibration.minimizer_noise {
                Some(m) => features as f64 / m.beta,
                None => {
                    let solver =
                        (calibration.l2_sensitivity - 2.0 / (rows as f64 * lambda)).max(0.0);
                    solver / calibration.l2_sensitivity
                        * calibration.sigma
                        * (features as f64).sqrt()
                }
            };
            let settled = ratio <= MAX_MINIMIZER_NOISE_RATIO
                && (task == Task::Classification
                    || regression_noise <= MAX_REGRESSION_MINIMIZER_NOISE_NORM);
            if settled || lambda >= Self::LAMBDA_RANGE.1 {
                return Ok(trainer);
            }
            lambda = (2.0 * lambda).min(Self::LAMBDA_RANGE.1);
        }
    }

    fn check_constants(&self) -> Result<(), ErmError> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(ErmError::InvalidParameter {
                what: "rule scale",
                value: self.scale,
                requirement: "finite and > 0",
            });
        }
        for (what, value) in [
            ("rule features exponent", self.features_exponent),
            ("rule noise exponent", self.noise_exponent),
        ] {
            if !(0.0..=4.0).contains(&value) {
                return Err(ErmError::InvalidParameter {
                    what,
                    value,
                    requirement: "between 0 and 4",
                });
            }
        }
        self.loss.check()
    }
}

/// A logistic DP-SGD schedule with averaged iterates, in a user's terms: an expected batch,
/// passes over the data, η and C. What [`DpSgdRule`] chooses and the utility study's grid
/// ranges over.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SgdSchedule {
    /// Expected batch size qn (capped at n: DP-GD).
    pub batch: usize,
    /// Passes over the data: T = ⌈epochs·n/batch⌉ steps.
    pub epochs: usize,
    /// The learning rate η.
    pub learning_rate: f64,
    /// The clipping norm C of one example's gradient. Rows in the unit ball keep the
    /// gradients within 1, so C = 1 clips nothing; a smaller C clips the large gradients and
    /// scales the noise with it.
    pub clip_norm: f64,
}

impl SgdSchedule {
    /// The expected batch on `rows` rows: the schedule's, capped at n (DP-GD).
    pub fn batch_for(&self, rows: usize) -> usize {
        self.batch.min(rows)
    }

    /// This schedule's logistic DP-SGD configuration on `rows` public rows at δ: the batch
    /// capped at n, averaged iterates, its η and C (see [`DpSgdConfig::scheduled`]),
    /// replace-one.
    pub fn config(&self, rows: usize, delta: f64) -> Result<DpSgdConfig, ErmError> {
        self.config_for(rows, delta, Neighbouring::ReplaceOne)
    }

    /// As [`Self::config`] for `relation`. Under add/remove the number of rows is private:
    /// `rows` must then be a public estimate n̂ (never the data's count), which sets q, T and
    /// the divisor, the expected batch ([`DpSgdConfig::add_remove`]).
    pub fn config_for(
        &self,
        rows: usize,
        delta: f64,
        relation: Neighbouring,
    ) -> Result<DpSgdConfig, ErmError> {
        let mut config = DpSgdConfig::scheduled(
            Loss::Logistic,
            rows,
            self.batch_for(rows),
            self.epochs as f64,
            self.learning_rate,
            delta,
        )?;
        config.average_iterates = true;
        config.clip_norm = self.clip_norm;
        Ok(match relation {
            Neighbouring::ReplaceOne => config,
            Neighbouring::AddRemove => config.add_remove(self.batch_for(rows) as f64),
        })
    }
}

impl std::fmt::Display for SgdSchedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "batch {}; {} epochs; η = {}; C = {}",
            self.batch, self.epochs, self.learning_rate, self.clip_norm
        )
    }
}

/// One DP-SGD schedule of [`DpSgdRule`]: what to train with from some ε on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgdSetting {
    /// The smallest ε this setting is for (the rule takes the setting with the largest
    /// `from_epsilon` at or below the ε asked for; the first setting also below it).
    pub from_epsilon: f64,
    /// What to train with.
    pub schedule: SgdSchedule,
}

/// A data-independent DP-SGD configuration (logistic loss, Λ = 0, averaged iterates):
/// batch size, epochs, learning rate and clipping norm by ε, σ calibrated to (ε, δ) for replace-one
/// neighbours by [`DpSgd::for_target`].
///
/// The settings are, per ε of the fit, the configuration of a grid with the least mean
/// regret over synthetic problems ([`Self::FITTED`] says which). The batch is capped at n
/// (DP-GD); n and d enter no other way: the synthetic problems had about Adult's size
/// (n = 30,000), so the rule is for data of that order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DpSgdRule {
    /// Settings in increasing `from_epsilon`.
    pub settings: &'static [DpSgdSetting],
}

impl DpSgdRule {
    /// Fitted by `cargo xtask reproduce utility` (seed 2011; four synthetic problems of the
    /// pure-ε rules' family, n = 30,000 with 10,000 test rows each, δ = 10⁻⁵, two noise
    /// draws a cell; grid: batch 1,024 / 4,096 / 16,384 / 32,768 (capped at n), epochs
    /// 20 / 50 / 200, (η, C) (8, 1) / (32, 1) / (32, 0.25) / (64, 0.25) / (128, 0.25)), the
    /// least mean regret per ε: 0.0033 at ε = 0.1, 0.0027 at 0.2, 0.0005 at 0.5, 0.0008 at
    /// 1, 0.0006 at 2 (η = 64 joined the grid last: it moved the setting at ε = 0.5 only,
    /// whose η was 128 with regret 0.0017 on the same curves). C = 0.25 and 200 epochs (both
    /// the grid's edges) won at every ε: clipping below the gradients' bound of 1 shrinks the
    /// noise four times while clipping only the large gradients. 200 epochs is the grid's cap
    /// on cost (a fit on Adult's 30,162 rows then takes 0.4–1.3 s). With one draw a cell the
    /// choice moved with the seeds: the regret of one configuration changed by up to 0.01.
    pub const FITTED: DpSgdRule = DpSgdRule {
        settings: &[
            DpSgdSetting {
                from_epsilon: 0.1,
                schedule: SgdSchedule {
                    batch: 16384,
                    epochs: 200,
                    learning_rate: 32.0,
                    clip_norm: 0.25,
                },
            },
            DpSgdSetting {
                from_epsilon: 0.2,
                schedule: SgdSchedule {
                    batch: 16384,
                    epochs: 200,
                    learning_rate: 128.0,
                    clip_norm: 0.25,
                },
            },
            DpSgdSetting {
                from_epsilon: 0.5,
                schedule: SgdSchedule {
                    batch: 4096,
                    epochs: 200,
                    learning_rate: 64.0,
                    clip_norm: 0.25,
                },
            },
            DpSgdSetting {
                from_epsilon: 1.0,
                schedule: SgdSchedule {
                    batch: 4096,
                    epochs: 200,
                    learning_rate: 128.0,
                    clip_norm: 0.25,
                },
            },
            DpSgdSetting {
                from_epsilon: 2.0,
                schedule: SgdSchedule {
                    batch: 1024,
                    epochs: 200,
                    learning_rate: 128.0,
                    clip_norm: 0.25,
                },
            },
        ],
    };

    /// The setting for ε.
    pub fn setting(&self, epsilon: f64) -> Result<DpSgdSetting, ErmError> {
        check_epsilon(epsilon)?;
        let first = self.settings.first().ok_or(ErmError::InvalidCount {
            what: "DP-SGD rule settings",
            value: 0,
            requirement: "at least 1",
        })?;
        Ok(*self
            .settings
            .iter()
            .rev()
            .find(|s| s.from_epsilon <= epsilon)
            .unwrap_or(first))
    }

    /// DP-SGD for `rows` examples at (ε, δ), replace-one: the setting for ε, the batch
    /// capped at `rows`, σ the smallest that certifies (ε, δ). Errors name a zero size, an ε
    /// or δ no fit accepts, or what [`DpSgd::for_target`] refuses.
    ///
    /// # Privacy
    /// Reads only `rows`, ε and δ (public), never the data; the fit is (ε, δ)-DP for
    /// replace-one neighbours as [`DpSgd`]'s `# Privacy` states.
    pub fn trainer(&self, rows: usize, epsilon: f64, delta: f64) -> Result<DpSgd, ErmError> {
        self.trainer_for(rows, epsilon, delta, Neighbouring::ReplaceOne)
    }

    /// As [`Self::trainer`] for `relation`: under add/remove, `rows` is a public estimate n̂
    /// of the number of rows (see [`SgdSchedule::config_for`]) and ε is the add/remove ε.
    /// The settings were fitted at replace-one ε; they are used at the same ε here.
    ///
    /// # Privacy
    /// Reads only `rows`, ε and δ (public); the fit is (ε, δ)-DP for `relation` as
    /// [`DpSgd`]'s `# Privacy` states.
    pub fn trainer_for(
        &self,
        rows: usize,
        epsilon: f64,
        delta: f64,
        relation: Neighbouring,
    ) -> Result<DpSgd, ErmError> {
        let config = self
            .setting(epsilon)?
            .schedule
            .config_for(rows, delta, relation)?;
        DpSgd::for_target(config, epsilon)
    }
}

#[cfg(test)]
#[path = "approximate_rule_tests.rs"]
mod tests;
