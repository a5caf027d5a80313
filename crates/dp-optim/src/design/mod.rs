//! The data matrix X (one row per example), dense or sparse, behind one interface.

mod dense;
mod gram_tasks;
mod sparse;
mod split_gram;

pub use dense::DenseRows;
pub(crate) use sparse::add_outer_product_lower;
pub use sparse::{CsrRows, MAX_SPARSE_COLUMNS};

use faer::MatMut;
use rayon::prelude::*;

/// The rows `x_1 … x_n ∈ ℝ^d` of a generalized linear model, as the solvers use them.
///
/// Implementations parallelize over fixed row chunks (with rayon) and combine the chunks'
/// results in a fixed order, so results are bit-for-bit the same for any number of threads.
pub trait Design: Sync {
    /// Number of rows n.
    fn rows(&self) -> usize;
    /// Number of columns d.
    fn cols(&self) -> usize;
    /// Number of stored entries (n·d when dense): the cost of one pass over the data.
    fn stored_entries(&self) -> usize;
    /// `out[i] = x_iᵀ w` for every row (`w.len() == d`, `out.len() == n`).
    fn multiply(&self, w: &[f64], out: &mut [f64]);
    /// `out = Σ_i v_i x_i`, i.e. `Xᵀ v` (`v.len() == n`, `out.len() == d`), overwriting `out`.
    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]);
    /// `h += Σ_i s_i x_i x_iᵀ` on the **lower triangle** (diagonal included) of the d×d `h`.
    fn add_weighted_gram_lower(&self, weights: &[f64], h: MatMut<'_, f64>);

    /// `X w`, then per-row weights computed from it, then `out = Xᵀ weights` (length d,
    /// overwritten): a loss and its gradient, whose slopes depend on the margins row by
    /// row. The rows are taken in chunks `[k·chunk_rows, (k+1)·chunk_rows)` (the last one
    /// shorter): for each, once its margins are in `rows.margins`, `weigh(first row,
    /// margins, weights, extra)` sets its slices of `rows.weights` and `rows.extra` (which
    /// the pass never reads) and returns a partial sum. Returns the partial sums in chunk
    /// order: summed in that order they have the same bits for any thread count and any
    /// implementation.
    ///
    /// The default makes the passes one after the other ([`Design::multiply`], the chunks,
    /// [`Design::multiply_transpose`]); [`CsrRows`] with a split copy (see there) reads each
    /// row once for both products.
    fn multiply_weigh_transpose(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &WeighChunk<'_>,
        rows: RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        separate_passes(self, w, chunk_rows, weigh, rows, out)
    }
}

/// The loss's part of [`Design::multiply_weigh_transpose`] for one chunk of rows:
/// `(first row, margins, weights to set, extra per-row output to set) → partial sum`.
pub type WeighChunk<'a> = dyn Fn(usize, &[f64], &mut [f64], &mut [f64]) -> f64 + Sync + 'a;

/// The per-row buffers (each of length n) [`Design::multiply_weigh_transpose`] fills.
pub struct RowBuffers<'a> {
    /// Receives `X w`.
    pub margins: &'a mut [f64],
    /// Set by the weigh function; the pass returns `Xᵀ` of them.
    pub weights: &'a mut [f64],
    /// Set by the weigh function as it likes (the Hessian's weights, say).
    pub extra: &'a mut [f64],
}

/// [`Design::multiply_weigh_transpose`] as three passes: `X w`, the chunks, `Xᵀ weights`.
pub(crate) fn separate_passes<D: Design + ?Sized>(
    design: &D,
    w: &[f64],
    chunk_rows: usize,
    weigh: &WeighChunk<'_>,
    rows: RowBuffers<'_>,
    out: &mut [f64],
) -> Vec<f64> {
    design.multiply(w, rows.margins);
    let partials = weigh_chunks(chunk_rows, weigh, rows.margins, rows.weights, rows.extra);
    design.multiply_transpose(rows.weights, out);
    partials
}

