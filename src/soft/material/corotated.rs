//! Co-rotational linear elasticity on the polar decomposition `F = R S`:
//!
//! * `Ψ = μ ‖F − R‖²_F + λ/2 (tr(RᵀF) − 3)²`;
//! * `P = 2μ (F − R) + λ (tr(RᵀF) − 3) R`, since `∂ tr(RᵀF)/∂F = R` and
//!   `⟨F − R, dR⟩ = ⟨S − I, RᵀdR⟩ = 0` (symmetric against skew);
//! * `∂P/∂F = 2μ (I₉ − ∂R/∂F) + λ vec(R) vec(R)ᵀ + λ (tr S − 3) ∂R/∂F`.
//!
//! `R` comes from the rotation-variant SVD `F = U Σ Vᵀ` ([`RotationSvd`]): `U` and `V`
//! proper rotations, `σ₀ ≥ σ₁ ≥ |σ₂|`, and `σ₂ < 0` when `det F < 0`; `R = U Vᵀ` is then
//! always a rotation (for inverted elements the rotation nearest to `F`, with
//! `S = RᵀF = V Σ Vᵀ` symmetric but indefinite), `tr(RᵀF) = Σ σᵢ` and
//! `‖F − R‖² = Σ (σᵢ − 1)²`.
//!
//! The rotation derivative in closed form (Smith, de Goes and Kim 2019, "Analytic
//! Eigensystems for Isotropic Distortion Energies", §4): with `dR = R Ω` (`Ω` skew), the
//! skew part of `Rᵀ dF` gives `Vᵀ Ω V` entrywise as
//! `(dF̃_jk − dF̃_kj) / (σ_j + σ_k)`, `dF̃ = Uᵀ dF V`, so
//! `∂R/∂F = Σᵢ 2/(σ_j + σ_k) vec(Tᵢ) vec(Tᵢ)ᵀ` over the three twists
//! `Tᵢ = U (e_k e_jᵀ − e_j e_kᵀ) Vᵀ / √2` (`(i, j, k)` cyclic), which is symmetric.
//!
//! Non-differentiable points: where `σ_j + σ_k = 0` for a pair, i.e. a rank-≤ 1 `F`
//! (`σ₁ = σ₂ = 0`) or an inverted `F` with `σ₂ = −σ₁`, `R` is not unique and jumps; there
//! the denominators are clamped away from zero ([`MIN_TWIST_DENOMINATOR`]), so the tangent
//! stays finite (large) instead of NaN. At `F = I`, `∂R/∂F` is the projector onto skew
//! matrices and the tangent equals linear elasticity's.

use super::{Lame, Mat9};
use crate::math::{Mat3, Vec3};
use nalgebra::SVector;

/// A 9-vector over column-major `vec(F)`.
type Vec9 = SVector<f64, 9>;

/// Smallest magnitude of a twist denominator `σ_j + σ_k` (the deformation gradient is
/// dimensionless, so an absolute floor).
const MIN_TWIST_DENOMINATOR: f64 = 1e-12;

/// Iteration cap of the SVD (a non-converging or non-finite input gives NaN, not a hang).
const SVD_MAX_ITERATIONS: usize = 200;

/// The rotation-variant SVD `F = U diag(σ) Vᵀ`: `U`, `V` proper rotations,
/// `σ₀ ≥ σ₁ ≥ |σ₂|`, `σ₂` carrying the sign of `det F`.
#[derive(Clone, Copy, Debug)]
struct RotationSvd {
    /// Left singular vectors (a rotation).
    u: Mat3,
    /// Signed singular values, sorted by magnitude (only the last may be negative).
    sigma: Vec3,
    /// Right singular vectors (a rotation).
    v: Mat3,
}

