//! Issue 30's classes in the parameter types (walk, SGD, votes, line data, stable ERM), each
//! with a `rejects_*` test that fails on the code before the fix, and property tests of
//! every parameter constructor: Ok values the mechanism then runs on quickly, or an error
//! naming the offending value — never a panic or a hang. Expected values come from the
//! formulas of docs/src/reference/algorithms.md §7, not from the code under test.

use std::time::Duration;

use dp_erm::Loss;
use proptest::prelude::*;

use super::{examples, rng};
use crate::{
    LaplaceAverage, LineData, MAX_PARTS, PredictError, SgdParams, SoftMajority, StableErmParams,
    WalkParams, suggested_parts,
};

/// Runs `f` on its own thread; fails if it panics or does not finish within 10 s (a hang
/// guard, generous for debug builds on a loaded machine).
fn within_limit<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    dp_test_support::within(Duration::from_secs(10), f)
}

/// A tiny α is a valid floor: the walk's clamp (2/ε)·ln((1−α)/α) is about 1490 at ε = 1
/// and α = 5e-324, but (1−α)/α overflowed and the refusal blamed ε. Where the pair does
/// give too large a clamp, the error names the clamp, not ε.
#[test]
fn rejects_walk_parameters_naming_the_clamp_not_epsilon() {
    let tiny = f64::from_bits(1);
    let params = WalkParams::new(1.0, tiny).unwrap();
    // ln((1−α)/α) = −ln α for α this small: 1074·ln 2.
    let expected = 2.0 * 1074.0 * std::f64::consts::LN_2;
    assert!((params.clamp_bound() / expected - 1.0).abs() < 1e-12);
    let walk = params.fit(&super::threshold_data(50, 0.5, 0.0, 1)).unwrap();
    let answer = walk.answer(0.9, &mut rng(2));
    assert!(answer.is_ok());
    let err = WalkParams::new(1e-14, 1e-300).unwrap_err();
    match &err {
        PredictError::InvalidParameter { what, value, .. } => {
            assert!(what.contains("clamp"), "{err}");
            // (2/1e-14)·ln(1e300) ≈ 1.38e17.
            assert!(
                (value / (2e14 * 300.0 * 10f64.ln()) - 1.0).abs() < 1e-9,
                "{err}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("alpha"), "{err}");
}

/// A suggestion too large for the cap names the computed count (not usize::MAX as a part
/// count); an α whose 2/α overflows still gives the formula's count.
#[test]
fn rejects_suggested_parts_beyond_the_cap_naming_the_count() {
    let err = suggested_parts(1e-6, 0.1).unwrap_err();
    let message = err.to_string();
    // ⌈(4/1e-6)·ln 20⌉ = 11,982,929.
    let expected = (4e6 * 20f64.ln()).ceil();
    assert!(message.contains(&format!("{expected:.0}")), "{message}");
    assert!(!message.contains(&usize::MAX.to_string()), "{message}");
    assert!(message.contains(&MAX_PARTS.to_string()), "{message}");
    let huge = suggested_parts(1e-300, 0.1).unwrap_err().to_string();
    assert!(
        !huge.contains(&usize::MAX.to_string()) && huge.contains("e30"),
        "{huge}"
    );
    // α = 1e-320: 2/α is ∞, ln(2/α) = ln 2 + 320·ln 10.
    let k = suggested_parts(1.0, 1e-320).unwrap();
    let expected = (4.0 * (2f64.ln() - 1e-320f64.ln())).ceil() as usize;
    assert_eq!(k, expected);
    assert!(LaplaceAverage::new(1.0, k).is_ok());
}

/// The suggested step refuses a NaN (or otherwise invalid) radius, naming it, instead of
/// returning its limit; an Ok step is one `check` accepts.
#[test]
fn rejects_a_bad_radius_for_the_suggested_step() {
    for radius in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
        let err = SgdParams::suggested_step(Loss::Logistic, radius, 100).unwrap_err();
        assert!(
            matches!(
                err,
                PredictError::InvalidParameter {
                    what: "projection radius",
                    ..
                }
            ),
            "{radius}: {err:?}"
        );
        assert!(err.to_string().contains(&format!("{radius:?}")), "{err}");
    }
    assert_eq!(
        SgdParams::suggested_step(Loss::Logistic, 1.0, 0).unwrap_err(),
        PredictError::EmptyData
    );
    assert!(SgdParams::suggested_step(Loss::Huber { width: f64::NAN }, 1.0, 10).is_err());
    // The smallest subnormal over √(2^64): the step rounds to 0, which no fit accepts.
    let step = SgdParams::suggested_step(Loss::Logistic, f64::from_bits(1), usize::MAX);
    assert!(step.is_err(), "{step:?}");
    let tiny = SgdParams::suggested_step(Loss::Logistic, 1e-300, usize::MAX).unwrap();
    SgdParams::new(Loss::Logistic, tiny, 1e-300, 1.0)
        .check()
        .unwrap();
    // √100 = 10: η = 2/10.
    assert_eq!(
        SgdParams::suggested_step(Loss::Logistic, 2.0, 100).unwrap(),
        0.2
    );
}

/// A count in an error is printed as an integer ("0", not "0.0").
#[test]
fn rejects_zero_parts_naming_an_integer() {
    let message = LaplaceAverage::new(1.0, 0).unwrap_err().to_string();
    assert!(
        message.contains("got 0") && !message.contains("0.0"),
        "{message}"
    );
}

/// A balanced λ outside the range every fit accepts is refused, naming it, not returned.
#[test]
fn rejects_balanced_regularizations_no_fit_accepts() {
    for (b, n) in [(1e-300, 10), (1e300, 10), (1.0, usize::MAX)] {
        let result = StableErmParams::balanced_regularization(b, 1.0, n);
        let lambda = 2.0 / b * (2.0 / n as f64).sqrt();
        if (1e-12..=1e6).contains(&lambda) {
            assert_eq!(result.unwrap(), lambda);
        } else {
            let err = result.unwrap_err();
            assert!(err.to_string().contains(&format!("{lambda:?}")), "{err}");
        }
    }
}

fn hostile_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 1e-3..1e3f64,
        2 => 0.0..0.5f64,
        1 => Just(0.0),
        1 => Just(-1.0),
        1 => Just(0.5),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE / 4.0),
        1 => Just(f64::from_bits(1)),
        1 => Just(1e-300),
        1 => Just(1e300),
        1 => any::<f64>(),
    ]
}

