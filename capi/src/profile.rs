//! The profiler: tracks (a Vulkan queue, a CUDA stream, a host thread), scopes with declared
//! reads and writes, semaphores, frames, and the capture — the checker's verdict, the report,
//! the Perfetto trace.
//!
//! In Rust a scope borrows its track and a CUDA stream track borrows the `Cuda`. Here each
//! borrowed object lives in an `Arc` that the borrower's handle holds too, in a field after the
//! borrower (fields drop in order): the borrow is made `'static` by `forever`, and what it
//! points at cannot go before the borrower, whichever handle C destroys first.

use crate::cuda::VkhipCuda;
use crate::handle::{self, handle, Handle};
use crate::vulkan::{VkCommandBuffer, VkhipDevice};
use crate::{entry, status, text, Fail, Result, VkhipStatus};
use std::collections::VecDeque;
use std::ffi::{c_char, CString};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;
use vkhip_interop::cuda::Cuda;
use vkhip_profile::{
    Capture, CudaScope, CudaStamps, CudaStream, HostScope, HostThread, Options, Profiler, Resource,
    Semaphore, Submission, VulkanQueue, VulkanScope,
};

/// `r` with a `'static` lifetime.
///
/// # Safety
/// What `r` points at stays where it is and alive for as long as the result (or anything
/// borrowing from it) is used: it is inside an `Arc` held by whoever holds the result, in a
/// field dropped after it.
unsafe fn forever<T>(r: &T) -> &'static T {
    // SAFETY: per this function's contract.
    unsafe { &*(r as *const T) }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic under the lock (caught at the ABI) leaves the value as whole as before the call.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How a CUDA scope marks the stream (VkhipProfilerOptions::cuda_stamps).
pub type VkhipCudaStamps = u32;
/// Two one-thread kernels storing the GPU timer (the default; the Vulkan clock's accuracy).
pub const VKHIP_CUDA_STAMPS_KERNEL: VkhipCudaStamps = 0;
/// Two CUDA events, put on the GPU timer by periodic anchors (cheaper, less accurate).
pub const VKHIP_CUDA_STAMPS_EVENTS: VkhipCudaStamps = 1;

/// How the profiler runs (vkhip_profiler_options_default fills the defaults).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipProfilerOptions {
    /// false: every profiler call is a no-op and nothing runs on the GPU.
    pub enabled: bool,
    /// A VKHIP_CUDA_STAMPS_*.
    pub cuda_stamps: VkhipCudaStamps,
    /// Whether the device has hostQueryReset enabled: 1 yes, 0 no, -1 as vkhip knows it (on for
    /// a device of its own where supported, off for a borrowed one). Without it, Vulkan scopes
    /// must begin and end outside render passes.
    pub host_query_reset: i32,
}

impl VkhipProfilerOptions {
    fn to_rust(self, function: &str) -> Result<Options> {
        let cuda_stamps = match self.cuda_stamps {
            VKHIP_CUDA_STAMPS_KERNEL => CudaStamps::Kernel,
            VKHIP_CUDA_STAMPS_EVENTS => CudaStamps::Events,
            other => return Err(Fail::invalid(format!("{function}: {other} is no VKHIP_CUDA_STAMPS_*"))),
        };
        let host_query_reset = match self.host_query_reset {
            -1 => None,
            0 => Some(false),
            1 => Some(true),
            other => {
                return Err(Fail::invalid(format!("{function}: host_query_reset is {other} (-1, 0 or 1)")))
            }
        };
        Ok(Options { enabled: self.enabled, cuda_stamps, host_query_reset, ..Options::default() })
    }
}

/// The default options: enabled, kernel stamps, hostQueryReset as vkhip knows it.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_options_default(out: *mut VkhipProfilerOptions) -> VkhipStatus {
    const F: &str = "vkhip_profiler_options_default";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        let d = Options::default();
        let cuda_stamps = match d.cuda_stamps {
            CudaStamps::Kernel => VKHIP_CUDA_STAMPS_KERNEL,
            CudaStamps::Events => VKHIP_CUDA_STAMPS_EVENTS,
        };
        let host_query_reset = d.host_query_reset.map_or(-1, i32::from);
        // SAFETY: `out` checked above.
        unsafe { out.write(VkhipProfilerOptions { enabled: d.enabled, cuda_stamps, host_query_reset }) };
        Ok(())
    })
}

/// A profiler on one Vulkan device: one clock for every track.
pub struct VkhipProfiler {
    /// `None` once finished.
    profiler: Mutex<Option<Profiler>>,
}
handle!(VkhipProfiler, Profiler);

impl VkhipProfiler {
    fn with<T>(&self, function: &str, f: impl FnOnce(&Profiler) -> Result<T>) -> Result<T> {
        match &*lock(&self.profiler) {
            Some(p) => f(p),
            None => {
                Err(Fail::invalid(format!("{function}: the profiler was finished (vkhip_profiler_finish)")))
            }
        }
    }
}

