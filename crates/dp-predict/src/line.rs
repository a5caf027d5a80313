//! Labelled points on a line: the training data of the walk and the threshold learners.

use crate::error::{PredictError, check_finite, check_size};

/// Checked training data on an ordered domain (the real line): finite points, one
/// label each (`true` = label 1), at least one point. Kept sorted by `(point, label)`.
///
/// The sort order is a fixed rule of the multiset of examples (ties between equal points
/// put label 0 first), so deleting one example leaves the others in the same relative
/// order — which is what the walk's privacy argument needs (ALGORITHMS.md §7.5).
///
/// `Debug` shows the size only: the points and labels are the data the guarantees protect.
#[derive(Clone, PartialEq)]
pub struct LineData {
    points: Vec<f64>,
    labels: Vec<bool>,
}

impl LineData {
    /// Checks and sorts the examples `(points[i], labels[i])`.
    ///
    /// Refuses (naming the offending value) empty data, lengths that differ, a non-finite
    /// point, and more than [`crate::MAX_POINTS`] points.
    pub fn new(points: Vec<f64>, labels: Vec<bool>) -> Result<Self, PredictError> {
        check_size("number of points", points.len())?;
        if points.len() != labels.len() {
            return Err(PredictError::LengthMismatch {
                what: "labels",
                expected: points.len(),
                found: labels.len(),
            });
        }
        if points.is_empty() {
            return Err(PredictError::EmptyData);
        }
        check_finite("point", &points)?;
        let mut pairs: Vec<(f64, bool)> = points.into_iter().zip(labels).collect();
        // total_cmp orders −0.0 before +0.0: still a fixed rule of the values.
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let (points, labels) = pairs.into_iter().unzip();
        Ok(Self { points, labels })
    }

    /// Number of examples.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Always false: empty data is refused.
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The points, sorted.
    pub fn points(&self) -> &[f64] {
        &self.points
    }

    /// The labels, in the order of [`LineData::points`].
    pub fn labels(&self) -> &[bool] {
        &self.labels
    }
}

impl std::fmt::Debug for LineData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineData")
            .field("len", &self.points.len())
            .finish_non_exhaustive()
    }
}
