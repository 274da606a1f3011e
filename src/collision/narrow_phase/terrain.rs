//! A convex core against a static triangle mesh (terrain).
//!
//! The triangles are those whose boxes overlap the core's bounding box in the mesh
//! frame, inflated by `margin + r_core + r_mesh` (`TriMeshCore::query`), taken in
//! increasing index order. Each is a one-sided flat polytope — three vertices, three
//! edges, a front face (its normal) and a back face — collided with the core by
//! `polytope_pair` with the back face excluded: no contact from behind, and a triangle
//! whose plane has the core's centre behind it is skipped. The triangle's local
//! features are mapped onto the mesh's vertex, edge and triangle indices, so a contact
//! on an edge or vertex shared by several triangles has one identity and is emitted
//! once; contacts found from several triangles at the same point with the same normal
//! (a corner lying on a shared edge) are kept once, the first in triangle order.
//!
//! Internal edges. Every triangle is convex on its own, so a shape sliding over a flat
//! tessellated surface would also see the triangles' edges and corners as contacts
//! whose normals tilt sideways (the "ghost" contacts at internal edges). A contact on a
//! mesh edge or vertex is therefore kept only when its normal m (from the mesh to the
//! core) lies in the feature's normal cone on the mesh surface: `m·(w − x) ≤ 1e-7 |w − x|`
//! for every neighbour w of the feature point x along the adjacent triangles (their
//! third corners for an edge, the other corners for a vertex) and m in front of at
//! least one adjacent triangle. On flat ground that leaves only normals equal to the
//! surface normal, at a convex ridge the arc between the two faces' normals, and at a
//! concave edge nothing (the faces carry the contacts). Edges between coplanar
//! triangles and vertices inside a closed fan of coplanar triangles carry no contact at
//! all: on a planar patch the contact region is the core's face (edge, vertex) clipped
//! by the patch, whose corners are the core's vertices over triangles (vertex–face),
//! the crossings of the core's edges with the patch's non-flat boundary edges and the
//! patch's corners; points on flat internal edges lie between those. The test of a
//! vertex sees the adjacent triangles found by the query, which holds all of them
//! whenever the vertex is within the margin of the core.
//!
//! Remaining limitations: the filter sees one feature at a time, so a core edge that
//! crosses a ridge gets an edge–edge contact even where a neighbouring face is nearer;
//! triangles are tested one by one (a shape can tunnel through a thin terrain between
//! steps: no continuous collision); and a core whose centre is behind a triangle's
//! plane ignores that triangle (a shape pushed halfway through the terrain is not
//! pushed back).

use super::polytope_pair::collide_convex;
use super::{Emitter, Placed, TriangleFeatures};
use crate::collision::bvh::Aabb;
use crate::collision::contact::{Contact, Feature};
use crate::collision::polytope::{Polytope, NO_FACE};
use crate::collision::shape::TriMeshCore;
use crate::math::{Vec3, SE3};

/// Angular tolerance of the normal-cone test of mesh edges and vertices.
const CONE_TOL: f64 = 1e-7;
/// Neighbouring triangles whose normals' dot product reaches this are coplanar.
const FLAT: f64 = 1.0 - 1e-12;
/// Contacts from different triangles closer than this (relative) are one.
const MERGE_TOL: f64 = 1e-6;

/// Whether the normal `m` (mesh frame, from the mesh towards the core) lies in the
/// normal cone of mesh feature `f`; `tris` holds the triangles around it.
fn in_normal_cone(mesh: &TriMeshCore, tris: &[u32], m: &Vec3, f: Feature) -> bool {
    let below = |x: &Vec3, w: &Vec3| {
        let u = w - x;
        m.dot(&u) <= CONE_TOL * u.norm()
    };
    match f {
        Feature::Face(_) => true,
        Feature::Edge(e) => {
            let Some(edge) = mesh.edges.get(e as usize) else { return false };
            if edge.faces.iter().all(|&t| t != NO_FACE)
                && mesh.normals[edge.faces[0] as usize].dot(&mesh.normals[edge.faces[1] as usize]) >= FLAT
            {
                return false;
            }
            let x = mesh.vertices[edge.v[0] as usize];
            let mut front = false;
            for &t in edge.faces.iter().filter(|&&t| t != NO_FACE) {
                let tri = mesh.triangles[t as usize];
                for &w in tri.iter().filter(|w| !edge.v.contains(w)) {
                    if !below(&x, &mesh.vertices[w as usize]) {
                        return false;
                    }
                }
                front |= m.dot(&mesh.normals[t as usize]) >= -CONE_TOL;
            }
            front
        }
        Feature::Vertex(v) => {
            if flat_interior_vertex(mesh, tris, v) {
                return false;
            }
            let x = mesh.vertices[v as usize];
            let mut front = false;
            for &t in tris {
                let tri = mesh.triangles[t as usize];
                if !tri.contains(&v) {
                    continue;
                }
                for &w in tri.iter().filter(|&&w| w != v) {
                    if !below(&x, &mesh.vertices[w as usize]) {
                        return false;
                    }
                }
                front |= m.dot(&mesh.normals[t as usize]) >= -CONE_TOL;
            }
            front
        }
    }
}

