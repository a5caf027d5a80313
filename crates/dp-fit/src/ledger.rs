//! A dataset's privacy budget and every spend against it — the one ledger behind every face.
//!
//! [`Ledger`] is the content: a total ε (and a total δ, 0 for a pure-ε ledger), a list of
//! [`Spend`]s, an identity and a spend counter. It lives in memory (Python's
//! `dpml.Ledger(epsilon)`) or in a JSON file ([`crate::LedgerFile`]: `dpml ledger init`, and
//! Python's `dpml.Ledger.open`), in the format [`LEDGER_FORMAT`].
//!
//! **Sums are exact.** Spends are added as exact rationals ([`dp_noise::ExactSum`]), so a
//! verdict never depends on rounding or on the order of spends: ten spends of the double
//! 0.1 exceed a total of 1, as they do in the reals. What is *reported* is rounded in the
//! safe direction: spent up, remaining down.
//!
//! **A pure-ε ledger refuses any δ > 0**: a δ is a probability that the ε guarantee fails
//! outright, which no ε budget covers. A pure-ε ledger, and a ledger whose spends are all
//! pure ε, add up ε exactly (basic composition).
//!
//! **An (ε, δ) ledger composes tightly.** Each spend records its mechanism's privacy curve
//! where it has one ([`Spend::curve`]: a Gaussian's noise-to-sensitivity ratio, a zCDP ρ,
//! DP-SGD's rate, σ and steps); the ledger's total is then the least ε certified at its
//! δ by basic composition (ε and δ added up) or by the privacy-loss distributions of all the
//! spends convolved ([`crate::composition`]), rounded up: never more than basic
//! composition, never less than the truth. A spend is accepted when the composition with
//! it is within both totals, and refused otherwise, nothing charged.
//! [`Ledger::composition`] says which composition certified the total.
//!
//! **Resets are visible, not prevented.** A ledger file is a local file: whoever can write
//! it can edit it, delete spends or restore an older copy, and no file format can stop
//! that. What the ledger does is make such a reset detectable: it has a random identity
//! (`id`) fixed when it is created, and every spend takes the next number of a counter
//! (`sequence`) that is recorded in the spend and in the report of the model it paid for.
//! [`Ledger::missing`] names the reports whose spend the ledger no longer holds
//! (`dpml ledger check`).

use std::fmt;

use dp_noise::ExactSum;
use serde::{Deserialize, Serialize};

use crate::composition::{Composition, Curve, Method, pld_epsilon};

/// The ledger format's name and version (files written before identities were added load
/// unchanged; they are given an identity the first time a spend is stored). Spends gained
/// an optional `curve` (absent: the spend is its (ε, δ) pair, as every spend written before
/// curves is read); a file holding one is refused by a reader older than curves (spends
/// deny unknown fields) rather than composed as basic spends.
pub const LEDGER_FORMAT: &str = "dpml-ledger/1";

/// The relative gain in ε over basic composition below which a ledger reports basic
/// composition's total rather than PLD's ([`Ledger::composition`]).
pub const REPORTED_GAIN: f64 = 1e-3;

/// The largest total ε a ledger takes (the mechanisms' own ceiling, `dp_erm::MAX_EPSILON`,
/// is far below it; a larger ledger is a typo).
pub const MAX_TOTAL_EPSILON: f64 = 1e6;

/// One recorded spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spend {
    /// ε spent.
    pub epsilon: f64,
    /// What spent it (`"train"` on the command line, `"python: LogisticRegression"`, …).
    pub command: String,
    /// The model written, or what the fit released.
    pub model: String,
    /// The schema's hash (empty when the data came without a schema).
    #[serde(default)]
    pub schema_sha256: String,
    /// δ spent (0 for a pure-ε spend).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delta: f64,
    /// Seconds since the Unix epoch.
    pub time_unix: u64,
    /// This spend's number in its ledger (1, 2, …; never reused, even after a refund).
    /// Absent in spends recorded before ledgers numbered them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u64>,
    /// The mechanism's privacy curve, or enough to rebuild it (absent: its (ε, δ) pair is
    /// all the ledger knows of it — a pure-ε spend, objective perturbation, every spend
    /// recorded before curves).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve: Option<Curve>,
}

impl Spend {
    /// The same spend with its mechanism's curve.
    pub fn with_curve(mut self, curve: Option<Curve>) -> Self {
        self.curve = curve;
        self
    }

