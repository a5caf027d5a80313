//! The binding's fits against the path a Rust user writes, and the fixtures the Python
//! tests compare their seeded fits with.

use std::path::PathBuf;

use dp_erm::{ErmParams, LinearModel, Loss, OneVsRest, TrainingSet};
use dp_noise::InsecureSeededRng;

use crate::error::CoreError;
use crate::fit::{LinearSpec, Mechanism, Randomness, Regularization, fit_linear};
use crate::models::Models;
use crate::rows::{Ints, RowTransform, Rows};

const FEATURES: usize = 3;
const ROWS: usize = 40;
const SEED: u64 = 42;

/// Exactly representable values (multiples of 1/8), so Python builds the same bits:
/// `x[i][j] = ((7i + 3j) mod 11 − 5) / 8`.
fn values() -> Vec<f64> {
    (0..ROWS)
        .flat_map(|i| (0..FEATURES).map(move |j| ((7 * i + 3 * j) % 11) as f64 - 5.0))
        .map(|v| v / 8.0)
        .collect()
}

/// Class of row i: `(5i mod 7) mod classes`, so both classes (or all three) occur.
fn classes(count: usize) -> Vec<usize> {
    (0..ROWS).map(|i| (5 * i % 7) % count).collect()
}

fn transform() -> RowTransform {
    RowTransform {
        norm_bound: 2.0,
        clip: false,
        intercept: Some(1.0),
    }
}

fn spec() -> LinearSpec {
    LinearSpec {
        loss: Loss::Logistic,
        mechanism: Mechanism::Objective {
            epsilon: 1.0,
            calibration: Default::default(),
        },
        regularization: Regularization::Fixed(0.01),
        feature_groups: None,
        tolerance: None,
        transform: transform(),
    }
}

/// What a Rust user writes: the builder's public bounds and intercept, then `fit` or
/// `OneVsRest::fit` with the seeded generator.
fn rust_reference(class_count: usize) -> Vec<LinearModel> {
    let labels = classes(class_count)
        .iter()
        .map(|&c| if c == 1 { 1.0 } else { -1.0 })
        .collect();
    let data = TrainingSet::builder(FEATURES)
        .dense_rows(values())
        .labels(labels)
        .scale_by_public_bounds(vec![2.0; FEATURES])
        .append_intercept(1.0)
        .build()
        .unwrap();
    let params =
        ErmParams::objective_perturbation(Loss::Logistic, 0.01, 1.0).feature_map(&transform().id());
    let mut rng = InsecureSeededRng::new(SEED);
    if class_count == 2 {
        vec![params.fit(&data, &mut rng).unwrap().into_model()]
    } else {
        let classes = classes(class_count);
        OneVsRest::fit(&params, &data, &classes, class_count, &mut rng)
            .unwrap()
            .models()
            .to_vec()
    }
}

fn binding_fit(rows: Rows<'_>, class_count: usize) -> Vec<LinearModel> {
    fit_linear(
        rows,
        &classes(class_count),
        class_count,
        &spec(),
        Randomness::InsecureSeed(SEED),
    )
    .unwrap()
    .models
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

/// The binding's seeded fit is bit for bit the Rust user's, and both are the checked-in
/// fixture the Python test compares with (`DPML_WRITE_FIXTURES=1` rewrites it).
#[test]
fn seeded_fit_is_the_rust_users_fit_and_the_fixture() {
    let values = values();
    for (class_count, name) in [(2, "seeded_binary"), (3, "seeded_ovr")] {
        let reference = rust_reference(class_count);
        let ours = binding_fit(
            Rows::Dense {
                values: &values,
                features: FEATURES,
            },
            class_count,
        );
        assert_eq!(ours, reference, "{name}");
        for (k, model) in reference.iter().enumerate() {
            let path = fixture(&format!("{name}_{k}.dpm"));
            let bytes = model.to_bytes().unwrap();
            if std::env::var_os("DPML_WRITE_FIXTURES").is_some() {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, &bytes).unwrap();
            }
            assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
        }
    }
}

