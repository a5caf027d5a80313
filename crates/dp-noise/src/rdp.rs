//! Rényi differential privacy (RDP) of the Poisson-subsampled Gaussian mechanism — the
//! accountant of DP-SGD — composed over steps, combined with zCDP, and converted to (ε, δ).
//!
//! A mechanism is **(α, r)-RDP** (Mironov 2017) when the Rényi divergence of order α between
//! its output distributions on neighbouring datasets is at most r. A curve `α ↦ r(α)` over
//! a grid of orders is what this module carries ([`RdpCurve`]): compositions add curves
//! order by order (Mironov 2017, Proposition 1), a ρ-zCDP mechanism adds `αρ` at every
//! order, and (ε, δ) is read off once, at the end, as the minimum over the grid of the
//! conversion of Balle et al. 2020 ("Hypothesis testing interpretations and Rényi
//! differential privacy", Theorem 21; also CKS20 Proposition 12):
//!
//! `ε = r(α) + ln((α−1)/α) − (ln δ + ln α)/(α − 1)`,
//!
//! tighter than the classic `r(α) + ln(1/δ)/(α − 1)` (Mironov 2017, Proposition 3), which
//! [`RdpCurve::epsilon_classic`] also offers for comparison. Every order of the grid gives
//! a valid bound, so the grid can only cost tightness.
//!
//! **The subsampled Gaussian** (Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy
//! of the Sampled Gaussian Mechanism", "MTZ19"): each record enters the batch independently
//! with probability q, and Gaussian noise of standard deviation `σ·C` is added to the sum
//! of the batch's contributions, each of L2 norm at most C. For datasets differing in one
//! record **added or removed**, one step's RDP at order α is `ln(A_α)/(α − 1)` with
//! `A_α = E_{z∼μ₀}[((1−q) + q·μ₁(z)/μ₀(z))^α]`, `μ₀ = N(0, σ²)`, `μ₁ = N(1, σ²)`
//! (MTZ19 §3, which also shows that the divergence in the other direction, between the
//! same two distributions swapped, is no larger, so `A_α` bounds both directions):
//! for integer α the binomial expansion
//! `A_α = Σ_{k=0}^{α} C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²))`, for fractional α the
//! two convergent series of MTZ19 §3.3. Both are evaluated in log space.
//!
//! **Replace-one** (the workspace's neighbouring relation): `D → D' ` replaces one record,
//! i.e. removes it (`D → D⁻`) then adds another (`D⁻ → D'`). By Mironov 2017, Proposition
//! 11 (the weak triangle inequality, p = q = 2),
//! `D_α(P‖R) ≤ (α − ½)/(α − 1)·D_{2α}(P‖Q) + D_{2α−1}(Q‖R)`, so one step is
//! `((α−½)/(α−1))·r_{ar}(2α) + r_{ar}(2α − 1)`-RDP for replace-one at every integer α ≥ 2
//! (r_{ar} the add/remove curve, which bounds both directions). It is also at most the
//! unsubsampled Gaussian's `2α/σ²` (the records' sampling is the same on both sides, so by
//! the joint convexity of `exp((α−1)D_α)` the mixture is no worse than the Gaussian with
//! shift 2C): the smaller of the two is used. At q = 1 this is the Gaussian's exact curve.
//!
//! # Numerics
//! Every per-order value is computed in floating point and raised by a margin far above
//! its rounding error: for integer α a relative 10⁻¹¹ of the magnitudes summed in
//! `ln A_α`, which covers the `α·2⁻⁵³` of the log-factorial table many times over; for
//! fractional α a bound on each term's error, carried term by term. The fractional series
//! stops where what it drops is provably ≤ 0 (an alternating tail of decreasing terms,
//! past α) and below 10⁻¹³ of the sum. Compositions and conversions round up.

use crate::NoiseError;
use crate::error::{check_epsilon, check_guarantee_delta};
use crate::rounding::{add_rounding_up, mul_rounding_up as mul_up};
use crate::zcdp::Zcdp;

/// The neighbouring relation an RDP curve holds for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Neighbouring {
    /// One record added or removed (the relation of MTZ19 and of Opacus' accountant).
    AddRemove,
    /// One record replaced by another (same n): the workspace's relation.
    ReplaceOne,
}

