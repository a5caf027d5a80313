//! Exact sampling with integer arithmetic: the building blocks of the discrete Laplace and
//! the exponential mechanism (Canonne, Kamath, Steinke 2020, "The Discrete Gaussian for
//! Differential Privacy", Algorithms 1 and 2).
//!
//! No floating-point number is involved here: every probability is a ratio of integers and
//! every draw is an unbiased uniform integer obtained by rejection, so the output
//! distributions are exactly the stated ones (given ideal random bits).

use rand::Rng;

/// A non-negative rational `numerator / denominator` with `denominator ≥ 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ratio {
    pub numerator: u128,
    pub denominator: u128,
}

impl Ratio {
    pub fn new(numerator: u128, denominator: u128) -> Self {
        debug_assert!(denominator >= 1, "a ratio needs a positive denominator");
        Self {
            numerator,
            denominator,
        }
    }

    pub fn to_f64(self) -> f64 {
        self.numerator as f64 / self.denominator as f64
    }
}

/// A uniform integer in `0..bound` (`bound ≥ 1`), unbiased: draw just enough random bits to
/// cover `bound − 1` and reject draws that land outside. Each try succeeds with
/// probability > ½.
pub(crate) fn uniform_below<R: Rng + ?Sized>(bound: u128, rng: &mut R) -> u128 {
    debug_assert!(bound >= 1);
    if bound == 1 {
        return 0;
    }
    let bits = 128 - (bound - 1).leading_zeros();
    loop {
        let draw = if bits <= 64 {
            u128::from(rng.next_u64() >> (64 - bits))
        } else {
            let high = u128::from(rng.next_u64() >> (128 - bits));
            (high << 64) | u128::from(rng.next_u64())
        };
        if draw < bound {
            return draw;
        }
    }
}

/// Bernoulli(numerator / denominator), exactly; requires `numerator ≤ denominator`.
pub(crate) fn bernoulli_ratio<R: Rng + ?Sized>(
    numerator: u128,
    denominator: u128,
    rng: &mut R,
) -> bool {
    debug_assert!(numerator <= denominator && denominator >= 1);
    uniform_below(denominator, rng) < numerator
}

/// Bernoulli(exp(−γ)) for γ = `x` ∈ [0, 1] (CKS20 Algorithm 1, first case): draw
/// A_k ~ Bernoulli(γ/k) for k = 1, 2, … until the first failure at step K; then
/// P(K odd) = Σ_k (−γ)^k / k! = exp(−γ).
fn bernoulli_exp_neg_at_most_one<R: Rng + ?Sized>(x: Ratio, rng: &mut R) -> bool {
    debug_assert!(x.numerator <= x.denominator);
    let mut k: u128 = 1;
    loop {
        // γ/k as one ratio while it fits; otherwise Bernoulli(γ)·Bernoulli(1/k), the same
        // probability from two independent draws. (Reaching such k has probability ~1/k!.)
        let success = match x.denominator.checked_mul(k) {
            Some(denominator) => bernoulli_ratio(x.numerator, denominator, rng),
            None => bernoulli_ratio(x.numerator, x.denominator, rng) && bernoulli_ratio(1, k, rng),
        };
        if !success {
            return k % 2 == 1;
        }
        k += 1;
    }
}

/// Bernoulli(exp(−x)) for any rational x ≥ 0, exactly (CKS20 Algorithm 1).
///
/// For x > 1 it needs ⌊x⌋ successes of Bernoulli(e^{−1}) and one of Bernoulli(e^{−frac(x)});
/// it stops at the first failure, so the expected work is O(1) however large x is, and no
/// x is ever rounded to "probability zero".
pub(crate) fn bernoulli_exp_neg<R: Rng + ?Sized>(x: Ratio, rng: &mut R) -> bool {
    let whole = x.numerator / x.denominator;
    let fraction = Ratio::new(x.numerator % x.denominator, x.denominator);
    bernoulli_exp_neg_parts(whole, fraction, rng)
}

