//! The standardized solution of a boxed LCP for a given classification (DiffDART App. A.1, "LCP
//! stabilization", extended to boxed LCPs by App. A.2).
//!
//! With the clamping set C, the set U of rows at a non-zero bound and the zero-force sets S and T, the
//! forces of U follow the clamping ones through the map E (one entry `±μ` per friction row, in the column
//! of its normal) plus the constant bounds of box rows: `f_U = E f_C + f_U0`. Requiring `w_C = 0` gives the
//! reduced system (App. A.2)
//!
//! ```text
//! (A_CC + A_CU E) f_C = −(b_C + A_CU f_U0),     f_S = f_T = 0,
//! ```
//!
//! solved here with the minimum-norm (pseudo-inverse) solution of App. A.1 ([`crate::math::min_norm_solve`],
//! a symmetric eigendecomposition) with the relative rank tolerance [`RANK_RTOL`]. The result depends only on the classification, `A` and `b`,
//! which makes solutions of rank-deficient problems (coplanar contact manifolds) reproducible, and the
//! solve doubles as a warm-started LCP solver.
//!
//! The common case costs no eigendecomposition: when the reduced system has full rank on its range,
//! certified by a bound on its condition number ([`crate::math::full_rank_solve_factored`] through the factor
//! `A = L Lᵀ` when the clamping rows outnumber the dofs, [`crate::math::full_rank_solve`] otherwise), its
//! pseudo-inverse is an inverse on the range and a QR or Cholesky/LU solve gives the same solution up to
//! rounding. A resting box (12 clamping rows on 6 dofs) is solved through a 12 × 6 QR instead of a 12 × 12
//! eigendecomposition. Without a certificate the pseudo-inverse solves run as before.

use nalgebra::{DMatrix, DVector};

use super::problem::{residual_of_product, BoxedLcp, RowBound, RowState};
use crate::math::{full_rank_solve, full_rank_solve_factored, min_norm_solve, min_norm_solve_factored};

/// Singular values below `RANK_RTOL · σ_max` of the reduced matrix are treated as zero.
pub const RANK_RTOL: f64 = 1e-12;

/// From this many clamping rows on, a problem with a factor `A = L Lᵀ` ([`BoxedLcp::factor`]) of fewer
/// columns than clamping rows, and no certificate of full rank, solves its reduced system through the
/// factored pseudo-inverse ([`crate::math::min_norm_solve_factored`], `O(k d²)`) instead of decomposing the `k × k` matrix
/// (`O(k³)`). Below it the dense decomposition costs microseconds.
pub const FACTORED_MIN_ROWS: usize = 32;

/// App. A.1 standardized solution for a given classification: solve the reduced system
/// (A_CC + A_CU E) f_C = -(b_C + A_CU f_U0) with the minimum-norm (pseudo-inverse, with a relative rank
/// tolerance) solution, f_U = E f_C (+ the constant bounds of Box rows at a nonzero bound), f_S = f_T = 0.
/// Returns None if the result violates the classification (a clamping friction row outside its box, a
/// clamping normal with f < 0, a separating row with w on the wrong side, beyond tolerance).
///
/// The test is [`residual`](super::residual)`(problem, f, w) ≤ tolerance` (relative), which covers every LCP condition.
/// Also `None` for an invalid problem, a state vector of the wrong length, an `AtBound` sign other than
/// `±1`, a box row marked at an infinite bound, or a failed eigendecomposition. A friction row marked `AtBound` whose
/// normal is not clamping gets `f = 0` (its bounds are zero).
pub fn standardize(problem: &BoxedLcp, states: &[RowState], tolerance: f64) -> Option<(DVector<f64>, DVector<f64>)> {
    problem.validate().ok()?;
    standardize_unchecked(problem, states, tolerance)
}

/// [`standardize`] on a problem already validated.
fn standardize_unchecked(
    problem: &BoxedLcp,
    states: &[RowState],
    tolerance: f64,
) -> Option<(DVector<f64>, DVector<f64>)> {
    let (f, w) = standardized_forces(problem, states)?;
    if residual_of_product(problem, &f, &w) <= tolerance {
        Some((f, w))
    } else {
        None
    }
}

