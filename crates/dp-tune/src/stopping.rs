//! Selection without splitting the data per candidate: random stopping (Liu & Talwar,
//! STOC 2019; Papernot & Steinke, ICLR 2022). Every model trains on the same large
//! training part; a geometric number of private runs, and the best one is released.

use std::fmt;

use dp_erm::{Examples, Trainer};
use dp_noise::rounding::div_rounding_up;
use dp_noise::{
    DiscreteLaplace, Neighbouring, PrivacyBudget, RdpCurve, ReleaseRng, RunCount, add_rounding_up,
    default_orders,
};
use rand::RngExt;

use crate::TuneError;
use crate::candidates::{
    check_candidates, held_out_mistakes, training_epsilon, training_guarantee,
};
use crate::error::check_epsilon;
use crate::partition::shuffled;
use crate::rounding::{capped_delta_up, stop_probability_down};
use crate::split::MIN_ROWS_PER_PART;

/// Share of the rows held out for scoring unless set with
/// [`RandomStopping::with_holdout_fraction`].
pub const DEFAULT_HOLDOUT_FRACTION: f64 = 0.1;

/// Smallest stopping probability γ accepted (expected runs `1/γ` ≤ 10⁴).
pub const MIN_STOP_PROBABILITY: f64 = 1e-4;

/// The default cap on runs is the smallest `T` with `(1 − γ)^T` at most this: the chance
/// that the cap ever changes the outcome.
pub const DEFAULT_CAP_TAIL: f64 = 1e-9;

/// Most runs a cap may allow.
pub const MAX_RUNS: usize = 10_000_000;

/// Largest δ a random stopping accepts: a setting whose cap leaves a larger δ (for
/// instance `with_max_runs(1)`, or a large ε at the default cap) is refused at
/// construction. A δ is the probability that the ε-guarantee fails outright; 10⁻⁶ is below
/// `1/n` for every dataset of this workspace's experiments (Adult: 1/n ≈ 2·10⁻⁵) and far
/// below the δ of 1 that a careless cap gives. A stricter δ is the budget's to ask for
/// ([`PrivacyBudget::with_delta`]); raising the cap ([`RandomStopping::with_max_runs`])
/// or γ lowers δ.
pub const MAX_DELTA: f64 = 1e-6;

/// Share of the δ asked of [`RandomStopping::approximate`] left for the cap on runs; the
/// rest is the Rényi conversion's.
pub const CAP_DELTA_SHARE: f64 = 0.01;

/// Most rows the smallest accepted dataset may need: a held-out share so close to 0 or 1
/// that a selection would need more than 2³² rows to give both parts
/// [`MIN_ROWS_PER_PART`] rows is refused at construction.
pub const MAX_MIN_ROWS: usize = 1 << 32;

