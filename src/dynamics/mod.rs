//! Rigid-body algorithms over a [`Model`](crate::Model) and a preallocated [`Data`],
//! one algorithm per file: kinematics, Jacobians, CRBA (mass matrix), RNEA (inverse
//! dynamics, bias forces), ABA (forward dynamics), energy and momentum, and the sparse
//! `LᵀDL` factorization of the joint-space inertia (`InertiaFactor`).
//!
//! Each function takes `(model, data, q, v, ...)` as slices, checks lengths, finite
//! values and quaternions, and leaves its results in `data`.

mod aba;
mod aba_derivatives;
mod crba;
mod data;
mod energy;
mod jacobian;
mod kinematics;
mod ltdl;
mod rnea;
mod rnea_derivatives;

pub use aba::aba;
pub(crate) use aba::{aba_bias_pass, aba_inertia_pass};
pub use aba_derivatives::aba_derivatives;
pub(crate) use crba::crba_entries;
pub use crba::{check_mass_matrix, crba};
pub use data::Data;
pub use energy::{center_of_mass, kinetic_energy, momentum, potential_energy};
pub use jacobian::{body_jacobian, frame_jacobian, frame_pose, point_jacobian, ReferenceFrame};
pub(crate) use kinematics::{check_q, external_forces_to_bodies, kinematics_pass, velocity_pass};
pub use kinematics::{
    forward_kinematics, forward_kinematics_acceleration, forward_kinematics_velocity, point_position,
};
pub use ltdl::InertiaFactor;
pub(crate) use rnea::rnea_pass;
pub use rnea::{bias_forces, gravity_forces, rnea};
pub(crate) use rnea_derivatives::{
    derivative_columns, derivative_columns_and_mass, mass_matrix_from_composites, placement_column,
    rnea_derivatives_at, world_quantities,
};
pub use rnea_derivatives::{rnea_derivatives, DerivativeData};
