//! `vkhip trace check FILE`: read a trace written by `--trace` (the profiler crate's reader) and
//! run the crate's hazard checker on it: every two conflicting accesses to a slot or, with a post
//! stage, to a scene or output image from two tracks must be ordered by a chain of semaphore
//! signals and waits, hold that order on the clock, and every wait's work must start after its
//! signal (docs/ARCHITECTURE.md, "The profiler"). The app adds what its scripts read: the
//! summary line, the post stage's share, what was checked on the GPU's one clock, and how many
//! draws a kernel of another frame ran inside.
//!
//! Exit codes: 0 clean (and something was checked), 1 violations (or nothing to check),
//! 2 a file that cannot be read as a trace (missing, not a regular file, over the reader's size
//! limit, not JSON, no trace events, not a vkhip-profile trace).

use serde_json::Value;
use std::path::Path;
use vkhip_profile::model::{Api, Item, Timeline, TrackId};
use vkhip_profile::CheckReport;

/// Violations listed one per line (all are counted).
pub const SHOWN: usize = 20;

/// The semaphores of the post stage (see `crate::profile::program::Sem`).
const POST_SEMAPHORES: [&str; 4] = ["scene", "posted", "presented", "scene free"];

/// A trace that cannot be checked (exit 2: the file, not the protocol, is at fault).
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    #[error("cannot read the trace {path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path} is not a regular file (a device or a pipe): not a trace")]
    NotAFile { path: String },
    #[error(transparent)]
    Trace(#[from] vkhip_profile::TraceError),
}

/// What `vkhip trace check` found.
pub struct TraceCheck {
    pub timeline: Timeline,
    /// The run's configuration (`otherData.extra`).
    pub extra: Value,
    pub report: CheckReport,
}

impl TraceCheck {
    /// Read and check the trace at `path`; `tolerance_us` replaces every clock's stated
    /// accuracy (the tolerance of every comparison is then exactly that).
    pub fn run(path: &Path, tolerance_us: Option<f64>) -> Result<Self, TraceFileError> {
        let shown = path.display().to_string();
        // Not a device or a pipe: `/dev/zero` never ends, a FIFO without a writer never answers.
        let meta =
            std::fs::metadata(path).map_err(|source| TraceFileError::Io { path: shown.clone(), source })?;
        if !meta.is_file() {
            return Err(TraceFileError::NotAFile { path: shown });
        }
        let (mut timeline, extra) = vkhip_profile::perfetto::read(path)?;
        if let Some(t) = tolerance_us {
            for track in &mut timeline.names.tracks {
                track.accuracy_ns = (t * 1e3).round() as u64;
                track.clock_domain = Some(0);
            }
        }
        let report = vkhip_profile::check(&timeline);
        Ok(TraceCheck { timeline, extra, report })
    }

    /// Whether the run had a post stage (`otherData.extra.post`, or scene/output resources).
    pub fn has_post(&self) -> bool {
        match self.extra.get("post").and_then(Value::as_str) {
            Some(p) => p != "none",
            None => self.timeline.names.resources.iter().any(|r| r.starts_with("scene[")),
        }
    }

    /// The post stage's comparisons: (access pairs on its images, waits on its semaphores,
    /// violations among both).
    pub fn post_counts(&self) -> (u64, u64, u64) {
        let r = &self.report;
        let names = &self.timeline.names;
        let (mut pairs, mut waits, mut violations) = (0, 0, 0);
        for (c, name) in r.by_resource.iter().zip(&names.resources) {
            if name.starts_with("scene[") || name.starts_with("output[") {
                pairs += c.checked;
                violations += c.violations;
            }
        }
        for (c, sem) in r.by_semaphore.iter().zip(&names.semaphores) {
            if POST_SEMAPHORES.contains(&sem.name.as_str()) {
                waits += c.checked;
                violations += c.violations;
            }
        }
        (pairs, waits, violations)
    }

    /// Clean: no violation, something was checked, and with a post stage its images too.
    pub fn clean(&self) -> bool {
        self.report.is_clean()
            && self.report.pairs_checked > 0
            && (!self.has_post() || self.post_counts().0 > 0)
    }

