//! Unit tests of the dispatch; the full suites are `tests/collision_narrow.rs` and
//! `tests/collision_derivatives.rs`.

use super::*;
use crate::collision::shape::ShapeKind;
use crate::collision::Material;
use std::sync::Arc;

fn instance(core: ShapeCore, radius: f64, body: Option<usize>) -> ShapeInstance {
    ShapeInstance {
        body,
        index_on_body: 0,
        local: SE3::identity(),
        core,
        radius,
        kind: ShapeKind::Box,
        material: Material::default(),
        group: 1,
        mask: u32::MAX,
    }
}

#[test]
fn unit_cube_on_plane_gives_four_corners_in_either_order() {
    let cube = instance(ShapeCore::Convex(Arc::new(Polytope::cuboid(&Vec3::repeat(0.5)))), 0.0, Some(0));
    let plane = instance(ShapeCore::HalfSpace, 0.0, None);
    let pose = SE3::from_translation(Vec3::new(0.3, -0.2, 0.49));
    let mut out = vec![];
    collide(0, &cube, &pose, 1, &plane, &SE3::identity(), 0.0, &mut out);
    assert_eq!(out.len(), 4);
    for c in &out {
        assert_eq!(c.kind, ContactKind::VertexFace);
        assert!((c.geometry.distance + 0.01).abs() < 1e-15);
        assert!((c.geometry.normal + Vec3::z()).norm() < 1e-15);
    }
    let mut rev = vec![];
    collide(1, &plane, &SE3::identity(), 0, &cube, &pose, 0.0, &mut rev);
    assert_eq!(rev.len(), 4);
    for (c, r) in out.iter().zip(&rev) {
        assert_eq!(r.kind, ContactKind::FaceVertex);
        assert_eq!(r.id, c.swapped().id);
        assert!((r.geometry.point - c.geometry.point).norm() < 1e-15);
        assert!((r.geometry.normal + c.geometry.normal).norm() < 1e-15);
    }
}

#[test]
fn non_finite_input_gives_nothing() {
    let s = instance(ShapeCore::Convex(Arc::new(Polytope::point())), 0.5, Some(0));
    let mut out = vec![];
    let bad = SE3::from_translation(Vec3::new(f64::NAN, 0.0, 0.0));
    collide(0, &s, &bad, 1, &s, &SE3::identity(), 0.1, &mut out);
    collide(0, &s, &SE3::identity(), 1, &s, &SE3::identity(), f64::NAN, &mut out);
    // coincident centres: no normal, no contact
    collide(0, &s, &SE3::identity(), 1, &s, &SE3::identity(), 0.1, &mut out);
    assert!(out.is_empty());
}
