//! Share Vulkan memory and semaphores with CUDA or HIP kernels, without a copy.
//!
//! Vulkan allocates a buffer or an image in exportable memory and exports it, with two timeline
//! semaphores, as file descriptors; the compute API imports them, maps the memory for its
//! kernels, and every frame runs **wait → your kernel → signal** on its stream while Vulkan waits
//! for that signal before it reads. Nothing is copied between the APIs.
//!
//! | module | what |
//! |---|---|
//! | [`vulkan`] | the export side: a device (yours, borrowed, or one the crate opens), shared buffers, 2D images and timeline semaphores, and the barriers around a foreign writer |
//! | [`cuda`] | the CUDA driver API and NVRTC, loaded at run time: open the device Vulkan runs on, import, map, compile, launch, wait and signal on one stream |
#![cfg_attr(
    feature = "hip",
    doc = "| [`hip`] (feature `hip`) | the same names for AMD GPUs through HIP (linked) and hiprtc (loaded at run time); no semaphore import on Linux, so the hand-off is on the host |"
)]
#![cfg_attr(
    not(feature = "hip"),
    doc = "| `hip` (feature `hip`) | the same names for AMD GPUs through HIP (linked) and hiprtc (loaded at run time); no semaphore import on Linux, so the hand-off is on the host |"
)]
#![cfg_attr(
    feature = "wgpu",
    doc = "| [`wgpu_interop`] (feature `wgpu`) | wgpu 30 textures and buffers shared with the compute API: a wgpu device with what sharing needs, and hand-offs on wgpu's queue that agree with wgpu's own barriers (Vulkan backend only) |"
)]
#![cfg_attr(
    not(feature = "wgpu"),
    doc = "| `wgpu_interop` (feature `wgpu`) | wgpu 30 textures and buffers shared with the compute API: a wgpu device with what sharing needs, and hand-offs on wgpu's queue that agree with wgpu's own barriers (Vulkan backend only) |"
)]
//! | [`cuda_in_vulkan`] | no sharing at all: CUDA kernels recorded into a Vulkan command buffer and run on Vulkan's queue (NVIDIA's `VK_NVX_binary_import`) |
//! | [`Error`] | one error type: the API, the call that failed and its numeric status |
//!
//! # The protocol, end to end
//!
//! K buffers (or images) are used in turn: frame f writes number f mod K. Two timeline
//! semaphores count frames plus one ([`FrameValues`]; 0 means "nothing yet"):
//! `written` (the compute side sets it to f + 1 once frame f's buffer is written) and `read`
//! (Vulkan sets it to f + 1 once it has finished reading frame f's buffer).
//!
//! 1. **export** — [`vulkan::Device::shared_buffer`], [`vulkan::Device::shared_image`] and
//!    [`vulkan::Device::shared_timeline`] create the objects in exportable memory (a dedicated
//!    allocation each) and export them as OPAQUE_FD ([`ExportedMemory`], [`ExportedImage`],
//!    [`ImportFd`]).
//! 2. **import** — the compute API opens the device whose UUID is Vulkan's `deviceUUID` and
//!    imports each fd. An fd is consumed: after a successful CUDA import the driver owns it;
//!    after a failed one the crate closes it ([`ImportFd`], [`FdOwnership`]).
//! 3. **map** — imported memory is mapped as a device pointer (buffers) or as an array with a
//!    surface object a kernel writes (images).
//! 4. **wait** — before frame f writes its buffer, the compute stream waits until `read` ≥
//!    f + 1 − K: the frame that last used that buffer has been read ([`FrameValues::wait_before_write`]).
//! 5. **kernel** — your launch, on the same stream ([`FrameStream::frame`]).
//! 6. **signal** — the stream sets `written` = f + 1; Vulkan's submit that reads the buffer waits
//!    for that value on the GPU and signals `read` = f + 1 when it is done.
//!
//! **Host waits on a value the compute API signals.** On NVIDIA a host `vkWaitSemaphores` on a
//! timeline value CUDA signalled wakes ≈ 8.5–10 ms after the signal, while the counter shows the
//! value within microseconds (H200, driver 580.159.04: 8,488 µs per round trip of a ping-pong
//! with a 1-thread kernel, against 9.4 µs spinning on the counter and 11.9 µs with CUDA's own
//! stream synchronisation). So the crate's host wait, [`vulkan::SharedSemaphore::wait`], never
//! blocks in `vkWaitSemaphores`: it reads the counter back to back for 50 µs, then between
//! sleeps growing from 10 to 100 µs ([`vulkan::wait`], which also waits on a timeline of your
//! own): it returns within about 100 µs of any signal, and a long wait uses a small part of a
//! core. [`vulkan::SharedSemaphore::wait_blocking`] is plain `vkWaitSemaphores`, for values only
//! Vulkan's queue or the host signals (it uses no CPU while it waits). Better still, let the
//! GPU wait (steps 4 and 6), or wait on the compute API's own stream.
//!
//! **HIP on Linux** cannot import semaphores (ROCm's Linux import is a stub), so steps 4 and 6
//! become host hand-offs there: synchronise the stream after the kernel, then let Vulkan read.
//!
//! # Teardown
//!
//! Finish the queue and the stream, destroy the imported semaphores, unmap and destroy the
//! imported memory, then free the Vulkan memory and semaphores, then the devices. The types
//! encode it: every imported object holds its compute device open and waits for the stream
//! before it is destroyed, and every Vulkan object holds the [`vulkan::Device`] it came from.
//! Keep the compute side's objects in fields declared before the Vulkan ones (fields drop in
//! declaration order). Nothing the crate did not create — your instance, device, queue — is
//! ever destroyed by it.
//!
//! # Bring your own device
//!
//! An engine already has a `VkInstance`, a `VkPhysicalDevice` and a `VkDevice`. Ask the crate
//! what to enable before you create the device ([`vulkan::requirements`]), then hand it over:
//!
//! ```no_run
//! # fn engine() -> (ash::Entry, ash::Instance, ash::vk::PhysicalDevice, ash::Device, u32) { unimplemented!() }
//! use vkhip_interop::vulkan::{requirements, Device, Importer};
//!
//! let need = requirements(Importer::Cuda);
//! // … create your instance with `need.instance_extensions` and your device with
//! // `need.device_extensions` and the features in `need` enabled …
//! let (entry, instance, physical, device, queue_family) = engine();
//! // SAFETY: the handles are valid, `device` was created from `physical` with `need` enabled, and
//! // they outlive every object made from the returned Device.
//! let shared = unsafe { Device::from_raw(&entry, &instance, physical, &device, queue_family, Importer::Cuda) }?;
//! let buffer = shared.shared_buffer(1 << 20)?;
//! # Ok::<(), vkhip_interop::Error>(())
//! ```
//!
//! `from_raw` checks what it can: that the physical device can export the memory and semaphore
//! types, and that the device's export entry points resolve (they only do when the extensions
//! were enabled). It borrows: dropping the [`vulkan::Device`] destroys nothing of yours.
//! [`vulkan::Device::open`] creates an instance and device of its own instead, for samples.
//!
//! ```
//! // The value convention, and why the compute side of frame f waits for frame f − K's read.
//! use vkhip_interop::FrameValues;
//! let v = FrameValues { slots: 3 };
//! assert_eq!(v.signal(0), 1); // frame 0 written: 'written' = 1
//! assert_eq!(v.wait_before_write(2), None); // buffer 2 was never read
//! assert_eq!(v.wait_before_write(3), Some(1)); // buffer 0 again: frame 0's read must be done
//! ```
#![warn(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub mod cuda;
pub mod cuda_in_vulkan;
pub mod device_match;
mod error;
mod export;
mod fd;
mod held;
#[cfg(feature = "hip")]
pub mod hip;
pub mod vulkan;
#[cfg(feature = "wgpu")]
pub mod wgpu_interop;

