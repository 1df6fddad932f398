//! stdout and stderr that never panic. `println!` panics when stdout is closed (`vkhip info |
//! head -1`: EPIPE) or full (`> /dev/full`: ENOSPC); everything vkhip prints goes through here
//! instead. The first stdout error is remembered and later output is dropped; `main` turns it into
//! its documented outcome with [`finish`]:
//! - EPIPE (the reader went away): silent, the command's own exit code stands — as `git`, `rg` and
//!   other CLIs that ignore SIGPIPE do.
//! - any other write error: one line on stderr and exit code 2 (an environment problem).

use std::io::{self, Write as _};
use std::sync::Mutex;

/// The first stdout write error, if any.
static FAILED: Mutex<Option<io::Error>> = Mutex::new(None);

/// Write formatted text to stdout (see [`outln!`](crate::outln)).
pub fn write_fmt(args: std::fmt::Arguments<'_>) {
    let Ok(mut failed) = FAILED.lock() else { return };
    if failed.is_some() {
        return;
    }
    if let Err(e) = io::stdout().lock().write_fmt(args) {
        *failed = Some(e);
    }
}

/// Write `s` to stdout as is.
pub fn print(s: &str) {
    write_fmt(format_args!("{s}"));
}

/// One line on stderr; a closed or full stderr is ignored (there is nowhere left to say it).
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut e = io::stderr().lock();
    let _ = e.write_fmt(args).and_then(|()| e.write_all(b"\n"));
}

/// Flush stdout and return the first write error that is not a broken pipe.
///
/// # Examples
///
/// ```
/// vkhip::output::print("hello from a doctest\n");
/// vkhip::outln!("{} + {} = {}", 1, 2, 1 + 2);
/// // Nothing failed, so there is nothing to report.
/// assert!(vkhip::output::finish().is_none());
/// ```
pub fn finish() -> Option<io::Error> {
    let flushed = io::stdout().lock().flush();
    let mut failed = FAILED.lock().ok()?;
    if let Err(e) = flushed {
        failed.get_or_insert(e);
    }
    failed.take().filter(|e| e.kind() != io::ErrorKind::BrokenPipe)
}

/// `println!` that never panics: see [`crate::output`].
#[macro_export]
macro_rules! outln {
    () => { $crate::output::print("\n") };
    ($($arg:tt)*) => { $crate::output::write_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `eprintln!` that never panics: see [`crate::output`].
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::err_line(format_args!($($arg)*)) };
}
