//! System identification from Python (`stiction.sysid`): Levenberg–Marquardt fits of
//! named model parameters to observed trajectories (`stiction::optim::sysid`).

use crate::convert::{array, dvector, matrix, out_mat, out_vec};
use crate::errors::{input_error, IntoPyResult};
use crate::optim::{run_with_progress, set_all};
use crate::simulator::PySimulator;
use nalgebra::DVector;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use stiction::model::ParamSpec;
use stiction::optim::{
    sysid, sysid_with, Evaluation, JacobianSource, Observation, ParamBounds, Sigma, SysIdEvaluator, SysIdOptions,
    SysIdProblem, SysIdProgress, SysIdReport, Trajectory,
};

/// σ from a scalar or an nv-vector (`None`: 1).
fn sigma(obj: Option<Bound<'_, PyAny>>, name: &str, nv: usize) -> PyResult<Sigma> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(Sigma::Scalar(1.0)) };
    let a = array(&obj, name)?;
    match a.shape.as_slice() {
        [] => Ok(Sigma::Scalar(a.data[0])),
        [k] if *k == nv => Ok(Sigma::PerChannel(DVector::from_vec(a.data))),
        shape => Err(input_error(format!("{name} must be a scalar or a vector of length {nv}, got shape {shape:?}"))),
    }
}

/// One trajectory dict: `q0`, `v0`, `controls` (T, nv), `q` (K, nq) observed
/// configurations, optional `v` (K, nv), `steps` (K indices t of the observed states
/// x_t; default 1..K), `sigma_q`, `sigma_v`.
fn trajectory(d: &Bound<'_, PyAny>, i: usize, nq: usize, nv: usize) -> PyResult<Trajectory> {
    let d = d.cast::<PyDict>().map_err(|_| input_error(format!("trajectories[{i}] must be a dict")))?;
    let known = ["q0", "v0", "controls", "q", "v", "steps", "sigma_q", "sigma_v"];
    for key in d.keys() {
        let k: String = key.extract()?;
        if !known.contains(&k.as_str()) {
            return Err(input_error(format!(
                "trajectories[{i}]: unknown key '{k}'; expected some of {}",
                known.join(", ")
            )));
        }
    }
    let get = |k: &str| -> PyResult<Bound<'_, PyAny>> {
        d.get_item(k)?.filter(|o| !o.is_none()).ok_or_else(|| input_error(format!("trajectories[{i}] needs '{k}'")))
    };
    let q0 = dvector(&get("q0")?, &format!("trajectories[{i}].q0"), nq, "model.nq")?;
    let v0 = dvector(&get("v0")?, &format!("trajectories[{i}].v0"), nv, "model.nv")?;
    let (steps, u) = matrix(&get("controls")?, &format!("trajectories[{i}].controls"), None, nv)?;
    let controls = (0..steps).map(|t| DVector::from_column_slice(&u[t * nv..(t + 1) * nv])).collect();
    let (k, qs) = matrix(&get("q")?, &format!("trajectories[{i}].q"), None, nq)?;
    let vs = match d.get_item("v")?.filter(|o| !o.is_none()) {
        Some(v) => Some(matrix(&v, &format!("trajectories[{i}].v"), Some(k), nv)?.1),
        None => None,
    };
    let times: Vec<usize> = match d.get_item("steps")?.filter(|o| !o.is_none()) {
        Some(s) => {
            s.extract().map_err(|_| input_error(format!("trajectories[{i}].steps must be non-negative integers")))?
        }
        None => (1..=k).collect(),
    };
    if times.len() != k {
        return Err(input_error(format!("trajectories[{i}]: {} steps for {k} observed states", times.len())));
    }
    let sigma_q = sigma(d.get_item("sigma_q")?, &format!("trajectories[{i}].sigma_q"), nv)?;
    let sigma_v = sigma(d.get_item("sigma_v")?, &format!("trajectories[{i}].sigma_v"), nv)?;
    let observed = (0..k)
        .map(|j| Observation {
            step: times[j],
            q: Some(DVector::from_column_slice(&qs[j * nq..(j + 1) * nq])),
            sigma_q: sigma_q.clone(),
            v: vs.as_ref().map(|v| DVector::from_column_slice(&v[j * nv..(j + 1) * nv])),
            sigma_v: sigma_v.clone(),
        })
        .collect();
    Ok(Trajectory { q0, v0, controls, observed })
}

