//! Feature maps (approximation, norms, data independence), the estimator, model files, and
//! an empirical privacy audit with mutation checks.

use dp_erm::{
    Classifier, ErmError, ErmParams, Examples, Features, LinearModel, Loss, Probabilities, Trainer,
    TrainingSet,
};
use dp_noise::InsecureSeededRng;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::{
    FeatureMap, Kernel, KernelError, KernelModel, KernelParams, MAX_OUTPUT_FEATURES, Sampling,
};

/// False-alarm rate of each statistical test.
const ALPHA: f64 = 1e-6;

fn gaussian(gamma: f64) -> Kernel {
    Kernel::gaussian(gamma).unwrap()
}

fn random_rows(n: usize, d: usize, spread: f64, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n * d)
        .map(|_| spread * (2.0 * rng.random::<f64>() - 1.0))
        .collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

// ---------------------------------------------------------------------------------------
// The map

/// `2·v(x)ᵀv(x')` is a mean of D terms `2cos(a_j)cos(b_j)` ∈ [−2, 2] with mean k(x, x')
/// (independent for standard features; for orthogonal ones the D/d blocks are independent,
/// so Hoeffding is applied to block means). With P(|error| ≥ t) ≤ 2exp(−2Nt²/16) over N
/// independent units, t = √(8 ln(2·pairs/α)/N) bounds every pair's error at rate α.
#[test]
fn two_inner_products_approximate_both_kernels_within_hoeffding() {
    let (d, big_d, pairs) = (4, 4000, 30);
    let rows = random_rows(2 * pairs, d, 1.0, 5);
    let cases = [
        (gaussian(0.5), Sampling::Standard, big_d),
        (gaussian(0.5), Sampling::Orthogonal, big_d / d),
        (Kernel::laplacian(0.7).unwrap(), Sampling::Standard, big_d),
    ];
    for (kernel, sampling, units) in cases {
        let map = FeatureMap::draw_seeded(kernel, sampling, d, big_d, 11).unwrap();
        let t = (8.0 * (2.0 * pairs as f64 / ALPHA).ln() / units as f64).sqrt();
        let mut worst: f64 = 0.0;
        for p in 0..pairs {
            let (x, y) = (
                &rows[2 * p * d..(2 * p + 1) * d],
                &rows[(2 * p + 1) * d..(2 * p + 2) * d],
            );
            let approx = 2.0 * dot(&map.map_row(x).unwrap(), &map.map_row(y).unwrap());
            worst = worst.max((approx - kernel.evaluate(x, y).unwrap()).abs());
        }
        assert!(
            worst <= t,
            "{kernel:?} {sampling:?}: worst error {worst} > {t}"
        );
        // And not trivially: the approximation is informative (t is loose, errors are ~1/√D).
        assert!(worst < 0.1, "{kernel:?} {sampling:?}: worst error {worst}");
    }
}

/// Orthogonal features have a lower mean squared error than standard ones at the same D
/// (Yu et al. 2016). Each of 400 independent maps of each kind gives its mean squared
/// error over 40 fixed pairs; a one-sided Welch test at z = 4.75 (false alarm ≈ 1e-6)
/// must find the orthogonal mean lower.
#[test]
fn orthogonal_features_beat_standard_ones_in_mean_squared_error() {
    let (d, big_d, pairs, maps) = (8, 16, 40, 400);
    // Distances of order 1/√γ, where the variance reduction is largest.
    let rows = random_rows(2 * pairs, d, 0.8, 21);
    let kernel = gaussian(0.5);
    let errors = |sampling: Sampling, seed: u64| -> Vec<f64> {
        (0..maps)
            .map(|m| {
                let map = FeatureMap::draw_seeded(kernel, sampling, d, big_d, seed + m).unwrap();
                (0..pairs)
                    .map(|p| {
                        let x = &rows[2 * p * d..(2 * p + 1) * d];
                        let y = &rows[(2 * p + 1) * d..(2 * p + 2) * d];
                        let approx = 2.0 * dot(&map.map_row(x).unwrap(), &map.map_row(y).unwrap());
                        (approx - kernel.evaluate(x, y).unwrap()).powi(2)
                    })
                    .sum::<f64>()
                    / pairs as f64
            })
            .collect()
    };
    let standard = errors(Sampling::Standard, 1_000);
    let orthogonal = errors(Sampling::Orthogonal, 2_000);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64
    };
    let z = (mean(&standard) - mean(&orthogonal))
        / (var(&standard) / maps as f64 + var(&orthogonal) / maps as f64).sqrt();
    eprintln!(
        "MSE standard {:.5}, orthogonal {:.5}, z = {z:.1}",
        mean(&standard),
        mean(&orthogonal)
    );
    assert!(z > 4.75, "z = {z}");
}

