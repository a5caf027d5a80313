//! # dp-datasets
//!
//! Dataset loading for the experiments: UCI Adult and KDDCup99 (10% file) read from a data
//! directory and verified by SHA-256 — the files are never part of this repository — with
//! the papers' preprocessing (one-hot encoding, column scaling, rows scaled into the unit
//! ball) and synthetic generators (nested balls, noisy linear problems).
//!
//! **Not yet implemented.**
#![forbid(unsafe_code)]
