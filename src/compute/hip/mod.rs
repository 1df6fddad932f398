//! HIP backend (AMD): imports the slots Vulkan exports, compiles `kernels/sinewave.hip` with
//! hiprtc for the device's target, and writes the height field on a non-blocking stream.
//!
//! # Layers
//!
//! - `ffi` and `rtc`: the binding layer. The only code that sees a `hipError_t` or a
//!   `hiprtcResult`; every call comes back as `Result<_, ComputeError>`. `ffi` declares the HIP
//!   functions itself (returning a plain `c_int`) instead of calling hip-runtime-sys's, whose
//!   Rust-enum return type would be undefined behaviour for a status a newer runtime adds; the
//!   interop structs are declared in the ROCm 6 layout, whose prefix is the 5.x layout (checked
//!   at compile time against hip-runtime-sys). `rtc` loads hiprtc with libloading: separate
//!   `libhiprtc.so.N` on ROCm 6+, inside `libamdhip64.so.5` on Debian 12's HIP 5.2.
//! - `layout`: the interop structs' offsets, sizes and handle-type constants as data, for the
//!   test that compares them with the installed `hip_runtime_api.h` (`tests/hip_layout.rs`).
//! - `elf`: what a code object is (machine, flags, symbols), read with the `object` crate.
//! - `raii`: one owning type per object (stream, event, module, imported memory, mapped
//!   pointer, imported semaphore). Drop never panics.
//! - this file: [`HipBackend`] (the [`ComputeBackend`](crate::compute::ComputeBackend)): the
//!   shared skeleton ([`crate::compute::imported`]) over `HipApi` (module, launch, fill, events,
//!   semaphore wait/signal) and `HipDevice` (`hipSetDevice`), the same shape
//!   as CUDA's; [`probe`], and the pure pieces ([`amd_uuid_from_pci`],
//!   [`code_object_has_symbol`], [`compile_sinewave`]).
//!
//! # One build for ROCm 5.2 to 7.x
//!
//! The backend is built and tested against two ROCm releases, neither on an AMD GPU: Debian 12's
//! HIP 5.2.3 (the host CI job) and Debian sid's HIP 6.4.3 with comgr 7.0.2 (`.ci/hip-sid.sh`).
//! Nothing is chosen at compile time: no `cfg` on the ROCm version, because the binary may meet
//! another runtime than the headers it was built with. Instead:
//!
//! - structs: one layout, ROCm 6.4's, whose every field a 5.x runtime reads is either at the
//!   same offset or always zero (see `ffi`);
//! - functions: only symbols both releases export under the same name and meaning (the plain
//!   `hipGetDeviceProperties` keeps the 5.x struct in 6.x and 7.x, as `hipDevicePropR0000`);
//! - hiprtc and comgr: found at run time (`rtc`), in `libhiprtc.so.6` + comgr 3 on 6.4 and in
//!   `libamdhip64.so.5` + comgr 2 on 5.2; targets comgr does not list are refused before hiprtc;
//! - behaviour: decided from `hipRuntimeGetVersion` (`HIP_VERSION` encoding), which needs no
//!   GPU: the timeline semaphore handle type is offered only to runtimes >= 6.4
//!   (`offers_timeline_import`).
//!
//! # Matching the Vulkan device
//!
//! `hipDeviceGetUuid` returns the HSA agent UUID, which is not Vulkan's deviceUUID (hipamd#50).
//! RADV and AMDVLK build deviceUUID from the PCI location, so the backend does the same
//! ([`amd_uuid_from_pci`], as rocm-examples' `vulkan_interop` does) from the location
//! `hipDeviceGetPCIBusId` reports, cross-checked against `hipDeviceGetAttribute(PciBusId,
//! PciDeviceId)` (HIP 5.x has no PCI-domain attribute) and against `hipDeviceProp_t`.
//!
//! # Synchronisation on AMD
//!
//! On Linux, ROCm cannot import external semaphores: `hipImportExternalSemaphore` reaches
//! `roc::Device::importExtSemaphore`, a stub that returns false (`ShouldNotReachHere()`, an
//! assert in debug builds of clr; hipamd#48, clr#72: "implemented only in the PAL backend"). So
//! the semaphores are imported only when the user asked for `--sync external`
//! (`try_import_semaphores`), a failure is a warning, and [`ComputeBackend::gpu_sync_support`](crate::compute::ComputeBackend::gpu_sync_support)
//! then reports nothing, which sends `crate::sync` to `bridged` with a warning. `--sync external`
//! imports the timeline pair with `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd` (9), a
//! handle type that exists only from HIP 6.4 on; older runtimes are not asked for it. ROCm 6.4 on
//! Linux still refuses it: clr's Linux `importExtSemaphore` is a stub, and the newer rocr path for
//! external semaphores returns NOT_SUPPORTED on Linux (libhsakmt: Windows
//! only). The attempt is kept so that a runtime that implements it is used without a change here.
//!
//! In `bridged` and `blocking`, [`ComputeBackend::write_slot_and_wait`](crate::compute::ComputeBackend::write_slot_and_wait) enqueues the kernel, records
//! an event behind it and waits on that event on the host. An event, because it is HIP's own
//! completion primitive and the host wait costs microseconds; `hipLaunchHostFunc` (a callback
//! instead of a wait) is not exported by HIP 5.2, and `hipStreamWaitValue32` is the wrong
//! direction: it makes the *stream* wait for a memory value, it does not tell the host that the
//! stream finished (the host would have to poll a value written by `hipStreamWriteValue32`).
//!
//! # Profiling
//!
//! Each frame records hipEvents around the wait, the kernel and the signal on the stream, read
//! back later without blocking and put on the host clock through an anchor event
//! ([`crate::compute::timing`], shared with CUDA). Compiled and unit-tested here; never run on AMD
//! hardware.
//!
//! # File descriptors
//!
//! Both imports borrow the fd: see [`MEMORY_FD_OWNERSHIP`] and [`SEMAPHORE_FD_OWNERSHIP`].
//!
//! # Teardown
//!
//! [`HipBackend`]'s `Drop` (the skeleton's, [`crate::compute::imported::InteropBackend`]) makes
//! the device current and synchronises the stream; then the fields drop in declaration order:
//! events, imported semaphores, mapped pointers (each freeing its pointer, then destroying its
//! import), module, and the stream last. The owner drops the backend
//! before it frees the Vulkan memory and semaphores.
//!
//! # Examples
//!
//! Which Vulkan device a HIP device is: AMD's drivers build the deviceUUID from the PCI location
//! HIP reports (the HIP UUID itself cannot be compared).
//!
//! ```
//! use vkhip::compute::hip::amd_uuid_from_pci;
//! use vkhip::vk::device::uuid_string;
//!
//! // The GPU at 0001:c3:1f.0, as RADV and AMDVLK report it.
//! let uuid = amd_uuid_from_pci(0x0001, 0xc3, 0x1f);
//! assert_eq!(uuid_string(&uuid), "01000000-c300-0000-1f00-000000000000");
//! ```
#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

