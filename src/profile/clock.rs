//! The profiler's one clock and the maps onto it.
//!
//! Every span of the timeline is in host nanoseconds of `CLOCK_MONOTONIC`: the clock
//! `std::time::Instant` uses on Linux, the one `VK_TIME_DOMAIN_CLOCK_MONOTONIC` names, and the one a
//! user's own tools (perf, `clock_gettime`) read. Device clocks are mapped onto it by an
//! [`Anchor`]: one instant known on both clocks, plus the device clock's rate. How each anchor is
//! taken (and so how accurate it is) is said where it is taken: `vk::clock` for Vulkan timestamps,
//! `compute::timing` for CUDA/HIP events.

/// The host clock (`CLOCK_MONOTONIC` now, the calling thread's CPU time) and an [`Anchor`]
/// between a device clock and it: the profiler crate's.
pub use vkhip_profile::clock::{host_now_ns, thread_cpu_ns, Anchor};

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
    fn rss_is_reported_on_linux() {
        let rss = rss_bytes().expect("/proc/self/statm");
        assert!(rss > 1 << 20, "{rss}");
    }
}
