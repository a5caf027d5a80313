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
        check_folder_path(path)?;
        let created = missing_ancestors(path);
        let probed = std::fs::create_dir_all(path)
            .map_err(PathError::on("create output folder", path))
            .and_then(|()| {
                let probe = temporary_name(&path.join("write-probe"));
                create_new(&probe).map_err(PathError::on("write in output folder", path))?;
                std::fs::remove_file(&probe).map_err(PathError::on("remove", &probe))
            });
        // Only folders this call created, and only while empty: nothing that was there.
        for folder in &created {
            let _ = std::fs::remove_dir(folder);
        }
        probed?;
        for name in files {
            let target = path.join(name);
            if target.is_dir() {
                return Err(PathError {
                    action: "replace",
                    path: target,
                    source: std::io::Error::other("it is a folder"),
                });
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
    pub fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> Result<(), PathError> {
        std::fs::create_dir_all(&self.path)
            .map_err(PathError::on("create output folder", &self.path))?;
        write_atomically(&self.path.join(name), contents.as_ref())
    }
}

/// Refuses `path` when it, or the nearest of its ancestors that is there, is not a folder
/// (a file, or a symbolic link to nothing or to a file): creating folders under it would
/// fail with an OS message ("File exists") that does not say why.
fn check_folder_path(path: &Path) -> Result<(), PathError> {
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
    Err(PathError {
        action: "use as output folder",
        path: path.to_path_buf(),
        source: std::io::Error::other(why),
    })
}

/// The hidden file a run locks in the folder it writes results into.
pub const LOCK_FILE: &str = ".xtask-run.lock";

/// One run's exclusive claim on a results folder, so that two runs never decide what to
/// keep from the same earlier results and then write over each other (a quick run that
/// finishes second would replace a full one). It is an advisory lock (`flock`) on
/// [`LOCK_FILE`] in the folder, which records the holder's process id; the OS releases it
/// when the process ends, however it ends. Dropping the claim removes the lock file and the
/// folders taking it created, if nothing else was put in them.
#[derive(Debug)]
pub struct FolderLock {
    file: std::fs::File,
    path: PathBuf,
    created: Vec<PathBuf>,
}

impl FolderLock {
    /// Claims `folder` (creating it if needed), or refuses at once, naming the process that
    /// holds it. A filesystem without locks gets a warning and an unlocked run.
    pub fn take(folder: &Path) -> Result<Self, PathError> {
        check_folder_path(folder)?;
        let created = missing_ancestors(folder);
        std::fs::create_dir_all(folder).map_err(PathError::on("create output folder", folder))?;
        let path = folder.join(LOCK_FILE);
        let claimed = Self::lock_file(&path).map(|file| Self {
            file,
            path,
            created: created.clone(),
        });
        if claimed.is_err() {
            for folder in &created {
                let _ = std::fs::remove_dir(folder);
            }
        }
        claimed
    }

    /// The locked file at `path`. A run that finishes removes its lock file, so the file
    /// opened may be unlinked by the time it is locked: then it is opened again.
    fn lock_file(path: &Path) -> Result<std::fs::File, PathError> {
        for _ in 0..LOCK_ATTEMPTS {
            let mut file = open_lock_file(path)?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut holder = String::new();
                    let _ = std::io::Read::read_to_string(&mut file, &mut holder);
                    let holder = holder.trim();
                    let process = if holder.is_empty() {
                        String::new()
                    } else {
                        format!(" (process {holder})")
                    };
                    let folder = path.parent().unwrap_or(path);
                    return Err(PathError {
                        action: "write results in",
                        path: folder.to_path_buf(),
                        source: std::io::Error::other(format!(
                            "another xtask run{process} is writing results there; wait \
                             for it to finish or choose another --out"
                        )),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    eprintln!(
                        "xtask: cannot lock {} ({e}); this run is not protected against \
                         another writing the same results at once",
                        path.display()
                    );
                    return Ok(file);
                }
            }
            if !same_file(&file, path) {
                continue;
            }
            // The holder's id, for the message of a run that finds the folder taken.
            let _ = file.set_len(0);
            let _ = std::io::Write::write_all(&mut file, std::process::id().to_string().as_bytes());
            return Ok(file);
        }
        Err(PathError {
            action: "lock",
            path: path.to_path_buf(),
            source: std::io::Error::other("it was replaced each time it was locked"),
        })
    }
}

/// The lock file at `path`, opened for reading and writing (created if absent), refused
/// unless it is a plain file of one name: a symbolic link planted there is not followed and a
/// hard link is not written through, so the holder's id never lands in a file elsewhere.
fn open_lock_file(path: &Path) -> Result<std::fs::File, PathError> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Non-blocking so that a pipe planted there cannot hold the run at `open`.
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let not_plain = |what: String| PathError {
        action: "use as lock file",
        path: path.to_path_buf(),
        source: std::io::Error::other(format!(
            "it is {what}, not a plain file; remove it if no xtask run is writing there"
        )),
    };
    let file = options
        .open(path)
        .map_err(|e| match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => not_plain("a symbolic link".into()),
            Ok(meta) if meta.is_dir() => not_plain("a folder".into()),
            _ => PathError::on("open or create the lock file", path)(e),
        })?;
    let meta = file
        .metadata()
        .map_err(PathError::on("read the lock file", path))?;
    if !meta.is_file() {
        return Err(not_plain("a special file".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(not_plain(format!(
                "a file with {} names (hard links)",
                meta.nlink()
            )));
        }
    }
    Ok(file)
}

