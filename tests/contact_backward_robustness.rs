//! The backward pass of ordinary contact rollouts never refuses a step: random-torque
//! rollouts of bodies resting on a plane (boxes, spheres, capsules) and of a planar arm
//! sweeping two boxes across the ground — every step's Jacobians and the whole tape's
//! backward pass succeed and are finite, with the contact warm start on and off.
//!
//! A step whose friction row is reported at its (collapsed) bound while its normal row
//! separates used to be refused ("friction row … is at its bound but its normal row …
//! is not clamping"); such a row carries `±μ f_n = 0` throughout the mode and is now
//! differentiated as separating.

mod common;

use common::contact::{arm7_and_boxes, capsule_x, free_box, ground, material};
use nalgebra::DVector;
use stiction::math::{SplitMix64, Vec3, SE3};
use stiction::model::samples::{bodies_on_plane, humanoid_on_ground, rod, RestingShape};
use stiction::model::WORLD;
use stiction::tape::Tape;
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// Runs `rollouts` rollouts of `steps` steps from `start` under random torques
/// (σ = `sigma` on the dofs `actuated`), checks every step's Jacobians and the tape's
/// backward pass; returns (steps, steps with constraint rows).
fn check(
    model: &Model,
    start: &State,
    actuated: &[usize],
    sigma: f64,
    rollouts: u64,
    warm_start: bool,
) -> (usize, usize) {
    let sigmas: Vec<(usize, f64)> = actuated.iter().map(|&i| (i, sigma)).collect();
    check_with(model, start, &sigmas, 300, rollouts, warm_start)
}

/// [`check`] with a σ per actuated dof (`(dof, σ)`) and rollouts of `steps` steps.
fn check_with(
    model: &Model,
    start: &State,
    sigmas: &[(usize, f64)],
    steps: usize,
    rollouts: u64,
    warm_start: bool,
) -> (usize, usize) {
    let name = model.name();
    let mut options = SimOptions::default();
    options.contact.warm_start = warm_start;
    let (mut records, mut contact_steps) = (0, 0);
    for seed in 0..rollouts {
        let mut sim = Simulator::new(model.clone(), options.clone()).unwrap();
        let mut rng = SplitMix64::new(seed + 1);
        let mut state = start.clone();
        let mut tape = Tape::new();
        for k in 0..steps {
            let mut tau = DVector::zeros(model.nv());
            for &(i, sigma) in sigmas {
                tau[i] = sigma * rng.normal();
            }
            let (next, rec) = sim.step_recorded(&state, &Control::torques(tau)).unwrap();
            let jac = rec.jacobians().unwrap_or_else(|e| panic!("{name} seed {seed} step {k}: {e}"));
            assert!(
                jac.dq_dq.iter().chain(jac.dv_dq.iter()).chain(jac.dv_dv.iter()).all(|x| x.is_finite()),
                "{name} seed {seed} step {k}: non-finite Jacobian"
            );
            contact_steps += rec.constraints().is_some() as usize;
            tape.push(rec).expect("records chain");
            state = next;
        }
        let ones = DVector::from_element(model.nv(), 1.0);
        let grads = vec![(ones.clone(), ones); steps + 1];
        let out = tape.backward(&grads, &[]).unwrap_or_else(|e| panic!("{name} seed {seed}: backward: {e}"));
        assert!(out.q0.iter().chain(out.v0.iter()).all(|x| x.is_finite()));
        records += steps;
    }
    (records, contact_steps)
}

#[test]
fn random_torque_rollouts_of_boxes_on_a_plane_differentiate_every_step() {
    let model = bodies_on_plane(4, RestingShape::Box);
    let all: Vec<usize> = (0..model.nv()).collect();
    for (warm_start, rollouts) in [(true, 100), (false, 20)] {
        let (records, contact) = check(&model, &State::neutral(&model), &all, 3.6, rollouts, warm_start);
        assert!(2 * contact >= records, "only {contact} of {records} steps had contact rows");
    }
}

#[test]
fn random_torque_rollouts_of_spheres_and_capsules_differentiate_every_step() {
    for shape in [RestingShape::Sphere, RestingShape::Capsule] {
        let model = bodies_on_plane(4, shape);
        let all: Vec<usize> = (0..model.nv()).collect();
        for warm_start in [true, false] {
            let (records, contact) = check(&model, &State::neutral(&model), &all, 3.6, 10, warm_start);
            assert!(4 * contact >= records, "{shape:?}: only {contact} of {records} steps had contact rows");
        }
    }
}

