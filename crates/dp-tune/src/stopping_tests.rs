//! Random stopping: the output law against the spec, the stopping rule, the split.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use dp_noise::stats::{FALSE_ALARM_RATE, chi_square_test};
use dp_noise::{DiscreteLaplace, InsecureSeededRng};

use crate::RandomStopping;
use crate::stopping::{Stopping, run_on_split};
use crate::test_trainers::{FixedTrainer, labelled, rows_with_ids};

/// `P(K = k)` for k = 1..=T: geometric with stop probability γ, capped at T.
pub fn capped_geometric(gamma: f64, cap: usize) -> Vec<f64> {
    (1..=cap)
        .map(|k| {
            if k < cap {
                gamma * (1.0 - gamma).powi(k as i32 - 1)
            } else {
                (1.0 - gamma).powi(cap as i32 - 1)
            }
        })
        .collect()
}

/// `E[u^K]` for the capped geometric K.
fn generating(law: &[f64], u: f64) -> f64 {
    law.iter()
        .enumerate()
        .map(|(k, p)| p * u.powi(k as i32 + 1))
        .sum()
}

/// The exact law of the released noisy score when one candidate makes `z` held-out
/// mistakes: the minimum of K draws of `z + L`, L discrete Laplace of scale `t`
/// (`P(L = k) ∝ e^{−|k|/t}`), K capped geometric, over the integers `from ..= to`, as
/// `(value, probability)`. From the definitions only (docs/src/reference/algorithms.md §9, Liu–Talwar).
pub fn released_score_law(
    z: i64,
    t: f64,
    gamma: f64,
    cap: usize,
    range: (i64, i64),
) -> Vec<(i64, f64)> {
    best_of_law(z, t, &capped_geometric(gamma, cap), range)
}

/// As [`released_score_law`] for any law of the number of runs (`runs[k − 1] = P(K = k)`).
pub fn best_of_law(z: i64, t: f64, runs: &[f64], (from, to): (i64, i64)) -> Vec<(i64, f64)> {
    let q = (-1.0 / t).exp();
    let pmf = |k: i64| (1.0 - q) / (1.0 + q) * q.powi(k.unsigned_abs() as i32);
    // P(z + L ≥ y) for y in range, by summing the pmf from the top (the tail beyond `to`
    // is left out: callers take ranges where it is negligible).
    let values: Vec<i64> = (from..=to).collect();
    let mut at_least = vec![0.0; values.len() + 1];
    for (i, &y) in values.iter().enumerate().rev() {
        at_least[i] = at_least[i + 1] + pmf(y - z);
    }
    values
        .iter()
        .enumerate()
        .map(|(i, &y)| {
            (
                y,
                generating(runs, at_least[i]) - generating(runs, at_least[i + 1]),
            )
        })
        .collect()
}

