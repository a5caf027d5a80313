//! Selecting one of finitely many candidates by utility: the exponential mechanism,
//! sampled exactly, and permute-and-flip.

use rand::Rng;

use crate::error::{check_epsilon, check_sensitivity};
use crate::exact::{Ratio, bernoulli_exp_neg, scaled_floor, uniform_below};
use crate::grid::Grid;
use crate::{NoiseError, ReleaseRng};

/// Largest power of two allowed in the denominator of the exponent coefficient.
const MAX_COEFFICIENT_SHIFT: i32 = 110;

/// The exact form of "probability ∝ exp(ε·u/(2Δ))" shared by both selection mechanisms:
/// utilities snapped to a grid, and the coefficient `ε/(2S)` as an exact ratio rounded down.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ExactScoring {
    epsilon: f64,
    sensitivity: f64,
    grid: Grid,
    /// `c = numerator / 2^shift ≤ ε / (2S)`, S the grid-index sensitivity.
    coefficient: Ratio,
}

impl ExactScoring {
    fn new(epsilon: f64, sensitivity: f64, grid_exponent: Option<i32>) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let sensitivity = check_sensitivity(sensitivity)?;
        let grid = match grid_exponent {
            Some(exponent) => Grid::with_exponent(sensitivity, exponent)?,
            None => Grid::for_sensitivity(sensitivity)?,
        };
        // fl(ε/(2S)) is within half an ulp of ε/(2S) (2S is exact). Scaled by 2^shift to lie
        // in [2^52, 2^53), that is an error below 1, so ⌊·⌋ − 1 is a safe lower bound.
        let coefficient = epsilon / (2.0 * grid.index_sensitivity() as f64);
        // Subnormal or zero coefficients are far below any representable shift; checking
        // first keeps log2 finite.
        let shift = if coefficient >= f64::MIN_POSITIVE {
            52 - coefficient.log2().floor() as i32
        } else {
            i32::MAX
        };
        if !(0..=MAX_COEFFICIENT_SHIFT).contains(&shift) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "epsilon {epsilon:?} with sensitivity {sensitivity:?} is outside the range of the \
                 exact sampler"
            )));
        }
        let numerator = scaled_floor(coefficient, shift)
            .and_then(|n| n.checked_sub(1))
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                NoiseError::UnsupportedParameters(format!("cannot represent epsilon {epsilon:?}"))
            })?;
        Ok(Self {
            epsilon,
            sensitivity,
            grid,
            coefficient: Ratio::new(numerator, 1u128 << shift),
        })
    }

    /// `x_i = c · (m* − m_i)` for grid indices `m_i` of the utilities: candidate i is to be
    /// chosen with probability ∝ exp(−x_i), exactly.
    fn exponents(&self, utilities: &[f64]) -> Result<Vec<Ratio>, NoiseError> {
        if utilities.is_empty() {
            return Err(NoiseError::NoCandidates);
        }
        let indices = utilities
            .iter()
            .enumerate()
            .map(|(i, &u)| self.grid.index(u, i))
            .collect::<Result<Vec<i128>, _>>()?;
        let best = *indices.iter().max().expect("not empty");
        // Gaps are ≤ 2^63 (indices are clamped to ±2^62) and the coefficient numerator
        // < 2^53: the product stays below 2^116.
        Ok(indices
            .iter()
            .map(|&m| {
                let gap = (best - m) as u128;
                Ratio::new(
                    self.coefficient.numerator * gap,
                    self.coefficient.denominator,
                )
            })
            .collect())
    }

    /// The probabilities ∝ exp(−x_i) in floating point, for inspection.
    fn softmax(exponents: &[Ratio]) -> Vec<f64> {
        let weights: Vec<f64> = exponents.iter().map(|x| (-x.to_f64()).exp()).collect();
        let total: f64 = weights.iter().sum();
        weights.iter().map(|w| w / total).collect()
    }
}

/// The exponential mechanism (McSherry–Talwar 2007) over a finite list of candidates with
/// real utilities: candidate `i` is chosen with probability ∝ `exp(ε·u_i / (2Δ))`.
///
/// Sampled **exactly**: utilities are snapped to a grid (as in [`crate::Laplace`]), the
/// coefficient `ε/(2S)` is an exact ratio rounded down, and the selection is a rejection
/// sampler — propose a uniform candidate, accept it with probability `exp(−x_i)` using
/// an exact Bernoulli(exp(−x)) (Canonne–Kamath–Steinke 2020). No floating-point Gumbel
/// trick: far-away candidates keep their tiny but positive probability instead of being
/// silently cut off by the bounded range of floating-point noise.
///
/// # Privacy
/// If every utility moves by at most `Δ` (the declared sensitivity) between neighbouring
/// datasets, the selection is **ε-DP**. With grid `g`, the snapped utilities move by at
/// most `S = ⌊Δ/g⌋ + 1` grid steps and the sampler draws exactly from
/// `∝ exp(c·m_i)` with `c ≤ ε/(2S)`, which is the exponential mechanism at ε or better
/// ([`ExponentialMechanism::epsilon`] reports the ε passed in).
///
/// The guarantee covers the output, not the running time: the number of proposals depends
/// on the utilities. Do not expose the time a selection takes; a service answering over a
/// network should respond at fixed time slots that every selection fits in.
///
/// # Numerics
/// Exact given ideal random bits. Utilities beyond `±2^62 · g` (default grid: about
/// `±4.4·10^12 · Δ`) are clamped there, which keeps the guarantee; NaN and infinities are
/// refused with an error naming the candidate. Each selection costs an expected
/// `m / Σ_j exp(−x_j) ≤ m` proposals for `m` candidates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExponentialMechanism {
    scoring: ExactScoring,
}

