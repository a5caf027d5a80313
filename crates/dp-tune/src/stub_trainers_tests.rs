//! Trainers whose output the tests control, and data whose rows carry their own index.

use std::sync::{Arc, Mutex};

use dp_erm::{Classifier, ErmError, Examples, FeatureRow, Features, Trainer};
use dp_noise::ReleaseRng;

/// Predicts +1 when the first feature is ≥ `cut`, else −1 (±∞: a constant classifier).
/// On rows whose first feature is the row id, `cut = z` with all labels +1 makes exactly
/// the rows below z mistakes.
#[derive(Debug, Clone)]
pub struct Stump {
    pub cut: f64,
    /// Where to record the ids of the rows it is scored on, if anywhere.
    pub scored: Option<ScoreLog>,
}

impl Stump {
    pub fn new(cut: f64) -> Self {
        Self { cut, scored: None }
    }
}

fn first_feature(row: FeatureRow<'_>) -> f64 {
    match row {
        FeatureRow::Dense(x) => x[0],
        FeatureRow::Sparse(idx, val) => idx.iter().position(|&j| j == 0).map_or(0.0, |k| val[k]),
    }
}

impl Classifier for Stump {
    fn input_features(&self) -> usize {
        1
    }

    fn decision_function(&self, x: &[f64]) -> Result<f64, ErmError> {
        Ok(if x[0] >= self.cut { 1.0 } else { -1.0 })
    }

    fn decision_values(&self, rows: &Features) -> Result<Vec<f64>, ErmError> {
        let ids: Vec<f64> = (0..rows.len())
            .map(|i| first_feature(rows.row(i)))
            .collect();
        if let Some(log) = &self.scored {
            log.lock().unwrap().push(ids.clone());
        }
        Ok(ids
            .iter()
            .map(|&x| if x >= self.cut { 1.0 } else { -1.0 })
            .collect())
    }
}

/// (candidate id, first feature of every training row), one entry per training.
pub type TrainLog = Arc<Mutex<Vec<(usize, Vec<f64>)>>>;
/// The first feature of every scored row, one entry per scoring.
pub type ScoreLog = Arc<Mutex<Vec<Vec<f64>>>>;

/// A trainer whose model does not depend on the data (so any ε it claims is true), that
/// can record the rows it was given, or fail.
#[derive(Debug, Clone)]
pub struct FixedTrainer {
    pub cut: f64,
    pub epsilon: Option<f64>,
    pub fail: bool,
    pub trained: Option<TrainLog>,
    pub scored: Option<ScoreLog>,
    pub id: usize,
}

impl FixedTrainer {
    pub fn new(cut: f64, epsilon: f64) -> Self {
        Self {
            cut,
            epsilon: Some(epsilon),
            fail: false,
            trained: None,
            scored: None,
            id: 0,
        }
    }
}

/// The error of a failing test trainer.
#[derive(Debug)]
pub struct Broken;

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the test trainer is broken on purpose")
    }
}

impl std::error::Error for Broken {}

impl Trainer for FixedTrainer {
    type Model = Stump;
    type Error = Broken;

    fn epsilon(&self) -> Option<f64> {
        self.epsilon
    }

    fn train(&self, data: &Examples, _rng: &mut dyn ReleaseRng) -> Result<Stump, Broken> {
        if self.fail {
            return Err(Broken);
        }
        if let Some(log) = &self.trained {
            let ids = (0..data.len())
                .map(|i| first_feature(data.inputs().row(i)))
                .collect();
            log.lock().unwrap().push((self.id, ids));
        }
        Ok(Stump {
            cut: self.cut,
            scored: self.scored.clone(),
        })
    }
}

/// `labels.len()` rows with one feature, the row id, and the given labels.
pub fn rows_with_ids(labels: Vec<f64>) -> Examples {
    let values = (0..labels.len()).map(|i| i as f64).collect();
    Examples::new(Features::dense(1, values).unwrap(), labels).unwrap()
}

/// `positives` rows labelled +1 then `negatives` rows labelled −1 (ids as features).
pub fn labelled(positives: usize, negatives: usize) -> Examples {
    let mut labels = vec![1.0; positives];
    labels.extend(vec![-1.0; negatives]);
    rows_with_ids(labels)
}
