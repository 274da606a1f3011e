//! Small-strain linear elasticity: `ε = (F + Fᵀ)/2 − I`, `Ψ = μ ε:ε + λ/2 tr(ε)²`,
//! `P = 2μ ε + λ tr(ε) I`, and the constant tangent `∂P/∂F`.

use super::{vec_index, Lame, Mat9};
use crate::math::Mat3;

fn strain(f: &Mat3) -> Mat3 {
    (f + f.transpose()) * 0.5 - Mat3::identity()
}

/// `Ψ(F)`.
pub(super) fn energy(f: &Mat3, lame: &Lame) -> f64 {
    let e = strain(f);
    lame.mu * e.norm_squared() + 0.5 * lame.lambda * e.trace().powi(2)
}

/// `[P_μ, P_λ] = [2ε, tr(ε) I]`.
pub(super) fn stress_parts(f: &Mat3) -> [Mat3; 2] {
    let e = strain(f);
    [e * 2.0, Mat3::identity() * e.trace()]
}

/// `∂P_{ij}/∂F_{kl} = μ (δ_ik δ_jl + δ_il δ_jk) + λ δ_ij δ_kl`.
pub(super) fn tangent(lame: &Lame) -> Mat9 {
    let mut t = Mat9::zeros();
    for i in 0..3 {
        for j in 0..3 {
            let r = vec_index(i, j);
            t[(r, vec_index(i, j))] += lame.mu;
            t[(r, vec_index(j, i))] += lame.mu;
            if i == j {
                for k in 0..3 {
                    t[(r, vec_index(k, k))] += lame.lambda;
                }
            }
        }
    }
    t
}
