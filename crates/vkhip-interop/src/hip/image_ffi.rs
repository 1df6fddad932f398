//! The binding layer for HIP's image calls: mapping imported memory as a mipmapped array, and
//! surface objects over it. Resolved at run time ([`ImageCalls`]): HIP 5.x has no
//! `hipExternalMemoryGetMappedMipmappedArray`, and its `hipCreateSurfaceObject` is exported only
//! under a C++ name, so linking them would make the crate unusable on 5.x. A runtime without
//! them answers [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) naming the missing
//! function. Statuses are [`HipStatus`] integers, turned into the crate's error by
//! [`check`](super::ffi::check), as in `ffi`.

use std::ffi::{c_int, c_uint, c_void};

use hip_runtime_sys as sys;

use super::ffi::{check, runtime_version, HipStatus, RawExternalMemory};
use crate::error::{Api, Error, Result};

pub type RawMipmappedArray = *mut c_void;
pub type RawArray = *mut c_void;
/// `hipSurfaceObject_t`: a pointer to an opaque `__hip_surface`, passed to kernels by value.
pub type RawSurface = *mut c_void;

/// `hipChannelFormatKindUnsigned`.
pub const CHANNEL_FORMAT_KIND_UNSIGNED: c_int = 1;
/// `hipChannelFormatKindFloat`.
pub const CHANNEL_FORMAT_KIND_FLOAT: c_int = 2;
/// `hipArraySurfaceLoadStore`: the array can be bound to a surface object.
pub const ARRAY_SURFACE_LOAD_STORE: c_uint = 0x2;
/// `hipResourceTypeArray`.
pub const RESOURCE_TYPE_ARRAY: c_int = 0;

/// `hipChannelFormatDesc`: bits per channel and their kind.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChannelFormatDesc {
    pub x: c_int,
    pub y: c_int,
    pub z: c_int,
    pub w: c_int,
    pub f: c_int,
}

/// `hipExtent`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub width: usize,
    pub height: usize,
    pub depth: usize,
}

/// `hipExternalMemoryMipmappedArrayDesc` (the ROCm 6 headers; the 5.x headers have none).
#[repr(C)]
pub struct ExternalMemoryMipmappedArrayDesc {
    pub offset: u64,
    pub format_desc: ChannelFormatDesc,
    pub extent: Extent,
    pub flags: c_uint,
    pub num_levels: c_uint,
}

/// `hipResourceDesc` describing an array (`resType` = array, `res.array.array`); the rest of
/// the union is zero.
#[repr(C)]
pub struct ResourceDesc {
    pub res_type: c_int,
    pub array: RawArray,
    pub rest: [u64; 6],
}

// Layout checks: the 5.x structs hip-runtime-sys binds (unchanged in 6.4), and the mipmapped
// descriptor's offsets as gcc computes them from the 6.4 header (see the `layout` test).
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<ChannelFormatDesc>() == size_of::<sys::hipChannelFormatDesc>());
    assert!(size_of::<Extent>() == size_of::<sys::hipExtent>());
    assert!(size_of::<ResourceDesc>() == size_of::<sys::hipResourceDesc>());
    assert!(offset_of!(ResourceDesc, array) == offset_of!(sys::hipResourceDesc, res));
    assert!(offset_of!(ExternalMemoryMipmappedArrayDesc, format_desc) == 8);
    assert!(offset_of!(ExternalMemoryMipmappedArrayDesc, extent) == 32);
    assert!(offset_of!(ExternalMemoryMipmappedArrayDesc, flags) == 56);
    assert!(offset_of!(ExternalMemoryMipmappedArrayDesc, num_levels) == 60);
    assert!(size_of::<ExternalMemoryMipmappedArrayDesc>() == 64);
};

type FnMapMipmapped = unsafe extern "C" fn(
    *mut RawMipmappedArray,
    RawExternalMemory,
    *const ExternalMemoryMipmappedArrayDesc,
) -> HipStatus;
type FnArrayLevel = unsafe extern "C" fn(*mut RawArray, RawMipmappedArray, c_uint) -> HipStatus;
type FnFreeMipmapped = unsafe extern "C" fn(RawMipmappedArray) -> HipStatus;
type FnCreateSurface = unsafe extern "C" fn(*mut RawSurface, *const ResourceDesc) -> HipStatus;
type FnDestroySurface = unsafe extern "C" fn(RawSurface) -> HipStatus;

/// The image entry points, looked up by their C names in the HIP runtime this process linked.
pub struct ImageCalls {
    map_mipmapped: FnMapMipmapped,
    array_level: FnArrayLevel,
    free_mipmapped: FnFreeMipmapped,
    create_surface: FnCreateSurface,
    destroy_surface: FnDestroySurface,
    /// The process' global scope, which holds libamdhip64 (linked) for as long as it runs.
    _process: libloading::os::unix::Library,
}

