//! One-vs-rest over `ErmParams` (its models pinned bit for bit, as the code before
//! `OneVsRest` was generic wrote them) and over any other `Trainer`.

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use dp_noise::add_rounding_up;

use crate::{
    ErmError, ErmParams, Examples, Features, GaussianErm, LinearModel, Loss, ObjectiveCalibration,
    OneVsRest, Trainer, TrainingSet,
};

/// Three noisy blobs around the unit circle's thirds (norms below 0.8): n rows, class i % 3.
fn blobs(n: usize, seed: u64) -> (Vec<f64>, Vec<usize>) {
    let mut rng = InsecureSeededRng::new(seed);
    let mut values = Vec::with_capacity(2 * n);
    let mut classes = Vec::with_capacity(n);
    for i in 0..n {
        let class = i % 3;
        let angle = class as f64 * 2.0 * std::f64::consts::PI / 3.0;
        values.push(0.6 * angle.cos() + rng.random_range(-0.15..0.15));
        values.push(0.6 * angle.sin() + rng.random_range(-0.15..0.15));
        classes.push(class);
    }
    (values, classes)
}

fn training_set(values: &[f64]) -> TrainingSet {
    TrainingSet::builder(2)
        .dense_rows(values.to_vec())
        .labels(vec![1.0; values.len() / 2])
        .build()
        .unwrap()
}

/// The weights' bits of every model, class by class.
fn bits(models: &[LinearModel]) -> Vec<Vec<u64>> {
    models
        .iter()
        .map(|m| m.weights().iter().map(|w| w.to_bits()).collect())
        .collect()
}

/// Whether `models` are the pinned ones: bit for bit for the private fits (their weights
/// are snapped to the release grid, so every build gives the same bits), to 10⁻¹² relative
/// for the non-private fit, whose last bits follow the build's vector width and the rows'
/// storage (dense or sparse: the sums run in another order).
fn assert_pinned(models: &[LinearModel], pinned: &[[u64; 2]; 3], what: &str) {
    if models[0].metadata().mechanism != crate::Mechanism::NonPrivate {
        assert_eq!(bits(models), pinned.map(|w| w.to_vec()).to_vec(), "{what}");
        return;
    }
    for (model, weights) in models.iter().zip(pinned) {
        for (&got, &want) in model.weights().iter().zip(weights) {
            let want = f64::from_bits(want);
            assert!(
                (got - want).abs() <= 1e-12 * want.abs(),
                "{what}: {got} vs {want}"
            );
        }
    }
}

/// The parameters the pinned fits use: both private mechanisms and the non-private one.
fn pinned_params() -> Vec<ErmParams> {
    vec![
        ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.5),
        ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), 1e-2, 0.9)
            .objective_calibration(ObjectiveCalibration::Cms11),
        ErmParams::output_perturbation(Loss::Logistic, 1e-2, 2.0),
        ErmParams::non_private(Loss::Logistic, 1e-2),
    ]
}

/// `OneVsRest::fit` over `ErmParams` gives, for a fixed seed, the models the code before
/// the generic path gave (bits recorded from it): the same ε split, the same draws in the
/// same order.
#[test]
fn one_vs_rest_over_erm_params_is_pinned() {
    let (values, classes) = blobs(90, 31);
    let rows = training_set(&values);
    for (i, params) in pinned_params().iter().enumerate() {
        let mut rng = InsecureSeededRng::new(40 + i as u64);
        let fit = OneVsRest::fit(params, &rows, &classes, 3, &mut rng).unwrap();
        assert_pinned(fit.models(), &PINNED[i], &format!("parameters {i}"));
    }
}

/// The same rows as [`Examples`], for the generic path.
fn examples(values: &[f64]) -> Examples {
    Examples::new(
        Features::dense(2, values.to_vec()).unwrap(),
        vec![1.0; values.len() / 2],
    )
    .unwrap()
}

