//! Frame timing: host timestamps per frame phase, percentiles, and the frame report.
//!
//! Each frame records the host time at the start of its phases (throttle → compute → record and
//! submit → present/end). The frame time is the period between consecutive frame starts. This is
//! the seam for the profiler: GPU timestamps and a trace export attach to [`FrameTimes`].

use std::time::{Duration, Instant};

/// Phases of one frame on the render thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct PhaseTimes {
    pub start: Option<Instant>,
    /// Host time spent in the frames-in-flight throttle.
    pub throttle: Duration,
    /// Host time spent handing frame f to the compute side.
    pub compute: Duration,
    /// Host time spent recording and submitting the draw (and presenting).
    pub submit: Duration,
}

/// All frames of a run.
#[derive(Clone, Debug, Default)]
pub struct FrameTimes {
    pub frames: Vec<PhaseTimes>,
    /// When the last frame's draw was known to be finished.
    pub end: Option<Instant>,
    /// GPU time of each frame's draw command buffer (timestamp queries), milliseconds.
    pub gpu_draw_ms: Vec<f64>,
}

impl FrameTimes {
    /// Frame periods in milliseconds (start to next start; the last to `end`).
    pub fn periods_ms(&self) -> Vec<f64> {
        let starts: Vec<Instant> = self.frames.iter().filter_map(|f| f.start).chain(self.end).collect();
        starts.windows(2).map(|w| (w[1] - w[0]).as_secs_f64() * 1e3).collect()
    }

    /// Mean host time per phase in microseconds: (throttle, compute, submit).
    pub fn phase_means_us(&self) -> (f64, f64, f64) {
        let n = self.frames.len().max(1) as f64;
        let sum = |f: fn(&PhaseTimes) -> Duration| {
            self.frames.iter().map(f).sum::<Duration>().as_secs_f64() * 1e6 / n
        };
        (sum(|p| p.throttle), sum(|p| p.compute), sum(|p| p.submit))
    }
}

/// The value at percentile `p` (0..=100) of `values`, nearest-rank.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// Summary of frame periods.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FrameSummary {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub fps: f64,
}

impl FrameSummary {
    pub fn of(periods_ms: &[f64]) -> Self {
        if periods_ms.is_empty() {
            return FrameSummary::default();
        }
        let mean = periods_ms.iter().sum::<f64>() / periods_ms.len() as f64;
        FrameSummary {
            mean_ms: mean,
            p50_ms: percentile(periods_ms, 50.0),
            p99_ms: percentile(periods_ms, 99.0),
            fps: if mean > 0.0 { 1e3 / mean } else { 0.0 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 100.0), 100.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    #[test]
    fn summary_of_constant_periods() {
        let s = FrameSummary::of(&[10.0; 5]);
        assert_eq!((s.mean_ms, s.p50_ms, s.p99_ms), (10.0, 10.0, 10.0));
        assert!((s.fps - 100.0).abs() < 1e-9);
    }

    #[test]
    fn periods_from_starts_and_end() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let frames = [0, 10, 30]
            .iter()
            .map(|&o| PhaseTimes { start: Some(t0 + ms(o)), ..Default::default() })
            .collect();
        let ft = FrameTimes { frames, end: Some(t0 + ms(60)), gpu_draw_ms: Vec::new() };
        let p = ft.periods_ms();
        assert_eq!(p.len(), 3);
        assert!((p[0] - 10.0).abs() < 1e-6 && (p[1] - 20.0).abs() < 1e-6 && (p[2] - 30.0).abs() < 1e-6);
    }
}
