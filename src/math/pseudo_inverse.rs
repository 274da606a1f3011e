//! Moore–Penrose pseudo-inverse and minimum-norm least-squares solves of small dense
//! matrices, through a symmetric eigendecomposition.
//!
//! A symmetric `K` (the Delassus blocks `A_CC` of a clamping set) is decomposed as
//! `K = Z Λ Zᵀ` and `K⁺ = Σ_{|λᵢ| > tol} zᵢ zᵢᵀ / λᵢ`. A general square or rectangular `K`
//! (the reduced systems `A_CC + A_CU E` with friction rows at their bounds) goes through
//! its Jordan–Wielandt matrix `H = [0 K; Kᵀ 0]`, whose eigenvalues are `±σᵢ` with
//! eigenvectors `(uᵢ; ±vᵢ)/√2` (Golub & Van Loan, *Matrix Computations*, §8.6.1), so
//! that `H⁺ = [0 (Kᵀ)⁺; K⁺ 0]` gives `K⁺` as its lower-left block without squaring the
//! condition number. Singular values at or below `rtol · σ_max` count as zero.
//!
//! A large, low-rank `K` given as a product `K = L Nᵀ` of tall `k × d` factors (the
//! Delassus block of `k` contact rows on `d < k` dofs, see
//! [`min_norm_solve_factored`]) goes through thin QR factorizations `L = Q₁R₁`,
//! `N = Q₂R₂`: `K = Q₁ (R₁R₂ᵀ) Q₂ᵀ` with orthonormal columns in `Q₁`, `Q₂`, so
//! `K⁺ = Q₂ (R₁R₂ᵀ)⁺ Q₁ᵀ`, and only the `d × d` core is decomposed as above: `O(k d²)`
//! work instead of `O(k³)`, the same singular values, the same rank cut-off.
//!
//! Why not `nalgebra::SVD`: its implicit-shift bidiagonal iteration (0.35) loses accuracy
//! when two singular values are close. On random 2×2–7×7 matrices with a pair of singular
//! values 1e-6 apart, `K·K⁺r` misses `r` by up to 0.6 relative, and by 2e-9 on matrices
//! whose singular values merely happen to lie near each other; the reconstruction
//! `UΣVᵀ` itself is off. Symmetric bodies make such pairs common in contact (a cube with
//! isotropic inertia resting on an edge gives a Delassus matrix with eigenvalues
//! 1.99670 and 1.99673), and the error showed as 1e-11 jumps in the forward impulses and
//! wrong backward pseudo-inverses. nalgebra's symmetric eigensolver does not have the
//! problem (residuals ≤ 6e-15 on the same matrices; `tests/math.rs`).

use nalgebra::{DMatrix, DVector};

/// A decomposition from which `K⁺` is assembled: `K⁺ = Σ_{kept i} right_i left_iᵀ / λᵢ`.
struct Factors {
    /// Eigenvalues (`λᵢ` of `K`, or `±σᵢ` of the Jordan–Wielandt matrix).
    values: DVector<f64>,
    /// Eigenvectors, one column per value: of `K` itself (then `left = right`), or of the
    /// Jordan–Wielandt matrix, whose first `nrows(K)` rows are the column-space side
    /// (`left`) and the others the row-space side (`right`).
    vectors: DMatrix<f64>,
    /// `Some(nrows(K))` for the Jordan–Wielandt form, where each singular value appears
    /// as a `±σ` pair.
    split: Option<usize>,
    /// The cut-off below which a value counts as zero.
    tol: f64,
}

/// True when `k` is square and symmetric to `1e-13` of its largest entry.
fn is_symmetric(k: &DMatrix<f64>, scale: f64) -> bool {
    let n = k.nrows();
    n == k.ncols() && (0..n).all(|i| (0..i).all(|j| (k[(i, j)] - k[(j, i)]).abs() <= 1e-13 * scale))
}

