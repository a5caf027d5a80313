//! Writing the linear results: JSON and CSV of every cell, and a Markdown summary that puts
//! each measured number beside the published one.

use std::fmt::Write as _;

use super::linear::{Cell, Method};
use super::published::{ADULT_BY_LAMBDA, ADULT_EPSILONS, BEST_ERRORS, KDD_BY_LAMBDA, KDD_EPSILONS};

/// The mean error of `method` at (Λ, ε) on `dataset`, if it ran.
pub fn cell(
    cells: &[Cell],
    dataset: &str,
    method: Method,
    lambda: f64,
    epsilon: Option<f64>,
) -> Option<f64> {
    cells
        .iter()
        .find(|c| {
            c.dataset == dataset && c.method == method && c.lambda == lambda && c.epsilon == epsilon
        })
        .map(|c| c.mean_error)
}

/// The best mean error over Λ of `method` at ε on `dataset`, with its Λ.
pub fn best_over_lambda(
    cells: &[Cell],
    dataset: &str,
    method: Method,
    epsilon: Option<f64>,
) -> Option<(f64, f64)> {
    cells
        .iter()
        .filter(|c| c.dataset == dataset && c.method == method && c.epsilon == epsilon)
        .map(|c| (c.mean_error, c.lambda))
        .min_by(|a, b| a.0.total_cmp(&b.0))
}

fn measured_vs(measured: Option<f64>, published: f64) -> String {
    match measured {
        Some(m) => format!("{m:.4} | {published:.4} | {:+.4}", m - published),
        None => format!("— | {published:.4} | —"),
    }
}

pub fn csv(cells: &[Cell]) -> String {
    let mut s = String::from(
        "dataset,method,lambda,epsilon,mean_error,std_error,fits,refusals,\
         fits_shared_with_paper_rule,mean_iterations,cpu_seconds\n",
    );
    for c in cells {
        let epsilon = c.epsilon.map_or(String::new(), |e| e.to_string());
        let _ = writeln!(
            s,
            "{},\"{}\",{},{},{},{},{},{},{},{},{}",
            c.dataset,
            c.method_label,
            c.lambda,
            epsilon,
            c.mean_error,
            c.std_error,
            c.fits,
            c.refusals,
            c.fits_shared_with_paper_rule,
            c.mean_iterations,
            c.cpu_seconds
        );
    }
    s
}

