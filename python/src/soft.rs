//! `stiction.TetMesh`, `stiction.SoftBody`, `stiction.SoftStepRecord` and
//! `stiction.SoftRollout`: tetrahedral soft bodies stepped by backward Euler, with the
//! adjoint of the implicit step, rollouts and their reverse sweep, and parameter
//! identification (`stiction::soft`, docs/soft.md).
//!
//! States are flat vectors of 3 coordinates per vertex, vertex-major (`x[3i + k]`); the
//! pin targets follow `SoftBody.pinned_dofs`.

use crate::convert::{array, count, dvector, matrix, out_owned_mat, out_rows, out_vec, shape_str, vec3, vector};
use crate::errors::{input_error, IntoPyResult, LoadError};
use crate::gradcheck::PyGradReport;
use crate::simulator::threads_arg;
use nalgebra::DVector;
use numpy::ndarray::Array2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;
use stiction::gradcheck::{check_soft_step, FdMethod, GradcheckConfig};
use stiction::math::Vec3;
use stiction::soft::generate::{box_mesh, rod_mesh};
use stiction::soft::io::{load_msh, load_tetgen, load_vtk, write_vtu};
use stiction::soft::surface::surface;
use stiction::soft::{
    backward_batch as soft_backward_batch, identify, rollout, rollout_batch as soft_rollout_batch, static_equilibrium,
    step, MaterialModel, NewtonReport, SoftBatchCotangent, SoftBatchRollout, SoftBody, SoftDamping, SoftFitOptions,
    SoftIntegrator, SoftLinearSolver, SoftMaterial, SoftOptions, SoftRollout, SoftRolloutGradients, SoftState,
    SoftStepRecord, SoftTrajectory, TetMesh,
};

/// The material names `MaterialModel::from_name` accepts.
const MATERIALS: [&str; 4] = ["linear", "corotated", "stvk", "neo_hookean"];

/// Indices above this are refused (they could not be exact in a float64 array anyway).
const MAX_INDEX: f64 = 9_007_199_254_740_992.0; // 2^53

/// A constitutive model by name; `InputError` listing the valid names otherwise.
fn material_model(name: &str, what: &str) -> PyResult<MaterialModel> {
    MaterialModel::from_name(name).ok_or_else(|| {
        input_error(format!(
            "{what}: unknown material '{name}' (valid: {})",
            MATERIALS.map(|m| format!("'{m}'")).join(", ")
        ))
    })
}

/// A non-negative integer index from an array entry (integral, in range).
fn index_value(value: f64, name: &str, at: &str) -> PyResult<usize> {
    if (0.0..MAX_INDEX).contains(&value) && value.fract() == 0.0 {
        Ok(value as usize)
    } else {
        Err(input_error(format!("{name}{at} must be a non-negative integer, got {value}")))
    }
}

/// An integer array of shape `(rows, C)` (any row count), e.g. the tets `(m, 4)`.
fn index_rows<const C: usize>(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<[usize; C]>> {
    let a = array(obj, name)?;
    if a.shape.len() != 2 || a.shape[1] != C {
        return Err(input_error(format!("{name} must have shape (m, {C}), got shape {}", shape_str(&a.shape))));
    }
    a.data
        .chunks_exact(C)
        .enumerate()
        .map(|(r, row)| {
            let mut out = [0usize; C];
            for (c, &x) in row.iter().enumerate() {
                out[c] = index_value(x, name, &format!("[{r}, {c}]"))?;
            }
            Ok(out)
        })
        .collect()
}

/// Region tags: a 1-D integer array of length `expected`, each in `0..=u32::MAX`.
fn region_tags(obj: &Bound<'_, PyAny>, expected: usize) -> PyResult<Vec<u32>> {
    let data = vector(obj, "regions", expected, "one tag per tet")?;
    data.iter()
        .enumerate()
        .map(|(i, &x)| {
            let v = index_value(x, "regions", &format!("[{i}]"))?;
            u32::try_from(v).map_err(|_| input_error(format!("regions[{i}] = {v} exceeds {}", u32::MAX)))
        })
        .collect()
}

/// Points, one per vertex: shape `(n, 3)`, or a flat state vector of length `3n`.
fn points(obj: &Bound<'_, PyAny>, name: &str, n: usize) -> PyResult<Vec<Vec3>> {
    let a = array(obj, name)?;
    let ok = match a.shape.as_slice() {
        [r, 3] => *r == n,
        [len] => *len == 3 * n,
        _ => false,
    };
    if !ok {
        return Err(input_error(format!(
            "{name} must have shape ({n}, 3) or ({},) (one point per vertex), got shape {}",
            3 * n,
            shape_str(&a.shape)
        )));
    }
    Ok(a.data.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])).collect())
}

/// `InputError` naming the first non-finite entry of `data` (`name[i]`, or
/// `name[row, col]` with `cols`).
fn check_finite(data: &[f64], name: &str, cols: Option<usize>) -> PyResult<()> {
    match data.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(i) => {
            let at = match cols {
                Some(c) if c > 0 => format!("[{}, {}]", i / c, i % c),
                _ => format!("[{i}]"),
            };
            Err(input_error(format!("{name}{at} is not finite ({})", data[i])))
        }
    }
}

/// A finite 1-D vector of length `expected` (`InputError` naming `name` otherwise).
fn finite_dvector(obj: &Bound<'_, PyAny>, name: &str, expected: usize, what: &str) -> PyResult<DVector<f64>> {
    let v = dvector(obj, name, expected, what)?;
    check_finite(v.as_slice(), name, None)?;
    Ok(v)
}

/// An int64 1-D numpy array of indices.
fn out_ints<'py>(py: Python<'py>, x: impl IntoIterator<Item = usize>) -> Bound<'py, PyArray1<i64>> {
    x.into_iter().map(|v| v as i64).collect::<Vec<_>>().into_pyarray(py)
}

/// An int64 2-D numpy array of rows of `C` indices.
fn out_index_rows<'py, const C: usize>(py: Python<'py>, rows: &[[usize; C]]) -> PyResult<Bound<'py, PyArray2<i64>>> {
    let data: Vec<i64> = rows.iter().flatten().map(|&v| v as i64).collect();
    Array2::from_shape_vec((rows.len(), C), data)
        .map(|a| a.into_pyarray(py))
        .map_err(|e| pyo3::exceptions::PyRuntimeError::new_err(e.to_string()))
}

/// The `max_iterations` argument: an integer >= 1.
pub(crate) fn max_iterations_arg(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    count(obj, "max_iterations", 1)
}

/// Newton's report of a step as a dict.
fn report_dict<'py>(py: Python<'py>, r: &NewtonReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("iterations", r.iterations)?;
    d.set_item("factorizations", r.factorizations)?;
    d.set_item("linear_iterations", r.linear_iterations.clone())?;
    d.set_item("gpu_fallbacks", r.gpu_fallbacks)?;
    d.set_item("final_check", r.final_check)?;
    d.set_item("gradient_norms", r.gradient_norms.clone())?;
    d.set_item("step_norms", r.step_norms.clone())?;
    d.set_item("step_lengths", r.step_lengths.clone())?;
    d.set_item("projected_iterations", r.projected_iterations)?;
    d.set_item("inverted_elements", r.inverted_elements)?;
    let t = PyDict::new(py);
    t.set_item("assembly", r.timings.assembly)?;
    t.set_item("factorization", r.timings.factorization)?;
    t.set_item("solve", r.timings.solve)?;
    t.set_item("line_search", r.timings.line_search)?;
    d.set_item("timings", t)?;
    Ok(d)
}

