//! From scores to a lower bound on ε, and a verdict against the claim.

use dp_noise::stats::clopper_pearson;
use serde::Serialize;

use crate::AuditError;

/// Which side of the threshold counts as the event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Tail {
    /// Scores above the threshold.
    Above,
    /// Scores at or below the threshold.
    AtOrBelow,
}

/// A lower bound on the privacy loss between two datasets, with what it rests on.
///
/// With `k₁` of `n` test runs on the dataset the event favours and `k₂` of `n` on the
/// other, `ε_LB = ln CP_low(k₁/n) − ln CP_high(k₂/n)`, each two-sided Clopper–Pearson
/// bound at level `α`: the true loss of any ε-DP mechanism is below `ε_LB` with probability
/// at most `α` (one-sided `α/2` each, by the union bound). The threshold and tail were
/// chosen on the other half of the runs, so they do not depend on the counted half.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LowerBound {
    /// `ε_LB` (−∞ when the favoured count is 0).
    pub epsilon: f64,
    /// The score threshold, chosen on the selection half.
    pub threshold: f64,
    /// Which side of it is the event.
    pub tail: Tail,
    /// Whether the event is likelier under the first dataset (else under the second).
    pub favours_first: bool,
    /// Test-half runs in which the event happened, on the dataset it favours.
    pub favoured_count: usize,
    /// Test-half runs in which the event happened, on the other dataset.
    pub other_count: usize,
    /// Test-half runs per dataset.
    pub trials: usize,
    /// The false-alarm rate α: the bound holds with confidence `1 − α`.
    pub alpha: f64,
}

/// `ln CP_low(a/n) − ln CP_high(b/n)`.
fn log_ratio_bound(a: usize, b: usize, n: usize, alpha: f64) -> f64 {
    let low = clopper_pearson(a as u64, n as u64, alpha).0;
    let high = clopper_pearson(b as u64, n as u64, alpha).1;
    if low <= 0.0 {
        f64::NEG_INFINITY
    } else {
        low.ln() - high.ln()
    }
}

/// The largest `ε_LB` that `runs` runs per dataset can show at level `alpha`, reached by a
/// perfect distinguisher (the event in every test run of one dataset, none of the other);
/// `−∞` for fewer than 2 runs. Refuses `alpha` outside (0, 1) and more than [`MAX_RUNS`]
/// runs.
pub fn largest_detectable(runs: usize, alpha: f64) -> Result<f64, AuditError> {
    check_alpha(alpha)?;
    check_runs(runs)?;
    Ok(largest_detectable_checked(runs, alpha))
}

/// [`largest_detectable`] for checked arguments.
fn largest_detectable_checked(runs: usize, alpha: f64) -> f64 {
    let half = runs - runs / 2;
    if half == 0 {
        return f64::NEG_INFINITY;
    }
    log_ratio_bound(half, 0, half, alpha)
}

