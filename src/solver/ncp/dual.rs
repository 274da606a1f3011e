//! The non-smooth Newton solver as a [`ConstraintSolver`]: the NCP of a
//! [`ConstraintProblem`] `w = A f + b` in its dual (impulse) form, with the problem's
//! friction rows grouped by their normal into isotropic cones (Macklin et al. 2019 §5–§6;
//! the module notes of [`super::newton`] for the primal form).
//!
//! Rows, by their [`RowBound`]:
//!
//! ```text
//! unilateral [0, ∞):      ϕ(w_i, r_i f_i) = 0                      (the chosen NCP function)
//! equality (−∞, ∞):       w_i = 0
//! other boxes [lo, hi]:   f_i − mid(lo, f_i − r_i w_i, hi) = 0     (the box's min-map)
//! friction rows of one normal n (μ):  w_t + W f_t = 0, W the lagged compliance of the
//!                         cone |f_t| ≤ μ f_n (isotropic over the group, no facets);
//!                         f_t = 0 while μ f_n ≤ 0
//! ```
//!
//! with `r_i = A_ii` (the complementarity preconditioner in impulse units). Each Newton
//! iteration divides a row by `∂ϕ/∂w` and solves `[A + C] Δf = −e` over the rows whose
//! step is not fixed by their own force (dense Cholesky, or conjugate residuals through
//! the problem's operator), then updates `f += t Δf`.
//!
//! The backward pass is the implicit-function theorem at the solution in its contact
//! mode (the active-set Clarke Jacobian): each row's condition `F_i(f, w) = 0` —
//! `w_i = 0` for an active normal, a sticking friction row or an equality or a box row
//! inside its box; `f_i = 0` (or its bound) for a separating normal, a box row at a bound
//! or an inactive cone; `f_t + μ f_n ŵ = 0` for a sliding cone, `ŵ = w_t/|w_t|` — gives
//! `(Q + P A) df = −P (dA f + db)` with `Q = ∂F/∂f`, `P = ∂F/∂w`. For `ḡ = ∂ℓ/∂f`,
//! `y = (Q + P A)⁻ᵀ ḡ`:
//!
//! ```text
//! ∂ℓ/∂b = −Pᵀ y,        ∂ℓ/∂A = (∂ℓ/∂b) fᵀ
//! ```
//!
//! A singular `Q + P A` (redundant contacts, whose forces the problem does not determine)
//! is inverted in the minimum-norm sense; the derivative is then that of the solution's
//! determined part only. Mode boundaries (a contact about to separate, a cone at the
//! stick/slide switch) are not differentiable: the derivative is the recorded side's.

use super::functions::{delassus_scales, friction_compliance, FrictionCompliance, NcpFunction};
use super::newton::{newton_step, LinearSolve};
use crate::error::{Error, Result};
use crate::math::min_norm_solve;
use crate::solver::constraint_solver::{ConstraintProblem, ConstraintSolution, ProblemCotangent, SolveReport};
use crate::solver::lcp::{RowBound, RowState};
use crate::solver::ConstraintSolver;
use nalgebra::{DMatrix, DVector};

/// The non-smooth Newton NCP solver of the constraint stage (module notes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NcpSolver {
    /// The NCP function of the unilateral rows and of the cones.
    pub function: NcpFunction,
    /// At most this many Newton iterations.
    pub max_iterations: usize,
    /// Stop once every row's residual is at most this (velocity units).
    pub tolerance: f64,
    /// Damping `t` of the updates (the paper: 0.75).
    pub damping: f64,
    /// The linear solver.
    pub linear: LinearSolve,
    /// Identity shift of the Schur matrix.
    pub shift: f64,
    /// Scale each row by the complementarity preconditioner `r = A_ii` (eq. 66);
    /// `false`: `r = 1` (the paper's comparison: it fails on large mass ratios).
    pub preconditioner: bool,
}

impl Default for NcpSolver {
    fn default() -> Self {
        Self {
            function: NcpFunction::FischerBurmeister,
            max_iterations: 200,
            tolerance: 1e-12,
            damping: 0.75,
            linear: LinearSolve::Direct,
            shift: 1e-14,
            preconditioner: true,
        }
    }
}

