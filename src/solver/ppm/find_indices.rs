//! FIND-INDICES (Drumwright 2015, Algorithm 2): a maximal subset E′ of the equality rows whose matrix
//! `S = E′ M̃⁻¹ E′ᵀ + R_E′` is non-singular, found greedily in the given row order by an incremental
//! Cholesky factorization (the paper's "singularity check … best performed using a Cholesky factorization
//! … O(m²) updates"). The rows left out are linear combinations of the kept ones; they get zero force.
//!
//! The rows arrive *whitened*, `x̃_i = L⁻¹ j_iᵀ` with `L Lᵀ` the (effective) mass, so that
//! `S_ij = x̃_i · x̃_j + r_i δ_ij`. A row with `r_i > 0` is lifted into its own extra coordinate,
//! `a_i = (x̃_i, √r_i e_i)` in `R^{nv + #reg}`, so that `S = Aᵀ A` is a plain Gram matrix. The factor is
//! kept in QR form, `A = Q L_Sᵀ` with orthonormal columns `Q` and `L_S L_Sᵀ = S`: for a candidate `a`,
//!
//! ```text
//! l = Qᵀ a,   ρ = a − Q l   (done twice: classical Gram–Schmidt with re-orthogonalization),
//! pivot d = |a|² − |l|² = |ρ|²,
//! ```
//!
//! and the row is kept when `d > rank_tolerance · |a|²`: `L_S` gains the row `[lᵀ, √d]` (the O(s²)
//! Cholesky update of the paper, obtained here in O(s·(nv + #reg))) and `Q` the column `ρ / √d`. The pivot
//! is computed as a squared norm, so round-off neither hides a dependency nor invents one. A row with
//! `r > 0` has `d ≥ r` (its own coordinate is orthogonal to everything before), so it is always kept
//! unless `r` itself is below the tolerance. The top `nv` rows of `Q` are `Ẑᵀ = (L_S⁻¹ Ẽ′)ᵀ`, which the
//! elimination of E′ uses (`mod.rs`); in the lifted space the elimination is the orthogonal projector
//! `I − Q Qᵀ` even when `R_E′ ≠ 0`. Lemma 1: `s = |E′| ≤ nv + #reg`.

use nalgebra::{DMatrix, DVector};

use super::cholesky::GrowingCholesky;

/// The kept equality rows and the factors of their elimination.
pub(crate) struct EqualityBasis {
    /// Kept candidates (indices into the candidate list), in order.
    pub kept: Vec<usize>,
    /// Dropped candidates (linearly dependent on the kept ones, or zero rows).
    pub dropped: Vec<usize>,
    /// `L_S` with `L_S L_Sᵀ = S`.
    pub factor: GrowingCholesky,
    /// `Q` (`dim × cap`, the first `len()` columns used), orthonormal columns in the lifted space.
    pub q: DMatrix<f64>,
}

impl EqualityBasis {
    /// Number of kept rows `s`.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// The lifted dimension `nv + #(candidates with r > 0)`.
    pub fn dim(&self) -> usize {
        self.q.nrows()
    }
}

/// Runs FIND-INDICES over the candidates `cols` (columns of the whitened rows `x`, `nv × ·`) with
/// regularizations `reg` (one per candidate). `scale` is the problem's largest `|x̃_i|² + r_i`: a
/// candidate with `|x̃|² + r ≤ rank_tolerance · scale` is a zero row and dropped.
pub(crate) fn find_indices(
    x: &DMatrix<f64>,
    cols: &[usize],
    reg: &[f64],
    scale: f64,
    rank_tolerance: f64,
) -> EqualityBasis {
    let nv = x.nrows();
    let lifted = reg.iter().filter(|&&r| r > 0.0).count();
    let dim = nv + lifted;
    let cap = cols.len().min(dim);
    let mut basis = EqualityBasis {
        kept: Vec::with_capacity(cap),
        dropped: Vec::new(),
        factor: GrowingCholesky::new(cap),
        q: DMatrix::zeros(dim, cap),
    };
    let mut a = DVector::<f64>::zeros(dim);
    let mut slot = nv;
    for (c, (&col, &r)) in cols.iter().zip(reg).enumerate() {
        a.fill(0.0);
        a.rows_mut(0, nv).copy_from(&x.column(col));
        if r > 0.0 {
            a[slot] = r.sqrt();
            slot += 1;
        }
        let norm2 = a.norm_squared();
        if norm2 <= rank_tolerance * scale || !basis.factor.has_room() {
            basis.dropped.push(c);
            continue;
        }
        let s = basis.len();
        let (l, rho) = project(&basis.q.columns(0, s), &a);
        let d = rho.norm_squared();
        if d > rank_tolerance * norm2 && d.is_finite() {
            basis.factor.append(l.as_slice(), d);
            basis.q.column_mut(s).copy_from(&(&rho / d.sqrt()));
            basis.kept.push(c);
        } else {
            basis.dropped.push(c);
        }
    }
    basis
}

/// `l = Qᵀ a` and `ρ = a − Q l` for orthonormal columns `Q`, with one re-orthogonalization pass.
pub(crate) fn project<S>(
    q: &nalgebra::Matrix<f64, nalgebra::Dyn, nalgebra::Dyn, S>,
    a: &DVector<f64>,
) -> (DVector<f64>, DVector<f64>)
where
    S: nalgebra::storage::Storage<f64, nalgebra::Dyn, nalgebra::Dyn>,
{
    let mut l = q.tr_mul(a);
    let mut rho = a.clone();
    rho.gemv(-1.0, q, &l, 1.0);
    if q.ncols() > 0 {
        let l2 = q.tr_mul(&rho);
        rho.gemv(-1.0, q, &l2, 1.0);
        l += l2;
    }
    (l, rho)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicated_and_combined_rows_are_dropped_regularized_rows_kept() {
        // Rows in R³: e1, e2, e1 + e2 (dependent), 2 e1 with r > 0 (kept), e3, e1 − e3 (dependent), 0.
        let rows = [
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [1.0, 1.0, 0.0],
            [2.0, 0.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 0.0, -1.0],
            [0.0, 0.0, 0.0],
        ];
        let x = DMatrix::from_fn(3, rows.len(), |i, j| rows[j][i]);
        let cols: Vec<usize> = (0..rows.len()).collect();
        let reg = [0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0];
        let b = find_indices(&x, &cols, &reg, 4.0, 1e-10);
        assert_eq!(b.kept, vec![0, 1, 3, 4]);
        assert_eq!(b.dropped, vec![2, 5, 6]);
        assert_eq!(b.dim(), 4);
        // L_S L_Sᵀ = S, and the top rows of Q are (L_S⁻¹ E′)ᵀ.
        let s = b.len();
        let ls = DMatrix::from_fn(s, s, |i, j| if j <= i { b.factor.at(i, j) } else { 0.0 });
        let e = DMatrix::from_fn(3, s, |i, j| x[(i, b.kept[j])]);
        let mut smat = e.transpose() * &e;
        for (j, &c) in b.kept.iter().enumerate() {
            smat[(j, j)] += reg[c];
        }
        assert!((&ls * ls.transpose() - &smat).amax() < 1e-12);
        let q = b.q.columns(0, s);
        assert!((&ls * q.rows(0, 3).transpose() - e.transpose()).amax() < 1e-12);
        assert!((q.transpose() * q - DMatrix::identity(s, s)).amax() < 1e-12);
    }
}
