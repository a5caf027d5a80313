//! `dpml schema init --private` end to end: a schema whose bounds, levels and classes are
//! private releases, annotated, charged to the ledger, readable by `dpml train`; refusals
//! before any charge; never an existing file replaced.

use std::path::{Path, PathBuf};

mod common;
use common::{dpml, fails, listing, succeeds};

/// 3,000 rows: a numeric x in [0, 50), a categorical c (a, b, and one rare level), y.
fn data(dir: &Path) -> PathBuf {
    let mut text = String::from("x,c,note,y\n");
    for i in 0..3000 {
        let c = match i % 7 {
            0..=3 => "a",
            _ if i == 5 => "rare",
            _ => "b",
        };
        let y = if c == "a" { "pos" } else { "neg" };
        text += &format!("{},{c},n{i},{y}\n", i % 50);
    }
    let path = dir.join("data.csv");
    std::fs::write(&path, text).unwrap();
    path
}

fn ledger(dir: &Path, delta: &str) -> PathBuf {
    let path = dir.join("ledger.json");
    succeeds(dpml().args(["ledger", "init"]).arg(&path).args([
        "--total-epsilon",
        "3",
        "--total-delta",
        delta,
    ]));
    path
}

fn init(data: &Path, out: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = dpml();
    cmd.args(["schema", "init", "--private"])
        .arg(data)
        .arg("--out")
        .arg(out)
        .args(["--label", "y", "--positive", "pos", "--categorical", "c"])
        .args(["--ignore", "note"])
        .args(extra);
    cmd
}

fn spends(ledger: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(ledger).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["spends"].as_array().unwrap().clone()
}

#[test]
fn a_private_schema_is_annotated_charged_and_trains() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let ledger = ledger(dir.path(), "1e-5");
    let out = dir.path().join("schema.toml");
    let mut cmd = init(&data, &out, &["--epsilon", "1", "--delta", "1e-6"]);
    succeeds(cmd.arg("--ledger").arg(&ledger));
    let text = std::fs::read_to_string(&out).unwrap();
    // Each release annotated with its mechanism and spend; the whole spend stated.
    assert!(text.contains("# private release (bounds): bounds: noisy signed power-of-two"));
    assert!(text.contains("# private release (levels): levels: stability-based histogram"));
    assert!(text.contains("# private release (classes):"));
    assert!(text.contains("spent epsilon = 1.0, delta = 1e-6 in all"));
    assert!(text.contains("as spend 1."));
    // The rare level (one record) is not released.
    assert!(!text.contains("\"rare\""));
    let schema = dp_schema::Schema::from_toml(&text, "written").unwrap();
    // Charged to the ledger with what it was.
    let spent = spends(&ledger);
    assert_eq!(spent.len(), 1);
    assert_eq!(spent[0]["epsilon"], 1.0);
    assert_eq!(spent[0]["delta"], 1e-6);
    assert_eq!(spent[0]["command"], "schema init --private");
    assert_eq!(spent[0]["schema_sha256"], schema.hash());
    // The schema is an ordinary one: `dpml train` reads it and charges on top.
    let model = dir.path().join("m.dpm");
    succeeds(
        dpml()
            .arg("train")
            .arg("--data")
            .arg(&data)
            .arg("--schema")
            .arg(&out)
            .args(["--epsilon", "1"])
            .arg("--ledger")
            .arg(&ledger)
            .arg("--out")
            .arg(&model),
    );
    assert_eq!(spends(&ledger).len(), 2);
}

#[test]
fn public_levels_and_classes_make_a_pure_epsilon_description() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let ledger = ledger(dir.path(), "0");
    let out = dir.path().join("schema.toml");
    let mut cmd = init(
        &data,
        &out,
        &[
            "--epsilon",
            "0.5",
            "--levels",
            "c=a,b,z",
            "--classes",
            "neg,pos",
        ],
    );
    succeeds(cmd.arg("--ledger").arg(&ledger));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("levels: noisy counts of public candidates"));
    assert!(text.contains("# classes: public (given)"));
    let spent = spends(&ledger);
    assert_eq!(spent[0]["epsilon"], 0.5);
    assert!(spent[0].get("delta").is_none_or(|d| d == 0.0));
}

