//! `dpml._dpml.Predictor`: the Rust side of `dpml.predict` (dp-predict's interfaces).

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use dp_erm::TargetScale;
use dp_predict::VoteKind;
use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::{CoreError, guarded};
use crate::predict::{
    Aggregation, EnsembleSpec, Predictor, RegressionMethod, RegressionPredictorSpec,
    train_ensemble, train_regression, train_walk,
};
use crate::py_common::{Held, class_indices, detached, loss, raise, randomness, vector};
use crate::rows::RowTransform;

fn slot(seconds: Option<f64>) -> Result<Option<Duration>, CoreError> {
    seconds
        .map(|s| {
            Duration::try_from_secs_f64(s).map_err(|_| {
                CoreError::value(
                    "slot",
                    format!("= {s}; it must be a finite, non-negative number of seconds"),
                )
            })
        })
        .transpose()
}

/// A private-prediction mechanism behind its budget. Not picklable and not copyable: a
/// copy would hold a second budget over the same training data. Calls from several
/// threads take turns (the budget and the generator are one).
#[pyclass(name = "Predictor", module = "dpml._dpml", frozen)]
pub struct PyPredictor {
    inner: Mutex<Predictor>,
}

impl PyPredictor {
    fn new(inner: Predictor) -> Self {
        PyPredictor {
            inner: Mutex::new(inner),
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Predictor>, CoreError> {
        self.inner.lock().map_err(|_| {
            CoreError::Panic("an earlier answer panicked: the predictor is unusable".into())
        })
    }
}

#[pymethods]
impl PyPredictor {
    /// Subsample-and-aggregate over non-private linear models on `n_parts` disjoint parts.
    #[staticmethod]
    #[pyo3(signature = (
        x, y, *, csr=None, n_features=None, n_parts, loss_name, huber_width, regularization,
        aggregation, epsilon_per_query, total_epsilon, slot_seconds, data_norm, clip_rows,
        intercept, seed
    ))]
    #[allow(clippy::too_many_arguments)]
    fn ensemble<'py>(
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
        n_parts: usize,
        loss_name: &str,
        huber_width: f64,
        regularization: Option<f64>,
        aggregation: &str,
        epsilon_per_query: f64,
        total_epsilon: f64,
        slot_seconds: Option<f64>,
        data_norm: f64,
        clip_rows: bool,
        intercept: Option<f64>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let (spec, held, classes) = guarded(|| {
            let aggregation = match aggregation {
                "soft-majority" => Aggregation::SoftMajority,
                "laplace-hard" => Aggregation::LaplaceAverage(VoteKind::Hard),
                "laplace-sigmoid" => Aggregation::LaplaceAverage(VoteKind::Sigmoid),
                other => {
                    return Err(CoreError::value(
                        "aggregation",
                        format!(
                            "= {other:?}; expected 'soft-majority', 'laplace-hard' or \
                             'laplace-sigmoid'"
                        ),
                    ));
                }
            };
            let spec = EnsembleSpec {
                parts: n_parts,
                loss: loss(loss_name, huber_width)?,
                regularization,
                aggregation,
                epsilon_per_query,
                total_epsilon,
                slot: slot(slot_seconds)?,
                transform: RowTransform {
                    norm_bound: data_norm,
                    clip: clip_rows,
                    intercept,
                }
                .checked()?,
            };
            Ok((
                spec,
                Held::new(x, csr.clone(), n_features)?,
                class_indices(y)?,
            ))
        })
        .map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let inner = detached(py, || {
            train_ensemble(rows, &classes, &spec, randomness(seed))
        })?;
        Ok(PyPredictor::new(inner))
    }

    /// A regression predictor: `method` "stable" (stable regularized ERM with Laplace on
    /// each prediction), "mean" or "median" (subsample-and-aggregate over `n_parts`
    /// non-private regressors). `regularization` None: dp-predict's balanced λ (stable) or
    /// 1/⌊n/k⌋ (the parts).
    #[staticmethod]
    #[pyo3(signature = (
        x, y, *, csr=None, n_features=None, method, n_parts, regularization, huber_threshold,
        target_lower, target_upper, clip_targets, epsilon_per_query, total_epsilon,
        slot_seconds, data_norm, clip_rows, intercept, seed
    ))]
    #[allow(clippy::too_many_arguments)]
    fn regression<'py>(
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        y: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
        method: &str,
        n_parts: Option<usize>,
        regularization: Option<f64>,
        huber_threshold: f64,
        target_lower: f64,
        target_upper: f64,
        clip_targets: bool,
        epsilon_per_query: f64,
        total_epsilon: f64,
        slot_seconds: Option<f64>,
        data_norm: f64,
        clip_rows: bool,
        intercept: Option<f64>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let (spec, held, targets) = guarded(|| {
            let parts = || {
                n_parts.ok_or_else(|| {
                    CoreError::value("n_parts", "is required for subsample-and-aggregate")
                })
            };
            let method = match method {
                "stable" => RegressionMethod::Stable { regularization },
                "mean" | "median" => RegressionMethod::Ensemble {
                    parts: parts()?,
                    regularization,
                    median: method == "median",
                },
                other => {
                    return Err(CoreError::value(
                        "method",
                        format!("= {other:?}; expected 'stable', 'mean' or 'median'"),
                    ));
                }
            };
            let spec = RegressionPredictorSpec {
                method,
                threshold: huber_threshold,
                epsilon_per_query,
                total_epsilon,
                slot: slot(slot_seconds)?,
                transform: RowTransform {
                    norm_bound: data_norm,
                    clip: clip_rows,
                    intercept,
                }
                .checked()?,
                target: TargetScale::new(target_lower, target_upper)?,
                clip_targets,
            };
            let targets = vector::<f64>("y", "float64", y)?.as_array().to_vec();
            Ok((spec, Held::new(x, csr.clone(), n_features)?, targets))
        })
        .map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let inner = detached(py, || {
            train_regression(rows, &targets, &spec, randomness(seed))
        })?;
        Ok(PyPredictor::new(inner))
    }

    /// The exponential projected walk over labelled `points` of a line.
    #[staticmethod]
    #[pyo3(signature = (
        points, positive, *, epsilon_per_query, alpha, total_epsilon, slot_seconds, seed
    ))]
    #[allow(clippy::too_many_arguments)]
    fn walk<'py>(
        py: Python<'py>,
        points: &Bound<'py, PyAny>,
        positive: Vec<bool>,
        epsilon_per_query: f64,
        alpha: f64,
        total_epsilon: f64,
        slot_seconds: Option<f64>,
        seed: Option<u64>,
    ) -> PyResult<Self> {
        let (points, slot) =
            guarded(|| Ok((vector::<f64>("X", "float64", points)?, slot(slot_seconds)?)))
                .map_err(|e| raise(py, e))?;
        let values = points
            .as_slice()
            .map_err(|_| raise(py, CoreError::type_error("X", "must be contiguous")))?;
        let inner = detached(py, || {
            train_walk(
                values,
                positive,
                epsilon_per_query,
                alpha,
                total_epsilon,
                slot,
                randomness(seed),
            )
        })?;
        Ok(PyPredictor::new(inner))
    }

    /// One answer per row: `(positive, probability)` arrays (probability NaN where the
    /// mechanism releases none). Charged `q·ε` together, refused whole before any work.
    #[pyo3(signature = (x, *, csr=None, n_features=None))]
    fn answer<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let held = guarded(|| Held::new(x, csr, n_features)).map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let answers = detached(py, || self.lock()?.answer(rows))?;
        let positive: Vec<bool> = answers.iter().map(|a| a.positive).collect();
        let probability: Vec<f64> = answers
            .iter()
            .map(|a| a.probability.unwrap_or(f64::NAN))
            .collect();
        Ok((
            PyArray1::from_vec(py, positive).into_any(),
            PyArray1::from_vec(py, probability).into_any(),
        ))
    }

    /// One real value per row, in the target's units (regression predictors). Charged
    /// `q·ε` together, refused whole before any work.
    #[pyo3(signature = (x, *, csr=None, n_features=None))]
    fn answer_values<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held = guarded(|| Held::new(x, csr, n_features)).map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let values = detached(py, || self.lock()?.answer_values(rows))?;
        Ok(PyArray1::from_vec(py, values).into_any())
    }

    /// The budget: `limit`, `spent`, `remaining`, `queries_left`, `epsilon_per_query`,
    /// `overruns` (serving interfaces).
    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.lock().map_err(|e| raise(py, e))?.status();
        let d = PyDict::new(py);
        d.set_item("limit", s.limit)?;
        d.set_item("spent", s.spent)?;
        d.set_item("remaining", s.remaining)?;
        d.set_item("queries_left", s.queries_left)?;
        d.set_item("epsilon_per_query", s.epsilon_per_query)?;
        d.set_item("overruns", s.overruns)?;
        Ok(d)
    }

    /// Input features of a query.
    #[getter]
    fn features(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock().map_err(|e| raise(py, e))?.features())
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPredictor>()
}