/// The forces of the reduced-system solve and `w = A f + b`, not yet checked against the LCP conditions
/// (`None` only for malformed states or a failed eigendecomposition).
pub(crate) fn standardized_forces(problem: &BoxedLcp, states: &[RowState]) -> Option<(DVector<f64>, DVector<f64>)> {
    let m = problem.b.len();
    if states.len() != m {
        return None;
    }
    let a = &problem.a;
    let clamped: Vec<usize> = (0..m).filter(|&i| states[i] == RowState::Clamping).collect();
    let mut position = vec![usize::MAX; m];
    for (p, &i) in clamped.iter().enumerate() {
        position[i] = p;
    }
    let mut f = DVector::<f64>::zeros(m);
    // The E map: (row u, column p in C, coefficient).
    let mut e_map: Vec<(usize, usize, f64)> = Vec::new();
    for i in 0..m {
        let RowState::AtBound { sign } = states[i] else { continue };
        if sign != 1 && sign != -1 {
            return None;
        }
        let s = f64::from(sign);
        match problem.bounds[i] {
            RowBound::Box { lo, hi } => {
                let v = if sign < 0 { lo } else { hi };
                if !v.is_finite() {
                    return None;
                }
                f[i] = v;
            }
            RowBound::Friction { normal, mu } => {
                if position[normal] != usize::MAX {
                    e_map.push((i, position[normal], s * mu));
                }
            }
        }
    }
    let k = clamped.len();
    if k > 0 {
        let dense = || dense_system(problem, &clamped, &e_map, &f);
        let fc = match problem.factor.as_ref().filter(|l| l.ncols() < k) {
            Some(l) => {
                let (lc, n, rhs) = factored_system(problem, l, &clamped, &e_map, &f);
                match full_rank_solve_factored(&lc, n.as_ref(), &rhs) {
                    Some(fc) => fc,
                    None if k >= FACTORED_MIN_ROWS => min_norm_solve_factored(&lc, n.as_ref(), &rhs, RANK_RTOL)?,
                    None => {
                        let (kmat, rhs) = dense();
                        min_norm_solve(&kmat, &rhs, RANK_RTOL)?
                    }
                }
            }
            None => {
                let (kmat, rhs) = dense();
                match full_rank_solve(&kmat, &rhs, e_map.is_empty()) {
                    Some(fc) => fc,
                    None => min_norm_solve(&kmat, &rhs, RANK_RTOL)?,
                }
            }
        };
        for (p, &i) in clamped.iter().enumerate() {
            f[i] = fc[p];
        }
        for &(u, p, coef) in &e_map {
            f[u] = coef * fc[p];
        }
    }
    let w = a * &f + &problem.b;
    if f.iter().chain(w.iter()).any(|v| !v.is_finite()) {
        return None;
    }
    Some((f, w))
}

/// The reduced system `(A_CC + A_CU E) f_C = −(b_C + A f₀)` (`f₀`: the constant bounds of box rows at a
/// nonzero bound), formed densely: its matrix and right-hand side.
fn dense_system(
    problem: &BoxedLcp,
    clamped: &[usize],
    e_map: &[(usize, usize, f64)],
    f0: &DVector<f64>,
) -> (DMatrix<f64>, DVector<f64>) {
    let (a, m, k) = (&problem.a, problem.b.len(), clamped.len());
    let mut kmat = DMatrix::<f64>::zeros(k, k);
    let mut rhs = DVector::<f64>::zeros(k);
    for (r, &i) in clamped.iter().enumerate() {
        for (c, &j) in clamped.iter().enumerate() {
            kmat[(r, c)] = a[(i, j)];
        }
        for &(u, p, coef) in e_map {
            kmat[(r, p)] += a[(i, u)] * coef;
        }
        let mut v = problem.b[i];
        for j in 0..m {
            if f0[j] != 0.0 {
                v += a[(i, j)] * f0[j];
            }
        }
        rhs[r] = -v;
    }
    (kmat, rhs)
}

/// [`dense_system`] through the factor `A = L Lᵀ`: the reduced matrix is `A_CC + A_CU E = L_C Nᵀ` with
/// `N = L_C + Eᵀ L_U` (`k × d`; `None` when E is empty and `N = L_C`), returned unformed as `(L_C, N)`
/// with the right-hand side.
fn factored_system(
    problem: &BoxedLcp,
    l: &DMatrix<f64>,
    clamped: &[usize],
    e_map: &[(usize, usize, f64)],
    f0: &DVector<f64>,
) -> (DMatrix<f64>, Option<DMatrix<f64>>, DVector<f64>) {
    let lc = l.select_rows(clamped.iter());
    let n = (!e_map.is_empty()).then(|| {
        let mut n = lc.clone();
        for &(u, p, coef) in e_map {
            for c in 0..l.ncols() {
                n[(p, c)] += coef * l[(u, c)];
            }
        }
        n
    });
    let lf = l.tr_mul(f0); // Lᵀ f₀ (d)
    let rhs = DVector::from_iterator(
        clamped.len(),
        clamped.iter().map(|&i| -(problem.b[i] + l.row(i).iter().zip(lf.iter()).map(|(a, b)| a * b).sum::<f64>())),
    );
    (lc, n, rhs)
}
