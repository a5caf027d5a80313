//! How the sparse weighted Gram `Σ_i s_i x_i x_iᵀ` is cut into parallel tasks, and how
//! the tasks' partial sums are merged.
//!
//! Rows are cut into fixed chunks, each summed into its own partial triangle; the
//! partials are then added in chunk order. Zeroing and merging a partial costs about as
//! much per entry as a scattered update (measured at d = 1,000: eight 4 MB partials
//! took more time than the 1.5 million updates of 30,000 rows), so a chunk is cut off
//! only where its rows make several updates per entry of its partial: at d = 105 and 10⁶
//! rows that allows [`MAX_CHUNKS`] chunks, at d = 1,000 and 30,000 rows one.
//!
//! The triangle's rows are cut into stripes of about [`STRIPE_BYTES`]: each task sums one
//! chunk of data rows into one stripe, reading every data row of its chunk but updating
//! only its stripe's entries. A stripe stays in the core's cache, and the stripes give
//! tasks to many threads where one chunk is all the rows allow.
//!
//! Every entry of the Gram is the sum over its chunk's rows, in row order, of one term
//! per row, then the chunks' sums in chunk order: the chunks depend on the sizes only,
//! so the result has the same bits for any number of threads and any number of stripes.

use std::ops::{AddAssign, Range};

use faer::MatMut;
use rayon::prelude::*;

use super::row_chunks;

/// Fewest rows per chunk.
const MIN_CHUNK_ROWS: usize = 2048;
/// Most chunks: four tasks per thread on 16 threads.
pub(super) const MAX_CHUNKS: usize = 64;
/// A chunk is cut off only if its rows make this many updates per entry of its partial.
const UPDATES_PER_PARTIAL_ENTRY: f64 = 4.0;
/// Size of a stripe of the triangle: within a core's L2 cache.
const STRIPE_BYTES: usize = 256 << 10;
/// Most stripes.
const MAX_STRIPES: usize = 32;
/// Entries per parallel task of the merge.
const MERGE_BLOCK: usize = 4096;

/// The row chunks of a Gram with `weights` (rows of weight 0 are skipped), whose other
/// rows make about `updates_per_row` updates each into partials of `partial_entries` f64
/// entries: a function of the sizes and of which weights are 0, never of the threads.
pub(super) fn gram_row_chunks(
    weights: &[f64],
    updates_per_row: f64,
    partial_entries: usize,
) -> Vec<Range<usize>> {
    // A sampled Hessian weighs one row in `stride`: its work is that of those rows.
    let active = weights
        .par_chunks(MERGE_BLOCK)
        .map(|w| w.iter().filter(|&&s| s != 0.0).count())
        .sum::<usize>();
    let rows = weights.len();
    let by_work = active as f64 * updates_per_row
        / (UPDATES_PER_PARTIAL_ENTRY * partial_entries.max(1) as f64);
    // `as` saturates: a huge estimate is capped like any other.
    let chunks = (by_work as usize).clamp(1, MAX_CHUNKS);
    row_chunks(rows, MIN_CHUNK_ROWS, chunks)
}

/// Entries of a packed lower triangle before its row `q`: `q(q+1)/2`.
pub(super) fn triangle_start(q: usize) -> usize {
    q * (q + 1) / 2
}

