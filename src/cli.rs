//! Command line: `vkhip [OPTIONS]` runs the demo; subcommands inspect, verify and benchmark.
//!
//! # Examples
//!
//! ```
//! use clap::Parser;
//! use vkhip::cli::{Cli, Command};
//! use vkhip::sim::Grid;
//!
//! let cli = Cli::try_parse_from(["vkhip", "--headless", "--slots", "2", "--grid", "64x32"]).unwrap();
//! assert!(cli.command.is_none());
//! assert!(cli.run.headless);
//! assert_eq!(cli.run.common.slots, Some(2));
//! assert_eq!(cli.run.common.grid, Grid { width: 64, height: 32 });
//!
//! let cli = Cli::try_parse_from(["vkhip", "verify", "--backend", "cpu"]).unwrap();
//! assert!(matches!(cli.command, Some(Command::Verify(_))));
//!
//! // Out-of-range values are refused at parse time.
//! assert!(Cli::try_parse_from(["vkhip", "--slots", "9"]).is_err());
//! assert!(Cli::try_parse_from(["vkhip", "--grid", "1x5"]).is_err());
//! ```

use crate::compute::post::PostKind;
use crate::compute::BackendKind;
use crate::sim::Grid;
use crate::sync::plan::{ComputeWait, Enqueue, MemoryPath, Submit, SyncRequest};
use crate::sync::SyncMode;
use crate::vk::device::DeviceArg;

