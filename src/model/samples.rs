//! Ready-made models for examples, tests and benchmarks: pendulum chains, a
//! 7-DoF arm, branching trees, a ~50-DoF floating-base humanoid-like tree (bare, or
//! equipped with limits, drives and collision shapes and standing on the ground), a
//! model holding every joint type, random trees, a cartpole, a two-finger grasp, bodies
//! resting on a plane, and the self-supporting arch and the table pile of the NCP paper.

use super::{Body, CollisionShape, Geometry, Joint, JointType, Material, Model, ModelBuilder, WORLD};
use crate::error::{Error, Result};
use crate::math::{Inertia, Mat3, SplitMix64, Vec3, SE3};
use nalgebra::DVector;

/// A uniform rod of `mass` and `length` along the body's `dir` axis, starting at the origin.
pub fn rod(name: &str, mass: f64, length: f64, radius: f64, dir: Vec3) -> Body {
    let d = dir.normalize();
    let along = mass * radius * radius / 2.0;
    let across = mass * (3.0 * radius * radius + length * length) / 12.0;
    // I = across·(1 − ddᵀ) + along·ddᵀ
    let i = Mat3::identity() * across + d * d.transpose() * (along - across);
    Body::new(name, Inertia::from_com(mass, d * (length / 2.0), i))
}

/// A planar chain of `n` rods hanging along −z, hinged about y (a double pendulum for n = 2).
pub fn pendulum_chain(n: usize, length: f64, mass: f64) -> Model {
    let mut b = ModelBuilder::new(format!("chain{n}"));
    let mut parent = WORLD.to_string();
    for k in 0..n {
        let placement = if k == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(0.0, 0.0, -length)) };
        let name = format!("link{k}");
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), Vec3::y()).with_placement(placement),
            rod(&name, mass, length, 0.02, -Vec3::z()),
        );
        parent = name;
    }
    b.build().expect("sample model is valid")
}

/// A cartpole: a 1 kg cart on a prismatic joint along world x (`q[0]`, m) carrying a
/// 0.2 kg, 0.5 m uniform pole on a revolute joint about y (`q[1]`, rad). The pole hangs
/// straight down at `q = 0` and stands upright at `q[1] = ±π`. No joint limits and no
/// collision shapes, so the constraint stage is inert. Both joints take a generalized
/// force; a cartpole actuates only the cart, so fix the pole torque at zero (a control
/// bound `[0, 0]`, or a large control weight) when optimising.
pub fn cartpole() -> Model {
    let mut b = ModelBuilder::new("cartpole");
    b.add_body(
        WORLD,
        Joint::prismatic("slider", Vec3::x()),
        Body::new("cart", Inertia::solid_box(1.0, Vec3::new(0.3, 0.2, 0.1))),
    );
    b.add_body("cart", Joint::revolute("hinge", Vec3::y()), rod("pole", 0.2, 0.5, 0.02, -Vec3::z()));
    b.build().expect("sample model is valid")
}

/// Half extents of the fingers of [`two_finger_grasp`].
pub const GRASP_FINGER_HALF_EXTENTS: Vec3 = Vec3::new(0.02, 0.06, 0.06);
/// Half size of the cubes of [`two_finger_grasp`].
pub const GRASP_CUBE_HALF_SIZE: f64 = 0.05;
/// Penetration of every contact of [`two_finger_grasp_configuration`] (m).
pub const GRASP_PENETRATION: f64 = 1.5e-4;
const GRASP_HEIGHT: f64 = 0.5;

fn grasp_half_span(cubes: usize) -> f64 {
    cubes as f64 * GRASP_CUBE_HALF_SIZE - 0.5 * (cubes as f64 - 1.0) * GRASP_PENETRATION
}

/// The grasping scene of Drumwright (2015, §VII-A): two "finger" boxes (0.3 kg,
/// [`GRASP_FINGER_HALF_EXTENTS`]) on prismatic joints along x (`left_slide`,
/// `right_slide`, at 0.5 m height) and `cubes` free cubes (`cube0`, …; 0.5 kg, 0.1 m) in
/// a row between them, no ground. Every body collides through `layers` horizontal slabs
/// of its box, 1 mm apart, slab k touching only slab k of its neighbours (collision
/// groups), so each touching face pair makes `4 · layers` contacts (the paper's scene:
/// two cubes, twelve contacts per pair, 36 in all, with `layers = 3`). Squeeze the cubes
/// with inward finger forces (`τ[0] > 0`, `τ[1] < 0`) from
/// [`two_finger_grasp_configuration`]. Panics if `cubes` or `layers` is zero or `layers`
/// exceeds 32.
pub fn two_finger_grasp(cubes: usize, layers: usize, material: Material) -> Model {
    assert!(cubes >= 1 && (1..=32).contains(&layers), "two_finger_grasp: cubes ≥ 1, 1 ≤ layers ≤ 32");
    let slabs = |body: Body, h: Vec3| -> Body {
        let gap = if layers > 1 { 1e-3 } else { 0.0 };
        let hz = h.z / layers as f64 - 0.5 * gap;
        (0..layers).fold(body, |body, k| {
            let z = -h.z + (2 * k + 1) as f64 * h.z / layers as f64;
            let geometry = Geometry::Box { half_extents: Vec3::new(h.x, h.y, hz) };
            let bit = 1u32 << k;
            body.with_collision(
                CollisionShape::new(geometry, SE3::from_translation(Vec3::new(0.0, 0.0, z)))
                    .with_material(material)
                    .with_filter(bit, bit),
            )
        })
    };
    let mut b = ModelBuilder::new(format!("two_finger_grasp{cubes}"));
    let half_span = grasp_half_span(cubes);
    let fh = GRASP_FINGER_HALF_EXTENTS;
    for (side, sign) in [("left", -1.0), ("right", 1.0)] {
        let x = sign * (half_span + fh.x - GRASP_PENETRATION);
        b.add_body(
            WORLD,
            Joint::prismatic(format!("{side}_slide"), Vec3::x()).with_placement(SE3::from_translation(Vec3::new(
                x,
                0.0,
                GRASP_HEIGHT,
            ))),
            slabs(Body::new(format!("{side}_finger"), Inertia::solid_box(0.3, fh * 2.0)), fh),
        );
    }
    let h = Vec3::new(GRASP_CUBE_HALF_SIZE, GRASP_CUBE_HALF_SIZE, GRASP_CUBE_HALF_SIZE);
    for k in 0..cubes {
        b.add_body(
            WORLD,
            Joint::free(format!("cube{k}_free")),
            slabs(Body::new(format!("cube{k}"), Inertia::solid_box(0.5, h * 2.0)), h),
        );
    }
    b.build().expect("sample model is valid")
}

