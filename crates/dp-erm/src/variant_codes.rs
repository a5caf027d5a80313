//! Explicit codes for the enums a model file stores.
//!
//! serde's derived impls give each variant its position in the declaration as its index,
//! and bincode (the model files' encoding) writes that index: reordering, or inserting a
//! variant before the last, would silently change what every existing file decodes to. The
//! enums a file holds ([`crate::Mechanism`], [`crate::ObjectiveCalibration`],
//! [`crate::Loss`]) implement serde by hand instead, each with a table of [`Variant`]s that
//! fixes every variant's code and name. Binary formats see the code, self-describing ones
//! (JSON) the name, exactly as with the derived impls.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};
use serde::ser::{SerializeStructVariant, Serializer};
use serde::{Deserialize, Deserializer, Serialize};

use crate::{Loss, ObjectiveCalibration};

/// One variant: the code a binary file stores for it, and the name self-describing
/// formats use. A code is never reused or changed once a file may hold it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Variant {
    /// The code (bincode: a varint).
    pub code: u32,
    /// The name (the Rust variant's).
    pub name: &'static str,
}

/// The names of `table`'s variants, in its order (what `deserialize_enum` is told).
pub(crate) const fn names<const N: usize>(table: &[Variant; N]) -> [&'static str; N] {
    let mut names = [""; N];
    let mut i = 0;
    while i < N {
        names[i] = table[i].name;
        i += 1;
    }
    names
}

/// Reads a variant identifier, by code or by name, as its entry of `table`.
pub(crate) struct VariantSeed {
    /// The variants.
    pub table: &'static [Variant],
    /// Their names (for "unknown variant" messages).
    pub names: &'static [&'static str],
}

impl<'de> DeserializeSeed<'de> for VariantSeed {
    type Value = Variant;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Variant, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for VariantSeed {
    type Value = Variant;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }

    fn visit_u64<E: de::Error>(self, code: u64) -> Result<Variant, E> {
        self.table
            .iter()
            .find(|v| u64::from(v.code) == code)
            .copied()
            .ok_or_else(|| {
                let codes: Vec<String> = self.table.iter().map(|v| v.code.to_string()).collect();
                E::invalid_value(
                    de::Unexpected::Unsigned(code),
                    &format!("a variant code ({})", codes.join(", ")).as_str(),
                )
            })
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Variant, E> {
        self.table
            .iter()
            .find(|v| v.name == name)
            .copied()
            .ok_or_else(|| E::unknown_variant(name, self.names))
    }

    fn visit_bytes<E: de::Error>(self, name: &[u8]) -> Result<Variant, E> {
        match std::str::from_utf8(name) {
            Ok(name) => self.visit_str(name),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(name), &self)),
        }
    }
}

/// The fields of a struct variant, read through `T`'s derived `Deserialize` (a struct
/// with the variant's fields, in order): from a sequence (bincode) or a map (JSON).
pub(crate) struct Fields<T>(PhantomData<T>);

impl<T> Fields<T> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the fields of a struct variant")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::deserialize(SeqAccessDeserializer::new(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map))
    }
}

// ---------------------------------------------------------------------------------------
// The enums inside a model's metadata besides `Mechanism` (which has its own module)

pub(crate) const CMS11: Variant = Variant {
    code: 0,
    name: "Cms11",
};
pub(crate) const CLIFF_FREE: Variant = Variant {
    code: 1,
    name: "CliffFree",
};
pub(crate) const CALIBRATIONS: [Variant; 2] = [CMS11, CLIFF_FREE];
const CALIBRATION_NAMES: [&str; 2] = names(&CALIBRATIONS);

impl Serialize for ObjectiveCalibration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let variant = match self {
            ObjectiveCalibration::Cms11 => CMS11,
            ObjectiveCalibration::CliffFree => CLIFF_FREE,
        };
        serializer.serialize_unit_variant("ObjectiveCalibration", variant.code, variant.name)
    }
}

impl<'de> Deserialize<'de> for ObjectiveCalibration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_enum(
            "ObjectiveCalibration",
            &CALIBRATION_NAMES,
            CalibrationVisitor,
        )
    }
}

struct CalibrationVisitor;

impl<'de> Visitor<'de> for CalibrationVisitor {
    type Value = ObjectiveCalibration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("enum ObjectiveCalibration")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        let seed = VariantSeed {
            table: &CALIBRATIONS,
            names: &CALIBRATION_NAMES,
        };
        let (variant, access) = data.variant_seed(seed)?;
        access.unit_variant()?;
        match variant {
            CMS11 => Ok(ObjectiveCalibration::Cms11),
            CLIFF_FREE => Ok(ObjectiveCalibration::CliffFree),
            other => Err(de::Error::unknown_variant(other.name, &CALIBRATION_NAMES)),
        }
    }
}

pub(crate) const LOGISTIC: Variant = Variant {
    code: 0,
    name: "Logistic",
};
pub(crate) const HUBER: Variant = Variant {
    code: 1,
    name: "Huber",
};
pub(crate) const HUBER_REGRESSION: Variant = Variant {
    code: 2,
    name: "HuberRegression",
};
pub(crate) const LOSSES: [Variant; 3] = [LOGISTIC, HUBER, HUBER_REGRESSION];
const LOSS_NAMES: [&str; 3] = names(&LOSSES);

impl Serialize for Loss {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Loss::Logistic => {
                serializer.serialize_unit_variant("Loss", LOGISTIC.code, LOGISTIC.name)
            }
            Loss::Huber { width } => {
                let mut fields =
                    serializer.serialize_struct_variant("Loss", HUBER.code, HUBER.name, 1)?;
                fields.serialize_field("width", &width)?;
                fields.end()
            }
            Loss::HuberRegression { threshold } => {
                let mut fields = serializer.serialize_struct_variant(
                    "Loss",
                    HUBER_REGRESSION.code,
                    HUBER_REGRESSION.name,
                    1,
                )?;
                fields.serialize_field("threshold", &threshold)?;
                fields.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Loss {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_enum("Loss", &LOSS_NAMES, LossVisitor)
    }
}

/// The fields of [`Loss::Huber`].
#[derive(Deserialize)]
struct HuberFields {
    width: f64,
}

/// The fields of [`Loss::HuberRegression`].
#[derive(Deserialize)]
struct HuberRegressionFields {
    threshold: f64,
}

struct LossVisitor;

impl<'de> Visitor<'de> for LossVisitor {
    type Value = Loss;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("enum Loss")
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        let seed = VariantSeed {
            table: &LOSSES,
            names: &LOSS_NAMES,
        };
        let (variant, access) = data.variant_seed(seed)?;
        match variant {
            LOGISTIC => {
                access.unit_variant()?;
                Ok(Loss::Logistic)
            }
            HUBER => {
                let f: HuberFields = access.struct_variant(&["width"], Fields::new())?;
                Ok(Loss::Huber { width: f.width })
            }
            HUBER_REGRESSION => {
                let f: HuberRegressionFields =
                    access.struct_variant(&["threshold"], Fields::new())?;
                Ok(Loss::HuberRegression {
                    threshold: f.threshold,
                })
            }
            other => Err(de::Error::unknown_variant(other.name, &LOSS_NAMES)),
        }
    }
}

/// Checks a table: codes and names distinct (for the tests of each enum).
#[cfg(test)]
pub(crate) fn assert_distinct(table: &[Variant]) {
    for (i, a) in table.iter().enumerate() {
        for b in &table[i + 1..] {
            assert_ne!(a.code, b.code, "{} and {} share a code", a.name, b.name);
            assert_ne!(a.name, b.name);
        }
    }
}
