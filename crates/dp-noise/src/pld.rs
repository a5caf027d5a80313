//! Privacy-loss distributions (PLDs): tight (ε, δ) accounting of composed mechanisms —
//! the Gaussian, Laplace and pure-ε mechanisms and DP-SGD's Poisson-subsampled Gaussian —
//! by discretizing each mechanism's privacy loss and convolving (docs/src/reference/algorithms.md §8).
//!
//! For a pair of output laws (P, Q) of one mechanism on neighbouring datasets, the
//! **privacy loss** is `L = ln(P(o)/Q(o))` with `o ~ P` (`+∞` where Q = 0), and the mechanism
//! is (ε, δ)-DP for that ordered pair exactly when
//!
//! `δ(ε) = E_P[(1 − e^{ε−L})₊] = sup_S P(S) − e^ε·Q(S)` (the hockey-stick divergence)
//!
//! is at most δ. Independent mechanisms run on the same pair of datasets (adaptively or not)
//! compose by adding their losses: the loss law of the composition is the convolution of
//! theirs (Dwork & Rothblum 2016; Sommer, Meiser & Mohammadi 2019). An asymmetric relation
//! (add/remove) has two orderings, `(P, Q) = (M(D), M(D⁻))` ("remove") and
//! `(M(D⁻), M(D))` ("add"): a [`PrivacyLossDistribution`] keeps both, composes each with
//! the same ordering of the other, and reports the worse.
//!
//! # Discretization: connect the dots
//! Each mechanism's loss law is replaced by a law on the grid `h·ℤ` (and `+∞`) whose
//! δ-curve lies **above** the true one at every ε ∈ ℝ. Two pessimistic schemes exist:
//! - Koskela, Jälkö & Honkela (AISTATS 2020) and Meiser & Mohammadi's privacy buckets round
//!   every loss **up** to the grid. Each step's loss then grows by h/2 on average, so T
//!   composed steps carry a bias of about `T·h/2` in ε: 0.3 at h = 10⁻⁴ and DP-SGD's
//!   T ≈ 6,000, where the losses of one step are themselves only ~10⁻³.
//! - **Connect the dots** (Doroshenko, Ghazi, Kamath, Kumar & Manurangsi, PETS 2022,
//!   Algorithm 1), used here: compute the exact `δ_i = δ(i·h)` at the grid points and take
//!   the grid law whose δ-curve *interpolates* them linearly in `e^ε`. Since `δ(ε)` is convex
//!   in `e^ε` (an expectation of the convex `(1 − e^ε·e^{−L})₊`), the interpolation lies
//!   above it between grid points; beyond the top point the curve stays at `δ_n`, above the
//!   falling true curve; below the lowest point it is the chord from `(e^ε = 0, 1)` to
//!   `(e^{ε₀}, δ₀)`, again above the convex curve. The masses are the second differences
//!   `ω_i = ((δ_{i+1} − δ_i) − e^h(δ_i − δ_{i−1}))/(e^h − 1)`, the lowest
//!   `(1 − δ₀) + (δ₁ − δ₀)/(e^h − 1)`, the top `(δ_{n−1} − δ_n)·e^h/(e^h − 1)`, and `δ_n` at
//!   `+∞`. The δ-curve is exact at every grid point, so the error does not grow like `T·h`:
//!   dp-accounting's default (`use_connect_dots=True`), and what its tests and ours compare.
//!   Below ε = 0 the same masses are computed from `g(ε) = δ(ε) − (1 − e^ε)`, the reversed
//!   pair's `e^ε·δ_rev(−ε)` (the formula annihilates `1 − e^ε`): small where δ is near 1, so
//!   the values' rounding, divided by `e^h − 1`, does not put spurious mass on the lower
//!   tail.
//!
//! # Why every reported value is an upper bound
//! Write `δ_ω(ε) = ω_∞ + Σ_j ω_j (1 − e^{ε−y_j})₊` for a law ω with masses `ω_j ≥ 0` at
//! `y_j` and `ω_∞` at `+∞`. For two laws, `δ_{ω*ν}(ε) = E_{Z~ν}[δ_ω(ε − Z)]` (with
//! `δ_ω(−∞)` = ω's total mass). So if `δ_ω ≥ δ_a` and `δ_ν ≥ δ_b` pointwise on ℝ (and ω, ν
//! have total mass ≥ 1), then `δ_{ω*ν} ≥ δ_{a*ν} = E_{Y~a}[δ_ν(ε − Y)] ≥ δ_{a*b}`: the
//! composition of dominating laws dominates the composition. Every operation here keeps
//! that invariant — masses ≥ 0, total ≥ 1, δ-curve ≥ the true one on all of ℝ:
//! - moving mass **up** (from below the lower truncation to its edge, from above the upper
//!   truncation to `+∞`) only raises `δ_ω`; mass is never moved down;
//! - floating-point error (the δ_i, the FFT) is bounded and that bound added to the mass at
//!   `+∞`, which raises `δ_ω` by as much at every ε; negative masses from rounding are
//!   raised to 0; the masses' own rounding (the δ_i's divided by `e^h − 1`) is not bounded
//!   in advance but measured: the curve of the final masses is compared with the δ_i at
//!   every grid point and the largest shortfall added at `+∞`;
//! - queries round up (see [`PrivacyLossDistribution::delta_for_epsilon`]).
//!
//! # Numerics
//! Grid points are `i·h` for integer i, the same in every law of one h; laws of different
//! h are refused, never regridded. Compositions use `rustfft` on the next power of two above
//! the convolved length (direct summation below 64 atoms). The FFT's error is taken to be
//! at most `8·u·log₂N·√N·min(‖a‖₁‖b‖₂, ‖a‖₂‖b‖₁)` in total absolute mass (u = 2⁻⁵³): a
//! 2-norm bound of the form `c·u·log₂N·‖a‖₁‖b‖₂` for FFT-based convolution (the error
//! analysis of the FFT in Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
//! ch. 24), with the constant c = 8 **assumed** for rustfft's algorithms, times √N to pass
//! from the 2-norm to the total; the tests check it against direct summation (the measured
//! error is far below it). Tails of mass at most [`TAIL_MASS`] are truncated
//! (pessimistically) after every composition.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

use crate::NoiseError;
use crate::error::{check_epsilon, check_guarantee_delta};
use crate::rdp::Neighbouring;

/// Smallest discretization interval h accepted.
pub const MIN_DISCRETIZATION: f64 = 1e-7;

/// Largest discretization interval h accepted.
pub const MAX_DISCRETIZATION: f64 = 0.1;

/// Largest number of grid atoms one law may hold (a finer h or a wider law is refused,
/// naming both, rather than allocating without bound): 2²², so one FFT buffer stays within
/// 128 MiB.
pub const MAX_ATOMS: usize = 1 << 22;

/// Largest number of self-compositions accepted (as for RDP: [`crate::MAX_STEPS`]).
pub const MAX_COMPOSITIONS: u64 = crate::rdp::MAX_STEPS;

/// The probability mass each truncation may move (half at each end): up from below the lower
/// edge, or to `+∞` from above the upper edge. Both moves are pessimistic; the second adds
/// at most `TAIL_MASS/2` to δ per composition.
pub const TAIL_MASS: f64 = 1e-15;

/// Grid points `x` of the noise beyond which one mechanism's construction ignores the
/// outputs (in standard deviations): the Gaussian tail there is below 10⁻¹⁷. Only
/// tightness depends on it: connect the dots is pessimistic whatever range it covers.
const TAIL_STDS: f64 = 8.5;

/// Unit roundoff.
const U: f64 = f64::EPSILON / 2.0;

/// Relative error bound of one δ evaluation over the magnitude of its terms: libm's erfc is
/// within 2⁻⁴⁶ (64 ulps, see rdp.rs), a product and a sum of terms a few ulps more.
const DELTA_RELATIVE_ERROR: f64 = 1e-13;