#[test]
fn orthogonal_blocks_are_orthogonal_with_chi_norms() {
    let d = 6;
    let map = FeatureMap::draw_seeded(gaussian(2.0), Sampling::Orthogonal, d, 15, 3).unwrap();
    let rows: Vec<&[f64]> = map.frequencies().chunks(d).collect();
    for block in rows.chunks(d) {
        for (i, a) in block.iter().enumerate() {
            for b in &block[i + 1..] {
                let cosine = dot(a, b) / (norm(a) * norm(b));
                assert!(cosine.abs() < 1e-12, "{cosine}");
            }
        }
    }
    // Norms are √(2γ)·chi(d): their squares average 2γ·d = 24 (15 draws: a loose check
    // that the scale is right, not a factor 2 or √2 off).
    let mean_square = rows.iter().map(|r| dot(r, r)).sum::<f64>() / rows.len() as f64;
    assert!((12.0..48.0).contains(&mean_square), "{mean_square}");
}

#[test]
fn mapped_rows_lie_in_the_unit_ball_for_any_finite_input() {
    let d = 3;
    let maps = [
        FeatureMap::draw_seeded(gaussian(0.5), Sampling::Standard, d, 1, 1).unwrap(),
        FeatureMap::draw_seeded(gaussian(1e6), Sampling::Orthogonal, d, 500, 2).unwrap(),
        FeatureMap::draw_seeded(
            Kernel::laplacian(3.0).unwrap(),
            Sampling::Standard,
            d,
            64,
            3,
        )
        .unwrap(),
    ];
    let mut inputs: Vec<Vec<f64>> = random_rows(50, d, 10.0, 4)
        .chunks(d)
        .map(<[f64]>::to_vec)
        .collect();
    for v in [1e300, -1e300, f64::MAX, f64::MIN, 1e-300, 5e-324, 0.0, -0.0] {
        inputs.push(vec![v; d]);
        inputs.push(vec![v, 1.0, -v]);
    }
    for map in &maps {
        // All phases at 0 and ωᵀx = 0 make every cosine exactly 1: the worst case.
        for x in &inputs {
            let v = map.map_row(x).unwrap();
            assert_eq!(v.len(), map.output_features());
            assert!(v.iter().all(|c| c.is_finite()), "{x:?}");
            assert!(norm(&v) <= 1.0, "‖v({x:?})‖ = {}", norm(&v));
        }
        let batch = Features::dense(d, inputs.concat()).unwrap();
        let mapped = map.map(&batch).unwrap();
        let rows = TrainingSet::from_dense_matrix(mapped, vec![1.0; inputs.len()]);
        assert!(rows.is_ok(), "{:?}", rows.err());
    }
    let worst_case =
        FeatureMap::draw_seeded(gaussian(1.0), Sampling::Standard, 1, 1000, 5).unwrap();
    let all_ones_norm = worst_case.scale() * (1000f64).sqrt();
    assert!(all_ones_norm <= 1.0 && all_ones_norm > 1.0 - 1e-11);
}

#[test]
fn rejects_non_finite_inputs_and_wrong_dimensions() {
    let map = FeatureMap::draw_seeded(gaussian(0.5), Sampling::Standard, 2, 8, 1).unwrap();
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(matches!(
            map.map_row(&[0.0, bad]),
            Err(ErmError::NonFiniteFeature { col: 1, .. })
        ));
    }
    assert!(matches!(
        map.map_row(&[0.0]),
        Err(ErmError::DimensionMismatch {
            expected: 2,
            found: 1,
            ..
        })
    ));
    let wide = Features::dense(3, vec![0.0; 3]).unwrap();
    assert!(matches!(
        map.map(&wide),
        Err(ErmError::DimensionMismatch {
            expected: 2,
            found: 3,
            ..
        })
    ));
}

