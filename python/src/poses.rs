//! Camera poses from Python: an `(N, 10)` array of floats, one row a view laid out `[ex, ey, ez,
//! tx, ty, tz, ux, uy, uz, fov_y_deg]` (eye, target, up, vertical field of view in degrees: the
//! app's `vkhip::embed::Pose`), taken from whatever the caller holds — NumPy, torch, CuPy, JAX
//! (anything with `tolist()`, `shape` and `dtype`; a CUDA tensor's `tolist()` copies it to the
//! host), any other object with `__array__` or `__dlpack__` (through NumPy), or nested lists. The
//! shape and the dtype are checked here; the values (finite, eye ≠ target, up not along the view,
//! fov in (0, 180)) by the app.

use crate::errors::invalid;
use pyo3::prelude::*;
use vkhip::embed::Pose;

/// Floats a pose takes.
pub const POSE_FLOATS: usize = 10;

/// The layout of one row, for error messages and docstrings.
const LAYOUT: &str = "[ex, ey, ez, tx, ty, tz, ux, uy, uz, fov_y_deg] per view";

/// The element types taken for poses: real floats.
const FLOATS: [&str; 4] = ["float32", "float64", "float16", "bfloat16"];

/// `n` poses from `obj` (module note).
pub fn from_python(obj: &Bound<'_, PyAny>, n: u32) -> PyResult<Vec<Pose>> {
    let py = obj.py();
    let array_like = |o: &Bound<'_, PyAny>| {
        o.hasattr("tolist").unwrap_or(false)
            && o.hasattr("shape").unwrap_or(false)
            && o.hasattr("dtype").unwrap_or(false)
    };
    let converted;
    let obj = if array_like(obj) {
        obj
    } else if obj.hasattr("__array__")? || obj.hasattr("__dlpack__")? {
        let numpy = py.import("numpy").map_err(|_| {
            invalid("poses: an object with __array__ or __dlpack__ is read through NumPy, which is not installed (pass a list, or install numpy)")
        })?;
        converted = if obj.hasattr("__array__")? {
            numpy.call_method1("asarray", (obj,))?
        } else {
            numpy.call_method1("from_dlpack", (obj,))?
        };
        &converted
    } else {
        obj
    };
    let rows: Vec<Vec<f64>> = if array_like(obj) {
        let dtype = obj.getattr("dtype")?.str()?.to_string();
        let name = crate::dlpack::Dtype::parse(&dtype).map(|d| d.name);
        if !name.is_some_and(|d| FLOATS.contains(&d)) {
            return Err(invalid(format!(
                "poses of dtype {dtype}: expected a floating dtype (float32, float64, float16 or bfloat16)"
            )));
        }
        let shape: Vec<i64> = obj.getattr("shape")?.extract()?;
        check_shape(&shape, n)?;
        obj.call_method0("tolist")?.extract()?
    } else {
        let rows: Vec<Vec<f64>> = obj.extract().map_err(|_| {
            invalid(format!(
                "poses: expected an (N, 10) array of floats (NumPy, torch, …) or a list of N lists of 10 numbers, got {}",
                type_name(obj)
            ))
        })?;
        let width = rows.first().map_or(POSE_FLOATS, Vec::len);
        if let Some(bad) = rows.iter().position(|r| r.len() != width) {
            return Err(invalid(format!(
                "poses: row {bad} has {} numbers, row 0 has {width}: expected {LAYOUT}",
                rows[bad].len()
            )));
        }
        check_shape(&[rows.len() as i64, width as i64], n)?;
        rows
    };
    Ok(rows.iter().map(|r| pose_of(r)).collect())
}

/// `(N, 10)` with N = `n`.
fn check_shape(shape: &[i64], n: u32) -> PyResult<()> {
    if shape != [i64::from(n), POSE_FLOATS as i64] {
        let given = shape.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
        let given = if shape.len() == 1 { format!("({given},)") } else { format!("({given})") };
        return Err(invalid(format!(
            "poses of shape {given}: expected (N, 10) = ({n}, 10) for {n} views, {LAYOUT}"
        )));
    }
    Ok(())
}

/// One row (10 numbers) as a pose.
fn pose_of(r: &[f64]) -> Pose {
    let f = |i: usize| r[i] as f32;
    Pose { eye: [f(0), f(1), f(2)], target: [f(3), f(4), f(5)], up: [f(6), f(7), f(8)], fov_y_deg: f(9) }
}

/// A pose as its row of 10 floats.
pub fn row_of(p: &Pose) -> [f32; POSE_FLOATS] {
    let [ex, ey, ez] = p.eye;
    let [tx, ty, tz] = p.target;
    let [ux, uy, uz] = p.up;
    [ex, ey, ez, tx, ty, tz, ux, uy, uz, p.fov_y_deg]
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map_or_else(|_| "?".to_string(), |n| n.to_string())
}
