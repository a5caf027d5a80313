//! KDD Cup 1999 (10% file): network connections, normal or attack.

use std::collections::BTreeMap;
use std::fs::File;

use flate2::read::GzDecoder;

use crate::DatasetError;
use crate::dataset::{Dataset, Scaling, parse_finite, scale_columns_by_max};
use crate::dir::{DataDir, KDD_FILES};

/// Columns 1, 2, 3 (protocol_type, service, flag) are categorical; the other 38 numeric.
const CATEGORICAL: [usize; 3] = [1, 2, 3];
const FIELDS: usize = 42;

/// The 38 numeric columns' names, in file order (from the data set's `kddcup.names`).
pub const KDD_NUMERIC_COLUMNS: [&str; 38] = [
    "duration",
    "src_bytes",
    "dst_bytes",
    "land",
    "wrong_fragment",
    "urgent",
    "hot",
    "num_failed_logins",
    "logged_in",
    "num_compromised",
    "root_shell",
    "su_attempted",
    "num_root",
    "num_file_creations",
    "num_shells",
    "num_access_files",
    "num_outbound_cmds",
    "is_host_login",
    "is_guest_login",
    "count",
    "srv_count",
    "serror_rate",
    "srv_serror_rate",
    "rerror_rate",
    "srv_rerror_rate",
    "same_srv_rate",
    "diff_srv_rate",
    "srv_diff_host_rate",
    "dst_host_count",
    "dst_host_srv_count",
    "dst_host_same_srv_rate",
    "dst_host_diff_srv_rate",
    "dst_host_same_src_port_rate",
    "dst_host_srv_diff_host_rate",
    "dst_host_serror_rate",
    "dst_host_srv_serror_rate",
    "dst_host_rerror_rate",
    "dst_host_srv_rerror_rate",
];

/// The numeric columns that count something (seconds, bytes, events, connections), with no
/// bound of 1 in the schema: the ones [`KddEncoding::LogCounts`] compresses. In the 10% file
/// they reach from 3 (`urgent`) to 6.9·10⁸ (`src_bytes`). The others are flags (0 or 1;
/// `su_attempted` also 2) and rates (in [0, 1]).
pub const KDD_COUNT_COLUMNS: [&str; 17] = [
    "duration",
    "src_bytes",
    "dst_bytes",
    "wrong_fragment",
    "urgent",
    "hot",
    "num_failed_logins",
    "num_compromised",
    "num_root",
    "num_file_creations",
    "num_shells",
    "num_access_files",
    "num_outbound_cmds",
    "count",
    "srv_count",
    "dst_host_count",
    "dst_host_srv_count",
];

/// How the KDD numeric columns are encoded before the papers' column max-scaling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KddEncoding {
    /// As the papers do: the values as they are.
    Paper,
    /// Each count column of [`KDD_COUNT_COLUMNS`] replaced by `ln(1 + x)` (a per-row map
    /// chosen from the schema, not from the data). `src_bytes` reaches 6.9·10⁸ while the
    /// median connection sends about a thousand bytes: max-scaled as it is, it lies below
    /// 10⁻⁵ in 99% of the rows that have it; logged first, its median is about 0.34.
    LogCounts,
}

/// A row's non-zero numeric values and its three category names, before one-hot encoding.
type ParsedRow = (Vec<(usize, f64)>, [String; 3]);

/// Loads the KDD Cup 1999 10% file as the papers describe it: 494,021 rows, label +1 for
/// `normal.` (19.7%), −1 for any attack. protocol_type, service and flag are one-hot
/// encoded over the categories **seen in the file** (sorted; paper-faithful, and so a
/// function of the data), the 38 numeric columns kept (named as in
/// [`KDD_NUMERIC_COLUMNS`]). Only [`Scaling::PaperColumnMax`] is offered: the 38 numeric
/// columns have no published bounds.
pub fn load_kddcup99(dir: &DataDir) -> Result<Dataset, DatasetError> {
    load_kddcup99_encoded(dir, KddEncoding::Paper)
}

/// As [`load_kddcup99`], with the numeric columns encoded as `encoding` says before the
/// column max-scaling. The rows, their order and the labels are the same for every encoding.
pub fn load_kddcup99_encoded(
    dir: &DataDir,
    encoding: KddEncoding,
) -> Result<Dataset, DatasetError> {
    let logged: [bool; 38] = KDD_NUMERIC_COLUMNS
        .map(|name| encoding == KddEncoding::LogCounts && KDD_COUNT_COLUMNS.contains(&name));
    let path = dir.verified(&KDD_FILES[0])?;
    let file = KDD_FILES[0].name;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(GzDecoder::new(
            File::open(&path).map_err(DatasetError::io("open", &path))?,
        ));
    let mut categories: [BTreeMap<String, usize>; 3] = Default::default();
    let mut parsed: Vec<ParsedRow> = Vec::new();
    let mut labels = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let line = index + 1;
        let record = record.map_err(|e| DatasetError::Parse {
            file,
            line,
            why: e.to_string(),
        })?;
        if record.len() != FIELDS {
            return Err(DatasetError::Parse {
                file,
                line,
                why: format!("{} fields, expected {FIELDS}", record.len()),
            });
        }
        let mut numeric = Vec::new();
        let mut numeric_column = 0;
        for (k, field) in record.iter().take(FIELDS - 1).enumerate() {
            if CATEGORICAL.contains(&k) {
                continue;
            }
            let value = parse_finite(field, file, line, &format!("column {k}"))?;
            // Counts are never negative in the file; a negative one is kept as it is rather
            // than sent through ln(1 + x), which is not defined below −1.
            let value = if logged[numeric_column] && value > 0.0 {
                value.ln_1p()
            } else {
                value
            };
            if value != 0.0 {
                numeric.push((numeric_column, value));
            }
            numeric_column += 1;
        }
        let names = CATEGORICAL.map(|k| record[k].to_owned());
        for (map, name) in categories.iter_mut().zip(&names) {
            let next = map.len();
            map.entry(name.clone()).or_insert(next);
        }
        labels.push(if &record[FIELDS - 1] == "normal." {
            1.0
        } else {
            -1.0
        });
        parsed.push((numeric, names));
    }
    // Layout: 38 numeric columns, then the one-hot blocks in sorted category order.
    let mut feature_names: Vec<String> = KDD_NUMERIC_COLUMNS.map(String::from).to_vec();
    let mut block_offsets = [0usize; 3];
    for (b, map) in categories.iter_mut().enumerate() {
        block_offsets[b] = feature_names.len();
        for (position, (name, index)) in map.iter_mut().enumerate() {
            *index = position; // BTreeMap iterates in sorted order
            feature_names.push(format!(
                "{}={name}",
                ["protocol_type", "service", "flag"][b]
            ));
        }
    }
    let mut rows: Vec<Vec<(usize, f64)>> = parsed
        .into_iter()
        .map(|(mut row, names)| {
            for (b, name) in names.iter().enumerate() {
                row.push((block_offsets[b] + categories[b][name], 1.0));
            }
            row
        })
        .collect();
    scale_columns_by_max(&mut rows, feature_names.len());
    Ok(Dataset {
        name: "kddcup99".into(),
        feature_names,
        rows,
        labels,
        checksums: vec![(file.to_owned(), KDD_FILES[0].sha256.to_owned())],
        scaling: Scaling::PaperColumnMax,
    })
}
