//! Multiclass classification by one-vs-rest, with the privacy budget split across classes.

use dp_noise::PrivacyBudget;
use dp_noise::ReleaseRng;

use crate::mechanism::Mechanism;
use crate::{ErmError, ErmParams, LinearModel, TrainingSet};

/// Most classes one-vs-rest accepts (K fits, each with ε/K).
pub const MAX_CLASSES: usize = 1 << 16;

/// K binary classifiers "class k against the rest"; a row is assigned the class whose
/// classifier gives the largest decision value.
///
/// # Privacy
/// Every person appears in all K binary problems, so the K fits compose **sequentially**:
/// each is trained with `ε_k = ε/K` (the largest share such that K of them, summed with
/// rounding up, stay within ε), and the K models together are ε-DP. Predictions are
/// post-processing. A non-private `params` gives K non-private models.
#[derive(Debug, Clone, PartialEq)]
pub struct OneVsRest {
    models: Vec<LinearModel>,
    epsilon: Option<f64>,
}

impl OneVsRest {
    /// Trains on the rows of `rows` (their ±1 labels are ignored) with class labels
    /// `classes[i] ∈ 0..class_count`, `class_count ≥ 2`.
    pub fn fit<R: ReleaseRng + ?Sized>(
        params: &ErmParams,
        rows: &TrainingSet,
        classes: &[usize],
        class_count: usize,
        rng: &mut R,
    ) -> Result<Self, ErmError> {
        params.check()?;
        if !(2..=MAX_CLASSES).contains(&class_count) {
            return Err(ErmError::InvalidCount {
                what: "class count",
                value: class_count,
                requirement: "between 2 and 65536",
            });
        }
        if classes.len() != rows.len() {
            return Err(ErmError::DimensionMismatch {
                what: "class labels",
                expected: rows.len(),
                found: classes.len(),
            });
        }
        if let Some(row) = classes.iter().position(|&c| c >= class_count) {
            return Err(ErmError::InvalidClass {
                row,
                class: classes[row],
                class_count,
            });
        }
        let (per_class, epsilon) = match params.mechanism() {
            Mechanism::NonPrivate
            | Mechanism::GaussianOutputPerturbation { .. }
            | Mechanism::GaussianObjectivePerturbation { .. }
            | Mechanism::DpSgd { .. }
            | Mechanism::DpSgdAddRemove { .. } => (params.clone(), None),
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. } => {
                // class_count ≤ MAX_CLASSES < 2^32.
                let classes = class_count as u32;
                let share = PrivacyBudget::new(epsilon)?.even_share(classes).ok_or(
                    ErmError::InvalidParameter {
                        what: "epsilon",
                        value: epsilon,
                        requirement: "large enough to split across the classes",
                    },
                )?;
                (params.clone().with_epsilon(share), Some(epsilon))
            }
        };
        // Every fit's parameter refusals happen now, before the first of K fits runs.
        per_class.noise_calibration(rows.len(), rows.features())?;
        let models = (0..class_count)
            .map(|k| {
                let labels = classes
                    .iter()
                    .map(|&c| if c == k { 1.0 } else { -1.0 })
                    .collect();
                Ok(per_class.fit(&rows.relabel(labels)?, rng)?.into_model())
            })
            .collect::<Result<Vec<_>, ErmError>>()?;
        Ok(Self { models, epsilon })
    }

    /// The K binary models, class k at index k.
    pub fn models(&self) -> &[LinearModel] {
        &self.models
    }

    /// The total ε of the K models together (None if non-private).
    pub fn epsilon(&self) -> Option<f64> {
        self.epsilon
    }

    /// The predicted class of one row.
    pub fn predict(&self, x: &[f64]) -> Result<usize, ErmError> {
        let mut best = (0, f64::NEG_INFINITY);
        for (k, model) in self.models.iter().enumerate() {
            let value = model.decision_function(x)?;
            if value > best.1 {
                best = (k, value);
            }
        }
        Ok(best.0)
    }

    /// Fraction of rows whose predicted class differs from `classes`. Refuses what
    /// [`OneVsRest::fit`] refuses: a number of class labels other than the rows', and a
    /// class label outside `0..K` (K the number of models).
    pub fn error_rate(&self, rows: &TrainingSet, classes: &[usize]) -> Result<f64, ErmError> {
        if classes.len() != rows.len() {
            return Err(ErmError::DimensionMismatch {
                what: "class labels",
                expected: rows.len(),
                found: classes.len(),
            });
        }
        let class_count = self.models.len();
        if let Some(row) = classes.iter().position(|&c| c >= class_count) {
            return Err(ErmError::InvalidClass {
                row,
                class: classes[row],
                class_count,
            });
        }
        let values = self
            .models
            .iter()
            .map(|m| m.training_scores(rows))
            .collect::<Result<Vec<_>, _>>()?;
        let wrong = (0..rows.len())
            .filter(|&i| {
                let predicted = (0..values.len()).fold(0, |best, k| {
                    if values[k][i] > values[best][i] {
                        k
                    } else {
                        best
                    }
                });
                predicted != classes[i]
            })
            .count();
        Ok(wrong as f64 / rows.len() as f64)
    }
}

#[cfg(test)]
#[path = "multiclass_tests.rs"]
mod tests;
