//! The viewer driven by a caller's writer: the app's run (window or headless, renderer, sync
//! protocol, report, trace, capture) with a [`HeightWriter`] in the compute backend's place.
//!
//! The writer becomes a backend through the app's own seam ([`MakeBackend`]): the run resolves
//! as `--backend cpu` (the [`WriterApi::Host`] path: host-mapped slots, `bridged`) or `--backend
//! cuda` (the [`WriterApi::Cuda`] path: exported slots and timelines imported by the interop
//! crate, `external` where the driver exports timelines), and `WriterBackend` calls the
//! writer where the sine wave's backend would write the slot.

use super::{parse_run, EmbedError};
use crate::app::session::{export_memory, export_semaphores, BackendParts, MakeBackend};
use crate::compute::{
    semaphore_ops, BackendKind, ComputeBackend, ComputeError, GpuSync, GpuSyncSupport, SemaphoreRef,
};
use crate::sim::{Grid, WaveParams};
use crate::sync::plan::MemoryPath;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use vkhip_interop::cuda::{Cuda, CudaBuffer, CudaSemaphore};
use vkhip_interop::FrameStream;

/// Where the writer puts frame f's heights: `(envs, rows, cols)` f32, C order (environment e
/// from element `e × rows × cols` on, row-major inside); `envs` is `--envs` (1 without it;
/// with `--views N --envs N` view i draws environment i). Match with `..`: fields may be added
/// (each variant is `#[non_exhaustive]`).
pub enum HeightTarget<'a> {
    /// The host path: the slot's heights through its persistent mapping (`envs × rows × cols`
    /// values).
    #[non_exhaustive]
    Host { heights: &'a mut [f32], cols: u32, rows: u32, envs: u32 },
    /// The CUDA path: the slot's device pointer (`envs × rows × cols` f32), and the stream the
    /// writer must enqueue on (the lent stream if the caller gave one, else the backend's). The
    /// wait for the slot's previous reader is already enqueued there, and the signal follows the
    /// writer's work.
    #[non_exhaustive]
    Cuda { ptr: u64, stream: u64, cols: u32, rows: u32, envs: u32 },
}

/// A writer's failure: its message becomes [`EmbedError::Writer`]'s.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct WriterError(pub String);

/// The caller's height field writer.
pub trait HeightWriter: Send {
    /// Write frame `frame` (scene time `time_s`, the time the sine wave would use) into
    /// `target`. On the CUDA path: enqueue only, never wait on the host.
    fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError>;
}

/// Which path the writer takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriterApi {
    /// The host writes each slot through a mapping (as `--backend cpu`).
    Host,
    /// CUDA kernels write each slot through imported memory (as `--backend cuda`).
    Cuda,
}

/// What [`view`] runs.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    /// The `vkhip` command's flags (`--headless`, `--frames`, `--grid`, `--size`, `--slots`,
    /// `--capture`, `--trace`, `--sync`, …), without the program name.
    pub args: Vec<String>,
    pub writer_api: WriterApi,
    stream: Option<u64>,
}

impl ViewOptions {
    pub fn new(args: impl IntoIterator<Item = impl Into<String>>, writer_api: WriterApi) -> Self {
        ViewOptions { args: args.into_iter().map(Into::into).collect(), writer_api, stream: None }
    }

    /// Run on `device` (`--device`: a Vulkan index, or the GPU of a CUDA ordinal); the CUDA
    /// writer's memory is then on that GPU.
    pub fn with_device(mut self, device: crate::vk::device::DeviceArg) -> Self {
        self.args.extend(["--device".to_string(), device.to_string()]);
        self
    }

    /// Enqueue the CUDA path's waits and signals on `stream`, a `CUstream` the caller owns
    /// (torch's current stream; DLPack's numbering: 0 and 1 the legacy default stream, 2 the
    /// per-thread one), instead of the backend's own.
    ///
    /// # Safety
    /// `stream` is one of those special values or a live `CUstream` of the device's primary
    /// context, and stays alive until [`view`] returns.
    pub unsafe fn with_stream(mut self, stream: u64) -> Self {
        self.stream = Some(stream);
        self
    }

