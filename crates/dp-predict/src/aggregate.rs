//! Subsample-and-aggregate (Dwork & Feldman 2018, §4; docs/src/reference/algorithms.md §7.1, §7.2): `k`
//! non-private models on disjoint parts, whose votes are aggregated privately per query.

use dp_erm::{Classifier, Examples, Trainer};
use dp_noise::ReleaseRng;
use rand::RngExt;

use crate::error::{PredictError, check_finite};
use crate::interface::PrivatePredictor;
use crate::pool::{Drawn, NoiseSource};
use crate::vote::{AveragedAnswer, LaplaceAverage, SoftMajority, VoteKind, check_parts};

/// `k` models, model `j` trained on part `j` of a random partition of the training data
/// into `k` disjoint parts of nearly equal size.
///
/// The partition is a uniformly random permutation of the positions, drawn from the
/// generator independently of the data's values, cut into contiguous blocks: replacing the
/// example at one position changes exactly one part, whatever the permutation. Because
/// the permutation is uniform, the output's law does not depend on the rows' order, so
/// the guarantee also holds when "replace one" is read on the multiset of examples (a
/// dataset given sorted by its values is as safe as a shuffled one). Any [`Trainer`]
/// whose model depends on its own part only works (see [`Trainer`]'s `# Privacy`: dp-erm's
/// trainers refuse warm starts for this reason); the privacy comes from the aggregation,
/// so a non-private trainer
/// ([`Trainer::epsilon`] `None`, e.g. `ErmParams::non_private`) is the intended use — a
/// private one adds nothing this crate accounts for.
///
/// `Debug` prints the shape only.
#[derive(Clone)]
pub struct Ensemble<M> {
    models: Vec<M>,
    features: usize,
}

