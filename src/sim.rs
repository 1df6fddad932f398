//! The simulation: a sine-wave height field on a W×H grid, and the CPU reference that every
//! backend (and every test) is compared against.
//!
//! Layout shared by every writer and the renderer: one `f32` per grid point, row-major,
//! `index = y * width + x`, no padding, no header. Slot buffers are exactly `width * height * 4`
//! bytes of payload (the allocation may be larger).
//!
//! The height at grid point (x, y) for a frame with phase `p`:
//!
//! ```text
//! u = 2·x/(W−1) − 1,  v = 2·y/(H−1) − 1                   (both in [−1, 1])
//! h = AMPLITUDE · sin(FREQUENCY·u + p) · cos(FREQUENCY·v + p)
//! ```
//!
//! The phase is reduced on the host in f64 (`phase_for_time`), so every backend receives the same
//! f32 argument whatever the run length, and arguments stay within a few multiples of π where
//! every GPU's `sin` is accurate.

use std::fmt;

/// Peak height of the wave (world units; the grid spans [−1, 1] in x and z).
pub const AMPLITUDE: f32 = 0.25;
/// Angular frequency of the wave across the grid, in radians per unit of u or v.
pub const FREQUENCY: f32 = 6.0;
/// Phase speed in radians per second of simulation time.
pub const SPEED: f64 = 1.5;

/// `--envs`: environment e's wave is the same wave at phase `phase + (e mod ENV_PHASES) ×
/// ENV_PHASE_STEP` ([`env_phase`]), i.e. at time `t + (e mod ENV_PHASES) × ENV_PHASE_STEP / SPEED`
/// ([`env_time`]): 64 distinct phases 0.09375 rad (1/16 s) apart, repeating. The step is exact in
/// f32 and so is every `k × step` for k < 64, so every backend (fused multiply-add or not) adds
/// the same value to the phase.
pub const ENV_PHASES: u32 = 64;
/// See [`ENV_PHASES`].
pub const ENV_PHASE_STEP: f32 = 0.09375;

/// Environment `env`'s phase for a frame at `phase` (environment 0's is `phase` itself).
#[inline]
pub fn env_phase(phase: f32, env: u32) -> f32 {
    phase + (env % ENV_PHASES) as f32 * ENV_PHASE_STEP
}

/// Environment `env`'s simulation time for a frame at `t` seconds (what a caller's writer may
/// use for environment `env`: [`env_phase`] of `phase_for_time(t)`, up to rounding).
pub fn env_time(t: f64, env: u32) -> f64 {
    t + (env % ENV_PHASES) as f64 * ENV_PHASE_STEP as f64 / SPEED
}

/// Largest side accepted for the grid (the renderer's limits may lower it further).
pub const MAX_SIDE: u32 = 16384;

/// Grid dimensions (both sides ≥ 2).
///
/// # Examples
///
/// ```
/// use vkhip::sim::Grid;
///
/// let g: Grid = "513x257".parse().unwrap();
/// assert_eq!((g.width, g.height, g.len(), g.bytes()), (513, 257, 131_841, 527_364));
/// assert!("1x5".parse::<Grid>().is_err()); // each side is at least 2
/// assert!("64".parse::<Grid>().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grid {
    pub width: u32,
    pub height: u32,
}

impl Grid {
    /// Number of grid points.
    pub fn len(&self) -> usize {
        self.width as usize * self.height as usize
    }

    /// A grid always has at least 4 points; provided for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Payload size of one slot in bytes.
    pub fn bytes(&self) -> u64 {
        self.len() as u64 * std::mem::size_of::<f32>() as u64
    }
}

impl fmt::Display for Grid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// Error from parsing a `WxH` grid string.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum GridError {
    #[error("'{0}' is not of the form WxH (e.g. 512x512)")]
    Syntax(String),
    #[error("'{0}': each side must be at least 2")]
    TooSmall(String),
    #[error("'{0}': each side must be at most {MAX_SIDE}")]
    TooLarge(String),
}

