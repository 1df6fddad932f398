//! `--memory staged`: the CUDA backend without interop memory, as a benchmark baseline.
//!
//! What an application does when CUDA and Vulkan share nothing: the kernel writes a buffer CUDA
//! owns (`cuMemAlloc`); each frame that buffer is copied device → host into page-locked memory
//! (`cuMemAllocHost`, `cuMemcpyDtoHAsync` on the backend's stream, then an event wait), and the
//! host copies it into the slot's **host-mapped Vulkan memory** (the session creates
//! `SlotMemory::HostMapped` slots, as for the `cpu` backend). Vulkan then reads the slot over
//! PCIe while drawing. The benchmark compares this with zero-copy ([`super::CudaBackend`]).
//!
//! There is no GPU-side sync: a slot is complete only once the host has copied it, so the
//! backend runs `bridged` / `blocking` through [`ComputeBackend::write_slot_and_wait`], exactly
//! like the `cpu` backend.
//!
//! One device buffer and one pinned buffer serve every slot: frames are written one at a time
//! and each call returns only after its copies have finished. The kernel, the copy and the event
//! run on the device's one stream (the crate's [`Cuda`]).
//!
//! Profiler: the compute track's "write" span of a frame covers the kernel *and* the
//! device-to-host copy (both on the stream); the host memcpy into the slot is host time.

use super::{backend_error, plan, setup_device, DeviceSetup, Result, Sinewave};
use crate::compute::timing::{Mark, StreamTimer};
use crate::compute::{BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport, KernelBenchmark};
use crate::profile::clock::ClockInfo;
use crate::profile::Span;
use crate::sim::WaveParams;
use crate::vk::external::Slot;
use std::sync::Arc;
use vkhip_interop::cuda::{self as interop, Cuda, CudaEvent, CudaHostMemory, CudaMemory};

/// A slot's persistent host mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HostSlot {
    ptr: *mut f32,
    /// Bytes the mapping holds (the slot's buffer size).
    size: u64,
}

/// The host mappings of `slots` ((mapping, buffer size) each) and the largest size: every slot
/// must be host-mapped and hold at least one float.
fn host_slots(slots: impl IntoIterator<Item = (Option<*mut f32>, u64)>) -> Result<(Vec<HostSlot>, u64)> {
    let unsupported = |reason: String| ComputeError::Unsupported { backend: "cuda", reason };
    let slots = slots
        .into_iter()
        .enumerate()
        .map(|(i, (mapped, size))| {
            let ptr = mapped.filter(|p| !p.is_null()).ok_or_else(|| {
                unsupported(format!(
                    "staged copy: slot {i} is not host-mapped (the session must create \
                     SlotMemory::HostMapped slots for --memory staged)"
                ))
            })?;
            if size < 4 || usize::try_from(size).is_err() {
                return Err(unsupported(format!(
                    "staged copy: slot {i} has an unusable size of {size} bytes"
                )));
            }
            Ok(HostSlot { ptr, size })
        })
        .collect::<Result<Vec<_>>>()?;
    let largest =
        slots.iter().map(|s| s.size).max().ok_or_else(|| unsupported("staged copy: no slots".into()))?;
    Ok((slots, largest))
}

/// The frame report's device line: CudaBackend's (`describe`), marked as the staged copy.
fn staged_device_name(describe: &str) -> String {
    format!("{describe} (staged copy)")
}

/// The CUDA backend without interop: kernel → device buffer → pinned host buffer → slot mapping.
pub struct CudaStagedBackend {
    // Field order is teardown order (after `Drop` has synchronised the stream): the mappings
    // (borrowed, nothing to free), timing events, the event, the pinned and device buffers, the
    // kernel; the device (stream and context) goes with the last of them.
    slots: Vec<HostSlot>,
    timer: StreamTimer<CudaEvent>,
    done: CudaEvent,
    host: CudaHostMemory,
    staging: CudaMemory,
    kernel: Sinewave,
    cuda: Arc<Cuda>,
}

// SAFETY: the other fields are Send; the raw pointers are the slots' persistent mappings, owned
// by the session, which drops the backend before the slots (as for `CpuBackend`), and the frame
// protocol gives one writer per slot at a time.
unsafe impl Send for CudaStagedBackend {}

