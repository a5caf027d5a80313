//! Multiclass classification by one-vs-rest, with the privacy budget split across classes.

use dp_noise::PrivacyBudget;
use dp_noise::ReleaseRng;
use dp_noise::rounding::add_rounding_up;

use crate::mechanism::Mechanism;
use crate::{
    Classifier, ErmError, ErmParams, Examples, Features, LinearModel, Trainer, TrainingSet,
};

/// Most classes one-vs-rest accepts (K fits, each with ε/K): the one limit of every
/// one-vs-rest path of the workspace ([`OneVsRest::check_class_count`]).
pub const MAX_CLASSES: usize = 1 << 16;

/// K binary classifiers "class k against the rest"; a row is assigned the class whose
/// classifier gives the largest decision value. The models are dp-erm's linear ones
/// ([`OneVsRest::fit`]) or those of any [`Trainer`] ([`OneVsRest::fit_trainer`]).
///
/// # Privacy
/// Every person appears in all K binary problems, so the K fits compose **sequentially**:
/// each is trained with `ε_k = ε/K` (the largest share such that K of them, summed with
/// rounding up, stay within ε), and the K models together are ε-DP. Predictions are
/// post-processing. A non-private `params` gives K non-private models.
#[derive(Debug, Clone, PartialEq)]
pub struct OneVsRest<M = LinearModel> {
    models: Vec<M>,
    epsilon: Option<f64>,
    delta: f64,
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
        check_classes(rows.len(), classes, class_count)?;
        let (per_class, epsilon) = match params.mechanism() {
            Mechanism::NonPrivate
            | Mechanism::GaussianOutputPerturbation { .. }
            | Mechanism::GaussianObjectivePerturbation { .. }
            | Mechanism::DpSgd { .. }
            | Mechanism::DpSgdAddRemove { .. }
            | Mechanism::AdaSsp { .. } => (params.clone(), None),
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. } => {
                let share = Self::epsilon_per_class(epsilon, class_count)?;
                (params.clone().with_epsilon(share), Some(epsilon))
            }
        };
        // Every fit's parameter refusals happen now, before the first of K fits runs.
        per_class.noise_calibration(rows.len(), rows.features())?;
        let models = fit_each(classes, class_count, rng, |labels, rng| {
            Ok::<_, ErmError>(per_class.fit(&rows.relabel(labels)?, rng)?.into_model())
        })?;
        Ok(Self {
            models,
            epsilon,
            delta: 0.0,
        })
    }

    /// The ε each of K one-vs-rest fits may spend for the K together to spend at most
    /// `epsilon` (sequential composition, sums rounded up): the share [`OneVsRest::fit`]
    /// trains each class with, and the one to give [`OneVsRest::fit_trainer`]'s trainer.
    /// Refusals name K: a share too small is [`ErmError::PerClass`].
    pub fn epsilon_per_class(epsilon: f64, class_count: usize) -> Result<f64, ErmError> {
        Self::check_class_count(class_count)?;
        crate::error::check_epsilon(epsilon)?;
        // class_count ≤ MAX_CLASSES < 2^32.
        PrivacyBudget::new(epsilon)?
            .even_share(class_count as u32)
            .ok_or_else(|| ErmError::PerClass {
                classes: class_count,
                error: Box::new(ErmError::InvalidParameter {
                    what: "epsilon",
                    value: epsilon,
                    requirement: "large enough that epsilon/K is a positive double",
                }),
            })
    }

    /// The δ each of K one-vs-rest fits may spend for the K together to spend at most
    /// `delta` (basic composition): `δ/K` rounded down (fl(δ/K) is within half an ulp of
    /// δ/K, so the next double down is at most δ/K). Refuses a δ outside
    /// `(0, `[`MAX_DELTA`](crate::MAX_DELTA)`]` and a share that rounds to 0, naming K.
    pub fn delta_per_class(delta: f64, class_count: usize) -> Result<f64, ErmError> {
        Self::check_class_count(class_count)?;
        let delta = crate::gaussian::check_delta(delta)?;
        let share = (delta / class_count as f64).next_down();
        if share > 0.0 {
            Ok(share)
        } else {
            Err(ErmError::PerClass {
                classes: class_count,
                error: Box::new(ErmError::InvalidParameter {
                    what: "delta",
                    value: delta,
                    requirement: "large enough that delta/K is a positive double",
                }),
            })
        }
    }

    /// The trainer of each of K one-vs-rest fits of a total (ε, δ): `build` called with the
    /// shares ([`Self::epsilon_per_class`], and [`Self::delta_per_class`] for δ > 0; 0 for
    /// a pure-ε budget). Refuses K outside `2..=`[`MAX_CLASSES`] before anything else, and
    /// wraps what `build` refuses at the shares in [`ErmError::PerClass`], so that a
    /// calibration failing at ε/K (DP-SGD's noise multiplier, a Gaussian σ beyond
    /// precision) names K, where it comes from.
    pub fn trainer_per_class<T>(
        epsilon: f64,
        delta: f64,
        class_count: usize,
        build: impl FnOnce(f64, f64) -> Result<T, ErmError>,
    ) -> Result<T, ErmError> {
        let epsilon_share = Self::epsilon_per_class(epsilon, class_count)?;
        let delta_share = if delta == 0.0 {
            0.0
        } else {
            Self::delta_per_class(delta, class_count)?
        };
        build(epsilon_share, delta_share).map_err(|error| ErmError::PerClass {
            classes: class_count,
            error: Box::new(error),
        })
    }

    /// Refuses a number of classes outside `2..=`[`MAX_CLASSES`], naming it: every
    /// one-vs-rest path (linear, Gaussian, DP-SGD, kernel) checks this before any work.
    pub fn check_class_count(class_count: usize) -> Result<(), ErmError> {
        if (2..=MAX_CLASSES).contains(&class_count) {
            Ok(())
        } else {
            Err(class_count_error(class_count))
        }
    }
}

