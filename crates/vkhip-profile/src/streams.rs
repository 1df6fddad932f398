//! Orderings between CUDA stream tracks that no semaphore makes: which stream of the device's
//! context each track records, and what CUDA orders between two of them by itself.
//!
//! - **One stream, several tracks.** Tracks made on one stream (two handles lending the same
//!   `CUstream`, or two tracks on one handle) are one stream's work: each operation recorded on a
//!   track comes, in stream order, after everything recorded before it on the others. The
//!   profiler records that as an internal `stream:A→B` edge ([`crate::profiler`]) before the
//!   operation. A handle is one stream while a track on it lives; a track made on a handle no
//!   live track holds is a stream of its own (the engine may have destroyed the old stream and
//!   been given the same address for a new one), except for CUDA's two default streams, which
//!   live as long as the context.
//! - **The legacy default stream** (`CU_STREAM_LEGACY`, handle 0 or 1) synchronises with every
//!   *blocking* stream of the context: its work waits for what was enqueued on them before, and
//!   their later work waits for it. CUDA's per-thread default stream (`CU_STREAM_PER_THREAD`, 2)
//!   is blocking by definition, so that pair is modelled (internal `legacy:A→B` edges). Whether
//!   any other stream is blocking (`cuStreamGetFlags`) the profiler cannot see; the crate's own
//!   stream is not, an engine's may be. Modelled as not blocking, a blocking one would make the
//!   checker report pairs CUDA orders; so a track on the legacy stream and a track on any other
//!   stream but the per-thread default one are **refused** in one profiler
//!   ([`crate::Error::Invalid`], naming both).
//! - A host wait for a stream (`CudaStream::synchronized`) covers what was enqueued on that
//!   stream, its other tracks' work included; it is not taken to cover a blocking stream's work
//!   enqueued after the legacy stream's last operation.
//!
//! HIP stream tracks take part as one stream per `Hip` handle (several tracks on one handle are
//! its order); HIP's own null stream is never lent to the profiler, so nothing else applies.
//!
//! A track on `CU_STREAM_PER_THREAD` records the per-thread stream of the thread that made it:
//! enqueue its work from that thread.

use crate::error::{Error, Result};
use std::thread::ThreadId;

/// Which stream of the context a CUDA stream track records, as its handle tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StreamHandle {
    /// `CU_STREAM_LEGACY` (the handle 0 or 1).
    Legacy,
    /// `CU_STREAM_PER_THREAD` (2), of the thread that made the track.
    PerThread(ThreadId),
    /// Any other `CUstream`: the crate's own (not blocking) or one the engine lent (either).
    Other(u64),
    /// A HIP track's stream: its `Hip` handle's one stream, named by the handle's address (a
    /// track borrows the handle, so the address names it while a track on it lives).
    #[cfg_attr(not(feature = "hip"), allow(dead_code))]
    Hip(u64),
}

impl StreamHandle {
    /// The handle `raw` (`Cuda::stream`), on the calling thread.
    pub(crate) fn of(raw: u64) -> Self {
        match raw {
            0 | 1 => StreamHandle::Legacy,
            2 => StreamHandle::PerThread(std::thread::current().id()),
            other => StreamHandle::Other(other),
        }
    }

    fn describe(self) -> String {
        match self {
            StreamHandle::Legacy => "CUDA's legacy default stream".into(),
            StreamHandle::PerThread(_) => "CUDA's per-thread default stream".into(),
            StreamHandle::Other(h) => format!("stream {h:#x}"),
            StreamHandle::Hip(h) => format!("the HIP stream of handle {h:#x}"),
        }
    }
}

/// A stream track's place: its handle, the stream it is (tracks with the same `stream` are one
/// stream), and whether its handle is still held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    pub(crate) handle: StreamHandle,
    pub(crate) stream: u32,
    pub(crate) alive: bool,
}

/// Why CUDA orders an operation on one track after the work recorded before it on another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// One stream: stream order.
    SameStream,
    /// The legacy default stream and a blocking stream.
    Legacy,
}

impl Order {
    /// The internal semaphore's prefix (`stream:A→B`, `legacy:A→B`).
    pub(crate) fn prefix(self) -> &'static str {
        match self {
            Order::SameStream => "stream",
            Order::Legacy => "legacy",
        }
    }
}

/// Whether CUDA orders an operation on the track at `b` after the work recorded before it on the
/// track at `a`, and why.
pub(crate) fn order(a: &Place, b: &Place) -> Option<Order> {
    use StreamHandle::{Legacy, PerThread};
    if a.stream == b.stream {
        return Some(Order::SameStream);
    }
    match (a.handle, b.handle) {
        (Legacy, PerThread(_)) | (PerThread(_), Legacy) => Some(Order::Legacy),
        _ => None,
    }
}

