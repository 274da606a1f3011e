//! The modified Principal Pivoting Method I (Drumwright 2015, Algorithm 1) for the unilateral rows, on
//! the factored LCP `w = N P Nᵀ z + e`, `0 ≤ z ⊥ w ≥ 0` (eqs. 56–57 with the equality rows already
//! eliminated into the PSD operator `P`, see `mod.rs`).
//!
//! The matrix `F = N P Nᵀ` (`n × n`) is never formed. `P` is an orthogonal projector in the lifted space of
//! FIND-INDICES, so the caller passes only the projected rows `G = N P` (`dim × n`, one column per row,
//! `dim = nv + #regularized equality rows`): `F = G Gᵀ`, `F_ij = g_i · g_j`, and
//!
//! * line 10–12: `z_B = −F_BB⁻¹ e_B` through a Cholesky factor of `F_BB` grown by one row/column when an
//!   index enters the non-basic set B and shrunk by Givens rotations when one leaves (O(|B|²) per change;
//!   `|B| ≤ rank F ≤ dim`, Lemma 1 and Theorem 1);
//! * line 13–14: `a† = G_Bᵀ z_B` (`dim`), `w† = G a† + e`, O(n·dim);
//! * line 15–40: the most negative `w†` outside B enters; the most negative `z†` (of the solve before
//!   the entry) leaves. Without a negative `w†` the most negative `z†` leaves, and without either the
//!   solution is found.
//!
//! **Zero rows.** A row whose projection `N_i P` vanishes (relative to its norm; it is zeroed by the caller)
//! has `w_i = e_i` for every `z`: entering it with `w_i < 0` certifies infeasibility.
//!
//! **Degenerate candidates.** A candidate `i` whose row of `N P` is (numerically) a combination
//! `α` of the rows of B (four coplanar corners of a box: rank 3) makes `F_BB` singular if added; its
//! Schur pivot `F_ii − F_iB F_BB⁻¹ F_Bi` is ≤ `rank_tolerance · F_ii`. Moving along
//! `z_i = t, z_B = z_B − t α` leaves `w` unchanged, and `w_i = e_i − αᵀ e_B < 0`. The rule: swap `i`
//! for the member `p` of B with `α_p > 0` that this ray drives to zero first (the ratio test
//! `min z_p / α_p`); B keeps its span, so `F_BB` stays non-singular. If no `α_p > 0` exists, the ray
//! `d = (e_i − α on B) ≥ 0` has `F d = 0` and `eᵀd = w_i < 0`: a certificate that the LCP is infeasible.
//!
//! **Termination.** PPM I is finite for P-matrices; for a PSD `F` it can cycle. A repeated set B is a
//! cycle (the iterate is a function of B): the first one switches to the least-index rule (the smallest
//! row index with a negative `w†` enters, the smallest with a negative `z†` leaves, Murty's rule), a
//! second one, a pivot budget overrun, or a numerically singular step fails, and the caller falls back
//! to the dense Dantzig solver.

use std::collections::HashSet;

use nalgebra::{DMatrix, DVector};

use super::cholesky::GrowingCholesky;

/// Why the pivoting stopped without a solution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PivotFailure {
    /// The pivot budget ran out.
    Budget,
    /// A set B repeated under the least-index rule too.
    Cycle,
    /// Row `i` (index into the unilateral rows) certifies infeasibility.
    Infeasible(usize),
    /// A swap left a numerically singular `F_BB`.
    Singular,
}

/// A solution of the reduced LCP.
pub(crate) struct PivotOutcome {
    /// `z` (`n`), non-negative.
    pub z: Vec<f64>,
    /// The final non-basic set B (indices into the unilateral rows), in insertion order.
    pub basis: Vec<usize>,
}

