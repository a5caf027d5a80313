//! Stopping a solve from outside it (Ctrl-C in a language binding): a hook the solvers ask
//! before each iteration. It is set for the duration of a call on the calling thread
//! ([`stop_when`]) and carried onto the pool worker that runs each solve, so no solver's
//! signature changes and code that never sets one pays one thread-local read per iteration.

use std::cell::RefCell;
use std::sync::Arc;

/// A hook answering whether to stop (asked from the solver's worker thread).
pub type StopHook = Arc<dyn Fn() -> bool + Send + Sync>;

thread_local! {
    static HOOK: RefCell<Option<StopHook>> = const { RefCell::new(None) };
}

/// Runs `f` with `stop` asked before every iteration of every solve that `f` starts on this
/// thread ([`crate::Newton`], [`crate::Lbfgs`], [`crate::Solver`]): once it answers true,
/// the solve returns [`crate::OptimError::Interrupted`] at its next iteration. The hook in
/// place before the call is restored after it, also if `f` unwinds.
pub fn stop_when<T>(stop: StopHook, f: impl FnOnce() -> T) -> T {
    with_hook(Some(stop), f)
}

/// The hook in place on this thread, if any (to carry onto a worker).
pub(crate) fn current() -> Option<StopHook> {
    HOOK.with(|hook| hook.borrow().clone())
}

/// Runs `f` with `hook` in place on this thread, restoring the previous one afterwards.
pub(crate) fn with_hook<T>(hook: Option<StopHook>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<StopHook>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            HOOK.with(|hook| *hook.borrow_mut() = previous);
        }
    }
    let previous = HOOK.with(|slot| slot.replace(hook));
    let _restore = Restore(previous);
    f()
}

/// Whether the hook in place on this thread asks to stop (false without one).
pub(crate) fn requested() -> bool {
    current().is_some_and(|stop| stop())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn the_hook_is_scoped_to_the_call_and_restored_after_it() {
        assert!(!requested());
        let inner_ran = AtomicBool::new(false);
        stop_when(Arc::new(|| true), || {
            assert!(requested());
            stop_when(Arc::new(|| false), || {
                assert!(!requested());
                inner_ran.store(true, Ordering::Relaxed);
            });
            assert!(requested(), "the outer hook is back after the inner call");
        });
        assert!(inner_ran.load(Ordering::Relaxed));
        assert!(!requested(), "nothing is left in place after the call");
    }

    #[test]
    fn the_hook_is_restored_when_the_call_unwinds() {
        let unwound = std::panic::catch_unwind(|| stop_when(Arc::new(|| true), || panic!("x")));
        assert!(unwound.is_err());
        assert!(!requested());
    }
}
