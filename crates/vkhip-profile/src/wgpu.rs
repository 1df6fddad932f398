//! wgpu's queue as a track (feature `wgpu`): scopes around the command buffers of a
//! `queue.submit`, timed by the profiler's own queries on wgpu's `VkDevice`.
//!
//! wgpu 30 forbids mixing its own encoding with raw Vulkan commands in one encoder, so a scope
//! does not write into your encoder: [`WgpuScope::around`] puts a command buffer of the
//! profiler's (one timestamp, recorded through wgpu-hal's `as_hal_mut`) before your command
//! buffers and another after them, in the same submit. Everything else is a Vulkan queue's
//! track ([`crate::vulkan`]): the same queries, the same BOTTOM_OF_PIPE rule, the same
//! [`WgpuQueue::submitted`] after each submit, naming the hand-off's waits and signals
//! (`WgpuDevice::wait_next_submit` / `signal_next_submit`).

use crate::clock::host_now_ns;
use crate::error::{Error, Result};
use crate::model::{Access, Api, TrackId};
use crate::profiler::{Entry, Profiler, Resource, ScopeCore, Semaphore};
use crate::vulkan::QueryTrack;
use crate::vulkan::{Submission, VulkanQueue};
use vkhip_interop::wgpu_interop::WgpuDevice;
use wgpu::hal::api::Vulkan;

/// wgpu's queue, as a track ([`Profiler::wgpu_queue`]).
pub struct WgpuQueue {
    queue: VulkanQueue,
    device: wgpu::Device,
}

impl Profiler {
    /// A track for `gpu`'s queue. The profiler must have been made on `gpu.vulkan()`.
    pub fn wgpu_queue(&self, name: &str, gpu: &WgpuDevice) -> Result<WgpuQueue> {
        if let Some((_, own)) = self.require_gpu("a wgpu queue track")? {
            if own.device.ash().handle() != gpu.vulkan().ash().handle() {
                return Err(Error::Invalid(format!(
                    "the profiler runs on {}, not on this wgpu device: make it with Profiler::new(gpu.vulkan(), …)",
                    own.device.describe()
                )));
            }
        }
        Ok(WgpuQueue { queue: self.query_queue(name, Api::Wgpu)?, device: gpu.device().clone() })
    }
}

impl WgpuQueue {
    /// A scope around the command buffers you pass to [`WgpuScope::around`]. A scope made while
    /// another is open (not yet `around`-ed) nests inside it.
    pub fn scope(&self, name: &str) -> WgpuScope<'_> {
        let Some(s) = &self.queue.shared else { return WgpuScope::inert(self) };
        let now = host_now_ns();
        let mut st = s.lock();
        if st.finished {
            return WgpuScope::inert(self);
        }
        let track = self.queue.track;
        let marks = st.tracks[track.0 as usize].kind.gpu_mut::<QueryTrack>().and_then(QueryTrack::alloc);
        let Some(marks) = marks else {
            st.stats.dropped_full += 1;
            return WgpuScope::inert(self);
        };
        let scope = st.new_scope(track, name, marks, now);
        let id = scope.id;
        let queries = match st.tracks[track.0 as usize].kind.gpu_mut::<QueryTrack>() {
            Some(q) => {
                q.staged_since.get_or_insert(now);
                q.staged.push(Entry::Scope(scope));
                Some((q.ring.index(marks.begin), q.ring.index(marks.end)))
            }
            _ => None,
        };
        WgpuScope {
            queue: self,
            queries,
            core: ScopeCore { shared: Some(s.clone()), track, id, accesses: Vec::new(), closed: false },
        }
    }

    /// A command buffer that writes the timestamp `query`.
    fn timestamp(&self, query: u32) -> wgpu::CommandBuffer {
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("vkhip-profile: timestamp"),
        });
        if let Some(d) = &self.queue.device {
            // SAFETY: the encoder is new and used through wgpu-hal only; its command buffer is
            // recording for wgpu's queue family (the profiler's device's, checked in
            // wgpu_queue), outside any pass; the query is this scope's.
            unsafe {
                encoder.as_hal_mut::<Vulkan, _, _>(|hal| {
                    if let Some(hal) = hal {
                        self.queue.write(d, hal.raw_handle(), query);
                    }
                })
            };
        }
        encoder.finish()
    }

    /// The `queue.submit` that held the scopes made since the last call was just made: it waited
    /// for `waits` and signalled `signals` (the hand-off's `wait_next_submit` /
    /// `signal_next_submit`). See [`VulkanQueue::submitted`].
    pub fn submitted(&self, waits: &[(&Semaphore, u64)], signals: &[(&Semaphore, u64)]) -> Submission {
        self.queue.submitted(waits, signals)
    }

    /// The calling thread waited for `submission` (`Device::poll` with its index).
    pub fn waited(&self, submission: Submission) {
        self.queue.waited(submission)
    }

    /// The calling thread waited for everything submitted (`Device::poll(wait_indefinitely)`).
    pub fn idle(&self) {
        self.queue.idle()
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.queue.track()
    }
}

/// A scope on wgpu's queue: made by [`WgpuQueue::scope`], placed by [`WgpuScope::around`].
#[must_use = "a wgpu scope times the command buffers given to `around`"]
pub struct WgpuScope<'q> {
    queue: &'q WgpuQueue,
    queries: Option<(u32, u32)>,
    core: ScopeCore,
}

impl<'q> WgpuScope<'q> {
    fn inert(queue: &'q WgpuQueue) -> Self {
        WgpuScope { queue, queries: None, core: ScopeCore::inert() }
    }

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

    /// `work` with the scope's begin timestamp before it and its end after it: submit them in
    /// this order, in one `queue.submit`.
    pub fn around(mut self, work: impl IntoIterator<Item = wgpu::CommandBuffer>) -> Vec<wgpu::CommandBuffer> {
        let Some((begin, end)) = self.queries.take() else { return work.into_iter().collect() };
        let mut all = vec![self.queue.timestamp(begin)];
        all.extend(work);
        all.push(self.queue.timestamp(end));
        self.core.close(None);
        all
    }
}

impl Drop for WgpuScope<'_> {
    fn drop(&mut self) {
        if self.queries.take().is_some() {
            // Never placed: no timestamp will come.
            self.core.fail();
            self.core.count_failed_end();
        }
    }
}
