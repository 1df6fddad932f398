//! `cpu` backend: the host writes each slot through a persistent mapping with the CPU reference
//! itself ([`crate::sim::fill_reference`]). It cannot wait or signal on the GPU, so it runs
//! `bridged` (or `blocking`): exactly the protocol path HIP takes on Linux, which lets CI exercise
//! it without any GPU.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included): the backend writes the CPU reference through a
//! host-mapped slot, and refuses a slot it cannot map.
//!
//! ```
//! use std::sync::Arc;
//! use vkhip::compute::cpu::CpuBackend;
//! use vkhip::compute::{BackendKind, ComputeBackend};
//! use vkhip::sim::{compare_with_reference, Grid, WaveParams};
//! use vkhip::vk::device::{enumerate, Context};
//! use vkhip::vk::external::{Slot, SlotMemory};
//! use vkhip::vk::instance::Instance;
//!
//! let instance = Arc::new(Instance::new(false, &[]).unwrap());
//! let devices = enumerate(&instance).unwrap();
//! let pd = devices.into_iter().find(|d| d.usable()).expect("a Vulkan 1.2 device (lavapipe will do)");
//! let ctx = Context::new(instance, pd, false).unwrap();
//! let grid = Grid { width: 64, height: 32 };
//! let slots: Vec<Slot> =
//!     (0..2).map(|_| Slot::new(&ctx, grid.bytes(), SlotMemory::HostMapped, false).unwrap()).collect();
//! let mut cpu = CpuBackend::new(&slots).unwrap();
//! assert_eq!(cpu.kind(), BackendKind::Cpu);
//! assert!(!cpu.gpu_sync_support().timeline); // so it runs bridged or blocking
//!
//! let params = WaveParams::at_time(grid, 0.75);
//! cpu.write_slot_and_wait(3, 1, &params).unwrap();
//! // SAFETY: a host-coherent mapping of grid.len() floats; nothing else writes it now.
//! let heights = unsafe { std::slice::from_raw_parts(slots[1].mapped().unwrap(), grid.len()) };
//! let c = compare_with_reference(&params, heights, 0.0);
//! assert_eq!((c.mismatches, c.max_abs_error), (0, 0.0)); // the reference itself, bit for bit
//! assert!(heights.iter().any(|&h| h != 0.0));
//!
//! let gpu_only = [Slot::new(&ctx, grid.bytes(), SlotMemory::DeviceLocal, false).unwrap()];
//! let err = CpuBackend::new(&gpu_only).err().expect("a device-local slot has no mapping");
//! assert!(err.to_string().contains("slot memory is not host-mapped"), "{err}");
//! ```

use super::post::{outline_reference, PostKind, PostResources, PostSurface};
use super::{BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport};
use crate::sim::{fill_reference, WaveParams};
use crate::vk::external::Slot;

/// Writes slots from the host.
pub struct CpuBackend {
    /// (pointer, number of floats) per slot; the mappings outlive this backend (session order).
    slots: Vec<(*mut f32, usize)>,
    /// `--post`: the pairs' host buffers and the image size ([`ComputeBackend::attach_post`]).
    post: Option<PostResources>,
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
        Ok(CpuBackend { slots, post: None })
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
        let n = params.values();
        if n > len {
            return Err(ComputeError::Unsupported {
                backend: "cpu",
                reason: format!(
                    "slot holds {len} values, {} environment(s) of the grid need {n}",
                    params.envs
                ),
            });
        }
        // SAFETY: the mapping holds `len ≥ n` floats and the protocol guarantees no reader or other
        // writer uses this slot now (its previous draw has finished: `rendered` was waited on).
        let out = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
        // Split rows across threads for large grids; each thread computes whole rows (the rows
        // of every environment, one after the other).
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(8);
        let w = params.grid.width as usize;
        let rows = params.grid.height as usize;
        let rows_per = (rows * params.envs as usize).div_ceil(threads);
        if threads > 1 && n >= 1 << 16 {
            let envs: Vec<WaveParams> = (0..params.envs).map(|e| params.env(e)).collect();
            let envs = &envs;
            std::thread::scope(|s| {
                for (i, chunk) in out.chunks_mut(rows_per * w).enumerate() {
                    s.spawn(move || {
                        let r0 = i * rows_per;
                        for (j, h) in chunk.iter_mut().enumerate() {
                            let r = r0 + j / w;
                            *h = crate::sim::height(&envs[r / rows], (j % w) as u32, (r % rows) as u32);
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

    /// The post filter on the host: the pairs must be host buffers ([`PostSurface::Mapped`]) of
    /// width × height × 4 bytes.
    fn attach_post(&mut self, post: PostResources) -> Result<(), ComputeError> {
        let need = post.width as usize * post.height as usize * 4;
        let unsupported = |reason: String| ComputeError::Unsupported { backend: "cpu", reason };
        if post.kind == PostKind::None {
            return Err(unsupported("attach_post with --post none".into()));
        }
        for (i, p) in post.pairs.iter().enumerate() {
            for s in [&p.scene, &p.output] {
                match s {
                    PostSurface::Mapped { ptr, len } if !ptr.is_null() && *len >= need => {}
                    _ => {
                        return Err(unsupported(format!(
                            "post pair {i} is not a host mapping of {need} bytes"
                        )))
                    }
                }
            }
        }
        self.post = Some(post);
        Ok(())
    }

    /// [`outline_reference`] from scene `pair`'s mapping into output `pair`'s. The protocol
    /// guarantees the scene was copied in (`rendered` waited for) and the output's previous copy
    /// finished (`presented` waited for); the mapping is host-coherent, so the host's writes are
    /// visible to the copy that waits for the `posted` value signalled next.
    fn post_and_wait(&mut self, _frame: u64, pair: usize) -> Result<(), ComputeError> {
        let Some(post) = &self.post else {
            return Err(ComputeError::Unsupported {
                backend: "cpu",
                reason: "post stage not attached".into(),
            });
        };
        let (w, h) = (post.width, post.height);
        let n = w as usize * h as usize * 4;
        let (PostSurface::Mapped { ptr: src, .. }, PostSurface::Mapped { ptr: dst, .. }) =
            (&post.pairs[pair].scene, &post.pairs[pair].output)
        else {
            return Err(ComputeError::Unsupported {
                backend: "cpu",
                reason: "post pair is not mapped".into(),
            });
        };
        // SAFETY: both mappings hold `n` bytes (checked by attach_post) and outlive the backend;
        // the protocol gives this call sole use of both now (module note of crate::sync).
        let (scene, output) =
            unsafe { (std::slice::from_raw_parts(*src, n), std::slice::from_raw_parts_mut(*dst, n)) };
        output.copy_from_slice(&outline_reference(scene, w, h));
        Ok(())
    }

    fn finish(&mut self) -> Result<(), ComputeError> {
        Ok(())
    }
}
