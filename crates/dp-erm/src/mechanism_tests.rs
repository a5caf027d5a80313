//! The on-disk codes of [`Mechanism`]: model files written before the codes were made
//! explicit (fixtures under `src/model/testdata/mechanisms/`, one per variant, written by
//! serde's derived, declaration-order encoding) load and are written back byte for byte,
//! and the serde names (what JSON and other self-describing formats see) are unchanged.

use std::path::PathBuf;

use crate::{
    Accountant, LinearModel, Loss, Mechanism, ModelKey, ModelMetadata, ModelPurpose,
    ObjectiveCalibration,
};

/// The folder of the fixtures.
fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/model/testdata/mechanisms")
}

fn metadata(mechanism: Mechanism, loss: Loss, features: usize) -> ModelMetadata {
    ModelMetadata {
        mechanism,
        loss,
        regularization: 0.125,
        features,
        noise_groups: None,
        feature_map: None,
        crate_version: "0.1.0".to_owned(),
    }
}

/// One model per `Mechanism` variant (both objective calibrations, both losses, a feature
/// map and group-shaped noise among them), each with the name of its fixture. Built
/// directly, so every field is a chosen, exactly representable value.
fn fixture_models() -> Vec<(&'static str, LinearModel)> {
    let huber = Loss::Huber { width: 0.5 };
    let weights = |d: usize| (0..d).map(|j| 0.375 - 0.25 * j as f64).collect::<Vec<_>>();
    let model = |mechanism, loss, d| LinearModel::new(weights(d), metadata(mechanism, loss, d));
    let mut cms11 = metadata(
        Mechanism::ObjectivePerturbation {
            epsilon: 0.75,
            calibration: ObjectiveCalibration::Cms11,
        },
        Loss::Logistic,
        4,
    );
    cms11.feature_map = Some("rff(d=4)".to_owned());
    let mut grouped = metadata(
        Mechanism::ObjectivePerturbation {
            epsilon: 1.5,
            calibration: ObjectiveCalibration::CliffFree,
        },
        huber,
        4,
    );
    grouped.noise_groups = Some(3);
    let mut sgd = metadata(
        Mechanism::DpSgd {
            epsilon: 2.0,
            delta: 1e-6,
            noise_multiplier: 1.25,
            sampling_rate: 0.015625,
            steps: 300,
            clip_norm: 1.0,
            accountant: Accountant::Rdp,
        },
        Loss::Logistic,
        3,
    );
    sgd.regularization = 0.0;
    let add_remove = metadata(
        Mechanism::DpSgdAddRemove {
            epsilon: 3.0,
            delta: 1e-5,
            noise_multiplier: 0.875,
            sampling_rate: 0.03125,
            steps: 1000,
            clip_norm: 0.5,
            expected_batch: 64.0,
            accountant: Accountant::Rdp,
        },
        huber,
        2,
    );
    vec![
        (
            "non_private",
            model(Mechanism::NonPrivate, Loss::Logistic, 3),
        ),
        (
            "output_perturbation",
            model(Mechanism::OutputPerturbation { epsilon: 0.5 }, huber, 2),
        ),
        (
            "objective_perturbation_cms11",
            LinearModel::new(weights(4), cms11),
        ),
        (
            "objective_perturbation_cliff_free_groups",
            LinearModel::new(weights(4), grouped),
        ),
        (
            "gaussian_output_perturbation",
            model(
                Mechanism::GaussianOutputPerturbation {
                    epsilon: 1.0,
                    delta: 1e-6,
                },
                Loss::Logistic,
                3,
            ),
        ),
        (
            "gaussian_objective_perturbation",
            model(
                Mechanism::GaussianObjectivePerturbation {
                    epsilon: 4.0,
                    delta: 1e-7,
                },
                huber,
                5,
            ),
        ),
        ("dpsgd", LinearModel::new(weights(3), sgd)),
        ("dpsgd_add_remove", LinearModel::new(weights(2), add_remove)),
    ]
}

fn key() -> ModelKey {
    ModelKey::from_bytes(&std::array::from_fn::<u8, 32, _>(|i| {
        (i as u8).wrapping_mul(37) ^ 0x5a
    }))
    .unwrap()
}

fn purpose() -> ModelPurpose {
    ModelPurpose::new("fixtures").unwrap()
}

/// Every fixture, plain and authenticated, loads to the model it was written from and is
/// written back to the same bytes.
#[test]
fn model_files_of_every_mechanism_load_and_save_bit_for_bit() {
    let models = fixture_models();
    // One fixture per variant: a new variant needs a new fixture (and code).
    let mut seen: Vec<_> = models
        .iter()
        .map(|(_, m)| std::mem::discriminant(&m.metadata().mechanism))
        .collect();
    seen.dedup();
    assert_eq!(seen.len(), 7);
    for (name, expected) in &models {
        let plain = std::fs::read(fixture_dir().join(format!("{name}.dpm"))).unwrap();
        let loaded = LinearModel::from_bytes(&plain).unwrap();
        assert_eq!(&loaded, expected, "{name}");
        assert_eq!(loaded.to_bytes().unwrap(), plain, "{name}");

        let sealed = std::fs::read(fixture_dir().join(format!("{name}.auth.dpm"))).unwrap();
        let loaded = LinearModel::from_bytes_authenticated(&sealed, &key(), &purpose()).unwrap();
        assert_eq!(&loaded, expected, "{name}");
        assert_eq!(
            loaded.to_bytes_authenticated(&key(), &purpose()).unwrap(),
            sealed,
            "{name}"
        );
    }
}