/// Private selection among candidate trainers by random stopping: hold out a fixed share
/// of the rows (shuffled with fresh randomness), then repeat
///
/// 1. draw a candidate `i` uniformly at random (fresh randomness);
/// 2. train it on the training part (all rows but the held-out ones);
/// 3. score it privately: its mistakes on the held-out part plus discrete Laplace noise of
///    scale `1/ε_S` (`dp-noise`'s exact sampler);
///
/// keeping the run with the fewest noisy mistakes (the first on ties), and after each run
/// stop with probability γ — so the number of runs K is geometric, `P(K = k) =
/// γ(1−γ)^{k−1}`, mean `1/γ` — or when the cap of [`RandomStopping::max_runs`] runs is
/// reached. Release the best run's candidate, model and noisy score.
///
/// Each model sees `(1 − h)·n` rows (h the held-out share, 0.1 by default) where
/// [`crate::SplitAndSelect`] gives it `n/(m+1)`; the price is a factor 3 in ε and about
/// `1/γ` trainings instead of `m`.
///
/// **Why discrete Laplace for the score.** The stopping rule needs a released number per
/// run, not a choice among a list, so the exponential mechanism does not fit; the mistake
/// count is an integer of sensitivity 1, and the exact discrete Laplace makes the score
/// ε_S-DP with no floating-point caveat (Mironov 2012; docs/src/reference/algorithms.md §9). Its scale is
/// rounded up, so never less noise than `1/ε_S`.
///
/// # Privacy
///
/// Let `ε_T = max_i ε_i` (the candidates' reported ε), `ε_S` the score ε, and
/// `ε_B = max(ε_T, ε_S)`. Neighbouring datasets have the same n and differ in one row.
///
/// **One run is `ε_B`-DP.** The shuffle and the cut depend on n and fresh randomness only;
/// condition on them. If the changed row is in the training part, only the model changes
/// in distribution (by `e^{ε_i} ≤ e^{ε_B}`: the trainer's promise), and its noisy score is
/// post-processing of the model and the unchanged held-out part. If it is in the held-out
/// part, the model does not change and the count moves by at most 1, which the discrete
/// Laplace makes `ε_S`-DP. A uniform choice of candidate is a mixture of such runs.
///
/// **The theorem relied on** (Liu & Talwar, STOC 2019, random stopping with an unknown
/// threshold, arXiv:1811.07971; Papernot & Steinke, ICLR 2022, extend it to K truncated
/// negative binomial, of which this geometric law is the case η = 1, and their Cor. 3
/// gives 2ε for the logarithmic law η = 0 — not implemented here): if each run is
/// `ε_B`-DP, releasing the best of K independent runs, with K geometric as above and
/// independent of the data, is **`3ε_B`-DP**. We checked the statement as follows. Order the outcomes by score (ties:
/// the earlier run). For an outcome set A of score s, let `a = P(score < s)`,
/// `b = P(score = s)`, `c = P(outcome ∈ A)` for one run; then
/// `P(release ∈ A) = c·∫₀¹ G'(a + t·b) dt` with `G(z) = E[z^K] = γz/(1 − (1−γ)z)`,
/// `G'(z) = γ/(1 − (1−γ)z)²`. On the neighbour, `c' ≤ e^{ε}c`, `a' + tb' ≤ e^{ε}(a + tb)`,
/// and `1 − (a' + tb') ≥ e^{−ε}(1 − a − tb)` (each is a mixture of probabilities of
/// events), so `1 − (1−γ)(a' + tb') = γ + (1−γ)(1 − a' − tb') ≥ e^{−ε}(1 − (1−γ)(a + tb))`
/// and `G'` grows by at most `e^{2ε}`: in all `e^{3ε}`. The tests compute this output law
/// exactly for a pair of datasets and audit the implementation against it; on exact laws
/// the worst loss reaches 2.76ε (ε = 0.1, γ = 0.02), so for this rule the factor 3 cannot
/// be lowered to 2.
///
/// **The cap.** Runs stop after [`RandomStopping::max_runs`] `= T` whatever the coin says.
/// That changes the output only when K > T, which has probability `(1−γ)^T`; so the capped
/// selection is `(3ε_B, δ)`-DP with `δ = (1 + e^{3ε_B})·(1−γ)^T`
/// ([`RandomStopping::delta`]; at most `(1 + e^{3ε_B})·10⁻⁹` with the default cap). Papernot &
/// Steinke discuss such truncation; it is why a pure-ε claim is not made for the capped
/// algorithm, and why [`RandomStopping::select_charging`] charges the δ too: a pure-ε
/// [`PrivacyBudget`] refuses it. The per-run stop coin is `rand`'s Bernoulli, exact to
/// 2⁻⁶⁴; `delta` uses a γ lowered by 2⁻⁶⁴ (rounded down) to cover it, and is computed in
/// logarithms with every step rounded up, so the reported δ is never below the true one.
/// The 3ε bound holds for any γ.
///
/// **Settings with no meaningful guarantee are refused at construction**, by every
/// constructor and `with_` method: an end-to-end ε (`3ε_B`, rounded up) above
/// [`dp_erm::MAX_EPSILON`] (1000), and a δ above [`MAX_DELTA`] (10⁻⁶). The default cap is
/// the smallest T that leaves both `(1−γ)^T ≤` [`DEFAULT_CAP_TAIL`] and `δ ≤ MAX_DELTA`
/// (at most [`MAX_RUNS`]); a smaller cap set by [`RandomStopping::with_max_runs`] must
/// keep `δ ≤ MAX_DELTA` too.
///
/// Only the best run is released: the number of runs, the other runs, and the time taken
/// are not covered (K conditioned on is no longer geometric, and the best of k runs is
/// only `kε`-DP). [`Stopped::secret_runs`] is for diagnostics; never release it or the
/// running time. The errors of trainers are relied on as in [`crate::SplitAndSelect`].
pub struct RandomStopping<T> {
    candidates: Vec<T>,
    training_epsilon: f64,
    noise: DiscreteLaplace,
    score_epsilon: f64,
    score_sensitivity: u64,
    stop_probability: f64,
    holdout_fraction: f64,
    min_rows: usize,
    max_runs: usize,
    accounting: Accounting,
}

/// How a random stopping's guarantee is computed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Accounting {
    /// ε-DP candidates: Liu–Talwar's `3ε_B`, plus the cap's δ (at most [`MAX_DELTA`]).
    Pure,
    /// Candidates with Rényi curves ([`RandomStopping::approximate`]): Papernot–Steinke's
    /// curve of the best of a geometric number of runs, converted at `rdp_delta`, plus the
    /// cap's δ (at most `cap_delta_limit`).
    Renyi {
        epsilon: f64,
        rdp_delta: f64,
        cap_delta_limit: f64,
    },
}

impl<T: Trainer> RandomStopping<T> {
    /// Random stopping over `candidates`, scores at `score_epsilon`, stopping probability
    /// `stop_probability` = γ in `[1e-4, 1]` after each run. Refuses an empty list, a
    /// candidate without a finite ε in (0, 1000], a score ε that is not finite, > 0 and
    /// ≤ 1000, a γ out of range, and an end-to-end `3ε_B` above 1000 — before any data is
    /// seen. The cap is the smallest T with `(1−γ)^T ≤ 1e-9` and δ ≤ [`MAX_DELTA`]
    /// (refused if no T up to [`MAX_RUNS`] gives that δ); the held-out share 0.1.
    pub fn new(
        candidates: Vec<T>,
        score_epsilon: f64,
        stop_probability: f64,
    ) -> Result<Self, TuneError> {
        let training_epsilon = training_epsilon(&candidates)?;
        Self::pure(
            candidates,
            training_epsilon,
            score_epsilon,
            stop_probability,
            1,
        )
    }

