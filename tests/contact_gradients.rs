//! The contact scene zoo: Jacobians of contact steps against Ridders finite
//! differences of the simulator (through `gradcheck::check_step`), at ≥ 10 states per
//! scene inside one contact mode (the row classification of the recorded step equals
//! the scene's nominal one), every block (q, v, τ, θ) to 1e-6 relative. The q columns
//! use a finite-difference step below the scenes' penetrations; the v, τ and θ columns a
//! larger one (see [`FD_STEP_INPUTS`]).

mod common;

use common::contact::{
    ball_pinched, capsule_x, check_scenes, free_body, free_box, ground, material, options, pose_q, Scene,
};
use nalgebra::{DVector, UnitQuaternion};
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::step::PenetrationRecovery;
use stiction::{Joint, ModelBuilder, State};

fn box_scene(name: &'static str, mu: f64, push: f64, vx: f64) -> Scene {
    let mut params: Vec<String> = vec!["mass:box".into(), "inertia:box".into(), "com:box".into()];
    if mu > 0.0 {
        params.extend(["friction:box".into(), "friction:world".into()]);
    }
    if vx != 0.0 {
        // The free joint's placement translates the box: its height sets the penetration.
        params.push("placement:box_free".into());
    }
    let mut b = ModelBuilder::new(name);
    ground(&mut b, material(mu, 0.0), 0.0);
    let (model, state) = pressed_box(b, "box", Vec3::new(0.1, 0.08, 0.06), 1.0, mu, vx);
    let mut tau = DVector::zeros(6);
    tau[3] = push;
    Scene { name, model, options: options(), state, tau, params, spread: (2e-5, 2e-3) }
}

/// Adds to `b` a free box `name` (half extents `h`, `mass`, friction `mu`) pressed 0.2 mm
/// into the support at z = 0, turned 0.3 rad about z, moving along its x at `vx`; builds
/// the model.
fn pressed_box(mut b: ModelBuilder, name: &str, h: Vec3, mass: f64, mu: f64, vx: f64) -> (stiction::Model, State) {
    free_body(&mut b, name, Geometry::Box { half_extents: h }, Inertia::solid_box(mass, h * 2.0), material(mu, 0.0));
    let model = b.build().unwrap();
    let q = pose_q(&model, Vec3::new(0.0, 0.0, h.z - 2e-4), Vec3::z(), 0.3);
    let mut v = DVector::zeros(6);
    v[3] = vx;
    (model, State { q, v })
}

/// Two boxes of unequal masses and sizes apart on the ground: a 1 kg box sliding along
/// its x at 1 m/s (μ = 0.3: its tangent rows at their bounds, its clamping set rank
/// deficient) and a 3 kg box resting under a push (μ = 0.8, every row clamping). Their
/// clamping rows form two parts of the stage (`Â` block-diagonal), each with its own
/// pseudo-inverse and rank; the sliding box's part has the null-space term.
fn two_boxes_apart_scene() -> Scene {
    let mut b = ModelBuilder::new("two_boxes_apart");
    ground(&mut b, material(0.8, 0.0), 0.0);
    let (ha, hb) = (Vec3::new(0.1, 0.08, 0.06), Vec3::new(0.15, 0.1, 0.05));
    free_box(&mut b, "slider", ha, 1.0, material(0.3, 0.0));
    free_box(&mut b, "rester", hb, 3.0, material(0.8, 0.0));
    let model = b.build().unwrap();
    let mut q = model.neutral();
    let a = pose_q(&model, Vec3::new(0.0, 0.0, ha.z - 2e-4), Vec3::z(), 0.3);
    let c = pose_q(&model, Vec3::new(1.0, 0.4, hb.z - 2e-4), Vec3::z(), -0.5);
    q.rows_mut(0, 7).copy_from(&a.rows(0, 7));
    q.rows_mut(7, 7).copy_from(&c.rows(0, 7));
    let mut v = DVector::zeros(12);
    // Along the slider's own x, as in `box_sliding`.
    v[3] = 1.0;
    let mut tau = DVector::zeros(12);
    tau[9] = 3.0;
    let params = ["mass:slider", "mass:rester", "friction:slider", "friction:rester", "inertia:rester"];
    Scene {
        name: "two_boxes_apart",
        model,
        options: options(),
        state: State { q, v },
        tau,
        params: params.iter().map(|p| p.to_string()).collect(),
        spread: (2e-5, 2e-3),
    }
}

fn sphere_scene(name: &'static str, restitution: f64, height: f64, vz: f64) -> Scene {
    let mut b = ModelBuilder::new(name);
    ground(&mut b, material(0.5, restitution), 0.0);
    let r = 0.1;
    free_body(
        &mut b,
        "ball",
        Geometry::Sphere { radius: r },
        Inertia::solid_sphere(0.5, r),
        material(0.5, restitution),
    );
    let model = b.build().unwrap();
    let q = pose_q(&model, Vec3::new(0.0, 0.0, r + height), Vec3::z(), 0.0);
    let mut v = DVector::zeros(6);
    v[5] = vz;
    v[3] = 0.2;
    Scene {
        name,
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(6),
        params: if restitution > 0.0 && restitution < 1.0 {
            vec!["mass:ball".into(), "restitution:ball".into(), "restitution:world".into(), "friction:ball".into()]
        } else {
            vec!["mass:ball".into()]
        },
        spread: if height.abs() < 1e-5 { (1e-6, 1e-3) } else { (1e-4, 1e-2) },
    }
}

/// A ball at rest on the ground, pressed 0.2 mm in: the contact clamps in all three rows.
fn ball_resting_scene() -> Scene {
    let mut s = sphere_scene("ball_resting", 0.0, -2e-4, 0.0);
    s.state.v[3] = 0.0;
    s.params = vec!["mass:ball".into(), "friction:ball".into()];
    s.spread = (2e-5, 2e-3);
    s
}

