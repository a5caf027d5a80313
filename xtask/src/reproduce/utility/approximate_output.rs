//! The (ε, δ) part of the study's outputs: its summary section, its CSV files and its
//! sanity bounds.

use std::fmt::Write;

use dp_erm::SgdSchedule;

use super::approximate::{ApproximateResults, ApproximateRow, SPLIT_CHOICE, STOPPING_CHOICE};
use super::approximate_fit::ApproximateRuleFit;

/// The error of always predicting the majority class on Adult's official test set.
const OFFICIAL_TRIVIAL: f64 = 0.246;

fn find<'a>(
    record: &'a ApproximateResults,
    method: &str,
    relation: &str,
    choice: &str,
    epsilon: f64,
) -> Option<&'a ApproximateRow> {
    record.rows.iter().find(|r| {
        r.method.starts_with(method)
            && r.relation.starts_with(relation)
            && r.choice == choice
            && r.epsilon == epsilon
    })
}

fn cell(row: Option<&ApproximateRow>) -> String {
    row.map_or("—".into(), |r| {
        if r.std_error.is_finite() {
            format!("{:.4} ± {:.4}", r.mean_error, r.std_error)
        } else {
            format!("{:.4}", r.mean_error)
        }
    })
}

/// The section of `summary.md`.
pub fn section(s: &mut String, fit: &ApproximateRuleFit, record: &ApproximateResults) {
    let a = record;
    let _ = writeln!(
        s,
        "\n## (ε, δ = 1e-5) on Adult's official split (train adult.data, test adult.test)\n\n\
         Logistic loss throughout. Gaussian mechanisms: Λ grid of {} values from {:.0e} to \
         {:.0e}, {} noise draws per cell (best in hindsight), {} runs through the library's \
         rule (end to end). DP-SGD: Poisson batches, averaged iterates, σ calibrated \
         to (ε, δ); grid (batch capped at n) {}, {} draws per configuration; the rule: {} \
         runs. Add/remove rows are the library's add/remove DP-SGD (Opacus's relation; the \
         public n̂ is the training rows' count, each step divided by the expected batch), \
         σ calibrated to the add/remove ε, for comparison with outside numbers: the same \
         fits' replace-one ε (the relation of every other row) is in `approximate.csv`. \
         Wall time {:.1} s.\n",
        a.gaussian_lambdas.len(),
        a.gaussian_lambdas[0],
        a.gaussian_lambdas[a.gaussian_lambdas.len() - 1],
        a.gaussian_draws,
        a.rule_runs,
        sgd_grid_text(&a.sgd_grid),
        a.sgd_draws,
        a.rule_runs,
        a.seconds
    );
    error_table(s, record);
    tuned_table(s, record);
    s.push_str(
        "\nCPU seconds (process user + system, sequential, same run; objective-perturbation \
         fits interleaved at the Gaussian rule's Λ):\n\n| ε | Λ | pure-ε objective fit | \
         (ε, δ) objective fit | (ε, δ) rule (fixed point + fit) | DP-SGD best config, one fit \
         | DP-SGD rule, one fit | DP-SGD grid search (all fits) |\n|---|---|---|---|---|---|---|---|\n",
    );
    for t in &a.timings {
        let _ = writeln!(
            s,
            "| {} | {:.2e} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} ({} fits) |",
            t.epsilon,
            t.lambda,
            t.pure_objective_seconds,
            t.gaussian_objective_seconds,
            t.gaussian_rule_seconds,
            t.sgd_best_seconds,
            t.sgd_rule_seconds,
            t.sgd_search_seconds,
            t.sgd_search_fits
        );
    }
    let f = fit;
    let _ = writeln!(
        s,
        "\n### (ε, δ) rules fitted on synthetic data ({} problems of the family; Gaussian: n = \
         {:?}, ε = {:?}; DP-SGD: n = {}) in {:.1} s\n\n| mechanism | κ | a | p | mean \
         regret | p90 | the library's constants' mean regret |\n|---|---|---|---|---|---|---|",
        f.problems, f.gaussian_rows, f.gaussian_epsilons, f.sgd_rows, f.seconds
    );
    for g in &f.gaussian {
        let _ = writeln!(
            s,
            "| {} | {:.4e} | {} | {} | {:.4} | {:.4} | {:.4} |",
            g.mechanism,
            g.scale,
            g.features_exponent,
            g.noise_exponent,
            g.regret.mean,
            g.regret.p90,
            g.library_regret.mean
        );
    }
    s.push_str("\n| ε | DP-SGD batch | epochs | η | C | mean regret | the library's setting's |\n|---|---|---|---|---|---|---|\n");
    for g in &f.sgd {
        let c = &g.config;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.4} | {:.4} |",
            g.epsilon,
            c.batch,
            c.epochs,
            c.learning_rate,
            c.clip_norm,
            g.mean_regret,
            g.library_regret
        );
    }
}

