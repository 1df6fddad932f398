//! One clock for every track: the host's `CLOCK_MONOTONIC`, and the maps of device clocks onto it.
//!
//! Every time in a [`Timeline`](crate::Timeline) is nanoseconds of `CLOCK_MONOTONIC`: the clock
//! `std::time::Instant` reads on Linux, the one `VK_TIME_DOMAIN_CLOCK_MONOTONIC` names, and the one
//! perf and `clock_gettime` read. A device clock is mapped onto it by an [`Anchor`] (one instant
//! known on both clocks, and the device clock's rate); [`Anchored`] keeps a device clock's
//! anchors as they are re-taken, fits its rate between them, and states the error.
//!
//! **The GPU clock** ([`GpuClock`]). Vulkan timestamps count the GPU's own timer, and on NVIDIA
//! that timer is `%globaltimer`, which a CUDA kernel reads too (measured on the H100 and H200:
//! docs/ARCHITECTURE.md). So a CUDA stamp of `ns` nanoseconds is mapped as the Vulkan timestamp
//! [`gpu_ns_to_ticks`] gives, through the same anchors: between a Vulkan scope and a CUDA scope
//! the mapping's error cancels ([`Track::clock_domain`](crate::model::Track::clock_domain)).
//! Two ways to anchor it, best first:
//!
//! - **Calibrated** (`VK_KHR_calibrated_timestamps` or `VK_EXT_calibrated_timestamps`, with the
//!   DEVICE and CLOCK_MONOTONIC time domains): one `vkGetCalibratedTimestamps*` call reads both
//!   clocks and says how far apart the readings may be (`maxDeviation`): the anchor and its
//!   accuracy. It is re-taken every [`REANCHOR_NS`] while mapping, each new anchor carrying the
//!   rate measured since the previous one ([`fitted_rate`]: the two clocks are linear, the GPU's
//!   −24.8 ppm slow on the H100), so the rate error cannot accumulate. Where the previous anchor
//!   put the new one, against where it was measured, is the drift; the largest drift seen is
//!   added to the stated accuracy.
//! - **One-off** (any device with timestamps): while the queue is idle, a command buffer writes
//!   one timestamp between two host readings (recording ended; the fence said it ran); the
//!   narrowest of a few tries gives the anchor (the midpoint) and its accuracy (half the width).
//!   It is not re-taken during a run (that would disturb the queue); [`GpuClock::recheck`] measures
//!   the drift once more after the run.

use ash::{ext, khr, vk};
use std::ffi::CStr;
use std::sync::Mutex;

/// Nanoseconds of `CLOCK_MONOTONIC` now.
pub fn host_now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: writes one timespec; both clocks exist on every Linux since 2.6.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    if !ok {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// How often a calibrated anchor is re-taken, ns. At the H100's −24.8 ppm, 50 ms leaves at most
/// ≈ 1.2 µs of drift before the rate is fitted, and less after.
pub const REANCHOR_NS: u64 = 50_000_000;

/// A fitted rate further than this from the nominal one is a bad pair of anchors, not a clock:
/// the nominal rate is kept.
const MAX_RATE_ERROR: f64 = 1e-3;

/// How one device clock was put on the host clock: every output states it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockInfo {
    /// "VK_EXT_calibrated_timestamps, re-anchored every 50 ms, rate fitted (123 anchors)", …
    pub method: String,
    /// The largest error of a mapped time, ns: the widest anchor used plus the largest drift
    /// seen between anchors.
    pub accuracy_ns: u64,
    /// The largest difference between where one anchor predicted the next and where it was
    /// measured (0 while anchored once), ns. Included in `accuracy_ns`.
    pub drift_ns: u64,
    /// Anchors taken.
    pub anchors: u64,
}

impl ClockInfo {
    /// "method, accuracy ±3.4 µs": the line the report and the trace print.
    pub fn line(&self) -> String {
        format!("{}, accuracy ±{:.1} µs", self.method, self.accuracy_ns as f64 / 1e3)
    }
}

