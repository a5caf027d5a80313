//! The released model: weights, metadata, prediction, and a versioned file format.
//!
//! - [`validate`]: the one check every route to a [`LinearModel`] runs (file loaders and any
//!   serde deserializer alike).
//! - [`format`]: the byte layout, with a SHA-256 checksum (plain files) or an HMAC-SHA256
//!   tag (authenticated files).
//! - [`key`]: [`ModelKey`], the secret key of authenticated files.
//! - [`purpose`]: [`ModelPurpose`], the use an authenticated file is bound to.
//! - [`file`]: size-bounded reads and atomic writes.

mod file;
mod format;
mod key;
mod purpose;
mod regression;
mod validate;

pub(crate) use validate::check_text;

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::mechanism::Mechanism;
use crate::{ErmError, Loss, TrainingSet};

use format::Seal;
pub use format::{MODEL_FORMAT_VERSION, StoredModel};
pub use key::ModelKey;
pub use purpose::ModelPurpose;
pub use regression::{RegressionModel, TargetScale};

/// The one model container, for any [`StoredModel`]: the
/// layout, guarantees and limits documented on [`LinearModel`] ("Files"), with the model
/// type's name checked on reading. Other crates' models (dp-kernel's) are stored through it.
pub mod container {
    use std::path::Path;

    use super::{ModelKey, ModelPurpose, Seal, StoredModel, file, format};
    use crate::ErmError;

    pub use super::format::MAX_PAYLOAD_BYTES;

    /// `model` as a plain file (SHA-256 checksum: catches corruption, not tampering).
    pub fn to_bytes<M: StoredModel>(model: &M) -> Result<Vec<u8>, ErmError> {
        format::encode(model, Seal::Checksum)
    }

    /// Reads a plain file holding a model of type `M`.
    pub fn from_bytes<M: StoredModel>(bytes: &[u8]) -> Result<M, ErmError> {
        format::decode(bytes, Seal::Checksum)
    }

