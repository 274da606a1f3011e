//! Contact physics against closed forms and the energy contract of the constraint
//! stage (docs/contact.md): a ball rolling on a plane keeps its energy (free joints
//! integrate on R³ × SO(3), so the centre of a rolling ball does not dip into the plane);
//! a ball sliding with Coulomb friction reaches rolling at 5/7 of its start speed; a
//! bounce from any phase of a step leaves at `e·|v⁻|` at most; drops and overlapping
//! spawns do not launch bodies (penetrations are removed by the position stage, which
//! gives no velocity); the constraint stage never raises the kinetic energy without
//! restitution.

#[path = "common/contact.rs"]
#[allow(dead_code)]
mod contact;

use contact::{add_cube_pile, free_bodies_at, free_body, free_box, ground, material};
use nalgebra::DVector;
use stiction::dynamics::{kinetic_energy, potential_energy, Data};
use stiction::math::{Inertia, SplitMix64, Vec3};
use stiction::model::{samples, Geometry};
use stiction::step::{ContactSolver, PenetrationRecovery};
use stiction::{Control, Model, ModelBuilder, SimOptions, Simulator, State};

const R: f64 = 0.1;
const MASS: f64 = 1.0;

/// Options with time step `dt` and the default contact options, whose penetration
/// recovery is the split one (the recovery that never adds kinetic energy).
fn split(dt: f64) -> SimOptions {
    let options = SimOptions { dt, ..Default::default() };
    assert_eq!(options.contact.penetration, PenetrationRecovery::Split, "the default recovery");
    options
}

/// A solid sphere (r = 0.1 m, 1 kg) on the ground, friction `mu`.
fn ball(mu: f64) -> Model {
    let mut b = ModelBuilder::new("ball");
    ground(&mut b, material(mu, 0.0), 0.0);
    free_body(&mut b, "ball", Geometry::Sphere { radius: R }, Inertia::solid_sphere(MASS, R), material(mu, 0.0));
    b.build().unwrap()
}

/// The ball resting on the plane (centre at height r) with world linear velocity
/// `(vx, 0, 0)` and angular velocity `(0, wy, 0)` (body frame = world frame at the start).
fn start(model: &Model, vx: f64, wy: f64) -> State {
    let mut q = model.neutral();
    q[2] = R;
    let v = DVector::from_vec(vec![0.0, wy, 0.0, vx, 0.0, 0.0]);
    State { q, v }
}

fn energy(model: &Model, data: &mut Data, s: &State) -> f64 {
    kinetic_energy(model, data, s.q.as_slice(), s.v.as_slice()).unwrap()
        + potential_energy(model, data, s.q.as_slice()).unwrap()
}

/// World-frame linear velocity of the ball's centre (the free joint's linear velocity
/// is in the parent frame, here the world).
fn centre_velocity(s: &State) -> Vec3 {
    Vec3::new(s.v[3], s.v[4], s.v[5])
}

/// The constraint solvers the energy checks run with: the default (boxed LCP) and the NCP
/// solver's isotropic cones.
const SOLVERS: [ContactSolver; 2] = [ContactSolver::Auto, ContactSolver::Ncp];

fn with_solver(mut options: SimOptions, solver: ContactSolver) -> SimOptions {
    options.contact.solver = solver;
    options
}

