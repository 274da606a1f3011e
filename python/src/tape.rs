//! `stiction.StepRecord` and `stiction.Tape`: recorded steps and their backward pass.

use crate::convert::{dvector, matrix, out_mat, out_rows, out_vec};
use crate::errors::{input_error, IntoPyResult};
use nalgebra::DVector;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::{Arc, Mutex, MutexGuard};
use stiction::tape::{BackwardOptions, ContactGradientStrategy, StepRecord, StrategyStats, Tape, Workspace};

/// Parses the `strategy` argument of the backward passes.
fn strategy(s: &str) -> PyResult<BackwardOptions> {
    let contact_strategy = match s {
        "exact" => ContactGradientStrategy::Exact,
        "loss_driven" => ContactGradientStrategy::LossDriven,
        other => return Err(input_error(format!("strategy must be 'exact' or 'loss_driven', got '{other}'"))),
    };
    Ok(BackwardOptions { contact_strategy })
}

/// The counters of a backward pass's contact strategy as a dict.
fn strategy_stats<'py>(py: Python<'py>, s: &StrategyStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("constrained_steps", s.constrained_steps)?;
    d.set_item("loss_driven_tried", s.loss_driven_tried)?;
    d.set_item("loss_driven_used", s.loss_driven_used)?;
    d.set_item("inexact_steps", s.inexact_steps)?;
    Ok(d)
}

/// One recorded simulator step (`Simulator.step(..., record=True)`): its inputs,
/// outputs and everything its Jacobians and vector-Jacobian products need.
/// Self-contained: it keeps working after the simulator changes or is dropped.
#[pyclass(name = "StepRecord", module = "stiction", frozen)]
pub struct PyStepRecord {
    pub record: StepRecord,
    /// The backward-pass buffers of the simulator that recorded the step, shared by its
    /// records (`None`: fresh buffers per call). Buffers only: the results never depend on
    /// them, and a call that finds them busy (another thread) uses fresh ones.
    pub scratch: Option<SharedWorkspace>,
}

/// Backward-pass buffers shared by the records of one simulator.
pub type SharedWorkspace = Arc<Mutex<Workspace>>;

impl PyStepRecord {
    /// A record with fresh buffers per call.
    pub fn new(record: StepRecord) -> Self {
        Self { record, scratch: None }
    }

    /// Runs `f` with the shared buffers when they are free, else with fresh ones.
    fn with_workspace<T>(&self, f: impl FnOnce(&mut Workspace) -> T) -> T {
        match self.scratch.as_ref().and_then(|s| s.try_lock().ok()) {
            Some(mut ws) => f(&mut ws),
            None => f(&mut Workspace::new(self.record.model())),
        }
    }
}

