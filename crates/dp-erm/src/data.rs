//! The data contract: rows in the unit ball, labels ±1, finite values (docs/src/reference/algorithms.md §0).

use rayon::prelude::*;
use std::sync::Arc;

use crate::csr_transform::{Transforms, checked_transformed_csr};
use crate::flat_rows::FlatRows;
use dp_optim::{CsrRows, DenseRows, Design, RowBuffers, WeighChunk};
use unit_ball::{SquareSum, clip_values_to_unit_ball, l2_norm};

use crate::ErmError;

/// A checked training set: every row `x_i` satisfies `‖x_i‖₂ ≤ 1` exactly (decided on an
/// error-bounded sum of squares, in the safe direction: a row whose rounded norm is 1 but
/// whose exact norm is above is refused), every label is −1 or +1, every value is finite, n ≥ 1. The privacy guarantees of this crate hold for data of
/// this type (neighbouring datasets: one row replaced).
///
/// Build it with [`TrainingSet::builder`]; the builder also offers the explicit, opt-in
/// transformations that put data into the unit ball without looking at other rows (and so
/// without privacy cost): scaling by declared public bounds, per-row clipping, and a
/// constant intercept feature inside the norm bound.
#[derive(Clone)]
pub struct TrainingSet {
    rows: Arc<Rows>,
    labels: Vec<f64>,
}

/// Dense or sparse storage, whichever the data came in as.
pub(crate) enum Rows {
    Dense(DenseRows),
    Sparse(CsrRows),
}

impl Design for Rows {
    fn rows(&self) -> usize {
        match self {
            Self::Dense(x) => x.rows(),
            Self::Sparse(x) => x.rows(),
        }
    }
    fn cols(&self) -> usize {
        match self {
            Self::Dense(x) => x.cols(),
            Self::Sparse(x) => x.cols(),
        }
    }
    fn stored_entries(&self) -> usize {
        match self {
            Self::Dense(x) => x.stored_entries(),
            Self::Sparse(x) => x.stored_entries(),
        }
    }
    fn multiply(&self, w: &[f64], out: &mut [f64]) {
        match self {
            Self::Dense(x) => x.multiply(w, out),
            Self::Sparse(x) => x.multiply(w, out),
        }
    }
    fn multiply_transpose(&self, v: &[f64], out: &mut [f64]) {
        match self {
            Self::Dense(x) => x.multiply_transpose(v, out),
            Self::Sparse(x) => x.multiply_transpose(v, out),
        }
    }
    fn add_weighted_gram_lower(&self, weights: &[f64], h: faer::MatMut<'_, f64>) {
        match self {
            Self::Dense(x) => x.add_weighted_gram_lower(weights, h),
            Self::Sparse(x) => x.add_weighted_gram_lower(weights, h),
        }
    }
    fn multiply_weigh_transpose(
        &self,
        w: &[f64],
        chunk_rows: usize,
        weigh: &WeighChunk<'_>,
        rows: RowBuffers<'_>,
        out: &mut [f64],
    ) -> Vec<f64> {
        match self {
            Self::Dense(x) => x.multiply_weigh_transpose(w, chunk_rows, weigh, rows, out),
            Self::Sparse(x) => x.multiply_weigh_transpose(w, chunk_rows, weigh, rows, out),
        }
    }
}

/// Shows the shape only: the rows and labels are the data the guarantees protect, and a
/// `Debug` print ends up in logs.
impl std::fmt::Debug for TrainingSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let storage = match self.rows.as_ref() {
            Rows::Dense(_) => "dense",
            Rows::Sparse(_) => "sparse",
        };
        f.debug_struct("TrainingSet")
            .field("rows", &self.len())
            .field("features", &self.features())
            .field("storage", &storage)
            .finish_non_exhaustive()
    }
}

/// Most features a training set may declare: 2²⁴. Column structures are allocated per
/// feature, so a mistyped count (2³², say) must be refused before anything is built.
pub const MAX_FEATURES: usize = 1 << 24;

/// How far above 1 a row's group norm may be for group-shaped noise: one-hot rows scaled to
/// Euclidean norm 1 have group norm 1, but computed as an upper bound (every operation
/// rounded up, see [`TrainingSet::check_group_norms`]) it comes out a few ulps above.
pub const GROUP_NORM_SLACK: f64 = 1.0 + 1e-12;

impl TrainingSet {
    /// Starts building a training set with `features` columns.
    pub fn builder(features: usize) -> TrainingSetBuilder {
        TrainingSetBuilder {
            features,
            input: Input::None,
            labels: Vec::new(),
            public_bounds: None,
            clip: false,
            intercept: None,
        }
    }

