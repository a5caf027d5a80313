//! Sparse rows in compressed-sparse-row (CSR) form: the shape of one-hot encoded data.

use std::sync::OnceLock;

use faer::MatMut;
use rayon::prelude::*;

use super::gram_tasks::{
    add_to_lower, gram_row_chunks, merge_stripes, stripe_entries, tasks, triangle_start,
    triangle_stripes,
};
use super::split_gram::SplitRows;
use super::{Design, RowBuffers, WeighChunk, separate_passes};
use crate::OptimError;

/// Rows per parallel task of `X w`: each task walks its rows' slice of `indptr` in a plain
/// loop (1.4× faster on Adult than one rayon item per row).
const ROW_CHUNK: usize = 4096;

/// An n×d data matrix in compressed-sparse-row form: row `i` holds the entries
/// `indices[indptr[i]..indptr[i+1]]` (strictly increasing column indices) with `values`.
///
/// A column-major copy of the entries is kept beside the rows, so that `Xᵀv` gathers
/// instead of scattering (2.1–2.4× faster on Adult and KDDCup99); it doubles the memory.
/// At most `u32::MAX` rows and columns.
///
/// The first Hessian or fused pass ([`Design::multiply_weigh_transpose`]) over the rows
/// also builds, when a few columns hold many of the entries (as the numeric columns of
/// one-hot encoded data do), a third copy with those columns as a dense block
/// (`split_gram`): forming the Hessian then takes register-wide multiply-adds for most of
/// its updates instead of scattered ones, and the fused pass reads each row once. It is
/// built once and costs 64 bytes per row for each register of 8 leading columns (at most
/// 4) plus 12 bytes per other entry: on Adult about the memory of the rows again.
#[derive(Clone)]
pub struct CsrRows {
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
    by_column: ColumnMajor,
    /// Mean over rows of `k(k+1)/2` for rows of `k` entries: the Gram's updates per row.
    updates_per_row: f64,
    split: OnceLock<Option<Box<SplitRows>>>,
}

/// The same rows (the split copy is a cache derived from them).
impl PartialEq for CsrRows {
    fn eq(&self, other: &Self) -> bool {
        (self.cols, &self.indptr, &self.indices, &self.values)
            == (other.cols, &other.indptr, &other.indices, &other.values)
    }
}

/// Most columns [`CsrRows`] accepts: its column-major copy allocates one pointer per column,
/// so a mistyped count (2³², say) is refused before anything is allocated.
pub const MAX_SPARSE_COLUMNS: usize = 1 << 26;

/// The same entries by column (CSC), for `Xᵀv`: each output is then a sum over its own
/// column, computed in a fixed order with no scattered writes.
#[derive(Debug, Clone, PartialEq)]
struct ColumnMajor {
    colptr: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<f64>,
}

/// One row of [`CsrRows::new`]'s checks (the layout already checked): columns in range and
/// strictly increasing, values finite.
fn check_row(
    row: usize,
    cols: usize,
    indptr: &[usize],
    indices: &[u32],
    values: &[f64],
) -> Result<(), OptimError> {
    let invalid = |why: String| Err(OptimError::InvalidSparseStructure(why));
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
    Ok(())
}

/// Consecutive column ranges covering `0..cols` (`colptr` has `cols + 1` entries), at most
/// `tasks` of them, each of about `1/tasks` of the entries (and one range when there are
/// too few entries to share).
fn column_tasks(colptr: &[usize], tasks: usize) -> Vec<std::ops::Range<usize>> {
    /// Fewer entries than this per task are not worth a thread.
    const MIN_TASK_ENTRIES: usize = 1 << 15;
    let cols = colptr.len() - 1;
    let entries = colptr[cols];
    let tasks = tasks.min(entries / MIN_TASK_ENTRIES).clamp(1, cols);
    let mut ranges = Vec::with_capacity(tasks);
    let mut start = 0;
    for k in 1..=tasks {
        let end = if k == tasks {
            cols
        } else {
            // The first column whose start reaches the k-th share of the entries.
            colptr
                .partition_point(|&p| p < k * entries / tasks)
                .clamp(start, cols)
        };
        if end > start {
            ranges.push(start..end);
            start = end;
        }
    }
    ranges
}

/// Where each column's entries start in column-major order (`cols + 1` offsets, the last
/// the number of entries), for column indices `< cols`.
pub(super) fn column_pointers(cols: usize, indices: &[u32]) -> Result<Vec<usize>, OptimError> {
    let mut colptr = super::filled("the column pointers", cols + 1, 0usize)?;
    for &c in indices {
        colptr[c as usize + 1] += 1;
    }
    for c in 0..cols {
        colptr[c + 1] += colptr[c];
    }
    Ok(colptr)
}

