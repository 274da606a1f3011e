//! `stiction.Model`: an immutable model plus a scratch workspace.

use crate::convert::{dvector, out_mat, out_owned_mat, out_se3, out_vec, vector};
use crate::errors::{input_error, load_err, model_err, IntoPyResult, LoadWarning};
use nalgebra::DVector;
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::CString;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use stiction::collision::Contact;
use stiction::constraint::{self, CollisionOptions, CollisionWorkspace, ContactJacobians};
use stiction::dynamics::{self, Data, DerivativeData, ReferenceFrame};
use stiction::io::UrdfOptions;
use stiction::{Model, ModelBuilder};

/// One path (str or os.PathLike) or a sequence of them.
fn path_list(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = obj.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    obj.extract::<Vec<PathBuf>>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!("{name} must be a path or a list of paths (str or os.PathLike)"))
    })
}

/// A body given by index or by name.
pub enum BodyRef {
    Index(i64),
    Name(String),
}

impl<'a, 'py> FromPyObject<'a, 'py> for BodyRef {
    type Error = PyErr;

    fn extract(obj: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(name) = obj.extract::<String>() {
            return Ok(BodyRef::Name(name));
        }
        if !obj.is_instance_of::<pyo3::types::PyBool>() {
            if let Ok(i) = obj.extract::<i64>() {
                return Ok(BodyRef::Index(i));
            }
            if obj.is_instance_of::<pyo3::types::PyInt>() {
                return Ok(BodyRef::Index(i64::MAX)); // beyond i64: out of range
            }
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "body must be a body name (str) or index (int), got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an unknown type".into())
        )))
    }
}

/// An articulated rigid-body model. Immutable; build one with `ModelBuilder`,
/// `Model.from_urdf`, `Model.from_json` or `stiction.samples`.
#[pyclass(name = "Model", module = "stiction", frozen)]
pub struct PyModel {
    pub model: Model,
    work: Mutex<Work>,
}

/// The scratch workspaces of a model, behind one mutex.
struct Work {
    data: Data,
    /// Allocated by the first derivative call.
    deriv: Option<DerivativeData>,
    /// Allocated by the first contact query.
    collision: Option<CollisionWorkspace>,
}

/// Contacts and, on request, their derivatives.
pub type ContactResult = (Vec<Contact>, Option<Vec<ContactJacobians>>);

type DerivativeResult<'py> = (Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>, Bound<'py, PyArray2<f64>>);

impl PyModel {
    pub fn new(model: Model) -> Self {
        let data = Data::new(&model);
        Self { model, work: Mutex::new(Work { data, deriv: None, collision: None }) }
    }