impl CudaStagedBackend {
    /// On the CUDA device whose UUID is `device_uuid`, build the kernel and the staging buffers
    /// for `slots`, which must be host-mapped (`SlotMemory::HostMapped`).
    pub fn new(device_uuid: [u8; 16], slots: &[Slot]) -> Result<Self> {
        Self::build(device_uuid, slots).map_err(backend_error)
    }

    fn build(device_uuid: [u8; 16], slots: &[Slot]) -> Result<Self> {
        let driver_version = interop::driver_version()?;
        let (slots, bytes) = host_slots(slots.iter().map(|s| (s.mapped(), s.size)))?;
        let DeviceSetup { kernel, cuda } = setup_device(device_uuid, driver_version)?;
        let staging = cuda.alloc(bytes)?;
        let host = cuda.alloc_host(bytes)?;
        let done = cuda.event(false)?;
        let timer = StreamTimer::new("cuda", cuda.clone(), || Ok(cuda.event(true)?))?;
        log::info!(
            "cuda: {}, driver CUDA {driver_version}: staged copy, {} host-mapped slot(s), \
             {bytes}-byte device and page-locked buffers",
            cuda.describe(),
            slots.len()
        );
        Ok(CudaStagedBackend { slots, timer, done, host, staging, kernel, cuda })
    }

    /// (free, total) device memory in bytes (`cuMemGetInfo`).
    pub fn device_memory(&self) -> Result<(u64, u64)> {
        Ok(self.cuda.memory()?)
    }

    fn slot(&self, slot: usize) -> Result<HostSlot> {
        self.slots.get(slot).copied().ok_or_else(|| ComputeError::Unsupported {
            backend: "cuda",
            reason: format!("slot {slot} out of range ({} slots)", self.slots.len()),
        })
    }

    /// Kernel into the device buffer, then the device-to-host copy, on the stream; returns when
    /// both have finished (the pinned buffer then holds the frame).
    fn compute_to_host(&mut self, frame: u64, params: &WaveParams, bytes: u64) -> Result<()> {
        let i = self.timer.begin(frame);
        self.timer.mark(i, Mark::BeforeKernel, &self.cuda)?;
        self.kernel.launch(&self.cuda, (&self.staging).into(), params, None)?;
        // SAFETY: the pinned buffer is read only after the event recorded behind the copy has
        // completed (below, and only on success); it is owned by `self`, and freeing it waits
        // for the stream; later copies into it are ordered behind this one on the same stream.
        unsafe { self.cuda.copy_to_host(&self.staging, &mut self.host, bytes) }?;
        self.timer.mark(i, Mark::AfterKernel, &self.cuda)?;
        self.cuda.record(&self.done)?;
        Ok(self.done.synchronize()?)
    }
}

impl ComputeBackend for CudaStagedBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_name(&self) -> String {
        staged_device_name(&self.cuda.describe())
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: false, binary: false }
    }

    fn enqueue_gpu_synced(&mut self, _: u64, _: usize, _: &WaveParams, _: GpuSync) -> Result<()> {
        Err(ComputeError::Unsupported {
            backend: "cuda",
            reason: "--memory staged copies each frame through host memory, so a slot is complete \
                     only when the host has copied it: no GPU-side wait or signal (use --sync \
                     bridged or blocking)"
                .into(),
        })
    }

    fn write_slot_and_wait(&mut self, frame: u64, slot: usize, params: &WaveParams) -> Result<()> {
        let target = self.slot(slot)?;
        let bytes = params.values() as u64 * 4;
        // Refuse before enqueueing anything; the launch and the copy check their own buffers.
        plan::check_grid_fits(params, target.size)?;
        self.compute_to_host(frame, params, bytes)?;
        let src = self.host.bytes();
        let len = bytes as usize; // ≤ target.size, which fits a usize (`host_slots`)
        debug_assert!(len <= src.len());
        // SAFETY: `src` holds `len` bytes (the copy above checked `bytes` against the pinned
        // buffer) that CUDA finished writing (the event wait returned); the slot's mapping holds
        // `target.size ≥ len` bytes (checked above) and the protocol guarantees nothing else
        // reads or writes the slot now; the two allocations are distinct.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), target.ptr.cast::<u8>(), len) };
        // Host-coherent memory: visible to the device once the host signals what the draw waits on.
        Ok(())
    }

    fn take_spans(&mut self, out: &mut Vec<Span>) {
        self.timer.take_spans(out);
    }

    fn clock_info(&self) -> Option<ClockInfo> {
        self.timer.clock_info()
    }

    fn finish(&mut self) -> Result<()> {
        Ok(self.cuda.synchronize()?)
    }

    fn benchmark(&mut self, _: usize, _: &WaveParams, _: u32) -> Result<KernelBenchmark> {
        Err(ComputeError::Unsupported {
            backend: "cuda",
            reason: "no kernel benchmark with --memory staged (the kernel is the same: use the \
                     default zero-copy memory)"
                .into(),
        })
    }

    fn device_memory(&self) -> Option<Result<(u64, u64)>> {
        Some(CudaStagedBackend::device_memory(self))
    }
}

