//! Constraint solvers of the step pipeline (the `solver` stage of `docs/architecture.md`).
//!
//! [`ConstraintSolver`] is the interface a solver implements: solve a
//! [`ConstraintProblem`] over a [`DelassusOperator`] and differentiate its solution
//! ([`ConstraintSolver::vjp`]); [`BoxedLcpSolver`] (the boxed LCP pipeline) and [`PpmSolver`]
//! (the PPM, for unilateral and equality rows) implement it.
//! [`lcp`] holds the boxed linear complementarity solvers used for velocity-level rigid contact,
//! with the DiffDART (Werling et al. 2021) App. A.1/A.2 standardization of the solution. [`ppm`] holds
//! Drumwright's (2015) FIND-INDICES and modified principal pivoting method for the PSD problems of the
//! no-slip and viscous friction models, in factored form. [`ncp`] holds the building blocks of the
//! non-smooth Newton NCP solver (Macklin et al. 2019): NCP functions, frictional compliance and the
//! preconditioned conjugate-residual method. [`gpu_linear`] routes Newton linear systems to the GPU
//! conjugate-residual solver (feature `cuda`) and holds the process-wide device context.

pub mod constraint_solver;
pub mod delassus;
pub mod gpu_linear;
pub mod lcp;
pub mod ncp;
pub mod ppm;
pub mod ppm_solver;

pub use crate::math::{BlockDiagonal, CsrMatrix, SparseSchur};
pub use constraint_solver::{
    BoxedLcpSolver, ConstraintProblem, ConstraintSolution, ConstraintSolver, ProblemCotangent, SolveReport,
};
pub use delassus::{DelassusOperator, DenseDelassus};
pub use ppm_solver::PpmSolver;