#[test]
fn sparse_and_dense_rows_map_alike_and_batches_match_single_rows() {
    let (n, d) = (700, 5); // more than two blocks of 256 rows
    let values = random_rows(n, d, 2.0, 8);
    let dense = Features::dense(d, values.clone()).unwrap();
    let sparse = Features::sparse(
        d,
        values
            .chunks(d)
            .map(|r| {
                r.iter()
                    .copied()
                    .enumerate()
                    .filter(|&(j, _)| j != 2)
                    .collect()
            })
            .collect(),
    )
    .unwrap();
    let map = FeatureMap::draw_seeded(gaussian(0.5), Sampling::Orthogonal, d, 37, 9).unwrap();
    let from_dense = map.map(&dense).unwrap();
    let from_sparse = map.map(&sparse).unwrap();
    for i in [0, 255, 256, 699] {
        let row = &values[i * d..(i + 1) * d];
        let single = map.map_row(row).unwrap();
        let mut without_2 = row.to_vec();
        without_2[2] = 0.0;
        let single_sparse = map.map_row(&without_2).unwrap();
        for j in 0..37 {
            assert!((from_dense[(i, j)] - single[j]).abs() < 1e-14);
            assert!((from_sparse[(i, j)] - single_sparse[j]).abs() < 1e-14);
        }
    }
}

#[test]
fn rejects_bad_map_parameters_before_allocating() {
    for gamma in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            Kernel::gaussian(gamma),
            Err(KernelError::InvalidParameter {
                what: "kernel width gamma",
                ..
            })
        ));
        assert!(Kernel::laplacian(gamma).is_err());
        // A kernel built directly (bypassing the constructor) is checked when drawn.
        let raw = Kernel::Gaussian { gamma };
        assert!(FeatureMap::draw_seeded(raw, Sampling::Standard, 2, 8, 1).is_err());
    }
    let k = gaussian(1.0);
    let draw = |d: usize, big_d: usize| FeatureMap::draw_seeded(k, Sampling::Standard, d, big_d, 1);
    assert!(matches!(
        draw(2, 0),
        Err(KernelError::InvalidCount {
            what: "random feature count D",
            ..
        })
    ));
    assert!(matches!(
        draw(2, MAX_OUTPUT_FEATURES + 1),
        Err(KernelError::InvalidCount { .. })
    ));
    assert!(matches!(
        draw(2, usize::MAX),
        Err(KernelError::InvalidCount { .. })
    ));
    assert!(matches!(
        draw(0, 8),
        Err(KernelError::InvalidCount {
            what: "input feature count d",
            ..
        })
    ));
    // Each size allowed alone, their product too large to allocate.
    assert!(matches!(
        draw(1 << 12, 1 << 13),
        Err(KernelError::InvalidCount {
            what: "map size D × d",
            ..
        })
    ));
    assert_eq!(
        FeatureMap::draw_seeded(
            Kernel::laplacian(1.0).unwrap(),
            Sampling::Orthogonal,
            2,
            8,
            1
        ),
        Err(KernelError::OrthogonalNeedsGaussian)
    );
}

// ---------------------------------------------------------------------------------------
// Training and prediction

/// The nested-balls data (docs/src/reference/experiments.md) in d = 5: label +1 inside radius 0.1, −1 in the
/// annulus 0.2–0.5, random in 0.1–0.2.
fn nested_balls(n: usize, seed: u64) -> Examples {
    let d = 5;
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut values = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let u: f64 = rng.random();
        let (a, b, label): (f64, f64, f64) = if u < 0.45 {
            (0.0, 0.1, 1.0)
        } else if u < 0.9 {
            (0.2, 0.5, -1.0)
        } else {
            (0.1, 0.2, if rng.random::<bool>() { 1.0 } else { -1.0 })
        };
        let direction: Vec<f64> = (0..d)
            .map(|_| rand_distr::Distribution::<f64>::sample(&rand_distr::StandardNormal, &mut rng))
            .collect();
        let length = norm(&direction);
        let radius = (a.powi(d as i32)
            + rng.random::<f64>() * (b.powi(d as i32) - a.powi(d as i32)))
        .powf(1.0 / d as f64);
        values.extend(direction.iter().map(|v| v / length * radius));
        labels.push(label);
    }
    Examples::new(Features::dense(d, values).unwrap(), labels).unwrap()
}

