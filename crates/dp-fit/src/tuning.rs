//! A private selection among candidates (dp-tune), built the same way by every face: which
//! step ε the candidates train at for a total (ε, δ), how the rows are cut, and what the
//! selection releases.
//!
//! - **Split-and-select**: every candidate and the selection at the total ε (parallel
//!   composition); δ the largest candidate δ.
//! - **Random stopping, pure-ε candidates** (δ = 0): each run at the largest base ε whose
//!   `3ε_B`, rounded up as dp-tune rounds it, is at most the total; plus the cap's δ ≤ 10⁻⁶.
//! - **Random stopping, (ε, δ) candidates** (some δ > 0): accounted by Rényi DP at the total
//!   ε and the largest candidate δ, the candidates at the largest step ε that allows
//!   (dp-tune's `RandomStopping::calibrated`); candidates without a Rényi curve are refused
//!   by position.
//!
//! The total δ is the candidates' own (their largest), for both methods: no face states it.
//!
//! Regressors: [`RegressionTuner`], the same methods and step ε (random stopping over
//! pure-ε regressors only).

use dp_erm::{Examples, Trainer};
use dp_noise::ReleaseRng;
use dp_tune::{RandomStopping, SplitAndSelect, TuneError};

#[path = "tuning_regression.rs"]
mod regression;
pub use regression::{RegressionTuned, RegressionTuner};

/// How the candidates are compared.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TuneMethod {
    /// Split-and-select (CMS11 Algorithm 4): a part of the rows per candidate, the
    /// exponential mechanism on a held-out part.
    Split,
    /// Random stopping (Liu–Talwar 2019; Papernot–Steinke 2022 with a δ): every run on the
    /// same `(1 − h)·n` rows, noisy held-out scores, a geometric number of runs.
    Stopping {
        /// γ, the probability of stopping after each run (expected runs 1/γ).
        stop_probability: f64,
        /// h, the held-out share.
        holdout_fraction: f64,
    },
}

impl TuneMethod {
    /// `(rows each candidate trains on, rows held out)` of `rows` rows and `candidates`
    /// candidates: functions of the public n only, as dp-tune cuts them (split: part k is
    /// `k·n/(m+1) .. (k+1)·n/(m+1)`, the last held out; stopping: `⌈h·n⌉` held out).
    pub fn parts(&self, rows: usize, candidates: usize) -> (usize, usize) {
        match *self {
            TuneMethod::Split => {
                let parts = candidates + 1;
                let last = (rows as u128 * candidates as u128 / parts as u128) as usize;
                (rows / parts, rows - last)
            }
            TuneMethod::Stopping {
                holdout_fraction, ..
            } => {
                let held = ((rows as f64 * holdout_fraction).ceil() as usize).min(rows);
                (rows - held, held)
            }
        }
    }
}

/// One of dp-tune's selections over trainers `T`, its (ε, δ) known before the data are
/// read.
pub enum Tuner<T> {
    /// Split-and-select.
    Split(SplitAndSelect<T>),
    /// Random stopping, accounted as `3ε_B` or by Rényi DP.
    Stopping(RandomStopping<T>),
}

/// What a selection released: the chosen candidate's position and model, and (random
/// stopping) its noisy held-out score. Nothing else it saw.
pub struct Tuned<M> {
    /// The chosen candidate's position in the list.
    pub index: usize,
    /// Its model.
    pub model: M,
    /// Random stopping's released score: held-out mistakes plus discrete Laplace noise.
    pub noisy_mistakes: Option<i128>,
    /// Rows of the held-out part.
    pub held_out_rows: usize,
}

