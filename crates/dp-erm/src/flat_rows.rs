//! Rows on their way into a training set, held flat (CSR-shaped: offsets, columns, values),
//! so that the builder's checks and public transforms walk three contiguous arrays instead
//! of one allocation per row. Every input form (dense, pairs, CSR) becomes this first.

use dp_optim::{CsrRows, OptimError};

use crate::ErmError;
use crate::data::first_row_outside_unit_ball;
use crate::data::unit_ball::{clip_values_to_unit_ball, l2_norm};

/// Row `r` is `cols/vals[indptr[r]..indptr[r + 1]]`. Columns stay `usize` until checked
/// against the feature count, so an error names the column the caller gave.
pub(crate) struct FlatRows {
    indptr: Vec<usize>,
    cols: Vec<usize>,
    vals: Vec<f64>,
}

impl FlatRows {
    /// The non-zero entries of `n × features` row-major values (a multiple of `features`).
    pub(crate) fn from_dense(values: &[f64], features: usize) -> Self {
        let rows = values.len() / features;
        let stored = values.iter().filter(|&&v| v != 0.0).count();
        let mut flat = Self::with_capacity(rows, stored);
        for row in values.chunks_exact(features) {
            for (c, &v) in row.iter().enumerate() {
                if v != 0.0 {
                    flat.cols.push(c);
                    flat.vals.push(v);
                }
            }
            flat.indptr.push(flat.cols.len());
        }
        flat
    }

    /// Rows given as `(column, value)` pairs, in their order.
    pub(crate) fn from_pairs(rows: Vec<Vec<(usize, f64)>>) -> Self {
        let stored = rows.iter().map(Vec::len).sum();
        let mut flat = Self::with_capacity(rows.len(), stored);
        for row in rows {
            for (c, v) in row {
                flat.cols.push(c);
                flat.vals.push(v);
            }
            flat.indptr.push(flat.cols.len());
        }
        flat
    }

    /// CSR arrays, their layout checked by [`CsrRows::check_layout`] (the columns and
    /// values are checked row by row in [`FlatRows::check_entries`]).
    pub(crate) fn from_csr(
        indptr: Vec<usize>,
        indices: Vec<u32>,
        values: Vec<f64>,
    ) -> Result<Self, ErmError> {
        if indptr.len() < 2 {
            return Err(ErmError::EmptyData);
        }
        CsrRows::check_layout(&indptr, indices.len(), values.len())?;
        Ok(Self {
            indptr,
            cols: indices.into_iter().map(|c| c as usize).collect(),
            vals: values,
        })
    }

    fn with_capacity(rows: usize, stored: usize) -> Self {
        let mut indptr = Vec::with_capacity(rows + 1);
        indptr.push(0);
        Self {
            indptr,
            cols: Vec::with_capacity(stored),
            vals: Vec::with_capacity(stored),
        }
    }

    /// The number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.indptr.len() - 1
    }

    fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.indptr[r]..self.indptr[r + 1]
    }

    /// Row by row: every column below `features`, every value finite, no column twice.
    /// A row out of column order is sorted, unless `strictly_increasing` (CSR input, whose
    /// format promises the order) makes it an error.
    pub(crate) fn check_entries(
        &mut self,
        features: usize,
        strictly_increasing: bool,
    ) -> Result<(), ErmError> {
        for r in 0..self.rows() {
            let range = self.range(r);
            for k in range.clone() {
                let (col, value) = (self.cols[k], self.vals[k]);
                if col >= features {
                    return Err(ErmError::FeatureIndexOutOfRange {
                        row: r,
                        col,
                        features,
                    });
                }
                if !value.is_finite() {
                    return Err(ErmError::NonFiniteFeature { row: r, col, value });
                }
            }
            let cols = &self.cols[range.clone()];
            if cols.windows(2).all(|pair| pair[0] < pair[1]) {
                continue;
            }
            if strictly_increasing {
                return Err(OptimError::InvalidSparseStructure(format!(
                    "column indices of row {r} are not strictly increasing"
                ))
                .into());
            }
            // A repeated feature is refused, not summed: which value was meant is unknown.
            let mut pairs: Vec<(usize, f64)> = cols
                .iter()
                .copied()
                .zip(self.vals[range.clone()].iter().copied())
                .collect();
            pairs.sort_unstable_by_key(|&(c, _)| c);
            if let Some(pair) = pairs.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                return Err(ErmError::RepeatedFeature {
                    row: r,
                    col: pair[0].0,
                });
            }
            for (k, (c, v)) in range.zip(pairs) {
                self.cols[k] = c;
                self.vals[k] = v;
            }
        }
        Ok(())
    }

    /// Divides each value by its column's public bound; a value beyond it is an error.
    pub(crate) fn scale_by_bounds(&mut self, bounds: &[f64]) -> Result<(), ErmError> {
        for r in 0..self.rows() {
            for k in self.range(r) {
                let (col, value) = (self.cols[k], self.vals[k]);
                let bound = bounds[col];
                if value.abs() > bound {
                    return Err(ErmError::OutsidePublicBound {
                        row: r,
                        col,
                        value,
                        bound,
                    });
                }
                self.vals[k] = value / bound;
            }
        }
        Ok(())
    }

    /// Scales every row outside the unit ball into it.
    pub(crate) fn clip_rows(&mut self) {
        for r in 0..self.rows() {
            let range = self.range(r);
            clip_values_to_unit_ball(&mut self.vals[range]);
        }
    }

    /// The first row outside the unit ball, as an error naming it.
    pub(crate) fn check_unit_ball(&self) -> Result<(), ErmError> {
        match first_row_outside_unit_ball(self.rows(), |r| &self.vals[self.range(r)]) {
            Some(r) => {
                let norm = l2_norm(self.vals[self.range(r)].iter().copied());
                Err(ErmError::RowNormAboveOne { row: r, norm })
            }
            None => Ok(()),
        }
    }

    /// Appends column `features` holding `constant` to every row and scales the row by
    /// `1/√(1 + constant²)`, clipping the few ulps by which rounding may leave it outside.
    pub(crate) fn append_intercept(&mut self, features: usize, constant: f64) {
        // 1/√(1 + c²) without overflowing for huge c.
        let shrink = 1.0 / 1f64.hypot(constant);
        let rows = self.rows();
        let mut out = Self::with_capacity(rows, self.cols.len() + rows);
        for r in 0..rows {
            let range = self.range(r);
            out.cols.extend_from_slice(&self.cols[range.clone()]);
            out.cols.push(features);
            let start = out.vals.len();
            out.vals.extend(self.vals[range].iter().map(|v| v * shrink));
            out.vals.push(constant * shrink);
            // ‖(x, c)‖/√(1+c²) ≤ 1 in exact arithmetic; make sure it is in floating point.
            clip_values_to_unit_ball(&mut out.vals[start..]);
            out.indptr.push(out.cols.len());
        }
        *self = out;
    }

    /// The checked rows as [`CsrRows`] over `features` columns.
    pub(crate) fn into_csr(self, features: usize) -> Result<CsrRows, ErmError> {
        // Columns are below `features` ≤ 2²⁴ + 1 here (checked, or the intercept's).
        let indices = self.cols.into_iter().map(|c| c as u32).collect();
        Ok(CsrRows::new(features, self.indptr, indices, self.vals)?)
    }
}
