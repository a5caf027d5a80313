//! `dpml train` on a regression schema (a `type = "target"` column): train, predict,
//! evaluate and inspect, the report, and every refusal by name before anything is written.

use std::path::{Path, PathBuf};

use assert_cmd::Command;

mod common;
use common::{dpml, fails, listing, succeeds};

/// Two numeric features and a target in [0, 100]: y = 20 + 5·x1 + 3·x2 plus noise of at
/// most 2 (x1, x2 in [0, 9]).
const SCHEMA: &str = r#"
version = 1
intercept = true
[csv]
header = true

[[columns]]
name = "x1"
type = "numeric"
lower = 0
upper = 10

[[columns]]
name = "x2"
type = "numeric"
lower = 0
upper = 10

[[columns]]
name = "cost"
type = "target"
lower = 0
upper = 100
"#;

fn data(rows: usize) -> String {
    let mut text = String::from("x1,x2,cost\n");
    for i in 0..rows {
        let (x1, x2) = ((i * 7 % 11) as f64 * 0.9, (i * 3 % 13) as f64 * 0.75);
        let noise = ((i * 37 % 17) as f64 - 8.0) * 0.25;
        text += &format!("{x1},{x2},{}\n", 20.0 + 5.0 * x1 + 3.0 * x2 + noise);
    }
    text
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("schema.toml"), SCHEMA).unwrap();
        std::fs::write(dir.path().join("train.csv"), data(20_000)).unwrap();
        Self { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn train(&self, data: &Path, out: &str, extra: &[&str]) -> Command {
        let mut cmd = dpml();
        cmd.arg("train")
            .arg("--data")
            .arg(data)
            .arg("--schema")
            .arg(self.path("schema.toml"))
            .args(["--epsilon", "1", "--out"])
            .arg(self.path(out))
            .args(extra);
        cmd
    }
}