/// Bernoulli(exp(−(whole + fraction))) for a proper fraction, exactly (as
/// [`bernoulli_exp_neg`], for exponents whose numerator does not fit in 128 bits).
pub(crate) fn bernoulli_exp_neg_parts<R: Rng + ?Sized>(
    whole: u128,
    fraction: Ratio,
    rng: &mut R,
) -> bool {
    debug_assert!(fraction.numerator < fraction.denominator || fraction.numerator == 0);
    let one = Ratio::new(1, 1);
    let mut done: u128 = 0;
    while done < whole {
        if !bernoulli_exp_neg_at_most_one(one, rng) {
            return false;
        }
        done += 1;
    }
    bernoulli_exp_neg_at_most_one(fraction, rng)
}

/// Floor of a finite non-negative `value · 2^shift` as an integer, or `None` when it does
/// not fit in 2^120 (leaving headroom for the products the samplers form).
pub(crate) fn scaled_floor(value: f64, shift: i32) -> Option<u128> {
    debug_assert!(value.is_finite() && value >= 0.0);
    let scaled = value * 2f64.powi(shift);
    if !scaled.is_finite() || scaled >= 2f64.powi(120) {
        return None;
    }
    // Exact: `scaled` is an integer-valued or fractional f64 below 2^120, and `as` truncates.
    Some(scaled.floor() as u128)
}

/// Exact comparisons of products of integers and floats, for tests of rounding direction:
/// every positive normal f64 is `m · 2^e` with a 53-bit integer `m`.
#[cfg(test)]
pub(crate) mod exact_comparison {
    fn dyadic(x: f64) -> (u128, i32) {
        assert!(
            x.is_normal() && x > 0.0,
            "{x} is not a positive normal float"
        );
        let bits = x.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i32;
        (
            u128::from((bits & ((1 << 52) - 1)) | (1 << 52)),
            exponent - 1075,
        )
    }

    fn product(k: u128, xs: &[f64]) -> (u128, i32) {
        xs.iter().fold((k, 0), |(m, e), &x| {
            let (mx, ex) = dyadic(x);
            (m.checked_mul(mx).expect("product fits in 128 bits"), e + ex)
        })
    }

    /// Whether `a · Π xs ≤ b · Π ys` holds exactly.
    pub fn product_le(a: u128, xs: &[f64], b: u128, ys: &[f64]) -> bool {
        let ((ma, ea), (mb, eb)) = (product(a, xs), product(b, ys));
        if ma == 0 || mb == 0 {
            return ma == 0;
        }
        let (la, lb) = (
            128 - ma.leading_zeros() as i32 + ea,
            128 - mb.leading_zeros() as i32 + eb,
        );
        if la != lb {
            return la < lb;
        }
        // Same binary magnitude: aligning the exponents cannot overflow.
        if ea >= eb {
            (ma << (ea - eb)) <= mb
        } else {
            ma <= (mb << (eb - ea))
        }
    }

