//! Vulkan ⇄ HIP buffer interop in one file: Vulkan exports two buffers, HIP imports them, a
//! kernel of our own writes a buffer every frame, and Vulkan reads it back (as a draw would)
//! without any copy between the APIs. The host checks every value. Headless.
//!
//!     HIP_PATH=/opt/rocm cargo run -p vkhip-interop --features hip --example hip_buffer
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no usable HIP device
//! (no ROCm, no AMD GPU, or a Vulkan device HIP does not see), with one line on stderr.
//!
//! ROCm on Linux cannot import Vulkan semaphores, so the wait and the signal of the protocol
//! become a hand-off on the host: HIP's stream is synchronised after the kernel, then Vulkan
//! reads. The steps, in the order they appear below: export → import → map → kernel → hand-off.

use std::error::Error;
use std::ffi::c_void;
use std::process::ExitCode;
use vkhip_interop::hip::{devices, Hip};
use vkhip_interop::vulkan::{Device, Importer};
use vkhip_interop::FrameStream;

/// Our kernel: frame f writes (f + 1) × 65536 − 3i into element i (exact in f32 for what we use).
const KERNEL: &str = r#"
extern "C" __global__ void descend(float* out, unsigned int n, float frame)
{
    const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = (frame + 1.0f) * 65536.0f - 3.0f * (float)i;
    }
}
"#;

/// Floats per buffer.
const N: u32 = 1 << 16;
/// Buffers used in turn (frame f uses buffer f mod K).
const K: usize = 2;
const FRAMES: u64 = 12;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => match e.downcast_ref::<vkhip_interop::Error>() {
            Some(e) if e.is_environment() => {
                eprintln!("hip_buffer: no usable HIP device: {e}");
                ExitCode::from(2)
            }
            _ => {
                eprintln!("hip_buffer: error: {e}");
                ExitCode::from(1)
            }
        },
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    // Which GPU: the Vulkan device whose deviceUUID is one of HIP's devices (HIP builds the UUID
    // from the PCI location, as AMD's Vulkan drivers do).
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = Device::open(&uuids, Importer::Hip)?;
    let hip = Hip::open(vk.uuid())?;
    println!("vulkan: {}\nhip:    {}", vk.describe(), hip.describe());

    // 1. Export.
    let bytes = u64::from(N) * 4;
    let buffers = [vk.shared_buffer(bytes)?, vk.shared_buffer(bytes)?];

    // 2 + 3. Import into HIP and map. Each export is a new fd; HIP borrows it and the crate
    //    closes it after the import (`HipBuffer::FD_OWNERSHIP`).
    let imported = [hip.import_buffer(buffers[0].export()?)?, hip.import_buffer(buffers[1].export()?)?];
    let kernel = hip.compile(KERNEL, "descend")?;

    for f in 0..FRAMES {
        let slot = f as usize % K;
        // 4. kernel: ours, on HIP's stream (no semaphore to wait for or to signal on Linux).
        hip.frame(None, None, |hip| {
            let (mut out, mut n, mut frame) = (imported[slot].device_ptr(), N, f as f32);
            let mut args = [
                (&mut out as *mut u64).cast::<c_void>(),
                (&mut n as *mut u32).cast::<c_void>(),
                (&mut frame as *mut f32).cast::<c_void>(),
            ];
            // SAFETY: `descend(float*, unsigned int, float)` loaded through `hip`: one pointer per
            // parameter, in order, to values of those types; `out` maps N floats, the kernel
            // writes indices < N, and the buffer outlives the stream's work (dropped after it).
            unsafe { hip.launch(&kernel, [N.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }
        })?;
        // 5. hand-off on the host: the kernel is done before Vulkan's submit is made, and Vulkan
        //    finishes reading before the next kernel that uses this buffer is enqueued.
        hip.synchronize()?;

        let got = vk.read_buffer(&buffers[slot], None, None)?;
        if got.len() != N as usize * 4 {
            return Err(format!("frame {f}: read back {} bytes, expected {}", got.len(), N * 4).into());
        }
        for (i, chunk) in got.chunks_exact(4).enumerate() {
            let value = f32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            let expected = (f as f32 + 1.0) * 65536.0 - 3.0 * i as f32;
            if value != expected {
                return Err(
                    format!("frame {f}, buffer {slot}: element {i} is {value}, expected {expected}").into()
                );
            }
        }
        println!("frame {f:2}: buffer {slot}: all {N} values as expected");
    }
    println!("hip_buffer: OK ({FRAMES} frames, {} values checked)", FRAMES * u64::from(N));
    // Teardown is the reverse of declaration: the kernel and the HIP imports go first (each waits
    // for the stream), then the Vulkan buffers, then HIP's stream, then Vulkan.
    Ok(())
}
