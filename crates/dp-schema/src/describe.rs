//! A **private** description of a data file: a schema whose bounds, levels and classes are
//! differentially private releases (docs/src/reference/algorithms.md §8), for data nobody has documented.
//!
//! What is public: the column names, each column's type (numeric, categorical, label or
//! ignored), the label's positive class, the CSV format, and optionally a public list of a
//! categorical column's levels or of the label's classes. Everything else the schema needs
//! is released by a mechanism of [`dp_noise`]'s facts module, each spending a share of the
//! (ε, δ) given:
//!
//! | fact | mechanism | spends |
//! |---|---|---|
//! | a numeric column's `lower`, `upper` | [`HistogramBounds`] on the signed powers of two ([`CandidateGrid::for_f64`]) | ε/k |
//! | a categorical column's levels, with a public candidate list | [`CandidateLevels`] | ε/k |
//! | a categorical column's levels, without one | [`StabilityLevels`] | ε/k and δ/s |
//! | the label's classes, when not given | [`StabilityLevels`] | ε/k and δ/s |
//!
//! **The split** (data-independent, fixed before any record is read): `k` is the number of
//! facts released (one per numeric column, one per categorical column, one for the label's
//! classes when they are not given) and every fact gets the same `ε/k`; `s` is the number of
//! stability-based releases, which share δ equally (`δ/s`). Each share is rounded down one
//! ulp, so the exact sum of the shares never exceeds what is charged. When no release needs
//! δ, none is spent (the description is pure ε).
//!
//! **Why histogram bounds, not quantiles.** With no range known, the candidate grid must be
//! the value type's own (`±2^k` for every finite double, 4,197 candidates). The private
//! quantile's exponential mechanism weighs a candidate by `exp(ε'·u/2)` with `u` minus the
//! distance in records from the target rank; the ~3,000 empty candidates below the data's
//! smallest value all share the utility `−p·n`. On Adult (n = 32,561, p = 0.01, so `p·n ≈
//! 325`) with ε = 0.1 described over 15 facts, each quantile gets `ε' ≈ 0.0033`, and
//! `exp(ε'·325/2) ≈ 1.7`: the few good candidates cannot outweigh thousands of empty ones,
//! and the released lower bound is almost surely a far power of two (an analytic estimate,
//! not a measured run), which squeezes the column to a constant. The thresholded histogram
//! instead releases only cells holding many records — Adult's `age` came out `[16, 64]` at
//! that ε — and its failure is graceful (no cell above the threshold: the column is dropped,
//! written as `type = "ignore"`). It also needs no public n, so missing numeric cells cost
//! nothing.
//!
//! **The written schema** is an ordinary schema: every face reads it as it reads a
//! hand-written one. Each released fact is annotated by a TOML comment naming its
//! mechanism and its (ε, δ) (comments do not change [`Schema::hash`]). Categorical columns
//! get `unseen = "other"` (a level below the threshold is encoded "other", not refused) and
//! `missing = "level"`. A label class that did not pass the threshold is not in the schema:
//! training then refuses a record of that class (name its class in `classes` to keep it).
//!
//! # Privacy
//! Each fact is (ε/k)-DP (and δ/s for a stability release) under replace-one with n public,
//! as its mechanism's `# Privacy` section states; the k facts read the same data and
//! compose sequentially to (ε, δ). Everything written — the schema, the dropped columns,
//! the noisy counts in the comments — is post-processing of those releases and of the
//! public spec. A model trained with the schema on the same data composes with it: its own
//! (ε', δ') adds, which is why the faces charge the description to the same ledger.
//!
//! The exact per-cell counts ([`Describer`]) are never written anywhere. A pass split over
//! blocks of the data (a Spark DataFrame's partitions) moves each block's exact counts
//! ([`DescribeCounts`]) to one trusted place, where [`Describer::merge`] sums them and one
//! release is drawn: exactly the release of a single pass. Those counts are never
//! released either.
//!
//! # Columns without a label
//! [`DescribePlan::columns`] checks a spec with no label column and fixes the same split
//! (`k` = the feature columns); [`Describer::release_columns`] draws the same releases in
//! the same order and returns each column's bounds or levels ([`ColumnRelease`]) instead of
//! writing a schema: what the faces' private preprocessing (Python's `dpml.preprocessing`)
//! is built on. Its `# Privacy` section states what it releases and spends.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use dp_noise::{
    CandidateGrid, CandidateLevels, FactMechanism, GridCounts, HistogramBounds, LevelCount,
    LevelCounts, MAX_DELTA, NoiseError, ReleaseRng, StabilityLevels,
};

use crate::encode::{Cell, CellError};
use crate::schema::{CsvFormat, NumericMissing, RowScaling};
use crate::{Problem, Schema};

/// The failure probability β of the histogram bounds and of the candidate levels unless the
/// spec says otherwise: the chance that a cell (or a candidate) holding no record passes the
/// threshold. 10⁻³ per column: the threshold grows with `ln(1/β)`, and a spurious cell only
/// widens a column's bounds.
pub const DEFAULT_FAILURE_PROBABILITY: f64 = 1e-3;

