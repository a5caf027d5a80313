//! Rows without the unit-ball contract: prediction inputs ([`Features`]) and labelled raw
//! examples ([`Examples`]) that trainers with their own feature map (kernels) start from.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::{ErmError, MAX_FEATURES, TrainingSet};

/// Batches at least this large are scored in parallel; below it the threads cost more
/// than they save.
const PARALLEL_ROWS: usize = 4096;

/// A checked matrix of unlabelled rows: n ≥ 1 rows of `features` finite values each, dense
/// (row-major) or sparse (per row, strictly increasing feature indices). No norm contract:
/// these are inputs to score or to map, not data a mechanism's guarantee is stated for.
///
/// `Debug` shows the shape only.
#[derive(Clone, PartialEq)]
pub struct Features {
    features: usize,
    storage: Storage,
}

#[derive(Clone, PartialEq)]
enum Storage {
    Dense(Vec<f64>),
    /// Compressed sparse rows: row r is `indices/values[offsets[r]..offsets[r + 1]]`.
    Sparse {
        offsets: Vec<usize>,
        indices: Vec<usize>,
        values: Vec<f64>,
    },
}

/// One row of [`Features`].
#[derive(Clone, Copy, Debug)]
pub enum FeatureRow<'a> {
    /// All `features` values.
    Dense(&'a [f64]),
    /// Stored entries: strictly increasing indices and their values.
    Sparse(&'a [usize], &'a [f64]),
}

impl<'a> FeatureRow<'a> {
    /// The stored values (dense rows: all of them), in feature order.
    pub(crate) fn values(&self) -> &'a [f64] {
        match *self {
            FeatureRow::Dense(x) => x,
            FeatureRow::Sparse(_, values) => values,
        }
    }

    /// Calls `f(feature, value)` on each non-zero entry, in feature order.
    pub(crate) fn for_each_nonzero(&self, f: &mut dyn FnMut(usize, f64)) {
        match *self {
            FeatureRow::Dense(x) => x
                .iter()
                .enumerate()
                .filter(|&(_, &v)| v != 0.0)
                .for_each(|(j, &v)| f(j, v)),
            FeatureRow::Sparse(idx, val) => idx
                .iter()
                .zip(val)
                .filter(|&(_, &v)| v != 0.0)
                .for_each(|(&j, &v)| f(j, v)),
        }
    }

    /// `wᵀx` (w has the row's dimension; callers check it).
    pub fn dot(&self, w: &[f64]) -> f64 {
        match *self {
            FeatureRow::Dense(x) => x.iter().zip(w).map(|(a, b)| a * b).sum(),
            FeatureRow::Sparse(idx, val) => idx.iter().zip(val).map(|(&j, v)| v * w[j]).sum(),
        }
    }

    /// The row written out densely into `out` (length d).
    pub fn write_dense(&self, out: &mut [f64]) {
        match *self {
            FeatureRow::Dense(x) => out.copy_from_slice(x),
            FeatureRow::Sparse(idx, val) => {
                out.fill(0.0);
                idx.iter().zip(val).for_each(|(&j, &v)| out[j] = v);
            }
        }
    }
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Features")
            .field("rows", &self.len())
            .field("features", &self.features)
            .field("storage", &if self.is_dense() { "dense" } else { "sparse" })
            .finish_non_exhaustive()
    }
}

impl Features {
    /// Dense rows, row-major: `values.len()` must be a positive multiple of `features`.
    pub fn dense(features: usize, values: Vec<f64>) -> Result<Self, ErmError> {
        check_feature_count(features)?;
        if values.is_empty() {
            return Err(ErmError::EmptyData);
        }
        if !values.len().is_multiple_of(features) {
            return Err(ErmError::DimensionMismatch {
                what: "dense values (a multiple of the feature count)",
                expected: (values.len() / features + 1).saturating_mul(features),
                found: values.len(),
            });
        }
        if let Some(k) = values.iter().position(|v| !v.is_finite()) {
            return Err(ErmError::NonFiniteFeature {
                row: k / features,
                col: k % features,
                value: values[k],
            });
        }
        Ok(Self {
            features,
            storage: Storage::Dense(values),
        })
    }