pub use error::{Api, Error, ErrorKind, Limit, Result};
pub use export::{ChannelType, ExportedImage, ExportedMemory, ImageFormat, ImageShape};
pub use fd::{FdOwnership, ImportFd};

/// One stream of a compute API, as the protocol uses it: wait, signal, and one frame between
/// them. `cuda::Cuda` and `hip::Hip` implement it; `frame` is written once for both.
pub trait FrameStream {
    /// The API's imported semaphore.
    type Semaphore;

    /// Enqueue a wait on the stream: later work starts once `semaphore` reaches `value` (for a
    /// binary semaphore, once it is signalled; `value` is ignored).
    fn wait(&self, semaphore: &Self::Semaphore, value: u64) -> Result<()>;

    /// Enqueue a signal on the stream: `semaphore` reaches `value` once earlier work is done.
    fn signal(&self, semaphore: &Self::Semaphore, value: u64) -> Result<()>;

    /// One frame of the protocol on the stream: wait (if any) → `launch` → signal (if any). The
    /// host does not wait for anything.
    fn frame(
        &self,
        wait: Option<(&Self::Semaphore, u64)>,
        signal: Option<(&Self::Semaphore, u64)>,
        launch: impl FnOnce(&Self) -> Result<()>,
    ) -> Result<()> {
        if let Some((semaphore, value)) = wait {
            self.wait(semaphore, value)?;
        }
        launch(self)?;
        if let Some((semaphore, value)) = signal {
            self.signal(semaphore, value)?;
        }
        Ok(())
    }
}

