//! # stiction
//!
//! A differentiable physics engine for articulated rigid bodies in generalized
//! coordinates. This crate holds the spatial algebra ([`math`]), the immutable
//! [`Model`] and its builder ([`model`]), model loading ([`io`]), the rigid-body
//! algorithms over a preallocated [`Data`] workspace ([`dynamics`]), time
//! stepping ([`step`]), its backward pass ([`tape`]) and trajectory optimization
//! ([`optim`]).
//!
//! Conventions: z-up world, SI units, `f64`, spatial vectors `[angular; linear]`,
//! unit quaternions stored `[w, x, y, z]`; see `docs/architecture.md`.

#![deny(missing_docs)]

pub mod collision;
pub mod constraint;
pub mod dynamics;
pub mod error;
pub mod gpu;
pub mod gradcheck;
pub mod io;
pub mod math;
pub mod model;
pub mod optim;
pub mod schur_systems;
pub mod sim;
pub mod soft;
pub mod solver;
pub mod step;
pub mod tape;
pub mod viz;
pub mod world;

pub use dynamics::Data;
pub use error::{Error, LoadError, ModelError, Result, SoftError};
pub use model::{Body, Joint, JointType, Model, ModelBuilder};
pub use sim::{Control, SimOptions, Simulator, State};
