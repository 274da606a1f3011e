//! Drumwright's FIND-INDICES and modified principal pivoting method ([`crate::solver::ppm`])
//! as a [`ConstraintSolver`], for problems of unilateral rows (`0 ≤ f ⊥ w ≥ 0`) and
//! equality rows (`w = 0`, free `f`: no-slip friction, bilateral joints) — no Coulomb
//! bounds. It works on the factors `A = J M̃⁻¹ Jᵀ`: the operator's own
//! ([`crate::solver::DelassusOperator::factors`]) or, when it has none, `J = V Λ^{1/2}`, `M̃ = I` from
//! the eigendecomposition `A = V Λ Vᵀ` of the dense matrix.
//!
//! Backward: the solution is determined by its clamping set, as the boxed LCP's
//! (`constraint_solver.rs`), with one difference: equality rows that FIND-INDICES dropped
//! as dependent keep `f = 0`, so they are not in the set (the kept rows' system is
//! non-singular; the velocities are those of the minimum-norm solution).

use nalgebra::{DMatrix, DVector, SymmetricEigen};

use super::constraint_solver::{clamped_set_vjp, ConstraintProblem, ConstraintSolution, ConstraintSolver};
use super::constraint_solver::{ProblemCotangent, SolveReport};
use super::lcp::{RowBound, RowState};
use super::ppm::{self, FactoredLcp, PpmOptions, PsdRow};
use crate::error::{Error, Result};

/// The PPM as a [`ConstraintSolver`] (unilateral and equality rows only).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct PpmSolver {
    /// The PPM options.
    pub options: PpmOptions,
}

impl PpmSolver {
    /// The row types of the problem's bounds. Errors: a Coulomb or finite box row.
    fn rows(bounds: &[RowBound]) -> Result<Vec<PsdRow>> {
        bounds
            .iter()
            .enumerate()
            .map(|(i, b)| match *b {
                b if b.is_unilateral() => Ok(PsdRow::Unilateral),
                RowBound::Box { lo, hi } if lo == f64::NEG_INFINITY && hi == f64::INFINITY => Ok(PsdRow::NO_SLIP),
                other => Err(Error::InvalidInput(format!(
                    "the PPM solver takes unilateral and equality rows only; row {i} is {other:?} (use the boxed \
                     LCP solver for Coulomb friction)"
                ))),
            })
            .collect()
    }
}

/// `(J, I)` with `J Jᵀ = A` from the eigendecomposition of the symmetric PSD `A`.
fn eigen_factors(a: DMatrix<f64>) -> (DMatrix<f64>, DMatrix<f64>) {
    let m = a.nrows();
    let eig = SymmetricEigen::new(a);
    let mut j = eig.eigenvectors;
    for (c, lambda) in eig.eigenvalues.iter().enumerate() {
        let s = lambda.max(0.0).sqrt();
        j.column_mut(c).scale_mut(s);
    }
    (j, DMatrix::identity(m, m))
}

impl ConstraintSolver for PpmSolver {
    fn name(&self) -> &'static str {
        "PPM"
    }

    fn solve(&self, problem: &ConstraintProblem, _warm_start: Option<&[RowState]>) -> Result<ConstraintSolution> {
        problem.check()?;
        let rows = PpmSolver::rows(problem.bounds)?;
        let (j, mass) = problem.delassus.factors().unwrap_or_else(|| eigen_factors(problem.delassus.dense()));
        let sol = ppm::solve(&FactoredLcp::new(j, mass, problem.b.clone(), rows)?, &self.options)?;
        let mut states = sol.lcp.states;
        for &i in &sol.dropped {
            states[i] = RowState::Separating; // f = 0, not moved by A or b
        }
        Ok(ConstraintSolution {
            f: sol.lcp.f,
            w: sol.lcp.w,
            states,
            report: SolveReport {
                solver: self.name(),
                fallbacks: sol.lcp.stats.fallbacks,
                residual: sol.lcp.stats.residual,
                converged: sol.lcp.stats.residual <= self.options.tolerance,
                lcp: Some(sol.lcp.stats),
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