/// The Markdown summary. `header` describes the run (settings, checksums, timing).
pub fn markdown(cells: &[Cell], header: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Linear experiments (SVM paper, Figures 2a and 3)\n\n{header}"
    );
    let _ = writeln!(s, "## Best error over Λ (Figure 2a)\n");
    let _ = writeln!(
        s,
        "| method | dataset | ε | measured | published | difference | best Λ |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for (label, dataset, epsilon, published) in BEST_ERRORS {
        let method = [
            Method::NonPrivateSvm,
            Method::OutputSvm,
            Method::ObjectiveLogistic,
            Method::ObjectiveSvm,
        ]
        .into_iter()
        .find(|m| m.label() == label)
        .expect("published methods are known");
        let best = best_over_lambda(cells, dataset, method, epsilon);
        let _ = writeln!(
            s,
            "| {label} | {dataset} | {} | {} | {} |",
            epsilon.map_or("—".into(), |e| e.to_string()),
            measured_vs(best.map(|b| b.0), published),
            best.map_or("—".into(), |b| format!("{:.0e}", b.1))
        );
    }
    let _ = writeln!(
        s,
        "\nThe same, for the rows the paper does not have (cliff-free calibration, and the diagnostic with the paper's printed calibration, which is **not ε-DP at the stated ε**):\n"
    );
    let _ = writeln!(s, "| method | dataset | ε | best measured | best Λ |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for method in [
        Method::ObjectiveLogisticCliffFree,
        Method::ObjectiveSvmCliffFree,
        Method::Scm09SvmNotPrivate,
    ] {
        let mut settings: Vec<(&str, Option<f64>)> = cells
            .iter()
            .filter(|c| c.method == method)
            .map(|c| (c.dataset, c.epsilon))
            .collect();
        settings.sort_by(|a, b| a.0.cmp(b.0).then(b.1.partial_cmp(&a.1).expect("finite")));
        settings.dedup();
        for (dataset, epsilon) in settings {
            if let Some((error, lambda)) = best_over_lambda(cells, dataset, method, epsilon) {
                let _ = writeln!(
                    s,
                    "| {} | {dataset} | {} | {error:.4} | {lambda:.0e} |",
                    method.label(),
                    epsilon.unwrap_or(f64::NAN)
                );
            }
        }
    }
    let _ = writeln!(
        s,
        "\n## Adult, objective perturbation Huber SVM by Λ (Figure 3a)\n"
    );
    let _ = writeln!(s, "Each cell: measured / published / difference.\n");
    let _ = write!(s, "| Λ | non-private SVM |");
    for e in ADULT_EPSILONS {
        let _ = write!(s, " ε = {e} |");
    }
    let _ = writeln!(s, "\n|---|---|---|---|---|---|");
    for (lambda, published) in ADULT_BY_LAMBDA {
        let _ = write!(
            s,
            "| {lambda:.0e} | {} |",
            measured_vs(
                cell(cells, "adult", Method::NonPrivateSvm, lambda, None),
                published[0]
            )
            .replace(" | ", " / ")
        );
        for (k, e) in ADULT_EPSILONS.into_iter().enumerate() {
            let m = cell(cells, "adult", Method::ObjectiveSvm, lambda, Some(e));
            let _ = write!(
                s,
                " {} |",
                measured_vs(m, published[k + 1]).replace(" | ", " / ")
            );
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "\n## KDDCup99 (60,000-row subset) by Λ (Figure 3b)\n");
    let _ = writeln!(
        s,
        "Each cell: measured / published / difference. Alg. 1 = objective perturbation, Sens. = output perturbation (Huber SVM).\n"
    );
    let _ = write!(s, "| Λ | SVM |");
    for e in KDD_EPSILONS {
        let _ = write!(s, " ε={e} Alg. 1 | ε={e} Sens. |");
    }
    let _ = writeln!(s, "\n|---|---|---|---|---|---|---|---|");
    for (lambda, published) in KDD_BY_LAMBDA {
        let _ = write!(
            s,
            "| {lambda:.0e} | {} |",
            measured_vs(
                cell(cells, "kddcup99", Method::NonPrivateSvm, lambda, None),
                published[0]
            )
            .replace(" | ", " / ")
        );
        for (k, e) in KDD_EPSILONS.into_iter().enumerate() {
            let objective = cell(cells, "kddcup99", Method::ObjectiveSvm, lambda, Some(e));
            let output = cell(cells, "kddcup99", Method::OutputSvm, lambda, Some(e));
            let _ = write!(
                s,
                " {} | {} |",
                measured_vs(objective, published[1 + 2 * k]).replace(" | ", " / "),
                measured_vs(output, published[2 + 2 * k]).replace(" | ", " / ")
            );
        }
        let _ = writeln!(s);
    }
    s += &computation(cells);
    let _ = writeln!(s, "{}", EXPLANATION);
    s
}

