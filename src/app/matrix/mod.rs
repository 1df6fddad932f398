//! `vkhip bench`: the frame-sync benchmark matrix. Every cell (configuration × grid@size) runs
//! as a headless child process of this binary; the reports are collected into bench.csv,
//! bench.md and bench.png.
//!
//! - [`preset`]: the configurations and presets, and the plan after the command line's overrides;
//! - [`mod@run`]: one child run and how its exit is classified; the rotated order of the rounds;
//! - [`parse`]: reading the child's frame report;
//! - [`stats`]: medians and spreads over the repetitions;
//! - [`table`]: the CSV rows and the markdown tables;
//! - [`panel`]: what the chart shows: a panel per grid@size, a row per configuration, its family;
//! - [`layout`]: the chart's geometry, computed and tested without drawing;
//! - [`plot`]: the PNG chart;
//! - [`replot`]: the chart drawn again from a bench.csv (`vkhip bench --replot`).
//!
//! # Examples
//!
//! One cell's journey: the child's frame report is parsed into a measurement, and the
//! repetitions' summary becomes its row in bench.md.
//!
//! ```
//! use vkhip::app::matrix::preset::{preset, Cell};
//! use vkhip::app::matrix::run::Outcome;
//! use vkhip::app::matrix::{parse::parse_report, table::markdown_table, CellResult};
//! use vkhip::cli::BenchPreset;
//!
//! let quick = preset(BenchPreset::Quick);
//! let cell = Cell { config: quick.rows[1], at: quick.sizes[0] };
//! let report = |mean: &str| {
//!     format!(
//!         "vkhip frame report\n  frame time   mean {mean} ms   p50 1.9 ms   p99 3.0 ms   (500.0 fps)\n  \
//!          render cpu   p50 40.0 µs   p99 90.0 µs   mean 45.0 µs   (render thread CPU time per frame)\n  \
//!          sync         bridged, 3 slot(s), run-ahead 0, batch 1\n  device       llvmpipe\n"
//!     )
//! };
//! let runs = ["2.0", "2.5", "1.5"].map(|m| Outcome::Ok(parse_report(&report(m)).unwrap())).to_vec();
//! let table = markdown_table(&cell.at, &[CellResult { cell, runs }]);
//! assert!(table.starts_with("### grid 64x64 @ image 160x90\n"), "{table}");
//! let row = table.lines().last().unwrap();
//! assert_eq!(
//!     row,
//!     "| cpu bridged | bridged, 3 slot(s), run-ahead 0, batch 1 | 2.000 | 1.500–2.500 | n/a | n/a | n/a | 40.0 / 45.0 | – | ok |"
//! );
//! ```

pub mod layout;
pub mod panel;
pub mod parse;
pub mod plot;
pub mod preset;
pub mod replot;
pub mod run;
pub mod stats;
pub mod table;

use super::frame::interrupted;
use crate::cli::{MatrixArgs, UsageError};
use crate::pending::PendingFile;
use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use preset::{Cell, Plan};
use run::Outcome;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// One cell and its timed runs, in repetition order.
#[derive(Clone, Debug)]
pub struct CellResult {
    pub cell: Cell,
    pub runs: Vec<Outcome>,
}

/// The output files' names inside `--out`.
pub const CSV_NAME: &str = "bench.csv";
pub const MD_NAME: &str = "bench.md";
pub const PNG_NAME: &str = "bench.png";

fn cell_name(c: &Cell) -> String {
    format!("{} @ {}", c.config.label, c.at)
}

/// The command line as typed, quoted where a shell would need it.
fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quoted = args.iter().map(|a| {
        if !a.is_empty() && a.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=@,:x".contains(c)) {
            a.clone()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        }
    });
    std::iter::once("vkhip".to_string()).chain(quoted).collect::<Vec<_>>().join(" ")
}

/// Create `--out` and the three pending files, so an unwritable directory fails before any run.
fn open_outputs(dir: &Path) -> Result<[PendingFile; 3], UsageError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| UsageError(format!("--out {}: cannot create the directory: {e}", dir.display())))?;
    let open = |name: &str| {
        let path = dir.join(name);
        PendingFile::create(&path)
            .map_err(|e| UsageError(format!("--out: cannot write {}: {e}", path.display())))
    };
    Ok([open(CSV_NAME)?, open(MD_NAME)?, open(PNG_NAME)?])
}

fn progress(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    match ProgressStyle::with_template("{spinner} {pos}/{len} cells, eta {eta}  {wide_msg}") {
        Ok(style) => bar.set_style(style),
        Err(e) => log::debug!("progress template: {e}"),
    }
    bar
}

