//! Dense rows, stored in a faer matrix.

use faer::linalg::matmul::matmul;
use faer::linalg::matmul::triangular::{self, BlockStructure};
use faer::{Accum, Mat, MatMut, MatRef, Par};

use super::Design;
use crate::OptimError;

/// Rows per block of the weighted Gram update: bounds the scratch to `BLOCK_ROWS × d`.
const BLOCK_ROWS: usize = 2048;

/// A dense n×d data matrix (column-major, as faer stores it). Linear algebra runs through
/// faer's parallel matrix products.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseRows {
    x: Mat<f64>,
}

impl DenseRows {
    /// From `rows × cols` values in row-major order (row 0 first).
    pub fn from_row_major(rows: usize, cols: usize, values: &[f64]) -> Result<Self, OptimError> {
        if rows == 0 || cols == 0 {
            return Err(OptimError::EmptyData { rows, cols });
        }
        if values.len() != rows * cols {
            return Err(OptimError::DimensionMismatch {
                what: "row-major values",
                expected: rows * cols,
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
        for row in 0..rows {
            for col in 0..cols {
                let value = x[(row, col)];
                if !value.is_finite() {
                    return Err(OptimError::NonFiniteData { row, col, value });
                }
            }
        }
        Ok(Self { x })
    }

    /// The matrix.
    pub fn as_mat(&self) -> MatRef<'_, f64> {
        self.x.as_ref()
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
        matmul(
            column_mut(out),
            Accum::Replace,
            &self.x,
            column(w),
            1.0,
            Par::rayon(0),
        );
    }

    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        matmul(
            column_mut(out),
            Accum::Replace,
            self.x.transpose(),
            column(v),
            1.0,
            Par::rayon(0),
        );
    }

    fn add_weighted_gram_lower(&self, weights: &[f64], mut h: MatMut<'_, f64>) {
        let (rows, cols) = (self.rows(), self.cols());
        let mut scaled = Mat::<f64>::zeros(BLOCK_ROWS.min(rows), cols);
        for start in (0..rows).step_by(BLOCK_ROWS) {
            let len = BLOCK_ROWS.min(rows - start);
            let block = self.x.subrows(start, len);
            let mut scaled = scaled.subrows_mut(0, len);
            for col in 0..cols {
                for row in 0..len {
                    scaled[(row, col)] = weights[start + row] * block[(row, col)];
                }
            }
            // Only the lower triangle of Bᵀ·diag(s)·B is formed: half the flops.
            triangular::matmul(
                h.as_mut(),
                BlockStructure::TriangularLower,
                Accum::Add,
                block.transpose(),
                BlockStructure::Rectangular,
                scaled.as_ref(),
                BlockStructure::Rectangular,
                1.0,
                Par::rayon(0),
            );
        }
    }
}
