//! Shared configuration of the workspace's criterion benchmarks (in `benches/`).
//!
//! Run them all with `cargo bench -p dp-benches`, or one group with e.g.
//! `cargo bench -p dp-benches --bench noise -- vector`. Conventions: fixed seeds, problem
//! sizes in the benchmark id, inputs built outside the timed closure.

use std::time::Duration;

use criterion::Criterion;

/// The one criterion configuration all benchmark files use: short enough to run the whole
/// suite in a few minutes on 2 cores, long enough for stable medians.
pub fn criterion_config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}
