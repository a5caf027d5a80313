//! The interface to serve answers from: noise drawn ahead of the query and answers released
//! at fixed time slots, so that the time of an answer does not reveal its noise.

use std::time::{Duration, Instant};

use dp_erm::Features;
use dp_noise::{PrivacyBudget, ReleaseRng};

use crate::error::PredictError;
use crate::interface::{PredictionInterface, PrivatePredictor};
use crate::pool::{MAX_POOL, NoisePool, NoiseSource};

/// Longest answer slot accepted.
pub const MAX_SLOT: Duration = Duration::from_secs(60);

/// Draws a pool holds after a refill, at most: enough for many answers, small enough that
/// a refill takes about a millisecond.
const REFILL_TARGET: u64 = 4096;

/// A [`PredictionInterface`] made to serve queries from people who can time the answers.
///
/// Each answer of a mechanism is ε-DP, but the time taken to compute it is not covered by
/// that guarantee: dp-noise's exact samplers run longer for larger noise (a discrete
/// Laplace draw loops about `|K|/t` times) and the exponential mechanism's rejection loop
/// runs a number of times that depends on the utilities, that is on the data. From an
/// answer and its running time a distinguisher recovers much of the noise (measured:
/// ε ≥ 3.7 for answers claimed 1-DP). This interface closes both channels:
///
/// 1. **Noise drawn ahead.** For the Laplace-based mechanisms ([`crate::StableErm`],
///    [`crate::ProjectedSgd`], [`crate::LaplaceAverageEnsemble`], [`crate::StableRegression`],
///    [`crate::RegressionMeanEnsemble`]) the noise does not depend
///    on the data; it is drawn into a [`NoisePool`] at construction and by
///    [`ServingInterface::refill`] or [`ServingInterface::add_noise`], never while a query
///    waits. An answer takes its draws from the pool and does no sampling at all: its
///    computation (a dot product or a vote sum, the grid snap, one integer addition) takes
///    a time that does not depend on the noise.
/// 2. **Fixed slots.** Every answer is released (the call returns) at `start + k·slot`,
///    `start` being the moment the call began and `k ≥ 1` the first slot boundary after the
///    computation finished: with a slot the computation fits in, always exactly one slot
///    after the call. This covers what still depends on the data or the noise — the soft
///    majority's and the walk's exact sampling, a model's score — and the pooled path's
///    small residue. A batch of `q` answers uses slots of `q·slot`.
///
/// Refusals (a malformed query, an exhausted budget, a pool with too few draws) return at
/// once: they depend on the query's shape, the number of queries and the pool's size only,
/// never on the training data or the noise.
///
/// # Privacy
/// Each answer is ε-DP with respect to the training data exactly as through
/// [`PredictionInterface`] (same mechanisms, same laws: a pooled answer is computed with
/// the same arithmetic from noise drawn from the same law), charged to the same budget by
/// basic composition. Beyond the answer, an observer sees its release time. When the
/// computation fits in the slot that time is `start + slot` plus the operating system's
/// wake-up latency, whatever the data and the noise, and the pair (answer, time) is ε-DP
/// too. What remains, honestly:
/// - **Overruns.** A computation longer than the slot is released at a later boundary,
///   visible as `k > 1` and counted by [`ServingInterface::overruns`] (which therefore
///   reveals nothing the times did not). For the pooled mechanisms the computation's length
///   depends on the query's shape and the model's size, not on the data or the noise, so an
///   overrun reflects the machine (a preemption, a page fault); for the soft majority and
///   the walk the sampler's length also depends on the data, with a geometric tail (each
///   proposal of the two-label exponential mechanism is accepted with probability ≥ ½).
///   If `p` bounds the probability of an overrun on every dataset, (answer, slot count)
///   is (ε, δ)-DP with `δ = (1 + e^ε)·p` per answer (split any event on `k = 1` and
///   `k > 1`; the first part is post-processing of the answer). Choose a slot far above
///   the typical computation (the crate's test uses 10 µs for a sub-microsecond answer)
///   and watch `overruns()`.
/// - **Jitter.** The release time carries the OS's scheduling and timer jitter; it is
///   independent of the computation while that fits in the slot, up to shared-hardware
///   effects (caches, frequency scaling, a core busy with a sibling thread) that the
///   computation leaves on the wait. Those effects are not modelled.
/// - **Refills.** Drawing a pool takes time that grows with the noise drawn. A refill
///   (or a [`NoiseSource::draw`] on another thread) must run where nobody who queries can
///   time it; a query waiting behind a refill would see the refill's length. Whoever
///   holds the pooled noise can remove it from answers: it is as secret as a generator's
///   state.
/// - **Not a network.** The interface controls when the call returns, not when bytes leave
///   a machine: a server must send the answer when the call returns, not delay it by work
///   that depends on the answer.
///
/// The CPU spins for the last 200 µs of each slot (sleeping is too coarse to release on
/// time); a slot costs one core for at most that long.
///
/// ```
/// use std::time::Duration;
/// use dp_erm::{Examples, Features, Loss};
/// use dp_noise::DpRng;
/// use dp_predict::{ServingInterface, StableErmParams};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let data = Examples::new(
///     Features::dense(1, vec![-0.5, -0.2, 0.3, 0.8])?,
///     vec![-1.0, -1.0, 1.0, 1.0],
/// )?;
/// let mut rng = DpRng::from_os_entropy()?;
/// let model = StableErmParams::new(Loss::Logistic, 0.1, 1.0).fit(&data, &mut rng)?;
/// // Ten 1-DP answers, each released 100 µs after its call; noise for all ten drawn now.
/// let slot = Duration::from_micros(100);
/// let mut serving = ServingInterface::new(model, 10.0, slot, &mut rng)?;
/// assert_eq!(serving.pooled(), Some(10));
/// let _answer = serving.answer(&[0.4], &mut rng)?;
/// assert_eq!(serving.pooled(), Some(9));
///
/// // Noise for later answers, drawn on another thread while this one serves.
/// let source = serving.noise_source().expect("a Laplace mechanism");
/// let mut background = DpRng::from_os_entropy()?;
/// let drawing = std::thread::spawn(move || source.draw(100, &mut background));
/// serving.add_noise(drawing.join().expect("the drawing thread")?)?;
/// assert_eq!(serving.pooled(), Some(109));
/// # Ok(())
/// # }
/// ```
pub struct ServingInterface<P> {
    inner: PredictionInterface<P>,
    slot: Duration,
    /// `Some` for the mechanisms whose noise is drawn ahead.
    pool: Option<NoisePool>,
    overruns: u64,
}

