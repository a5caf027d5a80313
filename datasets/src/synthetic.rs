//! Synthetic data sets with known structure.

use dp_noise::InsecureSeededRng;
use rand::RngExt;
use rand_distr::{Distribution, StandardNormal};

use crate::DatasetError;
use crate::dataset::{Dataset, Scaling};

/// The most feature values a generator will produce (rows × dimension). Each is stored as
/// a 16-byte `(column, value)` pair, so this caps a generated dataset near 800 MB: larger
/// requests are refused up front instead of aborting on a failed allocation.
pub const MAX_GENERATED_VALUES: usize = 50_000_000;

/// The most columns a generator will produce: 2²⁴, the most features a dp-erm fit accepts.
/// Each column costs a name and a hidden weight (about 50 bytes), so at most about 0.8 GB,
/// whatever the number of rows.
pub const MAX_GENERATED_COLUMNS: usize = 1 << 24;

/// Checks a generator's column count against [`MAX_GENERATED_COLUMNS`].
fn check_columns(name: &'static str, columns: usize) -> Result<(), DatasetError> {
    if columns > MAX_GENERATED_COLUMNS {
        return Err(DatasetError::parameter(
            name,
            columns,
            "at most MAX_GENERATED_COLUMNS = 2^24 = 16,777,216 columns",
        ));
    }
    Ok(())
}

/// Checks a generator's size parameters: each at least 1, and `rows × dimension` at most
/// [`MAX_GENERATED_VALUES`].
fn check_shape(rows: usize, dimension: usize) -> Result<(), DatasetError> {
    if rows == 0 {
        return Err(DatasetError::parameter("rows", rows, "at least 1"));
    }
    if dimension == 0 {
        return Err(DatasetError::parameter(
            "dimension",
            dimension,
            "at least 1",
        ));
    }
    match rows.checked_mul(dimension) {
        Some(values) if values <= MAX_GENERATED_VALUES => Ok(()),
        _ => Err(DatasetError::InvalidParameter {
            name: "rows × dimension",
            value: format!("{rows} × {dimension}"),
            requirement: "at most MAX_GENERATED_VALUES = 50,000,000 feature values",
        }),
    }
}

/// Checks a probability: finite and in [0, 1] (a NaN would otherwise compare false and
/// silently act as 0).
fn check_probability(name: &'static str, value: f64) -> Result<(), DatasetError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(DatasetError::parameter(
            name,
            value,
            "a probability: finite and in [0, 1]",
        ))
    }
}

/// A point uniform in the annulus `a ≤ ‖x‖ ≤ b` of ℝ^d: uniform direction, radius
/// `(a^d + U·(b^d − a^d))^{1/d}`.
/// Callers pass `d ≥ 1` (checked by [`check_shape`], which also keeps `d` within `i32`) and
/// constant radii `0 ≤ inner ≤ outer ≤ 1`.
fn in_annulus(
    d: usize,
    inner: f64,
    outer: f64,
    rng: &mut InsecureSeededRng,
) -> Result<Vec<(usize, f64)>, DatasetError> {
    debug_assert!(d >= 1 && (0.0..=outer).contains(&inner) && outer <= 1.0);
    // An all-zero Gaussian draw has no direction; redraw (probability 0, but it would be NaN).
    let (direction, length) = loop {
        let direction: Vec<f64> = (0..d).map(|_| StandardNormal.sample(rng)).collect();
        let length = direction.iter().map(|v| v * v).sum::<f64>().sqrt();
        if length > 0.0 {
            break (direction, length);
        }
    };
    let dim = i32::try_from(d).unwrap_or(i32::MAX);
    let u: f64 = rng.random_range(0.0..1.0);
    let radius = (inner.powi(dim) + u * (outer.powi(dim) - inner.powi(dim))).powf(1.0 / d as f64);
    let mut row: Vec<(usize, f64)> = direction
        .iter()
        .enumerate()
        .map(|(c, v)| (c, v * radius / length))
        .collect();
    // A radius near 1 can round to a norm just above it: part of the generator, so the
    // rows are in the ball as the training set decides it (exactly).
    dp_erm::clip_row_to_unit_ball(&mut row)?;
    Ok(row)
}

