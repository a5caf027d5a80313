//! Rows as numpy and scipy hold them, read in place, and the public row transform of the
//! linear estimators (norm bound, optional clipping, intercept feature).

use rayon::prelude::*;

use crate::error::CoreError;
use crate::memory;

/// An integer index array of scipy's CSR parts, as stored (int32 or int64).
#[derive(Clone, Copy)]
pub enum Ints<'a> {
    /// `int32` indices.
    I32(&'a [i32]),
    /// `int64` indices.
    I64(&'a [i64]),
}

impl Ints<'_> {
    fn len(&self) -> usize {
        match self {
            Ints::I32(v) => v.len(),
            Ints::I64(v) => v.len(),
        }
    }

    /// Entry `i` as an index, or `None` when it is negative.
    fn get(&self, i: usize) -> Option<usize> {
        let v = match self {
            Ints::I32(v) => i64::from(v[i]),
            Ints::I64(v) => v[i],
        };
        usize::try_from(v).ok()
    }
}

/// The first entry of CSR offsets that is negative, above `values`, below the entry
/// before it, or (the first) not 0.
fn first_bad_offset<P: Copy + Into<i64>>(indptr: &[P], values: usize) -> Option<usize> {
    let values = i64::try_from(values).unwrap_or(i64::MAX);
    let mut previous = 0i64;
    indptr.iter().enumerate().position(|(r, &p)| {
        let p = p.into();
        let bad = (r == 0 && p != 0) || p < previous || p > values;
        previous = p;
        bad
    })
}

/// Whether every column index is in `0..features` (one branch-free pass the compiler
/// vectorizes).
fn all_below<C: Copy + Into<i64>>(indices: &[C], features: usize) -> bool {
    let features = i64::try_from(features).unwrap_or(i64::MAX);
    indices
        .iter()
        .fold(true, |ok, &c| ok & (0..features).contains(&c.into()))
}

/// Borrowed rows: never copied as a whole; each consumer walks them row by row.
#[derive(Clone, Copy)]
pub enum Rows<'a> {
    /// A C-contiguous `n × features` matrix.
    Dense {
        /// The values, row after row.
        values: &'a [f64],
        /// Values per row.
        features: usize,
    },
    /// scipy CSR parts: row r is `indices/data[indptr[r]..indptr[r + 1]]`.
    Csr {
        /// The stored values.
        data: &'a [f64],
        /// The column of each stored value.
        indices: Ints<'a>,
        /// Where each row starts in `data` (n + 1 offsets).
        indptr: Ints<'a>,
        /// The number of columns.
        features: usize,
    },
}

