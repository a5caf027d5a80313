//! The one abstraction for "something that trains": what tuning, private
//! prediction and the audits run, and what linear and kernel estimators implement.

use dp_noise::{Neighbouring, RdpCurve, ReleaseRng};

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
/// An implementation whose [`Trainer::epsilon`] is `Some(ε)` (and [`Trainer::delta`] δ,
/// 0 unless it says otherwise) promises that the model it returns is (ε, δ)-differentially
/// private — ε-DP when δ = 0 — with respect to `data`, for datasets that differ in
/// one example (replaced), under the input conditions its own documentation states — and
/// that any error it returns depends on `data` only through what that documentation says.
/// Tuning and private prediction compose these promises; they cannot check them. `None`
/// means no guarantee: such trainers are for subsample-and-aggregate (whose aggregation adds
/// the privacy) and non-private baselines.
///
/// **Refusals before composition.** A composed mechanism (a selection, an ensemble) calls
/// [`Trainer::check_shape`] for every training part's size and [`Trainer::check_inputs`] on
/// the whole dataset before it charges a budget, draws randomness or trains: whatever those
/// refuse is refused up front, to the data's owner, and cannot happen half-way through.
/// For dp-erm's trainers nothing else is refused but [`ErmError::NotConverged`], which
/// carries no numbers (see [`ErmParams`], "Refusals").
///
/// **A model depends on its own data only.** Compositions rely on `train(data, rng)`
/// depending on nothing but `data`, `rng` and parameters fixed before any data was seen:
/// subsample-and-aggregate and split-and-select need a model to change only when its own
/// part changes. Parameters computed from the data break this, even ones that only steer a
/// computation: a solver's end point depends, within its tolerance, on where it starts, so
/// with a warm start taken from the whole dataset every part's model moves a little when one
/// row changes, and a query placed on the models' decision boundaries can see every vote
/// change instead of one. [`ErmParams`] therefore refuses a warm start through this trait.
pub trait Trainer {
    /// What training produces.
    type Model: Classifier;
    /// What training can fail with.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The ε one call to [`Trainer::train`] spends, or `None` if it is not private.
    fn epsilon(&self) -> Option<f64>;

    /// The δ one call to [`Trainer::train`] spends beside [`Trainer::epsilon`]: 0 (the
    /// default) for an ε-DP trainer; above 0 for an (ε, δ)-DP one such as
    /// [`crate::GaussianErm`]. A composition that accounts pure ε only must refuse a trainer
    /// whose δ is not 0.
    fn delta(&self) -> f64 {
        0.0
    }

    /// An upper bound on the Rényi divergence of one call to [`Trainer::train`] at each of
    /// `orders`, for replace-one neighbours (the trait's relation), or `None` where the
    /// trainer knows none — then compositions that account by RDP (dp-tune's random
    /// stopping with (ε, δ) candidates) must refuse it. An (ε, δ) pair with δ > 0 bounds no
    /// Rényi divergence, so a trainer has a curve only if its mechanism does.
    ///
    /// The default is the curve every ε-DP mechanism has, `min(ε, λε²/2)`
    /// ([`RdpCurve::pure`]), for a trainer with δ = 0 and an ε; `None` otherwise.
    fn rdp_curve(&self, orders: &[f64]) -> Option<RdpCurve> {
        match self.epsilon() {
            Some(epsilon) if self.delta() == 0.0 => {
                RdpCurve::pure(epsilon, Neighbouring::ReplaceOne, orders).ok()
            }
            _ => None,
        }
    }

    /// Trains on `data` with randomness from `rng`.
    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<Self::Model, Self::Error>;

    /// Every refusal [`Trainer::train`] would make on `rows` examples of `features`
    /// features because of its parameters, decided from those public sizes alone. The
    /// default accepts every shape.
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), Self::Error> {
        let _ = (rows, features);
        Ok(())
    }

    /// Every refusal [`Trainer::train`] would make because some example of `data` breaks
    /// the trainer's input contract, checked on every row; the error may name the row (it
    /// goes to whoever holds the data, before anything is released). Training on any
    /// subset of examples that pass cannot fail for that reason. The default has no
    /// contract.
    fn check_inputs(&self, data: &Examples) -> Result<(), Self::Error> {
        let _ = data;
        Ok(())
    }
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
        self.check_shape(data.len(), data.features())?;
        self.fit(&data.to_training_set()?, rng)
            .map(|fit| fit.into_model())
    }

    /// [`ErmParams::noise_calibration`]'s refusals, and a warm start
    /// ([`ErmParams::check_composable`]).
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        self.check_composable()?;
        self.noise_calibration(rows, features).map(drop)
    }

    /// Rows in the unit ball, and within the group-norm bound with
    /// [`ErmParams::group_noise`].
    fn check_inputs(&self, data: &Examples) -> Result<(), ErmError> {
        data.check_unit_ball()?;
        match self.noise_groups() {
            Some(groups) => data.check_group_norms(groups),
            None => Ok(()),
        }
    }
}

fn sign(value: f64) -> f64 {
    if value >= 0.0 { 1.0 } else { -1.0 }
}
