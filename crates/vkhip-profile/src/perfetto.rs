//! The trace file: Chrome trace-event JSON (what ui.perfetto.dev and chrome://tracing open), a
//! bounded ring [`Sink`] that keeps the last N frames for it, and a reader that turns a trace
//! back into a [`Timeline`] (`vkhip trace check` checks a file written by an earlier run).
//!
//! Layout:
//! - a process per API ([`api_pid`]: 1 host, 2 vulkan, 3 cuda, 4 hip, 5 wgpu), a thread per
//!   track (tid = track id + 1), named by `process_name` / `thread_name` metadata;
//! - a scope is a complete event (`"ph": "X"`), `ts`/`dur` in µs from `otherData.origin_ns`,
//!   `args {frame, seq, depth, reads: [names], writes: [names]}`; `seq` is the item's index in
//!   its track's program order, from which the reader restores that order;
//! - a semaphore operation is an instant (`"ph": "i"`) on its track, `args {seq, sem, value, op,
//!   frame, host_ns?}` (`host_ns` only for host operations: a GPU operation's instant is drawn at
//!   the end of the scope before it, for the eye only);
//! - each hand-off (a wait met by another track's signal, not an internal semaphore) is a flow
//!   (`"ph": "s"` → `"ph": "f"`) from the scope whose end is the signal's time to the waiter's
//!   first scope, matched as the checker matches them;
//! - `otherData {vkhip_profile: 1, origin_ns, tracks: [{name, api, clock, accuracy_ns,
//!   clock_domain}], resources, semaphores: [{name, internal}], clock_notes, frame_ends:
//!   [[frame, ns]], extra}`: `extra` is the caller's JSON (the app's configuration); a ring
//!   adds `ring {frames, dropped_frames, dropped_items}`.
//!
//! Times survive the round trip exactly: µs with a fractional part, relative to the origin, are
//! parsed back to the same nanosecond. The order of a scope's accesses does not: the reader
//! lists its reads, then its writes. Resources and semaphores are named in the file: give them
//! distinct names (the reader resolves a repeated name to its first entry).

use crate::check::{Checker, Handoff};
use crate::model::{
    Access, AccessKind, Api, FrameEnd, Item, Names, Ns, Scope, SemaphoreInfo, Sink, Sync, SyncKind,
};
use crate::model::{Timeline, Track, TrackId};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::Path;

/// The largest trace [`read`] accepts: 1 GiB. (A 3000-frame ring of ten items a frame is
/// about 6 MB; parsing holds the whole document in memory, several times the file's size.)
pub const MAX_TRACE_BYTES: u64 = 1 << 30;

/// The largest `ts` or `dur` the reader accepts, µs: about 116 days (u64 ns from the origin
/// hold 584 years; a trace's times are a run's).
const MAX_US: f64 = 1e13;

/// `otherData.vkhip_profile`: the version of this layout.
pub const FORMAT_VERSION: u64 = 1;

/// Reading or writing a trace failed: the file, not the program it traced, is at fault (the
/// app's exit 2).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read the trace {path}: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("cannot write the trace {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("{path} is {size} bytes, over the trace reader's limit of {limit} bytes")]
    TooLarge { path: String, size: u64, limit: u64 },
    #[error("{path} is not JSON: {source}")]
    NotJson { path: String, source: serde_json::Error },
    #[error("{path} holds no trace events (traceEvents is missing, not a list, or empty)")]
    NoEvents { path: String },
    #[error("{path} is not a vkhip-profile trace: {why}")]
    Format { path: String, why: String },
}

/// The Chrome-trace process of an API: 1 host, 2 vulkan, 3 cuda, 4 hip, 5 wgpu.
pub fn api_pid(api: Api) -> u64 {
    match api {
        Api::Host => 1,
        Api::Vulkan => 2,
        Api::Cuda => 3,
        Api::Hip => 4,
        Api::Wgpu => 5,
    }
}

fn process_name(api: Api) -> &'static str {
    match api {
        Api::Host => "host threads",
        Api::Vulkan => "vulkan queues",
        Api::Cuda => "cuda streams",
        Api::Hip => "hip streams",
        Api::Wgpu => "wgpu queues",
    }
}