#[test]
fn kernel_classifier_learns_nested_balls_that_no_linear_model_can() {
    let train = nested_balls(4000, 1);
    let test = nested_balls(4000, 2);
    // The paper's γ = 0.5 (docs/src/reference/experiments.md): measured 0.062 here (0.046 at Λ = 1e-6).
    let map = FeatureMap::draw_seeded(gaussian(0.5), Sampling::Orthogonal, 5, 200, 3).unwrap();
    let kernel = KernelParams::new(map, ErmParams::non_private(Loss::huber(0.5).unwrap(), 1e-5));
    let model = kernel
        .train(&train, &mut InsecureSeededRng::new(1))
        .unwrap();
    let kernel_error = model.mistakes(&test).unwrap() as f64 / test.len() as f64;
    let linear = ErmParams::non_private(Loss::huber(0.5).unwrap(), 1e-4)
        .train(&train, &mut InsecureSeededRng::new(1))
        .unwrap();
    let linear_error = Classifier::mistakes(&linear, &test).unwrap() as f64 / test.len() as f64;
    eprintln!("nested balls: kernel {kernel_error:.3}, linear {linear_error:.3}");
    // Bayes error 0.05; a linear rule cannot beat predicting the majority (0.45+).
    assert!(kernel_error < 0.1, "{kernel_error}");
    assert!(linear_error > 0.3, "{linear_error}");
}

#[test]
fn fit_reports_epsilon_and_the_model_predicts_rows_and_batches_alike() {
    let data = nested_balls(500, 4);
    let map = FeatureMap::draw_seeded(gaussian(50.0), Sampling::Standard, 5, 50, 4).unwrap();
    for erm in [
        ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 0.5),
        ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), 1e-3, 2.0),
        ErmParams::output_perturbation(Loss::huber(0.5).unwrap(), 1e-2, 1.0),
        ErmParams::non_private(Loss::Logistic, 1e-3),
    ] {
        let params = KernelParams::new(map.clone(), erm.clone());
        let fit = params.fit(&data, &mut InsecureSeededRng::new(2)).unwrap();
        assert_eq!(fit.epsilon(), erm.mechanism().epsilon());
        assert_eq!(Trainer::epsilon(&params), erm.mechanism().epsilon());
        let model = fit.model();
        assert_eq!(model.epsilon(), erm.mechanism().epsilon());
        assert_eq!(model.map(), &map);
        assert_eq!(
            model.linear().metadata().feature_map.as_deref(),
            Some(map.id().as_str())
        );
        let batch = model.decision_values(data.inputs()).unwrap();
        for i in [0, 7, 499] {
            let FeatureRowOwned(row) = row_of(&data, i);
            let one = model.decision_function(&row).unwrap();
            assert!((one - batch[i]).abs() <= 1e-12 * one.abs().max(1.0));
            assert_eq!(
                model.predict(&row).unwrap(),
                if one >= 0.0 { 1.0 } else { -1.0 }
            );
        }
    }
}

