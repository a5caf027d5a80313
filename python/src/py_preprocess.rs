//! `dpml.preprocessing`'s core: dp-schema's column-only release (`DescribePlan::columns`,
//! `Describer::release_columns`) over plain columns Python extracted. The mechanisms, the
//! split of ε and δ and the order of the draws are the describe recipe's, the same as
//! `dpml.Schema.from_data`'s; this module only converts.

use dp_schema::{
    CsvFormat, DescribeColumn, DescribeError, DescribeKind, DescribePlan, DescribeSpec,
    NumericMissing, Released,
};
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::error::CoreError;
use crate::fit::{Randomness, drawing, generator};
use crate::py_common::{detached, raise};
use crate::py_describe::{OutlookOut, count, outlook_out, plain_columns, with_outlook};

/// One column's release as Python receives it: `(kind, bounds, levels)`, kind one of
/// "bounds" (bounds = `[lower, upper]`), "levels", "dropped", "ignored".
type ColumnOut = (&'static str, Vec<f64>, Vec<String>);

/// A release as Python receives it: per column its release, and per released fact
/// `(column, fact, mechanism, ε, δ, released value as text)`.
type Releases = (
    Vec<ColumnOut>,
    Vec<(String, String, String, f64, f64, String)>,
    OutlookOut,
);

fn refusal(e: DescribeError) -> CoreError {
    match e {
        DescribeError::Refused(why) => CoreError::value("dpml.preprocessing:", why),
        DescribeError::Release(why) => CoreError::Schema(why),
    }
}

/// A checked column-only plan: refusals come from building it, before any charge.
#[pyclass(name = "ColumnPlan", module = "dpml._dpml", frozen)]
pub struct PyColumnPlan {
    plan: DescribePlan,
}

#[pymethods]
impl PyColumnPlan {
    /// Checks the spec and fixes the split: `columns` is `(name, kind, candidates)` per
    /// column, kind one of "numeric", "categorical", "ignore" (refusals as
    /// `DPMLValueError`). Missing numeric cells are refused when counted.
    #[staticmethod]
    fn build(
        py: Python<'_>,
        columns: Vec<(String, String, Option<Vec<String>>)>,
        epsilon: f64,
        delta: f64,
    ) -> PyResult<Self> {
        let plan = detached(py, || {
            let mut described = Vec::with_capacity(columns.len());
            for (name, kind, candidates) in columns {
                let kind = match kind.as_str() {
                    "numeric" => DescribeKind::Numeric {
                        missing: NumericMissing::Error,
                    },
                    "categorical" => DescribeKind::Categorical { candidates },
                    "ignore" => DescribeKind::Ignore,
                    other => {
                        return Err(CoreError::value(
                            "kind",
                            format!("{other:?}: numeric, categorical or ignore"),
                        ));
                    }
                };
                described.push(DescribeColumn { name, kind });
            }
            // Python passes every cell as a number or as text already: no missing tokens.
            let csv = CsvFormat {
                header: true,
                delimiter: ',',
                comment: None,
                trim: false,
                missing: Vec::new(),
            };
            DescribePlan::columns(DescribeSpec::new(described, csv, epsilon, delta))
                .map_err(refusal)
        })?;
        Ok(Self { plan })
    }

    /// `(epsilon, delta)`: what the release spends in all.
    #[getter]
    fn charge(&self) -> (f64, f64) {
        self.plan.charge()
    }

    /// Releases the facts of plain columns, one entry per spec column: None (ignored), a
    /// float64 array (NaN missing) or a list of str/None. An error before any noise is
    /// drawn is a `DPMLValueError` (refund the charge); after, a `DPMLError` (the spend
    /// stands).
    #[pyo3(signature = (columns, seed = None))]
    fn release<'py>(
        &self,
        py: Python<'py>,
        columns: &Bound<'py, PyList>,
        seed: Option<u64>,
    ) -> PyResult<Releases> {
        let names: Vec<String> = self
            .plan
            .spec()
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect();
        let data = plain_columns(columns, &names).map_err(|e| raise(py, e))?;
        let mut describer = self.plan.describer();
        detached(py, || count(&mut describer, &names, &data, 0))?;
        let randomness = seed.map_or(Randomness::Secure, Randomness::InsecureSeed);
        let outlook = outlook_out(&self.plan, describer.rows());
        let released = detached(py, || {
            let mut rng = generator(randomness)?;
            drawing(rng.as_mut(), |watched| {
                describer
                    .release_columns(watched)
                    .map_err(|e| refusal(with_outlook(e, &outlook)))
            })
        })?;
        let columns = released
            .columns
            .into_iter()
            .map(|(_, r)| match r {
                Released::Bounds { lower, upper } => ("bounds", vec![lower, upper], Vec::new()),
                Released::Levels(levels) => ("levels", Vec::new(), levels),
                Released::Dropped => ("dropped", Vec::new(), Vec::new()),
                Released::Ignored => ("ignored", Vec::new(), Vec::new()),
            })
            .collect();
        let facts = released
            .facts
            .iter()
            .map(|f| {
                (
                    f.column.clone(),
                    f.what.to_owned(),
                    f.mechanism.name().to_owned(),
                    f.epsilon,
                    f.delta,
                    f.outcome.clone(),
                )
            })
            .collect();
        Ok((columns, facts, outlook))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyColumnPlan>()
}
