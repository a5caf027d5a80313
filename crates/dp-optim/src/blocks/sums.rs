//! Row blocks, their partial sums, and one pass over a source.

use rayon::prelude::*;

use crate::design::add_outer_product_lower;
use crate::{MarginLoss, OptimError};

/// A block of rows in compressed-sparse-row form with one label per row, borrowed from
/// whoever holds it (a decoded file block, a slice of a training set). Checked on
/// construction, so the kernels below cannot index out of bounds.
#[derive(Debug, Clone, Copy)]
pub struct RowBlock<'a> {
    cols: usize,
    offsets: &'a [u32],
    indices: &'a [u32],
    values: &'a [f64],
    labels: &'a [f64],
    /// A regression's scaled targets, one per row: each row's margin becomes the residual
    /// `y·wᵀx − t` (as [`crate::GlmObjective::with_offsets`] shifts it in memory).
    targets: Option<&'a [f64]>,
}

impl<'a> RowBlock<'a> {
    /// Row `i` holds entries `offsets[i]..offsets[i+1]` of `indices` (strictly increasing
    /// columns `< cols`) and `values` (finite); `labels[i]` (finite) is its label. `offsets`
    /// starts at 0, never decreases, ends at the entry count and has one more element than
    /// `labels`. Every violation is refused with the first offending row (within the block).
    pub fn new(
        cols: usize,
        offsets: &'a [u32],
        indices: &'a [u32],
        values: &'a [f64],
        labels: &'a [f64],
    ) -> Result<Self, OptimError> {
        let invalid = |why: String| Err(OptimError::InvalidSparseStructure(why));
        if cols == 0 {
            return Err(OptimError::EmptyData {
                rows: labels.len(),
                cols,
            });
        }
        if offsets.len() != labels.len() + 1 {
            return Err(OptimError::DimensionMismatch {
                what: "block offsets",
                expected: labels.len() + 1,
                found: offsets.len(),
            });
        }
        if indices.len() != values.len() {
            return invalid(format!(
                "block has {} indices but {} values",
                indices.len(),
                values.len()
            ));
        }
        if offsets[0] != 0 || offsets[labels.len()] as usize != indices.len() {
            return invalid(format!(
                "block offsets must run from 0 to {}, run from {} to {}",
                indices.len(),
                offsets[0],
                offsets[labels.len()]
            ));
        }
        if let Some(row) = (0..labels.len()).find(|&r| offsets[r] > offsets[r + 1]) {
            return invalid(format!("block offsets decrease at row {row}"));
        }
        // One branch-free pass decides; only a block that fails it is walked again to name
        // the first problem.
        let rows_valid = offsets.windows(2).all(|ends| {
            let range = ends[0] as usize..ends[1] as usize;
            row_is_valid(cols, &indices[range.clone()], &values[range])
        });
        if !rows_valid {
            for row in 0..labels.len() {
                let range = offsets[row] as usize..offsets[row + 1] as usize;
                let row_indices = &indices[range.clone()];
                if let Some(&col) = row_indices.iter().find(|&&c| c as usize >= cols) {
                    return invalid(format!("row {row} has column index {col} >= {cols}"));
                }
                if row_indices.windows(2).any(|w| w[0] >= w[1]) {
                    return invalid(format!(
                        "column indices of row {row} are not strictly increasing"
                    ));
                }
                if let Some(k) = values[range.clone()].iter().position(|v| !v.is_finite()) {
                    return Err(OptimError::NonFiniteData {
                        row,
                        col: row_indices[k] as usize,
                        value: values[range.start + k],
                    });
                }
            }
        }
        if let Some(index) = labels.iter().position(|y| !y.is_finite()) {
            return Err(OptimError::NonFiniteInput {
                what: "block labels",
                index,
                value: labels[index],
            });
        }
        Ok(Self {
            cols,
            offsets,
            indices,
            values,
            labels,
            targets: None,
        })
    }

    /// The block with a target per row (finite, one per row; checked), which every margin
    /// is shifted by: the sums of a regression loss of the residual.
    pub fn with_targets(mut self, targets: &'a [f64]) -> Result<Self, OptimError> {
        if targets.len() != self.rows() {
            return Err(OptimError::DimensionMismatch {
                what: "block targets",
                expected: self.rows(),
                found: targets.len(),
            });
        }
        if let Some(index) = targets.iter().position(|t| !t.is_finite()) {
            return Err(OptimError::NonFiniteInput {
                what: "block targets",
                index,
                value: targets[index],
            });
        }
        self.targets = Some(targets);
        Ok(self)
    }

