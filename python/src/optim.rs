//! Trajectory optimization from Python (`stiction.trajopt`): iLQR and single shooting
//! over a `Simulator` with a quadratic cost plus optional world-space terms
//! (`PointCost`, `ObstacleCost`) (`stiction::optim`).

use crate::convert::{array, dvector, matrix, out_mat, out_rows, out_vec, vec3};
use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use crate::simulator::{lock_simulator, PySimulator};
use nalgebra::{DMatrix, DVector};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use stiction::math::Vec3;
use stiction::optim::{
    ilqr, shooting, BodyPoint, ControlBounds, IlqrOptions, IlqrProgress, IlqrResult, JacobianSource, ObstacleCost,
    PointCost, QuadraticCost, ShootingOptions, ShootingProgress, ShootingResult, SumCost,
};
use stiction::{Model, State};

/// A weight matrix from a scalar (`w·I`), a 1-D array (its diagonal) or an `n × n` array.
fn weight(obj: &Bound<'_, PyAny>, name: &str, n: usize) -> PyResult<DMatrix<f64>> {
    let a = array(obj, name)?;
    match a.shape.as_slice() {
        [] => Ok(DMatrix::identity(n, n) * a.data[0]),
        [k] if *k == n => Ok(DMatrix::from_diagonal(&DVector::from_vec(a.data))),
        [r, c] if *r == n && *c == n => Ok(DMatrix::from_row_slice(n, n, &a.data)),
        shape => Err(input_error(format!(
            "{name} must be a scalar, a vector of length {n} (the diagonal) or an {n}×{n} matrix, got shape {shape:?}"
        ))),
    }
}

/// The control bounds from optional `lower`/`upper` (scalars or nv-vectors).
fn bounds(
    lower: Option<&Bound<'_, PyAny>>,
    upper: Option<&Bound<'_, PyAny>>,
    nv: usize,
) -> PyResult<Option<ControlBounds>> {
    let side = |obj: Option<&Bound<'_, PyAny>>, name: &str, default: f64| -> PyResult<DVector<f64>> {
        let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(DVector::from_element(nv, default)) };
        let a = array(obj, name)?;
        match a.shape.as_slice() {
            [] => Ok(DVector::from_element(nv, a.data[0])),
            [k] if *k == nv => Ok(DVector::from_vec(a.data)),
            shape => {
                Err(input_error(format!("{name} must be a scalar or a vector of length {nv}, got shape {shape:?}")))
            }
        }
    };
    if lower.is_none_or(|o| o.is_none()) && upper.is_none_or(|o| o.is_none()) {
        return Ok(None);
    }
    let b = ControlBounds::new(side(lower, "lower", f64::NEG_INFINITY)?, side(upper, "upper", f64::INFINITY)?);
    b.validate(nv).py_err()?;
    Ok(Some(b))
}

fn jacobian_source(s: &str) -> PyResult<JacobianSource> {
    match s {
        "analytic" => Ok(JacobianSource::Analytic),
        "finite_difference" | "fd" => Ok(JacobianSource::FiniteDifference),
        other => Err(input_error(format!("jacobians must be 'analytic' or 'finite_difference', got '{other}'"))),
    }
}

/// The common inputs of both methods: start state, initial controls, the quadratic cost and
/// the world-space terms added to it.
struct Problem {
    x0: State,
    controls: Vec<DVector<f64>>,
    cost: QuadraticCost,
    extras: Vec<WorldCost>,
}

impl Problem {
    /// The total cost: the quadratic term plus the world-space terms. (Built where it is used:
    /// a `SumCost` holds boxed trait objects, which do not cross the GIL release.)
    fn total(&self) -> SumCost {
        let mut sum = SumCost::new().with(self.cost.clone());
        for extra in &self.extras {
            match extra {
                WorldCost::Point(c) => sum.push(Box::new(c.clone())),
                WorldCost::Obstacle(c) => sum.push(Box::new(c.clone())),
            }
        }
        sum
    }
}

