//! The weighted Gram `Σ_i s_i x_i x_iᵀ` of sparse rows in which a few columns hold many of
//! the entries (the numeric columns of one-hot encoded data: on Adult 8 of 105 columns
//! hold 7 of a row's 14 entries).
//!
//! The scattered kernel of [`super::CsrRows`] makes `k(k+1)/2` updates at scattered
//! addresses for a row of `k` entries. Here the leading (densest) columns of every row are
//! kept as a short dense vector of whole SIMD registers, so that every update involving
//! one of them is part of a register-wide multiply-add: the row's dense vector times each
//! of its own entries. Only the updates between two trailing entries stay scattered (on
//! Adult about 28 per row instead of 105).
//!
//! The registers are `wide::f64x8` (safe, portable; AVX-512 where the build targets it):
//! with plain arrays the compiler turned the loop over a row's entries into AVX-512
//! scatters, several times slower than the scalar kernel.

use faer::MatMut;
use rayon::prelude::*;
use wide::f64x8;

use std::ops::Range;

use super::gram_tasks::{
    add_to_lower, gram_row_chunks, merge_stripes, stripe_entries, sum_in_order_into, tasks,
    triangle_start, triangle_stripes,
};
use super::sparse::{add_outer_product_lower, sparse_dot};
use super::{RowBuffers, WeighChunk};

/// f64 lanes of one register.
const LANES: usize = 8;
/// Most registers of leading columns (32 columns).
const MAX_REGISTERS: usize = 4;
/// Rows per parallel task of building the split (fewer are not worth a thread).
const BUILD_CHUNK_ROWS: usize = 4096;
/// The modelled cost of one register-wide multiply-add, in scattered updates: both are a
/// load, a multiply-add and a store.
const REGISTER_UPDATE_COST: f64 = 1.0;

/// Rows split into a dense block over the `leading` columns and sparse trailing entries.
///
/// The block stores absent entries as zeros, so a non-finite weight makes every entry of
/// the leading and cross blocks non-finite, not only those of the row's own pairs (the
/// Hessian is unusable either way: its factorization fails).
#[derive(Clone)]
pub(super) struct SplitRows {
    /// Registers per row of the dense block (`leading.len()` columns, zero-padded).
    registers: usize,
    /// Original column of each slot of the dense block (increasing).
    leading: Vec<u32>,
    /// Original column of each trailing position (increasing).
    trailing: Vec<u32>,
    /// Slot of each original column: its place in the dense block, or the block's width
    /// (`registers · LANES`) plus its trailing position.
    slot: Vec<u32>,
    /// Mean updates a row makes to the Gram's partial sums (register-wide or scattered).
    updates_per_row: f64,
    /// `rows × registers`: each row's leading entries (zero where absent and in the padding).
    dense: Vec<f64x8>,
    /// Each row's trailing entries: positions into `trailing` (increasing) and values.
    indptr: Vec<usize>,
    positions: Vec<u32>,
    values: Vec<f64>,
}

impl SplitRows {
    /// The split of the CSR rows (`indptr`, `indices`, `values`, with `colptr` the column
    /// pointers of their column-major copy), or `None` when the modelled cost favours the
    /// scattered kernel or the copy does not fit in memory (the split only speeds the Gram
    /// up: the scattered kernel computes the same sums without it).
    pub(super) fn new(
        indptr: &[usize],
        indices: &[u32],
        values: &[f64],
        colptr: &[usize],
    ) -> Option<Self> {
        let cols = colptr.len() - 1;
        let leading = leading_columns(indptr.len() - 1, colptr);
        if leading.is_empty() {
            return None;
        }
        Self::with_leading(cols, indptr, indices, values, leading).ok()
    }

