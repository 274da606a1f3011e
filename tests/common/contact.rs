//! Contact scenes for Jacobian checks: builders (ground, free bodies, poses) and the
//! check of a scene's step Jacobians against Ridders finite differences at random states
//! inside its nominal contact mode (tests/contact_gradients.rs, tests/contact_models.rs).

use nalgebra::DVector;
use stiction::gradcheck::{check_step, FdMethod, GradcheckConfig};
use stiction::math::{Inertia, SplitMix64, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, ParamSpec, WORLD};
use stiction::solver::lcp::RowState;
use stiction::step::ContactOptions;
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// The time step of the scenes.
pub const DT: f64 = 1e-3;

/// A material without viscous friction.
pub fn material(friction: f64, restitution: f64) -> Material {
    Material::new(friction, restitution)
}

/// The world's ground plane, tilted about y by `tilt`.
pub fn ground(b: &mut ModelBuilder, m: Material, tilt: f64) {
    let pose = SE3::from_axis_angle(&Vec3::y(), tilt);
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, pose).with_material(m)));
}

/// A free body `name` with one collision shape at its origin.
pub fn free_body(b: &mut ModelBuilder, name: &str, geometry: Geometry, inertia: Inertia, m: Material) {
    b.add_body(
        WORLD,
        Joint::free(format!("{name}_free")),
        Body::new(name, inertia).with_collision(CollisionShape::new(geometry, SE3::identity()).with_material(m)),
    );
}

/// A free solid box `name` of `mass` with half extents `h` and its collision box.
pub fn free_box(b: &mut ModelBuilder, name: &str, h: Vec3, mass: f64, m: Material) {
    free_body(b, name, Geometry::Box { half_extents: h }, Inertia::solid_box(mass, h * 2.0), m);
}

/// Adds to `b` a pile of cubes (half extent `h`, friction 0.5): `layers` layers of `n × n`
/// cubes 1 mm apart, the first at `first` cube pitches in x and y, each cube of layer `l`
/// weighing `mass(l)`. Returns the cubes' centres (in body order), resting on each other
/// and on z = 0.
pub fn add_cube_pile(
    b: &mut ModelBuilder,
    layers: usize,
    n: usize,
    h: f64,
    first: f64,
    mass: impl Fn(usize) -> f64,
) -> Vec<Vec3> {
    let pitch = 2.0 * h + 1e-3;
    let mut centres = vec![];
    for layer in 0..layers {
        for i in 0..n {
            for k in 0..n {
                free_box(b, &format!("box{}", centres.len()), Vec3::new(h, h, h), mass(layer), material(0.5, 0.0));
                let at = |j: usize| (j as f64 + first) * pitch;
                centres.push(Vec3::new(at(i), at(k), (2 * layer + 1) as f64 * h));
            }
        }
    }
    centres
}

/// The configuration of a model of free bodies only: body `k` at `centres[k]`, unrotated.
pub fn free_bodies_at(model: &Model, centres: &[Vec3]) -> DVector<f64> {
    let mut q = model.neutral();
    for (k, c) in centres.iter().enumerate() {
        q.rows_mut(7 * k, 3).copy_from_slice(c.as_slice());
    }
    q
}

/// A capsule of `radius` along the body's x axis, covering `[from, to]` of it.
pub fn capsule_x(radius: f64, from: f64, to: f64, m: Material) -> CollisionShape {
    let pose = SE3::new(
        SE3::from_axis_angle(&Vec3::y(), std::f64::consts::FRAC_PI_2).rot,
        Vec3::new(0.5 * (from + to), 0.0, 0.0),
    );
    CollisionShape::new(Geometry::Capsule { radius, length: to - from }, pose).with_material(m)
}

