//! The describing pass over a file: CSV (plain or gzip) or Parquet, streamed record by
//! record into a [`Describer`] — one pass, memory for the reader's buffers and the counts.

use std::io::Read;
use std::path::Path;

use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::arrow_cells::{arrow_numbers, arrow_text_cell};
use crate::describe::{DescribeKind, DescribePlan, Describer};
use crate::encode::{Cell, CellError};
use crate::read::{csv_stream, file_name, line_breaks, next_record};
use crate::{DEFAULT_BATCH_ROWS, Problem, ReadError, is_parquet};

/// Reads `path` (CSV or Parquet, as [`crate::read_batches`] tells them apart) once and
/// counts it for `plan`, calling `progress(done, total)` now and then (bytes for CSV, rows
/// for Parquet). Errors name the file, line (or row) and column, never a cell's content;
/// nothing is released here (the counts are exact and stay in the [`Describer`]).
pub fn describe_file<'p>(
    path: &Path,
    plan: &'p DescribePlan,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Describer<'p>, ReadError> {
    let mut describer = plan.describer();
    if is_parquet(path) {
        describe_parquet(path, plan, &mut describer, progress)?;
    } else {
        describe_csv(path, plan, &mut describer, progress)?;
    }
    if describer.rows() == 0 {
        return Err(ReadError::Empty {
            file: file_name(path),
        });
    }
    Ok(describer)
}