#[allow(clippy::too_many_arguments)]
fn problem(
    sim: &PySimulator,
    q0: &Bound<'_, PyAny>,
    v0: &Bound<'_, PyAny>,
    controls: &Bound<'_, PyAny>,
    target_q: Option<&Bound<'_, PyAny>>,
    target_v: Option<&Bound<'_, PyAny>>,
    state_weight: &Bound<'_, PyAny>,
    control_weight: &Bound<'_, PyAny>,
    terminal_weight: &Bound<'_, PyAny>,
    costs: Option<&Bound<'_, PyAny>>,
) -> PyResult<Problem> {
    let model = sim.lock()?.model().clone();
    let (nq, nv) = (model.nq(), model.nv());
    let x0 = State { q: dvector(q0, "q0", nq, "model.nq")?, v: dvector(v0, "v0", nv, "model.nv")? };
    let (steps, data) = matrix(controls, "controls", None, nv)?;
    if steps == 0 {
        return Err(input_error("controls must hold at least one step (shape (T, nv), T ≥ 1)"));
    }
    let controls = (0..steps).map(|t| DVector::from_column_slice(&data[t * nv..(t + 1) * nv])).collect();
    let target_v = match target_v.filter(|o| !o.is_none()) {
        Some(v) => dvector(v, "target_v", nv, "model.nv")?,
        None => DVector::zeros(nv),
    };
    let target_q = match target_q.filter(|o| !o.is_none()) {
        Some(q) => dvector(q, "target_q", nq, "model.nq")?,
        None => model.neutral(),
    };
    let target = State { q: target_q, v: target_v };
    let cost = QuadraticCost::new(
        &model,
        target,
        weight(state_weight, "state_weight", 2 * nv)?,
        weight(control_weight, "control_weight", nv)?,
        weight(terminal_weight, "terminal_weight", 2 * nv)?,
    )
    .py_err()?;
    let extras = world_costs(&model, costs)?;
    Ok(Problem { x0, controls, cost, extras })
}

/// Controls, states and timing shared by both results.
#[allow(clippy::too_many_arguments)]
fn common<'py>(
    py: Python<'py>,
    d: &Bound<'py, PyDict>,
    controls: &[DVector<f64>],
    states: &[State],
    cost: f64,
    history: &[f64],
    iterations: usize,
    converged: bool,
    stop: String,
    wall_time: f64,
) -> PyResult<()> {
    let nv = controls.first().map_or(0, |u| u.len());
    let nq = states.first().map_or(0, |s| s.q.len());
    let u: Vec<f64> = controls.iter().flat_map(|u| u.iter().copied()).collect();
    let q: Vec<f64> = states.iter().flat_map(|s| s.q.iter().copied()).collect();
    let v: Vec<f64> = states.iter().flat_map(|s| s.v.iter().copied()).collect();
    d.set_item("controls", out_rows(py, controls.len(), nv, u)?)?;
    d.set_item("q", out_rows(py, states.len(), nq, q)?)?;
    d.set_item("v", out_rows(py, states.len(), nv, v)?)?;
    d.set_item("cost", cost)?;
    d.set_item("cost_history", out_vec(py, history))?;
    d.set_item("iterations", iterations)?;
    d.set_item("converged", converged)?;
    d.set_item("stop", stop)?;
    d.set_item("wall_time", wall_time)?;
    Ok(())
}

fn ilqr_dict<'py>(py: Python<'py>, r: &IlqrResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let stop = format!("{:?}", r.stop);
    let (cost, history) = (r.cost, &r.cost_history);
    common(py, &d, &r.controls, &r.states, cost, history, r.iterations, r.converged, stop, r.wall_time.as_secs_f64())?;
    let gains: Vec<_> = r.feedback.iter().map(|k| out_mat(py, k)).collect();
    d.set_item("feedback", gains)?;
    d.set_item("jacobian_time", r.jacobian_time.as_secs_f64())?;
    d.set_item("jacobian_evaluations", r.jacobian_evaluations)?;
    d.set_item("simulator_steps", r.simulator_steps)?;
    Ok(d)
}

