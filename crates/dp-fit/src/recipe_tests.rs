//! The recipe against the paths a Rust user of dp-erm writes by hand: the same mechanism,
//! Λ and shares, and bit for bit the same models from the same seed.

use dp_erm::{
    ErmParams, GaussianErm, LinearModel, Loss, ObjectiveCalibration, OneVsRest, TrainingSet,
};
use dp_noise::{ExactSum, FeatureGroups, InsecureSeededRng};

use super::*;

/// `n` one-hot rows over three groups of `[3, 3, 2]` levels, each row scaled into the unit
/// ball, with classes cycling through `class_count` and a signal in the first group.
fn one_hot(n: usize, class_count: usize) -> (TrainingSet, Vec<usize>, FeatureGroups) {
    let group_of = [0, 0, 0, 1, 1, 1, 2, 2];
    let mut values = Vec::with_capacity(n * 8);
    let mut classes = Vec::with_capacity(n);
    for i in 0..n {
        let class = i % class_count;
        let mut row = [0.0; 8];
        row[class % 3] = 0.5;
        row[3 + (i / 7) % 3] = 0.5;
        row[6 + (i / 5) % 2] = 0.5;
        values.extend_from_slice(&row);
        classes.push(class);
    }
    let labels = binary_labels(&classes);
    let data = TrainingSet::builder(8)
        .dense_rows(values)
        .labels(labels)
        .build()
        .unwrap();
    (data, classes, FeatureGroups::new(&group_of).unwrap())
}

fn recipe(mechanism: Mechanism, groups: Option<FeatureGroups>) -> ErmRecipe {
    ErmRecipe {
        loss: Loss::Huber { width: 1.0 },
        mechanism,
        regularization: Regularization::Rule,
        groups,
        tolerance: None,
        feature_map: "test-map".into(),
    }
}

fn objective(epsilon: f64) -> Mechanism {
    Mechanism::Objective {
        epsilon,
        calibration: ObjectiveCalibration::CliffFree,
    }
}

fn bytes(models: &[LinearModel]) -> Vec<Vec<u8>> {
    models.iter().map(|m| m.to_bytes().unwrap()).collect()
}

#[test]
fn a_binary_grouped_fit_is_the_rust_users_recommended_grouped_fit() {
    let (data, classes, groups) = one_hot(600, 2);
    let plan = recipe(objective(0.5), Some(groups.clone()))
        .plan(600, 8, 2)
        .unwrap();
    let ours = plan
        .fit(&data, &classes, &mut InsecureSeededRng::new(11))
        .unwrap();
    let by_hand = ErmParams::recommended_grouped(600, 8, 0.5, groups)
        .unwrap()
        .feature_map("test-map")
        .fit(&data, &mut InsecureSeededRng::new(11))
        .unwrap()
        .into_model();
    assert_eq!(bytes(&ours), bytes(&[by_hand]));
    // The grouped rule, written out from its documented formula (not from the code):
    // `14.58·d^0.625·G^0.4375/(nε)^1.5625`, d = 8 in G = 3 groups.
    let expected = 14.58 * 8f64.powf(0.625) * 3f64.powf(0.4375) / (600.0f64 * 0.5).powf(1.5625);
    assert!(
        (plan.regularization / expected - 1.0).abs() < 1e-12,
        "{}",
        plan.regularization
    );
}

#[test]
fn one_vs_rest_shares_epsilon_and_fits_as_dp_erm_does() {
    let (data, classes, _) = one_hot(900, 3);
    let plan = recipe(objective(0.9), None).plan(900, 8, 3).unwrap();
    assert_eq!(plan.models(), 3);
    let ours = plan
        .fit(&data, &classes, &mut InsecureSeededRng::new(5))
        .unwrap();
    // The user's path: Λ from the rule at each model's share ε/3, the whole ε to OneVsRest.
    let lambda = ErmParams::recommended(900, 8, 0.3)
        .unwrap()
        .regularization();
    let whole = ErmParams::objective_perturbation(Loss::Huber { width: 1.0 }, lambda, 0.9)
        .objective_calibration(ObjectiveCalibration::CliffFree)
        .feature_map("test-map");
    let by_hand =
        OneVsRest::fit(&whole, &data, &classes, 3, &mut InsecureSeededRng::new(5)).unwrap();
    assert_eq!(bytes(&ours), bytes(by_hand.models()));
}

#[test]
fn gaussian_one_vs_rest_models_take_shares_that_sum_within_the_whole() {
    let (data, classes, _) = one_hot(900, 4);
    let (epsilon, delta) = (1.0, 1e-6);
    let plan = recipe(Mechanism::GaussianObjective { epsilon, delta }, None)
        .plan(900, 8, 4)
        .unwrap();
    let ErmTrainer::Gaussian(erm) = &plan.trainer else {
        panic!("δ > 0 plans a Gaussian mechanism");
    };
    let (share, delta_share) = (erm.epsilon(), erm.delta());
    let (mut e, mut d) = (ExactSum::new(), ExactSum::new());
    for _ in 0..4 {
        e.add(share);
        d.add(delta_share);
    }
    assert!(e <= ExactSum::of(epsilon) && d <= ExactSum::of(delta));
    assert!(share >= 0.25 * (1.0 - 1e-12) && delta_share >= 0.25e-6 * (1.0 - 1e-12));
    assert_eq!((plan.epsilon, plan.delta), (Some(epsilon), delta));
    // Model k is class k against the rest, in order, from one generator.
    let ours = plan
        .fit(&data, &classes, &mut InsecureSeededRng::new(3))
        .unwrap();
    let lambda = dp_erm::GaussianRule::OBJECTIVE
        .trainer(900, 8, share, delta_share)
        .unwrap()
        .regularization();
    let by_hand_erm =
        GaussianErm::objective_perturbation(Loss::Huber { width: 1.0 }, lambda, share, delta_share);
    let mut rng = InsecureSeededRng::new(3);
    let by_hand: Vec<LinearModel> = (0..4)
        .map(|k| {
            let labels = one_vs_rest_labels(&classes, 4, k);
            let (m, _) = by_hand_erm
                .fit(&data.relabel(labels).unwrap(), &mut rng)
                .unwrap();
            m.with_feature_map("test-map").unwrap()
        })
        .collect();
    assert_eq!(bytes(&ours), bytes(&by_hand));
}