/// A profiler on `device` (its GPU clock calibrated now). `options` NULL: the defaults.
///
/// # Safety
/// `options` is NULL or readable; `out` as everywhere.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_create(
    device: *const VkhipDevice,
    options: *const VkhipProfilerOptions,
    out: *mut *mut VkhipProfiler,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_create";
    entry(F, || {
        let make = || {
            // SAFETY: `options` is NULL or readable (this function's contract).
            let options = match unsafe { options.as_ref() } {
                Some(o) => o.to_rust(F)?,
                None => Options::default(),
            };
            // SAFETY: a checked handle.
            let profiler = Profiler::new(&unsafe { handle::get(device, F, "device") }?.device, options)?;
            Ok(VkhipProfiler { profiler: Mutex::new(Some(profiler)) })
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// Destroy the profiler (NULL: nothing happens): its query pools and stamp memory go once its
/// tracks are destroyed too, after the GPU finished the work they were recorded into.
///
/// # Safety
/// No other call on `profiler` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_destroy(profiler: *mut VkhipProfiler) -> VkhipStatus {
    const F: &str = "vkhip_profiler_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(profiler, F) })
}

/// A frame ended: results of earlier frames are read (never waits for the GPU).
///
/// # Safety
/// `profiler` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_end_frame(profiler: *const VkhipProfiler) -> VkhipStatus {
    const F: &str = "vkhip_profiler_end_frame";
    // SAFETY: a checked handle.
    entry(F, || unsafe { handle::get(profiler, F, "profiler") }?.with(F, |p| Ok(p.end_frame()?)))
}

/// A shared buffer, image or part of one that scopes declare they read or write.
pub struct VkhipResource {
    resource: Resource,
}
handle!(VkhipResource, Resource);

/// A semaphore as the profiler names it (a timeline shared with CUDA, a binary semaphore, a
/// hand-off of the engine's own).
pub struct VkhipProfSemaphore {
    semaphore: Semaphore,
}
handle!(VkhipProfSemaphore, ProfSemaphore);

/// Register what `name` (UTF-8) is for `profiler`, and hand it out.
///
/// # Safety
/// As [`handle::get`]; `name` NULL or NUL-terminated; `out` NULL or writable.
unsafe fn named<T: Handle>(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    out: *mut *mut T,
    function: &str,
    make: impl FnOnce(&Profiler, &str) -> Result<T>,
) -> Result<()> {
    let out = handle::out(out, function, "out")?;
    // SAFETY: per this function's contract.
    let (p, name) = unsafe { (handle::get(profiler, function, "profiler")?, text(name, function, "name")?) };
    let value = p.with(function, |p| make(p, name))?;
    // SAFETY: `out` checked above.
    unsafe { handle::publish(out, value) };
    Ok(())
}

/// A resource named `name`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_resource(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    out: *mut *mut VkhipResource,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_resource";
    // SAFETY: per this function's contract.
    entry(F, || unsafe {
        named(profiler, name, out, F, |p, n| Ok(VkhipResource { resource: p.resource(n) }))
    })
}

/// Destroy a resource handle (NULL: nothing happens).
///
/// # Safety
/// No other call on `resource` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_resource_destroy(resource: *mut VkhipResource) -> VkhipStatus {
    const F: &str = "vkhip_resource_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(resource, F) })
}

/// A semaphore named `name`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_semaphore(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    out: *mut *mut VkhipProfSemaphore,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_semaphore";
    // SAFETY: per this function's contract.
    entry(F, || unsafe {
        named(profiler, name, out, F, |p, n| Ok(VkhipProfSemaphore { semaphore: p.semaphore(n) }))
    })
}

/// Destroy a semaphore name (NULL: nothing happens).
///
/// # Safety
/// No other call on `semaphore` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_semaphore_destroy(semaphore: *mut VkhipProfSemaphore) -> VkhipStatus {
    const F: &str = "vkhip_prof_semaphore_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(semaphore, F) })
}

/// Submissions [`vkhip_prof_queue_submitted`] numbered, the latest kept for `waited`.
struct Tickets {
    next: u64,
    kept: VecDeque<(u64, Submission)>,
}

/// How many submissions a queue keeps for vkhip_prof_queue_waited (frames in flight are ≤ 8).
const KEPT_SUBMISSIONS: usize = 64;

/// A Vulkan queue's track: scopes in command buffers submitted to it.
pub struct VkhipProfQueue {
    queue: Arc<VulkanQueue>,
    tickets: Mutex<Tickets>,
}
handle!(VkhipProfQueue, Queue);

/// A track for the queue the engine submits to (on the device's queue family), with a query
/// pool of its own.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_vulkan_queue(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    out: *mut *mut VkhipProfQueue,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_vulkan_queue";
    // SAFETY: per this function's contract.
    entry(F, || unsafe {
        named(profiler, name, out, F, |p, n| {
            let tickets = Mutex::new(Tickets { next: 1, kept: VecDeque::new() });
            Ok(VkhipProfQueue { queue: Arc::new(p.vulkan_queue(n)?), tickets })
        })
    })
}

