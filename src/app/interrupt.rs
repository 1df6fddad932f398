//! Interrupts: SIGINT, SIGTERM and SIGHUP (ctrlc's `termination` feature) all mean "stop after
//! the frames in flight, tear down in order, print the report, exit 130".
//!
//! - One interrupt per burst: `timeout` (and a terminal's Ctrl-C) signal the process *and* its
//!   group, so one request arrives two or more times within microseconds. Signals within
//!   [`BURST`] of the first count once; only a later one aborts at once (exit 130, no report).
//! - A loop sleeping until a deadline (the window's `--max-fps` pacing) registers a waker with
//!   [`set_waker`], so an interrupt takes effect at once, not at the next frame.
//!
//! # Examples
//!
//! A signal sets the flag and wakes the registered waiter at once.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use vkhip::app::interrupt::{clear_waker, install_interrupt_handler, interrupted, set_waker};
//!
//! install_interrupt_handler();
//! let (tx, rx) = mpsc::channel();
//! set_waker(move || tx.send(()).unwrap());
//! assert!(!interrupted());
//! // SAFETY: raise(3) only sends SIGINT to this process, whose handler was installed above.
//! assert_eq!(unsafe { libc::raise(libc::SIGINT) }, 0);
//! rx.recv_timeout(Duration::from_secs(10)).expect("the waker runs");
//! assert!(interrupted());
//! clear_waker();
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Signals this soon after the first one belong to the same request.
pub const BURST: Duration = Duration::from_millis(500);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static FIRST: OnceLock<Instant> = OnceLock::new();
type Waker = Box<dyn Fn() + Send>;
static WAKER: Mutex<Option<Waker>> = Mutex::new(None);

/// Install the handler for SIGINT, SIGTERM and SIGHUP.
pub fn install_interrupt_handler() {
    if let Err(e) = ctrlc::set_handler(on_signal) {
        log::warn!("could not install the interrupt handler: {e}");
    }
}

/// Whether an interrupt arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Call `wake` (from the handler's thread) when an interrupt arrives, to end a wait early.
pub fn set_waker(wake: impl Fn() + Send + 'static) {
    if let Ok(mut w) = WAKER.lock() {
        *w = Some(Box::new(wake));
    }
}

/// Forget the waker (its event loop is gone).
pub fn clear_waker() {
    if let Ok(mut w) = WAKER.lock() {
        *w = None;
    }
}

/// What one signal does, given when the first one came (`None`: this is the first).
#[derive(Debug, PartialEq, Eq)]
enum Action {
    Stop,
    SameBurst,
    Abort,
}

fn action(first: Option<Instant>, now: Instant) -> Action {
    match first {
        None => Action::Stop,
        Some(t) if now.saturating_duration_since(t) < BURST => Action::SameBurst,
        Some(_) => Action::Abort,
    }
}

/// Runs on ctrlc's own thread (not in signal context): locks and printing are fine.
fn on_signal() {
    let now = Instant::now();
    let first = FIRST.get().copied();
    match action(first, now) {
        Action::Stop => {
            let _ = FIRST.set(now);
            INTERRUPTED.store(true, Ordering::SeqCst);
            crate::errln!("vkhip: interrupted, finishing the frames in flight (interrupt again to abort)");
            if let Ok(w) = WAKER.lock() {
                if let Some(wake) = w.as_ref() {
                    wake();
                }
            }
        }
        Action::SameBurst => log::debug!("interrupt within {BURST:?} of the first: the same request"),
        Action::Abort => std::process::exit(130),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_counts_once() {
        let t = Instant::now();
        assert_eq!(action(None, t), Action::Stop);
        assert_eq!(action(Some(t), t + Duration::from_micros(50)), Action::SameBurst);
        assert_eq!(action(Some(t), t + BURST + Duration::from_millis(1)), Action::Abort);
    }
}