/// The start configuration of [`two_finger_grasp`] with `cubes` cubes: fingers at their
/// joints' zero, cubes in a row pressing each other and the fingers by
/// [`GRASP_PENETRATION`], each turned by `tilt` rad about the axis (0, 0.6, 1) (a small
/// tilt makes a rigid no-slip grasp's contact mode generic).
pub fn two_finger_grasp_configuration(model: &Model, cubes: usize, tilt: f64) -> DVector<f64> {
    let mut q = model.neutral();
    let half_span = grasp_half_span(cubes);
    let axis = Vec3::new(0.0, 0.6, 1.0).normalize() * (0.5 * tilt).sin();
    for k in 0..cubes {
        let x = -half_span + GRASP_CUBE_HALF_SIZE + k as f64 * (2.0 * GRASP_CUBE_HALF_SIZE - GRASP_PENETRATION);
        let at = 2 + 7 * k;
        if at + 7 > q.len() {
            break;
        }
        q.rows_mut(at, 7).copy_from_slice(&[x, 0.0, GRASP_HEIGHT, (0.5 * tilt).cos(), axis.x, axis.y, axis.z]);
    }
    q
}

/// A spatial chain of `n` links whose hinge axes cycle through x, y, z (bench model).
pub fn spatial_chain(n: usize) -> Model {
    let mut b = ModelBuilder::new(format!("spatial_chain{n}"));
    let mut parent = WORLD.to_string();
    for k in 0..n {
        let axis = Vec3::ith(k % 3, 1.0);
        let placement = if k == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(0.1, 0.0, -0.3)) };
        let name = format!("link{k}");
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), axis).with_placement(placement),
            rod(&name, 1.0, 0.3, 0.03, Vec3::new(0.1, 0.0, -0.3)),
        );
        parent = name;
    }
    b.build().expect("sample model is valid")
}

/// A 7-DoF arm with the kinematic layout of common collaborative arms
/// (alternating z/y hinges with offsets, limits, damping and armature).
pub fn arm7() -> Model {
    let mut b = ModelBuilder::new("arm7");
    b.add_body(WORLD, Joint::fixed("base_weld"), Body::new("base", Inertia::solid_cylinder(4.0, 0.08, 0.15)));
    let spec: [(Vec3, Vec3, SE3, f64); 7] = [
        (Vec3::z(), Vec3::new(0.0, 0.0, 0.333), SE3::identity(), 4.0),
        (Vec3::z(), Vec3::zeros(), SE3::from_axis_angle(&Vec3::x(), -std::f64::consts::FRAC_PI_2), 4.0),
        (Vec3::z(), Vec3::new(0.0, -0.316, 0.0), SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2), 3.0),
        (Vec3::z(), Vec3::new(0.0825, 0.0, 0.0), SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2), 2.5),
        (
            Vec3::z(),
            Vec3::new(-0.0825, 0.384, 0.0),
            SE3::from_axis_angle(&Vec3::x(), -std::f64::consts::FRAC_PI_2),
            3.0,
        ),
        (Vec3::z(), Vec3::zeros(), SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2), 1.5),
        (Vec3::z(), Vec3::new(0.088, 0.0, 0.0), SE3::from_axis_angle(&Vec3::x(), std::f64::consts::FRAC_PI_2), 0.7),
    ];
    let mut parent = "base".to_string();
    for (k, (axis, offset, rot, mass)) in spec.iter().enumerate() {
        let placement = SE3::new(rot.rot, *offset);
        let name = format!("link{}", k + 1);
        let body = Body::new(
            &name,
            Inertia::from_com(
                *mass,
                Vec3::new(0.01, -0.02, 0.05),
                Mat3::from_diagonal(&Vec3::new(0.02, 0.025, 0.015)) * *mass,
            ),
        );
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{}", k + 1), *axis)
                .with_placement(placement)
                .with_position_limits(&[-2.8], &[2.8])
                .with_velocity_limits(&[2.5])
                .with_effort_limits(&[87.0])
                .with_damping(0.05)
                .with_armature(0.01),
            body,
        );
        parent = name;
    }
    b.build().expect("sample model is valid")
}