    /// Sparse rows as `(feature, value)` pairs in any order; a feature index ≥ `features`,
    /// a repeated index or a non-finite value is an error naming the row.
    pub fn sparse(features: usize, rows: Vec<Vec<(usize, f64)>>) -> Result<Self, ErmError> {
        check_feature_count(features)?;
        if rows.is_empty() {
            return Err(ErmError::EmptyData);
        }
        let stored: usize = rows.iter().map(Vec::len).sum();
        let mut offsets = Vec::with_capacity(rows.len() + 1);
        let mut indices = Vec::with_capacity(stored);
        let mut values = Vec::with_capacity(stored);
        offsets.push(0);
        for (r, mut row) in rows.into_iter().enumerate() {
            for &(col, value) in &row {
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
            row.sort_unstable_by_key(|&(col, _)| col);
            if let Some(pair) = row.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                return Err(ErmError::RepeatedFeature {
                    row: r,
                    col: pair[0].0,
                });
            }
            indices.extend(row.iter().map(|&(col, _)| col));
            values.extend(row.iter().map(|&(_, value)| value));
            offsets.push(indices.len());
        }
        Ok(Self {
            features,
            storage: Storage::Sparse {
                offsets,
                indices,
                values,
            },
        })
    }

    /// Number of rows n (at least 1).
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Dense(values) => values.len() / self.features,
            Storage::Sparse { offsets, .. } => offsets.len() - 1,
        }
    }

    /// Always false: a feature matrix has at least one row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of features d.
    pub fn features(&self) -> usize {
        self.features
    }

    /// Whether rows are stored densely.
    pub fn is_dense(&self) -> bool {
        matches!(self.storage, Storage::Dense(_))
    }

    /// The dense row-major values, if stored densely.
    pub fn dense_values(&self) -> Option<&[f64]> {
        match &self.storage {
            Storage::Dense(values) => Some(values),
            Storage::Sparse { .. } => None,
        }
    }

    /// Row `i` (panics if `i ≥ len()`, like slice indexing).
    pub fn row(&self, i: usize) -> FeatureRow<'_> {
        match &self.storage {
            Storage::Dense(values) => {
                FeatureRow::Dense(&values[i * self.features..(i + 1) * self.features])
            }
            Storage::Sparse {
                offsets,
                indices,
                values,
            } => {
                let range = offsets[i]..offsets[i + 1];
                FeatureRow::Sparse(&indices[range.clone()], &values[range])
            }
        }
    }

    /// The rows at `indices`, in that order (repeats allowed); an index out of range or an
    /// empty selection is an error.
    pub fn select(&self, indices: &[usize]) -> Result<Self, ErmError> {
        if indices.is_empty() {
            return Err(ErmError::EmptyData);
        }
        let n = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= n) {
            return Err(ErmError::IndexOutOfRange {
                what: "selected row index",
                index: bad,
                len: n,
            });
        }
        let storage = match &self.storage {
            Storage::Dense(values) => Storage::Dense(
                indices
                    .iter()
                    .flat_map(|&i| &values[i * self.features..(i + 1) * self.features])
                    .copied()
                    .collect(),
            ),
            Storage::Sparse {
                offsets,
                indices: cols,
                values,
            } => {
                let mut new_offsets = Vec::with_capacity(indices.len() + 1);
                new_offsets.push(0);
                let (mut new_cols, mut new_values) = (Vec::new(), Vec::new());
                for &i in indices {
                    let range = offsets[i]..offsets[i + 1];
                    new_cols.extend_from_slice(&cols[range.clone()]);
                    new_values.extend_from_slice(&values[range]);
                    new_offsets.push(new_cols.len());
                }
                Storage::Sparse {
                    offsets: new_offsets,
                    indices: new_cols,
                    values: new_values,
                }
            }
        };
        Ok(Self {
            features: self.features,
            storage,
        })
    }

    /// `wᵀx_i` for every row, in parallel for large batches; `w` must have d entries. An
    /// overflow is an error naming the first row whose value is not finite.
    pub fn scores(&self, w: &[f64]) -> Result<Vec<f64>, ErmError> {
        self.check_dimension(w.len(), "features of the rows")?;
        let score = |i: usize| self.row(i).dot(w);
        let values: Vec<f64> = if self.len() >= PARALLEL_ROWS {
            (0..self.len()).into_par_iter().map(score).collect()
        } else {
            (0..self.len()).map(score).collect()
        };
        match values.iter().position(|v| !v.is_finite()) {
            Some(row) => Err(ErmError::DecisionOverflow { row }),
            None => Ok(values),
        }
    }

    /// An error unless this matrix has `expected` features (a model's input dimension).
    pub fn check_dimension(&self, expected: usize, what: &'static str) -> Result<(), ErmError> {
        if expected == self.features {
            Ok(())
        } else {
            Err(ErmError::DimensionMismatch {
                what,
                expected,
                found: self.features,
            })
        }
    }
}