impl Neighbouring {
    /// The relation's name, as every face of the library spells it (`replace-one`,
    /// `add-remove`).
    pub fn name(self) -> &'static str {
        match self {
            Self::ReplaceOne => "replace-one",
            Self::AddRemove => "add-remove",
        }
    }
}

impl std::fmt::Display for Neighbouring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is neither `replace-one` nor `add-remove`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownNeighbouring(pub String);

impl std::fmt::Display for UnknownNeighbouring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "neighbouring = {:?}: expected \"replace-one\" or \"add-remove\"",
            self.0
        )
    }
}

impl std::error::Error for UnknownNeighbouring {}

impl std::str::FromStr for Neighbouring {
    type Err = UnknownNeighbouring;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [Self::ReplaceOne, Self::AddRemove]
            .into_iter()
            .find(|n| n.name() == s)
            .ok_or_else(|| UnknownNeighbouring(s.to_owned()))
    }
}

/// The orders of Opacus 1.6.0's RDP accountant (`opacus.accountants.RDPAccountant`'s
/// default), extended to 8192: `1.1, 1.2, …, 10.9, 12, …, 63`, then
/// `64, 80, 100, 128, …, 6000, 8192`.
pub fn opacus_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (1..100).map(|x| 1.0 + x as f64 / 10.0).collect();
    orders.extend((12..64).map(|x| x as f64));
    orders.extend(LARGE_ORDERS);
    orders
}

const LARGE_ORDERS: [f64; 19] = [
    64.0, 80.0, 100.0, 128.0, 160.0, 200.0, 256.0, 320.0, 400.0, 512.0, 640.0, 800.0, 1024.0,
    1500.0, 2048.0, 3000.0, 4096.0, 6000.0, 8192.0,
];

/// The default grid: every integer order 2…63, then Opacus' large orders up to 8192.
/// Integer orders only, so the replace-one curve (which needs `2α` and `2α − 1`) is
/// evaluated by the exact binomial expansion.
pub fn default_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (2..64).map(|x| x as f64).collect();
    orders.extend(LARGE_ORDERS);
    orders
}

/// Largest order accepted: the binomial expansion at `2α` sums `2α + 1` terms.
pub const MAX_ORDER: f64 = 65_536.0;

/// Largest number of composed steps accepted.
pub const MAX_STEPS: u64 = 100_000_000;

/// An RDP curve: an upper bound on the Rényi divergence at each order of a grid, for one
/// neighbouring relation.
///
/// # Privacy
/// Every value is an upper bound, rounded up wherever it is computed; [`RdpCurve::epsilon`]
/// reports an ε that is never below the Balle et al. 2020 bound at the order it picks.
#[derive(Debug, Clone, PartialEq)]
pub struct RdpCurve {
    relation: Neighbouring,
    orders: Vec<f64>,
    values: Vec<f64>,
}

impl RdpCurve {
    /// The curve of `steps` compositions of the Poisson-subsampled Gaussian mechanism with
    /// sampling rate `q` in (0, 1] and noise multiplier `noise_multiplier` (the noise's
    /// standard deviation over the L2 bound C of one record's contribution), for
    /// `relation`, at `orders` (each finite and > 1; integers for
    /// [`Neighbouring::ReplaceOne`]). Everything is checked before any work.
    pub fn subsampled_gaussian(
        relation: Neighbouring,
        q: f64,
        noise_multiplier: f64,
        steps: u64,
        orders: &[f64],
    ) -> Result<Self, NoiseError> {
        check_rate(q)?;
        check_multiplier(noise_multiplier)?;
        check_steps(steps)?;
        check_orders(orders, relation)?;
        let largest = orders.iter().fold(0.0f64, |a, &b| a.max(b));
        let table = LogFactorials::up_to(2 * largest as usize + 1);
        let values = orders
            .iter()
            .map(|&alpha| {
                let one = match relation {
                    Neighbouring::AddRemove => add_remove_step(q, noise_multiplier, alpha, &table),
                    Neighbouring::ReplaceOne => {
                        replace_one_step(q, noise_multiplier, alpha, &table)
                    }
                };
                mul_up(one, steps as f64)
            })
            .collect();
        Ok(Self {
            relation,
            orders: orders.to_vec(),
            values,
        })
    }

