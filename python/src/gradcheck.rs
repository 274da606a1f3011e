//! `stiction.gradcheck` and `stiction.GradReport`: analytic step Jacobians against
//! finite differences; `stiction.load_scene` and `stiction.gradcheck_scene`: scene files
//! (rigid or soft-body) of `stiction gradcheck`.

use crate::contact_options::contact_options;
use crate::convert::{dvector, out_vec, wrenches};
use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use crate::params::params_arg;
use crate::params::PyParamSpec;
use crate::simulator::velocity_products;
use crate::simulator::PySimulator;
use crate::soft::PySoftBody;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use stiction::gradcheck::{check_step, AnyScene, FdMethod, GradReport, GradcheckConfig, Scene, SoftScene};
use stiction::soft::{SoftIntegrator, SoftLinearSolver};
use stiction::step::IntegratorOptions;
use stiction::{Control, SimOptions, Simulator, State};

/// The result of `stiction.gradcheck`: one comparison per Jacobian block (and per
/// method with `method="both"`). `str(report)` is a table of the blocks.
#[pyclass(name = "GradReport", module = "stiction", frozen)]
pub struct PyGradReport {
    report: GradReport,
}

impl PyGradReport {
    /// Wraps a report (for the other modules' checkers).
    pub fn from_report(report: GradReport) -> Self {
        PyGradReport { report }
    }
}

#[pymethods]
impl PyGradReport {
    /// True when every block passes.
    #[getter]
    fn passed(&self) -> bool {
        self.report.passed()
    }

    /// The relative tolerance the blocks were judged with.
    #[getter]
    fn rel_tol(&self) -> f64 {
        self.report.rel_tol
    }

    /// A one-line description of what was checked.
    #[getter]
    fn title(&self) -> &str {
        &self.report.title
    }

    /// The largest relative error over all blocks.
    #[getter]
    fn max_rel_error(&self) -> f64 {
        self.report.max_rel_error()
    }

    /// One dict per block: `name` (e.g. `"dv+/dq"`), `method` (`"central"` or
    /// `"ridders"`), `shape`, `max_abs_error`, `max_rel_error`, `worst_row`, `worst_col`
    /// (the entry of largest relative error), `worst` (its label), `analytic` and `fd`
    /// (the two values there), `fd_error_estimate` (Ridders' estimate or None), `scale`
    /// (largest |fd| of the block) and `passed`.
    #[getter]
    fn blocks<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.report
            .blocks
            .iter()
            .map(|b| {
                let d = PyDict::new(py);
                d.set_item("name", &b.name)?;
                d.set_item("method", b.method.name())?;
                d.set_item("shape", b.shape)?;
                d.set_item("max_abs_error", b.max_abs_error)?;
                d.set_item("max_rel_error", b.max_rel_error)?;
                d.set_item("worst_row", b.worst.0)?;
                d.set_item("worst_col", b.worst.1)?;
                d.set_item("worst", b.worst_label())?;
                d.set_item("analytic", b.analytic)?;
                d.set_item("fd", b.fd)?;
                d.set_item("fd_error_estimate", b.fd_error_estimate)?;
                d.set_item("scale", b.scale)?;
                d.set_item("passed", b.passed)?;
                Ok(d)
            })
            .collect()
    }

    fn __bool__(&self) -> bool {
        self.report.passed()
    }

    fn __str__(&self) -> String {
        self.report.to_string()
    }

    fn __repr__(&self) -> String {
        let failed = self.report.failures().len();
        format!(
            "GradReport(blocks={}, failed={failed}, max_rel_error={:.2e}, passed={})",
            self.report.blocks.len(),
            self.report.max_rel_error(),
            if self.report.passed() { "True" } else { "False" }
        )
    }
}