/// The turns of one shared object passed back and forth between Vulkan and one consumer (a
/// framework's stream, an engine's kernels), counted on two timelines: `vulkan` (Vulkan signals
/// n once its n-th turn is done) and `consumer` (the consumer signals n once its n-th turn is
/// done; 0 = none yet). Vulkan's turn waits for the consumer's last release; the consumer's
/// turn waits for Vulkan's last signal. Both waits are on the GPU (a submission's wait, a
/// stream's wait), never on the host.
///
/// ```
/// use vkhip_interop::Turns;
/// let mut t = Turns::default();
/// assert_eq!(t.consumer_wait(), None); // nothing written by Vulkan yet
/// assert_eq!(t.vulkan_turn(), (None, 1)); // Vulkan writes: no wait, signals vulkan = 1
/// assert_eq!(t.consumer_wait(), Some(1)); // the consumer's stream waits vulkan >= 1
/// assert_eq!(t.consumer_release(), 1); // and signals consumer = 1 when done
/// assert_eq!(t.vulkan_turn(), (Some(1), 2)); // Vulkan's next turn waits consumer >= 1
/// assert_eq!(t.taken(), (2, 1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turns {
    vulkan: u64,
    consumer: u64,
}

impl Turns {
    /// Vulkan takes a turn: (the `consumer` value its submission waits for, if the consumer
    /// ever released; the `vulkan` value it signals).
    pub fn vulkan_turn(&mut self) -> (Option<u64>, u64) {
        self.vulkan += 1;
        ((self.consumer > 0).then_some(self.consumer), self.vulkan)
    }

    /// The `vulkan` value the consumer waits for before it touches the object (None: Vulkan
    /// never wrote it).
    pub fn consumer_wait(&self) -> Option<u64> {
        (self.vulkan > 0).then_some(self.vulkan)
    }

    /// The consumer ends its turn: the `consumer` value it signals.
    pub fn consumer_release(&mut self) -> u64 {
        self.consumer += 1;
        self.consumer
    }

    /// The turns taken so far: (Vulkan's, the consumer's releases).
    pub fn taken(&self) -> (u64, u64) {
        (self.vulkan, self.consumer)
    }
}

/// The timeline values of the protocol for K buffers used in turn (frame f uses buffer f mod K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameValues {
    pub slots: u64,
}

impl FrameValues {
    /// The value that says "frame `f` is done" (written, or read): `f + 1`.
    pub fn signal(&self, frame: u64) -> u64 {
        frame + 1
    }

    /// The value of the reader's timeline to wait for before writing frame `f`'s buffer: the
    /// previous frame that used it, f − K, must be done reading (None while f < K).
    pub fn wait_before_write(&self, frame: u64) -> Option<u64> {
        (frame >= self.slots).then(|| frame + 1 - self.slots)
    }
}
