//! The candidate list, checked once and then frozen: selection methods hold it before they
//! are given any data and expose no way to change it.

use dp_erm::{Classifier, ErmError, Examples, Trainer};
use dp_noise::parallel_composition;

use crate::TuneError;

/// The largest ε and the largest δ any candidate spends, after checking every candidate
/// reports an ε that is finite, > 0 and at most [`dp_erm::MAX_EPSILON`] (the workspace's
/// cap: a larger ε guarantees nothing) and a δ in [0, 1). Runs before any data is touched.
/// For selections whose proof covers (ε, δ) candidates (split-and-select: each candidate
/// trains on its own rows).
pub(crate) fn training_guarantee<T: Trainer>(candidates: &[T]) -> Result<(f64, f64), TuneError> {
    guarantee_of(candidates.iter().map(|t| (t.epsilon(), t.delta())))
}

/// [`training_guarantee`] of candidates given as their `(ε, δ)` claims (any trainer kind:
/// classifiers' and regressors' alike).
pub(crate) fn guarantee_of(
    claims: impl ExactSizeIterator<Item = (Option<f64>, f64)>,
) -> Result<(f64, f64), TuneError> {
    if claims.len() == 0 {
        return Err(TuneError::NoCandidates);
    }
    let mut epsilons = Vec::with_capacity(claims.len());
    let mut largest_delta = 0.0_f64;
    for (candidate, (epsilon, delta)) in claims.enumerate() {
        if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
            return Err(TuneError::InvalidCandidateDelta { candidate, delta });
        }
        largest_delta = largest_delta.max(delta);
        match epsilon {
            None => return Err(TuneError::CandidateNotPrivate { candidate }),
            Some(value) if !(value.is_finite() && value > 0.0 && value <= dp_erm::MAX_EPSILON) => {
                return Err(TuneError::InvalidCandidateEpsilon { candidate, value });
            }
            Some(value) => epsilons.push(value),
        }
    }
    // Every candidate runs on its own rows (split-and-select) or one at a time on the same
    // rows inside a base step whose output is one candidate's (random stopping): either way
    // the training cost is the largest candidate ε (and, for split-and-select, δ).
    Ok((parallel_composition(&epsilons)?, largest_delta))
}

/// The largest ε any candidate spends, refusing (ε, δ) candidates: for selections whose
/// proof covers pure-ε candidates only (random stopping). Otherwise as
/// [`training_guarantee`].
pub(crate) fn training_epsilon<T: Trainer>(candidates: &[T]) -> Result<f64, TuneError> {
    pure_epsilon_of(candidates.iter().map(|t| (t.epsilon(), t.delta())))
}

/// [`training_epsilon`] of candidates given as their `(ε, δ)` claims (any trainer kind).
pub(crate) fn pure_epsilon_of(
    claims: impl ExactSizeIterator<Item = (Option<f64>, f64)> + Clone,
) -> Result<f64, TuneError> {
    // A δ would go uncharged: random stopping's proof (Liu–Talwar) is for ε-DP candidates.
    if let Some((candidate, (_, delta))) = claims.clone().enumerate().find(|(_, c)| c.1 != 0.0) {
        return Err(TuneError::CandidateNotPureEpsilon { candidate, delta });
    }
    Ok(guarantee_of(claims)?.0)
}

/// Every refusal a candidate would make before training (`Trainer::check_shape` for the
/// rows it will train on, `rows_of(candidate)`, and `Trainer::check_inputs` on all of
/// `data`), as [`TuneError::CandidateRefuses`]: made before any budget is charged, any
/// randomness drawn or any model trained, so that a selection cannot stop half-way for a
/// reason it could have found first.
pub(crate) fn check_candidates<T: Trainer>(
    candidates: &[T],
    data: &Examples,
    rows_of: impl Fn(usize) -> usize,
) -> Result<(), TuneError> {
    for (candidate, trainer) in candidates.iter().enumerate() {
        trainer
            .check_shape(rows_of(candidate), data.features())
            .and_then(|()| trainer.check_inputs(data))
            .map_err(|e| TuneError::CandidateRefuses {
                candidate,
                source: Box::new(e),
            })?;
    }
    Ok(())
}

/// How many held-out examples `model` labels wrongly, a row whose score overflows counting
/// as a mistake. Which rows overflow depends on the model, that is on the training rows:
/// failing there would be an outcome outside the ε the selection pays for, while a fixed
/// outcome keeps the count's sensitivity to one held-out row at 1.
pub(crate) fn held_out_mistakes<M: Classifier>(
    model: &M,
    held_out: &Examples,
) -> Result<usize, ErmError> {
    match model.mistakes(held_out) {
        Err(ErmError::DecisionOverflow { .. }) => {}
        counted => return counted,
    }
    let mut row = vec![0.0; held_out.features()];
    let mut mistakes = 0;
    for (i, &label) in held_out.labels().iter().enumerate() {
        held_out.inputs().row(i).write_dense(&mut row);
        mistakes += usize::from(match model.predict(&row) {
            Ok(predicted) => predicted != label,
            Err(ErmError::DecisionOverflow { .. }) => true,
            Err(e) => return Err(e),
        });
    }
    Ok(mistakes)
}
