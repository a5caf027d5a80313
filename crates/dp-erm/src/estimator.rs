//! The estimators: non-private ERM, output perturbation and objective perturbation, with
//! checked parameters (linfa style).

use dp_noise::GammaNormVector;
use dp_noise::ReleaseRng;
use dp_optim::{DEFAULT_TOLERANCE, GlmObjective, Lbfgs, Newton, Solution, Solver};
use serde::{Deserialize, Serialize};

use crate::calibration::{self, NoiseCalibration, ObjectiveCalibration};
use crate::error::check_positive;
use crate::model::{LinearModel, ModelMetadata};

/// Loosest gradient tolerance objective perturbation accepts: its proof is about the exact
/// minimizer, and the released point is within `tolerance/(Λ+Δ)` of it.
pub const MAX_OBJECTIVE_TOLERANCE: f64 = 1e-8;
use crate::{ErmError, Loss, TrainingSet};

/// Which mechanism trains the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Mechanism {
    /// Plain regularized ERM: **no privacy**.
    NonPrivate,
    /// CMS11 Algorithm 1: minimize, then add vector noise scaled to the sensitivity.
    OutputPerturbation {
        /// The ε of the guarantee.
        epsilon: f64,
    },
    /// CMS11 Algorithm 2: minimize an objective with a random linear term.
    ObjectivePerturbation {
        /// The ε of the guarantee.
        epsilon: f64,
        /// How ε is split (paper rule or cliff-free).
        calibration: ObjectiveCalibration,
    },
}

/// Which solver minimizes the objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SolverChoice {
    /// Newton for d ≤ 2000, else L-BFGS ([`Solver::for_dimension`]): decided by the public
    /// dimension alone, never by the data.
    #[default]
    Auto,
    /// Always Newton.
    Newton,
    /// Always L-BFGS.
    Lbfgs,
}

/// Parameters of an L2-regularized linear classifier, `J(f) = (1/n) Σ ℓ(y_i fᵀx_i) + (Λ/2)‖f‖²`,
/// and the mechanism that trains it. Nothing is validated until [`ErmParams::fit`] (or
/// [`ErmParams::check`]) runs, which rejects every invalid value with an error naming it.
///
/// # Privacy
/// For a [`TrainingSet`] (rows in the unit ball, labels ±1) and neighbouring datasets that
/// differ in one row:
/// - [`Mechanism::OutputPerturbation`] is ε-DP (CMS11 Theorem 6): `f* + b` with
///   `‖b‖ ~ Gamma(d, 1/β)`, `β = ε / (2/(nΛ) + 2γ/Λ)`, where `γ` is the solver's gradient
///   tolerance (the certified distance to the exact minimizer is at most `γ/Λ`). The
///   tolerance, not the achieved gradient norm, enters β, so the noise scale does not
///   depend on the data.
/// - [`Mechanism::ObjectivePerturbation`] is ε-DP (CMS11 Theorem 9; Corollary 4 for the Huber
///   loss, whose ℓ'' jumps): `argmin J(f) + bᵀf/n + (Δ/2)‖f‖²` with `‖b‖ ~ Gamma(d, 2/ε')`.
///   The proof is about the **exact** minimizer; the released point is the solver's, within
///   `γ/(Λ+Δ)` of it, where `‖∇‖ ≤ γ` is certified (default γ = 1e-10; at most
///   [`MAX_OBJECTIVE_TOLERANCE`] is accepted). If the solver cannot certify γ, no model is
///   released ([`ErmError::NotConverged`]) — but the refusal itself depends on the data, so
///   a retry is a new run that spends ε again.
/// - [`Mechanism::NonPrivate`] gives no guarantee.
///
/// The guarantees assume idealized real arithmetic for the Gamma-norm noise
/// (`dp_noise::GammaNormVector`) and an unpredictable generator (`dp_noise::DpRng`). They
/// cover the released model only: [`Fit`]'s solver diagnostics and noise norm are not
/// noised and must not be released.
#[derive(Debug, Clone, PartialEq)]
pub struct ErmParams {
    loss: Loss,
    regularization: f64,
    mechanism: Mechanism,
    tolerance: f64,
    solver: SolverChoice,
    feature_map: Option<String>,
    warm_start: Option<Vec<f64>>,
    /// Set when a calibration rule was chosen for a mechanism that has none.
    misplaced_calibration: bool,
}

