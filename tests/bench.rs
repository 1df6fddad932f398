//! `vkhip bench` on lavapipe: the quick preset runs every cell and the GPU limit, writes a CSV with
//! a row per repetition, markdown tables with ratio columns, and a chart whose bars have their
//! family's colour and the measured lengths; failed and unsupported cells are recorded and the
//! matrix carries on; `--replot` draws a CSV's chart again.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::Path;
use vkhip::app::matrix::layout::PANELS_TOP;
use vkhip::app::matrix::panel::Family;
use vkhip::app::matrix::plot::BACKGROUND;

struct Png {
    width: usize,
    height: usize,
    /// RGB8.
    rgb: Vec<u8>,
}

impl Png {
    fn read(path: &Path) -> Png {
        let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut dec = png::Decoder::new(std::io::BufReader::new(file));
        dec.set_transformations(png::Transformations::EXPAND);
        let mut reader = dec.read_info().expect("a PNG header");
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).expect("PNG data");
        let channels = info.color_type.samples();
        assert!(channels >= 3, "{:?} is not a colour image", info.color_type);
        buf.truncate(info.buffer_size());
        let rgb = buf.chunks_exact(channels).flat_map(|p| [p[0], p[1], p[2]]).collect();
        Png { width: info.width as usize, height: info.height as usize, rgb }
    }

    fn px(&self, x: usize, y: usize) -> (u8, u8, u8) {
        let i = (y * self.width + x) * 3;
        (self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
    }

    /// Rows (y) that contain at least one pixel of exactly `c`.
    fn rows_with(&self, c: (u8, u8, u8)) -> Vec<usize> {
        (0..self.height).filter(|&y| (0..self.width).any(|x| self.px(x, y) == c)).collect()
    }

    fn count(&self, c: (u8, u8, u8)) -> usize {
        self.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) == c).count()
    }

    /// The bars of colour `c`, top to bottom (under the legend's swatches): each band of rows
    /// holding it, measured on its
    /// first row (above the spread line drawn through the middle) from the first to the last
    /// pixel of `c`.
    fn bar_widths(&self, c: (u8, u8, u8)) -> Vec<usize> {
        let rows: Vec<usize> = self.rows_with(c).into_iter().filter(|y| *y as i32 >= PANELS_TOP).collect();
        let firsts =
            rows.iter().enumerate().filter(|(i, y)| *i == 0 || rows[i - 1] + 1 != **y).map(|(_, y)| *y);
        firsts
            .map(|y| {
                let xs: Vec<usize> = (0..self.width).filter(|&x| self.px(x, y) == c).collect();
                xs.last().unwrap() - xs[0] + 1
            })
            .collect()
    }
}

fn read_csv(path: &Path) -> Vec<HashMap<String, String>> {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.expect("a CSV record");
            headers.iter().zip(rec.iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect()
        })
        .collect()
}

fn num(row: &HashMap<String, String>, col: &str) -> f64 {
    row[col].parse().unwrap_or_else(|_| panic!("{col} = '{}' is not a number in {row:?}", row[col]))
}

const QUICK_LABELS: [&str; 4] = ["GPU limit", "vulkan (native)", "cpu bridged", "cpu bridged K=4 R=2 B=2"];

