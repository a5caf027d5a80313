//! AdaSSP, adaptive sufficient-statistics perturbation (Wang, "Revisiting differentially
//! private linear regression", UAI 2018, Algorithm 2), for ridge regression on a
//! [`RegressionSet`] (docs/src/reference/algorithms.md §10.1): three Gaussian releases,
//! λ_min(XᵀX), XᵀX and Xᵀt, and a ridge solve on them that is post-processing.

use std::f64::consts::SQRT_2;

use dp_noise::{DiscreteGaussianVector, ReleaseRng, Zcdp};
use faer::linalg::solvers::Solve;
use faer::{Mat, Side};

use crate::error::{MAX_REGULARIZATION, MIN_REGULARIZATION, check_epsilon};
use crate::gaussian::check_delta;
use crate::{
    ErmError, LinearModel, Loss, Mechanism, ModelMetadata, RegressionModel, RegressionSet,
};

/// Replace-one sensitivity of λ_min(XᵀX): 1 (Weyl; algorithms.md §10.1).
pub const ADASSP_EIGENVALUE_SENSITIVITY: f64 = 1.0;
/// Replace-one L2 sensitivity of XᵀX's upper triangle (diagonal included): √2.
pub const ADASSP_GRAM_SENSITIVITY: f64 = SQRT_2;
/// Replace-one L2 sensitivity of Xᵀt, targets scaled into [−1, 1]: 2.
pub const ADASSP_MOMENT_SENSITIVITY: f64 = 2.0;
/// The probability ρ with which AdaSSP's choice of λ may fall short of making the noisy
/// XᵀX + λI positive definite (Wang's ρ, 0.05 in his experiments). It costs no privacy.
pub const ADASSP_FAILURE_PROBABILITY: f64 = 0.05;
/// Most features an AdaSSP fit takes: it holds and decomposes d×d matrices.
pub const MAX_ADASSP_FEATURES: usize = 2048;

/// The loss an AdaSSP model records: least squares, written as the project writes it for
/// `LinearRegression` — Huber regression whose threshold (2) is the scaled targets' whole
/// range. With it the recorded objective `(1/n)Σ ℓ(r) + (Λ/2)‖w‖²`, `Λ = λ/(2n)`, is
/// `(Σ r²/2 + (λ/2)‖w‖²)/(2n)` for residuals within 2: the ridge problem AdaSSP solves.
const LEAST_SQUARES_THRESHOLD: f64 = 2.0;

/// The ridge regressor of AdaSSP at (ε, δ), with an optional extra ridge λ₀ ≥ 0 added to
/// the adaptive λ (a user's penalty: post-processing, free).
///
/// # Privacy
/// (ε, δ)-DP for datasets that differ in one row `(x, t)` replaced (n public), for rows
/// with `‖x‖₂ ≤ 1` and targets scaled into [−1, 1] ([`RegressionSet`]'s contract). Three
/// releases, each discrete Gaussian noise on a grid ([`DiscreteGaussianVector`], whose
/// zCDP counts the snapping), with replace-one L2 sensitivities
/// - λ_min(XᵀX): 1. Replacing x by x′ changes XᵀX by `x′x′ᵀ − xxᵀ`; `M − xxᵀ ⪯ M` and
///   `M − xxᵀ + x′x′ᵀ ⪰ M − xxᵀ ⪰ M − I`, so by Weyl's inequality λ_min moves by at most
///   ‖x‖², ‖x′‖² ≤ 1 either way.
/// - XᵀX (its d(d+1)/2 upper-triangle entries, mirrored into a symmetric noise matrix):
///   √2. The difference D = `x′x′ᵀ − xxᵀ` has `‖D‖_F² = ‖x‖⁴ + ‖x′‖⁴ − 2(xᵀx′)² ≤ 2`, and the
///   upper triangle's squared norm `(‖D‖_F² + Σ D_ii²)/2` is at most `‖D‖_F²`; x = e₁,
///   x′ = e₂ attains √2.
/// - Xᵀt: 2. `‖t′x′ − tx‖ ≤ |t′|‖x′‖ + |t|‖x‖ ≤ 2`; x′ = −x, t′ = t attains it.
///
/// Each release spends an equal third of the largest ρ whose CKS20 conversion certifies
/// (ε, δ) ([`Zcdp::largest_for`]); the three compose by adding ρ (tight for Gaussians),
/// and the composed ρ is converted once and checked against ε before any row is read.
/// The λ choice, the extra ridge and the solve read only the three releases: the model is
/// post-processing. δ = 0 is refused: AdaSSP has no pure-ε form here (objective or output
/// perturbation are the pure-ε regressors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaSsp {
    epsilon: f64,
    delta: f64,
    extra_ridge: f64,
}

