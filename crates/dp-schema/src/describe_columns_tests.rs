use std::collections::BTreeMap;

use dp_noise::InsecureSeededRng;

use super::super::{
    DescribeColumn, DescribeError, DescribeKind, DescribePlan, DescribeSpec, Describer,
};
use super::Released;
use crate::encode::Cell;
use crate::{CsvFormat, NumericMissing};

fn csv_format() -> CsvFormat {
    CsvFormat {
        header: true,
        delimiter: ',',
        comment: None,
        trim: true,
        missing: vec![],
    }
}

fn numeric(name: &str) -> DescribeColumn {
    DescribeColumn {
        name: name.into(),
        kind: DescribeKind::Numeric {
            missing: NumericMissing::Error,
        },
    }
}

fn categorical(name: &str, candidates: Option<&[&str]>) -> DescribeColumn {
    DescribeColumn {
        name: name.into(),
        kind: DescribeKind::Categorical {
            candidates: candidates.map(|c| c.iter().map(|s| s.to_string()).collect()),
        },
    }
}

fn label(classes: Option<&[&str]>) -> DescribeColumn {
    DescribeColumn {
        name: "y".into(),
        kind: DescribeKind::Label {
            positive: "yes".into(),
            classes: classes.map(|c| c.iter().map(|s| s.to_string()).collect()),
            aliases: BTreeMap::new(),
        },
    }
}

const COLOURS: &[&str] = &["red", "blue", "green", "mauve", "teal"];

/// `n` records: ages 20..80, colours with "mauve" held by 1 record in 1000 ("teal" by
/// none), labels yes/no. The cells of column `k` of record `i`, for the spec's columns.
fn cell(spec: &DescribeSpec, i: usize, k: usize) -> Cell<'static> {
    match spec.columns[k].name.as_str() {
        "age" => Cell::Number(20.0 + (i % 61) as f64),
        "colour" => Cell::Text(
            match i % 10 {
                0..=5 => "red",
                6..=8 => "blue",
                _ if i % 1000 == 9 => "mauve",
                _ => "green",
            }
            .as_bytes(),
        ),
        "y" => Cell::Text(if i.is_multiple_of(3) { b"yes" } else { b"no" }),
        _ => Cell::Null,
    }
}

fn counted(plan: &DescribePlan, n: usize) -> Describer<'_> {
    let mut describer = plan.describer();
    for i in 0..n {
        describer
            .add_record(|k| cell(plan.spec(), i, k))
            .expect("good cells");
    }
    describer
}

