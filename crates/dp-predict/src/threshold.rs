//! Thresholds on a line, learned rather than predicted: the non-private ERM threshold and
//! the private *learner* (exponential mechanism over candidate thresholds). They are the
//! baselines the exponential projected walk is compared with.

use dp_noise::{ExponentialMechanism, ReleaseRng};

use crate::error::{PredictError, check_epsilon, check_finite, check_size};
use crate::line::LineData;

/// Most candidate thresholds the private learner accepts (the exact sampler holds one
/// 32-byte exponent per candidate).
pub const MAX_CANDIDATES: usize = 1 << 22;

/// The classifier `x ↦ 1[x ≥ θ]` (label 1 at and to the right of θ).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Threshold {
    theta: f64,
}

impl Threshold {
    /// The threshold θ (±∞ allowed: always 0 / always 1).
    pub fn new(theta: f64) -> Result<Self, PredictError> {
        if theta.is_nan() {
            return Err(PredictError::NonFinite {
                what: "threshold",
                index: 0,
                value: theta,
            });
        }
        Ok(Self { theta })
    }

    /// θ.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// The label of `x`.
    pub fn predict(&self, x: f64) -> bool {
        x >= self.theta
    }

    /// Number of examples of `data` it labels wrongly.
    pub fn mistakes(&self, data: &LineData) -> usize {
        data.points()
            .iter()
            .zip(data.labels())
            .filter(|&(&x, &y)| self.predict(x) != y)
            .count()
    }
}

/// The non-private empirical risk minimizer over all thresholds: among the gaps between
/// consecutive distinct points, the leftmost with the fewest training mistakes, with θ at
/// the gap's right end (the first point it labels 1; `+∞` when it labels every point 0).
/// Putting θ on a data point rather than at the gap's midpoint keeps the choice
/// independent of the scale of the data. **Not private.**
pub fn erm_threshold(data: &LineData) -> Threshold {
    let points = data.points();
    let labels = data.labels();
    let n = points.len();
    // θ before position k: mistakes = (ones among the first k) + (zeros among the rest).
    let mut mistakes = labels.iter().filter(|&&y| !y).count();
    let mut best = (mistakes, 0usize);
    for k in 1..=n {
        if labels[k - 1] {
            mistakes += 1;
        } else {
            mistakes -= 1;
        }
        // Only gaps between distinct points are thresholds.
        let is_gap = k == n || points[k - 1] < points[k];
        if is_gap && mistakes < best.0 {
            best = (mistakes, k);
        }
    }
    let theta = points.get(best.1).copied().unwrap_or(f64::INFINITY);
    Threshold { theta }
}

/// The private threshold *learner*: the exponential mechanism over a fixed list of
/// candidate thresholds, utility `−(training mistakes)`. It outputs a threshold, which then
/// answers any number of queries for free — the baseline private prediction is compared
/// with.
///
/// # Privacy
/// **ε-DP** with respect to the training data (replace one example): replacing one example
/// changes each candidate's mistakes by at most 1, so the utilities have sensitivity 1 and
/// the exponential mechanism (exact sampling, [`dp_noise::ExponentialMechanism`]) is ε-DP.
/// The candidates must not depend on the data (e.g. a grid of the public domain). Its error
/// grows with `ln(#candidates)/(ε n)`: on a fine domain it needs many more samples than
/// the walk.
#[derive(Clone)]
pub struct PrivateThresholdLearner {
    selector: ExponentialMechanism,
    candidates: Vec<f64>,
}

impl PrivateThresholdLearner {
    /// ε-DP learner over `candidates` (finite, strictly increasing, 1 to
    /// [`MAX_CANDIDATES`] of them).
    pub fn new(epsilon: f64, candidates: Vec<f64>) -> Result<Self, PredictError> {
        let epsilon = check_epsilon(epsilon)?;
        if candidates.is_empty() {
            return Err(PredictError::InvalidParameter {
                what: "number of candidate thresholds",
                value: 0.0,
                requirement: "at least 1",
            });
        }
        if candidates.len() > MAX_CANDIDATES {
            return Err(PredictError::TooLarge {
                what: "number of candidate thresholds",
                size: candidates.len(),
                limit: MAX_CANDIDATES,
            });
        }
        check_finite("candidate threshold", &candidates)?;
        if let Some(k) = (1..candidates.len()).find(|&k| candidates[k] <= candidates[k - 1]) {
            return Err(PredictError::Unsorted {
                what: "candidate thresholds",
                index: k,
                previous: candidates[k - 1],
                value: candidates[k],
            });
        }
        Ok(Self {
            selector: ExponentialMechanism::new(epsilon, 1.0)?,
            candidates,
        })
    }