    /// A training set from a dense matrix (one row per example, as faer stores it: column
    /// by column) and its labels, without copying the matrix. The same checks as
    /// [`TrainingSetBuilder::build`] without transformations: finite values, labels ±1, n ≥ 1, and
    /// every row's norm ≤ 1 — a row above it is an error naming it, never clipped. For
    /// feature maps that produce their rows as a matrix (dp-kernel).
    pub fn from_dense_matrix(x: faer::Mat<f64>, labels: Vec<f64>) -> Result<Self, ErmError> {
        let (n, features) = (x.nrows(), x.ncols());
        if n == 0 {
            return Err(ErmError::EmptyData);
        }
        if features == 0 || features > MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "feature count",
                value: features,
                requirement: "between 1 and 2^24 = 16777216",
            });
        }
        check_labels(&labels, n)?;
        let rows = DenseRows::from_mat(x).map_err(|e| match e {
            dp_optim::OptimError::NonFiniteData { row, col, value } => {
                ErmError::NonFiniteFeature { row, col, value }
            }
            other => ErmError::Optim(other),
        })?;
        // The unit-ball contract decided exactly (see `SquareSum`), column by column
        // within blocks of rows: faer stores columns contiguously, and a block's sums stay
        // in cache whatever n is.
        let x = rows.as_mat();
        const BLOCK: usize = 256;
        let mut sums = [SquareSum::default(); BLOCK];
        for start in (0..n).step_by(BLOCK) {
            let len = BLOCK.min(n - start);
            sums[..len].fill(SquareSum::default());
            for col in 0..features {
                let column = x.col(col);
                for (i, sum) in sums[..len].iter_mut().enumerate() {
                    sum.add(column[start + i]);
                }
            }
            if let Some(i) = sums[..len].iter().position(|sum| !sum.at_most_one()) {
                let row = start + i;
                return Err(ErmError::RowNormAboveOne {
                    row,
                    norm: l2_norm((0..features).map(|col| x[(row, col)])),
                });
            }
        }
        Ok(TrainingSet {
            rows: Arc::new(Rows::Dense(rows)),
            labels,
        })
    }

    /// From raw examples whose values, indices and labels are already checked (as
    /// [`crate::Examples`] guarantees): only the unit-ball contract is checked here, and
    /// the rows go straight into the solver's storage (dense or CSR, by the builder's
    /// rule) without the builder's intermediate copies.
    pub(crate) fn from_checked_examples(
        inputs: &crate::Features,
        labels: &[f64],
    ) -> Result<Self, ErmError> {
        use crate::FeatureRow;
        let (n, d) = (inputs.len(), inputs.features());
        let entries = |i: usize| inputs.row(i).values();
        check_unit_ball(inputs)?;
        let stored: usize = (0..n)
            .map(|i| entries(i).iter().filter(|&&v| v != 0.0).count())
            .sum();
        let rows = if stored * 2 > n * d {
            let mut dense = vec![0.0; n * d];
            for (i, out) in dense.chunks_mut(d).enumerate() {
                inputs.row(i).write_dense(out);
            }
            Rows::Dense(DenseRows::from_row_major(n, d, &dense)?)
        } else {
            let mut indptr = Vec::with_capacity(n + 1);
            let (mut indices, mut values) =
                (Vec::with_capacity(stored), Vec::with_capacity(stored));
            indptr.push(0);
            for i in 0..n {
                let mut push = |c: usize, v: f64| {
                    if v != 0.0 {
                        // d ≤ 2²⁴ (checked when the features were built): fits in u32.
                        indices.push(c as u32);
                        values.push(v);
                    }
                };
                match inputs.row(i) {
                    FeatureRow::Dense(x) => x.iter().enumerate().for_each(|(c, &v)| push(c, v)),
                    FeatureRow::Sparse(idx, val) => {
                        idx.iter().zip(val).for_each(|(&c, &v)| push(c, v))
                    }
                }
                indptr.push(indices.len());
            }
            Rows::Sparse(CsrRows::new(d, indptr, indices, values)?)
        };
        Ok(TrainingSet {
            rows: Arc::new(rows),
            labels: labels.to_vec(),
        })
    }

    /// Number of examples n.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Always false: a training set has at least one row.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of features d (including an intercept column if one was appended).
    pub fn features(&self) -> usize {
        self.rows.cols()
    }

    /// The labels, each −1 or +1.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }

    /// The same rows with other labels (each −1 or +1), sharing the row storage.
    pub fn relabel(&self, labels: Vec<f64>) -> Result<Self, ErmError> {
        check_labels(&labels, self.len())?;
        Ok(Self {
            rows: Arc::clone(&self.rows),
            labels,
        })
    }

    /// `x_iᵀ w` for every row.
    pub(crate) fn margins(&self, w: &[f64]) -> Vec<f64> {
        let mut out = vec![0.0; self.len()];
        self.rows.multiply(w, &mut out);
        out
    }

    /// Checks that every row's group norm `‖x‖_G = (Σ_g ‖x_g‖₁²)^{1/2}` is at most
    /// [`crate::GROUP_NORM_SLACK`] (1 + 1e-12, for rounding), as group-shaped noise
    /// ([`crate::ErmParams::group_noise`]) requires: one-hot rows (at most one non-zero per
    /// group) pass, since their group norm is their Euclidean norm. The norm is computed with
    /// every operation rounded up, an upper bound of the exact value: a row passes only if
    /// its exact group norm is within the slack. Errors name the groups' dimension if it is
    /// not the data's, or the first row above the bound and that computed norm. In time
    /// linear in the stored entries.
    pub fn check_group_norms(&self, groups: &dp_noise::FeatureGroups) -> Result<(), ErmError> {
        check_group_norms_of(self.len(), self.features(), groups, |row, f| {
            self.for_each_entry(row, f)
        })
    }

    /// Calls `f(feature, value)` on each stored entry of row `i` (dense rows: the non-zero
    /// ones), in feature order.
    pub fn for_each_entry(&self, i: usize, mut f: impl FnMut(usize, f64)) {
        match self.rows.as_ref() {
            Rows::Dense(x) => {
                for (j, &v) in x.as_mat().row(i).iter().enumerate() {
                    if v != 0.0 {
                        f(j, v);
                    }
                }
            }
            Rows::Sparse(x) => {
                let (idx, val) = x.row(i);
                for (&j, &v) in idx.iter().zip(val) {
                    f(j as usize, v);
                }
            }
        }
    }

    /// Row `i` as `(feature, value)` pairs of its stored entries.
    pub(crate) fn row_entries(&self, i: usize) -> Vec<(usize, f64)> {
        let mut entries = Vec::new();
        self.for_each_entry(i, |j, v| entries.push((j, v)));
        entries
    }

    /// The rows as the solvers see them (for evaluating objectives outside this crate).
    pub fn design(&self) -> &dyn Design {
        self.rows.as_ref()
    }
}

