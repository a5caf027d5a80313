//! Papernot & Steinke (ICLR 2022), "Hyperparameter Tuning with Renyi Differential Privacy":
//! the RDP curve of running a mechanism a **random** number of times K and releasing only
//! the best run (by a score the mechanism itself computed privately) — the accounting
//! random stopping needs when its candidates are (ε, δ) mechanisms with an RDP curve.
//!
//! Each run may pick its candidate at random, train it and score it; what matters is the
//! curve `ε(λ)` of one run (a random choice of candidate is a mixture, whose Rényi
//! divergence is at most the largest of its components').

use super::RdpCurve;
use crate::NoiseError;
use crate::error::check_epsilon;

/// Largest mean number of runs accepted.
pub const MAX_MEAN_RUNS: f64 = 1e6;

/// The law of the number of runs K: the user's knob is its mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunCount {
    /// K ~ Poisson(μ), mean μ ≥ 1 (K = 0 releases nothing: the tuner reports no model).
    Poisson {
        /// The mean μ.
        mean: f64,
    },
    /// K ~ truncated negative binomial of shape η ≥ 0 and the γ in (0, 1) that gives the
    /// mean: `P(K = k) ∝ C(k + η − 1, k)·(1 − γ)^k` for k ≥ 1 (η = 0 the logarithmic
    /// law `∝ (1 − γ)^k / k`; η = 1 the geometric law of success probability γ, mean 1/γ).
    TruncatedNegativeBinomial {
        /// The shape η.
        shape: f64,
        /// The mean E\[K\] ≥ 1.
        mean: f64,
    },
}

impl RunCount {
    /// The geometric law of mean `mean` (truncated negative binomial with η = 1).
    pub fn geometric(mean: f64) -> Self {
        RunCount::TruncatedNegativeBinomial { shape: 1.0, mean }
    }

    /// The logarithmic law of mean `mean` (truncated negative binomial with η = 0):
    /// Papernot & Steinke's cheapest at a given mean for most curves.
    pub fn logarithmic(mean: f64) -> Self {
        RunCount::TruncatedNegativeBinomial { shape: 0.0, mean }
    }

    /// The mean E\[K\].
    pub fn mean(&self) -> f64 {
        match *self {
            RunCount::Poisson { mean } | RunCount::TruncatedNegativeBinomial { mean, .. } => mean,
        }
    }

    fn check(&self) -> Result<(), NoiseError> {
        let mean = self.mean();
        if !(mean.is_finite() && (1.0..=MAX_MEAN_RUNS).contains(&mean)) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "the mean number of runs must be in [1, {MAX_MEAN_RUNS:e}], got {mean:?}"
            )));
        }
        if let RunCount::TruncatedNegativeBinomial { shape, .. } = *self
            && !(shape.is_finite() && (0.0..=1000.0).contains(&shape))
        {
            return Err(NoiseError::UnsupportedParameters(format!(
                "the truncated negative binomial's shape must be in [0, 1000], got {shape:?}"
            )));
        }
        Ok(())
    }

    /// The truncated negative binomial's γ in (0, 1] whose mean is [`Self::mean`], to a
    /// relative 10⁻¹⁴ (bisection; the mean falls as γ grows); `None` for Poisson. A sampler
    /// draws with this γ, and the accounting uses it.
    pub fn gamma(&self) -> Result<Option<f64>, NoiseError> {
        self.check()?;
        let RunCount::TruncatedNegativeBinomial { shape, mean } = *self else {
            return Ok(None);
        };
        if mean == 1.0 {
            return Ok(Some(1.0));
        }
        let (mut lo, mut hi) = (f64::MIN_POSITIVE, 1.0f64);
        for _ in 0..2000 {
            let mid = if hi / lo > 4.0 {
                (lo * hi).sqrt()
            } else {
                0.5 * (lo + hi)
            };
            if mid <= lo || mid >= hi {
                break;
            }
            if tnb_mean(shape, mid) > mean {
                lo = mid;
            } else {
                hi = mid;
            }
            if (hi - lo) <= hi * 1e-15 {
                break;
            }
        }
        Ok(Some(hi))
    }
}