    /// Random stopping over candidates that may be (ε, δ)-DP, accounted by Rényi DP
    /// (Papernot & Steinke, ICLR 2022) to an end-to-end (ε, δ) with δ = `delta`: each
    /// candidate needs a replace-one curve ([`Trainer::rdp_curve`]: pure-ε trainers,
    /// Gaussian output perturbation, DP-SGD), each score is discrete Laplace at
    /// `score_epsilon`, and γ is as for [`RandomStopping::new`]. The ε is whatever the
    /// curves give ([`RandomStopping::epsilon`]); [`RandomStopping::calibrated`] finds the
    /// candidates that meet a total ε.
    ///
    /// Refuses, before any data is seen: an empty list, a candidate without a finite ε in
    /// (0, 1000], a δ out of [0, 1), or no curve ([`TuneError::CandidateWithoutCurve`]); a
    /// score ε or γ out of range; a `delta` not in (0, [`dp_noise::MAX_DELTA`]]; an
    /// end-to-end ε above 1000; and a γ whose cap cannot keep the cap's δ within its share.
    ///
    /// # Privacy
    /// **One run's curve.** Condition on the shuffle (n and fresh randomness only). The
    /// changed row is in the training part or in the held-out part, not both: in the first
    /// case the run's output (candidate, model, noisy score) is post-processing of the
    /// trained model, whose Rényi divergence at order λ is at most the candidate's curve
    /// `c_i(λ)`; in the second the model is unchanged and the count moves by at most 1, so
    /// the run is `ε_S`-DP and its divergence at most `min(ε_S, λε_S²/2)`. The candidate
    /// drawn at random and the shuffle are mixtures with data-independent weights, and the
    /// Rényi divergence is jointly quasi-convex, so one run's curve is at most the
    /// pointwise maximum `r(λ)` of all of these (dp-noise's [`RdpCurve::envelope`]).
    ///
    /// **The best of K runs.** K is geometric (the coin of [`RandomStopping::new`]): a
    /// truncated negative binomial of shape η = 1, whose γ the coin realizes exactly up to
    /// 2⁻⁶⁴ from below. Papernot & Steinke's Theorem 2 bounds the released run's curve by
    /// `r(λ) + 2·min_λ̂[(1 − 1/λ̂)·r(λ̂) + ln(1/γ)/λ̂] + ln(E[K])/(λ − 1)`
    /// ([`RdpCurve::repeat_and_select`]), which grows as γ falls: it is evaluated at a γ
    /// below the coin's lowest (`γ − 2⁻⁶⁴`, less a relative 10⁻¹²) and the mean above it.
    /// The curve is converted at `δ_R = (1 − CAP_DELTA_SHARE)·δ` (rounded down) by Balle et
    /// al. 2020's conversion, rounded up ([`RdpCurve::epsilon`]), over the default orders
    /// ([`default_orders`]).
    ///
    /// **The cap.** As for [`RandomStopping::new`]: stopping after T runs changes the output
    /// only when K > T, probability `(1 − γ)^T`, which adds `(1 + e^ε)·(1 − γ)^T` to δ; the
    /// default cap is the smallest T that keeps this within half the cap's share
    /// (`CAP_DELTA_SHARE·δ/2`), so [`RandomStopping::delta`] = `δ_R` + the cap's δ ≤ δ.
    ///
    /// What is not covered is as for [`RandomStopping::new`]: the number of runs and the
    /// time taken.
    pub fn approximate(
        candidates: Vec<T>,
        score_epsilon: f64,
        stop_probability: f64,
        delta: f64,
    ) -> Result<Self, TuneError> {
        let (training_epsilon, _) = training_guarantee(&candidates)?;
        let noise = score_noise(score_epsilon, 1)?;
        check_stop_probability(stop_probability)?;
        if !(delta.is_finite() && delta > 0.0 && delta <= dp_noise::MAX_DELTA) {
            return Err(TuneError::InvalidParameter {
                what: "delta",
                value: delta,
                requirement: "finite, > 0 and at most 0.1",
            });
        }
        let orders = default_orders();
        let score = RdpCurve::pure(score_epsilon, Neighbouring::ReplaceOne, &orders)?;
        let run = candidates_curve(&candidates, &orders)?.envelope(&score)?;
        let rdp_delta = (delta * (1.0 - CAP_DELTA_SHARE)).next_down();
        let epsilon = best_of_geometric_epsilon(&run, stop_probability, rdp_delta)?;
        if epsilon > dp_erm::MAX_EPSILON {
            return Err(TuneError::InvalidParameter {
                what: "end-to-end epsilon (Papernot-Steinke's bound at the delta asked)",
                value: epsilon,
                requirement: "at most 1000",
            });
        }
        // δ − δ_R is exact (Sterbenz); half of it leaves room for the sum's rounding.
        let cap_delta_limit = (delta - rdp_delta) / 2.0;
        let max_runs = default_cap(stop_probability, epsilon, cap_delta_limit)?;
        let selection = Self {
            candidates,
            training_epsilon,
            noise,
            score_epsilon,
            score_sensitivity: 1,
            stop_probability,
            holdout_fraction: DEFAULT_HOLDOUT_FRACTION,
            min_rows: default_min_rows(),
            max_runs,
            accounting: Accounting::Renyi {
                epsilon,
                rdp_delta,
                cap_delta_limit,
            },
        };
        debug_assert!(selection.delta() <= delta);
        Ok(selection)
    }

