//! Every refusal, with the numbers in the message, before any training.

use std::sync::{Arc, Mutex};

use dp_noise::{InsecureSeededRng, NoiseError, PrivacyBudget};

use dp_erm::{Classifier, ErmError, ErmParams, Examples, FeatureRow, Features, Loss, SolverChoice};

use crate::candidates::held_out_mistakes;
use crate::test_trainers::{FixedTrainer, TrainLog, rows_with_ids};
use crate::{RandomStopping, SplitAndSelect, TuneError};

fn ok() -> FixedTrainer {
    FixedTrainer::new(0.0, 1.0)
}

#[test]
fn rejects_an_empty_candidate_list() {
    let e = SplitAndSelect::<FixedTrainer>::new(vec![], 1.0).unwrap_err();
    assert!(matches!(e, TuneError::NoCandidates), "{e}");
    assert!(e.to_string().contains("empty"));
    let e = RandomStopping::<FixedTrainer>::new(vec![], 1.0, 0.1).unwrap_err();
    assert!(matches!(e, TuneError::NoCandidates));
}

#[test]
fn rejects_selection_epsilon_that_is_not_positive_or_finite() {
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e4] {
        let e = SplitAndSelect::new(vec![ok()], bad).unwrap_err();
        assert!(
            matches!(
                e,
                TuneError::InvalidParameter {
                    what: "selection epsilon",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("{bad:?}")), "{e}");
        let e = RandomStopping::new(vec![ok()], bad, 0.1).unwrap_err();
        assert!(matches!(
            e,
            TuneError::InvalidParameter {
                what: "score epsilon",
                ..
            }
        ));
    }
}

/// An (ε, δ) trainer (Gaussian objective perturbation) is refused by random stopping,
/// naming it and its δ: its proof composes pure ε only. (Before `Trainer::delta` existed,
/// it reported only its ε and was accepted as if pure.) Split-and-select accepts it and
/// reports its δ.
#[test]
fn random_stopping_rejects_candidates_with_a_delta() {
    let gaussian = dp_erm::GaussianErm::objective_perturbation(Loss::Logistic, 0.1, 1.0, 1e-6);
    let pure = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    let e = RandomStopping::new(vec![gaussian.clone()], 1.0, 0.1).unwrap_err();
    assert!(
        matches!(e, TuneError::CandidateNotPureEpsilon { candidate: 0, delta } if delta == 1e-6),
        "{e}"
    );
    assert!(e.to_string().contains("1e-6"), "{e}");
    assert!(RandomStopping::new(vec![pure.clone()], 1.0, 0.1).is_ok());
    let other = dp_erm::GaussianErm::objective_perturbation(Loss::Logistic, 0.1, 0.5, 4e-6);
    let split = SplitAndSelect::new(vec![gaussian, other], 1.0).unwrap();
    assert_eq!((split.epsilon(), split.delta()), (1.0, 4e-6));
    assert_eq!(SplitAndSelect::new(vec![pure], 1.0).unwrap().delta(), 0.0);
}

#[test]
fn rejects_candidates_whose_epsilon_is_missing_non_positive_or_not_finite() {
    let bad = |epsilon| FixedTrainer { epsilon, ..ok() };
    let e = SplitAndSelect::new(vec![ok(), bad(None)], 1.0).unwrap_err();
    assert!(
        matches!(e, TuneError::CandidateNotPrivate { candidate: 1 }),
        "{e}"
    );
    assert!(e.to_string().contains("candidate 1"));
    for value in [0.0, -0.5, f64::NAN, f64::INFINITY] {
        let e = SplitAndSelect::new(vec![ok(), ok(), bad(Some(value))], 1.0).unwrap_err();
        assert!(
            matches!(e, TuneError::InvalidCandidateEpsilon { candidate: 2, .. }),
            "{e}"
        );
        assert!(e.to_string().contains(&format!("{value:?}")), "{e}");
        let e = RandomStopping::new(vec![bad(Some(value))], 1.0, 0.1).unwrap_err();
        assert!(matches!(
            e,
            TuneError::InvalidCandidateEpsilon { candidate: 0, .. }
        ));
    }
}

