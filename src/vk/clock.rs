//! Vulkan timestamps on the host clock (`CLOCK_MONOTONIC`), for the profiler's one timeline.
//!
//! The timer these timestamps count is the GPU's own nanosecond timer: on NVIDIA, `%globaltimer`,
//! which a CUDA kernel reads too. So a kernel's GPU stamps ([`crate::profile::Stamp::Gpu`], ns)
//! are mapped here as well, as `ns / timestampPeriod` ticks ([`crate::profile::span::gpu_ns_to_ticks`]),
//! with the same anchors and the same accuracy. That is a rule about the hardware, checked where
//! it matters: `vkhip trace check` proves every stamped kernel starts after the draw whose
//! `rendered` it waited for and ends before the draw that waited for it became readable (both
//! Vulkan timestamps); a different timer would break those orderings (`scripts/gpu-clock-check.sh`).
//!
//! Two ways, best first:
//! - **Calibrated** (VK_KHR_calibrated_timestamps or VK_EXT_calibrated_timestamps, with the
//!   DEVICE and CLOCK_MONOTONIC time domains): one `vkGetCalibratedTimestamps*` call reads both
//!   clocks together and says how far apart the two readings may be (`maxDeviation`, ns). That is
//!   the anchor and its accuracy. It is re-taken every [`REANCHOR_NS`] while mapping, and each new
//!   anchor carries the rate measured since the previous one ([`fitted_rate`]: the two clocks are
//!   linear, −24.8 ppm apart on the H100), so the GPU clock's rate error cannot accumulate; the
//!   difference between where the previous anchor put the new one and where it is measured is the
//!   drift, and the largest drift seen is added to the stated accuracy.
//! - **One-off** (any device with timestamps): while the queue is idle, a command buffer writes
//!   one timestamp; the host reads its clock when recording ends and after the fence says the
//!   buffer ran. The timestamp lies between the two readings; the narrowest of several tries
//!   gives the anchor (its midpoint) and the accuracy (half its width). It cannot be re-taken
//!   during a run without disturbing the queue, so drift is not corrected; it is measured once
//!   more when the run is over ([`GpuClock::recheck_idle`]) and the difference is reported as the
//!   drift.

use super::device::{CalibratedExt, Context};
use super::{CallContext, VkError};
use crate::profile::clock::{host_now_ns, Anchor, ClockInfo};
use ash::{ext, khr, vk};
use std::sync::{Arc, Mutex};

/// How often a calibrated anchor is re-taken, ns. The H100's GPU timer runs −24.8 ppm against
/// CLOCK_MONOTONIC (BENCHMARKS.md): at the nominal rate 50 ms leaves at most ≈ 1.2 µs of drift
/// before the rate is fitted ([`fitted_rate`]), and less after.
pub const REANCHOR_NS: u64 = 50_000_000;

/// A fitted rate further than this from the nominal `timestampPeriod` is a bad pair of anchors,
/// not a clock: the nominal rate is kept.
const MAX_RATE_ERROR: f64 = 1e-3;

/// The device clock's rate (ns per tick) measured between two anchors, when they are far enough
/// apart to say and the result is plausible next to `nominal`.
///
/// ```
/// use vkhip::profile::clock::Anchor;
/// use vkhip::vk::clock::fitted_rate;
/// let a = |device, host_ns| Anchor { device, host_ns, ns_per_unit: 1.0, accuracy_ns: 0 };
/// // 50 ms of host time over 50 ms − 1.24 µs of GPU ticks: the GPU clock runs −24.8 ppm slow.
/// let r = fitted_rate(&a(1_000, 0), &a(1_000 + 49_998_760, 50_000_000), 1.0, u64::MAX).unwrap();
/// assert!((r - 1.0000248).abs() < 1e-9);
/// assert_eq!(fitted_rate(&a(0, 0), &a(10, 10), 1.0, u64::MAX), None); // too close together
/// assert_eq!(fitted_rate(&a(0, 0), &a(50_000_000, 60_000_000), 1.0, u64::MAX), None); // implausible
/// ```
pub fn fitted_rate(earlier: &Anchor, later: &Anchor, nominal: f64, mask: u64) -> Option<f64> {
    let ticks = later.device.wrapping_sub(earlier.device) & mask;
    let ns = later.host_ns.checked_sub(earlier.host_ns)?;
    if ns < REANCHOR_NS / 5 || ticks == 0 {
        return None;
    }
    let rate = ns as f64 / ticks as f64;
    ((rate / nominal - 1.0).abs() <= MAX_RATE_ERROR).then_some(rate)
}

