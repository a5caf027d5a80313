//! The candidate list, checked once and then frozen: selection methods hold it before they
//! are given any data and expose no way to change it.

use dp_erm::Trainer;
use dp_noise::parallel_composition;

use crate::TuneError;

/// The largest ε any candidate spends, after checking every candidate reports one that is
/// finite and > 0. Runs before any data is touched.
pub(crate) fn training_epsilon<T: Trainer>(candidates: &[T]) -> Result<f64, TuneError> {
    if candidates.is_empty() {
        return Err(TuneError::NoCandidates);
    }
    let mut epsilons = Vec::with_capacity(candidates.len());
    for (candidate, trainer) in candidates.iter().enumerate() {
        match trainer.epsilon() {
            None => return Err(TuneError::CandidateNotPrivate { candidate }),
            Some(value) if !(value.is_finite() && value > 0.0) => {
                return Err(TuneError::InvalidCandidateEpsilon { candidate, value });
            }
            Some(value) => epsilons.push(value),
        }
    }
    // Every candidate runs on its own rows (split-and-select) or one at a time on the same
    // rows inside a base step whose output is one candidate's (random stopping): either way
    // the training cost is the largest candidate ε.
    Ok(parallel_composition(&epsilons)?)
}
