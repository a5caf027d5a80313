//! The unit-ball contract decided in the safe direction (issue 30, privacy finding 3), and
//! messages that name the real problem: indices as indices, counts as integers.
//!
//! The expected verdicts come from exact integer arithmetic, not from the code under test:
//! every entry lies in `[2⁻⁷, 2⁻⁶)`, so it is `m·2⁻⁵⁹` for an integer `m < 2⁵³`, its square
//! `m²·2⁻¹¹⁸` exactly, and `‖x‖² ≤ 1` exactly when `Σ m² ≤ 2¹¹⁸` (d = 10⁴ squares below
//! 2¹⁰⁶ each: the sum fits in a u128).

use dp_noise::InsecureSeededRng;
use rand::RngExt;

use crate::{ErmError, Examples, Features, TrainingSet};

const D: usize = 10_000;

/// The integer `m` with `v = m·2⁻⁵⁹`, for `v` in `[2⁻⁷, 2⁻⁶)`.
fn mantissa(v: f64) -> u128 {
    assert!((2f64.powi(-7)..2f64.powi(-6)).contains(&v), "{v}");
    let m = v * 2f64.powi(59);
    assert_eq!(m.fract(), 0.0);
    m as u128
}

/// `Σ v² − 1` exactly, in units of 2⁻¹¹⁸.
fn exact_excess(row: &[f64]) -> i128 {
    let sum: u128 = row.iter().map(|&v| mantissa(v) * mantissa(v)).sum();
    sum as i128 - (1i128 << 118)
}

/// The check before this fix: the norm rounded to nearest compared with 1 (what a check
/// that does not bound its rounding does).
fn rounded_norm_at_most_one(row: &[f64]) -> bool {
    row.iter().map(|v| v * v).sum::<f64>().sqrt() <= 1.0
}

/// Rows of D entries 0.01 (just above 1/√D in binary: D·0.01² = 1 + 4.2·10⁻¹⁷) or one ulp
/// below (D times its square is 1 − 3.1·10⁻¹⁶), mixed so that the exact squared norms
/// straddle 1 within about 10⁻¹⁷, with their exact excess.
fn rows_near_the_sphere(count: usize, seed: u64) -> Vec<(Vec<f64>, i128)> {
    let mut rng = InsecureSeededRng::new(seed);
    let base = 0.01f64;
    (0..count)
        .map(|_| {
            let row: Vec<f64> = (0..D)
                .map(|_| {
                    if rng.random::<f64>() < 0.12 {
                        base.next_down()
                    } else {
                        base
                    }
                })
                .collect();
            let excess = exact_excess(&row);
            (row, excess)
        })
        .collect()
}

fn build(row: &[f64]) -> Result<TrainingSet, ErmError> {
    TrainingSet::builder(row.len())
        .dense_rows(row.to_vec())
        .labels(vec![1.0])
        .build()
}

/// Rows whose exact norm is above 1 but whose rounded norm is not: the builder, the dense
/// matrix path (dp-kernel's), and the examples' check all refuse them; rows exactly inside
/// by more than 10⁻²⁰ pass. Fails on the old check, which compared the rounded norm with 1.
#[test]
fn rejects_rows_just_outside_the_unit_ball() {
    let rows = rows_near_the_sphere(400, 30);
    let slightly_outside: Vec<&Vec<f64>> = rows
        .iter()
        .filter(|(row, excess)| *excess > 0 && rounded_norm_at_most_one(row))
        .map(|(row, _)| row)
        .collect();
    // The class exists: rows the rounded check accepted although they are outside.
    assert!(slightly_outside.len() >= 10, "{}", slightly_outside.len());
    for row in &slightly_outside {
        assert!(
            matches!(build(row), Err(ErmError::RowNormAboveOne { row: 0, .. })),
            "builder"
        );
        let matrix = faer::Mat::from_fn(1, D, |_, j| row[j]);
        assert!(
            matches!(
                TrainingSet::from_dense_matrix(matrix, vec![1.0]),
                Err(ErmError::RowNormAboveOne { row: 0, .. })
            ),
            "dense matrix"
        );
        let examples = Examples::new(Features::dense(D, row.to_vec()).unwrap(), vec![1.0]);
        assert!(examples.unwrap().check_unit_ball().is_err(), "examples");
        assert!(!crate::within_unit_ball(row));
    }
    // Exactly inside by more than 2⁻⁶⁶ (1.4·10⁻²⁰): accepted, so the check is not merely
    // strict but tight.
    let inside: Vec<&Vec<f64>> = rows
        .iter()
        .filter(|(_, excess)| *excess < -(1i128 << 52))
        .map(|(row, _)| row)
        .collect();
    assert!(inside.len() >= 10, "{}", inside.len());
    for row in inside {
        assert!(build(row).is_ok());
        assert!(crate::within_unit_ball(row));
    }
}