/// A ball sliding on the ground, pressed 0.2 mm in: one contact whose
/// first friction row is at its bound (the U set, the friction-coefficient columns).
fn ball_sliding_scene() -> Scene {
    let mut s = sphere_scene("ball_sliding", 0.0, -2e-4, 0.0);
    // Fast enough (3 m/s) that the friction impulse of a step (~0.2 m/s at the
    // contact) cannot stop it: the mode holds under the finite-difference steps.
    s.state.v[3] = 0.0;
    s.state.v[4] = 3.0;
    s.params = vec!["mass:ball".into(), "friction:ball".into(), "friction:world".into(), "placement:ball_free".into()];
    s.spread = (2e-5, 2e-3);
    s
}

fn incline_scene(name: &'static str, mu: f64, v_down: f64) -> Scene {
    let params = vec!["mass:box".into(), "friction:world".into()];
    let tilt = 10f64.to_radians();
    let mut b = ModelBuilder::new(name);
    ground(&mut b, material(mu, 0.0), tilt);
    let h = Vec3::new(0.1, 0.08, 0.06);
    free_body(&mut b, "box", Geometry::Box { half_extents: h }, Inertia::solid_box(1.0, h * 2.0), material(mu, 0.0));
    let model = b.build().unwrap();
    // The plane z' = 0 of the tilted frame; the box sits on it, rotated with it.
    let n = SE3::from_axis_angle(&Vec3::y(), tilt).rot * Vec3::z();
    let centre = n * (h.z - 2e-4);
    let q = pose_q(&model, centre, Vec3::y(), tilt);
    let mut v = DVector::zeros(6);
    v[3] = -v_down; // body x points down the slope (the slope rises along +x)
    Scene {
        name,
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(6),
        params,
        spread: (2e-5, 2e-3),
    }
}

/// Two stacked blocks of mass ratio 1:10 with static friction: a 0.5 kg block turned by
/// 0.4 rad on a 5 kg one (4 + 4 corner contacts, 24 rows on 12 dofs). (With the light
/// block at the bottom, the rounding noise of the contact solve, amplified by the
/// conditioning, reaches 2e-10 of a block's scale in the finite differences — the Ridders
/// estimates say so — which the floor below cannot tell from an error.)
fn stack_scene() -> Scene {
    let mut b = ModelBuilder::new("two_blocks_1_10");
    ground(&mut b, material(0.7, 0.0), 0.0);
    let h = Vec3::new(0.1, 0.1, 0.05);
    free_body(&mut b, "heavy", Geometry::Box { half_extents: h }, Inertia::solid_box(5.0, h * 2.0), material(0.7, 0.0));
    let h2 = Vec3::new(0.06, 0.06, 0.04);
    free_body(
        &mut b,
        "light",
        Geometry::Box { half_extents: h2 },
        Inertia::solid_box(0.5, h2 * 2.0),
        material(0.7, 0.0),
    );
    let model = b.build().unwrap();
    let q1 = pose_q(&model, Vec3::new(0.0, 0.0, h.z - 1e-4), Vec3::z(), 0.0);
    let mut q = q1.clone();
    let q2 = [0.01, -0.01, 2.0 * h.z + h2.z - 2e-4];
    q[7] = q2[0];
    q[8] = q2[1];
    q[9] = q2[2];
    let half = 0.5 * 0.4f64;
    q[10] = half.cos();
    q[11] = 0.0;
    q[12] = 0.0;
    q[13] = half.sin();
    Scene {
        name: "two_blocks_1_10",
        model,
        options: options(),
        state: State { q, v: DVector::zeros(12) },
        tau: DVector::zeros(12),
        params: vec!["mass:light".into(), "mass:heavy".into()],
        spread: (1e-5, 1e-3),
    }
}

fn cartpole_scene() -> Scene {
    let model = common::contact::limited_cartpole();
    let q = DVector::from_vec(vec![0.9995, 0.3]);
    let v = DVector::from_vec(vec![1.5, -0.5]);
    Scene {
        name: "cartpole_limit",
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::from_vec(vec![0.5, 0.0]),
        params: vec!["mass:cart".into(), "mass:pole".into()],
        spread: (1e-5, 1e-2),
    }
}

/// Three balls stacked on the ground (free joints), each pressed 0.15 mm into the one
/// below (vertex–vertex contacts with a midpoint contact point), at rest, friction 0.5:
/// every row clamping.
fn sphere_stack_scene() -> Scene {
    let mut b = ModelBuilder::new("sphere_stack");
    let m = material(0.5, 0.0);
    ground(&mut b, m, 0.0);
    let r = 0.1;
    let names = ["s1", "s2", "s3"];
    for (k, name) in names.iter().enumerate() {
        free_body(&mut b, name, Geometry::Sphere { radius: r }, Inertia::solid_sphere(0.5 - 0.1 * k as f64, r), m);
    }
    let model = b.build().unwrap();
    let d = 1.5e-4;
    let mut q = model.neutral();
    let mut z = r - d;
    for k in 0..3 {
        q[7 * k + 2] = z;
        z += 2.0 * r - d;
    }
    Scene {
        name: "sphere_stack",
        model,
        options: options(),
        state: State { q, v: DVector::zeros(18) },
        tau: DVector::zeros(18),
        params: vec!["mass:s1".into(), "mass:s3".into(), "friction:s2".into()],
        spread: (2e-5, 2e-3),
    }
}