enum Input {
    None,
    Dense(Vec<f64>),
    Sparse(Vec<Vec<(usize, f64)>>),
    Csr {
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f64>,
    },
}

/// Builds a [`TrainingSet`]: give rows and labels, opt into transformations, then
/// [`TrainingSetBuilder::build`] checks everything and names the first problem it finds.
pub struct TrainingSetBuilder {
    features: usize,
    input: Input,
    labels: Vec<f64>,
    public_bounds: Option<Vec<f64>>,
    clip: bool,
    intercept: Option<f64>,
}

impl TrainingSetBuilder {
    /// Dense rows, row-major (`n × features` values).
    pub fn dense_rows(mut self, values: Vec<f64>) -> Self {
        self.input = Input::Dense(values);
        self
    }

    /// Sparse rows as `(feature, value)` pairs (any order, no repeats).
    pub fn sparse_rows(mut self, rows: Vec<Vec<(usize, f64)>>) -> Self {
        self.input = Input::Sparse(rows);
        self
    }

    /// Sparse rows as compressed sparse row arrays: row `r`'s columns are
    /// `indices[indptr[r]..indptr[r + 1]]` (strictly increasing) with their `values`. The
    /// arrays become the training set's row-major storage as they are, so a reader that
    /// fills them batch by batch holds the rows once — not once as rows and again as the
    /// set. Checked like every input (structure, finiteness, the unit ball); with public
    /// bounds, clipping or an intercept they are transformed first and checked after, as
    /// every input form is.
    pub fn csr_rows(mut self, indptr: Vec<usize>, indices: Vec<u32>, values: Vec<f64>) -> Self {
        self.input = Input::Csr {
            indptr,
            indices,
            values,
        };
        self
    }

    /// The labels, one per row, each −1 or +1.
    pub fn labels(mut self, labels: Vec<f64>) -> Self {
        self.labels = labels;
        self
    }

    /// Divide feature j by the public bound `bounds[j]` (declared without looking at the
    /// data): afterwards every |x_j| ≤ 1. A value beyond its declared bound is an error, not
    /// clipped. Privacy-free: the bounds are public. Combine with
    /// [`TrainingSetBuilder::clip_rows_to_unit_ball`] to bound the row norms.
    pub fn scale_by_public_bounds(mut self, bounds: Vec<f64>) -> Self {
        self.public_bounds = Some(bounds);
        self
    }

