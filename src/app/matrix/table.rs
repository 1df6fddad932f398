//! The outputs' contents: bench.csv rows and the bench.md tables.
//!
//! # Examples
//!
//! bench.csv holds one row per repetition, under [`CSV_COLUMNS`]; a run that did not measure
//! anything leaves the numbers empty and says why.
//!
//! ```
//! use vkhip::app::matrix::preset::{preset, Cell};
//! use vkhip::app::matrix::run::Outcome;
//! use vkhip::app::matrix::table::{write_csv, CSV_COLUMNS};
//! use vkhip::app::matrix::CellResult;
//! use vkhip::cli::BenchPreset;
//!
//! let quick = preset(BenchPreset::Quick);
//! let cell = Cell { config: quick.rows[0], at: quick.sizes[0] };
//! let runs = vec![Outcome::Failed("exit code 1: lost, the device".into())];
//! let mut csv = Vec::new();
//! write_csv(&mut csv, &[CellResult { cell, runs }], 60).unwrap();
//! let text = String::from_utf8(csv).unwrap();
//! let lines: Vec<&str> = text.lines().collect();
//! assert_eq!(lines[0], CSV_COLUMNS.join(","));
//! assert!(lines[0].starts_with("label,backend,sync_requested,slots,run_ahead,batch,memory,resolved,grid"));
//! assert_eq!(
//!     lines[1],
//!     r#"vulkan (native),vulkan,external,,,,,,64x64,160x90,1,60,,,,,,,,failed,"exit code 1: lost, the device",,,,,,,,,,,,,,,"#
//! );
//! ```

use super::preset::{post_baseline, Config, LIMIT, NATIVE, POST_NATIVE, REFERENCE};
use super::stats::Summary;
use super::CellResult;
use crate::cli::CellSize;
use std::fmt::Write as _;

/// What the markdown header states about the whole matrix.
#[derive(Clone, Debug)]
pub struct Header {
    pub date_utc: String,
    pub command: String,
    pub device: Option<String>,
    pub frames: u64,
    pub warmup: u64,
    pub reps: u32,
    /// Whether the runs had GPU timing on (`vkhip bench --gpu-timing on`).
    pub gpu_timing: bool,
    /// Set when an interrupt stopped the matrix early: what finished.
    pub interrupted: Option<String>,
}

/// The CSV's columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "label",
    "backend",
    "sync_requested",
    "slots",
    "run_ahead",
    "batch",
    "memory",
    "resolved",
    "grid",
    "size",
    "rep",
    "frames",
    "mean_ms",
    "p50_ms",
    "p99_ms",
    "fps",
    "render_cpu_p50_us",
    "render_cpu_mean_us",
    "startup_s",
    "status",
    "reason",
    "handoff_in_p50_us",
    "handoff_out_p50_us",
    "gpu_draw_p50_ms",
    "gpu_kernel_p50_ms",
    "gpu_busy_p50_ms",
    "limit_ms",
    "ratio_to_limit",
    "post",
    "post_filter_p50_ms",
    "post_in_p50_us",
    "post_out_p50_us",
    "post_latency_p50_ms",
    "post_latency_p99_ms",
    "vulkan_post_ms",
    "ratio_to_vulkan_post",
];

/// The GPU limit of each grid@size: the [`LIMIT`] row's value, when it ran.
fn limits(results: &[CellResult]) -> Vec<(CellSize, f64)> {
    results
        .iter()
        .filter(|r| r.cell.config.limit)
        .filter_map(|r| Some((r.cell.at, Summary::for_row(&r.runs, true).frame_ms?)))
        .collect()
}

/// The median frame time of the post baseline of `c` ([`post_baseline`]: the Vulkan-shader post,
/// timed on the GPU or not like `c`) at `at`, when the matrix has that row and it ran.
///
/// ```
/// use vkhip::app::matrix::parse::Measurement;
/// use vkhip::app::matrix::preset::{preset, Cell};
/// use vkhip::app::matrix::run::Outcome;
/// use vkhip::app::matrix::table::post_baseline_ms;
/// use vkhip::app::matrix::CellResult;
/// use vkhip::cli::BenchPreset;
///
/// let p = preset(BenchPreset::Post);
/// let at = p.sizes[1];
/// let ok = |mean_ms: f64| Outcome::Ok(Measurement {
///     mean_ms, p50_ms: mean_ms, p99_ms: mean_ms, fps: 1e3 / mean_ms, render_cpu_p50_us: 1.0,
///     render_cpu_mean_us: None, startup_s: None, resolved: "external".into(), device: "d".into(),
///     handoff_in_us: None, handoff_out_us: None, gpu_limit: None, post: None,
/// });
/// let cell = |i: usize, runs: Vec<Outcome>| CellResult { cell: Cell { config: p.rows[i], at }, runs };
/// // Rows 1 and 4: the Vulkan-shader post, untimed and timed.
/// let results = [cell(1, vec![ok(2.0), ok(2.2), ok(2.1)]), cell(4, vec![ok(2.5)])];
/// assert_eq!(post_baseline_ms(&results, &p.rows[2], at), Some(2.1)); // cuda-in-vulkan post
/// assert_eq!(post_baseline_ms(&results, &p.rows[6], at), Some(2.5)); // cuda post, timed
/// assert_eq!(post_baseline_ms(&results, &p.rows[2], p.sizes[0]), None); // not run at 256²
/// ```
pub fn post_baseline_ms(results: &[CellResult], c: &Config, at: CellSize) -> Option<f64> {
    let base = post_baseline(c);
    let r = results.iter().find(|r| r.cell.at == at && r.cell.config.label == base)?;
    Summary::of(&r.runs).frame_ms
}

