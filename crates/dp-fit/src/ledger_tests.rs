use super::*;

#[test]
fn spends_add_up_exactly_and_report_in_the_safe_direction() {
    let mut eighths = Ledger::new("d", 1.0, 0.0).unwrap();
    for _ in 0..8 {
        eighths
            .record("l", Spend::new(0.125, 0.0, "t", "m"))
            .unwrap();
    }
    assert_eq!(eighths.spent(), 1.0);
    assert_eq!(eighths.remaining(), 0.0);
    let mut tenths = Ledger::new("d", 1.0, 0.0).unwrap();
    for _ in 0..9 {
        tenths.record("l", Spend::new(0.1, 0.0, "t", "m")).unwrap();
    }
    // The double 0.1 is 0.1000000000000000055…: ten such spends exceed 1 in the reals, and
    // a ledger that rounded to nearest would accept the tenth.
    let err = tenths
        .record("l", Spend::new(0.1, 0.0, "t", "m"))
        .unwrap_err();
    assert!(matches!(err, LedgerError::Exceeded(_)), "{err}");
    assert!(
        err.to_string().contains("would bring the total spent to"),
        "{err}"
    );
    assert_eq!(tenths.spends.len(), 9);
    // What is left is rounded down: it never invites a spend that would not fit.
    let left = tenths.remaining();
    assert!(tenths.check_spend("l", left, 0.0).is_ok());
    assert!(tenths.check_spend("l", left * (1.0 + 1e-12), 0.0).is_err());
}

#[test]
fn a_pure_epsilon_ledger_refuses_any_delta_and_deltas_add_up() {
    let mut pure = Ledger::new("d", 2.0, 0.0).unwrap();
    let err = pure
        .record("l", Spend::new(0.5, 1e-9, "t", "m"))
        .unwrap_err();
    assert!(err.to_string().contains("is pure ε (no total δ)"), "{err}");
    assert!(pure.spends.is_empty());
    let mut approximate = Ledger::new("d", 2.0, 2e-6).unwrap();
    approximate
        .record("l", Spend::new(0.5, 1e-6, "t", "m"))
        .unwrap();
    approximate
        .record("l", Spend::new(0.5, 1e-6, "t", "m"))
        .unwrap();
    let err = approximate
        .record("l", Spend::new(0.5, 1e-6, "t", "m"))
        .unwrap_err();
    assert!(err.to_string().contains("total δ spent"), "{err}");
    assert!(approximate.spent_delta() >= 2e-6);
}

#[test]
fn spends_are_numbered_and_refunds_never_reuse_a_number() {
    let mut l = Ledger::new("d", 5.0, 0.0).unwrap();
    let first = l.record("l", Spend::new(1.0, 0.0, "t", "a")).unwrap();
    let second = l.record("l", Spend::new(1.0, 0.0, "t", "b")).unwrap();
    assert_eq!((first, second), (1, 2));
    assert_eq!(l.refund("l", second).unwrap().model, "b");
    assert!(matches!(
        l.refund("l", second),
        Err(LedgerError::UnknownSpend { sequence: 2, .. })
    ));
    assert_eq!(l.record("l", Spend::new(1.0, 0.0, "t", "c")).unwrap(), 3);
    let reports = vec![
        ("a.dpm".to_owned(), 1),
        ("c.dpm".to_owned(), 3),
        ("x.dpm".to_owned(), 4),
    ];
    assert_eq!(l.missing(&reports), vec![&("x.dpm".to_owned(), 4)]);
    // Restored from a copy that predates spend 3: its report names what is missing.
    let mut restored = l.clone();
    restored.spends.pop();
    assert_eq!(restored.missing(&reports).len(), 2);
}

#[test]
fn identities_are_random_and_a_ledger_from_before_them_loads() {
    let a = Ledger::new("d", 1.0, 0.0).unwrap();
    let b = Ledger::new("d", 1.0, 0.0).unwrap();
    assert_ne!(a.id, b.id);
    assert_eq!(a.id.as_ref().unwrap().len(), 32);
    let old = r#"{"format": "dpml-ledger/1", "dataset": "adult", "total_epsilon": 2.0,
        "spends": [{"epsilon": 0.5, "command": "train", "model": "m.dpm",
                    "schema_sha256": "{}", "time_unix": 1}]}"#
        .replace("{}", &"ab".repeat(32));
    let mut old: Ledger = serde_json::from_str(&old).unwrap();
    old = old.check("old").unwrap();
    assert_eq!((old.id.clone(), old.next_sequence), (None, 0));
    old.ensure_identity().unwrap();
    assert!(old.id.is_some());
    assert_eq!(old.record("l", Spend::new(0.5, 0.0, "t", "m")).unwrap(), 1);
}

#[test]
fn corrupt_ledgers_are_named() {
    let good = Ledger::new("d", 1.0, 0.0).unwrap();
    let mut cases: Vec<(Ledger, &str)> = Vec::new();
    let mut l = good.clone();
    l.total_epsilon = -5.0;
    cases.push((l, "total_epsilon = -5"));
    let mut l = good.clone();
    l.format = "dpml-ledger/0".into();
    cases.push((l, "format"));
    let mut l = good.clone();
    l.spends.push(Spend::new(2.0, 0.0, "t", "m"));
    cases.push((l, "above its total_epsilon"));
    let mut l = good.clone();
    l.record("l", Spend::new(0.1, 0.0, "t", "m")).unwrap();
    l.record("l", Spend::new(0.1, 0.0, "t", "m")).unwrap();
    l.spends[1].sequence = Some(1);
    cases.push((l, "repeated"));
    let mut l = good.clone();
    l.spends.push(Spend::new(f64::NAN, 0.0, "t", "m"));
    cases.push((l, "not a finite ε"));
    // A schema hash must be one (`dpml ledger show` prints its start).
    for hash in [
        "ab".to_owned(),
        "é".repeat(32),
        "AB".repeat(32),
        "g".repeat(64),
    ] {
        let mut l = good.clone();
        l.spends.push(Spend {
            schema_sha256: hash,
            ..Spend::new(0.1, 0.0, "t", "m")
        });
        cases.push((l, "schema_sha256 is not a schema hash"));
    }
    for (ledger, pattern) in cases {
        let err = ledger.check("f").unwrap_err().to_string();
        assert!(err.contains("is corrupt") && err.contains(pattern), "{err}");
    }
}

#[test]
fn bad_totals_and_spends_are_refused_by_name() {
    for (epsilon, delta) in [
        (0.0, 0.0),
        (f64::INFINITY, 0.0),
        (f64::NAN, 0.0),
        (1.0, 1.0),
        (1.0, -1e-9),
    ] {
        assert!(matches!(
            Ledger::new("d", epsilon, delta),
            Err(LedgerError::InvalidAmount { .. })
        ));
    }
    let l = Ledger::new("d", 1.0, 0.0).unwrap();
    assert!(matches!(
        l.check_spend("l", f64::NAN, 0.0),
        Err(LedgerError::InvalidAmount { .. })
    ));
}
