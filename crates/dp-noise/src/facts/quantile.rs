//! The private quantile on a public candidate grid (Smith 2011; OpenDP's
//! `make_private_quantile`).

use super::{CandidateGrid, FactMechanism, GridCounts, Released};
use crate::error::check_epsilon;
use crate::{ExponentialMechanism, NoiseError, ReleaseRng};

/// The quantile target `p·n` is snapped to this grid, the exponential mechanism's default
/// utility grid for sensitivity 1, so that utilities are exact in floating point.
const TARGET_GRID: f64 = 1.0 / (1u64 << 20) as f64;

/// A private p-quantile: the exponential mechanism over a public candidate grid
/// `c_0 < c_1 < …` with utility `u(c_j) = −dist(p·n, [#{x ≤ c_{j−1}}, #{x ≤ c_j}])` (the
/// distance from the target rank to the ranks the cell `(c_{j−1}, c_j]` spans; `#{x ≤ c_{−1}}
/// = 0`), candidate `c_j` chosen with probability `∝ exp(ε·u(c_j)/2)`, sampled exactly
/// ([`ExponentialMechanism`]: integer arithmetic, no floating-point Gumbel trick). The
/// smallest candidate at or above the quantile has utility 0.
///
/// **Why the cell, not `−|#{x ≤ c} − p·n|`.** That utility is flat above the data: when a
/// point mass holds the quantile (every row of one-hot data has the same norm; a column
/// with one value), every candidate above it scores the same and the release was uniform
/// over them — up to 2⁶⁴ on a norm grid. The cell's distance gives that mass's own cell
/// utility 0 and every other cell at least `min(p, 1 − p)·n` less.
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
/// joins), so both ends of every cell's rank interval move by at most 1, and the distance
/// from a fixed point `t` to an interval `[a, b]` (`a ≤ b`) moves by at most the larger of
/// the ends' moves: every utility moves by at most 1 whatever the target `t` — an integer
/// or not: sensitivity 1.
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

    /// `u(c_j) = −dist(t, [#{x ≤ c_{j−1}}, #{x ≤ c_j}])`, exactly, for the target `t`
    /// (sensitivity 1).
    pub(crate) fn utilities(&self, counts: &GridCounts) -> Result<Vec<f64>, NoiseError> {
        counts.check_not_empty()?;
        let target = snapped_target(self.p, counts.rows());
        let at_most = counts.at_most();
        Ok(at_most
            .iter()
            .enumerate()
            .map(|(j, &upper)| {
                let lower = if j == 0 { 0 } else { at_most[j - 1] };
                -(lower as f64 - target).max(target - upper as f64).max(0.0)
            })
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