/// The released score follows the law computed from the spec (chi-square, false alarm
/// 1e-6), and the number of runs follows the capped geometric law.
#[test]
fn output_and_runs_follow_the_spec() {
    let (gamma, cap, t) = (0.2, 12, 1.5);
    let training = labelled(30, 0);
    let scoring = labelled(20, 8); // an always-+1 model makes 8 mistakes
    let candidates = vec![FixedTrainer::new(f64::NEG_INFINITY, 1.0)];
    let noise = DiscreteLaplace::with_scale_at_least(t).unwrap();
    let stopping = Stopping {
        probability: gamma,
        max_runs: cap,
    };
    let runs = 60_000;
    let span = 40;
    let mut scores = vec![0u64; 2 * span as usize + 1];
    let mut lengths = vec![0u64; cap];
    let mut rng = InsecureSeededRng::new(31);
    for _ in 0..runs {
        let out = run_on_split(
            &candidates,
            &stopping,
            &training,
            &scoring,
            &noise,
            &mut rng,
        )
        .unwrap();
        let k = (out.noisy_mistakes() - 8 + span as i128) as usize;
        let last = scores.len() - 1;
        scores[k.min(last)] += 1;
        lengths[out.secret_runs() - 1] += 1;
    }
    let law = released_score_law(8, t, gamma, cap, (8 - span, 8 + span));
    let expected: Vec<f64> = law.iter().map(|(_, p)| p * runs as f64).collect();
    let test = chi_square_test(&scores, &expected, FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
    let expected: Vec<f64> = capped_geometric(gamma, cap)
        .iter()
        .map(|p| p * runs as f64)
        .collect();
    let test = chi_square_test(&lengths, &expected, FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// The best run is released: with candidates making 0 and 20 mistakes and little noise,
/// the released candidate is the good one whenever it was drawn at all; and candidates
/// are drawn uniformly.
#[test]
fn releases_the_best_run_and_draws_candidates_uniformly() {
    let trained = Arc::new(Mutex::new(Vec::new()));
    let candidates: Vec<FixedTrainer> = [f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY]
        .into_iter()
        .enumerate()
        .map(|(id, cut)| FixedTrainer {
            id,
            trained: Some(trained.clone()),
            ..FixedTrainer::new(cut, 1.0)
        })
        .collect();
    // All labels +1: the always-+1 candidate 0 makes no mistakes, the others 20.
    let training = labelled(25, 0);
    let scoring = labelled(20, 0);
    let noise = DiscreteLaplace::with_scale_at_least(0.5).unwrap();
    let stopping = Stopping {
        probability: 0.25,
        max_runs: 40,
    };
    let mut rng = InsecureSeededRng::new(37);
    let mut released_good = 0;
    let trials = 3000;
    for _ in 0..trials {
        let before = trained.lock().unwrap().len();
        let out = run_on_split(
            &candidates,
            &stopping,
            &training,
            &scoring,
            &noise,
            &mut rng,
        )
        .unwrap();
        let drawn: BTreeSet<usize> = trained.lock().unwrap()[before..]
            .iter()
            .map(|t| t.0)
            .collect();
        // Noise of scale 0.5 moves a score by 10 with probability < e^{-20}.
        assert_eq!(out.index() == 0, drawn.contains(&0));
        released_good += usize::from(out.index() == 0);
    }
    assert!(released_good > trials / 4);
    let draws = trained.lock().unwrap();
    let mut counts = [0u64; 3];
    draws.iter().for_each(|t| counts[t.0] += 1);
    let third = draws.len() as f64 / 3.0;
    let test = chi_square_test(&counts, &[third; 3], FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// Through the public API: the held-out part has ⌈h·n⌉ rows, every run trains on the same
/// training part, and the two parts partition the rows.
#[test]
fn held_out_and_training_parts_partition_the_rows() {
    let trained = Arc::new(Mutex::new(Vec::new()));
    let scored = Arc::new(Mutex::new(Vec::new()));
    let candidates = vec![
        FixedTrainer {
            trained: Some(trained.clone()),
            scored: Some(scored.clone()),
            ..FixedTrainer::new(0.0, 1.0)
        };
        2
    ];
    let tuning = RandomStopping::new(candidates, 1.0, 0.3)
        .unwrap()
        .with_holdout_fraction(0.25)
        .unwrap();
    let n = 203;
    let out = tuning
        .select(
            &rows_with_ids(vec![1.0; n]),
            &mut InsecureSeededRng::new(41),
        )
        .unwrap();
    assert_eq!(out.held_out_rows(), 51);
    let trained = trained.lock().unwrap();
    let scored = scored.lock().unwrap();
    assert_eq!(trained.len(), out.secret_runs());
    assert!(trained.windows(2).all(|w| w[0].1 == w[1].1));
    assert!(scored.windows(2).all(|w| w[0] == w[1]));
    let mut rows: Vec<usize> = trained[0]
        .1
        .iter()
        .chain(&scored[0])
        .map(|&x| x as usize)
        .collect();
    rows.sort_unstable();
    assert_eq!(rows, (0..n).collect::<Vec<_>>());
    assert_eq!(scored[0].len(), 51);
}

/// ε = 3·max(ε_T, ε_S); δ = (1 + e^{3ε_B})(1−γ)^T; the default cap leaves a tail ≤ 1e-9;
/// the cap and γ = 1 bound the runs.
#[test]
fn reports_epsilon_delta_and_cap() {
    let candidates = vec![FixedTrainer::new(0.0, 0.2), FixedTrainer::new(0.0, 0.4)];
    let tuning = RandomStopping::new(candidates.clone(), 0.3, 0.1).unwrap();
    assert_eq!(tuning.base_epsilon(), 0.4);
    assert!((tuning.epsilon() - 1.2).abs() < 1e-12 && tuning.epsilon() >= 3.0 * 0.4);
    let cap = tuning.max_runs();
    assert!(
        0.9f64.powi(cap as i32) <= 1e-9 && 0.9f64.powi(cap as i32 - 2) > 1e-9,
        "{cap}"
    );
    let delta = (1.0 + 1.2f64.exp()) * 0.9f64.powi(cap as i32);
    assert!(tuning.delta() >= delta && tuning.delta() < delta * 1.001);
    assert_eq!(tuning.expected_runs(), 10.0);
    let data = rows_with_ids(vec![1.0; 300]);
    let mut rng = InsecureSeededRng::new(43);
    // A cap of 3 would leave δ ≈ 3: refused; the smallest cap within MAX_DELTA bounds the
    // runs (the cap binding is checked on the runs' law in output_and_runs_follow_the_spec).
    assert!(matches!(
        tuning.with_max_runs(3),
        Err(crate::TuneError::DeltaTooLarge { max_runs: 3, .. })
    ));
    let capped = RandomStopping::new(candidates.clone(), 0.3, 0.1)
        .unwrap()
        .with_max_runs(150)
        .unwrap();
    assert!(capped.delta() <= crate::MAX_DELTA);
    for _ in 0..200 {
        assert!(capped.select(&data, &mut rng).unwrap().secret_runs() <= 150);
    }
    let once = RandomStopping::new(candidates, 0.3, 1.0).unwrap();
    assert_eq!(once.max_runs(), 1);
    let out = once.select(&data, &mut rng).unwrap();
    assert_eq!(out.secret_runs(), 1);
    let shown = format!("{out:?}");
    assert!(!shown.contains("runs"), "{shown}");
}

/// The base ε the faces ask for: its 3ε_B (the sum as the selection reports it) never
/// exceeds the total, and the next base up would.
#[test]
fn the_base_for_a_total_is_the_largest_that_fits() {
    for total in [0.1, 0.3, 1.0, 1.0 / 3.0, 2.5, 7.0, 1e-3, 999.0] {
        let base = crate::stopping_base_epsilon(total).unwrap();
        let three = |b: f64| dp_noise::add_rounding_up(dp_noise::add_rounding_up(b, b), b);
        assert!(three(base) <= total, "{total}: {base}");
        assert!(
            three(base.next_up()) > total,
            "{total}: {base} is not the largest"
        );
    }
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert_eq!(crate::stopping_base_epsilon(bad), None);
    }
}
