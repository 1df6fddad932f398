//! bench.png: "how far is each configuration from native?" at a glance. One panel per
//! grid@size, one horizontal bar per configuration (its median frame time), each bar carrying its
//! value and its ratio to `vulkan (native)` and to the grid's GPU limit; one colour per family
//! ([`Family`]: the GPU limit, native, the reference schemes, the interop modes, in-queue); a
//! dashed line at native's value; a light major grid, no minor grid. [`super::layout`] places
//! everything; [`render`] paints it with plotters into an RGB buffer (text from the embedded
//! DejaVu Sans, no system fonts), encoded with `png`.
//!
//! The caption gives the default configuration's GPU hand-off at that size ([`handoff_note`])
//! when its runs measured it (`vkhip bench --gpu-timing on`).
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::plot::Family;
//!
//! assert_eq!(Family::of("cuda-in-vulkan K=1", "cuda-in-vulkan", Some("external")), Family::InQueue);
//! assert_eq!(Family::of("reference: binary K=1", "cuda", Some("binary")), Family::Reference);
//! assert_eq!(Family::of("external K=3", "cuda", Some("external")), Family::Interop);
//! ```

use super::layout::{layout, TextBox, CAPTION_SIZE, LABEL_SIZE, TICK_SIZE, TITLE_SIZE};
use super::preset::{LIMIT, NATIVE};
use super::stats::Summary;
use super::CellResult;
use crate::cli::CellSize;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a configuration is, for its colour: one colour per family, so colour carries meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// The GPU's own work per frame (draw + kernel), the floor of every row.
    Limit,
    /// The `vulkan` backend: a compute shader, no interop (the baseline).
    Native,
    /// The reference samples' schemes: binary semaphores with K = 1, host waits, blocking.
    Reference,
    /// vkhip's interop modes (external, bridged, batches, run-ahead; cuda, hip, cpu).
    Interop,
    /// The compute API's kernel recorded in Vulkan's own queue (`cuda-in-vulkan`).
    InQueue,
}

impl Family {
    /// Every family, in legend order.
    pub const ALL: [Family; 5] =
        [Family::Limit, Family::Native, Family::Reference, Family::Interop, Family::InQueue];

    /// The family of a row, from its label, `--backend` and `--sync`.
    pub fn of(label: &str, backend: &str, sync: Option<&str>) -> Family {
        if label == LIMIT {
            Family::Limit
        } else if backend == "vulkan" {
            Family::Native
        } else if backend == "cuda-in-vulkan" {
            Family::InQueue
        } else if matches!(sync, Some("binary" | "host-wait" | "blocking")) {
            Family::Reference
        } else {
            Family::Interop
        }
    }

    /// The bar colour (a colour-blind-safe set: grey, blue, orange, purple, green).
    pub fn colour(self) -> (u8, u8, u8) {
        match self {
            // Slate, not a neutral grey: anti-aliased black text makes every neutral grey.
            Family::Limit => (100, 100, 130),
            Family::Native => (0, 114, 178),
            Family::Reference => (230, 159, 0),
            Family::Interop => (150, 80, 160),
            Family::InQueue => (0, 158, 115),
        }
    }

    /// The legend's name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Limit => "GPU limit (draw + kernel)",
            Family::Native => "native (vulkan)",
            Family::Reference => "reference schemes",
            Family::Interop => "interop modes",
            Family::InQueue => "in-queue (cuda-in-vulkan)",
        }
    }
}

/// One bar to draw: a configuration at one grid@size.
#[derive(Clone, Debug)]
pub struct PlotRow {
    pub label: String,
    pub family: Family,
    pub summary: Summary,
}

/// One panel: a grid@size and its rows, top to bottom.
#[derive(Clone, Debug)]
pub struct Panel {
    pub at: CellSize,
    pub rows: Vec<PlotRow>,
}

impl Panel {
    fn value(&self, pick: impl Fn(&PlotRow) -> bool) -> Option<f64> {
        self.rows.iter().find(|r| pick(r)).and_then(|r| r.summary.frame_ms)
    }

    /// Native's median frame time in this panel.
    pub fn native_ms(&self) -> Option<f64> {
        self.value(|r| r.label == NATIVE)
    }

    /// The GPU limit (draw + kernel) in this panel.
    pub fn limit_ms(&self) -> Option<f64> {
        self.value(|r| r.family == Family::Limit)
    }
}

/// The panels of a live matrix: one per size, rows in the plan's order.
pub fn panels(sizes: &[CellSize], results: &[CellResult]) -> Vec<Panel> {
    sizes
        .iter()
        .map(|at| Panel {
            at: *at,
            rows: results
                .iter()
                .filter(|r| r.cell.at == *at)
                .map(|r| {
                    let c = &r.cell.config;
                    PlotRow {
                        label: c.label.to_string(),
                        family: if c.limit { Family::Limit } else { Family::of(c.label, c.backend, c.sync) },
                        summary: Summary::for_row(&r.runs, c.limit),
                    }
                })
                .collect(),
        })
        .collect()
}

