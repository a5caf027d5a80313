//! Schema checks, the encoding, and the readers on small files written here; the committed
//! schemas on the real files where `$DP_ML_DATA_DIR` has them.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::{
    Encoder, Problem, ReadError, ReadOptions, Schema, SchemaError, read_batches, read_training_set,
};

const SMALL: &str = r#"
version = 1
row_scaling = "attributes"
[csv]
header = true
trim = true
missing = ["?", "NA"]

[[columns]]
name = "age"
type = "numeric"
lower = 0
upper = 100

[[columns]]
name = "color"
type = "categorical"
levels = ["red", "green", "blue"]

[[columns]]
name = "note"
type = "ignore"

[[columns]]
name = "y"
type = "label"
classes = ["no", "yes"]
positive = "yes"
aliases = { "yes." = "yes" }
"#;

fn small() -> Schema {
    Schema::from_toml(SMALL, "small.toml").unwrap()
}

/// `SMALL` with `from` replaced by `to` (which must occur).
fn edited(from: &str, to: &str) -> Result<Schema, SchemaError> {
    assert!(SMALL.contains(from), "{from}");
    Schema::from_toml(&SMALL.replacen(from, to, 1), "bad.toml")
}

fn invalid(result: Result<Schema, SchemaError>) -> (String, String, String) {
    let text = result
        .as_ref()
        .map_or_else(ToString::to_string, |_| String::new());
    match result {
        Err(SchemaError::Invalid {
            file, key, value, ..
        }) => {
            assert_eq!(file, "bad.toml");
            (key, value, text)
        }
        other => panic!("expected an invalid schema, got {other:?}"),
    }
}

