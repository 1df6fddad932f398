//! The interop kernel (`kernels/sinewave.hip`) and the on-disk cache of the compiled kernels (it,
//! and the post filter's `kernels/outline.hip`).
//!
//! CUDA (NVRTC → cubin, PTX only as a fallback) and HIP (hiprtc → code object) compile the same
//! source at run time. The first start on a machine compiles and stores the result; later starts
//! load it. The cache key covers everything that changes the output: the source text, the
//! compiler and its options, the device (architecture) and the driver version; each entry is
//! named after its kernel (`outline-<key hash>.bin`). A damaged or unreadable cache entry is a
//! miss, never an error.
//!
//! Where: `$VKHIP_KERNEL_CACHE` if set (`off` disables the cache), else
//! `$XDG_CACHE_HOME/vkhip/kernels`, else `~/.cache/vkhip/kernels`.

use crate::sim::{Grid, WaveParams};
use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// The kernel source, embedded at build time so the binary runs from anywhere.
pub const SINEWAVE_SOURCE: &str = include_str!("../../kernels/sinewave.hip");
/// The kernel's entry point (`extern "C"`, so the name is not mangled).
pub const SINEWAVE_ENTRY: &str = "sinewave";
/// The batched entry point: up to [`MAX_BATCH`] slots in one launch (`gridDim.z` = frames × envs).
pub const SINEWAVE_BATCH_ENTRY: &str = "sinewave_batch";
/// Most slots one `sinewave_batch` launch writes (the size of its arrays).
pub const MAX_BATCH: usize = 8;

/// Threads per block of `sinewave` (x only): a multiple of every GPU's warp/wavefront size.
pub const SINEWAVE_BLOCK: u32 = 256;

/// The launch geometry of `sinewave` (see the kernel's header comment): blocks of
/// [`SINEWAVE_BLOCK`] threads, each thread owning four columns; `grid_x` blocks cover the columns,
/// `grid_y` row walkers stride over the rows, `grid_z` environments (`--envs`) one field each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinewaveLaunch {
    pub grid_x: u32,
    pub grid_y: u32,
    /// The environments (`--envs`, 1 by default), times the frames of a `sinewave_batch` launch.
    pub grid_z: u32,
    pub block_x: u32,
}

/// The launch for `envs` fields of `grid` on a device that keeps about `resident_blocks` blocks
/// of [`SINEWAVE_BLOCK`] threads running at once: enough row walkers to fill it (shared by the
/// environments, one `grid_z` slice each), never more than there are rows (nor than gridDim.y
/// allows). `envs` = 1 is the launch of one field.
///
/// # Examples
///
/// ```
/// use vkhip::compute::kernel::{sinewave_launch, SINEWAVE_BLOCK};
/// use vkhip::sim::Grid;
///
/// // 4096 columns = 1024 quads = 4 blocks across; 528 resident blocks = 132 row walkers.
/// let l = sinewave_launch(Grid { width: 4096, height: 4096 }, 1, 528);
/// assert_eq!((l.grid_x, l.grid_y, l.grid_z, l.block_x), (4, 132, 1, SINEWAVE_BLOCK));
/// // 4 environments share them: 33 row walkers each, one z slice per environment.
/// let l = sinewave_launch(Grid { width: 4096, height: 4096 }, 4, 528);
/// assert_eq!((l.grid_x, l.grid_y, l.grid_z), (4, 33, 4));
/// // Every column is covered, and there are never more row walkers than rows.
/// let l = sinewave_launch(Grid { width: 1000, height: 7 }, 1, 10_000);
/// assert!(l.grid_x * l.block_x * 4 >= 1000);
/// assert_eq!(l.grid_y, 7);
/// ```
pub fn sinewave_launch(grid: Grid, envs: u32, resident_blocks: u32) -> SinewaveLaunch {
    let envs = envs.max(1);
    let quads = grid.width.div_ceil(4);
    let grid_x = quads.div_ceil(SINEWAVE_BLOCK).max(1);
    let grid_y = (resident_blocks.max(1) / grid_x / envs).clamp(1, grid.height.min(65535));
    SinewaveLaunch { grid_x, grid_y, grid_z: envs, block_x: SINEWAVE_BLOCK }
}

/// Most environments one launch writes: CUDA's and HIP's largest `gridDim.z`.
pub const MAX_LAUNCH_ENVS: u32 = 65535;

