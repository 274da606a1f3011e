//! Point and segment cores against each other: sphere–sphere, sphere–capsule and
//! capsule–capsule, by direct closest-point computations (`closest_points`).
//!
//! * point–point: the vertex–vertex pair, `d = |c_B − c_A| − r_A − r_B`;
//! * point–segment: the closest point of the segment at `t = clamp((p − a)·u/u·u)`;
//!   interior → vertex–edge, an end → vertex–vertex;
//! * segment–segment: the closest points (s, t) of the two segments; both interior →
//!   edge–edge (oriented by the vector between the closest points), one at an end →
//!   vertex–edge or edge–vertex, both at ends → vertex–vertex. Segments parallel within
//!   [`PARALLEL_SIN`](super::PARALLEL_SIN) give the two vertex–edge contacts at the ends
//!   of their overlap (a capsule lying on a capsule rests on two points), or the
//!   vertex–vertex contact of their nearest ends when they do not overlap.
//!
//! Each is then the closed form of its feature pair, so the distance is exact. Points
//! on a segment's line (or coincident centres) have no defined normal: no contact.

use super::closest_points::{point_segment, segment_segment};
use super::polytope_pair::parallel_edges;
use super::{Emitter, Placed, PARALLEL_SIN};
use crate::collision::contact::{Contact, Feature};
use crate::math::Vec3;

/// The feature of a segment core at parameter `s` of its edge 0.
fn segment_feature(c: &Placed, s: f64) -> Feature {
    let v = c.poly.edges[0].v;
    if s <= 0.0 {
        Feature::Vertex(v[0])
    } else if s >= 1.0 {
        Feature::Vertex(v[1])
    } else {
        Feature::Edge(0)
    }
}

/// P and Q are points or segments, P a point whenever one of them is.
pub(crate) fn collide_cores(em: &Emitter, p: &Placed, q: &Placed, out: &mut Vec<Contact>) {
    let p_point = p.poly.edges.is_empty();
    let q_point = q.poly.edges.is_empty();
    match (p_point, q_point) {
        (true, true) => {
            let hint = q.vertex(0) - p.vertex(0);
            em.emit(Feature::Vertex(0), Feature::Vertex(0), &hint, out);
        }
        (true, false) => {
            let x = p.vertex(0);
            let (a, u) = q.edge(0);
            let t = point_segment(&x, &a, &u);
            let hint = a + u * t - x;
            em.emit(Feature::Vertex(0), segment_feature(q, t), &hint, out);
        }
        _ => {
            let (a1, u1) = p.edge(0);
            let (a2, u2) = q.edge(0);
            match segment_segment(&a1, &u1, &a2, &u2, PARALLEL_SIN) {
                Some((s, t)) => {
                    let mut hint: Vec3 = a2 + u2 * t - a1 - u1 * s;
                    if !(hint.norm() > 1e-12 * p.scale().max(q.scale())) {
                        // crossing cores: any consistent sign; take the centres' offset
                        hint = q.center() - p.center();
                    }
                    em.emit(segment_feature(p, s), segment_feature(q, t), &hint, out);
                }
                None => {
                    let hint = q.center() - p.center();
                    parallel_edges(em, p, 0, q, 0, &hint, out);
                }
            }
        }
    }
}