    /// The split with the given leading columns (1 to 32 of them, distinct, `< cols`).
    fn with_leading(
        cols: usize,
        indptr: &[usize],
        indices: &[u32],
        values: &[f64],
        mut leading: Vec<u32>,
    ) -> Result<Self, crate::OptimError> {
        let rows = indptr.len() - 1;
        leading.sort_unstable();
        let registers = leading.len().div_ceil(LANES);
        let width = registers * LANES;
        // Slot of each original column: its place in the dense block, or width + its
        // trailing position.
        let mut slot = super::filled("the split copy's column slots", cols, u32::MAX)?;
        for (k, &c) in leading.iter().enumerate() {
            slot[c as usize] = k as u32;
        }
        let mut trailing = Vec::with_capacity(cols - leading.len());
        for (c, slot) in slot.iter_mut().enumerate() {
            if *slot == u32::MAX {
                *slot = (width + trailing.len()) as u32;
                trailing.push(c as u32);
            }
        }
        // Each row's trailing entries first, so that chunks of rows can fill their own
        // parts of the arrays in parallel.
        let mut split_indptr = super::filled("the split copy's row pointers", rows + 1, 0usize)?;
        split_indptr[1..]
            .par_iter_mut()
            .with_min_len(BUILD_CHUNK_ROWS)
            .enumerate()
            .for_each(|(row, count)| {
                *count = indices[indptr[row]..indptr[row + 1]]
                    .iter()
                    .filter(|&&c| slot[c as usize] as usize >= width)
                    .count();
            });
        let mut updates = 0.0;
        for row in 0..rows {
            let count = split_indptr[row + 1];
            split_indptr[row + 1] += split_indptr[row];
            updates += (registers * (leading.len() + count) + triangle_start(count)) as f64;
        }
        let mut dense = super::filled(
            "the split copy's dense block",
            rows.saturating_mul(registers),
            f64x8::ZERO,
        )?;
        let mut positions = super::filled("the split copy's positions", split_indptr[rows], 0u32)?;
        let mut split_values = super::filled("the split copy's values", split_indptr[rows], 0.0)?;
        let chunks = super::row_chunks(rows, BUILD_CHUNK_ROWS, rayon::current_num_threads());
        let mut parts = Vec::with_capacity(chunks.len());
        let (mut dense_left, mut positions_left, mut values_left) = (
            dense.as_mut_slice(),
            positions.as_mut_slice(),
            split_values.as_mut_slice(),
        );
        for chunk in chunks {
            let entries = split_indptr[chunk.end] - split_indptr[chunk.start];
            let (dense_part, rest) = dense_left.split_at_mut(chunk.len() * registers);
            dense_left = rest;
            let (positions_part, rest) = positions_left.split_at_mut(entries);
            positions_left = rest;
            let (values_part, rest) = values_left.split_at_mut(entries);
            values_left = rest;
            parts.push((chunk, dense_part, positions_part, values_part));
        }
        parts
            .into_par_iter()
            .for_each(|(chunk, dense_part, positions_part, values_part)| {
                let mut row_block = vec![0.0; width];
                let mut next = 0;
                for (registers_of_row, row) in dense_part.chunks_exact_mut(registers).zip(chunk) {
                    row_block.fill(0.0);
                    for e in indptr[row]..indptr[row + 1] {
                        let s = slot[indices[e] as usize] as usize;
                        if s < width {
                            row_block[s] = values[e];
                        } else {
                            positions_part[next] = (s - width) as u32;
                            values_part[next] = values[e];
                            next += 1;
                        }
                    }
                    for (register, lanes) in registers_of_row
                        .iter_mut()
                        .zip(row_block.chunks_exact(LANES))
                    {
                        *register = f64x8::new(std::array::from_fn(|k| lanes[k]));
                    }
                }
            });
        Ok(Self {
            registers,
            leading,
            trailing,
            slot,
            updates_per_row: updates / rows as f64,
            dense,
            indptr: split_indptr,
            positions,
            values: split_values,
        })
    }

