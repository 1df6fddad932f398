//! A Vulkan queue's track: scopes in your command buffers, timed by the profiler's own
//! timestamp queries.
//!
//! **The queries.** Each queue track has one query pool, used as a ring (`src/ring.rs`): a
//! scope takes two queries when it begins and gives them back once both results were read
//! (`vkGetQueryPoolResults` with availability, never waiting). With `hostQueryReset` the
//! profiler resets them on the host as they come back, before they are handed out again;
//! without it, a scope resets each query in the command buffer right before writing it (so a
//! scope must then begin and end outside a render pass), and a result is taken only when it is
//! newer than every result this track resolved before the query was handed out (an older value
//! is the query's previous use, read before the reset ran).
//!
//! **Where a timestamp is written.** A scope's begin must not be latched before the semaphore
//! waits of its submission are met: the checker compares it with the signal's time, and an
//! early latch would be a false "wait before signal". `vkCmdWriteTimestamp` latches "when all
//! previous commands have completed executing as far as the specified pipeline stage", and an
//! implementation may latch at any *logically later* stage; a semaphore wait's second
//! synchronization scope holds every later command of the batch at the stages of its
//! `pWaitDstStageMask` **and every logically later stage**. BOTTOM_OF_PIPE is logically later
//! than every stage of every pipeline, so a timestamp written at BOTTOM_OF_PIPE is inside the
//! second scope of every wait of its submission, whatever stage mask the wait names: it is
//! latched only after the waits are met. That is sound for any stage mask and costs nothing
//! extra (no barrier: the timestamp's own second scope is the write alone, so later work is not
//! held back). The price: a begin at BOTTOM_OF_PIPE also waits for the previous commands on the
//! queue to finish, so a scope that overlaps the work before it starts *late* on the timeline
//! — which can hide an overlap from the checker, never invent one. Ends are written at
//! BOTTOM_OF_PIPE as well: after the scope's work has completed.
//!
//! **Submissions.** Scopes recorded since the last [`VulkanQueue::submitted`] form the
//! submission it describes, in recording order: its waits go before them in the queue's program
//! order, its signals after them.

use crate::clock::{host_now_ns, CalibratedExt, ClockInfo, GpuClock, OneOffReading};
use crate::error::Result;
use crate::model::Sink;
use crate::model::{Access, Api, Ns, SemaphoreId, SyncKind, Track, TrackId};
use crate::profiler::{
    Entry, Gpu, GpuKind, Kind, Marks, Options, Profiler, Resolved, Resource, ScopeCore, Semaphore, Shared,
};
use crate::ring::Ring;
use ash::vk;
use std::sync::Arc;
use vkhip_interop::vulkan;

/// The query side of a Vulkan (or wgpu) queue track; lives in the profiler's state.
pub(crate) struct QueryTrack {
    device: vulkan::Device,
    pub(crate) pool: vk::QueryPool,
    pub(crate) ring: Ring,
    pub(crate) host_reset: bool,
    mask: u64,
    /// Per query index, the last results read: (value, available).
    values: Vec<(u64, bool)>,
    /// Without host reset: per query index, the value its result must exceed.
    not_before: Vec<u64>,
    /// The newest result this track resolved.
    newest: u64,
    /// Scopes recorded since the last `submitted`, in recording order.
    pub(crate) staged: Vec<Entry>,
    /// When the first of them was recorded: before the submission, so the host's `submit:`
    /// signal is not later than the GPU's work.
    pub(crate) staged_since: Option<Ns>,
    /// The buffer results are read into (kept: no allocation per frame).
    data: Vec<[u64; 2]>,
}

/// The constructors that need a Vulkan device (its clock): here, so that the profiler's core
/// knows no API.
impl Profiler {
    /// A profiler on `vk`'s device: the GPU clock (calibrated timestamps where the device has
    /// them enabled, else a one-off calibration on its idle queue: create the profiler before
    /// the first frame). With `options.enabled` false, [`Profiler::disabled`].
    pub fn new(vk: &vulkan::Device, options: Options) -> Result<Profiler> {
        Profiler::with_sinks(vk, options, Vec::new())
    }