/// A tetrahedral mesh at rest: vertex positions, positively oriented linear tets
/// (`(X1 − X0) · ((X2 − X0) × (X3 − X0)) > 0`) and a region tag per tet (materials are
/// given per region). Validated on construction: non-finite positions, indices out of
/// range, a vertex named twice by a tet, degenerate or inverted tets, unused and
/// coinciding vertices raise `ModelError` naming the tet or vertex. Immutable.
#[pyclass(name = "TetMesh", module = "stiction", frozen)]
pub struct PyTetMesh {
    inner: Arc<TetMesh>,
}

impl PyTetMesh {
    fn wrap(mesh: TetMesh) -> Self {
        Self { inner: Arc::new(mesh) }
    }
}

#[pymethods]
impl PyTetMesh {
    /// A mesh of rest `vertices` (shape (n, 3)), `tets` (shape (m, 4), vertex indices,
    /// positively oriented) and optional region tags `regions` (shape (m,), integers
    /// >= 0; default all 0). Raises `InputError` for bad shapes or non-integer indices,
    /// `ModelError` for an invalid mesh (naming the tet or vertex).
    #[new]
    #[pyo3(signature = (vertices, tets, regions=None))]
    fn new(
        py: Python<'_>,
        vertices: &Bound<'_, PyAny>,
        tets: &Bound<'_, PyAny>,
        regions: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (_, data) = matrix(vertices, "vertices", None, 3)?;
        let vertices: Vec<Vec3> = data.chunks_exact(3).map(|p| Vec3::new(p[0], p[1], p[2])).collect();
        let tets = index_rows::<4>(tets, "tets")?;
        let regions = match regions.filter(|r| !r.is_none()) {
            Some(r) => region_tags(r, tets.len())?,
            None => vec![0; tets.len()],
        };
        let mesh = py.detach(|| TetMesh::with_regions(vertices, tets, regions)).py_err()?;
        Ok(Self::wrap(mesh))
    }

    /// A mesh of the axis-aligned box `[origin, origin + extent]` split into
    /// `cells = (nx, ny, nz)` hexahedral cells of six tets each (conforming, all of the
    /// same volume), in region 0. Vertex `(i, j, k)` sits at
    /// `origin + extent * (i/nx, j/ny, k/nz)` and has index `i + (nx+1) (j + (ny+1) k)`.
    /// Raises `InputError` for a zero cell count or a non-positive extent.
    #[staticmethod]
    #[pyo3(name = "box", signature = (cells, extent, origin=None))]
    fn box_(
        py: Python<'_>,
        cells: &Bound<'_, PyAny>,
        extent: &Bound<'_, PyAny>,
        origin: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let items: Vec<Bound<'_, PyAny>> = cells
            .try_iter()
            .and_then(|it| it.collect::<PyResult<Vec<_>>>())
            .map_err(|_| input_error("cells must be a sequence of three integers (nx, ny, nz)"))?;
        if items.len() != 3 {
            return Err(input_error(format!("cells must hold three integers (nx, ny, nz), got {}", items.len())));
        }
        let mut n = [0usize; 3];
        for (k, c) in items.iter().enumerate() {
            n[k] = count(c, &format!("cells[{k}]"), 1)?;
        }
        let extent = vec3(extent, "extent")?;
        let origin = match origin.filter(|o| !o.is_none()) {
            Some(o) => vec3(o, "origin")?,
            None => Vec3::zeros(),
        };
        let mesh = py.detach(|| box_mesh(n, extent, origin)).py_err()?;
        Ok(Self::wrap(mesh))
    }

    /// A bar of square cross-section along +x: `x ∈ [0, length]`, `y, z ∈ [−width/2,
    /// width/2]`, with `cells_along` cells along x and `cells_across` along y and z
    /// (`TetMesh.box` with that extent and origin). Raises `InputError` for zero cells or
    /// a non-positive length or width.
    #[staticmethod]
    fn rod(
        py: Python<'_>,
        cells_along: &Bound<'_, PyAny>,
        cells_across: &Bound<'_, PyAny>,
        length: f64,
        width: f64,
    ) -> PyResult<Self> {
        let along = count(cells_along, "cells_along", 1)?;
        let across = count(cells_across, "cells_across", 1)?;
        let mesh = py.detach(|| rod_mesh(along, across, length, width)).py_err()?;
        Ok(Self::wrap(mesh))
    }

    /// Loads a mesh file by its extension: Gmsh `.msh` 4.1, or a VTK unstructured grid
    /// (`.vtk` legacy, `.vtu` ASCII XML). Only linear tets make the mesh (lower-dimensional
    /// cells are ignored); region tags come from the file's physical groups or `region`
    /// cell array. Raises `LoadError` for a missing or malformed file or another
    /// extension, `ModelError` for an invalid mesh.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let ext = path.extension().map(|e| e.to_string_lossy().to_lowercase()).unwrap_or_default();
        let mesh = match ext.as_str() {
            "msh" => py.detach(|| load_msh(&path)).py_err()?,
            "vtk" | "vtu" => py.detach(|| load_vtk(&path)).py_err()?,
            _ => {
                return Err(LoadError::new_err(format!(
                    "{}: unknown mesh file extension '{}' (expected .msh, .vtk or .vtu; TetGen files: \
                     TetMesh.load_tetgen)",
                    path.display(),
                    if ext.is_empty() { String::new() } else { format!(".{ext}") }
                )))
            }
        };
        Ok(Self::wrap(mesh))
    }

    /// Loads a TetGen mesh from its `.node` and `.ele` files. Raises `LoadError` for a
    /// missing or malformed file, `ModelError` for an invalid mesh.
    #[staticmethod]
    fn load_tetgen(py: Python<'_>, node_path: PathBuf, ele_path: PathBuf) -> PyResult<Self> {
        let mesh = py.detach(|| load_tetgen(&node_path, &ele_path)).py_err()?;
        Ok(Self::wrap(mesh))
    }

    /// The rest positions, shape (n, 3).
    #[getter]
    fn vertices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let v = self.inner.vertices();
        out_rows(py, v.len(), 3, v.iter().flat_map(|p| [p.x, p.y, p.z]).collect())
    }

    /// The tets, shape (m, 4), int64 vertex indices (positively oriented).
    #[getter]
    fn tets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        out_index_rows(py, self.inner.tets())
    }

    /// The region tag of every tet, shape (m,), int64.
    #[getter]
    fn regions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        out_ints(py, self.inner.regions().iter().map(|&r| r as usize))
    }

    /// The rest volume of every tet (m³, positive), shape (m,).
    #[getter]
    fn volumes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.inner.volumes())
    }

    /// The number of vertices n.
    #[getter]
    fn num_vertices(&self) -> usize {
        self.inner.num_vertices()
    }

    /// The number of tets m.
    #[getter]
    fn num_tets(&self) -> usize {
        self.inner.num_tets()
    }

    /// The number of tets m.
    fn __len__(&self) -> usize {
        self.inner.num_tets()
    }

    /// The boundary triangles (faces of exactly one tet), shape (k, 3), int64 vertex
    /// indices ordered so that the right-hand normal points out of the body.
    fn surface<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<i64>>> {
        out_index_rows(py, &surface(&self.inner).triangles)
    }

    /// Writes the mesh as an ASCII XML VTK unstructured grid (`.vtu`, for ParaView) at
    /// `positions` (shape (n, 3) or a flat state vector (3n,); default: the rest
    /// positions), with the region tags and optional `cell_data` (a dict name → array
    /// of one value per tet) and `point_data` (a dict name → array of shape (n, 3), e.g.
    /// velocities). Numbers read back exactly (`TetMesh.load`). Raises `InputError` for
    /// wrong shapes, non-finite values, a bad or repeated array name (`region` is
    /// taken) or a file that cannot be written.
    #[pyo3(signature = (path, positions=None, cell_data=None, point_data=None))]
    fn write_vtu(
        &self,
        py: Python<'_>,
        path: PathBuf,
        positions: Option<&Bound<'_, PyAny>>,
        cell_data: Option<&Bound<'_, PyDict>>,
        point_data: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let (n, m) = (self.inner.num_vertices(), self.inner.num_tets());
        let positions = match positions.filter(|p| !p.is_none()) {
            Some(p) => points(p, "positions", n)?,
            None => self.inner.vertices().to_vec(),
        };
        let mut cells: Vec<(String, Vec<f64>)> = Vec::new();
        if let Some(d) = cell_data {
            for (k, v) in d.iter() {
                let name: String = k.extract().map_err(|_| input_error("cell_data keys must be strings"))?;
                let values = vector(&v, &format!("cell_data['{name}']"), m, "mesh.num_tets")?;
                cells.push((name, values));
            }
        }
        let mut pts: Vec<(String, Vec<Vec3>)> = Vec::new();
        if let Some(d) = point_data {
            for (k, v) in d.iter() {
                let name: String = k.extract().map_err(|_| input_error("point_data keys must be strings"))?;
                let values = points(&v, &format!("point_data['{name}']"), n)?;
                pts.push((name, values));
            }
        }
        py.detach(|| {
            let cells: Vec<(&str, &[f64])> = cells.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
            let pts: Vec<(&str, &[Vec3])> = pts.iter().map(|(k, v)| (k.as_str(), v.as_slice())).collect();
            write_vtu(&path, &self.inner, &positions, &cells, &pts)
        })
        .py_err()
    }

    /// The indices (ascending) of the rest vertices for which `predicate` (a callable
    /// taking a position, shape (3,), and returning a truth value) holds, e.g.
    /// `mesh.vertices_where(lambda p: p[0] <= 1e-9)` for a clamped end. Exceptions raised
    /// by `predicate` propagate.
    fn vertices_where(&self, py: Python<'_>, predicate: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        if !predicate.is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err("predicate must be callable"));
        }
        let mut selected = Vec::new();
        for (i, p) in self.inner.vertices().iter().enumerate() {
            if predicate.call1((out_vec(py, p.as_slice()),))?.is_truthy()? {
                selected.push(i);
            }
        }
        Ok(selected)
    }

    fn __repr__(&self) -> String {
        format!(
            "TetMesh(vertices={}, tets={}, regions={:?})",
            self.inner.num_vertices(),
            self.inner.num_tets(),
            self.inner.region_tags()
        )
    }
}

