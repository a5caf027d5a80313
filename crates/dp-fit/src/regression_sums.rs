//! A regressor's plan trained over sums (rows held elsewhere: Spark's executors), by the
//! plan's own trainer, so every face's calibration stays the recipe's.

use dp_erm::{ErmError, RegressionModel, TargetScale};
use dp_noise::ReleaseRng;
use dp_optim::SumsOracle;

use crate::recipe::ErmTrainer;
use crate::regression::{RegressionPlan, RegressionTrainer};

impl RegressionPlan {
    /// Trains the regressor over `oracle`'s merged sums of exactly `examples` rows (the
    /// public n the plan was made for), their targets scaled by `scale`, every draw from
    /// `rng`. The oracle must sum each row with `dp_erm::contract_regression_sums`.
    ///
    /// # Privacy
    /// (ε, δ)-DP (ε-DP when δ = 0) for replace-one neighbours by the mechanism's `# Privacy`
    /// (`ErmParams::fit_regression_sums`, `GaussianErm::fit_regression_sums`: the in-memory
    /// regressor's calibration and release), under their conditions on the oracle: every
    /// row checked by the contract, the same rows on every pass.
    pub fn fit_sums<O>(
        &self,
        oracle: &O,
        examples: usize,
        scale: TargetScale,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionModel, ErmError>
    where
        O: SumsOracle + ?Sized,
        ErmError: From<O::Error>,
    {
        match &self.trainer {
            RegressionTrainer::Erm(ErmTrainer::Pure(params)) => Ok(params
                .fit_regression_sums(oracle, examples, scale, rng)?
                .into_model()),
            RegressionTrainer::Erm(ErmTrainer::Gaussian(erm)) => {
                let (model, _) = erm.fit_regression_sums(oracle, examples, scale, rng)?;
                model.with_feature_map(&self.feature_map)
            }
            // AdaSSP releases XᵀX and Xᵀt, which gradient sums do not carry.
            RegressionTrainer::AdaSsp(_) => Err(ErmError::MisplacedOption {
                option: "AdaSSP",
                applies_to: "rows held in memory (its statistics are not the solver's sums)",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use dp_erm::{Loss, RegressionSet, TargetClipping, TrainingSet, contract_regression_sums};
    use dp_noise::InsecureSeededRng;
    use dp_optim::{OptimError, PartialSums, RowBlock};

    use super::*;
    use crate::recipe::{ErmRecipe, Mechanism, Regularization};
    use crate::regression::DEFAULT_HUBER_THRESHOLD;

    /// One dense block of rows with their scaled targets.
    struct OneBlock {
        d: usize,
        rows: Vec<f64>,
        targets: Vec<f64>,
    }

    impl SumsOracle for OneBlock {
        type Error = OptimError;

        fn cols(&self) -> usize {
            self.d
        }

        fn sums(&self, w: &[f64], with_hessian: bool) -> Result<PartialSums, OptimError> {
            let n = self.targets.len();
            let offsets: Vec<u32> = (0..=n).map(|i| (i * self.d) as u32).collect();
            let indices: Vec<u32> = (0..n).flat_map(|_| 0..self.d as u32).collect();
            let labels = vec![1.0; n];
            let block = RowBlock::new(self.d, &offsets, &indices, &self.rows, &labels)?
                .with_targets(&self.targets)?;
            let loss = Loss::huber_regression(DEFAULT_HUBER_THRESHOLD).unwrap();
            Ok(contract_regression_sums(&block, w, loss, with_hessian).unwrap())
        }
    }

    #[test]
    fn the_plan_over_sums_is_the_plan_in_memory() {
        let (n, d) = (300, 2);
        let rows: Vec<f64> = (0..n * d)
            .map(|i| ((i * 5) % 9) as f64 / 9.0 - 0.5)
            .collect();
        let targets: Vec<f64> = (0..n).map(|i| rows[i * d] * 3.0 + 1.0).collect();
        let scale = TargetScale::new(-1.0, 3.0).unwrap();
        let set = RegressionSet::new(
            TrainingSet::builder(d).dense_rows(rows.clone()),
            &targets,
            scale,
            TargetClipping::Refuse,
        )
        .unwrap();
        let oracle = OneBlock {
            d,
            rows,
            targets: set.scaled_targets().to_vec(),
        };
        for mechanism in [
            Mechanism::Output { epsilon: 1.0 },
            Mechanism::GaussianOutput {
                epsilon: 1.0,
                delta: 1e-6,
            },
        ] {
            let recipe = ErmRecipe {
                loss: Loss::huber_regression(DEFAULT_HUBER_THRESHOLD).unwrap(),
                mechanism,
                regularization: Regularization::Fixed(0.05),
                groups: None,
                tolerance: None,
                feature_map: "test-map".into(),
            };
            let plan = recipe.plan_regression(n, d).unwrap();
            let memory = plan.fit(&set, &mut InsecureSeededRng::new(3)).unwrap();
            let sums = plan
                .fit_sums(&oracle, n, scale, &mut InsecureSeededRng::new(3))
                .unwrap();
            assert_eq!(sums.metadata().feature_map.as_deref(), Some("test-map"));
            assert_eq!(sums.metadata().mechanism, memory.metadata().mechanism);
            let gap: f64 = sums
                .weights()
                .iter()
                .zip(memory.weights())
                .map(|(a, b)| (a - b).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(gap < 0.05, "{mechanism:?}: {gap}");
        }
    }
}
