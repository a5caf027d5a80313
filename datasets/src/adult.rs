//! UCI Adult: census income.

use std::fs::File;

use crate::DatasetError;
use crate::dataset::{
    Dataset, Scaling, column_maxima, parse_finite, scale_columns_by_bounds, scale_columns_by_max,
};
use crate::dir::{ADULT_FILES, DataDir};

/// Public bounds for Adult's numeric columns (from the attribute descriptions, not the
/// data): age ≤ 100, fnlwgt ≤ 1.5·10⁶, education-num ≤ 16, capital-gain ≤ 10⁵,
/// capital-loss ≤ 5,000, hours-per-week ≤ 100. One-hot columns are bounded by 1.
pub const ADULT_NUMERIC_BOUNDS: [(&str, f64); 6] = [
    ("age", 100.0),
    ("fnlwgt", 1.5e6),
    ("education-num", 16.0),
    ("capital-gain", 1e5),
    ("capital-loss", 5e3),
    ("hours-per-week", 100.0),
];

/// How many of [`load_adult`]'s rows come from `adult.data` (the training file; the rest,
/// 15,060, are `adult.test`'s): rows `0..ADULT_TRAIN_ROWS` are the standard training split.
/// A fixed number because both files are verified by SHA-256 before they are read.
pub const ADULT_TRAIN_ROWS: usize = 30_162;

/// One attribute of the schema in `adult.names`.
enum Attribute {
    Numeric(String),
    Categorical(String, Vec<String>),
}

/// Loads Adult as the papers describe it: `adult.data` and `adult.test` (its first line
/// skipped, the trailing `.` of its labels stripped), rows with a missing value (`?`)
/// dropped — 45,222 rows — label +1 for income `>50K`. The 8 categorical attributes are
/// one-hot encoded over the categories listed in `adult.names` (the public schema, not
/// the categories seen in the data), the 6 numeric ones kept: 105 columns. Then `scaling`.
pub fn load_adult(dir: &DataDir, scaling: Scaling) -> Result<Dataset, DatasetError> {
    let mut adult = load_adult_unscaled(dir)?;
    match scaling {
        Scaling::PaperColumnMax => {
            let features = adult.features();
            scale_columns_by_max(&mut adult.rows, features);
        }
        Scaling::PublicBounds => {
            let bounds = public_bounds(&adult);
            scale_columns_by_bounds(&mut adult.rows, &bounds);
        }
        Scaling::None => {}
    }
    adult.scaling = scaling;
    Ok(adult)
}

/// Adult's official split: `(train, test)` with the rows of `adult.data` (30,162) and of
/// `adult.test` (15,060; its junk first line skipped, the trailing `.` of its labels
/// stripped), encoded as [`load_adult`] encodes them (the public schema's one-hot columns,
/// the same 105 columns in both). Nothing about the training set is chosen from the test
/// rows: with [`Scaling::PaperColumnMax`] each column is divided by its maximum over the
/// **training** rows, and test values are clamped to `[−1, 1]` after the same division (a
/// per-row map fixed by the training set); [`Scaling::PublicBounds`] reads neither.
pub fn load_adult_split(
    dir: &DataDir,
    scaling: Scaling,
) -> Result<(Dataset, Dataset), DatasetError> {
    let adult = load_adult_unscaled(dir)?;
    let bounds = match scaling {
        Scaling::PaperColumnMax => {
            let maxima = column_maxima(&adult.rows[..ADULT_TRAIN_ROWS], adult.features());
            // An all-zero training column stays as it is (divided by 1).
            Some(
                maxima
                    .into_iter()
                    .map(|m| if m > 0.0 { m } else { 1.0 })
                    .collect(),
            )
        }
        Scaling::PublicBounds => Some(public_bounds(&adult)),
        Scaling::None => None,
    };
    let part = |name: &str, range: std::ops::Range<usize>| {
        let mut rows = adult.rows[range.clone()].to_vec();
        if let Some(bounds) = &bounds {
            scale_columns_by_bounds(&mut rows, bounds);
        }
        Dataset {
            name: name.into(),
            rows,
            labels: adult.labels[range].to_vec(),
            scaling,
            feature_names: adult.feature_names.clone(),
            checksums: adult.checksums.clone(),
        }
    };
    Ok((
        part("adult (adult.data)", 0..ADULT_TRAIN_ROWS),
        part("adult (adult.test)", ADULT_TRAIN_ROWS..adult.len()),
    ))
}

