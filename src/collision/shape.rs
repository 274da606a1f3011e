//! The collision model: every collision shape of a [`crate::Model`] compiled into a
//! convex core swept by a radius (or a half-space, or a static triangle mesh), with
//! the filtering data the broad phase needs. Built and validated once, with the model.

use super::bvh::{Aabb, Bvh};
use super::contact::Feature;
use super::feature_pair::WorldFeature;
use super::polytope::{PolyEdge, Polytope, MESH_TOLERANCE};
use super::predicates::cross_accurate;
use crate::collision::Material;
use crate::math::{Vec3, SE3};
use std::sync::Arc;

/// A static triangle mesh (terrain), one-sided: each triangle's front is the side its
/// counter-clockwise winding faces, and contacts push shapes out of the front.
///
/// Feature indices of contacts refer to this mesh: `Vertex(i)` is `vertices[i]`,
/// `Edge(i)` is `edges[i]`, `Face(t)` is triangle t.
#[derive(Clone, Debug, PartialEq)]
pub struct TriMeshCore {
    /// Vertex positions (shape frame).
    pub vertices: Vec<Vec3>,
    /// Triangles, counter-clockwise seen from the front.
    pub triangles: Vec<[u32; 3]>,
    /// Unit front normal of each triangle.
    pub normals: Vec<Vec3>,
    /// Unique edges with their (one or two) triangles.
    pub edges: Vec<PolyEdge>,
    /// Edge indices of each triangle: `triangle_edges[t][k]` joins corners k and k+1.
    pub triangle_edges: Vec<[u32; 3]>,
    /// Bounding box of each triangle (shape frame).
    pub triangle_boxes: Vec<Aabb>,
    /// Bounding box of the whole mesh (shape frame).
    pub aabb: Aabb,
    /// Bounding-volume hierarchy over `triangle_boxes`, used by [`TriMeshCore::query`].
    /// A hand-built mesh may leave it empty (`Bvh::default()`): queries then test every
    /// triangle box; or fill it with `Bvh::build(&triangle_boxes)`.
    pub bvh: Bvh,
}

impl TriMeshCore {
    /// Compiles a static triangle mesh: validates it (finite, no duplicate vertices, no
    /// zero-area or degenerate triangles, indices in range), builds the edge table,
    /// normals and the bounding-volume hierarchy.
    ///
    /// Normals are the exactly computed `(b − a) × (c − a)` of each triangle, normalised
    /// ([`super::predicates::cross_accurate`]).
    ///
    /// Errors (`size`: largest extent of the bounding box of the used vertices): no
    /// triangle; a non-finite vertex; an index out of range; a triangle repeating a
    /// vertex; two used vertices within [`MESH_TOLERANCE`]`·size` (duplicates — weld them so
    /// neighbouring triangles share edges); a triangle of height ≤ [`MESH_TOLERANCE`]`·size`
    /// (zero area); an edge shared by more than two triangles (non-manifold); two
    /// triangles running along their shared edge in the same direction (inconsistent
    /// winding: one of them faces the wrong way). Vertices no triangle uses are kept and
    /// ignored.
    ///
    /// Edges follow the convention of [`Polytope::from_faces`]: `edges[e].v` sorted,
    /// `faces[0]` the triangle running `v[0] → v[1]`, `faces[1]` the one running back,
    /// [`NO_FACE`](super::polytope::NO_FACE) on the open side of a boundary edge.
    pub fn new(mesh: &crate::collision::TriangleMesh) -> Result<TriMeshCore, String> {
        TriMeshCore::build(mesh, false).map(|(core, _)| core)
    }

    /// [`TriMeshCore::new`] accepting a mesh that is not a consistently wound manifold:
    /// an edge shared by more than two triangles, or by two running the same way, is
    /// split — each triangle that cannot join it gets an open edge of its own — and the
    /// number of splits is returned. The mesh then collides as a surface with open
    /// edges there (contacts on those edges are not filtered against the neighbouring
    /// faces, and a triangle wound the wrong way is one-sided towards its back).
    pub fn new_splitting_bad_edges(mesh: &crate::collision::TriangleMesh) -> Result<(TriMeshCore, usize), String> {
        TriMeshCore::build(mesh, true)
    }

