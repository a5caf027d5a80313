//! Directed rounding: the one place this workspace rounds privacy parameters in the safe
//! direction (OpenDP's `InfAdd`/`InfMul` vocabulary, for `f64`).
//!
//! A spent ε or δ is only ever reported rounded **up** and a remaining budget rounded
//! **down**, so rounding can refuse a release at the very edge of a budget but never let one
//! through that exceeds it. [`ExactSum`] adds spends with no rounding at all, for ledgers
//! whose verdict must not depend on the order of their spends.

/// `a + b` rounded **up**: the floating-point sum, moved one ulp up whenever it came out
/// below the exact sum (detected exactly with Knuth's TwoSum), so accumulated ε is never
/// under-reported.
pub fn add_rounding_up(a: f64, b: f64) -> f64 {
    let sum = a + b;
    let b_part = sum - a;
    let rounding_error = (a - (sum - b_part)) + (b - b_part);
    if rounding_error > 0.0 {
        sum.next_up()
    } else {
        sum
    }
}

/// `a − b` rounded **down** (for what remains of a budget).
pub fn subtract_rounding_down(a: f64, b: f64) -> f64 {
    -add_rounding_up(-a, b)
}

/// `a · b` rounded **up** (a, b ≥ 0): the correctly rounded product is within half an ulp
/// of the exact one, so one step up covers it.
pub fn mul_rounding_up(a: f64, b: f64) -> f64 {
    (a * b).next_up()
}

/// `a + b` bounded from above the cheap way: the floating-point sum **always** moved one
/// ulp up, exact or not (the correctly rounded sum is within half an ulp of the exact one).
/// An upper bound like [`add_rounding_up`], but one ulp above it whenever the sum was exact:
/// for calibrations whose values were fixed with this rule, where switching to
/// [`add_rounding_up`] would change results in the last bit.
pub fn add_step_up(a: f64, b: f64) -> f64 {
    (a + b).next_up()
}

/// `a / b` rounded **up**: the correctly rounded quotient is within half an ulp of the exact
/// one, so one step up covers it (one ulp above whenever the quotient was exact).
pub fn div_rounding_up(a: f64, b: f64) -> f64 {
    (a / b).next_up()
}

/// Limbs of [`ExactSum`]: every finite double ≥ 0 is an integer multiple of 2⁻¹⁰⁷⁴ below
/// 2¹⁰²⁴, i.e. an integer of at most 2,098 bits; 34 limbs of 64 bits hold the sum of up to
/// 2⁵⁸ of them.
const LIMBS: usize = 34;

/// An exact sum of non-negative finite doubles (a fixed-point integer in units of 2⁻¹⁰⁷⁴,
/// the smallest subnormal): adding never rounds, so comparisons against a budget are exact
/// — ten spends of the double 0.1 exceed 1, as they do in the reals.
#[derive(Clone, PartialEq, Eq)]
pub struct ExactSum {
    limbs: [u64; LIMBS],
}

impl Default for ExactSum {
    fn default() -> Self {
        Self { limbs: [0; LIMBS] }
    }
}

impl std::fmt::Debug for ExactSum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ExactSum(≤ {})", self.rounded_up())
    }
}

impl ExactSum {
    /// The sum of nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The exact value of one double.
    ///
    /// # Panics
    /// If `x` is negative, infinite or NaN (callers check amounts first).
    pub fn of(x: f64) -> Self {
        let mut sum = Self::new();
        sum.add(x);
        sum
    }

    /// Adds `x` exactly.
    ///
    /// # Panics
    /// If `x` is negative, infinite or NaN.
    pub fn add(&mut self, x: f64) {
        assert!(
            x.is_finite() && x >= 0.0,
            "ExactSum adds finite x ≥ 0, not {x:?}"
        );
        let bits = x.to_bits();
        let exponent = (bits >> 52) & 0x7ff;
        let fraction = bits & ((1 << 52) - 1);
        // x = mantissa · 2^(shift − 1074) with shift ≥ 0.
        let (mantissa, shift) = if exponent == 0 {
            (fraction, 0)
        } else {
            (fraction | (1 << 52), exponent - 1)
        };
        let (limb, offset) = ((shift / 64) as usize, shift % 64);
        let wide = u128::from(mantissa) << offset;
        let mut carry = 0u128;
        for (i, part) in [wide as u64, (wide >> 64) as u64].into_iter().enumerate() {
            let total = u128::from(self.limbs[limb + i]) + u128::from(part) + carry;
            self.limbs[limb + i] = total as u64;
            carry = total >> 64;
        }
        let mut i = limb + 2;
        while carry > 0 {
            let total = u128::from(self.limbs[i]) + carry;
            self.limbs[i] = total as u64;
            carry = total >> 64;
            i += 1;
        }
    }

    /// Adds another sum exactly.
    pub fn add_sum(&mut self, other: &ExactSum) {
        let mut carry = 0u128;
        for (mine, theirs) in self.limbs.iter_mut().zip(other.limbs) {
            let total = u128::from(*mine) + u128::from(theirs) + carry;
            *mine = total as u64;
            carry = total >> 64;
        }
        assert_eq!(
            carry, 0,
            "ExactSum overflowed (more than 2⁵⁸ maximal doubles)"
        );
    }

    /// The sum, rounded up to a double (`f64::INFINITY` beyond the largest double).
    pub fn rounded_up(&self) -> f64 {
        self.rounded(true)
    }

    /// The sum, rounded down to a double.
    pub fn rounded_down(&self) -> f64 {
        self.rounded(false)
    }

