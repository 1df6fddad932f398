//! `vkhip.Frames`: the app's renderer as a source of DLPack frames (`vkhip::embed::Frames`),
//! K in flight. Frame f's turn: Vulkan signals `ready` = f+1 once its copy into slot f mod K is
//! done; the consumer's `__dlpack__(stream=s)` enqueues the wait for that value on `s`; its
//! release signals `released` = f+1 on `s`, which Vulkan's copy into the slot K frames later
//! waits for. On the host (lavapipe) both are host operations on Vulkan's own timelines.

use crate::dlpack::{Dtype, Place, Tensor};
use crate::errors::{invalid, IntoPy};
use crate::stream_number;
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use std::sync::{Arc, Mutex, MutexGuard};
use vkhip::embed::{EmbedError, FrameInfo, FramesOptions, Importer};
use vkhip::vk::device::DeviceArg;
use vkhip_interop::cuda::{Cuda, CudaBuffer, CudaSemaphore};
use vkhip_interop::FrameStream;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The app's errors as exceptions: environment gaps are `UnavailableError`, a device limit
/// `LimitError` (naming the limit and the device's value), usage mistakes `InvalidError`.
pub fn embed_error(e: EmbedError) -> PyErr {
    let class = match &e {
        EmbedError::Limit { .. } => "LimitError",
        EmbedError::Environment(_) => "UnavailableError",
        EmbedError::Usage { .. } | EmbedError::Unsupported(_) | EmbedError::Help(_) => "InvalidError",
        _ => "Error",
    };
    Python::attach(|py| crate::errors::raise(py, class, e.to_string()))
}

/// CUDA's side of the frames: the slots and both timelines, imported (dropped before the
/// frames' Vulkan objects: [`FramesCore`]'s field order).
struct CudaSide {
    slots: Vec<CudaBuffer>,
    ready: CudaSemaphore,
    released: CudaSemaphore,
    cuda: Cuda,
}

/// Which frames are held by the consumer: frames are released in order.
#[derive(Default)]
struct Held {
    /// Every frame below this one has been released.
    next_release: u64,
}

pub struct FramesCore {
    cuda: Option<CudaSide>,
    held: Mutex<Held>,
    frames: Mutex<vkhip::embed::Frames>,
    width: u32,
    height: u32,
    slots: usize,
    /// N, the views of every frame.
    views: u32,
    /// `views=` was given: frames are `(N, H, W, 4)` (else `(H, W, 4)`, N = 1).
    batched: bool,
}

impl FramesCore {
    fn place(&self) -> Place {
        match &self.cuda {
            Some(c) => Place::Cuda(c.cuda.info().ordinal),
            None => Place::Cpu,
        }
    }
}

/// A count given from Python (`views=`, `envs=`): at least 1, as the app's u32.
pub fn count(what: &str, n: i64) -> PyResult<u32> {
    if n < 1 {
        return Err(invalid(format!("{what}={n}: at least 1")));
    }
    u32::try_from(n).map_err(|_| invalid(format!("{what}={n}: at most {}", u32::MAX)))
}

/// The app's renderer as a frame source: each ``render()`` draws the next frame offscreen and
/// copies it, on Vulkan's side, into one of ``slots`` shared buffers; the returned
/// :class:`Frame` is a DLPack producer of shape ``(height, width, 4)``, uint8 RGBA — or, with
/// ``views=N``, ``(N, height, width, 4)``: N cameras drawn in one submission, one hand-off.
#[pyclass(module = "vkhip", frozen)]
pub struct Frames {
    core: Arc<FramesCore>,
}

