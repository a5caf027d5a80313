//! Statistical tests of the group-norm noise (docs/src/reference/privacy-testing.md §1), each with a mutation
//! check that runs the same test on a deliberately broken sampler and asserts that it fails.

use statrs::distribution::{Beta as BetaLaw, ContinuousCDF, Gamma as GammaLaw};

use super::*;
use crate::InsecureSeededRng;
use crate::stats::{self, FALSE_ALARM_RATE, KsTest};

/// Not 1, so that a scale/rate swap changes the law.
const BETA: f64 = 2.5;
const DRAWS: usize = 20_000;
const EACH: Signs = Signs::PerCoordinate;

#[derive(Debug, Clone, Copy)]
enum Sampler {
    Production,
    /// Gamma(d − 1, 1/β): the polar-coordinates off-by-one.
    ShapeMinusOne,
    /// β doubled: half the noise.
    HalvedNoise,
    /// Every group's share from χ(1): ignores the group sizes in step 2.
    SharesIgnoreSizes,
    /// The Euclidean Gamma-norm noise at the same β: the wrong norm altogether.
    Euclidean,
    /// One sign per group instead of per coordinate: ∞-DP (the support depends on which
    /// level of a group is set).
    SignPerGroup,
}

fn groups(group_of: &[usize]) -> FeatureGroups {
    FeatureGroups::new(group_of).unwrap()
}

fn draws(sampler: Sampler, groups: &FeatureGroups, seed: u64) -> Vec<Vec<f64>> {
    let mut rng = InsecureSeededRng::new(seed);
    let d = groups.dim() as f64;
    (0..DRAWS)
        .map(|_| {
            let mut out = vec![0.0; groups.dim()];
            match sampler {
                Sampler::Production => {
                    out = GroupNormVector::new(groups.clone(), BETA)
                        .unwrap()
                        .sample(&mut rng);
                }
                Sampler::ShapeMinusOne => {
                    fill_group_noise(&mut out, groups, d - 1.0, 1.0 / BETA, |s| s, EACH, &mut rng)
                }
                Sampler::HalvedNoise => {
                    fill_group_noise(&mut out, groups, d, 0.5 / BETA, |s| s, EACH, &mut rng)
                }
                Sampler::SharesIgnoreSizes => {
                    fill_group_noise(&mut out, groups, d, 1.0 / BETA, |_| 1, EACH, &mut rng)
                }
                Sampler::SignPerGroup => fill_group_noise(
                    &mut out,
                    groups,
                    d,
                    1.0 / BETA,
                    |s| s,
                    Signs::PerGroup,
                    &mut rng,
                ),
                Sampler::Euclidean => {
                    out = crate::GammaNormVector::new(groups.dim(), BETA)
                        .unwrap()
                        .sample(&mut rng);
                }
            }
            out
        })
        .collect()
}

/// KS of ‖b‖_G against Gamma(d, scale 1/β) (statrs takes the rate).
fn norm_test(sampler: Sampler, groups: &FeatureGroups, seed: u64) -> KsTest {
    let law = GammaLaw::new(groups.dim() as f64, BETA).unwrap();
    let norms: Vec<f64> = draws(sampler, groups, seed)
        .iter()
        .map(|b| groups.norm(b).unwrap())
        .collect();
    stats::ks_test(&norms, |r| law.cdf(r), FALSE_ALARM_RATE)
}

/// One group of four: the density is Π exp(−β|b_j|), so every coordinate is Laplace with
/// scale 1/β. Tests steps 1 and 3 together, on the first and last coordinates.
fn laplace_coordinate_test(sampler: Sampler, seed: u64) -> [KsTest; 2] {
    let one_group = groups(&[0, 0, 0, 0]);
    let samples = draws(sampler, &one_group, seed);
    let laplace_cdf = |t: f64| {
        let tail = 0.5 * (-BETA * t.abs()).exp();
        if t >= 0.0 { 1.0 - tail } else { tail }
    };
    [0, 3].map(|j| {
        let coordinate: Vec<f64> = samples.iter().map(|b| b[j]).collect();
        stats::ks_test(&coordinate, laplace_cdf, FALSE_ALARM_RATE)
    })
}

/// Groups of sizes 2 and 1: the first group's share of the norm, `(a₁/‖b‖_G)²`, is
/// `ξ₁²/(ξ₁² + ξ₂²)` with ξ² chi-square of 2 and 1 degrees: Beta(1, ½). Tests step 2.
fn share_test(sampler: Sampler, seed: u64) -> KsTest {
    let mixed = groups(&[0, 0, 1]);
    let law = BetaLaw::new(1.0, 0.5).unwrap();
    let shares: Vec<f64> = draws(sampler, &mixed, seed)
        .iter()
        .map(|b| {
            let first = b[0].abs() + b[1].abs();
            (first / mixed.norm(b).unwrap()).powi(2)
        })
        .collect();
    stats::ks_test(&shares, |x| law.cdf(x), FALSE_ALARM_RATE)
}

