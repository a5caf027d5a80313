//! The discrete Gaussian on the integers, sampled exactly (Canonne, Kamath & Steinke 2020,
//! "The Discrete Gaussian for Differential Privacy", Algorithm 3), and its snapped vector
//! form for released real vectors.

use crate::discrete_laplace::DiscreteLaplace;
use crate::exact::{Ratio, bernoulli_exp_neg_parts};
use crate::grid::Grid;
use crate::vector::check_dimension;
use crate::{NoiseError, ReleaseRng, Zcdp};

/// Parts of a variance ratio stay below 2⁶² so that `2·n·m·t²` fits in 128 bits.
const MAX_PART: u128 = 1 << 62;

/// The discrete Gaussian on ℤ with variance parameter `σ² = numerator/denominator`:
/// `P(K = k) ∝ exp(−k²/(2σ²))`.
///
/// Sampled with integer arithmetic only (CKS20 Algorithm 3): draw `Y` from the discrete
/// Laplace of scale `t = ⌊σ⌋ + 1` ([`DiscreteLaplace`], exact) and keep it with probability
/// `exp(−(|Y| − σ²/t)²/(2σ²))`, an exact Bernoulli of a ratio of integers. The law of the
/// output is exactly the discrete Gaussian, with one stated exception: a proposal whose
/// acceptance exponent is at least 2¹²⁸ is rejected outright instead of with probability
/// `1 − e^{−x}` (it would need `|Y| > 2⁶³` or so; the law moves by less than `e^{−2¹²⁸}`).
///
/// # Privacy
/// Adding `K` to an integer-valued query whose value moves by at most `Δ` between
/// neighbouring datasets is `Δ²/(2σ²)`-zCDP (CKS20 Theorem 4): [`DiscreteGaussian::zcdp`].
/// Convert to (ε, δ) with [`Zcdp::epsilon`].
///
/// The guarantee covers the value drawn, not the time taken to draw it: the number of
/// proposals and the work per proposal grow with the draw's magnitude, exactly as for
/// [`DiscreteLaplace`] (same structure, same advice: draw off the request path, or answer
/// at fixed time slots). What remains: the time is a function of the noise only, never of
/// the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscreteGaussian {
    /// σ² = n / m.
    n: u128,
    m: u128,
    /// `t = ⌊σ⌋ + 1`, the proposal's scale.
    t: u128,
    /// `2·n·m·t²`, the denominator of the acceptance exponent.
    denominator: u128,
    proposal: DiscreteLaplace,
}

