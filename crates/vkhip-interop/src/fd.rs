//! Ownership of a file descriptor handed to a foreign API's import call.
//!
//! Vulkan's `vkGetMemoryFdKHR` / `vkGetSemaphoreFdKHR` give us a fresh fd that we own. What happens
//! to it when CUDA or HIP imports it differs per API, and getting it wrong either leaks the fd (and
//! with it the whole allocation, which stays alive while any fd refers to it) or closes an fd the
//! driver still uses. [`ImportFd`] makes the rule explicit at the call site: the import runs
//! through [`ImportFd::import`], which takes the API's [`FdOwnership`] and closes or releases the fd
//! according to the outcome. No other code touches the raw fd.

use std::os::fd::{AsRawFd, IntoRawFd, OwnedFd, RawFd};

/// What an import call does with the fd it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdOwnership {
    /// A successful import takes ownership (the driver closes it when the imported object is
    /// destroyed); after a failed import the caller still owns it and must close it.
    /// CUDA: "Importing Memory Objects" in the CUDA Programming Guide, cuImportExternalMemory docs.
    TakenOnSuccess,
    /// The API never takes ownership (it duplicates what it needs); the caller closes the fd after
    /// the import, whatever its outcome.
    Borrowed,
}

/// An exported fd on its way into a foreign API. Dropping it unused closes it.
///
/// # Examples
///
/// A socket pair stands in for an exported fd: once every descriptor of one end is closed, the
/// other end reads end-of-file, which shows whether [`ImportFd::import`] closed it.
///
/// ```
/// use std::io::{ErrorKind, Read as _};
/// use std::os::fd::{FromRawFd as _, OwnedFd};
/// use std::os::unix::net::UnixStream;
/// use vkhip_interop::{FdOwnership, ImportFd};
///
/// let closed = |peer: &mut UnixStream| {
///     peer.set_nonblocking(true).unwrap();
///     match peer.read(&mut [0u8; 1]) {
///         Ok(0) => true,
///         Err(e) if e.kind() == ErrorKind::WouldBlock => false,
///         other => panic!("unexpected {other:?}"),
///     }
/// };
///
/// // A failed import that would have taken the fd: the caller still owns it, and it is closed.
/// let (mut peer, end) = UnixStream::pair().unwrap();
/// let r = ImportFd::new(OwnedFd::from(end)).import(FdOwnership::TakenOnSuccess, |_| Err::<(), _>("no"));
/// assert!(r.is_err());
/// assert!(closed(&mut peer));
///
/// // A successful import that takes the fd (CUDA): it stays open, now the API's to close.
/// let (mut peer, end) = UnixStream::pair().unwrap();
/// let raw = ImportFd::new(OwnedFd::from(end)).import(FdOwnership::TakenOnSuccess, Ok::<_, ()>).unwrap();
/// assert!(!closed(&mut peer));
/// // SAFETY: the "API" owns `raw` now and nothing else refers to it; this plays its close.
/// drop(unsafe { OwnedFd::from_raw_fd(raw) });
/// assert!(closed(&mut peer));
///
/// // A borrowing import: closed after the call whatever its outcome.
/// let (mut peer, end) = UnixStream::pair().unwrap();
/// ImportFd::new(OwnedFd::from(end)).import(FdOwnership::Borrowed, Ok::<_, ()>).unwrap();
/// assert!(closed(&mut peer));
/// ```
#[derive(Debug)]
pub struct ImportFd(OwnedFd);

impl ImportFd {
    pub fn new(fd: OwnedFd) -> Self {
        ImportFd(fd)
    }

