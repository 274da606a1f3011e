//! The solver interface of the constraint stage: a [`ConstraintSolver`] solves a
//! [`ConstraintProblem`] (`w = A f + b` over a [`DelassusOperator`], per-row bounds) and
//! owns its backward pass — [`ConstraintSolver::vjp`] maps `∂ℓ/∂f` to the cotangents of
//! the problem's inputs, `∂ℓ/∂b` and `∂ℓ/∂A` ([`ProblemCotangent`]). The caller chains
//! those through `A = J M̃⁻¹ Jᵀ` and `b` to its own inputs, so the tape never needs to
//! know which rows a solver clamps, or whether it has such a notion at all.
//!
//! [`BoxedLcpSolver`] is the first implementation: the boxed LCP pipeline of
//! [`crate::solver::lcp`] forward, and backward the derivative of its standardized
//! solution in the recorded classification (DiffDART, Werling et al. 2021, §4 and
//! App. A.1/A.2): with C the clamping rows and `E` the map of `f_C` onto all rows
//! (identity on C, `±μ` from a normal onto its friction rows at the bound, zero
//! elsewhere), `Â = (A E)_CC` and `f_C = −Â⁺ b̂` (minimum norm). For a vector `ḡ = ∂ℓ/∂f`,
//! `ḡ_C = Eᵀ ḡ`, `y = Â⁺ᵀ ḡ_C`:
//!
//! ```text
//! ∂ℓ/∂b = −S_Cᵀ y,      ∂ℓ/∂A = (∂ℓ/∂b) fᵀ + (S_Cᵀ Â⁺ᵀ f_C)(E (I − Â⁺Â) ḡ_C)ᵀ
//! ```
//!
//! The second term is the derivative of the pseudo-inverse on the null space of a
//! rank-deficient `Â` (Golub & Pereyra 1973; zero when `Â` has full rank). Separating,
//! tied and constant-bound rows have forces that do not move with `A` or `b`.

use nalgebra::{DMatrix, DVector};

use super::delassus::DelassusOperator;
use super::lcp::{self, BoxedLcp, LcpOptions, LcpStats, RowBound, RowState, RANK_RTOL};
use crate::error::{Error, Result};
use crate::math::pseudo_inverse;

/// A constraint problem: find `f` with `w = A f + b` and the row conditions of `bounds`
/// (see [`crate::solver::lcp`]), `A` given as an operator.
pub struct ConstraintProblem<'a> {
    /// The Delassus operator `A = J M̃⁻¹ Jᵀ` (`m × m`).
    pub delassus: &'a dyn DelassusOperator,
    /// The free relative velocities `b` (`m`).
    pub b: &'a DVector<f64>,
    /// The `m` row bounds (unilateral normals, friction rows bounded by `±μ f_n`, boxes).
    pub bounds: &'a [RowBound],
}

impl ConstraintProblem<'_> {
    /// The number of rows `m`.
    pub fn rows(&self) -> usize {
        self.b.len()
    }

    /// Checks that `A`, `b` and the bounds agree in size.
    pub fn check(&self) -> Result<()> {
        let m = self.b.len();
        if self.delassus.rows() != m {
            return Err(Error::Dimension { what: "Delassus operator rows", expected: m, got: self.delassus.rows() });
        }
        if self.bounds.len() != m {
            return Err(Error::Dimension { what: "constraint row bounds", expected: m, got: self.bounds.len() });
        }
        Ok(())
    }
}

/// How a solve went: counted, never hidden.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct SolveReport {
    /// The solver's name.
    pub solver: &'static str,
    /// Fallbacks taken (a method failed and the next one was tried).
    pub fallbacks: usize,
    /// Relative violation of the row conditions by the returned solution.
    pub residual: f64,
    /// Whether the returned solution meets the solver's tolerance.
    pub converged: bool,
    /// The boxed-LCP statistics, when the solver is [`BoxedLcpSolver`].
    pub lcp: Option<LcpStats>,
}

/// A solution of a [`ConstraintProblem`].
#[derive(Clone, Debug, PartialEq)]
pub struct ConstraintSolution {
    /// The impulses `f` (`m`).
    pub f: DVector<f64>,
    /// The relative velocities `w = A f + b` (`m`).
    pub w: DVector<f64>,
    /// The classification of the rows, for solvers that have one (empty otherwise); the
    /// warm start of the next solve.
    pub states: Vec<RowState>,
    /// How the solve went.
    pub report: SolveReport,
}

