//! In-place dense LU factorisation with partial pivoting (Golub & Van Loan,
//! *Matrix Computations*, Alg. 3.4.1) for the small square systems of the
//! integrator and its derivatives, with solves (`A x = b`, `Aᵀ x = b`) and a
//! blocked inverse, so that factorising, solving and inverting allocate nothing.
//!
//! On x86-64 CPUs with AVX2, [`lu_factor`] and [`lu_solve_and_invert`] run a build of
//! their loops with 256-bit vectors (chosen at run time; the crate itself targets the
//! baseline x86-64). AVX2 does not bring FMA contraction, and the loops keep their
//! order of operations, so both builds give the same bits (tested).

use nalgebra::{DMatrix, DMatrixView};

/// Factorises `a` in place (`P a = L U`, unit lower `L` below the diagonal, `U` on and
/// above it); `piv[k]` is the row swapped into row k. Returns false when a pivot is
/// zero or not finite (singular matrix).
pub fn lu_factor(a: &mut DMatrix<f64>, piv: &mut [usize]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(a: &mut DMatrix<f64>, piv: &mut [usize]) -> bool {
            lu_factor_body(a, piv)
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { avx2(a, piv) };
    }
    lu_factor_body(a, piv)
}

/// [`lu_factor`] itself, inlined into the baseline and the AVX2 builds.
#[inline(always)]
fn lu_factor_body(a: &mut DMatrix<f64>, piv: &mut [usize]) -> bool {
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
    back_substitute_transposed(lu, out);
    // A⁻¹ = X P with P = P_{n−1} ⋯ P_0: swap columns, last pivot first.
    out.transpose_mut();
    for k in (0..n).rev() {
        if piv[k] != k {
            out.swap_columns(k, piv[k]);
        }
    }
}

/// Solves `A X = B` for many right-hand sides with the factors of [`lu_factor`] and
/// forms `s·A⁻¹` alongside, on one blocked pass (see [`lu_inverse`] for the blocking).
///
/// `z` has `mg + n` rows and n columns; its first `mg` rows hold `Bᵀ` (one row per
/// right-hand side) and are overwritten with `Xᵀ`; its last n rows are scratch (they
/// end as `(U⁻¹ L⁻¹)ᵀ`). `inv` (n × n) receives `s·A⁻¹ = s·U⁻¹ L⁻¹ P`. The identity
/// right-hand sides are not permuted (P is applied to the inverse's columns at the
/// end), so their forward substitution skips the structural zeros of `L⁻¹`.
/// Allocates nothing.
pub fn lu_solve_and_invert(
    lu: &DMatrix<f64>,
    piv: &[usize],
    z: &mut DMatrix<f64>,
    mg: usize,
    inv: &mut DMatrix<f64>,
    s: f64,
) {
    if lu.nrows() == 0 {
        return; // n = 0 (a model without degrees of freedom): X and A⁻¹ are empty
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(
            lu: &DMatrix<f64>,
            piv: &[usize],
            z: &mut DMatrix<f64>,
            mg: usize,
            inv: &mut DMatrix<f64>,
            s: f64,
        ) {
            solve_and_invert_body(lu, piv, z, mg, inv, s)
        }
        // SAFETY: the CPU supports AVX2, checked just above.
        return unsafe { avx2(lu, piv, z, mg, inv, s) };
    }
    solve_and_invert_body(lu, piv, z, mg, inv, s)
}

