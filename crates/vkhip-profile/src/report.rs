//! The text report: [`Summary`]'s and [`CheckReport`]'s `Display`.
//!
//! Ordered by what a reader can act on: the clock's accuracy (how far any figure can be
//! trusted), the checker's verdict and its violations, frame time against the GPU's busy time
//! and what bounds the frame ([`crate::bound`]: GPU work, the hand-offs between GPU tracks, or
//! the host; the GPU's limit counts the hand-offs), the hand-offs' *exposed* time (what a wait actually cost the waiter), and last the per-scope
//! durations.

use crate::analysis::Summary;
use crate::bound::{Bound, Budget, GPU_SIDE_SHARE};
use crate::check::{track_label, CheckReport};
use crate::model::Api;
use crate::stats::Figure;
use std::fmt;

/// Violations listed in the report (all are counted).
pub const SHOWN_VIOLATIONS: usize = 10;

fn ms(ns: u64) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

fn us(ns: u64) -> String {
    format!("{:.1} µs", ns as f64 / 1e3)
}

/// `±3.5 µs`
fn accuracy(ns: u64) -> String {
    format!("±{}", us(ns))
}

impl fmt::Display for CheckReport {
    /// The verdict line, then the first [`SHOWN_VIOLATIONS`] violations, one per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "checker: {} violation{} in {} access pairs and {} waits across tracks, {} frames (tolerance up to {})",
            self.violation_count,
            if self.violation_count == 1 { "" } else { "s" },
            self.pairs_checked,
            self.waits_checked,
            self.frames,
            us(self.tolerance_ns),
        )?;
        if self.violation_count > 0 {
            let b = &self.by_rule;
            write!(
                f,
                ": {} unordered, {} overlap, {} wait before signal",
                b.unordered, b.overlap, b.wait_before_signal
            )?;
        }
        writeln!(f)?;
        let u = &self.unverifiable;
        if u.total() > 0 {
            writeln!(
                f,
                "  unverifiable (not violations): {} waits whose signal lies before the trace, {} never signalled, {} signals with no scope before them",
                u.before_trace, u.never_signalled, u.no_signal_time
            )?;
        }
        for v in self.violations.iter().take(SHOWN_VIOLATIONS) {
            writeln!(f, "  {v}")?;
        }
        if self.violation_count > SHOWN_VIOLATIONS.min(self.violations.len()) as u64 {
            writeln!(
                f,
                "  … and {} more",
                self.violation_count - SHOWN_VIOLATIONS.min(self.violations.len()) as u64
            )?;
        }
        Ok(())
    }
}

/// `bound by …: …` with the figures that show it.
fn bound_line(b: &Budget) -> String {
    let share = b.gpu_side_ns() / b.frame_ns * 100.0;
    let figures = format!(
        "GPU work {} + hand-offs between GPU tracks (exposed) {} = {} a frame, {share:.0}% of the mean frame ({})",
        ms(b.gpu_work_ns as u64),
        ms(b.handoffs_ns as u64),
        ms(b.gpu_side_ns() as u64),
        ms(b.frame_ns as u64),
    );
    let what = match b.bound {
        Bound::Handoffs => "the hand-offs' exposed time (the GPU changing contexts)",
        Bound::GpuWork => "GPU work",
        Bound::Host => "the host",
    };
    let why = match b.bound {
        Bound::Host => format!(" (the GPU side fills less than {:.0}% of it)", GPU_SIDE_SHARE * 100.0),
        _ => String::new(),
    };
    format!("bound by {what}: {figures}{why}")
}

