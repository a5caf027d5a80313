//! The exponential projected walk (Dwork & Feldman 2018, Section 5; docs/src/reference/algorithms.md §7.5):
//! private predictions for thresholds and unions of intervals on an ordered domain.

use dp_noise::{ExponentialMechanism, ReleaseRng};

use crate::error::{PredictError, check_epsilon};
use crate::line::LineData;

/// Parameters of the exponential projected walk: the per-query ε and the floor α.
///
/// Build with [`WalkParams::new`] (which checks both), then [`WalkParams::fit`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WalkParams {
    epsilon: f64,
    alpha: f64,
}

impl WalkParams {
    /// Per-query `epsilon` (finite, in (0, 1000]) and floor `alpha ∈ (0, ½)`: every answer
    /// is 1 with probability in `[α, 1 − α]`.
    pub fn new(epsilon: f64, alpha: f64) -> Result<Self, PredictError> {
        let epsilon = check_epsilon(epsilon)?;
        if !(alpha > 0.0 && alpha < 0.5) {
            return Err(PredictError::InvalidParameter {
                what: "alpha",
                value: alpha,
                requirement: "in (0, 1/2)",
            });
        }
        let params = Self { epsilon, alpha };
        // The walk's arithmetic (±m plus integer offsets) is exact only while m < 2⁵²;
        // beyond it (ε ≲ 1e-15) a step could round away and the privacy proof fail. Both
        // parameters set m: the error names the clamp they give, not one of them.
        let clamp = params.clamp_bound();
        if clamp.is_nan() || clamp >= 2f64.powi(52) {
            return Err(PredictError::InvalidParameter {
                what: "walk clamp (2/epsilon)·ln((1-alpha)/alpha)",
                value: clamp,
                requirement: "below 2^52 (use a larger epsilon, or an alpha closer to 1/2)",
            });
        }
        Ok(params)
    }

    /// The ε of each answer.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The floor α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The clamp `m = (2/ε) ln((1−α)/α)`: the walk lives in `[−m, m]`, and at `±m` the
    /// answer's probability is exactly `1 − α` or `α`.
    pub fn clamp_bound(&self) -> f64 {
        let odds = (1.0 - self.alpha) / self.alpha;
        // Below α ≈ 5.6e-309 the odds overflow: the same logarithm as a difference.
        let log_odds = if odds.is_finite() {
            odds.ln()
        } else {
            (-self.alpha).ln_1p() - self.alpha.ln()
        };
        2.0 / self.epsilon * log_odds
    }

    /// Precomputes the walk at every data point (O(n) after the sort [`LineData`] did).
    pub fn fit(&self, data: &LineData) -> Result<ExponentialWalk, PredictError> {
        ExponentialWalk::build(*self, data, WalkMutation::None)
    }
}

/// Points per block of the walk's two-level search.
const BLOCK: usize = 32;

/// Test-only breakages of the walk, each a plausible bug the exact privacy test must catch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkMutation {
    /// The walk as specified.
    None,
    /// Steps of ±2 instead of ±1.
    #[cfg_attr(not(test), allow(dead_code))]
    DoubleStep,
    /// A clamp that, once reached, never lets go (not 1-Lipschitz).
    #[cfg_attr(not(test), allow(dead_code))]
    AbsorbingClamp,
    /// Log-odds `ε·v` instead of `ε·v/2`.
    #[cfg_attr(not(test), allow(dead_code))]
    FullEpsilonLogOdds,
}

