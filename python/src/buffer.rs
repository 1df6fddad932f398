//! `vkhip.Buffer`: one shared buffer, a DLPack producer on both sides of the protocol.
//!
//! The turns ([`vkhip_interop::Turns`]): Vulkan's work on the buffer (`vulkan_fill`,
//! `vulkan_write`, `vulkan_read`) waits for the consumer's last release and signals the
//! `vulkan` timeline; `__dlpack__(stream=s)` enqueues, on the consumer's stream `s`, the wait for
//! Vulkan's last value; `release(stream=s)` (or leaving `with buffer:`) enqueues the signal of
//! the `consumer` timeline on `s`. Both waits are on the GPU. On the host (lavapipe) and on HIP
//! (no semaphore import on Linux) the hand-off is on the host: the consumer's turn starts once
//! Vulkan's submissions have finished (their fences).

use crate::device_core::{Compute, DeviceCore};
use crate::dlpack::{Dtype, Place, Tensor};
use crate::errors::{invalid, IntoPy};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyTuple};
use std::sync::{Arc, Mutex};
use vkhip_interop::cuda::{CudaBuffer, CudaSemaphore};
use vkhip_interop::vulkan::{SharedBuffer, SharedSemaphore};
use vkhip_interop::{FrameStream, Turns};

/// The CUDA side of a buffer: its mapping and the two timelines, imported.
struct CudaSide {
    buffer: CudaBuffer,
    vulkan_done: CudaSemaphore,
    consumer_done: CudaSemaphore,
}

/// The two timelines on Vulkan's side.
struct Timelines {
    vulkan_done: SharedSemaphore,
    consumer_done: SharedSemaphore,
}

/// The turns, and the stream the consumer took the buffer on last (for `release()`).
#[derive(Default)]
struct State {
    turns: Turns,
    stream: Option<i64>,
}

/// What a buffer's tensors keep alive. Fields drop in order: the compute side's imports, then
/// the timelines, then the Vulkan buffer, then the device.
pub struct BufferCore {
    cuda: Option<CudaSide>,
    #[cfg(feature = "hip")]
    hip: Option<vkhip_interop::hip::HipBuffer>,
    timelines: Option<Timelines>,
    buffer: SharedBuffer,
    device: Arc<DeviceCore>,
    state: Mutex<State>,
    /// The address a tensor sees: a device pointer (CUDA, HIP) or the host mapping.
    data: u64,
    shape: Vec<i64>,
    dtype: Dtype,
    name: String,
}

impl Drop for BufferCore {
    fn drop(&mut self) {
        // Vulkan's submissions that use the buffer end first (a wait on Vulkan's own fences).
        let mut submitter = self.device.submitter.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(e) = submitter.finish() {
            log::warn!("vkhip: waiting for Vulkan before freeing {}: {e}", self.name);
        }
    }
}

/// Where a device's tensors live.
pub fn place(device: &DeviceCore) -> Place {
    match &device.compute {
        Compute::Host => Place::Cpu,
        Compute::Cuda(_) => Place::Cuda(device.ordinal()),
        #[cfg(feature = "hip")]
        Compute::Hip(_) => Place::Rocm(device.ordinal()),
    }
}

/// A shape from an int or a sequence of ints, each ≥ 1.
fn parse_shape(shape: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    let dims: Vec<i64> = match shape.extract::<i64>() {
        Ok(n) => vec![n],
        Err(_) => shape.extract::<Vec<i64>>().map_err(|_| {
            invalid(format!(
                "shape {}: expected an int or a sequence of ints",
                shape.repr().map_or("?".into(), |r| r.to_string())
            ))
        })?,
    };
    if dims.is_empty() || dims.iter().any(|&d| d < 1) {
        return Err(invalid(format!("shape {dims:?}: every dimension must be at least 1")));
    }
    Ok(dims)
}

