//! Throw a ball so that, after exactly one bounce, it passes through a target point at a
//! given time: Gauss–Newton (Levenberg–Marquardt damped) on the initial linear velocity
//! `v0`, with the 3 × 3 Jacobian `∂p_T/∂v0` of the final ball position from three
//! reverse passes over the recorded rollout (`Tape::backward`, seeded with the point
//! Jacobian rows), or from central finite differences of the rollout (6 rollouts).
//!
//! Run: `cargo run --release --example ball_throw`. Writes the optimised throw to
//! `target/ball_throw.trajectory.json` (`python3 -m stiction.viz` makes it a web page).
//!
//! A 0.2 kg ball (radius 5 cm, restitution 0.7, frictionless; the ground alike) starts
//! 1 m above the ground; the target is (2.0, 0.5, 0.45) m at T = 1 s, after one bounce.
//! Iterates that would bounce twice or not at all are rejected by the step control.
//!
//! The Jacobians are the exact ones of the discrete step (`BounceGradients::Discrete`).
//! They do not see how the bounce time moves with v0 (the discrete bounce happens at a
//! step boundary), so `∂z_T/∂v0_z` is right only where that timing term is small: from
//! the first guess (1, 0, 1) m/s it matches the secant (0.24 vs 0.23), while from a
//! horizontal throw (1, 0, 0) m/s it is 0.05 against a secant of 0.25 and Gauss–Newton
//! stalls 16 cm from the target. See docs/trajopt.md.

#[path = "support/csv.rs"]
mod csv;
use nalgebra::{DVector, Matrix3, Vector3};
use std::time::{Duration, Instant};
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
use stiction::step::BounceGradients;
use stiction::tape::Tape;
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// Time step (s).
pub const DT: f64 = 1e-3;
/// Steps to the target time T = 1 s.
pub const STEPS: usize = 1000;
/// Ball radius (m).
pub const RADIUS: f64 = 0.05;
/// The target point at T.
pub const TARGET: [f64; 3] = [2.0, 0.5, 0.45];
/// Initial ball centre.
pub const START: [f64; 3] = [0.0, 0.0, 1.0];
/// The first guess of the throw velocity.
pub const GUESS: [f64; 3] = [1.0, 0.0, 1.0];

/// Where the Jacobian `∂p_T/∂v0` comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gradients {
    /// Three reverse passes over the recorded rollout (`Tape::backward`).
    Analytic,
    /// Central differences of the rollout in each component of v0 (6 rollouts).
    FiniteDifference,
}

/// What an optimisation achieved.
#[derive(Clone, Debug)]
pub struct Throw {
    /// The optimised initial linear velocity (world frame).
    pub v0: Vec3,
    /// The ball centre at T.
    pub final_position: Vec3,
    /// `|p_T − p*|` per iteration, starting with the guess.
    pub miss_history: Vec<f64>,
    /// Gauss–Newton iterations (Jacobian evaluations).
    pub iterations: usize,
    /// Bounces of the final rollout.
    pub bounces: usize,
    /// Rollouts simulated (trials and differences included).
    pub rollouts: usize,
    /// Wall time.
    pub wall_time: Duration,
}

impl Throw {
    /// The final miss distance `|p_T − p*|`.
    pub fn miss(&self) -> f64 {
        *self.miss_history.last().expect("a miss")
    }
}

/// The ball on a ground plane.
pub fn ball_model() -> stiction::Result<Model> {
    let material = Material::new(0.0, 0.7);
    let mut b = ModelBuilder::new("ball_throw");
    b.add_link(
        Body::massless(WORLD)
            .with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(material)),
    );
    b.add_body(
        WORLD,
        Joint::free("ball_free"),
        Body::new("ball", Inertia::solid_sphere(0.2, RADIUS)).with_collision(
            CollisionShape::new(Geometry::Sphere { radius: RADIUS }, SE3::identity()).with_material(material),
        ),
    );
    Ok(b.build()?)
}

/// The simulator: `dt` = 1 ms, the given bounce treatment of the Jacobians.
pub fn simulator(bounce: BounceGradients) -> stiction::Result<Simulator> {
    let mut options = SimOptions { dt: DT, ..Default::default() };
    options.contact.bounce_gradients = bounce;
    Simulator::new(ball_model()?, options)
}

