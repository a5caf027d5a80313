//! Applying a feature map to many rows: the hot path of training and batch prediction.
//!
//! Rows are processed in blocks of [`BLOCK_ROWS`], in parallel: each block's `Xωᵀ` is one
//! matrix product (faer), then the phases and cosines are applied while the block is still
//! in cache. The output is one dense n × D matrix of f64 (8·n·D bytes, 1.73 GB at
//! n = 216,000 and D = 1000): the solver reads it many times, and recomputing D cosines
//! per row per pass would cost more than storing them.

use dp_erm::{ErmError, FeatureRow, Features};
use faer::linalg::matmul::matmul;
use faer::{Accum, Mat, MatMut, MatRef, Par};
use rayon::prelude::*;

use crate::FeatureMap;
use crate::cosine::{any_cos, scaled_cos_in_place};

/// Rows per block: 256 rows × D = 1000 features is 2 MB, about what a core's cache holds.
pub(crate) const BLOCK_ROWS: usize = 256;

/// Most entries (n × D) of a mapped design this crate will allocate: 2³⁰, 8 GiB. Above it
/// a fit is refused before mapping anything; at or below it, a design the process cannot
/// allocate (its memory limit) is refused with [`ErmError::AllocationFailed`], never an
/// abort. The fit needs the raw rows and the solver's O(n + D²) buffers on top.
pub const MAX_DESIGN_ENTRIES: usize = 1 << 30;

impl FeatureMap {
    /// The mapped row `v(x)` (D values, norm ≤ 1); `x` must have d finite values.
    pub fn map_row(&self, x: &[f64]) -> Result<Vec<f64>, ErmError> {
        dp_erm::check_row(x, self.input_features())?;
        let d = self.input_features();
        let scale = self.scale();
        Ok(self
            .frequencies()
            .chunks_exact(d)
            .zip(self.phases())
            .map(|(omega, &psi)| {
                let angle: f64 = omega.iter().zip(x).map(|(w, v)| w * v).sum();
                scale * any_cos(angle + psi)
            })
            .collect())
    }

    /// Whether `rows` rows can be mapped: the n × D output must hold at most
    /// [`MAX_DESIGN_ENTRIES`] entries. Decided from the sizes alone, so trainers can refuse
    /// before anything is charged or drawn.
    pub fn check_rows(&self, rows: usize) -> Result<(), ErmError> {
        let entries = rows.saturating_mul(self.output_features());
        if entries > MAX_DESIGN_ENTRIES {
            return Err(ErmError::InvalidCount {
                what: "mapped design size n × D",
                value: entries,
                requirement: "at most 2^30 entries (8 GiB); use fewer rows or random features",
            });
        }
        Ok(())
    }

    /// Every row mapped: an n × D matrix whose rows have norm ≤ 1. The rows must have d
    /// features (dense or sparse; their values were checked finite when `rows` was built).
    /// Refuses an output above [`MAX_DESIGN_ENTRIES`] before allocating it.
    pub fn map(&self, rows: &Features) -> Result<Mat<f64>, ErmError> {
        rows.check_dimension(self.input_features(), "features of the rows")?;
        self.check_rows(rows.len())?;
        let mut out = zeroed(rows.len(), self.output_features())?;
        out.as_mut()
            .par_row_chunks_mut(BLOCK_ROWS)
            .enumerate()
            .for_each(|(b, block)| self.map_block(rows, b * BLOCK_ROWS, block));
        Ok(out)
    }

    /// Rows `start..start + out.nrows()` of `rows`, mapped into `out`.
    pub(crate) fn map_block(&self, rows: &Features, start: usize, mut out: MatMut<'_, f64>) {
        let (len, d) = (out.nrows(), self.input_features());
        let omega = MatRef::from_row_major_slice(self.frequencies(), self.output_features(), d);
        match rows.dense_values() {
            Some(values) => {
                let x = MatRef::from_row_major_slice(&values[start * d..(start + len) * d], len, d);
                matmul(
                    out.as_mut(),
                    Accum::Replace,
                    x,
                    omega.transpose(),
                    1.0,
                    Par::Seq,
                );
            }
            None => {
                out.fill(0.0);
                for i in 0..len {
                    if let FeatureRow::Sparse(idx, val) = rows.row(start + i) {
                        for (j, omega_j) in omega.row_iter().enumerate() {
                            out[(i, j)] = idx.iter().zip(val).map(|(&k, v)| v * omega_j[k]).sum();
                        }
                    }
                }
            }
        }
        let scale = self.scale();
        for (j, mut column) in out.col_iter_mut().enumerate() {
            let psi = self.phases()[j];
            match column.as_mut().try_as_col_major_mut() {
                Some(contiguous) => scaled_cos_in_place(contiguous.as_slice_mut(), psi, scale),
                None => column
                    .iter_mut()
                    .for_each(|z| *z = scale * any_cos(*z + psi)),
            }
        }
    }
}

/// An n × D matrix of zeros, or [`ErmError::AllocationFailed`] where the memory cannot be
/// had (faer's `zeros` would abort).
pub(crate) fn zeroed(n: usize, columns: usize) -> Result<Mat<f64>, ErmError> {
    let mut out = Mat::<f64>::new();
    out.try_reserve(n, columns)
        .map_err(|_| ErmError::AllocationFailed {
            what: "the mapped design (n × D values)",
            bytes: n.saturating_mul(columns).saturating_mul(8),
        })?;
    // The capacity is there: no allocation happens here.
    out.resize_with(n, columns, |_, _| 0.0);
    Ok(out)
}