impl<'a> Rows<'a> {
    /// Checks the shapes (not the values: the crates check those) and returns the rows.
    pub fn checked(self) -> Result<Self, CoreError> {
        match self {
            Rows::Dense { values, features } => {
                if features == 0 {
                    return Err(CoreError::value(
                        "X",
                        "has 0 features; at least 1 is required",
                    ));
                }
                if values.is_empty() {
                    return Err(CoreError::value("X", "has 0 rows; at least 1 is required"));
                }
                if !values.len().is_multiple_of(features) {
                    return Err(CoreError::value(
                        "X",
                        format!(
                            "holds {} values, not a multiple of its {features} features",
                            values.len()
                        ),
                    ));
                }
            }
            Rows::Csr {
                data,
                indices,
                indptr,
                features,
            } => {
                if features == 0 {
                    return Err(CoreError::value(
                        "X",
                        "has 0 features; at least 1 is required",
                    ));
                }
                if indptr.len() < 2 {
                    return Err(CoreError::value("X", "has 0 rows; at least 1 is required"));
                }
                if indices.len() != data.len() {
                    return Err(CoreError::value(
                        "X",
                        format!(
                            "sparse matrix has {} indices for {} values",
                            indices.len(),
                            data.len()
                        ),
                    ));
                }
                if let Some(r) = match indptr {
                    Ints::I32(p) => first_bad_offset(p, data.len()),
                    Ints::I64(p) => first_bad_offset(p, data.len()),
                } {
                    return Err(CoreError::value(
                        "X",
                        format!("sparse matrix has an invalid indptr at entry {r}"),
                    ));
                }
                let last = indptr.get(indptr.len() - 1).unwrap_or(0);
                if last != data.len() {
                    return Err(CoreError::value(
                        "X",
                        format!(
                            "sparse matrix's indptr ends at {last}, not at its {} values",
                            data.len()
                        ),
                    ));
                }
                let columns_in_range = match indices {
                    Ints::I32(c) => all_below(c, features),
                    Ints::I64(c) => all_below(c, features),
                };
                if !columns_in_range {
                    return Err(CoreError::value(
                        "X",
                        format!("sparse matrix has a column index out of range 0..{features}"),
                    ));
                }
            }
        }
        Ok(self)
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        match self {
            Rows::Dense { values, features } => values.len() / features,
            Rows::Csr { indptr, .. } => indptr.len() - 1,
        }
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of features.
    pub fn features(&self) -> usize {
        match self {
            Rows::Dense { features, .. } | Rows::Csr { features, .. } => *features,
        }
    }

    /// Calls `f(column, value)` on the entries of row `r` that are not zero, in the stored
    /// order (CSR rows are not required to be sorted; the crates refuse repeats).
    pub fn for_each_entry(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        match *self {
            Rows::Dense { values, features } => {
                let row = &values[r * features..(r + 1) * features];
                row.iter()
                    .enumerate()
                    .filter(|&(_, &v)| v != 0.0)
                    .for_each(|(c, &v)| f(c, v));
            }
            Rows::Csr {
                data,
                indices,
                indptr,
                ..
            } => {
                // Checked by `checked`: non-negative, increasing, in range.
                let (start, end) = (indptr.get(r).unwrap_or(0), indptr.get(r + 1).unwrap_or(0));
                for (k, &v) in data.iter().enumerate().take(end).skip(start) {
                    if v != 0.0 {
                        f(indices.get(k).unwrap_or(0), v);
                    }
                }
            }
        }
    }

    /// Writes row `r` densely into `out` (length = features; a repeated CSR column keeps
    /// its last value — predictions only; training refuses repeats).
    pub fn write_dense(&self, r: usize, out: &mut [f64]) {
        match *self {
            Rows::Dense { values, features } => {
                out.copy_from_slice(&values[r * features..(r + 1) * features]);
            }
            Rows::Csr { .. } => {
                out.fill(0.0);
                self.for_each_entry(r, |c, v| out[c] = v);
            }
        }
    }
}

/// Rows as CSR arrays, scaled by [`RowTransform::scaled_csr`].
#[derive(Debug, PartialEq)]
pub struct ScaledCsr {
    /// Where each row starts (n + 1 offsets).
    pub indptr: Vec<usize>,
    /// The column of each entry.
    pub indices: Vec<u32>,
    /// Each entry divided by B.
    pub values: Vec<f64>,
    /// Whether every row's columns are strictly increasing.
    pub ordered: bool,
}

impl ScaledCsr {
    /// Scales onto the unit ball every row outside it by rounding only (dp-erm's
    /// `settle_rounding_into_unit_ball`: a norm above 1 by at most 10⁻¹²), as rows normalized
    /// to the bound B and divided by it often are; a row further outside is left for the
    /// unit-ball check to refuse. Per row, so privacy-free.
    pub fn settle_rounding(&mut self) {
        let rows = self.indptr.len().saturating_sub(1);
        let (indptr, values) = (&self.indptr, &self.values);
        let outside: Vec<usize> = (0..rows)
            .into_par_iter()
            .with_min_len(2048)
            .filter(|&r| !dp_erm::within_unit_ball(&values[indptr[r]..indptr[r + 1]]))
            .collect();
        for r in outside {
            let range = self.indptr[r]..self.indptr[r + 1];
            dp_erm::settle_rounding_into_unit_ball(&mut self.values[range]);
        }
    }
}

/// The public transform a linear estimator applies to every row, fixed before any data is
/// seen: `x ↦ x / B`, then (opt-in) clipping to the unit ball, then the intercept feature.
///
/// With an intercept constant c, the row `(x/B, c)` is scaled by `s = 1/√(1 + c²)`
/// (dp-erm's `TrainingSetBuilder::append_intercept`), so it stays in the unit ball when
/// `‖x‖ ≤ B`; the model's last weight times `c·s` is the intercept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowTransform {
    /// B, the public bound on the rows' Euclidean norm.
    pub norm_bound: f64,
    /// Clip rows of norm above B to norm B (at training time; the user's explicit choice).
    pub clip: bool,
    /// The constant c of the intercept feature, if any.
    pub intercept: Option<f64>,
}

/// Prefix of the feature-map identifier a linear model trained through Python records.
const TRANSFORM_ID: &str = "dpml-rows/v1";

impl RowTransform {
    /// Checks the parameters by name.
    pub fn checked(self) -> Result<Self, CoreError> {
        if !(self.norm_bound.is_finite() && self.norm_bound > 0.0) {
            return Err(CoreError::value(
                "data_norm",
                format!("is {}; it must be finite and > 0", self.norm_bound),
            ));
        }
        if let Some(c) = self.intercept
            && !(c.is_finite() && c > 0.0)
        {
            return Err(CoreError::value(
                "intercept_scaling",
                format!("is {c}; it must be finite and > 0"),
            ));
        }
        Ok(self)
    }

