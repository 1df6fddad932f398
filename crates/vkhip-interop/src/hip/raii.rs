//! One owning type per HIP object, above the binding layer. Drop never panics: a failed destroy
//! is logged and the handle abandoned.
//!
//! Ordering rules the owners in [`super`] keep (each object's `Drop` waits for the stream first,
//! and every object holds the stream alive):
//! - everything recorded on a stream completes before the stream is destroyed, and events are
//!   destroyed while their stream still exists (ROCm#4670: an event synchronised after its stream
//!   is gone reports a misleading `hipErrorCapturedEvent`);
//! - imported semaphores and memory are released before Vulkan frees the objects they came from
//!   (the owner is dropped before the Vulkan side);
//! - a mapped pointer is freed before the imported memory it maps ([`MappedBuffer`] owns its
//!   [`ExternalMemory`]), and a surface is destroyed before its array, the array before the
//!   import ([`Surface`] owns its [`MappedArray`], which owns its [`ExternalMemory`]).

use std::ffi::{c_void, CString};

use super::ffi::{
    self, RawEvent, RawExternalMemory, RawExternalSemaphore, RawFunction, RawModule, RawStream,
};
use super::image_ffi::{self, ChannelFormatDesc, ImageCalls, RawMipmappedArray, RawSurface};
use super::{MEMORY_FD_OWNERSHIP, SEMAPHORE_FD_OWNERSHIP};
use crate::error::{Api, Error, Result};
use crate::{ChannelType, ImageFormat, ImportFd};

fn log_drop_error(what: &str, r: Result<()>) {
    if let Err(e) = r {
        log::warn!("hip: releasing {what}: {e}");
    }
}

/// A non-blocking stream (`hipStreamNonBlocking`: never implicitly ordered against the null
/// stream). Drop synchronises it, then destroys it.
pub struct Stream {
    raw: RawStream,
}

// SAFETY: a hipStream_t is a handle into the runtime, which locks its own state; it may be used
// from any thread (the owner sets the current device before each use).
unsafe impl Send for Stream {}

impl Stream {
    /// A stream on the current device.
    pub fn new_non_blocking() -> Result<Stream> {
        Ok(Stream { raw: ffi::stream_create_non_blocking()? })
    }

    pub fn raw(&self) -> RawStream {
        self.raw
    }

    /// `hipStreamSynchronize`: wait for everything enqueued so far.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `raw` is live for as long as `self`.
        unsafe { ffi::stream_synchronize(self.raw) }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        log_drop_error("stream (synchronize)", self.synchronize());
        // SAFETY: `raw` is live, idle after the synchronise above, and never used again.
        log_drop_error("stream", unsafe { ffi::stream_destroy(self.raw) });
    }
}

/// An event. Destroy it before its stream (the owner's field order does).
pub struct Event {
    raw: RawEvent,
}

// SAFETY: as for Stream: a runtime handle usable from any thread.
unsafe impl Send for Event {}
// SAFETY: no Rust-side state is mutated through `&self`; the runtime locks its own.
unsafe impl Sync for Event {}

impl Event {
    /// An event without timing (cheapest to record and wait on).
    pub fn new_sync_only() -> Result<Event> {
        Ok(Event { raw: ffi::event_create(ffi::EVENT_DISABLE_TIMING)? })
    }

    /// An event that records a timestamp, for [`Event::elapsed_ms`].
    pub fn new_timed() -> Result<Event> {
        Ok(Event { raw: ffi::event_create(ffi::EVENT_DEFAULT)? })
    }

    /// `hipEventRecord` on `stream`.
    pub fn record(&self, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::event_record(self.raw, stream.raw()) }
    }

    /// Whether the work before the last record has completed (never blocks).
    pub fn query(&self) -> Result<bool> {
        // SAFETY: `raw` is live; its stream outlives it (the owner holds both).
        unsafe { ffi::event_query(self.raw) }
    }

    /// `hipEventSynchronize`: the host waits until the recorded work is complete.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: `raw` is live; its stream outlives it (owner's field order).
        unsafe { ffi::event_synchronize(self.raw) }
    }

    /// Milliseconds between two completed timed events.
    pub fn elapsed_ms(start: &Event, stop: &Event) -> Result<f32> {
        // SAFETY: both events are live; the caller synchronised `stop` (hipEventElapsedTime
        // reports hipErrorNotReady otherwise, it does not misbehave).
        unsafe { ffi::event_elapsed_ms(start.raw, stop.raw) }
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and never used again; the owner synchronised its stream first.
        log_drop_error("event", unsafe { ffi::event_destroy(self.raw) });
    }
}

