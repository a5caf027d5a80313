//! Property tests over every public constructor and builder: arbitrary f64 (NaN, ±∞,
//! subnormals, huge) and usize (0, 1, MAX) inputs give either a value the mechanism then
//! runs on quickly, or an error whose message names an offending value — never a panic,
//! never a hang (each case runs in its own thread with a time limit).

use std::time::Duration;

use proptest::prelude::*;

use dp_noise::InsecureSeededRng;

use crate::test_trainers::{FixedTrainer, rows_with_ids};
use crate::{MAX_DELTA, MAX_RUNS, RandomStopping, SplitAndSelect, TuneError};

/// Time one case may take (construction, and a selection on a small dataset): generous,
/// for a loaded 2-core machine; the hangs it guards against never finish.
const LIMIT: Duration = Duration::from_secs(10);

/// Runs `case` in a thread; fails if it panics or does not finish within [`LIMIT`].
fn within_limit(case: impl FnOnce() -> Result<(), String> + Send + 'static) {
    dp_test_support::case_within(LIMIT, case)
}

/// Any f64, with the special values and the edges of the accepted ranges made likely.
fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        2 => prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(-0.0),
            Just(f64::MIN_POSITIVE),
            Just(5e-324),
            Just(f64::MAX),
            Just(1.0),
            Just(1e-18),
            Just(1.0 - 1e-16),
            Just(1e-4),
            Just(1000.0),
            Just(1000.0 / 3.0),
        ],
        3 => 1e-6..50.0f64,
        2 => 0.0..1.0f64,
    ]
}

/// Any usize, with 0, 1, MAX and the edges of the caps made likely.
fn any_usize() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1usize),
        Just(usize::MAX),
        Just(MAX_RUNS),
        Just(MAX_RUNS + 1),
        1usize..1000,
        any::<usize>(),
    ]
}

/// Whether `message` names one of `values` (f64 as `{:?}` prints them, usize exactly).
fn names_one_of(message: &str, floats: &[f64], counts: &[usize]) -> bool {
    floats.iter().any(|v| message.contains(&format!("{v:?}")))
        || counts.iter().any(|v| message.contains(&v.to_string()))
}

