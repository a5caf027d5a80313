//! Dense rows, stored in a faer matrix.

use std::ops::Range;

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use super::{Design, row_chunks};
use crate::OptimError;

/// Rows per block: every product runs block by block with sequential faer kernels, blocks in
/// parallel, partial results combined in a fixed order — the same bits for any thread count.
const BLOCK_ROWS: usize = 2048;
/// Scratch budget for per-group partial Gram matrices (bytes).
const GRAM_SCRATCH_BYTES: usize = 256 << 20;

/// A dense n×d data matrix (column-major, as faer stores it).
#[derive(Clone, PartialEq)]
pub struct DenseRows {
    x: Mat<f64>,
}

impl DenseRows {
    /// From `rows × cols` values in row-major order (row 0 first).
    pub fn from_row_major(rows: usize, cols: usize, values: &[f64]) -> Result<Self, OptimError> {
        if rows == 0 || cols == 0 {
            return Err(OptimError::EmptyData { rows, cols });
        }
        let expected = rows
            .checked_mul(cols)
            .ok_or(OptimError::DimensionMismatch {
                what: "row-major values",
                expected: usize::MAX,
                found: values.len(),
            })?;
        if values.len() != expected {
            return Err(OptimError::DimensionMismatch {
                what: "row-major values",
                expected,
                found: values.len(),
            });
        }
        Self::from_mat(MatRef::from_row_major_slice(values, rows, cols).to_owned())
    }

    /// From a faer matrix, one row per example.
    pub fn from_mat(x: Mat<f64>) -> Result<Self, OptimError> {
        let (rows, cols) = (x.nrows(), x.ncols());
        if rows == 0 || cols == 0 {
            return Err(OptimError::EmptyData { rows, cols });
        }
        // Column by column (faer stores columns contiguously), keeping the first offending
        // entry in row-major order so the error names the same one as a row-wise scan.
        let mut first: Option<(usize, usize)> = None;
        for col in 0..cols {
            let column = x.col(col);
            if let Some(row) = (0..rows).find(|&row| !column[row].is_finite())
                && first.is_none_or(|(r, _)| row < r)
            {
                first = Some((row, col));
            }
        }
        match first {
            Some((row, col)) => Err(OptimError::NonFiniteData {
                row,
                col,
                value: x[(row, col)],
            }),
            None => Ok(Self { x }),
        }
    }

    /// The matrix.
    pub fn as_mat(&self) -> MatRef<'_, f64> {
        self.x.as_ref()
    }

    fn blocks(&self) -> Vec<Range<usize>> {
        let rows = self.x.nrows();
        (0..rows)
            .step_by(BLOCK_ROWS)
            .map(|start| start..(start + BLOCK_ROWS).min(rows))
            .collect()
    }
}

fn column(values: &[f64]) -> MatRef<'_, f64> {
    MatRef::from_column_major_slice(values, values.len(), 1)
}

fn column_mut(values: &mut [f64]) -> MatMut<'_, f64> {
    let len = values.len();
    MatMut::from_column_major_slice_mut(values, len, 1)
}

impl Design for DenseRows {
    fn rows(&self) -> usize {
        self.x.nrows()
    }

    fn cols(&self) -> usize {
        self.x.ncols()
    }

    fn stored_entries(&self) -> usize {
        self.x.nrows() * self.x.ncols()
    }

    fn multiply(&self, w: &[f64], out: &mut [f64]) {
        out.par_chunks_mut(BLOCK_ROWS)
            .enumerate()
            .for_each(|(b, out_block)| {
                let block = self.x.subrows(b * BLOCK_ROWS, out_block.len());
                matmul(
                    column_mut(out_block),
                    Accum::Replace,
                    block,
                    column(w),
                    1.0,
                    Par::Seq,
                );
            });
    }

    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        let cols = self.cols();
        let partials: Vec<Vec<f64>> = self
            .blocks()
            .into_par_iter()
            .map(|range| {
                let mut partial = vec![0.0; cols];
                let block = self.x.subrows(range.start, range.len());
                matmul(
                    column_mut(&mut partial),
                    Accum::Replace,
                    block.transpose(),
                    column(&v[range]),
                    1.0,
                    Par::Seq,
                );
                partial
            })
            .collect();
        out.fill(0.0);
        for partial in partials {
            out.iter_mut().zip(&partial).for_each(|(o, p)| *o += p);
        }
    }

    fn add_weighted_gram_lower(&self, weights: &[f64], mut h: MatMut<'_, f64>) {
        let cols = self.cols();
        let blocks = self.blocks();
        let max_groups = (GRAM_SCRATCH_BYTES / (8 * cols).saturating_mul(cols).max(1)).clamp(1, 8);
        // Fixed groups of blocks, each accumulating its own partial lower triangle.
        let partials: Vec<Mat<f64>> = row_chunks(blocks.len(), 1, max_groups)
            .into_par_iter()
            .map(|group| {
                let mut partial = Mat::<f64>::zeros(cols, cols);
                let mut scaled = Mat::<f64>::zeros(BLOCK_ROWS, cols);
                for range in &blocks[group] {
                    let block = self.x.subrows(range.start, range.len());
                    let mut scaled = scaled.subrows_mut(0, range.len());
                    for col in 0..cols {
                        for (row, i) in range.clone().enumerate() {
                            scaled[(row, col)] = weights[i] * block[(row, col)];
                        }
                    }
                    // Only the lower triangle of Bᵀ·diag(s)·B is formed: half the flops.
                    triangular::matmul(
                        partial.as_mut(),
                        BlockStructure::TriangularLower,
                        Accum::Add,
                        block.transpose(),
                        BlockStructure::Rectangular,
                        scaled.as_ref(),
                        BlockStructure::Rectangular,
                        1.0,
                        Par::Seq,
                    );
                }
                partial
            })
            .collect();
        for partial in partials {
            for j in 0..cols {
                for i in j..cols {
                    h[(i, j)] += partial[(i, j)];
                }
            }
        }
    }
}

/// Shows the shape only: the entries are the data (often personal), and `Debug` output
/// ends up in logs.
impl std::fmt::Debug for DenseRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseRows")
            .field("rows", &self.rows())
            .field("cols", &self.cols())
            .field("stored_entries", &self.stored_entries())
            .finish_non_exhaustive()
    }
}
