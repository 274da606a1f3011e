//! A contact's geometry recomputed at new body poses from its feature pair: the two
//! sides (features placed at the shapes' world poses) and the pair's closed form
//! ([`super::feature_pair`]), with or without its derivatives.

use super::contact::{Contact, ContactGeometry, ContactGeometryDerivatives};
use super::feature_pair::{self, Side};
use super::shape::CollisionModel;
use crate::math::SE3;

/// The two sides of a contact, from the collision model and the bodies' world poses.
pub fn sides(cm: &CollisionModel, x_world: &[SE3], c: &Contact) -> Option<(Side, Side)> {
    let side = |shape: u32, f| {
        let s = cm.shapes.get(shape as usize)?;
        let pose = s.world_pose(x_world);
        Some(Side { feature: s.world_feature(&pose, f)?, radius: s.radius, moving: s.body.is_some() })
    };
    Some((side(c.id.shape_a, c.id.feature_a)?, side(c.id.shape_b, c.id.feature_b)?))
}

/// Recomputes a contact's geometry at new body poses, keeping its feature pair
/// (`None` if the closed form is degenerate there).
pub fn recompute(cm: &CollisionModel, x_world: &[SE3], c: &Contact) -> Option<ContactGeometry> {
    let (a, b) = sides(cm, x_world, c)?;
    feature_pair::evaluate(c.kind, &a, &b, c.orientation)
}

/// A contact's geometry at the given body poses with its derivatives with respect to
/// the two bodies' world-frame twists.
pub fn recompute_with_derivatives(
    cm: &CollisionModel,
    x_world: &[SE3],
    c: &Contact,
) -> Option<(ContactGeometry, ContactGeometryDerivatives)> {
    let (a, b) = sides(cm, x_world, c)?;
    feature_pair::evaluate_with_derivatives(c.kind, &a, &b, c.orientation)
}
