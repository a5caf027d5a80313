//! The encoding: a function of the public schema and of one row alone.

use std::borrow::Cow;
use std::collections::HashMap;

use dp_noise::FeatureGroups;

use crate::schema::{CategoricalMissing, ColumnKind, NumericMissing, RowScaling, Unseen};
use crate::{Problem, Schema};

/// The scale applied after the data-free rule, `1 − 10⁻¹²`: the encoded row's norm as
/// computed in floating point then stays ≤ 1 (the exact scaled norm is at most 1, and a
/// few roundings cannot add 10⁻¹²), so dp-erm's unit-ball check never refuses a schema-built
/// row. The safe direction: rows shrink by a relative 10⁻¹², never grow.
const ROUNDING_SHRINK: f64 = 1.0 - 1e-12;

/// An encoded record: its sparse row (increasing indices) and its label (±1) if asked for.
pub type EncodedRow = (Vec<(usize, f64)>, Option<f64>);

/// One cell as a reader hands it over.
#[derive(Debug, Clone, Copy)]
pub enum Cell<'a> {
    /// Text (CSV, or a Parquet string column), before trimming.
    Text(&'a [u8]),
    /// A number (a Parquet numeric column).
    Number(f64),
    /// A Parquet null.
    Null,
}

/// A cell that does not fit the schema: which column (index in [`Schema::columns`]) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellError {
    /// The schema column.
    pub column: usize,
    /// What is wrong.
    pub problem: Problem,
}

#[derive(Debug, Clone)]
enum Attr {
    Numeric {
        offset: usize,
        lower: f64,
        upper: f64,
        missing: NumericMissing,
    },
    Categorical {
        levels: HashMap<String, usize>,
        unseen: Option<usize>,
        unseen_is_error: bool,
        missing: Option<usize>,
        missing_is_error: bool,
    },
    Label {
        /// Each class (and alias): its ±1 label and its index in the declared classes.
        classes: HashMap<String, (f64, usize)>,
    },
    Target {
        lower: f64,
        upper: f64,
        clip: bool,
    },
    Ignore,
}

/// Encodes rows by a schema: numeric values clamped to their public bounds and scaled to
/// [0, 1], categorical values one-hot over their public levels, then the row put into the
/// unit ball by the schema's [`RowScaling`]; labels +1 for the positive class, −1 for every
/// other. Nothing here looks at more than one row, so the encoding is the same function for
/// every dataset and preserves the replace-one neighbouring relation: a model trained on
/// the encoded rows is exactly as private as the mechanism says.
///
/// **Clamping.** A numeric value outside `[lower, upper]` is clamped to the nearer bound (the
/// standard treatment; it needs no privacy budget because the bounds are public). No count
/// of clamped values is kept or released.
///
/// # Privacy
/// The encoded row is a function of one record and the public schema, the same function
/// for every dataset, so replacing one record replaces exactly one encoded row: a mechanism
/// that is ε-DP under replace-one neighbours on encoded rows (in the unit ball, group norm
/// ≤ 1, which [`RowScaling`] guarantees for every record the schema accepts) is ε-DP on the
/// records. The conditions: the schema's bounds, levels and classes are public (not
/// computed from the data), and records the schema refuses are refused for the whole file
/// (never dropped one by one, which would change the dataset's size).
#[derive(Debug, Clone)]
pub struct Encoder {
    attrs: Vec<Attr>,
    features: usize,
    groups: FeatureGroups,
    names: Vec<String>,
    scaling: RowScaling,
    /// `(1 − 10⁻¹²)/√A` for [`RowScaling::Attributes`].
    attribute_scale: f64,
    intercept: Option<usize>,
    missing: Vec<String>,
    trim: bool,
}

