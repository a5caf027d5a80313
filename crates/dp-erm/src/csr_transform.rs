//! The builder's checks and public transforms of CSR input (public bounds, clipping, the
//! intercept feature) in one pass over the rows, in parallel chunks of rows, straight into
//! the training set's arrays. The rows come out bit for bit as the step-by-step path
//! ([`crate::flat_rows::FlatRows`]) makes them: the same per-row operations in the same
//! order. Where any check fails, nothing is returned, and the builder runs the step-by-step
//! path, which names the first problem in its documented order.

use rayon::prelude::*;

use crate::ErmError;
use crate::data::unit_ball::{clip_values_to_unit_ball, within_unit_ball};

/// Rows per parallel task (a few microseconds of work each).
const CHUNK_ROWS: usize = 2048;

/// The public transforms, as the builder holds them.
pub(crate) struct Transforms<'a> {
    /// Per-feature public bounds to divide by.
    pub bounds: Option<&'a [f64]>,
    /// Clip every row into the unit ball.
    pub clip: bool,
    /// The constant of the intercept feature.
    pub intercept: Option<f64>,
}

/// CSR arrays of checked, transformed rows.
pub(crate) struct CsrArrays {
    /// Columns of the rows (one more than the input's with an intercept).
    pub features: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub values: Vec<f64>,
}

/// `len` copies of `T::default()`, or [`ErmError::AllocationFailed`] naming `what`: the
/// arrays sized by the input are allocated fallibly, so that an input too large for the
/// memory is a refusal, never an abort.
fn filled<T: Clone + Default>(what: &'static str, len: usize) -> Result<Vec<T>, ErmError> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| ErmError::AllocationFailed {
            what,
            bytes: len.saturating_mul(size_of::<T>()),
        })?;
    out.resize(len, T::default());
    Ok(out)
}

/// The rows of `indptr`/`indices`/`values` (over `features` columns, `labels` one per row)
/// checked and transformed as [`crate::TrainingSetBuilder::build`] does, or `Ok(None)` where
/// anything fails a check (the step-by-step path then names it);
/// [`ErmError::AllocationFailed`] where the transformed rows do not fit in memory.
pub(crate) fn checked_transformed_csr(
    features: usize,
    (indptr, indices, values): (&[usize], &[u32], &[f64]),
    labels: &[f64],
    transforms: &Transforms<'_>,
) -> Result<Option<CsrArrays>, ErmError> {
    let Some(rows) = indptr.len().checked_sub(1).filter(|&rows| rows > 0) else {
        return Ok(None);
    };
    if dp_optim::CsrRows::check_layout(indptr, indices.len(), values.len()).is_err()
        || labels.len() != rows
        || labels.iter().any(|&y| y != 1.0 && y != -1.0)
    {
        return Ok(None);
    }
    if let Some(bounds) = transforms.bounds
        && (bounds.len() != features || !bounds.iter().all(|&b| b.is_finite() && b > 0.0))
    {
        return Ok(None);
    }
    let (extra, out_features) = match transforms.intercept {
        None => (0, features),
        Some(c) if c.is_finite() && c != 0.0 => match features.checked_add(1) {
            Some(out) => (1, out),
            None => return Ok(None),
        },
        Some(_) => return Ok(None),
    };
    // Row r keeps its entries and gains `extra`: its start moves by r·extra.
    let mut out_indptr: Vec<usize> = filled("the transformed rows' offsets", indptr.len())?;
    for (r, (out, &p)) in out_indptr.iter_mut().zip(indptr).enumerate() {
        *out = p + r * extra;
    }
    let entries = out_indptr[rows];
    let mut out_indices: Vec<u32> = filled("the transformed rows' column indices", entries)?;
    let mut out_values: Vec<f64> = filled("the transformed rows' values", entries)?;
    let chunks: Vec<std::ops::Range<usize>> = (0..rows.div_ceil(CHUNK_ROWS))
        .map(|k| k * CHUNK_ROWS..((k + 1) * CHUNK_ROWS).min(rows))
        .collect();
    let mut parts = Vec::with_capacity(chunks.len());
    let (mut indices_left, mut values_left) =
        (out_indices.as_mut_slice(), out_values.as_mut_slice());
    for chunk in chunks {
        let len = out_indptr[chunk.end] - out_indptr[chunk.start];
        let (indices_part, rest) = indices_left.split_at_mut(len);
        indices_left = rest;
        let (values_part, rest) = values_left.split_at_mut(len);
        values_left = rest;
        parts.push((chunk, indices_part, values_part));
    }
    let all_rows_pass = parts.into_par_iter().all(|(chunk, out_cols, out_vals)| {
        let base = out_indptr[chunk.start];
        chunk.into_iter().all(|r| {
            let input = indptr[r]..indptr[r + 1];
            let out = out_indptr[r] - base..out_indptr[r + 1] - base;
            transform_row(
                features,
                (&indices[input.clone()], &values[input]),
                (&mut out_cols[out.clone()], &mut out_vals[out]),
                transforms,
            )
        })
    });
    Ok(all_rows_pass.then_some(CsrArrays {
        indptr: out_indptr,
        indices: out_indices,
        values: out_values,
        features: out_features,
    }))
}

/// One row, checked and transformed into `out` (its length plus one with an intercept):
/// the steps of [`crate::flat_rows::FlatRows`] in the builder's order. False where a check
/// fails.
fn transform_row(
    features: usize,
    (cols, vals): (&[u32], &[f64]),
    (out_cols, out_vals): (&mut [u32], &mut [f64]),
    transforms: &Transforms<'_>,
) -> bool {
    // Entries: columns in range and strictly increasing, values finite.
    if !cols.iter().all(|&c| (c as usize) < features)
        || !cols.windows(2).all(|pair| pair[0] < pair[1])
        || !vals.iter().all(|v| v.is_finite())
    {
        return false;
    }
    let k = cols.len();
    out_cols[..k].copy_from_slice(cols);
    out_vals[..k].copy_from_slice(vals);
    if let Some(bounds) = transforms.bounds {
        for (v, &c) in out_vals[..k].iter_mut().zip(cols) {
            let bound = bounds[c as usize];
            if v.abs() > bound {
                return false;
            }
            *v /= bound;
        }
    }
    if transforms.clip {
        clip_values_to_unit_ball(&mut out_vals[..k]);
    }
    if !within_unit_ball(&out_vals[..k]) {
        return false;
    }
    if let Some(constant) = transforms.intercept {
        // As `FlatRows::append_intercept`: 1/√(1 + c²), then clipped by the few ulps
        // rounding may leave the row outside.
        let shrink = 1.0 / 1f64.hypot(constant);
        out_vals[..k].iter_mut().for_each(|v| *v *= shrink);
        out_cols[k] = features as u32;
        out_vals[k] = constant * shrink;
        clip_values_to_unit_ball(out_vals);
    }
    true
}