#[pymethods]
impl Frames {
    #[new]
    #[pyo3(signature = (*, size = (1280, 720), views = None, poses = None, envs = None, slots = 3, api = "auto", grid = None, args = None, device = None, gpu_times = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        size: (u32, u32),
        views: Option<i64>,
        poses: Option<&Bound<'_, PyAny>>,
        envs: Option<i64>,
        slots: usize,
        api: &str,
        grid: Option<(u32, u32)>,
        args: Option<Vec<String>>,
        device: Option<&Bound<'_, PyAny>>,
        gpu_times: bool,
    ) -> PyResult<Self> {
        let views = views.map(|n| count("views", n)).transpose()?;
        let envs = envs.map(|n| count("envs", n)).transpose()?;
        // Checked before the device is made: a bad array fails at once.
        let poses = poses.map(|p| crate::poses::from_python(p, views.unwrap_or(1))).transpose()?;
        let batched = views.is_some();
        let choice = crate::choose::parse(device)?;
        let (importer, gpu) = crate::choose::importer(api, choice)?;
        let mut flags = vec!["--size".to_string(), format!("{}x{}", size.0, size.1)];
        if let Some((w, h)) = grid {
            flags.extend(["--grid".to_string(), format!("{w}x{h}")]);
        }
        flags.extend(args.unwrap_or_default());
        let mut options = FramesOptions::new(flags, slots, importer);
        if let Some(n) = gpu {
            options = options.with_device(DeviceArg::Cuda(n));
        }
        if let Some(n) = views {
            options = options.with_views(n);
        }
        if let Some(e) = envs {
            options = options.with_envs(e);
        }
        if gpu_times {
            options = options.with_gpu_times();
        }
        let core = py.detach(|| -> PyResult<FramesCore> {
            let mut frames = vkhip::embed::Frames::new(&options).map_err(embed_error)?;
            if let Some(p) = &poses {
                frames.set_poses(p).map_err(embed_error)?;
            }
            let (width, height) = frames.extent();
            let cuda = match importer {
                Importer::Host => None,
                Importer::Cuda => {
                    let vk = frames.vulkan_device().map_err(embed_error)?;
                    let cuda = Cuda::open(vk.uuid()).py()?;
                    let mut imported = Vec::with_capacity(frames.slots());
                    for s in 0..frames.slots() {
                        imported.push(cuda.import_buffer(frames.slot_memory(s).map_err(embed_error)?).py()?);
                    }
                    let (ready, released) = frames.timeline_fds().map_err(embed_error)?;
                    Some(CudaSide {
                        slots: imported,
                        ready: cuda.import_timeline(ready).py()?,
                        released: cuda.import_timeline(released).py()?,
                        cuda,
                    })
                }
            };
            let slots = frames.slots();
            let views = frames.views();
            Ok(FramesCore {
                cuda,
                held: Mutex::new(Held::default()),
                frames: Mutex::new(frames),
                width,
                height,
                slots,
                views,
                batched,
            })
        })?;
        Ok(Frames { core: Arc::new(core) })
    }

    /// (width, height) in pixels.
    #[getter]
    fn size(&self) -> (u32, u32) {
        (self.core.width, self.core.height)
    }

    /// K: the frames that can be in flight.
    #[getter]
    fn slots(&self) -> usize {
        self.core.slots
    }

    /// N: the cameras of every frame (1 without ``views=``).
    #[getter]
    fn views(&self) -> u32 {
        self.core.views
    }

    /// E: the height fields (environments); view i sees field i when E = N, field 0 when E = 1.
    #[getter]
    fn envs(&self) -> u32 {
        lock(&self.core.frames).envs()
    }

    /// The views' cameras now: N rows of ``[ex, ey, ez, tx, ty, tz, ux, uy, uz, fov_y_deg]``
    /// (eye, target, up, vertical field of view in degrees; y up, the surface spans [-1, 1] in x
    /// and z). ``numpy.array(frames.poses, dtype=numpy.float32)`` gives the ``(N, 10)`` array.
    #[getter]
    fn poses(&self) -> Vec<[f32; crate::poses::POSE_FLOATS]> {
        lock(&self.core.frames).poses().iter().map(crate::poses::row_of).collect()
    }

    /// Set every view's camera from an ``(N, 10)`` array of floats (NumPy, torch — a CUDA tensor
    /// is copied to the host —, CuPy, JAX, or a list of lists), rows as :attr:`poses`; used from
    /// the next ``render()`` on. Nothing changes on an error.
    fn set_poses(&self, poses: &Bound<'_, PyAny>) -> PyResult<()> {
        let poses = crate::poses::from_python(poses, self.core.views)?;
        lock(&self.core.frames).set_poses(&poses).map_err(embed_error)
    }

    /// The default cameras for ``n`` views, as :attr:`poses`: the app's orbit camera at ``n``
    /// evenly spaced azimuths (view 0 is the app's one camera).
    #[staticmethod]
    fn default_poses(n: i64) -> PyResult<Vec<[f32; crate::poses::POSE_FLOATS]>> {
        let n = count("n", n)?;
        Ok(vkhip::embed::Frames::default_poses(n).iter().map(crate::poses::row_of).collect())
    }

    /// Vulkan's GPU time for the frames rendered so far (draw and copy: the raster limit), or
    /// None where the device has no timestamps. Reads what has finished; waits for nothing.
    fn gpu_times(&self) -> PyResult<Option<GpuTimes>> {
        let times = lock(&self.core.frames).gpu_times().map_err(embed_error)?;
        Ok(times.map(|t| GpuTimes {
            frames: t.frames,
            draw_ns_p50: t.draw_ns_p50,
            copy_ns_p50: t.copy_ns_p50,
            raster_ns_p50: t.raster_ns_p50,
        }))
    }

    /// ``__dlpack_device__`` of the frames.
    #[getter]
    fn dlpack_device(&self) -> (u32, i32) {
        self.core.place().pair()
    }

    /// Draw the next frame and copy it into its slot (Vulkan's GPU work only: returns at once).
    /// Refused while the frame that last used the slot (K frames ago) is not released.
    fn render(&self, py: Python<'_>) -> PyResult<Frame> {
        let core = &self.core;
        let next = lock(&core.frames).rendered();
        let held = lock(&core.held).next_release;
        if next >= held + core.slots as u64 {
            return Err(invalid(format!(
                "frame {held} still holds slot {}: release it (leave its `with` block, or frame.release(stream)) before rendering {} frames ahead",
                held % core.slots as u64,
                core.slots
            )));
        }
        let info = py.detach(|| lock(&core.frames).render()).map_err(embed_error)?;
        Ok(Frame { core: core.clone(), info, stream: Mutex::new(None), released: Mutex::new(false) })
    }
}