    /// A spend of `epsilon` and `delta` by `command`, for `model`, stamped now.
    pub fn new(epsilon: f64, delta: f64, command: &str, model: &str) -> Self {
        Self {
            epsilon,
            command: command.into(),
            model: model.into(),
            schema_sha256: String::new(),
            delta,
            time_unix: unix_time(),
            sequence: None,
            curve: None,
        }
    }
}

/// The ledger's content.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
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
    /// A random identity fixed at creation (hex), recorded in every report it charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The number the next spend takes (spends are numbered from 1).
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub next_sequence: u64,
    /// Every spend so far.
    pub spends: Vec<Spend>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("dataset", &self.dataset)
            .field("total_epsilon", &self.total_epsilon)
            .field("total_delta", &self.total_delta)
            .field("id", &self.id)
            .field("spends", &self.spends.len())
            .finish()
    }
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn is_zero_count(x: &u64) -> bool {
    *x == 0
}

fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What a ledger has spent ([`Ledger::composition`]) and has left, rounded down
/// ([`Ledger::summary`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The composed (ε, δ) spent and how it was composed.
    pub composition: Composition,
    /// ε left ([`Ledger::remaining`]).
    pub remaining_epsilon: f64,
    /// δ left ([`Ledger::remaining_delta`]).
    pub remaining_delta: f64,
}

/// Why a ledger refused, or could not be used. `Display` names the ledger and the problem;
/// nothing in it depends on the data of a fit.
#[derive(Debug, Clone, PartialEq)]
pub enum LedgerError {
    /// A total or a spend that is not a valid ε or δ (a parameter, named).
    InvalidAmount {
        /// The parameter.
        what: String,
        /// Its value.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// The spend does not fit in what is left.
    Exceeded(Box<Overspend>),
    /// A δ > 0 asked of a pure-ε ledger.
    PureEpsilon {
        /// The ledger.
        ledger: String,
        /// The ε asked.
        epsilon: f64,
        /// The δ asked.
        delta: f64,
    },
    /// The file is not a valid ledger.
    Corrupt {
        /// The ledger.
        ledger: String,
        /// What is wrong.
        why: String,
    },
    /// The file cannot be read or written.
    Io {
        /// The ledger (or its lock).
        ledger: String,
        /// What failed.
        why: String,
    },
    /// Another process holds the ledger's lock.
    Held {
        /// The ledger.
        ledger: String,
        /// The holder's process id, as it wrote it.
        holder: String,
    },
    /// The ledger cannot be spent safely through this file (several hard links, not a
    /// regular file).
    Unsafe {
        /// The ledger.
        ledger: String,
        /// Why, and what to do.
        why: String,
    },
    /// A refund of a spend this ledger does not hold.
    UnknownSpend {
        /// The ledger.
        ledger: String,
        /// The spend's number.
        sequence: u64,
    },
}

/// The facts of a refused spend.
#[derive(Debug, Clone, PartialEq)]
pub struct Overspend {
    /// The ledger.
    pub ledger: String,
    /// What it is for.
    pub dataset: String,
    /// Which budget overflows: `"ε"` or `"δ"`.
    pub which: &'static str,
    /// The ε and δ asked.
    pub asked: (f64, f64),
    /// The ε and δ left before it (rounded down).
    pub left: (f64, f64),
    /// The totals.
    pub total: (f64, f64),
    /// The ε spent before it, rounded up.
    pub spent: f64,
    /// The spent ε or δ (the overflowing one) after it, rounded up.
    pub after: f64,
    /// Spends so far.
    pub runs: usize,
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidAmount {
                what,
                value,
                expected,
            } => write!(f, "{what} = {value:?}: must be {expected}"),
            Self::Exceeded(o) if o.which == "δ" => write!(
                f,
                "ledger {}: spending δ = {:e} would bring the total δ spent to {:e}, above the \
                 budget of {:e} for {:?}; refused before reading any data",
                o.ledger, o.asked.1, o.after, o.total.1, o.dataset
            ),
            Self::Exceeded(o) => write!(
                f,
                "ledger {}: spending ε = {:?} would bring the total spent to {:?}, above the \
                 budget of {:?} for {:?} ({:?} spent in {} runs); refused before reading any data",
                o.ledger, o.asked.0, o.after, o.total.0, o.dataset, o.spent, o.runs
            ),
            Self::PureEpsilon {
                ledger,
                epsilon,
                delta,
            } => write!(
                f,
                "ledger {ledger} is pure ε (no total δ), but this run spends δ = {delta:e} on \
                 top of ε = {epsilon:?}: a δ is a chance that the ε guarantee fails outright, \
                 which an ε budget does not cover; refused before reading any data"
            ),
            Self::Corrupt { ledger, why } => write!(f, "ledger {ledger} is corrupt: {why}"),
            Self::Io { ledger, why } => write!(f, "ledger {ledger}: {why}"),
            Self::Held { ledger, holder } => write!(
                f,
                "ledger {ledger}: another dpml run (process {holder}) is using it; wait for it \
                 to finish"
            ),
            Self::Unsafe { ledger, why } => write!(f, "ledger {ledger}: {why}"),
            Self::UnknownSpend { ledger, sequence } => write!(
                f,
                "ledger {ledger}: no spend numbered {sequence} to take back"
            ),
        }
    }
}

