//! The interop itself, as a library: Vulkan exports a buffer and two timeline semaphores, a compute
//! API imports them, and every frame runs wait → *your* kernel → signal. Nothing here knows about
//! the sine wave, the window or the profiler; vkhip's own CUDA backend is built on the same calls.
//!
//! ## The six steps (`crates/vkhip-interop/examples/cuda_buffer.rs` runs them end to end)
//! 1. **export** — the crate's `vkhip_interop::vulkan::Device` makes a `SharedBuffer`
//!    (device-local, its own dedicated allocation, exportable as OPAQUE_FD) and `SharedSemaphore`
//!    timelines, and exports each as a file descriptor: `ExportedMemory` (fd + the sizes an
//!    importer needs) and [`ImportFd`].
//! 2. **import** — the compute API opens the device whose UUID is Vulkan's `deviceUUID`
//!    (`vkhip_interop::cuda::Cuda::open`) and imports the fds (`Cuda::import_buffer`,
//!    `Cuda::import_timeline`). An fd is *consumed*: owned by the driver after a
//!    successful import, closed by vkhip after a failed one ([`ImportFd`]), never both.
//! 3. **map** — the imported memory is mapped to a device pointer for kernels
//!    (`vkhip_interop::cuda::CudaBuffer::device_ptr`).
//! 4. **wait** — before writing, the compute stream waits for the value Vulkan signals when it is
//!    done reading the buffer.
//! 5. **kernel** — your launch, on the same stream ([`FrameStream::frame`] takes a closure).
//! 6. **signal** — the stream signals the value Vulkan waits for before it reads.
//!
//! Values: frame f is `f + 1` on both timelines (0 = nothing yet). The host never blocks on a
//! value the compute API signals — on NVIDIA such a wait takes ≈ 10 ms (docs/ARCHITECTURE.md); wait
//! on Vulkan's own values, or on the compute API's own stream or events.
//!
//! ## Teardown
//! Drop the compute side first (it synchronises its stream, then destroys the imported
//! semaphores and memory), then the Vulkan objects, then the Vulkan device. Holding the values
//! in that order in one struct (fields drop in declaration order) encodes it.
//!
//! ## HIP
//! `hip` (with `--features hip`) has the same names for AMD GPUs (`examples/hip_interop.rs`).
//! ROCm on Linux cannot import semaphores, so there steps 4 and 6 become host hand-offs: wait for
//! the stream after the kernel, then let Vulkan read (vkhip's `bridged` scheme).
//!
//! For several frames in flight, run-ahead and batches, see [`crate::sync`], which drives vkhip's
//! backends with the same steps.
//!
//! ```
//! // The value convention, and why the compute side of frame f waits for frame f − K's draw.
//! use vkhip::interop::FrameValues;
//! let v = FrameValues { slots: 3 };
//! assert_eq!(v.signal(0), 1); // frame 0 done: 'computed' = 1
//! assert_eq!(v.wait_before_write(2), None); // slot 2 was never read
//! assert_eq!(v.wait_before_write(3), Some(1)); // slot 0 again: frame 0's draw must be done
//! ```

#[cfg(feature = "hip")]
pub mod hip;

pub use crate::compute::fd::ImportFd;
pub use crate::compute::ComputeError;
pub use crate::compute::InteropMemory;

/// One stream of a compute API, as the protocol uses it: wait, signal, and one frame between
/// them. `hip::Hip` implements it (CUDA: the crate's `vkhip_interop::FrameStream`).
pub trait FrameStream {
    /// The API's imported semaphore.
    type Semaphore;

    /// Enqueue a wait on the stream: later work starts once `semaphore` reaches `value` (for a
    /// binary semaphore, once it is signalled; `value` is ignored).
    fn wait(&self, semaphore: &Self::Semaphore, value: u64) -> Result<(), ComputeError>;

    /// Enqueue a signal on the stream: `semaphore` reaches `value` once earlier work is done.
    fn signal(&self, semaphore: &Self::Semaphore, value: u64) -> Result<(), ComputeError>;

    /// One frame of the protocol on the stream: wait (if any) → `launch` → signal (if any). The
    /// host does not wait for anything.
    fn frame(
        &self,
        wait: Option<(&Self::Semaphore, u64)>,
        signal: Option<(&Self::Semaphore, u64)>,
        launch: impl FnOnce(&Self) -> Result<(), ComputeError>,
    ) -> Result<(), ComputeError> {
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

/// The timeline values of the protocol for K buffers used in turn (frame f uses buffer f mod K).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameValues {
    pub slots: u64,
}

impl FrameValues {
    /// The value that says "frame `f` is done" (written, or drawn): `f + 1`.
    pub fn signal(&self, frame: u64) -> u64 {
        frame + 1
    }

    /// The value of the reader's timeline to wait for before writing frame `f`'s buffer: the
    /// previous frame that used it, f − K, must be done reading (None while f < K).
    pub fn wait_before_write(&self, frame: u64) -> Option<u64> {
        (frame >= self.slots).then(|| frame + 1 - self.slots)
    }
}