impl ErmParams {
    /// Non-private regularized ERM with loss `loss` and regularization Λ.
    pub fn non_private(loss: Loss, regularization: f64) -> Self {
        Self::with_mechanism(loss, regularization, Mechanism::NonPrivate)
    }

    /// ε-DP output perturbation.
    pub fn output_perturbation(loss: Loss, regularization: f64, epsilon: f64) -> Self {
        Self::with_mechanism(
            loss,
            regularization,
            Mechanism::OutputPerturbation { epsilon },
        )
    }

    /// ε-DP objective perturbation with the paper's calibration (see
    /// [`ErmParams::objective_calibration`] for the cliff-free one).
    pub fn objective_perturbation(loss: Loss, regularization: f64, epsilon: f64) -> Self {
        Self::with_mechanism(
            loss,
            regularization,
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration: ObjectiveCalibration::Cms11,
            },
        )
    }

    fn with_mechanism(loss: Loss, regularization: f64, mechanism: Mechanism) -> Self {
        Self {
            loss,
            regularization,
            mechanism,
            tolerance: DEFAULT_TOLERANCE,
            solver: SolverChoice::Auto,
            feature_map: None,
            warm_start: None,
            misplaced_calibration: false,
        }
    }

    /// Chooses objective perturbation's calibration rule (an error for other mechanisms).
    pub fn objective_calibration(mut self, rule: ObjectiveCalibration) -> Self {
        if let Mechanism::ObjectivePerturbation { calibration, .. } = &mut self.mechanism {
            *calibration = rule;
        } else {
            self.misplaced_calibration = true;
        }
        self
    }

    /// Gradient-norm tolerance the solver must certify (default 1e-10).
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// The solver (default: chosen from the data's shape).
    pub fn solver(mut self, solver: SolverChoice) -> Self {
        self.solver = solver;
        self
    }

    /// An identifier of the (data-independent) feature map the rows went through, kept in
    /// the model's metadata so predictions apply the same map.
    pub fn feature_map(mut self, id: &str) -> Self {
        self.feature_map = Some(id.to_owned());
        self
    }

    /// Starts the solver at `weights` instead of 0 (its length is checked against the data's
    /// features at fit time).
    ///
    /// Only the solver's path changes: the minimizer does not depend on where the search
    /// starts, the released point is certified within `γ/Λ` (output perturbation) or
    /// `γ/(Λ+Δ)` (objective perturbation) of it from any start, and the privacy guarantee is
    /// the same. Experiments that fit many noise draws on the same data start each one from
    /// the non-private minimizer: output perturbation then needs no solver step at all.
    pub fn warm_start(mut self, weights: &[f64]) -> Self {
        self.warm_start = Some(weights.to_vec());
        self
    }

    /// The same parameters with the mechanism's ε replaced (no-op when non-private).
    pub fn with_epsilon(mut self, new_epsilon: f64) -> Self {
        match &mut self.mechanism {
            Mechanism::NonPrivate => {}
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. } => {
                *epsilon = new_epsilon;
            }
        }
        self
    }

    /// The mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The regularization Λ.
    pub fn regularization(&self) -> f64 {
        self.regularization
    }

    /// The loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// Validates every parameter.
    pub fn check(&self) -> Result<(), ErmError> {
        self.loss.check()?;
        check_positive("regularization", self.regularization)?;
        if self.misplaced_calibration {
            return Err(ErmError::InvalidParameter {
                what: "objective calibration",
                value: f64::NAN,
                requirement: "set only for objective perturbation",
            });
        }
        check_positive("tolerance", self.tolerance)?;
        match self.mechanism {
            Mechanism::NonPrivate => {}
            Mechanism::OutputPerturbation { epsilon } => {
                check_positive("epsilon", epsilon)?;
            }
            Mechanism::ObjectivePerturbation { epsilon, .. } => {
                check_positive("epsilon", epsilon)?;
                if self.tolerance > MAX_OBJECTIVE_TOLERANCE {
                    return Err(ErmError::InvalidParameter {
                        what: "tolerance",
                        value: self.tolerance,
                        requirement: "at most 1e-8 for objective perturbation (its proof assumes the exact minimizer)",
                    });
                }
            }
        }
        Ok(())
    }

    /// The noise parameters (ε, ε', Δ, β, sensitivity) a fit on `examples` rows would use,
    /// or `None` for the non-private mechanism. They depend on the parameters and on n only,
    /// not on the data, so they can be inspected before training: two parameter sets with
    /// equal calibrations (and equal loss, Λ, tolerance and solver) are the same mechanism.
    pub fn noise_calibration(&self, examples: usize) -> Result<Option<NoiseCalibration>, ErmError> {
        self.check()?;
        if examples == 0 {
            return Err(ErmError::EmptyData);
        }
        match self.mechanism {
            Mechanism::NonPrivate => Ok(None),
            Mechanism::OutputPerturbation { epsilon } => {
                Ok(Some(self.output_calibration(epsilon, examples)))
            }
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration: rule,
            } => self
                .objective_calibration_for(epsilon, rule, examples)
                .map(Some),
        }
    }

    fn output_calibration(&self, epsilon: f64, n: usize) -> NoiseCalibration {
        calibration::output_perturbation(
            epsilon,
            n,
            self.regularization,
            self.loss.lipschitz(),
            self.tolerance,
        )
    }

    fn objective_calibration_for(
        &self,
        epsilon: f64,
        rule: ObjectiveCalibration,
        n: usize,
    ) -> Result<NoiseCalibration, ErmError> {
        calibration::objective_perturbation(
            epsilon,
            n,
            self.regularization,
            self.loss.curvature_bound(),
            rule,
        )
    }

    /// Trains on `data` with randomness from `rng`; see the `# Privacy` section above.
    pub fn fit<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
    ) -> Result<Fit, ErmError> {
        self.fit_revealing_noise(data, rng).map(|(fit, _)| fit)
    }

    /// As `fit`, also returning the secret noise vector (for this crate's tests only).
    pub(crate) fn fit_revealing_noise<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError> {
        self.fit_with_rate_factor(data, rng, 1.0)
    }

    /// The mechanism with the noise rate β multiplied by `rate_factor`: 1 in production;
    /// tests pass 2 (half the noise) to prove the privacy tests catch a broken calibration.
    pub(crate) fn fit_with_rate_factor<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        rate_factor: f64,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError> {
        self.check()?;
        let (n, d) = (data.len(), data.features());
        let (weights, solution, calibration, noise) = match self.mechanism {
            Mechanism::NonPrivate => {
                let solution = self.solve(data, self.regularization, None)?;
                (solution.weights().to_vec(), solution, None, None)
            }
            Mechanism::OutputPerturbation { epsilon } => {
                let calibration = self.output_calibration(epsilon, n);
                let solution = self.solve(data, self.regularization, None)?;
                let noise = GammaNormVector::new(d, calibration.beta * rate_factor)?.sample(rng);
                let weights = solution
                    .weights()
                    .iter()
                    .zip(&noise)
                    .map(|(w, b)| w + b)
                    .collect();
                (weights, solution, Some(calibration), Some(noise))
            }
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration: rule,
            } => {
                let calibration = self.objective_calibration_for(epsilon, rule, n)?;
                let noise = GammaNormVector::new(d, calibration.beta * rate_factor)?.sample(rng);
                let linear: Vec<f64> = noise.iter().map(|b| b / n as f64).collect();
                let total = self.regularization + calibration.extra_regularization;
                let solution = self.solve(data, total, Some(&linear))?;
                (
                    solution.weights().to_vec(),
                    solution,
                    Some(calibration),
                    Some(noise),
                )
            }
        };
        let fit = Fit {
            model: LinearModel::new(
                weights,
                ModelMetadata {
                    mechanism: self.mechanism,
                    loss: self.loss,
                    regularization: self.regularization,
                    features: d,
                    feature_map: self.feature_map.clone(),
                    crate_version: env!("CARGO_PKG_VERSION").to_owned(),
                },
            ),
            calibration,
            noise_norm: noise
                .as_ref()
                .map(|b| b.iter().map(|x| x * x).sum::<f64>().sqrt()),
            iterations: solution.iterations(),
            gradient_norm: solution.gradient_norm(),
        };
        Ok((fit, noise))
    }

    /// Minimizes `J + linᵀf + ((μ − Λ)/2)‖f‖²` (μ the total regularization) and insists on a
    /// certified solution.
    fn solve(
        &self,
        data: &TrainingSet,
        total_regularization: f64,
        linear: Option<&[f64]>,
    ) -> Result<Solution, ErmError> {
        let mut objective = GlmObjective::new(
            data.design(),
            data.labels(),
            self.loss,
            total_regularization,
        )?;
        if let Some(linear) = linear {
            objective = objective.with_linear_term(linear)?;
        }
        let solver = match self.solver {
            SolverChoice::Auto => match Solver::for_dimension(data.features()) {
                Solver::Newton(_) => Solver::Newton(Newton::default().tolerance(self.tolerance)),
                Solver::Lbfgs(_) => Solver::Lbfgs(Lbfgs::default().tolerance(self.tolerance)),
            },
            SolverChoice::Newton => Solver::Newton(Newton::default().tolerance(self.tolerance)),
            SolverChoice::Lbfgs => Solver::Lbfgs(Lbfgs::default().tolerance(self.tolerance)),
        };
        let start = self.warm_start.as_deref();
        if let Some(start) = start
            && start.len() != data.features()
        {
            return Err(ErmError::DimensionMismatch {
                what: "warm-start weights",
                expected: data.features(),
                found: start.len(),
            });
        }
        let solution = solver.minimize(&objective, start)?;
        if !solution.is_converged() {
            return Err(solution.into_converged().unwrap_err().into());
        }
        Ok(solution)
    }
}