impl RotationSvd {
    /// Decomposes `f` (nalgebra's SVD, sorted descending, then the sign fix: a reflection
    /// in `U` or `V` moves onto their last column and the smallest singular value).
    /// Non-finite input, or an SVD that does not converge, gives NaN throughout.
    fn new(f: &Mat3) -> RotationSvd {
        let nan = RotationSvd {
            u: Mat3::from_element(f64::NAN),
            sigma: Vec3::from_element(f64::NAN),
            v: Mat3::from_element(f64::NAN),
        };
        if !f.iter().all(|x| x.is_finite()) {
            return nan;
        }
        let Some(svd) = f.try_svd(true, true, f64::EPSILON, SVD_MAX_ITERATIONS) else {
            return nan;
        };
        let (Some(mut u), Some(v_t)) = (svd.u, svd.v_t) else {
            return nan;
        };
        let mut v = v_t.transpose();
        let mut sigma = svd.singular_values;
        if u.determinant() < 0.0 {
            u.column_mut(2).neg_mut();
            sigma[2] = -sigma[2];
        }
        if v.determinant() < 0.0 {
            v.column_mut(2).neg_mut();
            sigma[2] = -sigma[2];
        }
        RotationSvd { u, sigma, v }
    }

    /// The rotation `R = U Vᵀ`.
    fn rotation(&self) -> Mat3 {
        self.u * self.v.transpose()
    }

    /// `tr S = tr(RᵀF) = Σ σᵢ`.
    fn stretch_trace(&self) -> f64 {
        self.sigma.sum()
    }

    /// `∂vec(R)/∂vec(F) = Σᵢ 2/(σ_j + σ_k) vec(Tᵢ) vec(Tᵢ)ᵀ` (see the module doc), the
    /// denominators clamped to at least [`MIN_TWIST_DENOMINATOR`] in magnitude.
    fn rotation_derivative(&self) -> Mat9 {
        let mut d = Mat9::zeros();
        for i in 0..3 {
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            let twist = self.twist(j, k);
            d += twist * twist.transpose() * (2.0 / clamp_denominator(self.sigma[j] + self.sigma[k]));
        }
        d
    }

    /// `vec(U (e_k e_jᵀ − e_j e_kᵀ) Vᵀ) / √2 = vec(u_k v_jᵀ − u_j v_kᵀ) / √2` (unit norm).
    fn twist(&self, j: usize, k: usize) -> Vec9 {
        let (u, v) = (&self.u, &self.v);
        let t = (u.column(k) * v.column(j).transpose() - u.column(j) * v.column(k).transpose())
            * std::f64::consts::FRAC_1_SQRT_2;
        Vec9::from_column_slice(t.as_slice())
    }
}

/// `s` pushed away from zero to magnitude [`MIN_TWIST_DENOMINATOR`], keeping its sign
/// (`+` for zero).
fn clamp_denominator(s: f64) -> f64 {
    if s.abs() >= MIN_TWIST_DENOMINATOR {
        s
    } else if s < 0.0 {
        -MIN_TWIST_DENOMINATOR
    } else {
        MIN_TWIST_DENOMINATOR
    }
}

/// `Ψ = μ Σ (σᵢ − 1)² + λ/2 (Σ σᵢ − 3)²` (equal to `μ ‖F − R‖² + λ/2 (tr(RᵀF) − 3)²`).
pub(super) fn energy(f: &Mat3, lame: &Lame) -> f64 {
    let svd = RotationSvd::new(f);
    let shear = svd.sigma.iter().map(|s| (s - 1.0).powi(2)).sum::<f64>();
    lame.mu * shear + 0.5 * lame.lambda * (svd.stretch_trace() - 3.0).powi(2)
}

/// `[P_μ, P_λ] = [2 (F − R), (tr S − 3) R]`.
pub(super) fn stress_parts(f: &Mat3) -> [Mat3; 2] {
    let svd = RotationSvd::new(f);
    let r = svd.rotation();
    [(f - r) * 2.0, r * (svd.stretch_trace() - 3.0)]
}

/// `2μ I₉ + (λ (tr S − 3) − 2μ) ∂R/∂F + λ vec(R) vec(R)ᵀ`.
pub(super) fn tangent(f: &Mat3, lame: &Lame) -> Mat9 {
    let svd = RotationSvd::new(f);
    let r = Vec9::from_column_slice(svd.rotation().as_slice());
    let dr = svd.rotation_derivative();
    Mat9::identity() * (2.0 * lame.mu)
        + dr * (lame.lambda * (svd.stretch_trace() - 3.0) - 2.0 * lame.mu)
        + r * r.transpose() * lame.lambda
}
