//! The binding layer for hiprtc (and the one comgr query it needs): the only place where a
//! `hiprtcResult` exists.
//!
//! hiprtc is loaded at run time, because where it lives depends on the ROCm release: Debian 12's
//! HIP 5.2 keeps the `hiprtc*` functions inside `libamdhip64.so.5`; ROCm 6 and later ship them in
//! a separate `libhiprtc.so.N`. [`hiprtc`] tries the separate library first, then libamdhip64, and
//! takes the first that exports every function used here, so one build works with either.
//!
//! comgr (the code object manager hiprtc compiles through) is asked only for its list of targets:
//! see `compile.rs` for why hiprtc must never see a target comgr does not know.
//!
//! A failed call becomes [`Error::failed`]`(Api::Hiprtc, call, status, message)`; a rejected
//! kernel an [`Error::compile`] carrying hiprtc's log.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::OnceLock;

use libloading::Library;

use crate::error::{Api, Error, Result};

/// A raw `hiprtcResult`.
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtcStatus(pub c_int);

impl RtcStatus {
    pub const SUCCESS: RtcStatus = RtcStatus(0);
    pub const INVALID_OPTION: RtcStatus = RtcStatus(5);
    pub const COMPILATION: RtcStatus = RtcStatus(6);
}

type RawProgram = *mut c_void;
type FnVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> RtcStatus;
type FnErrorString = unsafe extern "C" fn(RtcStatus) -> *const c_char;
type FnCreate = unsafe extern "C" fn(
    *mut RawProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> RtcStatus;
type FnCompile = unsafe extern "C" fn(RawProgram, c_int, *const *const c_char) -> RtcStatus;
type FnSize = unsafe extern "C" fn(RawProgram, *mut usize) -> RtcStatus;
type FnRead = unsafe extern "C" fn(RawProgram, *mut c_char) -> RtcStatus;
type FnDestroy = unsafe extern "C" fn(*mut RawProgram) -> RtcStatus;

/// Where hiprtc is looked for, in order.
pub const HIPRTC_LIBRARIES: &[&str] = &[
    "libhiprtc.so",
    "libhiprtc.so.7",
    "libhiprtc.so.6",
    "libamdhip64.so",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// The loaded hiprtc functions. Lives for the whole process (in a `OnceLock`), so the function
/// pointers never outlive their library.
pub struct Hiprtc {
    library: &'static str,
    version: (i32, i32),
    error_string: FnErrorString,
    create: FnCreate,
    compile: FnCompile,
    log_size: FnSize,
    log: FnRead,
    code_size: FnSize,
    code: FnRead,
    destroy: FnDestroy,
    _lib: Library,
}

impl Hiprtc {
    /// # Safety
    /// Loads a shared library (runs its initialisers) and trusts that its `hiprtc*` symbols have
    /// the signatures of hiprtc.h.
    unsafe fn load(name: &'static str) -> Result<Hiprtc, String> {
        // SAFETY: the caller accepts running the library's initialisers (ROCm libraries).
        let lib = unsafe { Library::new(name) }.map_err(|e| e.to_string())?;
        macro_rules! sym {
            ($t:ty, $s:literal) => {
                // SAFETY: the symbol has the hiprtc.h signature `$t` (the caller's contract); the
                // copied pointer stays valid because `lib` is stored next to it.
                *unsafe { lib.get::<$t>($s) }.map_err(|e| format!("{name}: {e}"))?
            };
        }
        let version: FnVersion = sym!(FnVersion, b"hiprtcVersion\0");
        let mut rtc = Hiprtc {
            library: name,
            version: (0, 0),
            error_string: sym!(FnErrorString, b"hiprtcGetErrorString\0"),
            create: sym!(FnCreate, b"hiprtcCreateProgram\0"),
            compile: sym!(FnCompile, b"hiprtcCompileProgram\0"),
            log_size: sym!(FnSize, b"hiprtcGetProgramLogSize\0"),
            log: sym!(FnRead, b"hiprtcGetProgramLog\0"),
            code_size: sym!(FnSize, b"hiprtcGetCodeSize\0"),
            code: sym!(FnRead, b"hiprtcGetCode\0"),
            destroy: sym!(FnDestroy, b"hiprtcDestroyProgram\0"),
            _lib: lib,
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        let status = unsafe { version(&mut major, &mut minor) };
        rtc.check(status, "hiprtcVersion").map_err(|e| e.to_string())?;
        rtc.version = (major, minor);
        Ok(rtc)
    }

    /// The library the functions came from.
    pub fn library(&self) -> &'static str {
        self.library
    }

    /// `hiprtcVersion` (Debian's HIP 5.2 answers 9.0).
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// `hiprtcGetErrorString`, or the number for a value it does not know (it returns NULL).
    pub fn describe(&self, status: RtcStatus) -> String {
        // SAFETY: hiprtcGetErrorString accepts any value and returns a static string or NULL.
        let p = unsafe { (self.error_string)(status) };
        if p.is_null() {
            format!("hiprtcResult {}", status.0)
        } else {
            // SAFETY: non-null pointers are static NUL-terminated strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }

    /// The one conversion from a `hiprtcResult` to a `Result`.
    pub fn check(&self, status: RtcStatus, call: &'static str) -> Result<()> {
        if status == RtcStatus::SUCCESS {
            Ok(())
        } else {
            Err(Error::failed(Api::Hiprtc, call, i64::from(status.0), self.describe(status)))
        }
    }
}

/// hiprtc, loaded once per process.
pub fn hiprtc() -> Result<&'static Hiprtc> {
    static HIPRTC: OnceLock<Result<Hiprtc, String>> = OnceLock::new();
    HIPRTC
        .get_or_init(|| {
            let mut tried = Vec::new();
            for &name in HIPRTC_LIBRARIES {
                // SAFETY: these are ROCm's own libraries; their hiprtc symbols follow hiprtc.h.
                match unsafe { Hiprtc::load(name) } {
                    Ok(rtc) => {
                        log::debug!("hiprtc {}.{} from {name}", rtc.version.0, rtc.version.1);
                        return Ok(rtc);
                    }
                    Err(e) => tried.push(e),
                }
            }
            Err(format!("no library exports hiprtc ({})", tried.join("; ")))
        })
        .as_ref()
        .map_err(|reason| Error::unavailable(Api::Hiprtc, "", reason.clone()))
}

/// One hiprtc program; destroyed on drop.
pub struct Program {
    rtc: &'static Hiprtc,
    raw: RawProgram,
}

impl Program {
    pub fn new(rtc: &'static Hiprtc, source: &CStr, name: &CStr) -> Result<Program> {
        let mut raw: RawProgram = std::ptr::null_mut();
        // SAFETY: valid out-pointer, NUL-terminated source and name, no headers.
        let status = unsafe {
            (rtc.create)(&mut raw, source.as_ptr(), name.as_ptr(), 0, std::ptr::null(), std::ptr::null())
        };
        rtc.check(status, "hiprtcCreateProgram")?;
        Ok(Program { rtc, raw })
    }

    /// `hiprtcCompileProgram`. A rejected source or option is a `Compile` error carrying the log.
    pub fn compile(&self, options: &[CString]) -> Result<()> {
        let ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: `raw` is live; `ptrs` holds `ptrs.len()` NUL-terminated strings that outlive the call.
        let status = unsafe { (self.rtc.compile)(self.raw, ptrs.len() as c_int, ptrs.as_ptr()) };
        match status {
            RtcStatus::SUCCESS => Ok(()),
            RtcStatus::COMPILATION | RtcStatus::INVALID_OPTION => {
                let log = self.log().unwrap_or_else(|e| format!("(no log: {e})"));
                let log = log.trim_end_matches(['\0', '\n', ' ']);
                let opts: Vec<_> = options.iter().map(|o| o.to_string_lossy()).collect();
                Err(Error::compile(
                    Api::Hiprtc,
                    "hiprtcCompileProgram",
                    Some(i64::from(status.0)),
                    format!(
                        "{} with options [{}]{}{}",
                        self.rtc.describe(status),
                        opts.join(" "),
                        if log.is_empty() { "" } else { ":\n" },
                        log
                    ),
                ))
            }
            other => self.rtc.check(other, "hiprtcCompileProgram"),
        }
    }

    fn read(
        &self,
        size: FnSize,
        read: FnRead,
        size_call: &'static str,
        read_call: &'static str,
    ) -> Result<Vec<u8>> {
        let mut n = 0usize;
        // SAFETY: `raw` is live; `n` is a valid out-pointer.
        self.rtc.check(unsafe { size(self.raw, &mut n) }, size_call)?;
        let mut buf = vec![0u8; n];
        if n > 0 {
            // SAFETY: `buf` has exactly the size hiprtc reported for this buffer.
            self.rtc.check(unsafe { read(self.raw, buf.as_mut_ptr().cast()) }, read_call)?;
        }
        Ok(buf)
    }

    /// `hiprtcGetProgramLog`.
    pub fn log(&self) -> Result<String> {
        let bytes =
            self.read(self.rtc.log_size, self.rtc.log, "hiprtcGetProgramLogSize", "hiprtcGetProgramLog")?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// `hiprtcGetCode`: the code object (an AMDGPU ELF).
    pub fn code(&self) -> Result<Vec<u8>> {
        self.read(self.rtc.code_size, self.rtc.code, "hiprtcGetCodeSize", "hiprtcGetCode")
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `raw` is live and used by nothing else after this.
        let status = unsafe { (self.rtc.destroy)(&mut self.raw) };
        if let Err(e) = self.rtc.check(status, "hiprtcDestroyProgram") {
            log::warn!("{e}");
        }
    }
}

// --- comgr: the list of targets ---------------------------------------------------------------

type FnComgrVersion = unsafe extern "C" fn(*mut usize, *mut usize);
type FnIsaCount = unsafe extern "C" fn(*mut usize) -> c_int;
type FnIsaName = unsafe extern "C" fn(usize, *mut *const c_char) -> c_int;

/// The targets of the comgr library hiprtc compiles through.
pub struct Comgr {
    /// The mapped file.
    pub library: String,
    pub version: (usize, usize),
    /// Full ISA names, e.g. "amdgcn-amd-amdhsa--gfx90a".
    pub isa_names: Vec<String>,
    _lib: Library,
}

impl Comgr {
    /// # Safety
    /// Loads a shared library and trusts its `amd_comgr_*` symbols to follow amd_comgr.h.
    unsafe fn load(name: &str) -> Result<Comgr, String> {
        // SAFETY: the caller accepts running the library's initialisers (ROCm's comgr).
        let lib = unsafe { Library::new(name) }.map_err(|e| e.to_string())?;
        // SAFETY: amd_comgr.h signatures (stable since comgr 1.x); `lib` is kept alongside.
        let (get_version, isa_count, isa_name) = unsafe {
            (
                *lib.get::<FnComgrVersion>(b"amd_comgr_get_version\0").map_err(|e| e.to_string())?,
                *lib.get::<FnIsaCount>(b"amd_comgr_get_isa_count\0").map_err(|e| e.to_string())?,
                *lib.get::<FnIsaName>(b"amd_comgr_get_isa_name\0").map_err(|e| e.to_string())?,
            )
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two valid out-pointers.
        unsafe { get_version(&mut major, &mut minor) };
        let mut count = 0usize;
        // SAFETY: valid out-pointer.
        if unsafe { isa_count(&mut count) } != 0 {
            return Err(format!("{name}: amd_comgr_get_isa_count failed"));
        }
        let mut isa_names = Vec::with_capacity(count);
        for i in 0..count {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: `i` < count; valid out-pointer; comgr returns a static string.
            if unsafe { isa_name(i, &mut p) } != 0 || p.is_null() {
                return Err(format!("{name}: amd_comgr_get_isa_name({i}) failed"));
            }
            // SAFETY: non-null, NUL-terminated, static inside comgr.
            isa_names.push(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        }
        // Name the file actually mapped (e.g. /usr/lib/x86_64-linux-gnu/libamd_comgr.so.2.4.0),
        // whichever name found it.
        let library = mapped_comgr().into_iter().next().unwrap_or_else(|| name.to_string());
        Ok(Comgr { library, version: (major, minor), isa_names, _lib: lib })
    }

    /// The processor part of a target name: "amdgcn-amd-amdhsa--gfx90a:xnack-" → "gfx90a".
    pub fn processor(target: &str) -> &str {
        let t = target.strip_prefix("amdgcn-amd-amdhsa--").unwrap_or(target);
        t.split(':').next().unwrap_or(t)
    }

    /// Whether comgr can compile for `arch` (a gcnArchName, features allowed).
    pub fn knows(&self, arch: &str) -> bool {
        let p = Self::processor(arch);
        self.isa_names.iter().any(|n| Self::processor(n) == p)
    }
}

/// comgr libraries already mapped into this process (hiprtc from ROCm 6 links it directly).
fn mapped_comgr() -> Vec<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let mut found: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|p| p.contains("libamd_comgr.so"))
        .map(str::to_string)
        .collect();
    found.dedup();
    found
}

/// comgr as hiprtc would load it: one already mapped, else `libamd_comgr.so.2` (what HIP 5.x
/// dlopens), `.so.3` (ROCm 6.3+), the unversioned name. `None` when none loads.
pub fn comgr() -> Option<&'static Comgr> {
    static COMGR: OnceLock<Option<Comgr>> = OnceLock::new();
    COMGR
        .get_or_init(|| {
            let mut candidates = mapped_comgr();
            candidates
                .extend(["libamd_comgr.so.2", "libamd_comgr.so.3", "libamd_comgr.so"].map(String::from));
            for name in candidates {
                // SAFETY: ROCm's comgr; the queried symbols follow amd_comgr.h.
                match unsafe { Comgr::load(&name) } {
                    Ok(c) => {
                        log::debug!(
                            "comgr {}.{} ({}): {} targets",
                            c.version.0,
                            c.version.1,
                            name,
                            c.isa_names.len()
                        );
                        return Some(c);
                    }
                    Err(e) => log::debug!("comgr: {e}"),
                }
            }
            None
        })
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hiprtc_loads_and_names_its_errors() {
        let rtc = hiprtc().expect("hiprtc must load where libamdhip64 is installed");
        assert!(HIPRTC_LIBRARIES.contains(&rtc.library()));
        assert_eq!(rtc.describe(RtcStatus::COMPILATION), "HIPRTC_ERROR_COMPILATION");
        assert_eq!(rtc.describe(RtcStatus(12345)), "hiprtcResult 12345");
        let e = rtc.check(RtcStatus::INVALID_OPTION, "hiprtcCompileProgram").unwrap_err();
        assert_eq!(
            e.to_string(),
            "hiprtc: hiprtcCompileProgram failed (status 5): HIPRTC_ERROR_INVALID_OPTION"
        );
        assert_eq!(e.status(), Some(5));
        assert!(rtc.check(RtcStatus::SUCCESS, "hiprtcVersion").is_ok());
    }

    #[test]
    fn processor_strips_triple_and_features() {
        assert_eq!(Comgr::processor("amdgcn-amd-amdhsa--gfx90a"), "gfx90a");
        assert_eq!(Comgr::processor("gfx90a:sramecc+:xnack-"), "gfx90a");
        assert_eq!(Comgr::processor("amdgcn-amd-amdhsa--gfx942:xnack+"), "gfx942");
        assert_eq!(Comgr::processor("gfx1100"), "gfx1100");
    }
}
