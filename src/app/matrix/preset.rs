//! The benchmark matrix's data: configurations, the presets, and the cells they expand to.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::preset::{preset, NATIVE, REFERENCE};
//! use vkhip::cli::BenchPreset;
//!
//! // The quick preset (CI, lavapipe): three rows at one small size, no CUDA.
//! let quick = preset(BenchPreset::Quick);
//! let labels: Vec<&str> = quick.rows.iter().map(|c| c.label).collect();
//! assert_eq!(labels, [NATIVE, "cpu bridged", "cpu bridged K=4 R=2 B=2"]);
//! let shaped = &quick.rows[2];
//! assert_eq!((shaped.slots, shaped.run_ahead, shaped.batch), (Some(4), Some(2), Some(2)));
//! assert_eq!(quick.sizes[0].to_string(), "64x64@160x90");
//! assert_eq!((quick.frames, quick.warmup, quick.reps), (60, 10, 2));
//!
//! // The GPU preset starts with its two baselines; every label is distinct.
//! let gpu = preset(BenchPreset::Gpu);
//! assert_eq!((gpu.rows[0].label, gpu.rows[1].label), (NATIVE, REFERENCE));
//! let mut seen = std::collections::HashSet::new();
//! assert!(gpu.rows.iter().all(|c| seen.insert(c.label)));
//!
//! // The post preset (issue 24, item 5): native without post for reference, then `--post
//! // outline` on vulkan (the Vulkan-shader baseline), cuda-in-vulkan and cuda, each again with
//! // GPU timing on for its latency.
//! let post = preset(BenchPreset::Post);
//! let labels: Vec<&str> = post.rows.iter().map(|c| c.label).collect();
//! assert_eq!(labels[..4], [NATIVE, vkhip::app::matrix::preset::POST_NATIVE, "cuda-in-vulkan post", "cuda post (default sync)"]);
//! assert_eq!(post.sizes.iter().map(|s| s.to_string()).collect::<Vec<_>>(), ["256x256@320x180", "1024x1024@1280x720"]);
//! ```

use crate::cli::{BenchPreset, CellSize, MatrixArgs, UsageError};
use crate::sim::Grid;

/// One configuration: the flags a child run gets. `None` leaves a flag out, so the run resolves
/// the default itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub label: &'static str,
    pub backend: &'static str,
    pub sync: Option<&'static str>,
    pub slots: Option<u32>,
    pub run_ahead: Option<u32>,
    pub batch: Option<u32>,
    pub memory: Option<&'static str>,
    /// `--compute-wait` (None: the default).
    pub compute_wait: Option<&'static str>,
    /// The [`LIMIT`] row: run with `--gpu-timing on` whatever the matrix's `--gpu-timing`, and
    /// read for its report's `GPU limit` (draw + kernel), not its frame time.
    pub limit: bool,
    /// `--post` (None: left out, no post stage).
    pub post: Option<&'static str>,
    /// Run with `--gpu-timing on` whatever the matrix's `--gpu-timing` (the post preset's latency
    /// rows: the draw end → copy end latency needs GPU timestamps).
    pub timed: bool,
    /// `--post-batch` (None: the default, K for cuda/hip with `--post`).
    pub post_batch: Option<u32>,
    /// `--views` (None: left out, one view). The row's frame time is N views' (the report's
    /// `views` line gives views/s).
    pub views: Option<u32>,
}

/// The configuration the other rows are compared with first.
pub const NATIVE: &str = "vulkan (native)";
/// The row every grid gets first: the GPU's own work per frame (draw + kernel p50s from GPU
/// timestamps) in a run of the native configuration with `--gpu-timing on`, interleaved with the
/// others. Every configuration is shown against it as well as against [`NATIVE`].
pub const LIMIT: &str = "GPU limit";

/// The [`LIMIT`] row's configuration: [`NATIVE`]'s, timed on the GPU.
pub const LIMIT_ROW: Config = Config { label: LIMIT, limit: true, ..GPU_ROWS[0] };

/// The second baseline: CUDA with one slot and a binary semaphore pair.
pub const REFERENCE: &str = "reference: binary K=1";

