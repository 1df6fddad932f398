//! The profiler's one clock and the maps onto it.
//!
//! Every span of the timeline is in host nanoseconds of `CLOCK_MONOTONIC`: the clock
//! `std::time::Instant` uses on Linux, the one `VK_TIME_DOMAIN_CLOCK_MONOTONIC` names, and the one a
//! user's own tools (perf, `clock_gettime`) read. Device clocks are mapped onto it by an
//! [`Anchor`]: one instant known on both clocks, plus the device clock's rate. How each anchor is
//! taken (and so how accurate it is) is said where it is taken: `vk::clock` for Vulkan timestamps,
//! `compute::timing` for CUDA/HIP events.

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

/// Resident set size of this process in bytes (from `/proc/self/statm`), if the kernel says.
pub fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok().filter(|&p| p > 0)?)
}

/// How one device clock was put on the host clock, for the report and the trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClockInfo {
    pub method: String,
    /// Largest error of a mapped time, ns (anchor accuracy plus the largest drift seen).
    pub accuracy_ns: u64,
    /// Largest difference between where one anchor predicted the next and where it was measured
    /// (0 when the clock is anchored once), ns. It includes both anchors' own error.
    pub drift_ns: u64,
    /// The device's times are on the Vulkan device clock ([`crate::profile::Stamp::Gpu`]) and
    /// mapped through the Vulkan clock's anchors: the accuracy is the Vulkan mapping's (set where
    /// the two are combined, `app::profiling`), not this value's.
    pub on_vulkan_clock: bool,
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
    /// How far the anchor's host time may be from the truth, ns (half the window it was taken in,
    /// or the driver's own maximum deviation).
    pub accuracy_ns: u64,
}

impl Anchor {
    /// Host ns of the device reading `t` (readings before the anchor map before it). `mask`
    /// keeps the clock's valid bits, so a counter that wrapped since the anchor still maps.
    ///
    /// # Examples
    ///
    /// ```
    /// use vkhip::profile::clock::Anchor;
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

static PROCESS_START_NS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Remember "now" as the process's start (call first thing in `main`); later calls do nothing.
pub fn mark_process_start() {
    PROCESS_START_NS.get_or_init(host_now_ns);
}

/// Log (debug level) how long after the process's start `what` was reached: the start-up
/// timeline behind the report's `start-up` line (`RUST_LOG=vkhip=debug`).
pub fn startup_mark(what: &str) {
    if let Some(start) = process_start_ns() {
        log::debug!("start-up: {what} at {:.1} ms", host_now_ns().saturating_sub(start) as f64 / 1e6);
    }
}

/// The host time [`mark_process_start`] recorded (None if it was never called: a library user).
pub fn process_start_ns() -> Option<u64> {
    PROCESS_START_NS.get().copied()
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
    fn rss_is_reported_on_linux() {
        let rss = rss_bytes().expect("/proc/self/statm");
        assert!(rss > 1 << 20, "{rss}");
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
}
