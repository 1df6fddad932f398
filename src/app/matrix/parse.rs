//! Reading a child run's frame report (`vkhip --headless`'s stdout) into numbers.
//!
//! The lines relied on (two spaces, the label padded to 12 characters, a space, the value):
//! `frame time` (mean, p50, p99, fps), `render cpu` (p50, and the mean when there), `sync` (the resolved configuration,
//! kept verbatim), `device`, and the optional `start-up`, `hand-off in` and `hand-off out` (the
//! p50 of their exposed part, with GPU timing on), `GPU limit` (the GPU's busy time per frame and
//! the draw's and the kernel's GPU p50s, when known) and the post stage's `post filter`,
//! `post in`, `post out` (p50s; the hand-offs' exposed part) and `post latency` (p50 and p99).
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::parse::{parse_report, GpuLimit, ParseError};
//!
//! let report = "vkhip frame report
//!   frame time   mean 0.153 ms   p50 0.150 ms   p99 0.201 ms   (6535.9 fps)
//!   render cpu   p50 1.2 ms   p99 4.0 ms   mean 1.5 ms   (render thread CPU time per frame)
//!   start-up     0.412 s to the first frame (process start → first draw finished)
//!   sync         external, 8 slot(s), run-ahead 0, batch 7
//!   hand-off in  exposed p50 41.5 µs   p99 90.2 µs   (2.1% of the frame; 'rendered' …; latency p50 300.0 µs, …)
//!   hand-off out exposed p50 12.0 µs   p99 30.0 µs   (0.8% of the frame; 'computed' …)
//!   GPU limit    frame p50 at 1.15× the GPU's limit: busy 0.130 ms per frame (p50 of each frame's union of kernel 0.005 ms, draw 0.126 ms: their p50s)
//!   device       NVIDIA H100 80GB HBM3 [discrete GPU]
//! ";
//! let m = parse_report(report).unwrap();
//! assert_eq!((m.mean_ms, m.p50_ms, m.p99_ms, m.fps), (0.153, 0.150, 0.201, 6535.9));
//! assert_eq!((m.render_cpu_p50_us, m.startup_s), (1200.0, Some(0.412))); // ms read as µs
//! assert_eq!(m.render_cpu_mean_us, Some(1500.0));
//! assert_eq!(m.resolved, "external, 8 slot(s), run-ahead 0, batch 7");
//! assert_eq!(m.device, "NVIDIA H100 80GB HBM3 [discrete GPU]");
//! assert_eq!((m.handoff_in_us, m.handoff_out_us), (Some(41.5), Some(12.0)));
//! assert_eq!(m.gpu_limit, Some(GpuLimit { draw_ms: 0.126, kernel_ms: 0.005, busy_ms: Some(0.130) }));
//! assert_eq!(m.gpu_limit.unwrap().total_ms(), 0.130);
//! assert_eq!(m.post, None); // no post stage
//! let unknown = report.replace("frame p50 at 1.15× the GPU's limit: busy 0.130 ms per frame (p50 of each frame's union of kernel 0.005 ms, draw 0.126 ms: their p50s)", "unknown: --gpu-timing off");
//! assert_eq!(parse_report(&unknown).unwrap().gpu_limit, None);
//!
//! // A report cut short, and a line that is not what it should be.
//! assert_eq!(parse_report("vkhip frame report\n"), Err(ParseError::Missing("frame time")));
//! let bad = report.replace("p99 0.201 ms", "p99 n/a");
//! let err = parse_report(&bad).unwrap_err();
//! assert!(matches!(err, ParseError::Malformed { label: "frame time", .. }), "{err}");
//! ```

/// What one run measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub fps: f64,
    pub render_cpu_p50_us: f64,
    /// The `render cpu` line's mean, when the report has one.
    pub render_cpu_mean_us: Option<f64>,
    /// Seconds from process start to the first frame, when the report states it.
    pub startup_s: Option<f64>,
    /// The text after `sync`, e.g. `external, 8 slot(s), run-ahead 4, batch 4`.
    pub resolved: String,
    /// The text after `device`.
    pub device: String,
    /// p50 of the exposed part of the hand-off in (`rendered` → the compute side's first work)
    /// and out (`computed` → the draw), µs, when the report has them (GPU timing on).
    pub handoff_in_us: Option<f64>,
    pub handoff_out_us: Option<f64>,
    /// The `GPU limit` line's draw and kernel GPU p50s, when the run measured them.
    pub gpu_limit: Option<GpuLimit>,
    /// The post stage's figures, when the report has a `post …` line (`--post`); boxed, so a
    /// run without them stays small.
    pub post: Option<Box<PostFigures>>,
}