/// A loaded code object.
pub struct Module {
    raw: RawModule,
}

// SAFETY: runtime handles usable from any thread.
unsafe impl Send for Module {}
// SAFETY: no Rust-side state; the runtime serialises its own.
unsafe impl Sync for Module {}

/// `EM_AMDGPU`.
const EM_AMDGPU: usize = 224;

/// Whether `code` is a whole little-endian ELF64 object for AMDGPU, every header table and
/// section inside the slice. `hipModuleLoadData` takes no length and reads the object through
/// these headers, so nothing else may reach it.
fn is_whole_amdgpu_elf(code: &[u8]) -> bool {
    let u16_at =
        |o: usize| code.get(o..o.checked_add(2)?).map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])));
    let u32_at =
        |o: usize| code.get(o..o.checked_add(4)?).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let u64_at = |o: usize| {
        let bytes: [u8; 8] = code.get(o..o.checked_add(8)?)?.try_into().ok()?;
        usize::try_from(u64::from_le_bytes(bytes)).ok()
    };
    let fits = |start: usize, len: usize| start.checked_add(len).is_some_and(|end| end <= code.len());
    // (e_phoff, e_phentsize, e_phnum) and (e_shoff, e_shentsize, e_shnum).
    let table = |off, size, count| Some((u64_at(off)?, u16_at(size)?, u16_at(count)?));
    let (Some((phoff, phsize, phnum)), Some((shoff, shsize, shnum))) = (table(32, 54, 56), table(40, 58, 60))
    else {
        return false;
    };
    let tables_fit = fits(phoff, phsize * phnum) && fits(shoff, shsize * shnum);
    // Every section but SHT_NOBITS (8) has its bytes in the file.
    let sections_fit = || {
        (0..shnum).all(|i| {
            let at = shoff + i * shsize;
            matches!(
                (u32_at(at + 4), u64_at(at + 24), u64_at(at + 32)),
                (Some(8), _, _) | (Some(_), Some(0), _) | (Some(_), Some(_), Some(0))
            ) || matches!((u64_at(at + 24), u64_at(at + 32)), (Some(off), Some(len)) if fits(off, len))
        })
    };
    code.starts_with(b"\x7fELF\x02\x01") && u16_at(18) == Some(EM_AMDGPU) && tables_fit && sections_fit()
}

impl Module {
    /// `hipModuleLoadData` on the current device, for a whole AMDGPU ELF code object (what
    /// hiprtc returns); anything else is refused before the runtime sees it.
    pub fn load(code: &[u8]) -> Result<Module> {
        if !is_whole_amdgpu_elf(code) {
            return Err(Error::invalid(
                Api::Hip,
                format!("{} bytes that are not a whole AMDGPU ELF code object", code.len()),
            ));
        }
        // SAFETY: `code` is a whole code object (checked above): the runtime reads it through its
        // headers, which all lie inside the slice.
        let raw = unsafe { ffi::module_load_data(code) }?;
        Ok(Module { raw })
    }

    /// `hipModuleGetFunction(name)`: valid while `self` lives.
    pub fn function(&self, name: &str) -> Result<RawFunction> {
        let name = CString::new(name)
            .map_err(|_| Error::invalid(Api::Hip, format!("entry name {name:?} contains NUL")))?;
        // SAFETY: `raw` is live for as long as `self`.
        unsafe { ffi::module_get_function(self.raw, &name) }
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; the owner synchronised every stream that launched from it.
        log_drop_error("module", unsafe { ffi::module_unload(self.raw) });
    }
}