    /// [`Profiler::new`], and `sinks` fed with every resolved item as [`Profiler::end_frame`]
    /// resolves them (the analysis, a trace ring, a live view).
    pub fn with_sinks(
        vk: &vulkan::Device,
        options: Options,
        sinks: Vec<Box<dyn Sink + Send>>,
    ) -> Result<Profiler> {
        if !options.enabled {
            return Ok(Profiler::disabled());
        }
        let clock = device_clock(vk)?;
        let host_query_reset = options.host_query_reset.unwrap_or(vk.optional_features().host_query_reset);
        let gpu = Gpu { device: vk.clone(), clock, host_query_reset, one_off: one_off_reading };
        Ok(Profiler::make(options, Some(gpu), sinks))
    }
}

impl GpuKind for QueryTrack {
    fn kind_refresh(&mut self, gpu: Option<&Gpu>) -> Result<()> {
        self.refresh(gpu)
    }

    fn kind_resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        self.resolve(marks, gpu)
    }

    fn kind_release(&mut self, marks: Marks, _read: bool, gpu: Option<&Gpu>) {
        self.release(marks, gpu)
    }

    fn kind_staged(&mut self) -> Option<&mut Vec<Entry>> {
        Some(&mut self.staged)
    }

    fn kind_staged_len(&self) -> usize {
        self.staged.len()
    }

    fn kind_accuracy(&self, vulkan_ns: Option<u64>, _last: bool) -> Option<(u64, Option<String>)> {
        vulkan_ns.map(|ns| (ns, None))
    }

    fn kind_clock_info(&self, _gpu: Option<&Gpu>) -> Option<ClockInfo> {
        None
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }
}

impl QueryTrack {
    /// A query pool of `capacity` timestamps on `vk`'s device, reset once (on the host, or by a
    /// one-shot submission: a query must be reset before its first read).
    pub(crate) fn new(vk: &vulkan::Device, capacity: u32, host_reset: bool, mask: u64) -> Result<Self> {
        let d = vk.ash();
        let info =
            vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(capacity);
        // SAFETY: valid device; `info` is a local.
        let pool = unsafe { d.create_query_pool(&info, None) }
            .map_err(|r| vkhip_interop::Error::vulkan("vkCreateQueryPool", r))?;
        let track = QueryTrack {
            device: vk.clone(),
            pool,
            ring: Ring::new(capacity),
            host_reset,
            mask,
            values: vec![(0, false); capacity as usize],
            not_before: vec![0; capacity as usize],
            newest: 0,
            staged: Vec::new(),
            staged_since: None,
            data: Vec::new(),
        };
        if host_reset {
            // SAFETY: the pool is new and unused; hostQueryReset is enabled (the caller's word).
            unsafe { d.reset_query_pool(pool, 0, capacity) };
        } else {
            // SAFETY: recording the one-shot command buffer; the pool is ours and unused.
            vk.submit_one_shot(&[], &[], |cmd| unsafe { d.cmd_reset_query_pool(cmd, pool, 0, capacity) })?;
        }
        Ok(track)
    }

    /// Read the results of every query handed out (at most two calls: the ring wraps once).
    pub(crate) fn refresh(&mut self, gpu: Option<&Gpu>) -> Result<()> {
        if gpu.is_none() {
            return Ok(());
        }
        let d = self.device.ash();
        let mut data = std::mem::take(&mut self.data);
        for (first, count) in self.ring.index_runs(self.ring.out()) {
            data.clear();
            data.resize(count as usize, [0, 0]);
            let flags = vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY;
            // SAFETY: queries [first, first + count) of our pool, every one reset since the pool
            // was made; no WAIT flag: unavailable ones say so.
            match unsafe { d.get_query_pool_results(self.pool, first, &mut data, flags) } {
                Ok(()) | Err(vk::Result::NOT_READY) => {}
                Err(r) => {
                    self.data = data;
                    return Err(vkhip_interop::Error::vulkan("vkGetQueryPoolResults", r).into());
                }
            }
            for (i, [value, available]) in data.iter().enumerate() {
                self.values[first as usize + i] = (*value & self.mask, *available != 0);
            }
        }
        self.data = data;
        Ok(())
    }

    fn result(&self, c: u64) -> Option<u64> {
        let i = self.ring.index(c) as usize;
        let (value, available) = self.values[i];
        (available && (self.host_reset || value > self.not_before[i])).then_some(value)
    }