/// One instant seen on a device clock and on the host clock, and the device clock's rate: a
/// device reading `t` maps to `host_ns + (t − device) × ns_per_unit`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    /// The device clock's reading at the anchor (ticks, or whatever unit the device counts in).
    pub device: u64,
    /// The host clock at the same instant, ns.
    pub host_ns: u64,
    /// Nanoseconds per device unit.
    pub ns_per_unit: f64,
    /// How far the anchor's host time may be from the truth, ns (half the window it was taken
    /// in, or the driver's own maximum deviation).
    pub accuracy_ns: u64,
}

impl Anchor {
    /// Host ns of the device reading `t` (readings before the anchor map before it). `mask`
    /// keeps the clock's valid bits, so a counter that wrapped since the anchor still maps.
    ///
    /// ```
    /// use vkhip_profile::clock::Anchor;
    ///
    /// // Device tick 1000 was host time 5 ms; one tick is 2 ns.
    /// let a = Anchor { device: 1000, host_ns: 5_000_000, ns_per_unit: 2.0, accuracy_ns: 100 };
    /// assert_eq!(a.to_host_ns(1500, u64::MAX), 5_001_000);
    /// assert_eq!(a.to_host_ns(500, u64::MAX), 4_999_000); // before the anchor
    /// // A 32-bit counter that wrapped since the anchor still maps forward.
    /// let a = Anchor { device: u32::MAX as u64 - 9, host_ns: 1_000, ns_per_unit: 1.0, accuracy_ns: 0 };
    /// assert_eq!(a.to_host_ns(10, u32::MAX as u64), 1_020);
    /// ```
    pub fn to_host_ns(&self, t: u64, mask: u64) -> u64 {
        let delta = t.wrapping_sub(self.device) & mask;
        // A reading "before" the anchor wraps to a huge delta: read it as negative.
        let signed = if mask == u64::MAX || delta <= mask / 2 {
            delta as i64 as i128
        } else {
            delta as i128 - (mask as i128 + 1)
        };
        let ns = (signed as f64 * self.ns_per_unit).round() as i128;
        (self.host_ns as i128 + ns).max(0) as u64
    }
}

/// The device clock's rate (ns per unit) measured between two anchors, when they are far enough
/// apart to say and the result is plausible next to `nominal`.
///
/// ```
/// use vkhip_profile::clock::{fitted_rate, Anchor};
/// let a = |device, host_ns| Anchor { device, host_ns, ns_per_unit: 1.0, accuracy_ns: 0 };
/// // 50 ms of host time over 50 ms − 1.24 µs of GPU ticks: the GPU clock runs −24.8 ppm slow.
/// let r = fitted_rate(&a(1_000, 0), &a(1_000 + 49_998_760, 50_000_000), 1.0, u64::MAX).unwrap();
/// assert!((r - 1.0000248).abs() < 1e-9);
/// assert_eq!(fitted_rate(&a(0, 0), &a(10, 10), 1.0, u64::MAX), None); // too close together
/// assert_eq!(fitted_rate(&a(0, 0), &a(50_000_000, 60_000_000), 1.0, u64::MAX), None); // implausible
/// ```
pub fn fitted_rate(earlier: &Anchor, later: &Anchor, nominal: f64, mask: u64) -> Option<f64> {
    let units = later.device.wrapping_sub(earlier.device) & mask;
    let ns = later.host_ns.checked_sub(earlier.host_ns)?;
    if ns < REANCHOR_NS / 5 || units == 0 {
        return None;
    }
    let rate = ns as f64 / units as f64;
    ((rate / nominal - 1.0).abs() <= MAX_RATE_ERROR).then_some(rate)
}

