//! Errors of the binding, by the Python exception class they become.

use dp_erm::ErmError;
use dp_kernel::KernelError;
use dp_noise::NoiseError;
use dp_predict::PredictError;
use dp_tune::TuneError;

/// What a call can fail with. Every variant names the parameter or input at fault.
#[derive(Debug)]
pub enum CoreError {
    /// A bad value: becomes `dpml.DPMLValueError` (a `ValueError`).
    Value {
        /// The parameter or input.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A bad type or memory layout: becomes `dpml.DPMLTypeError` (a `TypeError`).
    Type {
        /// The parameter or input.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
    /// The crates refused; the message is theirs.
    Erm(ErmError),
    /// dp-kernel refused; the message is its own.
    Kernel(KernelError),
    /// dp-noise refused (the operating system's entropy, a budget).
    Noise(NoiseError),
    /// dp-tune refused or failed; the message is its own.
    Tune(TuneError),
    /// dp-predict refused or failed; the message is its own.
    Predict(PredictError),
    /// dp-schema refused a schema or a frame; the message is its own (it names the file,
    /// row and column, never a cell's content).
    Schema(String),
    /// A budget cannot pay for what was asked: becomes `dpml.BudgetExceededError`.
    Budget(String),
    /// A fit failed after its generator was first drawn from (DP-SGD's iterates diverged, a
    /// solver could not certify, a candidate failed): the failure is a function of the noisy
    /// computation, so the spend stands (dp-fit's rule). Becomes `dpml.DPMLError`, which a
    /// ledger does not refund.
    AfterNoise(Box<CoreError>),
    /// A ledger could not be used (corrupt, held, unsafe, unreadable): becomes
    /// `dpml.DPMLError`.
    Ledger(String),
    /// An allocation sized by the input was refused (the input is too large for the
    /// memory available): becomes `dpml.DPMLMemoryError` (a `MemoryError`).
    Memory {
        /// What was to be allocated.
        what: String,
        /// Its size in bytes (`usize::MAX`: beyond the address space).
        bytes: usize,
    },
    /// A Rust panic caught at the boundary: a bug, reported instead of crashing Python.
    Panic(String),
}

impl CoreError {
    /// This error, raised after the fit's generator was drawn from: its spend stands.
    pub fn after_noise(self) -> Self {
        match self {
            CoreError::AfterNoise(_) => self,
            other => CoreError::AfterNoise(Box::new(other)),
        }
    }

    /// A bad value of `what`.
    pub fn value(what: impl Into<String>, problem: impl Into<String>) -> Self {
        CoreError::Value {
            what: what.into(),
            problem: problem.into(),
        }
    }

    /// An allocation of `bytes` for `what` that the allocator refused.
    pub fn memory(what: impl Into<String>, bytes: usize) -> Self {
        CoreError::Memory {
            what: what.into(),
            bytes,
        }
    }

    /// A bad type or layout of `what`.
    pub fn type_error(what: impl Into<String>, problem: impl Into<String>) -> Self {
        CoreError::Type {
            what: what.into(),
            problem: problem.into(),
        }
    }

    /// The Python class this error becomes (defined in `dpml/_errors.py`).
    pub fn class_name(&self) -> &'static str {
        match self {
            CoreError::Value { .. } => "DPMLValueError",
            CoreError::Type { .. } => "DPMLTypeError",
            CoreError::Erm(e) | CoreError::Kernel(KernelError::Erm(e)) => erm_class(e),
            CoreError::Kernel(_) => "DPMLValueError",
            CoreError::Noise(NoiseError::EntropyUnavailable(_)) | CoreError::Panic(_) => {
                "DPMLError"
            }
            CoreError::Noise(_) => "DPMLValueError",
            CoreError::Budget(_) => "BudgetExceededError",
            CoreError::Memory { .. } => "DPMLMemoryError",
            CoreError::AfterNoise(_) | CoreError::Ledger(_) => "DPMLError",
            CoreError::Schema(_) => "DPMLValueError",
            CoreError::Tune(e) => tune_class(e),
            CoreError::Predict(e) => predict_class(e),
        }
    }
}

fn erm_class(e: &ErmError) -> &'static str {
    match e {
        // Not the caller's values: the solver or the file system.
        ErmError::NotConverged => "DPMLError",
        // A pass over rows held elsewhere failed after the noise was drawn.
        ErmError::RowSource(_) => "DPMLError",
        ErmError::ModelFileAccess(_) => "DPMLIOError",
        // The input is too large for the memory available.
        ErmError::AllocationFailed { .. } => "DPMLMemoryError",
        _ => "DPMLValueError",
    }
}

