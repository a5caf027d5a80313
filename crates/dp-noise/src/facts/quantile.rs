//! The private quantile on a public candidate grid (Smith 2011; OpenDP's
//! `make_private_quantile`).

use super::{CandidateGrid, FactMechanism, GridCounts, Released};
use crate::error::check_epsilon;
use crate::{ExponentialMechanism, NoiseError, ReleaseRng};

/// The quantile target `p·n` is snapped to this grid, the exponential mechanism's default
/// utility grid for sensitivity 1, so that utilities are exact in floating point.
const TARGET_GRID: f64 = 1.0 / (1u64 << 20) as f64;

/// A private p-quantile: the exponential mechanism over a public candidate grid with
/// utility `u(c) = −|#{x ≤ c} − p·n|`, candidate `c` chosen with probability
/// `∝ exp(ε·u(c)/2)`, sampled exactly ([`ExponentialMechanism`]: integer arithmetic,
/// no floating-point Gumbel trick).
///
/// The grid is public: the caller's ([`CandidateGrid::new`]), or one built from the value
/// type alone when the range is unknown ([`CandidateGrid::for_f64`], `±2^k` and 0).
/// Cost: one pass over the data (`O(n log m)` to find each value's cell, memory for the
/// `m + 1` cell counts only — [`GridCounts`] accumulates them chunk by chunk) and
/// `O(m)` for the selection.
///
/// # Privacy
/// **ε-DP** under replace-one with n public. Replacing one record `x` by `x'` changes
/// `#{x ≤ c}` by −1, 0 or +1 for every candidate `c` (the old record leaves, the new one
/// joins), and `k ↦ −|k − t|` is 1-Lipschitz, so every utility moves by at most 1
/// whatever the target `t` — an integer or not: sensitivity 1.
///
/// The target is `t = p·n` rounded to a multiple of 2⁻²⁰, a function of the public p and n
/// only. With `n ≤ 2³²` ([`super::MAX_ROWS`]), `k − t` is then exact in floating point,
/// so the utilities computed are the real ones, multiples of 2⁻²⁰: the
/// [`ExponentialMechanism`] snaps them to its grid without rounding and samples exactly
/// from `∝ exp(c·u/2⁻²⁰)` with `c ≤ ε/(2·(2²⁰ + 1))`, i.e. the exponential mechanism at
/// `ε·2²⁰/(2²⁰ + 1) ≤ ε`. The candidate grid must not depend on the data.
///
/// The guarantee covers the output, not the running time (the rejection sampler's work
/// depends on the utilities): do not expose how long a release takes.
///
/// ```
/// use dp_noise::{CandidateGrid, DpRng, GridCounts, PrivateQuantile};
///
/// # fn main() -> Result<(), dp_noise::NoiseError> {
/// let mut rng = DpRng::from_os_entropy()?;
/// // A column streamed in chunks onto the signed powers of two (nothing known of its range).
/// let mut counts = GridCounts::new(CandidateGrid::for_f64());
/// for chunk in [[3.5, -1.0, 12.0], [0.25, 7.0, 9.5]] {
///     counts.add_chunk(&chunk)?;
/// }
/// let median = PrivateQuantile::new(1.0, 0.5)?.release_from_counts(&counts, &mut rng)?;
/// assert_eq!((median.epsilon(), median.delta()), (1.0, 0.0));
/// assert!(CandidateGrid::for_f64().values().contains(median.value()));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrivateQuantile {
    epsilon: f64,
    p: f64,
    mechanism: ExponentialMechanism,
}

impl PrivateQuantile {
    /// An ε-DP p-quantile, `0 ≤ p ≤ 1`.
    pub fn new(epsilon: f64, p: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        if !(p.is_finite() && (0.0..=1.0).contains(&p)) {
            return Err(NoiseError::InvalidProbability {
                name: "quantile p (in [0, 1])",
                value: p,
            });
        }
        Ok(Self {
            epsilon,
            p,
            mechanism: ExponentialMechanism::new(epsilon, 1.0)?,
        })
    }

    /// Releases the p-quantile of `data` on `grid` (n = `data.len()` ≥ 1; NaN and
    /// infinities refused, naming the first).
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        data: &[f64],
        grid: &CandidateGrid,
        rng: &mut R,
    ) -> Result<Released<f64>, NoiseError> {
        let mut counts = GridCounts::new(grid.clone());
        counts.add_chunk(data)?;
        self.release_from_counts(&counts, rng)
    }

    /// Releases the p-quantile of data already counted on a grid (the streaming path).
    pub fn release_from_counts<R: ReleaseRng + ?Sized>(
        &self,
        counts: &GridCounts,
        rng: &mut R,
    ) -> Result<Released<f64>, NoiseError> {
        let utilities = self.utilities(counts)?;
        let index = self.mechanism.select(&utilities, rng)?;
        Ok(Released::new(
            counts.grid().values()[index],
            FactMechanism::Quantile,
            self.epsilon,
            0.0,
        ))
    }

    /// The probability of each candidate, as the sampler draws them exactly, evaluated in
    /// floating point (for tests and analysis: it reads the data unnoised).
    pub fn selection_probabilities(&self, counts: &GridCounts) -> Result<Vec<f64>, NoiseError> {
        self.mechanism
            .selection_probabilities(&self.utilities(counts)?)
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The quantile p.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// `u(c_j) = −|#{x ≤ c_j} − t|`, exactly, for the target `t` (sensitivity 1).
    pub(crate) fn utilities(&self, counts: &GridCounts) -> Result<Vec<f64>, NoiseError> {
        counts.check_not_empty()?;
        let target = snapped_target(self.p, counts.rows());
        Ok(counts
            .at_most()
            .iter()
            .map(|&k| -(k as f64 - target).abs())
            .collect())
    }
}

/// `p·n` rounded to a multiple of 2⁻²⁰ (n ≤ 2³², so `p·n·2²⁰ ≤ 2⁵²` rounds exactly).
fn snapped_target(p: f64, n: u64) -> f64 {
    (p * n as f64 / TARGET_GRID).round() * TARGET_GRID
}

#[cfg(test)]
#[path = "quantile_tests.rs"]
mod tests;