impl<P: PrivatePredictor> ServingInterface<P> {
    /// `predictor` behind a budget of `total_epsilon`, answering at slots of `slot`
    /// (above 0 and at most [`MAX_SLOT`]). For the Laplace-based mechanisms the pool is
    /// filled at once from `rng` with noise for every answer the budget allows (at most
    /// 4096; [`ServingInterface::refill`] for more). Refuses a bad slot or budget before
    /// drawing anything.
    pub fn new<R: ReleaseRng + ?Sized>(
        predictor: P,
        total_epsilon: f64,
        slot: Duration,
        rng: &mut R,
    ) -> Result<Self, PredictError> {
        let slot = AnswerSlot::new(slot)?;
        Ok(PredictionInterface::new(predictor, total_epsilon)?.serving(slot, rng))
    }

    fn from_interface<R: ReleaseRng + ?Sized>(
        inner: PredictionInterface<P>,
        slot: AnswerSlot,
        rng: &mut R,
    ) -> Self {
        let pool = inner.predictor().noise_source().map(NoisePool::empty);
        let mut serving = Self {
            inner,
            slot: slot.0,
            pool,
            overruns: 0,
        };
        serving.refill(rng);
        serving
    }

    /// The budget: limit, spent, ledger.
    pub fn budget(&self) -> &PrivacyBudget {
        self.inner.budget()
    }

    /// The ε one answer costs.
    pub fn epsilon_per_query(&self) -> f64 {
        self.inner.epsilon_per_query()
    }

    /// How many more single queries the budget allows (see
    /// [`PredictionInterface::queries_left`]).
    pub fn queries_left(&self) -> u64 {
        self.inner.queries_left()
    }

    /// The time slot: every answer is released a whole number of slots after its call.
    pub fn slot(&self) -> Duration {
        self.slot
    }

    /// How many answers were released later than one slot after their call (one batch
    /// counts once). Reveals what the release times revealed, nothing more.
    pub fn overruns(&self) -> u64 {
        self.overruns
    }

