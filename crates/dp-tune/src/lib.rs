//! # dp-tune
//!
//! End-to-end private hyperparameter selection. Choosing Λ (or the loss, the mechanism…)
//! by looking at the private data leaks, however private each model is; these methods make
//! the whole pipeline private. They work with any [`dp_erm::Trainer`] whose
//! [`Trainer::epsilon`](dp_erm::Trainer::epsilon) is `Some(ε)`: dp-erm's estimators, the
//! kernel estimators, or a user's own.
//!
//! | method | data per model | trainings | end-to-end ε |
//! |---|---|---|---|
//! | [`SplitAndSelect`] (CMS11 Alg. 4, SCM09 Alg. 3) | `n/(m+1)` | m | `max(ε_T, ε_S)` |
//! | [`RandomStopping`] (Liu–Talwar 2019) | `(1−h)·n` | geometric, mean `1/γ` | `3·max(ε_T, ε_S)`, plus a δ ≤ [`MAX_DELTA`] = 10⁻⁶ from the cap (≤ `(1+e^{3ε})·10⁻⁹` at the default cap) |
//!
//! Regressors have both too: [`RegressionSplitAndSelect`] and [`RegressionRandomStopping`]
//! (pure-ε candidates; the same runs and accounting, scored by the bounded held-out
//! squared error, sensitivity 1).
//!
//! `ε_T` is the largest ε a candidate spends, `ε_S` the ε of the selection (split-and-
//! select) or of each noisy score (random stopping). Candidates are given, checked (each
//! must report a finite ε in (0, 1000]) and frozen before any data is seen; the data are shuffled
//! with fresh randomness from the caller's [`dp_noise::ReleaseRng`]. Each type's `# Privacy`
//! section states the guarantee and its proof. What the selection saw — every candidate's
//! exact held-out mistakes, the number of runs — is reachable only through accessors named
//! `secret_…`, documented as not private.
//!
//! ```
//! use dp_erm::{ErmParams, Examples, Features, Loss};
//! use dp_noise::{DpRng, PrivacyBudget};
//! use dp_tune::SplitAndSelect;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // 400 rows in the unit ball; the label is the sign of the first feature.
//! let mut values = Vec::new();
//! let mut labels = Vec::new();
//! for i in 0..400 {
//!     let angle = i as f64 * 0.7;
//!     values.extend([0.9 * angle.cos(), 0.9 * angle.sin()]);
//!     labels.push(if angle.cos() >= 0.0 { 1.0 } else { -1.0 });
//! }
//! let data = Examples::new(Features::dense(2, values)?, labels)?;
//!
//! // The candidates are fixed before the data are used: one Λ each, all at ε = 1.
//! let candidates: Vec<ErmParams> = [1e-1, 1e-2, 1e-3]
//!     .into_iter()
//!     .map(|lambda| ErmParams::objective_perturbation(Loss::Logistic, lambda, 1.0))
//!     .collect();
//! let tuning = SplitAndSelect::new(candidates, 1.0)?;
//! assert_eq!(tuning.epsilon(), 1.0);
//!
//! let mut budget = PrivacyBudget::new(2.0)?;
//! let mut rng = DpRng::from_os_entropy()?;
//! let chosen = tuning.select_charging(&data, &mut budget, &mut rng)?;
//! assert!(chosen.index() < 3);
//! assert_eq!(budget.spent(), 1.0);
//! # use dp_erm::Classifier;
//! # let label = chosen.model().predict(&[0.5, 0.1])?;
//! # assert!(label == 1.0 || label == -1.0);
//! # Ok(())
//! # }
//! ```
//!
//! Figure 1(f) of the SVM paper (tuned kernel classifier on nested balls) needs nothing
//! more from this crate: a kernel estimator implementing [`dp_erm::Trainer`] is a candidate
//! like any other.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod candidates;
mod error;
mod partition;
mod regression;
mod regression_stopping;
mod rounding;
mod split;
mod stopping;

pub use error::TuneError;
pub use regression::{
    REGRESSION_SCORE_UNITS, RegressionData, RegressionSelection, RegressionSplitAndSelect,
    RegressionTrainer,
};
pub use regression_stopping::RegressionRandomStopping;
pub use split::{MIN_ROWS_PER_PART, Selection, SplitAndSelect};
pub use stopping::{
    CAP_DELTA_SHARE, DEFAULT_CAP_TAIL, DEFAULT_HOLDOUT_FRACTION, MAX_DELTA, MAX_MIN_ROWS, MAX_RUNS,
    MIN_STOP_PROBABILITY, RandomStopping, Stopped, stopping_base_epsilon,
};

#[cfg(test)]
#[path = "audit_tests.rs"]
mod audit;
#[cfg(test)]
mod delta_tests;
#[cfg(test)]
#[path = "prop_tests.rs"]
mod proptests;
#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod renyi_stopping_tests;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod stopping_tests;
#[cfg(test)]
#[path = "stub_trainers_tests.rs"]
mod test_trainers;

#[cfg(test)]
mod send_sync {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_are_send_and_sync() {
        assert_send_sync::<SplitAndSelect<dp_erm::ErmParams>>();
        assert_send_sync::<RandomStopping<dp_erm::ErmParams>>();
        assert_send_sync::<Selection<dp_erm::LinearModel>>();
        assert_send_sync::<Stopped<dp_erm::LinearModel>>();
        assert_send_sync::<TuneError>();
    }
}
