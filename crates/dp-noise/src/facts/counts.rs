//! Public candidate grids, and per-cell counts of data on them, accumulated chunk by chunk.

use std::fmt;

use crate::NoiseError;

/// The most candidates a grid may hold (about a million): enough for any log-scale grid,
/// small enough that counts and selection stay cheap.
pub const MAX_CANDIDATES: usize = 1 << 20;

/// The most records a [`GridCounts`] accepts: 2³². Below it, the quantile utility
/// `−|k − p·n|` with the target on a 2⁻²⁰ grid is exact in floating point.
pub const MAX_ROWS: u64 = 1 << 32;

/// A public, finite, strictly increasing list of candidate values `c_0 < … < c_{m−1}`:
/// the outputs a [`crate::PrivateQuantile`] may release and the edges of the cells a
/// [`crate::HistogramBounds`] counts. It must be chosen without looking at the data.
///
/// The grid cuts the real line into `m + 1` cells: cell `j < m` is `(c_{j−1}, c_j]`
/// (with `c_{−1} = −∞`) and cell `m` is `(c_{m−1}, +∞)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CandidateGrid {
    values: Vec<f64>,
}

impl CandidateGrid {
    /// A grid of the caller's candidates, refused unless finite and strictly increasing
    /// ([`NoiseError::InvalidCandidate`] names the first offender), non-empty, and at most
    /// [`MAX_CANDIDATES`] long.
    pub fn new(values: Vec<f64>) -> Result<Self, NoiseError> {
        if values.is_empty() {
            return Err(NoiseError::NoCandidates);
        }
        if values.len() > MAX_CANDIDATES {
            return Err(NoiseError::DimensionTooLarge {
                dim: values.len(),
                max: MAX_CANDIDATES,
            });
        }
        for (position, &value) in values.iter().enumerate() {
            let increasing = position == 0 || values[position - 1] < value;
            if !value.is_finite() || !increasing {
                return Err(NoiseError::InvalidCandidate { position, value });
            }
        }
        Ok(Self { values })
    }

    /// The signed log-scale grid `−2^max, …, −2^min, 0, 2^min, …, 2^max` (for
    /// `min ≤ max`, both in `−1074..=1023` so that every point is a finite double): for
    /// values of unknown range and sign, resolved to a factor of 2.
    pub fn signed_powers_of_two(min_exponent: i32, max_exponent: i32) -> Result<Self, NoiseError> {
        let positive = powers_of_two(min_exponent, max_exponent)?;
        let mut values: Vec<f64> = positive.iter().rev().map(|v| -v).collect();
        values.push(0.0);
        values.extend(positive);
        Self::new(values)
    }

    /// [`CandidateGrid::signed_powers_of_two`] over every finite double, `±2^k` for
    /// `k = −1074..=1023` and 0 (4,197 candidates): a grid built from the value type alone,
    /// for data of which nothing is known.
    pub fn for_f64() -> Self {
        Self::signed_powers_of_two(-1074, 1023).expect("the full range is valid")
    }

    /// The positive powers of two `2^min, …, 2^max` (both in `−1074..=1023`): a grid for
    /// norms and other non-negative quantities of unknown scale.
    pub fn powers_of_two(min_exponent: i32, max_exponent: i32) -> Result<Self, NoiseError> {
        Self::new(powers_of_two(min_exponent, max_exponent)?)
    }

    /// A fine log grid from `low` to `high` (`0 < low < high`, finite): the points
    /// `low · 2^(i/k)` for `k = points_per_doubling ≥ 1`, while they stay below `high`,
    /// then `high`.
    pub fn log_spaced(low: f64, high: f64, points_per_doubling: u32) -> Result<Self, NoiseError> {
        if !(low.is_finite() && low > 0.0) {
            return Err(NoiseError::InvalidCandidate {
                position: 0,
                value: low,
            });
        }
        if !(high.is_finite() && high > low) {
            return Err(NoiseError::InvalidCandidate {
                position: 1,
                value: high,
            });
        }
        if points_per_doubling == 0 {
            return Err(NoiseError::UnsupportedParameters(
                "a log grid needs at least one point per doubling".into(),
            ));
        }
        let doublings = (high / low).log2();
        let points = doublings * f64::from(points_per_doubling) + 2.0;
        if points > MAX_CANDIDATES as f64 {
            return Err(NoiseError::DimensionTooLarge {
                dim: points.min(usize::MAX as f64) as usize,
                max: MAX_CANDIDATES,
            });
        }
        let mut values = Vec::with_capacity(points as usize);
        for i in 0.. {
            let value = low * (f64::from(i) / f64::from(points_per_doubling)).exp2();
            if value >= high {
                break;
            }
            if values.last().is_none_or(|&last| last < value) {
                values.push(value);
            }
        }
        values.push(high);
        Self::new(values)
    }