pub(crate) mod compile;
pub(crate) mod device;
mod elf;
pub(crate) mod ffi;
mod layout;
mod pci;
pub(crate) mod raii;
mod rtc;

pub use compile::{compile_kernel, compile_sinewave, hiprtc_version, supported_offload_archs};
pub use elf::code_object_has_symbol;
pub use layout::{interop_layout, LayoutEntry, Since};
pub use pci::amd_uuid_from_pci;

use super::fd::{FdOwnership, ImportFd};
use super::imported::{self, Imported, InteropApi, InteropBackend, InteropDevice, SemaphorePair, Semaphores};
use super::kernel::{
    sinewave_launch, KernelCache, SinewaveArgs, SinewaveLaunch, SINEWAVE_ENTRY, SINEWAVE_SOURCE,
};
use super::timing::StreamTimer;
use super::{
    BackendKind, ComputeDeviceInfo, ComputeError, InteropMemory, InteropSemaphorePair, InteropSemaphores,
};
use crate::interop::hip::{Hip, HipBuffer, HipTimeline};
use crate::sim::WaveParams;
use device::{format_hip_version, HipDevice};
use raii::{Event, Module, Stream};

/// What `hipImportExternalMemory` does with the fd: it borrows it.
///
/// ROCm clr, `hipImportExternalMemory` (hipamd/src/hip_memory.cpp) wraps the fd in an
/// `amd::ExternalBuffer` (rocclr/platform/external_memory.hpp, whose destructor is empty) and
/// calls `create()`, which for a one-device context maps the memory at once
/// (`amd::Memory::create`, rocclr/platform/memory.cpp) through `roc::Buffer::create` →
/// `Memory::interopMapBuffer` → `hsa_amd_interop_map_buffer(fd)` (rocclr/device/rocm/rocmemory.cpp).
/// The kernel driver takes its own dma-buf reference there; clr never closes or keeps using the
/// fd (it closes only fds it exported itself, in the GL path). HIP 5.x (Debian's 5.2) takes the
/// same route through `amd::BufferVk` → `interopMapBuffer(getVkSharedHandle())`. So the fd is
/// closed right after the call, success or not: what rocDecode does too.
pub const MEMORY_FD_OWNERSHIP: FdOwnership = FdOwnership::Borrowed;

