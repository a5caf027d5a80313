//! What a private description can be expected to release, from public facts alone: the
//! plan's thresholds and the number of records n (public under replace-one). Read before
//! any noise is drawn, so the faces warn of a description too small to be useful — the
//! part of a described fit's outlook that the fit's own `d/(nε)` cannot see.
//!
//! Every release of the plan keeps a cell only when its noisy count reaches a threshold τ
//! (a numeric column's power-of-two cell, a level, a class), and a cell holding exactly τ
//! records passes in about half the draws. The largest τ of the plan, against n, says what
//! the description can keep: above n/2 at most one level of each categorical column and
//! one power-of-two range of each numeric column can pass, and the label's other class
//! must hold most of the rows; above n, nothing can pass at all.

use serde::Serialize;

use super::DescribePlan;

/// Above this share of the rows, the largest threshold of a description puts the model
/// trained on it at risk (see the module's text for why one half). Checked against the
/// described fits measured (`python/bench/describe_datasets.py` and UCI Adult; the guide's
/// "when you do not know the bounds"): every described fit no better than the majority
/// class had its largest threshold above half the rows, and every one with it below beat
/// the majority class.
pub const DESCRIBE_AT_RISK_SHARE: f64 = 0.5;

/// A description's a-priori outlook.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DescribeOutlook {
    /// The records read (n).
    pub rows: u64,
    /// The largest threshold among the plan's releases, in records: a level, a class or a
    /// numeric column's power-of-two range holding fewer records is unlikely to be kept.
    pub records_needed: u64,
    /// `records_needed / rows`.
    pub share_needed: f64,
    /// Above [`DESCRIBE_AT_RISK_SHARE`]: a model trained on the described schema may be no
    /// better than the majority class.
    pub at_risk: bool,
    /// Above 1: no cell can hold that many records; the description is expected to fail
    /// (no second class released) or to keep no feature.
    pub hopeless: bool,
    /// What to tell the user, if anything.
    pub warning: Option<String>,
}

impl DescribePlan {
    /// The outlook of this plan's description of `rows` records (public facts only; no
    /// record is read).
    pub fn outlook(&self, rows: u64) -> DescribeOutlook {
        let records_needed = self.largest_threshold();
        let share_needed = records_needed as f64 / rows.max(1) as f64;
        let hopeless = share_needed > 1.0;
        let at_risk = share_needed > DESCRIBE_AT_RISK_SHARE;
        let remedy = "give the facts you know as public ones (levels, classes), spend more \
                      epsilon on the description, or describe more rows";
        let warning = if hopeless {
            Some(format!(
                "the description's thresholds need {records_needed} records for a level, a \
                 class or a numeric range to be released, more than the {rows} rows: \
                 nothing can pass, so no usable schema is expected; {remedy}"
            ))
        } else if at_risk {
            Some(format!(
                "the description's thresholds need {records_needed} records ({:.0}% of the \
                 {rows} rows) for a level, a class or a numeric range to be released: at \
                 most one level of each column and one power-of-two range of each numeric \
                 column can pass, and a model trained on the schema may be no better than \
                 the majority class (not at risk from about {} rows); {remedy}",
                100.0 * share_needed,
                (records_needed as f64 / DESCRIBE_AT_RISK_SHARE).ceil()
            ))
        } else {
            None
        };
        DescribeOutlook {
            rows,
            records_needed,
            share_needed,
            at_risk,
            hopeless,
            warning,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_columns;
    use crate::{DescribeSpec, NumericMissing};

    use super::*;

    /// Two facts (age's bounds, colour's levels; y's classes public).
    fn plan(epsilon: f64, delta: f64, candidates: Option<Vec<String>>) -> DescribePlan {
        let classes = Some(vec!["no".into(), "yes".into()]);
        let columns = test_columns::columns(NumericMissing::Error, candidates, classes);
        let spec = DescribeSpec::new(columns, test_columns::csv_format(), epsilon, delta);
        DescribePlan::new(spec).unwrap()
    }

    /// The thresholds from the spec's formulas, not from the mechanisms' code: ε = 0.2 over
    /// two facts is ε' = 0.1 each, discrete Laplace noise of scale t = 2/ε' = 20 and
    /// `q = e^{−1/t}`. Histogram bounds over the 4,198 cells around the f64 grid's 4,197
    /// candidates (±2^k for k = −1074..=1023, and 0) at β = 10⁻³: `⌈t·ln(4198/(β(1+q)))⌉`; the stability histogram at δ: `1 + ⌈t·(ln(1/δ) − ln(1+q))⌉`;
    /// candidate levels over m candidates: `⌈t·ln(m/(β(1+q)))⌉`.
    #[test]
    fn records_needed_is_the_largest_threshold_of_the_plan() {
        let t = 20.0_f64;
        let q = (-1.0 / t).exp();
        let bounds = (t * (4198.0 / (1e-3 * (1.0 + q))).ln()).ceil() as u64;
        let stability = 1 + (t * ((1e9_f64).ln() - (1.0 + q).ln())).ceil() as u64;
        let candidates = (t * (2.0 / (1e-3 * (1.0 + q))).ln()).ceil() as u64;
        assert!(stability > bounds && bounds > candidates);
        assert_eq!(
            plan(0.2, 1e-9, None).outlook(10_000).records_needed,
            stability
        );
        let listed = plan(0.2, 0.0, Some(vec!["a".into(), "b".into()]));
        assert_eq!(listed.outlook(10_000).records_needed, bounds);
    }

    #[test]
    fn warns_above_half_the_rows_and_says_when_nothing_can_pass() {
        let p = plan(0.2, 1e-9, None);
        let tau = p.outlook(1).records_needed;
        let fine = p.outlook(2 * tau);
        assert!(!fine.at_risk && fine.warning.is_none(), "{fine:?}");
        let risky = p.outlook(2 * tau - 1);
        assert!(risky.at_risk && !risky.hopeless);
        let text = risky.warning.unwrap();
        assert!(
            text.contains(&format!("not at risk from about {} rows", 2 * tau)),
            "{text}"
        );
        let none = p.outlook(tau - 1);
        assert!(none.hopeless && none.warning.unwrap().contains("nothing can pass"));
        assert!(!p.outlook(tau).hopeless);
    }
}
