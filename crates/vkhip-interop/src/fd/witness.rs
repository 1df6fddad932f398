//! Tests' witness of who still holds a descriptor, judged by the open file it refers to and
//! never by its number: other tests of the same process open files on other threads and are
//! handed a just-closed number at once, so "is fd N open?" races them (issue 26).

use std::io::Read as _;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// One end of a socket pair kept by the test; the other end is what it hands away.
pub(crate) struct Witness {
    peer: UnixStream,
    /// Device and inode of the end handed away.
    given: (u64, u64),
}

impl Witness {
    /// The witness, and the descriptor to hand to the code under test.
    pub(crate) fn new() -> (Witness, OwnedFd) {
        let (peer, end) = UnixStream::pair().expect("socket pair");
        let end = OwnedFd::from(end);
        let given = identity(end.as_raw_fd()).expect("fstat of a fresh socket");
        (Witness { peer, given }, end)
    }

    /// Whether descriptor number `fd` of this process is the end handed away (the same open
    /// socket, not whatever file took the number since).
    pub(crate) fn held_at(&self, fd: RawFd) -> bool {
        identity(fd) == Some(self.given)
    }

    /// Whether every descriptor of the end handed away is closed: the kept end then reads
    /// end-of-file. Waits up to 5 s for it, since a child that another thread is spawning holds
    /// copies of this process's descriptors until it execs (they are close-on-exec); one that is
    /// never closed times out.
    pub(crate) fn closed(&self) -> bool {
        self.closed_within(Duration::from_secs(5))
    }

    /// [`Self::closed`], waiting at most `wait`.
    pub(crate) fn closed_within(&self, wait: Duration) -> bool {
        self.peer.set_read_timeout(Some(wait)).expect("read timeout");
        match (&self.peer).read(&mut [0u8; 1]) {
            Ok(0) => true,
            Ok(_) => panic!("nobody writes to the witness"),
            Err(_) => false,
        }
    }
}

/// Device and inode of the file open at `fd`, or None if `fd` is not open.
fn identity(fd: RawFd) -> Option<(u64, u64)> {
    // SAFETY: an all-zero `stat` is a valid value of the plain C struct; fstat overwrites it.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only reads the descriptor table and writes one `stat`; any integer is a valid
    // first argument (a closed one answers EBADF).
    let ok = unsafe { libc::fstat(fd, &mut st) } == 0;
    ok.then_some((st.st_dev, st.st_ino))
}
