//! The models an estimator released, as the crates' own types and files.

use std::path::Path;

use dp_erm::{
    Classifier, LinearModel, Loss, Mechanism, ModelMetadata, ObjectiveCalibration, SgdRecord,
};
use dp_kernel::KernelModel;

use crate::error::CoreError;
use crate::rows::{RowTransform, Rows};

/// One binary model, or one per class (one-vs-rest: the largest score wins).
pub enum Models {
    /// dp-erm models over rows transformed by `transform` (recorded in each model's
    /// `feature_map` metadata, so a file read back alone knows it).
    Linear {
        /// One model, or one per class.
        models: Vec<LinearModel>,
        /// The transform every row goes through before scoring.
        transform: RowTransform,
    },
    /// dp-kernel models (map and weights in each file).
    Kernel {
        /// One model, or one per class.
        models: Vec<KernelModel>,
    },
}

/// A model's public description (`Models::info`).
#[allow(missing_docs)] // The fields are `Models::info`'s keys, documented there.
pub struct ModelInfo {
    pub kind: &'static str,
    pub models: usize,
    /// The ε of each binary model (one-vs-rest: each has its share).
    pub epsilon_per_model: Option<f64>,
    /// Each model's δ (0 for the pure-ε mechanisms and non-private models).
    pub delta_per_model: f64,
    pub mechanism: &'static str,
    pub calibration: Option<&'static str>,
    pub loss: &'static str,
    pub huber_width: Option<f64>,
    pub regularization: f64,
    pub features: usize,
    pub noise_groups: Option<usize>,
    pub feature_map: Option<String>,
    pub crate_version: String,
    /// DP-SGD's recorded accounting (None for the other mechanisms).
    pub sgd: Option<SgdRecord>,
}

fn kind_error(kind: &str) -> CoreError {
    CoreError::value("kind", format!("= {kind:?}; expected 'linear' or 'kernel'"))
}

impl Models {
    /// Linear models whose metadata must record `transform`.
    pub fn linear(models: Vec<LinearModel>, transform: RowTransform) -> Result<Self, CoreError> {
        Ok(Models::Linear { models, transform })
    }

    /// Kernel models.
    pub fn kernel(models: Vec<KernelModel>) -> Self {
        Models::Kernel { models }
    }

    /// Linear models read back: the transform from the first model's metadata, which all
    /// of them must share, as they must share their input features.
    fn from_linear(models: Vec<LinearModel>) -> Result<Self, CoreError> {
        let Some(first) = models.first() else {
            return Err(CoreError::value(
                "model files",
                "are empty: at least one is required",
            ));
        };
        let id = first.metadata().feature_map.clone().unwrap_or_default();
        let transform = RowTransform::from_id(&id)?;
        let features = first.weights().len();
        if models.iter().any(|m| {
            m.metadata().feature_map.as_deref() != Some(id.as_str())
                || m.weights().len() != features
        }) {
            return Err(CoreError::value(
                "model files",
                "do not belong together (different features or transforms)",
            ));
        }
        if transform.output_features(0) > features {
            return Err(CoreError::value("model files", "have no input features"));
        }
        Ok(Models::Linear { models, transform })
    }

    fn from_kernel(models: Vec<KernelModel>) -> Result<Self, CoreError> {
        let Some(first) = models.first() else {
            return Err(CoreError::value(
                "model files",
                "are empty: at least one is required",
            ));
        };
        let d = first.map().input_features();
        if models.iter().any(|m| m.map().input_features() != d) {
            return Err(CoreError::value(
                "model files",
                "do not belong together (different input features)",
            ));
        }
        Ok(Models::Kernel { models })
    }

    /// From model files (plain, checksummed), one per binary model.
    pub fn from_files(kind: &str, files: &[Vec<u8>]) -> Result<Self, CoreError> {
        match kind {
            "linear" => Self::from_linear(
                files
                    .iter()
                    .map(|f| LinearModel::from_bytes(f))
                    .collect::<Result<_, _>>()?,
            ),
            "kernel" => Self::from_kernel(
                files
                    .iter()
                    .map(|f| KernelModel::from_bytes(f))
                    .collect::<Result<_, _>>()?,
            ),
            other => Err(kind_error(other)),
        }
    }

    /// One binary model from a file.
    pub fn load(kind: &str, path: &Path) -> Result<Self, CoreError> {
        match kind {
            "linear" => Self::from_linear(vec![LinearModel::load(path)?]),
            "kernel" => Self::from_kernel(vec![KernelModel::load(path)?]),
            other => Err(kind_error(other)),
        }
    }

    /// Writes the model to `path`: binary models only, one file being one Rust model.
    pub fn save(&self, path: &Path) -> Result<(), CoreError> {
        if self.len() != 1 {
            return Err(CoreError::value(
                "save",
                format!(
                    "writes one binary model file; this estimator holds {} one-vs-rest models \
                     (pickle it, or save each of `to_bytes()`)",
                    self.len()
                ),
            ));
        }
        match self {
            Models::Linear { models, .. } => models[0].save(path)?,
            Models::Kernel { models } => models[0].save(path)?,
        }
        Ok(())
    }

    /// The model files.
    pub fn to_files(&self) -> Result<Vec<Vec<u8>>, CoreError> {
        Ok(match self {
            Models::Linear { models, .. } => models
                .iter()
                .map(LinearModel::to_bytes)
                .collect::<Result<_, _>>()?,
            Models::Kernel { models } => models
                .iter()
                .map(KernelModel::to_bytes)
                .collect::<Result<_, _>>()?,
        })
    }

