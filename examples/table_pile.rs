//! The table pile of the NCP paper (`samples::table_pile`: tables of 4.7 kg, a top on four
//! legs, μ = 0.7, h = 1/120 s) under a chosen contact solver: every half second prints the
//! contacts, the deepest penetration, how far the tables moved in that half second, the
//! largest speed and the time of the last step; then the time per step and the statistics.
//!
//! ```text
//! cargo run --release --example table_pile -- [cr|ncp|lcp] [seconds] [tables] [seed]
//! ```
//!
//! `cr` (the default): the NCP solver with 4 Newton iterations of 20 conjugate-residual
//! iterations each, the paper's setting for this scene.

use stiction::model::samples;
#[path = "support/paper_scenes.rs"]
mod paper_scenes;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let solver = args.get(1).map_or("cr", |s| s.as_str());
    let seconds: f64 = args.get(2).map_or(Ok(10.0), |s| s.parse())?;
    let tables: usize = args.get(3).map_or(Ok(54), |s| s.parse())?;
    let seed: u64 = args.get(4).map_or(Ok(1), |s| s.parse())?;
    let model = samples::table_pile(tables, seed);
    let options = paper_scenes::options(solver, 4)?;
    let mut last_report = model.neutral();
    paper_scenes::run(&model, options, seconds, |t, state, sim, took| {
        let record = sim.last_constraints();
        let contacts = record.map_or(0, |r| r.contacts.len());
        let deepest = record.map_or(0.0, |r| r.contacts.iter().map(|c| c.geometry.distance).fold(0.0, f64::min));
        let moved =
            (0..tables).map(|k| (state.q.rows(7 * k, 3) - last_report.rows(7 * k, 3)).norm()).fold(0.0, f64::max);
        last_report = state.q.clone();
        println!(
            "t = {t:.1} s: {contacts} contacts, deepest {deepest:.1e} m, moved {moved:.1e} m, speed {:.1e}, step {took:.0} ms",
            state.v.amax()
        );
    })?;
    Ok(())
}
