//! The recipe of an empirical-risk fit, decided once for every face: which dp-erm
//! mechanism a spec names, how Λ is chosen, how the (ε, δ) of a one-vs-rest classifier is
//! shared among its binary models, every refusal that needs no data, and the fit itself.
//!
//! A face turns its options into an [`ErmRecipe`], asks it for a [`ErmPlan`] from the public
//! sizes (rows, features, classes) **before** it reads the data, and then fits the plan on
//! its rows. The command line, Python and Spark's driver therefore choose the same
//! mechanism, Λ and shares from the same inputs, and draw their noise in the same order.

use std::fmt;

use dp_erm::{
    ErmError, ErmParams, Examples, Features, GaussianCalibration, GaussianErm, GaussianRule,
    LinearModel, Loss, NoiseCalibration, ObjectiveCalibration, OneVsRest, Trainer, TrainingSet,
};
use dp_kernel::{Kernel, KernelError, Sampling};
use dp_noise::{FeatureGroups, ReleaseRng};

use crate::split::{per_model_delta, per_model_epsilon};

/// The mechanism of a fit, with its (ε, δ).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mechanism {
    /// No privacy: reachable only from the faces' explicit non-private testing modes.
    NonPrivate,
    /// Output perturbation at ε (Chaudhuri, Monteleoni and Sarwate 2011, Algorithm 1).
    Output {
        /// The ε of the guarantee.
        epsilon: f64,
    },
    /// Objective perturbation at ε with a calibration rule (CMS11 Algorithm 2).
    Objective {
        /// The ε of the guarantee.
        epsilon: f64,
        /// How ε is split between the regularizer's adjustment and the noise.
        calibration: ObjectiveCalibration,
    },
    /// dp-erm's `GaussianErm::output_perturbation` at (ε, δ).
    GaussianOutput {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ, in (0, 1).
        delta: f64,
    },
    /// dp-erm's `GaussianErm::objective_perturbation` at (ε, δ) (its cliff-free rule).
    GaussianObjective {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ, in (0, 1).
        delta: f64,
    },
    /// dp-erm's `AdaSsp` at (ε, δ): ridge regression on noisy sufficient statistics.
    /// Regressors only; δ > 0 always.
    AdaSsp {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ, in (0, 1).
        delta: f64,
    },
}

impl Mechanism {
    /// The mechanism a face names: `"objective"` (with `calibration`) or `"output"`,
    /// pure ε when δ = 0 and its Gaussian (ε, δ) form when δ > 0; `"adassp"` (regressors
    /// only) at (ε, δ), refused by name at δ = 0. `"non-private"` is accepted for the
    /// faces' testing modes only (they decide who may pass it).
    pub fn named(
        name: &str,
        calibration: &str,
        epsilon: f64,
        delta: f64,
    ) -> Result<Mechanism, RecipeError> {
        let calibration: CalibrationName = calibration.parse()?;
        let pure = match name.parse::<MechanismName>()? {
            MechanismName::Objective => Mechanism::Objective {
                epsilon,
                calibration: calibration.into(),
            },
            MechanismName::Output => Mechanism::Output { epsilon },
            MechanismName::NonPrivate => Mechanism::NonPrivate,
            MechanismName::AdaSsp => return Self::adassp(calibration, epsilon, delta),
        };
        if delta == 0.0 {
            return Ok(pure);
        }
        if !(delta.is_finite() && delta > 0.0 && delta <= crate::spec::MAX_DELTA) {
            return Err(RecipeError::refused(
                Parameter::Delta,
                format!(
                    "= {delta:?}; it must be 0 (pure ε) or in (0, {:?}]",
                    crate::spec::MAX_DELTA
                ),
            ));
        }
        match pure {
            Mechanism::Output { epsilon } => Ok(Mechanism::GaussianOutput { epsilon, delta }),
            Mechanism::Objective {
                epsilon,
                calibration: ObjectiveCalibration::CliffFree,
            } => Ok(Mechanism::GaussianObjective { epsilon, delta }),
            Mechanism::Objective { .. } => Err(RecipeError::refused(
                Parameter::Calibration,
                "= 'cms11' applies to the pure-ε objective perturbation only; with delta > 0 \
                 the Gaussian objective perturbation uses its own cliff-free rule: leave \
                 calibration='cliff-free'",
            )),
            _ => Err(RecipeError::refused(
                Parameter::Delta,
                "> 0 does not apply to a non-private fit",
            )),
        }
    }

