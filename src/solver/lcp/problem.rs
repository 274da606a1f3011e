//! The boxed LCP problem with friction-coupled bounds ([`BoxedLcp`], [`RowBound`]), its validation,
//! the row classification of a solution ([`classify`], the sets C, S, U, T of DiffDART §4 and App. A.2)
//! and the scale-aware residual of the LCP conditions ([`residual`]).
//!
//! The problem is: find `f`, `w` with `w = A f + b` and, for each row `i` with bounds `[lo_i, hi_i]`,
//! `lo_i < f_i < hi_i ⇒ w_i = 0`, `f_i = lo_i ⇒ w_i ≥ 0`, `f_i = hi_i ⇒ w_i ≤ 0`. Friction rows have the
//! bounds `±μ f_normal` (DiffDART App. A.2).

use nalgebra::{DMatrix, DVector};

use crate::error::{Error, Result};

/// Bounds of one row of a [`BoxedLcp`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RowBound {
    /// Constant box lo <= f <= hi with lo <= 0 <= hi (lo may be -inf, hi +inf). Unilateral: lo = 0, hi = +inf.
    Box {
        /// Lower bound (`≤ 0`, may be `-∞`).
        lo: f64,
        /// Upper bound (`≥ 0`, may be `+∞`).
        hi: f64,
    },
    /// Friction row: `-mu * f[normal] <= f <= mu * f[normal]`, where `normal` indexes a unilateral row
    /// (Box { lo: 0, hi: inf }). mu >= 0.
    Friction {
        /// Index of the unilateral normal row this row's bounds follow.
        normal: usize,
        /// Friction coefficient (finite, `≥ 0`).
        mu: f64,
    },
}

impl RowBound {
    /// The unilateral bound `0 ≤ f < ∞` of a contact normal row.
    pub const UNILATERAL: RowBound = RowBound::Box { lo: 0.0, hi: f64::INFINITY };

    /// Whether this is the unilateral box `[0, +∞)`.
    pub fn is_unilateral(&self) -> bool {
        matches!(*self, RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY)
    }
}

/// Classification of one row of a solution (DiffDART §4 / App. A.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowState {
    /// Strictly inside its bounds, w = 0 (set C).
    Clamping,
    /// At a bound equal to zero (f = 0) with w strictly on the feasible side (set S).
    Separating,
    /// At a non-zero bound: for a Box row f = lo (sign -1) or f = hi (sign +1), lo/hi != 0; for a friction
    /// row `f = sign * mu * f[normal]` with `f[normal] > 0` (set U; its value follows the normal, the E map).
    AtBound {
        /// `-1` at the lower bound, `+1` at the upper bound.
        sign: i8,
    },
    /// At a zero bound with |w| <= tolerance (set T: f = 0 and w = 0).
    Tied,
}

/// A boxed (mixed) LCP `w = A f + b` with per-row bounds, friction rows bounded by their normal force.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxedLcp {
    /// The `m × m` matrix (for contact: the Delassus operator `J M⁻¹ Jᵀ`, symmetric positive semi-definite).
    pub a: DMatrix<f64>,
    /// The `m` offsets (for contact: the free relative velocities).
    pub b: DVector<f64>,
    /// The `m` row bounds.
    pub bounds: Vec<RowBound>,
    /// An optional tall factor `L` (`m × d`, `d < m`) with `A = L Lᵀ` up to round-off: for contact,
    /// `J M̃⁻ᵀᐟ²`, the rows of the Delassus operator in a basis of the island's `d` dofs. With it, the
    /// standardized solves of large clamping sets work in `O(k d²)` instead of `O(k³)`
    /// ([`crate::math::min_norm_solve_factored`]). `None` for a general `A`.
    pub factor: Option<DMatrix<f64>>,
    /// The caller vouches that `A` is positive definite (for contact: every row
    /// regularized, `J M̃⁻¹ Jᵀ + R` with `R > 0`, as in the position stage). A frictionless
    /// problem with such an `A` has one solution, which the search accepts as found,
    /// without minimum-norm re-solves ([`BoxedLcp::unique`]). `false` for a general `A`.
    pub positive_definite: bool,
}