    /// The [`RandomStopping::approximate`] whose candidates spend the most that an
    /// end-to-end (`total_epsilon`, `delta`) allows: `candidates(b)` builds the candidates
    /// at a step ε b (a Gaussian candidate at (b, its own δ), say: only its curve matters),
    /// each score gets the largest ε whose pure curve stays under the candidates' curves at
    /// every order ([`RdpCurve::largest_pure_epsilon_below`]: the score then costs nothing
    /// beyond training), and b is the largest found by bisection (on its logarithm, between
    /// `total·2⁻³⁰` and `total`, to a relative 10⁻⁹) whose selection reports an ε at most
    /// `total_epsilon`. The end-to-end ε is checked for the b returned, never assumed.
    /// Errors from `candidates` pass through; a candidate without a curve is refused at
    /// once; where no b fits, the refusal at the smallest is returned.
    pub fn calibrated<E: From<TuneError>>(
        total_epsilon: f64,
        delta: f64,
        stop_probability: f64,
        mut candidates: impl FnMut(f64) -> Result<Vec<T>, E>,
    ) -> Result<Self, E> {
        let total_epsilon = check_epsilon("total epsilon", total_epsilon)?;
        let mut attempt = |step: f64| -> Result<Result<Self, TuneError>, E> {
            let built = candidates(step)?;
            let curve = candidates_curve(&built, &default_orders())?;
            let Some(score) = curve.largest_pure_epsilon_below() else {
                return Ok(Err(TuneError::InvalidParameter {
                    what: "candidate step epsilon",
                    value: step,
                    requirement: "one whose candidates' curves are above 0 at every order",
                }));
            };
            Ok(
                Self::approximate(built, score, stop_probability, delta).and_then(|s| {
                    if s.epsilon() <= total_epsilon {
                        Ok(s)
                    } else {
                        Err(TuneError::InvalidParameter {
                            what: "end-to-end epsilon of random stopping at the smallest step",
                            value: s.epsilon(),
                            requirement: "at most the total epsilon asked for",
                        })
                    }
                }),
            )
        };
        let mut high = total_epsilon;
        if let Ok(selection) = attempt(high)? {
            return Ok(selection);
        }
        let mut low = total_epsilon * 2f64.powi(-30);
        let mut best = attempt(low)?.map_err(E::from)?;
        for _ in 0..64 {
            let middle = (low * high).sqrt();
            if !(middle > low && middle < high) || high / low < 1.0 + 1e-9 {
                break;
            }
            match attempt(middle)? {
                Ok(selection) => {
                    low = middle;
                    best = selection;
                }
                Err(_) => high = middle,
            }
        }
        Ok(best)
    }
}

impl<T> RandomStopping<T> {
    /// The pure accounting (`3ε_B` and the cap's δ, see [`RandomStopping::new`]'s
    /// `# Privacy`) over candidates already checked to be ε-DP at most `training_epsilon`,
    /// with scores that move by at most `score_sensitivity` whole units between neighbours
    /// (1 for a mistake count): their discrete Laplace noise has scale
    /// `score_sensitivity/ε_S`, so each noisy score is `ε_S`-DP. Shared by every kind of
    /// candidate (classifiers here, regressors in [`crate::RegressionRandomStopping`]):
    /// the accounting lives here only.
    pub(crate) fn pure(
        candidates: Vec<T>,
        training_epsilon: f64,
        score_epsilon: f64,
        stop_probability: f64,
        score_sensitivity: u64,
    ) -> Result<Self, TuneError> {
        let noise = score_noise(score_epsilon, score_sensitivity)?;
        check_stop_probability(stop_probability)?;
        let epsilon = end_to_end_epsilon(training_epsilon.max(score_epsilon));
        if epsilon > dp_erm::MAX_EPSILON {
            return Err(TuneError::InvalidParameter {
                what: "end-to-end epsilon (3 × the largest candidate or score epsilon)",
                value: epsilon,
                requirement: "at most 1000",
            });
        }
        let max_runs = default_cap(stop_probability, epsilon, MAX_DELTA)?;
        Ok(Self {
            candidates,
            training_epsilon,
            noise,
            score_epsilon,
            score_sensitivity,
            stop_probability,
            holdout_fraction: DEFAULT_HOLDOUT_FRACTION,
            min_rows: default_min_rows(),
            max_runs,
            accounting: Accounting::Pure,
        })
    }

    /// The sampler of each score's noise.
    pub(crate) fn noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// The noisy scores' sensitivity in whole units (1: mistakes).
    pub(crate) fn score_sensitivity(&self) -> u64 {
        self.score_sensitivity
    }