    /// AdaSSP at (ε, δ): δ = 0 refused by name (it has no pure-ε form), as is a
    /// calibration other than the default (it belongs to objective perturbation).
    fn adassp(
        calibration: CalibrationName,
        epsilon: f64,
        delta: f64,
    ) -> Result<Mechanism, RecipeError> {
        if calibration != CalibrationName::CliffFree {
            return Err(RecipeError::refused(
                Parameter::Calibration,
                "applies to mechanism 'objective' only; leave it at its default with 'adassp'",
            ));
        }
        if delta == 0.0 {
            return Err(RecipeError::refused(
                Parameter::Delta,
                "= 0, but mechanism 'adassp' releases Gaussian noise and has no pure-ε form: \
                 pass delta > 0, or use 'objective' or 'output' for pure ε",
            ));
        }
        if !(delta.is_finite() && delta > 0.0 && delta <= crate::spec::MAX_DELTA) {
            return Err(RecipeError::refused(
                Parameter::Delta,
                format!(
                    "= {delta:?}; it must be in (0, {:?}]",
                    crate::spec::MAX_DELTA
                ),
            ));
        }
        Ok(Mechanism::AdaSsp { epsilon, delta })
    }

    /// The ε of the guarantee (`None`: not private).
    pub fn epsilon(&self) -> Option<f64> {
        match *self {
            Mechanism::NonPrivate => None,
            Mechanism::Output { epsilon }
            | Mechanism::Objective { epsilon, .. }
            | Mechanism::GaussianOutput { epsilon, .. }
            | Mechanism::GaussianObjective { epsilon, .. }
            | Mechanism::AdaSsp { epsilon, .. } => Some(epsilon),
        }
    }

    /// The same mechanism at another ε (a non-private one stays non-private).
    pub fn with_epsilon(self, epsilon: f64) -> Mechanism {
        match self {
            Mechanism::NonPrivate => Mechanism::NonPrivate,
            Mechanism::Output { .. } => Mechanism::Output { epsilon },
            Mechanism::Objective { calibration, .. } => Mechanism::Objective {
                epsilon,
                calibration,
            },
            Mechanism::GaussianOutput { delta, .. } => Mechanism::GaussianOutput { epsilon, delta },
            Mechanism::GaussianObjective { delta, .. } => {
                Mechanism::GaussianObjective { epsilon, delta }
            }
            Mechanism::AdaSsp { delta, .. } => Mechanism::AdaSsp { epsilon, delta },
        }
    }

    /// The δ of the guarantee: 0 for the pure-ε mechanisms.
    pub fn delta(&self) -> f64 {
        match *self {
            Mechanism::GaussianOutput { delta, .. }
            | Mechanism::GaussianObjective { delta, .. }
            | Mechanism::AdaSsp { delta, .. } => delta,
            _ => 0.0,
        }
    }

    /// What the report says the mechanism is (public: it names the method, not the data).
    pub fn description(&self) -> &'static str {
        match self {
            Mechanism::NonPrivate => "no privacy (a testing mode): the exact minimizer",
            Mechanism::Output { .. } => OUTPUT_MECHANISM,
            Mechanism::Objective {
                calibration: ObjectiveCalibration::CliffFree,
                ..
            } => OBJECTIVE_MECHANISM,
            Mechanism::Objective { .. } => OBJECTIVE_CMS11_MECHANISM,
            Mechanism::GaussianOutput { .. } => GAUSSIAN_OUTPUT_MECHANISM,
            Mechanism::GaussianObjective { .. } => GAUSSIAN_OBJECTIVE_MECHANISM,
            Mechanism::AdaSsp { .. } => ADASSP_MECHANISM,
        }
    }
}

