//! `dpml._dpml`'s Spark functions: the executor kernels (`spark_partition_encode` once per
//! fit, `spark_block_sums` on every pass) and the
//! driver's fit (`fit_linear_partitions`), whose passes call back into Python (`ask`),
//! which runs one Spark job per pass.

use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::error::{CoreError, guarded};
use crate::fit::{LinearSpec, Regularization, model_groups};
use crate::models::Models;
use crate::py_common::{detached, loss, mechanism, raise, randomness, report};
use crate::py_schema::{PySchema, stream_reader};
use crate::rows::RowTransform;
use crate::spark::{ClassLabels, Labelling, PartitionEncoder, block_sums, fit_linear_partitions};

/// One partition encoded (on an executor, once per fit): the Arrow stream's batches
/// encoded by `schema`, transformed as the estimators transform rows and contract-checked.
/// `class_of`: None to label rows by the schema's ±1 label; else the class index (in the
/// estimator's `classes_`) of each of the label's declared classes, kept per row.
/// Returns `(rows, checksum, encoded block, class indices)` (the last empty without
/// `class_of`); a refused row raises `DPMLValueError` naming its row within the partition
/// and its column.
#[pyfunction]
#[pyo3(signature = (schema, stream, *, data_norm, clip_rows, intercept, class_of=None))]
#[allow(clippy::too_many_arguments)]
fn spark_partition_encode<'py>(
    py: Python<'py>,
    schema: &PySchema,
    stream: &Bound<'py, PyAny>,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    class_of: Option<Vec<usize>>,
) -> PyResult<(usize, u64, Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let reader = stream_reader(py, stream)?;
    // With the GIL held: the stream's producer is Python (Spark's batch iterator).
    let done = guarded(|| {
        let transform = RowTransform {
            norm_bound: data_norm,
            clip: clip_rows,
            intercept,
        };
        let labelling = match class_of {
            None => Labelling::Signs,
            Some(class_of) => Labelling::Classes { class_of },
        };
        let mut encoder =
            PartitionEncoder::new(schema.schema(), schema.encoder(), transform, labelling)?;
        for batch in reader {
            let batch =
                batch.map_err(|e| CoreError::Schema(format!("the Arrow stream failed: {e}")))?;
            encoder.add_batch(&batch)?;
        }
        Ok(encoder.finish())
    })
    .map_err(|e| raise(py, e))?;
    Ok((
        done.rows,
        done.checksum,
        PyBytes::new(py, &done.block),
        PyBytes::new(py, &done.classes),
    ))
}

/// One pass over a partition's encoded block (on an executor): `(rows, checksum,
/// serialized sums)` at `w`, the rows decoded, relabelled for one-vs-rest model `model`
/// when `classes` (the encoding's class indices) is given with `n_classes`, checked
/// against the data contract and summed (the GIL released); `n_features` is the
/// transformed feature count.
#[pyfunction]
#[pyo3(signature = (
    block, n_features, w, *, with_hessian, loss_name, huber_width, classes=None,
    n_classes=2, model=0, feature_groups=None, intercept=false
))]
#[allow(clippy::too_many_arguments)]
fn spark_block_sums<'py>(
    py: Python<'py>,
    block: &[u8],
    n_features: usize,
    w: Vec<f64>,
    with_hessian: bool,
    loss_name: &str,
    huber_width: f64,
    classes: Option<&[u8]>,
    n_classes: usize,
    model: usize,
    feature_groups: Option<Vec<usize>>,
    intercept: bool,
) -> PyResult<(usize, u64, Bound<'py, PyBytes>)> {
    let labels = classes.map(|classes| ClassLabels {
        classes,
        class_count: n_classes,
        model,
    });
    let done = detached(py, || {
        // Group-shaped noise: the groups of the transformed features, as the driver's plan.
        let groups = feature_groups
            .map(|g| model_groups(&g, n_features - usize::from(intercept), intercept))
            .transpose()?;
        block_sums(
            block,
            labels,
            n_features,
            loss(loss_name, huber_width)?,
            &w,
            with_hessian,
            groups.as_ref(),
        )
    })?;
    Ok((
        done.sums.rows(),
        done.checksum,
        PyBytes::new(py, &done.sums.to_bytes()),
    ))
}

/// Trains a linear classifier (binary, or one-vs-rest over `n_classes` > 2 classes, each
/// model at ε/K, or (ε/K, δ/K) with `delta` > 0: dp-erm's `GaussianErm`) whose passes `ask(w, with_hessian, model)` answers with one `(checksum,
/// serialized sums)` per partition, in partition order (see `dpml.spark`). Returns
/// `(models, report)`: not the number of passes, which depends on the data (for output
/// perturbation on the data alone) and so is not released.
#[pyfunction]
#[pyo3(signature = (
    ask, n_rows, n_features, *, loss_name, huber_width, mechanism_name, epsilon,
    delta=0.0, calibration, regularization, tol, data_norm, clip_rows, intercept, seed,
    n_classes=2, feature_groups=None
))]
#[allow(clippy::too_many_arguments)]
fn fit_linear_partitions_model<'py>(
    py: Python<'py>,
    ask: Bound<'py, PyAny>,
    n_rows: usize,
    n_features: usize,
    loss_name: &str,
    huber_width: f64,
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
    n_classes: usize,
    feature_groups: Option<Vec<usize>>,
) -> PyResult<(Models, Bound<'py, PyDict>)> {
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
        let spec = LinearSpec {
            loss: loss(loss_name, huber_width)?,
            mechanism: mechanism(mechanism_name, epsilon, delta, calibration)?,
            regularization: regularization.map_or(Regularization::Rule, Regularization::Fixed),
            feature_groups,
            tolerance: tol,
            transform: RowTransform {
                norm_bound: data_norm,
                clip: clip_rows,
                intercept,
            }
            .checked()?,
        };
        let (fit, _passes) = fit_linear_partitions(
            &spec,
            n_rows,
            n_features,
            n_classes,
            &ask_partitions,
            randomness(seed),
        )?;
        Ok((spec, fit))
    });
    let (spec, fit) = match fitted {
        Ok(done) => done,
        Err(e) => {
            return Err(match raised.into_inner() {
                Some(original) => original,
                None => raise(py, e),
            });
        }
    };
    let info = report(py, &fit)?;
    Ok((
        Models::linear(fit.models, spec.transform).map_err(|e| raise(py, e))?,
        info,
    ))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(spark_partition_encode, m)?)?;
    m.add_function(wrap_pyfunction!(spark_block_sums, m)?)?;
    m.add_function(wrap_pyfunction!(fit_linear_partitions_model, m)?)?;
    Ok(())
}