/// The place of a new track named `name` on `handle`, given the existing stream tracks (their
/// names and places); refused when the legacy default stream would meet a stream whose
/// blocking flag the profiler cannot see (the module note).
pub(crate) fn admit(existing: &[(&str, Place)], name: &str, handle: StreamHandle) -> Result<Place> {
    use StreamHandle::{Hip, Legacy, Other};
    for (other_name, p) in existing {
        if matches!((handle, p.handle), (Legacy, Other(_)) | (Other(_), Legacy)) {
            return Err(Error::Invalid(format!(
                "a CUDA stream track \"{name}\" on {} beside \"{other_name}\" on {}: the legacy default stream \
                 orders itself with every blocking stream of the context, and the profiler cannot tell whether \
                 the other stream is blocking, so its checker could report pairs CUDA orders; profile one of them, \
                 or use the per-thread default stream (CU_STREAM_PER_THREAD) or a stream of your own instead of \
                 the legacy one",
                handle.describe(),
                p.handle.describe()
            )));
        }
    }
    let same = existing.iter().map(|(_, p)| p).find(|p| match (handle, p.handle) {
        (Other(h), Other(g)) | (Hip(h), Hip(g)) => h == g && p.alive,
        (a, b) => a == b,
    });
    let stream = match same {
        Some(p) => p.stream,
        None => existing.iter().map(|(_, p)| p.stream + 1).max().unwrap_or(0),
    };
    Ok(Place { handle, stream, alive: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place(existing: &[(&str, Place)], handle: StreamHandle) -> Place {
        admit(existing, "new", handle).unwrap()
    }

    #[test]
    fn a_handle_is_one_stream_while_a_track_on_it_lives_and_the_default_streams_always() {
        let a = place(&[], StreamHandle::Other(0x1000));
        let b = place(&[("a", a)], StreamHandle::Other(0x1000));
        assert_eq!(order(&a, &b), Some(Order::SameStream));
        // Once `a` was dropped, the same address may be a new stream.
        let dead = Place { alive: false, ..a };
        let c = place(&[("a", dead)], StreamHandle::Other(0x1000));
        assert_eq!(order(&dead, &c), None);
        // A HIP handle's tracks likewise, and never beside CUDA's streams' rules.
        let h = place(&[], StreamHandle::Hip(0x1000));
        assert_eq!(order(&h, &place(&[("h", h)], StreamHandle::Hip(0x1000))), Some(Order::SameStream));
        assert_eq!(order(&a, &place(&[("a", a)], StreamHandle::Hip(0x1000))), None);
        assert!(
            admit(&[("legacy", place(&[], StreamHandle::Legacy))], "hip", StreamHandle::Hip(0x1000)).is_ok()
        );
        // The default streams outlive every track.
        let legacy = Place { alive: false, ..place(&[], StreamHandle::Legacy) };
        let again = place(&[("legacy", legacy)], StreamHandle::Legacy);
        assert_eq!(order(&legacy, &again), Some(Order::SameStream));
        let me = std::thread::current().id();
        let pt = Place { alive: false, ..place(&[], StreamHandle::PerThread(me)) };
        assert_eq!(order(&pt, &place(&[("pt", pt)], StreamHandle::PerThread(me))), Some(Order::SameStream));
        // Another thread's per-thread stream is another stream.
        let theirs = std::thread::spawn(|| StreamHandle::of(2)).join().unwrap();
        assert_eq!(order(&pt, &place(&[("pt", pt)], theirs)), None);
    }

    #[test]
    fn the_legacy_stream_is_ordered_with_the_per_thread_one_and_refused_beside_any_other() {
        let legacy = place(&[], StreamHandle::Legacy);
        let pt = place(&[("legacy", legacy)], StreamHandle::of(2));
        assert_eq!((order(&legacy, &pt), order(&pt, &legacy)), (Some(Order::Legacy), Some(Order::Legacy)));
        // Two streams of the engine's, or the per-thread one and another: nothing implicit.
        let x = place(&[], StreamHandle::Other(0x10));
        let y = place(&[("x", x)], StreamHandle::Other(0x20));
        assert_eq!(order(&x, &y), None);
        assert_eq!(order(&pt, &place(&[("pt", pt)], StreamHandle::Other(0x10))), None);
        // The legacy stream beside a stream whose flags are unknown: refused, both named, either way.
        for (first, second) in [
            (StreamHandle::Legacy, StreamHandle::Other(0x10)),
            (StreamHandle::Other(0x10), StreamHandle::Legacy),
        ] {
            let p = Place { alive: false, ..place(&[], first) };
            let e = admit(&[("first", p)], "second", second).unwrap_err().to_string();
            assert!(e.contains("\"second\"") && e.contains("\"first\""), "{e}");
            assert!(e.contains("legacy default stream") && e.contains("stream 0x10"), "{e}");
        }
    }
}
