//! What trained a model ([`Mechanism`], with DP-SGD's record [`SgdRecord`]), and the codes
//! model files store for it.

use serde::de::{self, Deserializer, EnumAccess, VariantAccess, Visitor};
use serde::ser::{SerializeStructVariant, Serializer};
use serde::{Deserialize, Serialize};

use crate::calibration::ObjectiveCalibration;
use crate::sgd_accounting::Accountant;
use crate::variant_codes::{Fields, Variant, VariantSeed, names};

/// Which mechanism trains the model.
///
/// **On disk.** Model files store a variant by a fixed code, not by its place in this
/// declaration: `NonPrivate` 0, `OutputPerturbation` 1, `ObjectivePerturbation` 2,
/// `GaussianOutputPerturbation` 3, `GaussianObjectivePerturbation` 4, `DpSgd` 5,
/// `DpSgdAddRemove` 6, `AdaSsp` 9 (bincode writes it as a varint; formats that name variants, such as
/// JSON, use the name). These are the codes the declaration order gave before they were
/// written down, so every earlier file reads the same; a new variant takes a new code.
/// The DP-SGD variants certified by [`Accountant::Pld`] are written under codes of their
/// own, `DpSgdPld` 7 and `DpSgdAddRemovePld` 8, with the same fields: a file written before
/// accountants were recorded (codes 5 and 6) reads as [`Accountant::Rdp`], the accountant
/// that certified it, and an RDP-certified model is written exactly as before, byte for
/// byte; a reader older than accountants refuses a PLD model as an unknown mechanism
/// rather than misreading it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mechanism {
    /// Plain regularized ERM: **no privacy**.
    NonPrivate,
    /// CMS11 Algorithm 1: minimize, then add vector noise scaled to the sensitivity.
    OutputPerturbation {
        /// The ε of the guarantee.
        epsilon: f64,
    },
    /// CMS11 Algorithm 2: minimize an objective with a random linear term.
    ObjectivePerturbation {
        /// The ε of the guarantee.
        epsilon: f64,
        /// How ε is split (paper rule or cliff-free).
        calibration: ObjectiveCalibration,
    },
    /// Output perturbation with snapped discrete Gaussian noise ([`crate::GaussianErm`]):
    /// (ε, δ)-DP, not ε-DP.
    GaussianOutputPerturbation {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ of the (ε, δ) guarantee.
        delta: f64,
    },
    /// Objective perturbation with Gaussian noise ([`crate::GaussianErm`]): (ε, δ)-DP, not
    /// ε-DP.
    GaussianObjectivePerturbation {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ of the (ε, δ) guarantee.
        delta: f64,
    },
    /// DP-SGD ([`crate::DpSgd`]): Poisson-subsampled, clipped, Gaussian-noised gradient
    /// steps accounted with RDP; (ε, δ)-DP for replace-one neighbours, not ε-DP.
    DpSgd {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ of the (ε, δ) guarantee.
        delta: f64,
        /// The noise multiplier σ (noise standard deviation σC on each batch sum).
        noise_multiplier: f64,
        /// The realized Poisson sampling rate q the accounting used.
        sampling_rate: f64,
        /// The number of steps T.
        steps: u64,
        /// The clipping norm C of one example's gradient.
        clip_norm: f64,
        /// The accountant that certified the guarantee.
        accountant: Accountant,
    },
    /// DP-SGD for add/remove neighbours ([`crate::SgdNeighbours::AddRemove`]): as
    /// [`Mechanism::DpSgd`], its (ε, δ) for one example added or removed, each step's noisy
    /// sum divided by the public expected batch.
    DpSgdAddRemove {
        /// The ε of the (ε, δ) guarantee (add/remove).
        epsilon: f64,
        /// The δ of the (ε, δ) guarantee.
        delta: f64,
        /// The noise multiplier σ (noise standard deviation σC on each batch sum).
        noise_multiplier: f64,
        /// The realized Poisson sampling rate q the accounting used.
        sampling_rate: f64,
        /// The number of steps T.
        steps: u64,
        /// The clipping norm C of one example's gradient.
        clip_norm: f64,
        /// The public expected batch size each step's noisy sum was divided by.
        expected_batch: f64,
        /// The accountant that certified the guarantee.
        accountant: Accountant,
    },
    /// AdaSSP ([`crate::AdaSsp`], Wang 2018 Algorithm 2): ridge regression on Gaussian
    /// releases of λ_min(XᵀX), XᵀX and Xᵀt; (ε, δ)-DP, not ε-DP. Regressors only.
    AdaSsp {
        /// The ε of the (ε, δ) guarantee.
        epsilon: f64,
        /// The δ of the (ε, δ) guarantee.
        delta: f64,
    },
}

