//! A progress line refreshed on stderr while a long call runs, stopped however the call ends.
//!
//! [`with_progress`] runs `work` on the calling thread while a helper thread calls `show` every
//! `interval`. The helper is owned by a drop guard: when `work` returns, returns an error or
//! panics, the guard's `Drop` raises the stop flag, wakes the helper and joins it, so the helper
//! can never outlive the call (an unwinding trainer once left it spinning, and the enclosing
//! `thread::scope` waited for it forever).
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::time::Duration;
//! let done = AtomicUsize::new(0);
//! let total = tinyllm::progress::with_progress(
//!     Duration::from_millis(200),
//!     || eprint!("\rstep {}", done.load(Ordering::Relaxed)),
//!     || (0..10).map(|k| { done.store(k, Ordering::Relaxed); k }).sum::<usize>(),
//! );
//! assert_eq!(total, 45);
//! ```

use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::ScopedJoinHandle;
use std::time::Duration;

/// A stop flag the helper can sleep on (so stopping does not wait out the interval).
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    fn raise(&self) {
        *self.stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        self.wake.notify_all();
    }

    /// Sleep up to `interval`; true once the flag is raised.
    fn wait(&self, interval: Duration) -> bool {
        let stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let (stopped, _) = self
            .wake
            .wait_timeout_while(stopped, interval, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        *stopped
    }
}

/// Owns the helper thread: dropping it stops and joins the helper.
struct Guard<'a, 'scope> {
    stop: &'a Stop,
    helper: Option<ScopedJoinHandle<'scope, ()>>,
}

impl Drop for Guard<'_, '_> {
    fn drop(&mut self) {
        self.stop.raise();
        if let Some(helper) = self.helper.take() {
            // A panic in `show` stays in the helper: the progress line is not worth a second
            // panic, least of all during unwinding.
            let _ = helper.join();
        }
    }
}

/// Run `work`, calling `show` on a helper thread right away and then every `interval` until
/// `work` is over (returned or panicked). Returns what `work` returns; a panic in `work` goes on
/// unwinding once the helper is joined.
pub fn with_progress<T>(interval: Duration, show: impl Fn() + Sync, work: impl FnOnce() -> T) -> T {
    let stop = Stop::default();
    std::thread::scope(|scope| {
        let stop = &stop;
        let show = &show;
        let _guard = Guard {
            stop,
            helper: Some(scope.spawn(move || loop {
                show();
                if stop.wait(interval) {
                    break;
                }
            })),
        };
        work()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;

    /// Run `f` on its own thread and fail (instead of hanging the test run) if it takes too long.
    fn within_seconds<T: Send + 'static>(
        seconds: u64,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(seconds))
            .expect("with_progress did not return: the helper thread was not stopped")
    }

    /// Sets its flag when dropped: proof that the helper's closure is gone (the thread ended).
    struct Exited(std::sync::Arc<AtomicBool>);
    impl Drop for Exited {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[test]
    fn the_helper_stops_and_is_joined_when_work_panics() {
        let (ticks, exited) = within_seconds(10, || {
            let ticks = std::sync::Arc::new(AtomicUsize::new(0));
            let exited = std::sync::Arc::new(AtomicBool::new(false));
            let (t, e) = (ticks.clone(), exited.clone());
            let outcome = std::panic::catch_unwind(move || {
                let marker = Exited(e);
                with_progress::<()>(
                    Duration::from_millis(1),
                    move || {
                        let _ = &marker;
                        t.fetch_add(1, Ordering::SeqCst);
                    },
                    || {
                        std::thread::sleep(Duration::from_millis(20));
                        panic!("trainer failed");
                    },
                )
            });
            assert!(outcome.is_err(), "the panic goes on unwinding");
            (ticks, exited)
        });
        assert!(
            exited.load(Ordering::SeqCst),
            "the helper ended before the call returned"
        );
        let seen = ticks.load(Ordering::SeqCst);
        assert!(seen >= 1, "show ran right away");
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            seen,
            "no tick after the call ended"
        );
    }

    #[test]
    fn the_helper_stops_when_work_returns_an_error_without_waiting_out_the_interval() {
        let started = std::time::Instant::now();
        let result: Result<(), String> = within_seconds(10, || {
            with_progress(
                Duration::from_secs(3600),
                || {},
                || Err("bad input".to_string()),
            )
        });
        assert_eq!(result, Err("bad input".to_string()));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_panicking_show_does_not_disturb_the_work() {
        let value = within_seconds(10, || {
            with_progress(Duration::from_millis(1), || panic!("stderr is gone"), || 42)
        });
        assert_eq!(value, 42);
    }
}
