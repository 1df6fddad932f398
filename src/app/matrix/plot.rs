//! bench.png: median frame time per configuration, one bar panel per grid@size, drawn with
//! plotters into an RGB buffer (text from the embedded DejaVu Sans, no system fonts) and encoded
//! with the `png` crate.

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
    let top =
        bars.iter().map(|b| b.spread.map_or(b.median, |(_, hi)| hi.max(b.median))).fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.15 } else { 1.0 };
    let n = labels.len().max(1) as i32;
    let caption = if bars.is_empty() {
        format!("grid {} @ image {} (no configuration ran)", at.grid, at.size)
    } else {
        format!("grid {} @ image {}", at.grid, at.size)
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
                [(SegmentValue::Exact(b.pos), 0.0), (SegmentValue::Exact(b.pos + 1), b.median)],
                colour(b.pos as usize).filled(),
            );
            r.set_margin(0, 0, 6, 6);
            r
        }))
        .map_err(draw_err)?;
    // The spread (min–max over the repetitions) as a thin dark line over each bar.
    chart
        .draw_series(bars.iter().filter_map(|b| {
            let (lo, hi) = b.spread?;
            Some(PathElement::new(
                [(SegmentValue::CenterOf(b.pos), lo), (SegmentValue::CenterOf(b.pos), hi)],
                BLACK.stroke_width(2),
            ))
        }))
        .map_err(draw_err)?;
    // The names under the bars, horizontal, wrapped to the width of a bar's slot.
    let base = area.get_base_pixel();
    let style = TextStyle::from((FAMILY, LABEL_SIZE)).pos(Pos::new(HPos::Center, VPos::Top));
    let slot = {
        let x = |i| chart.backend_coord(&(SegmentValue::Exact(i), 0.0)).0;
        (x(1) - x(0)).max(20) as u32
    };
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

/// One bar: the configuration's position, its median frame time and min–max spread (ms).
struct Bar {
    pos: i32,
    median: f64,
    spread: Option<(f64, f64)>,
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
    use super::wrap;

    #[test]
    fn wraps_at_spaces() {
        let chars = |t: &str| t.chars().count() as u32;
        assert_eq!(wrap("external K=8 B=4 R=4", 12, chars), ["external K=8", "B=4 R=4"]);
        assert_eq!(wrap("simpleVulkan as shipped", 10, chars), ["simpleVulkan", "as shipped"]);
        assert_eq!(wrap("default", 3, chars), ["default"]);
        assert!(wrap("", 10, chars).is_empty());
    }
}
