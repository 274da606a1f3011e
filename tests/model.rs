//! Model building and validation: tree ordering, coordinate layout, and one typed
//! error per kind of invalid model (never a panic).

use stiction::math::{Inertia, Mat3, Vec3, SE3};
use stiction::model::samples::{all_joint_types, humanoid};
use stiction::{Body, Joint, ModelBuilder, ModelError};

fn ball(name: &str) -> Body {
    Body::new(name, Inertia::solid_sphere(1.0, 0.1))
}

fn chain() -> ModelBuilder {
    let mut b = ModelBuilder::new("chain");
    b.add_link(ball("a")).add_link(ball("b")).add_link(ball("c"));
    b.add_joint("a", "b", Joint::revolute("ab", Vec3::z()));
    b.add_joint("b", "c", Joint::revolute("bc", Vec3::z()));
    b
}

#[test]
fn bodies_are_ordered_depth_first_with_parents_first() {
    let mut b = ModelBuilder::new("tree");
    // Insert children before parents on purpose.
    b.add_link(ball("leaf2")).add_link(ball("mid")).add_link(ball("root")).add_link(ball("leaf1"));
    b.add_joint("mid", "leaf2", Joint::prismatic("j3", Vec3::x()));
    b.add_joint("root", "mid", Joint::spherical("j1"));
    b.add_joint("mid", "leaf1", Joint::revolute("j2", Vec3::y()));
    b.floating_base(true);
    let m = b.build().unwrap();
    let names: Vec<&str> = m.bodies().iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["root", "mid", "leaf2", "leaf1"]);
    for i in 0..m.nbodies() {
        if let Some(p) = m.parent(i) {
            assert!(p < i);
        }
    }
    assert_eq!((m.nq(), m.nv()), (7 + 4 + 1 + 1, 6 + 3 + 1 + 1));
    assert_eq!(m.joint_names(), ["root_root", "j1", "j3", "j2"]);
    assert_eq!(m.joint_q_index("j1").unwrap(), 7);
    assert_eq!(m.joint_v_index("j3").unwrap(), 9);
    assert_eq!(m.joint_q_index("j2").unwrap(), 12);
    assert!(m.joint_q_index("nope").is_err());
    assert_eq!(m.body_index("leaf1").unwrap(), 3);
}

#[test]
fn neutral_and_random_configurations_respect_the_layout_and_limits() {
    for m in [all_joint_types(), humanoid()] {
        let q0 = m.neutral();
        assert_eq!(q0.len(), m.nq());
        for seed in 0..20 {
            let q = m.random_configuration(seed);
            assert_eq!(q, m.random_configuration(seed), "reproducible");
            for k in 0..m.nq() {
                assert!(q[k] >= m.lower_limits()[k] && q[k] <= m.upper_limits()[k]);
            }
            assert_eq!(m.normalize(&q).unwrap().len(), m.nq());
            let d = m.difference(&q0, &q).unwrap();
            let back = m.integrate(&q0, &d, 1.0).unwrap();
            assert!(m.difference(&q, &back).unwrap().amax() < 1e-10);
        }
    }
}

fn err(b: &ModelBuilder) -> ModelError {
    b.build().expect_err("model must be rejected")
}

#[test]
fn structural_errors() {
    assert_eq!(err(&ModelBuilder::new("empty")), ModelError::Empty);

    let mut b = chain();
    b.add_link(ball("a"));
    assert!(matches!(err(&b), ModelError::DuplicateName { kind: "link", .. }));

    let mut b = chain();
    b.add_link(ball("d")).add_joint("c", "d", Joint::revolute("ab", Vec3::z()));
    assert!(matches!(err(&b), ModelError::DuplicateName { kind: "joint", .. }));

    let mut b = chain();
    b.add_joint("ghost", "c", Joint::fixed("x"));
    assert!(matches!(err(&b), ModelError::UnknownLink { role: "parent", .. }));

    let mut b = chain();
    b.add_joint("a", "ghost", Joint::fixed("x"));
    assert!(matches!(err(&b), ModelError::UnknownLink { role: "child", .. }));

    let mut b = chain();
    b.add_joint("a", "c", Joint::fixed("second_parent"));
    let e = err(&b);
    assert!(matches!(e, ModelError::MultipleParents { .. }), "{e}");
    assert!(e.to_string().contains("'c'"));

    // a → b → c → a: every link has a parent, no root.
    let mut b = chain();
    b.add_joint("c", "a", Joint::fixed("closing"));
    let e = err(&b);
    assert!(matches!(e, ModelError::Cycle { .. }), "{e}");

    // A separate loop d ↔ e beside a valid tree rooted at a.
    let mut b = chain();
    b.add_link(ball("d")).add_link(ball("e"));
    b.add_joint("d", "e", Joint::fixed("de")).add_joint("e", "d", Joint::fixed("ed"));
    assert!(matches!(err(&b), ModelError::Cycle { .. }));

    // Two roots.
    let mut b = chain();
    b.add_link(ball("island"));
    let e = err(&b);
    assert!(matches!(e, ModelError::Disconnected { .. }), "{e}");
    assert!(e.to_string().contains("island"));

    // Explicit world joints plus a parentless link.
    let mut b = ModelBuilder::new("w");
    b.add_body("world", Joint::free("f"), ball("x")).add_link(ball("y"));
    assert!(matches!(err(&b), ModelError::Disconnected { .. }));

    // Floating base requested on a tree already attached to the world.
    let mut b = ModelBuilder::new("w");
    b.add_body("world", Joint::revolute("r", Vec3::z()), ball("x")).floating_base(true);
    assert!(matches!(err(&b), ModelError::Invalid(_)));
}

