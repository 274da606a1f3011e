//! The `contact=` argument of `Simulator` and `gradcheck`: `None`, a bool or a dict
//! of `ContactOptions` fields (the LCP solver's options flat beside them), and the
//! dict `Simulator.contact_options` returns.

use crate::errors::{input_error, IntoPyResult};
use pyo3::exceptions::PyRuntimeWarning;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyString};
use std::ffi::CString;
use stiction::solver::ncp::{LinearSolve, NcpFunction, NcpSolver};
use stiction::step::{BounceGradients, ContactModel, ContactOptions, ContactSolver, PenetrationRecovery};

/// The keys a `contact` dict accepts, in the order `Simulator.contact_options` lists them.
pub const KEYS: [&str; 22] = [
    "enabled",
    "model",
    "solver",
    "margin",
    "penetration",
    "erp",
    "position_regularization",
    "penetration_tolerance",
    "normal_compliance",
    "friction_compliance",
    "restitution_threshold",
    "joint_limit_margin",
    "warm_start",
    "bounce_gradients",
    "tolerance",
    "max_pivots",
    "pgs_iterations",
    "pgs_tolerance",
    "standardize",
    "friction_iterations",
    "work_limit",
    "ncp",
];

/// The keys of the `ncp` sub-dict (the NCP solver's settings, used with `solver="ncp"`);
/// `linear_solver` is a synonym of `linear` (`Simulator.contact_options` lists `linear`).
pub const NCP_KEYS: [&str; 9] = [
    "function",
    "max_iterations",
    "tolerance",
    "damping",
    "linear",
    "linear_solver",
    "cr_iterations",
    "preconditioner",
    "fallback_sweeps",
];

/// The names of the NCP linear solvers (`linear` / `linear_solver`), the iteration
/// counts filled in from `cr_iterations` afterwards.
const LINEAR_SOLVERS: [(&str, LinearSolve); 3] = [
    ("direct", LinearSolve::Direct),
    ("cr", LinearSolve::ConjugateResidual(0)),
    ("pcr_gpu", LinearSolve::GpuConjugateResidual(0)),
];

fn type_name(value: &Bound<'_, PyAny>) -> String {
    value.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into())
}

/// A Python bool or a numpy bool (`numpy.bool_`, named `bool` in numpy 2).
fn is_bool(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PyBool>() || matches!(type_name(value).as_str(), "bool" | "bool_")
}

fn flag(key: &str, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    // Integers are refused: 1 for True is more likely a slip than a choice.
    if is_bool(value) {
        return value.extract::<bool>();
    }
    Err(input_error(format!("contact option '{key}' must be a bool, got {} ({value})", type_name(value))))
}

fn real(key: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if is_bool(value) {
        return Err(input_error(format!("contact option '{key}' must be a number, got a bool ({value})")));
    }
    value.extract::<f64>().map_err(|_| {
        input_error(format!("contact option '{key}' must be a number, got {} ({value})", type_name(value)))
    })
}

fn count(key: &str, value: &Bound<'_, PyAny>) -> PyResult<usize> {
    let bad = || {
        input_error(format!(
            "contact option '{key}' must be a non-negative integer, got {} ({value})",
            type_name(value)
        ))
    };
    if is_bool(value) {
        return Err(bad());
    }
    value.extract::<usize>().map_err(|_| bad())
}

/// A string option among `choices` (name, value).
fn choice<T: Copy>(key: &str, value: &Bound<'_, PyAny>, choices: &[(&str, T)]) -> PyResult<T> {
    let s = value.cast::<PyString>().ok().and_then(|s| s.extract::<String>().ok());
    if let Some(found) = s.as_deref().and_then(|s| choices.iter().find(|(name, _)| *name == s)) {
        return Ok(found.1);
    }
    let names: Vec<String> = choices.iter().map(|(n, _)| format!("'{n}'")).collect();
    Err(input_error(format!(
        "contact option '{key}' must be one of {}, got {}",
        names.join(", "),
        value.repr().map(|r| r.to_string()).unwrap_or_default()
    )))
}

fn bounce_gradients(value: &Bound<'_, PyAny>) -> PyResult<BounceGradients> {
    let choices = [BounceGradients::Discrete, BounceGradients::ContinuousTime].map(|b| (bounce_gradients_name(b), b));
    choice("bounce_gradients", value, &choices)
}

fn contact_model(value: &Bound<'_, PyAny>) -> PyResult<ContactModel> {
    let choices = [ContactModel::Coulomb, ContactModel::NoSlip, ContactModel::Viscous].map(|m| (m.name(), m));
    choice("model", value, &choices)
}

fn penetration(value: &Bound<'_, PyAny>) -> PyResult<PenetrationRecovery> {
    let choices = [PenetrationRecovery::Velocity, PenetrationRecovery::Split].map(|m| (m.name(), m));
    choice("penetration", value, &choices)
}

