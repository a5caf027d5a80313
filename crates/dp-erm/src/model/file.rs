//! Model files on disk: reads bounded before any allocation, writes that never leave a
//! half-written model behind. Every error names the path.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ErmError;

/// Reads `path` whole, refusing it — before reading or allocating — if it holds more than
/// `limit` bytes, or if it is not a regular file (opening a named pipe would wait for a
/// writer forever).
pub(super) fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, ErmError> {
    let kind = fs::metadata(path)
        .map_err(|e| os_error("cannot open", path, e))?
        .file_type();
    if !kind.is_file() {
        return Err(ErmError::ModelFileAccess(format!(
            "cannot open {}: not a regular file (a folder, a device or a pipe?)",
            path.display()
        )));
    }
    let file = File::open(path).map_err(|e| os_error("cannot open", path, e))?;
    let size = file
        .metadata()
        .map_err(|e| os_error("cannot read the metadata of", path, e))?
        .len();
    if size > limit {
        return Err(too_large(path, size, limit));
    }
    // The size is only a hint: the file may grow after the check, and pipes or devices
    // report 0. Reading at most limit + 1 bytes bounds the allocation whatever happens.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| os_error("cannot read", path, e))?;
    if bytes.len() as u64 > limit {
        // Only limit + 1 bytes were read: the size is a lower bound (a pipe, a device).
        return Err(ErmError::InvalidModelFile(format!(
            "{} holds more than {limit} bytes, more than the largest model file; not read \
             further",
            path.display()
        )));
    }
    Ok(bytes)
}

/// Refuses to save to `path` — before anything is encoded or written — unless it is a new
/// name or a regular file. A folder would only fail at the final rename, after the whole
/// model went to a temporary file; a symbolic link would be replaced by the rename,
/// leaving its target's old model in place, so it is refused rather than silently broken
/// (or silently followed to a file elsewhere); devices and pipes are not model files.
pub(super) fn check_destination(path: &Path) -> Result<(), ErmError> {
    let kind = match fs::symlink_metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(os_error("cannot save to", path, e)),
    };
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "it is a folder; give a file name inside it".to_owned()
    } else if kind.is_symlink() {
        let target = fs::read_link(path).map_or_else(|_| "?".into(), |t| t.display().to_string());
        format!(
            "it is a symbolic link (to {target}); a save neither follows nor replaces a \
             link: save to the target's path, or remove the link first"
        )
    } else {
        "it is not a regular file (a device, a pipe or a socket?)".to_owned()
    };
    Err(ErmError::ModelFileAccess(format!(
        "cannot save to {}: {what}",
        path.display()
    )))
}

/// Writes `bytes` to `path` through a temporary file in the same folder, synced and then
/// renamed over `path`. A rename within one file system is atomic, so `path` holds either
/// the old file or the complete new one, never a mix; on failure the temporary file is
/// removed.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ErmError> {
    let (temporary, mut file) = create_temporary(path)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| save_error(path, &format!("cannot write {}", temporary.display()), e))
        .and_then(|()| {
            drop(file);
            fs::rename(&temporary, path).map_err(|e| {
                save_error(
                    path,
                    &format!("cannot rename {} to it", temporary.display()),
                    e,
                )
            })
        });
    if written.is_err() {
        // Best effort: the save already failed, and that error is the one to report.
        let _ = fs::remove_file(&temporary);
    }
    written?;
    sync_folder(path);
    Ok(())
}

/// A new file beside `path`, named `.<name>.<pid>-<n>.tmp`. `create_new` never reuses an
/// existing file (a leftover of a crashed process with the same id is skipped).
fn create_temporary(path: &Path) -> Result<(PathBuf, File), ErmError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path.file_name().ok_or_else(|| {
        ErmError::ModelFileAccess(format!(
            "cannot save to {}: not a file name",
            path.display()
        ))
    })?;
    let folder = folder_of(path);
    let mut last_error = None;
    for _ in 0..16 {
        let mut temporary_name = OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(
            ".{}-{}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let temporary = folder.join(temporary_name);
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
        {
            Ok(file) => return Ok((temporary, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_error = Some(e),
            Err(e) => return Err(save_error(path, &create_failed(&folder), e)),
        }
    }
    let e = last_error.unwrap_or_else(|| io::Error::other("no free temporary name"));
    Err(save_error(path, &create_failed(&folder), e))
}

/// The folder `path` lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes the rename durable across a crash on Unix, where a directory entry is persisted by
/// syncing the folder. Best effort: the file is already complete and in place, and some
/// file systems refuse to sync a directory.
fn sync_folder(path: &Path) {
    #[cfg(unix)]
    if let Ok(folder) = File::open(folder_of(path)) {
        let _ = folder.sync_all();
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Prefixes a loader's error with the path it came from.
pub(super) fn name_path(path: &Path, error: ErmError) -> ErmError {
    match error {
        ErmError::InvalidModelFile(why) => {
            ErmError::InvalidModelFile(format!("{}: {why}", path.display()))
        }
        other => other,
    }
}

fn too_large(path: &Path, size: u64, limit: u64) -> ErmError {
    ErmError::InvalidModelFile(format!(
        "{} is {size} bytes, larger than the largest model file ({limit} bytes); not read",
        path.display()
    ))
}

fn create_failed(folder: &Path) -> String {
    format!("cannot create a temporary file in {}", folder.display())
}

fn save_error(path: &Path, step: &str, e: io::Error) -> ErmError {
    ErmError::ModelFileAccess(format!("cannot save {}: {step}: {e}", path.display()))
}

fn os_error(what: &str, path: &Path, e: io::Error) -> ErmError {
    ErmError::ModelFileAccess(format!("{what} {}: {e}", path.display()))
}
