//! Goodness-of-fit and interval helpers for testing and auditing privacy code.
//!
//! These are the statistical tools of `docs/src/reference/privacy-testing.md`, shared by the test suites of
//! every crate in the workspace and by empirical privacy audits. Each test is built for a
//! chosen false-alarm rate `alpha` (the workspace uses [`FALSE_ALARM_RATE`] = 1e-6 with
//! fixed seeds, so suites are deterministic and a correct sampler essentially never fails)
//! and reports its statistic beside its critical value, so a failure message says by how
//! much it failed.

use statrs::distribution::{ChiSquared, ContinuousCDF};
use statrs::function::beta::beta_reg;

/// The false-alarm rate the workspace's statistical tests are calibrated for.
pub const FALSE_ALARM_RATE: f64 = 1e-6;

/// Outcome of a one- or two-sample Kolmogorov–Smirnov test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KsTest {
    /// Largest distance between the empirical and the reference CDF.
    pub statistic: f64,
    /// The distance beyond which the test rejects at the chosen false-alarm rate.
    pub critical_value: f64,
    /// Number of samples (for two samples, the smaller one).
    pub samples: usize,
}

impl KsTest {
    /// Whether the samples are consistent with the reference distribution.
    pub fn passes(&self) -> bool {
        self.statistic <= self.critical_value
    }
}

/// Critical value of the KS statistic from the Dvoretzky–Kiefer–Wolfowitz inequality with
/// Massart's constant: `P(D_n > c) ≤ 2 exp(−2 n c²)`, so `c = sqrt(ln(2/alpha) / (2n))`.
/// Valid for every `n` and for discrete distributions too (there it is conservative).
pub fn dkw_critical_value(samples: usize, alpha: f64) -> f64 {
    ((2.0 / alpha).ln() / (2.0 * samples as f64)).sqrt()
}

/// One-sample KS test of real-valued samples against a continuous CDF.
///
/// # Panics
/// If `samples` is empty or contains NaN (test inputs are the caller's own draws).
pub fn ks_test(samples: &[f64], cdf: impl Fn(f64) -> f64, alpha: f64) -> KsTest {
    assert!(!samples.is_empty(), "KS test needs samples");
    let mut sorted = samples.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).expect("KS test samples must not be NaN"));
    let n = sorted.len() as f64;
    let statistic = sorted
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let f = cdf(x);
            (f - i as f64 / n).abs().max(((i + 1) as f64 / n - f).abs())
        })
        .fold(0.0, f64::max);
    KsTest {
        statistic,
        critical_value: dkw_critical_value(sorted.len(), alpha),
        samples: sorted.len(),
    }
}

/// One-sample KS test of integer samples against the CDF `k ↦ P(X ≤ k)` of an integer
/// distribution. Between consecutive distinct sample values the empirical CDF is constant
/// and the reference CDF increasing, so the largest gap sits at a sample value or just
/// below one; only those points are evaluated.
///
/// # Panics
/// If `samples` is empty.
pub fn ks_test_integer(samples: &[i64], cdf: impl Fn(i64) -> f64, alpha: f64) -> KsTest {
    assert!(!samples.is_empty(), "KS test needs samples");
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as f64;
    let mut statistic = 0.0f64;
    let mut below = 0usize; // samples < the current value
    while below < sorted.len() {
        let value = sorted[below];
        let at_most = below + sorted[below..].partition_point(|&x| x == value);
        statistic = statistic
            .max((below as f64 / n - cdf(value - 1)).abs())
            .max((at_most as f64 / n - cdf(value)).abs());
        below = at_most;
    }
    KsTest {
        statistic,
        critical_value: dkw_critical_value(sorted.len(), alpha),
        samples: sorted.len(),
    }
}

