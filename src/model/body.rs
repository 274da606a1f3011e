//! Rigid bodies (links): name, spatial inertia, collision and visual shapes.

use super::shape::{CollisionShape, VisualShape};
use crate::math::{Inertia, Mat3, Vec3};
use serde::{Deserialize, Serialize};

/// A rigid body. Its frame is the frame of the joint that carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Unique link name.
    pub name: String,
    /// Spatial inertia in the body frame.
    pub inertia: Inertia,
    /// Collision shapes.
    pub collisions: Vec<CollisionShape>,
    /// Visual shapes.
    pub visuals: Vec<VisualShape>,
}

impl Body {
    /// A body with the given inertia and no shapes.
    pub fn new(name: impl Into<String>, inertia: Inertia) -> Self {
        Self { name: name.into(), inertia, collisions: vec![], visuals: vec![] }
    }
    /// A body from mass, centre of mass and rotational inertia about the centre of mass.
    pub fn from_mass_properties(name: impl Into<String>, mass: f64, com: Vec3, inertia_com: Mat3) -> Self {
        Self::new(name, Inertia::from_com(mass, com, inertia_com))
    }
    /// A massless body (a frame); valid only where rigidly attached to a massive one
    /// or when it does not move.
    pub fn massless(name: impl Into<String>) -> Self {
        Self::new(name, Inertia::zero())
    }
    /// Adds a collision shape.
    pub fn with_collision(mut self, shape: CollisionShape) -> Self {
        self.collisions.push(shape);
        self
    }
    /// Adds a visual shape.
    pub fn with_visual(mut self, shape: VisualShape) -> Self {
        self.visuals.push(shape);
        self
    }
}
