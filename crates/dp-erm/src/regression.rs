//! Regression (docs/src/reference/algorithms.md §10): Huber regression trained by the
//! classifiers' mechanisms — output and objective perturbation, pure ε and Gaussian — on
//! targets scaled into [−1, 1] by public bounds.

use dp_noise::ReleaseRng;

use crate::calibration::NoiseCalibration;
use crate::estimator::{Mutation, Task};
use crate::{
    ErmError, ErmParams, GaussianCalibration, GaussianErm, RegressionModel, TargetScale,
    TrainingSet, TrainingSetBuilder,
};

/// What to do with a target outside its public bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetClipping {
    /// Refuse the data, naming the first such row (the default: nothing silently changed).
    #[default]
    Refuse,
    /// Clip it to the nearer bound. Per-row, so the neighbouring relation is kept: the
    /// guarantee covers the clipped data, and so the original.
    Clip,
}

/// Regression data: rows in the unit ball (the classifiers' contract, built by a
/// [`TrainingSetBuilder`] with its public transformations) and one real target per row
/// within public bounds, scaled into [−1, 1]. Every guarantee of a regression fit holds for
/// datasets that differ in one row `(x, y)` replaced, n public.
#[derive(Clone)]
pub struct RegressionSet {
    /// The rows, every label +1 (the margin of a residual loss is `fᵀx − t`).
    rows: TrainingSet,
    /// The targets scaled into [−1, 1].
    targets: Vec<f64>,
    scale: TargetScale,
}

/// Shows the shape only: rows and targets are the data the guarantees protect.
impl std::fmt::Debug for RegressionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegressionSet")
            .field("rows", &self.len())
            .field("features", &self.features())
            .field("target_scale", &self.scale)
            .finish_non_exhaustive()
    }
}

impl RegressionSet {
    /// The rows of `rows` (a builder given rows and transformations but no labels) with
    /// `targets`, one per row, within `scale`'s bounds — else refused by `clipping`'s rule
    /// with an error naming the first row (not its value), as is a target that is not a
    /// number. The targets are checked before the rows are built.
    pub fn new(
        rows: TrainingSetBuilder,
        targets: &[f64],
        scale: TargetScale,
        clipping: TargetClipping,
    ) -> Result<Self, ErmError> {
        if targets.is_empty() {
            return Err(ErmError::EmptyData);
        }
        let mut scaled = Vec::with_capacity(targets.len());
        for (row, &y) in targets.iter().enumerate() {
            let inside = (scale.lower()..=scale.upper()).contains(&y);
            let y = match clipping {
                _ if inside => y,
                TargetClipping::Clip if !y.is_nan() => y.clamp(scale.lower(), scale.upper()),
                _ => {
                    return Err(ErmError::TargetOutsideBounds {
                        row,
                        lower: scale.lower(),
                        upper: scale.upper(),
                    });
                }
            };
            scaled.push(scale.scale(y));
        }
        let rows = rows.labels(vec![1.0; targets.len()]).build()?;
        Ok(Self {
            rows,
            targets: scaled,
            scale,
        })
    }

    /// The number of rows n.
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    /// Always false: a regression set has at least one row.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// The number of features d.
    pub fn features(&self) -> usize {
        self.rows.features()
    }

    /// The public target bounds.
    pub fn target_scale(&self) -> TargetScale {
        self.scale
    }

    /// The targets scaled into [−1, 1] (what the loss sees).
    pub fn scaled_targets(&self) -> &[f64] {
        &self.targets
    }

    /// The rows at `indices`, in that order, with their targets and the same public
    /// bounds: one part of a partition (subsample-and-aggregate). The rows were checked and
    /// transformed when this set was built and are copied unchanged.
    pub fn select(&self, indices: &[usize]) -> Result<Self, ErmError> {
        if indices.is_empty() {
            return Err(ErmError::EmptyData);
        }
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.len()) {
            return Err(ErmError::IndexOutOfRange {
                what: "selected row index",
                index: bad,
                len: self.len(),
            });
        }
        let rows = indices.iter().map(|&i| self.rows.row_entries(i)).collect();
        let rows = TrainingSet::builder(self.features())
            .sparse_rows(rows)
            .labels(vec![1.0; indices.len()])
            .build()?;
        Ok(Self {
            rows,
            targets: indices.iter().map(|&i| self.targets[i]).collect(),
            scale: self.scale,
        })
    }

    /// The rows (every label +1).
    pub fn rows(&self) -> &TrainingSet {
        &self.rows
    }
}

/// A trained regressor with what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct RegressionFit {
    model: RegressionModel,
    calibration: Option<NoiseCalibration>,
}

impl RegressionFit {
    /// The model.
    pub fn model(&self) -> &RegressionModel {
        &self.model
    }