impl Encoder {
    /// The encoder of a checked schema.
    pub fn new(schema: &Schema) -> Self {
        let mut attrs = Vec::with_capacity(schema.columns.len());
        let mut group_of = Vec::new();
        let mut names = Vec::new();
        let mut attributes = 0usize;
        for column in &schema.columns {
            let offset = group_of.len();
            let group = attributes;
            let attr = match &column.kind {
                ColumnKind::Numeric {
                    lower,
                    upper,
                    missing,
                } => {
                    group_of.push(group);
                    names.push(column.name.clone());
                    attributes += 1;
                    Attr::Numeric {
                        offset,
                        lower: *lower,
                        upper: *upper,
                        missing: *missing,
                    }
                }
                ColumnKind::Categorical {
                    levels,
                    unseen,
                    missing,
                } => {
                    let mut slots = levels.len();
                    names.extend(levels.iter().map(|l| format!("{}={l}", column.name)));
                    let mut extra = |label: &str| {
                        names.push(format!("{}{label}", column.name));
                        slots += 1;
                        offset + slots - 1
                    };
                    let unseen_slot = (*unseen == Unseen::Other).then(|| extra(":other"));
                    let missing_slot =
                        (*missing == CategoricalMissing::Level).then(|| extra(":missing"));
                    group_of.extend(std::iter::repeat_n(group, slots));
                    attributes += 1;
                    Attr::Categorical {
                        levels: levels
                            .iter()
                            .enumerate()
                            .map(|(k, l)| (l.clone(), offset + k))
                            .collect(),
                        unseen: unseen_slot,
                        unseen_is_error: *unseen == Unseen::Error,
                        missing: missing_slot,
                        missing_is_error: *missing == CategoricalMissing::Error,
                    }
                }
                ColumnKind::Label {
                    classes,
                    positive,
                    aliases,
                } => {
                    let entry = |class: &String| {
                        let sign = if class == positive { 1.0 } else { -1.0 };
                        // A checked schema's aliases name declared classes.
                        let index = classes.iter().position(|c| c == class).unwrap_or(0);
                        (sign, index)
                    };
                    let mut map: HashMap<String, (f64, usize)> =
                        classes.iter().map(|c| (c.clone(), entry(c))).collect();
                    map.extend(aliases.iter().map(|(a, c)| (a.clone(), entry(c))));
                    Attr::Label { classes: map }
                }
                ColumnKind::Target { lower, upper, clip } => Attr::Target {
                    lower: *lower,
                    upper: *upper,
                    clip: *clip,
                },
                ColumnKind::Ignore => Attr::Ignore,
            };
            attrs.push(attr);
        }
        let intercept = schema.intercept.then(|| {
            group_of.push(attributes);
            names.push("intercept".into());
            attributes += 1;
            group_of.len() - 1
        });
        let groups = FeatureGroups::new(&group_of).expect("groups numbered 0..A, none empty");
        Self {
            attrs,
            features: group_of.len(),
            groups,
            names,
            scaling: schema.row_scaling,
            attribute_scale: ROUNDING_SHRINK / (attributes as f64).sqrt(),
            intercept,
            missing: schema.csv.missing.clone(),
            trim: schema.csv.trim,
        }
    }

    /// The number of encoded features d.
    pub fn features(&self) -> usize {
        self.features
    }

    /// The one-hot groups: each categorical column's levels (and its "other"/"missing"
    /// slots) form a group, each numeric column and the intercept a group of their own.
    /// Public (a function of the schema), so objective perturbation's noise can be shaped
    /// to them at no cost ([`dp_erm::ErmParams::group_noise`]).
    pub fn groups(&self) -> &FeatureGroups {
        &self.groups
    }

    /// The name of every encoded feature (`age`, `workclass=Private`, `workclass:other`).
    pub fn feature_names(&self) -> &[String] {
        &self.names
    }

