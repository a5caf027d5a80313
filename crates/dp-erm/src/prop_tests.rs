//! Property tests of every public constructor on hostile input (issue #9): no panic, no
//! allocation sized by a bad count, and every error names the offending value.

use proptest::prelude::*;

use crate::{ErmError, ErmParams, Loss, MAX_FEATURES, ObjectiveCalibration, TrainingSet};

/// Floats a careless user or an attacker would pass: ordinary values, the edges of the
/// accepted ranges, zeros, subnormals, huge values, NaN and infinities.
fn hostile_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -2.0..2.0f64,
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => Just(1.0),
        1 => Just(-1.0),
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE / 4.0),
        1 => Just(1e-300),
        1 => Just(1e300),
        1 => Just(1e-12),
        1 => Just(1e3),
        1 => any::<f64>(),
    ]
}

/// Counts: small, at the limits, and absurd.
fn hostile_count() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..6,
        1 => Just(MAX_FEATURES + 1),
        1 => Just(1usize << 32),
        1 => Just(usize::MAX),
        1 => any::<usize>(),
    ]
}

/// The message must carry the values the error holds, in a readable form (`{:?}`, never a
/// 300-digit decimal), except the data's own values (a row's norm, a feature's value).
fn assert_names_its_values(err: &ErmError) {
    let message = err.to_string();
    assert!(message.len() < 400, "message too long: {message}");
    let expected: Vec<String> = match err {
        ErmError::InvalidParameter { what, value, .. } => {
            vec![what.to_string(), format!("{value:?}")]
        }
        ErmError::NonFiniteFeature { row, col, value } => {
            vec![row.to_string(), col.to_string(), format!("{value:?}")]
        }
        // A row's norm or value is the data's: named by position, the value never shown.
        ErmError::RowNormAboveOne { row, norm } => {
            assert!(!message.contains(&format!("{norm:?}")), "{message}");
            vec![row.to_string()]
        }
        ErmError::InvalidLabel { row, label } => vec![row.to_string(), format!("{label:?}")],
        ErmError::OutsidePublicBound {
            row,
            col,
            value,
            bound,
        } => {
            assert!(!message.contains(&format!("{value:?}")), "{message}");
            vec![row.to_string(), col.to_string(), format!("{bound:?}")]
        }
        ErmError::DimensionMismatch {
            what,
            expected,
            found,
        } => {
            vec![what.to_string(), expected.to_string(), found.to_string()]
        }
        ErmError::FeatureIndexOutOfRange { row, col, features } => {
            vec![row.to_string(), col.to_string(), features.to_string()]
        }
        ErmError::ToleranceBelowRounding { tolerance, floor } => {
            vec![format!("{tolerance:?}"), format!("{floor:?}")]
        }
        ErmError::NoiseBeyondPrecision {
            epsilon,
            noise_norm,
        } => {
            vec![format!("{epsilon:?}"), format!("{noise_norm:?}")]
        }
        ErmError::IllConditioned {
            regularization,
            floor,
        } => {
            vec![format!("{regularization:?}"), format!("{floor:?}")]
        }
        _ => vec![],
    };
    for part in expected {
        assert!(message.contains(&part), "{message:?} does not name {part}");
    }
}

#[derive(Debug, Clone)]
enum Rows {
    Dense(Vec<f64>),
    Sparse(Vec<Vec<(usize, f64)>>),
}

fn rows() -> impl Strategy<Value = Rows> {
    prop_oneof![
        prop::collection::vec(hostile_f64(), 0..24).prop_map(Rows::Dense),
        prop::collection::vec(
            prop::collection::vec(
                (prop_oneof![0usize..6, any::<usize>()], hostile_f64()),
                0..4
            ),
            0..6
        )
        .prop_map(Rows::Sparse),
    ]
}

