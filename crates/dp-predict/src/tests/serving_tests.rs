//! The serving interface: pooled answers follow the mechanisms' laws exactly and draw no
//! randomness on the request path; every answer is released a whole slot after its call;
//! refusals come first and charge nothing.

use std::time::{Duration, Instant};

use dp_erm::{ErmParams, Features, Loss};
use rand::{Rng, RngExt};

use super::{examples, line_examples, rng, threshold_data};
use crate::{
    AnswerSlot, Ensemble, LaplaceAverageEnsemble, MAX_POOL, PredictError, PredictionInterface,
    PrivatePredictor, ProjectedSgd, ServingInterface, SgdParams, SoftMajorityEnsemble, StableErm,
    StableErmParams, ThresholdErm, VoteKind, WalkParams,
};

const SLOT: Duration = Duration::from_micros(50);

fn two_feature_data() -> dp_erm::Examples {
    let mut r = rng(7);
    let rows: Vec<Vec<f64>> = (0..60)
        .map(|_| vec![r.random_range(-0.7..0.7), r.random_range(-0.7..0.7)])
        .collect();
    let labels: Vec<f64> = rows
        .iter()
        .map(|x| if x[0] + 0.3 * x[1] >= 0.0 { 1.0 } else { -1.0 })
        .collect();
    examples(2, &rows, &labels)
}

fn stable() -> StableErm {
    StableErmParams::new(Loss::Logistic, 0.1, 1.0)
        .fit(&two_feature_data(), &mut rng(1))
        .unwrap()
}

fn sgd() -> ProjectedSgd {
    SgdParams::new(Loss::Logistic, 0.1, 10.0, 1.0)
        .fit(&two_feature_data())
        .unwrap()
}

fn averaged() -> LaplaceAverageEnsemble<dp_erm::LinearModel> {
    let trainer = ErmParams::non_private(Loss::Logistic, 0.1);
    let ensemble = Ensemble::train(&trainer, &two_feature_data(), 6, &mut rng(2)).unwrap();
    LaplaceAverageEnsemble::new(ensemble, 1.0, VoteKind::Sigmoid).unwrap()
}

/// A pooled answer is the direct answer computed from the same random stream: the pool
/// draws what the direct path would have drawn, in the same order, and the answer applies
/// the same arithmetic — so the released law is the mechanism's, exactly.
fn pooled_equals_direct<P>(predictor: P, equal: fn(&P::Answer, &P::Answer) -> bool)
where
    P: PrivatePredictor<Query = [f64]> + Clone,
{
    let queries = [[0.3, -0.2], [-0.9, 0.1], [5.0, 3.0], [0.0, 0.0]];
    for (seed, query) in queries.iter().enumerate() {
        let seed = 100 + seed as u64;
        let direct = predictor.answer_unchecked(query, &mut rng(seed)).unwrap();
        let mut serving =
            ServingInterface::new(predictor.clone(), 1.0, SLOT, &mut rng(seed)).unwrap();
        assert_eq!(serving.pooled(), Some(1));
        let pooled = serving.answer(query, &mut rng(999)).unwrap();
        assert!(equal(&direct, &pooled), "query {query:?}");
    }
}

#[test]
fn pooled_answers_equal_direct_answers_from_the_same_stream() {
    pooled_equals_direct(stable(), |a, b| a == b);
    pooled_equals_direct(sgd(), |a, b| a == b);
    pooled_equals_direct(averaged(), |a, b| a == b);
}

/// The request path of a pooled mechanism samples nothing: the generator passed to the
/// answers continues exactly where it was.
#[test]
fn pooled_answers_draw_no_randomness_on_the_request_path() {
    let mut serving = ServingInterface::new(averaged(), 10.0, SLOT, &mut rng(3)).unwrap();
    assert_eq!(serving.pooled(), Some(10));
    let mut r = rng(4);
    let mut twin = rng(4);
    serving.answer(&[0.2, 0.4], &mut r).unwrap();
    serving
        .answer_batch(&[&[0.1, 0.1], &[-0.5, 0.0]], &mut r)
        .unwrap();
    let rows = Features::dense(2, vec![0.3, 0.3, -0.3, 0.6]).unwrap();
    serving.answer_rows(&rows, &mut r).unwrap();
    assert_eq!(serving.pooled(), Some(5));
    assert_eq!(r.next_u64(), twin.next_u64());
}

