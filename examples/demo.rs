//! The stiction demo: a tour of the contact-free core.
//!
//! 1. A double pendulum swings for 10 s; total energy is printed as it goes.
//! 2. A 7-DoF arm tracks a joint-space sine with computed-torque control
//!    (τ = M(q)(q̈_d + K_d ė + K_p e) + c(q, v), from CRBA and RNEA).
//! 3. A free body tumbles for 10 s; its kinetic energy and angular momentum stay put.
//!
//! Run: `cargo run --release --example demo`. Writes the three motions (every 10 ms) to
//! `target/demo_pendulum.trajectory.json`, `target/demo_arm.trajectory.json` and
//! `target/demo_brick.trajectory.json` (`python3 -m stiction.viz` makes them web pages).

#[path = "support/csv.rs"]
mod csv;
use nalgebra::DVector;
use std::time::Instant;
use stiction::dynamics::{bias_forces, crba, kinetic_energy, momentum, potential_energy};
use stiction::math::{Inertia, Mat3, Vec3};
use stiction::model::samples::{arm7, pendulum_chain};
use stiction::{Body, Control, Data, ModelBuilder, SimOptions, Simulator, State};

fn main() -> Result<(), stiction::Error> {
    // 1. Double pendulum.
    let model = pendulum_chain(2, 1.0, 1.0);
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: 1e-4, ..Default::default() })?;
    let mut data = Data::new(&model);
    let mut s = State { q: DVector::from_vec(vec![1.2, -0.6]), v: DVector::zeros(2) };
    let energy = |d: &mut Data, s: &State| -> Result<f64, stiction::Error> {
        Ok(kinetic_energy(&model, d, s.q.as_slice(), s.v.as_slice())? + potential_energy(&model, d, s.q.as_slice())?)
    };
    let e0 = energy(&mut data, &s)?;
    let rest = potential_energy(&model, &mut data, &[0.0, 0.0])?;
    println!("1) double pendulum, dt = 1e-4 s, energy above rest {:.4} J", e0 - rest);
    let zero = Control::torques(DVector::zeros(2));
    let t0 = Instant::now();
    let mut worst: f64 = 0.0;
    let mut shown = vec![s.clone()];
    for k in 1..=100_000 {
        s = sim.step(&s, &zero)?;
        if k % 100 == 0 {
            shown.push(s.clone());
        }
        let e = energy(&mut data, &s)?;
        worst = worst.max((e - e0).abs() / (e0 - rest));
        if k % 20_000 == 0 {
            println!(
                "   t = {:4.1} s  q = [{:+.3}, {:+.3}]  relative energy error {:+.2e}",
                k as f64 * 1e-4,
                s.q[0],
                s.q[1],
                (e - e0) / (e0 - rest)
            );
        }
    }
    println!(
        "   worst relative energy error over 10 s: {worst:.2e}  ({:.0} ms wall)",
        t0.elapsed().as_secs_f64() * 1e3
    );
    csv::write_trajectory("demo_pendulum", &model, &shown, 1e-2, &[]);

    // 2. Computed-torque tracking on a 7-DoF arm.
    let arm = arm7();
    let mut sim = Simulator::new(arm.clone(), SimOptions { dt: 1e-3, ..Default::default() })?;
    let mut data = Data::new(&arm);
    let (kp, kd) = (400.0, 40.0);
    let desired = |t: f64| {
        let q = DVector::from_fn(7, |i, _| 0.4 * (t + 0.3 * i as f64).sin());
        let v = DVector::from_fn(7, |i, _| 0.4 * (t + 0.3 * i as f64).cos());
        let a = DVector::from_fn(7, |i, _| -0.4 * (t + 0.3 * i as f64).sin());
        (q, v, a)
    };
    let (q0, v0, _) = desired(0.0);
    let mut s = State { q: q0, v: v0 };
    let mut worst: f64 = 0.0;
    let mut shown = vec![s.clone()];
    for k in 0..3000 {
        let t = k as f64 * 1e-3;
        let (qd, vd, ad) = desired(t);
        let m = crba(&arm, &mut data, s.q.as_slice())?.clone();
        let c = bias_forces(&arm, &mut data, s.q.as_slice(), s.v.as_slice())?.clone();
        // The step also applies joint damping; compensate it.
        let damping = arm.damping().component_mul(&s.v);
        let tau = m * (ad + (&vd - &s.v) * kd + (&qd - &s.q) * kp) + c + damping;
        s = sim.step(&s, &Control::torques(tau))?;
        if k % 10 == 9 {
            shown.push(s.clone());
        }
        if t > 0.5 {
            worst = worst.max((&s.q - desired(t + 1e-3).0).amax());
        }
    }
    println!("2) 7-DoF arm, computed-torque tracking for 3 s: worst joint error after 0.5 s = {worst:.2e} rad");
    csv::write_trajectory("demo_arm", &arm, &shown, 1e-2, &[]);

    // 3. Tumbling free body.
    let mut b = ModelBuilder::new("brick");
    b.floating_base(true).gravity(Vec3::zeros());
    b.add_link(Body::new(
        "brick",
        Inertia::from_com(1.5, Vec3::zeros(), Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.3))),
    ));
    let brick = b.build()?;
    let mut sim = Simulator::new(brick.clone(), SimOptions { dt: 1e-4, ..Default::default() })?;
    let mut data = Data::new(&brick);
    let w = Vec3::new(1.0, 0.7, -0.5).normalize() * 5.0;
    let mut s = State { q: brick.neutral(), v: DVector::from_vec(vec![w.x, w.y, w.z, 0.0, 0.0, 0.0]) };
    let l0 = momentum(&brick, &mut data, s.q.as_slice(), s.v.as_slice())?.ang;
    let k0 = kinetic_energy(&brick, &mut data, s.q.as_slice(), s.v.as_slice())?;
    let zero = Control::torques(DVector::zeros(6));
    let mut shown = vec![s.clone()];
    for k in 1..=100_000 {
        s = sim.step(&s, &zero)?;
        if k % 100 == 0 {
            shown.push(s.clone());
        }
    }
    let l1 = momentum(&brick, &mut data, s.q.as_slice(), s.v.as_slice())?.ang;
    let k1 = kinetic_energy(&brick, &mut data, s.q.as_slice(), s.v.as_slice())?;
    println!(
        "3) tumbling brick, 10 s at dt = 1e-4: |L| changed by {:.1e}, kinetic energy by {:.1e} (relative); body-frame spin now [{:+.2}, {:+.2}, {:+.2}] rad/s; {} midpoint iterations per step on average",
        (l1.norm() - l0.norm()).abs() / l0.norm(),
        (k1 - k0).abs() / k0,
        s.v[0],
        s.v[1],
        s.v[2],
        sim.stats().midpoint_iterations as f64 / sim.stats().steps as f64
    );
    csv::write_trajectory("demo_brick", &brick, &shown, 1e-2, &[]);
    Ok(())
}
