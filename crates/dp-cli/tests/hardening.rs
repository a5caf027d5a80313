//! The command line against what an outside matrix found (issue 48): a ledger that makes
//! `ledger show` panic, signals that leave the row cache or a staged output behind, files
//! without end, pipes as data, special files as outputs, `schema init` on gzip and on
//! duplicate names, and numbers printed digit by digit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use assert_cmd::Command;

mod common;
use common::{SCHEMA, dpml, fails, listing, succeeds};

/// Data rows of a small separable file (y = pos iff c = a), without the header.
fn rows(count: usize) -> String {
    (0..count)
        .map(|i| {
            let (c, y) = if i % 2 == 0 {
                ("a", "pos")
            } else {
                ("b", "neg")
            };
            format!("{},{c},{y}\n", i % 10)
        })
        .collect()
}

fn small_data(count: usize) -> String {
    format!("x,c,y\n{}", rows(count))
}

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("schema.toml"), SCHEMA).unwrap();
        Self { dir }
    }
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
    fn train(&self, data: &Path, out: &Path) -> Command {
        let mut cmd = dpml();
        cmd.arg("train")
            .arg("--data")
            .arg(data)
            .arg("--schema")
            .arg(self.path("schema.toml"))
            .args(["--epsilon", "1", "--out"])
            .arg(out);
        cmd
    }
    fn predict(&self, model: &Path, data: &Path, out: &Path) -> Command {
        let mut cmd = dpml();
        cmd.arg("predict")
            .arg("--model")
            .arg(model)
            .arg("--schema")
            .arg(self.path("schema.toml"))
            .arg("--data")
            .arg(data)
            .arg("--out")
            .arg(out);
        cmd
    }
    /// A model trained on a small file, in a folder of its own.
    fn model(&self) -> PathBuf {
        let folder = self.path("model");
        std::fs::create_dir_all(&folder).unwrap();
        let data = folder.join("train.csv");
        std::fs::write(&data, small_data(200)).unwrap();
        let model = folder.join("m.dpm");
        succeeds(&mut self.train(&data, &model));
        model
    }
}

// ---------------------------------------------------------------------------------------
// Item 1: a ledger whose schema hash is not one.

#[test]
fn rejects_a_ledger_whose_schema_hash_is_not_one_instead_of_panicking() {
    let s = Setup::new();
    for hash in [format!("a{}", "é".repeat(20)), "ab".into(), "AB".repeat(32)] {
        let text = serde_json::json!({
            "format": "dpml-ledger/1", "dataset": "d", "total_epsilon": 2.0,
            "spends": [{"epsilon": 0.5, "command": "train", "model": "m.dpm",
                        "schema_sha256": hash, "time_unix": 1}],
        });
        let ledger = s.write("l.json", text.to_string().as_bytes());
        let err = fails(dpml().args(["ledger", "show"]).arg(&ledger));
        assert!(err.contains("schema_sha256"), "{err}");
    }
    // Empty (a spend without a schema: Python's frames) and a real hash show.
    let text = serde_json::json!({
        "format": "dpml-ledger/1", "dataset": "d", "total_epsilon": 2.0,
        "spends": [
            {"epsilon": 0.5, "command": "python", "model": "m", "time_unix": 1},
            {"epsilon": 0.5, "command": "train", "model": "m.dpm",
             "schema_sha256": "0123456789abcdef".repeat(4), "time_unix": 1},
        ],
    });
    let ledger = s.write("l.json", text.to_string().as_bytes());
    let shown = succeeds(dpml().args(["ledger", "show"]).arg(&ledger));
    assert!(shown.contains("(schema 0123456789ab)"), "{shown}");
}

// ---------------------------------------------------------------------------------------
// Item 2: signals, stale caches, private caches and staged outputs.

/// A FIFO at `path`.
#[cfg(unix)]
fn fifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

