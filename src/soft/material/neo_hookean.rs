//! Stable Neo-Hookean (Smith, de Goes and Kim 2018, "Stable Neo-Hookean Flesh
//! Simulation", in the form without their `log(I_C + 1)` term):
//!
//! * `Ψ = μ/2 (I_C − 3) + λ'/2 (J − α)²`, `I_C = tr(FᵀF)`, `J = det F`,
//!   `λ' = λ + μ`, `α = 1 + μ/λ'`;
//! * `P = μ F + λ' (J − α) cof F = μ (F + (J − 2) cof F) + λ (J − 1) cof F`, where
//!   `cof F = ∂J/∂F` (`= J F⁻ᵀ` when invertible) has the columns
//!   `f₁ × f₂, f₂ × f₀, f₀ × f₁` of `F`'s columns `fᵢ`, so no inverse is taken and
//!   inverted or degenerate elements (`J ≤ 0`) are handled alike;
//! * `∂P/∂F = μ I₉ + λ' vec(cof F) vec(cof F)ᵀ + λ' (J − α) ∂cof F/∂F`, where
//!   `∂cof F/∂F` (the Hessian of `J`) has the 3 × 3 blocks `±[fᵢ]×` of the columns'
//!   cross-product matrices ([`cofactor_derivative`], the `F̂` blocks of Smith et al.).
//!
//! The mapping `λ' = λ + μ`, `α = 1 + μ/λ'` makes the linearization at `F = I` that of
//! linear elasticity with Lamé `(μ, λ)`: `P(I) = μ I + λ'(1 − α) I = 0`, and with
//! `cof(I + dF) ≈ I + tr(dF) I − dFᵀ`,
//! `∂P/∂F(I) = μ I₉ + λ' vec(I) vec(I)ᵀ − μ (vec(I) vec(I)ᵀ − K) = μ (I₉ + K) + λ vec(I) vec(I)ᵀ`
//! (`K` the commutation matrix, `K vec(A) = vec(Aᵀ)`).
//!
//! The energy is evaluated in the expanded form
//! `μ/2 (I_C − 3) − μ (J − 1) + λ'/2 (J − 1)² + μ²/(2λ')`, equal to the above; its rest value
//! `Ψ(I) = μ²/(2λ') = λ'/2 (μ/λ')²` is not zero (a constant, irrelevant to `P` and the
//! tangent). For `λ' = 0` (`λ = −μ`, Poisson's ratio −1, refused by
//! [`super::Lame::from_young_poisson`]) that constant diverges and is left out; `P` and
//! the tangent are written with `λ' (J − α) = λ' (J − 1) − μ` and need no guard.

use super::{Lame, Mat9};
use crate::math::{skew, Mat3, Vec3};
use nalgebra::SVector;

/// A 9-vector over column-major `vec(F)`.
type Vec9 = SVector<f64, 9>;

/// `cof F = ∂ det F/∂F`: columns `f₁ × f₂`, `f₂ × f₀`, `f₀ × f₁`.
fn cofactor(f: &Mat3) -> Mat3 {
    let c = |i: usize| -> Vec3 { f.column(i).into_owned() };
    Mat3::from_columns(&[c(1).cross(&c(2)), c(2).cross(&c(0)), c(0).cross(&c(1))])
}

/// `∂vec(cof F)/∂vec(F)`, the Hessian of `det F`: block `(a, b)` (cofactor column `a`,
/// `F` column `b`) is `−[f_c]×` for `(a, b, c)` an even permutation of `(0, 1, 2)`,
/// `[f_c]×` for an odd one, zero on the diagonal (symmetric, as `[f]×ᵀ = −[f]×`).
fn cofactor_derivative(f: &Mat3) -> Mat9 {
    let mut h = Mat9::zeros();
    for a in 0..3 {
        let (b, c) = ((a + 1) % 3, (a + 2) % 3);
        // d(f_b × f_c) = f_b × df_c − f_c × df_b.
        let fb = skew(&f.column(b).into_owned());
        let fc = skew(&f.column(c).into_owned());
        h.fixed_view_mut::<3, 3>(3 * a, 3 * c).copy_from(&fb);
        h.fixed_view_mut::<3, 3>(3 * a, 3 * b).copy_from(&(-fc));
    }
    h
}

/// `Ψ = μ/2 (I_C − 3) − μ (J − 1) + λ'/2 (J − 1)² + μ²/(2λ')` (the last term only for
/// `λ' ≠ 0`); see the module doc.
pub(super) fn energy(f: &Mat3, lame: &Lame) -> f64 {
    let (mu, lp) = (lame.mu, lame.lambda + lame.mu);
    let j = f.determinant();
    let rest = if lp != 0.0 { mu * mu / (2.0 * lp) } else { 0.0 };
    0.5 * mu * (f.norm_squared() - 3.0) - mu * (j - 1.0) + 0.5 * lp * (j - 1.0).powi(2) + rest
}

/// `[P_μ, P_λ] = [F + (J − 2) cof F, (J − 1) cof F]`.
pub(super) fn stress_parts(f: &Mat3) -> [Mat3; 2] {
    let cof = cofactor(f);
    let j = f.determinant();
    [f + cof * (j - 2.0), cof * (j - 1.0)]
}

/// `μ I₉ + λ' vec(cof F) vec(cof F)ᵀ + (λ' (J − 1) − μ) ∂cof F/∂F`.
pub(super) fn tangent(f: &Mat3, lame: &Lame) -> Mat9 {
    let (mu, lp) = (lame.mu, lame.lambda + lame.mu);
    let g = Vec9::from_column_slice(cofactor(f).as_slice());
    let j = f.determinant();
    Mat9::identity() * mu + g * g.transpose() * lp + cofactor_derivative(f) * (lp * (j - 1.0) - mu)
}

/// `Dcof[A]`, the derivative of `cof F` along `A`: the columns
/// `a₁ × f₂ + f₁ × a₂, a₂ × f₀ + f₂ × a₀, a₀ × f₁ + f₀ × a₁` (and, with `F = B`, the
/// constant second derivative `D²cof[A, B]`, which has the same form).
fn cofactor_along(f: &Mat3, a: &Mat3) -> Mat3 {
    let (fc, ac) = (|i: usize| -> Vec3 { f.column(i).into_owned() }, |i: usize| -> Vec3 { a.column(i).into_owned() });
    Mat3::from_columns(&[
        ac(1).cross(&fc(2)) + fc(1).cross(&ac(2)),
        ac(2).cross(&fc(0)) + fc(2).cross(&ac(0)),
        ac(0).cross(&fc(1)) + fc(0).cross(&ac(1)),
    ])
}

/// `D²P(F)[A, B]` with `P = μ F + s(J) cof F`, `s(J) = λ'(J − 1) − μ`, `s' = λ'`:
/// `λ' [(Dcof[A] : B) cof F + (cof F : A) Dcof[B] + (cof F : B) Dcof[A]] + s(J) D²cof[A, B]`.
pub(super) fn stress_curvature(f: &Mat3, lame: &Lame, a: &Mat3, b: &Mat3) -> Mat3 {
    let lp = lame.lambda + lame.mu;
    let g = cofactor(f);
    let (ga, gb) = (cofactor_along(f, a), cofactor_along(f, b));
    let s = lp * (f.determinant() - 1.0) - lame.mu;
    (g * ga.dot(b) + gb * g.dot(a) + ga * g.dot(b)) * lp + cofactor_along(a, b) * s
}
