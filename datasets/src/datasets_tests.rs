//! Loader tests on the real files (from `$DP_ML_DATA_DIR`; CI always provides them) and on
//! synthetic data.

use super::*;

/// The real data directory. Outside CI, missing files skip the real-data tests with a
/// message; in CI (`CI` set) they must be there.
fn real_data(files: &[DataFile]) -> Option<DataDir> {
    let dir = DataDir::resolve(None);
    if dir.has_all(files) {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide the data: {HOW_TO_GET}"
    );
    eprintln!(
        "real-data test skipped: files missing in {}; {HOW_TO_GET}",
        dir.path().display()
    );
    None
}

#[test]
fn adult_matches_the_published_description() {
    let Some(dir) = real_data(&ADULT_FILES) else {
        return;
    };
    let adult = load_adult(&dir, Scaling::PaperColumnMax).unwrap();
    assert_eq!(adult.len(), 45_222);
    assert!(
        (adult.positive_rate() - 0.2478).abs() < 5e-4,
        "{}",
        adult.positive_rate()
    );
    assert_eq!(adult.features(), 105);
    // Column max-scaling: every value in [−1, 1], each numeric column reaching 1.
    assert!(adult.rows.iter().flatten().all(|&(_, v)| v.abs() <= 1.0));
    let data = adult
        .training_set(&(0..adult.len()).collect::<Vec<_>>())
        .unwrap();
    assert_eq!(data.len(), 45_222);
    let private = load_adult(&dir, Scaling::PublicBounds).unwrap();
    assert_eq!(private.len(), 45_222);
}

#[test]
fn adult_training_split_is_the_complete_rows_of_adult_data() {
    let Some(dir) = real_data(&ADULT_FILES) else {
        return;
    };
    // Counted from the file itself: records with all 15 fields and no missing value.
    let text = std::fs::read_to_string(dir.verified(&ADULT_FILES[0]).unwrap()).unwrap();
    let complete = text
        .lines()
        .map(|line| line.split(',').map(str::trim).collect::<Vec<_>>())
        .filter(|fields| fields.len() == 15 && !fields.contains(&"?"))
        .count();
    assert_eq!(complete, ADULT_TRAIN_ROWS);
    let adult = load_adult(&dir, Scaling::PaperColumnMax).unwrap();
    assert_eq!(adult.len() - ADULT_TRAIN_ROWS, 15_060);
}

#[test]
fn kdd_matches_the_published_description() {
    let Some(dir) = real_data(&KDD_FILES) else {
        return;
    };
    let kdd = load_kddcup99(&dir).unwrap();
    assert_eq!(kdd.len(), 494_021);
    assert_eq!(kdd.labels.iter().filter(|&&y| y > 0.0).count(), 97_278);
    assert!((118..=122).contains(&kdd.features()), "{}", kdd.features());
}

