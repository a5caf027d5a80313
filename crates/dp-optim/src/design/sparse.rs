//! Sparse rows in compressed-sparse-row (CSR) form: the shape of one-hot encoded data.

use faer::MatMut;
use rayon::prelude::*;

use super::{Design, row_chunks};
use crate::OptimError;

/// Scratch budget for per-chunk partial Gram matrices (bytes).
const GRAM_SCRATCH_BYTES: usize = 64 << 20;

/// An n×d data matrix in compressed-sparse-row form: row `i` holds the entries
/// `indices[indptr[i]..indptr[i+1]]` (strictly increasing column indices) with `values`.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrRows {
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl CsrRows {
    /// From raw CSR arrays, all checked: `indptr` starts at 0, never decreases and ends at
    /// the number of entries; column indices are `< cols` and strictly increasing within a
    /// row; values are finite.
    pub fn new(
        cols: usize,
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Self, OptimError> {
        let invalid = |why: String| Err(OptimError::InvalidSparseStructure(why));
        let rows = indptr.len().saturating_sub(1);
        if rows == 0 || cols == 0 {
            return Err(OptimError::EmptyData { rows, cols });
        }
        if u32::try_from(cols).is_err() {
            return invalid(format!("{cols} columns exceed the u32 index range"));
        }
        if indices.len() != values.len() {
            return invalid(format!(
                "{} indices but {} values",
                indices.len(),
                values.len()
            ));
        }
        if indptr[0] != 0 || indptr[rows] != indices.len() {
            return invalid(format!(
                "indptr must run from 0 to {} (the number of entries), runs from {} to {}",
                indices.len(),
                indptr[0],
                indptr[rows]
            ));
        }
        // The whole indptr first, so that no row range below can be out of bounds.
        if let Some(row) = (0..rows).find(|&r| indptr[r] > indptr[r + 1]) {
            return invalid(format!("indptr decreases at row {row}"));
        }
        for row in 0..rows {
            let (start, end) = (indptr[row], indptr[row + 1]);
            let row_indices = &indices[start..end];
            if let Some(&col) = row_indices.iter().find(|&&c| c as usize >= cols) {
                return invalid(format!("row {row} has column index {col} >= {cols}"));
            }
            if row_indices.windows(2).any(|w| w[0] >= w[1]) {
                return invalid(format!(
                    "column indices of row {row} are not strictly increasing"
                ));
            }
            if let Some(k) = values[start..end].iter().position(|v| !v.is_finite()) {
                return Err(OptimError::NonFiniteData {
                    row,
                    col: row_indices[k] as usize,
                    value: values[start + k],
                });
            }
        }
        Ok(Self {
            cols,
            indptr,
            indices,
            values,
        })
    }

    /// From rows given as `(column, value)` pairs in any order; a column repeated within a
    /// row is an error.
    pub fn from_rows(cols: usize, rows: &[Vec<(usize, f64)>]) -> Result<Self, OptimError> {
        let mut indptr = Vec::with_capacity(rows.len() + 1);
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        indptr.push(0);
        for (r, row) in rows.iter().enumerate() {
            let mut sorted = row.clone();
            sorted.sort_by_key(|&(c, _)| c);
            if sorted.windows(2).any(|w| w[0].0 == w[1].0) {
                return Err(OptimError::InvalidSparseStructure(format!(
                    "row {r} repeats a column index"
                )));
            }
            for (c, v) in sorted {
                let c = u32::try_from(c).map_err(|_| {
                    OptimError::InvalidSparseStructure(format!("row {r}: column {c} exceeds u32"))
                })?;
                indices.push(c);
                values.push(v);
            }
            indptr.push(indices.len());
        }
        Self::new(cols, indptr, indices, values)
    }

    /// The non-zero entries of a dense row-major matrix.
    pub fn from_dense_row_major(
        rows: usize,
        cols: usize,
        dense: &[f64],
    ) -> Result<Self, OptimError> {
        let expected = rows.saturating_mul(cols);
        if dense.len() != expected {
            return Err(OptimError::DimensionMismatch {
                what: "row-major values",
                expected,
                found: dense.len(),
            });
        }
        let sparse: Vec<Vec<(usize, f64)>> = dense
            .chunks(cols.max(1))
            .map(|row| {
                row.iter()
                    .enumerate()
                    .filter(|&(_, &v)| v != 0.0)
                    .map(|(c, &v)| (c, v))
                    .collect()
            })
            .collect();
        Self::from_rows(cols, &sparse)
    }

    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Column indices and values of row `i`.
    pub fn row(&self, i: usize) -> (&[u32], &[f64]) {
        let range = self.indptr[i]..self.indptr[i + 1];
        (&self.indices[range.clone()], &self.values[range])
    }
}

impl Design for CsrRows {
    fn rows(&self) -> usize {
        self.indptr.len() - 1
    }

    fn cols(&self) -> usize {
        self.cols
    }

    fn stored_entries(&self) -> usize {
        self.values.len()
    }

    fn multiply(&self, w: &[f64], out: &mut [f64]) {
        out.par_iter_mut()
            .with_min_len(1024)
            .enumerate()
            .for_each(|(i, o)| {
                let (idx, val) = self.row(i);
                *o = idx.iter().zip(val).map(|(&c, &v)| v * w[c as usize]).sum();
            });
    }

    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        let partials: Vec<Vec<f64>> = row_chunks(self.rows(), 4096, 16)
            .into_par_iter()
            .map(|range| {
                let mut partial = vec![0.0; self.cols];
                for i in range {
                    let (idx, val) = self.row(i);
                    for (&c, &x) in idx.iter().zip(val) {
                        partial[c as usize] += v[i] * x;
                    }
                }
                partial
            })
            .collect();
        out.fill(0.0);
        for partial in partials {
            out.iter_mut().zip(&partial).for_each(|(o, p)| *o += p);
        }
    }

    fn add_weighted_gram_lower(&self, weights: &[f64], mut h: MatMut<'_, f64>) {
        let d = self.cols;
        let packed = d * (d + 1) / 2;
        let max_chunks = (GRAM_SCRATCH_BYTES / (8 * packed).max(1)).clamp(1, 8);
        // Each chunk accumulates a packed row-major lower triangle: entry (i, j), j ≤ i, at
        // i(i+1)/2 + j. Half the memory of a full square, so more of it stays in L1.
        let partials: Vec<Vec<f64>> = row_chunks(self.rows(), 2048, max_chunks)
            .into_par_iter()
            .map(|range| {
                let mut partial = vec![0.0; packed];
                for i in range {
                    let s = weights[i];
                    // Rows with zero curvature (the Huber loss outside its quadratic band,
                    // often most rows) add nothing.
                    if s == 0.0 {
                        continue;
                    }
                    let (idx, val) = self.row(i);
                    for (a, (&col, &x)) in idx.iter().zip(val).enumerate() {
                        let scaled = s * x;
                        let col = col as usize;
                        let row = &mut partial[col * (col + 1) / 2..][..=col];
                        for (&other, &y) in idx[..=a].iter().zip(&val[..=a]) {
                            row[other as usize] += scaled * y;
                        }
                    }
                }
                partial
            })
            .collect();
        for partial in partials {
            for i in 0..d {
                let row = &partial[i * (i + 1) / 2..][..=i];
                for (j, &value) in row.iter().enumerate() {
                    h[(i, j)] += value;
                }
            }
        }
    }
}
