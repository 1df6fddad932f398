//! Summaries over a cell's repetitions: medians and spreads.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::parse::Measurement;
//! use vkhip::app::matrix::run::Outcome;
//! use vkhip::app::matrix::stats::{median, spread, Summary};
//!
//! assert_eq!(median(&[0.5, 9.0, 2.0, 3.0]), Some(2.5));
//! assert_eq!(spread(&[0.5, 9.0, 2.0, 3.0]), Some((0.5, 9.0)));
//!
//! let ok = |mean_ms: f64| {
//!     Outcome::Ok(Measurement {
//!         mean_ms,
//!         p50_ms: mean_ms,
//!         p99_ms: mean_ms,
//!         fps: 1e3 / mean_ms,
//!         render_cpu_p50_us: 10.0,
//!         render_cpu_mean_us: Some(12.0),
//!         startup_s: None,
//!         resolved: "bridged, 3 slot(s)".into(),
//!         device: "llvmpipe".into(),
//!         handoff_in_us: None,
//!         handoff_out_us: None,
//!         gpu_limit: None,
//!         post: None,
//!     })
//! };
//! // Only the runs that measured something count; the first problem is kept for the status.
//! let s = Summary::of(&[ok(2.0), Outcome::Failed("exit code 1".into()), ok(4.0), ok(3.0)]);
//! assert_eq!((s.frame_ms, s.spread_ms), (Some(3.0), Some((2.0, 4.0))));
//! assert_eq!(s.status(), "ok (3 of 4; failed: exit code 1)");
//! let native = Summary::of(&[ok(1.5)]);
//! assert_eq!(s.ratio_to(Some(&native)), Some(2.0));
//!
//! // The GPU limit row's value is its runs' GPU busy time (here: draw + kernel), not their frame time.
//! use vkhip::app::matrix::parse::GpuLimit;
//! let timed = |draw_ms, kernel_ms| match ok(2.0) {
//!     Outcome::Ok(m) => Outcome::Ok(Measurement { gpu_limit: Some(GpuLimit { draw_ms, kernel_ms, busy_ms: None }), ..m }),
//!     o => o,
//! };
//! let limit = Summary::for_row(&[timed(1.0, 0.25), timed(1.2, 0.25), timed(0.9, 0.25)], true);
//! assert_eq!((limit.frame_ms, limit.spread_ms), (Some(1.25), Some((1.15, 1.45))));
//! assert_eq!(s.ratio_to(Some(&limit)), Some(3.0 / 1.25));
//! ```

use super::run::Outcome;

/// Median of `v` (mean of the middle two for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return None;
    }
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 { s[n / 2] } else { (s[n / 2 - 1] + s[n / 2]) / 2.0 })
}

/// Smallest and largest of `v`; `None` when empty.
pub fn spread(v: &[f64]) -> Option<(f64, f64)> {
    v.iter().copied().filter(|x| x.is_finite()).fold(None, |acc, x| match acc {
        None => Some((x, x)),
        Some((lo, hi)) => Some((lo.min(x), hi.max(x))),
    })
}

/// One cell's repetitions, summarised.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Median over the ok repetitions of each one's mean frame time.
    pub frame_ms: Option<f64>,
    pub spread_ms: Option<(f64, f64)>,
    pub render_cpu_p50_us: Option<f64>,
    /// Median over the repetitions of each one's mean render CPU time.
    pub render_cpu_mean_us: Option<f64>,
    pub startup_s: Option<f64>,
    /// Medians of the repetitions' GPU hand-off p50s, µs (in: `rendered` → kernel start; out:
    /// kernel end → draw readable), when the runs measured them.
    pub handoff_in_us: Option<f64>,
    pub handoff_out_us: Option<f64>,
    /// Median over the repetitions of each one's GPU limit (draw + kernel GPU p50s), ms, when
    /// the runs measured it (`--gpu-timing on`; always in the [`super::preset::LIMIT`] row).
    pub limit_ms: Option<f64>,
    /// Medians of the repetitions' post stage figures (`--post`): the filter's p50, and the
    /// latency draw end → copy end at p50 and p99, ms, when the runs measured them.
    pub post_filter_ms: Option<f64>,
    pub post_latency_p50_ms: Option<f64>,
    pub post_latency_p99_ms: Option<f64>,
    /// The resolved sync line of the first ok repetition.
    pub resolved: Option<String>,
    pub ok: usize,
    pub runs: usize,
    /// The first repetition that was not ok, if any.
    pub problem: Option<Outcome>,
}

