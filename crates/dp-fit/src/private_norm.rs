//! A row-norm bound released privately, for rows no schema scales (a face's
//! `data_norm="private"`): the share of ε it spends, the quantile and the grid, decided
//! once for every face.
//!
//! # Privacy
//! The release is dp-noise's [`RowNormBound`]: ε-DP under replace-one with n public (one
//! replaced row replaces one norm; the private quantile has sensitivity 1), on a grid fixed
//! here without the data. The rows are then clipped to the bound and divided by it, a
//! per-row map that keeps the neighbouring relation, so a fit at `ε_fit` on them composes
//! with the release: `ε_norm + ε_fit`, the whole ε a face was given.

use dp_noise::{
    CandidateGrid, GridCounts, NoiseError, NormBound, ReleaseRng, Released, RowNormBound,
};

/// The share of a fit's ε the norm bound spends; the fit gets the rest.
pub const PRIVATE_NORM_SHARE: f64 = 0.1;

/// The quantile of the row norms released: one row in ten is clipped (to the bound), the
/// other nine are divided by a bound at most one grid step above their norms.
pub const PRIVATE_NORM_QUANTILE: f64 = 0.9;

/// What a report says the release is.
pub const PRIVATE_NORM_MECHANISM: &str = "the 0.9-quantile of the rows' Euclidean norms, \
     released by the exponential mechanism over a fixed log grid (2^-64 to 2^64, 4 points \
     per doubling; dp-noise RowNormBound); rows above it clipped to it";

/// Grid points per doubling: a released bound is within 2^(1/4) ≈ 1.19 of a norm.
const POINTS_PER_DOUBLING: u32 = 4;

/// The grid's range, 2^−64 to 2^64: rows of any scale a user's features have, from the
/// value type's reach alone (no range of the data is needed).
const GRID_EXPONENT: i32 = 64;

/// How a fit's ε is shared between the norm bound and the fit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormSplit {
    /// The norm bound's ε.
    pub norm_epsilon: f64,
    /// The fit's ε.
    pub fit_epsilon: f64,
}

impl NormSplit {
    /// [`PRIVATE_NORM_SHARE`] of `epsilon` to the bound, the rest to the fit; the two add up
    /// to at most `epsilon` (the fit's share is rounded down).
    pub fn of(epsilon: f64) -> Self {
        let norm_epsilon = epsilon * PRIVATE_NORM_SHARE;
        let mut fit_epsilon = epsilon - norm_epsilon;
        while norm_epsilon + fit_epsilon > epsilon {
            fit_epsilon = fit_epsilon.next_down();
        }
        Self {
            norm_epsilon,
            fit_epsilon,
        }
    }
}

/// The grid the bound is chosen on (public: fixed here).
pub fn private_norm_grid() -> CandidateGrid {
    CandidateGrid::log_spaced(
        2f64.powi(-GRID_EXPONENT),
        2f64.powi(GRID_EXPONENT),
        POINTS_PER_DOUBLING,
    )
    .expect("a valid fixed grid")
}

/// Releases the [`PRIVATE_NORM_QUANTILE`] of the norms of `rows` at `epsilon`; see the
/// module's `# Privacy`.
pub fn release_row_norm<'a, R: ReleaseRng + ?Sized>(
    rows: impl IntoIterator<Item = &'a [f64]>,
    epsilon: f64,
    rng: &mut R,
) -> Result<Released<NormBound>, NoiseError> {
    RowNormBound::new(epsilon, PRIVATE_NORM_QUANTILE)?.release(rows, &private_norm_grid(), rng)
}

/// Counts on the grid for rows counted one at a time ([`GridCounts::add_row_norm`]), for
/// rows not held as slices; release with [`release_counted_row_norm`].
pub fn row_norm_counts() -> GridCounts {
    GridCounts::new(private_norm_grid())
}

/// [`release_row_norm`] from counts made by [`row_norm_counts`].
pub fn release_counted_row_norm<R: ReleaseRng + ?Sized>(
    counts: &GridCounts,
    epsilon: f64,
    rng: &mut R,
) -> Result<Released<NormBound>, NoiseError> {
    RowNormBound::new(epsilon, PRIVATE_NORM_QUANTILE)?.release_from_counts(counts, rng)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::InsecureSeededRng;

    #[test]
    fn the_split_spends_at_most_the_whole_epsilon() {
        for epsilon in [1e-3, 0.1, 0.3, 1.0, 7.0, 1000.0] {
            let split = NormSplit::of(epsilon);
            assert!(split.norm_epsilon + split.fit_epsilon <= epsilon);
            assert!((split.norm_epsilon - 0.1 * epsilon).abs() <= 1e-15 * epsilon);
            assert!(split.fit_epsilon >= 0.9 * epsilon * (1.0 - 1e-12));
        }
    }

    /// 10,000 rows whose norms are i/10,000 · 8: the 0.9-quantile is 7.2; at ε = 0.1 the
    /// released bound lies within two grid steps of it in 19 of 20 draws, and the
    /// release reports its mechanism and ε.
    #[test]
    fn the_bound_is_near_the_quantile_of_the_norms() {
        let rows: Vec<[f64; 2]> = (1..=10_000)
            .map(|i| {
                let norm = 8.0 * i as f64 / 10_000.0;
                [norm * 0.6, norm * 0.8]
            })
            .collect();
        let mut rng = InsecureSeededRng::new(3);
        let mut near = 0;
        for _ in 0..20 {
            let released = release_row_norm(rows.iter().map(|r| &r[..]), 0.1, &mut rng).unwrap();
            assert_eq!(released.epsilon(), 0.1);
            let bound = released.value().bound();
            if (bound / 7.2).log2().abs() <= 0.5 {
                near += 1;
            }
        }
        assert!(near >= 19, "{near} of 20 near the quantile");
    }
}
