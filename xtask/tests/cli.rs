//! The command line run as a user runs it: exit status, messages, and what is left on disk
//! after a failure.

use std::path::{Path, PathBuf};
use std::process::Output;

mod common;

use common::{DATA_FILES, scratch, stderr, text};

fn xtask(args: &[&str]) -> Output {
    common::xtask_with(args, None)
}

/// `cargo xtask datasets fetch --from MIRROR --data-dir DATA`.
fn fetch_from(mirror: &Path, data: &Path) -> Output {
    xtask(&[
        "datasets",
        "fetch",
        "--from",
        text(mirror),
        "--data-dir",
        text(data),
    ])
}

/// Writes `name` at `path` with the published size but not the published contents (zeros),
/// so that only its checksum can refuse it.
fn wrong_file_of_published_size(path: &Path, name: &str) {
    let published = dp_datasets::ADULT_FILES
        .iter()
        .chain(&dp_datasets::KDD_FILES)
        .find(|f| f.name == name)
        .unwrap();
    std::fs::File::create(path)
        .unwrap()
        .set_len(published.bytes)
        .unwrap();
}

/// Sorted names of every file and folder under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, names: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            names.push(path.strip_prefix(root).unwrap().display().to_string());
            if path.is_dir() {
                walk(&path, root, names);
            }
        }
    }
    let mut names = Vec::new();
    walk(dir, dir, &mut names);
    names.sort();
    names
}

/// An earlier run's results, to check that a failing run leaves them byte for byte.
fn old_results(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    common::sentinels(
        out,
        &["linear/cells.json", "linear/cells.csv", "linear/summary.md"],
    )
}

fn assert_untouched(results: &[(PathBuf, Vec<u8>)], out: &Path) {
    common::assert_sentinels_intact(results);
    assert_eq!(
        tree(out),
        [
            "linear",
            "linear/cells.csv",
            "linear/cells.json",
            "linear/summary.md"
        ]
    );
}

/// The real data, if this machine has it (CI always does).
fn real_data() -> Option<PathBuf> {
    let Some(dir) = std::env::var_os("DP_ML_DATA_DIR").map(PathBuf::from) else {
        assert!(std::env::var_os("CI").is_none(), "CI must provide the data");
        return None;
    };
    if DATA_FILES.iter().all(|f| dir.join(f).is_file()) {
        return Some(dir);
    }
    assert!(std::env::var_os("CI").is_none(), "CI must provide the data");
    None
}