    /// `h += Σ_i s_i x_i x_iᵀ` on the lower triangle of the d×d `h`, as
    /// [`super::Design::add_weighted_gram_lower`] asks: tasks of row chunks and stripes of
    /// trailing columns (see `gram_tasks`), so the same bits for any thread count.
    pub(super) fn add_weighted_gram_lower(&self, weights: &[f64], h: MatMut<'_, f64>) {
        let r = self.registers;
        let sizes = self.partial_sizes();
        let entries = LANES * (sizes[0] + sizes[1]) + sizes[2];
        // A stripe of trailing columns holds their rows of the cross block and of the
        // trailing triangle; the first stripe also holds the leading block.
        let stripes = triangle_stripes(self.trailing.len(), 8 * LANES * r);
        let chunks = gram_row_chunks(weights, self.updates_per_row, entries);
        let partials: Vec<Partial> = tasks(chunks.len(), stripes.len())
            .into_par_iter()
            .map(|(c, s)| {
                let stripe = &stripes[s];
                let mut partial = Partial::zeros([
                    if s == 0 { sizes[0] } else { 0 },
                    stripe.len() * r,
                    triangle_start(stripe.end) - triangle_start(stripe.start),
                ]);
                let task = Task {
                    rows: chunks[c].clone(),
                    stripe: stripe.clone(),
                    whole: stripes.len() == 1,
                    leading_block: s == 0,
                };
                // The register count as a constant: each row's updates become straight
                // code with no loop over registers.
                match r {
                    1 => self.add_rows::<1>(&mut partial, task, weights),
                    2 => self.add_rows::<2>(&mut partial, task, weights),
                    3 => self.add_rows::<3>(&mut partial, task, weights),
                    _ => self.add_rows::<MAX_REGISTERS>(&mut partial, task, weights),
                }
                partial
            })
            .collect();
        let mut total = Partial::zeros(sizes);
        let leading_parts: Vec<&[f64x8]> = partials
            .iter()
            .step_by(stripes.len())
            .map(|p| p.dense.as_slice())
            .collect();
        sum_in_order_into(&mut total.dense, &leading_parts);
        merge_stripes(
            &mut total.cross,
            &partials,
            &stripes,
            |q| q * r,
            |p| &p.cross,
        );
        merge_stripes(
            &mut total.trailing,
            &partials,
            &stripes,
            triangle_start,
            |p| &p.trailing,
        );
        // Moved to the original columns once, after the chunks are summed.
        let width = (r * LANES) as u32;
        let lane = |block: &[f64x8], row: u32, b: u32| {
            let (row, b) = (row as usize, b as usize);
            block[row * r + b / LANES].as_array()[b % LANES]
        };
        add_to_lower(h, |i, j| {
            let (a, b) = (self.slot[i], self.slot[j]);
            let (later, earlier) = (a.max(b), a.min(b));
            match (earlier < width, later < width) {
                (true, true) => lane(&total.dense, later, earlier),
                (true, false) => lane(&total.cross, later - width, earlier),
                _ => {
                    let (q, p) = ((later - width) as usize, (earlier - width) as usize);
                    total.trailing[triangle_start(q) + p]
                }
            }
        });
    }

    /// [`super::Design::multiply_weigh_transpose`] on the split rows: a row's leading
    /// entries take `R` register-wide multiply-adds in both products, so only its trailing
    /// entries are gathered (for `X w`) and scattered (for `Xᵀ v`): on Adult 7 of 14.
    pub(super) fn multiply_weigh_transpose(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &WeighChunk<'_>,
        rows: RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        match self.registers {
            1 => self.fused_pass::<1>(w, chunk_rows, weigh, rows, out),
            2 => self.fused_pass::<2>(w, chunk_rows, weigh, rows, out),
            3 => self.fused_pass::<3>(w, chunk_rows, weigh, rows, out),
            _ => self.fused_pass::<MAX_REGISTERS>(w, chunk_rows, weigh, rows, out),
        }
    }