fn describe_csv(
    path: &Path,
    plan: &DescribePlan,
    describer: &mut Describer<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), ReadError> {
    let file = file_name(path);
    let spec = plan.spec();
    let (stream, consumed, total) = csv_stream(path).map_err(|e| ReadError::Io {
        file: file.clone(),
        why: e.to_string(),
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(spec.csv.delimiter as u8)
        .comment(spec.csv.comment.map(|c| c as u8))
        .buffer_capacity(1 << 16)
        .from_reader(stream);
    let n = spec.columns.len();
    let cell_error = |line: u64, column: Option<String>, problem: Problem| ReadError::Cell {
        file: file.clone(),
        unit: "line",
        line,
        column,
        problem,
    };
    let mut record = csv::ByteRecord::new();
    let next = |reader: &mut csv::Reader<Box<dyn Read>>, record: &mut csv::ByteRecord| {
        next_record(reader, record, &file)
    };
    let mut field_of: Vec<usize> = (0..n).collect();
    let mut expected = n;
    let mut first = next(&mut reader, &mut record)?;
    if spec.csv.header {
        let Some(line) = first else {
            return Err(ReadError::Empty { file });
        };
        let mut names = Vec::with_capacity(record.len());
        for (i, field) in record.iter().enumerate() {
            let name = std::str::from_utf8(field)
                .map_err(|_| cell_error(line, Some(format!("#{}", i + 1)), Problem::NotUtf8))?;
            let name = if i == 0 {
                name.strip_prefix('\u{feff}').unwrap_or(name)
            } else {
                name
            };
            let name = if spec.csv.trim {
                name.trim_matches([' ', '\t'])
            } else {
                name
            };
            if names.contains(&name) {
                return Err(ReadError::Columns {
                    file,
                    why: format!("the header names column {name:?} twice (fields {})", i + 1),
                });
            }
            if !spec.columns.iter().any(|c| c.name == name) {
                return Err(ReadError::Columns {
                    file,
                    why: format!(
                        "the header's column {name:?} (field {}) was given no type; name it \
                         (numeric, categorical, the label, or ignored)",
                        i + 1
                    ),
                });
            }
            names.push(name);
        }
        for (k, column) in spec.columns.iter().enumerate() {
            field_of[k] = names
                .iter()
                .position(|&name| name == column.name)
                .ok_or_else(|| ReadError::Columns {
                    file: file.clone(),
                    why: format!(
                        "the {} column {:?} is not in the header",
                        if matches!(column.kind, DescribeKind::Label { .. }) {
                            "label"
                        } else {
                            "described"
                        },
                        column.name
                    ),
                })?;
        }
        expected = names.len();
        first = next(&mut reader, &mut record)?;
    }
    let Some(mut line) = first else {
        return Err(ReadError::Empty { file });
    };
    let mut since = 0usize;
    loop {
        if record.len() != expected {
            return Err(cell_error(
                line,
                None,
                Problem::Ragged {
                    expected,
                    found: record.len(),
                },
            ));
        }
        let counted = describer.add_record(|k| Cell::Text(record.get(field_of[k]).unwrap_or(b"")));
        if let Err(CellError { column, problem }) = counted {
            let problem = match line_breaks(&record) {
                0 => problem,
                breaks => Problem::UnbalancedQuote {
                    last_line: line + breaks,
                },
            };
            return Err(cell_error(
                line,
                Some(spec.columns[column].name.clone()),
                problem,
            ));
        }
        since += 1;
        if since >= DEFAULT_BATCH_ROWS {
            since = 0;
            progress(consumed.get().min(total), total);
        }
        match next(&mut reader, &mut record)? {
            Some(l) => line = l,
            None => break,
        }
    }
    progress(total, total);
    Ok(())
}

fn describe_parquet(
    path: &Path,
    plan: &DescribePlan,
    describer: &mut Describer<'_>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), ReadError> {
    let file = file_name(path);
    let spec = plan.spec();
    let parquet_err = |e: parquet::errors::ParquetError| ReadError::Io {
        file: file.clone(),
        why: format!("not a readable Parquet file: {e}"),
    };
    let handle = crate::open_parquet(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(handle).map_err(parquet_err)?;
    let total = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let fields = builder.schema().fields().clone();
    for (i, field) in fields.iter().enumerate() {
        if !spec.columns.iter().any(|c| c.name == *field.name()) {
            return Err(ReadError::Columns {
                file,
                why: format!(
                    "the file's column {:?} (field {}) was given no type; name it (numeric, \
                     categorical, the label, or ignored)",
                    field.name(),
                    i + 1
                ),
            });
        }
    }
    let mut roots = Vec::new();
    for (k, column) in spec.columns.iter().enumerate() {
        let Some(i) = fields.iter().position(|f| *f.name() == column.name) else {
            return Err(ReadError::Columns {
                file,
                why: format!("the column {:?} is not in the file", column.name),
            });
        };
        if describer.reads(k) {
            roots.push(i);
        }
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(DEFAULT_BATCH_ROWS)
        .build()
        .map_err(parquet_err)?;
    let mut row_base = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| ReadError::Io {
            file: file.clone(),
            why: format!("Parquet decoding failed after row {row_base}: {e}"),
        })?;
        let arrays: Vec<Option<&arrow_array::ArrayRef>> = spec
            .columns
            .iter()
            .enumerate()
            .map(|(k, c)| {
                describer
                    .reads(k)
                    .then(|| batch.column_by_name(&c.name))
                    .flatten()
            })
            .collect();
        let numbers: Vec<Option<Vec<Option<f64>>>> =
            arrays.iter().map(|a| a.and_then(arrow_numbers)).collect();
        for r in 0..batch.num_rows() {
            let counted = describer.add_record(|k| match (&numbers[k], arrays[k]) {
                (Some(values), _) => values[r].map_or(Cell::Null, Cell::Number),
                (None, Some(array)) => arrow_text_cell(array, r),
                (None, None) => Cell::Null,
            });
            counted.map_err(|CellError { column, problem }| ReadError::Cell {
                file: file.clone(),
                unit: "row",
                line: row_base + r as u64 + 1,
                column: Some(spec.columns[column].name.clone()),
                problem,
            })?;
        }
        row_base += batch.num_rows() as u64;
        progress(row_base, total);
    }
    Ok(())
}
