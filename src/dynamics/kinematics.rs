//! Forward kinematics: body poses, spatial velocities and accelerations in body
//! coordinates (Featherstone 2008, §3.5 and Table 4.1; the recursion
//! `v_i = ⁱX_λ v_λ + S_i q̇_i`, `a_i = ⁱX_λ a_λ + S_i q̈_i + c_J + v_i × S_i q̇_i`).

use super::Data;
use crate::error::{check_vector, Result};
use crate::math::{Force, Motion, Vec3};
use crate::Model;

/// Checks `q` (length, finite values, unit-ish quaternions).
pub(crate) fn check_q(model: &Model, q: &[f64]) -> Result<()> {
    check_vector("q", q, model.nq())?;
    model.check_quaternions(q)
}

/// Position and velocity pass shared by the algorithms: fills `x_parent`, `x_world`,
/// `s` and, when `v` is given, body velocities `v` and velocity products `c`.
/// Inputs must already be checked.
#[inline]
pub(crate) fn kinematics_pass(model: &Model, data: &mut Data, q: &[f64], v: Option<&[f64]>) {
    let zeros = [0.0; 6];
    for i in 0..model.nbodies() {
        let joint = &model.joints[i];
        let (qa, va, nq, nv) = (model.q_idx[i], model.v_idx[i], joint.nq(), joint.nv());
        let qd = v.map_or(&zeros[..nv], |v| &v[va..va + nv]);
        let (xj, cj) = joint.kind.kinematics(&q[qa..qa + nq], qd, &mut data.s[va..va + nv]);
        let xp = joint.placement * xj;
        data.x_parent[i] = xp;
        let parent = model.parents[i];
        data.x_world[i] = match parent {
            Some(p) => data.x_world[p] * xp,
            None => xp,
        };
        if v.is_some() {
            let mut vj = Motion::zero();
            for k in 0..nv {
                vj += data.s[va + k] * qd[k];
            }
            let vi = match parent {
                Some(p) => xp.inv_act_motion(&data.v[p]) + vj,
                None => vj,
            };
            data.v[i] = vi;
            data.c[i] = cj + vi.cross_motion(&vj);
        }
    }
}

/// Velocity pass alone: body velocities `v` and velocity products `c` for new
/// generalized velocities, reusing the poses and motion subspaces of the last
/// [`kinematics_pass`] at the same configuration.
#[inline]
pub(crate) fn velocity_pass(model: &Model, data: &mut Data, v: &[f64]) {
    for i in 0..model.nbodies() {
        let joint = &model.joints[i];
        let (va, nv) = (model.v_idx[i], joint.nv());
        let qd = &v[va..va + nv];
        let s = &data.s[va..va + nv];
        let mut vj = Motion::zero();
        for k in 0..nv {
            vj += s[k] * qd[k];
        }
        let cj = joint.kind.bias(s, qd);
        let vi = match model.parents[i] {
            Some(p) => data.x_parent[i].inv_act_motion(&data.v[p]) + vj,
            None => vj,
        };
        data.v[i] = vi;
        data.c[i] = cj + vi.cross_motion(&vj);
    }
}

/// Converts world-frame external wrenches (about the world origin) into body frames.
/// `x_world` must be current.
pub(crate) fn external_forces_to_bodies(model: &Model, data: &mut Data, f_ext: Option<&[Force]>) -> Result<()> {
    match f_ext {
        None => data.f_ext.iter_mut().for_each(|f| *f = Force::zero()),
        Some(fs) => {
            if fs.len() != model.nbodies() {
                return Err(crate::Error::Dimension {
                    what: "external wrenches",
                    expected: model.nbodies(),
                    got: fs.len(),
                });
            }
            for (i, f) in fs.iter().enumerate() {
                if !f.is_finite() {
                    return Err(crate::Error::NonFinite { what: "external wrenches", index: i, value: f.norm() });
                }
                data.f_ext[i] = data.x_world[i].inv_act_force(f);
            }
        }
    }
    Ok(())
}

/// Computes body poses (`data.x_parent`, `data.x_world`) and motion subspaces.
pub fn forward_kinematics(model: &Model, data: &mut Data, q: &[f64]) -> Result<()> {
    check_q(model, q)?;
    kinematics_pass(model, data, q, None);
    Ok(())
}

/// Computes poses and body-frame spatial velocities (`data.v`).
pub fn forward_kinematics_velocity(model: &Model, data: &mut Data, q: &[f64], v: &[f64]) -> Result<()> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    Ok(())
}

/// Computes poses, velocities and body-frame spatial accelerations (`data.a`) for
/// generalized accelerations `a` (gravity not included).
pub fn forward_kinematics_acceleration(model: &Model, data: &mut Data, q: &[f64], v: &[f64], a: &[f64]) -> Result<()> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    check_vector("a", a, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    for i in 0..model.nbodies() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let mut ai = data.c[i];
        for k in 0..nv {
            ai += data.s[va + k] * a[va + k];
        }
        if let Some(p) = model.parents[i] {
            ai += data.x_parent[i].inv_act_motion(&data.a[p]);
        }
        data.a[i] = ai;
    }
    Ok(())
}

/// World pose of a point given in body `body`'s frame (after [`forward_kinematics`]).
pub fn point_position(data: &Data, body: usize, point: &Vec3) -> Vec3 {
    data.x_world[body].act_point(point)
}

/// The spatial acceleration of the world frame that stands in for gravity: `[0; −g]`.
#[inline]
pub(crate) fn gravity_acceleration(model: &Model) -> Motion {
    Motion::new(Vec3::zeros(), -model.gravity)
}
