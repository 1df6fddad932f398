//! The `device=` argument of `Device`, `Frames` and `view`: which GPU, named the way the
//! frameworks name it. One reading for the three; the opening is the interop crate's
//! (`Cuda::open_with_vulkan`: the CUDA ordinal's UUID, then the Vulkan device with it).
//!
//! Accepted: `None` (the device of the CUDA context current on the calling thread, what
//! `torch.cuda.set_device(n)` or `cupy.cuda.Device(n).use()` made current; else 0), an int `n`
//! (CUDA ordinal n, as this process numbers them after `CUDA_VISIBLE_DEVICES`), `"cuda"`,
//! `"cuda:n"`, `"cpu"` (the host path), or any object with `.type` and `.index` (a
//! `torch.device`; torch is never imported here). Anything else is `InvalidError`; a GPU the
//! machine does not have is `UnavailableError` (from the interop crate, naming what exists).

use crate::errors::{invalid, IntoPy};
use pyo3::prelude::*;
use pyo3::types::PyBool;
use vkhip::embed::Importer;
use vkhip_interop::device_match::DeviceRequest;

/// What `device=` asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Nothing named: the current context's device, else 0 (for CUDA); the host path as it is.
    Default,
    /// `"cuda"` / `torch.device("cuda")`: CUDA (an error without it), on the default device.
    CudaDefault,
    /// A CUDA ordinal.
    Cuda(i32),
    /// `"cpu"` / `torch.device("cpu")`: the host path.
    Cpu,
}

impl Choice {
    /// How the error messages name it.
    fn name(self) -> String {
        match self {
            Choice::Default => "None".to_string(),
            Choice::CudaDefault => "cuda".to_string(),
            Choice::Cuda(n) => format!("cuda:{n}"),
            Choice::Cpu => "cpu".to_string(),
        }
    }

    /// The CUDA device to open: `None` for the default (the interop crate's
    /// `cuda::default_device`), refused for the host.
    pub fn cuda_request(self, api: &str) -> PyResult<Option<DeviceRequest>> {
        match self {
            Choice::Default | Choice::CudaDefault => Ok(None),
            Choice::Cuda(n) => Ok(Some(DeviceRequest::Ordinal(n))),
            Choice::Cpu => Err(invalid(format!(
                "device=\"cpu\" with api={api:?}: the host path is api=\"host\" (or \"auto\")"
            ))),
        }
    }

    /// Refuse a GPU for the host path: there Vulkan's memory is read by the host, and no CUDA
    /// device is involved.
    pub fn check_host(self) -> PyResult<()> {
        match self {
            Choice::Default | Choice::Cpu => Ok(()),
            Choice::Cuda(_) | Choice::CudaDefault => Err(invalid(format!(
                "device={} with api=\"host\": the host path opens no CUDA device; choose a GPU with api=\"cuda\" (or \"auto\"), or leave device=None",
                self.name()
            ))),
        }
    }
}

const EXPECTED: &str =
    "expected None, an int (a CUDA ordinal), \"cuda\", \"cuda:N\", \"cpu\" or a torch.device";

fn describe(value: &Bound<'_, PyAny>) -> String {
    value.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
}

fn ordinal(value: &Bound<'_, PyAny>, n: i64) -> PyResult<Choice> {
    i32::try_from(n)
        .ok()
        .filter(|n| *n >= 0)
        .map(Choice::Cuda)
        .ok_or_else(|| invalid(format!("device={}: a CUDA ordinal is 0 or more", describe(value))))
}

fn from_str(value: &Bound<'_, PyAny>, s: &str) -> PyResult<Choice> {
    let bad = || invalid(format!("device={}: {EXPECTED}", describe(value)));
    match s.split_once(':') {
        None if s == "cuda" => Ok(Choice::CudaDefault),
        None if s == "cpu" => Ok(Choice::Cpu),
        Some(("cuda", n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            ordinal(value, n.parse::<i64>().map_err(|_| bad())?)
        }
        Some(("cpu", "0")) => Ok(Choice::Cpu),
        _ => Err(bad()),
    }
}

/// Read `device=`.
pub fn parse(value: Option<&Bound<'_, PyAny>>) -> PyResult<Choice> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(Choice::Default);
    };
    if value.is_instance_of::<PyBool>() {
        return Err(invalid(format!("device={}: {EXPECTED}", describe(value))));
    }
    if let Ok(n) = value.extract::<i64>() {
        return ordinal(value, n);
    }
    if let Ok(s) = value.extract::<String>() {
        return from_str(value, &s);
    }
    // A torch.device (or anything shaped like one): .type "cuda" / "cpu", .index int or None.
    if let (Ok(kind), Ok(index)) = (value.getattr("type"), value.getattr("index")) {
        if let Ok(kind) = kind.extract::<String>() {
            return match (kind.as_str(), index.is_none()) {
                ("cuda", true) => Ok(Choice::CudaDefault),
                ("cuda", false) => match index.extract::<i64>() {
                    Ok(n) => ordinal(value, n),
                    Err(_) => Err(invalid(format!("device={}: its index is not an int", describe(value)))),
                },
                ("cpu", _) => Ok(Choice::Cpu),
                (other, _) => Err(invalid(format!(
                    "device={}: a {other:?} device; vkhip shares memory with CUDA devices (or the host: \"cpu\")",
                    describe(value)
                ))),
            };
        }
    }
    Err(invalid(format!("device={}: {EXPECTED}", describe(value))))
}

/// Who reads the frames (`Frames`' and `view`'s `api=`) and, for CUDA, the ordinal of the GPU
/// to render on: the one `device=` names, else the current context's, else 0. `"auto"` is CUDA
/// where a CUDA device exists (and always when `device=` names a GPU: that GPU or an error,
/// never the host instead).
pub fn importer(api: &str, choice: Choice) -> PyResult<(Importer, Option<i32>)> {
    let cuda = |choice: Choice| -> PyResult<(Importer, Option<i32>)> {
        let want = match choice.cuda_request(api)? {
            Some(want) => want,
            None => vkhip_interop::cuda::default_device().py()?,
        };
        // The ordinal checked here, so that a missing GPU is the interop crate's error.
        let device = vkhip_interop::cuda::device(want).py()?;
        Ok((Importer::Cuda, Some(device.ordinal)))
    };
    match api {
        "cuda" => cuda(choice),
        "host" => choice.check_host().map(|()| (Importer::Host, None)),
        "auto" => match choice {
            Choice::Cpu => Ok((Importer::Host, None)),
            Choice::Cuda(_) | Choice::CudaDefault => cuda(choice),
            Choice::Default if vkhip_interop::cuda::devices().is_ok() => cuda(choice),
            Choice::Default => Ok((Importer::Host, None)),
        },
        other => Err(invalid(format!("api {other:?}: expected \"auto\", \"cuda\" or \"host\""))),
    }
}
