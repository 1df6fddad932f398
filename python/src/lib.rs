//! `vkhip._vkhip`: the Python door to vkhip. It translates types (shapes, dtypes, streams,
//! DLPack capsules), errors (the crates' one-line messages as `vkhip` exceptions) and lifetimes
//! (Python objects dying in any order); what it does is the crates': `vkhip_interop` (the
//! device, shared buffers, the hand-off on the framework's stream), `vkhip_profile` (tracks,
//! scopes, the checker) and the app's `vkhip::embed` (its renderer driven from Python).
//!
//! No panic crosses into Python: PyO3 turns one into `pyo3_runtime.PanicException` at every
//! entry, and the DLPack deleters, called from C, contain their own (`dlpack`).
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

mod buffer;
mod choose;
mod device;
mod device_core;
mod dlpack;
mod errors;
mod frames;
mod poses;
mod profile;
mod recorder;
mod streams;
mod viewer;

use pyo3::prelude::*;

/// The integer a stream is, in DLPack's numbering: an int as given, except 0 → 1 (both are the
/// legacy default stream: torch's default stream reports 0 and hands DLPack 1); ``None`` → 1; a ``torch.cuda.Stream`` (``.cuda_stream``), a ``cupy.cuda.Stream``
/// (``.ptr``), or any object with ``__cuda_stream__`` (the CUDA stream protocol: a
/// ``(version, handle)`` pair).
pub(crate) fn stream_number(stream: &Bound<'_, PyAny>) -> PyResult<i64> {
    if stream.is_none() {
        return Ok(1);
    }
    let legacy = |n: i64| dlpack::consumer_stream(Some(n)).unwrap_or(1);
    if let Ok(n) = stream.extract::<i64>() {
        return Ok(legacy(n));
    }
    if let Ok(protocol) = stream.call_method0("__cuda_stream__") {
        if let Ok((_, handle)) = protocol.extract::<(i64, i64)>() {
            return Ok(legacy(handle));
        }
    }
    for attr in ["cuda_stream", "ptr", "handle"] {
        if let Ok(n) = stream.getattr(attr).and_then(|v| v.extract::<i64>()) {
            return Ok(legacy(n));
        }
    }
    Err(errors::invalid(format!(
        "{}: not a stream (an int cudaStream_t, a torch.cuda.Stream, a cupy.cuda.Stream, or an object with __cuda_stream__)",
        stream.repr().map_or_else(|_| "?".to_string(), |r| r.to_string())
    )))
}

/// DLPack's numbering of the stream: for tests and tools (`vkhip.stream_number(torch_stream)`).
#[pyfunction(name = "stream_number")]
fn py_stream_number(stream: &Bound<'_, PyAny>) -> PyResult<i64> {
    stream_number(stream)
}

/// Whether a CUDA driver library loads here (no device needed).
#[pyfunction]
fn cuda_driver_present() -> bool {
    vkhip_interop::cuda::driver_present()
}

#[pymodule]
fn _vkhip(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<device::Device>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add_class::<profile::Profiler>()?;
    m.add_class::<profile::Stream>()?;
    m.add_class::<profile::Scope>()?;
    m.add_class::<profile::Capture>()?;
    m.add_class::<frames::Frames>()?;
    m.add_class::<frames::Frame>()?;
    m.add_class::<frames::GpuTimes>()?;
    m.add_class::<viewer::Heights>()?;
    m.add_class::<viewer::ViewResult>()?;
    m.add_function(wrap_pyfunction!(viewer::view, m)?)?;
    m.add_function(wrap_pyfunction!(py_stream_number, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_driver_present, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
