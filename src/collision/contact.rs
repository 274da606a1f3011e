//! What the collision layer outputs: contacts between features of two shapes, with
//! a stable identity, and the derivatives of their geometry.

use crate::math::Vec3;
use nalgebra::SMatrix;

/// A feature of a shape's convex core (see `polytope`): contacts are between features.
///
/// Spheres are a single vertex swept by their radius, capsules a segment (two vertices
/// and one edge), half-spaces a single face. For static triangle meshes the indices
/// are the mesh's own vertex, edge and triangle-face indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    /// A vertex.
    Vertex(u32),
    /// An edge.
    Edge(u32),
    /// A face.
    Face(u32),
}

impl Feature {
    /// `"vertex"`, `"edge"` or `"face"`.
    pub fn name(&self) -> &'static str {
        match self {
            Feature::Vertex(_) => "vertex",
            Feature::Edge(_) => "edge",
            Feature::Face(_) => "face",
        }
    }
}

/// The closed form a contact is computed with, from the features of its two shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContactKind {
    /// Vertex of A against vertex of B (sphere–sphere; corner to corner within the margin).
    VertexVertex,
    /// Vertex of A against an edge of B.
    VertexEdge,
    /// Edge of A against a vertex of B.
    EdgeVertex,
    /// Vertex of A against a face of B; the normal is B's face normal, reversed.
    VertexFace,
    /// Face of A against a vertex of B; the normal is A's face normal.
    FaceVertex,
    /// Edge of A against an edge of B; the normal is ± the cross product of the edges.
    EdgeEdge,
}

impl ContactKind {
    /// The kind for a feature pair, or `None` for pairs that are not contacts
    /// (edge–face, face–face: the narrow phase maps those onto the kinds above).
    pub fn from_features(a: Feature, b: Feature) -> Option<ContactKind> {
        use Feature::*;
        Some(match (a, b) {
            (Vertex(_), Vertex(_)) => ContactKind::VertexVertex,
            (Vertex(_), Edge(_)) => ContactKind::VertexEdge,
            (Edge(_), Vertex(_)) => ContactKind::EdgeVertex,
            (Vertex(_), Face(_)) => ContactKind::VertexFace,
            (Face(_), Vertex(_)) => ContactKind::FaceVertex,
            (Edge(_), Edge(_)) => ContactKind::EdgeEdge,
            _ => return None,
        })
    }

    /// The kind seen from the other shape (A and B exchanged).
    pub fn swapped(self) -> ContactKind {
        match self {
            ContactKind::VertexEdge => ContactKind::EdgeVertex,
            ContactKind::EdgeVertex => ContactKind::VertexEdge,
            ContactKind::VertexFace => ContactKind::FaceVertex,
            ContactKind::FaceVertex => ContactKind::VertexFace,
            k => k,
        }
    }

    /// A short name: `"vertex-face"`, `"edge-edge"`, ...
    pub fn name(&self) -> &'static str {
        match self {
            ContactKind::VertexVertex => "vertex-vertex",
            ContactKind::VertexEdge => "vertex-edge",
            ContactKind::EdgeVertex => "edge-vertex",
            ContactKind::VertexFace => "vertex-face",
            ContactKind::FaceVertex => "face-vertex",
            ContactKind::EdgeEdge => "edge-edge",
        }
    }
}

/// The identity of a contact: the two shapes and the two features. It is stable
/// across steps for as long as the same features touch, which lets a solver warm
/// start from the previous step's impulses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContactId {
    /// Index of shape A in the model's collision shapes ([`crate::collision::CollisionModel::shapes`]).
    pub shape_a: u32,
    /// Index of shape B.
    pub shape_b: u32,
    /// The feature of A.
    pub feature_a: Feature,
    /// The feature of B.
    pub feature_b: Feature,
}

/// Point, normal and signed distance of a contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactGeometry {
    /// The contact point (world frame): on the face for face–vertex and vertex–face contacts,
    /// otherwise midway between the closest surface points of A and B.
    pub point: Vec3,
    /// Unit normal (world frame), pointing from A towards B.
    pub normal: Vec3,
    /// Signed distance between the surfaces along the normal; negative when they overlap.
    pub distance: f64,
}

/// One contact between two shapes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Shapes and features: the contact's identity.
    pub id: ContactId,
    /// Body carrying shape A (`None`: the world).
    pub body_a: Option<usize>,
    /// Body carrying shape B (`None`: the world).
    pub body_b: Option<usize>,
    /// Which closed form gives the geometry.
    pub kind: ContactKind,
    /// For edge–edge contacts, the sign `s` in `n = s (e_A × e_B)/|e_A × e_B|` that makes
    /// the normal point from A to B; `1.0` for the other kinds.
    pub orientation: f64,
    /// Point, normal and signed distance.
    pub geometry: ContactGeometry,
}

impl Contact {
    /// The point midway between the two surface points (equal to `geometry.point` except for
    /// face–vertex and vertex–face contacts, whose point lies on the face). Used to recognise
    /// repeated contacts independently of which side carries the point.
    pub fn midpoint(&self) -> Vec3 {
        let g = &self.geometry;
        match self.kind {
            ContactKind::FaceVertex => g.point + g.normal * (0.5 * g.distance),
            ContactKind::VertexFace => g.point - g.normal * (0.5 * g.distance),
            _ => g.point,
        }
    }

    /// The same contact seen from B (shapes, bodies and features exchanged, normal reversed).
    pub fn swapped(&self) -> Contact {
        Contact {
            id: ContactId {
                shape_a: self.id.shape_b,
                shape_b: self.id.shape_a,
                feature_a: self.id.feature_b,
                feature_b: self.id.feature_a,
            },
            body_a: self.body_b,
            body_b: self.body_a,
            kind: self.kind.swapped(),
            // e_B × e_A = −(e_A × e_B), and the normal reverses: the sign is unchanged.
            orientation: self.orientation,
            geometry: ContactGeometry { normal: -self.geometry.normal, ..self.geometry },
        }
    }
}

/// 3×12 block: derivatives with respect to `[δ_A; δ_B]`.
pub type Mat3x12 = SMatrix<f64, 3, 12>;
/// 1×12 block: derivatives with respect to `[δ_A; δ_B]`.
pub type Row12 = SMatrix<f64, 1, 12>;

/// Derivatives of a contact's geometry with respect to the poses of its two bodies.
///
/// Columns `0..6` are body A's world-frame twist `δ_A = [ω; v]`, columns `6..12`
/// body B's; a pose perturbs as `X ← exp(δ) X` (left, world-frame perturbation), so a
/// point p fixed to the body moves by `ω × p + v`. Multiplying by the bodies'
/// world-frame Jacobians ([`crate::dynamics::ReferenceFrame::World`]) gives the
/// derivatives with respect to q in the tangent space. Columns of a static (world)
/// shape are zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactGeometryDerivatives {
    /// ∂point/∂[δ_A; δ_B].
    pub point: Mat3x12,
    /// ∂normal/∂[δ_A; δ_B].
    pub normal: Mat3x12,
    /// ∂distance/∂[δ_A; δ_B].
    pub distance: Row12,
}
