//! Private prediction (`dpml.predict`): dp-predict's interfaces, whose every answer is ε-DP
//! with respect to the training data and charged to the interface's budget before it is
//! computed (dp-predict's `PredictionInterface` / `ServingInterface` do the charging and
//! the refusals; nothing here re-implements them).
//!
//! - Subsample-and-aggregate: non-private linear models on disjoint parts, aggregated per
//!   query by the soft majority (exponential mechanism) or by Laplace averaging.
//! - The exponential projected walk: points on a line, labels 0/1.
//! - Real values: stable regularized Huber regression with Laplace on each prediction, and
//!   subsample-and-aggregate over non-private regressors (clipped mean or private median).

use std::time::Duration;

use dp_erm::{ErmParams, Examples, Features, LinearModel, Loss, TargetScale};
use dp_noise::ReleaseRng;
use dp_predict::{
    Ensemble, ExponentialWalk, LaplaceAverageEnsemble, LineData, PredictionInterface,
    PrivatePredictor, RegressionEnsemble, RegressionMeanEnsemble, RegressionMedianEnsemble,
    ServingInterface, SoftMajorityEnsemble, StableRegression, StableRegressionParams, VoteKind,
    WalkParams,
};

use crate::error::CoreError;
use crate::fit::{Randomness, binary_labels, check_classes, generator, training_set};
use crate::regress::regression_set;
use crate::rows::{RowTransform, Rows};

/// A plain interface, or one that serves at fixed time slots with noise drawn ahead.
enum Interface<P> {
    Plain(PredictionInterface<P>),
    Serving(ServingInterface<P>),
}

impl<P: PrivatePredictor> Interface<P> {
    fn new(
        predictor: P,
        total_epsilon: f64,
        slot: Option<Duration>,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Self, CoreError> {
        Ok(match slot {
            None => Interface::Plain(PredictionInterface::new(predictor, total_epsilon)?),
            Some(slot) => {
                Interface::Serving(ServingInterface::new(predictor, total_epsilon, slot, rng)?)
            }
        })
    }

    fn budget(&self) -> &dp_noise::PrivacyBudget {
        match self {
            Interface::Plain(i) => i.budget(),
            Interface::Serving(i) => i.budget(),
        }
    }

    fn status(&self) -> Status {
        let (queries_left, epsilon_per_query, overruns) = match self {
            Interface::Plain(i) => (i.queries_left(), i.epsilon_per_query(), None),
            Interface::Serving(i) => (i.queries_left(), i.epsilon_per_query(), Some(i.overruns())),
        };
        Status {
            limit: self.budget().limit(),
            spent: self.budget().spent(),
            remaining: self.budget().remaining(),
            queries_left,
            epsilon_per_query,
            overruns,
        }
    }
}

impl<P: PrivatePredictor<Query = [f64]>> Interface<P> {
    fn answer_rows(
        &mut self,
        rows: &Features,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Vec<P::Answer>, CoreError> {
        Ok(match self {
            Interface::Plain(i) => i.answer_rows(rows, rng)?,
            Interface::Serving(i) => i.answer_rows(rows, rng)?,
        })
    }
}

impl Interface<ExponentialWalk> {
    fn answer_points(
        &mut self,
        points: &[f64],
        rng: &mut dyn ReleaseRng,
    ) -> Result<Vec<bool>, CoreError> {
        let queries: Vec<&f64> = points.iter().collect();
        Ok(match self {
            Interface::Plain(i) => i.answer_batch(&queries, rng)?,
            Interface::Serving(i) => i.answer_batch(&queries, rng)?,
        })
    }
}

/// An interface's public state: its budget and what one answer costs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// The total ε the interface may spend.
    pub limit: f64,
    /// The ε spent by the answers so far.
    pub spent: f64,
    /// The ε left.
    pub remaining: f64,
    /// How many more single answers fit.
    pub queries_left: u64,
    /// The ε of one answer.
    pub epsilon_per_query: f64,
    /// Answers released late (serving interfaces only).
    pub overruns: Option<u64>,
}

/// How an ensemble's votes become an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregation {
    /// The exponential mechanism over the vote counts (answers a label).
    SoftMajority,
    /// The snapping Laplace mechanism on the fraction of votes (answers a noisy fraction
    /// and a label drawn from it).
    LaplaceAverage(VoteKind),
}

enum Answerer {
    SoftMajority(Interface<SoftMajorityEnsemble<LinearModel>>),
    LaplaceAverage(Interface<LaplaceAverageEnsemble<LinearModel>>),
    Walk(Interface<ExponentialWalk>),
    StableRegression(Interface<StableRegression>),
    RegressionMean(Interface<RegressionMeanEnsemble>),
    RegressionMedian(Interface<RegressionMedianEnsemble>),
}

