//! A compact binary cache of encoded rows, read back block by block: the source of
//! out-of-core fits ([`ErmParams::fit_blocks`](crate::ErmParams::fit_blocks)).
//!
//! # Format (version 2, little-endian)
//! - Header, 64 bytes: magic `DPMLROWS`, version `u32`, columns `u32`, rows `u64`, blocks
//!   `u64`, block rows `u32` (the writer's setting), 4 reserved bytes, the table's checksum
//!   `u64`, 8 reserved bytes, the checksum of the header's first 56 bytes `u64`.
//! - The blocks, back to back from byte 64. A block of r rows and e entries: r labels
//!   (`i8`, ±1), r + 1 row offsets (`u32`, from 0), e column indices (`u32`), e values
//!   (`f64`).
//! - The table, the file's last `24 · blocks` bytes: per block its offset `u64`, rows `u32`,
//!   entries `u32` and checksum `u64`.
//!
//! Values are stored as `f64`, the training set's own values: a fit over the cache sees
//! exactly the rows an in-memory fit sees (`f32` would halve the values' bytes, but the
//! encoded rows would then be different numbers, and the unit-ball check would have to be
//! made on them; on Adult-shaped rows, 14 entries each, `f64` costs 173 bytes a row and
//! `f32` would cost 117).
//!
//! The checksums are XXH3-64, a fast non-cryptographic 64-bit hash (version 1 used a
//! hand-written one; its files are refused by version): they catch a file that was
//! truncated, corrupted or rewritten, not a forger (whoever can write the cache can write
//! the data it was made from).
//!
//! Blocks are read with positioned reads (`pread`), not memory-mapped: a mapping of a file
//! that another process truncates faults the reader (`SIGBUS`), which no check can turn
//! into an error, and this crate forbids `unsafe` (which `memmap2::Mmap::map` is). A pass
//! reads each block once, sequentially within the block; peak memory is the blocks in
//! flight (about two copies of a block per thread) plus the partial sums.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use dp_optim::{OptimError, RowBlock, RowBlocks};

use crate::row_block_bytes::{BlockRows, DecodedBlock, MAX_BLOCK_ENTRIES, block_bytes};
use crate::{ErmError, MAX_FEATURES, TrainingSet};

const MAGIC: &[u8; 8] = b"DPMLROWS";
const VERSION: u32 = 2;
const HEADER_BYTES: usize = 64;
const TABLE_ENTRY_BYTES: usize = 24;

/// Most rows a block may hold (a block of Adult-shaped rows is then about 180 MB).
pub const MAX_BLOCK_ROWS: usize = 1 << 20;

/// Writes a row cache: rows are pushed one at a time (from a [`TrainingSet`], or from a
/// streaming reader such as dp-schema's) and checked as they come; every `block_rows`
/// rows make a block. Memory: one block.
pub struct RowCacheWriter {
    file: BufWriter<File>,
    path: PathBuf,
    cols: usize,
    block_rows: usize,
    rows: u64,
    written: u64,
    table: Vec<BlockEntry>,
    block: BlockRows,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct BlockEntry {
    offset: u64,
    rows: u32,
    entries: u32,
    checksum: u64,
}

impl BlockEntry {
    fn bytes(&self) -> u64 {
        block_bytes(self.rows as u64, self.entries as u64)
    }
}

fn access(path: &Path, what: &str, error: std::io::Error) -> ErmError {
    ErmError::RowCacheAccess(format!("{what} {}: {error}", path.display()))
}

impl RowCacheWriter {
    /// Creates (or truncates) the cache file at `path` for rows of `cols` features (1 to
    /// 2²⁴), in blocks of `block_rows` rows (1 to [`MAX_BLOCK_ROWS`]). Both are checked
    /// before the file is touched.
    pub fn create(path: &Path, cols: usize, block_rows: usize) -> Result<Self, ErmError> {
        if cols == 0 || cols > MAX_FEATURES {
            return Err(ErmError::InvalidCount {
                what: "feature count of a row cache",
                value: cols,
                requirement: "between 1 and 2^24 = 16777216",
            });
        }
        if block_rows == 0 || block_rows > MAX_BLOCK_ROWS {
            return Err(ErmError::InvalidCount {
                what: "rows per block of a row cache",
                value: block_rows,
                requirement: "between 1 and 2^20 = 1048576",
            });
        }
        let file = File::create(path).map_err(|e| access(path, "cannot create", e))?;
        let mut file = BufWriter::with_capacity(1 << 20, file);
        file.write_all(&[0; HEADER_BYTES])
            .map_err(|e| access(path, "cannot write", e))?;
        Ok(Self {
            file,
            path: path.to_owned(),
            cols,
            block_rows,
            rows: 0,
            written: HEADER_BYTES as u64,
            table: Vec::new(),
            block: BlockRows::default(),
        })
    }

