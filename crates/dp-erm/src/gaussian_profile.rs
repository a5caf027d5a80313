//! The privacy profile of Gaussian objective perturbation's exact minimizer under
//! replace-one neighbours, and the smallest noise scale that meets a target δ. The
//! derivation is in the `# Privacy` section of [`crate::GaussianErm`]; here are the
//! numerics, every rounding in the safe direction.

use dp_noise::stats::normal_upper_tail;

/// Relative margin over the error of `normal_upper_tail` (libm's `erfc`, within about an
/// ulp, with the scaling's rounding): a million times that error.
const TAIL_MARGIN: f64 = 1e-10;

/// Absolute margin for tails that underflow: a bound below it would not be trusted.
const UNDERFLOW_MARGIN: f64 = 1e-300;

/// The largest ε whose `e^ε` the profile computes (`e^700 ≈ 10³⁰⁴`, below `f64::MAX`).
const LARGEST_EXPONENT: f64 = 700.0;

/// Intervals the quarter circle of the variance split is cut into.
const SPLIT_INTERVALS: usize = 256;

/// `E[(1 − e^{ε − μ|Z| − μ²/2})₊]` for a standard normal Z, rounded up: the δ(ε) of a
/// privacy loss `μ|Z| + μ²/2`, twice the analytic Gaussian's (Balle & Wang 2018) at shift
/// μ when `ε ≥ μ²/2`. With `c = max(0, ε/μ − μ/2)` the loss exceeds ε exactly where
/// `|Z| > c`, and `E[e^{−μ|Z|}; |Z| > c] = 2e^{μ²/2}Φ(−c − μ)`, so the value is
/// `2[Φ(−c) − e^ε Φ(−c − μ)]`. Rounding the threshold c moves the value only to second order
/// (the integrand vanishes there), far inside the tail margin.
///
/// δ(ε) falls as ε grows, so beyond [`LARGEST_EXPONENT`] (where `e^ε` would overflow and
/// `∞·Φ` erase the subtracted term, or make it NaN) the value at that ε is returned: an
/// upper bound on the value at ε.
pub(crate) fn folded_gaussian_delta(mu: f64, epsilon: f64) -> f64 {
    if mu <= 0.0 {
        return 0.0;
    }
    let epsilon = epsilon.min(LARGEST_EXPONENT);
    let threshold = (epsilon / mu - mu / 2.0).max(0.0);
    let above = normal_upper_tail(threshold) * (1.0 + TAIL_MARGIN);
    let beyond = epsilon.exp() * normal_upper_tail(threshold + mu) * (1.0 - TAIL_MARGIN);
    (2.0 * (above - beyond)).max(0.0) + UNDERFLOW_MARGIN
}

/// An upper bound on `δ(ε)` of the exact minimizer's privacy loss without its Jacobian
/// term: `sup_θ H(2cos θ/σ) + H(2sin θ/σ)` over θ ∈ [0, π/2], with H
/// [`folded_gaussian_delta`] at `epsilon` (ε₁ − ε_J). H increases with μ, so on
/// `[θᵢ, θᵢ₊₁]` the sum is at most `H(2cos θᵢ/σ) + H(2sin θᵢ₊₁/σ)`: the maximum over the
/// intervals bounds the supremum without any shape assumption. It decreases as σ grows
/// (each term does).
pub(crate) fn objective_delta(sigma: f64, epsilon: f64) -> f64 {
    // 2/σ and the trigonometric values raised past their rounding errors.
    let scale = (2.0 / sigma) * (1.0 + 1e-12);
    let angle = |i: usize| std::f64::consts::FRAC_PI_2 * i as f64 / SPLIT_INTERVALS as f64;
    let term = |cosine_or_sine: f64| folded_gaussian_delta(scale * cosine_or_sine, epsilon);
    let cosines: Vec<f64> = (0..SPLIT_INTERVALS)
        .map(|i| {
            if i == 0 {
                term(1.0)
            } else {
                term(angle(i).cos())
            }
        })
        .collect();
    (0..SPLIT_INTERVALS)
        .map(|i| {
            let sine = if i + 1 == SPLIT_INTERVALS {
                1.0
            } else {
                angle(i + 1).sin()
            };
            cosines[i] + term(sine)
        })
        .fold(0.0, f64::max)
}

/// The smallest σ (bisection to a relative 10⁻¹², returning the side that meets the
/// target) with `objective_delta(σ, epsilon) ≤ delta`; infinite when no σ up to 10²⁰⁰
/// does (a δ below the underflow margin, or an ε too small for double precision).
/// Remembered per thread for the last (ε, δ) (a pure function of them: the audits fit
/// 10⁵ times with one calibration).
pub(crate) fn objective_sigma(epsilon: f64, delta: f64) -> f64 {
    thread_local! {
        static LAST: std::cell::Cell<Option<(u64, u64, f64)>> = const { std::cell::Cell::new(None) };
    }
    let key = (epsilon.to_bits(), delta.to_bits());
    if let Some((e, d, sigma)) = LAST.get()
        && (e, d) == key
    {
        return sigma;
    }
    let sigma = search_sigma(epsilon, delta);
    LAST.set(Some((key.0, key.1, sigma)));
    sigma
}

/// [`objective_sigma`]'s search. Every grid bound is at least its θ = 0 term `H(2/σ)`, so
/// the σ where that term alone exceeds δ is a lower end; the search brackets from there.
fn search_sigma(epsilon: f64, delta: f64) -> f64 {
    let single =
        |sigma: f64| folded_gaussian_delta((2.0 / sigma) * (1.0 + 1e-12), epsilon) <= delta;
    let fits = |sigma: f64| objective_delta(sigma, epsilon) <= delta;
    let Some((low, high)) = bracket(single) else {
        return f64::INFINITY;
    };
    let (low, _) = bisect(single, low, high);
    // `single` fails at `low`, so `fits` does too; widen until it holds.
    let mut step = 1e-9;
    let mut high = low * (1.0 + step);
    while !fits(high) {
        step *= 8.0;
        high = low * (1.0 + step);
        if high > 1e200 {
            return f64::INFINITY;
        }
    }
    bisect(fits, low, high).1
}

/// A `(low, high)` with `meets` false at low (or low tiny) and true at high, by doubling
/// from the single-Gaussian scale; `None` when nothing up to 10²⁰⁰ meets it.
fn bracket(meets: impl Fn(f64) -> bool) -> Option<(f64, f64)> {
    let mut high = 1.0;
    while !meets(high) {
        high *= 2.0;
        if high > 1e200 {
            return None;
        }
    }
    let mut low = high / 2.0;
    while meets(low) && low > 1e-200 {
        high = low;
        low /= 2.0;
    }
    Some((low, high))
}

/// Bisection (geometric, to a relative 10⁻¹²) between `low` (failing) and `high`
/// (meeting), returning both ends; `meets` must be monotone.
fn bisect(meets: impl Fn(f64) -> bool, mut low: f64, mut high: f64) -> (f64, f64) {
    while high / low - 1.0 > 1e-12 {
        let middle = (low * high).sqrt();
        if meets(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    (low, high)
}
