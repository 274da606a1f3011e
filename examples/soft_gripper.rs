//! A rigid two-finger gripper squeezes a soft cube resting on the ground and lifts it by
//! friction alone, in a `World` of the ground, the gripper (an articulation) and the cube (a
//! soft body); the controls are computed in the loop from the state. Writes the finger
//! positions, the cube's centre-of-mass height and the normal contact forces over time as
//! CSV (plot it with the printed `scripts/plot_example.py` command).
//!
//! Run: `cargo run --release --example soft_gripper`.
//!
//! The gripper: a base (0.5 kg) on a prismatic z joint, and two fingers (0.1 kg each) on
//! prismatic x joints of the base, each carrying a box pad (1 × 8 × 5.4 cm, μ = 1) facing the
//! cube, 1 cm away from it at the start. The cube: 6 cm on a side, 2 × 2 × 2 cells (48 tets),
//! stable Neo-Hookean (E = 50 kPa, ν = 0.3, ρ = 1000 kg/m³, 216 g), its boundary vertices
//! touching the pads (μ = 1) and the ground (μ = 0.8). Each joint gets a PD force towards a
//! target, computed from the state at every step: the fingers' targets close smoothly over
//! 0.2 s to 1 cm inside the cube's faces (a squeeze of about 4 N each, saturated at 6 N);
//! from 0.35 s the base's target rises smoothly by 5 cm over 0.5 s, with the gripper's
//! weight added as a feed-forward force; then it holds until 1.2 s. dt = 2 ms. The motion is
//! written to `target/soft_gripper.trajectory.json` (`python3 -m stiction.viz` makes it a web
//! page: the pads, the cube's surface, the contacts).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use std::sync::Arc;
use stiction::collision::Material;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, WORLD};
use stiction::soft::generate::box_mesh;
use stiction::soft::{MaterialModel, SoftBody, SoftDamping, SoftMaterial, SoftOptions};
use stiction::viz::SceneOptions;
use stiction::world::{Articulation, ContactSide, SoftSystem, StaticGeometry, World, WorldOptions, WorldState};
use stiction::{Joint, Model, ModelBuilder};

/// Time step (s) and number of steps.
pub const DT: f64 = 2e-3;
/// The number of steps (1.2 s).
pub const STEPS: usize = 600;
/// The cube's side (m).
pub const SIDE: f64 = 0.06;
/// The pads' half extents (m).
const PAD: [f64; 3] = [0.005, 0.04, 0.027];
/// Height of the pads' centres at the base's zero (m).
const PAD_Z: f64 = 0.035;
/// Gap between each pad and the cube at the start (m).
const GAP: f64 = 0.01;
/// How far the fingers' targets go past the cube's faces (m).
const SQUEEZE: f64 = 0.01;
/// How far the base's target rises (m).
pub const LIFT: f64 = 0.05;
const G: f64 = 9.81;
const BASE_MASS: f64 = 0.5;
const FINGER_MASS: f64 = 0.1;
/// PD gains: the base (N/m, N·s/m), the fingers (N/m, N·s/m, saturation N).
const BASE_GAINS: (f64, f64) = (3000.0, 80.0);
const FINGER_GAINS: (f64, f64, f64) = (400.0, 20.0, 6.0);

/// What the run shows.
#[derive(Clone, Debug)]
pub struct GripperRun {
    /// The cube's centre-of-mass height at the start and at the end (m).
    pub com_z: (f64, f64),
    /// The base's height at the end (m, from its start).
    pub lift: f64,
    /// The lowest cube vertex at the end (m).
    pub lowest_vertex: f64,
    /// The largest speed of the cube's centre of mass over the last 0.2 s (m/s).
    pub final_speed: f64,
    /// How far the cube slid down relative to the base during the last 0.2 s (m).
    pub slip: f64,
    /// The total normal force of the pads on the cube at the end (N).
    pub grip_force: f64,
    /// The ground's normal force on the cube at the end (N).
    pub ground_force: f64,
    /// The cube's weight (N).
    pub weight: f64,
}

fn main() -> stiction::Result<()> {
    run().map(|_| ())
}