    /// The raw descriptor number, for logs.
    pub fn raw(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Run `import` with the raw fd, then close it or let it go as `ownership` says for the
    /// outcome: on `Ok` with [`FdOwnership::TakenOnSuccess`] the fd now belongs to the API and is
    /// not closed here; in every other case it is closed before this returns, unless the API
    /// already closed it against its own rule.
    ///
    /// Mesa's lavapipe closes the fd of an import it refuses (`vkAllocateMemory` with an fd that
    /// is no exported allocation), where Vulkan leaves it to the caller. Closing it a second time
    /// would close whatever descriptor another thread opened under the freed number (and aborts
    /// a debug build: "IO Safety violation"). So a duplicate taken before the call witnesses the
    /// file, and the fd is closed only while it still refers to that file.
    pub fn import<T, E>(
        self,
        ownership: FdOwnership,
        import: impl FnOnce(RawFd) -> Result<T, E>,
    ) -> Result<T, E> {
        // None only when the process is out of descriptors: then the rule alone decides.
        let witness = self.0.try_clone().ok();
        let result = import(self.0.as_raw_fd());
        let taken = matches!((&result, ownership), (Ok(_), FdOwnership::TakenOnSuccess));
        if taken || witness.as_ref().is_some_and(|w| !same_file(self.0.as_raw_fd(), w.as_raw_fd())) {
            // The API owns the descriptor now, or closed it already: forget it without closing.
            let _ = self.0.into_raw_fd();
        } else {
            drop(self.0);
        }
        result
    }
}

/// Whether descriptor `fd` is open and refers to the same file as `witness` (an open descriptor).
fn same_file(fd: RawFd, witness: RawFd) -> bool {
    let id = |fd: RawFd| {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: fstat writes a `stat` into the buffer or fails; any integer is a valid argument.
        let ok = unsafe { libc::fstat(fd, st.as_mut_ptr()) } == 0;
        // SAFETY: fstat returned 0, so it filled the buffer.
        ok.then(|| unsafe { st.assume_init() }).map(|st| (st.st_dev, st.st_ino))
    };
    matches!((id(fd), id(witness)), (Some(a), Some(b)) if a == b)
}

#[cfg(test)]
pub(crate) mod witness;

#[cfg(test)]
mod tests {
    use super::witness::Witness;
    use super::*;
    use std::os::fd::FromRawFd;

    #[test]
    fn taken_on_success_leaves_fd_to_the_api() {
        let (witness, end) = Witness::new();
        let fd = ImportFd::new(end);
        let raw = fd.raw();
        let r: Result<RawFd, ()> = fd.import(FdOwnership::TakenOnSuccess, Ok);
        assert_eq!(r, Ok(raw));
        assert!(witness.held_at(raw), "a successful import must not close the fd the API now owns");
        // Play the API's part: it closes the fd when its object is destroyed.
        // SAFETY: `raw` is open and owned by nobody else now.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
        assert!(witness.closed());
    }

    #[test]
    fn taken_on_success_but_failed_closes_fd() {
        let (witness, end) = Witness::new();
        let r: Result<(), &str> = ImportFd::new(end).import(FdOwnership::TakenOnSuccess, |_| Err("refused"));
        assert_eq!(r, Err("refused"));
        assert!(witness.closed(), "after a failed import the caller still owns the fd and must close it");
    }

    #[test]
    fn borrowed_is_closed_either_way() {
        for ok in [true, false] {
            let (witness, end) = Witness::new();
            let _ = ImportFd::new(end).import(FdOwnership::Borrowed, |_| if ok { Ok(()) } else { Err(()) });
            assert!(witness.closed(), "borrowed fd must be closed after import (ok = {ok})");
        }
    }

    /// The witness itself: open is open, and closed stays closed when another file takes the
    /// number at once (Linux hands out the lowest free number: what fooled the old "is fd N
    /// open?" check when another test's thread opened a file in between).
    #[test]
    fn the_witness_judges_the_file_not_the_number() {
        let (witness, end) = Witness::new();
        let raw = end.as_raw_fd();
        assert!(witness.held_at(raw) && !witness.closed_within(std::time::Duration::from_millis(50)));
        drop(end);
        let other = std::fs::File::open("/dev/null").expect("open /dev/null");
        let reused = other.as_raw_fd() == raw;
        assert!(!witness.held_at(raw) && witness.closed(), "number {raw} reused: {reused}");
    }
}
