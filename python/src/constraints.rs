//! The constraint stage of a step as a Python dict (`StepRecord.constraints`,
//! `Simulator.last_constraints()`): per-row impulses, classification and kinds,
//! per-contact geometry and material, the free velocity and the LCP statistics.

use crate::convert::{out_rows, out_vec};
use numpy::ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use stiction::solver::lcp::{LcpStats, RowBound, RowState, SolvePath};
use stiction::step::{ConstraintRecord, RowKind};
use stiction::Model;

/// The name of a row classification: `"clamping"`, `"separating"`, `"at_lower"`,
/// `"at_upper"` or `"tied"`.
pub fn state_name(s: RowState) -> &'static str {
    match s {
        RowState::Clamping => "clamping",
        RowState::Separating => "separating",
        RowState::AtBound { sign } if sign < 0 => "at_lower",
        RowState::AtBound { .. } => "at_upper",
        RowState::Tied => "tied",
    }
}

/// The name of a row kind: `"contact_normal"`, `"contact_friction"`, `"joint_lower"`,
/// `"joint_upper"` or `"joint_friction"`.
pub fn kind_name(k: RowKind) -> &'static str {
    match k {
        RowKind::ContactNormal { .. } => "contact_normal",
        RowKind::ContactFriction { .. } => "contact_friction",
        RowKind::JointLower { .. } => "joint_lower",
        RowKind::JointUpper { .. } => "joint_upper",
        RowKind::VelocityUpper { .. } => "velocity_upper",
        RowKind::VelocityLower { .. } => "velocity_lower",
        RowKind::JointFriction { .. } => "joint_friction",
    }
}

/// The name of the method that solved the LCP.
pub fn path_name(p: SolvePath) -> &'static str {
    match p {
        SolvePath::Empty => "empty",
        SolvePath::WarmStart => "warm_start",
        SolvePath::FirstGuess => "first_guess",
        SolvePath::Ppm => "ppm",
        SolvePath::Dantzig => "dantzig",
        SolvePath::Lemke => "lemke",
        SolvePath::Pgs => "pgs",
        SolvePath::Newton => "newton",
    }
}

/// `(contact, direction, dof)` of a row, `-1` where it does not apply.
fn row_indices(k: RowKind) -> (i64, i64, i64) {
    match k {
        RowKind::ContactNormal { contact } => (contact as i64, -1, -1),
        RowKind::ContactFriction { contact, direction } => (contact as i64, direction as i64, -1),
        RowKind::JointLower { dof }
        | RowKind::JointUpper { dof }
        | RowKind::VelocityUpper { dof }
        | RowKind::VelocityLower { dof }
        | RowKind::JointFriction { dof } => (-1, -1, dof as i64),
    }
}

fn ints<'py>(py: Python<'py>, it: impl Iterator<Item = i64>) -> Bound<'py, PyArray1<i64>> {
    Array1::from_iter(it).into_pyarray(py)
}

/// The LCP statistics as a dict.
fn lcp_dict<'py>(py: Python<'py>, s: &LcpStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("path", path_name(s.path))?;
    d.set_item("islands", s.islands)?;
    d.set_item("pivots", s.pivots)?;
    d.set_item("pgs_iterations", s.pgs_iterations)?;
    d.set_item("residual", s.residual)?;
    d.set_item("warm_start_attempted", s.warm_start_attempted)?;
    d.set_item("warm_start_hit", s.warm_start_hit)?;
    d.set_item("fallbacks", s.fallbacks)?;
    d.set_item("standardized", s.standardized)?;
    d.set_item("newton_iterations", s.newton_iterations)?;
    d.set_item("gpu_linear_solves", s.gpu_linear_solves)?;
    d.set_item("gpu_fallbacks", s.gpu_fallbacks)?;
    d.set_item("work_limited", s.work_limited)?;
    Ok(d)
}

