use std::collections::BTreeMap;
use std::io::Write;

use dp_noise::InsecureSeededRng;

use super::test_columns::csv_format;
use super::*;
use crate::{ColumnKind, describe_file};

fn columns(candidates: Option<Vec<String>>, classes: Option<Vec<String>>) -> Vec<DescribeColumn> {
    super::test_columns::columns(NumericMissing::Error, candidates, classes)
}

/// A CSV of `n` rows: ages 20..80, three colours (one rare), labels yes/no; `extreme`
/// replaces the first age.
fn write_csv(
    dir: &std::path::Path,
    name: &str,
    n: usize,
    extreme: Option<f64>,
) -> std::path::PathBuf {
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "age,colour,note,y").unwrap();
    for i in 0..n {
        let age = match (i, extreme) {
            (0, Some(x)) => x,
            _ => 20.0 + (i % 61) as f64,
        };
        let colour = match i % 10 {
            0..=5 => "red",
            6..=8 => "blue",
            _ if i % 1000 == 9 => "mauve",
            _ => "green",
        };
        let y = if i % 3 == 0 { "yes." } else { "no" };
        writeln!(f, "{age}, {colour},x{i},{y}").unwrap();
    }
    path
}

fn spec(epsilon: f64, delta: f64) -> DescribeSpec {
    DescribeSpec::new(columns(None, None), csv_format(), epsilon, delta)
}

#[test]
fn describes_a_file_into_an_annotated_readable_schema() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_csv(dir.path(), "d.csv", 20_000, None);
    let plan = DescribePlan::new(spec(3.0, 1e-6)).unwrap();
    assert_eq!(plan.charge(), (3.0, 1e-6));
    let (each, delta_each) = plan.shares();
    assert!(3.0 * each <= 3.0 && each > 0.999 && 2.0 * delta_each <= 1e-6);
    let describer = describe_file(&data, &plan, &mut |_, _| {}).unwrap();
    assert_eq!(describer.rows(), 20_000);
    let d = describer.release(&mut InsecureSeededRng::new(7)).unwrap();
    // Readable by dp-schema exactly as written.
    let again = Schema::from_toml(&d.text, "again").unwrap();
    assert_eq!(again, d.schema);
    assert_eq!(d.facts.len(), 3);
    let ColumnKind::Numeric { lower, upper, .. } = d.schema.columns[0].kind else {
        panic!("age is numeric: {}", d.text);
    };
    // Power-of-two cells holding the ages 20..80.
    assert!((8.0..=20.0).contains(&lower), "{lower}");
    assert!((80.0..=128.0).contains(&upper), "{upper}");
    let ColumnKind::Categorical { levels, unseen, .. } = &d.schema.columns[1].kind else {
        panic!("colour is categorical");
    };
    // Ordered; the rare level (20 records) is far below the threshold.
    assert_eq!(levels, &["blue", "green", "red"]);
    assert_eq!(*unseen, crate::Unseen::Other);
    let ColumnKind::Label {
        classes, positive, ..
    } = &d.schema.columns[3].kind
    else {
        panic!("y is the label");
    };
    // The alias was counted as its class; the written alias maps it.
    assert_eq!(classes, &["no", "yes"]);
    assert_eq!(positive, "yes");
    // Annotated with the mechanism and the spend.
    assert!(
        d.text
            .contains("# private release (bounds): bounds: noisy signed power-of-two")
    );
    assert!(d.text.contains("stability-based histogram"));
    assert!(
        d.text
            .contains(&format!("epsilon = {each:?}, delta = {delta_each:?}"))
    );
    assert!(d.text.contains("spent epsilon = 3.0, delta = 1e-6 in all"));
    // The written schema encodes the file.
    let encoder = crate::Encoder::new(&d.schema);
    let set = crate::read_training_set(&data, &d.schema, &encoder, &mut |_, _| {}).unwrap();
    assert_eq!(set.len(), 20_000);
}

#[test]
fn the_same_seed_gives_the_same_schema() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_csv(dir.path(), "d.csv", 5_000, None);
    let plan = DescribePlan::new(spec(1.0, 1e-6)).unwrap();
    let run = |seed| {
        describe_file(&data, &plan, &mut |_, _| {})
            .unwrap()
            .release(&mut InsecureSeededRng::new(seed))
            .unwrap()
            .text
    };
    assert_eq!(run(3), run(3));
}

#[test]
fn public_candidates_and_classes_need_no_delta() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_csv(dir.path(), "d.csv", 5_000, None);
    let cols = columns(
        Some(vec![
            "red".into(),
            "blue".into(),
            "green".into(),
            "teal".into(),
        ]),
        Some(vec!["no".into(), "yes".into()]),
    );
    let plan = DescribePlan::new(DescribeSpec::new(cols, csv_format(), 2.0, 0.0)).unwrap();
    assert_eq!(plan.charge(), (2.0, 0.0));
    let d = describe_file(&data, &plan, &mut |_, _| {})
        .unwrap()
        .release(&mut InsecureSeededRng::new(1))
        .unwrap();
    assert_eq!(d.facts.len(), 2);
    assert_eq!(d.delta, 0.0);
    let ColumnKind::Categorical { levels, .. } = &d.schema.columns[1].kind else {
        panic!()
    };
    // In the candidates' order; "teal" is never seen.
    assert_eq!(levels, &["red", "blue", "green"]);
    assert!(d.text.contains("# classes: public (given)"));
}

