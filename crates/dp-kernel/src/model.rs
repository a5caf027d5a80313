//! The released kernel classifier: its feature map and the weights on the mapped rows.

use std::path::Path;

use dp_erm::{
    Classifier, ErmError, Features, LinearModel, ModelKey, ModelPurpose, Probabilities,
    StoredModel, container,
};
use faer::Mat;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::FeatureMap;
use crate::map::RawFeatureMap;
use crate::mapping::BLOCK_ROWS;

/// A kernel classifier `x ↦ sign(f̃ᵀv(x))`: the feature map v and the linear model f̃
/// trained on mapped rows. Everything in it is released (the map is data-independent);
/// predictions are post-processing and cost no ε.
///
/// Stored in dp-erm's model container (`dp_erm::container`, model type
/// `"dp-kernel/random-features"`): the same header, checksum or HMAC, size limits and
/// validation of every field as a `LinearModel` file, plus the map's (finite frequencies,
/// phases in [−π, π], D × d frequencies, D weights).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawKernelModel")]
pub struct KernelModel {
    map: FeatureMap,
    linear: LinearModel,
}

impl KernelModel {
    pub(crate) fn new(map: FeatureMap, linear: LinearModel) -> Self {
        Self { map, linear }
    }

    /// The feature map.
    pub fn map(&self) -> &FeatureMap {
        &self.map
    }

    /// The linear model on mapped rows (its metadata names the map).
    pub fn linear(&self) -> &LinearModel {
        &self.linear
    }

    /// The ε it was trained with (None if non-private; from a plain file, a claim).
    pub fn epsilon(&self) -> Option<f64> {
        self.linear.epsilon()
    }

    /// `f̃ᵀv(x)` for one raw row (d finite values).
    pub fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        self.linear.decision_function(&self.map.map_row(x)?)
    }

    /// The label of one raw row: +1 when its score is ≥ 0, else −1.
    pub fn predict(&self, x: &[f64]) -> Result<f64, ErmError> {
        Classifier::predict(self, x)
    }

    /// The score of every row, mapped block by block in parallel (memory: a block of
    /// 256 × D values per thread, never the whole mapped batch).
    pub fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        rows.check_dimension(self.map.input_features(), "features of the rows")?;
        let weights = self.linear.weights();
        let blocks: Vec<Vec<f64>> = (0..rows.len().div_ceil(BLOCK_ROWS))
            .into_par_iter()
            .map(|b| {
                let start = b * BLOCK_ROWS;
                let len = BLOCK_ROWS.min(rows.len() - start);
                let mut mapped = Mat::<f64>::zeros(len, weights.len());
                self.map.map_block(rows, start, mapped.as_mut());
                (0..len)
                    .map(|i| {
                        weights
                            .iter()
                            .enumerate()
                            .map(|(j, w)| w * mapped[(i, j)])
                            .sum()
                    })
                    .collect()
            })
            .collect();
        let values: Vec<f64> = blocks.into_iter().flatten().collect();
        match values.iter().position(|v| !v.is_finite()) {
            Some(row) => Err(ErmError::DecisionOverflow { row }),
            None => Ok(values),
        }
    }

    /// The model as a plain file (SHA-256: catches corruption, not tampering).
    pub fn to_bytes(&self) -> Result<Vec<u8>, ErmError> {
        container::to_bytes(self)
    }

    /// Reads a plain file; a corrupted, truncated, foreign or linear-model file is an error
    /// saying which.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        container::from_bytes(bytes)
    }

    /// The model as an authenticated file (HMAC-SHA256 under `key`), bound to `purpose`
    /// as a `LinearModel` file is (see [`ModelPurpose`]).
    pub fn to_bytes_authenticated(
        &self,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Vec<u8>, ErmError> {
        container::to_bytes_authenticated(self, key, purpose)
    }

    /// Reads an authenticated file, refusing it unless its tag verifies under `key`, it
    /// was written for `purpose`, and its model meets `purpose`'s privacy demand.
    pub fn from_bytes_authenticated(
        bytes: &[u8],
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Self, ErmError> {
        container::from_bytes_authenticated(bytes, key, purpose)
    }

    /// Writes the model to `path` as a plain file, atomically.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ErmError> {
        container::save(self, path)
    }

    /// Reads a plain model file (size-bounded before reading; errors name the path).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ErmError> {
        container::load(path)
    }
}

impl Classifier for KernelModel {
    fn input_features(&self) -> usize {
        self.map.input_features()
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        KernelModel::decision_function(self, x)
    }

    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        KernelModel::decision_values(self, rows)
    }
}

/// `P(y = +1 | x)` for kernel logistic regression (the sigmoid of the score); a kernel
/// Huber SVM answers [`ErmError::NoProbabilities`].
impl Probabilities for KernelModel {
    fn trained_loss(&self) -> dp_erm::Loss {
        self.linear.metadata().loss
    }
}

impl StoredModel for KernelModel {
    const MODEL_TYPE: &'static str = "dp-kernel/random-features";
    type Unchecked = RawKernelModel;

    fn check(unchecked: RawKernelModel) -> Result<Self, ErmError> {
        Self::try_from(unchecked)
    }

    fn replace_one_guarantee(&self) -> Option<(f64, f64)> {
        self.linear.replace_one_guarantee()
    }
}

/// [`KernelModel`] as it arrives from a deserializer. Public only to serve as
/// `StoredModel::Unchecked`; its module is private, so it cannot be named or built outside.
#[derive(Deserialize)]
pub struct RawKernelModel {
    map: RawFeatureMap,
    linear: LinearModel,
}

impl TryFrom<RawKernelModel> for KernelModel {
    type Error = ErmError;

    fn try_from(raw: RawKernelModel) -> Result<Self, ErmError> {
        let map = FeatureMap::try_from(raw.map)
            .map_err(|e| ErmError::InvalidModelFile(format!("feature map: {e}")))?;
        if raw.linear.weights().len() != map.output_features() {
            return Err(ErmError::InvalidModelFile(format!(
                "the linear model has {} weights but the feature map has {} features",
                raw.linear.weights().len(),
                map.output_features()
            )));
        }
        // A fit records the map's identifier in the linear model: a file pairing a map with
        // another map's model (spliced, or edited) is refused.
        let id = map.id();
        if raw.linear.metadata().feature_map.as_deref() != Some(id.as_str()) {
            return Err(ErmError::InvalidModelFile(format!(
                "the linear model was trained on feature map {:?}, not on this file's map {id:?}",
                raw.linear.metadata().feature_map
            )));
        }
        Ok(Self {
            map,
            linear: raw.linear,
        })
    }
}
