//! The estimators' fits (`dpml.LogisticRegression`, `HuberSVC`, `DPSGDClassifier`,
//! `RandomFeaturesSVC`), the models they release (`Models`) and the utility outlook.

use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::error::{CoreError, guarded};
use crate::fit::{
    LinearSpec, MapSpec, Regularization, SgdSpec, fit_kernel, fit_linear_bounded,
    fit_sgd_interruptible,
};
use dp_fit::sgd::SgdOptions;
use dp_fit::spec::Neighbouring;

use crate::models::Models;
use crate::py_common::{
    Held, class_indices, detached, interruptible, loss, mechanism, raise, randomness, report,
};
use crate::rows::RowTransform;

/// Trains a linear classifier (see `dpml.LogisticRegression` and `dpml.HuberSVC`).
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, loss_name, huber_width, mechanism_name,
    epsilon, delta=0.0, calibration, regularization, feature_groups, tol, data_norm, clip_rows,
    intercept, seed, private_norm_epsilon=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_linear_model<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_classes: usize,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    loss_name: &str,
    huber_width: f64,
    mechanism_name: &str,
    epsilon: f64,
    delta: f64,
    calibration: &str,
    regularization: Option<f64>,
    feature_groups: Option<Vec<usize>>,
    tol: Option<f64>,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    seed: Option<u64>,
    private_norm_epsilon: Option<f64>,
) -> PyResult<(Models, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = LinearSpec {
            loss: loss(loss_name, huber_width)?,
            mechanism: mechanism(mechanism_name, epsilon, delta, calibration)?,
            regularization: regularization.map_or(Regularization::Rule, Regularization::Fixed),
            feature_groups: feature_groups.clone(),
            tolerance: tol,
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
    let (spec, held, classes) = prepared;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    // Ctrl-C stops the solver between iterations (`interruptible`).
    let (fit, transform) = interruptible(py, |_| {
        fit_linear_bounded(
            rows,
            &classes,
            n_classes,
            &spec,
            private_norm_epsilon,
            randomness(seed),
        )
    })?;
    let info = report(py, &fit)?;
    if private_norm_epsilon.is_some() {
        // The released bound: a privatized fact, part of the release.
        info.set_item("data_norm", transform.norm_bound)?;
    }
    Ok((
        Models::linear(fit.models, transform).map_err(|e| raise(py, e))?,
        info,
    ))
}

/// `(norm ε, fit ε)`: how dp-fit shares a fit's ε with a privately released row-norm bound
/// (`data_norm="private"`).
#[pyfunction]
pub(crate) fn private_norm_split(epsilon: f64) -> (f64, f64) {
    let split = dp_fit::private_norm::NormSplit::of(epsilon);
    (split.norm_epsilon, split.fit_epsilon)
}

/// Trains a linear classifier by DP-SGD (see `dpml.DPSGDClassifier`).
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, loss_name, huber_width, epsilon, delta,
    batch_size, epochs, learning_rate, clip_norm, regularization, average_iterates, data_norm,
    intercept, seed, rule=false, add_remove_rows=None, accountant="pld",
    private_norm_epsilon=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_sgd_model<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_classes: usize,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    loss_name: &str,
    huber_width: f64,
    epsilon: f64,
    delta: f64,
    batch_size: usize,
    epochs: f64,
    learning_rate: f64,
    clip_norm: f64,
    regularization: f64,
    average_iterates: bool,
    data_norm: f64,
    intercept: Option<f64>,
    seed: Option<u64>,
    rule: bool,
    add_remove_rows: Option<usize>,
    accountant: &str,
    private_norm_epsilon: Option<f64>,
) -> PyResult<(Models, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = SgdSpec {
            epsilon,
            delta,
            options: SgdOptions {
                loss: loss(loss_name, huber_width)?,
                batch_size,
                epochs,
                learning_rate,
                clip_norm,
                regularization,
                average_iterates,
                rule,
                neighbouring: match add_remove_rows {
                    Some(_) => Neighbouring::AddRemove,
                    None => Neighbouring::ReplaceOne,
                },
                public_rows: add_remove_rows,
                accountant: dp_fit::spec::parse_accountant(accountant).map_err(|problem| {
                    CoreError::Value {
                        what: "accountant".into(),
                        problem,
                    }
                })?,
            },
            transform: RowTransform {
                norm_bound: data_norm,
                clip: false,
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
    let (spec, held, classes) = prepared;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    // Ctrl-C stops it between steps (a fit of minutes on large data).
    let (fit, transform) = interruptible(py, |interrupted| {
        fit_sgd_interruptible(
            rows,
            &classes,
            n_classes,
            &spec,
            private_norm_epsilon,
            randomness(seed),
            interrupted,
        )
    })?;
    let info = report(py, &fit)?;
    if private_norm_epsilon.is_some() {
        // The released bound: a privatized fact, part of the release.
        info.set_item("data_norm", transform.norm_bound)?;
    }
    Ok((
        Models::linear(fit.models, transform).map_err(|e| raise(py, e))?,
        info,
    ))
}

/// Trains a random-features kernel classifier (see `dpml.RandomFeaturesSVC`).
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, loss_name, huber_width, mechanism_name,
    epsilon, calibration, regularization, tol, kernel, gamma, n_components, sampling, seed
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_kernel_model<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_classes: usize,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    loss_name: &str,
    huber_width: f64,
    mechanism_name: &str,
    epsilon: f64,
    calibration: &str,
    regularization: Option<f64>,
    tol: Option<f64>,
    kernel: &str,
    gamma: f64,
    n_components: usize,
    sampling: &str,
    seed: Option<u64>,
) -> PyResult<(Models, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = LinearSpec {
            loss: loss(loss_name, huber_width)?,
            mechanism: mechanism(mechanism_name, epsilon, 0.0, calibration)?,
            regularization: regularization.map_or(Regularization::Rule, Regularization::Fixed),
            feature_groups: None,
            tolerance: tol,
            transform: RowTransform {
                norm_bound: 1.0,
                clip: false,
                intercept: None,
            },
        };
        let map = MapSpec::named(kernel, gamma, sampling, n_components)?;
        Ok((
            spec,
            map,
            Held::new(x, csr.clone(), n_features)?,
            class_indices(y)?,
        ))
    })
    .map_err(|e| raise(py, e))?;
    let (spec, map, held, classes) = prepared;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    // Ctrl-C stops the solver between iterations (`interruptible`).
    let fit = interruptible(py, |_| {
        fit_kernel(rows, &classes, n_classes, &spec, &map, randomness(seed))
    })?;
    let info = report(py, &fit)?;
    Ok((Models::kernel(fit.models), info))
}