/// E\[K\] of the truncated negative binomial of shape η and parameter γ in (0, 1).
pub(crate) fn tnb_mean(shape: f64, gamma: f64) -> f64 {
    if shape == 0.0 {
        // (1 − γ)/(γ·ln(1/γ))
        (-gamma).ln_1p().exp() / (gamma * -gamma.ln())
    } else {
        // η(1 − γ)/(γ(1 − γ^η))
        shape * (1.0 - gamma) / (gamma * -(shape * gamma.ln()).exp_m1())
    }
}

/// Relative margin on the terms the repeat-and-select bounds add (each a few ulps off).
const MARGIN: f64 = 1e-12;

fn sum_up(parts: &[f64]) -> f64 {
    let value: f64 = parts.iter().sum();
    let magnitude: f64 = parts.iter().map(|x| x.abs()).sum();
    (value + MARGIN * magnitude).next_up()
}

impl RdpCurve {
    /// The smallest δ over the grid for which the curve's mechanism is (`epsilon`, δ)-DP by
    /// the conversion of [`RdpCurve::epsilon`] (Balle et al. 2020, Theorem 21) solved for δ:
    /// `ln δ = (α − 1)(r(α) − ε + ln(1 − 1/α)) − ln α`, at most 1. Rounded up.
    pub fn delta(&self, epsilon: f64) -> Result<f64, NoiseError> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "epsilon must be finite and at least 0, got {epsilon:?}"
            )));
        }
        let mut best = f64::INFINITY;
        for (&alpha, &r) in self.orders.iter().zip(&self.values) {
            let t = alpha - 1.0;
            let log_delta = sum_up(&[t * r, -t * epsilon, t * (-1.0 / alpha).ln_1p(), -alpha.ln()]);
            best = best.min(log_delta);
        }
        Ok(best.exp().next_up().min(1.0))
    }

    /// The curve of running this curve's mechanism K ~ `runs` times on the same data and
    /// releasing only the best run (Papernot & Steinke 2022), at the same orders, rounded
    /// up, then made non-decreasing in the order from above (a Rényi divergence is).
    ///
    /// # Privacy
    /// For K truncated negative binomial (shape η, parameter γ, mean E\[K\]), Theorem 2: at
    /// every order λ > 1, `ε(λ) + (1 + η)·min_λ̂ [(1 − 1/λ̂)·ε(λ̂) + ln(1/γ)/λ̂] + ln E\[K\]/(λ − 1)`
    /// (λ̂ over the grid). For K ~ Poisson(μ), Theorem 6: `ε(λ) + μ·δ̂ + ln μ/(λ − 1)` with
    /// δ̂ the one run's δ ([`RdpCurve::delta`]) at `ε̂ = ln(1 + 1/(λ − 1))`. Both hold for
    /// any mechanism with this curve whatever it outputs, for the curve's relation; the
    /// selection may use anything the runs computed, as long as only the selected run's
    /// output (and nothing about K) is released.
    pub fn repeat_and_select(&self, runs: RunCount) -> Result<RdpCurve, NoiseError> {
        runs.check()?;
        let mean = runs.mean();
        let raw: Vec<f64> = match runs {
            RunCount::Poisson { .. } => self
                .orders
                .iter()
                .zip(&self.values)
                .map(|(&alpha, &r)| {
                    let t = alpha - 1.0;
                    let delta_hat = self.delta((1.0 / t).ln_1p())?;
                    Ok(sum_up(&[r, (mean * delta_hat).next_up(), mean.ln() / t]))
                })
                .collect::<Result<_, NoiseError>>()?,
            RunCount::TruncatedNegativeBinomial { shape, .. } => {
                let gamma = runs.gamma()?.unwrap_or(1.0);
                // The mean the γ found gives, if above the one asked (bisection's last bit).
                let mean = if gamma < 1.0 {
                    mean.max(tnb_mean(shape, gamma))
                } else {
                    mean
                };
                let log_inverse_gamma = -gamma.ln();
                let cross = self
                    .orders
                    .iter()
                    .zip(&self.values)
                    .map(|(&hat, &r)| sum_up(&[(1.0 - 1.0 / hat) * r, log_inverse_gamma / hat]))
                    .fold(f64::INFINITY, f64::min);
                let cross = ((1.0 + shape) * cross).next_up();
                self.orders
                    .iter()
                    .zip(&self.values)
                    .map(|(&alpha, &r)| sum_up(&[r, cross, mean.ln() / (alpha - 1.0)]))
                    .collect()
            }
        };
        // Monotonicity: ε'(λ) ≤ ε'(λ') for every λ' ≥ λ on the grid.
        let mut values = vec![0.0; raw.len()];
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by(|&a, &b| self.orders[b].total_cmp(&self.orders[a]));
        let mut running = f64::INFINITY;
        for i in order {
            running = running.min(raw[i]);
            values[i] = running.max(0.0);
        }
        Ok(RdpCurve {
            relation: self.relation,
            orders: self.orders.clone(),
            values,
        })
    }

    /// The pointwise larger of two curves (same relation and orders): a bound on a mixture
    /// of the two mechanisms with any fixed weights (the Rényi divergence is jointly
    /// quasi-convex), such as one run of a selection that trains a candidate drawn at random
    /// or scores on rows a data-independent shuffle held out.
    pub fn envelope(&self, other: &RdpCurve) -> Result<RdpCurve, NoiseError> {
        self.pointwise(other, "take the envelope of", f64::max)
    }

    /// The largest ε whose pure curve ([`RdpCurve::pure`] at this curve's orders) is at most
    /// this curve at every order: `min_λ max(r(λ), √(2r(λ)/λ))`, lowered until
    /// [`RdpCurve::pure`]'s rounded-up values fit under the curve. A pure-ε step of that ε
    /// (a noisy score, say) costs nothing at any order beyond what this curve's mechanism
    /// already does. `None` when the curve is 0 at some order (no ε > 0 fits).
    pub fn largest_pure_epsilon_below(&self) -> Option<f64> {
        let mut epsilon = self
            .orders
            .iter()
            .zip(&self.values)
            .map(|(&alpha, &r)| r.max((2.0 * r / alpha).sqrt()))
            .fold(f64::INFINITY, f64::min);
        for _ in 0..200 {
            if !(epsilon.is_finite() && epsilon > 0.0) {
                return None;
            }
            let fits = RdpCurve::pure(epsilon, self.relation, &self.orders)
                .is_ok_and(|pure| pure.values.iter().zip(&self.values).all(|(p, r)| p <= r));
            if fits {
                return Some(epsilon);
            }
            epsilon *= 1.0 - 1e-9;
        }
        None
    }

    /// The curve of a pure ε-DP mechanism at `orders`: `min(ε, λε²/2)` (ε-DP implies
    /// ε²/2-zCDP, Bun & Steinke 2016, Proposition 1.4; and every Rényi divergence of an
    /// ε-DP mechanism is at most ε), rounded up, for `relation`.
    pub fn pure(
        epsilon: f64,
        relation: super::Neighbouring,
        orders: &[f64],
    ) -> Result<RdpCurve, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        super::check_orders(orders, super::Neighbouring::AddRemove)?;
        let half_square = (epsilon * epsilon).next_up() / 2.0;
        Ok(RdpCurve {
            relation,
            orders: orders.to_vec(),
            values: orders
                .iter()
                .map(|&alpha| epsilon.min((alpha * half_square).next_up()))
                .collect(),
        })
    }
}

#[cfg(test)]
#[path = "repeat_select_tests.rs"]
mod tests;
