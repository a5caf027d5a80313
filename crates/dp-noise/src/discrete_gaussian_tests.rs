use super::*;
use crate::InsecureSeededRng;
use crate::stats::{self, FALSE_ALARM_RATE};

fn draws(dist: &DiscreteGaussian, n: usize, seed: u64) -> Vec<i64> {
    let mut rng = InsecureSeededRng::new(seed);
    (0..n).map(|_| dist.sample(&mut rng) as i64).collect()
}

/// The exact pmf `exp(−k²/(2σ²))/Z`, computed here from σ² alone (not by the type under
/// test), Z summed directly over |k| ≤ 60σ + 60.
fn exact_pmf(variance: f64) -> impl Fn(i64) -> f64 {
    let weight = move |k: i64| (-(k as f64).powi(2) / (2.0 * variance)).exp();
    let reach = (60.0 * variance.sqrt() + 60.0) as i64;
    let z: f64 = (-reach..=reach).map(weight).sum();
    move |k| weight(k) / z
}

/// Chi-square of draws against the exact pmf on the cells |k| ≤ 3σ + 2, plus two tails.
fn pmf_chi_square(seen: &[i64], variance: f64) -> stats::ChiSquareTest {
    let pmf = exact_pmf(variance);
    let half = (3.0 * variance.sqrt()) as i64 + 2;
    let cells = (2 * half + 1) as usize;
    let mut observed = vec![0u64; cells + 2];
    for &k in seen {
        let cell = if k < -half {
            cells
        } else if k > half {
            cells + 1
        } else {
            (k + half) as usize
        };
        observed[cell] += 1;
    }
    let n = seen.len() as f64;
    let mut expected: Vec<f64> = (-half..=half).map(|k| n * pmf(k)).collect();
    let tail = (n - expected.iter().sum::<f64>()) / 2.0;
    expected.extend([tail, tail]);
    stats::chi_square_test(&observed, &expected, FALSE_ALARM_RATE)
}

#[test]
fn matches_the_exact_pmf_across_variances() {
    for (i, (num, den)) in [(1u64, 4u64), (1, 1), (7, 3), (441, 4), (1000, 1)]
        .into_iter()
        .enumerate()
    {
        let dist = DiscreteGaussian::from_ratio(num, den).unwrap();
        let variance = num as f64 / den as f64;
        let test = pmf_chi_square(&draws(&dist, 100_000, 70 + i as u64), variance);
        assert!(test.passes(), "sigma^2 = {num}/{den}: {test:?}");
    }
}