/// A trained exponential projected walk: answers "label of `x`" for any point `x` of the
/// line in `O(log n)` (a binary search in the precomputed walk, then one exact draw).
///
/// For a query `x` the walk value is
/// ```text
/// v ← −m;  for each (x_i, y_i) with x_i ≤ x, in sorted order:  v ← clamp(v + (2y_i − 1), −m, m)
/// ```
/// and the answer is 1 with probability `1 / (1 + exp(−ε v / 2))`, which lies in
/// `[α, 1 − α]`. On data labelled by a threshold the walk sits at `−m` left of it and climbs
/// to `m` within about `2m` points right of it; unions of `k` intervals work the same way,
/// with about `2k·m` points of error around the label switches.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data, for neighbouring datasets
/// that differ in one example (replace one: delete one, insert another). Each step of the
/// walk is a translation followed by a clamp, a 1-Lipschitz map of `v`; deleting one
/// example removes one step and so moves the final `v` by at most 1, inserting one moves
/// it by at most 1 more (the other examples keep their relative order: see [`LineData`]).
/// The log-odds `ε v / 2` therefore move by at most `ε`, and so does `ln P[answer]` for
/// either answer. Answering `q` queries costs `q·ε` (basic composition): use a
/// [`crate::PredictionInterface`], which charges it.
///
/// The bit is drawn exactly by [`dp_noise::ExponentialMechanism`] over the two labels with
/// utilities `(0, v)` at ε and sensitivity 1 (probability ∝ `exp(ε u / 2)`): `v` is snapped
/// to a grid `g = 2⁻²⁰` and the coefficient rounded down to `ε/(2S)`, `S = 1/g + 1`; a
/// change of 2 in `v` moves the snapped value by at most `2/g + 1 ≤ 2S` steps, so the
/// sampled law keeps the ε bound. The walk itself is tracked with an integer offset from
/// the clamp it last touched, so its value carries a single rounding.
///
/// The guarantee covers the answer, not the running time of the draw (see
/// `ExponentialMechanism`). `Debug` prints the parameters and size, never the walk.
#[derive(Clone)]
pub struct ExponentialWalk {
    params: WalkParams,
    bound: f64,
    /// The sorted training points (labels are folded into `prefix`).
    points: Vec<f64>,
    /// Every `BLOCK`-th sorted point: a search here (small enough to stay in cache at
    /// n = 10⁶) narrows the search in `points` to one block of a few cache lines.
    index: Vec<f64>,
    /// `prefix[i]`: the walk after the first `i` sorted examples (`prefix[0] = −m`).
    prefix: Vec<f64>,
    selector: ExponentialMechanism,
}

impl ExponentialWalk {
    pub(crate) fn build(
        params: WalkParams,
        data: &LineData,
        mutation: WalkMutation,
    ) -> Result<Self, PredictError> {
        let bound = params.clamp_bound();
        // Twice the bound must be finite for the clamp test below; α ≥ 2^-1074 makes m at
        // most ~1500/ε, far inside.
        let span = 2.0 * bound;
        let step: u64 = if mutation == WalkMutation::DoubleStep {
            2
        } else {
            1
        };
        // State: `offset` integer steps up from −m (`at_top == false`) or down from +m.
        let mut at_top = false;
        let mut offset: u64 = 0;
        let mut absorbed = false;
        let mut prefix = Vec::with_capacity(data.len() + 1);
        let value = |at_top: bool, offset: u64| {
            if at_top {
                bound - offset as f64
            } else {
                -bound + offset as f64
            }
        };
        prefix.push(-bound);
        for &label in data.labels() {
            if !absorbed {
                // Moving towards the anchor's clamp, or away from it.
                let up = label;
                let towards_anchor = up == at_top;
                if towards_anchor {
                    offset = offset.saturating_sub(step);
                    if offset == 0 && mutation == WalkMutation::AbsorbingClamp {
                        absorbed = true;
                    }
                } else {
                    offset += step;
                    // Past the opposite clamp: clamp there and re-anchor. Exact: offset is
                    // an integer below 2^53 and span a float.
                    if offset as f64 >= span {
                        at_top = !at_top;
                        offset = 0;
                        if mutation == WalkMutation::AbsorbingClamp {
                            absorbed = true;
                        }
                    }
                }
            }
            prefix.push(value(at_top, offset));
        }
        let selector_epsilon = match mutation {
            WalkMutation::FullEpsilonLogOdds => 2.0 * params.epsilon,
            _ => params.epsilon,
        };
        Ok(Self {
            params,
            bound,
            points: data.points().to_vec(),
            index: data.points().iter().step_by(BLOCK).copied().collect(),
            prefix,
            selector: ExponentialMechanism::new(selector_epsilon, 1.0)?,
        })
    }

    /// The parameters.
    pub fn params(&self) -> WalkParams {
        self.params
    }

    /// The ε of each answer.
    pub fn epsilon(&self) -> f64 {
        self.params.epsilon
    }

    /// The clamp bound `m`.
    pub fn clamp_bound(&self) -> f64 {
        self.bound
    }

    /// Number of training examples.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Always false (empty data is refused).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The walk value at `x` (data-dependent: never release it).
    pub(crate) fn walk_value(&self, x: f64) -> Result<f64, PredictError> {
        check_query(x)?;
        Ok(self.prefix[self.count_at_most(x)])
    }

