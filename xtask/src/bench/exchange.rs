//! The data file the Python peers read: the exact rows and labels of this workspace's
//! training and test sets, in a binary layout numpy maps without parsing.
//!
//! Layout (little-endian): the magic `DPMLCSR1`, the column count d (u64), then for the
//! training and then the test split: n (u64), the entry count (u64), n + 1 row offsets
//! (u64), the column indices (u32), the values (f64) and the n labels (f64).

use std::io::Write as _;
use std::path::Path;

use dp_erm::{FeatureRow, TrainingSet};

use crate::safe_write::PathError;

/// Writes `train` and `test` (same d) to `path`.
pub fn write(path: &Path, train: &TrainingSet, test: &TrainingSet) -> Result<(), PathError> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"DPMLCSR1");
    bytes.extend_from_slice(&(train.features() as u64).to_le_bytes());
    for split in [train, test] {
        append_split(&mut bytes, split);
    }
    let mut file = std::fs::File::create(path).map_err(PathError::on("create", path))?;
    file.write_all(&bytes)
        .and_then(|()| file.sync_all())
        .map_err(PathError::on("write", path))
}

/// A split's rows as CSR arrays (offsets, columns, values): what the Python peers read,
/// and what the Rust row that builds its training set from arrays starts from.
pub struct CsrArrays {
    /// Where each row starts (n + 1 offsets).
    pub offsets: Vec<usize>,
    /// The column of each stored entry.
    pub indices: Vec<u32>,
    /// The stored entries.
    pub values: Vec<f64>,
}

/// The rows of `split` as [`CsrArrays`], zeros left out.
pub fn csr_arrays(split: &TrainingSet) -> CsrArrays {
    let examples = split.to_examples();
    let rows = examples.inputs();
    let (mut offsets, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
    for i in 0..rows.len() {
        match rows.row(i) {
            FeatureRow::Sparse(idx, val) => {
                indices.extend(idx.iter().map(|&c| c as u32));
                values.extend_from_slice(val);
            }
            FeatureRow::Dense(val) => {
                for (c, &v) in val.iter().enumerate().filter(|&(_, &v)| v != 0.0) {
                    indices.push(c as u32);
                    values.push(v);
                }
            }
        }
        offsets.push(indices.len());
    }
    CsrArrays {
        offsets,
        indices,
        values,
    }
}

fn append_split(bytes: &mut Vec<u8>, split: &TrainingSet) {
    let CsrArrays {
        offsets,
        indices,
        values,
    } = csr_arrays(split);
    let rows = offsets.len() - 1;
    bytes.extend_from_slice(&(rows as u64).to_le_bytes());
    bytes.extend_from_slice(&(indices.len() as u64).to_le_bytes());
    offsets
        .iter()
        .for_each(|&o| bytes.extend_from_slice(&(o as u64).to_le_bytes()));
    indices
        .iter()
        .for_each(|c| bytes.extend_from_slice(&c.to_le_bytes()));
    values
        .iter()
        .for_each(|v| bytes.extend_from_slice(&v.to_le_bytes()));
    split
        .labels()
        .iter()
        .for_each(|y| bytes.extend_from_slice(&y.to_le_bytes()));
}