/// Run every cell once untimed, then `reps` rounds in rotated order. After an interrupt
/// (Ctrl-C, SIGTERM) no further run starts, and the run it arrived during is dropped; the second
/// value counts the timed runs that finished.
fn run_matrix(plan: &Plan, exe: &Path) -> (Vec<CellResult>, u64) {
    let n = plan.cells.len();
    let bar = progress((n as u64) * (1 + u64::from(plan.reps)));
    let mut results: Vec<CellResult> =
        plan.cells.iter().map(|&cell| CellResult { cell, runs: Vec::new() }).collect();
    // A configuration this machine cannot run (exit 2) is not run again.
    let mut unsupported: Vec<Option<String>> = vec![None; n];
    let mut done = 0u64;
    for (i, cell) in plan.cells.iter().enumerate() {
        if interrupted() {
            break;
        }
        bar.set_message(format!("warm-up: {}", cell_name(cell)));
        match run::run_child(
            exe,
            &run::child_args(cell, run::WARMUP_RUN_FRAMES, 0, plan.device, plan.gpu_timing),
        ) {
            Outcome::Unsupported(r) => {
                log::info!("{}: unsupported: {r}", cell_name(cell));
                unsupported[i] = Some(r);
            }
            Outcome::Failed(r) => log::warn!("{}: warm-up run failed: {r}", cell_name(cell)),
            Outcome::Ok(_) => {}
        }
        bar.inc(1);
    }
    'rounds: for round in 0..plan.reps as usize {
        for i in run::round_order(n, round) {
            if interrupted() {
                break 'rounds;
            }
            let cell = &plan.cells[i];
            bar.set_message(format!("rep {}/{}: {}", round + 1, plan.reps, cell_name(cell)));
            let outcome = match &unsupported[i] {
                Some(r) => Outcome::Unsupported(r.clone()),
                None => run::run_child(
                    exe,
                    &run::child_args(cell, plan.frames, plan.warmup, plan.device, plan.gpu_timing),
                ),
            };
            if interrupted() {
                // The child may have been interrupted too: its numbers are not a whole run.
                break 'rounds;
            }
            if let Outcome::Failed(r) = &outcome {
                log::warn!("{} (rep {}): failed: {r}", cell_name(cell), round + 1);
            }
            results[i].runs.push(outcome);
            done += 1;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    (results, done)
}

/// The chart's title: what each bar is, and on which device (its name, without the details in
/// brackets).
pub fn plot_title(frames: u64, reps: u32, device: Option<&str>) -> String {
    let name = device.map_or("", |d| d.split(" [").next().unwrap_or(d));
    format!(
        "vkhip bench: median frame time, {frames} frames × {reps} reps{}{name}",
        if name.is_empty() { "" } else { " on " }
    )
}

/// `vkhip bench` (or, with `--replot`, only its chart, from a CSV).
pub fn run(args: &MatrixArgs) -> anyhow::Result<ExitCode> {
    if let Some(csv) = &args.replot {
        return replot::replot(csv);
    }
    let plan = Plan::new(args)?;
    let [csv_file, md_file, png_file] = open_outputs(&args.out)?;
    let exe = std::env::current_exe().context("finding the vkhip binary to run the cells with")?;
    let (results, done) = run_matrix(&plan, &exe);
    let planned = plan.cells.len() as u64 * u64::from(plan.reps);
    let stopped = (done < planned).then(|| {
        crate::errln!(
            "vkhip: bench: interrupted after {done} of {planned} timed runs; writing what finished"
        );
        format!("after {done} of {planned} timed runs; the tables cover the runs that finished")
    });

    let device = results.iter().flat_map(|r| &r.runs).find_map(|o| o.measurement().map(|m| m.device.clone()));
    let header = table::Header {
        date_utc: jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        command: command_line(),
        device: device.clone(),
        frames: plan.frames,
        warmup: plan.warmup,
        reps: plan.reps,
        gpu_timing: plan.gpu_timing == crate::cli::OnOff::On,
        interrupted: stopped,
    };
    let markdown = table::markdown(&header, &plan.sizes, &results);
    let title = plot_title(plan.frames, plan.reps, device.as_deref());
    let image = plot::render(&title, &panel::panels(&plan.sizes, &results))?;

    let paths: Vec<PathBuf> =
        [&csv_file, &md_file, &png_file].iter().map(|p| p.path().to_path_buf()).collect();
    let io = |what: &'static str| {
        move |e: std::io::Error| anyhow::Error::new(e).context(format!("writing {what}"))
    };
    csv_file
        .commit(|w| table::write_csv(w, &results, plan.frames).context("writing bench.csv"), io(CSV_NAME))?;
    md_file
        .commit(|w| std::io::Write::write_all(w, markdown.as_bytes()).map_err(io(MD_NAME)), io(MD_NAME))?;
    png_file.commit(|w| plot::write_png(w, &image).context("writing bench.png"), io(PNG_NAME))?;

    crate::output::print(&markdown);
    for p in &paths {
        crate::outln!("wrote {}", p.display());
    }
    let failed = results.iter().flat_map(|r| &r.runs).any(|o| matches!(o, Outcome::Failed(_)));
    Ok(super::interrupted_or(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS }))
}
