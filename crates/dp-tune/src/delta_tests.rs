//! Every privacy parameter random stopping reports is rounded up: checked against the
//! spec's formulas computed here in double-double arithmetic (about 100 bits, with a
//! separate binary exponent so nothing overflows), never with the code under test.
//!
//! δ = (1 + e^{3ε_B})·(1 − γ_coin)^T (RandomStopping's `# Privacy`), where γ_coin =
//! ⌊γ·2⁶⁴⌋/2⁶⁴ is the probability with which `rand`'s `random_bool(γ)` stops, and the
//! noise scale of each score must be at least 1/ε_S.

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use crate::test_trainers::FixedTrainer;
use crate::{MAX_DELTA, MAX_RUNS, RandomStopping};

/// A double-double: the unevaluated sum hi + lo, |lo| ≤ ulp(hi)/2.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dd {
    hi: f64,
    lo: f64,
}

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let v = s - a;
    Dd {
        hi: s,
        lo: (a - (s - v)) + (b - v),
    }
}

fn quick(hi: f64, lo: f64) -> Dd {
    let s = hi + lo;
    Dd {
        hi: s,
        lo: lo - (s - hi),
    }
}

impl Dd {
    fn from(x: f64) -> Self {
        Self { hi: x, lo: 0.0 }
    }

    fn add(self, other: Self) -> Self {
        let s = two_sum(self.hi, other.hi);
        quick(s.hi, s.lo + self.lo + other.lo)
    }

    fn mul(self, other: Self) -> Self {
        let p = self.hi * other.hi;
        let e = self.hi.mul_add(other.hi, -p) + self.hi * other.lo + self.lo * other.hi;
        quick(p, e)
    }

    fn div_f64(self, d: f64) -> Self {
        let q1 = self.hi / d;
        let r = self.add(Dd::from(q1).mul(Dd::from(-d)));
        quick(q1, r.hi / d)
    }

    fn scale(self, k: i32) -> Self {
        let f = 2f64.powi(k);
        Self {
            hi: self.hi * f,
            lo: self.lo * f,
        }
    }
}

/// `m·2^e` with `m` in [1, 2) (or 0): a double-double with an unbounded exponent.
#[derive(Debug, Clone, Copy)]
struct Big {
    m: Dd,
    e: i64,
}

impl Big {
    fn new(m: Dd) -> Self {
        Self { m, e: 0 }.normalized()
    }

    fn normalized(self) -> Self {
        if self.m.hi == 0.0 {
            return self;
        }
        let k = self.m.hi.abs().log2().floor() as i32;
        // In two steps, so that 2^-k stays finite for subnormal values; log2 may be off by
        // one at powers of two: fixed up below.
        let mut m = self.m.scale(-(k / 2)).scale(-(k - k / 2));
        let mut e = self.e + i64::from(k);
        while m.hi.abs() >= 2.0 {
            m = m.scale(-1);
            e += 1;
        }
        while m.hi.abs() < 1.0 {
            m = m.scale(1);
            e -= 1;
        }
        Self { m, e }
    }

    fn mul(self, other: Self) -> Self {
        Self {
            m: self.m.mul(other.m),
            e: self.e + other.e,
        }
        .normalized()
    }

    fn powi(self, mut n: u64) -> Self {
        let mut result = Big::new(Dd::from(1.0));
        let mut base = self;
        while n > 0 {
            if n & 1 == 1 {
                result = result.mul(base);
            }
            base = base.mul(base);
            n >>= 1;
        }
        result
    }

    /// `self ≤ other` for values ≥ 0 (normalized: compare exponents, then mantissas).
    fn at_most(self, other: Self) -> bool {
        self.m.hi == 0.0 || (self.e, self.m.hi, self.m.lo) <= (other.e, other.m.hi, other.m.lo)
    }

    /// To f64 when in range (for messages).
    fn approx(self) -> f64 {
        self.m.hi * 2f64.powf(self.e as f64)
    }
}

/// e^x for a double-double |x| ≤ 2000: e^{x/2^k} by its Taylor series (|x/2^k| ≤ 2⁻⁸, 24
/// terms), then squared k times.
fn exp(x: Dd) -> Big {
    let k = if x.hi.abs() <= 2f64.powi(-8) {
        0
    } else {
        (x.hi.abs().log2().ceil() as i32 + 8).max(0)
    };
    let r = x.scale(-k);
    let mut term = Dd::from(1.0);
    let mut sum = Dd::from(1.0);
    for n in 1..=24 {
        term = term.mul(r).div_f64(f64::from(n));
        sum = sum.add(term);
    }
    let mut result = Big::new(sum);
    for _ in 0..k {
        result = result.mul(result);
    }
    result
}

/// The spec's δ, to about 90 bits.
fn exact_delta(base_epsilon: f64, gamma: f64, runs: usize) -> Big {
    // 3ε_B exactly (a product of two doubles is a double-double).
    let p = 3.0 * base_epsilon;
    let three_epsilon = Dd {
        hi: p,
        lo: 3f64.mul_add(base_epsilon, -p),
    };
    let grow = exp(three_epsilon);
    let shrink = exp(Dd {
        hi: -three_epsilon.hi,
        lo: -three_epsilon.lo,
    });
    // 1 + e^{3ε} = e^{3ε}·(1 + e^{−3ε}); e^{−3ε} ≥ 2^-3000 only matters above 2^-120.
    let small = if shrink.e < -120 {
        Dd::from(0.0)
    } else {
        shrink.m.scale(shrink.e as i32)
    };
    let factor = grow.mul(Big::new(Dd::from(1.0).add(small)));
    // The coin's exact probability: random_bool draws a u64 below ⌊γ·2^64⌋.
    let coin = if gamma >= 1.0 {
        1.0
    } else {
        (gamma * 2f64.powi(64)).floor() * 2f64.powi(-64)
    };
    if coin >= 1.0 {
        return Big::new(Dd::from(0.0));
    }
    let stays = Big::new(two_sum(1.0, -coin));
    factor.mul(stays.powi(runs as u64))
}

