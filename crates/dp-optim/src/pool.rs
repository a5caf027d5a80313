//! Where a solve runs: on a rayon worker, with the pool's other workers kept awake.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

/// Stored entries per pass for each worker kept polling: about one of the passes' 4,096-row
/// chunks of one-hot rows (14 entries each). A pass of fewer chunks than threads leaves
/// the extra threads nothing to take, so their polling would only burn a core (Adult's
/// 366k entries allow up to 5 pollers; 1,000 rows of 14 entries none).
const ENTRIES_PER_POLLER: usize = 1 << 16;
/// Idle polls of the pool between two yields of the whole thread to the OS scheduler.
const POLLS_PER_OS_YIELD: u32 = 64;
/// Pause instructions between two idle polls (each poll takes a lock-free look at every
/// queue; a few pauses keep it off the solving thread's cache lines, at well under a µs).
const PAUSES_PER_POLL: u32 = 8;
/// A poller that has found no work for this long goes back to sleep (OpenMP's "blocktime"):
/// a serial phase this long (a dense Hessian's Cholesky factor, say) would only burn its
/// core, and the next pass then pays one ordinary wake-up.
const MAX_IDLE: Duration = Duration::from_millis(1);

/// Runs a whole solve on a rayon worker thread (at once if already on one), while up to
/// one of the pool's other workers per [`ENTRIES_PER_POLLER`] of `pass_entries` (the
/// stored entries one pass over the data reads) wait for its parallel passes actively
/// instead of asleep.
///
/// A solve makes a few dozen parallel passes over the data. Started from a thread outside
/// the pool, each pass would hand its work to the pool and block until woken (two context
/// switches, tens of microseconds on a loaded machine); started on a worker, a pass pushes
/// its jobs onto that worker's own queue and the caller takes part in them. Measured on
/// Adult (private logistic fit, 300 fits alternated): median 22.2 → 16.1 ms on one
/// thread, 12.3 → 10.9 ms on two.
///
/// Between two passes the solve works alone for a while (the line search's bookkeeping,
/// the Cholesky factorization), and a rayon worker that finds no work soon goes to sleep:
/// waking it again costs each pass about 60–90 µs on this project's 2-core VM (a region
/// of 200 µs of work took a median 164–192 µs after a gap of 30 µs or more, 102 µs
/// without one). So, as OpenMP runtimes do between parallel regions, one job per other
/// worker (`keep_awake`) polls for the solve's work until the solve returns (or unwinds)
/// or it has found nothing for [`MAX_IDLE`]. The pollers run any pending rayon job, so
/// they never hold up other work, and they yield the thread to the OS now and then. They
/// are detached: the solve's return never waits for a poller, nor for an unrelated job a
/// poller happens to be running then (measured in review: with pollers inside the solve's
/// scope, every solve during which another thread spawned a 300 ms job returned 300 ms
/// late). Results are unchanged: the passes' chunking never depends on which thread runs
/// a chunk.
pub(crate) fn on_worker<T: Send>(pass_entries: usize, solve: impl FnOnce() -> T + Send) -> T {
    // The caller's stop hook travels with the solve onto the worker.
    let stop = crate::stop::current();
    // The scope only moves the solve onto a worker: the pollers are detached, not scoped.
    rayon::scope(move |_| {
        let done = Arc::new(AtomicBool::new(false));
        let solver = std::thread::current().id();
        for _ in 0..pollers(rayon::current_num_threads() - 1, pass_entries) {
            let done = Arc::clone(&done);
            rayon::spawn(move || keep_awake(&done, solver));
        }
        let _stop = SetOnDrop(&done);
        crate::stop::with_hook(stop, solve)
    })
}

/// How many of the pool's `other_workers` to keep polling for passes of `pass_entries`.
fn pollers(other_workers: usize, pass_entries: usize) -> usize {
    other_workers.min(pass_entries / ENTRIES_PER_POLLER)
}