/// [`Mechanism::Objective`]'s description (the cliff-free calibration).
pub const OBJECTIVE_MECHANISM: &str = "objective perturbation (Chaudhuri, Monteleoni and \
     Sarwate 2011), cliff-free calibration, minimizer noise covering the solver's tolerance";
/// [`Mechanism::Objective`]'s description with the published calibration.
pub const OBJECTIVE_CMS11_MECHANISM: &str = "objective perturbation (Chaudhuri, Monteleoni \
     and Sarwate 2011, Algorithm 2 as published), minimizer noise covering the solver's \
     tolerance";
/// [`Mechanism::Output`]'s description.
pub const OUTPUT_MECHANISM: &str = "output perturbation (Chaudhuri, Monteleoni and Sarwate \
     2011, Algorithm 1): the exact minimizer plus noise covering its sensitivity and the \
     solver's tolerance";
/// [`Mechanism::GaussianObjective`]'s description.
pub const GAUSSIAN_OBJECTIVE_MECHANISM: &str = "Gaussian objective perturbation (Kifer, Smith \
     and Thakurta 2012; dp-erm GaussianErm): (ε, δ)-DP, cliff-free rule, minimizer noise \
     covering the solver's tolerance";
/// [`Mechanism::GaussianOutput`]'s description.
pub const GAUSSIAN_OUTPUT_MECHANISM: &str = "Gaussian output perturbation (dp-erm \
     GaussianErm): (ε, δ)-DP, the exact minimizer plus spherical Gaussian noise covering its \
     sensitivity and the solver's tolerance";

/// [`Mechanism::AdaSsp`]'s description.
pub const ADASSP_MECHANISM: &str = "AdaSSP (Wang 2018, Algorithm 2; dp-erm AdaSsp): (ε, δ)-DP, \
     ridge regression on discrete Gaussian releases of λ_min(XᵀX), XᵀX and Xᵀt, a third of \
     the zCDP budget each, with λ chosen from the noisy λ_min";

/// What a report says a random-features kernel fit is.
pub const KERNEL_MECHANISM: &str = "random Fourier features drawn before and independently of \
     the data (dp-kernel; every mapped row in the unit ball), then objective perturbation \
     (cliff-free calibration) on the mapped rows";

/// How Λ is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Regularization {
    /// dp-erm's data-independent rule for the mechanism, from the public n, d and each
    /// model's (ε, δ): `RegularizationRule::GROUPED` (which also reads the number of
    /// groups) where the noise is shaped to feature groups, `RegularizationRule::DEFAULT` for the other pure-ε fits, and
    /// `GaussianRule::OBJECTIVE` / `GaussianRule::OUTPUT` for the Gaussian mechanisms (Λ
    /// from the noise multiplier their calibration reports).
    Rule,
    /// A fixed Λ.
    Fixed(f64),
}

impl ErmRecipe {
    /// The name of the rule [`Regularization::Rule`] applies to this recipe, for reports.
    pub fn rule_name(&self) -> &'static str {
        match (&self.groups, self.mechanism) {
            (_, Mechanism::GaussianObjective { .. }) => "GaussianRule::OBJECTIVE",
            (_, Mechanism::GaussianOutput { .. }) => "GaussianRule::OUTPUT",
            (Some(_), _) => "RegularizationRule::GROUPED",
            (None, _) => "RegularizationRule::DEFAULT",
        }
    }
}

