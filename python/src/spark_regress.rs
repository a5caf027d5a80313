//! Regressors fitted over rows held by Spark executors (`dpml.spark.LinearRegression`,
//! `HuberRegressor`): the executor kernels — one that encodes a partition's feature
//! vectors and targets once into a contract-checked block and its scaled targets, one that
//! sums that block on every pass — and the driver's fit, dp-fit's regression plan over the
//! classifiers' [`PartitionOracle`].
//!
//! # Privacy
//! As [`crate::spark`]'s: noise only on the driver (dp-fit's [`RegressionPlan::fit_sums`],
//! the in-memory regressor's calibration and release), drawn after a validation pass that
//! checks every row and the public n; executors compute deterministic functions of their
//! rows and `w`; every pass re-checks each row (`‖x‖ ≤ 1` after the public transform, and
//! a scaled target in [−1, 1]: dp-erm's `contract_regression_sums`) and must see, per
//! partition, the validation pass's row count and checksum (the checksum covers the scaled
//! targets). A target outside the public bounds is refused naming its row, never its
//! value, unless the caller asked for targets to be clipped (per row: no privacy cost).
//!
//! [`RegressionPlan::fit_sums`]: dp_fit::regression::RegressionPlan

use dp_erm::{
    BlockEncoder, ErmError, Loss, RegressionModel, TargetScale, contract_regression_sums,
    visit_encoded_block,
};
use dp_fit::recipe::ErmRecipe;

use crate::error::CoreError;
use crate::fit::{FitReport, Randomness, generator, training_set_from};
use crate::regress::RegressionSpec;
use crate::rows::{RowTransform, Rows};
use crate::spark::{AskPartitions, PartitionOracle, PartitionSums, RowChecksum};

/// One partition's rows and targets encoded on an executor, once per fit.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedRegression {
    /// Rows in the partition.
    pub rows: usize,
    /// [`RowChecksum`] of the encoded rows, each with its scaled target as its label.
    pub checksum: u64,
    /// dp-erm's encoded block, every label +1.
    pub block: Vec<u8>,
    /// The scaled targets, one `f64` little-endian per row.
    pub targets: Vec<u8>,
}

/// Encodes a partition (on an executor): `rows` through the public `transform` (checked
/// against the unit ball, or clipped with the transform's clipping), `targets` (one per
/// row) checked against the public `bounds` — a target outside them, or not a number, is
/// refused naming its row within the partition and never its value, unless
/// `clip_targets` — and scaled into [−1, 1].
pub fn encode_regression_partition(
    rows: Rows<'_>,
    targets: &[f64],
    transform: &RowTransform,
    bounds: TargetScale,
    clip_targets: bool,
) -> Result<EncodedRegression, CoreError> {
    let transform = transform.checked()?;
    let cols = transform.output_features(rows.features());
    let mut block = BlockEncoder::new(cols)?;
    if rows.is_empty() && targets.is_empty() {
        return Ok(EncodedRegression {
            rows: 0,
            checksum: RowChecksum::default().value(),
            block: block.finish(),
            targets: Vec::new(),
        });
    }
    let rows = rows.checked()?;
    if targets.len() != rows.len() {
        return Err(CoreError::value(
            "partition",
            format!("has {} targets for {} rows", targets.len(), rows.len()),
        ));
    }
    let scaled = scaled_targets(targets, bounds, clip_targets)?;
    let set = training_set_from(&rows, vec![1.0; rows.len()], &transform, 0)?;
    let mut checksum = RowChecksum::default();
    let mut entries = Vec::new();
    for (i, &target) in scaled.iter().enumerate() {
        entries.clear();
        set.for_each_entry(i, |j, v| entries.push((j, v)));
        checksum.add_row(&entries, target);
        block.push_row(&entries, 1.0)?;
    }
    Ok(EncodedRegression {
        rows: scaled.len(),
        checksum: checksum.value(),
        block: block.finish(),
        targets: scaled.iter().flat_map(|t| t.to_le_bytes()).collect(),
    })
}

/// The targets scaled into [−1, 1] by the public bounds; one outside them (or not a
/// number) refused naming its row, or clipped with `clip`.
fn scaled_targets(targets: &[f64], bounds: TargetScale, clip: bool) -> Result<Vec<f64>, CoreError> {
    let (lower, upper) = (bounds.lower(), bounds.upper());
    targets
        .iter()
        .enumerate()
        .map(|(row, &y)| {
            let y = if (lower..=upper).contains(&y) {
                y
            } else if clip && !y.is_nan() {
                y.clamp(lower, upper)
            } else {
                return Err(CoreError::value(
                    "partition",
                    format!(
                        "row {row}: the target is not a number within the public bounds \
                         [{lower:?}, {upper:?}]: widen the bounds (never from the data) or \
                         pass clip_targets=True"
                    ),
                ));
            };
            Ok(bounds.scale(y))
        })
        .collect()
}

