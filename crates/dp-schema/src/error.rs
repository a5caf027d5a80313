//! Errors: a schema that does not check (naming file, key and value) and a data file that
//! does not fit its schema (naming file, line and column, never the cell's content).

use std::fmt;

/// A schema file that cannot be used. The schema is public, so its values may be quoted.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaError {
    /// The file could not be read.
    Io {
        /// The schema file.
        file: String,
        /// The operating system's reason.
        why: String,
    },
    /// Not valid TOML, or a key of the wrong type or unknown (the parser's message).
    Syntax {
        /// The schema file.
        file: String,
        /// The TOML parser's message (it names the key and the position).
        why: String,
    },
    /// A key whose value breaks a rule of the schema.
    Invalid {
        /// The schema file.
        file: String,
        /// The key, as a path (`columns[2].lower`).
        key: String,
        /// Its value, as written (or `(absent)`).
        value: String,
        /// The rule it breaks.
        problem: String,
    },
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, why } => write!(f, "schema {file}: cannot read it: {why}"),
            Self::Syntax { file, why } => write!(f, "schema {file}: {}", why.trim_end()),
            Self::Invalid {
                file,
                key,
                value,
                problem,
            } => write!(f, "schema {file}: {key} = {value}: {problem}"),
        }
    }
}

impl std::error::Error for SchemaError {}

/// What is wrong with one cell or record. Deliberately without the cell's content: the data
/// are what the guarantees protect, and errors end up in logs (open the file at the line
/// named to see the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// A numeric column holds text that is not a number.
    NotANumber,
    /// A numeric column holds NaN or an infinity.
    NotFinite,
    /// A categorical value that is not among the schema's levels, under `unseen = "error"`.
    UnseenLevel,
    /// A missing value in a feature column whose policy is `missing = "error"`.
    Missing,
    /// A missing label (never allowed).
    MissingLabel,
    /// A label that is not among the schema's classes (nor an alias of one).
    NotAClass,
    /// A regression target outside its public bounds (and the column does not clip).
    OutsideTargetBounds,
    /// A record with the wrong number of fields.
    Ragged {
        /// Fields expected.
        expected: usize,
        /// Fields found.
        found: usize,
    },
    /// A record that runs over several lines: a quote opened and never closed.
    UnbalancedQuote {
        /// The line where the record ends.
        last_line: u64,
    },
    /// A Parquet column whose type cannot hold what the schema declares.
    WrongType {
        /// What the schema needs.
        expected: &'static str,
        /// The file's type.
        found: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotUtf8 => f.write_str("not valid UTF-8 text"),
            Self::NotANumber => f.write_str("not a number (the column is numeric)"),
            Self::NotFinite => f.write_str("not a finite number (NaN or infinite)"),
            Self::UnseenLevel => f.write_str(
                "a level the schema does not declare (the column's policy is unseen = \"error\"; \
                 declare the level, or choose unseen = \"ignore\" or \"other\")",
            ),
            Self::Missing => f.write_str(
                "a missing value, and the column's policy is missing = \"error\" (choose \
                 missing = \"zero\", or \"level\" for a categorical column, to encode it)",
            ),
            Self::MissingLabel => {
                f.write_str("a missing label (the label is never allowed to be missing)")
            }
            Self::OutsideTargetBounds => f.write_str(
                "a target outside the column's public bounds (widen them, never from the data, \
                 or set clip = true to clamp such targets)",
            ),
            Self::NotAClass => f.write_str(
                "a label that is not among the schema's classes (add an alias if it is another \
                 spelling of one)",
            ),
            Self::Ragged { expected, found } => {
                write!(f, "{found} fields where {expected} were expected")
            }
            Self::UnbalancedQuote { last_line } => write!(
                f,
                "the record runs on to line {last_line}: a double quote opened and never \
                 closed?"
            ),
            Self::WrongType { expected, found } => {
                write!(
                    f,
                    "the column has type {found}; the schema needs {expected}"
                )
            }
        }
    }
}

/// A data file that cannot be read as its schema says.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// The file could not be opened or read.
    Io {
        /// The data file.
        file: String,
        /// The operating system's (or the Parquet decoder's) reason.
        why: String,
    },
    /// One record or cell. `line` is 1-based and counts every line of the file (header,
    /// comments and blank lines included) for CSV; for Parquet it is the 1-based row.
    Cell {
        /// The data file.
        file: String,
        /// "line" (CSV) or "row" (Parquet).
        unit: &'static str,
        /// Where.
        line: u64,
        /// The column's name (from the schema or the header), if the problem is one cell's.
        column: Option<String>,
        /// What is wrong.
        problem: Problem,
    },
    /// The file's columns do not match the schema's.
    Columns {
        /// The data file.
        file: String,
        /// What does not match.
        why: String,
    },
    /// A row cache being written from the file failed (a full disk, a refused row).
    Cache {
        /// The cache file.
        file: String,
        /// What failed: the operating system's error, or the refusal.
        why: String,
    },
    /// No data rows (after the header, comments and blank lines).
    Empty {
        /// The data file.
        file: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { file, why } => write!(f, "{file}: cannot read it: {why}"),
            Self::Cell {
                file,
                unit,
                line,
                column,
                problem,
            } => match column {
                Some(column) => write!(f, "{file}, {unit} {line}, column {column}: {problem}"),
                None => write!(f, "{file}, {unit} {line}: {problem}"),
            },
            Self::Columns { file, why } => write!(f, "{file}: {why}"),
            Self::Cache { file, why } => write!(f, "the row cache {file}: {why}"),
            Self::Empty { file } => write!(
                f,
                "{file}: no data rows (after the header, comment and blank lines)"
            ),
        }
    }
}

impl std::error::Error for ReadError {}