/// The noise of an AdaSSP fit: public, from (ε, δ) and d only.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaSspCalibration {
    /// The ρ-zCDP of the three releases together.
    pub rho: f64,
    /// The ε that ρ certifies at the fit's δ (at most the asked ε).
    pub epsilon: f64,
    /// The noise's standard deviation on λ_min(XᵀX) (at least; the discrete Gaussian's
    /// variance is rounded up).
    pub sigma_eigenvalue: f64,
    /// The noise's standard deviation on each entry of XᵀX's upper triangle.
    pub sigma_gram: f64,
    /// The noise's standard deviation on each entry of Xᵀt.
    pub sigma_moment: f64,
}

/// A deliberate bug for the audit's mutation checks (never reachable from the public API).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) enum SspMutation {
    /// The mechanism as specified.
    Honest,
    /// Every sensitivity multiplied by this factor before the noise is calibrated.
    SensitivityScale(f64),
    /// Xᵀt computed from the targets in their own units, not scaled into [−1, 1].
    RawTargets,
}

/// The three noise vectors, built from (ε, δ, d) before any row is read.
struct Noise {
    eigenvalue: DiscreteGaussianVector,
    gram: DiscreteGaussianVector,
    moment: DiscreteGaussianVector,
    calibration: AdaSspCalibration,
}

/// The released sufficient statistics: everything the model is computed from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NoisyStatistics {
    /// λ_min(XᵀX) plus noise.
    pub(crate) eigenvalue: f64,
    /// XᵀX's upper triangle plus noise, column by column (`(i, j)`, i ≤ j).
    pub(crate) gram_upper: Vec<f64>,
    /// Xᵀt plus noise.
    pub(crate) moment: Vec<f64>,
}

impl AdaSsp {
    /// AdaSSP at (ε, δ): ε in (0, 1000], δ in (0, `MAX_DELTA`]. δ = 0 is refused by name.
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, ErmError> {
        check_epsilon(epsilon)?;
        if delta == 0.0 {
            return Err(ErmError::InvalidParameter {
                what: "delta",
                value: delta,
                requirement: "> 0 for AdaSSP, which releases Gaussian noise and has no \
                              pure-ε form: for δ = 0 use objective or output perturbation",
            });
        }
        check_delta(delta)?;
        Ok(Self {
            epsilon,
            delta,
            extra_ridge: 0.0,
        })
    }

    /// The same mechanism with `lambda` (finite, ≥ 0, on the scaled problem's
    /// `‖t − Xw‖² + λ‖w‖²`) added to the adaptive λ.
    pub fn extra_ridge(mut self, lambda: f64) -> Result<Self, ErmError> {
        if !(lambda.is_finite() && lambda >= 0.0) {
            return Err(ErmError::InvalidParameter {
                what: "extra ridge",
                value: lambda,
                requirement: "finite and >= 0",
            });
        }
        self.extra_ridge = lambda;
        Ok(self)
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The δ of the guarantee.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The noise a fit on `features` columns would use; every refusal such a fit would make
    /// from its parameters and sizes is made here.
    pub fn calibration(&self, features: usize) -> Result<AdaSspCalibration, ErmError> {
        Ok(self.noise(features, SspMutation::Honest)?.calibration)
    }

    /// Trains a ridge regressor on `data` by AdaSSP, every draw from `rng`.
    ///
    /// # Privacy
    /// (ε, δ)-DP for replace-one neighbours: see [`AdaSsp`]'s `# Privacy`. Every refusal
    /// (features above [`MAX_ADASSP_FEATURES`], a calibration that cannot certify ε) is
    /// made before any row is read; no error or `Debug` output carries a data value.
    pub fn fit_regression<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
    ) -> Result<(RegressionModel, AdaSspCalibration), ErmError> {
        self.fit_with(data, rng, SspMutation::Honest)
    }

