//! The schema file: parsing (TOML, unknown keys refused), every rule checked on load, and
//! a hash of its canonical form.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::SchemaError;

/// The schema format this crate reads (`version = 1`).
pub const SCHEMA_VERSION: u32 = 1;

/// Most levels (or classes) one column may declare: one-hot columns are allocated per level.
pub const MAX_LEVELS: usize = 1 << 16;

/// Longest schema file read, in bytes: a schema is a page of text, not data.
pub const MAX_SCHEMA_BYTES: u64 = 16 << 20;

/// How a row is put into the unit ball. Both rules read one row only (no other row, no
/// statistic of the data), so neither changes the neighbouring relation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowScaling {
    /// Divide by `√A`, `A` the number of encoded attributes (the intercept counts as one):
    /// each attribute contributes at most 1 to the squared norm (a numeric value in [0, 1],
    /// one non-zero of 1 per categorical group), so `‖x‖₂ ≤ 1` and the group norm
    /// `‖x‖_G ≤ 1`. Every row keeps its relative magnitude, so rows with few large values
    /// lie deep inside the ball and pull little against the noise. A regression's default
    /// and only choice.
    Attributes,
    /// Divide each non-zero row by its own Euclidean norm (zero rows stay zero): every row
    /// on the unit sphere, as large as the contract allows. The default: measured better
    /// than [`RowScaling::Attributes`] at every ε on every table tried (scikit-learn's
    /// breast cancer, wine and digits tables by `python/bench/row_scaling.py`: e.g. breast
    /// cancer 0.289 against 0.454 test error at ε = 1; Adult 0.182 against 0.187 at ε = 0.1).
    /// Classifiers only: a regression's prediction `wᵀx/‖x‖` would not be linear in the
    /// features, so a schema with a target column refuses it.
    UnitNorm,
}

/// What a missing numeric value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NumericMissing {
    /// Refuse the file.
    Error,
    /// Encode 0 (the same as the lower bound).
    Zero,
}

/// What a missing categorical value becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CategoricalMissing {
    /// Refuse the file.
    Error,
    /// An all-zero group.
    Zero,
    /// A level of its own (one more one-hot column).
    Level,
}

/// What a categorical value not among the declared levels becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unseen {
    /// Refuse the file.
    Error,
    /// An all-zero group.
    Ignore,
    /// A level "other" of its own (one more one-hot column).
    Other,
}

/// One column of the file and what it holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ColumnKind {
    /// A number with public bounds; values outside are clamped to them.
    Numeric {
        /// Public lower bound.
        lower: f64,
        /// Public upper bound (> lower).
        upper: f64,
        /// Missing-value policy.
        missing: NumericMissing,
    },
    /// One of public levels, one-hot encoded.
    Categorical {
        /// The public levels, in encoding order.
        levels: Vec<String>,
        /// Unseen-level policy.
        unseen: Unseen,
        /// Missing-value policy.
        missing: CategoricalMissing,
    },
    /// The label: one of public classes; `positive` is +1, every other class −1.
    Label {
        /// The public classes.
        classes: Vec<String>,
        /// The class encoded +1.
        positive: String,
        /// Other spellings of a class (`">50K." = ">50K"`).
        aliases: BTreeMap<String, String>,
    },
    /// A regression's target: a number within public bounds, which scale it for training
    /// and bound every prediction. A value outside them is an error naming its file, line
    /// and column, unless `clip = true` clamps it (per row: no privacy cost).
    Target {
        /// Public lower bound.
        lower: f64,
        /// Public upper bound (> lower).
        upper: f64,
        /// Clamp values outside the bounds instead of refusing them.
        clip: bool,
    },
    /// Read past, never encoded.
    Ignore,
}

/// A column: its name (the header's, or the schema's for files without a header) and kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    /// Name.
    pub name: String,
    /// What it holds.
    #[serde(flatten)]
    pub kind: ColumnKind,
}

/// How CSV files are read (Parquet files carry their own names and types).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CsvFormat {
    /// The first record names the columns (then they are matched by name; otherwise by
    /// position, in the schema's order).
    pub header: bool,
    /// Field separator (one ASCII character).
    pub delimiter: char,
    /// Lines starting with this ASCII character are skipped (e.g. `|` for `adult.test`'s
    /// first line).
    pub comment: Option<char>,
    /// Strip spaces and tabs around every field (Adult writes a space after each comma).
    pub trim: bool,
    /// Cells equal to one of these (after trimming) are missing values.
    pub missing: Vec<String>,
}

