//! A 7-DoF arm (`samples::arm7()`, contact and limits off) reaches a target with its end
//! effector around a spherical obstacle placed on the straight path: iLQR on a sum of a
//! world-space terminal point cost, a smooth obstacle penalty on five link points and a
//! quadratic control/terminal-velocity cost, with analytic or finite-difference Jacobians.
//!
//! Run: `cargo run --release --example arm_reach`.
//!
//! dt = 10 ms, T = 1.5 s (150 steps), torques within ±87 N·m; the initial guess holds the
//! start configuration with gravity-compensating torques.

#[path = "support/csv.rs"]
mod csv;
#[path = "support/progress.rs"]
mod progress;
use nalgebra::DVector;
use std::time::Duration;
use stiction::dynamics::gravity_forces;
use stiction::math::Vec3;
use stiction::model::samples::arm7;
use stiction::optim::{
    ilqr, BodyPoint, ControlBounds, IlqrOptions, IlqrProgress, IlqrStop, JacobianSource, ObstacleCost, PointCost,
    QuadraticCost, SumCost,
};
use stiction::{Data, Model, SimOptions, Simulator, State};

/// Time step (s).
pub const DT: f64 = 0.01;
/// Steps (T = 1.5 s).
pub const STEPS: usize = 150;
/// Obstacle radius (m).
pub const RADIUS: f64 = 0.08;
/// Safety margin of the obstacle penalty (m).
pub const MARGIN: f64 = 0.03;
/// The start configuration.
pub const Q0: [f64; 7] = [0.0, 0.4, 0.0, -1.8, 0.0, 1.6, 0.0];
/// The end-effector point on link 7 (its frame).
pub const TOOL: [f64; 3] = [0.0, 0.0, 0.1];
/// The target's offset from the start end-effector position (m).
pub const OFFSET: [f64; 3] = [-0.1, 0.45, 0.05];

/// What one optimisation achieved.
#[derive(Clone, Debug)]
pub struct Reach {
    /// Distance of the end effector to the target at T.
    pub distance: f64,
    /// Smallest clearance (distance to the sphere's surface) of the penalised points over the trajectory.
    pub min_clearance: f64,
    /// Distance of the end effector to the target at the start.
    pub start_distance: f64,
    /// Iterations.
    pub iterations: usize,
    /// Why iLQR stopped.
    pub stop: IlqrStop,
    /// Wall time.
    pub wall_time: Duration,
    /// Time in the Jacobians.
    pub jacobian_time: Duration,
    /// Initial and final cost.
    pub costs: (f64, f64),
    /// Largest |torque|.
    pub max_torque: f64,
    /// The end-effector position at every state x_0 … x_T.
    pub tool_path: Vec<Vec3>,
    /// The clearance of the penalised points at every state.
    pub clearances: Vec<f64>,
    /// The optimised states x_0 … x_T.
    pub states: Vec<State>,
}

/// The problem: model, start state, target, obstacle centre, the cost and the obstacle term.
pub struct Problem {
    /// The arm.
    pub model: Model,
    /// Start state (at rest).
    pub x0: State,
    /// End-effector target.
    pub target: Vec3,
    /// Obstacle centre (midpoint of start and target).
    pub center: Vec3,
    /// The obstacle term (also measures clearances).
    pub obstacle: ObstacleCost,
    /// The end-effector point.
    pub tool: BodyPoint,
}

/// Builds the problem.
pub fn problem() -> stiction::Result<Problem> {
    let model = arm7();
    let q0 = DVector::from_column_slice(&Q0);
    let tool = BodyPoint::named(&model, "link7", Vec3::from_column_slice(&TOOL))?;
    let p0 = PointCost::terminal(tool, Vec3::zeros(), 1.0)?.position(&model, &q0)?;
    let target = p0 + Vec3::from_column_slice(&OFFSET);
    let center = (p0 + target) / 2.0;
    let mut points = vec![tool];
    for name in ["link4", "link5", "link6", "link7"] {
        points.push(BodyPoint::named(&model, name, Vec3::zeros())?);
    }
    let obstacle = ObstacleCost::new(points, center, RADIUS, MARGIN, 2e3, 2e3)?;
    let x0 = State { q: q0, v: DVector::zeros(model.nv()) };
    Ok(Problem { model, x0, target, center, obstacle, tool })
}

