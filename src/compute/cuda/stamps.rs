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
//! memory mapped for the device, one per timer ring entry, so the host reads an entry without any
//! copy (zeroed by [`GpuStamps::target`] before its launch; a valid pair is final: the end is
//! written last, by the launch's last block, after every block's start-side work); and one `u32`
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

    /// Where the launch of ring entry `entry` writes, the entry zeroed first (call it just
    /// before enqueuing that launch: until the launch writes both stamps, [`Self::read`] gives
    /// None).
    pub fn target(&self, entry: usize) -> StampTarget {
        let at = self.word_at(entry);
        for i in 0..2 {
            // SAFETY: 8 bytes inside the live page-locked allocation (`word_at`), 8-byte aligned;
            // the launch that used this entry last, DEPTH entries ago, has ended (the frames in
            // flight are far fewer than DEPTH), so the device does not write it now; volatile,
            // since the device reads and writes it outside Rust's view.
            unsafe { at.add(i).write_volatile(0) };
        }
        StampTarget {
            stamps: self.host.device_ptr() + entry_offset(entry),
            blocks_done: self.blocks_done.device_ptr(),
        }
    }

    /// The stamps of ring entry `entry` as they are now: Some once its launch wrote both (the
    /// values are then final), None before (the entry was zeroed by [`Self::target`]).
    pub fn read(&self, entry: usize) -> Option<(u64, u64)> {
        let at = self.word_at(entry);
        // The end first: the launch writes it last, so a start read after a written end is that
        // launch's start too.
        // SAFETY: 8 bytes inside the live page-locked allocation (`word_at`), 8-byte aligned;
        // the device may be writing the entry: a u64 store is one aligned write, so either value
        // is whole; volatile, because the device writes them outside Rust's view.
        let end = unsafe { at.add(1).read_volatile() };
        // SAFETY: as above.
        let start = unsafe { at.read_volatile() };
        valid_pair(start, end)
    }

    /// The entry's first word (its two words: start, end).
    fn word_at(&self, entry: usize) -> *mut u64 {
        let at = entry_offset(entry) as usize;
        assert!(
            at + ENTRY_BYTES as usize <= self.host.size() as usize,
            "stamp entry {entry} outside the memory"
        );
        // SAFETY: `at` is inside the allocation (asserted above), which is page aligned, so the
        // pointer is 8-byte aligned (entries are 16 bytes).
        unsafe { self.host.as_mut_ptr().add(at).cast::<u64>() }
    }
}
