//! System identification of the seven link masses of `samples::arm7` from joint-angle
//! trajectories under rich excitation (sums of sines on every joint), noise-free and with
//! 1 mrad of angle noise; analytic sensitivities and finite differences side by side.
//!
//! Run: `cargo run --release --example sysid_arm_masses`.
//!
//! Three 1 s experiments from random configurations at rest (dt = 2 ms, the constraint
//! stage off: no joint limits), joint angles observed every 10 ms. The fit starts with the
//! masses alternately 30 % high and 30 % low. The first experiment as simulated with the
//! masses identified from the noisy data is written to `target/sysid_arm_masses.trajectory.json`
//! (`python3 -m stiction.viz` makes it a web page).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use stiction::math::SplitMix64;
use stiction::model::samples;
use stiction::optim::{JacobianSource, SysIdOptions, SysIdProblem, Trajectory};
use stiction::step::ContactOptions;
use stiction::{Control, Model, SimOptions, Simulator, State};

const NAMES: [&str; 7] =
    ["mass:link1", "mass:link2", "mass:link3", "mass:link4", "mass:link5", "mass:link6", "mass:link7"];

fn data(model: &Model, options: &SimOptions, noise: f64) -> stiction::Result<Vec<Trajectory>> {
    let amp = [12.0, 12.0, 6.0, 6.0, 2.0, 2.0, 1.0];
    let mut noise_rng = SplitMix64::new(11);
    let mut out = vec![];
    for k in 0..3 {
        let mut rng = SplitMix64::new(300 + k);
        let x0 = State { q: model.random_configuration(300 + k) * 0.5, v: DVector::zeros(7) };
        let phase: Vec<f64> = (0..21).map(|_| rng.range(0.0, std::f64::consts::TAU)).collect();
        let controls: Vec<DVector<f64>> = (0..500)
            .map(|t| {
                let s = t as f64 * options.dt;
                DVector::from_fn(7, |i, _| {
                    amp[i]
                        * [1.3, 2.9, 4.7]
                            .iter()
                            .enumerate()
                            .map(|(m, w)| (std::f64::consts::TAU * w * s + phase[3 * i + m]).sin())
                            .sum::<f64>()
                        / 3.0
                })
            })
            .collect();
        let mut sim = Simulator::new(model.clone(), options.clone())?;
        let mut states = vec![x0.clone()];
        for u in &controls {
            let next = sim.step(states.last().expect("a state"), &Control::torques(u.clone()))?;
            states.push(next);
        }
        let sigma = if noise > 0.0 { noise } else { 1e-3 };
        let mut tr = Trajectory::from_states(&x0, controls, &states, 5, sigma, None);
        for o in &mut tr.observed {
            if let Some(q) = o.q.as_mut() {
                q.iter_mut().for_each(|x| *x += noise * noise_rng.normal());
            }
        }
        out.push(tr);
    }
    Ok(out)
}

fn main() -> stiction::Result<()> {
    let model = samples::arm7();
    let options =
        SimOptions { dt: 2e-3, contact: ContactOptions { enabled: false, ..Default::default() }, ..Default::default() };
    let mut summary = vec![];
    let mut losses = vec![];
    let mut identified = None;
    for (label, noise) in [("noise-free", 0.0), ("1 mrad angle noise", 1e-3)] {
        let problem = SysIdProblem::from_names(model.clone(), options.clone(), &NAMES, data(&model, &options, noise)?)?;
        let truth = problem.initial_values();
        let guess = DVector::from_fn(7, |i, _| truth[i] * if i % 2 == 0 { 1.3 } else { 0.7 });
        for source in [JacobianSource::Analytic, JacobianSource::FiniteDifference] {
            println!("\n== arm7 link masses, {label}, {source:?} Jacobians ==");
            let report = problem.fit(&guess, &SysIdOptions { jacobians: source, ..Default::default() }, None)?;
            print!("{report}");
            let mut worst: f64 = 0.0;
            for (i, name) in NAMES.iter().enumerate() {
                let err = 100.0 * (report.theta[i] - truth[i]) / truth[i];
                worst = worst.max(err.abs());
                println!(
                    "  {name:<11} true {:.3} kg  fitted {:.5} ± {:.1e} kg  error {err:+.4} %",
                    truth[i], report.theta[i], report.std_dev[i]
                );
            }
            if noise > 0.0 && source == JacobianSource::Analytic {
                identified = Some(report.model.clone());
            }
            summary.push((label, source, report.iterations, report.wall_time, worst));
            losses.push((
                format!("{}_{source:?}", if noise > 0.0 { "noisy" } else { "noise_free" }),
                report.cost_history,
            ));
        }
    }
    println!("\nsummary:");
    println!("  {:<20} {:<17} {:>5} {:>10} {:>16}", "data", "Jacobians", "iters", "wall [s]", "worst error %");
    for (label, source, it, wall, worst) in summary {
        println!("  {label:<20} {:<17} {it:>5} {:>10.3} {worst:>16.4}", format!("{source:?}"), wall.as_secs_f64());
    }
    csv::write_losses("sysid_arm_masses", &losses);
    if let Some(fitted) = identified {
        csv::write_fitted_trajectory("sysid_arm_masses", &fitted, &options, &data(&model, &options, 0.0)?[0])?;
    }
    Ok(())
}
