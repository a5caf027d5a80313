//! The Python module `dpml._dpml`: arrays read in place, the GIL released while Rust works,
//! every error raised as a `dpml` exception, no panic unwinding into Python.

use dp_erm::{Loss, ObjectiveCalibration};
use dp_kernel::{Kernel, Sampling};
use numpy::{
    PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

use crate::error::{CoreError, guarded};
use crate::fit::{
    FitReport, LinearSpec, MapSpec, MechanismSpec, Randomness, Regularization, SgdSpec, fit_kernel,
    fit_linear, fit_sgd,
};
use crate::models::Models;
use crate::rows::{Ints, RowTransform, Rows};

/// The `dpml` exception of `e`'s class (from `dpml/_errors.py`), with the Rust message.
pub(crate) fn raise(py: Python<'_>, e: CoreError) -> PyErr {
    let message = e.to_string();
    let class = py
        .import("dpml._errors")
        .and_then(|m| m.getattr(e.class_name()))
        .ok()
        .and_then(|c| c.cast_into::<PyType>().ok());
    match class {
        Some(class) => PyErr::from_type(class, message),
        None => PyValueError::new_err(message),
    }
}

/// Runs `f` without the GIL and with panics caught, on this process's own rayon pool.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    py.detach(|| guarded(|| in_this_process(f)))
        .map_err(|e| raise(py, e))
}

/// The process that imported the module.
static IMPORTING_PROCESS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// A pool for a forked child (its pid with it).
static CHILD_POOL: std::sync::Mutex<Option<(u32, std::sync::Arc<rayon::ThreadPool>)>> =
    std::sync::Mutex::new(None);

/// Runs `f` in the importing process as it is, and in a child forked from it (a
/// `multiprocessing` fork pool) on a rayon pool of the child's own: fork copies the global
/// pool's state but not its threads, so work sent to it would wait forever.
fn in_this_process<T: Send>(
    f: impl FnOnce() -> Result<T, CoreError> + Send,
) -> Result<T, CoreError> {
    let pid = std::process::id();
    if IMPORTING_PROCESS.get().is_none_or(|&first| first == pid) {
        return f();
    }
    let pool = {
        let mut slot = CHILD_POOL.lock().unwrap_or_else(|p| p.into_inner());
        match slot.as_ref() {
            Some((owner, pool)) if *owner == pid => std::sync::Arc::clone(pool),
            _ => {
                let pool = rayon::ThreadPoolBuilder::new().build().map_err(|e| {
                    CoreError::Panic(format!("no thread pool in this forked process: {e}"))
                })?;
                let pool = std::sync::Arc::new(pool);
                *slot = Some((pid, std::sync::Arc::clone(&pool)));
                pool
            }
        }
    };
    pool.install(f)
}

/// A 1-D or 2-D array of the dtype `T`, C-contiguous, or a `DPMLTypeError` saying what it
/// is instead. Never converts: the estimators convert other inputs once, in Python.
fn describe(array: &Bound<'_, PyAny>) -> String {
    match array.cast::<PyUntypedArray>() {
        Ok(a) => format!(
            "a {}-D array of dtype {}{}",
            a.ndim(),
            a.dtype().str().map(|s| s.to_string()).unwrap_or_default(),
            if a.is_c_contiguous() {
                ""
            } else {
                ", not C-contiguous"
            }
        ),
        Err(_) => format!(
            "a {}",
            array
                .get_type()
                .name()
                .map(|s| s.to_string())
                .unwrap_or_default()
        ),
    }
}

fn dense<'py>(what: &str, x: &Bound<'py, PyAny>) -> Result<PyReadonlyArray2<'py, f64>, CoreError> {
    let array = x.extract::<PyReadonlyArray2<'py, f64>>().map_err(|_| {
        CoreError::type_error(
            what,
            format!(
                "must be a 2-D float64 numpy array (read in place); got {}",
                describe(x)
            ),
        )
    })?;
    if !array.is_c_contiguous() {
        return Err(CoreError::type_error(
            what,
            format!(
                "must be C-contiguous (read in place, never copied here); got {}",
                describe(x)
            ),
        ));
    }
    Ok(array)
}