    /// Appends one row: its `(feature, value)` entries in increasing feature order, and
    /// its label. Refused (nothing written, the row named by its position in the cache)
    /// unless the label is ±1, the features are `< cols` and increasing, the values finite
    /// and the row in the unit ball — the contract of [`TrainingSet`], which a fit checks
    /// again on every pass.
    pub fn push_row(&mut self, entries: &[(usize, f64)], label: f64) -> Result<(), ErmError> {
        if self.block.entries() + entries.len() > MAX_BLOCK_ENTRIES {
            self.flush_block()?;
        }
        self.block
            .push(self.rows as usize, self.cols, entries, label)?;
        self.rows += 1;
        if self.block.rows() == self.block_rows {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<(), ErmError> {
        if self.block.rows() == 0 {
            return Ok(());
        }
        let bytes = self.block.bytes();
        let entry = BlockEntry {
            offset: self.written,
            rows: self.block.rows() as u32,
            entries: self.block.entries() as u32,
            checksum: checksum(&bytes),
        };
        self.file
            .write_all(&bytes)
            .map_err(|e| access(&self.path, "cannot write", e))?;
        self.written += bytes.len() as u64;
        self.table.push(entry);
        self.block.clear();
        Ok(())
    }

    /// Writes the last block, the table and the header; returns the rows written. A cache
    /// with no rows is refused.
    pub fn finish(mut self) -> Result<u64, ErmError> {
        self.flush_block()?;
        if self.rows == 0 {
            return Err(ErmError::EmptyData);
        }
        let mut table = Vec::with_capacity(self.table.len() * TABLE_ENTRY_BYTES);
        for entry in &self.table {
            table.extend(entry.offset.to_le_bytes());
            table.extend(entry.rows.to_le_bytes());
            table.extend(entry.entries.to_le_bytes());
            table.extend(entry.checksum.to_le_bytes());
        }
        let header = header_bytes(&Header {
            cols: self.cols as u32,
            rows: self.rows,
            blocks: self.table.len() as u64,
            block_rows: self.block_rows as u32,
            table_checksum: checksum(&table),
        });
        let write = |file: &mut BufWriter<File>| -> std::io::Result<()> {
            file.write_all(&table)?;
            file.seek(SeekFrom::Start(0))?;
            file.write_all(&header)?;
            file.flush()
        };
        write(&mut self.file).map_err(|e| access(&self.path, "cannot write", e))?;
        Ok(self.rows)
    }
}

impl TrainingSet {
    /// Writes these rows and labels to a row cache at `path`, in blocks of `block_rows`.
    pub fn write_row_cache(&self, path: &Path, block_rows: usize) -> Result<u64, ErmError> {
        let mut writer = RowCacheWriter::create(path, self.features(), block_rows)?;
        for (i, &label) in self.labels().iter().enumerate() {
            writer.push_row(&self.row_entries(i), label)?;
        }
        writer.finish()
    }
}

struct Header {
    cols: u32,
    rows: u64,
    blocks: u64,
    block_rows: u32,
    table_checksum: u64,
}

fn header_bytes(h: &Header) -> [u8; HEADER_BYTES] {
    let mut out = [0u8; HEADER_BYTES];
    out[0..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&VERSION.to_le_bytes());
    out[12..16].copy_from_slice(&h.cols.to_le_bytes());
    out[16..24].copy_from_slice(&h.rows.to_le_bytes());
    out[24..32].copy_from_slice(&h.blocks.to_le_bytes());
    out[32..36].copy_from_slice(&h.block_rows.to_le_bytes());
    out[40..48].copy_from_slice(&h.table_checksum.to_le_bytes());
    let sum = checksum(&out[..56]);
    out[56..64].copy_from_slice(&sum.to_le_bytes());
    out
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A 64-bit hash of `bytes`: XXH3-64 (the `twox-hash` crate, vectorized; it replaced a
/// hand-written multiply–rotate hash of format version 1 that a pass spent about an eighth
/// of its time in). Catches accidental change, not forgery.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// A row cache opened for reading: its header and table checked, its size and modification
/// time recorded. Each block is read when a pass asks for it, checked against its checksum,
/// and refused if the file's size or modification time changed since it was opened. A
/// [`RowBlocks`] source for [`ErmParams::fit_blocks`](crate::ErmParams::fit_blocks).
pub struct RowCache {
    file: File,
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    cols: usize,
    rows: usize,
    table: Vec<BlockEntry>,
}

impl std::fmt::Debug for RowCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowCache")
            .field("path", &self.path)
            .field("bytes", &self.len)
            .field("cols", &self.cols)
            .field("rows", &self.rows)
            .field("blocks", &self.table.len())
            .finish()
    }
}

fn refused(why: String) -> ErmError {
    ErmError::InvalidRowCache(why)
}

impl RowCache {
    /// Opens and checks the cache at `path`: magic, version, the header's and the table's
    /// checksums, and a table that tiles the file exactly (so a truncated or extended file
    /// is refused here, before any block is read).
    pub fn open(path: &Path) -> Result<Self, ErmError> {
        let file = File::open(path).map_err(|e| access(path, "cannot open", e))?;
        let meta = file
            .metadata()
            .map_err(|e| access(path, "cannot inspect", e))?;
        let len = meta.len();
        if len < HEADER_BYTES as u64 {
            return Err(refused(format!(
                "{len} bytes, shorter than the 64-byte header (truncated, or not a row cache)"
            )));
        }
        let mut header = [0u8; HEADER_BYTES];
        read_at(&file, &mut header, 0).map_err(|e| access(path, "cannot read", e))?;
        if &header[0..8] != MAGIC {
            return Err(refused("not a row cache (wrong magic bytes)".into()));
        }
        let version = u32_at(&header, 8);
        if version != VERSION {
            return Err(refused(format!(
                "format version {version}, this build reads version {VERSION}"
            )));
        }
        if checksum(&header[..56]) != u64_at(&header, 56) {
            return Err(refused("the header fails its checksum (corrupted)".into()));
        }
        let (cols, rows, blocks) = (
            u32_at(&header, 12) as usize,
            u64_at(&header, 16),
            u64_at(&header, 24),
        );
        if cols == 0 || cols > MAX_FEATURES || rows == 0 || blocks == 0 {
            return Err(refused(format!(
                "header declares {rows} rows of {cols} features in {blocks} blocks"
            )));
        }
        // Bounded by the file's size before anything is allocated from it.
        let table_bytes = blocks
            .checked_mul(TABLE_ENTRY_BYTES as u64)
            .filter(|&b| b <= len - HEADER_BYTES as u64)
            .ok_or_else(|| {
                refused(format!(
                    "{blocks} blocks cannot fit in {len} bytes (truncated or corrupted)"
                ))
            })?;
        let table_offset = len - table_bytes;
        let mut raw = vec![0u8; table_bytes as usize];
        read_at(&file, &mut raw, table_offset).map_err(|e| access(path, "cannot read", e))?;
        if checksum(&raw) != u64_at(&header, 40) {
            return Err(refused(
                "the block table fails its checksum (the file was truncated, extended or \
                 corrupted)"
                    .into(),
            ));
        }
        let table: Vec<BlockEntry> = raw
            .chunks_exact(TABLE_ENTRY_BYTES)
            .map(|e| BlockEntry {
                offset: u64_at(e, 0),
                rows: u32_at(e, 8),
                entries: u32_at(e, 12),
                checksum: u64_at(e, 16),
            })
            .collect();
        let mut next = HEADER_BYTES as u64;
        let mut counted = 0u64;
        for (index, entry) in table.iter().enumerate() {
            if entry.offset != next || entry.rows == 0 || entry.rows as usize > MAX_BLOCK_ROWS {
                return Err(refused(format!(
                    "block {index}'s table entry is inconsistent"
                )));
            }
            next += entry.bytes();
            counted += u64::from(entry.rows);
        }
        if next != table_offset || counted != rows {
            return Err(refused(format!(
                "the blocks hold {counted} rows and end at byte {next}; the header says \
                 {rows} rows and the table starts at {table_offset}"
            )));
        }
        Ok(Self {
            file,
            path: path.to_owned(),
            len,
            modified: meta.modified().ok(),
            cols,
            rows: rows as usize,
            table,
        })
    }

    /// Size of the file in bytes.
    pub fn file_bytes(&self) -> u64 {
        self.len
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Refuses if the file's size or modification time changed since it was opened.
    fn check_unchanged(&self) -> Result<(), ErmError> {
        let meta = self
            .file
            .metadata()
            .map_err(|e| access(&self.path, "cannot inspect", e))?;
        if meta.len() != self.len || meta.modified().ok() != self.modified {
            return Err(refused(format!(
                "{} changed since it was opened (size {} → {} bytes, or its modification \
                 time): a fit must see the same rows on every pass",
                self.path.display(),
                self.len,
                meta.len()
            )));
        }
        Ok(())
    }
}

impl RowBlocks for RowCache {
    type Error = ErmError;

    fn cols(&self) -> usize {
        self.cols
    }

    fn rows(&self) -> usize {
        self.rows
    }

    fn block_count(&self) -> usize {
        self.table.len()
    }

    fn with_block(
        &self,
        index: usize,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), ErmError> {
        let entry = *self.table.get(index).ok_or_else(|| {
            ErmError::Optim(OptimError::InvalidParameter {
                what: "block index",
                why: format!("{index} >= {} blocks", self.table.len()),
            })
        })?;
        self.check_unchanged()?;
        // Each thread decodes into its own buffers, reused from block to block: a fresh
        // allocation of a block's size per read costs page faults comparable to the read.
        SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
            Ok(mut scratch) => self.read_block(index, entry, &mut scratch, visit),
            Err(_) => self.read_block(index, entry, &mut Scratch::default(), visit),
        })
    }
}

/// A thread's buffers for reading and decoding one block.
#[derive(Default)]
struct Scratch {
    bytes: Vec<u8>,
    decoded: DecodedBlock,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

impl RowCache {
    /// Reads block `index` into `scratch`, checks its checksum, decodes it and visits it.
    fn read_block(
        &self,
        index: usize,
        entry: BlockEntry,
        scratch: &mut Scratch,
        visit: &mut dyn FnMut(RowBlock<'_>),
    ) -> Result<(), ErmError> {
        let Scratch { bytes, decoded } = scratch;
        bytes.resize(entry.bytes() as usize, 0);
        read_at(&self.file, bytes, entry.offset)
            .map_err(|e| access(&self.path, "cannot read", e))?;
        if checksum(bytes) != entry.checksum {
            return Err(refused(format!(
                "block {index} fails its checksum: the file was corrupted or changed"
            )));
        }
        decoded.visit(
            bytes,
            self.cols,
            (entry.rows as usize, entry.entries as usize),
            visit,
        )?;
        Ok(())
    }
}

/// Fills `buf` from `offset` without moving a shared cursor (several threads read blocks
/// of the one file at once).
#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        match std::os::windows::fs::FileExt::seek_read(file, buf, offset)? {
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}
