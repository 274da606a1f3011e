//! Soaks: 10⁶ steps (dt = 1 ms) of random torques within the effort limits on the arm7
//! pushing two boxes, the humanoid on the ground, four boxes on a plane and a cartpole
//! whose cart has position limits. Every step must succeed (no NaN: the divergence guard
//! turns a non-finite or runaway state into an error naming the joint), no generalized
//! speed may exceed 1e3, and no position or velocity limit may be passed by more than
//! [`LIMIT_SLACK`] (the LCP's rounding) on any step. The counts of inexact, relaxed and
//! limit-violating steps (`SimStats`, beyond the relative tolerance of docs/contact.md)
//! are printed.
//!
//! `STICTION_SOAK_STEPS` overrides the number of steps (for a quick local run).

mod common;

use common::contact::{arm7_and_boxes, limited_cartpole};
use nalgebra::DVector;
use stiction::math::SplitMix64;
use stiction::model::samples::{bodies_on_plane, humanoid, humanoid_on_ground, RestingShape};
use stiction::step::IntegratorOptions;
use stiction::{Control, Error, Model, SimOptions, Simulator, State};

/// How far past a position (rad or m) or velocity (rad/s or m/s) limit a soak may end:
/// the rounding of the LCP solutions, far below one step's motion.
const LIMIT_SLACK: f64 = 1e-6;
/// The largest generalized speed a soak may reach.
const SPEED_BOUND: f64 = 1e3;
/// Torques are redrawn every this many steps (10 ms).
const HOLD: usize = 10;

fn steps() -> usize {
    std::env::var("STICTION_SOAK_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000)
}

/// Runs the soak: torques uniform in `±amplitude` (per dof), redrawn every [`HOLD`]
/// steps; checks every state. Returns the final state.
fn soak(model: &Model, start: &State, amplitude: &DVector<f64>, seed: u64) -> State {
    let name = model.name();
    let mut sim = Simulator::new(model.clone(), SimOptions::default()).unwrap();
    let mut rng = SplitMix64::new(seed);
    let (lower, upper, vmax) = (model.lower_limits(), model.upper_limits(), model.velocity_limits());
    let mut tau = DVector::zeros(model.nv());
    let mut state = start.clone();
    let (mut worst_excess, mut fastest) = (0.0f64, 0.0f64);
    let n = steps();
    for k in 0..n {
        if k % HOLD == 0 {
            tau = amplitude.map(|a| rng.range(-a, a));
        }
        state = sim.step(&state, &Control::torques(tau.clone())).unwrap_or_else(|e| panic!("{name} step {k}: {e}"));
        let speed = state.v.amax();
        fastest = fastest.max(speed);
        assert!(speed <= SPEED_BOUND, "{name} step {k}: |v| = {speed} at {}", model.dof_name(state.v.iamax()));
        let mut excess = 0.0f64;
        for c in 0..model.nq() {
            excess = excess.max((lower[c] - state.q[c]).max(state.q[c] - upper[c]));
        }
        for d in 0..model.nv() {
            excess = excess.max(state.v[d].abs() - vmax[d]);
        }
        assert!(
            excess <= LIMIT_SLACK,
            "{name} step {k}: a limit passed by {excess}; the solve: {:?}, reported {:?}",
            sim.last_constraints().map(|c| c.stats),
            sim.last_constraints().map(|c| &c.limit_violations)
        );
        worst_excess = worst_excess.max(excess);
    }
    let stats = sim.stats();
    assert_eq!(stats.steps, n as u64);
    eprintln!("{name}: {n} steps, fastest |v| {fastest:.3e}, worst limit excess {worst_excess:.2e}; {stats:?}");
    state
}

/// The effort limits, with `free` on the dofs that have none.
fn amplitudes(model: &Model, free: f64) -> DVector<f64> {
    model.effort_limits().map(|e| if e.is_finite() && e > 0.0 { e } else { free })
}

#[test]
fn arm7_pushing_boxes_soak() {
    let (model, start) = arm7_and_boxes();
    let mut amplitude = amplitudes(&model, 0.0);
    amplitude.rows_mut(7, 12).fill(0.0);
    let end = soak(&model, &start, &amplitude, 1);
    // The arm reached the boxes: they were pushed off their places.
    for a in [7, 14] {
        let moved = (end.q.rows(a, 2) - start.q.rows(a, 2)).norm();
        assert!(moved > 0.01, "box at q[{a}] moved only {moved} m");
    }
}

#[test]
fn humanoid_on_the_ground_soak() {
    let model = humanoid_on_ground();
    soak(&model, &State::neutral(&model), &amplitudes(&model, 0.0), 2);
}

#[test]
fn four_boxes_soak() {
    let model = bodies_on_plane(4, RestingShape::Box);
    soak(&model, &State::neutral(&model), &amplitudes(&model, 5.0), 3);
}

#[test]
fn limited_cartpole_soak() {
    let model = limited_cartpole();
    soak(&model, &State::neutral(&model), &DVector::from_vec(vec![20.0, 0.0]), 4);
}

/// The bare humanoid (no damping, armature or limits) thrown with random joint speeds of
/// ±5 rad/s in zero gravity at dt = 10 ms: a light finger link ends up spinning too fast
/// for the step and the state diverges. The guard stops the step where the speed first
/// exceeds `max_speed`, naming that joint; every state returned before it is bounded.
#[test]
fn a_diverging_state_raises_at_its_step_naming_the_joint() {
    let model = humanoid();
    let options = SimOptions { dt: 1e-2, gravity: Some(stiction::math::Vec3::zeros()), ..Default::default() };
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let mut rng = SplitMix64::new(1);
    let mut state = State::neutral(&model);
    for k in 6..model.nv() {
        state.v[k] = rng.range(-5.0, 5.0);
    }
    let zero = Control::torques(DVector::zeros(model.nv()));
    let error = (0..1000)
        .find_map(|_| match sim.step(&state, &zero) {
            Ok(next) => {
                assert!(next.v.amax() <= IntegratorOptions::DEFAULT_MAX_SPEED);
                state = next;
                None
            }
            Err(e) => Some(e),
        })
        .expect("the bare humanoid at dt = 10 ms diverges within 10 s");
    match error.root() {
        Error::Diverged { joint, dof, value, max_speed } => {
            assert_eq!(*joint, model.dof_name(*dof));
            assert!(joint.contains("_f"), "a finger joint spins up first: {joint}");
            assert!(value.abs() > *max_speed && *max_speed == IntegratorOptions::DEFAULT_MAX_SPEED);
            let message = error.to_string();
            assert!(message.contains(joint.as_str()) && message.contains("reduce dt"), "{message}");
        }
        other => panic!("expected Error::Diverged, got {other}"),
    }
    // The guard can be turned off, and invalid bounds are refused.
    let off = SimOptions {
        integrator: IntegratorOptions { max_speed: f64::INFINITY, ..Default::default() },
        ..SimOptions::default()
    };
    assert!(Simulator::new(model.clone(), off).is_ok());
    for bad in [0.0, -1.0, f64::NAN] {
        let options = SimOptions {
            integrator: IntegratorOptions { max_speed: bad, ..Default::default() },
            ..SimOptions::default()
        };
        assert!(matches!(Simulator::new(model.clone(), options), Err(Error::InvalidInput(_))), "{bad}");
    }
}