/// How a regression predictor answers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RegressionMethod {
    /// Stable regularized ERM with Laplace on the prediction, at this Λ (None: the λ
    /// balancing bias and noise for a comparator of norm 1 on the scaled target).
    Stable {
        /// Λ, or None for dp-predict's balanced regularization.
        regularization: Option<f64>,
    },
    /// Subsample-and-aggregate over `parts` non-private regressors of Λ `regularization`
    /// (None: 1/⌊n/k⌋), aggregated by the clipped mean (`median` false) or the private
    /// median.
    Ensemble {
        /// k.
        parts: usize,
        /// Λ of each part's regressor.
        regularization: Option<f64>,
        /// The private median instead of the clipped mean.
        median: bool,
    },
}

/// Everything a regression predictor needs besides the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RegressionPredictorSpec {
    /// Which mechanism.
    pub method: RegressionMethod,
    /// The Huber threshold, in the scaled target's units.
    pub threshold: f64,
    /// The ε of each answer.
    pub epsilon_per_query: f64,
    /// The interface's total ε.
    pub total_epsilon: f64,
    /// Serve at fixed slots of this length (None: a plain interface).
    pub slot: Option<Duration>,
    /// The public row transform.
    pub transform: RowTransform,
    /// The public target bounds.
    pub target: TargetScale,
    /// Clip targets outside the bounds instead of refusing them.
    pub clip_targets: bool,
}

/// Trains a regression predictor on `rows` and `targets`. Refuses every bad parameter
/// before a row is read (dp-predict's and dp-erm's checks at the data's sizes), then the
/// rows and targets as dp-erm's `RegressionSet` does.
pub fn train_regression(
    rows: Rows<'_>,
    targets: &[f64],
    spec: &RegressionPredictorSpec,
    randomness: Randomness,
) -> Result<Predictor, CoreError> {
    let rows = rows.checked()?;
    let transform = spec.transform.checked()?;
    if targets.len() != rows.len() {
        return Err(CoreError::value(
            "y",
            format!("has {} targets for {} rows of X", targets.len(), rows.len()),
        ));
    }
    let (n, d) = (rows.len(), transform.output_features(rows.features()));
    let loss = Loss::huber_regression(spec.threshold)?;
    let mut rng = generator(randomness)?;
    let answerer = match spec.method {
        RegressionMethod::Stable { regularization } => {
            let lambda = match regularization {
                Some(l) => l,
                None => {
                    StableRegressionParams::balanced_regularization(1.0, spec.epsilon_per_query, n)?
                }
            };
            let params = StableRegressionParams::new(loss, lambda, spec.epsilon_per_query);
            params.sensitivity(n, d)?;
            let data = regression_set(&rows, targets, &transform, spec.target, spec.clip_targets)?;
            let stable = params.fit(&data, &mut *rng)?;
            Answerer::StableRegression(Interface::new(
                stable,
                spec.total_epsilon,
                spec.slot,
                &mut *rng,
            )?)
        }
        RegressionMethod::Ensemble {
            parts,
            regularization,
            median,
        } => {
            if parts == 0 || parts > n {
                return Err(CoreError::value(
                    "n_parts",
                    format!("= {parts}; it must be between 1 and the number of rows, {n}"),
                ));
            }
            let lambda = regularization.unwrap_or(1.0 / (n / parts) as f64);
            let params = ErmParams::non_private(loss, lambda);
            let data = regression_set(&rows, targets, &transform, spec.target, spec.clip_targets)?;
            let ensemble = RegressionEnsemble::train(&params, &data, parts, &mut *rng)?;
            if median {
                Answerer::RegressionMedian(Interface::new(
                    RegressionMedianEnsemble::new(ensemble, spec.epsilon_per_query)?,
                    spec.total_epsilon,
                    spec.slot,
                    &mut *rng,
                )?)
            } else {
                Answerer::RegressionMean(Interface::new(
                    RegressionMeanEnsemble::new(ensemble, spec.epsilon_per_query)?,
                    spec.total_epsilon,
                    spec.slot,
                    &mut *rng,
                )?)
            }
        }
    };
    Ok(Predictor {
        answerer,
        transform: Some(transform),
        features: rows.features(),
        rng,
    })
}

/// One released answer: the label (+1 / −1, or for the walk 1 / 0 as +1 / −1) and, for
/// Laplace averaging, the released fraction of votes for +1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Answer {
    /// +1 (the second class) or −1.
    pub positive: bool,
    /// Laplace averaging's released probability of +1.
    pub probability: Option<f64>,
}

