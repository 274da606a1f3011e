//! The boundary surface of a tetrahedral mesh: the faces that belong to exactly one tet,
//! oriented with outward normals, for collision and output.
//!
//! Every positively oriented tet `[v0, v1, v2, v3]` has the outward faces
//! `[v1, v2, v3]`, `[v0, v3, v2]`, `[v0, v1, v3]` and `[v0, v2, v1]` (face `a` opposite
//! vertex `a`; by the right-hand rule its normal points away from that vertex). A face
//! named by one tet only is on the boundary and keeps the orientation it has in that tet,
//! so the normals point out of the body. The order is deterministic: tets in mesh
//! order, faces in the order above.

use crate::math::Vec3;
use crate::soft::mesh::TetMesh;
use std::collections::HashMap;

/// The faces of tet `[v0, v1, v2, v3]` (positions in the tet), face `a` opposite vertex
/// `a`, each ordered so that its right-hand normal points away from the opposite vertex.
const FACES: [[usize; 3]; 4] = [[1, 2, 3], [0, 3, 2], [0, 1, 3], [0, 2, 1]];

/// The boundary triangles of a [`TetMesh`] (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Surface {
    /// The boundary triangles (mesh vertex indices), outward normals by the right-hand rule.
    pub triangles: Vec<[usize; 3]>,
    /// The tet that owns each triangle.
    pub tet_of: Vec<usize>,
    /// The distinct vertices on the surface, ascending.
    pub vertices: Vec<usize>,
}

/// The boundary surface of `mesh`: the faces shared by exactly one tet, outward-oriented,
/// in a deterministic order (tets in mesh order, then their faces opposite vertex 0..3).
pub fn surface(mesh: &TetMesh) -> Surface {
    let key = |t: &[usize; 4], f: &[usize; 3]| {
        let mut k = f.map(|a| t[a]);
        k.sort_unstable();
        k
    };
    let mut count: HashMap<[usize; 3], u32> = HashMap::with_capacity(2 * mesh.num_tets());
    for t in mesh.tets() {
        for f in &FACES {
            *count.entry(key(t, f)).or_insert(0) += 1;
        }
    }
    let mut triangles = Vec::new();
    let mut tet_of = Vec::new();
    for (ti, t) in mesh.tets().iter().enumerate() {
        for f in &FACES {
            if count[&key(t, f)] == 1 {
                triangles.push(f.map(|a| t[a]));
                tet_of.push(ti);
            }
        }
    }
    let mut vertices: Vec<usize> = triangles.iter().flatten().copied().collect();
    vertices.sort_unstable();
    vertices.dedup();
    Surface { triangles, tet_of, vertices }
}

impl Surface {
    /// The number of triangles.
    pub fn len(&self) -> usize {
        self.triangles.len()
    }

    /// Whether the surface has no triangles.
    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// The total area of the triangles at `positions` (one per mesh vertex).
    /// Panics when a triangle names a vertex beyond `positions`.
    pub fn area(&self, positions: &[Vec3]) -> f64 {
        self.triangles
            .iter()
            .map(|&[a, b, c]| 0.5 * (positions[b] - positions[a]).cross(&(positions[c] - positions[a])).norm())
            .sum()
    }

    /// The volume enclosed by the triangles at `positions` (one per mesh vertex), by the
    /// divergence theorem: `Σ x_a · (x_b × x_c) / 6`. Positive for a closed surface with
    /// outward normals; it equals the mesh volume while no tet is inverted.
    /// Panics when a triangle names a vertex beyond `positions`.
    pub fn enclosed_volume(&self, positions: &[Vec3]) -> f64 {
        self.triangles.iter().map(|&[a, b, c]| positions[a].dot(&positions[b].cross(&positions[c]))).sum::<f64>() / 6.0
    }

    /// The outward unit normal of triangle `i` at `positions` (zero for a degenerate one).
    /// Panics when `i` or a vertex is out of range.
    pub fn normal(&self, i: usize, positions: &[Vec3]) -> Vec3 {
        let [a, b, c] = self.triangles[i];
        let n = (positions[b] - positions[a]).cross(&(positions[c] - positions[a]));
        let len = n.norm();
        if len > 0.0 {
            n / len
        } else {
            Vec3::zeros()
        }
    }
}
