//! What the device's buffers record into while a `vkhip.Profiler` is attached ([`ProfilerCore`]):
//! the tracks on the framework's streams ([`StreamTrack`]), the Vulkan queue's track, the buffers'
//! resources and semaphores; and one of the door's Vulkan operations as the profiler sees it
//! ([`VulkanScope`]). Below `device_core` (which holds the attached one), `buffer` (which records
//! into it) and `profile` (the Python classes that make and read it).
//!
//! Lifetimes: the crate's track and scope guards borrow what they record on (`CudaStream<'c>`
//! borrows its `Cuda`; a scope borrows its track). Python objects cannot hold borrows, so each
//! track owns what it borrows behind an `Arc` (a stable address that moving the owner does not
//! claim exclusively, as moving a `Box` would), and declares its fields so that the borrowers drop
//! first; the `'static` in the field types is that promise, made in one place
//! ([`StreamTrack::new`]).

use crate::errors::IntoPy;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use vkhip_interop::cuda::Cuda;
use vkhip_interop::vulkan::Edge;
use vkhip_profile::{CudaScope, CudaStream, Resource, Semaphore, Submission};

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A track on a stream the framework owns.
pub struct StreamTrack {
    /// Open scopes by token; dropped (ended) before the stream they borrow.
    pub scopes: Mutex<HashMap<u64, CudaScope<'static>>>,
    /// Borrows `*cuda` (see the module note).
    pub stream: CudaStream<'static>,
    /// The handle enqueueing on the framework's stream; shared (never cloned out) so that its
    /// address outlives moves of the track without a move claiming it.
    cuda: Arc<Cuda>,
}

impl StreamTrack {
    pub fn new(profiler: &vkhip_profile::Profiler, name: &str, cuda: Cuda) -> PyResult<Arc<StreamTrack>> {
        let cuda = Arc::new(cuda);
        // SAFETY: `stream` borrows the `Cuda` behind the `Arc`, whose heap address stays put
        // while the `Arc` lives (the only one: it is never cloned); it is the struct's last
        // field, so it drops after `stream` and after every scope (which borrow `stream`, itself
        // inside the outer `Arc` and never moved out of it).
        let cuda_ref: &'static Cuda = unsafe { &*Arc::as_ptr(&cuda) };
        let stream = profiler.cuda_stream(name, cuda_ref).py()?;
        Ok(Arc::new(StreamTrack { scopes: Mutex::new(HashMap::new()), stream, cuda }))
    }
}

impl Drop for StreamTrack {
    fn drop(&mut self) {
        // Scopes first (their end marks go on the stream), explicitly: field order says so too.
        lock(&self.scopes).clear();
        let _ = &self.cuda;
    }
}

/// What the device's buffers record into (shared with every buffer of the device).
pub struct ProfilerCore {
    /// By DLPack stream number.
    pub streams: Mutex<HashMap<i64, Arc<StreamTrack>>>,
    pub queue: vkhip_profile::VulkanQueue,
    pub resources: Mutex<HashMap<String, Resource>>,
    pub semaphores: Mutex<HashMap<String, Semaphore>>,
    pub profiler: vkhip_profile::Profiler,
}

impl ProfilerCore {
    pub fn resource(&self, name: &str) -> Resource {
        *lock(&self.resources).entry(name.to_string()).or_insert_with(|| self.profiler.resource(name))
    }

    fn semaphore(&self, name: &str) -> Semaphore {
        *lock(&self.semaphores).entry(name.to_string()).or_insert_with(|| self.profiler.semaphore(name))
    }

    fn track(&self, stream: i64) -> Option<Arc<StreamTrack>> {
        lock(&self.streams).get(&stream).cloned()
    }

    /// A buffer's consumer took it on `stream`, waiting for Vulkan's value `wait` there.
    pub fn stream_acquired(&self, stream: i64, buffer: &str, wait: Option<u64>) {
        if let (Some(t), Some(v)) = (self.track(stream), wait) {
            t.stream.wait(&self.semaphore(&format!("{buffer}.vulkan")), v);
        }
    }

    /// A buffer's consumer released it on `stream`, signalling `value`.
    pub fn stream_released(&self, stream: i64, buffer: &str, value: u64) {
        if let Some(t) = self.track(stream) {
            t.stream.signal(&self.semaphore(&format!("{buffer}.consumer")), value);
        }
    }

    /// The calling thread waited for every Vulkan submission (the host hand-off).
    pub fn vulkan_idle(&self) {
        self.queue.idle();
    }
}

/// One of the door's Vulkan operations on a buffer, as the profiler sees it: a scope in its
/// command buffer (between the [`Edge`]s), then its submission's waits and signal.
pub struct VulkanScope<'p> {
    profiler: Option<&'p ProfilerCore>,
    op: &'static str,
    buffer: String,
    writes: bool,
    open: Option<vkhip_profile::VulkanScope<'p>>,
    submission: Option<Submission>,
}

impl<'p> VulkanScope<'p> {
    pub fn new(profiler: Option<&'p ProfilerCore>, op: &'static str, buffer: &str, writes: bool) -> Self {
        VulkanScope { profiler, op, buffer: buffer.to_string(), writes, open: None, submission: None }
    }

    /// The hook the interop crate calls at each edge of the command buffer.
    pub fn edge(&mut self, cmd: ash::vk::CommandBuffer, edge: Edge) {
        let Some(p) = self.profiler else { return };
        match edge {
            Edge::Begin => {
                let r = p.resource(&self.buffer);
                // SAFETY: the interop crate calls the hook while `cmd` records, on the device's
                // queue family (the profiler's queue track), outside a render pass; the scope
                // ends at `Edge::End`, before recording ends.
                let scope = unsafe { p.queue.scope(cmd, self.op) };
                self.open = Some(if self.writes { scope.writes(&r) } else { scope.reads(&r) });
            }
            Edge::End => drop(self.open.take()),
        }
    }

    /// The submission went in: it waited for the consumer's release `values.0` and signals
    /// Vulkan's `values.1` (on the host path there are no semaphores: the fences order it).
    pub fn submitted(&mut self, values: (Option<u64>, u64)) {
        let Some(p) = self.profiler else { return };
        let gpu = p_gpu_side(p, &self.buffer);
        let submission = match gpu {
            Some((consumer, vulkan)) => {
                let waits: Vec<(&Semaphore, u64)> = values.0.map(|c| (&consumer, c)).into_iter().collect();
                p.queue.submitted(&waits, &[(&vulkan, values.1)])
            }
            None => p.queue.submitted(&[], &[]),
        };
        self.submission = Some(submission);
    }

    /// The calling thread waited for the submission (a one-shot's fence).
    pub fn waited(&mut self) {
        if let (Some(p), Some(s)) = (self.profiler, self.submission.take()) {
            p.queue.waited(s);
        }
    }
}

/// The buffer's two semaphores as the profiler names them, where the hand-off is on the GPU.
fn p_gpu_side(p: &ProfilerCore, buffer: &str) -> Option<(Semaphore, Semaphore)> {
    Some((p.semaphore(&format!("{buffer}.consumer")), p.semaphore(&format!("{buffer}.vulkan"))))
}
