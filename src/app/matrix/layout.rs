//! bench.png's geometry, computed without drawing: where each label, bar, value text, tick and
//! caption goes, as plain rectangles, so that what matters to a reader (labels that do not run
//! into each other, a value and its ratios on every bar, nothing outside the image) is tested
//! without pixels. [`super::plot`] paints a [`Layout`].
//!
//! Each panel's axis is cut where one slow configuration would flatten the others (see
//! [`x_scale`]): such a bar runs to the end of the axis with a break, its value written after it.
//!
//! # Examples
//!
//! ```
//! use vkhip::app::matrix::layout::{bar_text, clipped_label, x_scale};
//!
//! // The H100's 256² panel, in short: one row at 10.4 ms, the rest 0.15–0.53 ms.
//! let bars = [(0.147, 0.147), (0.451, 0.452), (10.406, 10.434), (0.529, 0.549), (0.177, 0.182)];
//! let s = x_scale(&bars);
//! assert_eq!(s.clipped, [false, false, true, false, false]);
//! assert!((s.top - 0.549 * 1.05).abs() < 1e-9); // the longest bar that is not cut, plus 5 %
//! assert_eq!(clipped_label(10.406), "10.4 ms");
//! // Every bar says its value and how far it is from native and from the GPU limit.
//! assert_eq!(bar_text(0.177, Some(0.147), Some(0.131)), "0.177 ms · 1.20× native · 1.35× limit");
//! ```

use super::panel::{handoff_note, Family, Panel};
use super::preset::NATIVE;

/// The text on a bar: its value, its ratio to native and to the GPU limit (each when known).
pub fn bar_text(ms: f64, native: Option<f64>, limit: Option<f64>) -> String {
    let mut t = clipped_label(ms);
    for (base, name) in [(native, "native"), (limit, "limit")] {
        if let Some(b) = base.filter(|b| *b > 0.0) {
            t.push_str(&format!(" · {:.2}× {name}", ms / b));
        }
    }
    t
}

/// A value in ms with 3 significant digits or more.
pub fn clipped_label(ms: f64) -> String {
    let digits = if ms >= 100.0 {
        0
    } else if ms >= 10.0 {
        1
    } else {
        3
    };
    format!("{ms:.digits$} ms")
}

/// A bar is cut when its median is more than this many times the median of its panel's bars.
pub const CLIP_FACTOR: f64 = 4.0;

/// One panel's value axis: where it ends (ms) and, for each bar, whether it is cut there.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub top: f64,
    pub clipped: Vec<bool>,
}

/// The value axis for bars given as (median, top of the spread) in ms.
///
/// A bar whose median exceeds [`CLIP_FACTOR`] × the median of all the panel's medians is an
/// outlier; the axis ends 5 % past the longest of the other bars (spread included), and an
/// outlier longer than that is drawn cut at the end. A panel of one or two bars is never cut.
pub fn x_scale(bars: &[(f64, f64)]) -> Scale {
    let medians: Vec<f64> = bars.iter().map(|b| b.0).collect();
    let limit = super::stats::median(&medians).map_or(f64::INFINITY, |m| m * CLIP_FACTOR);
    let outlier = |m: f64| limit > 0.0 && m > limit;
    let top = bars.iter().filter(|b| !outlier(b.0)).map(|b| b.0.max(b.1)).fold(0.0f64, f64::max);
    let top = if top > 0.0 { top * 1.05 } else { 1.0 };
    Scale { top, clipped: bars.iter().map(|b| outlier(b.0) && b.0 > top).collect() }
}

/// A tick step of 1, 2 or 5 × 10ⁿ giving at most `max_ticks` ticks up to `top`.
pub fn tick_step(top: f64, max_ticks: u32) -> f64 {
    let raw = top / f64::from(max_ticks.max(1));
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

/// A rectangle in pixels, `x0 ≤ x < x1`, `y0 ≤ y < y1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: i32,
    pub y0: i32,
    pub x1: i32,
    pub y1: i32,
}

