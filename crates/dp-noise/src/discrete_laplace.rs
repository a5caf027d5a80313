//! The discrete Laplace distribution on the integers, sampled exactly.

use crate::exact::{Ratio, bernoulli_exp_neg, bernoulli_ratio, uniform_below};
use crate::{NoiseError, ReleaseRng};

/// The discrete Laplace distribution on ℤ with scale `t > 0`:
/// `P(K = k) = (1 − e^{−1/t}) / (1 + e^{−1/t}) · e^{−|k|/t}`.
///
/// The scale is held as an exact ratio of integers and sampling uses only integer
/// arithmetic and unbiased uniform integers (Canonne, Kamath, Steinke 2020, Algorithm 2),
/// so the draws follow this distribution exactly — no floating-point rounding can make
/// some outputs impossible or distort the tails.
///
/// # Privacy
/// Adding `K` to an integer-valued query whose value moves by at most `S` between
/// neighbouring datasets is `(S / t)`-differentially private: the probability of any
/// output changes by at most a factor `e^{S/t}`. [`crate::Laplace`] applies this to
/// real-valued queries.
///
/// The guarantee covers the value drawn, not the time taken to draw it: the sampler's work
/// grows with `|K|` (the inner loop runs about `|K|·s/t` times), so the running time
/// narrows down the noise, and together with the released `f(D) + K`, the value `f(D)`.
/// Never let the time of a draw be observed. A service that answers over a network should
/// draw noise off the request path — the noise does not depend on the data, so it can be
/// drawn ahead of time into a pool — or answer at fixed time slots that every draw fits in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DiscreteLaplace {
    scale: Ratio,
}

impl DiscreteLaplace {
    /// Scale exactly `numerator / denominator`.
    pub fn from_ratio(numerator: u64, denominator: u64) -> Result<Self, NoiseError> {
        if numerator == 0 || denominator == 0 {
            return Err(NoiseError::InvalidRatio {
                numerator,
                denominator,
            });
        }
        Ok(Self {
            scale: Ratio::new(u128::from(numerator), u128::from(denominator)),
        })
    }

