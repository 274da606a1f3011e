//! Triangle meshes, the input of mesh and convex-mesh collision shapes.

use crate::math::Vec3;
use serde::{Deserialize, Serialize};

/// A triangle mesh (collision meshes are loaded into memory; see `io`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TriangleMesh {
    /// Vertex positions in the shape frame (scale already applied).
    pub vertices: Vec<Vec3>,
    /// Triangles as vertex-index triples (counter-clockwise seen from outside).
    pub triangles: Vec<[u32; 3]>,
    /// Where the mesh came from, if loaded from a file.
    pub source: Option<String>,
}
