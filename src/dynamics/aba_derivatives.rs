//! Analytic derivatives of forward dynamics (Carpentier & Mansard 2018, §IV-B):
//! differentiating `M(q) q̈ + c(q, q̇) = τ` at `q̈ = ABA(q, q̇, τ)` gives
//! `∂q̈/∂q = −M⁻¹ ∂τ/∂q|_{a=q̈}`, `∂q̈/∂q̇ = −M⁻¹ ∂τ/∂q̇`, `∂q̈/∂τ = M⁻¹`
//! (M with armature; q-derivatives in the tangent space).

use super::aba::aba;
use super::crba::crba_pass;
use super::rnea_derivatives::{derivative_columns, rnea_derivatives_at, DerivativeData};
use super::Data;
use crate::error::{Error, Result};
use crate::math::Force;
use crate::Model;
use nalgebra::DMatrix;

/// Derivatives of forward dynamics at `(q, v, τ)`: `(∂q̈/∂q, ∂q̈/∂v, M⁻¹)`. The
/// accelerations themselves are left in `data.ddq`.
pub fn aba_derivatives(
    model: &Model,
    data: &mut Data,
    deriv: &mut DerivativeData,
    q: &[f64],
    v: &[f64],
    tau: &[f64],
    f_ext: Option<&[Force]>,
) -> Result<(DMatrix<f64>, DMatrix<f64>, DMatrix<f64>)> {
    let qdd = aba(model, data, q, v, tau, f_ext)?.clone();
    rnea_derivatives_at(model, data, deriv, q, v, qdd.as_slice(), f_ext)?;
    derivative_columns(model, deriv, true);
    crba_pass(model, data);
    let minv = data
        .mass_matrix
        .clone()
        .cholesky()
        .ok_or_else(|| Error::Numerical {
            algorithm: "ABA derivatives",
            detail: "mass matrix is not positive definite".into(),
        })?
        .inverse();
    let dq = -(&minv * &deriv.dtau_dq);
    let dv = -(&minv * &deriv.dtau_dv);
    data.ddq.copy_from(&qdd);
    Ok((dq, dv, minv))
}