/// Adult's attribute structure after one-hot encoding (105 columns, 14 groups).
fn adult_groups() -> FeatureGroups {
    let sizes = [1, 8, 1, 16, 1, 7, 14, 6, 5, 2, 1, 1, 1, 41];
    let group_of: Vec<usize> = sizes
        .iter()
        .enumerate()
        .flat_map(|(g, &s)| std::iter::repeat_n(g, s))
        .collect();
    groups(&group_of)
}

#[test]
fn the_group_norm_is_gamma_d_scale_inverse_beta() {
    let cases = [
        groups(&[0]),
        groups(&[0, 1]),
        groups(&[0, 0, 1]),
        groups(&[0, 0, 1, 1, 2]),
        groups(&[0, 1, 2]),
        groups(&[0, 0, 0, 0]),
        adult_groups(),
    ];
    for (i, g) in cases.iter().enumerate() {
        let test = norm_test(Sampler::Production, g, 10 + i as u64);
        assert!(
            test.passes(),
            "{} groups of d = {}: {test:?}",
            g.count(),
            g.dim()
        );
    }
}

#[test]
fn the_norm_test_catches_a_shape_off_by_one_and_halved_noise() {
    let small = groups(&[0, 0, 1]);
    assert!(!norm_test(Sampler::ShapeMinusOne, &small, 20).passes());
    assert!(!norm_test(Sampler::HalvedNoise, &small, 21).passes());
    assert!(!norm_test(Sampler::HalvedNoise, &adult_groups(), 22).passes());
}

#[test]
fn one_group_gives_independent_laplace_coordinates() {
    for test in laplace_coordinate_test(Sampler::Production, 30) {
        assert!(test.passes(), "{test:?}");
    }
}

#[test]
fn the_laplace_test_catches_euclidean_noise_and_halved_noise() {
    for sampler in [Sampler::Euclidean, Sampler::HalvedNoise] {
        let [first, last] = laplace_coordinate_test(sampler, 31);
        assert!(!first.passes() || !last.passes(), "{sampler:?} passed");
    }
}

#[test]
fn group_shares_follow_the_group_sizes() {
    let test = share_test(Sampler::Production, 40);
    assert!(test.passes(), "{test:?}");
}

#[test]
fn the_share_test_catches_shares_that_ignore_group_sizes() {
    assert!(!share_test(Sampler::SharesIgnoreSizes, 41).passes());
}

