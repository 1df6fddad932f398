//! Decisions the CUDA backend makes without calling CUDA: the launch shape, the kernel's argument
//! lists, whether a grid fits a slot. Pure functions, unit-tested on machines without a GPU.

use std::ffi::c_void;

#[cfg(test)]
use crate::compute::kernel::SinewaveArgs;
use crate::compute::kernel::{sinewave_launch, SinewaveLaunch, StampTarget, MAX_BATCH};
use crate::compute::ComputeError;
use crate::sim::{Grid, WaveParams};
use vkhip_interop::cuda::DeviceInfo;

/// What of a device shapes a launch (from `cuDeviceGetAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT.
    pub sm_count: u32,
}

impl DeviceLimits {
    pub fn of(device: &DeviceInfo) -> Self {
        DeviceLimits { sm_count: device.multiprocessors }
    }
}

/// The launch of `sinewave` for `grid` on a device with `limits`: the shared geometry of
/// [`sinewave_launch`] with one block per multiprocessor in all. Each thread then walks many rows
/// and computes its four sines once for all of them; its stores need no other thread to keep the
/// memory busy. Measured on an H200 at 4096² against the driver's fill (BENCHMARKS.md, issue 32):
/// 1.03× with this geometry and the kernel's row table, 1.10× with eight blocks per
/// multiprocessor and no table. `envs` environments (`--envs`) share those blocks, one `grid_z`
/// slice each; `envs` = 1 is that launch.
pub fn launch_config(grid: Grid, envs: u32, limits: DeviceLimits) -> SinewaveLaunch {
    sinewave_launch(grid, envs, limits.sm_count.max(1))
}

/// The `vkhip_batch` struct of `kernels/sinewave.hip`, passed by value to `sinewave_batch`: the
/// same layout (8 device pointers, then 3 × 8 floats; a test compares it with the source).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SinewaveBatch {
    pub heights: [u64; MAX_BATCH],
    pub phase: [f32; MAX_BATCH],
    pub amplitude: [f32; MAX_BATCH],
    pub frequency: [f32; MAX_BATCH],
}

/// The arguments of `sinewave_batch`: the batch, then width, height and the environments of
/// each slot (`--envs`; `gridDim.z` = slots × envs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SinewaveBatchArgs {
    pub batch: SinewaveBatch,
    pub width: u32,
    pub height: u32,
    pub envs: u32,
    /// As [`SinewaveArgs`]'s: the stamp pair and block counter (0: no stamps).
    pub stamps: u64,
    pub blocks_done: u64,
}

impl SinewaveBatchArgs {
    /// `sinewave_batch`'s parameter list as written in the source (see [`SinewaveArgs::SIGNATURE`]).
    #[cfg(test)]
    pub const SIGNATURE: [(&'static str, &'static str); 6] = [
        ("vkhip_batch", "batch"),
        ("unsigned int", "width"),
        ("unsigned int", "height"),
        ("unsigned int", "envs"),
        ("unsigned long long*", "stamps"),
        ("unsigned int*", "blocks_done"),
    ];

    /// Frame `i` of the batch writes `heights[i]` for `params[i]`; every frame has the same grid
    /// and environments.
    pub fn new(
        heights: &[u64],
        params: &[WaveParams],
        stamps: Option<StampTarget>,
    ) -> Result<Self, ComputeError> {
        let n = heights.len();
        let differs = |p: &WaveParams| p.grid != params[0].grid || p.envs != params[0].envs;
        if n == 0 || n > MAX_BATCH || params.len() != n || params.iter().any(differs) {
            return Err(ComputeError::Unsupported {
                backend: "cuda",
                reason: format!(
                    "a batched launch takes 1..={MAX_BATCH} slots with one parameter set each, all on one grid and environments (got {n} slots, {} parameter sets)",
                    params.len()
                ),
            });
        }
        let mut batch = SinewaveBatch::default();
        for (i, (h, p)) in heights.iter().zip(params).enumerate() {
            batch.heights[i] = *h;
            batch.phase[i] = p.phase;
            batch.amplitude[i] = p.amplitude;
            batch.frequency[i] = p.frequency;
        }
        let t = stamps.unwrap_or(StampTarget { stamps: 0, blocks_done: 0 });
        Ok(SinewaveBatchArgs {
            batch,
            width: params[0].grid.width,
            height: params[0].grid.height,
            envs: params[0].envs.max(1),
            stamps: t.stamps,
            blocks_done: t.blocks_done,
        })
    }

    /// `kernelParams` for `cuLaunchKernel`, in signature order (borrowing `self`, as
    /// [`SinewaveArgs::param_pointers`]).
    pub fn param_pointers(&mut self) -> [*mut c_void; 6] {
        [
            (&mut self.batch as *mut SinewaveBatch).cast(),
            (&mut self.width as *mut u32).cast(),
            (&mut self.height as *mut u32).cast(),
            (&mut self.envs as *mut u32).cast(),
            (&mut self.stamps as *mut u64).cast(),
            (&mut self.blocks_done as *mut u64).cast(),
        ]
    }
}