#[test]
fn every_schema_rule_is_checked_and_named() {
    let (key, value, _) = invalid(edited("upper = 100", "upper = -5"));
    assert_eq!((key.as_str(), value.as_str()), ("columns[0].upper", "-5.0"));
    let (key, _, _) = invalid(edited("upper = 100", "upper = 0"));
    assert_eq!(key, "columns[0].upper");
    let (key, value, _) = invalid(edited("lower = 0", "lower = -inf"));
    assert_eq!((key.as_str(), value.as_str()), ("columns[0].lower", "-inf"));
    let (key, value, _) = invalid(edited("upper = 100", "upper = nan"));
    assert_eq!((key.as_str(), value.as_str()), ("columns[0].upper", "NaN"));
    let (key, _, _) = invalid(edited("upper = 100\n", ""));
    assert_eq!(key, "columns[0].upper");
    let (key, value, _) = invalid(edited("\"green\", \"blue\"", "\"green\", \"red\""));
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("columns[1].levels[2]", "\"red\"")
    );
    let (key, value, _) = invalid(edited("name = \"note\"", "name = \"age\""));
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("columns[2].name", "\"age\"")
    );
    let (key, _, _) = invalid(edited("type = \"label\"", "type = \"ignore\"\n"));
    // An ignored column with label keys: the misplaced key is named first.
    assert_eq!(key, "columns[3].classes");
    let (key, value, _) = invalid(edited("positive = \"yes\"", "positive = \"maybe\""));
    assert_eq!(
        (key.as_str(), value.as_str()),
        ("columns[3].positive", "\"maybe\"")
    );
    let (key, _, _) = invalid(edited("classes = [\"no\", \"yes\"]", "classes = [\"yes\"]"));
    assert_eq!(key, "columns[3].classes");
    let (key, _, _) = invalid(edited("\"yes.\" = \"yes\"", "\"yes.\" = \"perhaps\""));
    assert_eq!(key, "columns[3].aliases.\"yes.\"");
    let (key, _, _) = invalid(edited("type = \"numeric\"", "type = \"number\""));
    assert_eq!(key, "columns[0].type");
    let (key, _, _) = invalid(edited("type = \"numeric\"", "type = \"categorical\""));
    assert_eq!(key, "columns[0].lower");
    let (key, _, _) = invalid(edited("version = 1", "version = 2"));
    assert_eq!(key, "version");
    let (key, _, _) = invalid(edited("\"red\", ", "\" red\", "));
    assert_eq!(key, "columns[1].levels[0]");
    let (key, _, _) = invalid(edited("\"red\", ", "\"NA\", "));
    assert_eq!(key, "columns[1].levels[0]");
    let two_labels = format!(
        "{SMALL}\n[[columns]]\nname = \"z\"\ntype = \"label\"\nclasses = [\"a\", \"b\"]\npositive = \"a\"\n"
    );
    match Schema::from_toml(&two_labels, "bad.toml") {
        Err(SchemaError::Invalid { key, value, .. }) => {
            assert_eq!(
                (key.as_str(), value.as_str()),
                ("columns[*].type", "2 label or target columns")
            )
        }
        other => panic!("{other:?}"),
    }
    // No label at all.
    let no_label = SMALL.split("[[columns]]\nname = \"y\"").next().unwrap();
    match Schema::from_toml(no_label, "bad.toml") {
        Err(SchemaError::Invalid { key, .. }) => assert_eq!(key, "columns[*].type"),
        other => panic!("{other:?}"),
    }
    // Unknown keys and wrong types are the parser's errors, naming the file and the key.
    for (from, to, needle) in [
        ("lower = 0", "lowr = 0", "lowr"),
        ("lower = 0", "lower = \"zero\"", "lower"),
    ] {
        match Schema::from_toml(&SMALL.replacen(from, to, 1), "bad.toml") {
            Err(e @ SchemaError::Syntax { .. }) => {
                let text = e.to_string();
                assert!(text.starts_with("schema bad.toml:"), "{text}");
                assert!(text.contains(needle), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_hash_is_of_the_content_not_the_text() {
    let base = small().hash();
    assert_eq!(base.len(), 64);
    let reformatted = SMALL.replace("lower = 0", "lower = 0.0 # a comment");
    assert_eq!(Schema::from_toml(&reformatted, "x").unwrap().hash(), base);
    assert_ne!(edited("upper = 100", "upper = 101").unwrap().hash(), base);
    assert_ne!(edited("trim = true", "trim = false").unwrap().hash(), base);
}

#[test]
fn rows_are_scaled_to_unit_norm_unless_the_schema_says_otherwise() {
    let unstated =
        Schema::from_toml(&SMALL.replace("row_scaling = \"attributes\"\n", ""), "x").unwrap();
    assert_eq!(unstated.row_scaling, crate::RowScaling::UnitNorm);
    assert_eq!(small().row_scaling, crate::RowScaling::Attributes);
}

#[test]
fn the_encoding_clamps_scales_and_one_hots() {
    let schema = small();
    let encoder = Encoder::new(&schema);
    assert_eq!(encoder.features(), 4);
    assert_eq!(
        encoder.feature_names(),
        ["age", "color=red", "color=green", "color=blue"]
    );
    assert_eq!(encoder.groups().count(), 2);
    let s = (1.0 - 1e-12) / 2f64.sqrt();
    let encode =
        |cells: [&str; 4]| encoder.encode(true, |k| crate::Cell::Text(cells[k].as_bytes()));
    let (row, label) = encode(["50", " blue ", "anything", "yes."]).unwrap();
    assert_eq!(row, vec![(0, 0.5 * s), (3, s)]);
    assert_eq!(label, Some(1.0));
    // Clamped to the bounds, never beyond.
    let (row, label) = encode(["250", "red", "", "no"]).unwrap();
    assert_eq!(row, vec![(0, s), (1, s)]);
    assert_eq!(label, Some(-1.0));
    let (row, _) = encode(["-3", "red", "", "no"]).unwrap();
    assert_eq!(row, vec![(1, s)]);
    let problem = |cells| encode(cells).unwrap_err();
    assert_eq!(
        problem(["x1", "red", "", "no"]).problem,
        Problem::NotANumber
    );
    assert_eq!(
        problem(["inf", "red", "", "no"]).problem,
        Problem::NotFinite
    );
    assert_eq!(
        problem(["1", "pink", "", "no"]).problem,
        Problem::UnseenLevel
    );
    assert_eq!(problem(["1", "?", "", "no"]).problem, Problem::Missing);
    assert_eq!(problem(["NA", "red", "", "no"]).problem, Problem::Missing);
    assert_eq!(
        problem(["1", "red", "", "maybe"]).problem,
        Problem::NotAClass
    );
    assert_eq!(
        problem(["1", "red", "", "?"]).problem,
        Problem::MissingLabel
    );
    // A feature's missing value speaks of the feature's policy, a label's of the label.
    assert!(!Problem::Missing.to_string().contains("label"));
    assert!(Problem::MissingLabel.to_string().contains("label"));
    assert_eq!(problem(["1", "red", "", "maybe"]).column, 3);
}

#[test]
fn unseen_and_missing_policies_give_their_slots() {
    let schema = edited(
        "levels = [\"red\", \"green\", \"blue\"]",
        "levels = [\"red\", \"green\", \"blue\"]\nunseen = \"other\"\nmissing = \"level\"",
    )
    .unwrap();
    let encoder = Encoder::new(&schema);
    assert_eq!(encoder.features(), 6);
    assert_eq!(
        encoder.feature_names()[4..],
        ["color:other", "color:missing"]
    );
    let encode = |color: &str| {
        encoder
            .encode(false, |k| {
                crate::Cell::Text([b"0".as_slice(), color.as_bytes()][k])
            })
            .unwrap()
            .0
    };
    let s = (1.0 - 1e-12) / 2f64.sqrt();
    assert_eq!(encode("pink"), vec![(4, s)]);
    assert_eq!(encode("?"), vec![(5, s)]);
    let ignore = edited(
        "levels = [\"red\", \"green\", \"blue\"]",
        "levels = [\"red\", \"green\", \"blue\"]\nunseen = \"ignore\"\nmissing = \"zero\"",
    )
    .unwrap();
    let encoder = Encoder::new(&ignore);
    assert_eq!(encoder.features(), 4);
    for color in ["pink", "?"] {
        let (row, _) = encoder
            .encode(false, |k| {
                crate::Cell::Text([b"0".as_slice(), color.as_bytes()][k])
            })
            .unwrap();
        assert!(row.is_empty());
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::File::create(&path)
        .unwrap()
        .write_all(bytes)
        .unwrap();
    path
}

fn read_all(path: &Path, schema: &Schema, labels: bool) -> Result<(usize, Vec<f64>), ReadError> {
    let encoder = Encoder::new(schema);
    let mut seen = Vec::new();
    let summary = read_batches::<ReadError>(
        path,
        schema,
        &encoder,
        ReadOptions {
            labels,
            batch_rows: 2,
        },
        &mut |_, _| {},
        &mut |batch| {
            assert!(batch.rows.len() <= 2);
            seen.extend(batch.labels.unwrap_or_default());
            Ok(())
        },
    )?;
    Ok((summary.rows, seen))
}

/// The error's (line, column, problem) for a CSV file with `body`.
fn csv_error(body: &[u8]) -> (u64, Option<String>, Problem) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "data.csv", body);
    match read_all(&path, &small(), true) {
        Err(ReadError::Cell {
            file,
            unit,
            line,
            column,
            problem,
        }) => {
            assert_eq!(file, path.display().to_string());
            assert_eq!(unit, "line");
            (line, column, problem)
        }
        other => panic!("expected a cell error, got {other:?}"),
    }
}

const HEADER: &str = "age, color, note, y\n";

#[test]
fn csv_reads_in_batches_with_line_numbers_counting_every_line() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("{HEADER}1, red, a, yes\n\n2, blue,\"b\nc\", no\n3, green, , yes.\n");
    let path = write(dir.path(), "ok.csv", body.as_bytes());
    let (rows, labels) = read_all(&path, &small(), true).unwrap();
    assert_eq!(rows, 3);
    assert_eq!(labels, vec![1.0, -1.0, 1.0]);
    // The record after a blank line and a quoted line break is on line 6.
    let bad = format!("{HEADER}1, red, a, yes\n\n2, blue,\"b\nc\", no\n3, pink, , yes\n");
    assert_eq!(
        csv_error(bad.as_bytes()),
        (6, Some("color".into()), Problem::UnseenLevel)
    );
}

#[test]
fn every_bad_csv_input_is_named_by_file_line_and_column() {
    let row = |r: &str| format!("{HEADER}1, red, a, yes\n{r}\n");
    assert_eq!(
        csv_error(row("2, red, a").as_bytes()),
        (
            3,
            None,
            Problem::Ragged {
                expected: 4,
                found: 3
            }
        )
    );
    assert_eq!(
        csv_error(row("x, red, a, yes").as_bytes()),
        (3, Some("age".into()), Problem::NotANumber)
    );
    assert_eq!(
        csv_error(row("2, rouge, a, yes").as_bytes()),
        (3, Some("color".into()), Problem::UnseenLevel)
    );
    assert_eq!(
        csv_error(row("2, red, a, maybe").as_bytes()),
        (3, Some("y".into()), Problem::NotAClass)
    );
    assert_eq!(
        csv_error(row("?, red, a, yes").as_bytes()),
        (3, Some("age".into()), Problem::Missing)
    );
    let mut bytes = row("2, r\u{e9}d, a, yes").into_bytes();
    let at = bytes.iter().position(|&b| b == 0xc3).unwrap();
    bytes.splice(at..at + 2, [0xe9]); // Latin-1 é
    assert_eq!(
        csv_error(&bytes),
        (3, Some("color".into()), Problem::NotUtf8)
    );
    // An unclosed quote swallows the rest of the file into one cell.
    assert_eq!(
        csv_error(row("2,\"red, a, yes\n3, blue, b, no\n4, red, c, no").as_bytes()).2,
        Problem::Ragged {
            expected: 4,
            found: 2
        }
    );
    assert_eq!(
        csv_error(row("2, red, a,\"yes\n3, blue, b, no").as_bytes()),
        (
            3,
            Some("y".into()),
            Problem::UnbalancedQuote { last_line: 4 }
        )
    );
}

#[test]
fn columns_must_match_the_schema_and_files_must_hold_rows() {
    let dir = tempfile::tempdir().unwrap();
    let schema = small();
    let cases: [(&str, &str); 4] = [
        (
            "age, color, y\n1, red, yes\n",
            "\"note\" is not in the header",
        ),
        (
            "age, color, note, y, extra\n",
            "\"extra\" (field 5) is not in the schema",
        ),
        ("age, color, note, age\n", "names column \"age\" twice"),
        ("", "no data rows"),
    ];
    for (body, needle) in cases {
        let path = write(dir.path(), "c.csv", body.as_bytes());
        let err = read_all(&path, &schema, true).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
        assert!(err.starts_with(&path.display().to_string()), "{err}");
    }
    let path = write(dir.path(), "h.csv", HEADER.as_bytes());
    assert!(matches!(
        read_all(&path, &schema, true),
        Err(ReadError::Empty { .. })
    ));
    // Prediction inputs may leave the label out; training inputs may not.
    let path = write(dir.path(), "p.csv", b"note, color, age\nx, red, 5\n");
    assert_eq!(read_all(&path, &schema, false).unwrap().0, 1);
    assert!(read_all(&path, &schema, true).is_err());
}

#[test]
fn headerless_files_match_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let schema = edited("header = true", "header = false").unwrap();
    let path = write(dir.path(), "a.csv", b"1, red, a, yes\n2, blue, b, no\n");
    assert_eq!(
        read_all(&path, &schema, true).unwrap(),
        (2, vec![1.0, -1.0])
    );
    let path = write(dir.path(), "b.csv", b"1, red, a\n2, blue, b\n");
    assert_eq!(read_all(&path, &schema, false).unwrap().0, 2);
    match read_all(&path, &schema, true) {
        Err(ReadError::Cell {
            line: 1, problem, ..
        }) => {
            assert_eq!(
                problem,
                Problem::Ragged {
                    expected: 4,
                    found: 3
                }
            )
        }
        other => panic!("{other:?}"),
    }
}

mod gzip_files {
    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    const CSV: &[u8] = b"age,color,note,y\n10,red,x,yes\n20,blue,,no\n\n30,green,\"a\nb\",yes.\n";

    #[test]
    fn gzip_is_read_by_extension_or_magic_bytes_as_the_plain_file() {
        let dir = tempfile::tempdir().unwrap();
        let schema = small();
        let plain = write(dir.path(), "d.csv", CSV);
        let expected = read_all(&plain, &schema, true).unwrap();
        assert_eq!(expected, (3, vec![1.0, -1.0, 1.0]));
        assert!(!crate::is_gzip(&plain));
        let named = write(dir.path(), "d.csv.gz", &gzip(CSV));
        let disguised = write(dir.path(), "e.csv", &gzip(CSV));
        for path in [&named, &disguised] {
            assert!(crate::is_gzip(path), "{}", path.display());
            assert_eq!(read_all(path, &schema, true).unwrap(), expected);
        }
        // Two members (`cat a.gz b.gz`) are one file: both are read.
        let mut two = gzip(CSV);
        two.extend(gzip(b"40,red,,no\n"));
        let two = write(dir.path(), "two.gz", &two);
        assert_eq!(read_all(&two, &schema, true).unwrap().0, 4);
    }

    #[test]
    fn gzip_errors_name_the_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let schema = small();
        // Line 5 (after a blank line and a cell quoted over two lines): text in `age`.
        let bad = [CSV, b"old,red,,no\n"].concat();
        let path = write(dir.path(), "bad.csv.gz", &gzip(&bad));
        match read_all(&path, &schema, true) {
            Err(ReadError::Cell {
                file,
                unit: "line",
                line: 7,
                column: Some(c),
                problem: Problem::NotANumber,
            }) => {
                assert_eq!(c, "age");
                assert!(file.ends_with("bad.csv.gz"), "{file}");
            }
            other => panic!("{other:?}"),
        }
        // A truncated stream: an error naming the file and where the text stopped.
        let whole = gzip(&CSV.repeat(50));
        let cut = write(dir.path(), "cut.gz", &whole[..whole.len() / 2]);
        let err = read_all(&cut, &schema, true).unwrap_err().to_string();
        assert!(err.contains("cut.gz: cannot read it"), "{err}");
        assert!(err.contains("(after line"), "{err}");
        // Not gzip after the magic bytes: refused, not read as text.
        let fake = write(dir.path(), "fake.csv", &[0x1f, 0x8b, b'a', b'b', b'\n']);
        let err = read_all(&fake, &schema, true).unwrap_err().to_string();
        assert!(err.contains("fake.csv: cannot read it"), "{err}");
    }
}

