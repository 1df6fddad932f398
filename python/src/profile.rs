//! `vkhip.Profiler`: the profile crate from Python — a track on the framework's own stream
//! (torch's, CuPy's: a `CUstream` the door does not own), host scopes, the Vulkan work of the
//! door's buffers (recorded by the door itself, with the buffers' semaphores: `recorder`), the
//! checker's verdict and the Perfetto trace.

use crate::device_core::{Compute, DeviceCore};
use crate::errors::{invalid, IntoPy};
use crate::recorder::{lock, ProfilerCore, StreamTrack};
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use vkhip_profile::{CudaScope, HostScope, HostThread, Options, Resource};

/// `scope` with its declared accesses: `names.0` read, `names.1` written (resources of `core`),
/// through the scope type's own `reads` and `writes`.
fn declare<S>(
    scope: S,
    core: &ProfilerCore,
    names: (&[String], &[String]),
    reads: fn(S, &Resource) -> S,
    writes: fn(S, &Resource) -> S,
) -> S {
    let scope = names.0.iter().fold(scope, |s, n| reads(s, &core.resource(n)));
    names.1.iter().fold(scope, |s, n| writes(s, &core.resource(n)))
}

/// Resource names from a sequence of buffers or strings.
fn names(items: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(items) = items else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for item in items.try_iter()? {
        let item = item?;
        let name = match item.extract::<String>() {
            Ok(s) => s,
            Err(_) => item
                .getattr("name")
                .and_then(|n| n.extract::<String>())
                .map_err(|_| invalid("reads=/writes= take vkhip.Buffer objects or resource names"))?,
        };
        out.push(name);
    }
    Ok(out)
}

/// The frame-sync profiler on a device: one clock for Vulkan, the framework's streams and the
/// host; the checker that proves every two conflicting accesses from different APIs ordered.
///
/// Attaching it makes the device's buffers record their Vulkan work and their hand-offs.
/// Use it from the thread that made it (its host track is that thread's).
#[pyclass(module = "vkhip", unsendable)]
pub struct Profiler {
    host_scopes: HashMap<u64, HostScope<'static>>,
    host: HostThread,
    core: Option<Arc<ProfilerCore>>,
    device: Arc<DeviceCore>,
    next_token: u64,
}

#[pymethods]
impl Profiler {
    #[new]
    #[pyo3(signature = (device, *, enabled = true))]
    fn new(device: &crate::device::Device, enabled: bool) -> PyResult<Self> {
        let dev = device.core.clone();
        dev.check_open("the device")?;
        let mut slot = lock(&dev.profiler);
        if slot.is_some() {
            return Err(invalid("the device has a profiler already: finish() it first"));
        }
        let options = Options { enabled, ..Options::default() };
        let profiler = vkhip_profile::Profiler::new(&dev.vk, options).py()?;
        let host = profiler.host_thread("python");
        let queue = profiler.vulkan_queue("vulkan").py()?;
        let core = Arc::new(ProfilerCore {
            streams: Mutex::new(HashMap::new()),
            queue,
            resources: Mutex::new(HashMap::new()),
            semaphores: Mutex::new(HashMap::new()),
            profiler,
        });
        *slot = Some(core.clone());
        drop(slot);
        Ok(Profiler { host_scopes: HashMap::new(), host, core: Some(core), device: dev, next_token: 0 })
    }

    /// A track on the framework's stream (an int ``cudaStream_t``, a ``torch.cuda.Stream``, a
    /// ``cupy.cuda.Stream``, or anything with ``__cuda_stream__``): scopes around the work you
    /// enqueue there, and the buffers' waits and releases on it.
    fn stream(&mut self, name: &str, stream: &Bound<'_, PyAny>) -> PyResult<Stream> {
        let number = crate::stream_number(stream)?;
        let core = self.core()?.clone();
        let Compute::Cuda(cuda) = &self.device.compute else {
            return Err(invalid(format!(
                "stream tracks need a CUDA device; this one's API is {:?}",
                self.device.compute.api()
            )));
        };
        let lent = crate::streams::lend(cuda, number)?;
        let track = StreamTrack::new(&core.profiler, name, lent)?;
        lock(&core.streams).insert(number, track.clone());
        Ok(Stream { track, core, next: Mutex::new(0) })
    }