impl ColumnMajor {
    /// The copy of rows whose columns strictly increase within each row. Built in tasks
    /// of consecutive columns (as many as threads, of about equal entries): each task
    /// fills its own contiguous part of the copy, taking from every row the slice of its
    /// columns (found by binary search in the sorted row), so no two tasks write the same
    /// memory and the result is the same for any number of tasks.
    fn new(
        cols: usize,
        indptr: &[usize],
        indices: &[u32],
        values: &[f64],
    ) -> Result<Self, OptimError> {
        let colptr = column_pointers(cols, indices)?;
        let mut rows = super::filled("the column-major copy's row indices", indices.len(), 0u32)?;
        let mut by_column = super::filled("the column-major copy's values", indices.len(), 0.0)?;
        let tasks = column_tasks(&colptr, rayon::current_num_threads());
        // Split the outputs at the tasks' first entries, front to back.
        let mut parts = Vec::with_capacity(tasks.len());
        let (mut rows_left, mut values_left) = (rows.as_mut_slice(), by_column.as_mut_slice());
        for columns in &tasks {
            let len = colptr[columns.end] - colptr[columns.start];
            let (rows_part, rest_rows) = rows_left.split_at_mut(len);
            let (values_part, rest_values) = values_left.split_at_mut(len);
            (rows_left, values_left) = (rest_rows, rest_values);
            parts.push((columns.clone(), rows_part, values_part));
        }
        parts
            .into_par_iter()
            .for_each(|(columns, rows_part, values_part)| {
                let base = colptr[columns.start];
                let mut next: Vec<usize> =
                    colptr[columns.clone()].iter().map(|&p| p - base).collect();
                let (first, end) = (columns.start as u32, columns.end as u32);
                for row in 0..indptr.len() - 1 {
                    let (idx, val) = (
                        &indices[indptr[row]..indptr[row + 1]],
                        &values[indptr[row]..indptr[row + 1]],
                    );
                    let from = idx.partition_point(|&c| c < first);
                    let to = from + idx[from..].partition_point(|&c| c < end);
                    for (&c, &v) in idx[from..to].iter().zip(&val[from..to]) {
                        let slot = &mut next[(c - first) as usize];
                        rows_part[*slot] = row as u32;
                        values_part[*slot] = v;
                        *slot += 1;
                    }
                }
            });
        Ok(Self {
            colptr,
            rows,
            values: by_column,
        })
    }