impl Summary {
    pub fn of(runs: &[Outcome]) -> Summary {
        let ms: Vec<_> = runs.iter().filter_map(Outcome::measurement).collect();
        let pick = |f: fn(&super::parse::Measurement) -> Option<f64>| {
            ms.iter().filter_map(|m| f(m)).collect::<Vec<_>>()
        };
        let means = pick(|m| Some(m.mean_ms));
        Summary {
            frame_ms: median(&means),
            spread_ms: spread(&means),
            render_cpu_p50_us: median(&pick(|m| Some(m.render_cpu_p50_us))),
            render_cpu_mean_us: median(&pick(|m| m.render_cpu_mean_us)),
            startup_s: median(&pick(|m| m.startup_s)),
            handoff_in_us: median(&pick(|m| m.handoff_in_us)),
            handoff_out_us: median(&pick(|m| m.handoff_out_us)),
            limit_ms: median(&pick(|m| m.gpu_limit.map(|g| g.total_ms()))),
            post_filter_ms: median(&pick(|m| m.post.as_ref()?.filter_p50_ms)),
            post_latency_p50_ms: median(&pick(|m| m.post.as_ref()?.latency_p50_ms)),
            post_latency_p99_ms: median(&pick(|m| m.post.as_ref()?.latency_p99_ms)),
            resolved: ms.first().map(|m| m.resolved.clone()),
            ok: ms.len(),
            runs: runs.len(),
            problem: runs.iter().find(|o| o.measurement().is_none()).cloned(),
        }
    }

    /// The summary a row shows: for the [`super::preset::LIMIT`] row (`limit`), its value is the
    /// GPU limit (draw + kernel), not its frame time, so every ratio to it is a ratio to the limit.
    pub fn for_row(runs: &[Outcome], limit: bool) -> Summary {
        let mut s = Summary::of(runs);
        if limit {
            let totals: Vec<f64> =
                runs.iter().filter_map(|o| o.measurement()?.gpu_limit.map(|g| g.total_ms())).collect();
            s.frame_ms = median(&totals);
            s.spread_ms = spread(&totals);
        }
        s
    }

    /// `ok`, `ok (2 of 3)`, or the first problem's status and reason.
    pub fn status(&self) -> String {
        match &self.problem {
            None => "ok".into(),
            Some(p) if self.ok > 0 => {
                format!("ok ({} of {}; {}: {})", self.ok, self.runs, p.status(), p.reason())
            }
            Some(p) => format!("{}: {}", p.status(), p.reason()),
        }
    }

    /// This summary's frame time over `base`'s, when both have one.
    pub fn ratio_to(&self, base: Option<&Summary>) -> Option<f64> {
        let b = base?.frame_ms?;
        Some(self.frame_ms? / b).filter(|r| r.is_finite())
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::Measurement;
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 2.0]), Some(2.0));
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[2.0, 0.5, 9.0, 3.0]), Some((0.5, 9.0)));
    }

    fn ok(mean: f64, cpu: f64, startup: Option<f64>) -> Outcome {
        Outcome::Ok(Measurement {
            mean_ms: mean,
            p50_ms: mean,
            p99_ms: mean * 2.0,
            fps: 1e3 / mean,
            render_cpu_p50_us: cpu,
            render_cpu_mean_us: Some(cpu * 2.0),
            startup_s: startup,
            resolved: "external, 3 slot(s)".into(),
            device: "d".into(),
            handoff_in_us: Some(mean * 10.0),
            handoff_out_us: None,
            gpu_limit: None,
            post: None,
        })
    }

    #[test]
    fn summary_uses_only_ok_runs() {
        let runs = [
            ok(2.0, 10.0, None),
            Outcome::Failed("exit code 1: lost".into()),
            ok(4.0, 30.0, Some(0.5)),
            ok(3.0, 20.0, None),
        ];
        let s = Summary::of(&runs);
        assert_eq!(s.frame_ms, Some(3.0));
        assert_eq!(s.spread_ms, Some((2.0, 4.0)));
        assert_eq!(s.render_cpu_p50_us, Some(20.0));
        assert_eq!(s.render_cpu_mean_us, Some(40.0));
        assert_eq!(s.startup_s, Some(0.5));
        assert_eq!((s.handoff_in_us, s.handoff_out_us), (Some(30.0), None));
        assert_eq!((s.ok, s.runs), (3, 4));
        assert_eq!(s.status(), "ok (3 of 4; failed: exit code 1: lost)");
        let base = Summary::of(&[ok(1.5, 1.0, None)]);
        assert_eq!(s.ratio_to(Some(&base)), Some(2.0));
        assert_eq!(s.ratio_to(None), None);
        let none = Summary::of(&[Outcome::Unsupported("no cuda".into())]);
        assert_eq!(none.frame_ms, None);
        assert_eq!(none.status(), "unsupported: no cuda");
        assert_eq!(s.ratio_to(Some(&none)), None);
        assert_eq!(none.ratio_to(Some(&base)), None);
    }
}
