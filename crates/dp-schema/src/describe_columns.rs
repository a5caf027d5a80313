//! A column-only release: the facts of a table's columns (bounds, levels) with no label
//! and no schema written, for the faces' private preprocessing (Python's
//! `dpml.preprocessing`). The mechanisms, the split of ε and δ and the order of the draws
//! are the describe pass's own ([`DescribePlan::columns`], [`Describer`]).

use dp_noise::ReleaseRng;

use super::{DescribeError, DescribePlan, Describer, Fact, Written, refused};

/// What was released for one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Released {
    /// A numeric column's bounds, `lower < upper`, both finite.
    Bounds {
        /// The released lower bound.
        lower: f64,
        /// The released upper bound.
        upper: f64,
    },
    /// A categorical column's levels that passed the threshold, in the mechanism's order
    /// (the candidate list's for [`dp_noise::CandidateLevels`]).
    Levels(Vec<String>),
    /// A feature column whose release gave nothing usable (no cell or level passed the
    /// threshold).
    Dropped,
    /// An ignored column (nothing released, nothing spent).
    Ignored,
}

/// The facts of a column-only plan: one entry per spec column, in its order.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnRelease {
    /// Each column's name and release.
    pub columns: Vec<(String, Released)>,
    /// The released facts with their mechanism and spend, in column order.
    pub facts: Vec<Fact>,
    /// The ε spent in all.
    pub epsilon: f64,
    /// The δ spent in all (0 when no release needed it).
    pub delta: f64,
    /// The records read (n: public under replace-one).
    pub rows: u64,
}

impl Describer<'_> {
    /// Draws every release of a column-only plan ([`DescribePlan::columns`]), in column
    /// order, from `rng`: the draws are those [`Describer::release`] makes for the same
    /// feature columns (a labelled plan with public classes draws nothing for its label,
    /// so both give the same facts on the same data and generator).
    ///
    /// Refused before any draw (costs nothing) for a labelled plan and when no record
    /// was counted. Every other error comes after the first draw, so the faces charge it.
    ///
    /// # Privacy
    /// What is released: each numeric column's bounds ([`dp_noise::HistogramBounds`], a
    /// noisy signed power-of-two histogram, `ε/k`), each categorical column's levels
    /// ([`dp_noise::CandidateLevels`] over a public candidate list, `ε/k`, or
    /// [`dp_noise::StabilityLevels`] without one, `ε/k` and `δ/s`), `k` being the number
    /// of feature columns and `s` the number of stability releases (the split of
    /// [`DescribePlan::new`], fixed before any record is read). Each fact is DP under
    /// replace-one neighbours with n public, as its mechanism's `# Privacy` section
    /// states; the `k` facts read the same data and compose sequentially to the plan's
    /// [`DescribePlan::charge`]. The noisy counts in [`Fact::outcome`] and the dropped
    /// columns are post-processing of those releases; the exact counts are never
    /// returned. A model fitted on data transformed by these facts composes with them:
    /// its own (ε', δ') adds.
    pub fn release_columns<R: ReleaseRng + ?Sized>(
        self,
        rng: &mut R,
    ) -> Result<ColumnRelease, DescribeError> {
        let plan: &DescribePlan = self.plan;
        if plan.labelled {
            return Err(refused(
                "a labelled plan writes a schema: release it with release, or build the plan \
                 with DescribePlan::columns",
            ));
        }
        let rows = self.rows;
        let (written, facts) = self.draw(rng)?;
        let columns = written
            .into_iter()
            .map(|(name, w)| {
                let released = match w {
                    Written::Numeric { lower, upper, .. } => Released::Bounds { lower, upper },
                    Written::Categorical(levels) => Released::Levels(levels),
                    Written::Dropped => Released::Dropped,
                    Written::Ignore | Written::Label { .. } => Released::Ignored,
                };
                (name, released)
            })
            .collect();
        Ok(ColumnRelease {
            columns,
            facts,
            epsilon: plan.epsilon,
            delta: plan.delta,
            rows,
        })
    }
}

#[cfg(test)]
#[path = "describe_columns_tests.rs"]
mod tests;
