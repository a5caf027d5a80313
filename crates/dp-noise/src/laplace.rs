//! The Laplace mechanism for released real numbers, in the snapping form that floating
//! point cannot break.

use crate::discrete_laplace::DiscreteLaplace;
use crate::error::{check_epsilon, check_sensitivity};
use crate::grid::Grid;
use crate::{NoiseError, ReleaseRng};

/// The Laplace mechanism for a real-valued query, made safe for floating point.
///
/// A naive `value + Laplace(Δ/ε)` in floating point leaks (Mironov 2012: which doubles can
/// come out depends on the input). This mechanism instead
/// 1. rounds the value to the grid `g = 2^k`: `m = round(value / g)`, exactly;
/// 2. adds exact discrete Laplace noise `K` (integer arithmetic, [`DiscreteLaplace`]);
/// 3. releases `g · (m + K)`.
///
/// By default `g` is the largest power of two `≤ Δ · 2^−20`; it depends only on the public
/// sensitivity, never on the data.
///
/// # Privacy
/// Let the query `f` satisfy `|f(D) − f(D')| ≤ Δ` (as computed, in floating point) for
/// neighbouring datasets. Then the grid indices satisfy `|m − m'| ≤ S = ⌊Δ/g⌋ + 1`: the
/// rounding is added to the sensitivity (`S·g ≤ Δ + g`). The noise has scale
/// `t ≥ S/ε` in grid units (rounded up to an exact ratio), so every output's probability
/// changes by at most `e^{S/t} ≤ e^ε` between neighbours: the release is **ε-DP** for the
/// ε passed in, which is what [`Laplace::epsilon`] reports. Steps 1 and 2 are exact; the
/// conversion of `m + K` back to a float is data-independent post-processing. Every output
/// is an exact multiple of `g`, and the set of possible outputs (all multiples of `g`)
/// does not depend on the input.
///
/// The guarantee covers the output, not the running time: drawing the discrete Laplace
/// noise takes longer the larger `|K|` is ([`crate::DiscreteLaplace`]), so the time of a
/// release narrows down the noise and with it the value. Do not expose it: a service
/// answering over a network should respond at fixed time slots that every draw fits in,
/// rather than as soon as the release returns.
///
/// # Numerics
/// Values with `|value| > 2^62 · g` (about `4.4·10^12 · Δ`) are clamped to that bound
/// before noise, which keeps the guarantee (clamping moves no two values further apart);
/// NaN and infinities are refused with an error. The effective noise
/// scale is [`Laplace::scale`] `= t·g ≈ (Δ + g)/ε`, a relative increase of at most about
/// `2^−20` over the textbook `Δ/ε` with the default grid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Laplace {
    epsilon: f64,
    sensitivity: f64,
    grid: Grid,
    noise: DiscreteLaplace,
}

impl Laplace {
    /// ε-DP Laplace mechanism for a query of sensitivity `sensitivity`, default grid.
    pub fn new(epsilon: f64, sensitivity: f64) -> Result<Self, NoiseError> {
        let grid = Grid::for_sensitivity(check_sensitivity(sensitivity)?)?;
        Self::on_grid(epsilon, sensitivity, grid)
    }

    /// As [`Laplace::new`] with the output grid `2^grid_exponent` chosen by the caller (it
    /// must not depend on the data). Coarser grids add more rounding to the sensitivity.
    pub fn with_grid_exponent(
        epsilon: f64,
        sensitivity: f64,
        grid_exponent: i32,
    ) -> Result<Self, NoiseError> {
        let grid = Grid::with_exponent(check_sensitivity(sensitivity)?, grid_exponent)?;
        Self::on_grid(epsilon, sensitivity, grid)
    }