#[test]
fn quick_preset_writes_csv_markdown_and_chart() {
    let dir = temp_dir("bench-quick");
    let out = dir.join("results");
    let t = std::time::Instant::now();
    let o = run(vkhip().args(["bench", "--preset", "quick", "--out"]).arg(&out));
    assert_ok(&o, "vkhip bench --preset quick");
    assert!(t.elapsed().as_secs() < 60, "the quick preset took {:?}", t.elapsed());
    let text = stdout(&o);

    // CSV: the GPU limit and 3 configurations × 1 grid × 2 repetitions, every run ok with real
    // numbers.
    let rows = read_csv(&out.join("bench.csv"));
    assert_eq!(rows.len(), 8, "{rows:#?}");
    let mut means: HashMap<&str, Vec<f64>> = HashMap::new();
    for row in &rows {
        assert_eq!(row["status"], "ok", "{row:?}");
        assert_eq!(row["reason"], "");
        assert_eq!(
            (row["grid"].as_str(), row["size"].as_str(), row["frames"].as_str()),
            ("64x64", "160x90", "60")
        );
        let (mean, p50, p99, fps) =
            (num(row, "mean_ms"), num(row, "p50_ms"), num(row, "p99_ms"), num(row, "fps"));
        assert!(mean > 0.0 && p50 > 0.0 && p99 >= p50 && fps > 0.0, "{row:?}");
        assert!(
            (fps - 1e3 / mean).abs() / fps < 0.01,
            "fps {fps} does not match the mean {mean} ms: {row:?}"
        );
        assert!(num(row, "render_cpu_p50_us") > 0.0 && num(row, "render_cpu_mean_us") > 0.0, "{row:?}");
        let label = QUICK_LABELS.iter().find(|l| **l == row["label"]).unwrap_or_else(|| panic!("{row:?}"));
        // The resolved line is the child's own `sync` line: the mode it ran, the slots it used.
        let sync = &row["sync_requested"];
        assert!(row["resolved"].starts_with(&format!("{sync}, ")), "{row:?}");
        if row["slots"] == "4" {
            assert!(row["resolved"].contains("4 slot(s)"), "{row:?}");
        }
        means.entry(label).or_default().push(mean);
    }
    for l in QUICK_LABELS {
        let reps: Vec<&str> = rows.iter().filter(|r| r["label"] == l).map(|r| r["rep"].as_str()).collect();
        assert_eq!(reps, ["1", "2"], "{l}");
    }
    let backends: Vec<&str> = rows.iter().map(|r| r["backend"].as_str()).collect();
    assert_eq!(backends.iter().filter(|b| **b == "vulkan").count(), 4);
    // The GPU limit: its runs had GPU timing on (the others off); every row is set against the
    // median of its GPU busy time per frame (every GPU scope of the frame: draw and kernel here).
    let median = |v: &[f64]| (v[0] + v[1]) / 2.0;
    let sums: Vec<f64> = rows
        .iter()
        .filter(|r| r["label"] == "GPU limit")
        .map(|r| {
            let busy = num(r, "gpu_busy_p50_ms");
            assert!(busy + 0.002 >= num(r, "gpu_draw_p50_ms").max(num(r, "gpu_kernel_p50_ms")), "{r:?}");
            busy
        })
        .collect();
    assert!(sums.len() == 2 && sums.iter().all(|s| *s > 0.0), "{rows:#?}");
    let limit = median(&sums);
    for row in &rows {
        assert!((num(row, "limit_ms") - limit).abs() < 1e-4, "{row:?}");
        assert!((num(row, "ratio_to_limit") - num(row, "mean_ms") / limit).abs() < 1e-3, "{row:?}");
        if row["label"] != "GPU limit" {
            assert_eq!(
                (row["gpu_draw_p50_ms"].as_str(), row["gpu_kernel_p50_ms"].as_str()),
                ("", ""),
                "{row:?}"
            );
        }
    }
    assert_eq!(backends.iter().filter(|b| **b == "cpu").count(), 4);

    // Markdown: one table for the one grid, with both ratio columns; printed to stdout as well.
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert_eq!(md.matches("### grid ").count(), 1, "{md}");
    assert!(md.contains("### grid 64x64 @ image 160x90"), "{md}");
    assert!(md.contains("| vs vulkan (native) | vs GPU limit | vs reference: binary K=1 |"), "{md}");
    assert!(md.contains("- device: llvmpipe"), "{md}");
    assert!(md.contains("- date: ") && md.contains(" UTC"), "{md}");
    let native = median(&means["vulkan (native)"]);
    means.insert("GPU limit", sums.clone());
    for l in QUICK_LABELS {
        let line =
            md.lines().find(|x| x.starts_with(&format!("| {l} |"))).unwrap_or_else(|| panic!("{l}: {md}"));
        // The limit row shows the limit.
        let m = median(&means[l]);
        // Median of two reps (as printed with 3 decimals), its ratio to native, the missing reference.
        let cols: Vec<&str> = line.split(" | ").collect();
        let shown: f64 = cols[2].parse().unwrap_or_else(|_| panic!("{line}"));
        assert!((shown - m).abs() < 0.0011, "{l}: shows {shown}, the CSV's median is {m}: {line}");
        assert_eq!(cols[4], format!("{:.2}×", m / native), "{line}");
        assert_eq!(cols[5], format!("{:.2}×", m / limit), "{line}");
        assert_eq!(cols[6], "n/a", "{line}");
        assert!(line.ends_with("| ok |"), "{line}");
    }
    assert!(text.contains("### grid 64x64 @ image 160x90"), "stdout:\n{text}");
    for f in ["bench.csv", "bench.md", "bench.png"] {
        assert!(text.contains(&format!("wrote {}", out.join(f).display())), "stdout:\n{text}");
    }

    // The chart: not blank; one horizontal bar per row in its family's colour (the limit grey,
    // native blue, the cpu rows both in the interop colour), each as long as its value.
    let png = Png::read(&out.join("bench.png"));
    assert!(png.width >= 800 && png.height >= 150, "{}x{}", png.width, png.height);
    let non_bg = png.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) != BACKGROUND).count();
    assert!(non_bg * 20 > png.width * png.height, "only {non_bg} pixels differ from the background");
    let widths = |f: Family| png.bar_widths(f.colour());
    let (lim, nat, interop) = (widths(Family::Limit), widths(Family::Native), widths(Family::Interop));
    assert_eq!((lim.len(), nat.len(), interop.len()), (1, 1, 2), "bars by family");
    for (w, l) in [(lim[0], "GPU limit"), (interop[0], QUICK_LABELS[2]), (interop[1], QUICK_LABELS[3])] {
        let (got, want) = (w as f64 / nat[0] as f64, median(&means[l]) / native);
        assert!((got - want).abs() < 0.03 * want.max(1.0), "{l}: bar length ratio {got:.3}, data {want:.3}");
    }
    for f in [Family::Reference, Family::InQueue] {
        assert_eq!(png.count(f.colour()), 0, "{f:?} is not in the quick matrix");
    }
}

