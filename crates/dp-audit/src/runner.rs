//! Many runs of a mechanism, in parallel, each from its own seed.

use dp_noise::InsecureSeededRng;
use rayon::prelude::*;

use crate::AuditError;
use crate::bound::MAX_RUNS;

/// `runs` scores of `release`, run `i` with a generator seeded from `(seed, i)`: the same
/// scores for the same seed whatever the number of threads. `release` is any "dataset →
/// released output → score" closure; the dataset is whatever it captures. The scores are
/// held in memory: more than [`MAX_RUNS`] runs are refused before anything is allocated
/// or run ([`AuditError::TooManyRuns`]); check the count's power with
/// [`crate::require_power`] first.
///
/// The generator handed to `release` is an [`InsecureSeededRng`]: repeatable, and **not
/// private**. A mechanism accepts it only where dp-noise's `insecure-seeded-rng` feature is
/// on (dp-audit's feature of the same name turns it on): tests and audit tools, never code
/// that releases real data.
pub fn run_scores<F>(runs: usize, seed: u64, release: F) -> Result<Vec<f64>, AuditError>
where
    F: Fn(&mut InsecureSeededRng) -> f64 + Sync,
{
    if runs > MAX_RUNS {
        return Err(AuditError::TooManyRuns {
            runs,
            max: MAX_RUNS,
        });
    }
    // runs ≤ MAX_RUNS < 2^64.
    Ok((0..runs as u64)
        .into_par_iter()
        .map(|run| {
            let mut rng = InsecureSeededRng::new(seed.wrapping_mul(1_000_003).wrapping_add(run));
            release(&mut rng)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_more_runs_than_the_cap_before_running_any() {
        let ran = std::sync::atomic::AtomicUsize::new(0);
        for runs in [MAX_RUNS + 1, usize::MAX] {
            let e = run_scores(runs, 1, |_| {
                ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                0.0
            })
            .unwrap_err();
            assert_eq!(
                e,
                AuditError::TooManyRuns {
                    runs,
                    max: MAX_RUNS
                }
            );
            assert!(e.to_string().contains(&runs.to_string()), "{e}");
        }
        assert_eq!(ran.load(std::sync::atomic::Ordering::Relaxed), 0);
        assert_eq!(run_scores(3, 1, |_| 1.0).unwrap(), vec![1.0; 3]);
        assert!(run_scores(0, 1, |_| 1.0).unwrap().is_empty());
    }
}
