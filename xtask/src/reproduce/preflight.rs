//! Checks before a reproduction runs: that the data it needs is there and is the
//! published data, so that nothing runs (and no result is replaced) when it is not.

use dp_datasets::{DATA_DIR_VARIABLE, DataDir, DataFile, HOW_TO_GET};

use super::linear::Experiment;
use super::{Loader, Options};

/// What [`origin`] says of the default data directory.
pub const DEFAULT_ORIGIN: &str = "the default, data/ in the workspace";

/// Where the data directory came from, for error messages.
pub fn origin(options: &Options) -> &'static str {
    match (&options.data_dir, std::env::var_os(DATA_DIR_VARIABLE)) {
        (Some(_), _) => "--data-dir",
        (None, Some(v)) if !v.is_empty() => "$DP_ML_DATA_DIR",
        _ => DEFAULT_ORIGIN,
    }
}

/// Fails, before any experiment runs, unless every requested experiment's files are in
/// `dir` with their published checksums; lists every missing file at once.
pub fn check_data(
    dir: &DataDir,
    experiments: &[(Experiment, &[DataFile], Loader)],
    options: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    // A path that is not a folder is reported as such, not as every file missing.
    if experiments.iter().any(|(_, files, _)| !files.is_empty()) {
        dir.check_folder()?;
    }
    let mut missing = Vec::new();
    for (experiment, files, _) in experiments {
        for file in dir.missing(files) {
            missing.push(format!("{} (needed by {})", file.name, experiment.name));
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "cannot run the requested experiments: missing {} in {} (data directory taken \
             from {}); nothing was run and earlier results are untouched; {HOW_TO_GET}",
            missing.join(", "),
            dir.path().display(),
            origin(options)
        )
        .into());
    }
    for (_, files, _) in experiments {
        for file in *files {
            dir.verified(file)?;
        }
    }
    Ok(())
}
