//! The contact mode of a solution of the dual NCP `w = A f + b` ([`super::NcpSolver`]):
//! which rows hold their velocity, which are held at a force, and the state of each
//! isotropic friction cone; and, in that mode, the minimum-norm forces (the NCP's
//! analogue of the boxed LCP's standardized solution, DiffDART App. A.1).
//!
//! Rows other than friction rows:
//!
//! ```text
//! holds (w_i = 0):        an active unilateral row (f_i > tol/r_i, or a tied one |w_i| ≤ tol
//!                         when tied rows are taken as active), an equality, a box row inside
//!                         its box
//! fixed (f_i = value):    a separating unilateral row (0), a box row at a bound
//! ```
//!
//! A cone (the friction rows of one normal, coefficient μ) is inactive (`f_t = 0`) when its
//! normal is fixed or carries no force (unless its normal is a tied row taken as active),
//! sticking (`w_t = 0`) when it slips by at most `10 tol`, sliding otherwise
//! (`f_t = −μ f_n ŵ`, `ŵ = w_t/|w_t|`).
//!
//! **Minimum-norm forces.** Each sliding two-row cone is turned into its slip frame: the
//! row along `ŵ` carries `f_∥ = −μ f_n` (a friction row at its bound following its normal),
//! the row across it holds `w_⊥ + (|w_t|/(μ f_n)) f_⊥ = 0` (the linearization of
//! `f_t = −μ f_n ŵ` across the slip: a clamping row with that compliance; at the solution
//! both `w_⊥` and `f_⊥` are zero). With C the rows that hold their velocity, U the rows
//! along the slips and `E` their map `f_U = E f_C`, and B the fixed rows,
//!
//! ```text
//! (A_CC + A_CU E + R_C) f_C = −(b_C + A_CB f_B)
//! ```
//!
//! is solved in the minimum-norm sense. Redundant contacts (a box on four corners) make it
//! singular: the Newton iterate is one of its solutions, the minimum-norm one is the
//! solution the simulator's backward pass differentiates (its pseudo-inverse is of the same
//! matrix), and the one that moves smoothly with the problem.

use crate::error::{Error, Result};
use crate::math::{full_rank_solve, full_rank_solve_factored, min_norm_solve, min_norm_solve_factored};
use crate::solver::lcp::{RowBound, RowState, FACTORED_MIN_ROWS, RANK_RTOL};
use nalgebra::{DMatrix, DVector};

/// The friction rows that follow one normal row: one isotropic cone.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Cone {
    /// The normal row.
    pub normal: usize,
    /// Its friction rows.
    pub rows: Vec<usize>,
    /// Their friction coefficient.
    pub mu: f64,
}

/// The cones of a problem: its friction rows grouped by the normal they follow.
/// Errors: a friction row that follows a row that is not unilateral, or rows of one normal
/// with different coefficients.
pub(crate) fn cones(bounds: &[RowBound]) -> Result<Vec<Cone>> {
    let mut cones: Vec<Cone> = vec![];
    for (i, b) in bounds.iter().enumerate() {
        if let RowBound::Friction { normal, mu } = *b {
            if normal >= bounds.len() || !bounds[normal].is_unilateral() {
                return Err(Error::InvalidInput(format!(
                    "NCP solver: friction row {i} follows row {normal}, which is not a unilateral normal row"
                )));
            }
            match cones.iter_mut().find(|c| c.normal == normal) {
                Some(c) if c.mu == mu => c.rows.push(i),
                Some(_) => {
                    return Err(Error::InvalidInput(format!(
                        "NCP solver: the friction rows of normal row {normal} disagree on μ"
                    )))
                }
                None => cones.push(Cone { normal, rows: vec![i], mu }),
            }
        }
    }
    Ok(cones)
}

/// Turns rows and columns `t1, t2` of `a` and entries of `b` by `(c, s)`: `T A Tᵀ`, `T b`
/// with `T` the identity but for `[[c, s], [−s, c]]` on `t1, t2`.
fn turn(a: &mut DMatrix<f64>, b: &mut DVector<f64>, [t1, t2]: [usize; 2], c: f64, s: f64) {
    turn_rows(a, [t1, t2], c, s);
    for k in 0..a.nrows() {
        (a[(k, t1)], a[(k, t2)]) = (c * a[(k, t1)] + s * a[(k, t2)], -s * a[(k, t1)] + c * a[(k, t2)]);
    }
    (b[t1], b[t2]) = (c * b[t1] + s * b[t2], -s * b[t1] + c * b[t2]);
}

