//! # dp-noise
//!
//! The samplers every mechanism of this workspace stands on, each with its privacy
//! guarantee stated under `# Privacy` and its floating-point caveats under `# Numerics`.
//!
//! | need | type | exactness |
//! |---|---|---|
//! | noise for a released vector (output / objective perturbation) | [`GammaNormVector`] | idealized reals, tested hard |
//! | noise for a released real number | [`Laplace`] | exact (grid + discrete Laplace) |
//! | integer noise | [`DiscreteLaplace`] | exact |
//! | choose one of many candidates | [`ExponentialMechanism`], [`PermuteAndFlip`] | exact |
//! | track ε across releases | [`PrivacyBudget`] | sums rounded up |
//! | integer Gaussian noise | [`DiscreteGaussian`] | exact |
//! | Gaussian noise for a released vector | [`DiscreteGaussianVector`] | exact (grid + discrete Gaussian) |
//! | track ρ-zCDP and convert to (ε, δ) | [`Zcdp`], [`ZcdpBudget`] | sums rounded up, CKS20 conversion |
//! | account DP-SGD (subsampled Gaussian) with zCDP in one (ε, δ) | [`RdpCurve`], [`RdpAccountant`] | MTZ19 in log space, rounded up, Balle et al. 2020 conversion |
//! | private facts about the data: quantile, bounds, levels, row-norm bound | [`PrivateQuantile`], [`QuantileBounds`], [`HistogramBounds`], [`CandidateLevels`], [`StabilityLevels`], [`RowNormBound`] | exact (exponential mechanism, discrete Laplace) |
//! | randomness | [`DpRng`], [`InsecureSeededRng`] | ChaCha20 from OS entropy; seeded for experiments |
//!
//! Every sampler takes its randomness as `R: ReleaseRng`, a sealed trait: [`DpRng`]
//! (ChaCha20 keyed from the OS) always qualifies; [`InsecureSeededRng`] qualifies only with
//! the cargo feature `insecure-seeded-rng`, the explicit opt-in that tests and experiments
//! use to make runs repeatable (nothing released that way is private).
//!
//! The neighbouring relation throughout the workspace is *replace one record*; a mechanism's
//! ε is stated for the sensitivity you declare under that relation.
//!
//! ```
//! use dp_noise::{DpRng, Laplace, PrivacyBudget};
//!
//! # fn main() -> Result<(), dp_noise::NoiseError> {
//! let mut rng = DpRng::from_os_entropy()?;
//! let mut budget = PrivacyBudget::new(1.0)?;
//!
//! // A mean of 1000 values in [0, 1]: replacing one moves it by at most 1/1000.
//! let mean = 0.4172;
//! let laplace = Laplace::new(0.5, 1.0 / 1000.0)?;
//! budget.spend("mean", laplace.epsilon())?;
//! let released = laplace.release(mean, &mut rng)?;
//! assert!(released.is_finite());
//! assert_eq!(budget.remaining(), 0.5);
//! # Ok(())
//! # }
//! ```
//!
//! The [`stats`] module holds the goodness-of-fit helpers (KS with DKW critical values,
//! chi-square, Clopper–Pearson) that the workspace's privacy tests and audits share.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod budget;
mod discrete_gaussian;
mod discrete_laplace;
mod error;
mod exact;
mod exponential;
mod facts;
mod grid;
mod group_norm;
mod laplace;
mod pld;
#[cfg(test)]
#[path = "prop_tests.rs"]
mod proptests;
mod rdp;
mod rng;
pub mod rounding;
pub mod stats;
mod vector;
mod zcdp;

pub use budget::{
    Charge, EXACT_SHARE_SPENDS, PrivacyBudget, parallel_composition, sequential_composition,
};
pub use discrete_gaussian::{DiscreteGaussian, DiscreteGaussianVector};
pub use discrete_laplace::DiscreteLaplace;
pub use error::{MAX_DELTA, NoiseError};
pub use exponential::{ExponentialMechanism, PermuteAndFlip};
pub use facts::{
    Bounds, CandidateGrid, CandidateLevels, FactMechanism, GridCounts, HistogramBounds, LevelCount,
    LevelCounts, MAX_CANDIDATES, MAX_ROWS, NormBound, PrivateQuantile, QuantileBounds, Released,
    RowNormBound, StabilityLevels, row_norm,
};
pub use group_norm::{FeatureGroups, GroupNormVector, MAX_GROUPED_DIMENSION};
pub use laplace::Laplace;
pub use pld::{
    MAX_ATOMS, MAX_COMPOSITIONS, MAX_DISCRETIZATION, MIN_DISCRETIZATION, PrivacyLossDistribution,
    TAIL_MASS, pld_smallest_noise_multiplier, pld_smallest_noise_multiplier_within,
    pld_subsampled_gaussian_epsilon, smallest_scale_meeting,
};
pub use rdp::{
    MAX_MEAN_RUNS, MAX_ORDER, MAX_STEPS, Neighbouring, RdpAccountant, RdpCurve, RunCount,
    UnknownNeighbouring, default_orders, opacus_orders, smallest_noise_multiplier,
};
pub use rng::{DpRng, InsecureSeededRng, ReleaseRng, Witnessed};
pub use rounding::{ExactSum, add_rounding_up};
pub use vector::{GammaNormVector, GaussianVector, MAX_DIMENSION};
pub use zcdp::{Zcdp, ZcdpBudget};

#[cfg(test)]
mod send_sync {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn public_types_are_send_and_sync() {
        assert_send_sync::<GammaNormVector>();
        assert_send_sync::<GroupNormVector>();
        assert_send_sync::<Laplace>();
        assert_send_sync::<DiscreteLaplace>();
        assert_send_sync::<ExponentialMechanism>();
        assert_send_sync::<PermuteAndFlip>();
        assert_send_sync::<PrivacyBudget>();
        assert_send_sync::<DpRng>();
        assert_send_sync::<InsecureSeededRng>();
        assert_send_sync::<NoiseError>();
    }
}