    fn on_grid(epsilon: f64, sensitivity: f64, grid: Grid) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let scale = noise_scale_in_grid_units(grid.index_sensitivity(), epsilon);
        let noise = DiscreteLaplace::with_scale_at_least(scale).map_err(|_| {
            NoiseError::UnsupportedParameters(format!(
                "epsilon {epsilon:?} needs a noise scale beyond the exact sampler's range"
            ))
        })?;
        Ok(Self {
            epsilon,
            sensitivity,
            grid,
            noise,
        })
    }

    /// Releases `value` with ε-DP noise; the result is a multiple of [`Laplace::grid`].
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        value: f64,
        rng: &mut R,
    ) -> Result<f64, NoiseError> {
        let index = self.grid.index(value, 0)?;
        Ok(self.grid.value(index + self.noise.sample(rng)))
    }

    /// The privacy guarantee: ε of the ε-DP release.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The declared sensitivity Δ of the query.
    pub fn sensitivity(&self) -> f64 {
        self.sensitivity
    }

    /// The sensitivity the noise is calibrated to, rounding included: `S·g ≤ Δ + g`.
    pub fn effective_sensitivity(&self) -> f64 {
        self.grid.index_sensitivity() as f64 * self.grid()
    }

    /// The output grid `g`: every release is an exact multiple of it.
    pub fn grid(&self) -> f64 {
        self.grid.spacing()
    }

    /// The noise scale in value units, `t·g ≥ effective_sensitivity / ε`.
    pub fn scale(&self) -> f64 {
        self.noise.scale() * self.grid()
    }

    /// The discrete Laplace noise in grid units.
    pub fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// `round(value / g)`, exactly: the grid index a value is snapped to before noise.
    pub fn grid_index(&self, value: f64) -> Result<i128, NoiseError> {
        self.grid.index(value, 0)
    }
}

