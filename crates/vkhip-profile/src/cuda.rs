//! A CUDA stream's track: scopes around any work on the stream, even work you cannot change.
//!
//! **The stamp.** A scope launches a one-thread kernel before its work and another after it, on
//! the same stream; each stores `%globaltimer` — the GPU's nanosecond timer — into a slot of
//! page-locked host memory mapped for the device. Stream order puts the first after everything
//! enqueued before the scope (a semaphore wait included) and the second after the scope's work,
//! whatever that work is: your kernel, a copy, or a library call such as cuBLAS that nothing
//! inside can be added to. CUDA events were the other choice: they carry no absolute time, only
//! differences, and a host anchor for them is wider (tens of µs under load) than the hand-offs
//! being measured.
//!
//! **One clock with Vulkan.** `%globaltimer` is the timer Vulkan's timestamps count (measured on
//! the H100 and H200: docs/ARCHITECTURE.md), so a stamp of `ns` is mapped as the Vulkan
//! timestamp `ns / timestampPeriod` through the Vulkan clock's anchors
//! ([`GpuClock::gpu_ns_to_host_ns`](crate::clock::GpuClock::gpu_ns_to_host_ns)): a CUDA scope and
//! a Vulkan scope compare with no host anchor between them. The CUDA device must be the
//! profiler's Vulkan GPU (same UUID): another GPU's timer is another clock.
//!
//! **The slots** are a ring (`src/ring.rs`), two per scope. A slot is zero until its stamp
//! lands (a timer reading is never 0), so the host reads it without any event: non-zero means
//! done. Once both of a scope's stamps are read they are zeroed and the slots go back to the
//! ring; a slot is handed out again only after that.
//!
//! **Why PTX written by hand** ([`stamp_ptx`]): ten lines the driver compiles itself
//! (`cuModuleLoadData`), so the profiler needs no NVRTC (an engine may ship only the driver), no
//! compile at start-up and no compiler-versus-driver match.

use crate::clock::host_now_ns;
use crate::error::{Error, Result};
use crate::model::{Access, Api, SyncKind, Track, TrackId};
use crate::profiler::{Entry, Gpu, Kind, Marks, Profiler, Resolved, Resource, ScopeCore, Semaphore, Shared};
use crate::ring::Ring;
use std::ffi::c_void;
use std::sync::Arc;
use vkhip_interop::cuda::{Cuda, CudaHostMemory, CudaKernel};

/// The stamp kernel's entry point.
pub const STAMP_ENTRY: &str = "vkhip_profile_stamp";

/// The stamp kernel for a device of compute capability `arch` (90 for sm_90): PTX ISA 6.3 for
/// `sm_75`, or for the device's own architecture below that (PTX runs on its target and every
/// newer GPU; sm_75 is the oldest architecture CUDA 13 still targets). One thread loads the
/// address it is given, reads `%globaltimer` and stores it there. NUL-terminated, as
/// `cuModuleLoadData` takes PTX.
///
/// ```
/// let ptx = vkhip_profile::cuda::stamp_ptx(90);
/// assert!(ptx.contains(".target sm_75") && ptx.contains("%globaltimer") && ptx.ends_with('\0'));
/// assert!(vkhip_profile::cuda::stamp_ptx(61).contains(".target sm_61"));
/// ```
pub fn stamp_ptx(arch: u32) -> String {
    let target = arch.clamp(30, 75);
    format!(
        "//\n\
         // vkhip-profile: one thread stores the GPU's nanosecond timer at the address it is given\n\
         // (a slot of page-locked host memory mapped for the device).\n\
         //\n\
         .version 6.3\n\
         .target sm_{target}\n\
         .address_size 64\n\
         \n\
         .visible .entry {STAMP_ENTRY}(\n\
         \t.param .u64 slot\n\
         )\n\
         {{\n\
         \t.reg .b64 %rd<3>;\n\
         \tld.param.u64 %rd1, [slot];\n\
         \tmov.u64 %rd2, %globaltimer;\n\
         \tst.volatile.u64 [%rd1], %rd2;\n\
         \tret;\n\
         }}\n\0"
    )
}

