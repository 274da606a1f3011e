//! Narrow phase: the contacts between two collision shapes, each a closed-form
//! feature pair (`feature_pair`), so that every contact's point, normal and signed
//! distance — and their derivatives — are exact functions of the two bodies' poses.
//!
//! [`collide`] dispatches on the pair of cores:
//!
//! | A \ B        | half-space | convex                         | triangle mesh |
//! |--------------|------------|--------------------------------|---------------|
//! | half-space   | none       | `halfspace` (every vertex)     | none          |
//! | convex       | `halfspace`| `spheres` (point/segment pairs) or `polytope_pair` | `terrain` |
//! | triangle mesh| none       | `terrain`                      | none          |
//!
//! The algorithms work on an ordered pair (P, Q) of cores placed in the world
//! (`Placed`); an `Emitter` turns a feature pair of (P, Q) into a contact of the
//! caller's (A, B) — exchanging the two when the dispatch reversed them, mapping a
//! terrain triangle's local features onto the mesh's global indices — by placing the
//! two features with [`ShapeInstance::world_feature`] and evaluating their closed form
//! with [`feature_pair::evaluate`](super::feature_pair::evaluate). The closed form is
//! thus the single source of every contact's geometry: `recompute::recompute` at
//! the same poses reproduces it bit for bit, and its derivatives are exact.
//!
//! Files: `closest_points` (segment and point closest points, overlap of parallel
//! segments), `gjk` (distance between separated cores), `sat` (separating axes with
//! Minkowski-face pruning of edge pairs), `manifold` (face clipping into vertex–face,
//! face–vertex and edge–edge contacts), `reduce` (a convex pair's contacts cut to
//! [`MAX_PAIR_CONTACTS`], keeping the deepest and the support polygon's corners),
//! `polytope_pair` (the convex–convex logic),
//! `spheres` (point and segment cores), `halfspace`, `terrain`.
//!
//! Degenerate closed forms (coincident sphere centres, a point on an edge's line,
//! parallel edges) are skipped, never emitted: no contact carries a NaN.

// `!(x > tol)` rejects NaN along with small values: the narrow phase's guards are
// written that way on purpose.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

mod closest_points;
mod gjk;
mod halfspace;
mod manifold;
mod polytope_pair;
mod reduce;
mod sat;
mod spheres;
mod terrain;

use super::contact::{Contact, ContactGeometry, ContactId, ContactKind, Feature};
use super::feature_pair::{evaluate, Side, WorldFeature};
use super::polytope::Polytope;
use super::shape::{ShapeCore, ShapeInstance};
use crate::math::{Vec3, SE3};

/// Segments (and polytope edges) whose directions make an angle with sine below this
/// are treated as parallel: the contact is the pair of vertex–edge contacts at the ends
/// of their overlap instead of an ill-conditioned edge–edge contact. The distance of
/// those contacts exceeds the true one by at most `(ℓ·sin θ)² / 2d` (ℓ the overlap, d
/// the distance).
pub const PARALLEL_SIN: f64 = 1e-6;

pub use reduce::MAX_PAIR_CONTACTS;

