//! The collision pipeline on whole models: pair filtering (rigid groups, parent/child,
//! self-collision, group/mask), contact identities across small motions, contact
//! derivatives with respect to q against Ridders' extrapolated finite differences on
//! the configuration manifold, and typed errors for invalid geometry and inputs.
//!
//! These use the pairs every narrow phase supports (half-space × convex core,
//! sphere × sphere).

use nalgebra::DVector;
use stiction::collision::{recompute, Contact, ContactKind, Feature, ShapeKind};
use stiction::constraint::{
    contact_jacobians, contacts_at, detect_contacts, match_contacts, CollisionOptions, CollisionWorkspace,
};
use stiction::dynamics::forward_kinematics;
use stiction::gradcheck::fd::ridders;
use stiction::math::{Inertia, SplitMix64, Vec3, SE3};
use stiction::model::samples::{arm7, bodies_on_plane, RestingShape};
use stiction::model::{CollisionShape, Geometry, TriangleMesh};
use stiction::{Body, Data, Error, Joint, Model, ModelBuilder, ModelError};

fn sphere_shape(r: f64, at: Vec3) -> CollisionShape {
    CollisionShape::new(Geometry::Sphere { radius: r }, SE3::from_translation(at))
}

fn opts(margin: f64) -> CollisionOptions {
    CollisionOptions { margin }
}

/// Three 0.2 m links hanging along −z from the world, each with a sphere of radius
/// 0.15 at its middle: neighbours always overlap (centres 0.2 apart).
fn sphere_chain(self_collision: bool) -> Model {
    let mut b = ModelBuilder::new("sphere_chain");
    let mut parent = "world".to_string();
    for k in 0..3 {
        let name = format!("l{k}");
        let placement = if k == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(0.0, 0.0, -0.2)) };
        b.add_body(
            &parent,
            Joint::revolute(format!("j{k}"), Vec3::y()).with_placement(placement),
            Body::new(&name, Inertia::solid_sphere(1.0, 0.1))
                .with_collision(sphere_shape(0.15, Vec3::new(0.0, 0.0, -0.1))),
        );
        parent = name;
    }
    b.set_self_collision("l0", self_collision);
    b.build().unwrap()
}

#[test]
fn overlapping_neighbours_in_a_chain_give_no_contacts() {
    let m = sphere_chain(true);
    let mut rng = SplitMix64::new(3);
    for _ in 0..50 {
        let q: Vec<f64> = (0..3).map(|_| rng.range(-1.0, 1.0)).collect();
        let contacts = contacts_at(&m, &q, &opts(0.0)).unwrap();
        // l0 and l2 only meet when the chain folds far back; |q1| < 1 keeps them apart.
        assert!(contacts.is_empty(), "q = {q:?}: {contacts:?}");
    }
}

#[test]
fn self_collision_gives_contacts_between_non_adjacent_links() {
    // Folding the middle joint by 150° brings l2's sphere back next to l0's.
    let q = [0.0, 150f64.to_radians(), 0.0];
    let on = sphere_chain(true);
    let contacts = contacts_at(&on, &q, &opts(0.0)).unwrap();
    assert_eq!(contacts.len(), 1, "{contacts:?}");
    let c = &contacts[0];
    assert_eq!((c.body_a, c.body_b), (Some(0), Some(2)));
    assert_eq!(c.kind, ContactKind::VertexVertex);
    // Independent check: centres of the two spheres from the joint geometry.
    let a = Vec3::new(0.0, 0.0, -0.1);
    let t = 150f64.to_radians();
    // l1's joint is at z = −0.2; rotating about y by t maps (0, 0, −1) to
    // (−sin t, 0, −cos t), and l2's sphere sits 0.2 + 0.1 further along l1's axis.
    let b = Vec3::new(0.0, 0.0, -0.2) + Vec3::new(-t.sin(), 0.0, -t.cos()) * 0.3;
    let normal = (b - a).normalize();
    assert!((c.geometry.normal - normal).norm() < 1e-12);
    assert!((c.geometry.distance - ((b - a).norm() - 0.3)).abs() < 1e-12);
    assert!(contacts_at(&sphere_chain(false), &q, &opts(0.0)).unwrap().is_empty());
}