    pub(crate) fn resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        let Some(gpu) = gpu else { return Resolved::Lost };
        match (self.result(marks.begin), self.result(marks.end)) {
            (Some(b), Some(e)) => {
                self.newest = self.newest.max(b).max(e);
                let mut t = [b, e];
                gpu.clock.map_all(&mut t);
                Resolved::Times(t[0], t[1])
            }
            _ => Resolved::Pending,
        }
    }

    pub(crate) fn release(&mut self, marks: Marks, gpu: Option<&Gpu>) {
        // What the two releases free is one range (the ring frees from its oldest slot on):
        // reset with one call, not one per query.
        let from = self.ring.out().start;
        for c in [marks.begin, marks.end] {
            let i = self.ring.index(c) as usize;
            self.values[i] = (0, false);
            self.ring.release(c);
        }
        let free = from..self.ring.out().start;
        if self.host_reset && gpu.is_some() {
            for (first, count) in self.ring.index_runs(free) {
                // SAFETY: these queries' results were read (or given up on), and no pending
                // command buffer writes them before they are handed out again.
                unsafe { self.device.ash().reset_query_pool(self.pool, first, count) };
            }
        }
    }

    /// Two queries for a new scope, or `None` while the ring is full.
    pub(crate) fn alloc(&mut self) -> Option<Marks> {
        let c = self.ring.alloc(2)?;
        for q in [c, c + 1] {
            let i = self.ring.index(q) as usize;
            self.not_before[i] = self.newest;
        }
        Some(Marks { begin: c, end: c + 1 })
    }
}

impl Drop for QueryTrack {
    fn drop(&mut self) {
        // SAFETY: the profiler is dropped after the GPU finished the command buffers its scopes
        // were recorded into (the crate's documented contract); the pool is ours.
        unsafe { self.device.ash().destroy_query_pool(self.pool, None) };
    }
}

/// The clock of `vk`'s device: calibrated timestamps when the device has them enabled and they
/// read `CLOCK_MONOTONIC`, else a one-off calibration on its idle queue.
pub(crate) fn device_clock(vk: &vulkan::Device) -> Result<GpuClock> {
    let (instance, physical) = (vk.instance(), vk.physical());
    // SAFETY: the device's own physical device, of its live instance.
    let (props, families) = unsafe {
        (
            instance.get_physical_device_properties(physical),
            instance.get_physical_device_queue_family_properties(physical),
        )
    };
    let bits = families.get(vk.queue_family() as usize).map_or(0, |f| f.timestamp_valid_bits);
    let period = props.limits.timestamp_period;
    if bits == 0 || period <= 0.0 {
        return Err(vkhip_interop::Error::unsupported(
            vkhip_interop::Api::Vulkan,
            format!(
                "{}: queue family {} has no timestamps (timestampValidBits 0)",
                vk.describe(),
                vk.queue_family()
            ),
        )
        .into());
    }
    if let Some(ext) = CalibratedExt::enabled_on(instance, vk.ash()) {
        // SAFETY: loading the system's Vulkan loader (the one the device was made with: dlopen
        // returns the library already loaded) runs nothing but its initialisers.
        match unsafe { ash::Entry::load() } {
            // SAFETY: `physical` belongs to the live `instance`, created through this loader.
            Ok(entry) if unsafe { crate::clock::has_monotonic_domain(&entry, instance, physical, ext) } => {
                match GpuClock::calibrated(instance, vk.ash(), ext, bits, period) {
                    Ok(clock) => return Ok(clock),
                    Err(e) => log::warn!("calibrated timestamps failed ({e}); calibrating once instead"),
                }
            }
            Ok(_) => log::info!(
                "{} cannot read CLOCK_MONOTONIC with the device clock",
                ext.name().to_string_lossy()
            ),
            Err(e) => log::warn!(
                "no Vulkan loader to ask for calibrateable domains ({e}); calibrating once instead"
            ),
        }
    }
    GpuClock::one_off(|| one_off_reading(vk), bits, period)
}

/// One timestamp written on `vk`'s idle queue between two host readings.
pub(crate) fn one_off_reading(vk: &vulkan::Device) -> Result<OneOffReading> {
    // SAFETY: `submit_one_shot` records into a command buffer of the device's queue family (it
    // has timestamps: `device_clock` checked), submits it and waits for its fence.
    unsafe {
        one_off_timestamp(
            vk.ash(),
            |record| vk.submit_one_shot(&[], &[], record).map_err(Into::into),
            |what, r| vkhip_interop::Error::vulkan(what, r).into(),
        )
    }
}

