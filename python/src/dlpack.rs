//! DLPack capsules over memory the door keeps alive: versioned (`dltensor_versioned`, DLPack ≥ 1.0)
//! where the consumer asks with `max_version`, legacy (`dltensor`) otherwise. The structs are
//! `dlpack-ffi`'s; what is here is their ownership: the capsule's manager context owns the shape,
//! the strides and a reference to the owner (the Vulkan allocation and its CUDA mapping), so the
//! tensor outlives every Python object; the deleter runs once, from whichever side ends last
//! (the consumer after it took the capsule, or the capsule's destructor if nobody did).

use dlpack_ffi::{
    DLDataType, DLDataTypeCode, DLDevice, DLDeviceType, DLManagedTensor, DLManagedTensorVersioned,
    DLPackVersion, DLTensor,
};
use pyo3::exceptions::PyBufferError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::any::Any;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::Arc;

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";

/// An element type: its name, DLPack code and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dtype {
    pub name: &'static str,
    code: DLDataTypeCode,
    pub bytes: u8,
}

/// The element types a shared buffer can hold.
pub const DTYPES: [Dtype; 11] = [
    Dtype { name: "float32", code: DLDataTypeCode::kDLFloat, bytes: 4 },
    Dtype { name: "float16", code: DLDataTypeCode::kDLFloat, bytes: 2 },
    Dtype { name: "float64", code: DLDataTypeCode::kDLFloat, bytes: 8 },
    Dtype { name: "bfloat16", code: DLDataTypeCode::kDLBfloat, bytes: 2 },
    Dtype { name: "uint8", code: DLDataTypeCode::kDLUInt, bytes: 1 },
    Dtype { name: "int8", code: DLDataTypeCode::kDLInt, bytes: 1 },
    Dtype { name: "uint16", code: DLDataTypeCode::kDLUInt, bytes: 2 },
    Dtype { name: "int16", code: DLDataTypeCode::kDLInt, bytes: 2 },
    Dtype { name: "uint32", code: DLDataTypeCode::kDLUInt, bytes: 4 },
    Dtype { name: "int32", code: DLDataTypeCode::kDLInt, bytes: 4 },
    Dtype { name: "int64", code: DLDataTypeCode::kDLInt, bytes: 8 },
];

impl Dtype {
    /// The dtype a name means: NumPy's, torch's (`torch.float32`), CuPy's and JAX's spellings
    /// all print as one of [`DTYPES`]' names, with a prefix at most; `f4`-style codes too.
    pub fn parse(name: &str) -> Option<Dtype> {
        let name = name.rsplit('.').next().unwrap_or(name).trim();
        let name = match name {
            "f4" | "<f4" | "float" => "float32",
            "f2" | "<f2" | "half" => "float16",
            "f8" | "<f8" | "double" => "float64",
            "u1" | "|u1" => "uint8",
            "i1" | "|i1" => "int8",
            "u2" | "<u2" => "uint16",
            "i2" | "<i2" => "int16",
            "u4" | "<u4" => "uint32",
            "i4" | "<i4" | "int" => "int32",
            "i8" | "<i8" | "long" => "int64",
            other => other,
        };
        DTYPES.into_iter().find(|d| d.name == name)
    }

    fn dl(self) -> DLDataType {
        DLDataType { code: self.code.0 as u8, bits: self.bytes * 8, lanes: 1 }
    }
}

/// Where a tensor's data lives, as DLPack names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Cpu,
    Cuda(i32),
    #[cfg_attr(not(feature = "hip"), allow(dead_code))]
    Rocm(i32),
}

impl Place {
    /// `__dlpack_device__`'s pair.
    pub fn pair(self) -> (u32, i32) {
        let d = self.dl();
        (d.device_type.0, d.device_id)
    }

    fn dl(self) -> DLDevice {
        let (device_type, device_id) = match self {
            Place::Cpu => (DLDeviceType::kDLCPU, 0),
            Place::Cuda(i) => (DLDeviceType::kDLCUDA, i),
            Place::Rocm(i) => (DLDeviceType::kDLROCM, i),
        };
        DLDevice { device_type, device_id }
    }
}

/// Refuse what a consumer asks of `what` that vkhip cannot give: another device than `here`, or
/// a copy (DLPack's `dl_device` and `copy`; the array API's `BufferError`).
pub fn check_request(
    what: &str,
    here: Place,
    dl_device: Option<(u32, i32)>,
    copy: Option<bool>,
) -> PyResult<()> {
    if let Some(asked) = dl_device.filter(|&d| d != here.pair()) {
        return Err(PyBufferError::new_err(format!(
            "{what} lives on DLPack device {:?}, not {asked:?}; vkhip does not copy",
            here.pair()
        )));
    }
    if copy == Some(true) {
        return Err(PyBufferError::new_err(format!(
            "{what}: copy=True asked, but vkhip shares Vulkan's memory and never copies"
        )));
    }
    Ok(())
}