/// The default configuration's (the row labelled `default`) GPU hand-off: the medians of its
/// runs' p50s, or None when they did not measure it.
///
/// ```
/// use vkhip::app::matrix::parse::Measurement;
/// use vkhip::app::matrix::plot::{handoff_note, Family, Panel, PlotRow};
/// use vkhip::app::matrix::run::Outcome;
/// use vkhip::app::matrix::stats::Summary;
///
/// let run = |handoff_in_us, handoff_out_us| Outcome::Ok(Measurement {
///     mean_ms: 0.2, p50_ms: 0.2, p99_ms: 0.3, fps: 5000.0, render_cpu_p50_us: 10.0,
///     render_cpu_mean_us: None, startup_s: None, resolved: "external".into(), device: "d".into(),
///     handoff_in_us, handoff_out_us, gpu_limit: None, post: None,
/// });
/// let panel = |runs: Vec<Outcome>| Panel {
///     at: vkhip::cli::parse_cell_sizes("256x256@320x180").unwrap().0[0],
///     rows: vec![PlotRow { label: "default".into(), family: Family::Interop, summary: Summary::of(&runs) }],
/// };
/// let note = handoff_note(&panel(vec![run(Some(41.5), Some(12.0))]));
/// assert_eq!(note.as_deref(), Some("default: hand-off in 41.5 µs, out 12.0 µs (p50)"));
/// assert_eq!(handoff_note(&panel(vec![run(None, None)])), None); // GPU timing off: nothing measured
/// ```
pub fn handoff_note(panel: &Panel) -> Option<String> {
    let s = &panel.rows.iter().find(|r| r.label == "default")?.summary;
    let us = |v: Option<f64>| v.map_or_else(|| "–".to_string(), |v| format!("{v:.1} µs"));
    (s.handoff_in_us.is_some() || s.handoff_out_us.is_some())
        .then(|| format!("default: hand-off in {}, out {} (p50)", us(s.handoff_in_us), us(s.handoff_out_us)))
}

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

/// The width of `text` in the embedded font at `size`, pixels.
pub fn font_width(text: &str, size: u32) -> u32 {
    if register_font().is_err() {
        return text.chars().count() as u32 * size;
    }
    FontDesc::new(FontFamily::Name(FAMILY), f64::from(size), FontStyle::Normal)
        .box_size(text)
        .map_or(text.chars().count() as u32 * size, |(w, _)| w)
}

/// An RGB8 image.
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

fn rgb((r, g, b): (u8, u8, u8)) -> RGBColor {
    RGBColor(r, g, b)
}

/// Draw the chart.
pub fn render(title: &str, panels: &[Panel]) -> Result<Image, PlotError> {
    register_font()?;
    let l = layout(title, panels, &font_width);
    let mut buf = vec![0u8; l.width as usize * l.height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (l.width, l.height)).into_drawing_area();
        root.fill(&rgb(BACKGROUND)).map_err(draw_err)?;
        let style = |size: u32| TextStyle::from((FAMILY, size)).pos(Pos::new(HPos::Left, VPos::Top));
        let put = |t: &TextBox, s: TextStyle| root.draw(&Text::new(t.text.as_str(), (t.at.x0, t.at.y0), s));
        put(&l.title, style(TITLE_SIZE)).map_err(draw_err)?;
        for (f, swatch, name) in &l.legend {
            root.draw(&Rectangle::new(
                [(swatch.x0, swatch.y0), (swatch.x1, swatch.y1)],
                rgb(f.colour()).filled(),
            ))
            .map_err(draw_err)?;
            put(name, style(LABEL_SIZE)).map_err(draw_err)?;
        }
        let grid = RGBColor(225, 225, 225);
        for p in &l.panels {
            put(&p.caption, style(CAPTION_SIZE)).map_err(draw_err)?;
            // The major grid and the ticks under it.
            for (x, label) in &p.ticks {
                root.draw(&PathElement::new([(*x, p.plot.y0), (*x, p.plot.y1)], grid.stroke_width(1)))
                    .map_err(draw_err)?;
                let s = TextStyle::from((FAMILY, TICK_SIZE)).pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(label.as_str(), (*x, p.plot.y1 + 4), s)).map_err(draw_err)?;
            }
            let ms = TextStyle::from((FAMILY, TICK_SIZE)).pos(Pos::new(HPos::Left, VPos::Top));
            root.draw(&Text::new("ms", (p.plot.x1 + 6, p.plot.y1 + 4), ms)).map_err(draw_err)?;
            for r in &p.rows {
                put(&r.label, style(LABEL_SIZE)).map_err(draw_err)?;
                if let Some(b) = r.bar {
                    root.draw(&Rectangle::new([(b.x0, b.y0), (b.x1, b.y1)], rgb(r.family.colour()).filled()))
                        .map_err(draw_err)?;
                    if r.clipped {
                        // A break near the end: two slanted strokes in the background colour.
                        for dx in [-22, -16] {
                            let (x, y0, y1) = (b.x1 + dx, b.y0 - 1, b.y1 + 1);
                            root.draw(&PathElement::new(
                                [(x, y1), (x + 6, y0)],
                                rgb(BACKGROUND).stroke_width(2),
                            ))
                            .map_err(draw_err)?;
                        }
                    }
                }
                if let (Some((lo, hi)), Some(b)) = (r.spread, r.bar) {
                    let y = (b.y0 + b.y1) / 2;
                    root.draw(&PathElement::new([(lo, y), (hi, y)], BLACK.stroke_width(2)))
                        .map_err(draw_err)?;
                }
                let ink = if r.measured { BLACK } else { RGBColor(110, 110, 110) };
                put(&r.value, style(LABEL_SIZE).color(&ink)).map_err(draw_err)?;
            }
            // The value axis' base line, and native's value as a dashed line.
            root.draw(&PathElement::new(
                [(p.plot.x0, p.plot.y0), (p.plot.x0, p.plot.y1)],
                BLACK.stroke_width(1),
            ))
            .map_err(draw_err)?;
            if let Some((x, spans)) = &p.native_line {
                let dark = RGBColor(0, 60, 100);
                for &(y0, y1) in spans {
                    for y in (y0..y1).step_by(8) {
                        root.draw(&PathElement::new(
                            [(*x, y), (*x, (y + 4).min(y1 - 1))],
                            dark.stroke_width(1),
                        ))
                        .map_err(draw_err)?;
                    }
                }
            }
        }
        root.present().map_err(draw_err)?;
    }
    Ok(Image { width: l.width, height: l.height, rgb: buf })
}