    /// The law of the noise drawn ahead, for a mechanism that takes it (`None` for the soft
    /// majority and the walk, whose answers are covered by the slots alone).
    pub fn noise_source(&self) -> Option<NoiseSource> {
        self.pool.as_ref().map(NoisePool::source)
    }

    /// How many more answers the pool has noise for (`None` without a pool).
    pub fn pooled(&self) -> Option<usize> {
        self.pool.as_ref().map(NoisePool::len)
    }

    /// Tops the pool up to noise for every answer the budget still allows, at most 4096
    /// (nothing to do without a pool). Takes time that grows with the noise drawn: call it
    /// where nobody who queries can time it — at start-up, or between queries of a service
    /// that accepts none meanwhile. To refill while serving, draw a pool on another thread
    /// from [`ServingInterface::noise_source`] and hand it over with
    /// [`ServingInterface::add_noise`].
    pub fn refill<R: ReleaseRng + ?Sized>(&mut self, rng: &mut R) {
        // At most 4096 draws, far below the pool's cap.
        let target = self.inner.queries_left().min(REFILL_TARGET) as usize;
        if let Some(pool) = &mut self.pool {
            let missing = target.saturating_sub(pool.len());
            pool.append(pool.source().draw_any(missing, rng));
        }
    }

    /// Adds `noise` (drawn with this interface's [`ServingInterface::noise_source`]) to the
    /// pool; its time depends on the number of draws only. Refuses a pool of another law
    /// (or any pool, for a mechanism that takes none) and a pool that would grow beyond
    /// 65,536 draws, changing nothing.
    pub fn add_noise(&mut self, noise: NoisePool) -> Result<(), PredictError> {
        let Some(pool) = &mut self.pool else {
            return Err(PredictError::NoisePoolMismatch);
        };
        if pool.source() != noise.source() {
            return Err(PredictError::NoisePoolMismatch);
        }
        let size = pool.len().saturating_add(noise.len());
        if size > MAX_POOL {
            return Err(PredictError::TooLarge {
                what: "noise pool size",
                size,
                limit: MAX_POOL,
            });
        }
        pool.append(noise);
        Ok(())
    }

    /// Refuses `queries` answers, computing nothing, if the budget cannot pay for them
    /// or (then) the pool holds too few draws.
    fn check_funds(&self, queries: usize) -> Result<(), PredictError> {
        if let Some(refusal) = self.inner.unaffordable(queries) {
            return Err(refusal);
        }
        match &self.pool {
            Some(pool) if pool.len() < queries => Err(PredictError::NoisePoolEmpty {
                needed: queries,
                pooled: pool.len(),
            }),
            _ => Ok(()),
        }
    }

    /// One answer to a query that passed the checks and was charged: with pooled noise
    /// when the mechanism takes it, else sampled from `rng`.
    fn compute<R: ReleaseRng + ?Sized>(
        &mut self,
        query: &P::Query,
        rng: &mut R,
    ) -> Result<P::Answer, PredictError> {
        match &mut self.pool {
            Some(pool) => {
                // `check_funds` ran before the charge: a draw is there.
                let drawn = pool.take().ok_or(PredictError::NoisePoolEmpty {
                    needed: 1,
                    pooled: 0,
                })?;
                self.inner.predictor().answer_with(query, drawn)
            }
            None => self.inner.predictor().answer_unchecked(query, rng),
        }
    }

    /// Waits until the first boundary `start + k·slot` (k ≥ 1) after now, then returns
    /// `result`: the release time depends on how long the computation took only when it
    /// overran the slot.
    fn release<T>(&mut self, start: Instant, slot: Duration, result: T) -> T {
        let slots = start.elapsed().as_nanos() / slot.as_nanos() + 1;
        if slots > 1 {
            self.overruns += 1;
        }
        let offset = slot.saturating_mul(u32::try_from(slots).unwrap_or(u32::MAX));
        // Unreachable overflow (centuries from now) is not worth a panic.
        if let Some(deadline) = start.checked_add(offset) {
            wait_until(deadline);
        }
        result
    }

    /// One ε-DP answer, charged to the budget and released one slot after the call (see
    /// the type's `# Privacy`). Refused at once, computing and charging nothing, for a
    /// malformed query, an empty pool or a budget that cannot pay.
    pub fn answer<R: ReleaseRng + ?Sized>(
        &mut self,
        query: &P::Query,
        rng: &mut R,
    ) -> Result<P::Answer, PredictError> {
        let start = Instant::now();
        self.inner.predictor().check_query(query)?;
        self.check_funds(1)?;
        self.inner.charge(1)?;
        let answer = self.compute(query, rng);
        self.release(start, self.slot, answer)
    }

