//! Soft bodies: tetrahedral finite elements with hyperelastic materials, stepped by
//! backward Euler as an energy minimisation, with the adjoint of the implicit step
//! (issue #21; docs/soft.md).
//!
//! * [`mesh`] — [`TetMesh`]: the validated rest mesh, volumes, shape-function gradients.
//! * [`batch`] — [`rollout_batch`] and [`backward_batch`]: independent rollouts of one
//!   body (own start state, forces, targets and θ each) and their reverse sweeps, in parallel.
//! * [`generate`] — box and rod meshes.
//! * [`surface`] — the boundary triangles of a mesh (collision, output).
//! * [`io`] — Gmsh `.msh` 4.1, VTK unstructured grids, TetGen `.node`/`.ele`; VTK output
//!   of trajectories.
//! * [`material`] — [`MaterialModel`]: energy, stress, tangent and Lamé derivatives.
//! * [`coupling`] — [`LinearizedStep`]: a step as the velocity block of a constraint
//!   stage (effective mass `(h²/c) H(x_f)`) with its adjoints, for `world::SoftSystem`.

mod adjoint;
pub mod batch;
pub mod body;
pub mod coupling;
mod damping;
pub mod generate;
pub mod implicit;
pub mod io;
pub mod material;
pub mod mesh;
mod pcg;
mod potential;
pub mod rollout;
mod sparse;
pub mod surface;
pub mod sysid;

pub use adjoint::{SoftGradients, SoftJacobians};
pub use batch::{backward_batch, rollout_batch, SoftBatchCotangent, SoftBatchRollout};
pub use body::{SoftBody, SoftBodyBuilder, SoftDamping, SoftMaterial, SoftRegion};
pub use coupling::{LinearizedStep, StartGradients};
pub use implicit::{
    static_equilibrium, step, NewtonReport, NewtonTimings, SoftIntegrator, SoftLinearSolver, SoftOptions, SoftState,
    SoftStepRecord,
};
pub use material::{Lame, MaterialModel};
pub use mesh::TetMesh;
pub use rollout::{rollout, SoftRollout, SoftRolloutGradients};
pub use sysid::{identify, SoftFit, SoftFitOptions, SoftTrajectory};
