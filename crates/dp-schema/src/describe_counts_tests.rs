//! Counts of blocks merged: the same release as one pass (seeded), refusals of counts that
//! do not match the plan, and the byte form.

use std::collections::BTreeMap;
use std::ops::Range;

use dp_noise::InsecureSeededRng;

use super::*;
use crate::describe::{DescribePlan, DescribeSpec, test_columns};
use crate::{Cell, NumericMissing};

const N: usize = 9000;

/// `public`: candidate levels and classes given (the label's classes only checked), δ = 0;
/// else every list released by the stability histogram.
fn plan(public: bool) -> DescribePlan {
    let columns = test_columns::columns(
        NumericMissing::Zero,
        public.then(|| vec!["red".into(), "green".into(), "blue".into()]),
        public.then(|| vec!["no".into(), "yes".into()]),
    );
    let delta = if public { 0.0 } else { 1e-6 };
    DescribePlan::new(DescribeSpec::new(
        columns,
        test_columns::csv_format(),
        1.0,
        delta,
    ))
    .unwrap()
}

/// Record `i`: ages spread over many cells (every 13th missing), four colours (teal rare,
/// every 11th missing), labels with an alias.
fn record(i: usize) -> [Cell<'static>; 4] {
    const COLOURS: [&[u8]; 4] = [b"red", b"green", b"blue", b"teal"];
    const LABELS: [&[u8]; 3] = [b"yes", b"no", b"yes."];
    let age = if i.is_multiple_of(13) {
        Cell::Null
    } else {
        Cell::Number((i % 97) as f64 * 1.5 - 20.0)
    };
    let colour = if i.is_multiple_of(11) {
        Cell::Text(b"?")
    } else if i % 500 == 1 {
        Cell::Text(COLOURS[3])
    } else {
        Cell::Text(COLOURS[i % 3])
    };
    [age, colour, Cell::Text(b"n"), Cell::Text(LABELS[i % 3])]
}

fn count(describer: &mut Describer<'_>, rows: Range<usize>) {
    for i in rows {
        let cells = record(i);
        describer.add_record(|k| cells[k]).unwrap();
    }
}

fn single_pass(plan: &DescribePlan) -> Describer<'_> {
    let mut describer = plan.describer();
    count(&mut describer, 0..N);
    describer
}

/// The blocks' counts (an empty one among them) through bytes, merged out of order.
fn merged(plan: &DescribePlan) -> Describer<'_> {
    let blocks = [0..2500, 2500..2500, 2500..7001, 7001..N];
    let bytes: Vec<Vec<u8>> = blocks
        .into_iter()
        .map(|rows| {
            let mut describer = plan.describer();
            count(&mut describer, rows);
            describer.counts().to_bytes().unwrap()
        })
        .collect();
    let mut describer = plan.describer();
    for k in [2, 0, 3, 1] {
        describer
            .merge(DescribeCounts::from_bytes(&bytes[k]).unwrap())
            .unwrap();
    }
    describer
}

#[test]
fn merged_blocks_release_what_one_pass_releases() {
    for public in [false, true] {
        let plan = plan(public);
        assert_eq!(merged(&plan).counts(), single_pass(&plan).counts());
        assert_eq!(merged(&plan).rows(), N as u64);
        for seed in [3, 11] {
            let one = single_pass(&plan)
                .release(&mut InsecureSeededRng::new(seed))
                .unwrap();
            let split = merged(&plan)
                .release(&mut InsecureSeededRng::new(seed))
                .unwrap();
            assert_eq!(split.text, one.text);
            assert_eq!(split.facts, one.facts);
            assert_eq!(split.rows, N as u64);
            assert!(one.text.contains(&format!("from {N} records")));
        }
    }
    // The counts differ from a pass over fewer records (the comparison can fail).
    let plan = plan(false);
    let mut fewer = plan.describer();
    count(&mut fewer, 0..N - 1);
    assert_ne!(fewer.counts(), single_pass(&plan).counts());
}