/// A box falling onto the ground at `speed`, turned by `tilt` about `axis`, its lowest
/// corner 1 mm above the ground: the impact falls inside the step and bounces with
/// restitution 0.5 (friction `mu`).
fn bouncing_block_scene(name: &'static str, mu: f64, axis: Vec3, tilt: f64, speed: f64) -> Scene {
    let mut b = ModelBuilder::new(name);
    let m = material(mu, 0.5);
    ground(&mut b, m, 0.0);
    let h = Vec3::new(0.1, 0.08, 0.06);
    free_body(&mut b, "box", Geometry::Box { half_extents: h }, Inertia::solid_box(1.0, h * 2.0), m);
    let model = b.build().unwrap();
    let rot = SE3::from_axis_angle(&axis.normalize(), tilt).rot;
    let mut lowest = f64::INFINITY;
    for k in 0..8 {
        let corner = Vec3::new(
            if k & 1 == 0 { h.x } else { -h.x },
            if k & 2 == 0 { h.y } else { -h.y },
            if k & 4 == 0 { h.z } else { -h.z },
        );
        lowest = lowest.min((rot * corner).z);
    }
    let q = pose_q(&model, Vec3::new(0.0, 0.0, 1e-3 - lowest), axis, tilt);
    // Falling straight down: the world velocity (0, 0, −speed) in body coordinates.
    let vb = rot.transpose() * Vec3::new(0.0, 0.0, -speed);
    let mut v = DVector::zeros(6);
    v.rows_mut(3, 3).copy_from(&vb);
    let mut params: Vec<String> =
        vec!["mass:box".into(), "inertia:box".into(), "restitution:box".into(), "restitution:world".into()];
    if mu > 0.0 {
        params.push("friction:box".into());
    }
    Scene {
        name,
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(6),
        params,
        spread: (1e-4, 1e-2),
    }
}

/// A box sliding (0.8 m/s along both world axes) and spinning (1.5 rad/s about z) on the
/// ground, friction 0.3: every corner slides with both velocity components well away from
/// zero, all friction rows at their bounds.
fn box_sliding_spinning_scene() -> Scene {
    let mut s = box_scene("box_sliding_spinning", 0.3, 0.0, 0.0);
    // The free joint's linear velocity is in the world frame (body axes turned by 0.3 rad).
    s.state.v[3] = 0.8;
    s.state.v[4] = 0.8;
    s.state.v[2] = 1.5;
    s
}

/// An inverted pendulum (a 0.6 m pole on a hinge about y, tilted by 0.2 rad) on a 2 kg
/// base box (free joint) sliding at 1 m/s on the ground, friction 0.3.
fn reverse_pendulum_scene() -> Scene {
    let mut b = ModelBuilder::new("reverse_pendulum_sliding");
    let m = material(0.3, 0.0);
    ground(&mut b, m, 0.0);
    let h = Vec3::new(0.15, 0.1, 0.05);
    free_body(&mut b, "base", Geometry::Box { half_extents: h }, Inertia::solid_box(2.0, h * 2.0), m);
    b.add_body(
        "base",
        Joint::revolute("hinge", Vec3::y()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, h.z))),
        stiction::model::samples::rod("pole", 0.3, 0.6, 0.02, Vec3::z()),
    );
    let model = b.build().unwrap();
    let mut q = pose_q(&model, Vec3::new(0.0, 0.0, h.z - 2e-4), Vec3::z(), 0.0);
    q[7] = 0.2;
    let mut v = DVector::zeros(7);
    v[3] = 1.0;
    v[6] = 0.5;
    let mut tau = DVector::zeros(7);
    tau[6] = -0.2;
    Scene {
        name: "reverse_pendulum_sliding",
        model,
        options: options(),
        state: State { q, v },
        tau,
        params: vec!["mass:base".into(), "mass:pole".into(), "friction:world".into(), "placement:hinge".into()],
        spread: (2e-5, 2e-3),
    }
}

/// A ball on a two-axis gantry (a carriage on a rail along x at 0.3 m, a vertical slide
/// below it) sliding at 2 m/s on the ground, pressed 0.2 mm in, friction 0.4: the normal
/// row clamps and the friction row is at its bound. The placements of the carriage
/// (`rail`) and of the slide (`drop`) translate the ball, so they move the contact.
fn gantry_sliding_scene() -> Scene {
    let mut b = ModelBuilder::new("gantry_ball_sliding");
    let m = material(0.4, 0.0);
    ground(&mut b, m, 0.0);
    let r = 0.05;
    b.add_body(
        WORLD,
        Joint::prismatic("rail", Vec3::x()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, 0.3))),
        stiction::model::Body::new("carriage", Inertia::solid_box(2.0, Vec3::new(0.1, 0.1, 0.05))),
    );
    b.add_body(
        "carriage",
        Joint::prismatic("drop", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.02, 0.01, -0.1))),
        stiction::model::Body::new("ball", Inertia::solid_sphere(0.5, r)).with_collision(
            stiction::model::CollisionShape::new(Geometry::Sphere { radius: r }, SE3::identity()).with_material(m),
        ),
    );
    let model = b.build().unwrap();
    // Ball centre at 0.3 − 0.1 + q_drop = r − 0.2 mm.
    let q = DVector::from_vec(vec![0.0, r - 2e-4 - 0.2]);
    let v = DVector::from_vec(vec![2.0, 0.0]);
    Scene {
        name: "gantry_ball_sliding",
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::from_vec(vec![1.0, 0.0]),
        params: vec!["mass:ball".into(), "friction:world".into(), "placement:rail".into(), "placement:drop".into()],
        spread: (2e-5, 2e-3),
    }
}