/// The Vulkan timestamp (ticks of `timestamp_period` ns) that a GPU timer reading of `ns`
/// nanoseconds is: the rule that puts CUDA stamps on the Vulkan clock.
///
/// ```
/// use vkhip_profile::clock::gpu_ns_to_ticks;
///
/// assert_eq!(gpu_ns_to_ticks(1_234_567, 1.0), 1_234_567); // NVIDIA: one tick is one ns
/// assert_eq!(gpu_ns_to_ticks(1_000, 0.5), 2_000);
/// assert_eq!(gpu_ns_to_ticks(1_000, 0.0), 1_000); // no period: read as ns
/// ```
pub fn gpu_ns_to_ticks(ns: u64, timestamp_period: f64) -> u64 {
    if timestamp_period <= 0.0 || timestamp_period == 1.0 {
        return ns;
    }
    (ns as f64 / timestamp_period).round() as u64
}

/// A device clock mapped through a succession of anchors: the current one (with the rate fitted
/// since the previous), the largest drift seen between two, and the widest anchor used.
///
/// ```
/// use vkhip_profile::clock::{Anchor, Anchored};
/// let a = |device, host_ns, accuracy_ns| Anchor { device, host_ns, ns_per_unit: 1.0, accuracy_ns };
/// let mut clock = Anchored::new(a(0, 1_000_000_000, 500), u64::MAX, 1.0);
/// assert_eq!(clock.map(1_000), 1_000_001_000);
/// // 50 ms later the device has counted 1 µs less: the drift is 1 µs, and the rate is fitted.
/// clock.reanchor(a(49_999_000, 1_050_000_000, 800));
/// assert_eq!(clock.drift_ns(), 1_000);
/// assert_eq!(clock.accuracy_ns(), 800 + 1_000);
/// assert_eq!(clock.map(49_999_000 + 49_999_000), 1_100_000_000);
/// ```
#[derive(Clone, Debug)]
pub struct Anchored {
    anchor: Anchor,
    mask: u64,
    nominal: f64,
    max_drift_ns: u64,
    widest_ns: u64,
    anchors: u64,
    /// Whether a reading was mapped through `anchor`: only then does its drift reach the
    /// timeline (a first anchor taken long before the first frame drifts unseen).
    used: bool,
}

impl Anchored {
    /// Start from `first`; `mask` keeps the clock's valid bits; `nominal` is the rate the device
    /// states (ns per unit), against which fitted rates are judged.
    pub fn new(first: Anchor, mask: u64, nominal: f64) -> Self {
        Anchored {
            anchor: first,
            mask,
            nominal,
            max_drift_ns: 0,
            widest_ns: first.accuracy_ns,
            anchors: 1,
            used: false,
        }
    }

    /// Take `next` as the anchor: the drift is where the current anchor put it against where it
    /// was measured (counted when the current one mapped anything), and its rate is the one
    /// measured since the current anchor where that is plausible.
    pub fn reanchor(&mut self, mut next: Anchor) {
        let predicted = self.anchor.to_host_ns(next.device, self.mask);
        if self.used {
            self.max_drift_ns = self.max_drift_ns.max(predicted.abs_diff(next.host_ns));
        }
        if let Some(rate) = fitted_rate(&self.anchor, &next, self.nominal, self.mask) {
            next.ns_per_unit = rate;
        }
        self.anchor = next;
        self.anchors += 1;
        self.used = false;
    }

    /// Record how far the clock had drifted at `check` without taking it as the anchor (a
    /// one-off clock checked after the run).
    pub fn record_drift(&mut self, check: &Anchor) {
        let predicted = self.anchor.to_host_ns(check.device, self.mask);
        self.max_drift_ns = self.max_drift_ns.max(predicted.abs_diff(check.host_ns));
        self.anchors += 1;
    }

    /// Host ns of the device reading `t`.
    pub fn map(&mut self, t: u64) -> u64 {
        if !self.used {
            self.used = true;
            self.widest_ns = self.widest_ns.max(self.anchor.accuracy_ns);
        }
        self.anchor.to_host_ns(t, self.mask)
    }