    /// The targets the margins are shifted by, if any ([`RowBlock::with_targets`]).
    pub fn targets(&self) -> Option<&'a [f64]> {
        self.targets
    }

    /// Rows in the block.
    pub fn rows(&self) -> usize {
        self.labels.len()
    }

    /// Columns d.
    pub fn cols(&self) -> usize {
        self.cols
    }

    /// Column indices and values of row `i` of the block.
    pub fn row(&self, i: usize) -> (&'a [u32], &'a [f64]) {
        let range = self.offsets[i] as usize..self.offsets[i + 1] as usize;
        (&self.indices[range.clone()], &self.values[range])
    }

    /// The labels, one per row.
    pub fn labels(&self) -> &'a [f64] {
        self.labels
    }

    /// Stored entries in the block.
    pub fn entries(&self) -> usize {
        self.values.len()
    }
}

/// Where a solve's rows come from: a sequence of blocks, read one at a time (in any order,
/// from several threads at once).
pub trait RowBlocks: Sync {
    /// What reading a block can fail with (an I/O error, a changed file, a row that breaks
    /// a contract); solver errors convert into it.
    type Error: From<OptimError> + Send;
    /// Columns d of every block.
    fn cols(&self) -> usize;
    /// The rows the source declares (from its index, without a pass). Every pass also
    /// counts the rows it saw.
    fn rows(&self) -> usize;
    /// Number of blocks.
    fn block_count(&self) -> usize;
    /// Reads block `index` (`< block_count()`) and calls `visit` with it exactly once, or
    /// returns why it could not.
    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), Self::Error>;
}

/// Sums over some rows at one point `w`: the row count, `Σ ℓ(z_i)`, `Σ ℓ'(z_i) y_i x_i`
/// and, if asked for, the lower triangle of `Σ ℓ''(z_i) y_i² x_i x_iᵀ`, with
/// `z_i = y_i wᵀx_i`. Unnormalized (no `1/n`, no regularizer): [`PartialSums::merge`] is
/// plain addition, associative in real arithmetic; in floating point the merge order is
/// fixed by the caller ([`sum_blocks`] merges in block order).
#[derive(Debug, Clone, PartialEq)]
pub struct PartialSums {
    rows: usize,
    loss: f64,
    gradient: Vec<f64>,
    /// Packed lower triangle, row by row: entry `(i, j)`, `j ≤ i`, at `i(i+1)/2 + j`.
    hessian: Option<Vec<f64>>,
}

/// Which rows a pass's Hessian sums over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HessianRows {
    /// No Hessian: value and gradient only.
    None,
    /// Every row: the exact Hessian.
    All,
    /// Rows `0, s, 2s, …` of every block (`s ≥ 2`), the sum then scaled by (rows) / (rows
    /// it took): an estimate of the Hessian for a pass that costs little more than the
    /// gradient's. Any positive definite matrix gives a descent direction, so a solver may
    /// step with it; the certificate never uses it.
    EveryNth(usize),
}

impl HessianRows {
    /// Every how many rows of a block the Hessian takes one, if it is formed.
    fn stride(self) -> Option<usize> {
        match self {
            Self::None => None,
            Self::All => Some(1),
            Self::EveryNth(s) => Some(s.max(1)),
        }
    }
}

impl PartialSums {
    /// The sums over no rows, for `cols` columns, with or without the Hessian.
    pub fn zero(cols: usize, with_hessian: bool) -> Self {
        Self {
            rows: 0,
            loss: 0.0,
            gradient: vec![0.0; cols],
            hessian: with_hessian.then(|| vec![0.0; packed_len(cols)]),
        }
    }

    /// The sums over `block` at `w` (`w.len() == block.cols()`, checked), sequentially in
    /// row order.
    pub fn of_block<L: MarginLoss + ?Sized>(
        block: &RowBlock<'_>,
        w: &[f64],
        loss: &L,
        with_hessian: bool,
    ) -> Result<Self, OptimError> {
        let hessian = if with_hessian {
            HessianRows::All
        } else {
            HessianRows::None
        };
        Self::of_block_rows(block, w, loss, hessian).map(|(sums, _)| sums)
    }

