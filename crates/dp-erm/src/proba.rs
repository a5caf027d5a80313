//! Class probabilities of models trained with the logistic loss (see [`Probabilities`]).

use rayon::prelude::*;

use crate::{Classifier, ErmError, Features, Loss};

/// Batches at least this large are mapped in parallel (the scores already are).
const PARALLEL_ROWS: usize = 4096;

/// The largest double below 1: where `σ(s)` rounds to 1 (s ≳ 37), this is returned instead.
const BELOW_ONE: f64 = 1.0 - f64::EPSILON / 2.0;

/// `σ(s) = 1/(1 + e^{−s})`, computed without overflow on either side and kept inside the
/// open interval (0, 1): where the exact value rounds to 0 or 1, the nearest double inside
/// is returned ([`f64::MIN_POSITIVE`] or `1 − 2⁻⁵³`).
///
/// The result is ≥ 0.5 exactly when `s ≥ 0` or `s` is a negative score within about 1e-16
/// of 0, where it is 0.5: `p > 0.5` implies label +1 and `p < 0.5` implies label −1; at
/// `p = 0.5` the label is the sign rule's (+1 for `s ≥ 0`).
pub fn logistic_probability(score: f64) -> f64 {
    let p = if score >= 0.0 {
        1.0 / (1.0 + (-score).exp())
    } else {
        let e = score.exp();
        e / (1.0 + e)
    };
    p.clamp(f64::MIN_POSITIVE, BELOW_ONE)
}

/// A [`Classifier`] that knows the loss it was trained with, and so whether its scores are
/// log-odds. Implemented by [`crate::LinearModel`] and dp-kernel's `KernelModel`.
///
/// Logistic regression models `P(y = +1 | x) = σ(fᵀx)`, `σ(s) = 1/(1 + e^{−s})`, so its
/// score turns into a probability; a Huber SVM's score has no such reading, and asking for
/// one is an error ([`ErmError::NoProbabilities`]) rather than a number that looks like one.
/// Like scoring, this is post-processing of the released model: it costs no ε.
///
/// The names follow scikit-learn where the existing API allows (its batch methods take the
/// names the one-row methods have here):
///
/// | scikit-learn | one row (`&[f64]`) | a batch ([`Features`], parallel when large) |
/// |---|---|---|
/// | `decision_function` | [`Classifier::decision_function`] | [`Classifier::decision_values`] |
/// | `predict` | [`Classifier::predict`] | [`Classifier::predictions`] |
/// | `predict_proba` (the column of class +1) | [`Probabilities::predict_proba`] | [`Probabilities::probabilities`] |
///
/// Every method checks the row dimension and that every value is finite (a batch is
/// checked when its [`Features`] is built), and refuses a score that overflows.
pub trait Probabilities: Classifier {
    /// The loss the model was trained with.
    fn trained_loss(&self) -> Loss;

    /// `P(y = +1 | x)` for one row (length d, finite values), in (0, 1) — see
    /// [`logistic_probability`] for the rounding at the ends and the tie rule. An error
    /// for a model not trained with the logistic loss, before the row is looked at.
    fn predict_proba(&self, x: &[f64]) -> Result<f64, ErmError> {
        check_logistic(self.trained_loss())?;
        Ok(logistic_probability(self.decision_function(x)?))
    }

    /// `P(y = +1 | x)` for every row, in parallel for large batches; errors as
    /// [`Probabilities::predict_proba`], plus a wrong row dimension.
    fn probabilities(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        check_logistic(self.trained_loss())?;
        let mut scores = self.decision_values(rows)?;
        if scores.len() >= PARALLEL_ROWS {
            scores
                .par_iter_mut()
                .for_each(|s| *s = logistic_probability(*s));
        } else {
            scores
                .iter_mut()
                .for_each(|s| *s = logistic_probability(*s));
        }
        Ok(scores)
    }
}

fn check_logistic(loss: Loss) -> Result<(), ErmError> {
    match loss {
        Loss::Logistic => Ok(()),
        Loss::Huber { .. } | Loss::HuberRegression { .. } => {
            Err(ErmError::NoProbabilities { loss: loss.name() })
        }
    }
}

impl Probabilities for crate::LinearModel {
    fn trained_loss(&self) -> Loss {
        self.metadata().loss
    }
}
