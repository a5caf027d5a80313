//! The recipe of a regressor, decided once for every face: the same mechanisms, Λ rule
//! family and refusals as a classifier's ([`crate::recipe`]), or AdaSSP, one model at the
//! whole (ε, δ), trained on targets scaled by public bounds.

use dp_erm::{
    AdaSsp, AdaSspCalibration, ErmError, ErmParams, GaussianCalibration, GaussianRule,
    NoiseCalibration, RegressionModel, RegressionSet,
};
use dp_noise::ReleaseRng;

use crate::outlook::Outlook;
use crate::recipe::{ErmRecipe, ErmTrainer, Mechanism, Parameter, RecipeError, Regularization};

/// The Huber threshold a face uses unless told otherwise, in the scaled target's units
/// (targets scaled into [−1, 1], so 1 is half their public range): the rule was fitted
/// with it ([`dp_erm::RegularizationRule::REGRESSION`]).
pub const DEFAULT_HUBER_THRESHOLD: f64 = 1.0;

/// The intercept's constant feature c a face uses unless told otherwise, where rows of norm
/// ≤ 1 become `(x, c)/√(1 + c²)` (Python's and Spark's regressors; a schema's intercept is
/// an attribute of its own instead). Chosen by measurement, not carried over from the
/// classifiers' c = 1: c = 1 gives the intercept half the unit ball, shrinking every
/// feature by 1/√2 against a noise that does not shrink. Test R² over the non-private
/// ridge's, 3 fits each by the rule, least squares and Huber, pure ε and δ = 10⁻⁵, ε = 0.5,
/// 1 and 2, on synthetic data (30,000 × 10), diamonds and Adult's hours (36 cells): c = 1
/// was more than 0.02 below c = 0.5 in 25 cells and above it in 1; c = 0.25 and 0.5 were
/// mixed (each ahead by more than 0.02 in a few cells). Huber at (1, 10⁻⁵) gave 0.978 /
/// 0.923 / 0.913 at c = 0.5 against 0.972 / 0.887 / 0.890 at c = 1.
pub const DEFAULT_INTERCEPT_SCALING: f64 = 0.5;

/// The least-squares threshold AdaSSP's models record (the scaled targets' range): a fixed
/// Λ given to an AdaSSP recipe adds the ridge `2nΛ` to its adaptive λ, so that the
/// recorded objective `(1/n)Σ ℓ(r) + (Λ/2)‖w‖²` stays the ridge problem solved.
const ADASSP_THRESHOLD: f64 = 2.0;

/// What trains a regressor.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per fit: its size is immaterial
pub enum RegressionTrainer {
    /// Huber regression by a classifier's mechanism.
    Erm(ErmTrainer),
    /// Ridge regression by AdaSSP (the recipe's loss is not used).
    AdaSsp(AdaSsp),
}

/// A regressor's recipe made concrete for public sizes: everything decided and checked
/// before any row is read.
#[derive(Clone, Debug)]
pub struct RegressionPlan {
    /// The trainer at the whole (ε, δ).
    pub trainer: RegressionTrainer,
    /// Λ, from the rule or as given (AdaSSP: the fixed Λ whose ridge `2nΛ` is added to its
    /// adaptive λ, 0 under the rule; the model records the Λ it used).
    pub regularization: f64,
    /// The ε of the release (`None`: not private).
    pub epsilon: Option<f64>,
    /// The δ of the release (0 for the pure-ε mechanisms).
    pub delta: f64,
    /// The pure mechanisms' calibration (public: parameters and sizes).
    pub calibration: Option<NoiseCalibration>,
    /// The Gaussian mechanisms' calibration.
    pub gaussian: Option<GaussianCalibration>,
    /// AdaSSP's calibration.
    pub adassp: Option<AdaSspCalibration>,
    /// The recipe's feature-map id, recorded in the model.
    pub feature_map: String,
}

