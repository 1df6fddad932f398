//! Host waits on a timeline semaphore: poll the counter (for a value any API may signal), or
//! block in `vkWaitSemaphores` (for a value only Vulkan's queue or the host signals).
//!
//! **The trap.** On NVIDIA's driver a host `vkWaitSemaphores` on a timeline value that CUDA
//! signalled wakes ≈ 8.5–10 ms after the signal, although the counter
//! (`vkGetSemaphoreCounterValue`) shows the value within microseconds. Measured on an H200,
//! driver 580.159.04 (issue 34 of the vkhip repository): a ping-pong of tiny work (a 1-thread
//! CUDA kernel, a 256-byte `vkCmdFillBuffer`) through two shared timelines, 500 round trips
//! after 100 warm-up, medians of 3 interleaved rounds, µs per round trip:
//!
//! | scheme | µs |
//! |---|---:|
//! | CUDA alone, the host waits CUDA's signal with `vkWaitSemaphores` | 8,488 |
//! | CUDA alone, the host waits with CUDA's own stream synchronisation | 11.9 |
//! | CUDA alone, the host spins on the counter | 9.4 |
//! | Vulkan alone, `vkWaitSemaphores` on Vulkan's own signal | 36.6 |
//! | Vulkan ⇄ CUDA, both waits on the GPU | 336.6 |
//! | Vulkan ⇄ CUDA, the host in between, spinning on the counters | 326.1 |
//! | Vulkan ⇄ CUDA, the host in between, `vkWaitSemaphores` on CUDA's signal | 10,455.6 |
//!
//! **The strategy.** A wait that may see a foreign signal reads the counter instead:
//! [`wait_polling`], on the schedule [`Backoff`]. It re-reads the counter back to back for
//! [`Backoff::spin`] (the signal of short GPU work lands within microseconds), then sleeps
//! between reads, starting at [`Backoff::first_sleep`] and growing with the time already waited
//! up to [`Backoff::max_sleep`] (a long wait must not burn a core). A signal is seen at most
//! about one sleep late: with [`Backoff::DEFAULT`], at once during the first 50 µs, later within
//! about 100 µs plus the thread's wake-up. While it sleeps, the thread's timer slack (Linux's
//! `PR_SET_TIMERSLACK`, 50 µs by default, added to every sleep) is 1 µs, restored before the
//! wait returns, so that a sleep of 20 µs is not one of 70 µs.
//!
//! **What it costs**: after the spin, one sleep, wake-up and counter read per
//! [`Backoff::max_sleep`] at most, so a long wait's CPU use is the CPU time of one wake-up per
//! ~100 µs: a small part of a core where a wake-up costs a few µs, more where it is dear (the
//! 2-core virtual machine this crate's CI runs on spends ≈ 45 µs of CPU time per sleep and
//! wake-up). A long wait's lateness and wake-ups trade against each other through
//! [`Backoff::max_sleep`].
//!
//! [`wait_blocking`] is plain `vkWaitSemaphores`: the thread sleeps in the driver and uses no
//! CPU at all, and on every driver it wakes promptly when Vulkan's queue or the host signals.
//! Use it for those values only (a frame throttle waiting for a draw, a copy, a fence-like
//! timeline of your own queue); use [`wait_polling`] for anything CUDA or HIP may signal, and
//! when you do not know.
//!
//! ```
//! use std::time::Duration;
//! use vkhip_interop::vulkan::wait::{Backoff, Pause};
//! let b = Backoff::DEFAULT;
//! // Spin first, then sleep: short sleeps at first, growing with the time waited, capped.
//! assert_eq!(b.pause(Duration::ZERO), Pause::Spin);
//! assert_eq!(b.pause(b.spin), Pause::Sleep(b.first_sleep));
//! assert_eq!(b.pause(b.spin + Duration::from_micros(30)), Pause::Sleep(Duration::from_micros(30)));
//! assert_eq!(b.pause(Duration::from_secs(1)), Pause::Sleep(b.max_sleep));
//! ```

// why: a wait that may see a foreign signal must not block in vkWaitSemaphores (≈ 8.5-10 ms late
// on NVIDIA, 8,488 µs per round trip on the H200 against 9.4 µs spinning on the counter and 11.9 µs
// with CUDA's stream synchronisation; the table above). Spinning on the counter alone would burn a
// core for every long wait. So: spin briefly (the signal usually lands within microseconds), then
// sleep, the sleeps growing to a cap that bounds both the lateness and the wake-ups.

