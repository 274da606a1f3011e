//! The eigendecomposition of a symmetric matrix in caller-owned storage: Householder
//! reduction to tridiagonal form, then the implicit-shift QL iteration on the
//! tridiagonal matrix with the rotations accumulated into the eigenvectors (Golub &
//! Van Loan, *Matrix Computations*, 4th ed., §8.3.1 and Alg. 8.3.3; the QL variant
//! chases the bulge from the bottom, which suits matrices graded from top to bottom).
//! No heap allocation once the workspace has its size: the backward pass of a contact
//! step takes a pseudo-inverse per stage and must not allocate per step.
//!
//! [`SymmetricEigenWorkspace::pseudo_inverse`] is the allocation-free counterpart of
//! [`super::pseudo_inverse`]: the same symmetric and Jordan–Wielandt forms and the same
//! rank rule (singular values at or below `rtol · σ_max` count as zero), so a forward
//! solve and a backward pass see the same rank unless a singular value sits within
//! round-off of the cut-off.

use super::dense::reshape;
use nalgebra::DMatrix;

/// Reusable storage for [`SymmetricEigenWorkspace::decompose`] and
/// [`SymmetricEigenWorkspace::pseudo_inverse`]; it grows to the largest matrix seen.
#[derive(Clone, Debug, Default)]
pub struct SymmetricEigenWorkspace {
    /// The matrix being reduced, then its eigenvectors (one per column).
    z: DMatrix<f64>,
    /// Diagonal, then eigenvalues.
    d: Vec<f64>,
    /// Subdiagonal (`e[i]` couples `i` and `i + 1`).
    e: Vec<f64>,
    /// Householder vector and the products with it.
    v: Vec<f64>,
    p: Vec<f64>,
    /// The last [`SymmetricEigenWorkspace::factor_pseudo_inverse`]: the shape of K, its
    /// form (`symmetric`: K itself was decomposed; else its Jordan–Wielandt matrix) and
    /// the cut-off below which an eigenvalue counts as zero.
    shape: (usize, usize),
    symmetric: bool,
    tol: f64,
}

impl SymmetricEigenWorkspace {
    /// An empty workspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decomposes the symmetric `n × n` matrix that `fill` writes into the zeroed
    /// storage it is given (column-major, only read as symmetric: both triangles must
    /// hold it): afterwards [`Self::eigenvalues`] and [`Self::eigenvectors`] hold
    /// `A = Z Λ Zᵀ` (unsorted). False when the iteration does not converge or an entry
    /// is not finite.
    pub fn decompose(&mut self, n: usize, fill: impl FnOnce(&mut DMatrix<f64>)) -> bool {
        reshape(&mut self.z, n, n);
        fill(&mut self.z);
        if !self.z.iter().all(|x| x.is_finite()) {
            return false;
        }
        for buf in [&mut self.d, &mut self.e, &mut self.v, &mut self.p] {
            buf.clear();
            buf.resize(n, 0.0);
        }
        self.tridiagonalize(n);
        self.ql_implicit(n)
    }

    /// The eigenvalues of the last decomposition.
    pub fn eigenvalues(&self) -> &[f64] {
        &self.d
    }

    /// The eigenvectors of the last decomposition (column i for eigenvalue i).
    pub fn eigenvectors(&self) -> &DMatrix<f64> {
        &self.z
    }

