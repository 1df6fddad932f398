//! The crates' errors as the Python exceptions of `vkhip._errors`, chosen in one place
//! ([`class_for`]); the message is the crate's one line.

use pyo3::prelude::*;
use vkhip_interop::ErrorKind;

/// The name of the `vkhip` exception class for an interop error.
pub fn class_for(e: &vkhip_interop::Error) -> &'static str {
    if e.limit().is_some() {
        return "LimitError";
    }
    if e.is_environment() {
        // No driver, no device, a feature the machine lacks (a "no device" status included).
        return "UnavailableError";
    }
    match e.kind() {
        ErrorKind::Unavailable | ErrorKind::Unsupported => "UnavailableError",
        ErrorKind::Invalid => "InvalidError",
        ErrorKind::Timeout => "WaitTimeoutError",
        _ => "Error",
    }
}

/// An exception of class `class` (of `vkhip._errors`) with `message`.
pub fn raise(py: Python<'_>, class: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    match py.import("vkhip._errors").and_then(|m| m.getattr(class)) {
        Ok(cls) => PyErr::from_value(match cls.call1((message.clone(),)) {
            Ok(v) => v,
            Err(e) => return e,
        }),
        Err(_) => pyo3::exceptions::PyRuntimeError::new_err(message),
    }
}

/// `vkhip.InvalidError(message)`: the caller passed something refused.
pub fn invalid(message: impl Into<String>) -> PyErr {
    Python::attach(|py| raise(py, "InvalidError", message))
}

/// `vkhip.ClosedError`: `what` was used after `close()`.
pub fn closed(what: &str) -> PyErr {
    Python::attach(|py| raise(py, "ClosedError", format!("{what} was used after close()")))
}

/// The interop error as its exception.
pub fn interop(e: vkhip_interop::Error) -> PyErr {
    Python::attach(|py| raise(py, class_for(&e), e.to_string()))
}

/// The profiler's error as its exception.
pub fn profile(e: vkhip_profile::Error) -> PyErr {
    match e {
        vkhip_profile::Error::Device(e) => interop(e),
        vkhip_profile::Error::Invalid(m) => invalid(m),
        other => Python::attach(|py| raise(py, "Error", other.to_string())),
    }
}

/// `.map_err(to_py)` for interop results.
pub trait IntoPy<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, vkhip_interop::Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(interop)
    }
}

impl<T> IntoPy<T> for Result<T, vkhip_profile::Error> {
    fn py(self) -> PyResult<T> {
        self.map_err(profile)
    }
}