    /// The curve of a ρ-zCDP guarantee for replace-one neighbours (as every zCDP guarantee
    /// of this workspace): `αρ` at each order, rounded up.
    pub fn from_zcdp(zcdp: Zcdp, orders: &[f64]) -> Result<Self, NoiseError> {
        check_orders(orders, Neighbouring::AddRemove)?;
        let values = orders
            .iter()
            .map(|&alpha| zcdp.renyi_divergence(alpha))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            relation: Neighbouring::ReplaceOne,
            orders: orders.to_vec(),
            values,
        })
    }

    /// The relation the curve holds for.
    pub fn relation(&self) -> Neighbouring {
        self.relation
    }

    /// The orders α.
    pub fn orders(&self) -> &[f64] {
        &self.orders
    }

    /// The RDP bound at each order (same positions as [`RdpCurve::orders`]).
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Both mechanisms run on the same data (adaptively or not): the curves add order by
    /// order, rounded up. Refuses curves of different relations or order grids.
    pub fn compose(&self, other: &RdpCurve) -> Result<RdpCurve, NoiseError> {
        self.pointwise(other, "compose", add_rounding_up)
    }

    /// `f` of the two curves' values at each order; `what` names the operation in the
    /// refusal of curves of different relations or order grids.
    pub(crate) fn pointwise(
        &self,
        other: &RdpCurve,
        what: &str,
        f: impl Fn(f64, f64) -> f64,
    ) -> Result<RdpCurve, NoiseError> {
        if self.relation != other.relation {
            return Err(NoiseError::UnsupportedParameters(format!(
                "cannot {what} RDP curves of different neighbouring relations ({:?} and {:?})",
                self.relation, other.relation
            )));
        }
        if self.orders != other.orders {
            return Err(NoiseError::UnsupportedParameters(format!(
                "cannot {what} RDP curves over different order grids"
            )));
        }
        Ok(RdpCurve {
            relation: self.relation,
            orders: self.orders.clone(),
            values: self
                .values
                .iter()
                .zip(&other.values)
                .map(|(&a, &b)| f(a, b))
                .collect(),
        })
    }

    /// The smallest ε over the grid by the Balle et al. 2020 conversion at `delta`
    /// (0 < δ ≤ [`MAX_DELTA`](crate::MAX_DELTA)), and the order that gives it: the curve's
    /// mechanism is (ε, δ)-DP.
    /// Rounded up; never negative.
    pub fn epsilon(&self, delta: f64) -> Result<(f64, f64), NoiseError> {
        let delta = check_guarantee_delta(delta)?;
        Ok(self.best(|alpha, r| {
            let t = alpha - 1.0;
            [r, (-1.0 / alpha).ln_1p(), -delta.ln() / t, -alpha.ln() / t]
        }))
    }

    /// The smallest ε over the grid by the classic conversion `r(α) + ln(1/δ)/(α − 1)`
    /// (Mironov 2017, Proposition 3), and its order: looser than [`RdpCurve::epsilon`],
    /// for comparison. Rounded up.
    pub fn epsilon_classic(&self, delta: f64) -> Result<(f64, f64), NoiseError> {
        let delta = check_guarantee_delta(delta)?;
        Ok(self.best(|alpha, r| [r, -delta.ln() / (alpha - 1.0), 0.0, 0.0]))
    }

    fn best(&self, terms: impl Fn(f64, f64) -> [f64; 4]) -> (f64, f64) {
        let mut best = (f64::INFINITY, self.orders[0]);
        for (&alpha, &r) in self.orders.iter().zip(&self.values) {
            let parts = terms(alpha, r);
            let value: f64 = parts.iter().sum();
            let magnitude: f64 = parts.iter().map(|x| x.abs()).sum();
            let raised = (value + CONVERSION_MARGIN * magnitude).next_up();
            if raised < best.0 {
                best = (raised, alpha);
            }
        }
        (best.0.max(0.0), best.1)
    }
}

/// Relative margin on a conversion's terms (each computed to a few ulps).
const CONVERSION_MARGIN: f64 = 1e-12;

