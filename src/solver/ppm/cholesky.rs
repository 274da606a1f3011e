//! Small dense Cholesky factors for the PPM solver: a plain factorization with a relative pivot floor
//! ([`cholesky`], used for `M̃` and for the viscous effective mass), and a factor grown and shrunk one
//! row/column at a time ([`GrowingCholesky`], used by FIND-INDICES for `S = E M̃⁻¹ Eᵀ + R_E` and by the
//! pivoting for the non-basic block `F_BB`): appending costs O(s²), deleting a row/column O(s²) Givens
//! rotations, so no pivot refactors from scratch.

use nalgebra::DMatrix;

/// Lower-triangular Cholesky factor `L` with `L Lᵀ = A` of a symmetric matrix (only its lower triangle is
/// read), or `None` when a pivot is not positive or is below `floor` times the matrix's largest diagonal
/// entry (numerically singular). A `0 × 0` matrix gives a `0 × 0` factor.
pub(crate) fn cholesky(a: &DMatrix<f64>, floor: f64) -> Option<DMatrix<f64>> {
    let n = a.nrows();
    if a.ncols() != n {
        return None;
    }
    let dmax = (0..n).fold(0.0f64, |m, i| m.max(a[(i, i)]));
    let mut l = DMatrix::<f64>::zeros(n, n);
    for j in 0..n {
        let mut d = a[(j, j)];
        for k in 0..j {
            d -= l[(j, k)] * l[(j, k)];
        }
        if !d.is_finite() || d <= 0.0 || d <= floor * dmax {
            return None;
        }
        let djj = d.sqrt();
        l[(j, j)] = djj;
        for i in j + 1..n {
            let mut v = a[(i, j)];
            for k in 0..j {
                v -= l[(i, k)] * l[(j, k)];
            }
            l[(i, j)] = v / djj;
        }
    }
    Some(l)
}

/// A Cholesky factor `L Lᵀ = A` of a symmetric positive definite matrix built one row/column at a time, at
/// most `cap` of them (row-major storage, `cap × cap`).
#[derive(Clone, Debug)]
pub(crate) struct GrowingCholesky {
    cap: usize,
    len: usize,
    l: Vec<f64>,
}

impl GrowingCholesky {
    /// An empty factor with room for `cap` rows.
    pub fn new(cap: usize) -> Self {
        GrowingCholesky { cap, len: 0, l: vec![0.0; cap * cap] }
    }

    /// The current size `s`.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether another row fits.
    pub fn has_room(&self) -> bool {
        self.len < self.cap
    }