impl Rect {
    /// Whether the two share a pixel.
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x0 < o.x1 && o.x0 < self.x1 && self.y0 < o.y1 && o.y0 < self.y1
    }
}

/// A text and the box it occupies.
#[derive(Clone, Debug, PartialEq)]
pub struct TextBox {
    pub text: String,
    pub at: Rect,
}

/// One row of a panel: its label, its bar (when it ran) and the text after it (the value and
/// ratios, or why there is no bar).
#[derive(Clone, Debug)]
pub struct RowLayout {
    pub label: TextBox,
    pub family: Family,
    pub bar: Option<Rect>,
    /// The bar is cut at the end of the axis.
    pub clipped: bool,
    /// The min–max spread over the repetitions, as x pixels (bars not cut).
    pub spread: Option<(i32, i32)>,
    pub value: TextBox,
    /// The value text is a bar's (false: the reason a row has no bar).
    pub measured: bool,
}

/// One panel's geometry.
#[derive(Clone, Debug)]
pub struct PanelLayout {
    pub caption: TextBox,
    pub rows: Vec<RowLayout>,
    /// The plot area: bars start at `x0`; the axis ends at `x1`.
    pub plot: Rect,
    /// Major ticks: x pixel and label.
    pub ticks: Vec<(i32, String)>,
    /// Native's value: the dashed line's x and the y ranges it is drawn over (every row's,
    /// except where the line would cross a row's text).
    pub native_line: Option<(i32, Vec<(i32, i32)>)>,
}

/// The whole chart's geometry.
#[derive(Clone, Debug)]
pub struct Layout {
    pub width: u32,
    pub height: u32,
    pub title: TextBox,
    /// The legend: a colour swatch and a name per family present.
    pub legend: Vec<(Family, Rect, TextBox)>,
    pub panels: Vec<PanelLayout>,
}

/// Width of the image.
pub const WIDTH: u32 = 1200;
const MARGIN: i32 = 16;
const LABEL_WIDTH: i32 = 210;
const ROW_HEIGHT: i32 = 24;
const BAR_HEIGHT: i32 = 16;
const CAPTION_HEIGHT: i32 = 30;
const TICKS_HEIGHT: i32 = 22;
const PANEL_GAP: i32 = 22;
const TITLE_HEIGHT: i32 = 36;
const LEGEND_HEIGHT: i32 = 26;
/// Where the first panel starts: above it only the title and the legend.
pub const PANELS_TOP: i32 = TITLE_HEIGHT + LEGEND_HEIGHT + 6;
/// Font sizes: title, caption, labels and values, ticks.
pub(super) const TITLE_SIZE: u32 = 20;
pub(super) const CAPTION_SIZE: u32 = 15;
pub(super) const LABEL_SIZE: u32 = 13;
pub(super) const TICK_SIZE: u32 = 11;