impl Factors {
    fn new(k: &DMatrix<f64>, rtol: f64) -> Option<Factors> {
        let (m, n) = k.shape();
        let scale = k.amax();
        if !scale.is_finite() {
            return None;
        }
        let (matrix, split) = if is_symmetric(k, scale) {
            // `(K + Kᵀ)/2` entry by entry, in one matrix (the same operations).
            (DMatrix::from_fn(m, n, |i, j| (k[(i, j)] + k[(j, i)]) * 0.5), None)
        } else {
            // H⁺ = Σ zᵢzᵢᵀ/λᵢ; its lower-left block K⁺ pairs the lower rows (the row
            // space of K) with the upper rows (its column space).
            let mut h = DMatrix::zeros(m + n, m + n);
            h.view_mut((0, m), (m, n)).copy_from(k);
            h.view_mut((m, 0), (n, m)).copy_from(&k.transpose());
            (h, Some(m))
        };
        let size = matrix.nrows();
        let e = nalgebra::linalg::SymmetricEigen::try_new(matrix, f64::EPSILON, max_iterations(size))?;
        if e.eigenvalues.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let tol = rtol * e.eigenvalues.amax();
        Some(Factors { values: e.eigenvalues, vectors: e.eigenvectors, split, tol })
    }

    /// Column `i` of the column-space side.
    fn left(&self, i: usize) -> nalgebra::DVectorView<'_, f64> {
        match self.split {
            Some(m) => self.vectors.generic_view((0, i), (nalgebra::Dyn(m), nalgebra::U1)),
            None => self.vectors.column(i),
        }
    }

    /// Column `i` of the row-space side.
    fn right(&self, i: usize) -> nalgebra::DVectorView<'_, f64> {
        match self.split {
            Some(m) => self.vectors.generic_view((m, i), (nalgebra::Dyn(self.vectors.nrows() - m), nalgebra::U1)),
            None => self.vectors.column(i),
        }
    }

    /// The indices of the kept values.
    fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.values.len()).filter(|&i| self.values[i].abs() > self.tol)
    }

    /// The numerical rank: kept eigenvalues, or kept positive ones of the `±σ` pairs.
    fn rank(&self) -> usize {
        if self.split.is_some() {
            self.kept().filter(|&i| self.values[i] > 0.0).count()
        } else {
            self.kept().count()
        }
    }
}

/// The eigensolver's iteration budget for an `n × n` matrix (it converges in a few
/// sweeps' worth; the cap only turns a failure into `None`).
fn max_iterations(n: usize) -> usize {
    100 * n + 100
}

/// The Moore–Penrose pseudo-inverse of `k` (`ncols × nrows`) and its numerical rank,
/// singular values at or below `rtol · σ_max` dropped. `None` if `k` is not finite or the
/// eigensolver fails.
pub fn pseudo_inverse(k: &DMatrix<f64>, rtol: f64) -> Option<(DMatrix<f64>, usize)> {
    let (m, n) = k.shape();
    if m == 0 || n == 0 {
        return Some((DMatrix::zeros(n, m), 0));
    }
    let f = Factors::new(k, rtol)?;
    let mut out = DMatrix::zeros(n, m);
    for i in f.kept() {
        out.ger(1.0 / f.values[i], &f.right(i), &f.left(i), 1.0);
    }
    out.iter().all(|v| v.is_finite()).then(|| (out, f.rank()))
}

