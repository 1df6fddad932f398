//! `vkhip bench --replot FILE.csv`: draw a bench.csv's chart again, with today's plot, without
//! running anything. The PNG goes beside the CSV (`FILE.png`); the device in the title comes from
//! the markdown beside it (`FILE.md`, its `- device:` line) when there is one.
//!
//! Columns are found by name, so every bench.csv written so far reads (older ones lack the
//! hand-off and GPU limit columns: those parts are simply left out).
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::panel::Family;
//! use vkhip::app::matrix::replot::read_csv;
//!
//! let csv = "label,backend,sync_requested,grid,size,rep,frames,mean_ms,p50_ms,p99_ms,fps,render_cpu_p50_us,status,reason
//! vulkan (native),vulkan,external,64x64,160x90,1,60,2.0,2.0,2.5,500,40,ok,
//! cpu bridged,cpu,bridged,64x64,160x90,1,60,3.0,3.0,3.5,333.3,40,ok,
//! cpu bridged,cpu,bridged,64x64,160x90,2,60,,,,,,failed,exit code 1
//! ";
//! let (panels, info) = read_csv(csv.as_bytes()).unwrap();
//! assert_eq!((info.frames, info.reps), (60, 2));
//! assert_eq!(panels.len(), 1);
//! let rows = &panels[0].rows;
//! assert_eq!(rows.iter().map(|r| r.family).collect::<Vec<_>>(), [Family::Native, Family::Interop]);
//! assert_eq!(rows[1].summary.frame_ms, Some(3.0));
//! assert_eq!(rows[1].summary.status(), "ok (1 of 2; failed: exit code 1)");
//! ```

use super::panel::{Family, Panel, PlotRow};
use super::parse::{GpuLimit, Measurement, PostFigures};
use super::plot;
use super::preset::LIMIT;
use super::run::Outcome;
use super::stats::Summary;
use anyhow::Context as _;
use std::path::Path;
use std::process::ExitCode;