impl std::error::Error for LedgerError {}

/// `value` as an ε: finite, > 0 and at most `ceiling`.
pub(crate) fn check_epsilon(what: &str, value: f64, ceiling: f64) -> Result<f64, LedgerError> {
    if value.is_finite() && value > 0.0 && value <= ceiling {
        Ok(value)
    } else {
        Err(LedgerError::InvalidAmount {
            what: what.into(),
            value,
            expected: "a finite ε > 0 (at most 10⁶)",
        })
    }
}

/// `value` as a δ: 0 (pure ε) or in (0, `MAX_DELTA`], as every fit takes it.
pub(crate) fn check_delta(what: &str, value: f64) -> Result<f64, LedgerError> {
    if (0.0..=dp_noise::MAX_DELTA).contains(&value) {
        Ok(value)
    } else {
        Err(LedgerError::InvalidAmount {
            what: what.into(),
            value,
            expected: "a δ in [0, 0.1] (0: pure ε; the library's MAX_DELTA: a useful δ is far \
                       below 1/n)",
        })
    }
}

/// A fresh random identity: 128 bits from the operating system's entropy, in hex.
fn fresh_id() -> Result<String, LedgerError> {
    use rand::Rng;
    let mut rng = dp_noise::DpRng::from_os_entropy().map_err(|e| LedgerError::Io {
        ledger: "(new)".into(),
        why: format!("no randomness for its identity: {e}"),
    })?;
    Ok(format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64()))
}

impl Ledger {
    /// A new ledger with nothing spent and a fresh identity. `total_delta` = 0 makes a
    /// pure-ε ledger.
    pub fn new(dataset: &str, total_epsilon: f64, total_delta: f64) -> Result<Self, LedgerError> {
        check_epsilon("total ε", total_epsilon, MAX_TOTAL_EPSILON)?;
        check_delta("total δ", total_delta)?;
        Ok(Self {
            format: LEDGER_FORMAT.into(),
            dataset: dataset.into(),
            total_epsilon,
            total_delta,
            id: Some(fresh_id()?),
            next_sequence: 1,
            spends: Vec::new(),
        })
    }

    /// The exact ε spent.
    fn exact_epsilon(&self) -> ExactSum {
        let mut sum = ExactSum::new();
        self.spends.iter().for_each(|s| sum.add(s.epsilon));
        sum
    }

    /// The exact δ spent.
    fn exact_delta(&self) -> ExactSum {
        let mut sum = ExactSum::new();
        self.spends.iter().for_each(|s| sum.add(s.delta));
        sum
    }

    /// The (ε, δ) everything recorded is certified at, and by which composition (module
    /// docs): basic composition's `(Σ ε, Σ δ)` or the privacy-loss distributions' ε at the
    /// ledger's δ, whichever ε is less — PLD's only where it is less by more than
    /// [`REPORTED_GAIN`] (0.1%), since it states the whole δ as spent.
    pub fn composition(&self) -> Composition {
        let spends: Vec<&Spend> = self.spends.iter().collect();
        self.compose(&spends).0
    }

    /// What the ledger has spent and has left, from one composition (each of
    /// [`Ledger::spent`], [`Ledger::remaining`], … composes the spends anew: a face showing
    /// several of them takes this).
    pub fn summary(&self) -> Summary {
        let composition = self.composition();
        let (remaining_epsilon, remaining_delta) = match composition.method {
            Method::Basic => (
                left(self.total_epsilon, &self.exact_epsilon()),
                left(self.total_delta, &self.exact_delta()),
            ),
            Method::Pld => (
                left(self.total_epsilon, &ExactSum::of(composition.epsilon)),
                0.0,
            ),
        };
        Summary {
            composition,
            remaining_epsilon,
            remaining_delta,
        }
    }

