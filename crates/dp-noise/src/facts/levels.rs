//! The levels of a categorical column (or the classes of a label): from a public candidate
//! list with pure ε, or without a list by the stability-based histogram with (ε, δ).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{
    FactMechanism, Released, check_open_probability, failure_threshold, histogram_noise,
    noisy_counts,
};
use crate::error::{check_epsilon, check_guarantee_delta};
use crate::{DiscreteLaplace, NoiseError, ReleaseRng};

/// Exact counts of each level seen, accumulated chunk by chunk: memory for the distinct
/// levels, independent of the number of records. Works for any ordered level type:
/// strings for a categorical column, integers for a label's classes.
///
/// The counts are exact statistics of the data and are **not** private; `Debug` shows
/// only n (public under replace-one).
#[derive(Clone, PartialEq)]
pub struct LevelCounts<T: Ord> {
    counts: BTreeMap<T, u64>,
    rows: u64,
}

impl<T: Ord> LevelCounts<T> {
    /// No records yet.
    pub fn new() -> Self {
        Self {
            counts: BTreeMap::new(),
            rows: 0,
        }
    }

    /// Counts one record's level.
    pub fn add(&mut self, level: T) {
        *self.counts.entry(level).or_insert(0) += 1;
        self.rows += 1;
    }

    /// Counts a chunk of records.
    pub fn add_chunk<I: IntoIterator<Item = T>>(&mut self, levels: I) {
        for level in levels {
            self.add(level);
        }
    }

    /// Adds the counts of another block of the same data set.
    pub fn merge(&mut self, other: LevelCounts<T>) {
        for (level, count) in other.counts {
            *self.counts.entry(level).or_insert(0) += count;
        }
        self.rows += other.rows;
    }

    /// The number of records n (public under replace-one).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Each level seen and its count, in level order (exact, **not private**: for moving
    /// partial counts between trusted parties, as [`LevelCounts::from_counts`] takes them
    /// back; never release them).
    pub fn counts(&self) -> impl Iterator<Item = (&T, u64)> {
        self.counts.iter().map(|(level, &count)| (level, count))
    }

    /// Counts already made elsewhere (the [`LevelCounts::counts`] of a block of the same
    /// data set, sent by a trusted party), n their sum. Refused: a count of zero (a level
    /// is listed only when seen: the stability histogram draws noise for every level
    /// listed), or a sum above `u64::MAX`.
    pub fn from_counts(counts: BTreeMap<T, u64>) -> Result<Self, NoiseError> {
        if counts.values().any(|&c| c == 0) {
            return Err(NoiseError::UnsupportedParameters(
                "a level counted zero times: only levels seen are listed".into(),
            ));
        }
        let rows = counts
            .values()
            .try_fold(0u64, |total, &c| total.checked_add(c))
            .ok_or_else(|| {
                NoiseError::UnsupportedParameters("level counts sum above u64::MAX".into())
            })?;
        Ok(Self { counts, rows })
    }

    fn check_not_empty(&self) -> Result<(), NoiseError> {
        if self.rows == 0 {
            Err(NoiseError::EmptyData)
        } else {
            Ok(())
        }
    }
}

impl<T: Ord> Default for LevelCounts<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord> FromIterator<T> for LevelCounts<T> {
    fn from_iter<I: IntoIterator<Item = T>>(levels: I) -> Self {
        let mut counts = Self::new();
        counts.add_chunk(levels);
        counts
    }
}

impl<T: Ord> fmt::Debug for LevelCounts<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LevelCounts")
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

/// One released level with its noisy count (part of the private release: free to use).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelCount<T> {
    /// The level.
    pub level: T,
    /// Its count plus the mechanism's noise.
    pub noisy_count: i64,
}

/// Levels from a public candidate list: every candidate's count plus exact discrete
/// Laplace noise, kept when the noisy count reaches a threshold τ. Records whose level is
/// not a candidate are counted nowhere. The output lists the kept candidates in the
/// order given, with their noisy counts.
///
/// τ is set by a public failure probability β: the smallest integer with
/// `m·P(Z ≥ τ) ≤ β` for m candidates, so that with probability at least 1 − β no
/// candidate absent from the data is reported.
///
/// # Privacy
/// **ε-DP** under replace-one with n public. One replaced record changes at most two
/// candidates' counts by 1 each (it leaves one and joins another; one change only when a
/// level is not a candidate): L1 sensitivity 2, so noise of scale `t ≥ 2/ε` (rounded up)
/// on **every** candidate, present in the data or not, makes the noisy counts ε-DP, and
/// the threshold is post-processing. The candidate list must not depend on the data. As
/// for [`DiscreteLaplace`], the running time is not covered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CandidateLevels {
    epsilon: f64,
    failure_probability: f64,
    noise: DiscreteLaplace,
}