/// The error-bounded sum's bound holds: on rows of 10⁴ entries near the sphere, the exact
/// sum (in integers) lies within `error` of the computed `high + low`, and the rounding of
/// `low` is real there (a bound of 0 would fail). The bound is also not vacuous: below
/// 10⁻²⁰ where the plain rounded sum errs by up to 10⁻¹².
#[test]
fn the_square_sum_bounds_its_own_error() {
    use crate::data::unit_ball::SquareSum;
    let unit = 2f64.powi(118);
    let mut inexact = 0;
    for (row, excess) in rows_near_the_sphere(200, 32) {
        let mut sum = SquareSum::default();
        row.iter().for_each(|&v| sum.add(v));
        let (high, low, error) = sum.parts();
        let error = error.expect("10⁴ terms are within the bound's derivation");
        assert!(error < 1e-20, "{error}");
        let (high_units, low_units) = (high * unit, low * unit);
        // Both are whole multiples of 2⁻¹¹⁸ unless `low` is tiny (then skip the row).
        if low_units.fract() != 0.0 || low_units.abs() >= 2f64.powi(100) {
            continue;
        }
        let computed = high_units as i128 + low_units as i128 - (1i128 << 118);
        let gap = (excess - computed).unsigned_abs() as f64;
        assert!(
            gap <= error * unit,
            "gap {gap} units, error {} units",
            error * unit
        );
        inexact += usize::from(gap > 0.0);
    }
    assert!(inexact >= 50, "{inexact}");
}

/// The square's rounding error without FMA (the portable wheel's path) is the fused one's,
/// bit for bit, from 1 down to 2⁻⁴⁸⁰ (below, the sum makes an allowance).
#[test]
fn the_square_error_without_fma_is_exact() {
    use crate::data::unit_ball::square_error_by_splitting;
    let mut rng = InsecureSeededRng::new(33);
    let mut inexact = 0;
    for trial in 0..200_000 {
        let a = if trial % 2 == 0 {
            rng.random::<f64>()
        } else {
            rng.random::<f64>() * 2f64.powi(-rng.random_range(0..480))
        };
        let a = a.max(2f64.powi(-480));
        let p = a * a;
        let fused = a.mul_add(a, -p);
        assert_eq!(
            square_error_by_splitting(a, p).to_bits(),
            fused.to_bits(),
            "{a:e}"
        );
        inexact += usize::from(fused != 0.0);
    }
    for a in [1.0, 0.5, 1.0f64.next_down(), 0.1, 2f64.powi(-480)] {
        let p = a * a;
        assert_eq!(square_error_by_splitting(a, p), a.mul_add(a, -p), "{a:e}");
    }
    assert!(inexact > 150_000, "{inexact}");
}

/// Clipping puts a row exactly inside the ball (checked in integers), including the rows
/// just outside that the old clip, stopping at a rounded norm of 1, left outside.
#[test]
fn clipping_leaves_rows_exactly_inside() {
    for (row, excess) in rows_near_the_sphere(60, 31) {
        if excess <= 0 {
            continue;
        }
        let mut sparse: Vec<(usize, f64)> = row.iter().copied().enumerate().collect();
        crate::clip_row_to_unit_ball(&mut sparse).unwrap();
        let clipped: Vec<f64> = sparse.iter().map(|&(_, v)| v).collect();
        assert!(exact_excess(&clipped) <= 0);
        // Shrunk by a few ulps only.
        assert!(clipped.iter().zip(&row).all(|(c, r)| (r - c) / r < 1e-13));
        let set = TrainingSet::builder(D)
            .dense_rows(row)
            .labels(vec![1.0])
            .clip_rows_to_unit_ball()
            .build();
        assert!(set.is_ok());
    }
}