/// Two grids give two tables and two panels; `--only` keeps one configuration.
#[test]
fn grids_and_only_shape_the_matrix() {
    let out = temp_dir("bench-grids");
    let o = run(vkhip()
        .args([
            "bench", "--preset", "quick", "--only", "native", "--reps", "1", "--frames", "5", "--warmup", "1",
        ])
        .args(["--grids", "32x32@64x64,48x40@96x54", "--out"])
        .arg(&out));
    assert_ok(&o, "bench with two grids");
    let rows = read_csv(&out.join("bench.csv"));
    let cells: Vec<(String, String, String)> =
        rows.iter().map(|r| (r["label"].clone(), r["grid"].clone(), r["status"].clone())).collect();
    let cell = |l: &str, g: &str| (l.to_string(), g.to_string(), "ok".to_string());
    assert_eq!(
        cells,
        [
            cell("GPU limit", "32x32"),
            cell("vulkan (native)", "32x32"),
            cell("GPU limit", "48x40"),
            cell("vulkan (native)", "48x40")
        ]
    );
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert_eq!(md.matches("### grid ").count(), 2, "{md}");
    assert!(md.contains("### grid 48x40 @ image 96x54"), "{md}");
    let png = Png::read(&out.join("bench.png"));
    // Two panels: the bar colour appears in two separate vertical bands.
    let rows: Vec<usize> =
        png.rows_with(Family::Native.colour()).into_iter().filter(|y| *y as i32 >= PANELS_TOP).collect();
    let bands = 1 + rows.windows(2).filter(|w| w[1] > w[0] + 1).count();
    assert_eq!(bands, 2, "bar rows {rows:?}");
}

