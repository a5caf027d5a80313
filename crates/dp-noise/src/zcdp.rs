//! Zero-concentrated differential privacy (zCDP): the curve the Gaussian mechanisms spend,
//! its tight composition, and its conversion to (ε, δ).
//!
//! A mechanism is **ρ-zCDP** (Bun & Steinke 2016) when, for every pair of neighbouring
//! datasets and every order α > 1, the Rényi divergence of order α between its output
//! distributions is at most αρ: the whole Rényi curve `α ↦ αρ` is one number. Compositions
//! add ρ (BS16 Lemma 2.3), which is far tighter than adding (ε, δ) points, and the
//! conversion to (ε, δ) is made once, at the end, with the bound of Canonne, Kamath &
//! Steinke 2020 ("The Discrete Gaussian for Differential Privacy", Proposition 12 /
//! Corollary 13; the same bound as Balle et al. 2020, "Hypothesis Testing Interpretations
//! and Rényi Differential Privacy", Theorem 21), minimized over α:
//!
//! `ε(δ) = inf_{α>1} αρ + (ln(1/δ) + (α−1)·ln(1 − 1/α) − ln α)/(α − 1)`,
//! `ln δ(ε) = inf_{α>1} (α−1)(αρ − ε) + (α−1)·ln(1 − 1/α) − ln α`.
//!
//! Every α gives a valid bound, so the numerical search for the best α can only cost
//! tightness, never privacy. The value at the chosen α is evaluated in floating point and
//! then raised by a margin far above its rounding error, so a reported ε or δ is never below
//! the bound's exact value at that α.

use crate::NoiseError;
use crate::error::{check_epsilon, check_guarantee_delta, check_sensitivity};
use crate::rounding::{add_rounding_up, mul_rounding_up as mul_up, subtract_rounding_down};

/// Relative margin added to every converted value: each term of the bound is computed with
/// a relative error of a few units in the last place (2⁻⁵² ≈ 2·10⁻¹⁶); 10⁻¹² of the sum of
/// the terms' magnitudes covers it many times over.
const CONVERSION_MARGIN: f64 = 1e-12;

/// A ρ-zCDP guarantee: Rényi divergence at most `αρ` at every order α > 1, for the
/// neighbouring relation of the mechanism that reports it.
///
/// # Privacy
/// `ρ` is an upper bound, rounded up wherever it is computed ([`Zcdp::gaussian`],
/// [`Zcdp::from_pure_epsilon`], [`Zcdp::compose`]); [`Zcdp::epsilon`] and [`Zcdp::delta`]
/// convert it to an (ε, δ) guarantee that is never below the CKS20 bound at the α used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Zcdp {
    rho: f64,
}

impl Zcdp {
    /// A ρ-zCDP guarantee (ρ finite and > 0).
    pub fn new(rho: f64) -> Result<Self, NoiseError> {
        if rho.is_finite() && rho > 0.0 {
            Ok(Self { rho })
        } else {
            Err(NoiseError::InvalidRho(rho))
        }
    }

    /// The guarantee of an ε-DP mechanism: `ρ = ε²/2` (BS16 Proposition 1.4), rounded up.
    pub fn from_pure_epsilon(epsilon: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        Self::new(mul_up(epsilon, epsilon) / 2.0)
    }

