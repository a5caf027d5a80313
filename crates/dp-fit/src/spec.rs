//! The recipe's choices by name: parsed from strings in one place for every face.

/// The largest δ a fit, a budget or a ledger's total takes: dp-noise's, the one every face
/// checks against.
pub use dp_erm::MAX_DELTA;
/// The largest ε a single fit takes: dp-erm's ceiling, the one every face checks against.
pub use dp_erm::MAX_EPSILON;

/// The neighbouring relation a guarantee is stated for (one enum for the whole library:
/// dp-noise's, which its accountants take); `"replace-one"` and `"add-remove"` parse to it.
pub use dp_noise::{Neighbouring, UnknownNeighbouring};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_named() {
        for n in [Neighbouring::ReplaceOne, Neighbouring::AddRemove] {
            assert_eq!(n.name().parse::<Neighbouring>(), Ok(n));
            assert_eq!(n.to_string(), n.name());
        }
        let err = "add_remove".parse::<Neighbouring>().unwrap_err();
        assert!(err.to_string().contains("\"add_remove\""), "{err}");
        assert!(err.to_string().contains("add-remove"), "{err}");
    }
}