/// One timestamp written on an idle queue between two host readings, for
/// [`GpuClock::one_off`]: a one-query pool of its own, reset and written at TOP_OF_PIPE in the
/// command buffer that `submit` records (by calling the closure it is given), submits and waits
/// for; the host clock is read when the recording ends and once `submit` returned. `vk_error`
/// names a failed Vulkan call. The app's clock and the profiler's take it here.
///
/// # Safety
/// `submit` records into a command buffer of `device` for a queue family with timestamps,
/// submits it, and returns only once it has completed (or with an error, never submitted).
pub unsafe fn one_off_timestamp<E>(
    device: &ash::Device,
    submit: impl FnOnce(&mut dyn FnMut(vk::CommandBuffer)) -> std::result::Result<(), E>,
    vk_error: impl Fn(&'static str, vk::Result) -> E,
) -> std::result::Result<OneOffReading, E> {
    struct Pool<'a>(&'a ash::Device, vk::QueryPool);
    impl Drop for Pool<'_> {
        fn drop(&mut self) {
            // SAFETY: the one-shot submission that used it finished (or never started).
            unsafe { self.0.destroy_query_pool(self.1, None) };
        }
    }
    let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(1);
    // SAFETY: valid device.
    let pool = Pool(
        device,
        unsafe { device.create_query_pool(&info, None) }.map_err(|r| vk_error("vkCreateQueryPool", r))?,
    );
    let mut before_ns = 0;
    submit(&mut |cmd| {
        // SAFETY: recording the one-shot command buffer (this function's contract); the pool
        // is live.
        unsafe {
            device.cmd_reset_query_pool(cmd, pool.1, 0, 1);
            device.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, pool.1, 0);
        }
        before_ns = host_now_ns();
    })?;
    let after_ns = host_now_ns();
    let mut ticks = [0u64; 1];
    // SAFETY: the command buffer completed (this function's contract).
    unsafe {
        device.get_query_pool_results(
            pool.1,
            0,
            &mut ticks,
            vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
        )
    }
    .map_err(|r| vk_error("vkGetQueryPoolResults", r))?;
    Ok(OneOffReading { ticks: ticks[0], before_ns, after_ns })
}

/// The mask of a queue family's valid timestamp bits.
pub(crate) fn timestamp_mask(vk: &vulkan::Device) -> u64 {
    // SAFETY: the device's own physical device, of its live instance.
    let families = unsafe { vk.instance().get_physical_device_queue_family_properties(vk.physical()) };
    let bits = families.get(vk.queue_family() as usize).map_or(64, |f| f.timestamp_valid_bits);
    if bits == 0 || bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// A Vulkan queue's track ([`Profiler::vulkan_queue`]): scopes in command buffers submitted to
/// it, and what each submission waits for and signals.
pub struct VulkanQueue {
    pub(crate) shared: Option<Arc<Shared>>,
    pub(crate) track: TrackId,
    pub(crate) pool: vk::QueryPool,
    pub(crate) host_reset: bool,
    pub(crate) device: Option<ash::Device>,
}

/// What [`VulkanQueue::submitted`] returns: the submission, for [`VulkanQueue::waited`] once a
/// fence says it finished. `Submission::default()` is none (waiting for it records nothing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Submission {
    profiler: u64,
    join: Option<(SemaphoreId, u64)>,
}

impl Profiler {
    /// A track for the queue your frames are submitted to, on the queue family of the device
    /// the profiler was made on (`vulkan::Device::queue_family`), with its own query pool of
    /// [`crate::Options::queries_per_queue`] timestamps.
    pub fn vulkan_queue(&self, name: &str) -> Result<VulkanQueue> {
        self.query_queue(name, Api::Vulkan)
    }

    pub(crate) fn query_queue(&self, name: &str, api: Api) -> Result<VulkanQueue> {
        let Some((s, gpu)) = self.require_gpu("a Vulkan queue track")? else {
            return Ok(VulkanQueue {
                shared: None,
                track: TrackId(0),
                pool: vk::QueryPool::null(),
                host_reset: true,
                device: None,
            });
        };
        let mask = timestamp_mask(&gpu.device);
        let queries = QueryTrack::new(&gpu.device, s.options.queries_per_queue, gpu.host_query_reset, mask)?;
        let (pool, host_reset) = (queries.pool, queries.host_reset);
        let method = gpu.clock.method();
        let clock = if api == Api::Wgpu {
            format!("Vulkan timestamps (wgpu's device): {method}")
        } else {
            format!("Vulkan timestamps: {method}")
        };
        let accuracy_ns = gpu.clock.accuracy_ns();
        let track = s.lock().add_track(
            Track { name: name.into(), api, clock, accuracy_ns, clock_domain: Some(0) },
            Kind::Gpu(Box::new(queries)),
        );
        Ok(VulkanQueue {
            shared: Some(s.clone()),
            track,
            pool,
            host_reset,
            device: Some(gpu.device.ash().clone()),
        })
    }
}