    /// How many training points are `≤ x`: the blocks whose first point is `≤ x`, then
    /// the points `≤ x` in the last of them (the points are sorted, so the count lies in
    /// that block).
    fn count_at_most(&self, x: f64) -> usize {
        let blocks = self.index.partition_point(|&p| p <= x);
        if blocks == 0 {
            return 0;
        }
        let start = (blocks - 1) * BLOCK;
        let end = (start + BLOCK).min(self.points.len());
        start + self.points[start..end].partition_point(|&p| p <= x)
    }

    /// One ε-DP answer for `x`: `true` for label 1. Does not charge a budget: see
    /// [`crate::PredictionInterface`].
    pub fn answer<R: ReleaseRng + ?Sized>(
        &self,
        x: f64,
        rng: &mut R,
    ) -> Result<bool, PredictError> {
        let v = self.walk_value(x)?;
        Ok(self.selector.select(&[0.0, v], rng)? == 1)
    }

    /// **Not private**: the exact probability that [`ExponentialWalk::answer`] returns
    /// `true` at `x`, as the sampler draws it (the grid-snapped law). A deterministic
    /// function of the data, for evaluation and tests; releasing it releases the walk.
    pub fn secret_probability_of_one(&self, x: f64) -> Result<f64, PredictError> {
        let v = self.walk_value(x)?;
        Ok(self.selector.selection_probabilities(&[0.0, v])?[1])
    }

    /// Both answers' exact probabilities `[P(false), P(true)]` at `x` (tests).
    #[cfg(test)]
    pub(crate) fn law(&self, x: f64) -> Result<[f64; 2], PredictError> {
        let v = self.walk_value(x)?;
        let p = self.selector.selection_probabilities(&[0.0, v])?;
        Ok([p[0], p[1]])
    }

    /// **Not private**: the textbook probability `1/(1 + exp(−ε v/2))` at `x` (idealized
    /// reals), which the sampled law matches to about `2⁻²⁰` relative in the exponent.
    pub fn secret_ideal_probability_of_one(&self, x: f64) -> Result<f64, PredictError> {
        let v = self.walk_value(x)?;
        // The selector's ε: the spec's unless a test mutant changed it.
        let scale = self.selector.epsilon();
        Ok(1.0 / (1.0 + (-scale * v / 2.0).exp()))
    }
}

pub(crate) fn check_query(x: f64) -> Result<f64, PredictError> {
    if x.is_finite() {
        Ok(x)
    } else {
        Err(PredictError::NonFinite {
            what: "query",
            index: 0,
            value: x,
        })
    }
}

impl std::fmt::Debug for ExponentialWalk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExponentialWalk")
            .field("epsilon", &self.params.epsilon)
            .field("alpha", &self.params.alpha)
            .field("clamp_bound", &self.bound)
            .field("len", &self.points.len())
            .finish_non_exhaustive()
    }
}

impl crate::PrivatePredictor for ExponentialWalk {
    type Query = f64;
    type Answer = bool;

    fn epsilon(&self) -> f64 {
        self.params.epsilon
    }

    fn check_query(&self, query: &f64) -> Result<(), PredictError> {
        check_query(*query).map(|_| ())
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &f64,
        rng: &mut R,
    ) -> Result<bool, PredictError> {
        self.answer(*query, rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::InsecureSeededRng;
    use rand::RngExt;

    /// The two-level search counts exactly what a plain search counts, ties and block
    /// edges included.
    #[test]
    fn two_level_search_matches_a_plain_count() {
        let mut rng = InsecureSeededRng::new(3);
        for n in [1, 2, 31, 32, 33, 64, 65, 1000] {
            let points: Vec<f64> = (0..n).map(|_| rng.random_range(0..50) as f64).collect();
            let labels = (0..n).map(|_| rng.random::<bool>()).collect();
            let data = LineData::new(points, labels).unwrap();
            let walk = WalkParams::new(1.0, 0.1).unwrap().fit(&data).unwrap();
            for k in -2..=102 {
                let x = k as f64 / 2.0;
                let plain = data.points().iter().filter(|&&p| p <= x).count();
                assert_eq!(walk.count_at_most(x), plain, "n = {n}, x = {x}");
            }
        }
    }
}