/// The share of a total ε that describing takes when nothing but names and types is
/// public, the rest going to the fit on the same data (`ε_describe = DESCRIBE_SHARE · ε`,
/// `ε_fit = ε − ε_describe`): a data-independent rule, a function of nothing.
///
/// Fitted on synthetic data (`python/bench/describe_share.py`: Adult-shaped rows from
/// `cargo xtask datasets synth`, uniform levels and a logistic label; `dpml train
/// --private-schema`, Huber SVM by the rule, δ = 10⁻⁶ for the description; n = 10⁴, 3·10⁴,
/// 10⁵ and total ε = 0.1, 0.3, 1, 3; shares 0.1 to 0.7; 3 runs each): 0.4 had the smallest
/// mean and worst regret in test error against each cell's best share (0.003 and 0.007;
/// 0.3: 0.005 and 0.021; 0.5: 0.007 and 0.029). Smaller shares fail where nε is small (the
/// label's second class below the stability threshold: every share at n = 10⁴, ε = 0.1),
/// larger ones starve the fit. Checked on UCI Adult (8 runs): 0.160 at total ε = 1 and 0.195
/// at 0.1, against 0.163 and 0.191 with the public schema.
pub const DESCRIBE_SHARE: f64 = 0.4;

/// A total ε split between describing and fitting on the same data: `(ε_describe, ε_fit)`
/// with `ε_describe = share · total` (`share` in (0, 1), [`DESCRIBE_SHARE`] unless the user
/// states another) and `ε_fit` the rest, rounded down where needed so that the two spends
/// sum to at most `total` in floating point (a ledger holding exactly `total` takes both).
/// Refused by name: a share outside (0, 1), a total not finite and > 0.
pub fn split_total_epsilon(total: f64, share: f64) -> Result<(f64, f64), DescribeError> {
    if !(total.is_finite() && total > 0.0) {
        return Err(refused(format!(
            "the total epsilon must be finite and > 0, got {total:?}"
        )));
    }
    if !(share > 0.0 && share < 1.0) {
        return Err(refused(format!(
            "must be in (0, 1), the share of the total epsilon the description spends (the \
             fit gets the rest); got {share:?}"
        )));
    }
    let describe = share * total;
    let mut fit = total - describe;
    while describe + fit > total {
        fit = fit.next_down();
    }
    Ok((describe, fit))
}

/// Values buffered per numeric column before they are counted on the grid.
const NUMERIC_CHUNK: usize = 4096;

/// What is public about one column.
#[derive(Debug, Clone, PartialEq)]
pub enum DescribeKind {
    /// A number whose bounds are released.
    Numeric {
        /// Missing-value policy of the written schema (missing cells are never counted).
        missing: NumericMissing,
    },
    /// A category whose levels are released.
    Categorical {
        /// A public list of the levels it may take (then pure ε, [`CandidateLevels`]);
        /// `None`: released without a list ([`StabilityLevels`], needs δ).
        candidates: Option<Vec<String>>,
    },
    /// The label.
    Label {
        /// The class encoded +1 (public).
        positive: String,
        /// The classes, when public; `None`: released ([`StabilityLevels`], needs δ).
        classes: Option<Vec<String>>,
        /// Other spellings of a class (`">50K." = ">50K"`), applied before counting.
        aliases: BTreeMap<String, String>,
    },
    /// Read past, never described.
    Ignore,
}

/// One column of the file: its name and what is public about it.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeColumn {
    /// The name (the header's, or the schema's order for files without a header).
    pub name: String,
    /// What it holds.
    pub kind: DescribeKind,
}

/// Everything public a private description starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct DescribeSpec {
    /// The columns, in the file's order.
    pub columns: Vec<DescribeColumn>,
    /// How the CSV file is read (and what the written schema says of it).
    pub csv: CsvFormat,
    /// The written schema's row scaling.
    pub row_scaling: RowScaling,
    /// The written schema's intercept.
    pub intercept: bool,
    /// The ε of the whole description (> 0).
    pub epsilon: f64,
    /// The δ of the whole description (0: pure ε, then every categorical column needs a
    /// public candidate list and the label its classes).
    pub delta: f64,
    /// β of the histogram bounds and the candidate levels ([`DEFAULT_FAILURE_PROBABILITY`]).
    pub failure_probability: f64,
}

impl DescribeSpec {
    /// A spec with the written schema's usual defaults: unit-norm rows, an intercept, β
    /// = [`DEFAULT_FAILURE_PROBABILITY`].
    pub fn new(columns: Vec<DescribeColumn>, csv: CsvFormat, epsilon: f64, delta: f64) -> Self {
        Self {
            columns,
            csv,
            row_scaling: RowScaling::UnitNorm,
            intercept: true,
            epsilon,
            delta,
            failure_probability: DEFAULT_FAILURE_PROBABILITY,
        }
    }
}

/// A description refused or failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DescribeError {
    /// Refused before any record was read or any noise drawn (costs nothing).
    Refused(String),
    /// A mechanism failed, or its releases make no usable schema (after noise was drawn:
    /// the faces charge it).
    Release(String),
}

