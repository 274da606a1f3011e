//! Closed-form contact geometry of a feature pair, and its exact derivatives.
//!
//! Every contact stiction produces is one of six feature pairs (DiffDART, §5: vertex–face
//! and edge–edge, plus the vertex–vertex and vertex–edge pairs that sphere-swept shapes
//! need). Each shape is a convex core swept by a radius r (sphere: a vertex; capsule: a
//! segment; box and convex mesh: a polytope with r = 0), so with n the unit normal from
//! A to B the surface points are `s_A = c_A + r_A n` and `s_B = c_B − r_B n`, where
//! c_A, c_B are the closest points of the cores along the pair's closed form:
//!
//! * face–vertex (face of A with outward normal n through o, vertex p of B):
//!   `d = n·(p − o) − r_A − r_B`, `c_A = p − (n·(p − o)) n`, `c_B = p`;
//! * vertex–vertex: `n = (p_B − p_A)/|p_B − p_A|`, `d = |p_B − p_A| − r_A − r_B`;
//! * edge–vertex (edge a + t e of A, vertex p of B): `c_A = a + t e` with
//!   `t = (p − a)·e / e·e` (the foot of the perpendicular on the edge's line),
//!   `n = (p − c_A)/|p − c_A|`, `d = |p − c_A| − r_A − r_B`;
//! * edge–edge (a₁ + t₁e₁ on A, a₂ + t₂e₂ on B): `n = s (e₁ × e₂)/|e₁ × e₂|` with the sign
//!   s fixed at detection, `d = n·(a₂ − a₁) − r_A − r_B`, and c_A, c_B the mutually closest
//!   points of the two lines.
//!
//! The contact point is on the face for face–vertex and vertex–face contacts (the surface point
//! of the face's shape), and the midpoint `(s_A + s_B)/2` otherwise; the distance is negative
//! when the shapes overlap. Vertex–face and vertex–edge are the mirror images. On the face, the
//! contact points of a polygon resting on it are coplanar whatever the penetration of each
//! vertex, so "every contact sticks" is a consistent set of velocity constraints for a rigid
//! body (with midpoints, the differing depths tilt the points' plane, and a tilting body
//! cannot keep all of them still: static friction would have no exact solution).
//!
//! Derivatives: the features move with their bodies — a point p fixed to body X moves by
//! `ω_X × p + v_X`, a direction by `ω_X × d` under the world-frame twist `δ_X = [ω_X; v_X]` —
//! and the closed forms are evaluated in forward-mode dual numbers (`dual`), which
//! carries those twelve tangents through every operation exactly.

use super::contact::{ContactGeometry, ContactGeometryDerivatives, ContactKind};
use super::dual::{Dual, Real, V3};
use crate::math::Vec3;

/// A feature of a shape's core placed in the world frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WorldFeature {
    /// A vertex at a point.
    Vertex(Vec3),
    /// An edge from `a` to `a + e`.
    Edge {
        /// Start point.
        a: Vec3,
        /// Edge vector (end − start).
        e: Vec3,
    },
    /// A face: a point `o` of its plane and its unit outward normal `n`.
    Face {
        /// A point of the face's plane.
        o: Vec3,
        /// Unit outward normal.
        n: Vec3,
    },
}

/// One side of a feature pair: the feature, the core's sweep radius, and whether it
/// moves (a world-fixed shape contributes no derivative columns).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Side {
    /// The feature in world coordinates.
    pub feature: WorldFeature,
    /// Sweep radius of the shape's core.
    pub radius: f64,
    /// Whether the shape moves with a body.
    pub moving: bool,
}

/// Generic contact geometry: point, normal, distance.
struct Geo<S> {
    point: V3<S>,
    normal: V3<S>,
    distance: S,
}

enum F<S> {
    V(V3<S>),
    E(V3<S>, V3<S>),
    P(V3<S>, V3<S>),
}

/// Where the contact point lies between the two surface points.
#[derive(Clone, Copy)]
enum At {
    /// Midway between the surface points of A and B.
    Middle,
    /// On A's surface (A is the face).
    A,
    /// On B's surface (B is the face).
    B,
}

/// Surface points from core points and the A→B normal; the contact point per `at`.
fn finish<S: Real>(ca: V3<S>, cb: V3<S>, n: V3<S>, ra: f64, rb: f64, distance: S, at: At) -> Geo<S> {
    let sa = ca.plus(n.scale(S::cst(ra)));
    let sb = cb.minus(n.scale(S::cst(rb)));
    let point = match at {
        At::Middle => sa.plus(sb).scale(S::cst(0.5)),
        At::A => sa,
        At::B => sb,
    };
    Geo { point, normal: n, distance }
}

