//! Hyperelastic materials of tetrahedral elements: the strain-energy density `Ψ(F)` per
//! unit rest volume, the first Piola–Kirchhoff stress `P = ∂Ψ/∂F`, its derivative
//! `∂P/∂F` (the tangent, a 9 × 9 matrix over column-major `vec(F)`), and the derivatives
//! of `P` with respect to the Lamé parameters, all analytic.
//!
//! Every model is parametrised by the small-strain Lamé parameters `(μ, λ)`
//! ([`Lame`], from Young's modulus and Poisson's ratio), so all of them agree with
//! linear elasticity to first order at `F = I`, and each is linear in `(μ, λ)`:
//! `P = μ P_μ(F) + λ P_λ(F)`. One model per file:
//! * [`MaterialModel::LinearElastic`] (`linear.rs`): `Ψ = μ ε:ε + λ/2 tr(ε)²`,
//!   `ε = sym(F) − I`;
//! * [`MaterialModel::Corotated`] (`corotated.rs`): `Ψ = μ ‖F − R‖² + λ/2 tr(RᵀF − I)²`,
//!   `F = R S` the polar decomposition;
//! * [`MaterialModel::StVenantKirchhoff`] (`stvk.rs`): `Ψ = μ E:E + λ/2 tr(E)²`,
//!   `E = (FᵀF − I)/2`;
//! * [`MaterialModel::StableNeoHookean`] (`neo_hookean.rs`; Smith et al. 2018, the form of
//!   paper 000 §9): `Ψ = μ/2 (I_C − 3) + λ'/2 (J − α)²` with `λ' = λ + μ`,
//!   `α = 1 + μ/λ'`, defined for inverted elements (`J ≤ 0`).
//!
//! `psd.rs` projects a tangent onto the positive semi-definite cone (for Newton
//! directions away from the solution).

mod corotated;
mod linear;
mod neo_hookean;
mod psd;
mod stvk;

pub use psd::project_psd;

use crate::error::{Result, SoftError};
use crate::math::Mat3;
use nalgebra::{Matrix2, SMatrix};
use serde::{Deserialize, Serialize};

/// A 9 × 9 matrix over column-major `vec(F)` (`vec(F)[i + 3j] = F[(i, j)]`).
pub type Mat9 = SMatrix<f64, 9, 9>;

/// The constitutive model of a soft region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MaterialModel {
    /// Small-strain linear elasticity (not rotation invariant).
    LinearElastic,
    /// Co-rotational linear elasticity on the polar decomposition's stretch.
    Corotated,
    /// St. Venant–Kirchhoff (Green strain).
    StVenantKirchhoff,
    /// Stable Neo-Hookean (Smith, de Goes and Kim 2018).
    StableNeoHookean,
}

/// Small-strain Lamé parameters `(μ, λ)` (Pa).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Lame {
    /// The shear modulus μ.
    pub mu: f64,
    /// Lamé's first parameter λ.
    pub lambda: f64,
}

impl Lame {
    /// `μ = E / (2(1 + ν))`, `λ = E ν / ((1 + ν)(1 − 2ν))`. Errors
    /// ([`SoftError::InvalidMaterial`], naming `what`): `E` not finite and positive, `ν`
    /// outside `(−1, 0.5)`.
    pub fn from_young_poisson(youngs_modulus: f64, poisson: f64, what: &str) -> Result<Lame> {
        let invalid = |reason: String| SoftError::InvalidMaterial { region: what.to_string(), reason };
        if !(youngs_modulus.is_finite() && youngs_modulus > 0.0) {
            return Err(invalid(format!("Young's modulus must be finite and positive, got {youngs_modulus}")).into());
        }
        if !(poisson.is_finite() && poisson > -1.0 && poisson < 0.5) {
            return Err(invalid(format!("Poisson's ratio must lie in (-1, 0.5), got {poisson}")).into());
        }
        let (e, nu) = (youngs_modulus, poisson);
        Ok(Lame { mu: e / (2.0 * (1.0 + nu)), lambda: e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu)) })
    }

    /// `∂(μ, λ)/∂(E, ν)`: rows μ, λ; columns E, ν.
    pub fn young_poisson_jacobian(youngs_modulus: f64, poisson: f64) -> Matrix2<f64> {
        let (e, nu) = (youngs_modulus, poisson);
        let a = 1.0 + nu;
        let b = 1.0 - 2.0 * nu;
        let dmu_de = 1.0 / (2.0 * a);
        let dmu_dnu = -e / (2.0 * a * a);
        let dl_de = nu / (a * b);
        // d/dν [ν / ((1+ν)(1−2ν))] = ((1+ν)(1−2ν) − ν(1 − 4ν − 1)) / ((1+ν)(1−2ν))² = (1 + 2ν²) / (a b)².
        let dl_dnu = e * (1.0 + 2.0 * nu * nu) / (a * a * b * b);
        Matrix2::new(dmu_de, dmu_dnu, dl_de, dl_dnu)
    }
}