    pub(crate) fn fit_with<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
        mutation: SspMutation,
    ) -> Result<(RegressionModel, AdaSspCalibration), ErmError> {
        let noise = self.noise(data.features(), mutation)?;
        let released = release(data, &noise, rng, mutation)?;
        let (weights, lambda) = ridge(&released, &noise.calibration, self.extra_ridge)?;
        let n = data.len() as f64;
        let metadata = ModelMetadata {
            mechanism: Mechanism::AdaSsp {
                epsilon: self.epsilon,
                delta: self.delta,
            },
            loss: Loss::huber_regression(LEAST_SQUARES_THRESHOLD)?,
            // A record only (see LEAST_SQUARES_THRESHOLD), kept within the file's range.
            regularization: (lambda / (LEAST_SQUARES_THRESHOLD * n))
                .clamp(MIN_REGULARIZATION, MAX_REGULARIZATION),
            features: weights.len(),
            noise_groups: None,
            feature_map: None,
            crate_version: env!("CARGO_PKG_VERSION").to_owned(),
        };
        let model =
            RegressionModel::from_linear(LinearModel::new(weights, metadata), data.target_scale());
        Ok((model, noise.calibration))
    }

    /// The three noise vectors at an equal third of ρ each, checked to compose within ε.
    fn noise(&self, features: usize, mutation: SspMutation) -> Result<Noise, ErmError> {
        if features == 0 || features > MAX_ADASSP_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "features for AdaSSP",
                value: features,
                requirement: "between 1 and MAX_ADASSP_FEATURES = 2048 (it decomposes a \
                              d×d matrix)",
            });
        }
        let scale = match mutation {
            SspMutation::SensitivityScale(factor) => factor,
            _ => 1.0,
        };
        let whole = Zcdp::largest_for(self.epsilon, self.delta)?;
        // A hair under a third, so that the three rounded-up ρ still add up within it.
        let share = whole.rho() / 3.0 * (1.0 - 1e-9);
        let eigenvalue = part(1, ADASSP_EIGENVALUE_SENSITIVITY * scale, share)?;
        let gram = part(
            features * (features + 1) / 2,
            ADASSP_GRAM_SENSITIVITY * scale,
            share,
        )?;
        let moment = part(features, ADASSP_MOMENT_SENSITIVITY * scale, share)?;
        let total = eigenvalue
            .zcdp()
            .compose(gram.zcdp())
            .compose(moment.zcdp());
        let epsilon = total.epsilon(self.delta)?;
        if epsilon > self.epsilon {
            return Err(ErmError::InvalidParameter {
                what: "epsilon",
                value: self.epsilon,
                requirement: "one AdaSSP's three releases can certify (their snapped noise \
                              composes above it)",
            });
        }
        let sigma = |v: &DiscreteGaussianVector| v.grid() * v.noise().variance().sqrt();
        let calibration = AdaSspCalibration {
            rho: total.rho(),
            epsilon,
            sigma_eigenvalue: sigma(&eigenvalue),
            sigma_gram: sigma(&gram),
            sigma_moment: sigma(&moment),
        };
        Ok(Noise {
            eigenvalue,
            gram,
            moment,
            calibration,
        })
    }
}

/// Discrete Gaussian noise for a release of `dim` values with L2 `sensitivity` whose zCDP,
/// snapping included, is at most `rho`: σ = Δ/√(2ρ), raised in steps of 2⁻¹⁸ until the
/// vector's own accounting fits (the snapping adds a relative 2⁻²⁰ at most).
fn part(dim: usize, sensitivity: f64, rho: f64) -> Result<DiscreteGaussianVector, ErmError> {
    let step = 1.0 + 2f64.powi(-18);
    let mut sigma = sensitivity / (2.0 * rho).sqrt() * step;
    for _ in 0..16 {
        let noise = DiscreteGaussianVector::new(dim, sensitivity, sigma)?;
        if noise.zcdp().rho() <= rho {
            return Ok(noise);
        }
        sigma *= step;
    }
    Err(ErmError::InvalidParameter {
        what: "zCDP share",
        value: rho,
        requirement: "one a snapped discrete Gaussian can meet",
    })
}

/// The exact statistics of `data`, then the three noisy releases.
fn release<R: ReleaseRng + ?Sized>(
    data: &RegressionSet,
    noise: &Noise,
    rng: &mut R,
    mutation: SspMutation,
) -> Result<NoisyStatistics, ErmError> {
    let (gram, moment) = exact_statistics(data, mutation);
    let eigenvalue = smallest_eigenvalue(&gram)?;
    let d = gram.ncols();
    let upper: Vec<f64> = (0..d)
        .flat_map(|j| (0..=j).map(move |i| (i, j)))
        .map(|(i, j)| gram[(j, i)])
        .collect();
    Ok(NoisyStatistics {
        eigenvalue: noise.eigenvalue.release(&[eigenvalue], rng)?[0],
        gram_upper: noise.gram.release(&upper, rng)?,
        moment: noise.moment.release(&moment, rng)?,
    })
}