/// Tolerances and budget of [`modified_ppm`].
pub(crate) struct PivotSettings {
    /// Relative tolerance for the signs of `w†` and `z†`.
    pub tolerance: f64,
    /// Relative Schur-pivot threshold for linear dependence.
    pub rank_tolerance: f64,
    /// Maximum number of iterations (each one solve and one or two set changes).
    pub budget: usize,
    /// Reference scale of `F_ii` (the largest squared norm of the rows before the projection `P`): a row
    /// with `F_ii ≤ rank_tolerance · d_scale` is a zero row, and forces convert to velocities by it.
    pub d_scale: f64,
    /// Floor of the velocity scale (the problem's `max |b|`): the tolerances are relative to
    /// `max(|e|, w_scale, d_scale |z|)`, never to round-off left in `e` by the elimination.
    pub w_scale: f64,
}

struct Basis<'a> {
    np: &'a DMatrix<f64>,
    idx: Vec<usize>,
    factor: GrowingCholesky,
    inside: Vec<bool>,
}

impl Basis<'_> {
    /// `F_Bi` and `L⁻¹ F_Bi` for a candidate `i`; returns the Schur pivot.
    fn schur(&self, i: usize, l: &mut Vec<f64>, f_ii: f64) -> f64 {
        l.clear();
        let ni = self.np.column(i);
        l.extend(self.idx.iter().map(|&j| self.np.column(j).dot(&ni)));
        self.factor.forward(l);
        f_ii - l.iter().map(|v| v * v).sum::<f64>()
    }

    fn append(&mut self, i: usize, l: &[f64], pivot: f64) {
        self.factor.append(l, pivot);
        self.idx.push(i);
        self.inside[i] = true;
    }

    fn remove(&mut self, p: usize) {
        self.factor.remove(p);
        let i = self.idx.remove(p);
        self.inside[i] = false;
    }

    fn key(&self) -> Vec<usize> {
        let mut k = self.idx.clone();
        k.sort_unstable();
        k
    }
}

