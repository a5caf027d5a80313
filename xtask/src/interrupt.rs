//! An interrupted run (SIGINT, SIGTERM, SIGHUP) leaves a consistent results folder.
//!
//! [`install`] blocks those signals in the main thread before any other thread exists, so
//! every thread spawned later (rayon's included) inherits the mask, and starts one thread
//! that waits for them (`sigwait`). Child processes start with an empty mask (the standard
//! library resets it before `exec`). On a signal, that thread:
//!
//! 1. waits until no file-system change is in progress ([`defer`] guards: replacing an
//!    experiment's results, one file, a folder claim) and lets no new one start, so an
//!    experiment's results are either all replaced or all left as they were;
//! 2. releases every folder claim still held (lock files, and the folders a claim created
//!    if they are empty), as dropping them would;
//! 3. regenerates `index.md` from the folders on disk if this run wrote results there
//!    ([`index_on_interrupt`]), so the index never shows the previous run's numbers beside
//!    replaced results;
//! 4. exits with status 128 + the signal's number.
//!
//! A test-only hook, the environment variable [`PAUSE_VARIABLE`], makes a run stop at a
//! named point ([`pause_point`]) so that tests can interrupt it deterministically.

use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, MutexGuard};

/// The environment variable naming the point where a run pauses (tests only).
pub const PAUSE_VARIABLE: &str = "XTASK_TEST_PAUSE_AT";

/// What the signal thread needs to clean up after this run.
struct State {
    /// Guards alive ([`defer`]).
    deferred: usize,
    /// A signal arrived: no new guard may start.
    stopping: bool,
    /// Folder claims held, by id.
    claims: Vec<(u64, Claim)>,
    next_claim: u64,
    /// The folder whose `index.md` to regenerate, and whether results were written.
    index: Option<PathBuf>,
    wrote_results: bool,
}

/// A held folder claim, as the signal thread releases it.
pub struct Claim {
    /// Releases the claim (removes its lock file and the folders it created, if empty).
    pub release: Box<dyn FnOnce() + Send>,
}

static STATE: Mutex<State> = Mutex::new(State {
    deferred: 0,
    stopping: false,
    claims: Vec::new(),
    next_claim: 0,
    index: None,
    wrote_results: false,
});
static CHANGED: Condvar = Condvar::new();

thread_local! {
    /// Set on the signal thread, whose own cleanup writes files and must not wait for
    /// itself.
    static CLEANING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn state() -> MutexGuard<'static, State> {
    // A panic while holding the lock leaves the counters usable: recover them.
    STATE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Holds off the cleanup of an interrupted run until dropped (see [`defer`]).
#[must_use = "the change is protected only while the guard lives"]
pub struct Deferred {
    counted: bool,
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if self.counted {
            state().deferred -= 1;
            CHANGED.notify_all();
        }
    }
}

/// Marks a change to the results folder that must complete, or not start, if the run is
/// interrupted: an interrupt waits until the guard is dropped. Once an interrupt is being
/// handled, a new outermost guard never returns (the process exits first); guards nested
/// in a live one proceed, so a change in progress finishes.
pub fn defer() -> Deferred {
    if CLEANING.with(std::cell::Cell::get) {
        return Deferred { counted: false };
    }
    let mut st = state();
    while st.stopping && st.deferred == 0 {
        st = CHANGED.wait(st).unwrap_or_else(|p| p.into_inner());
    }
    st.deferred += 1;
    Deferred { counted: true }
}

/// Registers a held claim for release on interrupt; returns its id for [`unregister`].
pub fn register(claim: Claim) -> u64 {
    let mut st = state();
    let id = st.next_claim;
    st.next_claim += 1;
    st.claims.push((id, claim));
    id
}

/// Forgets a claim its holder released.
pub fn unregister(id: u64) {
    state().claims.retain(|(held, _)| *held != id);
}

/// On interrupt, regenerate `<out>/index.md` if results were written ([`wrote_results`]).
pub fn index_on_interrupt(out: &Path) {
    state().index = Some(out.to_path_buf());
}

/// Records that results were written in this run.
pub fn wrote_results() {
    state().wrote_results = true;
}

/// Starts handling SIGINT, SIGTERM and SIGHUP as the module says. Call first thing in
/// `main`, before any thread is spawned.
pub fn install() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    signals::install();
}

/// Cleans up after an interrupt: waits for changes in progress, releases claims,
/// regenerates the index. Returns with the process still running; the caller exits.
#[cfg_attr(not(any(target_os = "linux", target_os = "android")), allow(dead_code))]
fn clean_up(signal: &str) {
    CLEANING.with(|c| c.set(true));
    eprintln!("xtask: {signal} received: completing the change in progress, then cleaning up");
    let (claims, index) = {
        let mut st = state();
        st.stopping = true;
        while st.deferred > 0 {
            st = CHANGED.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let index = st.wrote_results.then(|| st.index.clone()).flatten();
        (std::mem::take(&mut st.claims), index)
    };
    // The index first, while the claims still keep other runs out of the folders it reads.
    if let Some(out) = index {
        match crate::reproduce::regenerate_index(&out) {
            Ok(path) => eprintln!(
                "xtask: {} regenerated from the results on disk",
                path.display()
            ),
            Err(e) => eprintln!(
                "xtask: could not regenerate the index in {}: {e}",
                out.display()
            ),
        }
    }
    for (_, claim) in claims.into_iter().rev() {
        (claim.release)();
    }
}

/// Where a test asked the run to pause ([`PAUSE_VARIABLE`]): at `point`, announces it on
/// stderr and, for `sleep: None`, waits until the process is ended; else sleeps that long
/// and continues. No effect unless the variable names `point`.
pub fn pause_point(point: &str, sleep: Option<std::time::Duration>) {
    if std::env::var_os(PAUSE_VARIABLE).is_none_or(|p| p != point) {
        return;
    }
    eprintln!("xtask: paused at {point}");
    match sleep {
        Some(duration) => std::thread::sleep(duration),
        None => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod signals {
    /// The signals handled, with their names.
    const HANDLED: [(libc::c_int, &str); 3] = [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ];

    pub(super) fn install() {
        // SAFETY: `set` is initialized by `sigemptyset` before use, and the calls only read
        // and write it and this thread's signal mask.
        let set = unsafe {
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&mut set);
            for (signal, _) in HANDLED {
                libc::sigaddset(&mut set, signal);
            }
            if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
                eprintln!("xtask: cannot block signals; an interrupted run is not cleaned up");
                return;
            }
            set
        };
        std::thread::spawn(move || {
            let mut signal: libc::c_int = 0;
            // SAFETY: `set` and `signal` are valid for the call.
            while unsafe { libc::sigwait(&set, &mut signal) } != 0 {}
            let name = HANDLED
                .iter()
                .find(|(s, _)| *s == signal)
                .map_or("a signal", |(_, name)| name);
            super::clean_up(name);
            std::process::exit(128 + signal);
        });
    }
}