#[test]
fn group_and_mask_filter_contacts_in_a_model() {
    let build = |mask_b: u32| {
        let mut b = ModelBuilder::new("two_balls");
        b.add_body(
            "world",
            Joint::free("fa"),
            Body::new("a", Inertia::solid_sphere(1.0, 0.1)).with_collision(sphere_shape(0.1, Vec3::zeros())),
        );
        b.add_body(
            "world",
            Joint::free("fb").with_placement(SE3::from_translation(Vec3::new(0.15, 0.0, 0.0))),
            Body::new("b", Inertia::solid_sphere(1.0, 0.1))
                .with_collision(sphere_shape(0.1, Vec3::zeros()).with_filter(0b10, mask_b)),
        );
        b.build().unwrap()
    };
    let m = build(u32::MAX);
    let c = contacts_at(&m, m.neutral().as_slice(), &opts(0.0)).unwrap();
    assert_eq!(c.len(), 1);
    assert!((c[0].geometry.distance + 0.05).abs() < 1e-12 && (c[0].geometry.normal - Vec3::x()).norm() < 1e-12);
    assert!((c[0].geometry.point - Vec3::new(0.075, 0.0, 0.0)).norm() < 1e-12);
    // b collides with group 2 only; a is in group 1.
    let m = build(0b10);
    assert!(contacts_at(&m, m.neutral().as_slice(), &opts(0.0)).unwrap().is_empty());
}

#[test]
fn boxes_on_a_plane_give_four_contacts_each_and_stable_ids() {
    let m = bodies_on_plane(9, RestingShape::Box);
    let q0 = m.neutral();
    let c0 = contacts_at(&m, q0.as_slice(), &opts(0.0)).unwrap();
    assert_eq!(c0.len(), 36);
    for c in &c0 {
        assert_eq!(c.kind, ContactKind::VertexFace, "box first, plane last");
        assert!((c.geometry.distance + 1e-3).abs() < 1e-12 && (c.geometry.normal + Vec3::z()).norm() < 1e-12);
        assert!(c.geometry.point.z.abs() < 1e-3);
    }
    let mut rng = SplitMix64::new(11);
    let mut data = Data::new(&m);
    let mut ws = CollisionWorkspace::new(&m);
    for _ in 0..20 {
        let v = DVector::from_fn(m.nv(), |_, _| rng.range(-1e-4, 1e-4));
        let q = m.integrate(&q0, &v, 1.0).unwrap();
        forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
        let c = detect_contacts(&m, &data, &opts(0.0), &mut ws).unwrap().to_vec();
        let map = match_contacts(&c0, &c);
        assert_eq!(c.len(), c0.len());
        for (k, i) in map.iter().enumerate() {
            assert_eq!(c0[i.expect("every contact persists")].id, c[k].id);
        }
    }
    // Unknown contacts are reported as new.
    let mut moved = c0[0];
    moved.id.feature_a = Feature::Vertex(99);
    assert_eq!(match_contacts(&c0, &[moved, c0[3]]), vec![None, Some(3)]);
}

#[test]
fn detection_is_deterministic_and_workspaces_can_be_reused() {
    let m = bodies_on_plane(30, RestingShape::Sphere);
    let mut rng = SplitMix64::new(5);
    let v = DVector::from_fn(m.nv(), |_, _| rng.range(-0.01, 0.01));
    let q = m.integrate(&m.neutral(), &v, 1.0).unwrap();
    let fresh = contacts_at(&m, q.as_slice(), &opts(0.002)).unwrap();
    let mut data = Data::new(&m);
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let mut ws = CollisionWorkspace::new(&m);
    for _ in 0..3 {
        assert_eq!(detect_contacts(&m, &data, &opts(0.002), &mut ws).unwrap(), fresh.as_slice());
        ws.forget_order();
    }
    // A workspace made for another model re-targets itself.
    let other = bodies_on_plane(4, RestingShape::Box);
    let mut ws2 = CollisionWorkspace::new(&other);
    assert_eq!(detect_contacts(&m, &data, &opts(0.002), &mut ws2).unwrap(), fresh.as_slice());
    // Pairs are sorted and each contact's shapes are one of them.
    let pairs = ws.pairs();
    assert!(pairs.windows(2).all(|w| w[0] < w[1]));
    for c in &fresh {
        assert!(pairs.binary_search(&(c.id.shape_a, c.id.shape_b)).is_ok());
    }
}