/// The codes themselves: the first byte of each encoded mechanism (bincode's varint of
/// the code), pinned so that a reordering of the enum shows here first.
#[test]
fn mechanism_codes_are_pinned() {
    let codes: Vec<(&str, u8)> = fixture_models()
        .iter()
        .map(|(name, m)| {
            let bytes =
                bincode::serde::encode_to_vec(m.metadata().mechanism, bincode::config::standard())
                    .unwrap();
            (*name, bytes[0])
        })
        .collect();
    assert_eq!(
        codes,
        [
            ("non_private", 0),
            ("output_perturbation", 1),
            ("objective_perturbation_cms11", 2),
            ("objective_perturbation_cliff_free_groups", 2),
            ("gaussian_output_perturbation", 3),
            ("gaussian_objective_perturbation", 4),
            ("dpsgd", 5),
            ("dpsgd_add_remove", 6),
        ]
    );
}

/// Self-describing formats see the variant and field names, unchanged.
#[test]
fn mechanism_json_is_unchanged() {
    let json: Vec<String> = fixture_models()
        .iter()
        .map(|(_, m)| serde_json::to_string(&m.metadata().mechanism).unwrap())
        .collect();
    assert_eq!(
        json,
        [
            r#""NonPrivate""#,
            r#"{"OutputPerturbation":{"epsilon":0.5}}"#,
            r#"{"ObjectivePerturbation":{"epsilon":0.75,"calibration":"Cms11"}}"#,
            r#"{"ObjectivePerturbation":{"epsilon":1.5,"calibration":"CliffFree"}}"#,
            r#"{"GaussianOutputPerturbation":{"epsilon":1.0,"delta":1e-6}}"#,
            r#"{"GaussianObjectivePerturbation":{"epsilon":4.0,"delta":1e-7}}"#,
            r#"{"DpSgd":{"epsilon":2.0,"delta":1e-6,"noise_multiplier":1.25,"sampling_rate":0.015625,"steps":300,"clip_norm":1.0}}"#,
            r#"{"DpSgdAddRemove":{"epsilon":3.0,"delta":0.00001,"noise_multiplier":0.875,"sampling_rate":0.03125,"steps":1000,"clip_norm":0.5,"expected_batch":64.0}}"#,
        ]
    );
    for (text, (name, m)) in json.iter().zip(fixture_models()) {
        let back: Mechanism = serde_json::from_str(text).unwrap();
        assert_eq!(back, m.metadata().mechanism, "{name}");
    }
}

/// Writes the fixtures that are missing (never overwrites one: they record what earlier
/// builds wrote). `cargo test -p dp-erm -- --ignored write_mechanism_fixtures`.
#[test]
#[ignore = "writes fixtures; run by hand when a variant is added"]
fn write_mechanism_fixtures() {
    std::fs::create_dir_all(fixture_dir()).unwrap();
    for (name, model) in fixture_models() {
        let plain = fixture_dir().join(format!("{name}.dpm"));
        if !plain.exists() {
            std::fs::write(plain, model.to_bytes().unwrap()).unwrap();
        }
        let sealed = fixture_dir().join(format!("{name}.auth.dpm"));
        if !sealed.exists() {
            let bytes = model.to_bytes_authenticated(&key(), &purpose()).unwrap();
            std::fs::write(sealed, bytes).unwrap();
        }
    }
}