/// Row ranges of a packed lower triangle with `rows` rows (plus `extra_bytes_per_row`
/// beside each row, such as a row of registers), holding about equal shares of its
/// bytes, each at least about [`STRIPE_BYTES`], at most one per thread of the current
/// pool: one stripe `0..rows` when it is small or on one thread.
///
/// Every task reads all the rows of its chunk whatever its stripe, so each stripe adds a
/// pass over the rows' indices (measured at d = 1,000 on one thread: a Hessian 1.4× slower
/// with 4 stripes, 1.8× with 16, than with one). Stripes never change a bit of the
/// result, so their number may follow the threads.
pub(super) fn triangle_stripes(rows: usize, extra_bytes_per_row: usize) -> Vec<Range<usize>> {
    let bytes_before = |q: usize| 8 * triangle_start(q) + extra_bytes_per_row * q;
    let total = bytes_before(rows);
    let most = MAX_STRIPES
        .min(rayon::current_num_threads())
        .min(rows.max(1));
    let count = (total / STRIPE_BYTES).clamp(1, most);
    let mut bounds = vec![0];
    let mut q = 0;
    for s in 1..count {
        let target = total * s / count;
        while q < rows && bytes_before(q) < target {
            q += 1;
        }
        if q > *bounds.last().unwrap() && q < rows {
            bounds.push(q);
        }
    }
    bounds.push(rows);
    bounds.windows(2).map(|b| b[0]..b[1]).collect()
}

/// `out = parts[0] + parts[1] + …` entry by entry, adding in the parts' order (the bits of
/// a serial sum for any thread count), in parallel over blocks of entries.
/// `parts` must be non-empty, each part as long as `out`.
pub(super) fn sum_in_order_into<T>(out: &mut [T], parts: &[&[T]])
where
    T: Copy + AddAssign + Send + Sync,
{
    out.par_chunks_mut(MERGE_BLOCK)
        .enumerate()
        .for_each(|(block, out)| {
            let range = block * MERGE_BLOCK..block * MERGE_BLOCK + out.len();
            out.copy_from_slice(&parts[0][range.clone()]);
            for part in &parts[1..] {
                for (sum, &x) in out.iter_mut().zip(&part[range.clone()]) {
                    *sum += x;
                }
            }
        });
}

/// The tasks: every (chunk, stripe) pair, chunk-major (task `c·stripes + s`).
pub(super) fn tasks(chunks: usize, stripes: usize) -> Vec<(usize, usize)> {
    (0..chunks)
        .flat_map(|c| (0..stripes).map(move |s| (c, s)))
        .collect()
}

/// The range of a row's entries whose sorted indices `idx` fall in `stripe`.
/// Counted rather than searched: a row's dozen entries are compared without a branch
/// (a binary search was a quarter of the Gram's time at d = 1,000 with 16 stripes).
pub(super) fn stripe_entries(idx: &[u32], stripe: &Range<usize>) -> Range<usize> {
    let before = |bound: usize| idx.iter().filter(|&&q| (q as usize) < bound).count();
    before(stripe.start)..before(stripe.end)
}

/// Merges the tasks' partials (chunk-major, see [`tasks`]) into `total`: stripe `s` of
/// `total`, entries `offset(start)..offset(end)`, gets the sum in chunk order of the
/// chunks' `field` for that stripe.
pub(super) fn merge_stripes<P: Sync, T>(
    total: &mut [T],
    partials: &[P],
    stripes: &[Range<usize>],
    offset: impl Fn(usize) -> usize,
    field: impl Fn(&P) -> &[T],
) where
    T: Copy + AddAssign + Send + Sync,
{
    for (s, stripe) in stripes.iter().enumerate() {
        let parts: Vec<&[T]> = partials
            .iter()
            .skip(s)
            .step_by(stripes.len())
            .map(&field)
            .collect();
        sum_in_order_into(&mut total[offset(stripe.start)..offset(stripe.end)], &parts);
    }
}

/// Side of the square tiles in which [`add_to_lower`] moves values.
const TILE: usize = 64;