fn shooting_dict<'py>(py: Python<'py>, r: &ShootingResult) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let stop = format!("{:?}", r.stop);
    let (cost, history) = (r.cost, &r.cost_history);
    common(py, &d, &r.controls, &r.states, cost, history, r.iterations, r.converged, stop, r.wall_time.as_secs_f64())?;
    d.set_item("gradient_norm", r.gradient_norm)?;
    d.set_item("cost_evaluations", r.cost_evaluations)?;
    d.set_item("gradient_evaluations", r.gradient_evaluations)?;
    Ok(d)
}

/// Runs an optimizer: with a Python progress `callback`, the GIL held and the callback called
/// with the dict `fill` makes of each progress report (the first exception it raises is kept,
/// later reports skipped, and the exception raised when the optimizer returns); without one,
/// the GIL released.
pub(crate) fn run_with_progress<'py, P, R: Send>(
    py: Python<'py>,
    callback: Option<&Bound<'py, PyAny>>,
    fill: impl Fn(&Bound<'py, PyDict>, &P) -> PyResult<()>,
    run: impl FnOnce(Option<&mut dyn FnMut(&P)>) -> stiction::Result<R> + Send,
) -> PyResult<R> {
    let Some(f) = callback.filter(|c| !c.is_none()) else { return py.detach(|| run(None)).py_err() };
    let mut error: Option<PyErr> = None;
    let mut report = |p: &P| {
        if error.is_some() {
            return;
        }
        let d = PyDict::new(py);
        if let Err(e) = fill(&d, p).and_then(|_| f.call1((d,)).map(|_| ())) {
            error = Some(e);
        }
    };
    let result = run(Some(&mut report));
    match error {
        Some(e) => Err(e),
        None => result.py_err(),
    }
}

/// Sets the `(name, value)` pairs on `d`.
pub(crate) fn set_all(d: &Bound<'_, PyDict>, items: &[(&str, f64)]) -> PyResult<()> {
    items.iter().try_for_each(|(k, v)| d.set_item(*k, *v))
}

/// iLQR (see `stiction.trajopt.ilqr`).
#[pyfunction]
#[pyo3(signature = (
    sim, q0, v0, controls, target_q=None, target_v=None, state_weight=None, control_weight=None,
    terminal_weight=None, lower=None, upper=None, jacobians="analytic", max_iterations=200,
    cost_tolerance=1e-7, callback=None, costs=None
))]
#[allow(clippy::too_many_arguments)]
pub fn _ilqr<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    q0: &Bound<'py, PyAny>,
    v0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    target_q: Option<&Bound<'py, PyAny>>,
    target_v: Option<&Bound<'py, PyAny>>,
    state_weight: Option<&Bound<'py, PyAny>>,
    control_weight: Option<&Bound<'py, PyAny>>,
    terminal_weight: Option<&Bound<'py, PyAny>>,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    jacobians: &str,
    max_iterations: usize,
    cost_tolerance: f64,
    callback: Option<&Bound<'py, PyAny>>,
    costs: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (sw, cw, tw) = default_weights(py, state_weight, control_weight, terminal_weight)?;
    let p = problem(sim, q0, v0, controls, target_q, target_v, &sw, &cw, &tw, costs)?;
    let nv = p.x0.v.len();
    let options = IlqrOptions {
        max_iterations,
        cost_tolerance,
        bounds: bounds(lower, upper, nv)?,
        jacobians: jacobian_source(jacobians)?,
        ..IlqrOptions::default()
    };
    let fill = |d: &Bound<'py, PyDict>, p: &IlqrProgress| {
        set_all(
            d,
            &[
                ("iteration", p.iteration as f64),
                ("cost", p.cost),
                ("step", p.step),
                ("regularization", p.regularization),
                ("elapsed", p.elapsed.as_secs_f64()),
            ],
        )
    };
    let sim = sim.simulator()?;
    let result = run_with_progress(py, callback, fill, |report| {
        ilqr(&mut lock_simulator(sim), &p.x0, &p.controls, &p.total(), &options, report)
    })?;
    ilqr_dict(py, &result)
}