/// Rows outside the ball by rounding only are settled exactly inside (the exact verdict from
/// integer arithmetic), moved by a few ulps; rows inside, or outside by more than 10⁻¹², are
/// left exactly as they were.
#[test]
fn settling_moves_only_rows_outside_by_rounding() {
    let mut settled = 0;
    for (row, excess) in rows_near_the_sphere(60, 37) {
        let mut moved = row.clone();
        let changed = crate::settle_rounding_into_unit_ball(&mut moved);
        assert_eq!(changed, excess > 0, "excess {excess}");
        if changed {
            settled += 1;
            assert!(exact_excess(&moved) <= 0);
            assert!(moved.iter().zip(&row).all(|(c, r)| (r - c) / r < 1e-13));
        } else {
            assert_eq!(moved, row);
        }
    }
    assert!(settled > 0, "no row of the sample was outside");
    // Outside by 10⁻⁹: a real excess, left for the check to refuse.
    let mut far = vec![0.6, 0.8 * (1.0 + 1e-9)];
    assert!(!crate::settle_rounding_into_unit_ball(&mut far));
    assert_eq!(far, vec![0.6, 0.8 * (1.0 + 1e-9)]);
}

/// A single entry of 1 (norm exactly 1) and the unit rows of one-hot data are accepted: no
/// allowance where the sum is exact.
#[test]
fn rows_exactly_on_the_sphere_with_exact_sums_pass() {
    assert!(crate::within_unit_ball(&[1.0]));
    assert!(crate::within_unit_ball(&[0.0, -1.0, 0.0]));
    assert!(crate::within_unit_ball(&[0.5, 0.5, 0.5, 0.5]));
    assert!(!crate::within_unit_ball(&[1.0, 1e-300]));
    assert!(!crate::within_unit_ball(&[1.0, f64::MIN_POSITIVE / 8.0]));
    assert!(!crate::within_unit_ball(&[f64::NAN]));
    assert!(!crate::within_unit_ball(&[1.0f64.next_up()]));
    let mut bad = vec![(0, 0.5), (3, f64::NAN)];
    assert!(matches!(
        crate::clip_row_to_unit_ball(&mut bad),
        Err(ErmError::NonFiniteFeature { col: 3, .. })
    ));
    assert_eq!(bad[0], (0, 0.5));
    let mut huge = vec![(0, 1e308), (1, -1e308)];
    crate::clip_row_to_unit_ball(&mut huge).unwrap();
    assert!(crate::within_unit_ball(&[huge[0].1, huge[1].1]));
    assert!(huge[0].1 > 0.7 && huge[1].1 < -0.7);
}

/// A bad row index is reported as an index, not as a length.
#[test]
fn rejects_a_bad_row_index_as_an_index() {
    let rows = Features::dense(1, vec![0.1, 0.2]).unwrap();
    let err = rows.select(&[0, 5]).unwrap_err();
    assert_eq!(
        err,
        ErmError::IndexOutOfRange {
            what: "selected row index",
            index: 5,
            len: 2
        }
    );
    let message = err.to_string();
    assert!(
        message.contains("index 5") && message.contains("2"),
        "{message}"
    );
    assert!(!message.contains("length"), "{message}");
    let examples = Examples::new(rows, vec![1.0, -1.0]).unwrap();
    assert!(matches!(
        examples.select(&[usize::MAX]),
        Err(ErmError::IndexOutOfRange {
            index: usize::MAX,
            ..
        })
    ));
}

/// Counts are printed as the integers they are ("65537", never "65537.0"), whichever
/// constructor refuses them.
#[test]
fn rejects_counts_naming_them_as_integers() {
    let set = TrainingSet::builder(1)
        .dense_rows(vec![0.5, -0.5])
        .labels(vec![1.0, -1.0])
        .build()
        .unwrap();
    let params = crate::ErmParams::non_private(crate::Loss::Logistic, 1e-2);
    let mut rng = InsecureSeededRng::new(3);
    let cases: Vec<(ErmError, String)> = vec![
        (
            crate::OneVsRest::fit(&params, &set, &[0, 1], 65_537, &mut rng).unwrap_err(),
            "65537".into(),
        ),
        (
            TrainingSet::builder((1 << 24) + 1)
                .dense_rows(vec![])
                .labels(vec![])
                .build()
                .unwrap_err(),
            "16777217".into(),
        ),
        (
            crate::ErmParams::recommended(10, 1 << 25, 1.0).unwrap_err(),
            "33554432".into(),
        ),
        (
            crate::ModelKey::from_bytes(&[7; 5]).unwrap_err(),
            "5".into(),
        ),
        (Features::dense(0, vec![]).unwrap_err(), "0".into()),
        (
            crate::ErmParams::non_private(crate::Loss::Logistic, 1e-2)
                .solver(crate::SolverChoice::Newton)
                .noise_calibration(10, 20_000)
                .unwrap_err(),
            "20000".into(),
        ),
    ];
    for (err, count) in cases {
        let message = err.to_string();
        assert!(
            matches!(err, ErmError::InvalidCount { .. }),
            "{err:?}: {message}"
        );
        assert!(message.contains(&count), "{message}");
        assert!(!message.contains(&format!("{count}.0")), "{message}");
    }
}

