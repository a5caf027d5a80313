//! The released model: weights, metadata, prediction, and a versioned file format.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::estimator::Mechanism;
use crate::{ErmError, Loss, TrainingSet};

/// What a model is and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMetadata {
    /// The mechanism that trained it (with its ε).
    pub mechanism: Mechanism,
    /// The loss.
    pub loss: Loss,
    /// The regularization Λ.
    pub regularization: f64,
    /// Number of features d (the length of the weights).
    pub features: usize,
    /// Identifier of the feature map the rows went through, if any.
    pub feature_map: Option<String>,
    /// Version of dp-erm that trained it.
    pub crate_version: String,
}

/// A linear classifier `x ↦ sign(fᵀx)` with its metadata. Releasing it costs nothing beyond
/// the ε it was trained with: predictions are post-processing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinearModel {
    weights: Vec<f64>,
    metadata: ModelMetadata,
}

/// The first bytes of every model file.
const MAGIC: &[u8; 8] = b"DPERMMDL";
/// The file format this build writes and reads.
pub const MODEL_FORMAT_VERSION: u32 = 1;
/// Magic, version, payload length, checksum.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8;
/// Largest payload read (and the decoder's allocation limit): 256 MiB, 32M weights.
const MAX_PAYLOAD_BYTES: usize = 256 << 20;

impl LinearModel {
    pub(crate) fn new(weights: Vec<f64>, metadata: ModelMetadata) -> Self {
        Self { weights, metadata }
    }

    /// The weights f.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The metadata.
    pub fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    /// The ε it was trained with (None if non-private).
    pub fn epsilon(&self) -> Option<f64> {
        match self.metadata.mechanism {
            Mechanism::NonPrivate => None,
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. } => Some(epsilon),
        }
    }

    /// `fᵀx` for one row (length d, finite).
    pub fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        if x.len() != self.weights.len() {
            return Err(ErmError::DimensionMismatch {
                what: "row",
                expected: self.weights.len(),
                found: x.len(),
            });
        }
        if let Some(col) = x.iter().position(|v| !v.is_finite()) {
            return Err(ErmError::NonFiniteFeature {
                row: 0,
                col,
                value: x[col],
            });
        }
        Ok(self.weights.iter().zip(x).map(|(w, v)| w * v).sum())
    }

    /// The predicted label (+1 when `fᵀx ≥ 0`, else −1).
    pub fn predict(&self, x: &[f64]) -> Result<f64, ErmError> {
        Ok(sign(self.decision_function(x)?))
    }

    /// `fᵀx_i` for every row of `data`.
    pub fn decision_values(&self, data: &TrainingSet) -> Result<Vec<f64>, ErmError> {
        self.check_features(data)?;
        Ok(data.margins(&self.weights))
    }

    /// Fraction of rows of `data` whose predicted label differs from the label.
    pub fn error_rate(&self, data: &TrainingSet) -> Result<f64, ErmError> {
        let mistakes = self.mistakes(data)?;
        Ok(mistakes as f64 / data.len() as f64)
    }

    /// Number of rows of `data` predicted wrongly.
    pub fn mistakes(&self, data: &TrainingSet) -> Result<usize, ErmError> {
        let values = self.decision_values(data)?;
        Ok(values
            .iter()
            .zip(data.labels())
            .filter(|&(&v, &y)| sign(v) != y)
            .count())
    }

    fn check_features(&self, data: &TrainingSet) -> Result<(), ErmError> {
        if data.features() == self.weights.len() {
            Ok(())
        } else {
            Err(ErmError::DimensionMismatch {
                what: "features of the data",
                expected: self.weights.len(),
                found: data.features(),
            })
        }
    }

    /// The model in this crate's file format: magic `DPERMMDL`, format version, payload
    /// length and an FNV-1a checksum, then the model in bincode.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ErmError> {
        let payload = bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|e| ErmError::InvalidModelFile(format!("cannot encode: {e}")))?;
        let mut bytes = Vec::with_capacity(HEADER_BYTES + payload.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&MODEL_FORMAT_VERSION.to_le_bytes());
        bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&fnv1a(&payload).to_le_bytes());
        bytes.extend_from_slice(&payload);
        Ok(bytes)
    }

    /// Reads [`LinearModel::to_bytes`]'s format; a truncated, corrupted or foreign file, or
    /// one from another format version, is an error that says which.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        let invalid = |why: String| Err(ErmError::InvalidModelFile(why));
        if bytes.len() < HEADER_BYTES {
            return invalid(format!(
                "{} bytes is shorter than the {HEADER_BYTES}-byte header",
                bytes.len()
            ));
        }
        if &bytes[..8] != MAGIC {
            return invalid("not a dp-erm model file (wrong magic bytes)".into());
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        if version != MODEL_FORMAT_VERSION {
            return invalid(format!(
                "format version {version} is not supported (this build reads version {MODEL_FORMAT_VERSION})"
            ));
        }
        let length = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
        let checksum = u64::from_le_bytes(bytes[20..28].try_into().expect("8 bytes"));
        let payload = &bytes[HEADER_BYTES..];
        if payload.len() > MAX_PAYLOAD_BYTES {
            return invalid(format!(
                "payload of {} bytes exceeds the {MAX_PAYLOAD_BYTES}-byte limit",
                payload.len()
            ));
        }
        if payload.len() as u64 != length {
            return invalid(format!(
                "payload is {} bytes but the header says {length} (truncated or padded file)",
                payload.len()
            ));
        }
        if fnv1a(payload) != checksum {
            return invalid("checksum mismatch (corrupted file)".into());
        }
        // The limit stops a length prefix from claiming more memory than the file could hold.
        let config = bincode::config::standard().with_limit::<MAX_PAYLOAD_BYTES>();
        let (model, used): (Self, usize) = bincode::serde::decode_from_slice(payload, config)
            .map_err(|e| ErmError::InvalidModelFile(format!("cannot decode: {e}")))?;
        if used != payload.len() {
            return invalid("trailing bytes after the model".into());
        }
        if model.weights.len() != model.metadata.features {
            return invalid(format!(
                "{} weights for {} features",
                model.weights.len(),
                model.metadata.features
            ));
        }
        if model.weights.iter().any(|w| !w.is_finite()) {
            return invalid("non-finite weight".into());
        }
        let metadata = &model.metadata;
        let valid_epsilon = model.epsilon().is_none_or(|e| e.is_finite() && e > 0.0);
        let valid_regularization =
            metadata.regularization.is_finite() && metadata.regularization > 0.0;
        if !valid_epsilon || !valid_regularization || metadata.loss.check().is_err() {
            return invalid(format!(
                "metadata out of range (epsilon {:?}, regularization {}, loss {:?})",
                model.epsilon(),
                metadata.regularization,
                metadata.loss
            ));
        }
        Ok(model)
    }

    /// Writes the model to `path`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ErmError> {
        std::fs::write(path.as_ref(), self.to_bytes()?).map_err(|e| {
            ErmError::InvalidModelFile(format!("cannot write {}: {e}", path.as_ref().display()))
        })
    }

    /// Reads a model from `path`.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ErmError> {
        let bytes = std::fs::read(path.as_ref()).map_err(|e| {
            ErmError::InvalidModelFile(format!("cannot read {}: {e}", path.as_ref().display()))
        })?;
        Self::from_bytes(&bytes)
    }
}

fn sign(value: f64) -> f64 {
    if value >= 0.0 { 1.0 } else { -1.0 }
}

/// 64-bit FNV-1a: detects accidental corruption (not tampering).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
