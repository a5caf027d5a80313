//! Helpers shared by the command-line tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The data files, under their published names.
pub const DATA_FILES: [&str; 4] = [
    "adult.data",
    "adult.test",
    "adult.names",
    "kddcup.data_10_percent.gz",
];

/// Runs xtask with `args`, without the data directory and download address of the
/// environment (or with `data_url` as the download address).
pub fn xtask_with(args: &[&str], data_url: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xtask"));
    command
        .args(args)
        .env_remove("DP_ML_DATA_DIR")
        .env_remove("DP_ML_DATA_URL");
    if let Some(url) = data_url {
        command.env("DP_ML_DATA_URL", url);
    }
    command.output().unwrap()
}

/// A fresh, empty folder for one test (`test` must be unique across the test files).
pub fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xtask-cli-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Writes a sentinel into each of `names` (paths under `out`), as results of an earlier
/// run or a user's own files; returns each path with its bytes.
pub fn sentinels(out: &Path, names: &[&str]) -> Vec<(PathBuf, Vec<u8>)> {
    names
        .iter()
        .map(|name| {
            let path = out.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let bytes = format!("sentinel: earlier content of {name}\n").into_bytes();
            std::fs::write(&path, &bytes).unwrap();
            (path, bytes)
        })
        .collect()
}

/// Every sentinel still holds its bytes.
pub fn assert_sentinels_intact(sentinels: &[(PathBuf, Vec<u8>)]) {
    for (path, bytes) in sentinels {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
}