/// Destroy a queue track (NULL: nothing happens), after the GPU finished the work it was
/// recorded into. Scopes still open keep it alive until they end.
///
/// # Safety
/// No other call on `queue` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_queue_destroy(queue: *mut VkhipProfQueue) -> VkhipStatus {
    const F: &str = "vkhip_prof_queue_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(queue, F) })
}

/// A semaphore and a value: one wait or signal of a submission.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct VkhipSemaphoreValue {
    pub semaphore: *const VkhipProfSemaphore,
    pub value: u64,
}

/// The semaphores of `count` entries at `list`.
///
/// # Safety
/// `list` is NULL (with `count` 0) or holds `count` readable entries.
unsafe fn semaphore_values(
    list: *const VkhipSemaphoreValue,
    count: u32,
    function: &str,
    what: &str,
) -> Result<Vec<(Semaphore, u64)>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        return Err(Fail::new(
            VkhipStatus::NullArgument,
            format!("{function}: {what} is NULL, its count {count}"),
        ));
    }
    // SAFETY: `count` readable entries (this function's contract).
    let entries = unsafe { std::slice::from_raw_parts(list, count as usize) };
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            // SAFETY: each entry's semaphore is checked before use.
            let s = unsafe { handle::get(e.semaphore, function, &format!("{what}[{i}].semaphore")) }?;
            Ok((s.semaphore, e.value))
        })
        .collect()
}

/// The submission that holds the scopes recorded since the last call was just submitted (call
/// it right after vkQueueSubmit): it waits for each of `waits` before its work and signals each
/// of `signals` after it. `*ticket` (may be NULL) numbers it for vkhip_prof_queue_waited.
///
/// # Safety
/// The lists are NULL (count 0) or hold their counts of entries; `ticket` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_queue_submitted(
    queue: *const VkhipProfQueue,
    waits: *const VkhipSemaphoreValue,
    wait_count: u32,
    signals: *const VkhipSemaphoreValue,
    signal_count: u32,
    ticket: *mut u64,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_queue_submitted";
    entry(F, || {
        // SAFETY: a checked handle; the lists per this function's contract.
        let (q, waits, signals) = unsafe {
            (
                handle::get(queue, F, "queue")?,
                semaphore_values(waits, wait_count, F, "waits")?,
                semaphore_values(signals, signal_count, F, "signals")?,
            )
        };
        let waits: Vec<(&Semaphore, u64)> = waits.iter().map(|(s, v)| (s, *v)).collect();
        let signals: Vec<(&Semaphore, u64)> = signals.iter().map(|(s, v)| (s, *v)).collect();
        let submission = q.queue.submitted(&waits, &signals);
        let mut t = lock(&q.tickets);
        let number = t.next;
        t.next += 1;
        t.kept.push_back((number, submission));
        if t.kept.len() > KEPT_SUBMISSIONS {
            t.kept.pop_front();
        }
        if !ticket.is_null() {
            // SAFETY: non-NULL, writable (this function's contract).
            unsafe { ticket.write(number) };
        }
        Ok(())
    })
}

/// The calling thread (a host track) waited for the submission `ticket` to finish (its fence):
/// what it does next is ordered after that work. Ticket 0 is none (nothing is recorded); one
/// older than the queue's last 64 submissions is VKHIP_STATUS_INVALID.
///
/// # Safety
/// `queue` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_queue_waited(queue: *const VkhipProfQueue, ticket: u64) -> VkhipStatus {
    const F: &str = "vkhip_prof_queue_waited";
    entry(F, || {
        // SAFETY: a checked handle.
        let q = unsafe { handle::get(queue, F, "queue") }?;
        if ticket == 0 {
            return Ok(());
        }
        let found = lock(&q.tickets).kept.iter().find(|(n, _)| *n == ticket).map(|(_, s)| *s);
        let submission = found.ok_or_else(|| {
            Fail::invalid(format!("{F}: no submission {ticket} among the queue's last {KEPT_SUBMISSIONS}"))
        })?;
        q.queue.waited(submission);
        Ok(())
    })
}

/// The calling thread waited for the queue to go idle (vkQueueWaitIdle, vkDeviceWaitIdle).
///
/// # Safety
/// `queue` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_queue_idle(queue: *const VkhipProfQueue) -> VkhipStatus {
    const F: &str = "vkhip_prof_queue_idle";
    entry(F, || {
        // SAFETY: a checked handle.
        unsafe { handle::get(queue, F, "queue") }?.queue.idle();
        Ok(())
    })
}

/// A CUDA stream's track and the `Cuda` it borrows (dropped after the track).
struct StreamTrack {
    stream: CudaStream<'static>,
    _cuda: Arc<Cuda>,
}

/// A CUDA stream's track: scopes around work enqueued on the handle's stream.
pub struct VkhipProfStream {
    track: Arc<StreamTrack>,
}
handle!(VkhipProfStream, Stream);

