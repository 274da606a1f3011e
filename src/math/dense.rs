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
        let data = a.as_mut_slice();
        let (left, right) = data.split_at_mut((k + 1) * n);
        let lk = &mut left[k * n..];
        let d = lk[k];
        lk[k + 1..].iter_mut().for_each(|x| *x /= d);
        let lk = &lk[k + 1..];
        for c in 0..n - k - 1 {
            let col = &mut right[c * n..(c + 1) * n];
            let akc = col[k];
            if akc != 0.0 {
                axpy(&mut col[k + 1..], lk, akc);
            }
        }
    }
    true
}

/// Writes `A⁻¹` into `out` from the factors of [`lu_factor`] (solving for the columns
/// of the identity on contiguous column slices).
pub fn lu_inverse(lu: &DMatrix<f64>, piv: &[usize], out: &mut DMatrix<f64>) {
    let n = lu.nrows();
    out.fill(0.0);
    let a = lu.as_slice();
    for j in 0..n {
        let col = &mut out.as_mut_slice()[j * n..(j + 1) * n];
        col[j] = 1.0;
        for k in 0..n {
            col.swap(k, piv[k]);
        }
        // Unit lower solve: the first nonzero of P eⱼ is at or after row min(j, pivots).
        for c in 0..n {
            let bc = col[c];
            if bc != 0.0 {
                axpy(&mut col[c + 1..], &a[c * n + c + 1..(c + 1) * n], bc);
            }
        }
        for c in (0..n).rev() {
            col[c] /= a[c * n + c];
            let bc = col[c];
            if bc != 0.0 {
                axpy(&mut col[..c], &a[c * n..c * n + c], bc);
            }
        }
    }
}

/// `y −= a·x` on equal-length slices (vectorisable).
#[inline]
fn axpy(y: &mut [f64], x: &[f64], a: f64) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi -= xi * a;
    }
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
