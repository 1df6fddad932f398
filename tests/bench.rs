//! `vkhip bench` on lavapipe: the quick preset runs every cell, writes a CSV with a row per
//! repetition, markdown tables with ratio columns, and a chart whose pixels show axes and bars of
//! the measured heights; failed and unsupported cells are recorded and the matrix carries on.

mod common;
use common::*;
use std::collections::HashMap;
use std::path::Path;
use vkhip::app::matrix::plot::{BACKGROUND, BAR_COLOURS};

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

    fn dark(&self, x: usize, y: usize) -> bool {
        let (r, g, b) = self.px(x, y);
        r < 80 && g < 80 && b < 80
    }

    /// The longest horizontal and vertical runs of dark pixels.
    fn longest_dark_runs(&self) -> (usize, usize) {
        let longest = |outer: usize, inner: usize, dark: &dyn Fn(usize, usize) -> bool| {
            (0..outer)
                .map(|o| {
                    let (mut best, mut run) = (0, 0);
                    for i in 0..inner {
                        run = if dark(o, i) { run + 1 } else { 0 };
                        best = best.max(run);
                    }
                    best
                })
                .max()
                .unwrap_or(0)
        };
        (
            longest(self.height, self.width, &|y, x| self.dark(x, y)),
            longest(self.width, self.height, &|x, y| self.dark(x, y)),
        )
    }

    /// Rows (y) that contain at least one pixel of exactly `c`.
    fn rows_with(&self, c: (u8, u8, u8)) -> Vec<usize> {
        (0..self.height).filter(|&y| (0..self.width).any(|x| self.px(x, y) == c)).collect()
    }

    fn count(&self, c: (u8, u8, u8)) -> usize {
        self.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) == c).count()
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

const QUICK_LABELS: [&str; 3] = ["vulkan (native)", "cpu bridged", "cpu bridged K=4 R=2 B=2"];

#[test]
fn quick_preset_writes_csv_markdown_and_chart() {
    let dir = temp_dir("bench-quick");
    let out = dir.join("results");
    let t = std::time::Instant::now();
    let o = run(vkhip().args(["bench", "--preset", "quick", "--out"]).arg(&out));
    assert_ok(&o, "vkhip bench --preset quick");
    assert!(t.elapsed().as_secs() < 60, "the quick preset took {:?}", t.elapsed());
    let text = stdout(&o);

    // CSV: 3 configurations × 1 grid × 2 repetitions, every run ok with real numbers.
    let rows = read_csv(&out.join("bench.csv"));
    assert_eq!(rows.len(), 6, "{rows:#?}");
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
    assert_eq!(backends.iter().filter(|b| **b == "vulkan").count(), 2);
    assert_eq!(backends.iter().filter(|b| **b == "cpu").count(), 4);

    // Markdown: one table for the one grid, with both ratio columns; printed to stdout as well.
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert_eq!(md.matches("### grid ").count(), 1, "{md}");
    assert!(md.contains("### grid 64x64 @ image 160x90"), "{md}");
    assert!(md.contains("| vs vulkan (native) | vs reference: binary K=1 |"), "{md}");
    assert!(md.contains("- device: llvmpipe"), "{md}");
    assert!(md.contains("- date: ") && md.contains(" UTC"), "{md}");
    let median = |v: &[f64]| (v[0] + v[1]) / 2.0;
    let native = median(&means["vulkan (native)"]);
    for l in QUICK_LABELS {
        let line =
            md.lines().find(|x| x.starts_with(&format!("| {l} |"))).unwrap_or_else(|| panic!("{l}: {md}"));
        let m = median(&means[l]);
        // Median of two reps (as printed with 3 decimals), its ratio to native, the missing reference.
        let cols: Vec<&str> = line.split(" | ").collect();
        let shown: f64 = cols[2].parse().unwrap_or_else(|_| panic!("{line}"));
        assert!((shown - m).abs() < 0.0011, "{l}: shows {shown}, the CSV's median is {m}: {line}");
        assert_eq!(cols[4], format!("{:.2}×", m / native), "{line}");
        assert_eq!(cols[5], "n/a", "{line}");
        assert!(line.ends_with("| ok |"), "{line}");
    }
    assert!(text.contains("### grid 64x64 @ image 160x90"), "stdout:\n{text}");
    for f in ["bench.csv", "bench.md", "bench.png"] {
        assert!(text.contains(&format!("wrote {}", out.join(f).display())), "stdout:\n{text}");
    }

    // The chart: not blank, axes drawn, one bar per configuration with the measured height.
    let png = Png::read(&out.join("bench.png"));
    assert!(png.width >= 800 && png.height >= 300, "{}x{}", png.width, png.height);
    let mut colours = std::collections::HashSet::new();
    for p in png.rgb.chunks_exact(3) {
        colours.insert((p[0], p[1], p[2]));
    }
    assert!(colours.len() > 30, "only {} distinct colours: blank chart", colours.len());
    let non_bg = png.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) != BACKGROUND).count();
    assert!(non_bg * 20 > png.width * png.height, "only {non_bg} pixels differ from the background");
    let (h, v) = png.longest_dark_runs();
    assert!(h > png.width / 2, "no horizontal axis: longest dark run {h} px of {}", png.width);
    assert!(v > 200, "no vertical axis: longest dark run {v} px");
    let heights: Vec<f64> = (0..3)
        .map(|i| {
            let c = BAR_COLOURS[i];
            assert!(
                png.count(c) > 2000,
                "{}: {} pixels of its bar colour {c:?}",
                QUICK_LABELS[i],
                png.count(c)
            );
            png.rows_with(c).len() as f64
        })
        .collect();
    for i in 1..3 {
        let want = median(&means[QUICK_LABELS[i]]) / native;
        let got = heights[i] / heights[0];
        assert!(
            (got - want).abs() < 0.03 * want.max(1.0),
            "{}: bar height ratio {got:.3}, data {want:.3}",
            QUICK_LABELS[i]
        );
    }
    // No bar colour beyond the three configurations.
    assert_eq!(png.count(BAR_COLOURS[3]), 0);
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
    assert_eq!(
        cells,
        [
            ("vulkan (native)".to_string(), "32x32".to_string(), "ok".to_string()),
            ("vulkan (native)".to_string(), "48x40".to_string(), "ok".to_string())
        ]
    );
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert_eq!(md.matches("### grid ").count(), 2, "{md}");
    assert!(md.contains("### grid 48x40 @ image 96x54"), "{md}");
    let png = Png::read(&out.join("bench.png"));
    // Two panels: the bar colour appears in two separate vertical bands.
    let rows = png.rows_with(BAR_COLOURS[0]);
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
    assert_eq!(rows.len(), 3);
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
    assert!(line.contains("| n/a | n/a |"), "no baseline ran, so no ratio: {line}");

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
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["status"], "ok");
    assert_eq!(rows[1]["label"], "reference: binary K=1");
    assert_eq!(rows[1]["status"], "unsupported", "{:?}", rows[1]);
    assert!(rows[1]["reason"].contains("backend cuda is not available"), "{:?}", rows[1]);
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
    assert!(rows.len() < 600, "{} rows: the interrupt did not stop the matrix", rows.len());
    assert!(rows.iter().all(|r| r["status"] == "ok"), "{rows:?}");
    let md = std::fs::read_to_string(out.join("bench.md")).unwrap();
    assert!(md.contains(&format!("- **interrupted** after {} of 600 timed runs", rows.len())), "{md}");
    assert!(out.join("bench.png").exists());
}
