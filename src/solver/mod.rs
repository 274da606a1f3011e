//! Constraint solvers of the step pipeline (the `solver` stage of `docs/architecture.md`).
//!
//! [`ConstraintSolver`] is the interface a solver implements: solve a
//! [`ConstraintProblem`] over a [`DelassusOperator`] and differentiate its solution
//! ([`ConstraintSolver::vjp`]); [`BoxedLcpSolver`] (the boxed LCP pipeline) and [`PpmSolver`]
//! (the PPM, for unilateral and equality rows) implement it.
//! [`lcp`] holds the boxed linear complementarity solvers used for velocity-level rigid contact,
//! with the DiffDART (Werling et al. 2021) App. A.1/A.2 standardization of the solution. [`ppm`] holds
//! Drumwright's (2015) FIND-INDICES and modified principal pivoting method for the PSD problems of the
//! no-slip and viscous friction models, in factored form.

pub mod constraint_solver;
pub mod delassus;
pub mod lcp;
pub mod ppm;
pub mod ppm_solver;

pub use constraint_solver::{
    BoxedLcpSolver, ConstraintProblem, ConstraintSolution, ConstraintSolver, ProblemCotangent, SolveReport,
};
pub use delassus::{DelassusOperator, DenseDelassus};
pub use ppm_solver::PpmSolver;
