//! `cargo xtask datasets fetch`: puts the data files in the data directory, verified.
//!
//! Nothing unverified ever carries a data file's name: each file arrives under a temporary
//! name in the data directory, is checked against its published SHA-256, and only then is
//! renamed into place. A mismatch deletes the temporary.

use std::path::{Path, PathBuf};
use std::process::Command;

use dp_datasets::{ADULT_FILES, DataDir, DataFile, KDD_FILES, sha256_hex};

use crate::safe_write::{PathError, Temporary, temporary_name};

/// Where the files come from.
enum Source<'a> {
    /// A local folder holding the files under their published names.
    Mirror(&'a Path),
    /// The UCI repository, with `curl`.
    Download,
}

/// Copies each file from `from`, or downloads it from the UCI repository with `curl`, unless
/// it is already there with the published checksum. Both folders are checked before
/// anything is written; every file is attempted and every failure reported.
pub fn fetch(
    data_dir: Option<PathBuf>,
    from: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(mirror) = &from
        && !mirror.is_dir()
    {
        let why = if mirror.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return Err(format!("--from {} {why}; nothing was fetched", mirror.display()).into());
    }
    let source = from.as_deref().map_or(Source::Download, Source::Mirror);
    let dir = DataDir::resolve(data_dir.as_deref());
    if dir.path().exists() && !dir.path().is_dir() {
        return Err(format!(
            "data directory {} exists and is not a folder; nothing was fetched",
            dir.path().display()
        )
        .into());
    }
    std::fs::create_dir_all(dir.path())
        .map_err(PathError::on("create data directory", dir.path()))?;
    let mut failures = Vec::new();
    for file in ADULT_FILES.iter().chain(&KDD_FILES) {
        if dir.verified(file).is_ok() {
            println!("{}: present, checksum ok", file.name);
            continue;
        }
        match install(file, &source, dir.path()) {
            Ok(()) => println!("{}: fetched, checksum ok", file.name),
            Err(e) => {
                eprintln!("{}: {e}", file.name);
                failures.push(file.name);
            }
        }
    }
    if !failures.is_empty() {
        return Err(format!(
            "could not fetch {} into {} (see above); files already there were left as they were",
            failures.join(", "),
            dir.path().display()
        )
        .into());
    }
    println!("data directory ready: {}", dir.path().display());
    Ok(())
}

/// Fetches `file` to a temporary name in `dir`, verifies it, and renames it into place.
fn install(file: &DataFile, source: &Source<'_>, dir: &Path) -> Result<(), String> {
    let target = dir.join(file.name);
    let temporary = Temporary::new(temporary_name(&target));
    let origin = match source {
        Source::Mirror(mirror) => {
            let from = mirror.join(file.name);
            std::fs::copy(&from, temporary.path()).map_err(|e| {
                format!("cannot copy {} into {}: {e}", from.display(), dir.display())
            })?;
            from.display().to_string()
        }
        Source::Download => {
            download(file.url, temporary.path())?;
            file.url.to_owned()
        }
    };
    let found = sha256_hex(temporary.path()).map_err(|e| e.to_string())?;
    if found != file.sha256 {
        return Err(format!(
            "checksum mismatch for {origin}: expected SHA-256 {}, found {found}; not installed \
             (the copy was deleted)",
            file.sha256
        ));
    }
    temporary.keep_as(&target).map_err(|e| e.to_string())
}

/// Downloads `url` to `path` with curl (which fails on HTTP errors with `-f`).
fn download(url: &str, path: &Path) -> Result<(), String> {
    let status = Command::new("curl")
        .args(["-fsSL", "-o"])
        .arg(path)
        .arg(url)
        .status()
        .map_err(|e| format!("cannot run curl to download {url}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("downloading {url} failed (curl {status})"))
    }
}
