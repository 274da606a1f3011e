//! Collision-shape geometry for viewers (`Model.collision_shapes`,
//! `World.collision_shapes`, `stiction.viz`): each compiled shape as a dict of its kind,
//! pose on its body (or element), sweep radius and core geometry as a triangle mesh.

use crate::convert::out_se3;
use numpy::ndarray::{Array2, ArrayD, IxDyn};
use numpy::{IntoPyArray, PyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Arc;
use stiction::collision::polytope::Polytope;
use stiction::collision::{ShapeCore, ShapeInstance};
use stiction::math::{Vec3, SE3};
use stiction::model::{Geometry, VisualGeometry};
use stiction::Model;

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

/// A drawable shape: `(kind, radius, vertices, triangles)` in the shape frame.
type Drawable = (&'static str, f64, Vec<Vec3>, Vec<[usize; 3]>);

/// A visual primitive as a [`Drawable`], as
/// [`shape_dict`] draws collision cores (a sphere: its centre and radius; a capsule: its
/// segment along z and radius; a box or a cylinder: a triangle mesh); an error naming why
/// for geometry that cannot be drawn (a non-positive or non-finite size).
fn visual_primitive(g: &Geometry) -> Result<Drawable, String> {
    let positive = |x: f64, what: &str| {
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(format!("{what} must be finite and positive, got {x}"))
        }
    };
    let convex = |p: Polytope| ShapeCore::Convex(Arc::new(p)).mesh();
    Ok(match g {
        Geometry::Plane => ("plane", 0.0, Vec::new(), Vec::new()),
        Geometry::Sphere { radius } => ("sphere", positive(*radius, "sphere radius")?, vec![Vec3::zeros()], Vec::new()),
        Geometry::Capsule { radius, length } => {
            let h = 0.5 * length.max(0.0);
            (
                "capsule",
                positive(*radius, "capsule radius")?,
                vec![Vec3::new(0.0, 0.0, -h), Vec3::new(0.0, 0.0, h)],
                Vec::new(),
            )
        }
        Geometry::Box { half_extents } => {
            for k in 0..3 {
                positive(half_extents[k], "box half extent")?;
            }
            let (v, t) = convex(Polytope::cuboid(half_extents));
            ("box", 0.0, v, t)
        }
        Geometry::Cylinder { radius, length } => {
            let (v, t) = convex(Polytope::cylinder(
                positive(*radius, "cylinder radius")?,
                positive(*length, "cylinder length")?,
                32,
            ));
            ("cylinder", 0.0, v, t)
        }
        Geometry::Mesh(m) | Geometry::ConvexMesh(m) => {
            ("mesh", 0.0, m.vertices.clone(), m.triangles.iter().map(|t| t.map(|i| i as usize)).collect())
        }
    })
}

/// The visual shapes of `model` (URDF `<visual>` elements kept by the loader), body by body,
/// each a dict: `body`, `name`, `kind`, `pose` (4×4 on the body), `radius`, `vertices`,
/// `triangles`, `color` (RGBA or `None`), `file` (the mesh file, or `None`). Mesh files are
/// loaded here; one that is missing or unreadable, and geometry that cannot be drawn, is
/// left out with a `stiction.LoadWarning` naming it.
pub fn visual_dicts<'py>(py: Python<'py>, model: &Model) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let mut out = Vec::new();
    for (b, body) in model.bodies().iter().enumerate() {
        for (k, s) in body.visuals.iter().enumerate() {
            let what = match &s.name {
                Some(n) => format!("visual '{n}' of body '{}'", body.name),
                None => format!("visual {k} of body '{}'", body.name),
            };
            let (drawn, file) = match &s.geometry {
                VisualGeometry::Primitive(g) => (visual_primitive(g), None),
                VisualGeometry::MeshFile { path, scale } => {
                    let mesh = stiction::io::load_mesh(std::path::Path::new(path), scale)
                        .map(|m| -> Drawable {
                            ("mesh", 0.0, m.vertices, m.triangles.iter().map(|t| t.map(|i| i as usize)).collect())
                        })
                        .map_err(|e| e.to_string());
                    (mesh, Some(path.clone()))
                }
            };
            let (kind, radius, vertices, triangles) = match drawn {
                Ok(d) => d,
                Err(e) => {
                    let msg = std::ffi::CString::new(format!("{what} is not drawn: {e}").replace('\0', "\\0"))
                        .expect("NUL bytes were replaced");
                    PyErr::warn(py, &py.get_type::<crate::errors::LoadWarning>(), &msg, 1)?;
                    continue;
                }
            };
            let d = PyDict::new(py);
            d.set_item("body", b)?;
            d.set_item("name", s.name.clone())?;
            d.set_item("kind", kind)?;
            d.set_item("pose", out_se3(py, &s.origin))?;
            d.set_item("radius", radius)?;
            let n = vertices.len();
            let flat: Vec<f64> = vertices.iter().flat_map(|v| [v.x, v.y, v.z]).collect();
            d.set_item("vertices", Array2::from_shape_vec((n, 3), flat).expect("n × 3 entries").into_pyarray(py))?;
            d.set_item("triangles", out_triangles(py, &triangles))?;
            d.set_item("color", s.rgba.map(|c| c.to_vec()))?;
            d.set_item("file", file)?;
            out.push(d);
        }
    }
    Ok(out)
}
