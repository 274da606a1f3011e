//! Perturbations on the configuration manifold. Derivatives with respect to a
//! configuration q are taken in the tangent space (size nv): the perturbed
//! configuration is `q ⊕ ε eᵢ` ([`perturb_configuration`]) and a change of an output
//! configuration is measured as `q⁺(ε) ⊖ q⁺(0)` ([`Model::difference`]).

use super::fd::{jacobian, FdJacobian};
use super::FdMethod;
use crate::error::Result;
use crate::Model;
use nalgebra::DVector;

/// `q ⊕ ε eᵢ`: moves `q` by `ε` along tangent direction `i` (exponential map on ball and free joints).
pub fn perturb_configuration(model: &Model, q: &DVector<f64>, i: usize, eps: f64) -> Result<DVector<f64>> {
    if i >= model.nv() {
        return Err(crate::Error::InvalidInput(format!("tangent direction {i} out of range (nv = {})", model.nv())));
    }
    let mut e = DVector::zeros(model.nv());
    e[i] = 1.0;
    model.integrate(q, &e, eps)
}

/// The finite-difference Jacobian (m × nv) of a function `g` of the configuration,
/// with respect to the tangent coordinates at `q`: column `i` is
/// `d/dε g(q ⊕ ε eᵢ)` at 0. The output of `g` is Euclidean (use
/// [`configuration_to_configuration_jacobian`] when it is a configuration).
pub fn configuration_jacobian(
    model: &Model,
    q: &DVector<f64>,
    g: &dyn Fn(&DVector<f64>) -> Result<DVector<f64>>,
    step: f64,
    method: FdMethod,
) -> Result<FdJacobian> {
    let g0 = g(q)?;
    let f = |i: usize, eps: f64| Ok(g(&perturb_configuration(model, q, i, eps)?)? - &g0);
    jacobian(g0.len(), &f, &vec![step; model.nv()], method)
}

/// The finite-difference Jacobian (nv × nv) of a map `g` from configurations of
/// `model` to configurations of `model`, in tangent coordinates on both sides:
/// column `i` is `d/dε (g(q ⊕ ε eᵢ) ⊖ g(q))` at 0.
pub fn configuration_to_configuration_jacobian(
    model: &Model,
    q: &DVector<f64>,
    g: &dyn Fn(&DVector<f64>) -> Result<DVector<f64>>,
    step: f64,
    method: FdMethod,
) -> Result<FdJacobian> {
    let g0 = g(q)?;
    let f = |i: usize, eps: f64| model.difference(&g0, &g(&perturb_configuration(model, q, i, eps)?)?);
    jacobian(model.nv(), &f, &vec![step; model.nv()], method)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{so3_exp, so3_right_jacobian_inv, Vec3};
    use crate::model::samples;
    use nalgebra::DMatrix;

    /// On a free joint (R³ × SO(3), tangent `[body rotation; parent-frame translation]`),
    /// `q ⊕ ε eᵢ ⊖ q = ε eᵢ` exactly, and the tangent Jacobian of the map `q ↦ q ⊕ δ`
    /// (fixed δ) is `exp(−δ_ω)` on the rotation (`exp(εeᵢ) exp(δ_ω) = exp(δ_ω)
    /// exp(ε exp(−δ_ω) eᵢ)`) and the identity on the translation.
    #[test]
    fn free_joint_perturbations() {
        let model = samples::random_tree(1, 3, true);
        assert_eq!((model.nq(), model.nv()), (7, 6));
        let q = model.random_configuration(5);
        for i in 0..6 {
            let qp = perturb_configuration(&model, &q, i, 1e-3).unwrap();
            let d = model.difference(&q, &qp).unwrap();
            let mut want = DVector::zeros(6);
            want[i] = 1e-3;
            assert!((d - want).amax() < 1e-15);
        }
        let delta = DVector::from_vec(vec![0.3, -0.2, 0.5, 0.1, 0.4, -0.3]);
        let w = Vec3::new(delta[0], delta[1], delta[2]);
        let g = |q: &DVector<f64>| model.integrate(q, &delta, 1.0);
        let jac = configuration_to_configuration_jacobian(&model, &q, &g, 1e-2, FdMethod::Ridders).unwrap();
        let mut want = DMatrix::identity(6, 6);
        want.view_mut((0, 0), (3, 3)).copy_from(&so3_exp(&-w));
        assert!((&jac.value - &want).amax() < 1e-9, "{}", (&jac.value - &want).amax());
        // Euclidean output: q ↦ q ⊖ q₀ has Jacobian J_r⁻¹ on the rotation, the identity on the translation.
        let q0 = model.integrate(&q, &delta, -1.0).unwrap();
        let h = |q: &DVector<f64>| model.difference(&q0, q);
        let jac = configuration_jacobian(&model, &q, &h, 1e-2, FdMethod::Ridders).unwrap();
        let mut want = DMatrix::identity(6, 6);
        want.view_mut((0, 0), (3, 3)).copy_from(&so3_right_jacobian_inv(&w));
        assert!((&jac.value - &want).amax() < 1e-9, "{}", (&jac.value - &want).amax());
        assert!(perturb_configuration(&model, &q, 6, 1e-3).is_err());
    }
}
