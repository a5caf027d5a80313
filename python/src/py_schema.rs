//! `dpml._dpml.Schema`: dp-schema's public schema, encoding frames that arrive through the
//! Arrow PyCapsule interface (`__arrow_c_stream__`: arrow-rs's C stream reader) or as
//! plain columns.

use std::ffi::CStr;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use dp_schema::{ColumnKind, Encoder, Schema};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyCapsuleMethods, PyList};

use crate::error::{CoreError, guarded};
use crate::frame::{Encoded, FrameColumn, encode_batch, encode_columns};
use crate::py_common::{detached, raise};

const STREAM: &CStr = c"arrow_array_stream";

/// A checked schema and its encoder.
#[pyclass(name = "Schema", module = "dpml._dpml", frozen)]
pub struct PySchema {
    schema: Schema,
    encoder: Encoder,
}

impl PySchema {
    fn new(schema: Schema) -> Self {
        let encoder = Encoder::new(&schema);
        PySchema { schema, encoder }
    }

    fn arrays<'py>(
        &self,
        py: Python<'py>,
        encoded: Encoded,
        labels: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        let d = self.encoder.features();
        let x = PyArray1::from_vec(py, encoded.values)
            .reshape([encoded.rows, d])?
            .into_any();
        let y = labels.then(|| PyArray1::from_vec(py, encoded.labels).into_any());
        Ok((x, y))
    }
}

#[pymethods]
impl PySchema {
    /// Reads and checks a schema file (TOML).
    #[staticmethod]
    fn load(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Self> {
        let schema = detached(py, || {
            Schema::load(&path).map_err(|e| CoreError::Schema(e.to_string()))
        })?;
        Ok(Self::new(schema))
    }

    /// Checks a schema given as TOML text.
    #[staticmethod]
    fn from_toml(py: Python<'_>, text: &str) -> PyResult<Self> {
        let schema = guarded(|| {
            Schema::from_toml(text, "<schema text>").map_err(|e| CoreError::Schema(e.to_string()))
        })
        .map_err(|e| raise(py, e))?;
        Ok(Self::new(schema))
    }

    /// The encoded features' names.
    #[getter]
    fn feature_names(&self) -> Vec<String> {
        self.encoder.feature_names().to_vec()
    }

    /// The group of each encoded feature (one-hot columns share one; numeric columns and
    /// the intercept have their own): what the estimators' `feature_groups` take.
    #[getter]
    fn feature_groups(&self) -> Vec<usize> {
        let groups = self.encoder.groups();
        (0..groups.dim()).map(|j| groups.group(j)).collect()
    }

    /// SHA-256 of the schema's canonical form.
    #[getter]
    fn hash(&self) -> String {
        self.schema.hash()
    }

    /// `(name, kind)` of every column: kind 'numeric', 'categorical', 'label', 'target'
    /// (a regression's) or 'ignore'.
    #[getter]
    fn columns(&self) -> Vec<(String, &'static str)> {
        self.schema
            .columns
            .iter()
            .map(|c| {
                let kind = match c.kind {
                    ColumnKind::Numeric { .. } => "numeric",
                    ColumnKind::Categorical { .. } => "categorical",
                    ColumnKind::Label { .. } => "label",
                    ColumnKind::Target { .. } => "target",
                    ColumnKind::Ignore => "ignore",
                };
                (c.name.clone(), kind)
            })
            .collect()
    }

    /// The label's classes and its positive class (encoded +1; every other class −1).
    #[getter]
    fn label(&self) -> (String, Vec<String>, String) {
        let column = &self.schema.columns[self.schema.label_index()];
        match &column.kind {
            ColumnKind::Label {
                classes, positive, ..
            } => (column.name.clone(), classes.clone(), positive.clone()),
            // A checked schema's label column is a label.
            _ => (column.name.clone(), Vec::new(), String::new()),
        }
    }

    /// A regression schema's target column (`type = "target"`): `(name, lower, upper,
    /// clip)`, its public bounds and whether a value outside them is clamped rather than
    /// refused; None for a classifier's schema (a label with classes).
    #[getter]
    fn target(&self) -> Option<(String, f64, f64, bool)> {
        self.schema.columns.iter().find_map(|c| match c.kind {
            ColumnKind::Target { lower, upper, clip } => Some((c.name.clone(), lower, upper, clip)),
            _ => None,
        })
    }

    /// Encodes the frame behind an Arrow C stream capsule (`obj.__arrow_c_stream__()`):
    /// `(X, y)`, X dense `n × d` float64, y ±1 (or None without labels).
    fn encode_stream<'py>(
        &self,
        py: Python<'py>,
        capsule: &Bound<'py, PyAny>,
        labels: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        let reader = stream_reader(py, capsule)?;
        // With the GIL held: the stream's producer may be Python code that needs it.
        let encoded = guarded(|| {
            let mut out = Encoded::default();
            for batch in reader {
                let batch = batch
                    .map_err(|e| CoreError::Schema(format!("the Arrow stream failed: {e}")))?;
                encode_batch(&self.schema, &self.encoder, &batch, labels, &mut out)?;
            }
            Ok(out)
        })
        .map_err(|e| raise(py, e))?;
        self.arrays(py, encoded, labels)
    }