use crate::error::{Api, Error, Result};
use ash::vk;
use std::time::{Duration, Instant};

/// The schedule of [`wait_polling`]: how long to re-read the counter back to back, then how
/// long to sleep between reads. [`Backoff::pause`] is the whole schedule, a pure function of
/// the time waited so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Re-read the counter back to back (with a spin-loop hint) for this long. The CUDA
    /// signal → counter latency measured on an H200 is a few µs, so short GPU work is seen at
    /// once; a signal later than this waits for a sleep to end.
    pub spin: Duration,
    /// The first sleep after the spin.
    pub first_sleep: Duration,
    /// The longest sleep: how late, at most, a long wait sees the signal (plus the thread's
    /// wake-up), and how often, at most, a long wait wakes.
    pub max_sleep: Duration,
}

/// What [`wait_polling`] does between two reads of the counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// Read again at once (after a spin-loop hint).
    Spin,
    /// Sleep this long, then read again.
    Sleep(Duration),
}

impl Backoff {
    /// Spin 50 µs, then sleep 10 µs growing to 100 µs: a signal is seen within about 100 µs
    /// (plus the thread's wake-up) whenever it comes, and a long wait wakes at most 10,000 times
    /// a second.
    pub const DEFAULT: Backoff = Backoff {
        spin: Duration::from_micros(50),
        first_sleep: Duration::from_micros(10),
        max_sleep: Duration::from_micros(100),
    };

    /// The pause after `waited` of waiting: [`Pause::Spin`] during the first [`Self::spin`];
    /// then a sleep as long as the time already slept (so the sleeps roughly double), at least
    /// [`Self::first_sleep`] and at most [`Self::max_sleep`].
    pub fn pause(&self, waited: Duration) -> Pause {
        match waited.checked_sub(self.spin) {
            None => Pause::Spin,
            Some(slept) => Pause::Sleep(slept.clamp(self.first_sleep, self.max_sleep.max(self.first_sleep))),
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::DEFAULT
    }
}

/// Host-wait until the timeline `semaphore` of `device` reaches `value`, for at most `timeout`,
/// by reading its counter (`vkGetSemaphoreCounterValue`) on `backoff`'s schedule. Right for a
/// value any API signals: CUDA, HIP, Vulkan's queue or the host (see the module's note for why
/// `vkWaitSemaphores` is not). Returns an [`ErrorKind::Timeout`](crate::ErrorKind::Timeout)
/// error naming the value after `timeout`, and a Vulkan error if a read fails (a lost device).
///
/// # Safety
/// `semaphore` is a timeline semaphore created from `device`, and stays alive for the call.
pub unsafe fn wait_polling(
    device: &ash::Device,
    semaphore: vk::Semaphore,
    value: u64,
    timeout: Duration,
    backoff: &Backoff,
) -> Result<()> {
    let start = Instant::now();
    let mut slack: Option<TimerSlack> = None;
    loop {
        // SAFETY: per this function's contract.
        let now = unsafe { device.get_semaphore_counter_value(semaphore) }
            .map_err(|r| Error::vulkan("vkGetSemaphoreCounterValue", r))?;
        if now >= value {
            return Ok(());
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(Error::timeout(
                Api::Vulkan,
                "vkGetSemaphoreCounterValue",
                format!("timeline value {value} (at {now})"),
                timeout.as_secs(),
            ));
        }
        match backoff.pause(waited) {
            Pause::Spin => std::hint::spin_loop(),
            Pause::Sleep(nap) => {
                slack.get_or_insert_with(TimerSlack::tighten);
                std::thread::sleep(nap.min(timeout - waited));
            }
        }
    }
}

/// Host-wait until the timeline `semaphore` of `device` reaches `value`, for at most `timeout`,
/// blocking in `vkWaitSemaphores`: no CPU used while it waits. Only for values Vulkan's queue or
/// the host signals: on NVIDIA's driver a value CUDA signals wakes it ≈ 8.5–10 ms late (the
/// module's note); use [`wait_polling`] for those.
///
/// # Safety
/// `semaphore` is a timeline semaphore created from `device`, and stays alive for the call.
pub unsafe fn wait_blocking(
    device: &ash::Device,
    semaphore: vk::Semaphore,
    value: u64,
    timeout: Duration,
) -> Result<()> {
    let (sems, values) = ([semaphore], [value]);
    let info = vk::SemaphoreWaitInfo::default().semaphores(&sems).values(&values);
    let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
    // SAFETY: per this function's contract.
    match unsafe { device.wait_semaphores(&info, nanos) } {
        Ok(()) => Ok(()),
        Err(vk::Result::TIMEOUT) => Err(Error::timeout(
            Api::Vulkan,
            "vkWaitSemaphores",
            format!("timeline value {value}"),
            timeout.as_secs(),
        )),
        Err(r) => Err(Error::vulkan("vkWaitSemaphores", r)),
    }
}

/// The calling thread's timer slack set to 1 µs while it lives, then restored (Linux; nothing
/// elsewhere). Without it every sleep of [`wait_polling`] lasts 50 µs longer than asked, the
/// default slack.
struct TimerSlack {
    #[cfg(target_os = "linux")]
    previous: Option<libc::c_ulong>,
}

impl TimerSlack {
    fn tighten() -> Self {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: PR_GET_TIMERSLACK takes no pointer and returns the calling thread's slack
            // in nanoseconds (or -1).
            let previous = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            let previous = libc::c_ulong::try_from(previous).ok().filter(|&p| p > 1_000);
            if previous.is_some() {
                // SAFETY: PR_SET_TIMERSLACK takes a value, no pointer; it changes this thread only.
                unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1_000 as libc::c_ulong) };
            }
            TimerSlack { previous }
        }
        #[cfg(not(target_os = "linux"))]
        TimerSlack {}
    }
}