/// A cell whose child fails (exit 1) is recorded as failed, the other cells still run, and the
/// matrix exits 1; an unavailable backend (exit 2) is "unsupported" and not a failure.
#[test]
fn failed_and_unsupported_cells_are_recorded() {
    let out = temp_dir("bench-failed");
    // The injected fault breaks only the Vulkan backend's kernel compilation.
    let o = run(vkhip()
        .env("VKHIP_FAULT", "kernel-compile")
        .args(["bench", "--preset", "quick", "--reps", "1", "--frames", "5", "--warmup", "1", "--out"])
        .arg(&out));
    assert_eq!(o.status.code(), Some(1), "stdout:\n{}\nstderr:\n{}", stdout(&o), stderr(&o));
    let rows = read_csv(&out.join("bench.csv"));
    assert_eq!(rows.len(), 4);
    for row in &rows {
        if row["backend"] == "vulkan" {
            assert_eq!(row["status"], "failed", "{row:?}");
            assert!(row["reason"].contains("VK_ERROR_INVALID_SHADER_NV"), "{row:?}");
            assert_eq!(row["mean_ms"], "");
        } else {
            assert_eq!(row["status"], "ok", "{row:?}");
            assert!(num(row, "mean_ms") > 0.0);
        }
    }
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    let line = md.lines().find(|l| l.starts_with("| cpu bridged |")).unwrap();
    assert!(line.contains("| n/a | n/a | n/a |"), "no baseline ran, so no ratio: {line}");

    // The gpu preset's CUDA rows on a machine without CUDA: unsupported, exit 0.
    let out = temp_dir("bench-unsupported");
    let o = run(vkhip()
        .args([
            "bench",
            "--only",
            "native",
            "--only",
            "reference",
            "--reps",
            "1",
            "--frames",
            "3",
            "--warmup",
            "0",
        ])
        .args(["--grids", "16x16@32x32", "--out"])
        .arg(&out));
    assert_ok(&o, "bench with an unavailable backend");
    let rows = read_csv(&out.join("bench.csv"));
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[0]["status"].as_str(), rows[1]["status"].as_str()), ("ok", "ok"));
    assert_eq!(rows[2]["label"], "reference: binary K=1");
    assert_eq!(rows[2]["status"], "unsupported", "{:?}", rows[2]);
    assert!(rows[2]["reason"].contains("backend cuda is not available"), "{:?}", rows[2]);
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let out = temp_dir("bench-usage");
    let file = out.join("a-file");
    std::fs::write(&file, "x").unwrap();
    let cases: &[(&[&str], &str)] = &[
        (&["bench", "--reps", "0"], "invalid value '0' for '--reps <N>'"),
        (&["bench", "--frames", "0"], "invalid value '0' for '--frames <N>'"),
        (&["bench", "--grids", "64x64"], "'64x64' is not of the form GRID@SIZE"),
        (&["bench", "--grids", "64x64@1x1"], "image size '1x1': each side must be at least 2"),
        (&["bench", "--preset", "fast"], "invalid value 'fast' for '--preset"),
        (&["bench", "--only", "banana", "--out", "/nonexistent/x"], "--only banana matches no configuration"),
    ];
    for (args, expect) in cases {
        let o = run(vkhip().args(*args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: {err}");
    }
    let o = run(vkhip().args(["bench", "--preset", "quick", "--out"]).arg(&file));
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot create the directory"), "{}", stderr(&o));
    // Nothing ran, nothing was written.
    assert!(!out.join("bench.csv").exists());
}

/// An interrupt stops the matrix after the run in progress: the outputs cover what finished,
/// the header says so, and the exit code is 130.
#[test]
fn an_interrupt_writes_what_finished() {
    let out = temp_dir("bench-interrupt");
    let child = vkhip()
        .args(["bench", "--preset", "quick", "--reps", "200", "--out"])
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start vkhip bench");
    std::thread::sleep(std::time::Duration::from_secs(4));
    let kill = run(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]));
    assert_ok(&kill, "kill -INT");
    let t = std::time::Instant::now();
    let o = child.wait_with_output().expect("wait for vkhip bench");
    assert!(t.elapsed().as_secs() < 30, "took {:?} to stop", t.elapsed());
    assert_eq!(o.status.code(), Some(130), "stderr:\n{}", stderr(&o));
    assert!(stderr(&o).contains("interrupted after "), "{}", stderr(&o));
    let rows = read_csv(&out.join("bench.csv"));
    assert!(rows.len() < 800, "{} rows: the interrupt did not stop the matrix", rows.len());
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(md.contains(&format!("- **interrupted** after {} of 800 timed runs", rows.len())), "{md}");
    assert!(out.join("bench.png").exists());
}