fn contact_solver(value: &Bound<'_, PyAny>) -> PyResult<ContactSolver> {
    let choices = [ContactSolver::Auto, ContactSolver::BoxedLcp, ContactSolver::Ncp].map(|m| (m.name(), m));
    choice("solver", value, &choices)
}

/// The name of a bounce-gradient treatment in the `contact` dict.
pub fn bounce_gradients_name(b: BounceGradients) -> &'static str {
    match b {
        BounceGradients::Discrete => "discrete",
        BounceGradients::ContinuousTime => "continuous_time",
    }
}

/// Parses the `contact` argument: `None` (the defaults), `True`/`False` (the defaults,
/// enabled or not) or a dict whose keys are among [`KEYS`] (the others keep their
/// defaults). Unknown keys, wrong types and invalid values raise `InputError`.
pub fn contact_options(obj: Option<&Bound<'_, PyAny>>) -> PyResult<ContactOptions> {
    let mut o = ContactOptions::default();
    let Some(obj) = obj.filter(|o| !o.is_none()) else { return Ok(o) };
    if is_bool(obj) {
        o.enabled = obj.extract::<bool>()?;
        return Ok(o);
    }
    let dict = obj.cast::<PyDict>().map_err(|_| {
        input_error(format!("contact must be None, a bool or a dict of contact options, got {}", type_name(obj)))
    })?;
    for (key, value) in dict.iter() {
        let key: String = key.extract().map_err(|_| input_error("contact option names must be strings"))?;
        let lcp = &mut o.lcp;
        match key.as_str() {
            "enabled" => o.enabled = flag(&key, &value)?,
            "model" => o.model = contact_model(&value)?,
            "solver" => o.solver = contact_solver(&value)?,
            "margin" => o.margin = real(&key, &value)?,
            "penetration" => o.penetration = penetration(&value)?,
            "erp" => o.erp = real(&key, &value)?,
            "position_regularization" => o.position_regularization = real(&key, &value)?,
            "penetration_tolerance" => o.penetration_tolerance = real(&key, &value)?,
            "normal_compliance" => o.normal_compliance = real(&key, &value)?,
            "friction_compliance" => o.friction_compliance = real(&key, &value)?,
            "restitution_threshold" => o.restitution_threshold = real(&key, &value)?,
            "joint_limit_margin" => o.joint_limit_margin = real(&key, &value)?,
            "warm_start" => o.warm_start = flag(&key, &value)?,
            "bounce_gradients" => o.bounce_gradients = bounce_gradients(&value)?,
            "tolerance" => lcp.tolerance = real(&key, &value)?,
            "max_pivots" => lcp.max_pivots = count(&key, &value)?,
            "pgs_iterations" => lcp.pgs_iterations = count(&key, &value)?,
            "pgs_tolerance" => lcp.pgs_tolerance = real(&key, &value)?,
            "standardize" => lcp.standardize = flag(&key, &value)?,
            "friction_iterations" => lcp.friction_iterations = count(&key, &value)?,
            "work_limit" => lcp.work_limit = real(&key, &value)?,
            "ncp" => o.ncp = ncp_options(&value)?,
            other => {
                return Err(input_error(format!(
                    "unknown contact option '{other}'; expected one of: {}",
                    KEYS.join(", ")
                )))
            }
        }
    }
    o.validate().py_err()?;
    o.lcp.validate().py_err()?;
    Ok(o)
}

/// The name of an NCP function in the `ncp` dict.
fn ncp_function_name(f: NcpFunction) -> &'static str {
    match f {
        NcpFunction::MinMap => "min_map",
        NcpFunction::FischerBurmeister => "fischer_burmeister",
    }
}

