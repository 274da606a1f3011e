//! In-place dense LU factorisation with partial pivoting (Golub & Van Loan,
//! *Matrix Computations*, Alg. 3.4.1) for the small square systems of the
//! integrator, so that factorising and solving allocate nothing.

use nalgebra::DMatrix;

/// Factorises `a` in place (`P a = L U`, unit lower `L` below the diagonal, `U` on and
/// above it); `piv[k]` is the row swapped into row k. Returns false when a pivot is
/// zero or not finite (singular matrix).
pub fn lu_factor(a: &mut DMatrix<f64>, piv: &mut [usize]) -> bool {
    let n = a.nrows();
    debug_assert!(a.ncols() == n && piv.len() == n);
    for k in 0..n {
        let mut p = k;
        let mut best = a[(k, k)].abs();
        for r in k + 1..n {
            if a[(r, k)].abs() > best {
                best = a[(r, k)].abs();
                p = r;
            }
        }
        if best == 0.0 || !best.is_finite() {
            return false;
        }
        piv[k] = p;
        if p != k {
            a.swap_rows(p, k);
        }
        let d = a[(k, k)];
        for r in k + 1..n {
            a[(r, k)] /= d;
        }
        for c in k + 1..n {
            let akc = a[(k, c)];
            if akc != 0.0 {
                for r in k + 1..n {
                    a[(r, c)] -= a[(r, k)] * akc;
                }
            }
        }
    }
    true
}

/// Solves `A x = b` in place with the factors of [`lu_factor`].
pub fn lu_solve(lu: &DMatrix<f64>, piv: &[usize], b: &mut [f64]) {
    let n = lu.nrows();
    for k in 0..n {
        b.swap(k, piv[k]);
    }
    for c in 0..n {
        let bc = b[c];
        if bc != 0.0 {
            for r in c + 1..n {
                b[r] -= lu[(r, c)] * bc;
            }
        }
    }
    for c in (0..n).rev() {
        b[c] /= lu[(c, c)];
        let bc = b[c];
        for r in 0..c {
            b[r] -= lu[(r, c)] * bc;
        }
    }
}
