//! DP-SGD's options as every face takes them, and the one way they become dp-erm's
//! configuration: the library's rule (if asked), the schedule on the public n (or n̂ under
//! add/remove), the divisor of each step, σ calibrated to (ε, δ).

use dp_erm::{Accountant, DpSgd, DpSgdConfig, DpSgdRule, ErmError, Loss, OneVsRest};
use dp_noise::Neighbouring;

/// The public defaults (Opacus-like): expected batches of 256, 10 epochs, η = 1, C = 1.
pub const DEFAULT_BATCH_SIZE: usize = 256;
/// The expected batch a face's automatic batch size (Python's `batch_size="auto"`) takes on
/// the schedule's public `rows` (n, or n̂ under add/remove): [`DEFAULT_BATCH_SIZE`] once
/// n ≥ 256 (the fits of larger data do not move), and below that the whole of n — full-batch
/// DP-GD (q = 1), where a batch of 256 would be refused. Public inputs only.
pub fn auto_batch_size(rows: usize) -> usize {
    DEFAULT_BATCH_SIZE.min(rows.max(1))
}

/// See [`DEFAULT_BATCH_SIZE`].
pub const DEFAULT_EPOCHS: f64 = 10.0;
/// See [`DEFAULT_BATCH_SIZE`].
pub const DEFAULT_LEARNING_RATE: f64 = 1.0;
/// See [`DEFAULT_BATCH_SIZE`].
pub const DEFAULT_CLIP_NORM: f64 = 1.0;

/// DP-SGD's options (public facts and choices only).
#[derive(Debug, Clone, PartialEq)]
pub struct SgdOptions {
    /// The loss.
    pub loss: Loss,
    /// The expected Poisson batch b: q = b/n.
    pub batch_size: usize,
    /// Passes over the data: T = ⌈epochs·n/b⌉ steps.
    pub epochs: f64,
    /// η.
    pub learning_rate: f64,
    /// C, each row's gradient clipped to it.
    pub clip_norm: f64,
    /// Λ ≥ 0.
    pub regularization: f64,
    /// Release the average of the iterates.
    pub average_iterates: bool,
    /// Take the batch, epochs, η and C from dp-erm's `DpSgdRule::FITTED` at the ε of the
    /// fit (averaged iterates; the batch capped at n) instead of the fields above.
    pub rule: bool,
    /// The relation of the guarantee.
    pub neighbouring: Neighbouring,
    /// Under add/remove, the public estimate n̂ of the rows the schedule is on (the row
    /// count is then private); `None` under replace-one.
    pub public_rows: Option<usize>,
    /// The accountant that calibrates σ and certifies the model (privacy-loss
    /// distributions by default; `"pld"` / `"rdp"` parse to it, see
    /// [`crate::spec::parse_accountant`]).
    pub accountant: Accountant,
}

impl Default for SgdOptions {
    fn default() -> Self {
        Self {
            loss: Loss::Logistic,
            batch_size: DEFAULT_BATCH_SIZE,
            epochs: DEFAULT_EPOCHS,
            learning_rate: DEFAULT_LEARNING_RATE,
            clip_norm: DEFAULT_CLIP_NORM,
            regularization: 0.0,
            average_iterates: false,
            rule: false,
            neighbouring: Neighbouring::ReplaceOne,
            public_rows: None,
            accountant: Accountant::Pld,
        }
    }
}

impl SgdOptions {
    /// The n the schedule is on: the public n̂ under add/remove, else the rows' count
    /// (public under replace-one).
    pub fn schedule_rows(&self, rows: usize) -> usize {
        match (self.neighbouring, self.public_rows) {
            (Neighbouring::AddRemove, Some(estimate)) => estimate,
            _ => rows,
        }
    }

    /// These options with the rule's settings for `epsilon` on the schedule's `rows`, if
    /// they ask for them (public inputs only: ε and n).
    pub fn resolved(&self, epsilon: f64, rows: usize) -> Result<Self, ErmError> {
        if !self.rule {
            return Ok(self.clone());
        }
        let setting = DpSgdRule::FITTED.setting(epsilon)?.schedule;
        Ok(Self {
            batch_size: setting.batch_for(rows),
            epochs: setting.epochs as f64,
            learning_rate: setting.learning_rate,
            clip_norm: setting.clip_norm,
            average_iterates: true,
            rule: false,
            ..self.clone()
        })
    }

    /// dp-erm's configuration on the schedule's `rows` at δ (resolve the rule first);
    /// refusals name `batch_size` or `epochs`. Under add/remove each step divides by the
    /// expected batch.
    pub fn config(&self, rows: usize, delta: f64) -> Result<DpSgdConfig, ErmError> {
        let mut config = DpSgdConfig::scheduled(
            self.loss,
            rows,
            self.batch_size,
            self.epochs,
            self.learning_rate,
            delta,
        )?;
        config.clip_norm = self.clip_norm;
        config.regularization = self.regularization;
        config.average_iterates = self.average_iterates;
        config.accountant = self.accountant;
        Ok(match self.neighbouring {
            Neighbouring::ReplaceOne => config,
            Neighbouring::AddRemove => config.add_remove(self.batch_size as f64),
        })
    }

    /// The trainer for a fit at (ε, δ) on `rows` rows (the schedule's n from
    /// [`Self::schedule_rows`]), σ calibrated to ε; with the options it was built from
    /// (the rule resolved).
    pub fn trainer(
        &self,
        epsilon: f64,
        delta: f64,
        rows: usize,
    ) -> Result<(DpSgd, SgdOptions), ErmError> {
        let schedule_rows = self.schedule_rows(rows);
        let resolved = self.resolved(epsilon, schedule_rows)?;
        let sgd = DpSgd::for_target(resolved.config(schedule_rows, delta)?, epsilon)?;
        Ok((sgd, resolved))
    }