/// Single shooting with L-BFGS (see `stiction.trajopt.shooting`).
#[pyfunction]
#[pyo3(signature = (
    sim, q0, v0, controls, target_q=None, target_v=None, state_weight=None, control_weight=None,
    terminal_weight=None, lower=None, upper=None, max_iterations=500, callback=None, costs=None
))]
#[allow(clippy::too_many_arguments)]
pub fn _shooting<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    q0: &Bound<'py, PyAny>,
    v0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    target_q: Option<&Bound<'py, PyAny>>,
    target_v: Option<&Bound<'py, PyAny>>,
    state_weight: Option<&Bound<'py, PyAny>>,
    control_weight: Option<&Bound<'py, PyAny>>,
    terminal_weight: Option<&Bound<'py, PyAny>>,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    max_iterations: usize,
    callback: Option<&Bound<'py, PyAny>>,
    costs: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (sw, cw, tw) = default_weights(py, state_weight, control_weight, terminal_weight)?;
    let p = problem(sim, q0, v0, controls, target_q, target_v, &sw, &cw, &tw, costs)?;
    let nv = p.x0.v.len();
    let options = ShootingOptions { max_iterations, bounds: bounds(lower, upper, nv)?, ..ShootingOptions::default() };
    let fill = |d: &Bound<'py, PyDict>, p: &ShootingProgress| {
        set_all(
            d,
            &[
                ("iteration", p.iteration as f64),
                ("cost", p.cost),
                ("gradient_norm", p.gradient_norm),
                ("step", p.step),
                ("elapsed", p.elapsed.as_secs_f64()),
            ],
        )
    };
    let sim = sim.simulator()?;
    let result = run_with_progress(py, callback, fill, |report| {
        shooting(&mut lock_simulator(sim), &p.x0, &p.controls, &p.total(), &options, report)
    })?;
    shooting_dict(py, &result)
}

/// The default weights: no running state cost, 1e-3 on the controls, 1 on the terminal state.
#[allow(clippy::type_complexity)]
fn default_weights<'py>(
    py: Python<'py>,
    state: Option<&Bound<'py, PyAny>>,
    control: Option<&Bound<'py, PyAny>>,
    terminal: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let or = |w: Option<&Bound<'py, PyAny>>, d: f64| -> PyResult<Bound<'py, PyAny>> {
        match w.filter(|o| !o.is_none()) {
            Some(w) => Ok(w.clone()),
            None => Ok(d.into_pyobject(py)?.into_any()),
        }
    };
    Ok((or(state, 0.0)?, or(control, 1e-3)?, or(terminal, 1.0)?))
}

/// A world-space term of a trajectory cost, resolved on the simulated model.
enum WorldCost {
    Point(PointCost),
    Obstacle(ObstacleCost),
}

/// A body by name or index: its name, checked against `model`.
fn body_name(model: &Model, body: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    if body.cast::<PyString>().is_ok() {
        let name: String = body.extract()?;
        model.frame_index(&name).map_err(|e| input_error(format!("{what}: {e}")))?;
        return Ok(name);
    }
    match body.extract::<i64>() {
        Ok(i) if i >= 0 && (i as usize) < model.nbodies() => Ok(model.bodies()[i as usize].name.clone()),
        Ok(i) => Err(input_error(format!(
            "{what}: body index {i} out of range (model '{}' has {} bodies)",
            model.name(),
            model.nbodies()
        ))),
        Err(_) => Err(input_error(format!("{what} must be a body name (str) or index (int)"))),
    }
}

