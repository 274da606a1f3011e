//! System identification of the seven link masses of `samples::arm7` from joint-angle
//! trajectories under rich excitation (sums of sines on every joint), noise-free and with
//! 1 mrad of angle noise; analytic sensitivities and finite differences side by side.
//!
//! Run: `cargo run --release --example sysid_arm_masses`.
//!
//! Three 1 s experiments from random configurations at rest (dt = 2 ms, the constraint
//! stage off: no joint limits), joint angles observed every 10 ms. The fit starts with the
//! masses alternately 30 % high and 30 % low.

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
    write_losses("sysid_arm_masses", &losses);
    Ok(())
}

/// Writes the cost per iteration of every fit (one column each) to `target/{name}.csv` and
/// prints the command that plots it.
fn write_losses(name: &str, losses: &[(String, Vec<f64>)]) {
    let header = std::iter::once("iteration".to_string()).chain(losses.iter().map(|(n, _)| n.clone()));
    let longest = losses.iter().map(|(_, h)| h.len()).max().unwrap_or(0);
    let rows: Vec<Vec<f64>> = (0..longest)
        .map(|i| {
            std::iter::once(i as f64).chain(losses.iter().map(|(_, h)| h.get(i).copied().unwrap_or(f64::NAN))).collect()
        })
        .collect();
    write_csv(name, &header.collect::<Vec<_>>().join(","), &rows, "");
}

/// Writes `rows` under the CSV `header` to `target/{name}.csv` and prints the command that plots it.
#[allow(dead_code)]
fn write_csv(name: &str, header: &str, rows: &[Vec<f64>], plot_args: &str) {
    let path = std::path::Path::new("target").join(format!("{name}.csv"));
    let mut text = format!("{header}\n");
    for row in rows {
        let cell =
            |x: &f64| if *x != 0.0 && (x.abs() < 1e-4 || x.abs() >= 1e9) { format!("{x:e}") } else { x.to_string() };
        text += &row.iter().map(cell).collect::<Vec<_>>().join(",");
        text.push('\n');
    }
    match std::fs::create_dir_all("target").and_then(|_| std::fs::write(&path, text)) {
        Ok(()) => {
            println!("wrote {}; plot it with", path.display());
            println!("  python3 scripts/plot_example.py {}{plot_args} --out target/{name}.png", path.display());
        }
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}
