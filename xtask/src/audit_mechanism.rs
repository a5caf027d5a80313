//! `cargo xtask audit mechanism <name>`: an empirical ε lower bound for one of the
//! library's mechanisms, beside the claimed ε and the ε the proof allows for the audited
//! pair (docs/src/reference/privacy-testing.md §2).
//!
//! The pair: 49 rows drawn once in `[−1, 1]` (one feature, noisy labels) plus the canary
//! `x* = 1`, labelled +1 in one dataset and −1 in the other (replace one record). Both
//! branches of objective perturbation are audited: Λ = 0.1 (Δ = 0) and Λ = 10⁻³ (Δ > 0),
//! ε = 2, as in dp-erm's own audit tests. The (ε, δ) mechanisms ([`gaussian`]) are audited
//! on the same pair at δ = 10⁻⁵ with the δ-aware bound; DP-SGD ([`dpsgd`]) at the same
//! (ε, δ) on a pair of its own, in one branch, at C = 1 and at a C below the canary's
//! gradient (clipping under audit).

mod dpsgd;
mod gaussian;

use std::fmt::Write as _;
use std::time::Instant;

use dp_audit::{
    LowerBound, NeighbourPair, Neighbouring, Verdict, canary_margin, epsilon_lower_bound,
    gamma_noise_likelihood_ratio, judge, label_flip_canary, run_scores,
};
use dp_erm::{ErmParams, Loss, ObjectiveCalibration, TrainingSet};
use dp_noise::InsecureSeededRng;
use serde::Serialize;

use crate::keep::{self, Holdings};

/// Every mechanism the command audits, by name: pure ε, then (ε, δ).
pub const MECHANISMS: [&str; 11] = [
    "objective-logistic",
    "objective-logistic-cliff-free",
    "objective-huber",
    "objective-huber-cliff-free",
    "output-logistic",
    "output-huber",
    gaussian::NAMES[0],
    gaussian::NAMES[1],
    gaussian::NAMES[2],
    dpsgd::NAME,
    dpsgd::CLIPPED_NAME,
];

/// The neighbouring relation every audit's pair instantiates.
const RELATION: &str = "replace one record (the canary's label flips; n fixed)";

const ROWS: usize = 50;
const EPSILON: f64 = 2.0;
const ALPHA: f64 = 1e-6;
const BRANCHES: [f64; 2] = [0.1, 1e-3];
/// Fits per dataset of the full audit (`--quick` runs 20,000).
const FULL_RUNS: usize = 100_000;

fn params(name: &str, lambda: f64) -> Option<ErmParams> {
    let huber = Loss::huber(0.5).ok()?;
    Some(match name {
        "objective-logistic" => ErmParams::objective_perturbation(Loss::Logistic, lambda, EPSILON)
            .objective_calibration(ObjectiveCalibration::Cms11),
        "objective-logistic-cliff-free" => {
            ErmParams::objective_perturbation(Loss::Logistic, lambda, EPSILON)
                .objective_calibration(ObjectiveCalibration::CliffFree)
        }
        "objective-huber" => ErmParams::objective_perturbation(huber, lambda, EPSILON)
            .objective_calibration(ObjectiveCalibration::Cms11),
        "objective-huber-cliff-free" => ErmParams::objective_perturbation(huber, lambda, EPSILON)
            .objective_calibration(ObjectiveCalibration::CliffFree),
        "output-logistic" => ErmParams::output_perturbation(Loss::Logistic, lambda, EPSILON),
        "output-huber" => ErmParams::output_perturbation(huber, lambda, EPSILON),
        _ => return None,
    })
}

/// The neighbouring pair (see the module docs), from a fixed seed.
fn pair(seed: u64) -> Result<(TrainingSet, TrainingSet), dp_audit::AuditError> {
    let base = label_flip_canary(ROWS - 1, seed)?;
    let pair = NeighbourPair::new(&base, Neighbouring::FlipLabel { index: ROWS - 1 })?;
    Ok((pair.first, pair.second))
}