    fn build(mesh: &crate::collision::TriangleMesh, split: bool) -> Result<(TriMeshCore, usize), String> {
        use super::mesh_check::{check_areas, check_duplicates, check_indices, edge_table_with, size};
        let (vertices, triangles) = (&mesh.vertices, &mesh.triangles);
        let used = check_indices(vertices, triangles, 1)?;
        let tol = MESH_TOLERANCE * size(vertices, &used);
        check_duplicates(vertices, &used, tol)?;
        check_areas(vertices, triangles, tol)?;
        let (edges, triangle_edges, splits) = edge_table_with(triangles, split)?;
        let corners = |t: &[u32; 3]| t.map(|i| vertices[i as usize]);
        let normals: Vec<Vec3> = triangles
            .iter()
            .map(|t| {
                let [a, b, c] = corners(t);
                cross_accurate(&a, &b, &c).normalize()
            })
            .collect();
        let triangle_boxes: Vec<Aabb> = triangles.iter().map(|t| Aabb::from_points(&corners(t))).collect();
        let aabb = triangle_boxes.iter().fold(Aabb::empty(), |b, t| b.merge(t));
        let bvh = Bvh::build(&triangle_boxes);
        let core = TriMeshCore {
            vertices: vertices.clone(),
            triangles: triangles.clone(),
            normals,
            edges,
            triangle_edges,
            triangle_boxes,
            aabb,
            bvh,
        };
        Ok((core, splits))
    }

    /// Indices of the triangles whose boxes overlap `query` (shape frame; touching
    /// counts), appended to `out` in increasing order. Walks the bounding-volume
    /// hierarchy (every triangle box when `bvh` is empty); allocates nothing beyond what
    /// `out` needs.
    pub fn query(&self, query: &Aabb, out: &mut Vec<u32>) {
        if self.bvh.nodes.is_empty() {
            for (t, b) in self.triangle_boxes.iter().enumerate() {
                if b.overlaps(query) {
                    out.push(t as u32);
                }
            }
            return;
        }
        let start = out.len();
        self.bvh.query(&self.triangle_boxes, query, out);
        out[start..].sort_unstable();
    }
}

/// The core of a collision shape.
#[derive(Clone, Debug, PartialEq)]
pub enum ShapeCore {
    /// The half-space `z ≤ 0` of the shape frame (one face, `Face(0)`, normal +z).
    HalfSpace,
    /// A convex polytope (possibly a point or a segment), swept by the shape's radius.
    Convex(Arc<Polytope>),
    /// A static triangle mesh.
    TriMesh(Arc<TriMeshCore>),
}

/// What a compiled shape was declared as (for reports and plots).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShapeKind {
    /// A half-space.
    Plane,
    /// A sphere (a point core swept by the radius).
    Sphere,
    /// A box.
    Box,
    /// A capsule (a segment core swept by the radius).
    Capsule,
    /// A cylinder, approximated by a prism.
    Cylinder,
    /// A convex mesh.
    ConvexMesh,
    /// A triangle mesh: static terrain, or the convex hull of its vertices on a moving body.
    Mesh,
}

impl ShapeKind {
    /// Lower-case name.
    pub fn name(&self) -> &'static str {
        match self {
            ShapeKind::Plane => "plane",
            ShapeKind::Sphere => "sphere",
            ShapeKind::Box => "box",
            ShapeKind::Capsule => "capsule",
            ShapeKind::Cylinder => "cylinder",
            ShapeKind::ConvexMesh => "convex mesh",
            ShapeKind::Mesh => "mesh",
        }
    }
}

/// One compiled collision shape.
#[derive(Clone, Debug, PartialEq)]
pub struct ShapeInstance {
    /// The body carrying it (`None`: static world geometry).
    pub body: Option<usize>,
    /// Index of the shape among its body's (or the world's) collision shapes.
    pub index_on_body: usize,
    /// Pose of the shape frame in the body frame (in the world frame for world shapes).
    pub local: SE3,
    /// The core.
    pub core: ShapeCore,
    /// Sweep radius of the core (sphere and capsule radius; 0 otherwise).
    pub radius: f64,
    /// What the shape was declared as.
    pub kind: ShapeKind,
    /// Contact material.
    pub material: Material,
    /// Collision group bits: this shape belongs to these groups.
    pub group: u32,
    /// Collision mask bits: this shape collides with these groups. A pair collides when
    /// `(group_a & mask_b) != 0 && (group_b & mask_a) != 0`.
    pub mask: u32,
}