#[test]
fn matches_the_cdf_at_large_variance() {
    // σ = 2^20: the proposals' products need more than 64 bits.
    let dist = DiscreteGaussian::with_variance_at_least(2f64.powi(40)).unwrap();
    let sigma = dist.variance().sqrt();
    let seen: Vec<f64> = draws(&dist, 20_000, 5)
        .into_iter()
        .map(|k| k as f64 / sigma)
        .collect();
    use statrs::distribution::{ContinuousCDF, Normal};
    let test = stats::ks_test(&seen, |x| Normal::standard().cdf(x), FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// Mutation checks: half the variance, and the proposal without its rejection step (the
/// discrete Laplace of scale ⌊σ⌋ + 1), both fail the test the sampler passes.
#[test]
fn pmf_test_catches_half_the_variance_and_a_missing_rejection() {
    let variance = 441.0 / 4.0;
    let half = DiscreteGaussian::from_ratio(441, 8).unwrap();
    assert!(!pmf_chi_square(&draws(&half, 100_000, 74), variance).passes());
    let dist = DiscreteGaussian::from_ratio(441, 4).unwrap();
    let mut rng = InsecureSeededRng::new(74);
    let unrejected: Vec<i64> = (0..100_000)
        .map(|_| dist.proposal.sample(&mut rng) as i64)
        .collect();
    assert!(!pmf_chi_square(&unrejected, variance).passes());
}

#[test]
fn sampler_helpers_agree_with_the_exact_pmf_and_cdf() {
    let dist = DiscreteGaussian::from_ratio(7, 3).unwrap();
    let pmf = exact_pmf(7.0 / 3.0);
    for k in -8..=8 {
        assert!((dist.pmf(k) - pmf(k)).abs() < 1e-12);
        let cdf: f64 = (-200..=k).map(&pmf).sum();
        assert!((dist.cdf(k) - cdf).abs() < 1e-12, "{k}");
    }
}

#[test]
fn variance_is_rounded_up_and_t_is_floor_sigma_plus_one() {
    for v in [1e-9, 0.3, 1.0, 2.0, 1.0 / 3.0, 12345.678, 3e13, 1e18] {
        let dist = DiscreteGaussian::with_variance_at_least(v).unwrap();
        let (n, m) = dist.variance_ratio();
        assert!(n as f64 >= v * m as f64, "{v}: {n}/{m}");
        assert!(dist.variance() <= v * (1.0 + 1e-11) || v < 1e-6, "{v}");
        let t = dist.t;
        // (t − 1)² ≤ σ² < t², exactly.
        assert!((t - 1) * (t - 1) * u128::from(m) <= u128::from(n), "{v}");
        assert!(t * t * u128::from(m) > u128::from(n), "{v}");
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            DiscreteGaussian::with_variance_at_least(bad),
            Err(NoiseError::InvalidScale(_))
        ));
    }
    assert!(DiscreteGaussian::with_variance_at_least(1e19).is_err());
    assert!(matches!(
        DiscreteGaussian::from_ratio(0, 1),
        Err(NoiseError::InvalidRatio { .. })
    ));
    assert!(DiscreteGaussian::from_ratio(1 << 62, 1).is_err());
}

#[test]
fn wide_arithmetic_is_exact() {
    let big = u128::MAX - 12345;
    let (hi, lo) = mul_wide(big, big);
    // (2¹²⁸ − a)² = 2²⁵⁶ − 2a·2¹²⁸ + a², a = 12346.
    let a = 12346u128;
    assert_eq!((hi, lo), (u128::MAX - 2 * a + 1, a * a));
    assert_eq!(mul_wide(1 << 64, 1 << 64), (1, 0));
    assert_eq!(mul_wide(3, 5), (0, 15));
    let d = (1u128 << 100) + 7;
    let (q, r) = div_wide(hi >> 30, lo, d).unwrap();
    // Check q·d + r = (hi >> 30)·2¹²⁸ + lo.
    let (qh, ql) = mul_wide(q, d);
    let (sum, carry) = ql.overflowing_add(r);
    assert_eq!((qh + u128::from(carry), sum), (hi >> 30, lo));
    assert!(r < d);
    assert_eq!(div_wide(5, 0, 5), None);
}

#[test]
fn huge_proposals_are_rejected_without_overflow() {
    let dist = DiscreteGaussian::from_ratio(3, 1).unwrap();
    let mut rng = InsecureSeededRng::new(1);
    assert!(!dist.accept(u128::MAX / 3, &mut rng));
    assert!(!dist.accept(1 << 70, &mut rng));
    // At |Y| = σ²/t the exponent is 0: always accepted.
    let exact = DiscreteGaussian::from_ratio(4, 1).unwrap(); // t = 3, σ²/t = 4/3: not integer
    let _ = exact;
    let on_peak = DiscreteGaussian::from_ratio(6, 1).unwrap(); // t = 3, σ²/t = 2
    assert!((0..100).all(|_| on_peak.accept(2, &mut rng)));
}

#[test]
fn zcdp_of_the_scalar_mechanism() {
    let dist = DiscreteGaussian::from_ratio(4, 1).unwrap();
    let rho = dist.zcdp(1.0).unwrap().rho();
    assert!(
        (1.0 / 8.0..=1.0 / 8.0 * (1.0 + 1e-14)).contains(&rho),
        "{rho}"
    );
}