/// [`lu_solve_and_invert`] itself, inlined into the baseline and the AVX2 builds.
#[inline(always)]
fn solve_and_invert_body(
    lu: &DMatrix<f64>,
    piv: &[usize],
    z: &mut DMatrix<f64>,
    mg: usize,
    inv: &mut DMatrix<f64>,
    s: f64,
) {
    let n = lu.nrows();
    let m = z.nrows();
    debug_assert!(lu.ncols() == n && z.ncols() == n && m == mg + n && piv.len() == n);
    debug_assert!(inv.nrows() == n && inv.ncols() == n);
    {
        let zs = z.as_mut_slice();
        for k in 0..n {
            if piv[k] != k {
                let (a, b) = zs.split_at_mut(piv[k] * m);
                a[k * m..k * m + mg].swap_with_slice(&mut b[..mg]);
            }
        }
        for (k, col) in zs.chunks_exact_mut(m).enumerate() {
            col[mg..].fill(0.0);
            col[mg + k] = 1.0;
        }
    }
    let a = lu.as_slice();
    // Forward, unit lower L: Z[:, I] −= Z[:, <I] L[I, <I]ᵀ, then the diagonal block. The
    // identity's rows mg + c are zero in the columns before c, so rows past mg + end(I)
    // are left out.
    let mut i0 = 0;
    while i0 < n {
        let i1 = (i0 + BLOCK).min(n);
        let rows = mg + i1;
        if i0 > 0 {
            let (left, mut blk) = z.columns_range_pair_mut(0..i0, i0..i1);
            let l_t = DMatrixView::from_slice_with_strides(&a[i0..], i0, i1 - i0, n, 1);
            blk.rows_mut(0, mg + i0).gemm(-1.0, &left.rows(0, mg + i0), &l_t, 1.0);
        }
        let zs = z.as_mut_slice();
        if i1 - i0 == BLOCK {
            let l: [[f64; BLOCK]; BLOCK] = std::array::from_fn(|r| std::array::from_fn(|c| a[(i0 + c) * n + i0 + r]));
            lower_panel(&mut zs[i0 * m..i1 * m], m, rows, &l);
        } else {
            for c in i0..i1 {
                let (head, tail) = zs.split_at_mut((c + 1) * m);
                let zcol = &head[c * m..c * m + rows];
                for r in c + 1..i1 {
                    let l = a[c * n + r];
                    if l != 0.0 {
                        axpy(&mut tail[(r - c - 1) * m..(r - c - 1) * m + rows], zcol, l);
                    }
                }
            }
        }
        i0 = i1;
    }
    back_substitute_transposed(lu, z);
    // s·A⁻¹ = s·(U⁻¹ L⁻¹) P: column j of the product is column perm[j] of U⁻¹ L⁻¹.
    let zs = z.as_slice();
    let out = inv.as_mut_slice();
    for (j, col) in out.chunks_exact_mut(n).enumerate() {
        let src = permuted(piv, j);
        for (r, x) in col.iter_mut().enumerate() {
            *x = zs[r * m + mg + src] * s;
        }
    }
}

/// The column of `U⁻¹ L⁻¹` that becomes column `j` of `A⁻¹ = U⁻¹ L⁻¹ P`
/// (`P = P_{n−1} ⋯ P_0`, so `P e_j` follows the interchanges from the first).
#[inline]
fn permuted(piv: &[usize], j: usize) -> usize {
    let mut x = j;
    for (k, &p) in piv.iter().enumerate() {
        if x == k {
            x = p;
        } else if x == p {
            x = k;
        }
    }
    x
}

