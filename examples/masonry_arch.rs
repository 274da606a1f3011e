//! The 20-block parabolic arch of the NCP paper (`samples::arch`, μ = 0.6, h = 1/120 s)
//! under a chosen contact solver: prints the largest displacement and rotation of any block
//! every half second, the time per step and the simulator's statistics.
//!
//! ```text
//! cargo run --release --example masonry_arch -- [lcp|ncp|cr] [seconds] [blocks]
//! ```
//!
//! `cr`: the NCP solver with 6 Newton iterations of 20 conjugate-residual iterations each
//! (the paper's arch setting). The arch is statically safe (`tests/masonry_arch.rs`), so
//! any drift is the solver's. Each block's 4-corner joint faces make the constraint
//! system highly redundant (252 rows on 120 degrees of freedom); see docs/ncp.md for what
//! each solver does with it.

use nalgebra::DVector;
use stiction::model::samples;
use stiction::solver::ncp::LinearSolve;
use stiction::step::ContactSolver;
use stiction::{Control, SimOptions, Simulator, State};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let solver = args.get(1).map_or("lcp", |s| s.as_str());
    let seconds: f64 = args.get(2).map_or(Ok(0.5), |s| s.parse())?;
    let blocks: usize = args.get(3).map_or(Ok(20), |s| s.parse())?;
    let model = samples::arch(blocks)?;
    let mut options = SimOptions { dt: 1.0 / 120.0, ..Default::default() };
    match solver {
        "lcp" => {}
        "ncp" => options.contact.solver = ContactSolver::Ncp,
        "cr" => {
            options.contact.solver = ContactSolver::Ncp;
            options.contact.ncp.linear = LinearSolve::ConjugateResidual(20);
            options.contact.ncp.max_iterations = 6;
        }
        other => return Err(format!("unknown solver '{other}' (lcp, ncp or cr)").into()),
    }
    let masses: Vec<String> = model.bodies().iter().map(|b| format!("{:.1}", b.inertia.mass)).collect();
    println!("arch of {blocks} blocks, masses (kg): {}", masses.join(" "));
    let dt = options.dt;
    let mut sim = Simulator::new(model.clone(), options)?;
    let mut state = State::neutral(&model);
    let control = Control::torques(DVector::zeros(model.nv()));
    let steps = (seconds / dt).round() as usize;
    let report_every = (0.5 / dt).round() as usize;
    let start = std::time::Instant::now();
    for i in 1..=steps {
        state = sim.step(&state, &control)?;
        if i % report_every == 0 || i == steps {
            // Each free joint's q: translation from the built pose, then the quaternion (w, x, y, z).
            let (mut moved, mut turned) = (0.0_f64, 0.0_f64);
            for k in 0..blocks {
                let q = state.q.rows(7 * k, 7);
                moved = moved.max(q.rows(0, 3).norm());
                turned = turned.max(2.0 * q.rows(4, 3).norm().atan2(q[3]));
            }
            println!(
                "t = {:.2} s: largest displacement {moved:.2e} m, rotation {turned:.2e} rad, speed {:.2e}",
                i as f64 * dt,
                state.v.amax()
            );
        }
    }
    println!("{:.1} ms per step", start.elapsed().as_secs_f64() * 1e3 / steps.max(1) as f64);
    println!("{:?}", sim.stats());
    Ok(())
}