    /// Replace each row `x` by `x / max(1, ‖x‖)`. Per-row, so privacy-free, but it changes
    /// the data: opt-in only.
    pub fn clip_rows_to_unit_ball(mut self) -> Self {
        self.clip = true;
        self
    }

    /// Append the constant feature `value` and scale every row by `1/√(1 + value²)` so that
    /// rows stay in the unit ball. The intercept is then regularized like every other
    /// weight — never an unregularized bias, which the privacy proofs do not cover.
    pub fn append_intercept(mut self, value: f64) -> Self {
        self.intercept = Some(value);
        self
    }

    /// Checks and transforms the data in this order: shapes, finiteness and labels; public
    /// bounds; clipping; the unit-ball contract; the intercept.
    pub fn build(self) -> Result<TrainingSet, ErmError> {
        let features = self.features;
        if features == 0 || features > MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "feature count",
                value: features,
                requirement: "between 1 and 2^24 = 16777216",
            });
        }
        let transformed = self.public_bounds.is_some() || self.clip || self.intercept.is_some();
        // CSR's format promises increasing columns; pairs and dense rows may come in any order.
        let columns_ordered = matches!(self.input, Input::Csr { .. });
        let mut rows = match self.input {
            Input::None => return Err(ErmError::EmptyData),
            Input::Csr {
                indptr,
                indices,
                values,
            } => {
                if !transformed {
                    let csr = csr_input(features, indptr, indices, values, &self.labels)?;
                    return Ok(TrainingSet::from_checked_csr(csr, self.labels));
                }
                let transforms = Transforms {
                    bounds: self.public_bounds.as_deref(),
                    clip: self.clip,
                    intercept: self.intercept,
                };
                let input = (indptr.as_slice(), indices.as_slice(), values.as_slice());
                if let Some(rows) =
                    checked_transformed_csr(features, input, &self.labels, &transforms)?
                {
                    let csr = CsrRows::new(rows.features, rows.indptr, rows.indices, rows.values)?;
                    return Ok(TrainingSet::from_checked_csr(csr, self.labels));
                }
                // Something fails a check: the steps below name it, in their order.
                FlatRows::from_csr(indptr, indices, values)?
            }
            Input::Dense(values) => {
                if values.len() % features != 0 {
                    return Err(ErmError::DimensionMismatch {
                        what: "dense values (a multiple of the feature count)",
                        expected: (values.len() / features + 1).saturating_mul(features),
                        found: values.len(),
                    });
                }
                FlatRows::from_dense(&values, features)
            }
            Input::Sparse(rows) => FlatRows::from_pairs(rows),
        };
        if rows.rows() == 0 {
            return Err(ErmError::EmptyData);
        }
        check_labels(&self.labels, rows.rows())?;
        rows.check_entries(features, columns_ordered)?;
        if let Some(bounds) = &self.public_bounds {
            if bounds.len() != features {
                return Err(ErmError::DimensionMismatch {
                    what: "public bounds",
                    expected: features,
                    found: bounds.len(),
                });
            }
            for &bound in bounds {
                crate::error::check_positive("public bound", bound)?;
            }
            rows.scale_by_bounds(bounds)?;
        }
        if self.clip {
            rows.clip_rows();
        }
        rows.check_unit_ball()?;
        let features = match self.intercept {
            None => features,
            Some(constant) => {
                if !constant.is_finite() || constant == 0.0 {
                    return Err(ErmError::InvalidParameter {
                        what: "intercept constant",
                        value: constant,
                        requirement: "finite and non-zero",
                    });
                }
                let with_intercept = features.checked_add(1).ok_or(ErmError::InvalidCount {
                    what: "feature count",
                    value: features,
                    requirement: "small enough to append an intercept",
                })?;
                rows.append_intercept(features, constant);
                with_intercept
            }
        };
        let csr = rows.into_csr(features)?;
        Ok(TrainingSet::from_checked_csr(csr, self.labels))
    }
}

/// The first of `rows` rows (each given by `row`) outside the unit ball, checked in
/// parallel chunks of rows.
pub(crate) fn first_row_outside_unit_ball<'a>(
    rows: usize,
    row: impl Fn(usize) -> &'a [f64] + Sync,
) -> Option<usize> {
    /// Rows per task (a few microseconds of work).
    const CHUNK_ROWS: usize = 2048;
    (0..rows)
        .into_par_iter()
        .with_min_len(CHUNK_ROWS)
        .find_first(|&r| !unit_ball::within_unit_ball(row(r)))
}