/// Mutation check for the test above: the direct path does draw from the generator.
#[test]
fn direct_answers_do_draw_on_the_request_path() {
    let mut interface = PredictionInterface::new(averaged(), 10.0).unwrap();
    let mut r = rng(4);
    let mut twin = rng(4);
    interface.answer(&[0.2, 0.4], &mut r).unwrap();
    assert_ne!(r.next_u64(), twin.next_u64());
}

fn elapsed<T>(call: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = call();
    (out, start.elapsed())
}

/// Answers, pooled or sampled, single or batched, return no earlier than one slot (a batch
/// of q: q slots) after the call; the overrun count is the number of later releases.
#[test]
fn answers_are_released_a_whole_slot_after_the_call() {
    let slot = Duration::from_millis(2);
    let walk = WalkParams::new(1.0, 0.05)
        .unwrap()
        .fit(&threshold_data(500, 0.5, 0.1, 5))
        .unwrap();
    let mut walk = ServingInterface::new(walk, 100.0, slot, &mut rng(5)).unwrap();
    assert_eq!(walk.pooled(), None);
    let mut r = rng(6);
    for x in [0.1, 0.5, 0.9] {
        let (answer, took) = elapsed(|| walk.answer(&x, &mut r));
        answer.unwrap();
        assert!(took >= slot, "{took:?}");
    }
    let (answers, took) = elapsed(|| walk.answer_batch(&[&0.2, &0.3, &0.4], &mut r));
    assert_eq!(answers.unwrap().len(), 3);
    assert!(took >= 3 * slot, "{took:?}");

    let mut pooled = ServingInterface::new(stable(), 100.0, slot, &mut rng(7)).unwrap();
    let (answer, took) = elapsed(|| pooled.answer(&[0.5, 0.5], &mut r));
    answer.unwrap();
    assert!(took >= slot, "{took:?}");
    let rows = Features::dense(2, vec![0.1, 0.2, 0.3, 0.4]).unwrap();
    let (answers, took) = elapsed(|| pooled.answer_rows(&rows, &mut r));
    assert_eq!(answers.unwrap().len(), 2);
    assert!(took >= 2 * slot, "{took:?}");

    let ensemble = Ensemble::train(
        &ThresholdErm,
        &line_examples(&threshold_data(50, 0.5, 0.0, 2)),
        5,
        &mut rng(8),
    )
    .unwrap();
    let soft = SoftMajorityEnsemble::new(ensemble, 1.0).unwrap();
    let mut soft = ServingInterface::new(soft, 10.0, slot, &mut rng(9)).unwrap();
    let (answer, took) = elapsed(|| soft.answer(&[0.4], &mut r));
    answer.unwrap();
    assert!(took >= slot, "{took:?}");
}

/// With a slot shorter than any computation every answer overruns: released at a later
/// boundary and counted.
#[test]
fn an_overrun_is_released_at_a_later_boundary_and_counted() {
    let mut serving =
        ServingInterface::new(stable(), 100.0, Duration::from_nanos(1), &mut rng(8)).unwrap();
    let mut r = rng(9);
    for _ in 0..5 {
        serving.answer(&[0.1, 0.2], &mut r).unwrap();
    }
    assert_eq!(serving.overruns(), 5);
}

/// The pool holds noise for what the budget allows; when it runs out the next answer is
/// refused before any charge, naming the counts, and a refill restores it.
#[test]
fn an_empty_pool_refuses_before_the_charge_and_a_refill_restores_it() {
    let mut serving = ServingInterface::new(sgd(), 3.0, SLOT, &mut rng(10)).unwrap();
    assert_eq!(serving.pooled(), Some(3));
    let source = serving.noise_source().unwrap();
    let mut r = rng(11);
    for _ in 0..3 {
        serving.answer(&[0.1, 0.1], &mut r).unwrap();
    }
    assert_eq!(serving.pooled(), Some(0));
    // Budget first: with both spent, the refusal is the budget's.
    assert!(matches!(
        serving.answer(&[0.1, 0.1], &mut r),
        Err(PredictError::BudgetExceeded { .. })
    ));

    let mut serving = ServingInterface::new(sgd(), 1e6, SLOT, &mut rng(12)).unwrap();
    assert_eq!(serving.pooled(), Some(4096));
    let spent = serving.budget().spent();
    let batch: Vec<&[f64]> = vec![&[0.1, 0.1]; 4097];
    let refused = serving.answer_batch(&batch, &mut r).unwrap_err();
    assert_eq!(
        refused,
        PredictError::NoisePoolEmpty {
            needed: 4097,
            pooled: 4096
        }
    );
    assert!(refused.to_string().contains("4096"), "{refused}");
    assert_eq!(serving.budget().spent(), spent);
    assert_eq!(serving.pooled(), Some(4096));
    // Noise drawn elsewhere from the public source tops the pool up.
    serving
        .add_noise(source.draw(10, &mut rng(13)).unwrap())
        .unwrap();
    assert_eq!(serving.pooled(), Some(4106));
}

