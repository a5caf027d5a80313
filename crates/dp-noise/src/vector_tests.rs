//! Statistical tests of the vector noise (docs/src/reference/privacy-testing.md §1), each with a mutation check
//! that runs the same test on a deliberately broken sampler and asserts that it fails.

use rand_distr::{Distribution, StandardNormal};
use statrs::distribution::{ContinuousCDF, Gamma as GammaLaw, StudentsT};

use super::*;
use crate::InsecureSeededRng;
use crate::exact::exact_comparison;
use crate::stats::{self, FALSE_ALARM_RATE, KsTest};

/// The rate used throughout: not 1, so that a scale/rate swap (β ↔ 1/β) changes the law.
const BETA: f64 = 2.5;

/// How a test sampler deviates from the production one.
#[derive(Debug, Clone, Copy)]
enum Sampler {
    Production,
    /// Gamma(d, scale β): the rand_distr/statrs parameter confusion.
    ScaleRateSwapped,
    /// Gamma(d − 1, 1/β): the polar-coordinates off-by-one.
    ShapeMinusOne,
    /// β doubled: half the noise, i.e. ε claimed half of what is spent.
    HalvedNoise,
    /// Direction uniform in the cube [−1, 1]^d, then normalized: not uniform on the sphere.
    CubeDirection,
    /// Direction with every coordinate made positive.
    PositiveOrthantDirection,
}

fn draw(sampler: Sampler, dim: usize, rng: &mut InsecureSeededRng) -> Vec<f64> {
    let d = dim as f64;
    let noise = GammaNormVector::new(dim, BETA).unwrap();
    let mut out = vec![0.0; dim];
    match sampler {
        Sampler::Production => noise.sample_into(&mut out, rng).unwrap(),
        Sampler::ScaleRateSwapped => fill_norm_times_direction(&mut out, d, BETA, rng),
        Sampler::ShapeMinusOne => fill_norm_times_direction(&mut out, d - 1.0, 1.0 / BETA, rng),
        Sampler::HalvedNoise => fill_norm_times_direction(&mut out, d, 0.5 / BETA, rng),
        Sampler::CubeDirection | Sampler::PositiveOrthantDirection => {
            fill_norm_times_direction(&mut out, d, 1.0 / BETA, rng);
            let norm = out.iter().map(|x| x * x).sum::<f64>().sqrt();
            let mut direction: Vec<f64> = if matches!(sampler, Sampler::CubeDirection) {
                (0..dim)
                    .map(|_| 2.0 * rand::RngExt::random::<f64>(rng) - 1.0)
                    .collect()
            } else {
                out.iter().map(|x| x.abs()).collect()
            };
            let length = direction.iter().map(|x| x * x).sum::<f64>().sqrt();
            direction.iter_mut().for_each(|x| *x *= norm / length);
            out = direction;
        }
    }
    out
}

fn draws(sampler: Sampler, dim: usize, n: usize, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = InsecureSeededRng::new(seed);
    (0..n).map(|_| draw(sampler, dim, &mut rng)).collect()
}

