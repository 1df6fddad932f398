//! Start-up prewarm: the CUDA set-up that does not depend on Vulkan, run on a background thread
//! while Vulkan sets itself up.
//!
//! `--backend cuda` used to reach its first frame ≈ 0.3 s after `--backend vulkan`, because
//! `cuInit`, the primary-context retain and the kernel load (NVRTC on a cache miss) all ran after
//! the Vulkan set-up. [`prewarm`] starts (once per process) a thread that loads the driver,
//! enumerates the devices and, for each, retains its primary context and loads the kernel through
//! the same cache as the backends. [`take`] hands a backend the context and kernel of its device:
//! it joins the thread first (so it waits at most for the work it would otherwise do itself) and
//! falls back to the normal path (returns `None`) on any prewarm failure, logged at debug level.
//!
//! Harmless without a driver: the thread finds no libcuda and ends. Deadlock-free: the thread
//! takes none of this module's locks, and [`take`] releases the handle's lock before joining.
//!
//! What prewarm got for a device nobody asks for stays retained for the life of the process (a
//! primary context on each visible GPU, as a CUDA runtime application that touched every device
//! would hold).

use std::sync::{Mutex, MutexGuard, Once};
use std::thread::JoinHandle;

use super::result::Driver;
use super::safe::PrimaryContext;
use super::{build_kernel, enumerate, DeviceSetup, Result};

/// What the thread made: (device UUID, its context and kernel).
type Warmed = Vec<([u8; 16], DeviceSetup)>;

static STARTED: Once = Once::new();
static THREAD: Mutex<Option<JoinHandle<Result<Warmed>>>> = Mutex::new(None);
static WARM: Mutex<Warmed> = Mutex::new(Vec::new());

/// A lock that survives a panic elsewhere (the data is only moved in and out whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Start the prewarm thread, once per process; later calls do nothing. Never blocks, never fails
/// (a thread that cannot be spawned is logged at debug level and the backends set up as before).
pub fn prewarm() {
    STARTED.call_once(|| match std::thread::Builder::new().name("cuda-prewarm".into()).spawn(warm_all) {
        Ok(handle) => *lock(&THREAD) = Some(handle),
        Err(e) => log::debug!("cuda: prewarm thread not started: {e}"),
    });
}

/// The thread's work: every device's context and kernel, or the first error that stops it all.
/// A device whose own set-up fails is skipped (its backend will meet the error itself).
fn warm_all() -> Result<Warmed> {
    let started = std::time::Instant::now();
    let driver = Driver::get()?;
    let driver_version = driver.driver_version()?;
    let mut warmed = Vec::new();
    for device in enumerate(driver)? {
        let setup = PrimaryContext::retain(driver, device.handle).and_then(|ctx| {
            ctx.make_current()?;
            Ok(DeviceSetup { kernel: build_kernel(driver, &device, driver_version)?, ctx })
        });
        match setup {
            Ok(setup) => warmed.push((device.uuid, setup)),
            Err(e) => log::debug!("cuda: prewarm of device {} ({}) failed: {e}", device.ordinal, device.name),
        }
    }
    log::debug!("cuda: prewarmed {} device(s) in {:.0?}", warmed.len(), started.elapsed());
    Ok(warmed)
}

/// The prewarmed context and kernel of the device with `uuid`, if prewarm got them (joining the
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
        prewarm();
        prewarm(); // once per process
                   // No device has the all-zero UUID; without a driver the thread just ends.
        assert!(take([0; 16]).is_none());
        assert!(lock(&THREAD).is_none(), "take joins the thread");
        assert!(take([0; 16]).is_none());
        if !super::super::result::driver_library_present() {
            assert!(lock(&WARM).is_empty());
        }
    }
}
