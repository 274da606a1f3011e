//! The modified Principal Pivoting Method with FIND-INDICES (Drumwright 2015, "Rapidly computable viscous
//! friction and no-slip rigid contact models", Algorithms 1 and 2) for the PSD contact problems of the
//! no-slip and purely viscous friction models, solved in factored form.
//!
//! The problem ([`FactoredLcp`]): `w = J M̃⁻¹ Jᵀ f + R f + b` with equality rows (`w_i = 0`, `f_i` free,
//! regularization `r_i ≥ 0`) and unilateral rows (`0 ≤ f_i ⊥ w_i ≥ 0`). [`solve`] never forms the
//! `k × k` matrix; with `k` rows on `nv` generalized velocities it costs O(k nv² + nv³) plus O(k nv) per
//! pivot (the paper's O(m³ + m² n), `m = nv`, `n = k`):
//!
//! 1. **Whitening.** `L Lᵀ = M̃` (Cholesky), `x_i = L⁻¹ j_iᵀ`: `J M̃⁻¹ Jᵀ = Xᵀ X`. O(k nv²).
//! 2. **Viscous elimination.** Equality rows with `r_i ≥ ELIMINATION_RTOL · |x_i|²` (every viscous row in
//!    practice) are folded into the mass: `f_V = −R_V⁻¹ (J_V Δv + b_V)` turns `M̃ Δv = Jᵀ f` into
//!    `(M̃ + J_Vᵀ R_V⁻¹ J_V) Δv = J_Wᵀ f_W − J_Vᵀ R_V⁻¹ b_V` — the paper's viscous term `h Sᵀ μ_v S` (eq. 15,
//!    §IV) in the mass, so these rows are not LCP variables at all. In whitened coordinates
//!    `K = I + Σ_V x_i x_iᵀ / r_i = L_K L_Kᵀ`, the remaining rows become `x̃_i = L_K⁻¹ x_i` and
//!    `b̃_i = b_i + x̃_i · c̃` with `c̃ = −L_K⁻¹ Σ_V x_i b_i / r_i`. Such rows are always independent (`S` has
//!    `r_i` on its diagonal), the same answer as giving them to FIND-INDICES first. O(|V| nv²).
//! 3. **FIND-INDICES** (`find_indices.rs`, Algorithm 2) on the other equality rows (no-slip, and any with a
//!    tiny `r`): the kept set E′ with `S = E′ E′ᵀ + R_E′` (whitened) non-singular; the dropped rows get
//!    `f = 0` and are checked afterwards (`w ≈ 0`, else the equality system is inconsistent). O(|E| s nv).
//! 4. **Elimination of E′** (eqs. 56–57 through the factors): `f_E′ = −S⁻¹ (E′ Nᵀ f_N + b̃_E′)` leaves
//!    `w_N = N P Nᵀ f_N + e`, `P = I − ẐᵀẐ`, `Ẑ = L_S⁻¹ E′`, `e = b̃_N − N Ẑᵀ L_S⁻¹ b̃_E′`. In the lifted
//!    space of FIND-INDICES (one extra coordinate per regularized row of E′) `P` is the orthogonal
//!    projector `I − Q Qᵀ`, so `F = N P Nᵀ = G Gᵀ` with `G = (I − Q Qᵀ) N̂` formed once, O(n s dim);
//!    rows with `|G_i|² ≤ rank_tolerance |N_i|²` (in the span of E′) are set to exactly zero.
//! 5. **Modified PPM I** (`pivoting.rs`, Algorithm 1) on the unilateral rows: non-basic sets of size
//!    ≤ rank (Theorem 1), a growing/shrinking Cholesky factor of `F_BB`, `w† = N a†` in O(n nv), a swap
//!    rule for degenerate (dependent) candidates, cycle detection with a least-index fallback rule.
//! 6. **Recovery**: `f_E′`, `f_V`, then `w = Xᵀ (X f) + R f + b` for all `k` rows from the original factors
//!    (O(k nv), an independent check), the residual, the classification and `Δv = M̃⁻¹ Jᵀ f`.
//!
//! If the pivoting fails (budget, cycle, infeasibility certificate, singular step) or its solution does
//! not pass the residual test, the dense problem ([`FactoredLcp::to_boxed`]) is solved by
//! [`crate::solver::lcp::solve`] (Dantzig, then Lemke/PGS) and the fallback is counted. An inconsistent
//! equality system (a dropped row with `w ≠ 0`: no solution exists) is an [`Error::Numerical`] unless
//! [`PpmOptions::allow_inconsistent`]. See `docs/lcp.md`.

