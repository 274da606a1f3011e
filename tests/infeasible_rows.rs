//! Infeasible constraint sets: rows that no motion can satisfy together. A ball of radius
//! 0.1 m pinched between the ground (z = 0) and a ceiling plane at z = 0.15 m penetrates
//! both by 2.5 cm; the velocity recovery asks it to move up and down at once
//! (`v_z ≥ erp·0.025/h` and `v_z ≤ −erp·0.025/h`), an LCP with no solution. The
//! constraint stage solves it again without the recovery biases
//! (`ConstraintRecord::relaxed`, counted in `SimStats::relaxed_solves`): the ball is held
//! (`v_z⁺ = 0`) and the frictionless planes leave its horizontal motion alone. The step
//! Jacobians of the relaxed step are checked against finite differences in
//! tests/contact_gradients.rs (`ball_pinched`). With the split recovery the velocity
//! stage has no recovery bias and is feasible; its position stage is not, and is dropped
//! (`ConstraintRecord::correction_dropped`).

mod common;

use common::contact::{ball_pinched, DT};
use nalgebra::DVector;
use stiction::step::PenetrationRecovery;
use stiction::{Control, Simulator};

#[test]
fn a_pinched_ball_is_held_and_keeps_its_horizontal_motion() {
    let s = ball_pinched();
    let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
    let (next, rec) = sim.step_recorded(&s.state, &Control::torques(s.tau.clone())).unwrap();
    let c = rec.constraints().expect("two contacts");
    assert_eq!(c.contacts.len(), 2);
    assert!(c.relaxed, "the infeasible LCP was not relaxed: {:?}", c.stats);
    let tolerance = s.options.contact.lcp.tolerance;
    assert!(c.stats.residual <= tolerance, "the relaxed LCP is solved exactly: {:?}", c.stats);
    // Free joint velocity: [ω (rad/s); v (m/s)]. Held vertically, everything else
    // unchanged (no friction, no gravity torque about the centre).
    assert!(next.v[5].abs() <= 1e-12, "v_z⁺ = {}", next.v[5]);
    for k in 0..5 {
        assert!((next.v[k] - s.state.v[k]).abs() <= 1e-12, "v[{k}]: {} → {}", s.state.v[k], next.v[k]);
    }
    assert_eq!(sim.stats().relaxed_solves, 1);
    assert_eq!(sim.stats().inexact_solves, 0);
}

#[test]
fn a_pinched_ball_stays_put_over_a_second() {
    let s = ball_pinched();
    for recovery in [PenetrationRecovery::Velocity, PenetrationRecovery::Split] {
        let mut options = s.options.clone();
        options.contact.penetration = recovery;
        let mut sim = Simulator::new(s.model.clone(), options).unwrap();
        let mut state = s.state.clone();
        state.v = DVector::zeros(6);
        let steps = (1.0 / DT) as u64;
        for k in 0..steps {
            state = sim
                .step(&state, &Control::torques(s.tau.clone()))
                .unwrap_or_else(|e| panic!("{recovery:?} step {k}: {e}"));
        }
        // Neither pushed out through a plane nor launched: the height is unchanged.
        let dz = state.q[2] - s.state.q[2];
        assert!(dz.abs() <= 1e-9, "{recovery:?}: the ball moved by {dz} m");
        assert!(state.v.amax() <= 1e-9, "{recovery:?}: v = {}", state.v.transpose());
        let stats = sim.stats();
        assert_eq!(stats.inexact_solves, 0, "{recovery:?}: {stats:?}");
        assert_eq!(stats.limit_violations, 0, "{recovery:?}: {stats:?}");
        // Velocity: the velocity stage relaxed; split: the position stage dropped.
        assert_eq!(stats.relaxed_solves, steps, "{recovery:?}: {stats:?}");
    }
}

/// The relaxation is a fallback: a feasible penetration (the same ball on the ground
/// alone) keeps its recovery bias and is pushed out.
#[test]
fn a_feasible_penetration_is_not_relaxed() {
    let s = common::contact::ball_pinched_builder(false);
    let mut sim = Simulator::new(s.model.clone(), s.options.clone()).unwrap();
    let (next, rec) = sim.step_recorded(&s.state, &Control::torques(s.tau.clone())).unwrap();
    let c = rec.constraints().expect("one contact");
    assert!(!c.relaxed);
    assert!(next.v[5] > 1.0, "the recovery pushes the ball up: v_z⁺ = {}", next.v[5]);
    assert_eq!(sim.stats().relaxed_solves, 0);
}
