//! What bench.png shows, before any geometry: one [`Panel`] per grid@size, one [`PlotRow`] per
//! configuration, each of a [`Family`] (its colour), and the caption's hand-off note
//! ([`handoff_note`]). [`super::layout`] places a panel's parts; [`super::plot`] paints them.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::panel::Family;
//!
//! assert_eq!(Family::of("cuda-in-vulkan K=1", "cuda-in-vulkan", Some("external")), Family::InQueue);
//! assert_eq!(Family::of("reference: binary K=1", "cuda", Some("binary")), Family::Reference);
//! assert_eq!(Family::of("external K=3", "cuda", Some("external")), Family::Interop);
//! ```

use super::preset::{LIMIT, NATIVE};
use super::stats::Summary;
use super::CellResult;
use crate::cli::CellSize;

/// What a configuration is, for its colour: one colour per family, so colour carries meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The GPU's own work per frame (draw + kernel), the floor of every row.
    Limit,
    /// The `vulkan` backend: a compute shader, no interop (the baseline).
    Native,
    /// The reference samples' schemes: binary semaphores with K = 1, host waits, blocking.
    Reference,
    /// vkhip's interop modes (external, bridged, batches, run-ahead; cuda, hip, cpu).
    Interop,
    /// The compute API's kernel recorded in Vulkan's own queue (`cuda-in-vulkan`).
    InQueue,
}

impl Family {
    /// Every family, in legend order.
    pub const ALL: [Family; 5] =
        [Family::Limit, Family::Native, Family::Reference, Family::Interop, Family::InQueue];

    /// The family of a row, from its label, `--backend` and `--sync`.
    pub fn of(label: &str, backend: &str, sync: Option<&str>) -> Family {
        if label == LIMIT {
            Family::Limit
        } else if backend == "vulkan" {
            Family::Native
        } else if backend == "cuda-in-vulkan" {
            Family::InQueue
        } else if matches!(sync, Some("binary" | "host-wait" | "blocking")) {
            Family::Reference
        } else {
            Family::Interop
        }
    }

    /// The bar colour (a colour-blind-safe set: grey, blue, orange, purple, green).
    pub fn colour(self) -> (u8, u8, u8) {
        match self {
            // Slate, not a neutral grey: anti-aliased black text makes every neutral grey.
            Family::Limit => (100, 100, 130),
            Family::Native => (0, 114, 178),
            Family::Reference => (230, 159, 0),
            Family::Interop => (150, 80, 160),
            Family::InQueue => (0, 158, 115),
        }
    }

    /// The legend's name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Limit => "GPU limit (draw + kernel)",
            Family::Native => "native (vulkan)",
            Family::Reference => "reference schemes",
            Family::Interop => "interop modes",
            Family::InQueue => "in-queue (cuda-in-vulkan)",
        }
    }
}

/// One bar to draw: a configuration at one grid@size.
#[derive(Clone, Debug)]
pub struct PlotRow {
    pub label: String,
    pub family: Family,
    pub summary: Summary,
}

/// One panel: a grid@size and its rows, top to bottom.
#[derive(Clone, Debug)]
pub struct Panel {
    pub at: CellSize,
    pub rows: Vec<PlotRow>,
}

impl Panel {
    fn value(&self, pick: impl Fn(&PlotRow) -> bool) -> Option<f64> {
        self.rows.iter().find(|r| pick(r)).and_then(|r| r.summary.frame_ms)
    }

    /// Native's median frame time in this panel.
    pub fn native_ms(&self) -> Option<f64> {
        self.value(|r| r.label == NATIVE)
    }

    /// The GPU limit (draw + kernel) in this panel.
    pub fn limit_ms(&self) -> Option<f64> {
        self.value(|r| r.family == Family::Limit)
    }
}

/// The panels of a live matrix: one per size, rows in the plan's order.
pub fn panels(sizes: &[CellSize], results: &[CellResult]) -> Vec<Panel> {
    sizes
        .iter()
        .map(|at| Panel {
            at: *at,
            rows: results
                .iter()
                .filter(|r| r.cell.at == *at)
                .map(|r| {
                    let c = &r.cell.config;
                    PlotRow {
                        label: c.label.to_string(),
                        family: if c.limit { Family::Limit } else { Family::of(c.label, c.backend, c.sync) },
                        summary: Summary::for_row(&r.runs, c.limit),
                    }
                })
                .collect(),
        })
        .collect()
}

