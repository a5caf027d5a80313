//! Streaming readers: a file in batches of at most `batch_rows` encoded rows, handed to a
//! sink as they are read, so memory beyond what the sink keeps is one batch plus the
//! reader's buffers.
//!
//! CSV goes through the `csv` crate (csv-core's parser, the one arrow-csv also uses): it
//! gives every record's physical line, so an error names the line a text editor shows even
//! after quoted line breaks, and hands fields over as bytes, so non-UTF-8 is reported per
//! cell. A gzip-compressed CSV (a `.gz` name, or gzip's magic bytes under any name) is
//! decompressed as it is read (flate2), never whole: lines and columns are the
//! decompressed text's. Parquet goes through parquet's arrow reader, in record batches of
//! at most `batch_rows` rows, reading only the columns the encoding needs.

use std::cell::Cell as CountCell;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;
use std::rc::Rc;

use arrow_array::ArrayRef;
use arrow_schema::DataType;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::arrow_cells::{arrow_numbers, arrow_text_cell};
use crate::encode::{Cell, CellError};
use crate::schema::ColumnKind;
use crate::{Encoder, Problem, ReadError, Schema};

/// Rows per batch unless the caller chooses: a few MB of encoded rows.
pub const DEFAULT_BATCH_ROWS: usize = 8192;

/// Encoded rows of consecutive records.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Sparse rows (increasing indices, in the unit ball).
    pub rows: Vec<Vec<(usize, f64)>>,
    /// Their labels (±1), when labels were asked for.
    pub labels: Option<Vec<f64>>,
}

/// How a file is read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Read and encode the label column (it must then be in the file). Without it the label
    /// column may be absent and is never read (prediction inputs).
    pub labels: bool,
    /// Most rows per batch (≥ 1).
    pub batch_rows: usize,
}

/// What a complete read saw: only public facts about the file's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadSummary {
    /// Data rows encoded.
    pub rows: usize,
}

/// Which reader a path gets: Parquet for a `.parquet` or `.pq` extension, CSV otherwise.
pub fn is_parquet(path: &Path) -> bool {
    matches!(
        path.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("parquet" | "pq")
    )
}

/// Reads `path` (CSV or Parquet, [`is_parquet`]) by `schema`, calling `progress(done,
/// total)` after each batch (bytes for CSV, rows for Parquet) and `sink` with each batch.
/// The first bad record stops the read with an error naming file, line (or row) and column;
/// an empty file is an error.
pub fn read_batches<E: From<ReadError>>(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    options: ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
    sink: &mut dyn FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    let options = ReadOptions {
        batch_rows: options.batch_rows.max(1),
        ..options
    };
    if is_parquet(path) {
        read_parquet(path, schema, encoder, options, progress, sink)
    } else {
        read_csv(path, schema, encoder, options, progress, sink)
    }
}

