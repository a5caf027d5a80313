//! Rows generated from their index alone: a dataset of any size that needs no memory, for
//! tests and measurements of fits over data larger than memory (a row cache is written row
//! by row, and the same rows can be built in memory to compare).

/// Adult's encoded shape: 6 numeric columns, then one-hot groups of these sizes.
const ADULT_GROUPS: [usize; 8] = [9, 16, 7, 15, 6, 5, 2, 39];

/// Columns of [`adult_shaped_row`]: 6 numeric plus the 99 one-hot levels.
pub const ADULT_SHAPED_COLUMNS: usize = 105;

/// SplitMix64's finalizer: a fixed bijection that scatters consecutive inputs.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Row `i` of a deterministic Adult-shaped dataset ([`ADULT_SHAPED_COLUMNS`] columns, 14
/// entries: 6 numeric values in [0, 1) and one level of each of 8 groups), scaled strictly
/// inside the unit ball, in increasing column order; its label (±1) from a fixed linear rule
/// with 10% of labels flipped. Not random in any private sense: for tests and benchmarks.
pub fn adult_shaped_row(i: u64) -> (Vec<(usize, f64)>, f64) {
    let uniform =
        |k: u64| (mix(i.wrapping_mul(31).wrapping_add(k)) >> 11) as f64 / (1u64 << 53) as f64;
    let mut row: Vec<(usize, f64)> = (0..6).map(|j| (j, uniform(j as u64))).collect();
    let mut offset = 6;
    for (g, &size) in ADULT_GROUPS.iter().enumerate() {
        let level = (uniform(10 + g as u64) * size as f64) as usize;
        row.push((offset + level.min(size - 1), 1.0));
        offset += size;
    }
    let norm = row.iter().map(|(_, v)| v * v).sum::<f64>().sqrt() * (1.0 + 1e-9);
    row.iter_mut().for_each(|(_, v)| *v /= norm);
    let score: f64 = row
        .iter()
        .map(|&(j, v)| v * ((j * 37 % 11) as f64 - 5.0))
        .sum();
    let flip = uniform(99) < 0.1;
    (row, if (score > 0.0) != flip { 1.0 } else { -1.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_have_adults_shape_inside_the_unit_ball() {
        assert_eq!(6 + ADULT_GROUPS.iter().sum::<usize>(), ADULT_SHAPED_COLUMNS);
        let mut positives = 0;
        for i in 0..2_000 {
            let (row, label) = adult_shaped_row(i);
            assert_eq!(row.len(), 14);
            assert!(
                row.windows(2).all(|p| p[0].0 < p[1].0),
                "row {i} not ordered"
            );
            assert!(row.iter().all(|&(j, _)| j < ADULT_SHAPED_COLUMNS));
            assert!(row.iter().map(|(_, v)| v * v).sum::<f64>() < 1.0, "row {i}");
            assert_eq!(adult_shaped_row(i), (row, label), "deterministic");
            positives += usize::from(label > 0.0);
        }
        assert!(
            (200..1_800).contains(&positives),
            "{positives} positives of 2000"
        );
    }
}