    /// Text of a cell after trimming, or `None` if it is a missing-value token.
    fn text<'a>(&self, bytes: &'a [u8], column: usize) -> Result<Option<&'a str>, CellError> {
        let text = std::str::from_utf8(bytes).map_err(|_| CellError {
            column,
            problem: Problem::NotUtf8,
        })?;
        let text = if self.trim {
            text.trim_matches([' ', '\t'])
        } else {
            text
        };
        Ok((!self.missing.iter().any(|m| m == text)).then_some(text))
    }

    /// Encodes one record. `cell(k)` is the cell of schema column `k`; it is asked only for
    /// columns the encoding reads (never for ignored ones), and for the label only when
    /// `with_label`. Returns the sparse row (increasing feature indices, in the unit ball,
    /// group norm ≤ 1) and the label (±1) if asked for.
    pub fn encode<'a>(
        &self,
        with_label: bool,
        mut cell: impl FnMut(usize) -> Cell<'a>,
    ) -> Result<EncodedRow, CellError> {
        let mut row = Vec::with_capacity(self.attrs.len() + 1);
        let mut label = None;
        for (k, attr) in self.attrs.iter().enumerate() {
            let err = |problem| CellError { column: k, problem };
            match attr {
                Attr::Ignore => {}
                Attr::Label { classes } => {
                    if !with_label {
                        continue;
                    }
                    label = Some(self.label_entry(classes, k, cell(k))?.0);
                }
                Attr::Target { lower, upper, clip } => {
                    if !with_label {
                        continue;
                    }
                    label = Some(self.target(*lower, *upper, *clip, k, cell(k))?);
                }
                Attr::Numeric {
                    offset,
                    lower,
                    upper,
                    missing,
                } => {
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
                    let Some(value) = value else {
                        if *missing == NumericMissing::Error {
                            return Err(err(Problem::Missing));
                        }
                        continue;
                    };
                    if !value.is_finite() {
                        return Err(err(Problem::NotFinite));
                    }
                    // Clamped to the public bounds, then into [0, 1].
                    let scaled = (value.clamp(*lower, *upper) - lower) / (upper - lower);
                    let scaled = scaled.clamp(0.0, 1.0);
                    if scaled != 0.0 {
                        row.push((*offset, scaled));
                    }
                }
                Attr::Categorical {
                    levels,
                    unseen,
                    unseen_is_error,
                    missing,
                    missing_is_error,
                    ..
                } => {
                    let text: Option<Cow<'_, str>> = match cell(k) {
                        Cell::Text(bytes) => self.text(bytes, k)?.map(Cow::Borrowed),
                        Cell::Number(v) => Some(Cow::Owned(format_number(v))),
                        Cell::Null => None,
                    };
                    let slot = match text {
                        None if *missing_is_error => return Err(err(Problem::Missing)),
                        None => *missing,
                        Some(text) => match levels.get(text.as_ref()) {
                            Some(&slot) => Some(slot),
                            None if *unseen_is_error => return Err(err(Problem::UnseenLevel)),
                            None => *unseen,
                        },
                    };
                    if let Some(slot) = slot {
                        row.push((slot, 1.0));
                    }
                }
            }
        }
        if let Some(j) = self.intercept {
            row.push((j, 1.0));
        }
        self.scale(&mut row);
        Ok((row, label))
    }

    /// The class of one record's label cell (`cell`, the label column's): its index in
    /// the schema's declared classes (an alias gives its class's index), as
    /// [`Encoder::encode`] reads the cell for the ±1 label — the same trimming, missing
    /// tokens and number formatting — and refused as it refuses it. A function of the
    /// record and the public schema alone (multiclass fits relabel by it).
    pub fn class_index(&self, cell: Cell<'_>) -> Result<usize, CellError> {
        let Some((k, classes)) = self.attrs.iter().enumerate().find_map(|(k, a)| match a {
            Attr::Label { classes } => Some((k, classes)),
            _ => None,
        }) else {
            unreachable!("a checked schema has one label column")
        };
        Ok(self.label_entry(classes, k, cell)?.1)
    }

    /// The regression target in target column `k`'s cell: a finite number within
    /// `[lower, upper]`, or clamped into them with `clip`; missing, not a number, or
    /// outside the bounds without `clip` is an error naming the cell (not its value).
    fn target(
        &self,
        lower: f64,
        upper: f64,
        clip: bool,
        k: usize,
        cell: Cell<'_>,
    ) -> Result<f64, CellError> {
        let err = |problem| CellError { column: k, problem };
        let value = match cell {
            Cell::Number(v) => v,
            Cell::Null => return Err(err(Problem::MissingLabel)),
            Cell::Text(bytes) => match self.text(bytes, k)? {
                None => return Err(err(Problem::MissingLabel)),
                Some(text) => text.parse::<f64>().map_err(|_| err(Problem::NotANumber))?,
            },
        };
        if !value.is_finite() {
            return Err(err(Problem::NotFinite));
        }
        if (lower..=upper).contains(&value) {
            Ok(value)
        } else if clip {
            Ok(value.clamp(lower, upper))
        } else {
            Err(err(Problem::OutsideTargetBounds))
        }
    }

    /// The `(±1 label, class index)` of label column `k`'s cell.
    fn label_entry(
        &self,
        classes: &HashMap<String, (f64, usize)>,
        k: usize,
        cell: Cell<'_>,
    ) -> Result<(f64, usize), CellError> {
        let err = |problem| CellError { column: k, problem };
        let text = match cell {
            Cell::Text(bytes) => self.text(bytes, k)?,
            Cell::Number(v) => {
                // Integer-coded classes in Parquet: matched by their decimal text.
                let text = format_number(v);
                return classes.get(&text).copied().ok_or(err(Problem::NotAClass));
            }
            Cell::Null => None,
        };
        let text = text.ok_or(err(Problem::MissingLabel))?;
        classes.get(text).copied().ok_or(err(Problem::NotAClass))
    }

    /// The schema's data-free rule into the unit ball.
    fn scale(&self, row: &mut [(usize, f64)]) {
        let factor = match self.scaling {
            RowScaling::Attributes => self.attribute_scale,
            RowScaling::UnitNorm => {
                let norm = row.iter().map(|&(_, v)| v * v).sum::<f64>().sqrt();
                if norm == 0.0 {
                    return;
                }
                ROUNDING_SHRINK / norm
            }
        };
        for (_, v) in row.iter_mut() {
            *v *= factor;
        }
    }
}

/// A Parquet number as the text a level would be written as (`3`, not `3.0`).
fn format_number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        v.to_string()
    }
}
