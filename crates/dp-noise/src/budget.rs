//! Differential-privacy accounting: pure ε, and (ε, δ) when a budget allows a δ.

use crate::NoiseError;
use crate::error::{check_delta, check_epsilon, check_spent_delta};
use crate::rounding::{add_rounding_up, subtract_rounding_down};

/// The ε of running ε-DP mechanisms one after another on the same data (sequential
/// composition): their sum, rounded up.
pub fn sequential_composition(epsilons: &[f64]) -> Result<f64, NoiseError> {
    epsilons.iter().try_fold(0.0, |total, &e| {
        Ok(add_rounding_up(total, check_epsilon(e)?))
    })
}

/// The ε of running ε_i-DP mechanisms on **disjoint** parts of the data, each person in at
/// most one part (parallel composition): the largest ε_i. An empty list costs 0.
pub fn parallel_composition(epsilons: &[f64]) -> Result<f64, NoiseError> {
    epsilons
        .iter()
        .try_fold(0.0f64, |worst, &e| Ok(worst.max(check_epsilon(e)?)))
}

/// Number of spends up to which [`PrivacyBudget::even_share`] is exact (the largest share).
pub const EXACT_SHARE_SPENDS: u32 = 1 << 16;

/// One charge against a budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Charge {
    /// What the ε was spent on, as given by the caller.
    pub label: String,
    /// The ε charged.
    pub epsilon: f64,
    /// The δ charged (0 for a pure ε-DP mechanism).
    pub delta: f64,
}

/// A privacy budget: a limit on ε (and on δ, 0 unless created with
/// [`PrivacyBudget::with_delta`]), what has been spent, and a ledger of the charges.
///
/// # Privacy
/// Tracks the basic composition theorems of differential privacy:
/// - **sequential**: mechanisms that are ε₁-, …, ε_k-DP on the same data are together
///   (Σ ε_i)-DP ([`PrivacyBudget::spend`]); (ε_i, δ_i)-DP mechanisms are together
///   (Σ ε_i, Σ δ_i)-DP ([`PrivacyBudget::spend_approximate`]);
/// - **parallel**: mechanisms run on disjoint parts of the data (each person in one part)
///   are together (max ε_i)-DP ([`PrivacyBudget::spend_parallel`]);
/// - post-processing of released outputs is free and is not charged.
///
/// A budget made with [`PrivacyBudget::new`] is **pure**: its δ limit is 0, so it refuses
/// any spend with δ > 0 ([`NoiseError::DeltaBudgetExceeded`]) and everything it records is
/// ε-DP. An (ε, δ) mechanism — random stopping with a cap on its runs, in `dp-tune` — can be
/// charged only to a budget whose holder accepted a δ.
///
/// The neighbouring relation must be the same for all charges. Sums are rounded up, so the
/// reported spend is never below the true one; a spend that would exceed the limit is
/// refused with [`NoiseError::BudgetExceeded`] and charges nothing.
///
/// Because decimal ε values are not exact in binary, ten spends of `0.1` exceed a limit of
/// `1.0` by about 5.6·10⁻¹⁷ and the tenth is refused. Use [`PrivacyBudget::even_share`] to
/// get the largest per-spend ε that fits a number of spends exactly.
/// Deliberately not `Clone`: two copies could each spend the whole limit.
#[derive(Debug, PartialEq)]
pub struct PrivacyBudget {
    limit: f64,
    spent: f64,
    delta_limit: f64,
    delta_spent: f64,
    ledger: Vec<Charge>,
}

impl PrivacyBudget {
    /// A pure-ε budget of `limit` (finite, > 0), nothing spent: it accepts no δ.
    pub fn new(limit: f64) -> Result<Self, NoiseError> {
        Self::with_delta(limit, 0.0)
    }

    /// A budget of `limit` on ε (finite, > 0) and `delta_limit` on δ (finite,
    /// 0 ≤ δ ≤ [`MAX_DELTA`](crate::MAX_DELTA); 0 makes it pure), nothing spent.
    pub fn with_delta(limit: f64, delta_limit: f64) -> Result<Self, NoiseError> {
        Ok(Self {
            limit: check_epsilon(limit)?,
            spent: 0.0,
            delta_limit: check_delta(delta_limit)?,
            delta_spent: 0.0,
            ledger: Vec::new(),
        })
    }

