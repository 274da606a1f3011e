//! Trajectory optimization from Python (`stiction.trajopt`): iLQR and single shooting
//! over a `Simulator` with a quadratic cost (`stiction::optim`).

use crate::convert::{array, dvector, matrix, out_mat, out_rows, out_vec};
use crate::errors::{input_error, IntoPyResult};
use crate::simulator::PySimulator;
use nalgebra::{DMatrix, DVector};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stiction::optim::{
    ilqr, shooting, ControlBounds, IlqrOptions, IlqrProgress, IlqrResult, JacobianSource, QuadraticCost,
    ShootingOptions, ShootingProgress, ShootingResult,
};
use stiction::State;

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

/// The common inputs of both methods: start state, initial controls, cost.
struct Problem {
    x0: State,
    controls: Vec<DVector<f64>>,
    cost: QuadraticCost,
}

#[allow(clippy::too_many_arguments)]
fn problem(
    sim: &PySimulator,
    q0: &Bound<'_, PyAny>,
    v0: &Bound<'_, PyAny>,
    controls: &Bound<'_, PyAny>,
    target_q: &Bound<'_, PyAny>,
    target_v: Option<&Bound<'_, PyAny>>,
    state_weight: &Bound<'_, PyAny>,
    control_weight: &Bound<'_, PyAny>,
    terminal_weight: &Bound<'_, PyAny>,
) -> PyResult<Problem> {
    let model = sim.lock().model().clone();
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
    let target = State { q: dvector(target_q, "target_q", nq, "model.nq")?, v: target_v };
    let cost = QuadraticCost::new(
        &model,
        target,
        weight(state_weight, "state_weight", 2 * nv)?,
        weight(control_weight, "control_weight", nv)?,
        weight(terminal_weight, "terminal_weight", 2 * nv)?,
    )
    .py_err()?;
    Ok(Problem { x0, controls, cost })
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
    sim, q0, v0, controls, target_q, target_v=None, state_weight=None, control_weight=None,
    terminal_weight=None, lower=None, upper=None, jacobians="analytic", max_iterations=200,
    cost_tolerance=1e-7, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub fn _ilqr<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    q0: &Bound<'py, PyAny>,
    v0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    target_q: &Bound<'py, PyAny>,
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
) -> PyResult<Bound<'py, PyDict>> {
    let (sw, cw, tw) = default_weights(py, state_weight, control_weight, terminal_weight)?;
    let p = problem(sim, q0, v0, controls, target_q, target_v, &sw, &cw, &tw)?;
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
    let result = run_with_progress(py, callback, fill, |report| {
        ilqr(&mut sim.lock(), &p.x0, &p.controls, &p.cost, &options, report)
    })?;
    ilqr_dict(py, &result)
}

/// Single shooting with L-BFGS (see `stiction.trajopt.shooting`).
#[pyfunction]
#[pyo3(signature = (
    sim, q0, v0, controls, target_q, target_v=None, state_weight=None, control_weight=None,
    terminal_weight=None, lower=None, upper=None, max_iterations=500, callback=None
))]
#[allow(clippy::too_many_arguments)]
pub fn _shooting<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    q0: &Bound<'py, PyAny>,
    v0: &Bound<'py, PyAny>,
    controls: &Bound<'py, PyAny>,
    target_q: &Bound<'py, PyAny>,
    target_v: Option<&Bound<'py, PyAny>>,
    state_weight: Option<&Bound<'py, PyAny>>,
    control_weight: Option<&Bound<'py, PyAny>>,
    terminal_weight: Option<&Bound<'py, PyAny>>,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    max_iterations: usize,
    callback: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (sw, cw, tw) = default_weights(py, state_weight, control_weight, terminal_weight)?;
    let p = problem(sim, q0, v0, controls, target_q, target_v, &sw, &cw, &tw)?;
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
    let result = run_with_progress(py, callback, fill, |report| {
        shooting(&mut sim.lock(), &p.x0, &p.controls, &p.cost, &options, report)
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