/// One run's post stage (`--post`), from the report's `post …` lines; each `None` when its line
/// is absent (the latency needs GPU timing on).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PostFigures {
    /// The filter's p50, ms.
    pub filter_p50_ms: Option<f64>,
    /// The draw's end → the filter's start, and the filter's end → the copy's start: p50s, µs.
    pub in_p50_us: Option<f64>,
    pub out_p50_us: Option<f64>,
    /// The draw's end → the copy's end: p50 and p99, ms.
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
}

/// The GPU's own work per frame in one run: the draw's and the kernel's (or dispatch's) GPU p50,
/// ms, and the p50 of each frame's GPU busy time (every GPU scope the frame serialises: with
/// `--post` the filter and the copy too), the frame time the GPU could reach (the report's
/// `GPU limit`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuLimit {
    pub draw_ms: f64,
    /// 0 when the host writes (the `cpu` backend).
    pub kernel_ms: f64,
    /// None in a table written before the busy time was measured.
    pub busy_ms: Option<f64>,
}

impl GpuLimit {
    /// The GPU busy time per frame (older tables: draw + kernel), ms.
    pub fn total_ms(&self) -> f64 {
        self.busy_ms.unwrap_or(self.draw_ms + self.kernel_ms)
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("the frame report has no '{0}' line")]
    Missing(&'static str),
    #[error("cannot read the '{label}' line: '{line}'")]
    Malformed { label: &'static str, line: String },
}

/// The value of the report line labelled `label`, if there is one.
fn field<'a>(report: &'a str, label: &str) -> Option<&'a str> {
    report.lines().find_map(|line| {
        let rest = line.strip_prefix("  ")?;
        if !rest.is_char_boundary(12) || rest.len() < 13 {
            return None;
        }
        let (name, value) = rest.split_at(12);
        (name.trim_end() == label && value.starts_with(' ')).then(|| value.trim())
    })
}

/// The number after the word `key` in `text` (`p50 0.150 ms` → 0.150).
fn number_after(text: &str, key: &str) -> Option<f64> {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == key {
            return words.next()?.parse().ok().filter(|v: &f64| v.is_finite());
        }
    }
    None
}

fn required<'a>(report: &'a str, label: &'static str) -> Result<&'a str, ParseError> {
    field(report, label).ok_or(ParseError::Missing(label))
}

