//! Shared by the NCP paper's scene examples (`masonry_arch`, `table_pile`).
#![allow(dead_code)] // each example uses a part

use stiction::solver::ncp::LinearSolve;
use stiction::step::ContactSolver;
use stiction::SimOptions;

/// The paper's time step (h = 1/120 s) with the contact solver named `solver`: `lcp` (the
/// boxed LCP), `ncp` (NCP, direct linear solves to convergence) or `cr` (NCP with
/// `newton_iterations` Newton iterations of 20 conjugate-residual iterations each).
pub fn options(solver: &str, newton_iterations: usize) -> Result<SimOptions, String> {
    let mut options = SimOptions { dt: 1.0 / 120.0, ..Default::default() };
    match solver {
        "lcp" => {}
        "ncp" => options.contact.solver = ContactSolver::Ncp,
        "cr" => {
            options.contact.solver = ContactSolver::Ncp;
            options.contact.ncp.linear = LinearSolve::ConjugateResidual(20);
            options.contact.ncp.max_iterations = newton_iterations;
        }
        other => return Err(format!("unknown solver '{other}' (lcp, ncp or cr)")),
    }
    Ok(options)
}

/// Steps `model` from its neutral configuration at rest, without controls, for `seconds`;
/// every half second (and after the last step) calls `report(t, state, simulator, ms)` with
/// the time of that step in milliseconds; then prints the time per step and the statistics.
pub fn run(
    model: &stiction::Model,
    options: SimOptions,
    seconds: f64,
    mut report: impl FnMut(f64, &stiction::State, &stiction::Simulator, f64),
) -> stiction::Result<()> {
    let dt = options.dt;
    let mut sim = stiction::Simulator::new(model.clone(), options)?;
    let mut state = stiction::State::neutral(model);
    let control = stiction::Control::torques(nalgebra::DVector::zeros(model.nv()));
    let steps = (seconds / dt).round() as usize;
    let every = (0.5 / dt).round() as usize;
    let start = std::time::Instant::now();
    for i in 1..=steps {
        let step_start = std::time::Instant::now();
        state = sim.step(&state, &control)?;
        if i % every == 0 || i == steps {
            report(i as f64 * dt, &state, &sim, step_start.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!("{:.1} ms per step", start.elapsed().as_secs_f64() * 1e3 / steps.max(1) as f64);
    println!("{:?}", sim.stats());
    Ok(())
}