impl DiscreteGaussian {
    /// Variance parameter exactly `numerator / denominator` (both ≥ 1 and < 2⁶²).
    pub fn from_ratio(numerator: u64, denominator: u64) -> Result<Self, NoiseError> {
        if numerator == 0 || denominator == 0 {
            return Err(NoiseError::InvalidRatio {
                numerator,
                denominator,
            });
        }
        let (n, m) = (u128::from(numerator), u128::from(denominator));
        if n >= MAX_PART || m >= MAX_PART {
            return Err(NoiseError::UnsupportedParameters(format!(
                "discrete Gaussian variance {numerator}/{denominator}: both parts must be \
                 below 2^62"
            )));
        }
        // ⌊σ⌋ = the largest s with s²·m ≤ n (s < 2³¹).
        let (mut lo, mut hi) = (0u128, 1u128 << 31);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if mid * mid * m <= n {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let t = lo + 1;
        let denominator = t
            .checked_mul(t)
            .and_then(|t2| t2.checked_mul(2 * n))
            .and_then(|x| x.checked_mul(m))
            .ok_or_else(|| {
                NoiseError::UnsupportedParameters(format!(
                    "discrete Gaussian variance {numerator}/{denominator} is too finely \
                     represented (2·n·m·t² overflows 128 bits)"
                ))
            })?;
        Ok(Self {
            n,
            m,
            t,
            denominator,
            proposal: DiscreteLaplace::from_ratio(t as u64, 1)?,
        })
    }

    /// The smallest variance of the form `n / 2^p` (about 40 significant bits, `p ≤ 61`;
    /// an integer from 2⁴⁰ up) that is at least `variance`: never less noise than asked.
    /// Variances up to 2⁶² are supported.
    pub fn with_variance_at_least(variance: f64) -> Result<Self, NoiseError> {
        if !(variance.is_finite() && variance > 0.0) {
            return Err(NoiseError::InvalidScale(variance));
        }
        if variance >= 2f64.powi(62) - 2f64.powi(10) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "discrete Gaussian variance {variance:?} exceeds 2^62"
            )));
        }
        let shift = (40 - variance.log2().floor() as i32).clamp(0, 61);
        // variance · 2^shift is an exact power-of-two scaling; its ceiling is exact.
        let numerator = (variance * 2f64.powi(shift)).ceil() as u64;
        Self::from_ratio(numerator.max(1), 1u64 << shift)
    }

    /// σ² (rounded to the nearest f64).
    pub fn variance(&self) -> f64 {
        self.n as f64 / self.m as f64
    }

    /// σ² as the exact ratio `(numerator, denominator)` the sampler uses.
    pub fn variance_ratio(&self) -> (u64, u64) {
        (self.n as u64, self.m as u64)
    }

    /// The zCDP guarantee of adding this noise to an integer query of sensitivity
    /// `sensitivity`: `ρ = Δ²/(2σ²)`, rounded up.
    pub fn zcdp(&self, sensitivity: f64) -> Result<Zcdp, NoiseError> {
        // σ rounded down bounds ρ from above: n and m as doubles and their quotient err by
        // half an ulp each, 4·2⁻⁵² covers them; sqrt is correctly rounded, one ulp down.
        let variance = self.variance() * (1.0 - 4.0 * f64::EPSILON);
        let sigma = variance.sqrt().next_down();
        Zcdp::gaussian(sensitivity, sigma)
    }

    /// `P(K = k)`, for testing and analysis (floating point).
    pub fn pmf(&self, k: i64) -> f64 {
        let v = self.variance();
        (-(k as f64).powi(2) / (2.0 * v)).exp() / self.normalizer()
    }

    /// `P(K ≤ k)`, for testing and analysis (floating point; summed outwards from the
    /// nearer tail, so only for variances the tests use, up to about 10⁸).
    pub fn cdf(&self, k: i64) -> f64 {
        let v = self.variance();
        let reach = (40.0 * v.sqrt() + 40.0) as i64;
        let mass = |range: std::ops::RangeInclusive<i64>| -> f64 {
            range
                .map(|j| (-(j as f64).powi(2) / (2.0 * v)).exp())
                .sum::<f64>()
                / self.normalizer()
        };
        if k < 0 {
            mass((-reach).min(k)..=k)
        } else {
            1.0 - mass(k + 1..=(k + 1).max(reach))
        }
    }

    /// `Σ_k exp(−k²/(2σ²))`: summed directly for small σ, else by Poisson summation
    /// (`√(2π)σ·(1 + 2e^{−2π²σ²} + …)`, whose next term is below 10⁻³⁰⁰ for σ ≥ 8).
    fn normalizer(&self) -> f64 {
        let v = self.variance();
        let sigma = v.sqrt();
        if sigma < 8.0 {
            let reach = (40.0 * sigma + 40.0) as i64;
            (-reach..=reach)
                .map(|j| (-(j as f64).powi(2) / (2.0 * v)).exp())
                .sum()
        } else {
            (2.0 * std::f64::consts::PI).sqrt() * sigma
        }
    }

    /// One draw.
    pub fn sample<R: ReleaseRng + ?Sized>(&self, rng: &mut R) -> i128 {
        loop {
            let y = self.proposal.sample(rng);
            if self.accept(y.unsigned_abs(), rng) {
                return y;
            }
        }
    }

    /// Bernoulli(exp(−(|Y| − σ²/t)²/(2σ²))) = Bernoulli(exp(−q²/D)) with
    /// `q = |Y|·m·t − n` and `D = 2·n·m·t²`, exactly.
    fn accept<R: ReleaseRng + ?Sized>(&self, magnitude: u128, rng: &mut R) -> bool {
        let (hi, lo) = mul_wide(magnitude, self.m * self.t);
        if hi != 0 {
            // q ≥ 2¹²⁷, so the exponent q²/D ≥ 2²⁵⁴/2¹²⁶: see the type's note.
            return false;
        }
        let q = lo.abs_diff(self.n);
        let (whole, remainder) = if q < 1 << 64 {
            let square = q * q;
            (square / self.denominator, square % self.denominator)
        } else {
            let (sh, sl) = mul_wide(q, q);
            match div_wide(sh, sl, self.denominator) {
                Some(parts) => parts,
                None => return false, // exponent ≥ 2¹²⁸: see the type's note
            }
        };
        bernoulli_exp_neg_parts(whole, Ratio::new(remainder, self.denominator), rng)
    }
}