impl fmt::Display for DescribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(why) | Self::Release(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for DescribeError {}

fn refused(why: impl Into<String>) -> DescribeError {
    DescribeError::Refused(why.into())
}

/// The mechanism of one column, with its share.
#[derive(Debug, Clone)]
enum Plan {
    Bounds(HistogramBounds),
    Candidates(CandidateLevels, Vec<String>),
    Stability(StabilityLevels),
    None,
}

/// A checked spec with every mechanism and share fixed: built before any record is read,
/// so every refusal it makes costs nothing.
#[derive(Debug, Clone)]
pub struct DescribePlan {
    spec: DescribeSpec,
    /// Whether the spec has its label column (a schema is written) or none (a column-only
    /// release, [`DescribePlan::columns`]).
    labelled: bool,
    plans: Vec<Plan>,
    epsilon: f64,
    delta: f64,
    epsilon_each: f64,
    delta_each: f64,
}

/// `total / parts` rounded down one ulp when shared (so `parts` shares sum to at most
/// `total` exactly: the quotient's rounding is at most half an ulp).
fn share(total: f64, parts: usize) -> f64 {
    if parts <= 1 {
        total
    } else {
        (total / parts as f64).next_down()
    }
}

impl DescribePlan {
    /// Checks the spec and fixes the split. Refusals (by name): ε not finite and > 0; δ
    /// not in `[0, MAX_DELTA]`; no label column or two; no feature column; a column named
    /// twice or with no name; a categorical column without a candidate list, or a label
    /// without its classes, when δ = 0; a bad candidate or class list; nothing to release.
    pub fn new(spec: DescribeSpec) -> Result<Self, DescribeError> {
        Self::checked(spec, true)
    }

    /// A column-only plan: the facts of the spec's columns released by the same mechanisms
    /// and the same split as [`DescribePlan::new`], with no label and no schema written
    /// (read them with [`Describer::release_columns`]; see its `# Privacy`). Refusals are
    /// `new`'s, except that a label column is refused (by name) instead of required.
    pub fn columns(spec: DescribeSpec) -> Result<Self, DescribeError> {
        Self::checked(spec, false)
    }

    fn checked(spec: DescribeSpec, labelled: bool) -> Result<Self, DescribeError> {
        if !(spec.epsilon.is_finite() && spec.epsilon > 0.0) {
            return Err(refused(format!(
                "epsilon must be finite and > 0, got {:?}",
                spec.epsilon
            )));
        }
        if !(spec.delta.is_finite() && (0.0..=MAX_DELTA).contains(&spec.delta)) {
            return Err(refused(format!(
                "delta must be finite and in [0, {MAX_DELTA}] (keep it far below 1/n), got {:?}",
                spec.delta
            )));
        }
        let beta = spec.failure_probability;
        if !(beta.is_finite() && beta > 0.0 && beta < 1.0) {
            return Err(refused(format!(
                "the failure probability must be in (0, 1), got {beta:?}"
            )));
        }
        let mut names = BTreeSet::new();
        for column in &spec.columns {
            if column.name.is_empty() || column.name.chars().any(char::is_control) {
                return Err(refused(format!(
                    "column name {:?}: must be non-empty printable text",
                    column.name
                )));
            }
            if !names.insert(column.name.as_str()) {
                return Err(refused(format!("column {:?} is named twice", column.name)));
            }
        }
        let labels: Vec<&DescribeColumn> = spec
            .columns
            .iter()
            .filter(|c| matches!(c.kind, DescribeKind::Label { .. }))
            .collect();
        match (labelled, labels.as_slice()) {
            (true, []) => return Err(refused("no label column: name the label column")),
            (true, [_]) | (false, []) => {}
            (true, many) => {
                return Err(refused(format!(
                    "{} label columns: name exactly one",
                    many.len()
                )));
            }
            (false, [label, ..]) => {
                return Err(refused(format!(
                    "column {}: a column-only release has no label column (describe it as \
                     categorical, or ignore it)",
                    label.name
                )));
            }
        }
        if !spec.columns.iter().any(|c| {
            matches!(
                c.kind,
                DescribeKind::Numeric { .. } | DescribeKind::Categorical { .. }
            )
        }) {
            return Err(refused(
                "no feature column: at least one column must be numeric or categorical",
            ));
        }
        // Which columns need δ, checked before anything else is built.
        let needs_delta: Vec<&str> = spec
            .columns
            .iter()
            .filter(|c| {
                matches!(
                    c.kind,
                    DescribeKind::Categorical { candidates: None }
                        | DescribeKind::Label { classes: None, .. }
                )
            })
            .map(|c| c.name.as_str())
            .collect();
        if !needs_delta.is_empty() && spec.delta == 0.0 {
            return Err(refused(format!(
                "delta = 0, but column(s) {} have no public list of levels (or classes): \
                 releasing levels without a list is the stability-based histogram, which is \
                 (epsilon, delta)-DP — a level held by one record exists in one data set and \
                 not in its neighbour. Give a delta > 0 (e.g. 1e-6, far below 1/n) or public \
                 levels for each of them",
                needs_delta.join(", ")
            )));
        }
        for column in &spec.columns {
            check_lists(column)?;
        }
        let facts = spec
            .columns
            .iter()
            .filter(|c| match &c.kind {
                DescribeKind::Numeric { .. } | DescribeKind::Categorical { .. } => true,
                DescribeKind::Label { classes, .. } => classes.is_none(),
                DescribeKind::Ignore => false,
            })
            .count();
        let epsilon_each = share(spec.epsilon, facts);
        let delta_each = share(spec.delta, needs_delta.len());
        let noise = |e: NoiseError| refused(format!("cannot build the mechanism: {e}"));
        let mut plans = Vec::with_capacity(spec.columns.len());
        for column in &spec.columns {
            plans.push(match &column.kind {
                DescribeKind::Numeric { .. } => {
                    Plan::Bounds(HistogramBounds::new(epsilon_each, beta).map_err(noise)?)
                }
                DescribeKind::Categorical {
                    candidates: Some(list),
                } => Plan::Candidates(
                    CandidateLevels::new(epsilon_each, beta).map_err(noise)?,
                    list.clone(),
                ),
                DescribeKind::Categorical { candidates: None }
                | DescribeKind::Label { classes: None, .. } => {
                    Plan::Stability(StabilityLevels::new(epsilon_each, delta_each).map_err(noise)?)
                }
                DescribeKind::Label { .. } | DescribeKind::Ignore => Plan::None,
            });
        }
        let delta = if needs_delta.is_empty() {
            0.0
        } else {
            spec.delta
        };
        Ok(Self {
            epsilon: spec.epsilon,
            delta,
            spec,
            labelled,
            plans,
            epsilon_each,
            delta_each,
        })
    }

    /// The spec.
    pub fn spec(&self) -> &DescribeSpec {
        &self.spec
    }

    /// What the description spends in all: `(ε, δ)` — δ is 0 when no release needs it.
    pub fn charge(&self) -> (f64, f64) {
        (self.epsilon, self.delta)
    }

    /// The ε of each fact and the δ of each stability release.
    pub fn shares(&self) -> (f64, f64) {
        (self.epsilon_each, self.delta_each)
    }

    /// Whether the plan has a label column and writes a schema ([`DescribePlan::new`]);
    /// false for a column-only plan ([`DescribePlan::columns`]).
    pub fn is_labelled(&self) -> bool {
        self.labelled
    }

    /// The index of the label column.
    ///
    /// # Panics
    /// For a column-only plan (it has none: see [`DescribePlan::is_labelled`]).
    pub fn label_index(&self) -> usize {
        self.spec
            .columns
            .iter()
            .position(|c| matches!(c.kind, DescribeKind::Label { .. }))
            .expect("a checked plan has one label column")
    }

    /// The largest threshold of the plan's releases, in records (see
    /// [`DescribePlan::outlook`]).
    fn largest_threshold(&self) -> u64 {
        let cells = CandidateGrid::for_f64().cells();
        self.plans
            .iter()
            .map(|plan| match plan {
                Plan::Bounds(m) => m.threshold(cells),
                Plan::Candidates(m, list) => m.threshold(list.len()),
                Plan::Stability(m) => m.threshold(),
                Plan::None => 0,
            })
            .max()
            .unwrap_or(0)
            .max(0) as u64
    }

    /// The counters for one pass over the data.
    pub fn describer(&self) -> Describer<'_> {
        Describer::new(self)
    }
}

