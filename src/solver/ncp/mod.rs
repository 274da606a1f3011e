//! NCP contact (Macklin et al. 2019, "Non-Smooth Newton Methods for Deformable Multi-Body
//! Dynamics"; `docs/ncp.md`): the building blocks of the non-smooth Newton solver of
//! issue #20, each checked against the paper's closed-form claims.
//!
//! - [`functions`]: the NCP functions (min-map and Fischer–Burmeister, eq. 17) with the
//!   complementarity preconditioner's scaling `r` (§7, App. A), their partial derivatives
//!   and the frictional compliance `W` of isotropic Coulomb friction (eqs. 35, 103–105);
//! - [`pcr`]: the Jacobi-preconditioned conjugate-residual solver (§8.2) over the Schur
//!   operator `J H⁻¹ Jᵀ + C` applied matrix-free through a [`super::DelassusOperator`];
//! - [`newton`]: the non-smooth Newton iteration (§6) on a dense contact step in reduced
//!   coordinates, solving its Schur system directly or by [`pcr`];
//! - [`dual`]: the same iteration on a constraint stage's problem `w = A f + b`
//!   ([`NcpSolver`], a [`super::ConstraintSolver`]: usable by a [`crate::world::World`]),
//!   with friction rows grouped into isotropic cones and its backward pass by the
//!   implicit-function theorem in the solution's contact mode;
//! - `mode`: the contact mode of a solution and its minimum-norm forces;
//! - `gauss_seidel`: blocked projected Gauss–Seidel over the cones, the fallback of
//!   [`NcpSolver`] where its Newton iteration cycles.
//!
//! The simulator's constraint stage uses it with [`crate::step::ContactSolver::Ncp`].

pub mod dual;
pub mod functions;
pub(crate) mod gauss_seidel;
pub(crate) mod mode;
pub mod newton;
pub mod pcr;

pub use dual::{NcpSolver, COARSE_TOLERANCE};
pub use functions::{complementarity_scale, friction_compliance, FrictionCompliance, NcpFunction, NcpValue};
pub use newton::{solve_ncp, LinearSolve, NcpOptions, NcpProblem, NcpSolution};
pub use pcr::{pcr_solve, PcrOptions, PcrReport, SchurOperator};