/// Reads a whole labelled file into a checked [`dp_erm::TrainingSet`] (rows in the unit
/// ball by construction, so nothing is clipped), with its row count. Each batch is appended
/// to compressed sparse row arrays and dropped, and the arrays become the set's storage:
/// the rows are held once while reading, not once as rows and again as the set.
pub fn read_training_set(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<dp_erm::TrainingSet, ReadError> {
    let (indptr, indices, values, labels) = read_csr(path, schema, encoder, progress)?;
    dp_erm::TrainingSet::builder(encoder.features())
        .csr_rows(indptr, indices, values)
        .labels(labels)
        .build()
        .map_err(|e| ReadError::Io {
            file: path.display().to_string(),
            why: format!("the encoded rows were refused: {e}"),
        })
}

/// A whole labelled file's encoded rows as CSR (sorted columns) and its labels (±1, or a
/// regression's targets): what both in-memory readers build from.
#[allow(clippy::type_complexity)]
fn read_csr(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Vec<usize>, Vec<u32>, Vec<f64>, Vec<f64>), ReadError> {
    let (mut indptr, mut indices, mut values, mut labels) =
        (vec![0usize], Vec::new(), Vec::new(), Vec::new());
    let options = ReadOptions {
        labels: true,
        batch_rows: DEFAULT_BATCH_ROWS,
    };
    read_batches::<ReadError>(path, schema, encoder, options, progress, &mut |batch| {
        for mut row in batch.rows {
            row.sort_unstable_by_key(|&(c, _)| c);
            for (c, v) in row {
                // A column index beyond u32 is refused by the builder's feature check.
                indices.push(u32::try_from(c).unwrap_or(u32::MAX));
                values.push(v);
            }
            indptr.push(indices.len());
        }
        labels.extend(batch.labels.unwrap_or_default());
        Ok(())
    })?;
    Ok((indptr, indices, values, labels))
}

/// Reads a whole file of a regression schema (one `type = "target"` column) into a
/// [`dp_erm::RegressionSet`]: the encoded rows and the targets, checked against the
/// schema's public bounds by the encoder (clamped where the column clips).
pub fn read_regression_set(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<dp_erm::RegressionSet, ReadError> {
    let refused = |why: String| ReadError::Io {
        file: path.display().to_string(),
        why,
    };
    let Some((lower, upper)) = schema.target_bounds() else {
        return Err(refused(
            "the schema has no target column (type = \"target\"): it is a classifier's".into(),
        ));
    };
    let (indptr, indices, values, targets) = read_csr(path, schema, encoder, progress)?;
    let scale = dp_erm::TargetScale::new(lower, upper)
        .map_err(|e| refused(format!("the target bounds were refused: {e}")))?;
    dp_erm::RegressionSet::new(
        dp_erm::TrainingSet::builder(encoder.features()).csr_rows(indptr, indices, values),
        &targets,
        scale,
        // The encoder already refused or clamped every target outside the bounds.
        dp_erm::TargetClipping::Refuse,
    )
    .map_err(|e| refused(format!("the encoded rows were refused: {e}")))
}

/// Reads a whole labelled file into [`dp_erm::Examples`] (sparse rows in the unit ball):
/// the input of [`dp_erm::Trainer`]s such as private tuning and kernel estimators.
pub fn read_examples(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<dp_erm::Examples, ReadError> {
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    let options = ReadOptions {
        labels: true,
        batch_rows: DEFAULT_BATCH_ROWS,
    };
    read_batches::<ReadError>(path, schema, encoder, options, progress, &mut |batch| {
        rows.extend(batch.rows);
        labels.extend(batch.labels.unwrap_or_default());
        Ok(())
    })?;
    dp_erm::Features::sparse(encoder.features(), rows)
        .and_then(|x| dp_erm::Examples::new(x, labels))
        .map_err(|e| ReadError::Io {
            file: path.display().to_string(),
            why: format!("the encoded rows were refused: {e}"),
        })
}

/// gzip's first two bytes (RFC 1952).
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Whether `path` is read as gzip-compressed CSV: a `.gz` extension, or gzip's magic bytes
/// at its start (a compressed file under a `.csv` name). A file that cannot be opened is
/// left for the reader to report. It opens the file to look: not for a pipe, whose bytes it
/// would consume (the reader itself decides on the bytes it reads).
pub fn is_gzip(path: &Path) -> bool {
    has_gz_extension(path) || starts_with_gzip_magic(path).unwrap_or(false)
}

fn has_gz_extension(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

fn starts_with_gzip_magic(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 2];
    let mut file = File::open(path)?;
    let mut read = 0;
    while read < 2 {
        match file.read(&mut head[read..])? {
            0 => return Ok(false),
            k => read += k,
        }
    }
    Ok(head == GZIP_MAGIC)
}

/// A reader that counts the bytes taken from the file (the compressed bytes, for a gzip
/// file), so progress is measured against the file's size either way.
struct Counted<R> {
    inner: R,
    count: Rc<CountCell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.count.set(self.count.get() + k as u64);
        Ok(k)
    }
}

/// The count of file bytes a stream has taken.
type FileBytes = Rc<CountCell<u64>>;

/// The CSV text of `path` as one forward stream: decompressed when it is gzip (a `.gz`
/// name, or gzip's magic bytes at its start, peeked from the stream itself), with the
/// counter of file bytes consumed and the size the file claims (0 for a pipe). Nothing is
/// read twice and nothing seeks, so a pipe or a FIFO reads as a file does.
pub(crate) fn csv_stream(path: &Path) -> std::io::Result<(Box<dyn Read>, FileBytes, u64)> {
    let handle = File::open(path)?;
    let size = handle.metadata()?.len();
    let count = Rc::new(CountCell::new(0));
    let mut counted = Counted {
        inner: handle,
        count: Rc::clone(&count),
    };
    let mut head = Vec::with_capacity(GZIP_MAGIC.len());
    (&mut counted)
        .take(GZIP_MAGIC.len() as u64)
        .read_to_end(&mut head)?;
    let gzip = has_gz_extension(path) || head == GZIP_MAGIC;
    let text = std::io::Cursor::new(head).chain(counted);
    let stream: Box<dyn Read> = if gzip {
        // Multi-member: `cat a.gz b.gz` is a valid gzip file of both.
        Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 16,
            text,
        )))
    } else {
        Box::new(text)
    };
    Ok((stream, count, size))
}