/// The dict described in `StepRecord.constraints` for the constraint stage `c` of a
/// step of `model`.
pub fn constraints_dict<'py>(py: Python<'py>, model: &Model, c: &ConstraintRecord) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let m = c.nrows();
    let f = c.impulses.as_slice();
    // Rows.
    d.set_item("impulses", out_vec(py, f))?;
    d.set_item("states", c.states.iter().map(|s| state_name(*s)).collect::<Vec<_>>())?;
    d.set_item("kinds", c.rows.iter().map(|k| kind_name(*k)).collect::<Vec<_>>())?;
    let idx: Vec<(i64, i64, i64)> = c.rows.iter().map(|k| row_indices(*k)).collect();
    d.set_item("contact", ints(py, idx.iter().map(|i| i.0)))?;
    d.set_item("direction", ints(py, idx.iter().map(|i| i.1)))?;
    d.set_item("dof", ints(py, idx.iter().map(|i| i.2)))?;
    let joint_of = |dof: i64| -> Option<String> {
        let dof = usize::try_from(dof).ok()?;
        let body = *model.dof_body().get(dof)?;
        model.joints().get(body).map(|j| j.name.clone())
    };
    d.set_item("joints", idx.iter().map(|i| joint_of(i.2)).collect::<Vec<_>>())?;
    let bounds: Vec<f64> = c
        .bounds
        .iter()
        .flat_map(|b| match *b {
            RowBound::Box { lo, hi } => [lo, hi],
            RowBound::Friction { normal, mu } => [-mu * f[normal], mu * f[normal]],
        })
        .collect();
    d.set_item("bounds", out_rows(py, m, 2, bounds)?)?;
    d.set_item("bias", out_vec(py, c.bias.as_slice()))?;
    // Contacts.
    let nc = c.contacts.len();
    let body_name = |b: Option<usize>| b.map_or_else(|| "world".to_string(), |b| model.bodies()[b].name.clone());
    let rows3 =
        |g: &dyn Fn(&stiction::collision::Contact) -> [f64; 3]| -> Vec<f64> { c.contacts.iter().flat_map(g).collect() };
    d.set_item("points", out_rows(py, nc, 3, rows3(&|k| k.geometry.point.into()))?)?;
    d.set_item("normals", out_rows(py, nc, 3, rows3(&|k| k.geometry.normal.into()))?)?;
    let distances: Vec<f64> = c.contacts.iter().map(|k| k.geometry.distance).collect();
    d.set_item("distances", out_vec(py, &distances))?;
    d.set_item("depths", out_vec(py, &distances.iter().map(|x| -x).collect::<Vec<_>>()))?;
    d.set_item("bodies", c.contacts.iter().map(|k| (body_name(k.body_a), body_name(k.body_b))).collect::<Vec<_>>())?;
    let shapes = Array2::from_shape_fn((nc, 2), |(i, j)| {
        let id = &c.contacts[i].id;
        (if j == 0 { id.shape_a } else { id.shape_b }) as i64
    });
    d.set_item("shapes", shapes.into_pyarray(py))?;
    d.set_item("contact_kinds", c.contacts.iter().map(|k| k.kind.name()).collect::<Vec<_>>())?;
    d.set_item("friction", out_vec(py, &c.info.iter().map(|i| i.friction).collect::<Vec<_>>()))?;
    d.set_item("restitution", out_vec(py, &c.info.iter().map(|i| i.restitution).collect::<Vec<_>>()))?;
    d.set_item("bounce", c.info.iter().map(|i| i.bounce).collect::<Vec<_>>())?;
    d.set_item("approach_velocity", out_vec(py, &c.info.iter().map(|i| i.approach_velocity).collect::<Vec<_>>()))?;
    // The step.
    d.set_item("v_free", out_vec(py, c.v_free.as_slice()))?;
    d.set_item("lcp", lcp_dict(py, &c.stats)?)?;
    d.set_item("passes", c.passes)?;
    d.set_item("relaxed", c.relaxed)?;
    d.set_item("correction_dropped", c.correction_dropped)?;
    let violations: Vec<(&str, i64, f64)> =
        c.limit_violations.iter().map(|(k, x)| (kind_name(*k), row_indices(*k).2, *x)).collect();
    d.set_item("limit_violations", violations)?;
    Ok(d)
}

/// [`constraints_dict`] of an optional record (`None` when the step had no rows).
pub fn optional_constraints<'py>(
    py: Python<'py>,
    model: &Model,
    c: Option<&ConstraintRecord>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    c.map(|c| constraints_dict(py, model, c)).transpose()
}
