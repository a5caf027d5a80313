//! `cargo xtask datasets fetch`: puts the data files in the data directory, verified.
//!
//! Nothing unverified ever carries a data file's name: each file arrives under a temporary
//! name in the data directory, is checked against its published SHA-256, and only then is
//! renamed into place. A mismatch deletes the temporary. `reproduce` fetches the files it
//! lacks through the same path ([`fetch_files`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dp_datasets::{ADULT_FILES, DataDir, DataFile, KDD_FILES, sha256_hex};
use indicatif::{ProgressBar, ProgressStyle};

use crate::safe_write::{PathError, Temporary, temporary_name};

/// Replaces the UCI addresses by `<base>/<file name>`: any address curl reads, a local
/// `file:///srv/mirror` included (a mirror, or a test without network).
pub const DATA_URL_VARIABLE: &str = "DP_ML_DATA_URL";

/// Where the files come from.
pub enum Source<'a> {
    /// A local folder holding the files under their published names.
    Mirror(&'a Path),
    /// The UCI repository (or `$DP_ML_DATA_URL`), with `curl`.
    Download,
}

/// Copies each file from `from`, or downloads it from the UCI repository with `curl`, unless
/// it is already there with the published checksum. Both folders are checked before
/// anything is written; every file is attempted and every failure reported.
pub fn fetch(
    data_dir: Option<PathBuf>,
    from: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    if let Some(mirror) = &from
        && !mirror.is_dir()
    {
        let why = if mirror.exists() {
            "is not a folder"
        } else {
            "does not exist"
        };
        return Err(format!("--from {} {why}; nothing was fetched", mirror.display()).into());
    }
    let source = from.as_deref().map_or(Source::Download, Source::Mirror);
    let dir = DataDir::resolve(data_dir.as_deref());
    if dir.path().exists() && !dir.path().is_dir() {
        return Err(format!(
            "data directory {} exists and is not a folder; nothing was fetched",
            dir.path().display()
        )
        .into());
    }
    std::fs::create_dir_all(dir.path())
        .map_err(PathError::on("create data directory", dir.path()))?;
    let mut wanted = Vec::new();
    for file in ADULT_FILES.iter().chain(&KDD_FILES) {
        match dir.verified(file) {
            Ok(_) => println!("{}: present, checksum ok", file.name),
            Err(e) => {
                if !dir.missing(std::slice::from_ref(file)).is_empty() {
                    // Not there: fetched below without comment.
                } else if dir.path().join(file.name).is_dir() {
                    println!("{}: {e}", file.name);
                } else {
                    println!(
                        "{}: present but not the published file; fetching it again",
                        file.name
                    );
                }
                wanted.push(file);
            }
        }
    }
    let failures = fetch_files(dir.path(), &wanted, &source);
    if !failures.is_empty() {
        let names: Vec<&str> = failures.iter().map(|f| f.0).collect();
        return Err(format!(
            "could not fetch {} into {} (see above); files already there were left as they were",
            names.join(", "),
            dir.path().display()
        )
        .into());
    }
    println!("data directory ready: {}", dir.path().display());
    Ok(())
}