/// The post preset's baseline: the post stage as a Vulkan compute shader (`--backend vulkan
/// --post outline`); every post row is shown against it (issue 24's targets).
pub const POST_NATIVE: &str = "vulkan post";
/// The same with `--gpu-timing on`: the baseline of the rows timed on the GPU.
pub const POST_NATIVE_TIMED: &str = "vulkan post, timed";

/// The baseline `c` is compared with in the post columns: [`POST_NATIVE`], or
/// [`POST_NATIVE_TIMED`] for a row run with GPU timing on (the same profiling cost on both sides).
pub fn post_baseline(c: &Config) -> &'static str {
    if c.timed {
        POST_NATIVE_TIMED
    } else {
        POST_NATIVE
    }
}

const fn row(
    label: &'static str,
    backend: &'static str,
    sync: Option<&'static str>,
    k: Option<u32>,
    r: Option<u32>,
    b: Option<u32>,
    memory: Option<&'static str>,
) -> Config {
    Config {
        label,
        backend,
        sync,
        slots: k,
        run_ahead: r,
        batch: b,
        memory,
        compute_wait: None,
        limit: false,
        post: None,
        timed: false,
        post_batch: None,
        views: None,
    }
}

/// `c` with `--views n`.
const fn viewed(c: Config, n: u32, label: &'static str) -> Config {
    Config { label, views: Some(n), ..c }
}

/// `c` with `--post outline`.
const fn outlined(c: Config, label: &'static str) -> Config {
    Config { label, post: Some("outline"), ..c }
}

/// `c` with `--gpu-timing on` (for the latency).
const fn timed(c: Config, label: &'static str) -> Config {
    Config { label, timed: true, ..c }
}

/// `c` with `--compute-wait gpu`: the compute side always waits on the GPU.
const fn gpu_waits(c: Config, label: &'static str) -> Config {
    Config { label, compute_wait: Some("gpu"), ..c }
}

const N: Option<u32> = None;
const fn s(v: u32) -> Option<u32> {
    Some(v)
}

#[rustfmt::skip]
const GPU_ROWS: &[Config] = &[
    //   label                      backend   --sync              K     R     B     --memory
    row(NATIVE,                     "vulkan", Some("external"),  N,    N,    N,    None),
    row(REFERENCE,                  "cuda",   Some("binary"),    s(1), N,    N,    None),
    row("simpleVulkan as shipped",  "cuda",   Some("host-wait"), s(1), N,    N,    None),
    row("blocking",                 "cuda",   Some("blocking"),  s(1), N,    N,    None),
    row("bridged K=3",              "cuda",   Some("bridged"),   s(3), N,    N,    None),
    row("external K=3",             "cuda",   Some("external"),  s(3), s(0), s(1), None),
    row("external K=8 R=7",         "cuda",   Some("external"),  s(8), s(7), s(1), None),
    row("external K=4 B=2 R=2",     "cuda",   Some("external"),  s(4), s(2), s(2), None),
    row("external K=8 B=4 R=4",     "cuda",   Some("external"),  s(8), s(4), s(4), None),
    row("external K=8 B=8 R=0",     "cuda",   Some("external"),  s(8), s(0), s(8), None),
    row("external K=8 B=4 R=3",     "cuda",   Some("external"),  s(8), s(3), s(4), None),
    row("default",                  "cuda",   None,              N,    N,    N,    None),
    gpu_waits(row("",               "cuda",   None,              N,    N,    N,    None), "default, GPU waits"),
    row("staged copy",              "cuda",   Some("bridged"),   s(3), N,    N,    Some("staged")),
    row("cuda-in-vulkan K=1",       "cuda-in-vulkan", Some("external"), s(1), s(0), s(1), None),
    row("cuda-in-vulkan K=3",       "cuda-in-vulkan", Some("external"), s(3), s(0), s(1), None),
];

#[rustfmt::skip]
const QUICK_ROWS: &[Config] = &[
    row(NATIVE,                     "vulkan", Some("external"),  N,    N,    N,    None),
    row("cpu bridged",              "cpu",    Some("bridged"),   N,    N,    N,    None),
    row("cpu bridged K=4 R=2 B=2",  "cpu",    Some("bridged"),   s(4), s(2), s(2), None),
];

const fn size(gw: u32, gh: u32, iw: u32, ih: u32) -> CellSize {
    CellSize { grid: Grid { width: gw, height: gh }, size: Grid { width: iw, height: ih } }
}

