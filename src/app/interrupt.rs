//! Interrupts: SIGINT, SIGTERM and SIGHUP all mean "stop after the frames in flight, tear down in
//! order, print the report, exit 128 + the signal's number" (130 for SIGINT, 143 for SIGTERM,
//! 129 for SIGHUP: the status a shell, `timeout` or a supervisor reads for that signal; see
//! [`exit_code`]).
//!
//! - One interrupt per burst: `timeout` (and a terminal's Ctrl-C) signal the process *and* its
//!   group, so one request arrives two or more times within microseconds. Signals within
//!   [`BURST`] of the first count once; only a later one aborts at once (exit 128 + the first
//!   signal's number, no report).
//! - The signal handler only writes the signal's number to a pipe (async-signal-safe); a thread
//!   of its own reads it and does the rest, where locks and printing are fine.
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

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Signals this soon after the first one belong to the same request.
pub const BURST: Duration = Duration::from_millis(500);

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The number of the signal that stopped the run (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The write end of the signal pipe (-1 until installed).
static PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
static FIRST: OnceLock<Instant> = OnceLock::new();
type Waker = Box<dyn Fn() + Send>;
static WAKER: Mutex<Option<Waker>> = Mutex::new(None);

/// The signals that stop a run.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Install the handler for SIGINT, SIGTERM and SIGHUP (once; later calls do nothing).
pub fn install_interrupt_handler() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Err(e) = install() {
            log::warn!("could not install the interrupt handler: {e}");
        }
    });
}

fn install() -> std::io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2(2) writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    PIPE_WRITE.store(write_fd, Ordering::SeqCst);
    std::thread::Builder::new().name("vkhip-signals".into()).spawn(move || loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: reads at most size_of::<c_int>() bytes into `sig`; the descriptor stays open.
        let n = unsafe {
            libc::read(read_fd, (&mut sig as *mut libc::c_int).cast(), std::mem::size_of::<libc::c_int>())
        };
        if n == std::mem::size_of::<libc::c_int>() as isize {
            on_signal(sig);
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        } else {
            return;
        }
    })?;
    for sig in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid start; the handler only calls write(2), which is
        // async-signal-safe, and restores errno.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

extern "C" fn handler(sig: libc::c_int) {
    // SAFETY: errno is saved and restored around write(2), the only call made here.
    unsafe {
        let errno = *libc::__errno_location();
        let fd = PIPE_WRITE.load(Ordering::Relaxed);
        libc::write(fd, (&sig as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>());
        *libc::__errno_location() = errno;
    }
}

/// The exit status for a run that `signal` stopped: 128 + its number (130 for SIGINT, 143 for
/// SIGTERM, 129 for SIGHUP), as a shell reports a process the signal killed.
pub fn exit_code(signal: i32) -> u8 {
    u8::try_from(128 + signal).unwrap_or(130)
}

/// The exit status of an interrupted run ([`exit_code`] of the first signal), if one was.
pub fn interrupt_exit_code() -> Option<u8> {
    interrupted().then(|| exit_code(SIGNAL.load(Ordering::SeqCst)))
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

/// Runs on the signal thread (not in signal context): locks and printing are fine.
fn on_signal(sig: libc::c_int) {
    let now = Instant::now();
    let first = FIRST.get().copied();
    match action(first, now) {
        Action::Stop => {
            let _ = FIRST.set(now);
            SIGNAL.store(sig, Ordering::SeqCst);
            INTERRUPTED.store(true, Ordering::SeqCst);
            crate::errln!("vkhip: interrupted, finishing the frames in flight (interrupt again to abort)");
            if let Ok(w) = WAKER.lock() {
                if let Some(wake) = w.as_ref() {
                    wake();
                }
            }
        }
        Action::SameBurst => log::debug!("interrupt within {BURST:?} of the first: the same request"),
        Action::Abort => std::process::exit(exit_code(SIGNAL.load(Ordering::SeqCst)).into()),
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

    #[test]
    fn the_exit_status_is_128_plus_the_signal() {
        assert_eq!(exit_code(libc::SIGINT), 130);
        assert_eq!(exit_code(libc::SIGTERM), 143);
        assert_eq!(exit_code(libc::SIGHUP), 129);
    }
}