/// Write one CSV row per repetition of every cell.
pub fn write_csv<W: std::io::Write>(out: W, results: &[CellResult], frames: u64) -> csv::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_COLUMNS)?;
    let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_default();
    let limits = limits(results);
    let round = |v: f64| format!("{v:.4}");
    let post = |m: Option<&super::parse::Measurement>, f: fn(&super::parse::PostFigures) -> Option<f64>| {
        m.and_then(|m| m.post.as_deref().and_then(f)).map(|v| v.to_string()).unwrap_or_default()
    };
    for r in results {
        let limit = limits.iter().find(|(at, _)| *at == r.cell.at).map(|l| l.1);
        let c = &r.cell.config;
        let vulkan_post = post_baseline_ms(results, c, r.cell.at);
        for (rep, o) in r.runs.iter().enumerate() {
            let m = o.measurement();
            let num =
                |f: fn(&super::parse::Measurement) -> f64| m.map(|m| f(m).to_string()).unwrap_or_default();
            w.write_record([
                c.label.to_string(),
                c.backend.to_string(),
                c.sync.unwrap_or("").to_string(),
                opt(c.slots),
                opt(c.run_ahead),
                opt(c.batch),
                c.memory.unwrap_or("").to_string(),
                m.map(|m| m.resolved.clone()).unwrap_or_default(),
                r.cell.at.grid.to_string(),
                r.cell.at.size.to_string(),
                (rep + 1).to_string(),
                frames.to_string(),
                num(|m| m.mean_ms),
                num(|m| m.p50_ms),
                num(|m| m.p99_ms),
                num(|m| m.fps),
                num(|m| m.render_cpu_p50_us),
                m.and_then(|m| m.render_cpu_mean_us).map(|v| v.to_string()).unwrap_or_default(),
                m.and_then(|m| m.startup_s).map(|v| v.to_string()).unwrap_or_default(),
                o.status().to_string(),
                o.reason().to_string(),
                m.and_then(|m| m.handoff_in_us).map(|v| v.to_string()).unwrap_or_default(),
                m.and_then(|m| m.handoff_out_us).map(|v| v.to_string()).unwrap_or_default(),
                m.and_then(|m| m.gpu_limit).map(|g| g.draw_ms.to_string()).unwrap_or_default(),
                m.and_then(|m| m.gpu_limit).map(|g| g.kernel_ms.to_string()).unwrap_or_default(),
                m.and_then(|m| m.gpu_limit?.busy_ms).map(|v| v.to_string()).unwrap_or_default(),
                limit.map(round).unwrap_or_default(),
                m.zip(limit).map(|(m, l)| round(m.mean_ms / l)).unwrap_or_default(),
                c.post.unwrap_or("").to_string(),
                post(m, |p| p.filter_p50_ms),
                post(m, |p| p.in_p50_us),
                post(m, |p| p.out_p50_us),
                post(m, |p| p.latency_p50_ms),
                post(m, |p| p.latency_p99_ms),
                vulkan_post.map(round).unwrap_or_default(),
                m.zip(vulkan_post).map(|(m, b)| round(m.mean_ms / b)).unwrap_or_default(),
            ])?;
        }
    }
    w.flush()?;
    Ok(())
}

/// A table cell's text: no line breaks, pipes escaped.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "n/a".into(), |r| format!("{r:.2}×"))
}

fn or_dash(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".into(), |v| format!("{v:.digits$}"))
}