/// A cartpole whose cart (1 kg, on a rail along x) has position limits at ±1 m; a 0.3 kg,
/// 0.6 m pole on a hinge about y.
pub fn limited_cartpole() -> Model {
    let mut b = ModelBuilder::new("cartpole_limit");
    b.add_body(
        WORLD,
        Joint::prismatic("slider", Vec3::x()).with_position_limits(&[-1.0], &[1.0]),
        Body::new("cart", Inertia::solid_box(1.0, Vec3::new(0.3, 0.2, 0.1))),
    );
    b.add_body(
        "cart",
        Joint::revolute("hinge", Vec3::y()),
        stiction::model::samples::rod("pole", 0.3, 0.6, 0.02, Vec3::z()),
    );
    b.build().unwrap()
}

/// A frictionless ball (radius 0.1 m, 0.5 kg) on the ground, 2.5 cm in, sliding at
/// 0.3 m/s and spinning; with `ceiling`, a second plane at z = 0.15 m facing down pinches
/// it by 2.5 cm as well: an infeasible row set under the velocity recovery (the two
/// normals ask for `v_z ≥ 25 m/s` and `v_z ≤ −25 m/s`), which the constraint stage relaxes.
pub fn ball_pinched_builder(ceiling: bool) -> Scene {
    let mut b = ModelBuilder::new(if ceiling { "ball_pinched" } else { "ball_pressed" });
    let frictionless = material(0.0, 0.0);
    let ground = CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(frictionless);
    let mut world = Body::massless(WORLD).with_collision(ground);
    if ceiling {
        let down = SE3::new(SE3::from_axis_angle(&Vec3::x(), std::f64::consts::PI).rot, Vec3::new(0.0, 0.0, 0.15));
        world = world.with_collision(CollisionShape::new(Geometry::Plane, down).with_material(frictionless));
    }
    b.add_link(world);
    let r = 0.1;
    free_body(&mut b, "ball", Geometry::Sphere { radius: r }, Inertia::solid_sphere(0.5, r), frictionless);
    let model = b.build().unwrap();
    let q = pose_q(&model, Vec3::new(0.0, 0.0, 0.075), Vec3::z(), 0.0);
    let v = DVector::from_vec(vec![0.3, -0.1, 1.0, 0.5, -0.2, 0.0]);
    Scene {
        name: if ceiling { "ball_pinched" } else { "ball_pressed" },
        model,
        options: options(),
        state: State { q, v },
        tau: DVector::zeros(6),
        params: vec!["mass:ball".into(), "inertia:ball".into(), "com:ball".into()],
        spread: (1e-4, 1e-2),
    }
}

/// [`ball_pinched_builder`] with the ceiling.
pub fn ball_pinched() -> Scene {
    ball_pinched_builder(true)
}

/// A 1-DoF pendulum (hinge about y, a 1 kg ball of radius 0.1 m at 1 m) hung so that
/// the ball penetrates the ground (friction 0.5) by 2 mm at the bottom of its swing, at
/// angle `theta`: near the bottom the ground's normal is almost perpendicular to the
/// ball's path (`J_n = sin θ`), and the friction jams it (`μ > tan θ`): the velocity
/// recovery's LCP has no solution, and the step is relaxed.
pub fn pendulum_in_ground(theta: f64) -> Scene {
    pendulum_in_ground_with_friction(theta, 0.5)
}

/// [`pendulum_in_ground`] with friction coefficient `mu` on both shapes.
pub fn pendulum_in_ground_with_friction(theta: f64, mu: f64) -> Scene {
    let (l, r) = (1.0, 0.1);
    let mut b = ModelBuilder::new("pendulum_in_ground");
    ground(&mut b, material(mu, 0.0), 0.0);
    let at_end = SE3::new(nalgebra::Matrix3::identity(), Vec3::new(0.0, 0.0, -l));
    let sphere = CollisionShape::new(Geometry::Sphere { radius: r }, at_end).with_material(material(mu, 0.0));
    let inertia = Inertia::from_com(1.0, Vec3::new(0.0, 0.0, -l), nalgebra::Matrix3::identity() * (0.4 * r * r));
    let hinge = SE3::new(nalgebra::Matrix3::identity(), Vec3::new(0.0, 0.0, l + r - 2e-3));
    b.add_body(
        WORLD,
        Joint::revolute("hinge", Vec3::y()).with_placement(hinge),
        Body::new("ball", inertia).with_collision(sphere),
    );
    let model = b.build().unwrap();
    Scene {
        name: "pendulum_in_ground",
        model,
        options: options(),
        state: State { q: DVector::from_vec(vec![theta]), v: DVector::zeros(1) },
        tau: DVector::zeros(1),
        params: vec!["mass:ball".into(), "friction:ball".into()],
        spread: (1e-4, 1e-3),
    }
}

