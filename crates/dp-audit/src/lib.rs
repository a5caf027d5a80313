//! # dp-audit
//!
//! Empirical privacy audits (docs/src/reference/privacy-testing.md §2): run a mechanism many times on each of
//! two neighbouring datasets, score every output, choose a threshold on one half of the
//! runs and turn the other half's exceedance counts into a Clopper–Pearson lower bound on
//! the privacy loss — a number that a correct mechanism can never push above its ε (except
//! with the stated probability), and that a mis-calibrated one does.
//!
//! An audit cannot prove privacy; it finds broken calibration. Its power depends on the
//! pair of datasets and the score: a canary whose influence is known in closed form (e.g.
//! a label flip for the logistic loss, where the best distinguisher reaches `ε'/2`) lets a
//! test assert the bound both ways — never above what the proof allows, and close enough
//! to it that a factor-2 error would show.
//!
//! | step | item |
//! |---|---|
//! | neighbouring datasets | [`LabelledRows`], [`Neighbouring`], [`NeighbourPair`] |
//! | many runs, per-run seeds, in parallel | [`run_scores`] |
//! | scores | [`canary_margin`], [`gamma_noise_likelihood_ratio`] (exact) |
//! | ε lower bound with counts and confidence | [`epsilon_lower_bound`], [`LowerBound`] |
//! | verdict against the claim | [`Verdict`], [`judge`] |
//! | membership inference: ROC, AUC, TPR at FPR, advantage and its ε-DP ceiling | [`mia`] |
//!
//! ```
//! use dp_audit::{epsilon_lower_bound, run_scores, Verdict, judge};
//! use rand::RngExt;
//!
//! // A toy mechanism: a count (0 or 1) plus Laplace-like noise from a seeded generator.
//! let release = |count: f64, rng: &mut dp_noise::InsecureSeededRng| {
//!     let u: f64 = rng.random_range(-0.5..0.5);
//!     count - u.signum() * (1.0 - 2.0 * u.abs()).ln() // Laplace(1): ε = 1 for sensitivity 1
//! };
//! let first = run_scores(20_000, 1, |rng| release(0.0, rng)).unwrap();
//! let second = run_scores(20_000, 2, |rng| release(1.0, rng)).unwrap();
//! let bound = epsilon_lower_bound(&first, &second, 1e-6).unwrap();
//! assert!(bound.epsilon <= 1.0);
//! assert_eq!(judge(&bound, 1.0, None).unwrap(), Verdict::Consistent);
//! ```
//!
//! **Seeded randomness stays opt-in.** [`run_scores`] hands each run a
//! [`dp_noise::InsecureSeededRng`] (repeatable, not private). Depending on this crate does
//! not let that generator, or any other seeded one, reach a release path: a mechanism
//! accepts it only with the cargo feature `insecure-seeded-rng` (this crate's, which turns
//! on dp-noise's), which tests and audit tools enable explicitly — never code that releases
//! real data.
//!
//! Every parameter refusal (α outside (0, 1), a target ε that is not finite and > 0, more
//! than [`MAX_RUNS`] runs, datasets above [`MAX_ROWS`] rows, inconsistent lengths) is an
//! [`AuditError`] naming the value, returned before any run or allocation: call
//! [`require_power`] before the runs.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod bound;
mod error;
pub mod mia;
mod neighbours;
mod runner;
mod scores;

pub use bound::{
    LowerBound, MAX_RUNS, Tail, Verdict, epsilon_lower_bound, judge, largest_detectable,
    require_power, runs_needed,
};
pub use error::AuditError;
pub use neighbours::{LabelledRows, MAX_ROWS, NeighbourPair, Neighbouring, label_flip_canary};
pub use runner::run_scores;
pub use scores::{canary_margin, gamma_noise_likelihood_ratio};