/// A dtype from a name or any object that prints as one (numpy.float32, torch.float32, …).
fn parse_dtype(dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Dtype> {
    let Some(dtype) = dtype else { return Ok(crate::dlpack::DTYPES[0]) };
    let name = match dtype.extract::<String>() {
        Ok(s) => s,
        Err(_) => {
            // numpy.dtype('float32').name, numpy.float32.__name__, str(torch.float32).
            let attr = |a: &str| dtype.getattr(a).ok().and_then(|n| n.extract::<String>().ok());
            match attr("name").or_else(|| attr("__name__")) {
                Some(n) => n,
                None => dtype.str()?.to_string(),
            }
        }
    };
    Dtype::parse(&name).ok_or_else(|| {
        let known: Vec<&str> = crate::dlpack::DTYPES.iter().map(|d| d.name).collect();
        invalid(format!("dtype {name:?}: expected one of {}", known.join(", ")))
    })
}

/// The 32-bit word a fill of `dtype` with `value` repeats, or why it cannot.
fn fill_word(dtype: Dtype, value: &Bound<'_, PyAny>) -> PyResult<u32> {
    let int = || -> PyResult<i64> {
        value.extract::<i64>().map_err(|_| invalid(format!("a fill of {} takes an int", dtype.name)))
    };
    let in_range = |v: i64, lo: i64, hi: i64| {
        if v < lo || v > hi {
            Err(invalid(format!("{v} does not fit {}", dtype.name)))
        } else {
            Ok(v)
        }
    };
    Ok(match dtype.name {
        "float32" => (value.extract::<f64>()? as f32).to_bits(),
        "bfloat16" => {
            let half = (value.extract::<f64>()? as f32).to_bits() >> 16;
            half | (half << 16)
        }
        "uint8" | "int8" => {
            let v =
                if dtype.name == "uint8" { in_range(int()?, 0, 255)? } else { in_range(int()?, -128, 127)? };
            u32::from_ne_bytes([v as u8; 4])
        }
        "uint16" | "int16" => {
            let v = if dtype.name == "uint16" {
                in_range(int()?, 0, 65535)?
            } else {
                in_range(int()?, -32768, 32767)?
            };
            let h = v as u16 as u32;
            h | (h << 16)
        }
        "uint32" => in_range(int()?, 0, u32::MAX as i64)? as u32,
        "int32" => in_range(int()?, i32::MIN as i64, i32::MAX as i64)? as i32 as u32,
        _ => {
            let zero = value.extract::<f64>().is_ok_and(|v| v == 0.0);
            if !zero {
                return Err(invalid(format!(
                    "Vulkan fills 32-bit words: a {} buffer can be filled with 0 only",
                    dtype.name
                )));
            }
            0
        }
    })
}

impl BufferCore {
    fn cuda(&self) -> Option<(&vkhip_interop::cuda::Cuda, &CudaSide)> {
        match (&self.device.compute, &self.cuda) {
            (Compute::Cuda(c), Some(side)) => Some((c, side)),
            _ => None,
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Vulkan's turn: the waits and the signal of its submission (GPU-side in CUDA mode: the
    /// consumer's last release, and Vulkan's own previous turn; none on the host, where the
    /// hand-off is the fence).
    fn vulkan_turn(&self) -> VulkanTurn<'_> {
        let mut st = self.state();
        let previous = st.turns.consumer_wait();
        let (wait, signal) = st.turns.vulkan_turn();
        drop(st);
        let Some(t) = &self.timelines else { return (Vec::new(), None, (wait, signal)) };
        let mut waits = Vec::new();
        if let Some(c) = wait {
            waits.push((&t.consumer_done, c));
        }
        if let Some(v) = previous {
            waits.push((&t.vulkan_done, v));
        }
        (waits, Some((&t.vulkan_done, signal)), (wait, signal))
    }
}

/// One Vulkan turn of a buffer: its submission's waits, its signal, and the values as
/// [`Turns::vulkan_turn`] gave them (the profiler's).
type VulkanTurn<'a> =
    (Vec<(&'a SharedSemaphore, u64)>, Option<(&'a SharedSemaphore, u64)>, (Option<u64>, u64));

/// A Vulkan buffer shared with the framework's GPU memory (CUDA), or with the host: a DLPack
/// producer (``torch.from_dlpack(buffer)``, ``cupy.from_dlpack``, ``jax.dlpack.from_dlpack``,
/// ``numpy.from_dlpack``: no copy).
#[pyclass(module = "vkhip", frozen)]
pub struct Buffer {
    core: Arc<BufferCore>,
}

impl Buffer {
    pub fn create(
        py: Python<'_>,
        device: &Arc<DeviceCore>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<Buffer> {
        let shape = parse_shape(shape)?;
        let dtype = parse_dtype(dtype)?;
        let elements = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        let bytes = elements.and_then(|n| n.checked_mul(u64::from(dtype.bytes))).ok_or_else(|| {
            invalid(format!("shape {shape:?} of {}: the size overflows 64 bits", dtype.name))
        })?;
        let name = name.unwrap_or_else(|| format!("buffer{}", next_id()));
        let core = py.detach(|| -> PyResult<BufferCore> {
            let buffer = device.vk.shared_buffer(bytes).py()?;
            let (cuda, timelines, data) = match &device.compute {
                Compute::Host => {
                    let p = buffer.host_ptr().py()?.ok_or_else(|| {
                        invalid(format!(
                            "{}: this device's shared memory is not host-visible; use a GPU API (Device(\"cuda\"))",
                            device.vk.describe()
                        ))
                    })?;
                    (None, None, p.as_ptr() as u64)
                }
                Compute::Cuda(cuda) => {
                    let imported = cuda.import_buffer(buffer.export().py()?).py()?;
                    let vulkan_done = device.vk.shared_timeline(0).py()?;
                    let consumer_done = device.vk.shared_timeline(0).py()?;
                    let side = CudaSide {
                        vulkan_done: cuda.import_timeline(vulkan_done.export().py()?).py()?,
                        consumer_done: cuda.import_timeline(consumer_done.export().py()?).py()?,
                        buffer: imported,
                    };
                    let data = side.buffer.device_ptr();
                    (Some(side), Some(Timelines { vulkan_done, consumer_done }), data)
                }
                #[cfg(feature = "hip")]
                Compute::Hip(_) => (None, None, 0),
            };
            #[cfg(feature = "hip")]
            let (hip, data) = match &device.compute {
                Compute::Hip(h) => {
                    let imported = h.import_buffer(buffer.export().py()?).py()?;
                    let p = imported.device_ptr();
                    (Some(imported), p)
                }
                _ => (None, data),
            };
            Ok(BufferCore {
                cuda,
                #[cfg(feature = "hip")]
                hip,
                timelines,
                buffer,
                device: device.clone(),
                state: Mutex::new(State::default()),
                data,
                shape,
                dtype,
                name,
            })
        })?;
        Ok(Buffer { core: Arc::new(core) })
    }
}

fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[pymethods]
impl Buffer {
    /// The shape, in elements.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.core.shape)
    }

    /// The element type's name ("float32", …).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.core.dtype.name
    }

    /// Bytes the elements take.
    #[getter]
    fn nbytes(&self) -> u64 {
        self.core.buffer.size()
    }

    /// The name profiles and errors use.
    #[getter]
    fn name(&self) -> &str {
        &self.core.name
    }

    /// The address a tensor sees (a CUDA device pointer, or the host mapping).
    #[getter]
    fn data_ptr(&self) -> u64 {
        self.core.data
    }

    /// The timeline values so far: (Vulkan's turns, the consumer's releases).
    #[getter]
    fn turns(&self) -> (u64, u64) {
        self.core.state().turns.taken()
    }

    fn __dlpack_device__(&self) -> (u32, i32) {
        place(&self.core.device).pair()
    }

    /// DLPack: a capsule viewing the buffer. ``stream`` is the consumer's stream (DLPack's
    /// numbering: None or 1 the legacy default stream, 2 the per-thread one, else a live
    /// ``cudaStream_t`` of the buffer's device; -1: do not synchronise): the wait for Vulkan's
    /// last write is enqueued there, on the GPU. A number that cannot be a stream is an
    /// ``InvalidError``. On the host, Vulkan's submissions are waited for first.
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
        core.device.check_open("the buffer's device")?;
        let here = place(&core.device);
        crate::dlpack::check_request(&core.name, here, dl_device, copy)?;
        let stream = crate::dlpack::consumer_stream(stream);
        py.detach(|| acquire(core, stream))?;
        let tensor = Tensor {
            data: core.data as *mut std::ffi::c_void,
            place: here,
            dtype: core.dtype,
            shape: core.shape.clone(),
            owner: core.clone(),
        };
        tensor.into_capsule(py, max_version.is_some_and(|(major, _)| major >= 1))
    }

    /// End the consumer's turn: on ``stream`` (default: the one ``__dlpack__`` was given last; a
    /// live stream of the buffer's device) enqueue the signal Vulkan's next use of the buffer
    /// waits for, on the GPU. On HIP, wait on the host for ``stream``'s work; on the host the
    /// turn simply ends. A refused stream ends no turn.
    #[pyo3(signature = (stream = None))]
    fn release(&self, py: Python<'_>, stream: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let stream = stream.map(crate::stream_number).transpose()?;
        self.core.device.check_open("the buffer's device")?;
        py.detach(|| release(&self.core, stream))
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

    /// Vulkan writes ``value`` into every element (``vkCmdFillBuffer``), after the consumer's
    /// last release, and returns at once (the consumer's next ``__dlpack__`` waits for it).
    fn vulkan_fill(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let core = &self.core;
        core.device.check_open("the buffer's device")?;
        let word = fill_word(core.dtype, value)?;
        let words = core.buffer.size() / 4;
        if words == 0 || core.buffer.size() % 4 != 0 {
            return Err(invalid(format!(
                "{}: {} bytes, not whole 32-bit words for a fill",
                core.name,
                core.buffer.size()
            )));
        }
        py.detach(|| {
            let (waits, signal, values) = core.vulkan_turn();
            let profiler = core.device.profiler();
            let mut scope =
                crate::recorder::VulkanScope::new(profiler.as_deref(), "vulkan_fill", &core.name, true);
            let mut submitter = core.device.submitter.lock().unwrap_or_else(|p| p.into_inner());
            // Up to two waits: the consumer's release and Vulkan's previous turn.
            let result = submitter
                .fill_buffer(&core.buffer, word, words, &waits, signal, &mut |cmd, e| scope.edge(cmd, e));
            scope.submitted(values);
            result.py()
        })
    }

    /// Vulkan copies ``data`` (bytes-like, at most ``nbytes``) into the start of the buffer,
    /// after the consumer's last release; returns when the copy is done.
    fn vulkan_write(&self, py: Python<'_>, data: &[u8]) -> PyResult<()> {
        let core = &self.core;
        core.device.check_open("the buffer's device")?;
        let data = data.to_vec();
        py.detach(|| {
            one_shot_turn(core, "vulkan_write", true, |wait, signal, around| {
                core.device.vk.write_buffer(&core.buffer, &data, wait, signal, around)
            })
        })
    }

    /// Vulkan copies the buffer to the host, after the consumer's last release, and returns
    /// the bytes (what Vulkan sees: a check that the framework's writes arrived).
    fn vulkan_read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let core = &self.core;
        core.device.check_open("the buffer's device")?;
        let bytes = py.detach(|| {
            one_shot_turn(core, "vulkan_read", false, |wait, signal, around| {
                core.device.vk.read_buffer_around(&core.buffer, wait, signal, around)
            })
        })?;
        Ok(PyBytes::new(py, &bytes))
    }

    fn __repr__(&self) -> String {
        format!(
            "vkhip.Buffer(name={:?}, shape={:?}, dtype={:?}, device={:?})",
            self.core.name,
            self.core.shape,
            self.core.dtype.name,
            place(&self.core.device).pair()
        )
    }
}

