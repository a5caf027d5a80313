//! The estimators: non-private ERM, output perturbation and objective perturbation, with
//! checked parameters (linfa style).

use dp_noise::{FeatureGroups, GammaNormVector, GroupNormVector, ReleaseRng};
use dp_optim::{GlmObjective, Lbfgs, MAX_HESSIAN_DIMENSION, Newton, Solution, Solver};

use crate::calibration::{
    self, NoiseCalibration, ObjectiveCalibration, check_tolerance, noise_norm_bound,
    resolve_tolerance, tolerance_floor,
};
use crate::error::{check_epsilon, check_regularization};
use crate::mechanism::Mechanism;
use crate::model::{LinearModel, ModelMetadata};
use crate::{ErmError, Loss, TrainingSet};

/// How far beyond the bound on the minimizer's norm a warm start may lie.
const WARM_START_SLACK: f64 = 1e3;

/// Largest noise norm a release may need (except with probability e^{−40}): far beyond
/// any useful model, far below where sums of squares of the weights overflow.
const MAX_NOISE_NORM: f64 = 1e100;

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
/// differ in one row (same n), every private fit is ε-DP for the model it releases:
/// - [`Mechanism::OutputPerturbation`] (CMS11 Theorem 6): `f̂ + b` with `‖b‖ ~ Gamma(d, 1/β)`,
///   `β = ε / (2/(nΛ) + 2γ'/Λ)`. The solver certifies `‖∇J(f̂)‖ ≤ γ`, so `‖f̂ − f*‖ ≤ γ'/Λ`
///   with `γ' = γ + floor` (see **Rounding** below) and the released point's sensitivity is
///   at most `2/(nΛ) + 2γ'/Λ`.
/// - [`Mechanism::ObjectivePerturbation`] (CMS11 Theorem 9; Corollary 4 for the Huber loss,
///   whose ℓ'' jumps): the solver's point `f̂` of `J(f) + bᵀf/n + (Δ/2)‖f‖²`, with
///   `‖b‖ ~ Gamma(d, 2/ε')`, **plus** a second noise vector of rate `β₂ = ε₂/(2r)`,
///   `r = γ'/(Λ+Δ)` (approximate-minima perturbation, docs/src/reference/algorithms.md §4 (b)). CMS11's proof
///   covers the exact minimizer `f*` with `ε₁ = ε − ε₂`; `f̂` is certified within `r` of
///   `f*`, so the released density is within `e^{β₂r}` of the one centred at `f*` on both
///   datasets, and the release is `(ε₁ + 2β₂r) = ε`-DP. `ε₂ =` [`crate::MINIMIZER_NOISE_SHARE`]
///   `· ε` = ε/100; the added noise is about `2·10⁻⁴` of the objective noise at Adult's size.
///   With [`ErmParams::group_noise`], `b` has density `∝ exp(−β‖b‖_G)` for the group norm
///   instead (same β and ε; the proof is there), and every row must have `‖x‖_G ≤ 1`.
/// - [`Mechanism::NonPrivate`] gives no guarantee.
///
/// γ, β, ε', Δ and β₂ are functions of the parameters and the public sizes n and d only.
///
/// **Refusals.** Everything a fit may refuse because of its parameters (ε, Λ, the loss, γ
/// against the rounding floor, noise too large for double precision, Newton asked for
/// beyond its 16,384-feature Hessian) is refused before any work, from those public values
/// alone ([`ErmParams::noise_calibration`] makes the same decision without data, and
/// [`crate::Trainer::check_shape`] runs it for tuning and prediction). What remains is
/// [`ErmError::NotConverged`]: the solver failing to certify γ, which would be a function
/// of the data. The tolerance is kept [`crate::ROUNDING_MARGIN`] = 64 times above a model
/// of the gradient's rounding error (see [`crate::tolerance_floor`]), and a solver that
/// stops short is continued by the other one, so this does not happen on accepted input:
/// the test suite sweeps neighbouring pairs at the corners of the accepted parameter space
/// (smallest Λ, smallest floor-level γ, tiny and large ε, both losses and calibrations,
/// widest and narrowest Huber widths) and sees no refusal. It is not impossible by proof —
/// the rounding model is a model. If it ever happens, the error carries no numbers, only
/// the fact of the refusal: treat that bit as released (a retry is a new run that spends ε
/// again).
///
/// **Released doubles.** Every released weight is rounded to a multiple of a power-of-two
/// grid, 2⁻³⁰ of the noise's scale ([`NoiseCalibration::release_grid`]): the low bits of
/// `fl(f̂ + b)` otherwise betray which `f̂` the noise was added to (Mironov's floating-point
/// attack, measured by the audit tests). The grid is public and changes no error rate.
///
/// **Rounding.** The certified distances (`γ/Λ` for output perturbation, `r` above) are
/// charged with the whole rounding floor added to γ, 64 times the modelled error of the
/// computed gradient norm: the guarantee holds under that rounding model (sums of k terms
/// err by about √k roundings), not by a worst-case floating-point proof.
///
/// **Timing.** A fit's running time depends on the data (solver iterations, and the
/// fallback solver when the first stops short): the guarantee covers the model, not the
/// time it took. Do not expose how long a fit ran.
///
/// The guarantees assume idealized real arithmetic for the Gamma-norm noise
/// (`dp_noise::GammaNormVector`) and an unpredictable generator: `fit` takes a
/// `dp_noise::ReleaseRng`, which is `dp_noise::DpRng` unless the crate feature
/// `insecure-seeded-rng` of dp-noise was opted into. They cover the released model only:
/// [`Fit`]'s solver diagnostics, noise norm and pre-noise weights are not noised and must
/// not be released.
#[derive(Clone, PartialEq)]
pub struct ErmParams {
    loss: Loss,
    regularization: f64,
    mechanism: Mechanism,
    /// The requested gradient tolerance; `None`: the default above the rounding floor.
    tolerance: Option<f64>,
    solver: SolverChoice,
    feature_map: Option<String>,
    warm_start: Option<Vec<f64>>,
    /// Objective perturbation's noise shaped to these feature groups (`None`: Euclidean).
    noise_groups: Option<FeatureGroups>,
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

