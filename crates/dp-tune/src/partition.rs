//! Shuffling rows with fresh randomness and cutting them into contiguous parts.
//!
//! The partition depends only on n and the generator, never on the data, which is what
//! lets parallel composition apply: whatever the shuffle, each row lies in exactly one part.

use dp_noise::ReleaseRng;
use rand::RngExt;

/// A uniformly random permutation of `0..n` (Fisher–Yates; `random_range` is unbiased).
pub(crate) fn shuffled(n: usize, rng: &mut dyn ReleaseRng) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.random_range(0..=i));
    }
    order
}

/// The index ranges of `parts` contiguous parts of `0..n` whose sizes differ by at most one
/// (part k is `k·n/parts .. (k+1)·n/parts`).
pub(crate) fn part_ranges(n: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    // Widened so that k·n cannot overflow whatever n is.
    let cut = |k: usize| (k as u128 * n as u128 / parts as u128) as usize;
    (0..parts).map(|k| cut(k)..cut(k + 1)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dp_noise::InsecureSeededRng;

    #[test]
    fn parts_cover_every_index_once_with_sizes_within_one() {
        for (n, parts) in [(160, 8), (161, 8), (1000, 7), (23, 23), (45_222, 8)] {
            let ranges = part_ranges(n, parts);
            assert_eq!(ranges.len(), parts);
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[parts - 1].end, n);
            for pair in ranges.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
            }
            let sizes: Vec<usize> = ranges.iter().map(|r| r.len()).collect();
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "{n} rows, {parts} parts: {sizes:?}");
            assert_eq!(*lo, n / parts);
        }
    }

    #[test]
    fn shuffle_is_a_permutation_and_moves_rows() {
        let mut rng = InsecureSeededRng::new(5);
        let order = shuffled(1000, &mut rng);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>());
        // A fixed point count far above its Poisson(1) law would mean no shuffling.
        assert!(order.iter().enumerate().filter(|&(i, &j)| i == j).count() < 10);
    }

    /// Each row lands in each of 8 positions-blocks equally often: chi-square over
    /// 8 × 8 (row block, part) cells with 7·7 = 49 degrees of freedom; critical value
    /// 49 + 6·sqrt(98) ≈ 108 (false alarm ≈ 1e-6).
    #[test]
    fn shuffle_puts_rows_in_parts_uniformly() {
        let (n, parts, trials) = (64, 8, 4000);
        let mut counts = vec![[0u64; 8]; 8];
        let mut rng = InsecureSeededRng::new(11);
        let ranges = part_ranges(n, parts);
        for _ in 0..trials {
            let order = shuffled(n, &mut rng);
            for (p, range) in ranges.iter().enumerate() {
                for &row in &order[range.clone()] {
                    counts[row / 8][p] += 1;
                }
            }
        }
        let expected = (trials * 8 * 8) as f64 / 64.0;
        let chi2: f64 = counts
            .iter()
            .flatten()
            .map(|&c| (c as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 108.0, "chi-square {chi2}");
    }
}
