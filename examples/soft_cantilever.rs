//! A stable Neo-Hookean cantilever released from straight under gravity: it swings down,
//! rings with the damping, and settles on its static equilibrium; written as a ParaView
//! series and a CSV of the tip height.
//!
//! Run: `cargo run --release --example soft_cantilever`.
//!
//! A 40 × 5 × 5 cm bar (E = 300 kPa, ν = 0.3, ρ = 1000 kg/m³; 8 × 2 × 2 cells, 192 tets),
//! clamped at x = 0, mass damping 3 /s and stiffness damping 5 ms, stepped for 4 s at
//! dt = 5 ms. The program prints Newton's iterations per step, compares the end state
//! with `static_equilibrium` (the settled tip should be within a millimetre of it), and
//! writes `target/soft_cantilever/*.vtu` + `.pvd`, `target/soft_cantilever.csv` and
//! `target/soft_cantilever.trajectory.json` (`python3 -m stiction.viz` makes it a web page).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use std::sync::Arc;
use stiction::math::Vec3;
use stiction::soft::generate::{box_mesh, vertices_where};
use stiction::soft::io::VtkSeries;
use stiction::soft::{
    static_equilibrium, step, MaterialModel, SoftBody, SoftDamping, SoftMaterial, SoftOptions, SoftState,
};
use stiction::viz::SceneOptions;

const DT: f64 = 5e-3;
const STEPS: usize = 800;

/// What the run shows: the tip height after 4 s and at static equilibrium (m), and the
/// mean Newton iterations per step.
pub struct CantileverRun {
    /// Tip height at the end of the run.
    pub settled_tip: f64,
    /// Tip height at `static_equilibrium`.
    pub equilibrium_tip: f64,
    /// Newton iterations per step, on average.
    pub mean_iterations: f64,
}

fn main() -> stiction::Result<()> {
    run().map(|_| ())
}

/// Runs the example (prints, writes the files) and returns what it shows.
pub fn run() -> stiction::Result<CantileverRun> {
    let mesh = box_mesh([8, 2, 2], Vec3::new(0.4, 0.05, 0.05), Vec3::new(0.0, -0.025, -0.025))?;
    let clamp = vertices_where(&mesh, |p| p.x == 0.0);
    let tip = vertices_where(&mesh, |p| p.x == 0.4);
    let body = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 3e5, 0.3, 1000.0))
            .damping(SoftDamping { mass: 3.0, stiffness: 5e-3 })
            .pin_vertices(&clamp)
            .build()?,
    );
    let options = SoftOptions { dt: DT, ..Default::default() };
    let u = DVector::zeros(body.ndof());
    let rest = body.rest_positions();
    let targets = DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| rest[d]));
    let tip_z = |x: &DVector<f64>| tip.iter().map(|&v| x[3 * v + 2]).sum::<f64>() / tip.len() as f64;
    let positions =
        |x: &DVector<f64>| -> Vec<Vec3> { x.as_slice().chunks(3).map(|c| Vec3::new(c[0], c[1], c[2])).collect() };

    let out = std::path::Path::new("target").join("soft_cantilever");
    let mut series = VtkSeries::new(&out, "cantilever")?;
    let mut state = SoftState::rest(&body);
    let mut rows = vec![vec![0.0, tip_z(&state.x), 0.0]];
    let mut iterations = 0;
    let mut xs = vec![state.x.as_slice().to_vec()];
    for k in 0..STEPS {
        let rec = step(&body, &state, &u, &targets, &options)?;
        iterations += rec.report().iterations;
        state = rec.next_state().clone();
        xs.push(state.x.as_slice().to_vec());
        rows.push(vec![(k + 1) as f64 * DT, tip_z(&state.x), rec.report().iterations as f64]);
        if k % 10 == 9 {
            series.push(
                (k + 1) as f64 * DT,
                body.mesh(),
                &positions(&state.x),
                &[],
                &[("velocity", &positions(&state.v))],
            )?;
        }
    }
    let pvd = series.finish()?;
    let (equilibrium, report) = static_equilibrium(&body, &rest, &u, &targets, &SoftOptions::default())?;
    println!(
        "{} tets; {STEPS} steps of {DT} s, {:.2} Newton iterations per step on average",
        body.mesh().num_tets(),
        iterations as f64 / STEPS as f64
    );
    println!(
        "tip height after 4 s: {:.2} mm; static equilibrium: {:.2} mm ({} Newton iterations); difference {:.3} mm",
        1e3 * tip_z(&state.x),
        1e3 * tip_z(&equilibrium),
        report.iterations,
        1e3 * (tip_z(&state.x) - tip_z(&equilibrium)).abs()
    );
    println!("wrote {} (open it in ParaView)", pvd.display());
    csv::write_csv("soft_cantilever", "time,tip_z,newton_iterations", &rows, " --x time --y tip_z");
    let title = "soft cantilever (backward Euler)".to_string();
    csv::write_soft_trajectory("soft_cantilever", &body, &xs, DT, SceneOptions { title, ..Default::default() });
    Ok(CantileverRun {
        settled_tip: tip_z(&state.x),
        equilibrium_tip: tip_z(&equilibrium),
        mean_iterations: iterations as f64 / STEPS as f64,
    })
}
