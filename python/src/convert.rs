//! Conversions between Python array-likes and Rust vectors and matrices.

use crate::errors::input_error;
use nalgebra::{DMatrix, DVector, Dim, Matrix, RawStorage};
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stiction::math::{Force, Mat3, Vec3, SE3};

/// An owned float64 array with its shape, copied out of any array-like.
pub struct Array {
    pub shape: Vec<usize>,
    /// Row-major (C order) data.
    pub data: Vec<f64>,
}

fn shape_str(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// Converts any array-like to a float64 array (`numpy.asarray(obj, dtype=float64)`).
pub fn array(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Array> {
    let py = obj.py();
    let arr: Bound<'_, PyArrayDyn<f64>> = match obj.cast::<PyArrayDyn<f64>>() {
        Ok(a) => a.clone(),
        Err(_) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("dtype", "float64")?;
            let converted = py
                .import("numpy")?
                .call_method("asarray", (obj,), Some(&kwargs))
                .map_err(|e| input_error(format!("{name} cannot be converted to a float64 array: {}", e.value(py))))?;
            converted
                .cast_into::<PyArrayDyn<f64>>()
                .map_err(|_| input_error(format!("{name} cannot be converted to a float64 array")))?
        }
    };
    let ro = arr.try_readonly().map_err(|e| input_error(format!("{name}: {e}")))?;
    let view = ro.as_array();
    Ok(Array { shape: view.shape().to_vec(), data: view.iter().copied().collect() })
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
    Array2::from_shape_fn((m.nrows(), m.ncols()), |(i, j)| m[(i, j)]).into_pyarray(py)
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