    /// Number of binary models.
    pub fn len(&self) -> usize {
        match self {
            Models::Linear { models, .. } => models.len(),
            Models::Kernel { models } => models.len(),
        }
    }

    /// Always false: a model set holds at least one model.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Features an input row must have.
    pub fn input_features(&self) -> usize {
        match self {
            Models::Linear { models, transform } => {
                models[0].weights().len() - transform.output_features(0)
            }
            Models::Kernel { models } => models[0].map().input_features(),
        }
    }

    /// Row-major `n × K` scores, each the crates' own `decision_function` of the row (for
    /// linear models, of the row after the public transform).
    pub fn decision(&self, rows: Rows<'_>) -> Result<Vec<f64>, CoreError> {
        let rows = rows.checked()?;
        let d = self.input_features();
        if rows.features() != d {
            return Err(CoreError::value(
                "X",
                format!(
                    "has {} features, but the model is expecting {d} features as input",
                    rows.features()
                ),
            ));
        }
        let k = self.len();
        let scores = rows
            .len()
            .checked_mul(k)
            .ok_or_else(|| CoreError::memory("the scores", usize::MAX))?;
        let mut out = crate::memory::with_capacity("the scores", scores)?;
        match self {
            Models::Linear { models, transform } => {
                let mut row = vec![0.0; transform.output_features(d)];
                for r in 0..rows.len() {
                    transform.write_scoring_row(&rows, r, &mut row);
                    for m in models {
                        out.push(m.decision_function(&row)?);
                    }
                }
            }
            Models::Kernel { models } => {
                let mut row = vec![0.0; d];
                for r in 0..rows.len() {
                    rows.write_dense(r, &mut row);
                    for m in models {
                        out.push(Classifier::decision_function(m, &row)?);
                    }
                }
            }
        }
        Ok(out)
    }

    /// Row-major `K × d` coefficients and K intercepts in the input's units: the weights
    /// over `(x/B, c)·s` give `coef = w·s/B` and `intercept = w_last·c·s`.
    pub fn coefficients(&self) -> Result<(Vec<f64>, Vec<f64>, usize), CoreError> {
        let Models::Linear { models, transform } = self else {
            return Err(CoreError::value(
                "coef_",
                "exists for linear models only: a kernel model's weights are over random features",
            ));
        };
        let d = self.input_features();
        let shrink = transform.intercept.map_or(1.0, |c| 1.0 / 1f64.hypot(c));
        let mut coef = Vec::with_capacity(models.len() * d);
        let mut intercept = Vec::with_capacity(models.len());
        for m in models {
            let w = m.weights();
            coef.extend(w[..d].iter().map(|v| v * shrink / transform.norm_bound));
            intercept.push(transform.intercept.map_or(0.0, |c| w[d] * c * shrink));
        }
        Ok((coef, intercept, d))
    }

    /// The public metadata: kind, number of models, each one's ε, mechanism,
    /// calibration, loss, Huber width, Λ, input features, noise groups, feature map and
    /// crate version (of the first model; one-vs-rest models share it, with the total
    /// ε of all of them).
    pub fn info(&self) -> ModelInfo {
        let (kind, metadata): (_, &ModelMetadata) = match self {
            Models::Linear { models, .. } => ("linear", models[0].metadata()),
            Models::Kernel { models } => ("kernel", models[0].linear().metadata()),
        };
        let (mechanism, calibration) = mechanism_name(&metadata.mechanism);
        let sgd = metadata.mechanism.sgd_record();
        let (loss, huber_width) = match metadata.loss {
            Loss::Logistic => ("logistic", None),
            Loss::Huber { width } => ("huber", Some(width)),
            Loss::HuberRegression { threshold } => ("huber-regression", Some(threshold)),
        };
        ModelInfo {
            kind,
            models: self.len(),
            epsilon_per_model: metadata.mechanism.epsilon(),
            delta_per_model: metadata.mechanism.delta(),
            mechanism,
            calibration,
            loss,
            huber_width,
            regularization: metadata.regularization,
            features: self.input_features(),
            noise_groups: metadata.noise_groups,
            feature_map: metadata.feature_map.clone(),
            crate_version: metadata.crate_version.clone(),
            sgd,
        }
    }
}

/// The name `privacy_` gives a model's mechanism, and its objective calibration's.
pub(crate) fn mechanism_name(mechanism: &Mechanism) -> (&'static str, Option<&'static str>) {
    match *mechanism {
        Mechanism::NonPrivate => ("non-private", None),
        Mechanism::OutputPerturbation { .. } => ("output", None),
        Mechanism::ObjectivePerturbation { calibration, .. } => (
            "objective",
            Some(match calibration {
                ObjectiveCalibration::CliffFree => "cliff-free",
                ObjectiveCalibration::Cms11 => "cms11",
            }),
        ),
        // (ε, δ) models written by Rust (dp-erm's GaussianErm): loadable, with their δ.
        Mechanism::GaussianOutputPerturbation { .. } => ("gaussian-output", None),
        Mechanism::GaussianObjectivePerturbation { .. } => ("gaussian-objective", None),
        Mechanism::DpSgd { .. } | Mechanism::DpSgdAddRemove { .. } => ("dp-sgd", None),
        Mechanism::AdaSsp { .. } => ("adassp", None),
    }
}