/// With singleton groups the law is the Euclidean Gamma-norm noise: at d = 3 its marginal
/// along (1,1,1)/√3 has the CDF 1 − ¼(2 + βt)e^{−βt} (t ≥ 0) of docs/src/reference/privacy-testing.md §1.
#[test]
fn singleton_groups_give_the_euclidean_law() {
    let singletons = FeatureGroups::singletons(3).unwrap();
    let marginal_cdf = |t: f64| {
        let upper = 0.25 * (2.0 + BETA * t.abs()) * (-BETA * t.abs()).exp();
        if t >= 0.0 { 1.0 - upper } else { upper }
    };
    let projections: Vec<f64> = draws(Sampler::Production, &singletons, 50)
        .iter()
        .map(|b| b.iter().sum::<f64>() / 3f64.sqrt())
        .collect();
    let test = stats::ks_test(&projections, marginal_cdf, FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// Chi-square of the 8 sign patterns inside one group of three: each has probability 1/8.
fn sign_pattern_test(sampler: Sampler, seed: u64) -> stats::ChiSquareTest {
    let mut observed = [0u64; 8];
    for b in draws(sampler, &groups(&[0, 0, 0]), seed) {
        let cell: usize = (0..3).map(|i| usize::from(b[i] > 0.0) << i).sum();
        observed[cell] += 1;
    }
    stats::chi_square_test(&observed, &[DRAWS as f64 / 8.0; 8], FALSE_ALARM_RATE)
}

#[test]
fn sign_patterns_inside_a_group_are_uniform() {
    let test = sign_pattern_test(Sampler::Production, 60);
    assert!(test.passes(), "{test:?}");
}

#[test]
fn the_sign_test_catches_one_sign_per_group() {
    assert!(!sign_pattern_test(Sampler::SignPerGroup, 61).passes());
}

#[test]
fn the_norm_is_the_l2_norm_of_the_groups_l1_norms() {
    let g = groups(&[0, 1, 0, 1, 2]);
    let v = [3.0, -1.0, -1.0, 2.0, 4.0];
    // Groups {0, 2}: 4; {1, 3}: 3; {4}: 4.
    assert_eq!(g.norm(&v).unwrap(), (16.0f64 + 9.0 + 16.0).sqrt());
    assert!(matches!(
        g.norm(&[1.0]),
        Err(NoiseError::DimensionMismatch {
            expected: 5,
            found: 1
        })
    ));
    let sparse = [(3, 2.0), (0, 3.0), (4, 4.0), (2, -1.0), (1, -1.0)];
    assert_eq!(g.sparse_norm(&sparse).unwrap(), g.norm(&v).unwrap());
    assert!(g.sparse_norm(&[(5, 1.0)]).is_err());
    assert_eq!(g.sparse_norm(&[]).unwrap(), 0.0);
    // One non-zero per group: the Euclidean norm.
    let one_hot = [0.6, 0.0, 0.0, 0.0, 0.8];
    assert!((g.norm(&one_hot).unwrap() - 1.0).abs() < 1e-15);
}

#[test]
fn invalid_partitions_and_rates_are_refused() {
    assert!(matches!(
        FeatureGroups::new(&[]),
        Err(NoiseError::ZeroDimension)
    ));
    assert!(matches!(
        FeatureGroups::new(&[0, 2, 2]),
        Err(NoiseError::InvalidGroups(_))
    ));
    for bad in [[0, 5], [usize::MAX, 0]] {
        assert!(matches!(
            FeatureGroups::new(&bad),
            Err(NoiseError::InvalidGroups(_))
        ));
    }
    for beta in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-320] {
        assert!(matches!(
            GroupNormVector::new(groups(&[0, 0]), beta),
            Err(NoiseError::InvalidBeta(_))
        ));
    }
    let noise = GroupNormVector::from_epsilon(groups(&[0, 0]), 1.0, 2.0).unwrap();
    assert!(noise.beta() < 0.5 && noise.beta() == 0.5f64.next_down());
    assert!(GroupNormVector::from_epsilon(groups(&[0]), 0.0, 2.0).is_err());
}

/// Runs `f` on its own thread and fails if it panics or does not finish within 30 s: a
/// guard against hangs and loops sized by a bad count, generous enough for a debug build on
/// a loaded machine (2 s timed out there once; speed is measured by benchmarks, not here).
fn within_limit<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    dp_test_support::within(std::time::Duration::from_secs(30), f)
}

/// Sizes beyond the cap are refused before anything is allocated: `usize::MAX` panicked
/// (capacity overflow) and 2²⁶ + 1 allocated 512 MiB before the old code refused it.
#[test]
fn rejects_group_sizes_beyond_the_cap_before_allocating() {
    for dim in [
        usize::MAX,
        crate::MAX_DIMENSION + 1,
        MAX_GROUPED_DIMENSION + 1,
        1 << 40,
    ] {
        let err = within_limit(move || FeatureGroups::singletons(dim)).unwrap_err();
        assert_eq!(
            err,
            NoiseError::DimensionTooLarge {
                dim,
                max: MAX_GROUPED_DIMENSION
            }
        );
        assert!(err.to_string().contains(&dim.to_string()));
    }
    assert_eq!(
        FeatureGroups::singletons(0).unwrap_err(),
        NoiseError::ZeroDimension
    );
    // At the cap: built (three words per coordinate).
    let at_cap = within_limit(|| FeatureGroups::singletons(MAX_GROUPED_DIMENSION)).unwrap();
    assert_eq!(at_cap.count(), MAX_GROUPED_DIMENSION);
    assert_eq!(
        at_cap.group(MAX_GROUPED_DIMENSION - 1),
        MAX_GROUPED_DIMENSION - 1
    );
}

/// An out-of-range coordinate is named as a coordinate (not a length, and without the
/// `j + 1` that wrapped at `usize::MAX`), a non-finite value is refused rather than giving
/// a NaN norm, and a repeated coordinate is refused rather than counted twice.
#[test]
fn rejects_bad_sparse_entries_naming_them() {
    let g = groups(&[0, 1, 0]);
    assert_eq!(
        g.sparse_norm(&[(0, 0.5), (usize::MAX, 1.0)]).unwrap_err(),
        NoiseError::IndexOutOfRange {
            position: 1,
            index: usize::MAX,
            len: 3
        }
    );
    let message = g.sparse_norm(&[(3, 1.0)]).unwrap_err().to_string();
    assert!(
        message.contains("coordinate 3") && !message.contains("length"),
        "{message}"
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = g.sparse_norm(&[(1, 0.5), (2, bad)]).unwrap_err();
        assert!(
            matches!(err, NoiseError::NonFiniteValue { index: 1, .. }),
            "{err:?}"
        );
        assert!(matches!(
            g.norm(&[0.5, bad, 0.0]),
            Err(NoiseError::NonFiniteValue { index: 1, .. })
        ));
    }
    assert_eq!(
        g.sparse_norm(&[(2, 0.5), (0, 0.1), (2, 0.5)]).unwrap_err(),
        NoiseError::RepeatedIndex {
            position: 2,
            index: 2
        }
    );
    // Finite entries whose squares overflow: the norm, not ∞ or NaN.
    let huge = g.sparse_norm(&[(0, 1e300), (1, 1e300)]).unwrap();
    assert!((huge / (2f64.sqrt() * 1e300) - 1.0).abs() < 1e-15, "{huge}");
    assert_eq!(g.norm(&[1e300, 1e300, 0.0]).unwrap(), huge);
}