    /// ε spent so far, rounded up: [`Ledger::composition`]'s.
    pub fn spent(&self) -> f64 {
        self.composition().epsilon
    }

    /// δ spent so far, rounded up: [`Ledger::composition`]'s (the spends' δs added up under
    /// basic composition; the ledger's δ under PLD composition, whose ε is stated at it).
    pub fn spent_delta(&self) -> f64 {
        self.composition().delta
    }

    /// ε left, rounded down (never below 0): the total less [`Ledger::spent`]. Under PLD
    /// composition a spend of more than this may still fit (composition is subadditive).
    pub fn remaining(&self) -> f64 {
        self.summary().remaining_epsilon
    }

    /// δ left, rounded down (never below 0): the total less [`Ledger::spent_delta`] (0 once
    /// PLD composition certifies the total: its ε is stated at the whole δ).
    pub fn remaining_delta(&self) -> f64 {
        self.summary().remaining_delta
    }

    /// The composition of `spends` (module docs of [`crate::composition`]) and whether it
    /// fits in the totals: basic composition's exact sums within both totals, or a PLD ε at
    /// the ledger's δ within its ε. PLDs are used only in an (ε, δ) ledger and when some
    /// spend has a δ or a curve.
    fn compose(&self, spends: &[&Spend]) -> (Composition, bool) {
        let (mut epsilon, mut delta) = (ExactSum::new(), ExactSum::new());
        for s in spends {
            epsilon.add(s.epsilon);
            delta.add(s.delta);
        }
        let basic_delta_fits = delta <= ExactSum::of(self.total_delta);
        let basic_fits = basic_delta_fits && epsilon <= ExactSum::of(self.total_epsilon);
        let basic = Composition {
            method: Method::Basic,
            epsilon: epsilon.rounded_up(),
            delta: delta.rounded_up(),
        };
        let tight =
            self.total_delta > 0.0 && spends.iter().any(|s| s.delta > 0.0 || s.curve.is_some());
        if !tight {
            return (basic, basic_fits);
        }
        let (total_epsilon, total_delta) = (self.total_epsilon, self.total_delta);
        let pairs = pld_epsilon(spends, total_delta, total_epsilon, false);
        let curves = if spends.iter().any(|s| s.curve.is_some()) {
            pld_epsilon(spends, total_delta, total_epsilon, true)
        } else {
            None
        };
        let pld = [pairs, curves]
            .into_iter()
            .flatten()
            .fold(f64::INFINITY, f64::min);
        let pld_fits = pld <= total_epsilon;
        // PLD's (ε, δ) states the whole δ as spent: reported where its ε is below basic
        // composition's by more than 0.1% (or basic's δs overflow), so that a gain in the
        // last digits (one spend's pair, recomposed) does not turn (1, 4·10⁻⁶) into
        // (0.99999, 10⁻⁵). Either certifies the spends; acceptance takes whichever fits.
        let composition = if pld < basic.epsilon * (1.0 - REPORTED_GAIN) || !basic_delta_fits {
            Composition {
                method: Method::Pld,
                epsilon: pld,
                delta: total_delta,
            }
        } else {
            basic
        };
        (composition, basic_fits || pld_fits)
    }

    /// Refuses a spend of `epsilon` and `delta` (known by that pair alone) that would take
    /// the composed total above the budget, and any δ > 0 on a pure-ε ledger. `name` names
    /// the ledger in messages.
    pub fn check_spend(&self, name: &str, epsilon: f64, delta: f64) -> Result<(), LedgerError> {
        self.check_candidate(name, &Spend::new(epsilon, delta, "", ""))
    }

