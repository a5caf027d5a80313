//! The pass over rows as an interface: mergeable partial sums over blocks of rows, so that
//! a solve can run over rows it does not hold (a file read block by block, executors).
//!
//! A [`RowBlocks`] source hands out its blocks one at a time as [`RowBlock`]s (small CSR
//! slices with labels); [`PartialSums::of_block`] reduces one block to `Σ ℓ(z_i)`,
//! `Σ ℓ'(z_i) y_i x_i` and (optionally) the lower triangle of `Σ ℓ''(z_i) y_i² x_i x_iᵀ`;
//! [`sum_blocks`] runs a pass, blocks in parallel, and merges their sums **in block order**,
//! so a pass has the same bits for any thread count. [`BlockObjective`] and [`BlockNewton`]
//! solve on top of it and certify the result as [`crate::Newton`] does. The solver asks
//! only a [`SumsOracle`] ("the merged sums at `w`"), so the rows may live in other
//! processes: [`PartialSums::to_bytes`] / [`PartialSums::from_bytes`] carry the sums between
//! them.
//!
//! This is a second implementation of the pass beside [`crate::Design`], not a replacement:
//! the in-memory path keeps its fused, split-copy kernels untouched.

mod newton;
mod oracle;
mod sums;
#[cfg(test)]
mod wire_tests;

pub use newton::{BlockNewton, BlockObjective};
pub use oracle::{BlockPass, SumsOracle};
pub use sums::{
    BLOCK_WAVE, HessianRows, PARTIAL_SUMS_VERSION, PartialSums, RowBlock, RowBlocks, sum_blocks,
    sum_blocks_with,
};

#[cfg(test)]
mod sampled_tests;
#[cfg(test)]
#[path = "blocks_tests.rs"]
mod tests;
