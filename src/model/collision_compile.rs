//! Compiling a model's collision shapes into a [`CollisionModel`]: every declared
//! [`Geometry`] becomes a convex core swept by a radius (or a half-space, or a static
//! triangle mesh), after validation, and the tree structure becomes the pair filter's
//! data (rigid groups, parent groups, articulations, self-collision, excluded pairs).
//!
//! Shape order: every body's shapes in body order (each body's in declaration order),
//! then the world's. Geometry mapping:
//!
//! | declared | core | radius |
//! |---|---|---|
//! | plane | half-space `z ≤ 0` of the shape frame | 0 |
//! | sphere | point | r |
//! | capsule | segment of half-length `length/2` along z (a point when `length = 0`) | r |
//! | box | cuboid | 0 |
//! | cylinder | 16-sided prism circumscribing the circle (`Polytope::cylinder`) | 0 |
//! | convex mesh | the polytope of the mesh (`Polytope::from_convex_mesh`) | 0 |
//! | mesh, static | one-sided triangle mesh (`TriMeshCore::new`) | 0 |
//! | mesh, moving | convex hull of its vertices (`Polytope::convex_hull`) | 0 |
//!
//! A body is *static* when every joint between it and the world is fixed (its rigid
//! group is `None`). Shapes on static bodies keep their body (so contacts name the
//! link) but count as world geometry: they never collide with the world's shapes or
//! with each other, meshes on them are static terrain, and since the body's Jacobian
//! is zero they contribute nothing to contact derivatives.

use super::{Body, CollisionSettings, CollisionShape, Geometry, Joint, WORLD};
use crate::collision::polytope::Polytope;
use crate::collision::shape::{CollisionFilter, CollisionModel, ShapeCore, ShapeInstance, ShapeKind, TriMeshCore};
use crate::error::ModelError;
use crate::math::{Mat3, Vec3};
use std::collections::HashMap;
use std::sync::Arc;

/// Number of sides of the prism that stands in for a cylinder.
pub const CYLINDER_SEGMENTS: usize = 16;

impl CollisionModel {
    /// A model without shapes (placeholder before compilation).
    pub(crate) fn empty() -> CollisionModel {
        CollisionModel {
            shapes: vec![],
            filter: CollisionFilter {
                rigid_group: vec![],
                parent_group: vec![],
                articulation: vec![],
                self_collision: vec![],
                skip_parent_child: true,
                excluded_pairs: vec![],
            },
        }
    }

    /// Compiles and validates the collision shapes of a tree (bodies in depth-first
    /// order with their joints and parents, plus the world's shapes) and the filter
    /// options. Errors name the shape (`"collision shape 2 of link 'foot'"`) or the
    /// option at fault.
    pub fn build(
        bodies: &[Body],
        joints: &[Joint],
        parents: &[Option<usize>],
        world_shapes: &[CollisionShape],
        settings: &CollisionSettings,
    ) -> Result<CollisionModel, ModelError> {
        CollisionModel::build_reporting(bodies, joints, parents, world_shapes, settings).map(|(cm, _)| cm)
    }

    /// [`CollisionModel::build`], with what it changed in the shapes (one message per
    /// static mesh whose bad edges it split).
    pub(crate) fn build_reporting(
        bodies: &[Body],
        joints: &[Joint],
        parents: &[Option<usize>],
        world_shapes: &[CollisionShape],
        settings: &CollisionSettings,
    ) -> Result<(CollisionModel, Vec<String>), ModelError> {
        let nb = bodies.len();
        if joints.len() != nb
            || parents.len() != nb
            || parents.iter().enumerate().any(|(i, p)| p.is_some_and(|p| p >= i))
        {
            return Err(ModelError::Invalid(
                "collision model: bodies, joints and parents must describe a tree in depth-first order".into(),
            ));
        }
        let filter = build_filter(bodies, joints, parents, settings)?;
        let mut shapes = vec![];
        let mut repairs = vec![];
        let carriers =
            bodies.iter().enumerate().map(|(b, body)| (Some(b), body.name.as_str(), body.collisions.as_slice()));
        for (body, link, list) in carriers.chain(std::iter::once((None, WORLD, world_shapes))) {
            let is_static = body.is_none_or(|b| filter.rigid_group[b].is_none());
            for (k, shape) in list.iter().enumerate() {
                let what = || format!("collision shape {k} of link '{link}'");
                let split = is_static && settings.split_bad_static_mesh_edges;
                let (compiled, splits) = compile_shape(shape, body, k, is_static, split)
                    .map_err(|reason| ModelError::InvalidGeometry { what: what(), reason })?;
                if splits > 0 {
                    repairs.push(format!(
                        "{}: a static mesh that is not a consistently wound manifold; {splits} of its edges (shared by \
                         more than two triangles, or by two running the same way) were split into open edges",
                        what()
                    ));
                }
                shapes.push(compiled);
            }
        }
        Ok((CollisionModel { shapes, filter }, repairs))
    }