#[test]
fn kernel_logistic_gives_probabilities_and_kernel_svm_an_error() {
    let data = nested_balls(300, 9);
    let map = FeatureMap::draw_seeded(gaussian(50.0), Sampling::Standard, 5, 50, 9).unwrap();
    let logistic = KernelParams::objective_perturbation(map.clone(), Loss::Logistic, 1e-2, 1.0)
        .fit(&data, &mut InsecureSeededRng::new(9))
        .unwrap()
        .into_model();
    let probabilities = logistic.probabilities(data.inputs()).unwrap();
    let labels = logistic.predictions(data.inputs()).unwrap();
    for (i, (&p, &label)) in probabilities.iter().zip(&labels).enumerate() {
        assert!(p > 0.0 && p < 1.0, "row {i}: {p}");
        assert!(p != 0.5 || label == 1.0, "row {i}");
        assert_eq!(p > 0.5, label == 1.0, "row {i}: p = {p}");
        let FeatureRowOwned(row) = row_of(&data, i);
        assert!(
            (logistic.predict_proba(&row).unwrap() - p).abs() < 1e-12,
            "row {i}"
        );
    }
    assert_eq!(
        logistic.predict_proba(&[0.0; 4]),
        Err(ErmError::DimensionMismatch {
            what: "row",
            expected: 5,
            found: 4
        })
    );
    let svm = KernelParams::objective_perturbation(map, Loss::huber(0.5).unwrap(), 1e-2, 1.0)
        .fit(&data, &mut InsecureSeededRng::new(9))
        .unwrap()
        .into_model();
    assert!(matches!(
        svm.probabilities(data.inputs()),
        Err(ErmError::NoProbabilities { .. })
    ));
}

struct FeatureRowOwned(Vec<f64>);

fn row_of(data: &Examples, i: usize) -> FeatureRowOwned {
    let mut row = vec![0.0; data.features()];
    data.inputs().row(i).write_dense(&mut row);
    FeatureRowOwned(row)
}