    /// Householder reduction `A = Q T Qᵀ` in place: `T`'s diagonal into `d`, its
    /// subdiagonal into `e`, `Q` into `z`. Step k reflects rows and columns `k+1..n`
    /// with `H = I − 2 v vᵀ` so that column k below the subdiagonal vanishes:
    /// `H A H = A − 2 v wᵀ − 2 w vᵀ`, `w = A v − (vᵀ A v) v`. Column-major loops over
    /// the flat storage (entry (i, j) at `i + j n`).
    fn tridiagonalize(&mut self, n: usize) {
        // The reflectors are kept in the columns below the subdiagonal while the
        // trailing block is reduced, then accumulated into Q from the last one back.
        let a = self.z.as_mut_slice();
        for k in 0..n.saturating_sub(2) {
            let m = n - k - 1;
            let (lo, hi) = (k + 1, n);
            let norm = a[k * n + lo..k * n + hi].iter().map(|x| x * x).sum::<f64>().sqrt();
            let v = &mut self.v[..m];
            if norm == 0.0 {
                self.e[k] = 0.0;
                a[k * n + lo..k * n + hi].fill(0.0);
                continue;
            }
            let x0 = a[k * n + lo];
            let alpha = if x0 > 0.0 { -norm } else { norm };
            // v = (x − α e₁)/‖x − α e₁‖, ‖x − α e₁‖² = 2‖x‖(‖x‖ + |x₀|).
            let scale = (2.0 * norm * (norm + x0.abs())).sqrt();
            for (vi, x) in v.iter_mut().zip(&a[k * n + lo..k * n + hi]) {
                *vi = x / scale;
            }
            v[0] = (x0 - alpha) / scale;
            // p = A₂₂ v (column by column), K = vᵀp, w = p − K v.
            let p = &mut self.p[..m];
            p.fill(0.0);
            for (j, &vj) in v.iter().enumerate() {
                let col = &a[(lo + j) * n + lo..(lo + j) * n + hi];
                for (pi, x) in p.iter_mut().zip(col) {
                    *pi += x * vj;
                }
            }
            let kk: f64 = p.iter().zip(v.iter()).map(|(x, y)| x * y).sum();
            for (pi, vi) in p.iter_mut().zip(v.iter()) {
                *pi -= kk * vi;
            }
            for j in 0..m {
                let (vj, pj) = (2.0 * v[j], 2.0 * p[j]);
                let col = &mut a[(lo + j) * n + lo..(lo + j) * n + hi];
                for ((x, vi), pi) in col.iter_mut().zip(v.iter()).zip(p.iter()) {
                    *x -= vi * pj + pi * vj;
                }
            }
            self.e[k] = alpha;
            // Keep v in column k (rows k+1..n) for the accumulation.
            a[k * n + lo..k * n + hi].copy_from_slice(v);
        }
        if n >= 2 {
            self.e[n - 2] = a[(n - 2) * n + n - 1];
        }
        for i in 0..n {
            self.d[i] = a[i * n + i];
        }
        if n > 0 {
            self.e[n - 1] = 0.0;
        }
        // Q = H₀ H₁ … H_{n−3}, applied from the last reflector back onto the identity
        // (H_k only touches rows and columns k+1..n, which the later ones leave as the
        // identity outside their own block).
        let last = n.saturating_sub(2);
        if last == 0 {
            // n ≤ 2: the matrix is already tridiagonal; Q = I.
            a.fill(0.0);
            for i in 0..n {
                a[i * n + i] = 1.0;
            }
            return;
        }
        for k in (0..last).rev() {
            let m = n - k - 1;
            let (lo, hi) = (k + 1, n);
            self.v[..m].copy_from_slice(&a[k * n + lo..k * n + hi]);
            if k + 1 == last {
                // The trailing block starts as the identity.
                for j in lo..hi {
                    a[j * n + lo..j * n + hi].fill(0.0);
                    a[j * n + j] = 1.0;
                }
            }
            // Column k and row k of Q are e_k (H_k does not touch index k).
            a[k * n + k..k * n + n].fill(0.0);
            for j in k..n {
                a[j * n + k] = 0.0;
            }
            a[k * n + k] = 1.0;
            // Q₂₂ ← (I − 2 v vᵀ) Q₂₂.
            let v = &self.v[..m];
            for j in lo..hi {
                let col = &mut a[j * n + lo..j * n + hi];
                let dot: f64 = v.iter().zip(col.iter()).map(|(x, y)| x * y).sum();
                let c = 2.0 * dot;
                for (x, vi) in col.iter_mut().zip(v) {
                    *x -= c * vi;
                }
            }
        }
    }

