//! Time stepping, as functions of a model and workspaces: the contact-free
//! semi-implicit Euler integrator on the configuration manifold ([`semi_implicit_euler`])
//! and the constraint stage (`contact`: contacts, joint limits and joint friction as
//! LCP rows, and the position stage). The [`crate::sim::Simulator`] runs them in order.

mod island_delassus;
pub(crate) mod islands;
mod semi_implicit_euler;
pub(crate) mod trees;

pub mod contact;
pub use contact::{
    BounceGradients, ConeFrame, ConstraintRecord, ContactInfo, ContactModel, ContactOptions, ContactSolver,
    PenetrationRecovery, PositionCorrection, RowKind, LIMIT_TOLERANCE, PENETRATION_TOLERANCE, POSITION_REGULARIZATION,
};
pub(crate) use semi_implicit_euler::check_dt;
pub use semi_implicit_euler::{
    semi_implicit_euler, smooth_velocity, IntegratorOptions, StepInputs, StepStats, VelocityProducts, MAX_DT,
};