/// The image's background.
pub const BACKGROUND: (u8, u8, u8) = (255, 255, 255);

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

/// Test data shared by the layout's and the drawing's tests.
#[cfg(test)]
pub(super) mod fixtures {
    use super::*;
    use crate::app::matrix::parse::Measurement;
    use crate::app::matrix::run::Outcome;

    fn ok(mean_ms: f64) -> Outcome {
        Outcome::Ok(Measurement {
            mean_ms,
            p50_ms: mean_ms,
            p99_ms: mean_ms,
            fps: 1e3 / mean_ms,
            render_cpu_p50_us: 1.0,
            render_cpu_mean_us: None,
            startup_s: None,
            resolved: "external, 3 slot(s)".into(),
            device: "d".into(),
            handoff_in_us: None,
            handoff_out_us: None,
            gpu_limit: None,
            post: None,
        })
    }

    /// The H100 256² and 1024² panels' labels (the published chart ran `cuda-in-vulkan K=1` into
    /// `K=3`), with a limit row, a cut bar and a row that did not run.
    pub(in crate::app::matrix) fn h100_panels() -> Vec<Panel> {
        let rows: &[(&str, &str, Option<&str>, f64)] = &[
            (LIMIT, "vulkan", Some("external"), 0.131),
            (NATIVE, "vulkan", Some("external"), 0.147),
            ("reference: binary K=1", "cuda", Some("binary"), 0.434),
            ("simpleVulkan as shipped", "cuda", Some("host-wait"), 10.3),
            ("blocking", "cuda", Some("blocking"), 0.509),
            ("bridged K=3", "cuda", Some("bridged"), 0.437),
            ("external K=8 B=4 R=4", "cuda", Some("external"), 0.169),
            ("default, GPU waits", "cuda", None, 0.174),
            ("staged copy", "cuda", Some("bridged"), 0.0),
            ("cuda-in-vulkan K=1", "cuda-in-vulkan", Some("external"), 0.149),
            ("cuda-in-vulkan K=3", "cuda-in-vulkan", Some("external"), 0.150),
        ];
        ["256x256@320x180", "1024x1024@1280x720"]
            .iter()
            .enumerate()
            .map(|(k, at)| Panel {
                at: crate::cli::parse_cell_sizes(at).unwrap().0[0],
                rows: rows
                    .iter()
                    .map(|&(label, backend, sync, ms)| {
                        let runs = if ms == 0.0 {
                            vec![Outcome::Unsupported("backend cuda is not available".into())]
                        } else {
                            vec![ok(ms * (1.0 + 13.0 * k as f64))]
                        };
                        PlotRow {
                            label: label.into(),
                            family: Family::of(label, backend, sync),
                            summary: Summary::of(&runs),
                        }
                    })
                    .collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::h100_panels;
    use super::*;

    /// Drawn, each family's colour is there (and no colour of a family not in the matrix).
    #[test]
    fn the_drawn_chart_has_each_familys_colour() {
        let mut panels = h100_panels();
        panels.truncate(1);
        let img = render("t", &panels).unwrap();
        let count = |c: (u8, u8, u8)| img.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) == c).count();
        for f in Family::ALL {
            assert!(count(f.colour()) > 500, "{f:?}: {} px", count(f.colour()));
        }
        panels[0].rows.retain(|r| r.family != Family::InQueue);
        let img = render("t", &panels).unwrap();
        let n = img.rgb.chunks_exact(3).filter(|p| (p[0], p[1], p[2]) == Family::InQueue.colour()).count();
        assert_eq!(n, 0);
    }
}
