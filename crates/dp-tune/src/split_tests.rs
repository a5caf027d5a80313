//! Split-and-select: the partition, the selection law, the utility bound, end to end.

use std::collections::BTreeSet;
use std::sync::Arc;

use dp_erm::{Classifier, ErmParams, Examples, Features, Loss};
use dp_noise::stats::{FALSE_ALARM_RATE, chi_square_test, clopper_pearson};
use dp_noise::{ExponentialMechanism, InsecureSeededRng};

use crate::split::select_among;
use crate::test_trainers::{FixedTrainer, ScoreLog, Stump, TrainLog, rows_with_ids};
use crate::{MIN_ROWS_PER_PART, SplitAndSelect};

fn recording(m: usize) -> (Vec<FixedTrainer>, TrainLog, ScoreLog) {
    let trained: TrainLog = Arc::default();
    let scored: ScoreLog = Arc::default();
    let candidates = (0..m)
        .map(|id| FixedTrainer {
            id,
            trained: Some(trained.clone()),
            scored: Some(scored.clone()),
            ..FixedTrainer::new(0.0, 1.0)
        })
        .collect();
    (candidates, trained, scored)
}

/// Every row is used exactly once: candidate i trains once on its own part, the held-out
/// part is scored by every model, the parts are disjoint, cover all rows and differ in
/// size by at most one; and the candidate list is what it was before the data.
#[test]
fn split_is_a_partition_and_candidates_stay_fixed() {
    for (n, m) in [(160, 7), (1003, 7), (250, 3), (20 * 5 + 4, 4)] {
        let (candidates, trained, scored) = recording(m);
        let tuning = SplitAndSelect::new(candidates, 1.0).unwrap();
        let data = rows_with_ids(vec![1.0; n]);
        tuning
            .select(&data, &mut InsecureSeededRng::new(n as u64))
            .unwrap();
        let trained = trained.lock().unwrap().clone();
        let scored = scored.lock().unwrap().clone();
        assert_eq!(
            trained.iter().map(|t| t.0).collect::<Vec<_>>(),
            (0..m).collect::<Vec<_>>(),
            "each candidate trains once, in order"
        );
        assert_eq!(scored.len(), m, "every model is scored once");
        assert!(scored.windows(2).all(|w| w[0] == w[1]), "on the same rows");
        let mut parts: Vec<Vec<f64>> = trained.into_iter().map(|t| t.1).collect();
        parts.push(scored[0].clone());
        let mut seen = BTreeSet::new();
        for part in &parts {
            for &id in part {
                assert!(seen.insert(id as usize), "row {id} used twice");
            }
        }
        assert_eq!(seen, (0..n).collect::<BTreeSet<_>>(), "every row used");
        let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
        let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
        assert!(hi - lo <= 1 && *lo >= MIN_ROWS_PER_PART, "{sizes:?}");
        assert_eq!(
            tuning.candidates().iter().map(|c| c.id).collect::<Vec<_>>(),
            (0..m).collect::<Vec<_>>()
        );
    }
}

/// The shuffle draws fresh randomness: two selections put rows in different parts.
#[test]
fn each_selection_shuffles_afresh() {
    let (candidates, trained, _) = recording(3);
    let tuning = SplitAndSelect::new(candidates, 1.0).unwrap();
    let data = rows_with_ids(vec![1.0; 400]);
    let mut rng = InsecureSeededRng::new(3);
    tuning.select(&data, &mut rng).unwrap();
    tuning.select(&data, &mut rng).unwrap();
    let trained = trained.lock().unwrap();
    assert_ne!(trained[0].1, trained[3].1);
}

/// The selection frequencies follow `exp(−ε z_i / 2)` normalized, computed here from
/// docs/src/reference/algorithms.md §6 (chi-square at false-alarm 1e-6).
#[test]
fn selection_follows_the_exponential_mechanism() {
    let mistakes = [3usize, 4, 6, 9, 3, 12, 5];
    let epsilon = 0.8;
    let validation = rows_with_ids(vec![1.0; 40]);
    let mechanism = ExponentialMechanism::new(epsilon, 1.0).unwrap();
    let weights: Vec<f64> = mistakes
        .iter()
        .map(|&z| (-epsilon * z as f64 / 2.0).exp())
        .collect();
    let total: f64 = weights.iter().sum();
    let runs = 40_000u64;
    let mut counts = [0u64; 7];
    let mut rng = InsecureSeededRng::new(17);
    for _ in 0..runs {
        let models = mistakes.iter().map(|&z| Stump::new(z as f64)).collect();
        let (index, model, seen) = select_among(models, &validation, &mechanism, &mut rng).unwrap();
        assert_eq!(seen, mistakes, "stump z makes z mistakes on rows 0..40");
        assert_eq!(
            model.cut, mistakes[index] as f64,
            "the chosen model is released"
        );
        counts[index] += 1;
    }
    let expected: Vec<f64> = weights.iter().map(|w| w / total * runs as f64).collect();
    let test = chi_square_test(&counts, &expected, FALSE_ALARM_RATE);
    assert!(test.passes(), "{test:?}");
}

