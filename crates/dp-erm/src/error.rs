//! The one error type of this crate.

use std::fmt;

use dp_noise::NoiseError;
use dp_optim::OptimError;

/// Everything that can go wrong in `dp-erm`, with the offending values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErmError {
    /// The training set has no rows.
    EmptyData,
    /// A row has the wrong number of features.
    RowLength {
        /// The row.
        row: usize,
        /// Features expected.
        expected: usize,
        /// Features found.
        found: usize,
    },
    /// A feature value is NaN or infinite.
    NonFiniteFeature {
        /// The row.
        row: usize,
        /// The feature.
        col: usize,
        /// The value.
        value: f64,
    },
    /// A row's L2 norm exceeds 1: every guarantee assumes `‖x_i‖ ≤ 1`. Decided in the safe
    /// direction, on an error-bounded sum of squares: a row is accepted only if its exact
    /// norm is at most 1.
    RowNormAboveOne {
        /// The first offending row.
        row: usize,
        /// Its norm, computed rounded to nearest (it may show as 1 for a row just outside).
        norm: f64,
    },
    /// With group-shaped noise ([`crate::ErmParams::group_noise`]), a row's group norm
    /// `(Σ_g ‖x_g‖₁²)^{1/2}` exceeds 1 (a group holds more than one non-zero).
    RowGroupNormAboveOne {
        /// The first offending row.
        row: usize,
        /// Its group norm.
        norm: f64,
    },
    /// A label is not −1 or +1.
    InvalidLabel {
        /// The row.
        row: usize,
        /// The label.
        label: f64,
    },
    /// A regression target is not a number or lies outside the public target bounds (and
    /// clipping was not asked for).
    TargetOutsideBounds {
        /// The row.
        row: usize,
        /// The public lower bound.
        lower: f64,
        /// The public upper bound.
        upper: f64,
    },
    /// A value lies outside the public bound declared for its column.
    OutsidePublicBound {
        /// The row.
        row: usize,
        /// The feature.
        col: usize,
        /// The value.
        value: f64,
        /// The declared bound on |value|.
        bound: f64,
    },
    /// The number of labels, bounds or weights does not match.
    DimensionMismatch {
        /// Which input.
        what: &'static str,
        /// Length expected.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// A parameter is invalid (ε ≤ 0, Λ ≤ 0, Huber width ≤ 0, …).
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f64,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// A count or size (features, classes, rows, bytes) outside its accepted range; shown as
    /// the integer it is.
    InvalidCount {
        /// Which count.
        what: &'static str,
        /// Its value.
        value: usize,
        /// What it must satisfy.
        requirement: &'static str,
    },
    /// An index (of a row, a position) at or past the end of what it indexes.
    IndexOutOfRange {
        /// Which index.
        what: &'static str,
        /// The index given.
        index: usize,
        /// The length indexed: valid indices are `0..len`.
        len: usize,
    },
    /// Memory for a buffer of the accepted size could not be had (the process's memory
    /// limit): refused with this error rather than aborting.
    AllocationFailed {
        /// What was to be allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: usize,
    },
    /// The solver did not certify its tolerance, so no model is released. It carries no
    /// numbers: how close the solver got depends on the data and is not private. Accepted
    /// parameters make this practically impossible ([`crate::calibration::tolerance_floor`]).
    NotConverged,
    /// The caller asked the fit to stop (its `interrupted` hook answered true between two
    /// steps, e.g. on Ctrl-C): no model is released. Noise may have been drawn, so a budget
    /// charged for the fit keeps the spend.
    Interrupted,
    /// An option was set for a mechanism it does not apply to.
    MisplacedOption {
        /// The option.
        option: &'static str,
        /// The mechanism it applies to.
        applies_to: &'static str,
    },
    /// A sparse entry names a feature outside `0..features`.
    FeatureIndexOutOfRange {
        /// The row.
        row: usize,
        /// The feature index given.
        col: usize,
        /// The number of features declared.
        features: usize,
    },
    /// A sparse row gives the same feature twice.
    RepeatedFeature {
        /// The row.
        row: usize,
        /// The feature given twice.
        col: usize,
    },
    /// A class index is not below the class count (one-vs-rest).
    InvalidClass {
        /// The row.
        row: usize,
        /// The class given.
        class: usize,
        /// The number of classes declared.
        class_count: usize,
    },
    /// A requested solver tolerance is below the rounding error of the gradient for this
    /// size and noise: the solver could not certify it on every input.
    ToleranceBelowRounding {
        /// The tolerance requested.
        tolerance: f64,
        /// The smallest tolerance accepted for this n, d and noise.
        floor: f64,
    },
    /// ε is so small (for this n, d and Λ) that the noise would be beyond what double
    /// precision can train with or represent.
    NoiseBeyondPrecision {
        /// The ε requested.
        epsilon: f64,
        /// A bound on the noise norm that holds except with probability e^{−40}.
        noise_norm: f64,
    },
    /// As [`ErmError::NoiseBeyondPrecision`] for an (ε, δ) mechanism: its message names δ,
    /// which a tiny value makes the cause as often as ε.
    GaussianNoiseBeyondPrecision {
        /// The ε requested.
        epsilon: f64,
        /// The δ requested.
        delta: f64,
        /// A bound on the noise norm that holds except with probability e^{−40}.
        noise_norm: f64,
    },
    /// DP-SGD's expected batch is outside `1..=n`, n the number of rows.
    BatchSizeOutOfRange {
        /// The expected batch size asked for.
        batch_size: usize,
        /// The number of rows n.
        rows: usize,
    },
    /// A refusal of one of the K fits of a one-vs-rest classifier, each at its share ε/K
    /// (and δ/K) of the budget: names K, which a share too small to train with comes from.
    PerClass {
        /// The number of classes K.
        classes: usize,
        /// What the fit at the share refused.
        error: Box<ErmError>,
    },
    /// The objective is so ill-conditioned (tiny total regularization, large curvature
    /// bound) that rounding alone could keep the gradient above any accepted tolerance.
    IllConditioned {
        /// The total regularization (Λ, or Λ + Δ).
        regularization: f64,
        /// The rounding floor of the gradient at that regularization.
        floor: f64,
    },
    /// A decision value `fᵀx` overflowed: the input is too large for the model's weights.
    DecisionOverflow {
        /// The row.
        row: usize,
    },
    /// Class probabilities were asked of a model whose loss gives its scores no
    /// probabilistic reading (only the logistic loss does).
    NoProbabilities {
        /// The model's loss, by name.
        loss: String,
    },
    /// A model file's contents were refused (corrupt, forged, of another type or version).
    InvalidModelFile(String),
    /// A model file could not be opened, read or written (the operating system's error, or
    /// a path that is not a regular file); its contents were not judged.
    ModelFileAccess(String),
    /// A model key that cannot be secret: its bytes take fewer than
    /// [`ModelKey::MIN_DISTINCT_BYTES`](crate::ModelKey::MIN_DISTINCT_BYTES) distinct values
    /// (all zero, one repeated byte, a short pattern). The key's bytes are never shown.
    WeakModelKey {
        /// How many distinct byte values the key holds.
        distinct: usize,
    },
    /// A model purpose given by the caller is unusable (empty, too long, or holding an
    /// invisible character); see [`ModelPurpose`](crate::ModelPurpose).
    InvalidPurpose(String),
    /// A row cache file ([`crate::RowCache`]) was refused: not a cache, truncated,
    /// corrupted, or changed since it was opened (its blocks are checksummed, its size and
    /// modification time re-checked on every read). Says what, never a row's values.
    InvalidRowCache(String),
    /// A row cache file could not be created, read or written (the operating system's
    /// error).
    RowCacheAccess(String),
    /// A pass over rows held elsewhere ([`crate::ErmParams::fit_sums`]'s oracle: executors
    /// of a distributed engine) failed or was refused: which pass and why, never a row's
    /// values.
    RowSource(String),
    /// A row of a block handed to [`crate::ErmParams::fit_blocks`] breaks the data contract;
    /// `error` names the row counted from the block's first.
    InBlock {
        /// The block.
        block: usize,
        /// What is wrong with which of its rows.
        error: Box<ErmError>,
    },
    /// From the noise samplers.
    Noise(NoiseError),
    /// From the solvers.
    Optim(OptimError),
}

