//! Split-and-select (CMS11 Algorithm 4; SCM09 Algorithm 3; docs/src/reference/algorithms.md §6): one part of
//! the data per candidate, one held-out part, and the exponential mechanism over held-out
//! mistakes.

use std::fmt;

use dp_erm::{Classifier, Examples, Trainer};
use dp_noise::{ExponentialMechanism, PrivacyBudget, ReleaseRng};

use crate::TuneError;
use crate::candidates::{check_candidates, held_out_mistakes, training_guarantee};
use crate::error::check_epsilon;
use crate::partition::{part_ranges, shuffled};

/// Fewest rows a part may have: each candidate trains on one part and the held-out part
/// counts mistakes. Below this a model is noise and a mistake count says nothing; a
/// selection that needs more (small ε, many candidates) should check
/// [`SplitAndSelect::min_rows`] against its own accuracy target.
pub const MIN_ROWS_PER_PART: usize = 20;

/// Private selection among `m` candidate trainers (Λ values, losses, mechanisms…) by
/// splitting the data: shuffle with fresh randomness, cut into `m + 1` parts of nearly
/// equal size (sizes differ by at most one), train candidate `i` on part `i`, count each
/// model's mistakes `z_i` on the last part, and release model `i` with probability
/// `∝ exp(−ε_S·z_i/2)` — the exponential mechanism of `dp-noise`, sampled exactly, utility
/// `−z_i`, sensitivity 1.
///
/// The candidates are given, checked and frozen by [`SplitAndSelect::new`], before any
/// data: nothing in the selection can add, drop or reorder them after seeing the rows.
///
/// # Privacy
///
/// Let `ε_T = max_i ε_i`, the largest ε a candidate reports ([`Trainer::epsilon`]), and
/// `ε_S` the selection ε given to [`SplitAndSelect::new`]. For datasets of the same size n
/// that differ in one row (replace-one), the released pair (index, model) is
/// **`max(ε_T, ε_S)`-DP** ([`SplitAndSelect::epsilon`]):
///
/// 1. The permutation and the cut depend only on n and fresh randomness, never on the
///    rows; condition on them. The changed row then lies in exactly one part.
/// 2. If it lies in training part `i`, only model `f_i` changes in distribution, by at most
///    `e^{ε_i} ≤ e^{ε_T}` (the trainer's promise). The mistake counts are functions of the
///    models and the unchanged held-out part, so the selection is post-processing.
/// 3. If it lies in the held-out part, the models do not change, every `z_j` moves by at
///    most 1, and the exponential mechanism with utility sensitivity 1 is `ε_S`-DP
///    (McSherry–Talwar 2007; `dp-noise` samples it exactly, see
///    [`ExponentialMechanism`]).
/// 4. So, whatever the permutation, the output is `max(ε_T, ε_S)`-DP (parallel
///    composition), and a mixture over permutations of such mechanisms is too.
///
/// **(ε, δ) candidates.** With `δ_T = max_i δ_i` ([`Trainer::delta`]; 0 for ε-DP
/// trainers), the pair is **`(max(ε_T, ε_S), δ_T)`-DP** ([`SplitAndSelect::delta`]): in
/// step 2 model `f_i` is `(ε_i, δ_i)`-DP, post-processing keeps that, step 3 adds no δ,
/// and for each permutation `P[out ∈ S | D] ≤ e^ε·P[out ∈ S | D′] + δ_T` holds, so it holds
/// for their mixture. Nothing composes across candidates: the changed row reaches one.
///
/// CMS11 uses one ε for both (`ε_S = ε_T = ε`, total ε): that is the natural choice, as a
/// larger `ε_S` raises the total and a smaller one buys nothing. The guarantee relies on
/// each trainer's promise, including that its errors depend on the data only as its
/// documentation says. What the trainers refuse from the parts' sizes or their input
/// contracts (`Trainer::check_shape`, `Trainer::check_inputs`: for dp-erm's trainers a row
/// of norm above 1) is refused before the data are split, to the data's owner; after that
/// a dp-erm trainer can only fail with `ErmError::NotConverged`, which carries no numbers
/// (a selection stops at the first failing candidate: treat that as released). A held-out
/// row whose score overflows counts as a mistake, so the counts never fail. It covers the
/// released pair, not the time the selection takes, and not
/// [`Selection::secret_validation_mistakes`].
///
/// # Utility
///
/// SCM09 Theorem 7: with probability at least `1 − δ` the released model's held-out
/// mistakes satisfy `z ≤ min_i z_i + (2/ε_S)·ln(m/δ)`.
pub struct SplitAndSelect<T> {
    candidates: Vec<T>,
    training_epsilon: f64,
    training_delta: f64,
    mechanism: ExponentialMechanism,
}