impl CandidateLevels {
    /// ε-DP levels with failure probability β in (0, 1).
    pub fn new(epsilon: f64, failure_probability: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let failure_probability =
            check_open_probability("failure probability (in (0, 1))", failure_probability)?;
        Ok(Self {
            epsilon,
            failure_probability,
            noise: histogram_noise(epsilon)?,
        })
    }

    /// Releases the candidates that the data hold (n ≥ 1). The list must be non-empty
    /// and free of repeats ([`NoiseError::DuplicateCandidate`] names the second one).
    pub fn release<T: Ord + Clone, R: ReleaseRng + ?Sized>(
        &self,
        counts: &LevelCounts<T>,
        candidates: &[T],
        rng: &mut R,
    ) -> Result<Released<Vec<LevelCount<T>>>, NoiseError> {
        if candidates.is_empty() {
            return Err(NoiseError::NoCandidates);
        }
        let mut seen = BTreeSet::new();
        if let Some(position) = candidates.iter().position(|c| !seen.insert(c)) {
            return Err(NoiseError::DuplicateCandidate { position });
        }
        counts.check_not_empty()?;
        let threshold = self.threshold(candidates.len());
        let exact = candidates
            .iter()
            .map(|c| counts.counts.get(c).copied().unwrap_or(0));
        let noisy = noisy_counts(exact, &self.noise, rng);
        let kept = candidates
            .iter()
            .zip(noisy)
            .filter(|&(_, n)| n >= threshold)
            .map(|(level, noisy_count)| LevelCount {
                level: level.clone(),
                noisy_count,
            })
            .collect();
        Ok(Released::new(
            kept,
            FactMechanism::CandidateLevels,
            self.epsilon,
            0.0,
        ))
    }

    /// The threshold τ for `candidates` candidates.
    pub fn threshold(&self, candidates: usize) -> i64 {
        failure_threshold(&self.noise, candidates, self.failure_probability)
    }

    /// The noise added to every count.
    pub fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }
}

/// Levels without a candidate list — the stability-based histogram (Korolova, Kenthapadi,
/// Mishra & Ntoulas 2009; Wilson et al. 2020): each level **seen in the data** gets its
/// count plus exact discrete Laplace noise `Z` of scale `t ≥ 2/ε`, and is released with
/// its noisy count when that reaches
///
/// `τ = 1 + ⌈t · ln(1 / (δ·(1 + e^{−1/t})))⌉`,
///
/// the smallest integer with `P(1 + Z ≥ τ) = e^{−(τ−1)/t}/(1 + e^{−1/t}) ≤ δ` (computed
/// with a relative margin of 10⁻⁹ upward). Levels are listed in their order (`Ord`).
/// Applied to a label column it releases the label's classes.
///
/// # Privacy
/// **(ε, δ)-DP** under replace-one with n public — δ is needed: a level held by one record
/// exists in one data set and not in its neighbour, and no noise can hide a level that is
/// never counted. Derivation: view the release level by level; level `v` with count `c`
/// outputs `M_c` = "`c + Z` if `c + Z ≥ τ`, else nothing", and `M_0` = nothing. Replacing a
/// record of level `a` by one of level `b ≠ a` changes two levels' counts by one each
/// (`c_a → c_a − 1`, `c_b → c_b + 1`); every other level's output has the same law.
/// - A level whose count moves between `c ≥ 1` and `c + 1`: the output is a post-processing
///   of `c + Z` vs `c + 1 + Z`, whose probabilities differ by at most `e^{1/t}`:
///   `(1/t, 0)`-indistinguishable.
/// - A level that appears or vanishes (count 1 vs 0): `M_0` never outputs it, `M_1` does
///   with probability `δ₁ = P(1 + Z ≥ τ)` and otherwise outputs nothing, exactly as `M_0`:
///   `(0, δ₁)`-indistinguishable.
///
/// Composing the two levels: both shift → `(2/t, 0)`; one shifts and one appears or
/// vanishes → `(1/t, δ₁)`; one appears and the other vanishes → the laws differ only by
/// moving mass δ₁ between "`a` released" and "`b` released", a total-variation distance
/// of δ₁ → `(0, δ₁)`. With `t ≥ 2/ε` and τ as above, every case is within
/// **`(ε, δ₁)` with `δ₁ ≤ δ`**. (For continuous Laplace the same argument gives the
/// familiar `τ = 1 + t·ln(1/(2δ))`; the discrete law's `1 + e^{−1/t} < 2` makes τ
/// slightly larger.)
///
/// The noise is drawn only for the levels present, so the running time (and the amount
/// of randomness used) depends on the number of distinct levels: do not expose it.
///
/// ```
/// use dp_noise::{DpRng, LevelCounts, StabilityLevels};
///
/// # fn main() -> Result<(), dp_noise::NoiseError> {
/// let mut rng = DpRng::from_os_entropy()?;
/// // The classes of a label column that came without a list of classes.
/// let labels: LevelCounts<i64> = (0..1000).map(|i| if i % 4 == 0 { 0 } else { 1 }).collect();
/// let classes = StabilityLevels::new(1.0, 1e-6)?.release(&labels, &mut rng)?;
/// assert_eq!((classes.epsilon(), classes.delta()), (1.0, 1e-6));
/// let found: Vec<i64> = classes.value().iter().map(|l| l.level).collect();
/// assert_eq!(found, [0, 1]); // 250 and 750 records: far above the threshold (24)
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabilityLevels {
    epsilon: f64,
    delta: f64,
    noise: DiscreteLaplace,
    threshold: i64,
}

