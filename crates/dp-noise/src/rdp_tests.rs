use super::*;

const N: f64 = 30_162.0;
const DELTA: f64 = 1e-5;

/// Opacus 1.6.0 RDP accountant (`opacus.accountants.RDPAccountant`, its
/// `get_privacy_spent` over the orders of [`opacus_orders`]) on five settings at n = 30,162
/// (the table docs/src/mechanisms/approximate-dp.md cites: "Tests reproduce Opacus 1.6.0's
/// accountant"): (q, T, σ) → (ε at δ = 10⁻⁵, best order; 0 where no best order was quoted).
/// These are the values of the Balle et al. 2020 conversion that Opacus' `get_privacy_spent`
/// uses (`rdp − (ln δ + ln α)/(α−1) + ln((α−1)/α)`); the classic conversion gives values
/// 30–45% higher (checked below).
const OPACUS: [(f64, u64, f64, f64, f64); 5] = [
    (256.0 / N, 2356, 15.0, 0.0932, 128.0),
    (1024.0 / N, 589, 15.0, 0.1986, 64.0),
    (256.0 / N, 5891, 2.77, 0.9924, 18.0),
    (256.0 / N, 2356, 10.0, 0.1457, 0.0),
    (256.0 / N, 2356, 20.0, 0.0683, 0.0),
];

fn add_remove(q: f64, sigma: f64, steps: u64, orders: &[f64]) -> RdpCurve {
    RdpCurve::subsampled_gaussian(Neighbouring::AddRemove, q, sigma, steps, orders).unwrap()
}

/// Whether a conversion of a curve reproduces every Opacus value (and its order where
/// one was quoted) to a relative 10⁻³ (the values are quoted to 3–4 digits).
fn matches_opacus(epsilon_of: impl Fn(f64, u64, f64) -> (f64, f64)) -> bool {
    OPACUS.iter().all(|&(q, steps, sigma, expected, order)| {
        let (eps, alpha) = epsilon_of(q, steps, sigma);
        let close = (eps - expected).abs() <= 1e-3 * expected;
        close && (order == 0.0 || alpha == order)
    })
}

#[test]
fn reproduces_the_opacus_reference_values() {
    let orders = opacus_orders();
    assert_eq!(orders.len(), 99 + 52 + 19);
    assert!(matches_opacus(|q, steps, sigma| {
        add_remove(q, sigma, steps, &orders).epsilon(DELTA).unwrap()
    }));
}

/// Mutation check: the classic conversion (the wrong one for these values) must not
/// reproduce them.
#[test]
fn the_classic_conversion_does_not_reproduce_them() {
    let orders = opacus_orders();
    assert!(!matches_opacus(|q, steps, sigma| {
        add_remove(q, sigma, steps, &orders)
            .epsilon_classic(DELTA)
            .unwrap()
    }));
    // And it is never tighter than the refined one.
    for &(q, steps, sigma, ..) in &OPACUS {
        let curve = add_remove(q, sigma, steps, &orders);
        assert!(curve.epsilon_classic(DELTA).unwrap().0 >= curve.epsilon(DELTA).unwrap().0);
    }
}

/// Mutation check: the binomial expansion without its k = 2 term (the leading `q²` term
/// of the subsampled Gaussian) must not reproduce them.
#[test]
fn a_missing_expansion_term_is_caught() {
    let orders = opacus_orders();
    let mutant = |q: f64, steps: u64, sigma: f64| {
        let table = LogFactorials::up_to(8192);
        let values = orders
            .iter()
            .map(|&alpha| {
                let one = if alpha.fract() == 0.0 {
                    let (log_a, _) = log_a_integer(q, sigma, alpha as usize, &table, Some(2));
                    log_a / (alpha - 1.0)
                } else {
                    add_remove_step(q, sigma, alpha, &table)
                };
                one * steps as f64
            })
            .collect();
        RdpCurve {
            relation: Neighbouring::AddRemove,
            orders: orders.clone(),
            values,
        }
        .epsilon(DELTA)
        .unwrap()
    };
    assert!(!matches_opacus(mutant));
}

