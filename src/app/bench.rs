//! `vkhip bench-kernel` and `vkhip cycles`: the GPU check's kernel timing and leak check.
//!
//! # Examples
//!
//! On any Vulkan device (lavapipe included), with the `cpu` backend: two full set-up and
//! tear-down cycles leak no fd; `--sync binary` is refused before anything is created.
//!
//! ```
//! use clap::Parser as _;
//! use std::process::ExitCode;
//! use vkhip::cli::{Cli, Command};
//!
//! let cycles = |sync: &str| {
//!     let args = ["vkhip", "cycles", "--count", "2", "--backend", "cpu", "--sync", sync, "--grid", "32x32"];
//!     let cli = Cli::try_parse_from(args).unwrap();
//!     let Some(Command::Cycles(args)) = cli.command else { unreachable!() };
//!     vkhip::app::bench::cycles(&args)
//! };
//! assert_eq!(cycles("bridged").unwrap(), ExitCode::SUCCESS);
//! let err = cycles("binary").unwrap_err();
//! assert!(err.to_string().starts_with("cycles does not run --sync binary"), "{err}");
//! assert!(vkhip::app::is_environment_error(&err)); // exit code 2
//! ```

use super::frame::Clock;
use super::session::Session;
use crate::cli::{BenchArgs, CycleArgs, TimeMode};
use crate::profile::stats::median;
use crate::sim::WaveParams;
use crate::sync::SyncMode;
use crate::vk::instance::Instance;
use std::process::ExitCode;
use std::sync::Arc;

/// Kernel vs fill over one slot, median of `--iterations` launches each.
pub fn bench_kernel(args: &BenchArgs) -> anyhow::Result<ExitCode> {
    let mut common = args.common.clone();
    common.sync = SyncMode::Blocking; // the render thread owns the backend: no bridge thread
    let instance = Arc::new(Instance::new(common.validation, &[])?);
    let mut session = Session::new(instance, &common, false)?;
    let params = WaveParams::at_time(common.grid, 0.25);
    let iterations = args.iterations;
    let b = session.sync.with_idle_backend(|b| b.benchmark(0, &params, iterations))?;
    let (k, f) = (median(&b.kernel_us), median(&b.fill_us));
    crate::outln!(
        "bench-kernel: backend={} grid={} iterations={} kernel_median_us={k:.2} fill_median_us={f:.2} fill={} ratio={:.3}",
        session.sync.backend_kind(),
        common.grid,
        b.kernel_us.len(),
        b.fill_name,
        if f > 0.0 { k / f } else { 0.0 }
    );
    Ok(ExitCode::SUCCESS)
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Build and tear down the whole setup `--count` times, running a few frames each time; compare
/// open fds and the compute API's free device memory after the first cycle and after the last.
pub fn cycles(args: &CycleArgs) -> anyhow::Result<ExitCode> {
    if args.common.sync == SyncMode::Binary {
        return Err(crate::cli::UsageError(
            "cycles does not run --sync binary (its semaphore pairs need real draws); use external".into(),
        )
        .into());
    }
    let count = args.count;
    let mut fds = Vec::new();
    let mut free = Vec::new();
    // Keep the compute API's context alive across cycles, so a leaked import stays visible.
    let mut _hold = None;
    for i in 0..count {
        {
            let instance = Arc::new(Instance::new(args.common.validation, &[])?);
            let mut session = Session::new(instance, &args.common, false)?;
            if i == 0 && session.sync.backend_kind() == crate::compute::BackendKind::Cuda {
                _hold = Some(crate::compute::cuda::hold_context(session.ctx.physical.uuid)?);
            }
            let mut clock = Clock::new(TimeMode::Frame, 1.0 / 60.0);
            for f in 0..3u64 {
                session.sync.throttle(f)?;
                let params = clock.due_params(&session, f);
                session.sync.compute(f, &params)?;
                // No draw here: signal `rendered` from the host once the slot is computed, as
                // the draw would (host-wait on the Vulkan-signalled path only).
                let v = f + 1;
                if session.sync.mode() == SyncMode::Bridged {
                    // Host-signalled by the bridge thread: a Vulkan value, fine to wait on.
                    session.ctx.wait_timeline(session.sync.sems.computed.handle, v, || {
                        format!("'computed' ≥ {v}")
                    })?;
                } else {
                    // Signalled by the compute API: wait with its own primitive, never on the value.
                    session.sync.finish_compute()?;
                }
                session.ctx.signal_timeline(session.sync.sems.rendered.handle, v)?;
            }
            // After shutdown the backend is idle but still holds its imports, in every mode.
            session.sync.shutdown()?;
            if let Some((f, _)) = session.sync.with_idle_backend(|b| b.device_memory().transpose())? {
                free.push(f);
            }
        }
        fds.push(open_fds());
        log::info!("cycle {i}: {} open fds, free device memory {:?}", fds[i as usize], free.last());
    }
    let fd_leak = fds[fds.len() - 1] > fds[0];
    let mib = |b: u64| b >> 20;
    // Allow 2 MiB of driver noise across cycles; a leaked slot import is far larger.
    let mem_leak = free.len() >= 2 && free[0].saturating_sub(free[free.len() - 1]) > 2 << 20;
    crate::outln!(
        "cycles: backend={} count={count} open_fds_before={} open_fds_after={} device_free_before_mib={} device_free_after_mib={} result={}",
        args.common.backend,
        fds[0],
        fds[fds.len() - 1],
        free.first().map_or("n/a".into(), |&f| mib(f).to_string()),
        free.last().map_or("n/a".into(), |&f| mib(f).to_string()),
        if fd_leak || mem_leak { "LEAK" } else { "OK" }
    );
    Ok(if fd_leak || mem_leak { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
