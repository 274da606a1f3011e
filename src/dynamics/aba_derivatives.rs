//! Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, §IV-B):
//! differentiating `M(q) q̈ + c(q, q̇) = τ` at `q̈ = ABA(q, q̇, τ)` gives
//! `∂q̈/∂q = −M⁻¹ ∂τ/∂q|_{a=q̈}`, `∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇`, `∂q̈/∂τ = M⁻¹`
//! (M with armature; q-derivatives in the tangent space).
//!
//! One kinematics pass serves everything. M comes from the world-frame composite
//! inertias that the derivative columns use anyway (the CRBA in world coordinates), and
//! is factored with its branch sparsity (`LᵀDL`, [`super::InertiaFactor`]); that factor
//! gives `q̈ = M⁻¹ (τ − b)` with b the RNEA at zero acceleration, and `M⁻¹` itself in
//! O(n² d), with no dense factorization. Only the two products with `M⁻¹` are dense.

use super::kinematics::{check_q, external_forces_to_bodies, kinematics_pass};
use super::rnea::rnea_pass;
use super::rnea_derivatives::{
    derivative_columns, mass_matrix_from_composites, world_accelerations, world_composites, DerivativeData,
};
use super::Data;
use crate::error::{check_vector, Error, Result};
use crate::math::Force;
use crate::Model;
use nalgebra::DMatrix;

/// Derivatives of forward dynamics at `(q, v, τ)`: `(∂q̈/∂q, ∂q̈/∂v, M⁻¹)`. The
/// accelerations themselves are left in `data.ddq`, the joint-space inertia (armature
/// included) in `data.mass_matrix`.
pub fn aba_derivatives(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<(DMatrix<f64>, DMatrix<f64>, DMatrix<f64>)> {
    let nv = model.nv();
    check_q(model, q)?;
    check_vector("v", v, nv)?;
    check_vector("tau", tau, nv)?;
    if let Some(fs) = f_ext {
        if fs.len() != model.nbodies() {
            return Err(Error::Dimension { what: "external wrenches", expected: model.nbodies(), got: fs.len() });
        }
    }
    kinematics_pass(model, data, q, Some(v));
    external_forces_to_bodies(model, data, f_ext)?;
    // M from the world-frame composite inertias, factored with its branch sparsity.
    world_composites(model, data, deriv, v);
    let mut m = std::mem::replace(&mut data.mass_matrix, DMatrix::zeros(0, 0));
    crate::math::reshape_for_overwrite(&mut m, nv, nv);
    mass_matrix_from_composites(model, deriv, &mut m);
    deriv.update_tree(model);
    let factored = deriv.factor.factor(&m);
    data.mass_matrix = m;
    factored.map_err(|_| Error::Numerical {
        algorithm: "ABA derivatives",
        detail: "mass matrix is not positive definite".into(),
    })?;
    // q̈ = M⁻¹ (τ − b), b the RNEA at zero acceleration; then the RNEA at q̈.
    rnea_pass(model, data, &[], false);
    let mut qdd = std::mem::take(&mut deriv.acc);
    qdd.clear();
    qdd.extend(tau.iter().zip(data.tau.iter()).map(|(t, b)| t - b));
    deriv.factor.solve_in_place(&mut qdd);
    data.ddq.copy_from_slice(&qdd);
    rnea_pass(model, data, &qdd, true);
    world_accelerations(model, data, deriv, v, &qdd, f_ext);
    deriv.acc = qdd;
    derivative_columns(model, deriv, true);
    let mut minv = DMatrix::zeros(nv, nv);
    deriv.factor.inverse_into(&mut minv);
    let mut dq = DMatrix::zeros(nv, nv);
    dq.gemm(-1.0, &minv, &deriv.dtau_dq, 0.0);
    let mut dv = DMatrix::zeros(nv, nv);
    dv.gemm(-1.0, &minv, &deriv.dtau_dv, 0.0);
    Ok((dq, dv, minv))
}