    /// The features a model over transformed rows has.
    pub fn output_features(&self, input: usize) -> usize {
        input + usize::from(self.intercept.is_some())
    }

    /// The identifier stored in the model file's `feature_map` metadata: a Rust program
    /// that loads the file reads from it how to transform its rows. Floats in Rust's
    /// shortest round-trip exponent form.
    pub fn id(&self) -> String {
        let intercept = match self.intercept {
            Some(c) => format!("{c:e}"),
            None => "none".to_owned(),
        };
        format!(
            "{TRANSFORM_ID} norm_bound={:e} clip={} intercept={intercept}",
            self.norm_bound, self.clip
        )
    }

    /// Parses [`RowTransform::id`]'s output.
    pub fn from_id(id: &str) -> Result<Self, CoreError> {
        let bad = || {
            CoreError::value(
                "model file",
                "its feature map is not a dpml row transform (was it trained through Python?)",
            )
        };
        let mut parts = id.split(' ');
        if parts.next() != Some(TRANSFORM_ID) {
            return Err(bad());
        }
        let mut field = |name: &str| {
            parts
                .next()
                .and_then(|p| p.strip_prefix(name))
                .and_then(|p| p.strip_prefix('='))
                .ok_or_else(bad)
        };
        let norm_bound = field("norm_bound")?.parse().map_err(|_| bad())?;
        let clip = field("clip")?.parse().map_err(|_| bad())?;
        let intercept = match field("intercept")? {
            "none" => None,
            c => Some(c.parse().map_err(|_| bad())?),
        };
        RowTransform {
            norm_bound,
            clip,
            intercept,
        }
        .checked()
    }

    /// The rows as CSR arrays (offsets, columns, values), each value divided by B exactly
    /// as dp-erm's `scale_by_public_bounds` divides (clipping and the intercept are the
    /// builder's), and whether every row's columns are strictly increasing (scipy allows
    /// any order; dp-erm's CSR input does not).
    pub fn scaled_csr(&self, rows: &Rows<'_>) -> Result<ScaledCsr, CoreError> {
        if let Rows::Csr {
            data,
            indices,
            indptr,
            ..
        } = *rows
            && !data.contains(&0.0)
        {
            // scipy's arrays as they are (no stored zero to drop): converted array by array,
            // in loops the compiler vectorizes, instead of entry by entry.
            return match (indices, indptr) {
                (Ints::I32(c), Ints::I32(p)) => self.scaled_csr_arrays(data, c, p),
                (Ints::I32(c), Ints::I64(p)) => self.scaled_csr_arrays(data, c, p),
                (Ints::I64(c), Ints::I32(p)) => self.scaled_csr_arrays(data, c, p),
                (Ints::I64(c), Ints::I64(p)) => self.scaled_csr_arrays(data, c, p),
            };
        }
        if let Rows::Dense { values, features } = *rows {
            return self.scaled_dense(values, features);
        }
        self.scaled_csr_by_entry(rows)
    }

    /// [`RowTransform::scaled_csr`] of dense rows: the non-zero entries of each chunk of
    /// rows counted, then written, in parallel (a pandas frame of Adult's size is 3 million
    /// values).
    fn scaled_dense(&self, values: &[f64], features: usize) -> Result<ScaledCsr, CoreError> {
        const CHUNK_ROWS: usize = 4096;
        let chunk_values = CHUNK_ROWS * features;
        let counts: Vec<usize> = values
            .par_chunks(chunk_values)
            .map(|chunk| chunk.iter().filter(|&&v| v != 0.0).count())
            .collect();
        let entries = counts.iter().sum();
        let mut indptr = memory::filled("the rows' offsets", values.len() / features + 1, 0usize)?;
        let mut indices = memory::filled("the rows' column indices", entries, 0u32)?;
        let mut scaled = memory::filled("the scaled rows", entries, 0.0)?;
        let mut parts = Vec::with_capacity(counts.len());
        let (mut ends, mut indices_left, mut values_left) = (
            &mut indptr[1..],
            indices.as_mut_slice(),
            scaled.as_mut_slice(),
        );
        let mut first_entry = 0;
        for (chunk, &count) in values.chunks(chunk_values).zip(&counts) {
            let (ends_part, rest) = ends.split_at_mut(chunk.len() / features);
            ends = rest;
            let (indices_part, rest) = indices_left.split_at_mut(count);
            indices_left = rest;
            let (values_part, rest) = values_left.split_at_mut(count);
            values_left = rest;
            parts.push((chunk, first_entry, ends_part, indices_part, values_part));
            first_entry += count;
        }
        parts
            .into_par_iter()
            .for_each(|(chunk, first_entry, ends, indices_part, values_part)| {
                let mut next = 0;
                for (row, end) in chunk.chunks_exact(features).zip(ends) {
                    for (c, &v) in row.iter().enumerate() {
                        if v != 0.0 {
                            // Columns are below the feature count, which dp-erm caps far
                            // below 2³².
                            indices_part[next] = c as u32;
                            values_part[next] = v / self.norm_bound;
                            next += 1;
                        }
                    }
                    *end = first_entry + next;
                }
            });
        Ok(ScaledCsr {
            indptr,
            indices,
            values: scaled,
            ordered: true,
        })
    }