/// Through the generic path ([`OneVsRest::fit_trainer`]) with each class's share of ε,
/// `ErmParams` gives the pinned models: the same split, the same draws in the same order.
#[test]
fn one_vs_rest_over_erm_params_through_the_trainer_path_is_the_same() {
    let (values, classes) = blobs(90, 31);
    let rows = training_set(&values);
    let data = examples(&values);
    for (i, params) in pinned_params().iter().enumerate() {
        let seed = 40 + i as u64;
        let direct = OneVsRest::fit(
            params,
            &rows,
            &classes,
            3,
            &mut InsecureSeededRng::new(seed),
        )
        .unwrap();
        let per_class = match params.mechanism().epsilon() {
            Some(epsilon) => params
                .clone()
                .with_epsilon(OneVsRest::epsilon_per_class(epsilon, 3).unwrap()),
            None => params.clone(),
        };
        let generic = OneVsRest::fit_trainer(
            &per_class,
            &data,
            &classes,
            3,
            &mut InsecureSeededRng::new(seed),
        )
        .unwrap();
        assert_pinned(
            direct.models(),
            &PINNED[i],
            &format!("parameters {i}, direct"),
        );
        assert_pinned(
            generic.models(),
            &PINNED[i],
            &format!("parameters {i}, generic"),
        );
        // The generic path reports the composed spend of its K fits: within the total.
        match (generic.epsilon(), direct.epsilon()) {
            (Some(spent), Some(total)) => assert!(spent <= total && spent > 0.999 * total),
            (spent, total) => assert_eq!((spent, total), (None, None)),
        }
        assert_eq!(generic.delta(), 0.0);
        let x = [0.6, 0.0];
        assert_eq!(generic.predict(&x).unwrap(), direct.predict(&x).unwrap());
    }
}

/// Over another trainer (Gaussian objective perturbation, an (ε, δ) one): K models, each
/// the trainer's fit of "class k against the rest" with the next draws of the one
/// generator, and the composed (K·ε, K·δ) reported.
#[test]
fn one_vs_rest_over_another_trainer() {
    let (values, classes) = blobs(150, 32);
    let data = examples(&values);
    let trainer = GaussianErm::objective_perturbation(Loss::Logistic, 1e-2, 0.5, 1e-6);
    let ovr = OneVsRest::fit_trainer(
        &trainer,
        &data,
        &classes,
        3,
        &mut InsecureSeededRng::new(50),
    )
    .unwrap();
    let mut rng = InsecureSeededRng::new(50);
    let by_hand: Vec<LinearModel> = (0..3)
        .map(|k| {
            let labels = classes
                .iter()
                .map(|&c| if c == k { 1.0 } else { -1.0 })
                .collect();
            let relabelled = Examples::new(data.inputs().clone(), labels).unwrap();
            trainer.train(&relabelled, &mut rng).unwrap()
        })
        .collect();
    assert_eq!(ovr.models(), by_hand.as_slice());
    let three = |x: f64| add_rounding_up(add_rounding_up(x, x), x);
    assert_eq!(ovr.epsilon(), Some(three(0.5)));
    assert_eq!(ovr.delta(), three(1e-6));
    let predicted = ovr.predictions(data.inputs()).unwrap();
    for (i, &p) in predicted.iter().enumerate() {
        assert_eq!(p, ovr.predict(&values[2 * i..2 * i + 2]).unwrap());
    }
    let right = predicted
        .iter()
        .zip(&classes)
        .filter(|(p, c)| p == c)
        .count();
    assert!(right > 100, "{right} of 150");
}

/// The generic path refuses bad class labels and the trainer's own refusals (a row outside
/// the unit ball) before any fit draws from the generator.
#[test]
fn one_vs_rest_through_a_trainer_refuses_up_front() {
    let (mut values, classes) = blobs(30, 33);
    let trainer = ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 0.5);
    let mut rng = InsecureSeededRng::new(60);
    let fit = |values: &[f64], classes: &[usize], count, rng: &mut InsecureSeededRng| {
        OneVsRest::fit_trainer(&trainer, &examples(values), classes, count, rng)
    };
    assert!(matches!(
        fit(&values, &classes, 1, &mut rng),
        Err(ErmError::InvalidCount { .. })
    ));
    assert!(matches!(
        fit(&values, &classes[1..], 3, &mut rng),
        Err(ErmError::DimensionMismatch { .. })
    ));
    values[8] = 1.5;
    assert!(matches!(
        fit(&values, &classes, 3, &mut rng),
        Err(ErmError::RowNormAboveOne { row: 4, .. })
    ));
    // Nothing was drawn: the generator is where a fresh one starts.
    let mut fresh = InsecureSeededRng::new(60);
    assert_eq!(
        rand::Rng::next_u64(&mut rng),
        rand::Rng::next_u64(&mut fresh)
    );
}