    /// The current anchor.
    pub fn anchor(&self) -> &Anchor {
        &self.anchor
    }

    pub fn drift_ns(&self) -> u64 {
        self.max_drift_ns
    }

    /// The stated error of a mapped time: the widest anchor that mapped anything, plus the
    /// largest drift seen.
    pub fn accuracy_ns(&self) -> u64 {
        self.widest_ns.max(self.anchor.accuracy_ns) + self.max_drift_ns
    }

    pub fn anchors(&self) -> u64 {
        self.anchors
    }
}

/// Which calibrated-timestamps extension a device has enabled (both have the same entry points).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CalibratedExt {
    Khr,
    Ext,
}

impl CalibratedExt {
    /// The extension's name.
    ///
    /// ```
    /// use vkhip_profile::clock::CalibratedExt;
    /// assert_eq!(CalibratedExt::Khr.name().to_str().unwrap(), "VK_KHR_calibrated_timestamps");
    /// assert_eq!(CalibratedExt::Ext.name().to_str().unwrap(), "VK_EXT_calibrated_timestamps");
    /// ```
    pub fn name(self) -> &'static CStr {
        match self {
            CalibratedExt::Khr => khr::calibrated_timestamps::NAME,
            CalibratedExt::Ext => ext::calibrated_timestamps::NAME,
        }
    }

    /// The extension enabled on `device`, if any: its entry point resolves only when it was
    /// enabled. EXT is tried first (the same entry points; layers older than 1.3.255 do not know
    /// the KHR name).
    pub fn enabled_on(instance: &ash::Instance, device: &ash::Device) -> Option<Self> {
        let resolves = |name: &CStr| {
            // SAFETY: valid instance and device; `name` is NUL-terminated.
            unsafe { (instance.fp_v1_0().get_device_proc_addr)(device.handle(), name.as_ptr()) }.is_some()
        };
        if resolves(c"vkGetCalibratedTimestampsEXT") {
            Some(CalibratedExt::Ext)
        } else if resolves(c"vkGetCalibratedTimestampsKHR") {
            Some(CalibratedExt::Khr)
        } else {
            None
        }
    }
}

/// Whether `physical` can read its device clock and `CLOCK_MONOTONIC` together through `ext`
/// (its calibrateable time domains include both).
///
/// # Safety
/// `physical` belongs to `instance`, which was created from `entry` and is live.
pub unsafe fn has_monotonic_domain(
    entry: &ash::Entry,
    instance: &ash::Instance,
    physical: vk::PhysicalDevice,
    ext: CalibratedExt,
) -> bool {
    // SAFETY: per this function's contract.
    let domains = unsafe {
        match ext {
            CalibratedExt::Ext => ext::calibrated_timestamps::Instance::new(entry, instance)
                .get_physical_device_calibrateable_time_domains(physical),
            CalibratedExt::Khr => khr::calibrated_timestamps::Instance::new(entry, instance)
                .get_physical_device_calibrateable_time_domains(physical),
        }
    };
    domains.is_ok_and(|d| {
        d.contains(&vk::TimeDomainKHR::DEVICE) && d.contains(&vk::TimeDomainKHR::CLOCK_MONOTONIC)
    })
}

/// One timestamp written on an idle queue between two host readings (a one-off calibration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneOffReading {
    /// The timestamp, ticks.
    pub ticks: u64,
    /// The host clock when the command buffer's recording ended (before the submit), ns.
    pub before_ns: u64,
    /// The host clock once its fence said it ran, ns.
    pub after_ns: u64,
}

impl OneOffReading {
    /// The anchor this reading gives: the window's midpoint, accurate to half its width.
    pub fn anchor(&self, ns_per_tick: f64) -> Anchor {
        let half = self.after_ns.saturating_sub(self.before_ns) / 2;
        Anchor {
            device: self.ticks,
            host_ns: self.before_ns + half,
            ns_per_unit: ns_per_tick,
            accuracy_ns: half,
        }
    }
}