/// A relative error bound used where `ln Φ` comes from its asymptotic series (arguments
/// below −35, where the terms are below e⁻⁶¹² and so contribute nothing but this bound).
const ASYMPTOTIC_RELATIVE_ERROR: f64 = 1e-9;

/// Absolute error bound on one δ evaluation from the rounding of its threshold: the value at
/// a rounded threshold is `P(S) − e^ε·Q(S)` for a slightly different set S, never above the
/// supremum, and below it by a second-order term far under this.
const THRESHOLD_ERROR: f64 = 1e-20;

/// Below this many atoms in the shorter factor, convolutions sum directly.
const DIRECT_CONVOLUTION: usize = 64;

/// One ordering's discretized loss law: `masses[j]` at the loss `(lowest + j)·h`, and
/// `infinity` at `+∞`. Invariant: every mass ≥ 0, the total ≥ 1 − (a few ulps), and the
/// δ-curve at or above the true one everywhere.
#[derive(Debug, Clone, PartialEq)]
struct Pmf {
    h: f64,
    lowest: i64,
    masses: Vec<f64>,
    infinity: f64,
}

/// A pessimistic discretized privacy-loss distribution on the grid `h·ℤ`, for one
/// neighbouring relation: one law when the relation's two orderings have the same loss law,
/// both when they differ (add/remove's subsampled Gaussian).
///
/// # Privacy
/// Every δ(ε) and ε(δ) it reports is an upper bound on the true one of the mechanism (or
/// composition) it was built from, discretization and floating-point error included (module
/// docs). The guarantee holds for the neighbouring relation of its constructor: a
/// replace-one and an add/remove law compose (both are laws of pairs of outputs), but the
/// result is then only as meaningful as the relation each part was stated for; compose laws
/// of the same relation.
///
/// ```
/// use dp_noise::{Neighbouring, PrivacyLossDistribution};
///
/// # fn main() -> Result<(), dp_noise::NoiseError> {
/// // 1,000 DP-SGD steps at rate 1/100 and noise multiplier 1.1, then a Gaussian release of
/// // sensitivity 1 at σ = 8, all replace-one.
/// let h = 1e-3;
/// let sgd = PrivacyLossDistribution::subsampled_gaussian(Neighbouring::ReplaceOne, 0.01, 1.1, h)?
///     .self_compose(1000)?;
/// let release = PrivacyLossDistribution::gaussian(2.0 / 8.0, h)?; // Δ = 2 for replace-one
/// let epsilon = sgd.compose(&release)?.epsilon_for_delta(1e-5)?;
/// assert!(epsilon > sgd.epsilon_for_delta(1e-5)?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PrivacyLossDistribution {
    remove: Pmf,
    /// The other ordering, `None` when it has the same law as `remove`.
    add: Option<Pmf>,
}

impl PrivacyLossDistribution {
    /// The Gaussian mechanism: noise `N(0, σ²)` added to a function of L2 sensitivity Δ,
    /// given as `sensitivity_over_sigma` = Δ/σ, discretized at `discretization` = h.
    ///
    /// # Privacy
    /// For outputs `N(f(D), σ²I)` and `N(f(D'), σ²I)` with `‖f(D) − f(D')‖₂ ≤ Δ` the loss is
    /// `N(μ, 2μ)`, `μ = Δ²/(2σ²)`, in either ordering, and
    /// `δ(ε) = Φ(Δ/(2σ) − εσ/Δ) − e^ε·Φ(−Δ/(2σ) − εσ/Δ)` (Balle & Wang, ICML 2018, Theorem 8):
    /// the exact curve this law dominates. Δ is the sensitivity under the relation you
    /// account for (for replace-one of a clipped sum, twice the clipping norm).
    pub fn gaussian(sensitivity_over_sigma: f64, discretization: f64) -> Result<Self, NoiseError> {
        let s = check_positive_ratio(sensitivity_over_sigma)?;
        let h = check_discretization(discretization)?;
        let mu = s * s / 2.0;
        let (low, high) = (mu - TAIL_STDS * s, mu + TAIL_STDS * s);
        let pmf = connect_the_dots(
            h,
            low,
            high,
            |eps| gaussian_delta(s, eps),
            |eps| gaussian_delta(s, eps),
        )?;
        Ok(Self {
            remove: pmf,
            add: None,
        })
    }

    /// The Laplace mechanism: noise of scale b added to a function of L1 sensitivity Δ,
    /// given as `scale_over_sensitivity` = b/Δ.
    ///
    /// # Privacy
    /// For `Lap(0, b)` against `Lap(Δ, b)` the loss is `(|x − Δ| − |x|)/b`, in `[−ε₀, ε₀]`
    /// with `ε₀ = Δ/b`, the same law in either ordering, and
    /// `δ(ε) = 1 − e^{(ε−ε₀)/2}` for `|ε| ≤ ε₀` (0 above, `1 − e^ε` below): solve
    /// `S = {x < (Δ − εb)/2}`, `δ = P(S) − e^ε·Q(S)`. The mechanism is also pure
    /// ε₀-DP, which [`Self::pure`] would account more loosely.
    pub fn laplace(scale_over_sensitivity: f64, discretization: f64) -> Result<Self, NoiseError> {
        let b = check_positive_ratio(scale_over_sensitivity)?;
        let h = check_discretization(discretization)?;
        let eps0 = 1.0 / b;
        if !eps0.is_finite() {
            return Err(NoiseError::InvalidScale(scale_over_sensitivity));
        }
        let pmf = connect_the_dots(
            h,
            -eps0,
            eps0,
            |eps| laplace_delta(eps0, eps),
            |eps| laplace_delta(eps0, eps),
        )?;
        Ok(Self {
            remove: pmf,
            add: None,
        })
    }

    /// Any pure ε-DP mechanism, by its worst case: randomized response.
    ///
    /// # Privacy
    /// Every ε-DP mechanism's pair is a post-processing of randomized response's, whose loss
    /// is `+ε` with probability `e^ε/(1 + e^ε)` and `−ε` otherwise (Kairouz, Oh & Viswanath,
    /// ICML 2015, Theorem 2.1); its
    /// `δ(ε') = p·(1 − e^{ε'−ε})₊ + (1 − p)·(1 − e^{ε'+ε})₊` is what this law dominates.
    /// When ε is a multiple of h the discretization is exact (its δ-curve is piecewise linear
    /// in `e^{ε'}` with corners at grid points), and k-fold composition is the optimal
    /// composition theorem of Kairouz et al.
    pub fn pure(epsilon: f64, discretization: f64) -> Result<Self, NoiseError> {
        let eps = check_epsilon(epsilon)?;
        let h = check_discretization(discretization)?;
        let pmf = connect_the_dots(h, -eps, eps, |e| pure_delta(eps, e), |e| pure_delta(eps, e))?;
        Ok(Self {
            remove: pmf,
            add: None,
        })
    }

    /// Any (ε, δ)-DP mechanism known only by that pair, by its worst case: randomized
    /// response that first, with probability δ, reveals which dataset it ran on.
    ///
    /// # Privacy
    /// Every (ε, δ)-DP mechanism's pair of output laws is a post-processing of the pair
    /// `P = (δ, (1−δ)·e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0)`,
    /// `Q = (0, (1−δ)/(1+e^ε), (1−δ)·e^ε/(1+e^ε), δ)` (Kairouz, Oh & Viswanath, ICML 2015,
    /// Theorem 2.1), whose loss under P is `+∞` with probability δ and otherwise randomized
    /// response's `±ε` ([`Self::pure`]): its δ-curve is `δ + (1−δ)·δ_pure(ε')`, which this law
    /// dominates (the pure law's masses scaled by `1 − δ`, rounded up by a few ulps added at
    /// `+∞`). Composing such laws by convolution is the optimal composition of (ε, δ) pairs;
    /// δ = 0 is [`Self::pure`].
    pub fn approximate(epsilon: f64, delta: f64, discretization: f64) -> Result<Self, NoiseError> {
        let pure = Self::pure(epsilon, discretization)?;
        if delta == 0.0 {
            return Ok(pure);
        }
        let delta = check_guarantee_delta(delta)?;
        let keep = 1.0 - delta;
        let mut pmf = pure.remove;
        let total: f64 = pmf.masses.iter().sum::<f64>() + pmf.infinity;
        pmf.masses.iter_mut().for_each(|m| *m *= keep);
        // Each scaled mass may have rounded down by half an ulp of itself: at most
        // `total·u` together, added at +∞ (with δ, rounded up) so the curve stays above.
        pmf.infinity = ((pmf.infinity * keep + delta).next_up() + 4.0 * U * total).next_up();
        Ok(Self {
            remove: pmf,
            add: None,
        })
    }

