//! The frame-time overlay (`--overlay`, key G): headless captures with and without it differ only
//! inside its rectangle, where every pixel is one of its colours; under Xvfb a window started with
//! `--overlay` shows it in a screenshot taken from outside, and G (sent with xdotool) hides and
//! shows it again. Both runs are validation-clean.

mod common;
#[path = "common/x11.rs"]
mod x11;

use common::*;
use std::collections::HashMap;
use std::process::Stdio;
use std::time::{Duration, Instant};
use vkhip::image::Rgba;
use vkhip::overlay::{
    overlay_rect, PixelRect, Series, BACKGROUND, BACKGROUND_ALPHA, BORDER_COLOR, FRAME_BAND_COLOR,
    REFERENCE_COLOR,
};

/// What an overlay pixel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Class {
    Border,
    Band,
    Series(Series),
    Reference,
    /// The translucent background over whatever lies beneath.
    Background,
    Other,
}

fn rgb8(c: [f32; 3]) -> [u8; 3] {
    c.map(|v| (v * 255.0).round() as u8)
}

fn near(p: [u8; 4], c: [u8; 3], tolerance: u8) -> bool {
    (0..3).all(|i| p[i].abs_diff(c[i]) <= tolerance)
}

/// Classify `p`. With `under` (the same pixel without the overlay) the background must be exactly
/// the blend of BACKGROUND over it; without, any pixel no brighter than that blend can be.
fn classify(p: [u8; 4], under: Option<[u8; 4]>) -> Class {
    let opaque = [
        (Class::Reference, rgb8(REFERENCE_COLOR)),
        (Class::Border, rgb8(BORDER_COLOR)),
        (Class::Band, rgb8(FRAME_BAND_COLOR)),
        (Class::Series(Series::Frame), rgb8(Series::Frame.color())),
        (Class::Series(Series::Draw), rgb8(Series::Draw.color())),
        (Class::Series(Series::Compute), rgb8(Series::Compute.color())),
    ];
    if let Some(&(class, _)) = opaque.iter().find(|(_, c)| near(p, *c, 2)) {
        return class;
    }
    let a = BACKGROUND_ALPHA;
    let background = match under {
        Some(u) => (0..3).all(|i| {
            let want = a * BACKGROUND[i] * 255.0 + (1.0 - a) * u[i] as f32;
            (p[i] as f32 - want).abs() <= 2.5
        }),
        None => (0..3).all(|i| p[i] as f32 <= a * BACKGROUND[i] * 255.0 + (1.0 - a) * 255.0 + 2.0),
    };
    if background {
        Class::Background
    } else {
        Class::Other
    }
}

/// Per-class counts over `rect`, and the rows where the reference colour runs across.
struct Analysis {
    counts: HashMap<Class, usize>,
    /// Rows (image y) where at least 30% of the rectangle's pixels have the reference colour.
    reference_rows: Vec<u32>,
    /// Fraction of the rectangle's top row, in the columns without data, that has the border colour.
    top_border: f64,
    /// Columns (image x) that show frame data (band or any series).
    data_columns: Vec<u32>,
}

impl Analysis {
    fn of(img: &Rgba, rect: PixelRect, under: Option<&Rgba>) -> Analysis {
        let mut counts = HashMap::new();
        let mut reference_rows = Vec::new();
        let mut data_columns = std::collections::BTreeSet::new();
        let mut top = Vec::new();
        for y in rect.y..rect.y + rect.height {
            let mut reference = 0;
            for x in rect.x..rect.x + rect.width {
                let class = classify(img.pixel(x, y), under.map(|u| u.pixel(x, y)));
                *counts.entry(class).or_insert(0) += 1;
                match class {
                    Class::Reference => reference += 1,
                    Class::Band | Class::Series(_) => {
                        data_columns.insert(x);
                    }
                    Class::Border if y == rect.y => top.push(x),
                    _ => {}
                }
            }
            if reference * 10 >= rect.width * 3 {
                reference_rows.push(y);
            }
        }
        // A frame slower than the scale's top is clipped there and covers the border row (a loaded
        // machine makes some): the border is judged in the columns without data.
        let free = (rect.x..rect.x + rect.width).filter(|x| !data_columns.contains(x)).count().max(1);
        let top = top.iter().filter(|x| !data_columns.contains(*x)).count();
        Analysis {
            counts,
            reference_rows,
            top_border: top as f64 / free as f64,
            data_columns: data_columns.into_iter().collect(),
        }
    }