mod cholesky;
mod find_indices;
mod pivoting;
mod problem;

use nalgebra::{DMatrix, DVector};

pub use problem::{FactoredLcp, PsdRow};

use crate::error::{Error, Result};
use crate::solver::lcp::{self, LcpOptions, LcpSolution, LcpStats, RowState, SolvePath};
use cholesky::cholesky;
use find_indices::find_indices;
use pivoting::{modified_ppm, PivotFailure, PivotSettings};
use problem::whiten;

/// Equality rows with `r ≥ ELIMINATION_RTOL · (J M̃⁻¹ Jᵀ)_ii` are eliminated into the effective mass
/// (step 2 of the module documentation); rows with a smaller `r > 0` go to FIND-INDICES with their `r`.
/// The bound keeps the condition number of the effective mass, and the error of the eliminated forces
/// (≈ ε |x_i|² / r_i relative), small.
pub const ELIMINATION_RTOL: f64 = 1e-4;

/// Options of [`solve`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PpmOptions {
    /// Relative tolerance of the LCP conditions (acceptance test on the residual, signs of `w` and `f` in
    /// the pivoting, classification), as in [`LcpOptions::tolerance`]. Default `1e-10`.
    pub tolerance: f64,
    /// Relative threshold on Schur-complement pivots below which a row is linearly dependent (FIND-INDICES
    /// and the non-basic set). Default `1e-10`.
    pub rank_tolerance: f64,
    /// Pivot budget of the modified PPM; `0` (the default) means `3 n + 10 nv + 50` for `n` unilateral
    /// rows.
    pub max_pivots: usize,
    /// Fall back to the dense [`lcp::solve`] when the pivoting fails. Default `true`; `false` returns
    /// [`Error::Numerical`] instead.
    pub fallback: bool,
    /// Accept a solution whose dropped (dependent) equality rows have `w ≠ 0` (an inconsistent equality
    /// system, which has no exact solution), reporting it in [`PpmStats`]. Default `false`: an error.
    pub allow_inconsistent: bool,
    /// Options of the dense fallback.
    pub lcp: LcpOptions,
}

impl Default for PpmOptions {
    fn default() -> Self {
        PpmOptions {
            tolerance: 1e-10,
            rank_tolerance: 1e-10,
            max_pivots: 0,
            fallback: true,
            allow_inconsistent: false,
            lcp: LcpOptions::default(),
        }
    }
}

impl PpmOptions {
    /// Checks that the tolerances are finite and in `(0, 1)` and the fallback's options.
    pub fn validate(&self) -> Result<()> {
        for (what, v) in [("tolerance", self.tolerance), ("rank_tolerance", self.rank_tolerance)] {
            if !(v.is_finite() && v > 0.0 && v < 1.0) {
                return Err(Error::InvalidInput(format!("PPM {what} {v} must be finite and in (0, 1)")));
            }
        }
        self.lcp.validate()
    }

    fn budget(&self, n: usize, nv: usize) -> usize {
        if self.max_pivots == 0 {
            3 * n + 10 * nv + 50
        } else {
            self.max_pivots
        }
    }
}

/// Why the modified PPM handed over to the dense fallback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PpmFailure {
    /// The pivot budget ran out.
    PivotBudget,
    /// The non-basic set repeated, also under the least-index rule.
    Cycle,
    /// A unilateral row (index into the problem's rows) certified infeasibility: its `w < 0` cannot be
    /// raised by any non-negative combination of forces.
    Infeasible {
        /// The row.
        row: usize,
    },
    /// A pivot left a numerically singular system.
    Singular,
    /// The pivoting's solution failed the residual test.
    Residual,
}

impl std::fmt::Display for PpmFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PpmFailure::PivotBudget => write!(f, "pivot budget exhausted"),
            PpmFailure::Cycle => write!(f, "the pivoting cycled"),
            PpmFailure::Infeasible { row } => write!(f, "row {row} certifies an infeasible LCP"),
            PpmFailure::Singular => write!(f, "numerically singular pivot"),
            PpmFailure::Residual => write!(f, "the pivoting's solution failed the residual test"),
        }
    }
}

