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
         # Each row is divided by its own norm to lie in the unit ball (or \"attributes\": by\n\
         # √(number of attributes)); unit_norm measured better on every table tried.\n\
         row_scaling = \"unit_norm\"\n\
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
        None => print!("{text}"),
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