/// Lay the chart out. `measure(text, size)` gives a text's width in pixels at a font size.
pub fn layout(title: &str, panels: &[Panel], measure: &dyn Fn(&str, u32) -> u32) -> Layout {
    let w = WIDTH as i32;
    let text = |t: &str, size: u32, x0: i32, y0: i32| TextBox {
        text: t.to_string(),
        at: Rect { x0, y0, x1: x0 + measure(t, size) as i32, y1: y0 + size as i32 + 4 },
    };
    let title_box = {
        let tw = measure(title, TITLE_SIZE) as i32;
        text(title, TITLE_SIZE, ((w - tw) / 2).max(MARGIN), 8)
    };
    // The legend: the families present, left to right.
    let mut legend = Vec::new();
    let mut x = MARGIN + LABEL_WIDTH + 10;
    for f in Family::ALL.into_iter().filter(|f| panels.iter().any(|p| p.rows.iter().any(|r| r.family == *f)))
    {
        let y = TITLE_HEIGHT + 4;
        let swatch = Rect { x0: x, y0: y + 2, x1: x + 14, y1: y + 16 };
        let name = text(f.name(), LABEL_SIZE, x + 20, y);
        x = name.at.x1 + 24;
        legend.push((f, swatch, name));
    }
    // Every value text fits to the right of the axis' end: reserve the widest.
    let texts: Vec<Vec<(String, bool)>> = panels.iter().map(row_texts).collect();
    let reserve = texts.iter().flatten().map(|(t, _)| measure(t, LABEL_SIZE) as i32).max().unwrap_or(0);
    let plot_x0 = MARGIN + LABEL_WIDTH + 10;
    let plot_x1 = (w - MARGIN - reserve - 12).max(plot_x0 + 200);
    let mut y = PANELS_TOP;
    let mut out = Vec::new();
    for (panel, texts) in panels.iter().zip(texts) {
        let values: Vec<(usize, f64, f64)> = panel
            .rows
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let m = r.summary.frame_ms?;
                Some((i, m, r.summary.spread_ms.map_or(m, |s| s.1)))
            })
            .collect();
        let scale = x_scale(&values.iter().map(|v| (v.1, v.2)).collect::<Vec<_>>());
        let px = |ms: f64| {
            plot_x0 + ((ms / scale.top).clamp(0.0, 1.0) * f64::from(plot_x1 - plot_x0)).round() as i32
        };
        let mut caption = format!("grid {} @ image {}", panel.at.grid, panel.at.size);
        if values.is_empty() {
            caption.push_str(" (no configuration ran)");
        } else if scale.clipped.contains(&true) {
            caption.push_str(&format!(" (axis cut at {:.3} ms: longer bars end in a break)", scale.top));
        }
        if let Some(note) = handoff_note(panel) {
            caption.push_str(&format!("; {note}"));
        }
        let caption = text(&caption, CAPTION_SIZE, MARGIN, y + 4);
        let rows_y0 = y + CAPTION_HEIGHT;
        let mut rows = Vec::new();
        for (i, (row, (value_text, measured))) in panel.rows.iter().zip(texts).enumerate() {
            let ry = rows_y0 + i as i32 * ROW_HEIGHT;
            let bar_y0 = ry + (ROW_HEIGHT - BAR_HEIGHT) / 2;
            let text_y0 = ry + (ROW_HEIGHT - LABEL_SIZE as i32 - 4) / 2;
            let label = fit(&row.label, LABEL_SIZE, LABEL_WIDTH, measure);
            let lw = measure(&label, LABEL_SIZE) as i32;
            let label = text(&label, LABEL_SIZE, MARGIN + LABEL_WIDTH - lw, text_y0);
            let v = values.iter().position(|v| v.0 == i);
            let clipped = v.is_some_and(|k| scale.clipped[k]);
            let bar = v.map(|k| Rect {
                x0: plot_x0,
                y0: bar_y0,
                x1: px(values[k].1).max(plot_x0 + 1),
                y1: bar_y0 + BAR_HEIGHT,
            });
            let spread = (!clipped).then(|| row.summary.spread_ms.map(|(lo, hi)| (px(lo), px(hi)))).flatten();
            let after = bar.map_or(plot_x0, |b| b.x1.max(spread.map_or(0, |s| s.1))) + 6;
            let value = text(&value_text, LABEL_SIZE, after, text_y0);
            rows.push(RowLayout { label, family: row.family, bar, clipped, spread, value, measured });
        }
        let plot_y1 = rows_y0 + panel.rows.len() as i32 * ROW_HEIGHT;
        let step = tick_step(scale.top, 6);
        let ticks = (0..)
            .map(|k| f64::from(k) * step)
            .take_while(|v| *v <= scale.top * (1.0 + 1e-9))
            .map(|v| (px(v), format!("{v:.3}")))
            .collect();
        let native_line = panel.native_ms().map(px).map(|x| {
            let clear = |r: &&RowLayout| !(r.value.at.x0 <= x && x < r.value.at.x1);
            let ys = rows.iter().enumerate().filter(|(_, r)| clear(r)).map(|(i, _)| {
                let y = rows_y0 + i as i32 * ROW_HEIGHT;
                (y, y + ROW_HEIGHT)
            });
            (x, ys.collect())
        });
        out.push(PanelLayout {
            caption,
            rows,
            plot: Rect { x0: plot_x0, y0: rows_y0, x1: plot_x1, y1: plot_y1 },
            ticks,
            native_line,
        });
        y = plot_y1 + TICKS_HEIGHT + PANEL_GAP;
    }
    Layout {
        width: WIDTH,
        height: y.max(TITLE_HEIGHT + LEGEND_HEIGHT + 40) as u32,
        title: title_box,
        legend,
        panels: out,
    }
}