/// Fetches and installs each of `files` into the existing folder `dir`, with a progress bar
/// over their published sizes; returns the files that failed, each with why (also printed).
pub fn fetch_files(
    dir: &Path,
    files: &[&DataFile],
    source: &Source<'_>,
) -> Vec<(&'static str, String)> {
    let total: u64 = files.iter().map(|f| f.bytes).sum();
    let progress = ProgressBar::new(total).with_style(
        ProgressStyle::with_template(
            "{msg:>26} [{bar:30}] {bytes}/{total_bytes} ({bytes_per_sec}, ETA {eta})",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let mut failures = Vec::new();
    for file in files {
        progress.set_message(file.name);
        let before = progress.position();
        let outcome = install(file, source, dir, &progress);
        progress.set_position(before + file.bytes);
        progress.suspend(|| match &outcome {
            Ok(()) => println!("{}: fetched, checksum ok", file.name),
            Err(e) => eprintln!("{}: {e}", file.name),
        });
        if let Err(e) = outcome {
            failures.push((file.name, e));
        }
    }
    progress.finish_and_clear();
    failures
}

/// Fetches `file` to a temporary name in `dir`, verifies it, and renames it into place.
fn install(
    file: &DataFile,
    source: &Source<'_>,
    dir: &Path,
    progress: &ProgressBar,
) -> Result<(), String> {
    let target = dir.join(file.name);
    let temporary = Temporary::new(temporary_name(&target));
    let origin = match source {
        Source::Mirror(mirror) => {
            let from = mirror.join(file.name);
            check_mirror_file(&from, file)?;
            std::fs::copy(&from, temporary.path()).map_err(|e| {
                format!("cannot copy {} into {}: {e}", from.display(), dir.display())
            })?;
            from.display().to_string()
        }
        Source::Download => {
            let url = address(file);
            download(&url, file.bytes, temporary.path(), progress)?;
            url
        }
    };
    let found = sha256_hex(temporary.path()).map_err(|e| e.to_string())?;
    if found != file.sha256 {
        return Err(format!(
            "checksum mismatch for {origin}: expected SHA-256 {}, found {found}; not installed \
             (the copy was deleted)",
            file.sha256
        ));
    }
    temporary.keep_as(&target).map_err(|e| e.to_string())?;
    remove_abandoned_temporaries(dir, file.name);
    Ok(())
}

/// Refuses a mirror's file that is not a regular file of the published size, before
/// copying it (a wrong file would only be refused by its checksum after a full copy).
fn check_mirror_file(from: &Path, file: &DataFile) -> Result<(), String> {
    let meta =
        std::fs::metadata(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    if !meta.is_file() {
        return Err(format!(
            "{} is not a regular file; not copied",
            from.display()
        ));
    }
    if meta.len() != file.bytes {
        return Err(format!(
            "{} holds {} bytes, the published file {}; not copied",
            from.display(),
            meta.len(),
            file.bytes
        ));
    }
    Ok(())
}

/// Removes temporaries of `name` that an interrupted fetch left in `dir` (`.<name>.partial-
/// <pid>-<hex>`, see `temporary_name`), once a fetch has installed the file. Only where
/// `/proc` tells which processes are alive: the temporary of a fetch still running (its
/// process alive) is kept.
fn remove_abandoned_temporaries(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{name}.partial-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let Some(rest) = entry_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            // Best effort: a temporary that cannot be removed does no harm.
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The file's published address, or `$DP_ML_DATA_URL/<name>` when that is set.
fn address(file: &DataFile) -> String {
    match std::env::var(DATA_URL_VARIABLE) {
        Ok(base) if !base.is_empty() => format!("{}/{}", base.trim_end_matches('/'), file.name),
        _ => file.url.to_owned(),
    }
}

/// Downloads `url` to `path` with curl (which fails on HTTP errors with `-f`), moving
/// `progress` with the bytes received. curl gives up on a file larger than the published
/// `bytes`, on a transfer slower than 1 KB/s for a minute (a server that accepts and
/// stalls) and after ten minutes in all: the files are a few MB.
fn download(url: &str, bytes: u64, path: &Path, progress: &ProgressBar) -> Result<(), String> {
    let mut child = Command::new("curl")
        .args(["-fsSL", "--connect-timeout", "20"])
        .args([
            "--speed-limit",
            "1024",
            "--speed-time",
            "60",
            "--max-time",
            "600",
        ])
        .arg("--max-filesize")
        .arg(bytes.to_string())
        .arg("-o")
        .arg(path)
        .arg(url)
        .spawn()
        .map_err(|e| format!("cannot run curl to download {url}: {e} (is curl installed?)"))?;
    let start = progress.position();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {
                let received = std::fs::metadata(path).map_or(0, |m| m.len());
                progress.set_position(start + received);
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("cannot wait for curl downloading {url}: {e}")),
        }
    };
    if status.success() {
        Ok(())
    } else {
        Err(format!("downloading {url} failed (curl {status})"))
    }
}

/// `cargo xtask datasets synth`: a synthetic CSV shaped like `adult.data` (same 15 columns,
/// same format: no header, ", " separators, `?` for missing values, `<=50K`/`>50K` labels),
/// so `schemas/adult.toml` reads it unchanged. For measuring `dpml train` on files far
/// larger than the real one (10⁷ rows ≈ 1.2 GB); the rows are random draws from a fixed
/// seed, not census data, and say nothing about anyone.
pub mod synth {
    use std::io::{BufWriter, Write};
    use std::path::Path;

    use dp_noise::InsecureSeededRng;
    use rand::RngExt;

    use crate::safe_write::{PathError, Temporary, temporary_name};

    /// Most rows one file may have (about 12 GB).
    pub const MAX_ROWS: u64 = 100_000_000;

    /// A few of each categorical column's levels in `schemas/adult.toml` (all valid there).
    const WORKCLASS: &[&str] = &[
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
    ];
    const EDUCATION: &[(&str, u32)] = &[
        ("Preschool", 1),
        ("1st-4th", 2),
        ("5th-6th", 3),
        ("7th-8th", 4),
        ("9th", 5),
        ("10th", 6),
        ("11th", 7),
        ("12th", 8),
        ("HS-grad", 9),
        ("Some-college", 10),
        ("Assoc-voc", 11),
        ("Assoc-acdm", 12),
        ("Bachelors", 13),
        ("Masters", 14),
        ("Prof-school", 15),
        ("Doctorate", 16),
    ];
    const MARITAL: &[&str] = &[
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
    ];
    const OCCUPATION: &[&str] = &[
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Transport-moving",
    ];
    const RELATIONSHIP: &[&str] = &[
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ];
    const RACE: &[&str] = &[
        "White",
        "Asian-Pac-Islander",
        "Amer-Indian-Eskimo",
        "Other",
        "Black",
    ];
    const SEX: &[&str] = &["Female", "Male"];
    const COUNTRY: &[&str] = &[
        "United-States",
        "Mexico",
        "Philippines",
        "Germany",
        "Canada",
        "India",
        "England",
        "China",
        "Cuba",
        "Jamaica",
    ];

    fn pick<'a>(rng: &mut InsecureSeededRng, levels: &[&'a str]) -> &'a str {
        levels[rng.random_range(0..levels.len())]
    }

    /// Writes `rows` rows to `out` (refused if it exists) from `seed`.
    pub fn run(rows: u64, out: &Path, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
        if !(1..=MAX_ROWS).contains(&rows) {
            return Err(format!("--rows {rows}: must be between 1 and {MAX_ROWS}").into());
        }
        if out.exists() {
            return Err(format!("{} exists; refusing to overwrite it", out.display()).into());
        }
        let started = std::time::Instant::now();
        let temp = Temporary::new(temporary_name(out));
        let file =
            std::fs::File::create(temp.path()).map_err(PathError::on("create", temp.path()))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        let mut rng = InsecureSeededRng::new(seed);
        let mut positives = 0u64;
        for _ in 0..rows {
            let age: u32 = 17 + (rng.random::<f64>().powf(1.6) * 73.0) as u32;
            let (education, years) = EDUCATION[rng.random_range(0..EDUCATION.len())];
            let marital = pick(&mut rng, MARITAL);
            let hours: u32 = rng.random_range(10..=70);
            let gain: u32 = if rng.random_bool(0.08) {
                rng.random_range(1..=99_999)
            } else {
                0
            };
            let loss: u32 = if rng.random_bool(0.05) {
                rng.random_range(1..=4_356)
            } else {
                0
            };
            // A label that depends on the features as income does (education, age, hours,
            // marriage, capital gains), with noise: about a quarter positive.
            let score = 0.45 * (years as f64 - 10.0)
                + 0.04 * (age as f64 - 38.0)
                + 0.03 * (hours as f64 - 40.0)
                + if marital == "Married-civ-spouse" {
                    1.2
                } else {
                    -0.9
                }
                + if gain > 5_000 { 2.0 } else { 0.0 }
                - 1.1;
            let positive = rng.random::<f64>() < 1.0 / (1.0 + (-score).exp());
            positives += u64::from(positive);
            let missing = rng.random_bool(0.02);
            writeln!(
                w,
                "{age}, {}, {}, {education}, {years}, {marital}, {}, {}, {}, {}, {gain}, {loss}, {hours}, {}, {}",
                if missing { "?" } else { pick(&mut rng, WORKCLASS) },
                rng.random_range(12_285..=1_484_705u32),
                if missing { "?" } else { pick(&mut rng, OCCUPATION) },
                pick(&mut rng, RELATIONSHIP),
                pick(&mut rng, RACE),
                pick(&mut rng, SEX),
                pick(&mut rng, COUNTRY),
                if positive { ">50K" } else { "<=50K" },
            )
            .map_err(PathError::on("write", temp.path()))?;
        }
        w.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .map_err(PathError::on("write", temp.path()))?;
        temp.keep_as(out)?;
        let bytes = std::fs::metadata(out).map_or(0, |m| m.len());
        println!(
            "wrote {} rows ({:.1} MB, {:.1}% >50K) to {} in {:.1} s; read it with \
             schemas/adult.toml",
            rows,
            bytes as f64 / 1e6,
            100.0 * positives as f64 / rows as f64,
            out.display(),
            started.elapsed().as_secs_f64()
        );
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Every quoted level of `schemas/adult.toml`'s `levels = [...]` lines.
        fn schema_levels() -> Vec<String> {
            let schema = crate::workspace_path("schemas/adult.toml");
            let text = std::fs::read_to_string(schema).unwrap();
            text.lines()
                .filter(|l| l.starts_with("levels = ["))
                .flat_map(|l| l.split('"').skip(1).step_by(2).map(str::to_owned))
                .collect()
        }

        #[test]
        fn rows_have_adults_shape_and_the_schemas_levels_and_bounds() {
            let dir = std::env::temp_dir().join(format!("xtask-synth-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let out = dir.join("synth.csv");
            run(2000, &out, 7).unwrap();
            let text = std::fs::read_to_string(&out).unwrap();
            let levels = schema_levels();
            // 8 + 16 + 7 + 14 + 6 + 5 + 2 + 41 levels in its 8 categorical columns.
            assert_eq!(levels.len(), 99);
            let bounds = [
                (0, 17.0, 100.0),
                (2, 1.0, 1_500_000.0),
                (4, 1.0, 16.0),
                (10, 0.0, 100_000.0),
                (11, 0.0, 5_000.0),
                (12, 1.0, 100.0),
            ];
            let mut positives = 0;
            for line in text.lines() {
                let fields: Vec<&str> = line.split(", ").collect();
                assert_eq!(fields.len(), 15, "{line}");
                for (k, lower, upper) in bounds {
                    let v: f64 = fields[k].parse().unwrap();
                    assert!((lower..=upper).contains(&v), "{line}");
                }
                for k in [1, 3, 5, 6, 7, 8, 9, 13] {
                    assert!(
                        fields[k] == "?" || levels.iter().any(|l| l == fields[k]),
                        "{line}"
                    );
                }
                positives += usize::from(match fields[14] {
                    ">50K" => true,
                    "<=50K" => false,
                    other => panic!("label {other}"),
                });
            }
            assert_eq!(text.lines().count(), 2000);
            // About a quarter positive, as in adult.data (24%).
            assert!((300..=800).contains(&positives), "{positives}");
            // The same seed gives the same file; an existing output is refused.
            let again = dir.join("again.csv");
            run(2000, &again, 7).unwrap();
            assert_eq!(std::fs::read(&again).unwrap(), text.as_bytes());
            let err = run(10, &out, 7).unwrap_err().to_string();
            assert!(err.contains("exists; refusing to overwrite it"), "{err}");
            assert!(
                run(0, &dir.join("none.csv"), 7)
                    .unwrap_err()
                    .to_string()
                    .contains("--rows 0")
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