#[test]
fn rolling_ball_keeps_its_energy() {
    for (dt, recovery, solver) in
        [1e-3, 1e-2].into_iter().flat_map(|dt| [(dt, false), (dt, true)]).flat_map(|(d, r)| SOLVERS.map(|x| (d, r, x)))
    {
        let model = ball(0.5);
        let options = if recovery { split(dt) } else { SimOptions { dt, ..Default::default() } };
        let options = with_solver(options, solver);
        let mut sim = Simulator::new(model.clone(), options).unwrap();
        let mut data = Data::new(&model);
        let mut s = start(&model, 2.0, 2.0 / R);
        let e0 = energy(&model, &mut data, &s);
        let control = Control::torques(DVector::zeros(model.nv()));
        let steps = (10.0 / dt).round() as usize;
        let mut worst: f64 = f64::NEG_INFINITY;
        for _ in 0..steps {
            s = sim.step(&s, &control).unwrap();
            worst = worst.max((energy(&model, &mut data, &s) - e0) / e0);
        }
        assert!(worst <= 1e-9, "dt {dt} {solver:?}: energy rose by {worst:e} (relative)");
        // Still rolling at 2 m/s, on the plane.
        let vc = centre_velocity(&s);
        assert!((vc.x - 2.0).abs() < 1e-6 && vc.z.abs() < 1e-6, "dt {dt}: centre velocity {vc:?}");
        assert!((s.q[2] - R).abs() < 1e-6, "dt {dt}: centre height {}", s.q[2]);
        assert!((s.q[0] - 20.0).abs() < 1e-3, "dt {dt}: travelled {}", s.q[0]);
    }
}

/// A sliding solid sphere (no spin) decelerates under Coulomb friction until its
/// contact point sticks: the angular momentum about the contact point is conserved, so
/// it rolls at 5/7 of its start speed.
#[test]
fn sliding_ball_reaches_five_sevenths() {
    for dt in [1e-3, 1e-2] {
        let model = ball(0.5);
        let mut sim = Simulator::new(model.clone(), split(dt)).unwrap();
        let mut s = start(&model, 3.0, 0.0);
        let control = Control::torques(DVector::zeros(model.nv()));
        let steps = (2.0 / dt).round() as usize; // sliding lasts 2 v0 / (7 μ g) = 0.17 s
        for _ in 0..steps {
            s = sim.step(&s, &control).unwrap();
        }
        let vc = centre_velocity(&s);
        let want = 5.0 / 7.0 * 3.0;
        assert!((vc.x - want).abs() < 0.005 * want, "dt {dt}: rolling speed {} against {want}", vc.x);
        // Rolling: the contact point is at rest.
        let rot = nalgebra::UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(s.q[3], s.q[4], s.q[5], s.q[6]));
        let w = rot * Vec3::new(s.v[0], s.v[1], s.v[2]);
        let slip = vc + w.cross(&Vec3::new(0.0, 0.0, -R));
        assert!(slip.norm() < 1e-6, "dt {dt}: contact point slips at {slip:?}");
    }
}

/// A ball (r = 0.1) or a box (0.2 m cube) of 1 kg above the ground, frictionless,
/// restitution `e` on both shapes, optional gravity.
fn dropper(box_shape: bool, e: f64, gravity: bool) -> Model {
    let mut b = ModelBuilder::new("dropper");
    if !gravity {
        b.gravity(Vec3::zeros());
    }
    ground(&mut b, material(0.0, e), 0.0);
    let (geometry, inertia) = if box_shape {
        let h = Vec3::new(0.1, 0.1, 0.1);
        (Geometry::Box { half_extents: h }, Inertia::solid_box(MASS, h * 2.0))
    } else {
        (Geometry::Sphere { radius: R }, Inertia::solid_sphere(MASS, R))
    };
    free_body(&mut b, "body", geometry, inertia, material(0.0, e));
    b.build().unwrap()
}