/// What `hipImportExternalSemaphore` does with the fd: it borrows it.
///
/// ROCm clr, `hipImportExternalSemaphore` (hipamd/src/hip_memory.cpp) passes the fd to
/// `amd::Device::importExtSemaphore`; on Linux (`roc::Device`, rocclr/device/rocm/rocdevice.hpp)
/// that is a stub returning false, so the call fails with `hipErrorNotSupported` and the fd is
/// never consumed. The caller closes it in every case; were a future ROCm to take ownership on
/// success, this constant is the one place to change.
pub const SEMAPHORE_FD_OWNERSHIP: FdOwnership = FdOwnership::Borrowed;

/// The HIP runtime's version in `HIP_VERSION` encoding (major·10⁷ + minor·10⁵ + patch; Debian
/// 12: 50221153). Needs no GPU.
pub fn runtime_version() -> Result<i32, ComputeError> {
    ffi::runtime_version()
}

/// Devices HIP can see, with their Vulkan-comparable UUIDs. With no AMD GPU this is
/// `Unavailable` naming `hipErrorNoDevice` (HIP prints nothing itself in that case).
pub fn probe() -> Result<Vec<ComputeDeviceInfo>, ComputeError> {
    let devices = device::enumerate()?;
    let runtime = ffi::runtime_version().ok();
    Ok(devices.iter().map(|d| d.info(runtime)).collect())
}

/// Whether bytes are a code object HIP may be given: `hipModuleLoadData` parses its input through
/// the ELF headers without a length, so a damaged cache entry must never reach it.
fn is_loadable_code_object(code: &[u8]) -> bool {
    let machine_ok = match elf::elf_machine_and_flags(code) {
        Some((machine, _)) => machine == elf::EM_AMDGPU,
        None => false,
    };
    machine_ok && code_object_has_symbol(code, SINEWAVE_ENTRY)
}