    /// The candidates, increasing.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// The number of candidates `m`.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Always false: a grid has at least one candidate.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The number of cells, `m + 1`.
    pub fn cells(&self) -> usize {
        self.values.len() + 1
    }

    /// The cell of a value: the number of candidates below it, so that cell `j` holds the
    /// values in `(c_{j−1}, c_j]`.
    pub(crate) fn cell(&self, value: f64) -> usize {
        self.values.partition_point(|&c| c < value)
    }

    /// The closed range `[lower, upper]` that covers cell `j`: the open ends become
    /// `∓f64::MAX` (every accepted value is finite).
    pub(crate) fn cell_range(&self, j: usize) -> (f64, f64) {
        let lower = if j == 0 {
            -f64::MAX
        } else {
            self.values[j - 1]
        };
        let upper = self.values.get(j).copied().unwrap_or(f64::MAX);
        (lower, upper)
    }
}

fn powers_of_two(min_exponent: i32, max_exponent: i32) -> Result<Vec<f64>, NoiseError> {
    const RANGE: std::ops::RangeInclusive<i32> = -1074..=1023;
    if !RANGE.contains(&min_exponent)
        || !RANGE.contains(&max_exponent)
        || min_exponent > max_exponent
    {
        return Err(NoiseError::UnsupportedParameters(format!(
            "power-of-two exponents {min_exponent}..={max_exponent} must be increasing and \
             within {RANGE:?} (finite doubles)"
        )));
    }
    // 2^k exactly for every k in range (subnormal included): halve 2^-1022 as needed.
    Ok((min_exponent..=max_exponent)
        .map(exact_power_of_two)
        .collect())
}

/// `2^k` exactly for `k` in `−1074..=1023`.
pub(crate) fn exact_power_of_two(k: i32) -> f64 {
    if k >= -1022 {
        2f64.powi(k)
    } else {
        f64::from_bits(1u64 << (k + 1074))
    }
}

/// Counts of data per cell of a [`CandidateGrid`], accumulated from chunks: the only data
/// summary the grid mechanisms need. Memory is one counter per cell, independent of the
/// number of records, so a column of any length can be streamed through [`GridCounts::add_chunk`];
/// partial counts from blocks of the data combine with [`GridCounts::merge`].
///
/// The counts are exact statistics of the data and are **not** private: release only
/// what a mechanism of this module makes of them. `Debug` shows the grid size and n
/// (public under replace-one), not the counts.
#[derive(Clone, PartialEq)]
pub struct GridCounts {
    grid: CandidateGrid,
    cells: Vec<u64>,
    rows: u64,
}

impl GridCounts {
    /// No records yet, on `grid`.
    pub fn new(grid: CandidateGrid) -> Self {
        let cells = vec![0; grid.cells()];
        Self {
            grid,
            cells,
            rows: 0,
        }
    }