/// The gripper: a base on a prismatic z joint, two fingers on prismatic x joints with box pads.
pub fn gripper() -> stiction::Result<Model> {
    let mut b = ModelBuilder::new("gripper");
    let small = |mass: f64, i: f64| Inertia::from_com(mass, Vec3::zeros(), nalgebra::Matrix3::identity() * i);
    let lift = Joint::prismatic("lift", Vec3::z()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, PAD_Z)));
    b.add_body(WORLD, lift, Body::new("base", small(BASE_MASS, 1e-3)));
    let x0 = SIDE / 2.0 + PAD[0] + GAP;
    for (name, sign) in [("left", -1.0), ("right", 1.0)] {
        let pad = CollisionShape::new(Geometry::Box { half_extents: Vec3::from(PAD) }, SE3::identity())
            .with_material(Material::new(1.0, 0.0));
        let slide = Joint::prismatic(format!("{name}_slide"), Vec3::x())
            .with_placement(SE3::from_translation(Vec3::new(sign * x0, 0.0, 0.0)));
        b.add_body("base", slide, Body::new(name, small(FINGER_MASS, 1e-4)).with_collision(pad));
    }
    b.build().map_err(Into::into)
}

/// `3s² − 2s³` on [0, 1], 0 before, 1 after.
fn smoothstep(s: f64) -> f64 {
    let s = s.clamp(0.0, 1.0);
    s * s * (3.0 - 2.0 * s)
}

/// The controls at time `t` from the state: PD forces on the three joints (the cube gets none).
/// `q[0]` is the base's height, `q[1]` the left finger's travel along +x, `q[2]` the right
/// finger's along +x (negative: closing).
pub fn control(t: f64, q: &DVector<f64>, v: &DVector<f64>, nu: usize) -> DVector<f64> {
    let (kp, kd) = BASE_GAINS;
    let (kf, kdf, fmax) = FINGER_GAINS;
    let close = (GAP + SQUEEZE) * smoothstep(t / 0.2);
    let lift = LIFT * smoothstep((t - 0.35) / 0.5);
    let mut u = DVector::zeros(nu);
    u[0] = (BASE_MASS + 2.0 * FINGER_MASS) * G + kp * (lift - q[0]) - kd * v[0];
    u[1] = (kf * (close - q[1]) - kdf * v[1]).clamp(-fmax, fmax);
    u[2] = (kf * (-close - q[2]) - kdf * v[2]).clamp(-fmax, fmax);
    u
}

