//! Elastic two-ball collision (equal masses, restitution 1, head-on): over a rollout
//! whose impact falls inside a step, the gradient of the final positions with respect
//! to the initial positions matches the continuous-time closed form (the balls
//! exchange velocities, so ∂x₁,f/∂x₂,₀ = 1, ∂x₁,f/∂x₁,₀ = 0, ∂x₂,f/∂x₁,₀ = 1,
//! ∂x₂,f/∂x₂,₀ = 0) with the DiffDART §6 bounce treatment; the discrete Jacobians
//! instead give the (correct for the discrete map) identity.

use nalgebra::DVector;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
use stiction::step::{BounceGradients, ContactOptions};
use stiction::tape::Tape;
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const R: f64 = 0.1;

fn two_balls() -> Model {
    let mut b = ModelBuilder::new("two_balls");
    b.gravity(Vec3::zeros());
    for name in ["ball1", "ball2"] {
        let shape =
            CollisionShape::new(Geometry::Sphere { radius: R }, SE3::identity()).with_material(Material::new(0.0, 1.0));
        b.add_body(
            WORLD,
            Joint::free(format!("{name}_free")),
            Body::new(name, Inertia::solid_sphere(1.0, R)).with_collision(shape),
        );
    }
    b.build().unwrap()
}

/// d(x₁,f, x₂,f)/d(x₁,₀, x₂,₀) through the tape, as [[∂x₁f/∂x₁₀, ∂x₁f/∂x₂₀], [∂x₂f/∂x₁₀, ∂x₂f/∂x₂₀]],
/// and the number of steps with a bounce.
fn position_gradients(bounce: BounceGradients, gap: f64, steps: usize) -> ([[f64; 2]; 2], usize) {
    let model = two_balls();
    let options = SimOptions {
        dt: 1e-3,
        contact: ContactOptions { bounce_gradients: bounce, ..Default::default() },
        ..Default::default()
    };
    let mut sim = Simulator::new(model.clone(), options).unwrap();
    let mut q = model.neutral();
    q[0] = 0.0;
    q[7] = 2.0 * R + gap;
    let mut v = DVector::zeros(12);
    v[3] = 1.0;
    v[9] = -1.0;
    let mut state = State { q, v };
    let mut tape = Tape::new();
    let mut bounces = 0;
    for _ in 0..steps {
        let (next, rec) = sim.step_recorded(&state, &Control::torques(DVector::zeros(12))).unwrap();
        bounces += rec.constraints().map_or(0, |c| c.info.iter().filter(|i| i.bounce).count());
        tape.push(rec);
        state = next;
    }
    assert!(state.v[3] < -0.99 && state.v[9] > 0.99, "the balls exchanged velocities: {}", state.v);
    let mut out = [[0.0; 2]; 2];
    for (i, index) in [3usize, 9].into_iter().enumerate() {
        let mut grads = vec![(DVector::zeros(12), DVector::zeros(12)); steps + 1];
        grads[steps].0[index] = 1.0;
        let g = tape.backward(&grads, &[]).unwrap();
        out[i] = [g.q0[3], g.q0[9]];
    }
    (out, bounces)
}

#[test]
fn elastic_two_ball_gradients_match_the_continuous_time_answer() {
    // The balls close 2 mm per step; the impact falls inside a step for each gap.
    for gap in [0.0105, 0.0111, 0.0127] {
        let (g, bounces) = position_gradients(BounceGradients::ContinuousTime, gap, 20);
        assert_eq!(bounces, 1, "one bouncing step");
        let expected = [[0.0, 1.0], [1.0, 0.0]];
        for i in 0..2 {
            for j in 0..2 {
                assert!((g[i][j] - expected[i][j]).abs() <= 0.01, "gap {gap}: {g:?} vs {expected:?}");
            }
        }
    }
}

#[test]
fn discrete_bounce_gradients_are_those_of_the_discrete_map() {
    // Shifting either ball shifts the step of impact's positions rigidly: the discrete
    // map's derivative is the identity (what finite differences of the simulator see).
    let (g, _) = position_gradients(BounceGradients::Discrete, 0.0111, 20);
    assert!((g[0][0] - 1.0).abs() < 1e-9 && g[0][1].abs() < 1e-9, "{g:?}");
    assert!((g[1][1] - 1.0).abs() < 1e-9 && g[1][0].abs() < 1e-9, "{g:?}");
}