    /// The implicit-shift QL iteration on `(d, e)` with the rotations applied to the
    /// columns of `z` (Wilkinson shift from the leading 2 × 2 block of each unreduced
    /// part). False when the iterations over all eigenvalues exceed `60 n` (a total
    /// budget, as LAPACK's `dsteqr` keeps: one eigenvalue of a cluster may need more
    /// than its share while round-off of the size of the whole matrix keeps its
    /// subdiagonal above the local deflation test — 80 iterations for one eigenvalue of
    /// the 400 × 400 position-stage matrix of a pile of 100 boxes, whose ten distinct
    /// eigenvalues repeat up to a hundred times).
    fn ql_implicit(&mut self, n: usize) -> bool {
        let (d, e, z) = (&mut self.d, &mut self.e, &mut self.z);
        let budget = 60 * n;
        let mut iterations = 0;
        for l in 0..n {
            loop {
                // The first negligible subdiagonal entry at or after l.
                let mut m = l;
                while m + 1 < n {
                    let dd = d[m].abs() + d[m + 1].abs();
                    if e[m].abs() <= f64::EPSILON * dd {
                        break;
                    }
                    m += 1;
                }
                if m == l {
                    break;
                }
                iterations += 1;
                if iterations > budget {
                    return false;
                }
                let mut g = (d[l + 1] - d[l]) / (2.0 * e[l]);
                let mut r = (g * g + 1.0).sqrt();
                g = d[m] - d[l] + e[l] / (g + r.copysign(g));
                let (mut s, mut c, mut p) = (1.0, 1.0, 0.0);
                let mut deflated = false;
                let mut i = m;
                while i > l {
                    i -= 1;
                    let f = s * e[i];
                    let b = c * e[i];
                    r = (f * f + g * g).sqrt();
                    e[i + 1] = r;
                    if r == 0.0 {
                        // Underflow: the rotation splits the matrix here.
                        d[i + 1] -= p;
                        e[m] = 0.0;
                        deflated = true;
                        break;
                    }
                    s = f / r;
                    c = g / r;
                    g = d[i + 1] - p;
                    r = (d[i] - g) * s + 2.0 * c * b;
                    p = s * r;
                    d[i + 1] = g + p;
                    g = c * r - b;
                    let (left, right) = z.as_mut_slice().split_at_mut((i + 1) * n);
                    for (zi, zf) in left[i * n..].iter_mut().zip(&mut right[..n]) {
                        let (x, y) = (*zi, *zf);
                        *zf = s * x + c * y;
                        *zi = c * x - s * y;
                    }
                }
                if deflated {
                    continue;
                }
                d[l] -= p;
                e[l] = g;
                e[m] = 0.0;
            }
        }
        d.iter().all(|x| x.is_finite())
    }

    /// The Moore–Penrose pseudo-inverse of `k` (`m × n`) into `out` (`n × m`), singular
    /// values at or below `rtol · σ_max` dropped; returns the numerical rank. A `k`
    /// symmetric to `1e-13` of its largest entry is decomposed itself, any other through
    /// its Jordan–Wielandt matrix `[0 K; Kᵀ 0]` ([`super::pseudo_inverse`], module doc).
    /// `None` if `k` is not finite or the iteration fails. Allocates only to grow the
    /// workspace or `out`.
    pub fn pseudo_inverse(&mut self, k: &DMatrix<f64>, rtol: f64, out: &mut DMatrix<f64>) -> Option<usize> {
        let rank = self.factor_pseudo_inverse(k, rtol)?;
        self.form_pseudo_inverse(out).then_some(rank)
    }

    /// `K⁺` (`n × m`) into `out` from the last [`Self::factor_pseudo_inverse`]; false if
    /// an entry is not finite.
    pub fn form_pseudo_inverse(&self, out: &mut DMatrix<f64>) -> bool {
        let (m, n) = self.shape;
        reshape(out, n, m);
        let (left0, right0) = if self.symmetric { (0, 0) } else { (0, m) };
        // K⁺ = Σ_kept right_i left_iᵀ / λ_i: the eigenvectors of K (symmetric), or the
        // lower (row-space) and upper (column-space) halves of those of [0 K; Kᵀ 0].
        for (i, &lambda) in self.d.iter().enumerate() {
            if lambda.abs() <= self.tol {
                continue;
            }
            let zi = self.z.column(i);
            let (left, right) = (&zi.as_slice()[left0..left0 + m], &zi.as_slice()[right0..right0 + n]);
            for (c, &lc) in left.iter().enumerate() {
                let l = lc / lambda;
                if l == 0.0 {
                    continue;
                }
                for (o, x) in out.as_mut_slice()[c * n..(c + 1) * n].iter_mut().zip(right) {
                    *o += x * l;
                }
            }
        }
        out.iter().all(|x| x.is_finite())
    }