impl fmt::Display for ErmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::EmptyData => write!(f, "the training set has no rows"),
            Self::RowLength {
                row,
                expected,
                found,
            } => {
                write!(f, "row {row} has {found} features, expected {expected}")
            }
            Self::NonFiniteFeature { row, col, value } => {
                write!(f, "feature {col} of row {row} is not finite: {value:?}")
            }
            Self::RowNormAboveOne { row, norm } => {
                // The contract is decided on an error-bounded sum of squares: a row just
                // outside can round to a norm of 1 or less.
                let relation = if *norm > 1.0 {
                    "> 1"
                } else {
                    "as rounded, but its exact norm is above 1"
                };
                // The norm itself is the data's: not in the message.
                write!(
                    f,
                    "row {row} has a norm {relation}; the privacy guarantees need every \
                     row in the unit ball (scale by public bounds, or clip rows explicitly: \
                     TrainingSetBuilder::clip_rows_to_unit_ball)"
                )?;
                if *norm <= 1.0 + ROUNDING_EXCESS {
                    write!(
                        f,
                        "; it is above 1 by rounding only, as rows divided by their computed \
                         norm often are: clipping fixes that, or divide by slightly more than \
                         the norm"
                    )?;
                }
                Ok(())
            }
            Self::RowGroupNormAboveOne { row, .. } => write!(
                f,
                "row {row} has a group norm > 1; group-shaped noise needs every row's \
                 group norm at most 1 (one-hot groups with one non-zero each, rows in the unit \
                 ball)"
            ),
            Self::InvalidLabel { row, label } => {
                write!(
                    f,
                    "label of row {row} is {label:?}; labels must be -1 or +1"
                )
            }
            // The value itself is the data's: not in the message.
            Self::TargetOutsideBounds { row, lower, upper } => write!(
                f,
                "the target of row {row} is not a number in the public target bounds \
                 [{lower:?}, {upper:?}]; widen the bounds (they must not come from the data) \
                 or ask for targets to be clipped to them"
            ),
            Self::OutsidePublicBound {
                row, col, bound, ..
            } => write!(
                f,
                "feature {col} of row {row} is outside the declared public bound {bound:?}"
            ),
            Self::DimensionMismatch {
                what,
                expected,
                found,
            } => {
                write!(f, "{what} has length {found}, expected {expected}")
            }
            Self::InvalidParameter {
                what,
                value,
                requirement,
            } => {
                write!(f, "{what} = {value:?} is invalid: it must be {requirement}")
            }
            Self::InvalidCount {
                what,
                value,
                requirement,
            } => write!(f, "{what} = {value} is invalid: it must be {requirement}"),
            Self::IndexOutOfRange { what, index, len } => write!(
                f,
                "{what} {index} is out of range: there are {len} (indices 0..{len})"
            ),
            Self::AllocationFailed { what, bytes } => write!(
                f,
                "could not allocate {bytes} bytes for {what}: not enough memory (use fewer \
                 rows or features, or raise the memory limit)"
            ),
            Self::NoProbabilities { loss } => write!(
                f,
                "a model trained with the {loss} loss has no class probabilities (only logistic \
                 regression's scores are log-odds); use its decision values or labels"
            ),
            Self::NotConverged => write!(
                f,
                "no model released: the solver could not certify the gradient tolerance"
            ),
            Self::Interrupted => write!(
                f,
                "no model released: the fit was interrupted at the caller's request"
            ),
            Self::MisplacedOption { option, applies_to } => {
                write!(f, "{option} applies only to {applies_to}")
            }
            Self::FeatureIndexOutOfRange { row, col, features } => write!(
                f,
                "row {row} has an entry for feature {col}, but there are {features} features \
                 (indices 0..{features})"
            ),
            Self::RepeatedFeature { row, col } => {
                write!(f, "row {row} gives feature {col} more than once")
            }
            Self::InvalidClass {
                row,
                class,
                class_count,
            } => write!(
                f,
                "class of row {row} is {class}; classes must be below the class count {class_count}"
            ),
            Self::ToleranceBelowRounding { tolerance, floor } => write!(
                f,
                "tolerance {tolerance:?} is below {floor:?}, the rounding error of the gradient \
                 for this size and noise; ask for at least {floor:?} (or leave the default)"
            ),
            Self::NoiseBeyondPrecision {
                epsilon,
                noise_norm,
            } => write!(
                f,
                "epsilon = {epsilon:?} is too small for this number of rows, features and \
                 regularization: the noise norm could reach {noise_norm:?}, beyond what double \
                 precision can train with; use a larger epsilon, more rows or a larger \
                 regularization"
            ),
            Self::GaussianNoiseBeyondPrecision {
                epsilon,
                delta,
                noise_norm,
            } => write!(
                f,
                "(epsilon, delta) = ({epsilon:?}, {delta:?}) is too small for this number of \
                 rows, features and regularization: the noise norm could reach \
                 {noise_norm:?}, beyond what double precision can train with; use a larger \
                 delta (a tiny delta needs as much noise as a tiny epsilon) or epsilon, more \
                 rows or a larger regularization"
            ),
            Self::BatchSizeOutOfRange { batch_size, rows } => write!(
                f,
                "batch_size = {batch_size} is invalid: it must be between 1 and the number of \
                 rows n = {rows} (the expected batch qn); use a batch_size of at most {rows}"
            ),
            Self::PerClass { classes, error } => write!(
                f,
                "one-vs-rest with {classes} classes trains {classes} models, each at \
                 epsilon/{classes} and delta/{classes} of the budget; at that share: {error} \
                 (fewer classes or a larger budget)"
            ),
            Self::IllConditioned {
                regularization,
                floor,
            } => write!(
                f,
                "regularization {regularization:?} is too small for this loss and noise: \
                 rounding alone could keep the gradient norm above {floor:?}, more than the \
                 largest accepted tolerance 1e-6; use a larger regularization (or a wider \
                 Huber width)"
            ),
            Self::DecisionOverflow { row } => write!(
                f,
                "the decision value of row {row} overflows: its entries are too large for the \
                 model's weights"
            ),
            Self::InvalidRowCache(why) => write!(f, "row cache refused: {why}"),
            Self::RowCacheAccess(why) => write!(f, "row cache not accessible: {why}"),
            Self::RowSource(why) => write!(f, "a pass over the rows failed: {why}"),
            Self::InBlock { block, error } => {
                write!(
                    f,
                    "in block {block} (rows counted within the block): {error}"
                )
            }
            Self::InvalidModelFile(why) => write!(f, "invalid model file: {why}"),
            Self::ModelFileAccess(why) => write!(f, "{why}"),
            Self::WeakModelKey { distinct } => write!(
                f,
                "model key refused: its bytes take only {distinct} distinct values (an \
                 all-zero, repeated or patterned key is no secret); use \
                 ModelKey::from_os_entropy or at least 32 uniformly random bytes"
            ),
            Self::InvalidPurpose(why) => write!(f, "invalid model purpose: {why}"),
            Self::Noise(e) => write!(f, "{e}"),
            Self::Optim(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ErmError {}

impl From<NoiseError> for ErmError {
    fn from(e: NoiseError) -> Self {
        Self::Noise(e)
    }
}

impl From<OptimError> for ErmError {
    fn from(e: OptimError) -> Self {
        match e {
            // Only the fact of the refusal leaves: the solver's numbers depend on the data.
            OptimError::NotConverged { .. } => Self::NotConverged,
            OptimError::Interrupted => Self::Interrupted,
            OptimError::AllocationFailed { what, bytes } => Self::AllocationFailed { what, bytes },
            other => Self::Optim(other),
        }
    }
}

/// A row norm this close above 1 is taken for rounding in [`ErmError::RowNormAboveOne`]'s
/// message (dividing a row by its computed norm errs by a few ulps).
pub(crate) const ROUNDING_EXCESS: f64 = 1e-12;

/// Largest ε accepted: beyond it a guarantee says nothing (e^1000); train non-privately.
pub const MAX_EPSILON: f64 = 1e3;
/// Smallest regularization Λ accepted: below it the objective's condition number
/// (`c/Λ`) approaches the inverse of double precision and solves stop being reliable.
pub const MIN_REGULARIZATION: f64 = 1e-12;
/// Largest regularization Λ accepted.
pub const MAX_REGULARIZATION: f64 = 1e6;

/// Checks ε is finite and in `(0, MAX_EPSILON]`.
pub(crate) fn check_epsilon(epsilon: f64) -> Result<f64, ErmError> {
    check_positive("epsilon", epsilon)?;
    if epsilon <= MAX_EPSILON {
        Ok(epsilon)
    } else {
        Err(ErmError::InvalidParameter {
            what: "epsilon",
            value: epsilon,
            requirement: "at most 1000 (a larger epsilon guarantees nothing; train non-privately)",
        })
    }
}

/// Checks Λ is finite and in `[MIN_REGULARIZATION, MAX_REGULARIZATION]`.
pub(crate) fn check_regularization(regularization: f64) -> Result<f64, ErmError> {
    check_positive("regularization", regularization)?;
    if (MIN_REGULARIZATION..=MAX_REGULARIZATION).contains(&regularization) {
        Ok(regularization)
    } else {
        Err(ErmError::InvalidParameter {
            what: "regularization",
            value: regularization,
            requirement: "between 1e-12 and 1e6",
        })
    }
}

/// Checks `value` is finite and > 0.
pub(crate) fn check_positive(what: &'static str, value: f64) -> Result<f64, ErmError> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(ErmError::InvalidParameter {
            what,
            value,
            requirement: "finite and > 0",
        })
    }
}