    /// The trainer of each model of a `class_count`-class classifier at (ε, δ) on `rows`
    /// rows: [`Self::trainer`] at the whole (ε, δ) for two classes (one model), at dp-erm's
    /// one-vs-rest shares (ε/K, δ/K) for K > 2 — a refusal at the shares names K.
    ///
    /// # Privacy
    /// The K models together are (ε, δ)-DP by basic composition (`OneVsRest`'s shares).
    pub fn trainer_for_classes(
        &self,
        epsilon: f64,
        delta: f64,
        rows: usize,
        class_count: usize,
    ) -> Result<(DpSgd, SgdOptions), ErmError> {
        match crate::recipe::model_count(class_count) {
            1 => self.trainer(epsilon, delta, rows),
            models => OneVsRest::trainer_per_class(epsilon, delta, models, |e, d| {
                self.trainer(e, d, rows)
            }),
        }
    }
}

/// What a report says DP-SGD is (the accountant that certified it is reported beside it:
/// [`sgd_mechanism`]).
pub const SGD_MECHANISM: &str = "DP-SGD (Abadi et al. 2016; dp-erm DpSgd): Poisson-sampled \
     batches, each row's gradient clipped, Gaussian noise on each batch sum; (ε, δ)-DP by the \
     privacy-loss distribution (default) or the RDP of the subsampled Gaussian";

/// What a report says DP-SGD certified by `accountant` is.
pub fn sgd_mechanism(accountant: Accountant) -> String {
    let how = match accountant {
        Accountant::Pld => "privacy-loss distribution (connect the dots, pessimistic)",
        Accountant::Rdp => "RDP",
    };
    format!(
        "DP-SGD (Abadi et al. 2016; dp-erm DpSgd): Poisson-sampled batches, each row's gradient \
         clipped, Gaussian noise on each batch sum; (ε, δ)-DP by the {how} of the subsampled \
         Gaussian"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule through these options is dp-erm's own rule configuration, field for field,
    /// for either relation (what the command line built directly before).
    #[test]
    fn the_rule_resolves_to_dp_erms_schedule() {
        for (relation, public_rows) in [
            (Neighbouring::ReplaceOne, None),
            (Neighbouring::AddRemove, Some(30_000)),
        ] {
            let options = SgdOptions {
                rule: true,
                neighbouring: relation,
                public_rows,
                ..SgdOptions::default()
            };
            let n = public_rows.unwrap_or(32_561);
            let (sgd, resolved) = options.trainer(1.0, 1e-6, 32_561).unwrap();
            let schedule = DpSgdRule::FITTED.setting(1.0).unwrap().schedule;
            let expected = schedule.config_for(n, 1e-6, relation).unwrap();
            assert_eq!(sgd.config(), &expected);
            assert_eq!(resolved.batch_size, schedule.batch_for(n));
            assert!(resolved.average_iterates && !resolved.rule);
        }
    }

    /// The accountant option reaches dp-erm's configuration (PLD by default), and the
    /// trainer it gives is certified by it: PLD with less noise than RDP at the same target.
    #[test]
    fn the_accountant_option_picks_dp_erms_accountant() {
        let pld = SgdOptions {
            batch_size: 50,
            epochs: 2.0,
            ..SgdOptions::default()
        };
        let rdp = SgdOptions {
            accountant: Accountant::Rdp,
            ..pld.clone()
        };
        let (a, _) = pld.trainer(1.0, 1e-6, 1000).unwrap();
        let (b, _) = rdp.trainer(1.0, 1e-6, 1000).unwrap();
        assert_eq!(
            (a.accountant(), b.accountant()),
            (Accountant::Pld, Accountant::Rdp)
        );
        assert!(a.noise_multiplier() < b.noise_multiplier());
        assert!(a.epsilon() <= 1.0 && b.epsilon() <= 1.0);
        assert!(sgd_mechanism(Accountant::Pld).contains("privacy-loss distribution"));
        assert!(sgd_mechanism(Accountant::Rdp).contains("RDP"));
    }

    #[test]
    fn the_automatic_batch_is_the_default_from_256_rows_and_n_below() {
        assert_eq!(auto_batch_size(1_000_000), DEFAULT_BATCH_SIZE);
        assert_eq!(auto_batch_size(256), 256);
        assert_eq!(auto_batch_size(255), 255);
        assert_eq!(auto_batch_size(20), 20);
        assert_eq!(auto_batch_size(0), 1);
        // A small dataset trains with it (full batch), where the default batch is refused.
        let small = SgdOptions {
            batch_size: auto_batch_size(20),
            ..SgdOptions::default()
        };
        let (sgd, _) = small.trainer(1.0, 1e-6, 20).unwrap();
        assert_eq!((sgd.sampling_rate(), sgd.config().steps), (1.0, 10));
        assert!(SgdOptions::default().trainer(1.0, 1e-6, 20).is_err());
    }

    #[test]
    fn add_remove_schedules_on_the_public_estimate_and_divides_by_the_batch() {
        let options = SgdOptions {
            batch_size: 10,
            epochs: 2.0,
            neighbouring: Neighbouring::AddRemove,
            public_rows: Some(80),
            ..SgdOptions::default()
        };
        assert_eq!(options.schedule_rows(123), 80);
        let (sgd, _) = options.trainer(1.0, 1e-6, 123).unwrap();
        assert_eq!((sgd.config().steps, sgd.sampling_rate()), (16, 0.125));
        let err = SgdOptions {
            batch_size: 0,
            ..SgdOptions::default()
        }
        .trainer(1.0, 1e-6, 100)
        .unwrap_err();
        assert!(err.to_string().contains("batch_size"), "{err}");
    }
}