    /// As [`PartialSums::of_block`], the Hessian over the rows `hessian` names (unscaled),
    /// with the number of rows it summed.
    fn of_block_rows<L: MarginLoss + ?Sized>(
        block: &RowBlock<'_>,
        w: &[f64],
        loss: &L,
        hessian: HessianRows,
    ) -> Result<(Self, usize), OptimError> {
        if w.len() != block.cols {
            return Err(OptimError::DimensionMismatch {
                what: "w",
                expected: block.cols,
                found: w.len(),
            });
        }
        let stride = hessian.stride();
        let mut sums = Self::zero(block.cols, stride.is_some());
        let n = block.rows();
        sums.rows = n;
        let stride = stride.unwrap_or(usize::MAX);
        // Per chunk of rows: margins, then the loss (its vectorized form), then the
        // scatters: ℓ'·y into the gradient, ℓ''·y² into the Hessian. Fixed chunks keep the
        // per-row buffers on the stack.
        let mut slopes = [0.0; ROW_CHUNK];
        let mut curvatures = [0.0; ROW_CHUNK];
        for first in (0..n).step_by(ROW_CHUNK) {
            let rows = first..(first + ROW_CHUNK).min(n);
            let slopes = &mut slopes[..rows.len()];
            let curvatures = &mut curvatures[..rows.len()];
            for (slope, i) in slopes.iter_mut().zip(rows.clone()) {
                let (idx, val) = block.row(i);
                let margin: f64 = idx.iter().zip(val).map(|(&j, v)| w[j as usize] * v).sum();
                let target = block.targets.map_or(0.0, |t| t[i]);
                *slope = block.labels[i] * margin - target;
            }
            sums.loss += loss.evaluate_in_place(slopes, curvatures);
            for ((&slope, &curvature), i) in slopes.iter().zip(curvatures.iter()).zip(rows) {
                let (idx, val) = block.row(i);
                let y = block.labels[i];
                let slope = slope * y;
                for (&j, &v) in idx.iter().zip(val) {
                    sums.gradient[j as usize] += slope * v;
                }
                let curvature = curvature * y * y;
                if let Some(h) = sums.hessian.as_mut()
                    && (stride == 1 || i % stride == 0)
                    && curvature != 0.0
                {
                    add_outer_product_lower(h, 0, curvature, (idx, val), 0..idx.len());
                }
            }
        }
        let hessian_rows = if stride == usize::MAX {
            0
        } else {
            n.div_ceil(stride)
        };
        Ok((sums, hessian_rows))
    }

    /// Adds `other`'s sums to these (same columns and the same Hessian choice, checked).
    pub fn merge(&mut self, other: &Self) -> Result<(), OptimError> {
        if other.gradient.len() != self.gradient.len()
            || other.hessian.is_some() != self.hessian.is_some()
        {
            return Err(OptimError::InvalidParameter {
                what: "partial sums to merge",
                why: format!(
                    "{} columns (Hessian: {}) cannot merge into {} columns (Hessian: {})",
                    other.gradient.len(),
                    other.hessian.is_some(),
                    self.gradient.len(),
                    self.hessian.is_some()
                ),
            });
        }
        // Two forged or repeated wire sums could add up past usize::MAX: refused, never
        // wrapped (a wrapped count would pass the solver's check against the given n).
        self.rows =
            self.rows
                .checked_add(other.rows)
                .ok_or_else(|| OptimError::InvalidParameter {
                    what: "partial sums to merge",
                    why: format!(
                        "their row counts {} and {} add up past the largest count ({})",
                        self.rows,
                        other.rows,
                        usize::MAX
                    ),
                })?;
        self.loss += other.loss;
        add_into(&mut self.gradient, &other.gradient);
        if let (Some(h), Some(o)) = (self.hessian.as_mut(), other.hessian.as_ref()) {
            add_into(h, o);
        }
        Ok(())
    }

    /// Rows summed over.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// `Σ ℓ(z_i)`.
    pub fn loss_sum(&self) -> f64 {
        self.loss
    }

