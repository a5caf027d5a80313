//! A pair of bounds on a real column whose range is unknown: two private quantiles, or a
//! noisy signed power-of-two histogram (SmartNoise's `approx_bounds`).

use super::{
    CandidateGrid, FactMechanism, GridCounts, PrivateQuantile, Released, check_open_probability,
    failure_threshold, histogram_noise, noisy_counts,
};
use crate::error::check_epsilon;
use crate::{DiscreteLaplace, NoiseError, ReleaseRng};

/// Released bounds `lower ≤ upper` (finite), with the clipping that makes a column fit
/// them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    lower: f64,
    upper: f64,
}

impl Bounds {
    /// Orders the pair (a data-independent post-processing of two released values).
    fn ordered(a: f64, b: f64) -> Self {
        Self {
            lower: a.min(b),
            upper: a.max(b),
        }
    }

    /// The lower bound.
    pub fn lower(&self) -> f64 {
        self.lower
    }

    /// The upper bound.
    pub fn upper(&self) -> f64 {
        self.upper
    }

    /// `x` clamped to `[lower, upper]` (NaN stays NaN).
    ///
    /// Clipping acts on each record alone, so a clipped data set and its neighbour still
    /// differ in one record at most: mechanisms run after it keep their guarantee (with the
    /// bounds' own ε added by composition).
    pub fn clip(&self, x: f64) -> f64 {
        x.clamp(self.lower, self.upper)
    }

    /// Clips every value in place.
    pub fn clip_all(&self, values: &mut [f64]) {
        for x in values {
            *x = self.clip(*x);
        }
    }
}

/// Bounds from two private quantiles: the p-quantile and the (1 − p)-quantile, each a
/// [`PrivateQuantile`] at ε/2 on the same public grid; the two are ordered if they cross.
///
/// # Privacy
/// **ε-DP** under replace-one with n public: two ε/2-DP releases on the same data compose
/// sequentially to ε; ordering them is post-processing. The grid must not depend on the
/// data. What [`PrivateQuantile`] says about running time applies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuantileBounds {
    epsilon: f64,
    lower: PrivateQuantile,
    upper: PrivateQuantile,
}

impl QuantileBounds {
    /// ε-DP bounds at the p- and (1 − p)-quantiles, `0 ≤ p ≤ 0.5`.
    pub fn new(epsilon: f64, p: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        if !(p.is_finite() && (0.0..=0.5).contains(&p)) {
            return Err(NoiseError::InvalidProbability {
                name: "lower quantile p (in [0, 0.5])",
                value: p,
            });
        }
        let half = epsilon / 2.0;
        if half + half > epsilon {
            return Err(NoiseError::UnsupportedParameters(format!(
                "epsilon {epsilon:?} cannot be halved exactly"
            )));
        }
        Ok(Self {
            epsilon,
            lower: PrivateQuantile::new(half, p)?,
            upper: PrivateQuantile::new(half, 1.0 - p)?,
        })
    }

    /// Releases bounds of `data` on `grid` (n ≥ 1; NaN and infinities refused).
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        data: &[f64],
        grid: &CandidateGrid,
        rng: &mut R,
    ) -> Result<Released<Bounds>, NoiseError> {
        let mut counts = GridCounts::new(grid.clone());
        counts.add_chunk(data)?;
        self.release_from_counts(&counts, rng)
    }

    /// Releases bounds of data already counted on a grid (the streaming path).
    pub fn release_from_counts<R: ReleaseRng + ?Sized>(
        &self,
        counts: &GridCounts,
        rng: &mut R,
    ) -> Result<Released<Bounds>, NoiseError> {
        counts.check_not_empty()?;
        let a = self.lower.release_from_counts(counts, rng)?.into_value();
        let b = self.upper.release_from_counts(counts, rng)?.into_value();
        Ok(Released::new(
            Bounds::ordered(a, b),
            FactMechanism::QuantileBounds,
            self.epsilon,
            0.0,
        ))
    }

    /// The ε of the guarantee (both quantiles together).
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
}