#[test]
fn the_gaussian_mechanisms_take_lambda_from_their_own_rule() {
    for (mechanism, kappa, a, p) in [
        (
            Mechanism::GaussianObjective {
                epsilon: 0.5,
                delta: 1e-6,
            },
            3.981,
            1.25,
            2.0,
        ),
        (
            Mechanism::GaussianOutput {
                epsilon: 0.5,
                delta: 1e-6,
            },
            8.414,
            0.5,
            1.375,
        ),
    ] {
        // The rule was fitted for (and its fixed point reads z at) the logistic loss.
        let logistic = ErmRecipe {
            loss: Loss::Logistic,
            ..recipe(mechanism, None)
        };
        let plan = logistic.plan(5_000, 8, 2).unwrap();
        let calibration = plan
            .gaussian
            .expect("a Gaussian plan reports its calibration");
        // GaussianRule's documented fixed point Λ = κ·d^a·(z/n)^p, z = σ/Δ₂ as calibrated
        // at Λ (written out here, not read from the rule's code).
        let z = calibration.sigma / calibration.l2_sensitivity;
        let formula = kappa * 8f64.powf(a) * (z / 5_000.0).powf(p);
        assert!(
            (plan.regularization / formula - 1.0).abs() < 1e-9,
            "{mechanism:?}: Λ {} against the rule's {formula}",
            plan.regularization
        );
        assert_ne!(
            plan.regularization,
            ErmParams::recommended(5_000, 8, 0.5)
                .unwrap()
                .regularization()
        );
    }
}

#[test]
fn refusals_name_the_parameter_before_any_data() {
    let refused = |r: Result<ErmPlan, RecipeError>| match r {
        Err(RecipeError::Refused { parameter, .. }) => parameter,
        other => panic!("expected a refusal, got {other:?}"),
    };
    let groups = FeatureGroups::new(&[0, 0, 1, 1, 2, 2, 3, 3]).unwrap();
    assert_eq!(
        refused(recipe(objective(1.0), None).plan(100, 8, 1)),
        Parameter::Classes
    );
    assert_eq!(
        refused(recipe(objective(f64::from_bits(1)), None).plan(100, 8, 3)),
        Parameter::Epsilon
    );
    assert_eq!(
        refused(recipe(Mechanism::NonPrivate, None).plan(100, 8, 2)),
        Parameter::Regularization
    );
    let gaussian = Mechanism::GaussianOutput {
        epsilon: 1.0,
        delta: 1e-6,
    };
    assert_eq!(
        refused(recipe(gaussian, Some(groups)).plan(100, 8, 2)),
        Parameter::FeatureGroups
    );
    // dp-erm's own refusals come through with its message (here an ε above the ceiling).
    assert!(matches!(
        recipe(objective(2.0 * crate::spec::MAX_EPSILON), None).plan(100, 8, 2),
        Err(RecipeError::Erm(_))
    ));
}

#[test]
fn mechanisms_are_named_the_same_way_for_every_face() {
    assert_eq!(
        Mechanism::named("objective", "cliff-free", 1.0, 0.0).unwrap(),
        objective(1.0)
    );
    assert_eq!(
        Mechanism::named("output", "cliff-free", 1.0, 1e-6).unwrap(),
        Mechanism::GaussianOutput {
            epsilon: 1.0,
            delta: 1e-6
        }
    );
    for (name, calibration, delta, parameter) in [
        ("objective", "cms11", 1e-6, Parameter::Calibration),
        ("objectiv", "cliff-free", 0.0, Parameter::Mechanism),
        ("objective", "cliff_free", 0.0, Parameter::Calibration),
        ("output", "cliff-free", 1.0, Parameter::Delta),
        ("output", "cliff-free", f64::NAN, Parameter::Delta),
        ("non-private", "cliff-free", 1e-6, Parameter::Delta),
    ] {
        match Mechanism::named(name, calibration, 1.0, delta) {
            Err(RecipeError::Refused { parameter: p, .. }) => assert_eq!(p, parameter, "{name}"),
            other => panic!("{name} {calibration} {delta}: {other:?}"),
        }
    }
    for name in KernelName::NAMES {
        assert_eq!(name.parse::<KernelName>().unwrap().name(), *name);
    }
    for name in SamplingName::NAMES {
        assert_eq!(name.parse::<SamplingName>().unwrap().name(), *name);
    }
    let err = "gauss".parse::<KernelName>().unwrap_err().to_string();
    assert!(
        err.contains("\"gauss\"") && err.contains("'laplacian'"),
        "{err}"
    );
}