/// XᵀX (lower triangle filled) and Xᵀt, t the scaled targets (or, for the raw-targets
/// mutant, the targets in their own units).
pub(crate) fn exact_statistics(
    data: &RegressionSet,
    mutation: SspMutation,
) -> (Mat<f64>, Vec<f64>) {
    let (n, d) = (data.len(), data.features());
    let design = data.rows().design();
    let mut gram = Mat::<f64>::zeros(d, d);
    design.add_weighted_gram_lower(&vec![1.0; n], gram.as_mut());
    let targets: Vec<f64> = match mutation {
        SspMutation::RawTargets => {
            let scale = data.target_scale();
            let raw = data.scaled_targets().iter().map(|&t| scale.unscale(t));
            raw.collect()
        }
        _ => data.scaled_targets().to_vec(),
    };
    let mut moment = vec![0.0; d];
    design.multiply_transpose(&targets, &mut moment);
    (gram, moment)
}

/// λ_min of a symmetric matrix given by its lower triangle.
pub(crate) fn smallest_eigenvalue(lower: &Mat<f64>) -> Result<f64, ErmError> {
    let eigenvalues = lower
        .self_adjoint_eigenvalues(Side::Lower)
        .map_err(|_| ErmError::NotConverged)?;
    Ok(eigenvalues[0])
}

/// Wang's steps 2, 3 and 6 on the releases: a private lower estimate of λ_min, the λ that
/// lifts the noisy XᵀX above its noise's operator norm with probability 1 − ρ, and the
/// ridge solve. Returns the weights and the λ used (extra ridge included).
///
/// With Z the symmetric noise matrix (i.i.d. N(0, σ²) entries on and above the diagonal),
/// `Z = Σ_{i≤j} g_ij A_ij` is a matrix Gaussian series with variance `‖Σ A_ij²‖ = d`, so
/// `P(‖Z‖ ≥ σ√(2d·ln(4d/ρ))) ≤ ρ/2` (Tropp 2012, Theorem 4.6); and the λ_min release
/// undershoots its noise by `σ₁√(2 ln(2/ρ))` or more with probability at most ρ/2.
/// Should the noisy matrix still not be positive definite after both (probability at most
/// ρ), λ is raised to lift its smallest eigenvalue to that operator-norm bound: a function
/// of the releases, so free.
pub(crate) fn ridge(
    released: &NoisyStatistics,
    calibration: &AdaSspCalibration,
    extra_ridge: f64,
) -> Result<(Vec<f64>, f64), ErmError> {
    let d = released.moment.len();
    let rho = ADASSP_FAILURE_PROBABILITY;
    let noise_norm = calibration.sigma_gram * (2.0 * d as f64 * (4.0 * d as f64 / rho).ln()).sqrt();
    let shift = calibration.sigma_eigenvalue * (2.0 * (2.0 / rho).ln()).sqrt();
    let eigenvalue_estimate = (released.eigenvalue - shift).max(0.0);
    let mut lambda = (noise_norm - eigenvalue_estimate).max(0.0) + extra_ridge;
    let mut gram = Mat::<f64>::zeros(d, d);
    let mut entries = released.gram_upper.iter();
    for j in 0..d {
        for i in 0..=j {
            let v = *entries.next().expect("d(d+1)/2 released entries");
            gram[(i, j)] = v;
            gram[(j, i)] = v;
        }
    }
    let solve = |lambda: f64| {
        let mut a = gram.clone();
        for i in 0..d {
            a[(i, i)] += lambda;
        }
        let llt = a.llt(Side::Lower).ok()?;
        let mut w = Mat::<f64>::from_fn(d, 1, |i, _| released.moment[i]);
        llt.solve_in_place(w.as_mut());
        let w: Vec<f64> = (0..d).map(|i| w[(i, 0)]).collect();
        w.iter().all(|v| v.is_finite()).then_some(w)
    };
    if let Some(w) = solve(lambda) {
        return Ok((w, lambda));
    }
    lambda = lambda.max(noise_norm - smallest_eigenvalue(&gram)?);
    let w = solve(lambda).ok_or(ErmError::NotConverged)?;
    Ok((w, lambda))
}

#[cfg(test)]
#[path = "adassp_tests.rs"]
mod tests;