    /// Holds out `fraction` of the rows (in (0, 1); rounded up to whole rows) for scoring.
    /// Refuses a share so close to 0 or 1 that the smallest dataset it accepts would need
    /// more than [`MAX_MIN_ROWS`] rows.
    pub fn with_holdout_fraction(mut self, fraction: f64) -> Result<Self, TuneError> {
        if !(fraction > 0.0 && fraction < 1.0) {
            return Err(TuneError::InvalidParameter {
                what: "holdout fraction",
                value: fraction,
                requirement: "strictly between 0 and 1",
            });
        }
        self.min_rows = min_rows_for(fraction).ok_or(TuneError::InvalidParameter {
            what: "holdout fraction",
            value: fraction,
            requirement: "one that gives both parts 20 rows with at most 2^32 rows \
                          (about 5e-9 to 1 - 5e-9)",
        })?;
        self.holdout_fraction = fraction;
        Ok(self)
    }

    /// Stops after at most `runs` runs (1 ..= 10⁷); see `# Privacy` for what the cap costs.
    /// Refuses a cap that leaves a δ above [`MAX_DELTA`].
    pub fn with_max_runs(mut self, runs: usize) -> Result<Self, TuneError> {
        if !(1..=MAX_RUNS).contains(&runs) {
            return Err(TuneError::InvalidCount {
                what: "max runs",
                value: runs,
                requirement: "between 1 and 10^7",
            });
        }
        let delta = capped_delta_up(self.epsilon(), self.stop_probability, runs);
        let limit = self.cap_delta_limit();
        if delta > limit {
            return Err(TuneError::DeltaTooLarge {
                delta,
                limit,
                epsilon: self.epsilon(),
                stop_probability: self.stop_probability,
                max_runs: runs,
            });
        }
        self.max_runs = runs;
        Ok(self)
    }

    /// The candidates, in the order given.
    pub fn candidates(&self) -> &[T] {
        &self.candidates
    }

    /// `ε_T`: the largest ε a candidate spends.
    pub fn training_epsilon(&self) -> f64 {
        self.training_epsilon
    }

    /// `ε_S`: the ε of each noisy score.
    pub fn score_epsilon(&self) -> f64 {
        self.score_epsilon
    }

    /// `ε_B = max(ε_T, ε_S)`: the largest ε of one run.
    pub fn base_epsilon(&self) -> f64 {
        self.training_epsilon.max(self.score_epsilon)
    }

    /// The end-to-end ε: `3·ε_B`, rounded up ([`RandomStopping::new`]); Papernot–Steinke's
    /// bound converted at the Rényi share of δ ([`RandomStopping::approximate`]).
    pub fn epsilon(&self) -> f64 {
        match self.accounting {
            Accounting::Pure => end_to_end_epsilon(self.base_epsilon()),
            Accounting::Renyi { epsilon, .. } => epsilon,
        }
    }

    /// The end-to-end δ: the cap's `(1 + e^ε)·(1−γ)^T`, rounded up (never below the true
    /// value; at most [`MAX_DELTA`] for [`RandomStopping::new`]), plus the Rényi
    /// conversion's δ for [`RandomStopping::approximate`] (in all at most the δ asked for).
    pub fn delta(&self) -> f64 {
        let cap = capped_delta_up(self.epsilon(), self.stop_probability, self.max_runs);
        match self.accounting {
            Accounting::Pure => cap,
            Accounting::Renyi { rdp_delta, .. } => add_rounding_up(rdp_delta, cap),
        }
    }

    /// Whether the guarantee is accounted by Rényi DP (Papernot–Steinke, for candidates
    /// that may be (ε, δ)-DP: [`RandomStopping::approximate`]) rather than as `3ε_B`.
    pub fn accounted_by_renyi(&self) -> bool {
        matches!(self.accounting, Accounting::Renyi { .. })
    }

    /// The largest δ the cap may add.
    fn cap_delta_limit(&self) -> f64 {
        match self.accounting {
            Accounting::Pure => MAX_DELTA,
            Accounting::Renyi {
                cap_delta_limit, ..
            } => cap_delta_limit,
        }
    }

    /// The sampler of each score's noise (tests check its exact scale).
    #[cfg(test)]
    pub(crate) fn score_noise(&self) -> &DiscreteLaplace {
        &self.noise
    }

    /// γ: the probability of stopping after each run.
    pub fn stop_probability(&self) -> f64 {
        self.stop_probability
    }

    /// `1/γ`: the expected number of runs (trainings) without the cap.
    pub fn expected_runs(&self) -> f64 {
        1.0 / self.stop_probability
    }

    /// The cap T on runs.
    pub fn max_runs(&self) -> usize {
        self.max_runs
    }

    /// The held-out share h.
    pub fn holdout_fraction(&self) -> f64 {
        self.holdout_fraction
    }

    /// Rows held out for scoring out of `rows`: `⌈h·rows⌉` (public: a function of n).
    pub fn held_out_rows(&self, rows: usize) -> usize {
        held_out(self.holdout_fraction, rows)
    }

    /// Fewest rows a selection accepts: both the held-out part (`⌈h·n⌉` rows) and the
    /// training part need [`MIN_ROWS_PER_PART`] (computed when h was set).
    pub fn min_rows(&self) -> usize {
        self.min_rows
    }

    fn fits(&self, rows: usize) -> bool {
        fits(self.holdout_fraction, rows)
    }
}