fn labels() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![4 => Just(1.0), 4 => Just(-1.0), 1 => hostile_f64()],
        0..8,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// The builder never panics; what it builds keeps the contract; what it refuses it
    /// names.
    #[test]
    fn training_set_builder_checks_everything(
        features in hostile_count(),
        rows in rows(),
        labels in labels(),
        clip in any::<bool>(),
        bounds in prop::option::of(prop::collection::vec(hostile_f64(), 0..6)),
        intercept in prop::option::of(hostile_f64()),
    ) {
        let mut builder = TrainingSet::builder(features).labels(labels.clone());
        builder = match rows {
            Rows::Dense(values) => builder.dense_rows(values),
            Rows::Sparse(rows) => builder.sparse_rows(rows),
        };
        if let Some(bounds) = bounds {
            builder = builder.scale_by_public_bounds(bounds);
        }
        if clip {
            builder = builder.clip_rows_to_unit_ball();
        }
        if let Some(constant) = intercept {
            builder = builder.append_intercept(constant);
        }
        match builder.build() {
            Ok(data) => {
                prop_assert!(data.features() >= features.min(MAX_FEATURES) && data.features() <= MAX_FEATURES + 1);
                prop_assert!(data.labels().iter().all(|&y| y == 1.0 || y == -1.0));
                prop_assert_eq!(data.labels(), &labels[..]);
                // Every row in the unit ball: ‖x_i‖² = Σ_j x_ij², read through the design
                // (random counts that were accepted are small).
                prop_assert!(data.features() <= 16);
                let mut squares = vec![0.0; data.len()];
                for j in 0..data.features() {
                    let mut unit = vec![0.0; data.features()];
                    unit[j] = 1.0;
                    let column = data.margins(&unit);
                    squares.iter_mut().zip(&column).for_each(|(s, v)| *s += v * v);
                }
                prop_assert!(squares.iter().all(|&s| s.is_finite() && s <= 1.0 + 1e-12));
            }
            Err(err) => assert_names_its_values(&err),
        }
    }

    /// Parameter checks and calibrations never panic, are refused with the value named,
    /// and, when accepted, give finite, positive noise rates and a tolerance in range.
    #[test]
    fn parameters_are_checked_before_any_work(
        width in hostile_f64(),
        use_huber in any::<bool>(),
        lambda in hostile_f64(),
        epsilon in hostile_f64(),
        tolerance in prop::option::of(hostile_f64()),
        mechanism in 0u8..4,
        examples in prop_oneof![0usize..100, any::<u32>().prop_map(|n| n as usize)],
        features in prop_oneof![0usize..100, any::<u32>().prop_map(|d| d as usize)],
    ) {
        let loss = if use_huber { Loss::Huber { width } } else { Loss::Logistic };
        prop_assert_eq!(Loss::huber(width).is_ok(), Loss::Huber { width }.check().is_ok());
        let mut params = match mechanism {
            0 => ErmParams::non_private(loss, lambda),
            1 => ErmParams::output_perturbation(loss, lambda, epsilon),
            2 => ErmParams::objective_perturbation(loss, lambda, epsilon)
                .objective_calibration(ObjectiveCalibration::Cms11),
            _ => ErmParams::objective_perturbation(loss, lambda, epsilon)
                .objective_calibration(ObjectiveCalibration::CliffFree),
        };
        if let Some(tolerance) = tolerance {
            params = params.tolerance(tolerance);
        }
        match params.noise_calibration(examples, features) {
            Ok(None) => prop_assert_eq!(mechanism, 0),
            Ok(Some(c)) => {
                prop_assert!(c.epsilon == epsilon);
                prop_assert!(c.beta.is_finite() && c.beta > 0.0, "{:?}", c);
                prop_assert!(c.epsilon_prime > 0.0 && c.epsilon_prime <= epsilon);
                prop_assert!(c.extra_regularization >= 0.0 && c.extra_regularization.is_finite());
                prop_assert!(c.tolerance > 0.0 && c.tolerance <= crate::MAX_TOLERANCE);
                if let Some(m) = c.minimizer_noise {
                    prop_assert!(m.beta.is_finite() && m.beta > 0.0 && m.radius > 0.0);
                    prop_assert!(m.epsilon + c.epsilon_prime <= epsilon);
                }
            }
            Err(err) => assert_names_its_values(&err),
        }
    }
}