/// `q`: nq finite numbers.
fn configuration(model: &Model, q: &Bound<'_, PyAny>) -> PyResult<DVector<f64>> {
    let q = dvector(q, "q", model.nq(), "model.nq")?;
    if let Some((i, x)) = q.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(input_error(format!("q[{i}] is not finite ({x})")));
    }
    Ok(q)
}

/// The body point of a world-space cost on `model` (the simulated one at optimisation time).
fn body_point(model: &Model, body: &str, point: Vec3, what: &str) -> PyResult<BodyPoint> {
    BodyPoint::named(model, body, point).map_err(|e| input_error(format!("{what}: {e}")))
}

/// A world-space cost `½ (p − p*)ᵀ W (p − p*)` on a point `p(q)` fixed on a body.
///
/// :param model: the model whose bodies `body` names; at optimisation time the body is looked
///     up by name in the simulator's model.
/// :param body: the body, by name or index.
/// :param target: the world target `p*` (3,).
/// :param weight: the weight on the final state (`W = weight · diag(axis_weights)`).
/// :param point: the point in the body's frame (3,; default its origin).
/// :param running_weight: the weight on every earlier state (default 0: terminal only).
/// :param axis_weights: per world axis (default 1, 1, 1); `(1, 1, 0)` ignores the height.
/// :raises InputError: an unknown body or index, a non-finite point or target, a negative
///     or non-finite weight.
///
/// Gradients use the exact point Jacobian; iLQR uses the Gauss–Newton Hessian `Jᵀ W J`.
#[pyclass(name = "PointCost", module = "stiction.trajopt", frozen)]
pub struct PyPointCost {
    model: Model,
    body: String,
    point: Vec3,
    target: Vec3,
    weight: f64,
    running_weight: f64,
    axis_weights: Vec3,
}

impl PyPointCost {
    /// The Rust cost on `model` (the body looked up by name).
    fn cost(&self, model: &Model) -> PyResult<PointCost> {
        let point = body_point(model, &self.body, self.point, "PointCost")?;
        PointCost::terminal(point, self.target, self.weight)
            .and_then(|c| c.with_running(self.running_weight))
            .and_then(|c| c.with_axis_weights(self.axis_weights))
            .py_err()
    }
}

#[pymethods]
impl PyPointCost {
    #[new]
    #[pyo3(signature = (model, body, target, weight=1.0, point=None, running_weight=0.0, axis_weights=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &PyModel,
        body: &Bound<'_, PyAny>,
        target: &Bound<'_, PyAny>,
        weight: f64,
        point: Option<&Bound<'_, PyAny>>,
        running_weight: f64,
        axis_weights: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let model = model.model.clone();
        let body = body_name(&model, body, "PointCost body")?;
        let point = point.filter(|o| !o.is_none()).map(|p| vec3(p, "point")).transpose()?.unwrap_or_else(Vec3::zeros);
        let axis_weights = axis_weights
            .filter(|o| !o.is_none())
            .map(|w| vec3(w, "axis_weights"))
            .transpose()?
            .unwrap_or(Vec3::repeat(1.0));
        let c =
            PyPointCost { target: vec3(target, "target")?, model, body, point, weight, running_weight, axis_weights };
        c.cost(&c.model)?;
        Ok(c)
    }

    /// The world position of the body point at configuration `q`, shape (3,).
    fn position<'py>(&self, py: Python<'py>, q: &Bound<'py, PyAny>) -> PyResult<Bound<'py, numpy::PyArray1<f64>>> {
        let q = configuration(&self.model, q)?;
        let p = self.cost(&self.model)?.position(&self.model, &q).py_err()?;
        Ok(out_vec(py, p.as_slice()))
    }

    /// The body's name.
    #[getter]
    fn body(&self) -> String {
        self.body.clone()
    }

    /// The point in the body's frame, shape (3,).
    #[getter]
    fn point<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.point.as_slice())
    }

    /// The world target, shape (3,).
    #[getter]
    fn target<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.target.as_slice())
    }

    /// The terminal weight.
    #[getter]
    fn weight(&self) -> f64 {
        self.weight
    }

    /// The running weight (every step before the last state).
    #[getter]
    fn running_weight(&self) -> f64 {
        self.running_weight
    }

    /// The world-axis weights, shape (3,).
    #[getter]
    fn axis_weights<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.axis_weights.as_slice())
    }

    fn __repr__(&self) -> String {
        format!(
            "PointCost(body='{}', point={:?}, target={:?}, weight={}, running_weight={}, axis_weights={:?})",
            self.body,
            self.point.as_slice(),
            self.target.as_slice(),
            self.weight,
            self.running_weight,
            self.axis_weights.as_slice()
        )
    }
}