/// One of Vulkan's one-shot turns on the buffer (`op`, a write or a read): the host's hand-off
/// first where there is one; the one-shot submission waits on one semaphore, the consumer's
/// release, so Vulkan's previous turn is waited for on its fences when there was one; the
/// profiler's scope around the commands, and the submission and the host's wait for it recorded.
fn one_shot_turn<T>(
    core: &BufferCore,
    op: &'static str,
    writes: bool,
    submit: impl FnOnce(
        Option<(&SharedSemaphore, u64)>,
        Option<(&SharedSemaphore, u64)>,
        vkhip_interop::vulkan::Around<'_>,
    ) -> Result<T, vkhip_interop::Error>,
) -> PyResult<T> {
    finish_if_host(core)?;
    let (waits, signal, values) = core.vulkan_turn();
    let profiler = core.device.profiler();
    let mut scope = crate::recorder::VulkanScope::new(profiler.as_deref(), op, &core.name, writes);
    if waits.len() > 1 {
        core.device.submitter.lock().unwrap_or_else(|p| p.into_inner()).finish().py()?;
    }
    let result = submit(waits.first().copied(), signal, &mut |cmd, e| scope.edge(cmd, e));
    scope.submitted(values);
    scope.waited();
    result.py()
}

/// The host's hand-off: on the host and on HIP, Vulkan's submissions finish before the other
/// side's turn (their fences: Vulkan's own work).
fn finish_if_host(core: &BufferCore) -> PyResult<()> {
    if core.cuda.is_none() {
        core.device.submitter.lock().unwrap_or_else(|p| p.into_inner()).finish().py()?;
        if let Some(p) = core.device.profiler() {
            p.vulkan_idle();
        }
    }
    Ok(())
}

