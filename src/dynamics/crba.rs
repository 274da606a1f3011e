//! Composite rigid-body algorithm: the joint-space mass matrix `M(q)` (Featherstone
//! 2008, §6.2, Table 6.2), armature added to the diagonal.

use super::kinematics::{check_q, kinematics_pass};
use super::Data;
use crate::error::Result;
use crate::Model;
use nalgebra::DMatrix;

/// Computes the mass matrix into `data.mass_matrix` (full symmetric matrix).
pub fn crba<'d>(model: &Model, data: &'d mut Data, q: &[f64]) -> Result<&'d DMatrix<f64>> {
    check_q(model, q)?;
    kinematics_pass(model, data, q, None);
    crba_pass(model, data);
    Ok(&data.mass_matrix)
}

/// CRBA after the position pass.
pub(crate) fn crba_pass(model: &Model, data: &mut Data) {
    let nv = model.nv();
    let mut m = std::mem::replace(&mut data.mass_matrix, DMatrix::zeros(0, 0));
    // Degrees of freedom on different branches do not couple: start from zero.
    crate::math::reshape(&mut m, nv, nv);
    crba_entries(model, data, |l, k, val| m[(l, k)] = val);
    data.mass_matrix = m;
}

/// CRBA after the position pass, handing each non-zero entry `M[l][k]` (armature
/// included on the diagonal) to `set(l, k, value)`: both entries of a pair of dofs
/// on one joint, both of a dof and its ancestor's dof. Dofs that are neither (on
/// different branches) couple through no composite inertia and are not visited.
/// Fills `data.ic` with the composite inertias.
pub(crate) fn crba_entries(model: &Model, data: &mut Data, mut set: impl FnMut(usize, usize, f64)) {
    let nb = model.nbodies();
    for i in 0..nb {
        data.ic[i] = model.bodies[i].inertia;
    }
    for i in (0..nb).rev() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        for k in va..va + nv {
            let mut f = data.ic[i].mul_motion(&data.s[k]);
            for l in va..va + nv {
                let val = data.s[l].dot(&f);
                set(l, k, if l == k { val + model.armature[k] } else { val });
            }
            let mut j = i;
            while let Some(p) = model.parents[j] {
                f = data.x_parent[j].act_force(&f);
                j = p;
                let (pa, pn) = (model.v_idx[j], model.joints[j].nv());
                for l in pa..pa + pn {
                    let val = data.s[l].dot(&f);
                    set(l, k, val);
                    set(k, l, val);
                }
            }
        }
        if let Some(p) = model.parents[i] {
            let moved = data.ic[i].transformed(&data.x_parent[i]);
            data.ic[p] += moved;
        }
    }
}

/// Checks that the joint-space inertia `M(q)` is positive definite (a Cholesky
/// factorization with pivots above `1e-12` of the largest diagonal entry), naming the
/// first joint whose dof has no inertia of its own: a model built with
/// [`crate::ModelBuilder::allow_massless_moving_links`] can move a massless link along
/// a dof that nothing with inertia follows (two coaxial hinges joined by a massless
/// link). Errors: a bad `q`, or [`crate::ModelError::Invalid`] naming the joint.
pub fn check_mass_matrix(model: &Model, q: &[f64]) -> Result<()> {
    let mut data = Data::new(model);
    let m = crba(model, &mut data, q)?.clone();
    let n = m.nrows();
    let scale = (0..n).map(|k| m[(k, k)].abs()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    // Cholesky, column by column: the first non-positive pivot names its dof.
    let mut l = DMatrix::<f64>::zeros(n, n);
    for j in 0..n {
        let d = m[(j, j)] - (0..j).map(|k| l[(j, k)] * l[(j, k)]).sum::<f64>();
        if d.is_nan() || d <= 1e-12 * scale {
            let body = model.dof_body[j];
            return Err(crate::ModelError::Invalid(format!(
                "the joint-space inertia of model '{}' is singular at this configuration: dof {j} of joint '{}' \
                 (link '{}') moves no inertia of its own (pivot {d:e}); a massless moving link whose motion nothing \
                 with inertia follows",
                model.name, model.joints[body].name, model.bodies[body].name
            ))
            .into());
        }
        let d = d.sqrt();
        l[(j, j)] = d;
        for i in j + 1..n {
            l[(i, j)] = (m[(i, j)] - (0..j).map(|k| l[(i, k)] * l[(j, k)]).sum::<f64>()) / d;
        }
    }
    Ok(())
}