/// The fractional-order series (MTZ19 §3.3) and the binomial expansion are two forms of
/// the same A_α: at integer orders they must agree.
#[test]
fn the_fractional_series_agrees_with_the_expansion_at_integer_orders() {
    let table = LogFactorials::up_to(1024);
    for &(q, sigma) in &[(0.01, 1.0), (256.0 / N, 15.0), (0.1, 2.77), (0.5, 0.8)] {
        for alpha in [2usize, 3, 7, 18, 64, 200] {
            let (series, _) = log_a_fractional(q, sigma, alpha as f64);
            let (expansion, _) = log_a_integer(q, sigma, alpha, &table, None);
            assert!(
                (series - expansion).abs() <= 1e-9 * (1.0 + expansion.abs()),
                "q {q} sigma {sigma} alpha {alpha}: {series} vs {expansion}"
            );
        }
    }
}

/// q = 1 is the Gaussian mechanism, whose RDP is exactly `α/(2σ²)` per step for
/// sensitivity 1 (add/remove) and `α·2²/(2σ²)` for sensitivity 2 (replace-one).
#[test]
fn full_batch_is_the_gaussian_exactly() {
    let orders = opacus_orders();
    let (sigma, steps) = (3.0, 7);
    let add = add_remove(1.0, sigma, steps, &orders);
    for (&alpha, &r) in add.orders().iter().zip(add.values()) {
        let exact = steps as f64 * alpha / (2.0 * sigma * sigma);
        assert!(
            r >= exact && r <= exact * (1.0 + 1e-14),
            "{alpha}: {r} vs {exact}"
        );
    }
    let orders = default_orders();
    let replace =
        RdpCurve::subsampled_gaussian(Neighbouring::ReplaceOne, 1.0, sigma, steps, &orders)
            .unwrap();
    for (&alpha, &r) in replace.orders().iter().zip(replace.values()) {
        let exact = steps as f64 * alpha * 4.0 / (2.0 * sigma * sigma);
        assert!(
            r >= exact && r <= exact * (1.0 + 1e-14),
            "{alpha}: {r} vs {exact}"
        );
    }
}

/// Close to q = 1 the subsampled curve approaches the Gaussian's from below.
#[test]
fn the_subsampled_curve_approaches_the_gaussian() {
    let orders = [2.0, 5.0, 32.0];
    let curve = add_remove(1.0 - 1e-9, 2.0, 1, &orders);
    for (&alpha, &r) in orders.iter().zip(curve.values()) {
        let gaussian = alpha / 8.0;
        assert!((r - gaussian).abs() <= 1e-6 * gaussian, "{alpha}: {r}");
    }
}

#[test]
fn epsilon_grows_with_q_and_steps_and_falls_with_sigma() {
    let orders = default_orders();
    for relation in [Neighbouring::AddRemove, Neighbouring::ReplaceOne] {
        let eps = |q: f64, sigma: f64, steps: u64| {
            RdpCurve::subsampled_gaussian(relation, q, sigma, steps, &orders)
                .unwrap()
                .epsilon(DELTA)
                .unwrap()
                .0
        };
        let qs = [0.001, 0.01, 0.05, 0.2, 1.0];
        for pair in qs.windows(2) {
            assert!(eps(pair[0], 4.0, 100) < eps(pair[1], 4.0, 100));
        }
        let sigmas = [0.7, 1.0, 2.0, 5.0, 20.0];
        for pair in sigmas.windows(2) {
            assert!(eps(0.01, pair[0], 100) > eps(0.01, pair[1], 100));
        }
        let steps = [1, 10, 100, 1000];
        for pair in steps.windows(2) {
            assert!(eps(0.01, 4.0, pair[0]) < eps(0.01, 4.0, pair[1]));
        }
    }
}