/// The released models of one estimator, held in Rust; crosses into Python as the project's
/// model files (`to_bytes`, `save`), which dp-erm and dp-kernel read too.
#[pyclass(name = "Models", module = "dpml._dpml", frozen)]
pub struct PyModels {
    inner: Models,
}

impl<'py> IntoPyObject<'py> for Models {
    type Target = PyModels;
    type Output = Bound<'py, PyModels>;
    type Error = PyErr;

    fn into_pyobject(self, py: Python<'py>) -> Result<Self::Output, Self::Error> {
        Bound::new(py, PyModels { inner: self })
    }
}

#[pymethods]
impl PyModels {
    /// Reads model files (`kind` 'linear' or 'kernel'), one per binary model.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, kind: &str, files: Vec<Vec<u8>>) -> PyResult<Self> {
        let inner = detached(py, || Models::from_files(kind, &files))?;
        Ok(PyModels { inner })
    }

    /// Reads one model file from `path` (dp-erm's bounded read, errors name the path).
    #[staticmethod]
    fn load(py: Python<'_>, kind: &str, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = detached(py, || Models::load(kind, &path))?;
        Ok(PyModels { inner })
    }

    /// Writes the (single, binary) model to `path` atomically, as dp-erm or dp-kernel do.
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        detached(py, || self.inner.save(&path))
    }

    /// The model files, one per binary model.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let files = detached(py, || self.inner.to_files())?;
        Ok(files.iter().map(|f| PyBytes::new(py, f)).collect())
    }

    /// Scores of every row: an `n × K` float64 array (K = 1 for a binary model).
    #[pyo3(signature = (x, *, csr=None, n_features=None))]
    fn decision<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held = guarded(|| Held::new(x, csr, n_features)).map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let n = rows.len();
        let k = self.inner.len();
        let scores = detached(py, || self.inner.decision(rows))?;
        Ok(PyArray1::from_vec(py, scores).reshape([n, k])?.into_any())
    }

    /// `(coef, intercept)` in the input's units (linear models): `K × d` and `K` arrays
    /// with `score = coef·x + intercept`.
    fn coefficients<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let (coef, intercept, d) = self.inner.coefficients().map_err(|e| raise(py, e))?;
        let k = intercept.len();
        Ok((
            PyArray1::from_vec(py, coef).reshape([k, d])?.into_any(),
            PyArray1::from_vec(py, intercept).into_any(),
        ))
    }

    /// Public metadata: kind, ε, mechanism, loss, Λ, features, transform, version.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let info = self.inner.info();
        let d = PyDict::new(py);
        d.set_item("kind", info.kind)?;
        d.set_item("models", info.models)?;
        d.set_item("epsilon_per_model", info.epsilon_per_model)?;
        d.set_item("delta_per_model", info.delta_per_model)?;
        d.set_item("mechanism", info.mechanism)?;
        d.set_item("calibration", info.calibration)?;
        d.set_item("loss", info.loss)?;
        d.set_item("huber_width", info.huber_width)?;
        d.set_item("regularization", info.regularization)?;
        d.set_item("features", info.features)?;
        d.set_item("noise_groups", info.noise_groups)?;
        d.set_item("feature_map", info.feature_map)?;
        d.set_item("crate_version", info.crate_version)?;
        if let Some(sgd) = info.sgd {
            d.set_item("noise_multiplier", sgd.noise_multiplier)?;
            d.set_item("sampling_rate", sgd.sampling_rate)?;
            d.set_item("steps", sgd.steps)?;
            d.set_item("clip_norm", sgd.clip_norm)?;
            let relation = match sgd.expected_batch {
                Some(_) => dp_fit::spec::Neighbouring::AddRemove,
                None => dp_fit::spec::Neighbouring::ReplaceOne,
            };
            d.set_item("neighbouring", relation.name())?;
            d.set_item("expected_batch", sgd.expected_batch)?;
            d.set_item("accountant", sgd.accountant.name())?;
        }
        Ok(d)
    }

    /// Number of binary models (1, or one per class).
    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// The expected batch of `DPSGDClassifier(batch_size="auto")` on the schedule's public
/// `rows` (dp-fit's `auto_batch_size`: 256, or n below 256 rows).
#[pyfunction]
pub(crate) fn sgd_auto_batch_size(rows: usize) -> usize {
    dp_fit::sgd::auto_batch_size(rows)
}

/// What a private linear model can be expected to reach from the public n, d and ε alone
/// (dp-erm's `RegularizationRule::outlook`; no data read): `d/(nε)` and the two warnings.
#[pyfunction]
pub(crate) fn utility_outlook<'py>(
    py: Python<'py>,
    rows: usize,
    features: usize,
    epsilon: f64,
) -> PyResult<Bound<'py, PyDict>> {
    let outlook = guarded(|| {
        Ok(dp_erm::RegularizationRule::outlook(
            rows, features, epsilon,
        )?)
    })
    .map_err(|e| raise(py, e))?;
    let d = PyDict::new(py);
    d.set_item("noise_ratio", outlook.noise_ratio)?;
    d.set_item("at_risk", outlook.at_risk)?;
    d.set_item("near_chance", outlook.near_chance)?;
    d.set_item("warning", outlook.warning())?;
    Ok(d)
}