/// Turns rows `t1, t2` of `x` by `(c, s)`: `T X`.
fn turn_rows(x: &mut DMatrix<f64>, [t1, t2]: [usize; 2], c: f64, s: f64) {
    for k in 0..x.ncols() {
        (x[(t1, k)], x[(t2, k)]) = (c * x[(t1, k)] + s * x[(t2, k)], -s * x[(t1, k)] + c * x[(t2, k)]);
    }
}

/// What a row other than a friction row does in a mode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum RowMode {
    /// `w_i = 0`.
    Holds,
    /// `f_i` is this value (0, or a box bound).
    Fixed(f64),
    /// A friction row: its cone's mode says.
    Friction,
}

/// The state of one isotropic cone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ConeMode {
    /// `f_t = 0`.
    Inactive,
    /// `w_t = 0`.
    Sticking,
    /// `f_t = −μ f_n ŵ`; `slip = |w_t|`.
    Sliding { slip: f64 },
}

/// A sliding two-row cone, in its slip frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SlidingCone {
    /// Its normal row.
    pub normal: usize,
    /// Its two friction rows.
    pub rows: [usize; 2],
    /// The unit slip `ŵ = w_t/|w_t|` in the basis of its rows.
    pub direction: [f64; 2],
    /// `|w_t|/(μ f_n)`: the compliance of the row across the slip in the linearization.
    pub compliance: f64,
}

/// The contact mode of a solution (module notes).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Mode {
    /// Per row.
    pub rows: Vec<RowMode>,
    /// Per cone (in the order of [`cones`]).
    pub cones: Vec<ConeMode>,
}

impl Mode {
    /// The mode of `(f, w)` with the tolerance `tol` (velocity units; `r` the rows'
    /// scales, so that `tol/r_i` is a force). `tied_active`: a unilateral row with
    /// `f_i ≤ tol/r_i` and `|w_i| ≤ tol` holds its velocity (else it is fixed at zero).
    pub fn classify(
        bounds: &[RowBound],
        cones: &[Cone],
        f: &DVector<f64>,
        w: &DVector<f64>,
        r: &[f64],
        tol: f64,
        tied_active: bool,
    ) -> Mode {
        let rows: Vec<RowMode> = (0..f.len())
            .map(|i| {
                let ftol = tol / r[i];
                match bounds[i] {
                    RowBound::Friction { .. } => RowMode::Friction,
                    RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY => {
                        if f[i] > ftol || (tied_active && w[i].abs() <= tol) {
                            RowMode::Holds
                        } else {
                            RowMode::Fixed(0.0)
                        }
                    }
                    RowBound::Box { lo, hi } if lo == f64::NEG_INFINITY && hi == f64::INFINITY => RowMode::Holds,
                    RowBound::Box { lo, hi } if f[i] > lo + ftol && f[i] < hi - ftol => RowMode::Holds,
                    RowBound::Box { lo, hi } => {
                        let at_lo = (f[i] - lo).abs() <= (f[i] - hi).abs();
                        RowMode::Fixed(match (at_lo, lo.is_finite(), hi.is_finite()) {
                            (true, true, _) | (false, true, false) => lo,
                            _ => hi,
                        })
                    }
                }
            })
            .collect();
        let cones = cones
            .iter()
            .map(|c| {
                let slip = c.rows.iter().map(|&t| w[t] * w[t]).sum::<f64>().sqrt();
                let loaded = f[c.normal] > tol / r[c.normal];
                match rows[c.normal] {
                    RowMode::Holds if c.mu > 0.0 && slip <= 10.0 * tol => ConeMode::Sticking,
                    RowMode::Holds if c.mu > 0.0 && (loaded || tied_active) => ConeMode::Sliding { slip },
                    _ => ConeMode::Inactive,
                }
            })
            .collect();
        Mode { rows, cones }
    }