/// Below this the closed form has no well-defined normal (coincident points, parallel edges).
const DEGENERATE: f64 = 1e-14;

fn closed_form<S: Real>(kind: ContactKind, fa: F<S>, ra: f64, fb: F<S>, rb: f64, orientation: f64) -> Option<Geo<S>> {
    let radii = S::cst(ra + rb);
    match (kind, fa, fb) {
        (ContactKind::FaceVertex, F::P(o, n), F::V(p)) => {
            let gap = n.dot(p.minus(o));
            let ca = p.minus(n.scale(gap));
            Some(finish(ca, p, n, ra, rb, gap - radii, At::A))
        }
        (ContactKind::VertexFace, F::V(p), F::P(o, n)) => {
            let gap = n.dot(p.minus(o));
            let cb = p.minus(n.scale(gap));
            Some(finish(p, cb, n.scale(S::cst(-1.0)), ra, rb, gap - radii, At::B))
        }
        (ContactKind::VertexVertex, F::V(pa), F::V(pb)) => {
            let diff = pb.minus(pa);
            let len = diff.norm();
            if len.val() < DEGENERATE {
                return None;
            }
            Some(finish(pa, pb, diff.scale(S::cst(1.0) / len), ra, rb, len - radii, At::Middle))
        }
        (ContactKind::EdgeVertex, F::E(a, e), F::V(p)) => {
            let t = p.minus(a).dot(e) / e.dot(e);
            let ca = a.plus(e.scale(t));
            let diff = p.minus(ca);
            let len = diff.norm();
            if len.val() < DEGENERATE {
                return None;
            }
            Some(finish(ca, p, diff.scale(S::cst(1.0) / len), ra, rb, len - radii, At::Middle))
        }
        (ContactKind::VertexEdge, F::V(p), F::E(a, e)) => {
            let t = p.minus(a).dot(e) / e.dot(e);
            let cb = a.plus(e.scale(t));
            let diff = cb.minus(p);
            let len = diff.norm();
            if len.val() < DEGENERATE {
                return None;
            }
            Some(finish(p, cb, diff.scale(S::cst(1.0) / len), ra, rb, len - radii, At::Middle))
        }
        (ContactKind::EdgeEdge, F::E(a1, e1), F::E(a2, e2)) => {
            let m = e1.cross(e2);
            let mn = m.norm();
            if mn.val() < DEGENERATE * (e1.norm() * e2.norm()).val() {
                return None;
            }
            let n = m.scale(S::cst(orientation) / mn);
            let w0 = a1.minus(a2);
            let (a, b, c) = (e1.dot(e1), e1.dot(e2), e2.dot(e2));
            let (d, e) = (e1.dot(w0), e2.dot(w0));
            let den = a * c - b * b;
            let t1 = (b * e - c * d) / den;
            let t2 = (a * e - b * d) / den;
            let ca = a1.plus(e1.scale(t1));
            let cb = a2.plus(e2.scale(t2));
            Some(finish(ca, cb, n, ra, rb, n.dot(a2.minus(a1)) - radii, At::Middle))
        }
        _ => None,
    }
}

fn plain(f: &WorldFeature) -> F<f64> {
    match f {
        WorldFeature::Vertex(p) => F::V(V3::from_vec(p)),
        WorldFeature::Edge { a, e } => F::E(V3::from_vec(a), V3::from_vec(e)),
        WorldFeature::Face { o, n } => F::P(V3::from_vec(o), V3::from_vec(n)),
    }
}

fn seeded(f: &WorldFeature, offset: Option<usize>) -> F<Dual> {
    match f {
        WorldFeature::Vertex(p) => F::V(V3::moving_point(p, offset)),
        WorldFeature::Edge { a, e } => F::E(V3::moving_point(a, offset), V3::moving_direction(e, offset)),
        WorldFeature::Face { o, n } => F::P(V3::moving_point(o, offset), V3::moving_direction(n, offset)),
    }
}

/// The geometry of a feature pair of the given kind, or `None` when the closed form is
/// degenerate there (coincident points, a point on an edge's line, parallel edges) or
/// the features do not match the kind.
pub fn evaluate(kind: ContactKind, a: &Side, b: &Side, orientation: f64) -> Option<ContactGeometry> {
    let g = closed_form(kind, plain(&a.feature), a.radius, plain(&b.feature), b.radius, orientation)?;
    Some(ContactGeometry { point: g.point.val(), normal: g.normal.val(), distance: g.distance })
}

