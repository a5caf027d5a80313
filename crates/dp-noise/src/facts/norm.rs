//! A private bound on the rows' Euclidean norms, and the per-row clipping that enforces it.

use super::{CandidateGrid, FactMechanism, GridCounts, PrivateQuantile, Released};
use crate::{NoiseError, ReleaseRng};

/// `‖row‖₂`, computed without overflow or underflow (scaled by the largest magnitude),
/// a norm beyond `f64::MAX` reported as `f64::MAX`. NaN or infinite entries are refused,
/// naming the first.
pub fn row_norm(row: &[f64]) -> Result<f64, NoiseError> {
    if let Some(index) = row.iter().position(|v| !v.is_finite()) {
        return Err(NoiseError::NonFiniteValue {
            index,
            value: row[index],
        });
    }
    let largest = row.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if largest == 0.0 {
        return Ok(0.0);
    }
    let sum: f64 = row.iter().map(|v| (v / largest).powi(2)).sum();
    Ok((largest * sum.sqrt()).min(f64::MAX))
}

/// A released row-norm bound `C > 0`, with the clipping that enforces it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormBound {
    bound: f64,
}

impl NormBound {
    /// The bound C.
    pub fn bound(&self) -> f64 {
        self.bound
    }

    /// `x ← x · min(1, C/‖x‖)`, so that `‖x‖ ≤ C` as computed (the factor is nudged down
    /// if rounding left the norm an ulp above C). NaN or infinite entries are refused.
    ///
    /// Clipping acts on each row alone, so clipped neighbouring data sets still differ in
    /// one row: mechanisms run after it keep their guarantee.
    pub fn clip_row(&self, row: &mut [f64]) -> Result<(), NoiseError> {
        shrink_to(row, self.bound, self.bound)
    }

    /// `x ← x / max(C, ‖x‖)`: clip to C and rescale into the unit ball, so that
    /// `‖x‖ ≤ 1` as computed — the input contract of the workspace's ERM mechanisms.
    pub fn scale_row_to_unit_ball(&self, row: &mut [f64]) -> Result<(), NoiseError> {
        shrink_to(row, self.bound, 1.0)
    }
}

/// Sets `row ← row / max(bound, ‖row‖) · limit`, nudging the divisor up until the
/// computed norm is at most `limit` (each entry is divided first, so no factor overflows
/// for tiny bounds).
fn shrink_to(row: &mut [f64], bound: f64, limit: f64) -> Result<(), NoiseError> {
    let norm = row_norm(row)?;
    if norm <= bound && limit == bound {
        return Ok(());
    }
    let original = row.to_vec();
    let mut divisor = norm.max(bound);
    loop {
        for (x, &o) in row.iter_mut().zip(&original) {
            *x = o / divisor * limit;
        }
        if row_norm(row)? <= limit {
            return Ok(());
        }
        divisor = divisor.next_up();
    }
}

/// A private bound on the rows' Euclidean norms: the private p-quantile
/// ([`PrivateQuantile`]) of `‖x_i‖₂` over a public grid of positive candidates (powers of
/// two, [`CandidateGrid::powers_of_two`], or a fine log grid,
/// [`CandidateGrid::log_spaced`]). Clip the rows to it with [`NormBound::clip_row`].
///
/// # Privacy
/// **ε-DP** under replace-one with n public: replacing a row replaces one norm, so this
/// is the private quantile of the norms (sensitivity 1, see [`PrivateQuantile`]); the grid
/// must not depend on the data. Clipping afterwards is a per-row map and preserves the
/// neighbouring relation; a fit on the clipped rows composes with this release.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowNormBound {
    quantile: PrivateQuantile,
}

impl RowNormBound {
    /// An ε-DP p-quantile of the row norms (p in [0, 1]; 0.9–0.99 keeps most rows whole).
    pub fn new(epsilon: f64, p: f64) -> Result<Self, NoiseError> {
        Ok(Self {
            quantile: PrivateQuantile::new(epsilon, p)?,
        })
    }

    /// Releases a bound on the norms of `rows` (n ≥ 1) on a grid of positive candidates.
    pub fn release<'a, R: ReleaseRng + ?Sized>(
        &self,
        rows: impl IntoIterator<Item = &'a [f64]>,
        grid: &CandidateGrid,
        rng: &mut R,
    ) -> Result<Released<NormBound>, NoiseError> {
        check_positive(grid)?;
        let mut counts = GridCounts::new(grid.clone());
        for row in rows {
            counts.add_row_norm(row)?;
        }
        self.release_from_counts(&counts, rng)
    }

    /// Releases a bound from norms already counted with [`GridCounts::add_row_norm`].
    pub fn release_from_counts<R: ReleaseRng + ?Sized>(
        &self,
        counts: &GridCounts,
        rng: &mut R,
    ) -> Result<Released<NormBound>, NoiseError> {
        check_positive(counts.grid())?;
        let bound = self.quantile.release_from_counts(counts, rng)?.into_value();
        Ok(Released::new(
            NormBound { bound },
            FactMechanism::RowNormQuantile,
            self.quantile.epsilon(),
            0.0,
        ))
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.quantile.epsilon()
    }
}