impl ErmRecipe {
    /// The name of the rule [`Regularization::Rule`] applies to a regressor, for reports.
    pub fn regression_rule_name(&self) -> &'static str {
        match self.mechanism {
            Mechanism::GaussianObjective { .. } => "GaussianRule::REGRESSION_OBJECTIVE",
            Mechanism::GaussianOutput { .. } => "GaussianRule::REGRESSION_OUTPUT",
            Mechanism::Output { .. } => "RegularizationRule::REGRESSION_OUTPUT",
            Mechanism::AdaSsp { .. } => "AdaSSP's adaptive λ from the noisy λ_min(XᵀX)",
            _ => "RegularizationRule::REGRESSION",
        }
    }

    /// The plan of a regressor on `rows` rows of `features` trained features, every
    /// refusal of the parameters and sizes made now, before any data are read. The loss
    /// must be a regression loss (`Loss::huber_regression`).
    ///
    /// # Privacy
    /// Reads only the public sizes, the spec and the public groups; n is public under
    /// replace-one neighbours. One model spends the whole (ε, δ).
    pub fn plan_regression(
        &self,
        rows: usize,
        features: usize,
    ) -> Result<RegressionPlan, RecipeError> {
        if !self.loss.is_regression() {
            return Err(RecipeError::Refused {
                parameter: Parameter::Loss,
                why: format!(
                    "= {:?} is a classifier's loss; a regressor trains Huber regression",
                    self.loss.name()
                ),
            });
        }
        if let Mechanism::AdaSsp { epsilon, delta } = self.mechanism {
            return self.plan_adassp(rows, features, epsilon, delta);
        }
        let epsilon = self.mechanism.epsilon();
        let lambda = match self.regularization {
            Regularization::Fixed(lambda) => lambda,
            Regularization::Rule => {
                let Some(epsilon) = epsilon else {
                    return Err(RecipeError::Refused {
                        parameter: Parameter::Regularization,
                        why: "= 'auto' needs a finite epsilon: pass a number for a \
                              non-private fit"
                            .into(),
                    });
                };
                let delta = self.mechanism.delta();
                match self.mechanism {
                    Mechanism::GaussianObjective { .. } => GaussianRule::REGRESSION_OBJECTIVE
                        .trainer(rows, features, epsilon, delta)?
                        .regularization(),
                    Mechanism::GaussianOutput { .. } => GaussianRule::REGRESSION_OUTPUT
                        .trainer(rows, features, epsilon, delta)?
                        .regularization(),
                    Mechanism::Output { .. } => {
                        ErmParams::recommended_regression_output(rows, features, epsilon)?
                            .regularization()
                    }
                    _ => {
                        ErmParams::recommended_regression(rows, features, epsilon)?.regularization()
                    }
                }
            }
        };
        let single = self.plan(rows, features, 2).map(drop);
        // The classifier's plan refuses the regression loss; every other refusal it makes
        // (δ with groups, …) applies to a regressor alike.
        match single {
            Err(RecipeError::Erm(ErmError::MisplacedOption { .. })) | Ok(()) => {}
            Err(e) => return Err(e),
        }
        let (trainer, calibration, gaussian) = if self.mechanism.delta() > 0.0 {
            let erm = self.gaussian_at(lambda, epsilon)?;
            let calibration = erm.regression_calibration(rows, features)?;
            (ErmTrainer::Gaussian(erm), None, Some(calibration))
        } else {
            let params = self.params_at(lambda, epsilon);
            let calibration = params.regression_noise_calibration(rows, features)?;
            (ErmTrainer::Pure(params), calibration, None)
        };
        Ok(RegressionPlan {
            trainer: RegressionTrainer::Erm(trainer),
            regularization: lambda,
            epsilon,
            delta: self.mechanism.delta(),
            calibration,
            gaussian,
            adassp: None,
            feature_map: self.feature_map.clone(),
        })
    }

    /// AdaSSP's plan: a fixed Λ adds the ridge `2nΛ` (the rule adds none), and every
    /// refusal of (ε, δ) and d is made now. The recipe's loss must still be a regression
    /// loss (checked above), though AdaSSP solves least squares whatever its threshold.
    fn plan_adassp(
        &self,
        rows: usize,
        features: usize,
        epsilon: f64,
        delta: f64,
    ) -> Result<RegressionPlan, RecipeError> {
        if self.groups.is_some() {
            return Err(RecipeError::Refused {
                parameter: Parameter::FeatureGroups,
                why: "shape the pure-ε objective perturbation's noise; AdaSSP adds its own \
                      Gaussian noise: leave the feature groups out"
                    .into(),
            });
        }
        if rows == 0 {
            return Err(ErmError::EmptyData.into());
        }
        let lambda = match self.regularization {
            Regularization::Fixed(lambda) => lambda,
            Regularization::Rule => 0.0,
        };
        let mechanism =
            AdaSsp::new(epsilon, delta)?.extra_ridge(ADASSP_THRESHOLD * rows as f64 * lambda)?;
        let calibration = mechanism.calibration(features)?;
        Ok(RegressionPlan {
            trainer: RegressionTrainer::AdaSsp(mechanism),
            regularization: lambda,
            epsilon: Some(epsilon),
            delta,
            calibration: None,
            gaussian: None,
            adassp: Some(calibration),
            feature_map: self.feature_map.clone(),
        })
    }
}