    fn rounded(&self, up: bool) -> f64 {
        let Some(top) = self.limbs.iter().rposition(|&l| l != 0) else {
            return 0.0;
        };
        // The highest set bit, counted from bit 0 of limb 0.
        let high = top * 64 + 63 - self.limbs[top].leading_zeros() as usize;
        if high < 53 {
            // Below 2⁵³ units: exactly a (subnormal or small normal) double.
            return (self.limbs[0] as f64) * f64::from_bits(1);
        }
        // Keep the 53 bits ending at `high`; note whether anything below them is set.
        let low = high - 52;
        let mantissa = self.bits(low, 53);
        let inexact = (0..low).any(|bit| self.limbs[bit / 64] >> (bit % 64) & 1 == 1);
        let value = scale(mantissa as f64, low as i32 - 1074);
        match (up, value.is_finite()) {
            (true, true) if inexact => value.next_up(),
            (false, false) => f64::MAX,
            _ => value,
        }
    }

    /// `count` (≤ 64) bits starting at bit `from`.
    fn bits(&self, from: usize, count: usize) -> u64 {
        let (limb, offset) = (from / 64, from % 64);
        let low = u128::from(self.limbs[limb]);
        let high = self.limbs.get(limb + 1).copied().map_or(0, u128::from);
        let wide = (low | high << 64) >> offset;
        (wide as u64)
            & if count == 64 {
                u64::MAX
            } else {
                (1 << count) - 1
            }
    }
}

impl PartialOrd for ExactSum {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ExactSum {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.limbs.iter().rev().cmp(other.limbs.iter().rev())
    }
}

/// `x · 2^e`, exact while the result is a normal double or infinity (x < 2⁵³ an integer).
fn scale(x: f64, e: i32) -> f64 {
    // powi of 2 is exact for |e| ≤ 1023; split larger shifts in two steps.
    let half = e / 2;
    x * 2f64.powi(half) * 2f64.powi(e - half)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_round_up_only_when_inexact() {
        assert_eq!(add_rounding_up(1.0, 1.0), 2.0);
        assert_eq!(add_rounding_up(0.1, 0.2), 0.1 + 0.2);
        assert!(add_rounding_up(1.0, 2f64.powi(-60)) > 1.0);
        assert!(subtract_rounding_down(1.0, 2f64.powi(-60)) < 1.0);
        assert!(mul_rounding_up(0.1, 3.0) > 0.1 * 3.0 - f64::EPSILON);
    }

    #[test]
    fn step_up_and_division_always_step_one_ulp() {
        // Exact: add_rounding_up keeps the sum, add_step_up steps anyway.
        assert_eq!(add_rounding_up(1.0, 1.0), 2.0);
        assert_eq!(add_step_up(1.0, 1.0), 2f64.next_up());
        // Inexact: both step once above the rounded sum.
        assert_eq!(add_step_up(1.0, 2f64.powi(-60)), 1f64.next_up());
        assert_eq!(add_rounding_up(1.0, 2f64.powi(-60)), 1f64.next_up());
        assert_eq!(div_rounding_up(1.0, 4.0), 0.25f64.next_up());
        assert!(div_rounding_up(1.0, 3.0) > 1.0 / 3.0);
    }

    #[test]
    fn exact_sums_are_exact() {
        // Binary fractions: exact either way.
        let mut eighths = ExactSum::new();
        for _ in 0..8 {
            eighths.add(0.125);
        }
        assert_eq!(eighths, ExactSum::of(1.0));
        assert_eq!(eighths.rounded_up(), 1.0);
        // The double 0.1 is 0.1000000000000000055…: ten of them exceed 1 exactly, and nine
        // of them with 0.1 + … rounded to nearest would not.
        let mut tenths = ExactSum::new();
        for _ in 0..10 {
            tenths.add(0.1);
        }
        assert!(tenths > ExactSum::of(1.0));
        assert!(tenths.rounded_up() > 1.0 && tenths.rounded_down() == 1.0);
        // 1 + 2⁻⁶⁰ is not a double: up and down bracket it.
        let mut tiny = ExactSum::of(1.0);
        tiny.add(2f64.powi(-60));
        assert_eq!(tiny.rounded_down(), 1.0);
        assert_eq!(tiny.rounded_up(), 1.0f64.next_up());
        assert!(tiny > ExactSum::of(1.0) && tiny < ExactSum::of(1.0f64.next_up()));
    }

    #[test]
    fn extremes_and_subnormals_round_trip() {
        for x in [
            0.0,
            f64::from_bits(1),
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE.next_down(),
            1e-300,
            0.3,
            1e300,
            f64::MAX,
        ] {
            let sum = ExactSum::of(x);
            assert_eq!(sum.rounded_up(), x, "{x:e}");
            assert_eq!(sum.rounded_down(), x, "{x:e}");
        }
        let mut two_max = ExactSum::of(f64::MAX);
        two_max.add(f64::MAX);
        assert_eq!(two_max.rounded_up(), f64::INFINITY);
        let mut both = ExactSum::of(0.5);
        both.add_sum(&ExactSum::of(0.25));
        assert_eq!(both.rounded_up(), 0.75);
    }

    #[test]
    fn order_is_the_reals_order() {
        let mut a = ExactSum::of(0.1);
        a.add(0.2);
        // The reals' 0.1 + 0.2 (of the doubles) is below the double 0.30000000000000004.
        assert!(a < ExactSum::of(0.1 + 0.2));
        assert!(a > ExactSum::of(0.3));
        assert_eq!(a.rounded_up(), 0.1 + 0.2);
        assert_eq!(a.rounded_down(), 0.3);
    }
}