/// The default configuration's (the row labelled `default`) GPU hand-off: the medians of its
/// runs' p50s, or None when they did not measure it.
///
/// ```
/// use vkhip::app::matrix::parse::Measurement;
/// use vkhip::app::matrix::panel::{handoff_note, Family, Panel, PlotRow};
/// use vkhip::app::matrix::run::Outcome;
/// use vkhip::app::matrix::stats::Summary;
///
/// let run = |handoff_in_us, handoff_out_us| Outcome::Ok(Measurement {
///     mean_ms: 0.2, p50_ms: 0.2, p99_ms: 0.3, fps: 5000.0, render_cpu_p50_us: 10.0,
///     render_cpu_mean_us: None, startup_s: None, resolved: "external".into(), device: "d".into(),
///     handoff_in_us, handoff_out_us, gpu_limit: None, post: None,
/// });
/// let panel = |runs: Vec<Outcome>| Panel {
///     at: vkhip::cli::parse_cell_sizes("256x256@320x180").unwrap().0[0],
///     rows: vec![PlotRow { label: "default".into(), family: Family::Interop, summary: Summary::of(&runs) }],
/// };
/// let note = handoff_note(&panel(vec![run(Some(41.5), Some(12.0))]));
/// assert_eq!(note.as_deref(), Some("default: hand-off in 41.5 µs, out 12.0 µs (p50)"));
/// assert_eq!(handoff_note(&panel(vec![run(None, None)])), None); // GPU timing off: nothing measured
/// ```
pub fn handoff_note(panel: &Panel) -> Option<String> {
    let s = &panel.rows.iter().find(|r| r.label == "default")?.summary;
    let us = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1} µs"));
    (s.handoff_in_us.is_some() || s.handoff_out_us.is_some())
        .then(|| format!("default: hand-off in {}, out {} (p50)", us(s.handoff_in_us), us(s.handoff_out_us)))
}

/// Test data shared by the layout's and the drawing's tests.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use crate::app::matrix::parse::Measurement;
    use crate::app::matrix::run::Outcome;

    fn ok(mean_ms: f64) -> Outcome {
        Outcome::Ok(Measurement {
            mean_ms,
            p50_ms: mean_ms,
            p99_ms: mean_ms,
            fps: 1e3 / mean_ms,
            render_cpu_p50_us: 1.0,
            render_cpu_mean_us: None,
            startup_s: None,
            resolved: "external, 3 slot(s)".into(),
            device: "d".into(),
            handoff_in_us: None,
            handoff_out_us: None,
            gpu_limit: None,
            post: None,
        })
    }

    /// The H100 256² and 1024² panels' labels (the published chart ran `cuda-in-vulkan K=1` into
    /// `K=3`), with a limit row, a cut bar and a row that did not run.
    pub(in crate::app::matrix) fn h100_panels() -> Vec<Panel> {
        let rows: &[(&str, &str, Option<&str>, f64)] = &[
            (LIMIT, "vulkan", Some("external"), 0.131),
            (NATIVE, "vulkan", Some("external"), 0.147),
            ("reference: binary K=1", "cuda", Some("binary"), 0.434),
            ("simpleVulkan as shipped", "cuda", Some("host-wait"), 10.3),
            ("blocking", "cuda", Some("blocking"), 0.509),
            ("bridged K=3", "cuda", Some("bridged"), 0.437),
            ("external K=8 B=4 R=4", "cuda", Some("external"), 0.169),
            ("default, GPU waits", "cuda", None, 0.174),
            ("staged copy", "cuda", Some("bridged"), 0.0),
            ("cuda-in-vulkan K=1", "cuda-in-vulkan", Some("external"), 0.149),
            ("cuda-in-vulkan K=3", "cuda-in-vulkan", Some("external"), 0.150),
        ];
        ["256x256@320x180", "1024x1024@1280x720"]
            .iter()
            .enumerate()
            .map(|(k, at)| Panel {
                at: crate::cli::parse_cell_sizes(at).unwrap().0[0],
                rows: rows
                    .iter()
                    .map(|&(label, backend, sync, ms)| {
                        let runs = if ms == 0.0 {
                            vec![Outcome::Unsupported("backend cuda is not available".into())]
                        } else {
                            vec![ok(ms * (1.0 + 13.0 * k as f64))]
                        };
                        PlotRow {
                            label: label.into(),
                            family: Family::of(label, backend, sync),
                            summary: Summary::of(&runs),
                        }
                    })
                    .collect(),
            })
            .collect()
    }
}