const GPU_SIZES: &[CellSize] = &[
    size(256, 256, 320, 180),
    size(1024, 1024, 1280, 720),
    size(2048, 2048, 1280, 720),
    size(4096, 4096, 1280, 720),
];

const QUICK_SIZES: &[CellSize] = &[size(64, 64, 160, 90)];

const VULKAN_POST: Config = outlined(row("", "vulkan", None, N, N, N, None), POST_NATIVE);
const NVX_POST: Config = outlined(row("", "cuda-in-vulkan", None, N, N, N, None), "cuda-in-vulkan post");
const CUDA_POST: Config = outlined(row("", "cuda", None, N, N, N, None), "cuda post (default sync)");
/// One CUDA visit per frame (`--post-batch 1`): what each post hand-off costs.
const CUDA_POST_P1: Config = Config { post_batch: Some(1), ..outlined(CUDA_POST, "cuda post, post batch 1") };
/// Twice the default batch (P = K = 8): latency against switches.
const CUDA_POST_P8: Config = Config { post_batch: Some(8), ..outlined(CUDA_POST, "cuda post, post batch 8") };

/// The post preset: each backend's default sync with `--post outline`, first untimed (frame
/// time), then with GPU timing on (latency); then cuda with `--post-batch 1` (one CUDA visit per
/// frame) and 8 (P = K, twice the default K/2), each untimed and timed; vulkan without post for
/// reference.
const POST_ROWS: &[Config] = &[
    GPU_ROWS[0],
    VULKAN_POST,
    NVX_POST,
    CUDA_POST,
    timed(VULKAN_POST, POST_NATIVE_TIMED),
    timed(NVX_POST, "cuda-in-vulkan post, timed"),
    timed(CUDA_POST, "cuda post (default sync), timed"),
    CUDA_POST_P1,
    timed(CUDA_POST_P1, "cuda post, post batch 1, timed"),
    CUDA_POST_P8,
    timed(CUDA_POST_P8, "cuda post, post batch 8, timed"),
];

const POST_SIZES: &[CellSize] = &[size(256, 256, 320, 180), size(1024, 1024, 1280, 720)];

const VK_VIEWS: Config = row("", "vulkan", Some("external"), N, N, N, None);
const CUDA_VIEWS: Config = row("", "cuda", None, N, N, N, None);

/// The views preset (issue 43): N cameras a frame at N = 1, 4, 16, 64, 256, 1024, on the native
/// Vulkan path and on CUDA's default sync (two hand-offs a frame whatever N); the table's frame
/// time is N views', each row's report has views/s (the GPU limit row is one view's).
#[rustfmt::skip]
const VIEWS_ROWS: &[Config] = &[
    GPU_ROWS[0],
    viewed(VK_VIEWS, 4, "vulkan N=4"),
    viewed(VK_VIEWS, 16, "vulkan N=16"),
    viewed(VK_VIEWS, 64, "vulkan N=64"),
    viewed(VK_VIEWS, 256, "vulkan N=256"),
    viewed(VK_VIEWS, 1024, "vulkan N=1024"),
    viewed(CUDA_VIEWS, 1, "cuda N=1"),
    viewed(CUDA_VIEWS, 4, "cuda N=4"),
    viewed(CUDA_VIEWS, 16, "cuda N=16"),
    viewed(CUDA_VIEWS, 64, "cuda N=64"),
    viewed(CUDA_VIEWS, 256, "cuda N=256"),
    viewed(CUDA_VIEWS, 1024, "cuda N=1024"),
];

const VIEWS_SIZES: &[CellSize] =
    &[size(32, 32, 128, 128), size(64, 64, 64, 64), size(64, 64, 128, 128), size(64, 64, 256, 256)];

#[rustfmt::skip]
const QUICK_VIEWS_ROWS: &[Config] = &[
    viewed(VK_VIEWS, 1, "vulkan N=1"),
    viewed(VK_VIEWS, 4, "vulkan N=4"),
    viewed(row("", "cpu", Some("bridged"), N, N, N, None), 4, "cpu bridged N=4"),
];

/// A preset: rows, sizes, and how long each run is.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub rows: &'static [Config],
    pub sizes: &'static [CellSize],
    pub frames: u64,
    pub warmup: u64,
    pub reps: u32,
}

