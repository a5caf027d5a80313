//! The released regressor: weights on scaled targets, the public target bounds that undo
//! the scaling, and the classifier's metadata and file container.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{LinearModel, ModelMetadata, StoredModel, container, validate};
use crate::{ErmError, Features};

/// The public bounds of a regression target, `lower < upper`, both finite: what scales
/// targets into [−1, 1] for training (`s = (2y − lower − upper)/(upper − lower)`) and
/// predictions back. A guarantee rests on them, so they must be public — stated from
/// knowledge of the domain or released privately, never read from the rows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawTargetScale")]
pub struct TargetScale {
    lower: f64,
    upper: f64,
}

#[derive(Deserialize)]
struct RawTargetScale {
    lower: f64,
    upper: f64,
}

impl TryFrom<RawTargetScale> for TargetScale {
    type Error = ErmError;

    fn try_from(raw: RawTargetScale) -> Result<Self, ErmError> {
        Self::new(raw.lower, raw.upper)
    }
}

impl TargetScale {
    /// Bounds `lower < upper`, both finite, with a finite width.
    pub fn new(lower: f64, upper: f64) -> Result<Self, ErmError> {
        if lower.is_finite() && upper.is_finite() && lower < upper && (upper - lower).is_finite() {
            Ok(Self { lower, upper })
        } else {
            Err(ErmError::InvalidParameter {
                what: "target bounds",
                value: upper - lower,
                requirement: "finite, with lower < upper (the value is upper − lower)",
            })
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

    /// `y` in [lower, upper] mapped to [−1, 1] (clamped there against rounding).
    pub fn scale(&self, y: f64) -> f64 {
        let half_width = 0.5 * (self.upper - self.lower);
        let centre = self.lower + half_width;
        ((y - centre) / half_width).clamp(-1.0, 1.0)
    }

    /// A scaled value mapped back to the target's units, clamped to [lower, upper].
    pub fn unscale(&self, s: f64) -> f64 {
        let half_width = 0.5 * (self.upper - self.lower);
        (self.lower + half_width * (s + 1.0)).clamp(self.lower, self.upper)
    }
}

/// A linear regressor `x ↦ unscale(fᵀx)`: the weights f were trained on targets scaled into
/// [−1, 1] by the public [`TargetScale`], and every prediction is mapped back and clamped
/// to the public bounds (post-processing: it costs nothing beyond the ε it was trained
/// with, and never predicts outside what was declared possible).
///
/// Stored in the one model container ([`super::LinearModel`]'s "Files") under the type name
/// `"dp-erm/linear-regression"`; every deserialization route validates it as a classifier's
/// metadata is validated, and requires a regression loss (a classifier's file is refused
/// here, and a regressor's by [`LinearModel`]'s loaders).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawRegressionModel")]
pub struct RegressionModel {
    weights: Vec<f64>,
    metadata: ModelMetadata,
    target: TargetScale,
}

/// [`RegressionModel`] as it arrives from a deserializer. Public only to serve as
/// `StoredModel::Unchecked`; its module is private.
#[derive(Deserialize)]
pub struct RawRegressionModel {
    weights: Vec<f64>,
    metadata: ModelMetadata,
    target: TargetScale,
}

impl TryFrom<RawRegressionModel> for RegressionModel {
    type Error = ErmError;

    fn try_from(raw: RawRegressionModel) -> Result<Self, ErmError> {
        if !raw.metadata.loss.is_regression() {
            return Err(ErmError::InvalidModelFile(format!(
                "a regressor's file holds the classification loss {}",
                raw.metadata.loss.name()
            )));
        }
        validate::check_weights(&raw.weights, &raw.metadata)?;
        Ok(Self {
            weights: raw.weights,
            metadata: raw.metadata,
            target: raw.target,
        })
    }
}

impl RegressionModel {
    /// The regressor of a fit's linear model (its loss a regression loss) and the public
    /// target bounds it was trained with.
    pub(crate) fn from_linear(model: LinearModel, target: TargetScale) -> Self {
        let (weights, metadata) = model.into_parts();
        Self {
            weights,
            metadata,
            target,
        }
    }

    /// The weights f, on the scaled target.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The metadata (mechanism, ε, δ, loss, Λ, features).
    pub fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    /// The public target bounds.
    pub fn target_scale(&self) -> TargetScale {
        self.target
    }

    /// The ε it was trained with (None if non-private); from a plain file, the file's claim.
    pub fn epsilon(&self) -> Option<f64> {
        self.metadata.mechanism.epsilon()
    }

    /// The number of features d a row must have.
    pub fn input_features(&self) -> usize {
        self.weights.len()
    }

    /// The same model recording the feature map its rows went through (see
    /// [`LinearModel::with_feature_map`]).
    pub fn with_feature_map(mut self, id: &str) -> Result<Self, ErmError> {
        validate::check_text("feature_map", id)?;
        self.metadata.feature_map = Some(id.to_owned());
        Ok(self)
    }

    /// The prediction for one row (length d, finite values), in the target's units and
    /// within its public bounds.
    pub fn predict(&self, x: &[f64]) -> Result<f64, ErmError> {
        crate::check_row(x, self.weights.len())?;
        let score: f64 = self.weights.iter().zip(x).map(|(w, v)| w * v).sum();
        if score.is_finite() {
            Ok(self.target.unscale(score))
        } else {
            Err(ErmError::DecisionOverflow { row: 0 })
        }
    }

    /// The prediction for every row (an error naming the first row whose score overflows).
    pub fn predictions(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        Ok(rows
            .scores(&self.weights)?
            .into_iter()
            .map(|s| self.target.unscale(s))
            .collect())
    }

    /// The model as a plain file (see [`LinearModel::to_bytes`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, ErmError> {
        container::to_bytes(self)
    }

    /// Reads a plain file ([`RegressionModel::to_bytes`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        container::from_bytes(bytes)
    }

    /// Writes the model to `path` as a plain file, atomically (see [`LinearModel::save`]).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ErmError> {
        container::save(self, path)
    }

    /// Reads a plain model file from `path` (see [`LinearModel::load`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ErmError> {
        container::load(path)
    }
}

impl StoredModel for RegressionModel {
    const MODEL_TYPE: &'static str = "dp-erm/linear-regression";
    type Unchecked = RawRegressionModel;

    fn check(unchecked: RawRegressionModel) -> Result<Self, ErmError> {
        Self::try_from(unchecked)
    }

    fn replace_one_guarantee(&self) -> Option<(f64, f64)> {
        self.metadata.mechanism.replace_one_guarantee()
    }
}