/// One audited branch.
#[derive(Serialize)]
struct Row {
    mechanism: String,
    regularization: f64,
    claimed_epsilon: f64,
    /// 0 for the pure-ε mechanisms.
    claimed_delta: f64,
    relation: &'static str,
    /// What the proof allows on this pair, where it has a closed form.
    pair_epsilon: Option<f64>,
    how_pair_epsilon: &'static str,
    score: &'static str,
    runs_per_dataset: usize,
    /// For (ε, δ) mechanisms `bound.epsilon` is the δ-aware bound.
    bound: LowerBound,
    verdict: Verdict,
    seconds: f64,
}

/// What one audited branch found.
struct Branch {
    bound: LowerBound,
    verdict: Verdict,
    pair_epsilon: Option<f64>,
    how_pair_epsilon: &'static str,
    score: &'static str,
    claimed_delta: f64,
}

/// The ε a pair allows, how it was derived, and the score that reaches it.
struct PairInfo {
    epsilon: Option<f64>,
    how: &'static str,
    score: &'static str,
    /// The solver points on each dataset (output perturbation's likelihood ratio).
    centres: Option<(Vec<f64>, Vec<f64>)>,
}

/// The ε this pair allows and the score that reaches it.
///
/// Objective perturbation, logistic loss: the label flip shifts the recovered noise by
/// exactly `x*`, so the exact minimizers are `β‖x*‖ = ε'/2` apart in privacy loss; the
/// minimizer noise adds at most its share ε/100. Score: the canary margin.
/// Output perturbation: the released point is `f̂ + b`; the log-likelihood ratio of an
/// output `o` is `β(‖o − f̂'‖ − ‖o − f̂‖)`, at most `β‖f̂ − f̂'‖`, with `f̂`, `f̂'` the
/// (deterministic) solver points on each dataset. Score: that exact likelihood ratio.
/// Huber objective perturbation has no closed form (the shift lies between `x*` and `2x*`
/// and the Jacobian changes): only the claim is checked.
fn pair_epsilon_and_score(
    name: &str,
    params: &ErmParams,
    first: &TrainingSet,
    second: &TrainingSet,
) -> Result<PairInfo, dp_erm::ErmError> {
    let calibration = params
        .noise_calibration(first.len(), first.features())?
        .expect("a private mechanism");
    if name.starts_with("output") {
        // The solver point does not depend on the noise: any seed gives it.
        let centre = |data: &TrainingSet| -> Result<Vec<f64>, dp_erm::ErmError> {
            Ok(params
                .fit(data, &mut InsecureSeededRng::new(0))?
                .secret_solver_weights()
                .to_vec())
        };
        let (a, b) = (centre(first)?, centre(second)?);
        let distance = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y) * (x - y))
            .sum::<f64>()
            .sqrt();
        return Ok(PairInfo {
            epsilon: Some(calibration.beta * distance),
            how: "β·‖f̂ − f̂'‖ (solver points on each dataset)",
            score: "exact likelihood ratio",
            centres: Some((a, b)),
        });
    }
    if name.starts_with("objective-logistic") {
        let share = calibration.minimizer_noise.map_or(0.0, |m| m.epsilon);
        return Ok(PairInfo {
            epsilon: Some(calibration.beta + share),
            how: "ε'/2 + ε/100 (label flip shifts the noise by x*)",
            score: "canary margin",
            centres: None,
        });
    }
    Ok(PairInfo {
        epsilon: None,
        how: "no closed form",
        score: "canary margin",
        centres: None,
    })
}

