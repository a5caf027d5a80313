//! Turning the votes of `k` models trained on disjoint parts into one private answer:
//! the soft majority (docs/src/reference/algorithms.md §7.1) and Laplace averaging (§7.2).

use dp_noise::{ExponentialMechanism, Laplace, ReleaseRng};
use rand::RngExt;

use crate::error::{PredictError, check_epsilon};
use crate::pool::{Drawn, NoiseSource, release_with};

/// Most parts (models) an aggregate accepts: keeps sums of quantized votes exact (see
/// [`quantize_vote`]) and the training loop finite.
pub const MAX_PARTS: usize = 1 << 20;

/// Test-only breakages of the aggregators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VoteMutation {
    /// As specified.
    None,
    /// Soft majority ∝ exp(ε·count) (the bug seen in a public implementation: 2ε-DP);
    /// Laplace averaging with half the noise.
    #[cfg_attr(not(test), allow(dead_code))]
    DoubledEpsilon,
}

/// The soft majority over two labels: answer `y` with probability ∝ `exp(ε·c_y/2)`, where
/// `c_y` counts the models voting `y`; for two labels `P[+1] = 1/(1 + exp(−ε(c₊ − c₋)/2))`.
///
/// # Privacy
/// **ε-DP** per answer with respect to the training data when the votes come from models
/// trained on disjoint parts (replace one example: one part changes, one model changes,
/// each count moves by at most 1). That is the exponential mechanism with utilities of
/// sensitivity 1, sampled exactly by [`dp_noise::ExponentialMechanism`] (Dwork & Feldman
/// 2018, Thm 4.1). Not `exp(ε·c_y)`: one example moves the *difference* of counts by 2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SoftMajority {
    epsilon: f64,
    selector: ExponentialMechanism,
}

impl SoftMajority {
    /// The ε-DP soft majority.
    pub fn new(epsilon: f64) -> Result<Self, PredictError> {
        Self::build(epsilon, VoteMutation::None)
    }

    pub(crate) fn build(epsilon: f64, mutation: VoteMutation) -> Result<Self, PredictError> {
        let epsilon = check_epsilon(epsilon)?;
        let selector_epsilon = match mutation {
            VoteMutation::None => epsilon,
            VoteMutation::DoubledEpsilon => 2.0 * epsilon,
        };
        Ok(Self {
            epsilon,
            selector: ExponentialMechanism::new(selector_epsilon, 1.0)?,
        })
    }

    /// The ε of each answer.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// Draws the answer (+1 or −1) for `positive` votes for +1 and `negative` for −1.
    pub fn choose<R: ReleaseRng + ?Sized>(
        &self,
        positive: usize,
        negative: usize,
        rng: &mut R,
    ) -> Result<f64, PredictError> {
        let chosen = self
            .selector
            .select(&[negative as f64, positive as f64], rng)?;
        Ok(if chosen == 1 { 1.0 } else { -1.0 })
    }

    /// The exact probability that [`SoftMajority::choose`] answers +1 for these votes (the
    /// law the sampler follows). The votes are secret; so is this number.
    pub fn probability_of_positive(
        &self,
        positive: usize,
        negative: usize,
    ) -> Result<f64, PredictError> {
        Ok(self
            .selector
            .selection_probabilities(&[negative as f64, positive as f64])?[1])
    }
}

impl SoftMajority {
    /// Both answers' exact probabilities `[P(−1), P(+1)]` (tests: `1 − p` would lose the
    /// small one to rounding).
    #[cfg(test)]
    pub(crate) fn law(&self, positive: usize, negative: usize) -> Result<[f64; 2], PredictError> {
        let p = self
            .selector
            .selection_probabilities(&[negative as f64, positive as f64])?;
        Ok([p[0], p[1]])
    }
}

/// Which number each model contributes to Laplace averaging.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VoteKind {
    /// 1 when the model predicts +1, else 0.
    #[default]
    Hard,
    /// `1/(1 + e^{−score})`: the model's score read as a probability (logistic regression).
    Sigmoid,
}

impl VoteKind {
    /// The vote in [0, 1] for a model score, quantized (see [`quantize_vote`]).
    pub fn vote(self, score: f64) -> f64 {
        match self {
            Self::Hard => {
                if score >= 0.0 {
                    1.0
                } else {
                    0.0
                }
            }
            Self::Sigmoid => quantize_vote(1.0 / (1.0 + (-score).exp())),
        }
    }
}

/// `h` clamped to [0, 1] (NaN to 0) and rounded down to a multiple of 2⁻³²: a sum of up to
/// [`MAX_PARTS`] such votes is exact in `f64` (every partial sum is a multiple of 2⁻³²
/// below 2²⁰), so replacing one vote moves the computed sum by at most 1, exactly.
pub fn quantize_vote(h: f64) -> f64 {
    let clamped = if h >= 0.0 { h.min(1.0) } else { 0.0 };
    (clamped * 4_294_967_296.0).floor() / 4_294_967_296.0
}

