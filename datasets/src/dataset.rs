//! A loaded dataset: sparse rows, ±1 labels, provenance.

use std::fmt;

use dp_erm::{Examples, Features, TrainingSet};

use crate::DatasetError;

/// How feature columns were scaled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scaling {
    /// The papers' preprocessing: each column divided by its maximum |value| over the whole
    /// file. **Reads the data, so it is not private**; kept because the reproduction must
    /// match the papers.
    PaperColumnMax,
    /// Each column clamped to a bound declared in advance and divided by it: per-row, so
    /// privacy-free.
    PublicBounds,
    /// As generated or read, unscaled: synthetic data already in the unit ball, or raw
    /// values for trainers with their own feature map ([`Dataset::examples`]). Such rows
    /// are never clipped: [`Dataset::training_set`] refuses a row outside the unit ball.
    None,
}

/// Rows (sparse `(column, value)` pairs), labels ±1, and where they came from. Scaled rows
/// are clipped into the unit ball (per row, privacy-free) when a [`TrainingSet`] is made;
/// unscaled ones ([`Scaling::None`]) must already lie in it.
///
/// `Debug` shows the shape and provenance only, never rows or labels: the data may be
/// sensitive and debug output ends up in logs.
#[derive(Clone, PartialEq)]
pub struct Dataset {
    /// Name, e.g. "adult".
    pub name: String,
    /// One name per feature column.
    pub feature_names: Vec<String>,
    /// The rows.
    pub rows: Vec<Vec<(usize, f64)>>,
    /// The labels, each −1 or +1.
    pub labels: Vec<f64>,
    /// `(file, SHA-256)` of every file read.
    pub checksums: Vec<(String, String)>,
    /// How the columns were scaled.
    pub scaling: Scaling,
}

impl Dataset {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Number of feature columns.
    pub fn features(&self) -> usize {
        self.feature_names.len()
    }

    /// Fraction of labels equal to +1.
    pub fn positive_rate(&self) -> f64 {
        self.labels.iter().filter(|&&y| y > 0.0).count() as f64 / self.len().max(1) as f64
    }

    /// The rows at `indices` as raw examples, unscaled and unclipped (for trainers with
    /// their own feature map, such as dp-kernel's); an index past the end is an error.
    pub fn examples(&self, indices: &[usize]) -> Result<Examples, DatasetError> {
        if let Some(&index) = indices.iter().find(|&&i| i >= self.len()) {
            return Err(DatasetError::IndexOutOfRange {
                index,
                len: self.len(),
            });
        }
        let labels = indices.iter().map(|&i| self.labels[i]).collect();
        let d = self.features();
        let stored: usize = indices.iter().map(|&i| self.rows[i].len()).sum();
        // Mostly-filled rows are stored densely (the fast path of feature maps).
        let features = if stored * 2 > indices.len() * d {
            let mut values = vec![0.0; indices.len() * d];
            for (r, &i) in indices.iter().enumerate() {
                for &(c, v) in &self.rows[i] {
                    if c < d {
                        values[r * d + c] = v;
                    } else {
                        return Err(dp_erm::ErmError::FeatureIndexOutOfRange {
                            row: r,
                            col: c,
                            features: d,
                        }
                        .into());
                    }
                }
            }
            Features::dense(d, values)?
        } else {
            Features::sparse(d, indices.iter().map(|&i| self.rows[i].clone()).collect())?
        };
        Ok(Examples::new(features, labels)?)
    }

    /// The rows at `indices` as a checked training set. Scaled rows
    /// ([`Scaling::PaperColumnMax`], [`Scaling::PublicBounds`]) are clipped to the unit ball,
    /// as part of that preprocessing; unscaled rows ([`Scaling::None`]) are never changed: a
    /// row outside the unit ball is refused ([`DatasetError::OutsideUnitBall`], naming it
    /// and the scalings to choose). An index past the end, or a dataset whose rows and
    /// labels differ in number, is an error rather than a panic.
    pub fn training_set(&self, indices: &[usize]) -> Result<TrainingSet, DatasetError> {
        if self.rows.len() != self.labels.len() {
            return Err(DatasetError::Inconsistent {
                name: self.name.clone(),
                rows: self.rows.len(),
                labels: self.labels.len(),
            });
        }
        if let Some(&index) = indices.iter().find(|&&i| i >= self.len()) {
            return Err(DatasetError::IndexOutOfRange {
                index,
                len: self.len(),
            });
        }
        // Checked here too, so the error names this dataset's column names and rows.
        for &row in indices {
            if let Some(&(column, _)) = self.rows[row].iter().find(|&&(c, _)| c >= self.features())
            {
                return Err(DatasetError::ColumnOutOfRange {
                    row,
                    column,
                    features: self.features(),
                });
            }
        }
        let builder = TrainingSet::builder(self.features())
            .sparse_rows(indices.iter().map(|&i| self.rows[i].clone()).collect())
            .labels(indices.iter().map(|&i| self.labels[i]).collect());
        if self.scaling == Scaling::None {
            // Named here, with the dataset's row index and the fix, before anything is built.
            for &row in indices {
                let values: Vec<f64> = self.rows[row].iter().map(|&(_, v)| v).collect();
                if !dp_erm::within_unit_ball(&values) {
                    let norm = values.iter().map(|v| v * v).sum::<f64>().sqrt();
                    return Err(DatasetError::OutsideUnitBall {
                        name: self.name.clone(),
                        row,
                        norm,
                    });
                }
            }
            return Ok(builder.build()?);
        }
        Ok(builder.clip_rows_to_unit_ball().build()?)
    }
}

impl fmt::Debug for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Dataset")
            .field("name", &self.name)
            .field("rows", &self.rows.len())
            .field("labels", &self.labels.len())
            .field("features", &self.features())
            .field("scaling", &self.scaling)
            .field("checksums", &self.checksums)
            .finish_non_exhaustive()
    }
}

/// `field` as a finite number, or a parse error naming `what`, the file and the line:
/// `str::parse` accepts "NaN" and "inf", which no data file here may hold.
pub(crate) fn parse_finite(
    field: &str,
    file: &'static str,
    line: usize,
    what: &str,
) -> Result<f64, DatasetError> {
    field
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| DatasetError::Parse {
            file,
            line,
            why: format!("{what} is not a finite number: {field:?}"),
        })
}

/// Divides every column by its largest |value| in `rows` (columns that are all zero stay).
/// Reads all rows: the papers' preprocessing, not private.
pub(crate) fn scale_columns_by_max(rows: &mut [Vec<(usize, f64)>], features: usize) {
    let largest = column_maxima(rows, features);
    for row in rows.iter_mut() {
        for (c, v) in row.iter_mut() {
            if largest[*c] > 0.0 {
                *v /= largest[*c];
            }
        }
    }
}

/// The largest |value| of every column in `rows` (0 for a column that is all zero).
pub(crate) fn column_maxima(rows: &[Vec<(usize, f64)>], features: usize) -> Vec<f64> {
    let mut largest = vec![0.0f64; features];
    for row in rows {
        for &(c, v) in row {
            largest[c] = largest[c].max(v.abs());
        }
    }
    largest
}

/// Clamps every column to `[−bound, bound]` and divides by the bound: per row, private.
pub(crate) fn scale_columns_by_bounds(rows: &mut [Vec<(usize, f64)>], bounds: &[f64]) {
    for row in rows.iter_mut() {
        for (c, v) in row.iter_mut() {
            *v = v.clamp(-bounds[*c], bounds[*c]) / bounds[*c];
        }
    }
}