pub(crate) fn vector<'py, T: numpy::Element>(
    what: &str,
    dtype: &str,
    x: &Bound<'py, PyAny>,
) -> Result<PyReadonlyArray1<'py, T>, CoreError> {
    let array = x.extract::<PyReadonlyArray1<'py, T>>().map_err(|_| {
        CoreError::type_error(
            what,
            format!("must be a 1-D {dtype} numpy array; got {}", describe(x)),
        )
    })?;
    if !array.is_c_contiguous() {
        return Err(CoreError::type_error(
            what,
            format!("must be contiguous; got {}", describe(x)),
        ));
    }
    Ok(array)
}

/// An index array of scipy's CSR parts: int32 or int64, contiguous.
pub(crate) enum IndexArray<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

impl<'py> IndexArray<'py> {
    fn new(what: &str, x: &Bound<'py, PyAny>) -> Result<Self, CoreError> {
        if let Ok(a) = vector::<i32>(what, "int32", x) {
            return Ok(IndexArray::I32(a));
        }
        vector::<i64>(what, "int32 or int64", x).map(IndexArray::I64)
    }

    fn ints(&self) -> Ints<'_> {
        // Contiguity checked in `new`.
        match self {
            IndexArray::I32(a) => Ints::I32(a.as_slice().unwrap_or(&[])),
            IndexArray::I64(a) => Ints::I64(a.as_slice().unwrap_or(&[])),
        }
    }
}

/// The arrays behind `Rows`, held (and so borrowed read-only) for the call.
pub(crate) enum Held<'py> {
    Dense(PyReadonlyArray2<'py, f64>),
    Csr {
        data: PyReadonlyArray1<'py, f64>,
        indices: IndexArray<'py>,
        indptr: IndexArray<'py>,
        features: usize,
    },
}

impl<'py> Held<'py> {
    /// `x` dense (2-D float64), or the CSR parts `(data, indices, indptr)` of an
    /// `n × n_features` matrix when `csr` is given.
    pub(crate) fn new(
        x: &Bound<'py, PyAny>,
        csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
        n_features: Option<usize>,
    ) -> Result<Self, CoreError> {
        match csr {
            None => Ok(Held::Dense(dense("X", x)?)),
            Some((indices, indptr)) => Ok(Held::Csr {
                data: vector::<f64>("X.data", "float64", x)?,
                indices: IndexArray::new("X.indices", &indices)?,
                indptr: IndexArray::new("X.indptr", &indptr)?,
                features: n_features
                    .ok_or_else(|| CoreError::value("n_features", "is required with sparse X"))?,
            }),
        }
    }

    pub(crate) fn rows(&self) -> Result<Rows<'_>, CoreError> {
        match self {
            Held::Dense(x) => {
                let shape = x.shape();
                Ok(Rows::Dense {
                    values: x.as_slice().map_err(|_| {
                        CoreError::type_error("X", "must be C-contiguous (read in place)")
                    })?,
                    features: shape[1],
                })
            }
            Held::Csr {
                data,
                indices,
                indptr,
                features,
            } => Ok(Rows::Csr {
                data: data.as_slice().map_err(|_| {
                    CoreError::type_error("X.data", "must be contiguous (read in place)")
                })?,
                indices: indices.ints(),
                indptr: indptr.ints(),
                features: *features,
            }),
        }
    }
}

pub(crate) fn mechanism(
    name: &str,
    epsilon: f64,
    calibration: &str,
) -> Result<MechanismSpec, CoreError> {
    let calibration = match calibration {
        "cliff-free" => ObjectiveCalibration::CliffFree,
        "cms11" => ObjectiveCalibration::Cms11,
        other => {
            return Err(CoreError::value(
                "calibration",
                format!("= {other:?}; expected 'cliff-free' or 'cms11'"),
            ));
        }
    };
    match name {
        "objective" => Ok(MechanismSpec::Objective {
            epsilon,
            calibration,
        }),
        "output" => Ok(MechanismSpec::Output { epsilon }),
        // Only `dpml.testing`'s non-private mode passes this.
        "non-private" => Ok(MechanismSpec::NonPrivate),
        other => Err(CoreError::value(
            "mechanism",
            format!("= {other:?}; expected 'objective' or 'output'"),
        )),
    }
}

