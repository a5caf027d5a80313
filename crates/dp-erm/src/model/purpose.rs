//! What an authenticated model file is for: a name bound into its tag, and what a loader
//! requires of the model it holds.

use crate::ErmError;
use crate::error::MAX_EPSILON;

use super::validate::text_problem;

/// The use an authenticated model file is written for and read for (`"income-scoring"`,
/// `"fraud-v2/production"`), and optionally a demand that the model be private.
///
/// # Privacy
///
/// The name is written into an authenticated file and covered by its HMAC-SHA256 tag
/// (length-prefixed, with the rest of the payload), so a loader given another name refuses
/// the file: a key holder's model saved for one use cannot be substituted for another's
/// — a non-private model saved for a test included — even when both are signed with the
/// same key. The name is caller-chosen and public, not data: the error of a refused file
/// gives the name the loader asked for and says the file's differs, without quoting the
/// file's.
///
/// [`ModelPurpose::require_private`] adds a loader-side demand: the model must be trained
/// with ε at most a bound. It is checked on saving (a model the purpose would refuse is
/// not written) and on loading (from the authenticated metadata, after the tag verifies),
/// so a caller that must serve only private models says so once, where it names the
/// purpose:
///
/// ```
/// # use dp_erm::ModelPurpose;
/// let purpose = ModelPurpose::new("income-scoring")?.require_private(1.0)?;
/// // LinearModel::load_authenticated(path, &key, &purpose) refuses a non-private model,
/// // or one trained with ε > 1, even if a holder of the key signed it.
/// # Ok::<(), dp_erm::ErmError>(())
/// ```
///
/// It says nothing beyond the metadata: a key holder can still write any model under any
/// purpose (see `LinearModel`'s "Files").
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPurpose {
    name: String,
    max_epsilon: Option<f64>,
}

impl ModelPurpose {
    /// A purpose named `name`: non-empty, at most
    /// [`MAX_MODEL_TEXT_BYTES`](crate::MAX_MODEL_TEXT_BYTES) (256) bytes, without control or
    /// invisible characters. Any model type and privacy is accepted under it.
    pub fn new(name: &str) -> Result<Self, ErmError> {
        if let Some(why) = text_problem("the purpose", name) {
            return Err(ErmError::InvalidPurpose(why));
        }
        Ok(Self {
            name: name.to_owned(),
            max_epsilon: None,
        })
    }

    /// The same purpose, accepting only models trained with a privacy mechanism at
    /// ε ≤ `max_epsilon` (finite, > 0, at most 1000): a non-private model, or one with a
    /// larger ε, is refused on saving and on loading.
    pub fn require_private(mut self, max_epsilon: f64) -> Result<Self, ErmError> {
        if !(max_epsilon.is_finite() && max_epsilon > 0.0 && max_epsilon <= MAX_EPSILON) {
            return Err(ErmError::InvalidParameter {
                what: "max_epsilon",
                value: max_epsilon,
                requirement: "finite, > 0 and at most 1000",
            });
        }
        self.max_epsilon = Some(max_epsilon);
        Ok(self)
    }

    /// The name bound into the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The largest ε accepted, if the purpose requires a private model.
    pub fn max_epsilon(&self) -> Option<f64> {
        self.max_epsilon
    }

    /// Why a model trained with `epsilon` (None: non-private) falls short of the purpose's
    /// demand, if it does.
    pub(super) fn shortfall(&self, epsilon: Option<f64>) -> Option<String> {
        let bound = self.max_epsilon?;
        let why = match epsilon {
            Some(e) if e <= bound => return None,
            Some(e) => format!("the model was trained with ε = {e}"),
            None => "the model is not private".to_owned(),
        };
        Some(format!(
            "{why}, and the purpose {:?} requires a private model with ε ≤ {bound}",
            self.name
        ))
    }
}