fn kernel_code(dev: &HipDevice, runtime: i32, driver: i32) -> Result<Vec<u8>, ComputeError> {
    let rtc_version = hiprtc_version()?;
    // A GPU newer than the installed ROCm (e.g. RDNA3 with Debian's HIP 5.2) is an environment
    // gap, not a kernel bug.
    let processor = rtc::Comgr::processor(&dev.arch);
    if let Some(archs) = supported_offload_archs() {
        if !archs.iter().any(|a| a == processor) {
            return Err(ComputeError::Unavailable {
                backend: "hip",
                reason: format!(
                    "{} is a {processor}, a target the installed hiprtc ({rtc_version}, HIP {}) \
                     cannot compile for; a newer ROCm is needed",
                    dev.name,
                    format_hip_version(runtime)
                ),
            });
        }
    }
    let options = compile::sinewave_options(&dev.arch).join(" ");
    let versions = format!("hip runtime {} driver {driver}", format_hip_version(runtime));
    let parts =
        [SINEWAVE_SOURCE, rtc_version.as_str(), options.as_str(), dev.arch.as_str(), versions.as_str()];
    let (code, outcome) = KernelCache::from_env().get_or_compile(&parts, || compile_sinewave(&dev.arch))?;
    log::debug!("hip kernel for {} ({rtc_version}): {outcome:?}, {} bytes", dev.arch, code.len());
    if is_loadable_code_object(&code) {
        return Ok(code);
    }
    log::warn!("hip: cached kernel for {} is not a usable code object; recompiling", dev.arch);
    let code = compile_sinewave(&dev.arch)?;
    if is_loadable_code_object(&code) {
        Ok(code)
    } else {
        Err(ComputeError::Compile {
            api: "hiprtc",
            log: format!("the code object for {} has no `{SINEWAVE_ENTRY}` kernel", dev.arch),
        })
    }
}

/// Whether `--sync external` asks this runtime to import the timeline semaphores: only runtimes
/// whose headers define `hipExternalSemaphoreHandleTypeTimelineSemaphoreFd` (HIP >= 6.4); an
/// older one would reject (or misread) the value.
pub(crate) fn offers_timeline_import(runtime: i32) -> bool {
    runtime >= ffi::FIRST_TIMELINE_RUNTIME
}

/// Import a (computed, rendered) pair with `import` ([`SemaphorePair::import`]).
fn import_pair<S>(
    pair: InteropSemaphorePair,
    timeline: bool,
    import: &impl Fn(ImportFd, bool) -> Result<S, ComputeError>,
) -> Result<SemaphorePair<S>, ComputeError> {
    SemaphorePair::import(pair, |fd| import(fd, timeline))
}

/// Try the imports the user asked for; a failure is a warning and leaves that scheme off (ROCm on
/// Linux cannot import external semaphores). Every fd is closed either way. `import(fd, timeline)`
/// imports one semaphore (the backend: through [`Hip`]).
fn import_semaphores<S>(
    semaphores: InteropSemaphores,
    runtime: i32,
    import: impl Fn(ImportFd, bool) -> Result<S, ComputeError>,
) -> Semaphores<S> {
    let mut out = Semaphores::default();
    if let Some(pair) = semaphores.timeline {
        if !offers_timeline_import(runtime) {
            log::warn!(
                "hip: HIP runtime {} has no timeline semaphore handle type (HIP 6.4 adds it); \
                 not importing the timeline semaphores",
                format_hip_version(runtime)
            );
        } else {
            match import_pair(pair, true, &import) {
                Ok(p) => out.timeline = Some(p),
                Err(e) => log::warn!(
                    "hip: importing the timeline semaphores failed ({e}); ROCm on Linux does not \
                     implement external semaphores (hipamd#48, clr#72)"
                ),
            }
        }
    }
    // All pairs or none: the first failure drops the pairs not yet tried, which closes their fds.
    let binary = semaphores
        .binary
        .into_iter()
        .map(|pair| import_pair(pair, false, &import))
        .collect::<Result<Vec<_>, _>>();
    match binary {
        Ok(binary) => out.binary = binary,
        Err(e) => log::warn!(
            "hip: importing the binary semaphores failed ({e}); ROCm on Linux does not \
             implement external semaphores (hipamd#48, clr#72)"
        ),
    }
    out
}

