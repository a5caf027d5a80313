//! Outputs: refused if they exist (unless `--force`) or are anything but a regular file,
//! written under a temporary name in the same folder and moved into place only when the
//! whole command succeeded, so a failed or interrupted run leaves nothing behind.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Failure, cleanup, fail};

/// Refuses `path` as an output before any work ([`destination`]).
pub fn check_free(path: &Path, force: bool) -> Result<(), Failure> {
    destination(path, force).map(|_| ())
}

/// Where the output named `path` is written: `path` itself when nothing is there; with
/// `force`, the regular file it names, symbolic links followed (the link stays a link and
/// its target gets the new content, as a ledger written through a link does). Refused:
/// anything that is not a regular file (a folder, a device such as `/dev/full`, a FIFO; a
/// link to one, or to nothing), an existing file without `force`, a file with several hard
/// links (the others would keep the old content), a folder that does not exist.
pub fn destination(path: &Path, force: bool) -> Result<PathBuf, Failure> {
    let name = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let parent = parent(path);
            return if parent.is_dir() {
                Ok(path.to_owned())
            } else {
                Err(fail(format!(
                    "{name}: its folder {} does not exist",
                    parent.display()
                )))
            };
        }
        Err(e) => return Err(fail(format!("{name}: cannot inspect it: {e}"))),
    };
    if meta.is_dir() {
        return Err(fail(format!("{name}: is a folder; name a file to write")));
    }
    let target = if meta.file_type().is_symlink() {
        std::fs::canonicalize(path).map_err(|e| {
            fail(format!(
                "{name}: a symbolic link to nothing that can be written ({e}); refusing to \
                 write through it"
            ))
        })?
    } else {
        path.to_owned()
    };
    let target_meta =
        std::fs::metadata(&target).map_err(|e| fail(format!("{name}: cannot inspect it: {e}")))?;
    if !target_meta.is_file() {
        let via = if target == path {
            String::new()
        } else {
            format!(" (through the symbolic link, {})", target.display())
        };
        return Err(fail(format!(
            "{name}: is not a regular file{via} (a folder, a device or a pipe); refusing to \
             write to it, with or without --force"
        )));
    }
    if !force {
        return Err(fail(format!(
            "{name}: exists; refusing to overwrite it (pass --force to replace it)"
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if target_meta.nlink() > 1 {
            return Err(fail(format!(
                "{name}: the file has {} hard links (names); replacing it under one name would \
                 leave the others holding the old content; remove the other names or write \
                 elsewhere",
                target_meta.nlink()
            )));
        }
    }
    Ok(target)
}

/// The folder `path` is in (`.` for a bare name).
pub fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Creates the new file `path` (never an existing one), readable and writable by its owner
/// only: a row cache is a plaintext copy of the training rows, and predictions are one
/// line per row of the data.
fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options.open(path)
}

/// An output being written under a temporary name beside its destination
/// ([`destination`]), registered for removal if a signal ends the run. Dropped without
/// [`Staged::commit`], the temporary file is removed.
pub struct Staged {
    temp: PathBuf,
    /// The name the user gave (for messages).
    target: PathBuf,
    /// Where it goes: `target`, or with `--force` the regular file it links to.
    dest: PathBuf,
    force: bool,
    writer: Option<BufWriter<File>>,
    /// Whether `temp` is still in the cleanup registry (and on disk).
    registered: bool,
}

impl Staged {
    /// Creates the temporary file for `target` (a fresh name; never an existing file;
    /// owner-only), after sweeping the stale temporary files of runs that no longer exist.
    pub fn create(target: &Path, force: bool) -> Result<Self, Failure> {
        let dest = destination(target, force)?;
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let folder = parent(&dest);
        cleanup::sweep_stale(folder, &format!(".{name}.dpml-"), ".tmp", 0);
        let temp = folder.join(format!(".{name}.dpml-{}.tmp", std::process::id()));
        let file = cleanup::registry()
            .create(&temp, create_private)
            .map_err(|e| fail(format!("{}: cannot create it: {e}", temp.display())))?;
        Ok(Self {
            temp,
            target: target.to_owned(),
            dest,
            force,
            writer: Some(BufWriter::new(file)),
            registered: true,
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

    /// Moves the file into place ([`Staged::commit_held`]), the registry held meanwhile.
    pub fn commit(self) -> Result<(), Failure> {
        let mut registry = cleanup::registry();
        self.commit_held(&mut registry)
    }

    /// Moves the file into place. Without `--force` it is linked to its name, which fails if
    /// anything appeared there meanwhile (never overwritten); with it, renamed over its
    /// destination, checked again to be a regular file (or gone). Success or failure, the
    /// temporary file is gone and forgotten afterwards.
    fn commit_held(mut self, registry: &mut cleanup::Registry) -> Result<(), Failure> {
        let moved = self.finish().and_then(|()| {
            self.writer = None;
            self.move_into_place()
        });
        if moved.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        registry.forget(&self.temp);
        self.registered = false;
        moved
    }

    fn move_into_place(&self) -> Result<(), Failure> {
        let cannot =
            |e: std::io::Error| fail(format!("{}: cannot write it: {e}", self.target.display()));
        if !self.force {
            return std::fs::hard_link(&self.temp, &self.dest)
                .and_then(|()| std::fs::remove_file(&self.temp))
                .map_err(cannot);
        }
        match std::fs::symlink_metadata(&self.dest) {
            Ok(meta) if !meta.is_file() => Err(fail(format!(
                "{}: became something other than a regular file while this run worked; \
                 refusing to replace it",
                self.target.display()
            ))),
            _ => std::fs::rename(&self.temp, &self.dest).map_err(cannot),
        }
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.registered {
            self.writer = None;
            cleanup::remove(&self.temp);
        }
    }
}

/// A working file of this run: a new hidden name in its folder, reserved on creation (never
/// an existing file; owner-only), registered for removal if a signal ends the run, removed
/// when dropped — after its use, or on any refusal.
pub struct ScratchFile {
    path: PathBuf,
}

impl ScratchFile {
    /// Reserves `.{stem}-{pid}-{nanos}-{attempt}.{extension}` in `folder`, after removing
    /// the files of that pattern left there by runs that no longer exist.
    pub fn reserve(folder: &Path, stem: &str, extension: &str) -> Result<Self, Failure> {
        cleanup::sweep_stale(folder, &format!(".{stem}-"), &format!(".{extension}"), 2);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |t| t.subsec_nanos());
        for attempt in 0..64 {
            let name = format!(
                ".{stem}-{}-{nanos}-{attempt}.{extension}",
                std::process::id()
            );
            let path = folder.join(name);
            match cleanup::registry().create(&path, create_private) {
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
        cleanup::remove(&self.path);
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

/// Moves staged files into place, all or (without `force`) none. A signal meanwhile waits
/// until they are all moved (or the move failed and was undone).
pub fn commit_all(staged: Vec<Staged>, force: bool) -> Result<(), Failure> {
    let mut staged = staged.into_iter();
    let mut registry = cleanup::registry();
    let mut done: Vec<PathBuf> = Vec::new();
    while let Some(s) = staged.next() {
        let dest = s.dest.clone();
        if let Err(e) = s.commit_held(&mut registry) {
            if !force {
                for path in &done {
                    let _ = std::fs::remove_file(path);
                }
            }
            // The rest remove their temporary files as they drop, which takes the registry.
            drop(registry);
            drop(staged);
            return Err(e);
        }
        done.push(dest);
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