    /// A copy whose shapes take their materials from `bodies`' and `world_shapes`'
    /// collision shapes (validated as [`CollisionModel::build`] does), keeping the
    /// compiled cores: for a model that differs from the compiled one in materials and
    /// non-geometric quantities only. The shape lists must match the compiled ones in
    /// number (an internal error otherwise).
    pub(crate) fn with_materials(
        &self,
        bodies: &[Body],
        world_shapes: &[CollisionShape],
    ) -> Result<CollisionModel, ModelError> {
        let count = bodies.iter().map(|b| b.collisions.len()).sum::<usize>() + world_shapes.len();
        if count != self.shapes.len() {
            return Err(ModelError::Invalid(format!(
                "collision model: {count} shapes, but {} compiled",
                self.shapes.len()
            )));
        }
        let mut out = self.clone();
        for s in &mut out.shapes {
            let (list, link) = match s.body {
                Some(b) => {
                    (bodies.get(b).map(|b| b.collisions.as_slice()), bodies.get(b).map_or("?", |b| b.name.as_str()))
                }
                None => (Some(world_shapes), WORLD),
            };
            let shape = list.and_then(|l| l.get(s.index_on_body)).ok_or_else(|| {
                ModelError::Invalid(format!("collision model: shape {} of link '{link}' is missing", s.index_on_body))
            })?;
            check_material(&shape.material).map_err(|reason| ModelError::InvalidGeometry {
                what: format!("collision shape {} of link '{link}'", s.index_on_body),
                reason,
            })?;
            s.material = shape.material;
        }
        Ok(out)
    }

    /// Whether shape `i` is static (on the world or on a body welded to it).
    pub fn is_static(&self, i: usize) -> bool {
        self.shapes.get(i).is_some_and(|s| s.body.is_none_or(|b| self.filter.rigid_group[b].is_none()))
    }
}

fn positive(x: f64, what: &str) -> Result<f64, String> {
    if !x.is_finite() {
        Err(format!("{what} is not finite ({x})"))
    } else if x <= 0.0 {
        Err(format!("{what} must be positive, got {x}"))
    } else {
        Ok(x)
    }
}

fn check_mesh_finite(mesh: &crate::collision::TriangleMesh) -> Result<(), String> {
    match mesh.vertices.iter().position(|v| !v.iter().all(|x| x.is_finite())) {
        Some(i) => Err(format!("mesh vertex {i} is not finite")),
        None => Ok(()),
    }
}

/// A contact material's checks: friction and viscous friction finite and
/// non-negative, restitution in [0, 1].
fn check_material(m: &crate::collision::Material) -> Result<(), String> {
    if !(m.friction.is_finite() && m.friction >= 0.0) {
        return Err(format!("friction must be finite and non-negative, got {}", m.friction));
    }
    if !(m.restitution.is_finite() && (0.0..=1.0).contains(&m.restitution)) {
        return Err(format!("restitution must be in [0, 1], got {}", m.restitution));
    }
    if !(m.viscous_friction.is_finite() && m.viscous_friction >= 0.0) {
        return Err(format!("viscous friction must be finite and non-negative, got {}", m.viscous_friction));
    }
    Ok(())
}

