//! `cpu` backend: the host writes each slot through a persistent mapping with the CPU reference
//! itself ([`crate::sim::fill_reference`]). It cannot wait or signal on the GPU, so it runs
//! `bridged` (or `blocking`): exactly the protocol path HIP takes on Linux, which lets CI exercise
//! it without any GPU.

use super::{BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport};
use crate::sim::{fill_reference, WaveParams};
use crate::vk::external::Slot;

/// Writes slots from the host.
pub struct CpuBackend {
    /// (pointer, number of floats) per slot; the mappings outlive this backend (session order).
    slots: Vec<(*mut f32, usize)>,
}

// SAFETY: the pointers refer to persistent mappings owned by the session, which drops this backend
// first; the protocol gives one writer at a time for each slot.
unsafe impl Send for CpuBackend {}

impl CpuBackend {
    /// Use the host mappings of `slots` (created with `SlotMemory::HostMapped`).
    pub fn new(slots: &[Slot]) -> Result<Self, ComputeError> {
        let slots = slots
            .iter()
            .map(|s| {
                s.mapped().map(|p| (p, (s.size / 4) as usize)).ok_or_else(|| ComputeError::Unsupported {
                    backend: "cpu",
                    reason: "slot memory is not host-mapped".into(),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(CpuBackend { slots })
    }
}

impl ComputeBackend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn device_name(&self) -> String {
        format!("host CPU ({} threads)", std::thread::available_parallelism().map_or(1, |n| n.get()))
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: false, binary: false }
    }

    fn enqueue_gpu_synced(
        &mut self,
        _: u64,
        _: usize,
        _: &WaveParams,
        _: GpuSync,
    ) -> Result<(), ComputeError> {
        Err(ComputeError::Unsupported { backend: "cpu", reason: "cannot wait or signal on the GPU".into() })
    }

    fn write_slot_and_wait(
        &mut self,
        _frame: u64,
        slot: usize,
        params: &WaveParams,
    ) -> Result<(), ComputeError> {
        let (ptr, len) = self.slots[slot];
        let n = params.grid.len();
        if n > len {
            return Err(ComputeError::Unsupported {
                backend: "cpu",
                reason: format!("slot holds {len} values, grid needs {n}"),
            });
        }
        // SAFETY: the mapping holds `len ≥ n` floats and the protocol guarantees no reader or other
        // writer uses this slot now (its previous draw has finished: `rendered` was waited on).
        let out = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
        // Split rows across threads for large grids; each thread computes whole rows.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let w = params.grid.width as usize;
        let rows_per = (params.grid.height as usize).div_ceil(threads);
        if threads > 1 && n >= 1 << 16 {
            std::thread::scope(|s| {
                for (i, chunk) in out.chunks_mut(rows_per * w).enumerate() {
                    s.spawn(move || {
                        let y0 = (i * rows_per) as u32;
                        for (j, h) in chunk.iter_mut().enumerate() {
                            *h = crate::sim::height(params, (j % w) as u32, y0 + (j / w) as u32);
                        }
                    });
                }
            });
        } else {
            fill_reference(params, out);
        }
        // Host-coherent memory: the writes are visible to the device once the host signals the
        // semaphore that the draw waits on.
        Ok(())
    }

    fn finish(&mut self) -> Result<(), ComputeError> {
        Ok(())
    }
}
