//! A ledger in a file: one format, one locking discipline, for every face.
//!
//! - **One file, whatever its name.** The path given is resolved to its canonical file
//!   (every symbolic link followed) before anything else; the lock is taken beside that
//!   file (`CANONICAL.lock`, an advisory `flock` released by the OS when the process ends,
//!   however it ends) and new contents are renamed over that file. A run through a symbolic
//!   link and a run through the real name take the same lock and write the same file; the
//!   link stays a link.
//! - **No second name that could fork it.** A hard link is a second name for the same file
//!   that a rename would split from it (the spend lands under one name, the other keeps the
//!   old spends), and no lock can tell two hard links apart from two ledgers. A ledger file
//!   with more than one hard link is therefore refused, naming the fix.
//! - **All or nothing.** New contents go to a temporary file beside the canonical one,
//!   synced, renamed over it, and the folder synced: a crash leaves the old ledger or the
//!   new one, never half of one.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ledger::{Ledger, LedgerError};

/// Largest ledger file read (a ledger is a list of spends, not data).
const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// What to do when another process holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockWait {
    /// Refuse at once, naming the holder (the command line: a run holds it for its whole
    /// fit).
    Refuse,
    /// Retry for up to this long, then refuse (Python: each charge holds it for
    /// milliseconds).
    For(Duration),
}

/// A ledger file, locked for as long as this value lives.
#[derive(Debug)]
pub struct LedgerFile {
    canonical: PathBuf,
    name: String,
    _lock: File,
}

fn io(name: &str, what: &str) -> impl Fn(std::io::Error) -> LedgerError {
    let (name, what) = (name.to_owned(), what.to_owned());
    move |e| LedgerError::Io {
        ledger: name.clone(),
        why: format!("{what}: {e}"),
    }
}

/// `path` with `.suffix` appended to its file name (`ledger.json.lock`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// Refuses a ledger that is not a regular file or has more than one hard link.
fn check_single_name(canonical: &Path, name: &str) -> Result<(), LedgerError> {
    let meta = std::fs::metadata(canonical).map_err(io(name, "cannot read it"))?;
    if !meta.is_file() {
        return Err(LedgerError::Unsafe {
            ledger: name.into(),
            why: "is not a regular file".into(),
        });
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(LedgerError::Unsafe {
                ledger: name.into(),
                why: format!(
                    "the file has {} hard links (names): a spend written through one name \
                     would leave the others holding the old spends, so the budget could be \
                     spent twice; keep one name (remove the other links — a symbolic link to \
                     it is safe)",
                    meta.nlink()
                ),
            });
        }
    }
    Ok(())
}

impl LedgerFile {
    /// Locks the ledger at `path` (through any symbolic links), or refuses: a file that
    /// does not exist or is not a regular file, a file with several hard links, a lock
    /// held by another process (at once, or after `wait`).
    pub fn lock(path: &Path, wait: LockWait) -> Result<Self, LedgerError> {
        let name = path.display().to_string();
        let canonical = std::fs::canonicalize(path).map_err(io(&name, "cannot read it"))?;
        check_single_name(&canonical, &name)?;
        let lock_path = sibling(&canonical, "lock");
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // A symbolic link planted as the lock is not followed.
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let mut file = options.open(&lock_path).map_err(|e| LedgerError::Io {
            ledger: name.clone(),
            why: format!(
                "cannot open its lock {} (it must be a plain file): {e}",
                lock_path.display()
            ),
        })?;
        let deadline = match wait {
            LockWait::Refuse => None,
            LockWait::For(d) => Some(Instant::now() + d),
        };
        loop {
            match file.try_lock() {
                Ok(()) => break,
                Err(std::fs::TryLockError::WouldBlock) => {
                    if deadline.is_some_and(|d| Instant::now() < d) {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    let mut holder = String::new();
                    let _ = file.read_to_string(&mut holder);
                    return Err(LedgerError::Held {
                        ledger: name,
                        holder: holder.trim().to_owned(),
                    });
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(LedgerError::Io {
                        ledger: name,
                        why: format!(
                            "cannot lock {}: {e}; refusing to spend without the lock",
                            lock_path.display()
                        ),
                    });
                }
            }
        }
        let _ = file.set_len(0);
        let _ = file.write_all(std::process::id().to_string().as_bytes());
        // A link may have been added while we waited.
        check_single_name(&canonical, &name)?;
        Ok(Self {
            canonical,
            name,
            _lock: file,
        })
    }

    /// The name the ledger was given (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The canonical file every name of this ledger resolves to.
    pub fn canonical(&self) -> &Path {
        &self.canonical
    }

    /// Reads and checks the ledger.
    pub fn load(&self) -> Result<Ledger, LedgerError> {
        read(&self.canonical, &self.name)
    }

    /// Writes `ledger` atomically over the canonical file (temporary file, sync, rename,
    /// folder sync), giving a ledger from before identities its identity.
    pub fn store(&self, ledger: &mut Ledger) -> Result<(), LedgerError> {
        ledger.ensure_identity()?;
        check_single_name(&self.canonical, &self.name)?;
        let temp = sibling(&self.canonical, &format!("dpml-{}.tmp", std::process::id()));
        write_new(&temp, ledger, &self.name)
            .and_then(|()| {
                std::fs::rename(&temp, &self.canonical).map_err(io(&self.name, "cannot write it"))
            })
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&temp);
            })?;
        sync_folder(&self.canonical);
        Ok(())
    }

    /// Creates a ledger file at `path` holding `ledger`; never replaces an existing file.
    pub fn create(path: &Path, ledger: &Ledger) -> Result<(), LedgerError> {
        let name = path.display().to_string();
        let temp = sibling(path, &format!("dpml-{}.tmp", std::process::id()));
        let placed = write_new(&temp, ledger, &name)
            .and_then(|()| std::fs::hard_link(&temp, path).map_err(io(&name, "cannot create it")));
        let _ = std::fs::remove_file(&temp);
        placed?;
        sync_folder(path);
        Ok(())
    }
}

/// Reads and checks the ledger in the file `path` (no lock: for showing it).
pub fn read(path: &Path, name: &str) -> Result<Ledger, LedgerError> {
    let file = File::open(path).map_err(io(name, "cannot read it"))?;
    let mut text = String::new();
    file.take(MAX_LEDGER_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io(name, "cannot read it"))?;
    if text.len() as u64 > MAX_LEDGER_BYTES {
        return Err(LedgerError::Corrupt {
            ledger: name.into(),
            why: format!("larger than {MAX_LEDGER_BYTES} bytes"),
        });
    }
    let ledger: Ledger = serde_json::from_str(&text).map_err(|e| LedgerError::Corrupt {
        ledger: name.into(),
        why: e.to_string(),
    })?;
    ledger.check(name)
}

/// Writes `ledger` as JSON to the new file `path`, synced.
fn write_new(path: &Path, ledger: &Ledger, name: &str) -> Result<(), LedgerError> {
    let mut text = serde_json::to_string_pretty(ledger).expect("a ledger serializes");
    text.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(io(name, "cannot write it"))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io(name, "cannot write it"))
}

/// Syncs the folder holding `path`, so a rename into it survives a crash (best effort:
/// not every platform can open a folder).
fn sync_folder(path: &Path) {
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if let Ok(dir) = File::open(folder) {
        let _ = dir.sync_all();
    }
}
