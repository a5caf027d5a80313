//! A describing pass split over blocks of the data (a Spark DataFrame's partitions): each
//! block is counted by its own [`Describer`], its exact counts ([`DescribeCounts`]) travel
//! as bytes to one place, and there they are merged into one describer that releases once.
//!
//! The merged release is exactly the release of one pass over every block's records (the
//! same seed draws the same schema): every count is a sum — a numeric column's records per
//! grid cell, a categorical column's or the label's records per level, the records read —
//! and levels are kept in their own order, not in the order the blocks arrive.
//!
//! The counts are exact statistics of the data and are **not private**: they may move only
//! between trusted parties (an executor to its driver, as the fits' partial sums do), and
//! are never released, written or shown. `Debug` shows n and the number of columns only.

use std::collections::BTreeMap;
use std::fmt;

use dp_noise::{GridCounts, LevelCounts, MAX_ROWS};
use serde::{Deserialize, Serialize};

use super::{Counter, DescribeError, Describer, flush, refused};

/// The byte format's version: counts written by another version are refused.
const FORMAT: u32 = 1;

/// The most bytes decoded (a bound on what a corrupt length can make decoding allocate).
const MAX_BYTES: usize = 1 << 30;

/// The exact counts of one block of a describing pass ([`Describer::counts`]), to be
/// merged into the describer of the same plan with [`Describer::merge`]; as bytes with
/// [`DescribeCounts::to_bytes`] and [`DescribeCounts::from_bytes`].
///
/// Not private (see the module's notes): send it only to a trusted party, never release it.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct DescribeCounts {
    format: u32,
    rows: u64,
    /// Each spec column's name and counts, in the spec's order.
    columns: Vec<(String, ColumnCounts)>,
}

/// One column's counts.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
enum ColumnCounts {
    /// A numeric column: its grid's number of cells, and each non-empty cell's index and
    /// count, by increasing index (missing cells are counted nowhere).
    Numeric { cells: u64, counts: Vec<(u64, u64)> },
    /// A categorical column: the records per level seen (missing cells counted nowhere).
    Levels(BTreeMap<String, u64>),
    /// The label: the records per class when its classes are released, `None` when they
    /// are public (its cells are only checked).
    Label(Option<BTreeMap<String, u64>>),
    /// An ignored column.
    Ignore,
}

impl ColumnCounts {
    fn kind(&self) -> &'static str {
        match self {
            Self::Numeric { .. } => "numeric",
            Self::Levels(_) => "categorical",
            Self::Label(Some(_)) => "label (classes released)",
            Self::Label(None) => "label (classes public)",
            Self::Ignore => "ignored",
        }
    }
}

fn counter_kind(counter: &Counter) -> &'static str {
    match counter {
        Counter::Numeric { .. } => "numeric",
        Counter::Levels(_) => "categorical",
        Counter::Label {
            counts: Some(_), ..
        } => "label (classes released)",
        Counter::Label { counts: None, .. } => "label (classes public)",
        Counter::None => "ignored",
    }
}

impl fmt::Debug for DescribeCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DescribeCounts")
            .field("rows", &self.rows)
            .field("columns", &self.columns.len())
            .finish_non_exhaustive()
    }
}

fn not_counts() -> DescribeError {
    refused("the bytes are not a describing pass's counts (of this version of dp-ml)")
}

impl DescribeCounts {
    /// The records counted (n of the block: public under replace-one).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The counts as bytes (bincode), for [`DescribeCounts::from_bytes`].
    pub fn to_bytes(&self) -> Result<Vec<u8>, DescribeError> {
        bincode::serde::encode_to_vec(self, bincode::config::standard())
            .map_err(|_| refused("the counts could not be encoded"))
    }

    /// Counts from [`DescribeCounts::to_bytes`]'s bytes; anything else (a truncated or
    /// extended string, another format's) is refused. The counts are checked against a
    /// plan only when merged ([`Describer::merge`]).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DescribeError> {
        let config = bincode::config::standard().with_limit::<MAX_BYTES>();
        let (counts, read): (Self, usize) =
            bincode::serde::decode_from_slice(bytes, config).map_err(|_| not_counts())?;
        if read != bytes.len() || counts.format != FORMAT {
            return Err(not_counts());
        }
        Ok(counts)
    }
}

/// One column's counts checked against the plan, ready to add.
enum Checked {
    Grid(GridCounts),
    Levels(LevelCounts<String>),
    Nothing,
}

/// A level map as counts of a block of `rows` records: each count ≥ 1, their sum at most
/// `rows` (exactly `rows` for the label, which is never missing).
fn checked_levels(
    name: &str,
    counts: BTreeMap<String, u64>,
    rows: u64,
    every_row: bool,
) -> Result<LevelCounts<String>, DescribeError> {
    let counts = LevelCounts::from_counts(counts)
        .map_err(|e| refused(format!("column {name}: bad level counts: {e}")))?;
    let fits = if every_row {
        counts.rows() == rows
    } else {
        counts.rows() <= rows
    };
    if !fits {
        return Err(refused(format!(
            "column {name}: the level counts do not add up to the block's records"
        )));
    }
    Ok(counts)
}