/// The consumer's turn begins on `stream`.
fn acquire(core: &BufferCore, stream: Option<i64>) -> PyResult<()> {
    match core.cuda() {
        Some((cuda, side)) => {
            let s = stream.unwrap_or(1);
            let wait = core.state().turns.consumer_wait();
            if s != -1 {
                let on = crate::streams::lend(cuda, s)?;
                if let Some(v) = wait {
                    on.wait(&side.vulkan_done, v).py()?;
                }
                if let Some(p) = core.device.profiler() {
                    p.stream_acquired(s, &core.name, wait);
                }
            }
            core.state().stream = Some(s);
            Ok(())
        }
        None => {
            if let Some(s) = stream.filter(|&s| s != -1) {
                if matches!(core.device.compute, Compute::Host) {
                    return Err(PyBufferError::new_err(format!(
                        "stream {s} given for host memory: a CPU consumer passes stream=None"
                    )));
                }
                // HIP: the stream release() synchronises, unless it is given another.
                crate::streams::check(s)?;
            }
            finish_if_host(core)?;
            core.state().stream = stream;
            Ok(())
        }
    }
}

/// The consumer's turn ends on `stream` (or the one it began on). The stream is checked (and,
/// on CUDA, lent) before the turn is counted: a refused stream leaves the buffer as it was.
fn release(core: &BufferCore, stream: Option<i64>) -> PyResult<()> {
    let mut st = core.state();
    let s = stream.or(st.stream).unwrap_or(1);
    if s == -1 && !matches!(core.device.compute, Compute::Host) {
        return Err(invalid(format!(
            "{}: release on stream -1 (unsynchronised): pass the stream the tensor was used on",
            core.name
        )));
    }
    let lent = match core.cuda() {
        Some((cuda, side)) => Some((crate::streams::lend(cuda, s)?, side)),
        None => {
            crate::streams::check(s)?;
            if matches!(core.device.compute, Compute::Host) && !matches!(s, -1 | 1) {
                return Err(invalid(format!(
                    "{}: release on stream {s}: host memory has no streams (release() or release(None))",
                    core.name
                )));
            }
            None
        }
    };
    let value = st.turns.consumer_release();
    drop(st);
    #[cfg(feature = "hip")]
    if let (Compute::Hip(h), Some(_)) = (&core.device.compute, &core.hip) {
        // No semaphore import on Linux: the consumer's work on its stream is waited for on the
        // host before the call returns (Vulkan's next turn waits for nothing on the GPU).
        crate::streams::hip_synchronize(h, s)?;
    }
    if let Some((on, side)) = lent {
        on.signal(&side.consumer_done, value).py()?;
        if let Some(p) = core.device.profiler() {
            p.stream_released(s, &core.name, value);
        }
    }
    Ok(())
}