/// The arguments of `sinewave` in `kernels/sinewave.hip`, in the order `cuLaunchKernel` and
/// `hipModuleLaunchKernel` pass them (`kernelParams[i]` points at the i-th field of
/// `SinewaveArgs::SIGNATURE`). One type for both APIs: the source is one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SinewaveArgs {
    /// Device address of the slot (`float*` on a 64-bit device).
    pub heights: u64,
    pub width: u32,
    pub height: u32,
    pub phase: f32,
    pub amplitude: f32,
    pub frequency: f32,
    /// Device address of the launch's GPU stamp pair (`unsigned long long*`; 0: no stamps, what
    /// HIP and `--gpu-timing off` pass). See [`Self::with_stamps`].
    pub stamps: u64,
    /// Device address of the block counter the last block uses (`unsigned int*`; 0 with no
    /// stamps).
    pub blocks_done: u64,
}

/// Where a launch writes its GPU stamps: device addresses of the stamp pair (host memory mapped
/// for the device) and of the zeroed block counter (see `kernels/sinewave.hip`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StampTarget {
    pub stamps: u64,
    pub blocks_done: u64,
}

impl SinewaveArgs {
    /// The kernel's parameter list as written in the source: (C type, name). A unit test parses
    /// `kernels/sinewave.hip` and compares (and checks [`Self::param_pointers`] against it).
    #[cfg(test)]
    pub const SIGNATURE: [(&'static str, &'static str); 8] = [
        ("float*", "heights"),
        ("unsigned int", "width"),
        ("unsigned int", "height"),
        ("float", "phase"),
        ("float", "amplitude"),
        ("float", "frequency"),
        ("unsigned long long*", "stamps"),
        ("unsigned int*", "blocks_done"),
    ];

    pub fn new(heights: u64, params: &WaveParams) -> Self {
        SinewaveArgs {
            heights,
            width: params.grid.width,
            height: params.grid.height,
            phase: params.phase,
            amplitude: params.amplitude,
            frequency: params.frequency,
            stamps: 0,
            blocks_done: 0,
        }
    }

    /// The same launch, stamping into `target` (None: no stamps, null pointers).
    ///
    /// ```
    /// use vkhip::compute::kernel::{SinewaveArgs, StampTarget};
    /// use vkhip::sim::{Grid, WaveParams};
    ///
    /// let p = WaveParams::at_time(Grid { width: 8, height: 8 }, 0.0);
    /// let plain = SinewaveArgs::new(0x1000, &p);
    /// assert_eq!((plain.stamps, plain.blocks_done), (0, 0)); // what HIP passes
    /// let target = StampTarget { stamps: 0x2000, blocks_done: 0x3000 };
    /// let stamped = plain.with_stamps(Some(target));
    /// assert_eq!((stamped.stamps, stamped.blocks_done), (0x2000, 0x3000));
    /// assert_eq!(stamped.with_stamps(None), plain);
    /// ```
    pub fn with_stamps(self, target: Option<StampTarget>) -> Self {
        let t = target.unwrap_or(StampTarget { stamps: 0, blocks_done: 0 });
        SinewaveArgs { stamps: t.stamps, blocks_done: t.blocks_done, ..self }
    }

    /// `kernelParams` for `cuLaunchKernel` / `hipModuleLaunchKernel`: one pointer per argument, in
    /// `Self::SIGNATURE` order. The pointers borrow `self`, which must stay in place until the
    /// launch call returns (the driver copies the values during the call).
    pub fn param_pointers(&mut self) -> [*mut c_void; 8] {
        [
            (&mut self.heights as *mut u64).cast(),
            (&mut self.width as *mut u32).cast(),
            (&mut self.height as *mut u32).cast(),
            (&mut self.phase as *mut f32).cast(),
            (&mut self.amplitude as *mut f32).cast(),
            (&mut self.frequency as *mut f32).cast(),
            (&mut self.stamps as *mut u64).cast(),
            (&mut self.blocks_done as *mut u64).cast(),
        ]
    }
}

/// Whether a compiled kernel came from the cache or was compiled in this run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    Hit,
    Compiled,
    /// Compiled; the cache is disabled or could not be written.
    Uncached,
}

/// Compiled-kernel cache in a directory (or disabled).
#[derive(Clone, Debug)]
pub struct KernelCache {
    dir: Option<PathBuf>,
}