/// A fixed-base planar arm of `angles.len()` links (hinges about z, capsule links of
/// `length` at 8 cm above the ground) whose last link's end presses 0.15 mm into the side
/// of a 1 kg box resting on the ground (friction 0.5); joint torques `Jᵀ F` push along x
/// with `push` newtons, below what the box's friction holds: everything sticks.
fn arm_push_scene(name: &'static str, angles: &[f64], length: f64, push: f64) -> Scene {
    let mut b = ModelBuilder::new(name);
    let m = material(0.5, 0.0);
    ground(&mut b, m, 0.0);
    let (height, r) = (0.08, 0.02);
    let mut parent = WORLD.to_string();
    for k in 0..angles.len() {
        let placement = if k == 0 {
            SE3::from_translation(Vec3::new(0.0, 0.0, height))
        } else {
            SE3::from_translation(Vec3::new(length, 0.0, 0.0))
        };
        let link = format!("link{k}");
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), Vec3::z()).with_placement(placement),
            stiction::model::samples::rod(&link, 0.5, length, r, Vec3::x()).with_collision(capsule_x(
                r,
                0.0,
                length,
                material(1.5, 0.0),
            )),
        );
        parent = link;
    }
    let h = Vec3::new(0.08, 0.08, 0.08);
    free_body(&mut b, "box", Geometry::Box { half_extents: h }, Inertia::solid_box(5.0, h * 2.0), m);
    let model = b.build().unwrap();
    // Joint positions and the tip (the end of the last capsule's segment).
    let mut joints = vec![];
    let (mut p, mut theta) = (Vec3::new(0.0, 0.0, height), 0.0);
    for a in angles {
        joints.push(p);
        theta += a;
        p += Vec3::new(theta.cos(), theta.sin(), 0.0) * length;
    }
    let n = angles.len();
    let mut q = model.neutral();
    q.rows_mut(0, n).copy_from_slice(angles);
    let centre = Vec3::new(p.x + r - 1.5e-4 + h.x, p.y, h.z - 2e-4);
    q[n] = centre.x;
    q[n + 1] = centre.y;
    q[n + 2] = centre.z;
    let mut tau = DVector::zeros(n + 6);
    for (k, j) in joints.iter().enumerate() {
        tau[k] = -push * (p.y - j.y);
    }
    Scene {
        name,
        model,
        options: options(),
        state: State { q, v: DVector::zeros(n + 6) },
        tau,
        // The placements move the links that touch the box (joint0: the whole arm, its
        // height above the ground included; joint1: the links beyond the first).
        params: vec![
            "mass:box".into(),
            "mass:link0".into(),
            "friction:box".into(),
            "placement:joint0".into(),
            "placement:joint1".into(),
        ],
        spread: (2e-5, 2e-3),
    }
}