    /// ε-DP objective perturbation with the cliff-free calibration
    /// ([`ObjectiveCalibration::CliffFree`], the default: a larger ε never gives more noise);
    /// [`ErmParams::objective_calibration`] chooses the papers' rule instead.
    pub fn objective_perturbation(loss: Loss, regularization: f64, epsilon: f64) -> Self {
        Self::with_mechanism(
            loss,
            regularization,
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration: ObjectiveCalibration::default(),
            },
        )
    }

    fn with_mechanism(loss: Loss, regularization: f64, mechanism: Mechanism) -> Self {
        Self {
            loss,
            regularization,
            mechanism,
            tolerance: None,
            solver: SolverChoice::Auto,
            feature_map: None,
            warm_start: None,
            noise_groups: None,
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

    /// Shapes objective perturbation's noise to one-hot feature groups: density
    /// `∝ exp(−β‖b‖_G)` with `‖b‖_G = (Σ_g ‖b_g‖₁²)^{1/2}` ([`dp_noise::GroupNormVector`])
    /// instead of `∝ exp(−β‖b‖₂)`, same ε (β smaller by 2·10⁻¹², see below). Every row must
    /// then have group norm `‖x‖_G ≤ 1`, which one-hot rows (at most one non-zero per group)
    /// in the unit ball have. The groups are public (the schema), `groups.dim()` must equal
    /// the data's features (checked with the other parameters, before any work), and the
    /// option is an error for the other mechanisms (output perturbation's sensitivity is
    /// Euclidean) and for `dp-kernel` (mapped rows are dense).
    ///
    /// **Check the rows first.** A fit refuses a row of group norm above 1 with
    /// [`ErmError::RowGroupNormAboveOne`], naming the row like the training set's own
    /// [`ErmError::RowNormAboveOne`]. Inside a composed mechanism (dp-tune's selection, which
    /// fits on parts of the data) such a refusal would tell which part held the row: call
    /// [`TrainingSet::check_group_norms`] on the whole training set before handing it over.
    ///
    /// # Privacy
    /// CMS11's proof of objective perturbation bounds the ratio of the noise densities that
    /// map neighbouring datasets to the same minimizer `f*`: the two noise vectors differ by
    /// `u − u'` with `u = ℓ'(y fᵀx) y x` for the replaced row and `u'` for its replacement,
    /// so `‖u − u'‖_G ≤ |ℓ'|‖x‖_G + |ℓ'|‖x'‖_G ≤ 2` (|ℓ'| ≤ 1, ‖x‖_G ≤ 1), and by the triangle
    /// inequality of the norm the densities differ by at most `e^{2β} = e^{ε'}` — the same
    /// bound as with `‖·‖₂`. Rows are accepted up to a group norm of `1 + 1e-12`, checked on
    /// an upper bound of the exact norm (every operation rounded up: a one-hot row scaled to
    /// norm 1 comes out a few ulps above 1), and β is divided by `1 + 2·10⁻¹²`, which covers
    /// that excess. The Jacobian factor needs only
    /// `ℓ'' ≤ c` and `‖x‖₂ ≤ 1`, which [`TrainingSet`] checks for every row; the
    /// minimizer noise covers a Euclidean distance and stays Euclidean. So the release is
    /// ε-DP with the same ε, for the same replace-one relation. The gain is in the shape: a
    /// group of s levels gets about 1/s of its noise per coordinate instead of 1/√s
    /// (Adult, ε = 0.1: 2–3 points of test error, README "Utility at a fixed guarantee").
    pub fn group_noise(mut self, groups: FeatureGroups) -> Self {
        self.noise_groups = Some(groups);
        self
    }

    /// The groups objective perturbation's noise is shaped to, if any
    /// ([`ErmParams::group_noise`]).
    pub fn noise_groups(&self) -> Option<&FeatureGroups> {
        self.noise_groups.as_ref()
    }

    /// Gradient-norm tolerance γ the solver must certify. Default: 1e-10, or the rounding
    /// floor ([`calibration::tolerance_floor`]) where that is larger. A requested γ must lie
    /// between that floor (for the data's n and d, checked at fit time before any work) and
    /// [`crate::MAX_TOLERANCE`] = 1e-6. Output perturbation adds `2γ/Λ` to its sensitivity,
    /// objective perturbation covers `γ/(Λ+Δ)` with its minimizer noise: a looser γ costs
    /// accuracy, never privacy.
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = Some(tolerance);
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
    /// `γ/(Λ+Δ)` (objective perturbation) of it from any start, and the privacy guarantee of
    /// **a single fit** is the same, whatever the start (even one computed from the same
    /// data). Experiments that fit many noise draws on the same data start each one from
    /// the non-private minimizer: output perturbation then needs no solver step at all.
    ///
    /// Not through the [`Trainer`](crate::Trainer) trait, which refuses it
    /// ([`ErmParams::check_composable`]): in a composition (tuning, ensembles) each model
    /// must depend on its own part of the data only, and the released point moves with the
    /// start within the solver's tolerance.
    pub fn warm_start(mut self, weights: &[f64]) -> Self {
        self.warm_start = Some(weights.to_vec());
        self
    }

    /// Refuses what the [`Trainer`](crate::Trainer) trait cannot accept: a warm start.
    ///
    /// Compositions (dp-tune's selections, dp-predict's ensembles) need each model to depend
    /// only on its own part of the data. A fit's end point depends on where its solver
    /// starts (by up to the tolerance, `γ/Λ`), so a start computed from the whole dataset
    /// would tie every part's model to every row; this crate cannot tell a start fixed in
    /// advance from one taken from the data, so it refuses both. Use [`ErmParams::fit`] for
    /// a warm-started single fit.
    pub fn check_composable(&self) -> Result<(), ErmError> {
        if self.warm_start.is_some() {
            return Err(ErmError::MisplacedOption {
                option: "a warm start",
                applies_to: "single fits (ErmParams::fit), not the Trainer trait: in tuning \
                             and ensembles each model must depend on its own part of the data \
                             only, and a fit's end point moves with its start within the \
                             solver's tolerance",
            });
        }
        Ok(())
    }

    /// The same parameters with the mechanism's ε replaced (no-op when non-private).
    pub fn with_epsilon(mut self, new_epsilon: f64) -> Self {
        match &mut self.mechanism {
            Mechanism::NonPrivate => {}
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. }
            | Mechanism::GaussianOutputPerturbation { epsilon, .. }
            | Mechanism::GaussianObjectivePerturbation { epsilon, .. }
            | Mechanism::DpSgd { epsilon, .. }
            | Mechanism::DpSgdAddRemove { epsilon, .. }
            | Mechanism::AdaSsp { epsilon, .. } => {
                *epsilon = new_epsilon;
            }
        }
        self
    }

    /// The solver chosen with [`ErmParams::solver`].
    pub(crate) fn solver_choice(&self) -> SolverChoice {
        self.solver
    }

    /// The warm start given with [`ErmParams::warm_start`], if any.
    pub(crate) fn warm_start_weights(&self) -> Option<&[f64]> {
        self.warm_start.as_deref()
    }

    /// The mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The regularization Λ.
    pub fn regularization(&self) -> f64 {
        self.regularization
    }

    /// The tolerance asked for with [`ErmParams::tolerance`], if any.
    pub fn requested_tolerance(&self) -> Option<f64> {
        self.tolerance
    }

    /// The loss.
    pub fn loss(&self) -> Loss {
        self.loss
    }

    /// Validates every parameter that does not depend on the data's size.
    pub fn check(&self) -> Result<(), ErmError> {
        self.loss.check()?;
        check_regularization(self.regularization)?;
        if self.misplaced_calibration {
            return Err(ErmError::MisplacedOption {
                option: "objective calibration",
                applies_to: "objective perturbation",
            });
        }
        if self.noise_groups.is_some()
            && !matches!(self.mechanism, Mechanism::ObjectivePerturbation { .. })
        {
            return Err(ErmError::MisplacedOption {
                option: "group-shaped noise",
                applies_to: "objective perturbation",
            });
        }
        if let Some(tolerance) = self.tolerance {
            // The floor needs n and d: `calibrate` checks it.
            check_tolerance(tolerance)?;
        }
        if let Some(id) = &self.feature_map
            && crate::model::check_text("feature map", id).is_err()
        {
            return Err(ErmError::InvalidCount {
                what: "feature map identifier length",
                value: id.len(),
                requirement: "1 to 256 bytes, without control characters (it is stored in model files)",
            });
        }
        if let Some(start) = &self.warm_start
            && let Some(index) = start.iter().position(|w| !w.is_finite())
        {
            return Err(ErmError::InvalidParameter {
                what: "warm-start weight",
                value: start[index],
                requirement: "finite",
            });
        }
        match self.mechanism {
            Mechanism::NonPrivate => {}
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. } => {
                check_epsilon(epsilon)?;
            }
            // No constructor of ErmParams makes these: GaussianErm trains them.
            Mechanism::GaussianOutputPerturbation { .. }
            | Mechanism::GaussianObjectivePerturbation { .. } => {
                return Err(ErmError::MisplacedOption {
                    option: "a Gaussian mechanism",
                    applies_to: "GaussianErm, not ErmParams",
                });
            }
            Mechanism::AdaSsp { .. } => {
                return Err(ErmError::MisplacedOption {
                    option: "AdaSSP",
                    applies_to: "AdaSsp (regressors), not ErmParams",
                });
            }
            Mechanism::DpSgd { .. } | Mechanism::DpSgdAddRemove { .. } => {
                return Err(ErmError::MisplacedOption {
                    option: "DP-SGD",
                    applies_to: "DpSgd, not ErmParams",
                });
            }
        }
        Ok(())
    }

    /// The noise parameters (ε, ε', Δ, β, sensitivity, tolerance, minimizer noise) a fit on
    /// `examples` rows of `features` columns would use, or `None` for the non-private
    /// mechanism. They depend on the parameters and the sizes only, never on the data, so
    /// they can be inspected before training: two parameter sets with equal calibrations
    /// (and equal loss, Λ and solver) are the same mechanism. Every refusal a fit of that
    /// size would make because of its parameters is made here.
    pub fn noise_calibration(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<Option<NoiseCalibration>, ErmError> {
        Ok(self.calibrate(examples, features)?.calibration())
    }

    /// What a classifier's fit on n rows and d features will do, decided from public values
    /// only.
    pub(crate) fn calibrate(&self, examples: usize, features: usize) -> Result<Plan, ErmError> {
        self.calibrate_for(Task::Classification, examples, features)
    }

    /// What a fit for `task` on n rows and d features will do, decided from public values
    /// only: a loss of the other task is refused first.
    pub(crate) fn calibrate_for(
        &self,
        task: Task,
        examples: usize,
        features: usize,
    ) -> Result<Plan, ErmError> {
        self.check()?;
        task.check_loss(self.loss)?;
        if examples == 0 {
            return Err(ErmError::EmptyData);
        }
        if features == 0 || features > crate::MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "feature count",
                value: features,
                requirement: "between 1 and 2^24 = 16777216",
            });
        }
        const _: () = assert!(
            MAX_HESSIAN_DIMENSION == 16_384,
            "the message below names it"
        );
        if self.solver == SolverChoice::Newton && features > MAX_HESSIAN_DIMENSION {
            return Err(ErmError::InvalidCount {
                what: "feature count for the Newton solver",
                value: features,
                requirement: "at most 16384 (it factors a d×d Hessian); use SolverChoice::Auto \
                              or SolverChoice::Lbfgs",
            });
        }
        let plain_floor = tolerance_floor(examples, features, self.loss, self.regularization, None);
        let plain_tolerance = || {
            resolve_tolerance(
                examples,
                self.tolerance,
                &plain_floor,
                self.regularization,
                None,
            )
        };
        match self.mechanism {
            Mechanism::NonPrivate => {
                self.check_warm_start(features, plain_floor.largest_weights)?;
                Ok(Plan::NonPrivate {
                    tolerance: plain_tolerance()?,
                })
            }
            Mechanism::OutputPerturbation { epsilon } => {
                self.check_warm_start(features, plain_floor.largest_weights)?;
                let tolerance = plain_tolerance()?;
                let calibration = calibration::output_perturbation(
                    epsilon,
                    examples,
                    self.regularization,
                    self.loss.lipschitz(),
                    tolerance,
                    &plain_floor,
                );
                let noise_norm = noise_norm_bound(features, calibration.beta);
                if !(calibration.beta > 0.0 && noise_norm <= MAX_NOISE_NORM) {
                    return Err(ErmError::NoiseBeyondPrecision {
                        epsilon,
                        noise_norm,
                    });
                }
                Ok(Plan::Output(calibration))
            }
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration: rule,
            } => {
                let (mut calibration, minimizer) = calibration::objective_perturbation(
                    epsilon,
                    examples,
                    features,
                    self.regularization,
                    self.loss,
                    rule,
                    self.tolerance,
                )?;
                if let Some(groups) = &self.noise_groups {
                    if groups.dim() != features {
                        return Err(ErmError::DimensionMismatch {
                            what: "feature groups",
                            expected: features,
                            found: groups.dim(),
                        });
                    }
                    // The rate the group-shaped noise uses (see GROUP_NOISE_RATE_DIVISOR).
                    calibration.beta /= GROUP_NOISE_RATE_DIVISOR;
                }
                // With the noise the minimizer's norm is bounded by (1 + ‖b‖/n)/(Λ+Δ).
                let noise_gradient = noise_norm_bound(features, calibration.beta) / examples as f64;
                let total = self.regularization + calibration.extra_regularization;
                self.check_warm_start(features, (1.0 + noise_gradient) / total)?;
                Ok(Plan::Objective(calibration, minimizer))
            }
            // Refused by `check` above.
            Mechanism::GaussianOutputPerturbation { .. }
            | Mechanism::GaussianObjectivePerturbation { .. } => Err(ErmError::MisplacedOption {
                option: "a Gaussian mechanism",
                applies_to: "GaussianErm, not ErmParams",
            }),
            Mechanism::AdaSsp { .. } => Err(ErmError::MisplacedOption {
                option: "AdaSSP",
                applies_to: "AdaSsp (regressors), not ErmParams",
            }),
            Mechanism::DpSgd { .. } | Mechanism::DpSgdAddRemove { .. } => {
                Err(ErmError::MisplacedOption {
                    option: "DP-SGD",
                    applies_to: "DpSgd, not ErmParams",
                })
            }
        }
    }

    /// A warm start must have the data's length and lie within [`WARM_START_SLACK`] times
    /// the a-priori bound on the minimizer's norm (`min(1/Λ, √(2ℓ(0)/Λ))` without noise,
    /// `(1 + ‖b‖/n)/(Λ+Δ)` with objective perturbation's noise at its e^{−40} bound): further
    /// out the objective's terms overflow and no solver can start, which must be found out
    /// from public values, before noise is drawn.
    fn check_warm_start(&self, features: usize, largest_weights: f64) -> Result<(), ErmError> {
        let Some(start) = &self.warm_start else {
            return Ok(());
        };
        if start.len() != features {
            return Err(ErmError::DimensionMismatch {
                what: "warm-start weights",
                expected: features,
                found: start.len(),
            });
        }
        let largest = start.iter().fold(0.0f64, |m, w| m.max(w.abs()));
        let norm = if largest > 0.0 {
            largest
                * start
                    .iter()
                    .map(|w| (w / largest) * (w / largest))
                    .sum::<f64>()
                    .sqrt()
        } else {
            0.0
        };
        if norm <= WARM_START_SLACK * largest_weights {
            Ok(())
        } else {
            Err(ErmError::InvalidParameter {
                what: "warm-start norm",
                value: norm,
                requirement: "at most 1e3 times the bound on the minimizer's norm for this loss and regularization",
            })
        }
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
    /// Also returns the secret noise vector (output or objective perturbation's).
    pub(crate) fn fit_with_rate_factor<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        rate_factor: f64,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError> {
        self.fit_with(data, rng, Mutation::NoiseRate(rate_factor))
    }

    /// The mechanism, or (tests only) one of its classic bugs.
    pub(crate) fn fit_with<R: ReleaseRng + ?Sized>(
        &self,
        data: &TrainingSet,
        rng: &mut R,
        mutation: Mutation,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError> {
        let (n, d) = (data.len(), data.features());
        // Every parameter refusal happens here, before any work, from public sizes only.
        let plan = self.calibrate(n, d)?;
        self.release(
            (n, d),
            &plan,
            rng,
            mutation,
            &mut |mu, linear, tolerance| self.solve(data, None, mu, linear, tolerance),
            &|groups| data.check_group_norms(groups),
        )
    }

    /// The mechanism of `plan` on n rows of d features whose objective `solve(μ, linear
    /// term, tolerance)` minimizes (in memory or over row blocks): the noise, the solve,
    /// the minimizer noise and the release grid, all here, so every data path runs the
    /// same mechanism. `check_groups` checks the rows' group norms for group-shaped noise.
    pub(crate) fn release<R: ReleaseRng + ?Sized>(
        &self,
        (n, d): (usize, usize),
        plan: &Plan,
        rng: &mut R,
        mutation: Mutation,
        solve: &mut SolveWith<'_>,
        check_groups: &dyn Fn(&FeatureGroups) -> Result<(), ErmError>,
    ) -> Result<(Fit, Option<Vec<f64>>), ErmError> {
        let rate_factor = match mutation {
            Mutation::NoiseRate(factor) => factor,
            Mutation::SummedLoss => 1.0,
        };
        let tolerance = plan.tolerance();
        let (weights, solution, noise) = match plan {
            Plan::NonPrivate { .. } => {
                let solution = solve(self.regularization, None, tolerance)?;
                (solution.weights().to_vec(), solution, None)
            }
            Plan::Output(calibration) => {
                let solution = solve(self.regularization, None, tolerance)?;
                let noise = GammaNormVector::new(d, calibration.beta * rate_factor)?.sample(rng);
                let mut weights = add(solution.weights(), &noise);
                snap_to_grid(&mut weights, calibration.release_grid);
                (weights, solution, Some(noise))
            }
            Plan::Objective(calibration, minimizer) => {
                let beta = calibration.beta * rate_factor;
                let noise = match &self.noise_groups {
                    Some(groups) => {
                        check_groups(groups)?;
                        GroupNormVector::new(groups.clone(), beta)?.sample(rng)
                    }
                    None => GammaNormVector::new(d, beta)?.sample(rng),
                };
                // The mutant sums the losses instead of averaging them: divided by n, its
                // objective has regularization (Λ+Δ)/n and linear term b/n².
                let scale = match mutation {
                    Mutation::SummedLoss => 1.0 / n as f64,
                    Mutation::NoiseRate(_) => 1.0,
                };
                let linear: Vec<f64> = noise.iter().map(|b| b / n as f64 * scale).collect();
                let total = (self.regularization + calibration.extra_regularization) * scale;
                let solution = solve(total, Some(&linear), tolerance)?;
                // The solver's point is within the certified radius of the exact minimizer;
                // the minimizer noise makes releasing it as private as releasing that.
                let smoothing = GammaNormVector::new(d, minimizer.beta)?.sample(rng);
                let mut weights = add(solution.weights(), &smoothing);
                snap_to_grid(&mut weights, calibration.release_grid);
                (weights, solution, Some(noise))
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
                    noise_groups: self.noise_groups.as_ref().map(FeatureGroups::count),
                    feature_map: self.feature_map.clone(),
                    crate_version: env!("CARGO_PKG_VERSION").to_owned(),
                },
            ),
            calibration: plan.calibration(),
            noise_norm: noise
                .as_ref()
                .map(|b| b.iter().map(|x| x * x).sum::<f64>().sqrt()),
            iterations: solution.iterations(),
            gradient_norm: solution.gradient_norm(),
            solver_weights: solution.weights().to_vec(),
        };
        Ok((fit, noise))
    }

    /// Minimizes `J + linᵀf + ((μ − Λ)/2)‖f‖²` (μ the total regularization) and insists on a
    /// certified solution. If the first solver stops short (an iteration limit or a line
    /// search that cannot progress), the other one continues from where it stopped; only if
    /// both fail is the fit refused, with nothing in the error but the refusal.
    /// `offsets` are a regression's scaled targets (its rows' labels are all 1).
    pub(crate) fn solve(
        &self,
        data: &TrainingSet,
        offsets: Option<&[f64]>,
        total_regularization: f64,
        linear: Option<&[f64]>,
        tolerance: f64,
    ) -> Result<Solution, ErmError> {
        let mut objective = GlmObjective::new(
            data.design(),
            data.labels(),
            self.loss,
            total_regularization,
        )?;
        if let Some(offsets) = offsets {
            objective = objective.with_offsets(offsets)?;
        }
        if let Some(linear) = linear {
            objective = objective.with_linear_term(linear)?;
        }
        let newton = Solver::Newton(Newton::default().tolerance(tolerance).max_iterations(500));
        let lbfgs = Solver::Lbfgs(Lbfgs::default().tolerance(tolerance));
        let hessian_fits = data.features() <= MAX_HESSIAN_DIMENSION;
        let (first, second) = match self.solver {
            SolverChoice::Auto => match Solver::for_dimension(data.features()) {
                Solver::Newton(_) => (newton, Some(lbfgs)),
                Solver::Lbfgs(_) => (lbfgs, hessian_fits.then_some(newton)),
            },
            SolverChoice::Newton => (newton, Some(lbfgs)),
            SolverChoice::Lbfgs => (lbfgs, hessian_fits.then_some(newton)),
        };
        // Length and size were checked before any work (`check_warm_start`).
        let start = self.warm_start.as_deref();
        let mut solution = first.minimize(&objective, start)?;
        if !solution.is_converged()
            && let Some(second) = second
        {
            let restart = solution.weights().iter().all(|w| w.is_finite());
            let from = restart.then(|| solution.weights().to_vec());
            solution = second.minimize(&objective, from.as_deref().or(start))?;
        }
        if solution.is_converged() {
            Ok(solution)
        } else {
            Err(ErmError::NotConverged)
        }
    }
}

