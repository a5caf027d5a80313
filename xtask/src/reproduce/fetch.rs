//! `reproduce` gets its data itself: before any experiment runs, the data files missing
//! from the data directory are fetched (checksummed, with a progress bar) unless
//! `--offline` is given. A failed fetch is not fatal here: the experiments that need no
//! files still run, the others refuse with their own message, and the run's final error
//! repeats why the data is missing and what to do.

use dp_datasets::{ADULT_FILES, DataDir, DataFile, KDD_FILES};

use super::Options;
use super::preflight::{DEFAULT_ORIGIN, origin};
use crate::datasets_cmd::{DATA_URL_VARIABLE, Source, fetch_files};

/// What to do about the data files, when some are missing.
pub const WHAT_TO_DO: &str = "to get them: run `cargo xtask datasets fetch` on a machine with \
    internet (it downloads from the UCI repository and verifies SHA-256 checksums), or \
    `cargo xtask datasets fetch --from DIR` to copy them from a local folder, or point \
    --data-dir (or DP_ML_DATA_DIR) at a folder that holds them";

/// Why data files are still missing after [`ensure_data`], for the run's final message.
pub struct DataShortfall {
    pub why: String,
}

/// Fetches the data files missing from the data directory into it, unless `offline`.
/// `Ok(())` when every file is there afterwards (their checksums are checked by the
/// experiments, before they run); otherwise why not, already printed.
pub fn ensure_data(options: &Options, offline: bool) -> Result<(), DataShortfall> {
    let dir = DataDir::resolve(options.data_dir.as_deref());
    // Something else under a file's name (a pipe, a folder) is not missing: the
    // experiments' own checks name it, and nothing is fetched over it.
    let missing: Vec<&DataFile> = dir
        .missing(&ADULT_FILES)
        .into_iter()
        .chain(dir.missing(&KDD_FILES))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = missing.iter().map(|f| f.name).collect();
    let place = format!(
        "{} (data directory taken from {})",
        dir.path().display(),
        origin(options)
    );
    let why = if let Some(why) = folder_problem(&dir, options) {
        why
    } else if offline {
        format!(
            "missing {} in {place}; not fetched because of --offline",
            names.join(", ")
        )
    } else if let Some(why) = create_default_folder(&dir) {
        why
    } else {
        eprintln!(
            "data: {} missing in {place}; fetching (use --offline to skip)",
            names.join(", ")
        );
        let failures = fetch_files(dir.path(), &missing, &Source::Download);
        if failures.is_empty() {
            return Ok(());
        }
        let failed: Vec<&str> = failures.iter().map(|(name, _)| *name).collect();
        format!(
            "fetching {} into {place} failed (first error: {}; the download address is the \
             UCI repository unless {DATA_URL_VARIABLE} names another)",
            failed.join(", "),
            failures[0].1
        )
    };
    eprintln!("data: {why}\ndata: {WHAT_TO_DO}");
    Err(DataShortfall { why })
}

/// What is wrong with `dir` itself, if anything, whether or not files would be fetched:
/// a path that is not a folder, or a folder the user named that does not exist (a typo is
/// reported, not filled). The default folder may be missing: it is created when fetching.
fn folder_problem(dir: &DataDir, options: &Options) -> Option<String> {
    let path = dir.path();
    if path.is_dir() {
        return None;
    }
    let named = origin(options) != DEFAULT_ORIGIN;
    if path.exists() || named {
        let what = if path.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return Some(format!(
            "data directory {} {what} (taken from {}); nothing was fetched into it",
            path.display(),
            origin(options)
        ));
    }
    None
}

/// Creates the data folder if it is missing (after [`folder_problem`] found nothing wrong,
/// only the default one can be), or says why it cannot.
fn create_default_folder(dir: &DataDir) -> Option<String> {
    let path = dir.path();
    match std::fs::create_dir_all(path) {
        Ok(()) => None,
        Err(e) => Some(format!(
            "cannot create the data directory {}: {e}",
            path.display()
        )),
    }
}
