//! The model: bodies, joints, shapes, the builder and its validation, and the
//! configuration-manifold operations. A [`Model`] is immutable after
//! [`ModelBuilder::build`]; all scratch lives in [`crate::Data`].

mod body;
mod builder;
mod collision_compile;
mod configuration;
mod definition;
mod description;
mod frame;
mod joint;
mod params;
pub mod samples;
mod shape;
mod topology;
mod validate;

pub use body::Body;
pub use definition::Model;
pub use description::{BaseJoint, CollisionSettings, Frame, JointSpec, ModelBuilder, WORLD};
pub use joint::{plane_basis, Joint, JointDynamics, JointLimits, JointType};
pub(crate) use params::placement_direction;
pub use params::{ParamEntry, ParamKind, ParamSpec};
pub use shape::{CollisionShape, Geometry, Material, TriangleMesh, VisualGeometry, VisualShape};
pub(crate) use topology::Topology;
