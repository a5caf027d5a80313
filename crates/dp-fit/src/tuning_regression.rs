//! The regressors' private selection, decided once for every face (`dpml train --task
//! regression --tune`, Python's `PrivateRegressionSearch`): the method, the step ε for a
//! total ε, the parts.
//!
//! - **Split-and-select**: every candidate and the selection at the total ε; δ the largest
//!   candidate δ (dp-tune's `RegressionSplitAndSelect`).
//! - **Random stopping** (pure-ε candidates only: a candidate with δ > 0 is refused by
//!   position): each run at the largest base ε whose `3ε_B`, rounded up as dp-tune rounds
//!   it, is at most the total, candidates and scores alike; plus the cap's δ ≤ 10⁻⁶
//!   (dp-tune's `RegressionRandomStopping`, the classifiers' accounting).

use dp_erm::RegressionModel;
use dp_noise::ReleaseRng;
use dp_tune::{
    RegressionData, RegressionRandomStopping, RegressionSplitAndSelect, RegressionTrainer,
    TuneError,
};

use super::TuneMethod;

/// One of dp-tune's selections over regressors `T`, its (ε, δ) known before the data are
/// read.
pub enum RegressionTuner<T> {
    /// Split-and-select.
    Split(RegressionSplitAndSelect<T>),
    /// Random stopping, accounted as `3ε_B` plus the cap's δ.
    Stopping(RegressionRandomStopping<T>),
}

/// What a regression selection released: the chosen candidate's position and model, and
/// (random stopping) its noisy held-out score. Nothing else it saw.
pub struct RegressionTuned {
    /// The chosen candidate's position in the list.
    pub index: usize,
    /// Its model.
    pub model: RegressionModel,
    /// Random stopping's released score: the held-out `Σ ((clamp(ŷ) − y)/(U − L))²` plus
    /// discrete Laplace noise (scale `1/ε_S` in these units).
    pub noisy_score: Option<f64>,
    /// Rows of the held-out part.
    pub held_out_rows: usize,
}

impl<T: RegressionTrainer> RegressionTuner<T> {
    /// The selection `method` over `candidates(step)` spending at most `total_epsilon`
    /// end to end (module docs). Refusals of the builder pass through; dp-tune's become
    /// `E`.
    pub fn new<E: From<TuneError>>(
        method: TuneMethod,
        total_epsilon: f64,
        mut candidates: impl FnMut(f64) -> Result<Vec<T>, E>,
    ) -> Result<Self, E> {
        match method {
            TuneMethod::Split => Ok(RegressionTuner::Split(RegressionSplitAndSelect::new(
                candidates(total_epsilon)?,
                total_epsilon,
            )?)),
            TuneMethod::Stopping {
                stop_probability,
                holdout_fraction,
            } => {
                let base = dp_tune::stopping_base_epsilon(total_epsilon).ok_or(
                    TuneError::InvalidParameter {
                        what: "total epsilon",
                        value: total_epsilon,
                        requirement: "finite and > 0",
                    },
                )?;
                let stopping =
                    RegressionRandomStopping::new(candidates(base)?, base, stop_probability)?
                        .with_holdout_fraction(holdout_fraction)?;
                Ok(RegressionTuner::Stopping(stopping))
            }
        }
    }

    /// The candidates, in their frozen order.
    pub fn candidates(&self) -> &[T] {
        match self {
            RegressionTuner::Split(s) => s.candidates(),
            RegressionTuner::Stopping(s) => s.candidates(),
        }
    }

    /// The end-to-end ε.
    pub fn epsilon(&self) -> f64 {
        match self {
            RegressionTuner::Split(s) => s.epsilon(),
            RegressionTuner::Stopping(s) => s.epsilon(),
        }
    }

    /// The end-to-end δ: the largest candidate δ (split-and-select), the cap's (random
    /// stopping).
    pub fn delta(&self) -> f64 {
        match self {
            RegressionTuner::Split(s) => s.delta(),
            RegressionTuner::Stopping(s) => s.delta(),
        }
    }

    /// The ε each candidate trains at.
    pub fn step_epsilon(&self) -> f64 {
        match self {
            RegressionTuner::Split(s) => s.training_epsilon(),
            RegressionTuner::Stopping(s) => s.training_epsilon(),
        }
    }

    /// The ε of the selection (split-and-select) or of each noisy score (random stopping).
    pub fn selection_epsilon(&self) -> f64 {
        match self {
            RegressionTuner::Split(s) => s.selection_epsilon(),
            RegressionTuner::Stopping(s) => s.score_epsilon(),
        }
    }

    /// Random stopping's cap on runs.
    pub fn max_runs(&self) -> Option<usize> {
        match self {
            RegressionTuner::Split(_) => None,
            RegressionTuner::Stopping(s) => Some(s.max_runs()),
        }
    }