fn p50_p99(fig: &Figure, unit: fn(u64) -> String) -> String {
    format!("p50 {}, p99 {}", unit(fig.p50_ns), unit(fig.p99_ns))
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The clock first: every figure below is only as good as this.
        writeln!(
            f,
            "vkhip-profile: {} frames on {} tracks; all times on CLOCK_MONOTONIC, accurate to {}",
            self.frames,
            self.tracks.len(),
            accuracy(self.accuracy_ns)
        )?;
        for t in &self.tracks {
            let clock = if t.clock.is_empty() { "host clock" } else { &t.clock };
            let acc = if t.accuracy_ns == 0 && t.api == Api::Host {
                "the reference".to_string()
            } else {
                accuracy(t.accuracy_ns)
            };
            writeln!(f, "  clock of {}: {clock} ({acc})", track_label(t))?;
        }
        for note in &self.clock_notes {
            writeln!(f, "  clock: {note}")?;
        }

        write!(f, "{}", self.check)?;

        if self.frame_time.count > 0 || self.gpu_busy.count > 0 {
            write!(f, "frame time: {}", p50_p99(&self.frame_time, ms))?;
            if self.frame_time.mean_ns > 0.0 {
                write!(f, " ({:.0} fps)", 1e9 / self.frame_time.mean_ns)?;
            }
            writeln!(f)?;
            if self.gpu_busy.count > 0 {
                write!(f, "GPU busy per frame: {}", p50_p99(&self.gpu_busy, ms))?;
                if self.frame_time.p50_ns > 0 {
                    let share = self.gpu_busy.p50_ns as f64 / self.frame_time.p50_ns as f64 * 100.0;
                    write!(f, " = {share:.0}% of the median frame")?;
                }
                if let Some(b) = self.budget() {
                    write!(f, "; the GPU's limit: {:.0} fps", b.gpu_limit_fps())?;
                    if b.handoffs_ns > 0.0 {
                        write!(
                            f,
                            " counting the hand-offs between GPU tracks ({} work + {} exposed in hand-offs a frame; the work alone: {:.0} fps)",
                            ms(b.gpu_work_ns as u64),
                            ms(b.handoffs_ns as u64),
                            1e9 / b.gpu_work_ns.max(1.0)
                        )?;
                    } else {
                        write!(f, " (no hand-off between GPU tracks)")?;
                    }
                }
                writeln!(f)?;
                writeln!(
                    f,
                    "  GPU busy = the union of each frame's top-level scopes on GPU tracks: {}",
                    self.gpu_busy_scopes.join("; ")
                )?;
                if self.late_scopes > 0 {
                    writeln!(
                        f,
                        "  {} GPU scopes arrived after their frame was summed (not counted)",
                        self.late_scopes
                    )?;
                }
                if let Some(b) = self.budget() {
                    writeln!(f, "{}", bound_line(&b))?;
                }
            }
        }

        if !self.handoffs.is_empty() {
            writeln!(
                f,
                "hand-offs (signal → the waiter's first work; exposed: the part not explained by the waiter's own work or its other waits)"
            )?;
            for h in &self.handoffs {
                writeln!(
                    f,
                    "  \"{}\" {} → {}: exposed {}; latency {} ({} waits)",
                    h.semaphore,
                    h.from_label,
                    h.to_label,
                    p50_p99(&h.exposed, us),
                    p50_p99(&h.latency, us),
                    h.latency.count
                )?;
            }
        }

        if !self.scopes.is_empty() {
            writeln!(f, "scopes: count, p50, p99")?;
            let width = self
                .scopes
                .iter()
                .map(|s| s.track_label.chars().count() + s.name.chars().count())
                .max()
                .unwrap_or(0);
            for s in &self.scopes {
                let pad = width - s.track_label.chars().count() - s.name.chars().count();
                writeln!(
                    f,
                    "  {} {}{}  {:>8}  {:>10}  {:>10}",
                    s.track_label,
                    s.name,
                    " ".repeat(pad),
                    s.duration.count,
                    ms(s.duration.p50_ns),
                    ms(s.duration.p99_ns)
                )?;
            }
            if self.scopes_not_kept > 0 {
                writeln!(f, "  ({} scopes of further names not kept)", self.scopes_not_kept)?;
            }
        }
        Ok(())
    }
}