    #[test]
    fn product_le_sees_single_ulps() {
        let third = 1.0 / 3.0; // 0.33333333333333331483 < 1/3
        assert!(product_le(3, &[third], 1, &[]));
        assert!(!product_le(1, &[], 3, &[third]));
        assert!(product_le(1, &[0.1], 1, &[0.1]) && product_le(1, &[0.1, 2.0], 2, &[0.1]));
        assert!(!product_le(1, &[0.1f64.next_up()], 1, &[0.1]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::InsecureSeededRng;
    use crate::stats::{self, FALSE_ALARM_RATE};

    /// Chi-square of 10^5 draws of `sample(bound)` bucketed into ≤ 10 groups, against the
    /// exact share of `0..bound` each group covers.
    fn uniformity_test(
        bound: u128,
        seed: u64,
        mut sample: impl FnMut(u128, &mut InsecureSeededRng) -> u128,
    ) -> stats::ChiSquareTest {
        let mut rng = InsecureSeededRng::new(seed);
        let buckets = 10u128.min(bound);
        let n = 100_000u64;
        let mut observed = vec![0u64; buckets as usize];
        for _ in 0..n {
            let u = sample(bound, &mut rng);
            assert!(u < bound);
            observed[(u * buckets / bound) as usize] += 1;
        }
        let expected: Vec<f64> = (0..buckets)
            .map(|b| {
                // Number of u in 0..bound with ⌊u·buckets/bound⌋ = b.
                let first = (b * bound).div_ceil(buckets);
                let last = ((b + 1) * bound).div_ceil(buckets);
                n as f64 * (last - first) as f64 / bound as f64
            })
            .collect();
        stats::chi_square_test(&observed, &expected, FALSE_ALARM_RATE)
    }

    #[test]
    fn uniform_below_is_uniform_for_awkward_bounds() {
        for (i, bound) in [3u128, 7, 10, (1 << 64) + 5].into_iter().enumerate() {
            let test = uniformity_test(bound, 11 + i as u64, uniform_below);
            assert!(test.passes(), "bound {bound}: {test:?}");
        }
    }

    /// Mutation check: the classic modulo bias (4 random bits reduced mod 10 makes 0..5
    /// twice as likely as 6..9) fails the same test.
    #[test]
    fn uniformity_test_catches_modulo_bias() {
        let test = uniformity_test(10, 15, |b, rng| u128::from(rng.next_u64() >> 60) % b);
        assert!(!test.passes(), "{test:?}");
    }

    /// The Bernoulli(exp(−x)) sampler across regimes: x < 1, x = 1, x > 1, a non-dyadic
    /// ratio. Two-sided Clopper–Pearson check at a 1e-6 false-alarm rate.
    fn check_bernoulli_exp(x: Ratio, seed: u64) -> stats::BinomialCheck {
        let mut rng = InsecureSeededRng::new(seed);
        let n = 200_000u64;
        let hits = (0..n).filter(|_| bernoulli_exp_neg(x, &mut rng)).count() as u64;
        stats::binomial_check(hits, n, (-x.to_f64()).exp(), FALSE_ALARM_RATE)
    }

    #[test]
    fn bernoulli_exp_neg_matches_exp() {
        for (i, x) in [
            Ratio::new(0, 1),
            Ratio::new(1, 3),
            Ratio::new(1, 1),
            Ratio::new(7, 3),
            Ratio::new(5, 1),
            Ratio::new(123_456_789, 100_000_000),
        ]
        .into_iter()
        .enumerate()
        {
            let check = check_bernoulli_exp(x, 100 + i as u64);
            assert!(check.passes(), "x = {x:?}: {check:?}");
        }
    }

    /// Mutation check: the same test rejects a sampler that stops the series one step early
    /// in parity (returns "K even"), i.e. Bernoulli(1 − e^{−x}).
    #[test]
    fn bernoulli_exp_check_catches_wrong_parity() {
        let mut rng = InsecureSeededRng::new(5);
        let x = Ratio::new(1, 3);
        let n = 200_000u64;
        let hits = (0..n).filter(|_| !bernoulli_exp_neg(x, &mut rng)).count() as u64;
        let check = stats::binomial_check(hits, n, (-x.to_f64()).exp(), FALSE_ALARM_RATE);
        assert!(!check.passes(), "{check:?}");
    }

    #[test]
    fn bernoulli_exp_neg_of_huge_x_terminates_and_is_false() {
        let mut rng = InsecureSeededRng::new(3);
        let x = Ratio::new(u128::MAX / 2, 1);
        assert!((0..1000).all(|_| !bernoulli_exp_neg(x, &mut rng)));
    }

    #[test]
    fn scaled_floor_is_exact_and_bounded() {
        assert_eq!(scaled_floor(1.5, 1), Some(3));
        assert_eq!(scaled_floor(0.1, 4), Some(1));
        assert_eq!(scaled_floor(3.0, -1), Some(1));
        assert_eq!(scaled_floor(2f64.powi(119), 1), None);
    }
}
