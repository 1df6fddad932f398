//! bench.png: median frame time per configuration, one bar panel per grid@size, drawn with
//! plotters into an RGB buffer (text from the embedded DejaVu Sans, no system fonts) and encoded
//! with the `png` crate.
//!
//! Each panel's caption also gives the default configuration's GPU hand-off at that size (in:
//! `rendered` → kernel start, out: kernel end → draw readable; [`handoff_note`]) when its runs
//! measured it (`vkhip bench --gpu-timing on`).
//!
//! Each panel's y axis is cut where one slow configuration would flatten the others (see
//! [`y_scale`]): such a bar is drawn up to the top of its panel with its value written on it.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::plot::{clipped_label, y_scale};
//!
//! // The H100's 256² panel, in short: one row at 10.4 ms, the rest 0.15–0.53 ms.
//! let bars = [(0.147, 0.147), (0.451, 0.452), (10.406, 10.434), (0.529, 0.549), (0.177, 0.182)];
//! let s = y_scale(&bars);
//! assert_eq!(s.clipped, [false, false, true, false, false]);
//! assert!((s.top - 0.549 * 1.15).abs() < 1e-9); // the tallest bar that is not cut, plus 15 %
//! assert_eq!(clipped_label(10.406), "10.4 ms ↑");
//! // Bars of similar height: nothing is cut.
//! assert_eq!(y_scale(&[(2.0, 2.1), (2.3, 2.3), (2.6, 2.7)]).clipped, [false; 3]);
//! ```

use super::stats::Summary;
use super::CellResult;
use crate::cli::CellSize;
use plotters::coord::ranged1d::{IntoSegmentedCoord as _, SegmentValue};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The bars' colours, by configuration (in the preset's row order; repeats after the last).
pub const BAR_COLOURS: &[(u8, u8, u8)] = &[
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (57, 59, 121),
    (173, 73, 74),
];

/// The image's background.
pub const BACKGROUND: (u8, u8, u8) = (255, 255, 255);

/// Width of the image, and height of the title and of each panel, in pixels.
pub const WIDTH: u32 = 1200;
const TITLE_HEIGHT: u32 = 50;
const PANEL_HEIGHT: u32 = 440;
/// The configuration names under the bars: lines at most, line height in pixels, font size.
const LABEL_LINES: u32 = 4;
const LABEL_LINE_HEIGHT: u32 = 16;
const LABEL_SIZE: u32 = 13;
/// Where a cut bar's break is drawn, in pixels under the top of the plot (below its value).
const BREAK_AT: i32 = 2 * LABEL_LINE_HEIGHT as i32 + 8;

/// DejaVu Sans (Bitstream Vera licence, assets/fonts/DejaVuSans-LICENSE).
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("the embedded font cannot be read")]
    Font,
    #[error("drawing the plot: {0}")]
    Draw(String),
    #[error("encoding the PNG: {0}")]
    Png(#[from] png::EncodingError),
}

fn draw_err<E: std::fmt::Display>(e: E) -> PlotError {
    PlotError::Draw(e.to_string())
}

fn register_font() -> Result<(), PlotError> {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *DONE.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = BAR_COLOURS[i % BAR_COLOURS.len()];
    RGBColor(r, g, b)
}

/// An RGB8 image.
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