/// `[point; normal; distance]` of a contact recomputed at `q ⊕ ε e_k`.
fn geometry_at(m: &Model, c: &Contact, q: &DVector<f64>, k: usize, eps: f64) -> stiction::Result<DVector<f64>> {
    let mut dq = DVector::zeros(m.nv());
    dq[k] = eps;
    let q = m.integrate(q, &dq, 1.0)?;
    let mut data = Data::new(m);
    forward_kinematics(m, &mut data, q.as_slice())?;
    let g = recompute::recompute(m.collision_model(), &data.x_world, c)
        .ok_or_else(|| Error::InvalidInput("degenerate".into()))?;
    Ok(DVector::from_iterator(7, g.point.iter().chain(g.normal.iter()).copied().chain([g.distance])))
}

/// Every contact's analytic ∂[point; normal; distance]/∂q against Ridders' finite
/// differences along `q ⊕ ε e_k`; returns the number of contacts checked.
fn check_contact_jacobians(m: &Model, q: &DVector<f64>, margin: f64) -> usize {
    let mut data = Data::new(m);
    forward_kinematics(m, &mut data, q.as_slice()).unwrap();
    let mut ws = CollisionWorkspace::new(m);
    let contacts = detect_contacts(m, &data, &opts(margin), &mut ws).unwrap().to_vec();
    for c in &contacts {
        let jac = contact_jacobians(m, &data, c).unwrap();
        let g = &jac.geometry;
        assert!(
            (g.point - c.geometry.point).norm() < 1e-12
                && (g.normal - c.geometry.normal).norm() < 1e-12
                && (g.distance - c.geometry.distance).abs() < 1e-12,
            "recomputed geometry equals the detected one"
        );
        let mut worst: f64 = 0.0;
        for k in 0..m.nv() {
            let est = ridders(&|e| geometry_at(m, c, q, k, e), 1e-2).unwrap();
            let fd = est.derivative;
            let an = DVector::from_iterator(
                7,
                jac.point.column(k).iter().chain(jac.normal.column(k).iter()).copied().chain([jac.distance[k]]),
            );
            let err = (&an - &fd).amax() / fd.amax().max(1.0);
            worst = worst.max(err);
            assert!(err < 1e-8, "{} column {k}: analytic {an:?} vs Ridders {fd:?}", m.name());
        }
        assert!(worst < 1e-8);
    }
    contacts.len()
}

#[test]
fn contact_jacobians_of_a_sphere_and_a_box_on_a_plane_match_ridders() {
    let mut rng = SplitMix64::new(21);
    let mut checked = 0;
    for shape in [RestingShape::Sphere, RestingShape::Box, RestingShape::Capsule] {
        let m = bodies_on_plane(1, shape);
        for _ in 0..5 {
            // A random tilt and shift; a margin of 0.2 m keeps the lower features in contact.
            let v = DVector::from_fn(6, |i, _| if i < 3 { rng.range(-0.3, 0.3) } else { rng.range(-0.03, 0.03) });
            let q = m.integrate(&m.neutral(), &v, 1.0).unwrap();
            let n = check_contact_jacobians(&m, &q, 0.2);
            assert!(n >= 1, "{shape:?}: a body within 0.2 m of the plane has contacts");
            checked += n;
        }
    }
    assert!(checked >= 15, "{checked} contacts checked");
}

