//! Vulkan ⇄ HIP interop in one file, the twin of `cuda_interop.rs`: Vulkan exports two buffers and
//! two timeline semaphores, HIP imports them, a kernel of our own writes a buffer every frame, and
//! Vulkan reads it back (as a draw would) without any copy between the APIs. The host checks
//! every value. Headless; no window, no sine wave, no profiler.
//!
//!     HIP_PATH=/opt/rocm cargo run --release --features hip --example hip_interop
//!
//! Exit codes: 0 every value checked, 1 a wrong value or a failed call, 2 no usable HIP device
//! (no ROCm, no AMD GPU, or a Vulkan device HIP does not see).
//!
//! The six steps: export → import → map → wait → kernel → signal. ROCm on Linux cannot import
//! Vulkan semaphores (hipamd#48, clr#72; HIP < 6.4 has no timeline handle type at all), so where
//! the import fails — on every AMD Linux machine today — the example says so and hands off on the
//! host instead (vkhip's `bridged` scheme): the kernel, then `synchronize()` (HIP's own wait),
//! then Vulkan reads. Only the semaphores change; the buffers are still shared without a copy.
//! The library calls are all in `vkhip::interop` (src/interop/{mod,vulkan,hip}.rs).
//!
//! Never run on AMD hardware: built, and its kernel compiled by hiprtc, without an AMD GPU only.

use std::ffi::c_void;
use std::process::ExitCode;
use vkhip::interop::hip::{devices, Hip, HipTimeline};
use vkhip::interop::vulkan::VulkanDevice;
use vkhip::interop::{FrameStream, FrameValues};

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
/// Buffers used in turn (frame f uses buffer f mod K).
const K: u64 = 2;
const FRAMES: u64 = 12;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if vkhip::app::is_environment_error(&e) => {
            eprintln!("hip_interop: no usable HIP device: {e:#}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("hip_interop: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run() -> anyhow::Result<()> {
    // Which GPU: the Vulkan device whose deviceUUID is one of HIP's (PCI-built) UUIDs.
    let uuids: Vec<[u8; 16]> = devices()?.iter().map(|d| d.uuid).collect();
    let vk = VulkanDevice::open(&uuids)?;
    let hip = Hip::open(vk.uuid())?;
    println!("vulkan: {}\nhip:    {}", vk.describe(), hip.describe());

    // 1. Export. `written` is HIP's timeline, `read` is Vulkan's (values: frame f is f + 1).
    let bytes = u64::from(N) * 4;
    let buffers = [vk.shared_buffer(bytes)?, vk.shared_buffer(bytes)?];
    let written = vk.shared_timeline()?;
    let read = vk.shared_timeline()?;

    // 2 + 3. Import into HIP and map (HIP closes each fd after its import).
    let imported = [hip.import_buffer(buffers[0].export()?)?, hip.import_buffer(buffers[1].export()?)?];
    // The semaphores: imported where the runtime can, else `None` and host hand-offs (bridged).
    let (written_fd, read_fd) = (written.export()?, read.export()?);
    let semaphores: Option<(HipTimeline, HipTimeline)> =
        match hip.import_timeline(written_fd).and_then(|w| Ok((w, hip.import_timeline(read_fd)?))) {
            Ok(pair) => Some(pair),
            Err(e) => {
                println!("hip_interop: {e}");
                println!("hip_interop: bridged: HIP finishes each kernel on the host before Vulkan reads");
                None
            }
        };
    let kernel = hip.compile(KERNEL, "ramp")?;

    let values = FrameValues { slots: K };
    for f in 0..FRAMES {
        let slot = (f % K) as usize;
        // 4. wait (GPU sync only): frame f − K's read of this buffer is done. Bridged needs no
        //    wait: the previous read_back of this buffer returned (a fence) before we got here.
        // 5. kernel: ours, on HIP's stream;
        // 6. signal `written` = f + 1 (GPU sync), or wait for the stream on the host (bridged).
        let wait = semaphores.as_ref().and_then(|(_, r)| values.wait_before_write(f).map(|v| (r, v)));
        let signal = semaphores.as_ref().map(|(w, _)| (w, values.signal(f)));
        hip.frame(wait, signal, |hip| {
            let (mut out, mut n, mut frame) = (imported[slot].device_ptr(), N, f as f32);
            let mut args = [
                (&mut out as *mut u64).cast::<c_void>(),
                (&mut n as *mut u32).cast::<c_void>(),
                (&mut frame as *mut f32).cast::<c_void>(),
            ];
            // SAFETY: `ramp(float*, unsigned int, float)`: one pointer per parameter, in order,
            // to values of those types; `out` maps N floats and the kernel writes indices < N.
            unsafe { hip.launch(&kernel, [N.div_ceil(256), 1, 1], [256, 1, 1], &mut args) }
        })?;

        // Vulkan's turn, as a draw would do it: wait, read (copy to the host), signal `read`.
        // GPU sync: wait `written` ≥ f + 1. Bridged: the kernel is finished (synchronize), so the
        // wait is on Vulkan's own `read` ≥ f, a value it has already reached.
        let got = if semaphores.is_some() {
            vk.read_back(&buffers[slot], (&written, values.signal(f)), (&read, values.signal(f)))?
        } else {
            hip.synchronize()?;
            vk.read_back(&buffers[slot], (&read, f), (&read, values.signal(f)))?
        };
        let bad = (0..N as usize).find(|&i| got[i] != f as f32 * 100000.0 + i as f32);
        if let Some(i) = bad {
            anyhow::bail!(
                "frame {f}, buffer {slot}: element {i} is {}, expected {}",
                got[i],
                f * 100000 + i as u64
            );
        }
        println!("frame {f:2}: buffer {slot}: all {N} values as expected");
    }
    hip.synchronize()?;
    let how = if semaphores.is_some() { "GPU-synchronised" } else { "bridged: host-synchronised hand-offs" };
    println!("hip_interop: OK ({FRAMES} frames, {} values checked, {how})", FRAMES * u64::from(N));
    // Teardown is the reverse of declaration: the kernel and the HIP imports go first (each waits
    // for the stream), then the Vulkan semaphores and buffers, then HIP's stream, then Vulkan.
    Ok(())
}
