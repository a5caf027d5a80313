//! The recipe's choices by name: parsed from strings in one place for every face.

/// The largest δ a fit, a budget or a ledger's total takes: dp-noise's, the one every face
/// checks against.
pub use dp_erm::MAX_DELTA;
/// The largest ε a single fit takes: dp-erm's ceiling, the one every face checks against.
pub use dp_erm::MAX_EPSILON;

/// The neighbouring relation a guarantee is stated for (one enum for the whole library:
/// dp-noise's, which its accountants take); `"replace-one"` and `"add-remove"` parse to it.
pub use dp_noise::{Neighbouring, UnknownNeighbouring};

/// The accountant that certifies a DP-SGD fit (dp-erm's): `"pld"` (the default) and `"rdp"`
/// parse to it ([`parse_accountant`]).
pub use dp_erm::Accountant;

/// The accountant named `text` (`"pld"` or `"rdp"`, any case); the error names the text and
/// the choices.
pub fn parse_accountant(text: &str) -> Result<Accountant, String> {
    Accountant::parse(text).ok_or_else(|| {
        format!("accountant {text:?} is not one of \"pld\" (privacy-loss distribution, the default) or \"rdp\"")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_named() {
        for n in [Neighbouring::ReplaceOne, Neighbouring::AddRemove] {
            assert_eq!(n.name().parse::<Neighbouring>(), Ok(n));
            assert_eq!(n.to_string(), n.name());
        }
        for a in [Accountant::Pld, Accountant::Rdp] {
            assert_eq!(parse_accountant(a.name()), Ok(a));
            assert_eq!(parse_accountant(&a.name().to_uppercase()), Ok(a));
        }
        let e = parse_accountant("prv").unwrap_err();
        assert!(e.contains("\"prv\"") && e.contains("pld"), "{e}");
        let err = "add_remove".parse::<Neighbouring>().unwrap_err();
        assert!(err.to_string().contains("\"add_remove\""), "{err}");
        assert!(err.to_string().contains("add-remove"), "{err}");
    }
}