impl VulkanQueue {
    /// Open a scope in `cmd`: a timestamp now, another when the guard is dropped (or
    /// [`VulkanScope::end`]). Scopes nest. Call [`VulkanQueue::submitted`] after the submission
    /// that holds `cmd`.
    ///
    /// # Safety
    /// `cmd` is a command buffer of the profiler's device, for this queue's family, recording
    /// from now until the guard is dropped (the end timestamp is written then); without
    /// `hostQueryReset`, not inside a render pass at either point.
    pub unsafe fn scope(&self, cmd: vk::CommandBuffer, name: &str) -> VulkanScope<'_> {
        let (Some(s), Some(d)) = (&self.shared, &self.device) else { return VulkanScope::inert(self, cmd) };
        let now = host_now_ns();
        let mut st = s.lock();
        if st.finished {
            return VulkanScope::inert(self, cmd);
        }
        let marks = st.tracks[self.track.0 as usize].kind.gpu_mut::<QueryTrack>().and_then(QueryTrack::alloc);
        let Some(marks) = marks else {
            st.stats.dropped_full += 1;
            return VulkanScope::inert(self, cmd);
        };
        let scope = st.new_scope(self.track, name, marks, now);
        let (id, begin, end) = match st.tracks[self.track.0 as usize].kind.gpu_mut::<QueryTrack>() {
            Some(q) => {
                q.staged_since.get_or_insert(now);
                let (b, e) = (q.ring.index(marks.begin), q.ring.index(marks.end));
                let id = scope.id;
                q.staged.push(Entry::Scope(scope));
                (id, b, e)
            }
            _ => return VulkanScope::inert(self, cmd),
        };
        drop(st);
        // SAFETY: per this function's contract; the query is ours, handed out to this scope.
        unsafe { self.write(d, cmd, begin) };
        VulkanScope {
            queue: self,
            cmd,
            end_query: Some(end),
            core: ScopeCore {
                shared: Some(s.clone()),
                track: self.track,
                id,
                accesses: Vec::new(),
                closed: false,
            },
        }
    }

    /// # Safety
    /// `cmd` is recording, for this queue's family, outside a render pass without host reset.
    pub(crate) unsafe fn write(&self, d: &ash::Device, cmd: vk::CommandBuffer, query: u32) {
        // SAFETY: per this function's contract. BOTTOM_OF_PIPE: see the module note.
        unsafe {
            if !self.host_reset {
                d.cmd_reset_query_pool(cmd, self.pool, query, 1);
            }
            d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, self.pool, query);
        }
    }

    /// The submission that holds the scopes recorded since the last call was just submitted
    /// (call it right after `vkQueueSubmit`): it waits for each `(semaphore, value)` of `waits`
    /// before its work and signals each of `signals` after it. Returns it, for
    /// [`VulkanQueue::waited`].
    pub fn submitted(&self, waits: &[(&Semaphore, u64)], signals: &[(&Semaphore, u64)]) -> Submission {
        let Some(s) = &self.shared else { return Submission::default() };
        let now = host_now_ns();
        let mut st = s.lock();
        let (mut staged, since) = match st.tracks[self.track.0 as usize].kind.gpu_mut::<QueryTrack>() {
            Some(q) => (std::mem::take(&mut q.staged), q.staged_since.take()),
            None => return Submission::default(),
        };
        if let Some(host) = st.current_host(s.id) {
            if let Some(wait) = st.submit_edge(host, self.track, since.unwrap_or(now)) {
                st.push(self.track, Entry::Sync(wait));
            }
        }
        for (sem, value) in waits.iter().filter(|(sem, _)| sem.profiler == s.id) {
            let wait = st.sync(sem.id, *value, SyncKind::Wait, None);
            st.push(self.track, Entry::Sync(wait));
        }
        for e in staged.drain(..) {
            st.push(self.track, e);
        }
        // The emptied buffer goes back (its capacity kept for the next submission).
        if let Some(q) = st.tracks[self.track.0 as usize].kind.gpu_mut::<QueryTrack>() {
            if q.staged.is_empty() {
                q.staged = staged;
            }
        }
        for (sem, value) in signals.iter().filter(|(sem, _)| sem.profiler == s.id) {
            let signal = st.sync(sem.id, *value, SyncKind::Signal, None);
            st.push(self.track, Entry::Sync(signal));
        }
        let mut done = Submission { profiler: s.id, join: None };
        if st.has_host_tracks() {
            let (join, value) = st.next_join(self.track);
            let signal = st.sync(join, value, SyncKind::Signal, None);
            st.push(self.track, Entry::Sync(signal));
            done.join = Some((join, value));
        }
        done
    }

    /// The calling thread (a host track) waited for `submission` to finish (its fence): what the
    /// thread does next is ordered after the submission's work.
    pub fn waited(&self, submission: Submission) {
        let (Some(s), Some((join, value))) = (&self.shared, submission.join) else { return };
        if submission.profiler != s.id {
            return;
        }
        let mut st = s.lock();
        if let Some(host) = st.current_host(s.id) {
            st.host_joined(host, join, value);
        }
    }

    /// The calling thread (a host track) waited for the queue to go idle (`vkQueueWaitIdle`,
    /// `vkDeviceWaitIdle`, or a fence of the last submission): after everything submitted.
    pub fn idle(&self) {
        let Some(s) = &self.shared else { return };
        let mut st = s.lock();
        if let (Some(host), Some((join, value))) =
            (st.current_host(s.id), st.tracks[self.track.0 as usize].join)
        {
            st.host_joined(host, join, value);
        }
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.track
    }
}