/// Parses the `ncp` sub-dict of the contact options: keys among [`NCP_KEYS`] (the others
/// keep their defaults); `linear` (or its synonym `linear_solver`) is `"direct"` (dense
/// Cholesky), `"cr"` (conjugate residuals, at most `cr_iterations`) or `"pcr_gpu"` (the
/// same on the GPU, docs/gpu.md). Choosing `"pcr_gpu"` where no GPU is available warns
/// (`RuntimeWarning`, with the reason): the solves then run on the CPU, counted in
/// `Simulator.stats["gpu_fallbacks"]`.
fn ncp_options(value: &Bound<'_, PyAny>) -> PyResult<NcpSolver> {
    let mut n = NcpSolver::default();
    let dict = value
        .cast::<PyDict>()
        .map_err(|_| input_error(format!("contact option 'ncp' must be a dict, got {}", type_name(value))))?;
    let mut cr = None;
    let mut linear_key: Option<(String, LinearSolve)> = None;
    for (key, value) in dict.iter() {
        let key: String = key.extract().map_err(|_| input_error("ncp option names must be strings"))?;
        let name = format!("ncp.{key}");
        match key.as_str() {
            "function" => {
                let choices = [NcpFunction::MinMap, NcpFunction::FischerBurmeister].map(|f| (ncp_function_name(f), f));
                n.function = choice(&name, &value, &choices)?;
            }
            "max_iterations" => n.max_iterations = count(&name, &value)?,
            "tolerance" => n.tolerance = real(&name, &value)?,
            "damping" => n.damping = real(&name, &value)?,
            "fallback_sweeps" => n.fallback_sweeps = count(&name, &value)?,
            "linear" | "linear_solver" => {
                let linear = choice(&name, &value, &LINEAR_SOLVERS)?;
                if let Some((other, previous)) = &linear_key {
                    if *previous != linear {
                        return Err(input_error(format!(
                            "ncp options '{other}' and '{key}' are synonyms and disagree; give one of them"
                        )));
                    }
                }
                n.linear = linear;
                linear_key = Some((key.clone(), linear));
            }
            "cr_iterations" => cr = Some(count(&name, &value)?),
            "preconditioner" => n.preconditioner = flag(&name, &value)?,
            other => {
                return Err(input_error(format!(
                    "unknown ncp option '{other}'; expected one of: {}",
                    NCP_KEYS.join(", ")
                )))
            }
        }
    }
    match n.linear {
        LinearSolve::ConjugateResidual(_) => n.linear = LinearSolve::ConjugateResidual(cr.unwrap_or(200)),
        LinearSolve::GpuConjugateResidual(_) => {
            n.linear = LinearSolve::GpuConjugateResidual(cr.unwrap_or(200));
            if let Err(e) = stiction::gpu::available() {
                let msg = format!(
                    "ncp linear solver 'pcr_gpu': no GPU is available ({e}); the Newton systems will be solved \
                     on the CPU by conjugate residuals (counted in Simulator.stats['gpu_fallbacks'])"
                );
                let msg = CString::new(msg.replace('\0', "\\0")).expect("NUL bytes were replaced");
                let py = value.py();
                PyErr::warn(py, &py.get_type::<PyRuntimeWarning>(), &msg, 1)?;
            }
        }
        LinearSolve::Direct => {}
    }
    Ok(n)
}

/// The `ncp` sub-dict of [`contact_options_dict`].
fn ncp_dict<'py>(py: Python<'py>, n: &NcpSolver) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("function", ncp_function_name(n.function))?;
    d.set_item("max_iterations", n.max_iterations)?;
    d.set_item("tolerance", n.tolerance)?;
    d.set_item("damping", n.damping)?;
    let (linear, cr) = match n.linear {
        LinearSolve::Direct => ("direct", 200),
        LinearSolve::ConjugateResidual(k) => ("cr", k),
        LinearSolve::GpuConjugateResidual(k) => ("pcr_gpu", k),
    };
    d.set_item("linear", linear)?;
    d.set_item("cr_iterations", cr)?;
    d.set_item("preconditioner", n.preconditioner)?;
    d.set_item("fallback_sweeps", n.fallback_sweeps)?;
    Ok(d)
}

/// The options as the dict `contact` accepts (every key of [`KEYS`]).
pub fn contact_options_dict<'py>(py: Python<'py>, o: &ContactOptions) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("enabled", o.enabled)?;
    d.set_item("model", o.model.name())?;
    d.set_item("solver", o.solver.name())?;
    d.set_item("margin", o.margin)?;
    d.set_item("penetration", o.penetration.name())?;
    d.set_item("erp", o.erp)?;
    d.set_item("position_regularization", o.position_regularization)?;
    d.set_item("penetration_tolerance", o.penetration_tolerance)?;
    d.set_item("normal_compliance", o.normal_compliance)?;
    d.set_item("friction_compliance", o.friction_compliance)?;
    d.set_item("restitution_threshold", o.restitution_threshold)?;
    d.set_item("joint_limit_margin", o.joint_limit_margin)?;
    d.set_item("warm_start", o.warm_start)?;
    d.set_item("bounce_gradients", bounce_gradients_name(o.bounce_gradients))?;
    d.set_item("tolerance", o.lcp.tolerance)?;
    d.set_item("max_pivots", o.lcp.max_pivots)?;
    d.set_item("pgs_iterations", o.lcp.pgs_iterations)?;
    d.set_item("pgs_tolerance", o.lcp.pgs_tolerance)?;
    d.set_item("standardize", o.lcp.standardize)?;
    d.set_item("friction_iterations", o.lcp.friction_iterations)?;
    d.set_item("work_limit", o.lcp.work_limit)?;
    d.set_item("ncp", ncp_dict(py, &o.ncp)?)?;
    Ok(d)
}