/// Parse a frame report.
pub fn parse_report(report: &str) -> Result<Measurement, ParseError> {
    let frame = required(report, "frame time")?;
    let bad = |label: &'static str, line: &str| ParseError::Malformed { label, line: line.to_string() };
    let get = |key| number_after(frame, key).ok_or_else(|| bad("frame time", frame));
    let (mean_ms, p50_ms, p99_ms) = (get("mean")?, get("p50")?, get("p99")?);
    // `(6535.9 fps)`: the number just before the word `fps`.
    let fps = frame
        .split_whitespace()
        .collect::<Vec<_>>()
        .windows(2)
        .find(|w| w[1].trim_end_matches(')') == "fps")
        .and_then(|w| w[0].trim_start_matches('(').parse::<f64>().ok())
        .ok_or_else(|| bad("frame time", frame))?;
    let cpu = required(report, "render cpu")?;
    // `p50 X µs …` (or ms); the optional `mean` is in the same unit.
    let unit = match cpu.split_whitespace().nth(2) {
        Some("µs") => 1.0,
        Some("ms") => 1e3,
        _ => return Err(bad("render cpu", cpu)),
    };
    let render_cpu_p50_us = number_after(cpu, "p50").ok_or_else(|| bad("render cpu", cpu))? * unit;
    let render_cpu_mean_us = number_after(cpu, "mean").map(|v| v * unit);
    let startup_s = match field(report, "start-up") {
        None => None,
        Some(s) => Some(
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|_| s.split_whitespace().nth(1) == Some("s"))
                .ok_or_else(|| bad("start-up", s))?,
        ),
    };
    let handoff = |label: &'static str| -> Result<Option<f64>, ParseError> {
        field(report, label).map(|l| number_after(l, "p50").ok_or_else(|| bad(label, l))).transpose()
    };
    // `frame p50 at 1.15× the GPU's limit: busy 0.130 ms per frame (… of kernel 0.005 ms, draw
    // 0.126 ms: …)`, or `unknown: why`.
    let gpu_limit = match field(report, "GPU limit") {
        Some(l) if !l.starts_with("unknown") => Some(GpuLimit {
            draw_ms: number_after(l, "draw").ok_or_else(|| bad("GPU limit", l))?,
            kernel_ms: number_after(l, "kernel").unwrap_or(0.0),
            busy_ms: Some(number_after(l, "busy").ok_or_else(|| bad("GPU limit", l))?),
        }),
        _ => None,
    };
    let p50 = |label: &'static str| -> Result<Option<f64>, ParseError> {
        field(report, label).map(|l| number_after(l, "p50").ok_or_else(|| bad(label, l))).transpose()
    };
    let latency = field(report, "post latency")
        .map(|l| {
            let v = (number_after(l, "p50"), number_after(l, "p99"));
            v.0.zip(v.1).ok_or_else(|| bad("post latency", l))
        })
        .transpose()?;
    let post = PostFigures {
        filter_p50_ms: p50("post filter")?,
        in_p50_us: p50("post in")?,
        out_p50_us: p50("post out")?,
        latency_p50_ms: latency.map(|l| l.0),
        latency_p99_ms: latency.map(|l| l.1),
    };
    Ok(Measurement {
        gpu_limit,
        post: (post != PostFigures::default()).then(|| Box::new(post)),
        handoff_in_us: handoff("hand-off in")?,
        handoff_out_us: handoff("hand-off out")?,
        mean_ms,
        p50_ms,
        p99_ms,
        fps,
        render_cpu_p50_us,
        render_cpu_mean_us,
        startup_s,
        resolved: required(report, "sync")?.to_string(),
        device: required(report, "device")?.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report as this branch prints it (no start-up line).
    const TODAY: &str = "\
vkhip frame report
  frames       70 (offscreen 160x90)
  frame time   mean 2.662 ms   p50 2.327 ms   p99 17.646 ms   (375.6 fps)
  gpu draw     mean 2.343 ms   p50 2.084 ms   p99 12.755 ms   (the draw's whole command buffer, any wait included)
  draw         p50 2.051 ms   p99 12.689 ms   (GPU, from heights readable to the end)
  compute      p50 0.159 ms   p99 0.295 ms   (host: write and wait)
  hand-off     p50 301.8 µs   p99 4300.8 µs   (compute signalled, or queue free if later → draw could read)
  sync overhead p50 0.305 ms   p99 14.778 ms   (frame time − max(draw, compute))
  render cpu   p50 63.9 µs   p99 227.2 µs   (render thread CPU time per frame)
  host phases  throttle 189 µs   compute 230 µs   record+submit 2190 µs   (mean per frame)
  clock        vulkan: VK_EXT_calibrated_timestamps, re-anchored every 250 ms (1 anchors), ±0.0 µs (largest drift between anchors 0.0 µs)
  backend      cpu on host CPU (2 threads) (--backend)
  sync         bridged, 3 slot(s)
  grid         64x64 (4096 values per slot)
  device       llvmpipe (LLVM 15.0.6, 256 bits) [CPU; llvmpipe Mesa 22.3.6 (LLVM 15.0.6)] (first CPU (discrete > integrated > virtual > CPU))
";

    /// The report as main will print it: start-up line, the extended sync line.
    const EXTENDED: &str = "\
vkhip frame report
  frames       1000 (offscreen 1280x720)
  frame time   mean 0.153 ms   p50 0.150 ms   p99 0.201 ms   (6535.9 fps)
  sync overhead p50 0.001 ms   p99 0.010 ms   (frame time − max(draw, compute))
  render cpu   p50 12.3 µs   p99 40.1 µs   (render thread CPU time per frame)
  start-up     0.412 s to the first frame (process start → first draw finished)
  sync         external, 8 slot(s), run-ahead 4, batch 4
  device       NVIDIA H100 80GB HBM3 [discrete; NVIDIA 560.35.03] (matches the compute backend)
";

    #[test]
    fn reads_todays_report() {
        let m = parse_report(TODAY).unwrap();
        assert_eq!((m.mean_ms, m.p50_ms, m.p99_ms, m.fps), (2.662, 2.327, 17.646, 375.6));
        assert_eq!(m.render_cpu_p50_us, 63.9);
        assert_eq!(m.startup_s, None);
        // `sync overhead` is not the `sync` line.
        assert_eq!(m.resolved, "bridged, 3 slot(s)");
        assert!(m.device.starts_with("llvmpipe (LLVM 15.0.6, 256 bits) [CPU;"), "{}", m.device);
    }

    #[test]
    fn reads_the_extended_report() {
        let m = parse_report(EXTENDED).unwrap();
        assert_eq!((m.mean_ms, m.p50_ms, m.p99_ms, m.fps), (0.153, 0.150, 0.201, 6535.9));
        assert_eq!(m.render_cpu_p50_us, 12.3);
        assert_eq!(m.startup_s, Some(0.412));
        assert_eq!(m.resolved, "external, 8 slot(s), run-ahead 4, batch 4");
        assert_eq!(
            m.device,
            "NVIDIA H100 80GB HBM3 [discrete; NVIDIA 560.35.03] (matches the compute backend)"
        );
    }

    /// The post stage's lines as `report::post_lines` prints them.
    #[test]
    fn reads_the_post_lines() {
        let post = format!(
            "{EXTENDED}{}",
            "  post filter  p50 0.050 ms   p99 0.080 ms   (GPU: the filter reading the rendered image and writing the output)
  post in      p50 30.0 µs   p99 45.0 µs   (GPU: the draw into the rendered image ended → the filter started)
  post out     p50 10.0 µs   p99 12.0 µs   (GPU: the filter ended → the copy of its output started)
  post latency p50 0.120 ms   p99 0.310 ms   (GPU: the draw ended → the copy ended; …)
"
        );
        let m = parse_report(&post).unwrap();
        let want = PostFigures {
            filter_p50_ms: Some(0.05),
            in_p50_us: Some(30.0),
            out_p50_us: Some(10.0),
            latency_p50_ms: Some(0.12),
            latency_p99_ms: Some(0.31),
        };
        assert_eq!(m.post.as_deref(), Some(&want));
        // GPU timing off: the filter line alone (bridged, host clock); no post line, no figures.
        let host = format!("{EXTENDED}  post filter  p50 0.070 ms   p99 0.090 ms   (host: …)\n");
        let m = parse_report(&host).unwrap();
        assert_eq!(m.post.as_deref(), Some(&PostFigures { filter_p50_ms: Some(0.07), ..Default::default() }));
        assert_eq!(parse_report(EXTENDED).unwrap().post, None);
        let bad = post.replace("p99 0.310 ms", "p99 soon");
        assert!(matches!(parse_report(&bad), Err(ParseError::Malformed { label: "post latency", .. })));
    }

    #[test]
    fn missing_and_malformed_lines_are_errors() {
        assert_eq!(parse_report("vkhip frame report\n"), Err(ParseError::Missing("frame time")));
        let no_sync: String =
            TODAY.lines().filter(|l| !l.starts_with("  sync  ")).map(|l| format!("{l}\n")).collect();
        assert_eq!(parse_report(&no_sync), Err(ParseError::Missing("sync")));
        let bad = TODAY.replace("mean 2.662 ms", "mean NaN ms");
        assert!(matches!(parse_report(&bad), Err(ParseError::Malformed { label: "frame time", .. })));
        let handoff = format!("{EXTENDED}  hand-off in  p50 soon µs\n");
        assert!(matches!(parse_report(&handoff), Err(ParseError::Malformed { label: "hand-off in", .. })));
        assert_eq!(parse_report(EXTENDED).map(|m| m.handoff_in_us), Ok(None), "optional");
        let bad = EXTENDED.replace("0.412 s to", "soon to");
        assert!(matches!(parse_report(&bad), Err(ParseError::Malformed { label: "start-up", .. })));
        // A label must be padded to exactly 12 characters and followed by a space.
        let shifted = TODAY.replace("  frame time   mean", "  frame time mean");
        assert_eq!(parse_report(&shifted), Err(ParseError::Missing("frame time")));
    }
}