/// A planar 5-link worm (capsules on hinges about y, the base on a planar x–z–pitch joint)
/// arched on the ground: the first and last links lie flat (two contacts each), the middle
/// three form the arch; hinges 1 and 3 actuated. Everything sticks (friction 0.8).
fn worm_scene() -> Scene {
    let mut b = ModelBuilder::new("worm5_arch");
    let m = material(0.8, 0.0);
    ground(&mut b, m, 0.0);
    let (length, r, inset) = (0.2, 0.02, 0.03);
    let mut parent = WORLD.to_string();
    for k in 0..5 {
        let link = format!("link{k}");
        let joint = if k == 0 {
            Joint::planar("base", Vec3::y())
        } else {
            Joint::revolute(format!("joint{k}"), Vec3::y())
                .with_placement(SE3::from_translation(Vec3::new(length, 0.0, 0.0)))
        };
        b.add_body(
            &parent,
            joint,
            stiction::model::samples::rod(&link, 0.2, length, r, Vec3::x()).with_collision(capsule_x(
                r,
                inset,
                length - inset,
                m,
            )),
        );
        parent = link;
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    // Planar coordinates: x along t1 = x̂, the second along t2 = ŷ × x̂ = −ẑ, pitch about ŷ.
    q[0] = 0.0;
    q[1] = -(r - 1.5e-4);
    q[2] = 0.0;
    let bend = 0.5;
    for (k, a) in [-bend, bend, bend, -bend].iter().enumerate() {
        q[3 + k] = *a;
    }
    // Landing at 0.2 m/s (the planar joint's second axis points down): the normal
    // impulses stop the approach, so every foot's friction is well inside its cone. At
    // rest, the split recovery's feet carry only the weight (its velocity stage has no
    // push-out bias) and a v step of 1e-3 slips a foot.
    let mut v = DVector::zeros(7);
    v[1] = 0.2;
    let mut tau = DVector::zeros(7);
    tau[3] = 0.05;
    tau[5] = -0.05;
    Scene {
        name: "worm5_arch",
        model,
        options: options(),
        state: State { q, v },
        tau,
        params: vec![
            "mass:link0".into(),
            "mass:link2".into(),
            "friction:world".into(),
            // No placement: a placement's z step of 1e-4 moves the far foot's contacts
            // by the whole step, and some of the random states' feet are within 1e-4 of
            // their mode boundary (φ = 0), where Ridders' error estimates exceed 1.
        ],
        spread: (2e-5, 2e-3),
    }
}

/// Two boxes on the ground (friction 0.3, frictionless between them): box `a` slides at 1 m/s into box `b`, turned by
/// 0.5 rad so that one of its vertical edges presses 0.15 mm into `a`'s face (a
/// vertex–face contact at its foot, an edge–edge contact at `a`'s top edge). The feet
/// differ in depth (0.3 mm and 0.15 mm) so that `b`'s lowest vertex stays inside `a`'s face.
fn boxes_collide_scene() -> Scene {
    let mut b = ModelBuilder::new("boxes_collide_sliding");
    // Friction is the mean of the two materials': 0.3 on the ground, none between the boxes
    // (the feet sink by different depths, so the boxes rise at different speeds).
    ground(&mut b, material(0.6, 0.0), 0.0);
    let m = material(0.0, 0.0);
    let ha = Vec3::new(0.1, 0.08, 0.05);
    let hb = Vec3::new(0.07, 0.07, 0.04);
    free_body(&mut b, "a", Geometry::Box { half_extents: ha }, Inertia::solid_box(1.0, ha * 2.0), m);
    free_body(&mut b, "b", Geometry::Box { half_extents: hb }, Inertia::solid_box(1.0, hb * 2.0), m);
    let model = b.build().unwrap();
    let yaw = 0.7;
    let rot = SE3::from_axis_angle(&Vec3::z(), yaw).rot;
    let corner = [(1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0)]
        .iter()
        .map(|(sx, sy)| rot * Vec3::new(sx * hb.x, sy * hb.y, 0.0))
        .fold(Vec3::new(f64::INFINITY, 0.0, 0.0), |m, c| if c.x < m.x { c } else { m });
    let qa = pose_q(&model, Vec3::new(0.0, 0.0, ha.z - 3e-4), Vec3::z(), 0.0);
    let qb = pose_q(&model, Vec3::new(ha.x - 1.5e-4 - corner.x, 0.01 - corner.y, hb.z - 1.5e-4), Vec3::z(), yaw);
    let mut q = qa.clone();
    q.rows_mut(7, 7).copy_from(&qb.rows(0, 7));
    let mut v = DVector::zeros(12);
    v[3] = 1.0;
    Scene {
        name: "boxes_collide_sliding",
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(12),
        params: vec!["mass:a".into(), "mass:b".into(), "friction:world".into()],
        spread: (2e-5, 2e-3),
    }
}

/// A cube balanced edge on edge: a static box (half size 0.1 m) turned 45° about y, so its
/// top is an edge along y, and a free 2 kg cube (half size 0.05 m) turned 45° about x,
/// then 0.4 rad about z, so that its bottom edge crosses the static one 0.4 rad off square,
/// 0.15 mm deep, with its centre above the crossing: one edge–edge contact (friction 0.8),
/// sticking while the recovery lifts the cube. Its normal and point move with both edges'
/// directions (the edge–edge closed form of `collision::contact`).
fn edge_on_edge_scene() -> Scene {
    use std::f64::consts::{FRAC_PI_4, SQRT_2};
    let mut b = ModelBuilder::new("edge_on_edge");
    let m = material(0.8, 0.0);
    let ha = 0.1;
    let pose_a = SE3::new(SE3::from_axis_angle(&Vec3::y(), FRAC_PI_4).rot, Vec3::zeros());
    let static_box = CollisionShape::new(Geometry::Box { half_extents: Vec3::repeat(ha) }, pose_a).with_material(m);
    b.add_link(Body::massless(WORLD).with_collision(static_box));
    let hb = 0.05;
    let cube = Geometry::Box { half_extents: Vec3::repeat(hb) };
    free_body(&mut b, "cube", cube, Inertia::solid_box(2.0, Vec3::repeat(2.0 * hb)), m);
    let model = b.build().unwrap();
    let rot = SE3::from_axis_angle(&Vec3::z(), 0.4).rot * SE3::from_axis_angle(&Vec3::x(), FRAC_PI_4).rot;
    let quat = UnitQuaternion::from_matrix(&rot);
    let mut q = pose_q(&model, Vec3::new(0.0, 0.0, ha * SQRT_2 + hb * SQRT_2 - 1.5e-4), Vec3::z(), 0.0);
    q.rows_mut(3, 4).copy_from_slice(&[quat.w, quat.i, quat.j, quat.k]);
    Scene {
        name: "edge_on_edge",
        model,
        options: options(),
        state: State { q, v: DVector::zeros(6) },
        tau: DVector::zeros(6),
        params: vec!["mass:cube".into(), "friction:cube".into(), "com:cube".into(), "inertia:cube".into()],
        spread: (2e-5, 2e-4),
    }
}

/// The scenes that pass (issue #5's acceptance zoo); see [`pending_scenes`] for those that
/// do not yet.
/// A slab (0.8 m square, 0.2 m thick, 2 kg, turned 0.3 rad about z) pressed 0.2 mm into a 6 × 6 grid of
/// fixed spheres: 36 contacts, 108 rows on 6 dofs, the Delassus matrix of rank 6. At rest
/// all 108 rows clamp; sliding (`vx` = 2 m/s along the friction basis' first tangent,
/// μ = 0.5), the 36 normals and the second tangents clamp and the first tangents sit at
/// their bounds. Both clamping sets exceed
/// `stiction::solver::lcp::FACTORED_MIN_ROWS` and the dofs, so the forward standardized
/// solves and the backward pseudo-inverse go through the factored `Â = L Nᵀ`
/// (`stiction::math::FactoredPseudoInverse`), the sliding one with the null-space term.
fn slab_on_sphere_grid_scene(name: &'static str, mu: f64, vx: f64) -> Scene {
    let mut b = ModelBuilder::new(name);
    let (r, k, spacing) = (0.01, 6, 0.1);
    let mut world = Body::massless(WORLD);
    for i in 0..k {
        for j in 0..k {
            let at = Vec3::new((i as f64 - 2.5) * spacing, (j as f64 - 2.5) * spacing, -r);
            world = world.with_collision(
                CollisionShape::new(Geometry::Sphere { radius: r }, SE3::from_translation(at))
                    .with_material(material(mu, 0.0)),
            );
        }
    }
    b.add_link(world);
    let (model, state) = pressed_box(b, "slab", Vec3::new(0.4, 0.4, 0.1), 2.0, mu, vx);
    Scene {
        name,
        model,
        options: options(),
        state,
        tau: DVector::zeros(6),
        params: vec!["mass:slab".into(), "inertia:slab".into(), "com:slab".into(), "friction:slab".into()],
        // Sliding, the second tangent's friction can stop at most μ g h = 4.9 mm/s of slip
        // across the motion in a step: the spread and the finite-difference steps of the
        // velocities stay well inside it, or the second tangent reaches its bound too.
        spread: (2e-5, if vx == 0.0 { 2e-3 } else { 2e-4 }),
    }
}

fn scenes() -> Vec<Scene> {
    vec![
        box_scene("box_rest_frictionless", 0.0, 0.0, 0.0),
        sphere_scene("ball_bounce_0.5", 0.5, 2e-3, -3.0),
        sphere_scene("ball_bounce_1", 1.0, 1e-3, -2.0),
        ball_sliding_scene(),
        cartpole_scene(),
        box_scene("box_sliding", 0.3, 0.0, 1.0),
        ball_resting_scene(),
        box_scene("box_rest_static", 0.8, 2.0, 0.0),
        incline_scene("incline_sticking", 0.8, 0.0),
        incline_scene("incline_sliding", 0.1, 0.5),
        stack_scene(),
        bouncing_block_scene("block_bounce_corner", 0.5, Vec3::new(1.0, -0.6, 0.0), 0.35, 2.5),
        box_sliding_spinning_scene(),
        reverse_pendulum_scene(),
        gantry_sliding_scene(),
        arm_push_scene("arm3_push_box", &[0.6, -0.6, -0.5], 0.3, 3.0),
        arm_push_scene("arm5_push_box", &[0.8, -0.5, -0.4, -0.3, 0.2], 0.2, 2.0),
        worm_scene(),
        // An infeasible row set, relaxed (tests/infeasible_rows.rs).
        ball_pinched(),
        edge_on_edge_scene(),
        bouncing_block_scene("block_bounce_flat", 0.5, Vec3::z(), 0.3, 2.5),
        sphere_stack_scene(),
        slab_on_sphere_grid_scene("slab_on_sphere_grid_resting", 0.8, 0.0),
        two_boxes_apart_scene(),
    ]
}

/// The slab scenes' clamping sets are large enough for the factored solves: at least
/// `FACTORED_MIN_ROWS` clamping rows, four times the dofs. The sliding one is pending for
/// the Ridders checks ([`pending_scenes`]) but its step Jacobians exist, which the dense
/// pseudo-inverse of its 72 × 72 nonsymmetric `Â` did not give (its eigensolver failed),
/// and they are those of its VJP.
#[test]
fn slab_on_sphere_grid_scenes_take_the_factored_path() {
    use stiction::solver::lcp::{RowState, FACTORED_MIN_ROWS};
    use stiction::{Control, Simulator};
    for (s, clamping) in [
        (slab_on_sphere_grid_scene("slab_on_sphere_grid_resting", 0.8, 0.0), 108),
        (slab_on_sphere_grid_scene("slab_on_sphere_grid_sliding", 0.5, 2.0), 72),
    ] {
        let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
        let (_, rec) = sim.step_recorded(&s.state, &Control::torques(s.tau.clone())).unwrap();
        let c = rec.constraints().unwrap();
        assert_eq!(c.contacts.len(), 36, "{}", s.name);
        let n = c.states.iter().filter(|&&x| x == RowState::Clamping).count();
        assert_eq!(n, clamping, "{}: {:?}", s.name, c.states);
        assert!(n >= FACTORED_MIN_ROWS && n >= 4 * s.model.nv());
        let at_bound = c.states.iter().filter(|x| matches!(x, RowState::AtBound { .. })).count();
        assert_eq!(at_bound, if s.name.ends_with("sliding") { 36 } else { 0 }, "{}", s.name);
    }
}

/// Scenes built but not yet passing, kept out of [`scenes`] (issue #5). Three scenes
/// left this list when the minimum-norm solves moved from nalgebra's SVD to a symmetric
/// eigendecomposition (`stiction::math::pseudo_inverse`): `sphere_stack` with the
/// velocity recovery, `block_bounce_flat` and the edge-on-edge scene's inertia columns.
/// Their misses (1e-6–1e-5 relative, on entries whose finite differences disagreed with
/// each other from one step size to the next) were 1e-11 jumps in the forward impulses:
/// the SVD solved the 3×3 Delassus system of the isotropic cube's edge contact to 1e-12
/// only, because two of its singular values lie 3e-5 apart.
/// * `block_bounce_edge`: landing on an edge (two corners, friction rows at zero force):
///   a step of 1e-3 in the off-diagonal inertia `inertia:box.xy` leaves the mode (Ridders
///   error estimates ~1e2).
/// * `boxes_collide_sliding`: the random states leave the nominal mode — one of the eight
///   sliding feet (rank-deficient normal sets with friction at its bounds) unloads in an
///   equally valid classification.
/// * `slab_on_sphere_grid_sliding`: the same failure on 36 sliding contacts. Within 1e-5 rad
///   of tilt of a checked state, the cold solve alternates between the nominal
///   classification (72 clamping rows) and another valid one (24), and 1e-4 away it
///   falls back to PGS; its forward map is not smooth at the Ridders steps (the dense
///   and the factored solves give the same forward steps there).
#[allow(dead_code)]
fn pending_scenes() -> Vec<Scene> {
    vec![
        bouncing_block_scene("block_bounce_edge", 0.5, Vec3::x(), 0.3, 2.5),
        boxes_collide_scene(),
        slab_on_sphere_grid_scene("slab_on_sphere_grid_sliding", 0.5, 2.0),
    ]
}

/// The edge-on-edge scene is what it says: one contact, edge–edge, clamping in all three
/// rows (normal and sticking friction).
#[test]
fn edge_on_edge_scene_has_one_sticking_edge_edge_contact() {
    use stiction::collision::ContactKind;
    use stiction::solver::lcp::RowState;
    use stiction::{Control, Simulator};
    let s = edge_on_edge_scene();
    let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
    let (_, rec) = sim.step_recorded(&s.state, &Control::torques(s.tau.clone())).unwrap();
    let c = rec.constraints().expect("a contact");
    assert_eq!(c.contacts.len(), 1, "{:?}", c.contacts);
    assert_eq!(c.contacts[0].kind, ContactKind::EdgeEdge);
    assert_eq!(c.states, vec![RowState::Clamping; 3]);
}

#[test]
fn contact_step_jacobians_match_finite_differences() {
    check_scenes(scenes());
}

/// The same Jacobian checks with the velocity penetration recovery
/// (`PenetrationRecovery::Velocity`: a penetrating row gets the bias `erp·φ/h` in the
/// velocity stage and there is no position stage), on every scene. (The scenes above
/// run with the default, the split recovery; their contacts penetrate by 0.1–0.2 mm,
/// so its position stage is active in every checked state, or they bounce.)
#[test]
fn velocity_recovery_step_jacobians_match_finite_differences() {
    let mut velocity = scenes();
    for s in &mut velocity {
        s.options.contact.penetration = PenetrationRecovery::Velocity;
    }
    check_scenes(velocity);
}

/// Warm start on: a step whose LCP starts from the previous step's classification
/// gives the same classification and the same Jacobians (to 1e-9 of each block's
/// scale) as the cold step the finite-difference checks above verify, on every scene;
/// and the warm start is used: over 200-step rollouts of the scenes the guess is
/// accepted in most solves (the hit rates are printed).
#[test]
fn warm_started_steps_give_the_cold_steps_jacobians() {
    use stiction::{Control, Simulator};
    let (mut hits, mut solves) = (0u64, 0u64);
    for s in scenes() {
        let control = Control::torques(s.tau.clone());
        let mut warm = s.options.clone();
        warm.contact.warm_start = true;
        let mut sim = Simulator::new(s.model.clone(), warm).unwrap();
        sim.step(&s.state, &control).unwrap();
        let (_, rec_warm) = sim.step_recorded(&s.state, &control).unwrap();
        let c = rec_warm.constraints().unwrap();
        assert!(c.stats.warm_start_attempted, "{}: no warm start attempted", s.name);
        let mut cold_sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
        let (_, rec_cold) = cold_sim.step_recorded(&s.state, &control).unwrap();
        assert_eq!(c.states, rec_cold.constraints().unwrap().states, "{}: another classification", s.name);
        let (jw, jc) = (rec_warm.jacobians().unwrap(), rec_cold.jacobians().unwrap());
        for (name, a, b) in [
            ("dq+/dq", &jw.dq_dq, &jc.dq_dq),
            ("dq+/dv", &jw.dq_dv, &jc.dq_dv),
            ("dv+/dq", &jw.dv_dq, &jc.dv_dq),
            ("dv+/dv", &jw.dv_dv, &jc.dv_dv),
            ("dv+/dtau", &jw.dv_dtau, &jc.dv_dtau),
            ("dv+/dtheta", &jw.dv_dtheta, &jc.dv_dtheta),
        ] {
            // A block that is zero up to rounding (dv⁺/dq of a frictionless box at rest,
            // whose split recovery's velocity stage ignores the depth) is held to 1e-15.
            let scale = b.amax().max(1e-6);
            assert!((a - b).amax() <= 1e-9 * scale, "{}: {name} differs by {:e}", s.name, (a - b).amax());
        }
        let mut rollout = Simulator::new(s.model.clone(), sim.options().clone()).unwrap();
        let mut state = s.state.clone();
        for _ in 0..200 {
            state = rollout.step(&state, &control).unwrap();
        }
        let st = rollout.stats();
        println!("{}: warm-start hit rate {:.3} ({} solves)", s.name, st.warm_start_hit_rate(), st.lcp_solves);
        hits += st.warm_start_hits;
        solves += st.lcp_solves;
    }
    let rate = hits as f64 / solves as f64;
    println!("all scenes: warm-start hit rate {rate:.3} over {solves} solves");
    assert!(rate > 0.5, "warm-start hit rate {rate}");
}

/// The VJP of a contact step is taken by adjoints, stage by stage, without forming the
/// Jacobians (`src/tape/step_vjp.rs`, `src/tape/constraint_vjp.rs`): on every scene, with
/// both penetration recoveries and both bounce-gradient models, and for random adjoints,
/// it is the product with the transposed Jacobians of the forward path
/// (`StepRecord::jacobians`, checked against Ridders above) to round-off: 1e-11 of the
/// size of the product's terms, `|J|ᵀ|ḡ|`, or absolute where that is below 1 (entries
/// that cancel to zero, like the mass column of a box at rest).
#[test]
fn step_vjp_by_adjoints_is_the_transposed_jacobians_product() {
    use stiction::math::SplitMix64;
    use stiction::model::ParamSpec;
    use stiction::step::BounceGradients;
    use stiction::{Control, Simulator};
    let mut rng = SplitMix64::new(18);
    let mut worst = (0.0f64, String::new());
    let mut checked = 0;
    for recovery in [PenetrationRecovery::Split, PenetrationRecovery::Velocity] {
        for bounce in [BounceGradients::Discrete, BounceGradients::ContinuousTime] {
            // With the sliding slab: its factored, nonsymmetric Â (pending for Ridders).
            let sliding_slab = slab_on_sphere_grid_scene("slab_on_sphere_grid_sliding", 0.5, 2.0);
            for mut s in scenes().into_iter().chain([sliding_slab]) {
                s.options.contact.penetration = recovery;
                s.options.contact.bounce_gradients = bounce;
                let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
                sim.set_params(ParamSpec::parse(&s.model, &s.params).unwrap());
                let (_, rec) = sim.step_recorded(&s.state, &Control::torques(s.tau.clone())).unwrap();
                assert!(rec.constraints().is_some(), "{}: no constraint rows", s.name);
                let jac = rec.jacobians().unwrap();
                let nv = s.model.nv();
                for _ in 0..2 {
                    let gq = DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0));
                    let gv = DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0));
                    let got = rec.vjp(&gq, &gv).unwrap();
                    let (aq, av) = (gq.abs(), gv.abs());
                    for (name, x, a, b) in [
                        ("q", &got.q, &jac.dq_dq, &jac.dv_dq),
                        ("v", &got.v, &jac.dq_dv, &jac.dv_dv),
                        ("tau", &got.tau, &jac.dq_dtau, &jac.dv_dtau),
                        ("theta", &got.theta, &jac.dq_dtheta, &jac.dv_dtheta),
                    ] {
                        let want = a.tr_mul(&gq) + b.tr_mul(&gv);
                        let terms = a.abs().tr_mul(&aq) + b.abs().tr_mul(&av);
                        let err = (x - &want).zip_map(&terms, |d, t| d.abs() / t.max(1.0)).amax();
                        if err > worst.0 {
                            worst = (err, format!("{} ({recovery:?}, {bounce:?}) ∂ℓ/∂{name}", s.name));
                        }
                        assert!(
                            err <= 1e-11,
                            "{} ({recovery:?}, {bounce:?}): ∂ℓ/∂{name} off by {err:e} of its terms\n{x}\n{want}",
                            s.name
                        );
                    }
                    checked += 1;
                }
            }
        }
    }
    println!("{checked} VJPs; worst {:e} at {}", worst.0, worst.1);
}

