//! The one error type of this crate.

use std::fmt;
use std::path::{Path, PathBuf};

/// What can go wrong loading or generating a dataset.
#[derive(Debug)]
#[non_exhaustive]
pub enum DatasetError {
    /// The data directory does not exist or is not a folder.
    DataDirUnusable {
        /// The folder.
        dir: PathBuf,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A file is not in the data directory.
    Missing {
        /// The file.
        file: &'static str,
        /// Where it was looked for.
        dir: PathBuf,
    },
    /// Something other than a regular file (a folder, a device, a pipe) under a data file's
    /// name.
    NotAFile {
        /// The path.
        file: PathBuf,
    },
    /// A file's size is not the published one (checked before its SHA-256).
    SizeMismatch {
        /// The file.
        file: PathBuf,
        /// The published size in bytes.
        expected: u64,
        /// The file's size in bytes.
        found: u64,
    },
    /// A file's SHA-256 is not the published one.
    ChecksumMismatch {
        /// The file.
        file: PathBuf,
        /// The published SHA-256.
        expected: &'static str,
        /// The file's SHA-256.
        found: String,
    },
    /// A line could not be parsed.
    Parse {
        /// The file.
        file: &'static str,
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        why: String,
    },
    /// An operating-system call on `path` failed.
    Io {
        /// What was being done, e.g. "read".
        action: &'static str,
        /// The file or folder concerned.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A generator parameter is outside its valid range.
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// Its value, formatted with `{:?}` (so 1e-300 stays short).
        value: String,
        /// The valid range.
        requirement: &'static str,
    },
    /// A row index past the end of the dataset.
    IndexOutOfRange {
        /// The index asked for.
        index: usize,
        /// The number of rows.
        len: usize,
    },
    /// A row refers to a column past the feature count.
    ColumnOutOfRange {
        /// The row's index in the dataset.
        row: usize,
        /// The column it refers to.
        column: usize,
        /// The number of feature columns.
        features: usize,
    },
    /// A dataset whose parts disagree (its fields are public, so it can be built by hand).
    Inconsistent {
        /// The dataset's name.
        name: String,
        /// Number of rows.
        rows: usize,
        /// Number of labels.
        labels: usize,
    },
    /// A row of a dataset loaded without scaling ([`crate::Scaling::None`]) lies outside
    /// the unit ball: its training set is refused, never clipped.
    OutsideUnitBall {
        /// The dataset's name.
        name: String,
        /// The row's index in the dataset.
        row: usize,
        /// Its norm (rounded to nearest; it may show as 1 for a row just outside).
        norm: f64,
    },
    /// The rows did not form a valid training set.
    Erm(dp_erm::ErmError),
}

impl DatasetError {
    /// An I/O error on `path`; every OS error of this crate goes through here so that its
    /// message names the file or folder.
    pub(crate) fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self::Io {
            action,
            path,
            source,
        }
    }

    /// A parameter error; `value` is formatted with `{:?}`.
    pub(crate) fn parameter(
        name: &'static str,
        value: impl fmt::Debug,
        requirement: &'static str,
    ) -> Self {
        Self::InvalidParameter {
            name,
            value: format!("{value:?}"),
            requirement,
        }
    }
}

/// How to get the files, for error messages.
pub const HOW_TO_GET: &str = "get them with `cargo xtask datasets fetch` (downloads from the UCI \
    repository and verifies checksums), or `cargo xtask datasets fetch --from DIR` to copy from \
    a local mirror, or point DP_ML_DATA_DIR (or --data-dir) at a folder that holds them";

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DataDirUnusable { dir, why } => {
                write!(
                    f,
                    "data directory {} {why} (it should hold the UCI data files: {HOW_TO_GET})",
                    dir.display()
                )
            }
            Self::Missing { file, dir } => {
                write!(f, "{file} is not in {}: {HOW_TO_GET}", dir.display())
            }
            Self::NotAFile { file } => write!(
                f,
                "{} is not a regular file (a folder, a device or a pipe?): {HOW_TO_GET}",
                file.display()
            ),
            Self::SizeMismatch {
                file,
                expected,
                found,
            } => write!(
                f,
                "{} holds {found} bytes, the published file {expected} (corrupt or a different \
                 version; not read further): {HOW_TO_GET}",
                file.display()
            ),
            Self::ChecksumMismatch {
                file,
                expected,
                found,
            } => write!(
                f,
                "{} has SHA-256 {found}, expected {expected} (corrupt or a different version): {HOW_TO_GET}",
                file.display()
            ),
            Self::Parse { file, line, why } => write!(f, "{file}, line {line}: {why}"),
            Self::Io {
                action,
                path,
                source,
            } => write!(f, "cannot {action} {}: {source}", path.display()),
            Self::InvalidParameter {
                name,
                value,
                requirement,
            } => write!(f, "{name} = {value} is invalid: must be {requirement}"),
            Self::IndexOutOfRange { index, len } => write!(
                f,
                "row index {index} is out of range for a dataset of {len} rows"
            ),
            Self::ColumnOutOfRange {
                row,
                column,
                features,
            } => write!(
                f,
                "row {row} has a value in column {column}, but the dataset has {features} feature columns"
            ),
            Self::Inconsistent { name, rows, labels } => {
                write!(f, "dataset {name:?} has {rows} rows but {labels} labels")
            }
            Self::OutsideUnitBall { name, row, norm } => write!(
                f,
                "row {row} of {name:?} has norm {norm:?}, outside the unit ball that training \
                 needs: the dataset was loaded without scaling (Scaling::None), and its rows \
                 are not clipped; load it with Scaling::PublicBounds (privacy-free) or \
                 Scaling::PaperColumnMax (the papers' preprocessing), whose rows are clipped \
                 into the unit ball per row"
            ),
            Self::Erm(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DatasetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Erm(e) => Some(e),
            _ => None,
        }
    }
}

impl From<dp_erm::ErmError> for DatasetError {
    fn from(e: dp_erm::ErmError) -> Self {
        Self::Erm(e)
    }
}