    /// `(rows each candidate trains on, rows held out)` of `rows` (public).
    pub fn parts(&self, rows: usize) -> (usize, usize) {
        match self {
            RegressionTuner::Split(s) => TuneMethod::Split.parts(rows, s.parts() - 1),
            RegressionTuner::Stopping(s) => {
                let held = s.held_out_rows(rows);
                (rows - held, held)
            }
        }
    }

    /// The fewest rows a selection takes.
    pub fn min_rows(&self) -> usize {
        match self {
            RegressionTuner::Split(s) => s.min_rows(),
            RegressionTuner::Stopping(s) => s.min_rows(),
        }
    }

    /// Runs the selection (dp-tune's `select`: its size and candidate refusals first).
    pub fn select(
        &self,
        data: &RegressionData,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionTuned, TuneError> {
        Ok(match self {
            RegressionTuner::Split(s) => {
                let chosen = s.select(data, rng)?;
                RegressionTuned {
                    index: chosen.index(),
                    held_out_rows: chosen.validation_rows(),
                    model: chosen.into_model(),
                    noisy_score: None,
                }
            }
            RegressionTuner::Stopping(s) => {
                let stopped = s.select(data, rng)?;
                RegressionTuned {
                    index: stopped.index(),
                    noisy_score: Some(stopped.noisy_score()),
                    held_out_rows: stopped.held_out_rows(),
                    model: stopped.into_model(),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_erm::{ErmParams, GaussianErm, Loss};

    fn candidates(step: f64) -> Result<Vec<ErmParams>, TuneError> {
        let loss = Loss::huber_regression(1.0).unwrap();
        Ok([1e-3, 1e-2, 1e-1]
            .iter()
            .map(|&l| ErmParams::objective_perturbation(loss, l, step))
            .collect())
    }

    const STOPPING: TuneMethod = TuneMethod::Stopping {
        stop_probability: 0.1,
        holdout_fraction: 0.1,
    };

    #[test]
    fn steps_and_parts_follow_each_method() {
        let split = RegressionTuner::new(TuneMethod::Split, 1.0, candidates).unwrap();
        assert_eq!((split.epsilon(), split.delta()), (1.0, 0.0));
        assert_eq!(
            (split.step_epsilon(), split.selection_epsilon()),
            (1.0, 1.0)
        );
        assert_eq!(split.parts(1000), TuneMethod::Split.parts(1000, 3));
        assert_eq!((split.max_runs(), split.min_rows()), (None, 80));
        // Random stopping: the largest b with 3b ≤ 1, for candidates and scores alike.
        let stopping = RegressionTuner::new(STOPPING, 1.0, candidates).unwrap();
        let b = stopping.step_epsilon();
        assert!(b <= 1.0 / 3.0 && b > 0.333_333, "{b}");
        assert_eq!(stopping.selection_epsilon(), b);
        assert!(stopping.epsilon() <= 1.0 && stopping.epsilon() >= 3.0 * b);
        assert!(stopping.delta() > 0.0 && stopping.delta() <= dp_tune::MAX_DELTA);
        assert!(stopping.max_runs().is_some());
        for rows in [200, 201, 999, 45_222] {
            assert_eq!(stopping.parts(rows), STOPPING.parts(rows, 3));
        }
    }

    #[test]
    fn random_stopping_refuses_gaussian_regressors_and_bad_settings_by_name() {
        let loss = Loss::huber_regression(1.0).unwrap();
        let gaussian = |step: f64| {
            Ok::<_, TuneError>(vec![GaussianErm::objective_perturbation(
                loss, 1e-2, step, 1e-6,
            )])
        };
        assert!(matches!(
            RegressionTuner::new(STOPPING, 1.0, gaussian),
            Err(TuneError::CandidateNotPureEpsilon { candidate: 0, .. })
        ));
        // Split-and-select takes their δ.
        let split = RegressionTuner::new(TuneMethod::Split, 1.0, gaussian).unwrap();
        assert_eq!(split.delta(), 1e-6);
        let bad = TuneMethod::Stopping {
            stop_probability: 2.0,
            holdout_fraction: 0.1,
        };
        assert!(matches!(
            RegressionTuner::new(bad, 1.0, candidates),
            Err(TuneError::InvalidParameter {
                what: "stop probability",
                ..
            })
        ));
        let bad = TuneMethod::Stopping {
            stop_probability: 0.1,
            holdout_fraction: 1.0,
        };
        assert!(matches!(
            RegressionTuner::new(bad, 1.0, candidates),
            Err(TuneError::InvalidParameter {
                what: "holdout fraction",
                ..
            })
        ));
    }
}