impl<T: Trainer> Tuner<T> {
    /// The selection `method` over `candidates(step)` spending at most `total_epsilon` and
    /// the largest candidate δ end to end (module docs). Random stopping builds the
    /// candidates at the pure accounting's step first, which tells it their δ (a candidate's
    /// δ does not depend on its step); pure-ε candidates are built once. Refusals of the
    /// candidates' builder pass through; dp-tune's become `E`.
    pub fn new<E: From<TuneError>>(
        method: TuneMethod,
        total_epsilon: f64,
        mut candidates: impl FnMut(f64) -> Result<Vec<T>, E>,
    ) -> Result<Self, E> {
        match method {
            TuneMethod::Split => Ok(Tuner::Split(SplitAndSelect::new(
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
                let at_base = candidates(base)?;
                let delta = at_base.iter().map(Trainer::delta).fold(0.0, f64::max);
                let stopping = if delta > 0.0 {
                    RandomStopping::calibrated(total_epsilon, delta, stop_probability, candidates)?
                } else {
                    RandomStopping::new(at_base, base, stop_probability)?
                };
                Ok(Tuner::Stopping(
                    stopping.with_holdout_fraction(holdout_fraction)?,
                ))
            }
        }
    }

    /// The end-to-end ε.
    pub fn epsilon(&self) -> f64 {
        match self {
            Tuner::Split(s) => s.epsilon(),
            Tuner::Stopping(s) => s.epsilon(),
        }
    }

    /// The end-to-end δ: the largest candidate δ (split-and-select); the cap's, plus the
    /// Rényi conversion's with (ε, δ) candidates (random stopping).
    pub fn delta(&self) -> f64 {
        match self {
            Tuner::Split(s) => s.delta(),
            Tuner::Stopping(s) => s.delta(),
        }
    }

    /// The ε each candidate trains at.
    pub fn step_epsilon(&self) -> f64 {
        match self {
            Tuner::Split(s) => s.training_epsilon(),
            Tuner::Stopping(s) => s.training_epsilon(),
        }
    }

    /// The ε of the selection (split-and-select) or of each noisy score (random stopping).
    pub fn selection_epsilon(&self) -> f64 {
        match self {
            Tuner::Split(s) => s.selection_epsilon(),
            Tuner::Stopping(s) => s.score_epsilon(),
        }
    }

    /// Random stopping's cap on runs.
    pub fn max_runs(&self) -> Option<usize> {
        match self {
            Tuner::Split(_) => None,
            Tuner::Stopping(s) => Some(s.max_runs()),
        }
    }

    /// Whether the guarantee is accounted by Rényi DP (random stopping among (ε, δ)
    /// candidates).
    pub fn accounted_by_renyi(&self) -> bool {
        matches!(self, Tuner::Stopping(s) if s.accounted_by_renyi())
    }

    /// Rows each candidate trains on out of `rows` (public).
    pub fn training_rows(&self, rows: usize) -> usize {
        match self {
            Tuner::Split(s) => rows / s.parts(),
            Tuner::Stopping(s) => rows - s.held_out_rows(rows),
        }
    }

    /// Runs the selection (dp-tune's `select`: its size and input refusals first).
    pub fn select(
        &self,
        data: &Examples,
        rng: &mut dyn ReleaseRng,
    ) -> Result<Tuned<T::Model>, TuneError> {
        Ok(match self {
            Tuner::Split(s) => {
                let chosen = s.select(data, rng)?;
                Tuned {
                    index: chosen.index(),
                    held_out_rows: chosen.validation_rows(),
                    model: chosen.into_model(),
                    noisy_mistakes: None,
                }
            }
            Tuner::Stopping(s) => {
                let stopped = s.select(data, rng)?;
                Tuned {
                    index: stopped.index(),
                    noisy_mistakes: Some(stopped.noisy_mistakes()),
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
        Ok([1e-3, 1e-2, 1e-1]
            .iter()
            .map(|&l| ErmParams::objective_perturbation(Loss::Logistic, l, step))
            .collect())
    }

    #[test]
    fn parts_are_dp_tunes_cut() {
        let stopping = TuneMethod::Stopping {
            stop_probability: 0.1,
            holdout_fraction: 0.1,
        };
        let tuner = Tuner::new(stopping, 1.0, candidates).unwrap();
        let split = Tuner::new(TuneMethod::Split, 1.0, candidates).unwrap();
        let Tuner::Stopping(s) = &tuner else {
            panic!("random stopping expected")
        };
        for rows in [200, 201, 999, 1000, 45_222] {
            let (training, held) = stopping.parts(rows, 3);
            assert_eq!(held, s.held_out_rows(rows));
            assert_eq!(training, tuner.training_rows(rows));
            let (per_candidate, _) = TuneMethod::Split.parts(rows, 3);
            assert_eq!(per_candidate, split.training_rows(rows));
        }
    }

    #[test]
    fn steps_follow_each_accounting() {
        let stopping = TuneMethod::Stopping {
            stop_probability: 0.1,
            holdout_fraction: 0.1,
        };
        // Split: the total; pure random stopping: the largest b with 3b ≤ 1 (rounded up).
        let split = Tuner::new(TuneMethod::Split, 1.0, candidates).unwrap();
        assert_eq!((split.epsilon(), split.step_epsilon()), (1.0, 1.0));
        let pure = Tuner::new(stopping, 1.0, candidates).unwrap();
        assert!(pure.epsilon() <= 1.0 && pure.step_epsilon() <= 1.0 / 3.0);
        assert!(pure.step_epsilon() > 0.333_333 && !pure.accounted_by_renyi());
        // Gaussian candidates (δ 1e-6 and 4e-6) are accounted by Rényi DP at (1, their
        // largest δ); split-and-select reports that δ too.
        let gaussian = |step: f64| {
            Ok::<_, TuneError>(
                [(1e-2, 1e-6), (1e-1, 4e-6)]
                    .iter()
                    .map(|&(l, d)| GaussianErm::output_perturbation(Loss::Logistic, l, step, d))
                    .collect::<Vec<_>>(),
            )
        };
        let renyi = Tuner::new(stopping, 1.0, gaussian).unwrap();
        assert!(renyi.accounted_by_renyi());
        assert!(renyi.epsilon() <= 1.0 && renyi.delta() <= 4e-6);
        assert!(renyi.delta() > 3.9e-6 && renyi.step_epsilon() > 1.0 / 3.0);
        let split = Tuner::new(TuneMethod::Split, 1.0, gaussian).unwrap();
        assert_eq!((split.epsilon(), split.delta()), (1.0, 4e-6));
        // A refusal of the builder passes through unchanged.
        let refused =
            Tuner::<ErmParams>::new(TuneMethod::Split, 1.0, |_| Err(TuneError::NoCandidates));
        assert!(matches!(refused, Err(TuneError::NoCandidates)));
    }
}
