//! Time stepping: the contact-free semi-implicit Euler integrator on the
//! configuration manifold and the [`Simulator`] that owns a model and its options.

mod batch;
mod semi_implicit_euler;
mod simulator;

pub mod contact;
pub use batch::{backward_batch, map_rollouts, rollout_batch, BatchCotangent, BatchOptions, BatchResult, BatchRollout};
pub use contact::{
    BounceGradients, ConstraintRecord, ContactInfo, ContactModel, ContactOptions, ContactSolver, PenetrationRecovery,
    PositionCorrection, RowKind, POSITION_REGULARIZATION,
};
pub use semi_implicit_euler::{semi_implicit_euler, IntegratorOptions, StepStats, VelocityProducts};
pub use simulator::{Control, SimOptions, SimStats, Simulator, State};
