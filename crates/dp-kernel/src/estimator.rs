//! Training: map the raw rows, then run a dp-erm mechanism on the mapped rows.

use dp_erm::{ErmError, ErmParams, Examples, Fit, Loss, Trainer, TrainingSet};
use dp_noise::ReleaseRng;

use crate::{FeatureMap, KernelError, KernelModel};

/// A kernel classifier to train: a drawn [`FeatureMap`] and the dp-erm parameters
/// (mechanism, loss, Λ, ε, solver tolerance) applied to the mapped rows.
///
/// # Privacy
///
/// With a private mechanism, the released [`KernelModel`] (the map and the weights) is
/// ε-differentially private for datasets of raw examples that differ in one example
/// (replaced), with the ε of the dp-erm mechanism — for **any** raw inputs: no norm bound
/// on x is needed. The argument (CMS11 §5, docs/src/reference/algorithms.md §5):
/// - the map is drawn before, and independently of, the data, so releasing it costs
///   nothing, and conditioned on it the mapped datasets `{(v(x_i), y_i)}` of two
///   neighbouring raw datasets are themselves neighbouring (one mapped row replaced);
/// - every mapped row has norm ≤ 1 (each coordinate is a bounded cosine times
///   `(1 − 1e-12)/√D`), which is the condition dp-erm's guarantee needs — whatever x is;
/// - dp-erm's mechanism is then ε-DP for the mapped data (see [`ErmParams`]'s `# Privacy`:
///   objective perturbation is the default and the one the papers use; output
///   perturbation works the same way; [`ErmParams::non_private`] gives no guarantee).
///
/// The map's scaling is `1/√D`, not the SVM paper's `√(2/D)`, whose rows reach norm √2
/// and break the sensitivity bound; the lost factor 2 in `v(x)ᵀv(x') ≈ k(x, x')/2` is a
/// change of Λ. Refusals depend on the parameters, n, d and D only, except dp-erm's
/// documented ones (see its `# Privacy`). dp-erm's group-shaped noise is refused: mapped
/// rows are dense, their group norm is not bounded by 1.
#[derive(Clone, Debug)]
pub struct KernelParams {
    map: FeatureMap,
    erm: ErmParams,
}

impl KernelParams {
    /// `erm` applied to rows mapped through `map`.
    pub fn new(map: FeatureMap, erm: ErmParams) -> Self {
        let erm = erm.feature_map(&map.id());
        Self { map, erm }
    }

    /// Objective perturbation (the default mechanism) with `loss`, Λ and ε.
    pub fn objective_perturbation(
        map: FeatureMap,
        loss: Loss,
        regularization: f64,
        epsilon: f64,
    ) -> Self {
        Self::new(
            map,
            ErmParams::objective_perturbation(loss, regularization, epsilon),
        )
    }

    /// The feature map.
    pub fn map(&self) -> &FeatureMap {
        &self.map
    }

    /// The dp-erm parameters.
    pub fn erm(&self) -> &ErmParams {
        &self.erm
    }

    /// The ε a fit spends (None if not private).
    pub fn epsilon(&self) -> Option<f64> {
        self.erm.mechanism().epsilon()
    }

    /// Checks everything that can be checked without data.
    pub fn check(&self) -> Result<(), KernelError> {
        self.erm.check()?;
        // Mapped rows are dense: their group norm can exceed 1, and a refusal would then
        // depend on the raw rows.
        if self.erm.noise_groups().is_some() {
            return Err(ErmError::MisplacedOption {
                option: "group-shaped noise",
                applies_to: "one-hot rows (dp-erm), not random features",
            }
            .into());
        }
        Ok(())
    }

    /// Trains on raw examples (d = the map's input features; any finite values). Every
    /// refusal that depends on parameters and sizes comes first, before the rows are
    /// mapped: see the `# Privacy` section. A warm start in the dp-erm parameters is
    /// refused, as through the [`Trainer`] trait ([`ErmParams::check_composable`]).
    pub fn fit<R: ReleaseRng + ?Sized>(
        &self,
        data: &Examples,
        rng: &mut R,
    ) -> Result<KernelFit, KernelError> {
        self.check_shape(data.len(), data.features())?;
        let mapped = self.map.map(data.inputs())?;
        let training = TrainingSet::from_dense_matrix(mapped, data.labels().to_vec())?;
        let fit = self.erm.fit(&training, rng)?;
        Ok(KernelFit {
            model: KernelModel::new(self.map.clone(), fit.model().clone()),
            linear: fit,
        })
    }
}

/// Trains through [`KernelParams::fit`] (see its `# Privacy`).
impl Trainer for KernelParams {
    type Model = KernelModel;
    type Error = KernelError;

    fn epsilon(&self) -> Option<f64> {
        KernelParams::epsilon(self)
    }

    fn train(&self, data: &Examples, rng: &mut dyn ReleaseRng) -> Result<KernelModel, KernelError> {
        self.fit(data, rng).map(KernelFit::into_model)
    }

    /// The parameters, the map's input dimension, the mapped design's size
    /// ([`FeatureMap::check_rows`]), a warm start ([`ErmParams::check_composable`]), and
    /// dp-erm's public refusals (tolerance floor, noise precision) for `rows` rows of the
    /// map's D output features. Any finite rows are
    /// accepted: the map's outputs always lie in the unit ball.
    fn check_shape(&self, rows: usize, features: usize) -> Result<(), KernelError> {
        self.check()?;
        if features != self.map.input_features() {
            return Err(ErmError::DimensionMismatch {
                what: "features of the data (the feature map's input features)",
                expected: self.map.input_features(),
                found: features,
            }
            .into());
        }
        self.map.check_rows(rows)?;
        self.erm.check_composable()?;
        self.erm
            .noise_calibration(rows, self.map.output_features())?;
        Ok(())
    }
}

/// The result of [`KernelParams::fit`]: the released model, and what dp-erm reports about
/// the fit on the mapped rows (calibration, solver; the secret parts only on request).
#[derive(Debug)]
pub struct KernelFit {
    model: KernelModel,
    linear: Fit,
}

impl KernelFit {
    /// The released model.
    pub fn model(&self) -> &KernelModel {
        &self.model
    }

    /// The released model, by value.
    pub fn into_model(self) -> KernelModel {
        self.model
    }

    /// The ε spent (None if not private).
    pub fn epsilon(&self) -> Option<f64> {
        self.linear.epsilon()
    }

    /// dp-erm's report on the fit of the mapped rows.
    pub fn linear_fit(&self) -> &Fit {
        &self.linear
    }
}