/// At a row count beyond what double precision can sum, the error names that count — not
/// its square root.
#[test]
fn rejects_too_many_rows_naming_the_row_count() {
    let rows = 1usize << 62;
    let err = crate::ErmParams::recommended(rows, 10, 1.0).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(
            err,
            ErmError::InvalidCount {
                what: "number of rows",
                value,
                ..
            } if value == rows
        ),
        "{err:?}"
    );
    assert!(message.contains(&rows.to_string()), "{message}");
    assert!(!message.contains("square root"), "{message}");
}

/// Row `row` (dense values) as CSR arrays of one row.
fn csr_of(row: &[f64]) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    let (indices, values): (Vec<u32>, Vec<f64>) = row
        .iter()
        .enumerate()
        .filter(|&(_, &v)| v != 0.0)
        .map(|(c, &v)| (c as u32, v))
        .unzip();
    (vec![0, indices.len()], indices, values)
}

/// CSR input is checked as every input is: a row just outside the ball, a column beyond
/// the feature count, a repeated column, a non-finite value and a label count that does
/// not match are each refused, naming the row; rows inside give the same set as sparse
/// rows, with and without an intercept.
#[test]
fn csr_input_is_checked_like_sparse_rows() {
    let rows = rows_near_the_sphere(200, 31);
    let outside = rows
        .iter()
        .find(|(row, excess)| *excess > 0 && rounded_norm_at_most_one(row))
        .map(|(row, _)| row)
        .expect("a row just outside");
    let (indptr, indices, values) = csr_of(outside);
    let built = TrainingSet::builder(D)
        .csr_rows(indptr, indices, values)
        .labels(vec![1.0])
        .build();
    assert!(matches!(
        built,
        Err(ErmError::RowNormAboveOne { row: 0, .. })
    ));

    let two_rows = |indptr: Vec<usize>, indices: Vec<u32>, values: Vec<f64>, labels| {
        TrainingSet::builder(3)
            .csr_rows(indptr, indices, values)
            .labels(labels)
            .build()
    };
    let labels = || vec![1.0, -1.0];
    assert!(matches!(
        two_rows(vec![0, 1, 2], vec![0, 3], vec![0.5, 0.5], labels()),
        Err(ErmError::FeatureIndexOutOfRange { row: 1, col: 3, .. })
    ));
    assert!(two_rows(vec![0, 2, 3], vec![1, 1, 0], vec![0.1, 0.1, 0.5], labels()).is_err());
    assert!(two_rows(vec![0, 1, 2], vec![0, 1], vec![f64::NAN, 0.5], labels()).is_err());
    assert!(matches!(
        two_rows(vec![0, 1, 2], vec![0, 1], vec![0.5, 0.5], vec![1.0]),
        Err(ErmError::DimensionMismatch { .. })
    ));
    assert!(matches!(
        two_rows(vec![0], vec![], vec![], vec![]),
        Err(ErmError::EmptyData)
    ));

    let sparse = vec![vec![(0, 0.6), (2, 0.3)], vec![(1, -0.8)]];
    let (indptr, indices, values) = (vec![0, 2, 3], vec![0, 2, 1], vec![0.6, 0.3, -0.8]);
    for intercept in [None, Some(1.0)] {
        let with = |b: crate::TrainingSetBuilder| match intercept {
            Some(c) => b.append_intercept(c),
            None => b,
        };
        let from_sparse = with(TrainingSet::builder(3).sparse_rows(sparse.clone()))
            .labels(labels())
            .build()
            .unwrap();
        let from_csr =
            with(TrainingSet::builder(3).csr_rows(indptr.clone(), indices.clone(), values.clone()))
                .labels(labels())
                .build()
                .unwrap();
        assert_eq!(from_csr.features(), from_sparse.features());
        let w: Vec<f64> = (0..from_csr.features()).map(|j| 1.0 + j as f64).collect();
        let (mut a, mut b) = (vec![0.0; 2], vec![0.0; 2]);
        from_csr.design().multiply(&w, &mut a);
        from_sparse.design().multiply(&w, &mut b);
        assert_eq!(a, b, "intercept {intercept:?}");
        assert_eq!(from_csr.labels(), from_sparse.labels());
    }
}

