//! Principal pivoting (Cottle–Dantzig style, as in Baraff 1994 and its boxed extension) for a boxed LCP
//! with constant bounds: `w = A f + b`, `lo ≤ f ≤ hi` with `lo ≤ 0 ≤ hi`, complementary as in
//! [`super::BoxedLcp`]. `A` is expected symmetric positive semi-definite (a Delassus operator `J M⁻¹ Jᵀ`).
//!
//! Rows are added one at a time starting from `f = 0`. The processed rows satisfy the conditions at all
//! times: the clamped set C keeps `w_C = 0` through its system `A_CC Δf_C = −A_Cd Δf_d` (an incrementally
//! grown Cholesky factor), the rows at a bound keep `w` on their feasible side. The new row `d` is driven
//! (`f_d` moved against `w_d`) until `w_d = 0` (it joins C), `f_d` reaches a bound, or a processed row
//! blocks: a clamped row reaching a bound leaves C, a bounded row whose `w` reaches zero joins C.
//!
//! Rank deficiency (the common case of coplanar contacts): a row whose Schur complement against C is zero
//! is linearly dependent on C. For a positive semi-definite `A` driving it changes no `w` at all, so it is
//! never admitted to C through its own `w`; a dependent row that already has `w = 0` strictly inside its
//! box is *frozen* at its force (it keeps `w = 0` while C is unchanged, and joins C as soon as its `w`
//! starts to move). A `max_pivots` guard bounds the work.

use nalgebra::{DMatrix, DVector};

use super::problem::amax;
use crate::error::{Error, Result};

/// Relative threshold on Schur complements (and `Δw` per unit drive) below which a row is treated as
/// linearly dependent on the clamped set.
const PIVOT_RTOL: f64 = 1e-10;

/// Where a row ended in [`solve_box`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DantzigSet {
    /// In the clamped set: `w = 0`, `f` inside its bounds.
    Clamped,
    /// At its lower bound with `w ≥ 0`.
    Lower,
    /// At its upper bound with `w ≤ 0`.
    Upper,
    /// Linearly dependent on the clamped set, `w = 0` with `f` inside its bounds held fixed.
    Frozen,
}

/// Result of [`solve_box`].
#[derive(Clone, Debug, PartialEq)]
pub struct DantzigOutput {
    /// The forces.
    pub f: DVector<f64>,
    /// `A f + b`.
    pub w: DVector<f64>,
    /// The final set of each row.
    pub sets: Vec<DantzigSet>,
    /// Pivots (driving steps) taken.
    pub pivots: usize,
}

/// Incrementally grown Cholesky factor `L Lᵀ = A_CC` of the clamped set, in insertion order.
struct ClampedFactor {
    idx: Vec<usize>,
    l: DMatrix<f64>,
}

impl ClampedFactor {
    fn new(m: usize) -> Self {
        ClampedFactor { idx: Vec::with_capacity(m), l: DMatrix::zeros(m, m) }
    }

    fn len(&self) -> usize {
        self.idx.len()
    }

    /// Solves `L y = rhs` in place (first `len` entries).
    fn forward(&self, y: &mut [f64]) {
        let k = self.len();
        for i in 0..k {
            let mut v = y[i];
            for j in 0..i {
                v -= self.l[(i, j)] * y[j];
            }
            y[i] = v / self.l[(i, i)];
        }
    }

    /// Solves `Lᵀ x = y` in place.
    fn backward(&self, x: &mut [f64]) {
        let k = self.len();
        for i in (0..k).rev() {
            let mut v = x[i];
            for j in i + 1..k {
                v -= self.l[(j, i)] * x[j];
            }
            x[i] = v / self.l[(i, i)];
        }
    }

    /// Appends row/column `j` of `a` if its Schur complement exceeds `piv_tol`.
    fn try_append(&mut self, a: &DMatrix<f64>, j: usize, piv_tol: f64) -> bool {
        let k = self.len();
        let mut y: Vec<f64> = self.idx.iter().map(|&c| a[(c, j)]).collect();
        self.forward(&mut y);
        let schur = a[(j, j)] - y.iter().map(|v| v * v).sum::<f64>();
        if schur.is_nan() || schur <= piv_tol {
            return false;
        }
        for (c, v) in y.iter().enumerate() {
            self.l[(k, c)] = *v;
        }
        self.l[(k, k)] = schur.sqrt();
        self.idx.push(j);
        true
    }