    fn fused_pass<const R: usize>(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &WeighChunk<'_>,
        rows: RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        let chunk_rows = chunk_rows.max(1);
        let w_leading: [f64x8; R] = std::array::from_fn(|r| {
            f64x8::new(std::array::from_fn(|k| {
                self.leading
                    .get(r * LANES + k)
                    .map_or(0.0, |&c| w[c as usize])
            }))
        });
        let w_trailing: Vec<f64> = self.trailing.iter().map(|&c| w[c as usize]).collect();
        let parts: Vec<(f64, [f64x8; R], Vec<f64>)> = rows
            .margins
            .par_chunks_mut(chunk_rows)
            .zip(rows.weights.par_chunks_mut(chunk_rows))
            .zip(rows.extra.par_chunks_mut(chunk_rows))
            .enumerate()
            .map(|(chunk, ((margins, weights), extra))| {
                let first = chunk * chunk_rows;
                for (i, margin) in (first..).zip(margins.iter_mut()) {
                    let x = &self.dense[i * R..][..R];
                    let mut leading = x[0] * w_leading[0];
                    for r in 1..R {
                        leading = x[r].mul_add(w_leading[r], leading);
                    }
                    let entries = self.indptr[i]..self.indptr[i + 1];
                    let trailing = sparse_dot(
                        &self.positions[entries.clone()],
                        &self.values[entries],
                        &w_trailing,
                    );
                    *margin = leading.reduce_add() + trailing;
                }
                let partial = weigh(first, margins, weights, extra);
                let mut leading = [f64x8::ZERO; R];
                let mut trailing = vec![0.0; self.trailing.len()];
                for (i, &s) in (first..).zip(weights.iter()) {
                    // Rows of zero slope (the Huber loss past its hinge) add nothing.
                    if s == 0.0 {
                        continue;
                    }
                    let scaled = f64x8::splat(s);
                    for (sum, x) in leading.iter_mut().zip(&self.dense[i * R..][..R]) {
                        *sum = x.mul_add(scaled, *sum);
                    }
                    let entries = self.indptr[i]..self.indptr[i + 1];
                    for (&q, &v) in self.positions[entries.clone()]
                        .iter()
                        .zip(&self.values[entries])
                    {
                        trailing[q as usize] += s * v;
                    }
                }
                (partial, leading, trailing)
            })
            .collect();
        let mut partials = Vec::with_capacity(parts.len());
        let mut leading = [f64x8::ZERO; R];
        let mut trailing = vec![0.0; self.trailing.len()];
        // Chunk by chunk, in order: the same bits for any thread count.
        for (partial, chunk_leading, chunk_trailing) in parts {
            partials.push(partial);
            for (sum, x) in leading.iter_mut().zip(chunk_leading) {
                *sum += x;
            }
            for (sum, x) in trailing.iter_mut().zip(chunk_trailing) {
                *sum += x;
            }
        }
        for (slot, &c) in self.leading.iter().enumerate() {
            out[c as usize] = leading[slot / LANES].as_array()[slot % LANES];
        }
        for (&sum, &c) in trailing.iter().zip(&self.trailing) {
            out[c as usize] = sum;
        }
        partials
    }

    /// Registers of the dense and cross blocks and entries of the trailing triangle.
    fn partial_sizes(&self) -> [usize; 3] {
        let t = self.trailing.len();
        [
            self.leading.len() * self.registers,
            t * self.registers,
            t * (t + 1) / 2,
        ]
    }

    /// Adds `s_i·x_i x_iᵀ` for the task's rows (`R` registers of leading columns) to its
    /// stripe: entry (a, b) gets `x_b·(s·x_a)`, where `a` is a trailing entry if either
    /// is, else the later leading slot; `partial` holds the rows of the stripe's trailing
    /// columns (and the leading block if the task has it).
    fn add_rows<const R: usize>(&self, partial: &mut Partial, task: Task, weights: &[f64]) {
        let lo = task.stripe.start;
        for i in task.rows {
            let s = weights[i];
            // Rows of zero weight (the Huber loss outside its quadratic band, the rows a
            // sampled Hessian skips) add nothing.
            if s == 0.0 {
                continue;
            }
            let entries = self.indptr[i]..self.indptr[i + 1];
            let row = (&self.positions[entries.clone()], &self.values[entries]);
            let ours = if task.whole {
                0..row.0.len()
            } else {
                stripe_entries(row.0, &task.stripe)
            };
            if ours.is_empty() && !task.leading_block {
                continue;
            }
            let x: [f64x8; R] = std::array::from_fn(|r| self.dense[i * R + r]);
            if task.leading_block {
                for (a, sums) in partial
                    .dense
                    .chunks_exact_mut(R)
                    .take(self.leading.len())
                    .enumerate()
                {
                    let scaled = f64x8::splat(s * x[a / LANES].as_array()[a % LANES]);
                    for (sum, x) in sums.iter_mut().zip(&x) {
                        *sum = x.mul_add(scaled, *sum);
                    }
                }
            }
            for (&q, &v) in row.0[ours.clone()].iter().zip(&row.1[ours.clone()]) {
                let scaled = f64x8::splat(s * v);
                let sums = &mut partial.cross[(q as usize - lo) * R..][..R];
                for (sum, x) in sums.iter_mut().zip(&x) {
                    *sum = x.mul_add(scaled, *sum);
                }
            }
            add_outer_product_lower(&mut partial.trailing, lo, s, row, ours);
        }
    }
}

