//! The privacy ledger: a JSON file recording every spend against a dataset's total ε.
//!
//! A training run takes the ledger's lock (an advisory `flock` on `LEDGER.lock`, released by
//! the OS when the process ends, however it ends), checks that its ε fits in what is left
//! — **before reading any data** — and records its spend before it writes the model. Two
//! runs at once cannot both pass the check: the second is refused while the first holds
//! the lock. Writes go to a temporary file that is synced and renamed over the ledger, so a
//! crash leaves the old ledger or the new one, never half of one.
//!
//! Sums are rounded up (the safe direction): where a floating-point addition is inexact the
//! recorded total is the next double above it, so rounding can refuse a run at the very
//! edge of the budget but never let one through that exceeds it.
//!
//! A ledger is **pure ε** unless it was created with a total δ (`--total-delta`): a run that
//! spends a δ (random-stopping tuning, whose cap on runs adds one) is refused by a pure-ε
//! ledger, because a δ > 0 is a probability that the ε guarantee fails outright, which no
//! ε budget covers. δs add up (basic composition), rounded up like the εs. Both fields are
//! omitted from the file while zero, so a pure-ε ledger reads and writes as before.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use dp_noise::add_rounding_up;
use serde::{Deserialize, Serialize};

use crate::{Failure, fail};

/// The ledger format's name and version.
pub const LEDGER_FORMAT: &str = "dpml-ledger/1";

/// Largest ledger file read (a ledger is a list of spends, not data).
const MAX_LEDGER_BYTES: u64 = 64 << 20;

/// One recorded spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spend {
    /// ε spent.
    pub epsilon: f64,
    /// What spent it ("train").
    pub command: String,
    /// The model written.
    pub model: String,
    /// The schema's hash.
    pub schema_sha256: String,
    /// δ spent (0 for a pure-ε run).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta: f64,
    /// Seconds since the Unix epoch.
    pub time_unix: u64,
}