/// The fewest runs per dataset (at most [`MAX_RUNS`]) whose [`largest_detectable`] lower
/// bound exceeds `target` at false-alarm rate `alpha`, or `None` if even `MAX_RUNS` do not.
/// Refuses `alpha` outside (0, 1) and a `target` that is not finite and > 0.
pub fn runs_needed(target: f64, alpha: f64) -> Result<Option<usize>, AuditError> {
    check_alpha(alpha)?;
    check_target(target)?;
    let enough = |runs: usize| largest_detectable_checked(runs, alpha) > target;
    if !enough(MAX_RUNS) {
        return Ok(None);
    }
    // The bound grows with the runs: bisect between too few and enough (at most
    // log2(MAX_RUNS) < 27 steps).
    let (mut low, mut high) = (0, MAX_RUNS);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if enough(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Ok(Some(high))
}

/// A false-alarm rate: strictly between 0 and 1.
fn check_alpha(alpha: f64) -> Result<f64, AuditError> {
    if alpha > 0.0 && alpha < 1.0 {
        Ok(alpha)
    } else {
        Err(AuditError::InvalidParameter {
            what: "alpha",
            value: alpha,
            requirement: "in (0, 1)",
        })
    }
}

/// The loss an audit must be able to show: finite and > 0.
fn check_target(target: f64) -> Result<f64, AuditError> {
    if target.is_finite() && target > 0.0 {
        Ok(target)
    } else {
        Err(AuditError::InvalidParameter {
            what: "target epsilon",
            value: target,
            requirement: "finite and > 0",
        })
    }
}

/// A run count within [`MAX_RUNS`].
fn check_runs(runs: usize) -> Result<usize, AuditError> {
    if runs > MAX_RUNS {
        Err(AuditError::TooManyRuns {
            runs,
            max: MAX_RUNS,
        })
    } else {
        Ok(runs)
    }
}

/// Candidate thresholds: this many quantiles of the pooled selection half.
const THRESHOLDS: usize = 200;

/// The audit's lower bound from `first` (scores of runs on one dataset) and `second` (runs
/// on its neighbour), at false-alarm rate `alpha`. The first half of each list selects the
/// threshold and tail that maximise the bound; the second half is counted.
pub fn epsilon_lower_bound(
    first: &[f64],
    second: &[f64],
    alpha: f64,
) -> Result<LowerBound, AuditError> {
    check_alpha(alpha)?;
    if first.len() != second.len() {
        return Err(AuditError::LengthMismatch {
            what: "scores of the second dataset",
            expected: first.len(),
            found: second.len(),
        });
    }
    if first.len() < 4 {
        return Err(AuditError::InvalidCount {
            what: "runs per dataset",
            value: first.len(),
            requirement: "at least 4",
        });
    }
    for (dataset, scores) in [first, second].into_iter().enumerate() {
        if let Some(run) = scores.iter().position(|s| s.is_nan()) {
            return Err(AuditError::NanScore { dataset, run });
        }
    }
    let half = first.len() / 2;
    let (select_first, test_first) = first.split_at(half);
    let (select_second, test_second) = second.split_at(half);
    let count = |scores: &[f64], t: f64, tail: Tail| match tail {
        Tail::Above => scores.iter().filter(|&&s| s > t).count(),
        Tail::AtOrBelow => scores.iter().filter(|&&s| s <= t).count(),
    };
    // Privacy loss is symmetric: the event may favour either dataset, on either side.
    let counts = |first: &[f64], second: &[f64], t: f64, tail: Tail, favours_first: bool| {
        let (a, b) = (count(first, t, tail), count(second, t, tail));
        if favours_first { (a, b) } else { (b, a) }
    };
    let mut pooled: Vec<f64> = select_first.iter().chain(select_second).copied().collect();
    pooled.sort_by(f64::total_cmp);
    let (threshold, tail, favours_first, _) = (1..THRESHOLDS)
        .map(|q| pooled[q * pooled.len() / THRESHOLDS])
        .flat_map(|t| {
            [Tail::Above, Tail::AtOrBelow]
                .into_iter()
                .flat_map(move |tail| [(t, tail, true), (t, tail, false)])
        })
        .map(|(t, tail, favours_first)| {
            let (favoured, other) = counts(select_first, select_second, t, tail, favours_first);
            (
                t,
                tail,
                favours_first,
                log_ratio_bound(favoured, other, half, alpha),
            )
        })
        .max_by(|a, b| a.3.total_cmp(&b.3))
        .expect("at least one candidate threshold");
    let trials = test_first.len().min(test_second.len());
    let (test_first, test_second) = (&test_first[..trials], &test_second[..trials]);
    let (favoured_count, other_count) =
        counts(test_first, test_second, threshold, tail, favours_first);
    Ok(LowerBound {
        epsilon: log_ratio_bound(favoured_count, other_count, trials, alpha),
        threshold,
        tail,
        favours_first,
        favoured_count,
        other_count,
        trials,
        alpha,
    })
}

/// What an audit says about a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// The lower bound stays within the claimed ε (and within the pair's ε, if given).
    Consistent,
    /// The lower bound exceeds the ε that this particular pair allows, though not the
    /// claimed ε: the mechanism leaks more on this pair than its proof allows.
    ExceedsPairEpsilon,
    /// The lower bound exceeds the claimed ε: the mechanism is not ε-DP (with confidence
    /// `1 − α`).
    ExceedsClaim,
}

