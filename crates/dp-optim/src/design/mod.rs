//! The data matrix X (one row per example), dense or sparse, behind one interface.

mod dense;
mod sparse;
mod split_gram;

pub use dense::DenseRows;
pub use sparse::{CsrRows, MAX_SPARSE_COLUMNS};

use faer::MatMut;

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

/// The chunks' partial sums added in chunk order (the same bits for any thread count), or
/// `None` for no chunks.
pub(crate) fn sum_in_order<T>(parts: Vec<T>, add: impl Fn(&mut T, &T)) -> Option<T> {
    let mut parts = parts.into_iter();
    let mut total = parts.next()?;
    for part in parts {
        add(&mut total, &part);
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

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
