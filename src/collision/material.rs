//! Contact materials of collision shapes.

use serde::{Deserialize, Serialize};

/// Contact material of a shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Material {
    /// Coulomb friction coefficient μ.
    pub friction: f64,
    /// Coefficient of restitution in [0, 1].
    pub restitution: f64,
    /// Viscous friction coefficient μ_v (N·s/m) of the purely viscous contact model
    /// ([`crate::step::ContactModel::Viscous`]): each contact point applies the tangential
    /// force `−μ_v v_t`. Ignored by the other contact models. Default 0.
    #[serde(default)]
    pub viscous_friction: f64,
}

impl Material {
    /// A material with Coulomb friction `friction`, restitution `restitution` and no viscous friction.
    pub const fn new(friction: f64, restitution: f64) -> Self {
        Self { friction, restitution, viscous_friction: 0.0 }
    }

    /// The same material with viscous friction coefficient `viscous_friction` (N·s/m).
    pub const fn with_viscous_friction(mut self, viscous_friction: f64) -> Self {
        self.viscous_friction = viscous_friction;
        self
    }
}

impl Default for Material {
    fn default() -> Self {
        Self::new(0.8, 0.0)
    }
}