/// Two-sample KS test. The critical value is the sum of the two one-sample DKW bounds at
/// `alpha/2` each (both empirical CDFs within their band of the common CDF), which is
/// valid for all sample sizes.
///
/// # Panics
/// If either sample is empty or contains NaN.
pub fn ks_test_two_sample(a: &[f64], b: &[f64], alpha: f64) -> KsTest {
    assert!(!a.is_empty() && !b.is_empty(), "KS test needs samples");
    let sort = |xs: &[f64]| {
        let mut s = xs.to_vec();
        s.sort_by(|x, y| x.partial_cmp(y).expect("KS test samples must not be NaN"));
        s
    };
    let (a, b) = (sort(a), sort(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mut i, mut j, mut statistic) = (0usize, 0usize, 0.0f64);
    while i < a.len() && j < b.len() {
        let x = a[i].min(b[j]);
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        statistic = statistic.max((i as f64 / na - j as f64 / nb).abs());
    }
    KsTest {
        statistic,
        critical_value: dkw_critical_value(a.len(), alpha / 2.0)
            + dkw_critical_value(b.len(), alpha / 2.0),
        samples: a.len().min(b.len()),
    }
}

/// Outcome of a chi-square goodness-of-fit test.
#[derive(Debug, Clone, PartialEq)]
pub struct ChiSquareTest {
    /// Pearson's statistic Σ (O − E)² / E over the cells with expected count ≥ 5.
    pub statistic: f64,
    /// Number of those cells, minus one; without the minus one when rare cells were split
    /// off (the remaining counts no longer have a fixed total).
    pub degrees_of_freedom: usize,
    /// The statistic beyond which the test rejects at its share of the false-alarm rate.
    pub critical_value: f64,
    /// The (observed, expected) counts of the cells in the statistic.
    pub cells: Cells,
    /// The cells with expected count below 5, pooled and checked as one binomial count.
    pub rare_cells: Option<BinomialCheck>,
}

impl ChiSquareTest {
    /// Whether the observed counts are consistent with the expected ones.
    pub fn passes(&self) -> bool {
        self.statistic <= self.critical_value && self.rare_cells.is_none_or(|c| c.passes())
    }
}

/// (observed, expected) counts, one pair per cell.
type Cells = Vec<(u64, f64)>;

/// Pearson chi-square test of observed counts against expected counts (same total).
///
/// Cells with an expected count of at least 5 enter the chi-square statistic (its
/// approximation needs that). The others are pooled and their total checked exactly
/// against its expected probability with a Clopper–Pearson interval, so a category that
/// should almost never occur but does is seen rather than diluted. With both parts
/// present, each gets half of `alpha` (Bonferroni), and the statistic over the remaining
/// cells — whose total now varies — is compared with χ²(k) instead of χ²(k − 1), which
/// bounds its law from above. The critical value is the exact quantile of χ²(df).
///
/// # Panics
/// If the lengths differ, or fewer than two cells have an expected count ≥ 5.
pub fn chi_square_test(observed: &[u64], expected: &[f64], alpha: f64) -> ChiSquareTest {
    assert_eq!(
        observed.len(),
        expected.len(),
        "one expected count per cell"
    );
    let total = observed.iter().sum::<u64>();
    let (cells, rare): (Cells, Cells) = observed
        .iter()
        .zip(expected)
        .map(|(&o, &e)| (o, e))
        .partition(|&(_, e)| e >= 5.0);
    assert!(
        cells.len() >= 2,
        "chi-square test needs two cells with expected count ≥ 5"
    );
    let alpha_share = if rare.is_empty() { alpha } else { alpha / 2.0 };
    let rare_cells = (!rare.is_empty()).then(|| {
        let count = rare.iter().map(|c| c.0).sum::<u64>();
        let probability = rare.iter().map(|c| c.1).sum::<f64>() / total as f64;
        binomial_check(count, total, probability, alpha_share)
    });
    let statistic = cells.iter().map(|&(o, e)| (o as f64 - e).powi(2) / e).sum();
    let degrees_of_freedom = if rare.is_empty() {
        cells.len() - 1
    } else {
        cells.len()
    };
    let critical_value = ChiSquared::new(degrees_of_freedom as f64)
        .expect("degrees of freedom ≥ 1")
        .inverse_cdf(1.0 - alpha_share);
    ChiSquareTest {
        statistic,
        degrees_of_freedom,
        critical_value,
        cells,
        rare_cells,
    }
}

/// Two-sided Clopper–Pearson ("exact") confidence interval for a binomial proportion
/// after `successes` out of `trials`, at confidence `1 − alpha`.
///
/// # Panics
/// If `successes > trials` or `trials == 0`.
pub fn clopper_pearson(successes: u64, trials: u64, alpha: f64) -> (f64, f64) {
    assert!(
        trials > 0 && successes <= trials,
        "need 0 ≤ successes ≤ trials, trials ≥ 1"
    );
    let (k, n) = (successes as f64, trials as f64);
    // P(Bin(n, p) ≥ k) = I_p(k, n − k + 1) increases in p; P(Bin(n, p) ≤ k) = 1 − I_p(k + 1, n − k).
    let lower = if successes == 0 {
        0.0
    } else {
        bisect_increasing(|p| beta_reg(k, n - k + 1.0, p), alpha / 2.0)
    };
    let upper = if successes == trials {
        1.0
    } else {
        bisect_increasing(|p| beta_reg(k + 1.0, n - k, p), 1.0 - alpha / 2.0)
    };
    (lower, upper)
}

/// The p in (0, 1) where an increasing function `f` crosses `target`, by bisection.
fn bisect_increasing(f: impl Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Outcome of checking an observed frequency against a claimed probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BinomialCheck {
    /// Observed successes.
    pub successes: u64,
    /// Number of trials.
    pub trials: u64,
    /// The probability claimed for one success.
    pub claimed: f64,
    /// Clopper–Pearson interval at confidence `1 − alpha`.
    pub interval: (f64, f64),
}

impl BinomialCheck {
    /// Whether the claimed probability lies in the confidence interval.
    pub fn passes(&self) -> bool {
        self.interval.0 <= self.claimed && self.claimed <= self.interval.1
    }
}

/// Checks `successes / trials` against a claimed probability with a Clopper–Pearson interval.
pub fn binomial_check(successes: u64, trials: u64, claimed: f64, alpha: f64) -> BinomialCheck {
    BinomialCheck {
        successes,
        trials,
        claimed,
        interval: clopper_pearson(successes, trials, alpha),
    }
}

/// `P(Z > t)` for a standard normal Z, by libm's `erfc` (musl's, within about one ulp; in
/// the tails `1 − Φ(t)` computed directly would lose every digit). Not statrs' `erfc`: its
/// relative error reaches 1.03·10⁻¹⁰ (at 0.5, against mpmath), above the margin the
/// Gaussian objective perturbation's δ bound allows it.
pub fn normal_upper_tail(t: f64) -> f64 {
    0.5 * libm::erfc(t / std::f64::consts::SQRT_2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `P(Z > t)` by mpmath at 40 digits (`mpmath.erfc(t / sqrt(2)) / 2`, mp.dps = 40),
    /// rounded to the nearest double, computed outside the code under test: within 1e-13 relative, far inside the
    /// 1e-10 margin the Gaussian δ bound adds (statrs' erfc was 1.03e-10 off at 0.5).
    #[test]
    fn the_normal_tail_is_within_a_few_ulps_of_high_precision_values() {
        for (t, reference) in [
            (0.5, 0.308_537_538_725_986_9),
            (1.0, 0.158_655_253_931_457_05),
            (3.0, 0.001_349_898_031_630_094_6),
            (8.0, 6.220_960_574_271_784e-16),
            (20.0, 2.753_624_118_606_233_7e-89),
        ] {
            let got = normal_upper_tail(t);
            assert!(
                ((got - reference) / reference).abs() < 1e-13,
                "P(Z > {t}) = {got:e}, reference {reference:e}"
            );
        }
    }

    #[test]
    fn dkw_matches_the_documented_value() {
        // docs/src/reference/privacy-testing.md: 0.038 at n = 5000, alpha = 1e-6.
        assert!((dkw_critical_value(5000, 1e-6) - 0.0381).abs() < 1e-3);
    }

    #[test]
    fn ks_statistic_of_a_perfect_grid_is_half_a_step() {
        let n = 1000;
        let samples: Vec<f64> = (0..n).map(|i| (i as f64 + 0.5) / n as f64).collect();
        let test = ks_test(&samples, |x| x.clamp(0.0, 1.0), 1e-6);
        assert!((test.statistic - 0.5 / n as f64).abs() < 1e-12);
        assert!(test.passes());
        let shifted: Vec<f64> = samples.iter().map(|x| x * 0.8).collect();
        assert!(!ks_test(&shifted, |x| x.clamp(0.0, 1.0), 1e-6).passes());
    }

    #[test]
    fn integer_ks_sees_a_missing_atom() {
        // Fair die on {1..6} vs samples that never show 6.
        let cdf = |k: i64| (k.clamp(0, 6) as f64) / 6.0;
        let fair: Vec<i64> = (0..6000).map(|i| i % 6 + 1).collect();
        assert!(ks_test_integer(&fair, cdf, 1e-6).statistic < 1e-12);
        let no_six: Vec<i64> = (0..6000).map(|i| i % 5 + 1).collect();
        let test = ks_test_integer(&no_six, cdf, 1e-6);
        assert!((test.statistic - 1.0 / 6.0).abs() < 1e-12);
        assert!(!test.passes());
    }

    #[test]
    fn two_sample_ks_is_zero_for_equal_samples_and_large_for_disjoint() {
        let a: Vec<f64> = (0..500).map(f64::from).collect();
        assert_eq!(ks_test_two_sample(&a, &a, 1e-6).statistic, 0.0);
        let b: Vec<f64> = a.iter().map(|x| x + 1000.0).collect();
        let test = ks_test_two_sample(&a, &b, 1e-6);
        assert_eq!(test.statistic, 1.0);
        assert!(!test.passes());
    }

    #[test]
    fn chi_square_critical_value_is_the_quantile() {
        // χ²(1) quantile at 1 − 1e-6 is 23.928 (standard tables).
        let test = chi_square_test(&[50, 50], &[50.0, 50.0], 1e-6);
        assert!((test.critical_value - 23.928).abs() < 1e-2, "{test:?}");
        assert_eq!(test.statistic, 0.0);
    }

    #[test]
    fn chi_square_pools_rare_cells_and_sees_them() {
        // Two rare cells pooled: observing them 40 times against an expected 2 fails.
        let expected = [499.0, 499.0, 1.0, 1.0];
        let test = chi_square_test(&[500, 498, 1, 1], &expected, 1e-6);
        assert_eq!(test.cells.len(), 2, "{test:?}");
        assert_eq!(test.rare_cells.map(|c| c.successes), Some(2));
        assert!(test.passes());
        assert!(!chi_square_test(&[480, 480, 20, 20], &expected, 1e-6).passes());
    }

    #[test]
    fn clopper_pearson_matches_known_intervals() {
        // 0 successes of 10 at 95%: upper = 1 − 0.025^(1/10) = 0.3085.
        let (lo, hi) = clopper_pearson(0, 10, 0.05);
        assert_eq!(lo, 0.0);
        assert!((hi - 0.30850).abs() < 1e-4, "{hi}");
        // 5 of 10 at 95%: (0.1871, 0.8129).
        let (lo, hi) = clopper_pearson(5, 10, 0.05);
        assert!(
            (lo - 0.18709).abs() < 1e-4 && (hi - 0.81291).abs() < 1e-4,
            "{lo} {hi}"
        );
    }
}