/// `--backend`'s values are the backends' names, with their help lines.
impl ValueEnum for BackendKind {
    fn value_variants<'a>() -> &'a [Self] {
        &BackendKind::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// `--sync`'s values are the modes' names, with their help lines.
impl ValueEnum for SyncMode {
    fn value_variants<'a>() -> &'a [Self] {
        &SyncMode::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// `--post`'s values are the post stages' names, with their help lines.
impl ValueEnum for PostKind {
    fn value_variants<'a>() -> &'a [Self] {
        &PostKind::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// Frames of a headless run when `--frames` is not given.
pub const DEFAULT_FRAMES: u64 = 120;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

const ABOUT: &str = "Vulkan ⇄ GPU-compute interop: a compute backend (CPU, Vulkan, CUDA, HIP) writes a \
shared height field every frame behind semaphores; Vulkan draws it without a copy.";

const AFTER: &str = "\
Modes:
  With a display, vkhip opens a window (drag rotates, wheel zooms, R resets, G toggles the
  frame-time overlay, O toggles the --post filter, Esc quits).
  Without one (no DISPLAY / WAYLAND_DISPLAY) it renders offscreen, prints a frame report and
  writes the last frame to vkhip-frame.png (or --capture PNG). With --headless it does the same,
  writing a PNG only if --capture is given.

Examples:
  vkhip                                   window, or a headless run when there is no display
  vkhip --headless --frames 120 --capture frame.png
  vkhip --backend cpu --sync bridged --slots 2 --grid 1024x1024
  vkhip info                              devices, capabilities, and which pair vkhip would use
  vkhip --backend cuda --device cuda:1    on the GPU CUDA numbers 1 (--device N: Vulkan's index N)
  vkhip verify --backend vulkan --grid 513x257
  vkhip bench --preset quick --out b      the frame-sync benchmark matrix (CSV, markdown, PNG)
  vkhip --headless --frames 600 --trace t.json   then open t.json in ui.perfetto.dev
  vkhip trace check t.json                proves the protocol's orderings from the trace
  RUST_LOG=debug vkhip ...                more detail (RUST_LOG=vulkan=trace for the messenger)

Exit codes: 0 success, 1 a failed check or run, 2 a usage or environment problem (including
--validation without the Khronos validation layer installed), 128 + the signal's number after
an interrupt (130 Ctrl-C/SIGINT, 143 SIGTERM, 129 SIGHUP; the report is still printed).";

#[derive(Parser, Debug)]
#[command(name = "vkhip", version, about = ABOUT, after_help = AFTER, args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List Vulkan and compute devices, their interop capabilities, and the pair vkhip would use.
    Info(InfoArgs),
    /// Run frames with --time frame, read every slot back and compare it with the CPU reference.
    Verify(VerifyArgs),
    /// Benchmark matrix: run configurations (backend × sync × slots × grid) as headless child
    /// processes; write bench.csv, bench.md and bench.png.
    #[command(after_help = BENCH_AFTER)]
    Bench(MatrixArgs),
    /// Time the kernel against a plain fill of the same buffer (interop backends).
    BenchKernel(BenchArgs),
    /// Create and destroy the whole interop setup repeatedly; fail if fds or device memory leak.
    Cycles(CycleArgs),
    /// Compare two PNGs with vkhip's image tolerance (exit 1 if they differ).
    ComparePng(CompareArgs),
    /// Work with a trace written by --trace.
    #[command(subcommand)]
    Trace(TraceCommand),
}

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Prove from the timeline that every two conflicting accesses to a slot or a post image are
    /// ordered by a chain of semaphores and held that order on the clock, and that every wait's
    /// work started after its signal (exit 0 clean, 1 violations, 2 not a trace).
    Check(TraceCheckArgs),
}

#[derive(Args, Debug, Clone)]
pub struct TraceCheckArgs {
    /// A trace written by `vkhip --trace FILE`.
    pub file: PathBuf,
    /// Allowed clock disagreement in µs, 0..=1000000 (default: the alignment accuracy the trace
    /// states).
    #[arg(long, value_name = "US", value_parser = parse_tolerance_us, allow_hyphen_values = true)]
    pub tolerance_us: Option<f64>,
}

/// Options shared by every command that runs frames.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Who writes the height field.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    pub backend: BackendKind,
    /// How the compute side and Vulkan hand slots to each other (see docs/BACKENDS.md, "Sync modes").
    #[arg(long, value_enum, default_value_t = SyncMode::Auto)]
    pub sync: SyncMode,
    /// Number of shared height buffers K (1..=8); frame f uses slot f mod K. Default: chosen
    /// with --run-ahead and --batch for the backend and mode (see docs/BACKENDS.md, "Defaults").
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub slots: Option<u32>,
    /// Run-ahead R: each batch is handed to the compute side R frames before its first frame is
    /// drawn (R + B ≤ K; external, bridged and binary). Default: chosen for the backend and mode.
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(0..=7))]
    pub run_ahead: Option<u32>,
    /// Frames written per hand-off, B (1..=K): one wait, B kernels, one signal (external and
    /// bridged modes). Adds up to B−1 frames of latency. Default: chosen for the backend and mode.
    #[arg(long, value_name = "B", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub batch: Option<u32>,
    /// Draws the render thread may have queued on the GPU, F (2..=8). It host-waits only when the
    /// draw F frames back may still run, and then until one draw is left, so it sleeps once per
    /// F−1 frames instead of every frame: less CPU per frame, up to F−1 frames of queue latency.
    /// Default: 2 in a window, 4 headless, B+1 headless where the render thread settles the
    /// hand-offs' waits (cuda/hip external with batches of B: 8) (see docs/BACKENDS.md, "Defaults").
    #[arg(long, value_name = "F", value_parser = clap::value_parser!(u32).range(2..=8))]
    pub frames_in_flight: Option<u32>,
    /// The interop compute side's wait for `rendered` (cuda/hip, external): `auto` skips it when
    /// the host has already seen the value (the draw finished; nothing left to order), `gpu`
    /// always enqueues it on the compute API's stream.
    #[arg(long, value_enum, default_value_t = ComputeWaitArg::Auto)]
    pub compute_wait: ComputeWaitArg,
    /// GPU-side profiling: timestamps in every draw and dispatch and events around every kernel
    /// (the report's draw, compute and hand-off lines, the trace's GPU tracks). `off` leaves the
    /// GPU free of profiling work (frame time and the render thread's figures remain).
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub gpu_timing: OnOff,
    /// Diagnostic: how a frame reaches the queue when both sides are on it (`vulkan`,
    /// `cuda-in-vulkan`; external sync with no run-ahead and no batch). `joined`: dispatch →
    /// barrier → draw in one command buffer and one submission; `split`: the dispatch and the
    /// draw submitted apart, joined by the timeline semaphores (the older shape, kept for
    /// comparison). Every other configuration uses the semaphores whatever this says.
    #[arg(long, value_enum, default_value_t = SubmitArg::Joined)]
    pub submit: SubmitArg,
    /// Diagnostic: which thread makes the compute API's calls (wait, launch, signal) with cuda or
    /// hip and --sync external, headless. `thread`: a submission thread, so the render thread
    /// only queues each hand-off (about 10 µs of CUDA calls a frame off it); `render`: the render
    /// thread itself (the older shape, kept for comparison). A window always uses the render
    /// thread (a present must come after every signal it depends on was submitted), as does every
    /// other configuration, whatever this says.
    #[arg(long, value_enum, default_value_t = EnqueueArg::Thread)]
    pub enqueue: EnqueueArg,
    /// How the compute API reaches the slots: zero-copy (imported Vulkan memory) or staged (the
    /// kernel writes the API's own buffer, copied through host memory into a host-visible slot
    /// each frame: the baseline without interop memory; cuda only).
    #[arg(long, value_enum, default_value_t = MemoryArg::ZeroCopy)]
    pub memory: MemoryArg,
    /// A post-process stage after the draw (docs/RUNNING.md, "Post-processing"): the compute backend
    /// filters each rendered frame into a second image, which Vulkan presents or captures
    /// (every --sync mode; zero-copy memory only; O toggles it in a window).
    #[arg(long, value_enum, default_value_t = PostKind::None)]
    pub post: PostKind,
    /// Frames filtered per post hand-off, P (1..=K; cuda and hip with --post, headless): frames
    /// s..s+P−1 are drawn, one hand-off filters them (one wait, P filters, one signal), then their
    /// P copies are submitted. Fewer switches between the APIs, up to P−1 frames more latency.
    /// Default: K/2 for cuda/hip with --post and --sync external, headless; else 1 (see docs/RUNNING.md, "Post-processing").
    #[arg(long, value_name = "P", value_parser = clap::value_parser!(u32).range(1..=8))]
    pub post_batch: Option<u32>,
    /// Grid size WxH (each side 2..=16384).
    #[arg(long, value_name = "WxH", default_value = "512x512")]
    pub grid: Grid,
    /// Cameras per frame, N: every view drawn in ONE submission into an N-layer target (view i
    /// in layer i, its camera at its own azimuth around the surface), copied out as one
    /// (N, H, W, 4) array; still one hand-off each way per frame. A window shows the views
    /// tiled (a drag turns them all), as --capture writes them. Up to the device's
    /// maxImageArrayLayers (see docs/ARCHITECTURE.md, "Views"; more is refused naming that
    /// limit and the device's value); not with --post.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub views: u32,
    /// Height fields per frame, E: 1 (every view sees the same surface) or N = --views (view i
    /// sees environment i, each at its own time: t + (i mod 64) × 0.0625 s), written in one
    /// launch a frame by every backend (CUDA/HIP: gridDim.z = E; Vulkan: dispatch z = E).
    #[arg(long, value_name = "E", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub envs: u32,
    /// The GPU: a Vulkan device index N, or cuda:N for the GPU of CUDA device N (the two
    /// numberings need not agree; `vkhip info` lists both). Default: the device matching the
    /// compute backend (CUDA device 0's with cuda).
    #[arg(long, value_name = "N|cuda:N")]
    pub device: Option<DeviceArg>,
    /// Enable VK_LAYER_KHRONOS_validation with synchronization validation; report message counts.
    /// Without the layer installed (Debian: vulkan-validationlayers) the run does not start: one
    /// error line, exit 2.
    #[arg(long)]
    pub validation: bool,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Frames run before the report's statistics start (they still count in --frames).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub warmup_frames: u64,
    /// Render offscreen even if a display is available.
    #[arg(long)]
    pub headless: bool,
    /// Frames to run (headless default 120; window default 0 = until closed).
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
    /// Write the last frame to this PNG (headless; a run that is headless only because there is
    /// no display writes vkhip-frame.png by default).
    #[arg(long, value_name = "PNG")]
    pub capture: Option<PathBuf>,
    /// Simulation time: wall clock, or frame × --dt (reproducible). Default: wall in a window,
    /// frame when headless.
    #[arg(long, value_enum)]
    pub time: Option<TimeMode>,
    /// Seconds per frame for --time frame (1e-6..=3600).
    #[arg(long, value_name = "S", default_value_t = 1.0 / 60.0, value_parser = parse_dt, allow_hyphen_values = true)]
    pub dt: f64,
    /// Window or offscreen image size WxH.
    #[arg(long, value_name = "WxH", default_value = "1280x720")]
    pub size: Grid,
    /// Window presentation mode.
    #[arg(long, value_enum, default_value_t = PresentMode::Fifo)]
    pub present_mode: PresentMode,
    /// Cap the window frame rate (0 = no cap beyond the present mode; else 0.01..=10000).
    #[arg(long, value_name = "FPS", default_value_t = 0.0, value_parser = parse_max_fps, allow_hyphen_values = true)]
    pub max_fps: f64,
    /// Write a timeline of the last --trace-frames frames (render thread, bridge thread, graphics
    /// queue, compute stream, with the protocol's semaphore operations) as the profiler's Chrome
    /// trace-event JSON: open it in ui.perfetto.dev, check it with `vkhip trace check FILE`.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Frames the trace keeps (the last N; memory stays bounded on any run length).
    #[arg(long, value_name = "N", default_value_t = crate::profile::DEFAULT_TRACE_FRAMES,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub trace_frames: u32,
    /// Start with the frame-time overlay shown (G toggles it in a window; headless, --capture
    /// records it).
    #[arg(long)]
    pub overlay: bool,
}

#[derive(Args, Debug, Clone)]
pub struct InfoArgs {
    /// Backend whose device pairing to explain.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto)]
    pub backend: BackendKind,
    /// The device to pair with: a Vulkan index N, or cuda:N (the GPU of CUDA device N).
    #[arg(long, value_name = "N|cuda:N")]
    pub device: Option<DeviceArg>,
}

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Frames to run; every frame's slot is checked.
    #[arg(long, value_name = "N", default_value_t = 6)]
    pub frames: u64,
    /// Seconds per frame (simulation time is frame × dt; 1e-6..=3600).
    #[arg(long, value_name = "S", default_value_t = 1.0 / 60.0, value_parser = parse_dt, allow_hyphen_values = true)]
    pub dt: f64,
    /// Largest accepted |GPU − CPU reference| (0..=1; the heights span ±0.25).
    #[arg(long, default_value_t = 1e-5, value_parser = parse_tolerance, allow_hyphen_values = true)]
    pub tolerance: f32,
    /// Test hook: corrupt one value of this frame's slot after the compute side wrote it, to show
    /// that verify catches it.
    #[arg(long, value_name = "FRAME", hide = true)]
    pub corrupt_frame: Option<u64>,
    /// Offscreen image size WxH (each side 1..=16384). With `--post outline` every frame's
    /// output is compared with the CPU filter of its scene, texel by texel.
    #[arg(long, value_name = "WxH", default_value = "320x180", value_parser = parse_size)]
    pub size: Grid,
}

/// An image size WxH, each side 1..=16384 (a grid needs 2 texels a side, an image 1).
pub fn parse_size(s: &str) -> Result<Grid, String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("expected WxH, got '{s}'"))?;
    let side = |v: &str| -> Result<u32, String> {
        let n: u32 = v.trim().parse().map_err(|_| format!("'{v}' is not a number in '{s}'"))?;
        if (1..=16384).contains(&n) {
            Ok(n)
        } else {
            Err(format!("each side must be 1..=16384, got {n} in '{s}'"))
        }
    };
    Ok(Grid { width: side(w)?, height: side(h)? })
}