impl KernelCache {
    /// The cache at the location the environment names (see the module docs).
    pub fn from_env() -> Self {
        let dir = match std::env::var_os("VKHIP_KERNEL_CACHE") {
            Some(v) if v == "off" || v.is_empty() => None,
            Some(v) => Some(PathBuf::from(v)),
            None => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|base| base.join("vkhip").join("kernels")),
        };
        KernelCache { dir }
    }

    /// A cache in `dir` (tests), or none.
    pub fn at(dir: Option<PathBuf>) -> Self {
        KernelCache { dir }
    }

    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file name for kernel `file` (`outline.hip`: the entry is `outline-<hash>.bin`) and a
    /// key made of `parts` (source, compiler, options, device, driver...).
    pub fn entry_name(file: &str, parts: &[&str]) -> String {
        // Two independent FNV-1a 64 hashes: 128 bits, stable across Rust versions and platforms.
        let mut a: u64 = 0xcbf2_9ce4_8422_2325;
        let mut b: u64 = 0x8422_2325_cbf2_9ce4;
        for part in parts {
            for &byte in part.as_bytes().iter().chain(std::iter::once(&0xffu8)) {
                a = (a ^ byte as u64).wrapping_mul(0x0000_0100_0000_01b3);
                b = (b ^ (byte as u64).rotate_left(3)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        let stem: String = file
            .split('.')
            .next()
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' })
            .collect();
        format!("{stem}-{a:016x}{b:016x}.bin")
    }

    /// Load the entry of kernel `file` for `parts`, or compile it with `compile` and store the
    /// result ([`Self::entry_name`]).
    pub fn get_or_compile<E>(
        &self,
        file: &str,
        parts: &[&str],
        compile: impl FnOnce() -> Result<Vec<u8>, E>,
    ) -> Result<(Vec<u8>, CacheOutcome), E> {
        if self.dir.is_none() {
            return compile().map(|b| (b, CacheOutcome::Uncached));
        }
        if let Some(bytes) = self.lookup(file, parts) {
            return Ok((bytes, CacheOutcome::Hit));
        }
        let bytes = compile()?;
        let outcome =
            if self.store(file, parts, &bytes) { CacheOutcome::Compiled } else { CacheOutcome::Uncached };
        Ok((bytes, outcome))
    }

    /// The entry of kernel `file` for `parts`, if there is a readable, non-empty one (None with
    /// the cache off).
    pub fn lookup(&self, file: &str, parts: &[&str]) -> Option<Vec<u8>> {
        let path = self.dir.as_ref()?.join(Self::entry_name(file, parts));
        match std::fs::read(&path) {
            Ok(bytes) if !bytes.is_empty() => {
                log::debug!("kernel cache hit: {}", path.display());
                Some(bytes)
            }
            _ => None,
        }
    }

    /// Store `bytes` as the entry of kernel `file` for `parts`, replacing any (atomically: a
    /// reader sees the old entry or the new one). Whether it was stored; a failure is logged,
    /// never an error.
    pub fn store(&self, file: &str, parts: &[&str], bytes: &[u8]) -> bool {
        let Some(dir) = &self.dir else { return false };
        let path = dir.join(Self::entry_name(file, parts));
        match store_atomically(dir, &path, bytes) {
            Ok(()) => {
                log::debug!("kernel cache stored: {}", path.display());
                true
            }
            Err(e) => {
                log::warn!("kernel cache: could not write {}: {e}", path.display());
                false
            }
        }
    }
}

fn store_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel's index arithmetic replayed on the host: how often each height of the
    /// `grid_z` environments is written (environment z at `z * width * height`).
    fn writes_per_index(grid: Grid, l: SinewaveLaunch) -> Vec<u32> {
        let (w, h) = (grid.width, grid.height);
        let mut hits = vec![0u32; grid.len() * l.grid_z as usize];
        for bz in 0..l.grid_z {
            let field = bz as usize * grid.len();
            for bx in 0..l.grid_x {
                for tx in 0..l.block_x {
                    let x0 = (bx * l.block_x + tx) * 4;
                    if x0 >= w {
                        continue;
                    }
                    for by in 0..l.grid_y {
                        let mut y = by;
                        while y < h {
                            for k in 0..4 {
                                if x0 + k < w {
                                    hits[field + (y * w + x0 + k) as usize] += 1;
                                }
                            }
                            y += l.grid_y;
                        }
                    }
                }
            }
        }
        hits
    }

    #[test]
    fn every_height_is_written_exactly_once() {
        let grids = [(2, 2), (3, 3), (5, 7), (1000, 777), (999, 777), (257, 255), (1025, 3), (4, 1000)];
        for (width, height) in grids {
            let grid = Grid { width, height };
            for (resident, envs) in [(1, 1), (7, 1), (1056, 1), (1 << 20, 1), (1056, 3), (7, 16)] {
                let l = sinewave_launch(grid, envs, resident);
                assert_eq!(l.grid_z, envs);
                let hits = writes_per_index(grid, l);
                assert!(
                    hits.iter().all(|&c| c == 1),
                    "{grid} with {l:?}: index {:?} written {:?} times",
                    hits.iter().position(|&c| c != 1),
                    hits.iter().find(|&&c| c != 1)
                );
            }
        }
    }

    #[test]
    fn launch_fills_the_gpu_without_idle_walkers() {
        // 4096 × 4096 with 1056 resident blocks of 256 (what HIP's launch counts on a device of
        // 132 compute units; CUDA's asks for 132): 4 column blocks, 264 row walkers each, of 15
        // or 16 rows.
        let l = sinewave_launch(Grid { width: 4096, height: 4096 }, 1, 132 * 8);
        assert_eq!(l, SinewaveLaunch { grid_x: 4, grid_y: 264, grid_z: 1, block_x: 256 });
        // Never more walkers than rows.
        assert_eq!(sinewave_launch(Grid { width: 8, height: 3 }, 1, 1056).grid_y, 3);
        // A grid wider than the device holds still launches one walker per column block.
        assert_eq!(sinewave_launch(Grid { width: 16384, height: 16384 }, 1, 8).grid_y, 1);
        // Environments share the walkers (z slices), at least one walker each.
        let l = sinewave_launch(Grid { width: 4096, height: 4096 }, 16, 132 * 8);
        assert_eq!(l, SinewaveLaunch { grid_x: 4, grid_y: 16, grid_z: 16, block_x: 256 });
        assert_eq!(sinewave_launch(Grid { width: 4096, height: 4096 }, 2048, 132).grid_y, 1);
    }

    /// `--envs`: the kernel's environment phase rule is sim::env_phase (same constants, the
    /// environment from blockIdx.z, its field at env * width * height).
    #[test]
    fn the_kernels_environment_phases_are_sims() {
        let flat = SINEWAVE_SOURCE.split_whitespace().collect::<Vec<_>>().join(" ");
        let has = |s: &str| assert!(flat.contains(s), "kernels/sinewave.hip lacks `{s}`");
        has(&format!("#define VKHIP_ENV_PHASES {}u", crate::sim::ENV_PHASES));
        has(&format!("#define VKHIP_ENV_PHASE_STEP {:?}f", crate::sim::ENV_PHASE_STEP));
        has("const float env_phase = phase + (float)(env % VKHIP_ENV_PHASES) * VKHIP_ENV_PHASE_STEP;");
        has("float* field = heights + (unsigned long long)env * width * height;");
        has("vkhip_sinewave_env(heights, width, height, phase, amplitude, frequency, blockIdx.z, cy_table);");
        has("const unsigned int i = blockIdx.z / envs; const unsigned int env = blockIdx.z % envs;");
    }

    #[test]
    fn second_lookup_hits_and_skips_compile() {
        let dir = std::env::temp_dir().join(format!("vkhip-kcache-{}", std::process::id()));
        let cache = KernelCache::at(Some(dir.clone()));
        let parts = ["src", "nvrtc 13.0", "sm_90", "driver 580"];
        let (a, o1) = cache.get_or_compile("sinewave.hip", &parts, || Ok::<_, ()>(b"ptx".to_vec())).unwrap();
        assert_eq!((a.as_slice(), o1), (&b"ptx"[..], CacheOutcome::Compiled));
        let recompile = || -> Result<Vec<u8>, ()> { panic!("must not recompile") };
        let (b, o2) = cache.get_or_compile("sinewave.hip", &parts, recompile).unwrap();
        assert_eq!((b.as_slice(), o2), (&b"ptx"[..], CacheOutcome::Hit));
        // Any change of a key part is a different entry.
        let other = ["src", "nvrtc 13.0", "sm_90", "driver 581"];
        assert_ne!(
            KernelCache::entry_name("sinewave.hip", &parts),
            KernelCache::entry_name("sinewave.hip", &other)
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn disabled_cache_always_compiles() {
        let cache = KernelCache::at(None);
        let (_, o) = cache.get_or_compile("sinewave.hip", &["x"], || Ok::<_, ()>(vec![1])).unwrap();
        assert_eq!(o, CacheOutcome::Uncached);
    }

    #[test]
    fn key_parts_are_not_ambiguous() {
        assert_ne!(
            KernelCache::entry_name("k.hip", &["ab", "c"]),
            KernelCache::entry_name("k.hip", &["a", "bc"])
        );
    }

    /// Before (issue 33): every entry was "sinewave-<hash>.bin", the outline kernel's too.
    #[test]
    fn entries_are_named_after_their_kernel() {
        let dir = std::env::temp_dir().join(format!("vkhip-kcache-names-{}", std::process::id()));
        let cache = KernelCache::at(Some(dir.clone()));
        for file in ["outline.hip", "sinewave.hip"] {
            cache.get_or_compile(file, &["src", "nvrtc 13.0"], || Ok::<_, ()>(b"cubin".to_vec())).unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with("outline-") && names[0].ends_with(".bin"), "{names:?}");
        assert!(names[1].starts_with("sinewave-"), "{names:?}");
        assert_eq!(KernelCache::entry_name("a/b c.hip", &[]).split('-').next(), Some("a_b_c"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