/// The back substitution `U X = Y` on `Z = Yᵀ` (m × n), in place (`Z = Xᵀ` on return).
#[inline(always)]
fn back_substitute_transposed(lu: &DMatrix<f64>, out: &mut DMatrix<f64>) {
    let n = lu.nrows();
    let m = out.nrows();
    let a = lu.as_slice();
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
        if i1 - i0 == BLOCK {
            let u: [[f64; BLOCK]; BLOCK] = std::array::from_fn(|r| std::array::from_fn(|c| a[(i0 + c) * n + i0 + r]));
            let dinv: [f64; BLOCK] = std::array::from_fn(|k| 1.0 / u[k][k]);
            upper_panel(&mut z[i0 * m..i1 * m], m, &u, &dinv);
        } else {
            for s in (i0..i1).rev() {
                let d = 1.0 / a[s * n + s];
                let (head, tail) = z.split_at_mut(s * m);
                let zs = &mut tail[..m];
                zs.iter_mut().for_each(|x| *x *= d);
                for r in i0..s {
                    let u = a[s * n + r];
                    if u != 0.0 {
                        axpy(&mut head[r * m..(r + 1) * m], zs, u);
                    }
                }
            }
        }
        i1 = i0;
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

/// Entries per register tile of the panel kernels.
const TILE: usize = 4;

/// The diagonal-block step of the forward substitution on [`BLOCK`] columns of
/// `Z` (`zb`, column stride m, first `rows` entries): `z_r −= l[r][s] z_s` for s < r,
/// a tile of every column at a time so that the block stays in registers (the same
/// operations per entry as column axpys).
#[inline(always)]
fn lower_panel(zb: &mut [f64], m: usize, rows: usize, l: &[[f64; BLOCK]; BLOCK]) {
    assert!(rows <= m && zb.len() >= (BLOCK - 1) * m + rows);
    let mut e0 = 0;
    while e0 + TILE <= rows {
        let mut x = [[0.0f64; TILE]; BLOCK];
        for (i, xi) in x.iter_mut().enumerate() {
            xi.copy_from_slice(&zb[i * m + e0..i * m + e0 + TILE]);
        }
        for s in 0..BLOCK {
            let xs = x[s];
            for r in s + 1..BLOCK {
                let c = l[r][s];
                for (y, v) in x[r].iter_mut().zip(xs) {
                    *y -= v * c;
                }
            }
        }
        for (i, xi) in x.iter().enumerate() {
            zb[i * m + e0..i * m + e0 + TILE].copy_from_slice(xi);
        }
        e0 += TILE;
    }
    for e in e0..rows {
        let mut x: [f64; BLOCK] = std::array::from_fn(|i| zb[i * m + e]);
        for s in 0..BLOCK {
            let xs = x[s];
            for r in s + 1..BLOCK {
                x[r] -= xs * l[r][s];
            }
        }
        for (i, xi) in x.iter().enumerate() {
            zb[i * m + e] = *xi;
        }
    }
}

/// The diagonal-block step of the back substitution on [`BLOCK`] columns of `Z`
/// (`zb`, column stride m): for s from the last, `z_s *= dinv[s]`, then
/// `z_r −= u[r][s] z_s` for r < s; tiled as [`lower_panel`].
#[inline(always)]
fn upper_panel(zb: &mut [f64], m: usize, u: &[[f64; BLOCK]; BLOCK], dinv: &[f64; BLOCK]) {
    assert!(zb.len() >= BLOCK * m);
    let mut e0 = 0;
    while e0 + TILE <= m {
        let mut x = [[0.0f64; TILE]; BLOCK];
        for (i, xi) in x.iter_mut().enumerate() {
            xi.copy_from_slice(&zb[i * m + e0..i * m + e0 + TILE]);
        }
        for s in (0..BLOCK).rev() {
            x[s].iter_mut().for_each(|v| *v *= dinv[s]);
            let xs = x[s];
            for r in 0..s {
                let c = u[r][s];
                for (y, v) in x[r].iter_mut().zip(xs) {
                    *y -= v * c;
                }
            }
        }
        for (i, xi) in x.iter().enumerate() {
            zb[i * m + e0..i * m + e0 + TILE].copy_from_slice(xi);
        }
        e0 += TILE;
    }
    for e in e0..m {
        let mut x: [f64; BLOCK] = std::array::from_fn(|i| zb[i * m + e]);
        for s in (0..BLOCK).rev() {
            x[s] *= dinv[s];
            let xs = x[s];
            for r in 0..s {
                x[r] -= xs * u[r][s];
            }
        }
        for (i, xi) in x.iter().enumerate() {
            zb[i * m + e] = *xi;
        }
    }
}

/// `y −= a·x` on equal-length slices (vectorisable).
#[inline(always)]
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

/// Gives `m` the shape `rows × cols`, zero-filled, reusing its storage: no allocation
/// when its buffer already holds `rows · cols` entries (a shrink keeps the capacity), so
/// workspaces sized for the largest problem seen serve every smaller one.
pub fn reshape(m: &mut DMatrix<f64>, rows: usize, cols: usize) {
    if m.shape() == (rows, cols) {
        m.fill(0.0);
        return;
    }
    let mut buf: Vec<f64> = std::mem::replace(m, DMatrix::zeros(0, 0)).data.into();
    buf.clear();
    buf.resize(rows * cols, 0.0);
    *m = DMatrix::from_vec(rows, cols, buf);
}

/// [`reshape`] for a matrix the caller overwrites entirely: its entries are left as
/// they are (zero only where the storage grew) when the shape already matches.
pub fn reshape_for_overwrite(m: &mut DMatrix<f64>, rows: usize, cols: usize) {
    if m.shape() != (rows, cols) {
        reshape(m, rows, cols);
    }
}

/// [`reshape`] for a column vector.
pub fn reshape_vector(v: &mut nalgebra::DVector<f64>, len: usize) {
    if v.len() == len {
        v.fill(0.0);
        return;
    }
    let mut buf: Vec<f64> = std::mem::replace(v, nalgebra::DVector::zeros(0)).data.into();
    buf.clear();
    buf.resize(len, 0.0);
    *v = nalgebra::DVector::from_vec(buf);
}

/// `out = a b` by plain loops (column by column, `out[:, j] = Σ_k a[:, k] b[k, j]`), for
/// the small products of the backward pass: nalgebra's `mul_to` hands dynamic products
/// to a packed kernel that allocates its packing buffers on every call. `out` must have
/// the product's shape.
pub fn mul_into(a: &DMatrix<f64>, b: &DMatrix<f64>, out: &mut DMatrix<f64>) {
    let (m, n) = (a.nrows(), b.ncols());
    assert_eq!(a.ncols(), b.nrows(), "mul_into: inner dimensions differ");
    assert_eq!(out.shape(), (m, n), "mul_into: output shape");
    out.fill(0.0);
    for j in 0..n {
        for k in 0..a.ncols() {
            let bkj = b[(k, j)];
            if bkj == 0.0 {
                continue;
            }
            let acol = &a.as_slice()[k * m..(k + 1) * m];
            for (o, x) in out.as_mut_slice()[j * m..(j + 1) * m].iter_mut().zip(acol) {
                *o += x * bkj;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    /// The AVX2 builds of the kernels (taken on CPUs that have it) and the baseline
    /// builds give the same bits.
    #[test]
    fn dispatched_and_baseline_kernels_agree_bitwise() {
        let mut rng = SplitMix64::new(7);
        for n in [3usize, 8, 13, 30, 50] {
            let a = DMatrix::from_fn(n, n, |_, _| rng.range(-1.0, 1.0));
            let (mut lu1, mut lu2) = (a.clone(), a.clone());
            let (mut p1, mut p2) = (vec![0; n], vec![0; n]);
            assert!(lu_factor(&mut lu1, &mut p1));
            assert!(lu_factor_body(&mut lu2, &mut p2));
            assert_eq!((&lu1, &p1), (&lu2, &p2));
            let mg = 2 * n + 1;
            let z0 = DMatrix::from_fn(mg + n, n, |_, _| rng.range(-1.0, 1.0));
            let (mut z1, mut z2) = (z0.clone(), z0);
            let (mut i1, mut i2) = (DMatrix::zeros(n, n), DMatrix::zeros(n, n));
            lu_solve_and_invert(&lu1, &p1, &mut z1, mg, &mut i1, 0.5);
            solve_and_invert_body(&lu1, &p1, &mut z2, mg, &mut i2, 0.5);
            assert_eq!((&z1, &i1), (&z2, &i2));
        }
    }
}
