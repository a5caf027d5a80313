//! One `rejects_*` test per class of bad input and side channel of issue #9 that the other
//! test modules do not already cover. Each failed (panicked, hung, leaked or guessed) on
//! the code before the fix.

use dp_noise::InsecureSeededRng;
use dp_optim::{OptimError, Termination};

use crate::{ErmError, ErmParams, Loss, OneVsRest, TrainingSet};

fn small_set() -> TrainingSet {
    TrainingSet::builder(2)
        .dense_rows(vec![0.6, 0.75, -0.5, 0.1, 0.3, -0.9, -0.7, -0.2])
        .labels(vec![1.0, -1.0, -1.0, -1.0])
        .build()
        .unwrap()
}

#[test]
fn rejects_feature_counts_that_would_exhaust_memory_before_allocating() {
    for features in [1usize << 32, usize::MAX, crate::MAX_FEATURES + 1] {
        let err = TrainingSet::builder(features)
            .sparse_rows(vec![vec![(0, 0.5)]])
            .labels(vec![1.0])
            .build()
            .unwrap_err();
        assert!(
            matches!(
                err,
                ErmError::InvalidCount {
                    what: "feature count",
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn rejects_class_counts_that_would_hang_before_any_fit() {
    let data = small_set();
    let params = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0);
    for class_count in [usize::MAX, u32::MAX as usize, crate::MAX_CLASSES + 1] {
        let err = OneVsRest::fit(
            &params,
            &data,
            &[0, 1, 0, 1],
            class_count,
            &mut InsecureSeededRng::new(1),
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                ErmError::InvalidCount {
                    what: "class count",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("65536"), "{err}");
    }
}

#[test]
fn rejects_huber_widths_whose_fits_cannot_succeed_up_front() {
    let data = small_set();
    for width in [1e155, 1e4, 1e-4, 1e-300] {
        assert!(Loss::huber(width).is_err());
        let err = ErmParams::non_private(Loss::Huber { width }, 0.1)
            .fit(&data, &mut InsecureSeededRng::new(1))
            .unwrap_err();
        assert!(
            matches!(err, ErmError::InvalidParameter { what: "Huber width", value, .. } if value == width),
            "{err}"
        );
    }
}

#[test]
fn rejects_tiny_regularization_naming_it_not_a_derived_beta() {
    let data = small_set();
    for lambda in [1e-300, 1e-13, f64::MIN_POSITIVE] {
        for params in [
            ErmParams::output_perturbation(Loss::Logistic, lambda, 1.0),
            ErmParams::objective_perturbation(Loss::Logistic, lambda, 1.0),
        ] {
            let err = params
                .fit(&data, &mut InsecureSeededRng::new(1))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    ErmError::InvalidParameter {
                        what: "regularization",
                        ..
                    }
                ),
                "{err}"
            );
            assert_eq!(params.noise_calibration(4, 2).unwrap_err(), err);
        }
    }
    // A tiny ε names ε and the noise it would need, never a β the user did not set, and
    // no calibration ever comes back with a negative or zero rate.
    for epsilon in [1e-300, 1e-120] {
        let err = ErmParams::output_perturbation(Loss::Logistic, 1e-6, epsilon)
            .noise_calibration(4, 2)
            .unwrap_err();
        assert!(
            matches!(err, ErmError::NoiseBeyondPrecision { .. }),
            "{err}"
        );
        assert!(err.to_string().contains(&format!("{epsilon:?}")), "{err}");
    }
}

#[test]
fn rejects_guessing_a_label_when_the_decision_overflows() {
    let model = ErmParams::non_private(Loss::Logistic, 1e-3)
        .fit(&small_set(), &mut InsecureSeededRng::new(1))
        .unwrap()
        .into_model();
    let huge = [f64::MAX, -f64::MAX];
    assert!(matches!(
        model.predict(&huge),
        Err(ErmError::DecisionOverflow { row: 0 })
    ));
    assert!(model.decision_function(&[0.5, 0.5]).unwrap().is_finite());
}

#[test]
fn rejects_zeroing_rows_whose_norm_overflows_when_clipping() {
    let clipped = TrainingSet::builder(2)
        .dense_rows(vec![f64::MAX, f64::MAX, 1e308, -1e308])
        .labels(vec![1.0, -1.0])
        .clip_rows_to_unit_ball()
        .build()
        .unwrap();
    let first = clipped.margins(&[1.0, 0.0]);
    let second = clipped.margins(&[0.0, 1.0]);
    for (row, expected_sign) in [(0, 1.0), (1, -1.0)] {
        let (a, b) = (first[row], second[row]);
        assert!((a - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12, "{a}");
        assert!(
            (b - expected_sign * std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12,
            "{b}"
        );
        assert!(a * a + b * b <= 1.0);
    }
}

/// A refusal's error carries nothing but the refusal: the solver's gradient norm and
/// termination reason depend on the data.
#[test]
fn rejects_leaking_solver_numbers_through_refusals() {
    let err = ErmError::from(OptimError::NotConverged {
        termination: Termination::LineSearchFailed,
        gradient_norm: 1.234_567e-7,
        tolerance: 1e-10,
    });
    assert_eq!(err, ErmError::NotConverged);
    for shown in [format!("{err:?}"), err.to_string()] {
        assert!(
            !shown.contains("1.234") && !shown.contains("LineSearch"),
            "{shown}"
        );
    }
}

#[test]
fn rejects_printing_data_in_debug_output() {
    let data = TrainingSet::builder(2)
        .dense_rows(vec![0.123_456_7, 0.2, -0.3, 0.4])
        .labels(vec![1.0, -1.0])
        .build()
        .unwrap();
    let shown = format!("{data:?}");
    assert!(
        !shown.contains("0.1234567") && shown.contains("rows: 2"),
        "{shown}"
    );
    let params =
        ErmParams::output_perturbation(Loss::Logistic, 0.1, 1.0).warm_start(&[0.987_654_3, 0.5]);
    let shown = format!("{params:?}");
    assert!(
        !shown.contains("0.9876543") && shown.contains("2 weights"),
        "{shown}"
    );
}

#[test]
fn rejects_printing_floats_as_long_decimals() {
    let err = ErmParams::non_private(Loss::Logistic, 1e-300)
        .check()
        .unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("1e-300") && message.len() < 200,
        "{message}"
    );
}

/// A warm start that no solver could start from (its objective overflows) or of the wrong
/// length is refused with the parameters, before noise is drawn: `noise_calibration`
/// already says so.
#[test]
fn rejects_unusable_warm_starts_before_any_work() {
    for start in [vec![1e200; 2], vec![1e154, -1e154], vec![0.0; 3]] {
        for params in [
            ErmParams::non_private(Loss::Logistic, 0.1),
            ErmParams::output_perturbation(Loss::Logistic, 0.1, 1.0),
            ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0),
        ] {
            let params = params.warm_start(&start);
            let before = params.noise_calibration(4, 2).unwrap_err();
            let at_fit = params
                .fit(&small_set(), &mut InsecureSeededRng::new(1))
                .unwrap_err();
            assert_eq!(before, at_fit);
            assert!(
                matches!(
                    at_fit,
                    ErmError::InvalidParameter {
                        what: "warm-start norm",
                        ..
                    } | ErmError::DimensionMismatch {
                        what: "warm-start weights",
                        ..
                    }
                ),
                "{at_fit}"
            );
        }
    }
}

/// When no accepted tolerance can be certified, the error names the cause (ε or Λ), not
/// a tolerance the user could never ask for.
#[test]
fn rejects_unattainable_fits_naming_the_cause_not_the_tolerance() {
    let tiny_epsilon =
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1e-200).tolerance(1e-6);
    assert!(matches!(
        tiny_epsilon.noise_calibration(50, 3),
        Err(ErmError::NoiseBeyondPrecision { .. })
    ));
    let narrow = ErmParams::objective_perturbation(Loss::huber(1e-3).unwrap(), 1e-12, 1000.0)
        .tolerance(1e-6);
    assert!(matches!(
        narrow.noise_calibration(50, 3),
        Err(ErmError::IllConditioned { .. })
    ));
}

#[test]
fn the_row_group_norm_check_agrees_with_the_group_norm_of_each_row() {
    use dp_noise::FeatureGroups;
    // Interleaved groups (not contiguous ranges) over 6 features, sparse and dense rows.
    let groups = FeatureGroups::new(&[0, 1, 0, 2, 1, 0]).unwrap();
    let rows = [
        vec![(0, 0.4), (2, -0.4), (3, 0.1)], // (0.8² + 0.1²)^½ ≈ 0.81
        vec![(0, 0.5), (1, 0.5), (5, 0.3)],  // (0.8² + 0.5²)^½ ≈ 0.94
        vec![(0, 0.3), (2, 0.3), (5, 0.3)],  // one group: ℓ1 0.9
        vec![(1, 0.5), (3, 0.5), (4, -0.2)], // (0.7² + 0.5²)^½ ≈ 0.86
    ];
    // Every Euclidean norm stays ≤ 1; at scale 1.2 row 1 is the first above 1 (≈ 1.13).
    for scale in [1.0, 1.2] {
        let scaled: Vec<Vec<(usize, f64)>> = rows
            .iter()
            .map(|r| r.iter().map(|&(j, v)| (j, v * scale)).collect())
            .collect();
        let norms: Vec<f64> = scaled
            .iter()
            .map(|r| groups.sparse_norm(r).unwrap())
            .collect();
        let first_above = norms.iter().position(|&n| n > crate::GROUP_NORM_SLACK);
        let mut dense = vec![0.0; 4 * 6];
        for (i, r) in scaled.iter().enumerate() {
            for &(j, v) in r {
                dense[i * 6 + j] = v;
            }
        }
        let labels = vec![1.0, -1.0, 1.0, -1.0];
        for set in [
            TrainingSet::builder(6)
                .sparse_rows(scaled.clone())
                .labels(labels.clone())
                .build()
                .unwrap(),
            TrainingSet::builder(6)
                .dense_rows(dense.clone())
                .labels(labels.clone())
                .build()
                .unwrap(),
        ] {
            match (set.check_group_norms(&groups), first_above) {
                (Ok(()), None) => {}
                (Err(ErmError::RowGroupNormAboveOne { row, norm }), Some(expected)) => {
                    assert_eq!(row, expected);
                    assert!((norm - norms[expected]).abs() < 1e-12, "{norm}");
                }
                (outcome, expected) => panic!("{outcome:?} but expected a refusal at {expected:?}"),
            }
        }
    }
}

#[test]
fn the_row_group_norm_check_bounds_the_exact_norm_despite_rounding() {
    use dp_noise::FeatureGroups;
    // One group: an entry just below 1 and 2²⁰ entries 1.1e-16, each below half an ulp of
    // 1, so a sum rounded to nearest stays below 1; the exact group norm is 1 + 1.15e-10,
    // above the 1 + 1e-12 the mechanism covers. (The squared Euclidean norm is
    // 1 − 1.1e-16 + 1.3e-26: the row is valid.)
    let tiny = 1 << 20;
    let features = tiny + 1;
    let mut row = vec![(0, 1f64.next_down())];
    row.extend((1..features).map(|j| (j, 1.1e-16)));
    let set = TrainingSet::builder(features)
        .sparse_rows(vec![row])
        .labels(vec![1.0])
        .build()
        .unwrap();
    let one_group = FeatureGroups::new(&vec![0; features]).unwrap();
    assert!(matches!(
        set.check_group_norms(&one_group),
        Err(ErmError::RowGroupNormAboveOne { row: 0, norm }) if norm > 1.0 + 1e-10
    ));
    // Without the tiny entries the same row passes: one-hot rows of norm 1 are not refused.
    let one_hot = TrainingSet::builder(features)
        .sparse_rows(vec![vec![(0, 1.0)]])
        .labels(vec![1.0])
        .build()
        .unwrap();
    assert!(one_hot.check_group_norms(&one_group).is_ok());
}

#[test]
fn rejects_group_noise_on_rows_groups_or_mechanisms_it_does_not_cover() {
    use dp_noise::FeatureGroups;
    let mut rng = InsecureSeededRng::new(3);
    let one_group = FeatureGroups::new(&[0, 0]).unwrap();
    let grouped = |params: ErmParams| params.group_noise(one_group.clone());
    // small_set's rows have two non-zeros in the one group: group norm up to 1.35 > 1.
    let err = grouped(ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0))
        .fit(&small_set(), &mut rng)
        .unwrap_err();
    assert!(
        matches!(err, ErmError::RowGroupNormAboveOne { row: 0, norm } if (norm - 1.35).abs() < 1e-12),
        "{err:?}"
    );
    // Separate groups: the same rows are fine (group norm = Euclidean norm ≤ 1).
    let separate = FeatureGroups::singletons(2).unwrap();
    assert!(
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0)
            .group_noise(separate)
            .fit(&small_set(), &mut rng)
            .is_ok()
    );
    // The public check callers run before composing fits says the same.
    assert!(matches!(
        small_set().check_group_norms(&one_group),
        Err(ErmError::RowGroupNormAboveOne { row: 0, .. })
    ));
    let wrong_dimension = FeatureGroups::new(&[0, 0, 1]).unwrap();
    // Refused from the sizes alone, before any data.
    assert!(matches!(
        ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0)
            .group_noise(wrong_dimension.clone())
            .noise_calibration(4, 2),
        Err(ErmError::DimensionMismatch {
            what: "feature groups",
            ..
        })
    ));
    let err = ErmParams::objective_perturbation(Loss::Logistic, 0.1, 1.0)
        .group_noise(wrong_dimension)
        .fit(&small_set(), &mut rng)
        .unwrap_err();
    assert!(
        matches!(
            err,
            ErmError::DimensionMismatch {
                what: "feature groups",
                expected: 2,
                found: 3
            }
        ),
        "{err:?}"
    );
    for params in [
        ErmParams::output_perturbation(Loss::Logistic, 0.1, 1.0),
        ErmParams::non_private(Loss::Logistic, 0.1),
    ] {
        assert!(matches!(
            grouped(params).check(),
            Err(ErmError::MisplacedOption {
                option: "group-shaped noise",
                ..
            })
        ));
    }
}
