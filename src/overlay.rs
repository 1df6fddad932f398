//! The frame-time overlay: a graph of the last [`OVERLAY_FRAMES`] frames, drawn by vkhip's own
//! pipeline over the surface (no UI toolkit). The window toggles it with **G**; `--overlay`
//! starts with it shown (in a window and headless, so `--capture` can record it).
//!
//! This module holds what is not Vulkan: the per-frame history ([`OverlayHistory`], constant
//! memory, keyed by frame number), the vertical scale, the rectangle's placement, the colours,
//! and the feed from the render thread ([`OverlayFeed`]). The pipeline that draws it is
//! [`crate::vk::overlay`]; its shader interface is in [`crate::shaders`] (`overlay.vert`,
//! `overlay.frag`).
//!
//! What the graph shows (oldest frame on the left, newest on the right, one column per frame):
//! - [`Series::Frame`], blue line over a dark blue band down to 0: frame time, the host time from
//!   one frame's start to the next one's (so frame f's value arrives when frame f + 1 starts);
//! - [`Series::Draw`], orange line: the draw's GPU time from the moment its heights were readable
//!   to its end (the profiler's `draw`; it arrives when the profiler closes the frame, a few
//!   frames late);
//! - [`Series::Compute`], green line: the compute side's write of the slot (the profiler's
//!   `compute`: kernel or dispatch on the GPU, or the host write);
//! - a red reference line at [`REFERENCE_MS`] (16.7 ms, one frame at 60 Hz);
//! - all on a translucent dark background with a thin grey border.
//!
//! Later items are drawn over earlier ones (the compute line is on top). A line joins each
//! column's value to the previous column's, so steps stay connected.
//!
//! Scale: the bottom edge is 0 ms; the top edge is [`top_ms`]: the smallest multiple of 16.7 ms
//! that is at least 1.2 × the largest value shown, never less than 2 × 16.7 ms (so the reference
//! line sits at mid-height or lower and a fast run keeps a steady scale) and never more than
//! 8 × 16.7 ms (a single slow frame, e.g. the first one, is clipped at the top rather than
//! squashing the rest). Snapping to whole frames keeps the scale from jittering.

use crate::profile::FrameFigures;

/// Frames the overlay keeps and shows (one column each).
pub const OVERLAY_FRAMES: usize = 256;

/// The reference line: one frame at 60 Hz, milliseconds.
pub const REFERENCE_MS: f32 = 1000.0 / 60.0;

/// The graph's lowest top edge, in multiples of [`REFERENCE_MS`].
pub const MIN_TOP_FRAMES: f32 = 2.0;
/// The graph's highest top edge, in multiples of [`REFERENCE_MS`].
pub const MAX_TOP_FRAMES: f32 = 8.0;

/// Rectangle size as fractions of the viewport (width, height), bottom-left corner.
pub const OVERLAY_SIZE: (f32, f32) = (0.4, 0.3);
/// Gap between the rectangle and the viewport's left and bottom edges, pixels.
pub const OVERLAY_MARGIN: u32 = 12;

/// Background (RGB) and its opacity: the rectangle darkens what lies under it.
pub const BACKGROUND: [f32; 3] = [0.02, 0.025, 0.04];
/// Opacity of [`BACKGROUND`]; every series and the reference line are opaque.
pub const BACKGROUND_ALPHA: f32 = 0.8;
/// Colour of the reference line.
pub const REFERENCE_COLOR: [f32; 3] = [0.95, 0.15, 0.25];
/// Colour of the one-pixel border.
pub const BORDER_COLOR: [f32; 3] = [0.4, 0.42, 0.48];
/// Colour of the band under the [`Series::Frame`] line.
pub const FRAME_BAND_COLOR: [f32; 3] = [0.12, 0.22, 0.45];

/// One measured quantity per frame, each drawn in its own colour ([`Series::color`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Series {
    /// Frame time (host time between frame starts): a blue line over a dark blue band.
    Frame,
    /// Draw GPU time (timestamps around the draw command buffer): an orange line.
    Draw,
    /// Compute time (the backend's kernel or copy): a green line.
    Compute,
}

