//! What the command line's test files share: the binary, how a run is expected to end, a
//! folder's listing, and the small schema most cases train on.

// Each test file uses its own part of this.
#![allow(dead_code)]

use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;

pub fn dpml() -> Command {
    Command::cargo_bin("dpml").unwrap()
}

/// Runs `cmd` (at most a minute: a file without end must not hang the suite), expecting
/// failure; returns standard error, which must start with `dpml: error:`.
pub fn fails(cmd: &mut Command) -> String {
    let out = cmd.timeout(Duration::from_secs(60)).output().unwrap();
    assert!(!out.status.success(), "expected a failure: {out:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.starts_with("dpml: error: "), "{err}");
    err
}

/// Runs `cmd` (at most ten minutes), expecting success; returns standard output.
pub fn succeeds(cmd: &mut Command) -> String {
    let out = cmd.timeout(Duration::from_secs(600)).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The names in `dir`, sorted (what a command left behind, hidden files included).
pub fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A numeric column x in [0, 10], a categorical c in {a, b} and the label y in {neg, pos}.
pub const SCHEMA: &str = r#"
version = 1
intercept = true
[csv]
header = true
trim = true
missing = ["?"]

[[columns]]
name = "x"
type = "numeric"
lower = 0
upper = 10

[[columns]]
name = "c"
type = "categorical"
levels = ["a", "b"]

[[columns]]
name = "y"
type = "label"
classes = ["neg", "pos"]
positive = "pos"
"#;