/// Gaussian output perturbation tuned among five Λ at the same total (ε, δ): split-and-select
/// against random stopping accounted by Rényi DP (where the study ran them).
fn tuned_table(s: &mut String, record: &ApproximateResults) {
    let rows = |choice: &str| {
        record
            .epsilons
            .iter()
            .map(|&e| find(record, "Gaussian output", "replace", choice, e))
            .collect::<Vec<_>>()
    };
    let (split, stopping) = (rows(SPLIT_CHOICE), rows(STOPPING_CHOICE));
    if split.iter().chain(&stopping).all(Option::is_none) {
        return;
    }
    s.push_str(
        "\nTuning (ε, δ) candidates end to end: Gaussian output perturbation among five Λ \
         (the output rule's × 10^{−1, −½, 0, ½, 1}) at the same total (ε, δ = 1e-5), by \
         split-and-select (each candidate on 1/6 of the rows) and by random stopping \
         accounted by Rényi DP (Papernot–Steinke; every candidate on 90% of the rows at the \
         largest step the total allows):\n\n| ε | split-and-select | random stopping | \
         random stopping's setting |\n|---|---|---|---|\n",
    );
    for ((&epsilon, split), stopping) in record.epsilons.iter().zip(&split).zip(&stopping) {
        let _ = writeln!(
            s,
            "| {epsilon} | {} | {} | {} |",
            cell(*split),
            cell(*stopping),
            stopping.map_or(String::new(), |r| r.setting.clone())
        );
    }
}

/// The grid's configurations, `(batch, epochs, η, C)` each.
fn sgd_grid_text(grid: &[SgdSchedule]) -> String {
    let configs: Vec<String> = grid
        .iter()
        .map(|c| {
            format!(
                "({}, {}, {}, {})",
                c.batch, c.epochs, c.learning_rate, c.clip_norm
            )
        })
        .collect();
    format!("batch × epochs × η × C = {}", configs.join(", "))
}

/// The errors' table: each mechanism best in hindsight and through its rule, at each ε.
fn error_table(s: &mut String, record: &ApproximateResults) {
    s.push_str(
        "| ε | Gaussian objective, best Λ | Gaussian objective, rule | Gaussian output, best Λ \
         | Gaussian output, rule | DP-SGD best (replace-one) | DP-SGD best (add/remove) | \
         DP-SGD rule (replace-one) | DP-SGD rule (add/remove) |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for &epsilon in &record.epsilons {
        let _ = writeln!(
            s,
            "| {epsilon} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(find(
                record,
                "Gaussian objective",
                "replace",
                "best in hindsight",
                epsilon
            )),
            cell(find(
                record,
                "Gaussian objective",
                "replace",
                "rule",
                epsilon
            )),
            cell(find(
                record,
                "Gaussian output",
                "replace",
                "best in hindsight",
                epsilon
            )),
            cell(find(record, "Gaussian output", "replace", "rule", epsilon)),
            cell(find(
                record,
                "DP-SGD",
                "replace",
                "best in hindsight",
                epsilon
            )),
            cell(find(
                record,
                "DP-SGD",
                "add/remove",
                "best in hindsight",
                epsilon
            )),
            cell(find(record, "DP-SGD", "replace", "rule", epsilon)),
            cell(find(record, "DP-SGD", "add/remove", "rule", epsilon)),
        );
    }
}

