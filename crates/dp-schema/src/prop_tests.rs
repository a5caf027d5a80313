//! For any values a schema accepts, every encoded row lies in the unit ball and has group
//! norm ≤ 1 — checked by dp-erm's own training-set and group-norm checks, not by the
//! encoder's arithmetic.

use proptest::prelude::*;

use crate::{Cell, Encoder, Schema};

/// A schema with `numeric` numeric columns (bounds from `bounds`), categorical columns of
/// the given level counts and policies, and a label.
fn schema(
    bounds: &[(f64, f64)],
    levels: &[(usize, u8)],
    unit_norm: bool,
    intercept: bool,
) -> Schema {
    let mut text = format!(
        "version = 1\nrow_scaling = \"{}\"\nintercept = {intercept}\n[csv]\nmissing = [\"?\"]\n",
        if unit_norm { "unit_norm" } else { "attributes" }
    );
    for (i, (lo, width)) in bounds.iter().enumerate() {
        text += &format!(
            "[[columns]]\nname = \"n{i}\"\ntype = \"numeric\"\nlower = {lo:?}\nupper = {:?}\nmissing = \"zero\"\n",
            lo + width
        );
    }
    for (i, (count, policy)) in levels.iter().enumerate() {
        let names: Vec<String> = (0..*count).map(|k| format!("\"l{k}\"")).collect();
        let (unseen, missing) = match policy % 3 {
            0 => ("error", "error"),
            1 => ("ignore", "zero"),
            _ => ("other", "level"),
        };
        text += &format!(
            "[[columns]]\nname = \"c{i}\"\ntype = \"categorical\"\nlevels = [{}]\nunseen = \"{unseen}\"\nmissing = \"{missing}\"\n",
            names.join(", ")
        );
    }
    text +=
        "[[columns]]\nname = \"y\"\ntype = \"label\"\nclasses = [\"a\", \"b\"]\npositive = \"b\"\n";
    Schema::from_toml(&text, "prop.toml").unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn every_accepted_row_is_in_the_unit_ball_with_group_norm_at_most_one(
        bounds in prop::collection::vec((-1e6f64..1e6, 1e-3f64..1e12), 0..6),
        levels in prop::collection::vec((1usize..40, 0u8..3), 0..6),
        unit_norm in any::<bool>(),
        intercept in any::<bool>(),
        values in prop::collection::vec(prop_oneof![
            any::<f64>().prop_filter("finite", |v| v.is_finite()).prop_map(|v| v.to_string()),
            (-2e12f64..2e12).prop_map(|v| v.to_string()),
            Just("?".to_string()),
        ], 6),
        picks in prop::collection::vec(0usize..45, 6),
        rows in 1usize..4,
    ) {
        prop_assume!(!bounds.is_empty() || !levels.is_empty());
        let schema = schema(&bounds, &levels, unit_norm, intercept);
        let encoder = Encoder::new(&schema);
        let mut encoded = Vec::new();
        for r in 0..rows {
            let cells: Vec<String> = schema.columns.iter().enumerate().map(|(k, _)| {
                if k < bounds.len() {
                    values[(k + r) % values.len()].clone()
                } else if k < bounds.len() + levels.len() {
                    let (count, policy) = levels[k - bounds.len()];
                    let pick = picks[(k + r) % picks.len()];
                    // Under "error" only declared levels are accepted.
                    if policy % 3 == 0 { format!("l{}", pick % count) }
                    else if pick % 7 == 0 { "?".into() }
                    else { format!("l{pick}") }
                } else {
                    "a".into()
                }
            }).collect();
            let (row, label) = encoder
                .encode(true, |k| Cell::Text(cells[k].as_bytes()))
                .map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
            prop_assert_eq!(label, Some(-1.0));
            let group_norm = encoder.groups().sparse_norm(&row).unwrap();
            prop_assert!(group_norm <= 1.0, "group norm {}", group_norm);
            encoded.push(row);
        }
        let n = encoded.len();
        let data = dp_erm::TrainingSet::builder(encoder.features())
            .sparse_rows(encoded)
            .labels(vec![-1.0; n])
            .build();
        // dp-erm's own check: every row's computed norm ≤ 1, every value finite.
        let data = data.map_err(|e| TestCaseError::fail(e.to_string()))?;
        data.check_group_norms(encoder.groups())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
    }
}