/// A checked schema. Every rule is checked by [`Schema::from_toml`]; the encoding
/// ([`crate::Encoder`]) is a function of it alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Schema {
    /// CSV reading options.
    pub csv: CsvFormat,
    /// How rows are put into the unit ball.
    pub row_scaling: RowScaling,
    /// Append a constant attribute 1 (scaled like the others, regularized like every weight).
    pub intercept: bool,
    /// The columns, in the file's order for files without a header.
    pub columns: Vec<Column>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchema {
    version: Option<u32>,
    row_scaling: Option<String>,
    intercept: Option<bool>,
    csv: Option<RawCsv>,
    columns: Option<Vec<RawColumn>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCsv {
    header: Option<bool>,
    delimiter: Option<String>,
    comment: Option<String>,
    trim: Option<bool>,
    missing: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawColumn {
    name: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    lower: Option<f64>,
    upper: Option<f64>,
    levels: Option<Vec<String>>,
    unseen: Option<String>,
    missing: Option<String>,
    classes: Option<Vec<String>>,
    positive: Option<String>,
    aliases: Option<BTreeMap<String, String>>,
    clip: Option<bool>,
}

/// Builds [`SchemaError::Invalid`] for one file.
struct Checker<'a> {
    file: &'a str,
}

impl Checker<'_> {
    fn err(&self, key: impl Into<String>, value: impl Into<String>, problem: &str) -> SchemaError {
        SchemaError::Invalid {
            file: self.file.to_owned(),
            key: key.into(),
            value: value.into(),
            problem: problem.to_owned(),
        }
    }

    fn one_ascii(&self, key: &str, text: &str) -> Result<char, SchemaError> {
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii() && c != '"' && c != '\n' && c != '\r' => Ok(c),
            _ => Err(self.err(
                key,
                format!("{text:?}"),
                "must be one ASCII character (not a quote or a line break)",
            )),
        }
    }

    fn choice<T: Copy>(
        &self,
        key: String,
        value: Option<&str>,
        default: T,
        options: &[(&str, T)],
        problem: &str,
    ) -> Result<T, SchemaError> {
        let Some(value) = value else {
            return Ok(default);
        };
        options
            .iter()
            .find(|(name, _)| *name == value)
            .map(|&(_, t)| t)
            .ok_or_else(|| self.err(key, format!("{value:?}"), problem))
    }

    fn distinct(&self, key: &str, values: &[String], what: &str) -> Result<(), SchemaError> {
        let mut seen = BTreeSet::new();
        for (i, v) in values.iter().enumerate() {
            if !seen.insert(v.as_str()) {
                return Err(self.err(
                    format!("{key}[{i}]"),
                    format!("{v:?}"),
                    &format!("duplicate {what}: each must be declared once"),
                ));
            }
        }
        Ok(())
    }

    /// A value a cell can match: after trimming it must be unchanged, and no missing token.
    fn matchable(&self, key: &str, values: &[String], csv: &CsvFormat) -> Result<(), SchemaError> {
        for (i, v) in values.iter().enumerate() {
            if csv.trim && v.trim_matches([' ', '\t']) != v {
                return Err(self.err(
                    format!("{key}[{i}]"),
                    format!("{v:?}"),
                    "has leading or trailing spaces, which csv.trim = true removes from every \
                     cell: no cell could match it",
                ));
            }
            if csv.missing.contains(v) {
                return Err(self.err(
                    format!("{key}[{i}]"),
                    format!("{v:?}"),
                    "is also a missing-value token (csv.missing): a cell holding it would be \
                     ambiguous",
                ));
            }
        }
        Ok(())
    }
}