    /// The lent stream, if any.
    pub fn stream(&self) -> Option<u64> {
        self.stream
    }
}

/// What [`view`] made.
#[derive(Clone, Debug)]
pub struct ViewOutcome {
    /// The frame report, as `vkhip` prints it.
    pub report: String,
    /// The PNG written (`--capture`, or `vkhip-frame.png` headless for want of a display).
    pub capture: Option<PathBuf>,
    /// Frames drawn.
    pub frames: u64,
}

/// Run the app's window (or headless run, where there is no display or with `--headless`) with
/// `writer` writing the height field each frame. Returns when the run ends: `--frames` reached,
/// the window closed, or an error ([`EmbedError::Writer`] when the writer failed).
pub fn view(options: &ViewOptions, writer: Box<dyn HeightWriter>) -> Result<ViewOutcome, EmbedError> {
    let mut run = parse_run(&options.args)?;
    if run.common.backend != BackendKind::Auto {
        return Err(EmbedError::Unsupported(format!(
            "--backend {}: the writer is the backend here (drop --backend)",
            run.common.backend
        )));
    }
    if MemoryPath::from(run.common.memory) == MemoryPath::Staged {
        return Err(EmbedError::Unsupported(
            "--memory staged: the writer writes the slots themselves".into(),
        ));
    }
    if options.stream.is_some() && options.writer_api != WriterApi::Cuda {
        return Err(EmbedError::Unsupported("a CUDA stream was lent to a host writer".into()));
    }
    run.common.backend = match options.writer_api {
        WriterApi::Host => BackendKind::Cpu,
        WriterApi::Cuda => {
            // Before any Vulkan object or window: no driver, no device is one line.
            crate::compute::cuda::probe().map_err(|e| EmbedError::from_compute(&e))?;
            BackendKind::Cuda
        }
    };
    // The caller's writer runs on the calling thread, whose current device and stream (torch's,
    // CuPy's) are the caller's: its hand-offs stay there, not on a submission thread.
    run.common.enqueue = crate::cli::EnqueueArg::Render;
    let failure = Arc::new(Mutex::new(None));
    let mut maker = WriterMaker { writer: Some(writer), stream: options.stream, failure: failure.clone() };
    let ran = crate::app::run_frames(run, Some(&mut maker));
    if let Some(message) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return Err(EmbedError::Writer(message));
    }
    let ran = ran.map_err(|e| EmbedError::from_run(&e))?;
    if let Some(e) = ran.failed {
        return Err(EmbedError::from_run(&e));
    }
    Ok(ViewOutcome { report: ran.report.unwrap_or_default(), capture: ran.capture, frames: ran.frames })
}

/// Builds the [`WriterBackend`] once the session has its slots and semaphores.
struct WriterMaker {
    writer: Option<Box<dyn HeightWriter>>,
    stream: Option<u64>,
    failure: Arc<Mutex<Option<String>>>,
}

impl MakeBackend for WriterMaker {
    fn make(&mut self, parts: BackendParts<'_>) -> Result<Box<dyn ComputeBackend>, ComputeError> {
        let writer = self.writer.take().ok_or_else(|| ComputeError::Unsupported {
            backend: "writer",
            reason: "the writer was given to an earlier session".into(),
        })?;
        let target = match parts.kind {
            BackendKind::Cpu => Side::Host(
                parts
                    .slots
                    .iter()
                    .map(|s| {
                        s.mapped().map(|p| (p, (s.size / 4) as usize)).ok_or_else(|| {
                            ComputeError::Unsupported {
                                backend: "writer",
                                reason: "slot memory is not host-mapped".into(),
                            }
                        })
                    })
                    .collect::<Result<_, _>>()?,
            ),
            BackendKind::Cuda => Side::Cuda(CudaSide::new(&parts, self.stream)?),
            other => {
                return Err(ComputeError::Unsupported {
                    backend: "writer",
                    reason: format!("no writer path for backend {other}"),
                })
            }
        };
        Ok(Box::new(WriterBackend { writer: Writer { writer, failure: self.failure.clone() }, side: target }))
    }
}

