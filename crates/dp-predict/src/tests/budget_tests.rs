//! The interface's budget: charged per query, refused before any computation, batches
//! refused whole.

use rand::Rng;

use super::{rng, threshold_data};
use crate::{ExponentialWalk, PredictError, PredictionInterface, WalkParams};

fn walk() -> ExponentialWalk {
    WalkParams::new(0.5, 0.05)
        .unwrap()
        .fit(&threshold_data(200, 0.5, 0.0, 1))
        .unwrap()
}

#[test]
fn answers_are_charged_until_the_budget_is_spent_then_refused() {
    let mut interface = PredictionInterface::new(walk(), 2.0).unwrap();
    let mut r = rng(2);
    for k in 0..4 {
        assert_eq!(interface.queries_left(), 4 - k);
        interface.answer(&0.7, &mut r).unwrap();
    }
    assert_eq!(interface.budget().spent(), 2.0);
    let refused = interface.answer(&0.7, &mut r).unwrap_err();
    assert_eq!(
        refused,
        PredictError::BudgetExceeded {
            queries: 1,
            requested: 0.5,
            remaining: 0.0,
            limit: 2.0
        }
    );
    // The message names the numbers.
    let message = refused.to_string();
    assert!(
        message.contains("0.5") && message.contains("2.0"),
        "{message}"
    );
    assert_eq!(interface.budget().spent(), 2.0);
}

/// A refused call draws no randomness: the generator continues exactly where it was,
/// which it would not if anything had been sampled.
#[test]
fn exhausted_budget_refuses_before_any_computation() {
    let mut interface = PredictionInterface::new(walk(), 0.5).unwrap();
    let mut r = rng(3);
    interface.answer(&0.7, &mut r).unwrap();
    let mut twin = rng(3);
    interface.predictor().answer(0.7, &mut twin).unwrap();
    assert!(interface.answer(&0.7, &mut r).is_err());
    assert!(interface.answer_batch(&[&0.1, &0.2], &mut r).is_err());
    assert_eq!(r.next_u64(), twin.next_u64());
}

#[test]
fn batch_larger_than_the_remaining_budget_is_refused_whole() {
    let mut interface = PredictionInterface::new(walk(), 2.0).unwrap();
    let mut r = rng(4);
    interface.answer(&0.3, &mut r).unwrap();
    let before = interface.budget().spent();
    let err = interface
        .answer_batch(&[&0.1, &0.2, &0.3, &0.4], &mut r)
        .unwrap_err();
    assert_eq!(
        err,
        PredictError::BudgetExceeded {
            queries: 4,
            requested: 2.0,
            remaining: 1.5,
            limit: 2.0
        }
    );
    assert_eq!(interface.budget().spent(), before);
    // Three fit: charged 1.5 at once, one ledger entry.
    let answers = interface.answer_batch(&[&0.1, &0.2, &0.9], &mut r).unwrap();
    assert_eq!(answers.len(), 3);
    assert_eq!(interface.budget().spent(), 2.0);
    assert_eq!(interface.budget().ledger().len(), 2);
}

#[test]
fn malformed_query_in_a_batch_refuses_the_batch_and_charges_nothing() {
    let mut interface = PredictionInterface::new(walk(), 2.0).unwrap();
    let err = interface
        .answer_batch(&[&0.1, &f64::NAN], &mut rng(5))
        .unwrap_err();
    assert!(matches!(err, PredictError::NonFinite { .. }), "{err:?}");
    assert_eq!(interface.budget().spent(), 0.0);
}

#[test]
fn budget_limit_is_checked() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(PredictionInterface::new(walk(), bad).is_err(), "{bad}");
    }
}

/// Beyond 2^16 queries the count is a lower bound computed in bulk, close to the truth.
#[test]
fn queries_left_is_exact_when_small_and_a_close_lower_bound_when_large() {
    let small = PredictionInterface::new(walk(), 1000.0).unwrap();
    assert_eq!(small.queries_left(), 2000);
    let large = PredictionInterface::new(walk(), 1e6).unwrap();
    let left = large.queries_left();
    assert!((1_999_990..=2_000_000).contains(&left), "{left}");
}