fn initial_state(v0: &Vec3) -> State {
    let mut q = DVector::zeros(7);
    q.rows_mut(0, 3).copy_from_slice(&START);
    q[3] = 1.0;
    let mut v = DVector::zeros(6);
    // The free joint's velocity is [ω; ṗ]: body angular, world linear velocity.
    v.rows_mut(3, 3).copy_from(v0);
    State { q, v }
}

/// World linear velocity of the ball centre.
fn world_velocity(x: &State) -> Vec3 {
    Vector3::new(x.v[3], x.v[4], x.v[5])
}

/// A rollout from `v0`: final state, number of bounces (the vertical velocity turning
/// from falling to rising), and the tape when `record`.
pub fn throw(sim: &mut Simulator, v0: &Vec3, record: bool) -> stiction::Result<(State, usize, Option<Tape>)> {
    sim.reset_warm_start();
    let mut x = initial_state(v0);
    let mut tape = record.then(Tape::new);
    let mut bounces = 0;
    let control = Control::torques(DVector::zeros(6));
    for _ in 0..STEPS {
        let vz = world_velocity(&x).z;
        let next = match tape.as_mut() {
            Some(t) => {
                let (next, rec) = sim.step_recorded(&x, &control)?;
                t.push(rec)?;
                next
            }
            None => sim.step(&x, &control)?,
        };
        if vz < -0.1 && world_velocity(&next).z > 0.0 {
            bounces += 1;
        }
        x = next;
    }
    Ok((x, bounces, tape))
}

fn position(x: &State) -> Vec3 {
    Vec3::new(x.q[0], x.q[1], x.q[2])
}

/// `∂p_T/∂v0` by three reverse passes: the seed of row k at x_T is the tangent-space
/// gradient of `p_k` (`e_k` on the free joint's linear part: `p(q ⊕ δ) = p + δ_p`).
pub fn analytic_jacobian(tape: &Tape) -> stiction::Result<Matrix3<f64>> {
    let mut jac = Matrix3::zeros();
    for k in 0..3 {
        let mut seed_q = DVector::zeros(6);
        seed_q[3 + k] = 1.0;
        let mut grad_states = vec![(DVector::zeros(6), DVector::zeros(6)); tape.len() + 1];
        grad_states[tape.len()].0 = seed_q;
        let g = tape.backward(&grad_states, &[])?;
        // v0's linear part is the initial world-frame velocity.
        jac.row_mut(k).copy_from(&g.v0.rows(3, 3).transpose());
    }
    Ok(jac)
}

fn fd_jacobian(sim: &mut Simulator, v0: &Vec3, rollouts: &mut usize) -> stiction::Result<Matrix3<f64>> {
    let eps = 1e-6;
    let mut jac = Matrix3::zeros();
    for k in 0..3 {
        let mut plus = *v0;
        plus[k] += eps;
        let mut minus = *v0;
        minus[k] -= eps;
        let pp = position(&throw(sim, &plus, false)?.0);
        let pm = position(&throw(sim, &minus, false)?.0);
        *rollouts += 2;
        jac.column_mut(k).copy_from(&((pp - pm) / (2.0 * eps)));
    }
    Ok(jac)
}