/// `--replot` draws a bench.csv's chart again beside it, without running anything: every family
/// in the CSV shows in its colour, the device comes from the markdown beside it, and what cannot
/// be read is a usage error.
#[test]
fn replot_draws_a_csv_again_in_family_colours() {
    let dir = temp_dir("bench-replot");
    let csv = dir.join("old.csv");
    let row = |label: &str, backend: &str, sync: &str, rep: u32, mean: f64, limit: &str| {
        format!("{label},{backend},{sync},,,,,,256x256,320x180,{rep},1000,{mean},{mean},{mean},{},10,,,ok,,,,{limit}\n", 1e3 / mean)
    };
    let mut text = String::from("label,backend,sync_requested,slots,run_ahead,batch,memory,resolved,grid,size,rep,frames,mean_ms,p50_ms,p99_ms,fps,render_cpu_p50_us,render_cpu_mean_us,startup_s,status,reason,handoff_in_p50_us,handoff_out_p50_us,gpu_draw_p50_ms,gpu_kernel_p50_ms\n");
    for rep in 1..=2 {
        text += &row("GPU limit", "vulkan", "external", rep, 0.16, "0.126,0.005");
        text += &row("vulkan (native)", "vulkan", "external", rep, 0.147, ",");
        text += &row("reference: binary K=1", "cuda", "binary", rep, 0.434, ",");
        text += &row("cuda-in-vulkan K=1", "cuda-in-vulkan", "external", rep, 0.149, ",");
        text += &row("cuda-in-vulkan K=3", "cuda-in-vulkan", "external", rep, 0.150, ",");
    }
    std::fs::write(&csv, text).unwrap();
    std::fs::write(dir.join("old.md"), "- device: Test GPU [discrete]\n").unwrap();
    let o = run(vkhip().args(["bench", "--replot"]).arg(&csv));
    assert_ok(&o, "vkhip bench --replot");
    assert_eq!(stdout(&o).trim(), format!("wrote {}", dir.join("old.png").display()));
    let png = Png::read(&dir.join("old.png"));
    let widths = |f: Family| png.bar_widths(f.colour());
    assert_eq!(widths(Family::Limit).len(), 1);
    assert_eq!(widths(Family::Native).len(), 1);
    assert_eq!(widths(Family::Reference).len(), 1);
    assert_eq!(widths(Family::InQueue).len(), 2, "both cuda-in-vulkan rows, one colour");
    assert_eq!(png.count(Family::Interop.colour()), 0);
    // The limit bar is draw + kernel (0.131 ms), not its runs' frame time (0.16 ms).
    let ratio = widths(Family::Limit)[0] as f64 / widths(Family::Native)[0] as f64;
    assert!((ratio - 0.131 / 0.147).abs() < 0.02, "limit / native bar {ratio:.3}");
    assert!(!dir.join("bench.csv").exists() && !dir.join("vkhip-bench").exists(), "nothing ran");

    // Usage errors: a missing file, a CSV without the columns, --replot with run flags.
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--replot".into(), dir.join("none.csv").display().to_string()], "--replot"),
        (vec!["--replot".into(), dir.join("old.md").display().to_string()], "has no 'label' column"),
        (
            vec!["--replot".into(), csv.display().to_string(), "--reps".into(), "2".into()],
            "cannot be used with",
        ),
    ];
    for (args, want) in cases {
        let o = run(vkhip().arg("bench").args(&args));
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
    }
}

