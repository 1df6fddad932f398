//! Vulkan ⇄ CUDA buffer interop in one file: Vulkan exports two buffers and two timeline
//! semaphores, CUDA imports them, a kernel of our own writes a buffer every frame between a wait
//! and a signal, and Vulkan reads it back (as a draw would) without any copy between the APIs.
//! The host checks every value. Headless.
//!
//!     cargo run -p vkhip-interop --example cuda_buffer
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no usable CUDA device
//! (no driver, no GPU, or a Vulkan device CUDA does not see), with one line on stderr.
//!
//! The six steps, in the order they appear below: export → import → map → wait → kernel → signal.

use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::cuda::{devices, Cuda};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_interop::{FrameStream, FrameValues};

/// Our kernel: frame f writes f × 100000 + i into element i (exact in f32 for what we use).
const KERNEL: &str = r#"
extern "C" __global__ void ramp(float* out, unsigned int n, float frame)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = frame * 100000.0f + (float)i;
    }
}
"#;

/// Floats per buffer.
const N: u32 = 1 << 16;
/// Buffers used in turn (frame f uses buffer f mod K): with 2, CUDA may write one while Vulkan
/// reads the other.
const K: u64 = 2;
const FRAMES: u64 = 12;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("cuda_buffer: no usable CUDA device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("cuda_buffer: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    // Which GPU: the Vulkan device whose deviceUUID is one of CUDA's devices.
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Cuda)?;
    let cuda = Cuda::open(vk.uuid())?;
    println!("vulkan: {}\ncuda:   {}", vk.describe(), cuda.describe());

    // 1. Export. `written` is CUDA's timeline (buffer f mod K holds frame f at value f + 1),
    //    `read` is Vulkan's (frame f's buffer was read at value f + 1).
    let bytes = u64::from(N) * 4;
    let buffers = [vk.shared_buffer(bytes)?, vk.shared_buffer(bytes)?];
    let written = vk.shared_timeline(0)?;
    let read = vk.shared_timeline(0)?;

    // 2 + 3. Import into CUDA and map. Each export is a new fd that the import consumes.
    let imported = [cuda.import_buffer(buffers[0].export()?)?, cuda.import_buffer(buffers[1].export()?)?];
    let cuda_written = cuda.import_timeline(written.export()?)?;
    let cuda_read = cuda.import_timeline(read.export()?)?;
    let kernel = cuda.compile(KERNEL, "ramp")?;

    let values = FrameValues { slots: K };
    for f in 0..FRAMES {
        let slot = (f % K) as usize;
        // 4. wait: the previous frame that used this buffer (f − K) has been read by Vulkan;
        // 5. kernel: ours, on CUDA's stream;
        // 6. signal: `written` = f + 1 once the kernel is done. The host returns at once.
        let wait = values.wait_before_write(f).map(|v| (&cuda_read, v));
        cuda.frame(wait, Some((&cuda_written, values.signal(f))), |cuda| {
            let (mut out, mut n, mut frame) = (imported[slot].device_ptr(), N, f as f32);
            let mut args = [
                (&mut out as *mut u64).cast::<c_void>(),
                (&mut n as *mut u32).cast::<c_void>(),
                (&mut frame as *mut f32).cast::<c_void>(),
            ];
            // SAFETY: `ramp(float*, unsigned int, float)` loaded through `cuda`: one pointer per
            // parameter, in order, to values of those types; `out` maps N floats, the kernel
            // writes indices < N, and the buffer outlives the stream's work (dropped after it).
            unsafe { cuda.launch(&kernel, [N.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }
        })?;

        // Vulkan's turn, as a draw would do it: wait `written` ≥ f + 1 on the GPU, read the
        // buffer (here: copy it to the host), signal `read` = f + 1. The host waits only on a
        // fence of Vulkan's own, never on the value CUDA signals (see `vulkan::wait`).
        let v = values.signal(f);
        let got = vk.read_buffer(&buffers[slot], Some((&written, v)), Some((&read, v)))?;
        for (i, chunk) in got.chunks_exact(4).enumerate() {
            let value = f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let expected = f as f32 * 100000.0 + i as f32;
            if value != expected {
                return Err(
                    format!("frame {f}, buffer {slot}: element {i} is {value}, expected {expected}").into()
                );
            }
        }
        if got.len() != N as usize * 4 {
            return Err(format!("frame {f}: read back {} bytes, expected {}", got.len(), N * 4).into());
        }
        println!("frame {f:2}: buffer {slot}: all {N} values as expected");
    }
    cuda.synchronize()?;
    println!("cuda_buffer: OK ({FRAMES} frames, {} values checked)", FRAMES * u64::from(N));
    // Teardown is the reverse of declaration: the kernel and the CUDA imports go first (each waits
    // for the stream), then the Vulkan semaphores and buffers, then CUDA's context, then Vulkan.
    Ok(())
}
