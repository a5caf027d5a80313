//! # dp-erm
//!
//! Differentially private empirical risk minimization — Chaudhuri, Monteleoni & Sarwate,
//! "Differentially Private Empirical Risk Minimization", JMLR 12 (2011), "CMS11" — for
//! L2-regularized logistic regression and Huber-loss SVMs:
//!
//! `J(f; D) = (1/n) Σ_i ℓ(y_i fᵀx_i) + (Λ/2)‖f‖²`.
//!
//! | mechanism | guarantee | noise |
//! |---|---|---|
//! | [`Mechanism::NonPrivate`] | none | — |
//! | [`Mechanism::OutputPerturbation`] (CMS11 Alg. 1) | ε-DP | `f* + b`, `β = ε/(2/(nΛ) + 2γ/Λ)` |
//! | [`Mechanism::ObjectivePerturbation`] (CMS11 Alg. 2 + approximate-minima noise) | ε-DP for the released (approximate) minimizer | `argmin J + bᵀf/n + (Δ/2)‖f‖²`, `β = ε'/2`, plus noise of rate `ε₂/(2(γ + floor)/(Λ+Δ))`, `ε₂ = ε/100` |
//! | [`GaussianErm::output_perturbation`] | (ε, δ)-DP (ρ-zCDP) | `f̂` snapped, plus discrete Gaussian noise on the sensitivity `2/(nΛ) + 2γ'/Λ` |
//! | [`GaussianErm::objective_perturbation`] (KST12) | (ε, δ)-DP | `argmin J + bᵀf/n + (Δ/2)‖f‖²`, `b ~ N(0, σ²I)`, plus minimizer noise |
//! | [`AdaSsp`] (Wang 2018 Alg. 2; regressors only) | (ε, δ)-DP (ρ-zCDP) | discrete Gaussian on λ_min(XᵀX), XᵀX and Xᵀt, then ridge with an adaptive λ |
//! | [`DpSgd`] (DP-SGD / DP-GD) | (ε, δ)-DP (the subsampled Gaussian's privacy-loss distribution by default, or its RDP) | clipped per-example gradients, Poisson batches, Gaussian noise on each sum |
//!
//! Pure ε is the default; the Gaussian mechanisms and DP-SGD are for users who accept a δ.
//!
//! Every guarantee is for neighbouring datasets that differ in one row, and assumes every
//! row has `‖x‖₂ ≤ 1` and labels ±1 — which [`TrainingSet`] checks, refusing data that
//! breaks it with an error naming the first offending row. See [`ErmParams`]'s `# Privacy`.
//!
//! ```
//! use dp_erm::{ErmParams, Loss, TrainingSet};
//! use dp_noise::DpRng;
//!
//! # fn main() -> Result<(), dp_erm::ErmError> {
//! let data = TrainingSet::builder(2)
//!     .dense_rows(vec![0.6, 0.75, -0.5, 0.1, 0.3, -0.9, -0.7, -0.2])
//!     .labels(vec![1.0, -1.0, -1.0, -1.0])
//!     .build()?;
//! let mut rng = DpRng::from_os_entropy()?;
//! let fit = ErmParams::objective_perturbation(Loss::huber(0.5)?, 0.1, 1.0).fit(&data, &mut rng)?;
//! assert_eq!(fit.epsilon(), Some(1.0));
//! let label = fit.model().predict(&[0.6, 0.75])?;
//! # assert!(label == 1.0 || label == -1.0);
//! # Ok(())
//! # }
//! ```
//!
//! Prediction on plain rows (no labels, no unit-ball contract): [`Features`] holds a checked
//! batch, dense or sparse; [`Classifier`] scores it and [`Probabilities`] turns logistic
//! regression's scores into `P(y = +1 | x)` (a Huber SVM refuses with an error).
//!
//! ```
//! use dp_erm::{Classifier, ErmParams, Features, Loss, Probabilities, TrainingSet};
//! use dp_noise::DpRng;
//!
//! # fn main() -> Result<(), dp_erm::ErmError> {
//! # let data = TrainingSet::builder(2)
//! #     .dense_rows(vec![0.6, 0.75, -0.5, 0.1, 0.3, -0.9, -0.7, -0.2])
//! #     .labels(vec![1.0, -1.0, -1.0, -1.0])
//! #     .build()?;
//! let model = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0)
//!     .fit(&data, &mut DpRng::from_os_entropy()?)?
//!     .into_model();
//! let rows = Features::dense(2, vec![3.0, 4.0, -0.5, 0.2, 0.0, 0.0])?; // any finite values
//! let labels = model.predictions(&rows)?; // ±1 per row
//! let p = model.probabilities(&rows)?; // P(y = +1 | x) per row, in (0, 1)
//! assert!(p.iter().zip(&labels).all(|(&p, &y)| p == 0.5 || (p > 0.5) == (y > 0.0)));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod adassp;
mod approximate_rule;
mod block_fit;
mod calibration;
mod csr_transform;
mod data;
mod dpsgd;
mod error;
mod estimator;
mod features;
mod flat_rows;
mod gaussian;
mod gaussian_profile;
mod logistic_math;
mod loss;
mod mechanism;
mod model;
mod multiclass;
mod proba;
mod regression;
mod row_block_bytes;
mod row_cache;
mod rule;
mod sgd_accounting;
mod trainer;
mod variant_codes;