impl BoxedLcp {
    /// Builds a problem after checking it: `A` is `m × m` with `m = b.len() = bounds.len()`, `A` and `b`
    /// are finite, every box has `lo ≤ 0 ≤ hi` (no NaN), every friction row names another row that is
    /// unilateral (`Box { lo: 0, hi: ∞ }`) and has a finite `μ ≥ 0`.
    pub fn new(a: DMatrix<f64>, b: DVector<f64>, bounds: Vec<RowBound>) -> Result<Self> {
        let problem = BoxedLcp { a, b, bounds, factor: None, positive_definite: false };
        problem.validate()?;
        Ok(problem)
    }

    /// Attaches the factor `L` with `A = L Lᵀ` (see [`BoxedLcp::factor`]) after checking that it has
    /// `m` rows and is finite. The caller vouches for `A = L Lᵀ`; only the standardized solves use `L`.
    pub fn with_factor(mut self, l: DMatrix<f64>) -> Result<Self> {
        self.factor = Some(l);
        self.validate_factor()?;
        Ok(self)
    }

    /// Marks `A` positive definite (see [`BoxedLcp::positive_definite`]); the caller
    /// vouches for it, nothing checks it.
    pub fn with_positive_definite(mut self) -> Self {
        self.positive_definite = true;
        self
    }

    /// Whether the problem has exactly one solution that needs no standardization: `A` is
    /// positive definite ([`BoxedLcp::positive_definite`]) and every row has fixed
    /// bounds (no friction row, whose bounds follow its normal force). Every reduced
    /// system `A_CC f_C = −b̂_C` is then positive definite, so the standardized solution
    /// of a valid classification is the solution itself.
    pub fn unique(&self) -> bool {
        self.positive_definite && self.bounds.iter().all(|b| matches!(b, RowBound::Box { .. }))
    }