/// `a·b` as a 256-bit `(high, low)` pair.
fn mul_wide(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = (1 << 64) - 1;
    let (a1, a0) = (a >> 64, a & MASK);
    let (b1, b0) = (b >> 64, b & MASK);
    let low = a0 * b0;
    let cross1 = a1 * b0;
    let cross2 = a0 * b1;
    let high = a1 * b1;
    let (mid, mid_carry) = cross1.overflowing_add(cross2);
    let (low_sum, low_carry) = low.overflowing_add(mid << 64);
    let high = high + (mid >> 64) + (u128::from(mid_carry) << 64) + u128::from(low_carry);
    (high, low_sum)
}

/// `(high·2¹²⁸ + low) / d` and its remainder, or `None` when the quotient does not fit in
/// 128 bits (`high ≥ d`). Bit-by-bit long division.
fn div_wide(high: u128, low: u128, d: u128) -> Option<(u128, u128)> {
    if high >= d {
        return None;
    }
    let (mut remainder, mut quotient) = (high, 0u128);
    for i in (0..128).rev() {
        let carry = remainder >> 127;
        remainder = (remainder << 1) | ((low >> i) & 1);
        quotient <<= 1;
        // The true remainder is carry·2¹²⁸ + remainder < 2d: one subtraction suffices.
        if carry == 1 || remainder >= d {
            remainder = remainder.wrapping_sub(d);
            quotient |= 1;
        }
    }
    Some((quotient, remainder))
}

/// Discrete Gaussian noise for a released real vector: the vector is snapped to a grid
/// `g = 2^k`, independent discrete Gaussian noise of variance `(σ/g)²` (rounded up) is
/// added to every grid index, and the released vector is `g ·` (index + noise).
///
/// The grid is the largest power of two at most `max(Δ·2⁻²⁰/√d, σ·2⁻²⁹)`: fine enough that
/// rounding adds a relative 2⁻²⁰ at most to the sensitivity, coarse enough that the
/// variance in grid units stays below 2⁶². It depends on (d, Δ, σ) only, never on the data.
///
/// # Privacy
/// For vectors with `‖v − v'‖₂ ≤ Δ`, the grid indices (each `round(clamp(v_i/g, ±2⁶²))`)
/// satisfy `‖i − i'‖₂ ≤ Δ/g + √d`: clamping is a contraction, and rounding moves each
/// coordinate by at most ½, so each coordinate's difference moves by at most 1. Each noisy
/// coordinate is a discrete Gaussian mechanism, and the Rényi divergence of independent
/// coordinates adds up: `D_α ≤ Σ α(i_j − i'_j)²/(2σ_g²) = α‖i − i'‖²/(2σ_g²)` (CKS20
/// Theorem 4 per coordinate, integer shifts). So the release is ρ-zCDP with
/// `ρ = (Δ + g√d)²/(2σ²)`, rounded up ([`DiscreteGaussianVector::zcdp`]); the rounding's
/// cost is in that ρ, not hidden. Multiplying by g is post-processing, exact below 2⁵³
/// grid steps. No floating-point value of the noise ever exists, so the low bits of a
/// release carry nothing about the input beyond its grid index (Mironov's attack and the
/// Gaussian-sampler attacks of Jin et al. 2022 need a floating-point noise draw).
///
/// Timing as for [`DiscreteGaussian`]: a function of the noise only.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscreteGaussianVector {
    dim: usize,
    grid: Grid,
    noise: DiscreteGaussian,
    zcdp: Zcdp,
}

