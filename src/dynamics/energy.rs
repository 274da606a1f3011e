//! Energy, momentum and centre of mass: kinetic energy `½ q̇ᵀ (M + diag(armature)) q̇`
//! summed body by body, potential energy `−Σ mᵢ gᵀ cᵢ`, and the total spatial
//! momentum `Σ ⁰X*ᵢ Iᵢ vᵢ` in world coordinates about the world origin
//! (Featherstone 2008, §2.13 and §5.5).

use super::kinematics::{check_q, kinematics_pass};
use super::Data;
use crate::error::{check_vector, Result};
use crate::math::{Force, Vec3};
use crate::Model;

/// Kinetic energy at `(q, v)`, rotor (armature) energy included.
pub fn kinetic_energy(model: &Model, data: &mut Data, q: &[f64], v: &[f64]) -> Result<f64> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    let bodies: f64 = (0..model.nbodies()).map(|i| model.bodies[i].inertia.kinetic_energy(&data.v[i])).sum();
    let rotors: f64 = (0..model.nv()).map(|k| 0.5 * model.armature[k] * v[k] * v[k]).sum();
    Ok(bodies + rotors)
}

/// Gravitational potential energy at `q` (zero at the world origin), plus the
/// energy stored in joint springs.
pub fn potential_energy(model: &Model, data: &mut Data, q: &[f64]) -> Result<f64> {
    check_q(model, q)?;
    kinematics_pass(model, data, q, None);
    let g = model.gravity;
    let gravity: f64 = (0..model.nbodies())
        .map(|i| {
            let b = &model.bodies[i].inertia;
            -b.mass * g.dot(&data.x_world[i].act_point(&b.com()))
        })
        .sum();
    let mut springs = 0.0;
    if model.has_springs {
        let mut d = vec![0.0; model.nv()];
        model.difference_into(model.rest.as_slice(), q, &mut d);
        springs = (0..model.nv()).map(|k| 0.5 * model.stiffness[k] * d[k] * d[k]).sum();
    }
    Ok(gravity + springs)
}

/// Total spatial momentum in world coordinates about the world origin: `[L; p]`.
pub fn momentum(model: &Model, data: &mut Data, q: &[f64], v: &[f64]) -> Result<Force> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    Ok((0..model.nbodies())
        .fold(Force::zero(), |acc, i| acc + data.x_world[i].act_force(&model.bodies[i].inertia.mul_motion(&data.v[i]))))
}

/// Centre of mass of the whole model in world coordinates.
pub fn center_of_mass(model: &Model, data: &mut Data, q: &[f64]) -> Result<Vec3> {
    check_q(model, q)?;
    kinematics_pass(model, data, q, None);
    let (mut m, mut h) = (0.0, Vec3::zeros());
    for i in 0..model.nbodies() {
        let b = &model.bodies[i].inertia;
        m += b.mass;
        h += data.x_world[i].act_point(&b.com()) * b.mass;
    }
    Ok(if m > 0.0 { h / m } else { Vec3::zeros() })
}