#[pymethods]
impl PyStepRecord {
    /// The Jacobian blocks of the step as a dict of numpy arrays: `"dq_dq"`, `"dq_dv"`,
    /// `"dq_dtau"`, `"dv_dq"`, `"dv_dv"`, `"dv_dtau"` (nv × nv) and `"dq_dtheta"`,
    /// `"dv_dtheta"` (nv × np). Rows and columns for q are in the tangent space.
    fn jacobians<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let j = py.detach(|| self.with_workspace(|ws| self.record.jacobians_with(ws))).py_err()?;
        let d = PyDict::new(py);
        for (k, m) in [
            ("dq_dq", &j.dq_dq),
            ("dq_dv", &j.dq_dv),
            ("dq_dtau", &j.dq_dtau),
            ("dq_dtheta", &j.dq_dtheta),
            ("dv_dq", &j.dv_dq),
            ("dv_dv", &j.dv_dv),
            ("dv_dtau", &j.dv_dtau),
            ("dv_dtheta", &j.dv_dtheta),
        ] {
            d.set_item(k, out_mat(py, m))?;
        }
        Ok(d)
    }

    /// Vector-Jacobian product: given `grad_q_next = ∂ℓ/∂q⁺` (tangent, nv) and
    /// `grad_v_next = ∂ℓ/∂v⁺` (nv), returns `{"q", "v", "tau", "theta"}`, the gradients
    /// of ℓ with respect to the step's inputs (q in the tangent space). `strategy`:
    /// `"exact"` (default: the derivatives of the recorded step) or `"loss_driven"`
    /// (DiffDART §4.4: where the loss would rather see another contact mode, the VJP in
    /// that mode when it is larger — a search direction, not a derivative; see
    /// `docs/contact.md`); the latter adds `"strategy"`, the counters
    /// `{"constrained_steps", "loss_driven_tried", "loss_driven_used", "inexact_steps"}`.
    #[pyo3(signature = (grad_q_next, grad_v_next, strategy="exact"))]
    fn vjp<'py>(
        &self,
        py: Python<'py>,
        grad_q_next: &Bound<'py, PyAny>,
        grad_v_next: &Bound<'py, PyAny>,
        strategy: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let nv = self.record.model().nv();
        let gq = dvector(grad_q_next, "grad_q_next", nv, "model.nv")?;
        let gv = dvector(grad_v_next, "grad_v_next", nv, "model.nv")?;
        let options = self::strategy(strategy)?;
        let (g, stats) =
            py.detach(|| self.with_workspace(|ws| self.record.vjp_with_options(ws, &gq, &gv, &options))).py_err()?;
        let d = PyDict::new(py);
        if options.contact_strategy == ContactGradientStrategy::LossDriven {
            d.set_item("strategy", strategy_stats(py, &stats)?)?;
        }
        d.set_item("q", out_vec(py, g.q.as_slice()))?;
        d.set_item("v", out_vec(py, g.v.as_slice()))?;
        d.set_item("tau", out_vec(py, g.tau.as_slice()))?;
        d.set_item("theta", out_vec(py, g.theta.as_slice()))?;
        Ok(d)
    }

    /// The configuration before the step, shape (nq,).
    #[getter]
    fn q<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.inputs().0.as_slice())
    }
    /// The velocity before the step, shape (nv,).
    #[getter]
    fn v<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.inputs().1.as_slice())
    }
    /// The joint torques of the step, shape (nv,).
    #[getter]
    fn tau<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.inputs().2.as_slice())
    }
    /// The configuration after the step, shape (nq,).
    #[getter]
    fn q_next<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.outputs().0.as_slice())
    }
    /// The velocity after the step, shape (nv,).
    #[getter]
    fn v_next<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.record.outputs().1.as_slice())
    }
    /// The time step.
    #[getter]
    fn dt(&self) -> f64 {
        self.record.dt()
    }
    /// Number of differentiable parameters θ of the record.
    #[getter]
    fn nparams(&self) -> usize {
        self.record.params().len()
    }
    /// True when the midpoint iteration fell back to the explicit evaluation (the step
    /// is then differentiated as an explicit step).
    #[getter]
    fn fell_back(&self) -> bool {
        self.record.fell_back()
    }
    /// False when the constraint stage kept an inexact last-resort LCP solution (its
    /// Jacobians are then those of the approximate solution's classification, not exact
    /// derivatives; `sim.stats["inexact_solves"]` counts such steps).
    #[getter]
    fn solved_exactly(&self) -> bool {
        self.record.solved_exactly()
    }

    /// The constraint stage of the step, or `None` when it had no constraint rows
    /// (contact disabled, or nothing within the margins). A dict:
    ///
    /// * per row (m rows: three per contact — normal, then two friction directions —
    ///   then joint rows): `impulses` (m,), `states` (`"clamping"`, `"separating"`,
    ///   `"at_lower"`, `"at_upper"`, `"tied"`), `kinds` (`"contact_normal"`,
    ///   `"contact_friction"`, `"joint_lower"`, `"joint_upper"`, `"joint_friction"`),
    ///   `contact` (contact index, -1 for joint rows), `direction` (friction direction 0
    ///   or 1, else -1), `dof` (dof index of joint rows, else -1), `joints` (joint name
    ///   of joint rows, else None), `bounds` (m, 2) (friction bounds ±μ f_n at the
    ///   solution), `bias` (m,);
    /// * per contact (nc): `points` (nc, 3), `normals` (nc, 3, from body A to body B),
    ///   `distances` (nc,, signed, negative in penetration), `depths` (= −distances),
    ///   `bodies` (pairs of body names, `"world"` for world shapes), `shapes` (nc, 2),
    ///   `contact_kinds` (`"vertex-face"`, ...), `friction`, `restitution` (the pair's
    ///   mean coefficients), `bounce` (bools), `approach_velocity` (normal velocity at
    ///   the start of the step);
    /// * `v_free` (nv,), the velocity before the impulse, and `lcp`: the solver's
    ///   statistics `{"path", "islands", "pivots", "pgs_iterations", "residual",
    ///   "warm_start_attempted", "warm_start_hit", "fallbacks", "standardized",
    ///   "newton_iterations", "gpu_linear_solves", "gpu_fallbacks", "work_limited"}` (`path` `"newton"` and
    ///   the iterations for the NCP solver; the GPU counters: docs/gpu.md).
    #[getter]
    fn constraints<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        crate::constraints::optional_constraints(py, self.record.model(), self.record.constraints())
    }

    fn __repr__(&self) -> String {
        format!("StepRecord(model='{}', dt={})", self.record.model().name(), self.record.dt())
    }
}

