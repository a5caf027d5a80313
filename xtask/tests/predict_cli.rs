//! `cargo xtask reproduce predict --quick` as a user runs it without the data files: the
//! synthetic part runs, the real-data part is skipped with a note, every output of the part
//! that ran is written (and no placeholder figure of the part that did not), and the command
//! fails naming the part that could not run.

use std::process::Command;

#[test]
fn reproduce_predict_quick_runs_without_data_files() {
    let scratch = std::env::temp_dir().join(format!("xtask-predict-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let (data, out) = (scratch.join("no-data"), scratch.join("results"));
    std::fs::create_dir_all(&data).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["reproduce", "predict", "--quick", "--data-dir"])
        .arg(&data)
        .arg("--out")
        .arg(&out)
        .env_remove("DP_ML_DATA_DIR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("these experiments could not run: predict (real data)"),
        "{stderr}"
    );
    let mut files: Vec<String> = std::fs::read_dir(out.join("predict"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "cells.csv",
            "cells.json",
            "run.json",
            "summary.md",
            "thresholds_eps0.1_noise0.1.svg",
            "thresholds_eps0.1_noise0.svg",
            "thresholds_eps1_noise0.1.svg",
            "thresholds_eps1_noise0.svg",
        ]
    );
    let summary = std::fs::read_to_string(out.join("predict/summary.md")).unwrap();
    assert!(summary.contains("exponential projected walk"), "{summary}");
    assert!(
        summary.contains("Not run: skipped: data files missing"),
        "{summary}"
    );
    assert!(
        summary.contains("Part (b) did not run, so no figure of it is written"),
        "{summary}"
    );
    let _ = std::fs::remove_dir_all(&scratch);
}