    /// ε of the learner (the whole release: one threshold).
    pub fn epsilon(&self) -> f64 {
        self.selector.epsilon()
    }

    /// The candidates.
    pub fn candidates(&self) -> &[f64] {
        &self.candidates
    }

    /// Training mistakes of every candidate, by one sweep over the sorted data.
    pub(crate) fn mistakes(&self, data: &LineData) -> Vec<usize> {
        let (points, labels) = (data.points(), data.labels());
        let mut mistakes = labels.iter().filter(|&&y| !y).count();
        let mut below = 0usize;
        self.candidates
            .iter()
            .map(|&theta| {
                while below < points.len() && points[below] < theta {
                    if labels[below] {
                        mistakes += 1;
                    } else {
                        mistakes -= 1;
                    }
                    below += 1;
                }
                mistakes
            })
            .collect()
    }

    fn utilities(&self, data: &LineData) -> Vec<f64> {
        self.mistakes(data).iter().map(|&m| -(m as f64)).collect()
    }

    /// Learns a threshold, ε-DP.
    pub fn fit<R: ReleaseRng + ?Sized>(
        &self,
        data: &LineData,
        rng: &mut R,
    ) -> Result<Threshold, PredictError> {
        let chosen = self.selector.select(&self.utilities(data), rng)?;
        Ok(Threshold {
            theta: self.candidates[chosen],
        })
    }

    /// **Not private**: the exact probability of each candidate on `data`.
    pub fn secret_selection_probabilities(
        &self,
        data: &LineData,
    ) -> Result<Vec<f64>, PredictError> {
        Ok(self
            .selector
            .selection_probabilities(&self.utilities(data))?)
    }
}

impl std::fmt::Debug for PrivateThresholdLearner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrivateThresholdLearner")
            .field("epsilon", &self.epsilon())
            .field("candidates", &self.candidates.len())
            .finish()
    }
}

/// The non-private ERM threshold ([`erm_threshold`]) as a [`dp_erm::Trainer`] over
/// one-feature examples (label +1 ↔ 1): what subsample-and-aggregate trains on each part
/// in the thresholds experiment. **Not private** ([`dp_erm::Trainer::epsilon`] is `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThresholdErm;

impl dp_erm::Trainer for ThresholdErm {
    type Model = Threshold;
    type Error = PredictError;

    fn epsilon(&self) -> Option<f64> {
        None
    }

    fn train(
        &self,
        data: &dp_erm::Examples,
        _rng: &mut dyn ReleaseRng,
    ) -> Result<Threshold, PredictError> {
        self.check_shape(data.len(), data.features())?;
        let points = (0..data.len())
            .map(|i| match data.inputs().row(i) {
                dp_erm::FeatureRow::Dense(x) => x[0],
                dp_erm::FeatureRow::Sparse(_, v) => v.first().copied().unwrap_or(0.0),
            })
            .collect();
        let labels = data.labels().iter().map(|&y| y > 0.0).collect();
        Ok(erm_threshold(&LineData::new(points, labels)?))
    }

    /// One feature per row (the training data's, not a query's), and 1 to
    /// [`crate::MAX_POINTS`] rows: what [`LineData::new`] would refuse after copying, refused
    /// from the public sizes before anything is shuffled or trained.
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), PredictError> {
        if features != 1 {
            return Err(PredictError::LengthMismatch {
                what: "features per training row (a threshold learns from one)",
                expected: 1,
                found: features,
            });
        }
        if rows == 0 {
            return Err(PredictError::EmptyData);
        }
        check_size("number of training rows", rows).map(drop)
    }
}

/// A threshold as a one-feature classifier: score `x − θ` (label +1 when `x ≥ θ`).
impl dp_erm::Classifier for Threshold {
    fn input_features(&self) -> usize {
        1
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, dp_erm::ErmError> {
        if x.len() != 1 {
            return Err(dp_erm::ErmError::DimensionMismatch {
                what: "row",
                expected: 1,
                found: x.len(),
            });
        }
        if !x[0].is_finite() {
            return Err(dp_erm::ErmError::NonFiniteFeature {
                row: 0,
                col: 0,
                value: x[0],
            });
        }
        // ±∞ thresholds give ∓∞ scores, whose sign is still the label.
        Ok(x[0] - self.theta)
    }

    fn decision_values(&self, rows: &dp_erm::Features) -> Result<Vec<f64>, dp_erm::ErmError> {
        rows.check_dimension(1, "features of the rows")?;
        let mut x = [0.0];
        (0..rows.len())
            .map(|i| {
                rows.row(i).write_dense(&mut x);
                self.decision_function(&x)
            })
            .collect()
    }
}
