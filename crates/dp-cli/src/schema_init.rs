//! `dpml schema init`: a schema skeleton from a file's column names alone.

use std::path::Path;

use crate::output::{Staged, check_free};
use crate::{Failure, fail};

/// The column names of `data`: a CSV file's header (its first record, decompressed if the
/// file is gzip, as `dpml train` reads it; no data row is read) or a Parquet file's schema
/// (metadata, no rows). A name given twice is refused: `dpml train` would refuse the file.
fn column_names(data: &Path, delimiter: u8) -> Result<Vec<String>, Failure> {
    let file = data.display().to_string();
    if dp_schema::is_parquet(data) {
        let handle = dp_schema::open_parquet(data)?;
        let reader = parquet::file::serialized_reader::SerializedFileReader::new(handle)
            .map_err(|e| fail(format!("{file}: not a readable Parquet file: {e}")))?;
        use parquet::file::reader::FileReader;
        let schema = reader.metadata().file_metadata().schema_descr();
        let names: Vec<String> = schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| f.name().to_owned())
            .collect();
        refuse_duplicates(&names, |field| format!("{file}, field {field}"))?;
        return Ok(names);
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .delimiter(delimiter)
        .from_reader(dp_schema::csv_text(data)?);
    let mut record = csv::ByteRecord::new();
    let found = reader
        .read_byte_record(&mut record)
        .map_err(|e| fail(format!("{file}: cannot read it: {e}")))?;
    if !found {
        return Err(fail(format!("{file}: empty; no header to read")));
    }
    let line = record.position().map_or(1, csv::Position::line);
    let names = record
        .iter()
        .enumerate()
        .map(|(i, name)| {
            std::str::from_utf8(name)
                .map(|n| {
                    let n = n.trim_matches([' ', '\t']);
                    n.strip_prefix('\u{feff}').unwrap_or(n).to_owned()
                })
                .map_err(|_| {
                    fail(format!(
                        "{file}, line {line}, field {}: not valid UTF-8",
                        i + 1
                    ))
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    refuse_duplicates(&names, |field| {
        format!("{file}, line {line}, field {field}")
    })?;
    Ok(names)
}

/// Refuses a name given twice, at the second (`at(field)` names where, fields from 1).
fn refuse_duplicates(names: &[String], at: impl Fn(usize) -> String) -> Result<(), Failure> {
    for (i, name) in names.iter().enumerate() {
        if let Some(first) = names[..i].iter().position(|n| n == name) {
            return Err(fail(format!(
                "{}: column {name:?} a second time (first at field {}); `dpml train` refuses \
                 a file with two columns of one name: rename one",
                at(i + 1),
                first + 1
            )));
        }
    }
    Ok(())
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// The skeleton's text.
pub fn skeleton(data: &Path, names: &[String], delimiter: char) -> String {
    let mut out = format!(
        "# Schema skeleton written by `dpml schema init` from the column names of {} — no data\n\
         # row was read.\n\
         #\n\
         # Fill in every column. Bounds, levels and classes MUST be public: take them from the\n\
         # data's documentation or from domain knowledge, never from the file itself. Values\n\
         # computed from the data would leak it, and no privacy guarantee covers them.\n\
         #   numeric:     type = \"numeric\", lower = …, upper = …  (values outside are clamped)\n\
         #                missing = \"error\" | \"zero\"\n\
         #   categorical: type = \"categorical\", levels = [\"…\", …]\n\
         #                unseen = \"error\" | \"ignore\" | \"other\", missing = \"error\" | \"zero\" | \"level\"\n\
         #   label:       type = \"label\", classes = [\"…\", …], positive = \"…\"  (exactly one column;\n\
         #                aliases = {{ \"other spelling\" = \"class\" }} if needed)\n\
         #   target:      type = \"target\", lower = …, upper = …  (instead of a label: a\n\
         #                regression; clip = true clamps targets outside the bounds)\n\
         #   ignore:      type = \"ignore\"  (read past, never used)\n\
         # Then check it: `dpml train` refuses a schema with a column left as \"FILL_IN\".\n\
         \n\
         version = 1\n\
         # How each row is put into the unit ball: \"unit_norm\" (divided by its own norm; the\n\
         # classifiers' default, measured better on every table tried) or \"attributes\" (by\n\
         # √(number of attributes); the only choice, and the default, for a target column).\n\
         # row_scaling = \"unit_norm\"\n\
         intercept = true\n\
         \n\
         [csv]\n\
         header = true\n\
         delimiter = {}\n\
         trim = true\n\
         # Cells that mean \"missing\", e.g. [\"\", \"NA\", \"?\"].\n\
         missing = []\n",
        data.display(),
        quoted(&delimiter.to_string()),
    );
    for name in names {
        out.push_str(&format!(
            "\n[[columns]]\nname = {}\ntype = \"FILL_IN\"\n",
            quoted(name)
        ));
    }
    out
}

/// Runs the command: writes to `out` (refused if it exists unless `force`) or prints.
pub fn run(data: &Path, out: Option<&Path>, delimiter: char, force: bool) -> Result<(), Failure> {
    if !delimiter.is_ascii() {
        return Err(fail(format!(
            "--delimiter {delimiter:?}: must be one ASCII character"
        )));
    }
    if let Some(out) = out {
        check_free(out, force)?;
    }
    let names = column_names(data, delimiter as u8)?;
    let text = skeleton(data, &names, delimiter);
    match out {
        None => crate::text::emit(format_args!("{text}")),
        Some(out) => {
            let mut staged = Staged::create(out, force)?;
            staged.write(text.as_bytes())?;
            staged.commit()?;
            eprintln!(
                "wrote {} ({} columns to fill in)",
                out.display(),
                names.len()
            );
        }
    }
    Ok(())
}

/// `dpml schema init --private`'s public inputs: the column types, the label, and the
/// budget of the description.
pub struct PrivateRequest {
    pub data: std::path::PathBuf,
    pub out: std::path::PathBuf,
    pub epsilon: f64,
    pub delta: f64,
    pub ledger: Option<std::path::PathBuf>,
    /// The label column.
    pub label: Option<String>,
    /// The class encoded +1.
    pub positive: Option<String>,
    /// The label's classes, when public.
    pub classes: Option<Vec<String>>,
    /// Categorical columns (every other column not ignored is numeric).
    pub categorical: Vec<String>,
    /// Columns read past.
    pub ignore: Vec<String>,
    /// `COL=L1,L2,…`: a public candidate list of a categorical column's levels.
    pub levels: Vec<String>,
    /// `ALIAS,CLASS`: another spelling of a class.
    pub aliases: Vec<String>,
    /// The column names of a file without a header, in order (then header = false).
    pub columns: Option<Vec<String>>,
    /// Missing-value tokens.
    pub missing: Vec<String>,
    /// Lines starting with this character are skipped.
    pub comment: Option<char>,
    pub delimiter: char,
    /// `attributes` or `unit_norm`.
    pub row_scaling: dp_schema::RowScaling,
    /// Encode a missing numeric value as 0 (else a missing numeric value is an error).
    pub numeric_missing_zero: bool,
}

/// `COL=VALUE` split at its first `=`.
fn pair<'a>(flag: &str, text: &'a str) -> Result<(&'a str, &'a str), Failure> {
    text.split_once('=')
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| fail(format!("{flag} {text:?}: write it as NAME=VALUE")))
}

/// The public spec of the description, checked against the file's column names.
fn private_spec(
    req: &PrivateRequest,
    names: &[String],
) -> Result<dp_schema::DescribeSpec, Failure> {
    use dp_schema::{DescribeColumn, DescribeKind, DescribeSpec, NumericMissing};
    let known = |flag: &str, name: &str| -> Result<(), Failure> {
        if names.iter().any(|n| n == name) {
            Ok(())
        } else {
            Err(fail(format!(
                "{flag} {name:?}: no column of that name in {} (its columns: {})",
                req.data.display(),
                names.join(", ")
            )))
        }
    };
    let label = req.label.as_deref().ok_or_else(|| {
        fail("--private needs --label NAME: the label column (and --positive CLASS)")
    })?;
    known("--label", label)?;
    let positive = req
        .positive
        .clone()
        .ok_or_else(|| fail("--private needs --positive CLASS: the class encoded +1"))?;
    for name in req.categorical.iter().chain(&req.ignore) {
        known("--categorical/--ignore", name)?;
    }
    let mut candidates = std::collections::BTreeMap::new();
    for text in &req.levels {
        let (name, list) = pair("--levels", text)?;
        known("--levels", name)?;
        if !req.categorical.iter().any(|c| c == name) {
            return Err(fail(format!(
                "--levels {name}=…: {name} is not among --categorical"
            )));
        }
        let list: Vec<String> = list.split(',').map(str::to_owned).collect();
        if candidates.insert(name.to_owned(), list).is_some() {
            return Err(fail(format!("--levels {name}=… given twice")));
        }
    }
    let mut aliases = std::collections::BTreeMap::new();
    for text in &req.aliases {
        // Split at a comma: class names such as Adult's "<=50K" hold '='.
        let (alias, class) = text
            .split_once(',')
            .filter(|(a, c)| !a.is_empty() && !c.is_empty())
            .ok_or_else(|| fail(format!("--alias {text:?}: write it as ALIAS,CLASS")))?;
        aliases.insert(alias.to_owned(), class.to_owned());
    }
    let mut columns = Vec::with_capacity(names.len());
    for name in names {
        let categorical = req.categorical.contains(name);
        let ignored = req.ignore.contains(name);
        let kind = if name == label {
            if categorical || ignored {
                return Err(fail(format!(
                    "--label {name:?} is also given as --categorical or --ignore"
                )));
            }
            DescribeKind::Label {
                positive: positive.clone(),
                classes: req.classes.clone(),
                aliases: aliases.clone(),
            }
        } else if categorical && ignored {
            return Err(fail(format!(
                "column {name:?} is given as both --categorical and --ignore"
            )));
        } else if categorical {
            DescribeKind::Categorical {
                candidates: candidates.get(name).cloned(),
            }
        } else if ignored {
            DescribeKind::Ignore
        } else {
            DescribeKind::Numeric {
                missing: if req.numeric_missing_zero {
                    NumericMissing::Zero
                } else {
                    NumericMissing::Error
                },
            }
        };
        columns.push(DescribeColumn {
            name: name.clone(),
            kind,
        });
    }
    let csv = dp_schema::CsvFormat {
        header: req.columns.is_none(),
        delimiter: req.delimiter,
        comment: req.comment,
        trim: true,
        missing: req.missing.clone(),
    };
    Ok(DescribeSpec {
        row_scaling: req.row_scaling,
        ..DescribeSpec::new(columns, csv, req.epsilon, req.delta)
    })
}

/// `dpml schema init --private`: a schema whose bounds, levels and classes are private
/// releases, charged to `--ledger` like a fit. Refusals that need no data (the options,
/// the column names from the header, δ = 0 with levels to release, a ledger that cannot pay)
/// come before any record is read; the description's spend is charged once its noise may
/// have been drawn (dp-fit's rule), and the schema is staged before the charge is stored.
/// Returns the (ε, δ) the description spent (δ 0 when no release needed it).
pub fn run_private(req: PrivateRequest) -> Result<(f64, f64), Failure> {
    run_private_with(
        req,
        dp_noise::DpRng::from_os_entropy().map_err(|e| fail(e.to_string()))?,
    )
}

/// [`run_private`] with the release's generator given (the tests' seeded one).
pub(crate) fn run_private_with<R: dp_noise::ReleaseRng>(
    req: PrivateRequest,
    mut rng: R,
) -> Result<(f64, f64), Failure> {
    if !req.delimiter.is_ascii() {
        return Err(fail(format!(
            "--delimiter {:?}: must be one ASCII character",
            req.delimiter
        )));
    }
    // Never replaces a file: a description is a spend, and its output is its only record.
    check_free(&req.out, false)?;
    let names = match &req.columns {
        Some(names) => names.clone(),
        None => column_names(&req.data, req.delimiter as u8)?,
    };
    let spec = private_spec(&req, &names)?;
    let plan = dp_schema::DescribePlan::new(spec).map_err(|e| fail(e.to_string()))?;
    let (epsilon, delta) = plan.charge();
    let charge = dp_fit::Charge { epsilon, delta };
    let mut pending = match &req.ledger {
        None => None,
        Some(path) => Some(dp_fit::Pending::begin(path, charge).map_err(|e| fail(e.to_string()))?),
    };
    let spend = dp_fit::Spend::new(
        epsilon,
        delta,
        "schema init --private",
        &req.out.display().to_string(),
    );
    let file = req.data.display().to_string();
    let bar = crate::progress::reading(&file);
    // Reading refuses before any draw: nothing is charged.
    let describer =
        dp_schema::describe_file(&req.data, &plan, &mut crate::progress::updater(&bar))?;
    bar.finish_and_clear();
    // From the plan's thresholds and n alone, before any noise is drawn.
    if let Some(warning) = plan.outlook(describer.rows()).warning {
        eprintln!("warning: {warning}");
    }
    let mut witness = dp_noise::Witnessed::new(&mut rng);
    let released = describer.release(&mut witness);
    let drew = witness.drew();
    let description = match released {
        Ok(d) => d,
        Err(e) => return Err(settle(pending, drew, spend, fail(e.to_string()))),
    };
    let spend = dp_fit::Spend {
        schema_sha256: description.schema.hash(),
        ..spend
    };
    let mut staged = match Staged::create(&req.out, false) {
        Ok(s) => s,
        Err(failure) => return Err(settle(pending, drew, spend, failure)),
    };
    let mut text = description.text.clone();
    if let Some(pending) = pending.as_mut() {
        let (sequence, _) = pending.record(spend).map_err(|e| fail(e.to_string()))?;
        text.push_str(&format!(
            "\n# Charged to the ledger {} as spend {sequence}.\n",
            req.ledger
                .as_ref()
                .expect("a pending charge has a ledger")
                .display()
        ));
    }
    if let Err(failure) = staged.write(text.as_bytes()).and_then(|()| staged.finish()) {
        // Noise was drawn: the spend stands even though the schema could not be written.
        return Err(match pending {
            Some(p) => match p.store() {
                Ok(_) => fail(format!(
                    "{}; the description had drawn its noise, so its spend was charged",
                    failure.0
                )),
                Err(e) => fail(format!(
                    "{}; and its spend could not be stored: {e}",
                    failure.0
                )),
            },
            None => failure,
        });
    }
    if let Some(pending) = pending {
        pending.store().map_err(|e| fail(e.to_string()))?;
    }
    staged.commit()?;
    let dropped = description
        .schema
        .columns
        .iter()
        .zip(plan.spec().columns.iter())
        .filter(|(w, s)| {
            matches!(w.kind, dp_schema::ColumnKind::Ignore)
                && !matches!(s.kind, dp_schema::DescribeKind::Ignore)
        })
        .map(|(w, _)| w.name.clone())
        .collect::<Vec<_>>();
    if !dropped.is_empty() {
        eprintln!(
            "warning: no usable release for column(s) {}: written as type = \"ignore\" (more \
             epsilon, or public facts, would keep them)",
            dropped.join(", ")
        );
    }
    eprintln!(
        "wrote {} ({} facts released privately from {} rows; ε = {}{} spent{})",
        req.out.display(),
        description.facts.len(),
        description.rows,
        crate::text::number(epsilon),
        if delta > 0.0 {
            format!(", δ = {delta:e}")
        } else {
            String::new()
        },
        if req.ledger.is_some() {
            ", charged to the ledger"
        } else {
            ""
        }
    );
    Ok((epsilon, delta))
}

/// A description that failed: its spend is stored if its noise may have been drawn.
fn settle(
    pending: Option<dp_fit::Pending>,
    drew: bool,
    spend: dp_fit::Spend,
    failure: Failure,
) -> Failure {
    let Some(pending) = pending else {
        return failure;
    };
    match pending.settle_failure(drew, spend) {
        Ok(None) => failure,
        Ok(Some(sequence)) => fail(format!(
            "{}; the description had drawn its noise, so its spend was charged to the \
             ledger (spend {sequence})",
            failure.0
        )),
        Err(e) => fail(format!(
            "{}; and its spend could not be stored: {e}",
            failure.0
        )),
    }
}

#[cfg(test)]
#[path = "schema_init_tests.rs"]
mod tests;