/// Fewer draws in very high dimension: each costs d Gaussians.
fn sample_size(dim: usize) -> usize {
    match dim {
        0..=10 => 20_000,
        11..=5_000 => 5_000,
        _ => 1_500,
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// KS of ‖b‖ against Gamma(d, scale 1/β) — statrs takes the rate, β.
fn norm_test(sampler: Sampler, dim: usize, seed: u64) -> KsTest {
    let law = GammaLaw::new(dim as f64, BETA).unwrap();
    let norms: Vec<f64> = draws(sampler, dim, sample_size(dim), seed)
        .iter()
        .map(|b| norm(b))
        .collect();
    stats::ks_test(&norms, |r| law.cdf(r), FALSE_ALARM_RATE)
}

/// For u = b/‖b‖, t = sqrt(d−1)·u₁/sqrt(1−u₁²) is Student-t with d−1 degrees of freedom.
fn direction_test(sampler: Sampler, dim: usize, seed: u64) -> KsTest {
    let law = StudentsT::new(0.0, 1.0, (dim - 1) as f64).unwrap();
    let ts: Vec<f64> = draws(sampler, dim, sample_size(dim), seed)
        .iter()
        .map(|b| {
            let u1 = b[0] / norm(b);
            ((dim - 1) as f64).sqrt() * u1 / (1.0 - u1 * u1).sqrt()
        })
        .collect();
    stats::ks_test(&ts, |t| law.cdf(t), FALSE_ALARM_RATE)
}

/// At d = 3 the marginal bᵀe along a fixed unit e has density (β/4)(1+β|t|)e^{−β|t|},
/// CDF 1 − ¼(2+βt)e^{−βt} for t ≥ 0: one test of norm, direction and their independence.
fn marginal_cdf_d3(t: f64) -> f64 {
    let upper = 0.25 * (2.0 + BETA * t.abs()) * (-BETA * t.abs()).exp();
    if t >= 0.0 { 1.0 - upper } else { upper }
}

fn marginal_test_d3(sampler: Sampler, seed: u64) -> KsTest {
    let e = [1.0 / 3f64.sqrt(); 3];
    let projections: Vec<f64> = draws(sampler, 3, 20_000, seed)
        .iter()
        .map(|b| b.iter().zip(&e).map(|(x, y)| x * y).sum())
        .collect();
    stats::ks_test(&projections, marginal_cdf_d3, FALSE_ALARM_RATE)
}

/// Chi-square of the 8 sign patterns (orthants) at d = 3: each has probability 1/8.
fn orthant_test(sampler: Sampler, seed: u64) -> stats::ChiSquareTest {
    let n = 16_000;
    let mut observed = [0u64; 8];
    for b in draws(sampler, 3, n, seed) {
        let cell = b
            .iter()
            .enumerate()
            .map(|(i, &x)| usize::from(x > 0.0) << i)
            .sum::<usize>();
        observed[cell] += 1;
    }
    stats::chi_square_test(&observed, &[n as f64 / 8.0; 8], FALSE_ALARM_RATE)
}

const DIMS: [usize; 6] = [1, 2, 3, 5, 1000, 100_000];

#[test]
fn norm_is_gamma_d_scale_inverse_beta() {
    for (i, dim) in DIMS.into_iter().enumerate() {
        let test = norm_test(Sampler::Production, dim, 1000 + i as u64);
        assert!(test.passes(), "d = {dim}: {test:?}");
    }
}

#[test]
fn norm_test_catches_scale_rate_swap_at_every_dimension() {
    for dim in DIMS {
        let test = norm_test(Sampler::ScaleRateSwapped, dim, 2000);
        assert!(!test.passes(), "d = {dim}: {test:?}");
    }
}

/// The off-by-one in the shape is obvious at small d (and invisible at d ≥ 1000, which is
/// why the small dimensions are in the matrix).
#[test]
fn norm_test_catches_shape_minus_one_at_small_dimension() {
    for dim in [2, 3, 5] {
        let test = norm_test(Sampler::ShapeMinusOne, dim, 3000);
        assert!(!test.passes(), "d = {dim}: {test:?}");
    }
}

#[test]
fn norm_test_catches_halved_noise() {
    for dim in [1, 3, 1000] {
        let test = norm_test(Sampler::HalvedNoise, dim, 4000);
        assert!(!test.passes(), "d = {dim}: {test:?}");
    }
}

/// In one dimension the noise is Laplace with scale 1/β.
fn laplace_test_d1(sampler: Sampler) -> KsTest {
    let xs: Vec<f64> = draws(sampler, 1, 20_000, 5).iter().map(|b| b[0]).collect();
    let laplace_cdf = |x: f64| {
        if x < 0.0 {
            0.5 * (BETA * x).exp()
        } else {
            1.0 - 0.5 * (-BETA * x).exp()
        }
    };
    stats::ks_test(&xs, laplace_cdf, FALSE_ALARM_RATE)
}

#[test]
fn one_dimensional_noise_is_laplace() {
    let test = laplace_test_d1(Sampler::Production);
    assert!(test.passes(), "{test:?}");
}

#[test]
fn one_dimensional_laplace_test_catches_halved_noise_and_swapped_scale() {
    for sampler in [Sampler::HalvedNoise, Sampler::ScaleRateSwapped] {
        assert!(!laplace_test_d1(sampler).passes(), "{sampler:?}");
    }
}

#[test]
fn direction_first_coordinate_is_student_t() {
    for (i, dim) in [2, 3, 5, 1000, 100_000].into_iter().enumerate() {
        let test = direction_test(Sampler::Production, dim, 5000 + i as u64);
        assert!(test.passes(), "d = {dim}: {test:?}");
    }
}

#[test]
fn direction_test_catches_cube_direction() {
    for dim in [2, 3, 1000] {
        let test = direction_test(Sampler::CubeDirection, dim, 6000);
        assert!(!test.passes(), "d = {dim}: {test:?}");
    }
}

#[test]
fn sign_patterns_are_uniform() {
    let test = orthant_test(Sampler::Production, 7000);
    assert!(test.passes(), "{test:?}");
}

#[test]
fn sign_test_catches_one_sided_direction() {
    let test = orthant_test(Sampler::PositiveOrthantDirection, 7001);
    assert!(!test.passes(), "{test:?}");
}

#[test]
fn d3_marginal_matches_closed_form() {
    let test = marginal_test_d3(Sampler::Production, 8000);
    assert!(test.passes(), "{test:?}");
}

#[test]
fn d3_marginal_test_catches_every_mutation() {
    for sampler in [
        Sampler::ShapeMinusOne,
        Sampler::ScaleRateSwapped,
        Sampler::HalvedNoise,
    ] {
        let test = marginal_test_d3(sampler, 8001);
        assert!(!test.passes(), "{sampler:?}: {test:?}");
    }
}

/// Cross-check with the gamma-free construction: for G ~ N(0, I_2d), ‖G‖²/(2β) has the
/// Gamma(d, 1/β) law, independently of rand_distr's Gamma sampler and of statrs' CDF.
#[test]
fn norm_agrees_with_gamma_free_construction() {
    for dim in [1, 3, 50] {
        let mut rng = InsecureSeededRng::new(9000 + dim as u64);
        let gamma_free: Vec<f64> = (0..20_000)
            .map(|_| {
                let s: f64 = (0..2 * dim)
                    .map(|_| {
                        let g: f64 = StandardNormal.sample(&mut rng);
                        g * g
                    })
                    .sum();
                s / (2.0 * BETA)
            })
            .collect();
        let ours: Vec<f64> = draws(Sampler::Production, dim, 20_000, 9100 + dim as u64)
            .iter()
            .map(|b| norm(b))
            .collect();
        let test = stats::ks_test_two_sample(&ours, &gamma_free, FALSE_ALARM_RATE);
        assert!(test.passes(), "d = {dim}: {test:?}");
        let swapped: Vec<f64> = draws(Sampler::ShapeMinusOne, dim.max(2), 20_000, 9200)
            .iter()
            .map(|b| norm(b))
            .collect();
        if dim > 1 {
            assert!(!stats::ks_test_two_sample(&swapped, &gamma_free, FALSE_ALARM_RATE).passes());
        }
    }
}

/// The reference CDF itself at shape 10^5: against the Wilson–Hilferty approximation,
/// which is accurate to ~1e-6 at this shape.
#[test]
fn reference_gamma_cdf_is_accurate_at_large_shape() {
    let shape = 100_000.0;
    let law = GammaLaw::new(shape, BETA).unwrap();
    let standard_normal = statrs::distribution::Normal::new(0.0, 1.0).unwrap();
    for z in [-3.0, -1.0, 0.0, 0.5, 2.0] {
        let x = (shape + z * shape.sqrt()) / BETA;
        let w = ((x * BETA / shape).cbrt() - (1.0 - 1.0 / (9.0 * shape)))
            / (1.0 / (9.0 * shape)).sqrt();
        assert!(
            (law.cdf(x) - standard_normal.cdf(w)).abs() < 1e-4,
            "z = {z}"
        );
    }
}

fn beta_cases() -> Vec<(f64, f64)> {
    use rand::RngExt;
    let mut rng = InsecureSeededRng::new(33);
    (0..5000)
        .map(|_| {
            (
                10f64.powf(rng.random_range(-3.0..1.0)),
                10f64.powf(rng.random_range(-6.0..1.0)),
            )
        })
        .collect()
}

/// β·Δ ≤ ε exactly: the noise never spends more than the ε asked for.
#[test]
fn from_epsilon_rounds_beta_down_exactly() {
    for (epsilon, sensitivity) in beta_cases() {
        let noise = GammaNormVector::from_epsilon(10, epsilon, sensitivity).unwrap();
        let beta = noise.beta();
        assert!(exact_comparison::product_le(
            1,
            &[beta, sensitivity],
            1,
            &[epsilon]
        ));
        assert!(beta >= epsilon / sensitivity * (1.0 - 1e-15));
        let claimed = noise.epsilon_for_sensitivity(sensitivity);
        assert!(exact_comparison::product_le(
            1,
            &[beta, sensitivity],
            1,
            &[claimed]
        ));
    }
}

/// Mutation check: β = fl(ε/Δ) without rounding down exceeds ε/Δ in many cases.
#[test]
fn exact_beta_check_catches_round_to_nearest() {
    let violations = beta_cases()
        .into_iter()
        .filter(|&(epsilon, sensitivity)| {
            !exact_comparison::product_le(1, &[epsilon / sensitivity, sensitivity], 1, &[epsilon])
        })
        .count();
    assert!(violations > 100, "{violations}");
}

#[test]
fn from_epsilon_reports_its_parameters() {
    let noise = GammaNormVector::from_epsilon(10, 0.1, 0.2).unwrap();
    assert!((noise.beta() - 0.5).abs() < 1e-15);
    assert!((noise.expected_norm() - 10.0 / noise.beta()).abs() < 1e-12);
}

#[test]
fn rejects_zero_dimension() {
    assert_eq!(GammaNormVector::new(0, 1.0), Err(NoiseError::ZeroDimension));
    assert_eq!(
        GammaNormVector::from_epsilon(0, 1.0, 1.0),
        Err(NoiseError::ZeroDimension)
    );
}

#[test]
fn rejects_invalid_beta() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-320] {
        assert!(matches!(
            GammaNormVector::new(3, bad),
            Err(NoiseError::InvalidBeta(_))
        ));
    }
    assert!(matches!(
        GammaNormVector::from_epsilon(3, 1e-310, 1e10),
        Err(NoiseError::InvalidBeta(_))
    ));
}