impl<M: Classifier> Ensemble<M> {
    /// Trains `parts` models with `trainer`. Refuses, before drawing or training anything,
    /// zero parts, more than [`crate::MAX_PARTS`], fewer rows than parts, and whatever the
    /// trainer refuses up front ([`PredictError::TrainerRefuses`]: its parameters at the
    /// parts' sizes, [`Trainer::check_shape`], and any row outside its input contract,
    /// [`Trainer::check_inputs`] — for dp-erm's trainers a row of norm above 1).
    ///
    /// A trainer that still fails on its part fails the whole call with an error naming the
    /// part and the trainer's message — an outcome that can depend on the data and is not
    /// covered by any ε (for dp-erm's trainers only `ErmError::NotConverged`, which carries
    /// no numbers).
    pub fn train<T>(
        trainer: &T,
        data: &Examples,
        parts: usize,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Self, PredictError>
    where
        T: Trainer<Model = M>,
    {
        let parts = check_parts(parts)?;
        let n = data.len();
        if n < parts {
            return Err(PredictError::TooFewRows { rows: n, parts });
        }
        // Parts hold ⌊n/k⌋ or ⌈n/k⌉ rows: public sizes, checked once each.
        let refuses = |e: T::Error| PredictError::TrainerRefuses {
            message: e.to_string(),
        };
        for rows in [n / parts, n.div_ceil(parts)] {
            trainer
                .check_shape(rows, data.features())
                .map_err(refuses)?;
        }
        trainer.check_inputs(data).map_err(refuses)?;
        let order = random_order(n, rng);
        let mut models = Vec::with_capacity(parts);
        for part in 0..parts {
            let subset = data.select(part_positions(&order, part, parts))?;
            let model = trainer
                .train(&subset, rng)
                .map_err(|e| PredictError::Training {
                    part,
                    message: e.to_string(),
                })?;
            models.push(model);
        }
        Ok(Self {
            models,
            features: data.features(),
        })
    }

    /// Number of models k.
    pub fn parts(&self) -> usize {
        self.models.len()
    }

    /// The input dimension.
    pub fn features(&self) -> usize {
        self.features
    }

    /// Checks a query's length and values (no training data involved).
    pub fn check_query(&self, x: &[f64]) -> Result<(), PredictError> {
        check_query_row(self.features, x)
    }

    /// **Not private**: the models (trained without privacy on their parts).
    pub fn secret_models(&self) -> &[M] {
        &self.models
    }

    /// **Not private**: each model's score at `x`.
    pub fn secret_scores(&self, x: &[f64]) -> Result<Vec<f64>, PredictError> {
        self.check_query(x)?;
        self.models
            .iter()
            .map(|m| Ok(m.decision_function(x)?))
            .collect()
    }

    /// **Not private**: the votes `(for +1, for −1)` at `x`. A model whose score at `x`
    /// cannot be computed votes −1 (see `score_or_fixed_vote`).
    pub fn secret_votes(&self, x: &[f64]) -> Result<(usize, usize), PredictError> {
        self.check_query(x)?;
        let positive = self
            .models
            .iter()
            .filter(|m| score_or_fixed_vote(*m, x).is_some_and(|s| s >= 0.0))
            .count();
        Ok((positive, self.models.len() - positive))
    }

    fn vote_sum(&self, x: &[f64], kind: VoteKind) -> Result<f64, PredictError> {
        self.check_query(x)?;
        // Quantized votes: the sum is exact (see `quantize_vote`).
        Ok(self
            .models
            .iter()
            .map(|m| score_or_fixed_vote(m, x).map_or(0.0, |s| kind.vote(s)))
            .sum())
    }
}

/// A uniformly random permutation of `0..n`, drawn independently of the data's values.
pub(crate) fn random_order(n: usize, rng: &mut dyn ReleaseRng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    order
}

/// The positions of part `part` of `parts` nearly equal contiguous blocks of `order`
/// (⌊n/k⌋ or ⌈n/k⌉ each): every position lies in exactly one part.
pub(crate) fn part_positions(order: &[usize], part: usize, parts: usize) -> &[usize] {
    let n = order.len();
    &order[part * n / parts..(part + 1) * n / parts]
}

/// A model's score at a checked query (right length, finite values), or `None` when it
/// cannot be computed — a linear score that overflows at a huge query. Which queries
/// overflow depends on the model, that is on the data: passing the failure on as an error
/// would be a data-dependent output outside the ε the answer pays for (one query per bit
/// could read a weight). `None` counts as a vote for −1 (0 in Laplace averaging): a fixed
/// vote, so changing one example still changes one model's vote by at most 1.
fn score_or_fixed_vote<M: Classifier>(model: &M, x: &[f64]) -> Option<f64> {
    model.decision_function(x).ok().filter(|s| s.is_finite())
}

impl<M> std::fmt::Debug for Ensemble<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ensemble")
            .field("parts", &self.models.len())
            .field("features", &self.features)
            .finish_non_exhaustive()
    }
}

/// Subsample-and-aggregate with the soft-majority vote (§7.1): answers ±1.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data (replace one example): the
/// example lies in one part, so one model and each vote count change by at most 1, and
/// the soft majority ([`SoftMajority`], probability ∝ `exp(ε·count/2)`) is the exponential
/// mechanism over counts of sensitivity 1. `q` answers cost `q·ε` ([`crate::PredictionInterface`]).
#[derive(Debug, Clone)]
pub struct SoftMajorityEnsemble<M> {
    ensemble: Ensemble<M>,
    vote: SoftMajority,
}

impl<M: Classifier> SoftMajorityEnsemble<M> {
    /// The ensemble, answering with the ε-DP soft majority.
    pub fn new(ensemble: Ensemble<M>, epsilon: f64) -> Result<Self, PredictError> {
        Ok(Self {
            ensemble,
            vote: SoftMajority::new(epsilon)?,
        })
    }

    #[cfg(test)]
    pub(crate) fn with_vote(ensemble: Ensemble<M>, vote: SoftMajority) -> Self {
        Self { ensemble, vote }
    }

