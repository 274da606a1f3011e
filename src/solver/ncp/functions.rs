//! NCP functions and the frictional compliance of smooth isotropic Coulomb friction
//! (Macklin et al. 2019, eq. 17, §5, §7 and App. A; digest-000 §1 and §3).
//!
//! An NCP function `ϕ(a, b)` is zero exactly when `0 ≤ a ⊥ b ≥ 0`. With the
//! complementarity preconditioner's per-row scale `r > 0` (eq. 66) the solver uses
//! `ϕ(a, r b)`, which has the same zeros and, with `r` the row's Delassus diagonal, the
//! units that make Newton's step well scaled:
//!
//! ```text
//! min-map:             ϕ = min(a, r b)                       ∂ϕ/∂a = 1, ∂ϕ/∂b = 0  if a ≤ r b
//!                                                            ∂ϕ/∂a = 0, ∂ϕ/∂b = r  otherwise
//! Fischer–Burmeister:  ϕ = a + r b − √(a² + r² b²)           ∂ϕ/∂a = 1 − a/√·,  ∂ϕ/∂b = r (1 − r b/√·)
//!                      at (0, 0): ∂ϕ/∂a = 0, ∂ϕ/∂b = r (the paper's choice α = 0, β = 1)
//! ```
//!
//! Friction (eqs. 31–37) is written `ϕ_f = Dᵀu + W λ_f = 0` with the compliance `W`
//! lagged over a Newton iteration (it keeps the system symmetric). With `v = |Dᵀu|`,
//! `σ = μ λ_n − |λ_f|` and `ρ = √(v² + r² σ²)`, App. A gives
//!
//! ```text
//! W_min = 0 if v ≤ r σ (stick), else (v − r σ) / (μ λ_n) (slide)            (105)
//! W_FB  = r (ρ − r σ) / (v + r μ λ_n − ρ)                                   (104)
//! ```
//!
//! where the printed (102) and (104) have `|Dᵀq̇|²` for `v` in the denominator, which is
//! dimensionally wrong (digest-000 §1): here it is `v`, and then `W = v⁺/|λ_f|⁺` of the
//! fixed-point updates (99)–(103) holds exactly. Friction is active only where
//! `μ λ_n > 0` (eq. 106); elsewhere its rows carry `λ_f = 0`.
//!
//! Differences of nearly equal terms are evaluated in rationalized form (for
//! `a, b > 0`, `a + r b − √(a² + r² b²) = 2 a r b / (a + r b + √·)`), so the functions
//! keep full relative accuracy far from the origin.

use serde::{Deserialize, Serialize};

/// Which NCP function the solver uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum NcpFunction {
    /// `min(a, r b)`: piecewise linear.
    MinMap,
    /// Fischer–Burmeister `a + r b − √(a² + r² b²)`: smooth but at the origin (the
    /// paper's default; spreads forces smoothly over redundant contacts).
    #[default]
    FischerBurmeister,
}

/// The value of an NCP function and its partial derivatives.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcpValue {
    /// `ϕ(a, r b)`.
    pub value: f64,
    /// `∂ϕ/∂a`.
    pub da: f64,
    /// `∂ϕ/∂b` (the scale `r` included).
    pub db: f64,
}

impl NcpFunction {
    /// `ϕ(a, r b)` and its partial derivatives (module notes). `r` must be positive.
    pub fn eval(self, a: f64, b: f64, r: f64) -> NcpValue {
        let rb = r * b;
        match self {
            NcpFunction::MinMap => {
                if a <= rb {
                    NcpValue { value: a, da: 1.0, db: 0.0 }
                } else {
                    NcpValue { value: rb, da: 0.0, db: r }
                }
            }
            NcpFunction::FischerBurmeister => {
                let s = a.hypot(rb);
                if s == 0.0 {
                    return NcpValue { value: 0.0, da: 0.0, db: r };
                }
                let value = if a > 0.0 && rb > 0.0 { 2.0 * a * rb / (a + rb + s) } else { a + rb - s };
                NcpValue { value, da: 1.0 - a / s, db: r * (1.0 - rb / s) }
            }
        }
    }
}

/// The frictional compliance of one contact (module notes, eq. 106).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrictionCompliance {
    /// `μ λ_n > 0`: the friction rows read `Dᵀu + W λ_f = 0` with this `W ≥ 0` (0: stick).
    Active(f64),
    /// `μ λ_n ≤ 0`: no friction; the rows hold `λ_f = 0`.
    Inactive,
}

/// The frictional compliance `W` of a contact with tangential slip speed `slip = |Dᵀu|`,
/// friction force magnitude `force = |λ_f|`, friction bound `bound = μ λ_n` and scale `r`
/// (module notes: eqs. 104–105 with the denominator's typo corrected).
pub fn friction_compliance(f: NcpFunction, slip: f64, force: f64, bound: f64, r: f64) -> FrictionCompliance {
    if bound <= 0.0 || bound.is_nan() {
        return FrictionCompliance::Inactive;
    }
    let (v, sigma) = (slip, bound - force);
    let rs = r * sigma;
    let w = match f {
        NcpFunction::MinMap => {
            if v <= rs {
                0.0
            } else {
                (v - rs) / bound
            }
        }
        NcpFunction::FischerBurmeister => {
            let rho = v.hypot(rs);
            // v⁺ = ρ − r σ and r |λ_f|⁺ = v + r μ λ_n − ρ, both rationalized.
            let slip_next = if rs > 0.0 { v * v / (rho + rs) } else { rho - rs };
            let force_next_r = (2.0 * v * r * bound + r * r * force * (bound + sigma)) / (v + r * bound + rho);
            if slip_next <= 0.0 {
                0.0
            } else {
                r * slip_next / force_next_r.max(f64::MIN_POSITIVE)
            }
        }
    };
    FrictionCompliance::Active(w)
}

/// The complementarity preconditioner's scale of a row (eq. 66): `h² A_ii` for a normal
/// (position-level) row, `h A_ii` for a friction (velocity-level) row, with `A_ii` the
/// row's Delassus diagonal `[J M̃⁻¹ Jᵀ]_ii` (of the raw rows). A row with a zero diagonal
/// (it moves nothing) gets the scale of an identity preconditioner, 1.
pub fn complementarity_scale(delassus_diagonal: f64, h: f64, normal: bool) -> f64 {
    let r = if normal { h * h * delassus_diagonal } else { h * delassus_diagonal };
    if r > 0.0 && r.is_finite() {
        r
    } else {
        1.0
    }
}

/// The complementarity preconditioner's per-row scales of a problem in impulse units,
/// `r_i = A_ii` (eq. 66 with the step's `h` factors absorbed by the rows), 1 where the
/// diagonal is not positive (a row that moves nothing).
pub(crate) fn delassus_scales(a: &nalgebra::DMatrix<f64>) -> Vec<f64> {
    (0..a.nrows()).map(|i| if a[(i, i)] > 0.0 && a[(i, i)].is_finite() { a[(i, i)] } else { 1.0 }).collect()
}