pub fn preset(p: BenchPreset) -> Preset {
    match p {
        BenchPreset::Gpu => Preset { rows: GPU_ROWS, sizes: GPU_SIZES, frames: 1000, warmup: 100, reps: 3 },
        BenchPreset::Quick => {
            Preset { rows: QUICK_ROWS, sizes: QUICK_SIZES, frames: 60, warmup: 10, reps: 2 }
        }
        BenchPreset::Post => {
            Preset { rows: POST_ROWS, sizes: POST_SIZES, frames: 1000, warmup: 100, reps: 3 }
        }
        BenchPreset::Views => {
            Preset { rows: VIEWS_ROWS, sizes: VIEWS_SIZES, frames: 300, warmup: 50, reps: 3 }
        }
        BenchPreset::QuickViews => {
            Preset { rows: QUICK_VIEWS_ROWS, sizes: QUICK_SIZES, frames: 30, warmup: 5, reps: 2 }
        }
    }
}

/// One cell of the matrix: a configuration at one grid and image size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cell {
    pub config: Config,
    pub at: CellSize,
}

/// What `vkhip bench` will run, after the command line's overrides.
#[derive(Clone, Debug)]
pub struct Plan {
    pub cells: Vec<Cell>,
    pub sizes: Vec<CellSize>,
    pub frames: u64,
    pub warmup: u64,
    pub reps: u32,
    pub device: Option<usize>,
    /// `--gpu-timing` of every child run.
    pub gpu_timing: crate::cli::OnOff,
}