/// Audits `name` on both branches with `runs` fits per dataset and writes
/// `audit_<name>.json` and `.md` into `out`. Returns whether every verdict is consistent.
pub fn run(
    name: &str,
    quick: bool,
    runs: Option<usize>,
    seed: u64,
    out: &std::path::Path,
) -> Result<bool, Box<dyn std::error::Error>> {
    if params(name, BRANCHES[0]).is_none()
        && gaussian::params(name, BRANCHES[0]).is_none()
        && dpsgd::clip_norm(name).is_none()
    {
        return Err(format!(
            "unknown mechanism {name:?}; known: {}",
            MECHANISMS.join(", ")
        )
        .into());
    }
    let runs = runs.unwrap_or(if quick { 20_000 } else { FULL_RUNS });
    dp_audit::require_power(runs, EPSILON, ALPHA)?;
    let stem = format!("audit_{name}");
    let (json_name, md_name) = (format!("{stem}.json"), format!("{stem}.md"));
    // Fewer runs than the full audit's do not replace a full audit's report.
    let earlier = |out: &std::path::Path| {
        let rows = keep::read_json(&out.join(&json_name))?;
        let fewest = rows
            .as_array()?
            .iter()
            .filter_map(|row| row.get("runs_per_dataset")?.as_u64())
            .min()?;
        Some(Holdings::new(fewest < FULL_RUNS as u64))
    };
    let this = Holdings::new(runs < FULL_RUNS);
    let out = keep::destination(out, &[&json_name, &md_name], &this, earlier)?;
    let (first, second) = pair(seed)?;
    let mut rows = Vec::new();
    // DP-SGD has no Λ branches: one row, Λ = 0.
    let branches: &[f64] = if dpsgd::clip_norm(name).is_some() {
        &[0.0]
    } else {
        &BRANCHES
    };
    for (branch, &lambda) in branches.iter().enumerate() {
        let started = Instant::now();
        let base = seed.wrapping_mul(31).wrapping_add(branch as u64 * 2);
        let found = match (dpsgd::clip_norm(name), params(name, lambda)) {
            (Some(clip), _) => dpsgd::audit_branch(runs, base, clip)?,
            (None, Some(params)) => pure_branch(name, &params, runs, base, &first, &second)?,
            (None, None) => gaussian::audit_branch(name, lambda, runs, base, &first, &second)?,
        };
        let pair_epsilon = found.pair_epsilon;
        let row = Row {
            mechanism: name.to_owned(),
            regularization: lambda,
            claimed_epsilon: EPSILON,
            claimed_delta: found.claimed_delta,
            relation: RELATION,
            pair_epsilon,
            how_pair_epsilon: found.how_pair_epsilon,
            score: found.score,
            runs_per_dataset: runs,
            bound: found.bound,
            verdict: found.verdict,
            seconds: started.elapsed().as_secs_f64(),
        };
        println!(
            "{name}, Λ = {lambda:e}: ε_LB = {} (claimed ({EPSILON}, {}), pair {}) from {} + {} of {} test runs, {:?}, {:.1} s",
            shown_bound(row.bound.epsilon),
            row.claimed_delta,
            pair_epsilon.map_or("—".into(), |p| format!("{p:.3}")),
            row.bound.favoured_count,
            row.bound.other_count,
            row.bound.trials,
            row.verdict,
            row.seconds
        );
        rows.push(row);
    }
    out.write(&json_name, serde_json::to_string_pretty(&rows)?)?;
    out.write(&md_name, markdown(name, &rows))?;
    crate::audit_summary::regenerate(&out)?;
    println!(
        "wrote {} and {}",
        out.path().join(&json_name).display(),
        md_name
    );
    Ok(rows.iter().all(|r| r.verdict == Verdict::Consistent))
}