/// PPM-specific statistics of a [`solve`] (the common ones are in [`LcpSolution::stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct PpmStats {
    /// Regularized equality rows eliminated into the effective mass (step 2).
    pub eliminated: usize,
    /// Equality rows kept by FIND-INDICES.
    pub kept: usize,
    /// Equality rows dropped by FIND-INDICES (`f = 0`).
    pub dropped: usize,
    /// Size of the final non-basic set of the pivoting (unilateral rows with `w = 0` imposed).
    pub nonbasic: usize,
    /// The trivial solution (`f_N = 0`) was accepted without pivoting.
    pub trivial: bool,
    /// `max |w_i|` over the dropped equality rows, relative to the velocity scale of the residual.
    pub max_dropped_w: f64,
    /// Dropped equality rows with `|w_i|` above the tolerance (an inconsistent equality system).
    pub inconsistent_rows: usize,
    /// Why the dense fallback ran, if it did.
    pub failure: Option<PpmFailure>,
}

/// A solution of a [`FactoredLcp`].
#[derive(Clone, Debug, PartialEq)]
pub struct PpmSolution {
    /// Forces, `w` (for all `k` rows, through the factors), states and the common statistics: path
    /// [`SolvePath::Ppm`] (or the fallback's), pivots, fallbacks, residual. States: equality rows are
    /// [`RowState::Clamping`] (kept or dropped); unilateral rows are `Clamping` if `f > tol`, else
    /// `Separating` if `w > tol`, else `Tied` (relative tolerances as in [`lcp::classify`]).
    pub lcp: LcpSolution,
    /// `Δv = M̃⁻¹ Jᵀ f` (`nv`), unique even where `f` is not.
    pub dv: DVector<f64>,
    /// The equality rows kept (eliminated regularized rows and FIND-INDICES' set E′), ascending.
    pub kept: Vec<usize>,
    /// The equality rows dropped by FIND-INDICES (zero force), ascending.
    pub dropped: Vec<usize>,
    /// The unilateral rows of the final non-basic set (empty after a fallback), ascending.
    pub nonbasic: Vec<usize>,
    /// PPM statistics.
    pub stats: PpmStats,
}

