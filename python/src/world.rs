//! `stiction.World` and its systems (`Particles`, `StaticGeometry`, a `Model` as an
//! articulation), `stiction.WorldStepRecord` and `stiction.WorldTape`: several systems
//! stepped through one constraint stage, with the step's vector-Jacobian product and
//! the reverse sweep of a rollout (`stiction::world`, docs/world.md).

use crate::constraints::state_name;
use crate::convert::{array, dvector, matrix, out_mat, out_rows, out_vec, shape_str, type_name, vec3};
use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use crate::simulator::threads_arg;
use crate::soft::{max_iterations_arg, options as soft_options, PySoftBody};
use nalgebra::DVector;
use numpy::{IntoPyArray, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PySlice, PyTuple};
use std::sync::Arc;
use stiction::collision::{Material, ShapeInstance};
use stiction::math::{Vec3, SE3};
use stiction::soft::{SoftIntegrator, SoftOptions};
use stiction::solver::ncp::NcpSolver;
use stiction::solver::{BoxedLcpSolver, ConstraintSolver, PpmSolver};
use stiction::step::ContactModel;
use stiction::world::{
    Articulation, ContactSide, Particles, SoftSystem, StaticGeometry, System, World, WorldBatchRollout, WorldOptions,
    WorldState, WorldStepRecord, WorldTape,
};

/// A friction coefficient: finite and non-negative.
fn friction_arg(mu: f64) -> PyResult<f64> {
    if mu.is_finite() && mu >= 0.0 {
        Ok(mu)
    } else {
        Err(input_error(format!("friction must be finite and >= 0, got {mu}")))
    }
}

/// A coefficient of restitution in [0, 1].
fn restitution_arg(e: f64) -> PyResult<f64> {
    if e.is_finite() && (0.0..=1.0).contains(&e) {
        Ok(e)
    } else {
        Err(input_error(format!("restitution must be in [0, 1], got {e}")))
    }
}

/// Point masses with spherical collision shapes, under gravity and control forces: a
/// system of a `World`. Particle `i` has position `q[3i:3i+3]`, velocity `v[3i:3i+3]`
/// and control force `u[3i:3i+3]` (world frame, N); one step is semi-implicit Euler
/// `v⁺ = v + h (g + u/m) + M⁻¹ Jᵀ f`, `x⁺ = x + h v⁺`. Immutable.
#[pyclass(name = "Particles", module = "stiction", frozen)]
pub struct PyParticles {
    inner: Arc<Particles>,
    radii: Vec<f64>,
    gravity: Vec3,
}

#[pymethods]
impl PyParticles {
    /// Particles of the given `masses` (kg, finite and positive) and `radii` (m, finite
    /// and non-negative; one number for all), all of Coulomb `friction` and
    /// `restitution` (the world step has no restitution yet), under `gravity` (m/s²).
    /// `self_collision`: whether the particles collide with each other.
    /// Raises `InputError` for mismatched lengths or invalid values.
    #[new]
    #[pyo3(signature = (masses, radii, friction=0.8, restitution=0.0, gravity=None, self_collision=true))]
    fn new(
        masses: &Bound<'_, PyAny>,
        radii: &Bound<'_, PyAny>,
        friction: f64,
        restitution: f64,
        gravity: Option<&Bound<'_, PyAny>>,
        self_collision: bool,
    ) -> PyResult<Self> {
        let m = array(masses, "masses")?;
        if m.shape.len() != 1 {
            return Err(input_error(format!("masses must be a 1-D array, got shape {}", shape_str(&m.shape))));
        }
        let r = array(radii, "radii")?;
        let radii = match r.shape.as_slice() {
            [] => vec![r.data[0]; m.data.len()],
            [_] => r.data,
            shape => {
                return Err(input_error(format!(
                    "radii must be a number or a 1-D array, got shape {}",
                    shape_str(shape)
                )))
            }
        };
        let gravity = match gravity.filter(|g| !g.is_none()) {
            Some(g) => vec3(g, "gravity")?,
            None => Vec3::new(0.0, 0.0, -9.81),
        };
        let material = Material::new(friction_arg(friction)?, restitution_arg(restitution)?);
        let inner = Particles::new(&m.data, &radii, material, gravity).py_err()?.with_self_collision(self_collision);
        Ok(Self { inner: Arc::new(inner), radii, gravity })
    }

    /// The number of particles.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// The masses (kg), shape (n,).
    #[getter]
    fn masses<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.inner.masses())
    }

    /// The radii (m), shape (n,).
    #[getter]
    fn radii<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, &self.radii)
    }

    /// The gravity (m/s²), shape (3,).
    #[getter]
    fn gravity<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.gravity.as_slice())
    }

    fn __repr__(&self) -> String {
        format!("Particles(n={})", self.inner.len())
    }
}

/// Shapes fixed in the world (no degrees of freedom): a system of a `World`, and the
/// `None` side of its contacts. Build one with `StaticGeometry.ground`. Immutable.
#[pyclass(name = "StaticGeometry", module = "stiction", frozen)]
pub struct PyStaticGeometry {
    inner: Arc<StaticGeometry>,
}