/// The same rows as CSR (int32 and int64 indices) give the same model.
#[test]
fn csr_rows_fit_like_dense_rows() {
    let values = values();
    let (data, indices, indptr) = csr_of(&values);
    let dense = binding_fit(
        Rows::Dense {
            values: &values,
            features: FEATURES,
        },
        2,
    );
    let sparse = binding_fit(
        Rows::Csr {
            data: &data,
            indices: Ints::I64(&indices),
            indptr: Ints::I64(&indptr),
            features: FEATURES,
        },
        2,
    );
    assert_eq!(dense, sparse);
    let indices32: Vec<i32> = indices.iter().map(|&i| i as i32).collect();
    let indptr32: Vec<i32> = indptr.iter().map(|&i| i as i32).collect();
    let sparse32 = binding_fit(
        Rows::Csr {
            data: &data,
            indices: Ints::I32(&indices32),
            indptr: Ints::I32(&indptr32),
            features: FEATURES,
        },
        2,
    );
    assert_eq!(dense, sparse32);
}

/// `values` (rows of `FEATURES`) as CSR parts (data, indices, indptr), rows sorted.
fn csr_of(values: &[f64]) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let (mut data, mut indices, mut indptr) = (Vec::new(), Vec::new(), vec![0i64]);
    for row in values.chunks(FEATURES) {
        for (j, &v) in row.iter().enumerate() {
            if v != 0.0 {
                data.push(v);
                indices.push(j as i64);
            }
        }
        indptr.push(data.len() as i64);
    }
    (data, indices, indptr)
}

/// The transform that divides by `norm_bound` only (no clipping, no intercept).
fn scaling_only(norm_bound: f64) -> RowTransform {
    RowTransform {
        norm_bound,
        clip: false,
        intercept: None,
    }
}

/// The CSR fast path (arrays converted whole) gives what the entry-by-entry path gives,
/// for both index types and several bounds; a row out of column order is reported, and a
/// stored zero dropped.
#[test]
fn scaled_csr_arrays_equal_the_entry_path() {
    // (values, columns, offsets, ordered): increasing columns with an empty row; a row out
    // of order; a stored zero (which the entry path drops).
    type Case<'a> = (&'a [f64], &'a [i64], &'a [i64], bool);
    let cases: [Case<'_>; 3] = [
        (
            &[0.5, -0.25, 1.0, 0.125, -1.0],
            &[0, 2, 1, 0, 2],
            &[0, 2, 3, 3, 5],
            true,
        ),
        (&[0.5, -0.25, 1.0, 0.75], &[0, 2, 2, 1], &[0, 2, 4], false),
        (&[0.5, 0.0, 1.0], &[0, 1, 2], &[0, 2, 3], true),
    ];
    for (data, indices, indptr, ordered) in cases {
        let indices32: Vec<i32> = indices.iter().map(|&c| c as i32).collect();
        let indptr32: Vec<i32> = indptr.iter().map(|&p| p as i32).collect();
        let forms = [
            (Ints::I64(indices), Ints::I64(indptr)),
            (Ints::I32(&indices32), Ints::I32(&indptr32)),
            (Ints::I64(indices), Ints::I32(&indptr32)),
        ];
        for (indices, indptr) in forms {
            let rows = Rows::Csr {
                data,
                indices,
                indptr,
                features: 3,
            }
            .checked()
            .unwrap();
            for norm_bound in [1.0, 3.0] {
                let transform = scaling_only(norm_bound);
                let fast = transform.scaled_csr(&rows).unwrap();
                assert_eq!(fast, transform.scaled_csr_by_entry(&rows).unwrap());
                assert_eq!(fast.ordered, ordered);
                let zeros = data.iter().filter(|&&v| v == 0.0).count();
                assert_eq!(fast.values.len(), data.len() - zeros);
                assert_eq!(fast.values[0], 0.5 / norm_bound);
            }
        }
    }
}

