//! Many runs of a mechanism, in parallel, each from its own seed.

use dp_noise::InsecureSeededRng;
use rayon::prelude::*;

/// `runs` scores of `release`, run `i` with a generator seeded from `(seed, i)`: the same
/// scores for the same seed whatever the number of threads. `release` is any "dataset →
/// released output → score" closure; the dataset is whatever it captures. The scores are
/// held in memory: check the count with [`crate::require_power`] (at most
/// [`crate::MAX_RUNS`]) before a count from a user reaches this.
pub fn run_scores<F>(runs: usize, seed: u64, release: F) -> Vec<f64>
where
    F: Fn(&mut InsecureSeededRng) -> f64 + Sync,
{
    (0..runs as u64)
        .into_par_iter()
        .map(|run| {
            let mut rng = InsecureSeededRng::new(seed.wrapping_mul(1_000_003).wrapping_add(run));
            release(&mut rng)
        })
        .collect()
}