impl Series {
    /// Every series, in the order of the sample's components.
    pub const ALL: [Series; 3] = [Series::Frame, Series::Draw, Series::Compute];

    /// Component of a sample (`vec4` in the shader) that holds this series.
    pub fn index(self) -> usize {
        match self {
            Series::Frame => 0,
            Series::Draw => 1,
            Series::Compute => 2,
        }
    }

    /// Display colour (RGB, 0..1), as in `shaders/overlay.frag`.
    pub fn color(self) -> [f32; 3] {
        match self {
            Series::Frame => [0.25, 0.5, 0.95],
            Series::Draw => [1.0, 0.6, 0.05],
            Series::Compute => [0.3, 0.95, 0.4],
        }
    }
}

/// Marker for "no frame stored here" in [`OverlayHistory`]'s tags.
const EMPTY: u64 = u64::MAX;

/// The last [`OVERLAY_FRAMES`] frames' values, a fixed ring keyed by frame number: frame f lives
/// at `f % OVERLAY_FRAMES`; a slot's tag says which frame its values belong to, so a slot left
/// from an older frame reads as "no value". Values may arrive late and out of order (GPU times
/// come a few frames after the frame); values for frames older than the ring are dropped.
///
/// # Examples
///
/// ```
/// use vkhip::overlay::{top_ms, OverlayHistory, Series, OVERLAY_FRAMES, REFERENCE_MS};
///
/// let mut h = OverlayHistory::new();
/// assert!(h.is_empty());
/// h.set(10, Series::Frame, 16.0);
/// h.set(9, Series::Draw, 4.0); // GPU times arrive late: still kept
/// h.set(10, Series::Compute, f32::NAN); // ignored
/// assert_eq!(h.latest(), 10);
/// assert_eq!(h.get(10, Series::Frame), Some(16.0));
/// assert_eq!(h.get(9, Series::Draw), Some(4.0));
/// assert_eq!(h.get(10, Series::Compute), None);
/// assert_eq!(h.max_ms(), 16.0);
/// // Constant memory: a frame older than the ring is gone.
/// h.set(10 + OVERLAY_FRAMES as u64, Series::Frame, 1.0);
/// assert_eq!(h.get(10, Series::Frame), None);
/// // The scale: at least two 60 Hz frames, whole frames, 20% headroom.
/// assert_eq!(top_ms(1.0), 2.0 * REFERENCE_MS);
/// assert_eq!(top_ms(30.0), 3.0 * REFERENCE_MS);
/// ```
#[derive(Clone, Debug)]
pub struct OverlayHistory {
    tags: Box<[u64; OVERLAY_FRAMES]>,
    values: Box<[[f32; 3]; OVERLAY_FRAMES]>,
    latest: Option<u64>,
}

impl Default for OverlayHistory {
    fn default() -> Self {
        OverlayHistory {
            tags: Box::new([EMPTY; OVERLAY_FRAMES]),
            values: Box::new([[f32::NAN; 3]; OVERLAY_FRAMES]),
            latest: None,
        }
    }
}

impl OverlayHistory {
    pub fn new() -> Self {
        Self::default()
    }

    /// Record `ms` for `frame`'s `series`. Ignored when `ms` is NaN, infinite or negative, or when
    /// `frame` is older than the ring (`frame + OVERLAY_FRAMES <= latest`). A newer frame moves
    /// [`Self::latest`] forward; frames skipped on the way read as "no value".
    pub fn set(&mut self, frame: u64, series: Series, ms: f32) {
        if !(ms.is_finite() && ms >= 0.0) || frame == EMPTY {
            return;
        }
        match self.latest {
            Some(latest) if frame.saturating_add(OVERLAY_FRAMES as u64) <= latest => return,
            Some(latest) if frame <= latest => {}
            _ => self.latest = Some(frame),
        }
        let i = (frame % OVERLAY_FRAMES as u64) as usize;
        if self.tags[i] != frame {
            // The slot held an older frame (or nothing): start this frame's values afresh.
            self.tags[i] = frame;
            self.values[i] = [f32::NAN; 3];
        }
        self.values[i][series.index()] = ms;
    }

