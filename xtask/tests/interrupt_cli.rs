//! `reproduce` interrupted by SIGINT or SIGTERM, at points a test-only hook
//! (`XTASK_TEST_PAUSE_AT`) makes the run stop at: before any result is replaced, in the
//! middle of replacing them, and between replacing them and regenerating the index. Each
//! time the run must exit non-zero and leave a consistent results folder: no lock file, no
//! folder it created, no temporary file, an experiment's results all old or all new, and an
//! index that lists what is on disk.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

// Shared with the other command-line tests, which use the helpers this file does not.
#[allow(dead_code)]
mod common;

use common::{scratch, text};

/// Longest wait for the run to reach its pause point (kernel --quick computes first).
const REACH: Duration = Duration::from_secs(300);
/// Longest wait for the run to end once signalled.
const END: Duration = Duration::from_secs(60);

/// Runs `reproduce kernel --quick --out <out>` paused at `point`, sends `signal` once it
/// says it is there, and returns its exit status and stderr.
fn interrupt_at(point: &str, signal: libc::c_int, out: &Path) -> (ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "reproduce",
            "kernel",
            "--quick",
            "--offline",
            "--out",
            text(out),
        ])
        .env("XTASK_TEST_PAUSE_AT", point)
        .env_remove("DP_ML_DATA_DIR")
        .env_remove("DP_ML_DATA_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let marker = format!("xtask: paused at {point}");
    let mut log = Vec::new();
    let deadline = std::time::Instant::now() + REACH;
    while !log.iter().any(|l: &String| l.contains(&marker)) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match received.recv_timeout(left) {
            Ok(line) => log.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!("the run never paused at {point}:\n{}", log.join("\n"));
            }
        }
    }
    // SAFETY: sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let deadline = std::time::Instant::now() + END;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not end after the signal:\n{}", log.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    reader.join().unwrap();
    log.extend(received.try_iter());
    (status, log.join("\n"))
}

/// Every file under `dir`, relative, sorted (hidden ones included).
fn tree(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, root: &Path, names: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, names);
            } else {
                let relative = path.strip_prefix(root).unwrap();
                names.push(relative.to_string_lossy().into_owned());
            }
        }
    }
    let mut names = Vec::new();
    walk(dir, dir, &mut names);
    names.sort();
    names
}

/// Results of an earlier run: kernel's (to be replaced) and predict's (not run this time,
/// so the index must keep listing it), and an index over both.
fn earlier_results(out: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let entry = |experiment: &str| {
        format!(
            r#"{{"experiment": "{experiment}", "title": "earlier {experiment}", "mode": "quick",
                "wall_seconds": 1.0, "finished_utc": "2001-01-01 00:00",
                "headlines": [{{"what": "earlier {experiment} headline", "measured": 0.5,
                "published": null}}]}}"#
        )
    };
    let files = [
        (
            "kernel/cells.json",
            r#"{"mode": "quick", "earlier": true}"#.to_owned(),
        ),
        ("kernel/cells.csv", "earlier kernel cells\n".to_owned()),
        ("kernel/summary.md", "earlier kernel summary\n".to_owned()),
        ("kernel/run.json", entry("kernel")),
        ("predict/summary.md", "earlier predict summary\n".to_owned()),
        ("predict/run.json", entry("predict")),
        (
            "index.md",
            "earlier index: earlier kernel headline, earlier predict headline\n".to_owned(),
        ),
    ];
    files
        .into_iter()
        .map(|(name, contents)| {
            let path = out.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &contents).unwrap();
            (path, contents.into_bytes())
        })
        .collect()
}

fn assert_stopped_by_signal(status: ExitStatus, signal: libc::c_int, log: &str) {
    assert!(!status.success(), "{log}");
    // Handled (cleaned up, then exited 128 + signal), not killed by the signal.
    assert_eq!(status.code(), Some(128 + signal), "{status:?}\n{log}");
}

