//! When a spend counts — one rule for every face.
//!
//! **A fit is charged once it may have drawn noise, whatever happens after; a refusal made
//! before any noise is drawn costs nothing.** "May have drawn noise" is decided by the
//! generator itself ([`dp_noise::Witnessed`]), not by classifying errors: the fit's
//! generator is watched, and a fit that failed after its first draw (DP-SGD whose iterates
//! diverged, a solver that could not certify, a pass over rows that failed) is charged like
//! one that succeeded, because its failure is a function of the noisy computation.
//!
//! Where the fit's outputs are files (the command line), they are **staged before the
//! charge is stored**: written under temporary names and synced, then the ledger is
//! charged, then the files are moved into place. An output that cannot be written is
//! found before the charge, when nothing computed from the noise has been shown to anyone,
//! so it costs nothing; a crash between the charge and the move over-counts, never
//! under-counts.
//!
//! Two ways to hold the budget while the fit runs, both under that rule:
//! - [`Pending`] (the command line): the file's lock is held for the whole run; the spend
//!   is checked before any data are read and stored after the outputs are staged, or after
//!   a failure that followed a draw.
//! - [`Budget`] (Python, Spark's driver): the spend is recorded before the fit, the lock
//!   (if any) held only while recording, and taken back ([`Budget::refund`]) when the fit
//!   was refused before it drew anything.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::ledger::{Ledger, LedgerError, Spend};
use crate::ledger_file::{LedgerFile, LockWait};

/// What a fit spends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Charge {
    /// ε (for the replace-one relation the ledger composes).
    pub epsilon: f64,
    /// δ (0 for pure ε).
    pub delta: f64,
}

/// A charge waiting on a locked ledger file (the command line's run).
#[derive(Debug)]
pub struct Pending {
    file: LedgerFile,
    ledger: Ledger,
    charge: Charge,
    recorded: Option<u64>,
}

impl Pending {
    /// Locks the ledger at `path` (refusing at once if another run holds it), reads it
    /// and checks that `charge` fits — all before any data are read.
    pub fn begin(path: &Path, charge: Charge) -> Result<Self, LedgerError> {
        let file = LedgerFile::lock(path, LockWait::Refuse)?;
        let ledger = file.load()?;
        ledger.check_spend(file.name(), charge.epsilon, charge.delta)?;
        Ok(Self {
            file,
            ledger,
            charge,
            recorded: None,
        })
    }

    /// Records the spend in the ledger held in memory (not yet stored) and returns its
    /// number and the ledger after it, for the report that is staged before [`Self::store`].
    pub fn record(&mut self, mut spend: Spend) -> Result<(u64, &Ledger), LedgerError> {
        assert!(self.recorded.is_none(), "a run records one spend");
        spend.epsilon = self.charge.epsilon;
        spend.delta = self.charge.delta;
        let sequence = self.ledger.record(self.file.name(), spend)?;
        self.recorded = Some(sequence);
        Ok((sequence, &self.ledger))
    }

    /// Stores the ledger with the recorded spend and releases the lock.
    pub fn store(mut self) -> Result<Ledger, LedgerError> {
        assert!(self.recorded.is_some(), "store after record");
        self.file.store(&mut self.ledger)?;
        Ok(self.ledger)
    }

    /// The fit failed: stores its spend if it may have drawn noise (returning the spend's
    /// number), and releases the lock either way.
    pub fn settle_failure(mut self, drew: bool, spend: Spend) -> Result<Option<u64>, LedgerError> {
        if !drew {
            return Ok(None);
        }
        let (sequence, _) = self.record(spend)?;
        self.store()?;
        Ok(Some(sequence))
    }
}

/// A budget charged before each fit and refunded after a refusal that drew nothing: in
/// memory, or a ledger file shared with other processes and the command line.
#[derive(Debug)]
pub enum Budget {
    /// A ledger held in this process only.
    Memory(Mutex<Ledger>),
    /// A ledger file (locked for each charge or refund, waiting up to the given time for
    /// another process).
    File {
        /// The path given.
        path: PathBuf,
        /// How long to wait for another process's lock.
        wait: std::time::Duration,
    },
}

impl Budget {
    /// A new ledger in memory.
    pub fn in_memory(total_epsilon: f64, total_delta: f64) -> Result<Self, LedgerError> {
        Ok(Self::Memory(Mutex::new(Ledger::new(
            "in memory",
            total_epsilon,
            total_delta,
        )?)))
    }

    /// An existing ledger file (read and checked now, so a bad file is refused at once).
    pub fn open(path: &Path, wait: std::time::Duration) -> Result<Self, LedgerError> {
        LedgerFile::lock(path, LockWait::For(wait))?.load()?;
        Ok(Self::File {
            path: path.to_owned(),
            wait,
        })
    }

    /// The name messages give this budget.
    pub fn name(&self) -> String {
        match self {
            Self::Memory(_) => "(in memory)".into(),
            Self::File { path, .. } => path.display().to_string(),
        }
    }

    fn with<T>(
        &self,
        change: impl FnOnce(&mut Ledger, &str) -> Result<T, LedgerError>,
        store: bool,
    ) -> Result<T, LedgerError> {
        match self {
            Self::Memory(ledger) => {
                let mut ledger = ledger
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                let before = ledger.clone();
                change(&mut ledger, "(in memory)").inspect_err(|_| *ledger = before)
            }
            Self::File { path, wait } => {
                let file = LedgerFile::lock(path, LockWait::For(*wait))?;
                let mut ledger = file.load()?;
                let out = change(&mut ledger, file.name())?;
                if store {
                    file.store(&mut ledger)?;
                }
                Ok(out)
            }
        }
    }

    /// Checks and records `spend` now (before the fit); returns its number.
    pub fn charge(&self, spend: Spend) -> Result<u64, LedgerError> {
        self.with(|ledger, name| ledger.record(name, spend), true)
    }

    /// Takes back spend `sequence`: only for a fit refused before it drew any noise.
    pub fn refund(&self, sequence: u64) -> Result<Spend, LedgerError> {
        self.with(|ledger, name| ledger.refund(name, sequence), true)
    }

    /// Gives spend `sequence` its mechanism's curve, known after the fit
    /// ([`Ledger::attach_curve`]); returns whether it was kept.
    pub fn attach_curve(
        &self,
        sequence: u64,
        curve: crate::composition::Curve,
    ) -> Result<bool, LedgerError> {
        self.with(
            |ledger, name| ledger.attach_curve(name, sequence, curve),
            true,
        )
    }

    /// The ledger as it is now.
    pub fn snapshot(&self) -> Result<Ledger, LedgerError> {
        self.with(|ledger, _| Ok(ledger.clone()), false)
    }
}

#[cfg(test)]
#[path = "charge_tests.rs"]
mod tests;