/// The ledger file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// [`LEDGER_FORMAT`].
    pub format: String,
    /// What the budget is for (free text).
    pub dataset: String,
    /// The dataset's total ε.
    pub total_epsilon: f64,
    /// The dataset's total δ (0: a pure-ε ledger, which refuses any δ).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub total_delta: f64,
    /// Every spend so far.
    pub spends: Vec<Spend>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Ledger {
    /// A new ledger with nothing spent.
    pub fn new(dataset: &str, total_epsilon: f64, total_delta: f64) -> Result<Self, Failure> {
        check_epsilon("--total-epsilon", total_epsilon)?;
        if !(0.0..1.0).contains(&total_delta) {
            return Err(fail(format!(
                "--total-delta = {total_delta}: must be a δ in [0, 1) (0: a pure-ε ledger)"
            )));
        }
        Ok(Self {
            format: LEDGER_FORMAT.into(),
            dataset: dataset.into(),
            total_epsilon,
            total_delta,
            spends: Vec::new(),
        })
    }

    /// δ spent so far, rounded up.
    pub fn spent_delta(&self) -> f64 {
        self.spends
            .iter()
            .fold(0.0, |s, spend| add_rounding_up(s, spend.delta))
    }

    /// ε spent so far, rounded up.
    pub fn spent(&self) -> f64 {
        self.spends
            .iter()
            .fold(0.0, |s, spend| add_rounding_up(s, spend.epsilon))
    }

    /// Refuses a spend of `epsilon` and `delta` that would take either total above the
    /// budget, and any δ > 0 on a pure-ε ledger.
    pub fn check_spend(&self, path: &Path, epsilon: f64, delta: f64) -> Result<(), Failure> {
        if delta > 0.0 {
            if self.total_delta == 0.0 {
                return Err(fail(format!(
                    "ledger {} is pure ε (no total δ), but this run spends δ = {delta:e} on top                      of ε = {epsilon}: a δ is a chance that the ε guarantee fails outright,                      which an ε budget does not cover; refused before reading any data (train pure ε —                      no --delta, --tune-method split — or use a ledger created with                      --total-delta)",
                    path.display()
                )));
            }
            let spent = self.spent_delta();
            let after = add_rounding_up(spent, delta);
            if after > self.total_delta {
                return Err(fail(format!(
                    "ledger {}: spending δ = {delta:e} would bring the total δ spent to                      {after:e}, above the budget of {:e} for {:?}; refused before reading any                      data",
                    path.display(),
                    self.total_delta,
                    self.dataset
                )));
            }
        }
        let spent = self.spent();
        let after = add_rounding_up(spent, epsilon);
        if after > self.total_epsilon {
            return Err(fail(format!(
                "ledger {}: spending ε = {epsilon} would bring the total spent to {after}, above \
                 the budget of {} for {:?} ({spent} spent in {} runs); refused before reading \
                 any data",
                path.display(),
                self.total_epsilon,
                self.dataset,
                self.spends.len()
            )));
        }
        Ok(())
    }

    fn check(self, path: &Path) -> Result<Self, Failure> {
        let corrupt = |why: String| fail(format!("ledger {} is corrupt: {why}", path.display()));
        if self.format != LEDGER_FORMAT {
            return Err(corrupt(format!(
                "format {:?}, expected {LEDGER_FORMAT:?}",
                self.format
            )));
        }
        if !(self.total_epsilon.is_finite() && self.total_epsilon > 0.0) {
            return Err(corrupt(format!(
                "total_epsilon = {} is not a finite ε > 0",
                self.total_epsilon
            )));
        }
        if !(0.0..1.0).contains(&self.total_delta) {
            return Err(corrupt(format!(
                "total_delta = {} is not a δ in [0, 1)",
                self.total_delta
            )));
        }
        for (i, spend) in self.spends.iter().enumerate() {
            if !(spend.epsilon.is_finite() && spend.epsilon > 0.0) {
                return Err(corrupt(format!(
                    "spends[{i}].epsilon = {} is not a finite ε > 0",
                    spend.epsilon
                )));
            }
            if !(0.0..1.0).contains(&spend.delta) {
                return Err(corrupt(format!(
                    "spends[{i}].delta = {} is not a δ in [0, 1)",
                    spend.delta
                )));
            }
        }
        if self.spent_delta() > self.total_delta {
            return Err(corrupt(format!(
                "its spends' δs add up to {:e}, above its total_delta = {:e}",
                self.spent_delta(),
                self.total_delta
            )));
        }
        if self.spent() > self.total_epsilon {
            return Err(corrupt(format!(
                "its spends add up to {}, above its total_epsilon = {}",
                self.spent(),
                self.total_epsilon
            )));
        }
        Ok(self)
    }

    /// Reads and checks a ledger.
    pub fn load(path: &Path) -> Result<Self, Failure> {
        let io =
            |e: std::io::Error| fail(format!("ledger {}: cannot read it: {e}", path.display()));
        let file = File::open(path).map_err(io)?;
        let mut text = String::new();
        file.take(MAX_LEDGER_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(io)?;
        if text.len() as u64 > MAX_LEDGER_BYTES {
            return Err(fail(format!(
                "ledger {} is corrupt: larger than {MAX_LEDGER_BYTES} bytes",
                path.display()
            )));
        }
        let ledger: Self = serde_json::from_str(&text)
            .map_err(|e| fail(format!("ledger {} is corrupt: {e}", path.display())))?;
        ledger.check(path)
    }

    /// Writes the ledger atomically (temporary file, sync, rename).
    pub fn store(&self, path: &Path) -> Result<(), Failure> {
        let mut text = serde_json::to_string_pretty(self).expect("a ledger serializes");
        text.push('\n');
        let temp = sibling(path, &format!("dpml-{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            fail(format!("ledger {}: cannot write it: {e}", path.display()))
        })
    }
}

fn check_epsilon(what: &str, epsilon: f64) -> Result<(), Failure> {
    if epsilon.is_finite() && epsilon > 0.0 {
        Ok(())
    } else {
        Err(fail(format!("{what} = {epsilon}: must be a finite ε > 0")))
    }
}

/// `path` with `.suffix` appended to its file name (`ledger.json.lock`).
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".");
    name.push(suffix);
    path.with_file_name(name)
}

/// The ledger's lock, held for a whole run.
pub struct LedgerLock {
    _file: File,
}

impl LedgerLock {
    /// Takes the lock of the ledger at `path`, or refuses at once naming the holder.
    pub fn take(path: &Path) -> Result<Self, Failure> {
        let lock = sibling(path, "lock");
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            // A symbolic link planted there is not followed.
            options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
        }
        let mut file = options.open(&lock).map_err(|e| {
            fail(format!(
                "ledger lock {}: cannot open it (it must be a plain file): {e}",
                lock.display()
            ))
        })?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(fail(format!(
                    "ledger {}: another dpml run (process {}) is using it; wait for it to finish",
                    path.display(),
                    holder.trim()
                )));
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(fail(format!(
                    "ledger lock {}: cannot lock it: {e}; refusing to spend without the lock",
                    lock.display()
                )));
            }
        }
        let _ = file.set_len(0);
        let _ = file.write_all(std::process::id().to_string().as_bytes());
        Ok(Self { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_round_up_only_when_inexact() {
        assert_eq!(add_rounding_up(1.0, 1.0), 2.0);
        assert_eq!(add_rounding_up(add_rounding_up(1.0, 1.0), 1.0), 3.0);
        // 0.1 + 0.2 is inexact in doubles: the result is not below the exact sum.
        let s = add_rounding_up(0.1, 0.2);
        // The exact sum of the doubles 0.1 and 0.2 lies below 0.30000000000000004 = 0.1 + 0.2,
        // so rounding to nearest already overestimates: no extra step.
        assert_eq!(s, 0.1 + 0.2);
        // 1 + 2^-60 rounds down to 1 in doubles; rounded up it is above 1.
        assert!(add_rounding_up(1.0, 2f64.powi(-60)) > 1.0);
    }
}
