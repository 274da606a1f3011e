//! Articulated-body algorithm: forward dynamics `q̈ = (M + diag(armature))⁻¹ (τ − c + Jᵀf_ext)`
//! in O(n) (Featherstone 2008, §7.3, Table 7.1, with the multi-DoF joint form of
//! eqs. 7.38–7.43), gravity entering as the base acceleration `a₀ = −g`.

use super::kinematics::{check_q, external_forces_to_bodies, gravity_acceleration, kinematics_pass};
use super::Data;
use crate::error::{check_vector, Error, Result};
use crate::math::{Force, Mat6, Motion};
use crate::Model;
use nalgebra::DVector;

/// Forward dynamics: generalized accelerations for torques `tau` at state `(q, v)`,
/// with optional world-frame body wrenches `f_ext` (one per body, about the world
/// origin). Result in `data.ddq`.
pub fn aba<'d>(
    model: &Model,
    data: &'d mut Data,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<&'d DVector<f64>> {
    check_q(model, q)?;
    check_vector("v", v, model.nv())?;
    check_vector("tau", tau, model.nv())?;
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    aba_pass(model, data, tau, 0.0)?;
    Ok(&data.ddq)
}

/// ABA after the kinematics pass, with `diag(armature + damping_dt · damping)` added
/// to the joint-space inertia (`damping_dt = h` integrates damping implicitly).
pub(crate) fn aba_pass(model: &Model, data: &mut Data, tau: &[f64], damping_dt: f64) -> Result<()> {
    aba_inertia_pass(model, data, damping_dt)?;
    aba_bias_pass(model, data, tau)
}

/// The configuration-dependent half of ABA (pass 2 without forces): articulated
/// inertias `I^A`, `U = I^A S`, `D⁻¹` and the projected inertias `I^a` passed to
/// the parents. Needs `x_parent` and `s`.
pub(crate) fn aba_inertia_pass(model: &Model, data: &mut Data, damping_dt: f64) -> Result<()> {
    let nb = model.nbodies();
    for i in 0..nb {
        data.ia[i] = model.bodies[i].inertia.to_matrix();
    }
    for i in (0..nb).rev() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let ia = data.ia[i];
        let mut ia_art = ia;
        if nv == 1 {
            let s = data.s[va].to_vector();
            let u = ia * s;
            let d = s.dot(&u) + model.armature[va] + damping_dt * model.damping[va];
            if d <= 0.0 || !d.is_finite() {
                return Err(singular(model, i, d));
            }
            let dinv = 1.0 / d;
            data.u_cols[va] = Force::from_vector(&u);
            data.d_inv[i][(0, 0)] = dinv;
            ia_art -= u * u.transpose() * dinv;
        } else if nv > 1 {
            let mut d = Mat6::identity();
            for k in 0..nv {
                data.u_cols[va + k] = Force::from_vector(&(ia * data.s[va + k].to_vector()));
            }
            for k in 0..nv {
                for l in 0..nv {
                    d[(k, l)] = data.s[va + k].dot(&data.u_cols[va + l]);
                }
                d[(k, k)] += model.armature[va + k] + damping_dt * model.damping[va + k];
            }
            let dinv = d.cholesky().ok_or_else(|| singular(model, i, d[(0, 0)]))?.inverse();
            data.d_inv[i] = dinv;
            for k in 0..nv {
                let uk = data.u_cols[va + k].to_vector();
                for l in 0..nv {
                    ia_art -= uk * data.u_cols[va + l].to_vector().transpose() * dinv[(k, l)];
                }
            }
        }
        data.ia_art[i] = ia_art;
        if let Some(p) = model.parents[i] {
            let moved = data.x_parent[i].act_inertia_matrix(&ia_art);
            data.ia[p] += moved;
        }
    }
    Ok(())
}

/// The force-dependent half of ABA: bias forces `p^A` (pass 2) and accelerations
/// (pass 3), reusing [`aba_inertia_pass`]'s results. Needs `v`, `c` and `f_ext` current.
pub(crate) fn aba_bias_pass(model: &Model, data: &mut Data, tau: &[f64]) -> Result<()> {
    let nb = model.nbodies();
    for i in 0..nb {
        let inertia = &model.bodies[i].inertia;
        let vi = data.v[i];
        data.pa[i] = vi.cross_force(&inertia.mul_motion(&vi)) - data.f_ext[i];
    }
    for i in (0..nb).rev() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let pa = data.pa[i];
        let mut dinv_u = [0.0; 6];
        for k in 0..nv {
            data.u[va + k] = tau[va + k] - data.s[va + k].dot(&pa);
        }
        for k in 0..nv {
            for l in 0..nv {
                dinv_u[k] += data.d_inv[i][(k, l)] * data.u[va + l];
            }
        }
        if let Some(p) = model.parents[i] {
            let mut pa_art = pa + Force::from_vector(&(data.ia_art[i] * data.c[i].to_vector()));
            for k in 0..nv {
                pa_art += data.u_cols[va + k] * dinv_u[k];
            }
            let moved = data.x_parent[i].act_force(&pa_art);
            data.pa[p] += moved;
        }
    }
    let a0 = gravity_acceleration(model);
    for i in 0..nb {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        let ap = match model.parents[i] {
            Some(p) => data.x_parent[i].inv_act_motion(&data.a[p]),
            None => data.x_parent[i].inv_act_motion(&a0),
        };
        let mut ai: Motion = ap + data.c[i];
        if nv == 1 {
            let qdd = data.d_inv[i][(0, 0)] * (data.u[va] - ai.dot(&data.u_cols[va]));
            data.ddq[va] = qdd;
            ai += data.s[va] * qdd;
        } else if nv > 1 {
            let mut rhs = [0.0; 6];
            for k in 0..nv {
                rhs[k] = data.u[va + k] - ai.dot(&data.u_cols[va + k]);
            }
            for k in 0..nv {
                let qdd = (0..nv).map(|l| data.d_inv[i][(k, l)] * rhs[l]).sum::<f64>();
                data.ddq[va + k] = qdd;
                ai += data.s[va + k] * qdd;
            }
        }
        data.a[i] = ai;
    }
    if let Some((k, x)) = data.ddq.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(Error::Numerical { algorithm: "ABA", detail: format!("non-finite acceleration ddq[{k}] = {x}") });
    }
    Ok(())
}

fn singular(model: &Model, i: usize, d: f64) -> Error {
    Error::Numerical {
        algorithm: "ABA",
        detail: format!(
            "articulated inertia of joint '{}' is not positive definite (D = {d:e}); the subtree has no inertia along this joint",
            model.joints[i].name
        ),
    }
}