/// Everything an empirical-risk fit needs besides the data, in face-neutral terms.
#[derive(Clone, Debug)]
pub struct ErmRecipe {
    /// The loss.
    pub loss: Loss,
    /// The mechanism and its (ε, δ).
    pub mechanism: Mechanism,
    /// How Λ is chosen.
    pub regularization: Regularization,
    /// The noise shaped to these groups of the trained features (pure-ε objective and
    /// output perturbation only); `None`: Euclidean noise.
    pub groups: Option<FeatureGroups>,
    /// The solver's certified gradient norm (`None`: dp-erm's default).
    pub tolerance: Option<f64>,
    /// The id of the public map from the face's input to the trained features, recorded in
    /// each model so that predictions refuse other inputs.
    pub feature_map: String,
}

/// The mechanism of one binary model's fit, with its share of the budget.
#[derive(Clone, Debug)]
pub enum ErmTrainer {
    /// A pure-ε (or non-private) fit.
    Pure(ErmParams),
    /// An (ε, δ) fit.
    Gaussian(GaussianErm),
}

/// A recipe made concrete for public sizes: everything decided and checked before any
/// row is read.
#[derive(Clone, Debug)]
pub struct ErmPlan {
    /// Each binary model's trainer, at its share of (ε, δ).
    pub trainer: ErmTrainer,
    /// Λ, from the rule or as given.
    pub regularization: f64,
    /// The number of classes (2: one binary model; K > 2: K one-vs-rest models).
    pub class_count: usize,
    /// The ε of the whole release (`None`: not private).
    pub epsilon: Option<f64>,
    /// The δ of the whole release (0 for the pure-ε mechanisms).
    pub delta: f64,
    /// The pure mechanisms' calibration of each model's fit (public: parameters and sizes).
    pub calibration: Option<NoiseCalibration>,
    /// The Gaussian mechanisms' calibration of each model's fit.
    pub gaussian: Option<GaussianCalibration>,
    /// The recipe's feature-map id, recorded in each model.
    pub feature_map: String,
}

/// The number of binary models a classifier of `class_count` classes trains.
pub fn model_count(class_count: usize) -> usize {
    if class_count == 2 { 1 } else { class_count }
}

impl ErmRecipe {
    /// The plan for `rows` rows of `features` trained features and `class_count` classes:
    /// the mechanism, Λ and each model's share, with every refusal of the parameters and
    /// sizes made now, before any data are read.
    ///
    /// # Privacy
    /// Reads only the public sizes, the spec and the public groups. Under replace-one
    /// neighbours (every mechanism planned here) the row count is public. K one-vs-rest
    /// models get `per_model_epsilon`/`per_model_delta`'s shares, whose K-fold sum is at
    /// most the whole (ε, δ) (basic composition).
    pub fn plan(
        &self,
        rows: usize,
        features: usize,
        class_count: usize,
    ) -> Result<ErmPlan, RecipeError> {
        if let Mechanism::AdaSsp { .. } = self.mechanism {
            return Err(RecipeError::refused(
                Parameter::Mechanism,
                "= 'adassp' trains regressors only; a classifier takes 'objective' or 'output'",
            ));
        }
        if class_count < 2 {
            return Err(RecipeError::refused(
                Parameter::Classes,
                format!("has {class_count} classes; at least 2 are required"),
            ));
        }
        // One ceiling on K for every one-vs-rest path (linear, Gaussian, kernel).
        OneVsRest::check_class_count(class_count)?;
        let models = model_count(class_count);
        let epsilon = self.mechanism.epsilon();
        let share = epsilon.map(|e| epsilon_share(e, models)).transpose()?;
        let lambda = self.lambda(rows, features, share, models)?;
        let (trainer, calibration, gaussian) = if self.mechanism.delta() > 0.0 {
            let erm = self.gaussian(lambda, share, models)?;
            let calibration = erm.calibration(rows, features)?;
            (ErmTrainer::Gaussian(erm), None, Some(calibration))
        } else {
            let params = self.params_at(lambda, share);
            let calibration = params.noise_calibration(rows, features)?;
            (ErmTrainer::Pure(params), calibration, None)
        };
        Ok(ErmPlan {
            trainer,
            regularization: lambda,
            class_count,
            epsilon,
            delta: self.mechanism.delta(),
            calibration,
            gaussian,
            feature_map: self.feature_map.clone(),
        })
    }