/// Laplace averaging (§7.2): `p = (1/k) Σ_j h_j(x)` with votes `h_j ∈ [0, 1]`,
/// `q = clip_[0,1](p + Lap(1/(kε)))`, answer +1 with probability `q`.
///
/// # Privacy
/// **ε-DP** per answer with respect to the training data, votes from models trained on
/// disjoint parts (replace one example: one vote moves by at most 1, the sum of votes by
/// at most 1). The sum is released with dp-noise's snapping [`Laplace`] (sensitivity 1,
/// grid `2⁻²⁰`, exact discrete noise); `q` and the label are post-processing of it. The
/// votes are quantized so that the computed sum is exact ([`quantize_vote`]). Excess error
/// over the average vote is at most about `1/(kε)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaplaceAverage {
    epsilon: f64,
    parts: usize,
    laplace: Laplace,
}

/// An answer released with a noisy probability.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AveragedAnswer {
    /// `q`, the released (noisy, clipped) fraction of votes for +1.
    pub probability: f64,
    /// The label drawn with `P[+1] = q`.
    pub label: f64,
}

impl LaplaceAverage {
    /// ε-DP averaging of `parts` votes (1 to [`MAX_PARTS`]).
    pub fn new(epsilon: f64, parts: usize) -> Result<Self, PredictError> {
        Self::build(epsilon, parts, VoteMutation::None)
    }

    pub(crate) fn build(
        epsilon: f64,
        parts: usize,
        mutation: VoteMutation,
    ) -> Result<Self, PredictError> {
        let epsilon = check_epsilon(epsilon)?;
        check_parts(parts)?;
        let noise_epsilon = match mutation {
            VoteMutation::None => epsilon,
            VoteMutation::DoubledEpsilon => 2.0 * epsilon,
        };
        Ok(Self {
            epsilon,
            parts,
            laplace: Laplace::new(noise_epsilon, 1.0)?,
        })
    }

    /// The ε of each answer.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The number of votes k.
    pub fn parts(&self) -> usize {
        self.parts
    }

    /// Releases the answer for `votes` (k of them, each quantized into [0, 1] here).
    pub fn release<R: ReleaseRng + ?Sized>(
        &self,
        votes: &[f64],
        rng: &mut R,
    ) -> Result<AveragedAnswer, PredictError> {
        if votes.len() != self.parts {
            return Err(PredictError::LengthMismatch {
                what: "votes",
                expected: self.parts,
                found: votes.len(),
            });
        }
        let sum: f64 = votes.iter().map(|&h| quantize_vote(h)).sum();
        self.release_sum(sum, rng)
    }

    /// As [`LaplaceAverage::release`] from the exact sum of quantized votes.
    pub(crate) fn release_sum<R: ReleaseRng + ?Sized>(
        &self,
        sum: f64,
        rng: &mut R,
    ) -> Result<AveragedAnswer, PredictError> {
        let noisy = self.laplace.release(sum, rng)?;
        // Post-processing of the released q: any generator would do; the release one is
        // at hand.
        Ok(self.post_process(noisy, rng.random::<f64>()))
    }

    /// As [`LaplaceAverage::release_sum`] with the noise and the label's coin drawn ahead.
    pub(crate) fn release_sum_with(
        &self,
        sum: f64,
        drawn: Drawn,
    ) -> Result<AveragedAnswer, PredictError> {
        let noisy = release_with(&self.laplace, sum, drawn.laplace)?;
        Ok(self.post_process(noisy, drawn.coin))
    }

    /// `q` from the noisy sum, and the label drawn with `P[+1] = q` from a uniform coin.
    fn post_process(&self, noisy: f64, coin: f64) -> AveragedAnswer {
        let probability = (noisy / self.parts as f64).clamp(0.0, 1.0);
        let label = if coin < probability { 1.0 } else { -1.0 };
        AveragedAnswer { probability, label }
    }

    /// The law of the noise each answer adds (drawable ahead of the query).
    pub(crate) fn noise_source(&self) -> NoiseSource {
        NoiseSource::of(&self.laplace)
    }
}

/// A number of parts in 1..=MAX_PARTS.
pub(crate) fn check_parts(parts: usize) -> Result<usize, PredictError> {
    if parts == 0 {
        return Err(PredictError::InvalidCount {
            what: "number of parts",
            value: 0,
            requirement: "at least 1",
        });
    }
    if parts > MAX_PARTS {
        return Err(PredictError::TooLarge {
            what: "number of parts",
            size: parts,
            limit: MAX_PARTS,
        });
    }
    Ok(parts)
}

/// The number of parts Dwork & Feldman suggest for target error `alpha` at per-query
/// `epsilon` (§7.1): `k = ⌈(4/ε) ln(2/α)⌉`.
pub fn suggested_parts(epsilon: f64, alpha: f64) -> Result<usize, PredictError> {
    let epsilon = check_epsilon(epsilon)?;
    if !(alpha > 0.0 && alpha < 0.5) {
        return Err(PredictError::InvalidParameter {
            what: "alpha",
            value: alpha,
            requirement: "in (0, 1/2)",
        });
    }
    // ln(2/α) = ln 2 − ln α: finite for every α > 0 (2/α overflows below 1e-308).
    let k = (4.0 / epsilon * (std::f64::consts::LN_2 - alpha.ln())).ceil();
    if k.is_nan() || k > MAX_PARTS as f64 {
        return Err(PredictError::ComputedTooLarge {
            what: "the suggested number of parts (4/epsilon)·ln(2/alpha)",
            value: k,
            limit: MAX_PARTS,
        });
    }
    Ok(k as usize)
}
