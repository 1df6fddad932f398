//! Streaming statistics in constant memory: a run of any length keeps one HDR histogram per
//! figure (3 significant digits, 1 ns to 60 s) plus an exact sum for the mean, never a list of
//! frames: the profiler crate's ([`vkhip_profile::stats::Stat`]), read in the app's units.

/// One figure's distribution, in nanoseconds, read in milliseconds.
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
#[derive(Clone, Debug, Default)]
pub struct Stat(vkhip_profile::stats::Stat);

impl Stat {
    /// Record one value (ns); values past 60 s saturate there.
    pub fn record(&mut self, ns: u64) {
        self.0.record(ns);
    }

    pub fn count(&self) -> u64 {
        self.0.count()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Exact mean, ms (0 when empty).
    pub fn mean_ms(&self) -> f64 {
        self.0.figure().mean_ns / 1e6
    }

    /// The value at percentile `p` (0..=100), ms, to the histogram's 3 significant digits.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        self.0.percentile_ns(p) as f64 / 1e6
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