/// One branch of a pure-ε audit: the score the pair calls for, the bound and its verdict.
fn pure_branch(
    name: &str,
    params: &ErmParams,
    runs: usize,
    base: u64,
    first: &TrainingSet,
    second: &TrainingSet,
) -> Result<Branch, Box<dyn std::error::Error>> {
    let PairInfo {
        epsilon: pair_epsilon,
        how,
        score: score_name,
        centres,
    } = pair_epsilon_and_score(name, params, first, second)?;
    let score = |data: &TrainingSet, run_seed: u64| {
        run_scores(runs, run_seed, |rng| {
            let Ok(fit) = params.fit(data, rng) else {
                return f64::NAN;
            };
            let weights = fit.model().weights();
            match &centres {
                Some((a, b)) => gamma_noise_likelihood_ratio(weights, a, b),
                None => canary_margin(weights, &[(0, 1.0)], 1.0),
            }
        })
    };
    let (first_scores, second_scores) = (score(first, base + 1)?, score(second, base + 2)?);
    let bound = epsilon_lower_bound(&first_scores, &second_scores, ALPHA)?;
    let verdict = judge(&bound, EPSILON, pair_epsilon)?;
    Ok(Branch {
        bound,
        verdict,
        pair_epsilon,
        how_pair_epsilon: how,
        score: score_name,
        claimed_delta: 0.0,
    })
}

/// A lower bound for people: one at or below 0 is no evidence of leakage at all, and is
/// shown as such rather than as a negative ε (the JSON keeps the raw value).
fn shown_bound(epsilon: f64) -> String {
    if epsilon > 0.0 {
        format!("{epsilon:.3}")
    } else {
        "0 (no evidence of leakage)".to_owned()
    }
}

fn markdown(name: &str, rows: &[Row]) -> String {
    let (epsilon, delta) = rows
        .first()
        .map_or((EPSILON, 0.0), |r| (r.claimed_epsilon, r.claimed_delta));
    let claim = if delta > 0.0 {
        format!(
            "Claimed guarantee: ({epsilon}, {delta:e})-DP; the bound is δ-aware, \
             ln((CP_low(p₀) − δ)/CP_high(p₁)), 0 where CP_low(p₀) ≤ δ."
        )
    } else {
        format!("Claimed guarantee: {epsilon}-DP (pure).")
    };
    let mut s = format!(
        "# Privacy audit: {name}\n\n{claim} Neighbouring relation: {RELATION}.\n\n\
         Neighbouring pair: 49 shared rows and a canary x* = 1 whose label flips (replace one \
         record), n = {ROWS}. Each dataset is trained on `runs` times from per-run seeds; a \
         threshold on the score is chosen on half of the runs, and the other half's counts \
         give a Clopper–Pearson lower bound on ε at confidence 1 − {ALPHA:e}. A correct \
         mechanism keeps the bound below the claimed ε and below the pair's ε.\n\n\
         | Λ | score | runs per dataset | ε lower bound | pair ε | claimed (ε, δ) | counts (favoured / other of test runs) | verdict | seconds |\n\
         |---|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {:e} | {} | {} | {} | {} | ({}, {:e}) | {} / {} of {} | {:?} | {:.1} |",
            r.regularization,
            r.score,
            r.runs_per_dataset,
            shown_bound(r.bound.epsilon),
            r.pair_epsilon
                .map_or("— (no closed form)".into(), |p| format!(
                    "{p:.3} ({})",
                    r.how_pair_epsilon
                )),
            r.claimed_epsilon,
            r.claimed_delta,
            r.bound.favoured_count,
            r.bound.other_count,
            r.bound.trials,
            r.verdict,
            r.seconds
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("xtask-audit-{name}-{}", std::process::id()))
    }

    #[test]
    fn rejects_unknown_mechanism_names_listing_the_known_ones() {
        let err = run("objective-logistc", true, None, 1, &scratch("unknown")).unwrap_err();
        assert!(err.to_string().contains("objective-logistic"), "{err}");
    }

    #[test]
    fn rejects_too_few_runs_for_the_confidence() {
        let err = run("output-huber", true, Some(50), 1, &scratch("few")).unwrap_err();
        assert!(err.to_string().contains("too few"), "{err}");
    }

    /// Every mechanism passes its own audit (small, so the test is fast), and the reports
    /// are written.
    #[test]
    fn every_mechanism_passes_a_small_audit() {
        let out = scratch("all");
        for name in MECHANISMS {
            assert!(run(name, true, Some(20_000), 3, &out).unwrap(), "{name}");
            assert!(out.join(format!("audit_{name}.md")).is_file());
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
