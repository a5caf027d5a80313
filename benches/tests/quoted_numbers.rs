//! Numbers the README and the guide quote from results files still match those files.
//!
//! A quoted number carries its source in an HTML comment right after it (invisible on
//! GitHub and in the book):
//!
//! ```text
//! **0.192**<!-- from utility-quick/end_to_end.csv where dataset="adult (official split)" choice=GroupedRule epsilon=0.1 take mean_error -->
//! ```
//!
//! The file is a CSV under `docs/quoted/` (a committed copy of the results files a run of
//! `cargo xtask reproduce` wrote: `results/` itself is never committed); `where` picks
//! exactly one row by its columns' values, `take` names the column. The quoted number must
//! be the file's value rounded to as many decimals as the quote shows.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{documents, root};

/// One tagged number: the quoted text and its source.
#[derive(Debug)]
struct Quote {
    number: String,
    file: String,
    select: Vec<(String, String)>,
    column: String,
}

const OPEN: &str = "<!-- from ";

/// The tagged numbers of `markdown`, or a description of a malformed tag.
fn quotes(markdown: &str) -> Vec<Result<Quote, String>> {
    let mut found = Vec::new();
    let mut rest = markdown;
    let mut offset = 0;
    while let Some(at) = rest.find(OPEN) {
        let before = &markdown[..offset + at];
        let after = &rest[at + OPEN.len()..];
        let Some(end) = after.find("-->") else {
            found.push(Err(format!("unclosed tag: {}", &rest[at..])));
            break;
        };
        found.push(parse(before, &after[..end]));
        offset += at + OPEN.len() + end;
        rest = &after[end..];
    }
    found
}

/// The number ending `before` (bold markers allowed between it and the tag) and the tag's
/// `body`: `FILE where K=V K="V W" … take COLUMN`.
fn parse(before: &str, body: &str) -> Result<Quote, String> {
    let text = before.trim_end_matches('*');
    let start = text
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .map_or(0, |i| i + 1);
    let number = text[start..].trim_start_matches('e').to_string();
    if number.parse::<f64>().is_err() {
        return Err(format!("no number before the tag `{body}`"));
    }
    let words = split_words(body);
    let bad = || format!("malformed tag `{body}`");
    let (file, rest) = words.split_first().ok_or_else(bad)?;
    let (column, select) = match rest {
        [w, select @ .., take, column] if w == "where" && take == "take" => (column, select),
        _ => return Err(bad()),
    };
    let select = select
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
                .ok_or_else(bad)
        })
        .collect::<Result<_, _>>()?;
    Ok(Quote {
        number,
        file: file.clone(),
        select,
        column: column.clone(),
    })
}

