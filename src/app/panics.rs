//! Panics inside a dependency while the window or the device is being created, caught and turned
//! into an error of one line.
//!
//! winit panics where a library it loads at run time is missing (`libxkbcommon-x11.so` on a
//! machine without X keyboard support: `EventLoop::new` panics in `xkbcommon-dl`), and a panic
//! would otherwise print a backtrace dump and exit 101. [`contain`] runs the creation under
//! `catch_unwind` with a panic hook of its own for that time, then puts the previous hook back:
//!
//! - `catch_unwind` alone would still let the default hook print the message and, under
//!   `RUST_BACKTRACE`, the whole backtrace; a hook installed for the whole process would also
//!   hide panics of vkhip's own code (bugs must stay loud).
//! - So the hook is swapped only around the call, records the message and location of a panic
//!   on the calling thread, and hands a panic on any other thread to the previous hook.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::panics::contain;
//!
//! let e = contain("opening the window system", || -> u32 { panic!("libfoo.so could not be loaded") })
//!     .unwrap_err();
//! assert!(e.to_string().starts_with(
//!     "opening the window system: a library vkhip uses panicked: libfoo.so could not be loaded (at "
//! ), "{e}");
//! assert_eq!(contain("nothing", || 7).unwrap(), 7);
//! ```

use std::panic::{self, AssertUnwindSafe, PanicHookInfo};
use std::sync::{Arc, Mutex};

/// A panic caught by [`contain`]: an environment problem (exit 2), never a backtrace.
#[derive(Debug, thiserror::Error)]
#[error("{what}: a library vkhip uses panicked: {message} (at {location})")]
pub struct DependencyPanic {
    /// What was being done (`opening the window system`).
    pub what: &'static str,
    /// The panic's message.
    pub message: String,
    /// Where it panicked, the path shortened to the crate (`xkbcommon-dl-0.4.2/src/x11.rs:59:28`).
    pub location: String,
}

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Run `f`; a panic in it becomes a [`DependencyPanic`], printed by no one (the caller decides).
/// The process's panic hook is the same before and after. `f` is treated as unwind-safe: what it
/// built is dropped by the unwind, and nothing it touched is used again by the caller.
pub fn contain<T>(what: &'static str, f: impl FnOnce() -> T) -> Result<T, DependencyPanic> {
    let caught: Arc<Mutex<Option<(String, String)>>> = Arc::default();
    let previous: Arc<Hook> = Arc::new(panic::take_hook());
    let (forward, slot, me) = (previous.clone(), caught.clone(), std::thread::current().id());
    panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != me {
            return forward(info);
        }
        let location = info.location().map_or_else(|| "an unknown place".into(), |l| short(l));
        let mut slot = slot.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert((message(info.payload()), location));
    }));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    // Ours goes (and with it `forward`), the previous one comes back.
    drop(panic::take_hook());
    match Arc::try_unwrap(previous) {
        Ok(hook) => panic::set_hook(hook),
        Err(shared) => panic::set_hook(Box::new(move |info| shared(info))),
    }
    result.map_err(|payload| {
        let recorded = caught.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (message, location) = recorded.unwrap_or_else(|| (message(&*payload), "an unknown place".into()));
        DependencyPanic { what, message, location }
    })
}

/// The text of a panic's payload (`panic!("…")` carries a `&str` or a `String`), on one line.
fn message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into());
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .to_string()
}

/// `file:line:column`, a path into cargo's registry shortened to the crate's own directory.
fn short(l: &panic::Location<'_>) -> String {
    let file = l.file();
    let file =
        file.find("index.crates.io-").and_then(|i| file[i..].split_once('/')).map_or(file, |(_, rest)| rest);
    format!("{file}:{}:{}", l.line(), l.column())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_one_line_with_its_place() {
        let e = contain("making the device", || -> () { panic!("{}", String::from("boom\nsecond line.")) })
            .unwrap_err();
        assert_eq!(e.message, "boom second line");
        assert!(e.location.starts_with("src/app/panics.rs:"), "{}", e.location);
    }
}