#[test]
fn double_double_reference_matches_known_values() {
    // e^1 and (1 − 2^-30)^(2^30) → e^{-1}·(1 − 2^-31 …): checked against f64 within 1e-15.
    let e = exp(Dd::from(1.0));
    assert!((e.approx() - std::f64::consts::E).abs() < 1e-15, "{e:?}");
    let e700 = exp(Dd::from(700.0));
    assert!((e700.approx() / 700f64.exp() - 1.0).abs() < 1e-13);
    let big = exp(Dd::from(1500.0));
    assert!((big.e as f64 - 1500.0 / std::f64::consts::LN_2).abs() < 1.0);
    let tail = Big::new(two_sum(1.0, -0.25)).powi(40);
    assert!((tail.approx() / 0.75f64.powi(40) - 1.0).abs() < 1e-14);
}

/// Over many sampled settings (ε_B from 10⁻³ to 300, γ from 10⁻⁴ to 1, the default cap or
/// one from 1 to 10⁷), the reported δ is never below the spec's exact δ, and within a
/// relative 10⁻⁶ of it; every accepted setting has δ ≤ MAX_DELTA. Failed on the code that
/// computed `(1 − γ').powi(T)` in f64 (the rounding of 1 − γ' under-reported δ).
#[test]
fn reported_delta_is_never_below_the_exact_delta() {
    let mut rng = InsecureSeededRng::new(2026);
    let log_uniform = |rng: &mut InsecureSeededRng, low: f64, high: f64| {
        (rng.random_range(low.ln()..high.ln())).exp()
    };
    let (mut checked, mut below) = (0, Vec::new());
    for trial in 0..4000 {
        let candidate = log_uniform(&mut rng, 1e-3, 300.0);
        let score = log_uniform(&mut rng, 1e-3, 300.0);
        let gamma = if trial % 10 == 0 {
            1.0
        } else {
            log_uniform(&mut rng, 1e-4, 1.0).min(1.0)
        };
        let Ok(mut tuning) =
            RandomStopping::new(vec![FixedTrainer::new(0.0, candidate)], score, gamma)
        else {
            continue;
        };
        if trial % 2 == 1 {
            let runs = log_uniform(&mut rng, 1.0, MAX_RUNS as f64) as usize;
            match tuning.with_max_runs(runs.clamp(1, MAX_RUNS)) {
                Ok(capped) => tuning = capped,
                Err(_) => continue,
            }
        }
        let base = candidate.max(score);
        let reported = tuning.delta();
        assert!(reported <= MAX_DELTA, "{reported} for {tuning:?}");
        assert!(tuning.epsilon() >= 3.0 * base && tuning.epsilon() <= 1000.0);
        let exact = exact_delta(base, gamma, tuning.max_runs());
        checked += 1;
        if exact.m.hi == 0.0 {
            assert!(reported >= 0.0);
            continue;
        }
        if !exact.at_most(Big::new(Dd::from(reported))) {
            below.push(format!(
                "{tuning:?}: reported {reported:e} < exact {:e}",
                exact.approx()
            ));
        }
        // Tight where δ is a normal double: never more than a relative 1e-6 above.
        let loose = exact.mul(Big::new(Dd::from(1.0 + 1e-6)));
        if exact.e > -1000 {
            assert!(
                Big::new(Dd::from(reported)).at_most(loose),
                "{tuning:?}: reported {reported:e} far above exact {:e}",
                exact.approx()
            );
        }
    }
    assert!(checked > 1000, "only {checked} settings accepted");
    assert!(
        below.is_empty(),
        "{} of {checked} under-reported:\n{}",
        below.len(),
        below[..below.len().min(5)].join("\n")
    );
}

/// The score noise's exact scale (a ratio of integers) is at least 1/ε_S, compared
/// exactly: num/den ≥ 1/ε ⟺ num·ε ≥ den, with ε = m·2^k an exact binary fraction.
#[test]
fn score_noise_scale_is_never_below_one_over_epsilon() {
    let mut rng = InsecureSeededRng::new(7);
    for trial in 0..20_000 {
        let epsilon = if trial < 3 {
            [0.1, 1.0 / 3.0, 0.3][trial]
        } else {
            (rng.random_range(1e-3f64.ln()..300f64.ln())).exp()
        };
        let tuning = RandomStopping::new(vec![FixedTrainer::new(0.0, 1e-3)], epsilon, 1.0).unwrap();
        let (num, den) = tuning.score_noise().scale_ratio();
        // ε = mantissa · 2^exponent exactly.
        let bits = epsilon.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as i64 - 1075;
        let mantissa = u128::from((bits & ((1 << 52) - 1)) | (1 << 52));
        // num·mantissa·2^exponent ≥ den.
        let left = u128::from(num) * mantissa;
        // left·2^exponent ≥ den ⟺ ⌊left / 2^−exponent⌋ ≥ den (den is an integer).
        let shift = (-exponent).max(0) as u32;
        let ok = exponent >= 0 || (shift < 128 && (left >> shift) >= u128::from(den));
        assert!(ok, "ε {epsilon:e}: scale {num}/{den} below 1/ε");
    }
}