impl<T: Trainer> SplitAndSelect<T> {
    /// A selection among `candidates` (in this order: candidate `i` trains on part `i`)
    /// with the exponential mechanism at `selection_epsilon`. Refuses an empty list, a
    /// candidate without a finite ε in (0, 1000] or with a δ outside [0, 1), and a selection
    /// ε that is not finite, > 0 and at most 1000 — all before any data is seen.
    pub fn new(candidates: Vec<T>, selection_epsilon: f64) -> Result<Self, TuneError> {
        let (training_epsilon, training_delta) = training_guarantee(&candidates)?;
        let selection_epsilon = check_epsilon("selection epsilon", selection_epsilon)?;
        Ok(Self {
            candidates,
            training_epsilon,
            training_delta,
            mechanism: ExponentialMechanism::new(selection_epsilon, 1.0)?,
        })
    }

    /// The candidates, in the order given.
    pub fn candidates(&self) -> &[T] {
        &self.candidates
    }

    /// `ε_T`: the largest ε a candidate spends.
    pub fn training_epsilon(&self) -> f64 {
        self.training_epsilon
    }

    /// `ε_S`: the ε of the exponential mechanism.
    pub fn selection_epsilon(&self) -> f64 {
        self.mechanism.epsilon()
    }

    /// The end-to-end ε of one selection: `max(ε_T, ε_S)` (see `# Privacy`).
    pub fn epsilon(&self) -> f64 {
        self.training_epsilon.max(self.mechanism.epsilon())
    }

    /// The end-to-end δ of one selection: `δ_T`, the largest δ a candidate spends (0 when
    /// every candidate is ε-DP; see `# Privacy`).
    pub fn delta(&self) -> f64 {
        self.training_delta
    }

    /// Number of parts, `m + 1`.
    pub fn parts(&self) -> usize {
        self.candidates.len() + 1
    }

    /// Fewest rows a selection accepts: `(m + 1)·MIN_ROWS_PER_PART`.
    pub fn min_rows(&self) -> usize {
        self.parts().saturating_mul(MIN_ROWS_PER_PART)
    }