/// The deepest [`binary_tree`]: 16 levels, 2^16 − 1 = 65,535 bodies. The body count
/// doubles with each level, so a deeper tree would exhaust memory (depth 40 asks for a
/// trillion bodies) and even this one is far beyond what the dense `nv × nv` matrices of
/// the dynamics handle comfortably.
pub const MAX_BINARY_TREE_DEPTH: usize = 16;

/// A binary tree of revolute joints `depth` levels deep (2^depth − 1 bodies).
///
/// Errors: [`Error::InvalidInput`] for `depth` 0 (no bodies) or above
/// [`MAX_BINARY_TREE_DEPTH`].
pub fn binary_tree(depth: usize) -> Result<Model> {
    if !(1..=MAX_BINARY_TREE_DEPTH).contains(&depth) {
        return Err(Error::InvalidInput(format!(
            "binary_tree depth must be in 1..={MAX_BINARY_TREE_DEPTH} (the tree has 2^depth - 1 bodies), got {depth}"
        )));
    }
    let mut b = ModelBuilder::new(format!("binary_tree{depth}"));
    let mut frontier = vec![WORLD.to_string()];
    let mut count = 0;
    for level in 0..depth {
        let mut next = vec![];
        for (k, parent) in frontier.iter().enumerate() {
            let children = if level == 0 { 1 } else { 2 };
            for c in 0..children {
                let name = format!("b{count}");
                count += 1;
                let side = if c == 0 { 0.15 } else { -0.15 };
                let placement =
                    if level == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(side, 0.0, -0.3)) };
                let axis = Vec3::ith((level + k + c) % 3, 1.0);
                b.add_body(
                    parent,
                    Joint::revolute(format!("j{}", count - 1), axis).with_placement(placement),
                    rod(&name, 1.0, 0.3, 0.03, -Vec3::z()),
                );
                next.push(name);
            }
        }
        frontier = next;
    }
    Ok(b.build()?)
}

/// A floating-base humanoid-like tree with 50 degrees of freedom: free root (6),
/// waist (2), neck (2), two legs with a ball hip (3+1+2+1 = 7 each), two arms with a
/// ball shoulder (3+1+3 = 7 each) and two three-finger grippers (6 each). Bare
/// dynamics: no limits, damping, armature or collision shapes (the dynamics benchmarks
/// run on it); [`humanoid_on_ground`] is the same tree equipped as a robot.
pub fn humanoid() -> Model {
    humanoid_builder(false).build().expect("sample model is valid")
}

/// Height of [`humanoid_on_ground`]'s pelvis frame above its ground plane in the
/// neutral configuration (the soles touch the plane): hip 0.08 + thigh 0.4 + shin 0.4 +
/// ankle to sole 0.07 m.
pub const HUMANOID_STANDING_HEIGHT: f64 = 0.95;

/// The [`humanoid`] tree equipped as a robot, standing on a ground plane: position
/// limits on every hinge and universal joint, effort limits, viscous damping and motor
/// armature on every joint (ball joints have no position limits), and collision shapes
/// (boxes for the pelvis, torso, feet, toes and palms, capsules for the limbs, a sphere
/// for the head; the fingers carry none). The plane sits
/// [`HUMANOID_STANDING_HEIGHT`] below the pelvis, so the neutral configuration stands
/// with the soles on it. Self-collision is off (the limbs collide with the ground only).
pub fn humanoid_on_ground() -> Model {
    let mut b = humanoid_builder(true);
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(
        Geometry::Plane,
        SE3::from_translation(Vec3::new(0.0, 0.0, -HUMANOID_STANDING_HEIGHT)),
    )));
    b.set_self_collision("pelvis", false);
    b.build().expect("sample model is valid")
}

/// A joint's actuator and limits in [`humanoid_on_ground`]: position limits (per
/// coordinate; empty for ball joints), effort limit, damping and armature per dof.
struct Drive<'a> {
    lower: &'a [f64],
    upper: &'a [f64],
    effort: f64,
    damping: f64,
    armature: f64,
}

impl Drive<'_> {
    fn fit(&self, joint: Joint) -> Joint {
        let n = joint.nv();
        let joint = if self.lower.is_empty() { joint } else { joint.with_position_limits(self.lower, self.upper) };
        joint.with_effort_limits(&vec![self.effort; n]).with_damping(self.damping).with_armature(self.armature)
    }
}