/// The code table is one-to-one, and a code no variant has is refused by name.
#[test]
fn unknown_codes_and_names_are_refused() {
    crate::variant_codes::assert_distinct(&super::TABLE);
    let config = bincode::config::standard();
    // Code 10 (the first no variant has), then an f64 that would be an ε.
    let mut bytes = vec![10u8];
    bytes.extend(1.0f64.to_le_bytes());
    let error = bincode::serde::decode_from_slice::<Mechanism, _>(&bytes, config).unwrap_err();
    assert!(error.to_string().contains("integer `10`"), "{error}");
    let error = serde_json::from_str::<Mechanism>(r#"{"Laplace":{"epsilon":1.0}}"#).unwrap_err();
    assert!(
        error.to_string().contains("unknown variant `Laplace`"),
        "{error}"
    );
}

/// AdaSSP (a regressor's mechanism, so no classifier fixture) is written under code 9 with
/// its ε and δ, and reads back the same, in bincode and JSON.
#[test]
fn adassp_code_and_json_are_pinned() {
    let mechanism = Mechanism::AdaSsp {
        epsilon: 1.0,
        delta: 1e-5,
    };
    let config = bincode::config::standard();
    let bytes = bincode::serde::encode_to_vec(mechanism, config).unwrap();
    assert_eq!(bytes[0], 9);
    let (back, _) = bincode::serde::decode_from_slice::<Mechanism, _>(&bytes, config).unwrap();
    assert_eq!(back, mechanism);
    let json = serde_json::to_string(&mechanism).unwrap();
    assert_eq!(json, r#"{"AdaSsp":{"epsilon":1.0,"delta":0.00001}}"#);
    assert_eq!(serde_json::from_str::<Mechanism>(&json).unwrap(), mechanism);
}

/// The codes of the other enums a model file holds, pinned likewise, with their JSON.
#[test]
fn calibration_and_loss_codes_are_pinned() {
    use crate::variant_codes::{CALIBRATIONS, LOSSES, assert_distinct};
    assert_distinct(&CALIBRATIONS);
    assert_distinct(&LOSSES);
    let config = bincode::config::standard();
    let code = |bytes: Vec<u8>| bytes[0];
    let calibration =
        |c: ObjectiveCalibration| code(bincode::serde::encode_to_vec(c, config).unwrap());
    assert_eq!(calibration(ObjectiveCalibration::Cms11), 0);
    assert_eq!(calibration(ObjectiveCalibration::CliffFree), 1);
    let loss = |l: Loss| bincode::serde::encode_to_vec(l, config).unwrap();
    assert_eq!(loss(Loss::Logistic), [0]);
    let mut huber = vec![1u8];
    huber.extend(0.5f64.to_le_bytes());
    assert_eq!(loss(Loss::Huber { width: 0.5 }), huber);
    for (value, json) in [
        (Loss::Logistic, r#""Logistic""#),
        (Loss::Huber { width: 0.5 }, r#"{"Huber":{"width":0.5}}"#),
    ] {
        assert_eq!(serde_json::to_string(&value).unwrap(), json);
        assert_eq!(serde_json::from_str::<Loss>(json).unwrap(), value);
        let bytes = bincode::serde::encode_to_vec(value, config).unwrap();
        let (back, _): (Loss, usize) = bincode::serde::decode_from_slice(&bytes, config).unwrap();
        assert_eq!(back, value);
    }
    for (value, json) in [
        (ObjectiveCalibration::Cms11, r#""Cms11""#),
        (ObjectiveCalibration::CliffFree, r#""CliffFree""#),
    ] {
        assert_eq!(serde_json::to_string(&value).unwrap(), json);
        assert_eq!(
            serde_json::from_str::<ObjectiveCalibration>(json).unwrap(),
            value
        );
    }
}

/// A model certified by the PLD accountant is written under codes of its own (7 and 8, the
/// names `DpSgdPld` and `DpSgdAddRemovePld`) with the same fields, and reads back with its
/// accountant; the fixtures written before accountants were recorded (codes 5 and 6) read as
/// RDP (above), and the same models certified by RDP encode exactly as those fixtures. A PLD
/// model's bytes differ from its RDP twin's in the code alone.
#[test]
fn a_pld_certified_dpsgd_model_has_its_own_code_and_reads_back_as_pld() {
    for (name, rdp_model) in fixture_models() {
        let mut metadata = rdp_model.metadata().clone();
        let expected_code = match &mut metadata.mechanism {
            Mechanism::DpSgd { accountant, .. } => {
                *accountant = Accountant::Pld;
                7
            }
            Mechanism::DpSgdAddRemove { accountant, .. } => {
                *accountant = Accountant::Pld;
                8
            }
            _ => continue,
        };
        let pld = LinearModel::new(rdp_model.weights().to_vec(), metadata.clone());
        let bytes =
            bincode::serde::encode_to_vec(metadata.mechanism, bincode::config::standard()).unwrap();
        assert_eq!(bytes[0], expected_code, "{name}");
        let old = bincode::serde::encode_to_vec(
            rdp_model.metadata().mechanism,
            bincode::config::standard(),
        )
        .unwrap();
        assert_eq!(bytes[1..], old[1..], "{name}");
        let loaded = LinearModel::from_bytes(&pld.to_bytes().unwrap()).unwrap();
        assert_eq!(loaded, pld, "{name}");
        assert_eq!(
            loaded.metadata().mechanism.sgd_record().unwrap().accountant,
            Accountant::Pld
        );
        let json = serde_json::to_string(&metadata.mechanism).unwrap();
        assert!(json.contains("Pld\""), "{json}");
        assert_eq!(
            serde_json::from_str::<Mechanism>(&json).unwrap(),
            metadata.mechanism
        );
        assert_eq!(
            rdp_model
                .metadata()
                .mechanism
                .sgd_record()
                .unwrap()
                .accountant,
            Accountant::Rdp
        );
    }
}
