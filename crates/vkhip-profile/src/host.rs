//! Host-thread tracks: scopes timed with `CLOCK_MONOTONIC` on the thread that records them.
//!
//! [`Profiler::host_thread`] gives the calling thread a track. From then on the profiler knows
//! which host track records GPU work (a CUDA scope, a Vulkan submission) and which one waits for
//! a fence or a stream, and adds the orderings that are not semaphores: the `submit:` and `join:`
//! edges of the profiler's module note ([`crate::profiler`]).

use crate::clock::host_now_ns;
use crate::model::{Access, Api, SyncKind, Track, TrackId};
use crate::profiler::{Entry, Kind, Marks, Profiler, Resource, ScopeCore, Semaphore, Shared};
use std::marker::PhantomData;
use std::sync::Arc;

/// A host thread's track: [`Profiler::host_thread`]. Bound to the thread that made it (not
/// `Send`); the thread keeps its track until this is dropped.
pub struct HostThread {
    shared: Option<Arc<Shared>>,
    track: TrackId,
    _not_send: PhantomData<*const ()>,
}

impl Profiler {
    /// Give the calling thread a host track named `name`. GPU work this thread records from now
    /// on is ordered after what the thread did before ([`crate::profiler`]'s `submit:` edges),
    /// and its waits for fences and streams (`waited`, `synchronized`) order the GPU's work
    /// before what it does next.
    pub fn host_thread(&self, name: &str) -> HostThread {
        let Some(s) = &self.shared else {
            return HostThread { shared: None, track: TrackId(0), _not_send: PhantomData };
        };
        let track = s.lock().add_track(
            Track {
                name: name.into(),
                api: Api::Host,
                clock: "host clock".into(),
                accuracy_ns: 0,
                clock_domain: None,
            },
            Kind::Host,
        );
        crate::profiler::bind_host_track(s.id, track);
        HostThread { shared: Some(s.clone()), track, _not_send: PhantomData }
    }
}

impl HostThread {
    /// Open a scope on this thread; it closes when the guard is dropped.
    pub fn scope(&self, name: &str) -> HostScope<'_> {
        let Some(s) = &self.shared else {
            return HostScope { core: ScopeCore::inert(), _thread: PhantomData };
        };
        let now = host_now_ns();
        let mut st = s.lock();
        let scope = st.new_scope(self.track, name, Marks { begin: now, end: now }, now);
        let id = scope.id;
        st.push(self.track, Entry::Scope(scope));
        drop(st);
        HostScope {
            core: ScopeCore {
                shared: Some(s.clone()),
                track: self.track,
                id,
                accesses: Vec::new(),
                closed: false,
            },
            _thread: PhantomData,
        }
    }

    /// This thread signalled `semaphore` = `value` on the host just now (`vkSignalSemaphore`, or
    /// a hand-off of your own between threads).
    pub fn signal(&self, semaphore: &Semaphore, value: u64) {
        self.host_sync(semaphore, value, SyncKind::Signal);
    }

    /// This thread's wait for `semaphore` ≥ `value` returned just now (`vkWaitSemaphores`, or a
    /// hand-off of your own between threads).
    pub fn wait(&self, semaphore: &Semaphore, value: u64) {
        self.host_sync(semaphore, value, SyncKind::Wait);
    }

    fn host_sync(&self, semaphore: &Semaphore, value: u64, kind: SyncKind) {
        let Some(s) = &self.shared else { return };
        if semaphore.profiler != s.id {
            return;
        }
        let mut st = s.lock();
        let sync = st.sync(semaphore.id, value, kind, Some(host_now_ns()));
        st.push(self.track, Entry::Sync(sync));
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.track
    }
}

impl Drop for HostThread {
    fn drop(&mut self) {
        if let Some(s) = &self.shared {
            let (id, track) = (s.id, self.track);
            // The thread-local may be gone already when the thread is ending.
            crate::profiler::unbind_host_track(id, track);
        }
    }
}

/// A scope on a host thread: open from [`HostThread::scope`] until dropped or [`HostScope::end`].
#[must_use = "a scope ends when its guard is dropped: bind it (`let _s = …`)"]
pub struct HostScope<'t> {
    core: ScopeCore,
    _thread: PhantomData<&'t HostThread>,
}

impl HostScope<'_> {
    /// Declare that the scope reads `r`.
    pub fn reads(mut self, r: &Resource) -> Self {
        self.core.access(r, Access::read);
        self
    }

    /// Declare that the scope writes `r`.
    pub fn writes(mut self, r: &Resource) -> Self {
        self.core.access(r, Access::write);
        self
    }

    /// End the scope now.
    pub fn end(mut self) -> crate::Result<()> {
        self.close();
        Ok(())
    }

    fn close(&mut self) {
        if !self.core.closed {
            self.core.close(Some(host_now_ns()));
        }
    }
}

impl Drop for HostScope<'_> {
    fn drop(&mut self) {
        self.close();
    }
}
