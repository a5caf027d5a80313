//! Neighbouring datasets: a base dataset and the one a single record changes.

use dp_erm::TrainingSet;

use crate::AuditError;

/// Rows (sparse `(feature, value)` pairs) and ±1 labels, before any checks: the raw
/// material of neighbouring pairs. [`LabelledRows::training_set`] applies dp-erm's checks.
#[derive(Clone, PartialEq)]
pub struct LabelledRows {
    /// Number of features.
    pub features: usize,
    /// The rows.
    pub rows: Vec<Vec<(usize, f64)>>,
    /// One label per row.
    pub labels: Vec<f64>,
}

/// Shape only: the rows are data.
impl std::fmt::Debug for LabelledRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LabelledRows")
            .field("rows", &self.rows.len())
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

impl LabelledRows {
    /// Dense rows (row-major, `features` values each) and their labels.
    pub fn dense(features: usize, values: &[f64], labels: Vec<f64>) -> Result<Self, AuditError> {
        if features == 0 || values.len() != features * labels.len() {
            return Err(AuditError::InvalidParameter {
                what: "dense values",
                value: values.len() as f64,
                requirement: "features × labels values, features ≥ 1",
            });
        }
        let rows = values
            .chunks(features)
            .map(|row| {
                row.iter()
                    .copied()
                    .enumerate()
                    .filter(|&(_, v)| v != 0.0)
                    .collect()
            })
            .collect();
        Ok(Self {
            features,
            rows,
            labels,
        })
    }

    /// The rows as a checked training set (rows in the unit ball, labels ±1).
    pub fn training_set(&self) -> Result<TrainingSet, AuditError> {
        Ok(TrainingSet::builder(self.features)
            .sparse_rows(self.rows.clone())
            .labels(self.labels.clone())
            .build()?)
    }

    fn check_row(&self, row: usize) -> Result<(), AuditError> {
        if row < self.rows.len() {
            Ok(())
        } else {
            Err(AuditError::InvalidParameter {
                what: "row index",
                value: row as f64,
                requirement: "below the number of rows",
            })
        }
    }
}

/// The standard audit dataset (PRIVACY_TESTING.md §2): `shared` rows of one feature drawn
/// uniformly in `[−1, 1]` from `seed`, labelled by their sign and flipped with probability
/// 0.2, then the canary `x* = 1` labelled +1 as the last row. Its neighbour under
/// [`Neighbouring::FlipLabel`] of that last row is the pair whose privacy loss has a closed
/// form for the logistic loss.
pub fn label_flip_canary(shared: usize, seed: u64) -> Result<LabelledRows, AuditError> {
    use rand::RngExt;
    let mut rng = dp_noise::InsecureSeededRng::new(seed);
    let mut values: Vec<f64> = (0..shared).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut labels: Vec<f64> = values
        .iter()
        .map(|&x| {
            if (x > 0.0) != (rng.random_range(0.0..1.0) < 0.2) {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    values.push(1.0);
    labels.push(1.0);
    LabelledRows::dense(1, &values, labels)
}

/// How the second dataset of a pair differs from the first.
///
/// The guarantees of this workspace are stated for *replace one record* (same n):
/// [`Neighbouring::ReplaceRow`] and [`Neighbouring::FlipLabel`] (a replacement that keeps the
/// row). Adding or removing a record changes n, which the mechanisms' calibrations depend
/// on; audits of those relations measure leakage (membership), not a claimed ε.
#[derive(Debug, Clone, PartialEq)]
pub enum Neighbouring {
    /// The second dataset has the canary appended.
    AddCanary {
        /// The canary row.
        row: Vec<(usize, f64)>,
        /// Its label.
        label: f64,
    },
    /// The second dataset lacks row `index` (the canary).
    RemoveRow {
        /// The row removed.
        index: usize,
    },
    /// Row `index` is replaced by the canary.
    ReplaceRow {
        /// The row replaced.
        index: usize,
        /// The canary row.
        row: Vec<(usize, f64)>,
        /// Its label.
        label: f64,
    },
    /// Row `index` keeps its features and has its label flipped.
    FlipLabel {
        /// The row.
        index: usize,
    },
}

/// Two neighbouring training sets and how they differ.
#[derive(Debug, Clone)]
pub struct NeighbourPair {
    /// The base dataset.
    pub first: TrainingSet,
    /// Its neighbour.
    pub second: TrainingSet,
    /// How they differ.
    pub relation: Neighbouring,
}

impl NeighbourPair {
    /// The pair `(base, base changed by relation)`, both checked by dp-erm.
    pub fn new(base: &LabelledRows, relation: Neighbouring) -> Result<Self, AuditError> {
        let mut changed = base.clone();
        match &relation {
            Neighbouring::AddCanary { row, label } => {
                changed.rows.push(row.clone());
                changed.labels.push(*label);
            }
            Neighbouring::RemoveRow { index } => {
                base.check_row(*index)?;
                changed.rows.remove(*index);
                changed.labels.remove(*index);
            }
            Neighbouring::ReplaceRow { index, row, label } => {
                base.check_row(*index)?;
                changed.rows[*index] = row.clone();
                changed.labels[*index] = *label;
            }
            Neighbouring::FlipLabel { index } => {
                base.check_row(*index)?;
                changed.labels[*index] = -changed.labels[*index];
            }
        }
        Ok(Self {
            first: base.training_set()?,
            second: changed.training_set()?,
            relation,
        })
    }

    /// Whether the pair is neighbouring under *replace one record*, the relation of the
    /// workspace's guarantees.
    pub fn is_replace_one(&self) -> bool {
        matches!(
            self.relation,
            Neighbouring::ReplaceRow { .. } | Neighbouring::FlipLabel { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> LabelledRows {
        LabelledRows::dense(2, &[0.5, 0.1, -0.3, 0.4, 0.0, -0.9], vec![1.0, -1.0, 1.0]).unwrap()
    }

    #[test]
    fn each_relation_changes_one_record() {
        let canary = vec![(0, 1.0)];
        let cases = [
            (
                Neighbouring::AddCanary {
                    row: canary.clone(),
                    label: 1.0,
                },
                4,
                false,
            ),
            (Neighbouring::RemoveRow { index: 1 }, 2, false),
            (
                Neighbouring::ReplaceRow {
                    index: 2,
                    row: canary.clone(),
                    label: -1.0,
                },
                3,
                true,
            ),
            (Neighbouring::FlipLabel { index: 0 }, 3, true),
        ];
        for (relation, second_len, replace_one) in cases {
            let pair = NeighbourPair::new(&base(), relation).unwrap();
            assert_eq!(pair.first.len(), 3);
            assert_eq!(pair.second.len(), second_len);
            assert_eq!(pair.is_replace_one(), replace_one);
        }
        let flipped = NeighbourPair::new(&base(), Neighbouring::FlipLabel { index: 0 }).unwrap();
        assert_eq!(flipped.second.labels(), &[-1.0, -1.0, 1.0]);
    }

    #[test]
    fn rejects_out_of_range_rows_and_rows_outside_the_ball() {
        assert!(NeighbourPair::new(&base(), Neighbouring::RemoveRow { index: 3 }).is_err());
        let outside = Neighbouring::AddCanary {
            row: vec![(0, 2.0)],
            label: 1.0,
        };
        assert!(matches!(
            NeighbourPair::new(&base(), outside),
            Err(AuditError::Data(dp_erm::ErmError::RowNormAboveOne {
                row: 3,
                ..
            }))
        ));
        assert!(LabelledRows::dense(2, &[0.1], vec![1.0]).is_err());
    }
}