/// A track for `cuda`'s stream (the crate's, or the engine's through vkhip_cuda_with_stream),
/// marked as the profiler's options say. `cuda` must be the profiler's Vulkan GPU.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_cuda_stream(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    cuda: *const VkhipCuda,
    out: *mut *mut VkhipProfStream,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_cuda_stream";
    entry(F, || {
        // SAFETY: a checked handle.
        let cuda = unsafe { handle::get(cuda, F, "cuda") }?.cuda.clone();
        // SAFETY: per this function's contract.
        unsafe {
            named(profiler, name, out, F, |p, n| {
                // SAFETY: `cuda` is in an Arc that the track holds after the stream (StreamTrack).
                let stream = p.cuda_stream(n, forever(&*cuda))?;
                Ok(VkhipProfStream { track: Arc::new(StreamTrack { stream, _cuda: cuda }) })
            })
        }
    })
}

/// Destroy a stream track (NULL: nothing happens). Scopes still open keep it alive until they
/// end.
///
/// # Safety
/// No other call on `stream` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_stream_destroy(stream: *mut VkhipProfStream) -> VkhipStatus {
    const F: &str = "vkhip_prof_stream_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(stream, F) })
}

/// The stream waits (the engine's vkhip_cuda_wait, in this order with the stream's scopes)
/// until `semaphore` reaches `value`.
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_stream_wait(
    stream: *const VkhipProfStream,
    semaphore: *const VkhipProfSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_stream_wait";
    entry(F, || {
        // SAFETY: checked handles.
        let (t, s) = unsafe { (handle::get(stream, F, "stream")?, handle::get(semaphore, F, "semaphore")?) };
        t.track.stream.wait(&s.semaphore, value);
        Ok(())
    })
}

/// The stream signals `semaphore` = `value` (the engine's vkhip_cuda_signal, in this order with
/// the stream's scopes).
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_stream_signal(
    stream: *const VkhipProfStream,
    semaphore: *const VkhipProfSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_stream_signal";
    entry(F, || {
        // SAFETY: checked handles.
        let (t, s) = unsafe { (handle::get(stream, F, "stream")?, handle::get(semaphore, F, "semaphore")?) };
        t.track.stream.signal(&s.semaphore, value);
        Ok(())
    })
}

/// The calling thread (a host track) waited for everything enqueued on the stream so far
/// (vkhip_cuda_synchronize, or an event of its own).
///
/// # Safety
/// `stream` is NULL or a pointer to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_stream_synchronized(stream: *const VkhipProfStream) -> VkhipStatus {
    const F: &str = "vkhip_prof_stream_synchronized";
    entry(F, || {
        // SAFETY: a checked handle.
        unsafe { handle::get(stream, F, "stream") }?.track.stream.synchronized();
        Ok(())
    })
}

/// A host thread's track, bound to the thread that made it.
pub struct VkhipProfHost {
    host: HostThread,
    thread: ThreadId,
}
handle!(VkhipProfHost, Host);

/// Refuse a call from another thread than `thread`.
fn same_thread(thread: ThreadId, function: &str) -> Result<()> {
    if std::thread::current().id() != thread {
        return Err(Fail::new(
            VkhipStatus::WrongThread,
            format!("{function}: a host track (and its scopes) is used only on the thread that made it"),
        ));
    }
    Ok(())
}

/// Give the calling thread a host track named `name`: GPU work it records from now on is ordered
/// after what it did before, and its waits (vkhip_prof_queue_waited, ..._synchronized) order
/// the GPU's work before what it does next. Only this thread may use or destroy the handle.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_host_thread(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    out: *mut *mut VkhipProfHost,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_host_thread";
    // SAFETY: per this function's contract.
    entry(F, || unsafe {
        named(profiler, name, out, F, |p, n| {
            Ok(VkhipProfHost { host: p.host_thread(n), thread: std::thread::current().id() })
        })
    })
}

/// Destroy a host track (NULL: nothing happens), on the thread that made it (else
/// VKHIP_STATUS_WRONG_THREAD and the handle stays).
///
/// # Safety
/// No other call on `host` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_host_destroy(host: *mut VkhipProfHost) -> VkhipStatus {
    const F: &str = "vkhip_prof_host_destroy";
    entry(F, || {
        if !host.is_null() {
            // SAFETY: a checked handle.
            same_thread(unsafe { handle::get(host, F, "host") }?.thread, F)?;
        }
        // SAFETY: per this function's contract.
        unsafe { handle::destroy(host, F) }
    })
}

/// The host signal or wait of `semaphore` ≥ `value` just now, on the host track's thread.
///
/// # Safety
/// The handles are NULL or pointers to check.
unsafe fn host_sync(
    host: *const VkhipProfHost,
    semaphore: *const VkhipProfSemaphore,
    value: u64,
    signal: bool,
    function: &str,
) -> Result<()> {
    // SAFETY: checked handles.
    let (h, s) =
        unsafe { (handle::get(host, function, "host")?, handle::get(semaphore, function, "semaphore")?) };
    same_thread(h.thread, function)?;
    if signal {
        h.host.signal(&s.semaphore, value);
    } else {
        h.host.wait(&s.semaphore, value);
    }
    Ok(())
}