/// µs from the origin, exact to the nanosecond.
fn ts(ns: Ns, origin: Ns) -> f64 {
    ns.saturating_sub(origin) as f64 / 1e3
}

fn ns_of(us: f64) -> u64 {
    (us * 1e3).round().max(0.0) as u64
}

/// The trace document of `timeline`, with the caller's `extra` JSON in `otherData.extra`.
pub fn document(timeline: &Timeline, extra: &Value) -> Value {
    let names = &timeline.names;
    let origin = timeline
        .items
        .iter()
        .flatten()
        .filter_map(|item| match item {
            Item::Scope(s) => Some(s.start_ns),
            Item::Sync(s) => s.host_ns,
        })
        .chain(timeline.frame_ends.iter().map(|e| e.host_ns))
        .min()
        .unwrap_or(0);
    let mut events = Vec::new();
    for api in Api::ALL {
        if names.tracks.iter().any(|t| t.api == api) {
            let pid = api_pid(api);
            events.push(
                json!({"ph": "M", "name": "process_name", "pid": pid, "args": {"name": process_name(api)}}),
            );
            events.push(
                json!({"ph": "M", "name": "process_sort_index", "pid": pid, "args": {"sort_index": pid}}),
            );
        }
    }
    for (t, track) in names.tracks.iter().enumerate() {
        let (pid, tid) = (api_pid(track.api), t + 1);
        events.push(
            json!({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": track.name}}),
        );
        events.push(json!({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}));
    }
    let resource = |a: &Access| names.resources.get(a.resource.0 as usize).cloned().unwrap_or_default();
    let sem_name =
        |s: &Sync| names.semaphores.get(s.semaphore.0 as usize).map(|s| s.name.clone()).unwrap_or_default();
    for (t, items) in timeline.items.iter().enumerate() {
        let api = names.tracks.get(t).map_or(Api::Host, |tr| tr.api);
        let (pid, tid) = (api_pid(api), t + 1);
        let mut last_ns = origin;
        for (seq, item) in items.iter().enumerate() {
            match item {
                Item::Scope(s) => {
                    let of =
                        |kind| s.accesses.iter().filter(|a| a.kind == kind).map(resource).collect::<Vec<_>>();
                    events.push(json!({"ph": "X", "name": &*s.name, "cat": "scope", "pid": pid, "tid": tid,
                        "ts": ts(s.start_ns, origin), "dur": s.dur_ns() as f64 / 1e3,
                        "args": {"frame": s.frame, "seq": seq, "depth": s.depth,
                                 "reads": of(AccessKind::Read), "writes": of(AccessKind::Write)}}));
                    last_ns = last_ns.max(s.end_ns);
                }
                Item::Sync(s) => {
                    let sem = sem_name(s);
                    let name = match s.kind {
                        SyncKind::Signal => format!("signal {sem} = {}", s.value),
                        SyncKind::Wait => format!("wait {sem} ≥ {}", s.value),
                    };
                    let mut args = json!({"seq": seq, "sem": sem, "value": s.value, "op": s.kind.name(), "frame": s.frame});
                    if let Some(ns) = s.host_ns {
                        args["host_ns"] = json!(ns);
                    }
                    events.push(
                        json!({"ph": "i", "s": "t", "name": name, "cat": "sync", "pid": pid, "tid": tid,
                        "ts": ts(s.host_ns.unwrap_or(last_ns), origin), "args": args}),
                    );
                }
            }
        }
    }
    for (id, h) in handoffs(timeline).iter().enumerate() {
        let Some(signal) = h.signal_ns else { continue };
        let track = |t: TrackId| names.tracks.get(t.0 as usize).map_or(Api::Host, |tr| tr.api);
        let name = names.semaphores.get(h.semaphore.0 as usize).map(|s| s.name.clone()).unwrap_or_default();
        // The start binds to the slice that encloses it: the scope whose end is the signal.
        events
            .push(json!({"ph": "s", "id": id, "name": name, "cat": "handoff", "pid": api_pid(track(h.from)),
            "tid": h.from.0 + 1, "ts": ts(signal.saturating_sub(1).max(origin), origin)}));
        events.push(json!({"ph": "f", "bp": "e", "id": id, "name": name, "cat": "handoff", "pid": api_pid(track(h.to)),
            "tid": h.to.0 + 1, "ts": ts(h.first_ns, origin)}));
    }
    let tracks: Vec<Value> = names
        .tracks
        .iter()
        .map(|t| json!({"name": t.name, "api": t.api.name(), "clock": t.clock, "accuracy_ns": t.accuracy_ns, "clock_domain": t.clock_domain}))
        .collect();
    let semaphores: Vec<Value> =
        names.semaphores.iter().map(|s| json!({"name": s.name, "internal": s.internal})).collect();
    let frame_ends: Vec<Value> = timeline.frame_ends.iter().map(|e| json!([e.frame, e.host_ns])).collect();
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {
            "vkhip_profile": FORMAT_VERSION,
            "generator": concat!("vkhip-profile ", env!("CARGO_PKG_VERSION")),
            "clock": "CLOCK_MONOTONIC",
            "origin_ns": origin,
            "tracks": tracks,
            "resources": names.resources,
            "semaphores": semaphores,
            "clock_notes": timeline.clock_notes,
            "frame_ends": frame_ends,
            "extra": extra,
        }
    })
}