    /// Λ: fixed, or dp-erm's data-independent rule for the mechanism from n, d and each of
    /// `models` models' ε `share` (and δ share): `RegularizationRule::params`, which also
    /// raises Λ where the calibration would otherwise refuse it, or `GaussianRule::trainer`'s
    /// fixed point.
    fn lambda(
        &self,
        rows: usize,
        features: usize,
        share: Option<f64>,
        models: usize,
    ) -> Result<f64, RecipeError> {
        Ok(match self.regularization {
            Regularization::Fixed(lambda) => lambda,
            Regularization::Rule => {
                let Some(share) = share else {
                    return Err(RecipeError::refused(
                        Parameter::Regularization,
                        "= 'auto' needs a finite epsilon: pass a number for a non-private fit",
                    ));
                };
                let delta = per_model_delta(self.mechanism.delta(), models);
                match (&self.groups, self.mechanism) {
                    (_, Mechanism::GaussianObjective { .. }) => GaussianRule::OBJECTIVE
                        .trainer(rows, features, share, delta)?
                        .regularization(),
                    (_, Mechanism::GaussianOutput { .. }) => GaussianRule::OUTPUT
                        .trainer(rows, features, share, delta)?
                        .regularization(),
                    (Some(g), _) => {
                        ErmParams::recommended_grouped(rows, features, share, g.clone())?
                            .regularization()
                    }
                    (None, _) => ErmParams::recommended(rows, features, share)?.regularization(),
                }
            }
        })
    }

    /// One binary model's pure-ε (or non-private) parameters at Λ = `lambda` and ε
    /// `share` (`None`: not private), as [`ErmRecipe::plan`] makes them: what a tuner's
    /// candidates are built from.
    pub fn params_at(&self, lambda: f64, share: Option<f64>) -> ErmParams {
        let mut params = match (self.mechanism, share) {
            (Mechanism::Output { .. }, Some(e)) => {
                ErmParams::output_perturbation(self.loss, lambda, e)
            }
            (Mechanism::Objective { calibration, .. }, Some(e)) => {
                ErmParams::objective_perturbation(self.loss, lambda, e)
                    .objective_calibration(calibration)
            }
            _ => ErmParams::non_private(self.loss, lambda),
        };
        if let Some(g) = &self.groups {
            params = params.group_noise(g.clone());
        }
        if let Some(tolerance) = self.tolerance {
            params = params.tolerance(tolerance);
        }
        params.feature_map(&self.feature_map)
    }

    /// The Gaussian mechanism at Λ = `lambda`, ε `epsilon` and the recipe's whole δ (a
    /// regressor's single model).
    pub(crate) fn gaussian_at(
        &self,
        lambda: f64,
        epsilon: Option<f64>,
    ) -> Result<GaussianErm, RecipeError> {
        self.gaussian(lambda, epsilon, 1)
    }

    /// One binary model's Gaussian mechanism at (ε `share`, δ/K).
    fn gaussian(
        &self,
        lambda: f64,
        share: Option<f64>,
        models: usize,
    ) -> Result<GaussianErm, RecipeError> {
        if self.groups.is_some() {
            return Err(RecipeError::refused(
                Parameter::FeatureGroups,
                "shapes the pure-ε objective perturbation's noise; the Gaussian mechanisms \
                 (delta > 0) add spherical noise: leave the feature groups out",
            ));
        }
        let share = share.unwrap_or(f64::INFINITY);
        let delta = per_model_delta(self.mechanism.delta(), models);
        let mut erm = match self.mechanism {
            Mechanism::GaussianOutput { .. } => {
                GaussianErm::output_perturbation(self.loss, lambda, share, delta)
            }
            _ => GaussianErm::objective_perturbation(self.loss, lambda, share, delta),
        };
        if let Some(tolerance) = self.tolerance {
            erm = erm.tolerance(tolerance);
        }
        Ok(erm)
    }
}

