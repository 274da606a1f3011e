//! Cartpole swing-up by trajectory optimization: iLQR on the analytic step Jacobians,
//! the same with finite-difference Jacobians, and single shooting (L-BFGS).
//!
//! Run: `cargo run --release --example cartpole_swingup`. Writes the iLQR trajectory
//! to `target/cartpole_swingup.csv` (columns t, x, theta, xdot, thetadot, force) and
//! `target/cartpole_swingup.trajectory.json` (`python3 -m stiction.viz` makes it a web page).

#[path = "support/csv.rs"]
mod csv;
#[path = "support/progress.rs"]
mod progress;
use nalgebra::DVector;
use std::f64::consts::PI;
use std::io::Write;
use stiction::model::samples::cartpole;
use stiction::optim::{
    ilqr, shooting, ControlBounds, IlqrOptions, IlqrProgress, JacobianSource, QuadraticCost, ShootingOptions,
};
use stiction::step::ContactOptions;
use stiction::{SimOptions, Simulator, State};

const DT: f64 = 0.02;
const STEPS: usize = 125; // 2.5 s
const FORCE_LIMIT: f64 = 20.0;

fn problem() -> stiction::Result<(Simulator, State, QuadraticCost, ControlBounds)> {
    let model = cartpole();
    let options =
        SimOptions { dt: DT, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    let sim = Simulator::new(model.clone(), options)?;
    let x0 = State::neutral(&model);
    let target = State { q: DVector::from_vec(vec![0.0, PI]), v: DVector::zeros(2) };
    // Running: a light pull toward the goal and a control penalty; terminal: the goal.
    // The pole torque (u[1]) is fixed at zero by its bounds (only the cart is actuated).
    let cost =
        QuadraticCost::diagonal(&model, target, &[0.0, 0.0, 0.0, 0.0], &[1e-2, 1.0], &[100.0, 1000.0, 100.0, 100.0])?;
    let bounds =
        ControlBounds::new(DVector::from_vec(vec![-FORCE_LIMIT, 0.0]), DVector::from_vec(vec![FORCE_LIMIT, 0.0]));
    Ok((sim, x0, cost, bounds))
}

fn summary(label: &str, states: &[State], controls: &[DVector<f64>]) {
    let last = states.last().expect("a trajectory");
    let fmax = controls.iter().map(|u| u[0].abs()).fold(0.0, f64::max);
    println!(
        "  {label}: |theta - pi| = {:.2e} rad, |thetadot| = {:.2e} rad/s, cart x = {:+.3} m, xdot = {:+.3} m/s, max |force| = {:.2} N",
        (last.q[1] - PI).abs(),
        last.v[1].abs(),
        last.q[0],
        last.v[0],
        fmax
    );
}

fn main() -> stiction::Result<()> {
    let (mut sim, x0, cost, bounds) = problem()?;
    let u0 = vec![DVector::zeros(2); STEPS];
    println!("cartpole swing-up: T = {} s, dt = {DT} s, {STEPS} steps, |force| <= {FORCE_LIMIT} N", STEPS as f64 * DT);
    let mut results = Vec::new();
    for source in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
        let options = IlqrOptions { bounds: Some(bounds.clone()), jacobians: source, ..Default::default() };
        let mut log = |p: &IlqrProgress| progress::print_ilqr(p, 10);
        println!("iLQR, {source:?} Jacobians:");
        let r = ilqr(&mut sim, &x0, &u0, &cost, &options, Some(&mut log))?;
        println!(
            "  {} iterations ({:?}), cost {:.4e} -> {:.4e}, wall time {:.3} s (Jacobians {:.3} s, {} evaluations, {} simulator steps)",
            r.iterations,
            r.stop,
            r.cost_history[0],
            r.cost,
            r.wall_time.as_secs_f64(),
            r.jacobian_time.as_secs_f64(),
            r.jacobian_evaluations,
            r.simulator_steps
        );
        summary("final state", &r.states, &r.controls);
        results.push(r);
    }
    let path = std::path::Path::new("target").join("cartpole_swingup.csv");
    if std::fs::create_dir_all("target").is_ok() {
        if let Ok(mut f) = std::fs::File::create(&path) {
            let r = &results[0];
            let _ = writeln!(f, "t,x,theta,xdot,thetadot,force");
            for (t, s) in r.states.iter().enumerate() {
                let force = r.controls.get(t).map_or(f64::NAN, |u| u[0]);
                let _ = writeln!(f, "{},{},{},{},{},{}", t as f64 * DT, s.q[0], s.q[1], s.v[0], s.v[1], force);
            }
            println!("wrote {}; plot it with", path.display());
            println!("  python3 scripts/plot_example.py {} --out target/cartpole_swingup.png", path.display());
        }
    }
    csv::write_trajectory("cartpole_swingup", &cartpole(), &results[0].states, DT, &[]);
    println!("single shooting (L-BFGS, Tape::backward gradients):");
    let options = ShootingOptions { bounds: Some(bounds), max_iterations: 500, ..Default::default() };
    let r = shooting(&mut sim, &x0, &u0, &cost, &options, None)?;
    println!(
        "  {} iterations ({:?}), cost {:.4e} -> {:.4e}, wall time {:.3} s ({} rollouts, {} gradients)",
        r.iterations,
        r.stop,
        r.cost_history[0],
        r.cost,
        r.wall_time.as_secs_f64(),
        r.cost_evaluations,
        r.gradient_evaluations
    );
    summary("final state", &r.states, &r.controls);
    Ok(())
}