fn check_lists(column: &DescribeColumn) -> Result<(), DescribeError> {
    let distinct = |list: &[String], what: &str| -> Result<(), DescribeError> {
        let mut seen = BTreeSet::new();
        if list.is_empty() {
            return Err(refused(format!(
                "column {}: the public list of {what} is empty",
                column.name
            )));
        }
        if list.len() > crate::MAX_LEVELS {
            return Err(refused(format!(
                "column {}: more than {} {what}",
                column.name,
                crate::MAX_LEVELS
            )));
        }
        for value in list {
            if !seen.insert(value) {
                return Err(refused(format!(
                    "column {}: {what} {value:?} listed twice",
                    column.name
                )));
            }
        }
        Ok(())
    };
    match &column.kind {
        DescribeKind::Categorical {
            candidates: Some(list),
        } => distinct(list, "levels"),
        DescribeKind::Label {
            positive,
            classes,
            aliases,
        } => {
            if positive.is_empty() {
                return Err(refused(format!(
                    "label {}: name the positive class (the class encoded +1)",
                    column.name
                )));
            }
            if let Some(classes) = classes {
                distinct(classes, "classes")?;
                if classes.len() < 2 {
                    return Err(refused(format!(
                        "label {}: a public class list needs at least 2 classes",
                        column.name
                    )));
                }
                if !classes.contains(positive) {
                    return Err(refused(format!(
                        "label {}: the positive class {positive:?} is not among the classes \
                         given",
                        column.name
                    )));
                }
            }
            for (alias, class) in aliases {
                if alias == class {
                    return Err(refused(format!(
                        "label {}: alias {alias:?} stands for itself",
                        column.name
                    )));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The exact counts of one pass (never released: only what the mechanisms make of them).
enum Counter {
    Numeric {
        counts: GridCounts,
        buffer: Vec<f64>,
        missing: NumericMissing,
    },
    Levels(LevelCounts<String>),
    Label {
        counts: Option<LevelCounts<String>>,
        aliases: BTreeMap<String, String>,
    },
    None,
}

/// One pass over the data: exact per-column counts, accumulated record by record, in
/// memory independent of the number of records (a grid's cells per numeric column, the
/// distinct levels per categorical column). Feed it with [`Describer::add_record`]
/// (the faces' readers: CSV and Parquet files, Arrow frames), then [`Describer::release`].
///
/// `Debug` shows only n.
pub struct Describer<'p> {
    plan: &'p DescribePlan,
    counters: Vec<Counter>,
    rows: u64,
}

impl fmt::Debug for Describer<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Describer")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl<'p> Describer<'p> {
    fn new(plan: &'p DescribePlan) -> Self {
        let counters = plan
            .spec
            .columns
            .iter()
            .map(|c| match &c.kind {
                DescribeKind::Numeric { missing } => Counter::Numeric {
                    counts: GridCounts::new(CandidateGrid::for_f64()),
                    buffer: Vec::with_capacity(NUMERIC_CHUNK),
                    missing: *missing,
                },
                DescribeKind::Categorical { .. } => Counter::Levels(LevelCounts::new()),
                DescribeKind::Label {
                    classes, aliases, ..
                } => Counter::Label {
                    counts: classes.is_none().then(LevelCounts::new),
                    aliases: aliases.clone(),
                },
                DescribeKind::Ignore => Counter::None,
            })
            .collect();
        Self {
            plan,
            counters,
            rows: 0,
        }
    }

    /// Whether column `k` is read (ignored columns never are).
    pub fn reads(&self, k: usize) -> bool {
        !matches!(self.counters[k], Counter::None)
    }

    /// Records counted so far.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Text of a cell after trimming, or `None` for a missing-value token.
    fn text<'a>(&self, bytes: &'a [u8], column: usize) -> Result<Option<&'a str>, CellError> {
        let text = std::str::from_utf8(bytes).map_err(|_| CellError {
            column,
            problem: Problem::NotUtf8,
        })?;
        let csv = &self.plan.spec.csv;
        let text = if csv.trim {
            text.trim_matches([' ', '\t'])
        } else {
            text
        };
        Ok((!csv.missing.iter().any(|m| m == text)).then_some(text))
    }

    /// Counts one record: `cell(k)` is the cell of spec column `k` (asked only for columns
    /// that are read). A bad cell is refused as the encoder would refuse it (a numeric
    /// column's text that is not a finite number; a missing numeric value under
    /// `missing = "error"`; a missing label), naming the column; nothing of that record
    /// is counted then.
    pub fn add_record<'a>(
        &mut self,
        mut cell: impl FnMut(usize) -> Cell<'a>,
    ) -> Result<(), CellError> {
        // Check and read every cell first, so a refused record counts nowhere.
        let mut values: Vec<Option<CellValue>> = Vec::with_capacity(self.counters.len());
        for (k, counter) in self.counters.iter().enumerate() {
            let err = |problem| CellError { column: k, problem };
            values.push(match counter {
                Counter::None => None,
                Counter::Numeric { missing, .. } => {
                    let value = match cell(k) {
                        Cell::Number(v) => Some(v),
                        Cell::Null => None,
                        Cell::Text(bytes) => match self.text(bytes, k)? {
                            None => None,
                            Some(text) => {
                                Some(text.parse::<f64>().map_err(|_| err(Problem::NotANumber))?)
                            }
                        },
                    };
                    match value {
                        Some(v) if !v.is_finite() => return Err(err(Problem::NotFinite)),
                        Some(v) => Some(CellValue::Number(v)),
                        None if *missing == NumericMissing::Error => {
                            return Err(err(Problem::Missing));
                        }
                        None => None,
                    }
                }
                Counter::Levels(_) | Counter::Label { .. } => {
                    let text = match cell(k) {
                        Cell::Text(bytes) => self.text(bytes, k)?.map(str::to_owned),
                        Cell::Number(v) => Some(format_number(v)),
                        Cell::Null => None,
                    };
                    match (text, counter) {
                        (None, Counter::Label { .. }) => return Err(err(Problem::MissingLabel)),
                        (None, _) => None,
                        (Some(t), Counter::Label { aliases, .. }) => {
                            Some(CellValue::Text(aliases.get(&t).cloned().unwrap_or(t)))
                        }
                        (Some(t), _) => Some(CellValue::Text(t)),
                    }
                }
            });
        }
        for (counter, value) in self.counters.iter_mut().zip(values) {
            match (counter, value) {
                (Counter::Numeric { counts, buffer, .. }, Some(CellValue::Number(v))) => {
                    buffer.push(v);
                    if buffer.len() >= NUMERIC_CHUNK {
                        flush(counts, buffer);
                    }
                }
                (Counter::Levels(counts), Some(CellValue::Text(t))) => counts.add(t),
                (
                    Counter::Label {
                        counts: Some(counts),
                        ..
                    },
                    Some(CellValue::Text(t)),
                ) => counts.add(t),
                _ => {}
            }
        }
        self.rows += 1;
        Ok(())
    }

    /// Draws every release, in column order, from `rng`, and writes the schema.
    ///
    /// Refused before any draw (costs nothing) for a column-only plan (use
    /// [`Describer::release_columns`]) and when no record was counted. Every other error
    /// comes after the first draw, so the faces charge it.
    pub fn release<R: ReleaseRng + ?Sized>(
        self,
        rng: &mut R,
    ) -> Result<Description, DescribeError> {
        let plan = self.plan;
        if !plan.labelled {
            return Err(refused(
                "a column-only plan writes no schema: release its facts with release_columns",
            ));
        }
        let rows = self.rows;
        let (columns, facts) = self.draw(rng)?;
        let text = write_schema(plan, rows, &columns, &facts);
        let schema = Schema::from_toml(&text, "(the private description)").map_err(|e| {
            DescribeError::Release(format!(
                "the released facts make no usable schema: {e} (spend more epsilon on the \
                 description, or give public facts)"
            ))
        })?;
        Ok(Description {
            schema,
            text,
            facts,
            epsilon: plan.epsilon,
            delta: plan.delta,
            rows,
        })
    }

    /// Every release in column order, drawn from `rng`: what each column's written form
    /// is, and the facts. Refused before any draw when no record was counted.
    fn draw<R: ReleaseRng + ?Sized>(mut self, rng: &mut R) -> Result<Drawn, DescribeError> {
        if self.rows == 0 {
            return Err(refused("no data rows: nothing to describe"));
        }
        let plan = self.plan;
        let mut columns = Vec::with_capacity(plan.spec.columns.len());
        let mut facts = Vec::new();
        for ((column, counter), mechanism) in plan
            .spec
            .columns
            .iter()
            .zip(self.counters.iter_mut())
            .zip(&plan.plans)
        {
            let name = column.name.as_str();
            let failed = |e: NoiseError| DescribeError::Release(format!("column {name}: {e}"));
            let written = match (counter, mechanism, &column.kind) {
                (
                    Counter::Numeric {
                        counts,
                        buffer,
                        missing,
                    },
                    Plan::Bounds(m),
                    _,
                ) => {
                    flush(counts, buffer);
                    let bounds = if counts.rows() == 0 {
                        // Every cell missing: the same noisy histogram, of all-zero counts
                        // (the mechanism itself refuses n = 0).
                        histogram_of_nothing(m, counts.grid(), rng)
                    } else {
                        let released = m.release_from_counts(counts, rng).map_err(failed)?;
                        released.value().map(|b| (b.lower(), b.upper()))
                    };
                    let usable = bounds.filter(|&(l, u)| l < u && (u - l).is_finite());
                    facts.push(Fact {
                        column: name.to_owned(),
                        what: "bounds",
                        mechanism: FactMechanism::HistogramBounds,
                        epsilon: m.epsilon(),
                        delta: 0.0,
                        outcome: match usable {
                            Some((l, u)) => format!("[{l:?}, {u:?}]"),
                            None => "no cell passed the threshold: column dropped".into(),
                        },
                    });
                    match usable {
                        Some((lower, upper)) => Written::Numeric {
                            lower,
                            upper,
                            missing: *missing,
                        },
                        None => Written::Dropped,
                    }
                }
                (Counter::Levels(counts), Plan::Candidates(m, list), _) => {
                    let kept = if counts.rows() == 0 {
                        // Every cell missing: the same noisy counts, of all-zero counts
                        // (the mechanism itself refuses n = 0).
                        let threshold = i128::from(m.threshold(list.len()));
                        list.iter()
                            .filter_map(|level| {
                                let noisy = m.noise().sample(rng);
                                (noisy >= threshold).then(|| LevelCount {
                                    level: level.clone(),
                                    noisy_count: noisy.clamp(0, i128::from(i64::MAX)) as i64,
                                })
                            })
                            .collect()
                    } else {
                        m.release(counts, list, rng).map_err(failed)?.into_value()
                    };
                    levels_fact(
                        &mut facts,
                        name,
                        "levels",
                        FactMechanism::CandidateLevels,
                        (m.epsilon(), 0.0),
                        &kept,
                    );
                    levels_written(kept)
                }
                (Counter::Levels(counts), Plan::Stability(m), _) => {
                    let kept = stability(m, counts, rng).map_err(failed)?;
                    levels_fact(
                        &mut facts,
                        name,
                        "levels",
                        FactMechanism::StabilityLevels,
                        (m.epsilon(), m.delta()),
                        &kept,
                    );
                    levels_written(kept)
                }
                (
                    Counter::Label { counts, .. },
                    mechanism,
                    DescribeKind::Label {
                        positive,
                        classes,
                        aliases,
                    },
                ) => {
                    let (classes, public) = match (counts, mechanism, classes) {
                        (_, _, Some(classes)) => (classes.clone(), true),
                        (Some(counts), Plan::Stability(m), None) => {
                            let kept = stability(m, counts, rng).map_err(failed)?;
                            levels_fact(
                                &mut facts,
                                name,
                                "classes",
                                FactMechanism::StabilityLevels,
                                (m.epsilon(), m.delta()),
                                &kept,
                            );
                            let mut found: Vec<String> =
                                kept.into_iter().map(|l| l.level).collect();
                            if !found.contains(positive) {
                                // The positive class is public: it is a class whatever the
                                // release says.
                                found.push(positive.clone());
                            }
                            (found, false)
                        }
                        _ => unreachable!("a label without classes has a stability plan"),
                    };
                    if classes.len() < 2 {
                        return Err(DescribeError::Release(format!(
                            "label {name}: only the positive class {positive:?} passed the \
                             threshold, and a classifier needs two classes (give the class \
                             list if it is public, or spend more epsilon on the description)"
                        )));
                    }
                    let aliases = aliases
                        .iter()
                        .filter(|(a, c)| classes.contains(c) && !classes.contains(a))
                        .map(|(a, c)| (a.clone(), c.clone()))
                        .collect();
                    Written::Label {
                        classes,
                        positive: positive.clone(),
                        aliases,
                        public,
                    }
                }
                _ => Written::Ignore,
            };
            columns.push((name.to_owned(), written));
        }
        Ok((columns, facts))
    }
}