/// The discrete Laplace scale `S/ε` in grid units, rounded up: `fl(S/ε)` may lie half an
/// ulp below the exact quotient; two ulps up lies above it (and `with_scale_at_least`
/// rounds up once more).
fn noise_scale_in_grid_units(index_sensitivity: u64, epsilon: f64) -> f64 {
    (index_sensitivity as f64 / epsilon).next_up().next_up()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InsecureSeededRng;
    use crate::exact::exact_comparison;
    use crate::stats::{self, FALSE_ALARM_RATE};

    fn continuous_laplace_cdf(x: f64, scale: f64) -> f64 {
        if x < 0.0 {
            0.5 * (x / scale).exp()
        } else {
            1.0 - 0.5 * (-x / scale).exp()
        }
    }

    fn releases(mechanism: &Laplace, value: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = InsecureSeededRng::new(seed);
        (0..n)
            .map(|_| mechanism.release(value, &mut rng).unwrap())
            .collect()
    }

    /// KS of the releases of `sampler` against the Laplace CDF with the scale `claimed`
    /// promises: Δ_eff/ε around the value.
    fn ks_against_claim(sampler: &Laplace, claimed: &Laplace, value: f64) -> stats::KsTest {
        let out = releases(sampler, value, 20_000, 21);
        let scale = claimed.effective_sensitivity() / claimed.epsilon();
        stats::ks_test(
            &out,
            |x| continuous_laplace_cdf(x - value, scale),
            FALSE_ALARM_RATE,
        )
    }

    #[test]
    fn releases_follow_laplace_around_the_value() {
        for (epsilon, sensitivity, value) in [(1.0, 1.0, 0.0), (0.1, 2.0, 3.7), (5.0, 0.01, -1e3)] {
            let m = Laplace::new(epsilon, sensitivity).unwrap();
            let test = ks_against_claim(&m, &m, value);
            assert!(test.passes(), "ε={epsilon} Δ={sensitivity}: {test:?}");
        }
    }

    /// KS of releases of `sampler` (in grid units) against `m + DLap(t)` for `claimed`.
    fn exact_law_test(sampler: &Laplace, claimed: &Laplace, value: f64) -> stats::KsTest {
        let centre = claimed.grid_index(value).unwrap() as i64;
        let units: Vec<i64> = releases(sampler, value, 20_000, 5)
            .iter()
            .map(|x| (x / claimed.grid()) as i64)
            .collect();
        stats::ks_test_integer(
            &units,
            |k| claimed.noise().cdf(k - centre),
            FALSE_ALARM_RATE,
        )
    }

    /// The exact law: releases in grid units are m + DLap(t), tested on the integer lattice.
    #[test]
    fn releases_match_the_exact_discrete_law() {
        let m = Laplace::with_grid_exponent(0.5, 1.0, -2).unwrap();
        assert_eq!(m.grid_index(0.3).unwrap(), 1); // round(1.2)
        let test = exact_law_test(&m, &m, 0.3);
        assert!(test.passes(), "{test:?}");
    }

    /// Mutation check: the exact-law test rejects a mechanism run at 2ε on the same grid.
    #[test]
    fn exact_law_test_catches_doubled_epsilon() {
        let claimed = Laplace::with_grid_exponent(0.5, 1.0, -2).unwrap();
        let broken = Laplace::with_grid_exponent(1.0, 1.0, -2).unwrap();
        assert!(!exact_law_test(&broken, &claimed, 0.3).passes());
    }

    /// Mutation check: a mechanism built with 2ε (half the noise) fails against the claim for ε.
    #[test]
    fn ks_catches_halved_noise() {
        let claimed = Laplace::new(0.5, 1.0).unwrap();
        let broken = Laplace::new(1.0, 1.0).unwrap();
        assert!(!ks_against_claim(&broken, &claimed, 0.0).passes());
    }

    fn all_on_grid(outputs: &[f64], grid: f64) -> bool {
        outputs.iter().all(|x| (x / grid).fract() == 0.0)
    }

    #[test]
    fn outputs_are_multiples_of_a_grid_that_ignores_the_input() {
        let m = Laplace::new(1.0, 1.0).unwrap();
        assert_eq!(m.grid(), 2f64.powi(-20)); // fixed by Δ alone
        for value in [0.3, 0.3 + 1e-12, 1e5, -7.25] {
            assert!(
                all_on_grid(&releases(&m, value, 1000, 8), m.grid()),
                "value {value}"
            );
        }
    }

    /// Mutation check: textbook floating-point Laplace (value + inverse-CDF noise), whose
    /// possible outputs depend on the value, does not stay on the grid.
    #[test]
    fn grid_check_catches_naive_float_laplace() {
        use rand::RngExt;
        let m = Laplace::new(1.0, 1.0).unwrap();
        let mut rng = InsecureSeededRng::new(8);
        let naive: Vec<f64> = (0..1000)
            .map(|_| {
                let u: f64 = rng.random_range(-0.5..0.5);
                0.3 - u.signum() * (1.0 - 2.0 * u.abs()).ln()
            })
            .collect();
        assert!(!all_on_grid(&naive, m.grid()));
    }

    /// Random (ε, Δ): the scale ratio t = num/den satisfies t·ε ≥ S exactly.
    fn calibration_cases() -> Vec<(f64, f64)> {
        use rand::RngExt;
        let mut rng = InsecureSeededRng::new(31);
        (0..5000)
            .map(|_| {
                (
                    10f64.powf(rng.random_range(-3.0..1.0)),
                    10f64.powf(rng.random_range(-4.0..3.0)),
                )
            })
            .collect()
    }

    /// Whether a discrete Laplace with ratio scale covers `S` at `ε`: num·ε ≥ S·den exactly.
    fn covers(noise: &DiscreteLaplace, index_sensitivity: u64, epsilon: f64) -> bool {
        let (num, den) = noise.scale_ratio();
        exact_comparison::product_le(
            u128::from(index_sensitivity) * u128::from(den),
            &[],
            u128::from(num),
            &[epsilon],
        )
    }

    #[test]
    fn noise_scale_covers_the_grid_sensitivity_exactly() {
        for (epsilon, sensitivity) in calibration_cases() {
            let m = Laplace::new(epsilon, sensitivity).unwrap();
            let s = m.grid.index_sensitivity();
            assert!(
                covers(m.noise(), s, epsilon),
                "ε = {epsilon}, Δ = {sensitivity}"
            );
            assert!(m.scale() <= m.effective_sensitivity() / epsilon * (1.0 + 1e-12));
        }
    }

    /// Mutation check: without the upward rounding (plain fl(S/ε)) the exact check fails.
    #[test]
    fn exact_scale_check_catches_round_to_nearest() {
        let violations = calibration_cases()
            .into_iter()
            .filter(|&(epsilon, sensitivity)| {
                let s = Grid::for_sensitivity(sensitivity)
                    .unwrap()
                    .index_sensitivity();
                let naive = DiscreteLaplace::with_scale_at_least(s as f64 / epsilon).unwrap();
                !covers(&naive, s, epsilon)
            })
            .count();
        assert!(violations > 100, "{violations}");
    }

    /// Neighbouring values whose grid indices differ by the most allowed: the exact output
    /// probabilities differ by at most e^ε everywhere (computed from the discrete law).
    #[test]
    fn exact_output_ratio_is_bounded_by_epsilon() {
        let epsilon = 0.7;
        let m = Laplace::with_grid_exponent(epsilon, 1.0, -3).unwrap();
        // |a − b| = Δ and both sit on rounding ties: indices 1 and −8 differ by S = 9.
        let (a, b) = (0.0625, -0.9375);
        let (ma, mb) = (
            m.grid_index(a).unwrap() as i64,
            m.grid_index(b).unwrap() as i64,
        );
        assert_eq!((ma - mb).unsigned_abs(), m.grid.index_sensitivity());
        let worst = (-200..200)
            .map(|j| (m.noise().pmf(j - ma).ln() - m.noise().pmf(j - mb).ln()).abs())
            .fold(0.0, f64::max);
        assert!(worst <= epsilon + 1e-12, "{worst}");
    }

    #[test]
    fn rejects_invalid_epsilon() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Laplace::new(bad, 1.0),
                Err(NoiseError::InvalidEpsilon(_))
            ));
        }
    }

    #[test]
    fn rejects_invalid_sensitivity() {
        for bad in [0.0, -2.0, f64::NAN, f64::NEG_INFINITY] {
            assert!(matches!(
                Laplace::new(1.0, bad),
                Err(NoiseError::InvalidSensitivity(_))
            ));
        }
    }

    #[test]
    fn rejects_non_finite_values() {
        let m = Laplace::new(1.0, 1.0).unwrap();
        let mut rng = InsecureSeededRng::new(1);
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(matches!(
                m.release(bad, &mut rng),
                Err(NoiseError::NonFiniteValue { .. })
            ));
        }
    }

    #[test]
    fn huge_values_are_released_clamped_not_refused() {
        let m = Laplace::new(1.0, 1.0).unwrap();
        let mut rng = InsecureSeededRng::new(1);
        let out = m.release(1e30, &mut rng).unwrap();
        assert!((out - 2f64.powi(62) * m.grid()).abs() < 1e3, "{out}");
    }

    #[test]
    fn rejects_epsilon_too_small_for_the_exact_sampler() {
        for tiny in [1e-310, 1e-30] {
            assert!(matches!(
                Laplace::new(tiny, 1.0),
                Err(NoiseError::UnsupportedParameters(message)) if message.contains("epsilon")
            ));
        }
    }

    #[test]
    fn rejects_unsupported_grids() {
        assert!(matches!(
            Laplace::with_grid_exponent(1.0, 1.0, 2000),
            Err(NoiseError::UnsupportedParameters(_))
        ));
        assert!(matches!(
            Laplace::with_grid_exponent(1.0, 1.0, -60),
            Err(NoiseError::UnsupportedParameters(_))
        ));
    }

    /// A sensitivity whose default grid would leave the normal floats is refused naming
    /// the sensitivity and the supported range, not the internal grid; the range's ends
    /// are accepted.
    #[test]
    fn extreme_sensitivities_are_refused_naming_them() {
        for (sensitivity, shown) in [(1e-300, "1e-300"), (1e300, "1e300")] {
            match Laplace::new(1.0, sensitivity) {
                Err(NoiseError::UnsupportedParameters(message)) => assert!(
                    message.contains(&format!("sensitivity {shown}"))
                        && message.contains("supported range 2^-980 to 2^901"),
                    "{message}"
                ),
                other => panic!("{other:?}"),
            }
        }
        assert!(Laplace::new(1.0, 2f64.powi(-980)).is_ok());
        assert!(Laplace::new(1.0, 2f64.powi(901).next_down()).is_ok());
        assert!(Laplace::new(1.0, 2f64.powi(-980).next_down()).is_err());
        assert!(Laplace::new(1.0, 2f64.powi(901)).is_err());
    }
}