/// `weigh` over the chunks of `chunk_rows` rows, in parallel; the partial sums in chunk
/// order.
fn weigh_chunks(
    chunk_rows: usize,
    weigh: &WeighChunk<'_>,
    margins: &[f64],
    weights: &mut [f64],
    extra: &mut [f64],
) -> Vec<f64> {
    let chunk_rows = chunk_rows.max(1);
    margins
        .par_chunks(chunk_rows)
        .zip(weights.par_chunks_mut(chunk_rows))
        .zip(extra.par_chunks_mut(chunk_rows))
        .enumerate()
        .map(|(chunk, ((margins, weights), extra))| {
            weigh(chunk * chunk_rows, margins, weights, extra)
        })
        .collect()
}

/// `len` copies of `value`, or [`OptimError::AllocationFailed`] naming `what`: the copies
/// of the design sized by the input are allocated fallibly, so that an input too large for
/// the memory is a refusal, never an abort.
pub(crate) fn filled<T: Clone>(
    what: &'static str,
    len: usize,
    value: T,
) -> Result<Vec<T>, crate::OptimError> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| crate::OptimError::AllocationFailed {
            what,
            bytes: len.saturating_mul(size_of::<T>()),
        })?;
    out.resize(len, value);
    Ok(out)
}

/// Row ranges of a fixed partition of `0..rows` into at most `max_chunks` pieces of at least
/// `min_rows` rows: depends only on the sizes, never on the thread count.
pub(crate) fn row_chunks(
    rows: usize,
    min_rows: usize,
    max_chunks: usize,
) -> Vec<std::ops::Range<usize>> {
    let chunks = (rows / min_rows.max(1)).clamp(1, max_chunks.max(1));
    let size = rows.div_ceil(chunks);
    (0..chunks)
        .map(|c| (c * size).min(rows)..((c + 1) * size).min(rows))
        .filter(|r| !r.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_a_copy_larger_than_the_memory_as_an_allocation_failure() {
        let too_many = usize::MAX / 16;
        match filled("the test's copy", too_many, 0u64) {
            Err(crate::OptimError::AllocationFailed { what, bytes }) => {
                assert_eq!(what, "the test's copy");
                assert_eq!(bytes, too_many * 8);
            }
            other => panic!("{:?}", other.map(|v| v.len())),
        }
        assert_eq!(filled("a small copy", 3, 7u32).unwrap(), vec![7, 7, 7]);
    }

    use super::split_gram::tests::{assert_all_close, fused_pass_of, fused_reference, rows};

    /// Sparse rows with and without the split copy, and dense rows (the default method),
    /// give the plain products; each gives the same bits on 1 and 3 threads.
    #[test]
    fn every_design_fuses_its_products_correctly_and_the_same_on_any_thread_count() {
        let on_threads = |threads: usize, run: &(dyn Fn() -> [Vec<f64>; 5] + Sync)| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(run)
        };
        for (dense_columns, groups) in [(8, vec![9, 4, 30]), (0, vec![9, 4, 30])] {
            let (cols, indptr, indices, values) = rows(9_000, dense_columns, &groups);
            let w: Vec<f64> = (0..cols)
                .map(|j| ((j * 37) % 11) as f64 / 5.0 - 1.0)
                .collect();
            let sparse =
                CsrRows::new(cols, indptr.clone(), indices.clone(), values.clone()).unwrap();
            let mut row_major = vec![0.0; 9_000 * cols];
            for i in 0..9_000 {
                for e in indptr[i]..indptr[i + 1] {
                    row_major[i * cols + indices[e] as usize] = values[e];
                }
            }
            let dense = DenseRows::from_row_major(9_000, cols, &row_major).unwrap();
            let expected = fused_reference((cols, &indptr, &indices, &values), &w, 4096);
            for design in [&sparse as &dyn Design, &dense] {
                let one = on_threads(1, &|| fused_pass_of(design, &w, 4096));
                let three = on_threads(3, &|| fused_pass_of(design, &w, 4096));
                assert_all_close(&one, &expected);
                for (a, b) in one.iter().zip(&three) {
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(a), bits(b));
                }
            }
        }
    }

    #[test]
    fn row_chunks_cover_all_rows_once() {
        for (rows, min, max) in [(1, 100, 8), (45_000, 2048, 8), (10, 3, 8), (1000, 1, 7)] {
            let chunks = row_chunks(rows, min, max);
            assert!(chunks.len() <= max);
            assert_eq!(chunks.first().unwrap().start, 0);
            assert_eq!(chunks.last().unwrap().end, rows);
            assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
        }
    }
}