/// The markdown table for one grid@size.
pub fn markdown_table(at: &CellSize, results: &[CellResult]) -> String {
    let rows: Vec<(&CellResult, Summary)> = results
        .iter()
        .filter(|r| r.cell.at == *at)
        .map(|r| (r, Summary::for_row(&r.runs, r.cell.config.limit)))
        .collect();
    let base = |label: &str| rows.iter().find(|(r, _)| r.cell.config.label == label).map(|(_, s)| s);
    let (native, limit, reference) = (base(NATIVE), base(LIMIT), base(REFERENCE));
    // With a post stage in the matrix: each row against the Vulkan-shader post, and its latency.
    let post = rows.iter().any(|(r, _)| r.cell.config.post.is_some());
    let mut out = String::new();
    let _ = writeln!(out, "### grid {} @ image {}\n", at.grid, at.size);
    let post_head =
        if post { format!(" vs {POST_NATIVE} | post latency p50 / p99 (ms) |") } else { String::new() };
    let _ = writeln!(
        out,
        "| configuration | resolved sync | frame time (ms) | spread (ms) | vs {NATIVE} | vs {LIMIT} | vs {REFERENCE} |{post_head} render CPU p50 / mean (µs) | start-up (s) | status |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|{}---:|---:|---|",
        if post { "---:|---:|" } else { "" }
    );
    for (r, s) in &rows {
        let spread = s.spread_ms.map_or_else(|| "–".into(), |(lo, hi)| format!("{lo:.3}–{hi:.3}"));
        let post_cells = if post {
            let vs = post_baseline_ms(results, &r.cell.config, *at).and_then(|b| Some(s.frame_ms? / b));
            let latency = match (s.post_latency_p50_ms, s.post_latency_p99_ms) {
                (Some(a), Some(b)) => format!("{a:.3} / {b:.3}"),
                _ => "–".into(),
            };
            format!(" {} | {latency} |", ratio(vs))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |{post_cells} {} / {} | {} | {} |",
            cell(r.cell.config.label),
            cell(s.resolved.as_deref().unwrap_or("–")),
            or_dash(s.frame_ms, 3),
            spread,
            ratio(s.ratio_to(native)),
            ratio(s.ratio_to(limit)),
            ratio(s.ratio_to(reference)),
            or_dash(s.render_cpu_p50_us, 1),
            or_dash(s.render_cpu_mean_us, 1),
            or_dash(s.startup_s, 3),
            cell(&s.status()),
        );
    }
    out
}