impl ShapeCore {
    /// The core as a triangle mesh, for drawing: a convex core's vertices with its faces
    /// fanned into triangles (a point's or a segment's vertices and no triangles), a
    /// triangle mesh as it is, nothing for a half-space.
    pub fn mesh(&self) -> (Vec<Vec3>, Vec<[usize; 3]>) {
        match self {
            ShapeCore::HalfSpace => (Vec::new(), Vec::new()),
            ShapeCore::Convex(p) => {
                let mut tris = Vec::new();
                for f in &p.faces {
                    let l = &f.vertices;
                    for k in 1..l.len().saturating_sub(1) {
                        tris.push([l[0] as usize, l[k] as usize, l[k + 1] as usize]);
                    }
                }
                (p.vertices.clone(), tris)
            }
            ShapeCore::TriMesh(m) => (m.vertices.clone(), m.triangles.iter().map(|t| t.map(|i| i as usize)).collect()),
        }
    }
}

impl ShapeInstance {
    /// The core as a triangle mesh in the shape frame, for drawing ([`ShapeCore::mesh`]).
    pub fn core_mesh(&self) -> (Vec<Vec3>, Vec<[usize; 3]>) {
        self.core.mesh()
    }

    /// World pose of the shape frame, from the world poses of the bodies.
    pub fn world_pose(&self, x_world: &[SE3]) -> SE3 {
        match self.body {
            Some(b) => x_world[b] * self.local,
            None => self.local,
        }
    }

    /// A feature of the core placed by the shape's world pose `pose`, or `None` when the
    /// index does not exist.
    pub fn world_feature(&self, pose: &SE3, feature: Feature) -> Option<WorldFeature> {
        let point = |p: &Vec3| pose.act_point(p);
        let dir = |d: &Vec3| pose.rot * d;
        match (&self.core, feature) {
            (ShapeCore::HalfSpace, Feature::Face(0)) => Some(WorldFeature::Face { o: pose.trans, n: dir(&Vec3::z()) }),
            (ShapeCore::Convex(p), Feature::Vertex(i)) => {
                p.vertices.get(i as usize).map(|v| WorldFeature::Vertex(point(v)))
            }
            (ShapeCore::Convex(p), Feature::Edge(i)) => (i < p.edges.len() as u32).then(|| {
                let (a, e) = p.edge_segment(i as usize);
                WorldFeature::Edge { a: point(&a), e: dir(&e) }
            }),
            (ShapeCore::Convex(p), Feature::Face(i)) => p
                .faces
                .get(i as usize)
                .map(|f| WorldFeature::Face { o: point(&(f.normal * f.offset)), n: dir(&f.normal) }),
            (ShapeCore::TriMesh(m), Feature::Vertex(i)) => {
                m.vertices.get(i as usize).map(|v| WorldFeature::Vertex(point(v)))
            }
            (ShapeCore::TriMesh(m), Feature::Edge(i)) => m.edges.get(i as usize).map(|e| {
                let a = m.vertices[e.v[0] as usize];
                WorldFeature::Edge { a: point(&a), e: dir(&(m.vertices[e.v[1] as usize] - a)) }
            }),
            (ShapeCore::TriMesh(m), Feature::Face(t)) => m.triangles.get(t as usize).map(|tri| WorldFeature::Face {
                o: point(&m.vertices[tri[0] as usize]),
                n: dir(&m.normals[t as usize]),
            }),
            _ => None,
        }
    }
}

/// Which shape pairs may collide, beyond the per-shape group/mask bits.
///
/// Bodies welded together by fixed joints form one rigid group and never collide with
/// each other; shapes welded to the world count as world geometry.
#[derive(Clone, Debug, PartialEq)]
pub struct CollisionFilter {
    /// Rigid group of each body: the index of the nearest ancestor-or-self body with
    /// degrees of freedom, or `None` when the body is welded to the world.
    pub rigid_group: Vec<Option<usize>>,
    /// The rigid group of each rigid group's parent (through the joint that moves it);
    /// `None` for the world. Indexed by body; meaningful at group representatives.
    pub parent_group: Vec<Option<usize>>,
    /// Articulation (root body index: the child of the world at the top of its subtree)
    /// of each body.
    pub articulation: Vec<usize>,
    /// Per body: whether its articulation collides with itself.
    pub self_collision: Vec<bool>,
    /// Whether shapes on a parent and a child rigid group are skipped (default true).
    pub skip_parent_child: bool,
    /// Extra body pairs that never collide, each sorted `(low, high)`.
    pub excluded_pairs: Vec<(usize, usize)>,
}

/// All collision shapes of a model, compiled, with the filter.
#[derive(Clone, Debug, PartialEq)]
pub struct CollisionModel {
    /// The shapes: every body's, in body order, then the world's.
    pub shapes: Vec<ShapeInstance>,
    /// Pair filtering.
    pub filter: CollisionFilter,
}