/// Checks CSR input: the labels, the columns and finiteness, the structure (by
/// [`CsrRows::new`]) and the unit ball, row by row, naming the first problem.
fn csr_input(
    features: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f64>,
    labels: &[f64],
) -> Result<CsrRows, ErmError> {
    if indptr.len() < 2 {
        return Err(ErmError::EmptyData);
    }
    check_labels(labels, indptr.len() - 1)?;
    if let Some(k) = indices.iter().position(|&c| c as usize >= features) {
        let row = indptr
            .partition_point(|&start| start <= k)
            .saturating_sub(1);
        return Err(ErmError::FeatureIndexOutOfRange {
            row,
            col: indices[k] as usize,
            features,
        });
    }
    // Named as for every input form (CsrRows would name it in its own terms); a length
    // mismatch is left to CsrRows.
    if indices.len() == values.len()
        && let Some(k) = values.iter().position(|v| !v.is_finite())
    {
        let row = indptr
            .partition_point(|&start| start <= k)
            .saturating_sub(1);
        return Err(ErmError::NonFiniteFeature {
            row,
            col: indices[k] as usize,
            value: values[k],
        });
    }
    let csr = CsrRows::new(features, indptr, indices, values)?;
    if let Some(r) = first_row_outside_unit_ball(csr.rows(), |r| csr.row(r).1) {
        let norm = l2_norm(csr.row(r).1.iter().copied());
        return Err(ErmError::RowNormAboveOne { row: r, norm });
    }
    Ok(csr)
}

impl TrainingSet {
    /// Stores checked rows: mostly-zero data stays sparse; dense input with few zeros is
    /// stored dense.
    fn from_checked_csr(csr: CsrRows, labels: Vec<f64>) -> TrainingSet {
        let features = csr.cols();
        let dense_values = |csr: &CsrRows| {
            let mut dense = vec![0.0; csr.rows() * features];
            for r in 0..csr.rows() {
                let (idx, val) = csr.row(r);
                for (&c, &v) in idx.iter().zip(val) {
                    dense[r * features + c as usize] = v;
                }
            }
            dense
        };
        // Mostly-zero data stays sparse; dense input with few zeros stays dense.
        let stored = if csr.stored_entries() * 2 > csr.rows() * features {
            match DenseRows::from_row_major(csr.rows(), features, &dense_values(&csr)) {
                Ok(dense) => Rows::Dense(dense),
                // Unreachable for checked rows; keeping them sparse is always correct.
                Err(_) => Rows::Sparse(csr),
            }
        } else {
            Rows::Sparse(csr)
        };
        TrainingSet {
            rows: Arc::new(stored),
            labels,
        }
    }
}

pub(crate) fn check_labels(labels: &[f64], rows: usize) -> Result<(), ErmError> {
    if labels.len() != rows {
        return Err(ErmError::DimensionMismatch {
            what: "labels",
            expected: rows,
            found: labels.len(),
        });
    }
    match labels.iter().position(|&y| y != 1.0 && y != -1.0) {
        Some(row) => Err(ErmError::InvalidLabel {
            row,
            label: labels[row],
        }),
        None => Ok(()),
    }
}

/// Whether the row `values` lies in the unit ball, `Σ v² ≤ 1` in exact arithmetic — the
/// check every training set makes — decided in the safe direction on an error-bounded sum
/// of squares (false for a row whose rounded norm is 1 but whose exact norm is above).
/// False for a non-finite value.
pub fn within_unit_ball(values: &[f64]) -> bool {
    unit_ball::within_unit_ball(values)
}

/// Scales `values` onto the unit ball if it lies outside it by rounding only (a norm above 1
/// by at most 10⁻¹², as rows divided by their computed norm, or normalized to a public
/// bound and divided by it, often are) and returns true; leaves every other row as it is
/// (false): a row further outside is still refused by the unit-ball check. Per row, so
/// privacy-free, and it moves a row by at most 10⁻¹² of its norm.
pub fn settle_rounding_into_unit_ball(values: &mut [f64]) -> bool {
    if within_unit_ball(values) || !values.iter().all(|v| v.is_finite()) {
        return false;
    }
    if l2_norm(values.iter().copied()) > 1.0 + crate::error::ROUNDING_EXCESS {
        return false;
    }
    clip_values_to_unit_ball(values);
    true
}