/// Draw the chart. `labels` fixes each configuration's position and colour.
pub fn render(
    title: &str,
    labels: &[&str],
    sizes: &[CellSize],
    results: &[CellResult],
) -> Result<Image, PlotError> {
    register_font()?;
    let height = TITLE_HEIGHT + PANEL_HEIGHT * sizes.len().max(1) as u32;
    let mut rgb = vec![0u8; WIDTH as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, height)).into_drawing_area();
        let (r, g, b) = BACKGROUND;
        root.fill(&RGBColor(r, g, b)).map_err(draw_err)?;
        let (top, body) = root.split_vertically(TITLE_HEIGHT);
        top.titled(title, (FAMILY, 24)).map_err(draw_err)?;
        let panels = body.split_evenly((sizes.len().max(1), 1));
        for (panel, at) in panels.iter().zip(sizes) {
            draw_panel(panel, labels, at, results)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(Image { width: WIDTH, height, rgb })
}

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    labels: &[&str],
    at: &CellSize,
    results: &[CellResult],
) -> Result<(), PlotError> {
    // Every configuration at this size: its position and summary.
    let cells: Vec<(usize, Summary)> = results
        .iter()
        .filter(|r| r.cell.at == *at)
        .filter_map(|r| Some((labels.iter().position(|l| *l == r.cell.config.label)?, Summary::of(&r.runs))))
        .collect();
    let bars: Vec<Bar> = cells
        .iter()
        .filter_map(|(i, s)| Some(Bar { pos: *i as i32, median: s.frame_ms?, spread: s.spread_ms }))
        .collect();
    let scale = y_scale(
        &bars.iter().map(|b| (b.median, b.spread.map_or(b.median, |(_, hi)| hi))).collect::<Vec<_>>(),
    );
    let top = scale.top;
    let n = labels.len().max(1) as i32;
    let caption = if bars.is_empty() {
        format!("grid {} @ image {} (no configuration ran)", at.grid, at.size)
    } else if scale.clipped.contains(&true) {
        format!(
            "grid {} @ image {} (axis cut at {top:.3} ms: taller bars show their value)",
            at.grid, at.size
        )
    } else {
        format!("grid {} @ image {}", at.grid, at.size)
    };
    let caption = match handoff_note(at, results) {
        Some(note) => format!("{caption}; {note}"),
        None => caption,
    };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FAMILY, 18))
        .margin(12)
        .x_label_area_size(LABEL_LINES * LABEL_LINE_HEIGHT + 12)
        .y_label_area_size(80)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0f64..top)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(labels.len())
        .x_label_formatter(&|_| String::new())
        .y_label_style((FAMILY, 13))
        .y_desc("median frame time (ms)")
        .axis_desc_style((FAMILY, 14))
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()
        .map_err(draw_err)?;
    chart
        .draw_series(bars.iter().map(|b| {
            let mut r = Rectangle::new(
                [(SegmentValue::Exact(b.pos), 0.0), (SegmentValue::Exact(b.pos + 1), b.median.min(top))],
                colour(b.pos as usize).filled(),
            );
            r.set_margin(0, 0, 6, 6);
            r
        }))
        .map_err(draw_err)?;
    // The spread (min–max over the repetitions) as a thin dark line over each bar that is not
    // cut (a cut bar's value is written on it instead).
    chart
        .draw_series(bars.iter().zip(&scale.clipped).filter(|(_, c)| !**c).filter_map(|(b, _)| {
            let (lo, hi) = b.spread?;
            Some(PathElement::new(
                [(SegmentValue::CenterOf(b.pos), lo.min(top)), (SegmentValue::CenterOf(b.pos), hi.min(top))],
                BLACK.stroke_width(2),
            ))
        }))
        .map_err(draw_err)?;
    let base = area.get_base_pixel();
    let slot = {
        let x = |i| chart.backend_coord(&(SegmentValue::Exact(i), 0.0)).0;
        (x(1) - x(0)).max(20) as u32
    };
    // A cut bar: a slanted break in the background colour under its top, and its value just
    // under the top, in black or white for contrast.
    for (b, _) in bars.iter().zip(&scale.clipped).filter(|(_, c)| **c) {
        let (x0, y) = chart.backend_coord(&(SegmentValue::Exact(b.pos), top));
        let (x1, _) = chart.backend_coord(&(SegmentValue::Exact(b.pos + 1), top));
        let (x0, x1, y) = (x0 - base.0 + 6, x1 - base.0 - 6, y - base.1 + BREAK_AT);
        let (r, g, bl) = BACKGROUND;
        area.draw(&Polygon::new(
            vec![(x0, y + 6), (x1, y - 2), (x1, y + 2), (x0, y + 10)],
            RGBColor(r, g, bl).filled(),
        ))
        .map_err(draw_err)?;
        let (r, g, bl) = BAR_COLOURS[b.pos as usize % BAR_COLOURS.len()];
        let light = 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(bl) > 150.0;
        let ink = if light { BLACK } else { WHITE };
        let style = TextStyle::from((FAMILY, LABEL_SIZE)).color(&ink).pos(Pos::new(HPos::Center, VPos::Top));
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(b.pos), top));
        let measure = |t: &str| area.estimate_text_size(t, &style).map_or(u32::MAX, |(w, _)| w);
        for (line, text) in
            wrap(&clipped_label(b.median), slot.saturating_sub(14), measure).iter().enumerate()
        {
            let pos = (x - base.0, y - base.1 + 4 + (line as u32 * LABEL_LINE_HEIGHT) as i32);
            area.draw(&Text::new(text.as_str(), pos, style.clone())).map_err(draw_err)?;
        }
    }
    // The names under the bars, horizontal, wrapped to the width of a bar's slot.
    let style = TextStyle::from((FAMILY, LABEL_SIZE)).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i as i32), 0.0));
        let measure = |t: &str| area.estimate_text_size(t, &style).map_or(u32::MAX, |(w, _)| w);
        for (line, text) in
            wrap(label, slot.saturating_sub(6), measure).iter().take(LABEL_LINES as usize).enumerate()
        {
            let pos = (x - base.0, y - base.1 + 8 + (line as u32 * LABEL_LINE_HEIGHT) as i32);
            area.draw(&Text::new(text.as_str(), pos, style.clone())).map_err(draw_err)?;
        }
    }
    // Configurations without a bar say why (unsupported / failed) where the bar would be.
    let note = TextStyle::from((FAMILY, LABEL_SIZE - 2))
        .color(&RGBColor(110, 110, 110))
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    for (i, s) in cells.iter().filter(|(_, s)| s.frame_ms.is_none()) {
        let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(*i as i32), 0.0));
        let why = s.problem.as_ref().map_or("not run", |p| p.status());
        area.draw(&Text::new(why, (x - base.0, y - base.1 - 6), note.clone())).map_err(draw_err)?;
    }
    Ok(())
}

