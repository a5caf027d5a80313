//! What the benchmark reports share: medians and the machine they ran on.

use serde::Serialize;

/// The median of `values` (the mean of the middle two for an even count; NaN when empty).
pub fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = values.collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[middle]
    } else {
        0.5 * (sorted[middle - 1] + sorted[middle])
    }
}

/// The machine and how busy it was when the run started and ended: absolute times on a
/// shared machine drift, ratios measured in one run do not.
#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub load_at_start: String,
    pub load_at_end: String,
    /// Other compilers (rustc processes) running at the start and at the end.
    pub compilers_at_start: usize,
    pub compilers_at_end: usize,
}

impl Machine {
    pub fn now() -> Self {
        let load = load_average();
        let compilers = running("rustc");
        Self {
            cpu: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            load_at_start: load.clone(),
            load_at_end: load,
            compilers_at_start: compilers,
            compilers_at_end: compilers,
        }
    }

    /// The same record with the end values taken now.
    pub fn until_now(mut self) -> Self {
        self.load_at_end = load_average();
        self.compilers_at_end = running("rustc");
        self
    }

    pub fn describe(&self) -> String {
        format!(
            "Machine: {} ({} cores). Load average (1, 5, 15 min) {} at the start and {} at \
             the end; {} / {} rustc processes of other builds running then.",
            self.cpu,
            self.cores,
            self.load_at_start,
            self.load_at_end,
            self.compilers_at_start,
            self.compilers_at_end
        )
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(", "))
        .unwrap_or_else(|_| "unknown".into())
}

/// How many processes named `name` are running.
fn running(name: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median([3.0, 1.0, 2.0].into_iter()), 2.0);
        assert_eq!(median([4.0, 1.0, 2.0, 3.0].into_iter()), 2.5);
        assert!(median(std::iter::empty()).is_nan());
    }
}