    /// [`Ledger::check_spend`] for a spend with its curve, if any: refused when the
    /// composition of the recorded spends with it does not fit both totals.
    pub fn check_candidate(&self, name: &str, spend: &Spend) -> Result<(), LedgerError> {
        let (epsilon, delta) = (spend.epsilon, spend.delta);
        check_epsilon("the spend's ε", epsilon, MAX_TOTAL_EPSILON)?;
        check_delta("the spend's δ", delta)?;
        if let Some(problem) = spend.curve.as_ref().and_then(Curve::problem) {
            return Err(LedgerError::InvalidAmount {
                what: format!("the spend's curve ({problem})"),
                value: epsilon,
                expected: "a curve of finite, positive numbers",
            });
        }
        if delta > 0.0 && self.total_delta == 0.0 {
            return Err(LedgerError::PureEpsilon {
                ledger: name.into(),
                epsilon,
                delta,
            });
        }
        let overspend = |which, after| {
            let now = self.summary();
            LedgerError::Exceeded(Box::new(Overspend {
                ledger: name.into(),
                dataset: self.dataset.clone(),
                which,
                asked: (epsilon, delta),
                left: (now.remaining_epsilon, now.remaining_delta),
                total: (self.total_epsilon, self.total_delta),
                spent: now.composition.epsilon,
                after,
                runs: self.spends.len(),
            }))
        };
        let mut with: Vec<&Spend> = self.spends.iter().collect();
        with.push(spend);
        let (after, fits) = self.compose(&with);
        if fits {
            return Ok(());
        }
        let mut after_delta = self.exact_delta();
        after_delta.add(delta);
        if after.method == Method::Basic && after_delta > ExactSum::of(self.total_delta) {
            return Err(overspend("δ", after_delta.rounded_up()));
        }
        if !after.epsilon.is_finite() && after_delta > ExactSum::of(self.total_delta) {
            return Err(overspend("δ", after_delta.rounded_up()));
        }
        Err(overspend("ε", after.epsilon))
    }

    /// Checks `spend` ([`Ledger::check_spend`]) and records it, numbered; returns its number.
    pub fn record(&mut self, name: &str, mut spend: Spend) -> Result<u64, LedgerError> {
        self.check_candidate(name, &spend)?;
        let sequence = self.next_sequence.max(1);
        spend.sequence = Some(sequence);
        self.next_sequence = sequence + 1;
        self.spends.push(spend);
        Ok(sequence)
    }

    /// Gives the spend numbered `sequence`, charged as its (ε, δ) pair before its
    /// mechanism's curve was known (DP-SGD's σ is calibrated on the data's n), that curve:
    /// kept only when the composed total with it still fits and is no higher than without
    /// it (its pair dominates the curve, but a discretized curve need not be below the pair's
    /// law everywhere); returns whether it was kept. A spend that already has a curve keeps
    /// it.
    pub fn attach_curve(
        &mut self,
        name: &str,
        sequence: u64,
        curve: Curve,
    ) -> Result<bool, LedgerError> {
        if let Some(problem) = curve.problem() {
            return Err(LedgerError::InvalidAmount {
                what: format!("the spend's curve ({problem})"),
                value: f64::NAN,
                expected: "a curve of finite, positive numbers",
            });
        }
        let index = self
            .spends
            .iter()
            .position(|s| s.sequence == Some(sequence))
            .ok_or_else(|| LedgerError::UnknownSpend {
                ledger: name.into(),
                sequence,
            })?;
        if self.spends[index].curve.is_some() {
            return Ok(false);
        }
        let before = self.composition();
        self.spends[index].curve = Some(curve);
        let spends: Vec<&Spend> = self.spends.iter().collect();
        let (after, fits) = self.compose(&spends);
        if fits && after.epsilon <= before.epsilon {
            Ok(true)
        } else {
            self.spends[index].curve = None;
            Ok(false)
        }
    }

    /// Takes back the spend numbered `sequence`: only for a fit refused before it drew any
    /// noise ([`crate::charge`]). The counter is not wound back.
    pub fn refund(&mut self, name: &str, sequence: u64) -> Result<Spend, LedgerError> {
        let index = self
            .spends
            .iter()
            .position(|s| s.sequence == Some(sequence))
            .ok_or_else(|| LedgerError::UnknownSpend {
                ledger: name.into(),
                sequence,
            })?;
        Ok(self.spends.remove(index))
    }

