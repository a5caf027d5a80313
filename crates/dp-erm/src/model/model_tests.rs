//! Tests of the model file formats, the validation of every deserialization route, and the
//! file I/O. Each `rejects_*` test first shows the attack or defect it guards against is
//! real (the same bytes accepted elsewhere), so it fails if the defence goes away.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dp_noise::InsecureSeededRng;
use proptest::prelude::*;
use rand::RngExt;
use sha2::{Digest, Sha256};

use super::format::{HEADER_BYTES, MAX_FILE_BYTES, MAX_PAYLOAD_BYTES};
use super::validate::check_model;
use super::*;
use crate::{ErmParams, ObjectiveCalibration};

// ---------------------------------------------------------------------------------------
// Helpers

fn data(n: usize, d: usize, seed: u64) -> TrainingSet {
    scaled_data(n, d, seed, 1.0)
}

/// `data` with every row multiplied by `scale ≤ 1`.
fn scaled_data(n: usize, d: usize, seed: u64, scale: f64) -> TrainingSet {
    let mut rng = InsecureSeededRng::new(seed);
    let mut values = Vec::with_capacity(n * d);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        // Coordinates in ±1/√d keep every row inside the unit ball.
        let row: Vec<f64> = (0..d)
            .map(|_| scale * rng.random_range(-1.0..1.0) / (d as f64).sqrt())
            .collect();
        labels.push(if row[0] + 0.3 * row[d - 1] >= 0.0 {
            1.0
        } else {
            -1.0
        });
        values.extend(row);
    }
    TrainingSet::builder(d)
        .dense_rows(values)
        .labels(labels)
        .build()
        .unwrap()
}

/// A non-private logistic model, trained through the public API.
fn non_private() -> LinearModel {
    ErmParams::non_private(Loss::Logistic, 0.1)
        .fit(&data(60, 3, 1), &mut InsecureSeededRng::new(2))
        .unwrap()
        .into_model()
}

/// Models that exercise every mechanism, both losses, an optional feature map and
/// group-shaped noise.
fn sample_models() -> &'static [LinearModel] {
    static MODELS: OnceLock<Vec<LinearModel>> = OnceLock::new();
    MODELS.get_or_init(|| {
        let huber = Loss::huber(0.5).unwrap();
        let train = data(80, 4, 3);
        vec![
            non_private(),
            ErmParams::output_perturbation(huber, 0.05, 0.7)
                .fit(&train, &mut InsecureSeededRng::new(4))
                .unwrap()
                .into_model(),
            ErmParams::objective_perturbation(Loss::Logistic, 0.01, 0.3)
                .objective_calibration(ObjectiveCalibration::CliffFree)
                .feature_map("rff(d=4)")
                .fit(&train, &mut InsecureSeededRng::new(5))
                .unwrap()
                .into_model(),
            // Entries of at most 0.4 keep the group norm (0.4² + 0.8² + 0.4²)^½ below 1.
            ErmParams::objective_perturbation(huber, 0.02, 0.5)
                .group_noise(dp_noise::FeatureGroups::new(&[0, 1, 1, 2]).unwrap())
                .fit(&scaled_data(80, 4, 3, 0.8), &mut InsecureSeededRng::new(6))
                .unwrap()
                .into_model(),
        ]
    })
}

/// 32 distinct bytes, different for each `fill`: a key the weak-key check accepts.
fn key_bytes(fill: u8) -> [u8; 32] {
    std::array::from_fn(|i| fill.wrapping_add((i as u8).wrapping_mul(37)))
}

fn key(fill: u8) -> ModelKey {
    ModelKey::from_bytes(&key_bytes(fill)).unwrap()
}

/// The purpose most tests save and load for.
fn purpose() -> ModelPurpose {
    ModelPurpose::new("tests").unwrap()
}

