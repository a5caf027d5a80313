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

/// A row's non-zero numeric values and its three category names, before one-hot encoding.
type ParsedRow = (Vec<(usize, f64)>, [String; 3]);

/// Loads the KDD Cup 1999 10% file as the papers describe it: 494,021 rows, label +1 for
/// `normal.` (19.7%), −1 for any attack. protocol_type, service and flag are one-hot
/// encoded over the categories **seen in the file** (sorted; paper-faithful, and so a
/// function of the data), the 38 numeric columns kept. Only [`Scaling::PaperColumnMax`] is
/// offered: the 38 numeric columns have no published bounds.
pub fn load_kddcup99(dir: &DataDir) -> Result<Dataset, DatasetError> {
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
    let mut feature_names: Vec<String> = (0..38).map(|c| format!("numeric{c}")).collect();
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