/// dp-tune's refusals made before anything is drawn on the data are the caller's values
/// (a ledger charged for them is refunded); a failure during the selection is not.
fn tune_class(e: &TuneError) -> &'static str {
    match e {
        TuneError::Training { .. }
        | TuneError::Scoring { .. }
        | TuneError::Data(_)
        | TuneError::Noise(_) => "DPMLError",
        TuneError::Budget(_) => "BudgetExceededError",
        _ => "DPMLValueError",
    }
}

/// dp-predict's refusals by kind: an overspent budget, a failure while training the
/// ensemble (not the caller's values), or a bad value.
fn predict_class(e: &PredictError) -> &'static str {
    match e {
        PredictError::BudgetExceeded { .. } => "BudgetExceededError",
        PredictError::Training { .. } => "DPMLError",
        PredictError::Noise(NoiseError::EntropyUnavailable(_)) => "DPMLError",
        _ => "DPMLValueError",
    }
}

impl std::fmt::Display for CoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CoreError::Value { what, problem } | CoreError::Type { what, problem } => {
                write!(f, "{what} {problem}")
            }
            CoreError::Erm(e) => write!(f, "{e}"),
            CoreError::AfterNoise(e) => write!(
                f,
                "{e}; the noise was drawn, so the privacy spend stands (not refunded)"
            ),
            CoreError::Kernel(e) => write!(f, "{e}"),
            CoreError::Noise(e) => write!(f, "{e}"),
            CoreError::Budget(message)
            | CoreError::Schema(message)
            | CoreError::Ledger(message) => {
                write!(f, "{message}")
            }
            CoreError::Tune(e) => write!(f, "{e}"),
            CoreError::Predict(e) => write!(f, "{e}"),
            CoreError::Memory { what, bytes } => {
                let size = if *bytes == usize::MAX {
                    "more than the address space".to_owned()
                } else {
                    format!("{bytes} bytes")
                };
                write!(
                    f,
                    "not enough memory for {what} ({size}): the input is too large for the \
                     memory available (use fewer rows or features, or raise the memory limit)"
                )
            }
            CoreError::Panic(message) => write!(
                f,
                "internal error in dpml's Rust core (a bug, please report it): {message}"
            ),
        }
    }
}

impl std::error::Error for CoreError {}

impl From<TuneError> for CoreError {
    fn from(e: TuneError) -> Self {
        CoreError::Tune(e)
    }
}

impl From<ErmError> for CoreError {
    fn from(e: ErmError) -> Self {
        CoreError::Erm(e)
    }
}

impl From<dp_fit::recipe::RecipeError> for CoreError {
    fn from(e: dp_fit::recipe::RecipeError) -> Self {
        match e {
            dp_fit::recipe::RecipeError::Refused { parameter, why } => {
                CoreError::value(parameter.python_name(), why)
            }
            dp_fit::recipe::RecipeError::Erm(e) => CoreError::Erm(e),
        }
    }
}

impl From<KernelError> for CoreError {
    fn from(e: KernelError) -> Self {
        CoreError::Kernel(e)
    }
}

impl From<NoiseError> for CoreError {
    fn from(e: NoiseError) -> Self {
        CoreError::Noise(e)
    }
}

impl From<PredictError> for CoreError {
    fn from(e: PredictError) -> Self {
        CoreError::Predict(e)
    }
}

/// A Gaussian mechanism's refusal at (ε, δ) in the terms of both. dp-erm's
/// `NoiseBeyondPrecision` says "epsilon is too small", but the Gaussian noise grows as δ
/// shrinks too (a tiny δ such as 1e-300 is the usual culprit where ε is ordinary); and the
/// zCDP route's refusal shows the budget ρ it converted (ε, δ) to under the name "epsilon".
pub fn gaussian_refusal(e: ErmError, epsilon: f64, delta: f64) -> CoreError {
    match e {
        ErmError::NoiseBeyondPrecision { .. } => CoreError::value(
            format!("(epsilon, delta) = ({epsilon:?}, {delta:?})"),
            "is too small for this number of rows, features and regularization: the \
             Gaussian noise, which grows as delta or epsilon shrinks, would be beyond what \
             double precision can train with; use a larger delta (still well below 1/n), a \
             larger epsilon, more rows or a larger regularization",
        ),
        ErmError::InvalidParameter {
            what: "epsilon",
            value: rho,
            requirement,
        } if requirement.contains("rho") => CoreError::value(
            format!("(epsilon, delta) = ({epsilon:?}, {delta:?})"),
            format!(
                "convert to the zCDP budget rho = {rho:?}, for which no Gaussian noise scale \
                 settles; use a larger epsilon or delta"
            ),
        ),
        other => other.into(),
    }
}

/// Runs `f`, turning a panic into [`CoreError::Panic`]: the last line of defence, so that
/// no panic unwinds into Python (PyO3 would raise `PanicException`, a `BaseException`).
pub fn guarded<T>(f: impl FnOnce() -> Result<T, CoreError>) -> Result<T, CoreError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".to_owned());
            Err(CoreError::Panic(message))
        }
    }
}
