//! A CSV or Parquet file's encoded rows written to a [`dp_erm::RowCache`] block by block,
//! for fits over files larger than memory ([`dp_erm::ErmParams::fit_blocks`]).

use std::path::Path;
use std::time::SystemTime;

use dp_erm::{ErmError, RowCacheWriter};

use crate::read::{DEFAULT_BATCH_ROWS, ReadOptions, read_batches};
use crate::{Encoder, ReadError, Schema};

/// Reads the labelled file `source` by `schema` (as [`crate::read_training_set`] does, one
/// batch at a time) and writes its encoded rows to a row cache at `cache` in blocks of
/// `block_rows`; returns the rows written. Memory: one batch and one block, never the file.
///
/// The source is read once; later passes read the cache, which checks itself. A source
/// whose size or modification time changed while it was read is refused and the cache
/// deleted (the rows would mix two versions of the file). Any refusal deletes the cache.
pub fn write_row_cache(
    source: &Path,
    schema: &Schema,
    encoder: &Encoder,
    cache: &Path,
    block_rows: usize,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<u64, ReadError> {
    let before = stamp(source)?;
    let mut writer = RowCacheWriter::create(cache, encoder.features(), block_rows)
        .map_err(|e| cache_error(cache, e, "cannot create it"))?;
    let options = ReadOptions {
        labels: true,
        batch_rows: DEFAULT_BATCH_ROWS,
    };
    let written =
        read_batches::<ReadError>(source, schema, encoder, options, progress, &mut |batch| {
            let labels = batch.labels.unwrap_or_default();
            for (row, &label) in batch.rows.iter().zip(&labels) {
                writer
                    .push_row(row, label)
                    .map_err(|e| cache_error(cache, e, "an encoded row was refused"))?;
            }
            Ok(())
        })
        .and_then(|_| {
            writer
                .finish()
                .map_err(|e| cache_error(cache, e, "cannot finish it"))
        })
        .and_then(|rows| {
            if stamp(source)? == before {
                Ok(rows)
            } else {
                Err(ReadError::Io {
                    file: source.display().to_string(),
                    why: "the file changed (size or modification time) while it was read; \
                      the row cache was deleted"
                        .into(),
                })
            }
        });
    if written.is_err() {
        let _ = std::fs::remove_file(cache);
    }
    written
}

/// What a row cache's failure says: the operating system's error on the cache file (a full
/// disk: "No space left on device") as what it is; any other refusal after `context`.
fn cache_error(cache: &Path, error: ErmError, context: &str) -> ReadError {
    let why = match error {
        ErmError::RowCacheAccess(why) => why,
        other => format!("{context}: {other}"),
    };
    ReadError::Cache {
        file: cache.display().to_string(),
        why,
    }
}

/// A regular file's size and modification time; `None` for a pipe or a device, which is
/// read once as a stream and cannot change under the reader (a FIFO's time moves with every
/// write into it).
fn stamp(path: &Path) -> Result<Option<(u64, Option<SystemTime>)>, ReadError> {
    let meta = std::fs::metadata(path).map_err(|e| ReadError::Io {
        file: path.display().to_string(),
        why: e.to_string(),
    })?;
    Ok(meta.is_file().then(|| (meta.len(), meta.modified().ok())))
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