/// A fixed-base planar arm of three 0.25 m capsule links (hinges about z, 8 cm above the
/// ground) and two 1 kg boxes in its reach, resting on the ground (friction 0.5).
fn arm_and_boxes() -> (Model, State) {
    let mut b = ModelBuilder::new("arm3_two_boxes");
    ground(&mut b, material(0.5, 0.0), 0.0);
    let (length, height, r) = (0.25, 0.08, 0.02);
    let mut parent = WORLD.to_string();
    for k in 0..3 {
        let at = if k == 0 { Vec3::new(0.0, 0.0, height) } else { Vec3::new(length, 0.0, 0.0) };
        let link = format!("link{k}");
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), Vec3::z()).with_placement(SE3::from_translation(at)),
            rod(&link, 0.5, length, r, Vec3::x()).with_collision(capsule_x(r, 0.0, length, material(0.8, 0.0))),
        );
        parent = link;
    }
    let h = Vec3::new(0.06, 0.06, 0.06);
    for name in ["box_a", "box_b"] {
        free_box(&mut b, name, h, 1.0, material(0.5, 0.0));
    }
    let model = b.build().unwrap();
    let mut q = model.neutral();
    q.rows_mut(0, 3).copy_from_slice(&[0.3, -0.4, 0.2]);
    for (k, centre) in [Vec3::new(0.55, 0.25, h.z - 1e-4), Vec3::new(0.45, -0.2, h.z - 1e-4)].iter().enumerate() {
        let a = 3 + 7 * k;
        q[a] = centre.x;
        q[a + 1] = centre.y;
        q[a + 2] = centre.z;
    }
    (model, State { q, v: DVector::zeros(15) })
}

#[test]
fn random_torque_rollouts_of_an_arm_sweeping_boxes_differentiate_every_step() {
    let (model, start) = arm_and_boxes();
    for (warm_start, rollouts) in [(true, 100), (false, 20)] {
        let (records, contact) = check(&model, &start, &[0, 1, 2], 4.0, rollouts, warm_start);
        assert_eq!(contact, records, "the boxes rest on the ground throughout");
    }
}

/// σ of the random torques: a quarter of each dof's effort limit (none on unlimited dofs).
fn quarter_effort(model: &Model) -> Vec<(usize, f64)> {
    let effort = model.effort_limits();
    (0..model.nv()).filter(|&k| effort[k].is_finite() && effort[k] > 0.0).map(|k| (k, 0.25 * effort[k])).collect()
}

#[test]
fn random_torque_rollouts_of_arm7_pushing_boxes_differentiate_every_step() {
    let (model, start) = arm7_and_boxes();
    let sigmas = quarter_effort(&model);
    assert_eq!(sigmas.len(), 7);
    for (warm_start, rollouts) in [(true, 100), (false, 10)] {
        let (records, contact) = check_with(&model, &start, &sigmas, 300, rollouts, warm_start);
        assert_eq!(contact, records, "the boxes rest on the ground throughout");
    }
}

#[test]
fn random_torque_rollouts_of_the_humanoid_on_the_ground_differentiate_every_step() {
    let model = humanoid_on_ground();
    let sigmas = quarter_effort(&model);
    assert_eq!(sigmas.len(), 44);
    for (warm_start, rollouts) in [(true, 100), (false, 10)] {
        let (records, contact) = check_with(&model, &State::neutral(&model), &sigmas, 300, rollouts, warm_start);
        assert_eq!(contact, records, "the feet rest on the ground throughout");
    }
}

/// An inexact last-resort solve is reported and still differentiated
/// (docs/contact.md, "Inexact solves"): with the pivoting budget cut to one pivot and
/// two PGS sweeps, some steps of a rollout of four boxes on a plane keep a PGS result
/// above the LCP tolerance. Each such record says so (`solved_exactly`), the simulator
/// counts it (`inexact_solves`), the tape's backward pass counts it (`inexact_steps`),
/// and its Jacobians are finite; the exactly solved steps are not flagged.
#[test]
fn an_inexact_solve_is_reported_and_still_differentiated() {
    use stiction::tape::BackwardOptions;
    let model = bodies_on_plane(4, RestingShape::Box);
    let mut options = SimOptions::default();
    options.contact.lcp.max_pivots = 1;
    options.contact.lcp.pgs_iterations = 2;
    let tolerance = options.contact.lcp.tolerance;
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let mut state = State { q: model.neutral(), v: DVector::zeros(model.nv()) };
    let mut rng = SplitMix64::new(3);
    let mut tape = Tape::new();
    let mut inexact = 0;
    for k in 0..100 {
        let tau = DVector::from_fn(model.nv(), |_, _| 3.6 * rng.normal());
        let (next, rec) = sim.step_recorded(&state, &Control::torques(tau)).unwrap();
        let c = rec.constraints().expect("the boxes rest on the plane");
        let exact = c.stats.residual <= tolerance;
        assert_eq!(rec.solved_exactly(), exact, "step {k}: residual {:e}", c.stats.residual);
        assert_eq!(c.solved_exactly(), exact);
        inexact += usize::from(!exact);
        let jac = rec.jacobians().unwrap_or_else(|e| panic!("step {k}: {e}"));
        assert!(jac.dv_dq.iter().chain(jac.dv_dv.iter()).chain(jac.dv_dtau.iter()).all(|x| x.is_finite()));
        tape.push(rec).expect("records chain");
        state = next;
    }
    assert!(inexact > 0, "no inexact solve: the test does not exercise the report");
    assert_eq!(sim.stats().inexact_solves, inexact as u64, "{:?}", sim.stats());
    let ones = DVector::from_element(model.nv(), 1.0);
    let grads = vec![(ones.clone(), ones); 101];
    let (out, stats) = tape.backward_with(&grads, &[], &BackwardOptions::default()).unwrap();
    assert!(out.q0.iter().chain(out.v0.iter()).all(|x| x.is_finite()));
    assert_eq!(stats.inexact_steps, inexact, "{stats:?}");
    assert_eq!(stats.constrained_steps, 100);
    println!("{inexact} inexact steps of 100");
}