/// [`ADULT_NUMERIC_BOUNDS`] per column, 1 for the one-hot columns.
fn public_bounds(adult: &Dataset) -> Vec<f64> {
    adult
        .feature_names
        .iter()
        .map(|name| {
            ADULT_NUMERIC_BOUNDS
                .iter()
                .find(|(n, _)| n == name)
                .map_or(1.0, |&(_, b)| b)
        })
        .collect()
}

/// Both files, unscaled; the row count checked against [`ADULT_TRAIN_ROWS`].
fn load_adult_unscaled(dir: &DataDir) -> Result<Dataset, DatasetError> {
    let paths: Vec<_> = ADULT_FILES
        .iter()
        .map(|f| dir.verified(f))
        .collect::<Result<_, _>>()?;
    let schema = parse_schema(
        &std::fs::read_to_string(&paths[2]).map_err(DatasetError::io("read", &paths[2]))?,
    )?;
    let mut feature_names = Vec::new();
    let mut offsets = Vec::new();
    for attribute in &schema {
        offsets.push(feature_names.len());
        match attribute {
            Attribute::Numeric(name) => feature_names.push(name.clone()),
            Attribute::Categorical(name, categories) => {
                feature_names.extend(categories.iter().map(|c| format!("{name}={c}")));
            }
        }
    }
    let (mut rows, mut labels) = (Vec::new(), Vec::new());
    for (file, path) in [
        (ADULT_FILES[0].name, &paths[0]),
        (ADULT_FILES[1].name, &paths[1]),
    ] {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(File::open(path).map_err(DatasetError::io("open", path))?);
        for (index, record) in reader.records().enumerate() {
            let line = index + 1;
            let record = record.map_err(|e| DatasetError::Parse {
                file,
                line,
                why: e.to_string(),
            })?;
            if record.len() <= 1 {
                continue; // adult.test's first line, blank lines
            }
            if record.len() != schema.len() + 1 {
                return Err(DatasetError::Parse {
                    file,
                    line,
                    why: format!("{} fields, expected 15", record.len()),
                });
            }
            if record.iter().any(|field| field == "?") {
                continue;
            }
            let mut row = Vec::with_capacity(14);
            for (k, attribute) in schema.iter().enumerate() {
                let field = &record[k];
                match attribute {
                    Attribute::Numeric(name) => {
                        let value = parse_finite(field, file, line, name)?;
                        if value != 0.0 {
                            row.push((offsets[k], value));
                        }
                    }
                    Attribute::Categorical(name, categories) => {
                        let position =
                            categories.iter().position(|c| c == field).ok_or_else(|| {
                                DatasetError::Parse {
                                    file,
                                    line,
                                    why: format!("{name} has unknown category {field:?}"),
                                }
                            })?;
                        row.push((offsets[k] + position, 1.0));
                    }
                }
            }
            let label = record[schema.len()].trim_end_matches('.');
            labels.push(match label {
                ">50K" => 1.0,
                "<=50K" => -1.0,
                other => {
                    return Err(DatasetError::Parse {
                        file,
                        line,
                        why: format!("unknown income label {other:?}"),
                    });
                }
            });
            rows.push(row);
        }
        // The split point is a constant: the files are verified, but say so if it moves.
        if file == ADULT_FILES[0].name && rows.len() != ADULT_TRAIN_ROWS {
            return Err(DatasetError::Parse {
                file,
                line: 0,
                why: format!(
                    "{} complete rows, expected ADULT_TRAIN_ROWS = {ADULT_TRAIN_ROWS}",
                    rows.len()
                ),
            });
        }
    }
    Ok(Dataset {
        name: "adult".into(),
        feature_names,
        rows,
        labels,
        checksums: ADULT_FILES
            .iter()
            .map(|f| (f.name.to_owned(), f.sha256.to_owned()))
            .collect(),
        scaling: Scaling::None,
    })
}

/// The 14 attributes from `adult.names` lines like `age: continuous.` and
/// `sex: Female, Male.`.
fn parse_schema(names: &str) -> Result<Vec<Attribute>, DatasetError> {
    let attributes: Vec<Attribute> = names
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(": ")?;
            if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_lowercase() || c == '-')
                || !rest.ends_with('.')
            {
                return None;
            }
            let rest = rest.trim_end_matches('.');
            Some(if rest == "continuous" {
                Attribute::Numeric(name.to_owned())
            } else {
                Attribute::Categorical(
                    name.to_owned(),
                    rest.split(", ").map(str::to_owned).collect(),
                )
            })
        })
        .collect();
    if attributes.len() != 14 {
        return Err(DatasetError::Parse {
            file: "adult.names",
            line: 0,
            why: format!(
                "found {} attribute descriptions, expected 14",
                attributes.len()
            ),
        });
    }
    Ok(attributes)
}