/// The section of `summary.md` for one cross-validated dataset.
pub fn folds_section(s: &mut String, folds: usize, record: &ApproximateResults) {
    let dataset = record.rows.first().map_or("?", |r| r.dataset.as_str());
    let _ = writeln!(
        s,
        "\n## (ε, δ = 1e-5) on {dataset}, {folds}-fold cross-validation\n\n\
         The official split's protocol on each fold (the folds of the pure-ε end-to-end \
         runs), per fold: Gaussian mechanisms over the same Λ grid (noise draws per cell: \
         {}), through the rules (runs: {}); DP-SGD over the same grid (draws per \
         configuration: {}). Each cell is the mean over folds × draws (± its standard error); \
         best in hindsight is chosen on that mean (on test folds: a reference, not a private \
         result). Wall time {:.1} s.\n",
        record.gaussian_draws, record.rule_runs, record.sgd_draws, record.seconds
    );
    error_table(s, record);
}

/// At every ε, the Gaussian rule's error within 0.03 of the best Λ's in hindsight.
fn rule_near_best(record: &ApproximateResults, what: &str, fail: &mut dyn FnMut(String)) {
    for &epsilon in &record.epsilons {
        let best = find(
            record,
            "Gaussian objective",
            "replace",
            "best in hindsight",
            epsilon,
        );
        let rule = find(record, "Gaussian objective", "replace", "rule", epsilon);
        if !matches!((best, rule), (Some(b), Some(r)) if r.mean_error <= b.mean_error + 0.03) {
            fail(format!(
                "{what} ε = {epsilon}: the Gaussian rule's error {:?} is not within 0.03 of the \
                 best Λ's {:?}",
                rule.map(|r| r.mean_error),
                best.map(|r| r.mean_error)
            ));
        }
    }
}

/// The bounds of the cross-validated columns: every cell measured, and the Gaussian rule
/// near the best Λ in hindsight.
pub fn folds_sanity(record: &ApproximateResults, fail: &mut dyn FnMut(String)) {
    let dataset = record.rows.first().map_or("?", |r| r.dataset.as_str());
    if let Some(r) = record.rows.iter().find(|r| !r.mean_error.is_finite()) {
        fail(format!(
            "{dataset} (folds): {} ({}, {}) at ε = {} has no error",
            r.method, r.relation, r.choice, r.epsilon
        ));
    }
    rule_near_best(record, &format!("{dataset} (folds)"), fail);
}

