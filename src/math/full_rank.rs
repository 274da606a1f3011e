//! Minimum-norm solves of systems that are certified to have full rank: the cheap
//! counterparts of [`super::min_norm_solve`] and [`super::min_norm_solve_factored`]
//! for the common case in which the rank rule of those solves would drop no singular
//! value, so that the pseudo-inverse is a plain inverse on the range.
//!
//! * A tall product `K = L Nᵀ` (`k × k`, factors `k × d`, `k > d`; `N = L` for the
//!   symmetric `K = L Lᵀ`): thin Householder QR `L = Q₁R₁`, `N = Q₂R₂` (Golub & Van
//!   Loan, *Matrix Computations*, 4th ed., Alg. 5.2.1), then
//!   `K⁺ = Q₂ R₂⁻ᵀ R₁⁻¹ Q₁ᵀ` when `R₁` and `R₂` are non-singular. `O(k d²)` work and no
//!   eigendecomposition; the error is that of a backward-stable solve with `κ(K)`
//!   (the triangular factors carry `√κ` each).
//! * A square `K` (`k × k`): `K⁻¹` by Cholesky (symmetric) or LU with partial pivoting.
//!
//! **The certificate.** For any non-singular matrix `R`, `σ_min(R) ≥ 1/‖R⁻¹‖_F` and
//! `σ_max(R) ≤ ‖R‖_F`, and `σ_min(R₁R₂ᵀ) ≥ σ_min(R₁) σ_min(R₂)`. A solve is accepted
//! only when these bounds give `σ_min(K)/σ_max(K) ≥` [`CERTIFIED_MIN_RATIO`]: far
//! above the rank tolerance of the pseudo-inverse solves (`1e-12` relative), which
//! therefore would keep every one of the `d` (or `k`) singular values and return the
//! same solution up to rounding. Otherwise the functions return `None` and the caller
//! takes the pseudo-inverse path. Both solves do one step of iterative refinement, as
//! the pseudo-inverse solves do.

use nalgebra::{DMatrix, DVector};

/// The smallest certified lower bound on `σ_min(K)/σ_max(K)` for which the full-rank
/// solves answer (see the module documentation).
pub const CERTIFIED_MIN_RATIO: f64 = 1e-8;

/// A thin Householder QR of a tall `k × d` matrix (`k ≥ d`), kept in compact form: `R`
/// in the upper triangle, the reflector `vⱼ` below the diagonal of column j (its first
/// entry in `head[j]`), `Q = H₀ H₁ ⋯ H_{d−1}` with `Hⱼ = I − βⱼ vⱼ vⱼᵀ`.
#[derive(Clone, Debug)]
struct ThinQr {
    qr: DMatrix<f64>,
    head: Vec<f64>,
    beta: Vec<f64>,
}

impl ThinQr {
    /// Factors `a`; `None` if a column is zero below the diagonal and on it (then `R`
    /// is singular).
    fn new(qr: DMatrix<f64>) -> Option<ThinQr> {
        let mut out = ThinQr { qr, head: Vec::new(), beta: Vec::new() };
        out.factor().then_some(out)
    }

    /// Factors the matrix held in `self.qr` in place (reusing the storage of `head` and
    /// `beta`); false if a column is zero below the diagonal and on it.
    fn factor(&mut self) -> bool {
        let ThinQr { qr, head, beta } = self;
        let (k, d) = qr.shape();
        head.clear();
        head.resize(d, 0.0);
        beta.clear();
        beta.resize(d, 0.0);
        for j in 0..d {
            let norm = qr.view((j, j), (k - j, 1)).norm();
            if !(norm.is_finite() && norm > 0.0) {
                return false;
            }
            let x0 = qr[(j, j)];
            let alpha = if x0 >= 0.0 { -norm } else { norm };
            let v0 = x0 - alpha;
            // vᵀv = ‖x‖² − 2 α x₀ + α² = 2 (‖x‖² − α x₀) = 2 α (α − x₀) = −2 α v₀.
            let vtv = -2.0 * alpha * v0;
            if !(vtv.is_finite() && vtv > 0.0) {
                return false;
            }
            let b = 2.0 / vtv;
            for c in j + 1..d {
                let mut s = v0 * qr[(j, c)];
                for i in j + 1..k {
                    s += qr[(i, j)] * qr[(i, c)];
                }
                let s = b * s;
                qr[(j, c)] -= s * v0;
                for i in j + 1..k {
                    let vi = qr[(i, j)];
                    qr[(i, c)] -= s * vi;
                }
            }
            qr[(j, j)] = alpha;
            head[j] = v0;
            beta[j] = b;
        }
        true
    }