/// Runs the example (prints, writes the CSV) and returns what it shows.
pub fn run() -> stiction::Result<GripperRun> {
    let model = Arc::new(gripper()?);
    let mesh = box_mesh([2, 2, 2], Vec3::new(SIDE, SIDE, SIDE), Vec3::new(-SIDE / 2.0, -SIDE / 2.0, 0.0))?;
    let cube = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 5e4, 0.3, 1000.0))
            .damping(SoftDamping { mass: 0.5, stiffness: 5e-3 })
            .build()?,
    );
    let soft = SoftSystem::new(cube.clone(), SoftOptions::default(), Material::new(1.0, 0.0), 0.0)?;
    let world = World::new(
        vec![
            Arc::new(StaticGeometry::ground(Material::new(0.8, 0.0))),
            Arc::new(Articulation::new(model.clone())),
            Arc::new(soft),
        ],
        WorldOptions { dt: DT, ..Default::default() },
    )?;
    let (nq, n) = (model.nq(), cube.ndof());
    let (cube_q, cube_v, _) = world.blocks(2).expect("three systems");
    let mut q = DVector::zeros(nq + n);
    q.rows_mut(nq, n).copy_from(&cube.rest_positions());
    let mut state = WorldState { q, v: DVector::zeros(nq + n) };
    let com = |x: &[f64]| -> Vec3 {
        let sum: Vec3 =
            cube.masses().iter().enumerate().map(|(i, &m)| Vec3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2]) * m).sum();
        sum / cube.total_mass()
    };
    let com0 = com(&state.q.as_slice()[cube_q.clone()]).z;
    println!(
        "gripper ({} joints) and a soft cube ({} vertices, {} tets, {:.0} g) on the ground; {STEPS} steps of {} ms",
        model.nv(),
        cube.mesh().num_vertices(),
        cube.mesh().num_tets(),
        1e3 * cube.total_mass(),
        1e3 * DT
    );
    let start = std::time::Instant::now();
    let mut rows = Vec::with_capacity(STEPS);
    let (mut final_speed, mut hold_start) = (0.0f64, None);
    let (mut grip, mut ground) = (0.0, 0.0);
    // For the viewer: the configurations, and the contacts found at each (none at the last).
    let (mut qs, mut contacts) = (vec![state.q.as_slice().to_vec()], Vec::with_capacity(STEPS + 1));
    for k in 0..STEPS {
        let t = k as f64 * DT;
        let u = control(t, &state.q, &state.v, world.nu());
        let record = world.step_recorded(&state, &u)?;
        state = record.next_state();
        qs.push(state.q.as_slice().to_vec());
        contacts.push(
            record
                .contacts()
                .iter()
                .map(|c| {
                    let (p, n) = (c.contact.geometry.point, c.contact.geometry.normal);
                    [p.x, p.y, p.z, n.x, n.y, n.z]
                })
                .collect::<Vec<_>>(),
        );
        (grip, ground) = (0.0, 0.0);
        let f = &record.solution().f;
        for (c, contact) in record.contacts().iter().enumerate() {
            let force = f[3 * c] / DT;
            match (contact.side_a, contact.side_b) {
                (ContactSide::Static, _) | (_, ContactSide::Static) => ground += force,
                _ => grip += force,
            }
        }
        let x = &state.q.as_slice()[cube_q.clone()];
        let c = com(x);
        let rel = c.z - state.q[0];
        if t + DT >= 1.0 {
            final_speed = final_speed.max(com(&state.v.as_slice()[cube_v.clone()]).norm());
            hold_start.get_or_insert(rel);
        }
        rows.push(vec![
            t + DT,
            1e3 * state.q[0],
            1e3 * state.q[1],
            1e3 * state.q[2],
            1e3 * c.z,
            grip,
            ground,
            u[1],
            u[2],
        ]);
    }
    let x = &state.q.as_slice()[cube_q.clone()];
    let com_end = com(x).z;
    let lowest_vertex = x.iter().skip(2).step_by(3).fold(f64::INFINITY, |a, &b| a.min(b));
    let slip = hold_start.unwrap_or(0.0) - (com_end - state.q[0]);
    let run = GripperRun {
        com_z: (com0, com_end),
        lift: state.q[0],
        lowest_vertex,
        final_speed,
        slip,
        grip_force: grip,
        ground_force: ground,
        weight: cube.total_mass() * G,
    };
    println!(
        "cube centre of mass {:.1} -> {:.1} mm (raised {:.1} mm; base raised {:.1} mm), lowest vertex {:.1} mm \
         above the ground",
        1e3 * run.com_z.0,
        1e3 * run.com_z.1,
        1e3 * (run.com_z.1 - run.com_z.0),
        1e3 * run.lift,
        1e3 * run.lowest_vertex
    );
    println!(
        "held: grip force {:.2} N on a {:.2} N cube, ground force {:.2} N; slip over the last 0.2 s {:.3} mm, \
         speed below {:.1e} m/s ({:.2} s)",
        run.grip_force,
        run.weight,
        run.ground_force,
        1e3 * run.slip,
        run.final_speed,
        start.elapsed().as_secs_f64()
    );
    csv::write_csv(
        "soft_gripper",
        "time,base_z_mm,left_finger_mm,right_finger_mm,cube_com_z_mm,grip_force,ground_force,left_control,\
         right_control",
        &rows,
        " --x time",
    );
    contacts.push(Vec::new());
    let title = "soft gripper".to_string();
    csv::write_world_trajectory(
        "soft_gripper",
        &world,
        &qs,
        DT,
        SceneOptions { title, frames: true, contacts, ..Default::default() },
    );
    Ok(run)
}
