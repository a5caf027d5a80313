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
fn corrupt_and_missing_files_are_explained() {
    let empty = DataDir::at(std::env::temp_dir().join("dp-datasets-empty-dir"));
    let err = load_adult(&empty, Scaling::PaperColumnMax)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("adult.data is not in") && err.contains("cargo xtask datasets fetch"),
        "{err}"
    );
    let dir = std::env::temp_dir().join(format!("dp-datasets-corrupt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("kddcup.data_10_percent.gz"), b"not the real file").unwrap();
    let err = load_kddcup99(&DataDir::at(&dir)).unwrap_err().to_string();
    assert!(err.contains("expected 8045aca0"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nested_balls_have_the_described_shape() {
    let balls = nested_balls(20_000, 1);
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
    assert_eq!(nested_balls(100, 5), nested_balls(100, 5));
}

#[test]
fn noisy_linear_flips_the_requested_fraction() {
    let data = noisy_linear(20_000, 4, 0.1, 2);
    assert!(
        data.rows
            .iter()
            .all(|r| r.iter().map(|(_, v)| v * v).sum::<f64>() <= 1.0 + 1e-12)
    );
    assert!((data.positive_rate() - 0.5).abs() < 0.03);
}
