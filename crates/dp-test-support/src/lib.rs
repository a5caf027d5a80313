//! Helpers the workspace's tests share; a dev-dependency only, never reachable from a
//! release path.
//!
//! Property tests of constructors must show "an error or a value, never a panic and never a
//! hang": each case runs on its own thread under a time limit, so that a hang (a loop sized
//! by a bad count, an allocation of gigabytes) fails the test instead of stalling the run.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// Runs `f` on its own thread and returns its value; panics (failing the test) if `f`
/// panics or does not finish within `limit`. Limits should be generous: tests run on loaded
/// 2-core machines in debug builds, and the hangs this guards against never finish.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = send.send(f());
    });
    match receive.recv_timeout(limit) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!("did not finish within {limit:?}"),
        Err(RecvTimeoutError::Disconnected) => panic!("panicked (see above)"),
    }
}

/// [`within`] for a property-test case that reports a failed expectation as `Err(message)`:
/// panics with the message, on a panic of the case, or when it runs past `limit`.
pub fn case_within(limit: Duration, case: impl FnOnce() -> Result<(), String> + Send + 'static) {
    if let Err(message) = within(limit, case) {
        panic!("{message}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_the_value_of_a_case_that_finishes() {
        assert_eq!(within(Duration::from_secs(5), || 7), 7);
        case_within(Duration::from_secs(5), || Ok(()));
    }

    #[test]
    #[should_panic(expected = "did not finish within")]
    fn fails_a_case_that_runs_past_its_limit() {
        within(Duration::from_millis(50), || {
            std::thread::sleep(Duration::from_secs(2))
        });
    }

    #[test]
    #[should_panic(expected = "panicked")]
    fn fails_a_case_that_panics() {
        within(Duration::from_secs(5), || panic!("inside the case"));
    }

    #[test]
    #[should_panic(expected = "the expectation")]
    fn fails_a_case_that_reports_an_error() {
        case_within(Duration::from_secs(5), || Err("the expectation".into()));
    }
}
