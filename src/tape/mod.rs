//! The tape: self-contained records of steps and their backward pass —
//! vector-Jacobian products and full Jacobian blocks of
//! `(q⁺, v⁺) = step(q, v, τ, θ)`, and whole-rollout backpropagation.
//!
//! Steps with contacts or joint limits are differentiated in their recorded contact
//! mode; [`BackwardOptions`] opts into the loss-driven contact strategy of DiffDART
//! §4.4 ([`ContactGradientStrategy::LossDriven`], docs/contact.md).
//!
//! Conventions: derivatives with respect to configurations live in the tangent
//! space (nv), perturbing `q ⊕ δ`; θ is ordered by the simulator's [`ParamSpec`](crate::model::ParamSpec).

mod constraint;
mod constraint_vjp;
mod constraint_workspace;
pub(crate) mod derivative_terms;
mod jacobians;
pub(crate) mod linearize;
mod record;
mod rollout;
mod step_vjp;

pub use linearize::Workspace;
pub use record::{BackwardOptions, ContactGradientStrategy, StepGradients, StepJacobians, StepRecord, StrategyStats};
pub use rollout::{Tape, TapeGradients};
