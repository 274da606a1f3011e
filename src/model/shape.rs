//! Collision and visual geometry attached to bodies, and contact materials.
//! Stored by the model now; used by the collision and contact layers.

pub use crate::collision::{Material, TriangleMesh};
use crate::math::{Vec3, SE3};
use serde::{Deserialize, Serialize};

/// A collision geometry, in its own shape frame.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Geometry {
    /// The half-space `z ≤ 0` of the shape frame (outward normal +z).
    Plane,
    /// A sphere centred at the origin.
    Sphere {
        /// Radius.
        radius: f64,
    },
    /// A box centred at the origin.
    Box {
        /// Half side lengths.
        half_extents: Vec3,
    },
    /// A capsule along the z axis: a segment of length `length` swept by a sphere.
    Capsule {
        /// Radius.
        radius: f64,
        /// Length of the segment (excluding the caps).
        length: f64,
    },
    /// A cylinder along the z axis, centred at the origin.
    Cylinder {
        /// Radius.
        radius: f64,
        /// Full length.
        length: f64,
    },
    /// A triangle mesh. On the world (or on links welded to it) it is static terrain,
    /// collided triangle by triangle; on a moving body it collides as the convex hull
    /// of its vertices.
    Mesh(TriangleMesh),
    /// A convex polyhedron given as a closed triangle mesh; coplanar triangles are
    /// merged into polygonal faces. Building the model checks that it is convex.
    ConvexMesh(TriangleMesh),
}

/// A collision shape: a geometry placed on a body, with a material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollisionShape {
    /// Optional name (URDF `<collision name=...>`).
    pub name: Option<String>,
    /// The geometry.
    pub geometry: Geometry,
    /// Pose of the shape frame in the body frame.
    pub origin: SE3,
    /// Contact material.
    pub material: Material,
    /// Collision group bits: the groups this shape belongs to (default 1).
    #[serde(default = "default_group")]
    pub group: u32,
    /// Collision mask bits: the groups this shape collides with (default all). Two
    /// shapes collide when `(group_a & mask_b) != 0 && (group_b & mask_a) != 0`.
    #[serde(default = "default_mask")]
    pub mask: u32,
}

fn default_group() -> u32 {
    1
}

fn default_mask() -> u32 {
    u32::MAX
}

impl CollisionShape {
    /// A shape with the default material and filter bits, placed at `origin` on its body.
    pub fn new(geometry: Geometry, origin: SE3) -> Self {
        Self {
            name: None,
            geometry,
            origin,
            material: Material::default(),
            group: default_group(),
            mask: default_mask(),
        }
    }

    /// The same shape with the given material.
    pub fn with_material(mut self, material: Material) -> Self {
        self.material = material;
        self
    }

    /// The same shape with the given collision group and mask bits.
    pub fn with_filter(mut self, group: u32, mask: u32) -> Self {
        self.group = group;
        self.mask = mask;
        self
    }
}

/// Visual geometry: a primitive, or a reference to a mesh file that is not loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum VisualGeometry {
    /// A primitive shape.
    Primitive(Geometry),
    /// A mesh file, kept as a reference.
    MeshFile {
        /// The path as resolved (or as written when it could not be resolved).
        path: String,
        /// Scale per axis.
        scale: Vec3,
    },
}

/// A visual shape on a body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VisualShape {
    /// Optional name.
    pub name: Option<String>,
    /// The geometry.
    pub geometry: VisualGeometry,
    /// Pose of the shape frame in the body frame.
    pub origin: SE3,
    /// RGBA colour, if given.
    pub rgba: Option<[f64; 4]>,
}
