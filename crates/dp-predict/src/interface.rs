//! The prediction interface: a trained mechanism behind a privacy budget.

use dp_erm::Features;
use dp_noise::{PrivacyBudget, ReleaseRng, add_rounding_up};

use crate::error::PredictError;
use crate::pool::{Drawn, NoiseSource};

mod sealed {
    pub trait Sealed {}
}

/// A trained mechanism whose every answer is ε-DP with respect to its training data: the
/// mechanisms of this crate (sealed: the interface trusts [`PrivatePredictor::epsilon`], so
/// only mechanisms whose ε this crate has proved can stand behind it).
pub trait PrivatePredictor: sealed::Sealed {
    /// What a query is (a point of the line, a row of features).
    type Query: ?Sized;
    /// What an answer is.
    type Answer;

    /// The ε each answer costs.
    fn epsilon(&self) -> f64;

    /// Checks a query's shape (dimension, finite values) without looking at the training
    /// data: an error here costs no ε.
    fn check_query(&self, query: &Self::Query) -> Result<(), PredictError>;

    /// Answers a query that passed [`PrivatePredictor::check_query`], without charging
    /// anything: [`PredictionInterface`] charges.
    fn answer_unchecked<R: ReleaseRng + ?Sized>(
        &self,
        query: &Self::Query,
        rng: &mut R,
    ) -> Result<Self::Answer, PredictError>;

    /// The law of the noise an answer adds, when it does not depend on the data and can be
    /// drawn ahead of the query (the Laplace-based mechanisms); `None` for mechanisms that
    /// sample from a law the data set (the soft majority, the walk).
    fn noise_source(&self) -> Option<NoiseSource> {
        None
    }

    /// As [`PrivatePredictor::answer_unchecked`] with the noise drawn ahead: crate-internal
    /// (a [`crate::ServingInterface`] calls it with draws from its pool, which only this
    /// crate can make).
    #[doc(hidden)]
    fn answer_with(
        &self,
        _query: &Self::Query,
        _drawn: Drawn,
    ) -> Result<Self::Answer, PredictError> {
        Err(PredictError::NoisePoolMismatch)
    }
}

macro_rules! sealed_predictor {
    ($($t:ty),* $(,)?) => { $(impl sealed::Sealed for $t {})* };
}
sealed_predictor!(
    crate::ExponentialWalk,
    crate::StableErm,
    crate::ProjectedSgd,
    crate::StableRegression,
    crate::RegressionMeanEnsemble,
    crate::RegressionMedianEnsemble
);
impl<M> sealed::Sealed for crate::SoftMajorityEnsemble<M> {}
impl<M> sealed::Sealed for crate::LaplaceAverageEnsemble<M> {}

/// A trained mechanism and the privacy budget its answers are drawn from.
///
/// # Privacy
/// Every answer is ε-DP with respect to the training data (ε = the mechanism's
/// [`PrivatePredictor::epsilon`], neighbouring datasets: one example replaced), and the
/// interface charges each answer to its [`PrivacyBudget`] before computing it. Answers
/// compose by **basic (sequential) composition**: `q` answers cost `q·ε`, a batch of `q`
/// queries is charged `q·ε` at once (the sum rounded up) and refused whole if it does not
/// fit. A refused call computes nothing and charges nothing; the refusal (an error naming
/// the requested and remaining ε) depends on the number of queries and the budget only.
/// Queries are checked (dimension, finite values) before the charge: that check does not
/// look at the training data. Once charged, an answer does not fail on data-dependent
/// grounds: scores are computed so that no finite query overflows, and an ensemble
/// model whose score cannot be computed casts a fixed vote.
///
/// The interface is the boundary for whoever holds it: it does not give out the mechanism
/// (whose uncharged answers and `secret_*` accessors are for the curator who built it).
///
/// The same training data behind two interfaces has two budgets that add up: give each
/// dataset one interface.
///
/// **Timing is not covered.** The guarantee is for the answer, not for how long the call
/// took: the exact samplers run longer for larger noise (Laplace) or for some data
/// (exponential mechanism), and measured, answer plus time tells neighbouring datasets
/// apart far beyond ε. To answer anyone who can time the answers — over a network, in a
/// shared process — use [`crate::ServingInterface`] ([`PredictionInterface::serving`]),
/// which draws the noise ahead and releases answers at fixed slots.
pub struct PredictionInterface<P> {
    predictor: P,
    budget: PrivacyBudget,
}

impl<P: PrivatePredictor> PredictionInterface<P> {
    /// `predictor` behind a budget of `total_epsilon` (finite, > 0).
    pub fn new(predictor: P, total_epsilon: f64) -> Result<Self, PredictError> {
        Ok(Self {
            predictor,
            budget: PrivacyBudget::new(total_epsilon)?,
        })
    }

