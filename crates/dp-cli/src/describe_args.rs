//! The public inputs of a private description, shared by `dpml schema init --private` and
//! `dpml train --private-schema` (one set of flags, one request).

use std::path::PathBuf;

use crate::schema_init::PrivateRequest;
use crate::{Failure, fail};

/// What is public about the columns of a file nobody has described.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DescribeArgs {
    /// Private description: the label column.
    #[arg(long)]
    pub label: Option<String>,
    /// Private description: the label's class encoded +1 (public).
    #[arg(long)]
    pub positive: Option<String>,
    /// Private description: the label's classes, if public (comma-separated); else released.
    #[arg(long, value_delimiter = ',')]
    pub classes: Option<Vec<String>>,
    /// Private description: the categorical columns (comma-separated); every other column
    /// not ignored and not the label is numeric.
    #[arg(long, value_delimiter = ',')]
    pub categorical: Vec<String>,
    /// Private description: columns to read past (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Private description: a public list of a categorical column's possible levels,
    /// COLUMN=L1,L2,… (repeatable): released with pure ε.
    #[arg(long, value_name = "COLUMN=LEVELS")]
    pub levels: Vec<String>,
    /// Private description: another spelling of a class, ALIAS,CLASS (repeatable; split at
    /// the comma, since class names such as "<=50K" hold '=').
    #[arg(long, value_name = "ALIAS,CLASS")]
    pub alias: Vec<String>,
    /// Private description: the column names of a CSV file without a header, in order
    /// (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub columns: Option<Vec<String>>,
    /// Private description: cells that mean "missing" (comma-separated, e.g. "?,NA").
    #[arg(long, value_delimiter = ',')]
    pub missing: Vec<String>,
    /// Private description: skip CSV lines starting with this character.
    #[arg(long)]
    pub comment: Option<char>,
    /// Private description: encode a missing numeric value as 0 (default: refuse it).
    #[arg(long)]
    pub numeric_missing_zero: bool,
    /// Private description: the written schema's row scaling [default: unit_norm].
    #[arg(long, value_parser = ["unit_norm", "attributes"])]
    pub row_scaling: Option<String>,
}

impl DescribeArgs {
    /// The first of these flags that was given, for "needs --private" refusals.
    pub fn first_given(&self) -> Option<&'static str> {
        [
            ("--label", self.label.is_some()),
            ("--positive", self.positive.is_some()),
            ("--classes", self.classes.is_some()),
            ("--categorical", !self.categorical.is_empty()),
            ("--ignore", !self.ignore.is_empty()),
            ("--levels", !self.levels.is_empty()),
            ("--alias", !self.alias.is_empty()),
            ("--columns", self.columns.is_some()),
            ("--missing", !self.missing.is_empty()),
            ("--comment", self.comment.is_some()),
            ("--numeric-missing-zero", self.numeric_missing_zero),
            ("--row-scaling", self.row_scaling.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// Refuses these flags where no private description is asked for (`needs` names the
    /// flag that asks for one).
    pub fn refuse_without(&self, needs: &str) -> Result<(), Failure> {
        match self.first_given() {
            Some(flag) => Err(fail(format!(
                "{flag} describes the data privately: it needs {needs}"
            ))),
            None => Ok(()),
        }
    }

    /// The description's request: these public facts, the file, the budget and the output.
    pub fn request(
        self,
        data: PathBuf,
        out: PathBuf,
        (epsilon, delta): (f64, f64),
        ledger: Option<PathBuf>,
        delimiter: char,
    ) -> PrivateRequest {
        PrivateRequest {
            data,
            out,
            epsilon,
            delta,
            ledger,
            label: self.label,
            positive: self.positive,
            classes: self.classes,
            categorical: self.categorical,
            ignore: self.ignore,
            levels: self.levels,
            aliases: self.alias,
            columns: self.columns,
            missing: self.missing,
            comment: self.comment,
            delimiter,
            row_scaling: match self.row_scaling.as_deref() {
                Some("attributes") => dp_schema::RowScaling::Attributes,
                _ => dp_schema::RowScaling::UnitNorm,
            },
            numeric_missing_zero: self.numeric_missing_zero,
        }
    }
}

/// `dpml train --private-schema`: the description asked for beside the fit.
pub struct Described {
    /// Where the private schema is written (never replacing a file).
    pub schema_out: PathBuf,
    /// The share of `--epsilon` the description spends (default
    /// [`dp_schema::DESCRIBE_SHARE`]).
    pub share: Option<f64>,
    /// The description's δ (for levels or classes without a public list), charged on top
    /// of the fit's.
    pub delta: f64,
    /// The CSV field separator.
    pub delimiter: char,
    /// What is public about the columns.
    pub args: DescribeArgs,
}

/// Describes the data privately at `share · ε`, writes the schema, then trains on the same
/// file with it at the rest of ε: one run, two spends on the ledger (the description's and
/// the fit's), which compose to the total by basic composition. Everything refused without
/// the data — the share, the fit's parameters, the outputs, a ledger that cannot pay the
/// total — is refused before anything is read or charged; a refusal that needs the schema
/// comes after the description, whose spend then stands.
pub fn describe_then_train(
    described: Described,
    mut train: crate::train::TrainRequest,
) -> Result<(), Failure> {
    // The fit's parameters (its ε, the total, among them) first.
    crate::train::check_parameters(&train)?;
    let share = described.share.unwrap_or(dp_schema::DESCRIBE_SHARE);
    let total = train.epsilon;
    // dp-schema's split: the share checked, the two spends summing to at most the total.
    let (describe_epsilon, fit_epsilon) = dp_schema::split_total_epsilon(total, share)
        .map_err(|e| fail(format!("--describe-share {share}: {e}")))?;
    let (report_json, report_md) = crate::train::report_paths(&train.out);
    for path in [&train.out, &report_json, &report_md] {
        crate::output::check_free(path, train.force)?;
    }
    if [&train.out, &report_json, &report_md].contains(&&described.schema_out) {
        return Err(fail(format!(
            "--private-schema {}: the model or its report is written there",
            described.schema_out.display()
        )));
    }
    if let Some(ledger) = &train.ledger {
        let charge = dp_fit::Charge {
            epsilon: total,
            delta: train.delta + described.delta,
        };
        // Checked, then released: each step charges its own spend below.
        drop(dp_fit::Pending::begin(ledger, charge).map_err(|e| fail(e.to_string()))?);
    }
    let request = described.args.request(
        train.data.clone(),
        described.schema_out.clone(),
        (describe_epsilon, described.delta),
        train.ledger.clone(),
        described.delimiter,
    );
    train.described = Some(crate::schema_init::run_private(request)?);
    train.schema = described.schema_out;
    train.epsilon = fit_epsilon;
    eprintln!(
        "training with ε = {} of the total {} (the description spent {})",
        crate::text::number(train.epsilon),
        crate::text::number(total),
        crate::text::number(describe_epsilon)
    );
    let schema = train.schema.display().to_string();
    crate::train::run(train).map_err(|f| {
        fail(format!(
            "{}; the private schema {schema} was written and its description's spend stands",
            f.0
        ))
    })
}