/// Scales a sparse row into the unit ball if it is outside (by `1/‖x‖`, then shrunk by a
/// few ulps until [`within_unit_ball`] accepts it), as
/// [`TrainingSetBuilder::clip_rows_to_unit_ball`] does. Per row, so privacy-free; it
/// changes the data, so it is for generators and explicit opt-ins. A non-finite value is
/// refused, naming its column, and the row left unchanged.
pub fn clip_row_to_unit_ball(row: &mut [(usize, f64)]) -> Result<(), ErmError> {
    if let Some(&(col, value)) = row.iter().find(|(_, v)| !v.is_finite()) {
        return Err(ErmError::NonFiniteFeature { row: 0, col, value });
    }
    let mut values: Vec<f64> = row.iter().map(|&(_, v)| v).collect();
    clip_values_to_unit_ball(&mut values);
    row.iter_mut()
        .zip(values)
        .for_each(|((_, v), clipped)| *v = clipped);
    Ok(())
}

/// [`TrainingSet::check_group_norms`] for `rows` rows of `features` features, each visited
/// entry by entry through `for_each_entry`.
pub(crate) fn check_group_norms_of(
    rows: usize,
    features: usize,
    groups: &dp_noise::FeatureGroups,
    mut for_each_entry: impl FnMut(usize, &mut dyn FnMut(usize, f64)),
) -> Result<(), ErmError> {
    if groups.dim() != features {
        return Err(ErmError::DimensionMismatch {
            what: "feature groups",
            expected: features,
            found: groups.dim(),
        });
    }
    // Per-group ℓ1 sums, reset after each row through the groups it touched: no
    // allocation per row (a grouped fit runs this check every time). Every sum, square
    // and the root are rounded up, so the computed norm bounds the true one from above
    // (rounded to nearest, a million tiny entries could sum to 1 + 1e-10 and pass).
    let mut l1 = vec![0.0_f64; groups.count()];
    let mut touched = Vec::new();
    for row in 0..rows {
        for_each_entry(row, &mut |j, v| {
            let g = groups.group(j);
            if l1[g] == 0.0 {
                touched.push(g);
            }
            l1[g] = (l1[g] + v.abs()).next_up();
        });
        let mut squares = 0.0_f64;
        for g in touched.drain(..) {
            let sum = std::mem::take(&mut l1[g]);
            squares = (squares + (sum * sum).next_up()).next_up();
        }
        let norm = squares.sqrt().next_up();
        if norm.is_nan() || norm > crate::GROUP_NORM_SLACK {
            return Err(ErmError::RowGroupNormAboveOne { row, norm });
        }
    }
    Ok(())
}

/// The first row of `inputs` of Euclidean norm above 1, as an error naming it.
pub(crate) fn check_unit_ball(inputs: &crate::Features) -> Result<(), ErmError> {
    for row in 0..inputs.len() {
        let values = inputs.row(row).values();
        if !unit_ball::within_unit_ball(values) {
            let norm = l2_norm(values.iter().copied());
            return Err(ErmError::RowNormAboveOne { row, norm });
        }
    }
    Ok(())
}

/// Norms and scaling into the unit ball, without overflow, decided in the safe direction.
pub(crate) mod unit_ball {
    /// Half an ulp of 1: the relative rounding error of one operation rounded to nearest.
    const UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;
    /// The absolute error an operation may add where its result is subnormal (half the
    /// smallest subnormal, counted as a whole one).
    const UNDERFLOW: f64 = f64::from_bits(1);
    /// 2^-480: entries at least this large have squares whose rounding error is a normal
    /// number, so the fma gives it exactly.
    const TINY: f64 = f64::from_bits((1023 - 480) << 52);

    /// An error-bounded sum of squares `Σ v²`: the exact sum lies in
    /// `[high + low − error, high + low + error]`.
    ///
    /// Each square is split exactly into `p + e` (`e = fma(v, v, −p)`), the `p` are added
    /// with an exact two-sum (`high` plus the exact errors `t`), and the small parts
    /// `t + e` are added in `low`. Only the additions into `low` and the fma round; each
    /// rounding adds at most `u·|result|` (plus [`UNDERFLOW`] where results are subnormal).
    /// The error bound is `2u` times the sum of those results' magnitudes (`weights`, a
    /// plain sum of non-negative terms, enlarged once at the end for its own rounding), so
    /// it is about `n²u²`: at d = 10⁴ below 10⁻²³, where a sum rounded to nearest errs by up
    /// to 10⁻¹².
    #[derive(Clone, Copy, Debug, Default)]
    pub(crate) struct SquareSum {
        high: f64,
        low: f64,
        /// `Σ (|e| + |t + e| + |low|)` over the terms, rounded to nearest.
        weights: f64,
        /// Terms added (counted for the rounding of `weights`).
        terms: u64,
        /// Non-zero terms below [`TINY`], whose squares may underflow.
        tiny: u64,
        /// A value of magnitude above 1 (or NaN) was added: the row is outside the ball.
        outside: bool,
    }