    /// The model, consuming the fit.
    pub fn into_model(self) -> RegressionModel {
        self.model
    }

    /// The ε spent (None for the non-private mechanism).
    pub fn epsilon(&self) -> Option<f64> {
        self.model.epsilon()
    }

    /// The noise parameters used (public: functions of the parameters and sizes only).
    pub fn calibration(&self) -> Option<&NoiseCalibration> {
        self.calibration.as_ref()
    }
}

impl ErmParams {
    /// Trains a regressor on `data` with this loss (a regression loss:
    /// [`crate::Loss::huber_regression`]) and mechanism.
    ///
    /// # Privacy
    /// The guarantee of [`ErmParams`]'s `# Privacy` (ε-DP, replace one row, n public), for
    /// regression data: rows with `‖x‖₂ ≤ 1` ([`RegressionSet`]'s contract) and targets
    /// scaled into [−1, 1] by public bounds. The loss of the residual `r = fᵀx − t` is
    /// 1-Lipschitz with `ℓ'' ≤ c = 1/h` ([`crate::Loss::HuberRegression`]), so the
    /// per-row gradient `ℓ'(r)·x` has norm at most 1 whatever the row and target, and a
    /// replaced row moves the data term's gradient by at most 2/n — the classifiers' bound,
    /// on which output perturbation's sensitivity `2/(nΛ)` (plus the solver's certified
    /// gap) and objective perturbation's noise and Jacobian term (with c) rest unchanged
    /// (derivation: docs/src/reference/algorithms.md §10). Refused before any work: a
    /// classification loss, and every refusal [`ErmParams::fit`] makes from the parameters
    /// and sizes.
    pub fn fit_regression<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
    ) -> Result<RegressionFit, ErmError> {
        self.fit_regression_with(data, rng, Mutation::NoiseRate(1.0))
    }

    /// [`ErmParams::noise_calibration`] for a regression fit on `examples` rows of
    /// `features` columns: every refusal [`ErmParams::fit_regression`] makes from the
    /// parameters and sizes is made here.
    pub fn regression_noise_calibration(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<Option<NoiseCalibration>, ErmError> {
        Ok(self
            .calibrate_for(Task::Regression, examples, features)?
            .calibration())
    }

    pub(crate) fn fit_regression_with<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
        mutation: Mutation,
    ) -> Result<RegressionFit, ErmError> {
        let (n, d) = (data.len(), data.features());
        let plan = self.calibrate_for(Task::Regression, n, d)?;
        let targets = data.scaled_targets();
        let (fit, _) = self.release(
            (n, d),
            &plan,
            rng,
            mutation,
            &mut |mu, linear, tolerance| {
                self.solve(data.rows(), Some(targets), mu, linear, tolerance)
            },
            &|groups| data.rows().check_group_norms(groups),
        )?;
        let calibration = fit.calibration().copied();
        Ok(RegressionFit {
            model: RegressionModel::from_linear(fit.into_model(), data.target_scale()),
            calibration,
        })
    }
}

impl GaussianErm {
    /// Trains a regressor on `data` with this loss (a regression loss) and mechanism.
    ///
    /// # Privacy
    /// The guarantee of [`GaussianErm`]'s `# Privacy` ((ε, δ)-DP, replace one row, n
    /// public) for [`RegressionSet`]'s data, by the argument of
    /// [`ErmParams::fit_regression`]: the residual loss is 1-Lipschitz with curvature at
    /// most 1/h, which is all the calibration uses.
    pub fn fit_regression<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
    ) -> Result<(RegressionModel, GaussianCalibration), ErmError> {
        self.fit_regression_with_noise_factor(data, rng, 1.0)
    }

    /// [`GaussianErm::calibration`] for a regression fit on `examples` rows of `features`
    /// columns.
    pub fn regression_calibration(
        &self,
        examples: usize,
        features: usize,
    ) -> Result<GaussianCalibration, ErmError> {
        self.calibration_for(Task::Regression, examples, features)
    }

    pub(crate) fn fit_regression_with_noise_factor<R: ReleaseRng + ?Sized>(
        &self,
        data: &RegressionSet,
        rng: &mut R,
        factor: f64,
    ) -> Result<(RegressionModel, GaussianCalibration), ErmError> {
        let calibration = self.calibration_for(Task::Regression, data.len(), data.features())?;
        let targets = data.scaled_targets();
        let (model, calibration, _) =
            self.release_with(data.rows(), Some(targets), calibration, factor, rng)?;
        Ok((
            RegressionModel::from_linear(model, data.target_scale()),
            calibration,
        ))
    }
}

#[path = "regression_sums.rs"]
mod sums;
pub use sums::contract_regression_sums;

#[cfg(test)]
#[path = "regression_tests.rs"]
mod tests;
