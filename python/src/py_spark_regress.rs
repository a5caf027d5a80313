//! `dpml._dpml`'s Spark regression functions: the executor kernels
//! (`spark_regression_encode` once per fit, `spark_regression_block_sums` on every pass)
//! and the driver's fit (`fit_regression_partitions_model`), whose passes call back into
//! Python (`ask`), which runs one Spark job per pass.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dp_erm::{Loss, TargetScale};

use crate::error::guarded;
use crate::fit::Regularization;
use crate::py_common::{Held, detached, mechanism, raise, randomness, report, vector};
use crate::regress::RegressionSpec;
use crate::rows::RowTransform;
use crate::spark_regress::{
    encode_regression_partition, fit_regression_partitions, regression_block_sums,
};

/// One partition's feature vectors `x` (n × d float64) and targets `y` encoded (on an
/// executor, once per fit): `(rows, checksum, encoded block, scaled targets)`. A refused
/// row raises `DPMLValueError` naming its row within the partition, never its value.
#[pyfunction]
#[pyo3(signature = (
    x, y, *, data_norm, clip_rows, intercept, target_lower, target_upper, clip_targets
))]
#[allow(clippy::too_many_arguments)]
fn spark_regression_encode<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    target_lower: f64,
    target_upper: f64,
    clip_targets: bool,
) -> PyResult<(usize, u64, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let held = guarded(|| {
        let targets = vector::<f64>("y", "float64", y)?.as_array().to_vec();
        Ok((Held::new(x, None, None)?, targets))
    })
    .map_err(|e| raise(py, e))?;
    let (held, targets) = held;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    let done = detached(py, || {
        let transform = RowTransform {
            norm_bound: data_norm,
            clip: clip_rows,
            intercept,
        };
        let bounds = TargetScale::new(target_lower, target_upper)?;
        encode_regression_partition(rows, &targets, &transform, bounds, clip_targets)
    })?;
    Ok((
        done.rows,
        done.checksum,
        PyBytes::new(py, &done.block),
        PyBytes::new(py, &done.targets),
    ))
}

/// One pass over a partition's encoded block and scaled targets (on an executor):
/// `(rows, checksum, serialized sums)` at `w`, every row checked by the regression
/// contract (the GIL released); `n_features` is the transformed feature count.
#[pyfunction]
#[pyo3(signature = (block, targets, n_features, w, *, with_hessian, huber_threshold))]
fn spark_regression_block_sums<'py>(
    py: Python<'py>,
    block: &[u8],
    targets: &[u8],
    n_features: usize,
    w: Vec<f64>,
    with_hessian: bool,
    huber_threshold: f64,
) -> PyResult<(usize, u64, Bound<'py, PyBytes>)> {
    let done = detached(py, || {
        let loss = Loss::huber_regression(huber_threshold)?;
        regression_block_sums(block, targets, n_features, loss, &w, with_hessian)
    })?;
    Ok((
        done.sums.rows(),
        done.checksum,
        PyBytes::new(py, &done.sums.to_bytes()),
    ))
}

/// Trains a regressor whose passes `ask(w, with_hessian, model)` answers with one
/// `(checksum, serialized sums)` per partition, in partition order (see `dpml.spark`).
/// Returns `(model file, report)`: not the number of passes, which depends on the data.
#[pyfunction]
#[pyo3(signature = (
    ask, n_rows, n_features, *, huber_threshold, target_lower, target_upper, clip_targets,
    mechanism_name, epsilon, delta=0.0, calibration, regularization, tol, data_norm,
    clip_rows, intercept, seed
))]
#[allow(clippy::too_many_arguments)]
fn fit_regression_partitions_model<'py>(
    py: Python<'py>,
    ask: Bound<'py, PyAny>,
    n_rows: usize,
    n_features: usize,
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
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
    // The first Python exception of a pass, re-raised as it was (a Spark job failure).
    let raised: RefCell<Option<PyErr>> = RefCell::new(None);
    let ask_partitions =
        |w: &[f64], with_hessian: bool, model: usize| -> Result<Vec<(u64, Vec<u8>)>, String> {
            let answer = ask
                .call1((w.to_vec(), with_hessian, model))
                .and_then(|a| a.extract::<Vec<(u64, Vec<u8>)>>());
            answer.map_err(|e| {
                let message = e.to_string();
                raised.borrow_mut().get_or_insert(e);
                message
            })
        };
    let fitted = guarded(|| {
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
            feature_groups: None,
        };
        let (fit, _passes) = fit_regression_partitions(
            &spec,
            n_rows,
            n_features,
            &ask_partitions,
            randomness(seed),
        )?;
        let file = fit.models[0].to_bytes()?;
        Ok((fit, file))
    });
    let (fit, file) = match fitted {
        Ok(done) => done,
        Err(e) => {
            return Err(match raised.into_inner() {
                Some(original) => original,
                None => raise(py, e),
            });
        }
    };
    let info = report(py, &fit)?;
    Ok((PyBytes::new(py, &file), info))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(spark_regression_encode, m)?)?;
    m.add_function(wrap_pyfunction!(spark_regression_block_sums, m)?)?;
    m.add_function(wrap_pyfunction!(fit_regression_partitions_model, m)?)?;
    Ok(())
}