/// What a DP-SGD model records of its accounting, under either relation
/// ([`Mechanism::sgd_record`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SgdRecord {
    /// The noise multiplier σ.
    pub noise_multiplier: f64,
    /// The realized Poisson sampling rate q.
    pub sampling_rate: f64,
    /// The number of steps T.
    pub steps: u64,
    /// The clipping norm C.
    pub clip_norm: f64,
    /// Add/remove: the public expected batch each step divided by; `None`: replace-one.
    pub expected_batch: Option<f64>,
    /// The accountant that certified the guarantee ([`Accountant::Rdp`] for model files
    /// that name none).
    pub accountant: Accountant,
}

impl Mechanism {
    /// DP-SGD's accounting facts (either relation), `None` for the other mechanisms.
    pub fn sgd_record(&self) -> Option<SgdRecord> {
        match *self {
            Mechanism::DpSgd {
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                accountant,
                ..
            } => Some(SgdRecord {
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch: None,
                accountant,
            }),
            Mechanism::DpSgdAddRemove {
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch,
                accountant,
                ..
            } => Some(SgdRecord {
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch: Some(expected_batch),
                accountant,
            }),
            _ => None,
        }
    }

    /// The ε of the guarantee, or `None` for [`Mechanism::NonPrivate`]. For the Gaussian
    /// mechanisms it is the ε of an (ε, δ) guarantee: read [`Mechanism::delta`] with it.
    pub fn epsilon(&self) -> Option<f64> {
        match *self {
            Mechanism::NonPrivate => None,
            Mechanism::OutputPerturbation { epsilon }
            | Mechanism::ObjectivePerturbation { epsilon, .. }
            | Mechanism::GaussianOutputPerturbation { epsilon, .. }
            | Mechanism::GaussianObjectivePerturbation { epsilon, .. }
            | Mechanism::DpSgd { epsilon, .. }
            | Mechanism::DpSgdAddRemove { epsilon, .. }
            | Mechanism::AdaSsp { epsilon, .. } => Some(epsilon),
        }
    }

    /// The δ of the guarantee: 0 for the pure-ε mechanisms (and the non-private one).
    pub fn delta(&self) -> f64 {
        match *self {
            Mechanism::GaussianOutputPerturbation { delta, .. }
            | Mechanism::GaussianObjectivePerturbation { delta, .. }
            | Mechanism::DpSgd { delta, .. }
            | Mechanism::DpSgdAddRemove { delta, .. }
            | Mechanism::AdaSsp { delta, .. } => delta,
            _ => 0.0,
        }
    }

    /// The (ε, δ) of the guarantee for *replace one record*, the workspace's relation and
    /// the one a reader of "ε" assumes (None if non-private): the recorded pair, except for
    /// [`Mechanism::DpSgdAddRemove`], whose recorded ε is for one record added or removed
    /// (about half the replace-one ε at the same noise): its replace-one ε is accounted
    /// here from the recorded σ, q and T at its δ by the recorded accountant, as
    /// [`crate::DpSgd::replace_one_epsilon`] accounts it at training (∞ if the record is one
    /// no accountant takes).
    pub fn replace_one_guarantee(&self) -> Option<(f64, f64)> {
        match *self {
            Mechanism::NonPrivate => None,
            Mechanism::DpSgdAddRemove {
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                accountant: Accountant::Pld,
                ..
            } => {
                let epsilon = crate::sgd_accounting::pld_replace_one_epsilon(
                    sampling_rate,
                    noise_multiplier,
                    steps,
                    delta,
                    epsilon,
                )
                .unwrap_or(f64::INFINITY);
                Some((epsilon, delta))
            }
            Mechanism::DpSgdAddRemove {
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                ..
            } => {
                let epsilon = dp_noise::RdpCurve::subsampled_gaussian(
                    dp_noise::Neighbouring::ReplaceOne,
                    sampling_rate,
                    noise_multiplier,
                    steps,
                    &dp_noise::default_orders(),
                )
                .and_then(|curve| curve.epsilon(delta))
                .map_or(f64::INFINITY, |(epsilon, _)| epsilon);
                Some((epsilon, delta))
            }
            _ => self.epsilon().map(|epsilon| (epsilon, self.delta())),
        }
    }
}