/// A `float` argument of a region override, `InputError` naming it otherwise.
fn float_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    obj.extract::<f64>().map_err(|_| input_error(format!("{name} must be a number, got {obj}")))
}

/// The `regions` overrides of `SoftBody`: `{tag: {"material", "youngs_modulus",
/// "poisson", "density"}}`, missing keys from `default`.
fn region_overrides(d: &Bound<'_, PyDict>, default: SoftMaterial) -> PyResult<Vec<(u32, SoftMaterial)>> {
    let mut out = Vec::with_capacity(d.len());
    for (k, v) in d.iter() {
        let tag = count(&k, "a regions key (a region tag)", 0)?;
        let tag = u32::try_from(tag).map_err(|_| input_error(format!("region tag {tag} exceeds {}", u32::MAX)))?;
        let spec = v.cast::<PyDict>().map_err(|_| {
            input_error(format!(
                "regions[{tag}] must be a dict with keys 'material', 'youngs_modulus', 'poisson', 'density'"
            ))
        })?;
        let mut m = default;
        for (key, value) in spec.iter() {
            let key: String = key.extract().map_err(|_| input_error(format!("regions[{tag}] keys must be strings")))?;
            let name = format!("regions[{tag}]['{key}']");
            match key.as_str() {
                "material" => {
                    let s: String = value.extract().map_err(|_| input_error(format!("{name} must be a string")))?;
                    m.model = material_model(&s, &name)?;
                }
                "youngs_modulus" => m.youngs_modulus = float_arg(&value, &name)?,
                "poisson" => m.poisson = float_arg(&value, &name)?,
                "density" => m.density = float_arg(&value, &name)?,
                other => {
                    return Err(input_error(format!(
                        "regions[{tag}]: unknown key '{other}' (valid: 'material', 'youngs_modulus', 'poisson', \
                         'density')"
                    )))
                }
            }
        }
        out.push((tag, m));
    }
    Ok(out)
}