/// Replace-one costs more than add/remove, and never more than the unsubsampled Gaussian
/// with sensitivity 2 (`2α/σ²` per step).
#[test]
fn replace_one_lies_between_add_remove_and_the_gaussian() {
    let orders = default_orders();
    for &(q, sigma, steps) in &[(256.0 / N, 15.0, 2356), (0.05, 1.0, 50), (0.3, 0.6, 3)] {
        let add = add_remove(q, sigma, steps, &orders);
        let replace =
            RdpCurve::subsampled_gaussian(Neighbouring::ReplaceOne, q, sigma, steps, &orders)
                .unwrap();
        let points = orders.iter().zip(replace.values()).zip(add.values());
        for ((&alpha, &replaced), &added) in points {
            let gaussian = steps as f64 * 2.0 * alpha / (sigma * sigma);
            assert!(replaced > added);
            assert!(replaced <= gaussian * (1.0 + 1e-12));
        }
    }
}

/// A zCDP curve converts to at least the CKS20 optimum over all real α (the grid can only
/// cost tightness) and to within a few percent of it.
#[test]
fn zcdp_curves_convert_close_to_the_exact_zcdp_conversion() {
    for rho in [1e-4, 0.01, 0.5] {
        let zcdp = Zcdp::new(rho).unwrap();
        let exact = zcdp.epsilon(DELTA).unwrap();
        let grid = RdpCurve::from_zcdp(zcdp, &default_orders())
            .unwrap()
            .epsilon(DELTA)
            .unwrap()
            .0;
        assert!(grid >= exact * (1.0 - 1e-12), "{rho}: {grid} < {exact}");
        assert!(grid <= exact * 1.05, "{rho}: {grid} vs {exact}");
    }
}

#[test]
fn the_accountant_composes_dpsgd_and_gaussian_fits_and_refuses_overspending() {
    let mut budget = RdpAccountant::new(1.0, DELTA).unwrap();
    assert_eq!(budget.spent_epsilon(), 0.0);
    let orders = budget.orders().to_vec();
    let sgd =
        RdpCurve::subsampled_gaussian(Neighbouring::ReplaceOne, 0.01, 3.0, 200, &orders).unwrap();
    let alone = sgd.epsilon(DELTA).unwrap().0;
    budget.spend("dp-sgd", &sgd).unwrap();
    assert_eq!(budget.spent_epsilon(), alone);
    let gaussian = Zcdp::new(0.001).unwrap();
    budget.spend_zcdp("output perturbation", gaussian).unwrap();
    let both = budget.spent_epsilon();
    // The composed ε is the conversion of the summed curve: more than either part, less
    // than the sum of the two ε (RDP composes tighter than (ε, δ) points).
    let zcdp_alone = RdpCurve::from_zcdp(gaussian, &orders)
        .unwrap()
        .epsilon(DELTA)
        .unwrap()
        .0;
    assert!(both > alone && both > zcdp_alone && both < alone + zcdp_alone);
    assert_eq!(budget.ledger(), ["dp-sgd", "output perturbation"]);
    // A spend past the target is refused, and nothing is charged.
    let before = budget.curve().clone();
    let longer =
        RdpCurve::subsampled_gaussian(Neighbouring::ReplaceOne, 0.01, 3.0, 2000, &orders).unwrap();
    let err = budget.spend("too much", &longer).unwrap_err();
    assert!(matches!(err, NoiseError::BudgetExceeded { limit, .. } if limit == 1.0));
    assert_eq!(budget.curve(), &before);
    assert_eq!(budget.ledger().len(), 2);
    // Add/remove curves and other grids are refused.
    let add =
        RdpCurve::subsampled_gaussian(Neighbouring::AddRemove, 0.01, 3.0, 1, &orders).unwrap();
    assert!(budget.spend("add/remove", &add).is_err());
    let other = RdpCurve::from_zcdp(gaussian, &[2.0, 3.0]).unwrap();
    assert!(budget.spend("other grid", &other).is_err());
    assert_eq!(budget.ledger().len(), 2);
}

#[test]
fn the_smallest_noise_multiplier_meets_the_target_and_no_less_does() {
    let orders = default_orders();
    for &(q, steps, epsilon) in &[(256.0 / N, 2356, 0.1), (0.05, 100, 1.0), (1.0, 10, 0.5)] {
        let relation = Neighbouring::ReplaceOne;
        let sigma = smallest_noise_multiplier(relation, q, steps, epsilon, DELTA, &orders).unwrap();
        let at = |s: f64| {
            RdpCurve::subsampled_gaussian(relation, q, s, steps, &orders)
                .unwrap()
                .epsilon(DELTA)
                .unwrap()
                .0
        };
        assert!(at(sigma) <= epsilon, "{q} {steps} {epsilon}: sigma {sigma}");
        assert!(at(sigma * (1.0 - 1e-6)) > epsilon);
    }
}

