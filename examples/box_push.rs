//! Push a box to a goal through contact: a sphere pusher on prismatic x/y joints drives a
//! 1 kg box sliding on the ground (Coulomb friction 0.3) to a goal 15 cm away, by iLQR
//! on the exact step Jacobians (the default `ContactGradientStrategy::Exact` mode of the
//! recorded contacts) or on finite-difference Jacobians, with a world-space terminal cost
//! on the box centre (`PointCost`, x and y) plus small control and terminal velocity terms.
//!
//! Run: `cargo run --release --example box_push`. It also runs the push through NCP
//! contact (`ContactSolver::Ncp`: the box's friction as isotropic cones, docs/ncp.md).
//!
//! dt = 10 ms, T = 1.5 s (150 steps), pusher forces within ±10 N, box joint "torques"
//! fixed at zero. The initial control guess pushes +x with 4 N for 0.6 s (the box starts
//! sliding), then nothing; iLQR shapes the push.

#[path = "support/csv.rs"]
mod csv;
#[path = "support/progress.rs"]
mod progress;
use nalgebra::DVector;
use std::time::Duration;
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{Body, CollisionShape, Geometry, Material, WORLD};
use stiction::optim::{
    ilqr, BodyPoint, ControlBounds, IlqrOptions, IlqrProgress, IlqrStop, JacobianSource, PointCost, QuadraticCost,
    SumCost,
};
use stiction::step::ContactSolver;
use stiction::{Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// Time step (s).
pub const DT: f64 = 0.01;
/// Steps (T = 1.5 s).
pub const STEPS: usize = 150;
/// Box half extents (m).
pub const HALF: [f64; 3] = [0.1, 0.1, 0.05];
/// Goal of the box centre in the plane (m); it starts at the origin.
pub const GOAL: [f64; 2] = [0.15, 0.0];
/// Pusher force limit (N).
pub const FORCE_LIMIT: f64 = 10.0;
/// Pusher sphere radius (m).
pub const PUSHER_RADIUS: f64 = 0.04;

/// What one optimisation achieved.
#[derive(Clone, Debug)]
pub struct Push {
    /// Final box centre.
    pub box_position: Vec3,
    /// Planar distance of the box centre to the goal.
    pub goal_error: f64,
    /// Iterations, stop reason, wall time.
    pub iterations: usize,
    /// Why iLQR stopped.
    pub stop: IlqrStop,
    /// Wall time.
    pub wall_time: Duration,
    /// Time in the Jacobians.
    pub jacobian_time: Duration,
    /// Initial and final cost.
    pub costs: (f64, f64),
    /// Largest pusher force.
    pub max_force: f64,
    /// Strictly decreasing cost history.
    pub monotone: bool,
    /// The optimised states x_0 … x_T.
    pub states: Vec<State>,
    /// The optimised controls u_0 … u_{T−1}.
    pub controls: Vec<DVector<f64>>,
}

/// The pusher (x slider and y slider carrying a sphere at the box's mid height) and the box.
pub fn push_model() -> stiction::Result<Model> {
    let h = Vec3::from_column_slice(&HALF);
    let mut b = ModelBuilder::new("box_push");
    b.add_link(
        Body::massless(WORLD).with_collision(
            CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(Material::new(0.3, 0.0)),
        ),
    );
    b.add_body(
        WORLD,
        Joint::prismatic("pusher_x", Vec3::x()).with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, HALF[2]))),
        Body::new("slider", Inertia::solid_sphere(0.5, 0.02)),
    );
    b.add_body(
        "slider",
        Joint::prismatic("pusher_y", Vec3::y()),
        Body::new("pusher", Inertia::solid_sphere(0.5, PUSHER_RADIUS)).with_collision(
            CollisionShape::new(Geometry::Sphere { radius: PUSHER_RADIUS }, SE3::identity())
                .with_material(Material::new(0.3, 0.0)),
        ),
    );
    b.add_body(
        WORLD,
        Joint::free("box_free"),
        Body::new("box", Inertia::solid_box(1.0, h * 2.0)).with_collision(
            CollisionShape::new(Geometry::Box { half_extents: h }, SE3::identity())
                .with_material(Material::new(0.3, 0.0)),
        ),
    );
    Ok(b.build()?)
}

/// The start: pusher 2 cm behind the box's −x face, box resting at the origin.
pub fn initial_state(model: &Model) -> State {
    let mut q = model.neutral();
    q[0] = -HALF[0] - PUSHER_RADIUS - 0.02;
    q[4] = HALF[2] - 1e-4;
    State { q, v: DVector::zeros(model.nv()) }
}

/// The cost: `½·10⁵·|p_box,xy − goal|²` at T, control effort `½·10⁻³|f|²`, terminal
/// velocities `½|v|²`.
pub fn push_cost(model: &Model) -> stiction::Result<SumCost> {
    let nv = model.nv();
    let body = model.body_index("box")?;
    let goal = Vec3::new(GOAL[0], GOAL[1], HALF[2]);
    let point = PointCost::terminal(BodyPoint::new(body, Vec3::zeros()), goal, 1e5)?
        .with_axis_weights(Vec3::new(1.0, 1.0, 0.0))?;
    let mut r = vec![0.0; nv];
    r[0] = 1e-3;
    r[1] = 1e-3;
    let mut qf = vec![0.0; 2 * nv];
    qf[nv..].iter_mut().for_each(|w| *w = 1.0);
    let quad = QuadraticCost::diagonal(model, State::neutral(model), &vec![0.0; 2 * nv], &r, &qf)?;
    Ok(SumCost::new().with(quad).with(point))
}