/// One-off calibration tries; the narrowest window wins.
pub const ONE_OFF_TRIES: usize = 7;

/// Calls per calibrated anchor; the one with the smallest maximum deviation wins.
const CALIBRATED_TRIES: usize = 3;

enum Calibrator {
    Khr(khr::calibrated_timestamps::Device),
    Ext(ext::calibrated_timestamps::Device),
}

struct ClockState {
    clock: Anchored,
    /// When the current anchor was taken, or the last re-anchor refused (host ns).
    taken_at_ns: u64,
    /// When the current anchor was taken (host ns).
    anchored_at_ns: u64,
    /// The narrowest calibrated anchor seen (`maxDeviation`), ns.
    best_ns: u64,
    /// Re-anchors refused for a deviation much wider than the best.
    refused: u64,
}

/// Whether a re-anchor of deviation `accuracy_ns` is taken when the best seen is `best_ns`: a
/// much wider one (the calling thread was preempted between the two clock reads) would widen the
/// stated accuracy of every time mapped after it, while the current anchor with its fitted rate
/// maps well for a while longer; after [`REFUSE_AT_MOST_NS`] without an anchor the next is taken
/// whatever its width (the drift it reveals is stated).
///
/// ```
/// use vkhip_profile::clock::accept_reanchor;
/// assert!(accept_reanchor(1_200, 1_000, 50_000_000));
/// assert!(accept_reanchor(1_450, 1_000, 50_000_000)); // within 500 ns of the best
/// assert!(!accept_reanchor(9_000, 1_000, 50_000_000)); // preempted: wait for a better one
/// assert!(accept_reanchor(9_000, 1_000, 1_000_000_000)); // a second without an anchor: take it
/// ```
pub fn accept_reanchor(accuracy_ns: u64, best_ns: u64, since_last_ns: u64) -> bool {
    accuracy_ns <= (best_ns + best_ns / 2).max(best_ns + 500) || since_last_ns >= REFUSE_AT_MOST_NS
}

/// See [`accept_reanchor`].
pub const REFUSE_AT_MOST_NS: u64 = 1_000_000_000;

/// How soon a refused re-anchor is tried again, ns.
const RETRY_NS: u64 = 5_000_000;

/// The GPU's clock (Vulkan timestamps, and CUDA's `%globaltimer` on NVIDIA) on the host clock:
/// see the module note. Shared by every track of one device; thread-safe.
pub struct GpuClock {
    calibrator: Option<Calibrator>,
    state: Mutex<ClockState>,
    mask: u64,
    /// `timestampPeriod`: ns per tick before a rate is fitted.
    period: f64,
    method: String,
}

impl GpuClock {
    /// A calibrated clock through `ext`, enabled on `device`, whose physical device has the
    /// DEVICE and CLOCK_MONOTONIC domains ([`has_monotonic_domain`]). `timestamp_bits` and
    /// `period` are the queue family's `timestampValidBits` and the device's `timestampPeriod`.
    pub fn calibrated(
        instance: &ash::Instance,
        device: &ash::Device,
        ext: CalibratedExt,
        timestamp_bits: u32,
        period: f32,
    ) -> Result<Self, vkhip_interop::Error> {
        let calibrator = match ext {
            CalibratedExt::Khr => Calibrator::Khr(khr::calibrated_timestamps::Device::new(instance, device)),
            CalibratedExt::Ext => Calibrator::Ext(ext::calibrated_timestamps::Device::new(instance, device)),
        };
        let period = f64::from(period);
        let first = calibrated_anchor(&calibrator, period)?;
        let method = format!(
            "{}, re-anchored every {} ms, rate fitted",
            ext.name().to_string_lossy(),
            REANCHOR_NS / 1_000_000
        );
        Ok(GpuClock::from_anchor(Some(calibrator), first, timestamp_bits, period, method))
    }