    fn count(&self, class: Class) -> usize {
        self.counts.get(&class).copied().unwrap_or(0)
    }

    /// The overlay is there: border along the top, a reference line (1 to 3 rows) at 16.7 ms of a
    /// scale whose top is 2 to 8 frames of 16.7 ms, data drawn, and mostly dark background.
    fn check_shown(&self, rect: PixelRect) -> Result<(), String> {
        let counts = &self.counts;
        if self.top_border <= 0.9 {
            return Err(format!("the border is missing ({:.0}% of the top row)", self.top_border * 100.0));
        }
        let rows = &self.reference_rows;
        if rows.is_empty() || rows.len() > 3 || rows[rows.len() - 1] - rows[0] >= 3 {
            return Err(format!("want one reference line 1-3 rows thick, got rows {rows:?} ({counts:?})"));
        }
        // The line is at 16.7 ms, i.e. height / k above the bottom for a top of k frames.
        let centre = (rows[0] + rows[rows.len() - 1]) as f32 / 2.0 + 0.5;
        let bottom = (rect.y + rect.height) as f32;
        if !(2..=8).any(|k| (bottom - rect.height as f32 / k as f32 - centre).abs() <= 1.5) {
            return Err(format!(
                "the reference line at row {centre} is not at 16.7 ms of a 2..8-frame scale"
            ));
        }
        if self.count(Class::Band) + self.count(Class::Series(Series::Frame)) <= 20 {
            return Err(format!("no frame times: {counts:?}"));
        }
        let area = (rect.width * rect.height) as usize;
        if self.count(Class::Background) * 5 <= area {
            return Err(format!("too little background: {counts:?}"));
        }
        Ok(())
    }

    /// No overlay: no border row, no reference line, no frame-time band.
    fn check_absent(&self) -> Result<(), String> {
        if self.top_border >= 0.1 {
            return Err(format!("a border row is there ({:.0}%)", self.top_border * 100.0));
        }
        if !self.reference_rows.is_empty() {
            return Err(format!("a reference line at rows {:?}", self.reference_rows));
        }
        if self.count(Class::Band) >= 20 {
            return Err(format!("a frame-time band: {:?}", self.counts));
        }
        Ok(())
    }

    fn assert_shown(&self, rect: PixelRect, what: &str) {
        if let Err(e) = self.check_shown(rect) {
            panic!("{what}: {e}");
        }
    }

    fn assert_absent(&self, what: &str) {
        if let Err(e) = self.check_absent() {
            panic!("{what}: {e}");
        }
    }
}

fn assert_validation_clean(report: &str, what: &str, stderr: &str) {
    let v = report.lines().rfind(|l| l.starts_with("validation: ")).unwrap_or_default();
    assert!(v.starts_with("validation: 0 errors, 0 warnings"), "{what}: {v:?}\n{report}\n{stderr}");
}