/// What the shared skeleton ([`Imported`]) calls HIP with: the loaded module and how many blocks
/// the device keeps resident.
pub struct HipApi {
    module: Module,
    max_blocks: u32,
}

impl InteropApi for HipApi {
    const NAME: &'static str = "hip";
    const FILL_NAME: &'static str = "hipMemsetD32Async";
    type Stream = Stream;
    type Event = Event;
    type Semaphore = HipTimeline;
    type Buffer = HipBuffer;

    fn buffer_size(buffer: &HipBuffer) -> u64 {
        buffer.size()
    }

    fn wait(&self, semaphore: &HipTimeline, value: u64, stream: &Stream) -> Result<(), ComputeError> {
        semaphore.raw().wait_async(value, stream)
    }

    fn signal(&self, semaphore: &HipTimeline, value: u64, stream: &Stream) -> Result<(), ComputeError> {
        semaphore.raw().signal_async(value, stream)
    }

    /// One `sinewave` launch per slot (HIP batches through the trait's default loop, one slot each).
    fn launch(
        &self,
        stream: &Stream,
        slots: &[(&HipBuffer, WaveParams)],
    ) -> Result<SinewaveLaunch, ComputeError> {
        let mut last = None;
        for (buffer, params) in slots {
            imported::check_grid_fits("hip", params.grid, buffer.size())?;
            let launch = sinewave_launch(params.grid, self.max_blocks);
            let mut args = SinewaveArgs::new(buffer.device_ptr(), params);
            let mut ptrs = args.param_pointers();
            // SAFETY: the function and stream are live (borrowed owners); `ptrs` points at the
            // fields of `args`, in the order and types of `sinewave`'s parameters
            // (`SinewaveArgs::SIGNATURE`, checked against the source by a unit test; the device
            // pointer is 8 bytes, as on every HIP target), and `args` outlives the call (the
            // runtime copies the values at launch); the kernel writes `width·height` floats, which
            // the check above keeps inside the mapping.
            unsafe { ffi::module_launch_kernel(self.module.function(), launch, stream.raw(), &mut ptrs) }?;
            last = Some(launch);
        }
        last.ok_or_else(|| ComputeError::Unsupported { backend: "hip", reason: "an empty batch".into() })
    }

    fn fill(&self, buffer: &HipBuffer, words: usize, stream: &Stream) -> Result<(), ComputeError> {
        if words as u64 * 4 > buffer.size() {
            return Err(ComputeError::Unsupported {
                backend: "hip",
                reason: format!("a fill of {words} words does not fit a {}-byte slot", buffer.size()),
            });
        }
        // SAFETY: `buffer` maps at least `words` 32-bit words (checked above); the stream is live.
        unsafe { ffi::memset_d32_async(buffer.mapped().ptr(), 0, words, stream.raw()) }
    }

    fn timed_event(&self) -> Result<Event, ComputeError> {
        Event::new_timed()
    }

    fn elapsed_us(&self, start: &Event, end: &Event) -> Result<f64, ComputeError> {
        Ok(f64::from(Event::elapsed_ms(start, end)?) * 1000.0)
    }

    fn synchronize(&self, stream: &Stream) -> Result<(), ComputeError> {
        stream.synchronize()
    }
}

/// The HIP compute backend. See the module notes for the layers, the sync rules and teardown.
///
/// Drop order (after `Drop::drop` made the device current and synchronised the stream): the
/// skeleton's fields (the profiler's events and anchor stream, events, semaphores, slot mappings
/// and their imports, module, then the stream: see [`Imported`]).
pub type HipBackend = InteropBackend<HipDevice>;

impl InteropDevice for HipDevice {
    type Api = HipApi;
    const KIND: BackendKind = BackendKind::Hip;
    /// Batches go frame by frame (the trait's default): `sinewave_batch` was never run on AMD.
    const BATCHES: bool = false;

