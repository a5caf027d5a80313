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

/// Most rows an audit dataset may have (documented cap, checked before allocating): an
/// audit trains on its datasets 10⁴–10⁸ times, so they are small (docs/src/reference/privacy-testing.md §2
/// uses 50 rows); 2²⁰ rows of sparse entries stay well under a gigabyte.
pub const MAX_ROWS: usize = 1 << 20;

impl LabelledRows {
    /// Dense rows (row-major, `features` values each) and their labels. Refuses, before
    /// allocating, `features` outside `1..=`[`dp_erm::MAX_FEATURES`], more than
    /// [`MAX_ROWS`] labels, and a number of values other than `features × labels`.
    pub fn dense(features: usize, values: &[f64], labels: Vec<f64>) -> Result<Self, AuditError> {
        check_features(features)?;
        check_rows(labels.len())?;
        // At most 2^24 · 2^20 = 2^44 after the checks above: checked all the same.
        let expected = features
            .checked_mul(labels.len())
            .ok_or(AuditError::TooLarge {
                what: "features × rows",
                size: usize::MAX,
                limit: dp_erm::MAX_FEATURES * MAX_ROWS,
            })?;
        if values.len() != expected {
            return Err(AuditError::LengthMismatch {
                what: "dense values (features × labels)",
                expected,
                found: values.len(),
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

    /// The rows as a checked training set (rows in the unit ball, labels ±1). The shape
    /// ([`LabelledRows::check_shape`]) is checked before anything is copied.
    pub fn training_set(&self) -> Result<TrainingSet, AuditError> {
        self.check_shape()?;
        Ok(TrainingSet::builder(self.features)
            .sparse_rows(self.rows.clone())
            .labels(self.labels.clone())
            .build()?)
    }

    /// The public fields agree: `features` in `1..=`[`dp_erm::MAX_FEATURES`], at most
    /// [`MAX_ROWS`] rows, and one label per row. (Row contents — indices, values, norms,
    /// labels ±1 — are dp-erm's checks, made by [`LabelledRows::training_set`].)
    pub fn check_shape(&self) -> Result<(), AuditError> {
        check_features(self.features)?;
        check_rows(self.rows.len())?;
        if self.labels.len() != self.rows.len() {
            return Err(AuditError::LengthMismatch {
                what: "labels (one per row)",
                expected: self.rows.len(),
                found: self.labels.len(),
            });
        }
        Ok(())
    }

    fn check_row(&self, row: usize) -> Result<(), AuditError> {
        if row < self.rows.len() {
            Ok(())
        } else {
            Err(AuditError::InvalidCount {
                what: "row index",
                value: row,
                requirement: "below the number of rows",
            })
        }
    }
}

/// A feature count in `1..=MAX_FEATURES`.
fn check_features(features: usize) -> Result<(), AuditError> {
    if features == 0 {
        return Err(AuditError::InvalidCount {
            what: "features",
            value: features,
            requirement: "at least 1",
        });
    }
    if features > dp_erm::MAX_FEATURES {
        return Err(AuditError::TooLarge {
            what: "features",
            size: features,
            limit: dp_erm::MAX_FEATURES,
        });
    }
    Ok(())
}

/// A row count within [`MAX_ROWS`].
fn check_rows(rows: usize) -> Result<(), AuditError> {
    if rows > MAX_ROWS {
        return Err(AuditError::TooLarge {
            what: "rows",
            size: rows,
            limit: MAX_ROWS,
        });
    }
    Ok(())
}

/// The standard audit dataset (docs/src/reference/privacy-testing.md §2): `shared` rows of one feature drawn
/// uniformly in `[−1, 1]` from `seed`, labelled by their sign and flipped with probability
/// 0.2, then the canary `x* = 1` labelled +1 as the last row. Its neighbour under
/// [`Neighbouring::FlipLabel`] of that last row is the pair whose privacy loss has a closed
/// form for the logistic loss. Refuses more than [`MAX_ROWS`] rows in all (`shared + 1`)
/// before allocating.
pub fn label_flip_canary(shared: usize, seed: u64) -> Result<LabelledRows, AuditError> {
    use rand::RngExt;
    if shared >= MAX_ROWS {
        return Err(AuditError::TooLarge {
            what: "shared rows (the canary adds one)",
            size: shared,
            limit: MAX_ROWS - 1,
        });
    }
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
    /// The pair `(base, base changed by relation)`, both checked by dp-erm. The base's
    /// shape ([`LabelledRows::check_shape`]: one label per row, sizes within the caps) and
    /// the relation's row index are checked before anything is copied.
    pub fn new(base: &LabelledRows, relation: Neighbouring) -> Result<Self, AuditError> {
        base.check_shape()?;
        match &relation {
            Neighbouring::AddCanary { .. } => check_rows(base.rows.len() + 1)?,
            Neighbouring::RemoveRow { index }
            | Neighbouring::ReplaceRow { index, .. }
            | Neighbouring::FlipLabel { index } => base.check_row(*index)?,
        }
        let mut changed = base.clone();
        match &relation {
            Neighbouring::AddCanary { row, label } => {
                changed.rows.push(row.clone());
                changed.labels.push(*label);
            }
            Neighbouring::RemoveRow { index } => {
                changed.rows.remove(*index);
                changed.labels.remove(*index);
            }
            Neighbouring::ReplaceRow { index, row, label } => {
                changed.rows[*index] = row.clone();
                changed.labels[*index] = *label;
            }
            Neighbouring::FlipLabel { index } => {
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

    /// Sizes above the caps are refused before allocating, with the exact count; a
    /// product that would wrap is refused, never taken modulo 2^64.
    #[test]
    fn rejects_sizes_above_the_caps_and_wrapping_products() {
        let e = label_flip_canary(1_000_000_000, 1).unwrap_err();
        assert!(
            matches!(
                e,
                AuditError::TooLarge {
                    size: 1_000_000_000,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("1000000000"), "{e}");
        assert!(label_flip_canary(usize::MAX, 1).is_err());
        let largest = label_flip_canary(MAX_ROWS - 1, 1).unwrap();
        assert_eq!(largest.rows.len(), MAX_ROWS);
        // 2^63 features × 2 labels wraps to 0 = values.len(): refused, not 0 rows.
        let e = LabelledRows::dense(1 << 63, &[], vec![1.0, -1.0]).unwrap_err();
        assert!(
            matches!(
                e,
                AuditError::TooLarge {
                    what: "features",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains(&(1usize << 63).to_string()), "{e}");
        let e = LabelledRows::dense(0, &[], vec![]).unwrap_err();
        assert!(e.to_string().contains("features = 0"), "{e}");
        let e = LabelledRows::dense(2, &[0.1], vec![1.0]).unwrap_err();
        assert_eq!(
            e,
            AuditError::LengthMismatch {
                what: "dense values (features × labels)",
                expected: 2,
                found: 1
            }
        );
    }

    /// Public fields that disagree (fewer labels than rows) are refused, never indexed
    /// out of bounds, whatever the relation.
    #[test]
    fn rejects_rows_and_labels_of_different_lengths() {
        let mut short = base();
        short.labels.pop();
        for relation in [
            Neighbouring::FlipLabel { index: 2 },
            Neighbouring::RemoveRow { index: 2 },
            Neighbouring::ReplaceRow {
                index: 2,
                row: vec![],
                label: 1.0,
            },
            Neighbouring::AddCanary {
                row: vec![],
                label: 1.0,
            },
        ] {
            let e = NeighbourPair::new(&short, relation).unwrap_err();
            assert_eq!(
                e,
                AuditError::LengthMismatch {
                    what: "labels (one per row)",
                    expected: 3,
                    found: 2
                }
            );
        }
        let e =
            NeighbourPair::new(&base(), Neighbouring::FlipLabel { index: usize::MAX }).unwrap_err();
        let shown = format!("row index = {}", usize::MAX);
        assert!(e.to_string().contains(&shown), "{e}");
        let mut zero = base();
        zero.features = 0;
        assert!(zero.training_set().is_err());
    }
}