    /// The output: the summary line, the violations, and the app's lines.
    pub fn render(&self, path: &str) -> String {
        let r = &self.report;
        let frames = match self.timeline.frame_ends.len() {
            0 => r.frames,
            n => n as u64,
        };
        let slots = self.extra.get("slots").and_then(Value::as_u64).map_or("?".into(), |k| k.to_string());
        let mut out = format!(
            "trace check: {path}: {frames} frames, K={slots}, tolerance {:.1} µs: {} access pairs and {} waits checked, {} violation(s)\n",
            r.tolerance_ns as f64 / 1e3,
            r.pairs_checked,
            r.waits_checked,
            r.violation_count,
        );
        let u = &r.unverifiable;
        if u.total() > 0 {
            out.push_str(&format!(
                "  unverifiable (not violations): {} waits whose signal lies before the trace, {} never signalled, {} signals with no scope before them\n",
                u.before_trace, u.never_signalled, u.no_signal_time
            ));
        }
        for v in r.violations.iter().take(SHOWN) {
            out.push_str(&format!("  violation: {}\n", v.message));
        }
        let listed = SHOWN.min(r.violations.len()) as u64;
        if r.violation_count > listed {
            out.push_str(&format!("  … and {} more\n", r.violation_count - listed));
        }
        if let Some(line) = self.overlap_line() {
            out.push_str(&line);
        }
        if let Some(line) = self.gpu_clock_line() {
            out.push_str(&line);
        }
        if self.has_post() {
            let post = self.extra.get("post").and_then(Value::as_str).unwrap_or("from its images");
            let (pairs, waits, violations) = self.post_counts();
            out.push_str(&format!(
                "  post stage ({post}): {violations} violation(s); checked: {pairs} access pairs on the scene and output images (draw → filter → copy, and each image's reuse K frames later), {waits} waits on 'scene', 'posted', 'presented' and 'scene free'\n"
            ));
            if pairs == 0 {
                out.push_str(
                    "  nothing to check for the post stage: no two tracks touch one scene or output image\n",
                );
            }
        }
        if r.pairs_checked == 0 {
            out.push_str("  nothing to check: no two tracks of the trace touch one slot or image\n");
        }
        out
    }

    fn track(&self, api: Api, name: &str) -> Option<TrackId> {
        let t = self.timeline.names.tracks.iter().position(|t| t.api == api && t.name.starts_with(name))?;
        Some(TrackId(t as u32))
    }

    /// The compute track (a kernel's or a dispatch's), and the graphics queue.
    fn compute_and_queue(&self) -> Option<(TrackId, TrackId)> {
        let queue = self.track(Api::Vulkan, "graphics")?;
        let compute =
            [Api::Cuda, Api::Hip, Api::Vulkan].into_iter().find_map(|a| self.track(a, "compute"))?;
        Some((compute, queue))
    }

    /// With CUDA's GPU stamps the kernels share the graphics queue's clock domain: what was
    /// compared between the two on that one clock.
    fn gpu_clock_line(&self) -> Option<String> {
        let (c, q) = self.compute_and_queue()?;
        let names = &self.timeline.names;
        let (ct, qt) = (names.track(c), names.track(q));
        if ct.api != Api::Cuda || ct.clock_domain.is_none() || ct.clock_domain != qt.clock_domain {
            return None;
        }
        let counts = self.report.by_tracks.get(&(c.min(q), c.max(q))).copied().unwrap_or_default();
        Some(format!(
            "  kernels on the GPU clock: {} comparisons between the kernels (cuda stream \"{}\") and the graphics queue on one clock (tolerance ±{:.1} µs, the larger accuracy, not the sum; each kernel against the 'rendered' it waited on and the draw that reads its slot): {} violation(s)\n",
            counts.checked,
            ct.name,
            names.tolerance_ns(c, q) as f64 / 1e3,
            counts.violations
        ))
    }

    /// Draws a kernel or dispatch of another frame ran inside, with the median draw of each kind.
    fn overlap_line(&self) -> Option<String> {
        let (c, q) = self.compute_and_queue()?;
        let scopes = |t: TrackId, name: &str| -> Vec<(u64, u64, u64)> {
            self.timeline.items[t.0 as usize]
                .iter()
                .filter_map(|i| match i {
                    Item::Scope(s) if &*s.name == name => Some((s.frame, s.start_ns, s.end_ns)),
                    _ => None,
                })
                .collect()
        };
        let (writes, draws) = (scopes(c, "write slot"), scopes(q, "draw"));
        if writes.is_empty() || draws.is_empty() {
            return None;
        }
        let (mut inside, mut alone) = (Vec::new(), Vec::new());
        for &(f, a, b) in &draws {
            let hit = writes.iter().any(|&(g, s, e)| g != f && s < b && e > a);
            if hit { &mut inside } else { &mut alone }.push((b - a) as f64 / 1e3);
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            if v.is_empty() {
                0.0
            } else {
                v[(v.len() - 1) / 2]
            }
        };
        let (n, m) = (inside.len(), alone.len());
        Some(format!(
            "  draws with a GPU kernel or dispatch running inside them: {n} (median draw {:.1} µs); without: {m} (median draw {:.1} µs)\n",
            median(&mut inside),
            median(&mut alone)
        ))
    }
}