/// The three input forms (dense, pairs in any order, CSR) give the same training set under
/// every combination of the public transforms — including CSR rows outside the unit ball
/// with clipping, which are clipped (not refused before the clip, as they once were).
#[test]
fn every_input_form_gives_the_same_set_under_every_transform() {
    let dense = [3.0, 0.0, -1.5, 0.0, 0.25, 0.0, 0.0, 0.0, 2.0];
    let pairs = vec![vec![(2, -1.5), (0, 3.0)], vec![(1, 0.25)], vec![(2, 2.0)]];
    let (indptr, indices, values) = (
        vec![0, 2, 3, 4],
        vec![0, 2, 1, 2],
        vec![3.0, -1.5, 0.25, 2.0],
    );
    let labels = || vec![1.0, -1.0, 1.0];
    for bounds in [None, Some(vec![4.0, 0.5, 2.0])] {
        for intercept in [None, Some(2.0)] {
            let transform = |mut b: crate::TrainingSetBuilder| {
                if let Some(bounds) = &bounds {
                    b = b.scale_by_public_bounds(bounds.clone());
                }
                if let Some(c) = intercept {
                    b = b.append_intercept(c);
                }
                b.clip_rows_to_unit_ball().labels(labels()).build().unwrap()
            };
            let sets = [
                transform(TrainingSet::builder(3).dense_rows(dense.to_vec())),
                transform(TrainingSet::builder(3).sparse_rows(pairs.clone())),
                transform(TrainingSet::builder(3).csr_rows(
                    indptr.clone(),
                    indices.clone(),
                    values.clone(),
                )),
            ];
            let d = sets[0].features();
            assert_eq!(d, 3 + usize::from(intercept.is_some()));
            let w: Vec<f64> = (0..d).map(|j| 1.0 + 0.5 * j as f64).collect();
            let products: Vec<Vec<f64>> = sets
                .iter()
                .map(|set| {
                    assert_eq!(set.features(), d);
                    let mut out = vec![0.0; 3];
                    set.design().multiply(&w, &mut out);
                    out
                })
                .collect();
            assert_eq!(products[0], products[1], "{bounds:?} {intercept:?}");
            assert_eq!(products[0], products[2], "{bounds:?} {intercept:?}");
            // Row 0 was clipped onto the sphere: its product is the clipped row's, not 3.0·w₀ …
            let scale = bounds.as_ref().map_or(1.0, |b| b[0]);
            assert!(
                products[0][0].abs() < 3.0 / scale * w[0] + 1.5 * w[2],
                "{products:?}"
            );
        }
    }
    // Unordered CSR columns stay an error of the CSR format, transformed or not.
    let unordered = TrainingSet::builder(3)
        .csr_rows(vec![0, 2], vec![2, 0], vec![0.5, 0.5])
        .clip_rows_to_unit_ball()
        .labels(vec![1.0])
        .build();
    assert!(unordered.is_err());
}