/// Solves a [`FactoredLcp`] with FIND-INDICES and the modified PPM (see the module documentation).
///
/// Errors: the problem's validation errors ([`FactoredLcp::validate`]), [`Error::InvalidInput`] for bad
/// options, [`Error::Numerical`] for an inconsistent equality system (unless
/// [`PpmOptions::allow_inconsistent`]), or a pivoting failure with [`PpmOptions::fallback`] off, or the
/// fallback's errors. The result never holds NaN.
pub fn solve(problem: &FactoredLcp, options: &PpmOptions) -> Result<PpmSolution> {
    problem.check()?;
    options.validate()?;
    let l = problem.mass_factor()?;
    let (k, nv) = (problem.len(), problem.dofs());
    if k == 0 {
        let lcp = LcpSolution {
            f: DVector::zeros(0),
            w: DVector::zeros(0),
            states: Vec::new(),
            stats: LcpStats { path: SolvePath::Empty, ..LcpStats::default() },
        };
        return Ok(PpmSolution {
            lcp,
            dv: DVector::zeros(nv),
            kept: Vec::new(),
            dropped: Vec::new(),
            nonbasic: Vec::new(),
            stats: PpmStats::default(),
        });
    }
    // 1. Whitening.
    let x = whiten(&l, &problem.j);
    let reg: Vec<f64> = problem.rows.iter().map(PsdRow::regularization).collect();
    let norm2: Vec<f64> = (0..k).map(|i| x.column(i).norm_squared()).collect();
    let mut d_scale = (0..k).fold(0.0f64, |m, i| m.max(norm2[i] + reg[i]));
    if !(d_scale.is_finite() && d_scale > 0.0) {
        d_scale = 1.0;
    }
    let (mut v_rows, mut e_rows, mut n_rows) = (Vec::new(), Vec::new(), Vec::new());
    for (i, row) in problem.rows.iter().enumerate() {
        match row {
            PsdRow::Equality { regularization: r } if *r > 0.0 && *r >= ELIMINATION_RTOL * norm2[i] => v_rows.push(i),
            PsdRow::Equality { .. } => e_rows.push(i),
            PsdRow::Unilateral => n_rows.push(i),
        }
    }
    // 2. Viscous elimination: x̃ = L_K⁻¹ x on the other rows, b̃ = b + x̃ · c̃.
    let viscous = eliminate_regularized(&x, &problem.b, &reg, &v_rows, &e_rows, &n_rows)?;
    let (xt, bt) = match &viscous {
        Some(v) => (&v.xt, &v.bt),
        None => (&x, &problem.b),
    };
    let x_scale = e_rows.iter().chain(&n_rows).fold(0.0f64, |m, &i| m.max(xt.column(i).norm_squared() + reg[i]));
    // 3. FIND-INDICES.
    let e_reg: Vec<f64> = e_rows.iter().map(|&i| reg[i]).collect();
    let basis = find_indices(xt, &e_rows, &e_reg, x_scale.max(f64::MIN_POSITIVE), options.rank_tolerance);
    let kept_rows: Vec<usize> = basis.kept.iter().map(|&c| e_rows[c]).collect();
    let dropped_rows: Vec<usize> = basis.dropped.iter().map(|&c| e_rows[c]).collect();
    let s = basis.len();
    let dim = basis.dim();
    let qs = basis.q.columns(0, s);
    // Ẑᵀ: the top nv rows of Q.
    let zt = qs.rows(0, nv);
    // 4. Elimination of E′ in the lifted space: g = L_S⁻¹ b̃_E′, N P = (I − Q Qᵀ) N̂ (N̂ = N lifted by
    //    zeros), e = b̃_N − (Qᵀ N̂)ᵀ g.
    let mut g: Vec<f64> = kept_rows.iter().map(|&i| bt[i]).collect();
    basis.factor.forward(&mut g);
    let g = DVector::from_vec(g);
    let n = n_rows.len();
    let n_mat = DMatrix::from_fn(nv, n, |r, c| xt[(r, n_rows[c])]);
    let mut np = DMatrix::<f64>::zeros(dim, n);
    np.rows_mut(0, nv).copy_from(&n_mat);
    let mut coef = qs.tr_mul(&np); // s × n
    np.gemm(-1.0, &qs, &coef, 1.0);
    if s > 0 {
        // Re-orthogonalization (as in FIND-INDICES): keeps N P accurate for rows nearly in span E′.
        let again = qs.tr_mul(&np);
        np.gemm(-1.0, &qs, &again, 1.0);
        coef += again;
    }
    // Rows (numerically) in the span of E′ are exactly zero after the projection.
    let mut d_ref = 0.0f64;
    for c in 0..n {
        let norm2 = n_mat.column(c).norm_squared();
        d_ref = d_ref.max(norm2);
        if np.column(c).norm_squared() <= options.rank_tolerance * norm2 {
            np.column_mut(c).fill(0.0);
        }
    }
    let e = DVector::from_fn(n, |c, _| bt[n_rows[c]]) - coef.tr_mul(&g);
    // 5. Modified PPM.
    let settings = PivotSettings {
        tolerance: options.tolerance,
        rank_tolerance: options.rank_tolerance,
        budget: options.budget(n, nv),
        d_scale: if d_ref > 0.0 && d_ref.is_finite() { d_ref } else { d_scale },
        w_scale: problem.b.amax(),
    };
    let mut pivots = 0;
    let mut stats = PpmStats {
        eliminated: v_rows.len(),
        kept: kept_rows.len(),
        dropped: dropped_rows.len(),
        ..PpmStats::default()
    };
    let mut kept: Vec<usize> = v_rows.iter().chain(&kept_rows).copied().collect();
    kept.sort_unstable();
    let outcome = modified_ppm(&np, &e, &settings, &mut pivots);
    let failure = match outcome {
        Ok(out) => {
            // 6. Recovery.
            let mut f = DVector::<f64>::zeros(k);
            for (c, &i) in n_rows.iter().enumerate() {
                f[i] = out.z[c];
            }
            // f_E′ = −L_S⁻ᵀ (Ẑ (Σ_N f_i x̃_i) + g), Ẑ = (top rows of Q)ᵀ.
            let yn = &n_mat * DVector::from_vec(out.z.clone());
            let mut h: Vec<f64> = (zt.tr_mul(&yn) + &g).iter().map(|v| -v).collect();
            basis.factor.backward(&mut h);
            for (c, &i) in kept_rows.iter().enumerate() {
                f[i] = h[c];
            }
            if let Some(v) = &viscous {
                // u = L_K⁻ᵀ (Σ_W f_i x̃_i + c̃), f_V = −(x_i · u + b_i) / r_i.
                let mut u = v.ct.clone();
                for &i in n_rows.iter().chain(&kept_rows) {
                    u.axpy(f[i], &v.xt.column(i), 1.0);
                }
                let _ = v.lk.tr_solve_lower_triangular_mut(&mut u);
                for &i in &v_rows {
                    f[i] = -(x.column(i).dot(&u) + problem.b[i]) / reg[i];
                }
            }
            let mut nonbasic: Vec<usize> = out.basis.iter().map(|&c| n_rows[c]).collect();
            nonbasic.sort_unstable();
            stats.nonbasic = nonbasic.len();
            stats.trivial = out.basis.is_empty();
            let sol = finish(problem, &l, &x, &reg, d_scale, f, &dropped_rows, options, &mut stats);
            match sol {
                Some((f, w, states, residual, dv)) => {
                    if stats.inconsistent_rows > 0 && !options.allow_inconsistent {
                        let worst = dropped_rows
                            .iter()
                            .copied()
                            .max_by(|&a, &b| w[a].abs().total_cmp(&w[b].abs()))
                            .unwrap_or(0);
                        return Err(Error::Numerical {
                            algorithm: "PPM (FIND-INDICES)",
                            detail: format!(
                                "inconsistent equality rows: {} rows linearly dependent on the kept ones keep \
                                 |w| up to {:e} (relative; row {worst}: w = {:e}); no solution exists",
                                stats.inconsistent_rows, stats.max_dropped_w, w[worst]
                            ),
                        });
                    }
                    let lcp_stats = LcpStats {
                        path: SolvePath::Ppm,
                        islands: 1,
                        pivots,
                        residual,
                        standardized: false,
                        ..LcpStats::default()
                    };
                    return Ok(PpmSolution {
                        lcp: LcpSolution { f, w, states, stats: lcp_stats },
                        dv,
                        kept,
                        dropped: dropped_rows,
                        nonbasic,
                        stats,
                    });
                }
                None => PpmFailure::Residual,
            }
        }
        Err(PivotFailure::Budget) => PpmFailure::PivotBudget,
        Err(PivotFailure::Cycle) => PpmFailure::Cycle,
        Err(PivotFailure::Singular) => PpmFailure::Singular,
        Err(PivotFailure::Infeasible(c)) => PpmFailure::Infeasible { row: n_rows[c] },
    };
    // The dense fallback.
    if !options.fallback {
        return Err(Error::Numerical { algorithm: "modified PPM", detail: format!("{failure} after {pivots} pivots") });
    }
    let boxed = problem.boxed_with(&x);
    let mut sol = lcp::solve(&boxed, &options.lcp, None)?;
    sol.stats.fallbacks += 1;
    sol.stats.pivots += pivots;
    stats.failure = Some(failure);
    stats.nonbasic = 0;
    stats.trivial = false;
    let mut u = x.clone() * &sol.f;
    let _ = l.tr_solve_lower_triangular_mut(&mut u);
    let scale_w = problem.b.amax().max(d_scale * sol.f.amax());
    stats.max_dropped_w =
        dropped_rows.iter().fold(0.0f64, |m, &i| m.max(sol.w[i].abs())) / scale_w.max(f64::MIN_POSITIVE);
    stats.inconsistent_rows = 0;
    Ok(PpmSolution { lcp: sol, dv: u, kept, dropped: dropped_rows, nonbasic: Vec::new(), stats })
}

