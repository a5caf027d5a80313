//! The one validation of a model, run by every route that builds one from outside data.
//!
//! serde's `try_from` sends every deserializer (the file loaders' bincode, and any format a
//! user picks) through the raw structs below and then through [`check_metadata`] and
//! [`check_weights`]: there is no way to deserialize an unchecked `LinearModel`.

use serde::Deserialize;

use super::{LinearModel, MAX_MODEL_FEATURES, MAX_MODEL_TEXT_BYTES, ModelMetadata};
use crate::ErmError;
use crate::error::{check_epsilon, check_regularization};
use crate::loss::Loss;
use crate::mechanism::{Mechanism, SgdRecord};

/// [`ModelMetadata`] as it arrives from a deserializer, before any check.
#[derive(Deserialize)]
pub struct RawModelMetadata {
    mechanism: Mechanism,
    loss: Loss,
    regularization: f64,
    features: usize,
    noise_groups: Option<usize>,
    feature_map: Option<String>,
    crate_version: String,
}

/// [`LinearModel`] as it arrives from a deserializer, before any check. The field names and
/// order match `LinearModel`'s, so the encoded form is the same.
///
/// Public only so that it can be `LinearModel`'s `StoredModel::Unchecked`; its module is
/// private, so no one outside this crate can name or build it.
#[derive(Deserialize)]
pub struct RawLinearModel {
    weights: Vec<f64>,
    metadata: RawModelMetadata,
}

impl TryFrom<RawModelMetadata> for ModelMetadata {
    type Error = ErmError;

    fn try_from(raw: RawModelMetadata) -> Result<Self, ErmError> {
        let metadata = ModelMetadata {
            mechanism: raw.mechanism,
            loss: raw.loss,
            regularization: raw.regularization,
            features: raw.features,
            noise_groups: raw.noise_groups,
            feature_map: raw.feature_map,
            crate_version: raw.crate_version,
        };
        check_metadata(&metadata)?;
        Ok(metadata)
    }
}

impl TryFrom<RawLinearModel> for LinearModel {
    type Error = ErmError;

    fn try_from(raw: RawLinearModel) -> Result<Self, ErmError> {
        let metadata = ModelMetadata::try_from(raw.metadata)?;
        check_weights(&raw.weights, &metadata)?;
        if metadata.loss.is_regression() {
            return Err(invalid(format!(
                "a classifier's file holds the regression loss {}: load it as a regressor",
                metadata.loss.name()
            )));
        }
        Ok(LinearModel::new(raw.weights, metadata))
    }
}

/// Everything a loaded model must satisfy: the two checks the raw conversions above run,
/// applied to a built model (for tests that check what the loaders let through).
#[cfg(test)]
pub(super) fn check_model(model: &LinearModel) -> Result<(), ErmError> {
    check_metadata(&model.metadata)?;
    check_weights(&model.weights, &model.metadata)
}

pub(super) fn check_weights(weights: &[f64], metadata: &ModelMetadata) -> Result<(), ErmError> {
    if weights.len() != metadata.features {
        return Err(invalid(format!(
            "{} weights for features = {}",
            weights.len(),
            metadata.features
        )));
    }
    if let Some(i) = weights.iter().position(|w| !w.is_finite()) {
        return Err(invalid(format!(
            "weights[{i}] = {:?} is not finite",
            weights[i]
        )));
    }
    Ok(())
}

fn check_metadata(metadata: &ModelMetadata) -> Result<(), ErmError> {
    match metadata.features {
        0 => {
            return Err(out_of_range(
                "features = 0: a model needs at least one feature".into(),
            ));
        }
        d if d > MAX_MODEL_FEATURES => {
            return Err(out_of_range(format!(
                "features = {d} exceeds the limit of {MAX_MODEL_FEATURES}"
            )));
        }
        _ => {}
    }
    // The crate's own parameter checks, so a file can hold only what `fit` would accept.
    if let Some(epsilon) = metadata.mechanism.epsilon() {
        check_epsilon(epsilon).map_err(parameter_out_of_range)?;
    }
    crate::gaussian::check_mechanism_delta(&metadata.mechanism).map_err(parameter_out_of_range)?;
    if metadata.mechanism.sgd_record().is_some() {
        check_dpsgd(metadata)?;
    } else {
        check_regularization(metadata.regularization).map_err(parameter_out_of_range)?;
    }
    check_noise_groups(metadata)?;
    if matches!(metadata.mechanism, Mechanism::AdaSsp { .. }) && !metadata.loss.is_regression() {
        return Err(invalid(format!(
            "AdaSSP trains regressors only, yet the file holds the classification loss {}",
            metadata.loss.name()
        )));
    }
    metadata.loss.check().map_err(parameter_out_of_range)?;
    check_text("crate_version", &metadata.crate_version)?;
    if let Some(feature_map) = &metadata.feature_map {
        check_text("feature_map", feature_map)?;
    }
    Ok(())
}