#[test]
fn rejects_missing_data_dir_without_touching_results() {
    let scratch = scratch("missing-data-dir");
    let out = scratch.join("results");
    let results = old_results(&out);
    let typo = scratch.join("typo");
    let output = xtask(&[
        "reproduce",
        "linear",
        "--quick",
        "--data-dir",
        text(&typo),
        "--out",
        text(&out),
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(&format!("{} does not exist", typo.display()))
            && message.contains("--data-dir")
            && message.contains("cargo xtask datasets fetch"),
        "{message}"
    );
    assert_untouched(&results, &out);
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Without data, `reproduce` runs the experiments that need none, keeps the earlier linear
/// results, and fails naming the experiment that could not run.
#[test]
fn every_experiment_without_data_runs_the_synthetic_ones_and_fails_naming_linear() {
    let scratch = scratch("all-without-data");
    let out = scratch.join("results");
    let results = old_results(&out);
    let typo = scratch.join("typo");
    let output = xtask(&[
        "reproduce",
        "--quick",
        "--offline",
        "--data-dir",
        text(&typo),
        "--out",
        text(&out),
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("could not run: predict (real data), linear, tuning"),
        "{message}"
    );
    assert!(message.contains("cargo xtask datasets fetch"), "{message}");
    // The one data problem is explained once, then referred to.
    assert_eq!(
        message
            .matches("reproduce linear failed: data directory")
            .count(),
        1,
        "{message}"
    );
    assert!(
        message.contains("reproduce tuning failed: the same problem (above)"),
        "{message}"
    );
    for (path, bytes) in &results {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
    assert!(out.join("kernel/summary.md").is_file(), "{message}");
    // Figures only of what ran: no placeholder for a part without data, and no quick figure
    // that cannot show its effect (the learning curve 1(f); the index says why).
    let figures: Vec<String> = tree(&out)
        .into_iter()
        .filter(|f| f.ends_with(".svg"))
        .collect();
    assert_eq!(
        figures,
        [
            "kernel/fig1c_nested_balls_error_vs_epsilon.svg",
            "kernel/sweep_random_features.svg",
            "predict/thresholds_eps0.1_noise0.1.svg",
            "predict/thresholds_eps0.1_noise0.svg",
            "predict/thresholds_eps1_noise0.1.svg",
            "predict/thresholds_eps1_noise0.svg",
        ]
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_a_data_dir_that_is_a_file() {
    let scratch = scratch("data-dir-file");
    let file = scratch.join("data");
    std::fs::write(&file, "").unwrap();
    // With and without --offline (which once reported every file missing instead).
    for offline in [false, true] {
        let mut args = vec!["reproduce", "linear", "--quick", "--data-dir", text(&file)];
        if offline {
            args.push("--offline");
        }
        let output = xtask(&args);
        assert!(!output.status.success());
        let message = stderr(&output);
        assert!(
            message.contains(&format!("{} is not a folder", file.display())),
            "offline {offline}: {message}"
        );
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_missing_data_files_naming_them_without_touching_results() {
    let scratch = scratch("missing-files");
    let data = scratch.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("adult.data"), "only one of the files").unwrap();
    let out = scratch.join("results");
    let results = old_results(&out);
    for extra in [None, Some("--require-data")] {
        let mut args = vec![
            "reproduce",
            "linear",
            "--quick",
            "--offline",
            "--data-dir",
            text(&data),
            "--out",
            text(&out),
        ];
        args.extend(extra);
        let output = xtask(&args);
        assert!(!output.status.success(), "{extra:?}");
        let message = stderr(&output);
        for file in ["adult.test", "adult.names", "kddcup.data_10_percent.gz"] {
            assert!(message.contains(file), "{message}");
        }
        assert!(
            !message.contains("adult.data,"),
            "present file listed: {message}"
        );
        assert!(
            message.contains(text(&data)) && message.contains("cargo xtask datasets fetch"),
            "{message}"
        );
        assert_untouched(&results, &out);
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_corrupt_data_files_before_running() {
    let scratch = scratch("corrupt-files");
    let data = scratch.join("data");
    std::fs::create_dir_all(&data).unwrap();
    for file in DATA_FILES {
        wrong_file_of_published_size(&data.join(file), file);
    }
    let out = scratch.join("results");
    let results = old_results(&out);
    let output = xtask(&[
        "reproduce",
        "linear",
        "--data-dir",
        text(&data),
        "--out",
        text(&out),
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(message.contains("expected 5b00264637db"), "{message}");
    assert_untouched(&results, &out);
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_unwritable_out_before_running() {
    let scratch = scratch("unwritable-out");
    let data = scratch.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let file = scratch.join("results.txt");
    std::fs::write(&file, "a file the user keeps").unwrap();
    for out in [file.clone(), file.join("below-a-file")] {
        let output = xtask(&[
            "reproduce",
            "--quick",
            "--data-dir",
            text(&data),
            "--out",
            text(&out),
        ]);
        assert!(!output.status.success());
        let message = stderr(&output);
        // The output folder is checked before the (missing) data, so before any experiment.
        assert!(message.contains(text(&out)), "{message}");
        assert!(!message.contains("missing"), "{message}");
    }
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "a file the user keeps"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_unwritable_audit_out_before_drawing() {
    let scratch = scratch("audit-out");
    let file = scratch.join("results");
    std::fs::write(&file, "keep").unwrap();
    for out in [file.clone(), file.join("nested")] {
        let output = xtask(&["audit-noise", "--quick", "--out", text(&out)]);
        assert!(!output.status.success());
        let message = stderr(&output);
        assert!(message.contains(text(&out)), "{message}");
        // The report is printed after the draws; nothing was drawn.
        assert!(output.stdout.is_empty(), "the audit ran before the check");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn fetch_from_keeps_data_dir_free_of_unverified_files() {
    let scratch = scratch("fetch-corrupt");
    let mirror = scratch.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    for file in DATA_FILES {
        wrong_file_of_published_size(&mirror.join(file), file);
    }
    let data = scratch.join("data");
    let fetch = || fetch_from(&mirror, &data);
    // A truncated file is refused by its size, before it is copied.
    std::fs::write(mirror.join("adult.names"), "a truncated download").unwrap();
    let output = fetch();
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("holds 20 bytes, the published file 5229; not copied"),
        "{message}"
    );
    wrong_file_of_published_size(&mirror.join("adult.names"), "adult.names");
    let output = fetch();
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("expected SHA-256 5b00264637db")
            && message.contains("found ")
            && message.contains(text(&mirror.join("adult.data"))),
        "{message}"
    );
    // Every file was attempted and reported.
    for file in DATA_FILES {
        assert!(
            message.contains(&format!("{file}: checksum mismatch")),
            "{message}"
        );
    }
    assert_eq!(
        tree(&data),
        Vec::<String>::new(),
        "unverified files left behind"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn fetch_from_leaves_a_mirror_missing_files_reported_and_data_dir_clean() {
    let scratch = scratch("fetch-empty-mirror");
    let mirror = scratch.join("mirror");
    std::fs::create_dir_all(&mirror).unwrap();
    let data = scratch.join("data");
    let output = fetch_from(&mirror, &data);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(text(&mirror.join("adult.names"))),
        "{message}"
    );
    assert_eq!(tree(&data), Vec::<String>::new());
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_missing_fetch_source_before_writing() {
    let scratch = scratch("fetch-no-source");
    let data = scratch.join("data");
    let file = scratch.join("a-file");
    std::fs::write(&file, "").unwrap();
    for from in [scratch.join("no-such-mirror"), file] {
        let output = xtask(&[
            "datasets",
            "fetch",
            "--from",
            text(&from),
            "--data-dir",
            text(&data),
        ]);
        assert!(!output.status.success());
        let message = stderr(&output);
        assert!(message.contains(text(&from)), "{message}");
        assert!(!data.exists(), "the data directory was created");
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_a_fetch_data_dir_that_is_a_file() {
    let scratch = scratch("fetch-dir-file");
    let file = scratch.join("data");
    std::fs::write(&file, "keep").unwrap();
    let output = xtask(&[
        "datasets",
        "fetch",
        "--from",
        text(&scratch),
        "--data-dir",
        text(&file),
    ]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains(text(&file)), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn fetch_from_a_good_mirror_installs_only_verified_files() {
    let Some(mirror) = real_data() else {
        eprintln!("skipped: DP_ML_DATA_DIR does not hold the data files");
        return;
    };
    let scratch = scratch("fetch-good");
    let data = scratch.join("data");
    std::fs::create_dir_all(&data).unwrap();
    // A corrupt file already in place is replaced by the verified copy, and said to be.
    std::fs::write(data.join("adult.names"), "corrupt").unwrap();
    // The temporary an interrupted fetch left (its process gone: no pid is 2^32 − 1) is
    // removed once the file is installed; one whose process is alive (this test's) is kept.
    let abandoned = ".adult.data.partial-4294967295-00000000000000ff";
    let live = format!(
        ".adult.data.partial-{}-00000000000000ff",
        std::process::id()
    );
    std::fs::write(data.join(abandoned), "half a download").unwrap();
    std::fs::write(data.join(&live), "a download in progress").unwrap();
    let output = fetch_from(&mirror, &data);
    assert!(output.status.success(), "{}", stderr(&output));
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        said.contains("adult.names: present but not the published file; fetching it again"),
        "{said}"
    );
    let mut expected: Vec<String> = DATA_FILES.iter().map(|f| f.to_string()).collect();
    expected.push(live);
    expected.sort();
    assert_eq!(tree(&data), expected);
    for file in DATA_FILES {
        assert_eq!(
            std::fs::read(data.join(file)).unwrap(),
            std::fs::read(mirror.join(file)).unwrap()
        );
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// One experiment with data (linear, the one with every dataset), over an earlier run's
/// results: each file replaced, nothing partial or temporary left. A complete quick run of
/// every experiment is CI's last step (`.ci/run`), which checks its results and index.
#[test]
fn quick_reproduction_replaces_results_completely_and_atomically() {
    let Some(data) = real_data() else {
        eprintln!("skipped: DP_ML_DATA_DIR does not hold the data files");
        return;
    };
    let scratch = scratch("reproduce-ok");
    let out = scratch.join("results");
    let results = old_results(&out);
    let output = xtask(&[
        "reproduce",
        "linear",
        "--quick",
        "--data-dir",
        text(&data),
        "--out",
        text(&out),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    for (path, bytes) in &results {
        assert_ne!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} not replaced",
            path.display()
        );
    }
    let summary = std::fs::read_to_string(out.join("linear/summary.md")).unwrap();
    assert!(
        summary.contains("Run complete") && summary.contains("kddcup99"),
        "{summary}"
    );
    // No partial folder and no temporaries are left behind.
    assert_eq!(
        tree(&out),
        [
            "index.html",
            "index.md",
            "linear",
            "linear/cells.csv",
            "linear/cells.json",
            "linear/fig1a_adult_error_vs_epsilon.svg",
            "linear/fig1b_kdd_error_vs_epsilon.svg",
            "linear/fig3a_adult_error_vs_lambda.svg",
            "linear/fig3b_kdd_error_vs_lambda.svg",
            "linear/run.json",
            "linear/summary.md",
        ]
    );
    // The index lists the experiment with its headline numbers beside the paper's.
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(
        index.contains("[linear/summary.md](linear/summary.md)"),
        "{index}"
    );
    assert!(index.contains("| 0.1536 |"), "{index}");
    std::fs::remove_dir_all(&scratch).unwrap();
}