/// [`evaluate`] with the derivatives of point, normal and distance with respect to the
/// world-frame twists of the two bodies (see [`ContactGeometryDerivatives`]).
pub fn evaluate_with_derivatives(
    kind: ContactKind,
    a: &Side,
    b: &Side,
    orientation: f64,
) -> Option<(ContactGeometry, ContactGeometryDerivatives)> {
    let fa = seeded(&a.feature, a.moving.then_some(0));
    let fb = seeded(&b.feature, b.moving.then_some(6));
    let g = closed_form(kind, fa, a.radius, fb, b.radius, orientation)?;
    let mut d = ContactGeometryDerivatives {
        point: Default::default(),
        normal: Default::default(),
        distance: Default::default(),
    };
    for k in 0..12 {
        for i in 0..3 {
            d.point[(i, k)] = g.point.grad(i, k);
            d.normal[(i, k)] = g.normal.grad(i, k);
        }
        d.distance[(0, k)] = g.distance.g[k];
    }
    let geo = ContactGeometry { point: g.point.val(), normal: g.normal.val(), distance: g.distance.v };
    Some((geo, d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{se3_exp, Motion, SplitMix64, Vec6};

    fn rand_vec(rng: &mut SplitMix64) -> Vec3 {
        Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0))
    }

    fn moved(f: &WorldFeature, x: &crate::math::SE3) -> WorldFeature {
        match f {
            WorldFeature::Vertex(p) => WorldFeature::Vertex(x.act_point(p)),
            WorldFeature::Edge { a, e } => WorldFeature::Edge { a: x.act_point(a), e: x.rot * e },
            WorldFeature::Face { o, n } => WorldFeature::Face { o: x.act_point(o), n: x.rot * n },
        }
    }

    /// Every kind's analytic derivatives against central differences of the closed form
    /// under world-frame twists of each body.
    #[test]
    fn closed_form_derivatives_match_central_differences() {
        let mut rng = SplitMix64::new(7);
        let kinds = [
            ContactKind::VertexVertex,
            ContactKind::VertexEdge,
            ContactKind::EdgeVertex,
            ContactKind::VertexFace,
            ContactKind::FaceVertex,
            ContactKind::EdgeEdge,
        ];
        for kind in kinds {
            for _ in 0..50 {
                let mk = |rng: &mut SplitMix64, f: &str| match f {
                    "v" => WorldFeature::Vertex(rand_vec(rng)),
                    "e" => WorldFeature::Edge { a: rand_vec(rng), e: rand_vec(rng) },
                    _ => WorldFeature::Face { o: rand_vec(rng), n: rand_vec(rng).normalize() },
                };
                let (fa, fb) = match kind {
                    ContactKind::VertexVertex => ("v", "v"),
                    ContactKind::VertexEdge => ("v", "e"),
                    ContactKind::EdgeVertex => ("e", "v"),
                    ContactKind::VertexFace => ("v", "f"),
                    ContactKind::FaceVertex => ("f", "v"),
                    ContactKind::EdgeEdge => ("e", "e"),
                };
                let a = Side { feature: mk(&mut rng, fa), radius: 0.3, moving: true };
                let b = Side { feature: mk(&mut rng, fb), radius: 0.1, moving: true };
                let (g, d) = evaluate_with_derivatives(kind, &a, &b, -1.0).unwrap();
                let g0 = evaluate(kind, &a, &b, -1.0).unwrap();
                assert!((g.point - g0.point).norm() < 1e-14 && (g.distance - g0.distance).abs() < 1e-14);
                let h = 1e-6;
                for k in 0..12 {
                    let eval = |s: f64| {
                        let mut tw = Vec6::zeros();
                        tw[k % 6] = s;
                        let x = se3_exp(&Motion::from_vector(&tw));
                        let (mut a2, mut b2) = (a, b);
                        if k < 6 {
                            a2.feature = moved(&a.feature, &x);
                        } else {
                            b2.feature = moved(&b.feature, &x);
                        }
                        evaluate(kind, &a2, &b2, -1.0).unwrap()
                    };
                    let (p, m) = (eval(h), eval(-h));
                    let dp = (p.point - m.point) / (2.0 * h);
                    let dn = (p.normal - m.normal) / (2.0 * h);
                    let dd = (p.distance - m.distance) / (2.0 * h);
                    let scale = 1.0 + d.point.norm() + d.normal.norm();
                    assert!((dp - d.point.column(k)).norm() < 1e-7 * scale, "{kind:?} point col {k}");
                    assert!((dn - d.normal.column(k)).norm() < 1e-7 * scale, "{kind:?} normal col {k}");
                    assert!((dd - d.distance[(0, k)]).abs() < 1e-7 * scale, "{kind:?} distance col {k}");
                }
            }
        }
    }
}