/// Half size of the boxes of [`arm7_and_boxes`].
pub const ARM7_BOX_HALF: f64 = 0.05;

/// The 7-DoF arm of `samples::arm7` (limits on position ±2.8 rad, velocity 2.5 rad/s,
/// effort 87 N·m) equipped with collision spheres (6 cm at link4 and link5, 5 cm at the
/// end effector, link7; the always-overlapping link5–link7 pair excluded), its base on a
/// ground plane (friction 0.6), and two 0.5 kg boxes
/// of 10 cm resting on the ground in front of it. The start configuration reaches down
/// with the end effector 5 cm above the top of the boxes, between them.
pub fn arm7_and_boxes() -> (Model, State) {
    let mut b = ModelBuilder::from(stiction::model::samples::arm7());
    ground(&mut b, material(0.6, 0.0), 0.0);
    for (link, radius) in [("link4", 0.06), ("link5", 0.06), ("link7", 0.05)] {
        let sphere =
            CollisionShape::new(Geometry::Sphere { radius }, SE3::identity()).with_material(material(0.8, 0.0));
        b.add_body(
            link,
            Joint::fixed(format!("{link}_shape_weld")),
            Body::massless(format!("{link}_shape")).with_collision(sphere),
        );
    }
    // link5's and link7's spheres overlap for good (joint6 turns link7's about link5's
    // centre): the pair is excluded, as a robot description's collision filter would.
    b.exclude_collision_pair("link5_shape", "link7_shape");
    let h = Vec3::new(ARM7_BOX_HALF, ARM7_BOX_HALF, ARM7_BOX_HALF);
    for name in ["box_a", "box_b"] {
        free_box(&mut b, name, h, 0.5, material(0.6, 0.0));
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q.rows_mut(0, 7).copy_from_slice(&[0.0, 1.2, 0.0, -1.0, 0.0, 1.5, 0.0]);
    for (k, y) in [0.12, -0.12].iter().enumerate() {
        let a = 7 + 7 * k;
        q.rows_mut(a, 3).copy_from_slice(&[0.7, *y, ARM7_BOX_HALF - 1e-4]);
    }
    let v = DVector::zeros(model.nv());
    (model, State { q, v })
}

/// A scene: model, options, a nominal state and control, parameter names, and how far
/// random states may stray from the nominal one (tangent q, v).
pub struct Scene {
    /// Name in reports.
    pub name: &'static str,
    /// The model.
    pub model: Model,
    /// The simulator options.
    pub options: SimOptions,
    /// The nominal state.
    pub state: State,
    /// The control torques.
    pub tau: DVector<f64>,
    /// The parameters θ (ParamSpec names).
    pub params: Vec<String>,
    /// Spread of the random states: (tangent q, v).
    pub spread: (f64, f64),
}

/// The finite-difference step of the q columns: a contact keeps its mode only while the
/// penetration (0.1–0.2 mm in these scenes) keeps its sign, so steps in q stay below it.
/// Except `block_bounce_flat` ([`BOUNCE_FLAT_Q_STEP`]).
pub fn fd_step(s: &Scene) -> f64 {
    if s.spread.0 < 1e-5 {
        1e-6
    } else if s.name == "block_bounce_flat" {
        BOUNCE_FLAT_Q_STEP
    } else {
        1e-4
    }
}

/// The q step of `block_bounce_flat`: its box falls flat from 1 mm above the ground,
/// closing 2.5 mm per step, so its mode holds for q steps well beyond 1e-4 (the sampled
/// states lie within 1e-4 of the nominal one). Its q columns hold entries that vanish by
/// symmetry (the box is symmetric under a half turn about the vertical through its centre:
/// `∂ω_x/∂z = 0`), where central differences see only the solve's rounding, about 1e-14
/// of `v⁺` divided by the step. At 1e-4 that noise reached 1.8e-10 in one sampled state
/// (the analytic entry: 6e-16), above the 1e-10 the check's floor allows, after a change
/// of rounding alone (the Delassus matrix assembled tree by tree); the same state's
/// differences at 1e-3…1e-7 scatter as 1e-14/step both before and after that change.
/// A step of 3e-4 divides the noise by three and keeps the mode.
pub const BOUNCE_FLAT_Q_STEP: f64 = 3e-4;

/// The finite-difference step of the v, τ and θ columns: the largest that keeps the mode
/// (a change of 1e-3 m/s moves a contact by 1e-6 m in a step; 1e-3 of a torque, a mass
/// or a friction coefficient changes the impulses by far less than their margins). The
/// rounding noise of a finite difference through the contact solve scales as 1/step, so
/// these columns are not held to the q columns' smaller step.
pub const FD_STEP_INPUTS: f64 = 1e-3;

/// The input step of `arm5_push_box` with compliant contacts (the NCP solver,
/// `friction_compliance` > 0): its arm tip's friction (μ = 1) uses 62 % of its cone at
/// the nominal state after +1e-3 rad/s on `joint0`, 79 % after +2e-3 and slides after
/// +3e-3; the sampled states are already up to 2e-3 away from the nominal one, so a
/// 1e-3 step leaves the mode at some of them. 3e-4 stays inside.
pub const ARM5_COMPLIANT_STEP: f64 = 3e-4;

/// The finite-difference step of the v, τ and θ columns of scene `s`: [`FD_STEP_INPUTS`],
/// except for `block_bounce_corner`, whose inertia columns are strongly curved (its
/// inertia is near the triangle-inequality boundary: a step of 1e-2 in `inertia:box.xy`
/// leaves the physical set). There central differences approach the analytic value as
/// h² (2.8 relative at 1e-3, 1.3e-2 at 3e-4, 1.4e-3 at 1e-4, 1.4e-5 at 1e-5), so Ridders
/// starts from 1e-5. And except for `arm5_push_box` with compliant contacts
/// ([`ARM5_COMPLIANT_STEP`]).
pub fn fd_step_inputs(s: &Scene) -> f64 {
    if s.name == "block_bounce_corner" {
        1e-5
    } else if s.name == "arm5_push_box" && s.options.contact.friction_compliance > 0.0 {
        ARM5_COMPLIANT_STEP
    } else {
        FD_STEP_INPUTS
    }
}

/// Blocks taken from the check with the q step, and from the one with the input step.
pub const Q_BLOCKS: [&str; 2] = ["dq+/dq", "dv+/dq"];

/// The blocks of scene `s` checked with the q step: [`Q_BLOCKS`], and the θ blocks when
/// θ holds a joint placement (`placement:*` moves bodies like a q column does, so its
/// steps must keep the penetrations' signs too).
pub fn q_blocks(s: &Scene) -> Vec<&'static str> {
    let mut out = Q_BLOCKS.to_vec();
    if s.params.iter().any(|p| p.starts_with("placement:")) {
        out.extend(["dq+/dtheta", "dv+/dtheta"]);
    }
    out
}