/// A recorded rollout: the records of consecutive steps, in time order. Build one with
/// `Tape()` and `append`, or with `Simulator.rollout(..., record=True)`.
#[pyclass(name = "Tape", module = "stiction", frozen)]
#[derive(Default)]
pub struct PyTape {
    tape: Mutex<Tape>,
}

impl PyTape {
    pub fn from_tape(tape: Tape) -> Self {
        Self { tape: Mutex::new(tape) }
    }

    fn lock(&self) -> MutexGuard<'_, Tape> {
        self.tape.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Rows of an optional `(rows, nv)` array argument as vectors (empty when `None`).
fn rows_arg(obj: Option<&Bound<'_, PyAny>>, name: &str, rows: usize, nv: usize) -> PyResult<Vec<DVector<f64>>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(vec![]) };
    let (_, data) = matrix(obj, name, Some(rows), nv)?;
    if nv == 0 {
        return Ok(vec![DVector::zeros(0); rows]);
    }
    if let Some((i, x)) = data.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(input_error(format!("{name}[{}, {}] is not finite ({x})", i / nv, i % nv)));
    }
    Ok(data.chunks_exact(nv).map(DVector::from_column_slice).collect())
}

#[pymethods]
impl PyTape {
    /// An empty tape.
    #[new]
    fn py_new() -> Self {
        Self::default()
    }

    /// Appends the record of the next step; `InputError` unless it continues the tape
    /// (same model and time step, start state exactly the last record's end state).
    fn append(&self, record: &PyStepRecord) -> PyResult<()> {
        self.lock().push(record.record.clone()).py_err()
    }

    fn __len__(&self) -> usize {
        self.lock().len()
    }