/// Group-shaped noise divides objective perturbation's β by this: rows are accepted up to a
/// group norm of [`crate::GROUP_NORM_SLACK`] = 1 + 1e-12, checked on an upper bound of the
/// exact norm (one-hot rows scaled to Euclidean norm 1 have group norm 1, computed rounded
/// up a few ulps above), and the extra 1e-12 is margin. The sensitivity `2·(1 + 1e-12)`
/// then still gives `e^{ε'}`.
const GROUP_NOISE_RATE_DIVISOR: f64 = crate::GROUP_NORM_SLACK + 1e-12;

/// Shows the parameters, not the warm start's values (often a non-private minimizer).
impl std::fmt::Debug for ErmParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErmParams")
            .field("loss", &self.loss)
            .field("regularization", &self.regularization)
            .field("mechanism", &self.mechanism)
            .field("tolerance", &self.tolerance)
            .field("solver", &self.solver)
            .field("feature_map", &self.feature_map)
            .field(
                "group_noise",
                &self.noise_groups.as_ref().map(FeatureGroups::count),
            )
            .field(
                "warm_start",
                &self
                    .warm_start
                    .as_ref()
                    .map(|w| format!("<{} weights>", w.len())),
            )
            .finish_non_exhaustive()
    }
}

/// How a data path minimizes the objective: `(total regularization μ, linear term,
/// tolerance) → certified solution`.
pub(crate) type SolveWith<'a> =
    dyn FnMut(f64, Option<&[f64]>, f64) -> Result<Solution, ErmError> + 'a;