    /// [`RowTransform::scaled_csr`] entry by entry, dropping stored zeros: every input form.
    pub(crate) fn scaled_csr_by_entry(&self, rows: &Rows<'_>) -> Result<ScaledCsr, CoreError> {
        let n = rows.len();
        // CSR input: its stored entries bound the output's (zeros are dropped), so the
        // arrays are allocated once instead of grown by doubling (each growth a copy and
        // fresh pages). Dense input: unknown until read, and n·d could be far too much.
        let entries = match rows {
            Rows::Csr { data, .. } => data.len(),
            Rows::Dense { .. } => 0,
        };
        let mut out = ScaledCsr {
            indptr: memory::with_capacity("the rows' offsets", n + 1)?,
            indices: memory::with_capacity("the rows' column indices", entries)?,
            values: memory::with_capacity("the scaled rows", entries)?,
            ordered: true,
        };
        out.indptr.push(0);
        for r in 0..n {
            let start = out.indices.len();
            rows.for_each_entry(r, |c, v| {
                // Columns are below the feature count, which dp-erm caps far below 2³².
                out.indices.push(c as u32);
                out.values.push(v / self.norm_bound);
            });
            if out.indices[start..]
                .windows(2)
                .any(|pair| pair[0] >= pair[1])
            {
                out.ordered = false;
            }
            out.indptr.push(out.indices.len());
        }
        Ok(out)
    }

    /// [`RowTransform::scaled_csr`] of CSR arrays without stored zeros, which
    /// [`Rows::checked`] has checked (offsets from 0 to the values' count, never
    /// decreasing; columns in range).
    fn scaled_csr_arrays<C: Copy + Into<i64>, P: Copy + Into<i64>>(
        &self,
        data: &[f64],
        indices: &[C],
        indptr: &[P],
    ) -> Result<ScaledCsr, CoreError> {
        let indptr = memory::collected(
            "the rows' offsets",
            indptr.len(),
            indptr.iter().map(|&p| p.into() as usize),
        )?;
        // Columns are below the feature count, which dp-erm caps far below 2³².
        let indices = memory::collected(
            "the rows' column indices",
            indices.len(),
            indices.iter().map(|&c| c.into() as u32),
        )?;
        // Dividing by 1 changes no bit: the common case is a copy.
        let values = if self.norm_bound == 1.0 {
            memory::collected("the scaled rows", data.len(), data.iter().copied())?
        } else {
            memory::collected(
                "the scaled rows",
                data.len(),
                data.iter().map(|v| v / self.norm_bound),
            )?
        };
        let ordered = indptr.windows(2).all(|at| {
            indices[at[0]..at[1]]
                .windows(2)
                .all(|pair| pair[0] < pair[1])
        });
        Ok(ScaledCsr {
            indptr,
            indices,
            values,
            ordered,
        })
    }

    /// Row `r` transformed for scoring as `(column, value)` pairs: the entries of
    /// [`Self::write_scoring_row`] at the row's stored entries (in their stored order) and
    /// the intercept's, computed by the same operations.
    pub fn scoring_entries(&self, rows: &Rows<'_>, r: usize) -> Vec<(usize, f64)> {
        let shrink = self.intercept.map(|c| 1.0 / 1f64.hypot(c));
        let mut out = Vec::new();
        rows.for_each_entry(r, |j, v| {
            let scaled = v / self.norm_bound;
            out.push((j, shrink.map_or(scaled, |s| scaled * s)));
        });
        if let (Some(c), Some(s)) = (self.intercept, shrink) {
            out.push((rows.features(), c * s));
        }
        out
    }

    /// Row `r` transformed for scoring into `out` (length `output_features`): `x/B`, then
    /// `(x/B, c)·s` with an intercept. No clipping: a score is `coef_ᵀx + intercept_`.
    pub fn write_scoring_row(&self, rows: &Rows<'_>, r: usize, out: &mut [f64]) {
        let d = rows.features();
        rows.write_dense(r, &mut out[..d]);
        out[..d].iter_mut().for_each(|v| *v /= self.norm_bound);
        if let Some(c) = self.intercept {
            let shrink = 1.0 / 1f64.hypot(c);
            out[d] = c;
            out.iter_mut().for_each(|v| *v *= shrink);
        }
    }
}