impl Plan {
    /// The preset with `args`' overrides; an `--only` that keeps nothing is a usage error.
    pub fn new(args: &MatrixArgs) -> Result<Plan, UsageError> {
        let p = preset(args.preset);
        let rows: Vec<Config> = p
            .rows
            .iter()
            .filter(|c| args.only.is_empty() || args.only.iter().any(|o| c.label.contains(o.as_str())))
            .copied()
            .collect();
        if rows.is_empty() {
            let labels: Vec<&str> = p.rows.iter().map(|c| c.label).collect();
            return Err(UsageError(format!(
                "--only {} matches no configuration of this preset (labels: {})",
                args.only.join(", --only "),
                labels.join("; ")
            )));
        }
        let sizes = args.grids.as_ref().map_or_else(|| p.sizes.to_vec(), |g| g.0.clone());
        // Each grid starts with its GPU limit.
        let cells = sizes
            .iter()
            .flat_map(|&at| {
                std::iter::once(LIMIT_ROW).chain(rows.iter().copied()).map(move |config| Cell { config, at })
            })
            .collect();
        Ok(Plan {
            cells,
            sizes,
            frames: args.frames.unwrap_or(p.frames),
            warmup: args.warmup.unwrap_or(p.warmup),
            reps: args.reps.unwrap_or(p.reps),
            device: args.device,
            gpu_timing: args.gpu_timing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::Parser;

    /// Every preset row is a valid `vkhip` command line (the child would parse it).
    #[test]
    fn every_row_parses_as_a_run() {
        use clap::CommandFactory as _;
        // `--post` comes with the post stage's frame loop (branch post-frame); until that is
        // merged, the post rows are parsed without it.
        let knows_post = Cli::command().get_arguments().any(|a| a.get_long() == Some("post"));
        for p in [
            BenchPreset::Gpu,
            BenchPreset::Quick,
            BenchPreset::Post,
            BenchPreset::Views,
            BenchPreset::QuickViews,
        ] {
            let pr = preset(p);
            for c in pr.rows {
                for at in pr.sizes {
                    let mut args = crate::app::matrix::run::child_args(
                        &Cell { config: *c, at: *at },
                        10,
                        5,
                        None,
                        crate::cli::OnOff::Off,
                    );
                    if let Some(i) = args.iter().position(|a| a == "--post") {
                        assert_eq!(args[i + 1], "outline", "{}", c.label);
                        if !knows_post {
                            args.drain(i..i + 2);
                        }
                    }
                    let cli = Cli::try_parse_from(std::iter::once("vkhip".to_string()).chain(args.clone()))
                        .unwrap_or_else(|e| panic!("{}: {args:?}: {e}", c.label));
                    assert!(cli.command.is_none());
                    assert_eq!(cli.run.common.grid, at.grid);
                    assert_eq!(cli.run.size, at.size);
                    assert_eq!(cli.run.common.views, c.views.unwrap_or(1), "{}", c.label);
                }
            }
            let labels: Vec<_> = pr.rows.iter().map(|c| c.label).collect();
            let mut unique = labels.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), labels.len(), "duplicate labels in {p:?}");
        }
    }

    #[test]
    fn post_preset_rows_are_post_outline_but_native_and_timed_rows_pair_up() {
        let p = preset(BenchPreset::Post);
        assert_eq!((p.frames, p.warmup, p.reps), (1000, 100, 3));
        assert_eq!(p.rows[0], GPU_ROWS[0], "native without post, as in the gpu preset");
        let post: Vec<&Config> = p.rows.iter().filter(|c| c.post.is_some()).collect();
        assert_eq!(post.len(), 10);
        // Every untimed post row has a timed twin: same flags, GPU timing on.
        for c in post.iter().filter(|c| !c.timed) {
            let twin = post
                .iter()
                .find(|t| t.timed && t.backend == c.backend && t.post_batch == c.post_batch)
                .unwrap();
            assert_eq!(Config { label: c.label, timed: false, ..**twin }, **c);
            assert_eq!((post_baseline(c), post_baseline(twin)), (POST_NATIVE, POST_NATIVE_TIMED));
        }
        let backends: Vec<&str> = post.iter().filter(|c| !c.timed).map(|c| c.backend).collect();
        assert_eq!(backends, ["vulkan", "cuda-in-vulkan", "cuda", "cuda", "cuda"]);
        let batches: Vec<_> = post.iter().filter(|c| c.backend == "cuda").map(|c| c.post_batch).collect();
        assert_eq!(batches, [None, None, Some(1), Some(1), Some(8), Some(8)]);
        assert!(post.iter().all(|c| c.sync.is_none() && c.slots.is_none()), "default sync");
    }

    #[test]
    fn gpu_preset_has_both_baselines_and_sixteen_rows() {
        let p = preset(BenchPreset::Gpu);
        assert_eq!(p.rows.len(), 16);
        assert_eq!(p.rows[0].label, NATIVE);
        assert!(p.rows.iter().any(|c| c.label == REFERENCE));
        let default = p.rows.iter().find(|c| c.label == "default").unwrap();
        assert_eq!((default.sync, default.slots, default.memory), (None, None, None));
        assert_eq!((p.frames, p.warmup, p.reps, p.sizes.len()), (1000, 100, 3, 4));
    }

    fn args(extra: &[&str]) -> MatrixArgs {
        let cli = Cli::try_parse_from(["vkhip", "bench"].iter().chain(extra)).unwrap();
        match cli.command {
            Some(crate::cli::Command::Bench(a)) => a,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn overrides_and_filters() {
        let plan = Plan::new(&args(&["--only", "external K=8", "--only", "native", "--reps", "5"])).unwrap();
        let labels: Vec<_> =
            plan.cells.iter().filter(|c| c.at == GPU_SIZES[0]).map(|c| c.config.label).collect();
        assert_eq!(
            labels,
            [
                LIMIT,
                NATIVE,
                "external K=8 R=7",
                "external K=8 B=4 R=4",
                "external K=8 B=8 R=0",
                "external K=8 B=4 R=3"
            ]
        );
        assert_eq!(plan.cells.len(), 6 * GPU_SIZES.len());
        assert!(plan.cells[0].config.limit && !plan.cells[1].config.limit);
        assert_eq!(Config { label: NATIVE, limit: false, ..plan.cells[0].config }, plan.cells[1].config);
        assert_eq!((plan.reps, plan.frames, plan.warmup), (5, 1000, 100));
        let plan =
            Plan::new(&args(&["--preset", "quick", "--grids", "32x32@64x64", "--frames", "7"])).unwrap();
        assert_eq!(plan.sizes, [size(32, 32, 64, 64)]);
        assert_eq!((plan.cells.len(), plan.frames, plan.warmup, plan.reps), (4, 7, 10, 2));
        let e = Plan::new(&args(&["--only", "banana"])).unwrap_err();
        assert!(e.0.contains("--only banana matches no configuration"), "{e}");
    }
}
