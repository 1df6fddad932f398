//! The crate's error type for capture: a failed device call (the interop crate's typed
//! [`vkhip_interop::Error`], which names the API, the call and its numeric status), or a request
//! the profiler refuses.

use std::error::Error as StdError;

/// What went wrong while profiling.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Vulkan, CUDA or HIP call failed, or the device cannot do what was asked.
    #[error(transparent)]
    Device(#[from] vkhip_interop::Error),
    /// The profiler refuses the request (a CUDA device that is not the profiler's Vulkan GPU, a
    /// queue family without timestamps, a track after `finish`): a bug in the caller.
    #[error("vkhip-profile: {0}")]
    Invalid(String),
    /// Writing or reading a file.
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// Whether this is the machine's fault (no driver, no GPU, a device without a feature), not
    /// the program's: the examples' "no usable device" exit.
    pub fn is_environment(&self) -> bool {
        match self {
            Error::Device(e) => e.is_environment(),
            Error::Invalid(_) | Error::Io { .. } => false,
        }
    }
}

/// Whether `e` (or what it wraps) is an environment error of this crate or of the interop crate:
/// what a program maps to "no usable device".
///
/// ```
/// use vkhip_interop::{Api, Error};
/// let e: Box<dyn std::error::Error> = Box::new(Error::unavailable(Api::Cuda, "", "libcuda.so not found"));
/// assert!(vkhip_profile::is_environment(e.as_ref()));
/// let e: Box<dyn std::error::Error> = Box::new(vkhip_profile::Error::Invalid("no".into()));
/// assert!(!vkhip_profile::is_environment(e.as_ref()));
/// ```
pub fn is_environment(e: &(dyn StdError + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<vkhip_interop::Error>() {
            return e.is_environment();
        }
        if let Some(e) = e.downcast_ref::<Error>() {
            return e.is_environment();
        }
        next = e.source();
    }
    false
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