    /// The factor's part of [`BoxedLcp::validate`].
    fn validate_factor(&self) -> Result<()> {
        if let Some(l) = &self.factor {
            let m = self.b.len();
            if l.nrows() != m {
                return Err(Error::Dimension { what: "LCP factor L (rows)", expected: m, got: l.nrows() });
            }
            if let Some((index, &value)) = l.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite { what: "LCP factor L (column-major)", index, value });
            }
        }
        Ok(())
    }

    /// Number of rows `m`.
    pub fn len(&self) -> usize {
        self.b.len()
    }

    /// Whether the problem has no rows.
    pub fn is_empty(&self) -> bool {
        self.b.is_empty()
    }

    /// Re-checks the conditions of [`BoxedLcp::new`] (the fields are public, so a problem may have been
    /// changed after construction).
    pub fn validate(&self) -> Result<()> {
        let m = self.b.len();
        if self.a.nrows() != m {
            return Err(Error::Dimension { what: "LCP matrix A (rows)", expected: m, got: self.a.nrows() });
        }
        if self.a.ncols() != m {
            return Err(Error::Dimension { what: "LCP matrix A (columns)", expected: m, got: self.a.ncols() });
        }
        if self.bounds.len() != m {
            return Err(Error::Dimension { what: "LCP bounds", expected: m, got: self.bounds.len() });
        }
        if !all_finite(self.a.as_slice()) {
            if let Some((index, &value)) = self.a.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::NonFinite { what: "LCP matrix A (column-major)", index, value });
            }
        }
        if let Some((index, &value)) = self.b.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(Error::NonFinite { what: "LCP vector b", index, value });
        }
        self.validate_factor()?;
        for (i, bound) in self.bounds.iter().enumerate() {
            match *bound {
                RowBound::Box { lo, hi } => {
                    if lo.is_nan() || hi.is_nan() || lo > 0.0 || hi < 0.0 {
                        return Err(Error::InvalidInput(format!(
                            "LCP row {i}: box bounds [{lo}, {hi}] must satisfy lo <= 0 <= hi"
                        )));
                    }
                }
                RowBound::Friction { normal, mu } => {
                    if !mu.is_finite() || mu < 0.0 {
                        return Err(Error::InvalidInput(format!(
                            "LCP row {i}: friction coefficient {mu} must be finite and >= 0"
                        )));
                    }
                    if normal >= m || normal == i {
                        return Err(Error::InvalidInput(format!(
                            "LCP row {i}: friction normal index {normal} is not another row of {m}"
                        )));
                    }
                    if !self.bounds[normal].is_unilateral() {
                        return Err(Error::InvalidInput(format!(
                            "LCP row {i}: friction normal row {normal} is not unilateral (Box {{ lo: 0, hi: inf }})"
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// The bounds `(lo, hi)` of row `i` at the force `f` (friction rows: `∓μ max(f[normal], 0)`).
    pub(crate) fn bounds_at(&self, i: usize, f: &[f64]) -> (f64, f64) {
        bounds_at(&self.bounds[i], f)
    }
}

/// The bounds `(lo, hi)` of a row at the force `f` (a missing normal counts as zero force).
pub(crate) fn bounds_at(bound: &RowBound, f: &[f64]) -> (f64, f64) {
    match *bound {
        RowBound::Box { lo, hi } => (lo, hi),
        RowBound::Friction { normal, mu } => {
            let fn_ = f.get(normal).copied().unwrap_or(0.0).max(0.0);
            let c = mu * fn_;
            (-c, c)
        }
    }
}

/// Whether every entry is finite, in one branch-free pass: `0 · x` is 0 for a finite `x` and
/// NaN otherwise, summed in eight independent lanes (the scan of a large `A` vectorizes).
fn all_finite(x: &[f64]) -> bool {
    let mut acc = [0.0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (s, v) in acc.iter_mut().zip(c) {
            *s += v * 0.0;
        }
    }
    acc.iter().chain(rest).all(|v| v.is_finite())
}

/// Maximum absolute value of a slice (0 for an empty one; NaN is ignored).
pub(crate) fn amax(x: &[f64]) -> f64 {
    x.iter().fold(0.0f64, |m, v| m.max(v.abs()))
}

/// The scales the relative tolerances refer to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scales {
    /// `max_i |A_ii|` (`max |A_ij|` if the diagonal is zero, `1` for a zero matrix): converts forces to
    /// velocities.
    pub d: f64,
    /// Velocity scale `max(max |b|, d · max |f|)` (never zero).
    pub w: f64,
}

impl Scales {
    /// Scales of a problem at the force `f` (or at `f = 0`).
    pub fn new(a: &DMatrix<f64>, b: &DVector<f64>, f: Option<&[f64]>) -> Self {
        let n = a.nrows().min(a.ncols());
        let mut d = (0..n).fold(0.0f64, |m, i| m.max(a[(i, i)].abs()));
        if d.is_nan() || d <= 0.0 {
            d = amax(a.as_slice());
        }
        if !d.is_finite() || d <= 0.0 {
            d = 1.0;
        }
        let mut w = amax(b.as_slice());
        if let Some(f) = f {
            w = w.max(d * amax(f));
        }
        if !w.is_finite() || w <= 0.0 {
            w = if w.is_finite() { f64::MIN_POSITIVE } else { f64::MAX };
        }
        Scales { d, w }
    }

    /// Force scale `w / d`.
    pub fn f(&self) -> f64 {
        self.w / self.d
    }
}

fn sizes_agree(problem: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>) -> bool {
    let m = problem.b.len();
    problem.a.nrows() == m && problem.a.ncols() == m && problem.bounds.len() == m && f.len() == m && w.len() == m
}

/// Classifies each row of a (possibly approximate) solution into the sets C, S, U, T.
///
/// `tolerance` is relative: forces are compared to `tolerance · max(max |b|, d max |f|) / d` and
/// velocities to `tolerance · max(max |b|, d max |f|)` with `d = max |A_ii|`. A row at a bound whose `w`
/// points to the wrong side by more than the tolerance (not a solution there) is reported as
/// [`RowState::Clamping`], the state it would move to. Rows whose two bounds are zero (a friction row
/// whose normal force is zero) are [`RowState::Separating`] or [`RowState::Tied`]. Returns an empty
/// vector when the sizes of the problem, `f` and `w` disagree.
pub fn classify(problem: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>, tolerance: f64) -> Vec<RowState> {
    if !sizes_agree(problem, f, w) {
        return Vec::new();
    }
    let tol = if tolerance.is_finite() && tolerance > 0.0 { tolerance } else { 0.0 };
    let scales = Scales::new(&problem.a, &problem.b, Some(f.as_slice()));
    let tw = tol * scales.w;
    let tf = tol * scales.f();
    let fs = f.as_slice();
    (0..problem.b.len())
        .map(|i| {
            let (lo, hi) = problem.bounds_at(i, fs);
            let (fi, wi) = (f[i], w[i]);
            let zero_lo = lo.abs() <= tf;
            let zero_hi = hi.abs() <= tf;
            let tied_or_sep = if wi.abs() <= tw { RowState::Tied } else { RowState::Separating };
            if zero_lo && zero_hi {
                return tied_or_sep;
            }
            let at_lo = fi - lo <= tf;
            let at_hi = hi - fi <= tf;
            let lower = at_lo && (!at_hi || wi >= 0.0);
            if lower {
                if wi < -tw {
                    RowState::Clamping
                } else if zero_lo {
                    tied_or_sep
                } else {
                    RowState::AtBound { sign: -1 }
                }
            } else if at_hi {
                if wi > tw {
                    RowState::Clamping
                } else if zero_hi {
                    tied_or_sep
                } else {
                    RowState::AtBound { sign: 1 }
                }
            } else {
                RowState::Clamping
            }
        })
        .collect()
}

/// Scale-aware maximum violation of the LCP conditions by `(f, w)`: the larger of
/// `max_i |w_i − (A f + b)_i|` and the natural-map residual `max_i |d f_i − clamp(d f_i − w_i, d lo_i, d hi_i)|`
/// (bounds at `f`), both divided by the velocity scale `max(max |b|, d max |f|)`, `d = max |A_ii|`.
/// Zero exactly at a solution; it measures both bound violations and complementarity. Returns `+∞` when
/// the sizes disagree or a value is not finite.
pub fn residual(problem: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>) -> f64 {
    residual_with(problem, f, w, true)
}

/// [`residual`] of a `w` that the caller computed as `A f + b` (`&problem.a * f + &problem.b`): the
/// equation term would recompute that product (equal up to the order of the sums, a few ulps) and is
/// skipped, so the check costs `O(m)` instead of `O(m²)`.
pub(crate) fn residual_of_product(problem: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>) -> f64 {
    residual_with(problem, f, w, false)
}

fn residual_with(problem: &BoxedLcp, f: &DVector<f64>, w: &DVector<f64>, equation: bool) -> f64 {
    if !sizes_agree(problem, f, w) {
        return f64::INFINITY;
    }
    if f.iter().chain(w.iter()).any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let scales = Scales::new(&problem.a, &problem.b, Some(f.as_slice()));
    let d = scales.d;
    let fs = f.as_slice();
    let m = problem.b.len();
    // `b_i + Σ_j A_ij f_j`, accumulated column by column (the storage order of `A`) but
    // in the same order for each row as a row-by-row sum: the same values, bitwise.
    let af = equation.then(|| {
        let mut af = problem.b.clone();
        for j in 0..m {
            let fj = f[j];
            for (x, a) in af.iter_mut().zip(problem.a.column(j).iter()) {
                *x += a * fj;
            }
        }
        af
    });
    let mut worst = 0.0f64;
    for i in 0..m {
        let eq = af.as_ref().map_or(0.0, |af| (w[i] - af[i]).abs());
        let (lo, hi) = problem.bounds_at(i, fs);
        let x = d * f[i];
        let mut p = x - w[i];
        if p < d * lo {
            p = d * lo;
        }
        if p > d * hi {
            p = d * hi;
        }
        let nat = (x - p).abs();
        let r = eq.max(nat);
        if r.is_nan() {
            return f64::INFINITY;
        }
        worst = worst.max(r);
    }
    worst / scales.w
}
