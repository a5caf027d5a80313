//! The recipe's choices by name: parsed from strings in one place for every face.

/// The largest ε a single fit takes: dp-erm's ceiling, the one every face checks against.
pub use dp_erm::MAX_EPSILON;

/// The largest δ a fit or a ledger's total takes on the Python face. δ is the probability
/// that the ε guarantee fails outright, and a meaningful δ is far below 1/n: publishing one
/// row chosen at random, in full, is (0, 1/n)-DP. 10⁻² is already above 1/n for every
/// dataset of more than 100 rows; the cap refuses the values that protect no one (δ = 0.5,
/// 0.999999) and typos, while the crates' mechanisms take any δ in (0, 1).
pub const MAX_DELTA: f64 = 1e-2;

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