    /// `Σ_r v[r] x[r, c]` for column `c`, with four running sums to shorten the dependency
    /// chain (a fixed order: the same bits on every run).
    fn column_dot(&self, c: usize, v: &[f64]) -> f64 {
        let range = self.colptr[c]..self.colptr[c + 1];
        let (rows, values) = (&self.rows[range.clone()], &self.values[range]);
        let mut sums = [0.0; 4];
        let mut row_quads = rows.chunks_exact(4);
        let mut value_quads = values.chunks_exact(4);
        for (r, x) in (&mut row_quads).zip(&mut value_quads) {
            for k in 0..4 {
                sums[k] += v[r[k] as usize] * x[k];
            }
        }
        let tail: f64 = row_quads
            .remainder()
            .iter()
            .zip(value_quads.remainder())
            .map(|(&r, x)| v[r as usize] * x)
            .sum();
        (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
    }
}

impl CsrRows {
    /// The layout of CSR arrays, before any row is read: as many indices as values, and
    /// `indptr` (at least two offsets) starting at 0, never decreasing and ending at the
    /// number of entries — so that every row's range is in bounds.
    pub fn check_layout(indptr: &[usize], indices: usize, values: usize) -> Result<(), OptimError> {
        let invalid = |why: String| Err(OptimError::InvalidSparseStructure(why));
        let rows = indptr.len().saturating_sub(1);
        if rows == 0 {
            return Err(OptimError::EmptyData { rows, cols: 0 });
        }
        if indices != values {
            return invalid(format!("{indices} indices but {values} values"));
        }
        if indptr[0] != 0 || indptr[rows] != indices {
            return invalid(format!(
                "indptr must run from 0 to {indices} (the number of entries), runs from {} to {}",
                indptr[0], indptr[rows]
            ));
        }
        if let Some(row) = (0..rows).find(|&r| indptr[r] > indptr[r + 1]) {
            return invalid(format!("indptr decreases at row {row}"));
        }
        Ok(())
    }

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
        if cols > MAX_SPARSE_COLUMNS {
            return Err(OptimError::InvalidParameter {
                what: "column count",
                why: format!(
                    "{cols} columns exceed the limit of {MAX_SPARSE_COLUMNS} (2^26; the \
                     column-major copy allocates per column)"
                ),
            });
        }
        // The whole indptr first, so that no row range below can be out of bounds.
        Self::check_layout(&indptr, indices.len(), values.len())?;
        // Rows checked in parallel chunks; the first bad row in row order is named.
        let first_error = (0..rows)
            .into_par_iter()
            .with_min_len(ROW_CHUNK)
            .map(|row| check_row(row, cols, &indptr, &indices, &values))
            .find_first(Result::is_err);
        if let Some(Err(e)) = first_error {
            return Err(e);
        }
        if u32::try_from(rows).is_err() {
            return invalid(format!("{rows} rows exceed the u32 index range"));
        }
        let by_column = ColumnMajor::new(cols, &indptr, &indices, &values)?;
        let updates: f64 = indptr
            .windows(2)
            .map(|w| triangle_start(w[1] - w[0]) as f64)
            .sum();
        Ok(Self {
            cols,
            indptr,
            indices,
            values,
            by_column,
            updates_per_row: updates / rows as f64,
            split: OnceLock::new(),
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
        if rows == 0 || cols == 0 {
            return Err(OptimError::EmptyData { rows, cols });
        }
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

    /// The split copy (built by the first call that needs it), or `None` where it would
    /// not pay.
    fn split(&self) -> Option<&SplitRows> {
        self.split
            .get_or_init(|| {
                SplitRows::new(
                    &self.indptr,
                    &self.indices,
                    &self.values,
                    &self.by_column.colptr,
                )
                .map(Box::new)
            })
            .as_deref()
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
        out.par_chunks_mut(ROW_CHUNK)
            .enumerate()
            .for_each(|(chunk, out)| {
                let first = chunk * ROW_CHUNK;
                let bounds = &self.indptr[first..=first + out.len()];
                for (o, ends) in out.iter_mut().zip(bounds.windows(2)) {
                    let range = ends[0]..ends[1];
                    *o = sparse_dot(&self.indices[range.clone()], &self.values[range], w);
                }
            });
    }

    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        out.par_iter_mut()
            .with_min_len(8)
            .enumerate()
            .for_each(|(c, o)| *o = self.by_column.column_dot(c, v));
    }

    /// With the split copy (see [`CsrRows`]), one read of each row for both products: the
    /// leading block's entries take register-wide multiply-adds in both, and only the
    /// other entries are gathered and scattered. Measured against the three passes
    /// (median of 8 alternated runs of 150 fits, 2 threads): Adult's private fit 3.80 →
    /// 3.59 ms, KDDCup99's 9.8 → 8.5 ms; on one thread no faster. Without the split copy,
    /// the three passes: a row-by-row fusion of the plain rows was no faster.
    fn multiply_weigh_transpose(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &WeighChunk<'_>,
        rows: RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        match self.split() {
            Some(split) => split.multiply_weigh_transpose(w, chunk_rows, weigh, rows, out),
            None => separate_passes(self, w, chunk_rows, weigh, rows, out),
        }
    }

    fn add_weighted_gram_lower(&self, weights: &[f64], h: MatMut<'_, f64>) {
        if let Some(split) = self.split() {
            return split.add_weighted_gram_lower(weights, h);
        }
        let d = self.cols;
        // Chunks and stripes as `gram_tasks` explains; each partial is the stripe's rows
        // of a packed row-major lower triangle (entry (i, j), j ≤ i, at i(i+1)/2 + j):
        // half the memory of a full square, so more of it stays in cache.
        let stripes = triangle_stripes(d, 0);
        let chunks = gram_row_chunks(weights, self.updates_per_row, triangle_start(d));
        let partials: Vec<Vec<f64>> = tasks(chunks.len(), stripes.len())
            .into_par_iter()
            .map(|(c, s)| {
                let stripe = &stripes[s];
                let mut partial =
                    vec![0.0; triangle_start(stripe.end) - triangle_start(stripe.start)];
                for i in chunks[c].clone() {
                    let s = weights[i];
                    // Rows with zero curvature (the Huber loss outside its quadratic band,
                    // often most rows) add nothing.
                    if s == 0.0 {
                        continue;
                    }
                    let row = self.row(i);
                    let entries = if stripes.len() == 1 {
                        0..row.0.len()
                    } else {
                        stripe_entries(row.0, stripe)
                    };
                    add_outer_product_lower(&mut partial, stripe.start, s, row, entries);
                }
                partial
            })
            .collect();
        let mut total = vec![0.0; triangle_start(d)];
        merge_stripes(
            &mut total,
            &partials,
            &stripes,
            triangle_start,
            Vec::as_slice,
        );
        add_to_lower(h, |i, j| total[triangle_start(i) + j]);
    }
}

/// `Σ_k val[k]·w[idx[k]]` with four running sums: a row's dozen entries are otherwise one
/// chain of dependent additions (1.6× faster `X w` on Adult). A fixed order: the same bits
/// on every run.
#[inline]
pub(super) fn sparse_dot(idx: &[u32], val: &[f64], w: &[f64]) -> f64 {
    let mut sums = [0.0; 4];
    let mut index_quads = idx.chunks_exact(4);
    let mut value_quads = val.chunks_exact(4);
    for (c, x) in (&mut index_quads).zip(&mut value_quads) {
        for k in 0..4 {
            sums[k] += x[k] * w[c[k] as usize];
        }
    }
    let tail: f64 = index_quads
        .remainder()
        .iter()
        .zip(value_quads.remainder())
        .map(|(&c, x)| x * w[c as usize])
        .sum();
    (sums[0] + sums[1]) + (sums[2] + sums[3]) + tail
}

/// Adds `s·x xᵀ` for one sparse row `x` (`idx`, `val`) to a packed lower triangle (entry
/// (i, j), j ≤ i, at i(i+1)/2 + j), for the row's entries `a` in `entries` only: entry
/// (idx[a], idx[b]), b ≤ a, gets `(s·val[a])·val[b]`. `packed` holds the triangle from its
/// row `first_row` on (a stripe; 0 for the whole triangle), so entries `a` must have
/// `idx[a] ≥ first_row`.
///
/// Four entries of the row are taken at once, so each pass over the earlier entries feeds
/// four independent updates instead of one (1.3–1.5× faster on Adult's 12–14 entries per
/// row). Every entry receives exactly one term per row, so neither the order inside a row
/// nor the cut into stripes changes any bit of the sum over rows.
pub(crate) fn add_outer_product_lower(
    packed: &mut [f64],
    first_row: usize,
    s: f64,
    (idx, val): (&[u32], &[f64]),
    entries: std::ops::Range<usize>,
) {
    let base = triangle_start(first_row);
    let start = |col: u32| triangle_start(col as usize) - base;
    let mut a = entries.start;
    while a + 4 <= entries.end {
        let scaled: [f64; 4] = std::array::from_fn(|q| s * val[a + q]);
        let rows: [usize; 4] = std::array::from_fn(|q| start(idx[a + q]));
        for (&other, &y) in idx[..=a].iter().zip(&val[..=a]) {
            let other = other as usize;
            for q in 0..4 {
                packed[rows[q] + other] += scaled[q] * y;
            }
        }
        // The triangle the four rows share beyond entry a.
        for q in 1..4 {
            for p in 1..=q {
                packed[rows[q] + idx[a + p] as usize] += scaled[q] * val[a + p];
            }
        }
        a += 4;
    }
    for a in a..entries.end {
        let scaled = s * val[a];
        let row = start(idx[a]);
        for (&other, &y) in idx[..=a].iter().zip(&val[..=a]) {
            packed[row + other as usize] += scaled * y;
        }
    }
}

/// Shows the shape only: the entries are the data (often personal), and `Debug` output
/// ends up in logs.
impl std::fmt::Debug for CsrRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsrRows")
            .field("rows", &self.rows())
            .field("cols", &self.cols())
            .field("stored_entries", &self.stored_entries())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::gram_tasks::tests::on_threads;
    use crate::design::split_gram::tests::rows;

