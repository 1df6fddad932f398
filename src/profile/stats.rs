//! Streaming statistics in constant memory: a run of any length keeps one HDR histogram per
//! figure (3 significant digits, 1 ns to 60 s) plus an exact sum for the mean, never a list of
//! frames.

use hdrhistogram::Histogram;

/// Longest duration a histogram records exactly; longer values saturate (60 s).
const MAX_NS: u64 = 60_000_000_000;

/// One figure's distribution, in nanoseconds.
///
/// # Examples
///
/// ```
/// use vkhip::profile::stats::Stat;
///
/// let mut s = Stat::default();
/// assert!(s.is_empty());
/// assert_eq!(s.mean_ms(), 0.0);
/// for ns in [1_000_000, 2_000_000, 3_000_000, 4_000_000] {
///     s.record(ns); // 1, 2, 3 and 4 ms
/// }
/// assert_eq!(s.count(), 4);
/// assert_eq!(s.mean_ms(), 2.5); // the mean is exact
/// // Percentiles come from the histogram: exact to 3 significant digits.
/// assert!((s.p50_ms() - 2.0).abs() < 0.01);
/// assert!((s.p99_ms() - 4.0).abs() < 0.01);
/// assert!((s.summary().fps - 400.0).abs() < 1e-9);
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

    /// Exact mean, ms (0 when empty).
    pub fn mean_ms(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.sum_ns / self.count() as f64 / 1e6
        }
    }

    /// The value at percentile `p` (0..=100), ms, to the histogram's 3 significant digits.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        self.hist.value_at_quantile(p / 100.0) as f64 / 1e6
    }

    pub fn p50_ms(&self) -> f64 {
        self.percentile_ms(50.0)
    }

    pub fn p99_ms(&self) -> f64 {
        self.percentile_ms(99.0)
    }

    /// Mean, p50 and p99 as a [`FrameSummary`] (fps from the mean).
    pub fn summary(&self) -> FrameSummary {
        let mean = self.mean_ms();
        FrameSummary {
            mean_ms: mean,
            p50_ms: self.p50_ms(),
            p99_ms: self.p99_ms(),
            fps: if mean > 0.0 { 1e3 / mean } else { 0.0 },
        }
    }
}

/// Mean, median and 99th percentile of a figure, ms, and the rate the mean gives.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSummary {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub fps: f64,
}

/// Median of a sample (0 for an empty one).
///
/// # Examples
///
/// ```
/// use vkhip::profile::stats::median;
///
/// assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
/// assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
/// assert_eq!(median(&[]), 0.0);
/// ```
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
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
        assert_eq!(s.count(), 100);
        assert!((s.mean_ms() - 0.0505).abs() < 1e-12, "{}", s.mean_ms());
        assert!((s.p50_ms() - 0.050).abs() <= 0.050 * 1e-3, "{}", s.p50_ms());
        assert!((s.p99_ms() - 0.099).abs() <= 0.099 * 1e-3, "{}", s.p99_ms());
        let sum = s.summary();
        assert!((sum.fps - 1e3 / 0.0505).abs() < 1e-6);
    }

    #[test]
    fn empty_and_saturating() {
        let mut s = Stat::default();
        assert_eq!((s.mean_ms(), s.p99_ms()), (0.0, 0.0));
        s.record(u64::MAX);
        assert!(s.p50_ms() >= 59_000.0 && s.p50_ms() <= 60_100.0, "{}", s.p50_ms());
    }
}
