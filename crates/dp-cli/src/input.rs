//! Small files read whole (a model, a training report), never beyond a limit: a special
//! file such as `/dev/zero`, or a huge file under a report's name, is refused instead of
//! filling memory or never returning. The limit is enforced on what is read, not on the
//! size the file claims (a device or a pipe claims 0).

use std::io::Read;
use std::path::Path;

use crate::{Failure, fail};

/// Largest training report read (a report is a few kilobytes of public facts).
pub const MAX_REPORT_BYTES: u64 = 16 << 20;

/// The bytes of `path`, refused above `limit`; `what` names the file's kind in the refusal.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, Failure> {
    let io = |e: std::io::Error| fail(format!("{}: cannot read it: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(io)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(fail(format!(
            "{}: larger than {limit} bytes; not {what}",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The text of `path` ([`read_bounded`]), refused if it is not UTF-8.
pub fn read_text_bounded(path: &Path, limit: u64, what: &str) -> Result<String, Failure> {
    String::from_utf8(read_bounded(path, limit, what)?)
        .map_err(|_| fail(format!("{}: not UTF-8 text; not {what}", path.display())))
}
