//! `stiction.Simulator`: semi-implicit Euler time stepping with contacts and joint
//! limits (a boxed LCP at the velocity level; see `docs/contact.md`).

use crate::contact_options::{contact_options, contact_options_dict};
use crate::convert::{matrix, out_rows, out_vec, vec3, vector};
use crate::errors::IntoPyResult;
use crate::model::PyModel;
use crate::params::{params_arg, PyParamSpec};
use crate::tape::{PyStepRecord, PyTape, SharedWorkspace};
use crate::world::PyWorld;
use nalgebra::{DMatrix, DVector};
use numpy::PyArrayMethods;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::{Arc, Mutex};
use stiction::sim::{rollout_batch, BatchOptions, BatchRollout};
use stiction::step::{IntegratorOptions, VelocityProducts};
use stiction::tape::{Tape, Workspace};
use stiction::{Control, SimOptions, Simulator, State};

/// Steps a model forward in time: semi-implicit Euler on the configuration manifold,
/// with contacts, joint limits and joint friction solved as a boxed LCP. Also steps a
/// `World` (several systems over one state), through the world's own step.
#[pyclass(name = "Simulator", module = "stiction", frozen)]
pub struct PySimulator {
    engine: Engine,
    nq: usize,
    nv: usize,
}

/// What a `Simulator` steps.
enum Engine {
    /// One model, by the rigid-body simulator (every feature).
    /// `scratch`: the backward-pass buffers its step records share.
    Model { sim: Box<Mutex<Simulator>>, model: Py<PyModel>, nbodies: usize, scratch: SharedWorkspace },
    /// A world of systems, by `World.step` (step, rollout and their records).
    World(Py<PyWorld>),
}

/// The error for a feature of model simulators asked of a world simulator.
fn world_unsupported(what: &str) -> PyErr {
    pyo3::exceptions::PyTypeError::new_err(format!(
        "this Simulator steps a World: {what} needs a Simulator of a Model (a world simulator offers step, \
         rollout, dt, nq, nv, world and reset_warm_start)"
    ))
}

/// Parses the `velocity_products` option.
pub fn velocity_products(s: &str) -> PyResult<VelocityProducts> {
    match s {
        "midpoint" => Ok(VelocityProducts::Midpoint),
        "explicit" => Ok(VelocityProducts::Explicit),
        other => Err(crate::errors::input_error(format!(
            "velocity_products must be 'midpoint' or 'explicit', got '{other}'"
        ))),
    }
}

/// The `max_iterations` argument: an integer >= 1.
fn max_iterations_arg(obj: &Bound<'_, PyAny>) -> PyResult<usize> {
    crate::convert::count(obj, "max_iterations", 1)
}

/// The `threads` argument: `None` (all cores) or an integer >= 1.
pub(crate) fn threads_arg(obj: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
    if obj.is_none() {
        return Ok(None);
    }
    crate::convert::count(obj, "threads", 1).map(Some)
}

/// `(Q, V)` of a rollout, as row-major data.
type Trajectory = (Vec<f64>, Vec<f64>);

