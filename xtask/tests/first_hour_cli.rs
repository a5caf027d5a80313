//! A newcomer's first run: `reproduce` without the data files, offline or with a fetch that
//! fails (no network needed: the download address points at a local path), and with a
//! fetch that works from a local mirror address.

use std::path::{Path, PathBuf};

mod common;

use common::{DATA_FILES, scratch, stderr, text, xtask_with as xtask};

/// An earlier run's linear results and a file of the user's, to check they survive.
fn earlier_results(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::sentinels(
        out,
        &["linear/summary.md", "linear/cells.json", "notes.txt"],
    )
}

fn assert_untouched(results: &[(PathBuf, Vec<u8>)], out: &Path) {
    common::assert_sentinels_intact(results);
    let mut names: Vec<String> = std::fs::read_dir(out.join("linear"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["cells.json", "summary.md"],
        "files added or removed"
    );
    assert!(
        !out.join("index.md").exists(),
        "an empty run rewrote the index"
    );
}

/// The fix, as the message must name it.
fn assert_names_the_fix(message: &str) {
    for fix in [
        "cargo xtask datasets fetch",
        "--from DIR",
        "--data-dir",
        "DP_ML_DATA_DIR",
    ] {
        assert!(message.contains(fix), "missing {fix:?} in: {message}");
    }
}

#[test]
fn offline_reproduction_without_data_fails_keeps_results_and_names_the_fix() {
    let scratch = scratch("offline");
    let (data, out) = (scratch.join("empty-data"), scratch.join("results"));
    std::fs::create_dir_all(&data).unwrap();
    let results = earlier_results(&out);
    let output = xtask(
        &[
            "reproduce",
            "linear",
            "--quick",
            "--offline",
            "--data-dir",
            text(&data),
            "--out",
            text(&out),
        ],
        None,
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("not fetched because of --offline"),
        "{message}"
    );
    assert!(
        message.contains("these experiments could not run: linear"),
        "{message}"
    );
    assert!(message.contains("linear: not run"), "{message}");
    assert_names_the_fix(&message);
    assert_untouched(&results, &out);
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0);
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn failed_fetch_says_why_leaves_no_partial_files_and_keeps_results() {
    let scratch = scratch("fetch-fails");
    let (data, out) = (scratch.join("data"), scratch.join("results"));
    std::fs::create_dir_all(&data).unwrap();
    let results = earlier_results(&out);
    // A download address with nothing behind it: curl fails as without network.
    let nowhere = format!("file://{}", scratch.join("no-mirror").display());
    let output = xtask(
        &[
            "reproduce",
            "tuning",
            "--quick",
            "--data-dir",
            text(&data),
            "--out",
            text(&out),
        ],
        Some(&nowhere),
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("failed (first error:")
            && message.contains(&format!("{nowhere}/adult.data"))
            && message.contains("these experiments could not run: tuning"),
        "{message}"
    );
    assert_names_the_fix(&message);
    assert_untouched(&results, &out);
    assert!(!out.join("tuning").exists(), "{message}");
    assert_eq!(
        std::fs::read_dir(&data).unwrap().count(),
        0,
        "temporaries left in the data directory"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn a_named_data_dir_that_does_not_exist_is_not_created_by_the_fetch() {
    let scratch = scratch("fetch-typo");
    let typo = scratch.join("dta");
    let output = xtask(
        &[
            "reproduce",
            "linear",
            "--quick",
            "--data-dir",
            text(&typo),
            "--out",
            text(&scratch.join("results")),
        ],
        Some("file:///nowhere"),
    );
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(&format!("{} does not exist", typo.display())),
        "{message}"
    );
    assert!(!typo.exists());
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn fetch_downloads_from_the_data_url_verified() {
    let Some(mirror) = std::env::var_os("DP_ML_DATA_DIR")
        .map(PathBuf::from)
        .filter(|d| DATA_FILES.iter().all(|f| d.join(f).is_file()))
    else {
        assert!(std::env::var_os("CI").is_none(), "CI must provide the data");
        eprintln!("skipped: DP_ML_DATA_DIR does not hold the data files");
        return;
    };
    let scratch = scratch("fetch-url");
    let data = scratch.join("data");
    let url = format!("file://{}", mirror.display());
    let output = xtask(
        &["datasets", "fetch", "--data-dir", text(&data)],
        Some(&url),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    for file in DATA_FILES {
        assert_eq!(
            std::fs::read(data.join(file)).unwrap(),
            std::fs::read(mirror.join(file)).unwrap()
        );
    }
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), DATA_FILES.len());
    std::fs::remove_dir_all(&scratch).unwrap();
}
