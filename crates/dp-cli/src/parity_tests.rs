//! One spec, one table, one seed: `dpml train` releases bit-for-bit the weights that the Rust
//! API (dp-fit's recipe over dp-schema's rows) releases, and the weights committed in
//! `crates/dp-fit/testdata/parity/models.json`, which Python's `tests/test_parity.py`
//! reproduces through the estimators. Together: the command line, Rust and Python give the
//! same model for every mechanism the command line offers.
//!
//! The fixture is written only on request (`DPML_BLESS_PARITY=1 cargo test -p dp-cli
//! parity`), after a change that is meant to move the models; each face must then match it.

use std::path::{Path, PathBuf};

use clap::Parser;
use dp_erm::{Loss, ObjectiveCalibration};
use dp_fit::recipe::{ErmRecipe, Mechanism, Regularization};
use dp_noise::InsecureSeededRng;
use dp_schema::{Encoder, Schema};
use serde_json::{Value, json};

use crate::model_file::Model;
use crate::output::sha256_hex;
use crate::{Cli, train, train_request};

/// The seed every face fits the parity cases with.
const SEED: u64 = 20_261_206;

/// Each case: its name and `dpml train`'s options (Python's test maps each name to the same
/// estimator and parameters).
const CASES: &[(&str, &[&str])] = &[
    ("huber-grouped", &["--model", "huber", "--epsilon", "1"]),
    (
        "logistic-euclidean",
        &[
            "--model",
            "logistic",
            "--noise",
            "euclidean",
            "--epsilon",
            "2",
        ],
    ),
    (
        "huber-gaussian",
        &["--model", "huber", "--epsilon", "1", "--delta", "1e-6"],
    ),
    (
        "kernel",
        &[
            "--model",
            "kernel",
            "--epsilon",
            "2",
            "--random-features",
            "40",
            "--sampling",
            "standard",
        ],
    ),
    (
        "dp-sgd",
        &[
            "--model",
            "dp-sgd",
            "--epsilon",
            "2",
            "--delta",
            "1e-5",
            "--batch-size",
            "64",
            "--epochs",
            "2",
        ],
    ),
];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../dp-fit/testdata/parity")
}

/// `dpml train` on the parity table with `options`, its generator seeded.
fn train_with(options: &[&str], out: &Path) -> Model {
    let dir = fixture_dir();
    let (data, schema) = (dir.join("data.csv"), dir.join("schema.toml"));
    let mut args = vec!["dpml", "train", "--data", data.to_str().unwrap()];
    args.extend(["--schema", schema.to_str().unwrap()]);
    args.extend(options);
    args.extend(["--out", out.to_str().unwrap()]);
    let cli = Cli::try_parse_from(args).expect("the case's options parse");
    let (request, described) = train_request(cli.command).unwrap_or_else(|e| panic!("{}", e.0));
    assert!(described.is_none());
    train::run_with(request, InsecureSeededRng::new(SEED))
        .unwrap_or_else(|e| panic!("{options:?}: {}", e.0));
    Model::load(out).unwrap_or_else(|e| panic!("{}", e.0))
}

/// The released numbers a face must reproduce: every weight's bits and Λ; for a kernel
/// model (whose file names no schema, so every face writes the same bytes) the map's id
/// (the map is drawn from the same seeded generator before the fit) and the whole file's
/// SHA-256.
fn released(model: &Model) -> Value {
    let (linear, map_id, file) = match model {
        Model::Linear(m) => (m, None, None),
        Model::Kernel(m) => (
            m.linear(),
            Some(m.map().id()),
            Some(sha256_hex(&model.to_bytes().unwrap())),
        ),
        Model::Regression(_) => unreachable!("the parity fixtures are classifiers'"),
    };
    json!({
        "weights": linear
            .weights()
            .iter()
            .map(|w| format!("{:016x}", w.to_bits()))
            .collect::<Vec<_>>(),
        "regularization": linear.metadata().regularization,
        "map_id": map_id,
        "file_sha256": file,
    })
}