/// The codes (see "On disk" on [`Mechanism`]).
const NON_PRIVATE: Variant = Variant {
    code: 0,
    name: "NonPrivate",
};
const OUTPUT_PERTURBATION: Variant = Variant {
    code: 1,
    name: "OutputPerturbation",
};
const OBJECTIVE_PERTURBATION: Variant = Variant {
    code: 2,
    name: "ObjectivePerturbation",
};
const GAUSSIAN_OUTPUT_PERTURBATION: Variant = Variant {
    code: 3,
    name: "GaussianOutputPerturbation",
};
const GAUSSIAN_OBJECTIVE_PERTURBATION: Variant = Variant {
    code: 4,
    name: "GaussianObjectivePerturbation",
};
const DP_SGD: Variant = Variant {
    code: 5,
    name: "DpSgd",
};
const DP_SGD_ADD_REMOVE: Variant = Variant {
    code: 6,
    name: "DpSgdAddRemove",
};
const DP_SGD_PLD: Variant = Variant {
    code: 7,
    name: "DpSgdPld",
};
const DP_SGD_ADD_REMOVE_PLD: Variant = Variant {
    code: 8,
    name: "DpSgdAddRemovePld",
};

const ADA_SSP: Variant = Variant {
    code: 9,
    name: "AdaSsp",
};

const TABLE: [Variant; 10] = [
    NON_PRIVATE,
    OUTPUT_PERTURBATION,
    OBJECTIVE_PERTURBATION,
    GAUSSIAN_OUTPUT_PERTURBATION,
    GAUSSIAN_OBJECTIVE_PERTURBATION,
    DP_SGD,
    DP_SGD_ADD_REMOVE,
    DP_SGD_PLD,
    DP_SGD_ADD_REMOVE_PLD,
    ADA_SSP,
];
const NAMES: [&str; 10] = names(&TABLE);

impl Mechanism {
    /// The variant's code and name.
    fn variant(&self) -> Variant {
        match self {
            Mechanism::NonPrivate => NON_PRIVATE,
            Mechanism::OutputPerturbation { .. } => OUTPUT_PERTURBATION,
            Mechanism::ObjectivePerturbation { .. } => OBJECTIVE_PERTURBATION,
            Mechanism::GaussianOutputPerturbation { .. } => GAUSSIAN_OUTPUT_PERTURBATION,
            Mechanism::GaussianObjectivePerturbation { .. } => GAUSSIAN_OBJECTIVE_PERTURBATION,
            Mechanism::DpSgd {
                accountant: Accountant::Rdp,
                ..
            } => DP_SGD,
            Mechanism::DpSgd { .. } => DP_SGD_PLD,
            Mechanism::DpSgdAddRemove {
                accountant: Accountant::Rdp,
                ..
            } => DP_SGD_ADD_REMOVE,
            Mechanism::DpSgdAddRemove { .. } => DP_SGD_ADD_REMOVE_PLD,
            Mechanism::AdaSsp { .. } => ADA_SSP,
        }
    }
}

/// A struct variant with the named fields, in order (as the derived impl wrote it).
macro_rules! struct_variant {
    ($serializer:expr, $variant:expr, $($field:ident),+) => {{
        let variant: Variant = $variant;
        let mut fields = $serializer.serialize_struct_variant(
            "Mechanism",
            variant.code,
            variant.name,
            [$(stringify!($field)),+].len(),
        )?;
        $(fields.serialize_field(stringify!($field), &$field)?;)+
        fields.end()
    }};
}

impl Serialize for Mechanism {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let variant = self.variant();
        match *self {
            Mechanism::NonPrivate => {
                serializer.serialize_unit_variant("Mechanism", variant.code, variant.name)
            }
            Mechanism::OutputPerturbation { epsilon } => {
                struct_variant!(serializer, variant, epsilon)
            }
            Mechanism::ObjectivePerturbation {
                epsilon,
                calibration,
            } => struct_variant!(serializer, variant, epsilon, calibration),
            Mechanism::GaussianOutputPerturbation { epsilon, delta }
            | Mechanism::GaussianObjectivePerturbation { epsilon, delta }
            | Mechanism::AdaSsp { epsilon, delta } => {
                struct_variant!(serializer, variant, epsilon, delta)
            }
            Mechanism::DpSgd {
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                ..
            } => struct_variant!(
                serializer,
                variant,
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm
            ),
            Mechanism::DpSgdAddRemove {
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch,
                ..
            } => struct_variant!(
                serializer,
                variant,
                epsilon,
                delta,
                noise_multiplier,
                sampling_rate,
                steps,
                clip_norm,
                expected_batch
            ),
        }
    }
}

// The fields of each struct variant, read through derived impls (same names, same order).

#[derive(Deserialize)]
struct OutputFields {
    epsilon: f64,
}
const OUTPUT_FIELDS: &[&str] = &["epsilon"];

#[derive(Deserialize)]
struct ObjectiveFields {
    epsilon: f64,
    calibration: ObjectiveCalibration,
}
const OBJECTIVE_FIELDS: &[&str] = &["epsilon", "calibration"];

