//! The recipe's choices by name: parsed from strings in one place for every face.

use std::fmt;
use std::str::FromStr;

/// The largest ε a single fit takes (the mechanisms' ceiling; one definition for every
/// face).
pub const MAX_EPSILON: f64 = 1000.0;

/// The neighbouring relation a guarantee is stated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Neighbouring {
    /// One row replaced; the row count is public (every mechanism's relation).
    #[default]
    ReplaceOne,
    /// One row added or removed; the row count is private (DP-SGD only, on a public
    /// estimate n̂ of it).
    AddRemove,
}

impl Neighbouring {
    /// The relation's name, as every face spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::ReplaceOne => "replace-one",
            Self::AddRemove => "add-remove",
        }
    }
}

impl fmt::Display for Neighbouring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the choices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownChoice {
    /// What was being chosen.
    pub what: &'static str,
    /// The name given.
    pub given: String,
    /// The names accepted.
    pub expected: &'static [&'static str],
}

impl fmt::Display for UnknownChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={:?}; expected one of {:?}",
            self.what, self.given, self.expected
        )
    }
}

impl std::error::Error for UnknownChoice {}

impl FromStr for Neighbouring {
    type Err = UnknownChoice;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "replace-one" => Ok(Self::ReplaceOne),
            "add-remove" => Ok(Self::AddRemove),
            _ => Err(UnknownChoice {
                what: "neighbouring",
                given: s.into(),
                expected: &["replace-one", "add-remove"],
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_named() {
        for n in [Neighbouring::ReplaceOne, Neighbouring::AddRemove] {
            assert_eq!(n.name().parse::<Neighbouring>(), Ok(n));
        }
        let err = "add_remove".parse::<Neighbouring>().unwrap_err();
        assert!(err.to_string().contains("\"add_remove\""), "{err}");
        assert!(err.to_string().contains("add-remove"), "{err}");
    }
}