#[pymethods]
impl PyStaticGeometry {
    /// The ground: the half-space `z <= 0`, of Coulomb `friction` and `restitution`;
    /// with `tilt` (rad) rotated about the world y axis (an incline going down towards
    /// +x for a positive tilt), then raised by `height` (m).
    /// Raises `InputError` for invalid values.
    #[staticmethod]
    #[pyo3(signature = (friction=0.8, restitution=0.0, tilt=0.0, height=0.0))]
    fn ground(friction: f64, restitution: f64, tilt: f64, height: f64) -> PyResult<Self> {
        let material = Material::new(friction_arg(friction)?, restitution_arg(restitution)?);
        if !(tilt.is_finite() && height.is_finite()) {
            return Err(input_error(format!("tilt and height must be finite, got tilt = {tilt}, height = {height}")));
        }
        let ground = StaticGeometry::ground(material);
        let inner = if tilt == 0.0 && height == 0.0 {
            ground
        } else {
            let pose = SE3::from_translation(Vec3::new(0.0, 0.0, height)) * SE3::from_axis_angle(&Vec3::y(), tilt);
            let shapes = ground.shapes().iter().map(|s| ShapeInstance { local: pose, ..s.clone() }).collect();
            StaticGeometry::new(shapes).py_err()?
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The number of shapes.
    #[getter]
    fn num_shapes(&self) -> usize {
        self.inner.shapes().len()
    }

    fn __repr__(&self) -> String {
        format!("StaticGeometry(shapes={})", self.inner.shapes().len())
    }
}

/// The default Coulomb friction of a soft body's contact vertices.
const SOFT_FRICTION: f64 = 0.8;

/// A `SoftSystem` of `body` with the given contact and Newton settings (the step's `dt`
/// is the world's). `InputError` for a negative or non-finite friction or radius, a
/// non-positive tolerance or an unknown integrator.
#[allow(clippy::too_many_arguments)]
fn soft_system(
    body: &PySoftBody,
    friction: f64,
    radius: f64,
    integrator: &str,
    tolerance: f64,
    max_iterations: usize,
    line_search: bool,
    linear_solver: &str,
) -> PyResult<SoftSystem> {
    let friction = friction_arg(friction)?;
    if !(tolerance.is_finite() && tolerance > 0.0) {
        return Err(input_error(format!("tolerance must be finite and positive, got {tolerance}")));
    }
    let options =
        soft_options(SoftOptions::default().dt, tolerance, max_iterations, line_search, integrator, linear_solver)?;
    SoftSystem::new(body.body().clone(), options, Material::new(friction, 0.0), radius).py_err()
}

/// The name `integrator_arg` parses.
fn integrator_name(integrator: SoftIntegrator) -> &'static str {
    match integrator {
        SoftIntegrator::BackwardEuler => "backward_euler",
        SoftIntegrator::ImplicitMidpoint => "implicit_midpoint",
    }
}

/// A `SoftBody` as a system of a `World`, with explicit contact and step settings: its
/// boundary vertices (`contact_vertices`) collide as spheres of `radius` (m; 0: points)
/// of Coulomb `friction` with the ground, static geometry and the shapes of the other
/// systems (not with each other). Its blocks of the world's `q`, `v` and `u` are the
/// body's vertex positions, velocities and forces (3 per vertex, `body.ndof` each). Each
/// world step runs the body's implicit step (`integrator`, Newton to `tolerance` within
/// `max_iterations`, `line_search`) with the world's `dt`, and the contact impulses act
/// through the Hessian of that step, so elasticity answers them within the step; pinned
/// coordinates stay where they are. A `SoftBody` passed to `World` directly gets the
/// defaults. Immutable.
#[pyclass(name = "SoftSystem", module = "stiction", frozen)]
pub struct PySoftSystem {
    inner: Arc<SoftSystem>,
    body: Py<PySoftBody>,
    friction: f64,
    radius: f64,
}

#[pymethods]
impl PySoftSystem {
    /// `body` in a world, its boundary vertices colliding as spheres of `radius` (m,
    /// finite and >= 0) with Coulomb `friction` (finite and >= 0); `integrator`
    /// (`"backward_euler"` or `"implicit_midpoint"`), `tolerance`, `max_iterations` and
    /// `line_search` and `linear_solver` (the body's own step; the contact coupling always
    /// factors its Hessian directly) as in `SoftBody.step`. Raises `InputError` for
    /// invalid values.
    #[new]
    #[pyo3(signature = (body, friction=SOFT_FRICTION, radius=0.0, integrator="backward_euler", tolerance=1e-10,
                        max_iterations=50, line_search=true, linear_solver="direct"))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        body: Bound<'_, PySoftBody>,
        friction: f64,
        radius: f64,
        integrator: &str,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        line_search: bool,
        linear_solver: &str,
    ) -> PyResult<Self> {
        let inner = soft_system(
            body.get(),
            friction,
            radius,
            integrator,
            tolerance,
            max_iterations,
            line_search,
            linear_solver,
        )?;
        Ok(Self { inner: Arc::new(inner), body: body.unbind(), friction, radius })
    }

    /// The soft body.
    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PySoftBody> {
        self.body.clone_ref(py)
    }

    /// The boundary vertices that collide, ascending, int64: element `k` of a contact's
    /// side `(system, k)` is vertex `contact_vertices[k]`.
    #[getter]
    fn contact_vertices<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<i64>> {
        self.inner.contact_vertices().iter().map(|&v| v as i64).collect::<Vec<_>>().into_pyarray(py)
    }

    /// The Coulomb friction coefficient of the contact vertices.
    #[getter]
    fn friction(&self) -> f64 {
        self.friction
    }

    /// The contact radius of the vertices (m).
    #[getter]
    fn radius(&self) -> f64 {
        self.radius
    }

    /// The integrator of the body's step, `"backward_euler"` or `"implicit_midpoint"`.
    #[getter]
    fn integrator(&self) -> &'static str {
        integrator_name(self.inner.options().integrator)
    }

    fn __repr__(&self) -> String {
        format!(
            "SoftSystem({}, friction={}, radius={}, integrator='{}')",
            self.inner.name(),
            self.friction,
            self.radius,
            self.integrator()
        )
    }
}