/// Each of `models` fits' ε, refused naming ε when it is too small to split.
fn epsilon_share(epsilon: f64, models: usize) -> Result<f64, RecipeError> {
    per_model_epsilon(epsilon, models).ok_or_else(|| {
        RecipeError::refused(
            Parameter::Epsilon,
            format!("= {epsilon:?} is too small to split across {models} classes"),
        )
    })
}

impl ErmPlan {
    /// The number of binary models the plan trains.
    pub fn models(&self) -> usize {
        model_count(self.class_count)
    }

    /// One binary model's pure-ε parameters (`None` for the Gaussian mechanisms): what a
    /// kernel fit wraps, or what a fit over row blocks takes.
    pub fn params(&self) -> Option<&ErmParams> {
        match &self.trainer {
            ErmTrainer::Pure(p) => Some(p),
            ErmTrainer::Gaussian(_) => None,
        }
    }

    /// Trains on `data` (rows in the unit ball; their own labels are ignored) with class
    /// index `classes[i]` for row i: one binary model (class 1 is +1) or, for K > 2
    /// classes, model k on class k against the rest, for k = 0, 1, …, K−1, every draw from
    /// `rng`. Checks that `classes` fits the plan first.
    ///
    /// # Privacy
    /// Each model is (ε/K, δ/K)-DP by its mechanism's `# Privacy`; the K together are
    /// (ε, δ)-DP by basic composition (every person is in each binary problem).
    pub fn fit(
        &self,
        data: &TrainingSet,
        classes: &[usize],
        rng: &mut dyn ReleaseRng,
    ) -> Result<Vec<LinearModel>, ErmError> {
        check_classes(classes, data.len(), self.class_count)?;
        match &self.trainer {
            ErmTrainer::Pure(params) if self.class_count == 2 => {
                let data = data.relabel(binary_labels(classes))?;
                Ok(vec![params.fit(&data, rng)?.into_model()])
            }
            ErmTrainer::Pure(params) => {
                // OneVsRest takes the whole ε and shares it as `per_model_epsilon` does.
                let whole = match self.epsilon {
                    Some(e) => params.clone().with_epsilon(e),
                    None => params.clone(),
                };
                Ok(
                    OneVsRest::fit(&whole, data, classes, self.class_count, rng)?
                        .models()
                        .to_vec(),
                )
            }
            ErmTrainer::Gaussian(erm) => (0..self.models())
                .map(|k| {
                    let labels = one_vs_rest_labels(classes, self.class_count, k);
                    let (model, _) = erm.fit(&data.relabel(labels)?, rng)?;
                    // GaussianErm records no map itself.
                    model.with_feature_map(&self.feature_map)
                })
                .collect(),
        }
    }
}

/// Trains a classifier of `class_count` classes on `inputs` with any dp-erm trainer (DP-SGD,
/// random-features kernels, …): one binary model on class 1 against class 0, or, for K > 2
/// classes, model k on class k against the rest through `OneVsRest::fit_trainer`, for
/// k = 0, 1, …, K−1, every draw from `rng`. `trainer` is each model's, at its share.
///
/// # Privacy
/// As `OneVsRest::fit_trainer`'s: the K fits compose sequentially.
pub fn fit_classes<T>(
    trainer: &T,
    inputs: Features,
    classes: &[usize],
    class_count: usize,
    rng: &mut dyn ReleaseRng,
) -> Result<Vec<T::Model>, T::Error>
where
    T: Trainer,
    T::Model: Clone,
    T::Error: From<ErmError>,
{
    let examples = Examples::new(inputs, binary_labels(classes))?;
    if class_count == 2 {
        check_classes(classes, examples.len(), class_count)?;
        return Ok(vec![trainer.train(&examples, rng)?]);
    }
    Ok(
        OneVsRest::fit_trainer(trainer, &examples, classes, class_count, rng)?
            .models()
            .to_vec(),
    )
}

