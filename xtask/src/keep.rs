//! One rule for every writer of results: a run replaces earlier results only if it holds at
//! least what they hold — the same or a fuller mode (full ≥ quick) and every optional part
//! they have (predict's real-data part, bench peers' peer tools). A run that holds less
//! writes into a subfolder of the results' folder instead and says so in one line, so that
//! a quick check or a run without the data never wipes out an hour of full results.
//!
//! Each writer says what its run holds ([`Holdings`]) and reads what the earlier results
//! hold from the records it already writes (`run.json`'s or `cells.json`'s `mode`, the tools
//! of `peers.json`, …); unreadable or absent records count as no earlier results.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use crate::folder_lock::FolderLock;
use crate::safe_write::{OutDir, PathError};

/// The subfolder for a quick run over full results.
pub const QUICK_FOLDER: &str = "quick";
/// The subfolder for a run that lacks parts the earlier results have.
pub const PARTIAL_FOLDER: &str = "partial";

/// What a run's results hold: its mode and the optional parts it includes.
#[derive(Debug, Clone, PartialEq)]
pub struct Holdings {
    quick: bool,
    parts: BTreeSet<String>,
}

impl Holdings {
    /// A run in quick or full mode, with no optional parts.
    pub fn new(quick: bool) -> Self {
        Self {
            quick,
            parts: BTreeSet::new(),
        }
    }

    /// A run whose recorded mode is `mode` ("quick…" is quick, anything else full).
    pub fn from_mode(mode: &str) -> Self {
        Self::new(mode.starts_with("quick"))
    }

    /// The same, also holding `part`.
    pub fn with_part(mut self, part: impl Into<String>) -> Self {
        self.parts.insert(part.into());
        self
    }

    /// Why a run holding `self` must not replace results holding `earlier`, if it must not.
    fn shortfall(&self, earlier: &Holdings) -> Option<(&'static str, String)> {
        if self.quick && !earlier.quick {
            return Some((
                QUICK_FOLDER,
                "they are a full run and this one is quick".into(),
            ));
        }
        let lacking: Vec<&str> = earlier
            .parts
            .difference(&self.parts)
            .map(String::as_str)
            .collect();
        (!lacking.is_empty()).then(|| {
            (
                PARTIAL_FOLDER,
                format!("they include {} and this run does not", lacking.join(", ")),
            )
        })
    }
}

/// Claims `folder` for this run until the claim's last holder is dropped: a second run
/// that wants the same folder is refused at once (see [`FolderLock`]). The keep rule reads
/// the earlier results after the claim, so no other run can change them in between.
pub fn claim(folder: &Path) -> Result<Arc<FolderLock>, PathError> {
    FolderLock::take(folder).map(Arc::new)
}

/// Claims `folder` ([`claim`]) and says where the run's results go: `folder` itself when
/// the run holds at least what the results already there hold (`earlier`, read once the
/// folder is claimed), else a subfolder of it, announced on stderr. Either way the folder is
/// checked (see [`OutDir::prepare`]) for `files`, and holds the claim.
pub fn destination(
    folder: &Path,
    files: &[&str],
    this: &Holdings,
    earlier: impl FnOnce(&Path) -> Option<Holdings>,
) -> Result<OutDir, PathError> {
    let lock = claim(folder)?;
    let earlier = earlier(folder);
    destination_claimed(&lock, folder, files, this, earlier.as_ref())
}

/// [`destination`] for a folder already claimed with `lock`, the results there holding
/// `earlier`.
pub fn destination_claimed(
    lock: &Arc<FolderLock>,
    folder: &Path,
    files: &[&str],
    this: &Holdings,
    earlier: Option<&Holdings>,
) -> Result<OutDir, PathError> {
    let Some((subfolder, why)) = earlier.and_then(|e| this.shortfall(e)) else {
        return Ok(OutDir::prepare(folder, files)?.holding(lock.clone()));
    };
    let aside = OutDir::prepare(&folder.join(subfolder), files)?.holding(lock.clone());
    eprintln!(
        "xtask: earlier results in {} kept ({why}); this run's results go to {}",
        folder.display(),
        aside.path().display()
    );
    Ok(aside)
}

/// The JSON in `path`, if it is there and parses.
pub fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The holdings recorded by the `mode` field of the first of `files` in `folder` that has
/// one (no optional parts).
pub fn recorded_mode(folder: &Path, files: &[&str]) -> Option<Holdings> {
    files.iter().find_map(|file| {
        let record = read_json(&folder.join(file))?;
        Some(Holdings::from_mode(record.get("mode")?.as_str()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-keep-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_run_replaces_results_it_holds_at_least_as_much_as() {
        let full = Holdings::new(false).with_part("real data");
        for earlier in [Holdings::new(true), Holdings::new(false), full.clone()] {
            assert_eq!(full.shortfall(&earlier), None);
        }
        let quick = Holdings::new(true).with_part("real data");
        assert_eq!(quick.shortfall(&full).unwrap().0, QUICK_FOLDER);
        let lacking = Holdings::new(false);
        let (folder, why) = lacking.shortfall(&full).unwrap();
        assert_eq!(folder, PARTIAL_FOLDER);
        assert!(why.contains("real data"), "{why}");
    }

    #[test]
    fn a_lesser_run_goes_to_a_subfolder_and_reads_old_modes() {
        let dir = scratch("destination");
        std::fs::write(
            dir.join("cells.json"),
            r#"{"mode": "full (paper protocol)"}"#,
        )
        .unwrap();
        std::fs::write(dir.join("run.json"), "not json").unwrap();
        let earlier = recorded_mode(&dir, &["run.json", "cells.json"]);
        assert_eq!(earlier, Some(Holdings::new(false)));
        let lock = claim(&dir).unwrap();
        let aside = Holdings::new(true);
        let out = destination_claimed(&lock, &dir, &[], &aside, earlier.as_ref()).unwrap();
        assert_eq!(out.path(), dir.join(QUICK_FOLDER));
        let full = Holdings::new(false);
        let out = destination_claimed(&lock, &dir, &[], &full, earlier.as_ref()).unwrap();
        assert_eq!(out.path(), dir);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