/// A list of vertex indices (`pin_vertices`).
fn index_list(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<usize>> {
    let items: Vec<Bound<'_, PyAny>> = obj
        .try_iter()
        .and_then(|it| it.collect::<PyResult<Vec<_>>>())
        .map_err(|_| input_error(format!("{name} must be a sequence of integers")))?;
    items.iter().enumerate().map(|(i, x)| count(x, &format!("{name}[{i}]"), 0)).collect()
}

/// A list of `(vertex, axis)` pairs (`pin_dofs`).
fn dof_list(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(usize, usize)>> {
    let items: Vec<Bound<'_, PyAny>> = obj
        .try_iter()
        .and_then(|it| it.collect::<PyResult<Vec<_>>>())
        .map_err(|_| input_error("pin_dofs must be a sequence of (vertex, axis) pairs"))?;
    items
        .iter()
        .enumerate()
        .map(|(i, pair)| {
            let name = format!("pin_dofs[{i}]");
            let pair = index_list(pair, &name)?;
            match pair.as_slice() {
                [v, k] if *k < 3 => Ok((*v, *k)),
                [_, k] => Err(input_error(format!("{name}: axis must be 0, 1 or 2, got {k}"))),
                _ => Err(input_error(format!("{name} must be a (vertex, axis) pair, got {} numbers", pair.len()))),
            }
        })
        .collect()
}

/// The rows of a `(steps, cols)` array as vectors.
fn rows_of(obj: &Bound<'_, PyAny>, name: &str, steps: Option<usize>, cols: usize) -> PyResult<Vec<DVector<f64>>> {
    let (rows, data) = matrix(obj, name, steps, cols)?;
    check_finite(&data, name, Some(cols))?;
    if cols == 0 {
        return Ok(vec![DVector::zeros(0); rows]);
    }
    Ok(data.chunks_exact(cols).map(DVector::from_column_slice).collect())
}

/// A finite `(B, T, cols)` array (`T` any count >= 1 unless given) as `(T, row-major data)`.
fn batch_rows(
    obj: &Bound<'_, PyAny>,
    name: &str,
    batch: usize,
    steps: Option<usize>,
    cols: usize,
) -> PyResult<(usize, Vec<f64>)> {
    let a = array(obj, name)?;
    let t = match (a.shape.as_slice(), steps) {
        ([bb, t, c], None) if *bb == batch && *c == cols && *t >= 1 => *t,
        ([bb, t, c], Some(s)) if *bb == batch && *c == cols && *t == s => s,
        _ => {
            let t = steps.map_or_else(|| "T".to_string(), |s| s.to_string());
            return Err(input_error(format!(
                "{name} must have shape (B, T, {cols}) = ({batch}, {t}, {cols}) with T >= 1, got shape {}",
                shape_str(&a.shape)
            )));
        }
    };
    check_finite(&a.data, name, Some(cols))?;
    Ok((t, a.data))
}

/// A soft body: a `TetMesh` with a material per region, lumped vertex masses, damping,
/// gravity and pinned degrees of freedom, stepped by backward Euler as an energy
/// minimisation (Newton with a sparse Cholesky factorization). The state is the vertex
/// positions `x` and velocities `v`, flat vectors of 3 coordinates per vertex
/// (`x[3i + k]`, `ndof = 3n` entries); the controls `u` are vertex forces (N, same
/// layout); each pinned degree of freedom follows a kinematic target (its position at
/// the end of the step, in the order of `pinned_dofs`). The differentiable parameters θ
/// are named by `param_names`. Immutable.
#[pyclass(name = "SoftBody", module = "stiction", frozen)]
pub struct PySoftBody {
    inner: Arc<SoftBody>,
    mesh: Arc<TetMesh>,
}

impl PySoftBody {
    /// The Rust body (shared).
    pub(crate) fn body(&self) -> &Arc<SoftBody> {
        &self.inner
    }

    /// Wraps a Rust body (for `stiction.load_scene`).
    pub(crate) fn from_body(body: Arc<SoftBody>) -> PySoftBody {
        PySoftBody { mesh: Arc::new(body.mesh().clone()), inner: body }
    }

    fn with_body(&self, body: SoftBody) -> PySoftBody {
        PySoftBody { inner: Arc::new(body), mesh: self.mesh.clone() }
    }

    fn ndof_(&self) -> usize {
        self.inner.ndof()
    }

    fn positions(&self, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<DVector<f64>> {
        finite_dvector(obj, name, self.ndof_(), "body.ndof")
    }

    fn forces(&self, u: Option<&Bound<'_, PyAny>>) -> PyResult<DVector<f64>> {
        match u.filter(|u| !u.is_none()) {
            Some(u) => finite_dvector(u, "u", self.ndof_(), "body.ndof"),
            None => Ok(DVector::zeros(self.ndof_())),
        }
    }

    /// The pin targets: given (one per pinned dof), or the pinned entries of `x`.
    fn targets(&self, targets: Option<&Bound<'_, PyAny>>, x: &DVector<f64>) -> PyResult<DVector<f64>> {
        let pins = self.inner.pinned_dofs();
        match targets.filter(|t| !t.is_none()) {
            Some(t) => finite_dvector(t, "targets", pins.len(), "len(body.pinned_dofs)"),
            None => Ok(DVector::from_iterator(pins.len(), pins.iter().map(|&d| x[d]))),
        }
    }
}

/// The step options from the keyword arguments.
pub(crate) fn options(
    dt: f64,
    tolerance: f64,
    max_iterations: usize,
    line_search: bool,
    integrator: &str,
    linear_solver: &str,
) -> PyResult<SoftOptions> {
    Ok(SoftOptions {
        dt,
        tolerance,
        max_iterations,
        line_search,
        integrator: integrator_arg(integrator)?,
        linear_solver: linear_solver_arg(linear_solver)?,
    })
}

/// `"direct"`, `"kept_factor"` (single-precision kept factor), `"kept_factor_f64"` or
/// `"pcr_gpu"` (conjugate residuals on the GPU, docs/gpu.md).
pub(crate) fn linear_solver_arg(name: &str) -> PyResult<SoftLinearSolver> {
    match name {
        "direct" => Ok(SoftLinearSolver::Direct),
        "kept_factor" => Ok(SoftLinearSolver::KeptFactor { single_precision: true }),
        "kept_factor_f64" => Ok(SoftLinearSolver::KeptFactor { single_precision: false }),
        "pcr_gpu" => Ok(SoftLinearSolver::PcrGpu),
        other => Err(input_error(format!(
            "unknown linear_solver '{other}' (expected 'direct', 'kept_factor', 'kept_factor_f64' or 'pcr_gpu')"
        ))),
    }
}

/// `"backward_euler"` or `"implicit_midpoint"`.
fn integrator_arg(name: &str) -> PyResult<SoftIntegrator> {
    match name {
        "backward_euler" => Ok(SoftIntegrator::BackwardEuler),
        "implicit_midpoint" => Ok(SoftIntegrator::ImplicitMidpoint),
        other => {
            Err(input_error(format!("unknown integrator '{other}' (expected 'backward_euler' or 'implicit_midpoint')")))
        }
    }
}

#[pymethods]
impl PySoftBody {
    /// A soft body of `mesh`, every region of `material` (`"linear"`, `"corotated"`,
    /// `"stvk"` or `"neo_hookean"`, the stable Neo-Hookean model) with Young's modulus
    /// `youngs_modulus` (Pa), Poisson's ratio `poisson` in (−1, 0.5) and `density`
    /// (kg/m³). `regions`: per-region overrides `{tag: {"material": str,
    /// "youngs_modulus": float, "poisson": float, "density": float}}` (missing keys keep
    /// the body-wide values). `damping`: `(α, β)`, the mass-proportional (1/s) and the
    /// stiffness-proportional (s) coefficients. `gravity` (m/s², default (0, 0, −9.81)).
    /// `pin_vertices`: vertices whose three coordinates are pinned; `pin_dofs`: single
    /// `(vertex, axis)` pins. Raises `InputError` for an unknown material name, a region
    /// the mesh lacks, negative damping, non-finite gravity or a pin out of range;
    /// `ModelError` for an invalid material (E ≤ 0, ν outside (−1, 0.5), ρ ≤ 0).
    #[new]
    #[pyo3(signature = (mesh, material="neo_hookean", youngs_modulus=1e5, poisson=0.3, density=1000.0,
                        regions=None, damping=None, gravity=None, pin_vertices=None, pin_dofs=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        mesh: &PyTetMesh,
        material: &str,
        youngs_modulus: f64,
        poisson: f64,
        density: f64,
        regions: Option<&Bound<'_, PyDict>>,
        damping: Option<&Bound<'_, PyAny>>,
        gravity: Option<&Bound<'_, PyAny>>,
        pin_vertices: Option<&Bound<'_, PyAny>>,
        pin_dofs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let default = SoftMaterial::new(material_model(material, "material")?, youngs_modulus, poisson, density);
        let overrides = match regions {
            Some(d) => region_overrides(d, default)?,
            None => Vec::new(),
        };
        let damping = match damping.filter(|d| !d.is_none()) {
            Some(d) => {
                let c = vector(d, "damping", 2, "(mass α, stiffness β)")?;
                SoftDamping { mass: c[0], stiffness: c[1] }
            }
            None => SoftDamping::default(),
        };
        let gravity = match gravity.filter(|g| !g.is_none()) {
            Some(g) => vec3(g, "gravity")?,
            None => Vec3::new(0.0, 0.0, -9.81),
        };
        let pins = match pin_vertices.filter(|p| !p.is_none()) {
            Some(p) => index_list(p, "pin_vertices")?,
            None => Vec::new(),
        };
        let dofs = match pin_dofs.filter(|p| !p.is_none()) {
            Some(p) => dof_list(p)?,
            None => Vec::new(),
        };
        let shared = mesh.inner.clone();
        let body = py
            .detach(|| {
                let mut b = SoftBody::builder((*shared).clone(), default)
                    .damping(damping)
                    .gravity(gravity)
                    .pin_vertices(&pins)
                    .pin_dofs(&dofs);
                for (tag, m) in overrides {
                    b = b.region_material(tag, m);
                }
                b.build()
            })
            .py_err()?;
        Ok(Self { inner: Arc::new(body), mesh: shared })
    }

    /// The rest mesh.
    #[getter]
    fn mesh(&self) -> PyTetMesh {
        PyTetMesh { inner: self.mesh.clone() }
    }

    /// The number of degrees of freedom, 3 per vertex (the length of `x`, `v`, `u`).
    #[getter]
    fn ndof(&self) -> usize {
        self.ndof_()
    }

    /// The number of vertices.
    #[getter]
    fn num_vertices(&self) -> usize {
        self.inner.mesh().num_vertices()
    }

    /// The lumped mass of every vertex (kg), shape (n,): `m_i = Σ_{e ∋ i} ρ_e V_e / 4`.
    #[getter]
    fn masses<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.inner.masses())
    }

    /// The total mass (kg).
    #[getter]
    fn total_mass(&self) -> f64 {
        self.inner.total_mass()
    }

    /// The pinned degrees of freedom (`3·vertex + axis`, ascending); the pin targets
    /// follow this order.
    #[getter]
    fn pinned_dofs(&self) -> Vec<usize> {
        self.inner.pinned_dofs().to_vec()
    }

    /// The names of the parameters θ: per region (ascending tag) `youngs_modulus:TAG`,
    /// `poisson:TAG`, `density:TAG`; then `damping_mass` and `damping_stiffness`.
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.inner.param_names()
    }

    /// The parameter values θ, in the order of `param_names`.
    #[getter]
    fn param_values<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.inner.param_values().as_slice())
    }

    /// The rest positions as a state vector, shape (ndof,).
    #[getter]
    fn rest_positions<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.inner.rest_positions().as_slice())
    }

    /// The gravity acceleration (m/s²), shape (3,).
    #[getter]
    fn gravity<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.inner.gravity().as_slice())
    }

    /// The damping coefficients `(α, β)`: mass-proportional (1/s), stiffness-proportional (s).
    #[getter]
    fn damping(&self) -> (f64, f64) {
        let d = self.inner.damping();
        (d.mass, d.stiffness)
    }

    /// The same body with parameters θ `values` (in the order of `param_names`). Raises
    /// `InputError` for a wrong length or negative damping, `ModelError` for an invalid
    /// material value.
    fn with_params(&self, py: Python<'_>, values: &Bound<'_, PyAny>) -> PyResult<PySoftBody> {
        let n = self.inner.param_names().len();
        let theta = vector(values, "values", n, "len(body.param_names)")?;
        check_finite(&theta, "values", None)?;
        let body = py.detach(|| self.inner.with_param_values(&theta)).py_err()?;
        Ok(self.with_body(body))
    }

    /// The elastic forces `−∂E/∂x` on every vertex at positions `x` (N), shape (ndof,);
    /// no damping, gravity or pins. Raises `InputError` for a wrong length or NaN.
    fn elastic_forces<'py>(&self, py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let x = self.positions(x, "x")?;
        let f = py.detach(|| self.inner.elastic_forces(&x)).py_err()?;
        Ok(out_vec(py, f.as_slice()))
    }

    /// The elastic energy `E = Σ_e V_e Ψ(F_e)` at positions `x` (J). Raises `InputError`
    /// for a wrong length or NaN.
    fn elastic_energy(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<f64> {
        let x = self.positions(x, "x")?;
        py.detach(|| self.inner.elastic_energy(&x)).py_err()
    }

    /// One backward-Euler step of length `dt` from `(x, v)` under vertex forces `u`
    /// (default zero), the pinned degrees of freedom moving to `targets` (one per
    /// `pinned_dofs`; default: where `x` has them). Newton stops when its step is at most
    /// `tolerance` times the rest mesh's diagonal; `line_search`: backtracking on the
    /// incremental potential. Returns `(x_next, v_next)`, or a `SoftStepRecord` with
    /// `record=True`. Raises `InputError` for wrong lengths, NaN or invalid options,
    /// `NumericalError` when Newton does not converge in `max_iterations`. `integrator`:
    /// `"backward_euler"` (default) or `"implicit_midpoint"` (second order, no numerical
    /// damping, keeps angular momentum). `linear_solver`: `"direct"` (default; a sparse
    /// Cholesky factorization per Newton iteration), `"kept_factor"` (inexact Newton: one
    /// single-precision factor per step preconditions conjugate gradients on the exact
    /// Hessian; the record keeps it for the adjoint; several times faster from a few
    /// thousand tets), `"kept_factor_f64"` (the same with a double-precision factor) or
    /// `"pcr_gpu"` (each Newton system solved by conjugate residuals on the GPU; without a
    /// GPU a direct step, counted in the report's `gpu_fallbacks`; docs/gpu.md).
    #[pyo3(signature = (x, v, u=None, targets=None, dt=1e-3, tolerance=1e-10, max_iterations=50,
                        line_search=true, record=false, integrator="backward_euler",
                        linear_solver="direct"))]
    #[allow(clippy::too_many_arguments)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        u: Option<&Bound<'py, PyAny>>,
        targets: Option<&Bound<'py, PyAny>>,
        dt: f64,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        line_search: bool,
        record: bool,
        integrator: &str,
        linear_solver: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let state = SoftState { x: self.positions(x, "x")?, v: self.positions(v, "v")? };
        let u = self.forces(u)?;
        let targets = self.targets(targets, &state.x)?;
        let opts = options(dt, tolerance, max_iterations, line_search, integrator, linear_solver)?;
        let rec = py.detach(|| step(&self.inner, &state, &u, &targets, &opts)).py_err()?;
        if record {
            return Ok(Bound::new(py, PySoftStepRecord { record: rec })?.into_any());
        }
        let next = rec.next_state();
        Ok(PyTuple::new(py, [out_vec(py, next.x.as_slice()), out_vec(py, next.v.as_slice())])?.into_any())
    }

    /// The static equilibrium under gravity and vertex forces `u` (default zero), the
    /// pinned degrees of freedom at `targets` (default: where `x` has them), found by
    /// Newton from `x` (default: the rest positions). Returns `(x, report)` with
    /// Newton's report (a dict as `SoftStepRecord.report`). Raises `InputError` for
    /// wrong lengths or NaN, `NumericalError` for no convergence or a body not held by
    /// enough pins.
    #[pyo3(signature = (x=None, u=None, targets=None, tolerance=1e-10, max_iterations=50, linear_solver="direct"))]
    #[allow(clippy::too_many_arguments)]
    fn static_equilibrium<'py>(
        &self,
        py: Python<'py>,
        x: Option<&Bound<'py, PyAny>>,
        u: Option<&Bound<'py, PyAny>>,
        targets: Option<&Bound<'py, PyAny>>,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        linear_solver: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let x = match x.filter(|x| !x.is_none()) {
            Some(x) => self.positions(x, "x")?,
            None => self.inner.rest_positions(),
        };
        let u = self.forces(u)?;
        let targets = self.targets(targets, &x)?;
        let opts = SoftOptions {
            tolerance,
            max_iterations,
            linear_solver: linear_solver_arg(linear_solver)?,
            ..SoftOptions::default()
        };
        let (xs, report) = py.detach(|| static_equilibrium(&self.inner, &x, &u, &targets, &opts)).py_err()?;
        PyTuple::new(py, [out_vec(py, xs.as_slice()).into_any(), report_dict(py, &report)?.into_any()])
    }

    /// `N` recorded steps from `(x, v)` under the vertex forces `controls` (shape
    /// (N, ndof)) with the pin targets `targets` of each step (shape (N, len(pinned_dofs));
    /// default: the pins held where `x` has them). Options as `step`. Returns a
    /// `SoftRollout`. A failing step's error names it.
    #[pyo3(signature = (x, v, controls, targets=None, dt=1e-3, tolerance=1e-10, max_iterations=50,
                        line_search=true, integrator="backward_euler", linear_solver="direct"))]
    #[allow(clippy::too_many_arguments)]
    fn rollout(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
        controls: &Bound<'_, PyAny>,
        targets: Option<&Bound<'_, PyAny>>,
        dt: f64,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        line_search: bool,
        integrator: &str,
        linear_solver: &str,
    ) -> PyResult<PySoftRollout> {
        let state = SoftState { x: self.positions(x, "x")?, v: self.positions(v, "v")? };
        let n = self.ndof_();
        let np = self.inner.pinned_dofs().len();
        let controls = rows_of(controls, "controls", None, n)?;
        let targets = match targets.filter(|t| !t.is_none()) {
            Some(t) => rows_of(t, "targets", Some(controls.len()), np)?,
            None => vec![self.targets(None, &state.x)?; controls.len()],
        };
        let opts = options(dt, tolerance, max_iterations, line_search, integrator, linear_solver)?;
        let r = py.detach(|| rollout(&self.inner, &state, &controls, &targets, &opts)).py_err()?;
        Ok(PySoftRollout { rollout: r, ndof: n, npins: np })
    }

    /// `B` independent recorded rollouts of `T` steps in one call, in parallel (rayon, GIL
    /// released): start states `x` and `v` (shapes (B, ndof)), vertex forces `controls`
    /// (B, T, ndof), pin targets `targets` (B, T, len(pinned_dofs); default: each
    /// rollout's pins held where its `x` has them) and optional per-rollout parameter
    /// values `thetas` (B, len(param_names); default: this body's). Options as `step`;
    /// `threads`: worker threads (`None`: all cores). Each rollout equals `rollout` of
    /// `with_params(thetas[b])` (or of this body) bit for bit, whatever `threads`. Returns a
    /// list of `B` `SoftRollout`s. Raises `InputError` for wrong shapes or NaN, and for a
    /// failing rollout (the message names it and the step), `ModelError` for a θ outside
    /// the materials' domain.
    #[pyo3(signature = (x, v, controls, targets=None, thetas=None, dt=1e-3, tolerance=1e-10, max_iterations=50,
                        line_search=true, integrator="backward_euler", linear_solver="direct", threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn rollout_batch(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
        controls: &Bound<'_, PyAny>,
        targets: Option<&Bound<'_, PyAny>>,
        thetas: Option<&Bound<'_, PyAny>>,
        dt: f64,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        line_search: bool,
        integrator: &str,
        linear_solver: &str,
        #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    ) -> PyResult<Vec<PySoftRollout>> {
        let n = self.ndof_();
        let np = self.inner.pinned_dofs().len();
        let npar = self.inner.param_names().len();
        let (b, xs) = matrix(x, "x", None, n)?;
        check_finite(&xs, "x", Some(n))?;
        let (_, vs) = matrix(v, "v", Some(b), n)?;
        check_finite(&vs, "v", Some(n))?;
        let (steps, us) = batch_rows(controls, "controls", b, None, n)?;
        let ts = match targets.filter(|t| !t.is_none()) {
            Some(t) => Some(batch_rows(t, "targets", b, Some(steps), np)?.1),
            None => None,
        };
        let thetas = match thetas.filter(|t| !t.is_none()) {
            Some(th) => {
                let (_, data) = matrix(th, "thetas", Some(b), npar)?;
                check_finite(&data, "thetas", Some(npar))?;
                Some(data)
            }
            None => None,
        };
        let rows = |data: &[f64], i: usize, cols: usize| -> Vec<DVector<f64>> {
            (0..steps)
                .map(|k| DVector::from_column_slice(&data[(i * steps + k) * cols..(i * steps + k + 1) * cols]))
                .collect()
        };
        let batch: Vec<SoftBatchRollout> = (0..b)
            .map(|i| SoftBatchRollout {
                state: SoftState {
                    x: DVector::from_column_slice(&xs[i * n..(i + 1) * n]),
                    v: DVector::from_column_slice(&vs[i * n..(i + 1) * n]),
                },
                controls: rows(&us, i, n),
                targets: ts.as_ref().map(|t| rows(t, i, np)),
                theta: thetas.as_ref().map(|th| DVector::from_column_slice(&th[i * npar..(i + 1) * npar])),
            })
            .collect();
        let opts = options(dt, tolerance, max_iterations, line_search, integrator, linear_solver)?;
        let out = py.detach(|| soft_rollout_batch(&self.inner, &batch, &opts, threads)).py_err()?;
        Ok(out.into_iter().map(|r| PySoftRollout { rollout: r, ndof: n, npins: np }).collect())
    }

    /// Checks every Jacobian block of one step (`∂(x⁺, v⁺)/∂(x, v, u, targets, θ)`)
    /// against finite differences: `method` `"ridders"` (default), `"central"` or `"both"`,
    /// the step `step` (scaled per input: by the largest speed for `v`, the largest vertex
    /// weight for `u`, `max(|θ_j|, 0.01)` for parameter j), an entry passing when its
    /// relative error is at most `rel_tol` (the denominator floored at `abs_floor` times the
    /// block's scale). Other arguments as `step`. Returns a `GradReport`. Raises
    /// `InputError` for wrong lengths, NaN or invalid settings.
    #[pyo3(signature = (x, v, u=None, targets=None, dt=1e-3, method="ridders", rel_tol=1e-6, step=1e-3,
                        abs_floor=1e-5, integrator="backward_euler"))]
    #[allow(clippy::too_many_arguments)]
    fn gradcheck(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
        u: Option<&Bound<'_, PyAny>>,
        targets: Option<&Bound<'_, PyAny>>,
        dt: f64,
        method: &str,
        rel_tol: f64,
        step: f64,
        abs_floor: f64,
        integrator: &str,
    ) -> PyResult<PyGradReport> {
        let state = SoftState { x: self.positions(x, "x")?, v: self.positions(v, "v")? };
        let u = self.forces(u)?;
        let targets = self.targets(targets, &state.x)?;
        let options = SoftOptions { dt, integrator: integrator_arg(integrator)?, ..SoftOptions::default() };
        let method = FdMethod::parse(method)
            .ok_or_else(|| input_error(format!("method must be 'central', 'ridders' or 'both', got '{method}'")))?;
        let config = GradcheckConfig { method, step, rel_tol, abs_floor };
        let report = py.detach(|| check_soft_step(&self.inner, &state, &u, &targets, &options, &config)).py_err()?;
        Ok(PyGradReport::from_report(report))
    }

    /// Fits the parameters named `free` (see `param_names`) to observed positions by
    /// Levenberg–Marquardt on exact residual Jacobians, starting from this body's
    /// values. The experiment: the initial state `(initial_x, initial_v)`, the vertex
    /// forces `controls` (shape (N, ndof)), the pin targets `targets` (shape
    /// (N, len(pinned_dofs)); default: held where `initial_x` has them) and `observed`,
    /// a dict `{k: x_k}` of positions (ndof,) after step k (1 ≤ k ≤ N), stepped with
    /// `dt` by `integrator` (as `step`). The fit stops when a step changes every parameter by less than `tolerance`,
    /// relative, or after `max_iterations`. Returns a dict: `names`, `values` (the
    /// fitted values), `body` (a `SoftBody` with them), `initial_cost` and `cost`
    /// (`½‖r‖²` before and after) and `iterations`. Raises `InputError` for unknown
    /// names or inconsistent data, `NumericalError` for a step that fails.
    #[pyo3(signature = (initial_x, initial_v, controls, observed, free, targets=None, dt=1e-3,
                        max_iterations=50, tolerance=1e-12, integrator="backward_euler"))]
    #[allow(clippy::too_many_arguments)]
    fn identify<'py>(
        &self,
        py: Python<'py>,
        initial_x: &Bound<'py, PyAny>,
        initial_v: &Bound<'py, PyAny>,
        controls: &Bound<'py, PyAny>,
        observed: &Bound<'py, PyDict>,
        free: Vec<String>,
        targets: Option<&Bound<'py, PyAny>>,
        dt: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        tolerance: f64,
        integrator: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let initial =
            SoftState { x: self.positions(initial_x, "initial_x")?, v: self.positions(initial_v, "initial_v")? };
        let n = self.ndof_();
        let np = self.inner.pinned_dofs().len();
        let controls = rows_of(controls, "controls", None, n)?;
        let targets = match targets.filter(|t| !t.is_none()) {
            Some(t) => rows_of(t, "targets", Some(controls.len()), np)?,
            None => vec![self.targets(None, &initial.x)?; controls.len()],
        };
        let mut obs = Vec::with_capacity(observed.len());
        for (k, x) in observed.iter() {
            let step_k = count(&k, "an observed key (a step number)", 1)?;
            obs.push((step_k, self.positions(&x, &format!("observed[{step_k}]"))?));
        }
        obs.sort_by_key(|o| o.0);
        let data = SoftTrajectory {
            initial,
            controls,
            targets,
            observed: obs,
            options: SoftOptions { dt, integrator: integrator_arg(integrator)?, ..SoftOptions::default() },
        };
        let fit_options = SoftFitOptions { max_iterations, tolerance };
        let fit = py
            .detach(|| {
                let free: Vec<&str> = free.iter().map(String::as_str).collect();
                identify(&self.inner, &data, &free, &fit_options)
            })
            .py_err()?;
        let d = PyDict::new(py);
        d.set_item("names", fit.names.clone())?;
        d.set_item("values", out_vec(py, fit.values.as_slice()))?;
        d.set_item("body", Bound::new(py, self.with_body(fit.body))?)?;
        d.set_item("initial_cost", fit.initial_cost)?;
        d.set_item("cost", fit.cost)?;
        d.set_item("iterations", fit.iterations)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let materials: Vec<String> = self
            .inner
            .regions()
            .iter()
            .map(|r| {
                format!(
                    "{}: {}(E={}, nu={}, rho={})",
                    r.tag,
                    r.material.model.name(),
                    r.material.youngs_modulus,
                    r.material.poisson,
                    r.material.density
                )
            })
            .collect();
        format!(
            "SoftBody(vertices={}, tets={}, pinned_dofs={}, regions={{{}}})",
            self.inner.mesh().num_vertices(),
            self.inner.mesh().num_tets(),
            self.inner.pinned_dofs().len(),
            materials.join(", ")
        )
    }
}