    /// Applies reflector `j` to `x` (`k` entries) in place.
    fn reflect(&self, j: usize, x: &mut [f64]) {
        let k = self.qr.nrows();
        let col = self.qr.column(j);
        let mut s = self.head[j] * x[j];
        for i in j + 1..k {
            s += col[i] * x[i];
        }
        let s = self.beta[j] * s;
        x[j] -= s * self.head[j];
        for i in j + 1..k {
            x[i] -= s * col[i];
        }
    }

    /// `Qᵀ x` in place.
    fn apply_qt(&self, x: &mut [f64]) {
        for j in 0..self.qr.ncols() {
            self.reflect(j, x);
        }
    }

    /// `Q x` in place.
    fn apply_q(&self, x: &mut [f64]) {
        for j in (0..self.qr.ncols()).rev() {
            self.reflect(j, x);
        }
    }

    /// `R⁻¹` (`d × d`, upper triangular) by back substitution, and the certificate
    /// factor `‖R‖_F ‖R⁻¹‖_F` (at least `κ₂(R)`); `None` for a singular `R`.
    fn r_inverse(&self) -> Option<(DMatrix<f64>, f64)> {
        let mut inv = DMatrix::<f64>::zeros(0, 0);
        let bound = self.r_inverse_into(&mut inv)?;
        Some((inv, bound))
    }

    /// [`ThinQr::r_inverse`] into `inv` (resized within its storage).
    fn r_inverse_into(&self, inv: &mut DMatrix<f64>) -> Option<f64> {
        let d = self.qr.ncols();
        super::reshape(inv, d, d);
        let mut r_norm2 = 0.0;
        for j in 0..d {
            for i in 0..=j {
                r_norm2 += self.qr[(i, j)] * self.qr[(i, j)];
            }
        }
        for c in 0..d {
            // Column c of R⁻¹: R x = e_c, x zero below c.
            for i in (0..=c).rev() {
                let mut s = if i == c { 1.0 } else { 0.0 };
                for t in i + 1..=c {
                    s -= self.qr[(i, t)] * inv[(t, c)];
                }
                let rii = self.qr[(i, i)];
                if rii == 0.0 {
                    return None;
                }
                inv[(i, c)] = s / rii;
            }
        }
        let bound = r_norm2.sqrt() * inv.norm();
        bound.is_finite().then_some(bound)
    }
}

/// `K⁺ = Q₂ R₂⁻ᵀ R₁⁻¹ Q₁ᵀ` of a certified full-rank `K = L Nᵀ`.
struct TallInverse {
    q1: ThinQr,
    q2: Option<ThinQr>,
    /// `R₂⁻ᵀ R₁⁻¹` (`d × d`).
    core: DMatrix<f64>,
}

impl TallInverse {
    fn new(l: &DMatrix<f64>, n: Option<&DMatrix<f64>>) -> Option<TallInverse> {
        let q1 = ThinQr::new(l.clone())?;
        let (r1_inv, bound1) = q1.r_inverse()?;
        let (q2, core, bound) = match n {
            None => (None, r1_inv.tr_mul(&r1_inv), bound1 * bound1),
            Some(n) => {
                let q2 = ThinQr::new(n.clone())?;
                let (r2_inv, bound2) = q2.r_inverse()?;
                let core = r2_inv.tr_mul(&r1_inv);
                (Some(q2), core, bound1 * bound2)
            }
        };
        (bound * CERTIFIED_MIN_RATIO <= 1.0).then_some(TallInverse { q1, q2, core })
    }