/// Memory imported from a Vulkan OPAQUE_FD export.
pub struct ExternalMemory {
    raw: RawExternalMemory,
    size: u64,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for ExternalMemory {}
// SAFETY: no Rust-side state is mutated through `&self`.
unsafe impl Sync for ExternalMemory {}

impl ExternalMemory {
    /// `hipImportExternalMemory(OPAQUE_FD, size = allocation_size, dedicated flag)`. The fd is
    /// released as [`MEMORY_FD_OWNERSHIP`] says, whatever the outcome.
    pub fn import(fd: ImportFd, allocation_size: u64, dedicated: bool) -> Result<ExternalMemory> {
        let raw = fd.import(MEMORY_FD_OWNERSHIP, |raw_fd| {
            // SAFETY: `raw_fd` is the open Vulkan memory export that `ImportFd` holds, and the
            // caller passes its VkMemoryRequirements::size as `allocation_size`.
            unsafe { ffi::import_external_memory_fd(raw_fd, allocation_size, dedicated) }
        })?;
        Ok(ExternalMemory { raw, size: allocation_size })
    }
}

impl Drop for ExternalMemory {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; its mapped pointer was freed first (MappedBuffer's Drop).
        log_drop_error("external memory", unsafe { ffi::destroy_external_memory(self.raw) });
    }
}

/// A device pointer to the first `size` bytes of an imported allocation. Owns the import.
pub struct MappedBuffer {
    ptr: *mut c_void,
    size: u64,
    /// Held for its Drop, which runs after `Drop::drop` freed `ptr`.
    _memory: ExternalMemory,
}

// SAFETY: the device pointer is an address in the GPU's virtual address space, not host memory;
// it is only passed to runtime calls, which may come from any thread.
unsafe impl Send for MappedBuffer {}
// SAFETY: as above; nothing is mutated through `&self` on the Rust side.
unsafe impl Sync for MappedBuffer {}

impl MappedBuffer {
    /// `hipExternalMemoryGetMappedBuffer(offset 0, size)`.
    pub fn map(memory: ExternalMemory, size: u64) -> Result<MappedBuffer> {
        if size == 0 || size > memory.size {
            return Err(Error::invalid(
                Api::Hip,
                format!("cannot map {size} bytes of a {}-byte import", memory.size),
            ));
        }
        // SAFETY: `memory` is live and at least `size` bytes long (checked above).
        let ptr = unsafe { ffi::external_memory_mapped_buffer(memory.raw, 0, size) }?;
        Ok(MappedBuffer { ptr, size, _memory: memory })
    }

    pub fn ptr(&self) -> *mut c_void {
        self.ptr
    }

    /// Enqueue a fill of the first `words` 32-bit words with `value` on `stream`. More words
    /// than the mapping holds is [`ErrorKind::Invalid`](crate::ErrorKind::Invalid).
    pub fn memset_d32_async(&self, value: u32, words: usize, stream: &Stream) -> Result<()> {
        let size = self._memory.size.min(self.size);
        if (words as u64).saturating_mul(4) > size {
            return Err(Error::invalid(
                Api::Hip,
                format!("a fill of {words} words does not fit {size} bytes"),
            ));
        }
        // SAFETY: the mapping holds at least `words` words (checked above); the stream is live.
        unsafe { ffi::memset_d32_async(self.ptr, value, words, stream.raw()) }
    }
}

impl Drop for MappedBuffer {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from hipExternalMemoryGetMappedBuffer and nothing uses it after this.
        // ROCm 6 registers and retains the import for the mapped pointer, and hipFree releases
        // that; HIP 5.x did neither and answers hipErrorInvalidValue, which is expected there.
        if let Err(e) = unsafe { ffi::free(self.ptr) } {
            log::debug!("hip: hipFree on a mapped external buffer: {e} (expected on HIP 5.x)");
        }
    }
}

/// `hipChannelFormatDesc` of a shared image format: 8, 16 or 32 bits in 1 or 4 channels.
fn channel_desc(format: ImageFormat) -> ChannelFormatDesc {
    let (bits, kind) = match format.channel_type() {
        ChannelType::U8 => (8, image_ffi::CHANNEL_FORMAT_KIND_UNSIGNED),
        ChannelType::F16 => (16, image_ffi::CHANNEL_FORMAT_KIND_FLOAT),
        ChannelType::F32 => (32, image_ffi::CHANNEL_FORMAT_KIND_FLOAT),
    };
    let rest = if format.channels() == 4 { bits } else { 0 };
    ChannelFormatDesc { x: bits, y: rest, z: rest, w: rest, f: kind }
}

