//! (ε, δ) mechanisms with Gaussian noise: output perturbation with the snapped discrete
//! Gaussian (zCDP accounting) and objective perturbation with Gaussian noise
//! (Kifer, Smith & Thakurta 2012).

use dp_noise::rounding::add_step_up;
use dp_noise::{
    DiscreteGaussianVector, GammaNormVector, GaussianVector, RdpCurve, ReleaseRng, Zcdp,
};
use dp_optim::{RowBlocks, Solution, SumsOracle};
use serde::{Deserialize, Serialize};

use crate::block_fit::{Answers, over_checked_blocks};
use crate::calibration::{
    MINIMIZER_NOISE_SHARE, MinimizerNoise, ObjectiveCalibration, noise_norm_bound, objective_noise,
    output_perturbation, release_grid, resolve_tolerance, tolerance_floor,
};
use crate::error::{check_epsilon, check_regularization};
use crate::estimator::{SolveWith, Task, snap_to_grid};
use crate::gaussian_profile::{self, objective_sigma};
use crate::mechanism::Mechanism;
use crate::model::{LinearModel, ModelMetadata};
use crate::{ErmError, ErmParams, Examples, Loss, Trainer, TrainingSet};

/// Largest noise norm a fit may need (as for the pure-ε mechanisms).
const MAX_NOISE_NORM: f64 = 1e100;

/// Which Gaussian mechanism.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GaussianMechanism {
    /// Minimize, then add snapped discrete Gaussian noise to the model.
    OutputPerturbation,
    /// Minimize an objective with a Gaussian random linear term.
    ObjectivePerturbation,
}

/// The noise a Gaussian fit uses, all functions of the parameters and the public sizes n, d.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GaussianCalibration {
    /// The ε of the (ε, δ) guarantee.
    pub epsilon: f64,
    /// The δ of the (ε, δ) guarantee.
    pub delta: f64,
    /// Standard deviation of the Gaussian noise per coordinate: on the model (output
    /// perturbation) or on the linear term `b` (objective perturbation).
    pub sigma: f64,
    /// The L2 sensitivity the Gaussian noise covers: of the approximate minimizer (output),
    /// or of the linear term, 2 (objective).
    pub l2_sensitivity: f64,
    /// The ρ-zCDP curve output perturbation spends (`None` for objective perturbation,
    /// whose Jacobian term is not a Gaussian's and is accounted directly in (ε, δ)).
    pub rho: Option<f64>,
    /// Extra regularization Δ (objective perturbation; 0 for output perturbation).
    pub extra_regularization: f64,
    /// The Jacobian term's share of ε (objective perturbation; 0 for output).
    pub jacobian_epsilon: f64,
    /// The bound on the exact minimizer's δ at ε₁ that σ meets, at most δ₁ = δ·e^{−ε₂/2}
    /// (objective perturbation; the privacy profile of `# Privacy` on [`GaussianErm`]).
    pub objective_delta: Option<f64>,
    /// The gradient-norm tolerance γ the solver certifies.
    pub tolerance: f64,
    /// The noise that covers the solver's distance to the exact minimizer (objective).
    pub minimizer_noise: Option<MinimizerNoise>,
    /// The power of two every released weight is a multiple of.
    pub release_grid: f64,
}