#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Timed launches of each (kernel and fill; 1..=100000).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub iterations: u32,
}

const BENCH_AFTER: &str = "\
What it measures:
  Each cell (configuration × grid@size) runs as its own headless child process,
  `vkhip --headless --time frame --frames WARMUP+FRAMES --warmup-frames WARMUP` plus the cell's
  flags, and its frame report is parsed: frame time (mean, p50, p99, fps), render-thread CPU time
  per frame, start-up time (when the report has it), and the resolved sync configuration.
  First every cell runs once untimed (50 frames: kernels compiled, caches and driver warm), then
  --reps rounds run every cell once each, in an order rotated by one per round, so repetitions
  interleave and slow drift does not favour one configuration. A cell whose child exits 2 is
  'unsupported' (its last stderr line is the reason; it is not run again), exit 1 or a crash is
  'failed'; the matrix carries on either way.

Presets:
  gpu    (default) the H100 matrix: vulkan (native), the binary K=1 reference, simpleVulkan's
         host wait, blocking, bridged, external with K/B/R variants, the defaults, and a staged
         copy; grids 256x256@320x180, 1024x1024, 2048x2048, 4096x4096 (@1280x720);
         1000 frames + 100 warm-up, 3 repetitions.
  quick  a CI-sized matrix for lavapipe: vulkan/external, cpu/bridged, cpu/bridged K=4 R=2 B=2 at
         64x64@160x90; 60 frames + 10 warm-up, 2 repetitions.
  post   the post stage: --post outline with vulkan (the Vulkan-shader baseline), cuda-in-vulkan
         and cuda (default sync), then cuda with --post-batch 1 and 8, each also as a run with
         --gpu-timing on for its latency (draw end → copy end), and vulkan without post;
         256x256@320x180 and 1024x1024@1280x720;
         1000 frames + 100 warm-up, 3 repetitions.

