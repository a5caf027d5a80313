//! Encoded rows as bytes, one block at a time: the row cache's block layout
//! ([`crate::RowCache`]), also as a self-describing buffer ([`BlockEncoder`],
//! [`visit_encoded_block`]) for blocks that are kept somewhere else between passes — a
//! Spark executor's cache, where `dpml.spark` keeps each partition's encoded rows so that
//! later passes only decode and sum them.
//!
//! # Layout (little-endian)
//! The block of r rows and e entries: r labels (`i8`, ±1), r + 1 row offsets (`u32`, from
//! 0), e column indices (`u32`), e values (`f64`, the training set's own values). A buffer
//! of [`BlockEncoder::finish`] puts a 32-byte header before it: magic `DPMLBLK1`, version
//! `u32` (2: the checksum is XXH3-64), columns `u32`, rows `u32`, entries `u32`, the
//! block's checksum `u64`.

use dp_optim::RowBlock;

use crate::data::within_unit_ball;
use crate::row_cache::checksum;
use crate::{ErmError, MAX_FEATURES};

const MAGIC: &[u8; 8] = b"DPMLBLK1";
const VERSION: u32 = 2;
const HEADER_BYTES: usize = 32;

/// Most entries a block may hold: its offsets are `u32`.
pub(crate) const MAX_BLOCK_ENTRIES: usize = u32::MAX as usize;

/// Bytes of a block of `rows` rows and `entries` entries, without a header.
pub(crate) fn block_bytes(rows: u64, entries: u64) -> u64 {
    rows + 4 * (rows + 1) + 12 * entries
}

/// The rows of one block being written, checked as they come.
#[derive(Debug, Clone)]
pub(crate) struct BlockRows {
    labels: Vec<i8>,
    offsets: Vec<u32>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl Default for BlockRows {
    fn default() -> Self {
        Self {
            labels: Vec::new(),
            offsets: vec![0],
            indices: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl BlockRows {
    pub(crate) fn rows(&self) -> usize {
        self.labels.len()
    }

    pub(crate) fn entries(&self) -> usize {
        self.values.len()
    }

    /// Appends a row after checking [`crate::TrainingSet`]'s contract: label ±1, features
    /// `< cols` and strictly increasing, values finite, the row in the unit ball. `row`
    /// names the row in an error. Refused rows leave the block unchanged.
    pub(crate) fn push(
        &mut self,
        row: usize,
        cols: usize,
        entries: &[(usize, f64)],
        label: f64,
    ) -> Result<(), ErmError> {
        if label != 1.0 && label != -1.0 {
            return Err(ErmError::InvalidLabel { row, label });
        }
        for (k, &(col, value)) in entries.iter().enumerate() {
            if col >= cols {
                return Err(ErmError::FeatureIndexOutOfRange {
                    row,
                    col,
                    features: cols,
                });
            }
            if k > 0 && entries[k - 1].0 >= col {
                return Err(ErmError::InvalidParameter {
                    what: "feature index order in an encoded row",
                    value: col as f64,
                    requirement: "strictly increasing within the row",
                });
            }
            if !value.is_finite() {
                return Err(ErmError::NonFiniteFeature { row, col, value });
            }
        }
        let values: Vec<f64> = entries.iter().map(|&(_, v)| v).collect();
        if !within_unit_ball(&values) {
            return Err(ErmError::RowNormAboveOne {
                row,
                norm: values.iter().map(|v| v * v).sum::<f64>().sqrt(),
            });
        }
        if self.entries() + entries.len() > MAX_BLOCK_ENTRIES {
            return Err(ErmError::InvalidCount {
                what: "stored entries of one block",
                value: self.entries() + entries.len(),
                requirement: "at most 2^32 - 1",
            });
        }
        self.labels.push(label as i8);
        self.indices.extend(entries.iter().map(|&(j, _)| j as u32));
        self.values.extend(values);
        self.offsets.push(self.indices.len() as u32);
        Ok(())
    }

    /// The block in the layout of the module's documentation.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut bytes =
            Vec::with_capacity(block_bytes(self.rows() as u64, self.entries() as u64) as usize);
        bytes.extend(self.labels.iter().map(|&y| y as u8));
        self.offsets
            .iter()
            .for_each(|o| bytes.extend(o.to_le_bytes()));
        self.indices
            .iter()
            .for_each(|j| bytes.extend(j.to_le_bytes()));
        self.values
            .iter()
            .for_each(|v| bytes.extend(v.to_le_bytes()));
        bytes
    }

    pub(crate) fn clear(&mut self) {
        self.labels.clear();
        self.offsets.truncate(1);
        self.indices.clear();
        self.values.clear();
    }
}

/// Buffers one block is decoded into (reused from block to block by a reader).
#[derive(Default)]
pub(crate) struct DecodedBlock {
    labels: Vec<f64>,
    offsets: Vec<u32>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl DecodedBlock {
    /// Decodes `bytes`, a block of `rows` rows and `entries` entries (its length already
    /// checked against [`block_bytes`]), and visits it; the row block's own checks (offsets,
    /// indices) refuse a malformed one.
    pub(crate) fn visit(
        &mut self,
        bytes: &[u8],
        cols: usize,
        (rows, entries): (usize, usize),
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), ErmError> {
        let (r, e) = (rows, entries);
        self.labels.clear();
        self.labels
            .extend(bytes[..r].iter().map(|&y| f64::from(y as i8)));
        let words = |out: &mut Vec<u32>, at: usize, count: usize| {
            out.clear();
            out.extend(
                bytes[at..at + 4 * count]
                    .chunks_exact(4)
                    .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])),
            );
        };
        words(&mut self.offsets, r, r + 1);
        words(&mut self.indices, r + 4 * (r + 1), e);
        let values_at = r + 4 * (r + 1) + 4 * e;
        self.values.clear();
        self.values.extend(
            bytes[values_at..values_at + 8 * e]
                .chunks_exact(8)
                .map(|w| f64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])),
        );
        visit(RowBlock::new(
            cols,
            &self.offsets,
            &self.indices,
            &self.values,
            &self.labels,
        )?);
        Ok(())
    }
}