/// A system argument of `World`: a `Model` (an articulation), `Particles`,
/// `StaticGeometry`, a `SoftSystem`, or a `SoftBody` (a `SoftSystem` with the defaults).
fn system_arg(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<Arc<dyn System>> {
    if let Ok(m) = obj.cast::<PyModel>() {
        return Ok(Arc::new(Articulation::new(Arc::new(m.get().model.clone()))));
    }
    if let Ok(p) = obj.cast::<PyParticles>() {
        return Ok(p.get().inner.clone());
    }
    if let Ok(s) = obj.cast::<PyStaticGeometry>() {
        return Ok(s.get().inner.clone());
    }
    if let Ok(s) = obj.cast::<PySoftSystem>() {
        return Ok(s.get().inner.clone());
    }
    if let Ok(b) = obj.cast::<PySoftBody>() {
        let d = SoftOptions::default();
        let inner =
            soft_system(b.get(), SOFT_FRICTION, 0.0, "backward_euler", d.tolerance, d.max_iterations, true, "direct")?;
        return Ok(Arc::new(inner));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(format!(
        "systems[{index}] must be a Model, Particles, StaticGeometry, SoftSystem or SoftBody, got {}",
        type_name(obj)
    )))
}

/// Several systems stepped together through one constraint stage: contacts between
/// any two of them (and within a system that allows it) become rows
/// `J_r v = W_r · (V_B − V_A)` of one boxed LCP over the Delassus operator
/// `A = Σ_s J_s M̃_s⁻¹ J_sᵀ`. The global vectors concatenate the systems' blocks in the
/// order given: `q = [q_0; q_1; …]`, likewise `v` and the controls `u` (joint torques of
/// a `Model`, forces of `Particles`, vertex forces of a soft body, nothing for
/// `StaticGeometry`); `blocks(i)` gives the slices of system i. Immutable: `add_soft_body`
/// returns a new world.
#[pyclass(name = "World", module = "stiction", frozen)]
pub struct PyWorld {
    world: World,
}

/// `(Q, V)` of a rollout, as row-major data.
type Trajectory = (Vec<f64>, Vec<f64>);

impl PyWorld {
    fn state(&self, q: &Bound<'_, PyAny>, v: &Bound<'_, PyAny>) -> PyResult<WorldState> {
        Ok(WorldState {
            q: dvector(q, "q", self.world.nq(), "world.nq")?,
            v: dvector(v, "v", self.world.nv(), "world.nv")?,
        })
    }

    fn control(&self, u: Option<&Bound<'_, PyAny>>) -> PyResult<DVector<f64>> {
        match u.filter(|u| !u.is_none()) {
            Some(u) => dvector(u, "u", self.world.nu(), "world.nu"),
            None => Ok(DVector::zeros(self.world.nu())),
        }
    }
}

#[pymethods]
impl PyWorld {
    /// A world of `systems` (a list of `Model`, `Particles`, `StaticGeometry`,
    /// `SoftSystem` and `SoftBody` — the latter a `SoftSystem` with the default
    /// settings —, in the order of the global vectors) with time step `dt`; `margin` (m, contacts are
    /// created for pairs closer than this) and `erp` (penetration recovery rate in
    /// [0, 1]) default to the simulator's contact defaults. A `Model` steps with its own
    /// gravity (see `Model.with_gravity`). `friction` is `"coulomb"` (two rows per
    /// contact boxed by ±μ f_n) or `"no_slip"` (two equality rows per contact);
    /// `solver` is `"boxed_lcp"` or `"ppm"` (unilateral and equality rows only: no-slip
    /// worlds). Raises `TypeError` for another kind of system and `InputError` for
    /// invalid options.
    #[new]
    #[pyo3(signature = (systems, dt=1e-3, margin=None, erp=None, friction="coulomb", solver="boxed_lcp"))]
    fn new(
        systems: Vec<Bound<'_, PyAny>>,
        dt: f64,
        margin: Option<f64>,
        erp: Option<f64>,
        friction: &str,
        solver: &str,
    ) -> PyResult<Self> {
        let systems =
            systems.iter().enumerate().map(|(i, s)| system_arg(s, i)).collect::<PyResult<Vec<Arc<dyn System>>>>()?;
        let friction = match friction {
            "coulomb" => ContactModel::Coulomb,
            "no_slip" => ContactModel::NoSlip,
            other => return Err(input_error(format!("world friction must be 'coulomb' or 'no_slip', got '{other}'"))),
        };
        let solver: Arc<dyn ConstraintSolver> = match solver {
            "boxed_lcp" => Arc::new(BoxedLcpSolver::default()),
            "ppm" => Arc::new(PpmSolver::default()),
            "ncp" => Arc::new(NcpSolver::default()),
            other => {
                return Err(input_error(format!("world solver must be 'boxed_lcp', 'ppm' or 'ncp', got '{other}'")))
            }
        };
        let d = WorldOptions::default();
        let options = WorldOptions { dt, margin: margin.unwrap_or(d.margin), erp: erp.unwrap_or(d.erp), friction };
        Ok(Self { world: World::with_solver(systems, solver, options).py_err()? })
    }

    /// A new world: this one's systems followed by the soft body `body` as the last
    /// system (a `SoftSystem` with these settings, see there), with the same `dt`,
    /// `margin`, `erp`, friction model and solver. The world itself is unchanged
    /// (worlds are immutable); the new world's `q`, `v` and `u` end with the body's
    /// block (`blocks(-1)`). Raises `InputError` for invalid settings.
    #[pyo3(signature = (body, friction=SOFT_FRICTION, radius=0.0, integrator="backward_euler", tolerance=1e-10,
                        max_iterations=50, line_search=true, linear_solver="direct"))]
    #[allow(clippy::too_many_arguments)]
    fn add_soft_body(
        &self,
        body: &PySoftBody,
        friction: f64,
        radius: f64,
        integrator: &str,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        line_search: bool,
        linear_solver: &str,
    ) -> PyResult<Self> {
        let soft =
            soft_system(body, friction, radius, integrator, tolerance, max_iterations, line_search, linear_solver)?;
        let mut systems = self.world.systems().to_vec();
        systems.push(Arc::new(soft));
        let world = World::with_solver(systems, self.world.solver().clone(), *self.world.options())
            .and_then(|w| w.with_attachments(self.world.attachments().to_vec()))
            .py_err()?;
        Ok(Self { world })
    }

    /// A new world with `vertices` (elements of system `system`, e.g. a soft body's
    /// vertices) welded where they are at configuration `q` to element `to = (system,
    /// element)` (a body of an articulation, a vertex, a particle) or, with `to=None`, to
    /// the world: three bilateral rows per vertex in the constraint stage, added to the
    /// attachments already there. Raises `InputError` for indices out of range or a `q`
    /// of the wrong length.
    #[pyo3(signature = (q, system, vertices, to=None))]
    fn weld(
        &self,
        q: &Bound<'_, PyAny>,
        system: usize,
        vertices: Vec<usize>,
        to: Option<(usize, usize)>,
    ) -> PyResult<Self> {
        let q = dvector(q, "q", self.world.nq(), "world.nq")?;
        let mut all = self.world.attachments().to_vec();
        all.extend(self.world.weld(&q, system, &vertices, to).py_err()?);
        Ok(Self { world: self.world.clone().with_attachments(all).py_err()? })
    }

    /// The number of attachments (three constraint rows each, after the contacts' rows).
    #[getter]
    fn num_attachments(&self) -> usize {
        self.world.attachments().len()
    }

    /// The names of the differentiable parameters θ, `"s/name"` for parameter `name` of
    /// system `s` (a soft body's `youngs_modulus:TAG`, `poisson:TAG`, `density:TAG`,
    /// `damping_mass`, `damping_stiffness`).
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.world.param_names()
    }

    /// The values of θ, shape (len(param_names),).
    fn param_values<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.world.param_values().as_slice())
    }

    /// A new world with θ set to `theta` (attachments, solver and options kept). Raises
    /// `InputError` for a wrong length or a value out of its domain (e.g. ν ≥ 0.5).
    fn with_param_values(&self, theta: &Bound<'_, PyAny>) -> PyResult<Self> {
        let theta = dvector(theta, "theta", self.world.num_params(), "len(world.param_names)")?;
        Ok(Self { world: self.world.with_param_values(&theta).py_err()? })
    }

    /// The friction model, `"coulomb"` or `"no_slip"`.
    #[getter]
    fn friction(&self) -> &'static str {
        self.world.options().friction.name()
    }

    /// The constraint solver's name (`"boxed LCP"`, `"PPM"` or `"NCP (non-smooth Newton)"`).
    #[getter]
    fn solver(&self) -> &'static str {
        self.world.solver().name()
    }

    /// The size of the global configuration `q`.
    #[getter]
    pub(crate) fn nq(&self) -> usize {
        self.world.nq()
    }

    /// The size of the global velocity `v` (and of gradients with respect to `q`,
    /// which are tangent).
    #[getter]
    pub(crate) fn nv(&self) -> usize {
        self.world.nv()
    }

    /// The size of the global control `u`.
    #[getter]
    fn nu(&self) -> usize {
        self.world.nu()
    }

    /// The time step (s).
    #[getter]
    pub(crate) fn dt(&self) -> f64 {
        self.world.options().dt
    }

    /// The contact margin (m).
    #[getter]
    fn margin(&self) -> f64 {
        self.world.options().margin
    }

    /// The penetration recovery rate.
    #[getter]
    fn erp(&self) -> f64 {
        self.world.options().erp
    }

    /// The number of systems.
    #[getter]
    fn num_systems(&self) -> usize {
        self.world.systems().len()
    }

    /// Every system's collision shapes, system by system, each a dict (docs/viz.md):
    /// `system`, `shape` (its index in the system), `element` (the body, particle or
    /// vertex carrying it; `None` for static shapes), `kind`, `pose` (4x4, the shape frame
    /// on its element; in the world for static shapes), `radius`, `vertices` (k, 3) and
    /// `triangles` (m, 3) of the core in the shape frame.
    fn collision_shapes<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let mut out = Vec::new();
        for (i, sys) in self.world.systems().iter().enumerate() {
            for (k, s) in sys.shapes().iter().enumerate() {
                let d = crate::shapes::shape_dict(py, s)?;
                d.set_item("system", i)?;
                d.set_item("shape", k)?;
                d.set_item("element", sys.shape_element(k))?;
                out.push(d);
            }
        }
        Ok(out)
    }

    /// World poses (4x4) of every shape of `collision_shapes` at `q` (nq,): shape (S, 4, 4);
    /// or at every row of a trajectory `Q` (T, nq): shape (T, S, 4, 4).
    /// Raises `InputError` for another shape, a non-finite entry or an invalid
    /// configuration.
    fn shape_poses<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, numpy::PyArrayDyn<f64>>> {
        let nq = self.world.nq();
        let (mut lead, data) = crate::shapes::configurations(q, "q", nq, "world.nq")?;
        let rows = lead.first().copied().unwrap_or(1);
        let world = &self.world;
        let poses = py.detach(|| -> stiction::Result<Vec<SE3>> {
            let mut out = Vec::new();
            for r in 0..rows {
                let q = &data[r * nq..(r + 1) * nq];
                for (i, sys) in world.systems().iter().enumerate() {
                    let (qr, _, _) = world.blocks(i).expect("system in range");
                    // One pose per element, computed once per row.
                    let mut cache: std::collections::HashMap<usize, SE3> = std::collections::HashMap::new();
                    for (k, s) in sys.shapes().iter().enumerate() {
                        let pose = match sys.shape_element(k) {
                            Some(e) => {
                                let x = match cache.get(&e) {
                                    Some(x) => *x,
                                    None => {
                                        let x = sys.element_pose(&q[qr.clone()], e)?;
                                        cache.insert(e, x);
                                        x
                                    }
                                };
                                x * s.local
                            }
                            None => s.local,
                        };
                        out.push(pose);
                    }
                }
            }
            Ok(out)
        });
        let poses = poses.py_err()?;
        lead.push(self.world.systems().iter().map(|s| s.shapes().len()).sum());
        Ok(crate::shapes::out_poses(py, &lead, &poses))
    }

    /// The drawn surface of each system, in order: triangles (k, 3) int64 over the
    /// system's elements — a soft body's boundary triangles over its vertices, whose
    /// positions are `q[blocks(i)[0]].reshape(-1, 3)` — and an empty (0, 3) array for
    /// systems drawn by their collision shapes.
    fn surfaces<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, numpy::PyArray2<i64>>> {
        self.world.systems().iter().map(|s| crate::shapes::out_triangles(py, &s.surface_triangles())).collect()
    }

    /// A short description of each system, in order.
    #[getter]
    fn system_names(&self) -> Vec<String> {
        self.world.systems().iter().map(|s| s.name()).collect()
    }

    /// The slices `(q_slice, v_slice, u_slice)` of system `i` in the global
    /// configuration, velocity and control vectors (negative `i` counts from the end),
    /// e.g. `q[world.blocks(1)[0]]`. Raises `IndexError` for `i` out of range.
    fn blocks<'py>(&self, py: Python<'py>, i: isize) -> PyResult<Bound<'py, PyTuple>> {
        let n = self.world.systems().len() as isize;
        let s = if i < 0 { i + n } else { i };
        let (q, v, u) = (s >= 0)
            .then(|| self.world.blocks(s as usize))
            .flatten()
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err(format!("system {i} out of range ({n} systems)")))?;
        let slice = |r: std::ops::Range<usize>| PySlice::new(py, r.start as isize, r.end as isize, 1);
        PyTuple::new(py, [slice(q), slice(v), slice(u)])
    }

    /// One step from `(q, v)` under the controls `u` (`None`: zero); returns
    /// `(q_next, v_next)`. Raises `InputError` for wrong lengths or non-finite values
    /// (the message names the system), `NumericalError` for a solver failure or a
    /// non-finite result.
    #[pyo3(signature = (q, v, u=None))]
    pub(crate) fn step<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        u: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let state = self.state(q, v)?;
        let u = self.control(u)?;
        let next = py.detach(|| self.world.step(&state, &u)).py_err()?;
        PyTuple::new(py, [out_vec(py, next.q.as_slice()), out_vec(py, next.v.as_slice())])
    }

    /// One step as `step`, returning its `WorldStepRecord` (the next state, the
    /// contacts, the impulses and the vector-Jacobian product).
    #[pyo3(signature = (q, v, u=None))]
    pub(crate) fn step_recorded(
        &self,
        py: Python<'_>,
        q: &Bound<'_, PyAny>,
        v: &Bound<'_, PyAny>,
        u: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyWorldStepRecord> {
        let state = self.state(q, v)?;
        let u = self.control(u)?;
        let record = py.detach(|| self.world.step_recorded(&state, &u)).py_err()?;
        Ok(PyWorldStepRecord { record, nv: self.world.nv() })
    }

    /// `T` steps from `(q, v)` under the controls `controls` (shape (T, nu)); returns
    /// `(Q, V, tape)` with the states after each step, shapes (T, nq) and (T, nv), and
    /// the `WorldTape` of the steps. A failing step's error names it.
    pub(crate) fn rollout<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        controls: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let state = self.state(q, v)?;
        let (nq, nv, nu) = (self.world.nq(), self.world.nv(), self.world.nu());
        let (steps, data) = matrix(controls, "controls", None, nu)?;
        let controls: Vec<DVector<f64>> = if nu == 0 {
            vec![DVector::zeros(0); steps]
        } else {
            data.chunks_exact(nu).map(DVector::from_column_slice).collect()
        };
        let ((qs, vs), tape) = py
            .detach(|| -> stiction::Result<(Trajectory, WorldTape)> {
                let (states, tape) = self.world.rollout_recorded(&state, &controls)?;
                let qs = states.iter().flat_map(|s| s.q.iter().copied()).collect();
                let vs = states.iter().flat_map(|s| s.v.iter().copied()).collect();
                Ok(((qs, vs), tape))
            })
            .py_err()?;
        let tape = Bound::new(py, PyWorldTape { tape, nv, nu })?.into_any();
        PyTuple::new(py, [out_rows(py, steps, nq, qs)?.into_any(), out_rows(py, steps, nv, vs)?.into_any(), tape])
    }

    /// `B` independent recorded rollouts in one call, in parallel (rayon, GIL released):
    /// start states `q0` (B, nq) and `v0` (B, nv), controls `controls` (B, T, nu), and
    /// optionally per-rollout values `thetas` (B, len(param_names)) of θ (rollout b then
    /// runs on `with_param_values(thetas[b])`). Rollout b equals `rollout` bit for bit,
    /// whatever `threads` (`None`: all cores). Returns `(Q, V, tapes)`: shapes (B, T, nq)
    /// and (B, T, nv), and a `WorldTape` per rollout. Raises `InputError` for wrong shapes
    /// or non-finite values and for a failing rollout (naming it and the step),
    /// `NumericalError` for a solver failure.
    #[pyo3(signature = (q0, v0, controls, thetas=None, threads=None))]
    fn rollout_batch<'py>(
        &self,
        py: Python<'py>,
        q0: &Bound<'py, PyAny>,
        v0: &Bound<'py, PyAny>,
        controls: &Bound<'py, PyAny>,
        thetas: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (nq, nv, nu, np) = (self.world.nq(), self.world.nv(), self.world.nu(), self.world.num_params());
        let (b, qs) = matrix(q0, "q0", None, nq)?;
        let (_, vs) = matrix(v0, "v0", Some(b), nv)?;
        let c = array(controls, "controls")?;
        let steps = match c.shape.as_slice() {
            [bb, t, n] if *bb == b && *n == nu => *t,
            shape => {
                return Err(input_error(format!(
                    "controls must have shape (B, T, nu) = ({b}, T, {nu}), got shape {}",
                    shape_str(shape)
                )))
            }
        };
        let thetas = match thetas.filter(|t| !t.is_none()) {
            Some(th) => Some(matrix(th, "thetas", Some(b), np)?.1),
            None => None,
        };
        let batch: Vec<WorldBatchRollout> = (0..b)
            .map(|i| WorldBatchRollout {
                state: WorldState {
                    q: DVector::from_column_slice(&qs[i * nq..(i + 1) * nq]),
                    v: DVector::from_column_slice(&vs[i * nv..(i + 1) * nv]),
                },
                controls: (0..steps)
                    .map(|k| DVector::from_column_slice(&c.data[(i * steps + k) * nu..(i * steps + k + 1) * nu]))
                    .collect(),
                theta: thetas.as_ref().map(|th| DVector::from_column_slice(&th[i * np..(i + 1) * np])),
            })
            .collect();
        let out = py.detach(|| self.world.rollout_batch(&batch, threads)).py_err()?;
        let mut q_all = Vec::with_capacity(b * steps * nq);
        let mut v_all = Vec::with_capacity(b * steps * nv);
        for (states, _) in &out {
            for s in states {
                q_all.extend_from_slice(s.q.as_slice());
                v_all.extend_from_slice(s.v.as_slice());
            }
        }
        let shape3 = |data: Vec<f64>, n: usize| -> PyResult<Bound<'py, PyAny>> {
            Ok(out_rows(py, b * steps, n, data)?.reshape([b, steps, n])?.into_any())
        };
        let tapes = out
            .into_iter()
            .map(|(_, tape)| Ok(Bound::new(py, PyWorldTape { tape, nv, nu })?.into_any()))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, [shape3(q_all, nq)?, shape3(v_all, nv)?, pyo3::types::PyList::new(py, tapes)?.into_any()])
    }

    /// `q` (nq) with every quaternion normalised (articulations with ball or free joints;
    /// the other systems' coordinates are kept). Raises `InputError` for a wrong length,
    /// non-finite values or a quaternion far from unit length (norm outside [0.5, 2]).
    fn normalize<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q = dvector(q, "q", self.world.nq(), "world.nq")?;
        Ok(out_vec(py, self.world.normalize(&q).py_err()?.as_slice()))
    }

    /// A gradient `g` (nq) on the coordinates of `q` as a tangent gradient (nv), `Eᵀ g`
    /// with `E = ∂(q ⊕ δ)/∂δ`, system by system (`Model.tangent_gradient` for an
    /// articulation, the identity for particles and soft bodies): how a loss on the
    /// coordinates of `Q` reaches `WorldTape.backward`. Raises `InputError` for wrong
    /// lengths, non-finite values or a quaternion far from unit length.
    fn tangent_gradient<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        g: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q = dvector(q, "q", self.world.nq(), "world.nq")?;
        let g = dvector(g, "g", self.world.nq(), "world.nq")?;
        Ok(out_vec(py, self.world.tangent_gradient(&q, &g).py_err()?.as_slice()))
    }

    /// A tangent gradient `g` (nv) at `q` as a gradient on the coordinates of `q` (nq) for
    /// the function `q ↦ ℓ(normalize(q))`, system by system (`Model.coordinate_gradient`
    /// for an articulation: no component along a quaternion; the identity for particles and
    /// soft bodies). Raises `InputError` for wrong lengths, non-finite values or a
    /// quaternion far from unit length.
    fn coordinate_gradient<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        g: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q = dvector(q, "q", self.world.nq(), "world.nq")?;
        let g = dvector(g, "g", self.world.nv(), "world.nv")?;
        Ok(out_vec(py, self.world.coordinate_gradient(&q, &g).py_err()?.as_slice()))
    }

    /// `q ⊕ dq`: moves the configuration `q` (nq) along the tangent vector `dq` (nv),
    /// system by system (unit quaternions stay unit).
    fn retract<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        dq: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q = dvector(q, "q", self.world.nq(), "world.nq")?;
        let dq = dvector(dq, "dq", self.world.nv(), "world.nv")?;
        Ok(out_vec(py, self.world.retract(&q, &dq).py_err()?.as_slice()))
    }

    /// `q1 ⊖ q0`: the tangent vector (nv) with `retract(q0, difference(q0, q1)) = q1`.
    fn difference<'py>(
        &self,
        py: Python<'py>,
        q0: &Bound<'py, PyAny>,
        q1: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q0 = dvector(q0, "q0", self.world.nq(), "world.nq")?;
        let q1 = dvector(q1, "q1", self.world.nq(), "world.nq")?;
        Ok(out_vec(py, self.world.difference(&q0, &q1).py_err()?.as_slice()))
    }

    pub(crate) fn __repr__(&self) -> String {
        let names = self.world.systems().iter().map(|s| s.name()).collect::<Vec<_>>().join(", ");
        format!("World(systems=[{names}], dt={})", self.world.options().dt)
    }
}

