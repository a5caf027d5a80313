//! Property tests of every public constructor on hostile input (issue #9): no panic, no
//! allocation sized by a bad count, no hang, and every error names the offending value.

use proptest::prelude::*;

use crate::{
    DiscreteLaplace, ExponentialMechanism, GammaNormVector, InsecureSeededRng, Laplace, NoiseError,
    PermuteAndFlip, PrivacyBudget,
};

fn hostile_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1e-3..1e3f64,
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE / 4.0),
        1 => Just(1e-300),
        1 => Just(1e300),
        1 => any::<f64>(),
    ]
}

/// The message names the error's values in a short form.
fn assert_names_its_values(err: &NoiseError) {
    let message = err.to_string();
    assert!(message.len() < 300, "message too long: {message}");
    let expected: Vec<String> = match err {
        NoiseError::InvalidEpsilon(v)
        | NoiseError::InvalidSensitivity(v)
        | NoiseError::InvalidBeta(v)
        | NoiseError::InvalidScale(v) => vec![format!("{v:?}")],
        NoiseError::DimensionTooLarge { dim, max } => vec![dim.to_string(), max.to_string()],
        NoiseError::NonFiniteValue { index, value } => {
            vec![index.to_string(), format!("{value:?}")]
        }
        NoiseError::BudgetExceeded { requested, .. } => vec![format!("{requested:?}")],
        _ => vec![],
    };
    for part in expected {
        assert!(message.contains(&part), "{message:?} does not name {part}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn vector_noise_constructors_check_everything(
        dim in prop_oneof![0usize..8, Just(crate::MAX_DIMENSION + 1), Just(usize::MAX), any::<usize>()],
        beta in hostile_f64(),
        epsilon in hostile_f64(),
        sensitivity in hostile_f64(),
    ) {
        for made in [GammaNormVector::new(dim, beta), GammaNormVector::from_epsilon(dim, epsilon, sensitivity)] {
            match made {
                Ok(noise) => {
                    prop_assert!(noise.dim() >= 1 && noise.dim() <= crate::MAX_DIMENSION);
                    prop_assert!(noise.beta() > 0.0 && noise.expected_norm().is_finite());
                    if noise.dim() <= 8 {
                        let drawn = noise.sample(&mut InsecureSeededRng::new(1));
                        prop_assert!(drawn.iter().all(|v| v.is_finite()) || beta < 1e-290);
                    }
                }
                Err(err) => assert_names_its_values(&err),
            }
        }
    }

    #[test]
    fn scalar_mechanism_constructors_check_everything(
        epsilon in hostile_f64(),
        sensitivity in hostile_f64(),
        value in hostile_f64(),
        utilities in prop::collection::vec(hostile_f64(), 0..5),
    ) {
        match Laplace::new(epsilon, sensitivity) {
            Ok(laplace) => match laplace.release(value, &mut InsecureSeededRng::new(2)) {
                Ok(released) => prop_assert!(released.is_finite()),
                Err(err) => assert_names_its_values(&err),
            },
            Err(err) => assert_names_its_values(&err),
        }
        match ExponentialMechanism::new(epsilon, sensitivity) {
            Ok(mechanism) => match mechanism.select(&utilities, &mut InsecureSeededRng::new(3)) {
                Ok(index) => prop_assert!(index < utilities.len()),
                Err(err) => assert_names_its_values(&err),
            },
            Err(err) => assert_names_its_values(&err),
        }
        if let Err(err) = PermuteAndFlip::new(epsilon, sensitivity) {
            assert_names_its_values(&err);
        }
        if let Err(err) = DiscreteLaplace::with_scale_at_least(sensitivity) {
            assert_names_its_values(&err);
        }
    }

    #[test]
    fn budgets_check_everything_and_split_in_bounded_time(
        limit in hostile_f64(),
        spends in prop::collection::vec(hostile_f64(), 0..6),
        shares in prop_oneof![0u32..10, Just(u32::MAX), any::<u32>()],
    ) {
        match PrivacyBudget::new(limit) {
            Ok(mut budget) => {
                for epsilon in spends {
                    if let Err(err) = budget.spend("query", epsilon) {
                        assert_names_its_values(&err);
                    }
                    prop_assert!(budget.spent() <= budget.limit());
                }
                if let Some(share) = budget.even_share(shares) {
                    prop_assert!(share > 0.0 && share * f64::from(shares) <= budget.remaining() * (1.0 + 1e-9));
                }
            }
            Err(err) => assert_names_its_values(&err),
        }
    }
}

#[test]
fn rejects_dimensions_that_would_exhaust_memory_before_allocating() {
    for dim in [usize::MAX, crate::MAX_DIMENSION + 1] {
        let err = GammaNormVector::new(dim, 1.0).unwrap_err();
        assert_eq!(
            err,
            NoiseError::DimensionTooLarge {
                dim,
                max: crate::MAX_DIMENSION
            }
        );
    }
}