/// A 0.5 kg ball (radius 5 cm) sliding at 1 m/s, 30° from x, on top of a 5 kg box that
/// sticks on the ground on its four corners (μ 0.8), both pressed 0.2 mm in; the ball–box
/// friction is μ = 0.5 (the mean of 0.2 and 0.8). The ball's contact normal is the box's top face, so it turns with
/// the box's orientation: the sliding cone's slip frame moves with q (the derivatives of
/// its turned tangents, `ContactFrame::turned`).
fn ball_sliding_on_box_scene() -> Scene {
    let mut b = ModelBuilder::new("ball_sliding_on_box");
    ground(&mut b, material(0.8, 0.0), 0.0);
    let h = Vec3::new(0.2, 0.15, 0.05);
    free_body(&mut b, "box", Geometry::Box { half_extents: h }, Inertia::solid_box(5.0, h * 2.0), material(0.8, 0.0));
    let r = 0.05;
    free_body(&mut b, "ball", Geometry::Sphere { radius: r }, Inertia::solid_sphere(0.5, r), material(0.2, 0.0));
    let model = b.build().unwrap();
    let mut q = pose_q(&model, Vec3::new(0.0, 0.0, h.z - 2e-4), Vec3::z(), 0.2);
    let top = 2.0 * h.z - 2e-4 + r - 2e-4;
    q.rows_mut(7, 7).copy_from_slice(&[0.03, -0.02, top, 1.0, 0.0, 0.0, 0.0]);
    let mut v = DVector::zeros(12);
    let angle = 30f64.to_radians();
    (v[9], v[10]) = (angle.cos(), angle.sin());
    Scene {
        name: "ball_sliding_on_box",
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(12),
        params: vec!["mass:ball".into(), "mass:box".into(), "friction:ball".into(), "inertia:box".into()],
        spread: (2e-5, 2e-3),
    }
}