    /// `(p, e)` with `p = a²` rounded to nearest and `p + e = a²` exactly (for `|a| ≤ 1`,
    /// and `|a| ≥ 2⁻⁴⁸⁰` where nothing underflows; smaller entries get an allowance).
    #[inline(always)]
    fn square_exactly(a: f64) -> (f64, f64) {
        let p = a * a;
        #[cfg(target_feature = "fma")]
        {
            (p, a.mul_add(a, -p))
        }
        #[cfg(not(target_feature = "fma"))]
        {
            (p, square_error_by_splitting(a, p))
        }
    }

    /// `a² − p` for `p = fl(a²)`, exactly, without a fused multiply-add: Dekker's product
    /// on Veltkamp's split of `a` into two 26-bit halves (TwoProduct in Ogita, Rump &
    /// Oishi, "Accurate sum and dot product", 2005). Where the target has no FMA,
    /// `mul_add` is a call into the C library that spills every register of the sum; this
    /// stays inline (the portable Python wheel's builds take this path).
    #[cfg_attr(target_feature = "fma", allow(dead_code))]
    #[inline(always)]
    pub(crate) fn square_error_by_splitting(a: f64, p: f64) -> f64 {
        // 2^27 + 1.
        let scaled = 134_217_729.0 * a;
        let high = scaled - (scaled - a);
        let low = a - high;
        low * low - (((p - high * high) - low * high) - high * low)
    }

    impl SquareSum {
        /// Adds `v²`.
        #[inline]
        pub(crate) fn add(&mut self, v: f64) {
            let a = v.abs();
            // |v| > 1 puts the row outside the ball; it also keeps every sum below 2^25
            // (d ≤ 2^24 terms of at most 1), so nothing below overflows.
            if a.is_nan() || a > 1.0 {
                self.outside = true;
                return;
            }
            let (p, e) = square_exactly(a);
            // Two-sum (Knuth): high + p = s + t exactly.
            let s = self.high + p;
            let b = s - self.high;
            let t = (self.high - (s - b)) + (p - b);
            self.high = s;
            let small = t + e;
            self.low += small;
            // Three roundings (the fma, `t + e`, the sum into `low`), each at most u times
            // its result: their magnitudes are summed here and bounded in `error`. Squares of
            // entries below 2^-480 may underflow: a fixed allowance each (exact sums, such as
            // a single entry of 1, keep an error of 0).
            self.weights += e.abs() + small.abs() + self.low.abs();
            self.terms += 1;
            if a != 0.0 && a < TINY {
                self.tiny += 1;
            }
        }

        /// `(high, low, error)`: the exact sum lies within `error` of `high + low`.
        #[cfg(test)]
        pub(crate) fn parts(&self) -> (f64, f64, Option<f64>) {
            (self.high, self.low, self.error())
        }

        /// A bound on `|Σ v² − (high + low)|`, rounded up, or `None` where too many terms
        /// were added for the bound's derivation (never for a row that fits in memory).
        ///
        /// Each term's three roundings add at most `u·w` to the error, `w` its computed
        /// `|e| + |t + e| + |low|` (2u·w covers the rounding of w itself). `weights`, the
        /// rounded sum of k non-negative w, is at least `(1 − γ_k)·Σw` (Higham, §4.2), and
        /// `1/(1 − γ_k) ≤ 1 + 12ku` for ku ≤ 1/16 (subnormal sums are exact); each product
        /// below is rounded up. A tiny term adds at most 8 [`UNDERFLOW`]: where its square
        /// underflows, each of the products giving `e` (one with FMA, five by splitting) and
        /// the two sums into `low` may round by half a subnormal ulp.
        fn error(&self) -> Option<f64> {
            if self.weights == 0.0 && self.tiny == 0 {
                return Some(0.0);
            }
            let growth = 16.0 * self.terms as f64 * UNIT_ROUNDOFF;
            if growth > 1.0 / 16.0 {
                return None;
            }
            let summed = (self.weights * (1.0 + growth)).next_up();
            let rounding = (summed * (2.0 * UNIT_ROUNDOFF)).next_up();
            if self.tiny == 0 {
                // No product with a subnormal where none is needed (a slow microcode assist).
                return Some(rounding);
            }
            let underflow = 8.0 * self.tiny as f64 * UNDERFLOW;
            Some((rounding + underflow).next_up())
        }