/// The weights' bits [`OneVsRest::fit`] gave before it was generic, per parameter set of
/// [`pinned_params`] (seed 40 + its index), class by class.
const PINNED: [[[u64; 2]; 3]; 4] = [
    // objective perturbation, logistic, cliff-free, ε = 1.5
    [
        [0xc011f5f764400000, 0xc02137a74f600000],
        [0xc029aa0501e00000, 0x4016985d5d000000],
        [0x4014460172c00000, 0xbff052742b000000],
    ],
    // objective perturbation, Huber h = 0.5, CMS11, ε = 0.9
    [
        [0x40011bb01fc00000, 0xbfab35db20000000],
        [0xbfe6451596000000, 0x40031392cf800000],
        [0xbff0ca3d57800000, 0xc003f99f49600000],
    ],
    // output perturbation, logistic, ε = 2
    [
        [0x40038286d7800000, 0xc01501732f600000],
        [0xbfe49d5333000000, 0x400ebfbfe3400000],
        [0xc010c673eea00000, 0xc00cc9fd8b800000],
    ],
    // non-private
    [
        [0x401313f8ef39cd5d, 0x3f74affab1cc5073],
        [0xc002d777622f215c, 0x401099cec7de2909],
        [0xc002a851ed715908, 0xc010ab6dda8aaec2],
    ],
];

/// The one-vs-rest shares: a count beyond MAX_CLASSES is refused before anything, naming
/// it; a share that rounds to 0 names K (it said only "large enough to split across the
/// classes"); δ is held to MAX_DELTA and split rounding down.
#[test]
fn rejects_shares_naming_the_class_count() {
    for shares in [
        OneVsRest::epsilon_per_class(1.0, 100_000).map(drop),
        OneVsRest::delta_per_class(1e-5, 100_000).map(drop),
        OneVsRest::check_class_count(100_000),
        OneVsRest::check_class_count(1),
    ] {
        let err = shares.unwrap_err();
        assert!(
            matches!(
                err,
                ErmError::InvalidCount {
                    what: "class count",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("65536"), "{err}");
    }
    let err = OneVsRest::epsilon_per_class(5e-324, 3).unwrap_err();
    assert!(
        matches!(err, ErmError::PerClass { classes: 3, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("3 classes") && err.to_string().contains("5e-324"));
    let err = OneVsRest::delta_per_class(1e-323, 7).unwrap_err();
    assert!(
        err.to_string().contains("7 classes") && err.to_string().contains("delta"),
        "{err}"
    );
    assert!(OneVsRest::delta_per_class(0.5, 3).is_err());
    let share = OneVsRest::delta_per_class(1e-5, 3).unwrap();
    assert!(share > 0.0 && 3.0 * share <= 1e-5);
    // A pure-ε budget passes δ = 0 through.
    let (e, d) = OneVsRest::trainer_per_class(1.0, 0.0, 4, |e, d| Ok((e, d))).unwrap();
    assert!(e <= 0.25 && e > 0.2499 && d == 0.0);
}

/// `fit_trainer` with 100,000 classes refuses naming the count before any model is
/// trained (the trainer is never called), as `fit` does.
#[test]
fn rejects_too_many_classes_before_any_fit() {
    let (values, _) = blobs(30, 5);
    let examples =
        Examples::new(Features::dense(2, values.clone()).unwrap(), vec![1.0; 30]).unwrap();
    let classes: Vec<usize> = (0..30).collect();
    let trainer = GaussianErm::output_perturbation(Loss::Logistic, 0.1, 1.0, 1e-6);
    let err = OneVsRest::fit_trainer(
        &trainer,
        &examples,
        &classes,
        100_000,
        &mut InsecureSeededRng::new(1),
    )
    .unwrap_err();
    assert!(err.to_string().contains("class count = 100000"), "{err}");
}
