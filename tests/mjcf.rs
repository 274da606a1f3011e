//! The MJCF loader (docs/models.md, "MJCF"): defaults and classes, orientations, joints
//! and their anchors, inertias from `<inertial>` or from geoms, geoms, options and
//! exclusions, warnings for what is not modelled, and typed errors naming the file.
//! Mass matrices against MuJoCo itself: python/tests/test_mjcf_mujoco.py.

use approx::assert_relative_eq;
use std::path::Path;
use stiction::dynamics::{crba, forward_kinematics, Data};
use stiction::io::{load_mjcf, parse_mjcf, MjcfOptions};
use stiction::math::{Mat3, Vec3, SE3};
use stiction::{JointType, LoadError};

const PI: f64 = std::f64::consts::PI;

fn load(xml: &str) -> stiction::io::MjcfModel {
    parse_mjcf(xml, None, &MjcfOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

fn body(m: &stiction::Model, name: &str) -> usize {
    m.body_index(name).unwrap_or_else(|_| panic!("no body '{name}'"))
}

#[test]
fn defaults_classes_joints_and_limits() {
    let r = load(
        r#"<mujoco model="t">
  <compiler angle="degree"/>
  <option timestep="0.004" gravity="0 0 -3"/>
  <default>
    <joint damping="0.5" armature="0.2"/>
    <default class="stiff"><joint stiffness="7" springref="30"/></default>
  </default>
  <worldbody>
    <body name="a" pos="0 0 1" childclass="stiff">
      <joint name="j1" axis="0 1 0" range="-90 45"/>
      <geom type="box" size="0.1 0.2 0.3" density="500"/>
      <body name="b" pos="0.5 0 0">
        <joint name="j2" type="slide" axis="1 0 0" range="-0.1 0.2" limited="false" class="main"/>
        <joint name="j3" axis="0 0 1" pos="0.1 0 0"/>
        <geom type="sphere" size="0.1" mass="2"/>
      </body>
    </body>
  </worldbody>
</mujoco>"#,
    );
    let m = &r.model;
    assert_eq!(r.timestep, Some(0.004));
    assert_relative_eq!(m.gravity(), Vec3::new(0.0, 0.0, -3.0));
    assert_eq!(m.nv(), 3);
    // A body with two joints: a massless link per joint but the last.
    assert!(m.body_index("b/j2").is_ok(), "a massless link for j2");
    let lo = m.lower_limits();
    let hi = m.upper_limits();
    let (j1, j2) = (m.joint_v_index("j1").unwrap(), m.joint_v_index("j2").unwrap());
    assert_relative_eq!(lo[j1], -PI / 2.0, epsilon = 1e-15);
    assert_relative_eq!(hi[j1], PI / 4.0, epsilon = 1e-15);
    assert!(lo[j2] == f64::NEG_INFINITY, "limited=\"false\" keeps the slide free");
    // Box 0.2 × 0.4 × 0.6 at 500 kg/m³ (24 kg) and a 2 kg sphere.
    assert_relative_eq!(m.total_mass(), 0.048 * 500.0 + 2.0, epsilon = 1e-12);
    // Armature from the main class on every joint: M = M_rigid + 0.2 I on the diagonal;
    // the slide's diagonal is the mass it moves, 2 kg, plus the armature.
    let mut data = Data::new(m);
    let q = m.neutral();
    let mm = crba(m, &mut data, q.as_slice()).unwrap();
    assert_relative_eq!(mm[(j2, j2)], 2.0 + 0.2, epsilon = 1e-12);
    // Stiffness and spring rest (30°) from the childclass, not on the slide (class main).
    assert_relative_eq!(m.stiffness()[j1], 7.0);
    assert_relative_eq!(m.rest_configuration()[m.joint_q_index("j1").unwrap()], PI / 6.0, epsilon = 1e-15);
    assert_eq!(m.stiffness()[j2], 0.0);
    assert_relative_eq!(m.damping()[j2], 0.5);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn orientations_and_joint_anchors_place_the_bodies() {
    // xyaxes "0 1 0 -1 0 0" is a quarter turn about z; euler with eulerseq "XYZ" (fixed
    // axes) in radians; a hinge anchored 0.2 m along the body's x.
    let r = load(
        r#"<mujoco>
  <compiler angle="radian" eulerseq="XYZ"/>
  <worldbody>
    <body name="turned" pos="1 2 3" xyaxes="0 1 0 -1 0 0">
      <geom type="sphere" size="0.1"/>
      <body name="tilted" pos="1 0 0" euler="0.3 0 0.5">
        <joint name="h" axis="0 0 1" pos="0.2 0 0"/>
        <geom type="sphere" size="0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>"#,
    );
    let m = &r.model;
    let mut data = Data::new(m);
    let q = m.neutral();
    forward_kinematics(m, &mut data, q.as_slice()).unwrap();
    let turned = SE3::from_axis_angle(&Vec3::z(), PI / 2.0);
    // Extrinsic X then Z: R = Rz(0.5) Rx(0.3).
    let tilt = SE3::from_axis_angle(&Vec3::z(), 0.5).rot * SE3::from_axis_angle(&Vec3::x(), 0.3).rot;
    let want_rot = turned.rot * tilt;
    // "tilted"'s frame sits at its joint's anchor: (1, 2, 3) + R_turned (1, 0, 0) + R (0.2, 0, 0).
    let want_pos = Vec3::new(1.0, 2.0, 3.0) + turned.rot * Vec3::x() + want_rot * Vec3::new(0.2, 0.0, 0.0);
    let x = data.x_world[body(m, "tilted")];
    assert!((x.rot - want_rot).abs().max() < 1e-14, "{}", x.rot);
    assert!((x.trans - want_pos).norm() < 1e-14, "{}", x.trans);
    // The sphere stays where the file puts it: at the body origin, 0.2 m behind the anchor.
    let shape = &m.bodies()[body(m, "tilted")].collisions[0];
    assert_relative_eq!(shape.origin.trans, Vec3::new(-0.2, 0.0, 0.0), epsilon = 1e-15);
}

#[test]
fn inertias_from_geoms_and_from_inertial() {
    let r = load(
        r#"<mujoco>
  <worldbody>
    <body name="cap">
      <freejoint/>
      <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.05"/>
    </body>
    <body name="given" pos="2 0 0">
      <freejoint/>
      <inertial pos="0.1 0 0" mass="3" fullinertia="0.1 0.2 0.3 0.01 0 0"/>
      <geom type="box" size="1 1 1"/>
    </body>
  </worldbody>
</mujoco>"#,
    );
    let m = &r.model;
    // Capsule of radius 0.05 and length 0.4 at 1000 kg/m³.
    let (r_, l) = (0.05f64, 0.4);
    let volume = PI * r_ * r_ * l + 4.0 / 3.0 * PI * r_.powi(3);
    let cap = &m.bodies()[body(m, "cap")].inertia;
    assert_relative_eq!(cap.mass, 1000.0 * volume, epsilon = 1e-9);
    assert_relative_eq!(cap.com(), Vec3::new(0.2, 0.0, 0.0), epsilon = 1e-14);
    // <inertial> wins over the geoms (inertiafromgeom="auto").
    let given = &m.bodies()[body(m, "given")].inertia;
    assert_relative_eq!(given.mass, 3.0);
    assert_relative_eq!(given.com(), Vec3::new(0.1, 0.0, 0.0), epsilon = 1e-15);
    let ic = Mat3::new(0.1, 0.01, 0.0, 0.01, 0.2, 0.0, 0.0, 0.0, 0.3);
    assert!((given.inertia_about_com() - ic).abs().max() < 1e-14);
}

#[test]
fn the_arm_fixture_loads_with_a_warning_per_unsupported_element() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mjcf/arm.xml");
    let r = load_mjcf(&path, &MjcfOptions::default()).unwrap();
    assert_eq!(r.model.nv(), 4);
    assert!(matches!(r.model.joints()[r.model.body_index("hand").unwrap()].kind, JointType::Prismatic { .. }));
    assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.contains("<site>") && w.contains("arm.xml")), "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.contains("<position>")), "{:?}", r.warnings);
    // The joint motor: the control map and the elbow's effort limit |gear|·max|ctrlrange|.
    assert_eq!(r.actuators.len(), 1);
    let a = &r.actuators[0];
    assert_eq!(
        (a.name.as_str(), a.joint.as_str(), a.gear, a.ctrl_range),
        ("elbow_motor", "elbow", 10.0, Some((-2.0, 1.5)))
    );
    let elbow = r.model.joint_v_index("elbow").unwrap();
    assert_relative_eq!(r.model.effort_limits()[elbow], 20.0);
    let b = r.control_matrix();
    assert_eq!(b.shape(), (4, 1));
    assert_eq!(b[(elbow, 0)], 10.0);
    assert_eq!(b.iter().filter(|x| **x != 0.0).count(), 1);
    let e = load_mjcf(&path, &MjcfOptions { strict: true, ..Default::default() }).unwrap_err();
    assert!(matches!(e, LoadError::Unsupported { .. }) && e.to_string().contains("arm.xml"), "{e}");
}

#[test]
fn bad_files_are_typed_errors_that_name_the_element() {
    let cases = [
        ("<robot/>", "expected <mujoco>"),
        ("<mujoco><worldbody><body><joint type=\"twist\"/><geom size=\"1\"/></body></worldbody></mujoco>", "twist"),
        ("<mujoco><worldbody><body pos=\"0 nan 0\"><geom size=\"1\"/></body></worldbody></mujoco>", "not a finite"),
        ("<mujoco><worldbody><body quat=\"1 0 0 0\" euler=\"0 0 0\"/></worldbody></mujoco>", "more than one"),
        ("<mujoco><worldbody><body><joint/><geom type=\"box\" size=\"1 1\"/></body></worldbody></mujoco>", "3 size"),
        ("<mujoco><worldbody><body><geom type=\"mesh\" mesh=\"none\"/></body></worldbody></mujoco>", "unknown mesh"),
        ("<mujoco><asset><mesh file=\"missing.stl\"/></asset></mujoco>", "missing.stl"),
        // A moving body without mass: a singular mass matrix.
        ("<mujoco><worldbody><body><joint/></body></worldbody></mujoco>", "positive mass"),
        ("<mujoco", "XML"),
    ];
    for (xml, has) in cases {
        let e = parse_mjcf(xml, None, &MjcfOptions::default()).expect_err(xml);
        let msg = e.to_string();
        assert!(msg.contains("<string>") && msg.contains(has), "{xml}: {msg}");
    }
}

#[test]
fn includes_are_spliced_in_relative_to_their_file() {
    let dir = std::env::temp_dir().join(format!("stiction_mjcf_include_{}", std::process::id()));
    std::fs::create_dir_all(dir.join("parts")).unwrap();
    std::fs::write(
        dir.join("main.xml"),
        r#"<mujoco><include file="parts/defaults.xml"/><worldbody><include file="parts/arm.xml"/></worldbody></mujoco>"#,
    )
    .unwrap();
    std::fs::write(dir.join("parts/defaults.xml"), r#"<mujoco><default><joint armature="0.5"/></default></mujoco>"#)
        .unwrap();
    // Included files include relative to themselves.
    std::fs::write(
        dir.join("parts/arm.xml"),
        r#"<mujoco><body name="upper"><joint name="j"/><geom type="sphere" size="0.1" mass="1"/><include file="hand.xml"/></body></mujoco>"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("parts/hand.xml"),
        r#"<mujoco><body name="hand" pos="0.5 0 0"><joint name="k"/><geom type="sphere" size="0.1" mass="1"/></body></mujoco>"#,
    )
    .unwrap();
    let r = load_mjcf(dir.join("main.xml"), &MjcfOptions::default()).unwrap();
    assert_eq!(r.model.nv(), 2);
    assert!(r.model.body_index("hand").is_ok());
    let mut data = Data::new(&r.model);
    let m = crba(&r.model, &mut data, r.model.neutral().as_slice()).unwrap().clone();
    // The armature of the included default, on both joints.
    let j = r.model.joint_v_index("j").unwrap();
    assert!(m[(j, j)] > 0.5);
    // A file that includes itself, and a missing one: typed errors naming them.
    std::fs::write(dir.join("loop.xml"), r#"<mujoco><include file="loop.xml"/></mujoco>"#).unwrap();
    let e = load_mjcf(dir.join("loop.xml"), &MjcfOptions::default()).unwrap_err();
    assert!(e.to_string().contains("deeper than"), "{e}");
    std::fs::write(dir.join("missing.xml"), r#"<mujoco><include file="nowhere.xml"/></mujoco>"#).unwrap();
    let e = load_mjcf(dir.join("missing.xml"), &MjcfOptions::default()).unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }) && e.to_string().contains("nowhere.xml"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `<compiler settotalmass>` scales every body's mass and inertia by one factor;
/// `coordinate="local"` is accepted and anything else refused; joint motors take their
/// attributes from `<motor>` defaults.
#[test]
fn total_mass_coordinates_and_motor_defaults() {
    let xml = |compiler: &str| {
        format!(
            r#"<mujoco>
  <compiler {compiler}/>
  <default><motor gear="4" ctrlrange="-1 2" ctrllimited="true"/>
    <default class="strong"><motor gear="9"/></default></default>
  <worldbody>
    <body name="a"><joint name="ja" axis="0 1 0"/><geom type="sphere" size="0.1" mass="1"/>
      <body name="b" pos="0 0 -0.5"><joint name="jb" axis="0 1 0"/><geom type="box" size="0.1 0.2 0.3" mass="3"/></body>
    </body>
  </worldbody>
  <actuator><motor joint="ja"/><motor joint="jb" class="strong" ctrlrange="-0.5 0.5"/></actuator>
</mujoco>"#
        )
    };
    let plain = load(&xml(r#"coordinate="local""#));
    let scaled = load(&xml(r#"settotalmass="10""#));
    assert!((plain.model.total_mass() - 4.0).abs() < 1e-12);
    assert!((scaled.model.total_mass() - 10.0).abs() < 1e-12);
    for (p, s) in plain.model.bodies().iter().zip(scaled.model.bodies()) {
        let (ip, is) = (p.inertia.inertia_about_com(), s.inertia.inertia_about_com());
        assert!((is - ip * 2.5).amax() < 1e-12 && (s.inertia.com() - p.inertia.com()).amax() < 1e-12);
    }
    // settotalmass ≤ 0 leaves the masses alone (MuJoCo's default is −1).
    assert!((load(&xml(r#"settotalmass="-1""#)).model.total_mass() - 4.0).abs() < 1e-12);
    let e = parse_mjcf(&xml(r#"coordinate="global""#), None, &MjcfOptions::default()).unwrap_err().to_string();
    assert!(e.contains("coordinate 'global'"), "{e}");
    let e = parse_mjcf(&xml(r#"settotalmass="heavy""#), None, &MjcfOptions::default()).unwrap_err().to_string();
    assert!(e.contains("settotalmass"), "{e}");
    let gears: Vec<f64> = plain.actuators.iter().map(|a| a.gear).collect();
    assert_eq!(gears, [4.0, 9.0]);
    assert_eq!(plain.actuators[0].ctrl_range, Some((-1.0, 2.0)));
    assert_eq!(plain.actuators[1].ctrl_range, Some((-0.5, 0.5)));
    assert_eq!(plain.model.effort_limits()[plain.model.joint_v_index("ja").unwrap()], 8.0);
    assert_eq!(plain.model.effort_limits()[plain.model.joint_v_index("jb").unwrap()], 4.5);
    assert!(plain.warnings.iter().all(|w| !w.contains("motor")), "{:?}", plain.warnings);
}
