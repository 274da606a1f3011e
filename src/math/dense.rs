//! In-place dense LU factorisation with partial pivoting (Golub & Van Loan,
//! *Matrix Computations*, Alg. 3.4.1) for the small square systems of the
//! integrator and its derivatives, with solves (`A x = b`, `Aᵀ x = b`) and a
//! blocked inverse, so that factorising, solving and inverting allocate nothing.

use nalgebra::{DMatrix, DMatrixView};

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

/// Row-block size of the blocked triangular solves in [`lu_inverse`]: the work
/// between diagonal blocks is done by matrix products (nalgebra's `gemm`, which
/// dispatches to the `matrixmultiply` kernels for the CPU at hand).
const BLOCK: usize = 8;

/// Writes `A⁻¹` into `out` from the factors of [`lu_factor`]: `A⁻¹ = U⁻¹ L⁻¹ P`, by a
/// blocked forward substitution `L Y = I`, a blocked back substitution `U X = Y` and
/// the column interchanges of `P`. The work runs on `Z = Xᵀ` (so that a row operation
/// of the substitutions is an axpy on a contiguous column); between diagonal blocks it
/// is a matrix product (nalgebra's `gemm`, which dispatches to `matrixmultiply`'s
/// kernels for the CPU at hand). Allocates nothing.
pub fn lu_inverse(lu: &DMatrix<f64>, piv: &[usize], out: &mut DMatrix<f64>) {
    let n = lu.nrows();
    debug_assert!(lu.ncols() == n && out.nrows() == n && out.ncols() == n && piv.len() == n);
    out.as_mut_slice().fill(0.0);
    let a = lu.as_slice();
    // Forward, Z = Yᵀ (unit upper): Z[:, I] = e_I − Z[:, <I] L[I, <I]ᵀ, then the diagonal block.
    let mut i0 = 0;
    while i0 < n {
        let i1 = (i0 + BLOCK).min(n);
        for r in i0..i1 {
            out[(r, r)] = 1.0;
        }
        if i0 > 0 {
            let (left, mut blk) = out.columns_range_pair_mut(0..i0, i0..i1);
            let l_t = DMatrixView::from_slice_with_strides(&a[i0..], i0, i1 - i0, n, 1);
            blk.rows_mut(0, i0).gemm(-1.0, &left.rows(0, i0), &l_t, 1.0);
        }
        let z = out.as_mut_slice();
        for s in i0..i1 {
            let (head, tail) = z.split_at_mut((s + 1) * n);
            let zs = &head[s * n..s * n + i1];
            for r in s + 1..i1 {
                let l = a[s * n + r];
                if l != 0.0 {
                    axpy(&mut tail[(r - s - 1) * n..(r - s - 1) * n + i1], zs, l);
                }
            }
        }
        i0 = i1;
    }
    // Backward, Z = Xᵀ: Z[:, I] −= Z[:, >I] U[I, >I]ᵀ, then the diagonal block.
    let mut i1 = n;
    while i1 > 0 {
        let i0 = i1.saturating_sub(BLOCK);
        if i1 < n {
            let (mut blk, right) = out.columns_range_pair_mut(i0..i1, i1..n);
            let u_t = DMatrixView::from_slice_with_strides(&a[i0 + i1 * n..], n - i1, i1 - i0, n, 1);
            blk.gemm(-1.0, &right, &u_t, 1.0);
        }
        let z = out.as_mut_slice();
        for s in (i0..i1).rev() {
            let d = a[s * n + s];
            let (head, tail) = z.split_at_mut(s * n);
            let zs = &mut tail[..n];
            zs.iter_mut().for_each(|x| *x /= d);
            for r in i0..s {
                let u = a[s * n + r];
                if u != 0.0 {
                    axpy(&mut head[r * n..(r + 1) * n], zs, u);
                }
            }
        }
        i1 = i0;
    }
    // A⁻¹ = X P with P = P_{n−1} ⋯ P_0: swap columns, last pivot first.
    out.transpose_mut();
    for k in (0..n).rev() {
        if piv[k] != k {
            out.swap_columns(k, piv[k]);
        }
    }
}

/// Solves `Aᵀ x = b` in place with the factors of [`lu_factor`]
/// (`Aᵀ = Uᵀ Lᵀ P`: forward with `Uᵀ`, back with `Lᵀ`, then the interchanges).
pub fn lu_solve_transpose(lu: &DMatrix<f64>, piv: &[usize], b: &mut [f64]) {
    let n = lu.nrows();
    let a = lu.as_slice();
    for i in 0..n {
        let col = &a[i * n..(i + 1) * n];
        b[i] = (b[i] - dot(&col[..i], &b[..i])) / col[i];
    }
    for i in (0..n).rev() {
        let col = &a[i * n..(i + 1) * n];
        b[i] -= dot(&col[i + 1..], &b[i + 1..]);
    }
    for k in (0..n).rev() {
        b.swap(k, piv[k]);
    }
}

/// `Σ xᵢ yᵢ` over equal-length slices.
#[inline]
fn dot(x: &[f64], y: &[f64]) -> f64 {
    x.iter().zip(y).map(|(a, b)| a * b).sum()
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