const HIP: Drive = Drive { lower: &[], upper: &[], effort: 150.0, damping: 0.5, armature: 0.05 };
const KNEE: Drive = Drive { lower: &[-0.05], upper: &[2.4], effort: 150.0, damping: 0.5, armature: 0.05 };
const ANKLE: Drive = Drive { lower: &[-0.8, -0.4], upper: &[0.6, 0.4], effort: 80.0, damping: 0.3, armature: 0.02 };
const TOE: Drive = Drive { lower: &[-0.5], upper: &[0.8], effort: 10.0, damping: 0.05, armature: 0.005 };
const WAIST_YAW: Drive = Drive { lower: &[-1.0], upper: &[1.0], effort: 100.0, damping: 0.5, armature: 0.05 };
const WAIST_PITCH: Drive = Drive { lower: &[-0.5], upper: &[1.2], effort: 100.0, damping: 0.5, armature: 0.05 };
const NECK_YAW: Drive = Drive { lower: &[-1.2], upper: &[1.2], effort: 20.0, damping: 0.1, armature: 0.01 };
const NECK_PITCH: Drive = Drive { lower: &[-0.6], upper: &[0.8], effort: 20.0, damping: 0.1, armature: 0.01 };
const SHOULDER: Drive = Drive { lower: &[], upper: &[], effort: 60.0, damping: 0.2, armature: 0.02 };
const ELBOW: Drive = Drive { lower: &[-2.5], upper: &[0.05], effort: 40.0, damping: 0.2, armature: 0.02 };
const WRIST_ROLL: Drive = Drive { lower: &[-1.5], upper: &[1.5], effort: 10.0, damping: 0.05, armature: 0.005 };
const WRIST_PITCH: Drive = Drive { lower: &[-1.2], upper: &[1.2], effort: 10.0, damping: 0.05, armature: 0.005 };
const WRIST_YAW: Drive = Drive { lower: &[-0.6], upper: &[0.6], effort: 10.0, damping: 0.05, armature: 0.005 };
const FINGER: Drive = Drive { lower: &[-0.3], upper: &[1.6], effort: 1.0, damping: 0.005, armature: 1e-4 };

