//! The Perfetto/Chrome trace: layout, round trip (write → read → the same timeline), the ring,
//! and the reader's errors (the app's exit 2).

mod synthetic;

use serde_json::{json, Value};
use synthetic::*;
use vkhip_profile::check::check;
use vkhip_profile::perfetto::{self, document, read, read_with_limit, TraceError, TraceRing};
use vkhip_profile::Sink;

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vkhip-profile-perfetto-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("trace.json")
}

#[test]
fn a_trace_reads_back_as_the_same_timeline() {
    let tl = correct(20);
    let path = temp("round-trip");
    let extra = json!({"grid": 256, "sync": "external"});
    perfetto::write(&tl, &path, &extra).unwrap();
    let (back, extra_back) = read(&path).unwrap();
    assert_eq!(back, tl);
    assert_eq!(extra_back, extra);
    // Nothing else left beside it (the temporary file was renamed).
    assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn the_layout_has_a_process_per_api_a_thread_per_track_and_flows_for_handoffs() {
    let tl = correct(10);
    let doc = document(&tl, &json!({}));
    let events = doc["traceEvents"].as_array().unwrap();
    let meta = |name: &str| -> Vec<(u64, Option<u64>, String)> {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name)
            .map(|e| {
                (
                    e["pid"].as_u64().unwrap(),
                    e["tid"].as_u64(),
                    e["args"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        meta("process_name"),
        [
            (1, None, "host threads".into()),
            (2, None, "vulkan queues".into()),
            (3, None, "cuda streams".into())
        ]
    );
    assert_eq!(
        meta("thread_name"),
        [(1, Some(1), "main".into()), (3, Some(2), "sim".into()), (2, Some(3), "graphics".into())]
    );
    let sine =
        events.iter().find(|e| e["ph"] == "X" && e["name"] == "sine" && e["args"]["frame"] == 1).unwrap();
    assert_eq!((sine["pid"].as_u64(), sine["tid"].as_u64()), (Some(3), Some(2)));
    assert_eq!(sine["args"]["writes"], json!(["heights[1]"]));
    assert_eq!(sine["args"]["reads"], json!([]));
    assert_eq!(sine["dur"], 200.0);
    // Frame 1's kernel starts 1100 µs after the first event (the host's record at 20 µs).
    assert_eq!(sine["ts"], 1080.0);
    let waits: Vec<&Value> = events.iter().filter(|e| e["ph"] == "i" && e["args"]["op"] == "wait").collect();
    assert!(waits.iter().any(|w| w["args"]["sem"] == "written" && w["args"]["value"] == 2 && w["tid"] == 3));
    // Host operations carry their own time; GPU operations do not.
    assert!(waits.iter().filter(|w| w["tid"] == 1).all(|w| w["args"]["host_ns"].is_u64()));
    assert!(waits.iter().filter(|w| w["tid"] != 1).all(|w| w["args"].get("host_ns").is_none()));
    // Flows: `written` every frame, `read` from frame K; internal semaphores are not hand-offs.
    let flows = |ph: &str, name: &str| events.iter().filter(|e| e["ph"] == ph && e["name"] == name).count();
    assert_eq!((flows("s", "written"), flows("f", "written")), (10, 10));
    assert_eq!((flows("s", "read"), flows("f", "read")), (10 - K as usize, 10 - K as usize));
    assert_eq!(flows("s", "submit:main→sim") + flows("s", "join:graphics→main"), 0);
    // A flow starts inside the kernel whose end is the signal, and ends at the draw's start.
    let s = events.iter().find(|e| e["ph"] == "s" && e["name"] == "written").unwrap();
    let f = events.iter().find(|e| e["ph"] == "f" && e["id"] == s["id"]).unwrap();
    assert_eq!((s["tid"].as_u64(), f["tid"].as_u64(), f["bp"].as_str()), (Some(2), Some(3), Some("e")));
    assert_eq!((s["ts"].as_f64().unwrap(), f["ts"].as_f64().unwrap()), (279.999, 330.0));
    let other = &doc["otherData"];
    assert_eq!(other["vkhip_profile"], 1);
    assert_eq!(
        other["tracks"][1],
        json!({"name": "sim", "api": "cuda", "clock": "GPU clock, calibrated", "accuracy_ns": 3500, "clock_domain": 0})
    );
    assert_eq!(other["semaphores"][2], json!({"name": "submit:main→sim", "internal": true}));
    assert_eq!(other["frame_ends"][0], json!([0, ns(900.0)]));
}

#[test]
fn the_ring_keeps_the_last_frames_and_its_trace_checks_clean() {
    let tl = correct(200);
    let mut ring = TraceRing::new(50);
    ring.set_clock_notes(tl.clock_notes.clone());
    tl.replay(&mut ring);
    assert_eq!(ring.dropped_frames(), 150);
    let kept = ring.timeline();
    assert_eq!(kept, tail(&tl, 150));
    let path = temp("ring");
    ring.write(&path, &json!({"run": "ring"})).unwrap();
    let (back, extra) = read(&path).unwrap();
    assert_eq!(back, kept);
    assert_eq!(extra, json!({"run": "ring"}));
    let raw: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(raw["otherData"]["ring"]["dropped_frames"], 150);
    // The trace's first waits refer to signals before it: unverifiable, not violations.
    let r = check(&back);
    assert!(r.is_clean(), "{r}");
    assert_eq!(r.unverifiable.before_trace, 5);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn the_ring_stays_bounded_without_frame_ends() {
    let tl = correct(300);
    let mut ring = TraceRing::new(10);
    ring.names(&tl.names);
    for (t, items) in tl.items.iter().enumerate() {
        for item in items {
            ring.item(vkhip_profile::TrackId(t as u32), item);
        }
    }
    let kept = ring.timeline();
    assert!(kept.items.iter().flatten().all(|i| i.frame() >= 290));
    assert!(ring.dropped_items() > 0);
}

fn write_bytes(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let path = temp(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn read_err(name: &str, bytes: &[u8]) -> (TraceError, String) {
    let path = write_bytes(name, bytes);
    let err = read(&path).unwrap_err();
    let text = err.to_string();
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    (err, text)
}

#[test]
fn the_reader_refuses_what_is_not_a_trace_with_one_error_type() {
    let (err, text) = read_err("not-json", b"<html>not a trace</html>");
    assert!(matches!(err, TraceError::NotJson { .. }), "{err:?}");
    assert!(text.ends_with("trace.json is not JSON: expected value at line 1 column 1"), "{text}");

    for (name, doc) in [
        ("no-events", "{\"otherData\": {}}"),
        ("empty-events", "{\"traceEvents\": []}"),
        ("events-not-list", "{\"traceEvents\": 3}"),
    ] {
        let (err, text) = read_err(name, doc.as_bytes());
        assert!(matches!(err, TraceError::NoEvents { .. }), "{name}: {err:?}");
        assert!(
            text.ends_with("holds no trace events (traceEvents is missing, not a list, or empty)"),
            "{text}"
        );
    }

    let (err, text) =
        read_err("foreign", br#"{"traceEvents": [{"ph": "X", "name": "a", "ts": 0, "dur": 1}]}"#);
    assert!(matches!(err, TraceError::Format { .. }), "{err:?}");
    assert!(text.ends_with("is not a vkhip-profile trace: it has no otherData"), "{text}");

    // A trace of this crate with a damaged event names the event.
    let mut doc = document(&correct(2), &json!({}));
    let events = doc["traceEvents"].as_array_mut().unwrap();
    let i = events.iter().position(|e| e["ph"] == "X").unwrap();
    events[i]["args"].as_object_mut().unwrap().remove("seq");
    let (err, text) = read_err("damaged", doc.to_string().as_bytes());
    assert!(matches!(err, TraceError::Format { .. }), "{err:?}");
    assert!(text.contains(&format!("event {i} (")) && text.ends_with("args.seq is missing"), "{text}");

    // Times a writer could not have written are refused, naming the event, never wrapped or
    // saturated (a hand-edited 1e308 µs once panicked the reader on overflow).
    for (name, key, value, why) in [
        ("huge-ts", "ts", json!(1e308), "ts is 1e+308 µs: not a time from 0 to 1e13 µs"),
        ("negative-dur", "dur", json!(-5.0), "dur is -5.0 µs: not a time from 0 to 1e13 µs"),
    ] {
        let mut doc = document(&correct(2), &json!({}));
        let events = doc["traceEvents"].as_array_mut().unwrap();
        let i = events.iter().position(|e| e["ph"] == "X").unwrap();
        events[i][key] = value;
        let (err, text) = read_err(name, doc.to_string().as_bytes());
        assert!(matches!(err, TraceError::Format { .. }), "{name}: {err:?}");
        assert!(text.contains(&format!("event {i} (")) && text.contains(why), "{name}: {text}");
    }

    let missing = std::env::temp_dir().join("vkhip-profile-no-such-dir/trace.json");
    let err = read(&missing).unwrap_err();
    assert!(matches!(err, TraceError::Read { .. }));
    assert!(err.to_string().starts_with("cannot read the trace "), "{err}");
}

#[test]
fn the_reader_refuses_a_file_over_its_limit() {
    let path = temp("limit");
    perfetto::write(&correct(5), &path, &json!({})).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    let err = read_with_limit(&path, 1000).unwrap_err();
    assert!(matches!(err, TraceError::TooLarge { size: s, limit: 1000, .. } if s == size), "{err:?}");
    assert!(
        err.to_string().ends_with(&format!("is {size} bytes, over the trace reader's limit of 1000 bytes")),
        "{err}"
    );
    assert!(read_with_limit(&path, size).is_ok(), "a file of exactly the limit is read");
    assert_eq!(perfetto::MAX_TRACE_BYTES, 1 << 30);
    std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let path = std::env::temp_dir().join("vkhip-profile-missing-dir/sub/trace.json");
    let err = perfetto::write(&correct(2), &path, &json!({})).unwrap_err();
    assert!(matches!(err, TraceError::Write { .. }));
    assert!(!path.exists());
}
