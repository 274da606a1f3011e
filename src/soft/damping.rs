//! The stiffness part of a soft body's damping: a viscous stress of the Green strain
//! rate, integrated implicitly over a step of length h.
//!
//! With the Green strain `E(F) = (FᵀF − I)/2`, the start-of-step gradient `F₀` and the
//! end-of-step gradient `F`, the strain increment `ΔE = E(F) − E(F₀)` and the element's
//! small-strain moduli `(μ, λ)`, the step's viscous potential per unit rest volume is
//!
//! ```text
//! Ψ_d = (β/h) [μ ΔE:ΔE + λ/2 tr(ΔE)²],   P_d = ∂Ψ_d/∂F = (β/h) F S_d,
//! S_d = 2μ ΔE + λ tr(ΔE) I.
//! ```
//!
//! For small strains `ΔE ≈ sym(∇(h v))`, so the force is Rayleigh's `β K v` with the
//! linear-elastic stiffness K; `E` is invariant under rotations, so a rigid motion is
//! never damped. Its tangent `∂P_d/∂F` and the mixed term `∂P_d/∂F₀` (for the adjoint)
//! need only first and second derivatives of `E`.

use super::material::{Lame, Mat9};
use crate::math::Mat3;

/// The Green strain `(FᵀF − I)/2`.
pub(crate) fn green_strain(f: &Mat3) -> Mat3 {
    (f.transpose() * f - Mat3::identity()) * 0.5
}

/// `2μ A + λ tr(A) I` for a symmetric `A`.
fn moduli(a: &Mat3, lame: &Lame) -> Mat3 {
    a * (2.0 * lame.mu) + Mat3::identity() * (lame.lambda * a.trace())
}

/// `P_d = c F S_d` with `c = β/h` and the start strain `e0 = E(F₀)`.
pub(crate) fn stress(f: &Mat3, e0: &Mat3, lame: &Lame, c: f64) -> Mat3 {
    f * moduli(&(green_strain(f) - e0), lame) * c
}

/// `Ψ_d` per unit rest volume.
pub(crate) fn energy(f: &Mat3, e0: &Mat3, lame: &Lame, c: f64) -> f64 {
    let de = green_strain(f) - e0;
    c * (lame.mu * de.norm_squared() + 0.5 * lame.lambda * de.trace().powi(2))
}

/// `(∂P_d/∂μ, ∂P_d/∂λ)`: `c F (2ΔE)` and `c F tr(ΔE)`.
pub(crate) fn lame_parts(f: &Mat3, e0: &Mat3, c: f64) -> [Mat3; 2] {
    let de = green_strain(f) - e0;
    [f * de * (2.0 * c), f * (c * de.trace())]
}

/// `∂vec(P_d)/∂vec(F)`: `dP = c [dF S_d + F (2μ dE + λ tr(dE) I)]`, `dE = sym(Fᵀ dF)`.
pub(crate) fn tangent(f: &Mat3, e0: &Mat3, lame: &Lame, c: f64) -> Mat9 {
    let s = moduli(&(green_strain(f) - e0), lame);
    let mut t = Mat9::zeros();
    for l in 0..3 {
        for k in 0..3 {
            let mut df = Mat3::zeros();
            df[(k, l)] = 1.0;
            let fd = f.transpose() * df;
            let de = (fd + fd.transpose()) * 0.5;
            let dp = (df * s + f * moduli(&de, lame)) * c;
            t.column_mut(k + 3 * l).copy_from_slice(dp.as_slice());
        }
    }
    t
}

/// `∂⟨Λ, P_d⟩/∂F₀ = −c F₀ [2μ sym(FᵀΛ) + λ tr(FᵀΛ) I]`.
pub(crate) fn start_gradient(f: &Mat3, f0: &Mat3, lame: &Lame, c: f64, lambda: &Mat3) -> Mat3 {
    let z = f.transpose() * lambda;
    let w = moduli(&((z + z.transpose()) * 0.5), lame);
    -(f0 * w) * c
}

/// `D²P_d(F)[A, B] = c [A S(dE[B]) + B S(dE[A]) + F S(sym(AᵀB))]` (`S = moduli`,
/// `dE[A] = sym(FᵀA)`): the third derivative of `Ψ_d` in `F`, contracted twice. The
/// start gradient's share, `∂/∂F₀ ⟨B, ∂P_d/∂F [A]⟩ = −c F₀ S(sym(AᵀB))`, is
/// [`start_gradient`]`(A, F₀, …, B)`.
pub(crate) fn stress_curvature(f: &Mat3, lame: &Lame, c: f64, a: &Mat3, b: &Mat3) -> Mat3 {
    let sym = |x: Mat3| (x + x.transpose()) * 0.5;
    (a * moduli(&sym(f.transpose() * b), lame)
        + b * moduli(&sym(f.transpose() * a), lame)
        + f * moduli(&sym(a.transpose() * b), lame))
        * c
}