    /// The limit on δ (0 for a pure-ε budget).
    pub fn delta_limit(&self) -> f64 {
        self.delta_limit
    }

    /// Total δ spent so far (rounded up; 0 while only pure ε-DP spends were made).
    pub fn delta_spent(&self) -> f64 {
        self.delta_spent
    }

    /// The limit ε.
    pub fn limit(&self) -> f64 {
        self.limit
    }

    /// Total ε spent so far (rounded up).
    pub fn spent(&self) -> f64 {
        self.spent
    }

    /// What is left (rounded down): `limit − spent`.
    pub fn remaining(&self) -> f64 {
        // `max` would keep the sign of −0.0 (limit − spent when both are equal).
        let left = subtract_rounding_down(self.limit, self.spent);
        if left > 0.0 { left } else { 0.0 }
    }

    /// Whether nothing more can be spent.
    pub fn is_exhausted(&self) -> bool {
        self.spent >= self.limit
    }

    /// Every charge so far, in order.
    pub fn ledger(&self) -> &[Charge] {
        &self.ledger
    }

    /// Whether spending `epsilon` now would stay within the limit.
    pub fn can_spend(&self, epsilon: f64) -> bool {
        check_epsilon(epsilon).is_ok() && add_rounding_up(self.spent, epsilon) <= self.limit
    }

    /// Charges an ε-DP mechanism run on the data (sequential composition). On error
    /// nothing is charged.
    pub fn spend(&mut self, label: &str, epsilon: f64) -> Result<(), NoiseError> {
        self.spend_approximate(label, epsilon, 0.0)
    }

    /// Charges an (ε, δ)-DP mechanism run on the data (basic sequential composition: ε and
    /// δ add up). A δ > 0 is refused by a pure-ε budget. On error nothing is charged.
    pub fn spend_approximate(
        &mut self,
        label: &str,
        epsilon: f64,
        delta: f64,
    ) -> Result<(), NoiseError> {
        let epsilon = check_epsilon(epsilon)?;
        let delta = check_spent_delta(delta)?;
        // δ first: a pure budget refuses any δ, whatever the ε, and saying so first spares
        // a caller raising the ε limit only to be refused again.
        let delta_total = add_rounding_up(self.delta_spent, delta);
        if delta_total > self.delta_limit {
            return Err(NoiseError::DeltaBudgetExceeded {
                requested: delta,
                spent: self.delta_spent,
                limit: self.delta_limit,
            });
        }
        let total = add_rounding_up(self.spent, epsilon);
        if total > self.limit {
            return Err(NoiseError::BudgetExceeded {
                requested: epsilon,
                spent: self.spent,
                limit: self.limit,
            });
        }
        self.spent = total;
        self.delta_spent = delta_total;
        self.ledger.push(Charge {
            label: label.to_owned(),
            epsilon,
            delta,
        });
        Ok(())
    }

    /// Charges a ρ-zCDP mechanism as the (ε, δ) point the CKS20 conversion certifies at
    /// `delta` ([`crate::Zcdp::epsilon`], rounded up), by basic composition: a pure-ε budget
    /// refuses it (zCDP gives no finite ε at δ = 0). To compose many zCDP mechanisms
    /// tightly, charge them to a [`crate::ZcdpBudget`] and convert once. On error nothing is
    /// charged.
    pub fn spend_zcdp(
        &mut self,
        label: &str,
        cost: crate::Zcdp,
        delta: f64,
    ) -> Result<(), NoiseError> {
        // δ first, with the same refusal as any (ε, δ) spend, before converting.
        let delta = check_spent_delta(delta)?;
        if add_rounding_up(self.delta_spent, delta) > self.delta_limit || delta == 0.0 {
            return Err(NoiseError::DeltaBudgetExceeded {
                requested: delta,
                spent: self.delta_spent,
                limit: self.delta_limit,
            });
        }
        self.spend_approximate(label, cost.epsilon(delta)?, delta)
    }