/// A scope in a Vulkan command buffer: from [`VulkanQueue::scope`] until dropped or
/// [`VulkanScope::end`]; each writes a timestamp into the command buffer.
#[must_use = "a scope ends when its guard is dropped: bind it (`let _s = …`)"]
pub struct VulkanScope<'q> {
    queue: &'q VulkanQueue,
    cmd: vk::CommandBuffer,
    end_query: Option<u32>,
    core: ScopeCore,
}

impl<'q> VulkanScope<'q> {
    fn inert(queue: &'q VulkanQueue, cmd: vk::CommandBuffer) -> Self {
        VulkanScope { queue, cmd, end_query: None, core: ScopeCore::inert() }
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

    /// End the scope now (its end timestamp is written into the command buffer).
    pub fn end(mut self) -> Result<()> {
        self.close();
        Ok(())
    }

    fn close(&mut self) {
        let (Some(q), Some(d)) = (self.end_query.take(), &self.queue.device) else { return };
        // SAFETY: `cmd` is still recording (VulkanQueue::scope's contract); the query is this
        // scope's end.
        unsafe { self.queue.write(d, self.cmd, q) };
        self.core.close(None);
    }
}

impl Drop for VulkanScope<'_> {
    fn drop(&mut self) {
        self.close();
    }
}

/// What a device should enable for the profiler's best path ([`requirements`]). Both are
/// optional: without calibrated timestamps the GPU clock is calibrated once on the idle queue
/// (its accuracy stated, its drift checked after the run); without `hostQueryReset` queries are
/// reset in the command buffer (scopes then begin and end outside render passes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirements {
    /// Enable the first of these the device offers with the `DEVICE` and `CLOCK_MONOTONIC`
    /// time domains (EXT first: validation layers older than 1.3.255 do not know the KHR name).
    /// The profiler finds it enabled on its own.
    pub calibrated_timestamps: [&'static std::ffi::CStr; 2],
    /// Enable `VkPhysicalDeviceVulkan12Features::hostQueryReset` where supported, and say so
    /// with [`crate::Options::host_query_reset`] on a borrowed device (Vulkan cannot be asked).
    pub host_query_reset: bool,
}

/// What to enable on your device for the profiler's best path. The interop crate's
/// `vulkan::Device::open` and `WgpuDevice::open` enable both where the device has them.
///
/// ```
/// let need = vkhip_profile::requirements();
/// assert_eq!(need.calibrated_timestamps[0].to_str().unwrap(), "VK_EXT_calibrated_timestamps");
/// assert!(need.host_query_reset);
/// ```
pub fn requirements() -> Requirements {
    Requirements {
        calibrated_timestamps: [ash::ext::calibrated_timestamps::NAME, ash::khr::calibrated_timestamps::NAME],
        host_query_reset: true,
    }
}