impl<T: Trainer> RandomStopping<T> {
    /// Runs the selection on `data`. Refuses, before training anything, data whose
    /// training or held-out part would have fewer than [`MIN_ROWS_PER_PART`] rows; an
    /// error from a trainer names the candidate.
    pub fn select(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Stopped<T::Model>, TuneError> {
        let held_out = self.check_data(data)?;
        self.select_checked(data, held_out, rng)
    }

    /// [`RandomStopping::select`] after its checks, with `held_out` rows to score on.
    fn select_checked(
        &self,
        data: &Examples,
        held_out: usize,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Stopped<T::Model>, TuneError> {
        let order = shuffled(data.len(), rng);
        let scoring = data.select(&order[..held_out]).map_err(TuneError::Data)?;
        let training = data.select(&order[held_out..]).map_err(TuneError::Data)?;
        let stopping = Stopping {
            probability: self.stop_probability,
            max_runs: self.max_runs,
        };
        run_on_split(
            &self.candidates,
            &stopping,
            &training,
            &scoring,
            &self.noise,
            rng,
        )
        .map(|best| Stopped {
            epsilon: self.epsilon(),
            delta: self.delta(),
            held_out_rows: held_out,
            ..best
        })
    }

    /// As [`RandomStopping::select`], first charging [`RandomStopping::epsilon`] and
    /// [`RandomStopping::delta`] to `budget`, which must accept that δ: a pure-ε budget
    /// ([`PrivacyBudget::new`]) refuses the charge, since this selection is not ε-DP; make
    /// it with [`PrivacyBudget::with_delta`]. Size refusals come first, then the charge.
    pub fn select_charging(
        &self,
        data: &Examples,
        budget: &mut PrivacyBudget,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Stopped<T::Model>, TuneError> {
        let held_out = self.check_data(data)?;
        budget
            .spend_approximate("random stopping", self.epsilon(), self.delta())
            .map_err(TuneError::Budget)?;
        self.select_checked(data, held_out, rng)
    }

    /// The held-out row count, after the refusals made before anything is drawn: sizes,
    /// then each candidate's checks for the training part's size.
    fn check_data(&self, data: &Examples) -> Result<usize, TuneError> {
        let held_out = self.check_rows(data.len())?;
        let training_rows = data.len() - held_out;
        check_candidates(&self.candidates, data, |_| training_rows)?;
        Ok(held_out)
    }
}

impl<T> RandomStopping<T> {
    /// The held-out row count, or a refusal naming the sizes.
    pub(crate) fn check_rows(&self, rows: usize) -> Result<usize, TuneError> {
        let held_out = self.held_out_rows(rows);
        if !self.fits(rows) {
            return Err(TuneError::TooFewRowsToHoldOut {
                rows,
                held_out,
                fraction: self.holdout_fraction,
                min_per_part: MIN_ROWS_PER_PART,
                min_rows: self.min_rows(),
            });
        }
        Ok(held_out)
    }
}

/// The largest base ε whose end-to-end ε (`3·base`, rounded up as [`RandomStopping::epsilon`]
/// reports it) is at most `total`: the base every front door asks for when a user gives
/// random stopping's total ε. `None` for a total that is not a finite ε > 0.
pub fn stopping_base_epsilon(total: f64) -> Option<f64> {
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    let mut base = total / 3.0;
    // fl(total/3) tripled and rounded up is at most a few ulps above total: a few steps
    // down suffice (bounded all the same).
    for _ in 0..64 {
        if end_to_end_epsilon(base) <= total {
            return Some(base);
        }
        base = base.next_down();
    }
    None
}

/// `3·base`, rounded up.
fn end_to_end_epsilon(base: f64) -> f64 {
    add_rounding_up(add_rounding_up(base, base), base)
}

/// `⌈h·rows⌉` (the product in floating point), at most `rows`.
fn held_out(h: f64, rows: usize) -> usize {
    ((rows as f64 * h).ceil() as usize).min(rows)
}

/// Whether `rows` give both parts [`MIN_ROWS_PER_PART`] rows at share `h`.
fn fits(h: f64, rows: usize) -> bool {
    let held = held_out(h, rows);
    held >= MIN_ROWS_PER_PART && rows - held >= MIN_ROWS_PER_PART
}

/// The fewest rows at [`DEFAULT_HOLDOUT_FRACTION`].
fn default_min_rows() -> usize {
    min_rows_for(DEFAULT_HOLDOUT_FRACTION).expect("0.1 needs 200 rows")
}

/// The fewest rows that fit at share `h` ∈ (0, 1), or `None` beyond [`MAX_MIN_ROWS`].
fn min_rows_for(h: f64) -> Option<usize> {
    let part = MIN_ROWS_PER_PART as f64;
    // ⌈h·n⌉ ≥ p needs h·n > p − 1, and n − ⌈h·n⌉ ≥ p needs (1 − h)·n ≥ p: the answer is
    // at or just above the larger bound (the products' rounding moves it by a row at
    // most for n ≤ 2^32), so a short scan from just below finds it — a bounded loop.
    let bound = ((part - 1.0) / h).max(part / (1.0 - h)).max(2.0 * part);
    // (bound is never NaN: h is in (0, 1).)
    if bound > MAX_MIN_ROWS as f64 {
        return None;
    }
    let start = (bound.floor() as usize).saturating_sub(2);
    (start..start + 64).find(|&rows| fits(h, rows))
}

/// The noise of each score: discrete Laplace of scale `sensitivity/ε_S` rounded up (never
/// below the scale ε_S needs for a score that moves by `sensitivity` units), which the
/// exact sampler must take (below 2⁶³).
fn score_noise(score_epsilon: f64, sensitivity: u64) -> Result<DiscreteLaplace, TuneError> {
    let score_epsilon = check_epsilon("score epsilon", score_epsilon)?;
    let scale = div_rounding_up(sensitivity as f64, score_epsilon);
    if scale >= 2f64.powi(63) {
        return Err(TuneError::InvalidParameter {
            what: "score epsilon",
            value: score_epsilon,
            requirement: "large enough that the noise scale (score sensitivity / epsilon) is \
                          below 2^63",
        });
    }
    Ok(DiscreteLaplace::with_scale_at_least(scale)?)
}
fn check_stop_probability(stop_probability: f64) -> Result<(), TuneError> {
    if (MIN_STOP_PROBABILITY..=1.0).contains(&stop_probability) {
        Ok(())
    } else {
        Err(TuneError::InvalidParameter {
            what: "stop probability",
            value: stop_probability,
            requirement: "between 1e-4 and 1",
        })
    }
}

/// The pointwise largest of the candidates' replace-one curves at `orders`, refusing a
/// candidate without one.
fn candidates_curve<T: Trainer>(candidates: &[T], orders: &[f64]) -> Result<RdpCurve, TuneError> {
    let mut envelope: Option<RdpCurve> = None;
    for (candidate, trainer) in candidates.iter().enumerate() {
        let curve = trainer
            .rdp_curve(orders)
            .filter(|c| c.relation() == Neighbouring::ReplaceOne && c.orders() == orders)
            .ok_or(TuneError::CandidateWithoutCurve { candidate })?;
        envelope = Some(match envelope {
            None => curve,
            Some(e) => e.envelope(&curve)?,
        });
    }
    envelope.ok_or(TuneError::NoCandidates)
}

/// The ε at `delta` of the best of a geometric number of runs of a mechanism with curve
/// `run`, stopping with probability `gamma` after each (see [`RandomStopping::approximate`]):
/// Papernot–Steinke's bound at a γ below any the coin realizes, and a mean above.
fn best_of_geometric_epsilon(run: &RdpCurve, gamma: f64, delta: f64) -> Result<f64, TuneError> {
    let lowest = stop_probability_down(gamma) * (1.0 - 1e-12);
    let mean = (1.0 / lowest).next_up();
    let tuned = run.repeat_and_select(RunCount::geometric(mean))?;
    Ok(tuned.epsilon(delta)?.0)
}

/// The default cap: the smallest T ≥ 1 with (1 − γ)^T ≤ [`DEFAULT_CAP_TAIL`] and, at the
/// end-to-end `epsilon`, the cap's δ ≤ `limit`; refused if no T ≤ [`MAX_RUNS`] gives that.
fn default_cap(gamma: f64, epsilon: f64, limit: f64) -> Result<usize, TuneError> {
    let tail_cap = if gamma >= 1.0 {
        1
    } else {
        let runs = (DEFAULT_CAP_TAIL.ln() / (1.0 - gamma).ln()).ceil();
        // One more than the floating-point estimate, so rounding cannot leave the tail above.
        (runs as usize).saturating_add(1).clamp(1, MAX_RUNS)
    };
    let small_enough = |runs: usize| capped_delta_up(epsilon, gamma, runs) <= limit;
    if small_enough(tail_cap) {
        return Ok(tail_cap);
    }
    if !small_enough(MAX_RUNS) {
        return Err(TuneError::DeltaTooLarge {
            delta: capped_delta_up(epsilon, gamma, MAX_RUNS),
            limit,
            epsilon,
            stop_probability: gamma,
            max_runs: MAX_RUNS,
        });
    }
    // δ falls as T grows: bisect between too small and enough (≤ 24 steps).
    let (mut low, mut high) = (tail_cap, MAX_RUNS);
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if small_enough(middle) {
            high = middle;
        } else {
            low = middle;
        }
    }
    Ok(high)
}

/// The stopping rule of one selection.
pub(crate) struct Stopping {
    pub(crate) probability: f64,
    pub(crate) max_runs: usize,
}

/// The runs themselves, given the split: tests audit this with neighbouring held-out
/// parts and a deliberately under-noised score.
pub(crate) fn run_on_split<T: Trainer>(
    candidates: &[T],
    stopping: &Stopping,
    training: &Examples,
    scoring: &Examples,
    noise: &DiscreteLaplace,
    rng: &mut dyn ReleaseRng,
) -> Result<Stopped<T::Model>, TuneError> {
    let mut best = best_of_runs(candidates.len(), stopping, noise, rng, |candidate, rng| {
        let model =
            candidates[candidate]
                .train(training, rng)
                .map_err(|e| TuneError::Training {
                    candidate,
                    source: Box::new(e),
                })?;
        let mistakes = held_out_mistakes(&model, scoring)
            .map_err(|source| TuneError::Scoring { candidate, source })?;
        Ok((model, mistakes as i128))
    })?;
    best.held_out_rows = scoring.len();
    Ok(best)
}

/// The stopping loop over any kind of candidate, its score abstracted: `run(i, rng)`
/// trains candidate `i` and returns the model with its exact integer held-out score (lower
/// is better: mistakes, or a regressor's bounded squared error in whole units), to which
/// this adds one draw of `noise`. Each run draws its candidate uniformly at random (fresh
/// randomness), the run with the lowest noisy score is kept (the first on ties: the
/// order the proof uses), and after each run the loop stops with probability
/// `stopping.probability`, or at `stopping.max_runs`. The score's sensitivity is the
/// caller's to match with `noise`'s scale; the guarantee is then [`RandomStopping`]'s.
pub(crate) fn best_of_runs<M>(
    candidates: usize,
    stopping: &Stopping,
    noise: &DiscreteLaplace,
    rng: &mut dyn ReleaseRng,
    mut run: impl FnMut(usize, &mut dyn ReleaseRng) -> Result<(M, i128), TuneError>,
) -> Result<Stopped<M>, TuneError> {
    let mut best: Option<(usize, M, i128)> = None;
    let mut runs = 0;
    loop {
        runs += 1;
        let candidate = rng.random_range(0..candidates);
        let (model, score) = run(candidate, rng)?;
        let noisy = score + noise.sample(rng);
        // Strictly lower: ties keep the earlier run (the order the proof uses).
        if best.as_ref().is_none_or(|b| noisy < b.2) {
            best = Some((candidate, model, noisy));
        }
        if runs >= stopping.max_runs || rng.random_bool(stopping.probability) {
            break;
        }
    }
    let (index, model, noisy) = best.expect("at least one run");
    Ok(Stopped {
        index,
        model,
        noisy_mistakes: noisy,
        score_sensitivity: 1,
        epsilon: f64::NAN,
        delta: f64::NAN,
        held_out_rows: 0,
        secret_runs: runs,
    })
}

impl<T> fmt::Debug for RandomStopping<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RandomStopping")
            .field("candidates", &self.candidates.len())
            .field("training_epsilon", &self.training_epsilon)
            .field("score_epsilon", &self.score_epsilon)
            .field("score_sensitivity", &self.score_sensitivity)
            .field("stop_probability", &self.stop_probability)
            .field("holdout_fraction", &self.holdout_fraction)
            .field("max_runs", &self.max_runs)
            .field("accounting", &self.accounting)
            .finish_non_exhaustive()
    }
}

