//! DP-SGD's regressor (`dpml.DPSGDRegressor`), as plain Rust: dp-fit's DP-SGD options on
//! the regressors' `RegressionSet`.

use dp_erm::{Loss, RegressionModel, TargetScale};

use crate::error::CoreError;
use crate::fit::{
    FitReport, Randomness, SgdReport, SgdSpec, drawing, generator, privately_bounded,
};
use crate::regress::regression_set;
use crate::rows::{RowTransform, Rows};

/// Everything a DP-SGD regressor's fit needs besides the data: DP-SGD's spec (its loss is
/// replaced by Huber regression at `threshold`), and the target's public bounds.
#[derive(Clone, Debug)]
pub struct SgdRegressionSpec {
    /// ε, δ, DP-SGD's options and the public row transform (rows above its norm bound are
    /// refused unless it clips them: regression data lie in the unit ball).
    pub sgd: SgdSpec,
    /// The Huber threshold, in the scaled target's units.
    pub threshold: f64,
    /// The public target bounds.
    pub target: TargetScale,
    /// Clip targets outside the bounds instead of refusing them.
    pub clip_targets: bool,
}

/// Trains a regressor by DP-SGD on `rows` and `targets`, stopping with
/// `ErmError::Interrupted` when `interrupted` answers true before a step. With
/// `norm_epsilon`, the rows' norm bound is first released from them at that ε
/// ([`privately_bounded`]: pure ε, composed sequentially with DP-SGD's (ε, δ)) and
/// replaces the transform's; the transform the model was trained with is returned.
pub fn fit_sgd_regression_interruptible(
    rows: Rows<'_>,
    targets: &[f64],
    spec: &SgdRegressionSpec,
    norm_epsilon: Option<f64>,
    randomness: Randomness,
    interrupted: &dyn Fn() -> bool,
) -> Result<(FitReport<RegressionModel>, RowTransform), CoreError> {
    let rows = rows.checked()?;
    let transform = spec.sgd.transform.checked()?;
    if targets.len() != rows.len() {
        return Err(CoreError::value(
            "y",
            format!("has {} targets for {} rows of X", targets.len(), rows.len()),
        ));
    }
    let options = dp_fit::sgd::SgdOptions {
        loss: Loss::huber_regression(spec.threshold)?,
        ..spec.sgd.options.clone()
    };
    // Every refusal of the parameters (and σ's calibration), before the rows are touched.
    let (sgd, resolved) = options.trainer(spec.sgd.epsilon, spec.sgd.delta, rows.len())?;
    // Every refusal of the rows and targets, before any draw: with a private norm bound the
    // rows are clipped to it, so they are checked as clipped rows.
    let checked = match norm_epsilon {
        Some(_) => RowTransform {
            clip: true,
            ..transform
        },
        None => transform,
    };
    let data = regression_set(&rows, targets, &checked, spec.target, spec.clip_targets)?;
    let mut rng = generator(randomness)?;
    let (model, transform) = drawing(&mut *rng, |rng| {
        let (data, transform) = match norm_epsilon {
            None => (data, transform),
            Some(epsilon) => {
                let transform = privately_bounded(&rows, transform, epsilon, rng)?;
                let data =
                    regression_set(&rows, targets, &transform, spec.target, spec.clip_targets)?;
                (data, transform)
            }
        };
        let model = sgd
            .fit_regression_interruptible(&data, rng, interrupted)?
            .with_feature_map(&transform.id())?;
        Ok((model, transform))
    })?;
    let report = FitReport {
        models: vec![model],
        regularization: resolved.regularization,
        epsilon: Some(spec.sgd.epsilon),
        delta: spec.sgd.delta,
        calibration: None,
        gaussian: None,
        sgd: Some(SgdReport::of(&sgd, &resolved, spec.sgd.delta)),
        outlook: Some(dp_fit::outlook::Outlook::sgd_regression(
            spec.sgd.options.schedule_rows(rows.len()),
            spec.sgd.epsilon,
        )),
    };
    Ok((report, transform))
}
