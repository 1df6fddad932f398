//! Stream tracks without CUDA, for tests: what [`crate::CudaStream`] records, through the same
//! calls (`State::add_stream_track`, `StreamOps::begin`, `wait`/`signal`, `synchronized`,
//! `dropped`), with host times for marks instead of stamps. The C door's `cuda_stream` test
//! (capi/tests/c/cuda_stream.c) replayed here is the regression test of the checker's false
//! positive after a second stream track; the rest covers what CUDA orders between stream tracks
//! by itself (crate::streams).

use crate::clock::host_now_ns;
use crate::error::Result;
use crate::model::{Access, Api, SyncKind, Track, TrackId};
use crate::profiler::{
    Gpu, GpuKind, Kind, Marks, Profiler, Resolved, Resource, ScopeCore, Semaphore, Shared, StreamOps,
};
use crate::streams::StreamHandle;
use std::sync::Arc;

/// A GPU track whose marks are host times: resolved as they are.
struct HostTimes;

impl GpuKind for HostTimes {
    fn kind_refresh(&mut self, _: Option<&Gpu>) -> Result<()> {
        Ok(())
    }

    fn kind_resolve(&mut self, marks: Marks, _: Option<&Gpu>) -> Resolved {
        Resolved::Times(marks.begin, marks.end)
    }

    fn kind_release(&mut self, _: Marks, _: bool, _: Option<&Gpu>) {}

    fn kind_accuracy(&self, _: Option<u64>, _: bool) -> Option<(u64, Option<String>)> {
        None
    }

    fn kind_clock_info(&self, _: Option<&Gpu>) -> Option<crate::clock::ClockInfo> {
        None
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

/// A CUDA stream track on the stream `handle` (`Cuda::stream`'s number), of a host-only
/// profiler.
pub(crate) struct SeamStream {
    shared: Option<Arc<Shared>>,
    track: TrackId,
}

impl SeamStream {
    pub(crate) fn new(profiler: &Profiler, name: &str, handle: u64) -> Result<Self> {
        let s = profiler.shared.clone().expect("an enabled profiler");
        let track = s.lock().add_stream_track(
            Track {
                name: name.into(),
                api: Api::Cuda,
                clock: "host times".into(),
                accuracy_ns: 0,
                clock_domain: None,
            },
            Kind::Gpu(Box::new(HostTimes)),
            StreamHandle::of(handle),
        )?;
        Ok(SeamStream { shared: Some(s), track })
    }

    fn ops(&self) -> StreamOps<'_> {
        StreamOps { shared: &self.shared, track: self.track }
    }

    /// A scope around work on the stream that reads `reads` and writes `writes`, begun and ended
    /// now.
    pub(crate) fn scope(&self, name: &str, reads: &[&Resource], writes: &[&Resource]) {
        let s = self.shared.as_ref().expect("enabled");
        let now = host_now_ns();
        let id = self.ops().begin(&mut s.lock(), name, Marks { begin: now, end: now }, now);
        let mut core =
            ScopeCore { shared: Some(s.clone()), track: self.track, id, accesses: Vec::new(), closed: false };
        for r in reads {
            core.access(r, Access::read);
        }
        for r in writes {
            core.access(r, Access::write);
        }
        core.close(Some(host_now_ns()));
    }

    pub(crate) fn wait(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Wait);
    }

    pub(crate) fn signal(&self, semaphore: &Semaphore, value: u64) {
        self.ops().sync(semaphore, value, SyncKind::Signal);
    }

    pub(crate) fn synchronized(&self) {
        self.ops().synchronized();
    }
}