/// Checks the analytic Jacobians of one simulator step from `(q, v)` under `tau`
/// against finite differences of the step. `contact` takes the same values as
/// `Simulator(contact=...)`.
#[pyfunction]
#[pyo3(signature = (
    model, q, v, tau, params=None, dt=1e-3, velocity_products="midpoint", method="ridders",
    rel_tol=1e-6, step=1e-3, abs_floor=1e-5, wrenches=None, gravity=None, contact=None
))]
#[allow(clippy::too_many_arguments)]
pub fn gradcheck(
    py: Python<'_>,
    model: &PyModel,
    q: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    tau: &Bound<'_, PyAny>,
    params: Option<&Bound<'_, PyAny>>,
    dt: f64,
    velocity_products: &str,
    method: &str,
    rel_tol: f64,
    step: f64,
    abs_floor: f64,
    wrenches: Option<&Bound<'_, PyAny>>,
    gravity: Option<&Bound<'_, PyAny>>,
    contact: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyGradReport> {
    let m = &model.model;
    let (nq, nv) = (m.nq(), m.nv());
    let state = State { q: dvector(q, "q", nq, "model.nq")?, v: dvector(v, "v", nv, "model.nv")? };
    let control =
        Control { tau: dvector(tau, "tau", nv, "model.nv")?, wrenches: self::wrenches(wrenches, m.nbodies())? };
    let gravity = gravity.filter(|g| !g.is_none()).map(|g| crate::convert::vec3(g, "gravity")).transpose()?;
    let integrator =
        IntegratorOptions { velocity_products: self::velocity_products(velocity_products)?, ..Default::default() };
    let contact = contact_options(contact)?;
    let options = SimOptions { dt, gravity, integrator, contact };
    // Parsing depends on the tree only, not on the gravity override.
    let params = params_arg(params, m)?;
    let method = FdMethod::parse(method)
        .ok_or_else(|| input_error(format!("method must be 'central', 'ridders' or 'both', got '{method}'")))?;
    let config = GradcheckConfig { method, step, rel_tol, abs_floor };
    let report = py.detach(|| check_step(m, &options, &params, &state, &control, &config)).py_err()?;
    Ok(PyGradReport { report })
}

/// Loads a scene file (the JSON format of `stiction gradcheck` and `examples/scenes`,
/// see `docs/gradients.md`), rigid or soft-body. Returns a dict with `kind` (`"rigid"` or
/// `"soft"`), `description` (str or None), `tolerance` (float or None) and `dt`.
///
/// A rigid scene (a model source: `"sample"`, `"urdf"`, `"mjcf"` or `"model"`) adds
/// `model` (`Model`), `simulator` (a `Simulator` with the scene's options and `params`),
/// `params` (`ParamSpec`), `q`, `v`, `tau` (arrays, or None when the scene gives no
/// state/control).
///
/// A soft-body scene (a top-level `"soft"`) adds `body` (`SoftBody`), `options` (a dict
/// `dt`, `tolerance`, `max_iterations`, `line_search`, `integrator`, `linear_solver`: the keyword arguments
/// of `SoftBody.step`), `x`, `v` (arrays, or None without a state), `u` and `targets`
/// (arrays, or None where the scene leaves them random).
///
/// Raises `InputError` for a missing or malformed file (the message names the file and
/// the bad field) and `LoadError` when the scene's URDF, MJCF or mesh file (or a mesh of
/// it) cannot be loaded.
#[pyfunction]
pub fn load_scene<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    match py.detach(|| AnyScene::load(&path)).py_err()? {
        AnyScene::Rigid(scene) => rigid_scene_dict(py, *scene),
        AnyScene::Soft(scene) => soft_scene_dict(py, scene),
    }
}