/// This thread signalled `semaphore` = `value` on the host just now (vkSignalSemaphore, or a
/// hand-off of the engine's own).
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_host_signal(
    host: *const VkhipProfHost,
    semaphore: *const VkhipProfSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_host_signal";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { host_sync(host, semaphore, value, true, F) })
}

/// This thread's wait for `semaphore` ≥ `value` returned just now.
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_host_wait(
    host: *const VkhipProfHost,
    semaphore: *const VkhipProfSemaphore,
    value: u64,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_host_wait";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { host_sync(host, semaphore, value, false, F) })
}

/// An open scope of one of the three kinds, and the track it borrows (dropped after it).
enum Open {
    Vulkan(VulkanScope<'static>, Arc<VulkanQueue>),
    Cuda(CudaScope<'static>, Arc<StreamTrack>),
    #[cfg(feature = "hip")]
    Hip(vkhip_profile::hip::HipScope<'static>, Arc<HipTrack>),
    Host(HostScope<'static>),
}

/// An open scope: from vkhip_prof_*_scope until vkhip_scope_end.
pub struct VkhipScope {
    open: Mutex<Option<Open>>,
    /// The host track's thread, for a host scope.
    thread: Option<ThreadId>,
}
handle!(VkhipScope, Scope);

/// Check `name` and `out`, then open a scope with `open` and hand it out.
///
/// # Safety
/// `name` NULL or NUL-terminated; `out` NULL or writable.
unsafe fn open_scope(
    name: *const c_char,
    out: *mut *mut VkhipScope,
    function: &str,
    thread: Option<ThreadId>,
    open: impl FnOnce(&str) -> Result<Open>,
) -> Result<()> {
    let out = handle::out(out, function, "out")?;
    // SAFETY: per this function's contract.
    let open = open(unsafe { text(name, function, "name") }?)?;
    // SAFETY: `out` checked above.
    unsafe { handle::publish(out, VkhipScope { open: Mutex::new(Some(open)), thread }) };
    Ok(())
}

/// Open a scope named `name` in the engine's command buffer `cmd` (a timestamp now, another at
/// vkhip_scope_end). Scopes nest. Call vkhip_prof_queue_submitted after the submission holding
/// `cmd`.
///
/// # Safety
/// `cmd` is a command buffer of the profiler's device, for the queue's family, recording until
/// after vkhip_scope_end; without hostQueryReset, outside a render pass at both ends; only the
/// thread recording `cmd` calls this and ends the scope.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_queue_scope(
    queue: *const VkhipProfQueue,
    cmd: VkCommandBuffer,
    name: *const c_char,
    out: *mut *mut VkhipScope,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_queue_scope";
    entry(F, || {
        if cmd == ash::vk::CommandBuffer::null() {
            return Err(Fail::new(VkhipStatus::NullArgument, format!("{F}: cmd is NULL")));
        }
        // SAFETY: a checked handle.
        let q = unsafe { handle::get(queue, F, "queue") }?.queue.clone();
        // SAFETY: per this function's contract; the queue is in an Arc the scope holds after it.
        unsafe { open_scope(name, out, F, None, |n| Ok(Open::Vulkan(forever(&*q).scope(cmd, n), q.clone()))) }
    })
}

/// Open a scope named `name` on the stream: the stream is marked now and at vkhip_scope_end;
/// enqueue the scope's work (launches, library calls) between the two.
///
/// # Safety
/// `name` NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_stream_scope(
    stream: *const VkhipProfStream,
    name: *const c_char,
    out: *mut *mut VkhipScope,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_stream_scope";
    entry(F, || {
        // SAFETY: a checked handle.
        let t = unsafe { handle::get(stream, F, "stream") }?.track.clone();
        // SAFETY: per this function's contract; the track is in an Arc the scope holds after it.
        unsafe { open_scope(name, out, F, None, |n| Ok(Open::Cuda(forever(&t.stream).scope(n)?, t.clone()))) }
    })
}

/// A HIP stream's track and the `Hip` it borrows (dropped after the track).
#[cfg(feature = "hip")]
struct HipTrack {
    stream: vkhip_profile::hip::HipStream<'static>,
    _hip: Arc<vkhip_interop::hip::Hip>,
}

/// A HIP stream's track (feature `hip`): scopes as two HIP events, on HIP's own clock mapped
/// through host anchors.
#[cfg(feature = "hip")]
pub struct VkhipProfHipStream {
    track: Arc<HipTrack>,
}
#[cfg(feature = "hip")]
handle!(VkhipProfHipStream, HipStream);

/// A track for `hip`'s stream (its events, and an anchor taken now: the stream should be idle).
///
/// # Safety
/// `name` is NULL or NUL-terminated; `out` NULL or writable.
#[cfg(feature = "hip")]
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_hip_stream(
    profiler: *const VkhipProfiler,
    name: *const c_char,
    hip: *const crate::hip::VkhipHip,
    out: *mut *mut VkhipProfHipStream,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_hip_stream";
    entry(F, || {
        // SAFETY: a checked handle.
        let hip = unsafe { handle::get(hip, F, "hip") }?.hip.clone();
        // SAFETY: per this function's contract.
        unsafe {
            named(profiler, name, out, F, |p, n| {
                // SAFETY: `hip` is in an Arc that the track holds after the stream (HipTrack).
                let stream = p.hip_stream(n, forever(&*hip))?;
                Ok(VkhipProfHipStream { track: Arc::new(HipTrack { stream, _hip: hip }) })
            })
        }
    })
}

/// Destroy a HIP stream track (NULL: nothing happens); open scopes keep it alive until they end.
///
/// # Safety
/// No other call on `stream` runs now or later.
#[cfg(feature = "hip")]
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_hip_stream_destroy(stream: *mut VkhipProfHipStream) -> VkhipStatus {
    const F: &str = "vkhip_prof_hip_stream_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(stream, F) })
}

/// Open a scope named `name` on the HIP stream (two events around the work enqueued between).
///
/// # Safety
/// `name` NULL or NUL-terminated; `out` NULL or writable.
#[cfg(feature = "hip")]
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_hip_scope(
    stream: *const VkhipProfHipStream,
    name: *const c_char,
    out: *mut *mut VkhipScope,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_hip_scope";
    entry(F, || {
        // SAFETY: a checked handle.
        let t = unsafe { handle::get(stream, F, "stream") }?.track.clone();
        // SAFETY: per this function's contract; the track is in an Arc the scope holds after it.
        unsafe { open_scope(name, out, F, None, |n| Ok(Open::Hip(forever(&t.stream).scope(n)?, t.clone()))) }
    })
}

/// The calling thread (a host track) waited for everything enqueued on the HIP stream so far
/// (vkhip_hip_synchronize): the hand-off to Vulkan on Linux.
///
/// # Safety
/// `stream` is NULL or a pointer to check.
#[cfg(feature = "hip")]
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_hip_synchronized(stream: *const VkhipProfHipStream) -> VkhipStatus {
    const F: &str = "vkhip_prof_hip_synchronized";
    entry(F, || {
        // SAFETY: a checked handle.
        unsafe { handle::get(stream, F, "stream") }?.track.stream.synchronized();
        Ok(())
    })
}

/// Open a scope named `name` on the host track (the calling thread must be the track's).
///
/// # Safety
/// `name` NULL or NUL-terminated; `out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_prof_host_scope(
    host: *const VkhipProfHost,
    name: *const c_char,
    out: *mut *mut VkhipScope,
) -> VkhipStatus {
    const F: &str = "vkhip_prof_host_scope";
    entry(F, || {
        // SAFETY: a checked handle.
        let h = unsafe { handle::get(host, F, "host") }?;
        same_thread(h.thread, F)?;
        // SAFETY: per this function's contract. A host scope borrows its track in name only (its
        // state is the profiler's, which it holds), so the `'static` outlives nothing it uses.
        unsafe { open_scope(name, out, F, Some(h.thread), |n| Ok(Open::Host(forever(&h.host).scope(n)))) }
    })
}

/// Declare that the scope reads (`write` false) or writes `resource`.
///
/// # Safety
/// The handles are NULL or pointers to check.
unsafe fn declare(
    scope: *const VkhipScope,
    resource: *const VkhipResource,
    write: bool,
    function: &str,
) -> Result<()> {
    // SAFETY: checked handles.
    let (s, r) =
        unsafe { (handle::get(scope, function, "scope")?, handle::get(resource, function, "resource")?) };
    if let Some(thread) = s.thread {
        same_thread(thread, function)?;
    }
    let r = &r.resource;
    let mut open = lock(&s.open);
    *open = open.take().map(|o| match (o, write) {
        (Open::Vulkan(v, q), false) => Open::Vulkan(v.reads(r), q),
        (Open::Vulkan(v, q), true) => Open::Vulkan(v.writes(r), q),
        (Open::Cuda(c, t), false) => Open::Cuda(c.reads(r), t),
        (Open::Cuda(c, t), true) => Open::Cuda(c.writes(r), t),
        #[cfg(feature = "hip")]
        (Open::Hip(h, t), false) => Open::Hip(h.reads(r), t),
        #[cfg(feature = "hip")]
        (Open::Hip(h, t), true) => Open::Hip(h.writes(r), t),
        (Open::Host(h), false) => Open::Host(h.reads(r)),
        (Open::Host(h), true) => Open::Host(h.writes(r)),
    });
    Ok(())
}

/// Declare that the scope reads `resource`.
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_scope_reads(
    scope: *const VkhipScope,
    resource: *const VkhipResource,
) -> VkhipStatus {
    const F: &str = "vkhip_scope_reads";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { declare(scope, resource, false, F) })
}