/// Modified PPM I on `w = (N P)(N P)ᵀ z + e` given the projected rows `np` (one column per row), see the
/// module documentation. `pivots` counts iterations (also on failure).
pub(crate) fn modified_ppm(
    np: &DMatrix<f64>,
    e: &DVector<f64>,
    settings: &PivotSettings,
    pivots: &mut usize,
) -> Result<PivotOutcome, PivotFailure> {
    let rows = e.len();
    let nv = np.nrows(); // the lifted dimension: rank F ≤ nv
    let f_diag: Vec<f64> = (0..rows).map(|i| np.column(i).norm_squared()).collect();
    let dn = settings.d_scale;
    let emax = e.amax().max(settings.w_scale);
    let (tol, rtol) = (settings.tolerance, settings.rank_tolerance);
    // Line 2–6: the trivial solution z = 0.
    let (i0, e0) = e.iter().enumerate().fold((0, f64::INFINITY), |b, (i, &v)| if v < b.1 { (i, v) } else { b });
    if rows == 0 || e0 >= -tol * emax {
        return Ok(PivotOutcome { z: vec![0.0; rows], basis: Vec::new() });
    }
    let mut basis = Basis {
        np,
        idx: Vec::with_capacity(rows.min(nv)),
        factor: GrowingCholesky::new(rows.min(nv)),
        inside: vec![false; rows],
    };
    let mut l = Vec::with_capacity(nv);
    // Line 7: B = {i0}.
    let d = basis.schur(i0, &mut l, f_diag[i0]);
    let independent = f_diag[i0] > rtol * dn && d > rtol * f_diag[i0] && basis.factor.has_room();
    if !independent {
        // A zero row with w < 0 (F d = 0 for d = e_i0, eᵀd < 0).
        return Err(PivotFailure::Infeasible(i0));
    }
    basis.append(i0, &l, d);
    let mut history: HashSet<Vec<usize>> = HashSet::new();
    history.insert(basis.key());
    let mut least_index = false;
    let mut zb: Vec<f64> = Vec::with_capacity(nv);
    let mut a = DVector::<f64>::zeros(nv);
    let mut w = DVector::<f64>::zeros(rows);
    loop {
        if *pivots >= settings.budget {
            return Err(PivotFailure::Budget);
        }
        *pivots += 1;
        // Line 10–14: z_B = −F_BB⁻¹ e_B, a† = (N P)_Bᵀ z_B, w† = Nᵀ a† + e.
        zb.clear();
        zb.extend(basis.idx.iter().map(|&i| -e[i]));
        basis.factor.solve(&mut zb);
        a.fill(0.0);
        for (&i, &z) in basis.idx.iter().zip(&zb) {
            a.axpy(z, &np.column(i), 1.0);
        }
        w.copy_from(e);
        w.gemv_tr(1.0, np, &a, 1.0);
        if zb.iter().chain(w.iter()).any(|v| !v.is_finite()) {
            return Err(PivotFailure::Singular);
        }
        let zmax = zb.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let tw = tol * emax.max(dn * zmax);
        let tf = tw / dn;
        // Line 15: the entering index (most negative w†, or the least index with w† < 0).
        let mut entering: Option<usize> = None;
        for i in (0..rows).filter(|&i| !basis.inside[i] && w[i] < -tw) {
            match entering {
                None => entering = Some(i),
                Some(j) if !least_index && w[i] < w[j] => entering = Some(i),
                _ => {}
            }
        }
        // Line 17/34: the leaving position (most negative z†, or the least row index with z† < 0).
        let mut leaving: Option<usize> = None;
        for p in (0..zb.len()).filter(|&p| zb[p] < -tf) {
            match leaving {
                None => leaving = Some(p),
                Some(q) if least_index && basis.idx[p] < basis.idx[q] => leaving = Some(p),
                Some(q) if !least_index && zb[p] < zb[q] => leaving = Some(p),
                _ => {}
            }
        }
        match (entering, leaving) {
            (None, None) => {
                // Line 25–29.
                let mut z = vec![0.0; rows];
                for (&i, &v) in basis.idx.iter().zip(&zb) {
                    z[i] = v.max(0.0);
                }
                return Ok(PivotOutcome { z, basis: basis.idx });
            }
            (None, Some(p)) => basis.remove(p), // Line 19–23.
            (Some(i), _) if f_diag[i] <= rtol * dn => {
                // A zero row: w_i = e_i < 0 whatever z is (d = unit vector i: F d = 0, eᵀd < 0).
                return Err(PivotFailure::Infeasible(i));
            }
            (Some(i), leaving) => {
                let d = basis.schur(i, &mut l, f_diag[i]);
                if d > rtol * f_diag[i] && basis.factor.has_room() {
                    // Line 32–39.
                    basis.append(i, &l, d);
                    if let Some(p) = leaving {
                        basis.remove(p);
                    }
                } else {
                    // Degenerate candidate: α = F_BB⁻¹ F_Bi, ratio test along z_i = t, z_B − t α.
                    let mut alpha = l.clone();
                    basis.factor.backward(&mut alpha);
                    let amax = alpha.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    let mut out: Option<(usize, f64)> = None;
                    for (p, &ap) in alpha.iter().enumerate() {
                        if ap > 1e-9 * amax {
                            let ratio = zb[p] / ap;
                            if out.is_none_or(|(_, r)| ratio < r) {
                                out = Some((p, ratio));
                            }
                        }
                    }
                    let Some((p, _)) = out else { return Err(PivotFailure::Infeasible(i)) };
                    basis.remove(p);
                    let d = basis.schur(i, &mut l, f_diag[i]);
                    let independent = d > rtol * f_diag[i] && basis.factor.has_room();
                    if !independent {
                        return Err(PivotFailure::Singular);
                    }
                    basis.append(i, &l, d);
                }
            }
        }
        if !history.insert(basis.key()) {
            if least_index {
                return Err(PivotFailure::Cycle);
            }
            least_index = true;
            history.clear();
            history.insert(basis.key());
        }
    }
}