/// Encodes rows into one self-describing block ([`BlockEncoder::finish`]): rows are pushed
/// one at a time and checked as [`crate::RowCacheWriter::push_row`] checks them.
#[derive(Debug, Clone)]
pub struct BlockEncoder {
    cols: usize,
    rows: BlockRows,
}

impl BlockEncoder {
    /// An empty block of rows of `cols` features (1 to 2²⁴).
    pub fn new(cols: usize) -> Result<Self, ErmError> {
        if cols == 0 || cols > MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "feature count of an encoded block",
                value: cols,
                requirement: "between 1 and 2^24 = 16777216",
            });
        }
        Ok(Self {
            cols,
            rows: BlockRows::default(),
        })
    }

    /// Appends one row (`(feature, value)` entries in increasing feature order, and its
    /// label), refused unless it meets the training set's contract (label ±1, features in
    /// range and increasing, finite values, the unit ball); the error names it by its
    /// position in the block. More than 2³² − 1 entries in one block are refused.
    pub fn push_row(&mut self, entries: &[(usize, f64)], label: f64) -> Result<(), ErmError> {
        let row = self.rows.rows();
        if row == u32::MAX as usize {
            return Err(ErmError::InvalidCount {
                what: "rows of one encoded block",
                value: row + 1,
                requirement: "at most 2^32 - 1",
            });
        }
        self.rows.push(row, self.cols, entries, label)
    }

    /// Rows pushed so far.
    pub fn rows(&self) -> usize {
        self.rows.rows()
    }

    /// The block with its header (an empty block is allowed: a partition without rows).
    pub fn finish(&self) -> Vec<u8> {
        let body = self.rows.bytes();
        let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
        out.extend_from_slice(MAGIC);
        out.extend(VERSION.to_le_bytes());
        out.extend((self.cols as u32).to_le_bytes());
        out.extend((self.rows.rows() as u32).to_le_bytes());
        out.extend((self.rows.entries() as u32).to_le_bytes());
        out.extend(checksum(&body).to_le_bytes());
        out.extend(body);
        out
    }
}

fn refused(why: impl Into<String>) -> ErmError {
    ErmError::RowCacheAccess(format!("an encoded block is refused: {}", why.into()))
}