Outputs (in --out, each written atomically):
  bench.csv   one row per run: configuration, resolved sync line, grid, size, rep, frame times,
              render CPU, start-up, status (ok / unsupported / failed) and reason.
  bench.md    one table per grid@size: median of the repetitions' mean frame time, spread
              (min–max), ratios to 'vulkan (native)' and 'reference: binary K=1', render CPU p50 / mean,
              start-up; printed to stdout at the end as well.
  bench.png   median frame time per configuration, one panel per grid@size.

Examples:
  vkhip bench                                         the gpu matrix into ./vkhip-bench
  vkhip bench --preset quick --out /tmp/b
  vkhip bench --only external --only vulkan --grids 1024x1024@1280x720 --reps 5

Ctrl-C stops after the run in progress and writes what finished (exit 130; SIGTERM 143,
SIGHUP 129).
Exit codes: 0 every cell ran or was unsupported, 1 a cell failed, 2 a usage problem.";

/// `vkhip bench`: the frame-sync benchmark matrix.
#[derive(Args, Debug, Clone)]
pub struct MatrixArgs {
    /// Which matrix to run.
    #[arg(long, value_enum, default_value_t = BenchPreset::Gpu)]
    pub preset: BenchPreset,
    /// Timed repetitions of every cell (1..=1000; default: the preset's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: Option<u32>,
    /// Timed frames per run (1..=10000000; default: the preset's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub frames: Option<u64>,
    /// Frames run before the statistics start, per run (0..=1000000; default: the preset's).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub warmup: Option<u64>,
    /// Grid and image sizes, comma-separated GRID@SIZE with both WxH (default: the preset's),
    /// e.g. 256x256@320x180,1024x1024@1280x720.
    #[arg(long, value_name = "LIST", value_parser = parse_cell_sizes)]
    pub grids: Option<CellSizes>,
    /// Keep only the configurations whose label contains this text (repeatable; any match keeps).
    #[arg(long, value_name = "TEXT")]
    pub only: Vec<String>,
    /// Directory for bench.csv, bench.md and bench.png (created if missing).
    #[arg(long, value_name = "DIR", default_value = "vkhip-bench")]
    pub out: PathBuf,
    /// `--gpu-timing` for every run. Off by default: the bench measures the sync protocols, not
    /// the profiler's timestamps and events (`on` includes their cost, the same for every row).
    #[arg(long, value_enum, default_value_t = OnOff::Off)]
    pub gpu_timing: OnOff,
    /// The GPU of every run: a Vulkan index N or cuda:N (see `vkhip info`).
    #[arg(long, value_name = "N|cuda:N")]
    pub device: Option<DeviceArg>,
    /// Run nothing: draw the chart of an existing bench.csv again, beside it (FILE.png; the title
    /// names the device of FILE.md when there is one).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["preset", "reps", "frames", "warmup", "grids", "only", "out", "gpu_timing", "device"])]
    pub replot: Option<PathBuf>,
}