/// How the cells were computed: fits, refusals, solver iterations and time per method, and
/// which cliff-free cells differ from the paper rule.
fn computation(cells: &[Cell]) -> String {
    let mut s = String::from(
        "\n## How the run was computed\n\n\
         In each fold the non-private Huber minimizer is computed once per Λ; it is the \
         non-private model, and every Huber fit at that Λ starts its solver there (a warm \
         start changes only the solver's path; the released point is certified within \
         γ/(Λ+Δ) of the exact minimizer from any start). Output perturbation then needs no \
         solver step. The fits of one (fold, Λ, method, noise draw) run in order of \
         decreasing ε with common random numbers — the same noise direction and standard \
         Gamma variate, scaled to each ε — and each objective-perturbation fit starts from \
         the previous ε's solver point (the first logistic fit starts at 0, where the \
         non-private start measured slower). Objective perturbation spends ε/100 of each ε on \
         the minimizer noise that makes the released (approximate) minimizer ε-DP; the \
         objective noise gets the other 99%. Every cell keeps exactly its mechanism's distribution; \
         cells of one draw are correlated across ε, which makes differences between ε \
         columns less noisy. Where both calibration rules give the same (ε', Δ, β) — every \
         cell outside CMS11's cliff — the cliff-free row is the same mechanism as the \
         paper-rule row and shares its fits; the cliff-free cells with fits of their own \
         are listed below.\n\n\
         | dataset | method | released fits | refused | shared with paper rule | mean Newton iterations | CPU seconds |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut keys: Vec<(&str, Method)> = cells.iter().map(|c| (c.dataset, c.method)).collect();
    keys.dedup();
    for (dataset, method) in keys {
        let group: Vec<&Cell> = cells
            .iter()
            .filter(|c| c.dataset == dataset && c.method == method)
            .collect();
        let fits: usize = group.iter().map(|c| c.fits).sum();
        let iterations: f64 = group
            .iter()
            .map(|c| c.mean_iterations * c.fits as f64)
            .sum();
        let _ = writeln!(
            s,
            "| {dataset} | {} | {fits} | {} | {} | {:.1} | {:.1} |",
            method.label(),
            group.iter().map(|c| c.refusals).sum::<usize>(),
            group
                .iter()
                .map(|c| c.fits_shared_with_paper_rule)
                .sum::<usize>(),
            iterations / fits.max(1) as f64,
            group.iter().map(|c| c.cpu_seconds).sum::<f64>()
        );
    }
    let own: Vec<String> = cells
        .iter()
        .filter(|c| {
            matches!(
                c.method,
                Method::ObjectiveLogisticCliffFree | Method::ObjectiveSvmCliffFree
            ) && c.fits_shared_with_paper_rule < c.fits
        })
        .map(|c| {
            format!(
                "{} {} at Λ = {:.0e}, ε = {}",
                c.dataset,
                c.method.label(),
                c.lambda,
                c.epsilon.unwrap_or(f64::NAN)
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "\nCliff-free cells with their own fits: {}.",
        if own.is_empty() {
            "none".to_owned()
        } else {
            own.join("; ")
        }
    );
    s
}

const EXPLANATION: &str = r#"
## Why the private numbers differ from the paper

- **Calibration.** The library implements objective perturbation as CMS11 corrects it: noise
  norm `Gamma(d, 2/ε')` with `ε' = ε − 2 ln(1 + c/(nΛ))`, or `ε' = ε/2` with extra
  regularization Δ. The SVM paper's tables used noise of norm `Gamma(d, 1/ε)` and no Δ —
  the density `∝ exp(−ε‖b‖)` of its proof, which assumes gradient differences ≤ 1 where
  unit-norm rows allow 2 and omits the Jacobian term. The "SCM09 calibration" rows above
  run exactly that (inside xtask only; the library never offers it) and are **not ε-DP at
  the stated ε** — under the corrected analysis they are roughly 2ε-DP plus the Jacobian
  term. Where they match the published numbers and the correct rows do not, the gap is this
  calibration, not the solver or the data.
- **Small Λ.** Below Λ = c/(n(e^{ε/4} − 1)) (5e-4 to 7e-3 for the Huber loss on Adult
  and KDD at these ε) the corrected mechanism adds Δ, so it trains at the same total
  regularization Λ + Δ whatever Λ is: its errors level off as Λ shrinks, while the
  paper's (Δ = 0) keep growing. That is why the measured objective-perturbation cells
  beat the published ones at Λ ≤ 1e-6.
- **The cliff.** Just above that Λ, CMS11's rule keeps Δ = 0 with a small positive ε'
  and the noise explodes (e.g. Adult, Λ = 1e-3, ε = 0.05); the cliff-free rows, which
  never spend less than ε/2 on the noise, show what the same ε buys without it.
- **Output perturbation** uses the sensitivity `2/(nΛ) + 2γ/Λ` (γ = 1e-10, the certified
  solver tolerance), as published.
- **Data.** Column max-scaling reads the whole file (paper-faithful, not private); rows are
  clipped into the unit ball per row. Adult's one-hot encoding uses the 105 columns of
  `adult.names` (the paper had 104–105). KDD uses a random 60,000-row subset.
- **Protocol.** Quick mode uses fewer folds and noise draws than the paper's 10 × 50, so its
  private cells carry more sampling noise (see `std_error` in `cells.csv`).
"#;