mod parquet_files {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Float64Array, Int32Array, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;

    use super::*;

    fn write_parquet(path: &Path, columns: Vec<(&str, ArrayRef)>) {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut writer =
            ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None)
                .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }

    fn column<T: arrow_array::Array + 'static>(a: T) -> ArrayRef {
        Arc::new(a)
    }

    #[test]
    fn parquet_reads_typed_columns_and_names_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        write_parquet(
            &path,
            vec![
                ("y", column(StringArray::from(vec!["yes", "no", "yes."]))),
                ("age", column(Int32Array::from(vec![10, 20, 300]))),
                (
                    "color",
                    column(StringArray::from(vec!["red", "blue", "green"])),
                ),
                ("note", column(Float64Array::from(vec![1.0, 2.0, 3.0]))),
            ],
        );
        let schema = small();
        assert_eq!(
            read_all(&path, &schema, true).unwrap(),
            (3, vec![1.0, -1.0, 1.0])
        );
        let encoder = Encoder::new(&schema);
        let data = read_training_set(&path, &schema, &encoder, &mut |_, _| {}).unwrap();
        assert_eq!((data.len(), data.features()), (3, 4));

        write_parquet(
            &path,
            vec![
                ("y", column(StringArray::from(vec!["yes", "no"]))),
                ("age", column(Float64Array::from(vec![Some(1.0), None]))),
                ("color", column(StringArray::from(vec!["red", "blue"]))),
                ("note", column(Int32Array::from(vec![1, 2]))),
            ],
        );
        match read_all(&path, &schema, true) {
            Err(ReadError::Cell {
                unit: "row",
                line: 2,
                column: Some(c),
                problem: Problem::Missing,
                ..
            }) => assert_eq!(c, "age"),
            other => panic!("{other:?}"),
        }
    }

    /// A file of several row groups arrives in batches of at most `batch_rows` rows, in
    /// order: the reader never materializes the file (memory: one row group's columns and
    /// one batch).
    #[test]
    fn parquet_streams_in_bounded_batches() {
        use parquet::file::properties::WriterProperties;

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.parquet");
        let n = 5000;
        let ages: Vec<i32> = (0..n).map(|i| i % 100).collect();
        let labels: Vec<&str> = (0..n)
            .map(|i| if i % 3 == 0 { "yes" } else { "no" })
            .collect();
        let colors: Vec<&str> = (0..n).map(|_| "red").collect();
        let batch = RecordBatch::try_from_iter(vec![
            ("age", column(Int32Array::from(ages))),
            ("color", column(StringArray::from(colors))),
            ("note", column(Int32Array::from(vec![0; n as usize]))),
            ("y", column(StringArray::from(labels))),
        ])
        .unwrap();
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1024))
            .build();
        let mut writer = ArrowWriter::try_new(
            std::fs::File::create(&path).unwrap(),
            batch.schema(),
            Some(properties),
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let schema = small();
        let encoder = Encoder::new(&schema);
        let (mut batches, mut labels) = (0, Vec::new());
        let mut progress = Vec::new();
        let summary = read_batches::<ReadError>(
            &path,
            &schema,
            &encoder,
            ReadOptions {
                labels: true,
                batch_rows: 300,
            },
            &mut |done, total| progress.push((done, total)),
            &mut |batch| {
                assert!(batch.rows.len() <= 300);
                batches += 1;
                labels.extend(batch.labels.unwrap());
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(summary.rows, n as usize);
        assert!(batches >= 17, "{batches} batches");
        let expected: Vec<f64> = (0..n)
            .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert_eq!(labels, expected);
        // Progress after every batch, in rows, ending at the file's row count.
        assert!(progress.len() >= 17);
        assert_eq!(progress.last(), Some(&(n as u64, n as u64)));
    }

    #[test]
    fn parquet_columns_of_the_wrong_type_or_name_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.parquet");
        let schema = small();
        write_parquet(
            &path,
            vec![
                ("y", column(StringArray::from(vec!["yes"]))),
                ("age", column(StringArray::from(vec!["10"]))),
                ("color", column(StringArray::from(vec!["red"]))),
                ("note", column(Int32Array::from(vec![1]))),
            ],
        );
        let err = read_all(&path, &schema, true).unwrap_err().to_string();
        assert!(
            err.contains("column age: the column has type Utf8"),
            "{err}"
        );
        write_parquet(
            &path,
            vec![
                ("y", column(StringArray::from(vec!["yes"]))),
                ("age", column(Int32Array::from(vec![10]))),
                ("colour", column(StringArray::from(vec!["red"]))),
            ],
        );
        let err = read_all(&path, &schema, true).unwrap_err().to_string();
        assert!(
            err.contains("\"colour\" (field 3) is not in the schema"),
            "{err}"
        );
        let not_parquet = write(dir.path(), "e.parquet", b"age,color\n");
        let err = read_all(&not_parquet, &schema, true)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a readable Parquet file"), "{err}");
    }
}