/// Options with the contact warm start off (each step classified from scratch).
pub fn options() -> SimOptions {
    SimOptions { dt: DT, contact: ContactOptions { warm_start: false, ..Default::default() }, ..Default::default() }
}

/// Free-body configuration: position and rotation about `axis` by `angle`.
pub fn pose_q(model: &Model, pos: Vec3, axis: Vec3, angle: f64) -> DVector<f64> {
    let mut q = model.neutral();
    q[0] = pos.x;
    q[1] = pos.y;
    q[2] = pos.z;
    let half = 0.5 * angle;
    let a = axis.normalize() * half.sin();
    q[3] = half.cos();
    q[4] = a.x;
    q[5] = a.y;
    q[6] = a.z;
    q
}

/// The row classification of one recorded step from `state` (tied rows as separating:
/// the same mode for the Jacobians).
pub fn classification(s: &Scene, state: &State) -> Option<Vec<RowState>> {
    let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
    let (_, rec) = sim.step_recorded(state, &Control::torques(s.tau.clone())).unwrap();
    rec.constraints()
        .map(|c| c.states.iter().map(|s| if *s == RowState::Tied { RowState::Separating } else { *s }).collect())
}

/// Checks `states` random states of scene `s` inside its nominal mode: every Jacobian
/// block against Ridders finite differences to 1e-6 relative. Returns the summary line
/// and the failures.
///
/// abs_floor 1e-4 (the project default is 1e-5): each finite-difference evaluation solves
/// an LCP whose rounding noise (~1e-15 relative, amplified by cond(Â) ~ 1e3) divided by the
/// FD step leaves ~1e-11–1e-10 of absolute noise in v⁺ (the Ridders error estimates in the
/// reports say so); entries below 1e-4 of their block's scale cannot be resolved. Every
/// entry above is held to 1e-6 relative.
pub fn check_scene(s: &Scene, states: usize) -> (String, Vec<String>) {
    let mut failures = vec![];
    let nominal = classification(s, &s.state).unwrap_or_else(|| panic!("{}: no constraint rows", s.name));
    assert!(nominal.contains(&RowState::Clamping), "{}: nothing clamping {nominal:?}", s.name);
    if s.name.contains("sliding") && s.options.contact.model == stiction::step::ContactModel::Coulomb {
        let at_bound = nominal.iter().any(|r| matches!(r, RowState::AtBound { .. }));
        assert!(at_bound, "{}: no friction row at its bound {nominal:?}", s.name);
    }
    let params = ParamSpec::parse(&s.model, &s.params).unwrap();
    let mut rng = SplitMix64::new(7);
    let (mut checked, mut skipped, mut worst) = (0, 0, 0.0f64);
    let nv = s.model.nv();
    while checked < states {
        let dq = DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0) * s.spread.0);
        let dv = DVector::from_fn(nv, |_, _| rng.range(-1.0, 1.0) * s.spread.1);
        let state = State { q: s.model.integrate(&s.state.q, &dq, 1.0).unwrap(), v: &s.state.v + dv };
        if classification(s, &state).as_ref() != Some(&nominal) {
            skipped += 1;
            if skipped >= 40 {
                failures.push(format!(
                    "{}: too many states leave the nominal mode\nnominal {nominal:?}\nthis    {:?}",
                    s.name,
                    classification(s, &state)
                ));
                break;
            }
            continue;
        }
        let control = Control::torques(s.tau.clone());
        for (step, q_columns) in [(fd_step(s), true), (fd_step_inputs(s), false)] {
            let config = GradcheckConfig { method: FdMethod::Ridders, step, rel_tol: 1e-6, abs_floor: 1e-4 };
            let report = check_step(&s.model, &s.options, &params, &state, &control, &config).unwrap();
            let q_names = q_blocks(s);
            let mine: Vec<_> =
                report.blocks.iter().filter(|b| q_names.contains(&b.name.as_str()) == q_columns).collect();
            let expected = if q_columns { q_names.len() } else { 8 - q_names.len() };
            assert!(mine.len() >= expected - 1, "{}: blocks missing", s.name);
            if mine.iter().any(|b| !b.passed) {
                failures.push(format!("{}: state {checked} (FD step {step:e})\n{report}", s.name));
            }
            worst = mine.iter().fold(worst, |w, b| w.max(b.max_rel_error));
        }
        checked += 1;
    }
    (format!("{}: worst {worst:.1e} ({skipped} skipped)", s.name), failures)
}

/// Runs [`check_scene`] with 10 states on every scene and fails with every failure.
pub fn check_scenes(scenes: Vec<Scene>) {
    let mut summary = vec![];
    let mut failures: Vec<String> = vec![];
    for s in scenes {
        let (line, f) = check_scene(&s, 10);
        summary.push(line);
        failures.extend(f);
    }
    println!("{}", summary.join("\n"));
    assert!(failures.is_empty(), "{} failing states:\n{}", failures.len(), failures.join("\n"));
}