/// A trained model with what it cost. Its `Debug` output leaves out the secret noise norm.
#[derive(Clone, PartialEq)]
pub struct Fit {
    model: LinearModel,
    calibration: Option<NoiseCalibration>,
    noise_norm: Option<f64>,
    iterations: usize,
    gradient_norm: f64,
}

impl Fit {
    /// The model.
    pub fn model(&self) -> &LinearModel {
        &self.model
    }

    /// The model, consuming the fit.
    pub fn into_model(self) -> LinearModel {
        self.model
    }

    /// The ε spent (None for the non-private mechanism).
    pub fn epsilon(&self) -> Option<f64> {
        self.model.epsilon()
    }

    /// The noise parameters used (ε, ε', Δ, β, sensitivity); None when non-private.
    pub fn calibration(&self) -> Option<&NoiseCalibration> {
        self.calibration.as_ref()
    }

    /// The norm of the noise vector drawn. **Secret**: together with the data it narrows
    /// down the noise; for diagnostics and experiments only, never to be released.
    pub fn secret_noise_norm(&self) -> Option<f64> {
        self.noise_norm
    }

    /// Solver iterations. **Not private** (an un-noised function of the data): diagnostics
    /// only.
    pub fn solver_iterations(&self) -> usize {
        self.iterations
    }

    /// `‖∇‖` at the solver's answer (≤ the tolerance). **Not private** (for output
    /// perturbation it is the non-private solve's): diagnostics only.
    pub fn solver_gradient_norm(&self) -> f64 {
        self.gradient_norm
    }
}

impl std::fmt::Debug for Fit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fit")
            .field("model", &self.model)
            .field("calibration", &self.calibration)
            .field("secret_noise_norm", &"<not shown>")
            .finish_non_exhaustive()
    }
}