/// The hand-offs of a timeline that are drawn as flows: waits met by another track's signal on
/// a semaphore that is not internal, matched as the checker matches them.
fn handoffs(timeline: &Timeline) -> Vec<Handoff> {
    let mut checker = Checker::for_timeline(timeline).recording_handoffs();
    timeline.replay(&mut checker);
    checker.finish();
    let sems = &timeline.names.semaphores;
    let mut out = std::mem::take(&mut checker.handoffs);
    out.retain(|h| sems.get(h.semaphore.0 as usize).is_some_and(|s| !s.internal));
    out
}

/// Write the trace of `timeline` into `out`.
pub fn write_to(timeline: &Timeline, out: impl Write, extra: &Value) -> Result<(), TraceError> {
    write_doc(&document(timeline, extra), out, "the trace writer")
}

fn write_doc(doc: &Value, out: impl Write, path: &str) -> Result<(), TraceError> {
    let mut out = std::io::BufWriter::new(out);
    let err = |source| TraceError::Write { path: path.to_string(), source };
    serde_json::to_writer(&mut out, doc).map_err(|e| err(e.into()))?;
    out.flush().map_err(err)
}

/// Write the trace of `timeline` to `path`: into a temporary file beside it, renamed over
/// `path` once complete, so a failed write never leaves half a trace.
pub fn write(timeline: &Timeline, path: impl AsRef<Path>, extra: &Value) -> Result<(), TraceError> {
    write_file(&document(timeline, extra), path.as_ref())
}