pub use adassp::{
    ADASSP_EIGENVALUE_SENSITIVITY, ADASSP_FAILURE_PROBABILITY, ADASSP_GRAM_SENSITIVITY,
    ADASSP_MOMENT_SENSITIVITY, AdaSsp, AdaSspCalibration, MAX_ADASSP_FEATURES,
};
pub use approximate_rule::{
    DpSgdRule, DpSgdSetting, GaussianRule, SgdSchedule, gaussian_minimizer_noise_ratio,
};
pub use block_fit::{contract_sums, contract_sums_grouped};
pub use calibration::{
    MAX_TOLERANCE, MINIMIZER_NOISE_SHARE, MinimizerNoise, NoiseCalibration, ObjectiveCalibration,
    ROUNDING_MARGIN, ToleranceFloor, noise_norm_bound, release_grid, tolerance_floor,
};
pub use data::{
    GROUP_NORM_SLACK, MAX_FEATURES, TrainingSet, TrainingSetBuilder, clip_row_to_unit_ball,
    settle_rounding_into_unit_ball, within_unit_ball,
};
/// The largest δ any (ε, δ) guarantee of the workspace takes: dp-noise's, re-exported.
pub use dp_noise::MAX_DELTA;
pub use dpsgd::{DpSgd, DpSgdConfig, MAX_SGD_STEPS, SgdModel, SgdNeighbours};
pub use error::ErmError;
pub use error::{MAX_EPSILON, MAX_REGULARIZATION, MIN_REGULARIZATION};
pub use estimator::{ErmParams, Fit, SolverChoice};
pub use features::{Examples, FeatureRow, Features, check_row};
pub use gaussian::{GaussianCalibration, GaussianErm, GaussianMechanism};
pub use loss::Loss;
pub use mechanism::{Mechanism, SgdRecord};
pub use model::{
    LinearModel, MAX_MODEL_FEATURES, MAX_MODEL_TEXT_BYTES, MODEL_FORMAT_VERSION, ModelKey,
    ModelMetadata, ModelPurpose, RegressionModel, StoredModel, TargetScale, container,
};
pub use multiclass::{MAX_CLASSES, OneVsRest};
pub use proba::{Probabilities, logistic_probability};
pub use regression::{RegressionFit, RegressionSet, TargetClipping, contract_regression_sums};
pub use row_block_bytes::{BlockEncoder, visit_encoded_block};
pub use row_cache::{MAX_BLOCK_ROWS, RowCache, RowCacheWriter};
pub use rule::{
    GroupedRule, MAX_MINIMIZER_NOISE_RATIO, MAX_REGRESSION_MINIMIZER_NOISE_NORM,
    RegularizationRule, UtilityOutlook, minimizer_noise_norm, minimizer_noise_ratio,
};
pub use sgd_accounting::{
    Accountant, CALIBRATION_TOLERANCE, pld_calibration, pld_discretization, pld_epsilon,
};
pub use trainer::{Classifier, Trainer};

#[cfg(test)]
#[path = "audit_tests.rs"]
mod audit;
#[cfg(test)]
mod bad_input_tests;
#[cfg(test)]
mod proba_tests;
#[cfg(test)]
#[path = "prop_tests.rs"]
mod proptests;
#[cfg(test)]
mod refusal_tests;
#[cfg(test)]
mod row_cache_tests;
#[cfg(test)]
#[path = "estimator_tests.rs"]
mod tests;
#[cfg(test)]
mod trainer_tests;
#[cfg(test)]
mod unit_ball_tests;
