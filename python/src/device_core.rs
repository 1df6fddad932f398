//! What a device's objects share ([`DeviceCore`]): the Vulkan device, who shares its memory
//! besides Vulkan ([`Compute`]), the submitter and the profiler attached. Below the Python
//! classes (`device`, `buffer`, `profile`), which all name it.

use crate::errors::closed;
use crate::recorder::ProfilerCore;
use pyo3::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use vkhip_interop::cuda::Cuda;
use vkhip_interop::vulkan::{self, Submitter};

/// Who reads and writes the memory besides Vulkan.
pub enum Compute {
    /// The host, through a mapping of Vulkan's (host-visible) memory.
    Host,
    Cuda(Cuda),
    #[cfg(feature = "hip")]
    Hip(vkhip_interop::hip::Hip),
}

impl Compute {
    pub fn api(&self) -> &'static str {
        match self {
            Compute::Host => "host",
            Compute::Cuda(_) => "cuda",
            #[cfg(feature = "hip")]
            Compute::Hip(_) => "hip",
        }
    }
}

/// What a device's objects share (fields drop in order: Vulkan's work in flight first, then
/// the compute side, then the Vulkan device).
pub struct DeviceCore {
    pub submitter: Mutex<Submitter>,
    pub compute: Compute,
    pub vk: vulkan::Device,
    pub closed: AtomicBool,
    /// The profiler attached to this device, if any (`vkhip.Profiler(device)`).
    pub profiler: Mutex<Option<Arc<ProfilerCore>>>,
}

impl DeviceCore {
    /// Refuse use after `close()`.
    pub fn check_open(&self, what: &str) -> PyResult<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(closed(what));
        }
        Ok(())
    }

    /// The CUDA device ordinal or 0, for DLPack.
    pub fn ordinal(&self) -> i32 {
        match &self.compute {
            Compute::Host => 0,
            Compute::Cuda(c) => c.info().ordinal,
            #[cfg(feature = "hip")]
            Compute::Hip(h) => h.info().ordinal,
        }
    }

    pub fn profiler(&self) -> Option<Arc<ProfilerCore>> {
        self.profiler.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