/// The ±1 labels of a binary problem: class 1 is +1.
pub fn binary_labels(classes: &[usize]) -> Vec<f64> {
    classes
        .iter()
        .map(|&c| if c == 1 { 1.0 } else { -1.0 })
        .collect()
}

/// The labels of class `k` against the rest (binary: class 1 is +1).
pub fn one_vs_rest_labels(classes: &[usize], class_count: usize, k: usize) -> Vec<f64> {
    if class_count == 2 {
        binary_labels(classes)
    } else {
        classes
            .iter()
            .map(|&c| if c == k { 1.0 } else { -1.0 })
            .collect()
    }
}

/// Refuses class indices that do not fit `rows` rows and `class_count` classes.
pub fn check_classes(classes: &[usize], rows: usize, class_count: usize) -> Result<(), ErmError> {
    if classes.len() != rows {
        return Err(ErmError::DimensionMismatch {
            what: "class labels",
            expected: rows,
            found: classes.len(),
        });
    }
    if classes.iter().any(|&c| c >= class_count) {
        return Err(ErmError::InvalidCount {
            what: "class index",
            value: class_count,
            requirement: "every class index below the number of classes",
        });
    }
    Ok(())
}

/// A parameter of the recipe, named by each face in its own terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parameter {
    /// ε.
    Epsilon,
    /// δ.
    Delta,
    /// Λ or its rule.
    Regularization,
    /// The groups the noise is shaped to.
    FeatureGroups,
    /// The objective perturbation's calibration.
    Calibration,
    /// The mechanism.
    Mechanism,
    /// The loss.
    Loss,
    /// The kernel of a random-features model.
    Kernel,
    /// How a random-features model draws its frequencies.
    Sampling,
    /// The classes of the label.
    Classes,
}

impl Parameter {
    /// The name Python's estimators give the parameter.
    pub fn python_name(&self) -> &'static str {
        match self {
            Parameter::Epsilon => "epsilon",
            Parameter::Delta => "delta",
            Parameter::Regularization => "regularization",
            Parameter::FeatureGroups => "feature_groups",
            Parameter::Calibration => "calibration",
            Parameter::Mechanism => "mechanism",
            Parameter::Loss => "loss",
            Parameter::Kernel => "kernel",
            Parameter::Sampling => "sampling",
            Parameter::Classes => "classes",
        }
    }

    /// The option of `dpml train` that sets it.
    pub fn option_name(&self) -> &'static str {
        match self {
            Parameter::Epsilon => "--epsilon",
            Parameter::Delta => "--delta",
            Parameter::Regularization => "--regularization",
            Parameter::FeatureGroups => "--noise",
            Parameter::Calibration => "--calibration",
            Parameter::Mechanism => "--model",
            Parameter::Loss => "--model",
            Parameter::Kernel => "--kernel",
            Parameter::Sampling => "--sampling",
            Parameter::Classes => "the schema's label",
        }
    }
}

/// Why the recipe refused.
#[derive(Debug)]
pub enum RecipeError {
    /// A parameter was refused before any data were read.
    Refused {
        /// Which.
        parameter: Parameter,
        /// Why, as a phrase that follows the parameter's name.
        why: String,
    },
    /// dp-erm refused (its message names the parameter or size).
    Erm(ErmError),
}

impl RecipeError {
    pub(crate) fn refused(parameter: Parameter, why: impl Into<String>) -> RecipeError {
        RecipeError::Refused {
            parameter,
            why: why.into(),
        }
    }
}

