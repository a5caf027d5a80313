//! Random stopping over regressors: [`crate::RandomStopping`]'s runs, stopping rule and
//! pure accounting, with the held-out score of [`crate::RegressionSplitAndSelect`] (the
//! bounded squared error) counted in whole units so that its noise is the same exact
//! discrete Laplace.

use dp_erm::RegressionModel;
use dp_noise::{PrivacyBudget, ReleaseRng};

use crate::TuneError;
use crate::candidates::pure_epsilon_of;
use crate::partition::shuffled;
use crate::regression::{
    REGRESSION_SCORE_UNITS, RegressionData, RegressionTrainer, Scoring, held_out_units,
};
use crate::stopping::{RandomStopping, Stopped, Stopping, best_of_runs};

/// Private selection among candidate regressors by random stopping (Liu & Talwar, STOC
/// 2019): hold out `⌈h·n⌉` rows (shuffled with fresh randomness), then repeat — draw a
/// candidate uniformly at random, train it on the other rows, score it on the held-out
/// rows by `Z = Σ ((clamp(ŷ) − y)/(U − L))²` counted in units of 2⁻²⁰
/// ([`REGRESSION_SCORE_UNITS`]) plus discrete Laplace noise of scale
/// `REGRESSION_SCORE_UNITS/ε_S` — and after each run stop with probability γ, or at the
/// cap. The run with the lowest noisy score is released: candidate, model and noisy score
/// ([`Stopped::noisy_score`]).
///
/// Candidates must be pure ε-DP (a candidate with δ > 0 is refused by position,
/// [`TuneError::CandidateNotPureEpsilon`]): the Rényi accounting of
/// [`RandomStopping::approximate`] is not built for regressors.
///
/// # Privacy
///
/// Neighbouring datasets have the same n (public) and differ in one row `(x, y)`
/// replaced. The released (index, model, noisy score) is **`(3ε_B, δ)`-DP** with
/// `ε_B = max(ε_T, ε_S)` (`ε_T` the largest candidate ε) and `δ = (1 + e^{3ε_B})(1−γ)^T`
/// from the cap T — exactly [`RandomStopping::new`]'s guarantee, by the same argument
/// (Liu–Talwar's theorem for a geometric number of `ε_B`-DP runs, then the cap), computed
/// by the same code ([`RandomStopping`]'s pure accounting). What that argument needs of
/// the score is that one run is `ε_B`-DP, and that holds because the score's sensitivity
/// is `REGRESSION_SCORE_UNITS` units:
///
/// 1. Condition on the shuffle and cut (n and fresh randomness only). If the changed row
///    is in the training part, only the model changes, by the candidate's `e^{ε_i}`; the
///    noisy score is post-processing of the model and the unchanged held-out rows.
/// 2. If it is in the held-out part, the model is unchanged and one row's term changes.
///    The term is `((p − t)/(U − L))²` with `p` clamped into `[L, U]` by the score
///    (whatever the model predicts) and `t` within `[L, U]` (the data's contract, checked
///    when [`RegressionData`] is built), so `|p − t| ≤ U − L`: the term is in [0, 1]
///    (one that is not a number, or whose prediction overflows, scores 1; rounding error
///    is capped at 1 too). Times `UNITS`, rounded to the nearest integer, it is a whole
///    number in `[0, UNITS]`, and the integer sum moves by at most `UNITS`. Discrete
///    Laplace noise of scale `t ≥ UNITS/ε_S` (rounded up) makes the noisy score
///    `UNITS/t ≤ ε_S`-DP (the ratio of its probabilities at any output is at most
///    `e^{|Δ|/t}`).
/// 3. A uniform choice of candidate is a mixture of such runs.
///
/// Without the clamp a term is unbounded, and without the division by the width it
/// reaches `(U − L)²`: the tests show both mutants break the `e^{ε_S}` ratio of one run's
/// score. As for the classifiers, the number of runs and the time taken are not covered.
pub struct RegressionRandomStopping<T> {
    inner: RandomStopping<T>,
}

impl<T: RegressionTrainer> RegressionRandomStopping<T> {
    /// Random stopping over `candidates`, each score at `score_epsilon`, stopping with
    /// probability `stop_probability` = γ in [1e-4, 1] after each run; the held-out share
    /// 0.1 and the cap as [`RandomStopping::new`]. Refused before any data is seen: an
    /// empty list, a candidate with δ > 0 ([`TuneError::CandidateNotPureEpsilon`]) or
    /// without a finite ε in (0, 1000], a score ε out of range (or so small that the noise
    /// scale `2²⁰/ε_S` reaches 2⁶³), a γ out of range, an end-to-end ε above 1000.
    pub fn new(
        candidates: Vec<T>,
        score_epsilon: f64,
        stop_probability: f64,
    ) -> Result<Self, TuneError> {
        let training_epsilon =
            pure_epsilon_of(candidates.iter().map(|t| (t.epsilon(), t.delta())))?;
        Ok(Self {
            inner: RandomStopping::pure(
                candidates,
                training_epsilon,
                score_epsilon,
                stop_probability,
                REGRESSION_SCORE_UNITS,
            )?,
        })
    }

