//! CUDA backend (NVIDIA): placeholder until the CUDA issue lands.
use super::{ComputeDeviceInfo, ComputeError};

/// Devices the CUDA driver can see.
pub fn probe() -> Result<Vec<ComputeDeviceInfo>, ComputeError> {
    Err(ComputeError::Unavailable { backend: "cuda", reason: "not built yet".into() })
}