#[test]
fn counts_of_another_plan_are_refused_and_nothing_is_added() {
    let released = plan(false);
    let public = plan(true);
    let mut other = public.describer();
    count(&mut other, 0..100);
    let mut describer = released.describer();
    count(&mut describer, 0..50);
    let err = describer.merge(other.counts()).unwrap_err();
    assert!(matches!(err, DescribeError::Refused(_)));
    assert!(
        err.to_string().contains(
            "column y: counts of a label (classes public) column, the plan's is label \
             (classes released)"
        ),
        "{err}"
    );

    let mut block = released.describer();
    count(&mut block, 0..100);
    let good = block.counts();
    let tamper = |change: &dyn Fn(&mut DescribeCounts)| {
        let mut counts = good.clone();
        change(&mut counts);
        counts
    };
    let cases: Vec<(DescribeCounts, &str)> = vec![
        (
            tamper(&|c| {
                c.columns.pop();
            }),
            "counts of 3 columns, the plan has 4",
        ),
        (
            tamper(&|c| c.columns[1].0 = "color".into()),
            "counts of column \"color\" where the plan has \"colour\"",
        ),
        (
            tamper(&|c| c.columns[2].1 = ColumnCounts::Levels(BTreeMap::new())),
            "column note: counts of a categorical column, the plan's is ignored",
        ),
        (
            tamper(&|c| c.columns[3].1 = ColumnCounts::Label(None)),
            "column y: counts of a label (classes public) column",
        ),
        (
            tamper(&|c| {
                c.columns[0].1 = ColumnCounts::Numeric {
                    cells: 10,
                    counts: vec![],
                }
            }),
            "column age: counts on a grid of 10 cells, the plan's has 4198",
        ),
        (
            tamper(&|c| {
                if let ColumnCounts::Numeric { counts, .. } = &mut c.columns[0].1 {
                    counts.reverse();
                }
            }),
            "column age: bad cell counts",
        ),
        (
            tamper(&|c| {
                if let ColumnCounts::Numeric { counts, .. } = &mut c.columns[0].1 {
                    counts[0].1 += 1000;
                }
            }),
            "column age: more values counted than the block's records",
        ),
        (
            tamper(&|c| c.rows -= 1),
            "column y: the level counts do not add up",
        ),
        (
            tamper(&|c| {
                if let ColumnCounts::Levels(levels) = &mut c.columns[1].1 {
                    levels.insert("never".into(), 0);
                }
            }),
            "column colour: bad level counts",
        ),
    ];
    for (counts, expected) in cases {
        let err = describer.merge(counts).unwrap_err();
        assert!(
            err.to_string().contains(expected),
            "{err} (expected {expected})"
        );
    }
    // Nothing of a refused merge was added: the describer is the 50 records it counted.
    assert_eq!(describer.rows(), 50);
    let mut fifty = released.describer();
    count(&mut fifty, 0..50);
    assert_eq!(describer.counts(), fifty.counts());
}

#[test]
fn counts_round_trip_through_bytes_and_bad_bytes_are_refused() {
    let plan = plan(false);
    let mut describer = plan.describer();
    count(&mut describer, 0..700);
    let counts = describer.counts();
    assert_eq!(counts.rows(), 700);
    let bytes = counts.to_bytes().unwrap();
    assert_eq!(DescribeCounts::from_bytes(&bytes).unwrap(), counts);
    let mut longer = bytes.clone();
    longer.push(0);
    let mut other_format = counts.clone();
    other_format.format += 1;
    for bad in [
        &bytes[..bytes.len() - 1],
        &longer[..],
        b"not counts",
        &[],
        &other_format.to_bytes().unwrap()[..],
    ] {
        let err = DescribeCounts::from_bytes(bad).unwrap_err();
        assert!(matches!(err, DescribeError::Refused(_)));
        assert!(err.to_string().contains("not a describing pass's counts"));
    }
    // Debug names no level and no count.
    let shown = format!("{counts:?}");
    assert_eq!(shown, "DescribeCounts { rows: 700, columns: 4, .. }");
}