/// The FIFO at `path` opened for writing once its reader (a `dpml` child) has opened it:
/// tried without blocking for at most 30 s, so a child that fails first fails the test
/// instead of hanging it.
#[cfg(unix)]
fn open_writer(path: &Path) -> Feeder {
    use std::os::unix::fs::OpenOptionsExt;
    let start = Instant::now();
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => return Feeder(file),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                assert!(start.elapsed() < Duration::from_secs(30), "no reader");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// A FIFO's writing end, opened without blocking: writes wait while the pipe is full.
#[cfg(unix)]
struct Feeder(std::fs::File);

#[cfg(unix)]
impl Feeder {
    fn write_all(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            match self.0.write(bytes) {
                Ok(k) => bytes = &bytes[k..],
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The hidden working files in `dir` (a row cache, a staged output).
#[cfg(unix)]
fn hidden(dir: &Path) -> Vec<String> {
    listing(dir)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// Waits (at most 30 s) until `dir` holds a hidden working file; returns its name.
#[cfg(unix)]
fn wait_for_hidden(dir: &Path) -> String {
    let start = Instant::now();
    loop {
        if let Some(name) = hidden(dir).into_iter().next() {
            return name;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "no working file");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
fn signal(child: &std::process::Child, signal: rustix::process::Signal) {
    rustix::process::kill_process(rustix::process::Pid::from_child(child), signal).unwrap();
}

#[cfg(unix)]
fn signals() -> [(rustix::process::Signal, i32); 2] {
    [
        (rustix::process::Signal::INT, 130),
        (rustix::process::Signal::TERM, 143),
    ]
}

/// An out-of-core fit reading a FIFO is stopped mid-read (the row cache exists and half the
/// rows are in the pipe, which stays open): the cache goes with it, and the exit status
/// says which signal ended it.
#[cfg(unix)]
#[test]
fn leaves_nothing_when_a_signal_stops_an_out_of_core_fit() {
    for (sig, status) in signals() {
        let s = Setup::new();
        let data = s.path("rows.csv");
        fifo(&data);
        let before = listing(s.dir.path());
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_dpml"))
            .arg("train")
            .arg("--data")
            .arg(&data)
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .args(["--epsilon", "1", "--model", "logistic", "--out-of-core"])
            .args(["--block-rows", "16", "--out"])
            .arg(s.path("m.dpm"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = open_writer(&data);
        writer.write_all(small_data(2_000).as_bytes()).unwrap();
        let cache = wait_for_hidden(s.dir.path());
        assert!(cache.starts_with(".dpml-train-"), "{cache}");
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        drop(writer);
        assert_eq!(out.status.code(), Some(status), "{out:?}");
        assert_eq!(listing(s.dir.path()), before, "{sig:?}");
    }
}

/// A predict reading a FIFO is stopped mid-read: its staged output goes with it.
#[cfg(unix)]
#[test]
fn leaves_nothing_when_a_signal_stops_a_predict() {
    let s = Setup::new();
    let model = s.model();
    for (sig, status) in signals() {
        let folder = s.path(&format!("predict-{status}"));
        std::fs::create_dir(&folder).unwrap();
        let data = folder.join("rows.csv");
        fifo(&data);
        let before = listing(&folder);
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_dpml"))
            .arg("predict")
            .arg("--model")
            .arg(&model)
            .arg("--schema")
            .arg(s.path("schema.toml"))
            .arg("--data")
            .arg(&data)
            .arg("--out")
            .arg(folder.join("p.csv"))
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut writer = open_writer(&data);
        writer.write_all(small_data(2_000).as_bytes()).unwrap();
        let staged = wait_for_hidden(&folder);
        assert!(staged.starts_with(".p.csv.dpml-"), "{staged}");
        signal(&child, sig);
        let out = child.wait_with_output().unwrap();
        drop(writer);
        assert_eq!(out.status.code(), Some(status), "{out:?}");
        assert_eq!(listing(&folder), before, "{sig:?}");
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// The row cache (a plaintext copy of the training rows) and a staged output are readable
/// by their owner only, from their creation on.
#[cfg(unix)]
#[test]
fn rejects_other_readers_of_caches_and_staged_outputs() {
    let s = Setup::new();
    let data = s.path("rows.csv");
    fifo(&data);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_dpml"))
        .arg("train")
        .arg("--data")
        .arg(&data)
        .arg("--schema")
        .arg(s.path("schema.toml"))
        .args([
            "--epsilon",
            "1",
            "--model",
            "logistic",
            "--out-of-core",
            "--out",
        ])
        .arg(s.path("m.dpm"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = open_writer(&data);
    let cache = s.path(&wait_for_hidden(s.dir.path()));
    assert_eq!(mode(&cache), 0o600, "{}", cache.display());
    writer.write_all(small_data(400).as_bytes()).unwrap();
    drop(writer);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(hidden(s.dir.path()).is_empty());

    let model = s.model();
    let folder = s.path("predict");
    std::fs::create_dir(&folder).unwrap();
    let data = folder.join("rows.csv");
    fifo(&data);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_dpml"))
        .arg("predict")
        .arg("--model")
        .arg(&model)
        .arg("--schema")
        .arg(s.path("schema.toml"))
        .arg("--data")
        .arg(&data)
        .arg("--out")
        .arg(folder.join("p.csv"))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut writer = open_writer(&data);
    let staged = folder.join(wait_for_hidden(&folder));
    assert_eq!(mode(&staged), 0o600, "{}", staged.display());
    writer.write_all(small_data(10).as_bytes()).unwrap();
    drop(writer);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(mode(&folder.join("p.csv")), 0o600);
}

/// The id of a process that has ended (a child, reaped).
#[cfg(unix)]
fn gone_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Caches and staged outputs left by runs that no longer exist (SIGKILL) are swept by the
/// next run in their folder; those of a live process, and every other name, are left.
#[cfg(unix)]
#[test]
fn rejects_stale_caches_of_runs_that_are_gone() {
    let s = Setup::new();
    let data = s.write("data.csv", small_data(300).as_bytes());
    let cache_dir = s.path("cache");
    std::fs::create_dir(&cache_dir).unwrap();
    let gone = gone_pid();
    let live = std::process::id();
    let stale = [
        format!(".dpml-train-{gone}-123-0.rows"),
        format!(".dpml-train-{gone}-9-63.rows"),
    ];
    let kept = [
        format!(".dpml-train-{live}-123-0.rows"),
        format!(".dpml-train-{gone}-x-0.rows"),
        format!(".dpml-train-{gone}-1-0.rows.keep"),
        format!("dpml-train-{gone}-1-0.rows"),
        format!(".dpml-other-{gone}-1-0.rows"),
    ];
    for name in stale.iter().chain(&kept) {
        std::fs::write(cache_dir.join(name), "rows").unwrap();
    }
    // A folder of the pattern is never removed.
    std::fs::create_dir(cache_dir.join(format!(".dpml-train-{gone}-5-0.rows"))).unwrap();
    let staged_stale = s.write(&format!(".m.dpm.dpml-{gone}.tmp"), b"old");
    let staged_live = s.write(&format!(".m.dpm.dpml-{live}.tmp"), b"old");
    succeeds(
        s.train(&data, &s.path("m.dpm"))
            .args(["--model", "logistic", "--out-of-core", "--cache-dir"])
            .arg(&cache_dir),
    );
    let mut expected: Vec<String> = kept.to_vec();
    expected.push(format!(".dpml-train-{gone}-5-0.rows"));
    expected.sort();
    assert_eq!(listing(&cache_dir), expected);
    assert!(!staged_stale.exists());
    assert!(staged_live.exists());
}

// ---------------------------------------------------------------------------------------
// Item 3: files without end.

#[cfg(unix)]
#[test]
fn rejects_a_schema_or_report_that_never_ends() {
    let s = Setup::new();
    let data = s.write("data.csv", small_data(20).as_bytes());
    let err = fails(
        dpml()
            .arg("train")
            .arg("--data")
            .arg(&data)
            .args(["--schema", "/dev/zero", "--epsilon", "1", "--out"])
            .arg(s.path("m.dpm")),
    );
    assert!(err.contains("/dev/zero") && err.contains("limit"), "{err}");
    let model = s.model();
    let err = fails(
        dpml()
            .arg("predict")
            .arg("--model")
            .arg(&model)
            .args(["--schema", "/dev/zero", "--data"])
            .arg(&data)
            .arg("--out")
            .arg(s.path("p.csv")),
    );
    assert!(err.contains("limit"), "{err}");
    // A training report without end, beside the model `ledger check` is given.
    let report = model.with_file_name("m.report.json");
    std::fs::remove_file(&report).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &report).unwrap();
    let ledger = s.path("l.json");
    succeeds(
        dpml()
            .args(["ledger", "init"])
            .arg(&ledger)
            .args(["--total-epsilon", "1"]),
    );
    let err = fails(dpml().args(["ledger", "check"]).arg(&ledger).arg(&model));
    assert!(err.contains("larger than"), "{err}");
    assert!(
        listing(s.dir.path())
            .iter()
            .all(|n| n != "m.dpm" && n != "p.csv")
    );
}

// ---------------------------------------------------------------------------------------
// Item 4: pipes as data.

/// Standard input and a FIFO are read as files are (one pass, no seek); Parquet, which
/// needs its end first, is refused from a pipe with the remedy.
#[cfg(unix)]
#[test]
fn rejects_nothing_from_a_pipe_but_parquet() {
    let s = Setup::new();
    let out = s.path("m.dpm");
    let mut train = s.train(Path::new("/dev/stdin"), &out);
    succeeds(train.write_stdin(small_data(300)));
    assert!(out.exists());
    let mut predict = s.predict(&out, Path::new("/dev/stdin"), &s.path("p.csv"));
    succeeds(predict.write_stdin(small_data(30)));
    let predictions = std::fs::read_to_string(s.path("p.csv")).unwrap();
    assert_eq!(predictions.lines().count(), 31);

    // A FIFO, fed gzip (recognized by its magic bytes), out of core.
    let data = s.path("rows.csv");
    fifo(&data);
    let feeder = {
        let data = data.clone();
        std::thread::spawn(move || {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(small_data(300).as_bytes()).unwrap();
            open_writer(&data).write_all(&gz.finish().unwrap()).unwrap();
        })
    };
    succeeds(
        s.train(&data, &s.path("f.dpm"))
            .args(["--model", "logistic", "--out-of-core"]),
    );
    feeder.join().unwrap();

    let parquet = s.path("rows.parquet");
    fifo(&parquet);
    let err = fails(&mut s.train(&parquet, &s.path("q.dpm")));
    assert!(err.contains("not a regular file"), "{err}");
    assert!(err.contains("write the data to a file"), "{err}");
    assert!(!s.path("q.dpm").exists());
}

// ---------------------------------------------------------------------------------------
// Item 5: outputs that are not regular files.

/// A FIFO, a link to one, a dangling link, a folder and a hard-linked file are refused as
/// outputs, with or without --force, by every writer; nothing is replaced.
#[cfg(unix)]
#[test]
fn rejects_outputs_that_are_not_regular_files() {
    let s = Setup::new();
    let data = s.write("data.csv", small_data(100).as_bytes());
    let model = s.model();
    let pipe = s.path("pipe");
    fifo(&pipe);
    let to_pipe = s.path("to-pipe");
    std::os::unix::fs::symlink(&pipe, &to_pipe).unwrap();
    let dangling = s.path("dangling");
    std::os::unix::fs::symlink(s.path("nothing-here"), &dangling).unwrap();
    let linked = s.write("linked", b"old");
    std::fs::hard_link(&linked, s.path("other-name")).unwrap();
    let special = [
        (&pipe, "not a regular file"),
        (&to_pipe, "not a regular file"),
    ];
    for (out, expected) in special {
        for force in [false, true] {
            let with = |mut cmd: Command| {
                if force {
                    cmd.arg("--force");
                }
                cmd
            };
            let mut train = with(s.train(&data, out));
            let mut predict = with(s.predict(&model, &data, out));
            let mut init = dpml();
            init.args(["schema", "init"])
                .arg(&data)
                .arg("--out")
                .arg(out);
            let mut init = with(init);
            for cmd in [&mut train, &mut predict, &mut init] {
                let err = fails(cmd);
                assert!(err.contains(expected), "{err}");
            }
        }
    }
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata(&pipe).unwrap().file_type().is_fifo());
    assert!(
        std::fs::symlink_metadata(&to_pipe)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let err = fails(s.train(&data, &dangling).arg("--force"));
    assert!(err.contains("symbolic link"), "{err}");
    assert!(
        std::fs::symlink_metadata(&dangling)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!s.path("nothing-here").exists());
    let err = fails(s.predict(&model, &data, &linked).arg("--force"));
    assert!(err.contains("hard links"), "{err}");
    assert_eq!(std::fs::read(&linked).unwrap(), b"old");
}

/// `--force` through a symbolic link to a regular file writes the file it names: the link
/// stays a link and its target holds the new output (as a ledger written through a link).
#[cfg(unix)]
#[test]
fn rejects_replacing_a_link_and_writes_through_it() {
    let s = Setup::new();
    let data = s.write("data.csv", small_data(100).as_bytes());
    let model = s.model();
    let target = s.write("real.csv", b"old");
    let link = s.path("link.csv");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    succeeds(s.predict(&model, &data, &link).arg("--force"));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written = std::fs::read_to_string(&target).unwrap();
    assert!(written.starts_with("prediction\n"), "{written}");
    assert_eq!(written.lines().count(), 101);
    assert!(hidden(s.dir.path()).is_empty());
}

// ---------------------------------------------------------------------------------------
// Item 6: `schema init` reads what `train` reads, and refuses what `train` refuses.

#[test]
fn rejects_duplicate_names_at_schema_init_and_reads_gzip() {
    let s = Setup::new();
    let data = s.write("dup.csv", b"x,c,x,y\n1,a,2,pos\n");
    let out = s.path("s.toml");
    let err = fails(
        dpml()
            .args(["schema", "init"])
            .arg(&data)
            .arg("--out")
            .arg(&out),
    );
    assert!(
        err.contains("dup.csv, line 1, field 3") && err.contains("\"x\""),
        "{err}"
    );
    assert!(!out.exists());

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(small_data(5).as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    for name in ["data.csv.gz", "data-gzip.csv"] {
        let data = s.write(name, &gz);
        let skeleton = succeeds(dpml().args(["schema", "init"]).arg(&data));
        for column in ["x", "c", "y"] {
            assert!(
                skeleton.contains(&format!("name = \"{column}\"")),
                "{skeleton}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Item 7: messages.

/// Huge and tiny numbers are printed in their short form (Rust's shortest round trip),
/// never digit by digit.
#[test]
fn rejects_huge_and_tiny_numbers_in_their_short_form() {
    let s = Setup::new();
    let data = s.write("data.csv", small_data(50).as_bytes());
    let out = s.path("m.dpm");
    let cases: Vec<(Command, &str)> = vec![
        (
            {
                let mut c = dpml();
                c.arg("train")
                    .arg("--data")
                    .arg(&data)
                    .arg("--schema")
                    .arg(s.path("schema.toml"))
                    .args(["--epsilon", "1e308", "--out"])
                    .arg(&out);
                c
            },
            "--epsilon 1e308",
        ),
        (
            {
                let mut c = s.train(&data, &out);
                c.args(["--regularization", "1e-300"]);
                c
            },
            "--regularization 1e-300",
        ),
        (
            {
                let mut c = s.train(&data, &out);
                c.args(["--model", "kernel", "--gamma", "1e308"]);
                c
            },
            "1e308",
        ),
        (
            {
                let mut c = s.train(&data, &out);
                c.args(["--tune", "1e-300,1e-3"]);
                c
            },
            "1e-300",
        ),
        (
            {
                let mut c = dpml();
                c.args(["ledger", "init"])
                    .arg(s.path("l.json"))
                    .args(["--total-epsilon", "1e308"]);
                c
            },
            "--total-epsilon 1e308",
        ),
        (
            {
                let schema = s.write(
                    "wide.toml",
                    SCHEMA.replace("upper = 10", "upper = -1e300").as_bytes(),
                );
                let mut c = dpml();
                c.arg("train")
                    .arg("--data")
                    .arg(&data)
                    .arg("--schema")
                    .arg(schema)
                    .args(["--epsilon", "1", "--out"])
                    .arg(&out);
                c
            },
            "-1e300",
        ),
    ];
    for (mut cmd, expected) in cases {
        let err = fails(&mut cmd);
        assert!(err.contains(expected), "{err}");
        assert!(!err.contains("00000000000000000000"), "{err}");
    }
    assert!(!out.exists());
}

/// A missing feature value speaks of the feature's policy; a missing label of the label.
#[test]
fn rejects_missing_values_naming_what_is_missing() {
    let s = Setup::new();
    let feature = s.write("f.csv", format!("{}?,a,pos\n", small_data(5)).as_bytes());
    let err = fails(&mut s.train(&feature, &s.path("m.dpm")));
    assert!(err.contains("line 7, column x"), "{err}");
    assert!(!err.contains("label"), "{err}");
    assert!(err.contains("missing = \"zero\""), "{err}");
    let label = s.write("l.csv", format!("{}3,a,?\n", small_data(5)).as_bytes());
    let err = fails(&mut s.train(&label, &s.path("m.dpm")));
    assert!(
        err.contains("line 7, column y") && err.contains("label"),
        "{err}"
    );
    assert!(!s.path("m.dpm").exists());
}

// ---------------------------------------------------------------------------------------
// A reader that goes away: `dpml inspect m.dpm | head -1` once panicked ("failed printing
// to stdout: Broken pipe"). Every printing command now ends as Unix tools end: quietly,
// with status 141 (what a shell reports for SIGPIPE).

#[test]
fn ends_quietly_when_the_reader_of_its_output_goes_away() {
    let s = Setup::new();
    let model = s.model();
    let data = model.with_file_name("train.csv");
    let schema = s.path("schema.toml");
    let inspect = vec![model.as_os_str(), "--schema".as_ref(), schema.as_os_str()];
    let evaluate = vec![
        "--json".as_ref(),
        "--model".as_ref(),
        model.as_os_str(),
        "--schema".as_ref(),
        schema.as_os_str(),
        "--data".as_ref(),
        data.as_os_str(),
    ];
    for (command, args) in [("inspect", inspect), ("evaluate", evaluate)] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("dpml"))
            .arg(command)
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{command}: {err}");
        assert_eq!(out.status.code(), Some(141), "{command}: {err}");
    }
}