impl std::str::FromStr for Grid {
    type Err = GridError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| GridError::Syntax(s.to_string()))?;
        let parse = |t: &str| t.trim().parse::<u64>().map_err(|_| GridError::Syntax(s.to_string()));
        let (w, h) = (parse(w)?, parse(h)?);
        if w < 2 || h < 2 {
            return Err(GridError::TooSmall(s.to_string()));
        }
        if w > MAX_SIDE as u64 || h > MAX_SIDE as u64 {
            return Err(GridError::TooLarge(s.to_string()));
        }
        Ok(Grid { width: w as u32, height: h as u32 })
    }
}

/// Everything a writer needs for one frame: the kernel arguments, in one place.
///
/// The kernels (`kernels/sinewave.hip`, `shaders/sinewave.comp`) take exactly these values, in
/// this order, after the output pointer: width, height, phase, amplitude, frequency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaveParams {
    pub grid: Grid,
    pub phase: f32,
    pub amplitude: f32,
    pub frequency: f32,
    /// The simulation time these parameters are for, seconds (the phase comes from it; no
    /// kernel reads it; a caller's own writer gets it).
    pub time: f64,
    /// `--envs`: height fields written one after the other, `(envs, height, width)`;
    /// environment e at phase [`env_phase`]`(phase, e)`.
    pub envs: u32,
}

impl WaveParams {
    /// The parameters for simulation time `t` seconds.
    pub fn at_time(grid: Grid, t: f64) -> Self {
        WaveParams {
            grid,
            phase: phase_for_time(t),
            amplitude: AMPLITUDE,
            frequency: FREQUENCY,
            time: t,
            envs: 1,
        }
    }

    /// The same frame with `envs` environments.
    pub fn with_envs(self, envs: u32) -> Self {
        WaveParams { envs: envs.max(1), ..self }
    }

    /// Values written: envs × width × height.
    pub fn values(&self) -> usize {
        self.envs as usize * self.grid.len()
    }

    /// Environment `env` alone (its phase, one environment).
    pub fn env(&self, env: u32) -> WaveParams {
        WaveParams { phase: env_phase(self.phase, env), envs: 1, ..*self }
    }
}

/// Reduce `SPEED · t` into [0, 2π) in f64, then round to f32.
pub fn phase_for_time(t: f64) -> f32 {
    (SPEED * t).rem_euclid(std::f64::consts::TAU) as f32
}

/// Height at one grid point: the definition every backend implements.
#[inline]
pub fn height(p: &WaveParams, x: u32, y: u32) -> f32 {
    let u = 2.0 * x as f32 / (p.grid.width - 1) as f32 - 1.0;
    let v = 2.0 * y as f32 / (p.grid.height - 1) as f32 - 1.0;
    p.amplitude * (p.frequency * u + p.phase).sin() * (p.frequency * v + p.phase).cos()
}

/// Fill `out` (row-major, `grid.len()` values) with the reference heights.
///
/// # Examples
///
/// ```
/// use vkhip::sim::{compare_with_reference, fill_reference, height, Grid, WaveParams};
///
/// let grid = Grid { width: 5, height: 3 };
/// let p = WaveParams::at_time(grid, 0.25);
/// let mut slot = vec![f32::NAN; grid.len()];
/// fill_reference(&p, &mut slot);
/// // Row-major, `index = y * width + x`, exactly `height` at every point.
/// assert_eq!(slot[2 * 5 + 4], height(&p, 4, 2));
/// assert!(slot.iter().all(|h| h.abs() <= vkhip::sim::AMPLITUDE));
/// // A slot equal to the reference has no mismatch; a NaN left in it is one.
/// assert_eq!(compare_with_reference(&p, &slot, 1e-5).mismatches, 0);
/// slot[7] = f32::NAN;
/// let c = compare_with_reference(&p, &slot, 1e-5);
/// assert_eq!((c.mismatches, c.first_mismatch), (1, Some(7)));
/// ```
pub fn fill_reference(p: &WaveParams, out: &mut [f32]) {
    let w = p.grid.width as usize;
    assert_eq!(out.len(), p.values(), "output length must equal envs × the grid size");
    for (e, field) in out.chunks_exact_mut(p.grid.len()).enumerate() {
        let pe = p.env(e as u32);
        for (y, row) in field.chunks_exact_mut(w).enumerate() {
            for (x, h) in row.iter_mut().enumerate() {
                *h = height(&pe, x as u32, y as u32);
            }
        }
    }
}