fn report_dict<'py>(py: Python<'py>, r: &SysIdReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("names", r.names.clone())?;
    d.set_item("theta", out_vec(py, r.theta.as_slice()))?;
    d.set_item("theta_initial", out_vec(py, r.theta_initial.as_slice()))?;
    d.set_item("std_dev", out_vec(py, r.std_dev.as_slice()))?;
    d.set_item("covariance", out_mat(py, &r.covariance))?;
    d.set_item("correlation", out_mat(py, &r.correlation))?;
    d.set_item("rank", r.rank)?;
    let dirs: Vec<_> = r.unidentifiable.iter().map(|x| out_vec(py, x.as_slice())).collect();
    d.set_item("unidentifiable", PyList::new(py, dirs)?)?;
    d.set_item("at_bound", r.at_bound.clone())?;
    d.set_item("initial_cost", r.initial_cost)?;
    d.set_item("cost", r.cost)?;
    d.set_item("cost_history", out_vec(py, &r.cost_history))?;
    d.set_item("residual_count", r.residual_count)?;
    d.set_item("residual_variance", r.residual_variance)?;
    let rms = PyDict::new(py);
    for c in &r.channels {
        rms.set_item(&c.name, c.rms)?;
    }
    d.set_item("residual_rms", rms)?;
    d.set_item("iterations", r.iterations)?;
    d.set_item("converged", r.converged)?;
    d.set_item("stop", format!("{:?}", r.stop))?;
    d.set_item("wall_time", r.wall_time.as_secs_f64())?;
    d.set_item("jacobian_time", r.jacobian_time.as_secs_f64())?;
    d.set_item("jacobian_evaluations", r.jacobian_evaluations)?;
    d.set_item("simulator_steps", r.simulator_steps)?;
    d.set_item("report", r.to_string())?;
    d.set_item("model", crate::model::PyModel::new(r.model.clone()))?;
    Ok(d)
}

/// The problem, start values, bounds and Jacobian source of `sysid.fit`'s arguments.
type Parsed = (SysIdProblem, DVector<f64>, Option<ParamBounds>, JacobianSource);

/// Parses `sysid.fit`'s arguments (shared by the fit and the evaluation of a slice).
#[allow(clippy::too_many_arguments)]
fn parse<'py>(
    sim: &PySimulator,
    params: Vec<String>,
    trajectories: &Bound<'py, PyAny>,
    theta0: Option<&Bound<'py, PyAny>>,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    jacobians: &str,
) -> PyResult<Parsed> {
    let (model, options) = {
        let s = sim.lock()?;
        (s.model().clone(), s.options().clone())
    };
    let (nq, nv) = (model.nq(), model.nv());
    let spec = ParamSpec::parse(&model, &params).py_err()?;
    let np = spec.len();
    let list = trajectories
        .cast::<PyList>()
        .map_err(|_| input_error("trajectories must be a list of dicts (q0, v0, controls, q, ...)"))?;
    let data = list.iter().enumerate().map(|(i, d)| trajectory(&d, i, nq, nv)).collect::<PyResult<Vec<_>>>()?;
    let problem = SysIdProblem::new(model, options, spec, data).py_err()?;
    let theta0 = match theta0.filter(|o| !o.is_none()) {
        Some(t) => dvector(t, "theta0", np, "the number of parameter values")?,
        None => problem.initial_values(),
    };
    let side = |obj: Option<&Bound<'py, PyAny>>, name: &str| -> PyResult<Option<DVector<f64>>> {
        obj.filter(|o| !o.is_none()).map(|o| dvector(o, name, np, "the number of parameter values")).transpose()
    };
    let bounds = match (side(lower, "lower")?, side(upper, "upper")?) {
        (None, None) => None,
        (lo, hi) => {
            let physical = ParamBounds::physical(problem.spec());
            Some(ParamBounds::new(lo.unwrap_or(physical.lower), hi.unwrap_or(physical.upper)))
        }
    };
    let jacobians = match jacobians {
        "analytic" => JacobianSource::Analytic,
        "finite_difference" | "fd" => JacobianSource::FiniteDifference,
        other => {
            return Err(input_error(format!("jacobians must be 'analytic' or 'finite_difference', got '{other}'")))
        }
    };
    Ok((problem, theta0, bounds, jacobians))
}

/// A Python callable `evaluate(theta, jacobian, trial)` as a [`SysIdEvaluator`]: it returns
/// `None` (a failed trial rollout) or `(r, J or None, simulator_steps)`; the first exception
/// it raises is kept and ends the fit.
struct PyEvaluator<'a, 'py> {
    f: &'a Bound<'py, PyAny>,
    error: Option<PyErr>,
}

impl PyEvaluator<'_, '_> {
    fn call(&mut self, theta: &DVector<f64>, jacobian: bool, trial: bool) -> PyResult<Option<Evaluation>> {
        let py = self.f.py();
        let out = self.f.call1((out_vec(py, theta.as_slice()), jacobian, trial))?;
        if out.is_none() {
            return Ok(None);
        }
        let (r, j, steps): (Bound<'_, PyAny>, Bound<'_, PyAny>, usize) = out.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("evaluate must return None or a tuple (r, J or None, steps)")
        })?;
        let residuals = DVector::from_vec(array(&r, "evaluate()[0]")?.data);
        let jacobian = match j.is_none() {
            true => None,
            false => {
                let a = array(&j, "evaluate()[1]")?;
                match a.shape.as_slice() {
                    [n, p] => Some(nalgebra::DMatrix::from_row_slice(*n, *p, &a.data)),
                    shape => return Err(input_error(format!("evaluate()[1] must be a matrix, got shape {shape:?}"))),
                }
            }
        };
        Ok(Some(Evaluation { residuals, jacobian, simulator_steps: steps }))
    }
}