/// A deliberate bug for the privacy tests' mutation checks (never reachable from the
/// public API): `NoiseRate(1.0)` is the correct mechanism.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Mutation {
    /// The noise rate β multiplied by this factor (2: half the noise).
    NoiseRate(f64),
    /// Objective perturbation with the losses summed, not averaged (the missing 1/n).
    #[cfg_attr(not(test), allow(dead_code))]
    SummedLoss,
}

/// What a fit learns: a classifier's labels (±1) or a regressor's real targets. Each
/// refuses the other's losses, so a regression loss never trains a classifier nor the
/// reverse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Task {
    Classification,
    Regression,
}

impl Task {
    /// The task a loss trains for.
    pub(crate) fn of(loss: Loss) -> Task {
        if loss.is_regression() {
            Task::Regression
        } else {
            Task::Classification
        }
    }

    pub(crate) fn check_loss(self, loss: Loss) -> Result<(), ErmError> {
        match (self, loss.is_regression()) {
            (Self::Classification, false) | (Self::Regression, true) => Ok(()),
            (Self::Classification, true) => Err(ErmError::MisplacedOption {
                option: "a regression loss (Huber regression)",
                applies_to: "regression data (RegressionSet), not a classifier's training set",
            }),
            (Self::Regression, false) => Err(ErmError::MisplacedOption {
                option: "a classification loss (logistic, Huber hinge)",
                applies_to: "a classifier's training set, not regression data",
            }),
        }
    }
}