/// Bounds that a broken mechanism, rule or fit would cross.
pub fn sanity(fit: &ApproximateRuleFit, record: &ApproximateResults, fail: &mut dyn FnMut(String)) {
    for epsilon in [0.5, 1.0, 2.0] {
        for method in ["Gaussian objective", "DP-SGD"] {
            for choice in ["best in hindsight", "rule"] {
                match find(record, method, "replace", choice, epsilon) {
                    Some(r) if r.mean_error < OFFICIAL_TRIVIAL - 0.03 => {}
                    other => fail(format!(
                        "official split ε = {epsilon}: {method} ({choice}) error {:?} not below \
                         majority-class prediction's {OFFICIAL_TRIVIAL} − 0.03",
                        other.map(|r| r.mean_error)
                    )),
                }
            }
        }
    }
    rule_near_best(record, "official split", fail);
    for g in &fit.gaussian {
        if !(g.regret.mean.is_finite() && g.regret.mean < 0.03) {
            fail(format!(
                "{}: the fitted (ε, δ) rule's mean regret on synthetic data is {}",
                g.mechanism, g.regret.mean
            ));
        }
    }
    for t in &record.timings {
        if !(t.pure_objective_seconds.is_finite() && t.gaussian_objective_seconds.is_finite()) {
            fail(format!("ε = {}: no CPU time measured", t.epsilon));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::approximate::{EPSILONS, csv};
    use super::*;

    fn results(dataset: &str, error: f64) -> ApproximateResults {
        let row = |method: &str, relation, choice| ApproximateRow {
            dataset: dataset.into(),
            method: method.into(),
            relation,
            choice,
            epsilon: 0.1,
            delta: 1e-5,
            mean_error: error,
            std_error: 0.001,
            fits: 3,
            setting: "Λ = 1e-3".into(),
            replace_one_epsilon: None,
        };
        ApproximateResults {
            epsilons: EPSILONS.to_vec(),
            rows: vec![
                row("Gaussian objective perturbation", "replace-one", "rule"),
                row(
                    "DP-SGD (logistic)",
                    "add/remove (Opacus's relation)",
                    "best in hindsight",
                ),
            ],
            timings: Vec::new(),
            gaussian_lambdas: vec![1.0, 1e-6],
            sgd_grid: Vec::new(),
            gaussian_draws: 1,
            sgd_draws: 1,
            rule_runs: 1,
            seconds: 1.0,
        }
    }

    /// The folds' bounds: a rule far from the best Λ, or a cell without an error, fails.
    #[test]
    fn the_folds_bounds_catch_a_poor_rule_and_a_missing_cell() {
        let failures = |record: &ApproximateResults| {
            let mut found = Vec::new();
            folds_sanity(record, &mut |m| found.push(m));
            found
        };
        let mut record = results("adult", 0.2);
        let best = |record: &ApproximateResults, error: f64| {
            let mut row = record.rows[0].clone();
            (row.choice, row.mean_error) = ("best in hindsight", error);
            row
        };
        for e in EPSILONS {
            let mut rule = record.rows[0].clone();
            rule.epsilon = e;
            let mut hindsight = best(&record, 0.19);
            hindsight.epsilon = e;
            record.rows.extend([rule, hindsight]);
        }
        record.rows.remove(0);
        assert!(failures(&record).is_empty(), "{:?}", failures(&record));
        // The rule 0.2 against a best Λ of 0.16 at ε = 1.
        let mut poor = record.clone();
        poor.rows
            .iter_mut()
            .filter(|r| r.epsilon == 1.0 && r.choice == "best in hindsight")
            .for_each(|r| r.mean_error = 0.16);
        assert!(
            failures(&poor).iter().any(|m| m.contains("ε = 1")),
            "{:?}",
            failures(&poor)
        );
        let mut missing = record.clone();
        missing.rows[0].mean_error = f64::NAN;
        assert!(
            failures(&missing)
                .iter()
                .any(|m| m.contains("has no error"))
        );
    }

    /// The folds' section names its dataset and fold count, and places each row in its
    /// column; `approximate.csv` holds the official rows first, then each dataset's.
    #[test]
    fn a_folds_section_tabulates_its_dataset_and_the_csv_holds_every_dataset() {
        let (official, adult) = (
            results("adult (official split)", 0.19),
            results("adult", 0.2),
        );
        let mut s = String::new();
        folds_section(&mut s, 3, &adult);
        assert!(
            s.contains("## (ε, δ = 1e-5) on adult, 3-fold cross-validation"),
            "{s}"
        );
        let line = s
            .lines()
            .find(|l| l.starts_with("| 0.1 |"))
            .expect("the ε = 0.1 row");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | ε | objective best | objective rule | output best | output rule | SGD best | SGD add/remove | SGD rule | SGD rule add/remove |
        assert_eq!(cells[3], "0.2000 ± 0.0010", "{line}");
        assert_eq!(cells[7], "0.2000 ± 0.0010", "{line}");
        assert_eq!(cells[2], "—", "{line}");
        let table = csv([&official, &adult]);
        let datasets: Vec<&str> = table
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(
            datasets,
            [
                "adult (official split)",
                "adult (official split)",
                "adult",
                "adult"
            ]
        );
    }
}