fn refusal(spec: DescribeSpec) -> String {
    match DescribePlan::new(spec) {
        Err(DescribeError::Refused(why)) => why,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn refusals_name_the_problem_before_anything_is_read() {
    let why = refusal(spec(1.0, 0.0));
    assert!(
        why.contains("delta = 0") && why.contains("colour, y"),
        "{why}"
    );
    for epsilon in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(refusal(spec(epsilon, 1e-6)).contains("epsilon"));
    }
    assert!(refusal(spec(1.0, 0.5)).contains("delta"));
    let mut no_label = spec(1.0, 1e-6);
    no_label.columns.pop();
    assert!(refusal(no_label).contains("no label column"));
    let mut twice = spec(1.0, 1e-6);
    twice.columns[2].name = "age".into();
    assert!(refusal(twice).contains("named twice"));
    let bad_classes = DescribeSpec::new(
        columns(None, Some(vec!["no".into(), "maybe".into()])),
        csv_format(),
        1.0,
        1e-6,
    );
    assert!(refusal(bad_classes).contains("positive class"));
}

#[test]
fn a_missing_label_column_is_named_by_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nolabel.csv");
    std::fs::write(&path, "age,colour,note\n30,red,x\n").unwrap();
    let plan = DescribePlan::new(spec(1.0, 1e-6)).unwrap();
    let err = describe_file(&path, &plan, &mut |_, _| {}).unwrap_err();
    assert!(
        err.to_string()
            .contains("the label column \"y\" is not in the header"),
        "{err}"
    );
}

#[test]
fn bad_cells_are_named_by_line_and_column_without_their_content() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, "age,colour,note,y\n30,red,x,no\nsecret,red,x,no\n").unwrap();
    let plan = DescribePlan::new(spec(1.0, 1e-6)).unwrap();
    let err = describe_file(&path, &plan, &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 3, column age: not a number"), "{err}");
    assert!(!err.contains("secret"));
}

#[test]
fn the_split_never_exceeds_the_total() {
    for k in 1..200usize {
        for total in [0.1, 1.0, 0.3, 1.0 / 3.0, 7.77] {
            let each = share(total, k);
            // Exact: k·each ≤ total in the reals.
            let mut sum = dp_noise::ExactSum::new();
            for _ in 0..k {
                sum.add(each);
            }
            assert!(
                sum <= dp_noise::ExactSum::of(total),
                "k = {k}, total = {total}"
            );
        }
    }
}

/// Neighbouring files differ in one record, whose age is ordinary in one and extreme
/// (10⁹) in the other: the released bounds are random, and their distributions overlap —
/// across seeds the same bounds come out on both sides, and the extreme value does not
/// show up as an upper bound near 10⁹ (its cell holds one record, far below the threshold).
#[test]
fn an_extreme_value_moves_the_distribution_not_the_value() {
    let dir = tempfile::tempdir().unwrap();
    let plain = write_csv(dir.path(), "plain.csv", 3_000, None);
    let extreme = write_csv(dir.path(), "extreme.csv", 3_000, Some(1e9));
    // Only age's bounds are released: colour ignored, y's classes public.
    let mut cols = columns(None, Some(vec!["no".into(), "yes".into()]));
    cols[1].kind = DescribeKind::Ignore;
    let plan = DescribePlan::new(DescribeSpec::new(cols, csv_format(), 0.5, 0.0)).unwrap();
    let bounds = |path: &std::path::Path| -> BTreeMap<String, usize> {
        let mut seen = BTreeMap::new();
        for seed in 0..200 {
            let d = describe_file(path, &plan, &mut |_, _| {})
                .unwrap()
                .release(&mut InsecureSeededRng::new(seed))
                .unwrap();
            let key = match d.schema.columns[0].kind {
                ColumnKind::Numeric { lower, upper, .. } => format!("[{lower}, {upper}]"),
                _ => "dropped".into(),
            };
            *seen.entry(key).or_insert(0) += 1;
        }
        seen
    };
    let a = bounds(&plain);
    let b = bounds(&extreme);
    assert!(b.keys().all(|k| !k.contains("1073741824")), "{b:?}");
    // The most frequent outcome is the same on both sides, with similar frequencies.
    let top = |m: &BTreeMap<String, usize>| m.iter().max_by_key(|(_, c)| **c).unwrap().0.clone();
    assert_eq!(top(&a), top(&b), "{a:?} vs {b:?}");
    let shared: usize = a
        .iter()
        .map(|(k, c)| (*c).min(*b.get(k).unwrap_or(&0)))
        .sum();
    assert!(shared >= 150, "overlap {shared}/200: {a:?} vs {b:?}");
}

/// The split of a total ε between describing and fitting: the share's part to the
/// description, the rest to the fit, the two never summing above the total (a ledger of
/// exactly the total must take both); shares outside (0, 1) and bad totals refused.
#[test]
fn a_total_splits_into_spends_that_never_exceed_it() {
    for total in [0.1, 0.3, 1.0, 0.7, 3.0, 1e-3, 123.456] {
        for share in [DESCRIBE_SHARE, 0.1, 0.3, 0.5, 0.7, 0.9] {
            let (describe, fit) = split_total_epsilon(total, share).unwrap();
            assert_eq!(describe, share * total);
            assert!(
                describe + fit <= total,
                "{total} {share}: {describe} + {fit}"
            );
            // Rounded down by at most a few ulps: the fit keeps the rest.
            assert!(total - (describe + fit) <= 4.0 * f64::EPSILON * total);
        }
    }
    for share in [0.0, 1.0, -0.1, f64::NAN] {
        let e = split_total_epsilon(1.0, share).unwrap_err().to_string();
        assert!(e.contains("must be in (0, 1)"), "{e}");
    }
    for total in [0.0, -1.0, f64::INFINITY, f64::NAN] {
        let e = split_total_epsilon(total, 0.4).unwrap_err().to_string();
        assert!(e.contains("total epsilon must be finite and > 0"), "{e}");
    }
}
