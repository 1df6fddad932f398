//! Frames into the framework: the app's renderer draws offscreen, and each frame is copied on
//! Vulkan's side into one of K linear shared buffers that a consumer (CUDA through DLPack, or the
//! host) reads.
//!
//! Frame f, slot s = f mod K, one submission after the app's own frame (throttle → heights →
//! draw, exactly the headless run's):
//! - waits the target's "frame f is drawn" value (`rendered` ≥ f+1) and, from f = K on,
//!   `released` ≥ f+1−K (the consumer has finished reading slot s's previous frame), both at the
//!   transfer stage, on the GPU;
//! - **the one GPU copy**: `vkCmdCopyImageToBuffer` from the offscreen colour image (RGBA8,
//!   `TRANSFER_SRC_OPTIMAL` after the render pass) into buffer s, tightly packed rows
//!   (`height × width × 4` bytes), recorded once per slot at creation (`CopyCommands`);
//! - a barrier making the bytes visible to the host (the host consumer), and with a CUDA
//!   importer the buffer's release to the external queue family (acquired back before the
//!   copy);
//! - signals `ready` = f+1.
//!
//! The render pass orders the next draw after the copy (its incoming dependency includes the
//! transfer stage), so a consumer K frames behind holds the GPU back: the draw after a copy that
//! waits for `released` waits too. A host consumer ([`Importer::Host`]) that still holds frame
//! f−1−K when frame f is asked for gets an error from [`Frames::render`] instead (that frame's
//! throttle would wait for a draw stuck behind the held frame). A CUDA consumer releases on its
//! stream, ahead of what the host can see, so there [`Frames::render`]'s throttle waits (for a
//! value Vulkan signals, up to the app's wait timeout, then an error).
//!
//! Teardown ([`Drop`]): copies still waiting for `released` are let go by a host signal, the
//! protocol is stopped and the queue drained; then the command buffers, the shared buffers, the
//! timelines and the session go, in that order.

use super::{parse_run, EmbedError};
use crate::app::frame::{compute_and_draw, throttle, Clock, DrawTarget};
use crate::app::headless::Offscreen;
use crate::app::profiling::FrameProfile;
use crate::cli::TimeMode;
use crate::profile::RenderMarks;
use crate::vk::device::Context;
use crate::vk::external::Semaphore;
use crate::vk::target::OffscreenTarget;
use crate::vk::{CallContext as _, VkError};
use ash::vk;
use std::sync::Arc;
use vkhip_interop::vulkan::SharedBuffer;
use vkhip_interop::{ExportedMemory, ImportFd};

/// Who reads the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Importer {
    /// The host, through the buffers' mappings (memory the host maps: on a GPU, what a program
    /// without a compute API reads its frames from); the timelines are the app's own, not
    /// exportable.
    Host,
    /// CUDA imports the buffers and both timelines (exportable: a GPU with
    /// `VK_KHR_external_semaphore_fd`).
    Cuda,
}

/// What [`Frames::new`] builds.
#[derive(Clone, Debug)]
pub struct FramesOptions {
    /// The `vkhip` command's flags for the frames: `--size`, `--grid`, `--backend` (who writes
    /// the heights), `--sync`, `--time`, `--dt`, `--validation`, … (`--capture`, `--trace`,
    /// `--overlay` and `--post` are refused: the frames go to the consumer).
    pub args: Vec<String>,
    /// K, the shared buffers (1..=8); frame f uses buffer f mod K.
    pub slots: usize,
    pub importer: Importer,
}

impl FramesOptions {
    pub fn new(args: impl IntoIterator<Item = impl Into<String>>, slots: usize, importer: Importer) -> Self {
        FramesOptions { args: args.into_iter().map(Into::into).collect(), slots, importer }
    }

    /// Render on `device` (`--device`: a Vulkan index, or the GPU of a CUDA ordinal); the
    /// importer then opens the same GPU (the Vulkan device's UUID).
    pub fn with_device(mut self, device: crate::vk::device::DeviceArg) -> Self {
        self.args.extend(["--device".to_string(), device.to_string()]);
        self
    }
}

/// One rendered frame, on its way to the consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameInfo {
    /// The frame number f (0, 1, …).
    pub frame: u64,
    /// The shared buffer holding it once `ready` ≥ [`FrameInfo::ready_value`]: f mod K.
    pub slot: usize,
    /// f+1: the `ready` value that says the copy is done, and the `released` value the consumer
    /// signals when it has finished reading.
    pub ready_value: u64,
    pub width: u32,
    pub height: u32,
}

