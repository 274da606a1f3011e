//! Recursive Newton–Euler algorithm: inverse dynamics `τ = M(q) q̈ + c(q, q̇) − Jᵀf_ext`
//! (Featherstone 2008, §5.3, Table 5.1), gravity entering as a fictitious base
//! acceleration `a₀ = −g`. Armature adds `diag(armature) q̈`.

use super::kinematics::{check_q, external_forces_to_bodies, gravity_acceleration, kinematics_pass};
use super::Data;
use crate::error::{check_vector, Result};
use crate::math::Force;
use crate::Model;
use nalgebra::DVector;

/// Inverse dynamics: the generalized forces that produce accelerations `a` at
/// state `(q, v)` under gravity and the optional world-frame body wrenches `f_ext`
/// (one per body, about the world origin). Result in `data.tau`.
pub fn rnea<'d>(
    model: &Model,
    data: &'d mut Data,
    q: &[f64],
    v: &[f64],
    a: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<&'d DVector<f64>> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    check_vector("a", a, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    rnea_pass(model, data, a, true);
    Ok(&data.tau)
}

/// The bias forces `c(q, v)` (Coriolis, centrifugal and gravity): RNEA with `q̈ = 0`.
pub fn bias_forces<'d>(model: &Model, data: &'d mut Data, q: &[f64], v: &[f64]) -> Result<&'d DVector<f64>> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    data.f_ext.iter_mut().for_each(|f| *f = Force::zero());
    rnea_pass(model, data, &[], false);
    Ok(&data.tau)
}

/// The gravity forces `g(q)`: RNEA with `q̇ = q̈ = 0`.
pub fn gravity_forces<'d>(model: &Model, data: &'d mut Data, q: &[f64]) -> Result<&'d DVector<f64>> {
    let zeros = vec![0.0; model.nv()];
    bias_forces(model, data, q, &zeros)
}

/// RNEA passes after the kinematics pass (`x_parent`, `v`, `c`, `s` current and
/// `f_ext` in body frames). With `with_acc = false`, `a` is ignored (q̈ = 0).
pub(crate) fn rnea_pass(model: &Model, data: &mut Data, a: &[f64], with_acc: bool) {
    let a0 = gravity_acceleration(model);
    for i in 0..model.nbodies() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let mut ai = data.c[i];
        if with_acc {
            for k in 0..nv {
                ai += data.s[va + k] * a[va + k];
            }
        }
        ai += match model.parents[i] {
            Some(p) => data.x_parent[i].inv_act_motion(&data.a[p]),
            None => data.x_parent[i].inv_act_motion(&a0),
        };
        data.a[i] = ai;
        let inertia = &model.bodies[i].inertia;
        let vi = data.v[i];
        data.f[i] = inertia.mul_motion(&ai) + vi.cross_force(&inertia.mul_motion(&vi)) - data.f_ext[i];
    }
    for i in (0..model.nbodies()).rev() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let fi = data.f[i];
        for k in 0..nv {
            let arm = if with_acc { model.armature[va + k] * a[va + k] } else { 0.0 };
            data.tau[va + k] = data.s[va + k].dot(&fi) + arm;
        }
        if let Some(p) = model.parents[i] {
            let fp = data.x_parent[i].act_force(&fi);
            data.f[p] += fp;
        }
    }
}