fn check_positive(grid: &CandidateGrid) -> Result<(), NoiseError> {
    match grid.values().first() {
        Some(&value) if value <= 0.0 => Err(NoiseError::InvalidCandidate { position: 0, value }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InsecureSeededRng;

    #[test]
    fn norms_do_not_overflow_or_underflow() {
        assert_eq!(row_norm(&[3.0, 4.0]).unwrap(), 5.0);
        assert_eq!(row_norm(&[]).unwrap(), 0.0);
        let big = row_norm(&[1e300, 1e300]).unwrap();
        assert!((big / 1.414_213_562_373_095e300 - 1.0).abs() < 1e-15);
        assert_eq!(row_norm(&[f64::MAX, f64::MAX]).unwrap(), f64::MAX);
        let tiny = row_norm(&[3e-320, 4e-320]).unwrap();
        assert!((tiny / 5e-320 - 1.0).abs() < 1e-3);
        assert!(matches!(
            row_norm(&[1.0, f64::NAN]),
            Err(NoiseError::NonFiniteValue { index: 1, .. })
        ));
    }

    #[test]
    fn clipping_reaches_the_bound_and_keeps_short_rows() {
        let bound = NormBound { bound: 0.3 };
        let mut short = [0.1, -0.2];
        bound.clip_row(&mut short).unwrap();
        assert_eq!(short, [0.1, -0.2]);
        let mut rng = InsecureSeededRng::new(3);
        use rand::RngExt;
        for _ in 0..2000 {
            let d = rng.random_range(1..20);
            let mut row: Vec<f64> = (0..d).map(|_| rng.random_range(-5.0..5.0)).collect();
            let mut unit = row.clone();
            let before = row_norm(&row).unwrap();
            bound.clip_row(&mut row).unwrap();
            assert!(row_norm(&row).unwrap() <= 0.3);
            if before > 0.3 {
                assert!(row_norm(&row).unwrap() > 0.3 * (1.0 - 1e-12));
            }
            bound.scale_row_to_unit_ball(&mut unit).unwrap();
            assert!(row_norm(&unit).unwrap() <= 1.0);
        }
    }

    #[test]
    fn the_bound_lands_near_the_norm_quantile() {
        use rand::RngExt;
        let mut rng = InsecureSeededRng::new(4);
        // Norms spread over [0, 10]: the 0.9-quantile is near 9.
        let rows: Vec<Vec<f64>> = (0..10_000)
            .map(|_| {
                let r = rng.random_range(0.0..10.0);
                let angle: f64 = rng.random_range(0.0..std::f64::consts::TAU);
                vec![r * angle.cos(), r * angle.sin()]
            })
            .collect();
        let grid = CandidateGrid::log_spaced(2f64.powi(-10), 2f64.powi(20), 16).unwrap();
        let mechanism = RowNormBound::new(1.0, 0.9).unwrap();
        for _ in 0..10 {
            let released = mechanism
                .release(rows.iter().map(|r| r.as_slice()), &grid, &mut rng)
                .unwrap();
            assert_eq!(released.mechanism(), FactMechanism::RowNormQuantile);
            assert_eq!((released.epsilon(), released.delta()), (1.0, 0.0));
            let bound = released.value().bound();
            assert!((8.5..=9.5).contains(&bound), "{bound}");
        }
    }

    #[test]
    fn rejects_grids_with_non_positive_candidates_and_bad_rows() {
        let mut rng = InsecureSeededRng::new(5);
        let mechanism = RowNormBound::new(1.0, 0.9).unwrap();
        let rows = [vec![1.0, 2.0]];
        let signed = CandidateGrid::signed_powers_of_two(0, 3).unwrap();
        assert!(matches!(
            mechanism.release(rows.iter().map(|r| r.as_slice()), &signed, &mut rng),
            Err(NoiseError::InvalidCandidate { position: 0, .. })
        ));
        let grid = CandidateGrid::powers_of_two(-3, 3).unwrap();
        let bad = [vec![1.0, 2.0], vec![f64::INFINITY, 0.0]];
        assert!(matches!(
            mechanism.release(bad.iter().map(|r| r.as_slice()), &grid, &mut rng),
            Err(NoiseError::NonFiniteValue { index: 1, .. })
        ));
        let none: [Vec<f64>; 0] = [];
        assert_eq!(
            mechanism.release(none.iter().map(|r| r.as_slice()), &grid, &mut rng),
            Err(NoiseError::EmptyData)
        );
        assert!(matches!(
            RowNormBound::new(0.0, 0.9),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            RowNormBound::new(1.0, 1.5),
            Err(NoiseError::InvalidProbability { .. })
        ));
    }
}