enum CellValue {
    Number(f64),
    Text(String),
}

fn flush(counts: &mut GridCounts, buffer: &mut Vec<f64>) {
    // Every buffered value is finite (checked on the way in), so counting cannot fail
    // short of 2^32 records per column.
    counts
        .add_chunk(buffer)
        .expect("finite values below MAX_ROWS are counted");
    buffer.clear();
}

/// The stability histogram; with no level seen at all its output is the empty list
/// whatever the noise (noise is drawn only for the levels present), so nothing is drawn.
fn stability<R: ReleaseRng + ?Sized>(
    m: &StabilityLevels,
    counts: &LevelCounts<String>,
    rng: &mut R,
) -> Result<Vec<LevelCount<String>>, NoiseError> {
    if counts.rows() == 0 {
        return Ok(Vec::new());
    }
    Ok(m.release(counts, rng)?.into_value())
}

/// [`HistogramBounds`] on a histogram of all-zero counts: every cell's noise drawn as the
/// mechanism draws it, the same threshold, the same ends (the mechanism refuses n = 0
/// only because a fact needs data; the noisy histogram of nothing is still its output).
fn histogram_of_nothing<R: ReleaseRng + ?Sized>(
    m: &HistogramBounds,
    grid: &CandidateGrid,
    rng: &mut R,
) -> Option<(f64, f64)> {
    let cells = grid.cells();
    let threshold = m.threshold(cells);
    let passing: Vec<usize> = (0..cells)
        .filter(|_| m.noise().sample(rng) >= i128::from(threshold))
        .collect();
    let values = grid.values();
    let lower = |j: usize| if j == 0 { -f64::MAX } else { values[j - 1] };
    let upper = |j: usize| values.get(j).copied().unwrap_or(f64::MAX);
    Some((lower(*passing.first()?), upper(*passing.last()?)))
}

