//! Wall time and resident memory of one call, measured the same way as the Python peers
//! (`peers.py`): the peak resident set (`VmHWM`) is reset to the current one before the
//! call (Linux: `5` written to `/proc/self/clear_refs`), so its value afterwards is the
//! peak during the call.

use std::time::Instant;

use serde::Serialize;

/// Resident memory around one call, in KiB (`None` where `/proc` is unavailable).
#[derive(Debug, Clone, Copy, Default, Serialize, serde::Deserialize)]
pub struct Memory {
    /// Resident set just before the call.
    pub rss_before_kib: Option<u64>,
    /// Peak resident set during the call.
    pub rss_peak_kib: Option<u64>,
}

impl Memory {
    /// How far the call raised the resident set above where it started, in MiB.
    pub fn growth_mib(&self) -> Option<f64> {
        match (self.rss_before_kib, self.rss_peak_kib) {
            (Some(before), Some(peak)) => Some(peak.saturating_sub(before) as f64 / 1024.0),
            _ => None,
        }
    }

    /// The peak resident set of the whole process during the call, in MiB.
    pub fn peak_mib(&self) -> Option<f64> {
        self.rss_peak_kib.map(|kib| kib as f64 / 1024.0)
    }
}

/// Runs `call`, returning its result, its wall time in seconds and its memory.
pub fn measure<T>(call: impl FnOnce() -> T) -> (T, f64, Memory) {
    reset_peak();
    let rss_before_kib = status_kib("VmRSS");
    let start = Instant::now();
    let value = call();
    let seconds = start.elapsed().as_secs_f64();
    let memory = Memory {
        rss_before_kib,
        rss_peak_kib: status_kib("VmHWM"),
    };
    (value, seconds, memory)
}

/// Resets the peak resident set to the current one; a no-op where that is impossible.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// A `kB` field of `/proc/self/status`.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_a_large_allocation_where_proc_exists() {
        let (sum, seconds, memory) = measure(|| {
            let block = vec![1u8; 64 << 20];
            block.iter().map(|&b| b as u64).sum::<u64>()
        });
        assert_eq!(sum, 64 << 20);
        assert!(seconds >= 0.0);
        if let Some(growth) = memory.growth_mib() {
            assert!(growth >= 60.0, "{growth} MiB");
        }
    }
}
