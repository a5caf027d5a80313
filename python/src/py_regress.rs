//! The regressors' fit (`dpml.LinearRegression`, `Ridge`, `HuberRegressor`) and the model
//! they release (`Regressor`).

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dp_erm::{RegressionModel, TargetScale};

use crate::error::guarded;
use crate::fit::Regularization;
use crate::py_common::{
    Held, detached, interruptible, mechanism, raise, randomness, report, vector,
};
use crate::regress::{
    RegressionSpec, fit_regression, predict_regression, regression_coefficients, transform_of,
};
use crate::rows::RowTransform;

/// Trains a linear regressor (see `dpml.HuberRegressor`).
#[pyfunction]
#[pyo3(signature = (
    x, y, *, csr=None, n_features=None, huber_threshold, target_lower, target_upper,
    clip_targets, mechanism_name, epsilon, delta=0.0, calibration, regularization, tol,
    data_norm, clip_rows, intercept, seed, private_norm_epsilon=None, feature_groups=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_regression_model<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    huber_threshold: f64,
    target_lower: f64,
    target_upper: f64,
    clip_targets: bool,
    mechanism_name: &str,
    epsilon: f64,
    delta: f64,
    calibration: &str,
    regularization: Option<f64>,
    tol: Option<f64>,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    seed: Option<u64>,
    private_norm_epsilon: Option<f64>,
    feature_groups: Option<Vec<usize>>,
) -> PyResult<(Regressor, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = RegressionSpec {
            threshold: huber_threshold,
            mechanism: mechanism(mechanism_name, epsilon, delta, calibration)?,
            regularization: regularization.map_or(Regularization::Rule, Regularization::Fixed),
            tolerance: tol,
            transform: RowTransform {
                norm_bound: data_norm,
                clip: clip_rows,
                intercept,
            }
            .checked()?,
            target: TargetScale::new(target_lower, target_upper)?,
            clip_targets,
            feature_groups,
        };
        let targets = vector::<f64>("y", "float64", y)?.as_array().to_vec();
        Ok((spec, Held::new(x, csr.clone(), n_features)?, targets))
    })
    .map_err(|e| raise(py, e))?;
    let (spec, held, targets) = prepared;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    // Ctrl-C stops the solver between iterations (`interruptible`).
    let (fit, adassp, transform) = interruptible(py, |_| {
        fit_regression(
            rows,
            &targets,
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
    if let Some(c) = adassp {
        let cal = PyDict::new(py);
        cal.set_item("split", "a third of rho each: lambda_min(X'X), X'X, X't")?;
        cal.set_item("rho", c.rho)?;
        cal.set_item("epsilon", c.epsilon)?;
        cal.set_item("sigma_eigenvalue", c.sigma_eigenvalue)?;
        cal.set_item("sigma_gram", c.sigma_gram)?;
        cal.set_item("sigma_moment", c.sigma_moment)?;
        info.set_item("calibration", cal)?;
    }
    let model = fit
        .models
        .into_iter()
        .next()
        .expect("a regressor's fit releases one model");
    Ok((Regressor { inner: model }, info))
}

/// A released regressor, held in Rust; crosses into Python as dp-erm's model file
/// (`RegressionModel`), which the command line and Rust read too.
#[pyclass(name = "Regressor", module = "dpml._dpml", frozen)]
pub struct Regressor {
    inner: RegressionModel,
}

impl Regressor {
    /// Holds a released model.
    pub(crate) fn new(inner: RegressionModel) -> Self {
        Regressor { inner }
    }
}

#[pymethods]
impl Regressor {
    /// Reads a model file (plain, checksummed).
    #[staticmethod]
    fn from_bytes(py: Python<'_>, file: Vec<u8>) -> PyResult<Self> {
        let inner = detached(py, || {
            let model = RegressionModel::from_bytes(&file)?;
            transform_of(&model)?;
            Ok(model)
        })?;
        Ok(Regressor { inner })
    }

    /// Reads a model file from `path` (dp-erm's bounded read, errors name the path).
    #[staticmethod]
    fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let inner = detached(py, || {
            let model = RegressionModel::load(&path)?;
            transform_of(&model)?;
            Ok(model)
        })?;
        Ok(Regressor { inner })
    }

    /// Writes the model to `path` atomically, as dp-erm does.
    fn save(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        detached(py, || Ok(self.inner.save(&path)?))
    }

    /// The model file.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let file = detached(py, || Ok(self.inner.to_bytes()?))?;
        Ok(PyBytes::new(py, &file))
    }

    /// Predictions for every row, in the target's units (a float64 array).
    #[pyo3(signature = (x, *, csr=None, n_features=None))]
    fn predict<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let held = guarded(|| Held::new(x, csr, n_features)).map_err(|e| raise(py, e))?;
        let rows = held.rows().map_err(|e| raise(py, e))?;
        let predictions = detached(py, || predict_regression(&self.inner, rows))?;
        Ok(PyArray1::from_vec(py, predictions).into_any())
    }

    /// `(coef, intercept)` in the input's and the target's units.
    fn coefficients<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, f64)> {
        let (coef, intercept) = regression_coefficients(&self.inner).map_err(|e| raise(py, e))?;
        Ok((PyArray1::from_vec(py, coef).into_any(), intercept))
    }

    /// Public metadata: ε, δ, mechanism, Λ, Huber threshold, features, target bounds, the
    /// noise's groups.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = &self.inner;
        let metadata = m.metadata();
        let d = PyDict::new(py);
        d.set_item("epsilon", m.epsilon())?;
        d.set_item("delta", metadata.mechanism.delta())?;
        d.set_item(
            "mechanism",
            crate::models::mechanism_name(&metadata.mechanism).0,
        )?;
        d.set_item("regularization", metadata.regularization)?;
        d.set_item("loss", metadata.loss.name())?;
        let transform = transform_of(m).map_err(|e| raise(py, e))?;
        d.set_item(
            "features",
            m.input_features() - transform.output_features(0),
        )?;
        d.set_item("target_lower", m.target_scale().lower())?;
        d.set_item("target_upper", m.target_scale().upper())?;
        d.set_item("feature_map", metadata.feature_map.as_deref())?;
        // The number of groups objective perturbation's noise was shaped to (None: spherical).
        d.set_item("noise_groups", metadata.noise_groups)?;
        d.set_item("crate_version", metadata.crate_version.as_str())?;
        Ok(d)
    }
}
