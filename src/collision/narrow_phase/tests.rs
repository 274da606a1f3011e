//! Unit tests of the dispatch; the full suites are `tests/collision_narrow.rs` and
//! `tests/collision_derivatives.rs`.

use super::*;
use crate::collision::shape::ShapeKind;
use crate::collision::Material;
use crate::math::Mat3;
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

#[test]
fn touching_crossed_edges_get_their_normal_from_the_edges_not_from_the_vanishing_gap() {
    // Two boxes on crossed edges (A's top edge along x, B's bottom edge near y), at gaps
    // of ±1e-16 to ±1e-9 m and at exact touching. Whatever the gap's sign, the edge–edge
    // normal points from A up to B: at touching, GJK's closest-point direction vanishes
    // and its sign is noise, so it cannot orient the normal.
    let half = Vec3::repeat(0.1);
    let a = instance(ShapeCore::Convex(Arc::new(Polytope::cuboid(&half))), 0.0, Some(0));
    let b = instance(ShapeCore::Convex(Arc::new(Polytope::cuboid(&half))), 0.0, Some(1));
    let reach = 0.1 * std::f64::consts::SQRT_2;
    let pose_a = SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_4);
    let mut edge_edge = 0;
    for k in 0..400 {
        let yaw = 0.3 * (k as f64 * 0.7548776662).sin();
        let gap = [0.0, 1e-16, -1e-16, 1e-14, -1e-14, 1e-12, -1e-12, 1e-9, -1e-9][k % 9];
        let shift = Vec3::new(0.02 * (k as f64 * 0.569).sin(), 0.02 * (k as f64 * 0.943).cos(), 2.0 * reach + gap);
        let rot = SE3::from_axis_angle(&Vec3::z(), yaw).rot
            * SE3::from_axis_angle(&Vec3::y(), std::f64::consts::FRAC_PI_4).rot;
        let pose_b = SE3::new(rot, shift);
        for (first, second, sign) in
            [((0, &a, &pose_a), (1, &b, &pose_b), 1.0), ((1, &b, &pose_b), (0, &a, &pose_a), -1.0)]
        {
            let mut out = vec![];
            collide(first.0, first.1, first.2, second.0, second.1, second.2, 1e-3, &mut out);
            assert_eq!(out.len(), 1, "gap {gap:e}, yaw {yaw}: {out:?}");
            let c = out[0];
            assert_eq!(c.kind, ContactKind::EdgeEdge);
            edge_edge += 1;
            assert!(
                c.geometry.normal.z * sign > 0.999,
                "gap {gap:e}, yaw {yaw}: normal {:?}, distance {:e}",
                c.geometry.normal,
                c.geometry.distance
            );
            assert!((c.geometry.distance - gap).abs() < 1e-15, "gap {gap:e}: distance {:e}", c.geometry.distance);
        }
    }
    assert_eq!(edge_edge, 800);
}

#[test]
fn an_edge_edge_normal_at_exact_touching_separates_the_two_cores() {
    // A table top and a leg of the table pile (54 tables, seed 1) touching edge on edge
    // at a distance of about 1e-17 m: GJK's closest points coincide and their
    // difference (1e-14, in no particular direction) once oriented the normal, which
    // then pointed from B into A for a step and kicked the resting pile. The normal
    // must be the separating plane's: A's corners behind it, B's in front.
    let top = Polytope::cuboid(&Vec3::new(0.25, 0.25, 0.02));
    let leg = Polytope::cuboid(&Vec3::new(0.02, 0.02, 0.15));
    let a = instance(ShapeCore::Convex(Arc::new(top.clone())), 0.0, Some(0));
    let b = instance(ShapeCore::Convex(Arc::new(leg.clone())), 0.0, Some(1));
    let pose_a = SE3::new(
        Mat3::from_column_slice(&[
            -0.3622580725435612,
            -0.8990374192594115,
            -0.24596911929834142,
            0.7018269341405908,
            -0.4367565900459906,
            0.5627456224318567,
            -0.6133580058920266,
            0.031231391624074872,
            0.7891872761172605,
        ]),
        Vec3::new(-0.14458790047932812, 1.5134427033983697, 0.454718613786923),
    );
    let pose_b = SE3::new(
        Mat3::from_column_slice(&[
            0.9232275354680743,
            0.3408621125384047,
            0.17738077119406537,
            -0.3825702375652491,
            0.772220586823328,
            0.5072626327805985,
            0.03592952939873232,
            -0.5361794340722996,
            0.8433390085814212,
        ]),
        Vec3::new(-0.30906178359049286, 1.2266025790246746, 0.48435667698076224),
    );
    for (first, second, sign) in [((0, &a, &pose_a), (1, &b, &pose_b), 1.0), ((1, &b, &pose_b), (0, &a, &pose_a), -1.0)]
    {
        let mut out = vec![];
        collide(first.0, first.1, first.2, second.0, second.1, second.2, 1e-3, &mut out);
        let c = out.iter().find(|c| c.kind == ContactKind::EdgeEdge).expect("an edge-edge contact");
        assert!(c.geometry.distance.abs() < 1e-12, "distance {:e}", c.geometry.distance);
        // n from A (the top) to B (the leg), whichever is first.
        let n = c.geometry.normal * sign;
        let x = c.geometry.point;
        let behind = top.vertices.iter().map(|v| n.dot(&(pose_a.act_point(v) - x))).fold(f64::MIN, f64::max);
        let ahead = leg.vertices.iter().map(|v| n.dot(&(pose_b.act_point(v) - x))).fold(f64::MAX, f64::min);
        assert!(behind < 1e-9 && ahead > -1e-9, "normal {n:?}: top up to {behind:e}, leg down to {ahead:e}");
    }
}