/// The SVM paper's "nested balls" in ℝ⁵ (docs/src/reference/experiments.md): with probability 0.45 uniform in
/// the ball of radius 0.1, label +1; 0.45 uniform in the annulus 0.2–0.5, label −1; 0.1 in
/// the annulus 0.1–0.2 with a random label. Bayes error 0.05.
///
/// `rows` must be at least 1 and `rows × 5` at most [`MAX_GENERATED_VALUES`].
pub fn nested_balls(rows: usize, seed: u64) -> Result<Dataset, DatasetError> {
    check_shape(rows, 5)?;
    let mut rng = InsecureSeededRng::new(seed);
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let u: f64 = rng.random_range(0.0..1.0);
        let (row, label) = if u < 0.45 {
            (in_annulus(5, 0.0, 0.1, &mut rng)?, 1.0)
        } else if u < 0.9 {
            (in_annulus(5, 0.2, 0.5, &mut rng)?, -1.0)
        } else {
            let label = if rng.random_range(0.0..1.0) < 0.5 {
                1.0
            } else {
                -1.0
            };
            (in_annulus(5, 0.1, 0.2, &mut rng)?, label)
        };
        data.push(row);
        labels.push(label);
    }
    Ok(Dataset {
        name: "nested-balls".into(),
        feature_names: (0..5).map(|c| format!("x{c}")).collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    })
}

/// A noisy linear problem: rows uniform in the unit ball of ℝ^d, label the sign along a
/// fixed random direction, flipped with probability `flip`.
///
/// `rows` and `d` must be at least 1 with `rows × d` at most [`MAX_GENERATED_VALUES`], `d`
/// at most [`MAX_GENERATED_COLUMNS`], and `flip` finite in [0, 1].
pub fn noisy_linear(rows: usize, d: usize, flip: f64, seed: u64) -> Result<Dataset, DatasetError> {
    check_shape(rows, d)?;
    check_columns("dimension", d)?;
    check_probability("flip", flip)?;
    let mut rng = InsecureSeededRng::new(seed);
    let direction: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let row = in_annulus(d, 0.0, 1.0, &mut rng)?;
        let score: f64 = row.iter().map(|&(c, v)| v * direction[c]).sum();
        let flipped = rng.random_range(0.0..1.0) < flip;
        labels.push(if (score > 0.0) != flipped { 1.0 } else { -1.0 });
        data.push(row);
    }
    Ok(Dataset {
        name: "noisy-linear".into(),
        feature_names: (0..d).map(|c| format!("x{c}")).collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    })
}

/// A synthetic tabular problem shaped like census or network-log data (public, for fitting
/// rules that must not see the real data): `attributes` categorical columns, each one-hot
/// over `categories` levels, and `numeric` columns uniform in [0, 1]; every row scaled to
/// unit norm. Each level and each numeric column carries a hidden N(0, 1) weight; the label
/// is +1 with probability `σ(sharpness · (s − 0.5·m))` where `s` is the row's summed weight
/// over its levels and numeric values and `m = √attributes` — a logistic model; the offset
/// usually leaves fewer positives, as in most tabular tasks, but the balance depends on the
/// hidden weights (the seed).
///
/// Every size must be at least 1 except `numeric` (may be 0), with `rows × (attributes +
/// numeric)` at most [`MAX_GENERATED_VALUES`], `attributes × categories + numeric` columns
/// at most [`MAX_GENERATED_COLUMNS`], and `sharpness` finite and > 0.
pub fn tabular(
    rows: usize,
    attributes: usize,
    categories: usize,
    numeric: usize,
    sharpness: f64,
    seed: u64,
) -> Result<Dataset, DatasetError> {
    if categories == 0 {
        return Err(DatasetError::parameter(
            "categories",
            categories,
            "at least 1",
        ));
    }
    if attributes == 0 {
        return Err(DatasetError::parameter(
            "attributes",
            attributes,
            "at least 1",
        ));
    }
    if !(sharpness.is_finite() && sharpness > 0.0) {
        return Err(DatasetError::parameter(
            "sharpness",
            sharpness,
            "finite and > 0",
        ));
    }
    let stored = attributes.checked_add(numeric);
    check_shape(rows, stored.unwrap_or(usize::MAX))?;
    let d = attributes
        .checked_mul(categories)
        .and_then(|one_hot| one_hot.checked_add(numeric))
        .filter(|&d| d <= MAX_GENERATED_COLUMNS)
        .ok_or_else(|| {
            DatasetError::parameter(
                "attributes × categories + numeric",
                format!("{attributes} × {categories} + {numeric}"),
                "at most MAX_GENERATED_COLUMNS = 2^24 = 16,777,216 columns",
            )
        })?;
    let mut rng = InsecureSeededRng::new(seed);
    let weights: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
    let offset = 0.5 * (attributes as f64).sqrt();
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let mut row: Vec<(usize, f64)> = (0..attributes)
            .map(|a| (a * categories + rng.random_range(0..categories), 1.0))
            .collect();
        row.extend((0..numeric).map(|k| (attributes * categories + k, rng.random_range(0.0..1.0))));
        let score: f64 = row.iter().map(|&(c, v)| v * weights[c]).sum();
        let positive = 1.0 / (1.0 + (-sharpness * (score - offset)).exp());
        labels.push(if rng.random_range(0.0..1.0) < positive {
            1.0
        } else {
            -1.0
        });
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        row.iter_mut().for_each(|(_, v)| *v /= norm);
        // Divided by its rounded norm, a row can land a few ulps outside the ball.
        dp_erm::clip_row_to_unit_ball(&mut row)?;
        data.push(row);
    }
    Ok(Dataset {
        name: "tabular".into(),
        // One-hot levels named `attribute=level`, as the real datasets name them.
        feature_names: (0..attributes)
            .flat_map(|a| (0..categories).map(move |c| format!("a{a}=c{c}")))
            .chain((0..numeric).map(|k| format!("numeric{k}")))
            .collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    })
}