/// A rate whose norm could overflow is refused (1e-308 in d = 1 once drew ∞ in 1 of 20),
/// and at the smallest rate accepted in d = 1 every draw is finite.
#[test]
fn rejects_rates_whose_norm_could_overflow() {
    for beta in [1e-308, 1e-307] {
        assert!(matches!(
            GammaNormVector::new(1, beta),
            Err(NoiseError::InvalidBeta(_))
        ));
    }
    let smallest = (1.0 + 80f64.sqrt() + 40.0) / f64::MAX;
    let noise = GammaNormVector::new(1, smallest * 1.001).unwrap();
    let mut rng = InsecureSeededRng::new(8);
    for _ in 0..2000 {
        assert!(noise.sample(&mut rng).iter().all(|x| x.is_finite()));
    }
}

#[test]
fn rejects_invalid_epsilon_and_sensitivity() {
    for bad in [0.0, -0.5, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            GammaNormVector::from_epsilon(3, bad, 1.0),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert!(matches!(
            GammaNormVector::from_epsilon(3, 1.0, bad),
            Err(NoiseError::InvalidSensitivity(_))
        ));
    }
}

#[test]
fn rejects_wrong_buffer_length() {
    let noise = GammaNormVector::new(4, 1.0).unwrap();
    let mut rng = InsecureSeededRng::new(1);
    assert_eq!(
        noise.sample_into(&mut [0.0; 3], &mut rng),
        Err(NoiseError::DimensionMismatch {
            expected: 4,
            found: 3
        })
    );
}