/// One released fact, as the schema's comments and the faces' reports state it.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    /// The column.
    pub column: String,
    /// "bounds", "levels" or "classes".
    pub what: &'static str,
    /// The mechanism.
    pub mechanism: FactMechanism,
    /// Its ε.
    pub epsilon: f64,
    /// Its δ.
    pub delta: f64,
    /// What it released, as text (post-processing: free to show).
    pub outcome: String,
}

fn levels_fact(
    facts: &mut Vec<Fact>,
    column: &str,
    what: &'static str,
    mechanism: FactMechanism,
    (epsilon, delta): (f64, f64),
    kept: &[LevelCount<String>],
) {
    let outcome = if kept.is_empty() {
        "nothing passed the threshold".to_owned()
    } else {
        let counts: Vec<String> = kept
            .iter()
            .map(|l| format!("{:?} ≈ {}", l.level, l.noisy_count))
            .collect();
        format!("noisy counts: {}", counts.join(", "))
    };
    facts.push(Fact {
        column: column.to_owned(),
        what,
        mechanism,
        epsilon,
        delta,
        outcome,
    });
}

fn levels_written(kept: Vec<LevelCount<String>>) -> Written {
    if kept.is_empty() {
        Written::Dropped
    } else {
        Written::Categorical(kept.into_iter().map(|l| l.level).collect())
    }
}