/// arm7 with a sphere on its last link and a tilted world plane just under it.
fn arm_with_tip(q: &DVector<f64>) -> Model {
    let mut b: ModelBuilder = arm7().into();
    let tip = Vec3::new(0.0, 0.0, 0.1);
    for l in &mut b.links {
        if l.name == "link7" {
            l.collisions.push(sphere_shape(0.05, tip));
        }
    }
    let m = b.build().unwrap();
    let mut data = Data::new(&m);
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let centre = data.x_world[m.body_index("link7").unwrap()].act_point(&tip);
    // Plane through a point 1 cm inside the sphere, normal tilted from +z.
    let n = Vec3::new(0.2, -0.1, 1.0).normalize();
    let tilt = SE3::from_axis_angle(&Vec3::z().cross(&n).normalize(), Vec3::z().angle(&n));
    let origin = SE3::new(tilt.rot, centre - n * 0.04);
    b.add_link(Body::massless("world").with_collision(CollisionShape::new(Geometry::Plane, origin)));
    b.build().unwrap()
}

#[test]
fn contact_jacobians_of_an_arm_tip_on_a_plane_match_ridders() {
    let mut checked = 0;
    for seed in 0..4 {
        let q = arm7().random_configuration(seed);
        let m = arm_with_tip(&q);
        let n = check_contact_jacobians(&m, &q, 0.0);
        assert_eq!(n, 1, "seed {seed}: the tip sphere touches the plane once");
        checked += n;
        // The derivative of the distance along the plane normal is the tip's normal velocity:
        // check against the point Jacobian of the sphere centre.
        let mut data = Data::new(&m);
        forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
        let c = contacts_at(&m, q.as_slice(), &opts(0.0)).unwrap()[0];
        let jac = contact_jacobians(&m, &data, &c).unwrap();
        let b = m.body_index("link7").unwrap();
        let jp = stiction::dynamics::point_jacobian(&m, &data, b, &Vec3::new(0.0, 0.0, 0.1)).unwrap();
        // The sphere (A) comes before the world plane (B): the contact normal points from
        // the sphere into the plane, −n, and d = n·(p − o) − r, so ∂d/∂q = −normalᵀ J_p.
        assert_eq!(c.kind, ContactKind::VertexFace);
        let expected = -c.geometry.normal.transpose() * jp;
        assert!((jac.distance - expected).amax() < 1e-12, "seed {seed}");
        assert!(jac.normal.amax() < 1e-15, "a world plane's normal does not depend on q");
    }
    assert_eq!(checked, 4);
}

#[test]
fn shapes_on_links_welded_to_the_world_are_static() {
    let mut b = ModelBuilder::new("table");
    let top = SE3::from_translation(Vec3::new(0.0, 0.0, 0.5));
    b.add_body(
        "world",
        Joint::fixed("weld").with_placement(SE3::from_translation(Vec3::new(1.0, 0.0, 0.0))),
        Body::new("table", Inertia::solid_box(5.0, Vec3::new(1.0, 1.0, 0.1)))
            .with_collision(CollisionShape::new(Geometry::Plane, top)),
    );
    b.add_body(
        "world",
        Joint::free("free").with_placement(SE3::from_translation(Vec3::new(1.0, 0.0, 0.55))),
        Body::new("ball", Inertia::solid_sphere(1.0, 0.1)).with_collision(sphere_shape(0.06, Vec3::zeros())),
    );
    let m = b.build().unwrap();
    let cm = m.collision_model();
    assert!(cm.is_static(0) && !cm.is_static(1));
    let q = m.neutral();
    let c = contacts_at(&m, q.as_slice(), &opts(0.0)).unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].body_a, c[0].body_b), (Some(0), Some(1)), "the contact names the table link");
    assert!((c[0].geometry.distance + 0.01).abs() < 1e-12);
    assert_eq!(check_contact_jacobians(&m, &q, 0.0), 1);
}