/// Rows shaped like Adult after one-hot encoding, at any size: `min(6, d/2)` numeric
/// columns (uniform in [0, 1)) and `min(8, d − numeric)` categorical attributes sharing
/// the other columns as evenly as possible, one category each per row (uniform), so a row
/// stores `numeric + attributes` entries — 14 from d = 14 on, as Adult does. Each row is
/// scaled to norm 1; the label is the sign of a fixed random linear score (weights uniform
/// in [−2, 2]) minus 0.6 plus uniform noise of width 0.6, about 30% positive. For
/// benchmarks of how costs grow with n and d.
///
/// `rows` must be at least 1, `d` at least 10 (below, the rule labels almost every row
/// alike) and at most [`MAX_GENERATED_COLUMNS`], and `rows × entries per row` at most
/// [`MAX_GENERATED_VALUES`].
pub fn adult_like(rows: usize, d: usize, seed: u64) -> Result<Dataset, DatasetError> {
    if d < 10 {
        return Err(DatasetError::parameter("dimension", d, "at least 10"));
    }
    check_columns("dimension", d)?;
    let numeric = 6.min(d / 2);
    let attributes = 8.min(d - numeric);
    check_shape(rows, numeric + attributes)?;
    // Attribute a owns columns starts[a]..starts[a + 1].
    let categorical = d - numeric;
    let starts: Vec<usize> = (0..=attributes)
        .map(|a| numeric + a * categorical / attributes)
        .collect();
    let mut rng = InsecureSeededRng::new(seed);
    let truth: Vec<f64> = (0..d).map(|_| rng.random_range(-2.0..2.0)).collect();
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let mut row: Vec<(usize, f64)> = (0..numeric)
            .map(|c| (c, rng.random_range(0.0..1.0)))
            .collect();
        for a in 0..attributes {
            row.push((rng.random_range(starts[a]..starts[a + 1]), 1.0));
        }
        let length = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        row.iter_mut().for_each(|(_, v)| *v /= length);
        // Divided by its rounded norm, a row can land a few ulps outside the ball.
        dp_erm::clip_row_to_unit_ball(&mut row)?;
        let score: f64 = row.iter().map(|&(c, v)| v * truth[c]).sum();
        let noisy = score - 0.6 + rng.random_range(-0.3..0.3);
        labels.push(if noisy > 0.0 { 1.0 } else { -1.0 });
        data.push(row);
    }
    Ok(Dataset {
        name: "adult-like".into(),
        feature_names: (0..d).map(|c| format!("x{c}")).collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    })
}

/// The shape of a [`tabular_mixed`] problem: what real tabular data vary in and the older
/// generators fix (group sizes, skewed level frequencies, sparse numeric columns, class
/// balance, label noise).
#[derive(Debug, Clone, PartialEq)]
pub struct TabularShape {
    /// The levels of each categorical attribute (each one-hot over its levels, at least 1).
    pub levels: Vec<usize>,
    /// Numeric columns: even ones uniform in [0, 1], odd ones 0 with probability 0.9 and
    /// uniform otherwise (like capital gains or byte counts).
    pub numeric: usize,
    /// Level frequencies ∝ `(k + 1)^−skew` within each attribute (0: uniform; census
    /// attributes such as native country are near 1.5). Finite, in [0, 4].
    pub skew: f64,
    /// The slope of the logistic label model on the hidden score (its weights are N(0, 1)
    /// per level and numeric column): small is noisy labels, large nearly separable.
    /// Finite and > 0.
    pub sharpness: f64,
    /// The share of +1 labels aimed at (about; the offset is the score's quantile on a
    /// pilot sample). In (0, 1).
    pub positive_share: f64,
}