#[test]
fn kdd_log_counts_compress_only_the_count_columns() {
    let Some(dir) = real_data(&KDD_FILES) else {
        return;
    };
    let paper = load_kddcup99(&dir).unwrap();
    let logged = load_kddcup99_encoded(&dir, KddEncoding::LogCounts).unwrap();
    assert_eq!(logged.labels, paper.labels);
    assert_eq!(logged.feature_names, paper.feature_names);
    assert_eq!(&paper.feature_names[..38], KDD_NUMERIC_COLUMNS.as_slice());
    // The names sit on the right columns: rows with a non-zero value, counted from the file.
    let non_zero = |name: &str| {
        let column = paper.feature_names.iter().position(|n| n == name).unwrap();
        paper
            .rows
            .iter()
            .filter(|row| row.iter().any(|&(j, _)| j == column))
            .count()
    };
    for (name, count) in [
        ("duration", 12_350),
        ("src_bytes", 378_679),
        ("dst_bytes", 85_763),
        ("logged_in", 73_237),
        ("num_compromised", 2_224),
        ("su_attempted", 12),
        ("count", 494_019),
        ("serror_rate", 89_234),
        ("dst_host_count", 494_018),
        ("dst_host_same_src_port_rate", 351_161),
        ("dst_host_srv_rerror_rate", 34_216),
    ] {
        assert_eq!(non_zero(name), count, "{name}");
    }
    let is_count: Vec<bool> = (0..paper.features())
        .map(|c| KDD_COUNT_COLUMNS.contains(&paper.feature_names[c].as_str()))
        .collect();
    assert_eq!(is_count.iter().filter(|&&c| c).count(), 17);
    // Per column, the (paper, logged) value pairs: same rows non-zero, flags and rates
    // untouched, counts raised (ln(1 + x)/ln(1 + max) ≥ x/max) in the same order.
    let mut pairs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); paper.features()];
    for (a, b) in paper.rows.iter().zip(&logged.rows) {
        assert_eq!(a.len(), b.len());
        for (&(ja, va), &(jb, vb)) in a.iter().zip(b) {
            assert_eq!(ja, jb);
            if is_count[ja] {
                assert!(
                    vb >= va * (1.0 - 1e-12),
                    "{}: {vb} < {va}",
                    paper.feature_names[ja]
                );
            } else {
                assert_eq!(va, vb, "{} changed", paper.feature_names[ja]);
            }
            pairs[ja].push((va, vb));
        }
    }
    for (c, column) in pairs.iter_mut().enumerate().filter(|(c, _)| is_count[*c]) {
        column.sort_by(|x, y| x.0.total_cmp(&y.0));
        assert!(
            column.windows(2).all(|w| w[0].1 <= w[1].1),
            "{}: order changed",
            paper.feature_names[c]
        );
    }
    // src_bytes spans nine orders of magnitude: max-scaled, its typical value is ~0; logged,
    // it is a sizable fraction of the largest.
    let median = |values: &mut Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let src_bytes = &pairs[1];
    let paper_median = median(&mut src_bytes.iter().map(|p| p.0).collect());
    let logged_median = median(&mut src_bytes.iter().map(|p| p.1).collect());
    assert!(paper_median < 1e-5, "{paper_median}");
    assert!(logged_median > 0.2, "{logged_median}");
}