    /// A clock anchored once, from the narrowest of [`ONE_OFF_TRIES`] readings `read` takes (each
    /// a timestamp written on the idle queue between two host readings).
    pub fn one_off<E>(
        mut read: impl FnMut() -> Result<OneOffReading, E>,
        timestamp_bits: u32,
        period: f32,
    ) -> Result<Self, E> {
        let period = f64::from(period);
        let mut best: Option<Anchor> = None;
        for _ in 0..ONE_OFF_TRIES {
            let a = read()?.anchor(period);
            if best.is_none_or(|b| a.accuracy_ns < b.accuracy_ns) {
                best = Some(a);
            }
        }
        let first = best.unwrap_or(Anchor {
            device: 0,
            host_ns: host_now_ns(),
            ns_per_unit: period,
            accuracy_ns: u64::MAX / 4,
        });
        Ok(GpuClock::from_anchor(
            None,
            first,
            timestamp_bits,
            period,
            "one-off calibration on the idle queue".into(),
        ))
    }

    fn from_anchor(
        calibrator: Option<Calibrator>,
        first: Anchor,
        bits: u32,
        period: f64,
        method: String,
    ) -> Self {
        let mask = if bits >= 64 || bits == 0 { u64::MAX } else { (1u64 << bits) - 1 };
        log::info!("gpu clock: {method}, accuracy ±{} ns", first.accuracy_ns);
        GpuClock {
            calibrator,
            state: Mutex::new(ClockState {
                clock: Anchored::new(first, mask, period),
                taken_at_ns: host_now_ns(),
                anchored_at_ns: host_now_ns(),
                best_ns: first.accuracy_ns,
                refused: 0,
            }),
            mask,
            period,
            method,
        }
    }

    /// Whether the clock re-anchors while mapping (calibrated timestamps).
    pub fn is_calibrated(&self) -> bool {
        self.calibrator.is_some()
    }

    /// How the clock is anchored, without the counts of [`GpuClock::info`]: "VK_EXT_calibrated_timestamps,
    /// re-anchored every 50 ms, rate fitted", or "one-off calibration on the idle queue".
    pub fn method(&self) -> &str {
        &self.method
    }

    /// `timestampPeriod`, ns per tick.
    pub fn period(&self) -> f64 {
        self.period
    }

    /// The timestamps' valid bits, as a mask.
    pub fn mask(&self) -> u64 {
        self.mask
    }

    /// Host ns of the timestamp `ticks`, re-anchoring first when an anchor is due.
    pub fn to_host_ns(&self, ticks: u64) -> u64 {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.reanchor_if_due(&mut s);
        s.clock.map(ticks)
    }

    /// Host ns of a GPU timer reading of `ns` nanoseconds (a CUDA stamp on NVIDIA).
    pub fn gpu_ns_to_host_ns(&self, ns: u64) -> u64 {
        self.to_host_ns(gpu_ns_to_ticks(ns, self.period))
    }