/// A stamp pair as read back: both landed (non-zero), or not yet.
///
/// ```
/// use vkhip_profile::cuda::stamp_pair;
/// assert_eq!(stamp_pair(100, 250), Some((100, 250)));
/// assert_eq!(stamp_pair(0, 250), None); // the begin stamp has not landed yet
/// assert_eq!(stamp_pair(100, 0), None);
/// ```
pub fn stamp_pair(begin: u64, end: u64) -> Option<(u64, u64)> {
    (begin != 0 && end != 0).then_some((begin, end))
}

/// The stamp side of a CUDA stream track; lives in the profiler's state.
pub(crate) struct StampTrack {
    memory: CudaHostMemory,
    pub(crate) ring: Ring,
}

impl StampTrack {
    /// The slot's word.
    fn word(&self, c: u64) -> *mut u64 {
        let i = self.ring.index(c) as usize;
        // SAFETY: `i` < capacity, and the memory holds capacity u64s (made so in cuda_stream);
        // page-locked allocations are page aligned, so every slot is 8-byte aligned.
        unsafe { self.memory.as_mut_ptr().cast::<u64>().add(i) }
    }

    fn read(&self, c: u64) -> u64 {
        // SAFETY: a slot of the live allocation (`word`); volatile, because the device writes
        // it outside Rust's view; an aligned 8-byte load is one access on every 64-bit host.
        unsafe { self.word(c).read_volatile() }
    }

    pub(crate) fn refresh(&mut self) -> Result<()> {
        Ok(())
    }

    pub(crate) fn resolve(&mut self, marks: Marks, gpu: Option<&Gpu>) -> Resolved {
        let Some(gpu) = gpu else { return Resolved::Lost };
        match stamp_pair(self.read(marks.begin), self.read(marks.end)) {
            Some((b, e)) => Resolved::Times(gpu.clock.gpu_ns_to_host_ns(b), gpu.clock.gpu_ns_to_host_ns(e)),
            None => Resolved::Pending,
        }
    }

    pub(crate) fn release(&mut self, marks: Marks) {
        for c in [marks.begin, marks.end] {
            // SAFETY: the slot's stamp was read (or given up on); no launch targets it until the
            // ring hands it out again, after this store.
            unsafe { self.word(c).write_volatile(0) };
            self.ring.release(c);
        }
    }
}

/// A CUDA stream's track ([`Profiler::cuda_stream`]): scopes around work enqueued on the
/// stream, and the stream's semaphore waits and signals. Borrows the [`Cuda`] it launches on.
pub struct CudaStream<'c> {
    shared: Option<Arc<Shared>>,
    track: TrackId,
    cuda: &'c Cuda,
    kernel: Option<CudaKernel>,
    /// The device address of slot index 0.
    base: u64,
}

impl Profiler {
    /// A track for `cuda`'s stream: loads the stamp kernel and allocates
    /// [`crate::Options::stamps_per_stream`] slots of page-locked memory. `cuda` must be the
    /// profiler's Vulkan GPU (its timer is the Vulkan clock).
    pub fn cuda_stream<'c>(&self, name: &str, cuda: &'c Cuda) -> Result<CudaStream<'c>> {
        let Some((s, gpu)) = self.require_gpu("a CUDA stream track")? else {
            return Ok(CudaStream { shared: None, track: TrackId(0), cuda, kernel: None, base: 0 });
        };
        if cuda.info().uuid != gpu.device.uuid() {
            return Err(Error::Invalid(format!(
                "{} is not the profiler's Vulkan GPU ({}): its timer is another clock; open CUDA with vulkan::Device::uuid()",
                cuda.describe(),
                gpu.device.describe()
            )));
        }
        let kernel = cuda.load_module(stamp_ptx(cuda.info().arch()).as_bytes())?.function(STAMP_ENTRY)?;
        let capacity = s.options.stamps_per_stream.max(2);
        let memory = cuda.alloc_host(u64::from(capacity) * 8)?;
        let base = memory.device_ptr();
        let accuracy_ns = gpu.clock.accuracy_ns();
        let track = s.lock().add_track(
            Track {
                name: name.into(),
                api: Api::Cuda,
                clock: format!("%globaltimer stamps on the Vulkan clock: {}", gpu.clock.method()),
                accuracy_ns,
                clock_domain: Some(0),
            },
            Kind::Cuda(StampTrack { memory, ring: Ring::new(capacity) }),
        );
        Ok(CudaStream { shared: Some(s.clone()), track, cuda, kernel: Some(kernel), base })
    }
}

