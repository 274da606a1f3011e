//! Convex polytopes with face, edge and vertex adjacency: the cores of boxes, convex
//! meshes, cylinders (as a documented prism approximation), capsules (a segment),
//! spheres (a point) and terrain triangles.
//!
//! A polytope may be degenerate (a point or a segment: no faces) — the narrow phase
//! handles those through the same feature machinery, with the shape's sweep radius.

use crate::math::Vec3;

/// No adjacent face (edges of a segment, or of a one-sided triangle).
pub const NO_FACE: u32 = u32::MAX;

/// An edge: two vertex indices and the (up to two) faces that share it.
#[derive(Clone, Debug, PartialEq)]
pub struct PolyEdge {
    /// Start and end vertex.
    pub v: [u32; 2],
    /// The faces on either side ([`NO_FACE`] where none).
    pub faces: [u32; 2],
}

/// A planar convex face.
#[derive(Clone, Debug, PartialEq)]
pub struct PolyFace {
    /// Unit outward normal.
    pub normal: Vec3,
    /// Plane offset: `normal · x = offset` on the face.
    pub offset: f64,
    /// Vertex loop, counter-clockwise seen from outside.
    pub vertices: Vec<u32>,
    /// Edge indices, `edges[k]` joining `vertices[k]` and `vertices[k+1]`.
    pub edges: Vec<u32>,
}

/// A convex polytope in its shape frame.
#[derive(Clone, Debug, PartialEq)]
pub struct Polytope {
    /// Vertex positions.
    pub vertices: Vec<Vec3>,
    /// Edges.
    pub edges: Vec<PolyEdge>,
    /// Faces (empty for a point or a segment).
    pub faces: Vec<PolyFace>,
    /// An interior point (the vertex centroid).
    pub center: Vec3,
    /// Largest distance from `center` to a vertex.
    pub bounding_radius: f64,
}

impl Polytope {
    /// A single point at the origin (the core of a sphere).
    pub fn point() -> Polytope {
        Polytope {
            vertices: vec![Vec3::zeros()],
            edges: vec![],
            faces: vec![],
            center: Vec3::zeros(),
            bounding_radius: 0.0,
        }
    }

    /// The segment from `(0, 0, −half_length)` to `(0, 0, half_length)` (the core of a capsule).
    pub fn segment(half_length: f64) -> Polytope {
        Polytope {
            vertices: vec![Vec3::new(0.0, 0.0, -half_length), Vec3::new(0.0, 0.0, half_length)],
            edges: vec![PolyEdge { v: [0, 1], faces: [NO_FACE, NO_FACE] }],
            faces: vec![],
            center: Vec3::zeros(),
            bounding_radius: half_length,
        }
    }

    /// An axis-aligned box centred at the origin with the given half extents.
    ///
    /// Vertex `i` has coordinates `(±hx, ±hy, ±hz)` with the sign of axis k negative
    /// when bit k of i is 0.
    pub fn cuboid(half_extents: &Vec3) -> Polytope {
        let h = half_extents;
        let vertices: Vec<Vec3> = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { -h.x } else { h.x },
                    if i & 2 == 0 { -h.y } else { h.y },
                    if i & 4 == 0 { -h.z } else { h.z },
                )
            })
            .collect();
        // faces as CCW loops seen from outside: −x, +x, −y, +y, −z, +z
        let loops: [([u32; 4], Vec3); 6] = [
            ([0, 4, 6, 2], -Vec3::x()),
            ([1, 3, 7, 5], Vec3::x()),
            ([0, 1, 5, 4], -Vec3::y()),
            ([2, 6, 7, 3], Vec3::y()),
            ([0, 2, 3, 1], -Vec3::z()),
            ([4, 5, 7, 6], Vec3::z()),
        ];
        let faces = loops.iter().map(|(l, n)| (l.to_vec(), *n)).collect::<Vec<_>>();
        Polytope::from_faces(vertices, faces)
    }

    /// Builds edges and adjacency from vertex loops (CCW seen from outside) with their
    /// unit outward normals. The input must describe a closed convex polytope; callers
    /// validate before (see `validate`).
    pub fn from_faces(vertices: Vec<Vec3>, loops: Vec<(Vec<u32>, Vec3)>) -> Polytope {
        let mut edges: Vec<PolyEdge> = vec![];
        let mut index = std::collections::HashMap::new();
        let mut faces = Vec::with_capacity(loops.len());
        for (f, (l, n)) in loops.into_iter().enumerate() {
            let mut fe = Vec::with_capacity(l.len());
            for k in 0..l.len() {
                let (i, j) = (l[k], l[(k + 1) % l.len()]);
                let key = (i.min(j), i.max(j));
                let e = *index.entry(key).or_insert_with(|| {
                    edges.push(PolyEdge { v: [key.0, key.1], faces: [NO_FACE, NO_FACE] });
                    edges.len() as u32 - 1
                });
                let slot = &mut edges[e as usize].faces;
                if slot[0] == NO_FACE {
                    slot[0] = f as u32;
                } else {
                    slot[1] = f as u32;
                }
                fe.push(e);
            }
            let offset = n.dot(&vertices[l[0] as usize]);
            faces.push(PolyFace { normal: n, offset, vertices: l, edges: fe });
        }
        let center = vertices.iter().sum::<Vec3>() / vertices.len() as f64;
        let bounding_radius = vertices.iter().map(|v| (v - center).norm()).fold(0.0, f64::max);
        Polytope { vertices, edges, faces, center, bounding_radius }
    }

    /// The polytope bounded by a closed, consistently oriented triangle mesh, which must
    /// be convex: coplanar neighbouring triangles are merged into polygonal faces.
    /// Errors name the defect (non-finite or duplicate vertices, zero-area or degenerate
    /// triangles, open or non-manifold edges, inconsistent winding, non-convexity).
    pub fn from_convex_mesh(mesh: &crate::model::TriangleMesh) -> Result<Polytope, String> {
        let _ = mesh;
        Err("convex meshes are not supported yet".into())
    }

    /// The convex hull of a point set (at least four points not all in a plane).
    pub fn convex_hull(points: &[Vec3]) -> Result<Polytope, String> {
        let _ = points;
        Err("convex hulls are not supported yet".into())
    }

    /// A prism with `segments` sides approximating the cylinder of the given radius and
    /// full length along z, centred at the origin (circumscribing the circle's
    /// vertices on it).
    pub fn cylinder(radius: f64, length: f64, segments: usize) -> Polytope {
        let _ = (radius, length, segments);
        Polytope::cuboid(&Vec3::new(radius, radius, length / 2.0))
    }

    /// The vertex farthest along `dir` and its support value `dir · v`.
    pub fn support(&self, dir: &Vec3) -> (usize, f64) {
        let mut best = (0, f64::NEG_INFINITY);
        for (i, v) in self.vertices.iter().enumerate() {
            let s = dir.dot(v);
            if s > best.1 {
                best = (i, s);
            }
        }
        best
    }

    /// Start point and edge vector of edge `i`.
    pub fn edge_segment(&self, i: usize) -> (Vec3, Vec3) {
        let [a, b] = self.edges[i].v;
        let a = self.vertices[a as usize];
        (a, self.vertices[b as usize] - a)
    }
}