/// A trained private-prediction mechanism behind its budget, with the generator its answers
/// draw from.
///
/// # Privacy
/// Each answer is `epsilon_per_query`-DP with respect to the training rows (replace-one), by
/// dp-predict's proofs (soft majority and Laplace averaging: one part, so one vote, changes;
/// the walk: 1-Lipschitz per step); `q` answers cost `q·ε` by basic composition, and the
/// interface's budget (`total_epsilon`) bounds the whole release. The ensemble's partition
/// is drawn from fresh randomness, independent of the rows. The row transform (÷ B, optional
/// clipping, intercept) is per row. Timing is covered only with a serving slot
/// (dp-predict's `ServingInterface`).
pub struct Predictor {
    answerer: Answerer,
    /// The public transform of the ensemble's rows (its models were trained on them).
    transform: Option<RowTransform>,
    features: usize,
    rng: Box<dyn ReleaseRng + Send>,
}

/// Everything subsample-and-aggregate needs besides the data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnsembleSpec {
    /// k, the number of disjoint parts (one non-private model each).
    pub parts: usize,
    /// The loss of the parts' models.
    pub loss: Loss,
    /// Λ of the parts' models (None: 1/⌊n/k⌋, scikit-learn's C = 1 on a part).
    pub regularization: Option<f64>,
    /// How votes are aggregated.
    pub aggregation: Aggregation,
    /// The ε of each answer.
    pub epsilon_per_query: f64,
    /// The interface's total ε.
    pub total_epsilon: f64,
    /// Serve at fixed slots of this length (None: a plain interface).
    pub slot: Option<Duration>,
    /// The public row transform.
    pub transform: RowTransform,
}

/// Trains subsample-and-aggregate on `rows` (two classes: class index 1 is +1). Refuses
/// every bad parameter before a row is read, then dp-predict refuses what it refuses before
/// drawing anything.
pub fn train_ensemble(
    rows: Rows<'_>,
    classes: &[usize],
    spec: &EnsembleSpec,
    randomness: Randomness,
) -> Result<Predictor, CoreError> {
    let rows = rows.checked()?;
    check_classes(classes, rows.len(), 2)?;
    let transform = spec.transform.checked()?;
    if spec.parts == 0 || spec.parts > rows.len() {
        return Err(CoreError::value(
            "n_parts",
            format!(
                "= {}; it must be between 1 and the number of rows, {}",
                spec.parts,
                rows.len()
            ),
        ));
    }
    let lambda = match spec.regularization {
        Some(l) => l,
        None => 1.0 / (rows.len() / spec.parts) as f64,
    };
    let trainer = ErmParams::non_private(spec.loss, lambda);
    let mut rng = generator(randomness)?;
    let data: Examples = training_set(&rows, binary_labels(classes), &transform)?.to_examples();
    let ensemble = Ensemble::train(&trainer, &data, spec.parts, &mut *rng)?;
    let answerer = match spec.aggregation {
        Aggregation::SoftMajority => Answerer::SoftMajority(Interface::new(
            SoftMajorityEnsemble::new(ensemble, spec.epsilon_per_query)?,
            spec.total_epsilon,
            spec.slot,
            &mut *rng,
        )?),
        Aggregation::LaplaceAverage(kind) => Answerer::LaplaceAverage(Interface::new(
            LaplaceAverageEnsemble::new(ensemble, spec.epsilon_per_query, kind)?,
            spec.total_epsilon,
            spec.slot,
            &mut *rng,
        )?),
    };
    Ok(Predictor {
        answerer,
        transform: Some(transform),
        features: rows.features(),
        rng,
    })
}

/// Builds the exponential projected walk on labelled points of a line (`positive[i]`: the
/// point's label is 1).
#[allow(clippy::too_many_arguments)]
pub fn train_walk(
    points: &[f64],
    positive: Vec<bool>,
    epsilon_per_query: f64,
    alpha: f64,
    total_epsilon: f64,
    slot: Option<Duration>,
    randomness: Randomness,
) -> Result<Predictor, CoreError> {
    let params = WalkParams::new(epsilon_per_query, alpha)?;
    let walk = params.fit(&LineData::new(points.to_vec(), positive)?)?;
    let mut rng = generator(randomness)?;
    let interface = Interface::new(walk, total_epsilon, slot, &mut *rng)?;
    Ok(Predictor {
        answerer: Answerer::Walk(interface),
        transform: None,
        features: 1,
        rng,
    })
}

impl Predictor {
    /// The budget and the price of an answer.
    pub fn status(&self) -> Status {
        match &self.answerer {
            Answerer::SoftMajority(i) => i.status(),
            Answerer::LaplaceAverage(i) => i.status(),
            Answerer::Walk(i) => i.status(),
            Answerer::StableRegression(i) => i.status(),
            Answerer::RegressionMean(i) => i.status(),
            Answerer::RegressionMedian(i) => i.status(),
        }
    }