/// Locks taken on a lock file that had meanwhile been replaced before giving up.
const LOCK_ATTEMPTS: usize = 8;

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Removed while still locked: a run that opened it meanwhile sees it unlinked. Only
        // if it is still this claim's file: one put there since is another's to remove.
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
        let _ = self.file.unlock();
        for folder in &self.created {
            let _ = std::fs::remove_dir(folder);
        }
    }
}

/// Whether `file` is the file now at `path` (on Unix, the same device and inode).
#[cfg(unix)]
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Whether `file` is the file now at `path` (without inodes, assumed so).
#[cfg(not(unix))]
fn same_file(_file: &std::fs::File, _path: &Path) -> bool {
    true
}

/// `path` and those of its ancestors that do not exist, deepest first.
fn missing_ancestors(path: &Path) -> Vec<PathBuf> {
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
mod tests {
    use super::*;

    fn scratch(test: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("xtask-safe-write-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn names(dir: &Path) -> Vec<String> {
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

    #[cfg(unix)]
    #[test]
    fn a_lock_file_planted_as_a_link_is_refused_and_its_target_untouched() {
        let dir = scratch("planted-lock");
        let folder = dir.join("results");
        std::fs::create_dir_all(&folder).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let lock = folder.join(LOCK_FILE);
        let absent = dir.join("absent");
        let plant: [(&dyn Fn(), &str); 3] = [
            (
                &|| std::os::unix::fs::symlink(&victim, &lock).unwrap(),
                "symbolic link",
            ),
            (
                &|| std::os::unix::fs::symlink(&absent, &lock).unwrap(),
                "symbolic link",
            ),
            (&|| std::fs::hard_link(&victim, &lock).unwrap(), "2 names"),
        ];
        for (plant, named) in plant {
            plant();
            let err = FolderLock::take(&folder).unwrap_err().to_string();
            assert!(err.contains(named) && err.contains(LOCK_FILE), "{err}");
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
            assert!(!absent.exists());
            std::fs::remove_file(&lock).unwrap();
        }
        std::fs::create_dir(&lock).unwrap();
        let err = FolderLock::take(&folder).unwrap_err().to_string();
        assert!(err.contains("a folder, not a plain file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_released_claim_leaves_a_lock_file_put_there_since() {
        let dir = scratch("replaced-lock");
        let claim = FolderLock::take(&dir).unwrap();
        // Removed by hand while the run held it, and taken by another run meanwhile.
        std::fs::remove_file(dir.join(LOCK_FILE)).unwrap();
        let other = FolderLock::take(&dir).unwrap();
        drop(claim);
        assert_eq!(names(&dir), [LOCK_FILE]);
        drop(other);
        assert!(names(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_claimed_folder_refuses_a_second_claim_until_released() {
        let dir = scratch("lock");
        let folder = dir.join("new/linear");
        let first = FolderLock::take(&folder).unwrap();
        assert_eq!(names(&folder), [LOCK_FILE]);
        let err = FolderLock::take(&folder).unwrap_err().to_string();
        let holder = format!("another xtask run (process {})", std::process::id());
        assert!(err.contains(&holder) && err.contains("--out"), "{err}");
        assert!(err.contains(&folder.display().to_string()), "{err}");
        // Released: the lock file and the folders the claim created are gone…
        drop(first);
        assert!(names(&dir).is_empty(), "{:?}", names(&dir));
        // …but not a folder that was there, nor results written while it was held.
        let second = FolderLock::take(&folder).unwrap();
        drop(FolderLock::take(&dir).unwrap());
        assert!(dir.is_dir());
        OutDir::prepare(&folder, &[])
            .unwrap()
            .write("summary.md", "x")
            .unwrap();
        drop(second);
        assert_eq!(names(&folder), ["summary.md"]);
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