/// Sizes and ε across their accepted ranges, log-uniformly, with the edges.
fn accepted_sizes() -> impl Strategy<Value = (usize, usize, f64)> {
    let rows = prop_oneof![1 => Just(1usize), 1 => Just(LARGEST_RULE_ROWS), 6 => (0.0..40.0f64).prop_map(|e| e.exp2() as usize)];
    let features = prop_oneof![1 => Just(1usize), 1 => Just(MAX_FEATURES), 6 => (0.0..24.0f64).prop_map(|e| e.exp2() as usize)];
    let epsilon = prop_oneof![
        1 => Just(crate::MAX_EPSILON),
        1 => Just(SMALLEST_RULE_EPSILON),
        6 => (-6.0..3.0f64).prop_map(|e| 10f64.powf(e)),
    ];
    (
        rows.prop_map(|n| n.max(1)),
        features.prop_map(|d| d.max(1)),
        epsilon,
    )
}

/// Below some tiny ε (at n = 1, d = 1 about 1e-300) every fit is refused for its noise
/// (beyond double precision) whatever Λ; the rule is required to succeed from here up.
const SMALLEST_RULE_EPSILON: f64 = 1e-6;
/// Objective perturbation's noise bound on the gradient is about 4(d + 9√d + 40)/(nε);
/// where its rounding (64·2⁻⁵²·√d times that) exceeds the largest tolerance 1e-6, no Λ
/// is accepted: nε < 1.1e-7·√d·(d + 9√d + 40). The rule is required to succeed with a
/// factor 9 margin.
fn noise_carried(n: usize, d: usize, epsilon: f64) -> bool {
    let d = d as f64;
    n as f64 * epsilon >= 1e-6 * d.sqrt() * (d + 9.0 * d.sqrt() + 40.0)
}
/// Beyond about 10¹⁵ rows the solver's rounding alone exceeds every accepted tolerance;
/// the rule is required to succeed up to 2⁴⁰ (a trillion rows).
const LARGEST_RULE_ROWS: usize = 1 << 40;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// The Λ rule gives parameters that a fit accepts for every n in [1, 2⁴⁰], every d in
    /// [1, 2^24] and every ε in [1e-6, 1000] whose noise double precision can carry
    /// ([`noise_carried`]): checked, within the Λ range, and calibrated for (n, d) before
    /// any data.
    #[test]
    fn recommended_params_are_accepted_for_every_public_size((n, d, epsilon) in accepted_sizes()) {
        prop_assume!(noise_carried(n, d, epsilon));
        let params = ErmParams::recommended(n, d, epsilon);
        prop_assert!(params.is_ok(), "n = {n}, d = {d}, ε = {epsilon}: {params:?}");
        let params = params.unwrap();
        prop_assert!(params.check().is_ok());
        let calibration = params.noise_calibration(n, d).unwrap().unwrap();
        prop_assert_eq!(calibration.epsilon, epsilon);
        let lambda = crate::RegularizationRule::DEFAULT.regularization(n, d, epsilon).unwrap();
        prop_assert!((crate::MIN_REGULARIZATION..=crate::MAX_REGULARIZATION).contains(&lambda));
        // The grouped rule (which also reads the number of groups) too.
        let groups = dp_noise::FeatureGroups::singletons(d.min(64)).unwrap();
        if d <= 64 {
            let grouped = ErmParams::recommended_grouped(n, d, epsilon, groups);
            prop_assert!(grouped.is_ok(), "grouped: n = {n}, d = {d}, ε = {epsilon}: {grouped:?}");
            let grouped = grouped.unwrap();
            prop_assert!(grouped.check().is_ok());
            prop_assert!(grouped.noise_calibration(n, d).unwrap().is_some());
        } else {
            let mismatched = matches!(
                ErmParams::recommended_grouped(n, d, epsilon, groups),
                Err(ErmError::DimensionMismatch { .. })
            );
            prop_assert!(mismatched, "groups of the wrong dimension accepted");
        }
    }

    /// Anything else is an error naming the value, never a panic.
    #[test]
    fn recommended_params_refuse_what_no_fit_accepts(
        n in hostile_count(),
        d in hostile_count(),
        epsilon in hostile_f64(),
    ) {
        let sizes_valid = n >= 1 && (1..=MAX_FEATURES).contains(&d);
        let possible = sizes_valid && epsilon > 0.0 && epsilon <= crate::MAX_EPSILON;
        let required = sizes_valid
            && n <= LARGEST_RULE_ROWS
            && (SMALLEST_RULE_EPSILON..=crate::MAX_EPSILON).contains(&epsilon)
            && noise_carried(n, d, epsilon);
        match ErmParams::recommended(n, d, epsilon) {
            Ok(_) => prop_assert!(possible, "n = {n}, d = {d}, ε = {epsilon} accepted"),
            Err(e) => {
                prop_assert!(!required, "n = {n}, d = {d}, ε = {epsilon}: {e}");
                let message = e.to_string();
                prop_assert!(
                    matches!(e, ErmError::EmptyData | ErmError::IllConditioned { .. })
                        || message.contains("epsilon")
                        || message.contains("regularization")
                        || message.contains("rows")
                        || message.contains("features"),
                    "{message}"
                );
            }
        }
    }

    /// The a-priori outlook accepts exactly the sizes and ε a rule accepts, reads nothing
    /// else, and its ratio and flags follow `d/(nε)` and the documented thresholds
    /// (recomputed here, not taken from the code under test).
    #[test]
    fn outlook_is_defined_for_every_accepted_size((n, d, epsilon) in accepted_sizes()) {
        let outlook = crate::RegularizationRule::outlook(n, d, epsilon);
        prop_assert!(outlook.is_ok(), "n = {n}, d = {d}, ε = {epsilon}: {outlook:?}");
        let outlook = outlook.unwrap();
        let ratio = d as f64 / n as f64 / epsilon;
        prop_assert!((outlook.noise_ratio / ratio - 1.0).abs() < 1e-9, "{outlook:?} vs {ratio}");
        prop_assert_eq!(outlook.near_chance, outlook.noise_ratio > 0.3);
        prop_assert_eq!(outlook.at_risk, outlook.noise_ratio > 0.025);
        prop_assert!(!outlook.near_chance || outlook.at_risk);
        prop_assert_eq!(outlook.warning().is_some(), outlook.at_risk);
    }

    /// Anything else is an error naming the value, as for the rules.
    #[test]
    fn outlook_refuses_what_no_fit_accepts(
        n in hostile_count(),
        d in hostile_count(),
        epsilon in hostile_f64(),
    ) {
        let valid = n >= 1 && (1..=MAX_FEATURES).contains(&d) && epsilon > 0.0 && epsilon <= crate::MAX_EPSILON;
        match crate::RegularizationRule::outlook(n, d, epsilon) {
            Ok(o) => prop_assert!(valid && o.noise_ratio > 0.0, "n = {n}, d = {d}, ε = {epsilon}: {o:?}"),
            Err(e) => {
                prop_assert!(!valid, "n = {n}, d = {d}, ε = {epsilon}: {e}");
                let message = e.to_string();
                prop_assert!(
                    matches!(e, ErmError::EmptyData)
                        || message.contains("epsilon")
                        || message.contains("features = "),
                    "{message}"
                );
            }
        }
    }
}