/// Whether mesh vertex `v` is surrounded by a closed fan of coplanar triangles (all in
/// `tris`): every other corner of its triangles is shared by exactly two of them, and
/// their normals agree.
fn flat_interior_vertex(mesh: &TriMeshCore, tris: &[u32], v: u32) -> bool {
    let around = || tris.iter().map(|&t| t as usize).filter(|&t| mesh.triangles[t].contains(&v));
    let Some(first) = around().next() else { return false };
    let n0 = mesh.normals[first];
    for t in around() {
        if mesh.normals[t].dot(&n0) < FLAT {
            return false;
        }
        for &w in mesh.triangles[t].iter().filter(|&&w| w != v) {
            if around().filter(|&s| mesh.triangles[s].contains(&w)).count() != 2 {
                return false;
            }
        }
    }
    true
}

/// Whether triangle `t`'s indices are all in range (the mesh is validated when built;
/// a hand-made one may not be).
fn triangle_ok(mesh: &TriMeshCore, t: usize) -> bool {
    let nv = mesh.vertices.len() as u32;
    let ne = mesh.edges.len() as u32;
    t < mesh.triangles.len()
        && t < mesh.normals.len()
        && t < mesh.triangle_edges.len()
        && mesh.triangles[t].iter().all(|&v| v < nv)
        && mesh.triangle_edges[t].iter().all(|&e| e < ne)
}

/// P is the convex core; Q the mesh at `mesh_pose`, swept by `mesh_radius` (normally 0).
pub(crate) fn collide_terrain(
    em: &Emitter,
    p: &Placed,
    mesh: &TriMeshCore,
    mesh_pose: &SE3,
    mesh_radius: f64,
    out: &mut Vec<Contact>,
) {
    let local = |x: &Vec3| mesh_pose.inv_act_point(x);
    let mut bounds = Aabb::empty();
    for i in 0..p.poly.vertices.len() {
        let x = local(&p.vertex(i));
        bounds.min = bounds.min.inf(&x);
        bounds.max = bounds.max.sup(&x);
    }
    let bounds = bounds.inflated(em.margin + p.radius + mesh_radius);
    if !(bounds.min.iter().chain(bounds.max.iter()).all(|x| x.is_finite()) && bounds.overlaps(&mesh.aabb)) {
        return;
    }
    let mut tris = Vec::new();
    mesh.query(&bounds, &mut tris);
    tris.sort_unstable();
    tris.dedup();
    let center = local(&p.center());
    let mut tri = Polytope::from_faces(
        vec![Vec3::zeros(), Vec3::x(), Vec3::y()],
        vec![(vec![0, 1, 2], Vec3::z()), (vec![0, 2, 1], -Vec3::z())],
    );
    let rot = mesh_pose.rot;
    let accept = |f: Feature, m: &Vec3| in_normal_cone(mesh, &tris, &rot.tr_mul(m), f);
    for &t in &tris {
        if !triangle_ok(mesh, t as usize) {
            continue;
        }
        let corners = mesh.triangles[t as usize];
        let n = mesh.normals[t as usize];
        let v = corners.map(|c| mesh.vertices[c as usize]);
        if n.dot(&(center - v[0])) < 0.0 {
            continue;
        }
        tri.vertices.copy_from_slice(&v);
        tri.faces[0].normal = n;
        tri.faces[0].offset = n.dot(&v[0]);
        tri.faces[1].normal = -n;
        tri.faces[1].offset = -n.dot(&v[0]);
        tri.center = (v[0] + v[1] + v[2]) / 3.0;
        tri.bounding_radius = v.iter().map(|x| (x - tri.center).norm()).fold(0.0, f64::max);
        let q = Placed { poly: &tri, pose: *mesh_pose, radius: mesh_radius };
        let map = TriangleFeatures { t, corners, edges: mesh.triangle_edges[t as usize] };
        let em_t = Emitter { triangle: Some(map), accept: Some(&accept), ..*em };
        collide_convex(&em_t, p, &q, true, out);
    }
    drop_repeats(em, p.scale(), out);
}

/// Removes the contacts of this call that repeat an earlier one's point and normal
/// (within 1e-6 of the core's size): a corner on a shared mesh edge or vertex is found
/// from every triangle around it.
fn drop_repeats(em: &Emitter, scale: f64, out: &mut Vec<Contact>) {
    let tol = MERGE_TOL * scale;
    let mut k = em.start + 1;
    while k < out.len() {
        let (g, gm) = (out[k].geometry, out[k].midpoint());
        let repeat = out[em.start..k]
            .iter()
            .any(|c| (c.midpoint() - gm).norm() <= tol && (c.geometry.normal - g.normal).norm() <= MERGE_TOL);
        if repeat {
            out.remove(k);
        } else {
            k += 1;
        }
    }
}