    /// Removes the row at position `pos` and refactors; false if the remaining set is numerically singular.
    fn remove(&mut self, a: &DMatrix<f64>, pos: usize, piv_tol: f64) -> bool {
        let mut rest = std::mem::take(&mut self.idx);
        rest.remove(pos);
        for j in rest {
            if !self.try_append(a, j, piv_tol) {
                return false;
            }
        }
        true
    }
}

/// Solves the boxed LCP `w = A f + b`, `lo ≤ f ≤ hi` (constant bounds, `lo ≤ 0 ≤ hi`) by principal
/// pivoting. `tolerance` is relative to `max(max |b|, max|A_ii| max |f|)` for the test `w ≈ 0`.
///
/// Errors: [`Error::Dimension`] / [`Error::InvalidInput`] for inconsistent sizes or bounds,
/// [`Error::NonFinite`] for NaN/∞ in `A` or `b`, and [`Error::Numerical`] when the pivot budget is spent,
/// a drive is unbounded (no solution, or `A` not positive semi-definite) or the factor breaks down.
pub fn solve_box(
    a: &DMatrix<f64>,
    b: &DVector<f64>,
    lo: &[f64],
    hi: &[f64],
    tolerance: f64,
    max_pivots: usize,
) -> Result<DantzigOutput> {
    let m = b.len();
    if a.nrows() != m || a.ncols() != m {
        return Err(Error::Dimension { what: "Dantzig matrix A", expected: m, got: a.nrows().max(a.ncols()) });
    }
    crate::error::check_vector("Dantzig vector b", b.as_slice(), m)?;
    if let Some((index, &value)) = a.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(Error::NonFinite { what: "Dantzig matrix A", index, value });
    }
    if lo.len() != m || hi.len() != m {
        return Err(Error::Dimension { what: "Dantzig bounds", expected: m, got: lo.len().min(hi.len()) });
    }
    if let Some(i) = (0..m).find(|&i| !(lo[i] <= 0.0 && hi[i] >= 0.0)) {
        return Err(Error::InvalidInput(format!("Dantzig row {i}: bounds [{}, {}] must hold 0", lo[i], hi[i])));
    }
    let numerical = |detail: String| Error::Numerical { algorithm: "Dantzig boxed LCP", detail };

    let d_scale = {
        let d = (0..m).fold(0.0f64, |s, i| s.max(a[(i, i)].abs()));
        if d > 0.0 {
            d
        } else {
            1.0
        }
    };
    let piv_tol = PIVOT_RTOL * d_scale;
    let b_scale = amax(b.as_slice());
    let tol = if tolerance.is_finite() && tolerance > 0.0 { tolerance } else { 0.0 };

    let mut f = DVector::<f64>::zeros(m);
    let mut w = b.clone();
    let mut sets: Vec<Option<DantzigSet>> = vec![None; m];
    let mut factor = ClampedFactor::new(m);
    let mut pivots = 0usize;
    let mut dfc = vec![0.0; m];
    let mut dw = vec![0.0; m];

    for d in 0..m {
        loop {
            let w_tol = tol * b_scale.max(d_scale * amax(f.as_slice()));
            let (wd, fd) = (w[d], f[d]);
            let at_lo = fd <= lo[d];
            let at_hi = fd >= hi[d];
            if wd.abs() <= w_tol {
                sets[d] = Some(if at_lo {
                    DantzigSet::Lower
                } else if at_hi {
                    DantzigSet::Upper
                } else if factor.try_append(a, d, piv_tol) {
                    DantzigSet::Clamped
                } else {
                    DantzigSet::Frozen
                });
                break;
            }
            if wd > 0.0 && at_lo {
                sets[d] = Some(DantzigSet::Lower);
                break;
            }
            if wd < 0.0 && at_hi {
                sets[d] = Some(DantzigSet::Upper);
                break;
            }
            if pivots >= max_pivots {
                return Err(numerical(format!("pivot budget of {max_pivots} spent at row {d} of {m}")));
            }
            pivots += 1;
            let s = if wd < 0.0 { 1.0 } else { -1.0 };
            // Δf_C = −s A_CC⁻¹ A_Cd.
            let k = factor.len();
            for (p, &c) in factor.idx.iter().enumerate() {
                dfc[p] = -s * a[(c, d)];
            }
            factor.forward(&mut dfc[..k]);
            factor.backward(&mut dfc[..k]);
            let df_max = amax(&dfc[..k]).max(1.0);
            for (i, dwi) in dw.iter_mut().enumerate() {
                let mut v = s * a[(i, d)];
                for (p, &c) in factor.idx.iter().enumerate() {
                    v += a[(i, c)] * dfc[p];
                }
                *dwi = v;
            }
            let dw_tol = piv_tol * df_max;
            let df_tol = 1e-13 * df_max;

            #[derive(Clone, Copy)]
            enum Event {
                DrivenZero,
                DrivenBound,
                ClampedBound(usize, bool),
                BoundFree(usize),
            }
            let mut best_t = f64::INFINITY;
            let mut event = None;
            let mut consider = |t: f64, e: Event| {
                let t = t.max(0.0);
                if t < best_t {
                    best_t = t;
                    event = Some(e);
                }
            };
            if s * dw[d] > dw_tol {
                consider(-wd / dw[d], Event::DrivenZero);
            }
            let to_bound = if s > 0.0 { hi[d] - fd } else { fd - lo[d] };
            if to_bound.is_finite() {
                consider(to_bound, Event::DrivenBound);
            }
            for (p, &c) in factor.idx.iter().enumerate() {
                let v = dfc[p];
                if v < -df_tol && lo[c].is_finite() {
                    consider((lo[c] - f[c]) / v, Event::ClampedBound(p, false));
                } else if v > df_tol && hi[c].is_finite() {
                    consider((hi[c] - f[c]) / v, Event::ClampedBound(p, true));
                }
            }
            for j in 0..d {
                match sets[j] {
                    Some(DantzigSet::Lower) if dw[j] < -dw_tol => consider(-w[j] / dw[j], Event::BoundFree(j)),
                    Some(DantzigSet::Upper) if dw[j] > dw_tol => consider(-w[j] / dw[j], Event::BoundFree(j)),
                    Some(DantzigSet::Frozen) if dw[j].abs() > dw_tol => consider(0.0, Event::BoundFree(j)),
                    _ => {}
                }
            }
            let Some(event) = event else {
                return Err(numerical(format!("unbounded drive of row {d}: no solution or A not PSD")));
            };
            let t = best_t;
            f[d] += s * t;
            for (p, &c) in factor.idx.iter().enumerate() {
                f[c] += t * dfc[p];
            }
            for i in 0..m {
                w[i] += t * dw[i];
            }
            match event {
                Event::DrivenZero => {
                    w[d] = 0.0;
                    if !factor.try_append(a, d, piv_tol) {
                        return Err(numerical(format!("singular clamped set when adding row {d}")));
                    }
                    sets[d] = Some(DantzigSet::Clamped);
                    break;
                }
                Event::DrivenBound => {
                    if s > 0.0 {
                        f[d] = hi[d];
                        sets[d] = Some(DantzigSet::Upper);
                    } else {
                        f[d] = lo[d];
                        sets[d] = Some(DantzigSet::Lower);
                    }
                    break;
                }
                Event::ClampedBound(p, upper) => {
                    let c = factor.idx[p];
                    if upper {
                        f[c] = hi[c];
                        sets[c] = Some(DantzigSet::Upper);
                    } else {
                        f[c] = lo[c];
                        sets[c] = Some(DantzigSet::Lower);
                    }
                    if !factor.remove(a, p, piv_tol) {
                        return Err(numerical(format!("clamped set singular after row {c} left it")));
                    }
                }
                Event::BoundFree(j) => {
                    w[j] = 0.0;
                    if !factor.try_append(a, j, piv_tol) {
                        return Err(numerical(format!("singular clamped set when adding row {j}")));
                    }
                    sets[j] = Some(DantzigSet::Clamped);
                }
            }
            if f.iter().any(|v| !v.is_finite()) {
                return Err(numerical("non-finite forces".to_string()));
            }
        }
    }
    let w = a * &f + b;
    let sets = sets.into_iter().map(|s| s.unwrap_or(DantzigSet::Lower)).collect();
    Ok(DantzigOutput { f, w, sets, pivots })
}