/// The K copy command buffers, one per slot, recorded once (`SIMULTANEOUS_USE`: each is
/// submitted again while an earlier submission of it may still wait for `released`).
struct CopyCommands {
    pool: vk::CommandPool,
    cmds: Vec<vk::CommandBuffer>,
    ctx: Arc<Context>,
}

impl CopyCommands {
    fn new(
        ctx: &Arc<Context>,
        target: &OffscreenTarget,
        buffers: &[SharedBuffer],
        export: bool,
    ) -> Result<Self, VkError> {
        let d = &ctx.device;
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(ctx.queue_family);
        // SAFETY: valid device; `info` points at a live local.
        let pool = unsafe { d.create_command_pool(&info, None) }.call("vkCreateCommandPool")?;
        let mut copies = CopyCommands { pool, cmds: Vec::new(), ctx: ctx.clone() };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(buffers.len() as u32);
        // SAFETY: a pool of this device.
        copies.cmds = unsafe { d.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?;
        for (&cmd, buffer) in copies.cmds.iter().zip(buffers) {
            let begin =
                vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::SIMULTANEOUS_USE);
            // SAFETY: a fresh command buffer of this device.
            unsafe { d.begin_command_buffer(cmd, &begin) }.call("vkBeginCommandBuffer")?;
            // SAFETY: `cmd` is recording; the image and the buffer are live, the image is in
            // TRANSFER_SRC_OPTIMAL after the render pass, the buffer holds the whole extent.
            unsafe { record_copy(d, cmd, target, buffer, export) };
            // SAFETY: as above.
            unsafe { d.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;
        }
        Ok(copies)
    }
}

/// Record frame → buffer: (acquire from the importer) → the copy → visible to the host →
/// (release to the importer).
///
/// # Safety
/// As [`CopyCommands::new`] says where it calls it.
unsafe fn record_copy(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    target: &OffscreenTarget,
    buffer: &SharedBuffer,
    export: bool,
) {
    let transfer_write = (vk::PipelineStageFlags::TRANSFER, vk::AccessFlags::TRANSFER_WRITE);
    // SAFETY: per this function's contract.
    unsafe {
        if export {
            buffer.cmd_acquire(cmd, transfer_write);
        }
        // The one GPU copy of the frame: tiled image → linear shared buffer, tightly packed
        // rows of width × 4 bytes (vkCmdCopyImageToBuffer).
        target.cmd_copy_to_buffer(d, cmd, buffer.buffer());
        crate::vk::cmd_memory_barrier(
            d,
            cmd,
            transfer_write,
            (vk::PipelineStageFlags::HOST, vk::AccessFlags::HOST_READ),
        );
        if export {
            buffer.cmd_release(cmd, transfer_write);
        }
    }
}

impl Drop for CopyCommands {
    fn drop(&mut self) {
        // SAFETY: the owner drains the queue first (`Frames`' Drop); freeing the pool frees its
        // command buffers.
        unsafe { self.ctx.device.destroy_command_pool(self.pool, None) };
    }
}

/// The app's renderer feeding K shared buffers (module note). Field order is teardown order,
/// after [`Drop`] has drained the queue.
pub struct Frames {
    copies: CopyCommands,
    buffers: Vec<SharedBuffer>,
    /// Each buffer's host mapping (address), where its memory is host-visible.
    host: Vec<Option<usize>>,
    ready: Semaphore,
    released: Semaphore,
    profile: FrameProfile,
    clock: Clock,
    target: DrawTarget<'static>,
    offscreen: Offscreen,
    importer: Importer,
    next: u64,
}

impl Frames {
    /// The session for `options.args` (the app's: device, heights backend, sync protocol,
    /// renderer, offscreen target), K shared buffers of the target's size, and the two
    /// timelines (exportable for [`Importer::Cuda`]).
    pub fn new(options: &FramesOptions) -> Result<Frames, EmbedError> {
        let run = parse_run(&options.args)?;
        let k = options.slots;
        if !(1..=8).contains(&k) {
            return Err(EmbedError::Unsupported(format!("{k} frame buffers: K is 1..=8")));
        }
        for (given, flag) in [
            (run.capture.is_some(), "--capture"),
            (run.trace.is_some(), "--trace"),
            (run.overlay, "--overlay"),
            (run.common.post != crate::compute::post::PostKind::None, "--post"),
        ] {
            if given {
                return Err(EmbedError::Unsupported(format!("{flag}: the frames go to the consumer here")));
            }
        }
        let extent = vk::Extent2D { width: run.size.width, height: run.size.height };
        let offscreen = Offscreen::new(&run.common, extent).map_err(|e| EmbedError::from_run(&e))?;
        let ctx = offscreen.session.ctx.clone();
        let vulkan = |e: VkError| EmbedError::from_run(&e.into());
        let interop = ctx.interop().map_err(vulkan)?;
        let bytes = extent.width as u64 * extent.height as u64 * 4;
        let buffers = (0..k)
            .map(|_| match options.importer {
                // The host reads the frames: memory it maps (on a GPU, across the bus).
                Importer::Host => interop.shared_buffer_for_host(bytes),
                Importer::Cuda => interop.shared_buffer(bytes),
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| vulkan(e.into()))?;
        let host = buffers
            .iter()
            .map(|b| Ok(b.host_ptr()?.map(|p| p.as_ptr() as usize)))
            .collect::<Result<Vec<_>, vkhip_interop::Error>>()
            .map_err(|e| vulkan(e.into()))?;
        let export = options.importer == Importer::Cuda;
        if export && !ctx.physical.timeline_export {
            return Err(EmbedError::Environment(format!(
                "{} cannot export timeline semaphores as OPAQUE_FD: a CUDA consumer waits and signals them (Importer::Host reads the frames on the host)",
                ctx.physical.name
            )));
        }
        // CUDA signals `released`: the validation layer's known false positives for a foreign
        // signal are counted apart, as in the app's external runs.
        crate::vk::instance::set_foreign_signals(export);
        let ready = Semaphore::timeline(&ctx, 0, export).map_err(vulkan)?;
        let released = Semaphore::timeline(&ctx, 0, export).map_err(vulkan)?;
        let copies = CopyCommands::new(&ctx, &offscreen.target, &buffers, export).map_err(vulkan)?;
        let profile = FrameProfile::new(&offscreen.session, None);
        let target = offscreen.draw_target();
        Ok(Frames {
            copies,
            buffers,
            host,
            ready,
            released,
            profile,
            clock: Clock::new(run.time.unwrap_or(TimeMode::Frame), run.dt),
            target,
            offscreen,
            importer: options.importer,
            next: 0,
        })
    }

    /// K.
    pub fn slots(&self) -> usize {
        self.buffers.len()
    }

    /// (width, height) of every frame.
    pub fn extent(&self) -> (u32, u32) {
        (self.target.extent.width, self.target.extent.height)
    }

    /// Frames rendered so far (the next frame's number).
    pub fn rendered(&self) -> u64 {
        self.next
    }

    /// Buffer `slot`'s memory for an importer (a new fd each call).
    pub fn slot_memory(&self, slot: usize) -> Result<ExportedMemory, EmbedError> {
        let buffer = self.buffers.get(slot).ok_or_else(|| self.no_slot(slot))?;
        buffer.export().map_err(|e| EmbedError::from_run(&VkError::from(e).into()))
    }

    /// (ready, released) for an importer (new fds each call); refused unless the frames were
    /// made for [`Importer::Cuda`].
    pub fn timeline_fds(&self) -> Result<(ImportFd, ImportFd), EmbedError> {
        let export = |s: &Semaphore| {
            s.export().map_err(|e| match e {
                VkError::Unsupported(why) => EmbedError::Unsupported(format!(
                    "the frame timelines: {why} (Importer::Cuda exports them)"
                )),
                other => EmbedError::from_run(&other.into()),
            })
        };
        Ok((export(&self.ready)?, export(&self.released)?))
    }

    /// Draw the next frame (f) and copy it into buffer f mod K: the app's frame (throttle →
    /// heights → draw), then the copy's submission, waiting `released` ≥ f+1−K on the GPU and
    /// signalling `ready` = f+1. Returns once submitted.
    pub fn render(&mut self) -> Result<FrameInfo, EmbedError> {
        let f = self.next;
        let k = self.buffers.len() as u64;
        let slot = (f % k) as usize;
        if self.importer == Importer::Host && f > k {
            // Frame f−1's copy waits for frame f−1−K's release: the host must have given it,
            // or the draws after that copy (and frame f's throttle) would wait forever.
            let held = f - 1 - k;
            let released = self.offscreen.session.ctx.timeline_value(self.released.handle);
            if released.map_err(|e| EmbedError::from_run(&e.into()))? <= held {
                return Err(EmbedError::Unsupported(format!(
                    "frame {f}: frame {held} is still held ({k} frame buffers): release it first"
                )));
            }
        }
        let o = &mut self.offscreen;
        let mut marks = RenderMarks::start(f);
        let failed = |e: anyhow::Error| EmbedError::from_run(&e.context(format!("frame {f}")));
        throttle(&o.session, f, &mut marks).map_err(|e| failed(e.into()))?;
        let params = self.clock.due_params(&o.session, f);
        compute_and_draw(&mut o.session, &mut o.renderer, f, &params, &self.target, &mut marks)
            .map_err(|e| failed(e.into()))?;
        self.profile.end_frame(&mut o.session, &mut o.renderer, marks);
        let (drawn, value) = o.target_done(f + 1);
        let mut waits = vec![(drawn, value, vk::PipelineStageFlags::TRANSFER)];
        if f >= k {
            waits.push((self.released.handle, f + 1 - k, vk::PipelineStageFlags::TRANSFER));
        }
        o.session
            .ctx
            .submit_with(self.copies.cmds[slot], &waits, &[(self.ready.handle, f + 1)], vk::Fence::null())
            .map_err(|e| failed(e.into()))?;
        self.next = f + 1;
        let (width, height) = self.extent();
        Ok(FrameInfo { frame: f, slot, ready_value: f + 1, width, height })
    }

    /// Buffer `slot`'s host mapping (address, bytes), where its memory is host-visible: read
    /// frame f there after [`Frames::wait_ready_host`]`(f)` and before
    /// [`Frames::release_host`]`(f)`.
    pub fn host_bytes(&self, slot: usize) -> Option<(*mut u8, usize)> {
        let (w, h) = self.extent();
        self.host.get(slot).copied().flatten().map(|a| (a as *mut u8, w as usize * h as usize * 4))
    }

    /// Host-wait until frame `frame`'s copy is done (`ready` ≥ frame+1, a value Vulkan
    /// signals).
    pub fn wait_ready_host(&self, frame: u64) -> Result<(), EmbedError> {
        self.check_rendered(frame)?;
        let ctx = &self.offscreen.session.ctx;
        ctx.wait_timeline(self.ready.handle, frame + 1, || {
            format!("'ready' ≥ {} (frame {frame}'s copy)", frame + 1)
        })
        .map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// Whether frame `frame`'s copy is done (`ready` ≥ frame+1), without waiting.
    pub fn is_ready(&self, frame: u64) -> Result<bool, EmbedError> {
        self.check_rendered(frame)?;
        let value = self.offscreen.session.ctx.timeline_value(self.ready.handle);
        Ok(value.map_err(|e| EmbedError::from_run(&e.into()))? > frame)
    }

    /// The host consumer has finished reading frame `frame`: signal `released` = frame+1 (a
    /// frame released already, or an earlier one, is a no-op).
    pub fn release_host(&self, frame: u64) -> Result<(), EmbedError> {
        self.check_rendered(frame)?;
        let ctx = &self.offscreen.session.ctx;
        let signal = || -> Result<(), VkError> {
            if ctx.timeline_value(self.released.handle)? < frame + 1 {
                ctx.signal_timeline(self.released.handle, frame + 1)?;
            }
            Ok(())
        };
        signal().map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// The interop crate's device the frames are on (its `uuid()` opens CUDA on the same GPU).
    pub fn vulkan_device(&self) -> Result<&vkhip_interop::vulkan::Device, EmbedError> {
        self.offscreen.session.ctx.interop().map_err(|e| EmbedError::from_run(&e.into()))
    }

    /// `frame` was rendered (waiting for or releasing a later one would wait forever).
    fn check_rendered(&self, frame: u64) -> Result<(), EmbedError> {
        if frame >= self.next {
            return Err(EmbedError::Unsupported(format!(
                "frame {frame} was not rendered (the next is {})",
                self.next
            )));
        }
        Ok(())
    }

    fn no_slot(&self, slot: usize) -> EmbedError {
        EmbedError::Unsupported(format!("no frame buffer {slot}: there are {}", self.buffers.len()))
    }
}

impl Drop for Frames {
    fn drop(&mut self) {
        let ctx = self.offscreen.session.ctx.clone();
        // The copies of the last K frames may wait for a `released` value no consumer will
        // signal now: let them go, or the queue never drains.
        let k = self.buffers.len() as u64;
        if self.next > k {
            let promised = self.next - k;
            match ctx.timeline_value(self.released.handle) {
                Ok(v) if v < promised => {
                    log::debug!("frames: releasing copies waiting for 'released' {promised} (reached {v})");
                    if let Err(e) = ctx.signal_timeline(self.released.handle, promised) {
                        log::warn!("frames: releasing the waiting copies failed: {e}");
                    }
                }
                Ok(_) => {}
                Err(e) => log::warn!("frames: reading 'released' failed: {e}"),
            }
        }
        if let Err(e) = self.offscreen.session.sync.shutdown() {
            log::warn!("frames: stopping the protocol failed: {e}");
        }
        if let Err(e) = ctx.queue_wait_idle() {
            log::warn!("frames: draining the queue failed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<Frames>();
        send::<FramesOptions>();
        send::<EmbedError>();
    }
}