/// Contacts between shapes `a` and `b` (indices `ia`, `ib` into the collision model's shapes),
/// at world poses `pose_a`, `pose_b`: every feature pair whose signed distance is < `margin`,
/// appended to `out` with normals from A to B and `body_a/body_b` from the instances.
///
/// Pairs of half-spaces and triangle meshes (with each other or themselves) give no
/// contact. Contacts come in a deterministic order, without duplicated [`ContactId`]s.
/// A pair of convex shapes (or a convex shape and a half-space) gives at most
/// [`MAX_PAIR_CONTACTS`] (`reduce`: the deepest and the corners of the support polygon);
/// a convex shape on a triangle mesh gives one set per triangle, unreduced.
/// Bad input (non-finite poses or margin, features out of range) gives no contact
/// rather than a NaN.
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
    if !(margin.is_finite() && pose_a.is_finite() && pose_b.is_finite() && a.radius >= 0.0 && b.radius >= 0.0) {
        return;
    }
    let mut em = Emitter {
        ia,
        a,
        pose_a,
        ib,
        b,
        pose_b,
        margin,
        flipped: false,
        start: out.len(),
        triangle: None,
        accept: None,
    };
    let empty = |s: &ShapeInstance| matches!(&s.core, ShapeCore::Convex(p) if p.vertices.is_empty());
    if empty(a) || empty(b) {
        return;
    }
    match (&a.core, &b.core) {
        (ShapeCore::Convex(pa), ShapeCore::Convex(pb)) => {
            let (mut p, mut q) = (Placed::new(pa, pose_a, a.radius), Placed::new(pb, pose_b, b.radius));
            // P is the lesser core: point < segment < solid.
            if q.rank() < p.rank() {
                std::mem::swap(&mut p, &mut q);
                em.flipped = true;
            }
            if q.rank() < 2 {
                spheres::collide_cores(&em, &p, &q, out);
            } else {
                polytope_pair::collide_convex(&em, &p, &q, false, out);
                reduce::reduce_manifold(out, em.start, MAX_PAIR_CONTACTS);
            }
        }
        (ShapeCore::Convex(pa), ShapeCore::HalfSpace) => {
            halfspace::collide_halfspace(&em, &Placed::new(pa, pose_a, a.radius), pose_b, b.radius, out);
            reduce::reduce_manifold(out, em.start, MAX_PAIR_CONTACTS);
        }
        (ShapeCore::HalfSpace, ShapeCore::Convex(pb)) => {
            em.flipped = true;
            halfspace::collide_halfspace(&em, &Placed::new(pb, pose_b, b.radius), pose_a, a.radius, out);
            reduce::reduce_manifold(out, em.start, MAX_PAIR_CONTACTS);
        }
        (ShapeCore::Convex(pa), ShapeCore::TriMesh(m)) => {
            terrain::collide_terrain(&em, &Placed::new(pa, pose_a, a.radius), m, pose_b, b.radius, out);
        }
        (ShapeCore::TriMesh(m), ShapeCore::Convex(pb)) => {
            em.flipped = true;
            terrain::collide_terrain(&em, &Placed::new(pb, pose_b, b.radius), m, pose_a, a.radius, out);
        }
        _ => {}
    }
}

/// A convex core placed in the world: its polytope, world pose and sweep radius.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Placed<'a> {
    /// The core.
    pub poly: &'a Polytope,
    /// Pose of the shape frame in the world.
    pub pose: SE3,
    /// Sweep radius.
    pub radius: f64,
}

impl<'a> Placed<'a> {
    fn new(poly: &'a Polytope, pose: &SE3, radius: f64) -> Self {
        Placed { poly, pose: *pose, radius }
    }

    /// 0 for a point, 1 for a segment, 2 for a polytope with faces.
    fn rank(&self) -> u8 {
        if !self.poly.faces.is_empty() {
            2
        } else if self.poly.edges.is_empty() {
            0
        } else {
            1
        }
    }

    /// Vertex `i` in the world.
    #[inline]
    fn vertex(&self, i: usize) -> Vec3 {
        self.pose.act_point(&self.poly.vertices[i])
    }

    /// The vertex farthest along the world direction `d`, and its world position.
    fn support(&self, d: &Vec3) -> (usize, Vec3) {
        let (i, _) = self.poly.support(&self.pose.rot.tr_mul(d));
        (i, self.vertex(i))
    }

    /// World outward normal of face `f`.
    #[inline]
    fn face_normal(&self, f: usize) -> Vec3 {
        self.pose.rot * self.poly.faces[f].normal
    }

    /// World plane offset of face `f`: `n · x = offset` on the face.
    #[inline]
    fn face_offset(&self, f: usize) -> f64 {
        let face = &self.poly.faces[f];
        face.offset + (self.pose.rot * face.normal).dot(&self.pose.trans)
    }

    /// Start point and edge vector of edge `e`, in the world.
    #[inline]
    fn edge(&self, e: usize) -> (Vec3, Vec3) {
        let (a, v) = self.poly.edge_segment(e);
        (self.pose.act_point(&a), self.pose.rot * v)
    }

    /// Interior point in the world.
    fn center(&self) -> Vec3 {
        self.pose.act_point(&self.poly.center)
    }

    /// A length for relative tolerances (never zero).
    fn scale(&self) -> f64 {
        self.poly.bounding_radius.max(self.radius).max(1e-9)
    }
}

/// Local features of a one-sided terrain triangle (vertices 0..3, edges 0..3 joining
/// corners k and k+1, face 0 the front, face 1 the back) mapped onto its mesh.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TriangleFeatures {
    /// Triangle index.
    pub t: u32,
    /// Mesh vertex of each corner.
    pub corners: [u32; 3],
    /// Mesh edge joining corners k and k+1.
    pub edges: [u32; 3],
}