    fn make_current(&self) -> Result<(), ComputeError> {
        ffi::set_device(self.ordinal)
    }

    fn name(&self) -> String {
        format!("{} ({}, PCI {})", self.name, self.arch, self.pci_bus_id)
    }
}

const _: fn() = || {
    fn assert_send<T: Send>() {}
    assert_send::<HipBackend>();
};

impl HipBackend {
    /// Open the HIP device whose PCI-built UUID is `device_uuid`, import and map every slot,
    /// import the semaphores if `try_import_semaphores` (`--sync external`), and build the kernel.
    pub fn new(
        device_uuid: [u8; 16],
        memory: Vec<InteropMemory>,
        semaphores: InteropSemaphores,
        try_import_semaphores: bool,
    ) -> Result<Self, ComputeError> {
        let device = device::find_by_uuid(device_uuid)?;
        ffi::set_device(device.ordinal)?;
        imported::check_pairs_per_slot("hip", semaphores.binary.len(), memory.len())?;
        let runtime = ffi::runtime_version()?;
        let driver = ffi::driver_version().unwrap_or(0);
        log::info!(
            "hip: {} on HIP runtime {} (driver {driver})",
            device.summary(),
            format_hip_version(runtime)
        );

        let code = kernel_code(&device, runtime, driver)?;
        // SAFETY: `code` passed `is_loadable_code_object` (an AMDGPU ELF defining the kernel).
        let module = unsafe { Module::load(&code, SINEWAVE_ENTRY) }?;
        let stream = Stream::new_non_blocking()?;
        let done = Event::new_sync_only()?;
        let timer = StreamTimer::new("hip", Stream::new_non_blocking()?, Event::new_timed)?;

        // The imports go through the public interop API (`vkhip::interop::hip`), as a user's
        // would; each import keeps the device's stream alive and waits for it before it goes.
        let hip = Hip::on_device(device.clone())?;
        let mut slots = Vec::with_capacity(memory.len());
        for (i, m) in memory.into_iter().enumerate() {
            imported::check_slot_memory("hip", i, &m)?;
            slots.push(hip.import_buffer(m)?);
        }

        let semaphores = if try_import_semaphores {
            import_semaphores(semaphores, runtime, |fd, timeline: bool| {
                if timeline {
                    hip.import_timeline(fd)
                } else {
                    hip.import_binary(fd)
                }
            })
        } else {
            drop(semaphores); // closes the fds
            Semaphores::default()
        };
        // Resident blocks of 256 threads: 8 per compute unit (2048 threads, the CDNA/RDNA maximum).
        let api = HipApi { module, max_blocks: device.compute_units.max(1).saturating_mul(8) };
        let core = Imported::new(api, stream, done, timer, slots, semaphores);
        Ok(InteropBackend::from_parts(core, device))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compute::fd::ImportFd;
    use crate::compute::GpuSyncSupport;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD only queries the descriptor table; any integer is a valid argument.
        unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
    }

    #[test]
    fn hip_imports_borrow_the_fd_either_way() {
        assert_eq!(MEMORY_FD_OWNERSHIP, FdOwnership::Borrowed);
        assert_eq!(SEMAPHORE_FD_OWNERSHIP, FdOwnership::Borrowed);
        for ownership in [MEMORY_FD_OWNERSHIP, SEMAPHORE_FD_OWNERSHIP] {
            for ok in [true, false] {
                let f = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
                let raw = f.as_raw_fd();
                let fd = ImportFd::new(f);
                let seen = fd.import(ownership, |r| if ok { Ok(r) } else { Err(r) });
                assert_eq!(seen.unwrap_or_else(|r| r), raw);
                assert!(!is_open(raw), "HIP borrows the fd: closed after the import (ok = {ok})");
            }
        }
    }

