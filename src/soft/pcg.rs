//! Preconditioned conjugate gradients on a soft body's free-free Hessian, the
//! preconditioner a Cholesky factor kept from an earlier point ([`KeptFactor`]): the
//! linear solver of the inexact-Newton mode of a step
//! ([`super::SoftLinearSolver::KeptFactor`]) and of its adjoint.
//!
//! For `A x = b` with `A` symmetric positive definite and `P ≈ A` (Hestenes–Stiefel with a
//! preconditioner): `r₀ = b`, `z₀ = P⁻¹ r₀`, `p₀ = z₀`; then
//! `α = rᵀz / pᵀA p`, `x ← x + α p`, `r ← r − α A p`, `z = P⁻¹ r`,
//! `β = r⁺ᵀz⁺ / rᵀz`, `p ← z + β p`, until `‖r‖₂ ≤ rtol ‖b‖₂`. With `P` the factor of
//! `A` itself (rounded to single precision) it converges in one or two iterations; with
//! the factor of the Hessian at the start of the step, in a few: the error falls per
//! iteration by about `(√κ − 1)/(√κ + 1)`, `κ` the condition number of `P⁻¹A`, close
//! to 1 when the Hessian changed little. A curvature `pᵀA p ≤ 0` means `A` is not
//! positive definite: the iteration stops and says so (the Newton loop then projects
//! the element tangents; the adjoint turns to the LU factorization).

use super::sparse::{HessianPattern, KeptFactor};

/// How a conjugate-gradient solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PcgStatus {
    /// `‖r‖₂ ≤ rtol ‖b‖₂`.
    Converged,
    /// A direction of non-positive curvature: the matrix is not positive definite.
    NegativeCurvature,
    /// The iteration limit was reached first (`x` holds the last iterate).
    NotConverged,
}

/// The outcome of [`solve`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct PcgOutcome {
    /// How it ended.
    pub status: PcgStatus,
    /// Iterations (products with `A`) done.
    pub iterations: usize,
    /// `‖r‖₂ / ‖b‖₂` at the end (from the recurrence).
    pub relative_residual: f64,
}

/// Solves `A x = b` for the symmetric matrix with lower-triangular `values` on
/// `pattern`, from `x = 0`, preconditioned by `factor`; `first` is `P⁻¹ b` when the
/// caller has it already. Stops at `‖r‖₂ ≤ rtol ‖b‖₂` or after `max_iterations`.
pub(crate) fn solve(
    (pattern, values): (&HessianPattern, &[f64]),
    factor: &KeptFactor,
    b: &[f64],
    first: Option<&[f64]>,
    x: &mut [f64],
    (rtol, max_iterations): (f64, usize),
) -> PcgOutcome {
    let n = b.len();
    x.fill(0.0);
    let b_norm = norm(b);
    let mut outcome = PcgOutcome { status: PcgStatus::Converged, iterations: 0, relative_residual: 0.0 };
    if b_norm == 0.0 {
        return outcome;
    }
    let mut scratch = Vec::with_capacity(n);
    let mut r = b.to_vec();
    let mut z = vec![0.0; n];
    match first {
        Some(f) => z.copy_from_slice(f),
        None => factor.apply(&r, &mut z, &mut scratch),
    }
    let mut p = z.clone();
    let mut q = vec![0.0; n];
    let mut rz = dot(&r, &z);
    outcome.relative_residual = 1.0;
    while outcome.iterations < max_iterations {
        pattern.multiply(values, &p, &mut q);
        outcome.iterations += 1;
        let curvature = dot(&p, &q);
        let positive = curvature > 0.0 && rz > 0.0;
        if !positive {
            outcome.status = PcgStatus::NegativeCurvature;
            return outcome;
        }
        let alpha = rz / curvature;
        for k in 0..n {
            x[k] += alpha * p[k];
            r[k] -= alpha * q[k];
        }
        outcome.relative_residual = norm(&r) / b_norm;
        if outcome.relative_residual <= rtol {
            return outcome;
        }
        factor.apply(&r, &mut z, &mut scratch);
        let rz_next = dot(&r, &z);
        let beta = rz_next / rz;
        rz = rz_next;
        for k in 0..n {
            p[k] = z[k] + beta * p[k];
        }
    }
    outcome.status = PcgStatus::NotConverged;
    outcome
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}