#[test]
fn the_command_line_releases_the_committed_parity_models() {
    let dir = tempfile::tempdir().unwrap();
    let mut got = serde_json::Map::new();
    for (name, options) in CASES {
        let model = train_with(options, &dir.path().join(format!("{name}.dpm")));
        got.insert(name.to_string(), released(&model));
    }
    let got = json!({ "seed": SEED, "cases": got });
    let path = fixture_dir().join("models.json");
    if std::env::var_os("DPML_BLESS_PARITY").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("models.json")).unwrap();
    for (name, _) in CASES {
        assert_eq!(
            got["cases"][name], committed["cases"][name],
            "{name}: the command line no longer releases the committed parity model"
        );
    }
    assert_eq!(committed["seed"], json!(SEED));
}

#[test]
fn the_command_line_releases_the_rust_apis_models() {
    let dir = fixture_dir();
    let schema = Schema::load(dir.join("schema.toml")).unwrap();
    let encoder = Encoder::new(&schema);
    let rows =
        dp_schema::read_training_set(&dir.join("data.csv"), &schema, &encoder, &mut |_, _| {})
            .unwrap();
    let classes: Vec<usize> = rows
        .labels()
        .iter()
        .map(|&y| usize::from(y > 0.0))
        .collect();
    let tag = train::schema_tag(&schema.hash());
    let huber = Loss::Huber { width: 1.0 };
    let objective = |epsilon| Mechanism::Objective {
        epsilon,
        calibration: ObjectiveCalibration::CliffFree,
    };
    let by_hand = [
        ("huber-grouped", huber, objective(1.0), true),
        ("logistic-euclidean", Loss::Logistic, objective(2.0), false),
        (
            "huber-gaussian",
            huber,
            Mechanism::GaussianObjective {
                epsilon: 1.0,
                delta: 1e-6,
            },
            false,
        ),
    ];
    let out = tempfile::tempdir().unwrap();
    for (name, loss, mechanism, grouped) in by_hand {
        let recipe = ErmRecipe {
            loss,
            mechanism,
            regularization: Regularization::Rule,
            groups: grouped.then(|| encoder.groups().clone()),
            tolerance: None,
            feature_map: tag.clone(),
        };
        let plan = recipe.plan(rows.len(), rows.features(), 2).unwrap();
        let rust = plan
            .fit(&rows, &classes, &mut InsecureSeededRng::new(SEED))
            .unwrap()
            .remove(0);
        let options = CASES.iter().find(|(n, _)| *n == name).unwrap().1;
        let Model::Linear(cli) = train_with(options, &out.path().join(format!("{name}.dpm")))
        else {
            panic!("{name} is linear");
        };
        assert_eq!(
            cli.to_bytes().unwrap(),
            rust.to_bytes().unwrap(),
            "{name}: the command line's model file is not the Rust API's"
        );
    }
}

/// `dpml schema init --private` on the parity table, its generator seeded: the schema it
/// writes is committed as `private_schema.toml` (blessed with the models), which Python's
/// `Schema.from_data` must write too for the same table and seed (and a Spark DataFrame's
/// description is the pandas frame's: `tests/test_spark.py`). One describe recipe, one
/// schema.
#[test]
fn the_command_lines_private_description_is_the_committed_one() {
    let dir = fixture_dir();
    let out = tempfile::tempdir().unwrap();
    let written = out.path().join("private.toml");
    let data = dir.join("data.csv");
    let args = [
        "dpml",
        "schema",
        "init",
        "--private",
        data.to_str().unwrap(),
        "--out",
        written.to_str().unwrap(),
        "--label",
        "outcome",
        "--positive",
        "yes",
        "--categorical",
        "color,size",
        "--epsilon",
        "2",
        "--delta",
        "1e-6",
    ];
    let cli = Cli::try_parse_from(args).expect("the options parse");
    let crate::Command::Schema(init) = cli.command else {
        panic!("schema init parses as a schema command")
    };
    crate::schema_init::run_private_with(
        crate::private_request(init),
        InsecureSeededRng::new(SEED),
    )
    .unwrap_or_else(|e| panic!("{}", e.0));
    let text = std::fs::read_to_string(&written).unwrap();
    let path = dir.join("private_schema.toml");
    if std::env::var_os("DPML_BLESS_PARITY").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let committed = std::fs::read_to_string(&path).expect("private_schema.toml");
    assert_eq!(
        text, committed,
        "the command line no longer writes the committed private schema"
    );
}
