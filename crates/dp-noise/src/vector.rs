//! Vector noise with density ∝ exp(−β‖b‖₂) on ℝ^d (docs/src/reference/algorithms.md §2), the noise of output
//! and objective perturbation.

use rand::Rng;

use rand_distr::{Distribution, Gamma, StandardNormal};

use crate::error::{check_epsilon, check_sensitivity};
use crate::{NoiseError, ReleaseRng};

/// The distribution on ℝ^d with density `ν(b) ∝ exp(−β‖b‖₂)`.
///
/// Sampled as norm × direction: `‖b‖ ~ Gamma(shape d, scale 1/β)` (mean `d/β`) and a
/// direction uniform on the unit sphere, independent of the norm. (Polar coordinates:
/// the density of the norm r is ∝ r^{d−1} e^{−βr}, which is that Gamma.)
///
/// # Privacy
/// If a vector-valued function `f` has L2 sensitivity `Δ` (`‖f(D) − f(D')‖₂ ≤ Δ` for
/// neighbouring datasets), releasing `f(D) + b` is **ε-DP with ε = βΔ**: the densities at
/// any output differ by the factor `exp(β(‖b'‖ − ‖b‖)) ≤ exp(βΔ)`.
/// [`GammaNormVector::from_epsilon`] sets `β = ε/Δ` (rounded down, so ε is not exceeded).
/// The running time depends on the noise only (rejection steps of the Gamma and normal
/// samplers), not on the data; the time of a whole mechanism (a solver run on the data)
/// does depend on the data and is not covered by any guarantee here.
///
/// # Numerics
/// The guarantee holds in idealized real arithmetic. The Gamma and Gaussian draws are
/// floating point (rand_distr's Marsaglia–Tsang Gamma and ziggurat normals); there is no
/// practical exact-arithmetic form of this distribution. Its distribution is tested hard
/// instead: the norm (KS against the Gamma CDF at d = 1, 2, 3, 5, 1000, 100000), the
/// direction (Student-t and sign tests) and, at d = 3, the exact one-dimensional marginal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GammaNormVector {
    dim: usize,
    beta: f64,
}

/// Largest dimension accepted: 2²⁶ coordinates (512 MiB per vector). Larger requests are
/// refused before anything is allocated.
pub const MAX_DIMENSION: usize = 1 << 26;

/// Refuses a dimension of 0 or above [`MAX_DIMENSION`], before anything is allocated.
pub(crate) fn check_dimension(dim: usize) -> Result<(), NoiseError> {
    if dim == 0 {
        return Err(NoiseError::ZeroDimension);
    }
    if dim > MAX_DIMENSION {
        return Err(NoiseError::DimensionTooLarge {
            dim,
            max: MAX_DIMENSION,
        });
    }
    Ok(())
}

/// Refuses a rate β that is not finite and > 0, or so small that the norm, Gamma(d, 1/β),
/// could overflow: it exceeds `(d + √(80d) + 40)/β` with probability below e^−40 (the Gamma
/// tail `P(X ≥ d + √(2dt) + t) ≤ e^−t`), and that bound must be finite, or draws would come
/// out infinite (a subnormal β makes even the scale 1/β infinite).
pub(crate) fn check_rate(dim: usize, beta: f64) -> Result<(), NoiseError> {
    let d = dim as f64;
    let tail_norm = (d + (80.0 * d).sqrt() + 40.0) / beta;
    if beta.is_finite() && beta > 0.0 && tail_norm.is_finite() {
        Ok(())
    } else {
        Err(NoiseError::InvalidBeta(beta))
    }
}

impl GammaNormVector {
    /// Noise in dimension `dim ≥ 1` with rate `beta > 0`.
    pub fn new(dim: usize, beta: f64) -> Result<Self, NoiseError> {
        check_dimension(dim)?;
        check_rate(dim, beta)?;
        Ok(Self { dim, beta })
    }

    /// Noise that makes the release of a function with L2 sensitivity `l2_sensitivity`
    /// ε-DP: `β = ε / Δ`, rounded down.
    pub fn from_epsilon(dim: usize, epsilon: f64, l2_sensitivity: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let sensitivity = check_sensitivity(l2_sensitivity)?;
        // fl(ε/Δ) is within half an ulp of ε/Δ; one ulp down is below it.
        let beta = (epsilon / sensitivity).next_down();
        Self::new(dim, beta)
    }