#[test]
fn corrupt_and_missing_files_are_explained() {
    let empty_path = scratch("empty-dir");
    let empty = DataDir::at(&empty_path);
    let err = load_adult(&empty, Scaling::PaperColumnMax)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("adult.data is not in") && err.contains("cargo xtask datasets fetch"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("dp-datasets-corrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kdd_file = dir.join("kddcup.data_10_percent.gz");
    // A wrong size is refused before the file is read (a 20 GB file took 86 s to hash).
    std::fs::write(&kdd_file, b"not the real file").unwrap();
    let err = load_kddcup99(&DataDir::at(&dir)).unwrap_err().to_string();
    assert!(
        err.contains("holds 17 bytes, the published file 2144903"),
        "{err}"
    );
    // The published size with other contents: the checksum decides.
    std::fs::File::create(&kdd_file)
        .unwrap()
        .set_len(KDD_FILES[0].bytes)
        .unwrap();
    let err = load_kddcup99(&DataDir::at(&dir)).unwrap_err().to_string();
    assert!(err.contains("expected 8045aca0"), "{err}");
    // A folder under the file's name is named as such, not as a missing file.
    std::fs::remove_file(&kdd_file).unwrap();
    std::fs::create_dir(&kdd_file).unwrap();
    assert!(DataDir::at(&dir).has_all(&KDD_FILES));
    let err = load_kddcup99(&DataDir::at(&dir)).unwrap_err().to_string();
    assert!(err.contains("is not a regular file"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&empty_path).unwrap();
}

#[test]
fn nested_balls_have_the_described_shape() {
    let balls = nested_balls(20_000, 1).unwrap();
    let radius = |row: &Vec<(usize, f64)>| row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
    let inner = balls.rows.iter().filter(|r| radius(r) <= 0.1).count() as f64 / 20_000.0;
    assert!((inner - 0.45).abs() < 0.02, "{inner}");
    assert!(balls.rows.iter().all(|r| radius(r) <= 0.5 + 1e-12));
    for (row, &y) in balls.rows.iter().zip(&balls.labels) {
        let r = radius(row);
        if r < 0.1 {
            assert_eq!(y, 1.0);
        } else if r > 0.2 {
            assert_eq!(y, -1.0);
        }
    }
    assert_eq!(nested_balls(100, 5).unwrap(), nested_balls(100, 5).unwrap());
}

#[test]
fn noisy_linear_flips_the_requested_fraction() {
    let data = noisy_linear(20_000, 4, 0.1, 2).unwrap();
    assert!(
        data.rows
            .iter()
            .all(|r| r.iter().map(|(_, v)| v * v).sum::<f64>() <= 1.0 + 1e-12)
    );
    assert!((data.positive_rate() - 0.5).abs() < 0.03);
}

#[test]
fn tabular_rows_are_one_hot_blocks_of_unit_norm() {
    let data = tabular(5_000, 6, 4, 2, 2.0, 3).unwrap();
    assert_eq!(data.features(), 6 * 4 + 2);
    for row in &data.rows {
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-12, "norm {norm}");
        for block in 0..6 {
            let levels = row.iter().filter(|(c, _)| c / 4 == block).count();
            assert_eq!(levels, 1, "attribute {block} of {row:?}");
        }
    }
    // Both classes present in earnest (the balance depends on the hidden weights).
    let rate = data.positive_rate();
    assert!((0.05..0.95).contains(&rate), "positive rate {rate}");
    assert_eq!(data, tabular(5_000, 6, 4, 2, 2.0, 3).unwrap());
}

#[test]
fn rejects_bad_tabular_shapes() {
    for (attributes, categories, sharpness, name) in [
        (0, 4, 1.0, "attributes"),
        (3, 0, 1.0, "categories"),
        (3, 4, f64::NAN, "sharpness"),
        (3, 4, 0.0, "sharpness"),
        (usize::MAX, 2, 1.0, "rows × dimension"),
    ] {
        let err = tabular(10, attributes, categories, 1, sharpness, 1).unwrap_err();
        assert!(err.to_string().contains(name), "{err}");
    }
}

/// A fresh, empty folder under the system temp dir for one test.
fn scratch(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-datasets-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn rejects_out_of_range_training_set_index() {
    let data = noisy_linear(10, 3, 0.0, 1).unwrap();
    let err = data.training_set(&[0, 3, 10]).unwrap_err();
    assert!(
        matches!(err, DatasetError::IndexOutOfRange { index: 10, len: 10 }),
        "{err:?}"
    );
    let message = err.to_string();
    assert!(
        message.contains("10 is out of range") && message.contains("10 rows"),
        "{message}"
    );
    assert!(data.training_set(&[usize::MAX]).is_err());
    assert_eq!(data.training_set(&[0, 9]).unwrap().len(), 2);
}

#[test]
fn rejects_datasets_whose_rows_and_labels_disagree() {
    let mut data = noisy_linear(10, 3, 0.0, 1).unwrap();
    data.rows.truncate(4);
    let message = data.training_set(&[5]).unwrap_err().to_string();
    assert!(message.contains("4 rows but 10 labels"), "{message}");
}

#[test]
fn rejects_bad_rows_of_a_hand_built_dataset() {
    let mut data = noisy_linear(4, 2, 0.0, 1).unwrap();
    for column in [2, 7, usize::MAX] {
        data.rows[1] = vec![(column, 0.5)]; // past the feature count
        let err = data.training_set(&[0, 1]).unwrap_err().to_string();
        assert!(
            err.contains(&format!("row 1 has a value in column {column}"))
                && err.contains("2 feature"),
            "{err}"
        );
    }
    data.rows[1] = vec![(0, f64::NAN)];
    assert!(data.training_set(&[0, 1]).is_err());
    data.rows[1] = vec![(0, 0.5)];
    data.labels[1] = 0.0;
    assert!(data.training_set(&[0, 1]).is_err());
    assert!(data.training_set(&[]).is_err());
}

#[test]
fn rejects_nan_flip_rate() {
    let err = noisy_linear(10, 2, f64::NAN, 1).unwrap_err().to_string();
    assert!(err.contains("flip = NaN"), "{err}");
}

#[test]
fn rejects_out_of_range_flip_rates_naming_them_briefly() {
    for (flip, shown) in [
        (-0.1, "flip = -0.1"),
        (1.5, "flip = 1.5"),
        (f64::INFINITY, "flip = inf"),
        (-1e-300, "flip = -1e-300"),
        (1.0 + f64::EPSILON, "flip = 1.0000000000000002"),
    ] {
        let err = noisy_linear(10, 2, flip, 1).unwrap_err().to_string();
        assert!(err.contains(shown) && err.contains("[0, 1]"), "{err}");
        assert!(err.len() < 200, "float printed in full: {err}");
    }
    for flip in [0.0, 1.0] {
        assert_eq!(noisy_linear(10, 2, flip, 1).unwrap().len(), 10);
    }
}

#[test]
fn rejects_empty_and_absurd_generator_sizes() {
    let cases = [
        (noisy_linear(0, 2, 0.1, 1), "rows = 0"),
        (noisy_linear(10, 0, 0.1, 1), "dimension = 0"),
        (noisy_linear(usize::MAX, 2, 0.1, 1), "rows × dimension"),
        (noisy_linear(2, usize::MAX, 0.1, 1), "rows × dimension"),
        (noisy_linear(100_000, 1_000, 0.1, 1), "100000 × 1000"),
        (nested_balls(0, 1), "rows = 0"),
        (nested_balls(usize::MAX / 2, 1), "rows × dimension"),
        // Columns cost memory whatever the rows: refused before any allocation (these
        // aborted on a failed allocation or a capacity overflow before the column cap).
        (adult_like(1, 1 << 40, 1), "dimension = 1099511627776"),
        (adult_like(1, usize::MAX, 1), "MAX_GENERATED_COLUMNS"),
        (
            noisy_linear(1, (1 << 24) + 1, 0.1, 1),
            "MAX_GENERATED_COLUMNS",
        ),
        (
            tabular(1, 1, 20_000_000, 0, 1.0, 1),
            "MAX_GENERATED_COLUMNS",
        ),
    ];
    for (outcome, shown) in cases {
        let err = outcome.unwrap_err().to_string();
        assert!(err.contains(shown), "{err}");
    }
    // The limit itself is allowed (checked without allocating: 1 row of the largest width
    // would still be big, so only the arithmetic is exercised here).
    assert!(noisy_linear(1, 1, 0.5, 1).is_ok());
}

#[test]
fn rejects_a_data_dir_that_is_missing_or_a_file_naming_it() {
    let scratch = scratch("bad-dir");
    let typo = scratch.join("typo");
    let err = load_adult(&DataDir::at(&typo), Scaling::PaperColumnMax)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!("{} does not exist", typo.display())) && err.contains("fetch"),
        "{err}"
    );
    let file = scratch.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let err = load_kddcup99(&DataDir::at(&file)).unwrap_err().to_string();
    assert!(
        err.contains(&format!("{} is not a folder", file.display())),
        "{err}"
    );
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_unreadable_files_naming_the_path() {
    let scratch = scratch("unreadable");
    let missing = scratch.join("nothing-here");
    let err = sha256_hex(&missing).unwrap_err().to_string();
    assert!(err.contains(&missing.display().to_string()), "{err}");
    // A folder where a file is expected: opening works on Unix, reading fails.
    let err = sha256_hex(&scratch).unwrap_err().to_string();
    assert!(err.contains(&scratch.display().to_string()), "{err}");
    std::fs::remove_dir_all(&scratch).unwrap();
}

#[test]
fn rejects_printing_rows_in_debug_output() {
    let data = noisy_linear(3, 2, 0.0, 1).unwrap();
    let shown = format!("{data:?}");
    assert!(
        shown.contains("noisy-linear") && shown.contains("rows: 3"),
        "{shown}"
    );
    let value = data.rows[0][0].1;
    assert!(!shown.contains(&format!("{value}")), "{shown}");
    assert!(!shown.contains(&format!("{value:?}")), "{shown}");
}

#[test]
fn examples_keep_raw_rows_dense_or_sparse_and_refuse_bad_indices() {
    let balls = nested_balls(20, 3).unwrap();
    let examples = balls.examples(&[4, 0, 19]).unwrap();
    assert!(examples.inputs().is_dense());
    assert_eq!(
        examples.labels(),
        &[balls.labels[4], balls.labels[0], balls.labels[19]]
    );
    let mut row = vec![0.0; 5];
    examples.inputs().row(0).write_dense(&mut row);
    let expected: Vec<f64> = balls.rows[4].iter().map(|&(_, v)| v).collect();
    assert_eq!(row, expected);
    // Mostly-zero rows stay sparse.
    let mut sparse = noisy_linear(4, 10, 0.0, 2).unwrap();
    sparse.rows.iter_mut().for_each(|r| r.truncate(1));
    assert!(!sparse.examples(&[0, 1]).unwrap().inputs().is_dense());
    assert!(matches!(
        balls.examples(&[0, 20]),
        Err(DatasetError::IndexOutOfRange { index: 20, len: 20 })
    ));
}

#[test]
fn adult_like_rows_have_adults_shape_at_any_dimension() {
    for (d, entries) in [(105, 14), (1000, 14), (10, 10)] {
        let data = adult_like(500, d, 3).unwrap();
        assert_eq!(data.features(), d);
        assert!(data.rows.iter().all(|row| row.len() == entries), "d = {d}");
        assert!(data.rows.iter().flatten().all(|&(c, _)| c < d));
        let norms_ok = data
            .rows
            .iter()
            .all(|row| (row.iter().map(|(_, v)| v * v).sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(norms_ok);
        let positive = data.positive_rate();
        assert!((0.05..0.95).contains(&positive), "d = {d}: {positive}");
    }
    assert!(adult_like(10, 9, 1).is_err());
    assert!(adult_like(0, 105, 1).is_err());
}

#[test]
fn adult_official_split_is_adult_data_then_adult_test_encoded_alike() {
    let Some(dir) = real_data(&ADULT_FILES) else {
        return;
    };
    let whole = load_adult(&dir, Scaling::PublicBounds).unwrap();
    let (train, test) = load_adult_split(&dir, Scaling::PublicBounds).unwrap();
    assert_eq!((train.len(), test.len()), (30_162, 15_060));
    assert_eq!(train.feature_names, whole.feature_names);
    assert_eq!(test.feature_names, whole.feature_names);
    // The per-row public scaling gives exactly the whole file's rows, split.
    assert_eq!(train.rows, whole.rows[..ADULT_TRAIN_ROWS]);
    assert_eq!(test.rows, whole.rows[ADULT_TRAIN_ROWS..]);
    assert_eq!(test.labels, whole.labels[ADULT_TRAIN_ROWS..]);
    // adult.test's labels ("<=50K." / ">50K.") parsed: its published positive share.
    assert!(
        (test.positive_rate() - 0.2457).abs() < 5e-4,
        "{}",
        test.positive_rate()
    );
    assert!(
        (train.positive_rate() - 0.2489).abs() < 5e-4,
        "{}",
        train.positive_rate()
    );
    // The papers' max-scaling from the training rows only: every training column's
    // maximum is 1 (or the column is empty), test values stay in [−1, 1].
    let (train, test) = load_adult_split(&dir, Scaling::PaperColumnMax).unwrap();
    let mut largest = vec![0.0f64; train.features()];
    for &(c, v) in train.rows.iter().flatten() {
        largest[c] = largest[c].max(v.abs());
    }
    assert!(largest.iter().all(|&m| m == 1.0 || m == 0.0), "{largest:?}");
    assert!(test.rows.iter().flatten().all(|&(_, v)| v.abs() <= 1.0));
    assert_eq!(test.scaling, Scaling::PaperColumnMax);
    test.training_set(&(0..test.len()).collect::<Vec<_>>())
        .unwrap();
}

fn mixed_shape() -> TabularShape {
    TabularShape {
        levels: vec![2, 9, 16, 41],
        numeric: 4,
        skew: 1.5,
        sharpness: 4.0,
        positive_share: 0.25,
    }
}

#[test]
fn tabular_mixed_has_its_shape_balance_and_skew() {
    let shape = mixed_shape();
    let data = tabular_mixed(8_000, &shape, 11).unwrap();
    // Inside the ball as a training set decides it (exactly), so an unscaled training set
    // takes every row.
    for row in &data.rows {
        let values: Vec<f64> = row.iter().map(|&(_, v)| v).collect();
        assert!(dp_erm::within_unit_ball(&values), "{row:?}");
    }
    assert_eq!(data.features(), 2 + 9 + 16 + 41 + 4);
    assert_eq!(data.feature_names[2], "a1=l0");
    assert_eq!(data.feature_names[68], "numeric0");
    for row in &data.rows {
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-12, "{norm}");
        // One level per attribute.
        assert_eq!(row.iter().filter(|&&(c, _)| c < 68).count(), 4);
    }
    let share = data.positive_rate();
    assert!((share - 0.25).abs() < 0.04, "{share}");
    // Zipf 1.5 over 41 levels: the first level holds about 41% of the rows, the last 0.2%.
    let count = |column: usize| {
        data.rows
            .iter()
            .filter(|r| r.iter().any(|&(c, _)| c == column))
            .count()
    };
    let (first, last) = (count(27), count(67));
    assert!(
        (2_800..3_800).contains(&first) && last < 60,
        "{first} {last}"
    );
    // The odd numeric column is mostly zero, the even one almost never.
    assert!(
        count(69) < 1_000 && count(68) > 7_900,
        "{} {}",
        count(69),
        count(68)
    );
    // Labels follow the hidden score: a sharper shape is more predictable by its own
    // balance, a flatter one (sharpness 0.1) nearly a coin weighted by the balance.
    let flat = tabular_mixed(
        8_000,
        &TabularShape {
            sharpness: 0.1,
            ..shape.clone()
        },
        11,
    )
    .unwrap();
    assert!(
        (flat.positive_rate() - 0.5).abs() < 0.1,
        "{}",
        flat.positive_rate()
    );
    assert_eq!(tabular_mixed(8_000, &shape, 11).unwrap(), data);
}

#[test]
fn tabular_mixed_refuses_bad_shapes_naming_them() {
    let cases = [
        (
            TabularShape {
                levels: vec![3, 0],
                ..mixed_shape()
            },
            "levels = 0",
        ),
        (
            TabularShape {
                skew: f64::NAN,
                ..mixed_shape()
            },
            "skew = NaN",
        ),
        (
            TabularShape {
                skew: 5.0,
                ..mixed_shape()
            },
            "skew = 5.0",
        ),
        (
            TabularShape {
                sharpness: 0.0,
                ..mixed_shape()
            },
            "sharpness = 0.0",
        ),
        (
            TabularShape {
                positive_share: 1.0,
                ..mixed_shape()
            },
            "positive_share = 1.0",
        ),
        (
            TabularShape {
                levels: vec![],
                numeric: 0,
                ..mixed_shape()
            },
            "dimension = 0",
        ),
        (
            TabularShape {
                levels: vec![1 << 24],
                ..mixed_shape()
            },
            "MAX_GENERATED_COLUMNS",
        ),
    ];
    for (shape, named) in cases {
        let err = tabular_mixed(10, &shape, 1).unwrap_err().to_string();
        assert!(err.contains(named), "{err} should name {named}");
    }
    let err = tabular_mixed(0, &mixed_shape(), 1).unwrap_err().to_string();
    assert!(err.contains("rows = 0"), "{err}");
}