/// Dense rows converted in parallel chunks (several here) give what the entry-by-entry
/// path gives: zeros dropped, values divided by the bound, offsets continuing across chunks.
#[test]
fn scaled_dense_rows_equal_the_entry_path() {
    let (rows, features) = (10_000, 7);
    let values: Vec<f64> = (0..rows * features)
        .map(|k| match (k * 7919) % 5 {
            0 | 1 => 0.0,
            m => (m as f64 - 2.5) / 4.0 + (k % 13) as f64 / 64.0,
        })
        .collect();
    let dense = Rows::Dense {
        values: &values,
        features,
    }
    .checked()
    .unwrap();
    for norm_bound in [1.0, 3.0] {
        let transform = scaling_only(norm_bound);
        let fast = transform.scaled_csr(&dense).unwrap();
        assert_eq!(fast, transform.scaled_csr_by_entry(&dense).unwrap());
        assert_eq!(fast.indptr.len(), rows + 1);
        assert!(fast.values.len() < rows * features * 4 / 5);
    }
}

/// Scores through the transform equal `coef·x + intercept` and the model's own score of
/// the builder's transformed row.
#[test]
fn scores_apply_the_training_transform() {
    let values = values();
    let rows = Rows::Dense {
        values: &values,
        features: FEATURES,
    };
    let models = Models::linear(binding_fit(rows, 2), transform()).unwrap();
    let scores = models.decision(rows).unwrap();
    let (coef, intercept, d) = models.coefficients().unwrap();
    assert_eq!(d, FEATURES);
    let Models::Linear { models: m, .. } = &models else {
        unreachable!()
    };
    let s = 1.0 / 2f64.sqrt();
    for (i, row) in values.chunks(FEATURES).enumerate() {
        let by_coef: f64 = row.iter().zip(&coef).map(|(x, c)| x * c).sum::<f64>() + intercept[0];
        assert!((scores[i] - by_coef).abs() < 1e-12, "row {i}");
        let mut transformed: Vec<f64> = row.iter().map(|x| x / 2.0 * s).collect();
        transformed.push(s);
        assert_eq!(scores[i], m[0].decision_function(&transformed).unwrap());
    }
}

#[test]
fn transform_id_round_trips_and_rejects_others() {
    for t in [
        transform(),
        RowTransform {
            norm_bound: 1e300,
            clip: true,
            intercept: None,
        },
        RowTransform {
            norm_bound: 0.1,
            clip: false,
            intercept: Some(3.7e-5),
        },
    ] {
        assert!(t.id().len() <= dp_erm::MAX_MODEL_TEXT_BYTES);
        assert_eq!(RowTransform::from_id(&t.id()).unwrap(), t);
    }
    for id in [
        "",
        "rbf:gaussian",
        "dpml-rows/v1 norm_bound=-1e0 clip=false intercept=none",
    ] {
        assert!(RowTransform::from_id(id).is_err(), "{id}");
    }
}

fn value_error(e: CoreError) -> String {
    assert_eq!(e.class_name(), "DPMLValueError", "{e}");
    e.to_string()
}