/// One task of the Gram: a chunk of rows summed into one stripe of trailing columns.
struct Task {
    rows: Range<usize>,
    stripe: Range<usize>,
    /// Whether the stripe is the whole triangle (every entry of a row is then its own).
    whole: bool,
    /// Whether the task also sums the leading block (the first stripe's tasks do).
    leading_block: bool,
}

/// One chunk's sums: the leading block (`p` rows of registers, of which the lower triangle
/// is used), the trailing × leading block and the packed lower triangle of the trailing
/// columns.
struct Partial {
    dense: Vec<f64x8>,
    cross: Vec<f64x8>,
    trailing: Vec<f64>,
}

impl Partial {
    fn zeros([dense, cross, trailing]: [usize; 3]) -> Self {
        Self {
            dense: vec![f64x8::ZERO; dense],
            cross: vec![f64x8::ZERO; cross],
            trailing: vec![0.0; trailing],
        }
    }
}

/// The columns to store densely, by a cost model per row: `E[s(s+1)/2]` scattered updates
/// for the `s` trailing entries, plus one register update per register of the dense block
/// for each leading column and each trailing entry. Columns are taken densest first; empty
/// if no split beats the scattered kernel (`E[k(k+1)/2]` for all `k` entries).
fn leading_columns(rows: usize, colptr: &[usize]) -> Vec<u32> {
    let density: Vec<f64> = colptr
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / rows.max(1) as f64)
        .collect();
    let mut by_density: Vec<usize> = (0..density.len()).collect();
    by_density.sort_by(|&a, &b| density[b].total_cmp(&density[a]).then(a.cmp(&b)));
    // Trailing entries per row, as independent Bernoulli counts: mean and variance.
    let mut mean: f64 = density.iter().sum();
    let mut variance: f64 = density.iter().map(|r| r * (1.0 - r)).sum();
    let scattered = |mean: f64, variance: f64| 0.5 * (mean * mean + variance.max(0.0) + mean);
    let mut best = (scattered(mean, variance), 0);
    for (k, &c) in by_density.iter().take(MAX_REGISTERS * LANES).enumerate() {
        let p = k + 1;
        mean = (mean - density[c]).max(0.0);
        variance -= density[c] * (1.0 - density[c]);
        let registers = p.div_ceil(LANES) as f64;
        let cost = scattered(mean, variance) + REGISTER_UPDATE_COST * registers * (p as f64 + mean);
        if cost < best.0 {
            best = (cost, p);
        }
    }
    by_density[..best.1].iter().map(|&c| c as u32).collect()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::CsrRows;
    use crate::design::sparse::column_pointers;
    use faer::Mat;

    /// Rows with `dense` columns present in most rows (values varying) and one-hot groups.
    pub(in crate::design) fn rows(
        n: usize,
        dense: usize,
        groups: &[usize],
    ) -> (usize, Vec<usize>, Vec<u32>, Vec<f64>) {
        let cols = dense + groups.iter().sum::<usize>();
        let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for c in 0..dense {
                // Every fifth row misses a column: the dense block holds zeros too.
                if (i + c) % 5 != 0 {
                    indices.push(c as u32);
                    values.push(((i * 7 + c * 13) % 17) as f64 / 17.0 - 0.4);
                }
            }
            let mut start = dense;
            for (g, &levels) in groups.iter().enumerate() {
                indices.push((start + ((i * 7919 + g * 104_729) / 13) % levels) as u32);
                values.push(0.3 + (i % 3) as f64 * 0.1);
                start += levels;
            }
            indptr.push(indices.len());
        }
        (cols, indptr, indices, values)
    }

    /// `Σ_i s_i x_i x_iᵀ` the plain way, lower triangle.
    fn reference(
        cols: usize,
        indptr: &[usize],
        indices: &[u32],
        values: &[f64],
        s: &[f64],
    ) -> Mat<f64> {
        let mut h = Mat::<f64>::zeros(cols, cols);
        for i in 0..indptr.len() - 1 {
            let range = indptr[i]..indptr[i + 1];
            for a in range.clone() {
                for b in range.clone() {
                    let (r, c) = (indices[a] as usize, indices[b] as usize);
                    if c <= r {
                        h[(r, c)] += s[i] * values[a] * values[b];
                    }
                }
            }
        }
        h
    }

    fn weights(n: usize) -> Vec<f64> {
        // Some zero weights (skipped rows), some negative (the kernel must not assume signs).
        (0..n)
            .map(|i| {
                if i % 7 == 0 {
                    0.0
                } else {
                    ((i % 11) as f64 - 3.0) / 10.0
                }
            })
            .collect()
    }

    fn assert_close(h: &Mat<f64>, expected: &Mat<f64>) {
        let scale = (0..h.nrows())
            .map(|i| expected[(i, i)].abs())
            .fold(1.0, f64::max);
        for r in 0..h.nrows() {
            for c in 0..h.ncols() {
                let gap = (h[(r, c)] - expected[(r, c)]).abs();
                assert!(
                    gap <= 1e-12 * scale,
                    "({r}, {c}): {} vs {}",
                    h[(r, c)],
                    expected[(r, c)]
                );
            }
        }
    }

    #[test]
    fn every_width_of_leading_block_gives_the_plain_gram() {
        let (cols, indptr, indices, values) = rows(5_000, 12, &[9, 4, 30]);
        let s = weights(5_000);
        let expected = reference(cols, &indptr, &indices, &values, &s);
        // 1 to 4 registers, full and partial, leading columns dense, one-hot or mixed.
        for leading in [
            vec![0],
            vec![3, 1, 7, 0, 2, 5, 4, 6],
            (0..9).collect(),
            (0..12).chain([20, 14, 40, 33]).collect::<Vec<u32>>(),
            (5..29).collect(),
            (10..42).collect(),
        ] {
            let split =
                SplitRows::with_leading(cols, &indptr, &indices, &values, leading.clone()).unwrap();
            let mut h = Mat::<f64>::zeros(cols, cols);
            split.add_weighted_gram_lower(&s, h.as_mut());
            assert_close(&h, &expected);
            for r in 0..cols {
                for c in r + 1..cols {
                    assert_eq!(
                        h[(r, c)],
                        0.0,
                        "upper triangle touched, leading {leading:?}"
                    );
                }
            }
        }
    }

    /// A loss stand-in for the fused pass: zero weight on every 7th row (skipped rows),
    /// the extra output twice the margin, and a partial sum that also checks `first`.
    fn weigh(first: usize, margins: &[f64], weights: &mut [f64], extra: &mut [f64]) -> f64 {
        for (k, ((&m, w), e)) in margins.iter().zip(weights).zip(extra).enumerate() {
            *w = if (first + k).is_multiple_of(7) {
                0.0
            } else {
                m.tanh() - 0.3
            };
            *e = 2.0 * m;
        }
        margins.iter().sum::<f64>() + first as f64
    }

    /// The fused pass the plain way: margins, weights, extra, chunk sums and `Xᵀ weights`.
    pub(in crate::design) fn fused_reference(
        (cols, indptr, indices, values): (usize, &[usize], &[u32], &[f64]),
        w: &[f64],
        chunk_rows: usize,
    ) -> [Vec<f64>; 5] {
        let n = indptr.len() - 1;
        let margins: Vec<f64> = (0..n)
            .map(|i| {
                (indptr[i]..indptr[i + 1])
                    .map(|e| values[e] * w[indices[e] as usize])
                    .sum()
            })
            .collect();
        let (mut weights, mut extra) = (vec![0.0; n], vec![0.0; n]);
        let partials = (0..n)
            .step_by(chunk_rows)
            .map(|first| {
                let end = (first + chunk_rows).min(n);
                let (w, e) = (&mut weights[first..end], &mut extra[first..end]);
                weigh(first, &margins[first..end], w, e)
            })
            .collect();
        let mut out = vec![0.0; cols];
        for i in 0..n {
            for e in indptr[i]..indptr[i + 1] {
                out[indices[e] as usize] += weights[i] * values[e];
            }
        }
        [margins, weights, extra, partials, out]
    }

    /// Runs `design`'s fused pass with the stand-in loss.
    pub(in crate::design) fn fused_pass_of(
        design: &dyn crate::Design,
        w: &[f64],
        chunk_rows: usize,
    ) -> [Vec<f64>; 5] {
        let n = design.rows();
        let (mut margins, mut weights, mut extra) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let mut out = vec![f64::NAN; design.cols()];
        let partials = design.multiply_weigh_transpose(
            w,
            chunk_rows,
            &weigh,
            RowBuffers {
                margins: &mut margins,
                weights: &mut weights,
                extra: &mut extra,
            },
            &mut out,
        );
        [margins, weights, extra, partials, out]
    }

    pub(in crate::design) fn assert_all_close(found: &[Vec<f64>; 5], expected: &[Vec<f64>; 5]) {
        let names = ["margins", "weights", "extra", "partial sums", "Xᵀ weights"];
        for ((name, found), expected) in names.iter().zip(found).zip(expected) {
            assert_eq!(found.len(), expected.len(), "{name}");
            for (k, (a, b)) in found.iter().zip(expected).enumerate() {
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                    "{name}[{k}]: {a} vs {b}"
                );
            }
        }
    }

    #[test]
    fn the_fused_pass_matches_the_plain_products_for_every_width_of_leading_block() {
        let (cols, indptr, indices, values) = rows(5_000, 12, &[9, 4, 30]);
        let w: Vec<f64> = (0..cols)
            .map(|j| ((j * 37) % 11) as f64 / 5.0 - 1.0)
            .collect();
        for chunk_rows in [700, 4096, 5_000, 9_999] {
            let expected = fused_reference((cols, &indptr, &indices, &values), &w, chunk_rows);
            for leading in [
                vec![0],
                (0..9).collect(),
                (0..12).chain([20, 14, 40, 33]).collect::<Vec<u32>>(),
                (10..42).collect(),
            ] {
                let split =
                    SplitRows::with_leading(cols, &indptr, &indices, &values, leading.clone())
                        .unwrap();
                let n = indptr.len() - 1;
                let (mut margins, mut weights, mut extra) =
                    (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let mut out = vec![f64::NAN; cols];
                let partials = split.multiply_weigh_transpose(
                    &w,
                    chunk_rows,
                    &weigh,
                    RowBuffers {
                        margins: &mut margins,
                        weights: &mut weights,
                        extra: &mut extra,
                    },
                    &mut out,
                );
                assert_all_close(&[margins, weights, extra, partials, out], &expected);
            }
        }
    }

    /// A Gram big enough for several row chunks and, on many threads, several stripes:
    /// the plain sum, with the same bits on 1, 3 and 16 threads, with the split copy (8
    /// dense columns) and without (one-hot columns only).
    #[test]
    fn a_gram_cut_into_chunks_and_stripes_is_the_plain_sum_with_the_same_bits_on_any_thread_count()
    {
        use crate::design::gram_tasks::tests::on_threads;
        use crate::design::gram_tasks::{gram_row_chunks, triangle_stripes};
        let n = 30_000;
        let s = weights(n);
        for dense_columns in [8, 0] {
            let (cols, indptr, indices, values) = rows(n, dense_columns, &[40; 12]);
            let x = CsrRows::new(cols, indptr.clone(), indices.clone(), values.clone()).unwrap();
            let expected = reference(cols, &indptr, &indices, &values, &s);
            let gram = |threads: usize| {
                on_threads(threads, || {
                    let mut h = Mat::<f64>::zeros(cols, cols);
                    crate::Design::add_weighted_gram_lower(&x, &s, h.as_mut());
                    h
                })
            };
            let one = gram(1);
            assert_close(&one, &expected);
            let bits = |h: &Mat<f64>| {
                (0..cols)
                    .flat_map(|j| (0..cols).map(move |i| (i, j)))
                    .map(|(i, j)| h[(i, j)].to_bits())
                    .collect::<Vec<_>>()
            };
            for threads in [3, 16] {
                assert!(bits(&gram(threads)) == bits(&one), "{threads} threads");
            }
            // The cut this test is about: several chunks, and stripes on 16 threads.
            let trailing = 480;
            let per_row = (12 * 13 / 2 + if dense_columns > 0 { 8 + 12 } else { 0 }) as f64;
            let entries = trailing * (trailing + 1) / 2;
            assert!(gram_row_chunks(&s, per_row, entries).len() >= 3);
            assert!(on_threads(16, || triangle_stripes(trailing, 0)).len() >= 3);
        }
    }

    #[test]
    fn the_split_is_taken_for_dense_columns_only_and_matches_through_csr_rows() {
        let (cols, indptr, indices, values) = rows(5_000, 8, &[9, 4, 30]);
        let x = CsrRows::new(cols, indptr.clone(), indices.clone(), values.clone()).unwrap();
        let colptr = column_pointers(cols, &indices).unwrap();
        let chosen = leading_columns(5_000, &colptr);
        assert!(
            !chosen.is_empty() && chosen.iter().all(|&c| c < 8),
            "{chosen:?}"
        );
        let s = weights(5_000);
        let mut h = Mat::<f64>::zeros(cols, cols);
        crate::Design::add_weighted_gram_lower(&x, &s, h.as_mut());
        assert_close(&h, &reference(cols, &indptr, &indices, &values, &s));
        // One-hot rows only: no column is dense enough to lead.
        let (cols, _, one_hot, _) = rows(5_000, 0, &[9, 4, 30]);
        assert!(leading_columns(5_000, &column_pointers(cols, &one_hot).unwrap()).is_empty());
    }

    /// The split built in parallel chunks of rows is the same on 1, 3 and 16 threads (one
    /// chunk: the rows in order), and every row's entries are where the split says.
    #[test]
    fn the_split_built_in_chunks_is_the_same_on_any_thread_count() {
        use crate::design::gram_tasks::tests::on_threads;
        let (cols, indptr, indices, values) = rows(30_000, 8, &[40; 12]);
        let colptr = column_pointers(cols, &indices).unwrap();
        let build = |threads| {
            on_threads(threads, || {
                SplitRows::new(&indptr, &indices, &values, &colptr).expect("8 dense columns lead")
            })
        };
        let one = build(1);
        let lanes = |split: &SplitRows| -> Vec<f64> {
            split.dense.iter().flat_map(|r| r.to_array()).collect()
        };
        for threads in [3, 16] {
            let other = build(threads);
            assert_eq!(other.leading, one.leading);
            assert_eq!(other.slot, one.slot);
            assert_eq!(
                other.updates_per_row.to_bits(),
                one.updates_per_row.to_bits()
            );
            assert_eq!(lanes(&other), lanes(&one), "{threads} threads");
            assert_eq!(other.indptr, one.indptr, "{threads} threads");
            assert_eq!(other.positions, one.positions, "{threads} threads");
            assert_eq!(other.values, one.values, "{threads} threads");
        }
        // Each row, rebuilt from the split, is the row given.
        let width = one.registers * LANES;
        let dense = lanes(&one);
        for row in [0, 4095, 4096, 17_001, 29_999] {
            let mut rebuilt: Vec<(u32, f64)> = (0..one.leading.len())
                .map(|k| (one.leading[k], dense[row * width + k]))
                .filter(|&(_, v)| v != 0.0)
                .collect();
            for e in one.indptr[row]..one.indptr[row + 1] {
                rebuilt.push((one.trailing[one.positions[e] as usize], one.values[e]));
            }
            rebuilt.sort_by_key(|&(c, _)| c);
            let given: Vec<(u32, f64)> = (indptr[row]..indptr[row + 1])
                .map(|e| (indices[e], values[e]))
                .collect();
            assert_eq!(rebuilt, given, "row {row}");
        }
    }
}