#[derive(Deserialize)]
struct GaussianFields {
    epsilon: f64,
    delta: f64,
}
const GAUSSIAN_FIELDS: &[&str] = &["epsilon", "delta"];

#[derive(Deserialize)]
struct SgdFields {
    epsilon: f64,
    delta: f64,
    noise_multiplier: f64,
    sampling_rate: f64,
    steps: u64,
    clip_norm: f64,
}
const SGD_FIELDS: &[&str] = &[
    "epsilon",
    "delta",
    "noise_multiplier",
    "sampling_rate",
    "steps",
    "clip_norm",
];

#[derive(Deserialize)]
struct SgdAddRemoveFields {
    epsilon: f64,
    delta: f64,
    noise_multiplier: f64,
    sampling_rate: f64,
    steps: u64,
    clip_norm: f64,
    expected_batch: f64,
}
const SGD_ADD_REMOVE_FIELDS: &[&str] = &[
    "epsilon",
    "delta",
    "noise_multiplier",
    "sampling_rate",
    "steps",
    "clip_norm",
    "expected_batch",
];

impl<'de> Deserialize<'de> for Mechanism {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_enum("Mechanism", &NAMES, MechanismVisitor)
    }
}

struct MechanismVisitor;

impl<'de> Visitor<'de> for MechanismVisitor {
    type Value = Mechanism;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("enum Mechanism")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Mechanism, A::Error> {
        let seed = VariantSeed {
            table: &TABLE,
            names: &NAMES,
        };
        let (variant, access) = data.variant_seed(seed)?;
        Ok(match variant {
            NON_PRIVATE => {
                access.unit_variant()?;
                Mechanism::NonPrivate
            }
            OUTPUT_PERTURBATION => {
                let f: OutputFields = access.struct_variant(OUTPUT_FIELDS, Fields::new())?;
                Mechanism::OutputPerturbation { epsilon: f.epsilon }
            }
            OBJECTIVE_PERTURBATION => {
                let f: ObjectiveFields = access.struct_variant(OBJECTIVE_FIELDS, Fields::new())?;
                Mechanism::ObjectivePerturbation {
                    epsilon: f.epsilon,
                    calibration: f.calibration,
                }
            }
            GAUSSIAN_OUTPUT_PERTURBATION => {
                let f: GaussianFields = access.struct_variant(GAUSSIAN_FIELDS, Fields::new())?;
                Mechanism::GaussianOutputPerturbation {
                    epsilon: f.epsilon,
                    delta: f.delta,
                }
            }
            GAUSSIAN_OBJECTIVE_PERTURBATION => {
                let f: GaussianFields = access.struct_variant(GAUSSIAN_FIELDS, Fields::new())?;
                Mechanism::GaussianObjectivePerturbation {
                    epsilon: f.epsilon,
                    delta: f.delta,
                }
            }
            ADA_SSP => {
                let f: GaussianFields = access.struct_variant(GAUSSIAN_FIELDS, Fields::new())?;
                Mechanism::AdaSsp {
                    epsilon: f.epsilon,
                    delta: f.delta,
                }
            }
            DP_SGD | DP_SGD_PLD => {
                let f: SgdFields = access.struct_variant(SGD_FIELDS, Fields::new())?;
                Mechanism::DpSgd {
                    epsilon: f.epsilon,
                    delta: f.delta,
                    noise_multiplier: f.noise_multiplier,
                    sampling_rate: f.sampling_rate,
                    steps: f.steps,
                    clip_norm: f.clip_norm,
                    accountant: accountant_of(variant),
                }
            }
            DP_SGD_ADD_REMOVE | DP_SGD_ADD_REMOVE_PLD => {
                let f: SgdAddRemoveFields =
                    access.struct_variant(SGD_ADD_REMOVE_FIELDS, Fields::new())?;
                Mechanism::DpSgdAddRemove {
                    epsilon: f.epsilon,
                    delta: f.delta,
                    noise_multiplier: f.noise_multiplier,
                    sampling_rate: f.sampling_rate,
                    steps: f.steps,
                    clip_norm: f.clip_norm,
                    expected_batch: f.expected_batch,
                    accountant: accountant_of(variant),
                }
            }
            // The seed returns only the table's variants.
            other => return Err(de::Error::unknown_variant(other.name, &NAMES)),
        })
    }
}

/// The accountant a DP-SGD variant's code names: PLD under codes 7 and 8, RDP under 5 and 6
/// (written before accountants were recorded, when RDP was the only one).
fn accountant_of(variant: Variant) -> Accountant {
    if variant == DP_SGD_PLD || variant == DP_SGD_ADD_REMOVE_PLD {
        Accountant::Pld
    } else {
        Accountant::Rdp
    }
}

#[cfg(test)]
#[path = "mechanism_tests.rs"]
mod tests;