    /// Holds out `fraction` of the rows ([`RandomStopping::with_holdout_fraction`]).
    pub fn with_holdout_fraction(self, fraction: f64) -> Result<Self, TuneError> {
        Ok(Self {
            inner: self.inner.with_holdout_fraction(fraction)?,
        })
    }

    /// Caps the runs ([`RandomStopping::with_max_runs`]).
    pub fn with_max_runs(self, runs: usize) -> Result<Self, TuneError> {
        Ok(Self {
            inner: self.inner.with_max_runs(runs)?,
        })
    }

    /// The candidates, in the order given.
    pub fn candidates(&self) -> &[T] {
        self.inner.candidates()
    }

    /// `ε_T`: the largest ε a candidate spends.
    pub fn training_epsilon(&self) -> f64 {
        self.inner.training_epsilon()
    }

    /// `ε_S`: the ε of each noisy score.
    pub fn score_epsilon(&self) -> f64 {
        self.inner.score_epsilon()
    }

    /// `ε_B = max(ε_T, ε_S)`.
    pub fn base_epsilon(&self) -> f64 {
        self.inner.base_epsilon()
    }

    /// The end-to-end ε: `3·ε_B`, rounded up.
    pub fn epsilon(&self) -> f64 {
        self.inner.epsilon()
    }

    /// The end-to-end δ: the cap's `(1 + e^ε)·(1−γ)^T`, rounded up (at most
    /// [`crate::MAX_DELTA`]).
    pub fn delta(&self) -> f64 {
        self.inner.delta()
    }

    /// γ.
    pub fn stop_probability(&self) -> f64 {
        self.inner.stop_probability()
    }

    /// The cap T on runs.
    pub fn max_runs(&self) -> usize {
        self.inner.max_runs()
    }

    /// The held-out share h.
    pub fn holdout_fraction(&self) -> f64 {
        self.inner.holdout_fraction()
    }

    /// Rows held out for scoring out of `rows`: `⌈h·rows⌉` (public).
    pub fn held_out_rows(&self, rows: usize) -> usize {
        self.inner.held_out_rows(rows)
    }

    /// Fewest rows a selection accepts.
    pub fn min_rows(&self) -> usize {
        self.inner.min_rows()
    }

    /// The noise of each score (tests check its scale against the sensitivity).
    #[cfg(test)]
    pub(crate) fn score_noise(&self) -> &dp_noise::DiscreteLaplace {
        self.inner.score_noise()
    }

    /// Runs the selection on `data`. Refused before anything is drawn: too few rows for
    /// either part, and what a candidate refuses for the training part's size.
    pub fn select(
        &self,
        data: &RegressionData,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Stopped<RegressionModel>, TuneError> {
        let held_out = self.check_data(data)?;
        self.select_checked(data, held_out, rng, Scoring::Bounded)
    }

    /// As [`RegressionRandomStopping::select`], first charging ε and δ to `budget` (which
    /// must accept a δ: [`PrivacyBudget::with_delta`]) after the refusals and before any
    /// draw; a refusal charges nothing.
    pub fn select_charging(
        &self,
        data: &RegressionData,
        budget: &mut PrivacyBudget,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Stopped<RegressionModel>, TuneError> {
        let held_out = self.check_data(data)?;
        budget
            .spend_approximate("regression random stopping", self.epsilon(), self.delta())
            .map_err(TuneError::Budget)?;
        self.select_checked(data, held_out, rng, Scoring::Bounded)
    }

    fn check_data(&self, data: &RegressionData) -> Result<usize, TuneError> {
        let held_out = self.inner.check_rows(data.len())?;
        for (candidate, trainer) in self.candidates().iter().enumerate() {
            trainer
                .check_shape(data.len() - held_out, data.features())
                .map_err(|e| TuneError::CandidateRefuses {
                    candidate,
                    source: Box::new(e),
                })?;
        }
        Ok(held_out)
    }

    pub(crate) fn select_checked(
        &self,
        data: &RegressionData,
        held_out: usize,
        rng: &mut dyn ReleaseRng,
        scoring: Scoring,
    ) -> Result<Stopped<RegressionModel>, TuneError> {
        let order = shuffled(data.len(), rng);
        let (rows, targets) = data.select(&order[..held_out]).map_err(TuneError::Data)?;
        let training = data.part(&order[held_out..]).map_err(TuneError::Data)?;
        let stopping = Stopping {
            probability: self.stop_probability(),
            max_runs: self.max_runs(),
        };
        let candidates = self.candidates();
        let best = best_of_runs(
            candidates.len(),
            &stopping,
            self.inner.noise(),
            rng,
            |candidate, rng| {
                let model = candidates[candidate].train(&training, rng).map_err(|e| {
                    TuneError::Training {
                        candidate,
                        source: Box::new(e),
                    }
                })?;
                let score = held_out_units(&model, &rows, &targets, data.scale(), scoring);
                Ok((model, score))
            },
        )?;
        Ok(best.released(
            self.epsilon(),
            self.delta(),
            held_out,
            self.inner.score_sensitivity(),
        ))
    }
}

impl<T> std::fmt::Debug for RegressionRandomStopping<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegressionRandomStopping")
            .field("inner", &self.inner)
            .finish()
    }
}

#[cfg(test)]
#[path = "regression_stopping_tests.rs"]
mod tests;