/// A consumer's stream in DLPack's numbering, with CUDA's 0 read as 1 (both the legacy default
/// stream: torch's default stream reports 0).
pub fn consumer_stream(stream: Option<i64>) -> Option<i64> {
    stream.map(|s| if s == 0 { 1 } else { s })
}

/// What a capsule describes: `data` (kept alive by `owner`) as a C-contiguous array.
pub struct Tensor {
    pub data: *mut c_void,
    pub place: Place,
    pub dtype: Dtype,
    pub shape: Vec<i64>,
    pub owner: Arc<dyn Any + Send + Sync>,
}

/// The manager context: what the DLTensor points into, and what keeps the data alive.
struct Context {
    shape: Vec<i64>,
    strides: Vec<i64>,
    _owner: Arc<dyn Any + Send + Sync>,
}

fn contiguous_strides(shape: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    strides
}

impl Tensor {
    /// A new capsule: versioned when `versioned`, legacy otherwise.
    pub fn into_capsule(self, py: Python<'_>, versioned: bool) -> PyResult<Bound<'_, PyCapsule>> {
        let strides = contiguous_strides(&self.shape);
        let mut ctx = Box::new(Context { shape: self.shape, strides, _owner: self.owner });
        let dl_tensor = DLTensor {
            data: self.data,
            device: self.place.dl(),
            ndim: ctx.shape.len() as i32,
            dtype: self.dtype.dl(),
            shape: ctx.shape.as_mut_ptr(),
            strides: ctx.strides.as_mut_ptr(),
            byte_offset: 0,
        };
        let manager_ctx = Box::into_raw(ctx).cast::<c_void>();
        if versioned {
            let managed = Box::new(DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx,
                deleter: Some(delete_versioned),
                flags: 0,
                dl_tensor,
            });
            let p = NonNull::from(Box::leak(managed)).cast::<c_void>();
            // SAFETY: `p` is a live managed tensor whose deleter frees it; the destructor calls
            // that deleter only while the capsule is unconsumed (still named as here).
            unsafe { PyCapsule::new_with_pointer_and_destructor(py, p, VERSIONED, Some(capsule_versioned)) }
                .inspect_err(|_| {
                    // SAFETY: the capsule was not made, so nothing else owns `p`.
                    unsafe { delete_versioned(p.as_ptr().cast()) }
                })
        } else {
            let managed = Box::new(DLManagedTensor { dl_tensor, manager_ctx, deleter: Some(delete_legacy) });
            let p = NonNull::from(Box::leak(managed)).cast::<c_void>();
            // SAFETY: as above, for the legacy struct.
            unsafe { PyCapsule::new_with_pointer_and_destructor(py, p, LEGACY, Some(capsule_legacy)) }
                .inspect_err(|_| {
                    // SAFETY: as above.
                    unsafe { delete_legacy(p.as_ptr().cast()) }
                })
        }
    }
}

/// Drop the context behind `ctx`, never unwinding into C.
///
/// # Safety
/// `ctx` came from `Box::into_raw(Box<Context>)` and is not used again.
unsafe fn drop_context(ctx: *mut c_void) {
    let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: per this function's contract.
        drop(unsafe { Box::from_raw(ctx.cast::<Context>()) })
    }));
    if dropped.is_err() {
        log::error!("vkhip: a panic while releasing a tensor's memory (contained)");
    }
}

/// The versioned deleter: the consumer calls it once when its tensor dies.
unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` came from `Box::leak` in `into_capsule`; DLPack calls the deleter once.
    let managed = unsafe { Box::from_raw(p) };
    // SAFETY: the context was boxed with the tensor and goes with it.
    unsafe { drop_context(managed.manager_ctx) };
}

/// The legacy deleter (as [`delete_versioned`]).
unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if p.is_null() {
        return;
    }
    // SAFETY: as in `delete_versioned`.
    let managed = unsafe { Box::from_raw(p) };
    // SAFETY: as in `delete_versioned`.
    unsafe { drop_context(managed.manager_ctx) };
}

/// The capsule's destructor: a capsule nobody consumed (still named `dltensor_versioned`; a
/// consumer renames it `used_dltensor_versioned`) deletes its tensor.
unsafe extern "C" fn capsule_versioned(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a live capsule; the name test comes first.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            delete_versioned(p.cast());
        }
    }
}

/// As [`capsule_versioned`], for `dltensor`.
unsafe extern "C" fn capsule_legacy(capsule: *mut ffi::PyObject) {
    // SAFETY: as in `capsule_versioned`.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            delete_legacy(p.cast());
        }
    }
}