#[test]
fn bad_parameters_are_refused_naming_them() {
    let orders = default_orders();
    let relation = Neighbouring::ReplaceOne;
    let message = |e: NoiseError| e.to_string();
    for q in [0.0, -0.1, 1.5, f64::NAN] {
        let e = RdpCurve::subsampled_gaussian(relation, q, 1.0, 1, &orders).unwrap_err();
        assert!(message(e).contains("sampling rate q"));
    }
    for sigma in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        let e = RdpCurve::subsampled_gaussian(relation, 0.1, sigma, 1, &orders).unwrap_err();
        assert!(matches!(e, NoiseError::InvalidScale(_)));
    }
    for steps in [0, MAX_STEPS + 1] {
        let e = RdpCurve::subsampled_gaussian(relation, 0.1, 1.0, steps, &orders).unwrap_err();
        assert!(message(e).contains("steps"));
    }
    for bad in [vec![], vec![1.0], vec![f64::NAN], vec![2.5], vec![1e6]] {
        let e = RdpCurve::subsampled_gaussian(relation, 0.1, 1.0, 1, &bad).unwrap_err();
        assert!(message(e).contains("order"), "{bad:?}");
    }
    // Fractional orders are fine for add/remove.
    assert!(RdpCurve::subsampled_gaussian(Neighbouring::AddRemove, 0.1, 1.0, 1, &[2.5]).is_ok());
    let curve = RdpCurve::subsampled_gaussian(relation, 0.1, 1.0, 1, &orders).unwrap();
    for delta in [0.0, 1.0, f64::NAN, -1e-5] {
        assert!(matches!(
            curve.epsilon(delta),
            Err(NoiseError::InvalidDelta(_))
        ));
    }
    assert!(RdpAccountant::new(0.0, DELTA).is_err());
    assert!(RdpAccountant::new(1.0, 0.0).is_err());
    assert!(smallest_noise_multiplier(relation, 0.1, 10, f64::NAN, DELTA, &orders).is_err());
}

/// δ = 1 − 2⁻⁵³ (or 0.5) was a valid target for every accountant, conversion and budget
/// here (anything below 1 was): one range for δ now, `(0, MAX_DELTA]` (`[0, MAX_DELTA]`
/// for a budget's limit, 0 making it pure), refused naming δ.
#[test]
fn rejects_a_delta_above_max_delta_everywhere() {
    let orders = default_orders();
    let curve = add_remove(0.01, 1.0, 100, &orders);
    let gaussian = Zcdp::new(0.1).unwrap();
    for delta in [1.0 - f64::EPSILON / 2.0, 0.5, crate::MAX_DELTA.next_up()] {
        let refusals = [
            curve.epsilon(delta).map(drop),
            curve.epsilon_classic(delta).map(drop),
            RdpAccountant::new(1.0, delta).map(drop),
            smallest_noise_multiplier(Neighbouring::ReplaceOne, 0.01, 100, 1.0, delta, &orders)
                .map(drop),
            gaussian.epsilon(delta).map(drop),
            Zcdp::largest_for(1.0, delta).map(drop),
            crate::ZcdpBudget::new(1.0, delta).map(drop),
            crate::PrivacyBudget::with_delta(1.0, delta).map(drop),
        ];
        for refusal in refusals {
            let err = refusal.unwrap_err();
            assert_eq!(err, NoiseError::InvalidDelta(delta));
            assert!(err.to_string().contains("MAX_DELTA = 0.1"), "{err}");
        }
    }
    let max = crate::MAX_DELTA;
    assert!(curve.epsilon(max).is_ok() && RdpAccountant::new(1.0, max).is_ok());
    assert!(crate::PrivacyBudget::with_delta(1.0, max).is_ok());
    assert!(crate::PrivacyBudget::with_delta(1.0, 0.0).is_ok());
}

