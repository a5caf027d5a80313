//! # dp-tune
//!
//! Private hyperparameter selection (Chaudhuri, Monteleoni, Sarwate 2011, Algorithm 4):
//! train one ε-DP model per candidate setting on disjoint parts of the data, count each
//! model's mistakes on a held-out part, and release one model with the exponential
//! mechanism — ε-DP end to end by parallel composition.
//!
//! **Not yet implemented.** Selection will use `dp_noise::ExponentialMechanism`.
#![forbid(unsafe_code)]
