//! Start-up prewarm: the CUDA set-up that does not depend on Vulkan, run on a background thread
//! while Vulkan sets itself up.
//!
//! `--backend cuda` used to reach its first frame ≈ 0.3 s after `--backend vulkan`, because
//! `cuInit`, the primary-context retain and the kernel load (NVRTC on a cache miss) all ran after
//! the Vulkan set-up. [`prewarm`] starts (once per process) a thread that loads the driver,
//! enumerates the devices and, for each (or only the run's GPU, when known), opens it ([`Cuda::open`]: its primary context and the
//! stream its backend will use) and loads the kernel through the same cache as the backends.
//! [`take`] hands a backend the device and kernel:
//! it joins the thread first (so it waits at most for the work it would otherwise do itself) and
//! falls back to the normal path (returns `None`) on any prewarm failure, logged at debug level.
//!
//! Harmless without a driver: the thread finds no libcuda and ends. Deadlock-free: the thread
//! takes none of this module's locks, and [`take`] releases the handle's lock before joining.
//!
//! What prewarm got for a device nobody asks for stays open for the life of the process (a
//! primary context and an idle stream on each visible GPU, as a CUDA runtime application that
//! touched every device would hold).

use std::sync::{Mutex, MutexGuard, Once};
use std::thread::JoinHandle;
use std::time::Instant;

use super::{build_kernel, DeviceSetup, Result};
use crate::compute::ComputeError;
use std::sync::Arc;
use vkhip_interop::cuda::{self as interop, Cuda};

/// What the thread made: (device UUID, the device and its kernel).
type Warmed = Vec<([u8; 16], DeviceSetup)>;

static STARTED: Once = Once::new();
static THREAD: Mutex<Option<JoinHandle<Result<Warmed>>>> = Mutex::new(None);
static WARM: Mutex<Warmed> = Mutex::new(Vec::new());

/// A lock that survives a panic elsewhere (the data is only moved in and out whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `CUDA_DEVICE_MAX_CONNECTIONS` unless the environment already sets it: how many hardware work
/// queues CUDA creates with each context (its default is 8).
const DEFAULT_CONNECTIONS: &str = "1";

/// Ask CUDA for one hardware work queue per context, unless the user set
/// `CUDA_DEVICE_MAX_CONNECTIONS`. Creating the primary context is the longest step of start-up,
/// and each queue adds to it: with CUDA's default of 8 the first frame came 0.456 s after the
/// process started on an H100, with 2 at 0.350 s and with 1 at 0.329 s (medians of 7,
/// BENCHMARKS.md, "Start-up"). A backend uses one stream, the frames' and the profiler's clock
/// anchors alike, so a re-anchor waits until the frames are idle ([`crate::compute::timing`]).
/// Changes the process environment:
/// call it first thing in `main`, before any thread starts and before anything loads libcuda.
pub fn limit_hardware_queues() {
    const VAR: &str = "CUDA_DEVICE_MAX_CONNECTIONS";
    if std::env::var_os(VAR).is_none() {
        std::env::set_var(VAR, DEFAULT_CONNECTIONS);
    }
}

/// Start the prewarm thread, once per process; later calls do nothing. Never blocks, never fails
/// (a thread that cannot be spawned is logged at debug level and the backends set up as before).
/// `only`: the one CUDA ordinal to warm (the run's GPU); `None`: every device.
pub fn prewarm(only: Option<i32>) {
    STARTED.call_once(|| {
        match std::thread::Builder::new().name("cuda-prewarm".into()).spawn(move || warm_all(only)) {
            Ok(handle) => *lock(&THREAD) = Some(handle),
            Err(e) => log::debug!("cuda: prewarm thread not started: {e}"),
        }
    });
}

/// The thread's work: every device (or the one `only` names) and its kernel, or the first error
/// that stops it all. A device whose own set-up fails is skipped (its backend will meet the
/// error itself).
fn warm_all(only: Option<i32>) -> Result<Warmed> {
    let started = Instant::now();
    // NVRTC is loaded (a large library) on its own thread while the driver initialises: the
    // kernel cache's key needs its version even when the kernel is cached.
    let nvrtc = std::thread::Builder::new().name("nvrtc-load".into()).spawn(|| {
        let t = Instant::now();
        let loaded = interop::nvrtc_version().is_ok();
        log::debug!("cuda: prewarm: libnvrtc loaded={loaded} in {:.1?}", t.elapsed());
    });
    let driver_version = interop::driver_version()?;
    log::debug!("cuda: prewarm: libcuda + cuInit in {:.1?}", started.elapsed());
    let mut warmed = Vec::new();
    for device in interop::devices()?.into_iter().filter(|d| only.is_none_or(|n| n == d.ordinal)) {
        let t = Instant::now();
        let setup = Cuda::open(device.uuid).map_err(ComputeError::from).and_then(|cuda| {
            let opened = t.elapsed();
            let kernel = build_kernel(&cuda, driver_version)?;
            log::debug!(
                "cuda: prewarm: device {}: primary context and stream {opened:.1?}, kernel {:.1?}",
                device.ordinal,
                t.elapsed() - opened
            );
            Ok(DeviceSetup { kernel, cuda: Arc::new(cuda) })
        });
        match setup {
            Ok(setup) => warmed.push((device.uuid, setup)),
            Err(e) => log::debug!("cuda: prewarm of device {} ({}) failed: {e}", device.ordinal, device.name),
        }
    }
    if let Ok(handle) = nvrtc {
        let _ = handle.join();
    }
    log::debug!("cuda: prewarmed {} device(s) in {:.1?}", warmed.len(), started.elapsed());
    Ok(warmed)
}

/// The prewarmed device and kernel with `uuid`, if prewarm got them (joining the
/// prewarm thread if it is still running). `None`: set up as without prewarm.
pub(super) fn take(uuid: [u8; 16]) -> Option<DeviceSetup> {
    // Taken out before joining, so no lock of this module is held while this thread waits.
    let handle = lock(&THREAD).take();
    let mut warm = lock(&WARM);
    if let Some(handle) = handle {
        match handle.join() {
            Ok(Ok(devices)) => warm.extend(devices),
            Ok(Err(e)) => log::debug!("cuda: prewarm failed: {e}"),
            Err(_) => log::debug!("cuda: the prewarm thread panicked"),
        }
    }
    let i = warm.iter().position(|(u, _)| *u == uuid)?;
    Some(warm.swap_remove(i).1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prewarm_is_harmless_and_take_never_hangs() {
        prewarm(Some(0));
        // Once per process.
        prewarm(None);
        // No device has the all-zero UUID; without a driver the thread just ends.
        assert!(take([0; 16]).is_none());
        assert!(lock(&THREAD).is_none(), "take joins the thread");
        assert!(take([0; 16]).is_none());
        if !interop::driver_present() {
            assert!(lock(&WARM).is_empty());
        }
    }
}