/// The default configuration's (the `cuda` row with no flag of its own) GPU hand-off at `at`:
/// the medians of its runs' p50s, or None when they did not measure it.
///
/// ```
/// use vkhip::app::matrix::parse::Measurement;
/// use vkhip::app::matrix::plot::handoff_note;
/// use vkhip::app::matrix::preset::preset;
/// use vkhip::app::matrix::run::Outcome;
/// use vkhip::app::matrix::preset::Cell;
/// use vkhip::app::matrix::CellResult;
/// use vkhip::cli::BenchPreset;
///
/// let p = preset(BenchPreset::Gpu);
/// let at = p.sizes[0];
/// let default = *p.rows.iter().find(|c| c.label == "default").unwrap();
/// let run = |handoff_in_us, handoff_out_us| Outcome::Ok(Measurement {
///     mean_ms: 0.2, p50_ms: 0.2, p99_ms: 0.3, fps: 5000.0, render_cpu_p50_us: 10.0,
///     render_cpu_mean_us: None, startup_s: None, resolved: "external".into(), device: "d".into(),
///     handoff_in_us, handoff_out_us, gpu_limit: None,
/// });
/// let results = [CellResult { cell: Cell { config: default, at }, runs: vec![run(Some(41.5), Some(12.0))] }];
/// assert_eq!(handoff_note(&at, &results).as_deref(), Some("default: hand-off in 41.5 µs, out 12.0 µs (p50)"));
/// let off = [CellResult { cell: Cell { config: default, at }, runs: vec![run(None, None)] }];
/// assert_eq!(handoff_note(&at, &off), None); // GPU timing off: nothing measured
/// ```
pub fn handoff_note(at: &CellSize, results: &[CellResult]) -> Option<String> {
    let default = results.iter().find(|r| {
        let c = &r.cell.config;
        r.cell.at == *at
            && c.backend == "cuda"
            && (c.sync, c.slots, c.run_ahead, c.batch, c.memory, c.compute_wait)
                == (None, None, None, None, None, None)
    })?;
    let s = Summary::of(&default.runs);
    let us = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1} µs"));
    (s.handoff_in_us.is_some() || s.handoff_out_us.is_some())
        .then(|| format!("default: hand-off in {}, out {} (p50)", us(s.handoff_in_us), us(s.handoff_out_us)))
}

/// One bar: the configuration's position, its median frame time and min–max spread (ms).
struct Bar {
    pos: i32,
    median: f64,
    spread: Option<(f64, f64)>,
}

