//! The embedded viewer in a window (Xvfb): `vkhip::embed::view` on the main thread opens the
//! app's window, draws the caller's heights and returns the window's report; a second view in
//! the same process opens a window again (winit makes one event loop per process: the app keeps
//! it and runs it on demand). Its own `main` (no test harness), since winit's event loop belongs
//! to the main thread.

mod common;
#[path = "common/x11.rs"]
mod x11;

use std::sync::{Arc, Mutex};
use vkhip::embed::{view, HeightTarget, HeightWriter, ViewOptions, WriterApi, WriterError};
use vkhip::sim::{fill_reference, Grid, WaveParams};

struct Wave(Arc<Mutex<Vec<u64>>>);

impl HeightWriter for Wave {
    fn write(&mut self, frame: u64, time_s: f64, target: HeightTarget<'_>) -> Result<(), WriterError> {
        let HeightTarget::Host { heights, cols, rows, .. } = target else {
            return Err(WriterError("expected the host path".into()));
        };
        self.0.lock().unwrap().push(frame);
        fill_reference(&WaveParams::at_time(Grid { width: cols, height: rows }, time_s), heights);
        Ok(())
    }
}

fn main() {
    if !x11::tools_present("embed_window") {
        return;
    }
    let x = x11::Xvfb::start();
    // Before any thread of this process starts.
    std::env::set_var("DISPLAY", &x.display);
    std::env::remove_var("WAYLAND_DISPLAY");
    for run in 0..2 {
        let calls = Arc::new(Mutex::new(Vec::new()));
        let args = ["--frames", "10", "--grid", "32x32", "--size", "160x120"];
        let outcome = view(&ViewOptions::new(args, WriterApi::Host), Box::new(Wave(calls.clone())))
            .unwrap_or_else(|e| panic!("window run {run}: {e}"));
        assert_eq!(outcome.frames, 10, "window run {run}");
        assert!(outcome.report.contains("(window 160x120)"), "window run {run}:\n{}", outcome.report);
        assert_eq!(outcome.capture, None, "a window run writes no PNG");
        assert_eq!(*calls.lock().unwrap(), (0..10).collect::<Vec<u64>>(), "window run {run}");
    }
    println!("embed_window: two window runs in one process: OK");
}