    /// Map many timestamps under one lock (and at most one re-anchor).
    pub fn map_all(&self, ticks: &mut [u64]) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.reanchor_if_due(&mut s);
        for t in ticks {
            *t = s.clock.map(*t);
        }
    }

    fn reanchor_if_due(&self, s: &mut ClockState) {
        let Some(c) = &self.calibrator else { return };
        let now = host_now_ns();
        if now.saturating_sub(s.taken_at_ns) < REANCHOR_NS {
            return;
        }
        match calibrated_anchor(c, s.clock.anchor().ns_per_unit) {
            Ok(a) if accept_reanchor(a.accuracy_ns, s.best_ns, now.saturating_sub(s.anchored_at_ns)) => {
                s.best_ns = s.best_ns.min(a.accuracy_ns);
                s.clock.reanchor(a);
                s.anchored_at_ns = now;
                s.taken_at_ns = now;
            }
            Ok(_) => {
                s.refused += 1;
                s.taken_at_ns = now.saturating_sub(REANCHOR_NS - RETRY_NS);
            }
            Err(e) => {
                log::debug!("re-anchoring the gpu clock failed: {e}");
                s.taken_at_ns = now;
            }
        }
    }

    /// With a one-off clock, read once more (the queue idle again: after the run) and keep how
    /// far the first anchor had drifted by then. A calibrated clock needs nothing here.
    pub fn recheck<E>(&self, read: impl FnOnce() -> Result<OneOffReading, E>) -> Result<(), E> {
        if self.calibrator.is_some() {
            return Ok(());
        }
        let a = read()?.anchor(self.period);
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clock.record_drift(&a);
        Ok(())
    }

    /// The stated error of a mapped time so far, ns ([`ClockInfo::accuracy_ns`], without the
    /// rest).
    pub fn accuracy_ns(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clock.accuracy_ns()
    }

    /// How the mapping was made and how accurate it is.
    pub fn info(&self) -> ClockInfo {
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let method = if self.calibrator.is_some() {
            format!("{} ({} anchors, {} refused as too wide)", self.method, s.clock.anchors(), s.refused)
        } else {
            self.method.clone()
        };
        ClockInfo {
            method,
            accuracy_ns: s.clock.accuracy_ns(),
            drift_ns: s.clock.drift_ns(),
            anchors: s.clock.anchors(),
        }
    }
}