#[test]
fn headless_overlay_is_drawn_in_its_rectangle_only() {
    let dir = temp_dir("overlay-headless");
    let (plain, over) = (dir.join("plain.png"), dir.join("overlay.png"));
    let args =
        ["--headless", "--frames", "60", "--size", "640x360", "--grid", "96x80", "--backend", "vulkan"];
    let o = run(vkhip().args(args).arg("--capture").arg(&plain));
    assert_ok(&o, "headless run without the overlay");
    let validation = require_part(
        "headless_overlay_is_drawn_in_its_rectangle_only",
        "validation part",
        Component::ValidationLayer,
    );
    let mut cmd = vkhip();
    cmd.args(args).arg("--overlay");
    if validation {
        cmd.arg("--validation");
    }
    let o = run(cmd.arg("--capture").arg(&over));
    assert_ok(&o, "headless run with --overlay");
    if validation {
        assert_validation_clean(&stdout(&o), "--overlay", &stderr(&o));
    }
    let (plain, over) = (Rgba::read_png(&plain).unwrap(), Rgba::read_png(&over).unwrap());
    assert_shows_surface(&over, "overlay capture");

    // Outside the rectangle the two frames are the same (frame time makes them reproducible).
    let rect = overlay_rect(640, 360);
    assert_eq!(rect, PixelRect { x: 12, y: 240, width: 256, height: 108 });
    let mut outside_diff = 0;
    for y in 0..360 {
        for x in 0..640 {
            if !rect.contains(x, y) && !near(over.pixel(x, y), plain.pixel(x, y)[..3].try_into().unwrap(), 1)
            {
                outside_diff += 1;
            }
        }
    }
    assert_eq!(outside_diff, 0, "pixels outside the overlay's rectangle changed");

    // Inside: every pixel is an overlay colour, or the background blended over the plain frame.
    let a = Analysis::of(&over, rect, Some(&plain));
    assert_eq!(a.count(Class::Other), 0, "pixels that are none of the overlay's colours: {:?}", a.counts);
    a.assert_shown(rect, "overlay capture");
    assert!(a.count(Class::Series(Series::Draw)) > 20, "no draw GPU times: {:?}", a.counts);
    assert!(a.count(Class::Series(Series::Compute)) > 20, "no compute times: {:?}", a.counts);
    // 60 frames of a 256-frame graph, newest on the right: data only in the rightmost ~60 columns,
    // and in nearly all of them.
    let first_data = rect.x + rect.width - 64;
    assert!(
        a.data_columns.iter().all(|&x| x >= first_data),
        "data left of column {first_data}: {:?}",
        a.data_columns
    );
    assert!(a.data_columns.len() >= 50, "only {} columns show data", a.data_columns.len());
    // The reference line crosses the empty part of the graph as well.
    let row = a.reference_rows[0];
    let left =
        (rect.x..first_data).filter(|&x| classify(over.pixel(x, row), None) == Class::Reference).count();
    assert_eq!(left, (first_data - rect.x) as usize, "the reference line has gaps");

    // And without --overlay the rectangle shows none of it.
    Analysis::of(&plain, rect, None).assert_absent("capture without --overlay");
}

#[test]
fn window_overlay_shows_with_the_flag_and_g_toggles_it() {
    let test = "window_overlay_shows_with_the_flag_and_g_toggles_it";
    if !x11::tools_present(test) || !require(test, Component::ValidationLayer) {
        return;
    }
    let mut x = x11::Xvfb::start();
    let mut app = vkhip()
        .env("DISPLAY", &x.display)
        .args(["--overlay", "--max-fps", "30", "--size", "640x400", "--grid", "96x80"])
        .args(["--backend", "vulkan", "--validation"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start vkhip");
    let id = x.wait_for_vkhip_window(&mut app);
    let rect = overlay_rect(640, 400);
    let dir = temp_dir("overlay-window");
    // Screenshots until `check` passes (the window may take a while to present on a busy
    // machine, and a key takes a frame to show); the surface must be visible in each.
    let mut expect = |name: &str, check: &dyn Fn(&Analysis) -> Result<(), String>| {
        let png = dir.join(format!("{name}.png"));
        let t0 = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            assert!(app.try_wait().unwrap().is_none(), "vkhip exited early");
            let img = x11::crop(&x.screenshot(), 640, 400);
            let surface = coverage(&img) > 0.15 && distinct_colours(&img) > 200;
            let result = check(&Analysis::of(&img, rect, None)).and_then(|()| {
                if surface {
                    Ok(())
                } else {
                    Err("the surface is not shown".into())
                }
            });
            if result.is_ok() || t0.elapsed() > Duration::from_secs(20) {
                img.write_png(&png).unwrap();
                eprintln!("screenshot: {}", png.display());
                if let Err(e) = result {
                    panic!("{name} ({}): {e}", png.display());
                }
                return;
            }
        }
    };
    let key = |k: &str| {
        let focus = x.xdotool(&["windowfocus", "--sync", &id]);
        assert!(focus.status.success(), "xdotool windowfocus: {}", String::from_utf8_lossy(&focus.stderr));
        let o = x.xdotool(&["key", k]);
        assert!(o.status.success(), "xdotool key {k}: {}", String::from_utf8_lossy(&o.stderr));
    };

    expect("shown", &|a| a.check_shown(rect));
    key("g");
    expect("hidden", &|a| a.check_absent());
    key("g");
    expect("shown-again", &|a| a.check_shown(rect));

    key("Escape");
    let t0 = Instant::now();
    while app.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = app.kill();
            panic!("vkhip did not exit after Escape");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = app.wait_with_output().expect("vkhip finishes");
    assert_ok(&out, "window run with --overlay");
    assert_validation_clean(&stdout(&out), "window --overlay", &stderr(&out));
}