/// Result of comparing a slot against the reference.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Largest |actual − expected| over all finite values (NaN/inf counted in `mismatches`).
    pub max_abs_error: f32,
    /// Values whose error exceeds the tolerance, or that are not finite.
    pub mismatches: usize,
    /// Index of the first mismatching value, if any.
    pub first_mismatch: Option<usize>,
}

/// Compare `actual` with the reference for `p`, counting values off by more than `tolerance`.
pub fn compare_with_reference(p: &WaveParams, actual: &[f32], tolerance: f32) -> Comparison {
    compare_with_reference_progress(p, actual, tolerance, &|_| {})
}

/// Values one parallel task compares (and reports to `progress`).
const COMPARE_CHUNK: usize = 1 << 16;

/// [`compare_with_reference`] on every core (rayon), calling `progress(n)` after each chunk of `n`
/// values. The result does not depend on the number of threads.
pub fn compare_with_reference_progress(
    p: &WaveParams,
    actual: &[f32],
    tolerance: f32,
    progress: &(dyn Fn(u64) + Sync),
) -> Comparison {
    use rayon::prelude::*;
    let w = p.grid.width as usize;
    let field = p.grid.len();
    let envs: Vec<WaveParams> = (0..p.envs).map(|e| p.env(e)).collect();
    let mut c = actual
        .par_chunks(COMPARE_CHUNK)
        .enumerate()
        .map(|(k, chunk)| {
            let base = k * COMPARE_CHUNK;
            let mut c = Comparison::default();
            for (j, &a) in chunk.iter().enumerate() {
                let i = base + j;
                let (env, k) = (i / field, i % field);
                let pe = envs.get(env).unwrap_or(p);
                let e = height(pe, (k % w) as u32, (k / w) as u32);
                let err = (a - e).abs();
                if !err.is_finite() || err > tolerance {
                    c.mismatches += 1;
                    c.first_mismatch.get_or_insert(i);
                }
                if err.is_finite() && err > c.max_abs_error {
                    c.max_abs_error = err;
                }
            }
            progress(chunk.len() as u64);
            c
        })
        .reduce(Comparison::default, |a, b| Comparison {
            max_abs_error: a.max_abs_error.max(b.max_abs_error),
            mismatches: a.mismatches + b.mismatches,
            first_mismatch: match (a.first_mismatch, b.first_mismatch) {
                (Some(x), Some(y)) => Some(x.min(y)),
                (x, y) => x.or(y),
            },
        });
    if actual.len() != p.values() {
        c.mismatches += p.values().abs_diff(actual.len());
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environments_follow_one_another_at_their_phases() {
        let grid = Grid { width: 5, height: 4 };
        let p = WaveParams::at_time(grid, 0.75).with_envs(3);
        let mut v = vec![f32::NAN; p.values()];
        fill_reference(&p, &mut v);
        for e in 0..3u32 {
            let pe = WaveParams::at_time(grid, env_time(0.75, e));
            assert!((pe.phase - env_phase(p.phase, e)).abs() < 1e-6);
            let at = |x, y| v[e as usize * grid.len() + (y * 5 + x) as usize];
            assert_eq!(at(3, 2), height(&p.env(e), 3, 2));
        }
        assert_eq!(p.env(0).phase, p.phase);
        assert_ne!(v[..grid.len()], v[grid.len()..2 * grid.len()]);
        assert_eq!(compare_with_reference(&p, &v, 1e-6).mismatches, 0);
        // Environment 1's values where environment 2's should be: every value of it counted.
        let mut wrong = v.clone();
        wrong.copy_within(grid.len()..2 * grid.len(), 2 * grid.len());
        assert!(compare_with_reference(&p, &wrong, 1e-6).mismatches > 10);
        assert_eq!(compare_with_reference(&p, &v[..grid.len()], 1e-6).mismatches, 2 * grid.len());
        assert_eq!(env_phase(1.0, ENV_PHASES), 1.0);
    }

    #[test]
    fn grid_parses_and_rejects() {
        assert_eq!("513x257".parse::<Grid>(), Ok(Grid { width: 513, height: 257 }));
        assert_eq!("2X2".parse::<Grid>(), Ok(Grid { width: 2, height: 2 }));
        assert!(matches!("1x5".parse::<Grid>(), Err(GridError::TooSmall(_))));
        assert!(matches!("512".parse::<Grid>(), Err(GridError::Syntax(_))));
        assert!(matches!("ax3".parse::<Grid>(), Err(GridError::Syntax(_))));
        assert!(matches!("99999x2".parse::<Grid>(), Err(GridError::TooLarge(_))));
    }

    #[test]
    fn reference_hits_known_values() {
        let grid = Grid { width: 3, height: 3 };
        let p = WaveParams {
            grid,
            phase: 0.0,
            amplitude: 1.0,
            frequency: std::f32::consts::FRAC_PI_2,
            time: 0.0,
            envs: 1,
        };
        let mut out = vec![0.0; 9];
        fill_reference(&p, &mut out);
        // corner (0,0): u = v = -1 → sin(-π/2)·cos(-π/2) = -1 · 0
        assert!(out[0].abs() < 1e-6);
        // centre (1,1): u = v = 0 → sin(0)·cos(0) = 0
        assert!(out[4].abs() < 1e-6);
        // (2,1): u = 1, v = 0 → sin(π/2)·cos(0) = 1
        assert!((out[5] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn phase_wraps_into_range() {
        let p = phase_for_time(1.0e6);
        assert!((0.0..std::f32::consts::TAU + 1e-6).contains(&p));
        assert_eq!(phase_for_time(0.0), 0.0);
    }

    #[test]
    fn comparison_counts_poison_and_errors() {
        let grid = Grid { width: 4, height: 2 };
        let p = WaveParams::at_time(grid, 0.5);
        let mut v = vec![0.0; grid.len()];
        fill_reference(&p, &mut v);
        assert_eq!(compare_with_reference(&p, &v, 1e-5).mismatches, 0);
        v[3] = f32::NAN;
        v[5] += 1e-3;
        let c = compare_with_reference(&p, &v, 1e-5);
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.first_mismatch, Some(3));
        assert!(c.max_abs_error >= 1e-3 * 0.99);
    }

    #[test]
    fn parallel_comparison_spans_chunks_and_reports_progress() {
        let grid = Grid { width: 1000, height: 300 }; // 300,000 values: several chunks
        let p = WaveParams::at_time(grid, 1.25);
        let mut v = vec![0.0; grid.len()];
        fill_reference(&p, &mut v);
        v[250_000] = f32::INFINITY;
        v[70_000] -= 0.5;
        v[299_999] += 0.25;
        let done = std::sync::atomic::AtomicU64::new(0);
        let c = compare_with_reference_progress(&p, &v, 1e-5, &|n| {
            done.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        });
        assert_eq!(c.mismatches, 3);
        assert_eq!(c.first_mismatch, Some(70_000), "the smallest index, whatever thread found it");
        assert!((c.max_abs_error - 0.5).abs() < 1e-6);
        assert_eq!(done.into_inner(), grid.len() as u64);
    }
}