/// The mechanism at (ε, δ): the pure-ε ones for δ = 0, dp-erm's `GaussianErm` for δ > 0
/// (objective perturbation with its own cliff-free rule: `calibration` stays at its
/// default).
pub(crate) fn mechanism_with_delta(
    name: &str,
    epsilon: f64,
    delta: f64,
    calibration: &str,
) -> Result<MechanismSpec, CoreError> {
    let pure = mechanism(name, epsilon, calibration)?;
    if delta == 0.0 {
        return Ok(pure);
    }
    if !(delta.is_finite() && delta > 0.0 && delta < 1.0) {
        return Err(CoreError::value(
            "delta",
            format!("= {delta}; it must be 0 (pure ε) or in (0, 1)"),
        ));
    }
    match pure {
        MechanismSpec::Output { epsilon } => Ok(MechanismSpec::GaussianOutput { epsilon, delta }),
        MechanismSpec::Objective {
            epsilon,
            calibration: ObjectiveCalibration::CliffFree,
        } => Ok(MechanismSpec::GaussianObjective { epsilon, delta }),
        MechanismSpec::Objective { .. } => Err(CoreError::value(
            "calibration",
            "= 'cms11' applies to the pure-ε objective perturbation only; with delta > 0 \
             the Gaussian objective perturbation uses its own cliff-free rule: leave \
             calibration='cliff-free'",
        )),
        other => Err(CoreError::value(
            "delta",
            format!("> 0 does not apply to {other:?}"),
        )),
    }
}

pub(crate) fn loss(name: &str, huber_width: f64) -> Result<Loss, CoreError> {
    match name {
        "logistic" => Ok(Loss::Logistic),
        "huber" => Ok(Loss::huber(huber_width)?),
        other => Err(CoreError::value(
            "loss",
            format!("= {other:?}; expected 'logistic' or 'huber'"),
        )),
    }
}

pub(crate) fn randomness(seed: Option<u64>) -> Randomness {
    seed.map_or(Randomness::Secure, Randomness::InsecureSeed)
}

/// The class index of each row, as `usize`.
pub(crate) fn class_indices(y: &Bound<'_, PyAny>) -> Result<Vec<usize>, CoreError> {
    let y = vector::<i64>("y (class indices)", "int64", y)?;
    let y = y
        .as_slice()
        .map_err(|_| CoreError::type_error("y", "must be contiguous"))?;
    y.iter()
        .enumerate()
        .map(|(row, &c)| {
            usize::try_from(c)
                .map_err(|_| CoreError::value("y", format!("row {row} has a negative class index")))
        })
        .collect()
}

/// The fit's public report as a dict.
pub(crate) fn report<'py, M>(py: Python<'py>, fit: &FitReport<M>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("regularization", fit.regularization)?;
    d.set_item("epsilon", fit.epsilon)?;
    d.set_item("delta", fit.delta)?;
    if let Some(g) = &fit.gaussian {
        let cal = PyDict::new(py);
        cal.set_item("epsilon_per_model", g.epsilon)?;
        cal.set_item("delta_per_model", g.delta)?;
        cal.set_item("sigma", g.sigma)?;
        cal.set_item("l2_sensitivity", g.l2_sensitivity)?;
        cal.set_item("rho", g.rho)?;
        cal.set_item("extra_regularization", g.extra_regularization)?;
        cal.set_item("tolerance", g.tolerance)?;
        d.set_item("calibration", cal)?;
    }
    if let Some(s) = &fit.sgd {
        let cal = PyDict::new(py);
        cal.set_item("epsilon_per_model", s.epsilon_per_model)?;
        cal.set_item(
            "replace_one_epsilon_per_model",
            s.replace_one_epsilon_per_model,
        )?;
        cal.set_item("delta_per_model", s.delta_per_model)?;
        cal.set_item("noise_multiplier", s.noise_multiplier)?;
        cal.set_item("sampling_rate", s.sampling_rate)?;
        cal.set_item("steps", s.steps)?;
        cal.set_item("batch_size", s.batch_size)?;
        cal.set_item("epochs", s.epochs)?;
        cal.set_item("learning_rate", s.learning_rate)?;
        cal.set_item("clip_norm", s.clip_norm)?;
        cal.set_item("average_iterates", s.average_iterates)?;
        d.set_item("calibration", cal)?;
    }
    if let Some(c) = &fit.calibration {
        let cal = PyDict::new(py);
        cal.set_item("epsilon_per_model", c.epsilon)?;
        cal.set_item("epsilon_prime", c.epsilon_prime)?;
        cal.set_item("extra_regularization", c.extra_regularization)?;
        cal.set_item("beta", c.beta)?;
        cal.set_item("l2_sensitivity", c.l2_sensitivity)?;
        cal.set_item("tolerance", c.tolerance)?;
        d.set_item("calibration", cal)?;
    }
    Ok(d)
}