    /// Of the `(label, sequence)` pairs that reports of this ledger carry, those whose spend
    /// it does not hold: evidence of a ledger edited or restored from an older copy (a
    /// refunded spend never has a report: its fit released nothing).
    pub fn missing<'a>(&self, reports: &'a [(String, u64)]) -> Vec<&'a (String, u64)> {
        reports
            .iter()
            .filter(|(_, sequence)| !self.spends.iter().any(|s| s.sequence == Some(*sequence)))
            .collect()
    }

    /// Gives a ledger written before identities one (stored with its next spend).
    pub(crate) fn ensure_identity(&mut self) -> Result<(), LedgerError> {
        if self.id.is_none() {
            self.id = Some(fresh_id()?);
        }
        if self.next_sequence == 0 {
            let highest = self.spends.iter().filter_map(|s| s.sequence).max();
            self.next_sequence = highest.unwrap_or(0) + 1;
        }
        Ok(())
    }

    /// Checks a ledger read from a file named `name`.
    pub fn check(self, name: &str) -> Result<Self, LedgerError> {
        let corrupt = |why: String| LedgerError::Corrupt {
            ledger: name.into(),
            why,
        };
        if self.format != LEDGER_FORMAT {
            return Err(corrupt(format!(
                "format {:?}, expected {LEDGER_FORMAT:?}",
                self.format
            )));
        }
        if !(self.total_epsilon.is_finite() && self.total_epsilon > 0.0) {
            return Err(corrupt(format!(
                "total_epsilon = {:?} is not a finite ε > 0",
                self.total_epsilon
            )));
        }
        if !(0.0..1.0).contains(&self.total_delta) {
            return Err(corrupt(format!(
                "total_delta = {:?} is not a δ in [0, 1)",
                self.total_delta
            )));
        }
        let mut numbers = std::collections::BTreeSet::new();
        for (i, spend) in self.spends.iter().enumerate() {
            if !(spend.epsilon.is_finite() && spend.epsilon > 0.0) {
                return Err(corrupt(format!(
                    "spends[{i}].epsilon = {:?} is not a finite ε > 0",
                    spend.epsilon
                )));
            }
            if !(0.0..1.0).contains(&spend.delta) {
                return Err(corrupt(format!(
                    "spends[{i}].delta = {:?} is not a δ in [0, 1)",
                    spend.delta
                )));
            }
            if !is_schema_hash(&spend.schema_sha256) {
                return Err(corrupt(format!(
                    "spends[{i}].schema_sha256 is not a schema hash (64 lowercase hex digits, \
                     or empty for data without a schema)"
                )));
            }
            if let Some(problem) = spend.curve.as_ref().and_then(Curve::problem) {
                return Err(corrupt(format!("spends[{i}].curve: {problem}")));
            }
            if let Some(n) = spend.sequence
                && (n == 0 || n >= self.next_sequence.max(1) || !numbers.insert(n))
            {
                return Err(corrupt(format!(
                    "spends[{i}].sequence = {n} is 0, repeated, or not below next_sequence = {}",
                    self.next_sequence
                )));
            }
        }
        let spends: Vec<&Spend> = self.spends.iter().collect();
        let (composition, fits) = self.compose(&spends);
        // A PLD total accepted at the limit may be recomputed a few ulps higher elsewhere
        // (the FFT's rounding is the platform's): 10⁻⁹ of slack on reading, none on spending.
        let within = fits
            || (composition.method == Method::Pld
                && composition.epsilon <= self.total_epsilon * (1.0 + 1e-9));
        if !within
            && composition.method == Method::Basic
            && self.exact_delta() > ExactSum::of(self.total_delta)
        {
            return Err(corrupt(format!(
                "its spends' δs add up to {:e}, above its total_delta = {:e}",
                self.exact_delta().rounded_up(),
                self.total_delta
            )));
        }
        if !within {
            return Err(corrupt(format!(
                "its spends add up to {:?} ({} composition), above its total_epsilon = {:?}",
                composition.epsilon,
                composition.method.name(),
                self.total_epsilon
            )));
        }
        Ok(self)
    }
}

/// A spend's `schema_sha256`: empty (data given without a schema: Python's frames) or a
/// SHA-256 in lowercase hex, as `dp_schema::Schema::hash` writes it.
fn is_schema_hash(text: &str) -> bool {
    text.is_empty()
        || (text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// Reads and checks the ledger file at `path`, without locking it (to show it).
pub fn read(path: &std::path::Path) -> Result<Ledger, LedgerError> {
    crate::ledger_file::read(path, &path.display().to_string())
}

/// `total − spent`, rounded down, at least 0.
fn left(total: f64, spent: &ExactSum) -> f64 {
    let spent_up = spent.rounded_up();
    if ExactSum::of(total) <= *spent {
        return 0.0;
    }
    dp_noise::rounding::subtract_rounding_down(total, spent_up).max(0.0)
}

#[cfg(test)]
#[path = "ledger_tests.rs"]
mod tests;