/// What random stopping releases: the best run's candidate, model and noisy held-out
/// mistake count, with the end-to-end (ε, δ). The number of runs is kept for diagnostics
/// behind a `secret_` accessor: it is **not** covered by the guarantee.
///
/// `Debug` shows the released index and noisy score and the guarantee; never the run
/// count or the model.
pub struct Stopped<M> {
    index: usize,
    model: M,
    noisy_mistakes: i128,
    score_sensitivity: u64,
    epsilon: f64,
    delta: f64,
    held_out_rows: usize,
    secret_runs: usize,
}

impl<M> Stopped<M> {
    /// The loop's best run with the selection's public facts: its guarantee, the held-out
    /// part's size, and the units its score counts in.
    pub(crate) fn released(
        self,
        epsilon: f64,
        delta: f64,
        held_out_rows: usize,
        score_sensitivity: u64,
    ) -> Self {
        Self {
            epsilon,
            delta,
            held_out_rows,
            score_sensitivity,
            ..self
        }
    }

    /// The position of the released candidate in the list.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The released model (trained on the training part).
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The released model, by value.
    pub fn into_model(self) -> M {
        self.model
    }

    /// The released score in whole units, noise included (may be negative): a classifier
    /// selection's held-out mistakes plus discrete Laplace noise; for a regressor
    /// selection ([`crate::RegressionRandomStopping`]) its held-out bounded squared error
    /// in units of [`crate::REGRESSION_SCORE_UNITS`]⁻¹ — read it with
    /// [`Stopped::noisy_score`].
    pub fn noisy_mistakes(&self) -> i128 {
        self.noisy_mistakes
    }

    /// The released score in the score's own scale: [`Stopped::noisy_mistakes`] divided by
    /// the units one row can move it by (1 for mistakes, so the same number; for a
    /// regressor, the noisy `Σ ((clamp(ŷ) − y)/(U − L))²`).
    pub fn noisy_score(&self) -> f64 {
        self.noisy_mistakes as f64 / self.score_sensitivity as f64
    }

    /// Rows of the held-out part (public).
    pub fn held_out_rows(&self) -> usize {
        self.held_out_rows
    }

    /// The end-to-end ε, `3·ε_B`.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The δ the cap on runs adds.
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// **Not private.** How many runs were made. Releasing it voids the guarantee.
    pub fn secret_runs(&self) -> usize {
        self.secret_runs
    }
}

impl<M> fmt::Debug for Stopped<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stopped")
            .field("index", &self.index)
            .field("noisy_mistakes", &self.noisy_mistakes)
            .field("epsilon", &self.epsilon)
            .field("delta", &self.delta)
            .finish_non_exhaustive()
    }
}
