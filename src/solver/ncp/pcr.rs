//! The Jacobi-preconditioned conjugate-residual method (Saad, *Iterative Methods for
//! Sparse Linear Systems*, 2003, Alg. 6.20 with a preconditioner; Macklin et al. 2019
//! §8.2) for the symmetric Schur system of a non-smooth Newton step,
//! `[J H⁻¹ Jᵀ + C] Δλ = b` (eq. 59), applied matrix-free: the Delassus part through a
//! [`DelassusOperator`], the compliance `C` as a diagonal.
//!
//! With `P = diag(A)`:
//!
//! ```text
//! r = b − A x;  z = P⁻¹ r;  p = z;  Az = A z;  Ap = Az
//! repeat:  α = (z·Az) / (Ap·P⁻¹Ap);  x += α p;  r −= α Ap;  z −= α P⁻¹Ap
//!          Az' = A z;  β = (z·Az') / (z_old·Az_old);  p = z + β p;  Ap = Az' + β Ap
//! ```
//!
//! For a symmetric positive (semi-)definite `A` each step minimizes the residual in the
//! `P⁻¹` norm, `‖r‖_{P⁻¹} = √(r·P⁻¹r)`, over the Krylov space: it never grows, and the
//! method keeps working on the near-singular systems of redundant contacts, where
//! conjugate gradients and Cholesky break down (the paper's ring of contacts under a
//! cylinder). One operator application and a few dot products per iteration.

use crate::error::{Error, Result};
use crate::math::{blocked_dot, blocked_sum};
pub use crate::math::{PcrOptions, PcrReport};
use crate::solver::DelassusOperator;

/// The Schur operator `A = J H⁻¹ Jᵀ + diag(compliance) + shift·1` of a Newton step.
pub struct SchurOperator<'a> {
    /// The Delassus part `J H⁻¹ Jᵀ`.
    pub delassus: &'a dyn DelassusOperator,
    /// The diagonal compliance `C` (the NCP rows' `E/h²`, `S/h²`, `W/h`), one per row.
    pub compliance: &'a [f64],
    /// A small identity shift that keeps singular systems solvable (the paper: 1e-6).
    pub shift: f64,
}

impl SchurOperator<'_> {
    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.delassus.rows()
    }

    /// `out = A x`.
    pub fn apply(&self, x: &[f64], out: &mut [f64]) {
        self.delassus.apply(x, out);
        for ((o, c), xi) in out.iter_mut().zip(self.compliance).zip(x) {
            *o += (c + self.shift) * xi;
        }
    }

    /// The diagonal of `A`, from the Delassus diagonal `delassus_diagonal`.
    pub fn diagonal(&self, delassus_diagonal: &[f64]) -> Vec<f64> {
        delassus_diagonal.iter().zip(self.compliance).map(|(d, c)| d + c + self.shift).collect()
    }
}

/// Solves `A x = b` by Jacobi-preconditioned conjugate residuals from the start `x`
/// (updated in place), with `diagonal` the diagonal of `A` (the Jacobi preconditioner;
/// entries ≤ 0 are treated as 1).
///
/// Errors ([`Error::Dimension`], [`Error::NonFinite`]) on mismatched lengths or a
/// non-finite right-hand side; an iteration whose step is undefined (`Ap = 0`: the
/// residual is already in the null space) stops early and reports what it reached.
pub fn pcr_solve(
    a: &SchurOperator<'_>,
    diagonal: &[f64],
    b: &[f64],
    x: &mut [f64],
    options: &PcrOptions,
) -> Result<PcrReport> {
    let n = a.rows();
    for (what, len) in [("PCR right-hand side", b.len()), ("PCR start", x.len()), ("PCR diagonal", diagonal.len())] {
        if len != n {
            return Err(Error::Dimension { what, expected: n, got: len });
        }
    }
    if a.compliance.len() != n {
        return Err(Error::Dimension { what: "Schur compliance", expected: n, got: a.compliance.len() });
    }
    if let Some((i, &v)) = b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: "PCR right-hand side", index: i, value: v });
    }
    let pinv: Vec<f64> = diagonal.iter().map(|&d| if d > 0.0 && d.is_finite() { 1.0 / d } else { 1.0 }).collect();
    // Dot products in the GPU solver's blocked order (`crate::math::blocked_sum`).
    let dot = blocked_dot;
    let mut r = vec![0.0; n];
    a.apply(x, &mut r);
    for (ri, bi) in r.iter_mut().zip(b) {
        *ri = bi - *ri;
    }
    let mut z: Vec<f64> = r.iter().zip(&pinv).map(|(r, p)| r * p).collect();
    let mut az = vec![0.0; n];
    a.apply(&z, &mut az);
    let mut p = z.clone();
    let mut ap = az.clone();
    let mut pinv_ap = vec![0.0; n];
    let b_norm = blocked_sum(n, |i| b[i] * b[i] * pinv[i]).sqrt();
    let mut zaz = dot(&z, &az);
    let mut residuals = vec![dot(&r, &z).max(0.0).sqrt()];
    let target = options.tolerance * b_norm;
    let mut iterations = 0;
    while iterations < options.max_iterations && residuals[iterations] > target {
        for ((q, a), pi) in pinv_ap.iter_mut().zip(&ap).zip(&pinv) {
            *q = a * pi;
        }
        let denom = dot(&ap, &pinv_ap);
        if denom <= 0.0 || !denom.is_finite() {
            break;
        }
        let alpha = zaz / denom;
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
            z[i] -= alpha * pinv_ap[i];
        }
        a.apply(&z, &mut az);
        let zaz_new = dot(&z, &az);
        let beta = if zaz != 0.0 { zaz_new / zaz } else { 0.0 };
        zaz = zaz_new;
        for i in 0..n {
            p[i] = z[i] + beta * p[i];
            ap[i] = az[i] + beta * ap[i];
        }
        iterations += 1;
        residuals.push(dot(&r, &z).max(0.0).sqrt());
    }
    let converged = residuals[iterations] <= target;
    Ok(PcrReport { iterations, residuals, converged })
}