/// The text of the CSV file `path`, decompressed if it is gzip (as [`read_batches`] reads
/// it): for readers of its header only (`dpml schema init`). Works on pipes.
pub fn csv_text(path: &Path) -> Result<Box<dyn Read>, ReadError> {
    csv_stream(path)
        .map(|(stream, ..)| stream)
        .map_err(|e| ReadError::Io {
            file: file_name(path),
            why: e.to_string(),
        })
}

/// Opens the Parquet file `path`, refusing what is not a regular file: Parquet's footer is
/// at the end, so its reader seeks, which a pipe or a device cannot.
pub fn open_parquet(path: &Path) -> Result<File, ReadError> {
    let io = |why: String| ReadError::Io {
        file: file_name(path),
        why,
    };
    // Checked before opening: opening a FIFO waits for a writer.
    if !std::fs::metadata(path)
        .map_err(|e| io(e.to_string()))?
        .is_file()
    {
        return Err(io(
            "not a regular file (a pipe or a device): a Parquet file is read from its end, \
             which a stream cannot give; write the data to a file and name that file"
                .into(),
        ));
    }
    File::open(path).map_err(|e| io(e.to_string()))
}

pub(crate) fn file_name(path: &Path) -> String {
    path.display().to_string()
}

/// Accumulates rows into batches for the sink.
struct Batcher<'s, E> {
    batch: Batch,
    labels: bool,
    limit: usize,
    rows: usize,
    sink: &'s mut dyn FnMut(Batch) -> Result<(), E>,
}

impl<'s, E> Batcher<'s, E> {
    fn new(options: ReadOptions, sink: &'s mut dyn FnMut(Batch) -> Result<(), E>) -> Self {
        Self {
            batch: Self::empty(options.labels, options.batch_rows),
            labels: options.labels,
            limit: options.batch_rows,
            rows: 0,
            sink,
        }
    }

    fn empty(labels: bool, limit: usize) -> Batch {
        Batch {
            rows: Vec::with_capacity(limit.min(DEFAULT_BATCH_ROWS)),
            labels: labels.then(|| Vec::with_capacity(limit.min(DEFAULT_BATCH_ROWS))),
        }
    }