impl CudaStream<'_> {
    /// Open a scope: a stamp is enqueued on the stream now, and another when the guard is
    /// dropped (or [`CudaScope::end`]); enqueue the scope's work between the two. Scopes nest.
    pub fn scope(&self, name: &str) -> Result<CudaScope<'_>> {
        let (Some(s), Some(kernel)) = (&self.shared, &self.kernel) else { return Ok(CudaScope::inert(self)) };
        let now = host_now_ns();
        let mut st = s.lock();
        if st.finished {
            return Ok(CudaScope::inert(self));
        }
        self.edge(&mut st, now);
        let marks = match &mut st.tracks[self.track.0 as usize].kind {
            Kind::Cuda(c) => c.ring.alloc(2).map(|b| Marks { begin: b, end: b + 1 }),
            _ => None,
        };
        let Some(marks) = marks else {
            st.stats.dropped_full += 1;
            return Ok(CudaScope::inert(self));
        };
        let (begin, end) = match &st.tracks[self.track.0 as usize].kind {
            Kind::Cuda(c) => (c.ring.index(marks.begin), c.ring.index(marks.end)),
            _ => return Ok(CudaScope::inert(self)),
        };
        let scope = st.new_scope(self.track, name, marks, now);
        let id = scope.id;
        st.push(self.track, Entry::Scope(scope));
        drop(st);
        let mut guard = CudaScope {
            stream: self,
            end_slot: Some(end),
            core: ScopeCore {
                shared: Some(s.clone()),
                track: self.track,
                id,
                accesses: Vec::new(),
                closed: false,
            },
        };
        if let Err(e) = self.stamp(kernel, begin) {
            guard.end_slot = None;
            guard.core.fail();
            return Err(e);
        }
        Ok(guard)
    }

    /// Enqueue the stamp kernel for slot index `slot`.
    fn stamp(&self, kernel: &CudaKernel, slot: u32) -> Result<()> {
        let mut address = self.base + u64::from(slot) * 8;
        let mut args = [(&mut address as *mut u64).cast::<c_void>()];
        // SAFETY: the stamp kernel takes one u64 (the slot's address), loaded through
        // `self.cuda`; the address is a slot of the page-locked memory the profiler's state
        // keeps until the stream is idle (the memory's drop waits for the stream), mapped for
        // the device at its host address; the kernel writes those 8 bytes only.
        unsafe { self.cuda.launch(kernel, [1, 1, 1], [1, 1, 1], &mut args) }?;
        Ok(())
    }

    /// A host track recording work here orders it after what the host did before.
    fn edge(&self, st: &mut crate::profiler::State, now: u64) {
        let Some(s) = &self.shared else { return };
        if let Some(host) = st.current_host(s.id) {
            if let Some(wait) = st.submit_edge(host, self.track, now) {
                st.push(self.track, Entry::Sync(wait));
            }
        }
    }

    fn sync(&self, semaphore: &Semaphore, value: u64, kind: SyncKind) {
        let Some(s) = &self.shared else { return };
        if semaphore.profiler != s.id {
            return;
        }
        let mut st = s.lock();
        self.edge(&mut st, host_now_ns());
        let sync = st.sync(semaphore.id, value, kind, None);
        st.push(self.track, Entry::Sync(sync));
    }

    /// The stream waits (`cuWaitExternalSemaphoresAsync`, enqueued by you, in this order with
    /// the stream's scopes) until `semaphore` reaches `value`.
    pub fn wait(&self, semaphore: &Semaphore, value: u64) {
        self.sync(semaphore, value, SyncKind::Wait);
    }

    /// The stream signals `semaphore` = `value` (`cuSignalExternalSemaphoresAsync`, enqueued by
    /// you, in this order with the stream's scopes).
    pub fn signal(&self, semaphore: &Semaphore, value: u64) {
        self.sync(semaphore, value, SyncKind::Signal);
    }

    /// The calling thread (a host track) waited for everything enqueued on the stream so far
    /// (`Cuda::synchronize`, or an event recorded last).
    pub fn synchronized(&self) {
        let Some(s) = &self.shared else { return };
        let mut st = s.lock();
        let Some(host) = st.current_host(s.id) else { return };
        let (join, value) = st.next_join(self.track);
        let signal = st.sync(join, value, SyncKind::Signal, None);
        st.push(self.track, Entry::Sync(signal));
        st.host_joined(host, join, value);
    }

    /// The track's id in the timeline.
    pub fn track(&self) -> TrackId {
        self.track
    }
}