/// The factors of the viscous elimination (step 2).
struct Regularized {
    /// `L_K` with `L_K L_Kᵀ = K = I + Σ_V x_i x_iᵀ / r_i`.
    lk: DMatrix<f64>,
    /// `x̃_i = L_K⁻¹ x_i` on the other rows (columns of eliminated rows are zero).
    xt: DMatrix<f64>,
    /// `b̃_i = b_i + x̃_i · c̃` on the other rows.
    bt: DVector<f64>,
    /// `c̃ = −L_K⁻¹ Σ_V x_i b_i / r_i`.
    ct: DVector<f64>,
}

fn eliminate_regularized(
    x: &DMatrix<f64>,
    b: &DVector<f64>,
    reg: &[f64],
    v_rows: &[usize],
    e_rows: &[usize],
    n_rows: &[usize],
) -> Result<Option<Regularized>> {
    if v_rows.is_empty() {
        return Ok(None);
    }
    let nv = x.nrows();
    let y = DMatrix::from_fn(nv, v_rows.len(), |r, c| x[(r, v_rows[c])] / reg[v_rows[c]].sqrt());
    let mut kmat = DMatrix::<f64>::identity(nv, nv);
    kmat.gemm(1.0, &y, &y.transpose(), 1.0);
    let lk = cholesky(&kmat, 1e-300).ok_or_else(|| Error::Numerical {
        algorithm: "PPM (viscous elimination)",
        detail: "the effective mass I + Σ x xᵀ / r is not positive definite".into(),
    })?;
    let mut ct = DVector::<f64>::zeros(nv);
    for &i in v_rows {
        ct.axpy(-b[i] / reg[i], &x.column(i), 1.0);
    }
    let _ = lk.solve_lower_triangular_mut(&mut ct);
    let mut xt = DMatrix::<f64>::zeros(nv, x.ncols());
    let mut bt = b.clone();
    for &i in e_rows.iter().chain(n_rows) {
        let mut col = x.column(i).into_owned();
        let _ = lk.solve_lower_triangular_mut(&mut col);
        bt[i] = b[i] + col.dot(&ct);
        xt.column_mut(i).copy_from(&col);
    }
    Ok(Some(Regularized { lk, xt, bt, ct }))
}