/// A bar is cut when its median is more than this many times the median of its panel's bars.
pub const CLIP_FACTOR: f64 = 4.0;

/// One panel's y axis: where it ends (ms) and, for each bar, whether it is cut at that end.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub top: f64,
    pub clipped: Vec<bool>,
}

/// The y axis for bars given as (median, top of the spread) in ms.
///
/// The rule: a bar whose median exceeds [`CLIP_FACTOR`] × the median of all the panel's medians
/// is an outlier; the axis ends 15 % above the tallest of the other bars (spread included), and
/// an outlier taller than that is drawn cut at the top. A panel of one or two bars is never cut
/// (no bar can exceed 4× their median), nor is one whose bars are of similar height; without an
/// outlier the axis is the same as before: 15 % above the tallest bar.
pub fn y_scale(bars: &[(f64, f64)]) -> Scale {
    let medians: Vec<f64> = bars.iter().map(|b| b.0).collect();
    let limit = super::stats::median(&medians).map_or(f64::INFINITY, |m| m * CLIP_FACTOR);
    let outlier = |m: f64| limit > 0.0 && m > limit;
    let top = bars.iter().filter(|b| !outlier(b.0)).map(|b| b.0.max(b.1)).fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    Scale { top, clipped: bars.iter().map(|b| outlier(b.0) && b.0 > top).collect() }
}

/// The text written on a cut bar: its median, 3 significant digits or more, and an arrow.
pub fn clipped_label(ms: f64) -> String {
    let digits = if ms >= 100.0 {
        0
    } else if ms >= 10.0 {
        1
    } else {
        2
    };
    format!("{ms:.digits$} ms ↑")
}

