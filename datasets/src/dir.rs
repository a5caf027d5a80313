//! Where the data files live, and checking that they are the published ones.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::DatasetError;

/// A file of a dataset with its published SHA-256 and where to download it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataFile {
    /// File name.
    pub name: &'static str,
    /// SHA-256 of the published file (lower-case hex).
    pub sha256: &'static str,
    /// Download address.
    pub url: &'static str,
    /// Size of the published file in bytes (checked before the checksum, and for progress
    /// reports).
    pub bytes: u64,
}

/// UCI Adult (Becker & Kohavi 1996), CC BY 4.0.
pub const ADULT_FILES: [DataFile; 3] = [
    DataFile {
        name: "adult.data",
        sha256: "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
        url: "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.data",
        bytes: 3_974_305,
    },
    DataFile {
        name: "adult.test",
        sha256: "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
        url: "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.test",
        bytes: 2_003_153,
    },
    DataFile {
        name: "adult.names",
        sha256: "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
        url: "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.names",
        bytes: 5_229,
    },
];

/// KDD Cup 1999, 10% file (UCI KDD Archive), public.
pub const KDD_FILES: [DataFile; 1] = [DataFile {
    name: "kddcup.data_10_percent.gz",
    sha256: "8045aca0d84e70e622d1148d7df782496f6333bf6eb979a1b0837c42a9fd9561",
    url: "https://kdd.ics.uci.edu/databases/kddcup99/kddcup.data_10_percent.gz",
    bytes: 2_144_903,
}];

/// The environment variable naming the data directory.
pub const DATA_DIR_VARIABLE: &str = "DP_ML_DATA_DIR";

/// The folder the data files are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    path: PathBuf,
}

impl DataDir {
    /// `flag` if given, else `$DP_ML_DATA_DIR`, else `data/` in the workspace this crate was
    /// built in (git-ignored; fixed at compile time, so a copy of this crate built from a
    /// package registry would look inside the registry's sources: pass a folder or set
    /// `DP_ML_DATA_DIR` there).
    pub fn resolve(flag: Option<&Path>) -> Self {
        let path = match (flag, std::env::var_os(DATA_DIR_VARIABLE)) {
            (Some(dir), _) => dir.to_path_buf(),
            (None, Some(dir)) if !dir.is_empty() => PathBuf::from(dir),
            _ => Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("data"),
        };
        Self { path }
    }

    /// A specific folder.
    pub fn at(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks that the folder exists and is a folder, so that a typo in `--data-dir` is
    /// reported as such rather than as every file missing.
    pub fn check_folder(&self) -> Result<(), DatasetError> {
        let why = match std::fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => "is not a folder",
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
            Err(e) => return Err(DatasetError::io("inspect", &self.path)(e)),
        };
        Err(DatasetError::DataDirUnusable {
            dir: self.path.clone(),
            why,
        })
    }

    /// The path of `file`, after checking it is a regular file of the published size and
    /// SHA-256 (the size first: a wrong one is refused without reading the file).
    pub fn verified(&self, file: &DataFile) -> Result<PathBuf, DatasetError> {
        self.check_folder()?;
        let path = self.path.join(file.name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DatasetError::Missing {
                    file: file.name,
                    dir: self.path.clone(),
                });
            }
            Err(e) => return Err(DatasetError::io("inspect", &path)(e)),
        };
        if !meta.is_file() {
            return Err(DatasetError::NotAFile { file: path });
        }
        if meta.len() != file.bytes {
            return Err(DatasetError::SizeMismatch {
                file: path,
                expected: file.bytes,
                found: meta.len(),
            });
        }
        let found = sha256_hex(&path)?;
        if found != file.sha256 {
            return Err(DatasetError::ChecksumMismatch {
                file: path,
                expected: file.sha256,
                found,
            });
        }
        Ok(path)
    }

    /// Whether every file of `files` is present (not checking contents).
    pub fn has_all(&self, files: &[DataFile]) -> bool {
        self.missing(files).is_empty()
    }

    /// The files of `files` that are not in the folder (not checking contents). Something
    /// else under a file's name (a folder, a pipe) is not missing: [`DataDir::verified`]
    /// says what it is.
    pub fn missing<'a>(&self, files: &'a [DataFile]) -> Vec<&'a DataFile> {
        files
            .iter()
            .filter(|f| std::fs::symlink_metadata(self.path.join(f.name)).is_err())
            .collect()
    }
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_hex(path: &Path) -> Result<String, DatasetError> {
    let mut file = std::fs::File::open(path).map_err(DatasetError::io("open", path))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file
            .read(&mut buffer)
            .map_err(DatasetError::io("read", path))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