/// `vkhip bench --preset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchPreset {
    /// A small matrix that lavapipe runs in seconds (CI).
    Quick,
    /// The full matrix for a GPU machine.
    Gpu,
    /// The post stage (`--post outline`) on a GPU machine: vulkan, cuda-in-vulkan and cuda.
    Post,
    /// Views (`--views N`, N = 1 … 1024) on a GPU machine: vulkan and cuda, 64² to 256².
    Views,
    /// A few views rows that lavapipe runs in seconds (CI).
    QuickViews,
}

/// One `--grids` entry: the grid and the offscreen image size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellSize {
    pub grid: Grid,
    pub size: Grid,
}

impl std::fmt::Display for CellSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.grid, self.size)
    }
}

/// The parsed `--grids` list (a newtype, so clap takes the whole list as one value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CellSizes(pub Vec<CellSize>);

/// Parse `GRID@SIZE[,GRID@SIZE...]` (no duplicates).
pub fn parse_cell_sizes(s: &str) -> Result<CellSizes, String> {
    let mut out: Vec<CellSize> = Vec::new();
    for item in s.split(',').map(str::trim) {
        let (g, z) = item
            .split_once('@')
            .ok_or_else(|| format!("'{item}' is not of the form GRID@SIZE (e.g. 1024x1024@1280x720)"))?;
        let grid: Grid = g.parse().map_err(|e| format!("grid {e}"))?;
        let size: Grid = z.parse().map_err(|e| format!("image size {e}"))?;
        let cell = CellSize { grid, size };
        if out.contains(&cell) {
            return Err(format!("{cell} is listed twice"));
        }
        out.push(cell);
    }
    Ok(CellSizes(out))
}

