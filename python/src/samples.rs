//! Ready-made models (`stiction.samples`).

use crate::errors::{input_error, IntoPyResult};
use crate::model::PyModel;
use pyo3::prelude::*;
use stiction::model::samples;

fn positive(x: f64, name: &str) -> PyResult<f64> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(input_error(format!("{name} must be positive and finite, got {x}")))
    }
}

fn at_least_one(n: usize, name: &str) -> PyResult<usize> {
    if n >= 1 {
        Ok(n)
    } else {
        Err(input_error(format!("{name} must be at least 1, got {n}")))
    }
}

/// A planar chain of `n` rods hanging along -z, hinged about y.
#[pyfunction]
#[pyo3(signature = (n, length=1.0, mass=1.0))]
fn pendulum_chain(n: usize, length: f64, mass: f64) -> PyResult<PyModel> {
    let n = at_least_one(n, "n")?;
    Ok(PyModel::new(samples::pendulum_chain(n, positive(length, "length")?, positive(mass, "mass")?)))
}

/// A spatial chain of `n` links with hinge axes cycling through x, y, z.
#[pyfunction]
fn spatial_chain(n: usize) -> PyResult<PyModel> {
    Ok(PyModel::new(samples::spatial_chain(at_least_one(n, "n")?)))
}

/// A 7-DoF arm.
#[pyfunction]
fn arm7() -> PyModel {
    PyModel::new(samples::arm7())
}

/// A cartpole: a 1 kg cart on a prismatic x joint and a 0.2 kg, 0.5 m pole on a revolute
/// y joint, hanging at q = 0 (upright at θ = π); no limits, no collision shapes.
#[pyfunction]
fn cartpole() -> PyModel {
    PyModel::new(samples::cartpole())
}

/// A binary tree of revolute joints of the given depth (2^depth - 1 bodies; depth at
/// most 16, else `InputError`).
#[pyfunction]
fn binary_tree(depth: usize) -> PyResult<PyModel> {
    Ok(PyModel::new(samples::binary_tree(at_least_one(depth, "depth")?).py_err()?))
}

/// A floating-base humanoid-like tree (50 dofs), bare: no limits, damping, armature or
/// collision shapes.
#[pyfunction]
fn humanoid() -> PyModel {
    PyModel::new(samples::humanoid())
}

/// The humanoid equipped as a robot: position and effort limits, damping and armature on
/// every joint, collision shapes, standing with its soles on a ground plane 0.95 m below
/// the pelvis in the neutral configuration.
#[pyfunction]
fn humanoid_on_ground() -> PyModel {
    PyModel::new(samples::humanoid_on_ground())
}

/// A model with every joint type.
#[pyfunction]
fn all_joint_types() -> PyModel {
    PyModel::new(samples::all_joint_types())
}

/// A random tree of `n` bodies, reproducible from `seed`; with `floating`, the root is free.
#[pyfunction]
#[pyo3(signature = (n, seed=0, floating=false))]
fn random_tree(n: usize, seed: u64, floating: bool) -> PyResult<PyModel> {
    Ok(PyModel::new(samples::random_tree(at_least_one(n, "n")?, seed, floating)))
}

/// `n` free bodies ('box', 'sphere' or 'capsule') on a grid, resting on the world
/// plane z = 0 and penetrating it by 1 mm at the neutral configuration.
#[pyfunction]
#[pyo3(signature = (n, shape="box"))]
fn bodies_on_plane(n: usize, shape: &str) -> PyResult<PyModel> {
    let shape = match shape {
        "box" => samples::RestingShape::Box,
        "sphere" => samples::RestingShape::Sphere,
        "capsule" => samples::RestingShape::Capsule,
        other => return Err(input_error(format!("shape must be 'box', 'sphere' or 'capsule', got '{other}'"))),
    };
    Ok(PyModel::new(samples::bodies_on_plane(at_least_one(n, "n")?, shape)))
}

/// The NCP paper's self-supporting parabolic arch of `blocks` convex voussoirs (μ = 0.6),
/// standing on the world plane at the neutral configuration (`blocks` ≥ 2, else
/// `InputError`).
#[pyfunction]
#[pyo3(signature = (blocks=20))]
fn arch(blocks: usize) -> PyResult<PyModel> {
    Ok(PyModel::new(samples::arch(blocks).py_err()?))
}

/// The NCP paper's table pile: `n` tables of 4.7 kg (a top on four legs, μ = 0.7) over a
/// 3 × 3 grid, turned and tilted at random (`seed`), about to fall onto one another.
#[pyfunction]
#[pyo3(signature = (n=54, seed=1))]
fn table_pile(n: usize, seed: u64) -> PyResult<PyModel> {
    Ok(PyModel::new(samples::table_pile(at_least_one(n, "n")?, seed)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(pendulum_chain, m)?)?;
    m.add_function(wrap_pyfunction!(spatial_chain, m)?)?;
    m.add_function(wrap_pyfunction!(arm7, m)?)?;
    m.add_function(wrap_pyfunction!(cartpole, m)?)?;
    m.add_function(wrap_pyfunction!(binary_tree, m)?)?;
    m.add_function(wrap_pyfunction!(humanoid, m)?)?;
    m.add_function(wrap_pyfunction!(humanoid_on_ground, m)?)?;
    m.add_function(wrap_pyfunction!(all_joint_types, m)?)?;
    m.add_function(wrap_pyfunction!(random_tree, m)?)?;
    m.add_function(wrap_pyfunction!(bodies_on_plane, m)?)?;
    m.add_function(wrap_pyfunction!(arch, m)?)?;
    m.add_function(wrap_pyfunction!(table_pile, m)?)?;
    Ok(())
}
