//! STAND-IN, DELETE AT MERGE: the analysis half (check.rs, analysis.rs, report.rs, perfetto.rs)
//! is written on another branch. These are the smallest shapes of its `check::check`,
//! `analysis::analyze` and `perfetto::write` that let the capture half, its tests and its
//! examples build alone; they check nothing. `Capture`'s three analysis methods call them
//! through `profiler::analysis_half`, which the merge points at the real modules.

use crate::model::Timeline;
use std::fmt;
use std::path::Path;

/// Stand-in of `check::CheckReport`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckReport {
    pub violations: Vec<String>,
    pub violation_count: u64,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.violation_count == 0
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "checker: not merged yet (stand-in): nothing was checked")
    }
}

/// Stand-in of `analysis::Summary`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub check: CheckReport,
    items: usize,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "vkhip-profile: {} items (stand-in report: the analysis half is not merged)",
            self.items
        )?;
        write!(f, "{}", self.check)
    }
}

/// Stand-in of `check::check`.
pub fn check(_timeline: &Timeline) -> CheckReport {
    CheckReport::default()
}

/// Stand-in of `analysis::analyze`.
pub fn analyze(timeline: &Timeline) -> Summary {
    Summary { check: check(timeline), items: timeline.items.iter().map(Vec::len).sum() }
}

/// Stand-in of `perfetto::TraceError`.
#[derive(Debug, thiserror::Error)]
#[error("cannot write the trace {path}: {source}")]
pub struct TraceError {
    path: String,
    source: std::io::Error,
}

/// Stand-in of `perfetto::write`: an empty trace.
pub fn write(
    _timeline: &Timeline,
    path: impl AsRef<Path>,
    extra: &serde_json::Value,
) -> Result<(), TraceError> {
    let doc = serde_json::json!({ "traceEvents": [], "otherData": { "standin": true, "extra": extra } });
    std::fs::write(path.as_ref(), doc.to_string())
        .map_err(|source| TraceError { path: path.as_ref().display().to_string(), source })
}