/// Every refusal names its cause, writes nothing and charges nothing.
#[test]
fn refusals_come_before_any_charge() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let ledger = ledger(dir.path(), "1e-5");
    let out = dir.path().join("schema.toml");
    let before = listing(dir.path());
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--epsilon", "1"],
            "delta = 0, but column(s) c, y have no public list",
        ),
        (
            vec!["--epsilon", "0", "--delta", "1e-6"],
            "epsilon must be finite and > 0",
        ),
        (
            vec!["--epsilon=-1", "--delta", "1e-6"],
            "epsilon must be finite and > 0",
        ),
        (
            vec!["--epsilon", "5", "--delta", "1e-6"],
            "above the budget",
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = init(&data, &out, &args);
        let err = fails(cmd.arg("--ledger").arg(&ledger));
        assert!(err.contains(expected), "{args:?}: {err}");
    }
    // A label column the file does not have, named.
    let mut cmd = dpml();
    cmd.args([
        "schema",
        "init",
        "--private",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
    ])
    .arg(&data)
    .arg("--out")
    .arg(&out)
    .args([
        "--label",
        "income",
        "--positive",
        "pos",
        "--categorical",
        "c",
    ])
    .arg("--ledger")
    .arg(&ledger);
    let err = fails(&mut cmd);
    assert!(
        err.contains("--label \"income\": no column of that name"),
        "{err}"
    );
    // Nothing written (the ledger's lock file aside).
    let after: Vec<String> = listing(dir.path())
        .into_iter()
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert_eq!(after, before);
    assert!(spends(&ledger).is_empty());
}

#[test]
fn an_existing_output_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let out = dir.path().join("schema.toml");
    std::fs::write(&out, "mine").unwrap();
    let err = fails(&mut init(
        &data,
        &out,
        &["--epsilon", "1", "--delta", "1e-6"],
    ));
    assert!(err.contains("exists"), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
    // --force is refused with --private.
    let mut cmd = init(
        &data,
        &out,
        &["--epsilon", "1", "--delta", "1e-6", "--force"],
    );
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
}

/// A bad cell stops the pass naming file, line and column; nothing is charged.
#[test]
fn a_bad_cell_is_named_and_costs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, "x,c,note,y\n1,a,n,pos\nsecret,b,n,neg\n").unwrap();
    let ledger = ledger(dir.path(), "1e-5");
    let out = dir.path().join("schema.toml");
    let mut cmd = init(&path, &out, &["--epsilon", "1", "--delta", "1e-6"]);
    let err = fails(cmd.arg("--ledger").arg(&ledger));
    assert!(err.contains("line 3, column x: not a number"), "{err}");
    assert!(!err.contains("secret"));
    assert!(!out.exists());
    assert!(spends(&ledger).is_empty());
}

/// `dpml train --private-schema` on the same data: the description and the fit in one run,
/// their two spends on the ledger summing to --epsilon (split by --describe-share), the
/// description's δ on top of the fit's.
fn train_described(data: &Path, dir: &Path, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = dpml();
    cmd.arg("train")
        .arg("--data")
        .arg(data)
        .arg("--private-schema")
        .arg(dir.join("described.toml"))
        .args(["--label", "y", "--positive", "pos", "--categorical", "c"])
        .args(["--ignore", "note"])
        .arg("--out")
        .arg(dir.join("m.dpm"))
        .args(extra);
    if !extra.contains(&"--epsilon") {
        cmd.args(["--epsilon", "1"]);
    }
    cmd
}