    /// `K⁺ r`.
    fn apply(&self, r: &DVector<f64>) -> DVector<f64> {
        let d = self.core.nrows();
        let mut y = r.clone();
        self.q1.apply_qt(y.as_mut_slice());
        let z = &self.core * y.rows(0, d);
        y.fill(0.0);
        y.rows_mut(0, d).copy_from(&z);
        self.q2.as_ref().unwrap_or(&self.q1).apply_q(y.as_mut_slice());
        y
    }
}

/// `K⁺ = Q R⁻ᵀ R⁻¹ Qᵀ` of a symmetric `K = L Lᵀ` (`L = QR`: `k × d`, `k > d`) certified
/// to have full rank `d` (module documentation), in caller-owned storage: no allocation
/// once it has held a factor of this size. Where it is certified, the pseudo-inverse
/// with any relative rank tolerance at or below `1e-12` keeps every one of the `d`
/// nonzero eigenvalues, so both give the same `K⁺` up to rounding, this one in `O(k d²)`
/// instead of an `O(k³)` eigendecomposition. The backward pass's products with `Â⁺` of
/// a clamping set with more rows than dofs go through it.
#[derive(Clone, Debug)]
pub struct TallPseudoInverse {
    qr: ThinQr,
    r_inv: DMatrix<f64>,
    /// `R⁻ᵀ R⁻¹` (`d × d`).
    core: DMatrix<f64>,
    certified: bool,
    /// Scratch: `Qᵀ x` (`k` entries).
    scratch: std::cell::RefCell<Vec<f64>>,
}

impl Default for TallPseudoInverse {
    fn default() -> Self {
        TallPseudoInverse {
            qr: ThinQr { qr: DMatrix::zeros(0, 0), head: Vec::new(), beta: Vec::new() },
            r_inv: DMatrix::zeros(0, 0),
            core: DMatrix::zeros(0, 0),
            certified: false,
            scratch: std::cell::RefCell::new(Vec::new()),
        }
    }
}

impl TallPseudoInverse {
    /// Factors `K = L Lᵀ` from `l` (`k × d`, `k > d ≥ 1`); true when it is certified to
    /// have full rank `d` (then [`Self::apply`] and [`Self::to_matrix`] give `K⁺`), false
    /// otherwise (shapes, entries that are not finite, a singular or ill-conditioned
    /// `R`): take the eigendecomposition.
    pub fn factor(&mut self, l: &DMatrix<f64>) -> bool {
        self.certified = false;
        let (k, d) = l.shape();
        if k <= d || d == 0 || !l.iter().all(|v| v.is_finite()) {
            return false;
        }
        super::reshape_for_overwrite(&mut self.qr.qr, k, d);
        self.qr.qr.copy_from(l);
        if !self.qr.factor() {
            return false;
        }
        let Some(bound) = self.qr.r_inverse_into(&mut self.r_inv) else { return false };
        // The bound is finite (`r_inverse_into`); NaN cannot reach here.
        if bound * bound * CERTIFIED_MIN_RATIO > 1.0 {
            return false;
        }
        // K = Q R Rᵀ Qᵀ, so K⁺ = Q (R Rᵀ)⁻¹ Qᵀ = Q (R⁻ᵀ R⁻¹) Qᵀ.
        super::reshape_for_overwrite(&mut self.core, d, d);
        self.r_inv.tr_mul_to(&self.r_inv, &mut self.core);
        self.certified = self.core.iter().all(|v| v.is_finite());
        self.certified
    }

    /// The rank `d` of the certified `K`.
    pub fn rank(&self) -> usize {
        self.core.nrows()
    }