/// Levenberg–Marquardt on `r(v0) = p_T(v0) − p*` until `|r| < tol` (or `max_iterations`).
/// A trial is accepted when `|r|` drops and the rollout bounces exactly once.
pub fn optimise(
    sim: &mut Simulator,
    gradients: Gradients,
    tol: f64,
    max_iterations: usize,
    mut log: impl FnMut(usize, f64, &Vec3),
) -> stiction::Result<Throw> {
    let start = Instant::now();
    let target = Vec3::from_column_slice(&TARGET);
    let mut v0 = Vec3::from_column_slice(&GUESS);
    let (mut x_t, mut bounces, mut tape) = throw(sim, &v0, gradients == Gradients::Analytic)?;
    let mut rollouts = 1;
    let mut r = position(&x_t) - target;
    let mut history = vec![r.norm()];
    let mut lambda = 1e-3;
    let mut iterations = 0;
    while r.norm() >= tol && iterations < max_iterations {
        iterations += 1;
        let jac = match gradients {
            Gradients::Analytic => analytic_jacobian(tape.as_ref().expect("a recorded rollout"))?,
            Gradients::FiniteDifference => fd_jacobian(sim, &v0, &mut rollouts)?,
        };
        let jtj = jac.transpose() * jac;
        let jtr = jac.transpose() * r;
        let mut accepted = false;
        for _ in 0..20 {
            let damped = jtj + Matrix3::from_diagonal(&jtj.diagonal()) * lambda;
            let Some(step) = damped.lu().solve(&-jtr) else {
                lambda *= 10.0;
                continue;
            };
            let trial_v0 = v0 + step;
            let (trial_x, trial_bounces, trial_tape) = throw(sim, &trial_v0, gradients == Gradients::Analytic)?;
            rollouts += 1;
            let trial_r = position(&trial_x) - target;
            if trial_bounces == 1 && trial_r.norm() < r.norm() {
                (v0, x_t, bounces, tape, r) = (trial_v0, trial_x, trial_bounces, trial_tape, trial_r);
                lambda = (lambda / 10.0).max(1e-9);
                accepted = true;
                break;
            }
            lambda *= 10.0;
        }
        history.push(r.norm());
        log(iterations, r.norm(), &v0);
        if !accepted {
            break;
        }
    }
    Ok(Throw {
        v0,
        final_position: position(&x_t),
        miss_history: history,
        iterations,
        bounces,
        rollouts,
        wall_time: start.elapsed(),
    })
}

#[allow(dead_code)]
fn main() -> stiction::Result<()> {
    println!(
        "ball throw: ball r = {RADIUS} m, restitution 0.7, from {START:?} to hit {TARGET:?} at T = {} s after one bounce (dt = {} ms)",
        STEPS as f64 * DT,
        DT * 1e3
    );
    let mut summary = vec![];
    for (label, gradients, bounce) in [
        ("analytic (Tape::backward), discrete bounce Jacobians", Gradients::Analytic, BounceGradients::Discrete),
        ("finite differences", Gradients::FiniteDifference, BounceGradients::Discrete),
    ] {
        println!("{label}:");
        let mut sim = simulator(bounce)?;
        let t = optimise(&mut sim, gradients, 1e-4, 50, |i, miss, v0| {
            println!("    iter {i:2}  miss {miss:.3e} m  v0 = ({:+.4}, {:+.4}, {:+.4}) m/s", v0.x, v0.y, v0.z)
        })?;
        println!(
            "  miss {:.2e} m after {} iterations ({} rollouts, {} bounce), wall time {:.3} s, v0 = ({:+.4}, {:+.4}, {:+.4}) m/s",
            t.miss(),
            t.iterations,
            t.rollouts,
            t.bounces,
            t.wall_time.as_secs_f64(),
            t.v0.x,
            t.v0.y,
            t.v0.z
        );
        if gradients == Gradients::Analytic {
            // The optimised throw, step by step, for the plot.
            sim.reset_warm_start();
            let mut x = initial_state(&t.v0);
            let mut rows = vec![vec![0.0, x.q[0], x.q[1], x.q[2]]];
            let mut states = vec![x.clone()];
            for k in 1..=STEPS {
                x = sim.step(&x, &Control::torques(DVector::zeros(6)))?;
                rows.push(vec![k as f64 * DT, x.q[0], x.q[1], x.q[2]]);
                states.push(x.clone());
            }
            csv::write_csv("ball_throw", "t,x,y,z", &rows, " --xy x,z --xy x,y");
            let target = ("target", TARGET, 0.0);
            csv::write_trajectory("ball_throw", sim.model(), &states, DT, &[target]);
        }
        summary.push((label, t));
    }
    println!("summary:");
    for (label, t) in &summary {
        println!(
            "  {label:<60} miss {:.2e} m  {:2} iterations  {:.3} s",
            t.miss(),
            t.iterations,
            t.wall_time.as_secs_f64()
        );
    }
    Ok(())
}