/// `w` through the factors, the residual, the inconsistency check and the classification; `None` if the
/// solution fails the residual test (on the rows other than the dropped ones).
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
fn finish(
    problem: &FactoredLcp,
    l: &DMatrix<f64>,
    x: &DMatrix<f64>,
    reg: &[f64],
    d: f64,
    f: DVector<f64>,
    dropped: &[usize],
    options: &PpmOptions,
    stats: &mut PpmStats,
) -> Option<(DVector<f64>, DVector<f64>, Vec<RowState>, f64, DVector<f64>)> {
    let k = problem.len();
    if f.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let u = x * &f;
    let mut w = x.tr_mul(&u) + &problem.b;
    for i in 0..k {
        w[i] += reg[i] * f[i];
    }
    if w.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut scale_w = problem.b.amax().max(d * f.amax());
    if !(scale_w.is_finite() && scale_w > 0.0) {
        scale_w = f64::MIN_POSITIVE;
    }
    let (tw, tf) = (options.tolerance * scale_w, options.tolerance * scale_w / d);
    let mut is_dropped = vec![false; k];
    for &i in dropped {
        is_dropped[i] = true;
    }
    let mut residual = 0.0f64;
    let mut residual_kept = 0.0f64;
    let mut states = Vec::with_capacity(k);
    for i in 0..k {
        let (r, state) = match problem.rows[i] {
            PsdRow::Equality { .. } => (w[i].abs(), RowState::Clamping),
            PsdRow::Unilateral => {
                // Natural map |d f − max(d f − w, 0)| = |min(d f, w)| for f ≥ 0 … and the bound violation.
                let xf = d * f[i];
                let r = (xf - (xf - w[i]).max(0.0)).abs();
                let state = if f[i] > tf {
                    RowState::Clamping
                } else if w[i] > tw {
                    RowState::Separating
                } else {
                    RowState::Tied
                };
                (r, state)
            }
        };
        states.push(state);
        residual = residual.max(r);
        if !is_dropped[i] {
            residual_kept = residual_kept.max(r);
        }
    }
    residual /= scale_w;
    residual_kept /= scale_w;
    stats.max_dropped_w = dropped.iter().fold(0.0f64, |m, &i| m.max(w[i].abs())) / scale_w;
    stats.inconsistent_rows = dropped.iter().filter(|&&i| w[i].abs() > tw).count();
    if residual_kept > options.tolerance {
        return None;
    }
    let mut dv = u;
    let _ = l.tr_solve_lower_triangular_mut(&mut dv);
    Some((f, w, states, residual, dv))
}