    /// `Σ ℓ'(z_i) y_i x_i` (length d).
    pub fn gradient_sum(&self) -> &[f64] {
        &self.gradient
    }

    /// The packed lower triangle of `Σ ℓ''(z_i) y_i² x_i x_iᵀ` (entry `(i, j)`, `j ≤ i`, at
    /// `i(i+1)/2 + j`), if it was asked for.
    pub fn hessian_sum_lower(&self) -> Option<&[f64]> {
        self.hessian.as_deref()
    }
}

/// The version of [`PartialSums::to_bytes`]'s layout; a decoder refuses any other.
pub const PARTIAL_SUMS_VERSION: u16 = 1;

const WIRE_MAGIC: [u8; 4] = *b"DPPS";
/// Magic, version, flags, a reserved zero byte, d, rows, `Σ ℓ`.
const WIRE_HEADER: usize = 4 + 2 + 1 + 1 + 8 + 8 + 8;
const WIRE_HAS_HESSIAN: u8 = 1;

impl PartialSums {
    /// The sums as bytes, to carry them between processes: little-endian, in this order:
    /// `b"DPPS"`, the version [`PARTIAL_SUMS_VERSION`] (u16), flags (u8: bit 0 = Hessian
    /// present), a zero byte, d (u64), the row count (u64), `Σ ℓ` (f64), the d gradient
    /// sums (f64), then, with the Hessian, its d(d+1)/2 packed lower-triangle sums (f64).
    /// Every float travels as its exact bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        let floats = 1 + self.gradient.len() + self.hessian.as_ref().map_or(0, Vec::len);
        let mut out = Vec::with_capacity(WIRE_HEADER - 8 + 8 * floats);
        out.extend_from_slice(&WIRE_MAGIC);
        out.extend_from_slice(&PARTIAL_SUMS_VERSION.to_le_bytes());
        out.push(if self.hessian.is_some() {
            WIRE_HAS_HESSIAN
        } else {
            0
        });
        out.push(0);
        out.extend_from_slice(&(self.gradient.len() as u64).to_le_bytes());
        out.extend_from_slice(&(self.rows as u64).to_le_bytes());
        out.extend_from_slice(&self.loss.to_le_bytes());
        for v in self.gradient.iter().chain(self.hessian.iter().flatten()) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Decodes [`PartialSums::to_bytes`]'s layout, refusing (naming the problem) anything
    /// else: another magic or version, unknown flags, a length that does not match d and
    /// the Hessian flag exactly, d = 0 or a non-finite sum (what no pass produces from
    /// checked rows). A decoded partial still merges only into sums of the same shape.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, OptimError> {
        let refuse = |why: String| {
            Err(OptimError::InvalidParameter {
                what: "serialized partial sums",
                why,
            })
        };
        if bytes.len() < WIRE_HEADER {
            return refuse(format!(
                "{} bytes, shorter than the {WIRE_HEADER}-byte header",
                bytes.len()
            ));
        }
        if bytes[..4] != WIRE_MAGIC {
            return refuse("do not start with b\"DPPS\"".into());
        }
        let version = u16::from_le_bytes([bytes[4], bytes[5]]);
        if version != PARTIAL_SUMS_VERSION {
            return refuse(format!(
                "have layout version {version}; this build reads version {PARTIAL_SUMS_VERSION}"
            ));
        }
        let flags = bytes[6];
        if flags & !WIRE_HAS_HESSIAN != 0 || bytes[7] != 0 {
            return refuse(format!(
                "have unknown flags {flags:#04x} / reserved byte {:#04x}",
                bytes[7]
            ));
        }
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
        let cols = word(8);
        let rows = word(16);
        let with_hessian = flags & WIRE_HAS_HESSIAN != 0;
        let floats = usize::try_from(cols).ok().and_then(|d| {
            let hessian = if with_hessian {
                d.checked_add(1)?.checked_mul(d)? / 2
            } else {
                0
            };
            d.checked_add(hessian)
        });
        let expected = floats.and_then(|f| f.checked_mul(8)?.checked_add(WIRE_HEADER));
        if cols == 0 || expected != Some(bytes.len()) {
            return refuse(format!(
                "{} bytes do not match d = {cols} (Hessian: {with_hessian})",
                bytes.len()
            ));
        }
        let Ok(rows) = usize::try_from(rows) else {
            return refuse(format!("row count {rows} does not fit this platform"));
        };
        let cols = cols as usize;
        let mut values = bytes[WIRE_HEADER - 8..]
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        let loss = values.next().unwrap_or(f64::NAN);
        let gradient: Vec<f64> = values.by_ref().take(cols).collect();
        let hessian: Option<Vec<f64>> = with_hessian.then(|| values.collect());
        let all = std::iter::once(&loss)
            .chain(&gradient)
            .chain(hessian.iter().flatten());
        if let Some(position) = all.clone().position(|v| !v.is_finite()) {
            return refuse(format!("hold a non-finite sum (value {position})"));
        }
        Ok(Self {
            rows,
            loss,
            gradient,
            hessian,
        })
    }
}