/// Refuse heights that do not fit the mapped slot: the kernel would write past its end (the
/// shared check, [`crate::compute::imported::check_grid_fits`], as CUDA).
pub fn check_grid_fits(params: &WaveParams, buffer_size: u64) -> Result<(), ComputeError> {
    crate::compute::imported::check_grid_fits("cuda", params, buffer_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::kernel::{SINEWAVE_ENTRY, SINEWAVE_SOURCE};

    const H100: DeviceLimits = DeviceLimits { sm_count: 132 };

    #[test]
    fn launch_puts_one_block_on_each_multiprocessor() {
        // 4096 × 4096: 4 column blocks × 33 row walkers = 132 blocks, one per SM.
        let cfg = launch_config(Grid { width: 4096, height: 4096 }, 1, H100);
        assert_eq!(cfg, SinewaveLaunch { grid_x: 4, grid_y: 33, grid_z: 1, block_x: 256 });
        // 256 × 256: one column block, 132 row walkers of about two rows each.
        let cfg = launch_config(Grid { width: 256, height: 256 }, 1, H100);
        assert_eq!(cfg, SinewaveLaunch { grid_x: 1, grid_y: 132, grid_z: 1, block_x: 256 });
        // 16 environments of 256 × 256: one z slice each, 8 row walkers each (128 blocks).
        let cfg = launch_config(Grid { width: 256, height: 256 }, 16, H100);
        assert_eq!(cfg, SinewaveLaunch { grid_x: 1, grid_y: 8, grid_z: 16, block_x: 256 });
        // Bogus (zero) attributes still give a valid launch.
        let zero = DeviceLimits { sm_count: 0 };
        assert_eq!(
            launch_config(Grid { width: 2, height: 2 }, 1, zero),
            SinewaveLaunch { grid_x: 1, grid_y: 1, grid_z: 1, block_x: 256 }
        );
    }

    /// The parameter list of `entry` in `source`, as (type, name) with whitespace normalised,
    /// `__restrict__` dropped and `*` attached to the type. Also checks the declaration is
    /// `extern "C" __global__ void` (an unmangled kernel).
    fn kernel_signature(source: &str, entry: &str) -> Vec<(String, String)> {
        let flat = source.split_whitespace().collect::<Vec<_>>().join(" ");
        let decl = format!("extern \"C\" __global__ void {entry}(");
        let start =
            flat.find(&decl).unwrap_or_else(|| panic!("no `{decl}` in the kernel source")) + decl.len();
        let end = start + flat[start..].find(')').expect("unterminated parameter list");
        flat[start..end]
            .split(',')
            .map(|param| {
                let spaced = param.replace('*', " * ");
                let mut tokens: Vec<&str> =
                    spaced.split_whitespace().filter(|t| *t != "__restrict__").collect();
                let name = tokens.pop().expect("parameter without a name").to_string();
                let ty = tokens.join(" ").replace(" *", "*");
                (ty, name)
            })
            .collect()
    }

    #[test]
    fn kernel_source_signature_matches_the_launch_arguments() {
        let parsed = kernel_signature(SINEWAVE_SOURCE, SINEWAVE_ENTRY);
        let expected: Vec<(String, String)> =
            SinewaveArgs::SIGNATURE.iter().map(|(t, n)| (t.to_string(), n.to_string())).collect();
        assert_eq!(parsed, expected);
        // The parser itself handles the other spellings of a pointer parameter.
        assert_eq!(
            kernel_signature("extern \"C\" __global__ void k(float *p, unsigned  int w)", "k"),
            vec![("float*".into(), "p".into()), ("unsigned int".into(), "w".into())]
        );
    }

    #[test]
    fn batch_kernel_signature_and_struct_match_the_source() {
        use crate::compute::kernel::SINEWAVE_BATCH_ENTRY;
        let parsed = kernel_signature(SINEWAVE_SOURCE, SINEWAVE_BATCH_ENTRY);
        let expected: Vec<(String, String)> =
            SinewaveBatchArgs::SIGNATURE.iter().map(|(t, n)| (t.to_string(), n.to_string())).collect();
        assert_eq!(parsed, expected);
        // The struct: the same fields, in the same order, with MAX_BATCH entries each.
        let flat = SINEWAVE_SOURCE.split_whitespace().collect::<Vec<_>>().join(" ");
        let n = MAX_BATCH;
        let fields = format!(
            "struct vkhip_batch {{ float* heights[{n}]; float phase[{n}]; float amplitude[{n}]; float frequency[{n}]; }};"
        );
        assert!(flat.contains(&fields), "kernel source lacks `{fields}`");
        assert_eq!(std::mem::size_of::<SinewaveBatch>(), 8 * n + 3 * 4 * n);
        assert_eq!(std::mem::align_of::<SinewaveBatch>(), 8);
        // Argument checks.
        let p = WaveParams::at_time(Grid { width: 8, height: 8 }, 0.0);
        assert!(SinewaveBatchArgs::new(&[], &[], None).is_err());
        assert!(SinewaveBatchArgs::new(&[1; 9], &[p; 9], None).is_err());
        assert!(SinewaveBatchArgs::new(&[1, 2], &[p], None).is_err());
        let q = WaveParams::at_time(Grid { width: 9, height: 8 }, 0.0);
        assert!(SinewaveBatchArgs::new(&[1, 2], &[p, q], None).is_err());
        assert!(SinewaveBatchArgs::new(&[1, 2], &[p, p.with_envs(2)], None).is_err());
        let a = SinewaveBatchArgs::new(&[10, 20], &[p, WaveParams::at_time(p.grid, 1.0)], None).unwrap();
        assert_eq!((a.batch.heights[..2].to_vec(), a.width, a.height, a.envs), (vec![10, 20], 8, 8, 1));
        let e = SinewaveBatchArgs::new(&[10, 20], &[p.with_envs(3), p.with_envs(3)], None).unwrap();
        assert_eq!(e.envs, 3);
        assert_eq!((a.stamps, a.blocks_done), (0, 0), "no stamps: null pointers");
        let target = StampTarget { stamps: 0x40, blocks_done: 0x80 };
        let mut b = SinewaveBatchArgs::new(&[10], &[p], Some(target)).unwrap();
        let ptrs = b.param_pointers();
        // SAFETY: pointer 3 points at the u32 `envs`, 4 and 5 at the u64 fields `stamps` and
        // `blocks_done` of `b`.
        let read = unsafe { (*(ptrs[3] as *const u32), *(ptrs[4] as *const u64), *(ptrs[5] as *const u64)) };
        assert_eq!(read, (1, 0x40, 0x80));
        assert_ne!(a.batch.phase[0], a.batch.phase[1]);
    }

    #[test]
    fn launch_argument_pointers_follow_the_signature_order_and_sizes() {
        let grid = Grid { width: 1000, height: 777 };
        let p = WaveParams { grid, phase: 1.25, amplitude: 0.25, frequency: 6.0, time: 0.0, envs: 1 };
        let target = StampTarget { stamps: 0x5000, blocks_done: 0x6000 };
        let mut args = SinewaveArgs::new(0xdead_0000, &p).with_stamps(Some(target));
        let ptrs = args.param_pointers();
        // SAFETY: each pointer was just taken from a live field of `args` of the type read here.
        let read = unsafe {
            (
                *(ptrs[0] as *const u64),
                *(ptrs[1] as *const u32),
                *(ptrs[2] as *const u32),
                *(ptrs[3] as *const f32),
                *(ptrs[4] as *const f32),
                *(ptrs[5] as *const f32),
                *(ptrs[6] as *const u64),
                *(ptrs[7] as *const u64),
            )
        };
        assert_eq!(read, (0xdead_0000, 1000, 777, 1.25, 0.25, 6.0, 0x5000, 0x6000));
        assert_eq!(std::mem::size_of_val(&args.stamps), std::mem::size_of::<*mut u64>());
        // C sizes on the 64-bit targets CUDA supports: float* 8, unsigned int 4, float 4.
        assert_eq!(std::mem::size_of_val(&args.heights), std::mem::size_of::<*mut f32>());
        assert_eq!(std::mem::size_of_val(&args.width), 4);
        assert_eq!(std::mem::size_of_val(&args.phase), 4);
    }

    #[test]
    fn grid_must_fit_the_mapped_slot() {
        let grid = Grid { width: 1000, height: 777 };
        let p = WaveParams::at_time(grid, 0.0);
        assert!(check_grid_fits(&p, grid.bytes()).is_ok());
        let err = check_grid_fits(&p, grid.bytes() - 4).unwrap_err();
        assert!(matches!(err, ComputeError::Unsupported { backend: "cuda", .. }));
        assert!(err.to_string().contains("1000x777 needs 3108000 bytes"), "{err}");
        // `--envs 3`: three fields, one launch.
        assert!(check_grid_fits(&p.with_envs(3), 3 * grid.bytes()).is_ok());
        let err = check_grid_fits(&p.with_envs(3), 3 * grid.bytes() - 4).unwrap_err();
        assert!(err.to_string().contains("1000x777 × 3 environments needs 9324000 bytes"), "{err}");
        let err = check_grid_fits(&p.with_envs(70_000), u64::MAX).unwrap_err();
        assert!(err.to_string().contains("at most 65535"), "{err}");
    }
}