/// Too few rows for m + 1 parts: refused with the numbers, before any candidate trains.
#[test]
fn rejects_too_few_rows_for_the_parts() {
    let trained = Arc::new(Mutex::new(Vec::new()));
    let candidates = vec![
        FixedTrainer {
            trained: Some(trained.clone()),
            ..ok()
        };
        7
    ];
    let tuning = SplitAndSelect::new(candidates.clone(), 1.0).unwrap();
    assert_eq!(tuning.min_rows(), 160);
    let e = tuning
        .select(
            &rows_with_ids(vec![1.0; 159]),
            &mut InsecureSeededRng::new(1),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            TuneError::TooFewRows {
                rows: 159,
                parts: 8,
                min_per_part: 20
            }
        ),
        "{e}"
    );
    let message = e.to_string();
    assert!(message.contains("159") && message.contains("8 parts") && message.contains("160"));
    let stopping = RandomStopping::new(candidates.clone(), 1.0, 0.1).unwrap();
    // ⌈0.1·191⌉ = 20 rows held out, ⌈0.1·190⌉ = 19.
    assert_eq!(stopping.min_rows(), 191);
    let e = stopping
        .select(
            &rows_with_ids(vec![1.0; 190]),
            &mut InsecureSeededRng::new(1),
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            TuneError::TooFewRowsToHoldOut {
                rows: 190,
                held_out: 19,
                min_rows: 191,
                ..
            }
        ),
        "{e}"
    );
    let message = e.to_string();
    assert!(message.contains("190") && message.contains("19 ") && message.contains("191"));
    // A large share leaves too few training rows: 0.9 of 199 holds out 180.
    let large = RandomStopping::new(candidates, 1.0, 0.1)
        .unwrap()
        .with_holdout_fraction(0.9)
        .unwrap();
    assert_eq!(large.min_rows(), 200);
    let mut rng = InsecureSeededRng::new(1);
    assert!(
        large
            .select(&rows_with_ids(vec![1.0; 199]), &mut rng)
            .is_err()
    );
    assert!(trained.lock().unwrap().is_empty(), "nothing trained");
    assert!(
        large
            .select(&rows_with_ids(vec![1.0; 200]), &mut rng)
            .is_ok()
    );
}

/// A failing trainer's error surfaces with the candidate named and as the source.
#[test]
fn rejects_a_failing_trainer_naming_the_candidate() {
    let candidates = vec![ok(), ok(), FixedTrainer { fail: true, ..ok() }, ok()];
    let data = rows_with_ids(vec![1.0; 200]);
    let e = SplitAndSelect::new(candidates.clone(), 1.0)
        .unwrap()
        .select(&data, &mut InsecureSeededRng::new(2))
        .unwrap_err();
    assert!(matches!(e, TuneError::Training { candidate: 2, .. }), "{e}");
    assert!(e.to_string().contains("candidate 2") && e.to_string().contains("broken on purpose"));
    assert!(std::error::Error::source(&e).is_some());
    let all_fail = vec![FixedTrainer { fail: true, ..ok() }; 2];
    let e = RandomStopping::new(all_fail, 1.0, 0.1)
        .unwrap()
        .select(&data, &mut InsecureSeededRng::new(2))
        .unwrap_err();
    assert!(matches!(e, TuneError::Training { .. }), "{e}");
}

/// Three candidates that record every training in the log returned beside them.
fn three_logged_candidates() -> (TrainLog, Vec<FixedTrainer>) {
    let trained = Arc::new(Mutex::new(Vec::new()));
    let candidate = FixedTrainer {
        trained: Some(trained.clone()),
        ..ok()
    };
    (trained, vec![candidate; 3])
}