fn packed_len(cols: usize) -> usize {
    cols * (cols + 1) / 2
}

fn add_into(total: &mut [f64], part: &[f64]) {
    total.iter_mut().zip(part).for_each(|(t, p)| *t += p);
}

/// Whether a row's columns are below `cols` and strictly increasing and its values finite,
/// without a branch per entry.
fn row_is_valid(cols: usize, indices: &[u32], values: &[f64]) -> bool {
    let mut valid = true;
    let mut previous: Option<u32> = None;
    for (&c, &v) in indices.iter().zip(values) {
        valid &= ((c as usize) < cols) & previous.is_none_or(|p| p < c) & v.is_finite();
        previous = Some(c);
    }
    valid
}

/// Rows of a block whose margins and losses are computed together (fixed, so the bits of
/// the loss's sum do not depend on anything else).
const ROW_CHUNK: usize = 256;

/// Blocks summed in parallel per wave: a constant (not the thread count), so a pass's peak
/// memory is bounded by the source's block size, and merging in block order makes the
/// result's bits independent of the number of threads.
pub const BLOCK_WAVE: usize = 32;

/// One pass over `source` at `w`: every block's [`PartialSums`], blocks in parallel
/// ([`BLOCK_WAVE`] at a time), merged in block order. The first error of the wave (in block
/// order) stops the pass.
pub fn sum_blocks<S: RowBlocks + ?Sized, L: MarginLoss + ?Sized>(
    source: &S,
    w: &[f64],
    loss: &L,
    with_hessian: bool,
) -> Result<PartialSums, S::Error> {
    let hessian = if with_hessian {
        HessianRows::All
    } else {
        HessianRows::None
    };
    sum_blocks_with(source, w, loss, hessian)
}

/// As [`sum_blocks`], with the Hessian over the rows `hessian` names; a sampled Hessian
/// ([`HessianRows::EveryNth`]) is scaled, after the merge, by the rows summed over the rows
/// it took, so that it estimates the full sum.
pub fn sum_blocks_with<S: RowBlocks + ?Sized, L: MarginLoss + ?Sized>(
    source: &S,
    w: &[f64],
    loss: &L,
    hessian: HessianRows,
) -> Result<PartialSums, S::Error> {
    let mut total = PartialSums::zero(source.cols(), hessian.stride().is_some());
    let mut hessian_rows = 0;
    let blocks = source.block_count();
    for wave in (0..blocks).step_by(BLOCK_WAVE) {
        let parts: Vec<Result<(PartialSums, usize), S::Error>> = (wave..(wave + BLOCK_WAVE)
            .min(blocks))
            .into_par_iter()
            .map(|index| {
                let mut sums = None;
                source.with_block(index, &mut |block| {
                    sums = Some(PartialSums::of_block_rows(&block, w, loss, hessian));
                })?;
                let sums = sums.ok_or_else(|| OptimError::InvalidParameter {
                    what: "row block source",
                    why: format!("block {index} was never handed to the pass"),
                })?;
                Ok(sums?)
            })
            .collect();
        for part in parts {
            let (part, rows) = part?;
            total.merge(&part)?;
            // At most the part's rows, whose sum the merge checked.
            hessian_rows += rows;
        }
    }
    if let (HessianRows::EveryNth(_), Some(h)) = (hessian, total.hessian.as_mut())
        && hessian_rows > 0
        && hessian_rows < total.rows
    {
        let scale = total.rows as f64 / hessian_rows as f64;
        h.iter_mut().for_each(|v| *v *= scale);
    }
    Ok(total)
}