/// The control guess: +x 4 N for 0.6 s, then zero.
pub fn initial_controls(model: &Model) -> Vec<DVector<f64>> {
    (0..STEPS)
        .map(|t| {
            let mut u = DVector::zeros(model.nv());
            if (t as f64) * DT < 0.6 {
                u[0] = 4.0;
            }
            u
        })
        .collect()
}

/// Runs iLQR with `jacobians` and the default contact solver (the boxed LCP).
pub fn solve(jacobians: JacobianSource, progress: Option<&mut dyn FnMut(&IlqrProgress)>) -> stiction::Result<Push> {
    solve_with(jacobians, ContactSolver::Auto, progress)
}

/// Runs iLQR with `jacobians` and the contact solver `solver` (`ContactSolver::Ncp`: the
/// box's friction as isotropic cones, docs/ncp.md).
pub fn solve_with(
    jacobians: JacobianSource,
    solver: ContactSolver,
    progress: Option<&mut dyn FnMut(&IlqrProgress)>,
) -> stiction::Result<Push> {
    let model = push_model()?;
    let nv = model.nv();
    let x0 = initial_state(&model);
    let cost = push_cost(&model)?;
    let mut lower = vec![0.0; nv];
    let mut upper = vec![0.0; nv];
    for k in 0..2 {
        lower[k] = -FORCE_LIMIT;
        upper[k] = FORCE_LIMIT;
    }
    let bounds = ControlBounds::new(DVector::from_vec(lower), DVector::from_vec(upper));
    let mut options = SimOptions { dt: DT, ..Default::default() };
    options.contact.solver = solver;
    // The box slides and turns on four redundant corners while the pusher drives it: the
    // NCP solver's Newton iteration cycles on some of these steps, and without its
    // Gauss–Seidel fallback (on by default, `NcpSolver::fallback_sweeps`) the rollouts'
    // costs would be noise at the scale of iLQR's line search (docs/ncp.md, "Fallback
    // where Newton's method cycles").
    let mut sim = Simulator::new(model.clone(), options)?;
    let options = IlqrOptions { bounds: Some(bounds), jacobians, max_iterations: 100, ..Default::default() };
    let r = ilqr(&mut sim, &x0, &initial_controls(&model), &cost, &options, progress)?;
    let last = r.states.last().expect("a final state");
    let box_position = Vec3::new(last.q[2], last.q[3], last.q[4]);
    let goal_error = ((box_position.x - GOAL[0]).powi(2) + (box_position.y - GOAL[1]).powi(2)).sqrt();
    let max_force = r.controls.iter().map(|u| u.rows(0, 2).amax()).fold(0.0, f64::max);
    Ok(Push {
        box_position,
        goal_error,
        iterations: r.iterations,
        stop: r.stop,
        wall_time: r.wall_time,
        jacobian_time: r.jacobian_time,
        costs: (r.cost_history[0], r.cost),
        max_force,
        monotone: r.cost_history.windows(2).all(|w| w[1] < w[0]),
        states: r.states,
        controls: r.controls,
    })
}

#[allow(dead_code)]
fn main() -> stiction::Result<()> {
    println!(
        "box push: 1 kg box, friction 0.3, goal ({:.2}, {:.2}) m from the origin, T = {} s, dt = {} s, |force| <= {FORCE_LIMIT} N",
        GOAL[0],
        GOAL[1],
        STEPS as f64 * DT,
        DT
    );
    for (jacobians, solver) in [
        (JacobianSource::Analytic, ContactSolver::Auto),
        (JacobianSource::FiniteDifference, ContactSolver::Auto),
        (JacobianSource::Analytic, ContactSolver::Ncp),
    ] {
        println!("iLQR, {jacobians:?} Jacobians, contact solver {}:", solver.name());
        let mut log = |p: &IlqrProgress| progress::print_ilqr(p, 5);
        let p = solve_with(jacobians, solver, Some(&mut log))?;
        println!(
            "  {} iterations ({:?}), cost {:.4e} -> {:.4e}, wall time {:.3} s (Jacobians {:.3} s)",
            p.iterations,
            p.stop,
            p.costs.0,
            p.costs.1,
            p.wall_time.as_secs_f64(),
            p.jacobian_time.as_secs_f64()
        );
        println!(
            "  box at ({:+.4}, {:+.4}, {:.4}) m: {:.2} mm from the goal; max |force| {:.2} N",
            p.box_position.x,
            p.box_position.y,
            p.box_position.z,
            p.goal_error * 1e3,
            p.max_force
        );
        if jacobians == JacobianSource::Analytic && solver == ContactSolver::Auto {
            let rows: Vec<Vec<f64>> = p
                .states
                .iter()
                .enumerate()
                .map(|(t, x)| {
                    let u = p.controls.get(t).map_or([f64::NAN; 2], |u| [u[0], u[1]]);
                    vec![t as f64 * DT, x.q[2], x.q[3], x.q[0], x.q[1], u[0], u[1]]
                })
                .collect();
            csv::write_csv("box_push", "t,box_x,box_y,pusher_x,pusher_y,force_x,force_y", &rows, "");
            let goal = ("goal", [GOAL[0], GOAL[1], HALF[2]], 0.0);
            csv::write_trajectory("box_push", &push_model()?, &p.states, DT, &[goal]);
        }
    }
    Ok(())
}
