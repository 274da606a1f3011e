//! Trajectory optimization: iLQR swing-up of the cartpole (analytic and
//! finite-difference Jacobians), single shooting and its gradient, cost derivatives on
//! the configuration manifold, and typed errors.

mod common;

use common::ridders;
use nalgebra::{DMatrix, DVector};
use std::f64::consts::PI;
use stiction::model::samples::{all_joint_types, cartpole, pendulum_chain};
use stiction::optim::{
    ilqr, shooting, shooting_gradient, trajectory_cost, ControlBounds, IlqrOptions, IlqrResult, JacobianSource,
    QuadraticCost, ShootingOptions, TrajectoryCost,
};
use stiction::step::ContactOptions;
use stiction::{Error, SimOptions, Simulator, State};

const DT: f64 = 0.02;
const STEPS: usize = 125;

fn sim_for(model: stiction::Model, dt: f64) -> Simulator {
    let options =
        SimOptions { dt, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    Simulator::new(model, options).unwrap()
}

fn cartpole_problem() -> (Simulator, State, QuadraticCost, ControlBounds) {
    let model = cartpole();
    let x0 = State::neutral(&model);
    let target = State { q: DVector::from_vec(vec![0.0, PI]), v: DVector::zeros(2) };
    let cost =
        QuadraticCost::diagonal(&model, target, &[0.0; 4], &[1e-2, 1.0], &[100.0, 1000.0, 100.0, 100.0]).unwrap();
    let bounds = ControlBounds::new(DVector::from_vec(vec![-20.0, 0.0]), DVector::from_vec(vec![20.0, 0.0]));
    (sim_for(model, DT), x0, cost, bounds)
}

fn swing_up(source: JacobianSource) -> IlqrResult {
    let (mut sim, x0, cost, bounds) = cartpole_problem();
    let options = IlqrOptions { bounds: Some(bounds), jacobians: source, ..Default::default() };
    let mut calls = 0;
    let mut last_cost = f64::INFINITY;
    let mut log = |p: &stiction::optim::IlqrProgress| {
        calls += 1;
        assert!(p.cost <= last_cost, "reported cost rose at iteration {}", p.iteration);
        last_cost = p.cost;
    };
    let r = ilqr(&mut sim, &x0, &vec![DVector::zeros(2); STEPS], &cost, &options, Some(&mut log)).unwrap();
    assert_eq!(calls, r.iterations, "one progress report per iteration");
    r
}

fn check_upright(r: &IlqrResult) {
    let last = r.states.last().unwrap();
    assert_eq!(r.states.len(), STEPS + 1);
    assert!(r.converged, "stopped by {:?}", r.stop);
    assert!(r.iterations <= 200, "{} iterations", r.iterations);
    assert!((last.q[1] - PI).abs() < 0.05, "final theta {}", last.q[1]);
    assert!(last.v[1].abs() < 0.1, "final thetadot {}", last.v[1]);
    for w in r.cost_history.windows(2) {
        assert!(w[1] < w[0], "cost did not decrease: {} -> {}", w[0], w[1]);
    }
    // Only the cart is actuated, within its force limit.
    for u in &r.controls {
        assert_eq!(u[1], 0.0);
        assert!(u[0].abs() <= 20.0);
    }
}

#[test]
fn ilqr_swings_the_cartpole_up() {
    let r = swing_up(JacobianSource::Analytic);
    check_upright(&r);
    assert_eq!(r.jacobian_evaluations % STEPS, 0);
    // The result is the simulated trajectory of its controls.
    let (mut sim, x0, cost, _) = cartpole_problem();
    let again = trajectory_cost(&mut sim, &x0, &r.controls, &cost).unwrap();
    assert!((again - r.cost).abs() <= 1e-9 * r.cost, "{again} vs {}", r.cost);
}

#[test]
fn ilqr_with_finite_difference_jacobians_reaches_the_same_result() {
    let a = swing_up(JacobianSource::Analytic);
    let f = swing_up(JacobianSource::FiniteDifference);
    check_upright(&f);
    let (qa, qf) = (&a.states.last().unwrap().q, &f.states.last().unwrap().q);
    assert!((qa - qf).amax() < 1e-3, "final configurations differ: {qa} vs {qf}");
    assert!((a.cost - f.cost).abs() < 1e-4 * a.cost, "costs {} vs {}", a.cost, f.cost);
    assert!(f.simulator_steps > a.simulator_steps);
}

#[test]
fn ilqr_respects_tight_control_bounds() {
    let (mut sim, x0, cost, _) = cartpole_problem();
    let bounds = ControlBounds::new(DVector::from_vec(vec![-3.0, 0.0]), DVector::from_vec(vec![3.0, 0.0]));
    let options = IlqrOptions { bounds: Some(bounds), max_iterations: 60, ..Default::default() };
    let r = ilqr(&mut sim, &x0, &vec![DVector::from_vec(vec![10.0, 5.0]); STEPS], &cost, &options, None).unwrap();
    assert!(r.controls.iter().all(|u| u[0].abs() <= 3.0 && u[1] == 0.0));
    assert!(r.controls.iter().any(|u| u[0].abs() == 3.0), "the tight bound should be active somewhere");
    assert!(r.cost < 0.5 * r.cost_history[0], "cost {} from {}", r.cost, r.cost_history[0]);
    for w in r.cost_history.windows(2) {
        assert!(w[1] < w[0]);
    }
}

/// A pendulum swung to a horizontal position in 0.6 s.
fn pendulum_problem() -> (Simulator, State, QuadraticCost, Vec<DVector<f64>>) {
    let model = pendulum_chain(1, 0.5, 1.0);
    let x0 = State::neutral(&model);
    let target = State { q: DVector::from_element(1, PI / 2.0), v: DVector::zeros(1) };
    let cost = QuadraticCost::diagonal(&model, target, &[1.0, 0.1], &[1e-3], &[50.0, 5.0]).unwrap();
    let u0: Vec<DVector<f64>> = (0..30).map(|t| DVector::from_element(1, 0.5 * (0.3 * t as f64).sin())).collect();
    (sim_for(model, DT), x0, cost, u0)
}

#[test]
fn shooting_gradient_matches_finite_differences_of_the_cost() {
    let (mut sim, x0, cost, u0) = pendulum_problem();
    let (j, grad) = shooting_gradient(&mut sim, &x0, &u0, &cost).unwrap();
    assert!((j - trajectory_cost(&mut sim, &x0, &u0, &cost).unwrap()).abs() < 1e-12 * j);
    let mut worst: f64 = 0.0;
    for t in 0..u0.len() {
        let f = |e: f64| {
            let mut us = u0.clone();
            us[t][0] += e;
            let mut s = sim_for(pendulum_chain(1, 0.5, 1.0), DT);
            DVector::from_element(1, trajectory_cost(&mut s, &x0, &us, &cost).unwrap())
        };
        let (d, _) = ridders(&f, 1e-2);
        let err = (grad[t][0] - d[0]).abs() / d[0].abs().max(1e-3);
        assert!(err < 1e-6, "dJ/du[{t}]: analytic {} vs FD {} (rel err {err:e})", grad[t][0], d[0]);
        worst = worst.max(err);
    }
    println!("worst relative error of dJ/du: {worst:e}");
}

#[test]
fn shooting_reduces_the_cost_of_a_pendulum_swing() {
    let (mut sim, x0, cost, u0) = pendulum_problem();
    let options = ShootingOptions { max_iterations: 100, ..Default::default() };
    let r = shooting(&mut sim, &x0, &u0, &cost, &options, None).unwrap();
    for w in r.cost_history.windows(2) {
        assert!(w[1] <= w[0], "cost rose: {} -> {}", w[0], w[1]);
    }
    assert!(r.cost < 0.5 * r.cost_history[0], "cost {} from {}", r.cost, r.cost_history[0]);
    // iLQR on the same problem: shooting gets within 1e-4 of its cost.
    let il = ilqr(&mut sim, &x0, &u0, &cost, &IlqrOptions::default(), None).unwrap();
    println!(
        "shooting {} iterations, cost {} -> {}; iLQR {} iterations, cost {}",
        r.iterations, r.cost_history[0], r.cost, il.iterations, il.cost
    );
    assert!(r.cost <= il.cost * (1.0 + 1e-4), "shooting {} vs iLQR {}", r.cost, il.cost);
    assert!(il.cost <= r.cost * (1.0 + 1e-6), "iLQR {} vs shooting {}", il.cost, r.cost);
    let last = r.states.last().unwrap();
    assert!((last.q[0] - PI / 2.0).abs() < 0.2, "final angle {}", last.q[0]);
    // Bounds by projection.
    let options =
        ShootingOptions { max_iterations: 50, bounds: Some(ControlBounds::symmetric(&[1.0])), ..Default::default() };
    let b = shooting(&mut sim, &x0, &u0, &cost, &options, None).unwrap();
    assert!(b.controls.iter().all(|u| u[0].abs() <= 1.0));
    assert!(b.cost < b.cost_history[0]);
}

#[test]
fn quadratic_cost_gradients_live_in_the_tangent_space() {
    // A model with free and spherical joints: ∂ℓ/∂x by Ridders along q ⊕ ε eᵢ and v + ε eᵢ.
    let model = all_joint_types();
    let nv = model.nv();
    let target = State { q: model.random_configuration(3), v: DVector::from_fn(nv, |i, _| 0.1 * i as f64) };
    let x = State { q: model.random_configuration(4), v: DVector::from_fn(nv, |i, _| (i as f64).sin()) };
    let u = DVector::from_fn(nv, |i, _| (i as f64 * 0.7).cos());
    let w = DMatrix::from_fn(2 * nv, 2 * nv, |i, j| if i == j { 1.0 + 0.1 * i as f64 } else { 0.0 });
    let r = DMatrix::from_diagonal(&DVector::from_fn(nv, |i, _| 0.5 + 0.05 * i as f64));
    let cost = QuadraticCost::new(&model, target, w.clone(), r, w * 2.0).unwrap();
    let d = cost.running_derivatives(&model, 0, &x, &u).unwrap();
    let dt = cost.terminal_derivatives(&model, &x).unwrap();
    assert!((d.value - cost.running(&model, 0, &x, &u).unwrap()).abs() < 1e-12);
    for i in 0..2 * nv {
        let perturbed = |e: f64| {
            let mut xs = x.clone();
            if i < nv {
                let mut dir = DVector::zeros(nv);
                dir[i] = 1.0;
                xs.q = model.integrate(&x.q, &dir, e).unwrap();
            } else {
                xs.v[i - nv] += e;
            }
            xs
        };
        let (fd, _) = ridders(&|e| DVector::from_element(1, cost.running(&model, 0, &perturbed(e), &u).unwrap()), 1e-2);
        assert!((d.lx[i] - fd[0]).abs() < 1e-7 * fd[0].abs().max(1.0), "dl/dx[{i}]: {} vs {}", d.lx[i], fd[0]);
        let (fd, _) = ridders(&|e| DVector::from_element(1, cost.terminal(&model, &perturbed(e)).unwrap()), 1e-2);
        assert!((dt.lx[i] - fd[0]).abs() < 1e-7 * fd[0].abs().max(1.0), "dlT/dx[{i}]: {} vs {}", dt.lx[i], fd[0]);
    }
    for i in 0..nv {
        let (fd, _) = ridders(
            &|e| {
                let mut us = u.clone();
                us[i] += e;
                DVector::from_element(1, cost.running(&model, 0, &x, &us).unwrap())
            },
            1e-2,
        );
        assert!((d.lu[i] - fd[0]).abs() < 1e-8 * fd[0].abs().max(1.0));
    }
}

#[test]
fn bad_inputs_give_typed_errors() {
    let (mut sim, x0, cost, bounds) = cartpole_problem();
    let u = vec![DVector::zeros(2); 10];
    let opts = IlqrOptions::default();
    let sopts = ShootingOptions::default();
    // Wrong control length.
    let mut bad = u.clone();
    bad[3] = DVector::zeros(3);
    assert!(matches!(ilqr(&mut sim, &x0, &bad, &cost, &opts, None), Err(Error::Dimension { .. })));
    assert!(matches!(shooting(&mut sim, &x0, &bad, &cost, &sopts, None), Err(Error::Dimension { .. })));
    // NaN control and state.
    let mut bad = u.clone();
    bad[2][0] = f64::NAN;
    assert!(matches!(ilqr(&mut sim, &x0, &bad, &cost, &opts, None), Err(Error::NonFinite { .. })));
    let mut x_nan = x0.clone();
    x_nan.v[1] = f64::NAN;
    assert!(matches!(ilqr(&mut sim, &x_nan, &u, &cost, &opts, None), Err(Error::NonFinite { .. })));
    assert!(matches!(shooting_gradient(&mut sim, &x_nan, &u, &cost), Err(Error::NonFinite { .. })));
    // Wrong state length.
    let x_short = State { q: DVector::zeros(1), v: DVector::zeros(2) };
    assert!(matches!(ilqr(&mut sim, &x_short, &u, &cost, &opts, None), Err(Error::Dimension { .. })));
    // No controls.
    assert!(matches!(ilqr(&mut sim, &x0, &[], &cost, &opts, None), Err(Error::InvalidInput(_))));
    assert!(matches!(shooting(&mut sim, &x0, &[], &cost, &sopts, None), Err(Error::InvalidInput(_))));
    // Bad options.
    for o in [
        IlqrOptions { max_iterations: 0, ..Default::default() },
        IlqrOptions { line_search_factor: 1.5, ..Default::default() },
        IlqrOptions { regularization_init: f64::NAN, ..Default::default() },
        IlqrOptions { fd_step: 0.0, ..Default::default() },
    ] {
        assert!(matches!(ilqr(&mut sim, &x0, &u, &cost, &o, None), Err(Error::InvalidInput(_))), "{o:?}");
    }
    for o in
        [ShootingOptions { memory: 0, ..Default::default() }, ShootingOptions { armijo: 0.0, ..Default::default() }]
    {
        assert!(matches!(shooting(&mut sim, &x0, &u, &cost, &o, None), Err(Error::InvalidInput(_))), "{o:?}");
    }
    // Bad bounds.
    let crossed = ControlBounds::new(DVector::from_vec(vec![1.0, 0.0]), DVector::from_vec(vec![-1.0, 0.0]));
    let o = IlqrOptions { bounds: Some(crossed), ..Default::default() };
    assert!(matches!(ilqr(&mut sim, &x0, &u, &cost, &o, None), Err(Error::InvalidInput(_))));
    let short = ControlBounds::symmetric(&[1.0]);
    let o = ShootingOptions { bounds: Some(short), ..Default::default() };
    assert!(matches!(shooting(&mut sim, &x0, &u, &cost, &o, None), Err(Error::Dimension { .. })));
    let _ = bounds;
    // A cost built for another model.
    let other = pendulum_chain(3, 0.5, 1.0);
    let cost3 = QuadraticCost::diagonal(&other, State::neutral(&other), &[1.0; 6], &[1.0; 3], &[1.0; 6]).unwrap();
    assert!(matches!(ilqr(&mut sim, &x0, &u, &cost3, &opts, None), Err(Error::InvalidInput(_))));
    // Bad cost weights.
    let model = cartpole();
    let t = State::neutral(&model);
    assert!(QuadraticCost::diagonal(&model, t.clone(), &[1.0; 3], &[1.0; 2], &[1.0; 4]).is_err());
    let asym = DMatrix::from_fn(4, 4, |i, j| (i * 4 + j) as f64);
    let r = QuadraticCost::new(&model, t.clone(), asym, DMatrix::identity(2, 2), DMatrix::identity(4, 4));
    assert!(matches!(r, Err(Error::InvalidInput(_))));
    let mut nan = DMatrix::identity(2, 2);
    nan[(0, 0)] = f64::NAN;
    let r = QuadraticCost::new(&model, t, DMatrix::identity(4, 4), nan, DMatrix::identity(4, 4));
    assert!(matches!(r, Err(Error::InvalidInput(_))));
}

#[test]
fn ilqr_steers_a_ball_joint_pendulum_on_the_manifold() {
    // A pendulum on a spherical joint (quaternion coordinates) driven to a tilted
    // orientation at rest: deviations, costs and Jacobians all live in the tangent space.
    use stiction::math::{Inertia, Mat3, Vec3};
    use stiction::model::WORLD;
    use stiction::{Body, Joint, ModelBuilder};
    let mut b = ModelBuilder::new("ball_pendulum");
    // A bob with a well-conditioned inertia (a thin rod's tiny spin inertia makes the
    // problem stiff about its axis).
    let bob = Inertia::from_com(1.0, Vec3::new(0.0, 0.0, -0.3), Mat3::identity() * 0.01);
    b.add_body(WORLD, Joint::spherical("ball"), Body::new("bob", bob));
    let model = b.build().unwrap();
    let tilt = DVector::from_vec(vec![0.6, -0.4, 0.3]);
    let q_goal = model.integrate(&model.neutral(), &tilt, 1.0).unwrap();
    let target = State { q: q_goal.clone(), v: DVector::zeros(3) };
    let cost = QuadraticCost::diagonal(&model, target, &[0.0; 6], &[1e-3; 3], &[100.0; 6]).unwrap();
    let mut sim = sim_for(model.clone(), DT);
    let x0 = State::neutral(&model);
    for source in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
        let options = IlqrOptions { jacobians: source, ..Default::default() };
        let r = ilqr(&mut sim, &x0, &vec![DVector::zeros(3); 40], &cost, &options, None).unwrap();
        let last = r.states.last().unwrap();
        let err = model.difference(&q_goal, &last.q).unwrap();
        println!("{source:?}: {} iterations, cost {}, |error| {:e}", r.iterations, r.cost, err.amax());
        assert!(r.converged, "{source:?}: stopped by {:?}", r.stop);
        assert!(err.amax() < 0.02 && last.v.amax() < 0.05, "{source:?}: error {err} velocity {}", last.v);
        for w in r.cost_history.windows(2) {
            assert!(w[1] < w[0]);
        }
    }
}
