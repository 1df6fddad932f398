//! `vkhip.view`: the app's viewer with the height field written by a Python function each frame
//! (`vkhip::embed::view`). The function gets a :class:`Heights` — the slot, a DLPack producer
//! valid during the call — and the stream its work must go on; the app enqueues the wait before
//! and the signal after, so nothing waits on the host.

use crate::dlpack::{Dtype, Place, Tensor};
use crate::errors::invalid;
use crate::frames::embed_error;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use vkhip::embed::{HeightTarget, HeightWriter, Importer, ViewOptions, WriterApi, WriterError};
use vkhip::vk::device::DeviceArg;

/// One frame's heights: ``(rows, cols)`` float32 in the slot the app draws next, or ``(E, rows,
/// cols)`` with ``view(views=…)`` (environment e for view e; E = N, or 1 with ``envs=1``). Valid
/// during the writer's call only: its ``__dlpack__`` refuses afterwards, and a tensor kept past
/// the call views memory the app reuses (and frees when ``view`` returns).
#[pyclass(module = "vkhip", frozen)]
pub struct Heights {
    ptr: u64,
    place: Place,
    rows: u32,
    cols: u32,
    /// E with `views=` (the leading dimension), else None (2-D heights).
    envs: Option<u32>,
    /// The stream the writer's work must go on (CUDA), in DLPack's numbering.
    stream: Option<i64>,
    valid: Arc<AtomicBool>,
}

impl Heights {
    fn dims(&self) -> Vec<i64> {
        let mut dims = vec![i64::from(self.rows), i64::from(self.cols)];
        if let Some(e) = self.envs {
            dims.insert(0, i64::from(e));
        }
        dims
    }
}

#[pymethods]
impl Heights {
    /// ``(rows, cols)``, or ``(E, rows, cols)`` with ``view(views=…)``.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.dims())
    }

    /// The CUDA stream the app waits and signals on: enqueue the writes there (None: host).
    #[getter]
    fn stream(&self) -> Option<i64> {
        self.stream
    }

    fn __dlpack_device__(&self) -> (u32, i32) {
        self.place.pair()
    }

    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<i64>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(u32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        if !self.valid.load(Ordering::Acquire) {
            return Err(invalid("the heights were used after the writer's call returned"));
        }
        crate::dlpack::check_request("the heights", self.place, dl_device, copy)?;
        if let (Some(asked), Some(ours)) = (crate::dlpack::consumer_stream(stream), self.stream) {
            if asked != -1 && asked != ours {
                return Err(invalid(format!(
                    "the heights are ordered on stream {ours:#x}, not the consumer's {asked:#x}: pass stream= to vkhip.view() (e.g. torch.cuda.current_stream())"
                )));
            }
        }
        let tensor = Tensor {
            data: self.ptr as *mut std::ffi::c_void,
            place: self.place,
            dtype: Dtype::parse("float32").ok_or_else(|| invalid("float32"))?,
            shape: self.dims(),
            owner: Arc::new(()),
        };
        tensor.into_capsule(py, max_version.is_some_and(|(major, _)| major >= 1))
    }
}

/// The Python function as the app's writer.
struct PyWriter {
    write: Py<PyAny>,
    ordinal: i32,
    /// `views=` was given: the heights are `(E, rows, cols)`.
    batched: bool,
}

impl HeightWriter for PyWriter {
    fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
        let (ptr, place, rows, cols, envs, stream) = match target {
            HeightTarget::Host { heights, cols, rows, envs, .. } => {
                (heights.as_mut_ptr() as u64, Place::Cpu, rows, cols, envs, None)
            }
            HeightTarget::Cuda { ptr, stream, cols, rows, envs, .. } => {
                let s = stream as i64;
                (ptr, Place::Cuda(self.ordinal), rows, cols, envs, Some(if s == 0 { 1 } else { s }))
            }
        };
        let envs = self.batched.then_some(envs);
        Python::attach(|py| {
            let valid = Arc::new(AtomicBool::new(true));
            let heights = Heights { ptr, place, rows, cols, envs, stream, valid: valid.clone() };
            let result = py.check_signals().and_then(|()| self.write.call1(py, (frame, time_s, heights)));
            valid.store(false, Ordering::Release);
            result.map(|_| ()).map_err(|e| {
                let text = e.to_string();
                WriterError(format!("the writer raised {text}"))
            })
        })
    }
}

