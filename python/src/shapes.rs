//! Collision-shape geometry for viewers (`Model.collision_shapes`,
//! `World.collision_shapes`, `stiction.viz`): each compiled shape as a dict of its kind,
//! pose on its body (or element), sweep radius and core geometry as a triangle mesh.

use crate::convert::out_se3;
use numpy::ndarray::{Array2, ArrayD, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stiction::collision::ShapeInstance;
use stiction::math::SE3;

/// `(k, 3)` int64 triangles.
pub fn out_triangles<'py>(py: Python<'py>, tris: &[[usize; 3]]) -> Bound<'py, numpy::PyArray2<i64>> {
    let data: Vec<i64> = tris.iter().flat_map(|t| t.map(|i| i as i64)).collect();
    Array2::from_shape_vec((tris.len(), 3), data).expect("k × 3 entries").into_pyarray(py)
}

/// One shape as a dict: `kind` (`"plane"`, `"sphere"`, `"box"`, `"capsule"`,
/// `"cylinder"`, `"convex_mesh"`, `"mesh"`), `pose` (4×4, the shape frame on its body or
/// element; in the world for world shapes), `radius` (the sweep radius: a sphere's or
/// capsule's radius, else 0), `vertices` (k, 3) and `triangles` (m, 3) of the core in
/// the shape frame (a sphere's core is one point, a capsule's a segment along z, a
/// plane's nothing: the half-space z <= 0).
pub fn shape_dict<'py>(py: Python<'py>, s: &ShapeInstance) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("kind", s.kind.name().replace(' ', "_"))?;
    d.set_item("pose", out_se3(py, &s.local))?;
    d.set_item("radius", s.radius)?;
    let (vs, t) = s.core_mesh();
    let n = vs.len();
    let v: Vec<f64> = vs.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
    d.set_item("vertices", Array2::from_shape_vec((n, 3), v).expect("n × 3 entries").into_pyarray(py))?;
    d.set_item("triangles", out_triangles(py, &t))?;
    Ok(d)
}

/// Poses as a float64 array of shape `lead + (4, 4)`.
pub fn out_poses<'py>(py: Python<'py>, lead: &[usize], poses: &[SE3]) -> Bound<'py, PyArrayDyn<f64>> {
    let mut data = Vec::with_capacity(poses.len() * 16);
    for x in poses {
        for r in 0..3 {
            data.extend([x.rot[(r, 0)], x.rot[(r, 1)], x.rot[(r, 2)], x.trans[r]]);
        }
        data.extend([0.0, 0.0, 0.0, 1.0]);
    }
    let mut shape = lead.to_vec();
    shape.extend([4, 4]);
    ArrayD::from_shape_vec(IxDyn(&shape), data).expect("poses fill the shape").into_pyarray(py)
}

/// A configuration `(nq,)` or a trajectory of them `(T, nq)`: returns the leading
/// shape (`[]` or `[T]`) and the row-major data. `InputError` for another shape or a
/// non-finite entry (named by row and column).
pub fn configurations(obj: &Bound<'_, PyAny>, name: &str, nq: usize, what: &str) -> PyResult<(Vec<usize>, Vec<f64>)> {
    use crate::convert::{array, shape_str};
    use crate::errors::input_error;
    let a = array(obj, name)?;
    let lead = match a.shape.as_slice() {
        [n] if *n == nq => vec![],
        [t, n] if *n == nq => vec![*t],
        _ => {
            return Err(input_error(format!(
                "{name} must have shape ({nq},) or (T, {nq}) ({what}), got shape {}",
                shape_str(&a.shape)
            )))
        }
    };
    if let Some(i) = a.data.iter().position(|x| !x.is_finite()) {
        let at = if lead.is_empty() { format!("[{i}]") } else { format!("[{}, {}]", i / nq, i % nq) };
        return Err(input_error(format!("{name}{at} is not finite ({})", a.data[i])));
    }
    Ok((lead, a.data))
}
