//! # dp-predict
//!
//! Private prediction (Dwork & Feldman, "Privacy-preserving Prediction", COLT 2018): when
//! users can only query a model through an interface, it is enough that each *answer* is
//! differentially private with respect to the training data — which can need far less data
//! than training a private model. Answering `q` queries at ε each costs `q·ε` (basic
//! composition), so every answer is drawn from a budget by a [`PredictionInterface`],
//! which refuses, before computing anything, a query the budget cannot pay for.
//!
//! | mechanism (docs/src/reference/algorithms.md) | type | answer | per-query ε-DP because |
//! |---|---|---|---|
//! | §7.1 subsample-and-aggregate, soft majority | [`SoftMajorityEnsemble`] | ±1 | one part changes: counts move by ≤ 1; exponential mechanism `∝ exp(ε·c/2)` |
//! | §7.2 subsample-and-aggregate, Laplace averaging | [`LaplaceAverageEnsemble`] | noisy vote fraction, ±1 | the vote sum moves by ≤ 1; snapping Laplace |
//! | §7.3 stable regularized ERM + Laplace | [`StableErm`] | noisy score, ±1 | the score moves by ≤ `2/(λn) + 2(γ + floor)/λ` |
//! | §7.4 one-pass projected SGD + Laplace | [`ProjectedSgd`] | noisy score, ±1 | the score moves by ≤ `2η` |
//! | §7.5 exponential projected walk (thresholds, unions of intervals on a line) | [`ExponentialWalk`] | 0/1 | the walk is 1-Lipschitz per step: moves by ≤ 2, log-odds by ≤ ε |
//! | §7.7 stable regularized ERM for regression + Laplace | [`StableRegression`] | noisy prediction in the target's bounds | the scaled prediction moves by ≤ `2/(λn) + 2(γ + floor)/λ` |
//! | §7.8 subsample-and-aggregate for real values, clipped mean | [`RegressionMeanEnsemble`] | noisy mean prediction | one clamped prediction changes: the sum of votes in [0, 1] moves by ≤ 1; snapping Laplace |
//! | §7.8 subsample-and-aggregate for real values, private median | [`RegressionMedianEnsemble`] | a candidate near the median prediction | one prediction changes: quantile utilities move by ≤ 1; exponential mechanism |
//!
//! Every guarantee is for neighbouring datasets that differ in one example (replaced).
//! Released real numbers use dp-noise's snapping Laplace (grid + exact discrete Laplace),
//! labels drawn from a soft majority or the walk use its exact exponential mechanism; all
//! randomness comes through `dp_noise::ReleaseRng`. Baselines for the experiments: the
//! private threshold *learner* [`PrivateThresholdLearner`] (ε spent once, then unlimited
//! queries) and the non-private [`erm_threshold`].
//!
//! **Batches of plain rows.** For mechanisms whose query is a row (`[f64]`),
//! [`PredictionInterface::answer_rows`] answers every row of a `dp_erm::Features` batch —
//! the private counterpart of `dp_erm::Classifier::predictions` — charging `q·ε` at once
//! and refusing the whole batch (shapes first, then the budget) before any answer. There
//! is no `predict_proba` here: an answer is a label or a noisy score, each one a release.
//!
//! **Serving.** An answer's ε covers the answer, not the time it took to compute, and the
//! exact samplers take longer for larger noise: to answer people who can time the answers,
//! use a [`ServingInterface`] (`PredictionInterface::serving`), which draws the Laplace
//! mechanisms' noise ahead of the query into a [`NoisePool`] and releases every answer at
//! a fixed time slot the operator chooses (its `# Privacy` says what remains).
//!
//! **Generalization** (DF §6): for any ε-DP prediction algorithm and a loss in [0, 1],
//! `e^{−ε} E[L_S] ≤ E[L_D] ≤ e^{ε} E[L_S]` — answers on training points are as good a guide
//! to the true error as fresh points, up to `e^{±ε}`; the crate's tests check it on
//! synthetic data.
//!
//! ```
//! use dp_noise::DpRng;
//! use dp_predict::{LineData, PredictionInterface, WalkParams};
//!
//! # fn main() -> Result<(), dp_predict::PredictError> {
//! // Points on a line, labelled 1 from 0.5 on.
//! let points: Vec<f64> = (0..1000).map(|i| i as f64 / 1000.0).collect();
//! let labels = points.iter().map(|&x| x >= 0.5).collect();
//! let walk = WalkParams::new(1.0, 0.05)?.fit(&LineData::new(points, labels)?)?;
//!
//! // Each answer is 1-DP; the interface allows ten of them.
//! let mut interface = PredictionInterface::new(walk, 10.0)?;
//! let mut rng = DpRng::from_os_entropy()?;
//! let _label = interface.answer(&0.8, &mut rng)?;
//! assert_eq!(interface.queries_left(), 9);
//! // A batch the budget cannot pay for is refused whole, before any computation.
//! assert!(interface.answer_batch(&[&0.1; 10], &mut rng).is_err());
//! assert_eq!(interface.queries_left(), 9);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod aggregate;
mod aggregate_regression;
mod error;
mod interface;
mod line;
mod pool;
mod serving;
mod sgd;
mod stable;
mod stable_regression;
mod threshold;
mod vote;
mod walk;

pub use aggregate::{Ensemble, LaplaceAverageEnsemble, SoftMajorityEnsemble};
pub use aggregate_regression::{
    RegressionEnsemble, RegressionMeanEnsemble, RegressionMedianEnsemble,
};
pub use error::{MAX_EPSILON, MAX_POINTS, PredictError};
pub use interface::{PredictionInterface, PrivatePredictor};
pub use line::LineData;
pub use pool::{MAX_POOL, NoisePool, NoiseSource};
pub use serving::{AnswerSlot, MAX_SLOT, ServingInterface};
pub use sgd::{ProjectedSgd, SgdParams};
pub use stable::{DEFAULT_TOLERANCE, ScoreAnswer, StableErm, StableErmParams};
pub use stable_regression::{StableRegression, StableRegressionParams};
pub use threshold::{
    MAX_CANDIDATES, PrivateThresholdLearner, Threshold, ThresholdErm, erm_threshold,
};
pub use vote::{
    AveragedAnswer, LaplaceAverage, MAX_PARTS, SoftMajority, VoteKind, quantize_vote,
    suggested_parts,
};
pub use walk::{ExponentialWalk, WalkParams};

#[cfg(test)]
#[path = "tests/predict_tests.rs"]
mod tests;