    /// A scope on the calling thread (host work), declaring what it reads and writes.
    #[pyo3(signature = (name, *, reads = None, writes = None))]
    fn host_scope(
        slf: Bound<'_, Self>,
        name: &str,
        reads: Option<&Bound<'_, PyAny>>,
        writes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Scope> {
        let (r, w) = (names(reads)?, names(writes)?);
        let mut me = slf.borrow_mut();
        let core = me.core()?.clone();
        let scope = declare(me.host.scope(name), &core, (&r, &w), HostScope::reads, HostScope::writes);
        // SAFETY: a host scope holds no reference to its thread (the lifetime only ties it to
        // the thread's track in the type); it is ended before `host` drops (field order).
        let scope: HostScope<'static> =
            unsafe { std::mem::transmute::<HostScope<'_>, HostScope<'static>>(scope) };
        me.next_token += 1;
        let token = me.next_token;
        me.host_scopes.insert(token, scope);
        Ok(Scope { owner: ScopeOwner::Host(slf.clone().unbind()), token })
    }

    /// End a frame: results of earlier frames are read; never waits for the GPU.
    fn end_frame(&self) -> PyResult<()> {
        self.core()?.profiler.end_frame().py()
    }

    /// Stop profiling: waits (bounded) for the last results, detaches from the device, and
    /// returns the capture.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Capture> {
        self.host_scopes.clear();
        let core = self.core.take().ok_or_else(|| invalid("the profiler was finished already"))?;
        *lock(&self.device.profiler) = None;
        lock(&core.streams).clear();
        // Track handles a Python object still holds record nothing after this.
        let profiler = core.profiler.clone();
        drop(core);
        let capture = py.detach(|| profiler.finish()).py()?;
        Ok(Capture { capture: Mutex::new(capture), check: std::sync::OnceLock::new() })
    }
}

impl Profiler {
    fn core(&self) -> PyResult<&Arc<ProfilerCore>> {
        self.core.as_ref().ok_or_else(|| invalid("the profiler was finished"))
    }
}

/// A track on one of the framework's streams ([`Profiler::stream`]).
#[pyclass(module = "vkhip", frozen)]
pub struct Stream {
    track: Arc<StreamTrack>,
    core: Arc<ProfilerCore>,
    next: Mutex<u64>,
}

#[pymethods]
impl Stream {
    /// A scope around work you enqueue on the stream next (a stamp is enqueued now and when
    /// the scope ends), declaring what it reads and writes.
    #[pyo3(signature = (name, *, reads = None, writes = None))]
    fn scope(
        slf: Bound<'_, Self>,
        name: &str,
        reads: Option<&Bound<'_, PyAny>>,
        writes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Scope> {
        let (r, w) = (names(reads)?, names(writes)?);
        let me = slf.get();
        let scope = me.track.stream.scope(name).py()?;
        let scope = declare(scope, &me.core, (&r, &w), CudaScope::reads, CudaScope::writes);
        // SAFETY: the scope borrows `track.stream`, which lives in the `Arc` this object and the
        // returned `Scope` hold; the scope is stored in that same track and dropped before its
        // stream (StreamTrack's field order and Drop).
        let scope: CudaScope<'static> =
            unsafe { std::mem::transmute::<CudaScope<'_>, CudaScope<'static>>(scope) };
        let token = {
            let mut n = lock(&me.next);
            *n += 1;
            *n
        };
        lock(&me.track.scopes).insert(token, scope);
        Ok(Scope { owner: ScopeOwner::Stream(slf.clone().unbind()), token })
    }
}

enum ScopeOwner {
    Host(Py<Profiler>),
    Stream(Py<Stream>),
}

/// An open scope: ends at ``end()`` or when its ``with`` block ends.
#[pyclass(module = "vkhip", unsendable)]
pub struct Scope {
    owner: ScopeOwner,
    token: u64,
}

#[pymethods]
impl Scope {
    /// End the scope now (a second call does nothing).
    fn end(&self, py: Python<'_>) -> PyResult<()> {
        match &self.owner {
            ScopeOwner::Host(p) => {
                p.borrow_mut(py).host_scopes.remove(&self.token);
                Ok(())
            }
            ScopeOwner::Stream(s) => {
                let scope = lock(&s.get().track.scopes).remove(&self.token);
                match scope {
                    Some(scope) => scope.end().py(),
                    None => Ok(()),
                }
            }
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        self.end(py)
    }
}

/// What a profiler recorded: the checker's verdict, the report, the trace.
#[pyclass(module = "vkhip", frozen)]
pub struct Capture {
    capture: Mutex<vkhip_profile::Capture>,
    check: std::sync::OnceLock<vkhip_profile::CheckReport>,
}

impl Capture {
    fn check(&self) -> &vkhip_profile::CheckReport {
        self.check.get_or_init(|| lock(&self.capture).check())
    }
}

#[pymethods]
impl Capture {
    /// Whether the checker found no hazard.
    #[getter]
    fn is_clean(&self) -> bool {
        self.check().is_clean()
    }

    /// Each violation's sentence: the rule, the resource, both scopes and the overlap.
    #[getter]
    fn violations(&self) -> Vec<String> {
        self.check().violations.iter().map(|v| v.to_string()).collect()
    }

    /// All violations (``violations`` keeps the first ones).
    #[getter]
    fn violation_count(&self) -> u64 {
        self.check().violation_count
    }

    /// Conflicting access pairs on different tracks that the checker compared.
    #[getter]
    fn pairs_checked(&self) -> u64 {
        self.check().pairs_checked
    }

    /// The report: clocks, the checker's verdict, frame time, hand-offs, scopes.
    #[getter]
    fn report(&self) -> String {
        lock(&self.capture).report().to_string()
    }

    /// Write the Perfetto (Chrome JSON) trace to ``path``: ui.perfetto.dev opens it.
    fn write_perfetto(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        py.detach(|| lock(&self.capture).write_perfetto(&path))
            .map_err(|e| Python::attach(|py| crate::errors::raise(py, "Error", e.to_string())))
    }
}