impl<M: Classifier> OneVsRest<M> {
    /// Trains K = `class_count` models with `trainer`, model k on `examples` relabelled
    /// +1 for `classes[i] == k` and −1 otherwise (their own ±1 labels are ignored), in the
    /// order k = 0, 1, …, K−1, all drawing from `rng`. Before any of them runs, the class
    /// labels, [`Trainer::check_shape`] and [`Trainer::check_inputs`] (on all of
    /// `examples`) are checked: what they refuse is refused up front, never after some
    /// models were trained.
    ///
    /// # Privacy
    /// The K fits compose sequentially: with `trainer` (ε_k, δ_k)-DP, the K models together
    /// are (K·ε_k, K·δ_k)-DP, which [`OneVsRest::epsilon`] and [`OneVsRest::delta`] report
    /// (sums rounded up). `trainer` is each fit's: for a total ε, give it
    /// [`OneVsRest::epsilon_per_class`]'s share. A trainer whose ε is `None` gives K models
    /// with no guarantee.
    pub fn fit_trainer<T>(
        trainer: &T,
        examples: &Examples,
        classes: &[usize],
        class_count: usize,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Self, T::Error>
    where
        T: Trainer<Model = M>,
        T::Error: From<ErmError>,
    {
        check_classes(examples.len(), classes, class_count)?;
        trainer.check_shape(examples.len(), examples.features())?;
        trainer.check_inputs(examples)?;
        let models = fit_each(classes, class_count, rng, |labels, rng| {
            let relabelled = Examples::new(examples.inputs().clone(), labels)?;
            trainer.train(&relabelled, rng)
        })?;
        let total = |each: f64| (1..class_count).fold(each, |sum, _| add_rounding_up(sum, each));
        Ok(Self {
            models,
            epsilon: trainer.epsilon().map(total),
            delta: total(trainer.delta()),
        })
    }

    /// The K binary models, class k at index k.
    pub fn models(&self) -> &[M] {
        &self.models
    }

    /// The total ε of the K models together (None if non-private).
    pub fn epsilon(&self) -> Option<f64> {
        self.epsilon
    }

    /// The total δ of the K models together: 0 for pure-ε trainers (and always from
    /// [`OneVsRest::fit`]).
    pub fn delta(&self) -> f64 {
        self.delta
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

    /// The predicted class of every row (as [`OneVsRest::predict`]: the first class of
    /// largest score).
    pub fn predictions(&self, rows: &Features) -> Result<Vec<usize>, ErmError> {
        let values = self
            .models
            .iter()
            .map(|m| m.decision_values(rows))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(argmax_per_row(&values, rows.len()))
    }
}

impl OneVsRest {
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
        let wrong = argmax_per_row(&values, rows.len())
            .into_iter()
            .zip(classes)
            .filter(|&(predicted, &class)| predicted != class)
            .count();
        Ok(wrong as f64 / rows.len() as f64)
    }
}

/// Row by row, the first k of largest `values[k][i]`.
fn argmax_per_row(values: &[Vec<f64>], rows: usize) -> Vec<usize> {
    (0..rows)
        .map(|i| {
            (0..values.len()).fold(0, |best, k| {
                if values[k][i] > values[best][i] {
                    k
                } else {
                    best
                }
            })
        })
        .collect()
}

/// `2 ≤ class_count ≤ MAX_CLASSES`, one class label per row, each below `class_count`.
fn check_classes(rows: usize, classes: &[usize], class_count: usize) -> Result<(), ErmError> {
    OneVsRest::check_class_count(class_count)?;
    if classes.len() != rows {
        return Err(ErmError::DimensionMismatch {
            what: "class labels",
            expected: rows,
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
    Ok(())
}

fn class_count_error(class_count: usize) -> ErmError {
    ErmError::InvalidCount {
        what: "class count",
        value: class_count,
        requirement: "between 2 and MAX_CLASSES = 65536 (one model per class, each at epsilon/K)",
    }
}

/// The K one-vs-rest fits, class 0 first, each given its ±1 labels and the one generator.
fn fit_each<M, E, R: ?Sized>(
    classes: &[usize],
    class_count: usize,
    rng: &mut R,
    mut fit: impl FnMut(Vec<f64>, &mut R) -> Result<M, E>,
) -> Result<Vec<M>, E> {
    (0..class_count)
        .map(|k| {
            let labels = classes
                .iter()
                .map(|&c| if c == k { 1.0 } else { -1.0 })
                .collect();
            fit(labels, rng)
        })
        .collect()
}

#[cfg(test)]
#[path = "multiclass_tests.rs"]
mod tests;