fn calibrated_anchor(c: &Calibrator, ns_per_tick: f64) -> Result<Anchor, vkhip_interop::Error> {
    let infos = [
        vk::CalibratedTimestampInfoKHR::default().time_domain(vk::TimeDomainKHR::DEVICE),
        vk::CalibratedTimestampInfoKHR::default().time_domain(vk::TimeDomainKHR::CLOCK_MONOTONIC),
    ];
    let mut best: Option<Anchor> = None;
    for _ in 0..CALIBRATED_TRIES {
        // SAFETY: valid device with the extension enabled (GpuClock::calibrated's contract);
        // `infos` lives across the call; the EXT entry point takes the same structure (the KHR
        // type is an alias of the EXT one).
        let (ts, deviation) = unsafe {
            match c {
                Calibrator::Khr(d) => d.get_calibrated_timestamps(&infos),
                Calibrator::Ext(d) => d.get_calibrated_timestamps(&infos),
            }
        }
        .map_err(|r| vkhip_interop::Error::vulkan("vkGetCalibratedTimestamps", r))?;
        let a = Anchor { device: ts[0], host_ns: ts[1], ns_per_unit: ns_per_tick, accuracy_ns: deviation };
        if best.is_none_or(|b| a.accuracy_ns < b.accuracy_ns) {
            best = Some(a);
        }
    }
    best.ok_or_else(|| {
        vkhip_interop::Error::unsupported(vkhip_interop::Api::Vulkan, "no calibrated timestamps")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_clock_is_monotonic_and_thread_cpu_advances() {
        let a = host_now_ns();
        let c0 = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(host_now_ns() > a);
        assert!(thread_cpu_ns() > c0);
    }

    #[test]
    fn host_clock_matches_instant() {
        // Instant is CLOCK_MONOTONIC on Linux: the two agree to well under a millisecond.
        let t0 = std::time::Instant::now();
        let h0 = host_now_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let dt_instant = t0.elapsed().as_nanos() as i64;
        let dt_host = (host_now_ns() - h0) as i64;
        assert!((dt_instant - dt_host).abs() < 1_000_000, "{dt_instant} vs {dt_host}");
    }

    #[test]
    fn anchor_maps_both_directions_and_across_a_wrap() {
        let a = Anchor { device: 1000, host_ns: 5_000_000, ns_per_unit: 2.0, accuracy_ns: 0 };
        assert_eq!(a.to_host_ns(1000, u64::MAX), 5_000_000);
        assert_eq!(a.to_host_ns(1500, u64::MAX), 5_001_000);
        assert_eq!(a.to_host_ns(500, u64::MAX), 4_999_000);
        // A 36-bit counter that wrapped after the anchor.
        let mask = (1u64 << 36) - 1;
        let near_top = Anchor { device: mask - 9, host_ns: 1_000_000, ns_per_unit: 1.0, accuracy_ns: 0 };
        assert_eq!(near_top.to_host_ns(10, mask), 1_000_020);
        assert_eq!(near_top.to_host_ns(mask - 19, mask), 999_990);
    }

    #[test]
    fn a_skewed_clock_is_fitted_and_its_drift_stated() {
        // A device clock 25 ppm slow, anchored every 50 ms with ±300 ns anchors: after the
        // second anchor, readings map within a few ns of the truth.
        let truth = |t: u64| (t as f64 * 1.000025) as u64; // host ns of device reading t
        let anchor = |t: u64| Anchor { device: t, host_ns: truth(t), ns_per_unit: 1.0, accuracy_ns: 300 };
        let mut clock = Anchored::new(anchor(0), u64::MAX, 1.0);
        clock.map(1);
        clock.reanchor(anchor(50_000_000));
        let drift = clock.drift_ns();
        assert!((1_200..=1_300).contains(&drift), "{drift}");
        clock.reanchor(anchor(100_000_000));
        let t = 140_000_000;
        assert!(clock.map(t).abs_diff(truth(t)) <= 2, "{} vs {}", clock.map(t), truth(t));
        assert_eq!(clock.accuracy_ns(), 300 + drift);
        assert_eq!(clock.anchors(), 3);
    }

    #[test]
    fn an_unused_anchor_adds_no_drift() {
        let a = |device, host_ns| Anchor { device, host_ns, ns_per_unit: 1.0, accuracy_ns: 10 };
        let mut clock = Anchored::new(a(0, 0), u64::MAX, 1.0);
        // Neither anchor mapped anything: their drift reaches no time, and is not stated.
        // (The device runs 400 ppm fast: within what a fitted rate may be.)
        clock.reanchor(a(50_000_000, 50_020_000));
        clock.reanchor(a(100_000_000, 100_040_000));
        assert_eq!(clock.drift_ns(), 0);
        clock.map(100_000_001);
        clock.reanchor(a(150_000_000, 150_060_100));
        assert_eq!(clock.drift_ns(), 100);
    }

    #[test]
    fn one_off_readings_pick_the_narrowest_window() {
        let mut windows =
            [(100, 5_000, 9_000), (7, 20_000, 20_400), (50, 30_000, 31_000)].into_iter().cycle();
        let clock = GpuClock::one_off(
            || {
                let (ticks, before_ns, after_ns) = windows.next().unwrap_or_default();
                Ok::<_, ()>(OneOffReading { ticks, before_ns, after_ns })
            },
            64,
            1.0,
        )
        .unwrap();
        assert!(!clock.is_calibrated());
        assert_eq!(clock.info().accuracy_ns, 200);
        // The anchor: tick 7 at 20_200 ±200.
        assert_eq!(clock.to_host_ns(107), 20_300);
        // After the run: tick 1_007 at 21_300, where the anchor predicted 21_200.
        clock
            .recheck(|| Ok::<_, ()>(OneOffReading { ticks: 1_007, before_ns: 21_200, after_ns: 21_400 }))
            .unwrap();
        let info = clock.info();
        assert_eq!((info.drift_ns, info.accuracy_ns), (100, 300));
        assert!(
            info.line().starts_with("one-off calibration on the idle queue, accuracy ±0.3 µs"),
            "{}",
            info.line()
        );
    }
}