/// Runs iLQR with `jacobians`.
pub fn solve(jacobians: JacobianSource, progress: Option<&mut dyn FnMut(&IlqrProgress)>) -> stiction::Result<Reach> {
    let p = problem()?;
    let model = &p.model;
    let nv = model.nv();
    let reach = PointCost::terminal(p.tool, p.target, 2e3)?;
    let mut qf = vec![0.0; 2 * nv];
    qf[nv..].iter_mut().for_each(|w| *w = 1.0);
    let quad = QuadraticCost::diagonal(model, p.x0.clone(), &vec![0.0; 2 * nv], &vec![1e-3; nv], &qf)?;
    let cost = SumCost::new().with(quad).with(reach.clone()).with(p.obstacle.clone());
    let mut data = Data::new(model);
    let hold = gravity_forces(model, &mut data, p.x0.q.as_slice())?.clone();
    let guess = vec![hold; STEPS];
    let mut options = SimOptions { dt: DT, ..Default::default() };
    options.contact.enabled = false;
    let mut sim = Simulator::new(model.clone(), options)?;
    let bounds = ControlBounds::symmetric(&[87.0; 7]);
    let opts = IlqrOptions { bounds: Some(bounds), jacobians, max_iterations: 200, ..Default::default() };
    let r = ilqr(&mut sim, &p.x0, &guess, &cost, &opts, progress)?;
    let end = reach.position(model, &r.states.last().expect("a state").q)?;
    let clearances =
        r.states.iter().map(|x| p.obstacle.clearance(model, &x.q)).collect::<stiction::Result<Vec<_>>>()?;
    let min_clearance = clearances.iter().copied().fold(f64::INFINITY, f64::min);
    let tool_path = r.states.iter().map(|x| reach.position(model, &x.q)).collect::<stiction::Result<Vec<_>>>()?;
    Ok(Reach {
        distance: (end - p.target).norm(),
        min_clearance,
        start_distance: (reach.position(model, &p.x0.q)? - p.target).norm(),
        iterations: r.iterations,
        stop: r.stop,
        wall_time: r.wall_time,
        jacobian_time: r.jacobian_time,
        costs: (r.cost_history[0], r.cost),
        max_torque: r.controls.iter().map(|u| u.amax()).fold(0.0, f64::max),
        tool_path,
        clearances,
        states: r.states,
    })
}

#[allow(dead_code)]
fn main() -> stiction::Result<()> {
    let p = problem()?;
    println!(
        "arm reach: arm7, T = {} s, dt = {DT} s; target ({:+.3}, {:+.3}, {:+.3}) m, obstacle r = {RADIUS} m (+{MARGIN} m margin) at ({:+.3}, {:+.3}, {:+.3}) m on the straight path",
        STEPS as f64 * DT,
        p.target.x,
        p.target.y,
        p.target.z,
        p.center.x,
        p.center.y,
        p.center.z
    );
    for jacobians in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
        println!("iLQR, {jacobians:?} Jacobians:");
        let mut log = |p: &IlqrProgress| progress::print_ilqr(p, 10);
        let r = solve(jacobians, Some(&mut log))?;
        println!(
            "  {} iterations ({:?}), cost {:.4e} -> {:.4e}, wall time {:.3} s (Jacobians {:.3} s)",
            r.iterations,
            r.stop,
            r.costs.0,
            r.costs.1,
            r.wall_time.as_secs_f64(),
            r.jacobian_time.as_secs_f64()
        );
        println!(
            "  end effector {:.2} mm from the target (started {:.3} m away); minimum obstacle clearance {:+.4} m; max |torque| {:.1} N·m",
            r.distance * 1e3,
            r.start_distance,
            r.min_clearance,
            r.max_torque
        );
        if jacobians == JacobianSource::Analytic {
            let rows: Vec<Vec<f64>> = (r.tool_path.iter().zip(&r.clearances).enumerate())
                .map(|(t, (e, c))| vec![t as f64 * DT, e.x, e.y, e.z, *c])
                .collect();
            csv::write_csv("arm_reach", "t,ee_x,ee_y,ee_z,clearance", &rows, " --xy ee_x,ee_y --xy ee_y,ee_z");
            let (t, c) = (p.target, p.center);
            let markers = [("target", [t.x, t.y, t.z], 0.02), ("obstacle", [c.x, c.y, c.z], RADIUS)];
            csv::write_trajectory("arm_reach", &p.model, &r.states, DT, &markers);
        }
    }
    Ok(())
}