    /// Adds a row; returns whether a batch was handed to the sink.
    fn push(&mut self, row: Vec<(usize, f64)>, label: Option<f64>) -> Result<bool, E> {
        self.batch.rows.push(row);
        if let (Some(labels), Some(label)) = (self.batch.labels.as_mut(), label) {
            labels.push(label);
        }
        self.rows += 1;
        if self.batch.rows.len() >= self.limit {
            self.flush()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn flush(&mut self) -> Result<(), E> {
        if self.batch.rows.is_empty() {
            return Ok(());
        }
        let batch = std::mem::replace(&mut self.batch, Self::empty(self.labels, self.limit));
        (self.sink)(batch)
    }
}

/// For each schema column, the file field holding it (`None`: not read).
fn needed(schema: &Schema, column: usize, labels: bool) -> bool {
    match schema.columns[column].kind {
        ColumnKind::Ignore => false,
        ColumnKind::Label { .. } | ColumnKind::Target { .. } => labels,
        _ => true,
    }
}

fn read_csv<E: From<ReadError>>(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    options: ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
    sink: &mut dyn FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    let file = file_name(path);
    let io = |e: std::io::Error| ReadError::Io {
        file: file.clone(),
        why: e.to_string(),
    };
    let (stream, consumed, total) = csv_stream(path).map_err(io)?;
    let format = &schema.csv;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .delimiter(format.delimiter as u8)
        .comment(format.comment.map(|c| c as u8))
        .buffer_capacity(1 << 16)
        .from_reader(stream);
    let label = schema.label_index();
    let n = schema.columns.len();
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
    // field_of[k]: the file field of schema column k.
    let mut field_of: Vec<Option<usize>> = (0..n).map(Some).collect();
    let mut expected = n;
    let mut first = next(&mut reader, &mut record)?;
    if format.header {
        let Some(line) = first else {
            return Err(ReadError::Empty { file }.into());
        };
        let mut names = Vec::with_capacity(record.len());
        for (i, field) in record.iter().enumerate() {
            let name = std::str::from_utf8(field)
                .map_err(|_| cell_error(line, Some(format!("#{}", i + 1)), Problem::NotUtf8))?;
            // A byte-order mark some spreadsheets write before the first name.
            let name = if i == 0 {
                name.strip_prefix('\u{feff}').unwrap_or(name)
            } else {
                name
            };
            let name = if format.trim {
                name.trim_matches([' ', '\t'])
            } else {
                name
            };
            if names.contains(&name) {
                return Err(ReadError::Columns {
                    file,
                    why: format!("the header names column {name:?} twice (fields {})", i + 1),
                }
                .into());
            }
            if !schema.columns.iter().any(|c| c.name == name) {
                return Err(ReadError::Columns {
                    file,
                    why: format!(
                        "the header's column {name:?} (field {}) is not in the schema; declare \
                         it (type = \"ignore\" to skip it)",
                        i + 1
                    ),
                }
                .into());
            }
            names.push(name);
        }
        for (k, column) in schema.columns.iter().enumerate() {
            field_of[k] = names.iter().position(|&name| name == column.name);
            if field_of[k].is_none() && (k != label || options.labels) {
                return Err(ReadError::Columns {
                    file,
                    why: format!("the schema's column {:?} is not in the header", column.name),
                }
                .into());
            }
        }
        expected = names.len();
        first = next(&mut reader, &mut record)?;
    } else if let Some(line) = first {
        // Without a header the label column may be left out of prediction inputs.
        if record.len() + 1 == n && !options.labels {
            expected = n - 1;
            field_of[label] = None;
            for f in field_of.iter_mut().skip(label + 1) {
                *f = f.map(|i| i - 1);
            }
        } else if record.len() != n {
            return Err(cell_error(
                line,
                None,
                Problem::Ragged {
                    expected: n,
                    found: record.len(),
                },
            )
            .into());
        }
    }
    let Some(mut line) = first else {
        return Err(ReadError::Empty { file }.into());
    };
    let mut batcher = Batcher::new(options, sink);
    loop {
        if record.len() != expected {
            return Err(cell_error(
                line,
                None,
                Problem::Ragged {
                    expected,
                    found: record.len(),
                },
            )
            .into());
        }
        let encoded = encoder.encode(options.labels, |k| {
            Cell::Text(field_of[k].and_then(|i| record.get(i)).unwrap_or(b""))
        });
        let (row, label) = match encoded {
            Ok(ok) => ok,
            Err(CellError { column, problem }) => {
                // A record over several lines whose cell fails: an unclosed quote is the
                // likelier story than the cell itself.
                let breaks = line_breaks(&record);
                let problem = match breaks {
                    0 => problem,
                    _ => Problem::UnbalancedQuote {
                        last_line: line + breaks,
                    },
                };
                return Err(
                    cell_error(line, Some(schema.columns[column].name.clone()), problem).into(),
                );
            }
        };
        if batcher.push(row, label)? {
            progress(consumed.get().min(total), total);
        }
        match next(&mut reader, &mut record)? {
            Some(l) => line = l,
            None => break,
        }
    }
    batcher.flush()?;
    progress(total, total);
    Ok(ReadSummary { rows: batcher.rows })
}

/// The line breaks inside a record's cells (a record quoted over several lines). Line
/// breaks inside a quoted cell that encodes fine (an ignored column) are legal CSV.
pub(crate) fn line_breaks(record: &csv::ByteRecord) -> u64 {
    let last = record.len().saturating_sub(1);
    record
        .iter()
        .enumerate()
        // The line break that ends the file inside an open quote ends no line of its own.
        .map(|(i, f)| if i == last { f.trim_ascii_end() } else { f })
        .map(|f| f.iter().filter(|&&b| b == b'\n').count() as u64)
        .sum()
}

/// The next record and the line it starts on (blank and comment lines are skipped by the
/// parser; the record's own position counts them).
pub(crate) fn next_record(
    reader: &mut csv::Reader<Box<dyn Read>>,
    record: &mut csv::ByteRecord,
    file: &str,
) -> Result<Option<u64>, ReadError> {
    let before = reader.position().line();
    match reader.read_byte_record(record) {
        Ok(false) => Ok(None),
        Ok(true) => Ok(Some(record.position().map_or(before, csv::Position::line))),
        // A read failure (a corrupt gzip stream, a disk error) names where the text stopped.
        Err(e) => Err(ReadError::Io {
            file: file.to_owned(),
            why: format!("{e} (after line {before})"),
        }),
    }
}

/// A batch's column as the encoder reads it.
enum View<'a> {
    Numbers(Vec<Option<f64>>),
    Text(&'a ArrayRef),
    Absent,
}

fn is_number(t: &DataType) -> bool {
    t.is_integer() || matches!(t, DataType::Float32 | DataType::Float64)
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn read_parquet<E: From<ReadError>>(
    path: &Path,
    schema: &Schema,
    encoder: &Encoder,
    options: ReadOptions,
    progress: &mut dyn FnMut(u64, u64),
    sink: &mut dyn FnMut(Batch) -> Result<(), E>,
) -> Result<ReadSummary, E> {
    let file = file_name(path);
    let parquet_err = |e: parquet::errors::ParquetError| ReadError::Io {
        file: file.clone(),
        why: format!("not a readable Parquet file: {e}"),
    };
    let handle = open_parquet(path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(handle).map_err(parquet_err)?;
    let total = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    let fields = builder.schema().fields().clone();
    let label = schema.label_index();
    for (i, field) in fields.iter().enumerate() {
        if !schema.columns.iter().any(|c| c.name == *field.name()) {
            return Err(ReadError::Columns {
                file,
                why: format!(
                    "the file's column {:?} (field {}) is not in the schema; declare it \
                     (type = \"ignore\" to skip it)",
                    field.name(),
                    i + 1
                ),
            }
            .into());
        }
    }
    // Top-level field index of every column the encoding reads, with its type checked.
    let mut field_of: Vec<Option<usize>> = vec![None; schema.columns.len()];
    for (k, column) in schema.columns.iter().enumerate() {
        let position = fields.iter().position(|f| *f.name() == column.name);
        let Some(i) = position else {
            if k == label && !options.labels {
                continue;
            }
            return Err(ReadError::Columns {
                file,
                why: format!("the schema's column {:?} is not in the file", column.name),
            }
            .into());
        };
        if !needed(schema, k, options.labels) {
            continue;
        }
        let t = fields[i].data_type();
        let (ok, expected) = match column.kind {
            ColumnKind::Numeric { .. } => (is_number(t), "an integer or floating-point type"),
            _ => (
                is_text(t) || t.is_integer(),
                "a string type (or integer codes written as levels)",
            ),
        };
        if !ok {
            return Err(ReadError::Columns {
                file,
                why: format!(
                    "column {}: {}",
                    column.name,
                    Problem::WrongType {
                        expected,
                        found: t.to_string(),
                    }
                ),
            }
            .into());
        }
        field_of[k] = Some(i);
    }
    let roots: Vec<usize> = field_of.iter().flatten().copied().collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(options.batch_rows)
        .build()
        .map_err(parquet_err)?;
    let mut batcher = Batcher::new(options, sink);
    let mut row_base = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| ReadError::Io {
            file: file.clone(),
            why: format!("Parquet decoding failed after row {row_base}: {e}"),
        })?;
        let views: Vec<View<'_>> = schema
            .columns
            .iter()
            .zip(&field_of)
            .map(|(column, i)| match i {
                None => View::Absent,
                Some(_) => {
                    let array = batch
                        .column_by_name(&column.name)
                        .expect("projected columns are in the batch");
                    arrow_numbers(array).map_or(View::Text(array), View::Numbers)
                }
            })
            .collect();
        for r in 0..batch.num_rows() {
            let encoded = encoder.encode(options.labels, |k| match &views[k] {
                View::Numbers(values) => values[r].map_or(Cell::Null, Cell::Number),
                View::Text(array) => arrow_text_cell(array, r),
                View::Absent => Cell::Null,
            });
            let (row, label) =
                encoded.map_err(|CellError { column, problem }| ReadError::Cell {
                    file: file.clone(),
                    unit: "row",
                    line: row_base + r as u64 + 1,
                    column: Some(schema.columns[column].name.clone()),
                    problem,
                })?;
            batcher.push(row, label)?;
        }
        row_base += batch.num_rows() as u64;
        progress(row_base, total);
    }
    batcher.flush()?;
    if batcher.rows == 0 {
        return Err(ReadError::Empty { file }.into());
    }
    Ok(ReadSummary { rows: batcher.rows })
}