    /// One step of the Poisson-subsampled Gaussian mechanism (DP-SGD's step): each record
    /// enters the batch with probability `q` ∈ (0, 1], and noise `N(0, σ²C²I)` is added to the
    /// sum of the batch's contributions, each clipped to L2 norm C; `noise_multiplier` = σ.
    /// Compose T steps with [`Self::self_compose`].
    ///
    /// # Privacy
    /// In units of C (so each contribution has norm ≤ 1), with the other records' sum and the
    /// noise's other coordinates integrated out, the dominating pairs are one-dimensional:
    /// - [`Neighbouring::AddRemove`]: `P = (1−q)·N(0, σ²) + q·N(1, σ²)` against
    ///   `Q = N(0, σ²)` ("remove": the larger dataset first) and the reverse ("add"); both are
    ///   kept (Mironov, Talwar & Zhang 2019; Koskela et al. 2020; Zhu, Dong & Wang, AISTATS
    ///   2022, dp-accounting's `ADD_OR_REMOVE_ONE`). The loss
    ///   `ln((1−q) + q·e^{(2x−1)/(2σ²)})` is monotone in x, so `S = {L > ε}` is a half-line
    ///   with the threshold in closed form: `x* = σ²·ln((e^ε − 1 + q)/q) + ½`, and
    ///   `δ = q·Φ̄((x*−1)/σ) − (e^ε − 1 + q)·Φ̄(x*/σ)` (remove), the mirror image for add;
    ///   the remove ordering has `δ = 1 − e^ε` below `ln(1−q)`, add has `δ = 0` above
    ///   `−ln(1−q)`.
    /// - [`Neighbouring::ReplaceOne`]: the replaced record is sampled with probability q on
    ///   both sides (the sampling does not depend on the record), contributing g or g′ with
    ///   `‖g‖, ‖g′‖ ≤ 1`, so the pair is `(1−q)·N(0) + q·N(g)` against `(1−q)·N(0) + q·N(g′)`,
    ///   dominated by `g = −e₁`, `g′ = +e₁`:
    ///   `P = (1−q)·N(0, σ²) + q·N(−1, σ²)` against `Q = (1−q)·N(0, σ²) + q·N(1, σ²)`,
    ///   dp-accounting's `REPLACE_ONE` with sensitivity 1 (its components sit at ∓1: the
    ///   sampled contributions differ by 2, i.e. 2C, as a replaced clipped gradient may).
    ///   This pair is symmetric (x ↦ −x swaps P and Q), so one law serves both orderings.
    ///   With `t = e^{x/σ²}`, `κ = e^{−1/(2σ²)}`, `L(x) = ε` is the quadratic
    ///   `e^ε qκ·t² + (e^ε − 1)(1−q)·t − qκ = 0`, whose positive root gives the threshold x*
    ///   of `S = {x < x*}`, and `δ = P(S) − e^ε·Q(S)` in Φ's. That the worst pair is the
    ///   antipodal one is the claim dp-accounting's `REPLACE_ONE` rests on (Zhu, Dong & Wang
    ///   2022); at q = 1 it is the Gaussian mechanism with sensitivity 2, exactly.
    ///
    /// The rate is used as given: a sampler that rounds q up must pass the rounded rate.
    pub fn subsampled_gaussian(
        relation: Neighbouring,
        q: f64,
        noise_multiplier: f64,
        discretization: f64,
    ) -> Result<Self, NoiseError> {
        Self::subsampled_gaussian_variant(
            relation,
            q,
            noise_multiplier,
            discretization,
            Variant::Correct,
        )
    }

    fn subsampled_gaussian_variant(
        relation: Neighbouring,
        q: f64,
        noise_multiplier: f64,
        discretization: f64,
        variant: Variant,
    ) -> Result<Self, NoiseError> {
        let q = check_rate(q)?;
        let sigma = check_multiplier(noise_multiplier)?;
        let h = check_discretization(discretization)?;
        let pair = Subsampled::new(q, sigma, variant);
        let (x_low, x_high) = (-1.0 - TAIL_STDS * sigma, 1.0 + TAIL_STDS * sigma);
        match relation {
            Neighbouring::AddRemove => {
                let remove = connect_the_dots(
                    h,
                    pair.remove_loss(x_low),
                    pair.remove_loss(x_high),
                    |e| pair.remove_delta(e),
                    |e| pair.add_delta(e),
                )?;
                let add = connect_the_dots(
                    h,
                    -pair.remove_loss(x_high),
                    -pair.remove_loss(x_low),
                    |e| pair.add_delta(e),
                    |e| pair.remove_delta(e),
                )?;
                Ok(Self {
                    remove,
                    add: Some(add),
                })
            }
            Neighbouring::ReplaceOne => {
                let top = pair.replace_loss(x_low).max(-pair.replace_loss(x_high));
                let pmf = connect_the_dots(
                    h,
                    -top,
                    top,
                    |e| pair.replace_delta(e),
                    |e| pair.replace_delta(e),
                )?;
                Ok(Self {
                    remove: pmf,
                    add: None,
                })
            }
        }
    }

    /// The discretization interval h.
    pub fn discretization(&self) -> f64 {
        self.remove.h
    }

    /// Whether one law serves both orderings of the relation.
    pub fn is_symmetric(&self) -> bool {
        self.add.is_none()
    }

    /// The number of grid atoms held (both orderings together).
    pub fn atoms(&self) -> usize {
        self.remove.masses.len() + self.add.as_ref().map_or(0, |p| p.masses.len())
    }

    /// The largest mass at `+∞` of the orderings: the δ no ε reaches below.
    pub fn infinity_mass(&self) -> f64 {
        self.orderings().map(|p| p.infinity).fold(0.0, f64::max)
    }

    fn orderings(&self) -> impl Iterator<Item = &Pmf> {
        std::iter::once(&self.remove).chain(self.add.as_ref())
    }

    /// Both mechanisms run on the same pair of datasets (adaptively or not): the loss laws
    /// convolve, ordering by ordering. Refuses laws of different discretization intervals
    /// (no regridding).
    ///
    /// # Privacy
    /// The convolution of dominating laws dominates the composition (module docs); the FFT's
    /// error bound and the truncated upper tail go to `+∞`, the lower tail moves up.
    pub fn compose(&self, other: &Self) -> Result<Self, NoiseError> {
        if self.remove.h.to_bits() != other.remove.h.to_bits() {
            return Err(NoiseError::UnsupportedParameters(format!(
                "cannot compose privacy-loss distributions of different discretization \
                 intervals ({:?} and {:?}); build both with the same h",
                self.remove.h, other.remove.h
            )));
        }
        let mut planner = FftPlanner::new();
        let remove = convolve(&self.remove, &other.remove, &mut planner)?;
        let add = match (&self.add, &other.add) {
            (None, None) => None,
            (a, b) => Some(convolve(
                a.as_ref().unwrap_or(&self.remove),
                b.as_ref().unwrap_or(&other.remove),
                &mut planner,
            )?),
        };
        Ok(Self { remove, add })
    }