    /// Decomposes `k` (`m × n`) for products with its pseudo-inverse
    /// ([`Self::apply_pseudo_inverse`]) without forming it; the rule and the forms are
    /// those of [`Self::pseudo_inverse`]. Returns the numerical rank; `None` if `k` is
    /// not finite or the iteration fails.
    pub fn factor_pseudo_inverse(&mut self, k: &DMatrix<f64>, rtol: f64) -> Option<usize> {
        let (m, n) = k.shape();
        self.shape = (m, n);
        self.symmetric = true;
        self.tol = 0.0;
        if m == 0 || n == 0 {
            self.d.clear();
            return Some(0);
        }
        let scale = k.amax();
        if !scale.is_finite() {
            return None;
        }
        let symmetric = m == n && (0..n).all(|i| (0..i).all(|j| (k[(i, j)] - k[(j, i)]).abs() <= 1e-13 * scale));
        self.symmetric = symmetric;
        let ok = if symmetric {
            self.decompose(n, |a| {
                for j in 0..n {
                    for i in 0..n {
                        a[(i, j)] = 0.5 * (k[(i, j)] + k[(j, i)]);
                    }
                }
            })
        } else {
            self.decompose(m + n, |a| {
                for j in 0..n {
                    for i in 0..m {
                        a[(i, m + j)] = k[(i, j)];
                        a[(m + j, i)] = k[(i, j)];
                    }
                }
            })
        };
        if !ok {
            return None;
        }
        self.tol = rtol * self.d.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
        let tol = self.tol;
        let kept = self.d.iter().filter(|l| l.abs() > tol);
        Some(if symmetric { kept.count() } else { kept.filter(|l| **l > 0.0).count() })
    }