impl From<ErmError> for RecipeError {
    fn from(e: ErmError) -> Self {
        RecipeError::Erm(e)
    }
}

impl fmt::Display for RecipeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecipeError::Refused { parameter, why } => {
                write!(f, "{} {why}", parameter.python_name())
            }
            RecipeError::Erm(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for RecipeError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecipeError::Refused { .. } => None,
            RecipeError::Erm(e) => Some(e),
        }
    }
}

/// Names with a fixed spelling that every face parses the same way.
macro_rules! names {
    ($(#[$doc:meta])* $name:ident ($parameter:expr) { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every spelling, in order.
            pub const NAMES: &'static [&'static str] = &[$($text),+];

            /// The spelling.
            pub fn name(&self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = RecipeError;

            fn from_str(s: &str) -> Result<Self, RecipeError> {
                match s {
                    $($text => Ok($name::$variant),)+
                    other => Err(RecipeError::refused(
                        $parameter,
                        format!("= {other:?}; expected one of {}", quoted(Self::NAMES)),
                    )),
                }
            }
        }
    };
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

names! {
    /// The mechanisms a face may name.
    MechanismName(Parameter::Mechanism) {
        /// Objective perturbation.
        Objective = "objective",
        /// Output perturbation.
        Output = "output",
        /// No privacy (testing modes only).
        NonPrivate = "non-private",
        /// AdaSSP (regressors only, δ > 0).
        AdaSsp = "adassp",
    }
}

names! {
    /// The calibrations of objective perturbation.
    CalibrationName(Parameter::Calibration) {
        /// `ObjectiveCalibration::CliffFree`.
        CliffFree = "cliff-free",
        /// `ObjectiveCalibration::Cms11`.
        Cms11 = "cms11",
    }
}

impl From<CalibrationName> for ObjectiveCalibration {
    fn from(name: CalibrationName) -> Self {
        match name {
            CalibrationName::CliffFree => ObjectiveCalibration::CliffFree,
            CalibrationName::Cms11 => ObjectiveCalibration::Cms11,
        }
    }
}

names! {
    /// The losses of the linear models.
    LossName(Parameter::Loss) {
        /// Logistic regression.
        Logistic = "logistic",
        /// The Huber SVM.
        Huber = "huber",
    }
}

impl LossName {
    /// The loss, with `huber_width` for the Huber SVM.
    pub fn loss(&self, huber_width: f64) -> Result<Loss, RecipeError> {
        Ok(match self {
            LossName::Logistic => Loss::Logistic,
            LossName::Huber => Loss::huber(huber_width)?,
        })
    }
}

names! {
    /// The kernels of the random-features models.
    KernelName(Parameter::Kernel) {
        /// exp(−γ‖x − x'‖²).
        Gaussian = "gaussian",
        /// exp(−γ‖x − x'‖₁).
        Laplacian = "laplacian",
    }
}

impl KernelName {
    /// The kernel at width `gamma`.
    pub fn kernel(&self, gamma: f64) -> Result<Kernel, KernelError> {
        match self {
            KernelName::Gaussian => Kernel::gaussian(gamma),
            KernelName::Laplacian => Kernel::laplacian(gamma),
        }
    }
}

names! {
    /// How a random-features model draws its frequencies.
    SamplingName(Parameter::Sampling) {
        /// Independent frequencies (Rahimi and Recht).
        Standard = "standard",
        /// Orthogonal random features (Yu et al. 2016; Gaussian kernel only).
        Orthogonal = "orthogonal",
    }
}

impl From<SamplingName> for Sampling {
    fn from(name: SamplingName) -> Self {
        match name {
            SamplingName::Standard => Sampling::Standard,
            SamplingName::Orthogonal => Sampling::Orthogonal,
        }
    }
}

#[cfg(test)]
#[path = "recipe_tests.rs"]
mod tests;