/// Run the app's viewer with ``write(frame, time_s, heights)`` writing the height field.
#[pyfunction]
#[pyo3(signature = (write, *, api = "auto", stream = None, grid = None, size = None, frames = None, slots = None, views = None, envs = None, headless = false, capture = None, trace = None, args = None, device = None))]
#[allow(clippy::too_many_arguments)]
pub fn view(
    py: Python<'_>,
    write: Py<PyAny>,
    api: &str,
    stream: Option<&Bound<'_, PyAny>>,
    grid: Option<(u32, u32)>,
    size: Option<(u32, u32)>,
    frames: Option<u64>,
    slots: Option<u32>,
    views: Option<i64>,
    envs: Option<i64>,
    headless: bool,
    capture: Option<std::path::PathBuf>,
    trace: Option<std::path::PathBuf>,
    args: Option<Vec<String>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<ViewResult> {
    if !write.bind(py).is_callable() {
        return Err(invalid("write must be callable: write(frame, time_s, heights)"));
    }
    let choice = crate::choose::parse(device)?;
    // A stream is CUDA's: with one, "auto" means CUDA.
    let api = if api == "auto" && stream.is_some() { "cuda" } else { api };
    let (importer, gpu) = crate::choose::importer(api, choice)?;
    let writer_api = match importer {
        Importer::Cuda => WriterApi::Cuda,
        Importer::Host => WriterApi::Host,
    };
    let mut flags: Vec<String> = Vec::new();
    let mut flag = |name: &str, value: String| flags.extend([name.to_string(), value]);
    if let Some((w, h)) = grid {
        flag("--grid", format!("{w}x{h}"));
    }
    if let Some((w, h)) = size {
        flag("--size", format!("{w}x{h}"));
    }
    if let Some(n) = frames {
        flag("--frames", n.to_string());
    }
    if let Some(k) = slots {
        flag("--slots", k.to_string());
    }
    let views = views.map(|n| crate::frames::count("views", n)).transpose()?;
    let envs = envs.map(|n| crate::frames::count("envs", n)).transpose()?;
    if envs.is_some() && views.is_none() {
        return Err(invalid("envs= without views=: give views=N (envs is N, or 1 to share one field)"));
    }
    if let Some(n) = views {
        // Each view its own environment unless envs=1 says they share one.
        flag("--views", n.to_string());
        flag("--envs", envs.unwrap_or(n).to_string());
    }
    if let Some(p) = &capture {
        flag("--capture", p.display().to_string());
    }
    if let Some(p) = &trace {
        flag("--trace", p.display().to_string());
    }
    if headless {
        flags.push("--headless".into());
    }
    flags.extend(args.unwrap_or_default());
    let mut options = ViewOptions::new(flags, writer_api);
    if let Some(n) = gpu {
        options = options.with_device(DeviceArg::Cuda(n));
    }
    if let Some(s) = stream {
        let number = crate::stream_number(s)?;
        crate::streams::check(number)?;
        // SAFETY: the caller's live stream (torch's, CuPy's) of the CUDA device; the app checks
        // it belongs to the device's context before enqueueing on it.
        options = unsafe { options.with_stream(number as u64) };
    }
    // The heights' DLPack device: the GPU the run is on.
    let ordinal = gpu.unwrap_or(0);
    let writer = Box::new(PyWriter { write, ordinal, batched: views.is_some() });
    let outcome = py.detach(|| vkhip::embed::view(&options, writer)).map_err(embed_error)?;
    Ok(ViewResult {
        report: outcome.report,
        capture: outcome.capture.map(|p| p.display().to_string()),
        frames: outcome.frames,
    })
}

/// What :func:`view` drew.
#[pyclass(module = "vkhip", frozen, get_all)]
pub struct ViewResult {
    /// The frame report, as ``vkhip`` prints it.
    pub report: String,
    /// The PNG written, if any.
    pub capture: Option<String>,
    /// Frames drawn.
    pub frames: u64,
}