/// One recorded soft-body step (`SoftBody.step(..., record=True)`, or an entry of a
/// `SoftRollout`): its inputs, the result, Newton's report, and the step's
/// vector-Jacobian product and Jacobians (the adjoint of the implicit step).
/// Self-contained.
#[pyclass(name = "SoftStepRecord", module = "stiction", frozen)]
pub struct PySoftStepRecord {
    record: SoftStepRecord,
}

#[pymethods]
impl PySoftStepRecord {
    /// The positions after the step, shape (ndof,).
    #[getter]
    fn x_next<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.next_state().x.as_slice())
    }

    /// The velocities after the step, shape (ndof,).
    #[getter]
    fn v_next<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.next_state().v.as_slice())
    }

    /// The positions before the step, shape (ndof,).
    #[getter]
    fn x<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.state().x.as_slice())
    }

    /// The velocities before the step, shape (ndof,).
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.state().v.as_slice())
    }

    /// The vertex forces of the step, shape (ndof,).
    #[getter]
    fn u<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.controls().as_slice())
    }

    /// The pin targets of the step, shape (len(pinned_dofs),).
    #[getter]
    fn targets<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.record.targets().as_slice())
    }

    /// The time step (s).
    #[getter]
    fn dt(&self) -> f64 {
        self.record.options().dt
    }

    /// Newton's report: a dict with `iterations`, `factorizations`, `linear_iterations`
    /// (conjugate-gradient iterations per Newton iteration with a kept factor; GPU
    /// conjugate-residual iterations with `"pcr_gpu"`), `gpu_fallbacks` (with `"pcr_gpu"`:
    /// Newton iterations solved directly because no GPU was available),
    /// `final_check` (the step ended on the kept factor's check), `gradient_norms` (‖∇Φ‖∞ at each
    /// iterate), `step_norms` (‖Δy‖∞ of each Newton step, m), `step_lengths` (the line
    /// search's), `projected_iterations` (iterations whose Hessian needed the PSD
    /// projection), `inverted_elements` (tets with det F ≤ 0 at the end) and `timings`
    /// (seconds in `assembly`, `factorization`, `solve`, `line_search`).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        report_dict(py, self.record.report())
    }

    /// Vector-Jacobian product: given `grad_x_next = ∂ℓ/∂x⁺` and `grad_v_next = ∂ℓ/∂v⁺`
    /// (ndof each), returns `{"x", "v", "u", "targets", "theta"}`, the gradients of ℓ
    /// with respect to the step's inputs (θ in the order of `SoftBody.param_names`), with
    /// one factorization of the Hessian at the solution and one back-solve. Raises
    /// `InputError` for wrong lengths or NaN, `NumericalError` for a singular Hessian.
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        grad_x_next: &Bound<'py, PyAny>,
        grad_v_next: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let n = self.record.body().ndof();
        let gx = finite_dvector(grad_x_next, "grad_x_next", n, "body.ndof")?;
        let gv = finite_dvector(grad_v_next, "grad_v_next", n, "body.ndof")?;
        let g = py.detach(|| self.record.vjp(&gx, &gv)).py_err()?;
        let d = PyDict::new(py);
        d.set_item("x", out_vec(py, g.x.as_slice()))?;
        d.set_item("v", out_vec(py, g.v.as_slice()))?;
        d.set_item("u", out_vec(py, g.u.as_slice()))?;
        d.set_item("targets", out_vec(py, g.targets.as_slice()))?;
        d.set_item("theta", out_vec(py, g.theta.as_slice()))?;
        Ok(d)
    }

    /// The full Jacobians of `(x⁺, v⁺)` with respect to the step's inputs, a dict of 2-D
    /// arrays: `"x_x"`, `"x_v"`, `"x_u"` (ndof × ndof), `"x_targets"` (ndof ×
    /// len(pinned_dofs)), `"x_theta"` (ndof × len(param_names)), and the same for `v⁺`
    /// (`"v_x"`, ...). One solve with as many right-hand sides as free degrees of
    /// freedom: for small and medium meshes (prefer `vjp`). Raises `NumericalError` for
    /// a singular Hessian.
    fn jacobians<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let j = py.detach(|| self.record.jacobians()).py_err()?;
        let d = PyDict::new(py);
        for (k, m) in [
            ("x_x", j.x_x),
            ("x_v", j.x_v),
            ("x_u", j.x_u),
            ("x_targets", j.x_targets),
            ("x_theta", j.x_theta),
            ("v_x", j.v_x),
            ("v_v", j.v_v),
            ("v_u", j.v_u),
            ("v_targets", j.v_targets),
            ("v_theta", j.v_theta),
        ] {
            d.set_item(k, out_owned_mat(py, m))?;
        }
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!(
            "SoftStepRecord(ndof={}, dt={}, iterations={})",
            self.record.body().ndof(),
            self.record.options().dt,
            self.record.report().iterations
        )
    }
}

