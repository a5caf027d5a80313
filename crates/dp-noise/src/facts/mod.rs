//! Private estimates of the "public facts" a fit needs (docs/src/reference/algorithms.md §8): a quantile,
//! a pair of bounds without a range, the levels of a categorical column (or the classes
//! of a label), and a bound on row norms.
//!
//! Each is a mechanism of the data that spends a stated ε (and δ where needed) and returns
//! a [`Released`] value: the fact, the mechanism that produced it, and the ε and δ spent,
//! so that a caller can annotate a schema and charge a ledger. Every mechanism's
//! `# Privacy` section states its guarantee for the workspace's relation — *replace one
//! record*, the number of records n public — and what it assumes.
//!
//! Data enter through accumulators that work chunk by chunk ([`GridCounts`] for real
//! values and row norms, [`LevelCounts`] for categories), so a file of 10⁷ rows needs
//! memory for one chunk and the counts, never for the whole column; the in-memory
//! `release` methods are the same path with a single chunk.
//!
//! | fact | mechanism | guarantee |
//! |---|---|---|
//! | a p-quantile on a public grid | [`PrivateQuantile`] (exponential mechanism, Smith 2011) | ε |
//! | bounds from two quantiles | [`QuantileBounds`] | ε |
//! | bounds from a noisy signed-log histogram | [`HistogramBounds`] (SmartNoise `approx_bounds`) | ε |
//! | levels from a public candidate list | [`CandidateLevels`] | ε |
//! | levels without a list (also a label's classes) | [`StabilityLevels`] (Korolova et al. 2009) | (ε, δ) |
//! | a row-norm bound | [`RowNormBound`] | ε |

mod bounds;
mod counts;
mod levels;
mod norm;
mod quantile;

pub use bounds::{Bounds, HistogramBounds, QuantileBounds};
pub use counts::{CandidateGrid, GridCounts, MAX_CANDIDATES, MAX_ROWS};
pub use levels::{CandidateLevels, LevelCount, LevelCounts, StabilityLevels};
pub use norm::{NormBound, RowNormBound, row_norm};
pub use quantile::PrivateQuantile;

use crate::DiscreteLaplace;
use crate::rounding::div_rounding_up;
use crate::{NoiseError, ReleaseRng};

/// Which mechanism produced a [`Released`] fact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FactMechanism {
    /// [`PrivateQuantile`].
    Quantile,
    /// [`QuantileBounds`].
    QuantileBounds,
    /// [`HistogramBounds`].
    HistogramBounds,
    /// [`CandidateLevels`].
    CandidateLevels,
    /// [`StabilityLevels`].
    StabilityLevels,
    /// [`RowNormBound`].
    RowNormQuantile,
}

impl FactMechanism {
    /// A short name with the citation, for ledgers and schema annotations.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Quantile => {
                "private quantile: exponential mechanism on a public grid (Smith 2011)"
            }
            Self::QuantileBounds => "bounds: two private quantiles at epsilon/2 each",
            Self::HistogramBounds => {
                "bounds: noisy signed power-of-two histogram above a threshold (SmartNoise \
                 approx_bounds)"
            }
            Self::CandidateLevels => "levels: noisy counts of public candidates above a threshold",
            Self::StabilityLevels => {
                "levels: stability-based histogram (Korolova et al. 2009; Wilson et al. 2020)"
            }
            Self::RowNormQuantile => "row-norm bound: private quantile of the row norms",
        }
    }
}

/// A released fact: the value, the mechanism, and the privacy it spent.
///
/// The value is the output of a differentially private mechanism, so printing or storing
/// it is post-processing and free.
#[derive(Debug, Clone, PartialEq)]
pub struct Released<T> {
    value: T,
    mechanism: FactMechanism,
    epsilon: f64,
    delta: f64,
}

impl<T> Released<T> {
    pub(crate) fn new(value: T, mechanism: FactMechanism, epsilon: f64, delta: f64) -> Self {
        Self {
            value,
            mechanism,
            epsilon,
            delta,
        }
    }

    /// The released fact.
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The released fact, by value.
    pub fn into_value(self) -> T {
        self.value
    }

    /// The mechanism that released it.
    pub fn mechanism(&self) -> FactMechanism {
        self.mechanism
    }

    /// The ε spent (the whole release is (ε, δ)-DP under replace-one).
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The δ spent (0 for a pure ε-DP release).
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// Exact discrete Laplace noise for a histogram under replace-one: one record leaves one
/// cell and joins another, an L1 distance of at most 2 (docs/src/reference/algorithms.md §8), so the scale
/// is `t ≥ 2/ε` (rounded up twice: the quotient, then to the sampler's exact ratio).
pub(crate) fn histogram_noise(epsilon: f64) -> Result<DiscreteLaplace, NoiseError> {
    DiscreteLaplace::with_scale_at_least(div_rounding_up(2.0, epsilon)).map_err(|_| {
        NoiseError::UnsupportedParameters(format!(
            "epsilon {epsilon:?} needs a histogram noise scale beyond the exact sampler's range"
        ))
    })
}

/// Checks a probability parameter in the open interval (0, 1).
pub(crate) fn check_open_probability(name: &'static str, value: f64) -> Result<f64, NoiseError> {
    if value.is_finite() && value > 0.0 && value < 1.0 {
        Ok(value)
    } else {
        Err(NoiseError::InvalidProbability { name, value })
    }
}

/// The smallest integer `τ ≥ 1` such that `cells · P(Z ≥ τ) ≤ β` for `Z` the discrete
/// Laplace noise: with probability at least `1 − β` no cell whose true count is 0 reaches
/// τ. `P(Z ≥ k) = q^k/(1 + q)` for `k ≥ 1`, `q = e^{−1/t}`.
///
/// The threshold only decides which noisy counts are reported: any public threshold keeps
/// the guarantee (post-processing), so its floating-point rounding affects the failure
/// probability's accuracy, never privacy.
pub(crate) fn failure_threshold(noise: &DiscreteLaplace, cells: usize, beta: f64) -> i64 {
    let t = noise.scale();
    let q = (-1.0 / t).exp();
    let tau = (t * ((cells as f64) / (beta * (1.0 + q))).ln()).ceil();
    if tau.is_finite() && tau >= 1.0 {
        tau.min(i64::MAX as f64) as i64
    } else {
        1
    }
}

/// A noisy count per cell: `count + Z`, `Z` exact discrete Laplace, saturated to i64 (a
/// data-independent post-processing of the exact sum).
pub(crate) fn noisy_counts<R: ReleaseRng + ?Sized>(
    counts: impl Iterator<Item = u64>,
    noise: &DiscreteLaplace,
    rng: &mut R,
) -> Vec<i64> {
    counts
        .map(|c| {
            let noisy = i128::from(c) + noise.sample(rng);
            noisy.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        })
        .collect()
}

#[cfg(test)]
mod send_sync {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn fact_types_are_send_and_sync() {
        assert_send_sync::<CandidateGrid>();
        assert_send_sync::<GridCounts>();
        assert_send_sync::<LevelCounts<String>>();
        assert_send_sync::<PrivateQuantile>();
        assert_send_sync::<QuantileBounds>();
        assert_send_sync::<HistogramBounds>();
        assert_send_sync::<CandidateLevels>();
        assert_send_sync::<StabilityLevels>();
        assert_send_sync::<RowNormBound>();
        assert_send_sync::<Released<Option<Bounds>>>();
    }
}

#[cfg(test)]
#[path = "audit_tests.rs"]
pub(crate) mod audit_tests;