fn write_file(doc: &Value, path: &Path) -> Result<(), TraceError> {
    let shown = path.display().to_string();
    let err = |source| TraceError::Write { path: shown.clone(), source };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = std::path::PathBuf::from(tmp);
    let result = std::fs::File::create(&tmp)
        .map_err(err)
        .and_then(|file| write_doc(doc, file, &shown))
        .and_then(|()| std::fs::rename(&tmp, path).map_err(err));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Read a trace written by [`write()`], refusing files over [`MAX_TRACE_BYTES`]: the timeline and
/// the caller's `extra` JSON.
pub fn read(path: impl AsRef<Path>) -> Result<(Timeline, Value), TraceError> {
    read_with_limit(path, MAX_TRACE_BYTES)
}

/// [`read`] with another size limit, bytes.
pub fn read_with_limit(path: impl AsRef<Path>, limit: u64) -> Result<(Timeline, Value), TraceError> {
    let path = path.as_ref();
    let shown = path.display().to_string();
    let err = |source| TraceError::Read { path: shown.clone(), source };
    let file = std::fs::File::open(path).map_err(err)?;
    let size = file.metadata().map_err(err)?.len();
    if size > limit {
        return Err(TraceError::TooLarge { path: shown, size, limit });
    }
    // The length can change under us (or be 0 for a pipe): read at most one byte past the limit.
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(err)?;
    if bytes.len() as u64 > limit {
        return Err(TraceError::TooLarge { path: shown, size: bytes.len() as u64, limit });
    }
    parse(&bytes, &shown)
}

/// Parse a trace held in memory (`name` is what errors call it).
pub fn parse(bytes: &[u8], name: &str) -> Result<(Timeline, Value), TraceError> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|source| TraceError::NotJson { path: name.into(), source })?;
    let events = match doc.get("traceEvents").and_then(Value::as_array) {
        Some(events) if !events.is_empty() => events,
        _ => return Err(TraceError::NoEvents { path: name.into() }),
    };
    let fail = |why: String| TraceError::Format { path: name.into(), why };
    let other = doc.get("otherData").ok_or_else(|| fail("it has no otherData".into()))?;
    match other.get("vkhip_profile").and_then(Value::as_u64) {
        Some(FORMAT_VERSION) => {}
        Some(v) => {
            return Err(fail(format!("otherData.vkhip_profile is {v}; this reader knows {FORMAT_VERSION}")))
        }
        None => return Err(fail("otherData.vkhip_profile is missing (written by another tool?)".into())),
    }
    let names = read_names(other).map_err(fail)?;
    let origin = other
        .get("origin_ns")
        .and_then(Value::as_u64)
        .ok_or_else(|| fail("otherData.origin_ns is missing".into()))?;
    let strings = |key: &str| -> Result<Vec<String>, String> {
        match other.get(key) {
            None => Ok(Vec::new()),
            Some(v) => v
                .as_array()
                .ok_or(format!("otherData.{key} is not a list"))?
                .iter()
                .map(|s| s.as_str().map(String::from).ok_or(format!("otherData.{key} holds a non-string")))
                .collect(),
        }
    };
    let clock_notes = strings("clock_notes").map_err(fail)?;
    let frame_ends = match other.get("frame_ends") {
        None => Vec::new(),
        Some(v) => v
            .as_array()
            .ok_or_else(|| fail("otherData.frame_ends is not a list".into()))?
            .iter()
            .map(|e| match (e.get(0).and_then(Value::as_u64), e.get(1).and_then(Value::as_u64)) {
                (Some(frame), Some(host_ns)) => Ok(FrameEnd { frame, host_ns }),
                _ => Err(fail(format!("otherData.frame_ends holds {e}, not [frame, ns]"))),
            })
            .collect::<Result<_, _>>()?,
    };
    let mut items: Vec<Vec<(u64, Item)>> = vec![Vec::new(); names.tracks.len()];
    for (i, ev) in events.iter().enumerate() {
        let event = |why: &str| fail(format!("event {i} ({ev}): {why}"));
        let ph = ev.get("ph").and_then(Value::as_str).unwrap_or("");
        if ph != "X" && !(ph == "i" && ev.pointer("/args/op").is_some()) {
            continue; // metadata, flows, and whatever else a viewer added
        }
        let tid = ev.get("tid").and_then(Value::as_u64).ok_or_else(|| event("no tid"))?;
        let track = (tid as usize)
            .checked_sub(1)
            .filter(|&t| t < names.tracks.len())
            .ok_or_else(|| event("tid names no track"))?;
        let args = ev.get("args").ok_or_else(|| event("no args"))?;
        let num = |key: &str| {
            args.get(key).and_then(Value::as_u64).ok_or_else(|| event(&format!("args.{key} is missing")))
        };
        let seq = num("seq")?;
        let item = if ph == "X" {
            // A time the writer could have written: finite, not negative, and within u64 ns of
            // the origin (a hand-edited 1e308 is refused, not wrapped or saturated).
            let at = |key: &str| {
                let v = ev.get(key).ok_or_else(|| event(&format!("no {key}")))?;
                let us = v.as_f64().ok_or_else(|| event(&format!("{key} is {v}, not a number")))?;
                if !(0.0..=MAX_US).contains(&us) {
                    return Err(event(&format!("{key} is {v} µs: not a time from 0 to {MAX_US:e} µs")));
                }
                Ok(ns_of(us))
            };
            let start_ns =
                origin.checked_add(at("ts")?).ok_or_else(|| event("ts is past the clock's range"))?;
            let end_ns = start_ns
                .checked_add(at("dur")?)
                .ok_or_else(|| event("ts + dur is past the clock's range"))?;
            let mut accesses = Vec::new();
            for (key, kind) in [("reads", AccessKind::Read), ("writes", AccessKind::Write)] {
                for r in args.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
                    let r = r.as_str().ok_or_else(|| event(&format!("args.{key} holds a non-string")))?;
                    let id = names
                        .resources
                        .iter()
                        .position(|n| n == r)
                        .ok_or_else(|| event(&format!("resource {r:?} is not in otherData.resources")))?;
                    accesses.push(Access { resource: crate::model::ResourceId(id as u32), kind });
                }
            }
            Item::Scope(Scope {
                name: ev.get("name").and_then(Value::as_str).ok_or_else(|| event("no name"))?.into(),
                frame: num("frame")?,
                start_ns,
                end_ns,
                depth: args.get("depth").and_then(Value::as_u64).unwrap_or(0) as u32,
                accesses,
            })
        } else {
            let sem = args.get("sem").and_then(Value::as_str).ok_or_else(|| event("args.sem is missing"))?;
            let id = names
                .semaphores
                .iter()
                .position(|s| s.name == sem)
                .ok_or_else(|| event(&format!("semaphore {sem:?} is not in otherData.semaphores")))?;
            let kind = match args.get("op").and_then(Value::as_str) {
                Some("signal") => SyncKind::Signal,
                Some("wait") => SyncKind::Wait,
                _ => return Err(event("args.op is neither signal nor wait")),
            };
            Item::Sync(Sync {
                semaphore: crate::model::SemaphoreId(id as u32),
                value: num("value")?,
                kind,
                frame: num("frame")?,
                host_ns: args.get("host_ns").and_then(Value::as_u64),
            })
        };
        items[track].push((seq, item));
    }
    let items = items
        .into_iter()
        .map(|mut track| {
            track.sort_by_key(|(seq, _)| *seq);
            track.into_iter().map(|(_, item)| item).collect()
        })
        .collect();
    let extra = other.get("extra").cloned().unwrap_or_else(|| Value::Object(Map::new()));
    Ok((Timeline { names, items, frame_ends, clock_notes }, extra))
}