/// A one-level mipmapped array mapped over an imported image. Owns the import.
pub struct MappedArray {
    raw: RawMipmappedArray,
    calls: &'static ImageCalls,
    /// Held for its Drop, which runs after `Drop::drop` freed the array.
    _memory: ExternalMemory,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for MappedArray {}
// SAFETY: no Rust-side state is mutated through `&self`.
unsafe impl Sync for MappedArray {}

impl MappedArray {
    /// `hipExternalMemoryGetMappedMipmappedArray`: `width` × `height` texels of `format`, one
    /// level, surface load/store allowed.
    pub fn map(memory: ExternalMemory, format: ImageFormat, width: u32, height: u32) -> Result<MappedArray> {
        let calls = ImageCalls::get()?;
        // SAFETY: `memory` is live and holds a Vulkan image of this format and extent (what
        // `ExportedImage` describes).
        let raw = unsafe { calls.map_mipmapped_array(memory.raw, channel_desc(format), width, height) }?;
        Ok(MappedArray { raw, calls, _memory: memory })
    }
}

impl Drop for MappedArray {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; its surface was destroyed first (Surface's Drop) and the owner
        // synchronised the stream.
        log_drop_error("mipmapped array", unsafe { self.calls.free_mipmapped_array(self.raw) });
    }
}

/// A surface object over level 0 of a mapped image. Owns the array.
pub struct Surface {
    raw: RawSurface,
    array: MappedArray,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for Surface {}
// SAFETY: no Rust-side state is mutated through `&self`.
unsafe impl Sync for Surface {}

impl Surface {
    /// `hipGetMipmappedArrayLevel(0)` + `hipCreateSurfaceObject`.
    pub fn create(array: MappedArray) -> Result<Surface> {
        // SAFETY: `array.raw` is live (owned by `array`) and has level 0.
        let level = unsafe { array.calls.level(array.raw, 0) }?;
        // SAFETY: `level` belongs to the live array, made with surface load/store.
        let raw = unsafe { array.calls.create_surface(level) }?;
        Ok(Surface { raw, array })
    }

    /// The `hipSurfaceObject_t` a kernel takes by value.
    pub fn raw(&self) -> u64 {
        self.raw as u64
    }
}

impl Drop for Surface {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and never used again; the owner synchronised the stream.
        log_drop_error("surface object", unsafe { self.array.calls.destroy_surface(self.raw) });
    }
}

/// A semaphore imported from a Vulkan OPAQUE_FD export.
pub struct ExternalSemaphore {
    raw: RawExternalSemaphore,
}

// SAFETY: runtime handle usable from any thread.
unsafe impl Send for ExternalSemaphore {}
// SAFETY: no Rust-side state is mutated through `&self`; the runtime locks its own.
unsafe impl Sync for ExternalSemaphore {}

impl ExternalSemaphore {
    /// `hipImportExternalSemaphore` with `handle_type` (`ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_*`).
    /// The fd is released as [`SEMAPHORE_FD_OWNERSHIP`] says, whatever the outcome.
    pub fn import(fd: ImportFd, handle_type: u32) -> Result<ExternalSemaphore> {
        let raw = fd.import(SEMAPHORE_FD_OWNERSHIP, |raw_fd| {
            // SAFETY: `raw_fd` is the open Vulkan semaphore export that `ImportFd` holds; the
            // caller picks the handle type that matches the semaphore's type.
            unsafe { ffi::import_external_semaphore_fd(raw_fd, handle_type) }
        })?;
        Ok(ExternalSemaphore { raw })
    }

    /// Enqueue a wait for `value` (timeline) or for the pending signal (binary; value ignored).
    pub fn wait_async(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::wait_external_semaphore_async(self.raw, value, stream.raw()) }
    }

    /// Enqueue a signal of `value` (timeline) or a binary signal (value ignored).
    pub fn signal_async(&self, value: u64, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live (borrowed owners).
        unsafe { ffi::signal_external_semaphore_async(self.raw, value, stream.raw()) }
    }
}

impl Drop for ExternalSemaphore {
    fn drop(&mut self) {
        // SAFETY: `raw` is live; the owner synchronised the stream that waits/signals it.
        log_drop_error("external semaphore", unsafe { ffi::destroy_external_semaphore(self.raw) });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What hiprtc returns passes the check `Module::load` makes before the runtime reads it
    /// without a length; anything cut short, or not for AMDGPU, does not.
    #[test]
    fn only_whole_amdgpu_code_objects_reach_the_runtime() {
        let source = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] = 2.0f; }";
        let code =
            super::super::compile_to_image(source, "k.hip", "gfx1030", &[]).expect("hiprtc without a GPU");
        assert!(is_whole_amdgpu_elf(&code));
        for cut in [0, 4, 63, 64, code.len() / 2, code.len() - 1] {
            assert!(!is_whole_amdgpu_elf(&code[..cut]), "cut at {cut}");
        }
        let mut x86 = code.clone();
        x86[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        assert!(!is_whole_amdgpu_elf(&x86));
        let e = Module::load(&code[..64]).err().expect("refused before hipModuleLoadData");
        assert_eq!(e.kind(), crate::ErrorKind::Invalid);
    }
}