/// Splits at spaces outside double quotes.
fn split_words(body: &str) -> Vec<String> {
    let (mut words, mut word, mut quoted) = (Vec::new(), String::new(), false);
    for c in body.trim().chars() {
        match c {
            '"' => {
                quoted = !quoted;
                word.push(c);
            }
            ' ' if !quoted => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// A CSV's rows as column → value maps (no field of these files holds a quoted comma).
fn read_csv(path: &Path) -> Result<Vec<BTreeMap<String, String>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    Ok(lines
        .filter(|l| !l.is_empty())
        .map(|line| {
            header
                .iter()
                .map(|h| h.to_string())
                .zip(line.split(',').map(str::to_string))
                .collect()
        })
        .collect())
}

/// Whether `quoted` is `value` rounded to the quote's last digit (`0.192`: to 3 decimals;
/// `1.2e-2`: to 3 decimals as well).
fn rounds_to(quoted: &str, value: f64) -> bool {
    let (mantissa, exponent) = quoted.split_once('e').unwrap_or((quoted, "0"));
    let decimals = mantissa.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let q: f64 = quoted.parse().unwrap_or(f64::NAN);
    (q - value).abs() <= 0.5 * 10f64.powi(exponent - decimals) * (1.0 + 1e-9)
}

/// `None` when `quote` matches its source, else what is wrong.
fn check(folder: &Path, quote: &Quote) -> Option<String> {
    let rows = match read_csv(&folder.join(&quote.file)) {
        Ok(rows) => rows,
        Err(why) => return Some(why),
    };
    let selected: Vec<_> = rows
        .iter()
        .filter(|row| {
            quote
                .select
                .iter()
                .all(|(k, v)| row.get(k).is_some_and(|x| x == v))
        })
        .collect();
    let [row] = selected.as_slice() else {
        return Some(format!(
            "{} rows of {} match {:?}",
            selected.len(),
            quote.file,
            quote.select
        ));
    };
    let Some(value) = row.get(&quote.column).and_then(|v| v.parse::<f64>().ok()) else {
        return Some(format!(
            "{} has no number in column {}",
            quote.file, quote.column
        ));
    };
    (!rounds_to(&quote.number, value)).then(|| {
        format!(
            "quotes {} where {} {:?} has {} = {value}",
            quote.number, quote.file, quote.select, quote.column
        )
    })
}

/// Every tagged number of every document, with what is wrong with it.
fn mismatches(folder: &Path, docs: &[(String, String)]) -> (usize, Vec<String>) {
    let (mut count, mut wrong) = (0, Vec::new());
    for (name, text) in docs {
        for quote in quotes(text) {
            count += 1;
            match quote {
                Ok(q) => {
                    if let Some(why) = check(folder, &q) {
                        wrong.push(format!("{name}: {why}"));
                    }
                }
                Err(why) => wrong.push(format!("{name}: {why}")),
            }
        }
    }
    (count, wrong)
}

fn read_documents() -> Vec<(String, String)> {
    documents()
        .into_iter()
        .map(|path| {
            let name = path
                .strip_prefix(root())
                .unwrap_or(&path)
                .display()
                .to_string();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn quoted_numbers_match_their_results_files() {
    let docs = read_documents();
    let (count, wrong) = mismatches(&root().join("docs/quoted"), &docs);
    assert!(
        wrong.is_empty(),
        "quoted numbers that do not match:\n{}",
        wrong.join("\n")
    );
    // The README's headline table and the guide's validation numbers are tagged.
    for page in ["README.md", "docs/src/choosing/utility.md"] {
        let (name, text) = docs.iter().find(|(n, _)| n == page).unwrap();
        assert!(!quotes(text).is_empty(), "{name} quotes no tagged number");
    }
    assert!(count >= 6, "only {count} tagged numbers");
}

/// The check fails when a quoted number is changed, when a tag picks no row or several,
/// and when the number before a tag is missing: each mutation of a true quote is caught.
#[test]
fn a_changed_quote_is_caught() {
    let folder = std::env::temp_dir().join(format!("quoted-numbers-{}", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("t.csv"),
        "dataset,choice,epsilon,mean_error\nadult (official split),Rule,0.1,0.19163\nadult,Rule,0.1,0.2\nadult,Rule,0.2,0.2\n",
    )
    .unwrap();
    let tag = r#"<!-- from t.csv where dataset="adult (official split)" choice=Rule epsilon=0.1 take mean_error -->"#;
    let doc = |text: String| vec![("doc".to_string(), text)];
    let good = mismatches(&folder, &doc(format!("| **0.192**{tag} |")));
    assert_eq!(good, (1, vec![]));
    assert!(
        mismatches(&folder, &doc(format!("0.1916{tag}")))
            .1
            .is_empty()
    );
    assert!(
        mismatches(&folder, &doc(format!("1.9e-1{tag}")))
            .1
            .is_empty()
    );
    for broken in [
        format!("| **0.193**{tag} |"),
        format!("0.1917{tag}"),
        format!("0.18{tag} "),
        format!("1.8e-1{tag} "),
        format!("at ε = {tag}"),
        "0.2<!-- from t.csv where dataset=adult choice=Rule take mean_error -->".to_string(),
        "0.2<!-- from t.csv where dataset=adult epsilon=0.1 take nothing -->".to_string(),
        "0.2<!-- from missing.csv where dataset=adult take mean_error -->".to_string(),
        "0.2<!-- from t.csv dataset=adult -->".to_string(),
    ] {
        let (count, wrong) = mismatches(&folder, &doc(broken.clone()));
        assert_eq!((count, wrong.len()), (1, 1), "not caught: {broken}");
    }
    let _ = std::fs::remove_dir_all(&folder);
}