    /// `out = K⁺ x` (`K⁺` is symmetric), both of `k` entries.
    pub fn apply(&self, x: &[f64], out: &mut [f64]) {
        assert!(self.certified, "TallPseudoInverse::apply before a certified factor");
        let d = self.core.nrows();
        let mut y = self.scratch.borrow_mut();
        y.clear();
        y.extend_from_slice(x);
        self.qr.apply_qt(y.as_mut_slice());
        for (i, o) in out.iter_mut().enumerate() {
            *o = if i < d { (0..d).map(|j| self.core[(i, j)] * y[j]).sum() } else { 0.0 };
        }
        self.qr.apply_q(out);
    }

    /// `K⁺` formed (`k × k`).
    pub fn to_matrix(&self) -> DMatrix<f64> {
        let k = self.qr.qr.nrows();
        let mut out = DMatrix::zeros(k, k);
        let mut e = vec![0.0; k];
        for c in 0..k {
            e.fill(0.0);
            e[c] = 1.0;
            self.apply(&e, &mut out.as_mut_slice()[c * k..(c + 1) * k]);
        }
        out
    }
}

/// The minimum-norm solution `x = K⁺ r` of `K = L Nᵀ` (`k × k`) from its tall factors
/// (`k × d`, `k > d`; `n = None` for the symmetric `K = L Lᵀ`) when both factors have
/// full column rank with the certified bound `σ_min(K)/σ_max(K) ≥`
/// [`CERTIFIED_MIN_RATIO`] (module documentation): then it equals
/// [`super::min_norm_solve_factored`]`(l, n, r, rtol)` for any `rtol ≤ 1e-12` up to
/// rounding, at a fraction of its cost. `None` otherwise (shapes that disagree, `k ≤
/// d`, entries that are not finite, or no certificate): take the pseudo-inverse path.
pub fn full_rank_solve_factored(l: &DMatrix<f64>, n: Option<&DMatrix<f64>>, r: &DVector<f64>) -> Option<DVector<f64>> {
    let (k, d) = l.shape();
    if k <= d || d == 0 || r.len() != k || n.is_some_and(|n| n.shape() != (k, d)) {
        return None;
    }
    if !l.iter().chain(n.into_iter().flatten()).chain(r.iter()).all(|v| v.is_finite()) {
        return None;
    }
    let inv = TallInverse::new(l, n)?;
    let mut x = inv.apply(r);
    // One step of iterative refinement with `K x = L (Nᵀ x)`.
    let kx = l * n.unwrap_or(l).tr_mul(&x);
    x += inv.apply(&(r - kx));
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// The solution `x = K⁻¹ r` of a square `K` certified non-singular with
/// `σ_min(K)/σ_max(K) ≥` [`CERTIFIED_MIN_RATIO`] (by Cholesky when `symmetric`, which
/// reads the lower triangle only, else by LU with partial pivoting): then it equals
/// [`super::min_norm_solve`]`(k, r, rtol)` for any `rtol ≤ 1e-12` up to rounding.
/// `None` otherwise (not square, not finite, not positive definite when `symmetric`,
/// or no certificate): take the pseudo-inverse path.
pub fn full_rank_solve(k: &DMatrix<f64>, r: &DVector<f64>, symmetric: bool) -> Option<DVector<f64>> {
    let n = k.nrows();
    if n == 0 || k.ncols() != n || r.len() != n {
        return None;
    }
    if !k.iter().chain(r.iter()).all(|v| v.is_finite()) {
        return None;
    }
    let inv = if symmetric { k.clone().cholesky()?.inverse() } else { k.clone().lu().try_inverse()? };
    let bound = inv.norm() * k.norm();
    if !(bound.is_finite() && bound * CERTIFIED_MIN_RATIO <= 1.0) {
        return None;
    }
    let mut x = &inv * r;
    let residual = r - k * &x;
    x += &inv * residual;
    x.iter().all(|v| v.is_finite()).then_some(x)
}