/// A plain file around `payload`, with a correct length and SHA-256 checksum: what anyone
/// can produce without a key.
fn plain_file(payload: &[u8]) -> Vec<u8> {
    let mut bytes = b"DPERMMDL".to_vec();
    bytes.extend_from_slice(&MODEL_FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let mut sha = Sha256::new();
    sha.update(&bytes);
    sha.update(payload);
    bytes.extend_from_slice(&sha.finalize());
    bytes.extend_from_slice(payload);
    bytes
}

fn payload_of(file: &[u8]) -> &[u8] {
    &file[HEADER_BYTES..]
}

/// The model type's name as the payload starts with it.
fn type_prefix() -> Vec<u8> {
    bincode::serde::encode_to_vec("dp-erm/linear", bincode::config::standard()).unwrap()
}

fn encode_payload(model: &LinearModel) -> Vec<u8> {
    let mut payload = type_prefix();
    payload.extend(bincode::serde::encode_to_vec(model, bincode::config::standard()).unwrap());
    payload
}

/// `model` with other metadata, bypassing every check (as a forger's own code would).
fn with_metadata(model: &LinearModel, edit: impl FnOnce(&mut ModelMetadata)) -> LinearModel {
    let mut forged = model.clone();
    edit(&mut forged.metadata);
    forged
}

fn error_of<T: std::fmt::Debug>(result: Result<T, ErmError>) -> String {
    result.unwrap_err().to_string()
}

/// A fresh, empty folder for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-erm-model-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Checks, independently of the validator, what any loaded model must satisfy.
fn assert_sane(model: &LinearModel) {
    let meta = model.metadata();
    assert!(meta.features >= 1 && meta.features <= MAX_MODEL_FEATURES);
    assert_eq!(model.weights().len(), meta.features);
    assert!(model.weights().iter().all(|w| w.is_finite()));
    assert!(model.epsilon().is_none_or(|e| e.is_finite() && e > 0.0));
    assert!(meta.regularization.is_finite() && meta.regularization > 0.0);
    if let Loss::Huber { width } = meta.loss {
        assert!(width.is_finite() && width > 0.0);
    }
    for text in std::iter::once(&meta.crate_version).chain(meta.feature_map.as_ref()) {
        assert!(!text.is_empty() && text.len() <= MAX_MODEL_TEXT_BYTES);
    }
    check_model(model).unwrap();
}

// ---------------------------------------------------------------------------------------
// Round trips

#[test]
fn metadata_records_the_noise_shape() {
    let groups = |model: &LinearModel| model.metadata().noise_groups;
    let models = sample_models();
    assert_eq!(
        models.iter().map(groups).collect::<Vec<_>>(),
        [None, None, None, Some(3)]
    );
    let reloaded = LinearModel::from_bytes(&models[3].to_bytes().unwrap()).unwrap();
    assert_eq!(groups(&reloaded), Some(3));
}

#[test]
fn plain_and_authenticated_files_round_trip() {
    let k = key(7);
    for model in sample_models() {
        assert_eq!(
            &LinearModel::from_bytes(&model.to_bytes().unwrap()).unwrap(),
            model
        );
        let sealed = model.to_bytes_authenticated(&k, &purpose()).unwrap();
        assert_eq!(
            &LinearModel::from_bytes_authenticated(&sealed, &k, &purpose()).unwrap(),
            model
        );
        // serde_json may print the last digit of a float differently (not its job to round
        // trip exactly); the metadata must survive unchanged.
        let json = serde_json::to_string(model).unwrap();
        let from_json = serde_json::from_str::<LinearModel>(&json).unwrap();
        assert_eq!(from_json.metadata(), model.metadata());
        for (a, b) in from_json.weights().iter().zip(model.weights()) {
            assert!((a - b).abs() <= 1e-15 * b.abs(), "{a} vs {b}");
        }
    }
    let dir = scratch("round-trip");
    let model = &sample_models()[2];
    model.save(dir.join("plain.dperm")).unwrap();
    model
        .save_authenticated(dir.join("mac.dperm"), &k, &purpose())
        .unwrap();
    assert_eq!(&LinearModel::load(dir.join("plain.dperm")).unwrap(), model);
    assert_eq!(
        &LinearModel::load_authenticated(dir.join("mac.dperm"), &k, &purpose()).unwrap(),
        model
    );
    // No temporary file is left beside the models.
    assert_eq!(entries(&dir), ["mac.dperm", "plain.dperm"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn save_replaces_an_existing_model() {
    let dir = scratch("replace");
    let path = dir.join("model.dperm");
    let (first, second) = (&sample_models()[0], &sample_models()[1]);
    first.save(&path).unwrap();
    second.save(&path).unwrap();
    assert_eq!(&LinearModel::load(&path).unwrap(), second);
    assert_eq!(entries(&dir), ["model.dperm"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------
// Authentication

#[test]
fn rejects_relabelled_epsilon_in_authenticated_file() {
    let model = non_private();
    assert_eq!(model.epsilon(), None);
    let relabelled = with_metadata(&model, |m| {
        m.mechanism = Mechanism::OutputPerturbation { epsilon: 0.01 }
    });
    let forged_payload = encode_payload(&relabelled);

    // The attack works on plain files: relabel, recompute the checksum, and it loads.
    let forged_plain = plain_file(&forged_payload);
    let loaded = LinearModel::from_bytes(&forged_plain).unwrap();
    assert_eq!(loaded.epsilon(), Some(0.01));
    assert_eq!(loaded.weights(), model.weights());

    // On an authenticated file the forger, lacking the key, can keep the old tag, ...
    let k = key(1);
    let genuine = model.to_bytes_authenticated(&k, &purpose()).unwrap();
    let mut kept_tag = genuine[..HEADER_BYTES].to_vec();
    kept_tag[12..20].copy_from_slice(&(forged_payload.len() as u64).to_le_bytes());
    kept_tag.extend_from_slice(&forged_payload);
    let err = error_of(LinearModel::from_bytes_authenticated(
        &kept_tag,
        &k,
        &purpose(),
    ));
    assert!(err.contains("authentication failed"), "{err}");
    // ... tag it under a key of their own, ...
    let own_key = relabelled
        .to_bytes_authenticated(&key(2), &purpose())
        .unwrap();
    let err = error_of(LinearModel::from_bytes_authenticated(
        &own_key,
        &k,
        &purpose(),
    ));
    assert!(err.contains("authentication failed"), "{err}");
    // ... or pass off the plain forgery, which is refused for being plain.
    let err = error_of(LinearModel::from_bytes_authenticated(
        &forged_plain,
        &k,
        &purpose(),
    ));
    assert!(err.contains("plain model file"), "{err}");
    // The genuine file still loads.
    assert_eq!(
        LinearModel::from_bytes_authenticated(&genuine, &k, &purpose()).unwrap(),
        model
    );
}

#[test]
fn rejects_wrong_key() {
    let model = &sample_models()[1];
    let sealed = model.to_bytes_authenticated(&key(3), &purpose()).unwrap();
    assert!(LinearModel::from_bytes_authenticated(&sealed, &key(3), &purpose()).is_ok());
    // Keys that differ in one byte, or only in length, are different keys.
    let mut near = key_bytes(3);
    near[31] ^= 1;
    // (Not a trailing zero byte: HMAC pads keys with zeros, so `k` and `k ‖ 0` are one key.)
    let longer: Vec<u8> = key_bytes(3).into_iter().chain([3]).collect();
    for wrong in [
        key(4),
        ModelKey::from_bytes(&near).unwrap(),
        ModelKey::from_bytes(&longer).unwrap(),
    ] {
        let err = error_of(LinearModel::from_bytes_authenticated(
            &sealed,
            &wrong,
            &purpose(),
        ));
        assert!(err.contains("authentication failed"), "{err}");
    }
    let dir = scratch("wrong-key");
    let path = dir.join("m.dperm");
    model
        .save_authenticated(&path, &key(3), &purpose())
        .unwrap();
    let err = error_of(LinearModel::load_authenticated(&path, &key(4), &purpose()));
    assert!(
        err.contains("authentication failed") && err.contains(&*path.to_string_lossy()),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rejects_plain_file_in_authenticated_loader_and_vice_versa() {
    let model = &sample_models()[0];
    let k = key(5);
    let plain = model.to_bytes().unwrap();
    let sealed = model.to_bytes_authenticated(&k, &purpose()).unwrap();
    assert!(LinearModel::from_bytes(&plain).is_ok());
    assert!(LinearModel::from_bytes_authenticated(&sealed, &k, &purpose()).is_ok());
    let err = error_of(LinearModel::from_bytes_authenticated(
        &plain,
        &k,
        &purpose(),
    ));
    assert!(err.contains("plain model file"), "{err}");
    let err = error_of(LinearModel::from_bytes(&sealed));
    assert!(err.contains("authenticated model file"), "{err}");
    // The magic is covered by the tag, so switching it without recomputing the tag is
    // caught too.
    let mut switched = sealed.clone();
    switched[..8].copy_from_slice(b"DPERMMDL");
    let err = error_of(LinearModel::from_bytes(&switched));
    assert!(err.contains("checksum mismatch"), "{err}");
}

#[test]
fn model_keys_are_long_random_and_never_printed() {
    let err = error_of(ModelKey::from_bytes(&[9; 31]));
    assert!(err.contains("model key length"), "{err}");
    let mut bytes = [0xAB; 40];
    bytes[..32].copy_from_slice(&key_bytes(0xAB));
    let k = ModelKey::from_bytes(&bytes).unwrap();
    let shown = format!("{k:?}");
    assert_eq!(shown, "ModelKey(40 secret bytes)");
    assert!(!shown.contains("171") && !shown.to_lowercase().contains("ab,"));
    let (a, b) = (
        ModelKey::from_os_entropy().unwrap(),
        ModelKey::from_os_entropy().unwrap(),
    );
    assert_eq!(a.expose_secret().len(), ModelKey::MIN_BYTES);
    assert_ne!(a.expose_secret(), b.expose_secret());
}

// ---------------------------------------------------------------------------------------
// Purposes and keys

#[test]
fn rejects_a_file_saved_for_another_purpose_under_the_same_key() {
    let k = key(11);
    let production = ModelPurpose::new("income-scoring/production").unwrap();
    let baseline = ModelPurpose::new("income-scoring/baseline").unwrap();
    let private = &sample_models()[2];
    let genuine = private.to_bytes_authenticated(&k, &production).unwrap();
    assert_eq!(
        &LinearModel::from_bytes_authenticated(&genuine, &k, &production).unwrap(),
        private
    );
    // A non-private baseline signed with the same key cannot stand in for the production
    // model: the loader asking for production refuses it, naming the purpose it asked for
    // and not quoting the file's.
    let substitute = non_private().to_bytes_authenticated(&k, &baseline).unwrap();
    assert!(LinearModel::from_bytes_authenticated(&substitute, &k, &baseline).is_ok());
    let err = error_of(LinearModel::from_bytes_authenticated(
        &substitute,
        &k,
        &production,
    ));
    assert!(
        err.contains("another purpose than \"income-scoring/production\""),
        "{err}"
    );
    assert!(!err.contains("baseline"), "{err}");
    // Names that share a prefix, or differ only in length, are different purposes.
    for other in [
        "income-scoring/production2",
        "income-scoring/productio",
        "x",
    ] {
        let other = ModelPurpose::new(other).unwrap();
        let err = error_of(LinearModel::from_bytes_authenticated(&genuine, &k, &other));
        assert!(err.contains("another purpose"), "{err}");
    }
    // Through the path loader too, with the path named; kernel models share the container
    // (dp-kernel tests the same refusal).
    let dir = scratch("purpose");
    let path = dir.join("model.dperm");
    non_private()
        .save_authenticated(&path, &k, &baseline)
        .unwrap();
    let err = error_of(LinearModel::load_authenticated(&path, &k, &production));
    assert!(
        err.contains("another purpose") && err.contains(&*path.to_string_lossy()),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rejects_non_private_or_too_large_epsilon_under_a_private_purpose() {
    let k = key(12);
    let open = ModelPurpose::new("scoring").unwrap();
    let strict = open.clone().require_private(0.6).unwrap();
    assert_eq!(strict.max_epsilon(), Some(0.6));
    // Saving: a model the purpose would refuse is not written.
    let err = error_of(non_private().to_bytes_authenticated(&k, &strict));
    assert!(
        err.starts_with("invalid model purpose") && err.contains("not private"),
        "{err}"
    );
    // Loading: a file a key holder wrote under the same name without the demand.
    let models = sample_models();
    for (model, refused) in [
        (&models[0], Some("the model is not private")),
        (
            &models[1],
            Some("ε-DP for replace-one neighbours with ε = 0.7"),
        ),
        (&models[2], None),
        (&models[3], None),
    ] {
        let file = model.to_bytes_authenticated(&k, &open).unwrap();
        let loaded = LinearModel::from_bytes_authenticated(&file, &k, &strict);
        match refused {
            Some(why) => {
                let err = error_of(loaded);
                assert!(err.contains(why) && err.contains("ε ≤ 0.6"), "{err}");
            }
            None => assert_eq!(&loaded.unwrap(), model),
        }
    }
}

#[test]
fn rejects_purposes_and_bounds_that_are_unusable() {
    for (name, named) in [
        ("", "the purpose is empty"),
        (&*"p".repeat(257), "257 bytes long"),
        ("prod\u{202e}", "invisible character '\\u{202e}'"),
        ("prod\n", "invisible character '\\n'"),
    ] {
        let err = error_of(ModelPurpose::new(name));
        assert!(
            err.starts_with("invalid model purpose") && err.contains(named),
            "{err}"
        );
    }
    assert!(ModelPurpose::new(&"p".repeat(256)).is_ok());
    let base = ModelPurpose::new("p").unwrap();
    for bound in [0.0, -1.0, f64::NAN, f64::INFINITY, 1000.5] {
        let err = error_of(base.clone().require_private(bound));
        assert!(err.contains(&format!("max_epsilon = {bound:?}")), "{err}");
    }
    assert!(base.require_private(1000.0).is_ok());
}

#[test]
fn rejects_keys_that_cannot_be_secret_without_echoing_them() {
    let mut patterned = [0u8; 32];
    for (i, b) in patterned.iter_mut().enumerate() {
        *b = b"0123456"[i % 7];
    }
    let cases: [(&[u8], usize); 5] = [
        (&[0; 32], 1),
        (&[0xFF; 64], 1),
        (&[0xAB; 40], 1),
        (b"abababababababababababababababab", 2),
        (&patterned, 7),
    ];
    for (bytes, distinct) in cases {
        let err = ModelKey::from_bytes(bytes).unwrap_err();
        assert!(
            matches!(err, ErmError::WeakModelKey { distinct: d } if d == distinct),
            "{err:?}"
        );
        let shown = format!("{err} {err:?}");
        assert!(
            shown.contains(&format!("only {distinct} distinct values")),
            "{shown}"
        );
        for secret in ["0123456", "abab", "171", "255", "[0,"] {
            assert!(!shown.contains(secret), "{shown}");
        }
    }
    // Eight distinct values pass: the bound refuses fillers and patterns, not real keys.
    let mut eight = [0u8; 32];
    for (i, b) in eight.iter_mut().enumerate() {
        *b = (i % 8) as u8;
    }
    assert!(ModelKey::from_bytes(&eight).is_ok());
}

/// An authenticated file of format version 4: no purpose in the payload.
fn version_4_authenticated(model: &LinearModel, k: &ModelKey) -> Vec<u8> {
    use hmac::{Hmac, KeyInit, Mac};
    let payload = encode_payload(model);
    let mut bytes = b"DPERMMAC".to_vec();
    bytes.extend_from_slice(&4u32.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(k.expose_secret()).unwrap();
    mac.update(&bytes);
    mac.update(&payload);
    bytes.extend_from_slice(&mac.finalize().into_bytes());
    bytes.extend_from_slice(&payload);
    bytes
}

#[test]
fn reads_version_4_plain_files_and_refuses_its_unbound_authenticated_ones() {
    let model = &sample_models()[3];
    // Version 4 plain files have this version's layout and are still read.
    let mut old_plain = plain_file(&encode_payload(model));
    old_plain[8..12].copy_from_slice(&4u32.to_le_bytes());
    let mut sha = Sha256::new();
    sha.update(&old_plain[..20]);
    sha.update(payload_of(&old_plain));
    let checksum = sha.finalize();
    old_plain[20..52].copy_from_slice(&checksum);
    assert_eq!(&LinearModel::from_bytes(&old_plain).unwrap(), model);
    // Version 4 authenticated files bind no purpose: the loaders refuse them, saying how
    // to migrate; the explicitly legacy reader reads them, and re-saving binds a purpose.
    let k = key(13);
    let old_sealed = version_4_authenticated(model, &k);
    let err = error_of(LinearModel::from_bytes_authenticated(
        &old_sealed,
        &k,
        &purpose(),
    ));
    assert!(
        err.contains("format version 4")
            && err.contains("binds no purpose")
            && err.contains("load_authenticated_unbound_v4"),
        "{err}"
    );
    let migrated: LinearModel =
        container::from_bytes_authenticated_unbound_v4(&old_sealed, &k).unwrap();
    assert_eq!(&migrated, model);
    let resaved = migrated.to_bytes_authenticated(&k, &purpose()).unwrap();
    assert_eq!(
        &LinearModel::from_bytes_authenticated(&resaved, &k, &purpose()).unwrap(),
        model
    );
    // The legacy reader still checks the tag, and reads nothing but version 4.
    let err = error_of(
        container::from_bytes_authenticated_unbound_v4::<LinearModel>(&old_sealed, &key(14)),
    );
    assert!(err.contains("authentication failed"), "{err}");
    let err = error_of(container::from_bytes_authenticated_unbound_v4::<LinearModel>(&resaved, &k));
    assert!(err.contains("is bound to a purpose"), "{err}");
    let dir = scratch("unbound-v4");
    let path = dir.join("old.dperm");
    std::fs::write(&path, &old_sealed).unwrap();
    let loaded: LinearModel = container::load_authenticated_unbound_v4(&path, &k).unwrap();
    assert_eq!(&loaded, model);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rejects_saving_to_a_folder_before_writing_anything() {
    let dir = scratch("save-to-folder");
    let folder = dir.join("model.dperm");
    std::fs::create_dir(&folder).unwrap();
    let model = &sample_models()[1];
    for err in [
        error_of(model.save(&folder)),
        error_of(model.save_authenticated(&folder, &key(1), &purpose())),
        error_of(container::save(model, &folder)),
    ] {
        // Refused by looking, not by a failed rename after the model was written.
        assert!(
            err.contains(&*folder.to_string_lossy()) && err.contains("it is a folder"),
            "{err}"
        );
    }
    assert_eq!(entries(&dir), ["model.dperm"]);
    assert!(entries(&folder).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn rejects_saving_through_a_symbolic_link_leaving_link_and_target_alone() {
    let dir = scratch("save-to-link");
    let target = dir.join("current.dperm");
    let link = dir.join("model.dperm");
    let (old, new) = (&sample_models()[1], &sample_models()[2]);
    old.save(&target).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let dangling = dir.join("dangling.dperm");
    std::os::unix::fs::symlink(dir.join("absent"), &dangling).unwrap();
    for path in [&link, &dangling] {
        for err in [
            error_of(new.save(path)),
            error_of(new.save_authenticated(path, &key(1), &purpose())),
        ] {
            assert!(
                err.contains(&*path.to_string_lossy()) && err.contains("symbolic link"),
                "{err}"
            );
        }
        assert!(std::fs::symlink_metadata(path).unwrap().is_symlink());
    }
    // Neither the link replaced nor its target half-updated: the old model is where it was.
    assert_eq!(&LinearModel::load(&link).unwrap(), old);
    assert_eq!(&LinearModel::load(&target).unwrap(), old);
    assert!(!dir.join("absent").exists());
    assert_eq!(
        entries(&dir),
        ["current.dperm", "dangling.dperm", "model.dperm"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------
// Validation on every route

#[test]
fn rejects_zero_feature_model_through_file_loader_and_serde() {
    let empty = LinearModel::new(
        Vec::new(),
        ModelMetadata {
            features: 0,
            ..non_private().metadata.clone()
        },
    );
    // Encoding it is possible (as a forger could), loading it is not, by any route.
    let file = empty.to_bytes().unwrap();
    let err = error_of(LinearModel::from_bytes(&file));
    assert!(err.contains("features = 0"), "{err}");
    let err = error_of(LinearModel::from_bytes_authenticated(
        &empty.to_bytes_authenticated(&key(1), &purpose()).unwrap(),
        &key(1),
        &purpose(),
    ));
    assert!(err.contains("features = 0"), "{err}");
    let json = serde_json::to_string(&empty).unwrap();
    let err = serde_json::from_str::<LinearModel>(&json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("features = 0"), "{err}");
    let json = serde_json::to_string(&empty.metadata).unwrap();
    let err = serde_json::from_str::<ModelMetadata>(&json)
        .unwrap_err()
        .to_string();
    assert!(err.contains("features = 0"), "{err}");
    let payload = encode_payload(&empty);
    let direct: Result<(LinearModel, usize), _> = bincode::serde::decode_from_slice(
        &payload[type_prefix().len()..],
        bincode::config::standard(),
    );
    let err = direct.unwrap_err().to_string();
    assert!(err.contains("features = 0"), "{err}");
}

/// Every invalid field, through the plain file loader and serde_json, with the field named
/// in the error. The valid model passes both routes (so the routes do work).
#[test]
fn rejects_each_invalid_field_through_every_route() {
    let base = &sample_models()[2];
    let nan_weight = {
        let mut m = base.clone();
        m.weights[1] = f64::NAN;
        m
    };
    let infinite_weight = {
        let mut m = base.clone();
        m.weights[3] = f64::NEG_INFINITY;
        m
    };
    let short = {
        let mut m = base.clone();
        m.weights.pop();
        m
    };
    let calibration = ObjectiveCalibration::Cms11;
    let mut cases: Vec<(LinearModel, &str)> = vec![
        (nan_weight, "weights[1]"),
        (infinite_weight, "weights[3]"),
        (short, "3 weights for features = 4"),
        (
            with_metadata(base, |m| m.features = MAX_MODEL_FEATURES + 1),
            "features = 33554433",
        ),
        (
            with_metadata(base, |m| m.regularization = 0.0),
            "regularization",
        ),
        (
            with_metadata(base, |m| m.regularization = -1e300),
            "regularization",
        ),
        (
            with_metadata(base, |m| m.regularization = f64::INFINITY),
            "regularization",
        ),
        (
            with_metadata(base, |m| m.loss = Loss::Huber { width: 0.0 }),
            "Huber width",
        ),
        (
            with_metadata(base, |m| m.loss = Loss::Huber { width: f64::NAN }),
            "Huber width",
        ),
        (
            with_metadata(base, |m| m.noise_groups = Some(0)),
            "noise_groups = 0",
        ),
        (
            with_metadata(base, |m| m.noise_groups = Some(5)),
            "noise_groups = 5",
        ),
        (
            with_metadata(&sample_models()[1], |m| m.noise_groups = Some(2)),
            "only objective perturbation",
        ),
        (
            with_metadata(&sample_models()[0], |m| m.noise_groups = Some(1)),
            "only objective perturbation",
        ),
        (
            with_metadata(base, |m| m.crate_version.clear()),
            "crate_version is empty",
        ),
        (
            with_metadata(base, |m| m.crate_version = "9".repeat(257)),
            "crate_version is 257 bytes",
        ),
        (
            with_metadata(base, |m| m.crate_version = "0.1\u{1b}[2J".into()),
            "crate_version holds the invisible",
        ),
        (
            with_metadata(base, |m| m.crate_version = "0.1.0\u{202e}live".into()),
            "crate_version holds the invisible character '\\u{202e}'",
        ),
        (
            with_metadata(base, |m| m.feature_map = Some(String::new())),
            "feature_map is empty",
        ),
        (
            with_metadata(base, |m| m.feature_map = Some("x".repeat(10_000))),
            "feature_map is 10000 bytes",
        ),
    ];
    for epsilon in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        cases.push((
            with_metadata(base, |m| {
                m.mechanism = Mechanism::OutputPerturbation { epsilon }
            }),
            "epsilon",
        ));
        cases.push((
            with_metadata(base, |m| {
                m.mechanism = Mechanism::ObjectivePerturbation {
                    epsilon,
                    calibration,
                }
            }),
            "epsilon",
        ));
    }
    assert!(LinearModel::from_bytes(&base.to_bytes().unwrap()).is_ok());
    for (model, field) in &cases {
        let err = error_of(LinearModel::from_bytes(&model.to_bytes().unwrap()));
        assert!(err.contains(field), "file: {err} (wanted '{field}')");
        // JSON has no NaN or infinity (serde_json writes null), so those fail as type
        // errors; every other case must fail naming the field.
        let json = serde_json::to_string(model).unwrap();
        let err = serde_json::from_str::<LinearModel>(&json)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(field) || json.contains("null"),
            "serde: {err} (wanted '{field}')"
        );
        assert!(check_model(model).is_err());
    }
}

#[test]
fn float_values_in_errors_print_short() {
    let model = with_metadata(&sample_models()[0], |m| m.regularization = -1e300);
    let err = error_of(LinearModel::from_bytes(&model.to_bytes().unwrap()));
    assert!(err.contains("regularization = -1e300"), "{err}");
    assert!(err.len() < 200, "{} characters: {err}", err.len());
}

// ---------------------------------------------------------------------------------------
// Format versions and framing

/// Version 1: magic, version, length, FNV-1a of the payload, then the payload.
fn version_1_file(payload: &[u8]) -> Vec<u8> {
    let fnv = payload.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut bytes = b"DPERMMDL".to_vec();
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&fnv.to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

#[test]
fn rejects_old_and_future_versions_saying_which() {
    let model = &sample_models()[0];
    let old = version_1_file(&encode_payload(model)[type_prefix().len()..]);
    let err = error_of(LinearModel::from_bytes(&old));
    assert!(
        err.contains("format version 1 is not supported") && err.contains("older"),
        "{err}"
    );
    let err = error_of(LinearModel::from_bytes(&old[..16]));
    assert!(err.contains("format version 1"), "{err}");
    let mut version_2 = model.to_bytes().unwrap();
    version_2[8..12].copy_from_slice(&2u32.to_le_bytes());
    let err = error_of(LinearModel::from_bytes(&version_2));
    assert!(err.contains("format version 2 is not supported"), "{err}");
    let mut version_3 = model.to_bytes().unwrap();
    version_3[8..12].copy_from_slice(&3u32.to_le_bytes());
    let err = error_of(LinearModel::from_bytes(&version_3));
    assert!(
        err.contains("format version 3 is not supported") && err.contains("feature groups"),
        "{err}"
    );
    let mut future = model.to_bytes().unwrap();
    future[8..12].copy_from_slice(&(MODEL_FORMAT_VERSION + 1).to_le_bytes());
    let err = error_of(LinearModel::from_bytes(&future));
    assert!(err.contains("newer than this build"), "{err}");
}

#[test]
fn rejects_truncated_padded_and_foreign_files() {
    let file = sample_models()[1].to_bytes().unwrap();
    let expect = |bytes: &[u8], fragment: &str| {
        let err = error_of(LinearModel::from_bytes(bytes));
        assert!(err.contains(fragment), "{err} (wanted '{fragment}')");
    };
    expect(&[], "shorter than");
    expect(&file[..HEADER_BYTES - 1], "shorter than");
    expect(&file[..file.len() - 1], "truncated or padded");
    let mut padded = file.clone();
    padded.push(0);
    expect(&padded, "truncated or padded");
    expect(b"PK\x03\x04 a zip file, not a model", "wrong magic");
    // A payload with a valid checksum but bytes after the model.
    let mut payload = payload_of(&file).to_vec();
    payload.extend_from_slice(&[0, 0]);
    expect(&plain_file(&payload), "2 trailing bytes");
    // A valid checksum over a payload whose first length prefix claims 2^40 weights: the
    // decoder's limit refuses it instead of allocating.
    let mut hostile = type_prefix();
    hostile.push(0xfd);
    hostile.extend_from_slice(&(1u64 << 40).to_le_bytes());
    hostile.extend_from_slice(&[0u8; 16]);
    expect(&plain_file(&hostile), "cannot decode");
    // A payload cut short is described in words, not by the decoder's internal types.
    let payload = payload_of(&file);
    let cut = plain_file(&payload[..payload.len() / 2]);
    expect(&cut, "the payload ends early");
    assert!(!error_of(LinearModel::from_bytes(&cut)).contains("UnexpectedEnd"));
    // The same for the model type's name, and a file of another model type.
    let mut long_name = vec![0xfd];
    long_name.extend_from_slice(&(1u64 << 40).to_le_bytes());
    expect(&plain_file(&long_name), "cannot decode the model type");
    let mut other =
        bincode::serde::encode_to_vec("dp-kernel/\u{1b}[2Jrff", bincode::config::standard())
            .unwrap();
    other.extend_from_slice(&payload_of(&file)[type_prefix().len()..]);
    expect(
        &plain_file(&other),
        "holds a \"dp-kernel/\\u{1b}[2Jrff\" model, not a \"dp-erm/linear\" model",
    );
}

// ---------------------------------------------------------------------------------------
// Files on disk

#[test]
fn rejects_oversized_file_without_reading_it() {
    let dir = scratch("oversized");
    // Just above the limit, with a genuine header, and far above it (sparse: no disk used).
    let model_file = sample_models()[0].to_bytes().unwrap();
    for (name, size) in [("edge.dperm", MAX_FILE_BYTES + 1), ("huge.dperm", 64 << 30)] {
        let path = dir.join(name);
        std::fs::write(&path, &model_file).unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.set_len(size).unwrap();
        drop(file);
        let started = Instant::now();
        let err = error_of(LinearModel::load(&path));
        // Reading 64 GiB of zeros would take far longer (and the allocation would fail).
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        assert!(
            err.contains(&format!("is {size} bytes, larger than")),
            "{err}"
        );
        assert!(err.contains(&*path.to_string_lossy()), "{err}");
        let err = error_of(LinearModel::load_authenticated(&path, &key(1), &purpose()));
        assert!(err.contains("larger than"), "{err}");
    }
    // The limit admits the largest payload the decoder accepts.
    assert_eq!(MAX_FILE_BYTES, (HEADER_BYTES + MAX_PAYLOAD_BYTES) as u64);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rejects_failed_save_leaving_no_partial_file_and_naming_the_path() {
    let model = &sample_models()[0];
    let dir = scratch("failed-save");
    // A folder that does not exist: nothing can be created, the error names the path.
    let missing = dir.join("no-such-folder").join("model.dperm");
    let err = error_of(model.save(&missing));
    assert!(err.contains(&*missing.to_string_lossy()), "{err}");
    // The model is fine, the destination is not: not an "invalid model file".
    assert!(
        matches!(model.save(&missing), Err(ErmError::ModelFileAccess(_)))
            && err.starts_with("cannot save"),
        "{err}"
    );
    assert!(entries(&dir).is_empty());
    // A save whose last step fails (the target is a folder, which a file cannot replace):
    // the temporary file was written and must be gone, the folder untouched.
    let occupied = dir.join("occupied");
    std::fs::create_dir(&occupied).unwrap();
    std::fs::write(occupied.join("keep"), b"x").unwrap();
    let err = error_of(model.save_authenticated(&occupied, &key(1), &purpose()));
    assert!(err.contains(&*occupied.to_string_lossy()), "{err}");
    assert_eq!(entries(&dir), ["occupied"]);
    assert_eq!(entries(&occupied), ["keep"]);
    // An existing model survives a failed save over it ("model.dperm/" cannot be a file).
    let path = dir.join("model.dperm");
    model.save(&path).unwrap();
    let before = std::fs::read(&path).unwrap();
    assert!(
        sample_models()[1]
            .save(dir.join("model.dperm").join("x"))
            .is_err()
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn load_errors_name_the_path() {
    let dir = scratch("load-errors");
    let missing = dir.join("absent.dperm");
    let err = error_of(LinearModel::load(&missing));
    assert!(err.contains(&*missing.to_string_lossy()), "{err}");
    assert!(
        matches!(
            LinearModel::load(&missing),
            Err(ErmError::ModelFileAccess(_))
        ),
        "{err}"
    );
    // Not a regular file: refused without opening it (a named pipe would block forever).
    let err = error_of(LinearModel::load(&dir));
    assert!(err.contains("not a regular file"), "{err}");
    let pipe = dir.join("pipe.dperm");
    if std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .is_ok_and(|s| s.success())
    {
        let err = error_of(LinearModel::load(&pipe));
        assert!(err.contains("not a regular file"), "{err}");
    }
    let corrupt = dir.join("corrupt.dperm");
    let mut bytes = sample_models()[0].to_bytes().unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&corrupt, &bytes).unwrap();
    let err = error_of(LinearModel::load(&corrupt));
    assert!(
        err.contains(&*corrupt.to_string_lossy()) && err.contains("checksum"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------
// Properties

/// An edit of a valid payload: overwrite, insert or delete one byte, or cut the tail.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Truncate(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        6 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Set(at, b)),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Insert(at, b)),
        1 => any::<usize>().prop_map(Edit::Delete),
        1 => any::<usize>().prop_map(Edit::Truncate),
    ]
}

fn apply(payload: &mut Vec<u8>, edit: &Edit) {
    let len = payload.len();
    match *edit {
        Edit::Set(at, b) if len > 0 => payload[at % len] = b,
        Edit::Insert(at, b) => payload.insert(at % (len + 1), b),
        Edit::Delete(at) if len > 0 => {
            payload.remove(at % len);
        }
        Edit::Truncate(at) => payload.truncate(at % (len + 1)),
        _ => {}
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Garbage is refused by both loaders, without panicking; so is garbage behind a
    /// genuine magic and version, which gets past the first checks.
    #[test]
    fn garbage_is_refused_without_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..400),
        behind_header in any::<bool>(),
    ) {
        let bytes = if behind_header {
            let mut prefixed = sample_models()[0].to_bytes().unwrap()[..12].to_vec();
            prefixed.extend_from_slice(&bytes);
            prefixed
        } else {
            bytes
        };
        prop_assert!(LinearModel::from_bytes(&bytes).is_err());
        prop_assert!(LinearModel::from_bytes_authenticated(&bytes, &key(1), &purpose()).is_err());
        let mut sealed_magic = bytes.clone();
        if sealed_magic.len() >= 8 {
            sealed_magic[..8].copy_from_slice(b"DPERMMAC");
        }
        let loaded = LinearModel::from_bytes_authenticated(&sealed_magic, &key(1), &purpose());
        prop_assert!(loaded.is_err());
    }

    /// Mutated payloads under a recomputed checksum reach the decoder and the validator:
    /// they never panic, and whatever loads is a sane model that survives a round trip.
    #[test]
    fn mutated_payloads_with_valid_checksums_load_only_valid_models(
        which in 0..4usize,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let original = &sample_models()[which];
        let mut payload = encode_payload(original);
        for e in &edits {
            apply(&mut payload, e);
        }
        if let Ok(model) = LinearModel::from_bytes(&plain_file(&payload)) {
            assert_sane(&model);
            prop_assert_eq!(&LinearModel::from_bytes(&model.to_bytes().unwrap()).unwrap(), &model);
            // serde's route agrees with the file loader.
            let direct: Result<(LinearModel, usize), _> = bincode::serde::decode_from_slice(
                &payload[type_prefix().len()..],
                bincode::config::standard(),
            );
            prop_assert_eq!(direct.unwrap().0, model);
        }
    }

    /// Any single-byte change anywhere in an authenticated file (header, tag or payload),
    /// and any truncation, is refused.
    #[test]
    fn authenticated_files_refuse_any_byte_flip(
        which in 0..4usize,
        at in any::<usize>(),
        flip in 1..=255u8,
        cut in any::<usize>(),
    ) {
        let k = key(9);
        let sealed = sample_models()[which].to_bytes_authenticated(&k, &purpose()).unwrap();
        let mut flipped = sealed.clone();
        flipped[at % sealed.len()] ^= flip;
        prop_assert!(LinearModel::from_bytes_authenticated(&flipped, &k, &purpose()).is_err());
        let cut = cut % sealed.len();
        let loaded = LinearModel::from_bytes_authenticated(&sealed[..cut], &k, &purpose());
        prop_assert!(loaded.is_err());
    }
}

/// Every byte position of one authenticated file, exhaustively (the property above samples
/// positions of all three models).
#[test]
fn authenticated_file_refuses_a_flip_at_every_position() {
    let k = key(9);
    let sealed = sample_models()[2]
        .to_bytes_authenticated(&k, &purpose())
        .unwrap();
    for at in 0..sealed.len() {
        let mut flipped = sealed.clone();
        flipped[at] ^= 0x01;
        assert!(
            LinearModel::from_bytes_authenticated(&flipped, &k, &purpose()).is_err(),
            "byte {at}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Files written before Mechanism::DpSgd existed

/// A format-5 objective-perturbation file written by the Python package before DP-SGD
/// joined `Mechanism` (python/tests/data/seeded_binary_0.dpm): the variant was appended, so
/// the old encoding still decodes to the same model.
#[test]
fn a_file_written_before_dpsgd_existed_still_loads() {
    let bytes = include_bytes!("testdata/v5_objective_before_dpsgd.dpm");
    let model = LinearModel::from_bytes(bytes).unwrap();
    assert!(matches!(
        model.metadata().mechanism,
        Mechanism::ObjectivePerturbation { .. }
    ));
    assert_eq!(model.metadata().mechanism.delta(), 0.0);
    assert_eq!(model.weights().len(), model.metadata().features);
    // And it is written back byte for byte.
    assert_eq!(model.to_bytes().unwrap(), bytes.to_vec());
}

/// A small DP-SGD model (one step of q = 1/2 on 40 rows) for `relation`, calibrated to
/// (`epsilon`, 10⁻⁵) under it.
fn sgd_model(epsilon: f64, add_remove: bool) -> LinearModel {
    let rows = 40;
    let values: Vec<f64> = (0..rows).map(|i| (i as f64 / rows as f64) - 0.5).collect();
    let labels: Vec<f64> = (0..rows)
        .map(|i| if i % 2 == 0 { 1.0 } else { -1.0 })
        .collect();
    let data = crate::Examples::new(crate::Features::dense(1, values).unwrap(), labels).unwrap();
    let mut config = crate::DpSgdConfig::new(Loss::Logistic, 0.5, 1, 1.0, 1e-5);
    if add_remove {
        config = config.add_remove(20.0);
    }
    crate::DpSgd::for_target(config, epsilon)
        .unwrap()
        .fit(&data, &mut InsecureSeededRng::new(3))
        .unwrap()
        .into_model()
}

/// `require_private(ε)` used to compare the recorded ε only: an (ε, δ) model passed a
/// pure-ε bound whatever its δ (a DP-SGD model at δ = 0.5 passed `require_private(1.0)`),
/// and an add/remove model passed on its add/remove ε, about half the replace-one ε a
/// reader assumes. Now the one-argument form means ε-DP (δ = 0), `require_private_at`
/// names the δ, and both compare the replace-one ε, naming the relation.
#[test]
fn rejects_an_approximate_or_add_remove_model_beyond_the_replace_one_bound() {
    let k = key(13);
    let open = ModelPurpose::new("scoring").unwrap();
    let pure = open.clone().require_private(1.0).unwrap();
    let approximate = open.clone().require_private_at(1.0, 1e-5).unwrap();
    assert_eq!(approximate.max_delta(), Some(1e-5));
    assert_eq!(pure.max_delta(), Some(0.0));
    assert_eq!(open.max_delta(), None);

    let replace_one = sgd_model(0.9, false);
    let file = replace_one.to_bytes_authenticated(&k, &open).unwrap();
    let err = error_of(LinearModel::from_bytes_authenticated(&file, &k, &pure));
    assert!(err.contains("δ = 1e-5") && err.contains("δ = 0"), "{err}");
    assert!(err.contains("replace-one"), "{err}");
    let err = error_of(replace_one.to_bytes_authenticated(&k, &pure));
    assert!(err.contains("cannot save under it"), "{err}");
    assert_eq!(
        LinearModel::from_bytes_authenticated(&file, &k, &approximate).unwrap(),
        replace_one
    );
    let tighter = open.clone().require_private_at(1.0, 1e-6).unwrap();
    assert!(LinearModel::from_bytes_authenticated(&file, &k, &tighter).is_err());

    // Add/remove ε 0.9: its replace-one ε is above 1, and that is what is compared.
    let add_remove = sgd_model(0.9, true);
    let (recorded, _) = (
        add_remove.epsilon().unwrap(),
        add_remove.metadata().mechanism.delta(),
    );
    let (replace_epsilon, _) = add_remove
        .metadata()
        .mechanism
        .replace_one_guarantee()
        .unwrap();
    assert!(
        recorded <= 0.9 && replace_epsilon > 1.0,
        "{recorded} {replace_epsilon}"
    );
    let file = add_remove.to_bytes_authenticated(&k, &open).unwrap();
    let err = error_of(LinearModel::from_bytes_authenticated(
        &file,
        &k,
        &approximate,
    ));
    assert!(
        err.contains(&format!("ε = {replace_epsilon:?}")) && err.contains("replace-one"),
        "{err}"
    );
    let loose = open
        .clone()
        .require_private_at(replace_epsilon, 1e-5)
        .unwrap();
    assert!(LinearModel::from_bytes_authenticated(&file, &k, &loose).is_ok());

    for bad in [-1e-9, 0.5, f64::NAN] {
        let err = error_of(open.clone().require_private_at(1.0, bad));
        assert!(err.contains(&format!("max_delta = {bad:?}")), "{err}");
    }
}