/// One-off calibration tries; the narrowest window wins.
const ONE_OFF_TRIES: usize = 7;

enum Calibrator {
    Khr(khr::calibrated_timestamps::Device),
    Ext(ext::calibrated_timestamps::Device),
}

struct State {
    anchor: Anchor,
    taken_at_ns: u64,
    max_drift_ns: u64,
    anchors: u64,
    /// Whether any timestamp was mapped with `anchor`: only then does its drift matter. (The
    /// first anchor is taken before start-up's slow steps, and the first frames re-anchor before
    /// they map; its nominal-rate drift over that pause reaches no timestamp.)
    used: bool,
}

/// Maps the graphics queue's timestamps to host ns.
pub struct GpuClock {
    calibrator: Option<Calibrator>,
    state: Mutex<State>,
    mask: u64,
    /// `timestampPeriod`: the rate before one is fitted.
    nominal_ns_per_tick: f64,
    /// How the anchor was taken, for the report and the trace.
    pub method: String,
}

impl GpuClock {
    /// Take the first anchor. The queue must be idle (no frame submitted yet). `Ok(None)` when
    /// the queue has no timestamps.
    pub fn new(ctx: &Arc<Context>) -> Result<Option<Self>, VkError> {
        let p = &ctx.physical;
        if p.timestamp_bits == 0 || p.timestamp_period <= 0.0 {
            return Ok(None);
        }
        let mask = if p.timestamp_bits >= 64 { u64::MAX } else { (1u64 << p.timestamp_bits) - 1 };
        let inst = &ctx.instance.instance;
        let calibrator = match p.calibrated {
            Some(CalibratedExt::Khr) => {
                Some(Calibrator::Khr(khr::calibrated_timestamps::Device::new(inst, &ctx.device)))
            }
            Some(CalibratedExt::Ext) => {
                Some(Calibrator::Ext(ext::calibrated_timestamps::Device::new(inst, &ctx.device)))
            }
            None => None,
        };
        let period = f64::from(p.timestamp_period);
        let calibrated = calibrator.and_then(|c| match calibrated_anchor(&c, period) {
            Ok(a) => Some((c, a)),
            Err(e) => {
                log::warn!("calibrated timestamps failed ({e}); calibrating once instead");
                None
            }
        });
        let (calibrator, anchor, method) = match (calibrated, p.calibrated) {
            (Some((c, a)), Some(ext)) => (
                Some(c),
                a,
                format!(
                    "{}, re-anchored every {} ms, rate fitted",
                    ext.name().to_string_lossy(),
                    REANCHOR_NS / 1_000_000
                ),
            ),
            _ => (None, one_off_anchor(ctx, period)?, "one-off calibration on the idle queue".to_string()),
        };
        log::info!("vulkan clock: {method}, accuracy ±{} ns", anchor.accuracy_ns);
        Ok(Some(GpuClock {
            calibrator,
            state: Mutex::new(State {
                anchor,
                taken_at_ns: host_now_ns(),
                max_drift_ns: 0,
                anchors: 1,
                used: false,
            }),
            mask,
            nominal_ns_per_tick: period,
            method,
        }))
    }