    /// Entry `(i, j)`, `j ≤ i < len`.
    #[cfg(test)]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.l[i * self.cap + j]
    }

    /// Solves `L y = rhs` in place (the first `len` entries of `y`).
    pub fn forward(&self, y: &mut [f64]) {
        for i in 0..self.len {
            let row = &self.l[i * self.cap..i * self.cap + i];
            let mut v = y[i];
            for (lij, yj) in row.iter().zip(y.iter()) {
                v -= lij * yj;
            }
            y[i] = v / self.l[i * self.cap + i];
        }
    }

    /// Solves `Lᵀ x = rhs` in place.
    pub fn backward(&self, x: &mut [f64]) {
        for i in (0..self.len).rev() {
            let v = x[i] / self.l[i * self.cap + i];
            x[i] = v;
            for j in 0..i {
                x[j] -= self.l[i * self.cap + j] * v;
            }
        }
    }

    /// Solves `A x = rhs` in place.
    pub fn solve(&self, x: &mut [f64]) {
        self.forward(x);
        self.backward(x);
    }

    /// Appends the row `[lᵀ, √pivot]`: `l = L⁻¹ a` for the new column `a` of `A`, `pivot` the Schur
    /// complement `A_new,new − |l|² > 0`. The caller checks room and the pivot.
    pub fn append(&mut self, l: &[f64], pivot: f64) {
        debug_assert!(self.len < self.cap && pivot > 0.0);
        let i = self.len;
        self.l[i * self.cap..i * self.cap + i].copy_from_slice(&l[..i]);
        self.l[i * self.cap + i] = pivot.sqrt();
        self.len += 1;
    }

    /// Removes row/column `p` of `A`: row `p` of `L` is dropped, and the super-diagonal it leaves on rows
    /// `p..` is rotated away with Givens rotations on column pairs (an orthogonal transformation from the
    /// right keeps `L Lᵀ`), O((s − p) s).
    pub fn remove(&mut self, p: usize) {
        let (cap, s) = (self.cap, self.len);
        debug_assert!(p < s);
        // Shift rows p+1.. up by one (each keeps its s entries, one past its new diagonal).
        for i in p + 1..s {
            for j in 0..=i {
                self.l[(i - 1) * cap + j] = self.l[i * cap + j];
            }
        }
        for j in 0..s {
            self.l[(s - 1) * cap + j] = 0.0;
        }
        let s = s - 1;
        // Row k (k ≥ p) now has the entry (k, k+1); zero it by rotating columns k and k+1.
        for k in p..s {
            let a = self.l[k * cap + k];
            let b = self.l[k * cap + k + 1];
            let r = a.hypot(b);
            let (c, sn) = if r == 0.0 { (1.0, 0.0) } else { (a / r, b / r) };
            for i in k..s {
                let x = self.l[i * cap + k];
                let y = self.l[i * cap + k + 1];
                self.l[i * cap + k] = c * x + sn * y;
                self.l[i * cap + k + 1] = -sn * x + c * y;
            }
            // The rotated-away entry is zero up to rounding; store it exactly. The new diagonal is r ≥ 0.
            self.l[k * cap + k + 1] = 0.0;
        }
        self.len = s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spd(n: usize, seed: u64) -> DMatrix<f64> {
        let mut rng = crate::math::SplitMix64::new(seed);
        let b = DMatrix::from_fn(n, n, |_, _| rng.normal());
        &b * b.transpose() + DMatrix::identity(n, n)
    }

    fn grown(a: &DMatrix<f64>) -> GrowingCholesky {
        let n = a.nrows();
        let mut g = GrowingCholesky::new(n);
        for i in 0..n {
            let mut l: Vec<f64> = (0..i).map(|j| a[(j, i)]).collect();
            g.forward(&mut l);
            let pivot = a[(i, i)] - l.iter().map(|v| v * v).sum::<f64>();
            g.append(&l, pivot);
        }
        g
    }

    fn product(g: &GrowingCholesky) -> DMatrix<f64> {
        let s = g.len();
        let l = DMatrix::from_fn(s, s, |i, j| if j <= i { g.at(i, j) } else { 0.0 });
        &l * l.transpose()
    }

    #[test]
    fn grown_factor_matches_and_removal_keeps_the_product() {
        let a = spd(7, 3);
        let g = grown(&a);
        assert!((product(&g) - &a).amax() < 1e-10);
        let l = cholesky(&a, 1e-14).unwrap();
        assert!((&l * l.transpose() - &a).amax() < 1e-10);
        for p in 0..7 {
            let mut h = g.clone();
            h.remove(p);
            let keep: Vec<usize> = (0..7).filter(|&i| i != p).collect();
            let sub = DMatrix::from_fn(6, 6, |r, c| a[(keep[r], keep[c])]);
            assert!((product(&h) - &sub).amax() < 1e-10, "removing {p}");
            for i in 0..6 {
                assert!(h.at(i, i) > 0.0);
            }
            let mut x: Vec<f64> = (0..6).map(|i| i as f64 - 2.0).collect();
            let rhs = DMatrix::from_column_slice(6, 1, &x);
            h.solve(&mut x);
            let back = &sub * DMatrix::from_column_slice(6, 1, &x);
            assert!((back - rhs).amax() < 1e-9);
        }
    }

    #[test]
    fn singular_and_indefinite_matrices_are_rejected() {
        let mut a = DMatrix::identity(3, 3);
        a[(2, 2)] = 0.0;
        assert!(cholesky(&a, 1e-14).is_none());
        a[(2, 2)] = -1.0;
        assert!(cholesky(&a, 1e-14).is_none());
        a[(2, 2)] = f64::NAN;
        assert!(cholesky(&a, 1e-14).is_none());
        assert_eq!(cholesky(&DMatrix::zeros(0, 0), 1e-14).unwrap().nrows(), 0);
    }
}