/// Bad shapes and parameters are refused by name before anything is trained.
#[test]
fn refusals_name_the_problem() {
    let values = values();
    let rows = Rows::Dense {
        values: &values,
        features: FEATURES,
    };
    let fit = |rows: Rows<'_>, classes: &[usize], count: usize, spec: &LinearSpec| {
        fit_linear(rows, classes, count, spec, Randomness::InsecureSeed(1))
            .err()
            .map(value_error)
            .unwrap_or_default()
    };
    let c = classes(2);
    assert!(fit(rows, &c[1..], 2, &spec()).contains("y has 39 labels for 40 rows"));
    assert!(fit(rows, &c, 1, &spec()).contains("at least 2"));
    let mut tight = spec();
    tight.transform.norm_bound = 0.5;
    let message = fit(rows, &c, 2, &tight);
    assert!(message.contains("above data_norm = 0.5"), "{message}");
    tight.transform.clip = true;
    assert!(fit_linear(rows, &c, 2, &tight, Randomness::InsecureSeed(1)).is_ok());
    let mut zero = spec();
    zero.transform.norm_bound = 0.0;
    assert!(fit(rows, &c, 2, &zero).contains("data_norm"));
    let mut groups = spec();
    groups.feature_groups = Some(vec![0, 1]);
    assert!(fit(rows, &c, 2, &groups).contains("feature_groups has 2 entries"));
    let bad_indptr = [0i64, 5];
    let csr = Rows::Csr {
        data: &values[..2],
        indices: Ints::I64(&[0, 1]),
        indptr: Ints::I64(&bad_indptr),
        features: FEATURES,
    };
    assert!(fit(csr, &[0], 2, &spec()).contains("indptr"));
    let out_of_range = Rows::Csr {
        data: &values[..2],
        indices: Ints::I64(&[0, 7]),
        indptr: Ints::I64(&[0, 2]),
        features: FEATURES,
    };
    assert!(fit(out_of_range, &[0], 2, &spec()).contains("column index out of range"));
    let mut nan = values.clone();
    nan[4] = f64::NAN;
    let message = fit(
        Rows::Dense {
            values: &nan,
            features: FEATURES,
        },
        &c,
        2,
        &spec(),
    );
    assert!(message.contains("row 1"), "{message}");
}

/// A panic inside the guard becomes an error, not an unwind.
#[test]
fn panics_become_errors() {
    let e = crate::error::guarded::<()>(|| panic!("boom")).unwrap_err();
    assert_eq!(e.class_name(), "DPMLError");
    assert!(e.to_string().contains("boom"));
}

// ---------------------------------------------------------------------------------------
// (ε, δ): the Gaussian mechanism and DP-SGD, as a Rust user writes them.

const DELTA: f64 = 1e-5;

/// The rows through the transform, as a Rust user writes them: `(x/2, 1)/√2`.
fn transformed_rows() -> Vec<f64> {
    let s = 1.0 / 2f64.sqrt();
    values()
        .chunks(FEATURES)
        .flat_map(|row| {
            let mut out: Vec<f64> = row.iter().map(|v| v / 2.0 * s).collect();
            out.push(s);
            out
        })
        .collect()
}

fn sgd_spec() -> crate::fit::SgdSpec {
    crate::fit::SgdSpec {
        epsilon: 1.0,
        delta: DELTA,
        options: dp_fit::sgd::SgdOptions {
            loss: Loss::Logistic,
            batch_size: 10,
            epochs: 2.0,
            learning_rate: 1.0,
            clip_norm: 1.0,
            regularization: 0.0,
            average_iterates: false,
            rule: false,
            neighbouring: dp_fit::spec::Neighbouring::ReplaceOne,
            public_rows: None,
            accountant: dp_fit::spec::Accountant::Pld,
        },
        transform: transform(),
    }
}