/// Checks one row given as a slice: `features` values, all finite (an error naming the
/// first non-finite one).
pub fn check_row(x: &[f64], features: usize) -> Result<(), ErmError> {
    if x.len() != features {
        return Err(ErmError::DimensionMismatch {
            what: "row",
            expected: features,
            found: x.len(),
        });
    }
    match x.iter().position(|v| !v.is_finite()) {
        Some(col) => Err(ErmError::NonFiniteFeature {
            row: 0,
            col,
            value: x[col],
        }),
        None => Ok(()),
    }
}

fn check_feature_count(features: usize) -> Result<(), ErmError> {
    if features == 0 || features > MAX_FEATURES {
        return Err(ErmError::InvalidCount {
            what: "feature count",
            value: features,
            requirement: "between 1 and 2^24 = 16777216",
        });
    }
    Ok(())
}

/// Labelled examples without the unit-ball contract: [`Features`] and one label (−1 or +1)
/// per row. What a [`crate::Trainer`] trains on; a linear trainer converts them with
/// [`Examples::to_training_set`], which checks the contract, while a kernel trainer maps
/// them first.
///
/// `Debug` shows the shape only.
#[derive(Clone)]
pub struct Examples {
    inputs: Features,
    labels: Vec<f64>,
    /// The solver's storage of these rows, built by the first successful
    /// [`Examples::to_training_set`] and shared by every later one: a trainer fitted many
    /// times on the same examples (tuning, experiments) converts them once, not per fit
    /// (10 ms of a 25 ms private fit on Adult's 30,162 training rows).
    training_set: OnceLock<TrainingSet>,
}

/// Equal inputs and labels; whether the training set was built yet does not matter.
impl PartialEq for Examples {
    fn eq(&self, other: &Self) -> bool {
        self.inputs == other.inputs && self.labels == other.labels
    }
}

impl std::fmt::Debug for Examples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Examples")
            .field("rows", &self.len())
            .field("features", &self.features())
            .finish_non_exhaustive()
    }
}

impl Examples {
    /// Pairs `inputs` with `labels` (one per row, each −1 or +1).
    pub fn new(inputs: Features, labels: Vec<f64>) -> Result<Self, ErmError> {
        crate::data::check_labels(&labels, inputs.len())?;
        Ok(Self::checked(inputs, labels))
    }

    fn checked(inputs: Features, labels: Vec<f64>) -> Self {
        Self {
            inputs,
            labels,
            training_set: OnceLock::new(),
        }
    }

    /// Number of examples n (at least 1).
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of features d.
    pub fn features(&self) -> usize {
        self.inputs.features()
    }

    /// The rows.
    pub fn inputs(&self) -> &Features {
        &self.inputs
    }

    /// The labels, each −1 or +1.
    pub fn labels(&self) -> &[f64] {
        &self.labels
    }

    /// The examples at `indices`, in that order (see [`Features::select`]).
    pub fn select(&self, indices: &[usize]) -> Result<Self, ErmError> {
        Ok(Self::checked(
            self.inputs.select(indices)?,
            indices.iter().map(|&i| self.labels[i]).collect(),
        ))
    }

    /// Refuses, naming the first offending row, any row of Euclidean norm above 1: the
    /// check [`Examples::to_training_set`] makes, without building anything.
    pub fn check_unit_ball(&self) -> Result<(), ErmError> {
        crate::data::check_unit_ball(&self.inputs)
    }

    /// Refuses, naming the first offending row, any row whose group norm exceeds the bound
    /// group-shaped noise needs (see [`TrainingSet::check_group_norms`]), without building
    /// anything.
    pub fn check_group_norms(&self, groups: &dp_noise::FeatureGroups) -> Result<(), ErmError> {
        crate::data::check_group_norms_of(self.len(), self.features(), groups, |row, f| {
            self.inputs.row(row).for_each_nonzero(f)
        })
    }

    /// The same examples as a [`TrainingSet`], refusing (with the first offending row) any
    /// row of norm above 1. Nothing is clipped or rescaled. Built once per `Examples` and
    /// then shared (the rows are behind an `Arc`: a clone is cheap).
    pub fn to_training_set(&self) -> Result<TrainingSet, ErmError> {
        if let Some(built) = self.training_set.get() {
            return Ok(built.clone());
        }
        let built = TrainingSet::from_checked_examples(&self.inputs, &self.labels)?;
        Ok(self.training_set.get_or_init(|| built).clone())
    }
}

impl TrainingSet {
    /// The same rows and labels as [`Examples`] (always succeeds: a training set is
    /// already checked).
    pub fn to_examples(&self) -> Examples {
        let d = self.features();
        let rows: Vec<Vec<(usize, f64)>> = (0..self.len()).map(|i| self.row_entries(i)).collect();
        let inputs = Features::sparse(d, rows).expect("a training set's rows are valid features");
        Examples::checked(inputs, self.labels().to_vec())
    }
}