#[test]
fn rejects_a_pool_of_another_law_or_for_a_mechanism_without_one() {
    let mut serving = ServingInterface::new(stable(), 5.0, SLOT, &mut rng(14)).unwrap();
    let other = averaged().noise_source().unwrap();
    assert_ne!(Some(other), serving.noise_source());
    let refused = serving
        .add_noise(other.draw(3, &mut rng(15)).unwrap())
        .unwrap_err();
    assert_eq!(refused, PredictError::NoisePoolMismatch);
    assert_eq!(serving.pooled(), Some(5));

    let ensemble = Ensemble::train(
        &ThresholdErm,
        &line_examples(&threshold_data(50, 0.5, 0.0, 1)),
        5,
        &mut rng(16),
    )
    .unwrap();
    let soft = SoftMajorityEnsemble::new(ensemble, 1.0).unwrap();
    let mut soft = ServingInterface::new(soft, 5.0, SLOT, &mut rng(17)).unwrap();
    assert_eq!(soft.noise_source(), None);
    let source = serving.noise_source().unwrap();
    assert_eq!(
        soft.add_noise(source.draw(1, &mut rng(18)).unwrap()),
        Err(PredictError::NoisePoolMismatch)
    );
}

#[test]
fn rejects_pools_beyond_the_cap() {
    let source = stable().noise_source().unwrap();
    let refused = source.draw(MAX_POOL + 1, &mut rng(19)).unwrap_err();
    assert!(matches!(
        refused,
        PredictError::TooLarge { size, limit, .. } if size == MAX_POOL + 1 && limit == MAX_POOL
    ));
    let mut serving = ServingInterface::new(stable(), 1e6, SLOT, &mut rng(20)).unwrap();
    let full = source.draw(MAX_POOL, &mut rng(21)).unwrap();
    assert!(matches!(
        serving.add_noise(full),
        Err(PredictError::TooLarge {
            what: "noise pool size",
            ..
        })
    ));
    assert_eq!(serving.pooled(), Some(4096));
}

/// A bad slot is refused naming its value, before the budget is checked or noise drawn.
#[test]
fn rejects_bad_slots_naming_them() {
    for (slot, shown) in [(Duration::ZERO, "0.0"), (Duration::from_secs(61), "61.0")] {
        let mut r = rng(22);
        let mut twin = rng(22);
        let refused = ServingInterface::new(stable(), 1.0, slot, &mut r).unwrap_err();
        assert!(
            matches!(
                refused,
                PredictError::InvalidParameter {
                    what: "answer slot (seconds)",
                    ..
                }
            ),
            "{refused:?}"
        );
        assert!(refused.to_string().contains(shown), "{refused}");
        assert_eq!(r.next_u64(), twin.next_u64());
        // Checked before the budget: a bad budget too still names the slot.
        let both = ServingInterface::new(stable(), -1.0, slot, &mut r).unwrap_err();
        assert!(both.to_string().contains("slot"), "{both}");
        assert_eq!(AnswerSlot::new(slot).unwrap_err(), refused);
    }
    assert!(ServingInterface::new(stable(), 1.0, crate::MAX_SLOT, &mut rng(23)).is_ok());
}

/// Converting an interface keeps what its budget has spent, and the pool matches what is
/// left.
#[test]
fn serving_keeps_the_budget_spent() {
    let mut interface = PredictionInterface::new(stable(), 4.0).unwrap();
    let mut r = rng(24);
    interface.answer(&[0.1, 0.1], &mut r).unwrap();
    let serving = interface.serving(AnswerSlot::new(SLOT).unwrap(), &mut r);
    assert_eq!(serving.budget().spent(), 1.0);
    assert_eq!(serving.queries_left(), 3);
    assert_eq!(serving.pooled(), Some(3));
    let shown = format!("{serving:?}");
    assert!(shown.contains("pooled: Some(3)"), "{shown}");
}