impl ExponentialMechanism {
    /// ε-DP selection for utilities of sensitivity `sensitivity`, default grid (`≈ Δ·2^−20`).
    pub fn new(epsilon: f64, sensitivity: f64) -> Result<Self, NoiseError> {
        Ok(Self {
            scoring: ExactScoring::new(epsilon, sensitivity, None)?,
        })
    }

    /// As [`ExponentialMechanism::new`] with the utility grid `2^grid_exponent` (chosen
    /// without looking at the data). Coarser grids add more rounding to the sensitivity:
    /// `S = ⌊Δ/g⌋ + 1` grid steps, so a grid as coarse as Δ itself halves the effective ε.
    pub fn with_grid_exponent(
        epsilon: f64,
        sensitivity: f64,
        grid_exponent: i32,
    ) -> Result<Self, NoiseError> {
        Ok(Self {
            scoring: ExactScoring::new(epsilon, sensitivity, Some(grid_exponent))?,
        })
    }

    /// Chooses the index of one candidate.
    pub fn select<R: ReleaseRng + ?Sized>(
        &self,
        utilities: &[f64],
        rng: &mut R,
    ) -> Result<usize, NoiseError> {
        let exponents = self.scoring.exponents(utilities)?;
        Ok(select_by_rejection(&exponents, rng))
    }

    /// The selection probabilities the sampler follows exactly, evaluated in floating point.
    pub fn selection_probabilities(&self, utilities: &[f64]) -> Result<Vec<f64>, NoiseError> {
        Ok(ExactScoring::softmax(&self.scoring.exponents(utilities)?))
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.scoring.epsilon
    }

    /// The declared sensitivity Δ of the utilities.
    pub fn sensitivity(&self) -> f64 {
        self.scoring.sensitivity
    }
}

/// Permute-and-flip (McKenna & Sheldon, NeurIPS 2020) — **not** the exponential mechanism,
/// a different ε-DP selection rule: visit the candidates in a uniformly random order and
/// stop at candidate `i` with probability `exp(ε(u_i − u*)/(2Δ))` (`u*` the best utility,
/// which always stops). Its expected utility is never worse than the exponential
/// mechanism's and often better.
///
/// # Privacy
/// ε-DP when every utility moves by at most `Δ` between neighbouring datasets (McKenna &
/// Sheldon, Theorem 1). Sampled exactly, on the same grid and with the same exact
/// coefficient `c ≤ ε/(2S)` as [`ExponentialMechanism`]. As there, the guarantee covers
/// the output, not the running time (how many candidates are visited).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PermuteAndFlip {
    scoring: ExactScoring,
}

impl PermuteAndFlip {
    /// ε-DP permute-and-flip for utilities of sensitivity `sensitivity`.
    pub fn new(epsilon: f64, sensitivity: f64) -> Result<Self, NoiseError> {
        Ok(Self {
            scoring: ExactScoring::new(epsilon, sensitivity, None)?,
        })
    }

    /// Chooses the index of one candidate.
    pub fn select<R: ReleaseRng + ?Sized>(
        &self,
        utilities: &[f64],
        rng: &mut R,
    ) -> Result<usize, NoiseError> {
        let exponents = self.scoring.exponents(utilities)?;
        Ok(permute_and_flip(&exponents, rng))
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.scoring.epsilon
    }
}

/// Index i with probability ∝ exp(−x_i): propose uniformly, accept with exp(−x_i).
/// Terminates with probability 1 because some x_i is 0.
fn select_by_rejection<R: Rng + ?Sized>(exponents: &[Ratio], rng: &mut R) -> usize {
    loop {
        let i = uniform_below(exponents.len() as u128, rng) as usize;
        if bernoulli_exp_neg(exponents[i], rng) {
            return i;
        }
    }
}

/// Visit candidates in a uniformly random order (lazy Fisher–Yates) and stop at i with
/// probability exp(−x_i). The best candidate has x = 0 and always stops.
fn permute_and_flip<R: Rng + ?Sized>(exponents: &[Ratio], rng: &mut R) -> usize {
    let mut order: Vec<usize> = (0..exponents.len()).collect();
    for visited in 0..order.len() {
        let pick = visited + uniform_below((order.len() - visited) as u128, rng) as usize;
        order.swap(visited, pick);
        let candidate = order[visited];
        if bernoulli_exp_neg(exponents[candidate], rng) {
            return candidate;
        }
    }
    unreachable!("the best candidate has exponent 0 and is always accepted")
}

#[cfg(test)]
#[path = "exponential_tests.rs"]
mod tests;