    /// The smallest scale of the form `m / 2^p` (with `m < 2^64`, `p ≤ 63`) that is at least
    /// `scale`: rounding up means never less noise than asked for.
    ///
    /// Scales up to 2^63 are supported.
    pub fn with_scale_at_least(scale: f64) -> Result<Self, NoiseError> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(NoiseError::InvalidScale(scale));
        }
        if scale >= 2f64.powi(63) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "discrete Laplace scale {scale:?} exceeds 2^63"
            )));
        }
        // Keep about 52 significant bits in the numerator: p = 52 − ⌊log2 scale⌋, within 0..=63.
        let exponent = scale.log2().floor() as i32;
        let shift = (52 - exponent).clamp(0, 63);
        // scale · 2^shift is exact (a power-of-two scaling) and below 2^64, so ceil is exact.
        let numerator = (scale * 2f64.powi(shift)).ceil() as u64;
        Self::from_ratio(numerator.max(1), 1u64 << shift)
    }

    /// The scale `t` (rounded to the nearest f64 for display and analysis).
    pub fn scale(&self) -> f64 {
        self.scale.to_f64()
    }

    /// The scale as the exact ratio `(numerator, denominator)` the sampler uses.
    pub fn scale_ratio(&self) -> (u64, u64) {
        // Both parts were built from u64 values.
        (self.scale.numerator as u64, self.scale.denominator as u64)
    }

    /// `P(K ≤ k)`, for testing and analysis (floating point).
    pub fn cdf(&self, k: i64) -> f64 {
        let t = self.scale();
        let q = (-1.0 / t).exp();
        if k < 0 {
            (k as f64 / t).exp() / (1.0 + q)
        } else {
            1.0 - (-(k as f64 + 1.0) / t).exp() / (1.0 + q)
        }
    }

    /// `P(K = k)`, for testing and analysis (floating point).
    pub fn pmf(&self, k: i64) -> f64 {
        let t = self.scale();
        let q = (-1.0 / t).exp();
        (1.0 - q) / (1.0 + q) * (-(k.unsigned_abs() as f64) / t).exp()
    }

    /// One draw. The value is an `i128` so that no draw, however improbable, is clipped.
    pub fn sample<R: ReleaseRng + ?Sized>(&self, rng: &mut R) -> i128 {
        // CKS20 Algorithm 2 with scale t/s: X = U + t·V is geometric-like on ℕ with ratio
        // e^{−1/t}; ⌊X/s⌋ is geometric with ratio e^{−s/t}; a fair sign, rejecting "−0".
        let (t, s) = (self.scale.numerator, self.scale.denominator);
        let one = Ratio::new(1, 1);
        loop {
            let u = uniform_below(t, rng);
            if !bernoulli_exp_neg(Ratio::new(u, t), rng) {
                continue;
            }
            let mut v: u128 = 0;
            while bernoulli_exp_neg(one, rng) {
                v += 1;
            }
            let magnitude = ((u + t * v) / s) as i128;
            let negative = bernoulli_ratio(1, 2, rng);
            if negative && magnitude == 0 {
                continue;
            }
            return if negative { -magnitude } else { magnitude };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InsecureSeededRng;
    use crate::stats::{self, FALSE_ALARM_RATE};
    use rand::Rng;

    fn draws(dist: &DiscreteLaplace, n: usize, seed: u64) -> Vec<i64> {
        let mut rng = InsecureSeededRng::new(seed);
        (0..n).map(|_| dist.sample(&mut rng) as i64).collect()
    }

    /// KS of the draws of `sampler` against the exact CDF of `claimed`.
    fn ks(sampler: &DiscreteLaplace, claimed: &DiscreteLaplace, seed: u64) -> stats::KsTest {
        stats::ks_test_integer(
            &draws(sampler, 20_000, seed),
            |k| claimed.cdf(k),
            FALSE_ALARM_RATE,
        )
    }

    #[test]
    fn matches_cdf_across_scales() {
        for (i, dist) in [
            DiscreteLaplace::from_ratio(1, 2).unwrap(),
            DiscreteLaplace::from_ratio(7, 3).unwrap(),
            DiscreteLaplace::with_scale_at_least(10.0).unwrap(),
            DiscreteLaplace::with_scale_at_least(1234.5).unwrap(),
        ]
        .iter()
        .enumerate()
        {
            let test = ks(dist, dist, 40 + i as u64);
            assert!(test.passes(), "scale {}: {test:?}", dist.scale());
        }
    }

    /// Chi-square of draws against the exact pmf of `claimed` on −12..=12 plus a tail cell.
    fn pmf_chi_square(draws_seen: &[i64], claimed: &DiscreteLaplace) -> stats::ChiSquareTest {
        let n = draws_seen.len() as f64;
        let support: Vec<i64> = (-12..=12).collect();
        let mut observed = vec![0u64; support.len() + 1];
        for &k in draws_seen {
            match support.iter().position(|&s| s == k) {
                Some(i) => observed[i] += 1,
                None => observed[support.len()] += 1,
            }
        }
        let mut expected: Vec<f64> = support.iter().map(|&k| n * claimed.pmf(k)).collect();
        expected.push(n - expected.iter().sum::<f64>());
        stats::chi_square_test(&observed, &expected, FALSE_ALARM_RATE)
    }

    #[test]
    fn matches_pmf_at_small_scale_chi_square() {
        let dist = DiscreteLaplace::from_ratio(3, 4).unwrap();
        let test = pmf_chi_square(&draws(&dist, 100_000, 9), &dist);
        assert!(test.passes(), "{test:?}");
    }

    /// Mutation check: draws at half the scale fail the chi-square against the claimed pmf.
    #[test]
    fn pmf_chi_square_catches_halved_scale() {
        let claimed = DiscreteLaplace::from_ratio(3, 4).unwrap();
        let broken = DiscreteLaplace::from_ratio(3, 8).unwrap();
        assert!(!pmf_chi_square(&draws(&broken, 100_000, 9), &claimed).passes());
    }

    /// Among non-zero draws, positive ones should be half.
    fn sign_balance(xs: &[i64]) -> stats::BinomialCheck {
        let positive = xs.iter().filter(|&&k| k > 0).count() as u64;
        let nonzero = xs.iter().filter(|&&k| k != 0).count() as u64;
        stats::binomial_check(positive, nonzero, 0.5, FALSE_ALARM_RATE)
    }

    #[test]
    fn symmetric_around_zero() {
        let dist = DiscreteLaplace::from_ratio(5, 1).unwrap();
        assert!(sign_balance(&draws(&dist, 100_000, 12)).passes());
    }

    /// Mutation check: a sampler whose sign coin lands on "+" 52% of the time is caught.
    #[test]
    fn sign_balance_catches_a_biased_sign() {
        let dist = DiscreteLaplace::from_ratio(5, 1).unwrap();
        let mut rng = InsecureSeededRng::new(12);
        let skewed: Vec<i64> = (0..100_000)
            .map(|_| {
                let k = dist.sample(&mut rng).abs() as i64;
                if rng.next_u32() % 100 < 52 { k } else { -k }
            })
            .collect();
        assert!(!sign_balance(&skewed).passes());
    }

    #[test]
    fn scale_is_rounded_up_never_down() {
        for scale in [0.1, 1.0 / 3.0, 2.5, 1e6 / 7.0, 3e15] {
            let dist = DiscreteLaplace::with_scale_at_least(scale).unwrap();
            let (num, den) = dist.scale_ratio();
            // num/den ≥ scale, checked in exact integer arithmetic on scale's dyadic form.
            assert!(num as f64 >= scale * den as f64, "{scale}: {num}/{den}");
            assert!(dist.scale() <= scale * (1.0 + 1e-12));
        }
    }

    #[test]
    fn rejects_zero_ratio_parts() {
        assert!(matches!(
            DiscreteLaplace::from_ratio(0, 1),
            Err(NoiseError::InvalidRatio { .. })
        ));
        assert!(matches!(
            DiscreteLaplace::from_ratio(1, 0),
            Err(NoiseError::InvalidRatio { .. })
        ));
    }

    #[test]
    fn rejects_invalid_scale() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                DiscreteLaplace::with_scale_at_least(bad),
                Err(NoiseError::InvalidScale(_))
            ));
        }
        assert!(matches!(
            DiscreteLaplace::with_scale_at_least(1e20),
            Err(NoiseError::UnsupportedParameters(_))
        ));
    }
}