    /// The newest frame that has a value (0 before any).
    pub fn latest(&self) -> u64 {
        self.latest.unwrap_or(0)
    }

    /// Whether any value was recorded yet.
    pub fn is_empty(&self) -> bool {
        self.latest.is_none()
    }

    /// `frame`'s value of `series`, if it was recorded and is still in the ring.
    pub fn get(&self, frame: u64, series: Series) -> Option<f32> {
        let latest = self.latest?;
        if frame > latest || frame.saturating_add(OVERLAY_FRAMES as u64) <= latest {
            return None;
        }
        let i = (frame % OVERLAY_FRAMES as u64) as usize;
        let v = self.values[i][series.index()];
        (self.tags[i] == frame && !v.is_nan()).then_some(v)
    }

    /// The frames the graph shows, oldest first: the [`OVERLAY_FRAMES`] frames ending at
    /// [`Self::latest`] (those before frame 0 do not exist and read as "no value").
    fn columns(&self) -> impl Iterator<Item = Option<u64>> + '_ {
        let end = self.latest.map_or(0, |l| l + 1);
        let first = end as i128 - OVERLAY_FRAMES as i128;
        (0..OVERLAY_FRAMES as i128)
            .map(move |i| u64::try_from(first + i).ok().filter(|_| self.latest.is_some()))
    }

    /// Fill `out` (one `[frame, draw, compute, unused]` per column, oldest first, as
    /// `shaders/overlay.frag` reads them) with the shown frames; -1 marks "no value". `out` should
    /// hold [`OVERLAY_FRAMES`] samples; extra ones are set to "no value", missing ones cut off
    /// the oldest columns.
    pub fn write_samples(&self, out: &mut [[f32; 4]]) {
        out.fill([-1.0; 4]);
        let skip = OVERLAY_FRAMES.saturating_sub(out.len());
        for (sample, frame) in out.iter_mut().zip(self.columns().skip(skip)) {
            let Some(frame) = frame else { continue };
            for s in Series::ALL {
                sample[s.index()] = self.get(frame, s).unwrap_or(-1.0);
            }
        }
    }

    /// The largest value shown (0 when there is none).
    pub fn max_ms(&self) -> f32 {
        self.columns()
            .flatten()
            .flat_map(|f| Series::ALL.map(|s| self.get(f, s)))
            .flatten()
            .fold(0.0, f32::max)
    }
}

/// The graph's top edge for a largest value of `max_ms` (see the module note).
pub fn top_ms(max_ms: f32) -> f32 {
    let frames = (1.2 * max_ms / REFERENCE_MS).ceil();
    frames.clamp(MIN_TOP_FRAMES, MAX_TOP_FRAMES) * REFERENCE_MS
}

/// A rectangle in pixels (origin top-left).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

impl PixelRect {
    /// The rectangle in Vulkan NDC of a `width` × `height` viewport: `[x0, y0, x1, y1]`.
    pub fn to_ndc(self, width: u32, height: u32) -> [f32; 4] {
        let (w, h) = (width.max(1) as f32, height.max(1) as f32);
        [
            2.0 * self.x as f32 / w - 1.0,
            2.0 * self.y as f32 / h - 1.0,
            2.0 * (self.x + self.width) as f32 / w - 1.0,
            2.0 * (self.y + self.height) as f32 / h - 1.0,
        ]
    }

    /// Whether pixel `(x, y)` lies inside.
    pub fn contains(self, x: u32, y: u32) -> bool {
        x >= self.x && x < self.x + self.width && y >= self.y && y < self.y + self.height
    }
}