/// Decodes a buffer of [`BlockEncoder::finish`] made for rows of `cols` features and visits
/// it (an empty block is not visited); returns its row count. Refused (an error, never a
/// panic) when the buffer is short, long, of another magic, version or width, fails its
/// checksum, or holds malformed offsets or indices. The rows' contract (labels ±1, the
/// unit ball) is the fit's to check on every pass, as for any row block.
pub fn visit_encoded_block(
    bytes: &[u8],
    cols: usize,
    visit: &mut dyn FnMut(RowBlock<'_>),
) -> Result<usize, ErmError> {
    if bytes.len() < HEADER_BYTES {
        return Err(refused(format!(
            "{} bytes, shorter than its header",
            bytes.len()
        )));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if &bytes[..8] != MAGIC {
        return Err(refused("not an encoded block (wrong magic)"));
    }
    if word(8) != VERSION {
        return Err(refused(format!("version {}, expected {VERSION}", word(8))));
    }
    if word(12) as usize != cols {
        return Err(refused(format!(
            "rows of {} features, expected {cols}",
            word(12)
        )));
    }
    let (rows, entries) = (word(16) as usize, word(20) as usize);
    let body = &bytes[HEADER_BYTES..];
    if body.len() as u64 != block_bytes(rows as u64, entries as u64) {
        return Err(refused(format!(
            "{} bytes after the header for {rows} rows and {entries} entries",
            body.len()
        )));
    }
    let mut sum = [0u8; 8];
    sum.copy_from_slice(&bytes[24..32]);
    if checksum(body) != u64::from_le_bytes(sum) {
        return Err(refused("it fails its checksum (corrupted or changed)"));
    }
    if rows > 0 {
        DecodedBlock::default().visit(body, cols, (rows, entries), visit)?;
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = (Vec<(usize, f64)>, f64);

    fn rows() -> Vec<Row> {
        vec![
            (vec![(0, 0.5), (3, -0.25)], 1.0),
            (vec![], -1.0),
            (vec![(1, 0.6), (2, 0.7)], -1.0),
            (vec![(4, -1.0)], 1.0),
        ]
    }

    fn encoded(rows: &[Row]) -> Vec<u8> {
        let mut encoder = BlockEncoder::new(5).unwrap();
        for (entries, label) in rows {
            encoder.push_row(entries, *label).unwrap();
        }
        encoder.finish()
    }

    fn decoded(bytes: &[u8], cols: usize) -> Result<Vec<Row>, ErmError> {
        let mut out = Vec::new();
        visit_encoded_block(bytes, cols, &mut |block| {
            for i in 0..block.rows() {
                let (indices, values) = block.row(i);
                let entries = indices
                    .iter()
                    .map(|&j| j as usize)
                    .zip(values.iter().copied());
                out.push((entries.collect(), block.labels()[i]));
            }
        })?;
        Ok(out)
    }

    /// Rows come back bit for bit, in order; an empty block decodes to no rows.
    #[test]
    fn a_block_round_trips_exactly() {
        assert_eq!(decoded(&encoded(&rows()), 5).unwrap(), rows());
        assert_eq!(decoded(&encoded(&[]), 5).unwrap(), Vec::<Row>::new());
        // The body is the row cache's block layout (labels, offsets, indices, values).
        assert_eq!(
            encoded(&rows()).len(),
            HEADER_BYTES + block_bytes(4, 5) as usize
        );
    }

    /// Every kind of damage is refused with an error, never a panic or wrong rows.
    #[test]
    fn damaged_or_foreign_buffers_are_refused() {
        let good = encoded(&rows());
        let mut cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..10].to_vec(), "shorter than its header"),
            (good[..good.len() - 1].to_vec(), "bytes after the header"),
            ([good.clone(), vec![0]].concat(), "bytes after the header"),
        ];
        let mut magic = good.clone();
        magic[0] = b'X';
        cases.push((magic, "wrong magic"));
        let mut version = good.clone();
        version[8] = 9;
        cases.push((version, "version 9"));
        let mut flipped = good.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        cases.push((flipped, "checksum"));
        for (bytes, why) in cases {
            let e = decoded(&bytes, 5).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
        }
        let e = decoded(&good, 6).unwrap_err();
        assert!(e.to_string().contains("expected 6"), "{e}");
        // A malformed body with a matching checksum: the row block's checks refuse it.
        let mut malformed = good.clone();
        let index_at = HEADER_BYTES + 4 + 4 * 5;
        malformed[index_at] = 9; // column 9 of 5
        let sum = checksum(&malformed[HEADER_BYTES..]);
        malformed[24..32].copy_from_slice(&sum.to_le_bytes());
        assert!(decoded(&malformed, 5).is_err());
    }

    /// Rows are checked as a training set's are, and a refused row leaves the block as it
    /// was.
    #[test]
    fn rows_outside_the_contract_are_refused_by_position() {
        let mut encoder = BlockEncoder::new(5).unwrap();
        encoder.push_row(&[(0, 0.5)], 1.0).unwrap();
        let before = encoder.finish();
        type Refusal<'a> = (&'a [(usize, f64)], f64, &'a str);
        let refusals: [Refusal; 5] = [
            (&[(0, 0.9), (1, 0.9)], 1.0, "norm"),
            (&[(0, 0.1)], 0.0, "label"),
            (&[(5, 0.1)], 1.0, "5"),
            (&[(2, 0.1), (1, 0.1)], 1.0, "increasing"),
            (&[(0, f64::NAN)], 1.0, "NaN"),
        ];
        for (entries, label, why) in refusals {
            let e = encoder.push_row(entries, label).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
            assert!(
                e.to_string().contains("row 1") || why == "increasing",
                "{e}"
            );
            assert_eq!(encoder.finish(), before);
        }
        assert!(BlockEncoder::new(0).is_err());
    }
}
