//! St. Venant–Kirchhoff: the Green strain `E = (FᵀF − I)/2`,
//!
//! * `Ψ = μ E:E + λ/2 tr(E)²`;
//! * `P = F (2μ E + λ tr(E) I)` (`F` times the second Piola–Kirchhoff stress `S`);
//! * `∂P_ij/∂F_kl = δ_ik S_lj + μ (F_il F_kj + (F Fᵀ)_ik δ_jl) + λ F_ij F_kl`, from
//!   `dP = dF S + F (2μ dE + λ tr(dE) I)` with `dE = (dFᵀF + FᵀdF)/2` and
//!   `tr(dE) = F:dF`; symmetric under `(ij) ↔ (kl)`.
//!
//! Defined for every `F`, inverted ones included; `Ψ` depends on `F` only through `FᵀF`,
//! so a reflected `F` (`det F < 0`) costs no more than its mirror image and the model does
//! not resist inversion (it softens under strong compression). At `F = I` the tangent is
//! linear elasticity's.

use super::{vec_index, Lame, Mat9};
use crate::math::Mat3;

/// The Green strain `E = (FᵀF − I)/2`.
fn green_strain(f: &Mat3) -> Mat3 {
    (f.transpose() * f - Mat3::identity()) * 0.5
}

/// `Ψ = μ E:E + λ/2 tr(E)²`.
pub(super) fn energy(f: &Mat3, lame: &Lame) -> f64 {
    let e = green_strain(f);
    lame.mu * e.norm_squared() + 0.5 * lame.lambda * e.trace().powi(2)
}

/// `[P_μ, P_λ] = [2 F E, tr(E) F]`.
pub(super) fn stress_parts(f: &Mat3) -> [Mat3; 2] {
    let e = green_strain(f);
    [f * e * 2.0, f * e.trace()]
}

/// `∂P_ij/∂F_kl = δ_ik S_lj + μ (F_il F_kj + (F Fᵀ)_ik δ_jl) + λ F_ij F_kl`, with
/// `S = 2μ E + λ tr(E) I`.
pub(super) fn tangent(f: &Mat3, lame: &Lame) -> Mat9 {
    let e = green_strain(f);
    let s = e * (2.0 * lame.mu) + Mat3::identity() * (lame.lambda * e.trace());
    let fft = f * f.transpose();
    let mut t = Mat9::zeros();
    for j in 0..3 {
        for i in 0..3 {
            let r = vec_index(i, j);
            for l in 0..3 {
                for k in 0..3 {
                    let mut v = lame.mu * f[(i, l)] * f[(k, j)] + lame.lambda * f[(i, j)] * f[(k, l)];
                    if i == k {
                        v += s[(l, j)];
                    }
                    if j == l {
                        v += lame.mu * fft[(i, k)];
                    }
                    t[(r, vec_index(k, l))] = v;
                }
            }
        }
    }
    t
}

/// `D²P(F)[A, B] = A S(dE[B]) + B S(dE[A]) + F S(sym(AᵀB))`, with
/// `S(X) = 2μ X + λ tr(X) I` and `dE[A] = sym(FᵀA)`.
pub(super) fn stress_curvature(f: &Mat3, lame: &Lame, a: &Mat3, b: &Mat3) -> Mat3 {
    let moduli = |x: Mat3| -> Mat3 {
        let s = (x + x.transpose()) * 0.5;
        s * (2.0 * lame.mu) + Mat3::identity() * (lame.lambda * s.trace())
    };
    a * moduli(f.transpose() * b) + b * moduli(f.transpose() * a) + f * moduli(a.transpose() * b)
}