/// One pass over a partition's encoded block and scaled targets (on an executor): the rows
/// decoded, checked again by dp-erm's regression contract (rows in the unit ball, labels
/// +1, targets in [−1, 1]), summed at `w` with `loss` (a regression loss), and the
/// checksum recomputed from what was decoded.
pub fn regression_block_sums(
    block: &[u8],
    targets: &[u8],
    cols: usize,
    loss: Loss,
    w: &[f64],
    with_hessian: bool,
) -> Result<PartitionSums, CoreError> {
    if w.len() != cols {
        return Err(CoreError::value(
            "w",
            format!("has {} entries for {cols} features", w.len()),
        ));
    }
    if let Some(j) = w.iter().position(|v| !v.is_finite()) {
        return Err(CoreError::value("w", format!("entry {j} is not finite")));
    }
    if !targets.len().is_multiple_of(8) {
        return Err(CoreError::value("targets", "must hold one f64 per row"));
    }
    let targets: Vec<f64> = targets
        .chunks_exact(8)
        .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    let mut checksum = RowChecksum::default();
    let mut sums = Ok(dp_optim::PartialSums::zero(cols, with_hessian));
    let mut entries = Vec::new();
    let mut first = 0;
    let rows = visit_encoded_block(block, cols, &mut |rows| {
        let count = rows.rows();
        let Some(own) = targets.get(first..first + count) else {
            sums = Err(CoreError::value(
                "targets",
                "hold fewer targets than the block has rows",
            ));
            return;
        };
        for (i, &target) in own.iter().enumerate() {
            let (indices, values) = rows.row(i);
            entries.clear();
            entries.extend(
                indices
                    .iter()
                    .map(|&j| j as usize)
                    .zip(values.iter().copied()),
            );
            checksum.add_row(&entries, target);
        }
        sums = rows
            .with_targets(own)
            .map_err(ErmError::from)
            .and_then(|rows| contract_regression_sums(&rows, w, loss, with_hessian))
            .map_err(refused_row);
        first += count;
    })?;
    if rows != targets.len() {
        return Err(CoreError::value(
            "targets",
            format!("hold {} targets for {rows} rows", targets.len()),
        ));
    }
    Ok(PartitionSums {
        sums: sums?,
        checksum: checksum.value(),
    })
}

/// A contract refusal of a block's row, named by its row within the partition.
fn refused_row(e: ErmError) -> CoreError {
    match e {
        ErmError::TargetOutsideBounds { row, .. } => CoreError::value(
            "partition",
            format!("row {row} has a scaled target outside [-1, 1]"),
        ),
        ErmError::RowNormAboveOne { row, norm } => CoreError::value(
            "partition",
            format!("row {row} has norm {norm} above 1 after the row transform"),
        ),
        ErmError::InvalidLabel { row, .. } => CoreError::value(
            "partition",
            format!("row {row} is not labelled +1 in a regression block"),
        ),
        other => other.into(),
    }
}

/// Trains a regressor over rows held by executors: every refusal of the parameters (dp-fit's
/// regression plan, as in memory), then the validation pass (rows checked, per-partition
/// counts and checksums recorded, the total checked against the public `examples`), all
/// before the driver's generator draws anything; then [`dp_fit::regression::RegressionPlan::fit_sums`]
/// over a [`PartitionOracle`]. Returns the fit and the number of passes asked.
/// `input_features` is the feature vectors' length.
pub fn fit_regression_partitions(
    spec: &RegressionSpec,
    examples: usize,
    input_features: usize,
    ask: &AskPartitions<'_>,
    randomness: Randomness,
) -> Result<(FitReport<RegressionModel>, usize), CoreError> {
    spec.transform.checked()?;
    let features = spec.transform.output_features(input_features);
    let recipe = ErmRecipe {
        loss: Loss::huber_regression(spec.threshold)?,
        mechanism: spec.mechanism,
        regularization: spec.regularization,
        groups: None,
        tolerance: spec.tolerance,
        feature_map: spec.transform.id(),
    };
    let plan = recipe.plan_regression(examples, features)?;
    if features > dp_optim::MAX_HESSIAN_DIMENSION {
        return Err(CoreError::value(
            "features",
            format!("are {features} after the transform; fits over Spark take at most 16384"),
        ));
    }
    let oracle = PartitionOracle::new(features, ask);
    oracle.validate(examples)?;
    let mut rng = generator(randomness)?;
    let model = plan.fit_sums(&oracle, examples, spec.target, &mut *rng)?;
    let report = FitReport {
        models: vec![model],
        regularization: plan.regularization,
        epsilon: plan.epsilon,
        delta: plan.delta,
        calibration: plan.calibration,
        gaussian: plan.gaussian,
        sgd: None,
        outlook: plan.outlook(examples, features),
    };
    Ok((report, oracle.passes()))
}