/// A synthetic tabular problem of the given [`TabularShape`] (public, for fitting rules that
/// must not see real data): each row has one level per attribute and the numeric columns,
/// scaled to norm 1 as the papers' preprocessing leaves Adult's and KDD's rows; label +1
/// with probability `σ(sharpness · (s − t))`, `s` the row's summed hidden weights (before
/// the scaling), `t` the score's `(1 − positive_share)` quantile over 4,096 pilot rows.
/// Columns are named `a<i>=l<k>` and `numeric<k>`, so the one-hot groups can be read from
/// the names as from the real datasets'.
///
/// `rows` at least 1, at least one column, every attribute at least 1 level, `rows ×
/// (attributes + numeric)` at most [`MAX_GENERATED_VALUES`] and the column count at most
/// [`MAX_GENERATED_COLUMNS`]; errors name the first parameter out of range.
pub fn tabular_mixed(
    rows: usize,
    shape: &TabularShape,
    seed: u64,
) -> Result<Dataset, DatasetError> {
    if let Some(&levels) = shape.levels.iter().find(|&&l| l == 0) {
        return Err(DatasetError::parameter(
            "levels",
            levels,
            "every attribute at least 1",
        ));
    }
    if !(0.0..=4.0).contains(&shape.skew) {
        return Err(DatasetError::parameter(
            "skew",
            shape.skew,
            "finite, in [0, 4]",
        ));
    }
    if !(shape.sharpness.is_finite() && shape.sharpness > 0.0) {
        return Err(DatasetError::parameter(
            "sharpness",
            shape.sharpness,
            "finite and > 0",
        ));
    }
    if !(shape.positive_share > 0.0 && shape.positive_share < 1.0) {
        return Err(DatasetError::parameter(
            "positive_share",
            shape.positive_share,
            "in (0, 1)",
        ));
    }
    let stored = shape.levels.len().saturating_add(shape.numeric);
    check_shape(rows, stored)?;
    let d = shape
        .levels
        .iter()
        .try_fold(shape.numeric, |d, &l| d.checked_add(l))
        .unwrap_or(usize::MAX);
    check_columns("levels + numeric", d)?;
    let mut starts = Vec::with_capacity(shape.levels.len());
    let mut cumulative = Vec::with_capacity(shape.levels.len());
    let mut next = 0;
    for &levels in &shape.levels {
        starts.push(next);
        next += levels;
        let mut total = 0.0;
        let sums: Vec<f64> = (0..levels)
            .map(|k| {
                total += ((k + 1) as f64).powf(-shape.skew);
                total
            })
            .collect();
        cumulative.push(sums.into_iter().map(|s| s / total).collect::<Vec<f64>>());
    }
    let mut rng = InsecureSeededRng::new(seed);
    let weights: Vec<f64> = (0..d).map(|_| StandardNormal.sample(&mut rng)).collect();
    let draw_row = |rng: &mut InsecureSeededRng| -> Vec<(usize, f64)> {
        let mut row: Vec<(usize, f64)> = Vec::with_capacity(stored);
        for (start, sums) in starts.iter().zip(&cumulative) {
            let u: f64 = rng.random_range(0.0..1.0);
            let level = sums.partition_point(|&s| s <= u).min(sums.len() - 1);
            row.push((start + level, 1.0));
        }
        for k in 0..shape.numeric {
            let value: f64 = rng.random_range(0.0..1.0);
            let sparse_zero = k % 2 == 1 && rng.random_range(0.0..1.0) < 0.9;
            if !sparse_zero && value > 0.0 {
                row.push((next + k, value));
            }
        }
        row
    };
    let score = |row: &[(usize, f64)]| row.iter().map(|&(c, v)| v * weights[c]).sum::<f64>();
    let mut pilot: Vec<f64> = (0..4096).map(|_| score(&draw_row(&mut rng))).collect();
    pilot.sort_by(f64::total_cmp);
    let offset = pilot[((1.0 - shape.positive_share) * 4095.0).round() as usize];
    let (mut data, mut labels) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for _ in 0..rows {
        let mut row = draw_row(&mut rng);
        let positive = 1.0 / (1.0 + (-shape.sharpness * (score(&row) - offset)).exp());
        labels.push(if rng.random_range(0.0..1.0) < positive {
            1.0
        } else {
            -1.0
        });
        let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
        if norm > 0.0 {
            row.iter_mut().for_each(|(_, v)| *v /= norm);
            // Divided by its rounded norm, a row can land a few ulps outside the ball.
            dp_erm::clip_row_to_unit_ball(&mut row)?;
        }
        data.push(row);
    }
    Ok(Dataset {
        name: "tabular-mixed".into(),
        feature_names: shape
            .levels
            .iter()
            .enumerate()
            .flat_map(|(a, &l)| (0..l).map(move |k| format!("a{a}=l{k}")))
            .chain((0..shape.numeric).map(|k| format!("numeric{k}")))
            .collect(),
        rows: data,
        labels,
        checksums: Vec::new(),
        scaling: Scaling::None,
    })
}
