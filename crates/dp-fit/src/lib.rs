//! # dp-fit
//!
//! What every front door of dp-ml — the `dpml` command line, the Python package and
//! `dpml.spark`'s driver — decides the same way, written once:
//!
//! - [`ledger`]: a dataset's privacy budget and every spend against it, in memory or in
//!   one JSON file format and one locking discipline shared by all faces (exact sums, the
//!   safe rounding, a file reached by any name locks and replaces the one canonical file,
//!   a file with several hard links is refused);
//! - [`composition`]: how a ledger composes its spends — basic composition, or the
//!   privacy-loss distributions of the spends' curves, whichever certifies less;
//! - [`charge`]: when a spend counts — a fit is charged once it may have drawn noise,
//!   whatever happens after; a refusal before any draw costs nothing; and the outputs of a
//!   fit are staged before its charge is stored;
//! - [`candidate`]: one candidate of a private selection (dp-tune), pure or Gaussian,
//!   built from a recipe the same way by every face;
//! - [`spec`]: the face-neutral names of the recipe's choices (the neighbouring relation,
//!   parsed from strings in one place) and the ε ceiling;
//! - [`recipe`]: an empirical-risk fit from a face-neutral spec — the mechanism, Λ, each
//!   one-vs-rest model's share, every refusal that needs no data, and the fit itself;
//! - [`regression`]: a regressor's recipe — the same mechanisms and refusals, one model,
//!   targets scaled by public bounds;
//! - [`outlook`]: what a planned fit can be expected to reach, from public facts alone;
//! - [`private_norm`]: a row-norm bound released privately for rows no schema scales, and
//!   the share of ε it spends;
//! - [`split`]: how a fit's (ε, δ) is shared among one-vs-rest models;
//! - [`tuning`]: a private selection among candidates (dp-tune) — the step ε for a total
//!   (ε, δ), the parts, the release;
//! - [`sgd`]: DP-SGD's options and the one way they become dp-erm's configuration.
//!
//! A face only turns its own input into rows and its own options into these types.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod candidate;
pub mod charge;
pub mod composition;
pub mod ledger;
mod ledger_file;
pub mod outlook;
pub mod private_norm;
pub mod recipe;
pub mod regression;
mod regression_sums;
pub mod sgd;
pub mod spec;
pub mod split;
pub mod tuning;

pub use charge::{Charge, Pending};
pub use composition::{Composition, Curve, Method};
pub use ledger::{LEDGER_FORMAT, Ledger, LedgerError, Spend, Summary};
pub use ledger_file::{LedgerFile, LockWait};