    /// The same mechanism run `times` times (1 ≤ times ≤ [`MAX_COMPOSITIONS`]) on the same
    /// data, by repeated squaring: about `2·log₂(times)` convolutions, each truncated.
    ///
    /// # Privacy
    /// As [`Self::compose`], which it applies `times − 1` times in effect.
    pub fn self_compose(&self, times: u64) -> Result<Self, NoiseError> {
        if !(1..=MAX_COMPOSITIONS).contains(&times) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "the number of compositions must be in 1..={MAX_COMPOSITIONS}, got {times}"
            )));
        }
        let mut planner = FftPlanner::new();
        let remove = power(&self.remove, times, &mut planner)?;
        let add = match &self.add {
            None => None,
            Some(a) => Some(power(a, times, &mut planner)?),
        };
        Ok(Self { remove, add })
    }

    /// An upper bound on δ(ε) (ε finite; any sign): the worse ordering's, rounded up, at
    /// most 1.
    pub fn delta_for_epsilon(&self, epsilon: f64) -> Result<f64, NoiseError> {
        if !epsilon.is_finite() {
            return Err(NoiseError::InvalidEpsilon(epsilon));
        }
        Ok(self
            .orderings()
            .map(|p| p.delta(epsilon))
            .fold(0.0, f64::max))
    }

    /// The smallest ε ≥ 0 (up to a relative 10⁻¹² and rounded up) with
    /// [`Self::delta_for_epsilon`] at most `delta` (0 < δ ≤ [`MAX_DELTA`](crate::MAX_DELTA)):
    /// the mechanism is (ε, δ)-DP. `+∞` when the mass at `+∞` alone reaches δ.
    pub fn epsilon_for_delta(&self, delta: f64) -> Result<f64, NoiseError> {
        let delta = check_guarantee_delta(delta)?;
        Ok(self
            .orderings()
            .map(|p| p.epsilon(delta))
            .fold(0.0, f64::max))
    }

    /// Test-only mutant: every loss rounded **down** one grid step (an optimistic
    /// discretization), for the mutation checks.
    #[cfg(test)]
    pub(crate) fn rounded_down(mut self) -> Self {
        self.remove.lowest -= 1;
        if let Some(a) = self.add.as_mut() {
            a.lowest -= 1;
        }
        self
    }

    #[cfg(test)]
    pub(crate) fn subsampled_gaussian_mutant(
        relation: Neighbouring,
        q: f64,
        noise_multiplier: f64,
        discretization: f64,
        variant: Variant,
    ) -> Result<Self, NoiseError> {
        Self::subsampled_gaussian_variant(relation, q, noise_multiplier, discretization, variant)
    }
}

/// The ε of `steps` steps of the Poisson-subsampled Gaussian (rate q, noise multiplier σ)
/// at δ for `relation`, by a PLD of interval `discretization`: an upper bound, as
/// [`PrivacyLossDistribution::epsilon_for_delta`].
pub fn pld_subsampled_gaussian_epsilon(
    relation: Neighbouring,
    q: f64,
    noise_multiplier: f64,
    steps: u64,
    delta: f64,
    discretization: f64,
) -> Result<f64, NoiseError> {
    PrivacyLossDistribution::subsampled_gaussian(relation, q, noise_multiplier, discretization)?
        .self_compose(steps)?
        .epsilon_for_delta(delta)
}

/// The smallest noise multiplier σ (rounded up, to a relative 10⁻⁹) for which `steps` steps
/// of the Poisson-subsampled Gaussian with rate `q` are (`epsilon`, `delta`)-DP for
/// `relation` by [`pld_subsampled_gaussian_epsilon`] at `discretization`: the PLD
/// counterpart of [`crate::smallest_noise_multiplier`]. The returned σ was checked to meet
/// the target. About 32 evaluations (each one PLD composition), starting from the RDP
/// accountant's σ.
pub fn pld_smallest_noise_multiplier(
    relation: Neighbouring,
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    discretization: f64,
) -> Result<f64, NoiseError> {
    check_rate(q)?;
    let epsilon = check_epsilon(epsilon)?;
    check_guarantee_delta(delta)?;
    check_discretization(discretization)?;
    if !(1..=MAX_COMPOSITIONS).contains(&steps) {
        return Err(NoiseError::UnsupportedParameters(format!(
            "steps must be in 1..={MAX_COMPOSITIONS}, got {steps}"
        )));
    }
    // Start from the RDP accountant's σ (milliseconds, and close: PLD's is 5–10% below).
    let start = crate::rdp::smallest_noise_multiplier(
        relation,
        q,
        steps,
        epsilon,
        delta,
        &crate::rdp::default_orders(),
    )
    .unwrap_or(1.0);
    smallest_scale_meeting(start, |sigma| {
        Ok(
            pld_subsampled_gaussian_epsilon(relation, q, sigma, steps, delta, discretization)?
                <= epsilon,
        )
    })
}

