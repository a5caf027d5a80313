//! `dpml._dpml.LedgerCore`: dp-fit's budget (in memory, or the ledger file the command line
//! uses), which `dpml.Ledger` wraps. The arithmetic, the file format, the locking and the
//! refusals are dp-fit's; this module only converts.

use std::path::PathBuf;
use std::time::Duration;

use dp_fit::charge::Budget;
use dp_fit::{Ledger, LedgerError, LedgerFile, Spend};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::error::CoreError;
use crate::py_common::detached;

/// How long a charge waits for another process (a `dpml train` run holds the lock for its
/// whole fit) before it is refused.
const DEFAULT_WAIT_SECONDS: f64 = 10.0;

/// `e` as the exception a Python caller expects: a budget refusal in the estimators'
/// wording (`{what} needs epsilon=…`), a bad amount as a value error, anything else about
/// the ledger itself as `DPMLError`.
fn converted(e: LedgerError, what: &str) -> CoreError {
    match e {
        LedgerError::Exceeded(o) => CoreError::Budget(format!(
            "{what} needs epsilon={:?}, delta={:?}, but the ledger has epsilon={:?}, \
             delta={:?} left of ({:?}, {:?}); nothing was trained",
            o.asked.0, o.asked.1, o.left.0, o.left.1, o.total.0, o.total.1
        )),
        LedgerError::PureEpsilon { delta, .. } => CoreError::Budget(format!(
            "{what} is (epsilon, delta)-DP with delta={delta:?}, but this ledger is pure \
             epsilon (delta=0) and cannot cover any delta; create the ledger with the total \
             delta you accept, Ledger(epsilon, delta=...); nothing was trained"
        )),
        LedgerError::InvalidAmount {
            what: name,
            value,
            expected,
        } => CoreError::value(name, format!("= {value:?}: must be {expected}")),
        other => CoreError::Ledger(other.to_string()),
    }
}

fn wait(seconds: f64) -> Result<Duration, CoreError> {
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| CoreError::value("wait", format!("= {seconds:?}: must be seconds ≥ 0")))
}

/// A privacy budget held by dp-fit.
#[pyclass(name = "LedgerCore", module = "dpml._dpml", frozen)]
pub struct PyLedgerCore {
    budget: Budget,
}

#[pymethods]
impl PyLedgerCore {
    /// A new ledger held in this process.
    #[staticmethod]
    fn in_memory(py: Python<'_>, epsilon: f64, delta: f64) -> PyResult<Self> {
        let budget = detached(py, || {
            Budget::in_memory(epsilon, delta).map_err(|e| converted(e, "the ledger"))
        })?;
        Ok(Self { budget })
    }

    /// The ledger file at `path` (as `dpml ledger init` writes it), read and checked now.
    #[staticmethod]
    #[pyo3(signature = (path, wait_seconds = DEFAULT_WAIT_SECONDS))]
    fn open(py: Python<'_>, path: PathBuf, wait_seconds: f64) -> PyResult<Self> {
        let budget = detached(py, || {
            Budget::open(&path, wait(wait_seconds)?).map_err(|e| converted(e, "the ledger"))
        })?;
        Ok(Self { budget })
    }

    /// Creates a ledger file at `path` (never replacing a file) and opens it.
    #[staticmethod]
    #[pyo3(signature = (path, epsilon, delta, dataset, wait_seconds = DEFAULT_WAIT_SECONDS))]
    fn create(
        py: Python<'_>,
        path: PathBuf,
        epsilon: f64,
        delta: f64,
        dataset: String,
        wait_seconds: f64,
    ) -> PyResult<Self> {
        let budget = detached(py, || {
            let ledger =
                Ledger::new(&dataset, epsilon, delta).map_err(|e| converted(e, "the ledger"))?;
            LedgerFile::create(&path, &ledger).map_err(|e| converted(e, "the ledger"))?;
            Budget::open(&path, wait(wait_seconds)?).map_err(|e| converted(e, "the ledger"))
        })?;
        Ok(Self { budget })
    }

