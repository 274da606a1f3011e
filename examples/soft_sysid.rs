//! Identification of a soft block's Young's modulus and Poisson's ratio from its observed
//! motion, with Levenberg–Marquardt on the analytic sensitivities of the implicit step,
//! from noise-free positions and with 0.1 mm of position noise.
//!
//! Run: `cargo run --release --example soft_sysid`.
//!
//! A 20 × 10 × 10 cm stable Neo-Hookean block (E = 200 kPa, ν = 0.35, ρ = 1000 kg/m³; 4 × 2 × 2
//! cells, 96 tets) is clamped at x = 0 and released under gravity while a 2 N push acts
//! sideways on its free end; every vertex's position is observed every 25 ms for 0.3 s
//! (dt = 5 ms). The fit starts at E = 100 kPa, ν = 0.25. The motion of the block identified
//! from the noisy data is written to `target/soft_sysid.trajectory.json` (`python3 -m
//! stiction.viz` makes it a web page).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use std::sync::Arc;
use stiction::math::{SplitMix64, Vec3};
use stiction::soft::generate::{box_mesh, vertices_where};
use stiction::soft::{
    identify, rollout, MaterialModel, SoftBody, SoftFitOptions, SoftMaterial, SoftOptions, SoftState, SoftTrajectory,
};

const STEPS: usize = 60;
const EVERY: usize = 5;
const TRUTH: [f64; 2] = [2e5, 0.35];
const GUESS: [f64; 2] = [1e5, 0.25];
const FREE: [&str; 2] = ["youngs_modulus:0", "poisson:0"];

fn block(youngs_modulus: f64, poisson: f64) -> stiction::Result<SoftBody> {
    let mesh = box_mesh([4, 2, 2], Vec3::new(0.2, 0.1, 0.1), Vec3::zeros())?;
    let clamp = vertices_where(&mesh, |p| p.x == 0.0);
    SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, youngs_modulus, poisson, 1000.0))
        .pin_vertices(&clamp)
        .build()
}

fn main() -> stiction::Result<()> {
    run().map(|_| ())
}

/// Runs the example (prints) and returns the fitted `(E, ν)` for each noise level
/// (none, then 0.1 mm).
pub fn run() -> stiction::Result<Vec<[f64; 2]>> {
    let truth = Arc::new(block(TRUTH[0], TRUTH[1])?);
    let options = SoftOptions { dt: 5e-3, ..Default::default() };
    let n = truth.ndof();
    let tip = vertices_where(truth.mesh(), |p| p.x == 0.2);
    let mut push = DVector::zeros(n);
    for &v in &tip {
        push[3 * v + 1] = 2.0 / tip.len() as f64;
    }
    let rest = truth.rest_positions();
    let hold = DVector::from_iterator(truth.pinned_dofs().len(), truth.pinned_dofs().iter().map(|&d| rest[d]));
    let initial = SoftState::rest(&truth);
    let controls = vec![push; STEPS];
    let targets = vec![hold; STEPS];
    let states = rollout(&truth, &initial, &controls, &targets, &options)?.states();
    let guess = block(GUESS[0], GUESS[1])?;
    let mut rng = SplitMix64::new(7);
    let mut fits = Vec::new();
    for noise in [0.0, 1e-4] {
        let observed =
            (EVERY..=STEPS).step_by(EVERY).map(|k| (k, states[k - 1].x.map(|x| x + noise * rng.normal()))).collect();
        let data = SoftTrajectory {
            initial: initial.clone(),
            controls: controls.clone(),
            targets: targets.clone(),
            observed,
            options,
        };
        let fit = identify(&guess, &data, &FREE, &SoftFitOptions::default())?;
        println!(
            "position noise {:.1} mm: {} iterations, cost {:.3e} -> {:.3e}",
            1e3 * noise,
            fit.iterations,
            fit.initial_cost,
            fit.cost
        );
        for (k, name) in FREE.iter().enumerate() {
            println!(
                "  {name:>18}: {:.6e} (truth {:.6e}, start {:.3e}; relative error {:.2e})",
                fit.values[k],
                TRUTH[k],
                GUESS[k],
                (fit.values[k] - TRUTH[k]).abs() / TRUTH[k]
            );
        }
        fits.push([fit.values[0], fit.values[1]]);
    }
    let [e, nu] = fits[fits.len() - 1];
    let fitted = Arc::new(block(e, nu)?);
    let motion = rollout(&fitted, &initial, &controls, &targets, &options)?.states();
    let xs: Vec<&[f64]> = std::iter::once(initial.x.as_slice()).chain(motion.iter().map(|s| s.x.as_slice())).collect();
    let title = "soft sysid: identified block".to_string();
    csv::write_soft_trajectory(
        "soft_sysid",
        &fitted,
        &xs,
        options.dt,
        stiction::viz::SceneOptions { title, ..Default::default() },
    );
    Ok(fits)
}
