//! A convex core against a half-space (the plane shape: `z ≤ 0` of its frame, a single
//! face `Face(0)` with normal +z): one vertex–face contact per core vertex whose signed
//! distance `n·(p − o) − r` is below the margin. A box resting flat gives its four
//! bottom corners, a capsule lying flat its two segment ends, a sphere its centre;
//! a convex mesh gives every vertex in range (then reduced by `reduce` to at most
//! `MAX_PAIR_CONTACTS`: the deepest and the corners of the support polygon).

use super::{Emitter, Placed};
use crate::collision::contact::{Contact, Feature};
use crate::math::{Vec3, SE3};

/// P is the convex core, Q the half-space at `plane` (swept by `plane_radius`, normally 0).
pub(crate) fn collide_halfspace(em: &Emitter, p: &Placed, plane: &SE3, plane_radius: f64, out: &mut Vec<Contact>) {
    let n = plane.rot * Vec3::z();
    for i in 0..p.poly.vertices.len() {
        // cheap rejection before the closed form (which decides, with both radii)
        let d = n.dot(&(p.vertex(i) - plane.trans)) - p.radius - plane_radius;
        if d < em.margin + 1e-9 * p.scale() {
            em.emit(Feature::Vertex(i as u32), Feature::Face(0), &n, out);
        }
    }
}