    /// The models.
    pub fn ensemble(&self) -> &Ensemble<M> {
        &self.ensemble
    }

    /// Both answers' exact probabilities at `x` (tests).
    #[cfg(test)]
    pub(crate) fn law(&self, x: &[f64]) -> Result<[f64; 2], PredictError> {
        self.ensemble.check_query(x)?;
        let (positive, negative) = self.ensemble.secret_votes(x)?;
        self.vote.law(positive, negative)
    }

    /// **Not private**: the exact probability of answering +1 at `x`.
    pub fn secret_probability_of_positive(&self, x: &[f64]) -> Result<f64, PredictError> {
        self.ensemble.check_query(x)?;
        let (positive, negative) = self.ensemble.secret_votes(x)?;
        self.vote.probability_of_positive(positive, negative)
    }
}

impl<M: Classifier> PrivatePredictor for SoftMajorityEnsemble<M> {
    type Query = [f64];
    type Answer = f64;

    fn epsilon(&self) -> f64 {
        self.vote.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        self.ensemble.check_query(query)
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<f64, PredictError> {
        let (positive, negative) = self.ensemble.secret_votes(query)?;
        self.vote.choose(positive, negative, rng)
    }
}

/// Subsample-and-aggregate with Laplace averaging (§7.2): answers a noisy fraction of
/// votes and a label drawn from it.
///
/// # Privacy
/// Each answer is **ε-DP** with respect to the training data (replace one example): one
/// part changes, so one vote in [0, 1] changes, and the sum of votes moves by at most 1;
/// it is released with the snapping Laplace mechanism at sensitivity 1 ([`LaplaceAverage`]),
/// and everything after is post-processing. `q` answers cost `q·ε`.
#[derive(Debug, Clone)]
pub struct LaplaceAverageEnsemble<M> {
    ensemble: Ensemble<M>,
    average: LaplaceAverage,
    kind: VoteKind,
}

impl<M: Classifier> LaplaceAverageEnsemble<M> {
    /// The ensemble, answering with ε-DP Laplace averaging of `kind` votes.
    pub fn new(ensemble: Ensemble<M>, epsilon: f64, kind: VoteKind) -> Result<Self, PredictError> {
        let average = LaplaceAverage::new(epsilon, ensemble.parts())?;
        Ok(Self {
            ensemble,
            average,
            kind,
        })
    }

    /// The models.
    pub fn ensemble(&self) -> &Ensemble<M> {
        &self.ensemble
    }
}

impl<M: Classifier> PrivatePredictor for LaplaceAverageEnsemble<M> {
    type Query = [f64];
    type Answer = AveragedAnswer;

    fn epsilon(&self) -> f64 {
        self.average.epsilon()
    }

    fn check_query(&self, query: &[f64]) -> Result<(), PredictError> {
        self.ensemble.check_query(query)
    }

    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &[f64],
        rng: &mut R,
    ) -> Result<AveragedAnswer, PredictError> {
        let sum = self.ensemble.vote_sum(query, self.kind)?;
        self.average.release_sum(sum, rng)
    }

    fn noise_source(&self) -> Option<NoiseSource> {
        Some(self.average.noise_source())
    }

    fn answer_with(&self, query: &[f64], drawn: Drawn) -> Result<AveragedAnswer, PredictError> {
        let sum = self.ensemble.vote_sum(query, self.kind)?;
        self.average.release_sum_with(sum, drawn)
    }
}

/// A query row of `features` finite values, or the error naming what is wrong (the query's
/// own values only: no training data involved).
pub(crate) fn check_query_row(features: usize, x: &[f64]) -> Result<(), PredictError> {
    if x.len() != features {
        return Err(PredictError::QueryDimension {
            expected: features,
            found: x.len(),
        });
    }
    check_finite("query feature", x)
}
