//! One run's exclusive claim on a results folder (see [`FolderLock`]).

use std::path::{Path, PathBuf};

use crate::interrupt;
use crate::safe_write::{PathError, check_folder_path, missing_ancestors, remove_created};

/// The hidden file a run locks in the folder it writes results into.
pub const LOCK_FILE: &str = ".xtask-run.lock";

/// One run's exclusive claim on a results folder, so that two runs never decide what to
/// keep from the same earlier results and then write over each other (a quick run that
/// finishes second would replace a full one). It is an advisory lock (`flock`) on
/// [`LOCK_FILE`] in the folder, which records the holder's process id; the OS releases it
/// when the process ends, however it ends. Dropping the claim removes the lock file and the
/// folders taking it created, if nothing else was put in them; so does an interrupted run
/// (see `interrupt`), which would not drop it.
#[derive(Debug)]
pub struct FolderLock {
    file: std::fs::File,
    path: PathBuf,
    created: Vec<PathBuf>,
    /// Its registration for release on interrupt.
    registered: Option<u64>,
}

impl FolderLock {
    /// Claims `folder` (creating it if needed), or refuses at once, naming the process that
    /// holds it. A filesystem without locks gets a warning and an unlocked run.
    pub fn take(folder: &Path) -> Result<Self, PathError> {
        let _whole = interrupt::defer();
        check_folder_path(folder)?;
        let created = missing_ancestors(folder);
        std::fs::create_dir_all(folder).map_err(PathError::on("create output folder", folder))?;
        let path = folder.join(LOCK_FILE);
        match Self::lock_file(&path) {
            Ok(file) => {
                // A second handle on the same open file: the interrupt handler releases the
                // claim as `drop` would. Without one, the OS still drops the lock at exit.
                let registered = file.try_clone().ok().map(|handle| {
                    let (path, created) = (path.clone(), created.clone());
                    interrupt::register(interrupt::Claim {
                        release: Box::new(move || release(&handle, &path, &created)),
                    })
                });
                Ok(Self {
                    file,
                    path,
                    created,
                    registered,
                })
            }
            Err(refused) => {
                remove_created(&created);
                Err(refused)
            }
        }
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
                    return Err(PathError::because(
                        "write results in",
                        folder,
                        format!(
                            "another xtask run{process} is writing results there; wait \
                             for it to finish or choose another --out"
                        ),
                    ));
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
        Err(PathError::because(
            "lock",
            path,
            "it was replaced each time it was locked",
        ))
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
    let not_plain = |what: String| {
        PathError::because(
            "use as lock file",
            path,
            format!("it is {what}, not a plain file; remove it if no xtask run is writing there"),
        )
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
        let _whole = interrupt::defer();
        if let Some(id) = self.registered {
            interrupt::unregister(id);
        }
        release(&self.file, &self.path, &self.created);
    }
}

/// Releases a claim: its lock `file` at `path`, and the folders it `created` if empty.
fn release(file: &std::fs::File, path: &Path, created: &[PathBuf]) {
    // Removed while still locked: a run that opened it meanwhile sees it unlinked. Only if
    // it is still this claim's file: one put there since is another's to remove.
    if same_file(file, path) {
        let _ = std::fs::remove_file(path);
    }
    let _ = file.unlock();
    remove_created(created);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safe_write::OutDir;
    use crate::safe_write::tests::{names, scratch};

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
}
