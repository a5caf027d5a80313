//! Snapping real values to a power-of-two grid, exactly, with the rounding accounted for in
//! the sensitivity. Shared by the mechanisms that turn real inputs into integers so that
//! they can be randomized with exact integer arithmetic ([`crate::Laplace`] and
//! [`crate::ExponentialMechanism`]).

use crate::NoiseError;

/// By default the grid is the largest power of two `≤ Δ · 2^−20`.
const DEFAULT_BITS_BELOW_SENSITIVITY: i32 = 20;

/// Grid indices are clamped to `±2^62` so that they (and differences and noise added to
/// them) fit comfortably in integers.
const MAX_INDEX: f64 = 4_611_686_018_427_387_904.0; // 2^62

/// Grid exponents allowed: the grid stays a normal float and every output stays finite.
const EXPONENT_RANGE: std::ops::RangeInclusive<i32> = -1000..=880;

/// The grid `g = 2^exponent` and the sensitivity of grid indices it implies.
///
/// If a real value moves by at most `Δ` between neighbouring datasets, its grid index
/// `round(value / g)` moves by at most `S = ⌊Δ/g⌋ + 1` (each value is within `g/2` of its
/// grid point), i.e. the rounding adds at most `g` to the sensitivity: `S·g ≤ Δ + g`.
/// Indices beyond `±2^62` are clamped there; clamping never moves two indices further
/// apart, so the bound `S` still holds and no value is refused for being large (a refusal
/// at the boundary would itself reveal which side of it the data fell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grid {
    exponent: i32,
    index_sensitivity: u64,
}

impl Grid {
    /// The default grid for a declared sensitivity (already validated as finite and > 0).
    pub fn for_sensitivity(sensitivity: f64) -> Result<Self, NoiseError> {
        let mut exponent = sensitivity.log2().floor() as i32;
        // log2 may round across a power of two: settle on Δ's binary exponent exactly.
        while 2f64.powi(exponent) > sensitivity {
            exponent -= 1;
        }
        while 2f64.powi(exponent + 1) <= sensitivity {
            exponent += 1;
        }
        let grid_exponent = exponent - DEFAULT_BITS_BELOW_SENSITIVITY;
        if !EXPONENT_RANGE.contains(&grid_exponent) {
            // Named by the value the caller gave, not by the grid it implies.
            return Err(NoiseError::UnsupportedParameters(format!(
                "sensitivity {sensitivity:?} is outside the supported range 2^{} to 2^{} \
                 (about {:.1e} to {:.1e}): its snapping grid, 2^-{DEFAULT_BITS_BELOW_SENSITIVITY} \
                 of it, must stay a normal float",
                EXPONENT_RANGE.start() + DEFAULT_BITS_BELOW_SENSITIVITY,
                EXPONENT_RANGE.end() + DEFAULT_BITS_BELOW_SENSITIVITY + 1,
                2f64.powi(EXPONENT_RANGE.start() + DEFAULT_BITS_BELOW_SENSITIVITY),
                2f64.powi(EXPONENT_RANGE.end() + DEFAULT_BITS_BELOW_SENSITIVITY + 1),
            )));
        }
        Self::with_exponent(sensitivity, grid_exponent)
    }

    /// The grid `2^exponent` (chosen without looking at the data) for a declared sensitivity.
    pub fn with_exponent(sensitivity: f64, exponent: i32) -> Result<Self, NoiseError> {
        if !EXPONENT_RANGE.contains(&exponent) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "grid exponent {exponent} outside {EXPONENT_RANGE:?} (sensitivity \
                 {sensitivity:?})"
            )));
        }
        // Δ/g is exact (a power-of-two scaling of a normal float), and so is its floor.
        let steps = (sensitivity / 2f64.powi(exponent)).floor();
        if steps >= 2f64.powi(53) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "grid 2^{exponent} is too fine for sensitivity {sensitivity:?}"
            )));
        }
        Ok(Self {
            exponent,
            index_sensitivity: steps as u64 + 1,
        })
    }

    /// The grid spacing `g`.
    pub fn spacing(&self) -> f64 {
        2f64.powi(self.exponent)
    }

    /// `S`: how far the grid index of a value of sensitivity Δ can move.
    pub fn index_sensitivity(&self) -> u64 {
        self.index_sensitivity
    }

    /// `round(value / g)`, exactly, clamped to `±2^62`; `position` names the value in errors.
    ///
    /// A NaN or infinite value is refused: no query with a finite sensitivity produces one,
    /// so it means the caller's sensitivity claim does not hold.
    pub fn index(&self, value: f64, position: usize) -> Result<i128, NoiseError> {
        if !value.is_finite() {
            return Err(NoiseError::NonFiniteValue {
                index: position,
                value,
            });
        }
        let scaled = (value / self.spacing()).clamp(-MAX_INDEX, MAX_INDEX);
        Ok(scaled.round() as i128)
    }

    /// The value of grid index `index`: `index · g` (exact below 2^53 grid steps, else the
    /// nearest float — a data-independent post-processing either way).
    pub fn value(&self, index: i128) -> f64 {
        index as f64 * self.spacing()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grid_is_just_below_sensitivity_over_2_pow_20() {
        for sensitivity in [1.0, 0.7, 3.0, 1e-3, 12345.678, 2f64.powi(-30)] {
            let grid = Grid::for_sensitivity(sensitivity).unwrap();
            let g = grid.spacing();
            let target = sensitivity * 2f64.powi(-20);
            assert!(g <= target && 2.0 * g > target, "Δ = {sensitivity}");
            let effective = grid.index_sensitivity() as f64 * g;
            assert!(effective > sensitivity && effective <= sensitivity + g);
        }
    }

    #[test]
    fn index_rounding_moves_at_most_s_steps() {
        // Values exactly Δ apart, both on rounding ties: the bound S is attained.
        let grid = Grid::with_exponent(1.0, -3).unwrap();
        assert_eq!(grid.index_sensitivity(), 9);
        let (a, b) = (
            grid.index(0.0625, 0).unwrap(),
            grid.index(-0.9375, 1).unwrap(),
        );
        assert_eq!((a - b).unsigned_abs(), 9);
    }

    #[test]
    fn rejects_non_finite_values_naming_their_position() {
        let grid = Grid::for_sensitivity(1.0).unwrap();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                grid.index(bad, 4),
                Err(NoiseError::NonFiniteValue { index: 4, .. })
            ));
        }
    }

    /// Huge values are clamped, not refused, and clamping keeps neighbours within S.
    #[test]
    fn huge_values_are_clamped_within_the_sensitivity() {
        let grid = Grid::for_sensitivity(1.0).unwrap();
        let limit = 2f64.powi(62) as i128;
        assert_eq!(grid.index(1e30, 0).unwrap(), limit);
        assert_eq!(grid.index(-f64::MAX, 0).unwrap(), -limit);
        // Neighbours straddling the clamp boundary: indices differ by at most S.
        let boundary = 2f64.powi(62) * grid.spacing();
        for (a, b) in [
            (boundary - 0.5, boundary + 0.5),
            (boundary + 0.25, boundary + 1.0),
        ] {
            let (ia, ib) = (grid.index(a, 0).unwrap(), grid.index(b, 0).unwrap());
            assert!((ia - ib).unsigned_abs() <= u128::from(grid.index_sensitivity()));
        }
    }

    #[test]
    fn rejects_unsupported_exponents() {
        assert!(Grid::with_exponent(1.0, 2000).is_err());
        assert!(Grid::with_exponent(1.0, -60).is_err());
    }
}