    /// The column-major copy built in column tasks (several on 3 and 16 threads) holds each
    /// column's entries in row order, as a scan of the rows column by column finds them.
    #[test]
    fn the_column_major_copy_is_each_columns_entries_in_row_order_on_any_thread_count() {
        let (cols, indptr, indices, values) = rows(30_000, 8, &[40; 12]);
        let (mut rows_of, mut values_of) = (Vec::new(), Vec::new());
        for c in 0..cols as u32 {
            for row in 0..indptr.len() - 1 {
                for e in indptr[row]..indptr[row + 1] {
                    if indices[e] == c {
                        rows_of.push(row as u32);
                        values_of.push(values[e]);
                    }
                }
            }
        }
        let colptr = column_pointers(cols, &indices).unwrap();
        assert!(column_tasks(&colptr, 16).len() >= 3);
        for threads in [1, 3, 16] {
            let copy = on_threads(threads, || {
                ColumnMajor::new(cols, &indptr, &indices, &values).unwrap()
            });
            assert_eq!(copy.colptr, colptr);
            assert_eq!(copy.rows, rows_of, "{threads} threads");
            assert_eq!(copy.values, values_of, "{threads} threads");
        }
    }

    #[test]
    fn column_tasks_cover_every_column_once() {
        for (colptr, tasks) in [
            (vec![0, 0, 0], 4),
            (vec![0, 1 << 20], 8),
            (vec![0, 1 << 16, 1 << 16, 1 << 17, 3 << 17], 3),
            ((0..=100).map(|c| c << 12).collect(), 16),
        ] {
            let ranges = column_tasks(&colptr, tasks);
            assert!(!ranges.is_empty() && ranges.len() <= tasks);
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges.last().unwrap().end, colptr.len() - 1);
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            assert!(ranges.iter().all(|r| !r.is_empty()));
        }
    }
}
