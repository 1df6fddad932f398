//! `vkhip.Device`: a Vulkan device and, on it, the compute API a framework uses (CUDA, HIP), or
//! the host where Vulkan's memory is host-visible (lavapipe, for tests without a GPU).

use crate::choose::Choice;
use crate::device_core::{Compute, DeviceCore};
use crate::errors::{invalid, IntoPy};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use vkhip_interop::cuda::Cuda;
use vkhip_interop::device_match::DeviceRequest;
use vkhip_interop::vulkan::{self, Importer, Submitter};

/// Open the device for `api` ("auto", "cuda", "hip", "host") and `device=` ([`Choice`]).
fn open(api: &str, choice: Choice) -> PyResult<DeviceCore> {
    let (compute, vk) = match api {
        "cuda" => open_cuda(choice.cuda_request(api)?)?,
        "host" => {
            choice.check_host()?;
            (Compute::Host, vulkan::Device::open(&[], Importer::Hip).py()?)
        }
        #[cfg(feature = "hip")]
        "hip" => open_hip(choice.cuda_request(api)?)?,
        #[cfg(not(feature = "hip"))]
        "hip" => {
            return Err(Python::attach(|py| {
                crate::errors::raise(py, "UnavailableError", "this vkhip was built without HIP: build it with --features hip (maturin build --features hip)")
            }))
        }
        "auto" => match choice {
            Choice::Cpu => (Compute::Host, vulkan::Device::open(&[], Importer::Hip).py()?),
            // A GPU named: that GPU or an error, never the host instead.
            Choice::Cuda(_) | Choice::CudaDefault => open_cuda(choice.cuda_request(api)?)?,
            Choice::Default => match open_cuda(None) {
                Ok(pair) => pair,
                Err(cuda_error) => {
                    log::info!("vkhip: no CUDA device ({cuda_error}); trying the host");
                    let vk = vulkan::Device::open(&[], Importer::Hip).py()?;
                    (Compute::Host, vk)
                }
            },
        },
        other => {
            let hint = if other.starts_with("cuda:") || other == "cpu" {
                format!(" (a device is chosen with device={other:?})")
            } else {
                String::new()
            };
            return Err(invalid(format!(
                "api {other:?}: expected \"auto\", \"cuda\", \"hip\" or \"host\"{hint}"
            )));
        }
    };
    let submitter = Mutex::new(Submitter::new(&vk).py()?);
    Ok(DeviceCore { submitter, compute, vk, closed: AtomicBool::new(false), profiler: Mutex::new(None) })
}

/// The CUDA device asked for (`None`: the current context's, else 0) and the Vulkan device with
/// its UUID.
fn open_cuda(want: Option<DeviceRequest>) -> PyResult<(Compute, vulkan::Device)> {
    let (vk, cuda) = Cuda::open_with_vulkan(want).py()?;
    Ok((Compute::Cuda(cuda), vk))
}

/// The HIP device of ordinal `want` (`None`: 0; HIP has no current-context lookup here) and the
/// Vulkan device with its UUID.
#[cfg(feature = "hip")]
fn open_hip(want: Option<DeviceRequest>) -> PyResult<(Compute, vulkan::Device)> {
    use vkhip_interop::device_match::{compute_position, ComputeDevice};
    let seen = vkhip_interop::hip::devices().py()?;
    let listed: Vec<ComputeDevice> =
        seen.iter().map(|d| ComputeDevice::new(d.ordinal, &d.name, d.uuid)).collect();
    let want = want.unwrap_or(DeviceRequest::Ordinal(0));
    let at =
        compute_position("HIP", want, &listed).map_err(|e| e.into_error(vkhip_interop::Api::Hip)).py()?;
    let vk = vulkan::Device::open_matching(&listed[at], Importer::Hip).py()?;
    let hip = vkhip_interop::hip::Hip::open(vk.uuid()).py()?;
    Ok((Compute::Hip(hip), vk))
}

/// A Vulkan device shared with the compute API PyTorch, CuPy and JAX use.
///
/// ``Device()`` opens the GPU the framework works on: the device of the CUDA context current on
/// this thread (``torch.cuda.set_device(n)``, ``cupy.cuda.Device(n).use()``), else CUDA device
/// 0, through its primary context (torch's, CuPy's and JAX's); where there is no CUDA device,
/// Vulkan on the host (host-visible memory, NumPy). ``device=`` names the GPU: an int or
/// ``"cuda:N"`` (a CUDA ordinal), or a ``torch.device``. Raises ``vkhip.InvalidError`` for a
/// ``device=`` it cannot read and ``vkhip.UnavailableError`` when no such device exists.
#[pyclass(module = "vkhip", frozen)]
pub struct Device {
    pub core: Arc<DeviceCore>,
}

#[pymethods]
impl Device {
    #[new]
    #[pyo3(signature = (api = "auto", *, device = None))]
    fn new(py: Python<'_>, api: &str, device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let choice = crate::choose::parse(device)?;
        // On this thread: the default is the CUDA context current here (the framework's).
        let core = py.detach(|| open(api, choice))?;
        Ok(Device { core: Arc::new(core) })
    }

    /// "cuda", "hip" or "host": who shares Vulkan's memory.
    #[getter]
    fn api(&self) -> &'static str {
        self.core.compute.api()
    }

    /// The Vulkan device and, where there is one, the compute device.
    #[getter]
    fn name(&self) -> String {
        match &self.core.compute {
            Compute::Host => self.core.vk.describe(),
            Compute::Cuda(c) => format!("{} = {}", self.core.vk.describe(), c.describe()),
            #[cfg(feature = "hip")]
            Compute::Hip(h) => format!("{} = {}", self.core.vk.describe(), h.describe()),
        }
    }

    /// Vulkan's deviceUUID, as hex with dashes.
    #[getter]
    fn uuid(&self) -> String {
        vulkan::uuid_string(&self.core.vk.uuid())
    }

    /// `__dlpack_device__` of the tensors this device makes: (1, 0) host, (2, n) CUDA, (10, n) ROCm.
    #[getter]
    fn dlpack_device(&self) -> (u32, i32) {
        crate::buffer::place(&self.core).pair()
    }

    /// A shared buffer of `shape` elements of `dtype`.
    #[pyo3(signature = (shape, dtype = None, *, name = None))]
    fn buffer(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        name: Option<String>,
    ) -> PyResult<crate::buffer::Buffer> {
        self.core.check_open("the device")?;
        crate::buffer::Buffer::create(py, &self.core, shape, dtype, name)
    }

    /// Whether ``close()`` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.core.closed.load(Ordering::Acquire)
    }

    /// Stop using the device: later calls on it and its buffers raise ``vkhip.ClosedError``.
    /// Memory a tensor still views stays alive until that tensor is gone.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        if self.core.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        py.detach(|| self.core.submitter.lock().unwrap_or_else(|p| p.into_inner()).finish()).py()
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
        self.close(py)
    }

    fn __repr__(&self) -> String {
        format!("vkhip.Device(api={:?}, name={:?})", self.api(), self.name())
    }
}
