//! # dpml-python
//!
//! The Rust core of the Python package `dpml`: scikit-learn-style private classifiers over
//! dp-erm and dp-kernel. The Python classes (`python/dpml`) are thin; this crate reads
//! numpy and scipy arrays in place, trains through the crates' public API with the GIL
//! released, and hands models back as the crates' own model files.
//!
//! - [`rows`]: borrowed dense and CSR rows, and the linear estimators' public row transform.
//! - [`fit`]: the fits, as a Rust user of dp-erm and dp-kernel writes them.
//! - [`memory`]: the allocations sized by the input, fallible (a `MemoryError`, never an abort).
//! - [`models`]: released models, their files and scores.
//! - [`regress`]: the regressors' fit and predictions; [`sgd_regress`]: DP-SGD's.
//! - [`select`]: private model selection over dp-tune (`dpml.model_selection`).
//! - [`frame`]: data frames encoded by a public schema (`dpml.Schema`, over dp-schema).
//! - [`predict`]: private prediction interfaces over dp-predict (`dpml.predict`).
//! - [`spark`]: fits over rows held by Spark executors, and their executor kernel.
//! - [`spark_regress`]: the regressors' fits over Spark executors' rows.
//! - `py` (feature `python`, on by default): the module `dpml._dpml`.
//!
//! Without the `python` feature the crate is plain Rust, so the reference fits that the
//! Python tests compare against are tested with `cargo test --no-default-features`.
#![warn(missing_docs)]

pub mod error;
pub mod fit;
pub mod frame;
pub(crate) mod interrupt;
pub mod memory;
pub mod models;
pub mod predict;
pub mod regress;
pub mod rows;
pub mod select;
pub mod select_regress;
pub mod sgd_regress;
pub mod spark;
pub mod spark_regress;

#[cfg(feature = "python")]
mod py;
#[cfg(feature = "python")]
mod py_common;
#[cfg(feature = "python")]
mod py_describe;
#[cfg(feature = "python")]
mod py_fit;
#[cfg(feature = "python")]
mod py_ledger;
#[cfg(feature = "python")]
mod py_predict;
#[cfg(feature = "python")]
mod py_preprocess;
#[cfg(feature = "python")]
mod py_regress;
#[cfg(feature = "python")]
mod py_schema;
#[cfg(feature = "python")]
mod py_select;
#[cfg(feature = "python")]
mod py_select_regress;
#[cfg(feature = "python")]
mod py_sgd_regress;
#[cfg(feature = "python")]
mod py_spark;
#[cfg(feature = "python")]
mod py_spark_regress;

#[cfg(feature = "python")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[cfg(test)]
mod extra_tests;
#[cfg(test)]
mod spark_regress_tests;
#[cfg(test)]
mod spark_tests;
#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;