/// The minimum-norm least-squares solution `x = K⁺ r` (singular values at or below
/// `rtol · σ_max` dropped), with one step of iterative refinement. `None` if `k` or `r` is not finite, the shapes disagree, or
/// the eigensolver fails.
pub fn min_norm_solve(k: &DMatrix<f64>, r: &DVector<f64>, rtol: f64) -> Option<DVector<f64>> {
    let (m, n) = k.shape();
    if r.len() != m {
        return None;
    }
    if m == 0 || n == 0 {
        return Some(DVector::zeros(n));
    }
    let f = Factors::new(k, rtol)?;
    let apply = |r: &DVector<f64>| {
        let mut x = DVector::zeros(n);
        for i in f.kept() {
            let c = f.left(i).dot(r) / f.values[i];
            x.axpy(c, &f.right(i), 1.0);
        }
        x
    };
    // One step of iterative refinement: the correction lies in the row space too, so
    // the solution keeps its minimum norm, and the residual drops to round-off of `r`
    // (the impulses' noise under perturbations of the inputs falls by 10–50×).
    let mut x = apply(r);
    let residual = r - k * &x;
    x += apply(&residual);
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The pseudo-inverse of a large, low-rank `K = L Nᵀ` (`k × k`) from its tall factors
/// `L`, `N` (`k × d`, `k ≥ d`), kept factored: `K⁺ = Q₂ C⁺ Q₁ᵀ` with the thin QR
/// factors `L = Q₁R₁`, `N = Q₂R₂` and the `d × d` core `C = R₁R₂ᵀ` (module
/// documentation). Products with `K⁺` cost `O(k d)`, forming it `O(k² d)`.
#[derive(Clone, Debug)]
pub struct FactoredPseudoInverse {
    /// `Q₁` (`k × d`).
    q1: DMatrix<f64>,
    /// `Q₂` (`k × d`); `None` when `N = L` (`K` symmetric).
    q2: Option<DMatrix<f64>>,
    /// `C⁺` (`d × d`).
    core_pinv: DMatrix<f64>,
    /// The numerical rank of `K` (that of `C`).
    rank: usize,
}

impl FactoredPseudoInverse {
    /// Factors `K = L Nᵀ` (`n = None`: `K = L Lᵀ`), singular values at or below
    /// `rtol · σ_max` dropped. `None` if an input is not finite, the shapes disagree
    /// (`k < d` included), or the eigensolver fails.
    pub fn new(l: &DMatrix<f64>, n: Option<&DMatrix<f64>>, rtol: f64) -> Option<FactoredPseudoInverse> {
        let (k, d) = l.shape();
        if k < d || n.is_some_and(|n| n.shape() != (k, d)) {
            return None;
        }
        if !l.iter().chain(n.into_iter().flatten()).all(|v| v.is_finite()) {
            return None;
        }
        let qr_l = l.clone().qr();
        let (q1, r1) = (qr_l.q(), qr_l.r());
        let (q2, core) = match n {
            None => {
                let core = &r1 * r1.transpose();
                (None, core)
            }
            Some(n) => {
                let qr_n = n.clone().qr();
                let core = &r1 * qr_n.r().transpose();
                (Some(qr_n.q()), core)
            }
        };
        let (core_pinv, rank) = pseudo_inverse(&core, rtol)?;
        Some(FactoredPseudoInverse { q1, q2, core_pinv, rank })
    }

    /// The numerical rank of `K`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The size `k` of `K`.
    pub fn size(&self) -> usize {
        self.q1.nrows()
    }

    fn q2(&self) -> &DMatrix<f64> {
        self.q2.as_ref().unwrap_or(&self.q1)
    }

    /// `K⁺ x` (`transpose`: `K⁺ᵀ x`); `x` has `k` entries.
    pub fn apply(&self, x: &DVector<f64>, transpose: bool) -> DVector<f64> {
        if transpose {
            &self.q1 * self.core_pinv.tr_mul(&self.q2().tr_mul(x))
        } else {
            self.q2() * (&self.core_pinv * self.q1.tr_mul(x))
        }
    }

    /// `K⁺ X` for a matrix `X` of `k` rows.
    pub fn apply_matrix(&self, x: &DMatrix<f64>) -> DMatrix<f64> {
        self.q2() * (&self.core_pinv * self.q1.tr_mul(x))
    }

    /// `K⁺` formed (`k × k`).
    pub fn to_matrix(&self) -> DMatrix<f64> {
        (self.q2() * &self.core_pinv) * self.q1.transpose()
    }
}

/// The minimum-norm least-squares solution `x = K⁺ r` of `K = L Nᵀ` (`k × k`) given by
/// its tall factors `L`, `N` (`k × d`, `k ≥ d`; `n = None` for the symmetric `K = L Lᵀ`),
/// singular values at or below `rtol · σ_max` dropped, with one step of iterative
/// refinement — the solution of [`min_norm_solve`] on the product, in `O(k d²)` work
/// ([`FactoredPseudoInverse`]). `None` if an input is not finite, the shapes disagree
/// (`k < d` included), or the eigensolver fails.
pub fn min_norm_solve_factored(
    l: &DMatrix<f64>,
    n: Option<&DMatrix<f64>>,
    r: &DVector<f64>,
    rtol: f64,
) -> Option<DVector<f64>> {
    let (k, d) = l.shape();
    if r.len() != k || !r.iter().all(|v| v.is_finite()) {
        return None;
    }
    if k == 0 || d == 0 {
        return (k >= d).then(|| DVector::zeros(k));
    }
    let p = FactoredPseudoInverse::new(l, n, rtol)?;
    // One step of iterative refinement, as in `min_norm_solve`, with `K x = L (Nᵀ x)`.
    let mut x = p.apply(r, false);
    let kx = l * n.unwrap_or(l).tr_mul(&x);
    x += p.apply(&(r - kx), false);
    x.iter().all(|v| v.is_finite()).then_some(x)
}