#[derive(Args, Debug, Clone)]
pub struct CycleArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Create/destroy cycles (2..=10000: the first is the baseline the last is compared with).
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(2..=10_000))]
    pub count: u32,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    pub a: PathBuf,
    pub b: PathBuf,
    /// Per-channel tolerance (a pixel differs if a channel differs by more).
    #[arg(long, default_value_t = crate::image::CHANNEL_TOLERANCE)]
    pub tolerance: u8,
}

/// A switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// `--submit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum SubmitArg {
    /// One submission per frame where both sides are on Vulkan's queue.
    Joined,
    /// The dispatch and the draw in two submissions, joined by the semaphores.
    Split,
}

impl From<SubmitArg> for Submit {
    fn from(a: SubmitArg) -> Self {
        match a {
            SubmitArg::Joined => Submit::Joined,
            SubmitArg::Split => Submit::Split,
        }
    }
}

/// `--enqueue`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum EnqueueArg {
    /// A submission thread makes the compute API's calls.
    Thread,
    /// The render thread makes them.
    Render,
}

impl From<EnqueueArg> for Enqueue {
    fn from(a: EnqueueArg) -> Self {
        match a {
            EnqueueArg::Thread => Enqueue::Thread,
            EnqueueArg::Render => Enqueue::Render,
        }
    }
}

/// `--compute-wait`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum ComputeWaitArg {
    /// Skip the wait when the host already saw `rendered` reach the value.
    Auto,
    /// Always wait on the GPU.
    Gpu,
}

impl From<ComputeWaitArg> for ComputeWait {
    fn from(a: ComputeWaitArg) -> Self {
        match a {
            ComputeWaitArg::Auto => ComputeWait::Auto,
            ComputeWaitArg::Gpu => ComputeWait::Gpu,
        }
    }
}

/// `--memory`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, ValueEnum)]
pub enum MemoryArg {
    /// The compute API writes the Vulkan slot itself (imported OPAQUE_FD memory).
    ZeroCopy,
    /// The compute API writes its own buffer; each frame it is copied to host memory and from
    /// there into a host-visible slot (what an application without interop memory does).
    Staged,
}

impl From<MemoryArg> for MemoryPath {
    fn from(a: MemoryArg) -> Self {
        match a {
            MemoryArg::ZeroCopy => MemoryPath::ZeroCopy,
            MemoryArg::Staged => MemoryPath::Staged,
        }
    }
}