impl RegressionPlan {
    /// What this fit can be expected to reach, from public facts alone (`None` for a
    /// non-private fit): the noise ratio in `d/(nε)`'s units, as a classifier's, against
    /// [`crate::outlook::REGRESSION_AT_RISK_RATIO`].
    pub fn outlook(&self, rows: usize, features: usize) -> Option<Outlook> {
        let ratio = match (&self.trainer, &self.gaussian, &self.adassp) {
            (RegressionTrainer::Erm(ErmTrainer::Pure(_)), _, _) => {
                features as f64 / (rows as f64 * self.epsilon?)
            }
            (RegressionTrainer::Erm(ErmTrainer::Gaussian(_)), Some(c), _) => {
                c.sigma / c.l2_sensitivity * (features as f64).sqrt() / rows as f64
            }
            // Xᵀt's noise multiplier in the same units.
            (RegressionTrainer::AdaSsp(_), _, Some(c)) => {
                c.sigma_moment / dp_erm::ADASSP_MOMENT_SENSITIVITY * (features as f64).sqrt()
                    / rows as f64
            }
            _ => return None,
        };
        let output = match &self.trainer {
            RegressionTrainer::Erm(ErmTrainer::Pure(params)) => matches!(
                params.mechanism(),
                dp_erm::Mechanism::OutputPerturbation { .. }
            ),
            RegressionTrainer::Erm(ErmTrainer::Gaussian(erm)) => {
                erm.mechanism() == dp_erm::GaussianMechanism::OutputPerturbation
            }
            RegressionTrainer::AdaSsp(_) => false,
        };
        let at_risk = if output {
            crate::outlook::REGRESSION_OUTPUT_AT_RISK_RATIO
        } else {
            crate::outlook::REGRESSION_AT_RISK_RATIO
        };
        Some(Outlook::of_regression_ratio(
            ratio,
            at_risk,
            rows,
            "d/(nε), or z·√d/n for the Gaussian mechanisms (as a classifier's; AdaSSP's z \
             that of Xᵀt), and n",
        ))
    }

