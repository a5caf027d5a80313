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
/// [`ModelPurpose::require_private`] adds a loader-side demand: the model must be ε-DP for
/// replace-one neighbours with ε at most a bound ([`ModelPurpose::require_private_at`]:
/// (ε, δ)-DP with both at most bounds). It is checked on saving (a model the purpose would
/// refuse is not written) and on loading (from the authenticated metadata, after the tag
/// verifies), so a caller that must serve only private models says so once, where it names the
/// purpose:
///
/// ```
/// # use dp_erm::ModelPurpose;
/// let purpose = ModelPurpose::new("income-scoring")?.require_private(1.0)?;
/// // LinearModel::load_authenticated(path, &key, &purpose) refuses a non-private model,
/// // an (ε, δ) one, or one trained with ε > 1, even if a holder of the key signed it.
/// let gaussian = ModelPurpose::new("income-scoring")?.require_private_at(1.0, 1e-6)?;
/// // Accepts (ε, δ) models with ε ≤ 1 and δ ≤ 10⁻⁶, all for replace-one neighbours.
/// # Ok::<(), dp_erm::ErmError>(())
/// ```
///
/// It says nothing beyond the metadata: a key holder can still write any model under any
/// purpose (see `LinearModel`'s "Files").
#[derive(Debug, Clone, PartialEq)]
pub struct ModelPurpose {
    name: String,
    max_epsilon: Option<f64>,
    /// Read only with `max_epsilon` set.
    max_delta: f64,
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
            max_delta: 0.0,
        })
    }

    /// The same purpose, accepting only models that are ε-DP for *replace one record* with
    /// ε ≤ `max_epsilon` (finite, > 0, at most 1000) and δ = 0: a non-private model, an
    /// (ε, δ) one (Gaussian, DP-SGD) or one with a larger ε is refused on saving and on
    /// loading. "ε-DP" without a δ is what a reader of the bound assumes; to accept (ε, δ)
    /// models, say which δ with [`Self::require_private_at`].
    pub fn require_private(self, max_epsilon: f64) -> Result<Self, ErmError> {
        self.require_private_at(max_epsilon, 0.0)
    }

    /// The same purpose, accepting only models that are (ε, δ)-DP for *replace one
    /// record* (the workspace's relation) with ε ≤ `max_epsilon` (finite, > 0, at most
    /// 1000) and δ ≤ `max_delta` (0 for pure ε only, at most
    /// [`MAX_DELTA`](crate::MAX_DELTA)). A DP-SGD model trained for add/remove neighbours
    /// is held to its replace-one ε (about twice its add/remove ε; see
    /// [`crate::Mechanism::replace_one_guarantee`]).
    pub fn require_private_at(
        mut self,
        max_epsilon: f64,
        max_delta: f64,
    ) -> Result<Self, ErmError> {
        if !(max_epsilon.is_finite() && max_epsilon > 0.0 && max_epsilon <= MAX_EPSILON) {
            return Err(ErmError::InvalidParameter {
                what: "max_epsilon",
                value: max_epsilon,
                requirement: "finite, > 0 and at most 1000",
            });
        }
        if !(max_delta.is_finite() && (0.0..=crate::MAX_DELTA).contains(&max_delta)) {
            return Err(ErmError::InvalidParameter {
                what: "max_delta",
                value: max_delta,
                requirement: "finite, >= 0 (0: pure epsilon only) and at most MAX_DELTA = 0.1",
            });
        }
        self.max_epsilon = Some(max_epsilon);
        // −0 recorded as 0.
        self.max_delta = max_delta + 0.0;
        Ok(self)
    }

    /// The name bound into the file.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The largest replace-one ε accepted, if the purpose requires a private model.
    pub fn max_epsilon(&self) -> Option<f64> {
        self.max_epsilon
    }

    /// The largest δ accepted with it (0: pure ε only), if the purpose requires a private
    /// model.
    pub fn max_delta(&self) -> Option<f64> {
        self.max_epsilon.map(|_| self.max_delta)
    }

    /// Why a model whose replace-one guarantee is `guarantee` (None: non-private) falls
    /// short of the purpose's demand, if it does.
    pub(super) fn shortfall(&self, guarantee: Option<(f64, f64)>) -> Option<String> {
        let bound = self.max_epsilon?;
        let max_delta = self.max_delta;
        let why = match guarantee {
            Some((e, d)) if e <= bound && d <= max_delta => return None,
            Some((e, 0.0)) => {
                format!("the model is ε-DP for replace-one neighbours with ε = {e:?}")
            }
            Some((e, d)) => format!(
                "the model is (ε, δ)-DP for replace-one neighbours with ε = {e:?} and δ = {d:?}"
            ),
            None => "the model is not private".to_owned(),
        };
        let demand = if max_delta == 0.0 {
            format!("ε ≤ {bound:?} and δ = 0 (pure ε; require_private_at accepts a δ)")
        } else {
            format!("ε ≤ {bound:?} and δ ≤ {max_delta:?}")
        };
        Some(format!(
            "{why}, and the purpose {:?} requires a private model, for replace-one \
             neighbours, with {demand}",
            self.name
        ))
    }
}