    /// Counts one chunk of values. The chunk is checked whole before anything is counted:
    /// a NaN or infinite value is refused ([`NoiseError::NonFiniteValue`] with its index
    /// counted from the first record ever added), and then nothing of the chunk is counted.
    /// Cost: `O(len · log m)`.
    pub fn add_chunk(&mut self, values: &[f64]) -> Result<(), NoiseError> {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(NoiseError::NonFiniteValue {
                index: (self.rows as usize).saturating_add(i),
                value: values[i],
            });
        }
        self.check_room(values.len() as u64)?;
        for &value in values {
            self.cells[self.grid.cell(value)] += 1;
        }
        self.rows += values.len() as u64;
        Ok(())
    }

    /// Counts one value (as a chunk of one).
    pub fn add(&mut self, value: f64) -> Result<(), NoiseError> {
        self.add_chunk(&[value])
    }

    /// Counts the Euclidean norm of one row (see [`crate::row_norm`]); NaN or infinite
    /// entries are refused naming the row.
    pub fn add_row_norm(&mut self, row: &[f64]) -> Result<(), NoiseError> {
        let norm = super::norm::row_norm(row).map_err(|_| NoiseError::NonFiniteValue {
            index: self.rows as usize,
            value: row
                .iter()
                .copied()
                .find(|v| !v.is_finite())
                .unwrap_or(f64::NAN),
        })?;
        self.add_chunk(&[norm])
    }

    /// Adds the counts of another accumulator over the same grid (blocks of one data set).
    pub fn merge(&mut self, other: &GridCounts) -> Result<(), NoiseError> {
        if self.grid != other.grid {
            return Err(NoiseError::UnsupportedParameters(
                "counts over different candidate grids cannot be merged".into(),
            ));
        }
        self.check_room(other.rows)?;
        for (mine, theirs) in self.cells.iter_mut().zip(&other.cells) {
            *mine += theirs;
        }
        self.rows += other.rows;
        Ok(())
    }

    fn check_room(&self, more: u64) -> Result<(), NoiseError> {
        match self.rows.checked_add(more) {
            Some(total) if total <= MAX_ROWS => Ok(()),
            _ => Err(NoiseError::UnsupportedParameters(format!(
                "more than {MAX_ROWS} records on one grid"
            ))),
        }
    }

    /// The number of records n counted (public under replace-one).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The grid.
    pub fn grid(&self) -> &CandidateGrid {
        &self.grid
    }

    /// Records per cell, cell `j` holding the values in `(c_{j−1}, c_j]` (exact, **not
    /// private**: for moving partial counts between trusted parties, as
    /// [`GridCounts::from_cells`] takes them back; never release them).
    pub fn cells(&self) -> &[u64] {
        &self.cells
    }

    /// Counts already made elsewhere (the [`GridCounts::cells`] of a block of the same data
    /// set, sent by a trusted party): one count per cell of `grid`, n their sum. Refused: a
    /// number of counts other than `grid.cells()`, or a sum above [`MAX_ROWS`].
    pub fn from_cells(grid: CandidateGrid, cells: Vec<u64>) -> Result<Self, NoiseError> {
        if cells.len() != grid.cells() {
            return Err(NoiseError::UnsupportedParameters(format!(
                "{} cell counts for a grid of {} cells",
                cells.len(),
                grid.cells()
            )));
        }
        let rows = cells
            .iter()
            .try_fold(0u64, |total, &c| total.checked_add(c))
            .filter(|&total| total <= MAX_ROWS)
            .ok_or_else(|| {
                NoiseError::UnsupportedParameters(format!(
                    "more than {MAX_ROWS} records on one grid"
                ))
            })?;
        Ok(Self { grid, cells, rows })
    }

    /// `#{x ≤ c_j}` for every candidate `j` (exact, not private).
    pub(crate) fn at_most(&self) -> Vec<u64> {
        self.cells[..self.grid.len()]
            .iter()
            .scan(0u64, |total, &c| {
                *total += c;
                Some(*total)
            })
            .collect()
    }

    /// Refuses counts with no record: n ≥ 1 is needed for a fact about the data.
    pub(crate) fn check_not_empty(&self) -> Result<(), NoiseError> {
        if self.rows == 0 {
            Err(NoiseError::EmptyData)
        } else {
            Ok(())
        }
    }
}