impl Schema {
    /// Reads and checks the schema file at `path`; errors name the file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, SchemaError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let io = |e: std::io::Error| SchemaError::Io {
            file: file.clone(),
            why: e.to_string(),
        };
        // The limit is enforced on what is read, not on the size the file claims: a device
        // or a pipe claims 0 bytes (`/dev/zero` would never end).
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_SCHEMA_BYTES + 1).read_to_string(&mut text))
            .map_err(io)?;
        if text.len() as u64 > MAX_SCHEMA_BYTES {
            return Err(SchemaError::Io {
                file,
                why: format!("more than a schema's limit of {MAX_SCHEMA_BYTES} bytes"),
            });
        }
        Self::from_toml(&text, &file)
    }

    /// Parses and checks a schema; `file` names it in errors.
    pub fn from_toml(text: &str, file: &str) -> Result<Self, SchemaError> {
        let raw: RawSchema = toml::from_str(text).map_err(|e| SchemaError::Syntax {
            file: file.to_owned(),
            why: e.to_string(),
        })?;
        let c = Checker { file };
        match raw.version {
            Some(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(c.err("version", v.to_string(), "this dpml reads version = 1"));
            }
            None => return Err(c.err("version", "(absent)", "required: version = 1")),
        }
        let csv = check_csv(&c, raw.csv)?;
        let raw_columns = raw.columns.unwrap_or_default();
        if raw_columns.is_empty() {
            return Err(c.err(
                "columns",
                "(absent)",
                "declare every column of the file with [[columns]]",
            ));
        }
        let mut columns = Vec::with_capacity(raw_columns.len());
        let mut names = BTreeSet::new();
        for (i, raw) in raw_columns.into_iter().enumerate() {
            let column = check_column(&c, i, raw, &csv)?;
            if !names.insert(column.name.clone()) {
                return Err(c.err(
                    format!("columns[{i}].name"),
                    format!("{:?}", column.name),
                    "duplicate column: each column must be declared once",
                ));
            }
            columns.push(column);
        }
        let labels = columns
            .iter()
            .filter(|col| {
                matches!(
                    col.kind,
                    ColumnKind::Label { .. } | ColumnKind::Target { .. }
                )
            })
            .count();
        if labels != 1 {
            return Err(c.err(
                "columns[*].type",
                format!("{labels} label or target columns"),
                "exactly one column must have type = \"label\" (classification) or \
                 type = \"target\" (regression)",
            ));
        }
        let regression = columns
            .iter()
            .any(|col| matches!(col.kind, ColumnKind::Target { .. }));
        let row_scaling = c.choice(
            "row_scaling".into(),
            raw.row_scaling.as_deref(),
            // Classifiers: measured better on every table tried (python/bench/row_scaling.py,
            // Adult, KDD). A regression needs one public factor for every row, or its
            // predictions stop being linear in the features.
            if regression {
                RowScaling::Attributes
            } else {
                RowScaling::UnitNorm
            },
            &[
                ("attributes", RowScaling::Attributes),
                ("unit_norm", RowScaling::UnitNorm),
            ],
            "must be \"attributes\" (divide by √(number of attributes)) or \"unit_norm\"",
        )?;
        if regression && row_scaling == RowScaling::UnitNorm {
            return Err(c.err(
                "row_scaling",
                "\"unit_norm\"",
                "a regression (a type = \"target\" column) needs row_scaling = \"attributes\": \
                 dividing each row by its own norm would make the predictions depend on the \
                 row's length, not linearly on its features",
            ));
        }
        let attributes = columns
            .iter()
            .filter(|col| {
                matches!(
                    col.kind,
                    ColumnKind::Numeric { .. } | ColumnKind::Categorical { .. }
                )
            })
            .count();
        if attributes == 0 {
            return Err(c.err(
                "columns[*].type",
                "no numeric or categorical column",
                "at least one column must be a feature",
            ));
        }
        let schema = Self {
            csv,
            row_scaling,
            intercept: raw.intercept.unwrap_or(false),
            columns,
        };
        if schema.feature_count() > dp_erm::MAX_FEATURES {
            return Err(c.err(
                "columns",
                format!("{} encoded features", schema.feature_count()),
                "more than dp-erm's limit of 2^24",
            ));
        }
        Ok(schema)
    }

    /// The label (or regression target) column's index in [`Schema::columns`].
    pub fn label_index(&self) -> usize {
        self.columns
            .iter()
            .position(|col| {
                matches!(
                    col.kind,
                    ColumnKind::Label { .. } | ColumnKind::Target { .. }
                )
            })
            .expect("a checked schema has one label or target column")
    }

    /// The regression target's public bounds `(lower, upper)`, if the schema has a target
    /// column (a regression) rather than a label (a classification).
    pub fn target_bounds(&self) -> Option<(f64, f64)> {
        self.columns.iter().find_map(|col| match col.kind {
            ColumnKind::Target { lower, upper, .. } => Some((lower, upper)),
            _ => None,
        })
    }

    /// The number of encoded features d.
    pub fn feature_count(&self) -> usize {
        let columns: usize = self
            .columns
            .iter()
            .map(|col| match &col.kind {
                ColumnKind::Numeric { .. } => 1,
                ColumnKind::Categorical {
                    levels,
                    unseen,
                    missing,
                } => {
                    levels.len()
                        + usize::from(*unseen == Unseen::Other)
                        + usize::from(*missing == CategoricalMissing::Level)
                }
                ColumnKind::Label { .. } | ColumnKind::Target { .. } | ColumnKind::Ignore => 0,
            })
            .sum();
        columns + usize::from(self.intercept)
    }

    /// SHA-256 (hex) of the schema's canonical form: its checked content as compact JSON
    /// (keys in a fixed order, defaults filled in), so comments, spacing and key order in
    /// the file do not change it, and every choice that changes the encoding or the reading
    /// does.
    pub fn hash(&self) -> String {
        let canonical = serde_json::to_vec(self).expect("a schema serializes");
        let digest = Sha256::digest(&canonical);
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn check_csv(c: &Checker<'_>, raw: Option<RawCsv>) -> Result<CsvFormat, SchemaError> {
    let raw = raw.unwrap_or(RawCsv {
        header: None,
        delimiter: None,
        comment: None,
        trim: None,
        missing: None,
    });
    let delimiter = match raw.delimiter.as_deref() {
        None => ',',
        Some(d) => c.one_ascii("csv.delimiter", d)?,
    };
    let comment = match raw.comment.as_deref() {
        None => None,
        Some(d) => Some(c.one_ascii("csv.comment", d)?),
    };
    if comment == Some(delimiter) {
        return Err(c.err(
            "csv.comment",
            format!("{delimiter:?}"),
            "is also csv.delimiter",
        ));
    }
    let missing = raw.missing.unwrap_or_default();
    c.distinct("csv.missing", &missing, "missing-value token")?;
    Ok(CsvFormat {
        header: raw.header.unwrap_or(true),
        delimiter,
        comment,
        trim: raw.trim.unwrap_or(false),
        missing,
    })
}

fn check_column(
    c: &Checker<'_>,
    i: usize,
    raw: RawColumn,
    csv: &CsvFormat,
) -> Result<Column, SchemaError> {
    let key = |k: &str| format!("columns[{i}].{k}");
    let name = raw
        .name
        .ok_or_else(|| c.err(key("name"), "(absent)", "every column needs a name"))?;
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(c.err(
            key("name"),
            format!("{name:?}"),
            "must be non-empty printable text",
        ));
    }
    let kind_text = raw.kind.as_deref().unwrap_or("(absent)");
    // Keys that only some types use: one given to another type is a mistake, not ignored.
    let given: Vec<&str> = [
        ("lower", raw.lower.is_some()),
        ("upper", raw.upper.is_some()),
        ("levels", raw.levels.is_some()),
        ("unseen", raw.unseen.is_some()),
        ("missing", raw.missing.is_some()),
        ("classes", raw.classes.is_some()),
        ("positive", raw.positive.is_some()),
        ("aliases", raw.aliases.is_some()),
    ]
    .iter()
    .filter(|(_, given)| *given)
    .map(|(k, _)| *k)
    .collect();
    let allow = |allowed: &[&str]| -> Result<(), SchemaError> {
        match given.iter().find(|k| !allowed.contains(k)) {
            Some(k) => Err(c.err(
                key(k),
                "(given)",
                &format!("not a key of a column of type = {kind_text:?} ({name})"),
            )),
            None => Ok(()),
        }
    };
    let public_bounds = |kind: &str| -> Result<(f64, f64), SchemaError> {
        let bound = |k: &str, v: Option<f64>| -> Result<f64, SchemaError> {
            match v {
                None => Err(c.err(
                    key(k),
                    "(absent)",
                    &format!(
                        "a {kind} column needs public bounds lower and upper (from the data's \
                         documentation or domain knowledge, never computed from the data)"
                    ),
                )),
                Some(v) if !v.is_finite() => {
                    Err(c.err(key(k), format!("{v:?}"), "must be a finite number"))
                }
                Some(v) => Ok(v),
            }
        };
        let lower = bound("lower", raw.lower)?;
        let upper = bound("upper", raw.upper)?;
        if lower >= upper {
            return Err(c.err(
                key("upper"),
                format!("{upper:?}"),
                &format!("must be above lower = {lower:?} ({name})"),
            ));
        }
        if !(upper - lower).is_finite() {
            return Err(c.err(
                key("upper"),
                format!("{upper:?}"),
                "upper − lower overflows; choose narrower bounds",
            ));
        }
        Ok((lower, upper))
    };
    let kind = match kind_text {
        "numeric" => {
            allow(&["lower", "upper", "missing"])?;
            let (lower, upper) = public_bounds("numeric")?;
            let missing = c.choice(
                key("missing"),
                raw.missing.as_deref(),
                NumericMissing::Error,
                &[
                    ("error", NumericMissing::Error),
                    ("zero", NumericMissing::Zero),
                ],
                "a numeric column's missing policy is \"error\" or \"zero\"",
            )?;
            ColumnKind::Numeric {
                lower,
                upper,
                missing,
            }
        }
        "categorical" => {
            allow(&["levels", "unseen", "missing"])?;
            let levels = raw.levels.unwrap_or_default();
            if levels.is_empty() || levels.len() > MAX_LEVELS {
                return Err(c.err(
                    key("levels"),
                    format!("{} levels", levels.len()),
                    "a categorical column declares between 1 and 65536 public levels",
                ));
            }
            c.distinct(&key("levels"), &levels, "level")?;
            c.matchable(&key("levels"), &levels, csv)?;
            let unseen = c.choice(
                key("unseen"),
                raw.unseen.as_deref(),
                Unseen::Error,
                &[
                    ("error", Unseen::Error),
                    ("ignore", Unseen::Ignore),
                    ("other", Unseen::Other),
                ],
                "must be \"error\", \"ignore\" (an all-zero group) or \"other\" (a level of its own)",
            )?;
            let missing = c.choice(
                key("missing"),
                raw.missing.as_deref(),
                CategoricalMissing::Error,
                &[
                    ("error", CategoricalMissing::Error),
                    ("zero", CategoricalMissing::Zero),
                    ("level", CategoricalMissing::Level),
                ],
                "a categorical column's missing policy is \"error\", \"zero\" or \"level\"",
            )?;
            ColumnKind::Categorical {
                levels,
                unseen,
                missing,
            }
        }
        "label" => {
            allow(&["classes", "positive", "aliases"])?;
            let classes = raw.classes.unwrap_or_default();
            if classes.len() < 2 || classes.len() > MAX_LEVELS {
                return Err(c.err(
                    key("classes"),
                    format!("{} classes", classes.len()),
                    "the label declares at least 2 public classes",
                ));
            }
            c.distinct(&key("classes"), &classes, "class")?;
            c.matchable(&key("classes"), &classes, csv)?;
            let positive = raw.positive.ok_or_else(|| {
                c.err(
                    key("positive"),
                    "(absent)",
                    "name the class encoded +1 (one of classes)",
                )
            })?;
            if !classes.contains(&positive) {
                return Err(c.err(
                    key("positive"),
                    format!("{positive:?}"),
                    "is not among the label's classes",
                ));
            }
            let aliases = raw.aliases.unwrap_or_default();
            for (alias, class) in &aliases {
                let alias_key = key(&format!("aliases.{alias:?}"));
                if !classes.contains(class) {
                    return Err(c.err(
                        alias_key,
                        format!("{class:?}"),
                        "an alias must stand for one of the classes",
                    ));
                }
                if classes.contains(alias) {
                    return Err(c.err(alias_key, format!("{class:?}"), "the alias is a class"));
                }
                c.matchable(&alias_key, std::slice::from_ref(alias), csv)?;
            }
            ColumnKind::Label {
                classes,
                positive,
                aliases,
            }
        }
        "target" => {
            allow(&["lower", "upper", "clip"])?;
            let (lower, upper) = public_bounds("target")?;
            ColumnKind::Target {
                lower,
                upper,
                clip: raw.clip.unwrap_or(false),
            }
        }
        "ignore" => {
            allow(&[])?;
            ColumnKind::Ignore
        }
        other => {
            return Err(c.err(
                key("type"),
                format!("{other:?}"),
                &format!(
                    "column {name}: type must be \"numeric\" (with public lower and upper), \
                     \"categorical\" (with public levels), \"label\" (with classes and \
                     positive), \"target\" (with public lower and upper) or \"ignore\""
                ),
            ));
        }
    };
    Ok(Column { name, kind })
}