    /// `(Q, P)` of the mode's conditions `F(f, w) = 0` at `(f, w)`, dense: `w_i = 0` on the
    /// rows that hold, `f_i = value` on the fixed rows and on inactive cones, `w_t = 0` on
    /// sticking cones, `f_t + μ f_n ŵ = 0` on sliding ones.
    pub fn jacobians(&self, cones: &[Cone], f: &DVector<f64>, w: &DVector<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
        let m = f.len();
        let (mut q, mut p) = (DMatrix::zeros(m, m), DMatrix::zeros(m, m));
        for (i, mode) in self.rows.iter().enumerate() {
            match mode {
                RowMode::Holds => p[(i, i)] = 1.0,
                RowMode::Fixed(_) => q[(i, i)] = 1.0,
                RowMode::Friction => {}
            }
        }
        for (cone, mode) in cones.iter().zip(&self.cones) {
            let (n, ts, mu) = (cone.normal, &cone.rows, cone.mu);
            match *mode {
                ConeMode::Inactive => ts.iter().for_each(|&t| q[(t, t)] = 1.0),
                ConeMode::Sticking => ts.iter().for_each(|&t| p[(t, t)] = 1.0),
                ConeMode::Sliding { slip } => {
                    for (a_i, &t) in ts.iter().enumerate() {
                        q[(t, t)] = 1.0;
                        q[(t, n)] = mu * w[t] / slip;
                        for (b_i, &s) in ts.iter().enumerate() {
                            let delta = if a_i == b_i { 1.0 } else { 0.0 };
                            p[(t, s)] = mu * f[n] * (delta - w[t] * w[s] / (slip * slip)) / slip;
                        }
                    }
                }
            }
        }
        (q, p)
    }

    /// The rows' states (for reporting, in the rows' own basis): rows that hold clamp,
    /// rows fixed at zero separate, rows fixed at a nonzero bound are at it; a sticking
    /// cone's rows clamp, an inactive cone's separate, a sliding cone's are at their bound
    /// (the sign of their force).
    pub fn states(&self, bounds: &[RowBound], cones: &[Cone], f: &DVector<f64>) -> Vec<RowState> {
        let mut states: Vec<RowState> = self
            .rows
            .iter()
            .zip(bounds)
            .map(|(mode, bound)| match (*mode, *bound) {
                (RowMode::Holds, _) => RowState::Clamping,
                (RowMode::Fixed(v), RowBound::Box { lo, .. }) if v != 0.0 => {
                    RowState::AtBound { sign: if v == lo { -1 } else { 1 } }
                }
                _ => RowState::Separating,
            })
            .collect();
        for (cone, mode) in cones.iter().zip(&self.cones) {
            for &t in &cone.rows {
                states[t] = match mode {
                    ConeMode::Inactive => RowState::Separating,
                    ConeMode::Sticking => RowState::Clamping,
                    ConeMode::Sliding { .. } => RowState::AtBound { sign: if f[t] < 0.0 { -1 } else { 1 } },
                };
            }
        }
        states
    }