/// Without gravity, a ball or a box approaches the plane at 1 m/s and touches it at a
/// fraction `s` of a step (ten phases): after the bounce it leaves at `e` m/s — never
/// faster — for e ∈ {0, 0.5, 1}, dt 1 ms and 10 ms.
#[test]
fn bounces_from_any_phase_leave_at_restitution_speed() {
    for box_shape in [false, true] {
        for e in [0.0, 0.5, 1.0] {
            for dt in [1e-3, 1e-2] {
                let model = dropper(box_shape, e, false);
                let mut sim = Simulator::new(model.clone(), split(dt)).unwrap();
                let control = Control::torques(DVector::zeros(6));
                for phase in 0..10 {
                    sim.reset_warm_start();
                    let mut q = model.neutral();
                    q[2] = R + (3.0 + phase as f64 / 10.0) * dt;
                    let mut s = State { q, v: DVector::from_vec(vec![0.0, 0.0, 0.0, 0.0, 0.0, -1.0]) };
                    let mut fastest: f64 = f64::NEG_INFINITY;
                    let mut lowest: f64 = f64::INFINITY;
                    for _ in 0..40 {
                        s = sim.step(&s, &control).unwrap();
                        fastest = fastest.max(s.v[5]);
                        lowest = lowest.min(s.q[2]);
                    }
                    let what = format!("box {box_shape}, e {e}, dt {dt}, phase {phase}/10");
                    assert!(fastest <= e + 1e-9, "{what}: leaves at {fastest} m/s");
                    assert!((s.v[5] - e).abs() < 1e-9, "{what}: final normal speed {}", s.v[5]);
                    assert!(s.v.iter().take(5).all(|x| x.abs() < 1e-9), "{what}: spin or drift {:?}", s.v);
                    // Contacts are detected within `margin` (5 mm): a step that travels
                    // further may end inside the plane, by at most one step's travel.
                    assert!(lowest > R - dt * 1.0 - 1e-9, "{what}: sank to {lowest}");
                }
            }
        }
    }
}

/// A box dropped from 1 m and 100 m (bottom face height) with e = 0 lands without
/// rebounding by more than 1 mm, at dt 1 ms and 10 ms, even when the step jumps deep
/// into the ground (44 m/s at dt 10 ms: 0.44 m in one step).
#[test]
fn drops_do_not_rebound() {
    for height in [1.0, 100.0] {
        for dt in [1e-3, 1e-2] {
            let model = dropper(true, 0.0, true);
            let mut sim = Simulator::new(model.clone(), split(dt)).unwrap();
            let control = Control::torques(DVector::zeros(6));
            let mut q = model.neutral();
            q[2] = 0.1 + height;
            let mut s = State { q, v: DVector::zeros(6) };
            let fall = (2.0 * height / 9.81).sqrt();
            let steps = ((fall + 1.0) / dt).round() as usize;
            let (mut landed, mut highest, mut fastest_up) = (false, f64::NEG_INFINITY, f64::NEG_INFINITY);
            for _ in 0..steps {
                s = sim.step(&s, &control).unwrap();
                if !landed && sim.last_constraints().is_some_and(|c| c.impulses.iter().any(|f| *f > 0.0)) {
                    landed = true;
                }
                if landed {
                    highest = highest.max(s.q[2] - 0.1);
                    fastest_up = fastest_up.max(s.v[5]);
                }
            }
            assert!(landed, "height {height}, dt {dt}: never landed");
            assert!(highest < 1e-3, "height {height}, dt {dt}: rebounds to {highest} m");
            assert!(fastest_up < 1e-6, "height {height}, dt {dt}: moves up at {fastest_up} m/s");
            assert!((s.q[2] - 0.1).abs() < 1e-3, "height {height}, dt {dt}: rests at {}", s.q[2]);
        }
    }
}