/// Bounds without a range, in the manner of SmartNoise's `approx_bounds` (after
/// Desfontaines' thesis): count the data in the cells of a public grid — by default the
/// signed powers of two ([`CandidateGrid::for_f64`]), cells `(−2^{k+1}, −2^k]`, …,
/// `(−2^−1074, 0]`, `(0, 2^−1074]`, …, `(2^k, 2^{k+1}]` — add exact discrete Laplace noise
/// to **every** cell, and release the lower end of the first cell and the upper end of the
/// last cell whose noisy count reaches a threshold τ (the open outer cells end at
/// `∓f64::MAX`).
///
/// τ is set by a public failure probability β: the smallest integer with
/// `(m + 1)·P(Z ≥ τ) ≤ β`, so that with probability at least 1 − β no empty cell passes
/// and the bounds come only from cells that hold data.
///
/// When no cell passes (few records, or records spread thinly), the release is `None`:
/// that outcome is part of the private output, computed from the noisy counts like any
/// other, and the ε is spent all the same.
///
/// # Privacy
/// **ε-DP** under replace-one with n public. One replaced record leaves one cell and
/// joins another: the vector of cell counts moves by at most 2 in L1 (docs/src/reference/algorithms.md §8),
/// so exact discrete Laplace noise of scale `t ≥ 2/ε` on every cell makes the whole noisy
/// histogram ε-DP (each output's probability changes by at most `e^{2/t} ≤ e^ε`); the
/// threshold, the choice of the first and last passing cells and their ends are
/// post-processing. The scale is rounded up (to `2/ε` rounded up, then to the sampler's
/// exact ratio). The grid must not depend on the data.
///
/// The guarantee covers the output, not the running time: the discrete Laplace sampler's
/// work grows with the noise's magnitude ([`DiscreteLaplace`]); do not expose how long a
/// release takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HistogramBounds {
    epsilon: f64,
    failure_probability: f64,
    noise: DiscreteLaplace,
}

impl HistogramBounds {
    /// ε-DP bounds whose threshold lets an empty cell pass with probability at most
    /// `failure_probability` (β, in (0, 1)) over all cells together.
    pub fn new(epsilon: f64, failure_probability: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let failure_probability =
            check_open_probability("failure probability (in (0, 1))", failure_probability)?;
        Ok(Self {
            epsilon,
            failure_probability,
            noise: histogram_noise(epsilon)?,
        })
    }

    /// Releases bounds of `data` on `grid` (n ≥ 1; NaN and infinities refused).
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        data: &[f64],
        grid: &CandidateGrid,
        rng: &mut R,
    ) -> Result<Released<Option<Bounds>>, NoiseError> {
        let mut counts = GridCounts::new(grid.clone());
        counts.add_chunk(data)?;
        self.release_from_counts(&counts, rng)
    }

    /// Releases bounds of data already counted on a grid (the streaming path).
    pub fn release_from_counts<R: ReleaseRng + ?Sized>(
        &self,
        counts: &GridCounts,
        rng: &mut R,
    ) -> Result<Released<Option<Bounds>>, NoiseError> {
        counts.check_not_empty()?;
        let threshold = self.threshold(counts.grid().cells());
        let noisy = noisy_counts(counts.cells().iter().copied(), &self.noise, rng);
        Ok(Released::new(
            bounds_from_noisy(counts.grid(), &noisy, threshold),
            FactMechanism::HistogramBounds,
            self.epsilon,
            0.0,
        ))
    }

    /// The threshold τ for a grid of `cells` cells.
    pub fn threshold(&self, cells: usize) -> i64 {
        failure_threshold(&self.noise, cells, self.failure_probability)
    }

    /// The noise added to every cell count.
    pub fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
}

/// The post-processing: the ends of the first and last cells whose noisy count reaches
/// the threshold, or `None`.
pub(super) fn bounds_from_noisy(
    grid: &CandidateGrid,
    noisy: &[i64],
    threshold: i64,
) -> Option<Bounds> {
    let first = noisy.iter().position(|&c| c >= threshold)?;
    let last = noisy.iter().rposition(|&c| c >= threshold)?;
    Some(Bounds::ordered(
        grid.cell_range(first).0,
        grid.cell_range(last).1,
    ))
}

#[cfg(test)]
#[path = "bounds_tests.rs"]
mod tests;