/// `vkhip bench --preset post` (issue 24, item 5): each grid (256²@320x180, 1024²@1280x720) gets
/// the GPU limit, vulkan without post, and `--post outline` on vulkan, cuda-in-vulkan and cuda
/// (their default sync), each again with GPU timing on for the latency, then cuda with
/// `--post-batch 1` and 4, untimed and timed.
#[test]
fn the_post_preset_has_its_cells() {
    use clap::Parser as _;
    use vkhip::app::matrix::preset::Plan;
    use vkhip::app::matrix::run::child_args;
    let cli = vkhip::cli::Cli::try_parse_from(["vkhip", "bench", "--preset", "post"]).unwrap();
    let Some(vkhip::cli::Command::Bench(args)) = cli.command else { panic!("not bench") };
    let plan = Plan::new(&args).unwrap();
    let cells: Vec<String> = plan
        .cells
        .iter()
        .map(|c| {
            let a = child_args(c, plan.frames, plan.warmup, None, plan.gpu_timing).join(" ");
            format!("{} @ {}: {}", c.config.label, c.at, a.split_once("--backend ").unwrap().1)
        })
        .collect();
    let want: Vec<String> = [("256x256", "320x180"), ("1024x1024", "1280x720")]
        .iter()
        .flat_map(|(g, s)| {
            let at = format!("--grid {g} --size {s}");
            [
                format!("GPU limit @ {g}@{s}: vulkan --sync external {at}"),
                format!("vulkan (native) @ {g}@{s}: vulkan --sync external --gpu-timing off {at}"),
                format!("vulkan post @ {g}@{s}: vulkan --post outline --gpu-timing off {at}"),
                format!("cuda-in-vulkan post @ {g}@{s}: cuda-in-vulkan --post outline --gpu-timing off {at}"),
                format!("cuda post (default sync) @ {g}@{s}: cuda --post outline --gpu-timing off {at}"),
                format!("vulkan post, timed @ {g}@{s}: vulkan --post outline {at}"),
                format!("cuda-in-vulkan post, timed @ {g}@{s}: cuda-in-vulkan --post outline {at}"),
                format!("cuda post (default sync), timed @ {g}@{s}: cuda --post outline {at}"),
                format!("cuda post, post batch 1 @ {g}@{s}: cuda --post outline --post-batch 1 --gpu-timing off {at}"),
                format!("cuda post, post batch 1, timed @ {g}@{s}: cuda --post outline --post-batch 1 {at}"),
                format!("cuda post, post batch 8 @ {g}@{s}: cuda --post outline --post-batch 8 --gpu-timing off {at}"),
                format!("cuda post, post batch 8, timed @ {g}@{s}: cuda --post outline --post-batch 8 {at}"),
            ]
        })
        .collect();
    assert_eq!(cells, want);
    assert_eq!((plan.frames, plan.warmup, plan.reps), (1000, 100, 3));
}