impl ImageCalls {
    /// The calls, resolved once; [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)
    /// naming the first function the runtime does not export.
    pub fn get() -> Result<&'static ImageCalls> {
        static CALLS: std::sync::OnceLock<std::result::Result<ImageCalls, &'static str>> =
            std::sync::OnceLock::new();
        CALLS.get_or_init(Self::resolve).as_ref().map_err(|&missing| {
            Error::unavailable(
                Api::Hip,
                missing,
                format!(
                    "the HIP runtime does not export {missing} (HIP {} here; HIP 5.x has no \
                     hipExternalMemoryGetMappedMipmappedArray and no C-named surface object \
                     calls): Vulkan images cannot be imported, buffers can",
                    runtime_version().map(super::device::format_hip_version).unwrap_or_default()
                ),
            )
        })
    }

    fn resolve() -> std::result::Result<ImageCalls, &'static str> {
        let process = libloading::os::unix::Library::this();
        macro_rules! sym {
            ($t:ty, $name:literal) => {
                // SAFETY: the symbol, where the runtime exports it under its C name, has the
                // hip_runtime_api.h signature `$t`; the pointer is copied out, and libamdhip64 is
                // linked into the process, so it stays mapped for the process' lifetime.
                *unsafe { process.get::<$t>(concat!($name, "\0").as_bytes()) }.map_err(|_| $name)?
            };
        }
        Ok(ImageCalls {
            map_mipmapped: sym!(FnMapMipmapped, "hipExternalMemoryGetMappedMipmappedArray"),
            array_level: sym!(FnArrayLevel, "hipGetMipmappedArrayLevel"),
            free_mipmapped: sym!(FnFreeMipmapped, "hipFreeMipmappedArray"),
            create_surface: sym!(FnCreateSurface, "hipCreateSurfaceObject"),
            destroy_surface: sym!(FnDestroySurface, "hipDestroySurfaceObject"),
            _process: process,
        })
    }

    /// `hipExternalMemoryGetMappedMipmappedArray` of one level of `width` × `height` texels of
    /// `format`, usable by surface objects.
    ///
    /// # Safety
    /// `mem` must be a live imported memory holding an image of that size and format.
    pub unsafe fn map_mipmapped_array(
        &self,
        mem: RawExternalMemory,
        format: ChannelFormatDesc,
        width: u32,
        height: u32,
    ) -> Result<RawMipmappedArray> {
        let desc = ExternalMemoryMipmappedArrayDesc {
            offset: 0,
            format_desc: format,
            extent: Extent { width: width as usize, height: height as usize, depth: 0 },
            flags: ARRAY_SURFACE_LOAD_STORE,
            num_levels: 1,
        };
        let mut array: RawMipmappedArray = std::ptr::null_mut();
        // SAFETY: `desc` is initialised, `array` is a valid out-pointer, the caller guarantees `mem`.
        let status = unsafe { (self.map_mipmapped)(&mut array, mem, &desc) };
        check(status, "hipExternalMemoryGetMappedMipmappedArray")?;
        Ok(array)
    }

    /// `hipGetMipmappedArrayLevel`: the array of `level`, owned by the mipmapped array.
    ///
    /// # Safety
    /// `array` must be live; the level is valid only while it is.
    pub unsafe fn level(&self, array: RawMipmappedArray, level: u32) -> Result<RawArray> {
        let mut out: RawArray = std::ptr::null_mut();
        // SAFETY: valid out-pointer; the caller guarantees `array`.
        check(unsafe { (self.array_level)(&mut out, array, level) }, "hipGetMipmappedArrayLevel")?;
        Ok(out)
    }

    /// # Safety
    /// `array` must be live, unused by pending work and surfaces, and never used again.
    pub unsafe fn free_mipmapped_array(&self, array: RawMipmappedArray) -> Result<()> {
        // SAFETY: the caller guarantees `array`.
        check(unsafe { (self.free_mipmapped)(array) }, "hipFreeMipmappedArray")
    }

    /// `hipCreateSurfaceObject` over `array`.
    ///
    /// # Safety
    /// `array` must be live and made with [`ARRAY_SURFACE_LOAD_STORE`].
    pub unsafe fn create_surface(&self, array: RawArray) -> Result<RawSurface> {
        let desc = ResourceDesc { res_type: RESOURCE_TYPE_ARRAY, array, rest: [0; 6] };
        let mut surface: RawSurface = std::ptr::null_mut();
        // SAFETY: `desc` is initialised, `surface` is a valid out-pointer; the caller guarantees `array`.
        check(unsafe { (self.create_surface)(&mut surface, &desc) }, "hipCreateSurfaceObject")?;
        Ok(surface)
    }

    /// # Safety
    /// `surface` must be live, unused by pending work, and never used again.
    pub unsafe fn destroy_surface(&self, surface: RawSurface) -> Result<()> {
        // SAFETY: the caller guarantees `surface`.
        check(unsafe { (self.destroy_surface)(surface) }, "hipDestroySurfaceObject")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_calls_resolve_or_name_what_is_missing() {
        match ImageCalls::get() {
            Ok(_) => assert!(runtime_version().unwrap() >= 60_000_000, "HIP 5.x has no mipmapped import"),
            Err(e) => {
                assert_eq!((e.api(), e.kind()), (Api::Hip, crate::ErrorKind::Unavailable));
                assert!(e.is_environment());
                assert!(e.to_string().contains(&format!("does not export {}", e.call())), "{e}");
                assert!(!e.to_string().contains('\n'), "{e}");
            }
        }
    }
}
