//! The regressors' fit (`dpml.LinearRegression`, `Ridge`, `HuberRegressor`), as plain
//! Rust: dp-fit's regression recipe on a `RegressionSet` built as a Rust user builds one.

use dp_erm::{
    AdaSspCalibration, ErmError, Loss, RegressionModel, RegressionSet, TargetClipping, TargetScale,
};
use dp_fit::recipe::{ErmRecipe, Mechanism, Regularization};

use crate::error::CoreError;
use crate::fit::{
    FitReport, Randomness, drawing, generator, model_groups, named_row_error, privately_bounded,
    row_builder,
};
use crate::rows::{RowTransform, Rows};

/// Everything a regressor's fit needs besides the data.
#[derive(Clone, Debug)]
pub struct RegressionSpec {
    /// The Huber threshold, in the scaled target's units.
    pub threshold: f64,
    /// The mechanism and its (ε, δ).
    pub mechanism: Mechanism,
    /// How Λ is chosen.
    pub regularization: Regularization,
    /// The solver's certified gradient norm (None: dp-erm's default).
    pub tolerance: Option<f64>,
    /// The public row transform.
    pub transform: RowTransform,
    /// The public target bounds.
    pub target: TargetScale,
    /// Clip targets outside the bounds instead of refusing them.
    pub clip_targets: bool,
    /// One public group index per input feature (one-hot blocks): objective perturbation's
    /// pure-ε noise shaped to them, as for the classifiers.
    pub feature_groups: Option<Vec<usize>>,
}

/// Trains a regressor by dp-fit's recipe on `rows` and `targets` (one per row); with
/// AdaSSP's calibration when it trained it.
pub fn fit_regression(
    rows: Rows<'_>,
    targets: &[f64],
    spec: &RegressionSpec,
    norm_epsilon: Option<f64>,
    randomness: Randomness,
) -> Result<
    (
        FitReport<RegressionModel>,
        Option<AdaSspCalibration>,
        RowTransform,
    ),
    CoreError,
> {
    let rows = rows.checked()?;
    spec.transform.checked()?;
    if targets.len() != rows.len() {
        return Err(CoreError::value(
            "y",
            format!("has {} targets for {} rows of X", targets.len(), rows.len()),
        ));
    }
    let features = spec.transform.output_features(rows.features());
    let recipe = ErmRecipe {
        loss: Loss::huber_regression(spec.threshold)?,
        mechanism: spec.mechanism,
        regularization: spec.regularization,
        groups: spec
            .feature_groups
            .as_deref()
            .map(|g| model_groups(g, rows.features(), spec.transform.intercept.is_some()))
            .transpose()?,
        tolerance: spec.tolerance,
        feature_map: spec.transform.id(),
    };
    // Every refusal of the parameters, before the rows are touched.
    let plan = recipe.plan_regression(rows.len(), features)?;
    // Every refusal of the rows and targets, before any draw: with a private norm bound the
    // rows are clipped to it, so they are checked as clipped rows.
    let checked = match norm_epsilon {
        Some(_) => RowTransform {
            clip: true,
            ..spec.transform
        },
        None => spec.transform,
    };
    let data = regression_set(&rows, targets, &checked, spec.target, spec.clip_targets)?;
    let mut rng = generator(randomness)?;
    let (model, transform) = drawing(&mut *rng, |rng| {
        let Some(epsilon) = norm_epsilon else {
            return Ok((plan.fit(&data, rng)?, spec.transform));
        };
        let transform = privately_bounded(&rows, spec.transform, epsilon, rng)?;
        let data = regression_set(&rows, targets, &transform, spec.target, spec.clip_targets)?;
        // The plan recorded the placeholder bound: the model records the released one,
        // which its file's loaders scale new rows by.
        let model = plan.fit(&data, rng)?.with_feature_map(&transform.id())?;
        Ok((model, transform))
    })?;
    // AdaSSP chooses λ from its releases: report the Λ its model records.
    let regularization = match plan.adassp {
        Some(_) => model.metadata().regularization,
        None => plan.regularization,
    };
    let report = FitReport {
        models: vec![model],
        regularization,
        epsilon: plan.epsilon,
        delta: plan.delta,
        calibration: plan.calibration,
        gaussian: plan.gaussian,
        sgd: None,
        outlook: plan.outlook(rows.len(), features),
    };
    Ok((report, plan.adassp, transform))
}

/// The regression set a Rust user builds from these rows (the public transform) and
/// targets (within `target`, else refused naming the row, or clipped with `clip_targets`).
pub fn regression_set(
    rows: &Rows<'_>,
    targets: &[f64],
    transform: &RowTransform,
    target: TargetScale,
    clip_targets: bool,
) -> Result<RegressionSet, CoreError> {
    let clipping = if clip_targets {
        TargetClipping::Clip
    } else {
        TargetClipping::Refuse
    };
    RegressionSet::new(row_builder(rows, transform)?, targets, target, clipping).map_err(
        |e| match e {
            ErmError::TargetOutsideBounds { row, lower, upper } => CoreError::value(
                "y",
                format!(
                    "row {row} is not a number within the public bounds \
                     [{lower:?}, {upper:?}]: widen the bounds (never from the data) or pass \
                     clip_targets=True"
                ),
            ),
            other => named_row_error(other, transform, 0),
        },
    )
}

/// Predictions of `model` for `rows` (after the transform recorded in the model), in the
/// target's units.
pub fn predict_regression(model: &RegressionModel, rows: Rows<'_>) -> Result<Vec<f64>, CoreError> {
    let rows = rows.checked()?;
    let transform = transform_of(model)?;
    let d = model.input_features() - transform.output_features(0);
    if rows.features() != d {
        return Err(CoreError::value(
            "X",
            format!(
                "has {} features, but the model is expecting {d} features as input",
                rows.features()
            ),
        ));
    }
    let mut out = crate::memory::with_capacity("the predictions", rows.len())?;
    let mut row = vec![0.0; model.input_features()];
    for r in 0..rows.len() {
        transform.write_scoring_row(&rows, r, &mut row);
        out.push(model.predict(&row)?);
    }
    Ok(out)
}

/// The transform a regressor's rows went through, from its feature map.
pub fn transform_of(model: &RegressionModel) -> Result<RowTransform, CoreError> {
    let id = model.metadata().feature_map.clone().unwrap_or_default();
    let transform = RowTransform::from_id(&id)?;
    if transform.output_features(0) >= model.input_features() {
        return Err(CoreError::value("model file", "has no input features"));
    }
    Ok(transform)
}

/// `(coef, intercept)` in the input's and the target's units: the model predicts
/// `clamp(coef·x + intercept)` into the target bounds.
pub fn regression_coefficients(model: &RegressionModel) -> Result<(Vec<f64>, f64), CoreError> {
    let transform = transform_of(model)?;
    let d = model.input_features() - transform.output_features(0);
    let shrink = transform.intercept.map_or(1.0, |c| 1.0 / 1f64.hypot(c));
    let scale = model.target_scale();
    let half_width = 0.5 * (scale.upper() - scale.lower());
    let centre = scale.lower() + half_width;
    let w = model.weights();
    let coef = w[..d]
        .iter()
        .map(|v| v * shrink / transform.norm_bound * half_width)
        .collect();
    let intercept = centre + half_width * transform.intercept.map_or(0.0, |c| w[d] * c * shrink);
    Ok((coef, intercept))
}