/// The sync options of the command line, as the plan takes them.
impl From<&CommonArgs> for SyncRequest {
    fn from(a: &CommonArgs) -> Self {
        SyncRequest {
            mode: a.sync,
            slots: a.slots,
            run_ahead: a.run_ahead,
            batch: a.batch,
            memory: a.memory.into(),
            compute_wait: a.compute_wait.into(),
            frames_in_flight: a.frames_in_flight,
            submit: a.submit.into(),
            enqueue: a.enqueue.into(),
            post: a.post,
            post_batch: a.post_batch,
            window: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TimeMode {
    /// Seconds since start.
    Wall,
    /// frame × --dt.
    Frame,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PresentMode {
    Fifo,
    Mailbox,
    Immediate,
}

/// A parse error as `vkhip` reports it: one line naming the problem (with the accepted values,
/// if clap lists them), not clap's usage block, without clap's `error: `.
pub fn error_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let line: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    line.join(" ").trim_start_matches("error: ").to_string()
}

/// A usage mistake found after parsing (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Checks clap cannot express.
pub fn check_run(args: &RunArgs, headless: bool) -> Result<(), UsageError> {
    if headless && args.frames == Some(0) {
        return Err(UsageError("--frames must be at least 1 for a headless run".into()));
    }
    let frames = args.frames.unwrap_or(if headless { DEFAULT_FRAMES } else { 0 });
    if args.warmup_frames > 0 && frames > 0 && args.warmup_frames >= frames {
        return Err(UsageError(format!(
            "--warmup-frames {} leaves no frame to measure out of --frames {frames}",
            args.warmup_frames
        )));
    }
    check_dt(args.dt)?;
    check_max_fps(args.max_fps)?;
    check_views(&args.common)?;
    if args.trace.is_some() && args.common.gpu_timing == OnOff::Off {
        return Err(UsageError(
            "--trace needs the GPU side of the timeline: drop --gpu-timing off (or --trace)".into(),
        ));
    }
    if args.capture.is_some() && !headless {
        return Err(UsageError("--capture needs a headless run (add --headless)".into()));
    }
    if let Some(path) = &args.capture {
        check_png_path(path, "--capture")?;
    }
    Ok(())
}

/// `--views` and `--envs` together, and with the rest of the run (clap cannot say these).
///
/// ```
/// use clap::Parser as _;
/// use vkhip::cli::{check_views, Cli};
///
/// let common = |args: &[&str]| Cli::try_parse_from(["vkhip"].iter().chain(args)).unwrap().run.common;
/// assert!(check_views(&common(&["--views", "8", "--envs", "8"])).is_ok());
/// let e = check_views(&common(&["--views", "8", "--envs", "3"])).unwrap_err();
/// assert_eq!(e.to_string(), "--envs 3: 1 or --views (8): view i sees environment i, or every view environment 0");
/// ```
pub fn check_views(common: &CommonArgs) -> Result<(), UsageError> {
    let (n, e) = (common.views, common.envs);
    if e != 1 && e != n {
        return Err(UsageError(format!(
            "--envs {e}: 1 or --views ({n}): view i sees environment i, or every view environment 0"
        )));
    }
    if n > 1 && common.post != crate::compute::post::PostKind::None {
        return Err(UsageError(format!(
            "--views {n} with --post: the post stage filters one image a frame; drop one of them"
        )));
    }
    Ok(())
}

/// A PNG output path must say so: `--capture out.jpg` would otherwise write PNG bytes under a
/// name that tells every viewer and script they are JPEG. vkhip writes PNG only, so any other
/// extension (or none) is refused rather than silently renamed or converted.
pub fn check_png_path(path: &std::path::Path, option: &str) -> Result<(), UsageError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("png") => Ok(()),
        _ => Err(UsageError(format!(
            "{option} {}: vkhip writes PNG files only; give a name ending in .png",
            path.display()
        ))),
    }
}

/// Accepted `--dt` (seconds per frame): long enough to mean something, short enough that
/// frame × dt stays finite for any frame count.
pub const DT_RANGE: std::ops::RangeInclusive<f64> = 1e-6..=3600.0;
/// Accepted `--max-fps` when not 0 (0 = no cap).
pub const MAX_FPS_RANGE: std::ops::RangeInclusive<f64> = 0.01..=10_000.0;
/// Accepted `verify --tolerance`.
pub const TOLERANCE_RANGE: std::ops::RangeInclusive<f32> = 0.0..=1.0;

pub fn check_dt(dt: f64) -> Result<(), UsageError> {
    if DT_RANGE.contains(&dt) {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--dt {} must be a positive number of seconds in {}..={}",
            num(dt),
            num(*DT_RANGE.start()),
            num(*DT_RANGE.end())
        )))
    }
}

pub fn check_max_fps(fps: f64) -> Result<(), UsageError> {
    if fps == 0.0 || MAX_FPS_RANGE.contains(&fps) {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--max-fps {} must be 0 (no cap) or a number of frames per second in {}..={}",
            num(fps),
            num(*MAX_FPS_RANGE.start()),
            num(*MAX_FPS_RANGE.end())
        )))
    }
}

