//! The one error type of this crate.

use std::fmt;
use std::path::PathBuf;

/// What can go wrong loading a dataset.
#[derive(Debug)]
#[non_exhaustive]
pub enum DatasetError {
    /// A file is not in the data directory.
    Missing {
        /// The file.
        file: &'static str,
        /// Where it was looked for.
        dir: PathBuf,
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
    /// Reading failed.
    Io(std::io::Error),
    /// The rows did not form a valid training set.
    Erm(dp_erm::ErmError),
}

/// How to get the files, for error messages.
pub const HOW_TO_GET: &str = "get them with `cargo xtask datasets fetch` (downloads from the UCI \
    repository and verifies checksums), or `cargo xtask datasets fetch --from DIR` to copy from \
    a local mirror, or point DP_ML_DATA_DIR (or --data-dir) at a folder that holds them";

impl fmt::Display for DatasetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { file, dir } => {
                write!(f, "{file} is not in {}: {HOW_TO_GET}", dir.display())
            }
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
            Self::Io(e) => write!(f, "{e}"),
            Self::Erm(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for DatasetError {}

impl From<std::io::Error> for DatasetError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<dp_erm::ErmError> for DatasetError {
    fn from(e: dp_erm::ErmError) -> Self {
        Self::Erm(e)
    }
}