impl Describer<'_> {
    /// The exact counts so far (every numeric buffer counted first), to merge into
    /// another describer of the same plan ([`Describer::merge`]): the block of a pass
    /// split over several places. **Not private**: see [`DescribeCounts`].
    pub fn counts(mut self) -> DescribeCounts {
        let names = self.plan.spec.columns.iter().map(|c| c.name.clone());
        let columns = names
            .zip(self.counters.iter_mut())
            .map(|(name, counter)| {
                let counts = match counter {
                    Counter::Numeric { counts, buffer, .. } => {
                        flush(counts, buffer);
                        ColumnCounts::Numeric {
                            cells: counts.grid().cells() as u64,
                            counts: (0u64..)
                                .zip(counts.cells())
                                .filter(|&(_, &c)| c > 0)
                                .map(|(j, &c)| (j, c))
                                .collect(),
                        }
                    }
                    Counter::Levels(counts) => ColumnCounts::Levels(level_map(counts)),
                    Counter::Label { counts, .. } => {
                        ColumnCounts::Label(counts.as_ref().map(level_map))
                    }
                    Counter::None => ColumnCounts::Ignore,
                };
                (name, counts)
            })
            .collect();
        DescribeCounts {
            format: FORMAT,
            rows: self.rows,
            columns,
        }
    }

    /// Adds another block's counts ([`Describer::counts`] of a describer of the same plan,
    /// from a trusted party): after every block is merged, [`Describer::release`] releases
    /// exactly what one pass over all their records would. Refused before anything is
    /// added (the describer is left as it was), naming the column: counts of another
    /// plan — other columns, names or kinds, another grid — or counts that cannot be a
    /// block's (cells out of order or beyond the grid, more values than records, more than
    /// [`MAX_ROWS`] values on a grid).
    pub fn merge(&mut self, counts: DescribeCounts) -> Result<(), DescribeError> {
        let mismatch = |why: String| refused(format!("the counts do not match the plan: {why}"));
        if counts.columns.len() != self.counters.len() {
            return Err(mismatch(format!(
                "counts of {} columns, the plan has {}",
                counts.columns.len(),
                self.counters.len()
            )));
        }
        let rows = self
            .rows
            .checked_add(counts.rows)
            .ok_or_else(|| refused("more than u64::MAX records"))?;
        let block = counts.rows;
        let mut checked = Vec::with_capacity(self.counters.len());
        for ((name, theirs), (column, counter)) in counts
            .columns
            .into_iter()
            .zip(self.plan.spec.columns.iter().zip(&self.counters))
        {
            if name != column.name {
                return Err(mismatch(format!(
                    "counts of column {name:?} where the plan has {:?}",
                    column.name
                )));
            }
            checked.push(match (theirs, counter) {
                (
                    ColumnCounts::Numeric { cells, counts },
                    Counter::Numeric { counts: mine, .. },
                ) => Checked::Grid(checked_grid(&name, cells, counts, mine, block)?),
                (ColumnCounts::Levels(theirs), Counter::Levels(_)) => {
                    Checked::Levels(checked_levels(&name, theirs, block, false)?)
                }
                (
                    ColumnCounts::Label(Some(theirs)),
                    Counter::Label {
                        counts: Some(_), ..
                    },
                ) => Checked::Levels(checked_levels(&name, theirs, block, true)?),
                (ColumnCounts::Label(None), Counter::Label { counts: None, .. })
                | (ColumnCounts::Ignore, Counter::None) => Checked::Nothing,
                (theirs, counter) => {
                    return Err(mismatch(format!(
                        "column {name}: counts of a {} column, the plan's is {}",
                        theirs.kind(),
                        counter_kind(counter)
                    )));
                }
            });
        }
        for (theirs, counter) in checked.into_iter().zip(&mut self.counters) {
            match (theirs, counter) {
                (Checked::Grid(theirs), Counter::Numeric { counts, .. }) => {
                    counts
                        .merge(&theirs)
                        .map_err(|e| refused(format!("the counts cannot be merged: {e}")))?
                }
                (
                    Checked::Levels(theirs),
                    Counter::Levels(counts)
                    | Counter::Label {
                        counts: Some(counts),
                        ..
                    },
                ) => counts.merge(theirs),
                _ => {}
            }
        }
        self.rows = rows;
        Ok(())
    }
}

fn level_map(counts: &LevelCounts<String>) -> BTreeMap<String, u64> {
    counts.counts().map(|(l, c)| (l.clone(), c)).collect()
}

/// A numeric column's sparse cells as counts on `mine`'s grid, checked: the grid's number
/// of cells, cells strictly increasing and non-empty, at most `block` values, and room
/// for them beside `mine`'s.
fn checked_grid(
    name: &str,
    cells: u64,
    nonzero: Vec<(u64, u64)>,
    mine: &GridCounts,
    block: u64,
) -> Result<GridCounts, DescribeError> {
    let grid = mine.grid();
    if cells != grid.cells() as u64 {
        return Err(refused(format!(
            "the counts do not match the plan: column {name}: counts on a grid of {cells} \
             cells, the plan's has {}",
            grid.cells()
        )));
    }
    let bad = || refused(format!("column {name}: bad cell counts"));
    let mut dense = vec![0u64; grid.cells()];
    let mut next = 0u64;
    for (j, c) in nonzero {
        if j < next || j >= cells || c == 0 {
            return Err(bad());
        }
        dense[j as usize] = c;
        next = j + 1;
    }
    let theirs = GridCounts::from_cells(grid.clone(), dense).map_err(|_| bad())?;
    if theirs.rows() > block {
        return Err(refused(format!(
            "column {name}: more values counted than the block's records"
        )));
    }
    if mine.rows() + theirs.rows() > MAX_ROWS {
        return Err(refused(format!(
            "column {name}: more than {MAX_ROWS} values on one grid"
        )));
    }
    Ok(theirs)
}

#[cfg(test)]
#[path = "describe_counts_tests.rs"]
mod tests;
