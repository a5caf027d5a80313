//! Privacy parameters rounded in the safe direction: every value this crate reports is an
//! upper bound on the true one, never a rounding below it.
//!
//! The bounds assume only that `exp`, `ln_1p` and `ln` are accurate to a few units in the
//! last place (the platform's libm makes no stronger promise) and that `+`, `−`, `×`, `÷`
//! round correctly (IEEE 754). Each libm result or rounded operation is widened by a
//! relative [`SLACK`] of 2⁻⁴⁰ — thousands of ulps — and then stepped up one more ulp, so the
//! reported δ exceeds the true one by a relative 10⁻⁸ at most: far below anything that
//! matters, and never below the truth.

/// Relative widening of one rounded operation or libm call: 2⁻⁴⁰ ≈ 9·10⁻¹³.
const SLACK: f64 = 1.0 / (1u64 << 40) as f64;

/// An upper bound on any real number within a relative [`SLACK`] of `x` (either side).
fn up(x: f64) -> f64 {
    (x + x.abs() * SLACK).next_up()
}

/// A lower bound on the probability that random stopping's coin stops: `rand`'s
/// `random_bool(γ)` draws a u64 below `⌊γ·2⁶⁴⌋`, so it stops with probability
/// `⌊γ·2⁶⁴⌋/2⁶⁴ ≥ γ − 2⁻⁶⁴`. We take `γ − 2⁻⁶⁴` rounded down, which covers that and any
/// other rounding of the threshold to 64 bits. Exactly 1 stays 1 (`random_bool(1.0)` always
/// stops).
pub(crate) fn stop_probability_down(gamma: f64) -> f64 {
    if gamma >= 1.0 {
        return 1.0;
    }
    (gamma - 2f64.powi(-64)).next_down().max(0.0)
}

/// An upper bound on random stopping's `δ = (1 + e^ε)·(1 − γ)^T` for a cap of `runs` = T,
/// where `epsilon` is already an upper bound on `3ε_B` and γ is the stop probability
/// (lowered by [`stop_probability_down`] to cover the coin). Computed in logarithms, so no
/// intermediate overflows: `ln(1 + e^ε) = ε + ln(1 + e^{−ε})` for ε ≥ 0, `ln((1−γ)^T) =
/// T·ln(1 − γ)`. `+∞` when δ is above `f64::MAX`; 0 only when the coin always stops
/// (γ = 1: the cap never binds); otherwise at least `f64::MIN_POSITIVE` (δ > 0 is never
/// reported as 0 because it underflows).
pub(crate) fn capped_delta_up(epsilon: f64, gamma: f64, runs: usize) -> f64 {
    let coin = stop_probability_down(gamma);
    if coin >= 1.0 {
        return 0.0;
    }
    // ln(1 − coin) < 0: rounded towards 0 (up), then times T (exact integer ≤ 10⁷), up.
    let log_tail = up(runs as f64 * up((-coin).ln_1p()));
    // ln(1 + e^ε) for ε ≥ 0, rounded up at every step (ln_1p and exp are increasing).
    let epsilon = epsilon.max(0.0);
    let log_factor = up(epsilon + up(up((-epsilon).exp()).ln_1p()));
    let log_delta = up(log_factor + log_tail);
    up(log_delta.exp()).max(f64::MIN_POSITIVE)
}
