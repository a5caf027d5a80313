//! Output folders checked before any work, and files replaced atomically.
//!
//! A result file is written under a temporary name in its own folder and then renamed over
//! the old one, so an interrupted or failing run leaves either the old file or the new one,
//! never a half-written one. Folders are probed for writability up front, so a bad `--out`
//! fails in a second instead of after a long run; the folders the probe had to create are
//! removed again right away and created for real by the first file written, so a run that
//! fails before writing leaves no empty folder behind.

use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::folder_lock::FolderLock;

/// An OS error, with what was being done and the path it concerns.
#[derive(Debug)]
pub struct PathError {
    action: &'static str,
    path: PathBuf,
    source: std::io::Error,
}

impl PathError {
    /// Wraps an `io::Error` from `action` on `path`.
    pub fn on(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| Self {
            action,
            path,
            source,
        }
    }
}

impl PathError {
    /// A refusal of `action` on `path` for the reason `why` (no OS error behind it).
    pub fn because(action: &'static str, path: &Path, why: impl Into<String>) -> Self {
        Self {
            action,
            path: path.to_path_buf(),
            source: std::io::Error::other(why.into()),
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot {} {}: {}",
            self.action,
            self.path.display(),
            self.source
        )
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// A folder that existed and accepted a file when it was prepared.
#[derive(Debug, Clone)]
pub struct OutDir {
    path: PathBuf,
    /// The claim of the run writing here, if it took one (see [`FolderLock`]).
    lock: Option<Arc<FolderLock>>,
}

impl OutDir {
    /// Checks that `path` (created with its parents if needed) accepts a file, and that none
    /// of `files` is a folder there (the final rename would fail on it). Folders it had to
    /// create are removed again: [`OutDir::write`] creates them when a file is written.
    pub fn prepare(path: &Path, files: &[&str]) -> Result<Self, PathError> {
        // An interrupt waits for the probe to be removed, and the folders it created.
        let _probing = crate::interrupt::defer();
        check_folder_path(path)?;
        let created = missing_ancestors(path);
        let probed = std::fs::create_dir_all(path)
            .map_err(PathError::on("create output folder", path))
            .and_then(|()| {
                let probe = temporary_name(&path.join("write-probe"));
                create_new(&probe).map_err(PathError::on("write in output folder", path))?;
                std::fs::remove_file(&probe).map_err(PathError::on("remove", &probe))
            });
        remove_created(&created);
        probed?;
        for name in files {
            let target = path.join(name);
            if target.is_dir() {
                return Err(PathError::because("replace", &target, "it is a folder"));
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
            lock: None,
        })
    }

    /// The same folder, holding `lock` (shared by its clones) until the last is dropped.
    pub fn holding(mut self, lock: Arc<FolderLock>) -> Self {
        self.lock = Some(lock);
        self
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces `name` in the folder by `contents` atomically (creating the folder first if
    /// it is not there yet).
    /// An interrupt waits for the file to be in place (see `interrupt`), and then
    /// regenerates the index of `reproduce`'s results.
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<(), PathError> {
        let _writing = crate::interrupt::defer();
        std::fs::create_dir_all(&self.path)
            .map_err(PathError::on("create output folder", &self.path))?;
        write_atomically(&self.path.join(name), contents.as_ref())?;
        crate::interrupt::wrote_results();
        Ok(())
    }
}

/// Refuses `path` when it, or the nearest of its ancestors that is there, is not a folder
/// (a file, or a symbolic link to nothing or to a file): creating folders under it would
/// fail with an OS message ("File exists") that does not say why.
pub(crate) fn check_folder_path(path: &Path) -> Result<(), PathError> {
    let Some((there, meta)) = path
        .ancestors()
        .filter(|p| !p.as_os_str().is_empty())
        .find_map(|p| Some((p, std::fs::symlink_metadata(p).ok()?)))
    else {
        return Ok(());
    };
    if there.is_dir() {
        return Ok(());
    }
    let what = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(there).unwrap_or_default();
        let pointee = if there.exists() {
            "which is not a folder"
        } else {
            "which does not exist"
        };
        format!("a symbolic link to {}, {pointee}", target.display())
    } else {
        "there and not a folder".to_string()
    };
    let why = if there == path {
        format!("it is {what}")
    } else {
        format!("{} is {what}", there.display())
    };
    Err(PathError::because("use as output folder", path, why))
}

/// Removes `created` (folders a call made, deepest first) where they are still empty:
/// nothing that was there before, and nothing put in them since.
pub(crate) fn remove_created(created: &[PathBuf]) {
    for folder in created {
        let _ = std::fs::remove_dir(folder);
    }
}

/// `path` and those of its ancestors that do not exist, deepest first.
pub(crate) fn missing_ancestors(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .take_while(|p| !p.as_os_str().is_empty() && !p.exists())
        .map(Path::to_path_buf)
        .collect()
}

/// A hidden name beside `target`, unique to this process, for a file being written.
/// The name is unpredictable (process id, a counter and a randomly keyed hash of both), so
/// that nobody sharing the folder can plant a link under it in advance; files are created
/// with `create_new`, which refuses to follow one.
pub fn temporary_name(target: &Path) -> PathBuf {
    use std::hash::BuildHasher;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy());
    let (pid, count) = (std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let unique = std::collections::hash_map::RandomState::new().hash_one((pid, count));
    target.with_file_name(format!(".{name}.partial-{pid}-{unique:016x}"))
}

/// Creates `path`, refusing to open anything already there (a planted link included).
fn create_new(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

/// Deletes its file when dropped unless [`Temporary::keep_as`] renamed it into place: a
/// failure on any path leaves no temporary behind.
pub struct Temporary {
    path: Option<PathBuf>,
}

impl Temporary {
    /// Guards `path` (which may not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self { path: Some(path) }
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        self.path.as_deref().expect("set until kept")
    }

    /// Renames the temporary file to `target`, replacing it.
    pub fn keep_as(mut self, target: &Path) -> Result<(), PathError> {
        let path = self.path.take().expect("set until kept");
        std::fs::rename(&path, target).map_err(|source| {
            let _ = std::fs::remove_file(&path);
            PathError {
                action: "move into place",
                path: target.to_path_buf(),
                source,
            }
        })
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes `contents` to a temporary file beside `target`, flushes it to disk and renames it
/// over `target`.
pub fn write_atomically(target: &Path, contents: &[u8]) -> Result<(), PathError> {
    // An interrupt waits until the temporary is renamed into place or removed.
    let _writing = crate::interrupt::defer();
    let temporary = Temporary::new(temporary_name(target));
    let mut file =
        create_new(temporary.path()).map_err(PathError::on("create", temporary.path()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(PathError::on("write", temporary.path()))?;
    drop(file);
    temporary.keep_as(target)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::folder_lock::FolderLock;

    pub(crate) fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-safe-write-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn atomic_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = scratch("replace");
        let out = OutDir::prepare(&dir.join("new/nested"), &["a.txt"]).unwrap();
        out.write("a.txt", "old").unwrap();
        out.write("a.txt", "new").unwrap();
        assert_eq!(
            std::fs::read_to_string(out.path().join("a.txt")).unwrap(),
            "new"
        );
        assert_eq!(names(out.path()), ["a.txt"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn checking_a_new_folder_leaves_nothing_until_a_file_is_written() {
        let dir = scratch("lazy");
        let out = OutDir::prepare(&dir.join("new/nested"), &["a.txt"]).unwrap();
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        out.write("a.txt", "x").unwrap();
        assert_eq!(names(out.path()), ["a.txt"]);
        // An existing empty folder is never removed.
        std::fs::create_dir_all(dir.join("kept")).unwrap();
        OutDir::prepare(&dir.join("kept/inner"), &[]).unwrap();
        assert_eq!(names(&dir), ["kept", "new"]);
        assert!(names(&dir.join("kept")).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_an_out_folder_that_is_a_file_or_under_one() {
        let dir = scratch("file");
        let file = dir.join("results");
        std::fs::write(&file, "keep me").unwrap();
        for path in [file.clone(), file.join("linear")] {
            let err = OutDir::prepare(&path, &[]).unwrap_err().to_string();
            assert!(err.contains(&path.display().to_string()), "{err}");
        }
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn rejects_a_symbolic_link_to_nothing_naming_it() {
        let dir = scratch("dangling");
        let link = dir.join("results");
        std::os::unix::fs::symlink(dir.join("gone"), &link).unwrap();
        for (path, names) in [(link.clone(), "it is"), (link.join("linear"), "results is")] {
            for err in [
                OutDir::prepare(&path, &[]).unwrap_err().to_string(),
                FolderLock::take(&path).unwrap_err().to_string(),
            ] {
                assert!(err.contains(names), "{err}");
                assert!(
                    err.contains("symbolic link") && err.contains("does not exist"),
                    "{err}"
                );
            }
        }
        assert_eq!(names(&dir), ["results"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_an_output_file_name_taken_by_a_folder() {
        let dir = scratch("folder-target");
        std::fs::create_dir_all(dir.join("summary.md")).unwrap();
        let err = OutDir::prepare(&dir, &["summary.md"])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("summary.md") && err.contains("is a folder"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn rejects_a_failed_rename_without_leaving_the_temporary() {
        let dir = scratch("rename");
        std::fs::create_dir_all(dir.join("taken/inner")).unwrap();
        let err = write_atomically(&dir.join("taken"), b"x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("taken"), "{err}");
        assert_eq!(names(&dir), ["taken"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