fn read_names(other: &Value) -> Result<Names, String> {
    let list =
        |key: &str| other.get(key).and_then(Value::as_array).ok_or(format!("otherData.{key} is missing"));
    let tracks = list("tracks")?
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let s = |key: &str| t.get(key).and_then(Value::as_str).ok_or(format!("track {i}: no {key}"));
            let api = s("api")?;
            Ok(Track {
                name: s("name")?.to_string(),
                api: Api::from_name(api).ok_or(format!("track {i}: unknown api {api:?}"))?,
                clock: s("clock")?.to_string(),
                accuracy_ns: t
                    .get("accuracy_ns")
                    .and_then(Value::as_u64)
                    .ok_or(format!("track {i}: no accuracy_ns"))?,
                clock_domain: t.get("clock_domain").and_then(Value::as_u64).map(|d| d as u32),
            })
        })
        .collect::<Result<_, String>>()?;
    let resources = list("resources")?
        .iter()
        .map(|r| r.as_str().map(String::from).ok_or("otherData.resources holds a non-string".to_string()))
        .collect::<Result<_, _>>()?;
    let semaphores = list("semaphores")?
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Ok(SemaphoreInfo {
                name: s
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or(format!("semaphore {i}: no name"))?
                    .to_string(),
                internal: s.get("internal").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Names { tracks, resources, semaphores })
}

/// The last `frames` frames of a run, for the trace: a [`Sink`] whose memory does not grow with
/// the run. Items of older frames fall out of the front of each track (a track's kept items are
/// always the end of its program order) and are counted.
///
/// # Examples
///
/// ```
/// use vkhip_profile::perfetto::TraceRing;
/// use vkhip_profile::model::{Api, FrameEnd, Item, Names, Scope, Sink, Track, TrackId};
///
/// let mut ring = TraceRing::new(2);
/// ring.names(&Names {
///     tracks: vec![Track { name: "main".into(), api: Api::Host, clock: "host".into(), accuracy_ns: 0, clock_domain: None }],
///     ..Default::default()
/// });
/// for frame in 0..5 {
///     let scope = Scope { name: "work".into(), frame, start_ns: frame * 10, end_ns: frame * 10 + 5, depth: 0, accesses: vec![] };
///     ring.item(TrackId(0), &Item::Scope(scope));
///     ring.frame_end(FrameEnd { frame, host_ns: frame * 10 + 9 });
/// }
/// let kept = ring.timeline();
/// assert_eq!(kept.items[0].iter().map(Item::frame).collect::<Vec<_>>(), [3, 4]);
/// assert_eq!(ring.dropped_frames(), 3);
/// ```
#[derive(Clone, Debug)]
pub struct TraceRing {
    capacity: u64,
    names: Names,
    tracks: Vec<VecDeque<Item>>,
    frame_ends: VecDeque<FrameEnd>,
    first: Option<u64>,
    newest: Option<u64>,
    dropped_items: u64,
    clock_notes: Vec<String>,
}