    /// Runs the selection on `data` with fresh randomness from `rng`. Refuses, before
    /// drawing or training anything, too few rows and whatever a candidate refuses up front
    /// ([`TuneError::CandidateRefuses`]: its parameters at its part's size, a row outside
    /// its input contract); a later error from a candidate's trainer names the candidate.
    pub fn select(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Selection<T::Model>, TuneError> {
        self.check_data(data)?;
        self.select_checked(data, rng)
    }

    /// [`SplitAndSelect::select`] after its checks.
    fn select_checked(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Selection<T::Model>, TuneError> {
        let order = shuffled(data.len(), rng);
        let ranges = part_ranges(data.len(), self.parts());
        let (training, held_out) = ranges.split_at(self.candidates.len());
        let validation = data
            .select(&order[held_out[0].clone()])
            .map_err(TuneError::Data)?;
        let mut models = Vec::with_capacity(self.candidates.len());
        for (candidate, (trainer, range)) in self.candidates.iter().zip(training).enumerate() {
            let part = data
                .select(&order[range.clone()])
                .map_err(TuneError::Data)?;
            let model = trainer.train(&part, rng).map_err(|e| TuneError::Training {
                candidate,
                source: Box::new(e),
            })?;
            models.push(model);
        }
        let (index, model, mistakes) = select_among(models, &validation, &self.mechanism, rng)?;
        Ok(Selection {
            index,
            model,
            epsilon: self.epsilon(),
            delta: self.delta(),
            validation_rows: validation.len(),
            secret_mistakes: mistakes,
        })
    }

    /// As [`SplitAndSelect::select`], first charging [`SplitAndSelect::epsilon`] (and
    /// [`SplitAndSelect::delta`], when a candidate has one: a pure-ε budget refuses it) to
    /// `budget`. Too few rows and the candidates' up-front refusals come before the charge;
    /// a budget that cannot pay is refused ([`TuneError::Budget`]) before any model is
    /// trained. A failure after the charge does not refund it: a failing candidate may
    /// already have revealed something.
    pub fn select_charging(
        &self,
        data: &Examples,
        budget: &mut PrivacyBudget,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Selection<T::Model>, TuneError> {
        self.check_data(data)?;
        budget
            .spend_approximate("split-and-select", self.epsilon(), self.delta())
            .map_err(TuneError::Budget)?;
        self.select_checked(data, rng)
    }

    /// The refusals made before anything is drawn: too few rows, then each candidate's
    /// checks for its own part's size (public: the sizes depend on n alone).
    fn check_data(&self, data: &Examples) -> Result<(), TuneError> {
        let rows = data.len();
        if rows < self.min_rows() {
            return Err(TuneError::TooFewRows {
                rows,
                parts: self.parts(),
                min_per_part: MIN_ROWS_PER_PART,
            });
        }
        let ranges = part_ranges(rows, self.parts());
        check_candidates(&self.candidates, data, |candidate| ranges[candidate].len())
    }
}

/// Step 3 and 4 of the algorithm, given the trained models and the held-out part: count
/// mistakes and select with `mechanism` (utility −mistakes). Tests audit this with
/// neighbouring held-out parts, and with a deliberately mis-calibrated mechanism.
pub(crate) fn select_among<M: Classifier>(
    mut models: Vec<M>,
    validation: &Examples,
    mechanism: &ExponentialMechanism,
    rng: &mut dyn ReleaseRng,
) -> Result<(usize, M, Vec<usize>), TuneError> {
    let mistakes = models
        .iter()
        .enumerate()
        .map(|(candidate, model)| {
            held_out_mistakes(model, validation)
                .map_err(|source| TuneError::Scoring { candidate, source })
        })
        .collect::<Result<Vec<usize>, _>>()?;
    // Counts are at most n < 2^53, so the utilities are exact.
    let utilities: Vec<f64> = mistakes.iter().map(|&z| -(z as f64)).collect();
    let index = mechanism.select(&utilities, rng)?;
    Ok((index, models.swap_remove(index), mistakes))
}

impl<T> fmt::Debug for SplitAndSelect<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SplitAndSelect")
            .field("candidates", &self.candidates.len())
            .field("training_epsilon", &self.training_epsilon)
            .field("training_delta", &self.training_delta)
            .field("selection_epsilon", &self.mechanism.epsilon())
            .finish()
    }
}

/// What a split-and-select releases: the chosen candidate and its model, with the
/// end-to-end ε and δ. Also holds the held-out mistake counts of every candidate, which are
/// **not private** and reachable only through a `secret_` accessor.
///
/// `Debug` shows the index, ε and part size: never the counts or the model.
pub struct Selection<M> {
    index: usize,
    model: M,
    epsilon: f64,
    delta: f64,
    validation_rows: usize,
    secret_mistakes: Vec<usize>,
}

impl<M> Selection<M> {
    /// The position of the chosen candidate in the list given to the selection.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The chosen model (trained on its own part only).
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The chosen model, by value.
    pub fn into_model(self) -> M {
        self.model
    }

    /// The end-to-end ε the selection spent.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The end-to-end δ the selection spent (0 when every candidate is ε-DP).
    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// Rows of the held-out part (a function of n only: public).
    pub fn validation_rows(&self) -> usize {
        self.validation_rows
    }

    /// **Not private.** Every candidate's exact number of mistakes on the held-out part,
    /// in candidate order: the data the exponential mechanism protects. For experiments
    /// and diagnostics on data that may be seen; never release it.
    pub fn secret_validation_mistakes(&self) -> &[usize] {
        &self.secret_mistakes
    }
}

impl<M> fmt::Debug for Selection<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selection")
            .field("index", &self.index)
            .field("epsilon", &self.epsilon)
            .field("delta", &self.delta)
            .field("validation_rows", &self.validation_rows)
            .finish_non_exhaustive()
    }
}