/// Trains a linear classifier (see `dpml.LogisticRegression` and `dpml.HuberSVC`).
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, loss_name, huber_width, mechanism_name,
    epsilon, delta=0.0, calibration, regularization, feature_groups, tol, data_norm, clip_rows,
    intercept, seed
))]
#[allow(clippy::too_many_arguments)]
fn fit_linear_model<'py>(
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
) -> PyResult<(Models, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = LinearSpec {
            loss: loss(loss_name, huber_width)?,
            mechanism: mechanism_with_delta(mechanism_name, epsilon, delta, calibration)?,
            regularization: regularization.map_or(Regularization::Auto, Regularization::Fixed),
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
    let fit = detached(py, || {
        fit_linear(rows, &classes, n_classes, &spec, randomness(seed))
    })?;
    let info = report(py, &fit)?;
    Ok((
        Models::linear(fit.models, spec.transform).map_err(|e| raise(py, e))?,
        info,
    ))
}

/// Trains a linear classifier by DP-SGD (see `dpml.DPSGDClassifier`).
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, loss_name, huber_width, epsilon, delta,
    batch_size, epochs, learning_rate, clip_norm, regularization, average_iterates, data_norm,
    intercept, seed, rule=false, add_remove_rows=None
))]
#[allow(clippy::too_many_arguments)]
fn fit_sgd_model<'py>(
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
) -> PyResult<(Models, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = SgdSpec {
            loss: loss(loss_name, huber_width)?,
            epsilon,
            delta,
            batch_size,
            epochs,
            learning_rate,
            clip_norm,
            regularization,
            average_iterates,
            rule,
            add_remove_rows,
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
    let fit = detached(py, || {
        fit_sgd(rows, &classes, n_classes, &spec, randomness(seed))
    })?;
    let info = report(py, &fit)?;
    Ok((
        Models::linear(fit.models, spec.transform).map_err(|e| raise(py, e))?,
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
fn fit_kernel_model<'py>(
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
            mechanism: mechanism(mechanism_name, epsilon, calibration)?,
            regularization: regularization.map_or(Regularization::Auto, Regularization::Fixed),
            feature_groups: None,
            tolerance: tol,
            transform: RowTransform {
                norm_bound: 1.0,
                clip: false,
                intercept: None,
            },
        };
        let kernel = match kernel {
            "gaussian" => Kernel::gaussian(gamma)?,
            "laplacian" => Kernel::laplacian(gamma)?,
            other => {
                return Err(CoreError::value(
                    "kernel",
                    format!("= {other:?}; expected 'gaussian' or 'laplacian'"),
                ));
            }
        };
        let sampling = match sampling {
            "standard" => Sampling::Standard,
            "orthogonal" => Sampling::Orthogonal,
            other => {
                return Err(CoreError::value(
                    "sampling",
                    format!("= {other:?}; expected 'standard' or 'orthogonal'"),
                ));
            }
        };
        let map = MapSpec {
            kernel,
            sampling,
            components: n_components,
        };
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
    let fit = detached(py, || {
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
        }
        Ok(d)
    }

    /// Number of binary models (1, or one per class).
    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

/// What a private linear model can be expected to reach from the public n, d and ε alone
/// (dp-erm's `RegularizationRule::outlook`; no data read): `d/(nε)` and the two warnings.
#[pyfunction]
fn utility_outlook<'py>(
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

/// `dpml._dpml`: the Rust core.
#[pymodule]
fn _dpml(m: &Bound<'_, PyModule>) -> PyResult<()> {
    IMPORTING_PROCESS.get_or_init(std::process::id);
    m.add_function(wrap_pyfunction!(fit_linear_model, m)?)?;
    m.add_function(wrap_pyfunction!(fit_kernel_model, m)?)?;
    m.add_function(wrap_pyfunction!(fit_sgd_model, m)?)?;
    m.add_function(wrap_pyfunction!(utility_outlook, m)?)?;
    m.add_class::<PyModels>()?;
    m.add_class::<crate::py_ledger::PyLedgerCore>()?;
    // The ε ceiling every face checks against (dp-erm's), so Python holds no copy of it.
    m.add("MAX_EPSILON", dp_fit::spec::MAX_EPSILON)?;
    crate::py_select::register(m)?;
    crate::py_predict::register(m)?;
    crate::py_schema::register(m)?;
    crate::py_spark::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
