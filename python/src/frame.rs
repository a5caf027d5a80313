//! Data frames encoded by a public schema (`dpml.Schema`, over dp-schema): the columns of a
//! frame — Arrow arrays that arrived through the Arrow C stream interface, or plain columns
//! that Python extracted — handed one record at a time to dp-schema's `Encoder`, which alone
//! decides the encoding (so a model trained on the rows is exactly as private as the
//! mechanism says: see dp-schema's `# Privacy`).

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::DataType;
use dp_schema::{Cell, ColumnKind, Encoder, Schema, arrow_numbers, arrow_text_cell};

use crate::error::CoreError;

/// One column of a frame.
pub enum FrameColumn {
    /// Numbers; `None` is a missing value.
    Numbers(Vec<Option<f64>>),
    /// Text; `None` is a missing value.
    Texts(Vec<Option<String>>),
    /// An Arrow text array (Utf8, LargeUtf8, Utf8View), read in place.
    ArrowText(ArrayRef),
}

impl FrameColumn {
    fn len(&self) -> usize {
        match self {
            FrameColumn::Numbers(v) => v.len(),
            FrameColumn::Texts(v) => v.len(),
            FrameColumn::ArrowText(a) => a.len(),
        }
    }

    /// The number of rows.
    #[cfg_attr(not(feature = "python"), allow(dead_code))]
    pub(crate) fn rows(&self) -> usize {
        self.len()
    }

    pub(crate) fn cell(&self, i: usize) -> Cell<'_> {
        match self {
            FrameColumn::Numbers(v) => v[i].map_or(Cell::Null, Cell::Number),
            FrameColumn::Texts(v) => v[i]
                .as_deref()
                .map_or(Cell::Null, |t| Cell::Text(t.as_bytes())),
            FrameColumn::ArrowText(array) => arrow_text_cell(array, i),
        }
    }

    /// An Arrow array as a column: numbers (every integer and float type) or text; another
    /// type is an error naming the column and the type (not its values).
    pub fn from_arrow(name: &str, array: &ArrayRef) -> Result<Self, CoreError> {
        if let Some(numbers) = arrow_numbers(array) {
            return Ok(FrameColumn::Numbers(numbers));
        }
        match array.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Ok(FrameColumn::ArrowText(array.clone()))
            }
            other => Err(CoreError::type_error(
                format!("column {name:?}"),
                format!(
                    "has Arrow type {other}; the schema reads numbers (integers or floats) or \
                     text: {}",
                    remedy(other)
                ),
            )),
        }
    }
}

/// What to do with a column of Arrow type `t`, which the schema does not read.
fn remedy(t: &DataType) -> &'static str {
    match t {
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "cast the decimal column to float64 (Spark: double) first",
        DataType::Dictionary(..) => {
            "cast the categorical/dictionary column to strings first (pandas: .astype(str))"
        }
        _ => "cast the column to float64 (numbers) or to strings first",
    }
}

/// The encoded rows of a frame, appended batch by batch.
#[derive(Debug, Default)]
pub struct Encoded {
    /// Dense rows, `features` values each.
    pub values: Vec<f64>,
    /// Labels (±1) when asked for.
    pub labels: Vec<f64>,
    /// Rows so far.
    pub rows: usize,
}

/// Whether the encoding reads schema column `k` (ignored columns never; the label only
/// with labels).
fn read_by_encoding(schema: &Schema, k: usize, labels: bool) -> bool {
    match schema.columns[k].kind {
        ColumnKind::Ignore => false,
        ColumnKind::Label { .. } | ColumnKind::Target { .. } => labels,
        _ => true,
    }
}

/// Appends the records of `columns` (one entry per schema column, `None` where the frame
/// lacks it) to `out`. A missing column the encoding needs, columns of unequal lengths, or
/// a cell the schema refuses is an error naming the row and column, never the cell's value.
pub fn encode_columns(
    schema: &Schema,
    encoder: &Encoder,
    columns: &[Option<FrameColumn>],
    labels: bool,
    out: &mut Encoded,
) -> Result<(), CoreError> {
    let mut rows = None;
    for (k, column) in schema.columns.iter().enumerate() {
        if !read_by_encoding(schema, k, labels) {
            continue;
        }
        let Some(data) = &columns[k] else {
            return Err(CoreError::value(
                "frame",
                format!(
                    "has no column {:?}, which the schema encodes{}",
                    column.name,
                    if matches!(
                        column.kind,
                        ColumnKind::Label { .. } | ColumnKind::Target { .. }
                    ) {
                        " (the label: pass labels=False to encode features only)"
                    } else {
                        ""
                    }
                ),
            ));
        };
        match rows {
            None => rows = Some(data.len()),
            Some(n) if n != data.len() => {
                return Err(CoreError::value(
                    "frame",
                    format!(
                        "column {:?} has {} rows, the others {n}",
                        column.name,
                        data.len()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    let rows = rows.unwrap_or(0);
    let d = encoder.features();
    out.values.reserve(rows.saturating_mul(d));
    for i in 0..rows {
        let (row, label) = encoder
            .encode(labels, |k| {
                columns[k].as_ref().map_or(Cell::Null, |c| c.cell(i))
            })
            .map_err(|e| {
                CoreError::value(
                    "frame",
                    format!(
                        "row {}, column {:?}: {}",
                        out.rows + i,
                        schema.columns[e.column].name,
                        e.problem
                    ),
                )
            })?;
        let start = out.values.len();
        out.values.resize(start + d, 0.0);
        for (j, v) in row {
            out.values[start + j] = v;
        }
        if let Some(label) = label {
            out.labels.push(label);
        }
    }
    out.rows += rows;
    Ok(())
}

/// Appends an Arrow record batch, its columns found by the schema's names.
pub fn encode_batch(
    schema: &Schema,
    encoder: &Encoder,
    batch: &RecordBatch,
    labels: bool,
    out: &mut Encoded,
) -> Result<(), CoreError> {
    let columns = schema
        .columns
        .iter()
        .enumerate()
        .map(|(k, column)| {
            if !read_by_encoding(schema, k, labels) {
                return Ok(None);
            }
            match batch.schema().index_of(&column.name) {
                Ok(index) => FrameColumn::from_arrow(&column.name, batch.column(index)).map(Some),
                Err(_) => Ok(None),
            }
        })
        .collect::<Result<Vec<_>, CoreError>>()?;
    encode_columns(schema, encoder, &columns, labels, out)
}