/// The humanoid tree; with `equipped`, the joints get their [`Drive`]s and the links
/// their collision shapes.
fn humanoid_builder(equipped: bool) -> ModelBuilder {
    let mut b = ModelBuilder::new(if equipped { "humanoid50_on_ground" } else { "humanoid50" });
    b.floating_base(true);
    let drive = |joint: Joint, d: &Drive| if equipped { d.fit(joint) } else { joint };
    let shape = |body: Body, geometry: Geometry, at: Vec3| {
        if equipped {
            body.with_collision(CollisionShape::new(geometry, SE3::from_translation(at)))
        } else {
            body
        }
    };
    let boxed = |hx: f64, hy: f64, hz: f64| Geometry::Box { half_extents: Vec3::new(hx, hy, hz) };
    // A capsule covering a rod of `length` along −z from the body origin.
    let limb = |body: Body, radius: f64, length: f64| {
        let geometry = Geometry::Capsule { radius, length: length - 2.0 * radius };
        shape(body, geometry, Vec3::new(0.0, 0.0, -length / 2.0))
    };
    let hinge =
        |name: &str, axis: Vec3, at: Vec3| Joint::revolute(name, axis).with_placement(SE3::from_translation(at));
    let pelvis = Body::new("pelvis", Inertia::solid_box(8.0, Vec3::new(0.3, 0.25, 0.15)));
    b.add_link(shape(pelvis, boxed(0.15, 0.125, 0.075), Vec3::zeros()));
    b.add_body(
        "pelvis",
        drive(hinge("waist_yaw", Vec3::z(), Vec3::new(0.0, 0.0, 0.1)), &WAIST_YAW),
        rod("abdomen", 2.0, 0.1, 0.08, Vec3::z()),
    );
    let torso = Body::new(
        "torso",
        Inertia::from_com(15.0, Vec3::new(0.0, 0.0, 0.2), Mat3::from_diagonal(&Vec3::new(0.4, 0.3, 0.2))),
    );
    b.add_body(
        "abdomen",
        drive(hinge("waist_pitch", Vec3::y(), Vec3::new(0.0, 0.0, 0.1)), &WAIST_PITCH),
        shape(torso, boxed(0.1, 0.15, 0.2), Vec3::new(0.0, 0.0, 0.2)),
    );
    b.add_body(
        "torso",
        drive(hinge("neck_yaw", Vec3::z(), Vec3::new(0.0, 0.0, 0.45)), &NECK_YAW),
        rod("neck", 0.5, 0.08, 0.04, Vec3::z()),
    );
    b.add_body(
        "neck",
        drive(hinge("neck_pitch", Vec3::y(), Vec3::new(0.0, 0.0, 0.08)), &NECK_PITCH),
        shape(Body::new("head", Inertia::solid_sphere(3.0, 0.1)), Geometry::Sphere { radius: 0.1 }, Vec3::zeros()),
    );
    for (side, s) in [("l", 1.0), ("r", -1.0)] {
        let n = |x: &str| format!("{side}_{x}");
        b.add_body(
            "pelvis",
            drive(
                Joint::spherical(n("hip")).with_placement(SE3::from_translation(Vec3::new(0.0, 0.1 * s, -0.08))),
                &HIP,
            ),
            limb(rod(&n("thigh"), 6.0, 0.4, 0.06, -Vec3::z()), 0.06, 0.4),
        );
        b.add_body(
            &n("thigh"),
            drive(hinge(&n("knee"), Vec3::y(), Vec3::new(0.0, 0.0, -0.4)), &KNEE),
            limb(rod(&n("shin"), 3.5, 0.4, 0.05, -Vec3::z()), 0.05, 0.4),
        );
        let foot = Body::new(
            n("foot"),
            Inertia::from_com(1.2, Vec3::new(0.05, 0.0, -0.04), Mat3::from_diagonal(&Vec3::new(0.002, 0.006, 0.007))),
        );
        b.add_body(
            &n("shin"),
            drive(
                Joint::universal(n("ankle"), Vec3::y(), Vec3::x())
                    .with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, -0.4))),
                &ANKLE,
            ),
            shape(foot, boxed(0.1, 0.05, 0.03), Vec3::new(0.05, 0.0, -0.04)),
        );
        let toes = Body::new(n("toes"), Inertia::solid_box(0.2, Vec3::new(0.05, 0.08, 0.02)));
        b.add_body(
            &n("foot"),
            drive(hinge(&n("toe"), Vec3::y(), Vec3::new(0.15, 0.0, -0.05)), &TOE),
            shape(toes, boxed(0.025, 0.045, 0.01), Vec3::new(0.025, 0.0, -0.01)),
        );
        b.add_body(
            "torso",
            drive(
                Joint::spherical(n("shoulder")).with_placement(SE3::from_translation(Vec3::new(0.0, 0.2 * s, 0.4))),
                &SHOULDER,
            ),
            limb(rod(&n("upper_arm"), 2.0, 0.3, 0.04, -Vec3::z()), 0.04, 0.3),
        );
        b.add_body(
            &n("upper_arm"),
            drive(hinge(&n("elbow"), Vec3::y(), Vec3::new(0.0, 0.0, -0.3)), &ELBOW),
            limb(rod(&n("forearm"), 1.2, 0.28, 0.035, -Vec3::z()), 0.035, 0.28),
        );
        b.add_body(
            &n("forearm"),
            drive(hinge(&n("wrist_roll"), Vec3::z(), Vec3::new(0.0, 0.0, -0.28)), &WRIST_ROLL),
            rod(&n("wrist1"), 0.2, 0.03, 0.03, -Vec3::z()),
        );
        b.add_body(
            &n("wrist1"),
            drive(hinge(&n("wrist_pitch"), Vec3::y(), Vec3::new(0.0, 0.0, -0.03)), &WRIST_PITCH),
            rod(&n("wrist2"), 0.2, 0.03, 0.03, -Vec3::z()),
        );
        let palm = Body::new(n("palm"), Inertia::solid_box(0.4, Vec3::new(0.08, 0.04, 0.1)));
        b.add_body(
            &n("wrist2"),
            drive(hinge(&n("wrist_yaw"), Vec3::x(), Vec3::new(0.0, 0.0, -0.03)), &WRIST_YAW),
            shape(palm, boxed(0.04, 0.02, 0.05), Vec3::zeros()),
        );
        for f in 0..3 {
            let fname = |x: &str| format!("{side}_f{f}_{x}");
            let y = (f as f64 - 1.0) * 0.025;
            b.add_body(
                &n("palm"),
                drive(hinge(&fname("base"), Vec3::y(), Vec3::new(0.0, y, -0.1)), &FINGER),
                rod(&fname("proximal"), 0.05, 0.04, 0.008, -Vec3::z()),
            );
            b.add_body(
                &fname("proximal"),
                drive(hinge(&fname("mid"), Vec3::y(), Vec3::new(0.0, 0.0, -0.04)), &FINGER),
                rod(&fname("distal"), 0.03, 0.03, 0.007, -Vec3::z()),
            );
        }
    }
    b
}

/// A tree holding one joint of every type (free root), with springs, damping and
/// armature on some of them — the model the per-joint tests run on.
pub fn all_joint_types() -> Model {
    let mut b = ModelBuilder::new("all_joints");
    b.floating_base(true);
    b.add_link(Body::new("root", Inertia::solid_box(2.0, Vec3::new(0.3, 0.2, 0.1))));
    let at = |x: f64, y: f64, z: f64| SE3::from_translation(Vec3::new(x, y, z));
    let axis = Vec3::new(0.3, -0.5, 0.8);
    let joints = [
        Joint::revolute("revolute", Vec3::new(0.0, 1.0, 0.2))
            .with_placement(at(0.2, 0.0, 0.0))
            .with_position_limits(&[-2.0], &[2.0]),
        Joint::continuous("continuous", Vec3::x())
            .with_placement(SE3::new(SE3::from_axis_angle(&Vec3::z(), 0.4).rot, Vec3::new(0.0, 0.0, -0.3)))
            .with_damping(0.1),
        Joint::prismatic("prismatic", axis).with_placement(at(0.1, 0.1, -0.2)).with_spring(5.0, &[0.05]),
        Joint::spherical("spherical").with_placement(at(0.0, -0.1, -0.25)).with_armature(0.02),
        Joint::fixed("fixed")
            .with_placement(SE3::new(SE3::from_axis_angle(&Vec3::y(), 0.3).rot, Vec3::new(0.05, 0.0, -0.1))),
        Joint::planar("planar", Vec3::new(0.2, 0.1, 1.0)).with_placement(at(0.0, 0.0, -0.2)),
        Joint::universal("universal", Vec3::x(), Vec3::new(0.0, 0.6, 0.8))
            .with_placement(at(0.1, 0.0, -0.2))
            .with_spring(2.0, &[0.1, -0.2]),
        Joint::screw("screw", Vec3::z(), 0.05).with_placement(at(0.0, 0.1, -0.2)),
    ];
    let mut parent = "root".to_string();
    for (k, j) in joints.into_iter().enumerate() {
        let name = format!("body_{}", j.name);
        let mass = 0.5 + 0.2 * k as f64;
        let body = Body::new(
            &name,
            Inertia::from_com(
                mass,
                Vec3::new(0.03, -0.02, -0.1),
                Mat3::new(0.010, 0.001, 0.0, 0.001, 0.012, 0.002, 0.0, 0.002, 0.008) * mass,
            ),
        );
        // Branch the spherical and planar joints off the root, chain the others.
        let p = if k == 3 || k == 5 { "root".to_string() } else { parent.clone() };
        b.add_body(&p, j, body);
        parent = name;
    }
    b.build().expect("sample model is valid")
}