/// Two boxes spawned overlapping each other by 3 cm, and into the ground by 3 cm,
/// separate without any body exceeding 1 m/s.
#[test]
fn overlapping_spawns_separate_gently() {
    let mut b = ModelBuilder::new("overlap");
    ground(&mut b, material(0.5, 0.0), 0.0);
    let h = Vec3::new(0.1, 0.1, 0.1);
    for name in ["a", "b"] {
        free_box(&mut b, name, h, 1.0, material(0.5, 0.0));
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q[2] = 0.07;
    q[7] = 0.17;
    q[9] = 0.07;
    for dt in [1e-3, 1e-2] {
        let mut s = State { q: q.clone(), v: DVector::zeros(12) };
        let mut sim = Simulator::new(model.clone(), split(dt)).unwrap();
        let control = Control::torques(DVector::zeros(12));
        let mut fastest: f64 = 0.0;
        for _ in 0..((1.0 / dt) as usize) {
            s = sim.step(&s, &control).unwrap();
            fastest = fastest.max(s.v.amax());
        }
        assert!(fastest <= 1.0, "dt {dt}: a body reached {fastest} m/s (or rad/s)");
        let c = sim.last_constraints().expect("resting contacts");
        let deepest = c.contacts.iter().map(|c| c.geometry.distance).fold(f64::INFINITY, f64::min);
        assert!(deepest > -1e-4, "dt {dt}: still penetrating by {deepest}");
        assert!(sim.stats().position_corrections > 0, "dt {dt}: the position stage never ran");
    }
}

/// The isotropic cone of the NCP solver: a ball launched sliding at 30° to the contact
/// frame's tangents (no spin) keeps its direction to round-off while it slides, and rolls
/// at 5/7 of its start velocity once its contact point sticks (the angular momentum
/// about the contact point is conserved by every contact impulse, so this holds for the
/// pyramid too); under the boxed LCP's pyramid it turns while it slides. Energy never
/// rises, step after step.
#[test]
fn ncp_sliding_ball_reaches_five_sevenths_along_its_launch_direction() {
    let angle = 30f64.to_radians();
    let dir = Vec3::new(angle.cos(), angle.sin(), 0.0);
    let mut turned = vec![];
    for solver in SOLVERS {
        let dt = 1e-3;
        let model = ball(0.5);
        let mut sim = Simulator::new(model.clone(), with_solver(split(dt), solver)).unwrap();
        let mut data = Data::new(&model);
        let mut s = start(&model, 0.0, 0.0);
        s.v[3] = 3.0 * dir.x;
        s.v[4] = 3.0 * dir.y;
        let control = Control::torques(DVector::zeros(model.nv()));
        let mut e = energy(&model, &mut data, &s);
        for k in 0..2000 {
            s = sim.step(&s, &control).unwrap();
            let e1 = energy(&model, &mut data, &s);
            assert!(e1 <= e * (1.0 + 1e-12), "{solver:?}: energy rose {e} -> {e1}");
            e = e1;
            if k == 50 {
                // Still sliding (for 2 v0/(7 μ g) = 0.17 s).
                let vc = centre_velocity(&s);
                turned.push(vc.y.atan2(vc.x) - angle);
            }
        }
        let vc = centre_velocity(&s);
        let want = dir * (5.0 / 7.0 * 3.0);
        assert!((vc - want).norm() < 1e-3 * want.norm(), "{solver:?}: rolling velocity {vc:?} against {want:?}");
        if solver == ContactSolver::Ncp {
            assert!(turned[1].abs() < 1e-12, "the cone turned the ball by {:e} rad", turned[1]);
            assert_eq!(sim.stats().ncp_solves, 2000);
        }
    }
    assert!(turned[0].abs() > 1e-3, "the pyramid did not turn the ball: {:e}", turned[0]);
}

/// The contract of docs/contact.md: without restitution the constraint stage never
/// raises the kinetic energy, `½ v⁺ᵀ M̃ v⁺ ≤ ½ v_fᵀ M̃ v_f` (here M̃ = M: no damping, no
/// armature), over random-torque rollouts of four boxes, spheres or capsules, with the
/// boxed LCP and with the NCP solver.
#[test]
fn constraint_stage_never_adds_kinetic_energy() {
    for (shape, solver) in [samples::RestingShape::Box, samples::RestingShape::Sphere, samples::RestingShape::Capsule]
        .into_iter()
        .flat_map(|s| SOLVERS.map(|x| (s, x)))
    {
        let model = samples::bodies_on_plane(4, shape);
        let mut data = Data::new(&model);
        let mut rng = SplitMix64::new(11);
        let mut checked = 0;
        for _ in 0..5 {
            let mut sim = Simulator::new(model.clone(), with_solver(split(1e-3), solver)).unwrap();
            let mut s = State::neutral(&model);
            for _ in 0..300 {
                let tau = DVector::from_fn(model.nv(), |_, _| rng.range(-1.0, 1.0) * 6.0);
                let (next, rec) = sim.step_recorded(&s, &Control::torques(tau)).unwrap();
                if let Some(c) = rec.constraints() {
                    assert!(c.info.iter().all(|i| !i.bounce));
                    let q = rec.inputs().0;
                    let before = kinetic_energy(&model, &mut data, q.as_slice(), c.v_free.as_slice()).unwrap();
                    let after = kinetic_energy(&model, &mut data, q.as_slice(), next.v.as_slice()).unwrap();
                    assert!(after <= before * (1.0 + 1e-9) + 1e-12, "{shape:?} {solver:?}: KE {before} -> {after}");
                    checked += 1;
                }
                s = next;
            }
        }
        assert!(checked > 500, "{shape:?}: only {checked} constrained steps");
    }
}

/// A 3 × 3 pile of two layers of boxes (unequal masses: 1 kg below, 0.4 kg above) spawned
/// face on face at rest keeps gaps of rounding size, some negative. Those do not start the
/// position stage ([`ContactOptions::penetration_tolerance`], 1e-9 m): no step corrects,
/// and the pile stays within a micrometre over 0.3 s. With the tolerance at 0 the same
/// rounding starts the stage on most steps, for nothing (the pile moves no more). A real
/// penetration (the lower layer spawned 2 mm into the ground) still starts it, unless the
/// tolerance is set above it.
#[test]
fn rounding_gaps_of_a_resting_pile_start_no_position_stage() {
    let mut b = ModelBuilder::new("pile");
    ground(&mut b, material(0.5, 0.0), 0.0);
    let centres = add_cube_pile(&mut b, 2, 3, 0.05, 0.0, |layer| if layer == 0 { 1.0 } else { 0.4 });
    let model = b.build().unwrap();
    let spawn = |sink: f64| {
        let sunk: Vec<Vec3> = centres.iter().map(|c| c - Vec3::z() * sink).collect();
        State { q: free_bodies_at(&model, &sunk), v: DVector::zeros(model.nv()) }
    };
    let run = |tolerance: f64, sink: f64, steps: usize| {
        let mut options = split(1e-3);
        options.contact.penetration_tolerance = tolerance;
        let mut sim = Simulator::new(model.clone(), options).unwrap();
        let start = spawn(sink);
        let mut s = start.clone();
        let control = Control::torques(DVector::zeros(model.nv()));
        for _ in 0..steps {
            s = sim.step(&s, &control).unwrap();
        }
        let moved = (0..centres.len())
            .map(|n| (0..3).map(|c| (s.q[7 * n + c] - start.q[7 * n + c]).abs()).fold(0.0, f64::max))
            .fold(0.0, f64::max);
        let deepest = sim.last_constraints().unwrap().contacts.iter().map(|c| c.geometry.distance).fold(0.0, f64::min);
        (sim.stats().position_corrections, moved, deepest)
    };
    let (corrections, moved, _) = run(stiction::step::PENETRATION_TOLERANCE, 0.0, 300);
    assert_eq!(corrections, 0, "rounding started the position stage");
    assert!(moved < 1e-6, "the resting pile moved {moved} m");
    let (corrections, moved, _) = run(0.0, 0.0, 300);
    assert!(corrections > 100, "with no tolerance, {corrections} of 300 steps corrected");
    assert!(moved < 1e-6, "the resting pile moved {moved} m with no tolerance");
    let (corrections, _, deepest) = run(stiction::step::PENETRATION_TOLERANCE, 2e-3, 20);
    assert!(corrections >= 1 && deepest > -1e-6, "{corrections} corrections of a 2 mm penetration, deepest {deepest}");
    let (corrections, _, deepest) = run(3e-3, 2e-3, 20);
    assert_eq!(corrections, 0, "a 2 mm penetration under a 3 mm tolerance was corrected");
    assert!(deepest < -1e-3, "the 2 mm penetration was removed ({deepest}) under a 3 mm tolerance");
}