/// The CUDA side: the device, the imported slots and timelines, the lent stream's handle.
/// Field order is drop order: the imports first, then the handles (each import also waits for
/// the context before it goes).
struct CudaSide {
    buffers: Vec<CudaBuffer>,
    /// (computed, rendered), imported where the plan exported them (`external`).
    timeline: Option<(CudaSemaphore, CudaSemaphore)>,
    lent: Option<Cuda>,
    cuda: Cuda,
}

impl CudaSide {
    fn new(parts: &BackendParts<'_>, stream: Option<u64>) -> Result<Self, ComputeError> {
        let memory = export_memory(parts.slots)?;
        let semaphores =
            if parts.export_semaphores { export_semaphores(parts.sems)? } else { Default::default() };
        if !semaphores.binary.is_empty() {
            return Err(ComputeError::Unsupported {
                backend: "writer",
                reason: "--sync binary: the writer waits and signals the timelines only".into(),
            });
        }
        let cuda = Cuda::open(parts.device_uuid)?;
        let buffers = memory.into_iter().map(|m| cuda.import_buffer(m.into())).collect::<Result<_, _>>()?;
        let timeline = semaphores
            .timeline
            .map(|pair| {
                Ok::<_, vkhip_interop::Error>((
                    cuda.import_timeline(pair.computed)?,
                    cuda.import_timeline(pair.rendered)?,
                ))
            })
            .transpose()?;
        // SAFETY: `ViewOptions::with_stream`'s contract: the stream is live until `view` returns,
        // and this backend is dropped before that (with the session).
        let lent = stream.map(|s| unsafe { cuda.with_stream(s) }).transpose()?;
        Ok(CudaSide { buffers, timeline, lent, cuda })
    }

    /// The handle the writer's stream belongs to: the lent one, else the device's own.
    fn stream(&self) -> &Cuda {
        self.lent.as_ref().unwrap_or(&self.cuda)
    }
}

/// Where the writer's slots are.
enum Side {
    /// (mapping, floats) per slot; the mappings outlive the backend (the session's field order).
    Host(Vec<(*mut f32, usize)>),
    Cuda(CudaSide),
}

/// The caller's writer and where its failure goes.
struct Writer {
    writer: Box<dyn HeightWriter>,
    /// The writer's last failure, for [`view`]'s error.
    failure: Arc<Mutex<Option<String>>>,
}

impl Writer {
    /// The writer, once, for `frame`; its failure (or panic) is kept for [`view`].
    fn call(
        &mut self,
        frame: u64,
        params: &WaveParams,
        target: HeightTarget<'_>,
    ) -> Result<(), ComputeError> {
        let writer = &mut self.writer;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            writer.write(frame, params.time, target)
        }))
        .unwrap_or_else(|p| Err(WriterError(format!("the writer panicked: {}", panic_text(p.as_ref())))));
        outcome.map_err(|WriterError(message)| {
            *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
            ComputeError::Api { api: "writer", call: "write", message }
        })
    }
}

/// The caller's writer as a compute backend.
struct WriterBackend {
    side: Side,
    writer: Writer,
}

// SAFETY: the host pointers refer to persistent mappings owned by the session, which drops this
// backend first; the protocol gives one writer at a time for each slot. The writer is `Send`;
// the CUDA objects are `Send`.
unsafe impl Send for WriterBackend {}