/// L2-regularized logistic regression or Huber SVM trained with Gaussian noise: an
/// **(ε, δ)** guarantee, for users who accept a δ. Pure ε ([`ErmParams`]) stays the
/// default of this crate; nothing here changes it.
///
/// # Privacy
/// For a [`TrainingSet`] (rows in the unit ball, labels ±1) and neighbouring datasets that
/// differ in one row replaced (same n), the released model is (ε, δ)-DP:
///
/// - **Output perturbation**: the solver's point `f̂` (certified `‖∇J(f̂)‖ ≤ γ`, so within
///   `γ'/Λ` of the exact minimizer, γ' = γ + the rounding floor) has L2 sensitivity at most
///   `Δ = 2/(nΛ) + 2γ'/Λ` (CMS11 Corollary 8 for a 1-Lipschitz loss, plus twice the
///   certified distance; docs/src/reference/algorithms.md §3, as [`ErmParams::output_perturbation`]). The
///   release is `f̂` snapped to a grid plus discrete Gaussian noise
///   ([`dp_noise::DiscreteGaussianVector`]), which is ρ-zCDP with `ρ = (Δ + g√d)²/(2σ²)`:
///   σ is the smallest (to 10⁻¹²) whose ρ is at most the largest ρ that the CKS20
///   conversion certifies at (ε, δ) ([`Zcdp::largest_for`]). The ρ is reported
///   ([`GaussianCalibration::rho`]) so compositions can add it. This is the zCDP route, not
///   Balle & Wang's analytic calibration: the analytic Gaussian's exact curve holds for the
///   continuous Gaussian, which cannot be released safely in floating point; for the
///   discrete Gaussian the zCDP bound is the one proved (CKS20 Theorem 4).
/// - **Objective perturbation** (KST12's Gaussian form of CMS11 Algorithm 2, with the
///   privacy-profile analysis of Redberg, Koskela & Wang 2023 carried to replace-one): the
///   solver's point of `J(f) + bᵀf/n + (Δ_r/2)‖f‖²` with `b ~ N(0, σ²I)`, plus minimizer
///   noise as for the pure-ε mechanism. The exact minimizer `f*` maps to
///   `b(f*; D) = −Σ ℓ'(y_i f*ᵀx_i) y_i x_i − n(Λ+Δ_r)f*`, a bijection; on the neighbour
///   `b' = b + w` with `w = a·x − a'·x'` (x the replaced row, x' the replacing one,
///   `a, a' ∈ [−1, 1]` since `|ℓ'| ≤ 1`). The privacy loss at `f*` is the Jacobian term, at
///   most `ε_J = 2 ln(1 + c/(n(Λ+Δ_r)))` (CMS11, as for the pure-ε mechanism), plus
///   `G = (2⟨b, w⟩ + ‖w‖²)/(2σ²)`. G is convex in (a, a'), so its largest value over the
///   box is at a corner: with `u = x + x'`, `v = x − x'`,
///   `G ≤ max(|⟨b, u⟩|/σ² + ‖u‖²/(2σ²), |⟨b, v⟩|/σ² + ‖v‖²/(2σ²))` (the corners a = −a' and
///   a = a'; this is at most the `(|⟨b, x⟩| + |⟨b, x'⟩|)/σ² + 2/σ²` of the cruder bound).
///   Under the mechanism `⟨b, u⟩/σ = μ_u·Z_u` with `μ_u = ‖u‖/σ`, Z_u standard normal (and
///   likewise for v), and `‖u‖² + ‖v‖² = 2‖x‖² + 2‖x'‖² ≤ 4`. The privacy profile is
///   `δ(ε₁) = E_D[(1 − e^{ε₁ − L})₊]`, increasing in the loss L, so any upper bound on L may
///   replace it; and for g ≥ 0 increasing, `g(max(A, B)) ≤ g(A) + g(B)`. Hence, with
///   `ε_G = ε₁ − ε_J` and `H(μ) = E[(1 − e^{ε_G − μ|Z| − μ²/2})₊]
///   = 2[Φ(−c) − e^{ε_G}Φ(−c − μ)]`, `c = max(0, ε_G/μ − μ/2)` (twice the analytic Gaussian
///   δ of Balle & Wang 2018 at shift μ; Redberg et al.'s add/remove analysis has the same
///   factor 2 at shift 1/σ), `δ(ε₁) ≤ H(μ_u) + H(μ_v) ≤ sup_θ H(2cos θ/σ) + H(2sin θ/σ)`,
///   H being increasing in μ. The supremum is bounded on a grid of 256 intervals of θ
///   using only that monotonicity (each interval's worst case takes the larger end of each
///   term), every tail raised by a relative 10⁻¹⁰; no shape is assumed (at δ = 10⁻⁵ the
///   maximum is at θ = 0, one shift of 2/σ; at large δ and small ε it moves to θ = π/4).
///   Δ_r is set by the cliff-free rule ([`ObjectiveCalibration::CliffFree`]); σ is the
///   smallest (bisection, to a relative 10⁻¹², rounded up; the bound decreases in σ) whose
///   bound is at most δ₁: `f*` is (ε₁, δ₁)-DP. The minimizer noise (rate `ε₂/(2r)`, r the
///   certified radius, ε₂ = ε/100) makes the released point's density within `e^{ε₂/2}` of
///   the one centred at `f*` on both datasets, so the release is `(ε₁ + ε₂, e^{ε₂/2}δ₁)`-DP;
///   δ₁ is `δ·e^{−ε₂/2}` rounded down. At n = 30,162, δ = 10⁻⁵ this σ is 0.67–0.71× (ε = 0.1)
///   and 0.82–0.83× (ε = 1) the union-bound calibration's (`4·P(Z > t) = δ₁`, `ε_Gσ² = 2tσ + 2`) it replaces.
///
/// Every parameter (σ, Δ_r, γ, the grids) is a function of the parameters and n, d only;
/// every refusal but [`ErmError::NotConverged`] is decided from them before any work, as
/// for [`ErmParams`] (same refusal, timing and released-doubles caveats: the guarantee
/// covers the model, not the time of the fit; output perturbation's release carries no
/// floating-point noise at all, objective perturbation's is snapped to a grid 2⁻³⁰ of its
/// noise's effect). The Gaussian linear term is drawn in floating point (idealized reals,
/// as the pure-ε mechanism's Gamma-norm term).
#[derive(Debug, Clone, PartialEq)]
pub struct GaussianErm {
    loss: Loss,
    regularization: f64,
    mechanism: GaussianMechanism,
    epsilon: f64,
    delta: f64,
    tolerance: Option<f64>,
}