    /// The guarantee of Gaussian noise of standard deviation `sigma` (per coordinate) added
    /// to a query of L2 sensitivity `l2_sensitivity`: `ρ = Δ²/(2σ²)` (BS16 Proposition
    /// 1.6), rounded up. The discrete Gaussian on the integers has the same ρ (CKS20
    /// Theorem 4, and Theorem 14 for vectors of independent coordinates).
    pub fn gaussian(l2_sensitivity: f64, sigma: f64) -> Result<Self, NoiseError> {
        let sensitivity = check_sensitivity(l2_sensitivity)?;
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(NoiseError::InvalidScale(sigma));
        }
        // Δ/σ rounded to nearest is within half an ulp: one ulp up bounds the exact ratio.
        let ratio = (sensitivity / sigma).next_up();
        Self::new(mul_up(ratio, ratio) / 2.0)
    }

    /// ρ.
    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The Rényi divergence bound of order `alpha` > 1: `αρ`, rounded up.
    pub fn renyi_divergence(&self, alpha: f64) -> Result<f64, NoiseError> {
        if !(alpha.is_finite() && alpha > 1.0) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "Renyi order alpha must be finite and > 1, got {alpha:?}"
            )));
        }
        Ok(mul_up(alpha, self.rho))
    }

    /// Both mechanisms run on the same data (adaptively or not): ρ adds (BS16 Lemma 2.3),
    /// rounded up.
    pub fn compose(&self, other: Zcdp) -> Zcdp {
        Zcdp {
            rho: add_rounding_up(self.rho, other.rho),
        }
    }

    /// The smallest ε the CKS20 conversion certifies at `delta`
    /// (0 < δ ≤ [`MAX_DELTA`](crate::MAX_DELTA)): the mechanism
    /// is (ε, δ)-DP. Never below the bound's exact value at the α found.
    pub fn epsilon(&self, delta: f64) -> Result<f64, NoiseError> {
        let delta = check_guarantee_delta(delta)?;
        Ok(epsilon_bound(self.rho, delta))
    }

    /// The smallest δ the CKS20 conversion certifies at `epsilon` (≥ 0): the mechanism is
    /// (ε, δ)-DP. Never below the bound's exact value at the α found.
    pub fn delta(&self, epsilon: f64) -> Result<f64, NoiseError> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(NoiseError::InvalidEpsilon(epsilon));
        }
        Ok(delta_bound(self.rho, epsilon))
    }

    /// The largest ρ (to within one ulp's bisection) whose conversion certifies
    /// `(epsilon, delta)`: what a mechanism calibrated to an (ε, δ) target may spend.
    /// Rounded down: the returned ρ is one whose rounded-up ε at `delta` was checked to be
    /// at most `epsilon`.
    pub fn largest_for(epsilon: f64, delta: f64) -> Result<Zcdp, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let delta = check_guarantee_delta(delta)?;
        let fits = |rho: f64| epsilon_bound(rho, delta) <= epsilon;
        // ε(ρ) ≥ ρ − ln... grows without bound in ρ: find a ρ that does not fit.
        let mut hi = epsilon.max(1.0);
        while fits(hi) {
            hi *= 2.0;
            if !hi.is_finite() {
                return Err(NoiseError::UnsupportedParameters(format!(
                    "no finite rho is refused at epsilon {epsilon:?}, delta {delta:?}"
                )));
            }
        }
        // Bisect on bit patterns (the order of non-negative floats): `lo` fits, `hi` not.
        let (mut lo, mut hi) = (0u64, hi.to_bits());
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(f64::from_bits(mid)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Zcdp::new(f64::from_bits(lo)).map_err(|_| {
            NoiseError::UnsupportedParameters(format!(
                "(epsilon {epsilon:?}, delta {delta:?}) is below what any rho > 0 certifies"
            ))
        })
    }
}

/// The CKS20 ε at order `alpha`, and the sum of its terms' magnitudes (for the margin).
/// `alpha` is a double and `alpha − 1` is computed exactly (Sterbenz, or both multiples of
/// α's ulp below 2⁵³), so every term is evaluated at the same α.
fn epsilon_at(rho: f64, delta: f64, alpha: f64) -> (f64, f64) {
    let t = alpha - 1.0;
    let terms = [
        alpha * rho,
        -delta.ln() / t,
        (-1.0 / alpha).ln_1p(),
        -alpha.ln() / t,
    ];
    (terms.iter().sum(), terms.iter().map(|x| x.abs()).sum())
}

/// The CKS20 `ln δ` at order `alpha`, and the sum of its terms' magnitudes.
fn log_delta_at(rho: f64, epsilon: f64, alpha: f64) -> (f64, f64) {
    let t = alpha - 1.0;
    let terms = [
        t * alpha * rho,
        -t * epsilon,
        t * (-1.0 / alpha).ln_1p(),
        -alpha.ln(),
    ];
    (terms.iter().sum(), terms.iter().map(|x| x.abs()).sum())
}

/// The α in (1, 1 + e³⁶] (below 2⁵³, so `α − 1` is exact) that minimizes `objective`: a grid over `ln(α − 1)`, then golden
/// section around its best point. Only tightness depends on finding the true minimum.
fn best_alpha(objective: impl Fn(f64) -> f64) -> f64 {
    let alpha_of = |s: f64| {
        let alpha = 1.0 + s.exp();
        if alpha > 1.0 { alpha } else { 1.0f64.next_up() }
    };
    const LO: f64 = -35.0;
    const HI: f64 = 36.0;
    const STEPS: usize = 400;
    let step = (HI - LO) / STEPS as f64;
    let mut best = (f64::INFINITY, LO);
    for i in 0..=STEPS {
        let s = LO + step * i as f64;
        let value = objective(alpha_of(s));
        if value < best.0 {
            best = (value, s);
        }
    }
    let (mut a, mut b) = (best.1 - step, best.1 + step);
    let golden = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let c = b - golden * (b - a);
        let d = a + golden * (b - a);
        if objective(alpha_of(c)) < objective(alpha_of(d)) {
            b = d;
        } else {
            a = c;
        }
    }
    let refined = alpha_of((a + b) / 2.0);
    if objective(refined) <= best.0 {
        refined
    } else {
        alpha_of(best.1)
    }
}