pub fn check_tolerance(t: f32) -> Result<(), UsageError> {
    if TOLERANCE_RANGE.contains(&t) {
        Ok(())
    } else {
        Err(UsageError(format!(
            "--tolerance {} must be a number in {}..={}",
            num(t),
            num(*TOLERANCE_RANGE.start()),
            num(*TOLERANCE_RANGE.end())
        )))
    }
}

/// A number as a person writes it: the shortest form that reads back as the same value, in
/// exponent notation when very small or large (`1e-300`, `0.5`, `3600`, `NaN`), never the
/// eighty-digit expansion `{}` gives a tiny float.
pub fn num<T: std::fmt::Debug>(x: T) -> String {
    let s = format!("{x:?}");
    match s.strip_suffix(".0") {
        Some(whole) => whole.to_string(),
        None => s,
    }
}

/// clap parser for a float option checked by `check` (NaN and infinities never pass a range).
fn parse_checked<T: std::str::FromStr + Copy>(
    s: &str,
    check: fn(T) -> Result<(), UsageError>,
) -> Result<T, String> {
    let v = s.trim().parse::<T>().map_err(|_| format!("'{s}' is not a number"))?;
    check(v).map_err(|e| e.0)?;
    Ok(v)
}

fn parse_dt(s: &str) -> Result<f64, String> {
    parse_checked(s, check_dt)
}

fn parse_max_fps(s: &str) -> Result<f64, String> {
    parse_checked(s, check_max_fps)
}

fn parse_tolerance(s: &str) -> Result<f32, String> {
    parse_checked(s, check_tolerance)
}

fn check_tolerance_us(t: f64) -> Result<(), UsageError> {
    if (0.0..=1e6).contains(&t) {
        Ok(())
    } else {
        Err(UsageError("--tolerance-us must be a number of µs in 0..=1000000".into()))
    }
}

fn parse_tolerance_us(s: &str) -> Result<f64, String> {
    parse_checked(s, check_tolerance_us)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("vkhip").chain(args.iter().copied()))
    }

    #[test]
    fn numeric_options_have_finite_ranges() {
        for bad in [
            &["--dt", "1e308"][..],
            &["--dt", "NaN"],
            &["--dt", "inf"],
            &["--dt", "-1"],
            &["--dt", "0"],
            &["--max-fps", "1e-300"],
            &["--max-fps", "NaN"],
            &["--max-fps", "-5"],
            &["--max-fps", "1e9"],
            &["verify", "--tolerance", "NaN"],
            &["verify", "--tolerance", "inf"],
            &["verify", "--tolerance", "-1e-5"],
            &["verify", "--dt", "1e308"],
            &["cycles", "--count", "0"],
            &["cycles", "--count", "1"],
            &["bench-kernel", "--iterations", "0"],
            &["bench", "--reps", "0"],
            &["bench", "--frames", "0"],
            &["bench", "--grids", "64x64"],
            &["bench", "--grids", "64x64@1x5"],
            &["bench", "--grids", "64x64@160x90,64x64@160x90"],
        ] {
            let e = parse(bad).err().unwrap_or_else(|| panic!("{bad:?} was accepted"));
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}: {e}");
        }
        for good in [
            &["--dt", "0.5"][..],
            &["--max-fps", "0"],
            &["--max-fps", "0.1"],
            &["verify", "--tolerance", "0"],
            &["cycles", "--count", "2"],
            &["bench", "--preset", "quick", "--reps", "1", "--grids", "64x64@160x90,96x80@320x180"],
        ] {
            assert!(parse(good).is_ok(), "{good:?} was refused");
        }
    }

    #[test]
    fn numbers_in_errors_read_back_in_their_shortest_form() {
        assert_eq!(num(1e-300), "1e-300");
        assert_eq!(num(1e308), "1e308");
        assert_eq!(num(0.5), "0.5");
        assert_eq!(num(3600.0), "3600");
        assert_eq!(num(1e-6), "1e-6");
        assert_eq!(num(f64::NAN), "NaN");
        assert_eq!(num(f64::INFINITY), "inf");
        assert_eq!(num(-1e-5_f32), "-1e-5");
        let e = check_max_fps(1e-300).unwrap_err().0;
        assert_eq!(e, "--max-fps 1e-300 must be 0 (no cap) or a number of frames per second in 0.01..=10000");
    }
}