#[test]
fn rejects_dimension_mismatch_at_fit_and_predict_and_bad_parameters_first() {
    let data = nested_balls(50, 5);
    let map = FeatureMap::draw_seeded(gaussian(1.0), Sampling::Standard, 4, 16, 1).unwrap();
    let params = KernelParams::objective_perturbation(map, Loss::Logistic, 0.1, 1.0);
    assert!(matches!(
        params.fit(&data, &mut InsecureSeededRng::new(1)),
        Err(KernelError::Erm(ErmError::DimensionMismatch {
            expected: 4,
            found: 5,
            ..
        }))
    ));
    let map = FeatureMap::draw_seeded(gaussian(1.0), Sampling::Standard, 5, 16, 1).unwrap();
    for (erm, what) in [
        (
            ErmParams::objective_perturbation(Loss::Logistic, 0.1, 0.0),
            "epsilon",
        ),
        (
            ErmParams::objective_perturbation(Loss::Logistic, 0.1, f64::NAN),
            "epsilon",
        ),
        (
            ErmParams::objective_perturbation(Loss::Logistic, 0.0, 1.0),
            "regularization",
        ),
    ] {
        // Data of the wrong dimension: the parameter refusal still comes first.
        let params = KernelParams::new(map.clone(), erm);
        let err = params
            .fit(
                &nested_balls(3, 1).select(&[0]).unwrap(),
                &mut InsecureSeededRng::new(1),
            )
            .unwrap_err();
        assert!(err.to_string().contains(what), "{err}");
    }
    let model = KernelParams::new(map, ErmParams::non_private(Loss::Logistic, 0.1))
        .fit(&data, &mut InsecureSeededRng::new(1))
        .unwrap()
        .into_model();
    assert!(matches!(
        model.decision_function(&[0.0; 4]),
        Err(ErmError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        model.decision_values(&Features::dense(6, vec![0.0; 6]).unwrap()),
        Err(ErmError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        model.decision_function(&[0.0, 0.0, f64::NAN, 0.0, 0.0]),
        Err(ErmError::NonFiniteFeature { col: 2, .. })
    ));
}

#[test]
fn rejects_designs_too_large_to_allocate_before_mapping() {
    let map = FeatureMap::draw_seeded(gaussian(1.0), Sampling::Standard, 1, 1 << 20, 1).unwrap();
    let rows = Features::dense(1, vec![0.5; 2048]).unwrap();
    let too_large = |err: &ErmError| {
        matches!(
            err,
            ErmError::InvalidCount {
                what: "mapped design size n × D",
                ..
            }
        )
    };
    let err = map.map(&rows).unwrap_err();
    assert!(too_large(&err), "{err}");
    // The trainer's up-front check (what tuning and ensembles run before they charge a
    // budget) refuses the same sizes, and accepts the largest that fits.
    let params = KernelParams::objective_perturbation(map, Loss::Logistic, 1e-2, 1.0);
    match params.check_shape(1100, 1) {
        Err(KernelError::Erm(err)) => assert!(too_large(&err), "{err}"),
        other => panic!("n × D = 1100 × 2^20 accepted by check_shape: {other:?}"),
    }
    assert!(params.check_shape(1024, 1).is_ok());
}

// ---------------------------------------------------------------------------------------
// Files

fn small_model() -> KernelModel {
    let data = nested_balls(100, 6);
    let map = FeatureMap::draw_seeded(gaussian(20.0), Sampling::Orthogonal, 5, 12, 6).unwrap();
    KernelParams::objective_perturbation(map, Loss::huber(0.5).unwrap(), 1e-2, 1.0)
        .fit(&data, &mut InsecureSeededRng::new(6))
        .unwrap()
        .into_model()
}

#[test]
fn model_files_round_trip_and_predict_identically() {
    let model = small_model();
    let loaded = KernelModel::from_bytes(&model.to_bytes().unwrap()).unwrap();
    assert_eq!(loaded, model);
    let key =
        dp_erm::ModelKey::from_bytes(&std::array::from_fn::<u8, 32, _>(|i| i as u8 * 7)).unwrap();
    let purpose = dp_erm::ModelPurpose::new("kernel scoring").unwrap();
    let sealed = model.to_bytes_authenticated(&key, &purpose).unwrap();
    assert_eq!(
        KernelModel::from_bytes_authenticated(&sealed, &key, &purpose).unwrap(),
        model
    );
    // Bound to its purpose, as a linear model's file is; and held to a privacy demand.
    let other = dp_erm::ModelPurpose::new("kernel scoring v2").unwrap();
    let err = KernelModel::from_bytes_authenticated(&sealed, &key, &other).unwrap_err();
    assert!(err.to_string().contains("another purpose"), "{err}");
    let strict = purpose.clone().require_private(0.5).unwrap();
    let err = KernelModel::from_bytes_authenticated(&sealed, &key, &strict).unwrap_err();
    assert!(err.to_string().contains("ε = 1"), "{err}");
    let dir = std::env::temp_dir().join(format!("dp-kernel-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.dpm");
    model.save(&path).unwrap();
    let from_disk = KernelModel::load(&path).unwrap();
    let x = [0.05, -0.1, 0.0, 0.2, 0.01];
    assert_eq!(
        from_disk.decision_function(&x).unwrap(),
        model.decision_function(&x).unwrap()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rejects_corrupted_foreign_and_inconsistent_model_files() {
    let model = small_model();
    let bytes = model.to_bytes().unwrap();
    // Every single-byte flip is refused (checksum), never a panic.
    for at in (0..bytes.len()).step_by(7) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        assert!(KernelModel::from_bytes(&flipped).is_err(), "byte {at}");
    }
    assert!(KernelModel::from_bytes(&bytes[..bytes.len() - 3]).is_err());
    // A linear model's file is not a kernel model, and the other way round.
    let linear_file = model.linear().to_bytes().unwrap();
    let err = KernelModel::from_bytes(&linear_file)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"dp-erm/linear\" model, not a \"dp-kernel/random-features\""),
        "{err}"
    );
    assert!(LinearModel::from_bytes(&bytes).is_err());
    // Valid encodings of invalid models (as a forger with the checksum would write them)
    // are refused by validation, through the file loader and serde alike.
    let genuine = || Forged {
        map: ForgedMap {
            kernel: model.map().kernel(),
            sampling: model.map().sampling(),
            input_features: model.map().input_features(),
            frequencies: model.map().frequencies().to_vec(),
            phases: model.map().phases().to_vec(),
        },
        linear: model.linear().clone(),
    };
    assert_eq!(
        KernelModel::from_bytes(&dp_erm::container::to_bytes(&genuine()).unwrap()).unwrap(),
        model
    );
    type Edit = fn(&mut Forged);
    let edits: [(&str, Edit); 6] = [
        ("phase", |f| f.map.phases[0] = 4.0),
        ("frequency count", |f| {
            f.map.frequencies.pop();
        }),
        ("frequency", |f| f.map.frequencies[3] = f64::INFINITY),
        ("weights but the feature map has", |f| {
            f.map.phases.pop();
            let d = f.map.input_features;
            f.map.frequencies.truncate(f.map.frequencies.len() - d);
        }),
        ("kernel width gamma", |f| {
            f.map.kernel = Kernel::Gaussian { gamma: -1.0 }
        }),
        // A valid map that is not the one the weights were trained on.
        ("was trained on feature map", |f| {
            f.map.kernel = Kernel::Gaussian { gamma: 21.0 }
        }),
    ];
    for (fragment, edit) in edits {
        let mut forged = genuine();
        edit(&mut forged);
        let file = dp_erm::container::to_bytes(&forged).unwrap();
        let err = KernelModel::from_bytes(&file).unwrap_err().to_string();
        assert!(err.contains(fragment), "file: {err} (wanted {fragment})");
        if forged.map.frequencies.iter().all(|v| v.is_finite()) {
            let json = serde_json::to_string(&forged).unwrap();
            let err = serde_json::from_str::<KernelModel>(&json)
                .unwrap_err()
                .to_string();
            assert!(err.contains(fragment), "serde: {err} (wanted {fragment})");
        }
    }
}

/// A kernel model's layout without validation: a forger's writer.
#[derive(serde::Serialize)]
struct ForgedMap {
    kernel: Kernel,
    sampling: Sampling,
    input_features: usize,
    frequencies: Vec<f64>,
    phases: Vec<f64>,
}

#[derive(serde::Serialize)]
struct Forged {
    map: ForgedMap,
    linear: LinearModel,
}

impl dp_erm::StoredModel for Forged {
    const MODEL_TYPE: &'static str = "dp-kernel/random-features";
    type Unchecked = ();
    fn check(_: ()) -> Result<Self, ErmError> {
        Err(ErmError::InvalidModelFile(
            "a forger's writer reads nothing".into(),
        ))
    }
    fn replace_one_guarantee(&self) -> Option<(f64, f64)> {
        dp_erm::StoredModel::replace_one_guarantee(&self.linear)
    }
}

/// Mapped rows are dense, so their group norm is not bounded by 1: group-shaped noise is
/// refused before anything is mapped, whatever the data (a refusal depending on the rows
/// would leak them).
#[test]
fn rejects_group_shaped_noise_before_mapping() {
    let map = FeatureMap::draw_seeded(gaussian(0.5), Sampling::Standard, 5, 20, 3).unwrap();
    let groups = dp_noise::FeatureGroups::singletons(20).unwrap();
    let erm =
        ErmParams::objective_perturbation(Loss::huber(0.5).unwrap(), 1e-3, 1.0).group_noise(groups);
    let kernel = KernelParams::new(map, erm);
    assert!(matches!(
        kernel.check(),
        Err(KernelError::Erm(ErmError::MisplacedOption { .. }))
    ));
    let data = nested_balls(50, 4);
    assert!(matches!(
        kernel.fit(&data, &mut InsecureSeededRng::new(1)),
        Err(KernelError::Erm(ErmError::MisplacedOption { .. }))
    ));
}

/// Extreme but accepted widths give short identifiers, so the fit's model metadata takes
/// them (a 1e300 width once made a 336-byte identifier that the fit refused).
#[test]
fn extreme_kernel_widths_give_short_identifiers_and_fit() {
    let data = nested_balls(60, 5);
    for kernel in [
        Kernel::laplacian(crate::MAX_GAMMA).unwrap(),
        Kernel::gaussian(crate::MAX_GAMMA).unwrap(),
        Kernel::gaussian(1e-300).unwrap(),
        Kernel::gaussian(0.5).unwrap(),
    ] {
        let map = FeatureMap::draw_seeded(kernel, Sampling::Standard, 5, 50, 7).unwrap();
        assert!(map.id().len() <= 64, "{}", map.id());
        let params = KernelParams::new(
            map,
            ErmParams::objective_perturbation(Loss::Logistic, 1e-2, 1.0),
        );
        params.fit(&data, &mut InsecureSeededRng::new(1)).unwrap();
    }
    let map = FeatureMap::draw_seeded(gaussian(0.5), Sampling::Standard, 5, 50, 7).unwrap();
    assert!(map.id().contains("gamma0.5-"), "{}", map.id());
}