        /// Whether the exact sum is at most 1, decided in the safe direction: true only if
        /// the computed sum plus its error bound is ≤ 1. Rows whose exact norm is within
        /// about `n²u²` below 1 may be refused; no row above 1 is accepted.
        pub(crate) fn at_most_one(&self) -> bool {
            if self.outside || self.high > 1.0 {
                return false;
            }
            let Some(error) = self.error() else {
                return false;
            };
            // 1 − high is exact for high in [1/2, 1] (Sterbenz); below, round it down.
            let slack = if self.high >= 0.5 {
                1.0 - self.high
            } else {
                (1.0 - self.high).next_down()
            };
            if error == 0.0 {
                // Every operation was exact: so is `low`.
                self.low <= slack
            } else {
                (self.low + error).next_up() <= slack
            }
        }
    }

    /// Whether `Σ v² ≤ 1` holds exactly for `values`, decided in the safe direction: rows
    /// clearly inside by [`clearly_within_unit_ball`], the others on the error-bounded
    /// [`SquareSum`].
    pub(crate) fn within_unit_ball(values: &[f64]) -> bool {
        clearly_within_unit_ball(values) || within_unit_ball_by_bounded_sum(values)
    }

    /// [`within_unit_ball`]'s decision on the error-bounded [`SquareSum`] alone.
    pub(crate) fn within_unit_ball_by_bounded_sum(values: &[f64]) -> bool {
        let mut sum = SquareSum::default();
        values.iter().for_each(|&v| sum.add(v));
        sum.at_most_one()
    }

    /// A sufficient condition for `Σ v² ≤ 1`, several times cheaper than the error-bounded
    /// [`SquareSum`]: the plain rounded sum of squares, clearly below 1.
    ///
    /// For k entries, each square and each addition rounds by at most a factor (1 ± u), so the
    /// rounded sum `s` of the k non-negative squares satisfies `s ≥ (1 − γ_k)·Σv²` with
    /// `γ_k = ku/(1 − ku) ≤ 2ku` (Higham, *Accuracy and Stability of Numerical Algorithms*,
    /// §4.2) when nothing underflows; a square or a sum that underflows loses at most 2⁻¹⁰⁷⁴
    /// more. So `s ≤ 1 − 4(k+1)u − (k+1)·2⁻¹⁰⁷⁰` gives `Σv² ≤ (s + 2k·2⁻¹⁰⁷⁴)/(1 − 2ku) < 1`.
    /// A NaN or infinite entry fails the test. What is not clearly inside goes to the exact
    /// check, so this says yes only where that check does.
    pub(crate) fn clearly_within_unit_ball(values: &[f64]) -> bool {
        let k = values.len() as f64 + 1.0;
        let sum: f64 = values.iter().map(|v| v * v).sum();
        // 1 − 4ku = 1 − k·2⁻⁵¹ is exact; `next_down` then takes away at least 2⁻⁵⁴, far more
        // than k·2⁻¹⁰⁷⁰. (Computing k·2⁻¹⁰⁷⁰ would multiply by a subnormal: a microcode
        // assist of about a hundred cycles, which was a third of a training set's build.)
        let threshold = (1.0 - 4.0 * k * (f64::EPSILON / 2.0)).next_down();
        sum <= threshold
    }

    /// `‖x‖₂` as computed to nearest (for messages), scaled by the largest magnitude first
    /// so that huge entries do not overflow. Not for deciding the contract: see
    /// [`within_unit_ball`].
    pub fn l2_norm(values: impl Iterator<Item = f64> + Clone) -> f64 {
        let largest = values.clone().fold(0.0f64, |m, v| m.max(v.abs()));
        if largest == 0.0 || !largest.is_finite() {
            return largest;
        }
        largest
            * values
                .map(|v| (v / largest) * (v / largest))
                .sum::<f64>()
                .sqrt()
    }

    /// Scales `row` by `1/‖x‖` when it is outside the unit ball, then shrinks it until
    /// [`within_unit_ball`] accepts it (by `1 − k·2⁻⁵²`, k doubling: a few passes).
    /// Divides by the largest magnitude first, so a row whose norm overflows (entries near
    /// 1e308) is scaled correctly rather than multiplied by 1/∞ = 0.
    pub fn clip_values_to_unit_ball(row: &mut [f64]) {
        if within_unit_ball(row) {
            return;
        }
        let largest = row.iter().fold(0.0f64, |m, &v| m.max(v.abs()));
        let relative_norm = row
            .iter()
            .map(|&v| (v / largest) * (v / largest))
            .sum::<f64>()
            .sqrt();
        row.iter_mut()
            .for_each(|v| *v = (*v / largest) / relative_norm);
        let mut step = f64::EPSILON;
        while !within_unit_ball(row) {
            row.iter_mut().for_each(|v| *v *= 1.0 - step);
            step = (2.0 * step).min(0.5);
        }
    }
}
