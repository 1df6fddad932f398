//! bench.png: "how far is each configuration from native?" at a glance. One panel per
//! grid@size ([`super::panel`]), one horizontal bar per configuration (its median frame time),
//! each bar carrying its value and its ratio to `vulkan (native)` and to the grid's GPU limit;
//! one colour per family ([`super::panel::Family`]: the GPU limit, native, the reference schemes,
//! the interop modes, in-queue); a dashed line at native's value; a light major grid, no minor
//! grid.
//! [`super::layout`] places everything; [`render`] paints it with plotters into an RGB buffer
//! (text from the embedded DejaVu Sans, no system fonts), encoded with `png`.
//!
//! The caption gives the default configuration's GPU hand-off at that size
//! ([`super::panel::handoff_note`]) when its runs measured it (`vkhip bench --gpu-timing on`).

use super::layout::{layout, TextBox, CAPTION_SIZE, LABEL_SIZE, TICK_SIZE, TITLE_SIZE};
use super::panel::Panel;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::matrix::panel::fixtures::h100_panels;
    use crate::app::matrix::panel::Family;

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