impl DiscreteGaussianVector {
    /// Noise of standard deviation at least `sigma` per coordinate, for vectors of
    /// dimension `dim` whose L2 sensitivity is `l2_sensitivity`. Everything is checked here,
    /// before anything is allocated or drawn.
    pub fn new(dim: usize, l2_sensitivity: f64, sigma: f64) -> Result<Self, NoiseError> {
        check_dimension(dim)?;
        let sensitivity = crate::error::check_sensitivity(l2_sensitivity)?;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(NoiseError::InvalidScale(sigma));
        }
        let root_d = (dim as f64).sqrt().next_up();
        let target = (sensitivity * 2f64.powi(-20) / root_d).max(sigma * 2f64.powi(-29));
        if !target.is_normal() {
            return Err(NoiseError::UnsupportedParameters(format!(
                "sensitivity {sensitivity:?} and sigma {sigma:?} need a grid below the \
                 normal floats"
            )));
        }
        let mut exponent = target.log2().floor() as i32;
        while 2f64.powi(exponent) > target {
            exponent -= 1;
        }
        while 2f64.powi(exponent + 1) <= target {
            exponent += 1;
        }
        let grid = Grid::with_exponent(sensitivity, exponent)?;
        let g = grid.spacing();
        // σ/g is an exact power-of-two scaling; its square rounded up.
        let sigma_steps = sigma / g;
        let noise =
            DiscreteGaussian::with_variance_at_least((sigma_steps * sigma_steps).next_up())?;
        // Index sensitivity Δ/g + √d (Δ/g exact), rounded up; the noise's variance is at
        // least sigma_steps², so ρ at sigma_steps bounds the true one.
        let index_sensitivity = crate::rounding::add_rounding_up(sensitivity / g, root_d);
        let zcdp = Zcdp::gaussian(index_sensitivity, sigma_steps)?;
        Ok(Self {
            dim,
            grid,
            noise,
            zcdp,
        })
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The grid spacing g every released coordinate is a multiple of.
    pub fn grid(&self) -> f64 {
        self.grid.spacing()
    }

    /// The per-coordinate noise in grid units.
    pub fn noise(&self) -> &DiscreteGaussian {
        &self.noise
    }

    /// The guarantee of one release: `ρ = (Δ + g√d)²/(2σ²)`, rounded up.
    pub fn zcdp(&self) -> Zcdp {
        self.zcdp
    }

    /// `values` snapped to the grid plus the noise. Refuses a wrong length or a non-finite
    /// value (naming its position) before drawing anything.
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        values: &[f64],
        rng: &mut R,
    ) -> Result<Vec<f64>, NoiseError> {
        if values.len() != self.dim {
            return Err(NoiseError::DimensionMismatch {
                expected: self.dim,
                found: values.len(),
            });
        }
        let indices = values
            .iter()
            .enumerate()
            .map(|(i, &v)| self.grid.index(v, i))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(indices
            .into_iter()
            .map(|index| {
                self.grid
                    .value(index.saturating_add(self.noise.sample(rng)))
            })
            .collect())
    }
}

#[cfg(test)]
#[path = "discrete_gaussian_tests.rs"]
mod tests;
