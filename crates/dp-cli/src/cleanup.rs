//! Files a run must not leave behind, even when a signal ends it.
//!
//! `Drop` does not run when SIGINT or SIGTERM ends a process, so the row cache of an
//! out-of-core fit (a plaintext copy of the training rows) and a staged output would stay.
//! Every such file is registered here when it is created; a handler thread (signal-hook)
//! removes every registered file on SIGINT or SIGTERM and exits with 128 + the signal's
//! number (130, 143), as a shell reports a process that signal ended. Registration and
//! creation happen under one lock, which the handler takes too: a file is never created
//! unseen by it. Outputs are moved into place under the same lock, so a signal during
//! the move waits for it: all of a run's outputs are in place, or none.
//!
//! Files left by a run that ended without removing them (SIGKILL, a power cut) are swept by
//! the next run that works in the same folder: [`sweep_stale`] removes the files of our
//! exact naming pattern whose process no longer exists.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use crate::{Failure, fail};

/// The files to remove if a signal ends the run.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The registry, held: while it is held, the signal handler waits.
pub struct Registry(MutexGuard<'static, Vec<PathBuf>>);

/// Takes the registry (waits for the handler if it is removing files: it then exits).
pub fn registry() -> Registry {
    Registry(PENDING.lock().unwrap_or_else(PoisonError::into_inner))
}

impl Registry {
    /// Creates a file with `create` and registers `path`, under the lock.
    pub fn create<T>(
        &mut self,
        path: &Path,
        create: impl FnOnce(&Path) -> io::Result<T>,
    ) -> io::Result<T> {
        let made = create(path)?;
        self.0.push(path.to_owned());
        Ok(made)
    }

    /// Forgets `path` (removed, or moved into place).
    pub fn forget(&mut self, path: &Path) {
        self.0.retain(|p| p != path);
    }
}

/// Removes `path` and forgets it.
pub fn remove(path: &Path) {
    let mut registry = registry();
    let _ = std::fs::remove_file(path);
    registry.forget(path);
}

/// The exit status of a run a signal ended: 128 + its number, as a shell reports it.
fn exit_status(signal: i32) -> i32 {
    128 + signal
}

/// Installs the handler of SIGINT and SIGTERM (see the module's documentation).
#[cfg(unix)]
pub fn install() -> Result<(), Failure> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .map_err(|e| fail(format!("cannot install the signal handler: {e}")))?;
    std::thread::Builder::new()
        .name("dpml-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                let registry = registry();
                for path in registry.0.iter() {
                    let _ = std::fs::remove_file(path);
                }
                std::process::exit(exit_status(signal));
            }
        })
        .map_err(|e| fail(format!("cannot install the signal handler: {e}")))?;
    Ok(())
}

/// Without Unix signals there is nothing to install (files are removed by `Drop`).
#[cfg(not(unix))]
pub fn install() -> Result<(), Failure> {
    Ok(())
}

/// Removes the files in `folder` named `{prefix}{PID}{rest}{suffix}` — our exact pattern:
/// `PID` decimal digits, `rest` `-`-separated groups of `groups` more digit runs — whose
/// process no longer exists. Only regular files (never a link, never a folder); a file of
/// this run or of a live process is left alone. Best effort: what cannot be listed or
/// removed is left.
pub fn sweep_stale(folder: &Path, prefix: &str, suffix: &str, groups: usize) {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| stale_pid(n, prefix, suffix, groups))
        else {
            continue;
        };
        if pid == std::process::id() || process_exists(pid) {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The process id in `name` if it matches `{prefix}{PID}(-{DIGITS}){groups}{suffix}`.
fn stale_pid(name: &str, prefix: &str, suffix: &str, groups: usize) -> Option<u32> {
    let middle = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    let parts: Vec<&str> = middle.split('-').collect();
    let digits = |p: &&str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    if parts.len() != groups + 1 || !parts.iter().all(digits) {
        return None;
    }
    parts[0].parse().ok()
}

/// Whether a process with id `pid` exists (signal 0 asks without sending anything). An
/// answer other than "no such process" counts as yes: nothing of a live run is removed.
#[cfg(unix)]
fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return true;
    };
    !matches!(
        rustix::process::test_kill_process(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

#[cfg(not(unix))]
fn process_exists(_pid: u32) -> bool {
    true
}

#[cfg(test)]
#[path = "cleanup_tests.rs"]
mod tests;