#[test]
fn a_regressor_trains_predicts_evaluates_and_is_inspected() {
    let s = Setup::new();
    succeeds(&mut s.train(&s.path("train.csv"), "cost.dpm", &[]));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("cost.report.json")).unwrap())
            .unwrap();
    assert_eq!(report["rows"], 20_000);
    assert_eq!(report["epsilon_total"], 1.0);
    assert!(
        report["model_file"]["kind"]
            .as_str()
            .unwrap()
            .contains("regression")
    );
    assert!(
        report["regularization_choice"]
            .to_string()
            .contains("RegularizationRule::REGRESSION"),
        "{}",
        report["regularization_choice"]
    );
    std::fs::write(s.path("new.csv"), "x1,x2\n0,0\n9,7.5\n4.5,4.5\n").unwrap();
    succeeds(
        dpml()
            .args(["predict", "--model"])
            .arg(s.path("cost.dpm"))
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .arg("--data")
            .arg(s.path("new.csv"))
            .arg("--out")
            .arg(s.path("p.csv")),
    );
    let predictions: Vec<f64> = std::fs::read_to_string(s.path("p.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect();
    // The truth is 20, 87.5 and 56: within a unit or two at ε = 1 on 20,000 rows (seen:
    // at most 0.9 off in ten fits). A model whose rows were divided by their own norms is
    // not linear in the features and misses all three by 2 to 6.
    assert_eq!(predictions.len(), 3);
    for (got, truth) in predictions.iter().zip([20.0, 87.5, 56.0]) {
        assert!((got - truth).abs() < 2.5, "{predictions:?}");
    }
    let shown: serde_json::Value = serde_json::from_str(&succeeds(
        dpml()
            .args(["evaluate", "--json", "--model"])
            .arg(s.path("cost.dpm"))
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .arg("--data")
            .arg(s.path("train.csv")),
    ))
    .unwrap();
    assert_eq!(shown["rows"], 20_000);
    assert!(shown["r2"].as_f64().unwrap() > 0.9, "{shown}");
    assert!(shown["rmse"].as_f64().unwrap() < 5.0, "{shown}");
    let inspected = succeeds(dpml().arg("inspect").arg(s.path("cost.dpm")));
    assert!(inspected.contains("linear regression"), "{inspected}");
    assert!(inspected.contains("huber-regression"), "{inspected}");
    // (ε, δ) through the same recipe.
    succeeds(&mut s.train(&s.path("train.csv"), "g.dpm", &["--delta", "1e-6"]));
    // A regressor gives no probabilities.
    let refused = fails(
        dpml()
            .args(["predict", "--proba", "--model"])
            .arg(s.path("cost.dpm"))
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .arg("--data")
            .arg(s.path("new.csv"))
            .arg("--out")
            .arg(s.path("q.csv")),
    );
    assert!(refused.contains("regressor"), "{refused}");
}

#[test]
fn bad_targets_and_options_are_refused_by_name_and_nothing_is_written() {
    let s = Setup::new();
    let mut text = data(50);
    text += "1,1,250\n";
    std::fs::write(s.path("outside.csv"), &text).unwrap();
    let before = listing(s.dir.path());
    let error = fails(&mut s.train(&s.path("outside.csv"), "m.dpm", &[]));
    // File, line and column; never the value.
    assert!(
        error.contains("outside.csv") && error.contains("line 52"),
        "{error}"
    );
    assert!(error.contains("cost") && !error.contains("250"), "{error}");
    assert!(error.contains("public bounds"), "{error}");
    std::fs::write(s.path("text.csv"), "x1,x2,cost\n1,1,cheap\n").unwrap();
    let error = fails(&mut s.train(&s.path("text.csv"), "m.dpm", &[]));
    assert!(error.contains("not a number"), "{error}");
    for (option, value) in [
        ("--model", "kernel"),
        ("--model", "dp-sgd"),
        ("--task", "classification"),
    ] {
        let error = fails(&mut s.train(&s.path("train.csv"), "m.dpm", &[option, value]));
        assert!(error.contains(option), "{option}: {error}");
    }
    // Regressors are tuned by split-and-select only (random stopping counts mistakes).
    let stopping = ["--tune", "1e-3,1e-2", "--tune-method", "stopping"];
    let error = fails(&mut s.train(&s.path("train.csv"), "m.dpm", &stopping));
    assert!(error.contains("--tune-method"), "{error}");
    let error = fails(&mut s.train(&s.path("train.csv"), "m.dpm", &["--out-of-core"]));
    assert!(error.contains("--out-of-core"), "{error}");
    let mut after = listing(s.dir.path());
    after.retain(|name| name != "text.csv");
    assert_eq!(after, before);
    // A clipping target column trains on the same file.
    let clipping = SCHEMA.replace("upper = 100\n", "upper = 100\nclip = true\n");
    std::fs::write(s.path("schema.toml"), clipping).unwrap();
    succeeds(&mut s.train(&s.path("outside.csv"), "m.dpm", &[]));
}

#[test]
fn a_tuned_regressor_is_chosen_privately_among_the_grid_and_predicts() {
    let s = Setup::new();
    let grid = "1e-4,1e-3,10";
    succeeds(&mut s.train(&s.path("train.csv"), "tuned.dpm", &["--tune", grid]));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(s.path("tuned.report.json")).unwrap())
            .unwrap();
    // Split-and-select at ε for the candidates and for the selection: ε in total.
    assert_eq!(report["epsilon_total"], 1.0, "{report}");
    let text = report.to_string();
    assert!(text.contains("split-and-select over regressors"), "{text}");
    assert!(text.contains("chosen_regularization"), "{text}");
    std::fs::write(s.path("new.csv"), "x1,x2\n0,0\n9,7.5\n").unwrap();
    succeeds(
        dpml()
            .args(["predict", "--model"])
            .arg(s.path("tuned.dpm"))
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .arg("--data")
            .arg(s.path("new.csv"))
            .arg("--out")
            .arg(s.path("p.csv")),
    );
    let predictions: Vec<f64> = std::fs::read_to_string(s.path("p.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(predictions.len(), 2);
    assert!(predictions.iter().all(|p| (0.0..=100.0).contains(p)));
}