    /// Charges mechanisms run on disjoint parts of the data, one ε per part (parallel
    /// composition): costs the largest of them. On error nothing is charged.
    pub fn spend_parallel(&mut self, label: &str, epsilons: &[f64]) -> Result<(), NoiseError> {
        if epsilons.is_empty() {
            return Ok(());
        }
        self.spend(label, parallel_composition(epsilons)?)
    }

    /// An ε such that `spends` sequential spends of it fit in what remains: the largest one
    /// for up to [`EXACT_SHARE_SPENDS`] spends (found by replaying the spends, about
    /// `64 · spends` additions); beyond, a share below the largest by a relative
    /// `4·spends·2⁻⁵²` at most (≤ 4·10⁻⁶ for `u32::MAX` spends), computed in constant time.
    /// Returns `None` for `spends == 0` or when nothing remains.
    pub fn even_share(&self, spends: u32) -> Option<f64> {
        if spends == 0 || self.is_exhausted() {
            return None;
        }
        if spends > EXACT_SHARE_SPENDS {
            return self.even_share_bounded(spends);
        }
        let fits = |share: f64| {
            let mut total = self.spent;
            for _ in 0..spends {
                total = add_rounding_up(total, share);
            }
            total <= self.limit
        };
        // Bisect on bit patterns, which non-negative floats share their order with.
        // Invariant: `lo` fits (0 does, as spent < limit) and `hi` does not: a share above
        // limit/spends exceeds the limit even in exact arithmetic, and two ulps above
        // fl(limit/spends) is above limit/spends.
        let mut lo = 0u64;
        let mut hi = (self.limit / f64::from(spends))
            .next_up()
            .next_up()
            .to_bits();
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(f64::from_bits(mid)) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let share = f64::from_bits(lo);
        (share > 0.0).then_some(share)
    }

    /// A share for many spends without replaying them. Each spend's `add_rounding_up`
    /// lands at most two ulps above the exact running total, which stays below `2·limit`,
    /// so `k` spends exceed the exact `spent + k·share` by at most `4k·2⁻⁵²·limit`; the
    /// share leaves that much room.
    fn even_share_bounded(&self, spends: u32) -> Option<f64> {
        let k = f64::from(spends);
        let rounding_room = (4.0 * k * f64::EPSILON * self.limit).next_up();
        let room = subtract_rounding_down(
            subtract_rounding_down(self.limit, self.spent),
            rounding_room,
        );
        let share = (room / k).next_down();
        (share > 0.0).then_some(share)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addition_rounds_up_exactly_when_inexact() {
        assert_eq!(add_rounding_up(0.5, 0.25), 0.75); // exact sums stay put
        // 0.1 + 0.2 rounds to nearest = 0.30000000000000004, which is above the true sum:
        // no bump needed. 1 + 2^-60 rounds down to 1: bumped.
        assert_eq!(add_rounding_up(0.1, 0.2), 0.1 + 0.2);
        assert_eq!(add_rounding_up(1.0, 2f64.powi(-60)), 1f64.next_up());
        assert_eq!(add_rounding_up(2f64.powi(-60), 1.0), 1f64.next_up());
    }

    #[test]
    fn sequential_spends_add_up() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        budget.spend("a", 0.25).unwrap();
        budget.spend("b", 0.5).unwrap();
        assert_eq!(budget.spent(), 0.75);
        assert_eq!(budget.remaining(), 0.25);
        assert_eq!(budget.ledger().len(), 2);
        assert_eq!(
            budget.ledger()[1],
            Charge {
                label: "b".into(),
                epsilon: 0.5,
                delta: 0.0
            }
        );
    }