/// Declare that the scope writes `resource`.
///
/// # Safety
/// The handles are NULL or pointers to check.
#[no_mangle]
pub unsafe extern "C" fn vkhip_scope_writes(
    scope: *const VkhipScope,
    resource: *const VkhipResource,
) -> VkhipStatus {
    const F: &str = "vkhip_scope_writes";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { declare(scope, resource, true, F) })
}

/// End the scope now and destroy its handle (NULL: nothing happens): a Vulkan scope writes its
/// end timestamp into its command buffer, a CUDA scope marks its stream (a failed mark is
/// returned; the handle is gone all the same), a host scope reads the clock.
///
/// # Safety
/// No other call on `scope` runs now or later; a Vulkan scope's command buffer is still
/// recording.
#[no_mangle]
pub unsafe extern "C" fn vkhip_scope_end(scope: *mut VkhipScope) -> VkhipStatus {
    const F: &str = "vkhip_scope_end";
    entry(F, || {
        if scope.is_null() {
            return Ok(());
        }
        // SAFETY: a checked handle.
        if let Some(thread) = unsafe { handle::get(scope, F, "scope") }?.thread {
            same_thread(thread, F)?;
        }
        // SAFETY: checked live above; per this function's contract no other call uses it.
        let s = unsafe { handle::take(scope) };
        let open = s.open.into_inner().unwrap_or_else(|p| p.into_inner());
        match open {
            Some(Open::Vulkan(v, _queue)) => Ok(v.end()?),
            Some(Open::Cuda(c, _track)) => Ok(c.end()?),
            #[cfg(feature = "hip")]
            Some(Open::Hip(h, _track)) => Ok(h.end()?),
            Some(Open::Host(h)) => Ok(h.end()?),
            None => Ok(()),
        }
    })
}