/// The committed schemas check; the example schemas' directory.
fn schemas_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas")
}

#[test]
fn the_committed_schemas_load() {
    let adult = Schema::load(schemas_dir().join("adult.toml")).unwrap();
    let encoder = Encoder::new(&adult);
    // 6 numeric + 8 categorical with a "missing" level each + the intercept.
    assert_eq!(encoder.groups().count(), 15);
    assert_eq!(
        encoder.features(),
        6 + (8 + 16 + 7 + 14 + 6 + 5 + 2 + 41) + 8 + 1
    );
    let kdd = Schema::load(schemas_dir().join("kddcup99.toml")).unwrap();
    assert_eq!(Encoder::new(&kdd).groups().count(), 42);
}

/// The real data directory, or `None` (with a message) outside CI when the files are absent.
pub(crate) fn data_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("DP_ML_DATA_DIR").unwrap_or("data".into()));
    if dir.join("adult.data").is_file() && dir.join("adult.test").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide the data: set DP_ML_DATA_DIR to a folder holding adult.data and \
         adult.test (cargo xtask datasets fetch)"
    );
    eprintln!(
        "skipped: adult.data / adult.test not in {} (set DP_ML_DATA_DIR; cargo xtask datasets \
         fetch)",
        dir.display()
    );
    None
}