impl TriangleFeatures {
    /// The mesh feature of a local one; `None` for the back face (one-sided triangles
    /// never touch from behind).
    fn global(&self, f: Feature) -> Option<Feature> {
        match f {
            Feature::Vertex(k) => self.corners.get(k as usize).map(|&v| Feature::Vertex(v)),
            Feature::Edge(k) => self.edges.get(k as usize).map(|&e| Feature::Edge(e)),
            Feature::Face(0) => Some(Feature::Face(self.t)),
            Feature::Face(_) => None,
        }
    }
}

/// Extra test of a terrain contact: the mesh feature and the contact normal pointing
/// from the mesh to the other shape (world frame).
pub(crate) type Acceptance<'a> = &'a dyn Fn(Feature, &Vec3) -> bool;

/// Turns feature pairs of the internal pair (P, Q) into contacts of (A, B).
#[derive(Clone, Copy)]
pub(crate) struct Emitter<'a> {
    ia: u32,
    a: &'a ShapeInstance,
    pose_a: &'a SE3,
    ib: u32,
    b: &'a ShapeInstance,
    pose_b: &'a SE3,
    /// Contacts are kept when their signed distance is below this.
    pub margin: f64,
    /// Whether P is B and Q is A.
    flipped: bool,
    /// Index in `out` of this call's first contact (duplicates are looked up from there).
    pub start: usize,
    /// Q is this terrain triangle.
    triangle: Option<TriangleFeatures>,
    /// Filter on terrain contacts.
    accept: Option<Acceptance<'a>>,
}

impl Emitter<'_> {
    /// The contact of the feature pair `(fp, fq)` of (P, Q): its closed form, when it is
    /// well defined, finite, closer than the margin and accepted by the terrain filter.
    /// `hint_pq` (P → Q) fixes the sign of an edge–edge normal.
    pub fn contact(&self, fp: Feature, fq: Feature, hint_pq: &Vec3) -> Option<Contact> {
        let fq = match &self.triangle {
            Some(map) => map.global(fq)?,
            None => fq,
        };
        let (fa, fb, hint) = if self.flipped { (fq, fp, -hint_pq) } else { (fp, fq, *hint_pq) };
        let kind = ContactKind::from_features(fa, fb)?;
        let wa = self.a.world_feature(self.pose_a, fa)?;
        let wb = self.b.world_feature(self.pose_b, fb)?;
        let orientation = match (&wa, &wb) {
            (WorldFeature::Edge { e: ea, .. }, WorldFeature::Edge { e: eb, .. }) if ea.cross(eb).dot(&hint) < 0.0 => {
                -1.0
            }
            _ => 1.0,
        };
        let sa = Side { feature: wa, radius: self.a.radius, moving: self.a.body.is_some() };
        let sb = Side { feature: wb, radius: self.b.radius, moving: self.b.body.is_some() };
        let g = evaluate(kind, &sa, &sb, orientation)?;
        let finite = g.distance.is_finite() && g.point.iter().chain(g.normal.iter()).all(|x| x.is_finite());
        if !(finite && g.distance < self.margin) {
            return None;
        }
        if let Some(accept) = self.accept {
            let from_mesh = if self.flipped { g.normal } else { -g.normal };
            if !accept(fq, &from_mesh) {
                return None;
            }
        }
        let id = ContactId { shape_a: self.ia, shape_b: self.ib, feature_a: fa, feature_b: fb };
        Some(Contact { id, body_a: self.a.body, body_b: self.b.body, kind, orientation, geometry: g })
    }

    /// Appends `c` unless this call already produced a contact with its identity.
    pub fn push(&self, c: Contact, out: &mut Vec<Contact>) -> bool {
        if out[self.start..].iter().any(|d| d.id == c.id) {
            return false;
        }
        out.push(c);
        true
    }

    /// [`Emitter::contact`] appended with [`Emitter::push`]; returns its geometry.
    pub fn emit(&self, fp: Feature, fq: Feature, hint_pq: &Vec3, out: &mut Vec<Contact>) -> Option<ContactGeometry> {
        let c = self.contact(fp, fq, hint_pq)?;
        self.push(c, out).then_some(c.geometry)
    }
}

#[cfg(test)]
mod tests;
