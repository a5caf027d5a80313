//! The two model files `dpml` writes and reads: dp-erm's linear model and dp-kernel's
//! random-features model, both in dp-erm's container (the same files the libraries and the
//! Python package read).

use std::path::Path;

use dp_erm::{Features, LinearModel, ModelMetadata, RegressionModel};
use dp_kernel::KernelModel;

use crate::{Failure, fail};

/// A released model.
pub enum Model {
    /// Weights on the schema's encoded features.
    Linear(LinearModel),
    /// A random-features map of the encoded features and weights on the mapped ones.
    Kernel(KernelModel),
    /// A linear regressor on the schema's encoded features, with its public target bounds.
    Regression(RegressionModel),
}

impl Model {
    /// Reads either kind of file (by the container's model type).
    pub fn load(path: &Path) -> Result<Self, Failure> {
        let bytes = crate::input::read_bounded(path, MAX_MODEL_FILE_BYTES, "a model file")?;
        match LinearModel::from_bytes(&bytes) {
            Ok(m) => Ok(Model::Linear(m)),
            Err(linear) => match (
                KernelModel::from_bytes(&bytes),
                RegressionModel::from_bytes(&bytes),
            ) {
                (Ok(m), _) => Ok(Model::Kernel(m)),
                (_, Ok(m)) => Ok(Model::Regression(m)),
                // The linear reader's complaint names what the file is instead.
                _ => Err(fail(format!("{}: {linear}", path.display()))),
            },
        }
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, Failure> {
        match self {
            Model::Linear(m) => m.to_bytes(),
            Model::Kernel(m) => m.to_bytes(),
            Model::Regression(m) => m.to_bytes(),
        }
        .map_err(|e| fail(format!("cannot encode the model: {e}")))
    }

    /// The linear part's metadata (for a kernel model, the model on the mapped features).
    pub fn metadata(&self) -> &ModelMetadata {
        match self {
            Model::Linear(m) => m.metadata(),
            Model::Kernel(m) => m.linear().metadata(),
            Model::Regression(m) => m.metadata(),
        }
    }

    /// The ε the file claims.
    pub fn epsilon(&self) -> Option<f64> {
        self.metadata().mechanism.epsilon()
    }

    /// How many encoded features a row must have.
    pub fn input_features(&self) -> usize {
        match self {
            Model::Linear(m) => m.weights().len(),
            Model::Kernel(m) => m.map().input_features(),
            Model::Regression(m) => m.input_features(),
        }
    }

    /// The score of every row (sparse encoded rows of `d` features).
    pub fn scores(&self, d: usize, rows: Vec<Vec<(usize, f64)>>) -> Result<Vec<f64>, Failure> {
        let x =
            Features::sparse(d, rows).map_err(|e| fail(format!("cannot score the rows: {e}")))?;
        match self {
            Model::Linear(m) => x.scores(m.weights()),
            Model::Kernel(m) => m.decision_values(&x),
            // A regressor's "score" is its prediction, in the target's units.
            Model::Regression(m) => m.predictions(&x),
        }
        .map_err(|e| fail(format!("cannot score the rows: {e}")))
    }
}

/// Largest model file read: dp-erm's container bounds what it parses; this bounds what is
/// read into memory before (a kernel model of the largest map is 128 MiB of frequencies).
const MAX_MODEL_FILE_BYTES: u64 = 1 << 30;