#[test]
fn invalid_geometry_is_a_typed_error_naming_the_shape() {
    let with = |g: Geometry| {
        let mut b = ModelBuilder::new("bad");
        b.add_body(
            "world",
            Joint::free("free"),
            Body::new("foot", Inertia::solid_sphere(1.0, 0.1))
                .with_collision(sphere_shape(0.1, Vec3::zeros()))
                .with_collision(CollisionShape::new(g, SE3::identity())),
        );
        b.build()
    };
    let expect_err = |g: Geometry, needle: &str| match with(g.clone()) {
        Err(ModelError::InvalidGeometry { what, reason }) => {
            assert_eq!(what, "collision shape 1 of link 'foot'");
            assert!(reason.contains(needle), "{g:?}: {reason}");
        }
        other => panic!("{g:?}: expected InvalidGeometry, got {other:?}"),
    };
    expect_err(Geometry::Sphere { radius: f64::NAN }, "not finite");
    expect_err(Geometry::Sphere { radius: -0.1 }, "positive");
    expect_err(Geometry::Box { half_extents: Vec3::new(0.1, -0.2, 0.1) }, "half extent along y");
    expect_err(Geometry::Box { half_extents: Vec3::new(0.1, 0.2, f64::INFINITY) }, "not finite");
    expect_err(Geometry::Capsule { radius: 0.1, length: -1.0 }, "length");
    expect_err(Geometry::Cylinder { radius: 0.0, length: 1.0 }, "radius");
    // A non-convex closed mesh (a tetrahedron with one face dented inwards is not a
    // valid convex mesh); the constructor's message is passed on.
    let dented = TriangleMesh {
        vertices: vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.0, 0.0, 1.0),
            Vec3::new(0.2, 0.2, 0.2),
        ],
        triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 4], [2, 3, 4], [3, 1, 4]],
        source: None,
    };
    match with(Geometry::ConvexMesh(dented)) {
        Err(e @ ModelError::InvalidGeometry { .. }) => assert!(e.to_string().contains("link 'foot'"), "{e}"),
        other => panic!("expected InvalidGeometry, got {other:?}"),
    }
    let mut nan_mesh = TriangleMesh { vertices: vec![Vec3::zeros(); 4], triangles: vec![[0, 1, 2]], source: None };
    nan_mesh.vertices[2].y = f64::NAN;
    expect_err(Geometry::ConvexMesh(nan_mesh), "vertex 2");
    // A bad material or pose is named too.
    let mut b = ModelBuilder::new("bad_world");
    b.add_link(Body::new("ball", Inertia::solid_sphere(1.0, 0.1))).floating_base(true);
    let mut plane = CollisionShape::new(Geometry::Plane, SE3::identity());
    plane.material.friction = -1.0;
    b.add_link(Body::massless("world").with_collision(plane));
    let err = b.build().unwrap_err();
    assert!(err.to_string().contains("collision shape 0 of link 'world'") && err.to_string().contains("friction"));
    // A capsule of length 0 is a sphere.
    let m = with(Geometry::Capsule { radius: 0.1, length: 0.0 }).unwrap();
    assert_eq!(m.collision_model().shapes[1].kind, ShapeKind::Capsule);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let m = bodies_on_plane(2, RestingShape::Sphere);
    let mut q = m.neutral();
    assert!(matches!(contacts_at(&m, &q.as_slice()[1..], &opts(0.0)), Err(Error::Dimension { .. })));
    q[2] = f64::NAN;
    assert!(matches!(contacts_at(&m, q.as_slice(), &opts(0.0)), Err(Error::NonFinite { .. })));
    let q = m.neutral();
    for margin in [-1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(contacts_at(&m, q.as_slice(), &opts(margin)), Err(Error::InvalidInput(_))));
    }
    let mut data = Data::new(&m);
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let mut ws = CollisionWorkspace::new(&m);
    data.x_world[1].trans.x = f64::INFINITY;
    match detect_contacts(&m, &data, &opts(0.0), &mut ws) {
        Err(Error::NonFinite { index, .. }) => assert_eq!(index, 1),
        other => panic!("{other:?}"),
    }
    let other = Data::new(&bodies_on_plane(3, RestingShape::Sphere));
    assert!(matches!(detect_contacts(&m, &other, &opts(0.0), &mut ws), Err(Error::Dimension { .. })));
    forward_kinematics(&m, &mut data, q.as_slice()).unwrap();
    let mut c = contacts_at(&m, q.as_slice(), &opts(0.0)).unwrap()[0];
    c.id.shape_b = 77;
    assert!(matches!(contact_jacobians(&m, &data, &c), Err(Error::InvalidInput(_))));
    let mut c = contacts_at(&m, q.as_slice(), &opts(0.0)).unwrap()[0];
    c.id.feature_a = Feature::Vertex(5);
    assert!(matches!(contact_jacobians(&m, &data, &c), Err(Error::Numerical { .. })));
}