/// SCM09 Theorem 7: with probability ≥ 1 − δ the chosen model's held-out mistakes are at
/// most `z_min + (2/ε)·ln(m/δ)`. Checked at δ = 0.05 on candidates spread so that the
/// bound is nearly tight (many candidates just above it): the violation rate's
/// Clopper–Pearson lower bound must not exceed δ.
#[test]
fn utility_bound_holds_at_the_stated_rate() {
    let (epsilon, delta) = (0.5, 0.05);
    // z_min = 10; the bound is 10 + 4·ln(16/0.05) ≈ 33.1; 15 candidates sit at 34.
    let mut mistakes = vec![10usize];
    mistakes.extend(std::iter::repeat_n(34, 15));
    let m = mistakes.len() as f64;
    let bound = 10.0 + (2.0 / epsilon) * (m / delta).ln();
    let validation = rows_with_ids(vec![1.0; 60]);
    let mechanism = ExponentialMechanism::new(epsilon, 1.0).unwrap();
    let runs = 100_000u64;
    let mut violations = 0u64;
    let mut rng = InsecureSeededRng::new(23);
    for _ in 0..runs {
        let models = mistakes.iter().map(|&z| Stump::new(z as f64)).collect();
        let (index, _, _) = select_among(models, &validation, &mechanism, &mut rng).unwrap();
        violations += u64::from(mistakes[index] as f64 > bound);
    }
    let (low, _) = clopper_pearson(violations, runs, FALSE_ALARM_RATE);
    assert!(low <= delta, "{violations} violations in {runs}");
    // The bound is not vacuous here: the far candidates are chosen now and then.
    assert!(violations > 0);
}

/// End to end with dp-erm's estimators: the chosen model is one of the candidates', spends
/// ε end to end, and on separable data beats chance on fresh rows.
#[test]
fn tunes_dp_erm_estimators() {
    let rows = |count: usize, offset: f64| {
        let mut values = Vec::new();
        let mut labels = Vec::new();
        for i in 0..count {
            let angle = offset + i as f64 * 0.61;
            values.extend([0.9 * angle.cos(), 0.9 * angle.sin()]);
            labels.push(if angle.cos() >= 0.0 { 1.0 } else { -1.0 });
        }
        Examples::new(Features::dense(2, values).unwrap(), labels).unwrap()
    };
    let candidates: Vec<ErmParams> = [1e-1, 1e-2, 1e-3]
        .into_iter()
        .map(|l| ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), l, 2.0))
        .collect();
    let tuning = SplitAndSelect::new(candidates, 2.0).unwrap();
    assert_eq!(tuning.epsilon(), 2.0);
    let chosen = tuning
        .select(&rows(4000, 0.0), &mut InsecureSeededRng::new(9))
        .unwrap();
    assert_eq!(chosen.epsilon(), 2.0);
    assert_eq!(chosen.validation_rows(), 1000);
    let test = rows(1000, 0.3);
    let error = Classifier::mistakes(chosen.model(), &test).unwrap() as f64 / 1000.0;
    assert!(error < 0.3, "test error {error}");
    let shown = format!("{chosen:?} {tuning:?}");
    assert!(
        !shown.contains("mistakes") && !shown.contains("weights"),
        "{shown}"
    );
}

/// The end-to-end ε is max(ε_T, ε_S) (parallel composition), from the spec.
#[test]
fn reports_end_to_end_epsilon() {
    let candidates = vec![
        FixedTrainer::new(0.0, 0.3),
        FixedTrainer::new(0.0, 0.7),
        FixedTrainer::new(0.0, 0.5),
    ];
    for (selection, expected) in [(0.2, 0.7), (0.7, 0.7), (1.5, 1.5)] {
        let tuning = SplitAndSelect::new(candidates.clone(), selection).unwrap();
        assert_eq!(tuning.training_epsilon(), 0.7);
        assert_eq!(tuning.selection_epsilon(), selection);
        assert_eq!(tuning.epsilon(), expected);
    }
}