/// Interrupted before replacing anything: everything as it was, nothing added.
#[test]
fn an_interrupt_before_replacing_leaves_everything_as_it_was() {
    let scratch = scratch("interrupt-computing");
    // A fresh --out: the folders the run creates must go again.
    let fresh = scratch.join("new");
    let (status, log) = interrupt_at("computing", libc::SIGINT, &fresh.join("results"));
    assert_stopped_by_signal(status, libc::SIGINT, &log);
    assert!(!fresh.exists(), "left behind: {:?}\n{log}", tree(&scratch));
    // Over earlier results, by SIGTERM this time.
    let out = scratch.join("results");
    let earlier = earlier_results(&out);
    let before = tree(&out);
    let (status, log) = interrupt_at("computing", libc::SIGTERM, &out);
    assert_stopped_by_signal(status, libc::SIGTERM, &log);
    assert_eq!(tree(&out), before, "{log}");
    for (path, bytes) in &earlier {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// The results the run left in `out/kernel` are all its own, and the index lists them and
/// predict's earlier ones: what is on disk.
fn assert_replaced_and_indexed(out: &Path, earlier: &[(PathBuf, Vec<u8>)], log: &str) {
    let kernel = out.join("kernel");
    for (path, bytes) in earlier.iter().filter(|(p, _)| p.starts_with(&kernel)) {
        assert_ne!(
            &std::fs::read(path).unwrap(),
            bytes,
            "{} not replaced",
            path.display()
        );
    }
    let files = tree(&kernel);
    assert!(
        files.iter().all(|f| !f.starts_with('.')) && files.iter().any(|f| f.ends_with(".svg")),
        "{files:?}\n{log}"
    );
    // cells.json and summary.md are from the same run.
    let cells: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kernel.join("cells.json")).unwrap()).unwrap();
    let wall = cells["wall_seconds"].as_f64().unwrap();
    let summary = std::fs::read_to_string(kernel.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!("wall time {wall:.1} s")),
        "{summary}"
    );
    // The index shows this run's kernel entry and keeps predict's.
    let entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kernel.join("run.json")).unwrap()).unwrap();
    let index = std::fs::read_to_string(out.join("index.md")).unwrap();
    assert!(
        index.contains(entry["finished_utc"].as_str().unwrap()),
        "{index}\n{log}"
    );
    for headline in entry["headlines"].as_array().unwrap() {
        assert!(
            index.contains(headline["what"].as_str().unwrap()),
            "{index}"
        );
    }
    assert!(
        !index.contains("earlier kernel headline") && index.contains("earlier predict headline"),
        "{index}\n{log}"
    );
    assert!(!out.join(".xtask-run.lock").exists() && !kernel.join(".xtask-run.lock").exists());
}

/// Interrupted while replacing results: the replacement completes, then the index is
/// regenerated, so no old file sits beside new ones and the index shows the new numbers.
#[test]
fn an_interrupt_while_replacing_completes_the_results_and_the_index() {
    let scratch = scratch("interrupt-replacing");
    let out = scratch.join("results");
    let earlier = earlier_results(&out);
    let (status, log) = interrupt_at("replacing", libc::SIGINT, &out);
    assert_stopped_by_signal(status, libc::SIGINT, &log);
    assert_replaced_and_indexed(&out, &earlier, &log);
    std::fs::remove_dir_all(&scratch).unwrap();
}

/// Interrupted after the results were replaced, before the index was: the index is
/// regenerated from the results on disk.
#[test]
fn an_interrupt_before_indexing_regenerates_the_index() {
    let scratch = scratch("interrupt-indexing");
    let out = scratch.join("results");
    let earlier = earlier_results(&out);
    let (status, log) = interrupt_at("indexing", libc::SIGTERM, &out);
    assert_stopped_by_signal(status, libc::SIGTERM, &log);
    assert_replaced_and_indexed(&out, &earlier, &log);
    std::fs::remove_dir_all(&scratch).unwrap();
}