impl TraceRing {
    /// Keep the last `frames` frames (at least 1).
    pub fn new(frames: usize) -> Self {
        TraceRing {
            capacity: frames.max(1) as u64,
            names: Names::default(),
            tracks: Vec::new(),
            frame_ends: VecDeque::new(),
            first: None,
            newest: None,
            dropped_items: 0,
            clock_notes: Vec::new(),
        }
    }

    /// How the device clocks were mapped (written as `otherData.clock_notes`).
    pub fn set_clock_notes(&mut self, notes: Vec<String>) {
        self.clock_notes = notes;
    }

    /// Frames that fell out of the ring.
    pub fn dropped_frames(&self) -> u64 {
        match (self.first, self.cutoff()) {
            (Some(first), Some(cut)) => cut.saturating_sub(first),
            _ => 0,
        }
    }

    /// Items that fell out of the ring.
    pub fn dropped_items(&self) -> u64 {
        self.dropped_items
    }

    /// What the ring holds, as a timeline.
    pub fn timeline(&self) -> Timeline {
        Timeline {
            names: self.names.clone(),
            items: self.tracks.iter().map(|t| t.iter().cloned().collect()).collect(),
            frame_ends: self.frame_ends.iter().copied().collect(),
            clock_notes: self.clock_notes.clone(),
        }
    }

    /// The trace document, with `otherData.ring`.
    pub fn document(&self, extra: &Value) -> Value {
        let mut doc = document(&self.timeline(), extra);
        doc["otherData"]["ring"] = json!({"frames": self.capacity, "dropped_frames": self.dropped_frames(), "dropped_items": self.dropped_items});
        doc
    }

    /// Write the trace to `path` (see [`write()`]).
    pub fn write(&self, path: impl AsRef<Path>, extra: &Value) -> Result<(), TraceError> {
        write_file(&self.document(extra), path.as_ref())
    }

    /// Write the trace into `out`.
    pub fn write_to(&self, out: impl Write, extra: &Value) -> Result<(), TraceError> {
        write_doc(&self.document(extra), out, "the trace writer")
    }

    /// The oldest frame kept.
    fn cutoff(&self) -> Option<u64> {
        self.newest.map(|n| n.saturating_sub(self.capacity - 1))
    }

    fn saw(&mut self, frame: u64) {
        self.first = Some(self.first.map_or(frame, |f| f.min(frame)));
        if self.newest.is_some_and(|n| n >= frame) {
            return;
        }
        self.newest = Some(frame);
        let cut = self.cutoff().unwrap_or(0);
        for track in &mut self.tracks {
            while track.front().is_some_and(|i| i.frame() < cut) {
                track.pop_front();
                self.dropped_items += 1;
            }
        }
        while self.frame_ends.front().is_some_and(|e| e.frame < cut) {
            self.frame_ends.pop_front();
        }
    }
}

impl Sink for TraceRing {
    fn names(&mut self, names: &Names) {
        self.names = names.clone();
        if self.tracks.len() < names.tracks.len() {
            self.tracks.resize_with(names.tracks.len(), VecDeque::new);
        }
    }

    fn item(&mut self, track: TrackId, item: &Item) {
        let t = track.0 as usize;
        if self.tracks.len() <= t {
            self.tracks.resize_with(t + 1, VecDeque::new);
        }
        self.saw(item.frame());
        if item.frame() < self.cutoff().unwrap_or(0) && self.tracks[t].is_empty() {
            self.dropped_items += 1; // late for a frame already gone
            return;
        }
        self.tracks[t].push_back(item.clone());
    }

    fn frame_end(&mut self, end: FrameEnd) {
        self.saw(end.frame);
        if end.frame >= self.cutoff().unwrap_or(0) {
            self.frame_ends.push_back(end);
        }
    }
}