/// A fit decided before it runs: the mechanism's calibration and the solver tolerance.
pub(crate) enum Plan {
    NonPrivate { tolerance: f64 },
    Output(NoiseCalibration),
    Objective(NoiseCalibration, calibration::MinimizerNoise),
}

impl Plan {
    pub(crate) fn calibration(&self) -> Option<NoiseCalibration> {
        match self {
            Self::NonPrivate { .. } => None,
            Self::Output(calibration) | Self::Objective(calibration, _) => Some(*calibration),
        }
    }

    fn tolerance(&self) -> f64 {
        match self {
            Self::NonPrivate { tolerance } => *tolerance,
            Self::Output(calibration) | Self::Objective(calibration, _) => calibration.tolerance,
        }
    }
}

/// Rounds every weight to a multiple of `grid`, a power of two far below the noise's scale
/// and far above the weights' ulps.
///
/// The released `fl(f̂ + b)` carries, in its lowest bits, traces of which `f̂` it was
/// computed from — the floating-point leak Mironov (2012) exploited in the Laplace mechanism.
/// Measured: on a label-flip pair where the idealized privacy loss of output perturbation
/// is 0.009, an exact likelihood-ratio score on the raw doubles gave an audited lower bound
/// of 0.355; on the rounded release, 0 (test
/// `output_perturbation_release_leaks_nothing_through_its_low_bits`). In real arithmetic rounding is
/// post-processing and costs no privacy; in floating point it leaves only the rare draws
/// whose exact sum lies within an ulp of a grid midpoint.
pub(crate) fn snap_to_grid(weights: &mut [f64], grid: f64) {
    for w in weights.iter_mut() {
        let snapped = (*w / grid).round() * grid;
        if snapped.is_finite() {
            *w = snapped;
        }
    }
}

fn add(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x + y).collect()
}

/// A trained model with what it cost. Its `Debug` output leaves out the secret noise norm.
#[derive(Clone, PartialEq)]
pub struct Fit {
    model: LinearModel,
    calibration: Option<NoiseCalibration>,
    noise_norm: Option<f64>,
    iterations: usize,
    gradient_norm: f64,
    /// The solver's point before the minimizer noise (objective perturbation); secret.
    solver_weights: Vec<f64>,
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

    /// The noise parameters used (ε, ε', Δ, β, sensitivity, tolerance, minimizer noise);
    /// None when non-private. Public: functions of the parameters and sizes only.
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

    /// The solver's point before any noise was added to it (objective perturbation: before
    /// the minimizer noise; output perturbation: the non-private minimizer). **Secret**:
    /// releasing it voids the guarantee. For experiments that warm-start the next fit.
    pub fn secret_solver_weights(&self) -> &[f64] {
        &self.solver_weights
    }
}

impl std::fmt::Debug for Fit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fit")
            .field("model", &self.model)
            .field("calibration", &self.calibration)
            .field("secret_noise_norm", &"<not shown>")
            .field("secret_solver_weights", &"<not shown>")
            .finish_non_exhaustive()
    }
}