/// A recorded soft-body rollout (`SoftBody.rollout`): one `SoftStepRecord` per step,
/// the states after each step, and the reverse sweep of a loss of those states.
#[pyclass(name = "SoftRollout", module = "stiction", frozen)]
pub struct PySoftRollout {
    rollout: SoftRollout,
    ndof: usize,
    npins: usize,
}

/// The rows of an optional `(steps, cols)` cotangent as vectors (zeros when `None`).
fn cotangent_rows(
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
    steps: usize,
    cols: usize,
) -> PyResult<Vec<DVector<f64>>> {
    match obj.filter(|o| !o.is_none()) {
        Some(o) => rows_of(o, name, Some(steps), cols),
        None => Ok(vec![DVector::zeros(cols); steps]),
    }
}

#[pymethods]
impl PySoftRollout {
    /// The number of steps N.
    fn __len__(&self) -> usize {
        self.rollout.records().len()
    }

    /// The record of step `k` (negative indices count from the end).
    fn __getitem__(&self, k: isize) -> PyResult<PySoftStepRecord> {
        let n = self.rollout.records().len() as isize;
        let i = if k < 0 { k + n } else { k };
        if !(0..n).contains(&i) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "step {k} out of range (the rollout has {n} steps)"
            )));
        }
        Ok(PySoftStepRecord { record: self.rollout.records()[i as usize].clone() })
    }

    /// The states after each step: `(xs, vs)`, shapes (N, ndof) each (row k is the state
    /// after step k).
    #[getter]
    fn states<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let records = self.rollout.records();
        let xs: Vec<f64> = records.iter().flat_map(|r| r.next_state().x.iter().copied()).collect();
        let vs: Vec<f64> = records.iter().flat_map(|r| r.next_state().v.iter().copied()).collect();
        PyTuple::new(py, [out_rows(py, records.len(), self.ndof, xs)?, out_rows(py, records.len(), self.ndof, vs)?])
    }

    /// Newton's report of every step (dicts as `SoftStepRecord.report`).
    #[getter]
    fn reports<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.rollout.records().iter().map(|r| report_dict(py, r.report())).collect()
    }

    /// Reverse-mode sweep: `grad_x[k]` and `grad_v[k]` (shapes (N, ndof); None: zero) are
    /// `∂ℓ/∂x_{k+1}` and `∂ℓ/∂v_{k+1}` of the state after step k, i.e. of row k of
    /// `states`. Returns a dict of the total derivatives: `"x0"`, `"v0"` (ndof each),
    /// `"u"` (N, ndof), `"targets"` (N, len(pinned_dofs)) and `"theta"` (in the order of
    /// `SoftBody.param_names`). Raises `InputError` for an empty rollout, wrong shapes
    /// or NaN.
    #[pyo3(signature = (grad_x=None, grad_v=None))]
    fn backward<'py>(
        &self,
        py: Python<'py>,
        grad_x: Option<&Bound<'py, PyAny>>,
        grad_v: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let steps = self.rollout.records().len();
        if steps == 0 {
            return Err(input_error("the soft rollout is empty"));
        }
        let gx = cotangent_rows(grad_x, "grad_x", steps, self.ndof)?;
        let gv = cotangent_rows(grad_v, "grad_v", steps, self.ndof)?;
        let g = py.detach(|| self.rollout.backward(&gx, &gv)).py_err()?;
        let u: Vec<f64> = g.u.iter().flat_map(|u| u.iter().copied()).collect();
        let t: Vec<f64> = g.targets.iter().flat_map(|t| t.iter().copied()).collect();
        let d = PyDict::new(py);
        d.set_item("x0", out_vec(py, g.x0.as_slice()))?;
        d.set_item("v0", out_vec(py, g.v0.as_slice()))?;
        d.set_item("u", out_rows(py, steps, self.ndof, u)?)?;
        d.set_item("targets", out_rows(py, steps, self.npins, t)?)?;
        d.set_item("theta", out_vec(py, g.theta.as_slice()))?;
        Ok(d)
    }

    /// Reverse-mode sweeps of many rollouts at once, in parallel (rayon, GIL released):
    /// `rollouts` is a list of B rollouts of one body's size and T steps each (the same
    /// rollout may appear several times); `grad_x` and `grad_v` (shapes (B, T, ndof); None:
    /// zero) are the cotangents of each rollout's `states`, as in `backward`. Returns
    /// `{"x0": (B, ndof), "v0": (B, ndof), "u": (B, T, ndof), "targets": (B, T,
    /// len(pinned_dofs)), "theta": (B, len(param_names))}`, row b equal to
    /// `rollouts[b].backward(grad_x[b], grad_v[b])`. Raises `InputError` for an empty list,
    /// rollouts of different sizes, wrong shapes or NaN.
    #[staticmethod]
    #[pyo3(signature = (rollouts, grad_x=None, grad_v=None, threads=None))]
    fn backward_batch<'py>(
        py: Python<'py>,
        rollouts: Vec<Bound<'py, PySoftRollout>>,
        grad_x: Option<&Bound<'py, PyAny>>,
        grad_v: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let first = rollouts
            .first()
            .map(|r| r.get())
            .ok_or_else(|| input_error("backward_batch needs at least one rollout"))?;
        let (b, n, np) = (rollouts.len(), first.ndof, first.npins);
        let steps = first.rollout.records().len();
        let npar = first.rollout.records().first().map_or(0, |r| r.body().param_values().len());
        if steps == 0 {
            return Err(input_error("backward_batch: rollout 0 is empty"));
        }
        for (i, r) in rollouts.iter().enumerate() {
            let r = r.get();
            let same = r.ndof == n
                && r.npins == np
                && r.rollout.records().len() == steps
                && r.rollout.records().first().is_some_and(|rec| rec.body().param_values().len() == npar);
            if !same {
                return Err(input_error(format!(
                    "rollout {i} does not match rollout 0 (every rollout needs {steps} steps of a body with ndof = \
                     {n}, {np} pinned dofs and {npar} parameters)"
                )));
            }
        }
        let cot = |obj: Option<&Bound<'py, PyAny>>, name: &str| -> PyResult<Vec<Vec<DVector<f64>>>> {
            match obj.filter(|o| !o.is_none()) {
                Some(o) => {
                    let (_, data) = batch_rows(o, name, b, Some(steps), n)?;
                    Ok((0..b)
                        .map(|i| {
                            (0..steps)
                                .map(|k| {
                                    DVector::from_column_slice(&data[(i * steps + k) * n..(i * steps + k + 1) * n])
                                })
                                .collect()
                        })
                        .collect())
                }
                None => Ok(vec![vec![DVector::zeros(n); steps]; b]),
            }
        };
        let cotangents: Vec<SoftBatchCotangent> = cot(grad_x, "grad_x")?
            .into_iter()
            .zip(cot(grad_v, "grad_v")?)
            .map(|(grad_x, grad_v)| SoftBatchCotangent { grad_x, grad_v })
            .collect();
        let refs: Vec<&SoftRollout> = rollouts.iter().map(|r| &r.get().rollout).collect();
        let grads = py.detach(|| soft_backward_batch(&refs, &cotangents, threads)).py_err()?;
        let stack = |f: &dyn Fn(&SoftRolloutGradients) -> Vec<f64>| -> Vec<f64> { grads.iter().flat_map(f).collect() };
        let rows3 = |data: Vec<f64>, cols: usize| -> PyResult<Bound<'py, PyAny>> {
            Ok(out_rows(py, b * steps, cols, data)?.reshape([b, steps, cols])?.into_any())
        };
        let d = PyDict::new(py);
        d.set_item("x0", out_rows(py, b, n, stack(&|g| g.x0.as_slice().to_vec()))?)?;
        d.set_item("v0", out_rows(py, b, n, stack(&|g| g.v0.as_slice().to_vec()))?)?;
        d.set_item("u", rows3(stack(&|g| g.u.iter().flat_map(|u| u.iter().copied()).collect()), n)?)?;
        d.set_item("targets", rows3(stack(&|g| g.targets.iter().flat_map(|t| t.iter().copied()).collect()), np)?)?;
        d.set_item("theta", out_rows(py, b, npar, stack(&|g| g.theta.as_slice().to_vec()))?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("SoftRollout(steps={}, ndof={})", self.rollout.records().len(), self.ndof)
    }
}