impl Drop for SeamStream {
    fn drop(&mut self) {
        self.ops().dropped();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{CheckReport, Rule};
    use crate::{Options, Profiler};

    const LEGACY: u64 = 1;
    const PER_THREAD: u64 = 2;

    fn profiler() -> Profiler {
        Profiler::host_only(Options::default(), Vec::new())
    }

    fn finish(p: Profiler) -> CheckReport {
        p.finish().unwrap().check()
    }

    /// capi/tests/c/cuda_stream.c's profiler calls: per lent stream, a track "engine stream", a
    /// scope writing the buffer, the host's synchronisation, a host scope reading it, the end of
    /// the frame, the track dropped.
    fn lent_streams(handles: &[u64]) -> CheckReport {
        let p = profiler();
        let host = p.host_thread("main");
        let buffer = p.resource("buffer");
        for &h in handles {
            let track = SeamStream::new(&p, "engine stream", h).unwrap();
            track.scope("fill", &[], &[&buffer]);
            track.synchronized();
            let _check = host.scope("check").reads(&buffer);
            drop(_check);
            p.end_frame().unwrap();
            drop(track);
        }
        finish(p)
    }

    #[test]
    fn a_stream_track_made_after_another_was_dropped_is_joined_on_its_own() {
        // The C test's sequence (the legacy, then the per-thread default stream): the host read
        // after each synchronisation is ordered. Before each track had a join semaphore of its
        // own, the second track's join shared the first's by name, the host's wait for value 1
        // was taken as already seen, and the second fill against the second read was reported
        // unordered (H100 and H200, issue 45).
        let r = lent_streams(&[LEGACY, PER_THREAD]);
        assert!(r.is_clean(), "{:#?}", r.violations);
        // Both fills against both reads, and the fills against each other.
        assert!(r.pairs_checked >= 3, "{}", r.pairs_checked);
        // The same with no ordering between the two streams but the host's (two of the engine's
        // own, made one after the other at one address), and with three rounds.
        for handles in [&[0x7000, 0x7000][..], &[0x7000, 0x8000, 0x7000], &[PER_THREAD, PER_THREAD, LEGACY]] {
            let r = lent_streams(handles);
            assert!(r.is_clean() && r.pairs_checked >= 2 * handles.len() as u64 - 1, "{handles:x?}: {r:#?}");
        }
    }

    #[test]
    fn without_the_hosts_wait_the_second_tracks_fill_is_still_caught() {
        // The broken twin: the second round reads without synchronising its stream.
        let p = profiler();
        let host = p.host_thread("main");
        let buffer = p.resource("buffer");
        for (round, h) in [0x7000u64, 0x8000].into_iter().enumerate() {
            let track = SeamStream::new(&p, "engine stream", h).unwrap();
            track.scope("fill", &[], &[&buffer]);
            if round == 0 {
                track.synchronized();
            }
            drop(host.scope("check").reads(&buffer));
            p.end_frame().unwrap();
        }
        let r = finish(p);
        assert_eq!((r.violation_count, r.by_rule.unordered), (1, 1), "{r:#?}");
        let v = &r.violations[0];
        assert!(v.message.contains("\"fill\" (cuda stream \"engine stream\", frame 1)"), "{}", v.message);
        assert!(v.message.contains("\"check\" (host thread \"main\", frame 1)"), "{}", v.message);
    }

    #[test]
    fn two_tracks_on_one_stream_are_in_stream_order() {
        // Two handles lending engine streams (`b_handle`: the second's): what one track writes,
        // the other reads later, with no semaphore; the host synchronises the first track and
        // reads what the other wrote.
        let run = |b_handle| {
            let p = profiler();
            let host = p.host_thread("main");
            let r = p.resource("buffer");
            let (a, b) =
                (SeamStream::new(&p, "a", 0x7000).unwrap(), SeamStream::new(&p, "b", b_handle).unwrap());
            a.scope("write", &[], &[&r]);
            b.scope("read", &[&r], &[]);
            b.scope("write again", &[], &[&r]);
            a.synchronized();
            drop(host.scope("check").reads(&r));
            finish(p)
        };
        // One stream: stream order orders all three pairs, and the host's wait covers both.
        let report = run(0x7000);
        assert!(report.is_clean() && report.pairs_checked == 3, "{report:#?}");
        // Two streams (another handle): the host's wait covers `a` only, and nothing orders `b`
        // after `a`: the three pairs are unordered.
        let report = run(0x8000);
        assert_eq!(report.by_rule.unordered, 3, "{report:#?}");
    }

    #[test]
    fn work_begun_inside_another_tracks_open_scope_is_not_ordered_after_that_scope() {
        // On one stream, `b`'s read is enqueued while `a`'s scope is open: the rest of `a`'s
        // scope (its write) may come after it in stream order, so the pair is unordered; what `a`
        // did before the scope is ordered before the read.
        let p = profiler();
        let (w, x) = (p.resource("w"), p.resource("x"));
        let (a, b) = (SeamStream::new(&p, "a", 0x7000).unwrap(), SeamStream::new(&p, "b", 0x7000).unwrap());
        a.scope("before", &[], &[&x]);
        let s = p.shared.as_ref().unwrap();
        let now = host_now_ns();
        let id = a.ops().begin(&mut s.lock(), "open", Marks { begin: now, end: now }, now);
        b.scope("read", &[&w, &x], &[]);
        let mut core =
            ScopeCore { shared: Some(s.clone()), track: a.track, id, accesses: Vec::new(), closed: false };
        core.access(&w, Access::write);
        core.close(Some(host_now_ns()));
        let report = finish(p);
        assert_eq!((report.pairs_checked, report.by_rule.unordered), (2, 1), "{report:#?}");
        assert!(
            report.violations[0].message.starts_with("unordered: w:"),
            "{}",
            report.violations[0].message
        );
    }

    #[test]
    fn the_legacy_stream_is_ordered_with_the_per_thread_one() {
        // The legacy default stream waits for the per-thread stream's earlier work, and the
        // per-thread stream's later work waits for the legacy one's: no semaphore needed.
        let p = profiler();
        let r = p.resource("buffer");
        let (legacy, pt) = (
            SeamStream::new(&p, "legacy", LEGACY).unwrap(),
            SeamStream::new(&p, "per-thread", PER_THREAD).unwrap(),
        );
        pt.scope("write", &[], &[&r]);
        legacy.scope("read", &[&r], &[]);
        legacy.scope("write", &[], &[&r]);
        pt.scope("read", &[&r], &[]);
        let report = finish(p);
        assert!(report.is_clean() && report.pairs_checked == 3, "{report:#?}");
        // The engine's own streams (flags unknown, taken as not blocking) are not.
        let p = profiler();
        let r = p.resource("buffer");
        let (x, pt) = (
            SeamStream::new(&p, "x", 0x7000).unwrap(),
            SeamStream::new(&p, "per-thread", PER_THREAD).unwrap(),
        );
        pt.scope("write", &[], &[&r]);
        x.scope("read", &[&r], &[]);
        let report = finish(p);
        assert_eq!(report.by_rule.unordered, 1, "{report:#?}");
    }

    #[test]
    fn the_legacy_stream_beside_a_stream_of_unknown_flags_is_refused() {
        let p = profiler();
        let x = SeamStream::new(&p, "engine", 0x7000).unwrap();
        drop(x); // dropped or not: its work may still be what the legacy stream waits for
        let e = SeamStream::new(&p, "torch", LEGACY).err().expect("refused").to_string();
        assert!(e.starts_with("vkhip-profile: a CUDA stream track \"torch\" on CUDA's legacy default stream beside \"engine\" on stream 0x7000"), "{e}");
        // The per-thread stream beside either is fine.
        assert!(SeamStream::new(&p, "pt", PER_THREAD).is_ok());
        let p = profiler();
        let _legacy = SeamStream::new(&p, "torch", 0).unwrap();
        assert!(SeamStream::new(&p, "engine", 0x7000).is_err());
    }

    #[test]
    fn a_semaphore_hand_off_between_stream_tracks_is_unchanged() {
        // Semaphores still order tracks of different streams, and the loop missing its wait for
        // the reader is caught (the broken twin), with the stream edges in place.
        for broken in [false, true] {
            let p = profiler();
            let r = p.resource("buffer");
            let (written, read) = (p.semaphore("written"), p.semaphore("read"));
            let (a, b) =
                (SeamStream::new(&p, "a", 0x7000).unwrap(), SeamStream::new(&p, "b", PER_THREAD).unwrap());
            for f in 1..=3u64 {
                if !broken {
                    a.wait(&read, f - 1);
                }
                a.scope("write", &[], &[&r]);
                a.signal(&written, f);
                b.wait(&written, f);
                b.scope("read", &[&r], &[]);
                b.signal(&read, f);
                p.end_frame().unwrap();
            }
            let report = finish(p);
            assert_eq!(report.pairs_checked, 5, "{report:#?}");
            if broken {
                assert_eq!(report.by_rule.unordered, 2, "{report:#?}");
                assert!(report.violations.iter().all(|v| v.rule == Rule::Unordered));
            } else {
                assert!(report.is_clean(), "{report:#?}");
            }
        }
    }
}