/// A scope on a CUDA stream: from [`CudaStream::scope`] until dropped or [`CudaScope::end`];
/// each launches a stamp.
#[must_use = "a scope ends when its guard is dropped: bind it (`let _s = …`)"]
pub struct CudaScope<'s> {
    stream: &'s CudaStream<'s>,
    end_slot: Option<u32>,
    core: ScopeCore,
}

impl<'s> CudaScope<'s> {
    fn inert(stream: &'s CudaStream<'s>) -> Self {
        CudaScope { stream, end_slot: None, core: ScopeCore::inert() }
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

    /// End the scope now: its end stamp is enqueued; a failed launch is returned.
    pub fn end(mut self) -> Result<()> {
        self.close()
    }

    fn close(&mut self) -> Result<()> {
        let (Some(slot), Some(kernel)) = (self.end_slot.take(), &self.stream.kernel) else { return Ok(()) };
        let result = self.stream.stamp(kernel, slot);
        match result {
            Ok(()) => self.core.close(None),
            Err(_) => self.core.fail(),
        }
        result
    }
}

impl Drop for CudaScope<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            log::warn!("vkhip-profile: a CUDA scope's end stamp failed (the scope is dropped): {e}");
            self.core.count_failed_end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stamp_kernel_reads_the_timer_and_stores_it_at_its_argument() {
        let ptx = stamp_ptx(90);
        let lines: Vec<&str> = ptx.trim_end_matches('\0').lines().map(str::trim).collect();
        let at = |l: &str| lines.iter().position(|x| *x == l).unwrap_or_else(|| panic!("no `{l}` in\n{ptx}"));
        // Header: an ISA every driver since CUDA 10 reads, the target, 64-bit addresses.
        assert!(at(".version 6.3") < at(".target sm_75") && at(".target sm_75") < at(".address_size 64"));
        // One entry with one 64-bit parameter, the timer read before the store, nothing else.
        let entry = at(&format!(".visible .entry {STAMP_ENTRY}("));
        assert_eq!(lines[entry + 1], ".param .u64 slot");
        let load = at("ld.param.u64 %rd1, [slot];");
        let timer = at("mov.u64 %rd2, %globaltimer;");
        let store = at("st.volatile.u64 [%rd1], %rd2;");
        assert!(entry < load && load < timer && timer < store && store < at("ret;"));
        assert_eq!(ptx.matches("%globaltimer").count(), 1);
        assert!(!ptx.contains("%tid") && !ptx.contains("bar."), "one thread, no sync: {ptx}");
        // Braces balance; exactly one NUL, at the end (cuModuleLoadData reads PTX as a C string).
        assert_eq!(ptx.matches('{').count(), ptx.matches('}').count());
        assert_eq!(ptx.find('\0'), Some(ptx.len() - 1));
        // Targets: the device's own below sm_75, sm_75 from there up.
        for (arch, target) in [(52, 52), (61, 61), (70, 70), (75, 75), (86, 75), (90, 75), (120, 75)] {
            assert!(stamp_ptx(arch).contains(&format!(".target sm_{target}\n")), "{arch}");
        }
    }

    #[test]
    fn zero_means_pending_and_a_read_slot_is_zeroed_before_reuse() {
        // The ring and the zero rule without a GPU: a "device" writes slots in plain memory.
        let mut memory = [0u64; 4];
        let mut ring = Ring::new(4);
        let a = ring.alloc(2).unwrap();
        assert_eq!(stamp_pair(memory[ring.index(a) as usize], memory[ring.index(a + 1) as usize]), None);
        memory[ring.index(a) as usize] = 1_000; // the begin stamp landed
        assert_eq!(stamp_pair(memory[0], memory[1]), None, "the end has not");
        memory[ring.index(a + 1) as usize] = 1_500;
        assert_eq!(stamp_pair(memory[0], memory[1]), Some((1_000, 1_500)));
        // Read: zeroed, given back; the next lap finds them pending again.
        for c in [a, a + 1] {
            memory[ring.index(c) as usize] = 0;
            ring.release(c);
        }
        let _b = ring.alloc(2).unwrap();
        let c = ring.alloc(2).unwrap();
        assert_eq!((ring.index(c), memory[ring.index(c) as usize]), (0, 0));
    }
}