/// Relative margin on `ln A_α` over the magnitudes summed in it.
const LOG_A_MARGIN: f64 = 1e-11;

/// The smallest noise multiplier σ (rounded up, to a relative 10⁻⁹) for which `steps`
/// steps of the Poisson-subsampled Gaussian with rate `q` are (`epsilon`, `delta`)-DP for
/// `relation` by [`RdpCurve::epsilon`] over `orders`. The returned σ was checked to meet
/// the target.
pub fn smallest_noise_multiplier(
    relation: Neighbouring,
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    orders: &[f64],
) -> Result<f64, NoiseError> {
    check_rate(q)?;
    check_steps(steps)?;
    let epsilon = check_epsilon(epsilon)?;
    check_guarantee_delta(delta)?;
    check_orders(orders, relation)?;
    let spent = |sigma: f64| -> Result<f64, NoiseError> {
        Ok(
            RdpCurve::subsampled_gaussian(relation, q, sigma, steps, orders)?
                .epsilon(delta)?
                .0,
        )
    };
    // ε falls with σ: find a σ that fits, then bisect in log scale.
    let (mut lo, mut hi) = (1e-3f64, 1.0f64);
    while spent(hi)? > epsilon {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return Err(NoiseError::UnsupportedParameters(format!(
                "no noise multiplier up to 1e12 reaches epsilon {epsilon:?} at delta {delta:?}"
            )));
        }
    }
    while hi / lo > 1.0 + 1e-9 {
        let mid = (lo * hi).sqrt();
        if spent(mid)? > epsilon {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

/// An RDP budget for replace-one neighbours: a target (ε, δ), and the curve spent so far
/// over a fixed grid of orders.
///
/// # Privacy
/// Mechanisms run one after another on the same data (adaptively or not) compose by
/// adding their RDP curves order by order (Mironov 2017, Proposition 1); the budget
/// refuses a spend after which the composed curve's ε at the target δ
/// ([`RdpCurve::epsilon`], minimized over the grid) would exceed the target, so
/// everything it records is together (ε, δ)-DP. A ρ-zCDP mechanism is charged `αρ` at
/// every order ([`RdpAccountant::spend_zcdp`]), so a DP-SGD fit and Gaussian fits share
/// one budget. Curves must be for replace-one neighbours (the workspace's relation).
/// Deliberately not `Clone`: two copies could each spend the whole target.
#[derive(Debug, PartialEq)]
pub struct RdpAccountant {
    epsilon: f64,
    delta: f64,
    spent: RdpCurve,
    ledger: Vec<String>,
}

impl RdpAccountant {
    /// A budget of (`epsilon`, `delta`) (ε > 0, 0 < δ ≤ [`MAX_DELTA`](crate::MAX_DELTA))
    /// over [`default_orders`].
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let delta = check_guarantee_delta(delta)?;
        let orders = default_orders();
        let values = vec![0.0; orders.len()];
        Ok(Self {
            epsilon,
            delta,
            spent: RdpCurve {
                relation: Neighbouring::ReplaceOne,
                orders,
                values,
            },
            ledger: Vec::new(),
        })
    }

    /// The orders the budget tracks: curves spent must use these.
    pub fn orders(&self) -> &[f64] {
        self.spent.orders()
    }

    /// The curve spent so far (all zeros before any spend).
    pub fn curve(&self) -> &RdpCurve {
        &self.spent
    }

    /// The target ε.
    pub fn epsilon_limit(&self) -> f64 {
        self.epsilon
    }

    /// The target δ.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The ε of everything spent so far at the target δ (0 before any spend).
    pub fn spent_epsilon(&self) -> f64 {
        if self.ledger.is_empty() {
            0.0
        } else {
            self.spent
                .epsilon(self.delta)
                .map_or(f64::INFINITY, |e| e.0)
        }
    }

    /// The labels of the charges so far, in order.
    pub fn ledger(&self) -> &[String] {
        &self.ledger
    }

    /// Charges a mechanism with RDP curve `cost` (replace-one, this budget's orders). On
    /// error nothing is charged.
    pub fn spend(&mut self, label: &str, cost: &RdpCurve) -> Result<(), NoiseError> {
        if cost.relation != Neighbouring::ReplaceOne {
            return Err(NoiseError::UnsupportedParameters(
                "an RDP budget takes replace-one curves only (got an add/remove curve)".to_owned(),
            ));
        }
        let total = self.spent.compose(cost)?;
        let (after, _) = total.epsilon(self.delta)?;
        if after > self.epsilon {
            return Err(NoiseError::BudgetExceeded {
                requested: cost.epsilon(self.delta)?.0,
                spent: self.spent_epsilon(),
                limit: self.epsilon,
            });
        }
        self.spent = total;
        self.ledger.push(label.to_owned());
        Ok(())
    }

    /// Charges a ρ-zCDP mechanism as `αρ` at every order. On error nothing is charged.
    pub fn spend_zcdp(&mut self, label: &str, cost: Zcdp) -> Result<(), NoiseError> {
        let curve = RdpCurve::from_zcdp(cost, self.orders())?;
        self.spend(label, &curve)
    }
}

/// One add/remove step at order α: `ln A_α/(α − 1)`, raised by its margin; q = 1 is the
/// Gaussian's `α/(2σ²)`.
fn add_remove_step(q: f64, sigma: f64, alpha: f64, table: &LogFactorials) -> f64 {
    if q == 1.0 {
        return mul_up(alpha, (1.0 / (2.0 * sigma * sigma)).next_up());
    }
    let (log_a, magnitude) = if alpha.fract() == 0.0 {
        log_a_integer(q, sigma, alpha as usize, table, None)
    } else {
        log_a_fractional(q, sigma, alpha)
    };
    let raised = (log_a + LOG_A_MARGIN * magnitude).next_up();
    let value = (raised / (alpha - 1.0)).next_up();
    if value.is_nan() {
        f64::INFINITY
    } else {
        value.max(0.0)
    }
}

/// One replace-one step at integer order α ≥ 2: the weak triangle inequality over the
/// add/remove curve, or the unsubsampled Gaussian with sensitivity 2, whichever is smaller.
fn replace_one_step(q: f64, sigma: f64, alpha: f64, table: &LogFactorials) -> f64 {
    let gaussian = mul_up(alpha, (2.0 / (sigma * sigma)).next_up());
    if q == 1.0 {
        return gaussian;
    }
    let weight = ((alpha - 0.5) / (alpha - 1.0)).next_up();
    let first = mul_up(weight, add_remove_step(q, sigma, 2.0 * alpha, table));
    let second = add_remove_step(q, sigma, 2.0 * alpha - 1.0, table);
    add_rounding_up(first, second).min(gaussian)
}

/// `ln A_α` for integer α by the binomial expansion, and the magnitude of its terms.
/// `dropped` leaves one term out: `None` always, but in the tests' mutation checks.
fn log_a_integer(
    q: f64,
    sigma: f64,
    alpha: usize,
    table: &LogFactorials,
    dropped: Option<usize>,
) -> (f64, f64) {
    let (log_q, log_p) = (q.ln(), (-q).ln_1p());
    let two_var = 2.0 * sigma * sigma;
    let term = |k: usize| {
        let (kf, rest) = (k as f64, (alpha - k) as f64);
        table.log_binomial(alpha, k) + kf * log_q + rest * log_p + (kf * kf - kf) / two_var
    };
    let peak = (0..=alpha).map(term).fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = (0..=alpha)
        .filter(|&k| Some(k) != dropped)
        .map(|k| (term(k) - peak).exp())
        .sum();
    let af = alpha as f64;
    let magnitude = table.log_factorial(alpha)
        + af * (log_q.abs() + log_p.abs())
        + af * af / two_var
        + peak.abs();
    (peak + sum.ln(), magnitude)
}

/// The fractional series stops once a dropped term is below this share of the sum.
const SERIES_TOLERANCE: f64 = 1e-13;
/// The fractional series stops after this many terms whatever its terms (a bound on the
/// rest is then added).
const MAX_SERIES_TERMS: usize = 10_000_000;
/// A bound on the relative error of libm's `erfc` below 25 (musl's, from FreeBSD's
/// `s_erf.c`: within about an ulp): 2⁻⁴⁶, 64 ulps. (statrs' `erfc` errs by up to 10⁻¹⁰
/// relative: not used here.)
const ERFC_RELATIVE_ERROR: f64 = 1.0 / 70_368_744_177_664.0;
/// Unit roundoff multiples that bound the rounding of each logged quantity below (each is
/// a handful of operations, each off by at most half an ulp).
const ROUNDING: f64 = 8.0 * f64::EPSILON;

/// An upper bound on `ln A_α` for fractional α by MTZ19's two series (§3.3), and 0 for the
/// magnitude (its own rounding is bounded here, so the caller adds no margin).
///
/// `A_α = Σ_i C(α, i)·(I₀(i) + I₁(i))`, where `I₀(i) = (1−q)^α ∫_{z≤z₀} μ₀·u^i` with
/// `u = q(μ₁/μ₀)/(1−q) ≤ 1` there, and `I₁(i) = ∫_{z>z₀} μ₀·(qμ₁/μ₀)^α·v^i` with
/// `v = (1−q)/(qμ₁/μ₀) ≤ 1` there: both fall as i grows. Past i > α the coefficients
/// alternate in sign and fall in magnitude (`|C(α, i+1)/C(α, i)| = (i−α)/(i+1)`), so from
/// any i > α on the rest of the series is an alternating series of decreasing terms: it
/// has the sign of its first term, and no larger magnitude. The sum therefore stops at an
/// i > α whose term is negative and below [`SERIES_TOLERANCE`] of the sum: what it drops
/// is ≤ 0, and the sum an upper bound, within that tolerance of A. (Past
/// [`MAX_SERIES_TERMS`] it stops anyway, adding the first dropped term when it is
/// positive.) At an integer α the coefficients vanish past α and the sum is exact.
///
/// Each term's logarithm is computed with a bound on its error (erfc's asymptotic form
/// bracketed above and below; the rounding of every logged quantity bounded by its
/// magnitude), and taken at its upper end when added, its lower end when subtracted; the
/// rounding of the two running sums is bounded and added at the end. (Before, one margin
/// of a relative 10⁻¹¹ of the largest magnitude met, `i²/(2σ²)` of terms far out in a
/// slowly converging series, raised the value up to 10⁶-fold, and a cut-off at `e^{−60}`
/// of the sum, reached only after 10⁷ terms near α = 1, gave ∞.)
fn log_a_fractional(q: f64, sigma: f64, alpha: f64) -> (f64, f64) {
    let (log_q, log_p) = (q.ln(), (-q).ln_1p());
    let two_var = 2.0 * sigma * sigma;
    let log_odds = (1.0 / q - 1.0).ln();
    let z0 = sigma * sigma * log_odds + 0.5;
    // |z₀ − fl(z₀)|: the ratio, its log, the product and the sum each round.
    let z0_error = ROUNDING * (sigma * sigma * (log_odds.abs() + 1.0) + 1.0);
    let root2_sigma = std::f64::consts::SQRT_2 * sigma;
    // The positive and the negative terms, each summed as positive numbers, with a bound on
    // the error of each sum's log.
    let (mut added, mut subtracted) = (SignedLog::ZERO, SignedLog::ZERO);
    let (mut added_error, mut subtracted_error) = (0.0f64, 0.0f64);
    let (mut log_coef, mut coef_error, mut positive) = (0.0f64, 0.0f64, true);
    let mut i = 0usize;
    loop {
        let (fi, j) = (i as f64, alpha - i as f64);
        let part = |power: f64, log_power: f64, log_rest: f64, x: f64| {
            // ln of C(α, i)·q^…(1−q)^…·exp((k²−k)/(2σ²))·erfc(x)/2, with an error bound.
            let (erfc_low, erfc_high) = log_half_erfc(x);
            let powers = log_power + log_rest;
            let square = (power * power - power) / two_var;
            // x's error (from z₀ and its own rounding) moves ln erfc by at most its slope
            // `(2/√π)e^{−x²}/erfc(x)`: below 1.13·e^{−x²} for x ≤ 0 (erfc ≥ 1 there), below
            // `x + √(x² + 2) ≤ 2x + 1.5` for x > 0 (the Mills ratio's bound).
            let x_error =
                (z0_error + ROUNDING * (power.abs() + z0.abs())) / root2_sigma + ROUNDING * x.abs();
            let slope = if x <= 0.0 {
                1.13 * (-x * x).exp()
            } else {
                2.0 * x + 1.5
            };
            let error = coef_error
                + ROUNDING
                    * (log_coef.abs()
                        + log_power.abs()
                        + log_rest.abs()
                        + square.abs()
                        + power * power / two_var
                        + erfc_high.abs()
                        + 1.0)
                + slope * x_error;
            let centre = log_coef + powers + square;
            (centre + erfc_low - error, centre + erfc_high + error)
        };
        let (low0, high0) = part(fi, fi * log_q, j * log_p, (fi - z0) / root2_sigma);
        let (low1, high1) = part(j, j * log_q, fi * log_p, (z0 - j) / root2_sigma);
        // The term at the end that can only raise the sum.
        let term = if positive {
            log_add(high0, high1)
        } else {
            log_add(low0, low1)
        };
        if fi > alpha {
            let sum = added.add_signed(SignedLog {
                log_abs: subtracted.log_abs,
                positive: false,
            });
            let small = log_add(high0, high1) < sum.log_abs + SERIES_TOLERANCE.ln();
            if small && !positive {
                break;
            }
            if i >= MAX_SERIES_TERMS {
                if positive {
                    accumulate(&mut added, &mut added_error, term);
                }
                break;
            }
        }
        if positive {
            accumulate(&mut added, &mut added_error, term);
        } else {
            accumulate(&mut subtracted, &mut subtracted_error, term);
        }
        // The generalized binomial C(α, i+1) = C(α, i)·(α − i)/(i + 1).
        let factor = alpha - fi;
        if factor == 0.0 {
            // An integer α: every later coefficient is 0, and the sum is exact.
            break;
        }
        let step = factor.abs().ln() - (fi + 1.0).ln();
        log_coef += step;
        coef_error += ROUNDING * (log_coef.abs() + step.abs() + (fi + 1.0).ln() + 1.0);
        if factor < 0.0 {
            positive = !positive;
        }
        i += 1;
    }
    let high = added.log_abs + added_error;
    let low = subtracted.log_abs - subtracted_error;
    let ratio = (low - high).exp();
    // NaN or a difference that could be ≤ 0: nothing bounded.
    if ratio.is_nan() || ratio >= 1.0 || high.is_nan() {
        return (f64::INFINITY, 0.0);
    }
    // ln(e^high − e^low), its rounding bounded (ln_1p near −1 loses r/(1−r) ulps).
    let difference = (-ratio).ln_1p();
    let rounding = ROUNDING * (1.0 + ratio / (1.0 - ratio) + high.abs() + difference.abs());
    ((high + difference + rounding).next_up(), 0.0)
}

/// Adds `e^{term}` to the positive sum `sum` in log space, and to `error` a bound on the
/// rounding of the step: `big + ln(1 + r)` with `r = e^{small − big}` errs by at most a few
/// ulps of the result plus `r·(2 + (big − small))` ulps from r's own rounding.
fn accumulate(sum: &mut SignedLog, error: &mut f64, term: f64) {
    if term == f64::NEG_INFINITY {
        return;
    }
    let (big, small) = if sum.log_abs >= term {
        (sum.log_abs, term)
    } else {
        (term, sum.log_abs)
    };
    let gap = big - small;
    // The first term (gap ∞) is taken as it is.
    let from_ratio = if gap.is_finite() {
        (-gap).exp() * (2.0 + gap)
    } else {
        0.0
    };
    *sum = sum.add(term, true);
    *error += ROUNDING * (sum.log_abs.abs() + from_ratio);
}

/// `ln(e^a + e^b)`.
fn log_add(a: f64, b: f64) -> f64 {
    let (big, small) = if a >= b { (a, b) } else { (b, a) };
    if small == f64::NEG_INFINITY {
        return big;
    }
    big + (small - big).exp().ln_1p()
}

/// Bounds (low, high) on `ln(erfc(x)/2)`: libm's erfc within its relative error below 25;
/// beyond, where it underflows, `e^{−x²}/(x√π)·(1 − 1/(2x²)) ≤ erfc(x) ≤ e^{−x²}/(x√π)`.
fn log_half_erfc(x: f64) -> (f64, f64) {
    let half = 0.5f64.ln();
    if x < 25.0 {
        let value = libm::erfc(x).ln() + half;
        let error = ERFC_RELATIVE_ERROR + ROUNDING * value.abs();
        (value - error, value + error)
    } else {
        let high = -x * x - (x * std::f64::consts::PI.sqrt()).ln() + half;
        let error = ROUNDING * (x * x + high.abs());
        let low = high + (-0.5 / (x * x)).ln_1p();
        (low - error, high + error)
    }
}

/// A real number as (ln |value|, sign), for sums of terms too large or small for f64.
#[derive(Debug, Clone, Copy)]
struct SignedLog {
    log_abs: f64,
    positive: bool,
}

impl SignedLog {
    const ZERO: SignedLog = SignedLog {
        log_abs: f64::NEG_INFINITY,
        positive: true,
    };

    /// self ± e^{log_term}.
    fn add(self, log_term: f64, positive: bool) -> SignedLog {
        self.add_signed(SignedLog {
            log_abs: log_term,
            positive,
        })
    }

    fn add_signed(self, other: SignedLog) -> SignedLog {
        if other.log_abs == f64::NEG_INFINITY {
            return self;
        }
        if self.log_abs == f64::NEG_INFINITY {
            return other;
        }
        let (big, small) = if self.log_abs >= other.log_abs {
            (self, other)
        } else {
            (other, self)
        };
        let ratio = (small.log_abs - big.log_abs).exp();
        let log_abs = if big.positive == small.positive {
            big.log_abs + ratio.ln_1p()
        } else {
            big.log_abs + (-ratio).ln_1p()
        };
        SignedLog {
            log_abs,
            positive: big.positive,
        }
    }
}

/// `ln k!` for k up to a bound, summed once.
struct LogFactorials(Vec<f64>);

impl LogFactorials {
    fn up_to(n: usize) -> Self {
        let mut table = Vec::with_capacity(n + 1);
        let mut acc = 0.0f64;
        table.push(0.0);
        for k in 1..=n {
            acc += (k as f64).ln();
            table.push(acc);
        }
        LogFactorials(table)
    }

    fn log_factorial(&self, k: usize) -> f64 {
        self.0[k]
    }

    fn log_binomial(&self, n: usize, k: usize) -> f64 {
        self.0[n] - self.0[k] - self.0[n - k]
    }
}

fn check_rate(q: f64) -> Result<f64, NoiseError> {
    if q.is_finite() && q > 0.0 && q <= 1.0 {
        Ok(q)
    } else {
        Err(NoiseError::UnsupportedParameters(format!(
            "sampling rate q must be in (0, 1], got {q:?}"
        )))
    }
}

fn check_multiplier(sigma: f64) -> Result<f64, NoiseError> {
    if sigma.is_finite() && sigma > 0.0 {
        Ok(sigma)
    } else {
        Err(NoiseError::InvalidScale(sigma))
    }
}

fn check_steps(steps: u64) -> Result<u64, NoiseError> {
    if (1..=MAX_STEPS).contains(&steps) {
        Ok(steps)
    } else {
        Err(NoiseError::UnsupportedParameters(format!(
            "steps must be in 1..={MAX_STEPS}, got {steps}"
        )))
    }
}

fn check_orders(orders: &[f64], relation: Neighbouring) -> Result<(), NoiseError> {
    if orders.is_empty() {
        return Err(NoiseError::UnsupportedParameters(
            "the grid of Renyi orders is empty".to_owned(),
        ));
    }
    for (i, &alpha) in orders.iter().enumerate() {
        let integer_needed = relation == Neighbouring::ReplaceOne;
        let ok = alpha.is_finite()
            && alpha > 1.0
            && alpha <= MAX_ORDER
            && (!integer_needed || (alpha.fract() == 0.0 && alpha >= 2.0));
        if !ok {
            return Err(NoiseError::UnsupportedParameters(format!(
                "Renyi order {i} must be finite, > 1 and <= {MAX_ORDER} (an integer >= 2 for \
                 replace-one), got {alpha:?}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "rdp_tests.rs"]
mod tests;

#[path = "repeat_select.rs"]
mod repeat_select;
pub use repeat_select::{MAX_MEAN_RUNS, RunCount};
