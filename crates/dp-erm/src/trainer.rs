//! The one abstraction for "something that trains" (DESIGN.md): what tuning, private
//! prediction and the audits run, and what linear and kernel estimators implement.

use dp_noise::ReleaseRng;

use crate::{ErmError, ErmParams, Examples, Features, LinearModel};

/// A trained binary classifier: a real score per row, whose sign is the label.
///
/// Implementors provide the score of one row and of a batch; labels and mistake counts
/// follow from them. Scoring is post-processing of whatever was released: it costs no ε.
pub trait Classifier {
    /// The number of features d a row must have.
    fn input_features(&self) -> usize;

    /// The score of one row (length d, finite values); an error on a wrong length, a
    /// non-finite value or a score that overflows.
    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError>;

    /// The score of every row (an error naming the first row whose score overflows).
    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError>;

    /// The label of one row: +1 when its score is ≥ 0, else −1.
    fn predict(&self, x: &[f64]) -> Result<f64, ErmError> {
        Ok(sign(self.decision_function(x)?))
    }

    /// The label of every row.
    fn predictions(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        Ok(self.decision_values(rows)?.into_iter().map(sign).collect())
    }

    /// How many examples of `data` get the wrong label.
    fn mistakes(&self, data: &Examples) -> Result<usize, ErmError> {
        let values = self.decision_values(data.inputs())?;
        Ok(values
            .iter()
            .zip(data.labels())
            .filter(|&(&v, &y)| sign(v) != y)
            .count())
    }
}

/// Something that trains a [`Classifier`] on labelled examples: dp-erm's [`ErmParams`],
/// dp-kernel's estimators, or a user's own.
///
/// # Privacy
///
/// An implementation whose [`Trainer::epsilon`] is `Some(ε)` promises that the model it
/// returns is ε-differentially private with respect to `data`, for datasets that differ in
/// one example (replaced), under the input conditions its own documentation states — and
/// that any error it returns depends on `data` only through what that documentation says
/// (dp-erm's refusals depend on the shapes and the parameters alone). Tuning and private
/// prediction compose these promises; they cannot check them. `None` means no guarantee:
/// such trainers are for subsample-and-aggregate (whose aggregation adds the privacy) and
/// non-private baselines.
pub trait Trainer {
    /// What training produces.
    type Model: Classifier;
    /// What training can fail with.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The ε one call to [`Trainer::train`] spends, or `None` if it is not private.
    fn epsilon(&self) -> Option<f64>;

    /// Trains on `data` with randomness from `rng`.
    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<Self::Model, Self::Error>;
}

impl Classifier for LinearModel {
    fn input_features(&self) -> usize {
        self.weights().len()
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        LinearModel::decision_function(self, x)
    }

    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        rows.scores(self.weights())
    }
}

/// Trains through [`ErmParams::fit`] (see its `# Privacy`): the examples must satisfy the
/// unit-ball contract, checked by [`Examples::to_training_set`] — a row of norm above 1 is
/// an error naming it, never clipped.
impl Trainer for ErmParams {
    type Model = LinearModel;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        self.mechanism().epsilon()
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<LinearModel, ErmError> {
        // Parameter refusals first, before the data are copied.
        self.check()?;
        self.fit(&data.to_training_set()?, rng)
            .map(|fit| fit.into_model())
    }
}

fn sign(value: f64) -> f64 {
    if value >= 0.0 { 1.0 } else { -1.0 }
}
