//! `dpml._dpml.private_regression_search`: the regressors' private search
//! (`dpml.model_selection.PrivateRegressionSearch`).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use dp_erm::TargetScale;

use crate::error::guarded;
use crate::fit::Regularization;
use crate::py_common::{Held, detached, mechanism, raise, randomness, vector};
use crate::py_select::method;
use crate::regress::RegressionSpec;
use crate::rows::RowTransform;
use crate::select_regress::prepare_regression_search;

/// What a search returns to Python: the model file, the chosen index, the facts, and the
/// noisy held-out score (random stopping) or `None`.
type Released<'py> = (Bound<'py, PyBytes>, usize, Bound<'py, PyDict>, Option<f64>);

/// Selects Λ among `regularizations` by `method_name` ("split" or "random-stopping", dp-fit's
/// regression tuner) over Huber regressors (pure ε), at a total `epsilon`, calling
/// `charge(facts)` once every refusal is made and before anything is drawn. Returns
/// `(model file, chosen index, facts, noisy held-out score or None)`.
#[pyfunction]
#[pyo3(signature = (
    x, y, *, csr=None, n_features=None, regularizations, huber_threshold, target_lower,
    target_upper, clip_targets, epsilon, calibration, tol, data_norm, clip_rows, intercept,
    method_name, stop_probability, holdout_fraction, seed, charge
))]
#[allow(clippy::too_many_arguments)]
fn private_regression_search<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    y: &Bound<'py, PyAny>,
    csr: Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    n_features: Option<usize>,
    regularizations: Vec<f64>,
    huber_threshold: f64,
    target_lower: f64,
    target_upper: f64,
    clip_targets: bool,
    epsilon: f64,
    calibration: &str,
    tol: Option<f64>,
    data_norm: f64,
    clip_rows: bool,
    intercept: Option<f64>,
    method_name: &str,
    stop_probability: f64,
    holdout_fraction: f64,
    seed: Option<u64>,
    charge: &Bound<'py, PyAny>,
) -> PyResult<Released<'py>> {
    let (spec, held, targets, method) = guarded(|| {
        let spec = RegressionSpec {
            threshold: huber_threshold,
            mechanism: mechanism("objective", epsilon, 0.0, calibration)?,
            regularization: Regularization::Rule,
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
        let targets = vector::<f64>("y", "float64", y)?.as_array().to_vec();
        let method = method(method_name, stop_probability, holdout_fraction)?;
        Ok((
            spec,
            Held::new(x, csr.clone(), n_features)?,
            targets,
            method,
        ))
    })
    .map_err(|e| raise(py, e))?;
    let rows = held.rows().map_err(|e| raise(py, e))?;
    let search = detached(py, || {
        prepare_regression_search(
            rows,
            &targets,
            &spec,
            &regularizations,
            method,
            randomness(seed),
        )
    })?;
    let (training_rows, held_out_rows) = search.sizes();
    let tuner = search.tuner();
    let facts = PyDict::new(py);
    facts.set_item("epsilon", tuner.epsilon())?;
    facts.set_item("delta", tuner.delta())?;
    facts.set_item("step_epsilon", tuner.step_epsilon())?;
    facts.set_item("score_epsilon", tuner.selection_epsilon())?;
    facts.set_item("max_runs", tuner.max_runs())?;
    facts.set_item("training_rows", training_rows)?;
    facts.set_item("held_out_rows", held_out_rows)?;
    facts.set_item("regularization", regularizations.clone())?;
    charge.call1((facts.clone(),))?;
    let chosen = detached(py, || search.run())?;
    let file = detached(py, || Ok(chosen.model.to_bytes()?))?;
    Ok((
        PyBytes::new(py, &file),
        chosen.index,
        facts,
        chosen.noisy_score,
    ))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(private_regression_search, m)?)
}
