//! One candidate of a private selection (dp-tune's split-and-select and random stopping), as
//! every face builds it: a binary model's trainer from a recipe, pure ε or Gaussian (ε, δ),
//! whose models carry the recipe's feature-map id whichever mechanism trained them.

use dp_erm::{ErmError, Examples, LinearModel, Trainer};
use dp_noise::{RdpCurve, ReleaseRng};

use crate::recipe::{ErmPlan, ErmRecipe, ErmTrainer, Mechanism, Parameter, RecipeError};

/// A binary model's trainer for a selection: dp-erm's `ErmParams` or `GaussianErm`, and the
/// feature-map id its models record.
///
/// # Privacy
/// Every [`Trainer`] method is the wrapped trainer's, so each candidate promises exactly
/// what its mechanism does (replace-one): its (ε, δ), and its Rényi curve where it has one
/// (pure ε; Gaussian output perturbation; none for Gaussian objective perturbation, which
/// random stopping with (ε, δ) candidates then refuses). Recording the feature-map id is
/// post-processing by a public string.
#[derive(Clone, Debug)]
pub struct Candidate {
    trainer: ErmTrainer,
    feature_map: String,
}

impl Candidate {
    /// The candidate of a binary plan (the trainer of its one model).
    pub fn of_plan(plan: &ErmPlan) -> Self {
        Self {
            trainer: plan.trainer.clone(),
            feature_map: plan.feature_map.clone(),
        }
    }

    /// The trainer it wraps.
    pub fn trainer(&self) -> &ErmTrainer {
        &self.trainer
    }
}

impl ErmRecipe {
    /// A binary candidate at a fixed Λ and ε (the recipe's δ, its loss, groups, tolerance
    /// and feature map), built without any size: the selection checks each candidate's
    /// shape on the rows it will train on. Refuses a non-private recipe and AdaSSP (not an
    /// ERM trainer), and feature groups with a Gaussian mechanism.
    pub fn candidate_at(&self, lambda: f64, epsilon: f64) -> Result<Candidate, RecipeError> {
        let trainer = match self.mechanism {
            Mechanism::Output { .. } | Mechanism::Objective { .. } => {
                ErmTrainer::Pure(self.params_at(lambda, Some(epsilon)))
            }
            Mechanism::GaussianOutput { .. } | Mechanism::GaussianObjective { .. } => {
                ErmTrainer::Gaussian(self.gaussian_at(lambda, Some(epsilon))?)
            }
            Mechanism::NonPrivate | Mechanism::AdaSsp { .. } => {
                return Err(RecipeError::refused(
                    Parameter::Mechanism,
                    "is not one a private selection takes: its candidates are private ERM \
                     trainers (objective or output perturbation, pure ε or Gaussian)",
                ));
            }
        };
        Ok(Candidate {
            trainer,
            feature_map: self.feature_map.clone(),
        })
    }
}

impl Trainer for Candidate {
    type Model = LinearModel;
    type Error = ErmError;

    fn epsilon(&self) -> Option<f64> {
        match &self.trainer {
            ErmTrainer::Pure(p) => Trainer::epsilon(p),
            ErmTrainer::Gaussian(g) => Trainer::epsilon(g),
        }
    }

    fn delta(&self) -> f64 {
        match &self.trainer {
            ErmTrainer::Pure(p) => Trainer::delta(p),
            ErmTrainer::Gaussian(g) => Trainer::delta(g),
        }
    }

    fn rdp_curve(&self, orders: &[f64]) -> Option<RdpCurve> {
        match &self.trainer {
            ErmTrainer::Pure(p) => Trainer::rdp_curve(p, orders),
            ErmTrainer::Gaussian(g) => Trainer::rdp_curve(g, orders),
        }
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<LinearModel, ErmError> {
        match &self.trainer {
            // The pure parameters carry the feature map already.
            ErmTrainer::Pure(p) => Trainer::train(p, data, rng),
            ErmTrainer::Gaussian(g) => {
                Trainer::train(g, data, rng)?.with_feature_map(&self.feature_map)
            }
        }
    }

    fn check_shape(&self, rows: usize, features: usize) -> Result<(), ErmError> {
        match &self.trainer {
            ErmTrainer::Pure(p) => Trainer::check_shape(p, rows, features),
            ErmTrainer::Gaussian(g) => Trainer::check_shape(g, rows, features),
        }
    }

    fn check_inputs(&self, data: &Examples) -> Result<(), ErmError> {
        match &self.trainer {
            ErmTrainer::Pure(p) => Trainer::check_inputs(p, data),
            ErmTrainer::Gaussian(g) => Trainer::check_inputs(g, data),
        }
    }
}
