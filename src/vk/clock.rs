//! Vulkan timestamps on the host clock (`CLOCK_MONOTONIC`), for the profiler's one timeline: the
//! profiler crate's clock ([`vkhip_profile::clock::GpuClock`]) on the app's device.
//!
//! The timer these timestamps count is the GPU's own nanosecond timer: on NVIDIA, `%globaltimer`,
//! which a CUDA kernel reads too. So a kernel's GPU stamps ([`crate::profile::Stamp::Gpu`], ns)
//! are mapped here as well, as `ns / timestampPeriod` ticks ([`crate::profile::span::gpu_ns_to_ticks`]),
//! with the same anchors and the same accuracy. That is a rule about the hardware, checked where
//! it matters: `vkhip trace check` compares every stamped kernel with the draw whose `rendered` it
//! waited for and with the draw that reads its slot (both Vulkan timestamps) on this one clock; a
//! different timer would break those orderings (`scripts/gpu-clock-check.sh`).
//!
//! Two ways, best first (the crate's module note says how each is taken):
//! - **Calibrated** (VK_KHR_calibrated_timestamps or VK_EXT_calibrated_timestamps, with the
//!   DEVICE and CLOCK_MONOTONIC time domains): one `vkGetCalibratedTimestamps*` call reads both
//!   clocks together and states how far apart the readings may be; re-taken every 50 ms while
//!   mapping, each anchor carrying the rate fitted since the previous one, the largest drift seen
//!   added to the stated accuracy.
//! - **One-off** (any device with timestamps): while the queue is idle, a command buffer writes
//!   one timestamp between two host readings (`one_off_reading`, the profile crate's
//!   `vulkan::one_off_timestamp`); the narrowest of several
//!   tries is the anchor. Measured once more when the run is over ([`GpuClock::recheck_idle`]).

use super::device::Context;
use super::VkError;
use crate::profile::clock::ClockInfo;
use std::sync::Arc;
use vkhip_profile::clock::OneOffReading;

/// Maps the graphics queue's timestamps to host ns.
pub struct GpuClock {
    inner: vkhip_profile::clock::GpuClock,
}

impl GpuClock {
    /// Take the first anchor. The queue must be idle (no frame submitted yet). `Ok(None)` when
    /// the queue has no timestamps.
    pub fn new(ctx: &Arc<Context>) -> Result<Option<Self>, VkError> {
        let p = &ctx.physical;
        if p.timestamp_bits == 0 || p.timestamp_period <= 0.0 {
            return Ok(None);
        }
        let (bits, period) = (p.timestamp_bits, p.timestamp_period);
        let calibrated = p.calibrated.and_then(|ext| {
            let made = vkhip_profile::clock::GpuClock::calibrated(
                &ctx.instance.instance,
                &ctx.device,
                ext,
                bits,
                period,
            );
            made.map_err(|e| log::warn!("calibrated timestamps failed ({e}); calibrating once instead")).ok()
        });
        let inner = match calibrated {
            Some(c) => c,
            None => vkhip_profile::clock::GpuClock::one_off(|| one_off_reading(ctx), bits, period)?,
        };
        Ok(Some(GpuClock { inner }))
    }

    /// Host ns of the timestamp `ticks` (re-anchoring first when due).
    pub fn to_host_ns(&self, ticks: u64) -> u64 {
        self.inner.to_host_ns(ticks)
    }

    /// With the one-off method, calibrate once more (the queue must be idle again: after the
    /// run) and keep how far the first anchor had drifted by then. Calibrated clocks re-anchor
    /// while mapping and need nothing here.
    pub fn recheck_idle(&self, ctx: &Arc<Context>) {
        if self.inner.is_calibrated() {
            return;
        }
        if let Err(e) = self.inner.recheck(|| one_off_reading(ctx)) {
            log::debug!("re-checking the vulkan clock failed: {e}");
        }
    }

    /// How the mapping was made and how accurate it is: the anchor's own accuracy plus the
    /// largest drift seen between anchors.
    pub fn info(&self) -> ClockInfo {
        let i = self.inner.info();
        ClockInfo {
            method: i.method,
            accuracy_ns: i.accuracy_ns,
            drift_ns: i.drift_ns,
            on_vulkan_clock: true,
        }
    }
}

/// One timestamp written on the idle queue, between the host clock when its command buffer's
/// recording ended and once its fence said it ran.
fn one_off_reading(ctx: &Arc<Context>) -> Result<OneOffReading, VkError> {
    // SAFETY: `one_shot` records into a command buffer of the graphics queue (it has
    // timestamps: `GpuClock::new` checked), submits it and waits for its fence.
    unsafe {
        vkhip_profile::vulkan::one_off_timestamp(
            &ctx.device,
            |record| ctx.one_shot(&[], record),
            |call, result| VkError::Call { call, result },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vk::device::enumerate;
    use crate::vk::instance::Instance;

    /// On lavapipe (calibrated timestamps with CLOCK_MONOTONIC) or any device with timestamps:
    /// a timestamp written now maps to a host time between the readings around it, within the
    /// stated accuracy, and the one-off reading brackets its timestamp.
    #[test]
    fn a_timestamp_maps_between_the_host_readings_around_it() {
        let instance = Arc::new(Instance::new(false, &[]).unwrap());
        let Some(pd) = enumerate(&instance).unwrap().into_iter().find(|d| d.usable()) else {
            eprintln!("skipped: no usable Vulkan device");
            return;
        };
        let ctx = Context::new(instance, pd, false).unwrap();
        let Some(clock) = GpuClock::new(&ctx).unwrap() else {
            eprintln!("skipped: the queue has no timestamps");
            return;
        };
        let r = one_off_reading(&ctx).unwrap();
        assert!(r.before_ns <= r.after_ns);
        let at = clock.to_host_ns(r.ticks);
        let slack = clock.info().accuracy_ns + 1_000;
        assert!(
            at + slack >= r.before_ns && at <= r.after_ns + slack,
            "{at} not in {}..{}",
            r.before_ns,
            r.after_ns
        );
        assert!(clock.info().on_vulkan_clock);
        clock.recheck_idle(&ctx);
    }
}