/// A budget that cannot pay is refused before any training, and nothing is charged.
#[test]
fn rejects_a_spent_budget() {
    let (trained, candidates) = three_logged_candidates();
    let data = rows_with_ids(vec![1.0; 400]);
    // It accepts random stopping's δ, so that its ε is what is refused below.
    let mut budget = PrivacyBudget::with_delta(1.5, 1e-3).unwrap();
    let tuning = SplitAndSelect::new(candidates.clone(), 1.0).unwrap();
    let mut rng = InsecureSeededRng::new(4);
    tuning
        .select_charging(&data, &mut budget, &mut rng)
        .unwrap();
    assert_eq!(budget.spent(), 1.0);
    let before = trained.lock().unwrap().len();
    let e = tuning
        .select_charging(&data, &mut budget, &mut rng)
        .unwrap_err();
    assert!(
        matches!(e, TuneError::Budget(NoiseError::BudgetExceeded { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("budget"));
    assert_eq!(budget.spent(), 1.0);
    let stopping = RandomStopping::new(candidates, 0.2, 0.5).unwrap();
    let e = stopping
        .select_charging(&data, &mut budget, &mut rng)
        .unwrap_err();
    assert!(
        matches!(e, TuneError::Budget(NoiseError::BudgetExceeded { .. })),
        "3 × 1.0 > 0.5 left: {e}"
    );
    assert_eq!(trained.lock().unwrap().len(), before, "nothing trained");
}

/// Random stopping is (3ε, δ)-DP, not ε-DP: a pure-ε budget refuses its charge before any
/// training; a budget that accepts a δ records both.
#[test]
fn random_stopping_charges_its_delta_which_a_pure_budget_refuses() {
    let (trained, candidates) = three_logged_candidates();
    let data = rows_with_ids(vec![1.0; 400]);
    // δ = (1 + e^3)·0.75^60 ≈ 6.8e-7, within MAX_DELTA (a cap of 40 would give 2e-4).
    let (gamma, runs) = (0.25, 60);
    let stopping = RandomStopping::new(candidates, 0.5, gamma)
        .unwrap()
        .with_max_runs(runs)
        .unwrap();
    let mut rng = InsecureSeededRng::new(5);
    let mut pure = PrivacyBudget::new(10.0).unwrap();
    let e = stopping
        .select_charging(&data, &mut pure, &mut rng)
        .unwrap_err();
    assert!(
        matches!(e, TuneError::Budget(NoiseError::DeltaBudgetExceeded { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("with_delta"), "{e}");
    assert_eq!(pure.spent(), 0.0);
    assert!(trained.lock().unwrap().is_empty(), "nothing trained");
    // The spec's claim: 3·max(ε_T, ε_S) and δ = (1 + e^{3ε})·(1 − γ)^T.
    let epsilon = 3.0 * 1.0f64.max(0.5);
    let delta = (1.0 + epsilon.exp()) * (1.0 - gamma).powi(runs as i32);
    let mut accepting = PrivacyBudget::with_delta(10.0, 1e-3).unwrap();
    stopping
        .select_charging(&data, &mut accepting, &mut rng)
        .unwrap();
    assert_eq!(accepting.spent(), epsilon);
    let charged = accepting.delta_spent();
    assert!(
        charged >= delta && charged <= delta * (1.0 + 1e-9),
        "{charged} against {delta}"
    );
    // A δ limit below the claim refuses it.
    let mut tight = PrivacyBudget::with_delta(10.0, delta / 2.0).unwrap();
    assert!(
        stopping
            .select_charging(&data, &mut tight, &mut rng)
            .is_err()
    );
    assert_eq!(tight.delta_spent(), 0.0);
}

#[test]
fn rejects_bad_stopping_parameters() {
    for gamma in [0.0, -0.1, 1e-5, 1.5, f64::NAN] {
        let e = RandomStopping::new(vec![ok()], 1.0, gamma).unwrap_err();
        assert!(
            matches!(
                e,
                TuneError::InvalidParameter {
                    what: "stop probability",
                    ..
                }
            ),
            "{e}"
        );
    }
    let tuning = || RandomStopping::new(vec![ok()], 1.0, 0.1).unwrap();
    for fraction in [0.0, 1.0, -0.2, f64::NAN] {
        assert!(tuning().with_holdout_fraction(fraction).is_err());
    }
    for runs in [0, crate::MAX_RUNS + 1] {
        let e = tuning().with_max_runs(runs).unwrap_err();
        assert!(e.to_string().contains("max runs"), "{e}");
    }
}

/// 400 rows inside the unit ball in `d` features (one entry each, at column `i mod d`),
/// labels alternating, with `outlier` (if any) replacing row 123.
fn sparse_rows(d: usize, outlier: Option<Vec<(usize, f64)>>) -> Examples {
    let mut rows: Vec<Vec<(usize, f64)>> = (0..400)
        .map(|i| vec![(i % d, 0.5 + 0.001 * (i % 7) as f64)])
        .collect();
    if let Some(row) = outlier {
        rows[123] = row;
    }
    let labels = (0..400)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    Examples::new(Features::sparse(d, rows).unwrap(), labels).unwrap()
}

/// What a candidate refuses from public sizes or its input contract is refused before the
/// charge, by both methods, naming the candidate: Λ = 0, a Huber width of
/// 0 built past `Loss::huber`'s check, Newton at d = 20,000, and a row of norm above 1.
/// Nothing is charged or trained (each candidate would otherwise fail inside the run).
#[test]
fn candidate_refusals_come_before_the_charge() {
    let fine = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    let (small, wide) = (sparse_rows(2, None), sparse_rows(20_000, None));
    let outlier = sparse_rows(2, Some(vec![(0, 0.8), (1, 0.7)]));
    let cases = [
        (
            ErmParams::objective_perturbation(Loss::Logistic, 0.0, 1.0),
            &small,
            "regularization",
        ),
        (
            ErmParams::objective_perturbation(Loss::Huber { width: 0.0 }, 0.1, 1.0),
            &small,
            "Huber",
        ),
        (fine.clone().solver(SolverChoice::Newton), &wide, "Newton"),
        (fine.clone().warm_start(&[0.1, 0.1]), &small, "warm start"),
        (fine.clone(), &outlier, "row 123"),
    ];
    // A candidate ε above the cap is refused sooner, at construction, naming it.
    let above = vec![
        fine.clone(),
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1500.0),
    ];
    for e in [
        SplitAndSelect::new(above.clone(), 1.0).unwrap_err(),
        RandomStopping::new(above, 0.5, 0.2).unwrap_err(),
    ] {
        assert!(
            matches!(e, TuneError::InvalidCandidateEpsilon { candidate: 1, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("1500"), "{e}");
    }
    for (candidate, data, fragment) in cases {
        let list = vec![fine.clone(), candidate];
        // The outlier breaks every candidate's contract: the first one is named.
        let named = if fragment == "row 123" { 0 } else { 1 };
        let mut budget = PrivacyBudget::new(1e4).unwrap();
        let mut rng = InsecureSeededRng::new(3);
        let split = SplitAndSelect::new(list.clone(), 1.0).unwrap();
        let stopping = RandomStopping::new(list, 0.5, 0.2).unwrap();
        let errors = [
            split.select_charging(data, &mut budget, &mut rng).map(drop),
            stopping
                .select_charging(data, &mut budget, &mut rng)
                .map(drop),
            split.select(data, &mut rng).map(drop),
            stopping.select(data, &mut rng).map(drop),
        ];
        for e in errors {
            let e = e.unwrap_err();
            assert!(
                matches!(e, TuneError::CandidateRefuses { candidate, .. } if candidate == named),
                "{e}"
            );
            let message = e.to_string();
            assert!(
                message.contains(fragment) && message.contains("nothing was charged"),
                "{message} (wanted '{fragment}')"
            );
        }
        assert_eq!(budget.spent(), 0.0, "{fragment}");
    }
}

/// Scores a row +1, or overflows on rows whose first feature is above 1e300.
struct OverflowsOnHugeRows;

impl Classifier for OverflowsOnHugeRows {
    fn input_features(&self) -> usize {
        1
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        if x[0] > 1e300 {
            Err(ErmError::DecisionOverflow { row: 0 })
        } else {
            Ok(1.0)
        }
    }

    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        (0..rows.len())
            .map(|i| match rows.row(i) {
                FeatureRow::Dense(x) => self.decision_function(x),
                FeatureRow::Sparse(..) => unreachable!("dense test rows"),
            })
            .collect()
    }
}

/// A held-out row whose score overflows counts as a mistake, whatever its label: a fixed
/// outcome instead of an error that would depend on the model.
#[test]
fn an_overflowing_held_out_score_counts_as_a_mistake() {
    let values = vec![0.0, 0.5, 1.0, 1.5, 1e308, f64::MAX];
    let labels = vec![1.0, -1.0, 1.0, 1.0, 1.0, -1.0];
    let held_out = Examples::new(Features::dense(1, values).unwrap(), labels).unwrap();
    assert!(OverflowsOnHugeRows.mistakes(&held_out).is_err());
    // One wrong label among the first four, and both overflowing rows.
    assert_eq!(
        held_out_mistakes(&OverflowsOnHugeRows, &held_out).unwrap(),
        3
    );
}