/// Finish: wait (bounded) for the last results and hand back the capture. The profiler's handle
/// stays to be destroyed; every other call on it is VKHIP_STATUS_INVALID from now on.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_profiler_finish(
    profiler: *const VkhipProfiler,
    out: *mut *mut VkhipCapture,
) -> VkhipStatus {
    const F: &str = "vkhip_profiler_finish";
    entry(F, || {
        let make = || {
            // SAFETY: a checked handle.
            let p = unsafe { handle::get(profiler, F, "profiler") }?;
            let taken = lock(&p.profiler).take();
            let profiler =
                taken.ok_or_else(|| Fail::invalid(format!("{F}: the profiler was finished already")))?;
            let capture = VkhipCapture::new(profiler.finish()?);
            Ok(capture)
        };
        // SAFETY: `out` is NULL or writable (this function's contract).
        unsafe { handle::create(out, F, make) }
    })
}

/// What a finished profiler recorded: the checker's verdict, the report, the trace.
pub struct VkhipCapture {
    /// Behind a lock: its sinks are `Send` but not `Sync`, and the header lets any thread use it.
    capture: Mutex<Capture>,
    verdict: VkhipVerdict,
    report: CString,
    violations: Vec<CString>,
}
handle!(VkhipCapture, Capture);

fn c_line(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

impl VkhipCapture {
    fn new(capture: Capture) -> VkhipCapture {
        let summary = capture.report();
        let check = &summary.check;
        let verdict = VkhipVerdict {
            violations: check.violation_count,
            unordered: check.by_rule.unordered,
            overlap: check.by_rule.overlap,
            wait_before_signal: check.by_rule.wait_before_signal,
            pairs_checked: check.pairs_checked,
            waits_checked: check.waits_checked,
            unverifiable: check.unverifiable.total(),
            tolerance_ns: check.tolerance_ns,
            frames: check.frames,
            violations_kept: check.violations.len() as u64,
        };
        let violations = check.violations.iter().map(|v| c_line(&v.message)).collect();
        VkhipCapture {
            verdict,
            report: c_line(&summary.to_string()),
            violations,
            capture: Mutex::new(capture),
        }
    }
}

/// The checker's verdict on every pair of conflicting accesses from different tracks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct VkhipVerdict {
    /// All violations (0: no hazard found).
    pub violations: u64,
    /// By rule: two conflicting accesses no semaphore chain orders.
    pub unordered: u64,
    /// Ordered, but on the clock the later began before the earlier ended.
    pub overlap: u64,
    /// A wait's first work began before the signal it waited for.
    pub wait_before_signal: u64,
    /// Conflicting access pairs compared.
    pub pairs_checked: u64,
    /// Waits compared with their signal.
    pub waits_checked: u64,
    /// Waits that could not be verified (signal before the trace, never signalled, no time).
    pub unverifiable: u64,
    /// The largest tolerance a comparison used (the clocks' stated accuracy), ns.
    pub tolerance_ns: u64,
    /// Frames the checked items span.
    pub frames: u64,
    /// Violations with their sentence (vkhip_capture_violation): the first 1000.
    pub violations_kept: u64,
}