#[test]
fn adult_files_read_with_the_committed_schema() {
    let Some(dir) = data_dir() else { return };
    let schema = Schema::load(schemas_dir().join("adult.toml")).unwrap();
    let encoder = Encoder::new(&schema);
    let train =
        read_training_set(&dir.join("adult.data"), &schema, &encoder, &mut |_, _| {}).unwrap();
    let test =
        read_training_set(&dir.join("adult.test"), &schema, &encoder, &mut |_, _| {}).unwrap();
    // Every row of both files (missing values are a level, never a dropped row).
    assert_eq!((train.len(), test.len()), (32_561, 16_281));
    train.check_group_norms(encoder.groups()).unwrap();
    let positive = |d: &dp_erm::TrainingSet| d.labels().iter().filter(|&&y| y > 0.0).count();
    // adult.names: 23.93% of all 48,842 records are >50K.
    let share = (positive(&train) + positive(&test)) as f64 / 48_842.0;
    assert!((share - 0.2393).abs() < 5e-4, "{share}");
}

/// A CSV's rows written to a row cache are the rows `read_training_set` encodes: a fit over
/// the cache and one in memory agree within their certificates.
#[test]
fn a_row_cache_holds_the_rows_the_reader_encodes() {
    use dp_erm::{ErmParams, Loss, RowCache};
    use dp_noise::DpRng;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    let mut body = String::from("age,color,note,y\n");
    for i in 0..500 {
        let color = ["red", "green", "blue"][i % 3];
        let label = if (i * 7) % 5 < 2 { "yes" } else { "no" };
        body.push_str(&format!("{},{color},x,{label}\n", (i * 13) % 100));
    }
    std::fs::write(&path, body).unwrap();
    let schema = small();
    let encoder = Encoder::new(&schema);
    let cache_path = dir.path().join("d.rows");
    let rows =
        crate::write_row_cache(&path, &schema, &encoder, &cache_path, 64, &mut |_, _| {}).unwrap();
    assert_eq!(rows, 500);
    let cache = RowCache::open(&cache_path).unwrap();
    let data = read_training_set(&path, &schema, &encoder, &mut |_, _| {}).unwrap();
    let params = ErmParams::non_private(Loss::Logistic, 1e-2);
    let memory = params
        .fit(&data, &mut DpRng::from_os_entropy().unwrap())
        .unwrap();
    let blocks = params
        .fit_blocks(&cache, 500, &mut DpRng::from_os_entropy().unwrap())
        .unwrap();
    let gap: f64 = memory
        .model()
        .weights()
        .iter()
        .zip(blocks.model().weights())
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        .sqrt();
    assert!(gap <= (memory.solver_gradient_norm() + blocks.solver_gradient_norm()) / 1e-2);
    // A bad record stops the write and leaves no cache behind.
    std::fs::write(&path, "age,color,note,y\n5,red,x,yes\nabc,red,x,no\n").unwrap();
    assert!(
        crate::write_row_cache(&path, &schema, &encoder, &cache_path, 64, &mut |_, _| {}).is_err()
    );
    assert!(!cache_path.exists());
}

