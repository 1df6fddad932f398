//! Streaming statistics in constant memory: a run of any length keeps one HDR histogram per
//! figure (3 significant digits, 1 ns to 60 s) plus an exact sum for the mean, never a list of
//! values.

use hdrhistogram::Histogram;

/// Longest duration a histogram records exactly; longer values saturate (60 s).
pub const MAX_NS: u64 = 60_000_000_000;

/// One figure's distribution, in nanoseconds.
///
/// # Examples
///
/// ```
/// use vkhip_profile::stats::Stat;
///
/// let mut s = Stat::default();
/// for ns in [1_000_000, 2_000_000, 3_000_000, 4_000_000] {
///     s.record(ns); // 1, 2, 3 and 4 ms
/// }
/// let f = s.figure();
/// assert_eq!(f.count, 4);
/// assert_eq!(f.mean_ns, 2_500_000.0); // the mean is exact
/// // Percentiles come from the histogram: exact to 3 significant digits.
/// assert!(f.p50_ns.abs_diff(2_000_000) <= 2_000);
/// assert!(f.p99_ns.abs_diff(4_000_000) <= 4_000);
/// ```
#[derive(Clone, Debug)]
pub struct Stat {
    hist: Histogram<u32>,
    sum_ns: f64,
}

impl Default for Stat {
    fn default() -> Self {
        Stat {
            // 1 ns .. 60 s at 3 significant digits: about 100 KiB, whatever the run's length.
            hist: Histogram::new_with_bounds(1, MAX_NS, 3).expect("constant, valid histogram bounds"),
            sum_ns: 0.0,
        }
    }
}

impl Stat {
    /// Record one value (ns); values past 60 s saturate there.
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.min(MAX_NS));
        self.sum_ns += ns as f64;
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    /// The value at percentile `p` (0..=100), ns, to the histogram's 3 significant digits (0
    /// when empty).
    pub fn percentile_ns(&self, p: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.hist.value_at_quantile(p / 100.0)
    }

    /// Count, exact mean, p50, p99 and maximum.
    pub fn figure(&self) -> Figure {
        if self.is_empty() {
            return Figure::default();
        }
        Figure {
            count: self.count(),
            mean_ns: self.sum_ns / self.count() as f64,
            p50_ns: self.percentile_ns(50.0),
            p99_ns: self.percentile_ns(99.0),
            max_ns: self.hist.max(),
        }
    }
}

/// A figure's summary, ns (all 0 when nothing was recorded).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figure {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl Figure {
    pub fn p50_ms(&self) -> f64 {
        self.p50_ns as f64 / 1e6
    }

    pub fn p99_ms(&self) -> f64 {
        self.p99_ns as f64 / 1e6
    }

    pub fn p50_us(&self) -> f64 {
        self.p50_ns as f64 / 1e3
    }

    pub fn p99_us(&self) -> f64 {
        self.p99_ns as f64 / 1e3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_is_exact_and_percentiles_are_within_three_digits() {
        let mut s = Stat::default();
        for us in 1..=100u64 {
            s.record(us * 1000);
        }
        let f = s.figure();
        assert_eq!(f.count, 100);
        assert_eq!(f.mean_ns, 50_500.0);
        assert!(f.p50_ns.abs_diff(50_000) <= 50, "{}", f.p50_ns);
        assert!(f.p99_ns.abs_diff(99_000) <= 99, "{}", f.p99_ns);
        assert!(f.max_ns.abs_diff(100_000) <= 100, "{}", f.max_ns);
    }

    #[test]
    fn empty_and_saturating() {
        let mut s = Stat::default();
        assert_eq!(s.figure(), Figure::default());
        s.record(u64::MAX);
        assert!(s.percentile_ns(50.0).abs_diff(MAX_NS) <= MAX_NS / 1000);
    }
}