    #[test]
    fn a_pure_budget_refuses_any_delta_and_charges_nothing() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        budget.spend("pure", 0.25).unwrap();
        let err = budget
            .spend_approximate("capped", 0.25, 1e-300)
            .unwrap_err();
        assert_eq!(
            err,
            NoiseError::DeltaBudgetExceeded {
                requested: 1e-300,
                spent: 0.0,
                limit: 0.0
            }
        );
        assert!(err.to_string().contains("with_delta"), "{err}");
        assert_eq!((budget.spent(), budget.delta_spent()), (0.25, 0.0));
        assert_eq!(budget.ledger().len(), 1);
        // Refused for its δ even when its ε does not fit either: raising the ε limit
        // would not help.
        let err = budget.spend_approximate("capped", 2.0, 1e-9).unwrap_err();
        assert!(
            matches!(err, NoiseError::DeltaBudgetExceeded { .. }),
            "{err}"
        );
        // δ = 0 is a pure spend.
        budget.spend_approximate("pure too", 0.25, 0.0).unwrap();
        assert_eq!(budget.spent(), 0.5);
    }

    #[test]
    fn deltas_add_up_rounding_up_within_their_limit() {
        let mut budget = PrivacyBudget::with_delta(1.0, 1e-6).unwrap();
        assert_eq!(budget.delta_limit(), 1e-6);
        budget.spend_approximate("a", 0.25, 3e-7).unwrap();
        budget.spend_approximate("b", 0.25, 3e-7).unwrap();
        // 3e-7 + 3e-7 is inexact in binary: the recorded sum is not below the exact one.
        assert!(budget.delta_spent() >= 6e-7, "{}", budget.delta_spent());
        assert_eq!(budget.ledger()[1].delta, 3e-7);
        let err = budget.spend_approximate("c", 0.25, 5e-7).unwrap_err();
        assert!(
            matches!(err, NoiseError::DeltaBudgetExceeded { limit, .. } if limit == 1e-6),
            "{err}"
        );
        assert!(err.to_string().contains("delta limit"), "{err}");
        assert_eq!(budget.spent(), 0.5);
        // The ε limit binds too, whatever the δ.
        assert!(matches!(
            budget.spend_approximate("d", 0.75, 0.0),
            Err(NoiseError::BudgetExceeded { .. })
        ));
        for bad in [-1e-9, 1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                PrivacyBudget::with_delta(1.0, bad),
                Err(NoiseError::InvalidDelta(d)) if d.to_bits() == bad.to_bits()
            ));
            assert!(budget.spend_approximate("bad", 0.1, bad).is_err());
        }
        assert!(matches!(
            budget.spend_approximate("no guarantee", 0.1, 1.0),
            Err(NoiseError::DeltaBudgetExceeded { .. })
        ));
        assert_eq!(budget.ledger().len(), 2);
    }

    #[test]
    fn a_negative_zero_delta_is_recorded_as_zero() {
        let mut budget = PrivacyBudget::with_delta(1.0, -0.0).unwrap();
        budget.spend_approximate("pure", 0.5, -0.0).unwrap();
        let mut accepting = PrivacyBudget::with_delta(1.0, 1e-6).unwrap();
        accepting.spend_approximate("pure", 0.5, -0.0).unwrap();
        for delta in [
            budget.delta_limit(),
            budget.ledger()[0].delta,
            accepting.ledger()[0].delta,
        ] {
            // +0, not −0, which prints "-0" in a user's report.
            assert!(delta.is_sign_positive(), "{delta}");
        }
        assert!(!format!("{budget:?}").contains("-0"), "{budget:?}");
    }

    #[test]
    fn spending_exactly_the_limit_is_allowed_and_then_exhausted() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        budget.spend("half", 0.5).unwrap();
        budget.spend("half", 0.5).unwrap();
        assert!(budget.is_exhausted());
        assert_eq!(budget.remaining(), 0.0);
        // +0, not −0 (which equals 0 but prints "-0" in a user's report).
        assert!(budget.remaining().is_sign_positive());
        assert_eq!(format!("{}", budget.remaining()), "0");
        assert!(!budget.can_spend(f64::MIN_POSITIVE));
    }

    #[test]
    fn overspending_is_refused_and_charges_nothing() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        budget.spend("first", 0.75).unwrap();
        let err = budget.spend("second", 0.5).unwrap_err();
        assert_eq!(
            err,
            NoiseError::BudgetExceeded {
                requested: 0.5,
                spent: 0.75,
                limit: 1.0
            }
        );
        assert_eq!(budget.spent(), 0.75);
        assert_eq!(budget.ledger().len(), 1);
        assert!(err.to_string().contains("budget exceeded"));
    }

    #[test]
    fn decimal_epsilons_are_not_under_counted() {
        // Ten times 0.1 (each 0.1000000000000000055…) exceeds 1.0: the tenth is refused.
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        for _ in 0..9 {
            budget.spend("query", 0.1).unwrap();
        }
        assert!(budget.spend("query", 0.1).is_err());
        // Round-to-nearest summation would have under-reported: 0.1 × 10 sums to 0.9999999999999999.
        assert!((0..10).map(|_| 0.1).sum::<f64>() < 1.0);
    }

    #[test]
    fn even_share_fits_exactly() {
        for (limit, spends) in [(1.0, 10), (0.3, 3), (2.0, 7), (1e-3, 1000)] {
            let mut budget = PrivacyBudget::new(limit).unwrap();
            let share = budget.even_share(spends).unwrap();
            assert!(share <= limit / f64::from(spends));
            assert!(share >= limit / f64::from(spends) * (1.0 - 1e-12));
            for _ in 0..spends {
                budget.spend("share", share).unwrap();
            }
            assert!(budget.spend("one more", share).is_err());
        }
        assert_eq!(PrivacyBudget::new(1.0).unwrap().even_share(0), None);
    }

    #[test]
    fn even_share_for_many_spends_fits_and_is_close_to_the_largest() {
        for (limit, spent) in [(1.0, 0.0), (3.0, 1.0), (1e-3, 1e-4)] {
            let mut budget = PrivacyBudget::new(limit).unwrap();
            if spent > 0.0 {
                budget.spend("before", spent).unwrap();
            }
            let spends = 1 << 22;
            let share = budget.even_share(spends).unwrap();
            let replay = (0..spends).fold(budget.spent(), |t, _| add_rounding_up(t, share));
            assert!(replay <= limit, "{replay} > {limit}");
            let ideal = (limit - budget.spent()) / f64::from(spends);
            assert!(share >= ideal * (1.0 - 1e-8), "{share} vs {ideal}");
        }
        // The largest class counts are constant time, not a replay of 4·10⁹ additions.
        let share = PrivacyBudget::new(1.0)
            .unwrap()
            .even_share(u32::MAX)
            .unwrap();
        assert!(share > 0.0 && share <= 1.0 / f64::from(u32::MAX));
    }

    #[test]
    fn even_share_is_the_largest_up_to_the_exact_limit() {
        let budget = PrivacyBudget::new(1.0).unwrap();
        let spends = EXACT_SHARE_SPENDS;
        let share = budget.even_share(spends).unwrap();
        let replay = |s: f64| (0..spends).fold(0.0, |t, _| add_rounding_up(t, s));
        assert!(replay(share) <= 1.0);
        assert!(replay(share.next_up()) > 1.0, "not the largest share");
    }

    #[test]
    fn parallel_composition_charges_the_maximum() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        budget.spend_parallel("folds", &[0.25, 0.5, 0.125]).unwrap();
        assert_eq!(budget.spent(), 0.5);
        assert_eq!(parallel_composition(&[]).unwrap(), 0.0);
        assert!(budget.spend_parallel("too much", &[0.25, 0.75]).is_err());
        assert_eq!(budget.spent(), 0.5);
    }

    #[test]
    fn sequential_composition_sums_rounding_up() {
        assert_eq!(sequential_composition(&[0.5, 0.25]).unwrap(), 0.75);
        assert!(sequential_composition(&[0.1; 10]).unwrap() > 1.0);
        assert_eq!(sequential_composition(&[]).unwrap(), 0.0);
    }

    #[test]
    fn rejects_invalid_limit() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                PrivacyBudget::new(bad),
                Err(NoiseError::InvalidEpsilon(_))
            ));
        }
    }

    #[test]
    fn rejects_invalid_spend() {
        let mut budget = PrivacyBudget::new(1.0).unwrap();
        for bad in [0.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                budget.spend("x", bad),
                Err(NoiseError::InvalidEpsilon(_))
            ));
            assert!(matches!(
                budget.spend_parallel("x", &[0.1, bad]),
                Err(NoiseError::InvalidEpsilon(_))
            ));
            assert!(!budget.can_spend(bad));
        }
        assert!(matches!(
            sequential_composition(&[0.1, -1.0]),
            Err(NoiseError::InvalidEpsilon(_))
        ));
        assert_eq!(budget.spent(), 0.0);
        assert!(budget.ledger().is_empty());
    }
}