impl fmt::Debug for GridCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GridCounts")
            .field("candidates", &self.grid.len())
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_grid_is_symmetric_and_exact() {
        let grid = CandidateGrid::for_f64();
        assert_eq!(grid.len(), 2 * 2098 + 1);
        assert_eq!(grid.values()[2098], 0.0);
        assert_eq!(grid.values()[2099], f64::from_bits(1)); // 2^-1074
        assert_eq!(*grid.values().last().unwrap(), 2f64.powi(1023));
        assert_eq!(grid.values()[0], -(2f64.powi(1023)));
    }

    #[test]
    fn cells_are_left_open_right_closed() {
        let grid = CandidateGrid::new(vec![-1.0, 0.0, 2.0]).unwrap();
        assert_eq!(grid.cell(-5.0), 0);
        assert_eq!(grid.cell(-1.0), 0);
        assert_eq!(grid.cell(-0.5), 1);
        assert_eq!(grid.cell(-0.0), 1);
        assert_eq!(grid.cell(2.0), 2);
        assert_eq!(grid.cell(2.5), 3);
        let mut counts = GridCounts::new(grid);
        counts.add_chunk(&[-5.0, -1.0, 0.0, 1.0, 2.0, 9.0]).unwrap();
        assert_eq!(counts.cells(), &[2, 1, 2, 1]);
        assert_eq!(counts.at_most(), vec![2, 3, 5]);
    }

    #[test]
    fn chunks_and_merges_count_what_one_pass_counts() {
        let grid = CandidateGrid::signed_powers_of_two(-4, 4).unwrap();
        let data: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.37).sin() * 20.0).collect();
        let mut whole = GridCounts::new(grid.clone());
        whole.add_chunk(&data).unwrap();
        let mut streamed = GridCounts::new(grid.clone());
        let mut other = GridCounts::new(grid);
        for (i, chunk) in data.chunks(77).enumerate() {
            if i % 2 == 0 {
                streamed.add_chunk(chunk).unwrap();
            } else {
                other.add_chunk(chunk).unwrap();
            }
        }
        streamed.merge(&other).unwrap();
        assert_eq!(whole, streamed);
        assert_eq!(whole.rows(), 1000);
    }

    #[test]
    fn cells_round_trip_and_bad_cells_are_refused() {
        let grid = CandidateGrid::new(vec![-1.0, 0.0, 2.0]).unwrap();
        let mut counts = GridCounts::new(grid.clone());
        counts.add_chunk(&[-5.0, -1.0, 0.0, 1.0, 2.0, 9.0]).unwrap();
        let again = GridCounts::from_cells(grid.clone(), counts.cells().to_vec()).unwrap();
        assert_eq!(again, counts);
        assert_eq!(again.rows(), 6);
        assert!(GridCounts::from_cells(grid.clone(), vec![1, 2, 3]).is_err());
        assert!(GridCounts::from_cells(grid.clone(), vec![MAX_ROWS, 1, 0, 0]).is_err());
        assert!(GridCounts::from_cells(grid, vec![u64::MAX, 1, 0, 0]).is_err());
    }

    #[test]
    fn rejects_bad_grids_naming_the_candidate() {
        assert_eq!(CandidateGrid::new(vec![]), Err(NoiseError::NoCandidates));
        assert!(matches!(
            CandidateGrid::new(vec![0.0, 1.0, 1.0]),
            Err(NoiseError::InvalidCandidate { position: 2, .. })
        ));
        assert!(matches!(
            CandidateGrid::new(vec![0.0, 2.0, 1.0]),
            Err(NoiseError::InvalidCandidate { position: 2, .. })
        ));
        assert!(matches!(
            CandidateGrid::new(vec![f64::NAN]),
            Err(NoiseError::InvalidCandidate { position: 0, .. })
        ));
        assert!(matches!(
            CandidateGrid::new(vec![0.0, f64::INFINITY]),
            Err(NoiseError::InvalidCandidate { position: 1, .. })
        ));
        assert!(CandidateGrid::signed_powers_of_two(3, 2).is_err());
        assert!(CandidateGrid::powers_of_two(-1075, 0).is_err());
        assert!(CandidateGrid::log_spaced(0.0, 1.0, 4).is_err());
        assert!(CandidateGrid::log_spaced(1.0, 1.0, 4).is_err());
        assert!(CandidateGrid::log_spaced(1.0, 2.0, 0).is_err());
    }

    #[test]
    fn log_grid_is_increasing_and_ends_at_high() {
        let grid = CandidateGrid::log_spaced(0.01, 100.0, 8).unwrap();
        assert_eq!(grid.values()[0], 0.01);
        assert_eq!(*grid.values().last().unwrap(), 100.0);
        assert!((grid.len() as i64 - 107).abs() <= 1, "{}", grid.len());
    }

    #[test]
    fn a_chunk_with_a_nan_is_refused_whole_naming_the_record() {
        let mut counts = GridCounts::new(CandidateGrid::new(vec![0.0]).unwrap());
        counts.add_chunk(&[1.0, 2.0]).unwrap();
        assert!(matches!(
            counts.add_chunk(&[3.0, f64::NAN]),
            Err(NoiseError::NonFiniteValue { index: 3, .. })
        ));
        assert_eq!(counts.rows(), 2);
        assert_eq!(counts.cells(), &[0, 2]);
    }

    #[test]
    fn debug_does_not_print_counts() {
        let mut counts = GridCounts::new(CandidateGrid::new(vec![0.0, 1.0]).unwrap());
        counts.add_chunk(&[0.5; 7]).unwrap();
        assert_eq!(
            format!("{counts:?}"),
            "GridCounts { candidates: 2, rows: 7, .. }"
        );
    }
}