/// One shape: validation of its pose, material and sizes, then its core.
fn compile_shape(
    shape: &CollisionShape,
    body: Option<usize>,
    index_on_body: usize,
    is_static: bool,
    split_bad_edges: bool,
) -> Result<(ShapeInstance, usize), String> {
    let mut splits = 0;
    if !shape.origin.is_finite() {
        return Err("the shape's origin is not finite".into());
    }
    let rot = shape.origin.rot;
    if (rot.transpose() * rot - Mat3::identity()).abs().max() > 1e-6 || rot.determinant() < 0.0 {
        return Err("the shape's origin rotation is not a rotation matrix".into());
    }
    check_material(&shape.material)?;
    let convex = |p: Polytope| ShapeCore::Convex(Arc::new(p));
    let (core, radius, kind) = match &shape.geometry {
        Geometry::Plane => (ShapeCore::HalfSpace, 0.0, ShapeKind::Plane),
        Geometry::Sphere { radius } => {
            (convex(Polytope::point()), positive(*radius, "sphere radius")?, ShapeKind::Sphere)
        }
        Geometry::Capsule { radius, length } => {
            let r = positive(*radius, "capsule radius")?;
            if !length.is_finite() || *length < 0.0 {
                return Err(format!("capsule length must be finite and non-negative, got {length}"));
            }
            // A capsule of length 0 is a sphere: a point core (a zero-length segment
            // would have a degenerate edge).
            let core = if *length == 0.0 { Polytope::point() } else { Polytope::segment(length / 2.0) };
            (convex(core), r, ShapeKind::Capsule)
        }
        Geometry::Box { half_extents } => {
            for (k, axis) in ["x", "y", "z"].iter().enumerate() {
                positive(half_extents[k], &format!("box half extent along {axis}"))?;
            }
            (convex(Polytope::cuboid(half_extents)), 0.0, ShapeKind::Box)
        }
        Geometry::Cylinder { radius, length } => {
            let r = positive(*radius, "cylinder radius")?;
            let l = positive(*length, "cylinder length")?;
            (convex(Polytope::cylinder(r, l, CYLINDER_SEGMENTS)), 0.0, ShapeKind::Cylinder)
        }
        Geometry::ConvexMesh(mesh) => {
            check_mesh_finite(mesh)?;
            (convex(Polytope::from_convex_mesh(mesh)?), 0.0, ShapeKind::ConvexMesh)
        }
        Geometry::Mesh(mesh) => {
            check_mesh_finite(mesh)?;
            if is_static {
                let core = if split_bad_edges {
                    let (core, n) = TriMeshCore::new_splitting_bad_edges(mesh)?;
                    splits = n;
                    core
                } else {
                    TriMeshCore::new(mesh)?
                };
                (ShapeCore::TriMesh(Arc::new(core)), 0.0, ShapeKind::Mesh)
            } else {
                let hull =
                    Polytope::convex_hull(&mesh.vertices).map_err(|e| format!("convex hull of the mesh: {e}"))?;
                (convex(hull), 0.0, ShapeKind::Mesh)
            }
        }
    };
    if let ShapeCore::Convex(p) = &core {
        if p.vertices.iter().any(|v: &Vec3| !v.iter().all(|x| x.is_finite())) {
            return Err("the compiled core has non-finite vertices".into());
        }
    }
    let instance = ShapeInstance {
        body,
        index_on_body,
        local: shape.origin,
        core,
        radius,
        kind,
        material: shape.material,
        group: shape.group,
        mask: shape.mask,
    };
    Ok((instance, splits))
}

/// Rigid groups, parent groups, articulations and the options resolved to body indices.
fn build_filter(
    bodies: &[Body],
    joints: &[Joint],
    parents: &[Option<usize>],
    settings: &CollisionSettings,
) -> Result<CollisionFilter, ModelError> {
    let nb = bodies.len();
    let mut rigid_group: Vec<Option<usize>> = Vec::with_capacity(nb);
    let mut parent_group: Vec<Option<usize>> = Vec::with_capacity(nb);
    let mut articulation = Vec::with_capacity(nb);
    for i in 0..nb {
        let parent_rg = parents[i].and_then(|p| rigid_group[p]);
        if joints[i].nv() > 0 {
            rigid_group.push(Some(i));
            parent_group.push(parent_rg);
        } else {
            rigid_group.push(parent_rg);
            // A welded body shares its group's parent group.
            parent_group.push(parent_rg.and_then(|g| parent_group[g]));
        }
        articulation.push(parents[i].map_or(i, |p| articulation[p]));
    }
    let index: HashMap<&str, usize> = bodies.iter().enumerate().map(|(i, b)| (b.name.as_str(), i)).collect();
    let mut root_enabled: HashMap<usize, bool> = HashMap::new();
    for (name, &enabled) in &settings.self_collision {
        match index.get(name.as_str()) {
            Some(&i) if parents[i].is_none() => {
                root_enabled.insert(i, enabled);
            }
            found => {
                let roots: Vec<String> =
                    (0..nb).filter(|&i| parents[i].is_none()).map(|i| format!("'{}'", bodies[i].name)).collect();
                let problem = if found.is_some() { "is not attached to the world" } else { "does not exist" };
                return Err(ModelError::Invalid(format!(
                    "self-collision setting: link '{name}' {problem}; self-collision is set per articulation, \
                     by its root link (one of {})",
                    roots.join(", ")
                )));
            }
        }
    }
    let self_collision = articulation.iter().map(|r| root_enabled.get(r).copied().unwrap_or(true)).collect();
    let mut excluded_pairs = Vec::with_capacity(settings.excluded_pairs.len());
    for (a, b) in &settings.excluded_pairs {
        let find = |n: &str| {
            index.get(n).copied().ok_or_else(|| {
                let hint = if n == WORLD { " (filter world geometry with group/mask bits instead)" } else { "" };
                ModelError::Invalid(format!("excluded collision pair ('{a}', '{b}'): unknown link '{n}'{hint}"))
            })
        };
        let (i, j) = (find(a)?, find(b)?);
        excluded_pairs.push((i.min(j), i.max(j)));
    }
    excluded_pairs.sort_unstable();
    excluded_pairs.dedup();
    Ok(CollisionFilter {
        rigid_group,
        parent_group,
        articulation,
        self_collision,
        skip_parent_child: settings.skip_parent_child,
        excluded_pairs,
    })
}