impl SysIdEvaluator for PyEvaluator<'_, '_> {
    fn evaluate(&mut self, theta: &DVector<f64>, jacobian: bool, trial: bool) -> stiction::Result<Option<Evaluation>> {
        if self.error.is_some() {
            return Err(stiction::Error::InvalidInput("the evaluator failed".to_string()));
        }
        self.call(theta, jacobian, trial).map_err(|e| {
            let message = e.to_string();
            self.error = Some(e);
            stiction::Error::InvalidInput(format!("the evaluator raised: {message}"))
        })
    }
}

/// Levenberg–Marquardt system identification (see `stiction.sysid.fit`). `evaluate`: a
/// callable `evaluate(theta, jacobian, trial)` computing the residuals (and Jacobian)
/// instead of this process, as `_sysid_evaluate` over the trajectories (`stiction.distributed`).
#[pyfunction]
#[pyo3(signature = (
    sim, params, trajectories, theta0=None, lower=None, upper=None, jacobians="analytic",
    max_iterations=100, callback=None, evaluate=None
))]
#[allow(clippy::too_many_arguments)]
pub fn _sysid_fit<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    params: Vec<String>,
    trajectories: &Bound<'py, PyAny>,
    theta0: Option<&Bound<'py, PyAny>>,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    jacobians: &str,
    max_iterations: usize,
    callback: Option<&Bound<'py, PyAny>>,
    evaluate: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let (problem, theta0, bounds, jacobians) = parse(sim, params, trajectories, theta0, lower, upper, jacobians)?;
    let opts = SysIdOptions { max_iterations, bounds, jacobians, ..SysIdOptions::default() };
    let fill = |d: &Bound<'py, PyDict>, p: &SysIdProgress| {
        set_all(
            d,
            &[
                ("iteration", p.iteration as f64),
                ("cost", p.cost),
                ("gain_ratio", p.gain_ratio),
                ("damping", p.damping),
                ("step_norm", p.step_norm),
                ("elapsed", p.elapsed.as_secs_f64()),
            ],
        )?;
        d.set_item("accepted", p.accepted)
    };
    let report = match evaluate.filter(|e| !e.is_none()) {
        None => run_with_progress(py, callback, fill, |progress| sysid(&problem, &theta0, &opts, progress))?,
        Some(f) => {
            // The evaluator calls Python: the fit keeps the GIL.
            let mut evaluator = PyEvaluator { f, error: None };
            let callback = callback.filter(|c| !c.is_none());
            let mut callback_error: Option<PyErr> = None;
            let mut report = |p: &SysIdProgress| {
                let Some(cb) = callback else { return };
                if callback_error.is_some() {
                    return;
                }
                let d = PyDict::new(py);
                if let Err(e) = fill(&d, p).and_then(|_| cb.call1((d,)).map(|_| ())) {
                    callback_error = Some(e);
                }
            };
            let result = sysid_with(&problem, &theta0, &opts, Some(&mut report), &mut evaluator);
            if let Some(e) = evaluator.error.take().or(callback_error) {
                return Err(e);
            }
            result.py_err()?
        }
    };
    report_dict(py, &report)
}

/// The residuals of `trajectories` at `theta` and, with `jacobian`, their Jacobian, as a fit
/// of `sysid.fit`'s arguments computes them (`SysIdProblem::evaluate`): `(r, J or None,
/// simulator_steps)`. The work of one slice of a distributed fit (`stiction.distributed`).
#[pyfunction]
#[pyo3(signature = (sim, params, trajectories, theta, jacobian, lower=None, upper=None, jacobians="analytic"))]
#[allow(clippy::too_many_arguments)]
pub fn _sysid_evaluate<'py>(
    py: Python<'py>,
    sim: &PySimulator,
    params: Vec<String>,
    trajectories: &Bound<'py, PyAny>,
    theta: &Bound<'py, PyAny>,
    jacobian: bool,
    lower: Option<&Bound<'py, PyAny>>,
    upper: Option<&Bound<'py, PyAny>>,
    jacobians: &str,
) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
    let (problem, _, bounds, source) = parse(sim, params, trajectories, None, lower, upper, jacobians)?;
    let theta = dvector(theta, "theta", problem.spec().len(), "the number of parameter values")?;
    let bounds = bounds.unwrap_or_else(|| ParamBounds::physical(problem.spec()));
    let fd_step = SysIdOptions::default().fd_step;
    let e = py.detach(|| problem.evaluate(&theta, jacobian, source, fd_step, &bounds)).py_err()?;
    let r = out_vec(py, e.residuals.as_slice()).into_any();
    let j = match &e.jacobian {
        Some(j) => out_mat(py, j).into_any(),
        None => py.None().into_bound(py),
    };
    pyo3::types::PyTuple::new(py, [r, j, e.simulator_steps.into_pyobject(py)?.into_any()])
}