/// A smooth penalty `w Σ_k max(0, radius + margin − |p_k − center|)²` keeping body points
/// out of a sphere, on every running step (`running_weight`) and at the end
/// (`terminal_weight`, default `running_weight`).
///
/// :param model: the model whose bodies `points` names (looked up by name in the simulator's
///     model at optimisation time).
/// :param points: the penalised points: each a body (name or index; its origin) or a
///     `(body, point)` pair, the point in the body's frame.
/// :param center: the sphere's centre (3,); `radius` and `margin` in metres (≥ 0).
/// :raises InputError: no points, an unknown body, non-finite or negative values.
///
/// A point exactly at the centre has no direction to be pushed along: the optimisers raise
/// `NumericalError` there.
#[pyclass(name = "ObstacleCost", module = "stiction.trajopt", frozen)]
pub struct PyObstacleCost {
    model: Model,
    points: Vec<(String, Vec3)>,
    center: Vec3,
    radius: f64,
    margin: f64,
    running_weight: f64,
    terminal_weight: f64,
}

impl PyObstacleCost {
    /// The Rust cost on `model` (the bodies looked up by name).
    fn cost(&self, model: &Model) -> PyResult<ObstacleCost> {
        let points = self
            .points
            .iter()
            .map(|(body, p)| body_point(model, body, *p, "ObstacleCost"))
            .collect::<PyResult<Vec<_>>>()?;
        ObstacleCost::new(points, self.center, self.radius, self.margin, self.running_weight, self.terminal_weight)
            .py_err()
    }
}

/// One entry of `ObstacleCost(points=...)`: a body (its origin) or a `(body, point)` pair.
fn obstacle_point(model: &Model, item: &Bound<'_, PyAny>, i: usize) -> PyResult<(String, Vec3)> {
    let what = format!("points[{i}]");
    if item.cast::<PyTuple>().is_ok() || item.cast::<PyList>().is_ok() {
        let len = item.len()?;
        if len != 2 {
            return Err(input_error(format!("{what} must be a body or a (body, point) pair, got {len} items")));
        }
        let body = body_name(model, &item.get_item(0)?, &what)?;
        return Ok((body, vec3(&item.get_item(1)?, &format!("{what} point"))?));
    }
    Ok((body_name(model, item, &what)?, Vec3::zeros()))
}