/// The checker's verdict.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_capture_verdict(
    capture: *const VkhipCapture,
    out: *mut VkhipVerdict,
) -> VkhipStatus {
    const F: &str = "vkhip_capture_verdict";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(capture, F, "capture")?.verdict)) })
}

/// Violation `index` (below VkhipVerdict::violations_kept) as one sentence: the rule, the
/// resource, both scopes with their tracks and frames, the overlap in µs. Valid while the
/// capture lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_capture_violation(
    capture: *const VkhipCapture,
    index: u64,
    out: *mut *const c_char,
) -> VkhipStatus {
    const F: &str = "vkhip_capture_violation";
    entry(F, || {
        let out = handle::out(out, F, "out")?;
        // SAFETY: a checked handle.
        let c = unsafe { handle::get(capture, F, "capture") }?;
        let line = usize::try_from(index)
            .ok()
            .and_then(|i| c.violations.get(i))
            .ok_or_else(|| Fail::invalid(format!("{F}: violation {index} of {} kept", c.violations.len())))?;
        // SAFETY: `out` checked above.
        unsafe { out.write(line.as_ptr()) };
        Ok(())
    })
}

/// The text report: clocks and their accuracy, the checker's verdict, frame time against the
/// GPU's busy time, hand-offs, scopes (several lines). Valid while the capture lives.
///
/// # Safety
/// `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn vkhip_capture_report(
    capture: *const VkhipCapture,
    out: *mut *const c_char,
) -> VkhipStatus {
    const F: &str = "vkhip_capture_report";
    // SAFETY: a checked handle; `out` is NULL or writable (this function's contract).
    entry(F, || unsafe { handle::put(out, F, || Ok(handle::get(capture, F, "capture")?.report.as_ptr())) })
}

/// Write the Chrome/Perfetto JSON trace (for ui.perfetto.dev) to `path`.
///
/// # Safety
/// `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn vkhip_capture_write_perfetto(
    capture: *const VkhipCapture,
    path: *const c_char,
) -> VkhipStatus {
    const F: &str = "vkhip_capture_write_perfetto";
    entry(F, || {
        use std::os::unix::ffi::OsStrExt;
        if path.is_null() {
            return Err(Fail::new(VkhipStatus::NullArgument, format!("{F}: path is NULL")));
        }
        // SAFETY: a checked handle; `path` is NUL-terminated (this function's contract).
        let (c, path) = unsafe { (handle::get(capture, F, "capture")?, std::ffi::CStr::from_ptr(path)) };
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
        lock(&c.capture).write_perfetto(path).map_err(|e| Fail::new(status::of_trace(&e), e.to_string()))
    })
}

/// Destroy a capture (NULL: nothing happens).
///
/// # Safety
/// No other call on `capture` runs now or later.
#[no_mangle]
pub unsafe extern "C" fn vkhip_capture_destroy(capture: *mut VkhipCapture) -> VkhipStatus {
    const F: &str = "vkhip_capture_destroy";
    // SAFETY: per this function's contract.
    entry(F, || unsafe { handle::destroy(capture, F) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn send_sync<T: Send + Sync>() {}

    #[test]
    fn the_handles_the_header_lets_any_thread_use_are_send_and_sync() {
        send_sync::<VkhipProfiler>();
        send_sync::<VkhipResource>();
        send_sync::<VkhipProfSemaphore>();
        send_sync::<VkhipProfQueue>();
        send_sync::<VkhipProfStream>();
        send_sync::<VkhipCapture>();
        #[cfg(feature = "hip")]
        send_sync::<VkhipProfHipStream>();
    }

    #[test]
    fn options_translate_and_refuse_unknown_values() {
        let mut o = VkhipProfilerOptions { enabled: true, cuda_stamps: 0, host_query_reset: 0 };
        // SAFETY: `o` is writable.
        assert_eq!(unsafe { vkhip_profiler_options_default(&mut o) }, VkhipStatus::Ok);
        assert_eq!((o.enabled, o.cuda_stamps, o.host_query_reset), (true, VKHIP_CUDA_STAMPS_KERNEL, -1));
        let events = VkhipProfilerOptions { cuda_stamps: VKHIP_CUDA_STAMPS_EVENTS, host_query_reset: 1, ..o };
        let rust = events.to_rust("f").ok().map(|r| (r.cuda_stamps, r.host_query_reset));
        assert_eq!(rust, Some((CudaStamps::Events, Some(true))));
        let bad = VkhipProfilerOptions { host_query_reset: 2, ..o }.to_rust("f").err().map(|e| e.status);
        assert_eq!(bad, Some(VkhipStatus::Invalid));
        let bad = VkhipProfilerOptions { cuda_stamps: 7, ..o }.to_rust("f").err().map(|e| e.message);
        assert_eq!(bad.as_deref(), Some("f: 7 is no VKHIP_CUDA_STAMPS_*"));
    }
}