impl StabilityLevels {
    /// (ε, δ)-DP levels, `0 < δ ≤ MAX_DELTA` (keep δ far below 1/n).
    pub fn new(epsilon: f64, delta: f64) -> Result<Self, NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let delta = check_guarantee_delta(delta)?;
        let noise = histogram_noise(epsilon)?;
        let threshold = stability_threshold(&noise, delta)?;
        Ok(Self {
            epsilon,
            delta,
            noise,
            threshold,
        })
    }

    /// Releases the levels of the data (n ≥ 1) whose noisy counts reach the threshold.
    pub fn release<T: Ord + Clone, R: ReleaseRng + ?Sized>(
        &self,
        counts: &LevelCounts<T>,
        rng: &mut R,
    ) -> Result<Released<Vec<LevelCount<T>>>, NoiseError> {
        counts.check_not_empty()?;
        let noisy = noisy_counts(counts.counts.values().copied(), &self.noise, rng);
        let kept = counts
            .counts
            .keys()
            .zip(noisy)
            .filter(|&(_, n)| n >= self.threshold)
            .map(|(level, noisy_count)| LevelCount {
                level: level.clone(),
                noisy_count,
            })
            .collect();
        Ok(Released::new(
            kept,
            FactMechanism::StabilityLevels,
            self.epsilon,
            self.delta,
        ))
    }

    /// The threshold τ.
    pub fn threshold(&self) -> i64 {
        self.threshold
    }

    /// The noise added to every count.
    pub fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// The ε of the guarantee.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The δ of the guarantee.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// `τ = 1 + ⌈t·ln(1/(δ(1+q)))⌉`, `q = e^{−1/t}`, with the argument of the ceiling moved up
/// by a relative 10⁻⁹ (and 10⁻⁹ absolute): the floating-point errors of `t`, `q`, the
/// logarithms and the product are a few ulps (no cancellation: `ln(1/δ) ≥ ln 10` while
/// `ln(1+q) < ln 2`), far inside the margin, so `P(1 + Z ≥ τ) ≤ δ` holds exactly.
pub(super) fn stability_threshold(noise: &DiscreteLaplace, delta: f64) -> Result<i64, NoiseError> {
    let t = noise.scale();
    let q = (-1.0 / t).exp();
    let x = t * ((1.0 / delta).ln() - (1.0 + q).ln());
    let x = x * (1.0 + 1e-9) + 1e-9;
    let steps = x.ceil().max(1.0);
    if steps.is_nan() || steps >= 2f64.powi(62) {
        return Err(NoiseError::UnsupportedParameters(format!(
            "the stability threshold for delta {delta:?} at noise scale {t:?} is too large"
        )));
    }
    Ok(1 + steps as i64)
}

#[cfg(test)]
#[path = "levels_tests.rs"]
mod tests;