/// Where the overlay goes in a `width` × `height` viewport: [`OVERLAY_SIZE`] of it, in the
/// bottom-left corner, [`OVERLAY_MARGIN`] pixels from the edges (less in a tiny viewport).
pub fn overlay_rect(width: u32, height: u32) -> PixelRect {
    let margin = OVERLAY_MARGIN.min(width / 20).min(height / 20);
    let w = ((width as f32 * OVERLAY_SIZE.0).round() as u32).max(1);
    let h = ((height as f32 * OVERLAY_SIZE.1).round() as u32).max(1);
    PixelRect { x: margin, y: height.saturating_sub(margin + h), width: w, height: h }
}

/// The overlay's state on a render thread: whether it is shown, and the history it draws, fed
/// from the frame starts and from the profiler's closed frames.
#[derive(Debug, Default)]
pub struct OverlayFeed {
    /// Whether the overlay is drawn.
    pub visible: bool,
    pub history: OverlayHistory,
    /// The last frame started and its start, host nanoseconds.
    last_start: Option<(u64, u64)>,
}

impl OverlayFeed {
    pub fn new(visible: bool) -> Self {
        OverlayFeed { visible, ..Self::default() }
    }

    /// Frame `frame` starts at `start_ns` (host nanoseconds, e.g.
    /// [`crate::profile::clock::host_now_ns`]): the previous frame's period becomes its
    /// [`Series::Frame`].
    pub fn frame_started(&mut self, frame: u64, start_ns: u64) {
        if let Some((prev, at)) = self.last_start.filter(|&(prev, at)| prev < frame && at <= start_ns) {
            self.history.set(prev, Series::Frame, (start_ns - at) as f32 / 1e6);
        }
        self.last_start = Some((frame, start_ns));
    }

    /// A frame the profiler closed: its draw and compute times.
    pub fn profiled(&mut self, f: &FrameFigures) {
        let ms = |ns: u64| ns as f32 / 1e6;
        if let Some(ns) = f.draw_ns {
            self.history.set(f.frame, Series::Draw, ms(ns));
        }
        if let Some(ns) = f.compute_ns {
            self.history.set(f.frame, Series::Compute, ms(ns));
        }
    }