    /// Checks and records a spend of `epsilon`, `delta` by `what` (the estimator) for
    /// `mechanism`, before the fit; returns its number. Refused with `BudgetExceededError`
    /// if it does not fit. A Gaussian output perturbation (`mechanism` "gaussian-output")
    /// of a `classes`-class classifier records its zCDP curve (dp-fit's
    /// `Curve::gaussian_output_perturbation`), which the ledger composes tightly.
    #[pyo3(signature = (epsilon, delta, what, mechanism, classes=None))]
    fn charge(
        &self,
        py: Python<'_>,
        epsilon: f64,
        delta: f64,
        what: String,
        mechanism: String,
        classes: Option<usize>,
    ) -> PyResult<u64> {
        detached(py, || {
            let curve = match (mechanism.as_str(), classes) {
                ("gaussian-output", Some(k)) if delta > 0.0 => {
                    dp_fit::Curve::gaussian_output_perturbation(epsilon, delta, k)
                }
                _ => None,
            };
            let spend = Spend::new(epsilon, delta, &format!("python: {what}"), &mechanism)
                .with_curve(curve);
            self.budget.charge(spend).map_err(|e| converted(e, &what))
        })
    }

    /// Gives spend `sequence` its DP-SGD curve (replace-one, rate `sampling_rate`, noise
    /// multiplier `noise_multiplier`, `steps` steps), known after the fit; returns whether
    /// the ledger kept it (dp-fit's `Ledger::attach_curve`).
    fn attach_sgd_curve(
        &self,
        py: Python<'_>,
        sequence: u64,
        sampling_rate: f64,
        noise_multiplier: f64,
        steps: u64,
    ) -> PyResult<bool> {
        detached(py, || {
            let curve = dp_fit::Curve::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
            };
            self.budget
                .attach_curve(sequence, curve)
                .map_err(|e| converted(e, "the ledger"))
        })
    }

    /// Takes back spend `sequence`: only for a fit refused before it drew any noise.
    fn refund(&self, py: Python<'_>, sequence: u64) -> PyResult<()> {
        detached(py, || {
            self.budget
                .refund(sequence)
                .map(|_| ())
                .map_err(|e| converted(e, "the refund"))
        })
    }

    /// The file's path, or None in memory.
    fn path(&self) -> Option<String> {
        match &self.budget {
            Budget::Memory(_) => None,
            Budget::File { path, .. } => Some(path.display().to_string()),
        }
    }

    /// The ledger as it stands: totals, spent and left (spent rounded up, left down), its
    /// identity and every spend.
    fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let ledger = detached(py, || {
            self.budget
                .snapshot()
                .map_err(|e| converted(e, "the ledger"))
        })?;
        let state = PyDict::new(py);
        state.set_item("dataset", &ledger.dataset)?;
        state.set_item("id", &ledger.id)?;
        state.set_item("total_epsilon", ledger.total_epsilon)?;
        state.set_item("total_delta", ledger.total_delta)?;
        let summary = ledger.summary();
        state.set_item("spent_epsilon", summary.composition.epsilon)?;
        state.set_item("spent_delta", summary.composition.delta)?;
        state.set_item("remaining_epsilon", summary.remaining_epsilon)?;
        state.set_item("remaining_delta", summary.remaining_delta)?;
        state.set_item("composition", summary.composition.method.name())?;
        let spends = PyList::empty(py);
        for s in &ledger.spends {
            let spend = PyDict::new(py);
            spend.set_item("sequence", s.sequence)?;
            spend.set_item("epsilon", s.epsilon)?;
            spend.set_item("delta", s.delta)?;
            spend.set_item("command", &s.command)?;
            spend.set_item("model", &s.model)?;
            spend.set_item("time_unix", s.time_unix)?;
            spends.append(spend)?;
        }
        state.set_item("spends", spends)?;
        Ok(state)
    }
}
