//! `cargo xtask datasets fetch`: puts the data files in the data directory, verified.

use std::path::PathBuf;
use std::process::Command;

use dp_datasets::{ADULT_FILES, DataDir, KDD_FILES};

/// Copies each file from `from`, or downloads it from the UCI repository with `curl`, unless
/// it is already there with the published checksum; then verifies it.
pub fn fetch(
    data_dir: Option<PathBuf>,
    from: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = DataDir::resolve(data_dir.as_deref());
    std::fs::create_dir_all(dir.path())?;
    for file in ADULT_FILES.iter().chain(&KDD_FILES) {
        if dir.verified(file).is_ok() {
            println!("{}: present, checksum ok", file.name);
            continue;
        }
        let target = dir.path().join(file.name);
        match &from {
            Some(mirror) => {
                std::fs::copy(mirror.join(file.name), &target).map_err(|e| {
                    format!("cannot copy {} from {}: {e}", file.name, mirror.display())
                })?;
            }
            None => {
                let status = Command::new("curl")
                    .args(["-fsSL", "-o"])
                    .arg(&target)
                    .arg(file.url)
                    .status()?;
                if !status.success() {
                    return Err(format!(
                        "downloading {} from {} failed ({status})",
                        file.name, file.url
                    )
                    .into());
                }
            }
        }
        dir.verified(file)?;
        println!("{}: fetched, checksum ok", file.name);
    }
    println!("data directory ready: {}", dir.path().display());
    Ok(())
}