    /// The mechanism (crate-internal). Not public: whoever holds an interface must not
    /// reach the mechanism's uncharged answers or its secret model.
    pub(crate) fn predictor(&self) -> &P {
        &self.predictor
    }

    /// The budget: limit, spent, ledger.
    pub fn budget(&self) -> &PrivacyBudget {
        &self.budget
    }

    /// The ε one answer costs.
    pub fn epsilon_per_query(&self) -> f64 {
        self.predictor.epsilon()
    }

    /// How many more single queries the budget allows: exact up to 65,536 (found by
    /// replaying the charges), a lower bound beyond (each charge's upward rounding is at
    /// most a relative 2⁻⁵² of the running total, allowed for in bulk).
    pub fn queries_left(&self) -> u64 {
        const EXACT_UP_TO: u64 = 1 << 16;
        let epsilon = self.predictor.epsilon();
        let mut total = self.budget.spent();
        for count in 0..EXACT_UP_TO {
            total = add_rounding_up(total, epsilon);
            if total > self.budget.limit() {
                return count;
            }
        }
        // At least 2^16 fit. In bulk: k charges land at most 2k ulps of 2·limit above the
        // exact sum k·ε, so k fit if k·ε + 4k·u·limit ≤ remaining.
        let k = (self.budget.remaining() / epsilon).min(2f64.powi(52));
        let room = self.budget.remaining() - 4.0 * k * f64::EPSILON * self.budget.limit();
        ((room / epsilon).floor().max(0.0) as u64).max(EXACT_UP_TO)
    }

    /// The ε that `queries` answers cost: `queries · ε`, summed rounding up.
    fn cost(&self, queries: usize) -> f64 {
        let epsilon = self.predictor.epsilon();
        (0..queries).fold(0.0, |total, _| add_rounding_up(total, epsilon))
    }

    /// The refusal for `queries` answers, if the budget cannot pay for them.
    pub(crate) fn unaffordable(&self, queries: usize) -> Option<PredictError> {
        let requested = self.cost(queries);
        (!self.budget.can_spend(requested)).then(|| PredictError::BudgetExceeded {
            queries,
            requested,
            remaining: self.budget.remaining(),
            limit: self.budget.limit(),
        })
    }

    /// Charges `queries` answers or refuses them all, before any computation.
    pub(crate) fn charge(&mut self, queries: usize) -> Result<(), PredictError> {
        if let Some(refusal) = self.unaffordable(queries) {
            return Err(refusal);
        }
        let requested = self.cost(queries);
        let label = if queries == 1 {
            "prediction query".to_owned()
        } else {
            format!("batch of {queries} prediction queries")
        };
        Ok(self.budget.spend(&label, requested)?)
    }

    /// One ε-DP answer, charged to the budget (refused, computing nothing, when the budget
    /// cannot pay for it).
    pub fn answer<R: ReleaseRng + ?Sized>(
        &mut self,
        query: &P::Query,
        rng: &mut R,
    ) -> Result<P::Answer, PredictError> {
        self.predictor.check_query(query)?;
        self.charge(1)?;
        self.predictor.answer_unchecked(query, rng)
    }

    /// One answer per query, charged `q·ε` together; the whole batch is refused (nothing
    /// computed, nothing charged) if any query is malformed or the budget cannot pay for all.
    pub fn answer_batch<R: ReleaseRng + ?Sized>(
        &mut self,
        queries: &[&P::Query],
        rng: &mut R,
    ) -> Result<Vec<P::Answer>, PredictError> {
        for query in queries {
            self.predictor.check_query(query)?;
        }
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        self.charge(queries.len())?;
        queries
            .iter()
            .map(|query| self.predictor.answer_unchecked(query, rng))
            .collect()
    }
}

impl<P: PrivatePredictor<Query = [f64]>> PredictionInterface<P> {
    /// One answer per row of `rows`, as [`PredictionInterface::answer_batch`].
    pub fn answer_rows<R: ReleaseRng + ?Sized>(
        &mut self,
        rows: &Features,
        rng: &mut R,
    ) -> Result<Vec<P::Answer>, PredictError> {
        if let Some(refusal) = self.unaffordable(rows.len()) {
            return Err(refusal);
        }
        // One row is made dense at a time (a batch of sparse rows with many features would
        // not fit in memory densely): every shape first — that check does not look at the
        // training data — then the charge, then the answers.
        let mut x = vec![0.0; rows.features()];
        for i in 0..rows.len() {
            rows.row(i).write_dense(&mut x);
            self.predictor.check_query(&x)?;
        }
        self.charge(rows.len())?;
        (0..rows.len())
            .map(|i| {
                rows.row(i).write_dense(&mut x);
                self.predictor.answer_unchecked(&x, rng)
            })
            .collect()
    }
}

impl<P> std::fmt::Debug for PredictionInterface<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PredictionInterface")
            .field("limit", &self.budget.limit())
            .field("spent", &self.budget.spent())
            .finish_non_exhaustive()
    }
}