fn refusal(result: Result<DescribePlan, DescribeError>) -> String {
    match result {
        Err(DescribeError::Refused(why)) => why,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn columns_release_the_same_facts_as_the_labelled_recipe() {
    let features = vec![numeric("age"), categorical("colour", Some(COLOURS))];
    let columns_plan =
        DescribePlan::columns(DescribeSpec::new(features.clone(), csv_format(), 1.0, 0.0)).unwrap();
    let mut labelled = features;
    labelled.push(label(Some(&["no", "yes"])));
    let labelled_plan =
        DescribePlan::new(DescribeSpec::new(labelled, csv_format(), 1.0, 0.0)).unwrap();
    assert_eq!(columns_plan.charge(), labelled_plan.charge());
    assert_eq!(columns_plan.shares(), labelled_plan.shares());
    assert!(!columns_plan.is_labelled() && labelled_plan.is_labelled());
    for seed in [1, 2, 3] {
        let released = counted(&columns_plan, 5_000)
            .release_columns(&mut InsecureSeededRng::new(seed))
            .unwrap();
        let described = counted(&labelled_plan, 5_000)
            .release(&mut InsecureSeededRng::new(seed))
            .unwrap();
        assert_eq!(released.facts, described.facts, "seed {seed}");
        assert_eq!(released.rows, 5_000);
        assert_eq!((released.epsilon, released.delta), (1.0, 0.0));
        let Released::Bounds { lower, upper } = released.columns[0].1 else {
            panic!("age has bounds: {released:?}");
        };
        let crate::ColumnKind::Numeric {
            lower: l, upper: u, ..
        } = described.schema.columns[0].kind
        else {
            panic!("age is numeric");
        };
        assert_eq!((lower, upper), (l, u));
    }
}

#[test]
fn a_rare_level_is_not_released_and_the_seed_fixes_the_release() {
    let spec = DescribeSpec::new(
        vec![categorical("colour", Some(COLOURS)), numeric("age")],
        csv_format(),
        2.0,
        0.0,
    );
    let plan = DescribePlan::columns(spec).unwrap();
    let run = |seed| {
        counted(&plan, 10_000)
            .release_columns(&mut InsecureSeededRng::new(seed))
            .unwrap()
    };
    let first = run(9);
    assert_eq!(first, run(9));
    // "mauve" (10 records) and "teal" (none) stay below the threshold; the candidates'
    // order is kept.
    assert_eq!(
        first.columns[0].1,
        Released::Levels(vec!["red".into(), "blue".into(), "green".into()])
    );
    assert_eq!(first.facts.len(), 2);
    assert!(first.facts.iter().all(|f| f.epsilon == 1.0f64.next_down()));
}

#[test]
fn levels_without_a_list_need_delta_and_spend_it() {
    let spec = |delta| {
        DescribeSpec::new(
            vec![categorical("colour", None), numeric("age")],
            csv_format(),
            1.0,
            delta,
        )
    };
    let why = refusal(DescribePlan::columns(spec(0.0)));
    assert!(why.contains("delta = 0") && why.contains("colour"), "{why}");
    let plan = DescribePlan::columns(spec(1e-6)).unwrap();
    assert_eq!(plan.charge(), (1.0, 1e-6));
    let released = counted(&plan, 10_000)
        .release_columns(&mut InsecureSeededRng::new(4))
        .unwrap();
    let Released::Levels(levels) = &released.columns[0].1 else {
        panic!("colour has levels: {released:?}");
    };
    assert!(!levels.iter().any(|l| l == "mauve"), "{levels:?}");
    assert_eq!(released.delta, 1e-6);
}

#[test]
fn a_column_only_plan_refuses_a_label_and_the_wrong_release() {
    let with_label = DescribeSpec::new(
        vec![numeric("age"), label(Some(&["no", "yes"]))],
        csv_format(),
        1.0,
        0.0,
    );
    let why = refusal(DescribePlan::columns(with_label.clone()));
    assert!(
        why.contains("column y") && why.contains("no label"),
        "{why}"
    );
    // The labelled recipe still requires its label.
    let no_label = DescribeSpec::new(vec![numeric("age")], csv_format(), 1.0, 0.0);
    assert!(refusal(DescribePlan::new(no_label.clone())).contains("no label column"));
    let ignored_only = DescribeSpec::new(
        vec![DescribeColumn {
            name: "note".into(),
            kind: DescribeKind::Ignore,
        }],
        csv_format(),
        1.0,
        0.0,
    );
    assert!(refusal(DescribePlan::columns(ignored_only)).contains("no feature column"));
    // Each release is refused, before any draw, on the other kind of plan and on no rows.
    let columns_plan = DescribePlan::columns(no_label).unwrap();
    let labelled_plan = DescribePlan::new(with_label).unwrap();
    let mut rng = InsecureSeededRng::new(1);
    assert!(matches!(
        counted(&columns_plan, 10).release(&mut rng),
        Err(DescribeError::Refused(why)) if why.contains("release_columns")
    ));
    assert!(matches!(
        counted(&labelled_plan, 10).release_columns(&mut rng),
        Err(DescribeError::Refused(why)) if why.contains("DescribePlan::columns")
    ));
    assert!(matches!(
        columns_plan.describer().release_columns(&mut rng),
        Err(DescribeError::Refused(why)) if why.contains("no data rows")
    ));
}