/// Each column's written form (in column order) and the released facts.
type Drawn = (Vec<(String, Written)>, Vec<Fact>);

/// What the written schema says of one column.
enum Written {
    Numeric {
        lower: f64,
        upper: f64,
        missing: NumericMissing,
    },
    Categorical(Vec<String>),
    Label {
        classes: Vec<String>,
        positive: String,
        aliases: BTreeMap<String, String>,
        public: bool,
    },
    /// A feature whose release gave nothing usable: ignored.
    Dropped,
    Ignore,
}

/// A private description: the checked schema, its annotated TOML text, and every fact
/// released with its spend.
#[derive(Debug, Clone)]
pub struct Description {
    /// The schema (as [`Schema::from_toml`] reads `text`).
    pub schema: Schema,
    /// The schema file's text, every released fact annotated with its mechanism and spend.
    pub text: String,
    /// The released facts, in column order.
    pub facts: Vec<Fact>,
    /// The ε spent in all.
    pub epsilon: f64,
    /// The δ spent in all (0 when no release needed it).
    pub delta: f64,
    /// The records read (n: public under replace-one).
    pub rows: u64,
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

fn list(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| quoted(v)).collect();
    format!("[{}]", items.join(", "))
}

fn spend(epsilon: f64, delta: f64) -> String {
    if delta == 0.0 {
        format!("epsilon = {epsilon:?}")
    } else {
        format!("epsilon = {epsilon:?}, delta = {delta:?}")
    }
}

