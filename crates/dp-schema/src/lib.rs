//! A public schema for tabular data, and the data-free encoding it fixes.
//!
//! Every differential-privacy guarantee of dp-erm needs rows in the unit ball, and putting
//! rows there needs facts that must be **public**: each numeric column's bounds, each
//! categorical column's levels, the label's classes. A [`Schema`] (a TOML file, see
//! `schemas/adult.toml`) declares them; [`Encoder`] turns a record into a checked row by
//! the schema alone — never by statistics of the data, so the encoding is one fixed function
//! for every dataset and preserves the replace-one neighbouring relation — and builds the
//! [`dp_noise::FeatureGroups`] of the one-hot attributes, so that objective perturbation's
//! group-shaped noise ([`dp_erm::ErmParams::group_noise`]) is the default for schema-built
//! data. `read_batches` streams CSV and Parquet files through it in bounded batches (the
//! default feature `files`; without it, the schema, the encoder and the Arrow cell readers
//! only — what the Python package needs, its frames arriving as Arrow arrays).
//!
//! # The encoding
//! - numeric: clamped to `[lower, upper]` (standard; no count of clamped values is kept),
//!   then `(v − lower)/(upper − lower)` ∈ [0, 1];
//! - categorical: one-hot over the declared levels, plus an "other" slot (`unseen =
//!   "other"`) and a "missing" slot (`missing = "level"`) where chosen; `unseen = "ignore"`
//!   and `missing = "zero"` give an all-zero group;
//! - an optional intercept attribute 1;
//! - the row divided by its own norm (`row_scaling = "unit_norm"`, a classifier's default) or
//!   by `√A` (`"attributes"`, a regression's default and only choice, which keeps predictions
//!   linear in the features: A attributes, each contributing at most 1 to the squared norm, so
//!   `‖x‖₂ ≤ 1` and `‖x‖_G ≤ 1`), times `1 − 10⁻¹²` so rounding cannot push a row past 1;
//! - the label: +1 for the positive class, −1 for every other.
//!
//! # Private descriptions
//! For data nobody has documented, [`DescribePlan`] and [`Describer`] (and
//! [`describe_file`] for a file) release the schema's bounds, levels and classes by
//! differentially private mechanisms, from the column names and types alone, in one pass:
//! see the `describe` module's documentation for the mechanisms, the split of ε and δ
//! among them, and the annotated schema they write.
//!
//! # Privacy
//! The encoding reads one record and the public schema, nothing else, so a mechanism that
//! is ε-DP on encoded rows (replace-one neighbours) is ε-DP on the records. Errors name the
//! file, line and column of a bad cell but never its content. The schema's bounds, levels
//! and classes must be public — from documentation or domain knowledge: values computed
//! from the data would leak it, and no guarantee here covers them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod arrow_cells;
#[cfg(feature = "files")]
mod cache;
mod describe;
#[cfg(feature = "files")]
mod describe_read;
mod encode;
mod error;
#[cfg(feature = "files")]
mod read;
mod schema;

pub use arrow_cells::{arrow_numbers, arrow_text_cell};
#[cfg(feature = "files")]
pub use cache::write_row_cache;
pub use describe::{
    ColumnRelease, DEFAULT_FAILURE_PROBABILITY, DESCRIBE_AT_RISK_SHARE, DESCRIBE_SHARE,
    DescribeColumn, DescribeCounts, DescribeError, DescribeKind, DescribeOutlook, DescribePlan,
    DescribeSpec, Describer, Description, Fact, Released, split_total_epsilon,
};
#[cfg(feature = "files")]
pub use describe_read::describe_file;
pub use encode::{Cell, CellError, EncodedRow, Encoder};
pub use error::{Problem, ReadError, SchemaError};
#[cfg(feature = "files")]
pub use read::{
    Batch, DEFAULT_BATCH_ROWS, ReadOptions, ReadSummary, csv_text, is_gzip, is_parquet,
    open_parquet, read_batches, read_examples, read_regression_set, read_training_set,
};
pub use schema::{
    CategoricalMissing, Column, ColumnKind, CsvFormat, MAX_LEVELS, MAX_SCHEMA_BYTES,
    NumericMissing, RowScaling, SCHEMA_VERSION, Schema, Unseen,
};

#[cfg(test)]
#[path = "prop_tests.rs"]
mod proptests;
#[cfg(all(test, feature = "files"))]
#[path = "schema_tests.rs"]
mod tests;
