//! # dp-datasets
//!
//! The experiments' data: UCI Adult and the KDD Cup 1999 10% file, read from a data
//! directory and verified by SHA-256 (the files are never part of this repository), with
//! the papers' preprocessing; and synthetic generators (nested balls, noisy linear).
//!
//! The data directory is `--data-dir` (passed to [`DataDir::resolve`]), else
//! `$DP_ML_DATA_DIR`, else `data/` in the workspace (git-ignored). A missing or corrupt file
//! is an error that says how to get it (`cargo xtask datasets fetch`).
//!
//! Privacy note: the papers scale each column by its maximum over the whole file
//! ([`Scaling::PaperColumnMax`]), which reads the data and is not private; the reproduction
//! keeps it to match them. [`Scaling::PublicBounds`] (Adult) divides by bounds declared in
//! advance instead. Rows are clipped into the unit ball per row, which is private.
//!
//! ```
//! use dp_datasets::{DataDir, Scaling, load_adult, nested_balls};
//!
//! # fn main() -> Result<(), dp_datasets::DatasetError> {
//! // Synthetic data needs no files: the SVM paper's nested balls in ℝ⁵.
//! let data = nested_balls(1_000, 7)?;
//! assert_eq!((data.len(), data.features()), (1_000, 5));
//! // A checked training set (rows in the unit ball, labels ±1) of the first 800 rows.
//! let train = data.training_set(&(0..800).collect::<Vec<_>>())?;
//! assert_eq!(train.len(), 800);
//! // The UCI files are read from a data directory and verified; without them, an error
//! // that says how to get them.
//! let missing = load_adult(&DataDir::at("no-such-folder"), Scaling::PaperColumnMax);
//! assert!(missing.unwrap_err().to_string().contains("cargo xtask datasets fetch"));
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod adult;
mod dataset;
mod dir;
mod error;
mod indexed;
mod kdd;
mod synthetic;

pub use adult::{ADULT_NUMERIC_BOUNDS, ADULT_TRAIN_ROWS, load_adult, load_adult_split};
pub use dataset::{Dataset, Scaling};
pub use dir::{ADULT_FILES, DATA_DIR_VARIABLE, DataDir, DataFile, KDD_FILES, sha256_hex};
pub use error::{DatasetError, HOW_TO_GET};
pub use indexed::{ADULT_SHAPED_COLUMNS, adult_shaped_row};
pub use kdd::{
    KDD_COUNT_COLUMNS, KDD_NUMERIC_COLUMNS, KddEncoding, load_kddcup99, load_kddcup99_encoded,
};
pub use synthetic::{
    MAX_GENERATED_COLUMNS, MAX_GENERATED_VALUES, TabularShape, adult_like, nested_balls,
    noisy_linear, tabular, tabular_mixed,
};

#[cfg(test)]
mod scaling_tests;
#[cfg(test)]
#[path = "datasets_tests.rs"]
mod tests;
