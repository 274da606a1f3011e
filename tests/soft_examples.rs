//! The soft-body examples as tests: the cantilever settles on its static equilibrium, the
//! identification recovers E and ν (exactly from noise-free data, within a percent with
//! 0.1 mm of noise), the ball dropped on the ground bounces, squashes and creates no
//! energy, and the gripper lifts the soft cube by friction and holds it.
// Each example (its own crate when built as an example) brings `examples/support/csv.rs`;
// included here side by side, the copies are separate modules on purpose.
#![allow(clippy::duplicate_mod)]

#[allow(dead_code)]
#[path = "../examples/soft_ball_drop.rs"]
mod soft_ball_drop;
#[allow(dead_code)]
#[path = "../examples/soft_cantilever.rs"]
mod soft_cantilever;
#[allow(dead_code)]
#[path = "../examples/soft_gripper.rs"]
mod soft_gripper;
#[allow(dead_code)]
#[path = "../examples/soft_sysid.rs"]
mod soft_sysid;

#[test]
fn the_damped_cantilever_settles_on_its_static_equilibrium() {
    let run = soft_cantilever::run().unwrap();
    assert!(run.equilibrium_tip < -0.1, "the bar should sag by a good part of its length: {}", run.equilibrium_tip);
    assert!(
        (run.settled_tip - run.equilibrium_tip).abs() < 1e-4,
        "settled {} vs {}",
        run.settled_tip,
        run.equilibrium_tip
    );
    assert!(run.mean_iterations < 4.0, "{} Newton iterations per step", run.mean_iterations);
}

#[test]
fn identification_recovers_youngs_modulus_and_poisson_ratio() {
    let fits = soft_sysid::run().unwrap();
    let truth = [2e5, 0.35];
    for k in 0..2 {
        assert!((fits[0][k] - truth[k]).abs() <= 1e-6 * truth[k], "noise-free fit {:?}", fits[0]);
        assert!((fits[1][k] - truth[k]).abs() <= 1e-2 * truth[k], "noisy fit {:?}", fits[1]);
    }
}

#[test]
fn the_dropped_ball_bounces_squashes_and_creates_no_energy() {
    let runs = soft_ball_drop::run().unwrap();
    assert_eq!(runs.len(), 2);
    let free_fall = (2.0 * 9.81 * 0.10f64).sqrt();
    for b in &runs {
        let name = b.integrator;
        // It hits at about the free-fall speed (the contact starts within the margin, 5 mm up).
        assert!((b.impact_speed - free_fall).abs() < 0.05 * free_fall, "{name}: impact at {} m/s", b.impact_speed);
        assert!(b.restitution > 0.5 && b.restitution < 1.0, "{name}: restitution {}", b.restitution);
        assert!(b.squash < 0.9, "{name}: the ball should squash visibly, height/width {}", b.squash);
        assert!(b.apex > 0.07, "{name}: the centre of mass rose again to {} m only", b.apex);
        assert!(b.lowest > -2e-3, "{name}: a vertex sank {} m into the ground", b.lowest);
        // Contact and the integrators only take energy out.
        assert!(b.max_energy_increase < 1e-9 * b.energy.0, "{name}: energy grew by {} J", b.max_energy_increase);
        assert!(b.energy.1 < b.energy.0, "{name}: {:?}", b.energy);
    }
    // The implicit midpoint rule damps less than backward Euler.
    assert!(runs[1].restitution > runs[0].restitution, "{runs:?}");
}

#[test]
fn the_gripper_lifts_the_soft_cube_by_friction_and_holds_it() {
    let run = soft_gripper::run().unwrap();
    let raised = run.com_z.1 - run.com_z.0;
    assert!(raised > 0.01, "the cube rose by {raised} m only");
    assert!(raised > 0.9 * run.lift, "the cube rose {raised} m while the gripper rose {} m", run.lift);
    assert!(run.lowest_vertex > 0.01, "the cube still touches the ground: lowest vertex at {}", run.lowest_vertex);
    assert!(run.ground_force == 0.0, "ground force {} N at the end", run.ground_force);
    assert!(run.slip.abs() < 1e-4, "the cube slid {} m in the fingers while held", run.slip);
    assert!(run.final_speed < 1e-3, "the cube still moves at {} m/s", run.final_speed);
    // Held by friction: the pads squeeze with more than the weight over 2μ (μ = 1).
    assert!(run.grip_force > run.weight / 2.0, "grip {} N, weight {} N", run.grip_force, run.weight);
}
