//! `dpml._dpml.private_search`: the Rust side of `dpml.model_selection.PrivateSearch`.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::error::{CoreError, guarded};
use crate::fit::{LinearSpec, MapSpec, Regularization};
use crate::models::Models;
use crate::py_common::{Held, class_indices, detached, loss, mechanism, raise, randomness};
use crate::rows::RowTransform;
use crate::select::{Candidates, Method, prepare};

fn item<'py, T: FromPyObjectOwned<'py>>(
    d: &Bound<'py, PyDict>,
    key: &str,
    candidate: usize,
) -> Result<T, CoreError> {
    let what = || format!("candidate {candidate}'s {key}");
    d.get_item(key)
        .ok()
        .flatten()
        .ok_or_else(|| CoreError::value(what(), "is missing"))?
        .extract::<T>()
        .map_err(|_| CoreError::type_error(what(), "has the wrong type"))
}

/// One candidate's fit parameters, as the estimators' `_fit_kwargs` give them.
fn linear_spec(d: &Bound<'_, PyDict>, i: usize, linear: bool) -> Result<LinearSpec, CoreError> {
    let regularization: Option<f64> = item(d, "regularization", i)?;
    let transform = if linear {
        RowTransform {
            norm_bound: item(d, "data_norm", i)?,
            clip: item(d, "clip_rows", i)?,
            intercept: item(d, "intercept", i)?,
        }
        .checked()?
    } else {
        RowTransform {
            norm_bound: 1.0,
            clip: false,
            intercept: None,
        }
    };
    Ok(LinearSpec {
        loss: loss(
            &item::<String>(d, "loss_name", i)?,
            item(d, "huber_width", i)?,
        )?,
        // The ε is the search's (see `select`): a placeholder until then. The δ (the
        // Gaussian mechanisms) is the candidate's own; absent means pure ε.
        mechanism: mechanism(
            &item::<String>(d, "mechanism_name", i)?,
            1.0,
            if d.contains("delta").unwrap_or(false) {
                item(d, "delta", i)?
            } else {
                0.0
            },
            &item::<String>(d, "calibration", i)?,
        )?,
        regularization: regularization.map_or(Regularization::Rule, Regularization::Fixed),
        feature_groups: if linear {
            item(d, "feature_groups", i)?
        } else {
            None
        },
        tolerance: item(d, "tol", i)?,
        transform,
    })
}

fn map_spec(d: &Bound<'_, PyDict>, i: usize) -> Result<MapSpec, CoreError> {
    MapSpec::named(
        &item::<String>(d, "kernel", i)?,
        item(d, "gamma", i)?,
        &item::<String>(d, "sampling", i)?,
        item(d, "n_components", i)?,
    )
    .map_err(|e| match e {
        // Name the candidate beside the parameter.
        CoreError::Value { what, problem } => {
            CoreError::value(format!("candidate {i}'s {what}"), problem)
        }
        other => other,
    })
}

fn candidates(kind: &str, list: &Bound<'_, PyList>) -> Result<Candidates, CoreError> {
    let dicts = list
        .iter()
        .enumerate()
        .map(|(i, c)| {
            c.cast_into::<PyDict>()
                .map_err(|_| CoreError::type_error(format!("candidate {i}"), "must be a dict"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    match kind {
        "linear" => Ok(Candidates::Linear(
            dicts
                .iter()
                .enumerate()
                .map(|(i, d)| linear_spec(d, i, true))
                .collect::<Result<_, _>>()?,
        )),
        "kernel" => Ok(Candidates::Kernel(
            dicts
                .iter()
                .enumerate()
                .map(|(i, d)| Ok((linear_spec(d, i, false)?, map_spec(d, i)?)))
                .collect::<Result<_, CoreError>>()?,
        )),
        other => Err(CoreError::value(
            "kind",
            format!("= {other:?}; expected 'linear' or 'kernel'"),
        )),
    }
}

pub(crate) fn method(
    name: &str,
    stop_probability: f64,
    holdout_fraction: f64,
) -> Result<Method, CoreError> {
    match name {
        "split" => Ok(Method::Split),
        "random-stopping" => Ok(Method::Stopping {
            stop_probability,
            holdout_fraction,
        }),
        other => Err(CoreError::value(
            "method",
            format!("= {other:?}; expected 'split' or 'random-stopping'"),
        )),
    }
}

/// Runs a private selection among `candidates` (dicts of fit parameters, all of one
/// `kind`): builds it (every parameter refusal), calls `charge(plan)` with what it will
/// spend — the caller's ledger refuses there, before any noise is drawn on the data — and
/// runs dp-tune's selection with the GIL released. Returns `(models, index, plan,
/// noisy_mistakes)`.
#[pyfunction]
#[pyo3(signature = (
    x, y, n_classes, *, csr=None, n_features=None, kind, candidates, epsilon, method_name,
    stop_probability, holdout_fraction, seed, charge
))]
#[allow(clippy::too_many_arguments)]
fn private_search<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    n_classes: usize,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    kind: &str,
    candidates: &Bound<'py, PyList>,
    epsilon: f64,
    method_name: &str,
    stop_probability: f64,
    holdout_fraction: f64,
    seed: Option<u64>,
    charge: &Bound<'py, PyAny>,
) -> PyResult<(Models, usize, Bound<'py, PyDict>, Option<i128>)> {
    let (candidates, method, held, classes) = guarded(|| {
        Ok((
            self::candidates(kind, candidates)?,
            method(method_name, stop_probability, holdout_fraction)?,
            Held::new(x, csr.clone(), n_features)?,
            class_indices(y)?,
        ))
    })
    .map_err(|e| raise(py, e))?;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    let search = detached(py, || {
        prepare(
            rows,
            &classes,
            n_classes,
            &candidates,
            epsilon,
            method,
            randomness(seed),
        )
    })?;
    let plan = search.plan();
    let d = PyDict::new(py);
    d.set_item("epsilon", plan.epsilon)?;
    d.set_item("delta", plan.delta)?;
    d.set_item("step_epsilon", plan.step_epsilon)?;
    d.set_item("training_rows", plan.training_rows)?;
    d.set_item("held_out_rows", plan.held_out_rows)?;
    d.set_item("max_runs", plan.max_runs)?;
    d.set_item("score_epsilon", plan.score_epsilon)?;
    d.set_item("renyi", plan.renyi)?;
    d.set_item("regularization", plan.regularization.clone())?;
    charge.call1((d.clone(),))?;
    let released = detached(py, || search.run())?;
    Ok((released.models, released.index, d, released.noisy_mistakes))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(private_search, m)?)
}
