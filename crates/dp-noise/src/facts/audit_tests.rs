//! Shared helpers of the facts' tests: Clopper–Pearson ε lower bounds
//! (docs/src/reference/privacy-testing.md §2) and run counters.

use crate::stats::clopper_pearson;

/// Confidence of each Clopper–Pearson bound: the workspace's false-alarm rate.
pub(crate) const ALPHA: f64 = crate::stats::FALSE_ALARM_RATE;

/// The ε lower bound from an event seen `hits_likely` times in `runs` runs on one data set
/// and `hits_unlikely` times in `runs` runs on its neighbour:
/// `ln((CP_low(p₁) − δ) / CP_high(p₀))`, 0 where `CP_low(p₁) ≤ δ` (the event says nothing).
/// The event is fixed before the runs (from the analysis of the pair), so every run counts.
pub(crate) fn epsilon_lower_bound(
    hits_likely: u64,
    hits_unlikely: u64,
    runs: u64,
    delta: f64,
) -> f64 {
    epsilon_lower_bound_at(hits_likely, hits_unlikely, runs, delta, ALPHA)
}

/// [`epsilon_lower_bound`] with each Clopper–Pearson bound at confidence `1 − alpha`
/// (for several events fixed in advance, split the false-alarm rate between them).
pub(crate) fn epsilon_lower_bound_at(
    hits_likely: u64,
    hits_unlikely: u64,
    runs: u64,
    delta: f64,
    alpha: f64,
) -> f64 {
    let (low, _) = clopper_pearson(hits_likely, runs, alpha);
    let (_, high) = clopper_pearson(hits_unlikely, runs, alpha);
    if low <= delta {
        0.0
    } else {
        ((low - delta) / high).ln().max(0.0)
    }
}

/// How many of `runs` runs of `release` satisfy `event`.
pub(crate) fn count_hits<T>(
    runs: u64,
    mut release: impl FnMut() -> T,
    event: impl Fn(&T) -> bool,
) -> u64 {
    (0..runs).filter(|_| event(&release())).count() as u64
}
