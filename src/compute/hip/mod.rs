//! HIP backend: placeholder until the HIP branch lands.