    /// The sliding two-row cones at `(f, w)`, in their slip frames.
    pub fn sliding(&self, cones: &[Cone], f: &DVector<f64>, w: &DVector<f64>) -> Vec<SlidingCone> {
        cones
            .iter()
            .zip(&self.cones)
            .filter_map(|(cone, mode)| match (mode, cone.rows.as_slice()) {
                (ConeMode::Sliding { .. }, &[t1, t2]) => {
                    let slip = w[t1].hypot(w[t2]);
                    Some(SlidingCone {
                        normal: cone.normal,
                        rows: [t1, t2],
                        direction: [w[t1] / slip, w[t2] / slip],
                        compliance: slip / (cone.mu * f[cone.normal]),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// The mode's minimum-norm forces (module notes) from the solution `(f, w)` that
    /// defines the slip frames; `None` when the mode has a sliding cone of other than two
    /// rows or the solve fails.
    ///
    /// `factor`: a tall `L` (`m × d`) with `A = L Lᵀ` (the island's rows in a basis of its
    /// `d` dofs). With more rows that hold than `d`, none with a compliance, the reduced
    /// matrix is used in its factored form `L_C N_Cᵀ` (`N_C = L_C + E`'s rows of `L_U`).
    /// As in the boxed LCP's standardized solves, a plain solve certified to have full
    /// rank is tried first ([`full_rank_solve_factored`] on the factors,
    /// [`full_rank_solve`] on the reduced matrix: the minimum-norm solution up to
    /// rounding, without an eigendecomposition); where the certificate fails, the
    /// pseudo-inverse solves ([`min_norm_solve_factored`], `O(k d²)`, from
    /// [`FACTORED_MIN_ROWS`] rows; [`min_norm_solve`] below).
    #[allow(clippy::too_many_arguments)]
    pub fn min_norm_forces(
        &self,
        a: &DMatrix<f64>,
        b: &DVector<f64>,
        cones: &[Cone],
        f: &DVector<f64>,
        w: &DVector<f64>,
        factor: Option<&DMatrix<f64>>,
    ) -> Option<DVector<f64>> {
        let m = f.len();
        // `A` and `b` turned into the slip frames (`T A Tᵀ`, `T b`), each turn applied to
        // its two rows and columns in place; each row's role.
        let (mut at, mut bt) = (a.clone(), b.clone());
        let mut turns: Vec<([usize; 2], f64, f64)> = vec![];
        let mut reg = vec![0.0; m];
        let mut holds: Vec<bool> = self.rows.iter().map(|x| *x == RowMode::Holds).collect();
        let mut fixed: Vec<Option<f64>> =
            self.rows.iter().map(|x| if let RowMode::Fixed(v) = x { Some(*v) } else { None }).collect();
        // Rows along a slip: (row, normal, −μ).
        let mut along: Vec<(usize, usize, f64)> = vec![];
        for (cone, mode) in cones.iter().zip(&self.cones) {
            match (mode, cone.rows.as_slice()) {
                (ConeMode::Inactive, rows) => rows.iter().for_each(|&i| fixed[i] = Some(0.0)),
                (ConeMode::Sticking, rows) => rows.iter().for_each(|&i| holds[i] = true),
                (ConeMode::Sliding { slip }, &[t1, t2]) => {
                    let (c, s) = (w[t1] / slip, w[t2] / slip);
                    turn(&mut at, &mut bt, [t1, t2], c, s);
                    turns.push(([t1, t2], c, s));
                    along.push((t1, cone.normal, -cone.mu));
                    // Across the slip: the compliance at the iterate's normal force; a tied
                    // normal (no force yet) holds the row at zero force instead.
                    if f[cone.normal] > 0.0 {
                        holds[t2] = true;
                        reg[t2] = slip / (cone.mu * f[cone.normal]);
                    } else {
                        fixed[t2] = Some(0.0);
                    }
                }
                (ConeMode::Sliding { .. }, _) => return None,
            }
        }
        let c_rows: Vec<usize> = (0..m).filter(|&i| holds[i]).collect();
        let mut position = vec![usize::MAX; m];
        for (k, &i) in c_rows.iter().enumerate() {
            position[i] = k;
        }
        let k = c_rows.len();
        let mut rhs = DVector::from_fn(k, |i, _| -bt[c_rows[i]]);
        for (i, &ci) in c_rows.iter().enumerate() {
            for (j, v) in fixed.iter().enumerate() {
                if let Some(v) = v {
                    rhs[i] -= at[(ci, j)] * v;
                }
            }
        }
        let factored = factor.filter(|l| l.ncols() < k && c_rows.iter().all(|&i| reg[i] == 0.0));
        let dense = || {
            let mut ahat = DMatrix::from_fn(k, k, |i, j| at[(c_rows[i], c_rows[j])]);
            for (i, &ci) in c_rows.iter().enumerate() {
                ahat[(i, i)] += reg[ci];
                for &(u, n, e) in &along {
                    ahat[(i, position[n])] += at[(ci, u)] * e;
                }
            }
            ahat
        };
        let fc = match factored {
            Some(l) => {
                // The factor's rows turned alike (`T L`), then `L_C` and `N_C`.
                let mut lt = l.clone();
                for &(rows, c, s) in &turns {
                    turn_rows(&mut lt, rows, c, s);
                }
                let lc = lt.select_rows(c_rows.iter());
                let nc = (!along.is_empty()).then(|| {
                    let mut nc = lc.clone();
                    for &(u, n, e) in &along {
                        let row = lt.row(u) * e;
                        let mut target = nc.row_mut(position[n]);
                        target += row;
                    }
                    nc
                });
                match full_rank_solve_factored(&lc, nc.as_ref(), &rhs) {
                    Some(fc) => fc,
                    None if k >= FACTORED_MIN_ROWS => min_norm_solve_factored(&lc, nc.as_ref(), &rhs, RANK_RTOL)?,
                    None => min_norm_solve(&dense(), &rhs, RANK_RTOL)?,
                }
            }
            None => {
                let ahat = dense();
                match full_rank_solve(&ahat, &rhs, along.is_empty()) {
                    Some(fc) => fc,
                    None => min_norm_solve(&ahat, &rhs, RANK_RTOL)?,
                }
            }
        };
        let mut ft = DVector::zeros(m);
        for (i, &ci) in c_rows.iter().enumerate() {
            ft[ci] = fc[i];
        }
        for (i, v) in fixed.iter().enumerate() {
            if let Some(v) = v {
                ft[i] = *v;
            }
        }
        for &(u, n, e) in &along {
            ft[u] = e * ft[n];
        }
        // Back from the slip frames: `f = Tᵀ f'`.
        let mut out = ft;
        for &([t1, t2], c, s) in &turns {
            let (x, y) = (out[t1], out[t2]);
            (out[t1], out[t2]) = (c * x - s * y, s * x + c * y);
        }
        out.iter().all(|x| x.is_finite()).then_some(out)
    }
}
