//! A run replaces earlier results only if it holds at least what they hold: a quick run
//! keeps full results, a run without the data keeps real-data results, and either writes
//! into a subfolder instead. A failed run leaves no folder it created behind.

use std::path::Path;
use std::process::Output;

mod common;

use common::{assert_sentinels_intact, scratch, sentinels, stderr, text};

fn xtask(args: &[&str]) -> Output {
    common::xtask_with(args, None)
}

/// Writes `contents` to `path`, creating its folder; returns the path and bytes to check.
fn earlier(path: &Path, contents: &str) -> (std::path::PathBuf, Vec<u8>) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, contents).unwrap();
    (path.to_path_buf(), contents.as_bytes().to_vec())
}

/// `reproduce predict --quick --offline` with an empty data directory, into `out`.
fn predict_without_data(scratch: &Path, out: &Path) -> Output {
    let data = scratch.join("empty-data");
    std::fs::create_dir_all(&data).unwrap();
    xtask(&[
        "reproduce",
        "predict",
        "--quick",
        "--offline",
        "--data-dir",
        text(&data),
        "--out",
        text(out),
    ])
}

#[test]
fn predict_without_data_keeps_earlier_real_data_results_and_fails_naming_the_part() {
    let scratch = scratch("keep-real-data");
    let out = scratch.join("results");
    let folder = out.join("predict");
    let mut results = vec![
        earlier(&folder.join("run.json"), r#"{"mode": "quick"}"#),
        earlier(
            &folder.join("cells.json"),
            r#"{"mode": "quick", "queries": [{"dataset": "adult"}]}"#,
        ),
    ];
    results.extend(sentinels(&folder, &["summary.md", "cells.csv"]));
    let output = predict_without_data(&scratch, &out);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{message}");
    assert!(
        message.contains("these experiments could not run: predict (real data)"),
        "{message}"
    );
    assert!(
        message.contains(&format!("earlier results in {} kept", folder.display())),
        "{message}"
    );
    assert_sentinels_intact(&results);
    let summary = std::fs::read_to_string(folder.join("partial/summary.md")).unwrap();
    assert!(summary.contains("Not run: skipped"), "{summary}");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_quick_reproduction_keeps_earlier_full_results() {
    let scratch = scratch("keep-full-predict");
    let out = scratch.join("results");
    let folder = out.join("predict");
    // Results of a version without run.json: the mode is read from cells.json.
    let results = vec![
        earlier(
            &folder.join("cells.json"),
            r#"{"mode": "full", "queries": []}"#,
        ),
        earlier(&folder.join("summary.md"), "full results\n"),
    ];
    let output = predict_without_data(&scratch, &out);
    let message = stderr(&output);
    assert!(
        message.contains("they are a full run and this one is quick"),
        "{message}"
    );
    assert_sentinels_intact(&results);
    assert!(folder.join("quick/summary.md").is_file(), "{message}");
    // The index still lists the full results.
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(index.contains("| predict | full |"), "{index}");
    assert!(
        index.contains("[quick run, kept aside](predict/quick/summary.md)"),
        "{index}"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_quick_audit_keeps_an_earlier_full_audit() {
    let scratch = scratch("keep-full-audit");
    let out = scratch.join("results");
    let results = vec![
        earlier(
            &out.join("noise_audit.md"),
            "# dp-noise sampler audit\n\ndp-noise 0.1.0, mode full, seed 2026 (…)\n",
        ),
        earlier(&out.join("noise_audit.csv"), "full audit\n"),
    ];
    let output = xtask(&["audit-noise", "--quick", "--out", text(&out)]);
    let message = stderr(&output);
    assert!(output.status.success(), "{message}");
    assert!(message.contains("kept"), "{message}");
    assert_sentinels_intact(&results);
    let report = std::fs::read_to_string(out.join("quick/noise_audit.md")).unwrap();
    assert!(report.contains("mode quick"), "{report}");
    // A quick audit over a quick one replaces it.
    let output = xtask(&["audit-noise", "--quick", "--out", text(&out.join("quick"))]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!out.join("quick/quick").exists());
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_failed_run_leaves_no_folder_it_created() {
    let scratch = scratch("no-empty-folders");
    let (typo, out) = (scratch.join("typo"), scratch.join("new/results"));
    let output = xtask(&[
        "reproduce",
        "linear",
        "--quick",
        "--offline",
        "--data-dir",
        text(&typo),
        "--out",
        text(&out),
    ]);
    assert!(!output.status.success());
    assert!(!scratch.join("new").exists(), "{}", stderr(&output));
    // A folder that was there stays, even empty.
    std::fs::create_dir_all(&out).unwrap();
    let data = scratch.join("corrupt");
    std::fs::create_dir_all(&data).unwrap();
    for file in common::DATA_FILES {
        std::fs::write(data.join(file), "not the published file").unwrap();
    }
    let output = xtask(&[
        "reproduce",
        "tuning",
        "--quick",
        "--data-dir",
        text(&data),
        "--out",
        text(&out),
    ]);
    assert!(!output.status.success());
    assert!(out.is_dir());
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_run_into_a_folder_another_run_is_writing_is_refused_before_any_work() {
    let scratch = scratch("claimed-folder");
    let out = scratch.join("results");
    let folder = out.join("kernel");
    let results = vec![
        earlier(&folder.join("run.json"), r#"{"mode": "full"}"#),
        earlier(&folder.join("summary.md"), "full results\n"),
    ];
    // Another run's claim, as `xtask` takes it: a lock on the folder's lock file.
    let lock = std::fs::File::create(folder.join(".xtask-run.lock")).unwrap();
    lock.try_lock().unwrap();
    let output = xtask(&["reproduce", "kernel", "--quick", "--out", text(&out)]);
    let message = stderr(&output);
    assert!(!output.status.success(), "{message}");
    assert!(message.contains("another xtask run"), "{message}");
    assert_sentinels_intact(&results);
    assert!(!folder.join("quick").exists());
    // Released (the other run ended): the same command runs, into `quick/` beside the full run.
    drop(lock);
    let output = xtask(&["reproduce", "kernel", "--quick", "--out", text(&out)]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(folder.join("quick/summary.md").is_file());
    assert_sentinels_intact(&results);
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn bench_peers_refuses_python_without_setup() {
    let output = xtask(&["bench", "peers", "--python", "/nonexistent/python"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--setup"), "{}", stderr(&output));
}
