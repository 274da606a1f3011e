//! Collision detection with differentiable contact geometry.
//!
//! Pipeline: shapes compiled with the model ([`CollisionModel`]: convex cores swept by
//! a radius, half-spaces, static triangle meshes) → broad phase (bounding boxes, sweep
//! and prune, pair filtering) → narrow phase (per shape pair, contact manifolds made of
//! feature pairs) → [`Contact`]s with a stable [`ContactId`]. Each contact's point,
//! normal and signed distance is a closed form of its two features ([`feature_pair`]),
//! so its derivatives with respect to the bodies' poses — and through the kinematics
//! with respect to q — are exact.

pub mod broad_phase;
pub mod bvh;
pub mod contact;
pub mod dual;
pub mod face_merge;
pub mod feature_pair;
pub mod filter;
pub mod hull;
pub mod material;
pub(crate) mod mesh_check;
pub mod narrow_phase;
pub mod polytope;
pub mod predicates;
pub mod recompute;
pub mod shape;
pub mod triangle_mesh;

pub use broad_phase::BroadPhase;
pub use bvh::Aabb;
pub use bvh::Bvh;
pub use contact::{Contact, ContactGeometry, ContactGeometryDerivatives, ContactId, ContactKind, Feature};
pub use feature_pair::{Side, WorldFeature};
pub use material::Material;
pub use polytope::Polytope;
pub use recompute::{recompute, recompute_with_derivatives};
pub use shape::{CollisionFilter, CollisionModel, ShapeCore, ShapeInstance, ShapeKind, TriMeshCore};
pub use triangle_mesh::TriangleMesh;