#[pymethods]
impl PySimulator {
    /// A simulator of `model` with time step `dt`; `gravity` overrides the model's.
    /// `velocity_products` is `"midpoint"` (default: Coriolis/gyroscopic forces at
    /// `(v + v⁺)/2`, energy-conserving for free rigid bodies) or `"explicit"` (at `v`).
    /// `params`: the differentiable parameters θ of recorded steps, a `ParamSpec` or a
    /// list of parameter names (default: none). `contact`: the constraint stage's
    /// options: `None` (the defaults: enabled), `True`/`False`, or a dict of some of
    /// `enabled`, `margin`, `erp`, `restitution_threshold`, `joint_limit_margin`,
    /// `warm_start`, `bounce_gradients` (`"discrete"` or `"continuous_time"`) and the LCP
    /// solver's `tolerance`, `max_pivots`, `pgs_iterations`, `pgs_tolerance`,
    /// `standardize`, `friction_iterations` (see `contact_options`). `max_speed`: the
    /// divergence guard, a step whose result has a speed above it (rad/s or m/s) raises
    /// `NumericalError` naming the joint (`float("inf")` turns it off).
    #[new]
    #[pyo3(signature = (
        model, dt=None, gravity=None, velocity_products="midpoint", tolerance=1e-13, max_iterations=50, params=None,
        contact=None, max_speed=1e4
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        model: &Bound<'_, PyAny>,
        dt: Option<f64>,
        gravity: Option<&Bound<'_, PyAny>>,
        velocity_products: &str,
        tolerance: f64,
        #[pyo3(from_py_with = max_iterations_arg)] max_iterations: usize,
        params: Option<&Bound<'_, PyAny>>,
        contact: Option<&Bound<'_, PyAny>>,
        max_speed: f64,
    ) -> PyResult<Self> {
        if let Ok(world) = model.cast::<PyWorld>() {
            let w = world.get();
            let given = |o: Option<&Bound<'_, PyAny>>| o.is_some_and(|o| !o.is_none());
            let defaults = velocity_products == "midpoint"
                && tolerance == 1e-13
                && max_iterations == 50
                && max_speed == 1e4
                && !given(gravity)
                && !given(params)
                && !given(contact);
            if !defaults || dt.is_some_and(|dt| dt != w.dt()) {
                return Err(crate::errors::input_error(
                    "a Simulator of a World takes the world's options (dt, margin, erp, friction, solver are set on \
                     stiction.World); pass no other option"
                        .to_string(),
                ));
            }
            let (nq, nv) = (w.nq(), w.nv());
            return Ok(Self { engine: Engine::World(world.clone().unbind()), nq, nv });
        }
        let Ok(model) = model.cast::<PyModel>() else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "Simulator takes a Model or a World, got {}",
                model.get_type().name()?
            )));
        };
        let model = model.get();
        let dt = dt.unwrap_or(1e-3);
        let gravity = gravity.filter(|g| !g.is_none()).map(|g| vec3(g, "gravity")).transpose()?;
        let velocity_products = self::velocity_products(velocity_products)?;
        let integrator = IntegratorOptions { velocity_products, tolerance, max_iterations, max_speed };
        let contact = contact_options(contact)?;
        let mut sim = Simulator::new(model.model.clone(), SimOptions { dt, gravity, integrator, contact }).py_err()?;
        let params = params_arg(params, sim.model())?;
        sim.set_params(params);
        Self::from_simulator(py, sim)
    }

    /// The `World` this simulator steps (`None` for a simulator of a model).
    #[getter]
    fn world(&self, py: Python<'_>) -> Option<Py<PyWorld>> {
        match &self.engine {
            Engine::World(w) => Some(w.clone_ref(py)),
            Engine::Model { .. } => None,
        }
    }

    /// The length of the configuration vector q.
    #[getter]
    fn nq(&self) -> usize {
        self.nq
    }

    /// The length of the velocity vector v.
    #[getter]
    fn nv(&self) -> usize {
        self.nv
    }

    /// The differentiable parameters θ of recorded steps.
    #[getter]
    fn params(&self) -> PyResult<PyParamSpec> {
        let sim = self.lock()?;
        PyParamSpec::wrap(sim.params().clone(), sim.model())
    }

    /// The time step.
    #[getter]
    fn dt(&self, py: Python<'_>) -> f64 {
        match &self.engine {
            Engine::Model { sim, .. } => lock_simulator(sim).dt(),
            Engine::World(w) => w.bind(py).get().dt(),
        }
    }

    /// Every option of this simulator as a dict: `dt`, `gravity` (the override, or None
    /// for the model's), `velocity_products`, `tolerance`, `max_iterations` (the
    /// constructor's arguments), `max_speed` and `contact` (as `contact_options`);
    /// `Simulator(model, **sim.options, params=sim.params)` makes an equal simulator.
    #[getter]
    fn options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let o = self.lock()?.options().clone();
        let d = pyo3::types::PyDict::new(py);
        d.set_item("dt", o.dt)?;
        d.set_item("gravity", o.gravity.map(|g| out_vec(py, g.as_slice())))?;
        let vp = match o.integrator.velocity_products {
            VelocityProducts::Midpoint => "midpoint",
            VelocityProducts::Explicit => "explicit",
        };
        d.set_item("velocity_products", vp)?;
        d.set_item("tolerance", o.integrator.tolerance)?;
        d.set_item("max_iterations", o.integrator.max_iterations)?;
        d.set_item("max_speed", o.integrator.max_speed)?;
        d.set_item("contact", contact_options_dict(py, &o.contact)?)?;
        Ok(d)
    }

    /// The constraint stage's options, as the dict the `contact` argument accepts (every
    /// key present).
    #[getter]
    fn contact_options<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let options = self.lock()?.options().contact;
        contact_options_dict(py, &options)
    }

    /// Counters since construction: `{"steps", "midpoint_iterations",
    /// "midpoint_fallbacks", "lcp_solves", "warm_start_hits", "lcp_fallbacks",
    /// "unstandardized_solves", "ppm_solves", "position_corrections"}` (`lcp_solves`: steps
    /// that had constraint rows; `ppm_solves`: those solved by the pivoting solver of the
    /// no-slip and viscous models; `position_corrections`: steps whose position stage removed
    /// a penetration; `limit_resolves`: re-solves of the joint-limit loop; `limit_violations`:
    /// steps that left a limit violated beyond the documented tolerance; `inexact_solves`:
    /// steps whose LCP solution misses the LCP tolerance; `relaxed_solves`: steps whose LCP
    /// had no exact solution with the penetration-recovery and bounce biases and was solved
    /// without them; `ncp_solves`: steps solved by the NCP solver, `contact={"solver":
    /// "ncp"}`; `newton_iterations`: their non-smooth Newton iterations, summed;
    /// `gpu_linear_solves` / `gpu_fallbacks`: their Newton linear systems solved on the GPU
    /// with `"ncp": {"linear_solver": "pcr_gpu"}`, and those solved on the CPU instead
    /// because no GPU was available; docs/gpu.md; `work_limited_solves`: steps in which a
    /// boxed-LCP island spent its `work_limit`, docs/lcp.md).
    #[getter]
    fn stats(&self) -> PyResult<std::collections::HashMap<&'static str, u64>> {
        let s = *self.lock()?.stats();
        Ok([
            ("steps", s.steps),
            ("midpoint_iterations", s.midpoint_iterations),
            ("midpoint_fallbacks", s.midpoint_fallbacks),
            ("lcp_solves", s.lcp_solves),
            ("warm_start_hits", s.warm_start_hits),
            ("lcp_fallbacks", s.lcp_fallbacks),
            ("unstandardized_solves", s.unstandardized_solves),
            ("ppm_solves", s.ppm_solves),
            ("position_corrections", s.position_corrections),
            ("limit_resolves", s.limit_resolves),
            ("limit_violations", s.limit_violations),
            ("inexact_solves", s.inexact_solves),
            ("relaxed_solves", s.relaxed_solves),
            ("ncp_solves", s.ncp_solves),
            ("newton_iterations", s.newton_iterations),
            ("gpu_linear_solves", s.gpu_linear_solves),
            ("gpu_fallbacks", s.gpu_fallbacks),
            ("work_limited_solves", s.work_limited_solves),
        ]
        .into_iter()
        .collect())
    }

    /// The simulated model (with the gravity override applied); a world simulator has
    /// none (`TypeError`; see `world`).
    #[getter]
    fn model(&self, py: Python<'_>) -> PyResult<Py<PyModel>> {
        match &self.engine {
            Engine::Model { model, .. } => Ok(model.clone_ref(py)),
            Engine::World(_) => Err(world_unsupported("model")),
        }
    }

    /// One step: returns the next `(q, v)`, or `(q, v, record)` with `record=True`
    /// (a `StepRecord` for Jacobians and vector-Jacobian products). `wrenches`: optional
    /// world-frame body wrenches `[torque, force]`, shape (nbodies, 6). For a world
    /// simulator `tau` is the world's control vector `u` (length `world.nu`), the record
    /// a `WorldStepRecord`, and `wrenches` is not taken.
    #[pyo3(signature = (q, v, tau, wrenches=None, record=false))]
    fn step<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        tau: &Bound<'py, PyAny>,
        wrenches: Option<&Bound<'py, PyAny>>,
        record: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (sim, nbodies, scratch) = match &self.engine {
            Engine::Model { sim, nbodies, scratch, .. } => (sim, *nbodies, scratch),
            Engine::World(w) => {
                if wrenches.is_some_and(|x| !x.is_none()) {
                    return Err(world_unsupported("wrenches"));
                }
                let w = w.bind(py).get();
                if record {
                    let rec = Bound::new(py, w.step_recorded(py, q, v, Some(tau))?)?;
                    let (qn, vn) = (rec.get().q_next(py).into_any(), rec.get().v_next(py).into_any());
                    return PyTuple::new(py, [qn, vn, rec.into_any()]);
                }
                return w.step(py, q, v, Some(tau));
            }
        };
        let state = State {
            q: DVector::from_vec(vector(q, "q", self.nq, "model.nq")?),
            v: DVector::from_vec(vector(v, "v", self.nv, "model.nv")?),
        };
        let control = Control {
            tau: DVector::from_vec(vector(tau, "tau", self.nv, "model.nv")?),
            wrenches: crate::convert::wrenches(wrenches, nbodies)?,
        };
        if record {
            let (next, rec) = py.detach(|| lock_simulator(sim).step_recorded(&state, &control)).py_err()?;
            let rec = Bound::new(py, PyStepRecord { record: rec, scratch: Some(scratch.clone()) })?.into_any();
            PyTuple::new(
                py,
                [out_vec(py, next.q.as_slice()).into_any(), out_vec(py, next.v.as_slice()).into_any(), rec],
            )
        } else {
            let next = py.detach(|| lock_simulator(sim).step(&state, &control)).py_err()?;
            PyTuple::new(py, [out_vec(py, next.q.as_slice()), out_vec(py, next.v.as_slice())])
        }
    }

    /// `T` steps under the torques `taus` (shape (T, nv)); returns `(Q, V)` with the
    /// states after each step, shapes (T, nq) and (T, nv). With `record=True`, returns
    /// `(Q, V, tape)` where `tape` is a `Tape` of the T steps. For a world simulator
    /// `taus` are the world's controls (shape (T, nu)) and the tape a `WorldTape`.
    #[pyo3(signature = (q, v, taus, record=false))]
    fn rollout<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        v: &Bound<'py, PyAny>,
        taus: &Bound<'py, PyAny>,
        record: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let sim = match &self.engine {
            Engine::Model { sim, .. } => sim,
            Engine::World(w) => {
                let out = w.bind(py).get().rollout(py, q, v, taus)?;
                if record {
                    return Ok(out);
                }
                return PyTuple::new(py, [out.get_item(0)?, out.get_item(1)?]);
            }
        };
        let (nq, nv) = (self.nq, self.nv);
        let mut state = State {
            q: DVector::from_vec(vector(q, "q", nq, "model.nq")?),
            v: DVector::from_vec(vector(v, "v", nv, "model.nv")?),
        };
        let (steps, taus) = matrix(taus, "taus", None, nv)?;
        if record {
            let ((qs, vs), tape) = py
                .detach(|| -> stiction::Result<(Trajectory, Tape)> {
                    let mut sim = lock_simulator(sim);
                    let mut qs = Vec::with_capacity(steps * nq);
                    let mut vs = Vec::with_capacity(steps * nv);
                    let mut tape = Tape::new();
                    let mut control = Control::torques(DVector::zeros(nv));
                    for t in 0..steps {
                        control.tau.as_mut_slice().copy_from_slice(&taus[t * nv..(t + 1) * nv]);
                        let (next, rec) = sim.step_recorded(&state, &control).map_err(|e| e.at_step(t))?;
                        tape.push(rec)?;
                        state = next;
                        qs.extend_from_slice(state.q.as_slice());
                        vs.extend_from_slice(state.v.as_slice());
                    }
                    Ok(((qs, vs), tape))
                })
                .py_err()?;
            let tape = Bound::new(py, PyTape::from_tape(tape))?.into_any();
            return PyTuple::new(
                py,
                [out_rows(py, steps, nq, qs)?.into_any(), out_rows(py, steps, nv, vs)?.into_any(), tape],
            );
        }
        let (qs, vs) = py
            .detach(|| -> stiction::Result<Trajectory> {
                let mut sim = lock_simulator(sim);
                let mut qs = Vec::with_capacity(steps * nq);
                let mut vs = Vec::with_capacity(steps * nv);
                let mut next = state.clone();
                let mut control = Control::torques(DVector::zeros(nv));
                for t in 0..steps {
                    control.tau.as_mut_slice().copy_from_slice(&taus[t * nv..(t + 1) * nv]);
                    sim.step_into(&state, &control, &mut next).map_err(|e| e.at_step(t))?;
                    std::mem::swap(&mut state, &mut next);
                    qs.extend_from_slice(state.q.as_slice());
                    vs.extend_from_slice(state.v.as_slice());
                }
                Ok((qs, vs))
            })
            .py_err()?;
        PyTuple::new(py, [out_rows(py, steps, nq, qs)?, out_rows(py, steps, nv, vs)?])
    }

    /// `B` independent rollouts of `T` steps in one call, in parallel (rayon, GIL
    /// released): start states `q0` (B, nq) and `v0` (B, nv), torques `taus` (B, T, nv),
    /// optionally per-rollout values `thetas` (B, np) of this simulator's `params`. Each
    /// rollout runs on its own copy of this simulator's model and options, so results
    /// equal sequential `rollout` calls for any `threads` (`None`: all cores). Returns
    /// `(Q, V)` of shapes (B, T, nq) and (B, T, nv); with `record=True`, `(Q, V, tapes)`
    /// with a `Tape` per rollout.
    #[pyo3(signature = (q0, v0, taus, thetas=None, record=false, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn rollout_batch<'py>(
        &self,
        py: Python<'py>,
        q0: &Bound<'py, PyAny>,
        v0: &Bound<'py, PyAny>,
        taus: &Bound<'py, PyAny>,
        thetas: Option<&Bound<'py, PyAny>>,
        record: bool,
        #[pyo3(from_py_with = threads_arg)] threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let (nq, nv) = (self.nq, self.nv);
        let (model, options, params) = {
            let sim = self.lock()?;
            (sim.model().clone(), sim.options().clone(), sim.params().clone())
        };
        let (b, q0) = matrix(q0, "q0", None, nq)?;
        let (_, v0) = matrix(v0, "v0", Some(b), nv)?;
        let t = crate::convert::array(taus, "taus")?;
        let steps = match t.shape.as_slice() {
            [bb, steps, n] if *bb == b && *n == nv => *steps,
            shape => {
                return Err(crate::errors::input_error(format!(
                    "taus must have shape (B, T, nv) = ({b}, T, {nv}), got {shape:?}"
                )))
            }
        };
        let thetas = match thetas.filter(|o| !o.is_none()) {
            Some(th) => Some(matrix(th, "thetas", Some(b), params.len())?.1),
            None => None,
        };
        let batch: Vec<BatchRollout> = (0..b)
            .map(|i| BatchRollout {
                state: State {
                    q: DVector::from_column_slice(&q0[i * nq..(i + 1) * nq]),
                    v: DVector::from_column_slice(&v0[i * nv..(i + 1) * nv]),
                },
                controls: DMatrix::from_row_slice(steps, nv, &t.data[i * steps * nv..(i + 1) * steps * nv]),
                theta: thetas
                    .as_ref()
                    .map(|th| DVector::from_column_slice(&th[i * params.len()..(i + 1) * params.len()])),
            })
            .collect();
        let out = py
            .detach(|| rollout_batch(&model, &options, &params, &batch, &BatchOptions { record, threads }))
            .py_err()?;
        let mut qs = Vec::with_capacity(b * steps * nq);
        let mut vs = Vec::with_capacity(b * steps * nv);
        for r in &out {
            for s in &r.states {
                qs.extend_from_slice(s.q.as_slice());
                vs.extend_from_slice(s.v.as_slice());
            }
        }
        let shape3 = |data: Vec<f64>, n: usize| -> PyResult<Bound<'py, PyAny>> {
            let flat = out_rows(py, b * steps, n, data)?;
            Ok(flat.reshape([b, steps, n])?.into_any())
        };
        let (qa, va) = (shape3(qs, nq)?, shape3(vs, nv)?);
        if record {
            let tapes: Vec<Bound<'py, PyAny>> = out
                .into_iter()
                .map(|r| Ok(Bound::new(py, PyTape::from_tape(r.tape.expect("recorded")))?.into_any()))
                .collect::<PyResult<_>>()?;
            return PyTuple::new(py, [qa, va, pyo3::types::PyList::new(py, tapes)?.into_any()]);
        }
        PyTuple::new(py, [qa, va])
    }

    /// The constraint stage of the last step (recorded or not) as the dict described in
    /// `StepRecord.constraints`; `None` when that step had no constraint rows (or no step
    /// was taken yet).
    fn last_constraints<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, pyo3::types::PyDict>>> {
        let sim = self.lock()?;
        crate::constraints::optional_constraints(py, sim.model(), sim.last_constraints())
    }

    /// Forgets the previous step's contact classification: the next step's LCP starts
    /// cold (no warm start). A world's step keeps no warm start: nothing to forget.
    fn reset_warm_start(&self) {
        if let Engine::Model { sim, .. } = &self.engine {
            lock_simulator(sim).reset_warm_start();
        }
    }

    /// The contacts of the simulated model at configuration `q`; see `Model.contacts`.
    #[pyo3(signature = (q, margin=0.0, jacobians=false))]
    fn contacts<'py>(
        &self,
        py: Python<'py>,
        q: &Bound<'py, PyAny>,
        margin: f64,
        jacobians: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
        let Engine::Model { model, .. } = &self.engine else {
            return Err(world_unsupported("contacts"));
        };
        let model = model.bind(py).get();
        let (contacts, jac) = model.contacts_at(py, q, margin, jacobians)?;
        crate::contacts::contacts_dict(py, &model.model, &contacts, jac.as_deref())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        match &self.engine {
            Engine::Model { model, .. } => {
                format!("Simulator(model={}, dt={})", model.bind(py).borrow().__repr__(), self.dt(py))
            }
            Engine::World(w) => format!("Simulator(world={})", w.bind(py).get().__repr__()),
        }
    }
}