impl Drop for TimerSlack {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        if let Some(previous) = self.previous {
            // SAFETY: as in `tighten`: the slack this thread had before.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, previous) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn the_schedule_spins_then_sleeps_growing_to_the_cap() {
        let b = Backoff::DEFAULT;
        for us in [0, 1, 10, 49] {
            assert_eq!(b.pause(us * US), Pause::Spin, "{us} µs");
        }
        let sleeps: Vec<Pause> =
            [50, 55, 60, 70, 90, 130, 150, 1_000, 100_000_000].map(|us| b.pause(us * US)).to_vec();
        let want = [10, 10, 10, 20, 40, 80, 100, 100, 100].map(|us| Pause::Sleep(us * US));
        assert_eq!(sleeps, want);
    }

    /// Walk the schedule as `wait_polling` does (time advances by each sleep): the sleeps never
    /// shrink, reach the cap within a few hundred µs, and a 100 ms wait wakes about 1,000 times.
    #[test]
    fn a_long_wait_wakes_once_per_cap() {
        let b = Backoff::DEFAULT;
        let (mut t, mut wakes, mut last) = (b.spin, 0u32, Duration::ZERO);
        let mut first_at_cap = None;
        while t < Duration::from_millis(100) {
            let Pause::Sleep(nap) = b.pause(t) else { panic!("a spin after the spin window, at {t:?}") };
            assert!(nap >= last, "{nap:?} after {last:?}");
            if nap == b.max_sleep && first_at_cap.is_none() {
                first_at_cap = Some(t);
            }
            (t, wakes, last) = (t + nap, wakes + 1, nap);
        }
        assert!(first_at_cap.is_some_and(|at| at < 300 * US), "{first_at_cap:?}");
        assert!((990..=1_010).contains(&wakes), "{wakes} wake-ups in 100 ms");
    }

    #[test]
    fn a_cap_below_the_first_sleep_keeps_the_first_sleep() {
        let b = Backoff { spin: Duration::ZERO, first_sleep: 30 * US, max_sleep: 10 * US };
        assert_eq!(b.pause(Duration::ZERO), Pause::Sleep(30 * US));
        assert_eq!(b.pause(Duration::from_secs(5)), Pause::Sleep(30 * US));
        assert_eq!(Backoff::default(), Backoff::DEFAULT);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_timer_slack_is_tightened_and_restored() {
        // A thread of its own: the test harness' threads keep their slack.
        std::thread::spawn(|| {
            // SAFETY: no pointers; this thread only.
            let get = || unsafe { libc::prctl(libc::PR_GET_TIMERSLACK) };
            let before = get();
            {
                let _tight = TimerSlack::tighten();
                // 1 µs, unless the thread's slack was tighter already (a real-time thread's is 0).
                assert_eq!(get(), before.min(1_000), "the slack was {before} ns");
            }
            assert_eq!(get(), before);
        })
        .join()
        .expect("the slack thread");
    }
}