    /// The record of step `t` (negative indices count from the end).
    fn __getitem__(&self, t: &Bound<'_, PyAny>) -> PyResult<PyStepRecord> {
        let t: i128 = t.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "tape indices must be integers, got {}",
                crate::convert::type_name(t)
            ))
        })?;
        let tape = self.lock();
        let n = tape.len() as i128;
        let i = if t < 0 { t + n } else { t };
        if !(0..n).contains(&i) {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!("step {t} out of range (tape has {n} steps)")));
        }
        Ok(PyStepRecord::new(tape.records()[i as usize].clone()))
    }

    /// Backpropagates `L = Σ_t ℓ_t(x_t, τ_t) + ℓ_T(x_T)` through the tape, given its
    /// partial derivatives: `grad_states = (gq, gv)`, two arrays of shape (T+1, nv)
    /// holding ∂L/∂q_t (tangent) and ∂L/∂v_t for t = 0..T, and `grad_controls`, shape
    /// (T, nv), holding ∂L/∂τ_t; `None` means zero. Returns `{"q0", "v0", "tau", "theta"}`
    /// with the total derivatives (q0 tangent, tau of shape (T, nv)); `strategy="loss_driven"`
    /// opts into the loss-driven contact strategy and adds its counters under `"strategy"`
    /// (see `StepRecord.vjp`).
    /// Raises `InputError` on an empty tape, wrong shapes or an unknown strategy.
    #[pyo3(signature = (grad_states=None, grad_controls=None, strategy="exact"))]
    fn backward<'py>(
        &self,
        py: Python<'py>,
        grad_states: Option<&Bound<'py, PyAny>>,
        grad_controls: Option<&Bound<'py, PyAny>>,
        strategy: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let options = self::strategy(strategy)?;
        let (steps, nv) = {
            let tape = self.lock();
            (tape.len(), tape.records().first().map_or(0, |r| r.model().nv()))
        };
        if steps == 0 {
            return Err(input_error("the tape is empty"));
        }
        let states = match grad_states.filter(|o| !o.is_none()) {
            None => vec![],
            Some(obj) => {
                let pair = obj
                    .cast::<PyTuple>()
                    .ok()
                    .filter(|t| t.len() == 2)
                    .map(|t| (t.get_item(0), t.get_item(1)))
                    .or_else(|| {
                        let l = obj.cast::<pyo3::types::PyList>().ok().filter(|l| l.len() == 2)?;
                        Some((l.get_item(0), l.get_item(1)))
                    })
                    .ok_or_else(|| {
                        input_error("grad_states must be a pair (gq, gv) of arrays of shape (T+1, nv), or None")
                    })?;
                let (gq, gv) = (pair.0?, pair.1?);
                let gq = rows_arg(Some(&gq), "grad_states[0]", steps + 1, nv)?;
                let gv = rows_arg(Some(&gv), "grad_states[1]", steps + 1, nv)?;
                gq.into_iter().zip(gv).collect()
            }
        };
        let controls = rows_arg(grad_controls, "grad_controls", steps, nv)?;
        let (g, stats) = py.detach(|| self.lock().backward_with(&states, &controls, &options)).py_err()?;
        let d = PyDict::new(py);
        if options.contact_strategy == ContactGradientStrategy::LossDriven {
            d.set_item("strategy", strategy_stats(py, &stats)?)?;
        }
        d.set_item("q0", out_vec(py, g.q0.as_slice()))?;
        d.set_item("v0", out_vec(py, g.v0.as_slice()))?;
        let tau: Vec<f64> = g.tau.iter().flat_map(|t| t.iter().copied()).collect();
        d.set_item("tau", out_rows(py, g.tau.len(), nv, tau)?)?;
        d.set_item("theta", out_vec(py, g.theta.as_slice()))?;
        Ok(d)
    }

    /// Vector-Jacobian products of many recorded rollouts at once, on coordinates, in
    /// parallel (rayon, GIL released): the reverse pass behind `stiction.torch` and
    /// `stiction.jax`. `tapes`: B tapes of T steps each (the same tape may appear several
    /// times). `grad_q` (B, T, nq): ∂L/∂q_t on the coordinates of the states *after* each
    /// step, mapped to the tangent space at the recorded states (`Model.tangent_gradient`);
    /// `grad_v` (B, T, nv): ∂L/∂v_t; `None` means zero. `q0` (B, nq): the start
    /// coordinates as the caller gave them (quaternions of any length; default: the tapes'
    /// own start states); the gradient on them is `Model.coordinate_gradient`. Returns
    /// `{"q0": (B, nq), "v0": (B, nv), "tau": (B, T, nv), "theta": (B, np)}`.
    /// Raises `InputError` for an empty tape list, tapes of different models, lengths or
    /// parameters, or wrong shapes.
    #[staticmethod]
    #[pyo3(signature = (tapes, grad_q=None, grad_v=None, q0=None, threads=None))]
    fn vjp_batch<'py>(
        py: Python<'py>,
        tapes: Vec<Bound<'py, PyTape>>,
        grad_q: Option<&Bound<'py, PyAny>>,
        grad_v: Option<&Bound<'py, PyAny>>,
        q0: Option<&Bound<'py, PyAny>>,
        threads: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        // Lock every distinct tape once (a tape listed twice shares its guard).
        let mut distinct: Vec<usize> = Vec::with_capacity(tapes.len());
        let mut guards: Vec<MutexGuard<'_, Tape>> = vec![];
        let mut slot_of_ptr: std::collections::HashMap<*mut pyo3::ffi::PyObject, usize> = Default::default();
        for t in &tapes {
            let slot = *slot_of_ptr.entry(t.as_ptr()).or_insert_with(|| {
                guards.push(t.get().lock());
                guards.len() - 1
            });
            distinct.push(slot);
        }
        let records: Vec<&Tape> = distinct.iter().map(|&i| &*guards[i]).collect();
        let batch = records.len();
        let first = records
            .first()
            .and_then(|t| t.records().first())
            .ok_or_else(|| input_error("vjp_batch needs at least one tape, and tapes with at least one step"))?;
        let model = first.model().clone();
        let (nq, nv, np, steps) = (model.nq(), model.nv(), first.params().len(), records[0].len());
        for (i, t) in records.iter().enumerate() {
            let r = t.records().first();
            let same = t.len() == steps
                && r.is_some_and(|r| r.model().nq() == nq && r.model().nv() == nv && r.params().len() == np);
            if !same {
                return Err(input_error(format!(
                    "tape {i} does not match tape 0 (every tape needs {steps} steps of a model with nq = {nq}, \
                     nv = {nv} and {np} parameters)"
                )));
            }
        }
        let rows3 = |obj: Option<&Bound<'py, PyAny>>, name: &str, n: usize| -> PyResult<Option<Vec<f64>>> {
            let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(None) };
            let a = crate::convert::array(obj, name)?;
            if a.shape != [batch, steps, n] {
                return Err(input_error(format!(
                    "{name} must have shape (B, T, {n}) = ({batch}, {steps}, {n}), got {:?}",
                    a.shape
                )));
            }
            if let Some((i, x)) = a.data.iter().enumerate().find(|(_, x)| !x.is_finite()) {
                return Err(input_error(format!("{name} has a non-finite entry ({x}) at flat index {i}")));
            }
            Ok(Some(a.data))
        };
        let gq = rows3(grad_q, "grad_q", nq)?;
        let gv = rows3(grad_v, "grad_v", nv)?;
        let q0 = match q0.filter(|o| !o.is_none()) {
            Some(obj) => Some(matrix(obj, "q0", Some(batch), nq)?.1),
            None => None,
        };
        // Per rollout, in parallel: tangent cotangents (row 0, the start state, is zero), the
        // tape sweep, and the start gradient on coordinates; flattened as q0 (nq), v0 (nv),
        // tau (T·nv), theta (np).
        let one = |b: usize| -> stiction::Result<Vec<f64>> {
            let tape = records[b];
            let mut states = Vec::with_capacity(steps + 1);
            states.push((DVector::zeros(nv), DVector::zeros(nv)));
            for (t, rec) in tape.records().iter().enumerate() {
                let at = (b * steps + t) * nq;
                let q = match &gq {
                    Some(g) => model.tangent_gradient(rec.outputs().0, &DVector::from_column_slice(&g[at..at + nq]))?,
                    None => DVector::zeros(nv),
                };
                let at = (b * steps + t) * nv;
                let v = gv.as_ref().map_or_else(|| DVector::zeros(nv), |g| DVector::from_column_slice(&g[at..at + nv]));
                states.push((q, v));
            }
            let g = tape.backward(&states, &[])?;
            let start = match &q0 {
                Some(q0) => DVector::from_column_slice(&q0[b * nq..(b + 1) * nq]),
                None => tape.records()[0].inputs().0.clone(),
            };
            let mut flat = Vec::with_capacity(nq + nv + steps * nv + np);
            flat.extend_from_slice(model.coordinate_gradient(&start, &g.q0)?.as_slice());
            flat.extend_from_slice(g.v0.as_slice());
            g.tau.iter().for_each(|t| flat.extend_from_slice(t.as_slice()));
            flat.extend_from_slice(g.theta.as_slice());
            Ok(flat)
        };
        let out: Vec<f64> =
            py.detach(|| stiction::sim::map_rollouts(batch, threads, one)).py_err()?.into_iter().flatten().collect();
        let width = nq + nv + steps * nv + np;
        let column = |offset: usize, n: usize| -> Vec<f64> {
            (0..batch).flat_map(|b| out[b * width + offset..b * width + offset + n].iter().copied()).collect()
        };
        let d = PyDict::new(py);
        d.set_item("q0", out_rows(py, batch, nq, column(0, nq))?)?;
        d.set_item("v0", out_rows(py, batch, nv, column(nq, nv))?)?;
        let tau = out_rows(py, batch * steps, nv, column(nq + nv, steps * nv))?;
        d.set_item("tau", numpy::PyArrayMethods::reshape(&tau, [batch, steps, nv])?)?;
        d.set_item("theta", out_rows(py, batch, np, column(nq + nv + steps * nv, np))?)?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        format!("Tape(steps={})", self.lock().len())
    }
}
