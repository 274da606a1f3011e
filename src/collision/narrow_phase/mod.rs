//! PLACEHOLDER narrow phase (branch `broad` only; replaced by the real narrow phase at
//! merge). It supports just enough for the pipeline's tests and benches:
//!
//! * half-space × convex core: every core vertex closer than `margin` gives a
//!   face–vertex contact (`Face(0)` of the half-space, the vertex of the core) through
//!   [`feature_pair::evaluate`], reversed with [`Contact::swapped`] when the convex
//!   shape comes first;
//! * point × point (sphere–sphere): one vertex–vertex contact.
//!
//! Every other pair gives no contacts.

use super::contact::{Contact, ContactId, ContactKind, Feature};
use super::feature_pair::{self, Side, WorldFeature};
use super::polytope::Polytope;
use super::shape::{ShapeCore, ShapeInstance};
use crate::math::{Vec3, SE3};

/// Appends to `out` the contacts between shape `ia` (`a`, at world pose `pose_a`) and
/// shape `ib` (`b`, at `pose_b`) whose signed distance is below `margin`, normals
/// pointing from A to B.
#[allow(clippy::too_many_arguments)]
pub fn collide(
    ia: u32,
    a: &ShapeInstance,
    pose_a: &SE3,
    ib: u32,
    b: &ShapeInstance,
    pose_b: &SE3,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    match (&a.core, &b.core) {
        (ShapeCore::HalfSpace, ShapeCore::Convex(p)) => half_space_convex(ia, a, pose_a, ib, b, pose_b, p, margin, out),
        (ShapeCore::Convex(p), ShapeCore::HalfSpace) => {
            let start = out.len();
            half_space_convex(ib, b, pose_b, ia, a, pose_a, p, margin, out);
            for c in &mut out[start..] {
                *c = c.swapped();
            }
        }
        (ShapeCore::Convex(p), ShapeCore::Convex(q)) if p.vertices.len() == 1 && q.vertices.len() == 1 => {
            let side = |s: &ShapeInstance, pose: &SE3, p: &Polytope| Side {
                feature: WorldFeature::Vertex(pose.act_point(&p.vertices[0])),
                radius: s.radius,
                moving: s.body.is_some(),
            };
            let (sa, sb) = (side(a, pose_a, p), side(b, pose_b, q));
            if let Some(g) = feature_pair::evaluate(ContactKind::VertexVertex, &sa, &sb, 1.0) {
                if g.distance < margin {
                    out.push(Contact {
                        id: ContactId {
                            shape_a: ia,
                            shape_b: ib,
                            feature_a: Feature::Vertex(0),
                            feature_b: Feature::Vertex(0),
                        },
                        body_a: a.body,
                        body_b: b.body,
                        kind: ContactKind::VertexVertex,
                        orientation: 1.0,
                        geometry: g,
                    });
                }
            }
        }
        _ => {}
    }
}

#[allow(clippy::too_many_arguments)]
fn half_space_convex(
    ih: u32,
    h: &ShapeInstance,
    pose_h: &SE3,
    ic: u32,
    c: &ShapeInstance,
    pose_c: &SE3,
    p: &Polytope,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    let face = Side {
        feature: WorldFeature::Face { o: pose_h.trans, n: pose_h.rot * Vec3::z() },
        radius: h.radius,
        moving: h.body.is_some(),
    };
    for (k, v) in p.vertices.iter().enumerate() {
        let vertex =
            Side { feature: WorldFeature::Vertex(pose_c.act_point(v)), radius: c.radius, moving: c.body.is_some() };
        let Some(g) = feature_pair::evaluate(ContactKind::FaceVertex, &face, &vertex, 1.0) else { continue };
        if g.distance < margin {
            out.push(Contact {
                id: ContactId {
                    shape_a: ih,
                    shape_b: ic,
                    feature_a: Feature::Face(0),
                    feature_b: Feature::Vertex(k as u32),
                },
                body_a: h.body,
                body_b: c.body,
                kind: ContactKind::FaceVertex,
                orientation: 1.0,
                geometry: g,
            });
        }
    }
}