    /// `model` as an authenticated file (HMAC-SHA256 under `key`) bound to `purpose`;
    /// refused if `purpose` demands more privacy than the model has.
    pub fn to_bytes_authenticated<M: StoredModel>(
        model: &M,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Vec<u8>, ErmError> {
        format::encode(model, Seal::Mac(key, purpose))
    }

    /// Reads an authenticated file holding a model of type `M`, refusing it unless its tag
    /// verifies under `key`, it was written for `purpose`, and its model meets `purpose`'s
    /// privacy demand.
    pub fn from_bytes_authenticated<M: StoredModel>(
        bytes: &[u8],
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<M, ErmError> {
        format::decode(bytes, Seal::Mac(key, purpose))
    }

    /// **Legacy, for migration only**: reads an authenticated file of format version 4,
    /// which binds no purpose — any model signed with `key` passes, whatever it was
    /// written for. Read a file you trust once and save it again with
    /// [`save_authenticated`] and a [`ModelPurpose`]; version-5 files are refused here.
    pub fn from_bytes_authenticated_unbound_v4<M: StoredModel>(
        bytes: &[u8],
        key: &ModelKey,
    ) -> Result<M, ErmError> {
        format::decode(bytes, Seal::UnboundMac(key))
    }

    /// **Legacy, for migration only**: [`from_bytes_authenticated_unbound_v4`] on a file,
    /// with [`load`]'s size bound.
    pub fn load_authenticated_unbound_v4<M: StoredModel>(
        path: impl AsRef<Path>,
        key: &ModelKey,
    ) -> Result<M, ErmError> {
        let path = path.as_ref();
        let bytes = file::read_bounded(path, format::MAX_FILE_BYTES)?;
        from_bytes_authenticated_unbound_v4(&bytes, key).map_err(|e| file::name_path(path, e))
    }

    /// Writes `model` to `path` as a plain file, atomically: a failed save leaves any
    /// previous file intact. `path` must be a new name or a regular file, which is
    /// replaced; a folder, a symbolic link (never followed or replaced: save to its target
    /// instead) or any other special file is refused before anything is written.
    pub fn save<M: StoredModel>(model: &M, path: impl AsRef<Path>) -> Result<(), ErmError> {
        let path = path.as_ref();
        file::check_destination(path)?;
        file::write_atomically(path, &to_bytes(model)?)
    }

    /// Reads a plain model file, refusing files larger than the largest model before
    /// reading them; errors name the path.
    pub fn load<M: StoredModel>(path: impl AsRef<Path>) -> Result<M, ErmError> {
        let path = path.as_ref();
        let bytes = file::read_bounded(path, format::MAX_FILE_BYTES)?;
        from_bytes(&bytes).map_err(|e| file::name_path(path, e))
    }

    /// Writes `model` to `path` as an authenticated file under `key` bound to `purpose`,
    /// atomically, with [`save`]'s rules for `path`.
    pub fn save_authenticated<M: StoredModel>(
        model: &M,
        path: impl AsRef<Path>,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<(), ErmError> {
        let path = path.as_ref();
        file::check_destination(path)?;
        file::write_atomically(path, &to_bytes_authenticated(model, key, purpose)?)
    }

    /// Reads an authenticated model file written for `purpose` (see [`load`] and
    /// [`from_bytes_authenticated`]).
    pub fn load_authenticated<M: StoredModel>(
        path: impl AsRef<Path>,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<M, ErmError> {
        let path = path.as_ref();
        let bytes = file::read_bounded(path, format::MAX_FILE_BYTES)?;
        from_bytes_authenticated(&bytes, key, purpose).map_err(|e| file::name_path(path, e))
    }
}

impl StoredModel for LinearModel {
    const MODEL_TYPE: &'static str = "dp-erm/linear";
    type Unchecked = validate::RawLinearModel;

    fn check(unchecked: Self::Unchecked) -> Result<Self, ErmError> {
        Self::try_from(unchecked)
    }

    fn replace_one_guarantee(&self) -> Option<(f64, f64)> {
        self.metadata().mechanism.replace_one_guarantee()
    }
}

/// The most features (weights) a model may have: 2²⁵, a 256 MiB payload. Files and
/// deserialized models above it are refused, which bounds what a loader allocates.
pub const MAX_MODEL_FEATURES: usize = 1 << 25;

/// The longest `crate_version` or `feature_map` accepted, in bytes. Both are short
/// identifiers; a longer one is a corrupted or hostile file, not a model this crate wrote.
pub const MAX_MODEL_TEXT_BYTES: usize = 256;

/// What a model is and how it was made.
///
/// Deserializing it (through any serde format) checks every field as the file loaders do:
/// ε and Λ finite and > 0, a valid loss, `1 ≤ features ≤ MAX_MODEL_FEATURES` (2²⁵),
/// `noise_groups` only for objective perturbation and between 1 and `features`, and
/// non-empty printable strings of at most `MAX_MODEL_TEXT_BYTES` (256) bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "validate::RawModelMetadata")]
pub struct ModelMetadata {
    /// The mechanism that trained it (with its ε).
    pub mechanism: Mechanism,
    /// The loss.
    pub loss: Loss,
    /// The regularization Λ.
    pub regularization: f64,
    /// Number of features d (the length of the weights).
    pub features: usize,
    /// The number of feature groups objective perturbation's noise was shaped to
    /// ([`crate::ErmParams::group_noise`]: density `∝ exp(−β‖b‖_G)`, same ε); `None` for
    /// the Euclidean noise (density `∝ exp(−β‖b‖₂)`) or no noise at all.
    pub noise_groups: Option<usize>,
    /// Identifier of the feature map the rows went through, if any.
    pub feature_map: Option<String>,
    /// Version of dp-erm that trained it.
    pub crate_version: String,
}

/// A linear classifier `x ↦ sign(fᵀx)` with its metadata. Releasing it costs nothing beyond
/// the ε it was trained with: predictions are post-processing.
///
/// Deserializing it through serde (JSON, bincode, …) runs the same validation as the file
/// loaders: as many finite weights as declared features, and valid [`ModelMetadata`].
///
/// # Files
///
/// Two kinds of file share one layout (all integers little-endian):
///
/// | bytes | field |
/// |---|---|
/// | 0..8 | magic: `DPERMMDL` (plain) or `DPERMMAC` (authenticated) |
/// | 8..12 | format version, u32 ([`MODEL_FORMAT_VERSION`]) |
/// | 12..20 | payload length n, u64 |
/// | 20..52 | tag over bytes 0..20 followed by the payload: SHA-256 (plain) or HMAC-SHA256 under a `ModelKey` (authenticated) |
/// | 52..52+n | payload: the model type's name (`"dp-erm/linear"`), in authenticated files the [`ModelPurpose`]'s name, then the model, in bincode (standard configuration: strings length-prefixed) |
///
/// The tag covers the magic, so a file's kind cannot be switched without recomputing it;
/// each loader refuses the other kind with a message that names it. Plain files of format
/// version 4 (the same layout) are still read.
///
/// **What a plain file promises.** Its SHA-256 checksum detects accidental corruption
/// (a flipped bit, a truncated copy). It does **not** detect tampering: anyone can edit the
/// file — for example relabel a non-private model as trained with ε = 0.01 — and recompute
/// the checksum. A plain file's mechanism and ε are claims, not evidence.
///
/// **What an authenticated file promises.** Its HMAC-SHA256 tag shows that the file was
/// written, byte for byte, by a holder of the key, for the [`ModelPurpose`] the loader
/// names: without the key no one can alter it or forge a new one, and a file written for
/// another purpose under the same key (a test model, a non-private baseline) is refused.
/// It says nothing about whether the writer told the truth — a key holder can authenticate
/// any model with any metadata. Trust the metadata exactly as far as you trust everyone
/// who holds the key; to refuse non-private models even from them, load with
/// [`ModelPurpose::require_private`]. Authenticated files of format version 4 bind no
/// purpose and are refused, except by the legacy reader
/// [`container::load_authenticated_unbound_v4`], meant for reading a trusted file once to
/// save it again with a purpose.
///
/// Every loader refuses files above the size of the largest model
/// (`MAX_MODEL_FEATURES` = 2²⁵ weights) before reading them, and validates the decoded model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "validate::RawLinearModel")]
pub struct LinearModel {
    weights: Vec<f64>,
    metadata: ModelMetadata,
}

impl LinearModel {
    // Infallible because every caller (the estimator) builds models from checked parameters
    // and data; the file writers do not re-check, the readers always do.
    pub(crate) fn new(weights: Vec<f64>, metadata: ModelMetadata) -> Self {
        Self { weights, metadata }
    }

    /// The weights f.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    pub(crate) fn into_parts(self) -> (Vec<f64>, ModelMetadata) {
        (self.weights, self.metadata)
    }

    /// The metadata.
    pub fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    /// The same model recording that its rows went through the feature map `id` (a public
    /// transform applied before training and scoring, e.g. a scaling and an intercept
    /// column): a label for loaders, so post-processing. `id` must be a non-empty printable
    /// string of at most `MAX_MODEL_TEXT_BYTES` bytes, as every loader checks.
    pub fn with_feature_map(mut self, id: &str) -> Result<Self, ErmError> {
        validate::check_text("feature_map", id)?;
        self.metadata.feature_map = Some(id.to_owned());
        Ok(self)
    }

    /// The ε it was trained with (None if non-private). From a plain file this is the
    /// file's claim; see [`LinearModel`]'s "Files" section.
    pub fn epsilon(&self) -> Option<f64> {
        self.metadata.mechanism.epsilon()
    }

    /// `fᵀx` for one row (length d, finite).
    pub fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        crate::check_row(x, self.weights.len())?;
        let value: f64 = self.weights.iter().zip(x).map(|(w, v)| w * v).sum();
        // An overflow (∞, or ∞ − ∞ = NaN) has no sign to report: say so rather than guess.
        if value.is_finite() {
            Ok(value)
        } else {
            Err(ErmError::DecisionOverflow { row: 0 })
        }
    }

    /// The predicted label (+1 when `fᵀx ≥ 0`, else −1); an error, never a guessed label,
    /// when `fᵀx` overflows.
    pub fn predict(&self, x: &[f64]) -> Result<f64, ErmError> {
        Ok(sign(self.decision_function(x)?))
    }

    /// `fᵀx_i` for every row of a training set (an error naming the first row whose value
    /// overflows). For unlabelled rows see [`crate::Classifier::decision_values`].
    pub fn training_scores(&self, data: &TrainingSet) -> Result<Vec<f64>, ErmError> {
        self.check_features(data)?;
        let values = data.margins(&self.weights);
        match values.iter().position(|v| !v.is_finite()) {
            Some(row) => Err(ErmError::DecisionOverflow { row }),
            None => Ok(values),
        }
    }

    /// Fraction of rows of `data` whose predicted label differs from the label.
    pub fn error_rate(&self, data: &TrainingSet) -> Result<f64, ErmError> {
        let mistakes = self.mistakes(data)?;
        Ok(mistakes as f64 / data.len() as f64)
    }

    /// Number of rows of `data` predicted wrongly.
    pub fn mistakes(&self, data: &TrainingSet) -> Result<usize, ErmError> {
        let values = self.training_scores(data)?;
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

    /// The model as a **plain** file (magic `DPERMMDL`, SHA-256 checksum): protected against
    /// accidental corruption, not against tampering. See [`LinearModel`]'s "Files" section.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ErmError> {
        container::to_bytes(self)
    }

    /// Reads a plain file ([`LinearModel::to_bytes`]); a truncated, corrupted, foreign or
    /// authenticated file, one from another format version, or an invalid model is an error
    /// that says which.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ErmError> {
        container::from_bytes(bytes)
    }

    /// The model as an **authenticated** file (magic `DPERMMAC`, HMAC-SHA256 under `key`)
    /// bound to `purpose`: only holders of `key` can write a file that
    /// [`LinearModel::from_bytes_authenticated`] accepts for that purpose. Refused if
    /// `purpose` demands more privacy than the model has.
    pub fn to_bytes_authenticated(
        &self,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Vec<u8>, ErmError> {
        container::to_bytes_authenticated(self, key, purpose)
    }

    /// Reads an authenticated file, refusing it unless its tag verifies under `key`
    /// (compared in constant time), it was written for `purpose` (the error names the
    /// purpose asked for, not the file's), and its model meets `purpose`'s privacy demand —
    /// and refusing plain files, whose contents anyone could have written.
    pub fn from_bytes_authenticated(
        bytes: &[u8],
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Self, ErmError> {
        container::from_bytes_authenticated(bytes, key, purpose)
    }

    /// Writes the model to `path` as a plain file, atomically: the bytes go to a temporary
    /// file in the same folder, which then replaces `path`, so a failed save leaves any
    /// previous file at `path` intact. `path` must be a new name or a regular file (which
    /// is replaced). A folder, a symbolic link or another special file at `path` is refused
    /// before anything is written: a link is neither followed nor replaced, since either
    /// would surprise someone (its target's old model staying in place, or a file
    /// elsewhere changing) — save to the link's target instead.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ErmError> {
        container::save(self, path)
    }

    /// Reads a plain model file from `path` (see [`LinearModel::from_bytes`]). A file larger
    /// than the largest model is refused before it is read; errors name the path.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ErmError> {
        container::load(path)
    }

    /// Writes the model to `path` as an authenticated file under `key` bound to `purpose`,
    /// atomically, with [`LinearModel::save`]'s rules for `path`.
    pub fn save_authenticated(
        &self,
        path: impl AsRef<Path>,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<(), ErmError> {
        container::save_authenticated(self, path, key, purpose)
    }

    /// Reads an authenticated model file from `path` written for `purpose` (see
    /// [`LinearModel::from_bytes_authenticated`]), with [`LinearModel::load`]'s size bound.
    pub fn load_authenticated(
        path: impl AsRef<Path>,
        key: &ModelKey,
        purpose: &ModelPurpose,
    ) -> Result<Self, ErmError> {
        container::load_authenticated(path, key, purpose)
    }
}

fn sign(value: f64) -> f64 {
    if value >= 0.0 { 1.0 } else { -1.0 }
}