/// One add/remove step's RDP at fractional orders, (q, σ, α, value), by
/// `crates/dp-noise/testdata/rdp_fractional.py`: mpmath at 40 digits, by direct numerical
/// integration of A_α's definition (not the series this module sums), cross-checked there
/// against Opacus' `_compute_log_a_frac` series in high precision.
const FRACTIONAL_REFERENCE: [(f64, f64, f64, f64); 25] = [
    (0.01, 1.0, 1.25, 0.00010539800509817623),
    (0.01, 1.0, 1.5, 0.00012725374332744983),
    (0.01, 1.0, 1.75, 0.0001493888472003151),
    (0.01, 1.0, 2.5, 0.00021757533228188047),
    (0.01, 1.0, 3.5, 0.00031311663858379343),
    (0.25, 1.5, 1.25, 0.019941922230316753),
    (0.25, 1.5, 1.5, 0.02451291846596866),
    (0.25, 1.5, 1.75, 0.029318037359376187),
    (0.25, 1.5, 2.5, 0.04536651408452775),
    (0.25, 1.5, 3.5, 0.07171917576241714),
    (0.1, 0.8, 1.25, 0.01803867072670547),
    (0.1, 0.8, 1.5, 0.023305046249858827),
    (0.1, 0.8, 1.75, 0.029520687928979876),
    (0.1, 0.8, 2.5, 0.058087571083751344),
    (0.1, 0.8, 3.5, 0.17062506553777265),
    (0.5, 3.0, 1.25, 0.01772035790144986),
    (0.5, 3.0, 1.5, 0.021413356320631908),
    (0.5, 3.0, 1.75, 0.02515836823699755),
    (0.5, 3.0, 2.5, 0.03671618856819223),
    (0.5, 3.0, 3.5, 0.05292157820673818),
    (0.008487500828857502, 2.77, 1.25, 6.26163009230672e-06),
    (0.008487500828857502, 2.77, 1.5, 7.516252971683922e-06),
    (0.008487500828857502, 2.77, 1.75, 8.77164373258177e-06),
    (0.008487500828857502, 2.77, 2.5, 1.2542433044857124e-05),
    (0.008487500828857502, 2.77, 3.5, 1.7580961729090067e-05),
];

/// The fractional orders' values were raised by a margin on the largest magnitude met in
/// the series (up to 10⁶-fold near α = 1) or were ∞: now each is an upper bound within a
/// relative 10⁻⁶ of the independent evaluation (the series stops where what it drops is
/// ≤ 0; what remains is the bound on erfc's and the logs' rounding, about 10⁻¹² of A,
/// which is 10⁻⁷ of ln A where A is within 10⁻⁵ of 1).
#[test]
fn fractional_orders_are_tight_upper_bounds_of_an_independent_evaluation() {
    let mut worst = 0.0f64;
    for &(q, sigma, alpha, reference) in &FRACTIONAL_REFERENCE {
        let value = add_remove(q, sigma, 1, &[alpha]).values()[0];
        assert!(
            value >= reference && value <= reference * (1.0 + 1e-6),
            "q {q} σ {sigma} α {alpha}: {value:?} against {reference:?}"
        );
        worst = worst.max(value / reference - 1.0);
    }
    eprintln!("largest relative excess over the reference: {worst:e}");
}

/// Over Opacus' orders (fractional ones included), one step at q = 1/4, σ = 1.5 converts
/// to the ε that `rdp_fractional.py` computes from its independent values over the same
/// orders up to 63 (the larger ones only raise ε): 1.5969793674999142 at order 8.5.
#[test]
fn opacus_orders_give_the_independent_epsilon() {
    let (epsilon, order) = add_remove(0.25, 1.5, 1, &opacus_orders())
        .epsilon(DELTA)
        .unwrap();
    let reference = 1.5969793674999142;
    assert!(
        epsilon >= reference && epsilon <= reference * (1.0 + 1e-9),
        "{epsilon:?} at {order:?}"
    );
    assert_eq!(order, 8.5);
}