/// A contact side as Python sees it: `None` (static) or `(system, element)`.
fn side(s: ContactSide) -> Option<(usize, usize)> {
    match s {
        ContactSide::Element { system, element } => Some((system, element)),
        ContactSide::Static => None,
    }
}

/// One recorded world step (`World.step_recorded`, or an entry of a `WorldTape`):
/// the next state, the contacts and the constraint solve, and everything the step's
/// vector-Jacobian product needs. Self-contained.
#[pyclass(name = "WorldStepRecord", module = "stiction", frozen)]
pub struct PyWorldStepRecord {
    record: WorldStepRecord,
    nv: usize,
}

#[pymethods]
impl PyWorldStepRecord {
    /// Vector-Jacobian product: given `grad_q_next = ∂ℓ/∂q⁺` (tangent, nv) and
    /// `grad_v_next = ∂ℓ/∂v⁺` (nv), returns `(grad_q, grad_v, grad_u)`, the gradients
    /// of ℓ with respect to the step's `q` (tangent, nv), `v` (nv) and `u` (nu), in the
    /// contact mode of the recorded solve; with `params=True`, `(grad_q, grad_v, grad_u,
    /// grad_theta)` with the gradient for the world's `param_names` as well. Raises
    /// `InputError` for wrong lengths or non-finite values.
    #[pyo3(signature = (grad_q_next, grad_v_next, params=false))]
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        grad_q_next: &Bound<'py, PyAny>,
        grad_v_next: &Bound<'py, PyAny>,
        params: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let gq = dvector(grad_q_next, "grad_q_next", self.nv, "world.nv")?;
        let gv = dvector(grad_v_next, "grad_v_next", self.nv, "world.nv")?;
        let g = py.detach(|| self.record.vjp(&gq, &gv)).py_err()?;
        let mut out = vec![out_vec(py, g.q.as_slice()), out_vec(py, g.v.as_slice()), out_vec(py, g.u.as_slice())];
        if params {
            out.push(out_vec(py, g.theta.as_slice()));
        }
        PyTuple::new(py, out)
    }

    /// The configuration after the step, shape (nq,).
    #[getter]
    pub(crate) fn q_next<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.next_state().q.as_slice())
    }

    /// The velocity after the step, shape (nv,).
    #[getter]
    pub(crate) fn v_next<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.next_state().v.as_slice())
    }

    /// The number of contacts nc of the step.
    #[getter]
    fn num_contacts(&self) -> usize {
        self.record.contacts().len()
    }

    /// The constraint impulses `f` (N·s), shape (3·nc,): per contact the normal, then
    /// the two friction directions.
    #[getter]
    fn impulses<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.solution().f.as_slice())
    }

    /// The classification of each row by the solve (`"clamping"`, `"separating"`,
    /// `"at_lower"`, `"at_upper"`, `"tied"`): the contact mode the VJP differentiates.
    #[getter]
    fn row_states(&self) -> Vec<&'static str> {
        self.record.solution().states.iter().map(|s| state_name(*s)).collect()
    }

    /// The constraint Jacobian `J` of the step, shape (3·nc, nv): row r of a contact
    /// maps the global velocity to the relative velocity of side B with respect to side
    /// A along the contact's normal (r = 0) or friction directions.
    #[getter]
    fn constraint_jacobian<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray2<f64>> {
        out_mat(py, self.record.constraint_jacobian())
    }

    /// The contacts of the step, one dict each: `side_a`, `side_b` (`None` for static
    /// geometry, else `(system, element)`: the body of a `Model`, the particle of
    /// `Particles`, the vertex `contact_vertices[element]` of a soft body), `shape_a`, `shape_b` (`(system, shape)`), `point` (3,) and
    /// `normal` (3,, from A to B) in world coordinates, `distance` (signed, negative in
    /// penetration), `friction` (the pair's Coulomb coefficient) and `kind`
    /// (`"vertex-face"`, ...).
    #[getter]
    fn contacts<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.record
            .contacts()
            .iter()
            .map(|c| {
                let d = PyDict::new(py);
                d.set_item("side_a", side(c.side_a))?;
                d.set_item("side_b", side(c.side_b))?;
                d.set_item("shape_a", (c.shape_a.system, c.shape_a.shape))?;
                d.set_item("shape_b", (c.shape_b.system, c.shape_b.shape))?;
                let g = &c.contact.geometry;
                d.set_item("point", out_vec(py, g.point.as_slice()))?;
                d.set_item("normal", out_vec(py, g.normal.as_slice()))?;
                d.set_item("distance", g.distance)?;
                d.set_item("friction", c.friction)?;
                d.set_item("kind", c.contact.kind.name())?;
                Ok(d)
            })
            .collect()
    }

    fn __repr__(&self) -> String {
        format!("WorldStepRecord(contacts={})", self.record.contacts().len())
    }
}