/// A random tree of `n` bodies: random parents, joint types (weighted toward
/// revolute), placements, axes and physically valid inertias. With `floating`, the
/// root is free.
pub fn random_tree(n: usize, seed: u64, floating: bool) -> Model {
    let mut rng = SplitMix64::new(seed);
    let mut b = ModelBuilder::new(format!("random_tree{n}_{seed}"));
    b.floating_base(floating);
    let rand_vec = |rng: &mut SplitMix64, s: f64| Vec3::new(rng.range(-s, s), rng.range(-s, s), rng.range(-s, s));
    let rand_inertia = |rng: &mut SplitMix64| {
        let mass = rng.range(0.3, 3.0);
        let d = Vec3::new(rng.range(0.005, 0.05), rng.range(0.005, 0.05), rng.range(0.005, 0.05));
        // principal moments from a box of random sides: always satisfy the triangle inequality
        let moments = Vec3::new(d.y + d.z, d.x + d.z, d.x + d.y) * mass;
        let r = SE3::from_axis_angle(&rand_vec(rng, 1.0).normalize(), rng.range(0.0, 3.0)).rot;
        Inertia::from_com(mass, rand_vec(rng, 0.1), r * Mat3::from_diagonal(&moments) * r.transpose())
    };
    b.add_link(Body::new("b0", rand_inertia(&mut rng)));
    for k in 1..n {
        let parent = format!("b{}", (rng.next_u64() % k as u64) as usize);
        let axis = rand_vec(&mut rng, 1.0).normalize();
        let kind = match rng.next_u64() % 10 {
            0 => JointType::Prismatic { axis },
            1 => JointType::Spherical,
            2 => JointType::Universal { axis1: axis, axis2: axis.cross(&Vec3::new(0.3, 0.2, 0.9)).normalize() },
            3 => JointType::Planar { normal: axis },
            4 => JointType::Screw { axis, pitch: rng.range(-0.1, 0.1) },
            _ => JointType::Revolute { axis },
        };
        let placement = SE3::new(
            SE3::from_axis_angle(&rand_vec(&mut rng, 1.0).normalize(), rng.range(0.0, 3.0)).rot,
            rand_vec(&mut rng, 0.3),
        );
        let joint = Joint::new(format!("j{k}"), kind).with_placement(placement);
        b.add_body(&parent, joint, Body::new(format!("b{k}"), rand_inertia(&mut rng)));
    }
    b.build().expect("random tree is valid")
}

/// The shape of the bodies of [`bodies_on_plane`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestingShape {
    /// Boxes of half extents (0.1, 0.08, 0.06): four corners touch the plane.
    Box,
    /// Spheres of radius 0.1.
    Sphere,
    /// Capsules of radius 0.05 and length 0.2, lying along x: both ends touch.
    Capsule,
}

/// `n` free bodies on a square grid (spacing 0.35 m, no two shapes touching)
/// resting on the world plane `z = 0`, each penetrating it by 1 mm at the neutral
/// configuration (each free joint's placement holds the body's grid pose). For the
/// collision benchmarks and tests; `n` ≥ 1.
pub fn bodies_on_plane(n: usize, shape: RestingShape) -> Model {
    let mut b = ModelBuilder::new(format!("{shape:?}_on_plane{n}").to_lowercase());
    add_ground(&mut b, Material::default());
    let side = (n as f64).sqrt().ceil().max(1.0) as usize;
    let depth = 1e-3;
    for k in 0..n {
        let (x, y) = ((k % side) as f64 * 0.35, (k / side) as f64 * 0.35);
        let (geometry, inertia, height, rot) = match shape {
            RestingShape::Box => {
                let h = Vec3::new(0.1, 0.08, 0.06);
                (Geometry::Box { half_extents: h }, Inertia::solid_box(1.0, h * 2.0), h.z, SE3::identity())
            }
            RestingShape::Sphere => {
                (Geometry::Sphere { radius: 0.1 }, Inertia::solid_sphere(1.0, 0.1), 0.1, SE3::identity())
            }
            RestingShape::Capsule => (
                Geometry::Capsule { radius: 0.05, length: 0.2 },
                Inertia::solid_cylinder(1.0, 0.05, 0.3),
                0.05,
                SE3::from_axis_angle(&Vec3::y(), std::f64::consts::FRAC_PI_2),
            ),
        };
        let name = format!("body{k}");
        let placement = SE3::new(rot.rot, Vec3::new(x, y, height - depth));
        b.add_body(
            WORLD,
            Joint::free(format!("free{k}")).with_placement(placement),
            Body::new(&name, inertia).with_collision(CollisionShape::new(geometry, SE3::identity())),
        );
    }
    b.build().expect("sample model is valid")
}