/// The verdict of `bound` against the `claimed` ε and, where the proof gives one for this
/// pair, the pair-specific ε (at most the claim). Refuses a claim or pair ε that is NaN,
/// negative or infinite, a pair ε above the claim, and a NaN bound: none of them can be
/// judged, and calling them "consistent" would pass anything.
pub fn judge(bound: &LowerBound, claimed: f64, pair: Option<f64>) -> Result<Verdict, AuditError> {
    let check = |what, value: f64| {
        if value.is_finite() && value >= 0.0 {
            Ok(value)
        } else {
            Err(AuditError::InvalidParameter {
                what,
                value,
                requirement: "finite and >= 0",
            })
        }
    };
    let claimed = check("claimed epsilon", claimed)?;
    if let Some(pair) = pair
        && check("pair epsilon", pair)? > claimed
    {
        return Err(AuditError::InvalidParameter {
            what: "pair epsilon",
            value: pair,
            requirement: "at most the claimed epsilon",
        });
    }
    if bound.epsilon.is_nan() {
        return Err(AuditError::InvalidParameter {
            what: "lower bound epsilon",
            value: bound.epsilon,
            requirement: "a number (not NaN)",
        });
    }
    Ok(if bound.epsilon > claimed {
        Verdict::ExceedsClaim
    } else if pair.is_some_and(|pair| bound.epsilon > pair) {
        Verdict::ExceedsPairEpsilon
    } else {
        Verdict::Consistent
    })
}

/// Most runs per dataset an audit accepts (their scores are held in memory).
pub const MAX_RUNS: usize = 100_000_000;