impl CudaSide {
    /// Slot `slot`'s pointer and the writer's stream, for `envs` fields of `grid`.
    fn target(&self, slot: usize, grid: Grid, envs: u32) -> Result<HeightTarget<'static>, ComputeError> {
        let buffer = self.buffers.get(slot).ok_or_else(|| bad_slot(slot))?;
        let need = grid.bytes() * envs as u64;
        if buffer.size() < need {
            return Err(ComputeError::Unsupported {
                backend: "writer",
                reason: format!(
                    "slot holds {} bytes, {envs} environment(s) of the grid need {need}",
                    buffer.size()
                ),
            });
        }
        Ok(HeightTarget::Cuda {
            ptr: buffer.device_ptr(),
            stream: self.stream().stream(),
            cols: grid.width,
            rows: grid.height,
            envs,
        })
    }

    /// The imported timeline `r` refers to.
    fn timeline(&self, r: SemaphoreRef) -> Result<&CudaSemaphore, ComputeError> {
        match (&self.timeline, r) {
            (Some((computed, _)), SemaphoreRef::TimelineComputed) => Ok(computed),
            (Some((_, rendered)), SemaphoreRef::TimelineRendered) => Ok(rendered),
            _ => Err(ComputeError::Unsupported { backend: "writer", reason: format!("no semaphore {r:?}") }),
        }
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into())
}

fn host_only() -> ComputeError {
    ComputeError::Unsupported {
        backend: "writer",
        reason: "the host writer cannot wait or signal on the GPU".into(),
    }
}

fn bad_slot(slot: usize) -> ComputeError {
    ComputeError::Unsupported { backend: "writer", reason: format!("no slot {slot}") }
}

impl ComputeBackend for WriterBackend {
    fn kind(&self) -> BackendKind {
        match self.side {
            Side::Host(_) => BackendKind::Cpu,
            Side::Cuda(_) => BackendKind::Cuda,
        }
    }

    fn device_name(&self) -> String {
        match &self.side {
            Side::Host(_) => "the caller's writer on the host (through the slots' mappings)".into(),
            Side::Cuda(c) => format!(
                "the caller's writer on {} ({} stream)",
                c.cuda.describe(),
                if c.lent.is_some() { "the caller's" } else { "the backend's" }
            ),
        }
    }

    fn gpu_sync_support(&self) -> GpuSyncSupport {
        GpuSyncSupport { timeline: matches!(self.side, Side::Cuda(_)), binary: false }
    }

    fn enqueue_gpu_synced(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
        sync: GpuSync,
    ) -> Result<(), ComputeError> {
        let Side::Cuda(c) = &self.side else { return Err(host_only()) };
        let target = c.target(slot, params.grid, params.envs)?;
        let ops = semaphore_ops("writer", sync, c.timeline.is_some(), 0)?;
        if let Some(w) = ops.wait {
            c.stream().wait(c.timeline(w.semaphore)?, w.value)?;
        }
        self.writer.call(frame, params, target)?;
        if let Some(s) = ops.signal {
            c.stream().signal(c.timeline(s.semaphore)?, s.value)?;
        }
        Ok(())
    }

    fn write_slot_and_wait(
        &mut self,
        frame: u64,
        slot: usize,
        params: &WaveParams,
    ) -> Result<(), ComputeError> {
        let grid = params.grid;
        match &self.side {
            Side::Host(slots) => {
                let &(ptr, len) = slots.get(slot).ok_or_else(|| bad_slot(slot))?;
                let n = params.values();
                if n > len {
                    return Err(ComputeError::Unsupported {
                        backend: "writer",
                        reason: format!(
                            "slot holds {len} values, {} environment(s) of the grid need {n}",
                            params.envs
                        ),
                    });
                }
                // SAFETY: the mapping holds `len ≥ n` floats and the protocol gives this call the
                // slot alone now (its previous draw has finished: `rendered` was waited on).
                let heights = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
                self.writer.call(
                    frame,
                    params,
                    HeightTarget::Host { heights, cols: grid.width, rows: grid.height, envs: params.envs },
                )
            }
            Side::Cuda(c) => {
                self.writer.call(frame, params, c.target(slot, grid, params.envs)?)?;
                // CUDA's own wait (the stream), never a semaphore value.
                Ok(c.stream().synchronize()?)
            }
        }
    }

    fn finish(&mut self) -> Result<(), ComputeError> {
        match &self.side {
            Side::Host(_) => Ok(()),
            Side::Cuda(c) => Ok(c.stream().synchronize()?),
        }
    }
}
