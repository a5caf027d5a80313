//! `dpml ledger init | show | check`: the command line's view of dp-fit's ledger.

use crate::text::say;
use std::path::{Path, PathBuf};

use dp_fit::{Ledger, LedgerError, LedgerFile};
use serde_json::Value;

use crate::text::number;
use crate::{Failure, fail, output};

fn failure(e: LedgerError) -> Failure {
    fail(e.to_string())
}

/// `dpml ledger init`: a new ledger file (never replacing one).
pub fn init(
    path: &Path,
    dataset: &str,
    total_epsilon: f64,
    total_delta: f64,
) -> Result<(), Failure> {
    output::check_free(path, false)?;
    let ledger = Ledger::new(dataset, total_epsilon, total_delta).map_err(|e| match e {
        LedgerError::InvalidAmount {
            what,
            value,
            expected,
        } => fail(format!(
            "--{} {value:?}: must be {expected}",
            if what.contains('δ') {
                "total-delta"
            } else {
                "total-epsilon"
            }
        )),
        other => failure(other),
    })?;
    LedgerFile::create(path, &ledger).map_err(failure)?;
    eprintln!(
        "wrote {} (total ε = {})",
        path.display(),
        number(total_epsilon)
    );
    Ok(())
}

/// `dpml ledger show`: what a ledger has spent and has left.
pub fn show(path: &Path) -> Result<(), Failure> {
    let l = dp_fit::ledger::read(path).map_err(failure)?;
    say!("ledger:  {}", path.display());
    say!(
        "id:      {}",
        l.id.as_deref()
            .unwrap_or("(none yet: given with its next spend)")
    );
    say!("dataset: {}", l.dataset);
    let summary = l.summary();
    let composition = summary.composition;
    say!("total ε: {}", number(l.total_epsilon));
    say!(
        "spent:   {} in {} runs ({} composition)",
        number(composition.epsilon),
        l.spends.len(),
        composition.method.name()
    );
    say!("left:    {}", number(summary.remaining_epsilon));
    if l.total_delta > 0.0 {
        say!(
            "total δ: {:e}, spent {:e}{}",
            l.total_delta,
            composition.delta,
            match composition.method {
                dp_fit::Method::Basic => " (the spends' δs added up)",
                dp_fit::Method::Pld =>
                    " (the ε above is the composed privacy-loss distribution's at the whole δ)",
            }
        );
    } else {
        say!("total δ: 0 (pure ε: runs that spend a δ are refused)");
    }
    for s in &l.spends {
        let delta = if s.delta > 0.0 {
            format!(", δ = {:e}", s.delta)
        } else {
            String::new()
        };
        let number = s
            .sequence
            .map_or(String::from("  -"), |n| format!("{n:>3}"));
        let delta = match s.curve {
            None => delta,
            Some(dp_fit::Curve::Gaussian {
                sensitivity_over_sigma,
            }) => format!("{delta}, Gaussian Δ/σ = {sensitivity_over_sigma:.6}"),
            Some(dp_fit::Curve::Zcdp { rho }) => format!("{delta}, ρ-zCDP ρ = {rho:e}"),
            Some(dp_fit::Curve::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
            }) => format!(
                "{delta}, DP-SGD q = {sampling_rate:.6}, σ = {noise_multiplier:.4}, T = {steps}"
            ),
        };
        say!(
            "{number}  ε = {:<8}{delta} {} → {} (schema {})",
            crate::text::number(s.epsilon),
            s.command,
            s.model,
            crate::text::prefix(&s.schema_sha256, 12)
        );
    }
    Ok(())
}

/// `dpml ledger check`: names every model (by its report) whose spend the ledger does not
/// hold — a ledger edited, or restored from a copy older than the model. Fails if any.
pub fn check(path: &Path, models: &[PathBuf]) -> Result<(), Failure> {
    let ledger = dp_fit::ledger::read(path).map_err(failure)?;
    let mut held = Vec::new();
    let mut problems = Vec::new();
    for model in models {
        let report = crate::train::report_paths(model).0;
        let text = crate::input::read_text_bounded(
            &report,
            crate::input::MAX_REPORT_BYTES,
            "a dpml report",
        )?;
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| fail(format!("{}: not a dpml report: {e}", report.display())))?;
        let entry = &value["ledger"];
        let (Some(id), Some(sequence)) = (entry["id"].as_str(), entry["sequence"].as_u64()) else {
            problems.push(format!(
                "{}: its report records no ledger spend (trained without --ledger, or by a \
                 dpml older than ledger identities)",
                model.display()
            ));
            continue;
        };
        if ledger.id.as_deref() != Some(id) {
            problems.push(format!(
                "{}: charged to another ledger (id {id}, this one is {})",
                model.display(),
                ledger.id.as_deref().unwrap_or("without an id")
            ));
        } else {
            held.push((model.display().to_string(), sequence));
        }
    }
    for (model, sequence) in ledger.missing(&held) {
        problems.push(format!(
            "{model}: its spend (number {sequence}) is not in the ledger — the ledger was \
             edited or restored from an older copy, and its budget understates what was spent"
        ));
    }
    if problems.is_empty() {
        say!(
            "ledger {}: holds the spend of every model given ({})",
            path.display(),
            models.len()
        );
        Ok(())
    } else {
        Err(fail(format!(
            "ledger {}:\n  {}",
            path.display(),
            problems.join("\n  ")
        )))
    }
}