/// Split `text` at spaces into lines no wider than `max` (by `measure`); a word wider than
/// `max` gets a line of its own.
pub fn wrap(text: &str, max: u32, measure: impl Fn(&str) -> u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(last) if measure(&format!("{last} {word}")) <= max => {
                last.push(' ');
                last.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Encode an RGB8 image as PNG.
pub fn write_png<W: std::io::Write>(out: W, image: &Image) -> Result<(), PlotError> {
    let mut enc = png::Encoder::new(out, image.width, image.height);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header()?;
    w.write_image_data(&image.rgb)?;
    w.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::matrix::parse::Measurement;
    use crate::app::matrix::preset::{Cell, Config};
    use crate::app::matrix::run::Outcome;

    #[test]
    fn clipping_rule() {
        // No outlier: the axis is 15 % above the tallest spread, as before.
        let s = y_scale(&[(1.0, 1.5), (2.0, 2.0), (3.0, 3.2)]);
        assert_eq!(s.clipped, [false; 3]);
        assert!((s.top - 3.2 * 1.15).abs() < 1e-12);
        // One or two bars are never cut, however different.
        assert_eq!(y_scale(&[(0.1, 0.1), (100.0, 100.0)]).clipped, [false, false]);
        assert_eq!(y_scale(&[(7.0, 7.0)]).clipped, [false]);
        // The H100's 1024² panel: only "simpleVulkan as shipped" (12.3 ms vs ~2.1) is cut.
        let h100 =
            [(2.034, 2.034), (2.338, 2.339), (12.329, 12.354), (2.48, 2.491), (2.567, 2.58), (2.06, 2.06)];
        let s = y_scale(&h100);
        assert_eq!(s.clipped, [false, false, true, false, false, false]);
        assert!((s.top - 2.58 * 1.15).abs() < 1e-12);
        // Exactly 4× the median is not cut; just above is; two outliers are both cut.
        assert_eq!(y_scale(&[(1.0, 1.0), (1.0, 1.0), (4.0, 4.0)]).clipped, [false; 3]);
        assert_eq!(y_scale(&[(1.0, 1.0), (1.0, 1.0), (4.01, 4.01)]).clipped, [false, false, true]);
        let s = y_scale(&[(1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (9.0, 9.0), (30.0, 31.0)]);
        assert_eq!(s.clipped, [false, false, false, true, true]);
        assert!((s.top - 1.15).abs() < 1e-12);
        // An outlier by the median rule that still fits under another bar's spread is drawn whole.
        assert_eq!(y_scale(&[(1.0, 1.0), (1.0, 6.0), (1.0, 1.0), (5.0, 5.0)]).clipped, [false; 4]);
        // Nothing measured: a unit axis.
        assert_eq!(y_scale(&[]), Scale { top: 1.0, clipped: vec![] });
        assert_eq!(clipped_label(123.4), "123 ms ↑");
        assert_eq!(clipped_label(12.349), "12.3 ms ↑");
        assert_eq!(clipped_label(4.5), "4.50 ms ↑");
    }

    fn config(label: &'static str) -> Config {
        Config {
            label,
            backend: "cpu",
            sync: None,
            slots: None,
            run_ahead: None,
            batch: None,
            memory: None,
            compute_wait: None,
            limit: false,
        }
    }

    fn result(label: &'static str, at: CellSize, mean_ms: f64) -> CellResult {
        let m = Measurement {
            mean_ms,
            p50_ms: mean_ms,
            p99_ms: mean_ms,
            fps: 1e3 / mean_ms,
            render_cpu_p50_us: 1.0,
            render_cpu_mean_us: None,
            startup_s: None,
            resolved: "bridged, 3 slot(s)".into(),
            device: "d".into(),
            handoff_in_us: None,
            handoff_out_us: None,
            gpu_limit: None,
        };
        CellResult { cell: Cell { config: config(label), at }, runs: vec![Outcome::Ok(m)] }
    }

    /// Rows (y) that hold a pixel of exactly `c`.
    fn rows_with(img: &Image, c: (u8, u8, u8)) -> Vec<usize> {
        let px = |x: u32, y: u32| {
            let i = (y as usize * img.width as usize + x as usize) * 3;
            (img.rgb[i], img.rgb[i + 1], img.rgb[i + 2])
        };
        (0..img.height).filter(|&y| (0..img.width).any(|x| px(x, y) == c)).map(|y| y as usize).collect()
    }

    /// The cut bar reaches the top of the plot (the y axis' top end); the others keep their
    /// heights in proportion to the axis.
    #[test]
    fn a_cut_bar_reaches_the_top_of_its_panel() {
        let at = CellSize { grid: "64x64".parse().unwrap(), size: "160x90".parse().unwrap() };
        let labels = ["a", "b", "slow", "d", "e"];
        let ms = [1.0, 1.2, 20.0, 0.8, 1.1];
        let results: Vec<CellResult> = labels.iter().zip(ms).map(|(l, m)| result(l, at, m)).collect();
        let img = render("t", &labels, &[at], &results).unwrap();
        // The y axis: the longest vertical run of dark pixels.
        let dark = |x: u32, y: u32| {
            let i = (y as usize * img.width as usize + x as usize) * 3;
            img.rgb[i..i + 3].iter().all(|&v| v < 80)
        };
        let (mut axis_top, mut axis_len) = (0, 0);
        for x in 0..img.width {
            let mut run = 0;
            for y in 0..img.height {
                run = if dark(x, y) { run + 1 } else { 0 };
                if run > axis_len {
                    (axis_len, axis_top) = (run, y + 1 - run);
                }
            }
        }
        assert!(axis_len > 200, "no y axis: {axis_len} px");
        let slow = rows_with(&img, BAR_COLOURS[2]);
        let top = *slow.first().expect("the cut bar is drawn") as i64;
        assert!((top - i64::from(axis_top)).abs() <= 2, "cut bar top {top}, axis top {axis_top}");
        // Bar "b" (1.2 ms) against the axis, which ends at 1.2 × 1.15 ms.
        let (b, cut) = (rows_with(&img, BAR_COLOURS[1]).len() as f64, slow.len() as f64);
        assert!((b / cut - 1.0 / 1.15).abs() < 0.02, "bar b {b} px, cut bar {cut} px");
    }

    #[test]
    fn wraps_at_spaces() {
        let chars = |t: &str| t.chars().count() as u32;
        assert_eq!(wrap("external K=8 B=4 R=4", 12, chars), ["external K=8", "B=4 R=4"]);
        assert_eq!(wrap("simpleVulkan as shipped", 10, chars), ["simpleVulkan", "as shipped"]);
        assert_eq!(wrap("default", 3, chars), ["default"]);
        assert!(wrap("", 10, chars).is_empty());
    }
}