/// The world plane `z = 0` of `material` on the world link.
fn add_ground(b: &mut ModelBuilder, material: Material) {
    b.add_link(
        Body::massless(WORLD)
            .with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(material)),
    );
}

/// Friction coefficient of [`arch`]'s blocks and ground (the paper's arch: μ = 0.6).
pub const ARCH_FRICTION: f64 = 0.6;

/// A self-supporting parabolic arch of `blocks` free voussoirs standing on the world
/// plane `z = 0`: the arch scene of Macklin et al. 2019 (Fig. 14, §10; μ = 0.6).
///
/// The centre line is the parabola `z = f (1 − (x/L)²)` with half span `L = 1 m` and rise
/// `f = 1.5 m`, cut into `blocks` pieces of equal arc length by joints normal to it; the
/// two feet are cut horizontally and rest on the plane. The arch thickens from 0.2 m at
/// the crown to 0.4 m at the feet, and each block's depth (along y) grows from 0.2 m to
/// 0.5 m with its distance from the axis, so with a density of 2000 kg/m³ the 20-block
/// arch's masses range from 18 kg (crown) to 71 kg (feet): adjacent blocks of unequal
/// masses and unequal faces. Each block is a convex hexahedron whose body frame sits at
/// its centroid (axes parallel to the world's); its free joint's placement holds it there,
/// so the neutral configuration is the built arch with every joint face on face.
///
/// The shape is statically safe by a margin (Heyman's safe theorem for rigid blocks): for
/// 20 blocks a thrust line exists that stays inside the middle third of every joint and
/// leans at most 15° (a friction demand of 0.27) from every joint's normal.
///
/// Errors: fewer than 2 blocks.
pub fn arch(blocks: usize) -> Result<Model> {
    use crate::collision::Polytope;
    if blocks < 2 {
        return Err(Error::InvalidInput(format!("an arch needs at least 2 blocks, got {blocks}")));
    }
    let (half_span, rise, density) = (1.0, 1.5, 2000.0);
    let thickness = |x: f64| 0.2 + 0.2 * x.abs() / half_span;
    let depth = |x: f64| 0.2 + 0.3 * x.abs() / half_span;
    let height = |x: f64| rise * (1.0 - (x / half_span).powi(2));
    // Arc length along the centre line, tabulated finely, then equal-length cuts.
    let samples = 4000;
    let xs: Vec<f64> = (0..=samples).map(|i| -half_span + 2.0 * half_span * i as f64 / samples as f64).collect();
    let mut arc = vec![0.0];
    for w in xs.windows(2) {
        arc.push(arc.last().unwrap() + (w[1] - w[0]).hypot(height(w[1]) - height(w[0])));
    }
    let total = *arc.last().unwrap();
    let cut_x = |k: usize| -> f64 {
        let s = total * k as f64 / blocks as f64;
        let i = arc.partition_point(|&a| a < s).clamp(1, samples);
        let t = (s - arc[i - 1]) / (arc[i] - arc[i - 1]);
        xs[i - 1] + t * (xs[i] - xs[i - 1])
    };
    // Each joint as its two end points (intrados, extrados) in the x–z plane.
    let joints: Vec<[Vec3; 2]> = (0..=blocks)
        .map(|k| {
            let x = if k == 0 {
                -half_span
            } else if k == blocks {
                half_span
            } else {
                cut_x(k)
            };
            let (c, t) = (Vec3::new(x, 0.0, height(x)), thickness(x));
            if k == 0 || k == blocks {
                // A foot: horizontal, centred under the centre line's end.
                let inward = -x.signum();
                return [c + Vec3::x() * (inward * t / 2.0), c - Vec3::x() * (inward * t / 2.0)];
            }
            let tangent = Vec3::new(1.0, 0.0, -2.0 * rise * x / half_span.powi(2)).normalize();
            let up = Vec3::new(-tangent.z, 0.0, tangent.x);
            [c - up * (t / 2.0), c + up * (t / 2.0)]
        })
        .collect();
    let material = Material::new(ARCH_FRICTION, 0.0);
    let mut b = ModelBuilder::new(format!("arch{blocks}"));
    add_ground(&mut b, material);
    for k in 0..blocks {
        let corners = [joints[k][0], joints[k + 1][0], joints[k + 1][1], joints[k][1]];
        let mid_x = corners.iter().map(|p| p.x).sum::<f64>() / 4.0;
        let half_depth = depth(mid_x) / 2.0;
        let points: Vec<Vec3> =
            corners.iter().flat_map(|p| [p - Vec3::y() * half_depth, p + Vec3::y() * half_depth]).collect();
        let hull = Polytope::convex_hull(&points).map_err(|e| Error::InvalidInput(format!("arch block {k}: {e}")))?;
        let (volume, centroid, unit_inertia) =
            hull.mass_properties().ok_or_else(|| Error::InvalidInput(format!("arch block {k} has no volume")))?;
        let mut mesh = hull.triangle_mesh();
        mesh.vertices.iter_mut().for_each(|v| *v -= centroid);
        let name = format!("block{k}");
        b.add_body(
            WORLD,
            Joint::free(format!("free{k}")).with_placement(SE3::from_translation(centroid)),
            Body::from_mass_properties(&name, density * volume, Vec3::zeros(), unit_inertia * density).with_collision(
                CollisionShape::new(Geometry::ConvexMesh(mesh), SE3::identity()).with_material(material),
            ),
        );
    }
    Ok(b.build()?)
}