    /// Trains the regressor on `data`, every draw from `rng`.
    ///
    /// # Privacy
    /// (ε, δ)-DP (ε-DP when δ = 0) for replace-one neighbours by the mechanism's
    /// `# Privacy` (`ErmParams::fit_regression`, `GaussianErm::fit_regression`,
    /// `AdaSsp::fit_regression`).
    pub fn fit(
        &self,
        data: &RegressionSet,
        rng: &mut dyn ReleaseRng,
    ) -> Result<RegressionModel, ErmError> {
        match &self.trainer {
            RegressionTrainer::Erm(ErmTrainer::Pure(params)) => {
                Ok(params.fit_regression(data, rng)?.into_model())
            }
            RegressionTrainer::Erm(ErmTrainer::Gaussian(erm)) => {
                let (model, _) = erm.fit_regression(data, rng)?;
                model.with_feature_map(&self.feature_map)
            }
            RegressionTrainer::AdaSsp(mechanism) => {
                let (model, _) = mechanism.fit_regression(data, rng)?;
                model.with_feature_map(&self.feature_map)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use dp_erm::{Loss, RegularizationRule, TargetClipping, TargetScale, TrainingSet};
    use dp_noise::InsecureSeededRng;

    use super::*;

    fn recipe(mechanism: Mechanism) -> ErmRecipe {
        ErmRecipe {
            loss: Loss::huber_regression(DEFAULT_HUBER_THRESHOLD).unwrap(),
            mechanism,
            regularization: Regularization::Rule,
            groups: None,
            tolerance: None,
            feature_map: "test-map".into(),
        }
    }

    /// Output perturbation by its own rule beats predicting the training mean on a linear
    /// truth (20,000 rows, d = 6, ε = 1), where objective perturbation's Λ (its rule before)
    /// made it several times worse than the mean; the Gaussian output rule likewise.
    #[test]
    fn output_perturbation_by_its_rule_beats_the_mean() {
        use rand::RngExt;
        let mut rng = InsecureSeededRng::new(9);
        let (n, d) = (20_000, 6);
        let (mut rows, mut targets) = (Vec::new(), Vec::new());
        for _ in 0..2 * n {
            let x: Vec<f64> = (0..d - 1).map(|_| rng.random_range(0.0..1.0)).collect();
            let signal: f64 = x
                .iter()
                .enumerate()
                .map(|(j, v)| (v - 0.5) * (j as f64 - 2.0))
                .sum();
            targets.push((0.25 * signal + rng.random_range(-0.1..0.1)).clamp(-1.0, 1.0));
            rows.extend(x.iter().map(|v| v / (d as f64).sqrt()));
            rows.push(1.0 / (d as f64).sqrt());
        }
        let data = RegressionSet::new(
            TrainingSet::builder(d).dense_rows(rows[..n * d].to_vec()),
            &targets[..n],
            TargetScale::new(-1.0, 1.0).unwrap(),
            TargetClipping::Refuse,
        )
        .unwrap();
        let test = dp_erm::Features::dense(d, rows[n * d..].to_vec()).unwrap();
        let truth = &targets[n..];
        let mean = targets[..n].iter().sum::<f64>() / n as f64;
        let mean_error: f64 = truth.iter().map(|t| (t - mean).powi(2)).sum();
        for mechanism in [
            Mechanism::Output { epsilon: 1.0 },
            Mechanism::GaussianOutput {
                epsilon: 1.0,
                delta: 1e-5,
            },
        ] {
            let plan = recipe(mechanism).plan_regression(n, d).unwrap();
            let model = plan.fit(&data, &mut rng).unwrap();
            let predictions = model.predictions(&test).unwrap();
            let error: f64 = predictions
                .iter()
                .zip(truth)
                .map(|(p, t)| (p - t).powi(2))
                .sum();
            let r2 = 1.0 - error / mean_error;
            eprintln!(
                "{mechanism:?}: Λ {:.3e}, test R² {r2:.3}",
                plan.regularization
            );
            assert!(r2 > 0.3, "{mechanism:?}: R² {r2}");
        }
    }

    /// Output perturbation is warned of from a lower noise ratio than objective
    /// perturbation: at diamonds' sizes (43,152 rows, 27 features) and ε = 0.2 (where the
    /// study measured output perturbation near or below the mean, objective perturbation
    /// above it), and objective perturbation at ε = 0.1, where it measured R² −0.008.
    #[test]
    fn output_perturbation_is_warned_of_sooner() {
        let (n, d) = (43_152, 27);
        let warned = |mechanism| {
            recipe(mechanism)
                .plan_regression(n, d)
                .unwrap()
                .outlook(n, d)
                .unwrap()
                .warning
                .is_some()
        };
        assert!(warned(Mechanism::Output { epsilon: 0.2 }));
        assert!(warned(Mechanism::GaussianOutput {
            epsilon: 0.2,
            delta: 1e-5
        }));
        assert!(!warned(Mechanism::Objective {
            epsilon: 0.2,
            calibration: Default::default()
        }));
        assert!(warned(Mechanism::Objective {
            epsilon: 0.1,
            calibration: Default::default()
        }));
        // Heavy-tailed in effect: warned of at ε = 1 (the study's synthetic table, 30,000
        // rows of 10 features, measured a mean R² of −0.17 there), not at ε = 5.
        assert!(warned(Mechanism::Output { epsilon: 1.0 }));
        assert!(!warned(Mechanism::Output { epsilon: 5.0 }));
        let synthetic = recipe(Mechanism::Output { epsilon: 1.0 }).plan_regression(30_000, 11);
        assert!(
            synthetic
                .unwrap()
                .outlook(30_000, 11)
                .unwrap()
                .warning
                .is_some()
        );
    }

    #[test]
    fn a_regressor_plans_from_public_sizes_and_fits_with_its_rule() {
        let data = RegressionSet::new(
            TrainingSet::builder(2).dense_rows(vec![0.5, 0.1, -0.2, 0.4, 0.3, 0.3]),
            &[3.0, 1.0, 2.0],
            TargetScale::new(0.0, 4.0).unwrap(),
            TargetClipping::Refuse,
        )
        .unwrap();
        for mechanism in [
            Mechanism::Objective {
                epsilon: 1.0,
                calibration: Default::default(),
            },
            Mechanism::Output { epsilon: 1.0 },
            Mechanism::GaussianObjective {
                epsilon: 1.0,
                delta: 1e-6,
            },
            Mechanism::GaussianOutput {
                epsilon: 1.0,
                delta: 1e-6,
            },
        ] {
            let recipe = recipe(mechanism);
            let plan = recipe.plan_regression(3, 2).unwrap();
            assert_eq!(plan.epsilon, Some(1.0));
            match mechanism {
                Mechanism::Objective { .. } => {
                    let rule = RegularizationRule::REGRESSION.regularization(3, 2, 1.0);
                    assert!(plan.regularization >= rule.unwrap());
                }
                // Output perturbation has a rule of its own, taken as it is.
                Mechanism::Output { .. } => {
                    let rule = RegularizationRule::REGRESSION_OUTPUT.regularization(3, 2, 1.0);
                    assert_eq!(plan.regularization, rule.unwrap());
                }
                _ => {}
            }
            let model = plan.fit(&data, &mut InsecureSeededRng::new(1)).unwrap();
            assert_eq!(model.metadata().feature_map.as_deref(), Some("test-map"));
            assert_eq!(model.epsilon(), Some(1.0));
            // 2/(3·1) far above the ratio where the mean wins: warned of.
            assert!(plan.outlook(3, 2).unwrap().warning.is_some());
            assert!(plan.outlook(100_000, 2).unwrap().warning.is_none());
            // Under the rule's smallest n: warned of, whatever the ratio.
            assert!(plan.outlook(1_999, 2).unwrap().warning.is_some());
        }
        // A classifier's loss is refused by name before any data.
        let mut classifier = recipe(Mechanism::Output { epsilon: 1.0 });
        classifier.loss = Loss::Logistic;
        let error = classifier.plan_regression(3, 2).unwrap_err().to_string();
        assert!(error.starts_with("loss"), "{error}");
        // And a regression loss cannot plan a classifier.
        assert!(
            recipe(Mechanism::Output { epsilon: 1.0 })
                .plan(3, 2, 2)
                .is_err()
        );
    }

    #[test]
    fn adassp_is_named_planned_and_fitted_from_the_one_recipe() {
        let mechanism = Mechanism::named("adassp", "cliff-free", 1.0, 1e-5).unwrap();
        assert_eq!(
            mechanism,
            Mechanism::AdaSsp {
                epsilon: 1.0,
                delta: 1e-5
            }
        );
        // δ = 0 is refused by name, pointing to the pure-ε mechanisms.
        let error = Mechanism::named("adassp", "cliff-free", 1.0, 0.0)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("delta") && error.contains("'objective'"),
            "{error}"
        );
        assert!(Mechanism::named("adassp", "cms11", 1.0, 1e-5).is_err());
        // A classifier cannot take it.
        let classifier = ErmRecipe {
            loss: Loss::Logistic,
            ..recipe(mechanism)
        };
        let error = classifier.plan(100, 2, 2).unwrap_err().to_string();
        assert!(error.contains("regressors only"), "{error}");

        let data = RegressionSet::new(
            TrainingSet::builder(2).dense_rows(vec![0.5, 0.1, -0.2, 0.4, 0.3, 0.3]),
            &[3.0, 1.0, 2.0],
            TargetScale::new(0.0, 4.0).unwrap(),
            TargetClipping::Refuse,
        )
        .unwrap();
        let plan = recipe(mechanism).plan_regression(3, 2).unwrap();
        assert!(matches!(plan.trainer, RegressionTrainer::AdaSsp(_)));
        assert_eq!((plan.epsilon, plan.delta), (Some(1.0), 1e-5));
        assert!(plan.adassp.unwrap().epsilon <= 1.0);
        assert!(plan.outlook(3, 2).unwrap().warning.is_some());
        let model = plan.fit(&data, &mut InsecureSeededRng::new(1)).unwrap();
        assert_eq!(
            model.metadata().mechanism,
            dp_erm::Mechanism::AdaSsp {
                epsilon: 1.0,
                delta: 1e-5
            }
        );
        assert_eq!(model.metadata().feature_map.as_deref(), Some("test-map"));
        // A fixed Λ adds the ridge 2nΛ: the model records at least it.
        let mut fixed = recipe(mechanism);
        fixed.regularization = Regularization::Fixed(0.5);
        let model = fixed
            .plan_regression(3, 2)
            .unwrap()
            .fit(&data, &mut InsecureSeededRng::new(1))
            .unwrap();
        assert!(model.metadata().regularization >= 0.5);
    }
}