    /// `out = K⁺ x` (`transpose`: `out = K⁺ᵀ x`) for the `K` of the last
    /// [`Self::factor_pseudo_inverse`], in O((m + n)²) without forming `K⁺`: with `K⁺ =
    /// Σ right_i left_iᵀ/λ_i`, `K⁺ x = Σ right_i (left_i · x)/λ_i`. `x` has m entries
    /// (n when transposed), `out` the other count.
    pub fn apply_pseudo_inverse(&self, x: &[f64], transpose: bool, out: &mut [f64]) {
        let (m, n) = self.shape;
        let (left0, right0) = if self.symmetric { (0, 0) } else { (0, m) };
        let ((from0, from_len), (to0, to_len)) =
            if transpose { ((right0, n), (left0, m)) } else { ((left0, m), (right0, n)) };
        assert_eq!(x.len(), from_len, "apply_pseudo_inverse: input length");
        assert_eq!(out.len(), to_len, "apply_pseudo_inverse: output length");
        out.fill(0.0);
        if m == 0 || n == 0 {
            return;
        }
        for (i, &lambda) in self.d.iter().enumerate() {
            if lambda.abs() <= self.tol {
                continue;
            }
            let zi = &self.z.as_slice()[i * self.z.nrows()..(i + 1) * self.z.nrows()];
            let c: f64 = zi[from0..from0 + from_len].iter().zip(x).map(|(a, b)| a * b).sum::<f64>() / lambda;
            for (o, z) in out.iter_mut().zip(&zi[to0..to0 + to_len]) {
                *o += z * c;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::SplitMix64;

    fn random(rng: &mut SplitMix64, m: usize, n: usize) -> DMatrix<f64> {
        DMatrix::from_fn(m, n, |_, _| rng.range(-1.0, 1.0))
    }

    #[test]
    fn decomposes_symmetric_matrices_of_every_size() {
        let mut rng = SplitMix64::new(7);
        let mut ws = SymmetricEigenWorkspace::new();
        for n in 0..40 {
            let b = random(&mut rng, n, n);
            let a = &b + b.transpose();
            assert!(ws.decompose(n, |z| z.copy_from(&a)));
            let (z, lambda) = (ws.eigenvectors(), ws.eigenvalues());
            let recon = z * DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(lambda)) * z.transpose();
            let scale = a.amax().max(1.0);
            assert!((&recon - &a).amax() <= 1e-13 * scale * n.max(1) as f64, "n = {n}: reconstruction");
            let orth = z.transpose() * z - DMatrix::identity(n, n);
            assert!(orth.amax() <= 1e-13 * n.max(1) as f64, "n = {n}: orthogonality {}", orth.amax());
            // The same spectrum as nalgebra's solver.
            if n > 0 {
                let mut ours = lambda.to_vec();
                let mut theirs = nalgebra::SymmetricEigen::new(a.clone()).eigenvalues.as_slice().to_vec();
                ours.sort_by(f64::total_cmp);
                theirs.sort_by(f64::total_cmp);
                for (x, y) in ours.iter().zip(&theirs) {
                    assert!((x - y).abs() <= 1e-12 * scale, "n = {n}: {x} vs {y}");
                }
            }
        }
    }

    #[test]
    fn handles_close_and_repeated_eigenvalues_and_graded_matrices() {
        let mut rng = SplitMix64::new(11);
        let mut ws = SymmetricEigenWorkspace::new();
        for n in [2, 3, 5, 8, 13] {
            // Q diag(λ) Qᵀ with a pair 1e-9 apart, a repeated value and a tiny one.
            let q = nalgebra::linalg::QR::new(random(&mut rng, n, n)).q();
            let mut lambda: Vec<f64> = (0..n).map(|i| 1.0 + i as f64).collect();
            lambda[n - 1] = lambda[0] + 1e-9;
            if n > 2 {
                lambda[1] = lambda[0];
                lambda[2] = 1e-12;
            }
            let a = &q * DMatrix::from_diagonal(&nalgebra::DVector::from_vec(lambda.clone())) * q.transpose();
            assert!(ws.decompose(n, |z| z.copy_from(&a)));
            let z = ws.eigenvectors();
            let recon =
                z * DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(ws.eigenvalues())) * z.transpose();
            assert!((&recon - &a).amax() <= 1e-13 * n as f64, "n = {n}");
            let mut got = ws.eigenvalues().to_vec();
            got.sort_by(f64::total_cmp);
            lambda.sort_by(f64::total_cmp);
            for (x, y) in got.iter().zip(&lambda) {
                assert!((x - y).abs() <= 1e-13 * n as f64, "n = {n}: {x} vs {y}");
            }
        }
        // Graded and diagonal matrices, and a zero matrix.
        let graded = DMatrix::from_fn(6, 6, |i, j| 10f64.powi(-(i as i32 + j as i32)));
        assert!(ws.decompose(6, |z| z.copy_from(&graded)));
        let z = ws.eigenvectors();
        let recon = z * DMatrix::from_diagonal(&nalgebra::DVector::from_column_slice(ws.eigenvalues())) * z.transpose();
        assert!((&recon - &graded).amax() <= 1e-15);
        assert!(ws.decompose(4, |z| z.fill_with_identity()));
        assert!(ws.decompose(3, |_| {}));
        assert_eq!(ws.eigenvalues(), &[0.0; 3]);
        assert!(!ws.decompose(2, |z| z[(0, 0)] = f64::NAN));
    }

    #[test]
    fn pseudo_inverse_matches_the_allocating_one() {
        let mut rng = SplitMix64::new(3);
        let mut ws = SymmetricEigenWorkspace::new();
        let mut out = DMatrix::zeros(0, 0);
        for (m, n, rank) in [(4, 4, 4), (4, 4, 3), (6, 6, 2), (3, 5, 3), (5, 3, 2), (8, 8, 5), (1, 1, 1), (0, 3, 0)] {
            for symmetric in [false, true] {
                if symmetric && m != n {
                    continue;
                }
                let l = random(&mut rng, m, rank);
                let k = if symmetric { &l * l.transpose() } else { &l * random(&mut rng, rank, n) };
                let got = ws.pseudo_inverse(&k, 1e-10, &mut out).unwrap();
                let (want, want_rank) = crate::math::pseudo_inverse(&k, 1e-10).unwrap();
                assert_eq!(got, want_rank, "{m}×{n} rank {rank}");
                assert_eq!(got, rank.min(m).min(n));
                assert_eq!(out.shape(), (n, m));
                assert!((&out - &want).amax() <= 1e-11 * want.amax().max(1.0), "{m}×{n} rank {rank}");
                // Products without the matrix.
                let x = nalgebra::DVector::from_fn(m, |i, _| (i as f64 + 1.0).sin());
                let xt = nalgebra::DVector::from_fn(n, |i, _| (i as f64 + 2.0).cos());
                let (mut y, mut yt) = (vec![0.0; n], vec![0.0; m]);
                assert_eq!(ws.factor_pseudo_inverse(&k, 1e-10), Some(got));
                ws.apply_pseudo_inverse(x.as_slice(), false, &mut y);
                ws.apply_pseudo_inverse(xt.as_slice(), true, &mut yt);
                let (wy, wyt) = (&want * &x, want.transpose() * &xt);
                assert!((nalgebra::DVector::from_vec(y) - wy).amax() <= 1e-11 * want.amax().max(1.0));
                assert!((nalgebra::DVector::from_vec(yt) - wyt).amax() <= 1e-11 * want.amax().max(1.0));
                // Moore–Penrose: K K⁺ K = K.
                assert!((&k * &out * &k - &k).amax() <= 1e-12 * k.amax().max(1.0));
            }
        }
        assert_eq!(ws.pseudo_inverse(&DMatrix::from_element(2, 2, f64::INFINITY), 1e-10, &mut out), None);
    }
}