fn hostile_usize() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..6,
        2 => 1usize..1000,
        1 => Just(usize::MAX),
        1 => Just(MAX_PARTS),
        1 => Just(MAX_PARTS + 1),
        1 => any::<usize>(),
    ]
}

/// The message carries the value (or size) the error names, as written.
fn assert_names_its_value(err: &PredictError) {
    let message = err.to_string();
    let expected = match err {
        PredictError::InvalidParameter { value, .. } => format!("{value:?}"),
        PredictError::InvalidCount { value, .. } => value.to_string(),
        PredictError::TooLarge { size, .. } => size.to_string(),
        PredictError::LengthMismatch { found, .. } => found.to_string(),
        PredictError::NonFinite { value, .. } => format!("{value:?}"),
        PredictError::ComputedTooLarge { limit, .. } => limit.to_string(),
        PredictError::EmptyData => String::new(),
        PredictError::Erm(e) => return assert!(!e.to_string().is_empty()),
        PredictError::Noise(e) => return assert!(!e.to_string().is_empty()),
        other => panic!("unexpected error {other:?}"),
    };
    assert!(
        message.contains(&expected),
        "{message:?} does not name {expected}"
    );
    assert!(!message.contains(&usize::MAX.to_string()) || expected == usize::MAX.to_string());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Walk, votes and part suggestions: Ok parameters answer a query, within the limit.
    #[test]
    fn walk_and_vote_constructors_check_everything(
        epsilon in hostile_f64(),
        alpha in hostile_f64(),
        parts in hostile_usize(),
        votes in (0usize..50, 0usize..50),
    ) {
        within_limit(move || {
            match WalkParams::new(epsilon, alpha) {
                Ok(params) => {
                    assert!(params.clamp_bound().is_finite() && params.clamp_bound() >= 0.0);
                    let walk = params.fit(&super::threshold_data(20, 0.5, 0.1, 3)).unwrap();
                    walk.answer(0.7, &mut rng(4)).unwrap();
                }
                Err(err) => assert_names_its_value(&err),
            }
            match SoftMajority::new(epsilon) {
                Ok(vote) => {
                    vote.choose(votes.0, votes.1, &mut rng(5)).unwrap();
                }
                Err(err) => assert_names_its_value(&err),
            }
            match LaplaceAverage::new(epsilon, parts) {
                Ok(average) => {
                    let answer = average.release(&vec![0.5; parts.min(MAX_PARTS)], &mut rng(6)).unwrap();
                    assert!((0.0..=1.0).contains(&answer.probability));
                }
                Err(err) => assert_names_its_value(&err),
            }
            match suggested_parts(epsilon, alpha) {
                Ok(k) => {
                    assert!((1..=MAX_PARTS).contains(&k));
                    assert!(LaplaceAverage::new(epsilon, k).is_ok());
                }
                Err(err) => assert_names_its_value(&err),
            }
        });
    }

    /// SGD, stable ERM and line data: Ok parameters fit and answer, within the limit.
    #[test]
    fn learner_constructors_check_everything(
        epsilon in hostile_f64(),
        radius in hostile_f64(),
        step in hostile_f64(),
        comparator in hostile_f64(),
        width in hostile_f64(),
        huber in any::<bool>(),
        rows in hostile_usize(),
        points in prop::collection::vec(hostile_f64(), 0..6),
    ) {
        within_limit(move || {
            let loss = if huber { Loss::Huber { width } } else { Loss::Logistic };
            let unit = examples(1, &[vec![0.5], vec![-0.5]], &[1.0, -1.0]);
            match SgdParams::suggested_step(loss, radius, rows) {
                Ok(suggested) => {
                    assert!(suggested > 0.0);
                    SgdParams::new(loss, suggested, radius, 1.0).check().unwrap();
                }
                Err(err) => assert_names_its_value(&err),
            }
            match SgdParams::new(loss, step, radius, epsilon).fit(&unit) {
                Ok(sgd) => assert_eq!(sgd.secret_weights().len(), 1),
                Err(err) => assert_names_its_value(&err),
            }
            match StableErmParams::balanced_regularization(comparator, epsilon, rows) {
                Ok(lambda) => {
                    assert!((dp_erm::MIN_REGULARIZATION..=dp_erm::MAX_REGULARIZATION).contains(&lambda));
                    if let Err(err) = StableErmParams::new(Loss::Logistic, lambda, epsilon.clamp(1e-3, 1e3)).fit(&unit, &mut rng(7)) {
                        assert_names_its_value(&err);
                    }
                }
                Err(err) => assert_names_its_value(&err),
            }
            let labels = points.iter().map(|&p| p > 0.0).collect();
            match LineData::new(points, labels) {
                Ok(data) => assert!(!data.is_empty()),
                Err(err) => assert_names_its_value(&err),
            }
        });
    }
}