/// Rows of CSR input with public transforms are checked and transformed in parallel chunks
/// of rows (`csr_transform`): on many rows (several chunks), with rows on and just off the
/// sphere, every combination of bounds, clipping and the intercept gives bit for bit the
/// rows that pairs input (the step-by-step path) gives; and where rows fail different checks
/// in different chunks, the error is the step-by-step path's (its order of checks).
#[test]
fn transformed_csr_rows_in_chunks_are_the_step_by_step_rows() {
    let (rows, cols) = (9_000, 12);
    let mut rng = InsecureSeededRng::new(77);
    let mut pairs: Vec<Vec<(usize, f64)>> = Vec::with_capacity(rows);
    for r in 0..rows {
        let mut row: Vec<(usize, f64)> = Vec::new();
        for c in 0..cols {
            let (kept, value) = (rng.random::<f64>() < 0.5, rng.random::<f64>() - 0.5);
            if kept {
                row.push((c, value));
            }
        }
        // Every third row scaled onto the sphere (rounded), some just beyond it.
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        if r % 3 == 0 && norm > 0.0 {
            let scale = if r % 2 == 0 { 1.0 } else { 1.0 + 1e-15 };
            row.iter_mut().for_each(|(_, v)| *v = *v / norm * scale);
        }
        pairs.push(row);
    }
    let csr = |pairs: &[Vec<(usize, f64)>]| {
        let (mut indptr, mut indices, mut values) = (vec![0], Vec::new(), Vec::new());
        for row in pairs {
            indices.extend(row.iter().map(|&(c, _)| c as u32));
            values.extend(row.iter().map(|&(_, v)| v));
            indptr.push(indices.len());
        }
        (indptr, indices, values)
    };
    let labels: Vec<f64> = (0..rows)
        .map(|r| if r % 4 == 0 { 1.0 } else { -1.0 })
        .collect();
    let bounds: Vec<f64> = (0..cols).map(|c| 1.5 + c as f64 / 8.0).collect();
    let build = |input: crate::TrainingSetBuilder, bound: bool, clip: bool, intercept| {
        let mut b = input.labels(labels.clone());
        if bound {
            b = b.scale_by_public_bounds(bounds.clone());
        }
        if clip {
            b = b.clip_rows_to_unit_ball();
        }
        if let Some(c) = intercept {
            b = b.append_intercept(c);
        }
        b.build()
    };
    let entries = |set: &TrainingSet| {
        let mut all = Vec::new();
        for r in 0..set.len() {
            set.for_each_entry(r, |c, v| all.push((r, c, v.to_bits())));
        }
        all
    };
    let (indptr, indices, values) = csr(&pairs);
    let mut built = 0;
    for bound in [false, true] {
        for clip in [false, true] {
            for intercept in [None, Some(1.0), Some(0.3)] {
                let from_pairs = build(
                    TrainingSet::builder(cols).sparse_rows(pairs.clone()),
                    bound,
                    clip,
                    intercept,
                );
                let from_csr = build(
                    TrainingSet::builder(cols).csr_rows(
                        indptr.clone(),
                        indices.clone(),
                        values.clone(),
                    ),
                    bound,
                    clip,
                    intercept,
                );
                let case = format!("bounds {bound}, clip {clip}, intercept {intercept:?}");
                match (from_pairs, from_csr) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(a.features(), b.features(), "{case}");
                        assert!(entries(&a) == entries(&b), "{case}");
                        built += 1;
                    }
                    (a, b) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{case}"),
                }
            }
        }
    }
    // Every case builds but the three neither clipped nor scaled down by the bounds (≥ 1.5).
    assert_eq!(built, 9);
    // Rows just beyond the sphere without clipping are refused (so the case above compared
    // errors), and with clipping accepted: both paths were exercised.
    let unclipped = build(
        TrainingSet::builder(cols).csr_rows(indptr.clone(), indices.clone(), values.clone()),
        false,
        false,
        Some(1.0),
    );
    assert!(matches!(unclipped, Err(ErmError::RowNormAboveOne { .. })));
    // Two different failures in different chunks: a NaN in row 8,000 and a value beyond its
    // public bound in row 100. The step-by-step path checks every entry's finiteness before
    // any bound, so it names the NaN.
    let mut broken = pairs.clone();
    broken[8_000] = vec![(1, f64::NAN)];
    broken[100] = vec![(0, 2.0)];
    let (indptr, indices, values) = csr(&broken);
    let from_csr = build(
        TrainingSet::builder(cols).csr_rows(indptr, indices, values),
        true,
        true,
        Some(1.0),
    );
    assert!(
        matches!(from_csr, Err(ErmError::NonFiniteFeature { row: 8_000, .. })),
        "{from_csr:?}"
    );
    let from_pairs = build(
        TrainingSet::builder(cols).sparse_rows(broken),
        true,
        true,
        Some(1.0),
    );
    assert_eq!(format!("{from_csr:?}"), format!("{from_pairs:?}"));
}