/// Sets the flag when dropped: the pollers stop even if the solve unwinds.
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Runs the pool's pending jobs (the solve's chunks among them) until `done` is set or
/// none has come for [`MAX_IDLE`].
///
/// Returns at once on the solving thread itself: it can pop this job from its own queue
/// while it waits inside a pass, and polling there would only hold up the solve until
/// [`MAX_IDLE`] has passed.
fn keep_awake(done: &AtomicBool, solver: ThreadId) {
    if std::thread::current().id() == solver {
        return;
    }
    let mut idle_polls = 0u32;
    let mut last_work = Instant::now();
    while !done.load(Ordering::Acquire) {
        if let Some(rayon::Yield::Executed) = rayon::yield_now() {
            idle_polls = 0;
            last_work = Instant::now();
            continue;
        }
        idle_polls += 1;
        if idle_polls == POLLS_PER_OS_YIELD {
            idle_polls = 0;
            if last_work.elapsed() > MAX_IDLE {
                return;
            }
            std::thread::yield_now();
        } else {
            for _ in 0..PAUSES_PER_POLL {
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use rayon::prelude::*;

    use super::*;

    /// Passes large enough to keep every other worker polling.
    const BIG: usize = usize::MAX;

    #[test]
    fn only_passes_long_enough_keep_other_workers_polling() {
        // Adult's training rows: 365,909 entries.
        assert_eq!(pollers(1, 365_909), 1);
        assert_eq!(pollers(63, 365_909), 5);
        // 1,000 rows of 14 entries, or no other worker: nobody polls.
        assert_eq!(pollers(63, 14_000), 0);
        assert_eq!(pollers(0, BIG), 0);
    }

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    /// A stand-in for a solve: parallel passes separated by serial gaps long enough for an
    /// idle worker to fall asleep.
    fn passes() -> f64 {
        (0..20)
            .map(|pass| {
                std::thread::sleep(std::time::Duration::from_micros(200));
                (0..64)
                    .into_par_iter()
                    .map(|i| (i * pass) as f64)
                    .sum::<f64>()
            })
            .sum()
    }

    /// Runs `f` on its own thread and fails if it has not returned within a minute: a
    /// solve that waits on its pollers would otherwise hang the test run, not fail it.
    fn within_a_minute<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || send.send(f()));
        receive
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("returned within a minute (a poller that never stops hangs the solve)")
    }

    #[test]
    fn a_solve_returns_from_inside_and_outside_pools_of_any_size() {
        let expected = passes();
        for threads in [1, 2, 3] {
            let pool = pool(threads);
            let (once, nested) = within_a_minute(move || {
                (
                    pool.install(|| on_worker(BIG, passes)),
                    pool.install(|| on_worker(BIG, || on_worker(BIG, passes))),
                )
            });
            assert_eq!((once, nested), (expected, expected));
        }
        assert_eq!(within_a_minute(|| on_worker(BIG, passes)), expected);
    }

    #[test]
    fn a_solve_in_a_pool_that_pops_its_oldest_job_first_does_not_wait_for_itself() {
        // In a breadth-first pool the solving thread, waiting inside a pass, takes its
        // own oldest job: the poller, which must give the thread back to the solve.
        #[allow(deprecated)]
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .breadth_first()
            .build()
            .unwrap();
        let expected = passes();
        // The other worker sleeps through the solve, so the poller stays in the solver's
        // queue, the oldest job there.
        pool.spawn(|| std::thread::sleep(std::time::Duration::from_millis(500)));
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(
            within_a_minute(move || pool.install(|| on_worker(BIG, passes))),
            expected
        );
    }

    #[test]
    fn many_solves_at_once_all_finish_and_the_pollers_run_other_work() {
        // More solves than workers, each with its pollers: every poller must give way,
        // running pending jobs (other solves among them) rather than blocking on them.
        let finished = within_a_minute(|| {
            let finished = AtomicUsize::new(0);
            pool(2).install(|| {
                (0..16).into_par_iter().for_each(|_| {
                    on_worker(BIG, passes);
                    finished.fetch_add(1, Ordering::Relaxed);
                })
            });
            finished.into_inner()
        });
        assert_eq!(finished, 16);
    }

    #[test]
    fn a_solve_that_panics_releases_its_pollers() {
        let (outcome, after) = within_a_minute(|| {
            let pool = pool(2);
            let outcome = pool.install(|| {
                std::panic::catch_unwind(|| {
                    on_worker(BIG, || {
                        passes();
                        panic!("solve failed");
                    })
                })
            });
            // The pool still works: the unwinding solve set its pollers' flag.
            (outcome.is_err(), pool.install(|| on_worker(BIG, passes)))
        });
        assert!(outcome);
        assert_eq!(after, passes());
    }
}