impl MaterialModel {
    /// The strain-energy density `Ψ(F)` (J/m³).
    pub fn energy(&self, f: &Mat3, lame: &Lame) -> f64 {
        match self {
            MaterialModel::LinearElastic => linear::energy(f, lame),
            MaterialModel::Corotated => corotated::energy(f, lame),
            MaterialModel::StVenantKirchhoff => stvk::energy(f, lame),
            MaterialModel::StableNeoHookean => neo_hookean::energy(f, lame),
        }
    }

    /// The first Piola–Kirchhoff stress `P = ∂Ψ/∂F` (Pa).
    pub fn stress(&self, f: &Mat3, lame: &Lame) -> Mat3 {
        let [pm, pl] = self.stress_lame_derivatives(f);
        pm * lame.mu + pl * lame.lambda
    }

    /// `(∂P/∂μ, ∂P/∂λ)`, which do not depend on `(μ, λ)` (every model is linear in them).
    pub fn stress_lame_derivatives(&self, f: &Mat3) -> [Mat3; 2] {
        match self {
            MaterialModel::LinearElastic => linear::stress_parts(f),
            MaterialModel::Corotated => corotated::stress_parts(f),
            MaterialModel::StVenantKirchhoff => stvk::stress_parts(f),
            MaterialModel::StableNeoHookean => neo_hookean::stress_parts(f),
        }
    }

    /// The tangent `∂vec(P)/∂vec(F)` (symmetric), unprojected.
    pub fn tangent(&self, f: &Mat3, lame: &Lame) -> Mat9 {
        match self {
            MaterialModel::LinearElastic => linear::tangent(lame),
            MaterialModel::Corotated => corotated::tangent(f, lame),
            MaterialModel::StVenantKirchhoff => stvk::tangent(f, lame),
            MaterialModel::StableNeoHookean => neo_hookean::tangent(f, lame),
        }
    }

    /// The third derivative of `Ψ` contracted twice, `D²P(F)[A, B]` (the gradient in `F`
    /// of `vec(B)ᵀ ∂P/∂F(F) vec(A)`), which the coupling of a soft body to the constraint
    /// stage needs (its effective mass is the step's Hessian). Closed forms: zero for the
    /// linear model (constant tangent), polynomial for St. Venant–Kirchhoff and stable
    /// Neo-Hookean; `None` for the corotated model (it would need the second derivative
    /// of the polar rotation).
    pub fn stress_curvature(&self, f: &Mat3, lame: &Lame, a: &Mat3, b: &Mat3) -> Option<Mat3> {
        match self {
            MaterialModel::LinearElastic => Some(Mat3::zeros()),
            MaterialModel::Corotated => None,
            MaterialModel::StVenantKirchhoff => Some(stvk::stress_curvature(f, lame, a, b)),
            MaterialModel::StableNeoHookean => Some(neo_hookean::stress_curvature(f, lame, a, b)),
        }
    }

    /// The model's name as in scene files and Python (`"linear"`, `"corotated"`,
    /// `"stvk"`, `"neo_hookean"`).
    pub fn name(&self) -> &'static str {
        match self {
            MaterialModel::LinearElastic => "linear",
            MaterialModel::Corotated => "corotated",
            MaterialModel::StVenantKirchhoff => "stvk",
            MaterialModel::StableNeoHookean => "neo_hookean",
        }
    }

    /// The model of a name (see [`MaterialModel::name`]).
    pub fn from_name(name: &str) -> Option<MaterialModel> {
        [
            MaterialModel::LinearElastic,
            MaterialModel::Corotated,
            MaterialModel::StVenantKirchhoff,
            MaterialModel::StableNeoHookean,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

/// The index of `F[(i, j)]` in column-major `vec(F)`.
#[inline]
pub(crate) fn vec_index(i: usize, j: usize) -> usize {
    i + 3 * j
}
