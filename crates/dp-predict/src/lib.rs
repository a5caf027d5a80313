//! # dp-predict
//!
//! Private prediction (Dwork & Feldman, COLT 2018): interfaces that answer each query with
//! an ε-DP prediction and draw every answer from a privacy budget — subsample-and-aggregate
//! with a soft majority or Laplace averaging, stable regularized ERM with Laplace noise,
//! and the exponential projected walk for thresholds on a line.
//!
//! **Not yet implemented.** Scalar answers will use `dp_noise::Laplace` and accounting
//! `dp_noise::PrivacyBudget`.
#![forbid(unsafe_code)]