    /// Whether the answers are real values ([`Predictor::answer_values`]) rather than labels.
    pub fn answers_values(&self) -> bool {
        matches!(
            self.answerer,
            Answerer::StableRegression(_)
                | Answerer::RegressionMean(_)
                | Answerer::RegressionMedian(_)
        )
    }

    /// Refuses, before any work, rows of the wrong width and a batch the budget cannot pay
    /// for.
    fn check_batch(&self, rows: &Rows<'_>) -> Result<(), CoreError> {
        if rows.features() != self.features {
            return Err(CoreError::value(
                "X",
                format!(
                    "has {} features; the predictor was trained on {}",
                    rows.features(),
                    self.features
                ),
            ));
        }
        // `queries_left` is exact below 2^16; beyond, dp-predict's own check (before any
        // answer) decides.
        let status = self.status();
        if status.queries_left < 1 << 16 && rows.len() as u64 > status.queries_left {
            return Err(CoreError::Budget(format!(
                "{} queries at epsilon={} each need more than the epsilon={} left of \
                 {} ({} queries left); nothing was answered",
                rows.len(),
                status.epsilon_per_query,
                status.remaining,
                status.limit,
                status.queries_left
            )));
        }
        Ok(())
    }

    /// One real-valued answer per row, in the target's units (regression predictors only),
    /// charged `q·ε` together: refused whole before anything is computed or charged.
    pub fn answer_values(&mut self, rows: Rows<'_>) -> Result<Vec<f64>, CoreError> {
        let rows = rows.checked()?;
        self.check_batch(&rows)?;
        let queries = scoring_rows(&rows, self.transform)?;
        let rng: &mut dyn ReleaseRng = &mut *self.rng;
        match &mut self.answerer {
            Answerer::StableRegression(i) => i.answer_rows(&queries, rng),
            Answerer::RegressionMean(i) => i.answer_rows(&queries, rng),
            Answerer::RegressionMedian(i) => i.answer_rows(&queries, rng),
            _ => Err(CoreError::value(
                "predictor",
                "answers labels, not real values: a classifier",
            )),
        }
    }

    /// The number of input features a query has.
    pub fn features(&self) -> usize {
        self.features
    }

    /// One answer per row, charged `q·ε` together by dp-predict: a malformed row or a batch
    /// the budget cannot pay for is refused whole before anything is computed or charged.
    pub fn answer(&mut self, rows: Rows<'_>) -> Result<Vec<Answer>, CoreError> {
        let rows = rows.checked()?;
        self.check_batch(&rows)?;
        let rng: &mut dyn ReleaseRng = &mut *self.rng;
        match &mut self.answerer {
            Answerer::Walk(interface) => {
                let mut points = crate::memory::filled("the query points", rows.len(), 0.0)?;
                for (r, p) in points.iter_mut().enumerate() {
                    rows.write_dense(r, std::slice::from_mut(p));
                }
                Ok(interface
                    .answer_points(&points, rng)?
                    .into_iter()
                    .map(|positive| Answer {
                        positive,
                        probability: None,
                    })
                    .collect())
            }
            Answerer::SoftMajority(interface) => {
                let queries = scoring_rows(&rows, self.transform)?;
                Ok(interface
                    .answer_rows(&queries, rng)?
                    .into_iter()
                    .map(|label| Answer {
                        positive: label > 0.0,
                        probability: None,
                    })
                    .collect())
            }
            Answerer::LaplaceAverage(interface) => {
                let queries = scoring_rows(&rows, self.transform)?;
                Ok(interface
                    .answer_rows(&queries, rng)?
                    .into_iter()
                    .map(|a| Answer {
                        positive: a.label > 0.0,
                        probability: Some(a.probability),
                    })
                    .collect())
            }
            Answerer::StableRegression(_)
            | Answerer::RegressionMean(_)
            | Answerer::RegressionMedian(_) => Err(CoreError::value(
                "predictor",
                "answers real values, not labels: a regressor",
            )),
        }
    }
}

/// The query rows as the ensemble's models read them (the public transform, no clipping).
fn scoring_rows(rows: &Rows<'_>, transform: Option<RowTransform>) -> Result<Features, CoreError> {
    let transform = transform.unwrap_or(RowTransform {
        norm_bound: 1.0,
        clip: false,
        intercept: None,
    });
    let width = transform.output_features(rows.features());
    let mut values = crate::memory::matrix("the query rows", rows.len(), width, 0.0)?;
    for (r, out) in values.chunks_exact_mut(width).enumerate() {
        transform.write_scoring_row(rows, r, out);
    }
    Ok(Features::dense(width, values)?)
}
