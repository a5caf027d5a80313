//! `dpml.Schema.from_data`'s core: dp-schema's private description (`DescribePlan`,
//! `Describer`) over a frame's columns — Arrow arrays from the C stream interface, or plain
//! columns Python extracted, or the exact counts of a Spark DataFrame's partitions
//! (`count_stream` on each executor, `describe_counts` on the driver). The mechanisms, the
//! split of ε and δ and the written schema are dp-schema's, the same as `dpml schema init
//! --private`'s; this module only converts.

use std::collections::BTreeMap;

use arrow_array::RecordBatchReader;
use dp_schema::{
    CsvFormat, DescribeColumn, DescribeCounts, DescribeError, DescribeKind, DescribePlan,
    DescribeSpec, Describer, NumericMissing, RowScaling,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::error::CoreError;
use crate::error::guarded;
use crate::fit::{Randomness, drawing, generator};
use crate::frame::FrameColumn;
use crate::py_common::{detached, raise};
use crate::py_schema::stream_reader;

/// A description as Python receives it: the schema's TOML text, per released fact
/// `(column, fact, mechanism, ε, δ, released value as text)`, and the outlook.
type Described = (
    String,
    Vec<(String, String, String, f64, f64, String)>,
    OutlookOut,
);

/// A description's a-priori outlook (dp-schema's `DescribeOutlook`) as Python receives it:
/// `(rows, records_needed, share_needed, at_risk, hopeless, warning)`.
pub(crate) type OutlookOut = (u64, u64, f64, bool, bool, Option<String>);

/// The outlook of `plan` over `rows` records (public facts only).
pub(crate) fn outlook_out(plan: &DescribePlan, rows: u64) -> OutlookOut {
    let o = plan.outlook(rows);
    (
        o.rows,
        o.records_needed,
        o.share_needed,
        o.at_risk,
        o.hopeless,
        o.warning,
    )
}

/// A release that failed, with the outlook's warning (which Python cannot raise when the
/// release itself fails) appended.
pub(crate) fn with_outlook(e: DescribeError, outlook: &OutlookOut) -> DescribeError {
    match (e, &outlook.5) {
        (DescribeError::Release(why), Some(warning)) => {
            DescribeError::Release(format!("{why} (the outlook had warned: {warning})"))
        }
        (e, _) => e,
    }
}

fn refusal(e: DescribeError) -> CoreError {
    match e {
        DescribeError::Refused(why) => CoreError::value("Schema.from_data", why),
        DescribeError::Release(why) => CoreError::Schema(why),
    }
}

/// The spec from Python's arguments: `columns` is `(name, kind, candidates)` per column in
/// the frame's order, kind one of "numeric", "categorical", "label", "ignore".
#[allow(clippy::too_many_arguments)]
pub(crate) fn spec(
    columns: Vec<(String, String, Option<Vec<String>>)>,
    positive: String,
    classes: Option<Vec<String>>,
    aliases: BTreeMap<String, String>,
    missing: Vec<String>,
    row_scaling: &str,
    intercept: bool,
    numeric_missing_zero: bool,
    epsilon: f64,
    delta: f64,
) -> Result<DescribePlan, CoreError> {
    let mut described = Vec::with_capacity(columns.len());
    for (name, kind, candidates) in columns {
        let kind = match kind.as_str() {
            "numeric" => DescribeKind::Numeric {
                missing: if numeric_missing_zero {
                    NumericMissing::Zero
                } else {
                    NumericMissing::Error
                },
            },
            "categorical" => DescribeKind::Categorical { candidates },
            "label" => DescribeKind::Label {
                positive: positive.clone(),
                classes: classes.clone(),
                aliases: aliases.clone(),
            },
            "ignore" => DescribeKind::Ignore,
            other => {
                return Err(CoreError::value(
                    "kind",
                    format!("{other:?}: numeric, categorical, label or ignore"),
                ));
            }
        };
        described.push(DescribeColumn { name, kind });
    }
    let row_scaling = match row_scaling {
        "unit_norm" => RowScaling::UnitNorm,
        "attributes" => RowScaling::Attributes,
        other => {
            return Err(CoreError::value(
                "row_scaling",
                format!("= {other:?}: must be \"unit_norm\" or \"attributes\""),
            ));
        }
    };
    // Frames carry their own names and types: the CSV format only states the missing-value
    // tokens of text cells (and is what the written schema says for CSV files).
    let csv = CsvFormat {
        header: true,
        delimiter: ',',
        comment: None,
        trim: true,
        missing,
    };
    DescribePlan::new(DescribeSpec {
        row_scaling,
        intercept,
        ..DescribeSpec::new(described, csv, epsilon, delta)
    })
    .map_err(refusal)
}

/// Counts `columns` (one per spec column, `None` for ignored ones) into `describer`.
pub(crate) fn count(
    describer: &mut Describer<'_>,
    names: &[String],
    columns: &[Option<FrameColumn>],
    row_base: usize,
) -> Result<(), CoreError> {
    let rows = columns
        .iter()
        .flatten()
        .map(FrameColumn::rows)
        .next()
        .unwrap_or(0);
    for r in 0..rows {
        describer
            .add_record(|k| {
                columns[k]
                    .as_ref()
                    .map_or(dp_schema::Cell::Null, |c| c.cell(r))
            })
            .map_err(|e| {
                CoreError::Schema(format!(
                    "row {}, column {}: {}",
                    row_base + r + 1,
                    names[e.column],
                    e.problem
                ))
            })?;
    }
    Ok(())
}

/// A checked description plan (`dpml.Schema.from_data`): refusals come from building it,
/// before any charge.
#[pyclass(name = "DescribePlan", module = "dpml._dpml", frozen)]
pub struct PyDescribePlan {
    plan: DescribePlan,
}

impl PyDescribePlan {
    /// Counts the frame behind an Arrow C stream capsule into `describer`; each column the
    /// plan reads must be in it.
    fn count_capsule(
        &self,
        py: Python<'_>,
        describer: &mut Describer<'_>,
        capsule: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let reader = stream_reader(py, capsule)?;
        let names = self.names();
        let schema = reader.schema();
        for (k, name) in names.iter().enumerate() {
            if describer.reads(k) && schema.column_with_name(name).is_none() {
                return Err(raise(
                    py,
                    CoreError::value(
                        "frame",
                        format!("has no column {name:?} (each described column must be in it)"),
                    ),
                ));
            }
        }
        guarded(|| {
            let mut base = 0usize;
            for batch in reader {
                let batch = batch
                    .map_err(|e| CoreError::Schema(format!("the Arrow stream failed: {e}")))?;
                let mut columns = Vec::with_capacity(names.len());
                for (k, name) in names.iter().enumerate() {
                    columns.push(if describer.reads(k) {
                        let array = batch.column_by_name(name).ok_or_else(|| {
                            CoreError::value("frame", format!("has no column {name:?}"))
                        })?;
                        Some(FrameColumn::from_arrow(name, array)?)
                    } else {
                        None
                    });
                }
                count(describer, &names, &columns, base)?;
                base += batch.num_rows();
            }
            Ok(())
        })
        .map_err(|e| raise(py, e))
    }

    fn names(&self) -> Vec<String> {
        self.plan
            .spec()
            .columns
            .iter()
            .map(|c| c.name.clone())
            .collect()
    }

    fn finish(
        &self,
        py: Python<'_>,
        describer: Describer<'_>,
        seed: Option<u64>,
    ) -> PyResult<Described> {
        let randomness = seed.map_or(Randomness::Secure, Randomness::InsecureSeed);
        let outlook = outlook_out(&self.plan, describer.rows());
        let description = detached(py, || {
            let mut rng = generator(randomness)?;
            drawing(rng.as_mut(), |watched| {
                describer
                    .release(watched)
                    .map_err(|e| refusal(with_outlook(e, &outlook)))
            })
        })?;
        let facts = description
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
        Ok((description.text, facts, outlook))
    }
}

#[pymethods]
impl PyDescribePlan {
    /// Checks the spec and fixes the split (refusals as `DPMLValueError`).
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (columns, positive, classes, aliases, missing, row_scaling, intercept, numeric_missing_zero, epsilon, delta))]
    fn build(
        py: Python<'_>,
        columns: Vec<(String, String, Option<Vec<String>>)>,
        positive: String,
        classes: Option<Vec<String>>,
        aliases: BTreeMap<String, String>,
        missing: Vec<String>,
        row_scaling: String,
        intercept: bool,
        numeric_missing_zero: bool,
        epsilon: f64,
        delta: f64,
    ) -> PyResult<Self> {
        let plan = detached(py, || {
            spec(
                columns,
                positive,
                classes,
                aliases,
                missing,
                &row_scaling,
                intercept,
                numeric_missing_zero,
                epsilon,
                delta,
            )
        })?;
        Ok(Self { plan })
    }

    /// `(epsilon, delta)`: what the description spends in all.
    #[getter]
    fn charge(&self) -> (f64, f64) {
        self.plan.charge()
    }

    /// Describes the frame behind an Arrow C stream capsule: `(toml_text, facts)`. An error
    /// before any noise is drawn is a `DPMLValueError` (refund the charge); after, a
    /// `DPMLError` (the spend stands).
    #[pyo3(signature = (capsule, seed = None))]
    fn describe_stream<'py>(
        &self,
        py: Python<'py>,
        capsule: &Bound<'py, PyAny>,
        seed: Option<u64>,
    ) -> PyResult<Described> {
        let mut describer = self.plan.describer();
        self.count_capsule(py, &mut describer, capsule)?;
        self.finish(py, describer, seed)
    }

    /// The exact counts of the records behind an Arrow C stream capsule (one block of a
    /// frame: a Spark partition), as bytes for `describe_counts`; rows in errors are
    /// numbered from the stream's first. **Not private**: the counts may travel only from
    /// an executor to its driver, never be released or shown.
    fn count_stream<'py>(
        &self,
        py: Python<'py>,
        capsule: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let mut describer = self.plan.describer();
        self.count_capsule(py, &mut describer, capsule)?;
        let bytes = describer
            .counts()
            .to_bytes()
            .map_err(|e| raise(py, refusal(e)))?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Describes the records of every block whose counts (`count_stream`'s bytes, in any
    /// order) are given: exactly what `describe_stream` releases over their records
    /// together, for the same seed. Counts of another plan, or bytes that are no counts,
    /// are a `DPMLValueError` before any noise is drawn (refund the charge).
    #[pyo3(signature = (counts, seed = None))]
    fn describe_counts(
        &self,
        py: Python<'_>,
        counts: Vec<Vec<u8>>,
        seed: Option<u64>,
    ) -> PyResult<Described> {
        let mut describer = self.plan.describer();
        detached(py, || {
            for bytes in &counts {
                let block = DescribeCounts::from_bytes(bytes).map_err(refusal)?;
                describer.merge(block).map_err(refusal)?;
            }
            Ok(())
        })?;
        self.finish(py, describer, seed)
    }

    /// Describes plain columns, one entry per spec column: None (ignored), a float64 array
    /// (NaN missing) or a list of str/None.
    #[pyo3(signature = (columns, seed = None))]
    fn describe_columns<'py>(
        &self,
        py: Python<'py>,
        columns: &Bound<'py, PyList>,
        seed: Option<u64>,
    ) -> PyResult<Described> {
        let names = self.names();
        let data = plain_columns(columns, &names).map_err(|e| raise(py, e))?;
        let mut describer = self.plan.describer();
        detached(py, || count(&mut describer, &names, &data, 0))?;
        self.finish(py, describer, seed)
    }
}

/// Plain columns from Python, one entry per spec column (`names`): None (ignored), a
/// float64 array (NaN missing) or a list of str/None.
pub(crate) fn plain_columns(
    columns: &Bound<'_, PyList>,
    names: &[String],
) -> Result<Vec<Option<FrameColumn>>, CoreError> {
    if columns.len() != names.len() {
        return Err(CoreError::value(
            "columns",
            format!("has {} entries for {} columns", columns.len(), names.len()),
        ));
    }
    let mut data = Vec::with_capacity(columns.len());
    for (k, item) in columns.iter().enumerate() {
        data.push(if item.is_none() {
            None
        } else if let Ok(array) = item.extract::<numpy::PyReadonlyArray1<'_, f64>>() {
            Some(FrameColumn::Numbers(
                array
                    .as_array()
                    .iter()
                    .map(|&v| (!v.is_nan()).then_some(v))
                    .collect(),
            ))
        } else if let Ok(texts) = item.extract::<Vec<Option<String>>>() {
            Some(FrameColumn::Texts(texts))
        } else {
            return Err(CoreError::type_error(
                format!("column {:?}", names[k]),
                "must be a float64 array or a list of str/None",
            ));
        });
    }
    Ok(data)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDescribePlan>()
}
