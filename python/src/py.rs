//! The Python module `dpml._dpml`: registration only. Arrays are read in place, the GIL
//! released while Rust works, every error raised as a `dpml` exception, no panic unwinding
//! into Python (`py_common`); the fits and models are in `py_fit`, the ledger in
//! `py_ledger`, selection, prediction, schemas and Spark in their own modules.

use pyo3::prelude::*;

use crate::py_fit::{
    PyModels, fit_kernel_model, fit_linear_model, fit_sgd_model, private_norm_split,
    sgd_auto_batch_size, utility_outlook,
};

/// `dpml._dpml`: the Rust core.
#[pymodule]
fn _dpml(m: &Bound<'_, PyModule>) -> PyResult<()> {
    crate::py_common::record_importing_process();
    m.add_function(wrap_pyfunction!(fit_linear_model, m)?)?;
    m.add_function(wrap_pyfunction!(fit_kernel_model, m)?)?;
    m.add_function(wrap_pyfunction!(fit_sgd_model, m)?)?;
    m.add_function(wrap_pyfunction!(utility_outlook, m)?)?;
    m.add_function(wrap_pyfunction!(sgd_auto_batch_size, m)?)?;
    m.add_function(wrap_pyfunction!(private_norm_split, m)?)?;
    m.add(
        "PRIVATE_NORM_MECHANISM",
        dp_fit::private_norm::PRIVATE_NORM_MECHANISM,
    )?;
    m.add_class::<PyModels>()?;
    m.add_function(wrap_pyfunction!(
        crate::py_regress::fit_regression_model,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        crate::py_sgd_regress::fit_sgd_regression_model,
        m
    )?)?;
    m.add_class::<crate::py_regress::Regressor>()?;
    m.add_class::<crate::py_ledger::PyLedgerCore>()?;
    // The ε ceiling every face checks against (dp-erm's), so Python holds no copy of it.
    m.add("MAX_EPSILON", dp_fit::spec::MAX_EPSILON)?;
    // The δ cap of every fit and ledger total taken from Python (dp-fit's).
    m.add("MAX_DELTA", dp_fit::spec::MAX_DELTA)?;
    // The regressors' default intercept feature (dp-fit's, measured there).
    m.add(
        "REGRESSION_INTERCEPT_SCALING",
        dp_fit::regression::DEFAULT_INTERCEPT_SCALING,
    )?;
    crate::py_select::register(m)?;
    crate::py_select_regress::register(m)?;
    crate::py_predict::register(m)?;
    crate::py_schema::register(m)?;
    crate::py_describe::register(m)?;
    crate::py_preprocess::register(m)?;
    crate::py_spark::register(m)?;
    crate::py_spark_regress::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