/// Each row's text after its bar, and whether it is a measured value (else the reason it has no
/// bar).
fn row_texts(panel: &Panel) -> Vec<(String, bool)> {
    let (native, limit) = (panel.native_ms(), panel.limit_ms());
    panel
        .rows
        .iter()
        .map(|r| match r.summary.frame_ms {
            Some(ms) => {
                let (n, l) = match r.family {
                    Family::Limit => (native, None),
                    _ if r.label == NATIVE => (None, limit),
                    _ => (native, limit),
                };
                (bar_text(ms, n, l), true)
            }
            None => {
                let why = r.summary.problem.as_ref().map_or_else(
                    || "not run".to_string(),
                    |p| {
                        let reason: String = p.reason().chars().take(60).collect();
                        format!("{}: {reason}", p.status())
                    },
                );
                (why, false)
            }
        })
        .collect()
}

/// `text` cut with an ellipsis to fit `max` pixels.
fn fit(text: &str, size: u32, max: i32, measure: &dyn Fn(&str, u32) -> u32) -> String {
    if measure(text, size) as i32 <= max {
        return text.to_string();
    }
    let mut s: String = text.to_string();
    while !s.is_empty() && measure(&format!("{s}…"), size) as i32 > max {
        s.pop();
    }
    format!("{s}…")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::matrix::panel::fixtures::h100_panels;
    use crate::app::matrix::plot::font_width;
    use crate::app::matrix::preset::LIMIT;

    #[test]
    fn clipping_rule() {
        // No outlier: the axis is 5 % past the longest spread.
        let s = x_scale(&[(1.0, 1.5), (2.0, 2.0), (3.0, 3.2)]);
        assert_eq!(s.clipped, [false; 3]);
        assert!((s.top - 3.2 * 1.05).abs() < 1e-12);
        // One or two bars are never cut, however different.
        assert_eq!(x_scale(&[(0.1, 0.1), (100.0, 100.0)]).clipped, [false, false]);
        // The H100's 1024² panel: only "simpleVulkan as shipped" (12.3 ms vs ~2.1) is cut.
        let h100 =
            [(2.034, 2.034), (2.338, 2.339), (12.329, 12.354), (2.48, 2.491), (2.567, 2.58), (2.06, 2.06)];
        assert_eq!(x_scale(&h100).clipped, [false, false, true, false, false, false]);
        // Exactly 4× the median is not cut; just above is.
        assert_eq!(x_scale(&[(1.0, 1.0), (1.0, 1.0), (4.0, 4.0)]).clipped, [false; 3]);
        assert_eq!(x_scale(&[(1.0, 1.0), (1.0, 1.0), (4.01, 4.01)]).clipped, [false, false, true]);
        assert_eq!(x_scale(&[]), Scale { top: 1.0, clipped: vec![] });
        assert_eq!(clipped_label(123.4), "123 ms");
        assert_eq!(clipped_label(12.349), "12.3 ms");
        assert_eq!(clipped_label(0.1474), "0.147 ms");
        assert_eq!(tick_step(0.589, 6), 0.1);
        assert_eq!(tick_step(3.0, 6), 0.5);
        assert_eq!(tick_step(12.0, 6), 2.0);
    }

    /// Labels never run into each other or into the bars' texts, every bar carries its value and
    /// its ratios, and everything stays inside the image: with the embedded font's real widths,
    /// and with a crude fixed width per character.
    #[test]
    fn labels_and_texts_are_disjoint_and_every_bar_says_its_value_and_ratios() {
        let panels = h100_panels();
        let crude = |t: &str, size: u32| t.chars().count() as u32 * size * 6 / 10;
        for measure in [&font_width as &dyn Fn(&str, u32) -> u32, &crude] {
            let l = layout("vkhip bench", &panels, measure);
            let mut boxes: Vec<(&str, Rect)> = vec![("title", l.title.at)];
            boxes.extend(l.legend.iter().map(|(_, s, n)| (n.text.as_str(), Rect { x0: s.x0, ..n.at })));
            for p in &l.panels {
                boxes.push((p.caption.text.as_str(), p.caption.at));
                for r in &p.rows {
                    boxes.push((r.label.text.as_str(), r.label.at));
                    boxes.push((r.value.text.as_str(), r.value.at));
                    if let Some(b) = r.bar {
                        assert!(!b.overlaps(&r.label.at) && !b.overlaps(&r.value.at), "{:?}", r.label);
                    }
                }
            }
            // Native's dashed line crosses no text (it skips the rows whose text lies across it).
            for p in &l.panels {
                let (x, spans) = p.native_line.as_ref().expect("native ran");
                let line = |&(y0, y1): &(i32, i32)| Rect { x0: *x, y0, x1: x + 1, y1 };
                for (t, r) in &boxes {
                    assert!(spans.iter().all(|s| !line(s).overlaps(r)), "native's line crosses '{t}'");
                }
                let crossing = p.rows.iter().filter(|r| r.value.at.x0 <= *x && *x < r.value.at.x1).count();
                assert_eq!(spans.len() + crossing, p.rows.len(), "the line runs through every other row");
            }
            for (i, (a, ra)) in boxes.iter().enumerate() {
                assert!(
                    ra.x0 >= 0 && ra.x1 <= l.width as i32 && ra.y1 <= l.height as i32,
                    "'{a}' {ra:?} outside"
                );
                for (b, rb) in &boxes[i + 1..] {
                    assert!(!ra.overlaps(rb), "'{a}' {ra:?} overlaps '{b}' {rb:?}");
                }
            }
            let p = &l.panels[0];
            let text = |label: &str| &p.rows.iter().find(|r| r.label.text == label).unwrap().value.text;
            assert_eq!(text("cuda-in-vulkan K=1"), "0.149 ms · 1.01× native · 1.14× limit");
            assert_eq!(text(NATIVE), "0.147 ms · 1.12× limit");
            assert_eq!(text(LIMIT), "0.131 ms · 0.89× native");
            assert_eq!(text("simpleVulkan as shipped"), "10.3 ms · 70.07× native · 78.63× limit");
            assert_eq!(text("staged copy"), "unsupported: backend cuda is not available");
            for r in p.rows.iter().filter(|r| r.bar.is_some()) {
                assert!(r.measured && r.value.text.contains(" ms") && r.value.text.contains("×"), "{r:?}");
            }
            // The cut bar ends at the axis' end; the others are in proportion.
            let cut: Vec<bool> = p.rows.iter().map(|r| r.clipped).collect();
            assert_eq!(cut.iter().filter(|c| **c).count(), 1);
            let bar = |label: &str| p.rows.iter().find(|r| r.label.text == label).unwrap().bar.unwrap();
            assert_eq!(bar("simpleVulkan as shipped").x1, p.plot.x1);
            let w = |label: &str| f64::from(bar(label).x1 - bar(label).x0);
            assert!((w("blocking") / w(NATIVE) - 0.509 / 0.147).abs() < 0.05);
            // No minor grid: the ticks are 1, 2 or 5 × 10ⁿ apart, at most 7 of them.
            assert!(p.ticks.len() >= 3 && p.ticks.len() <= 7, "{:?}", p.ticks);
        }
    }
}