/// The schema's text: the header states the whole spend and the split rule; each released
/// fact's comment states its mechanism and spend.
fn write_schema(
    plan: &DescribePlan,
    rows: u64,
    columns: &[(String, Written)],
    facts: &[Fact],
) -> String {
    let spec = &plan.spec;
    let (epsilon_each, delta_each) = plan.shares();
    let mut out = String::new();
    out.push_str(&format!(
        "# A PRIVATE description, written by dp-schema's describe pass from {rows} records.\n\
         #\n\
         # Every bound, level and class below marked \"private release\" is the output of a\n\
         # differentially private mechanism (replace-one neighbours, n public): the whole\n\
         # description spent {} in all, split equally among the {} facts released\n\
         # (epsilon {:?} each; delta {:?} each for the stability-based releases). A model\n\
         # trained with this schema on the same data spends its own budget on top.\n\
         # Column names, types, the label's positive class and the CSV format were public.\n\
         \n\
         version = 1\n\
         row_scaling = {}\n\
         intercept = {}\n\
         \n\
         [csv]\n\
         header = {}\n\
         delimiter = {}\n",
        spend(plan.epsilon, plan.delta),
        facts.len(),
        epsilon_each,
        if plan.delta == 0.0 { 0.0 } else { delta_each },
        quoted(match spec.row_scaling {
            RowScaling::Attributes => "attributes",
            RowScaling::UnitNorm => "unit_norm",
        }),
        spec.intercept,
        spec.csv.header,
        quoted(&spec.csv.delimiter.to_string()),
    ));
    if let Some(c) = spec.csv.comment {
        out.push_str(&format!("comment = {}\n", quoted(&c.to_string())));
    }
    out.push_str(&format!(
        "trim = {}\nmissing = {}\n",
        spec.csv.trim,
        list(&spec.csv.missing)
    ));
    for (name, written) in columns {
        out.push_str(&format!("\n[[columns]]\nname = {}\n", quoted(name)));
        for fact in facts.iter().filter(|f| &f.column == name) {
            out.push_str(&format!(
                "# private release ({}): {}; {}\n# released: {}\n",
                fact.what,
                fact.mechanism.name(),
                spend(fact.epsilon, fact.delta),
                fact.outcome.replace('\n', " "),
            ));
        }
        match written {
            Written::Numeric {
                lower,
                upper,
                missing,
            } => {
                out.push_str(&format!(
                    "type = \"numeric\"\nlower = {lower:?}\nupper = {upper:?}\n"
                ));
                if *missing == NumericMissing::Zero {
                    out.push_str("missing = \"zero\"\n");
                }
            }
            Written::Categorical(levels) => {
                out.push_str(&format!(
                    "type = \"categorical\"\nlevels = {}\n# A level below the threshold is \
                     encoded as \"other\"; a missing value as a level of its own.\n\
                     unseen = \"other\"\nmissing = \"level\"\n",
                    list(levels),
                ));
            }
            Written::Label {
                classes,
                positive,
                aliases,
                public,
            } => {
                if *public {
                    out.push_str("# classes: public (given)\n");
                }
                out.push_str(&format!(
                    "type = \"label\"\nclasses = {}\npositive = {}\n",
                    list(classes),
                    quoted(positive)
                ));
                if !aliases.is_empty() {
                    let items: Vec<String> = aliases
                        .iter()
                        .map(|(a, c)| format!("{} = {}", quoted(a), quoted(c)))
                        .collect();
                    out.push_str(&format!("aliases = {{ {} }}\n", items.join(", ")));
                }
            }
            Written::Dropped => {
                out.push_str("# Dropped: its release gave nothing usable.\ntype = \"ignore\"\n");
            }
            Written::Ignore => out.push_str("type = \"ignore\"\n"),
        }
    }
    out
}

/// A number cell (Parquet, Arrow) as the text a level would be written as (`3`, not `3.0`),
/// as the encoder matches it.
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}

#[path = "describe_columns.rs"]
mod columns;
pub use columns::{ColumnRelease, Released};

#[path = "describe_outlook.rs"]
mod outlook;
pub use outlook::{DESCRIBE_AT_RISK_SHARE, DescribeOutlook};

#[cfg(test)]
#[path = "describe_test_columns.rs"]
mod test_columns;

#[path = "describe_counts.rs"]
mod counts;
pub use counts::DescribeCounts;

#[cfg(all(test, feature = "files"))]
#[path = "describe_tests.rs"]
mod tests;