/// The scenes of the NCP solver's Jacobian checks ([`ncp_step_jacobians_match_finite_differences`]).
fn ncp_scenes() -> Vec<Scene> {
    let names = [
        "ball_sliding",
        "gantry_ball_sliding",
        "box_rest_static",
        "incline_sticking",
        "two_blocks_1_10",
        "sphere_stack",
        "worm5_arch",
        "slab_on_sphere_grid_resting",
        "block_bounce_corner",
        "ball_bounce_0.5",
        "cartpole_limit",
        "edge_on_edge",
    ];
    let mut out = scenes_named(&names);
    out.push(ball_sliding_on_box_scene());
    for s in &mut out {
        s.options.contact.solver = stiction::step::ContactSolver::Ncp;
    }
    out
}

/// The scenes of [`scenes`] named in `names`, in the order of [`scenes`]; every name must
/// be found (a renamed scene fails here, not by silently checking fewer scenes).
fn scenes_named(names: &[&str]) -> Vec<Scene> {
    let out: Vec<Scene> = scenes().into_iter().filter(|s| names.contains(&s.name)).collect();
    assert_eq!(out.len(), names.len(), "scenes not found among {names:?}");
    out
}

/// The NCP solver's steps (isotropic friction cones, docs/ncp.md) against Ridders finite
/// differences, every block to 1e-6 relative, at 10 states per scene inside one contact
/// mode: sliding contacts (a ball, a ball on a gantry, a ball on a box whose top face
/// turns with q) whose friction rows are linearized in their slip frames, sticking boxes on four corners (a
/// redundant set: the minimum-norm forces of the mode), a stack of unequal masses, a
/// sphere stack, the worm's arch, a slab on 36 spheres, a bouncing block, a joint limit,
/// an edge–edge contact.
#[test]
fn ncp_step_jacobians_match_finite_differences() {
    check_scenes(ncp_scenes());
}