    /// Host ns of the timestamp `ticks` (re-anchoring first when due).
    pub fn to_host_ns(&self, ticks: u64) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = &self.calibrator {
            let now = host_now_ns();
            if now.saturating_sub(s.taken_at_ns) >= REANCHOR_NS {
                match calibrated_anchor(c, s.anchor.ns_per_unit) {
                    Ok(mut a) => {
                        let predicted = s.anchor.to_host_ns(a.device, self.mask);
                        if s.used {
                            s.max_drift_ns = s.max_drift_ns.max(predicted.abs_diff(a.host_ns));
                        }
                        // The clocks are linear: carry the rate measured since the last anchor.
                        if let Some(rate) = fitted_rate(&s.anchor, &a, self.nominal_ns_per_tick, self.mask) {
                            a.ns_per_unit = rate;
                        }
                        s.anchor = a;
                        s.anchors += 1;
                        s.used = false;
                    }
                    Err(e) => log::debug!("re-anchoring the vulkan clock failed: {e}"),
                }
                s.taken_at_ns = now;
            }
        }
        s.used = true;
        s.anchor.to_host_ns(ticks, self.mask)
    }

    /// With the one-off method, calibrate once more (the queue must be idle again: after the
    /// run) and keep how far the first anchor had drifted by then. Calibrated clocks re-anchor
    /// while mapping and need nothing here.
    pub fn recheck_idle(&self, ctx: &Arc<Context>) {
        if self.calibrator.is_some() {
            return;
        }
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        match one_off_anchor(ctx, s.anchor.ns_per_unit) {
            Ok(a) => {
                let predicted = s.anchor.to_host_ns(a.device, self.mask);
                s.max_drift_ns = s.max_drift_ns.max(predicted.abs_diff(a.host_ns));
                s.anchors += 1;
            }
            Err(e) => log::debug!("re-checking the vulkan clock failed: {e}"),
        }
    }

    /// How the mapping was made and how accurate it is: the anchor's own accuracy plus the
    /// largest drift seen between anchors.
    pub fn info(&self) -> ClockInfo {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let method = if self.calibrator.is_some() {
            format!("{} ({} anchors)", self.method, s.anchors)
        } else {
            self.method.clone()
        };
        ClockInfo {
            method,
            accuracy_ns: s.anchor.accuracy_ns + s.max_drift_ns,
            drift_ns: s.max_drift_ns,
            on_vulkan_clock: true,
        }
    }
}

/// Calls per calibrated anchor; the one with the smallest maximum deviation wins.
const CALIBRATED_TRIES: usize = 3;

fn calibrated_anchor(c: &Calibrator, ns_per_tick: f64) -> Result<Anchor, VkError> {
    let mut best: Option<Anchor> = None;
    for _ in 0..CALIBRATED_TRIES {
        let a = calibrated_once(c, ns_per_tick)?;
        if best.is_none_or(|b| a.accuracy_ns < b.accuracy_ns) {
            best = Some(a);
        }
    }
    best.ok_or_else(|| VkError::Unsupported("no calibrated timestamps".into()))
}

fn calibrated_once(c: &Calibrator, ns_per_tick: f64) -> Result<Anchor, VkError> {
    let infos = [
        vk::CalibratedTimestampInfoKHR::default().time_domain(vk::TimeDomainKHR::DEVICE),
        vk::CalibratedTimestampInfoKHR::default().time_domain(vk::TimeDomainKHR::CLOCK_MONOTONIC),
    ];
    // SAFETY: valid device; `infos` lives across the call; the EXT entry point takes the same
    // structure (the KHR type is an alias of the EXT one).
    let (ts, deviation) = unsafe {
        match c {
            Calibrator::Khr(d) => d.get_calibrated_timestamps(&infos),
            Calibrator::Ext(d) => d.get_calibrated_timestamps(&infos),
        }
    }
    .call("vkGetCalibratedTimestamps")?;
    Ok(Anchor { device: ts[0], host_ns: ts[1], ns_per_unit: ns_per_tick, accuracy_ns: deviation })
}

fn one_off_anchor(ctx: &Arc<Context>, ns_per_tick: f64) -> Result<Anchor, VkError> {
    let d = &ctx.device;
    let info = vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(1);
    // SAFETY: valid device.
    let pool = unsafe { d.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
    let result = (|| {
        let mut best: Option<Anchor> = None;
        for _ in 0..ONE_OFF_TRIES {
            let mut before = 0;
            ctx.one_shot(&[], |cmd| {
                // SAFETY: recording into the one-shot command buffer; the pool is live.
                unsafe {
                    d.cmd_reset_query_pool(cmd, pool, 0, 1);
                    d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, pool, 0);
                }
                before = host_now_ns();
            })?;
            let after = host_now_ns();
            let mut ticks = [0u64; 1];
            // SAFETY: the command buffer finished (one_shot waited on its fence).
            unsafe {
                d.get_query_pool_results(
                    pool,
                    0,
                    &mut ticks,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
                )
            }
            .call("vkGetQueryPoolResults")?;
            let half = (after - before) / 2;
            let a = Anchor {
                device: ticks[0],
                host_ns: before + half,
                ns_per_unit: ns_per_tick,
                accuracy_ns: half,
            };
            if best.is_none_or(|b| a.accuracy_ns < b.accuracy_ns) {
                best = Some(a);
            }
        }
        best.ok_or_else(|| VkError::Unsupported("no timestamp calibration".into()))
    })();
    // SAFETY: every command buffer that used the pool has finished.
    unsafe { d.destroy_query_pool(pool, None) };
    result
}