/// A FIFO at `dir/name`, fed `bytes` by a thread (joined by the caller).
#[cfg(unix)]
fn fed_fifo(dir: &Path, name: &str, bytes: Vec<u8>) -> (PathBuf, std::thread::JoinHandle<()>) {
    let path = dir.join(name);
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let writer_path = path.clone();
    let feeder = std::thread::spawn(move || {
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(writer_path)
            .unwrap();
        // A reader that stops early closes the pipe: a broken pipe is not this test's.
        let _ = fifo.write_all(&bytes);
    });
    (path, feeder)
}

#[cfg(unix)]
#[test]
fn rejects_nothing_from_a_pipe_plain_or_gzip_in_memory_or_cached() {
    let dir = tempfile::tempdir().unwrap();
    let body = "age,color,note,y\n5,red,x,yes\n7,blue,x,no\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let schema = small();
    let encoder = Encoder::new(&schema);
    // Gzip is recognized by its magic bytes on the stream itself, under any name.
    for (name, bytes) in [("plain", body.as_bytes().to_vec()), ("zipped", gz)] {
        let (fifo, feeder) = fed_fifo(dir.path(), name, bytes.clone());
        let set = read_training_set(&fifo, &schema, &encoder, &mut |_, _| {}).unwrap();
        feeder.join().unwrap();
        assert_eq!(set.len(), 2, "{name}");
        std::fs::remove_file(&fifo).unwrap();
        // Out of core: a FIFO's time moves with every write; it is not a file that changed.
        let (fifo, feeder) = fed_fifo(dir.path(), name, bytes);
        let cache = dir.path().join(format!("{name}.rows"));
        let rows =
            crate::write_row_cache(&fifo, &schema, &encoder, &cache, 64, &mut |_, _| {}).unwrap();
        feeder.join().unwrap();
        assert_eq!(rows, 2, "{name}");
        std::fs::remove_file(&fifo).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn rejects_parquet_from_a_pipe_by_name_without_waiting_for_a_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("rows.parquet");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let schema = small();
    let err = read_training_set(&fifo, &schema, &Encoder::new(&schema), &mut |_, _| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a regular file") && err.contains("write the data to a file"));
}

#[cfg(unix)]
#[test]
fn rejects_a_schema_without_end_at_its_limit() {
    let err = Schema::load("/dev/zero").unwrap_err().to_string();
    assert!(err.contains("more than a schema's limit"), "{err}");
}

#[test]
fn rejects_float_bounds_in_their_short_form() {
    let (_, value, text) = invalid(edited("upper = 100", "upper = -1e300"));
    assert_eq!(value, "-1e300");
    assert!(text.contains("lower = 0.0"), "{text}");
    assert!(text.len() < 300, "{text}");
}

/// A full disk under the row cache is reported as the operating system's error, not as a
/// refused row (the cache is a link to `/dev/full`, so the failure removes only the link).
#[cfg(target_os = "linux")]
#[test]
fn rejects_a_full_cache_disk_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.csv");
    let mut body = String::from("age,color,note,y\n");
    for i in 0..5000 {
        body.push_str(&format!("{},red,x,yes\n", i % 100));
    }
    std::fs::write(&path, body).unwrap();
    let cache = dir.path().join("full.rows");
    std::os::unix::fs::symlink("/dev/full", &cache).unwrap();
    let schema = small();
    let err = crate::write_row_cache(
        &path,
        &schema,
        &Encoder::new(&schema),
        &cache,
        64,
        &mut |_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("No space left on device"), "{err}");
    assert!(!err.contains("refused"), "{err}");
    assert!(Path::new("/dev/full").exists());
}

/// A regression schema: one `type = "target"` column with public bounds in place of the
/// label; its bounds are checked as a numeric column's, and a schema with both a label and a
/// target (or neither) is refused by name.
#[test]
fn a_target_column_makes_a_regression_schema() {
    let regression = SMALL.replace(
        "type = \"label\"\nclasses = [\"no\", \"yes\"]\npositive = \"yes\"\naliases = { \"yes.\" = \"yes\" }",
        "type = \"target\"\nlower = 0\nupper = 5",
    );
    assert_ne!(regression, SMALL);
    let schema = Schema::from_toml(&regression, "r.toml").unwrap();
    assert_eq!(schema.target_bounds(), Some((0.0, 5.0)));
    assert_eq!(schema.columns[schema.label_index()].name, "y");
    assert_eq!(small().target_bounds(), None);
    // One public factor for every row keeps a regression linear in its features: it is the
    // default, and dividing each row by its own norm is refused by name.
    let unstated = regression.replace("row_scaling = \"attributes\"\n", "");
    assert_ne!(unstated, regression);
    let unstated = Schema::from_toml(&unstated, "r.toml").unwrap();
    assert_eq!(unstated.row_scaling, crate::RowScaling::Attributes);
    let per_row = regression.replace("\"attributes\"", "\"unit_norm\"");
    let (key, _, text) = invalid(Schema::from_toml(&per_row, "bad.toml"));
    assert!(
        key == "row_scaling" && text.contains("\"attributes\"") && text.contains("linear"),
        "{key} {text}"
    );
    let inverted = regression.replace("lower = 0\nupper = 5", "lower = 5\nupper = 0");
    let (key, _, text) = invalid(Schema::from_toml(&inverted, "bad.toml"));
    assert!(
        key.ends_with(".upper") && text.contains("above lower"),
        "{key} {text}"
    );
    let missing = regression.replace("lower = 0\nupper = 5", "upper = 5");
    let (key, _, text) = invalid(Schema::from_toml(&missing, "bad.toml"));
    assert!(
        key.ends_with(".lower") && text.contains("target column"),
        "{key} {text}"
    );
    let both = format!(
        "{regression}\n[[columns]]\nname = \"z\"\ntype = \"label\"\nclasses = [\"a\", \"b\"]\npositive = \"a\"\n"
    );
    let (_, value, text) = invalid(Schema::from_toml(&both, "bad.toml"));
    assert!(
        value.contains("2 label or target columns") && text.contains("target"),
        "{text}"
    );
}
