//! Projection of a symmetric tangent onto the positive semi-definite cone, for Newton
//! directions of the implicit step away from the minimum: `T = Q Λ Qᵀ ↦ Q max(Λ, 0) Qᵀ`,
//! the nearest PSD matrix in the Frobenius norm.
//!
//! The common case is cheap: a Cholesky factorization is tried first and a positive
//! definite matrix is returned untouched. Only otherwise is the symmetric
//! eigen-decomposition computed. Singular PSD tangents (the rotation null space of a
//! rotation-invariant model at rest) fail the Cholesky test; their round-off eigenvalues
//! (`≈ −ε ‖T‖`) are clamped like any negative one, which moves the matrix by `O(ε ‖T‖)`.

use super::Mat9;
use nalgebra::Cholesky;

/// Iteration cap of the symmetric eigen-solver (non-convergence leaves the input as is).
const EIGEN_MAX_ITERATIONS: usize = 1000;

/// Projects a symmetric tangent onto the PSD cone in place (negative eigenvalues
/// clamped to zero; only the lower triangle is read, the result is exactly symmetric).
/// Returns whether anything changed: `false` for a positive definite input (by
/// Cholesky), for one whose eigenvalues are all non-negative, and for non-finite input
/// or a non-converging eigen-solve (both left as they are).
pub fn project_psd(t: &mut Mat9) -> bool {
    if !t.iter().all(|x| x.is_finite()) || Cholesky::new(*t).is_some() {
        return false;
    }
    let Some(eigen) = t.try_symmetric_eigen(f64::EPSILON, EIGEN_MAX_ITERATIONS) else {
        return false;
    };
    if eigen.eigenvalues.iter().all(|&l| l >= 0.0) {
        return false;
    }
    let q = eigen.eigenvectors;
    let clamped = eigen.eigenvalues.map(|l| l.max(0.0));
    let p = q * Mat9::from_diagonal(&clamped) * q.transpose();
    *t = (p + p.transpose()) * 0.5;
    true
}