    fn lock(&self) -> MutexGuard<'_, Work> {
        // A panic cannot leave `Data` in a state later calls rely on: every
        // algorithm overwrites what it reads.
        self.work.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` on the model and its workspace with the GIL released.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Model, &mut Data) -> stiction::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| f(&self.model, &mut self.lock().data)).py_err()
    }

    /// Like [`PyModel::run`], with the derivative workspace as well.
    fn run_deriv<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Model, &mut Data, &mut DerivativeData) -> stiction::Result<T> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            let mut work = self.lock();
            let Work { data, deriv, .. } = &mut *work;
            let deriv = deriv.get_or_insert_with(|| DerivativeData::new(&self.model));
            f(&self.model, data, deriv)
        })
        .py_err()
    }

    /// The contacts at configuration `q` (and their q-derivatives with `jacobians`).
    pub(crate) fn contacts_at(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        margin: f64,
        jacobians: bool,
    ) -> PyResult<ContactResult> {
        let q = self.q(q, "q")?;
        py.detach(|| {
            let mut work = self.lock();
            let Work { data, collision: ws, .. } = &mut *work;
            let model = &self.model;
            dynamics::forward_kinematics(model, data, &q)?;
            let ws = ws.get_or_insert_with(|| CollisionWorkspace::new(model));
            let contacts = constraint::detect_contacts(model, data, &CollisionOptions { margin }, ws)?.to_vec();
            let jac = if jacobians {
                Some(
                    contacts
                        .iter()
                        .map(|c| constraint::contact_jacobians(model, data, c))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            } else {
                None
            };
            Ok((contacts, jac))
        })
        .py_err()
    }

    /// Applies `f(q_row, g_row)` to matching rows of `q` (shape (..., nq)) and `g` (shape
    /// (..., ng)), giving an array of shape (..., nout).
    fn map_rows<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        g: &Bound<'py, PyAny>,
        (nq, ng, nout): (usize, usize, usize),
        f: impl Fn(&DVector<f64>, &DVector<f64>) -> stiction::Result<DVector<f64>> + Sync,
    ) -> PyResult<Bound<'py, PyAny>> {
        let qa = crate::convert::array(q, "q")?;
        let ga = crate::convert::array(g, "g")?;
        let lead = match qa.shape.split_last() {
            Some((&n, lead)) if n == nq => lead.to_vec(),
            _ => return Err(input_error(format!("q must have shape (..., {nq}) (model.nq), got {:?}", qa.shape))),
        };
        match ga.shape.split_last() {
            Some((&n, l)) if n == ng && l == lead.as_slice() => {}
            _ => {
                return Err(input_error(format!(
                    "g must have shape {:?} (q's leading shape, then {ng}), got {:?}",
                    [lead.as_slice(), &[ng]].concat(),
                    ga.shape
                )))
            }
        }
        let rows: usize = lead.iter().product();
        let out = py
            .detach(|| -> stiction::Result<Vec<f64>> {
                let mut out = Vec::with_capacity(rows * nout);
                for r in 0..rows {
                    let qr = DVector::from_column_slice(&qa.data[r * nq..(r + 1) * nq]);
                    let gr = DVector::from_column_slice(&ga.data[r * ng..(r + 1) * ng]);
                    out.extend_from_slice(f(&qr, &gr)?.as_slice());
                }
                Ok(out)
            })
            .py_err()?;
        let flat = crate::convert::out_vec(py, &out);
        Ok(flat.reshape([lead.as_slice(), &[nout]].concat())?.into_any())
    }

    fn q(&self, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
        vector(obj, name, self.model.nq(), "model.nq")
    }

    fn v(&self, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
        vector(obj, name, self.model.nv(), "model.nv")
    }

    /// A frame by body index (frame i is body i) or by link name (merged links too).
    fn frame(&self, body: BodyRef) -> PyResult<usize> {
        match body {
            BodyRef::Name(n) => self.model.frame_index(&n).py_err(),
            index => self.body(index),
        }
    }

    fn body(&self, body: BodyRef) -> PyResult<usize> {
        match body {
            BodyRef::Index(i) if (0..self.model.nbodies() as i64).contains(&i) => Ok(i as usize),
            BodyRef::Index(i) => {
                Err(input_error(format!("body index {i} out of range (model has {} bodies)", self.model.nbodies())))
            }
            BodyRef::Name(n) => self.model.body_index(&n).py_err(),
        }
    }
}

fn reference_frame(frame: &str) -> PyResult<ReferenceFrame> {
    match frame {
        "world" => Ok(ReferenceFrame::World),
        "local" => Ok(ReferenceFrame::Local),
        "local_world_aligned" => Ok(ReferenceFrame::LocalWorldAligned),
        other => Err(input_error(format!("frame must be 'world', 'local' or 'local_world_aligned', got '{other}'"))),
    }
}

/// Loads an MJCF file with what the model does not hold: a dict with `model` (`Model`),
/// `actuators` (one dict per joint motor: `name`, `joint`, `gear`, `ctrl_range` and
/// `force_range` as `(lo, hi)` or None), `control_matrix` (nv × number of actuators:
/// joint forces `τ = B u`) and `timestep` (the file's `<option timestep>`, or None).
/// Loader warnings are issued as `stiction.LoadWarning`.
#[pyfunction]
#[pyo3(signature = (path, strict=false, merge_fixed_joints=true))]
pub fn load_mjcf<'py>(
    py: Python<'py>,
    path: PathBuf,
    strict: bool,
    merge_fixed_joints: bool,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let options = stiction::io::MjcfOptions { strict, merge_fixed_joints };
    let loaded = py.detach(|| Model::from_mjcf(&path, &options)).map_err(load_err)?;
    load_warnings(py, &loaded.warnings)?;
    let d = pyo3::types::PyDict::new(py);
    let actuators = pyo3::types::PyList::empty(py);
    for a in &loaded.actuators {
        let x = pyo3::types::PyDict::new(py);
        x.set_item("name", &a.name)?;
        x.set_item("joint", &a.joint)?;
        x.set_item("gear", a.gear)?;
        x.set_item("ctrl_range", a.ctrl_range)?;
        x.set_item("force_range", a.force_range)?;
        actuators.append(x)?;
    }
    d.set_item("actuators", actuators)?;
    d.set_item("control_matrix", crate::convert::out_mat(py, &loaded.control_matrix()))?;
    d.set_item("timestep", loaded.timestep)?;
    d.set_item("model", PyModel::new(loaded.model))?;
    Ok(d)
}

/// Issues each loader warning as a `stiction.LoadWarning`.
fn load_warnings(py: Python<'_>, warnings: &[String]) -> PyResult<()> {
    let category = py.get_type::<LoadWarning>();
    for w in warnings {
        let msg = CString::new(w.replace('\0', "\\0")).expect("NUL bytes were replaced");
        // From native code, stacklevel 1 is the Python frame that called the loader
        // (what stacklevel=2 means inside a Python wrapper).
        PyErr::warn(py, &category, &msg, 1)?;
    }
    Ok(())
}

#[pymethods]
impl PyModel {
    /// Loads a URDF file. Loader warnings are issued as `stiction.LoadWarning`. Links
    /// welded to their parent link by fixed joints are merged into one rigid body unless
    /// `merge_fixed_joints=False`; they stay addressable by name (`frame_names`,
    /// `frame_pose`, `body_jacobian`, parameters such as `mass:LINK`).
    #[staticmethod]
    #[pyo3(signature = (path, floating_base=false, package_dirs=None, load_collision_meshes=true, strict=false, merge_fixed_joints=true))]
    fn from_urdf(
        py: Python<'_>,
        path: PathBuf,
        floating_base: bool,
        package_dirs: Option<&Bound<'_, PyAny>>,
        load_collision_meshes: bool,
        strict: bool,
        merge_fixed_joints: bool,
    ) -> PyResult<Self> {
        let package_dirs = match package_dirs.filter(|p| !p.is_none()) {
            Some(p) => path_list(p, "package_dirs")?,
            None => vec![],
        };
        let options = UrdfOptions { floating_base, package_dirs, load_collision_meshes, strict, merge_fixed_joints };
        let loaded = py.detach(|| Model::from_urdf(&path, &options)).map_err(load_err)?;
        load_warnings(py, &loaded.warnings)?;
        Ok(PyModel::new(loaded.model))
    }

    /// Loads an MJCF (MuJoCo XML) file: bodies, inertias, joints and collision geometry
    /// (docs/models.md, "MJCF"). Loader warnings (unsupported elements: actuators,
    /// sensors, sites, …) are issued as `stiction.LoadWarning`; with `strict=True` they
    /// are `LoadError`s. The file's `<option timestep>` is not part of the model. Bodies
    /// without joints are merged into their parent unless `merge_fixed_joints=False`.
    #[staticmethod]
    #[pyo3(signature = (path, strict=false, merge_fixed_joints=true))]
    fn from_mjcf(py: Python<'_>, path: PathBuf, strict: bool, merge_fixed_joints: bool) -> PyResult<Self> {
        let options = stiction::io::MjcfOptions { strict, merge_fixed_joints };
        let loaded = py.detach(|| Model::from_mjcf(&path, &options)).map_err(load_err)?;
        load_warnings(py, &loaded.warnings)?;
        Ok(PyModel::new(loaded.model))
    }

    /// Reads a model from the JSON written by `to_json`.
    #[staticmethod]
    fn from_json(py: Python<'_>, s: &str) -> PyResult<Self> {
        let builder: ModelBuilder =
            serde_json::from_str(s).map_err(|e| input_error(format!("invalid model JSON: {e}")))?;
        let model = py.detach(|| builder.build()).map_err(model_err)?;
        Ok(PyModel::new(model))
    }

    /// Serializes the model to JSON.
    fn to_json(&self) -> PyResult<String> {
        self.model.to_json().py_err()
    }

    /// The model name.
    #[getter]
    fn name(&self) -> &str {
        self.model.name()
    }
    /// Number of configuration coordinates.
    #[getter]
    fn nq(&self) -> usize {
        self.model.nq()
    }
    /// Number of degrees of freedom.
    #[getter]
    fn nv(&self) -> usize {
        self.model.nv()
    }
    /// Number of bodies (the world excluded).
    #[getter]
    fn nbodies(&self) -> usize {
        self.model.nbodies()
    }
    /// Names of the joints with degrees of freedom, in coordinate order.
    #[getter]
    fn joint_names(&self) -> Vec<String> {
        self.model.joint_names()
    }
    /// The names of every link: the bodies' (in body order), then the links merged into
    /// them by fixed-joint merging (`frame_pose`, `body_jacobian` and parameters such as
    /// `mass:LINK` accept them all).
    #[getter]
    fn frame_names(&self) -> Vec<String> {
        self.model.frames().iter().map(|f| f.name.clone()).collect()
    }
    /// Names of the bodies, in depth-first order (body indices).
    #[getter]
    fn body_names(&self) -> Vec<String> {
        self.model.bodies().iter().map(|b| b.name.clone()).collect()
    }
    /// Gravity in world coordinates, shape (3,).
    #[getter]
    fn gravity<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.gravity().as_slice())
    }
    /// Total mass of the bodies.
    #[getter]
    fn total_mass(&self) -> f64 {
        self.model.total_mass()
    }
    /// Lower position limits, shape (nq,); -inf where unlimited.
    #[getter]
    fn lower_limits<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.lower_limits().as_slice())
    }
    /// Upper position limits, shape (nq,); +inf where unlimited.
    #[getter]
    fn upper_limits<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.upper_limits().as_slice())
    }
    /// Velocity limits, shape (nv,).
    #[getter]
    fn velocity_limits<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.velocity_limits().as_slice())
    }
    /// Effort limits, shape (nv,).
    #[getter]
    fn effort_limits<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.effort_limits().as_slice())
    }

    /// Index of the body named `name`.
    fn body_index(&self, name: &str) -> PyResult<usize> {
        self.model.body_index(name).py_err()
    }
    /// First configuration index of the joint named `name`.
    fn joint_q_index(&self, name: &str) -> PyResult<usize> {
        self.model.joint_q_index(name).py_err()
    }
    /// First velocity index of the joint named `name`.
    fn joint_v_index(&self, name: &str) -> PyResult<usize> {
        self.model.joint_v_index(name).py_err()
    }

    /// The neutral configuration, shape (nq,).
    fn neutral<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.neutral().as_slice())
    }
    /// A random configuration reproducible from `seed`, shape (nq,).
    #[pyo3(signature = (seed=0))]
    fn random_configuration<'py>(&self, py: Python<'py>, seed: u64) -> Bound<'py, PyArray1<f64>> {
        out_vec(py, self.model.random_configuration(seed).as_slice())
    }
    /// `q ⊕ v·dt`, shape (nq,).
    fn integrate<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        dt: f64,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let q = dvector(q, "q", self.model.nq(), "model.nq")?;
        let v = dvector(v, "v", self.model.nv(), "model.nv")?;
        if !dt.is_finite() {
            return Err(input_error(format!("dt is not finite ({dt})")));
        }
        let out = self.model.integrate(&q, &v, dt).py_err()?;
        Ok(out_vec(py, out.as_slice()))
    }
    /// `q1 ⊖ q0`: the velocity that takes `q0` to `q1` in unit time, shape (nv,).
    fn difference<'py>(
        &self,
        py: Python<'py>,
        q0: &Bound<'py, PyAny>,
        q1: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let q0 = dvector(q0, "q0", self.model.nq(), "model.nq")?;
        let q1 = dvector(q1, "q1", self.model.nq(), "model.nq")?;
        let out = self.model.difference(&q0, &q1).py_err()?;
        Ok(out_vec(py, out.as_slice()))
    }
    /// Maps gradients with respect to coordinates to the tangent space: `g = ∂ℓ/∂q` at
    /// `q` (both shape (..., nq), the same leading shape) gives `Eᵀ g`, shape (..., nv),
    /// with `E = ∂(q ⊕ δ)/∂δ` at δ = 0. This turns the gradient of a loss written on the
    /// coordinates of a step's output into the `grad_q_next` a `StepRecord.vjp` or
    /// `Tape.backward` takes. The identity for models without ball or free joints.
    fn tangent_gradient<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        g: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (nq, nv) = (self.model.nq(), self.model.nv());
        self.map_rows(py, q, g, (nq, nq, nv), |q, g| self.model.tangent_gradient(q, g))
    }

    /// Maps tangent-space gradients to coordinates: `g = ∂ℓ/∂δ` (shape (..., nv)) at `q`
    /// (shape (..., nq)) gives `Dᵀ g`, shape (..., nq), the exact gradient of
    /// `q ↦ ℓ(normalize(q))` (quaternions of any length are normalised first, so the
    /// result has no component along a quaternion). This turns the tangent gradient a
    /// `StepRecord.vjp` or `Tape.backward` returns for `q` into a gradient on coordinates.
    fn coordinate_gradient<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        g: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (nq, nv) = (self.model.nq(), self.model.nv());
        self.map_rows(py, q, g, (nq, nv, nq), |q, g| self.model.coordinate_gradient(q, g))
    }

    /// `q` with every quaternion normalised, shape (nq,).
    fn normalize<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let q = dvector(q, "q", self.model.nq(), "model.nq")?;
        let out = self.model.normalize(&q).py_err()?;
        Ok(out_vec(py, out.as_slice()))
    }

    /// The joint-space mass matrix M(q), shape (nv, nv).
    fn mass_matrix<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let q = self.q(q, "q")?;
        let m = self.run(py, |m, d| dynamics::crba(m, d, &q).cloned())?;
        Ok(out_mat(py, &m))
    }
    /// Coriolis, centrifugal and gravity forces c(q, v), shape (nv,).
    fn bias_forces<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (q, v) = (self.q(q, "q")?, self.v(v, "v")?);
        let c = self.run(py, |m, d| dynamics::bias_forces(m, d, &q, &v).cloned())?;
        Ok(out_vec(py, c.as_slice()))
    }
    /// Generalized gravity forces g(q), shape (nv,).
    fn gravity_forces<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let q = self.q(q, "q")?;
        let g = self.run(py, |m, d| dynamics::gravity_forces(m, d, &q).cloned())?;
        Ok(out_vec(py, g.as_slice()))
    }
    /// Inverse dynamics (RNEA): tau = M(q) a + c(q, v) - J^T f_ext, shape (nv,).
    /// `wrenches`: optional world-frame body wrenches `[torque, force]`, shape (nbodies, 6).
    #[pyo3(signature = (q, v, a, wrenches=None))]
    fn inverse_dynamics<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        a: &Bound<'py, PyAny>,
        wrenches: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (q, v, a) = (self.q(q, "q")?, self.v(v, "v")?, self.v(a, "a")?);
        let f = crate::convert::wrenches(wrenches, self.model.nbodies())?;
        let tau = self.run(py, |m, d| dynamics::rnea(m, d, &q, &v, &a, f.as_deref()).cloned())?;
        Ok(out_vec(py, tau.as_slice()))
    }
    /// Forward dynamics (ABA): the joint accelerations, shape (nv,).
    /// `wrenches`: optional world-frame body wrenches `[torque, force]`, shape (nbodies, 6).
    #[pyo3(signature = (q, v, tau, wrenches=None))]
    fn forward_dynamics<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        tau: &Bound<'py, PyAny>,
        wrenches: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (q, v, tau) = (self.q(q, "q")?, self.v(v, "v")?, self.v(tau, "tau")?);
        let f = crate::convert::wrenches(wrenches, self.model.nbodies())?;
        let a = self.run(py, |m, d| dynamics::aba(m, d, &q, &v, &tau, f.as_deref()).cloned())?;
        Ok(out_vec(py, a.as_slice()))
    }
    /// Analytic derivatives of inverse dynamics (RNEA) at `(q, v, a)`:
    /// returns `(dtau_dq, dtau_dv, M)`, each of shape (nv, nv). The columns of
    /// `dtau_dq` are in the tangent space (derivative along `q ⊕ ε eᵢ`, nv columns
    /// even for quaternion joints); `M` is the mass matrix at `q`.
    /// `wrenches`: optional world-frame body wrenches `[torque, force]`, shape (nbodies, 6).
    #[pyo3(signature = (q, v, a, wrenches=None))]
    fn rnea_derivatives<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        a: &Bound<'py, PyAny>,
        wrenches: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<DerivativeResult<'py>> {
        let (q, v, a) = (self.q(q, "q")?, self.v(v, "v")?, self.v(a, "a")?);
        let f = crate::convert::wrenches(wrenches, self.model.nbodies())?;
        let (dq, dv, m) = self.run_deriv(py, |m, d, dd| {
            dynamics::rnea_derivatives(m, d, dd, &q, &v, &a, f.as_deref())?;
            let mass = dynamics::crba(m, d, &q)?.clone();
            Ok((dd.dtau_dq.clone(), dd.dtau_dv.clone(), mass))
        })?;
        Ok((out_owned_mat(py, dq), out_owned_mat(py, dv), out_owned_mat(py, m)))
    }
    /// Analytic derivatives of forward dynamics (ABA) at `(q, v, tau)`:
    /// returns `(da_dq, da_dv, Minv)`, each of shape (nv, nv), where `Minv = M⁻¹ = da/dtau`.
    /// The columns of `da_dq` are in the tangent space (derivative along `q ⊕ ε eᵢ`).
    /// `wrenches`: optional world-frame body wrenches `[torque, force]`, shape (nbodies, 6).
    #[pyo3(signature = (q, v, tau, wrenches=None))]
    fn aba_derivatives<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        tau: &Bound<'py, PyAny>,
        wrenches: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<DerivativeResult<'py>> {
        let (q, v, tau) = (self.q(q, "q")?, self.v(v, "v")?, self.v(tau, "tau")?);
        let f = crate::convert::wrenches(wrenches, self.model.nbodies())?;
        let (dq, dv, minv) =
            self.run_deriv(py, |m, d, dd| dynamics::aba_derivatives(m, d, dd, &q, &v, &tau, f.as_deref()))?;
        Ok((out_owned_mat(py, dq), out_owned_mat(py, dv), out_owned_mat(py, minv)))
    }
    /// World poses of every body as 4x4 homogeneous transforms, in body order.
    fn forward_kinematics<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyArray2<f64>>>> {
        let q = self.q(q, "q")?;
        let poses = self.run(py, |m, d| {
            dynamics::forward_kinematics(m, d, &q)?;
            Ok(d.x_world.clone())
        })?;
        Ok(poses.iter().map(|x| out_se3(py, x)).collect())
    }
    /// The 6 x nv Jacobian `[angular; linear]` of `body` (index or name), expressed in
    /// `frame`: 'world' (spatial velocity at the world origin), 'local' (body frame) or
    /// 'local_world_aligned' (at the body origin, world axes).
    /// A link merged into a body (fixed joint) is named like a body: its Jacobian is the
    /// body's, expressed at the link's frame.
    #[pyo3(signature = (q, body, frame="world"))]
    fn body_jacobian<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        body: BodyRef,
        frame: &str,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let q = self.q(q, "q")?;
        let target = self.frame(body)?;
        let frame = reference_frame(frame)?;
        let j = self.run(py, |m, d| {
            dynamics::forward_kinematics(m, d, &q)?;
            dynamics::frame_jacobian(m, d, target, frame)
        })?;
        Ok(out_mat(py, &j))
    }
    /// The world pose (4x4 homogeneous transform) of the link `name` at configuration
    /// `q`: a body, or a link merged into a body by fixed-joint merging.
    fn frame_pose<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        name: BodyRef,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let q = self.q(q, "q")?;
        let target = self.frame(name)?;
        let x = self.run(py, |m, d| {
            dynamics::forward_kinematics(m, d, &q)?;
            dynamics::frame_pose(m, d, target)
        })?;
        Ok(out_se3(py, &x))
    }
    /// The contacts at configuration `q`: every feature pair of two shapes closer than
    /// `margin` (metres, >= 0; 0: touching or overlapping), as a dict:
    /// `points` (N, 3) contact points (midway between the surfaces), `normals` (N, 3)
    /// unit normals from shape A to shape B, `distances` (N,) signed distances
    /// (negative: overlap), `body_a`, `body_b` (link names, "world" for the world's own
    /// shapes), `shape_a`, `shape_b` (N,) indices of the collision shapes, `kinds`
    /// ("face-vertex", "edge-edge", ...) and `features` (pairs such as
    /// ("face 0", "vertex 2")). With `jacobians=True`, also `point_jacobians`
    /// (N, 3, nv), `normal_jacobians` (N, 3, nv) and `distance_jacobians` (N, nv):
    /// derivatives with respect to q in the tangent space.
    #[pyo3(signature = (q, margin=0.0, jacobians=false))]
    fn contacts<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        margin: f64,
        jacobians: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (contacts, jac) = self.contacts_at(py, q, margin, jacobians)?;
        crate::contacts::contacts_dict(py, &self.model, &contacts, jac.as_deref())
    }
    /// Number of compiled collision shapes (every body's, in body order, then the world's).
    #[getter]
    fn nshapes(&self) -> usize {
        self.model.collision_model().shapes.len()
    }
    /// The parent body of every body, in body order (`None`: the world).
    #[getter]
    fn parents(&self) -> Vec<Option<usize>> {
        self.model.parents().to_vec()
    }
    /// The compiled collision shapes, in the order of `nshapes` (every body's, in body
    /// order, then the world's), each a dict: `kind`, `body` (the body index, `None` for
    /// the world's shapes), `pose` (4x4, the shape frame in the body frame; in the world
    /// for the world's shapes), `radius`, `vertices` (k, 3) and `triangles` (m, 3) of the
    /// shape's core in the shape frame (what viewers draw; docs/viz.md).
    fn collision_shapes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.model
            .collision_model()
            .shapes
            .iter()
            .map(|s| {
                let d = crate::shapes::shape_dict(py, s)?;
                d.set_item("body", s.body)?;
                Ok(d)
            })
            .collect()
    }
    /// The visual shapes (URDF `<visual>` elements), body by body, each a dict: `body`,
    /// `name`, `kind` (`"sphere"`, `"box"`, `"capsule"`, `"cylinder"`, `"mesh"`, `"plane"`),
    /// `pose` (4x4, the shape frame in the body frame), `radius`, `vertices` (k, 3) and
    /// `triangles` (m, 3) in the shape frame, `color` (RGBA or `None`), `file` (the mesh
    /// file or `None`). Mesh files are read here; a missing or unreadable one is left out
    /// with a `stiction.LoadWarning` (docs/viz.md).
    fn visual_shapes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        crate::shapes::visual_dicts(py, &self.model)
    }
    /// World poses (4x4) of the collision shapes at `q` (nq,): shape (nshapes, 4, 4); or at
    /// every row of a trajectory `Q` (T, nq): shape (T, nshapes, 4, 4).
    /// Raises `InputError` for another shape or a non-finite entry.
    fn shape_poses<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, numpy::PyArrayDyn<f64>>> {
        let nq = self.model.nq();
        let (lead, data) = crate::shapes::configurations(q, "q", nq, "model.nq")?;
        let poses = self.run(py, |m, d| {
            let shapes = &m.collision_model().shapes;
            let mut out = Vec::new();
            let rows = lead.first().copied().unwrap_or(1);
            for r in 0..rows {
                dynamics::forward_kinematics(m, d, &data[r * nq..(r + 1) * nq])?;
                out.extend(shapes.iter().map(|s| s.world_pose(&d.x_world)));
            }
            Ok(out)
        })?;
        let mut lead = lead;
        lead.push(self.model.collision_model().shapes.len());
        Ok(crate::shapes::out_poses(py, &lead, &poses))
    }
    /// Kinetic energy 1/2 v^T M v (armature included).
    fn kinetic_energy(&self, py: Python<'_>, q: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>) -> PyResult<f64> {
        let (q, v) = (self.q(q, "q")?, self.v(v, "v")?);
        self.run(py, |m, d| dynamics::kinetic_energy(m, d, &q, &v))
    }
    /// Gravitational plus spring potential energy.
    fn potential_energy(&self, py: Python<'_>, q: &Bound<'_, PyAny>) -> PyResult<f64> {
        let q = self.q(q, "q")?;
        self.run(py, |m, d| dynamics::potential_energy(m, d, &q))
    }
    /// Centre of mass in world coordinates, shape (3,).
    fn center_of_mass<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let q = self.q(q, "q")?;
        let c = self.run(py, |m, d| dynamics::center_of_mass(m, d, &q))?;
        Ok(out_vec(py, c.as_slice()))
    }
    /// Spatial momentum `[angular; linear]` about the world origin, shape (6,).
    fn momentum<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (q, v) = (self.q(q, "q")?, self.v(v, "v")?);
        let h = self.run(py, |m, d| dynamics::momentum(m, d, &q, &v))?;
        Ok(out_vec(py, h.to_vector().as_slice()))
    }
    /// A copy of this model with another gravity vector.
    fn with_gravity(&self, g: &Bound<'_, PyAny>) -> PyResult<Self> {
        let g = crate::convert::vec3(g, "gravity")?;
        Ok(PyModel::new(self.model.with_gravity(g).py_err()?))
    }

    pub(crate) fn __repr__(&self) -> String {
        format!(
            "Model(name={:?}, nq={}, nv={}, nbodies={})",
            self.model.name(),
            self.model.nq(),
            self.model.nv(),
            self.model.nbodies()
        )
    }
    fn __eq__(&self, other: PyRef<'_, Self>) -> bool {
        self.model == other.model
    }
    fn __copy__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }
    fn __deepcopy__<'py>(slf: PyRef<'py, Self>, _memo: &Bound<'py, PyAny>) -> PyRef<'py, Self> {
        slf
    }
    /// Pickles through JSON.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let ctor = py.get_type::<PyModel>().getattr("from_json")?;
        Ok((ctor, PyTuple::new(py, [self.model.to_json().py_err()?])?))
    }
}