/// ε(ρ, δ), raised by the margin; never negative.
pub(crate) fn epsilon_bound(rho: f64, delta: f64) -> f64 {
    let alpha = best_alpha(|alpha| epsilon_at(rho, delta, alpha).0);
    let (value, magnitude) = epsilon_at(rho, delta, alpha);
    let raised = (value + CONVERSION_MARGIN * magnitude).next_up();
    if raised.is_nan() {
        f64::INFINITY
    } else {
        raised.max(0.0)
    }
}

/// δ(ρ, ε), raised by the margin; at most 1.
pub(crate) fn delta_bound(rho: f64, epsilon: f64) -> f64 {
    let alpha = best_alpha(|alpha| log_delta_at(rho, epsilon, alpha).0);
    let (value, magnitude) = log_delta_at(rho, epsilon, alpha);
    // exp errs by under an ulp: one ulp up past the raised exponent's value.
    let raised = (value + CONVERSION_MARGIN * magnitude)
        .next_up()
        .exp()
        .next_up();
    if raised.is_nan() {
        1.0
    } else {
        raised.min(1.0)
    }
}

/// A zCDP budget: a target (ε, δ) held as the largest ρ whose conversion certifies it, and
/// the ρ spent so far.
///
/// # Privacy
/// Mechanisms that are ρ_i-zCDP on the same data (run one after another, adaptively or
/// not) are together (Σ ρ_i)-zCDP (BS16 Lemma 2.3); the budget refuses a spend that would
/// take Σ ρ_i past the limit, so everything it records is together
/// ([`ZcdpBudget::spent_epsilon`], δ)-DP with ε at most the target, by the CKS20
/// conversion. An ε-DP mechanism is charged `ε²/2` ([`ZcdpBudget::spend_pure`]). Sums are
/// rounded up, the limit down. The neighbouring relation must be the same for all charges.
/// Deliberately not `Clone`: two copies could each spend the whole limit.
#[derive(Debug, PartialEq)]
pub struct ZcdpBudget {
    epsilon: f64,
    delta: f64,
    limit: f64,
    spent: f64,
    ledger: Vec<(String, f64)>,
}

impl ZcdpBudget {
    /// A budget whose spends together stay (epsilon, delta)-DP (ε > 0,
    /// 0 < δ ≤ [`MAX_DELTA`](crate::MAX_DELTA)).
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, NoiseError> {
        let limit = Zcdp::largest_for(epsilon, delta)?.rho();
        Ok(Self {
            epsilon,
            delta,
            limit,
            spent: 0.0,
            ledger: Vec::new(),
        })
    }

    /// The largest total ρ the target allows.
    pub fn rho_limit(&self) -> f64 {
        self.limit
    }

    /// The ρ spent so far (rounded up).
    pub fn rho_spent(&self) -> f64 {
        self.spent
    }

    /// What is left of ρ (rounded down).
    pub fn rho_remaining(&self) -> f64 {
        let left = subtract_rounding_down(self.limit, self.spent);
        if left > 0.0 { left } else { 0.0 }
    }

    /// The target δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The target ε.
    pub fn epsilon_limit(&self) -> f64 {
        self.epsilon
    }

    /// The ε of everything spent so far at the target δ (0 when nothing was spent).
    pub fn spent_epsilon(&self) -> f64 {
        if self.spent > 0.0 {
            epsilon_bound(self.spent, self.delta)
        } else {
            0.0
        }
    }

    /// Every charge so far (label, ρ), in order.
    pub fn ledger(&self) -> &[(String, f64)] {
        &self.ledger
    }

    /// Charges a ρ-zCDP mechanism. On error nothing is charged.
    pub fn spend(&mut self, label: &str, cost: Zcdp) -> Result<(), NoiseError> {
        let total = add_rounding_up(self.spent, cost.rho);
        if total > self.limit {
            return Err(NoiseError::RhoBudgetExceeded {
                requested: cost.rho,
                spent: self.spent,
                limit: self.limit,
            });
        }
        self.spent = total;
        self.ledger.push((label.to_owned(), cost.rho));
        Ok(())
    }

    /// Charges an ε-DP mechanism as `ε²/2`-zCDP. On error nothing is charged.
    pub fn spend_pure(&mut self, label: &str, epsilon: f64) -> Result<(), NoiseError> {
        self.spend(label, Zcdp::from_pure_epsilon(epsilon)?)
    }
}

#[cfg(test)]
#[path = "zcdp_tests.rs"]
mod tests;