impl PySimulator {
    /// Wraps a Rust simulator (its model, options and parameters as they are).
    pub(crate) fn from_simulator(py: Python<'_>, sim: Simulator) -> PyResult<Self> {
        let m = sim.model();
        let (nq, nv, nbodies) = (m.nq(), m.nv(), m.nbodies());
        let scratch = Arc::new(Mutex::new(Workspace::new(m)));
        let model = Py::new(py, PyModel::new(m.clone()))?;
        Ok(Self { engine: Engine::Model { sim: Box::new(Mutex::new(sim)), model, nbodies, scratch }, nq, nv })
    }

    /// The rigid-body simulator of a model simulator (`TypeError` for a world simulator).
    pub(crate) fn simulator(&self) -> PyResult<&Mutex<Simulator>> {
        match &self.engine {
            Engine::Model { sim, .. } => Ok(sim),
            Engine::World(_) => Err(world_unsupported(
                "this feature (trajectory optimization, system identification, parameters, statistics)",
            )),
        }
    }

    /// The rigid-body simulator, locked ([`Self::simulator`]).
    pub(crate) fn lock(&self) -> PyResult<std::sync::MutexGuard<'_, Simulator>> {
        Ok(lock_simulator(self.simulator()?))
    }
}

/// Locks a simulator (a poisoned lock is taken over: the simulator holds no invariant
/// a panic could break half-way).
pub(crate) fn lock_simulator(sim: &Mutex<Simulator>) -> std::sync::MutexGuard<'_, Simulator> {
    sim.lock().unwrap_or_else(|e| e.into_inner())
}