/// The smallest scale s > 0 (rounded up, to a relative 10⁻⁹) for which `meets(s)` holds,
/// for any accountant whose guarantee improves with s (more noise): doubles or halves from
/// `start` (finite, > 0; a good guess saves evaluations and keeps them away from scales
/// the accountant cannot evaluate cheaply) to bracket the boundary, then bisects in log
/// scale: about 32 evaluations from a guess within a factor 2. The returned s was checked:
/// `meets(s)` returned `Ok(true)`. If `meets` is not monotone the result still meets it but
/// need not be the smallest. Errors from `meets` are passed on; no s in
/// `[start·10⁻⁹, 10¹²]` meeting it is an error (below `start·10⁻⁹` the smallest s met is
/// returned).
///
/// ```
/// use dp_noise::{PrivacyLossDistribution, smallest_scale_meeting};
///
/// # fn main() -> Result<(), dp_noise::NoiseError> {
/// // The Gaussian mechanism's σ for (1, 10⁻⁵)-DP at sensitivity 1.
/// let sigma = smallest_scale_meeting(1.0, |sigma| {
///     Ok(PrivacyLossDistribution::gaussian(1.0 / sigma, 1e-4)?.epsilon_for_delta(1e-5)? <= 1.0)
/// })?;
/// assert!((sigma - 3.73).abs() < 0.01);
/// # Ok(())
/// # }
/// ```
pub fn smallest_scale_meeting(
    start: f64,
    mut meets: impl FnMut(f64) -> Result<bool, NoiseError>,
) -> Result<f64, NoiseError> {
    let start = check_positive_ratio(start)?;
    let (mut lo, mut hi);
    if meets(start)? {
        hi = start;
        lo = start / 2.0;
        while meets(lo)? {
            hi = lo;
            lo /= 2.0;
            if lo < start * 1e-9 {
                return Ok(hi);
            }
        }
    } else {
        lo = start;
        hi = start * 2.0;
        while !meets(hi)? {
            lo = hi;
            hi *= 2.0;
            if hi > 1e12 {
                return Err(NoiseError::UnsupportedParameters(
                    "no scale up to 1e12 meets the target".to_owned(),
                ));
            }
        }
    }
    while hi / lo > 1.0 + 1e-9 {
        let mid = (lo * hi).sqrt();
        if meets(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// [`pld_smallest_noise_multiplier`] to a stated tolerance, in fewer evaluations: a noise
/// multiplier σ checked to meet the target — `steps` steps of the Poisson-subsampled
/// Gaussian with rate `q` are (`epsilon`, `delta`)-DP for `relation` by
/// [`pld_subsampled_gaussian_epsilon`] at `discretization` — and within about `tolerance`
/// (relative, in [10⁻⁹, 0.1]) of the smallest such σ: the search stops once the ε at the
/// returned σ is at least `(1 − tolerance)·epsilon`, or once the bracket is that narrow
/// (ε falls about in proportion to 1/σ, so σ is then within about `tolerance` of the
/// boundary). The bracket starts at 0.92 × the RDP accountant's σ (PLD's is 5–10% below
/// it at DP-SGD's usual settings) and is refined by the Illinois variant of regula falsi
/// on `ln ε` against `ln σ`: 4–8 PLD evaluations at 10⁻³ where the plain bisection of
/// [`pld_smallest_noise_multiplier`] takes about 32.
///
/// # Privacy
/// Only the returned σ's guarantee matters, and it was evaluated: `ε(σ) ≤ epsilon`.
pub fn pld_smallest_noise_multiplier_within(
    relation: Neighbouring,
    q: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
    discretization: f64,
    tolerance: f64,
) -> Result<f64, NoiseError> {
    check_rate(q)?;
    let target = check_epsilon(epsilon)?;
    check_guarantee_delta(delta)?;
    check_discretization(discretization)?;
    if !(1e-9..=0.1).contains(&tolerance) {
        return Err(NoiseError::UnsupportedParameters(format!(
            "tolerance must be in [1e-9, 0.1], got {tolerance:?}"
        )));
    }
    if !(1..=MAX_COMPOSITIONS).contains(&steps) {
        return Err(NoiseError::UnsupportedParameters(format!(
            "steps must be in 1..={MAX_COMPOSITIONS}, got {steps}"
        )));
    }
    let rdp = crate::rdp::smallest_noise_multiplier(
        relation,
        q,
        steps,
        epsilon,
        delta,
        &crate::rdp::default_orders(),
    )
    .unwrap_or(1.0);
    // f(σ) = ln(ε(σ)/target): the target is met where f ≤ 0 (ε = 0 gives −∞).
    let f = |sigma: f64| -> Result<f64, NoiseError> {
        let e = pld_subsampled_gaussian_epsilon(relation, q, sigma, steps, delta, discretization)?;
        Ok((e / target).ln())
    };
    let close = (1.0 - tolerance).ln();
    let start = rdp * 0.92;
    let (mut lo, mut hi) = (start, start);
    let (mut f_lo, mut f_hi);
    let f_start = f(start)?;
    if f_start <= 0.0 {
        f_hi = f_start;
        loop {
            if f_hi >= close {
                return Ok(hi);
            }
            lo = hi * 0.9;
            f_lo = f(lo)?;
            if f_lo > 0.0 {
                break;
            }
            (hi, f_hi) = (lo, f_lo);
            if hi < start * 1e-9 {
                return Ok(hi);
            }
        }
    } else {
        f_lo = f_start;
        loop {
            hi = lo * 1.25;
            f_hi = f(hi)?;
            if f_hi <= 0.0 {
                break;
            }
            (lo, f_lo) = (hi, f_hi);
            if hi > 1e12 {
                return Err(NoiseError::UnsupportedParameters(
                    "no noise multiplier up to 1e12 meets the target".to_owned(),
                ));
            }
        }
    }
    // Illinois: the secant of the bracket's (possibly halved) end values, kept inside the
    // middle 90% of the bracket; halve the value of an end kept twice in a row.
    let (mut g_lo, mut g_hi, mut side) = (f_lo, f_hi, 0i8);
    while f_hi < close && hi / lo > 1.0 + tolerance {
        let (x_lo, x_hi) = (lo.ln(), hi.ln());
        let width = x_hi - x_lo;
        let secant = x_hi - g_hi * width / (g_hi - g_lo);
        let x = if secant.is_finite() {
            secant.clamp(x_lo + 0.05 * width, x_hi - 0.05 * width)
        } else {
            x_lo + 0.5 * width
        };
        let sigma = x.exp();
        let value = f(sigma)?;
        if value <= 0.0 {
            (hi, f_hi, g_hi) = (sigma, value, value);
            if side == 1 {
                g_lo /= 2.0;
            }
            side = 1;
        } else {
            (lo, g_lo) = (sigma, value);
            if side == -1 {
                g_hi /= 2.0;
            }
            side = -1;
        }
    }
    Ok(hi)
}

/// Which computation a subsampled Gaussian uses: the correct one, or (tests only) a mutant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Variant {
    Correct,
    /// Replace-one's P without its sampled component `q·N(−1, σ²)` (tests only).
    #[cfg(test)]
    MissingComponent,
}

/// The dominating pairs of the Poisson-subsampled Gaussian (see
/// [`PrivacyLossDistribution::subsampled_gaussian`]).
struct Subsampled {
    q: f64,
    sigma: f64,
    ln_q: f64,
    ln_p: f64,
    variant: Variant,
}

impl Subsampled {
    fn new(q: f64, sigma: f64, variant: Variant) -> Self {
        Self {
            q,
            sigma,
            ln_q: q.ln(),
            ln_p: (-q).ln_1p(),
            variant,
        }
    }

    /// `ln((1−q) + q·e^{(2x−1)/(2σ²)})`: the remove ordering's loss at x.
    fn remove_loss(&self, x: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        log_add(self.ln_p, self.ln_q + (2.0 * x - 1.0) / (2.0 * s2))
    }

    /// Replace-one's loss at x (decreasing in x).
    fn replace_loss(&self, x: f64) -> f64 {
        let s2 = self.sigma * self.sigma;
        log_add(self.ln_p, self.ln_q - (2.0 * x + 1.0) / (2.0 * s2))
            - log_add(self.ln_p, self.ln_q + (2.0 * x - 1.0) / (2.0 * s2))
    }

    /// δ(ε) and an error bound, remove ordering: `P = (1−q)N(0) + qN(1)`, `Q = N(0)`.
    fn remove_delta(&self, eps: f64) -> (f64, f64) {
        if self.q < 1.0 && eps <= self.ln_p {
            // S = everything.
            return (-eps.exp_m1(), 4.0 * U);
        }
        // e^ε − 1 + q > 0 here; its log without overflow.
        let ln_c = ln_expm1_plus(eps, self.q);
        let x = self.sigma * self.sigma * (ln_c - self.ln_q) + 0.5;
        let t1 = Term::new(self.ln_q, ln_phi(-(x - 1.0) / self.sigma));
        let t2 = Term::new(ln_c, ln_phi(-x / self.sigma));
        combine(&[(1.0, t1), (-1.0, t2)])
    }

    /// δ(ε), add ordering: `P = N(0)`, `Q = (1−q)N(0) + qN(1)`; S = {x < x*}.
    fn add_delta(&self, eps: f64) -> (f64, f64) {
        if self.q < 1.0 && eps >= -self.ln_p {
            return (0.0, 0.0);
        }
        let ln_c = ln_expm1_plus(-eps, self.q);
        let x = self.sigma * self.sigma * (ln_c - self.ln_q) + 0.5;
        // δ = (1 − (1−q)e^ε)·Φ(x*/σ) − q·e^ε·Φ((x*−1)/σ), with 1 − (1−q)e^ε > 0 here.
        let coefficient = -(self.ln_p + eps).exp_m1();
        let t1 = Term::new(coefficient.ln(), ln_phi(x / self.sigma));
        let t2 = Term::new(self.ln_q + eps, ln_phi((x - 1.0) / self.sigma));
        combine(&[(1.0, t1), (-1.0, t2)])
    }

    /// δ(ε), replace-one: `P = (1−q)N(0) + qN(−1)`, `Q = (1−q)N(0) + qN(1)`; S = {x < x*}.
    fn replace_delta(&self, eps: f64) -> (f64, f64) {
        let (q, sigma) = (self.q, self.sigma);
        let s2 = sigma * sigma;
        // Solve a·t² + b·t − c = 0 for t = e^{x/σ²} > 0, in logs where the scale is extreme:
        // a = e^ε·q·κ, b = (e^ε − 1)(1 − q), c = q·κ, κ = e^{−1/(2σ²)}.
        let ln_kappa = -1.0 / (2.0 * s2);
        let ln_c = self.ln_q + ln_kappa;
        let ln_a = eps + ln_c;
        let b = eps.exp_m1() * (1.0 - q);
        // √(b² + 4ac) = |b|·√(1 + r), r = 4ac/b², all in logs.
        let ln_t = if b == 0.0 {
            // t = √(c/a) = e^{−ε/2}.
            -eps / 2.0
        } else {
            let ln_b = b.abs().ln();
            let ln_4ac = 4f64.ln() + ln_a + ln_c;
            let ln_root = if ln_4ac - 2.0 * ln_b > 0.0 {
                ln_4ac / 2.0 + (2.0 * ln_b - ln_4ac).exp().ln_1p() / 2.0
            } else {
                ln_b + (ln_4ac - 2.0 * ln_b).exp().ln_1p() / 2.0
            };
            if b > 0.0 {
                // t = 2c/(b + √D).
                2f64.ln() + ln_c - log_add(ln_b, ln_root)
            } else {
                // t = (−b + √D)/(2a) = (|b| + √D)/(2a).
                log_add(ln_b, ln_root) - 2f64.ln() - ln_a
            }
        };
        let x = s2 * ln_t;
        // δ = (1−q)(1 − e^ε)Φ(x/σ) + qΦ((x+1)/σ) − e^ε·qΦ((x−1)/σ).
        let sign = if eps > 0.0 { -1.0 } else { 1.0 };
        let t0 = Term::new(self.ln_p + eps.exp_m1().abs().ln(), ln_phi(x / sigma));
        let t1 = Term::new(self.ln_q, ln_phi((x + 1.0) / sigma));
        let t2 = Term::new(self.ln_q + eps, ln_phi((x - 1.0) / sigma));
        match self.variant {
            Variant::Correct => combine(&[(sign, t0), (1.0, t1), (-1.0, t2)]),
            #[cfg(test)]
            Variant::MissingComponent => combine(&[(sign, t0), (-1.0, t2)]),
        }
    }
}

/// A term `e^{ln_coefficient + ln_phi.0}` with the relative error of its Φ.
#[derive(Debug, Clone, Copy)]
struct Term {
    ln: f64,
    relative_error: f64,
}

impl Term {
    fn new(ln_coefficient: f64, (ln_phi, relative_error): (f64, f64)) -> Self {
        Self {
            ln: ln_coefficient + ln_phi,
            relative_error,
        }
    }
}

/// `Σ sign·e^{term}`, clamped to [0, 1], with an absolute error bound.
fn combine(terms: &[(f64, Term)]) -> (f64, f64) {
    let mut value = 0.0;
    let mut error = THRESHOLD_ERROR;
    for &(sign, term) in terms {
        let magnitude = term.ln.exp();
        if magnitude.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        if magnitude == 0.0 {
            continue;
        }
        value += sign * magnitude;
        // exp of a rounded sum of logs errs by a few ulps of the log's magnitude.
        let exp_error = 4.0 * U * (term.ln.abs() + 1.0);
        error += (term.relative_error + DELTA_RELATIVE_ERROR + exp_error) * magnitude;
    }
    (value.clamp(0.0, 1.0), error)
}

/// `ln(e^a + e^b)`.
fn log_add(a: f64, b: f64) -> f64 {
    let (big, small) = if a >= b { (a, b) } else { (b, a) };
    if small == f64::NEG_INFINITY {
        return big;
    }
    big + (small - big).exp().ln_1p()
}

/// `ln(e^x − 1 + q)` for `e^x − 1 + q > 0`, without overflow.
fn ln_expm1_plus(x: f64, q: f64) -> f64 {
    if x > 30.0 {
        x + (-(1.0 - q) * (-x).exp()).ln_1p()
    } else {
        // At the boundary `e^x − 1 + q` may round to ≤ 0: the threshold is then −∞ (S is
        // every output), which the callers' formulas handle.
        let c = x.exp_m1() + q;
        if c > 0.0 { c.ln() } else { f64::NEG_INFINITY }
    }
}

/// `ln Φ(y)` (standard normal CDF) and its relative error bound (on Φ): erfc's, plus the
/// effect of y's own rounding (a few ulps of |y|, which moves Φ by the relative
/// `φ(y)/Φ(y)·|Δy| ≤ (|y| + 1)·|Δy|`).
fn ln_phi(y: f64) -> (f64, f64) {
    if y >= -35.0 {
        let value = 0.5 * libm::erfc(-y / std::f64::consts::SQRT_2);
        let argument = 8.0 * U * (y.abs() + 1.0) * (y.abs() + 1.0);
        (value.ln(), DELTA_RELATIVE_ERROR + argument)
    } else {
        // Φ(y) = φ(y)/|y|·(1 − 1/y² + 3/y⁴ − …), an alternating asymptotic series.
        let y2 = y * y;
        let series = 1.0 - 1.0 / y2 + 3.0 / (y2 * y2);
        let ln = -y2 / 2.0 - (-y * (2.0 * std::f64::consts::PI).sqrt()).ln() + series.ln();
        (ln, ASYMPTOTIC_RELATIVE_ERROR)
    }
}

/// The Gaussian mechanism's exact δ(ε) at `s = Δ/σ` (Balle & Wang 2018) and an error bound.
fn gaussian_delta(s: f64, eps: f64) -> (f64, f64) {
    let t1 = Term::new(0.0, ln_phi(s / 2.0 - eps / s));
    let t2 = Term::new(eps, ln_phi(-s / 2.0 - eps / s));
    combine(&[(1.0, t1), (-1.0, t2)])
}

/// The Laplace mechanism's exact δ(ε) at `ε₀ = Δ/b`.
fn laplace_delta(eps0: f64, eps: f64) -> (f64, f64) {
    let value = if eps >= eps0 {
        0.0
    } else if eps <= -eps0 {
        -eps.exp_m1()
    } else {
        -((eps - eps0) / 2.0).exp_m1()
    };
    (value, 4.0 * U * value)
}

/// Randomized response's exact δ(ε') at ε.
fn pure_delta(eps: f64, e: f64) -> (f64, f64) {
    let p = 1.0 / (1.0 + (-eps).exp());
    let up = if e < eps { -(e - eps).exp_m1() } else { 0.0 };
    let down = if e < -eps { -(e + eps).exp_m1() } else { 0.0 };
    let value = p * up + (1.0 - p) * down;
    (value, 8.0 * U * value)
}

/// The connect-the-dots law of a mechanism with δ-curve `delta` (value and absolute error
/// bound) and the reversed pair's curve `reverse`, on the grid points from `⌊low/h⌋·h` to
/// `⌈high/h⌉·h`.
fn connect_the_dots(
    h: f64,
    low: f64,
    high: f64,
    delta: impl Fn(f64) -> (f64, f64),
    reverse: impl Fn(f64) -> (f64, f64),
) -> Result<Pmf, NoiseError> {
    let (lo, hi) = ((low / h).floor(), (high / h).ceil());
    let count = hi - lo + 1.0;
    if !(lo.is_finite() && hi.is_finite() && count.is_finite()) || count > MAX_ATOMS as f64 {
        return Err(too_many_atoms(count, h));
    }
    let (lo, n) = (lo as i64, count as usize);
    let mut deltas = Vec::with_capacity(n);
    let mut error = 0.0f64;
    for i in 0..n {
        let (value, bound) = delta((lo + i as i64) as f64 * h);
        if !(value.is_finite() && bound.is_finite()) {
            return Err(NoiseError::UnsupportedParameters(format!(
                "the privacy-loss curve could not be evaluated at epsilon {:?} (parameters \
                 too extreme for the discretized accountant)",
                (lo + i as i64) as f64 * h
            )));
        }
        deltas.push(value);
        error = error.max(bound);
    }
    // Grid points are i·h exactly; δ was evaluated at the rounded fl(i·h), off by at most
    // u·|i·h|, which moves δ by at most as much (|dδ/dε| = e^ε·Q(S) ≤ 1).
    let widest = ((lo.abs().max((lo + n as i64 - 1).abs())) as f64 * h).abs();
    error += U * (widest + 1.0);
    // Below ε = 0 the masses come from `g(ε) = δ(ε) − (1 − e^ε) = e^ε·δ_rev(−ε)` (the
    // reversed pair's curve; the mass formula annihilates `1 − e^ε`), which is small where δ
    // is near 1: the δ_i's rounding, divided by e^h − 1 in the masses, would otherwise put
    // ~u/h of spurious mass on every atom of the lower tail.
    let g: Vec<f64> = (0..n)
        .map(|i| {
            let eps = (lo + i as i64) as f64 * h;
            if eps < h {
                let (value, _) = reverse(-eps);
                eps.exp() * value
            } else {
                0.0
            }
        })
        .collect();
    let mut masses = vec![0.0; n];
    if n == 1 {
        masses[0] = 1.0 - deltas[0];
    } else {
        let (em1, e) = (h.exp_m1(), h.exp());
        let first_eps = lo as f64 * h;
        masses[0] = if first_eps < 0.0 {
            -g[0] + (g[1] - g[0]) / em1
        } else {
            (1.0 - deltas[0]) + (deltas[1] - deltas[0]) / em1
        };
        for i in 1..n - 1 {
            let v = if ((lo + i as i64) as f64 * h) < 0.0 {
                &g
            } else {
                &deltas
            };
            let (up, down) = (v[i + 1] - v[i], v[i] - v[i - 1]);
            masses[i] = (up - e * down) / em1;
            // The values' rounding (a few ulps each) divided by e^h − 1: a mass below that
            // floor is indistinguishable from 0 (randomized response's interior, a curve
            // linear in e^ε) and set to 0. What this changes is measured below.
            let floor = 16.0 * U * (v[i - 1] + v[i] + v[i + 1]) * e / em1;
            if masses[i] <= floor {
                masses[i] = 0.0;
            }
        }
        masses[n - 1] = (deltas[n - 2] - deltas[n - 1]) * e / em1;
    }
    for m in &mut masses {
        // Raising a mass raises the δ-curve.
        *m = m.max(0.0);
    }
    // The masses' own rounding (a difference of differences over e^h − 1, amplified up to
    // 1/h) is not bounded a priori but measured: the δ-curve of the computed masses at every
    // grid point, `D_k = Σ_{j>k} ω_j (1 − e^{(k−j)h})`, by the recurrence
    // `D_{k−1} = e^{−h}·D_k + (1 − e^{−h})·(ω_k + Σ_{j>k} ω_j)` (terms ≥ 0: no
    // cancellation), against the δ_i. Between grid points both are linear in e^ε, so the
    // largest shortfall at the grid points, added at +∞, covers every ε ≥ the lowest point
    // (and the chord below it). The recurrence runs in double-double arithmetic, e^{−h}
    // included: in doubles its rounding, and e^{−h}'s, compound over the n steps to a
    // relative n·u (10⁻¹¹ at 10⁵ atoms, which the shortfall would then have to carry); in
    // double-double they stay near n·u², far below the 4u allowed for the final rounding.
    let decay = DoubleDouble::exp_neg(h);
    let rise = DoubleDouble::from(1.0).add(decay.neg());
    let top = deltas[n - 1];
    let (mut curve, mut above) = (DoubleDouble::from(0.0), DoubleDouble::from(0.0));
    let mut shortfall = 0.0f64;
    for k in (1..n).rev() {
        above = above.add(DoubleDouble::from(masses[k]));
        curve = decay.mul(curve).add(rise.mul(above));
        let low = (curve.hi + curve.lo) * (1.0 - 4.0 * U);
        let gap = deltas[k - 1] - top - low + 4.0 * U * deltas[k - 1];
        shortfall = shortfall.max(gap);
    }
    let mut pmf = Pmf {
        h,
        lowest: lo,
        masses,
        // The computed δ_i are within `error` of the true ones.
        infinity: ((top + shortfall + error) * (1.0 + 4.0 * U)).next_up(),
    };
    pmf.ensure_total();
    pmf.truncate();
    Ok(pmf)
}

/// A double-double number `hi + lo` (|lo| at most half an ulp of hi): error-free
/// transformations (Knuth's TwoSum, Dekker's product by splitting, no FMA needed), for the one
/// recurrence whose rounding would otherwise grow with the number of grid points.
#[derive(Debug, Clone, Copy)]
struct DoubleDouble {
    hi: f64,
    lo: f64,
}

impl DoubleDouble {
    fn from(x: f64) -> Self {
        Self { hi: x, lo: 0.0 }
    }

    fn neg(self) -> Self {
        Self {
            hi: -self.hi,
            lo: -self.lo,
        }
    }

    fn add(self, other: Self) -> Self {
        let (s, e) = two_sum(self.hi, other.hi);
        let (hi, lo) = fast_two_sum(s, e + self.lo + other.lo);
        Self { hi, lo }
    }

    fn mul(self, other: Self) -> Self {
        let (p, e) = two_product(self.hi, other.hi);
        let (hi, lo) = fast_two_sum(p, e + (self.hi * other.lo + self.lo * other.hi));
        Self { hi, lo }
    }

    fn div_f64(self, d: f64) -> Self {
        let q = self.hi / d;
        let (p, e) = two_product(q, d);
        let r = (self.hi - p - e + self.lo) / d;
        let (hi, lo) = fast_two_sum(q, r);
        Self { hi, lo }
    }

    /// `e^{−h}` for 0 < h ≤ 0.1 by its Taylor series in double-double (terms below 10⁻⁴⁰
    /// dropped: the series alternates and falls, so the rest is smaller still).
    fn exp_neg(h: f64) -> Self {
        let mut sum = Self::from(1.0);
        let mut term = Self::from(1.0);
        for k in 1..60 {
            term = term.mul(Self::from(-h)).div_f64(k as f64);
            sum = sum.add(term);
            if term.hi.abs() < 1e-40 {
                break;
            }
        }
        sum
    }
}

/// `a + b = s + e` exactly.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b = s + e` exactly, for |a| ≥ |b|.
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

/// `a·b = p + e` exactly (Dekker; |a|, |b| far below 2⁹⁹⁶).
fn two_product(a: f64, b: f64) -> (f64, f64) {
    let split = |x: f64| {
        let t = 134_217_729.0 * x;
        let hi = t - (t - x);
        (hi, x - hi)
    };
    let p = a * b;
    let ((ah, al), (bh, bl)) = (split(a), split(b));
    (p, ((ah * bh - p) + ah * bl + al * bh) + al * bl)
}

fn too_many_atoms(count: f64, h: f64) -> NoiseError {
    NoiseError::UnsupportedParameters(format!(
        "a privacy-loss distribution of {count:e} atoms at discretization {h:?} exceeds \
         MAX_ATOMS = {MAX_ATOMS}; use a coarser discretization"
    ))
}

impl Pmf {
    fn loss(&self, j: usize) -> f64 {
        (self.lowest + j as i64) as f64 * self.h
    }

    /// Raises the lowest atom so the total is at least 1 (plus the sum's rounding): the
    /// δ-curve below the lowest atom then stays above the chord from `(e^ε = 0, 1)`.
    fn ensure_total(&mut self) {
        let n = self.masses.len() as f64;
        let total: f64 = self.masses.iter().sum::<f64>() + self.infinity;
        let shortfall = 1.0 - total * (1.0 - (n + 2.0) * U);
        if shortfall > 0.0 {
            if let Some(first) = self.masses.first_mut() {
                *first += shortfall;
            } else {
                self.infinity += shortfall;
            }
        }
    }

    /// Drops exact zeros at both ends, moves at most `TAIL_MASS/2` from the top to `+∞` and
    /// at most `TAIL_MASS/2` from the bottom up to the lowest atom kept.
    fn truncate(&mut self) {
        let half = TAIL_MASS / 2.0;
        // Top.
        let mut end = self.masses.len();
        let mut dropped = 0.0;
        while end > 1 && dropped + self.masses[end - 1] <= half {
            dropped += self.masses[end - 1];
            end -= 1;
        }
        self.masses.truncate(end);
        self.infinity = (self.infinity + dropped).next_up();
        // Bottom.
        let mut start = 0;
        let mut moved = 0.0;
        while start + 1 < self.masses.len() && moved + self.masses[start] <= half {
            moved += self.masses[start];
            start += 1;
        }
        if start > 0 {
            self.masses.drain(..start);
            self.masses[0] += moved;
            self.lowest += start as i64;
        }
    }

    /// δ(ε) of this law, rounded up, at most 1.
    fn delta(&self, eps: f64) -> f64 {
        let (mut sum, mut above) = (0.0f64, 0.0f64);
        let mut count = 0usize;
        for j in (0..self.masses.len()).rev() {
            let y = self.loss(j);
            if y <= eps {
                break;
            }
            sum += self.masses[j] * -(eps - y).exp_m1();
            above += self.masses[j];
            count += 1;
        }
        let total = sum + self.infinity;
        // Terms ≥ 0: the sum errs by at most (count + 8) ulps of itself; the losses
        // (lowest + j)·h are rounded by at most u·|y|, which moves each term by at most
        // `e^{ε−y}·u·|y| ≤ u·|y|` of its mass.
        let top = self.loss(self.masses.len().saturating_sub(1)).abs();
        let positions = 2.0 * U * (top + eps.abs() + 1.0) * above;
        (total * (1.0 + (count as f64 + 8.0) * U) + positions)
            .next_up()
            .min(1.0)
    }

    /// The smallest ε ≥ 0 with `self.delta(ε) ≤ delta`, rounded up (checked).
    fn epsilon(&self, delta: f64) -> f64 {
        if self.infinity >= delta {
            return f64::INFINITY;
        }
        if self.delta(0.0) <= delta {
            return 0.0;
        }
        // Scan down from the top: on [y_{j−1}, y_j] the curve is A − e^ε·B, with A the mass
        // above (∞ included) and B = Σ ω e^{−y} over the atoms at or above y_j.
        let (mut a, mut b) = (self.infinity, 0.0f64);
        let mut estimate = 0.0;
        for j in (0..self.masses.len()).rev() {
            let y = self.loss(j);
            a += self.masses[j];
            b += self.masses[j] * (-y).exp();
            let below = if j > 0 {
                self.loss(j - 1)
            } else {
                f64::NEG_INFINITY
            };
            let at_below = if below.is_finite() {
                a - below.exp() * b
            } else {
                a
            };
            if at_below > delta || below <= 0.0 {
                // The solution lies in [below, y].
                estimate = if b > 0.0 { ((a - delta) / b).ln() } else { y };
                estimate = estimate.clamp(below.max(0.0), y);
                break;
            }
        }
        // Raise until the rounded-up δ-curve confirms it.
        let mut step = (estimate.abs() * 1e-13).max(1e-15);
        let mut eps = estimate;
        for _ in 0..200 {
            if self.delta(eps) <= delta {
                return eps.max(0.0);
            }
            eps += step;
            step *= 2.0;
        }
        f64::INFINITY
    }
}

/// `a^times` by repeated squaring.
fn power(base: &Pmf, times: u64, planner: &mut FftPlanner<f64>) -> Result<Pmf, NoiseError> {
    let mut result: Option<Pmf> = None;
    let mut square = base.clone();
    let mut k = times;
    loop {
        if k & 1 == 1 {
            result = Some(match result {
                None => square.clone(),
                Some(r) => convolve(&r, &square, planner)?,
            });
        }
        k >>= 1;
        if k == 0 {
            break;
        }
        square = convolve(&square, &square, planner)?;
    }
    Ok(result.expect("times >= 1"))
}

/// The law of the sum of two independent losses, truncated, with its error bound added at
/// `+∞`.
fn convolve(a: &Pmf, b: &Pmf, planner: &mut FftPlanner<f64>) -> Result<Pmf, NoiseError> {
    let n = a.masses.len() + b.masses.len() - 1;
    if n > MAX_ATOMS {
        return Err(too_many_atoms(n as f64, a.h));
    }
    let (total_a, total_b) = (a.masses.iter().sum::<f64>(), b.masses.iter().sum::<f64>());
    let (mut masses, error) = if a.masses.len().min(b.masses.len()) <= DIRECT_CONVOLUTION {
        let mut out = vec![0.0; n];
        for (i, &x) in a.masses.iter().enumerate() {
            for (j, &y) in b.masses.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        // Each output sums at most min(len) products of terms ≥ 0.
        let terms = a.masses.len().min(b.masses.len()) as f64;
        (out, (terms + 2.0) * U * total_a * total_b)
    } else {
        fft_convolve(&a.masses, &b.masses, planner)
    };
    for m in &mut masses {
        *m = m.max(0.0);
    }
    // Pairs involving +∞, and the error bound.
    let infinity = a.infinity * (total_b + b.infinity) + total_a * b.infinity;
    let infinity = ((infinity + error) * (1.0 + 8.0 * U)).next_up();
    let mut out = Pmf {
        h: a.h,
        lowest: a.lowest + b.lowest,
        masses,
        infinity,
    };
    out.truncate();
    Ok(out)
}

/// The linear convolution of two nonnegative sequences by one complex FFT of size
/// N = next power of two (a packed as the real part, b as the imaginary part), and a bound
/// on the total absolute error of the result.
fn fft_convolve(a: &[f64], b: &[f64], planner: &mut FftPlanner<f64>) -> (Vec<f64>, f64) {
    let n = a.len() + b.len() - 1;
    let size = n.next_power_of_two();
    let mut z: Vec<Complex<f64>> = (0..size)
        .map(|i| {
            Complex::new(
                a.get(i).copied().unwrap_or(0.0),
                b.get(i).copied().unwrap_or(0.0),
            )
        })
        .collect();
    planner.plan_fft_forward(size).process(&mut z);
    // A_k = (Z_k + conj Z_{−k})/2, B_k = (Z_k − conj Z_{−k})/(2i); C_k = A_k·B_k.
    let mut c: Vec<Complex<f64>> = (0..size)
        .map(|k| {
            let zk = z[k];
            let zm = z[(size - k) % size].conj();
            let ak = (zk + zm) * 0.5;
            let bk = (zk - zm) * Complex::new(0.0, -0.5);
            ak * bk
        })
        .collect();
    planner.plan_fft_inverse(size).process(&mut c);
    let scale = 1.0 / size as f64;
    let out = c[..n].iter().map(|v| v.re * scale).collect();
    let norm1 = |v: &[f64]| v.iter().sum::<f64>();
    let norm2 = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let product = (norm1(a) * norm2(b)).min(norm2(a) * norm1(b));
    let log2 = (size as f64).log2().max(1.0);
    let error = 8.0 * U * log2 * (size as f64).sqrt() * product * (1.0 + 1e-6);
    (out, error)
}

fn check_discretization(h: f64) -> Result<f64, NoiseError> {
    if h.is_finite() && (MIN_DISCRETIZATION..=MAX_DISCRETIZATION).contains(&h) {
        Ok(h)
    } else {
        Err(NoiseError::UnsupportedParameters(format!(
            "the discretization interval must be in [{MIN_DISCRETIZATION:e}, \
             {MAX_DISCRETIZATION}], got {h:?}"
        )))
    }
}

fn check_positive_ratio(ratio: f64) -> Result<f64, NoiseError> {
    if ratio.is_finite() && ratio > 0.0 {
        Ok(ratio)
    } else {
        Err(NoiseError::InvalidScale(ratio))
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

#[cfg(test)]
#[path = "pld_tests.rs"]
mod tests;