/// Friction coefficient of [`table_pile`]'s tables and ground (the paper's table pile: μ = 0.7).
pub const TABLE_FRICTION: f64 = 0.7;

/// `n` tables dropped into a pile on the world plane `z = 0`: the table-pile scene of
/// Macklin et al. 2019 (Fig. 14, §10; 54 tables of 4.7 kg, μ = 0.7).
///
/// Each table is one non-convex body: a top of 0.5 × 0.5 × 0.04 m on four legs of
/// 0.04 × 0.04 × 0.3 m at its corners (five box shapes), 4.7 kg of uniform density, its body
/// frame at the top's centre. Table `k` starts over cell `k mod 9` of a 3 × 3 grid 0.75 m
/// apart, turned about z at random and tilted by up to ±0.25 rad about x and y (`seed`), as
/// low as it can be with its bounding box 1 cm clear of the plane and of the bounding boxes
/// of the tables before it: the columns (six tables each for 54) tip over onto one another
/// as they land, and no two shapes touch at the neutral configuration, where each free
/// joint's placement holds its table's start pose.
pub fn table_pile(n: usize, seed: u64) -> Model {
    let material = Material::new(TABLE_FRICTION, 0.0);
    let (top, leg) = (Vec3::new(0.25, 0.25, 0.02), Vec3::new(0.02, 0.02, 0.15));
    let volume = |h: Vec3| 8.0 * h.x * h.y * h.z;
    let density = 4.7 / (volume(top) + 4.0 * volume(leg));
    let legs: Vec<Vec3> = [(1.0, 1.0), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)]
        .iter()
        .map(|&(sx, sy)| Vec3::new(sx * (top.x - leg.x), sy * (top.y - leg.y), -top.z - leg.z))
        .collect();
    let mut inertia = Inertia::solid_box(density * volume(top), top * 2.0);
    for p in &legs {
        inertia += Inertia::solid_box(density * volume(leg), leg * 2.0).transformed(&SE3::from_translation(*p));
    }
    let box_shape = |h: Vec3, at: Vec3| {
        CollisionShape::new(Geometry::Box { half_extents: h }, SE3::from_translation(at)).with_material(material)
    };
    let mut b = ModelBuilder::new(format!("table_pile{n}"));
    add_ground(&mut b, material);
    let mut rng = SplitMix64::new(seed);
    let (spacing, clearance) = (0.75, 0.01);
    // The placed tables' world bounding boxes (lower and upper corners).
    let mut placed: Vec<(Vec3, Vec3)> = Vec::with_capacity(n);
    for k in 0..n {
        let column = k % 9;
        let rpy = Vec3::new(
            rng.range(-0.25, 0.25),
            rng.range(-0.25, 0.25),
            rng.range(-std::f64::consts::PI, std::f64::consts::PI),
        );
        let turn = SE3::from_xyz_rpy(&Vec3::zeros(), &rpy);
        // The turned table's bounding box about its origin (from its overall box's corners).
        let (mut lo, mut hi) = (Vec3::repeat(f64::INFINITY), Vec3::repeat(f64::NEG_INFINITY));
        for c in 0..8 {
            let corner = Vec3::new(
                if c & 1 == 0 { -top.x } else { top.x },
                if c & 2 == 0 { -top.y } else { top.y },
                if c & 4 == 0 { -top.z - 2.0 * leg.z } else { top.z },
            );
            let p = turn.act_point(&corner);
            (lo, hi) = (lo.inf(&p), hi.sup(&p));
        }
        let (x, y) = ((column % 3) as f64 * spacing, (column / 3) as f64 * spacing);
        let overlaps = |(l, h): &(Vec3, Vec3)| {
            x + lo.x < h.x + clearance
                && l.x < x + hi.x + clearance
                && y + lo.y < h.y + clearance
                && l.y < y + hi.y + clearance
        };
        let z =
            placed.iter().filter(|b| overlaps(b)).map(|(_, h)| h.z + clearance - lo.z).fold(clearance - lo.z, f64::max);
        let at = Vec3::new(x, y, z);
        placed.push((at + lo, at + hi));
        let mut body = Body::new(format!("table{k}"), inertia).with_collision(box_shape(top, Vec3::zeros()));
        for p in &legs {
            body = body.with_collision(box_shape(leg, *p));
        }
        b.add_body(WORLD, Joint::free(format!("free{k}")).with_placement(SE3::new(turn.rot, at)), body);
    }
    b.build().expect("sample model is valid")
}