/// The cotangent of a problem's inputs: `∂ℓ/∂b`, and `∂ℓ/∂A = Σ_k u_k w_kᵀ` as a short
/// sum of outer products (the caller chains it through `A = J M̃⁻¹ Jᵀ` without forming an
/// `m × m` matrix).
#[derive(Clone, Debug, PartialEq)]
pub struct ProblemCotangent {
    /// `∂ℓ/∂b` (`m`).
    pub b: DVector<f64>,
    /// The terms `(u_k, w_k)` of `∂ℓ/∂A = Σ_k u_k w_kᵀ`.
    pub a: Vec<(DVector<f64>, DVector<f64>)>,
}

impl ProblemCotangent {
    /// `∂ℓ/∂A` as a dense matrix (for tests and small problems).
    pub fn a_dense(&self) -> DMatrix<f64> {
        let m = self.b.len();
        let mut a = DMatrix::zeros(m, m);
        for (u, w) in &self.a {
            a.ger(1.0, u, w, 1.0);
        }
        a
    }
}

/// A solver of the constraint stage that owns its backward pass.
pub trait ConstraintSolver: Send + Sync + std::fmt::Debug {
    /// A short name, for reports.
    fn name(&self) -> &'static str;

    /// Solves the problem; `warm_start` is the previous solution's
    /// [`ConstraintSolution::states`] when the rows match (ignored by solvers without a
    /// classification).
    fn solve(&self, problem: &ConstraintProblem, warm_start: Option<&[RowState]>) -> Result<ConstraintSolution>;

    /// The vector–Jacobian product of the solution: `∂ℓ/∂b` and `∂ℓ/∂A` from
    /// `grad_f = ∂ℓ/∂f`, in the mode the solve recorded.
    fn vjp(
        &self,
        problem: &ConstraintProblem,
        solution: &ConstraintSolution,
        grad_f: &DVector<f64>,
    ) -> Result<ProblemCotangent>;
}

/// The boxed LCP pipeline ([`crate::solver::lcp::solve`]: warm start, Dantzig, Lemke,
/// PGS) as a [`ConstraintSolver`]; it forms the dense Delassus matrix.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BoxedLcpSolver {
    /// The LCP options.
    pub options: LcpOptions,
}

impl ConstraintSolver for BoxedLcpSolver {
    fn name(&self) -> &'static str {
        "boxed LCP"
    }

    fn solve(&self, problem: &ConstraintProblem, warm_start: Option<&[RowState]>) -> Result<ConstraintSolution> {
        problem.check()?;
        let lcp_problem = BoxedLcp::new(problem.delassus.dense(), problem.b.clone(), problem.bounds.to_vec())?;
        let warm = warm_start.filter(|s| s.len() == problem.rows());
        let sol = lcp::solve(&lcp_problem, &self.options, warm)?;
        let converged = sol.stats.residual <= self.options.tolerance;
        Ok(ConstraintSolution {
            f: sol.f,
            w: sol.w,
            states: sol.states,
            report: SolveReport {
                solver: self.name(),
                fallbacks: sol.stats.fallbacks,
                residual: sol.stats.residual,
                converged,
                lcp: Some(sol.stats),
            },
        })
    }

    fn vjp(
        &self,
        problem: &ConstraintProblem,
        solution: &ConstraintSolution,
        grad_f: &DVector<f64>,
    ) -> Result<ProblemCotangent> {
        clamped_set_vjp(problem, &solution.f, &solution.states, grad_f)
    }
}

