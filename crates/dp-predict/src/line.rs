//! Labelled points on a line: the training data of the walk and the threshold learners.

use crate::error::{PredictError, check_finite, check_size};

/// Checked training data on an ordered domain (the real line): finite points, one
/// label each (`true` = label 1), at least one point. Kept sorted by point; examples at
/// the same point alternate their labels (0, 1, 0, 1, …, then the surplus of the more
/// frequent label).
///
/// The order is a fixed rule of the multiset of examples, and deleting one example from
/// the multiset deletes one element of the ordered sequence, leaving the others in the same
/// relative order (within a tie, deleting one of `a` zeros and `b` ones turns the
/// alternation of `(a, b)` into that of `(a − 1, b)`, which is the same sequence without
/// its last zero) — which is what the walk's privacy argument needs (docs/src/reference/algorithms.md §7.5).
/// Alternating rather than "all zeros, then all ones" keeps a tie from pushing the walk
/// towards whichever label comes last: the walk leaves a tie near the side of its
/// majority label.
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
        let (points, mut labels): (Vec<f64>, Vec<bool>) = pairs.into_iter().unzip();
        alternate_ties(&points, &mut labels);
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

/// Within each run of equal points (labels already sorted 0s then 1s), rewrites the
/// labels as 0, 1, 0, 1, … followed by the surplus label.
fn alternate_ties(points: &[f64], labels: &mut [bool]) {
    let mut start = 0;
    while start < points.len() {
        let mut end = start + 1;
        while end < points.len() && points[end] == points[start] {
            end += 1;
        }
        let ones = labels[start..end].iter().filter(|&&y| y).count();
        let zeros = (end - start) - ones;
        let pairs = ones.min(zeros);
        for (k, label) in labels[start..end].iter_mut().enumerate() {
            *label = if k < 2 * pairs {
                k % 2 == 1
            } else {
                ones > zeros
            };
        }
        start = end;
    }
}

impl std::fmt::Debug for LineData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineData")
            .field("len", &self.points.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::InsecureSeededRng;
    use rand::RngExt;

    fn sequence(data: &LineData) -> Vec<(f64, bool)> {
        data.points()
            .iter()
            .copied()
            .zip(data.labels().iter().copied())
            .collect()
    }

    #[test]
    fn ties_alternate_then_the_surplus() {
        let data = LineData::new(vec![1.0; 6], vec![true, true, true, true, false, false]).unwrap();
        assert_eq!(data.labels(), &[false, true, false, true, true, true]);
        let data = LineData::new(vec![2.0, -0.0, 0.0], vec![true, true, false]).unwrap();
        assert_eq!(data.points(), &[0.0, 0.0, 2.0]);
        assert_eq!(data.labels(), &[false, true, true]);
    }

    /// What the walk's privacy needs: the order of D without one example is the order of
    /// D with that example's element deleted (a subsequence one shorter).
    #[test]
    fn deleting_an_example_deletes_one_element_of_the_order() {
        let mut rng = InsecureSeededRng::new(9);
        for _ in 0..5000 {
            let n = rng.random_range(2..25);
            let points: Vec<f64> = (0..n).map(|_| rng.random_range(0..4) as f64).collect();
            let labels: Vec<bool> = (0..n).map(|_| rng.random::<bool>()).collect();
            let full = sequence(&LineData::new(points.clone(), labels.clone()).unwrap());
            let gone = rng.random_range(0..n);
            let (mut p, mut l) = (points, labels);
            p.remove(gone);
            l.remove(gone);
            let fewer = sequence(&LineData::new(p, l).unwrap());
            let mut rest = fewer.iter();
            let mut next = rest.next();
            let mut skipped = 0;
            for item in &full {
                if next == Some(item) {
                    next = rest.next();
                } else {
                    skipped += 1;
                }
            }
            assert!(next.is_none() && skipped == 1, "{full:?} vs {fewer:?}");
        }
    }
}