#[pymethods]
impl PyObstacleCost {
    #[new]
    #[pyo3(signature = (model, points, center, radius, margin=0.0, running_weight=1.0, terminal_weight=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        model: &PyModel,
        points: &Bound<'_, PyAny>,
        center: &Bound<'_, PyAny>,
        radius: f64,
        margin: f64,
        running_weight: f64,
        terminal_weight: Option<f64>,
    ) -> PyResult<Self> {
        let model = model.model.clone();
        if points.cast::<PyString>().is_ok() {
            return Err(input_error("points must be a sequence of bodies or (body, point) pairs, got a str"));
        }
        let items = points
            .try_iter()
            .map_err(|_| input_error("points must be a sequence of bodies or (body, point) pairs"))?
            .enumerate()
            .map(|(i, item)| obstacle_point(&model, &item?, i))
            .collect::<PyResult<Vec<_>>>()?;
        let c = PyObstacleCost {
            model,
            points: items,
            center: vec3(center, "center")?,
            radius,
            margin,
            running_weight,
            terminal_weight: terminal_weight.unwrap_or(running_weight),
        };
        c.cost(&c.model)?;
        Ok(c)
    }

    /// The smallest clearance `|p_k − c| − radius` of the points at configuration `q`
    /// (negative inside the sphere; the margin is not subtracted).
    fn clearance(&self, q: &Bound<'_, PyAny>) -> PyResult<f64> {
        let q = configuration(&self.model, q)?;
        self.cost(&self.model)?.clearance(&self.model, &q).py_err()
    }

    /// The bodies of the points, in order.
    #[getter]
    fn bodies(&self) -> Vec<String> {
        self.points.iter().map(|(b, _)| b.clone()).collect()
    }

    /// The points in their bodies' frames, shape (K, 3).
    #[getter]
    fn points<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray2<f64>>> {
        let data = self.points.iter().flat_map(|(_, p)| p.iter().copied()).collect();
        out_rows(py, self.points.len(), 3, data)
    }

    /// The sphere's centre, shape (3,).
    #[getter]
    fn center<'py>(&self, py: Python<'py>) -> Bound<'py, numpy::PyArray1<f64>> {
        out_vec(py, self.center.as_slice())
    }

    /// The sphere's radius.
    #[getter]
    fn radius(&self) -> f64 {
        self.radius
    }

    /// The safety margin: the penalty starts `margin` outside the sphere.
    #[getter]
    fn margin(&self) -> f64 {
        self.margin
    }

    /// The weight on every running step.
    #[getter]
    fn running_weight(&self) -> f64 {
        self.running_weight
    }

    /// The weight on the final state.
    #[getter]
    fn terminal_weight(&self) -> f64 {
        self.terminal_weight
    }

    fn __repr__(&self) -> String {
        format!(
            "ObstacleCost({} points, center={:?}, radius={}, margin={}, running_weight={}, terminal_weight={})",
            self.points.len(),
            self.center.as_slice(),
            self.radius,
            self.margin,
            self.running_weight,
            self.terminal_weight
        )
    }
}

/// The `costs` argument: None, one cost or a sequence of `PointCost`/`ObstacleCost`,
/// resolved on the simulated `model`.
fn world_costs(model: &Model, costs: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<WorldCost>> {
    let Some(costs) = costs.filter(|o| !o.is_none()) else { return Ok(vec![]) };
    let one = |c: &Bound<'_, PyAny>, what: &str| -> PyResult<WorldCost> {
        if let Ok(p) = c.cast::<PyPointCost>() {
            return Ok(WorldCost::Point(p.get().cost(model)?));
        }
        if let Ok(o) = c.cast::<PyObstacleCost>() {
            return Ok(WorldCost::Obstacle(o.get().cost(model)?));
        }
        let kind = c.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        Err(input_error(format!("{what} must be a stiction.trajopt.PointCost or ObstacleCost, got {kind}")))
    };
    if costs.cast::<PyPointCost>().is_ok() || costs.cast::<PyObstacleCost>().is_ok() {
        return Ok(vec![one(costs, "costs")?]);
    }
    let items = costs
        .try_iter()
        .map_err(|_| input_error("costs must be a PointCost, an ObstacleCost or a sequence of them"))?;
    items.enumerate().map(|(i, c)| one(&c?, &format!("costs[{i}]"))).collect()
}

/// Registers the cost classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPointCost>()?;
    m.add_class::<PyObstacleCost>()?;
    Ok(())
}