fn rigid_scene_dict(py: Python<'_>, scene: Scene) -> PyResult<Bound<'_, PyDict>> {
    let Scene { description, model, options, state, control, params, tolerance } = scene;
    let d = PyDict::new(py);
    d.set_item("kind", "rigid")?;
    d.set_item("description", description)?;
    d.set_item("dt", options.dt)?;
    d.set_item("params", PyParamSpec::wrap(params.clone(), &model)?)?;
    d.set_item("model", PyModel::new(model.clone()))?;
    let mut sim = Simulator::new(model, options).py_err()?;
    sim.set_params(params);
    d.set_item("simulator", PySimulator::from_simulator(py, sim)?)?;
    let (q, v) = match &state {
        Some(s) => (Some(out_vec(py, s.q.as_slice())), Some(out_vec(py, s.v.as_slice()))),
        None => (None, None),
    };
    d.set_item("q", q)?;
    d.set_item("v", v)?;
    d.set_item("tau", control.as_ref().map(|c| out_vec(py, c.tau.as_slice())))?;
    d.set_item("tolerance", tolerance)?;
    Ok(d)
}

fn soft_scene_dict(py: Python<'_>, scene: SoftScene) -> PyResult<Bound<'_, PyDict>> {
    let SoftScene { description, body, options, state, u, targets, tolerance } = scene;
    let d = PyDict::new(py);
    d.set_item("kind", "soft")?;
    d.set_item("description", description)?;
    d.set_item("dt", options.dt)?;
    d.set_item("body", PySoftBody::from_body(body))?;
    let o = PyDict::new(py);
    o.set_item("dt", options.dt)?;
    o.set_item("tolerance", options.tolerance)?;
    o.set_item("max_iterations", options.max_iterations)?;
    o.set_item("line_search", options.line_search)?;
    let integrator = match options.integrator {
        SoftIntegrator::BackwardEuler => "backward_euler",
        SoftIntegrator::ImplicitMidpoint => "implicit_midpoint",
    };
    o.set_item("integrator", integrator)?;
    let linear_solver = match options.linear_solver {
        SoftLinearSolver::Direct => "direct",
        SoftLinearSolver::KeptFactor { single_precision: true } => "kept_factor",
        SoftLinearSolver::KeptFactor { single_precision: false } => "kept_factor_f64",
        SoftLinearSolver::PcrGpu => "pcr_gpu",
    };
    o.set_item("linear_solver", linear_solver)?;
    d.set_item("options", o)?;
    let (x, v) = match &state {
        Some(s) => (Some(out_vec(py, s.x.as_slice())), Some(out_vec(py, s.v.as_slice()))),
        None => (None, None),
    };
    d.set_item("x", x)?;
    d.set_item("v", v)?;
    d.set_item("u", u.as_ref().map(|u| out_vec(py, u.as_slice())))?;
    d.set_item("targets", targets.as_ref().map(|t| out_vec(py, t.as_slice())))?;
    d.set_item("tolerance", tolerance)?;
    Ok(d)
}

/// Runs the gradient checks of a scene file, rigid or soft-body, as `stiction gradcheck
/// SCENE` does: `states` cases (default 1 when the scene has a state, else 5; the first is
/// the scene's state when it has one, the others random, reproducible from `seed`), each
/// checked by finite differences (`method` `"ridders"`, `"central"` or `"both"`, step
/// `step`) with the relative tolerance `rel_tol` (default: the scene's `tolerance`, else
/// 1e-6). Returns one `GradReport` per case. Raises as `load_scene` for the file,
/// `InputError` for invalid settings, and the error of a check that cannot be computed
/// (e.g. `NumericalError`).
#[pyfunction]
#[pyo3(signature = (path, states=None, seed=0, method="ridders", rel_tol=None, step=1e-3, abs_floor=1e-5))]
#[allow(clippy::too_many_arguments)]
pub fn gradcheck_scene(
    py: Python<'_>,
    path: PathBuf,
    states: Option<&Bound<'_, PyAny>>,
    seed: u64,
    method: &str,
    rel_tol: Option<f64>,
    step: f64,
    abs_floor: f64,
) -> PyResult<Vec<PyGradReport>> {
    let states = states.filter(|s| !s.is_none()).map(|s| crate::convert::count(s, "states", 1)).transpose()?;
    let method = FdMethod::parse(method)
        .ok_or_else(|| input_error(format!("method must be 'central', 'ridders' or 'both', got '{method}'")))?;
    let scene = py.detach(|| AnyScene::load(&path)).py_err()?;
    let rel_tol = rel_tol.or(scene.tolerance()).unwrap_or(GradcheckConfig::default().rel_tol);
    let config = GradcheckConfig { method, step, rel_tol, abs_floor };
    config.validate().py_err()?;
    let n = states.unwrap_or(if scene.has_state() { 1 } else { 5 });
    (0..n)
        .map(|k| {
            let report = py.detach(|| scene.check(k, seed, &config)).py_err()?;
            Ok(PyGradReport { report })
        })
        .collect()
}