/// The friction rows that follow one normal row: one isotropic cone.
struct Cone {
    /// The normal row.
    normal: usize,
    /// Its friction rows.
    rows: Vec<usize>,
    /// Their friction coefficient.
    mu: f64,
}

/// The cones of a problem: its friction rows grouped by the normal they follow.
fn cones(bounds: &[RowBound]) -> Result<Vec<Cone>> {
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

impl NcpSolver {
    /// The Newton iteration; returns `(f, iterations, residual)`.
    fn newton(
        &self,
        a: &DMatrix<f64>,
        b: &DVector<f64>,
        bounds: &[RowBound],
        cones: &[Cone],
    ) -> Result<(DVector<f64>, usize, f64)> {
        let m = b.len();
        let r = if self.preconditioner { delassus_scales(a) } else { vec![1.0; m] };
        let mut f = DVector::zeros(m);
        let (mut c, mut e) = (vec![0.0; m], DVector::zeros(m));
        let mut known: Vec<Option<f64>> = vec![None; m];
        let mut iterations = 0;
        loop {
            let w = a * &f + b;
            let mut residual: f64 = 0.0;
            for i in 0..m {
                known[i] = None;
                match bounds[i] {
                    RowBound::Friction { .. } => {}
                    RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY => {
                        let v = self.function.eval(w[i], f[i], r[i]);
                        residual = residual.max(v.value.abs());
                        if v.da > 1e-12 {
                            c[i] = v.db / v.da;
                            e[i] = v.value / v.da;
                        } else {
                            known[i] = Some(-v.value / v.db);
                        }
                    }
                    RowBound::Box { lo, hi } if lo == f64::NEG_INFINITY && hi == f64::INFINITY => {
                        residual = residual.max(w[i].abs());
                        c[i] = 0.0;
                        e[i] = w[i];
                    }
                    RowBound::Box { lo, hi } => {
                        let trial = f[i] - r[i] * w[i];
                        if trial > lo && trial < hi {
                            residual = residual.max(w[i].abs());
                            c[i] = 0.0;
                            e[i] = w[i];
                        } else {
                            let bound = if trial <= lo { lo } else { hi };
                            residual = residual.max((f[i] - bound).abs() / r[i]);
                            known[i] = Some(bound - f[i]);
                        }
                    }
                }
            }
            for Cone { normal: n, rows: ts, mu } in cones {
                let slip = ts.iter().map(|&t| w[t] * w[t]).sum::<f64>().sqrt();
                let force = ts.iter().map(|&t| f[t] * f[t]).sum::<f64>().sqrt();
                let rt = ts.iter().map(|&t| r[t]).fold(0.0, f64::max);
                match friction_compliance(self.function, slip, force, mu * f[*n].max(0.0), rt) {
                    FrictionCompliance::Active(wc) => {
                        for &t in ts {
                            c[t] = wc;
                            e[t] = w[t] + wc * f[t];
                            residual = residual.max(e[t].abs());
                        }
                    }
                    FrictionCompliance::Inactive => {
                        for &t in ts {
                            known[t] = Some(-f[t]);
                            residual = residual.max(f[t].abs() / r[t]);
                        }
                    }
                }
            }
            if residual <= self.tolerance || iterations >= self.max_iterations {
                return Ok((f, iterations, residual));
            }
            let df = newton_step(a, &c, &-&e, &known, self.linear, self.shift)?;
            f += df * self.damping;
            iterations += 1;
        }
    }

    /// `(Q, P)` of the contact mode at `(f, w)` (module notes), dense.
    fn mode_jacobians(
        &self,
        bounds: &[RowBound],
        cones: &[Cone],
        f: &DVector<f64>,
        w: &DVector<f64>,
        r: &[f64],
    ) -> (DMatrix<f64>, DMatrix<f64>) {
        let m = f.len();
        let (mut q, mut p) = (DMatrix::zeros(m, m), DMatrix::zeros(m, m));
        // A force below this is zero for the mode (the forward pass's tolerance, in force).
        let f_tol = |i: usize| self.tolerance.max(1e-14) / r[i];
        for i in 0..m {
            match bounds[i] {
                RowBound::Friction { .. } => {}
                RowBound::Box { lo, hi } if lo == 0.0 && hi == f64::INFINITY => {
                    if f[i] > f_tol(i) {
                        p[(i, i)] = 1.0;
                    } else {
                        q[(i, i)] = 1.0;
                    }
                }
                RowBound::Box { lo, hi } => {
                    let inside = f[i] > lo + f_tol(i) && f[i] < hi - f_tol(i);
                    if inside || (lo == f64::NEG_INFINITY && hi == f64::INFINITY) {
                        p[(i, i)] = 1.0;
                    } else {
                        q[(i, i)] = 1.0;
                    }
                }
            }
        }
        for Cone { normal: n, rows: ts, mu } in cones {
            let slip = ts.iter().map(|&t| w[t] * w[t]).sum::<f64>().sqrt();
            if *mu == 0.0 || f[*n] <= f_tol(*n) {
                for &t in ts {
                    q[(t, t)] = 1.0;
                }
            } else if slip <= self.tolerance.max(1e-14) * 10.0 {
                for &t in ts {
                    p[(t, t)] = 1.0;
                }
            } else {
                // f_t + μ f_n ŵ = 0.
                for (a_i, &t) in ts.iter().enumerate() {
                    q[(t, t)] = 1.0;
                    q[(t, *n)] = mu * w[t] / slip;
                    for (b_i, &s) in ts.iter().enumerate() {
                        let delta = if a_i == b_i { 1.0 } else { 0.0 };
                        p[(t, s)] = mu * f[*n] * (delta - w[t] * w[s] / (slip * slip)) / slip;
                    }
                }
            }
        }
        (q, p)
    }
}

impl ConstraintSolver for NcpSolver {
    fn name(&self) -> &'static str {
        "NCP (non-smooth Newton)"
    }

    fn solve(&self, problem: &ConstraintProblem, _warm_start: Option<&[RowState]>) -> Result<ConstraintSolution> {
        problem.check()?;
        let cones = cones(problem.bounds)?;
        let a = problem.delassus.dense();
        let (f, _iterations, residual) = self.newton(&a, problem.b, problem.bounds, &cones)?;
        let w = &a * &f + problem.b;
        let r = delassus_scales(&a);
        let (q, _) = self.mode_jacobians(problem.bounds, &cones, &f, &w, &r);
        // The mode as row states (reporting): a row held at zero force separates, a
        // sliding cone's rows are at their bound (the sign of their force), every other
        // row holds its velocity (clamping).
        let states = (0..f.len())
            .map(|i| {
                let sliding = matches!(problem.bounds[i], RowBound::Friction { normal, .. } if q[(i, normal)] != 0.0);
                if sliding {
                    RowState::AtBound { sign: if f[i] < 0.0 { -1 } else { 1 } }
                } else if q[(i, i)] == 1.0 {
                    RowState::Separating
                } else {
                    RowState::Clamping
                }
            })
            .collect();
        Ok(ConstraintSolution {
            f,
            w,
            states,
            report: SolveReport {
                solver: self.name(),
                fallbacks: 0,
                residual,
                converged: residual <= self.tolerance,
                lcp: None,
            },
        })
    }

    fn vjp(
        &self,
        problem: &ConstraintProblem,
        solution: &ConstraintSolution,
        grad_f: &DVector<f64>,
    ) -> Result<ProblemCotangent> {
        problem.check()?;
        let m = problem.rows();
        if grad_f.len() != m {
            return Err(Error::Dimension { what: "∂ℓ/∂f", expected: m, got: grad_f.len() });
        }
        let cones = cones(problem.bounds)?;
        let a = problem.delassus.dense();
        let r = delassus_scales(&a);
        let (q, p) = self.mode_jacobians(problem.bounds, &cones, &solution.f, &solution.w, &r);
        let k = &q + &p * &a;
        let y: DVector<f64> = match k.transpose().lu().solve(grad_f) {
            Some(y)
                if y.iter().all(|v| v.is_finite())
                    && (k.transpose() * &y - grad_f).amax() <= 1e-9 * grad_f.amax().max(1.0) =>
            {
                y
            }
            _ => min_norm_solve(&k.transpose(), grad_f, 1e-12).ok_or_else(|| Error::Numerical {
                algorithm: "NCP solver backward pass",
                detail: "the mode's Jacobian could not be inverted".into(),
            })?,
        };
        let gb: DVector<f64> = -(p.transpose() * y);
        Ok(ProblemCotangent { a: vec![(gb.clone(), solution.f.clone())], b: gb })
    }
}