/// The whole bench.md.
pub fn markdown(header: &Header, sizes: &[CellSize], results: &[CellResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## vkhip bench\n");
    let _ = writeln!(out, "- date: {}", header.date_utc);
    let _ = writeln!(out, "- command: `{}`", header.command.replace('`', "'"));
    let _ = writeln!(out, "- device: {}", header.device.as_deref().unwrap_or("(no run reported one)"));
    if let Some(i) = &header.interrupted {
        let _ = writeln!(out, "- **interrupted** {i}");
    }
    let _ = writeln!(
        out,
        "- each run: {} timed frames after {} warm-up frames (`--time frame`, headless, `--gpu-timing {}`); {} repetition(s), interleaved",
        header.frames,
        header.warmup,
        if header.gpu_timing { "on" } else { "off" },
        header.reps
    );
    let _ = writeln!(
        out,
        "- frame time: median over the repetitions of each run's mean frame time; spread: min–max of those means; ratios: this row's frame time over the baseline's at the same grid (n/a: the baseline is not in the matrix or did not run)"
    );
    let _ = writeln!(
        out,
        "- {LIMIT}: the GPU's own work per frame, draw + kernel (GPU p50s from timestamps), from runs of {NATIVE} with `--gpu-timing on` interleaved with the others (its row shows that sum); `vs {LIMIT}`: a row's frame time over it, 1.00× being a frame that costs only the GPU's own work\n"
    );
    if results.iter().any(|r| r.cell.config.post.is_some()) {
        let _ = writeln!(
            out,
            "- post stage (`--post outline`): `vs {POST_NATIVE}`: a row's frame time over the Vulkan-shader post's at the same grid (rows timed on the GPU over `{}`); post latency: the draw's end → the copy's end (GPU timestamps, so only in runs with GPU timing on: the `, timed` rows), medians of the runs' p50 and p99\n",
            super::preset::POST_NATIVE_TIMED
        );
    }
    for at in sizes {
        out.push_str(&markdown_table(at, results));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::parse::Measurement;
    use super::super::preset::{preset, Cell};
    use super::super::run::Outcome;
    use super::*;
    use crate::cli::BenchPreset;

    fn ok(mean: f64) -> Outcome {
        Outcome::Ok(Measurement {
            mean_ms: mean,
            p50_ms: mean,
            p99_ms: mean,
            fps: 1e3 / mean,
            render_cpu_p50_us: 5.0,
            render_cpu_mean_us: Some(7.5),
            startup_s: None,
            resolved: "binary, 1 slot(s)".into(),
            device: "d".into(),
            handoff_in_us: Some(40.0),
            handoff_out_us: None,
            gpu_limit: None,
            post: None,
        })
    }

    fn timed(mean: f64, draw: f64, kernel: f64) -> Outcome {
        match ok(mean) {
            Outcome::Ok(m) => Outcome::Ok(Measurement {
                gpu_limit: Some(super::super::parse::GpuLimit {
                    draw_ms: draw,
                    kernel_ms: kernel,
                    busy_ms: None,
                }),
                ..m
            }),
            o => o,
        }
    }

    #[test]
    fn ratios_use_the_baselines_of_the_same_grid() {
        let p = preset(BenchPreset::Gpu);
        let at = p.sizes[0];
        let result = |i: usize, runs: Vec<Outcome>| CellResult { cell: Cell { config: p.rows[i], at }, runs };
        let limit = CellResult {
            cell: Cell { config: crate::app::matrix::preset::LIMIT_ROW, at },
            runs: vec![timed(1.1, 0.7, 0.1), timed(1.1, 0.75, 0.05), timed(1.1, 0.9, 0.1)],
        };
        let results = vec![
            limit,
            result(0, vec![ok(1.0), ok(1.2), ok(0.8)]),
            result(1, vec![ok(2.0), ok(2.0), ok(2.0)]),
            result(2, vec![ok(4.0), ok(3.0), ok(5.0)]),
            result(3, vec![Outcome::Unsupported("no | cuda".into()); 3]),
        ];
        let t = markdown_table(&at, &results);
        let line =
            |label: &str| t.lines().find(|l| l.starts_with(&format!("| {label} |"))).unwrap().to_string();
        assert!(t.contains("| vs vulkan (native) | vs GPU limit | vs reference: binary K=1 |"), "{t}");
        // The limit row shows draw + kernel (median 0.8 ms, spread 0.8–1.0), not its frame time.
        assert!(line("GPU limit").contains("| 0.800 | 0.800–1.000 | 0.80× | 1.00× | 0.40× |"), "{t}");
        assert!(
            line("simpleVulkan as shipped").contains("| 4.000 | 3.000–5.000 | 4.00× | 5.00× | 2.00× |"),
            "{t}"
        );
        assert!(
            line("vulkan (native)").contains("| 1.000 | 0.800–1.200 | 1.00× | 1.25× | 0.50× | 5.0 / 7.5 |"),
            "{t}"
        );
        assert!(line("blocking").contains("| – | – | n/a | n/a | n/a |"), "{t}");
        assert!(line("blocking").ends_with("| unsupported: no \\| cuda |"), "{t}");
        // Without the limit and reference rows their columns are n/a.
        let t = markdown_table(&at, &results[1..2]);
        assert!(t.contains("| 1.00× | n/a | n/a |"), "{t}");
        // The CSV gives every row the grid's limit and its ratio to it.
        let mut buf = Vec::new();
        write_csv(&mut buf, &results, 60).unwrap();
        let mut r = csv::Reader::from_reader(buf.as_slice());
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        let col = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
        assert_eq!((&rows[0][col("gpu_draw_p50_ms")], &rows[0][col("gpu_kernel_p50_ms")]), ("0.7", "0.1"));
        assert_eq!((&rows[3][col("limit_ms")], &rows[3][col("ratio_to_limit")]), ("0.8000", "1.2500"));
        assert_eq!((&rows[4][col("gpu_draw_p50_ms")], &rows[4][col("ratio_to_limit")]), ("", "1.5000"));
        assert_eq!(&rows[12][col("ratio_to_limit")], "", "an unsupported run has no ratio");
    }

    #[test]
    fn csv_has_a_row_per_repetition() {
        let p = preset(BenchPreset::Quick);
        let at = p.sizes[0];
        let results = vec![
            CellResult { cell: Cell { config: p.rows[0], at }, runs: vec![ok(1.0), ok(2.0)] },
            CellResult {
                cell: Cell { config: p.rows[2], at },
                runs: vec![ok(1.0), Outcome::Failed("a, \"b\"".into())],
            },
        ];
        let mut buf = Vec::new();
        write_csv(&mut buf, &results, 60).unwrap();
        let mut r = csv::Reader::from_reader(buf.as_slice());
        assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 4);
        assert_eq!(&rows[1][10], "2");
        assert_eq!(&rows[1][12], "2");
        assert_eq!((&rows[2][3], &rows[2][4], &rows[2][5]), ("4", "2", "2"));
        assert_eq!((&rows[3][19], &rows[3][20], &rows[3][12]), ("failed", "a, \"b\"", ""));
        // render_cpu_p50_us, render_cpu_mean_us
        assert_eq!((&rows[0][16], &rows[0][17]), ("5", "7.5"));
        // handoff_in_p50_us, handoff_out_p50_us: empty where not measured.
        assert_eq!((&rows[0][21], &rows[0][22]), ("40", ""));
        assert_eq!((&rows[3][21], &rows[3][22]), ("", ""));
    }
}
