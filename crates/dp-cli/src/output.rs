//! Outputs: refused if they exist (unless `--force`), written under a temporary name in the
//! same folder and moved into place only when the whole command succeeded, so a failed run
//! leaves nothing behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Failure, fail};

/// Refuses `path` as an output before any work: an existing file unless `force`, a folder,
/// or a folder that does not exist.
pub fn check_free(path: &Path, force: bool) -> Result<(), Failure> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => Err(fail(format!(
            "{}: is a folder; name a file to write",
            path.display()
        ))),
        Ok(_) if !force => Err(fail(format!(
            "{}: exists; refusing to overwrite it (pass --force to replace it)",
            path.display()
        ))),
        _ => {
            let parent = parent(path);
            if parent.is_dir() {
                Ok(())
            } else {
                Err(fail(format!(
                    "{}: its folder {} does not exist",
                    path.display(),
                    parent.display()
                )))
            }
        }
    }
}

/// The folder `path` is in (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// An output being written under a temporary name beside its final one. Dropped without
/// [`Staged::commit`], the temporary file is removed.
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    force: bool,
    writer: Option<BufWriter<File>>,
}

impl Staged {
    /// Creates the temporary file for `target` (a fresh name; never an existing file).
    pub fn create(target: &Path, force: bool) -> Result<Self, Failure> {
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = parent(target).join(format!(".{name}.dpml-{}.tmp", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| fail(format!("{}: cannot create it: {e}", temp.display())))?;
        Ok(Self {
            temp,
            target: target.to_owned(),
            force,
            writer: Some(BufWriter::new(file)),
        })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not committed")
    }

    /// Writes `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        let target = self.target.display().to_string();
        self.writer()
            .write_all(bytes)
            .map_err(|e| fail(format!("{target}: cannot write it: {e}")))
    }

    /// Flushes and syncs the temporary file (call for every output before committing any).
    pub fn finish(&mut self) -> Result<(), Failure> {
        let target = self.target.display().to_string();
        let writer = self.writer.as_mut().expect("not committed");
        writer
            .flush()
            .and_then(|()| writer.get_ref().sync_all())
            .map_err(|e| fail(format!("{target}: cannot write it: {e}")))
    }

    /// Moves the file into place. Without `--force` it is linked to its name, which fails if
    /// a file appeared there meanwhile (never overwritten); with it, renamed over it.
    pub fn commit(mut self) -> Result<(), Failure> {
        self.finish()?;
        self.writer = None;
        let moved = if self.force {
            std::fs::rename(&self.temp, &self.target)
        } else {
            std::fs::hard_link(&self.temp, &self.target)
                .and_then(|()| std::fs::remove_file(&self.temp))
        };
        moved.map_err(|e| fail(format!("{}: cannot write it: {e}", self.target.display())))
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.temp);
    }
}

/// A working file of this run: a new hidden name in its folder, reserved on creation (never
/// an existing file), removed when dropped — after its use, or on any refusal.
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    /// Reserves `.{stem}-{pid}-{nanos}-{attempt}.{extension}` in `folder`.
    pub fn reserve(folder: &Path, stem: &str, extension: &str) -> Result<Self, Failure> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos());
        for attempt in 0..64 {
            let name = format!(
                ".{stem}-{}-{nanos}-{attempt}.{extension}",
                std::process::id()
            );
            let path = folder.join(name);
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Self { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(fail(format!(
                        "{}: cannot create a working file there: {e}",
                        folder.display()
                    )));
                }
            }
        }
        Err(fail(format!(
            "{}: no free name for a working file",
            folder.display()
        )))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes and syncs every file under a temporary name beside its own (nothing in place
/// yet): a file that cannot be written is refused here, before anything is committed.
pub fn stage_all(files: Vec<(PathBuf, Vec<u8>)>, force: bool) -> Result<Vec<Staged>, Failure> {
    let mut staged = Vec::with_capacity(files.len());
    for (path, bytes) in &files {
        let mut s = Staged::create(path, force)?;
        s.write(bytes)?;
        s.finish()?;
        staged.push(s);
    }
    Ok(staged)
}

/// Moves staged files into place, all or (without `force`) none.
pub fn commit_all(staged: Vec<Staged>, force: bool) -> Result<(), Failure> {
    let mut done: Vec<PathBuf> = Vec::new();
    for s in staged {
        let target = s.target.clone();
        if let Err(e) = s.commit() {
            if !force {
                for path in &done {
                    let _ = std::fs::remove_file(path);
                }
            }
            return Err(e);
        }
        done.push(target);
    }
    Ok(())
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