/// The VJP of a solution determined by its clamping set (module docs): rows classified
/// [`RowState::Clamping`] solve `(A E)_CC f_C = −b̂` (minimum norm), friction rows at
/// their bound follow their normal, every other row keeps a force that does not move.
pub(crate) fn clamped_set_vjp(
    problem: &ConstraintProblem,
    f: &DVector<f64>,
    states: &[RowState],
    grad_f: &DVector<f64>,
) -> Result<ProblemCotangent> {
    problem.check()?;
    let m = problem.rows();
    for (what, len) in [("solution f", f.len()), ("row states", states.len()), ("grad_f", grad_f.len())] {
        if len != m {
            return Err(Error::Dimension { what, expected: m, got: len });
        }
    }
    let map = ClampingMap::new(problem.bounds, states)?;
    let nc = map.clamped.len();
    let mut b_bar = DVector::zeros(m);
    if nc == 0 {
        return Ok(ProblemCotangent { b: b_bar, a: Vec::new() });
    }
    let a = problem.delassus.dense();
    // Â = (A E)_CC.
    let mut a_hat = DMatrix::zeros(nc, nc);
    for (ci, &i) in map.clamped.iter().enumerate() {
        for (cj, &j) in map.clamped.iter().enumerate() {
            let mut x = a[(i, j)];
            for &(u, s) in &map.followers[cj] {
                x += a[(i, u)] * s;
            }
            a_hat[(ci, cj)] = x;
        }
    }
    let (pinv, _rank) = pseudo_inverse(&a_hat, RANK_RTOL).ok_or_else(|| Error::Numerical {
        algorithm: "constraint solver VJP",
        detail: "the pseudo-inverse of the clamped system failed (non-finite matrix)".into(),
    })?;
    let g_c = map.restrict(grad_f);
    let f_c = DVector::from_iterator(nc, map.clamped.iter().map(|&i| f[i]));
    let y = pinv.tr_mul(&g_c);
    for (ci, &i) in map.clamped.iter().enumerate() {
        b_bar[i] = -y[ci];
    }
    let mut terms = vec![(b_bar.clone(), f.clone())];
    // Null-space term of a rank-deficient Â: (S_Cᵀ Â⁺ᵀ f_C)(E (I − Â⁺Â) ḡ_C)ᵀ.
    let nu = &g_c - &pinv * (&a_hat * &g_c);
    if nu.amax() > 0.0 {
        let s = pinv.tr_mul(&f_c);
        terms.push((map.scatter(&s, false), map.scatter(&nu, true)));
    }
    Ok(ProblemCotangent { b: b_bar, a: terms })
}

/// The clamping set of a classified solution and the map `E` of its forces onto all rows.
struct ClampingMap {
    m: usize,
    /// The clamping rows, in order.
    clamped: Vec<usize>,
    /// Per clamping row (by position in `clamped`): its friction rows at the bound, with
    /// their factor `sign·μ`.
    followers: Vec<Vec<(usize, f64)>>,
}

impl ClampingMap {
    fn new(bounds: &[RowBound], states: &[RowState]) -> Result<ClampingMap> {
        let m = bounds.len();
        let clamped: Vec<usize> = (0..m).filter(|&i| states[i] == RowState::Clamping).collect();
        let mut position = vec![usize::MAX; m];
        for (ci, &i) in clamped.iter().enumerate() {
            position[i] = ci;
        }
        let mut followers = vec![Vec::new(); clamped.len()];
        for (u, (bound, state)) in bounds.iter().zip(states).enumerate() {
            if let (RowBound::Friction { normal, mu }, RowState::AtBound { sign }) = (*bound, *state) {
                match position.get(normal) {
                    Some(&ci) if ci != usize::MAX => followers[ci].push((u, f64::from(sign) * mu)),
                    _ => {
                        return Err(Error::InvalidInput(format!(
                            "row {u} is at its friction bound but its normal row {normal} is not clamping"
                        )))
                    }
                }
            }
        }
        Ok(ClampingMap { m, clamped, followers })
    }

    /// `Eᵀ g`: a vector over all rows restricted to the clamping set.
    fn restrict(&self, g: &DVector<f64>) -> DVector<f64> {
        DVector::from_iterator(
            self.clamped.len(),
            self.clamped
                .iter()
                .zip(&self.followers)
                .map(|(&i, fl)| g[i] + fl.iter().map(|&(u, s)| s * g[u]).sum::<f64>()),
        )
    }

    /// `S_Cᵀ x` (`with_followers = false`) or `E x` (`true`).
    fn scatter(&self, x: &DVector<f64>, with_followers: bool) -> DVector<f64> {
        let mut out = DVector::zeros(self.m);
        for (ci, &i) in self.clamped.iter().enumerate() {
            out[i] = x[ci];
            if with_followers {
                for &(u, s) in &self.followers[ci] {
                    out[u] = s * x[ci];
                }
            }
        }
        out
    }
}
