//! Unscaled rows are never clipped (issue 30): a training set of a [`Scaling::None`]
//! dataset refuses a row outside the unit ball, naming it and the scalings to choose.

use super::*;

/// A hand-built unscaled dataset with a row of norm 2: it used to be clipped silently.
#[test]
fn rejects_unscaled_rows_outside_the_unit_ball() {
    let mut data = noisy_linear(4, 2, 0.0, 1).unwrap();
    assert_eq!(data.scaling, Scaling::None);
    data.rows[2] = vec![(0, 2.0)];
    let err = data.training_set(&[0, 1, 2, 3]).unwrap_err();
    assert!(
        matches!(&err, DatasetError::OutsideUnitBall { row: 2, norm, .. } if *norm == 2.0),
        "{err:?}"
    );
    let message = err.to_string();
    for part in ["row 2", "PublicBounds", "PaperColumnMax", "unit ball"] {
        assert!(message.contains(part), "{message}");
    }
    // Rows that are not used are not judged; the others build unchanged.
    let set = data.training_set(&[0, 1, 3]).unwrap();
    assert_eq!(set.len(), 3);
    // Just outside by rounding: refused too (the exact check of dp-erm).
    data.rows[2] = vec![(0, 0.6), (1, 0.8f64.next_up())];
    assert!(matches!(
        data.training_set(&[2]),
        Err(DatasetError::OutsideUnitBall { row: 2, .. })
    ));
    // Scaled datasets keep their documented per-row clipping.
    data.scaling = Scaling::PublicBounds;
    data.rows[2] = vec![(0, 2.0)];
    assert!(data.training_set(&[2]).is_ok());
}

/// Every generator of unscaled data puts its rows in the unit ball as the training set
/// decides it, so their training sets build without clipping.
#[test]
fn generated_unscaled_rows_lie_in_the_unit_ball() {
    for data in [
        nested_balls(300, 2).unwrap(),
        noisy_linear(300, 7, 0.1, 3).unwrap(),
        tabular(300, 4, 5, 2, 4.0, 4).unwrap(),
        adult_like(300, 40, 5).unwrap(),
    ] {
        assert_eq!(data.scaling, Scaling::None);
        let all: Vec<usize> = (0..data.len()).collect();
        assert!(data.training_set(&all).is_ok(), "{}", data.name);
    }
}

/// Raw Adult (no scaling) is loaded for feature maps, and its training set is refused,
/// naming the first row outside the ball; the scaled loads train.
#[test]
fn rejects_training_on_raw_adult() {
    let dir = DataDir::resolve(None);
    if !dir.has_all(&ADULT_FILES) {
        eprintln!(
            "real-data test skipped: Adult missing in {}",
            dir.path().display()
        );
        return;
    }
    let raw = load_adult(&dir, Scaling::None).unwrap();
    let err = raw.training_set(&[0, 1, 2]).unwrap_err();
    assert!(
        matches!(err, DatasetError::OutsideUnitBall { row: 0, .. }),
        "{err:?}"
    );
    assert!(raw.examples(&[0, 1, 2]).is_ok());
    for scaling in [Scaling::PaperColumnMax, Scaling::PublicBounds] {
        let scaled = load_adult(&dir, scaling).unwrap();
        assert!(scaled.training_set(&[0, 1, 2]).is_ok());
    }
}