    #[test]
    fn probe_without_gpu_names_hip_error_no_device() {
        if std::path::Path::new("/dev/kfd").exists() {
            // A ROCm machine: probe must answer with devices or a clean Unavailable.
            match probe() {
                Ok(devices) => assert!(devices.iter().all(|d| d.api == "hip")),
                Err(e) => assert!(matches!(e, ComputeError::Unavailable { .. }), "{e}"),
            }
            return;
        }
        let e = probe().unwrap_err();
        let ComputeError::Unavailable { backend, reason } = &e else {
            panic!("expected Unavailable, got {e:?}")
        };
        assert_eq!(*backend, "hip");
        assert!(
            reason.starts_with("hipGetDeviceCount returned hipErrorNoDevice")
                && reason.contains(
                    ": no AMD GPU visible to ROCm (no /dev/kfd: the amdgpu kernel driver is not loaded"
                ),
            "{reason}"
        );
        assert!(!e.to_string().contains('\n'), "one line for the CLI: {e}");
        assert!(e
            .to_string()
            .starts_with("backend hip is not available: hipGetDeviceCount returned hipErrorNoDevice"));
    }

    #[test]
    fn backend_without_gpu_is_unavailable_and_closes_the_fds() {
        if std::path::Path::new("/dev/kfd").exists() {
            return; // needs the GPU-less case
        }
        let f = OwnedFd::from(std::fs::File::open("/dev/null").unwrap());
        let raw = f.as_raw_fd();
        let memory = vec![InteropMemory {
            fd: ImportFd::new(f),
            allocation_size: 4096,
            buffer_size: 4096,
            dedicated: true,
        }];
        let r = HipBackend::new([0; 16], memory, InteropSemaphores::default(), true);
        assert!(matches!(r, Err(ComputeError::Unavailable { backend: "hip", .. })));
        assert!(!is_open(raw), "fds handed to a backend that could not start are closed");
    }

    #[test]
    fn timeline_import_is_offered_from_hip_6_4_on() {
        assert!(!offers_timeline_import(50_221_153), "Debian 12's HIP 5.2.3");
        assert!(!offers_timeline_import(60_342_134), "HIP 6.3");
        assert!(offers_timeline_import(60_443_484), "Debian sid's HIP 6.4.3");
        assert!(offers_timeline_import(70_000_000), "HIP 7.0");
    }

    #[test]
    fn failed_semaphore_import_leaves_gpu_sync_off_and_closes_the_fds() {
        if std::path::Path::new("/dev/kfd").exists() {
            return; // needs a runtime that cannot import (no device)
        }
        let runtime = runtime_version().unwrap();
        let files = [(); 4].map(|()| OwnedFd::from(std::fs::File::open("/dev/null").unwrap()));
        let raws: Vec<i32> = files.iter().map(AsRawFd::as_raw_fd).collect();
        let [a, b, c, d] = files.map(ImportFd::new);
        let semaphores = InteropSemaphores {
            timeline: Some(InteropSemaphorePair { computed: a, rendered: b }),
            binary: vec![InteropSemaphorePair { computed: c, rendered: d }],
        };
        // HIP >= 6.4 is asked for the timeline type and fails (no device; on Linux also the
        // stub); older runtimes are not asked for it. Either way: a warning, not an error, and
        // `FrameSync` then falls back to bridged.
        let imported = import_semaphores(semaphores, runtime, |fd, timeline| {
            let handle = if timeline {
                ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_TIMELINE_FD
            } else {
                ffi::EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
            };
            raii::ExternalSemaphore::import(fd, handle)
        });
        assert_eq!(
            imported.support(),
            GpuSyncSupport { timeline: false, binary: false },
            "runtime {runtime}"
        );
        for raw in raws {
            assert!(!is_open(raw), "fd {raw} closed after the attempt (runtime {runtime})");
        }
    }

    #[test]
    fn cached_garbage_is_never_loadable() {
        assert!(!is_loadable_code_object(b""));
        assert!(!is_loadable_code_object(b"\x7fELF garbage"));
    }
}