/// The binding's seeded Gaussian and DP-SGD fits are bit for bit a Rust user's, and both
/// are the fixtures the Python tests compare with (`DPML_WRITE_FIXTURES=1` rewrites them).
#[test]
fn seeded_gaussian_and_dpsgd_fits_are_the_rust_users_fits_and_the_fixtures() {
    use dp_erm::{DpSgd, DpSgdConfig, Examples, Features, GaussianErm};
    let values = values();
    let rows = || Rows::Dense {
        values: &values,
        features: FEATURES,
    };
    let labels: Vec<f64> = classes(2)
        .iter()
        .map(|&c| if c == 1 { 1.0 } else { -1.0 })
        .collect();
    let id = transform().id();

    let data = TrainingSet::builder(FEATURES)
        .dense_rows(values.clone())
        .labels(labels.clone())
        .scale_by_public_bounds(vec![2.0; FEATURES])
        .append_intercept(1.0)
        .build()
        .unwrap();
    let erm = GaussianErm::objective_perturbation(Loss::Logistic, 0.01, 1.0, DELTA);
    let (gaussian, _) = erm.fit(&data, &mut InsecureSeededRng::new(SEED)).unwrap();
    let gaussian = gaussian.with_feature_map(&id).unwrap();
    let mut spec = spec();
    spec.mechanism = Mechanism::GaussianObjective {
        epsilon: 1.0,
        delta: DELTA,
    };
    let ours = fit_linear(
        rows(),
        &classes(2),
        2,
        &spec,
        Randomness::InsecureSeed(SEED),
    )
    .unwrap();
    assert_eq!(ours.models, vec![gaussian.clone()]);
    assert_eq!(ours.delta, DELTA);

    let examples = Examples::new(
        Features::dense(FEATURES + 1, transformed_rows()).unwrap(),
        labels,
    )
    .unwrap();
    // q = 10/40, T = ⌈2·40/10⌉ = 8.
    let config = DpSgdConfig::new(Loss::Logistic, 0.25, 8, 1.0, DELTA);
    let sgd = DpSgd::for_target(config, 1.0).unwrap();
    let sgd_model = sgd
        .fit(&examples, &mut InsecureSeededRng::new(SEED))
        .unwrap()
        .into_model()
        .with_feature_map(&id)
        .unwrap();
    let ours = crate::fit::fit_sgd(
        rows(),
        &classes(2),
        2,
        &sgd_spec(),
        Randomness::InsecureSeed(SEED),
    )
    .unwrap();
    assert_eq!(ours.models, vec![sgd_model.clone()]);
    // CSR rows are trained on sparse examples: the same model, bit for bit.
    let (data, indices, indptr) = csr_of(&values);
    let csr = Rows::Csr {
        data: &data,
        indices: Ints::I64(&indices),
        indptr: Ints::I64(&indptr),
        features: FEATURES,
    };
    let from_csr = crate::fit::fit_sgd(
        csr,
        &classes(2),
        2,
        &sgd_spec(),
        Randomness::InsecureSeed(SEED),
    )
    .unwrap();
    assert_eq!(from_csr.models, ours.models);
    let report = ours.sgd.unwrap();
    assert_eq!(report.noise_multiplier, sgd.noise_multiplier());
    assert_eq!((report.steps, report.sampling_rate), (8, 0.25));

    // Add/remove on the public n̂ = 80 (not the 40 rows): q = 10/80, T = ⌈2·80/10⌉ = 16,
    // each step divided by the batch of 10 — a Rust user's add/remove fit, bit for bit.
    let config = DpSgdConfig::new(Loss::Logistic, 0.125, 16, 1.0, DELTA).add_remove(10.0);
    let sgd = DpSgd::for_target(config, 1.0).unwrap();
    let add_remove_model = sgd
        .fit(&examples, &mut InsecureSeededRng::new(SEED))
        .unwrap()
        .into_model()
        .with_feature_map(&id)
        .unwrap();
    let add_remove = crate::fit::fit_sgd(
        rows(),
        &classes(2),
        2,
        &crate::fit::SgdSpec {
            options: dp_fit::sgd::SgdOptions {
                neighbouring: dp_fit::spec::Neighbouring::AddRemove,
                public_rows: Some(80),
                ..sgd_spec().options
            },
            ..sgd_spec()
        },
        Randomness::InsecureSeed(SEED),
    )
    .unwrap();
    assert_eq!(add_remove.models, vec![add_remove_model]);
    let report = add_remove.sgd.unwrap();
    assert_eq!((report.steps, report.sampling_rate), (16, 0.125));
    assert_eq!(
        report.replace_one_epsilon_per_model,
        sgd.replace_one_epsilon()
    );
    assert!(report.replace_one_epsilon_per_model > report.epsilon_per_model);

    for (name, model) in [("seeded_gaussian_0", gaussian), ("seeded_sgd_0", sgd_model)] {
        let path = fixture(&format!("{name}.dpm"));
        let bytes = model.to_bytes().unwrap();
        if std::env::var_os("DPML_WRITE_FIXTURES").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "{}", path.display());
    }
}