mod properties {
    use proptest::prelude::*;

    use super::{FeatureGroups, GroupNormVector, NoiseError, within_limit};
    use crate::InsecureSeededRng;

    fn hostile_f64() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => -2.0..2.0f64,
            1 => Just(0.0),
            1 => Just(f64::NAN),
            1 => Just(f64::INFINITY),
            1 => Just(f64::NEG_INFINITY),
            1 => Just(f64::MAX),
            1 => Just(f64::MIN_POSITIVE / 4.0),
            1 => Just(1e-300),
            1 => Just(1e300),
            1 => any::<f64>(),
        ]
    }

    fn hostile_usize() -> impl Strategy<Value = usize> {
        prop_oneof![
            4 => 0usize..6,
            1 => Just(usize::MAX),
            1 => Just(super::MAX_GROUPED_DIMENSION + 1),
            1 => Just(1usize << 26),
            1 => any::<usize>(),
        ]
    }

    /// The message names the values the error carries.
    fn assert_names_its_values(err: &NoiseError) {
        let message = err.to_string();
        let expected: Vec<String> = match err {
            NoiseError::InvalidEpsilon(v)
            | NoiseError::InvalidSensitivity(v)
            | NoiseError::InvalidBeta(v) => vec![format!("{v:?}")],
            NoiseError::DimensionTooLarge { dim, max } => vec![dim.to_string(), max.to_string()],
            NoiseError::DimensionMismatch { expected, found } => {
                vec![expected.to_string(), found.to_string()]
            }
            NoiseError::IndexOutOfRange {
                position,
                index,
                len,
            } => {
                vec![position.to_string(), index.to_string(), len.to_string()]
            }
            NoiseError::RepeatedIndex { position, index } => {
                vec![position.to_string(), index.to_string()]
            }
            NoiseError::NonFiniteValue { index, value } => {
                vec![index.to_string(), format!("{value:?}")]
            }
            NoiseError::ZeroDimension | NoiseError::InvalidGroups(_) => vec![],
            other => panic!("unexpected error from group noise: {other:?}"),
        };
        for part in expected {
            assert!(message.contains(&part), "{message:?} does not name {part}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Every constructor and norm of group noise on hostile input: Ok values the
        /// sampler then runs on, or an error naming the value; no panic, within 2 s.
        #[test]
        fn group_noise_constructors_check_everything(
            dim in hostile_usize(),
            group_of in prop::collection::vec(prop_oneof![4 => 0usize..4, 1 => any::<usize>()], 0..6),
            entries in prop::collection::vec((hostile_usize(), hostile_f64()), 0..5),
            dense in prop::collection::vec(hostile_f64(), 0..6),
            beta in hostile_f64(),
            epsilon in hostile_f64(),
            sensitivity in hostile_f64(),
        ) {
            within_limit(move || {
                for made in [FeatureGroups::singletons(dim), FeatureGroups::new(&group_of)] {
                    let groups = match made {
                        Ok(groups) => groups,
                        Err(err) => {
                            assert_names_its_values(&err);
                            continue;
                        }
                    };
                    assert!(groups.dim() >= 1 && groups.count() <= groups.dim());
                    match groups.sparse_norm(&entries) {
                        Ok(norm) => assert!(norm >= 0.0 && !norm.is_nan()),
                        Err(err) => assert_names_its_values(&err),
                    }
                    match groups.norm(&dense) {
                        Ok(norm) => assert!(norm >= 0.0 && !norm.is_nan()),
                        Err(err) => assert_names_its_values(&err),
                    }
                    if groups.dim() > 1 << 12 {
                        continue;
                    }
                    for noise in [
                        GroupNormVector::new(groups.clone(), beta),
                        GroupNormVector::from_epsilon(groups.clone(), epsilon, sensitivity),
                    ] {
                        match noise {
                            Ok(noise) => {
                                let drawn = noise.sample(&mut InsecureSeededRng::new(4));
                                assert_eq!(drawn.len(), groups.dim());
                                assert!(drawn.iter().all(|v| !v.is_nan()));
                            }
                            Err(err) => assert_names_its_values(&err),
                        }
                    }
                }
            });
        }
    }
}