    /// One answer per query, charged `q·ε` together and released `q` slots after the call;
    /// the whole batch is refused (nothing computed or charged) if any query is malformed,
    /// the pool has too few draws or the budget cannot pay for all.
    pub fn answer_batch<R: ReleaseRng + ?Sized>(
        &mut self,
        queries: &[&P::Query],
        rng: &mut R,
    ) -> Result<Vec<P::Answer>, PredictError> {
        let start = Instant::now();
        for query in queries {
            self.inner.predictor().check_query(query)?;
        }
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        self.check_funds(queries.len())?;
        self.inner.charge(queries.len())?;
        let answers = queries
            .iter()
            .map(|query| self.compute(query, rng))
            .collect();
        let slot = batch_slot(self.slot, queries.len());
        self.release(start, slot, answers)
    }
}

impl<P: PrivatePredictor<Query = [f64]>> ServingInterface<P> {
    /// One answer per row of `rows`, as [`ServingInterface::answer_batch`] (rows made dense
    /// one at a time, as [`PredictionInterface::answer_rows`] does).
    pub fn answer_rows<R: ReleaseRng + ?Sized>(
        &mut self,
        rows: &Features,
        rng: &mut R,
    ) -> Result<Vec<P::Answer>, PredictError> {
        let start = Instant::now();
        if let Some(refusal) = self.inner.unaffordable(rows.len()) {
            return Err(refusal);
        }
        let mut x = vec![0.0; rows.features()];
        for i in 0..rows.len() {
            rows.row(i).write_dense(&mut x);
            self.inner.predictor().check_query(&x)?;
        }
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        self.check_funds(rows.len())?;
        self.inner.charge(rows.len())?;
        let answers = (0..rows.len())
            .map(|i| {
                rows.row(i).write_dense(&mut x);
                self.compute(&x, rng)
            })
            .collect();
        let slot = batch_slot(self.slot, rows.len());
        self.release(start, slot, answers)
    }
}

impl<P: PrivatePredictor> PredictionInterface<P> {
    /// This interface (its mechanism and its budget, spent so far included) as a
    /// [`ServingInterface`] releasing answers at slots of `slot`, its pool filled from
    /// `rng`. The way to answer queries from anyone who can time the answers. Cannot fail
    /// (the slot was checked when it was made), so the budget spent is never lost with a
    /// consumed interface.
    pub fn serving<R: ReleaseRng + ?Sized>(
        self,
        slot: AnswerSlot,
        rng: &mut R,
    ) -> ServingInterface<P> {
        ServingInterface::from_interface(self, slot, rng)
    }
}

/// The time slot of a [`ServingInterface`]: a duration above 0 and at most [`MAX_SLOT`],
/// chosen by the operator (public: it must not depend on the data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerSlot(Duration);

impl AnswerSlot {
    /// `slot`, refused (naming it, in seconds) if 0 or above [`MAX_SLOT`].
    pub fn new(slot: Duration) -> Result<Self, PredictError> {
        if slot.is_zero() || slot > MAX_SLOT {
            return Err(PredictError::InvalidParameter {
                what: "answer slot (seconds)",
                value: slot.as_secs_f64(),
                requirement: "above 0 and at most 60",
            });
        }
        Ok(Self(slot))
    }

    /// The duration.
    pub fn duration(&self) -> Duration {
        self.0
    }
}

impl<P> std::fmt::Debug for ServingInterface<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingInterface")
            .field("interface", &self.inner)
            .field("slot", &self.slot)
            .field("pooled", &self.pool.as_ref().map(NoisePool::len))
            .field("overruns", &self.overruns)
            .finish()
    }
}

/// The slot of a batch of `queries` answers: `queries · slot`, saturating.
fn batch_slot(slot: Duration, queries: usize) -> Duration {
    slot.saturating_mul(u32::try_from(queries).unwrap_or(u32::MAX))
}

/// The last stretch before a deadline is spun: a sleep wakes up tens of microseconds late.
const SPIN: Duration = Duration::from_micros(200);

/// Returns at `deadline` (or at once if it passed): sleeps until shortly before, spins the
/// rest.
fn wait_until(deadline: Instant) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}