/// `rule: true` trains with dp-erm's `DpSgdRule::FITTED` setting at each model's ε (three
/// classes at ε = 0.9: about 0.3 each), the batch capped at the 40 rows, and reports it;
/// the spec's own batch, epochs, η and C are not used.
#[test]
fn the_dpsgd_rule_sets_the_batch_epochs_rate_and_clip_at_each_models_epsilon() {
    let values = values();
    let rows = Rows::Dense {
        values: &values,
        features: FEATURES,
    };
    let mut spec = sgd_spec();
    (spec.epsilon, spec.options.rule) = (0.9, true);
    let fit =
        crate::fit::fit_sgd(rows, &classes(3), 3, &spec, Randomness::InsecureSeed(SEED)).unwrap();
    let report = fit.sgd.unwrap();
    // The rule's documented setting for 0.2 ≤ ε < 0.5: batch 16,384, 200 epochs, η = 128,
    // C = 0.25, averaged iterates.
    assert_eq!(report.batch_size, 40);
    assert_eq!(
        (report.epochs, report.learning_rate, report.clip_norm),
        (200.0, 128.0, 0.25)
    );
    assert!(report.average_iterates);
    // Full batch: q = 1, T = 200 epochs.
    assert_eq!((report.sampling_rate, report.steps), (1.0, 200));
    assert_eq!(fit.models.len(), 3);
    // Without the rule the spec's own settings are reported.
    let plain = crate::fit::fit_sgd(
        Rows::Dense {
            values: &values,
            features: FEATURES,
        },
        &classes(2),
        2,
        &sgd_spec(),
        Randomness::InsecureSeed(SEED),
    )
    .unwrap()
    .sgd
    .unwrap();
    assert_eq!(
        (
            plain.batch_size,
            plain.epochs,
            plain.learning_rate,
            plain.clip_norm
        ),
        (10, 2.0, 1.0, 1.0)
    );
    assert!(!plain.average_iterates);
}

/// One-vs-rest (ε, δ) fits split δ so that the K shares sum to at most δ.
#[test]
fn the_per_model_delta_shares_never_sum_above_delta() {
    use dp_fit::split::per_model_delta;
    for delta in [1e-5, 1e-6, 0.3, 1.0 / 3.0, 1e-300] {
        for k in [1usize, 2, 3, 7, 10, 100] {
            let share = per_model_delta(delta, k);
            // Exact: share·k ≤ δ checked in rationals through integer mantissas.
            let exact = num_le(share, k, delta);
            assert!(exact, "{delta} / {k}: {share}");
            assert!(share > 0.0);
        }
    }
}

/// `share · k ≤ delta` exactly: both sides scaled to integers (f64 mantissa × 2^e).
fn num_le(share: f64, k: usize, delta: f64) -> bool {
    let (ms, es) = mantissa_exponent(share);
    let (md, ed) = mantissa_exponent(delta);
    // Compare ms·k·2^es with md·2^ed as u128 after aligning exponents.
    let lhs = ms as u128 * k as u128;
    if es >= ed {
        let shift = (es - ed) as u32;
        shift < 64 && (lhs << shift) <= md as u128
    } else {
        let shift = (ed - es) as u32;
        shift >= 64 || lhs <= (md as u128) << shift
    }
}

fn mantissa_exponent(x: f64) -> (u64, i32) {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    if exponent == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), exponent - 1075)
    }
}
