//! What bounds the frame: the GPU's work, the hand-offs between GPU tracks (the time the GPU
//! spends changing contexts), or the host — from the [`Summary`]'s figures.
//!
//! Per frame, in means (means add up; percentiles do not):
//! - **GPU work** `B`: the union of the frame's top-level GPU scopes ([`Summary::gpu_busy`]);
//! - **hand-offs** `E`: the *exposed* time of every hand-off whose signal and wait are both on
//!   GPU tracks, times how many such waits a frame has. Between Vulkan and CUDA or HIP that is
//!   the context switch (≈ 160 µs each way on an H200: docs/ARCHITECTURE.md): time the GPU
//!   spends on neither API's work, which no scope covers;
//! - **the frame** `F`: the mean frame time.
//!
//! The GPU side of a frame is `B + E`. When it is at least [`GPU_SIDE_SHARE`] of `F`, the GPU
//! side bounds the frame — the hand-offs when `E ≥ B`, else the GPU's work; otherwise the host
//! does (the GPU waits for it the rest of the frame). The GPU's limit counts both: `1 / (B + E)`.
//! A host → GPU hand-off (a host signal the GPU waits for) is not GPU time, and is not counted.

use crate::analysis::Summary;

/// The share of the frame the GPU side must fill to be what bounds it.
pub const GPU_SIDE_SHARE: f64 = 0.8;

/// What bounds the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// The GPU's own work (its scopes).
    GpuWork,
    /// The hand-offs between GPU tracks: the GPU changing contexts.
    Handoffs,
    /// The host: the GPU side fills less than [`GPU_SIDE_SHARE`] of the frame.
    Host,
}

/// A frame's budget, in mean ns per frame ([`Summary::budget`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub frame_ns: f64,
    /// GPU work: the union of the frame's top-level GPU scopes.
    pub gpu_work_ns: f64,
    /// The exposed time of hand-offs between GPU tracks.
    pub handoffs_ns: f64,
    pub bound: Bound,
}

impl Budget {
    /// The GPU side of a frame: its work and its hand-offs.
    pub fn gpu_side_ns(&self) -> f64 {
        self.gpu_work_ns + self.handoffs_ns
    }

    /// Frames a second the GPU side allows (work and hand-offs counted).
    pub fn gpu_limit_fps(&self) -> f64 {
        1e9 / self.gpu_side_ns()
    }
}

impl Summary {
    /// The mean exposed time per frame of hand-offs between two GPU tracks.
    pub fn gpu_handoffs_ns(&self) -> f64 {
        let frames = self.gpu_busy.count.max(1) as f64;
        let is_gpu = |t: crate::TrackId| self.tracks.get(t.0 as usize).is_some_and(|t| t.api.is_gpu());
        self.handoffs
            .iter()
            .filter(|h| is_gpu(h.from) && is_gpu(h.to))
            .map(|h| h.exposed.mean_ns * h.exposed.count as f64 / frames)
            .sum()
    }

    /// The frame's budget and what bounds it; `None` without frame times or GPU scopes.
    pub fn budget(&self) -> Option<Budget> {
        if self.frame_time.count == 0 || self.gpu_busy.count == 0 || self.frame_time.mean_ns <= 0.0 {
            return None;
        }
        let (frame_ns, gpu_work_ns, handoffs_ns) =
            (self.frame_time.mean_ns, self.gpu_busy.mean_ns, self.gpu_handoffs_ns());
        let bound = if gpu_work_ns + handoffs_ns < GPU_SIDE_SHARE * frame_ns {
            Bound::Host
        } else if handoffs_ns >= gpu_work_ns {
            Bound::Handoffs
        } else {
            Bound::GpuWork
        };
        Some(Budget { frame_ns, gpu_work_ns, handoffs_ns, bound })
    }
}