impl Drop for CudaStagedBackend {
    fn drop(&mut self) {
        if let Err(e) = self.cuda.synchronize() {
            log::warn!("cuda: synchronising the stream for teardown failed: {e}");
        }
        // The fields now drop in declaration order (see the struct).
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Grid;

    #[test]
    fn backend_can_move_to_the_bridge_thread() {
        fn assert_send<T: Send>() {}
        assert_send::<CudaStagedBackend>();
    }

    #[test]
    fn new_without_a_driver_is_unavailable() {
        if interop::driver_present() {
            return; // Covered by the GPU check on a machine with a driver.
        }
        let err = match CudaStagedBackend::new([0; 16], &[]) {
            Err(e) => e,
            Ok(_) => panic!("CudaStagedBackend::new succeeded without libcuda"),
        };
        assert!(matches!(err, ComputeError::Unavailable { backend: "cuda", .. }), "{err}");
        assert_eq!(
            err.to_string(),
            "backend cuda is not available: libcuda.so not found: install the NVIDIA driver"
        );
    }

    #[test]
    fn slots_must_be_host_mapped_and_sized() {
        let mut a = [0f32; 16];
        let mut b = [0f32; 64];
        let (slots, largest) = host_slots([(Some(a.as_mut_ptr()), 64), (Some(b.as_mut_ptr()), 256)]).unwrap();
        assert_eq!(largest, 256);
        assert_eq!(slots.len(), 2);
        assert_eq!(slots[1], HostSlot { ptr: b.as_mut_ptr(), size: 256 });

        let err = host_slots([(Some(a.as_mut_ptr()), 64), (None, 64)]).unwrap_err();
        assert!(matches!(err, ComputeError::Unsupported { backend: "cuda", .. }));
        assert!(err.to_string().contains("slot 1 is not host-mapped"), "{err}");
        let err = host_slots([(Some(std::ptr::null_mut()), 64)]).unwrap_err();
        assert!(err.to_string().contains("slot 0 is not host-mapped"), "{err}");
        let err = host_slots([(Some(a.as_mut_ptr()), 0)]).unwrap_err();
        assert!(err.to_string().contains("unusable size of 0 bytes"), "{err}");
        let err = host_slots(std::iter::empty()).unwrap_err();
        assert!(err.to_string().contains("no slots"), "{err}");
    }

    #[test]
    fn a_grid_larger_than_the_slot_is_refused() {
        let grid = Grid { width: 64, height: 64 };
        let p = crate::sim::WaveParams::at_time(grid, 0.0);
        assert!(plan::check_grid_fits(&p, 64 * 64 * 4).is_ok());
        assert!(plan::check_grid_fits(&p, 64 * 64 * 4 - 4).is_err());
    }

    #[test]
    fn device_name_ends_in_staged_copy() {
        let name = staged_device_name("NVIDIA H100 80GB HBM3 (CUDA device 0, sm_90)");
        assert_eq!(name, "NVIDIA H100 80GB HBM3 (CUDA device 0, sm_90) (staged copy)");
    }
}
