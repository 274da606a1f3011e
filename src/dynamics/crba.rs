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
    let nb = model.nbodies();
    for i in 0..nb {
        data.ic[i] = model.bodies[i].inertia;
    }
    let m = &mut data.mass_matrix;
    // Degrees of freedom on different branches do not couple: start from zero.
    m.as_mut_slice().fill(0.0);
    for i in (0..nb).rev() {
        let (va, nv) = (model.v_idx[i], model.joints[i].nv());
        for k in va..va + nv {
            let mut f = data.ic[i].mul_motion(&data.s[k]);
            for l in va..va + nv {
                m[(l, k)] = data.s[l].dot(&f);
            }
            m[(k, k)] += model.armature[k];
            let mut j = i;
            while let Some(p) = model.parents[j] {
                f = data.x_parent[j].act_force(&f);
                j = p;
                let (pa, pn) = (model.v_idx[j], model.joints[j].nv());
                for l in pa..pa + pn {
                    let val = data.s[l].dot(&f);
                    m[(l, k)] = val;
                    m[(k, l)] = val;
                }
            }
        }
        if let Some(p) = model.parents[i] {
            let moved = data.ic[i].transformed(&data.x_parent[i]);
            data.ic[p] += moved;
        }
    }
}