    /// The history to draw this frame, or `None` while hidden.
    pub fn shown(&self) -> Option<&OverlayHistory> {
        self.visible.then_some(&self.history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: u64 = OVERLAY_FRAMES as u64;

    #[test]
    fn empty_history_has_no_values() {
        let h = OverlayHistory::new();
        assert!(h.is_empty());
        assert_eq!(h.latest(), 0);
        assert_eq!(h.get(0, Series::Frame), None);
        let mut out = vec![[0.0; 4]; OVERLAY_FRAMES];
        h.write_samples(&mut out);
        assert!(out.iter().all(|s| *s == [-1.0; 4]));
        assert_eq!(h.max_ms(), 0.0);
    }

    #[test]
    fn values_land_in_their_frame_and_series() {
        let mut h = OverlayHistory::new();
        h.set(0, Series::Frame, 16.0);
        h.set(1, Series::Frame, 17.0);
        h.set(1, Series::Draw, 3.0);
        assert_eq!(h.latest(), 1);
        assert_eq!(h.get(0, Series::Frame), Some(16.0));
        assert_eq!(h.get(1, Series::Frame), Some(17.0));
        assert_eq!(h.get(1, Series::Draw), Some(3.0));
        assert_eq!(h.get(1, Series::Compute), None);
        assert_eq!(h.get(2, Series::Frame), None);
        let mut out = vec![[0.0; 4]; OVERLAY_FRAMES];
        h.write_samples(&mut out);
        // Newest on the right: frame 1 is the last column, frame 0 the one before.
        assert_eq!(out[OVERLAY_FRAMES - 1], [17.0, 3.0, -1.0, -1.0]);
        assert_eq!(out[OVERLAY_FRAMES - 2], [16.0, -1.0, -1.0, -1.0]);
        assert!(out[..OVERLAY_FRAMES - 2].iter().all(|s| *s == [-1.0; 4]));
        assert_eq!(h.max_ms(), 17.0);
    }

    #[test]
    fn ring_wraps_and_old_frames_read_as_missing() {
        let mut h = OverlayHistory::new();
        for f in 0..3 * N + 5 {
            h.set(f, Series::Frame, f as f32);
        }
        let latest = 3 * N + 4;
        assert_eq!(h.latest(), latest);
        // The ring holds exactly the last N frames.
        assert_eq!(h.get(latest - N + 1, Series::Frame), Some((latest - N + 1) as f32));
        assert_eq!(h.get(latest - N, Series::Frame), None);
        let mut out = vec![[0.0; 4]; OVERLAY_FRAMES];
        h.write_samples(&mut out);
        for (i, s) in out.iter().enumerate() {
            assert_eq!(s[0], (latest + 1 - N + i as u64) as f32, "column {i}");
        }
        // A jump forward: the frames skipped have no value, even where the slot held older ones.
        h.set(latest + 10, Series::Frame, 1.0);
        assert_eq!(h.get(latest + 5, Series::Frame), None);
        assert_eq!(h.get(latest + 10 - N + 1, Series::Frame), Some((latest + 10 - N + 1) as f32));
        h.set(latest + 10 + 2 * N, Series::Draw, 2.0);
        h.write_samples(&mut out);
        assert_eq!(out.iter().filter(|s| s[0] >= 0.0 || s[1] >= 0.0).count(), 1);
        assert_eq!(out[OVERLAY_FRAMES - 1], [-1.0, 2.0, -1.0, -1.0]);
    }

    #[test]
    fn late_values_fill_earlier_frames_still_in_the_ring() {
        let mut h = OverlayHistory::new();
        for f in 0..10 {
            h.set(f, Series::Frame, 10.0);
        }
        // GPU times arrive a few frames late.
        h.set(7, Series::Draw, 4.0);
        assert_eq!(h.latest(), 9);
        assert_eq!(h.get(7, Series::Draw), Some(4.0));
        assert_eq!(h.get(7, Series::Frame), Some(10.0), "a late value keeps the frame's others");
        let mut h = OverlayHistory::new();
        for f in 0..2 * N {
            h.set(f, Series::Frame, 1.0);
        }
        let latest = 2 * N - 1;
        h.set(latest - N + 1, Series::Draw, 4.0); // the oldest frame still in the ring
        assert_eq!(h.get(latest - N + 1, Series::Draw), Some(4.0));
        assert_eq!(h.get(latest - N + 1, Series::Frame), Some(1.0));
    }

    #[test]
    fn values_older_than_the_ring_and_bad_values_are_dropped() {
        let mut h = OverlayHistory::new();
        h.set(2 * N, Series::Frame, 1.0);
        h.set(N, Series::Draw, 9.0); // 2N - N = N frames old: out of the ring
        h.set(N, Series::Frame, 9.0);
        assert_eq!(h.get(N, Series::Draw), None);
        // Its slot (N % N == 0 == 2N % N) still holds frame 2N's value.
        assert_eq!(h.get(2 * N, Series::Frame), Some(1.0));
        assert_eq!(h.get(2 * N, Series::Draw), None);
        h.set(2 * N, Series::Draw, f32::NAN);
        h.set(2 * N, Series::Draw, -1.0);
        h.set(2 * N, Series::Draw, f32::INFINITY);
        assert_eq!(h.get(2 * N, Series::Draw), None);
        h.set(u64::MAX, Series::Frame, 1.0);
        assert_eq!(h.latest(), 2 * N);
        assert_eq!(h.max_ms(), 1.0);
    }

    #[test]
    fn short_and_long_sample_buffers() {
        let mut h = OverlayHistory::new();
        for f in 0..N {
            h.set(f, Series::Compute, f as f32);
        }
        let mut short = [[0.0; 4]; 4];
        h.write_samples(&mut short);
        assert_eq!(short.map(|s| s[2]), [(N - 4) as f32, (N - 3) as f32, (N - 2) as f32, (N - 1) as f32]);
        let mut long = vec![[0.0; 4]; OVERLAY_FRAMES + 3];
        h.write_samples(&mut long);
        assert_eq!(long[0][2], 0.0);
        assert_eq!(long[OVERLAY_FRAMES][2], -1.0);
    }

    #[test]
    fn scale_snaps_to_frames_between_the_limits() {
        assert_eq!(top_ms(0.0), 2.0 * REFERENCE_MS);
        assert_eq!(top_ms(16.0), 2.0 * REFERENCE_MS);
        assert_eq!(top_ms(30.0), 3.0 * REFERENCE_MS);
        assert_eq!(top_ms(1e6), 8.0 * REFERENCE_MS);
        for v in [0.5f32, 14.0, 27.7, 40.0, 100.0] {
            let top = top_ms(v);
            assert!(top >= (1.2 * v).min(8.0 * REFERENCE_MS) - 1e-3, "{v} → {top}");
        }
    }

    #[test]
    fn rect_is_bottom_left_and_maps_to_ndc() {
        let r = overlay_rect(1280, 720);
        assert_eq!(r, PixelRect { x: 12, y: 720 - 12 - 216, width: 512, height: 216 });
        assert!(r.contains(12, 719 - 12) && !r.contains(11, 600) && !r.contains(12, 720 - 12));
        let ndc = r.to_ndc(1280, 720);
        assert!((ndc[0] - (-1.0 + 24.0 / 1280.0)).abs() < 1e-6);
        assert!((ndc[3] - (1.0 - 24.0 / 720.0)).abs() < 1e-6);
        let tiny = overlay_rect(10, 10);
        assert!(tiny.x + tiny.width <= 10 && tiny.y + tiny.height <= 10 && tiny.width >= 1);
    }

    #[test]
    fn feed_records_frame_periods_and_draw_times() {
        let mut feed = OverlayFeed::new(false);
        assert!(feed.shown().is_none());
        feed.frame_started(0, 5_000_000_000);
        feed.frame_started(1, 5_020_000_000);
        feed.profiled(&FrameFigures {
            frame: 0,
            draw_ns: Some(5_000_000),
            compute_ns: Some(250_000),
            ..Default::default()
        });
        feed.profiled(&FrameFigures { frame: 1, ..Default::default() });
        let h = &feed.history;
        assert!((h.get(0, Series::Frame).unwrap() - 20.0).abs() < 1e-3);
        assert_eq!(h.get(0, Series::Draw), Some(5.0));
        assert_eq!(h.get(0, Series::Compute), Some(0.25));
        assert_eq!(h.get(1, Series::Draw), None);
        assert_eq!(h.get(1, Series::Frame), None, "frame 1's period ends when frame 2 starts");
        feed.visible = true;
        assert!(feed.shown().is_some());
    }

    #[test]
    fn colours_match_the_shader() {
        let src = include_str!("../shaders/overlay.frag");
        let vec = |c: [f32; 3]| format!("vec3({:?}, {:?}, {:?})", c[0], c[1], c[2]);
        for (name, c) in [
            ("FRAME_COLOR", Series::Frame.color()),
            ("DRAW_COLOR", Series::Draw.color()),
            ("COMPUTE_COLOR", Series::Compute.color()),
            ("REFERENCE_COLOR", REFERENCE_COLOR),
            ("BORDER_COLOR", BORDER_COLOR),
            ("FRAME_BAND_COLOR", FRAME_BAND_COLOR),
        ] {
            let line = format!("const vec3 {name} = {};", vec(c));
            assert!(src.contains(&line), "overlay.frag must contain `{line}`");
        }
        let [r, g, b] = BACKGROUND;
        let line = format!("const vec4 BACKGROUND = vec4({r:?}, {g:?}, {b:?}, {BACKGROUND_ALPHA:?});");
        assert!(src.contains(&line), "overlay.frag must contain `{line}`");
    }
}