impl GaussianErm {
    /// (ε, δ)-DP output perturbation with snapped discrete Gaussian noise.
    pub fn output_perturbation(loss: Loss, regularization: f64, epsilon: f64, delta: f64) -> Self {
        Self::new(
            loss,
            regularization,
            GaussianMechanism::OutputPerturbation,
            epsilon,
            delta,
        )
    }

    /// (ε, δ)-DP objective perturbation with Gaussian noise.
    pub fn objective_perturbation(
        loss: Loss,
        regularization: f64,
        epsilon: f64,
        delta: f64,
    ) -> Self {
        Self::new(
            loss,
            regularization,
            GaussianMechanism::ObjectivePerturbation,
            epsilon,
            delta,
        )
    }

    fn new(
        loss: Loss,
        regularization: f64,
        mechanism: GaussianMechanism,
        epsilon: f64,
        delta: f64,
    ) -> Self {
        Self {
            loss,
            regularization,
            mechanism,
            epsilon,
            delta,
            tolerance: None,
        }
    }

    /// The gradient tolerance γ to certify (default: as [`ErmParams::tolerance`]).
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = Some(tolerance);
        self
    }

    /// The mechanism.
    pub fn mechanism(&self) -> GaussianMechanism {
        self.mechanism
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The δ of the guarantee.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The regularization Λ.
    pub fn regularization(&self) -> f64 {
        self.regularization
    }

    /// The loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// What the model file records.
    fn model_mechanism(&self) -> Mechanism {
        let (epsilon, delta) = (self.epsilon, self.delta);
        match self.mechanism {
            GaussianMechanism::OutputPerturbation => {
                Mechanism::GaussianOutputPerturbation { epsilon, delta }
            }
            GaussianMechanism::ObjectivePerturbation => {
                Mechanism::GaussianObjectivePerturbation { epsilon, delta }
            }
        }
    }

    /// The noise a fit on `examples` rows of `features` columns would use; every refusal
    /// a fit of that size would make because of its parameters is made here.
    pub fn calibration(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<GaussianCalibration, ErmError> {
        self.calibration_for(Task::Classification, examples, features)
    }

    /// [`GaussianErm::calibration`] for a fit of `task`.
    pub(crate) fn calibration_for(
        &self,
        task: Task,
        examples: usize,
        features: usize,
    ) -> Result<GaussianCalibration, ErmError> {
        self.loss.check()?;
        check_regularization(self.regularization)?;
        check_epsilon(self.epsilon)?;
        check_delta(self.delta)?;
        // The sizes, the solver choice and the tolerance's own limits, as ErmParams checks.
        let plain = self.plain_params();
        plain.calibrate_for(task, examples, features)?;
        match self.mechanism {
            GaussianMechanism::OutputPerturbation => self.output_calibration(examples, features),
            GaussianMechanism::ObjectivePerturbation => {
                self.objective_calibration(examples, features)
            }
        }
    }

    /// Non-private parameters with this loss, Λ and tolerance: the solver driver.
    pub(crate) fn plain_params(&self) -> ErmParams {
        let plain = ErmParams::non_private(self.loss, self.regularization);
        match self.tolerance {
            Some(tolerance) => plain.tolerance(tolerance),
            None => plain,
        }
    }

    fn output_calibration(&self, n: usize, d: usize) -> Result<GaussianCalibration, ErmError> {
        let floor = tolerance_floor(n, d, self.loss, self.regularization, None);
        let tolerance = resolve_tolerance(n, self.tolerance, &floor, self.regularization, None)?;
        let sensitivity = output_perturbation(
            self.epsilon,
            n,
            self.regularization,
            self.loss.lipschitz(),
            tolerance,
            &floor,
        )
        .l2_sensitivity
        .unwrap_or(f64::INFINITY);
        let target = largest_rho(self.epsilon, self.delta)?;
        let (sigma, noise) = gaussian_for_rho(d, sensitivity, target)?;
        let noise_norm = sigma * ((d as f64).sqrt() + 80f64.sqrt());
        if noise_norm.is_nan() || noise_norm > MAX_NOISE_NORM {
            return Err(ErmError::GaussianNoiseBeyondPrecision {
                epsilon: self.epsilon,
                delta: self.delta,
                noise_norm,
            });
        }
        Ok(GaussianCalibration {
            epsilon: self.epsilon,
            delta: self.delta,
            sigma,
            l2_sensitivity: sensitivity,
            rho: Some(noise.zcdp().rho()),
            extra_regularization: 0.0,
            jacobian_epsilon: 0.0,
            objective_delta: None,
            tolerance,
            minimizer_noise: None,
            release_grid: noise.grid(),
        })
    }

    fn objective_calibration(&self, n: usize, d: usize) -> Result<GaussianCalibration, ErmError> {
        let epsilon = self.epsilon;
        let minimizer_epsilon = (epsilon * MINIMIZER_NOISE_SHARE).next_down();
        let objective_epsilon = (epsilon - minimizer_epsilon).next_down();
        let (gaussian_epsilon, extra, _) = objective_noise(
            objective_epsilon,
            n,
            self.regularization,
            self.loss.curvature_bound(),
            ObjectiveCalibration::CliffFree,
        )?;
        // ε_G = ε₁ − ε_J, so ε_J is the rest (rounded up).
        let jacobian_epsilon = (objective_epsilon - gaussian_epsilon).next_up();
        // δ₁ = δ·e^{−ε₂/2}, rounded down (exp errs by under an ulp).
        let objective_delta = (self.delta * (-minimizer_epsilon / 2.0).exp())
            .next_down()
            .next_down();
        let sigma = objective_sigma(gaussian_epsilon, objective_delta);
        let certified_delta = gaussian_profile::objective_delta(sigma, gaussian_epsilon);
        let total = self.regularization + extra;
        // ‖b‖ ≤ σ(√d + √80) except with probability e^{−40} (Gaussian norm concentration);
        // the rounding floor takes a Gamma rate whose e^{−40} bound is at least that.
        let root_d = (d as f64).sqrt();
        let gaussian_norm = (sigma * (root_d + 80f64.sqrt())).next_up();
        let d_f = d as f64;
        let equivalent_beta = ((d_f + (80.0 * d_f).sqrt() + 40.0) / gaussian_norm).next_down();
        if !(gaussian_norm <= MAX_NOISE_NORM && equivalent_beta > 0.0) {
            return Err(ErmError::GaussianNoiseBeyondPrecision {
                epsilon,
                delta: self.delta,
                noise_norm: gaussian_norm,
            });
        }
        let floor = tolerance_floor(n, d, self.loss, total, Some(equivalent_beta));
        let tolerance = resolve_tolerance(
            n,
            self.tolerance,
            &floor,
            total,
            Some((epsilon, noise_norm_bound(d, equivalent_beta))),
        )?;
        let radius = (add_step_up(tolerance, floor.total()) / total).next_up();
        let minimizer = MinimizerNoise {
            epsilon: minimizer_epsilon,
            radius,
            beta: (minimizer_epsilon / (2.0 * radius)).next_down(),
        };
        Ok(GaussianCalibration {
            epsilon,
            delta: self.delta,
            sigma,
            l2_sensitivity: 2.0,
            rho: None,
            extra_regularization: extra,
            jacobian_epsilon,
            objective_delta: Some(certified_delta),
            tolerance,
            minimizer_noise: Some(minimizer),
            release_grid: release_grid(sigma / (n as f64 * total)),
        })
    }

    /// Trains on `data` with randomness from `rng`; see the `# Privacy` section above.
    pub fn fit<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration), ErmError> {
        self.fit_with_noise_factor(data, rng, 1.0)
    }

    /// The mechanism with σ multiplied by `factor`: 1 in production; the audits pass less
    /// to prove they catch too little noise.
    pub(crate) fn fit_with_noise_factor<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        factor: f64,
    ) -> Result<(LinearModel, GaussianCalibration), ErmError> {
        let calibration = self.calibration(data.len(), data.features())?;
        self.fit_calibrated(data, rng, calibration, factor)
    }

    /// The fit with a calibration computed for this data's sizes by
    /// [`GaussianErm::calibration`] (the audits compute it once for 10⁵ fits).
    pub(crate) fn fit_calibrated<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        calibration: GaussianCalibration,
        factor: f64,
    ) -> Result<(LinearModel, GaussianCalibration), ErmError> {
        self.fit_calibrated_solution(data, rng, calibration, factor)
            .map(|(model, calibration, _)| (model, calibration))
    }

    /// As `fit_calibrated`, also returning the solver's point (secret; tests only).
    pub(crate) fn fit_calibrated_solution<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        calibration: GaussianCalibration,
        factor: f64,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError> {
        self.release_with(data, None, calibration, factor, rng)
    }

    /// [`GaussianErm::release`] on rows in memory, with a regression's scaled targets as
    /// `offsets`.
    pub(crate) fn release_with<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        offsets: Option<&[f64]>,
        calibration: GaussianCalibration,
        factor: f64,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError> {
        let solver = self.plain_params();
        self.release(
            (data.len(), data.features()),
            calibration,
            factor,
            rng,
            &mut |mu, linear, tolerance| solver.solve(data, offsets, mu, linear, tolerance),
        )
    }

    /// Trains on rows this process never sees, the same mechanism as
    /// [`GaussianErm::fit`]: `oracle` answers each solver pass with the merged
    /// [`PartialSums`](dp_optim::PartialSums) of all rows (as for [`ErmParams::fit_sums`]:
    /// partial sums computed with [`crate::contract_sums`] and merged in a fixed order),
    /// the rows numbering exactly `examples` — the public n the noise is calibrated to,
    /// given by the caller, never counted from the data (every answer's row count is
    /// checked). The oracle must sum with this fit's loss ([`GaussianErm::loss`]). The
    /// solver is [`dp_optim::BlockNewton`], one pass per point it evaluates.
    ///
    /// Refused before any noise is drawn: every refusal [`GaussianErm::fit`] makes from the
    /// parameters and the sizes (from `examples` and `oracle.cols()`:
    /// [`GaussianErm::calibration`]'s), and more than 16,384 features (the Newton solver
    /// factors a d×d Hessian; in memory L-BFGS takes over). Refused during the solve,
    /// releasing nothing: a pass that sees a row count other than `examples`, whatever the
    /// oracle refuses, and a solve that does not converge ([`ErmError::NotConverged`]).
    ///
    /// # Privacy
    /// The guarantee of [`GaussianErm`]'s `# Privacy` ((ε, δ)-DP), for the same replace-one
    /// relation (same n), on the rows the oracle sums, under the conditions of
    /// [`ErmParams::fit_sums`], which the oracle must keep and this function cannot check:
    /// every row summed passed [`crate::contract_sums`]'s check (`‖x‖₂ ≤ 1`, label ±1),
    /// and every pass sums the same rows (the certificate `‖∇J(f̂)‖ ≤ γ` is about one
    /// dataset's objective). The data has n = `examples` rows: σ, Δ_r, γ and the grids
    /// are functions of the public n and d only, and every pass refuses another count. The
    /// noise is drawn here, from `rng`, in [`GaussianErm::fit`]'s order by the same code
    /// (objective perturbation: the Gaussian linear term before the first pass, the
    /// minimizer noise after the solve; output perturbation: the discrete Gaussian after
    /// the solve), once per call: an oracle that recomputes a lost partial changes nothing
    /// drawn. The certificate is the gradient norm of the oracle's merged sums at the
    /// returned point; the tolerance's rounding floor ([`crate::tolerance_floor`]) models
    /// the rounding of a sum of n terms independently of the order or grouping of its
    /// additions, so sums merged in any fixed order are covered as the in-memory order is.
    /// Noise drawn for a fit refused during its solve is discarded, and nothing computed
    /// from it is returned.
    pub fn fit_sums<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration), ErmError>
    where
        O: SumsOracle + ?Sized,
        ErmError: From<O::Error>,
        R: ReleaseRng + ?Sized,
    {
        self.fit_sums_solution(&Answers(oracle), examples, rng)
            .map(|(model, calibration, _)| (model, calibration))
    }

    /// Trains on the rows of `source`, which must number exactly `examples` (the public
    /// n, given, never counted; a source that declares another count is refused before any
    /// noise): [`GaussianErm::fit_sums`] over one pass of the blocks per point, every
    /// block checked against the data contract (rows in the unit ball, labels ±1) on
    /// every pass before it is summed ([`ErmError::InBlock`] names a broken row within its
    /// block), as [`ErmParams::fit_blocks`].
    ///
    /// # Privacy
    /// As [`GaussianErm::fit_sums`], under [`ErmParams::fit_blocks`]'s conditions: the
    /// rows' contract is enforced here, on every pass; that every pass sees the same rows
    /// the source must guarantee ([`crate::RowCache`] refuses a file changed between
    /// passes).
    pub fn fit_blocks<S, R>(
        &self,
        source: &S,
        examples: usize,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration), ErmError>
    where
        S: RowBlocks + ?Sized,
        ErmError: From<S::Error>,
        R: ReleaseRng + ?Sized,
    {
        self.fit_blocks_solution(source, examples, rng)
            .map(|(model, calibration, _)| (model, calibration))
    }

    /// As `fit_blocks`, also returning the solver's point (secret; tests only).
    pub(crate) fn fit_blocks_solution<S, R>(
        &self,
        source: &S,
        examples: usize,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError>
    where
        S: RowBlocks + ?Sized,
        ErmError: From<S::Error>,
        R: ReleaseRng + ?Sized,
    {
        let calibration = self.check_sums_fit(examples, source.cols())?;
        over_checked_blocks(source, examples, self.loss, &mut |oracle| {
            self.release_over_sums(oracle, examples, calibration, &mut *rng)
        })
    }

    /// Every refusal of a fit over sums from n and d: [`GaussianErm::calibration`]'s (the
    /// in-memory fit's), then the Newton-only solver's bound on d. Returns the calibration.
    fn check_sums_fit(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<GaussianCalibration, ErmError> {
        let calibration = self.calibration(examples, features)?;
        self.plain_params().check_sums_fit(examples, features)?;
        Ok(calibration)
    }

    /// As `fit_sums`, also returning the solver's point (secret; tests only).
    pub(crate) fn fit_sums_solution<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError>
    where
        O: SumsOracle<Error = ErmError> + ?Sized,
        R: ReleaseRng + ?Sized,
    {
        let calibration = self.check_sums_fit(examples, oracle.cols())?;
        self.release_over_sums(oracle, examples, calibration, rng)
    }

    /// The mechanism over `oracle`'s sums, `calibration` checked for its sizes.
    pub(crate) fn release_over_sums<O, R>(
        &self,
        oracle: &O,
        examples: usize,
        calibration: GaussianCalibration,
        rng: &mut R,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError>
    where
        O: SumsOracle<Error = ErmError> + ?Sized,
        R: ReleaseRng + ?Sized,
    {
        let solver = self.plain_params();
        self.release(
            (examples, oracle.cols()),
            calibration,
            1.0,
            rng,
            &mut |mu, linear, tolerance| solver.solve_sums(oracle, examples, mu, linear, tolerance),
        )
    }

    /// The mechanism of `calibration` (computed for n rows of d features) on the data whose
    /// objective `solve(μ, linear term, tolerance)` minimizes, in memory or over sums: the
    /// noise, its draw order, the solve, the minimizer noise and the release grid, all
    /// here, so every data path runs the same mechanism. σ is multiplied by `factor`: 1 in
    /// production (the audits pass less).
    fn release<R: ReleaseRng + ?Sized>(
        &self,
        (n, d): (usize, usize),
        calibration: GaussianCalibration,
        factor: f64,
        rng: &mut R,
        solve: &mut SolveWith<'_>,
    ) -> Result<(LinearModel, GaussianCalibration, Solution), ErmError> {
        let (weights, solution) = match self.mechanism {
            GaussianMechanism::OutputPerturbation => {
                let solution = solve(self.regularization, None, calibration.tolerance)?;
                let weights = DiscreteGaussianVector::new(
                    d,
                    calibration.l2_sensitivity,
                    calibration.sigma * factor,
                )?
                .release(solution.weights(), rng)?;
                (weights, solution)
            }
            GaussianMechanism::ObjectivePerturbation => {
                let noise = GaussianVector::new(d, calibration.sigma * factor)?.sample(rng);
                let linear: Vec<f64> = noise.iter().map(|b| b / n as f64).collect();
                let total = self.regularization + calibration.extra_regularization;
                let solution = solve(total, Some(&linear), calibration.tolerance)?;
                // Always set for objective perturbation; a rate of 0 would be refused.
                let beta = calibration.minimizer_noise.map_or(0.0, |m| m.beta);
                let smoothing = GammaNormVector::new(d, beta)?.sample(rng);
                let mut weights: Vec<f64> = solution
                    .weights()
                    .iter()
                    .zip(&smoothing)
                    .map(|(w, s)| w + s)
                    .collect();
                snap_to_grid(&mut weights, calibration.release_grid);
                (weights, solution)
            }
        };
        let model = LinearModel::new(
            weights,
            ModelMetadata {
                mechanism: self.model_mechanism(),
                loss: self.loss,
                regularization: self.regularization,
                features: d,
                noise_groups: None,
                feature_map: None,
                crate_version: env!("CARGO_PKG_VERSION").to_owned(),
            },
        );
        Ok((model, calibration, solution))
    }
}

/// The largest ρ the CKS20 conversion certifies at (ε, δ) ([`Zcdp::largest_for`]),
/// remembered per thread for the last (ε, δ) (a pure function of them, and a search over
/// Rényi orders: the audits fit 10⁵ times with one calibration).
fn largest_rho(epsilon: f64, delta: f64) -> Result<f64, ErmError> {
    thread_local! {
        static LAST: std::cell::Cell<Option<(u64, u64, f64)>> = const { std::cell::Cell::new(None) };
    }
    let key = (epsilon.to_bits(), delta.to_bits());
    if let Some((e, d, rho)) = LAST.get()
        && (e, d) == key
    {
        return Ok(rho);
    }
    let rho = Zcdp::largest_for(epsilon, delta)?.rho();
    LAST.set(Some((key.0, key.1, rho)));
    Ok(rho)
}

/// The smallest σ (to a relative 10⁻¹²) whose snapped discrete Gaussian release has
/// `ρ ≤ target`; the grid depends on σ, so iterate from `Δ/√(2ρ)`.
fn gaussian_for_rho(
    dim: usize,
    sensitivity: f64,
    target: f64,
) -> Result<(f64, DiscreteGaussianVector), ErmError> {
    let mut sigma = (sensitivity / (2.0 * target).sqrt()).next_up();
    for _ in 0..64 {
        let noise = DiscreteGaussianVector::new(dim, sensitivity, sigma)?;
        let rho = noise.zcdp().rho();
        if rho <= target {
            return Ok((sigma, noise));
        }
        sigma = (sigma * (rho / target).sqrt() * (1.0 + 1e-12)).next_up();
    }
    Err(ErmError::InvalidParameter {
        what: "epsilon",
        value: target,
        requirement: "a target whose Gaussian noise scale settles (rho shown)",
    })
}

/// A δ of an (ε, δ) mechanism (the Gaussian ones, DP-SGD): finite, 0 < δ ≤
/// [`MAX_DELTA`](crate::MAX_DELTA), dp-noise's one range for δ.
pub(crate) fn check_delta(delta: f64) -> Result<f64, ErmError> {
    if delta.is_finite() && delta > 0.0 && delta <= crate::MAX_DELTA {
        Ok(delta)
    } else {
        Err(ErmError::InvalidParameter {
            what: "delta",
            value: delta,
            requirement: "finite, > 0 and at most MAX_DELTA = 0.1 (and far below 1/n for n \
                          rows: see dp_noise::MAX_DELTA)",
        })
    }
}

/// A model file's δ: in (0, 1) for the Gaussian mechanisms and AdaSSP.
pub(crate) fn check_mechanism_delta(mechanism: &Mechanism) -> Result<(), ErmError> {
    match mechanism {
        Mechanism::GaussianOutputPerturbation { delta, .. }
        | Mechanism::GaussianObjectivePerturbation { delta, .. }
        | Mechanism::AdaSsp { delta, .. } => check_delta(*delta).map(drop),
        _ => Ok(()),
    }
}

/// Trains through [`GaussianErm::fit`]: an (ε, δ) trainer. [`Trainer::epsilon`] is the ε
/// of the pair and [`Trainer::delta`] its δ; compositions that account pure ε only must
/// refuse it (dp-tune's random stopping does; its split-and-select accounts the δ).
impl Trainer for GaussianErm {
    type Model = LinearModel;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        Some(self.epsilon)
    }

    fn delta(&self) -> f64 {
        self.delta
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<LinearModel, ErmError> {
        self.check_shape(data.len(), data.features())?;
        self.fit(&data.to_training_set()?, rng)
            .map(|(model, _)| model)
    }

    /// Output perturbation's discrete Gaussian release is ρ-zCDP with ρ the largest whose
    /// CKS20 conversion certifies (ε, δ): its curve is `λρ`. Objective perturbation has no
    /// Rényi bound (its guarantee holds only outside an event of probability δ): `None`.
    fn rdp_curve(&self, orders: &[f64]) -> Option<RdpCurve> {
        match self.mechanism {
            GaussianMechanism::OutputPerturbation => {
                let rho = largest_rho(self.epsilon, self.delta).ok()?;
                RdpCurve::from_zcdp(Zcdp::new(rho).ok()?, orders).ok()
            }
            GaussianMechanism::ObjectivePerturbation => None,
        }
    }

    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        self.calibration(rows, features).map(drop)
    }

    fn check_inputs(&self, data: &Examples) -> Result<(), ErmError> {
        data.check_unit_ball()
    }
}

#[cfg(test)]
#[path = "gaussian_tests.rs"]
mod tests;
