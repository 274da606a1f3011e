//! Conversions between Python array-likes and Rust vectors and matrices.

use crate::errors::input_error;
use nalgebra::{DMatrix, DVector, Dim, Matrix, RawStorage};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use stiction::math::{Force, Mat3, Vec3, SE3};

/// An owned float64 array with its shape, copied out of any array-like.
pub struct Array {
    pub shape: Vec<usize>,
    /// Row-major (C order) data.
    pub data: Vec<f64>,
}

/// A shape as numpy prints it: `(3,)`, `(2, 3)`, `()`.
pub fn shape_str(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Converts an array-like to a float64 array.
///
/// * A float64 numpy array (any strides, C or Fortran order, views) is read in place:
///   no intermediate numpy array is made.
/// * Other real numeric inputs are converted like `numpy.asarray(obj).astype(float64)`:
///   Python numbers and (nested) lists/tuples of them, numpy arrays of any integer,
///   unsigned or floating dtype (float16/float32 are widened exactly).
/// * Refused with `InputError`: bool arrays (`True` is almost always a slip for a
///   number), complex arrays (the imaginary part would be dropped), strings, bytes,
///   `None`, dicts and other object arrays, ragged nested sequences.
///
/// NaN and infinities pass through here; the core checks finiteness where it matters.
pub fn array(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Array> {
    let py = obj.py();
    if let Ok(a) = obj.cast::<PyArrayDyn<f64>>() {
        return read(a, name);
    }
    let what = || type_name(obj);
    let raw = py
        .import("numpy")?
        .call_method1("asarray", (obj,))
        .map_err(|e| input_error(format!("{name} cannot be converted to an array ({}): {}", what(), e.value(py))))?;
    let dtype = raw.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let dtype_str = dtype.str()?.to_string();
    match kind.as_str() {
        "f" | "i" | "u" => {}
        "b" => {
            return Err(input_error(format!(
                "{name} must be numeric, got booleans ({}); convert explicitly, e.g. with .astype(float)",
                what()
            )))
        }
        "c" => {
            return Err(input_error(format!(
                "{name} must be real, got complex numbers (dtype {dtype_str}); pass .real explicitly if intended"
            )))
        }
        _ => {
            return Err(input_error(format!(
                "{name} must be a real numeric array-like, got {} (numpy dtype {dtype_str})",
                what()
            )))
        }
    }
    let converted = raw
        .call_method1("astype", ("float64",))
        .map_err(|e| input_error(format!("{name} cannot be converted to float64: {}", e.value(py))))?;
    let arr = converted
        .cast_into::<PyArrayDyn<f64>>()
        .map_err(|_| input_error(format!("{name} cannot be converted to a float64 array")))?;
    read(&arr, name)
}

/// The name of the type of `obj` (e.g. `"list"`, `"ndarray"`).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// Copies a float64 numpy array out (one pass; a plain memcpy when contiguous).
fn read(arr: &Bound<'_, PyArrayDyn<f64>>, name: &str) -> PyResult<Array> {
    let ro = arr.try_readonly().map_err(|e| input_error(format!("{name}: {e}")))?;
    let view = ro.as_array();
    let data = match view.as_slice() {
        Some(s) => s.to_vec(),
        None => view.iter().copied().collect(),
    };
    Ok(Array { shape: view.shape().to_vec(), data })
}

/// An integer argument that must be at least `min`: a Python `int` or numpy integer
/// (not a bool, not a float). Out-of-range and wrong-typed values raise `InputError`
/// naming the argument (instead of pyo3's `OverflowError`/`TypeError`).
pub fn count(obj: &Bound<'_, PyAny>, name: &str, min: usize) -> PyResult<usize> {
    let bad = || input_error(format!("{name} must be an integer >= {min}, got {} ({obj})", type_name(obj)));
    if obj.is_instance_of::<pyo3::types::PyBool>() || type_name(obj).starts_with("bool") {
        return Err(bad());
    }
    let n: i128 = obj.extract().map_err(|_| bad())?;
    usize::try_from(n).ok().filter(|n| *n >= min).ok_or_else(bad)
}

/// A 1-D float64 vector of length `expected`; `what` names the expected length
/// (e.g. `"model.nq"`).
pub fn vector(obj: &Bound<'_, PyAny>, name: &str, expected: usize, what: &str) -> PyResult<Vec<f64>> {
    let a = array(obj, name)?;
    if a.shape.len() != 1 {
        return Err(input_error(format!(
            "{name} must be a 1-D array of length {expected} ({what}), got an array of shape {}",
            shape_str(&a.shape)
        )));
    }
    if a.data.len() != expected {
        return Err(input_error(format!("{name} has length {}, expected {expected} ({what})", a.data.len())));
    }
    Ok(a.data)
}

/// Like [`vector`], returned as a `DVector`.
pub fn dvector(obj: &Bound<'_, PyAny>, name: &str, expected: usize, what: &str) -> PyResult<DVector<f64>> {
    vector(obj, name, expected, what).map(DVector::from_vec)
}

/// A finite 3-vector.
pub fn vec3(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec3> {
    let v = vector(obj, name, 3, "x, y, z")?;
    if let Some((i, x)) = v.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(input_error(format!("{name}[{i}] is not finite ({x})")));
    }
    Ok(Vec3::new(v[0], v[1], v[2]))
}

/// A 2-D float64 array of shape `(rows?, cols)`; `rows = None` accepts any row count.
/// Returns `(rows, row-major data)`.
pub fn matrix(obj: &Bound<'_, PyAny>, name: &str, rows: Option<usize>, cols: usize) -> PyResult<(usize, Vec<f64>)> {
    let a = array(obj, name)?;
    let expected = match rows {
        Some(r) => format!("({r}, {cols})"),
        None => format!("(T, {cols})"),
    };
    let ok = a.shape.len() == 2 && a.shape[1] == cols && (rows.is_none() || rows == Some(a.shape[0]));
    if !ok {
        return Err(input_error(format!("{name} must have shape {expected}, got shape {}", shape_str(&a.shape))));
    }
    Ok((a.shape[0], a.data))
}

/// A rotational inertia: a 3×3 matrix or the six numbers `(ixx, ixy, ixz, iyy, iyz, izz)`.
pub fn inertia3(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Mat3> {
    let a = array(obj, name)?;
    let d = &a.data;
    match a.shape.as_slice() {
        [3, 3] => Ok(Mat3::from_row_slice(d)),
        [6] => Ok(Mat3::new(d[0], d[1], d[2], d[1], d[3], d[4], d[2], d[4], d[5])),
        _ => Err(input_error(format!(
            "{name} must be a 3x3 matrix or (ixx, ixy, ixz, iyy, iyz, izz), got shape {}",
            shape_str(&a.shape)
        ))),
    }
}

/// Optional world-frame body wrenches, shape `(nbodies, 6)`, each `[torque; force]`.
pub fn wrenches(obj: Option<&Bound<'_, PyAny>>, nbodies: usize) -> PyResult<Option<Vec<Force>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
    let (_, data) = matrix(obj, "wrenches", Some(nbodies), 6)?;
    Ok(Some(data.chunks_exact(6).map(Force::from_slice).collect()))
}

/// A float64 1-D numpy array.
pub fn out_vec<'py>(py: Python<'py>, x: &[f64]) -> Bound<'py, PyArray1<f64>> {
    PyArray1::from_slice(py, x)
}

/// A float64 2-D numpy array from an nalgebra matrix.
pub fn out_mat<'py, R: Dim, C: Dim, S: RawStorage<f64, R, C>>(
    py: Python<'py>,
    m: &Matrix<f64, R, C, S>,
) -> Bound<'py, PyArray2<f64>> {
    let (r, c) = (m.nrows(), m.ncols());
    // Row-major from the column-major entries, in one sequential read.
    let cols: Vec<f64> = m.iter().copied().collect();
    let mut rows = Vec::with_capacity(r * c);
    for i in 0..r {
        rows.extend((0..c).map(|j| cols[j * r + i]));
    }
    Array2::from_shape_vec((r, c), rows).expect("r × c entries").into_pyarray(py)
}

/// A float64 2-D numpy array that takes over an owned matrix's storage without a copy
/// (Fortran order: numpy reads the column-major entries in place).
pub fn out_owned_mat(py: Python<'_>, m: DMatrix<f64>) -> Bound<'_, PyArray2<f64>> {
    use numpy::ndarray::ShapeBuilder;
    let (r, c) = m.shape();
    let data: Vec<f64> = m.data.into();
    Array2::from_shape_vec((r, c).f(), data).expect("r × c entries").into_pyarray(py)
}

/// A float64 2-D numpy array from row-major data.
pub fn out_rows<'py>(py: Python<'py>, rows: usize, cols: usize, data: Vec<f64>) -> PyResult<Bound<'py, PyArray2<f64>>> {
    Array2::from_shape_vec((rows, cols), data)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// A homogeneous 4×4 transform.
pub fn out_se3<'py>(py: Python<'py>, x: &SE3) -> Bound<'py, PyArray2<f64>> {
    let mut h = DMatrix::<f64>::identity(4, 4);
    h.view_mut((0, 0), (3, 3)).copy_from(&x.rot);
    h.view_mut((0, 3), (3, 1)).copy_from(&x.trans);
    out_mat(py, &h)
}