/// Refuses an audit whose runs could not show a loss of `target` even against a perfect
/// distinguisher (it would pass any mechanism), or that asks for more than [`MAX_RUNS`];
/// and, first, an `alpha` outside (0, 1) or a `target` that is not finite and > 0. Call it
/// before the runs: every refusal of the audit's parameters comes from here, not after
/// the fits.
pub fn require_power(runs: usize, target: f64, alpha: f64) -> Result<(), AuditError> {
    check_alpha(alpha)?;
    check_target(target)?;
    check_runs(runs)?;
    let largest = largest_detectable_checked(runs, alpha);
    if largest > target {
        Ok(())
    } else {
        Err(AuditError::TooFewRuns {
            runs,
            target,
            largest,
            alpha,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_few_runs_say_how_many_would_do() {
        let (target, alpha) = (1.0, 1e-6);
        let needed = runs_needed(target, alpha).unwrap().unwrap();
        assert!(largest_detectable(needed, alpha).unwrap() > target);
        assert!(largest_detectable(needed - 1, alpha).unwrap() <= target);
        let message = require_power(10, target, alpha).unwrap_err().to_string();
        assert!(
            message.contains(&format!("use at least {needed} runs")),
            "{message}"
        );
        // No runs at all: no "-inf" in the message.
        let message = require_power(0, target, alpha).unwrap_err().to_string();
        assert!(
            message.contains("no leakage at all") && !message.contains("inf"),
            "{message}"
        );
        assert!(runs_needed(1e6, alpha).unwrap().is_none());
        // Too many: the count exactly as given, not rounded through f64.
        let message = require_power(usize::MAX, target, alpha)
            .unwrap_err()
            .to_string();
        assert!(
            message.contains(&usize::MAX.to_string()) && message.contains("100000000"),
            "{message}"
        );
    }

    #[test]
    fn identical_distributions_give_no_evidence() {
        let first: Vec<f64> = (0..4000).map(|i| (i % 97) as f64).collect();
        let bound = epsilon_lower_bound(&first, &first, 1e-6).unwrap();
        assert!(bound.epsilon <= 0.0, "{bound:?}");
    }

    #[test]
    fn separated_distributions_reach_the_largest_detectable_bound() {
        let first = vec![1.0; 4000];
        let second = vec![0.0; 4000];
        let bound = epsilon_lower_bound(&first, &second, 1e-6).unwrap();
        assert_eq!(bound.epsilon, largest_detectable(4000, 1e-6).unwrap());
        assert_eq!(
            (bound.favoured_count, bound.other_count, bound.trials),
            (2000, 0, 2000)
        );
        assert_eq!(judge(&bound, 1.0, None).unwrap(), Verdict::ExceedsClaim);
    }

    #[test]
    fn rejects_too_few_runs_nan_scores_and_bad_alpha() {
        assert!(matches!(
            require_power(100, 5.0, 1e-6),
            Err(AuditError::TooFewRuns { runs: 100, .. })
        ));
        assert!(require_power(100_000, 5.0, 1e-6).is_ok());
        assert!(require_power(usize::MAX, 5.0, 1e-6).is_err());
        let mut scores = vec![0.0; 10];
        scores[3] = f64::NAN;
        assert_eq!(
            epsilon_lower_bound(&scores, &[0.0; 10], 1e-6).unwrap_err(),
            AuditError::NanScore { dataset: 0, run: 3 }
        );
        assert!(epsilon_lower_bound(&[0.0; 10], &[0.0; 10], 0.0).is_err());
        assert!(epsilon_lower_bound(&[0.0; 10], &[0.0; 9], 1e-6).is_err());
    }

    /// α outside (0, 1) is refused by every function that takes it, naming α and its
    /// value, before any work: an audit asks `require_power` first and so never runs its
    /// fits with a bad α.
    #[test]
    fn rejects_alpha_outside_the_open_unit_interval_everywhere() {
        for alpha in [0.0, 1.0, -1e-6, 1.5, f64::NAN, f64::INFINITY, -0.0] {
            let shown = format!("{alpha:?}");
            let errors = [
                require_power(100_000, 1.0, alpha).unwrap_err(),
                largest_detectable(100_000, alpha).unwrap_err(),
                runs_needed(1.0, alpha).unwrap_err(),
                epsilon_lower_bound(&[0.0; 10], &[0.0; 10], alpha).unwrap_err(),
            ];
            for e in errors {
                assert!(
                    matches!(e, AuditError::InvalidParameter { what: "alpha", .. }),
                    "{e:?}"
                );
                let message = e.to_string();
                assert!(
                    message.contains("alpha") && message.contains(&shown),
                    "{message}"
                );
            }
        }
        for target in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = require_power(100_000, target, 1e-6).unwrap_err();
            assert!(e.to_string().contains("target epsilon"), "{e}");
            assert!(runs_needed(target, 1e-6).is_err());
        }
        assert!(matches!(
            largest_detectable(usize::MAX, 1e-6),
            Err(AuditError::TooManyRuns { .. })
        ));
    }

    /// A claim that is NaN (or a NaN bound, or a pair ε above the claim) is refused, never
    /// judged "Consistent".
    #[test]
    fn rejects_claims_that_cannot_be_judged() {
        let bound = epsilon_lower_bound(&[1.0; 4000], &[0.0; 4000], 1e-6).unwrap();
        for claimed in [f64::NAN, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
            let e = judge(&bound, claimed, None).unwrap_err();
            assert!(e.to_string().contains("claimed epsilon"), "{e}");
        }
        for pair in [f64::NAN, -0.5, 2.0] {
            let e = judge(&bound, 1.0, Some(pair)).unwrap_err();
            assert!(e.to_string().contains("pair epsilon"), "{e}");
            assert!(e.to_string().contains(&format!("{pair:?}")), "{e}");
        }
        let nan_bound = LowerBound {
            epsilon: f64::NAN,
            ..bound
        };
        assert!(judge(&nan_bound, 1.0, None).is_err());
        // Counts are printed as integers.
        let e = epsilon_lower_bound(&[0.0; 3], &[0.0; 3], 1e-6).unwrap_err();
        assert!(e.to_string().contains("= 3 "), "{e}");
    }
}