#[derive(Debug, thiserror::Error)]
pub enum ReplotError {
    #[error("reading the CSV: {0}")]
    Csv(#[from] csv::Error),
    #[error("the CSV has no '{0}' column")]
    Column(&'static str),
    #[error("row {row}: {what}")]
    Row { row: usize, what: String },
}

/// What the rows say about the whole run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsvInfo {
    pub frames: u64,
    pub reps: u32,
}

/// The panels of a bench.csv, in the order its rows first name each grid@size and label.
pub fn read_csv<R: std::io::Read>(input: R) -> Result<(Vec<Panel>, CsvInfo), ReplotError> {
    let mut r = csv::Reader::from_reader(input);
    let headers = r.headers()?.clone();
    let col = |name: &str| headers.iter().position(|h| h == name);
    let need = |name: &'static str| col(name).ok_or(ReplotError::Column(name));
    let (label, backend, grid, size, status) =
        (need("label")?, need("backend")?, need("grid")?, need("size")?, need("status")?);
    let (sync, reason, rep, frames) = (col("sync_requested"), col("reason"), col("rep"), col("frames"));
    // (label, backend, sync, at, runs), in order of appearance.
    let mut cells: Vec<(String, String, String, crate::cli::CellSize, Vec<Outcome>)> = Vec::new();
    let mut info = CsvInfo { frames: 0, reps: 0 };
    for (i, rec) in r.records().enumerate() {
        let rec = rec?;
        let row = i + 2;
        let bad = |what: String| ReplotError::Row { row, what };
        let get = |c: Option<usize>| c.and_then(|c| rec.get(c)).unwrap_or("");
        let num = |name: &str| -> Result<Option<f64>, ReplotError> {
            let v = get(col(name));
            if v.is_empty() {
                return Ok(None);
            }
            v.parse().map(Some).map_err(|_| bad(format!("{name} = '{v}' is not a number")))
        };
        let at = crate::cli::parse_cell_sizes(&format!("{}@{}", get(Some(grid)), get(Some(size))))
            .map_err(bad)?
            .0[0];
        info.frames = info.frames.max(get(frames).parse().unwrap_or(0));
        info.reps = info.reps.max(get(rep).parse().unwrap_or(0));
        let required =
            |name: &'static str| num(name)?.ok_or_else(|| bad(format!("an ok row without {name}")));
        let outcome = match get(Some(status)) {
            "ok" => Outcome::Ok(Measurement {
                mean_ms: required("mean_ms")?,
                p50_ms: required("p50_ms")?,
                p99_ms: required("p99_ms")?,
                fps: required("fps")?,
                render_cpu_p50_us: num("render_cpu_p50_us")?.unwrap_or(0.0),
                render_cpu_mean_us: num("render_cpu_mean_us")?,
                startup_s: num("startup_s")?,
                resolved: get(col("resolved")).to_string(),
                device: String::new(),
                handoff_in_us: num("handoff_in_p50_us")?,
                handoff_out_us: num("handoff_out_p50_us")?,
                gpu_limit: match (num("gpu_draw_p50_ms")?, num("gpu_kernel_p50_ms")?) {
                    (Some(draw_ms), kernel) => Some(GpuLimit {
                        draw_ms,
                        kernel_ms: kernel.unwrap_or(0.0),
                        busy_ms: num("gpu_busy_p50_ms")?,
                    }),
                    _ => None,
                },
                post: {
                    let p = PostFigures {
                        filter_p50_ms: num("post_filter_p50_ms")?,
                        in_p50_us: num("post_in_p50_us")?,
                        out_p50_us: num("post_out_p50_us")?,
                        latency_p50_ms: num("post_latency_p50_ms")?,
                        latency_p99_ms: num("post_latency_p99_ms")?,
                    };
                    (p != PostFigures::default()).then(|| Box::new(p))
                },
            }),
            "unsupported" => Outcome::Unsupported(get(reason).to_string()),
            _ => Outcome::Failed(get(reason).to_string()),
        };
        let key = (get(Some(label)), at);
        match cells.iter_mut().find(|c| (c.0.as_str(), c.3) == key) {
            Some(c) => c.4.push(outcome),
            None => cells.push((
                key.0.to_string(),
                get(Some(backend)).to_string(),
                get(sync).to_string(),
                at,
                vec![outcome],
            )),
        }
    }
    let mut panels: Vec<Panel> = Vec::new();
    for (label, backend, sync, at, runs) in cells {
        let limit = label == LIMIT;
        let row = PlotRow {
            family: Family::of(&label, &backend, Some(sync.as_str()).filter(|s| !s.is_empty())),
            summary: Summary::for_row(&runs, limit),
            label,
        };
        match panels.iter_mut().find(|p| p.at == at) {
            Some(p) => p.rows.push(row),
            None => panels.push(Panel { at, rows: vec![row] }),
        }
    }
    Ok((panels, info))
}

/// The device named by the markdown beside the CSV, if any.
fn device_beside(csv: &Path) -> Option<String> {
    let md = std::fs::read_to_string(csv.with_extension("md")).ok()?;
    md.lines().find_map(|l| l.strip_prefix("- device: ")).map(str::to_string)
}

/// `vkhip bench --replot FILE`: write FILE's chart beside it (FILE with the extension `png`).
pub fn replot(csv: &Path) -> anyhow::Result<ExitCode> {
    let file = std::fs::File::open(csv)
        .map_err(|e| crate::cli::UsageError(format!("--replot {}: {e}", csv.display())))?;
    let (panels, info) = read_csv(std::io::BufReader::new(file))
        .map_err(|e| crate::cli::UsageError(format!("--replot {}: {e}", csv.display())))?;
    let title = super::plot_title(info.frames, info.reps, device_beside(csv).as_deref());
    let image = plot::render(&title, &panels)?;
    let out = csv.with_extension("png");
    let pending = crate::pending::PendingFile::create(&out)
        .map_err(|e| crate::cli::UsageError(format!("cannot write {}: {e}", out.display())))?;
    pending.commit(
        |w| plot::write_png(w, &image).context("writing the chart"),
        |e| anyhow::Error::new(e).context(format!("writing {}", out.display())),
    )?;
    crate::outln!("wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}