#[test]
fn inertia_errors() {
    let with = |body: Body| {
        let mut b = ModelBuilder::new("m");
        b.add_body("world", Joint::revolute("r", Vec3::z()), body);
        b
    };
    let e = err(&with(Body::from_mass_properties("neg", -1.0, Vec3::zeros(), Mat3::identity())));
    assert!(matches!(e, ModelError::InvalidMass { .. }), "{e}");

    let e = err(&with(Body::massless("ghost")));
    assert!(matches!(e, ModelError::InvalidMass { .. }), "moving massless body: {e}");

    let e = err(&with(Body::from_mass_properties(
        "npd",
        1.0,
        Vec3::zeros(),
        Mat3::from_diagonal(&Vec3::new(1.0, -0.1, 1.0)),
    )));
    assert!(matches!(e, ModelError::InvalidInertia { reason: "positive definite", .. }), "{e}");

    let e = err(&with(Body::from_mass_properties(
        "tri",
        1.0,
        Vec3::zeros(),
        Mat3::from_diagonal(&Vec3::new(0.1, 0.1, 0.5)),
    )));
    assert!(matches!(e, ModelError::TriangleInequality { .. }), "{e}");

    let mut asym = Mat3::identity();
    asym[(0, 1)] = 0.3;
    let e = err(&with(Body::from_mass_properties("asym", 1.0, Vec3::zeros(), asym)));
    assert!(matches!(e, ModelError::InvalidInertia { reason: "symmetric", .. }), "{e}");

    let e = err(&with(Body::from_mass_properties("nan", 1.0, Vec3::new(f64::NAN, 0.0, 0.0), Mat3::identity())));
    assert!(matches!(e, ModelError::NonFinite { .. }), "{e}");

    let mut massless_spin = Body::massless("m0");
    massless_spin.inertia.rot = Mat3::identity();
    let e = err(&with(massless_spin));
    assert!(matches!(e, ModelError::InvalidInertia { reason: "zero for a massless link", .. }), "{e}");

    // A massless moving link is fine when a massive link is welded to it.
    let mut b = ModelBuilder::new("welded");
    b.add_body("world", Joint::revolute("r", Vec3::z()), Body::massless("carrier"));
    b.add_body("carrier", Joint::fixed("weld").with_placement(SE3::from_translation(Vec3::x())), ball("payload"));
    let m = b.build().unwrap();
    assert_eq!(m.nv(), 1);
}

#[test]
fn joint_errors() {
    let with = |j: Joint| {
        let mut b = ModelBuilder::new("m");
        b.add_body("world", j, ball("x"));
        b
    };
    let e = err(&with(Joint::revolute("zero", Vec3::zeros())));
    assert_eq!(e, ModelError::ZeroAxis { joint: "zero".into() });
    assert!(matches!(err(&with(Joint::universal("par", Vec3::x(), Vec3::x() * 2.0))), ModelError::InvalidJoint { .. }));
    assert!(matches!(err(&with(Joint::prismatic("nan", Vec3::new(f64::NAN, 0.0, 1.0)))), ModelError::NonFinite { .. }));
    assert!(matches!(err(&with(Joint::revolute("d", Vec3::z()).with_damping(-1.0))), ModelError::InvalidJoint { .. }));
    assert!(matches!(
        err(&with(Joint::revolute("lim", Vec3::z()).with_position_limits(&[1.0], &[-1.0]))),
        ModelError::InvalidJoint { .. }
    ));
    assert!(matches!(
        err(&with(Joint::revolute("len", Vec3::z()).with_position_limits(&[1.0, 2.0], &[3.0, 4.0]))),
        ModelError::InvalidJoint { .. }
    ));
    let bad_rot = SE3::new(Mat3::from_diagonal(&Vec3::new(1.0, 1.0, 2.0)), Vec3::zeros());
    assert!(matches!(
        err(&with(Joint::revolute("rot", Vec3::z()).with_placement(bad_rot))),
        ModelError::InvalidJoint { .. }
    ));
    let mut g = chain();
    g.gravity(Vec3::new(0.0, 0.0, f64::INFINITY));
    assert!(matches!(err(&g), ModelError::NonFinite { .. }));
}

#[test]
fn axes_are_normalised() {
    let mut b = ModelBuilder::new("m");
    b.add_body("world", Joint::revolute("r", Vec3::new(0.0, 0.0, 3.0)), ball("x"));
    let m = b.build().unwrap();
    match &m.joints()[0].kind {
        stiction::JointType::Revolute { axis } => assert!((axis - Vec3::z()).norm() < 1e-15),
        other => panic!("{other:?}"),
    }
}
