//! Long-horizon conservation of the contact-free integrator (10 s at dt = 1e-4):
//! - frictionless, undamped double pendulum and 5-link chain: total energy within
//!   0.5% (of the energy above the resting state) with no drift trend;
//! - torque-free free body with anisotropic inertia spinning at 5 rad/s about a
//!   non-principal axis: norm of the world angular momentum and kinetic energy within 0.1%;
//! - a body spinning about a principal axis: world angular momentum to 1e-12 relative.

use nalgebra::DVector;
use stiction::dynamics::{kinetic_energy, momentum, potential_energy};
use stiction::math::{Inertia, Mat3, Vec3};
use stiction::model::samples::pendulum_chain;
use stiction::{Body, Control, Data, Model, ModelBuilder, SimOptions, Simulator, State};

const DT: f64 = 1e-4;
const STEPS: usize = 100_000; // 10 s

fn energy(model: &Model, data: &mut Data, s: &State) -> f64 {
    kinetic_energy(model, data, s.q.as_slice(), s.v.as_slice()).unwrap()
        + potential_energy(model, data, s.q.as_slice()).unwrap()
}

/// Runs a chain from `q0` at rest; returns (max relative deviation, relative drift
/// between the mean energy of the first and last two seconds), both relative to the
/// energy above the hanging rest state.
fn chain_energy(model: Model, q0: &[f64]) -> (f64, f64) {
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: DT, ..Default::default() }).unwrap();
    let mut data = Data::new(&model);
    let rest = potential_energy(&model, &mut data, model.neutral().as_slice()).unwrap();
    let mut s = State { q: DVector::from_column_slice(q0), v: DVector::zeros(model.nv()) };
    let e0 = energy(&model, &mut data, &s);
    let scale = e0 - rest;
    assert!(scale > 1.0, "the test must start with a sizeable swing");
    let control = Control::torques(DVector::zeros(model.nv()));
    let mut next = s.clone();
    let (mut max_dev, mut first, mut last) = (0.0f64, 0.0, 0.0);
    let window = STEPS / 5;
    for k in 0..STEPS {
        sim.step_into(&s, &control, &mut next).unwrap();
        std::mem::swap(&mut s, &mut next);
        let e = energy(&model, &mut data, &s);
        max_dev = max_dev.max((e - e0).abs() / scale);
        if k < window {
            first += e / window as f64;
        } else if k >= STEPS - window {
            last += e / window as f64;
        }
    }
    (max_dev, (last - first).abs() / scale)
}

#[test]
fn double_pendulum_conserves_energy() {
    let (dev, drift) = chain_energy(pendulum_chain(2, 1.0, 1.0), &[1.2, -0.6]);
    eprintln!("double pendulum: max deviation {dev:e}, drift {drift:e}");
    assert!(dev < 5e-3, "energy deviation {dev:e}");
    assert!(drift < 5e-4, "energy drift {drift:e}");
}

#[test]
fn five_link_chain_conserves_energy() {
    let (dev, drift) = chain_energy(pendulum_chain(5, 0.5, 0.7), &[0.8, -0.4, 0.6, -0.3, 0.5]);
    eprintln!("5-link chain: max deviation {dev:e}, drift {drift:e}");
    assert!(dev < 5e-3, "energy deviation {dev:e}");
    assert!(drift < 5e-4, "energy drift {drift:e}");
}

fn free_body() -> Model {
    let mut b = ModelBuilder::new("free_body");
    b.floating_base(true).gravity(Vec3::zeros());
    b.add_link(Body::new(
        "body",
        Inertia::from_com(1.5, Vec3::zeros(), Mat3::from_diagonal(&Vec3::new(0.1, 0.2, 0.3))),
    ));
    b.build().unwrap()
}

/// Spins the free body with body-frame twist `v0` for 10 s; returns the world-frame
/// angular momenta about the centre of mass, the linear momenta and the kinetic
/// energies at start and after every step, and the simulator's statistics.
fn spin(v0: [f64; 6]) -> (Vec<Vec3>, Vec<Vec3>, Vec<f64>, stiction::sim::SimStats) {
    let model = free_body();
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: DT, ..Default::default() }).unwrap();
    let mut data = Data::new(&model);
    let mut s = State { q: model.neutral(), v: DVector::from_column_slice(&v0) };
    let control = Control::torques(DVector::zeros(6));
    let mut next = s.clone();
    let (mut ls, mut ps, mut es) = (vec![], vec![], vec![]);
    for k in 0..=STEPS {
        if k > 0 {
            sim.step_into(&s, &control, &mut next).unwrap();
            std::mem::swap(&mut s, &mut next);
        }
        let h = momentum(&model, &mut data, s.q.as_slice(), s.v.as_slice()).unwrap();
        let com = Vec3::new(s.q[0], s.q[1], s.q[2]); // the body frame sits at the centre of mass
        ls.push(h.ang - com.cross(&h.lin));
        ps.push(h.lin);
        es.push(kinetic_energy(&model, &mut data, s.q.as_slice(), s.v.as_slice()).unwrap());
    }
    (ls, ps, es, *sim.stats())
}

fn max_rel_norm_change(xs: &[Vec3]) -> f64 {
    xs.iter().map(|x| (x.norm() - xs[0].norm()).abs() / xs[0].norm()).fold(0.0, f64::max)
}

#[test]
fn tumbling_free_body_conserves_angular_momentum_norm_and_energy() {
    let w = Vec3::new(1.0, 0.7, -0.5).normalize() * 5.0;
    let (ls, _, es, stats) = spin([w.x, w.y, w.z, 0.0, 0.0, 0.0]);
    let dl = max_rel_norm_change(&ls);
    let de = es.iter().map(|e| (e - es[0]).abs() / es[0]).fold(0.0, f64::max);
    // It really tumbles: the world angular momentum is not along the initial spin axis.
    let l0 = ls[0].normalize();
    assert!(l0.dot(&w.normalize()) < 0.99);
    eprintln!("tumbling body: |L| deviation {dl:e}, energy deviation {de:e}, {stats:?}");
    assert!(dl < 1e-3, "angular momentum norm deviation {dl:e}");
    assert!(de < 1e-3, "kinetic energy deviation {de:e}");
    assert_eq!(stats.midpoint_fallbacks, 0);
}

#[test]
fn tumbling_and_translating_free_body_conserves_momenta() {
    let w = Vec3::new(-0.4, 0.9, 0.6).normalize() * 5.0;
    let (ls, ps, es, _) = spin([w.x, w.y, w.z, 0.3, -0.2, 0.1]);
    let (dl, dp) = (max_rel_norm_change(&ls), max_rel_norm_change(&ps));
    let de = es.iter().map(|e| (e - es[0]).abs() / es[0]).fold(0.0, f64::max);
    eprintln!("tumbling + translating body: |L_com| deviation {dl:e}, |p| deviation {dp:e}, energy deviation {de:e}");
    assert!(dl < 1e-3 && dp < 1e-3 && de < 1e-3, "{dl:e} {dp:e} {de:e}");
}

#[test]
fn principal_axis_spin_keeps_angular_momentum_exactly() {
    let (ls, _, _, _) = spin([0.0, 0.0, 5.0, 0.0, 0.0, 0.0]);
    let l0 = ls[0];
    let worst = ls.iter().map(|l| (l - l0).norm() / l0.norm()).fold(0.0, f64::max);
    eprintln!("principal spin: worst relative change of L {worst:e}");
    assert!(worst < 1e-12, "relative change {worst:e}");
}