#[test]
fn train_describes_then_fits_in_one_run_with_the_total_split() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let ledger = ledger(dir.path(), "1e-5");
    let mut cmd = train_described(&data, dir.path(), &["--describe-delta", "1e-6"]);
    succeeds(
        cmd.arg("--describe-share")
            .arg("0.3")
            .arg("--ledger")
            .arg(&ledger),
    );
    let text = std::fs::read_to_string(dir.path().join("described.toml")).unwrap();
    assert!(text.contains("# private release (levels): levels: stability-based histogram"));
    let schema = dp_schema::Schema::from_toml(&text, "written").unwrap();
    let spent = spends(&ledger);
    assert_eq!(spent.len(), 2, "{spent:?}");
    assert_eq!(spent[0]["command"], "schema init --private");
    assert_eq!(spent[0]["delta"], 1e-6);
    let (describe, fit) = (
        spent[0]["epsilon"].as_f64().unwrap(),
        spent[1]["epsilon"].as_f64().unwrap(),
    );
    assert!(
        (describe - 0.3).abs() < 1e-12 && (describe + fit - 1.0).abs() < 1e-12,
        "{spent:?}"
    );
    assert_eq!(spent[1]["delta"].as_f64().unwrap_or(0.0), 0.0);
    // The model names the private schema: it predicts with it.
    assert_eq!(spent[1]["schema_sha256"], schema.hash());
    // Its report states the description's spend beside the fit's, and their sum.
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("m.report.json")).unwrap())
            .unwrap();
    let described = &report["private_description"];
    assert_eq!(described["epsilon"].as_f64().unwrap(), describe, "{report}");
    assert_eq!(described["delta"].as_f64().unwrap(), 1e-6);
    assert!((described["epsilon_with_fit"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    assert_eq!(report["epsilon_total"].as_f64().unwrap(), fit);
    let markdown = std::fs::read_to_string(dir.path().join("m.report.md")).unwrap();
    assert!(
        markdown.contains("| private schema | described from the same data"),
        "{markdown}"
    );
    let predictions = dir.path().join("p.csv");
    succeeds(
        dpml()
            .args(["predict", "--model"])
            .arg(dir.path().join("m.dpm"))
            .arg("--schema")
            .arg(dir.path().join("described.toml"))
            .arg("--data")
            .arg(&data)
            .arg("--out")
            .arg(&predictions),
    );
    // The default share is dp-schema's.
    let other = tempfile::tempdir().unwrap();
    let ledger = ledger_in(other.path());
    let mut cmd = train_described(&data, other.path(), &["--levels", "c=a,b,rare"]);
    succeeds(
        cmd.args(["--classes", "pos,neg"])
            .arg("--ledger")
            .arg(&ledger),
    );
    let spent = spends(&ledger);
    assert_eq!(
        spent[0]["epsilon"].as_f64().unwrap(),
        dp_schema::DESCRIBE_SHARE
    );
}

fn ledger_in(dir: &Path) -> PathBuf {
    ledger(dir, "0")
}

#[test]
fn train_private_schema_refusals_come_before_anything_is_read_or_charged() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let ledger = ledger(dir.path(), "1e-5");
    // The ledger's lock file is created by the first run that locks it, and stays.
    let files = |dir: &Path| -> Vec<String> {
        let mut names = listing(dir);
        names.retain(|n| !n.ends_with(".lock"));
        names
    };
    let before = files(dir.path());
    let cases: [(&[&str], &str); 5] = [
        (
            &["--describe-share", "1"],
            "--describe-share 1: must be in (0, 1)",
        ),
        (
            &["--describe-share", "0"],
            "--describe-share 0: must be in (0, 1)",
        ),
        // The fit's parameters, refused before the description spends anything.
        (&["--model", "dp-sgd"], "--delta"),
        // The description needs δ for levels without a list: refused before any read.
        (&[], "delta"),
        // A ledger that cannot pay the total (3 in all) is refused before the description.
        (&["--epsilon", "5", "--describe-delta", "1e-6"], "ledger"),
    ];
    for (extra, message) in cases {
        let mut cmd = train_described(&data, dir.path(), extra);
        let err = fails(cmd.arg("--ledger").arg(&ledger));
        assert!(err.contains(message), "{extra:?}: {err}");
        assert!(spends(&ledger).is_empty(), "{extra:?} charged the ledger");
        assert_eq!(files(dir.path()), before, "{extra:?} wrote a file");
    }
    // The description's flags without --private-schema are refused by name.
    let err = fails(dpml().arg("train").arg("--data").arg(&data).args([
        "--schema",
        "s.toml",
        "--label",
        "y",
        "--epsilon",
        "1",
        "--out",
        "m.dpm",
    ]));
    assert!(
        err.contains("--label describes the data privately: it needs --private-schema"),
        "{err}"
    );
}

/// The description's outlook (its largest threshold against the 3,000 rows) is printed
/// before any noise is drawn: nothing at ε = 1 (thresholds near 90 records), a warning at
/// ε = 0.05 (three facts at ε ≈ 0.0167, noise scale 120: the bounds' threshold near
/// 1,750 records, 58% of the rows), and "nothing can pass" at ε = 0.02 (about 4,370).
#[test]
fn the_description_outlook_warns_when_its_thresholds_need_most_of_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data = data(dir.path());
    let stderr = |epsilon: &str, name: &str| {
        let out = init(&data, &dir.path().join(name), &["--epsilon", epsilon])
            .args(["--delta", "1e-6"])
            .output()
            .unwrap();
        String::from_utf8(out.stderr).unwrap()
    };
    let quiet = stderr("1", "a.toml");
    assert!(!quiet.contains("thresholds need"), "{quiet}");
    let risky = stderr("0.05", "b.toml");
    assert!(
        risky.contains("warning: the description's thresholds need")
            && risky.contains("% of the 3000 rows")
            && risky.contains("no better than the majority class"),
        "{risky}"
    );
    let hopeless = stderr("0.02", "c.toml");
    assert!(
        hopeless.contains("more than the 3000 rows: nothing can pass"),
        "{hopeless}"
    );
}