/// Vulkan's GPU time per frame (medians, ns): the draw's command buffer (the clear and every
/// view), the copy into the shared buffer, and both (``raster_ns_p50``: N views in that time is
/// the GPU's raster limit, the frame with no hand-off).
#[pyclass(module = "vkhip", frozen, get_all)]
pub struct GpuTimes {
    /// Frames measured.
    pub frames: u64,
    pub draw_ns_p50: f64,
    pub copy_ns_p50: f64,
    pub raster_ns_p50: f64,
}

/// One rendered frame: a DLPack producer of ``(height, width, 4)`` uint8 (RGBA), or ``(N,
/// height, width, 4)`` with ``views=N``, in Vulkan's shared memory. Take it
/// (``torch.from_dlpack(frame)``), then release it (``with frame:``).
#[pyclass(module = "vkhip", frozen)]
pub struct Frame {
    core: Arc<FramesCore>,
    info: FrameInfo,
    stream: Mutex<Option<i64>>,
    released: Mutex<bool>,
}

impl Frame {
    /// The tensor's shape (`shape`).
    fn dims(&self) -> Vec<i64> {
        let mut dims = vec![i64::from(self.info.height), i64::from(self.info.width), 4];
        if self.core.batched {
            dims.insert(0, i64::from(self.core.views));
        }
        dims
    }
}

#[pymethods]
impl Frame {
    /// The frame number (0, 1, …).
    #[getter]
    fn index(&self) -> u64 {
        self.info.frame
    }

    /// The shared buffer it is in (index mod K).
    #[getter]
    fn slot(&self) -> usize {
        self.info.slot
    }

    /// N: the views in it.
    #[getter]
    fn views(&self) -> u32 {
        self.core.views
    }

    /// ``(N, height, width, 4)`` with ``views=``, else ``(height, width, 4)``.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.dims())
    }

    fn __dlpack_device__(&self) -> (u32, i32) {
        self.core.place().pair()
    }

    /// DLPack: the frame's pixels. On CUDA, the wait for Vulkan's copy is enqueued on
    /// ``stream`` (the consumer's; -1: none); on the host, this waits for it.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let core = &self.core;
        if *lock(&self.released) {
            return Err(invalid(format!("frame {} was released: render a new one", self.info.frame)));
        }
        let here = core.place();
        crate::dlpack::check_request(&format!("frame {}", self.info.frame), here, dl_device, copy)?;
        let stream = crate::dlpack::consumer_stream(stream);
        let data = py.detach(|| -> PyResult<u64> {
            match &core.cuda {
                Some(side) => {
                    let s = stream.unwrap_or(1);
                    if s != -1 {
                        let on = crate::streams::lend(&side.cuda, s)?;
                        on.wait(&side.ready, self.info.ready_value).py()?;
                    }
                    Ok(side.slots[self.info.slot].device_ptr())
                }
                None => {
                    if stream.is_some_and(|s| s != -1) {
                        return Err(PyBufferError::new_err("host frames: a CPU consumer passes stream=None"));
                    }
                    let frames = lock(&core.frames);
                    frames.wait_ready_host(self.info.frame).map_err(embed_error)?;
                    let (p, _) = frames
                        .host_bytes(self.info.slot)
                        .ok_or_else(|| invalid("the frames' memory is not host-visible"))?;
                    Ok(p as u64)
                }
            }
        })?;
        *lock(&self.stream) = stream;
        let tensor = Tensor {
            data: data as *mut std::ffi::c_void,
            place: here,
            dtype: Dtype::parse("uint8").ok_or_else(|| invalid("uint8"))?,
            shape: self.dims(),
            owner: core.clone(),
        };
        tensor.into_capsule(py, max_version.is_some_and(|(major, _)| major >= 1))
    }

    /// End the consumer's turn on ``stream`` (default: the one given to ``__dlpack__``): Vulkan's
    /// copy into this slot K frames later waits for it on the GPU. Frames are released in order.
    #[pyo3(signature = (stream = None))]
    fn release(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let stream = stream.map(stream_number).transpose()?;
        let mut released = lock(&self.released);
        if *released {
            return Ok(());
        }
        let core = &self.core;
        let mut held = lock(&core.held);
        if held.next_release != self.info.frame {
            return Err(invalid(format!(
                "frame {} released before frame {}: release frames in the order they were rendered",
                self.info.frame, held.next_release
            )));
        }
        let s = stream.or(*lock(&self.stream)).unwrap_or(1);
        py.detach(|| -> PyResult<()> {
            match &core.cuda {
                Some(side) => {
                    if s == -1 {
                        return Err(invalid("release on stream -1: pass the stream the frame was used on"));
                    }
                    let on = crate::streams::lend(&side.cuda, s)?;
                    on.signal(&side.released, self.info.ready_value).py()
                }
                None => lock(&core.frames).release_host(self.info.frame).map_err(embed_error),
            }
        })?;
        held.next_release += 1;
        *released = true;
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.release(py, None)
    }
}