/// `h[(i, j)] += value(i, j)` on the lower triangle of `h`, in parallel over blocks of
/// [`TILE`] columns. The values come row by row from packed row-major triangles while
/// faer stores `h` by column: tile by tile, both sides of the transposition stay in the
/// L1 cache (entry by entry down whole columns, the reads missed the cache).
pub(super) fn add_to_lower(h: MatMut<'_, f64>, value: impl Fn(usize, usize) -> f64 + Sync) {
    let d = h.nrows();
    h.par_col_chunks_mut(TILE)
        .enumerate()
        .for_each(|(block, mut columns)| {
            let first_column = block * TILE;
            for tile in (first_column..d).step_by(TILE) {
                for i in tile..(tile + TILE).min(d) {
                    for k in 0..columns.ncols().min(i + 1 - first_column) {
                        columns[(i, k)] += value(i, first_column + k);
                    }
                }
            }
        });
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::design) fn on_threads<T: Send>(
        threads: usize,
        run: impl FnOnce() -> T + Send,
    ) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(run)
    }

    #[test]
    fn stripes_cover_the_triangle_once_in_balanced_pieces_one_per_thread_at_most() {
        for (rows, extra) in [(0, 0), (1, 0), (3, 64), (100, 64), (994, 64), (5_000, 0)] {
            let stripes = on_threads(16, || triangle_stripes(rows, extra));
            assert_eq!(stripes.first().unwrap().start, 0);
            assert_eq!(stripes.last().unwrap().end, rows);
            assert!(stripes.windows(2).all(|w| w[0].end == w[1].start));
            assert!(rows == 0 || stripes.iter().all(|s| !s.is_empty()));
            let bytes = |s: &Range<usize>| {
                8 * (triangle_start(s.end) - triangle_start(s.start)) + extra * s.len()
            };
            // Equal shares, to within one row of the triangle.
            let share = bytes(&(0..rows)) / stripes.len();
            assert!(stripes.iter().all(|s| bytes(s) <= share + 8 * rows + extra));
            assert_eq!(
                on_threads(1, || triangle_stripes(rows, extra)),
                vec![0..rows]
            );
        }
        // d = 1,000: a 4 MB triangle; d = 105: one stripe of 40 kB.
        assert_eq!(on_threads(16, || triangle_stripes(994, 64)).len(), 15);
        assert_eq!(on_threads(4, || triangle_stripes(994, 64)).len(), 4);
        assert_eq!(on_threads(16, || triangle_stripes(100, 64)).len(), 1);
    }

    #[test]
    fn chunks_are_cut_only_where_their_updates_outweigh_their_partials() {
        // d = 105 at 10⁶ rows: small partials, many updates: the most chunks.
        let every_row = vec![0.5; 1_000_000];
        assert_eq!(gram_row_chunks(&every_row, 50.0, 6_500).len(), MAX_CHUNKS);
        // A sampled Hessian there (one row in 190): the work of 5,264 rows.
        let sampled: Vec<f64> = (0..1_000_000)
            .map(|i| if i % 190 == 0 { 0.5 } else { 0.0 })
            .collect();
        assert_eq!(gram_row_chunks(&sampled, 50.0, 6_500).len(), 10);
        // d = 1,000 at 30,000 rows: 1.5 million updates into a 4 MB partial: one chunk.
        assert_eq!(
            gram_row_chunks(&every_row[..30_000], 50.0, 500_000).len(),
            1
        );
        // Never fewer than 2048 rows a chunk.
        assert_eq!(gram_row_chunks(&every_row[..10_000], 1e9, 1).len(), 4);
    }

    #[test]
    fn the_parallel_merge_has_the_bits_of_the_serial_sum_in_order() {
        let parts: Vec<Vec<f64>> = (0..5)
            .map(|p| {
                (0..10_000)
                    .map(|i| ((i * 7 + p * 13) % 17) as f64 / 3.0 - 2.9 + 1e-9 * p as f64)
                    .collect()
            })
            .collect();
        let mut serial = parts[0].clone();
        for part in &parts[1..] {
            serial.iter_mut().zip(part).for_each(|(s, x)| *s += x);
        }
        let slices: Vec<&[f64]> = parts.iter().map(Vec::as_slice).collect();
        for threads in [1, 3] {
            let mut out = vec![f64::NAN; 10_000];
            on_threads(threads, || sum_in_order_into(&mut out, &slices));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&out), bits(&serial));
        }
    }
}
