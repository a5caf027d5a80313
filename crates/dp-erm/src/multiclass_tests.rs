//! One-vs-rest over `ErmParams` (its models pinned bit for bit, as the code before
//! `OneVsRest` was generic wrote them) and over any other `Trainer`.

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use crate::{ErmParams, LinearModel, Loss, ObjectiveCalibration, OneVsRest, TrainingSet};

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
    let fits: Vec<Vec<Vec<u64>>> = pinned_params()
        .iter()
        .enumerate()
        .map(|(i, params)| {
            let mut rng = InsecureSeededRng::new(40 + i as u64);
            bits(
                OneVsRest::fit(params, &rows, &classes, 3, &mut rng)
                    .unwrap()
                    .models(),
            )
        })
        .collect();
    assert_eq!(fits, PINNED);
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
