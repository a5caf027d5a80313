//! What every `#[pyfunction]` of `dpml._dpml` shares: errors raised as `dpml` exceptions,
//! work run without the GIL on this process's own pool, arrays read in place, the option
//! names of the mechanisms and losses, the fit's report as a dict.

use dp_erm::Loss;
use numpy::{PyReadonlyArray1, PyReadonlyArray2, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use crate::error::{CoreError, guarded};
use crate::fit::{FitReport, Randomness};
use crate::rows::{Ints, Rows};
use dp_fit::recipe::{LossName, Mechanism};

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

/// How often a fit run by [`interruptible`] lets Python's signal handlers run.
const SIGNAL_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// The stack of a fit's own thread: the main thread's usual 8 MiB, not a spawned thread's
/// 2 MiB, so that a fit runs with the stack it had on the calling thread.
const FIT_STACK_BYTES: usize = 8 << 20;

/// [`detached`] for a long fit that Ctrl-C must be able to stop: `f` runs without the GIL on
/// a thread of its own and is handed a hook answering whether to stop, which it asks
/// between steps (DP-SGD), and which every solve it starts asks before each iteration
/// (`dp_optim::stop_when`); meanwhile this thread, every [`SIGNAL_CHECK_INTERVAL`], takes the GIL and
/// runs Python's signal handlers (`PyErr_CheckSignals`, which runs them only on the main
/// thread, so only there can a fit be interrupted). A handler's exception (Ctrl-C's
/// `KeyboardInterrupt`) raises the hook, waits for `f` to return, and is raised in place of
/// `f`'s result: no model is released, and a ledger keeps its charge (noise may have been
/// drawn).
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    f: impl FnOnce(&dyn Fn() -> bool) -> Result<T, CoreError> + Send,
) -> PyResult<T> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex};

    let stop = std::sync::Arc::new(AtomicBool::new(false));
    // The solvers (dp-optim's Newton and L-BFGS) ask the same flag before each iteration.
    let solver_stop: dp_optim::StopHook = {
        let stop = std::sync::Arc::clone(&stop);
        std::sync::Arc::new(move || stop.load(Ordering::Relaxed))
    };
    let done = (Mutex::new(false), Condvar::new());
    let mut signal = None;
    let result = std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("dpml-fit".into())
            .stack_size(FIT_STACK_BYTES)
            .spawn_scoped(scope, || {
                let result = guarded(|| {
                    in_this_process(|| {
                        dp_optim::stop_when(solver_stop, || f(&|| stop.load(Ordering::Relaxed)))
                    })
                });
                *done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
                done.1.notify_all();
                result
            })
            .map_err(|e| CoreError::Panic(format!("no thread for the fit: {e}")))?;
        loop {
            let finished = py.detach(|| {
                let guard = done.0.lock().unwrap_or_else(|p| p.into_inner());
                let (guard, _) = done
                    .1
                    .wait_timeout_while(guard, SIGNAL_CHECK_INTERVAL, |finished| !*finished)
                    .unwrap_or_else(|p| p.into_inner());
                *guard
            });
            if finished {
                break;
            }
            if signal.is_none()
                && let Err(e) = py.check_signals()
            {
                signal = Some(e);
                stop.store(true, Ordering::Relaxed);
            }
        }
        worker
            .join()
            .unwrap_or_else(|_| Err(CoreError::Panic("the fit's thread panicked".into())))
    });
    match signal {
        Some(e) => Err(e),
        None => result.map_err(|e| raise(py, e)),
    }
}

/// Notes the process importing the module (before any fork of it).
pub(crate) fn record_importing_process() {
    IMPORTING_PROCESS.get_or_init(std::process::id);
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

/// The mechanism a Python estimator names, at (ε, δ): dp-fit's table of names and rules.
pub(crate) fn mechanism(
    name: &str,
    epsilon: f64,
    delta: f64,
    calibration: &str,
) -> Result<Mechanism, CoreError> {
    Ok(Mechanism::named(name, calibration, epsilon, delta)?)
}

/// The loss a Python estimator names.
pub(crate) fn loss(name: &str, huber_width: f64) -> Result<Loss, CoreError> {
    Ok(name.parse::<LossName>()?.loss(huber_width)?)
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
    let mut out = crate::memory::with_capacity("the class indices", y.len())?;
    for (row, &c) in y.iter().enumerate() {
        out.push(
            usize::try_from(c).map_err(|_| {
                CoreError::value("y", format!("row {row} has a negative class index"))
            })?,
        );
    }
    Ok(out)
}

/// The fit's public report as a dict.
pub(crate) fn report<'py, M>(py: Python<'py>, fit: &FitReport<M>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("regularization", fit.regularization)?;
    d.set_item("epsilon", fit.epsilon)?;
    d.set_item("delta", fit.delta)?;
    if let Some(o) = &fit.outlook {
        let outlook = PyDict::new(py);
        outlook.set_item("noise_ratio", o.noise_ratio)?;
        outlook.set_item("at_risk", o.at_risk)?;
        outlook.set_item("near_chance", o.near_chance)?;
        outlook.set_item("warning", o.warning.as_deref())?;
        outlook.set_item("basis", o.basis)?;
        d.set_item("outlook", outlook)?;
    }
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
        cal.set_item("accountant", s.accountant)?;
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