/// The records of a world rollout (`World.rollout`), in step order, and their reverse
/// sweep.
#[pyclass(name = "WorldTape", module = "stiction", frozen)]
pub struct PyWorldTape {
    tape: WorldTape,
    nv: usize,
    nu: usize,
}

/// The rows of an optional `(steps, nv)` cotangent as vectors (zeros when `None`).
fn cotangent_rows(obj: Option<&Bound<'_, PyAny>>, name: &str, steps: usize, nv: usize) -> PyResult<Vec<DVector<f64>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(vec![DVector::zeros(nv); steps]) };
    let (_, data) = matrix(obj, name, Some(steps), nv)?;
    if nv == 0 {
        return Ok(vec![DVector::zeros(0); steps]);
    }
    Ok(data.chunks_exact(nv).map(DVector::from_column_slice).collect())
}

#[pymethods]
impl PyWorldTape {
    /// The number of steps T.
    fn __len__(&self) -> usize {
        self.tape.len()
    }

    /// The record of step `t` (negative indices count from the end).
    fn __getitem__(&self, t: isize) -> PyResult<PyWorldStepRecord> {
        let n = self.tape.len() as isize;
        let i = if t < 0 { t + n } else { t };
        if !(0..n).contains(&i) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!("step {t} out of range (tape has {n} steps)")));
        }
        Ok(PyWorldStepRecord { record: self.tape.records()[i as usize].clone(), nv: self.nv })
    }

    /// Reverse-mode sweep: `grad_q[k]` and `grad_v[k]` (shapes (T, nv)) are `∂ℓ/∂q_{k+1}`
    /// (tangent) and `∂ℓ/∂v_{k+1}` of the state after step k, i.e. of row k of the
    /// rollout's `(Q, V)` (`None`: zero). Returns `(grad_q0, grad_v0, grad_u)`: the total
    /// derivatives with respect to the start state (tangent q, nv each) and the controls
    /// (shape (T, nu)); with `params=True`, `(grad_q0, grad_v0, grad_u, grad_theta)` with
    /// the gradient for the world's `param_names`, summed over the steps. Raises
    /// `InputError` for an empty tape, wrong shapes or non-finite values.
    #[pyo3(signature = (grad_q=None, grad_v=None, params=false))]
    fn backward<'py>(
        &self,
        py: Python<'py>,
        grad_q: Option<&Bound<'py, PyAny>>,
        grad_v: Option<&Bound<'py, PyAny>>,
        params: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let steps = self.tape.len();
        if steps == 0 {
            return Err(input_error("the world tape is empty"));
        }
        let gq = cotangent_rows(grad_q, "grad_q", steps, self.nv)?;
        let gv = cotangent_rows(grad_v, "grad_v", steps, self.nv)?;
        let g = py.detach(|| self.tape.backward(&gq, &gv)).py_err()?;
        let u: Vec<f64> = g.u.iter().flat_map(|u| u.iter().copied()).collect();
        let mut out = vec![
            out_vec(py, g.q0.as_slice()).into_any(),
            out_vec(py, g.v0.as_slice()).into_any(),
            out_rows(py, steps, self.nu, u)?.into_any(),
        ];
        if params {
            out.push(out_vec(py, g.theta.as_slice()).into_any());
        }
        PyTuple::new(py, out)
    }

    /// Reverse-mode sweeps of many world rollouts at once, on coordinates, in parallel
    /// (rayon, GIL released): the reverse pass behind `stiction.torch.world_rollout` and
    /// `stiction.jax.world_rollout`. `tapes`: B tapes of T steps each of worlds of one size
    /// (the same tape may appear several times); `q0` (B, nq): the start coordinates as the
    /// caller gave them (quaternions of any length near 1); `grad_q` (B, T, nq): ∂ℓ/∂q on the
    /// *coordinates* of the states after each step, mapped to the tangent space at those
    /// states (`World.tangent_gradient`); `grad_v` (B, T, nv); `None` means zero. Returns
    /// `{"q0": (B, nq), "v0": (B, nv), "u": (B, T, nu), "theta": (B, len(param_names))}`,
    /// the gradient on `q0` being `World.coordinate_gradient` of the tape's tangent one.
    /// Raises `InputError` for an empty list, tapes of other sizes, wrong shapes or
    /// non-finite values.
    #[staticmethod]
    #[pyo3(signature = (tapes, q0, grad_q=None, grad_v=None, threads=None))]
    fn vjp_batch<'py>(
        py: Python<'py>,
        tapes: Vec<Bound<'py, PyWorldTape>>,
        q0: &Bound<'py, PyAny>,
        grad_q: Option<&Bound<'py, PyAny>>,
        grad_v: Option<&Bound<'py, PyAny>>,
        #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let tapes: Vec<&WorldTape> = tapes.iter().map(|t| &t.get().tape).collect();
        let batch = tapes.len();
        let world = tapes
            .first()
            .and_then(|t| t.world())
            .ok_or_else(|| input_error("vjp_batch needs at least one tape, and tapes with at least one step"))?;
        let (nq, nv, nu, np, steps) = (world.nq(), world.nv(), world.nu(), world.num_params(), tapes[0].len());
        for (i, t) in tapes.iter().enumerate() {
            let same = t.len() == steps
                && t.world().is_some_and(|w| w.nq() == nq && w.nv() == nv && w.nu() == nu && w.num_params() == np);
            if !same {
                return Err(input_error(format!(
                    "tape {i} does not match tape 0 (every tape needs {steps} steps of a world with nq = {nq}, \
                     nv = {nv}, nu = {nu} and {np} parameters)"
                )));
            }
        }
        let rows3 = |obj: Option<&Bound<'py, PyAny>>, name: &str, n: usize| -> PyResult<Option<Vec<f64>>> {
            let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
            let a = array(obj, name)?;
            if a.shape != [batch, steps, n] {
                return Err(input_error(format!(
                    "{name} must have shape (B, T, {n}) = ({batch}, {steps}, {n}), got shape {}",
                    shape_str(&a.shape)
                )));
            }
            if let Some((i, x)) = a.data.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                return Err(input_error(format!("{name} has a non-finite entry ({x}) at flat index {i}")));
            }
            Ok(Some(a.data))
        };
        let gq = rows3(grad_q, "grad_q", nq)?;
        let gv = rows3(grad_v, "grad_v", nv)?;
        let (_, q0) = matrix(q0, "q0", Some(batch), nq)?;
        // Per rollout, in parallel: tangent cotangents, the sweep, and the start gradient on
        // coordinates; flattened as q0 (nq), v0 (nv), u (T·nu), theta (np).
        let one = |b: usize| -> stiction::Result<Vec<f64>> {
            let tape = tapes[b];
            let w = tape.world().expect("checked non-empty");
            let mut tq = Vec::with_capacity(steps);
            let mut tv = Vec::with_capacity(steps);
            for (t, rec) in tape.records().iter().enumerate() {
                let at = (b * steps + t) * nq;
                tq.push(match &gq {
                    Some(g) => w.tangent_gradient(&rec.next_state().q, &DVector::from_column_slice(&g[at..at + nq]))?,
                    None => DVector::zeros(nv),
                });
                let at = (b * steps + t) * nv;
                tv.push(
                    gv.as_ref().map_or_else(|| DVector::zeros(nv), |g| DVector::from_column_slice(&g[at..at + nv])),
                );
            }
            let g = tape.backward(&tq, &tv)?;
            let start = DVector::from_column_slice(&q0[b * nq..(b + 1) * nq]);
            let mut flat = Vec::with_capacity(nq + nv + steps * nu + np);
            flat.extend_from_slice(w.coordinate_gradient(&start, &g.q0)?.as_slice());
            flat.extend_from_slice(g.v0.as_slice());
            g.u.iter().for_each(|u| flat.extend_from_slice(u.as_slice()));
            flat.extend_from_slice(g.theta.as_slice());
            Ok(flat)
        };
        let out: Vec<f64> =
            py.detach(|| stiction::sim::map_rollouts(batch, threads, one)).py_err()?.into_iter().flatten().collect();
        let width = nq + nv + steps * nu + np;
        let column = |offset: usize, n: usize| -> Vec<f64> {
            (0..batch).flat_map(|b| out[b * width + offset..b * width + offset + n].iter().copied()).collect()
        };
        let d = PyDict::new(py);
        d.set_item("q0", out_rows(py, batch, nq, column(0, nq))?)?;
        d.set_item("v0", out_rows(py, batch, nv, column(nq, nv))?)?;
        let u = out_rows(py, batch * steps, nu, column(nq + nv, steps * nu))?;
        d.set_item("u", u.reshape([batch, steps, nu])?)?;
        d.set_item("theta", out_rows(py, batch, np, column(nq + nv + steps * nu, np))?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("WorldTape(steps={})", self.tape.len())
    }
}