    /// Encodes plain columns, one entry per schema column: None (absent), a float64 array
    /// (NaN is a missing value) or a list of str/None.
    fn encode_columns<'py>(
        &self,
        py: Python<'py>,
        columns: &Bound<'py, PyList>,
        labels: bool,
    ) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
        if columns.len() != self.schema.columns.len() {
            return Err(raise(
                py,
                CoreError::value(
                    "columns",
                    format!(
                        "has {} entries for {} schema columns",
                        columns.len(),
                        self.schema.columns.len()
                    ),
                ),
            ));
        }
        let mut data = Vec::with_capacity(columns.len());
        for (k, item) in columns.iter().enumerate() {
            let name = &self.schema.columns[k].name;
            data.push(if item.is_none() {
                None
            } else if let Ok(array) = item.extract::<numpy::PyReadonlyArray1<'_, f64>>() {
                let values = array.as_array();
                Some(FrameColumn::Numbers(
                    values.iter().map(|&v| (!v.is_nan()).then_some(v)).collect(),
                ))
            } else if let Ok(texts) = item.extract::<Vec<Option<String>>>() {
                Some(FrameColumn::Texts(texts))
            } else {
                return Err(raise(
                    py,
                    CoreError::type_error(
                        format!("column {name:?}"),
                        "must be a float64 array or a list of str/None",
                    ),
                ));
            });
        }
        let encoded = detached(py, || {
            let mut out = Encoded::default();
            encode_columns(&self.schema, &self.encoder, &data, labels, &mut out)?;
            Ok(out)
        })?;
        self.arrays(py, encoded, labels)
    }

    /// The number of encoded features.
    #[getter]
    fn n_features(&self) -> usize {
        self.encoder.features()
    }
}

/// The record batches behind an Arrow C stream capsule (`obj.__arrow_c_stream__()`).
pub(crate) fn stream_reader(
    py: Python<'_>,
    capsule: &Bound<'_, PyAny>,
) -> PyResult<RecordBatchStreamReader> {
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        raise(
            py,
            CoreError::type_error(
                "frame.__arrow_c_stream__()",
                "must return a PyCapsule (the Arrow PyCapsule interface)",
            ),
        )
    })?;
    let pointer = capsule.pointer_checked(Some(STREAM)).map_err(|_| {
        raise(
            py,
            CoreError::type_error(
                "frame.__arrow_c_stream__()",
                "must return a capsule named 'arrow_array_stream'",
            ),
        )
    })?;
    // SAFETY: the capsule, checked by name, holds an `ArrowArrayStream` (the Arrow C
    // stream interface, whose layout `FFI_ArrowArrayStream` mirrors). `from_raw` moves
    // the stream out and leaves a released one behind, which the capsule's destructor
    // then ignores, as the PyCapsule interface specifies.
    let reader = unsafe {
        RecordBatchStreamReader::from_raw(pointer.as_ptr().cast::<FFI_ArrowArrayStream>())
    }
    .map_err(|e| raise(py, CoreError::Schema(format!("the Arrow stream: {e}"))))?;
    Ok(reader)
}

impl PySchema {
    /// The checked schema.
    pub(crate) fn schema(&self) -> &Schema {
        &self.schema
    }

    /// Its encoder.
    pub(crate) fn encoder(&self) -> &Encoder {
        &self.encoder
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySchema>()
}