#[test]
fn vector_grid_rho_and_release() {
    let (d, sensitivity, sigma) = (100usize, 2.0, 30.0);
    let mechanism = DiscreteGaussianVector::new(d, sensitivity, sigma).unwrap();
    let g = mechanism.grid();
    // The grid: a power of two at most max(Δ·2⁻²⁰/√d, σ·2⁻²⁹), above half of it.
    let target = (sensitivity * 2f64.powi(-20) / 10.0).max(sigma * 2f64.powi(-29));
    assert!(g <= target && 2.0 * g > target && g.log2().fract() == 0.0);
    // ρ = (Δ + g√d)²/(2σ²), rounded up, and hardly above Δ²/(2σ²).
    let spec = (sensitivity + g * 10.0).powi(2) / (2.0 * sigma * sigma);
    let rho = mechanism.zcdp().rho();
    assert!(
        rho >= spec && rho <= spec * (1.0 + 1e-12),
        "{rho} vs {spec}"
    );
    assert!(rho <= sensitivity.powi(2) / (2.0 * sigma * sigma) * (1.0 + 1e-5));
    // Releases are multiples of g, centred on the input, with variance σ².
    let mut rng = InsecureSeededRng::new(8);
    let values: Vec<f64> = (0..d).map(|i| i as f64 * 0.123_456_789).collect();
    let mut residuals = Vec::new();
    for _ in 0..200 {
        let out = mechanism.release(&values, &mut rng).unwrap();
        for (o, v) in out.iter().zip(&values) {
            assert_eq!((o / g).fract(), 0.0);
            residuals.push((o - v) / sigma);
        }
    }
    use statrs::distribution::{ContinuousCDF, Normal};
    let test = stats::ks_test(&residuals, |x| Normal::standard().cdf(x), FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// Mutation check: the same KS test fails noise of σ/√2 (half the variance).
#[test]
fn vector_release_test_catches_half_the_variance() {
    let mechanism = DiscreteGaussianVector::new(100, 2.0, 30.0 / 2f64.sqrt()).unwrap();
    let mut rng = InsecureSeededRng::new(8);
    let values = vec![0.0; 100];
    let residuals: Vec<f64> = (0..200)
        .flat_map(|_| mechanism.release(&values, &mut rng).unwrap())
        .map(|o| o / 30.0)
        .collect();
    use statrs::distribution::{ContinuousCDF, Normal};
    let test = stats::ks_test(&residuals, |x| Normal::standard().cdf(x), FALSE_ALARM_RATE);
    assert!(!test.passes(), "{test:?}");
}

#[test]
fn vector_refuses_bad_input_before_drawing() {
    let mechanism = DiscreteGaussianVector::new(3, 1.0, 1.0).unwrap();
    let mut rng = InsecureSeededRng::new(1);
    assert!(matches!(
        mechanism.release(&[0.0, 1.0], &mut rng),
        Err(NoiseError::DimensionMismatch {
            expected: 3,
            found: 2
        })
    ));
    assert!(matches!(
        mechanism.release(&[0.0, f64::NAN, 1.0], &mut rng),
        Err(NoiseError::NonFiniteValue { index: 1, .. })
    ));
    assert!(matches!(
        DiscreteGaussianVector::new(0, 1.0, 1.0),
        Err(NoiseError::ZeroDimension)
    ));
    assert!(matches!(
        DiscreteGaussianVector::new(3, 1.0, 0.0),
        Err(NoiseError::InvalidScale(_))
    ));
    assert!(matches!(
        DiscreteGaussianVector::new(3, f64::NAN, 1.0),
        Err(NoiseError::InvalidSensitivity(_))
    ));
    // Huge values are clamped, not refused.
    assert!(mechanism.release(&[1e300, -1e300, 0.0], &mut rng).is_ok());
}
