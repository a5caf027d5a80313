//! `dpml.DPSGDRegressor`'s fit: DP-SGD on the regressors' data, releasing a `Regressor`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use dp_erm::TargetScale;
use dp_fit::sgd::SgdOptions;
use dp_noise::Neighbouring;

use crate::error::{CoreError, guarded};
use crate::fit::SgdSpec;
use crate::py_common::{Held, interruptible, raise, randomness, report, vector};
use crate::py_regress::Regressor;
use crate::rows::RowTransform;
use crate::sgd_regress::{SgdRegressionSpec, fit_sgd_regression_interruptible};

/// Trains a linear regressor by DP-SGD (see `dpml.DPSGDRegressor`).
#[pyfunction]
#[pyo3(signature = (
    x, y, *, csr=None, n_features=None, huber_threshold, target_lower, target_upper,
    clip_targets, epsilon, delta, batch_size, epochs, learning_rate, clip_norm,
    regularization, average_iterates, data_norm, clip_rows, intercept, seed,
    add_remove_rows=None, accountant="pld", private_norm_epsilon=None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn fit_sgd_regression_model<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    huber_threshold: f64,
    target_lower: f64,
    target_upper: f64,
    clip_targets: bool,
    epsilon: f64,
    delta: f64,
    batch_size: usize,
    epochs: f64,
    learning_rate: f64,
    clip_norm: f64,
    regularization: f64,
    average_iterates: bool,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    seed: Option<u64>,
    add_remove_rows: Option<usize>,
    accountant: &str,
    private_norm_epsilon: Option<f64>,
) -> PyResult<(Regressor, Bound<'py, PyDict>)> {
    let prepared = guarded(|| {
        let spec = SgdRegressionSpec {
            sgd: SgdSpec {
                epsilon,
                delta,
                options: SgdOptions {
                    batch_size,
                    epochs,
                    learning_rate,
                    clip_norm,
                    regularization,
                    average_iterates,
                    rule: false,
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
                    // Replaced by Huber regression at the threshold.
                    ..SgdOptions::default()
                },
                transform: RowTransform {
                    norm_bound: data_norm,
                    clip: clip_rows,
                    intercept,
                }
                .checked()?,
            },
            threshold: huber_threshold,
            target: TargetScale::new(target_lower, target_upper)?,
            clip_targets,
        };
        let targets = vector::<f64>("y", "float64", y)?.as_array().to_vec();
        Ok((spec, Held::new(x, csr.clone(), n_features)?, targets))
    })
    .map_err(|e| raise(py, e))?;
    let (spec, held, targets) = prepared;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    // Ctrl-C stops it between steps.
    let (fit, transform) = interruptible(py, |interrupted| {
        fit_sgd_regression_interruptible(
            rows,
            &targets,
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
    let model = fit
        .models
        .into_iter()
        .next()
        .expect("a regressor's fit releases one model");
    Ok((Regressor::new(model), info))
}