/// The post columns from fake runs: every row's frame time over the Vulkan-shader post of the same
/// grid (timed rows over the timed one), and the latency medians, in bench.md and bench.csv.
#[test]
fn post_ratios_and_latencies_from_fake_runs() {
    use vkhip::app::matrix::parse::parse_report;
    use vkhip::app::matrix::preset::{preset, Cell};
    use vkhip::app::matrix::run::Outcome;
    use vkhip::app::matrix::table::{markdown_table, write_csv, CSV_COLUMNS};
    use vkhip::app::matrix::CellResult;
    let p = preset(vkhip::cli::BenchPreset::Post);
    // A child's report, with the post lines a timed run prints.
    let run = |mean_ms: f64, latency: Option<(f64, f64)>| {
        let mut report = format!(
            "vkhip frame report\n  frame time   mean {mean_ms} ms   p50 {mean_ms} ms   p99 {mean_ms} ms   ({} fps)\n  \
             render cpu   p50 10.0 µs   p99 20.0 µs\n  sync         external, 3 slot(s)\n  device       d\n",
            1e3 / mean_ms
        );
        if let Some((p50, p99)) = latency {
            report += "  post filter  p50 0.050 ms   p99 0.060 ms   (GPU: …)\n";
            report += &format!("  post latency p50 {p50} ms   p99 {p99} ms   (GPU: …)\n");
        }
        Outcome::Ok(parse_report(&report).unwrap())
    };
    let label = |l: &str| *p.rows.iter().find(|c| c.label == l).unwrap();
    let at = p.sizes[1];
    let cell = |l: &str, runs: Vec<Outcome>| CellResult { cell: Cell { config: label(l), at }, runs };
    let results = vec![
        cell("vulkan (native)", vec![run(1.8, None); 3]),
        cell("vulkan post", vec![run(2.0, None), run(2.2, None), run(1.9, None)]),
        cell("cuda-in-vulkan post", vec![run(2.0, None), run(2.04, None), run(2.1, None)]),
        cell(
            "cuda post (default sync)",
            vec![run(2.4, None), run(2.32, None), Outcome::Unsupported("x".into())],
        ),
        cell("vulkan post, timed", vec![run(2.5, Some((0.2, 0.3))); 3]),
        cell("cuda post (default sync), timed", vec![run(3.0, Some((1.1, 1.5))), run(3.0, Some((0.9, 2.5)))]),
    ];
    let t = markdown_table(&at, &results);
    assert!(
        t.contains("| vs reference: binary K=1 | vs vulkan post | post latency p50 / p99 (ms) | render CPU"),
        "{t}"
    );
    let line = |l: &str| t.lines().find(|x| x.starts_with(&format!("| {l} |"))).unwrap().to_string();
    // Medians 2.0 (vulkan post), 2.04, 2.36, 1.8; timed 2.5 and 3.0.
    assert!(line("vulkan post").contains("| 1.00× | – |"), "{t}");
    assert!(line("cuda-in-vulkan post").contains("| 1.02× | – |"), "{t}");
    assert!(line("cuda post (default sync)").contains("| 1.18× | – |"), "{t}");
    assert!(line("vulkan (native)").contains("| 0.90× | – |"), "{t}");
    assert!(line("vulkan post, timed").contains("| 1.00× | 0.200 / 0.300 |"), "{t}");
    assert!(line("cuda post (default sync), timed").contains("| 1.20× | 1.000 / 2.000 |"), "{t}");
    // Without a post row the table has no post columns.
    assert!(!markdown_table(&at, &results[..1]).contains("vs vulkan post"));
    let mut buf = Vec::new();
    write_csv(&mut buf, &results, 1000).unwrap();
    let mut r = csv::Reader::from_reader(buf.as_slice());
    assert_eq!(r.headers().unwrap().iter().collect::<Vec<_>>(), CSV_COLUMNS);
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let col = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
    let get = |i: usize, name: &str| rows[i][col(name)].to_string();
    // Rows 6–8: cuda-in-vulkan post's reps (2.0, 2.04, 2.1 ms); row 12: vulkan post timed, rep 1.
    assert_eq!((get(6, "label"), get(6, "post")), ("cuda-in-vulkan post".into(), "outline".into()));
    assert_eq!(
        (get(6, "vulkan_post_ms"), get(6, "ratio_to_vulkan_post")),
        ("2.0000".into(), "1.0000".into())
    );
    assert_eq!(get(8, "ratio_to_vulkan_post"), "1.0500");
    assert_eq!((get(0, "post"), get(0, "ratio_to_vulkan_post")), (String::new(), "0.9000".into()));
    assert_eq!(get(12, "vulkan_post_ms"), "2.5000");
    assert_eq!(
        (get(12, "post_latency_p50_ms"), get(12, "post_latency_p99_ms")),
        ("0.2".into(), "0.3".into())
    );
    assert_eq!(get(12, "post_filter_p50_ms"), "0.05");
    assert_eq!(get(11, "ratio_to_vulkan_post"), "", "an unsupported run has no ratio");
}
