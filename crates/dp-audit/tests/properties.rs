//! Property tests over every public constructor and parameter check of dp-audit: arbitrary
//! f64 (NaN, ±∞, subnormals, huge) and usize (0, 1, MAX) inputs give either a value that
//! then works, or an error whose message names an offending value — never a panic, never a
//! hang or a huge allocation (each case runs in its own thread with a time limit).

use std::time::Duration;

use proptest::prelude::*;

use dp_audit::{
    AuditError, LabelledRows, LowerBound, MAX_ROWS, MAX_RUNS, NeighbourPair, Neighbouring, Tail,
    epsilon_lower_bound, judge, label_flip_canary, largest_detectable, require_power, run_scores,
    runs_needed,
};

/// Time one case may take: generous, for a loaded 2-core machine; the hangs and
/// gigabyte allocations it guards against take far longer.
const LIMIT: Duration = Duration::from_secs(10);

fn within_limit(case: impl FnOnce() -> Result<(), String> + Send + 'static) {
    dp_test_support::case_within(LIMIT, case)
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => any::<f64>(),
        2 => prop_oneof![
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(5e-324),
            Just(f64::MAX),
            Just(1e-6),
        ],
        3 => 1e-9..20.0f64,
    ]
}

fn any_usize() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        Just(1usize),
        Just(usize::MAX),
        Just(1usize << 63),
        Just(MAX_RUNS + 1),
        Just(MAX_ROWS),
        1usize..200,
        any::<usize>(),
    ]
}

/// `Ok` if the error's message names one of the values (f64 as `{:?}`, usize exactly).
fn names(e: &AuditError, floats: &[f64], counts: &[usize]) -> Result<(), String> {
    let message = e.to_string();
    if floats.iter().any(|v| message.contains(&format!("{v:?}")))
        || counts.iter().any(|v| message.contains(&v.to_string()))
    {
        Ok(())
    } else {
        Err(format!("the error names no input: {message}"))
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn power_checks_accept_or_name_the_value(
        runs in any_usize(),
        target in any_f64(),
        alpha in any_f64(),
    ) {
        within_limit(move || {
            match require_power(runs, target, alpha) {
                Ok(()) => {
                    // Accepted: the runs are within the cap and can show the target.
                    let largest = largest_detectable(runs, alpha).map_err(|e| e.to_string())?;
                    if !(runs <= MAX_RUNS && largest > target) {
                        return Err(format!("accepted {runs} runs, largest {largest}"));
                    }
                }
                Err(AuditError::TooFewRuns { .. }) => {}
                Err(e) => names(&e, &[target, alpha], &[runs])?,
            }
            match largest_detectable(runs, alpha) {
                Ok(value) if value.is_nan() => return Err("NaN".to_owned()),
                Ok(_) => {}
                Err(e) => names(&e, &[alpha], &[runs])?,
            }
            match runs_needed(target, alpha) {
                Ok(Some(needed)) if needed > MAX_RUNS => Err(format!("{needed}")),
                Ok(_) => Ok(()),
                Err(e) => names(&e, &[target, alpha], &[]),
            }
        });
    }

    #[test]
    fn run_scores_runs_or_refuses_before_running(runs in any_usize(), seed in any::<u64>()) {
        within_limit(move || {
            // Counts that would take long are only checked for refusal.
            let small = runs <= 10_000;
            match run_scores(if small || runs > MAX_RUNS { runs } else { 0 }, seed, |_| 1.0) {
                Ok(scores) if scores.len() == runs || !small => Ok(()),
                Ok(scores) => Err(format!("{} scores for {runs} runs", scores.len())),
                Err(e) if runs > MAX_RUNS => names(&e, &[], &[runs]),
                Err(e) => Err(format!("refused {runs}: {e}")),
            }
        });
    }

    #[test]
    fn datasets_build_or_name_the_value(
        features in any_usize(),
        rows in 0usize..6,
        labels in 0usize..6,
        shared in any_usize(),
        value in any_f64(),
        index in any_usize(),
    ) {
        within_limit(move || {
            let width = features.min(4);
            let values = vec![value; width * rows];
            match LabelledRows::dense(features, &values, vec![1.0; labels]) {
                Ok(data) => {
                    if data.rows.len() != labels || data.features != features {
                        return Err(format!("{data:?} from {features} × {labels}"));
                    }
                }
                Err(e) => names(&e, &[], &[features, labels, values.len()])?,
            }
            match label_flip_canary(shared, 1) {
                Ok(data) if data.rows.len() == shared + 1 => {}
                Ok(data) => return Err(format!("{data:?} for {shared}")),
                Err(e) => names(&e, &[], &[shared])?,
            }
            // Public fields that disagree, and any index.
            let base = LabelledRows {
                features: width.max(1),
                rows: vec![vec![(0, value.clamp(-1.0, 1.0))]; rows],
                labels: vec![1.0; labels],
            };
            for relation in [
                Neighbouring::FlipLabel { index },
                Neighbouring::RemoveRow { index },
                Neighbouring::ReplaceRow { index, row: vec![(0, value)], label: -1.0 },
                Neighbouring::AddCanary { row: vec![(0, value)], label: 1.0 },
            ] {
                match NeighbourPair::new(&base, relation) {
                    Ok(pair) => {
                        if pair.first.len() != rows {
                            return Err(format!("{pair:?}"));
                        }
                    }
                    // dp-erm's row checks name the row and value their own way.
                    Err(AuditError::Data(_)) => {}
                    Err(e) => names(&e, &[value], &[index, rows, labels])?,
                }
            }
            Ok(())
        });
    }

    #[test]
    fn bounds_and_verdicts_accept_or_name_the_value(
        first in proptest::collection::vec(any_f64(), 0..40),
        second in proptest::collection::vec(any_f64(), 0..40),
        alpha in any_f64(),
        claimed in any_f64(),
        pair in proptest::option::of(any_f64()),
        epsilon in any_f64(),
    ) {
        within_limit(move || {
            match epsilon_lower_bound(&first, &second, alpha) {
                Ok(bound) if bound.epsilon.is_nan() => return Err(format!("{bound:?}")),
                Ok(_) => {}
                Err(AuditError::NanScore { .. }) => {}
                Err(e) => names(&e, &[alpha], &[first.len(), second.len()])?,
            }
            let bound = LowerBound {
                epsilon,
                threshold: 0.0,
                tail: Tail::Above,
                favours_first: true,
                favoured_count: 0,
                other_count: 0,
                trials: 1,
                alpha: 0.5,
            };
            match judge(&bound, claimed, pair) {
                Ok(_) => {
                    let fine = |v: f64| v.is_finite() && v >= 0.0;
                    if !(fine(claimed) && pair.is_none_or(|p| fine(p) && p <= claimed)
                        && !epsilon.is_nan())
                    {
                        return Err(format!("judged {epsilon:?} against {claimed:?}, {pair:?}"));
                    }
                    Ok(())
                }
                Err(e) => names(&e, &[claimed, epsilon, pair.unwrap_or(f64::NAN)], &[]),
            }
        });
    }
}