    /// The dimension d.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The rate β of the density `exp(−β‖b‖)`.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The ε this noise gives a function of L2 sensitivity `l2_sensitivity`: `βΔ`, rounded up.
    pub fn epsilon_for_sensitivity(&self, l2_sensitivity: f64) -> f64 {
        (self.beta * l2_sensitivity).next_up()
    }

    /// The mean norm `d/β`.
    pub fn expected_norm(&self) -> f64 {
        self.dim as f64 / self.beta
    }

    /// One noise vector.
    pub fn sample<R: ReleaseRng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        let mut out = vec![0.0; self.dim];
        fill_norm_times_direction(&mut out, self.dim as f64, 1.0 / self.beta, rng);
        out
    }

    /// Writes one noise vector into `out`, which must have length `d`.
    pub fn sample_into<R: ReleaseRng + ?Sized>(
        &self,
        out: &mut [f64],
        rng: &mut R,
    ) -> Result<(), NoiseError> {
        if out.len() != self.dim {
            return Err(NoiseError::DimensionMismatch {
                expected: self.dim,
                found: out.len(),
            });
        }
        fill_norm_times_direction(out, self.dim as f64, 1.0 / self.beta, rng);
        Ok(())
    }
}

/// Fills `out` with `r · u`, `r ~ Gamma(norm_shape, scale norm_scale)` and `u` uniform on the
/// sphere. Production passes shape d and scale 1/β; tests pass broken parameters to prove
/// that the statistical tests notice.
pub(crate) fn fill_norm_times_direction<R: Rng + ?Sized>(
    out: &mut [f64],
    norm_shape: f64,
    norm_scale: f64,
    rng: &mut R,
) {
    let norm = Gamma::new(norm_shape, norm_scale)
        .expect("shape and scale were validated as finite and positive")
        .sample(rng);
    fill_uniform_direction(out, rng);
    out.iter_mut().for_each(|x| *x *= norm);
}

/// Fills `out` with a point uniform on the unit sphere: a standard Gaussian vector,
/// redrawn in the (probability-zero) event that it is 0, divided by its norm.
pub(crate) fn fill_uniform_direction<R: Rng + ?Sized>(out: &mut [f64], rng: &mut R) {
    loop {
        let mut squared_norm = 0.0;
        for x in out.iter_mut() {
            let g: f64 = StandardNormal.sample(rng);
            *x = g;
            squared_norm += g * g;
        }
        if squared_norm > 0.0 {
            let inverse_norm = squared_norm.sqrt().recip();
            out.iter_mut().for_each(|x| *x *= inverse_norm);
            return;
        }
    }
}

#[cfg(test)]
#[path = "vector_tests.rs"]
mod tests;

/// Continuous Gaussian noise `N(0, σ²·I_d)`, drawn in floating point (rand_distr's ziggurat
/// normals), for noise that is **never released directly**: objective perturbation's
/// random linear term, whose proof needs a density on ℝ^d (a lattice-valued term would let
/// neighbouring datasets map to disjoint sets of minimizers). Releases of a noisy real
/// vector use [`crate::DiscreteGaussianVector`] instead.
///
/// # Numerics
/// As for [`GammaNormVector`]: the guarantees that use it hold in idealized real arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GaussianVector {
    dim: usize,
    sigma: f64,
}

impl GaussianVector {
    /// Noise in dimension `dim ≥ 1` with standard deviation `sigma` (finite, > 0) per
    /// coordinate.
    pub fn new(dim: usize, sigma: f64) -> Result<Self, NoiseError> {
        check_dimension(dim)?;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(NoiseError::InvalidScale(sigma));
        }
        Ok(Self { dim, sigma })
    }

    /// The standard deviation per coordinate.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// One draw.
    pub fn sample<R: ReleaseRng + ?Sized>(&self, rng: &mut R) -> Vec<f64> {
        (0..self.dim)
            .map(|_| {
                let z: f64 = StandardNormal.sample(rng);
                z * self.sigma
            })
            .collect()
    }
}