/// The redundant sliding and pushing scenes of the NCP solver with compliant contacts
/// (docs/ncp.md, "Redundant sliding contacts"). Rigid, they are not smooth: the normal
/// forces of a box on four corners are undetermined along a twist pattern (and, while it
/// sticks, so are its friction forces), and with isotropic cones the solution the Newton
/// iteration finds moves non-smoothly with the state. Boxes sliding (and spinning) on
/// four corners, down an incline, a sliding base under a pendulum and a sliding box
/// beside a resting one get `ContactOptions::normal_compliance` = 1e-3; the arms pushing
/// boxes that stick on four corners also `friction_compliance` = 1e-3.
fn ncp_compliant_scenes() -> Vec<Scene> {
    let sliding =
        ["box_sliding", "incline_sliding", "box_sliding_spinning", "reverse_pendulum_sliding", "two_boxes_apart"];
    let pushing = ["arm3_push_box", "arm5_push_box"];
    let mut out = scenes_named(&[sliding.as_slice(), pushing.as_slice()].concat());
    for s in &mut out {
        s.options.contact.solver = stiction::step::ContactSolver::Ncp;
        s.options.contact.normal_compliance = 1e-3;
        if pushing.contains(&s.name) {
            s.options.contact.friction_compliance = 1e-3;
        }
    }
    out
}

/// [`ncp_compliant_scenes`] against Ridders finite differences: every block to 1e-6
/// relative at 10 states per scene inside one contact mode, the mass columns through the
/// compliances' `1/m_A + 1/m_B`.
#[test]
fn ncp_compliant_contact_step_jacobians_match_finite_differences() {
    check_scenes(ncp_compliant_scenes());
}

/// The boxed LCP's steps with compliant contacts against Ridders finite differences:
/// sticking boxes, a stack of unequal masses and an arm pushing a box with
/// `normal_compliance` and `friction_compliance` = 1e-3 (every contact row regularized,
/// the mass columns through `1/m_A + 1/m_B`), and a box sliding on four corners with
/// `normal_compliance` only. (With friction compliance the sliding box leaves its mode
/// within the check's 1e-3 input step in its sideways velocity: a compliant pyramid row
/// sticks only while its slip stays within `r μ f_n`, about 1e-6 m/s here.)
#[test]
fn lcp_compliant_contact_step_jacobians_match_finite_differences() {
    let names = ["box_sliding", "box_rest_static", "two_blocks_1_10", "arm3_push_box", "two_boxes_apart"];
    let mut out = scenes_named(&names);
    for s in &mut out {
        s.options.contact.normal_compliance = 1e-3;
        if !s.name.contains("sliding") {
            s.options.contact.friction_compliance = 1e-3;
        }
    }
    check_scenes(out);
}