/// An accepted random stopping runs a selection on a small dataset, quickly.
fn runs_quickly(tuning: &RandomStopping<FixedTrainer>) -> Result<(), String> {
    let rows = tuning.min_rows();
    if rows > 5_000 {
        // Accepted, but the smallest dataset it takes is large: its size rule is checked.
        let held = tuning.held_out_rows(rows);
        return if held >= 20 && rows - held >= 20 {
            Ok(())
        } else {
            Err(format!("min_rows {rows} does not fit: {tuning:?}"))
        };
    }
    let data = rows_with_ids(vec![1.0; rows.max(1)]);
    let out = tuning
        .select(&data, &mut InsecureSeededRng::new(1))
        .map_err(|e| format!("{tuning:?} refused its own min_rows: {e}"))?;
    if !(out.delta() <= MAX_DELTA && out.epsilon() <= 1000.0 && out.epsilon() > 0.0) {
        return Err(format!(
            "released ({}, {}) for {tuning:?}",
            out.epsilon(),
            out.delta()
        ));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_stopping_accepts_or_names_the_value(
        candidate_epsilons in proptest::collection::vec(any_f64(), 1..4),
        score_epsilon in any_f64(),
        gamma in any_f64(),
        fraction in proptest::option::of(any_f64()),
        runs in proptest::option::of(any_usize()),
    ) {
        within_limit(move || {
            let candidates: Vec<FixedTrainer> = candidate_epsilons
                .iter()
                .map(|&e| FixedTrainer::new(0.0, e))
                .collect();
            let mut floats = candidate_epsilons.clone();
            floats.extend([score_epsilon, gamma]);
            floats.extend(fraction);
            let counts: Vec<usize> = runs.into_iter().collect();
            let named = |e: TuneError| {
                let message = e.to_string();
                let derived = matches!(
                    e,
                    TuneError::InvalidParameter { what, .. } if what.starts_with("end-to-end")
                );
                if derived || names_one_of(&message, &floats, &counts) {
                    Ok(())
                } else {
                    Err(format!("the error names no input: {message}"))
                }
            };
            let mut tuning = match RandomStopping::new(candidates, score_epsilon, gamma) {
                Ok(t) => t,
                Err(e) => return named(e),
            };
            if let Some(fraction) = fraction {
                tuning = match tuning.with_holdout_fraction(fraction) {
                    Ok(t) => t,
                    Err(e) => return named(e),
                };
            }
            if let Some(runs) = runs {
                tuning = match tuning.with_max_runs(runs) {
                    Ok(t) => t,
                    Err(e) => return named(e),
                };
            }
            runs_quickly(&tuning)
        });
    }

    #[test]
    fn split_and_select_accepts_or_names_the_value(
        candidate_epsilons in proptest::collection::vec(any_f64(), 0..4),
        selection_epsilon in any_f64(),
    ) {
        within_limit(move || {
            let candidates: Vec<FixedTrainer> = candidate_epsilons
                .iter()
                .map(|&e| FixedTrainer::new(0.0, e))
                .collect();
            let tuning = match SplitAndSelect::new(candidates, selection_epsilon) {
                Ok(t) => t,
                Err(TuneError::NoCandidates) if candidate_epsilons.is_empty() => return Ok(()),
                Err(e) => {
                    let mut floats = candidate_epsilons.clone();
                    floats.push(selection_epsilon);
                    return if names_one_of(&e.to_string(), &floats, &[]) {
                        Ok(())
                    } else {
                        Err(format!("the error names no input: {e}"))
                    };
                }
            };
            if !(tuning.epsilon() > 0.0 && tuning.epsilon() <= 1000.0) {
                return Err(format!("accepted ε {} for {tuning:?}", tuning.epsilon()));
            }
            let data = rows_with_ids(vec![1.0; tuning.min_rows()]);
            tuning
                .select(&data, &mut InsecureSeededRng::new(2))
                .map(drop)
                .map_err(|e| format!("{tuning:?} refused its own min_rows: {e}"))
        });
    }
}

/// The hang of the last round: a held-out share of 1e-18 (and its neighbours) is refused
/// at construction, naming it, and `min_rows` is never reached with it. Before the fix
/// `with_holdout_fraction(1e-18)` was accepted and `min_rows` never returned.
#[test]
fn rejects_holdout_fractions_whose_minimum_size_overflows() {
    for fraction in [1e-18, 1e-12, 5e-324, 1.0 - 1e-16, 1.0 - 1e-12] {
        within_limit(move || {
            let tuning = RandomStopping::new(vec![FixedTrainer::new(0.0, 1.0)], 1.0, 0.1).unwrap();
            match tuning.with_holdout_fraction(fraction) {
                Ok(t) => Err(format!("accepted {fraction:?}: {t:?}")),
                Err(e) if e.to_string().contains(&format!("{fraction:?}")) => Ok(()),
                Err(e) => Err(format!("does not name {fraction:?}: {e}")),
            }
        });
    }
    // The accepted range's ends still answer at once.
    let tuning = RandomStopping::new(vec![FixedTrainer::new(0.0, 1.0)], 1.0, 0.1).unwrap();
    let small = tuning.with_holdout_fraction(1e-8).unwrap();
    assert!(small.min_rows() >= 1_900_000_000 && small.min_rows() <= 1 << 32);
}

/// Settings that give no meaningful guarantee are refused at construction (the issue's
/// examples): δ = 1 from a candidate ε of 10 at γ's default cap is now met by a larger
/// cap, and a cap that cannot keep δ ≤ MAX_DELTA is refused; a total ε above 1000 too.
#[test]
fn rejects_settings_without_a_meaningful_guarantee() {
    let ok = || vec![FixedTrainer::new(0.0, 1.0)];
    // A score ε of 1000: 3000 in all, above the cap.
    let e = RandomStopping::new(ok(), 1000.0, 0.1).unwrap_err();
    assert!(e.to_string().contains("end-to-end epsilon"), "{e}");
    // A candidate ε of 400: 1200 in all.
    let e = RandomStopping::new(vec![FixedTrainer::new(0.0, 400.0)], 1.0, 0.1).unwrap_err();
    assert!(e.to_string().contains("1200"), "{e}");
    // Candidates above the workspace's cap are refused by both selections.
    let e = SplitAndSelect::new(vec![FixedTrainer::new(0.0, 1e4)], 1.0).unwrap_err();
    assert!(
        matches!(e, TuneError::InvalidCandidateEpsilon { .. }),
        "{e}"
    );
    // with_max_runs(1) at γ = 0.1: δ ≥ 0.9·(1 + e^3) > 1.
    let e = RandomStopping::new(ok(), 1.0, 0.1)
        .unwrap()
        .with_max_runs(1)
        .unwrap_err();
    assert!(
        matches!(e, TuneError::DeltaTooLarge { max_runs: 1, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("max runs"), "{e}");
    // A candidate ε of 10 (δ was 1 at the default cap): the default cap now keeps δ small.
    let tuning = RandomStopping::new(vec![FixedTrainer::new(0.0, 10.0)], 1.0, 0.1).unwrap();
    assert!(
        tuning.delta() <= MAX_DELTA,
        "{tuning:?}: {}",
        tuning.delta()
    );
    // No cap up to 10^7 keeps δ below the limit at ε = 999, γ = 1e-4: refused.
    let e = RandomStopping::new(vec![FixedTrainer::new(0.0, 333.0)], 1.0, 1e-4).unwrap_err();
    assert!(matches!(e, TuneError::DeltaTooLarge { .. }), "{e}");
    // Every accepted setting's δ is at most MAX_DELTA; small ε keep the old default cap.
    let tuning = RandomStopping::new(ok(), 0.1, 0.1).unwrap();
    assert!(0.9f64.powi(tuning.max_runs() as i32) <= 1e-9);
    assert!(0.9f64.powi(tuning.max_runs() as i32 - 2) > 1e-9);
}