/// DP-SGD's record (either relation): what `DpSgd::new` would accept (δ in (0, 1), σ, C
/// and an add/remove expected batch finite and > 0, q in (0, 1], 1 ≤ T ≤ `MAX_SGD_STEPS`)
/// and its Λ ≥ 0 (its regularizer may be absent).
fn check_dpsgd(metadata: &ModelMetadata) -> Result<(), ErmError> {
    let positive = |what: &str, value: f64| {
        if value.is_finite() && value > 0.0 {
            Ok(())
        } else {
            Err(out_of_range(format!(
                "{what} = {value} is not finite and > 0"
            )))
        }
    };
    let Some(SgdRecord {
        noise_multiplier,
        sampling_rate,
        steps,
        clip_norm,
        expected_batch,
        ..
    }) = metadata.mechanism.sgd_record()
    else {
        return Ok(());
    };
    if let Some(batch) = expected_batch {
        positive("expected_batch", batch)?;
    }
    let delta = metadata.mechanism.delta();
    crate::gaussian::check_delta(delta).map_err(parameter_out_of_range)?;
    positive("noise_multiplier", noise_multiplier)?;
    positive("clip_norm", clip_norm)?;
    positive("sampling_rate", sampling_rate)?;
    if sampling_rate > 1.0 {
        return Err(out_of_range(format!(
            "sampling_rate = {sampling_rate:?} is above 1"
        )));
    }
    if !(1..=crate::MAX_SGD_STEPS).contains(&steps) {
        return Err(out_of_range(format!(
            "steps = {steps} is not between 1 and {}",
            crate::MAX_SGD_STEPS
        )));
    }
    let lambda = metadata.regularization;
    if !(lambda.is_finite() && (0.0..=crate::MAX_REGULARIZATION).contains(&lambda)) {
        return Err(out_of_range(format!(
            "regularization = {lambda} is not between 0 and {}",
            crate::MAX_REGULARIZATION
        )));
    }
    Ok(())
}

/// Group-shaped noise exists only for objective perturbation, with 1 to d groups.
fn check_noise_groups(metadata: &ModelMetadata) -> Result<(), ErmError> {
    let Some(groups) = metadata.noise_groups else {
        return Ok(());
    };
    if !matches!(metadata.mechanism, Mechanism::ObjectivePerturbation { .. }) {
        return Err(out_of_range(format!(
            "noise_groups = {groups} for {:?}: only objective perturbation shapes its noise \
             to feature groups",
            metadata.mechanism
        )));
    }
    if !(1..=metadata.features).contains(&groups) {
        return Err(out_of_range(format!(
            "noise_groups = {groups}: {} features hold between 1 and {} groups",
            metadata.features, metadata.features
        )));
    }
    Ok(())
}

/// Non-empty, at most `MAX_MODEL_TEXT_BYTES`, no control characters (these strings end up
/// in reports and terminals).
pub(crate) fn check_text(field: &str, text: &str) -> Result<(), ErmError> {
    match text_problem(field, text) {
        Some(why) => Err(out_of_range(why)),
        None => Ok(()),
    }
}

/// What is wrong with `text` as the value of `field` under [`check_text`]'s rule, if
/// anything.
pub(super) fn text_problem(field: &str, text: &str) -> Option<String> {
    if text.is_empty() {
        return Some(format!("{field} is empty"));
    }
    if text.len() > MAX_MODEL_TEXT_BYTES {
        // The length, not the text: it may be megabytes.
        return Some(format!(
            "{field} is {} bytes long, above the limit of {MAX_MODEL_TEXT_BYTES}",
            text.len()
        ));
    }
    text.char_indices()
        .find(|&(_, c)| is_hidden(c))
        .map(|(at, c)| format!("{field} holds the invisible character {c:?} at byte {at}"))
}

/// Characters that change how a text displays without being seen: control characters and
/// Unicode's invisible format characters (zero-width marks, bidirectional overrides and
/// isolates, the byte-order mark), which could make a report show another text.
fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

fn invalid(why: String) -> ErmError {
    ErmError::InvalidModelFile(why)
}

fn out_of_range(why: String) -> ErmError {
    invalid(format!("metadata out of range: {why}"))
}

/// A parameter error, as a file error: the file holds what `fit` would refuse.
fn parameter_out_of_range(error: ErmError) -> ErmError {
    out_of_range(error.to_string())
}
