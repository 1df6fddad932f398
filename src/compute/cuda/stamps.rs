//! The CUDA backend's GPU stamps: where `sinewave` writes the GPU timer at its start and end.
//!
//! Why in the kernel, not around it: CUDA events carry no absolute time (only differences), so
//! putting them on the timeline needs a host anchor whose window (±84 µs on the H100 under
//! load) is larger than the hand-off being measured. The GPU's nanosecond timer (`%globaltimer`)
//! is the timer Vulkan's timestamps count, so a kernel that reads it is on the Vulkan device
//! clock at once ([`crate::profile::Stamp::Gpu`]). The kernel stamps itself (block (0,0,0) at
//! entry, the last block to finish at exit, see `kernels/sinewave.hip`) rather than a second,
//! one-thread launch after it: no extra launch per frame, two stores per frame, and the end is
//! the kernel's own, not a later launch's.
//!
//! Layout ([`entry_offset`]): [`DEPTH`] entries of two `u64` (start, end) in page-locked host
//! memory mapped for the device, one per timer ring entry, so the host reads an entry (after the
//! frame's completion event, never before: the timer's rule) without any copy; and one `u32`
//! block counter in device memory (atomics stay on the device), zeroed once and reset by the
//! last block of every launch. Launches on the backend's one stream never overlap, so one
//! counter serves them all.

use super::Result;
use crate::compute::kernel::StampTarget;
use crate::compute::timing::DEPTH;
use vkhip_interop::cuda::{Cuda, CudaHostMemory, CudaMemory};

/// Bytes of one entry: start and end, `u64` each.
pub const ENTRY_BYTES: u64 = 16;

/// Byte offset of ring entry `entry` in the stamp memory (entries wrap at [`DEPTH`]).
///
/// ```
/// use vkhip::compute::cuda::stamps::{entry_offset, ENTRY_BYTES};
/// use vkhip::compute::timing::DEPTH;
///
/// assert_eq!(entry_offset(0), 0);
/// assert_eq!(entry_offset(3), 3 * ENTRY_BYTES);
/// assert_eq!(entry_offset(DEPTH + 1), ENTRY_BYTES);
/// ```
pub fn entry_offset(entry: usize) -> u64 {
    (entry % DEPTH) as u64 * ENTRY_BYTES
}

/// A stamp pair as read back: a valid kernel span, or None (never written: 0; an end left from
/// an earlier launch: before the start).
///
/// ```
/// use vkhip::compute::cuda::stamps::valid_pair;
///
/// assert_eq!(valid_pair(100, 250), Some((100, 250)));
/// assert_eq!(valid_pair(0, 250), None);
/// assert_eq!(valid_pair(300, 250), None);
/// ```
pub fn valid_pair(start: u64, end: u64) -> Option<(u64, u64)> {
    (start != 0 && end >= start).then_some((start, end))
}

/// The stamp memory of one backend.
pub struct GpuStamps {
    host: CudaHostMemory,
    blocks_done: CudaMemory,
}

impl GpuStamps {
    /// Allocate and zero the stamp memory on `cuda` (the counter's fill is enqueued on the
    /// stream, ahead of every launch).
    pub fn new(cuda: &Cuda) -> Result<Self> {
        let host = cuda.alloc_host(DEPTH as u64 * ENTRY_BYTES)?;
        let blocks_done = cuda.alloc(4)?;
        blocks_done.fill_u32(0, 1)?;
        Ok(GpuStamps { host, blocks_done })
    }

    /// Where the launch of ring entry `entry` writes.
    pub fn target(&self, entry: usize) -> StampTarget {
        StampTarget {
            stamps: self.host.device_ptr() + entry_offset(entry),
            blocks_done: self.blocks_done.device_ptr(),
        }
    }

    /// The stamps of ring entry `entry`. Call only once the launch that wrote them completed
    /// (its completion event queried done): the values are then final.
    pub fn read(&self, entry: usize) -> Option<(u64, u64)> {
        let memory = self.host.bytes();
        let at = entry_offset(entry) as usize;
        assert!(at + ENTRY_BYTES as usize <= memory.len(), "stamp entry {entry} outside the memory");
        let base = memory.as_ptr();
        let word = |i: usize| -> u64 {
            // SAFETY: 8 bytes inside the live page-locked allocation (asserted above), 8-byte
            // aligned (the allocation is page aligned, entries 16 bytes); the launch that wrote
            // them completed, so nothing writes them now (later launches write other entries);
            // volatile, because the device wrote them outside Rust's view.
            unsafe { base.add(at + 8 * i).cast::<u64>().read_volatile() }
        };
        valid_pair(word(0), word(1))
    }
}
