//! The 20-block parabolic arch of the NCP paper (`samples::arch`, μ = 0.6, h = 1/120 s)
//! under a chosen contact solver: prints the largest displacement and rotation of any block
//! every half second, the time per step and the simulator's statistics.
//!
//! ```text
//! cargo run --release --example masonry_arch -- [cr|ncp|lcp] [seconds] [blocks]
//! ```
//!
//! `cr` (the default, 5 s): the NCP solver with 6 Newton iterations of 20 conjugate-residual iterations each
//! (the paper's arch setting). The arch is statically safe (`tests/ncp_paper_scenes.rs`), so
//! any drift is the solver's. Each block's 4-corner joint faces make the constraint
//! system highly redundant (252 rows on 120 degrees of freedom); see docs/ncp.md for what
//! each solver does with it (`ncp` and `lcp` take 0.3 s and 10 s per step).

use stiction::model::samples;
#[path = "support/paper_scenes.rs"]
mod paper_scenes;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let solver = args.get(1).map_or("cr", |s| s.as_str());
    let seconds: f64 = args.get(2).map_or(Ok(5.0), |s| s.parse())?;
    let blocks: usize = args.get(3).map_or(Ok(20), |s| s.parse())?;
    let model = samples::arch(blocks)?;
    let options = paper_scenes::options(solver, 6)?;
    let masses: Vec<String> = model.bodies().iter().map(|b| format!("{:.1}", b.inertia.mass)).collect();
    println!("arch of {blocks} blocks, masses (kg): {}", masses.join(" "));
    paper_scenes::run(&model, options, seconds, |t, state, _, _| {
        // Each free joint's q: translation from the built pose, then the quaternion (w, x, y, z).
        let (mut moved, mut turned) = (0.0_f64, 0.0_f64);
        for k in 0..blocks {
            let q = state.q.rows(7 * k, 7);
            moved = moved.max(q.rows(0, 3).norm());
            turned = turned.max(2.0 * q.rows(4, 3).norm().atan2(q[3]));
        }
        println!(
            "t = {t:.2} s: largest displacement {moved:.2e} m, rotation {turned:.2e} rad, speed {:.2e}",
            state.v.amax()
        );
    })?;
    Ok(())
}
