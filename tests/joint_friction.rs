//! Joint Coulomb friction (a row `e_k` boxed by `±h F_c`, docs/contact.md) against
//! closed forms — a slider held below its breakaway force, accelerating at
//! `(τ − F_c)/m` above it, and coasting to a stop at `F_c/m` — and its step Jacobians
//! against Ridders finite differences while sticking and while sliding.

use nalgebra::DVector;
use stiction::gradcheck::{check_step, FdMethod, GradcheckConfig};
use stiction::math::{Inertia, Vec3};
use stiction::model::{Body, ParamSpec, WORLD};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const MASS: f64 = 2.0;
const FC: f64 = 3.0;
const DT: f64 = 1e-3;

/// A 2 kg slider on a horizontal prismatic joint with Coulomb friction `FC`, followed by
/// a pendulum hinge (so the Jacobians have a coupled second dof).
fn slider(with_pendulum: bool) -> Model {
    let mut b = ModelBuilder::new("friction_slider");
    b.add_body(
        WORLD,
        Joint::prismatic("slide", Vec3::x()).with_friction(FC),
        Body::new("cart", Inertia::solid_box(MASS, Vec3::new(0.2, 0.2, 0.1))),
    );
    if with_pendulum {
        b.add_body(
            "cart",
            Joint::revolute("hinge", Vec3::y()),
            stiction::model::samples::rod("pole", 0.3, 0.5, 0.02, -Vec3::z()),
        );
    }
    b.build().unwrap()
}

fn run(model: &Model, v0: f64, tau: f64, steps: usize) -> Vec<State> {
    let mut sim = Simulator::new(model.clone(), SimOptions { dt: DT, ..Default::default() }).unwrap();
    let mut s = State { q: model.neutral(), v: DVector::from_element(model.nv(), 0.0) };
    s.v[0] = v0;
    let control = Control::torques(DVector::from_fn(model.nv(), |k, _| if k == 0 { tau } else { 0.0 }));
    (0..steps)
        .map(|_| {
            s = sim.step(&s, &control).unwrap();
            s.clone()
        })
        .collect()
}

#[test]
fn below_breakaway_the_slider_holds() {
    let model = slider(false);
    for tau in [0.5, 2.0, 2.99, -2.99] {
        let states = run(&model, 0.0, tau, 500);
        let worst = states.iter().map(|s| s.v[0].abs().max(s.q[0].abs())).fold(0.0, f64::max);
        assert!(worst < 1e-12, "tau {tau}: the slider moved ({worst:e})");
    }
}

#[test]
fn above_breakaway_the_slider_accelerates_at_the_net_force() {
    let model = slider(false);
    for tau in [5.0, -4.0, 30.0] {
        let states = run(&model, 0.0, tau, 100);
        let want = (tau - FC * tau.signum()) / MASS * (100.0 * DT);
        let got = states.last().unwrap().v[0];
        assert!((got - want).abs() < 1e-12 * want.abs().max(1.0), "tau {tau}: v = {got}, want {want}");
    }
}

#[test]
fn a_coasting_slider_stops_where_friction_says_and_stays() {
    let model = slider(false);
    let v0 = 1.2;
    let states = run(&model, v0, 0.0, 2000);
    // Decelerates at F_c/m = 1.5 m/s²: stops after 0.8 s, having travelled v0²/(2 a) = 0.48 m.
    let a = FC / MASS;
    let stop = states.iter().position(|s| s.v[0] == 0.0).expect("the slider stops");
    assert!(((stop + 1) as f64 * DT - v0 / a).abs() <= 1.5 * DT, "stops at step {stop}");
    let travel = states.last().unwrap().q[0];
    assert!((travel - v0 * v0 / (2.0 * a)).abs() < 2e-3, "travelled {travel}");
    assert!(states[stop..].iter().all(|s| s.v[0] == 0.0 && s.q[0] == travel), "moves after stopping");
    assert!(states.iter().all(|s| s.v[0] >= 0.0), "reverses");
}

/// Step Jacobians (q, v, τ) against Ridders while sticking (friction row inside its box)
/// and while sliding (at its bound), with a pendulum on the slider coupling the dofs.
#[test]
fn joint_friction_step_jacobians_match_finite_differences() {
    let model = slider(true);
    let options = SimOptions { dt: DT, ..Default::default() };
    let config = GradcheckConfig { method: FdMethod::Ridders, step: 1e-4, rel_tol: 1e-6, abs_floor: 1e-5 };
    for (name, v0, tau, angle) in [("sticking", 0.0, 1.0, 0.2), ("sliding", 0.7, 1.0, 0.3), ("pushed", 0.0, 6.0, -0.1)]
    {
        let mut q = model.neutral();
        q[1] = angle;
        let state = State { q, v: DVector::from_vec(vec![v0, 0.4]) };
        let control = Control::torques(DVector::from_vec(vec![tau, 0.05]));
        let mut sim = Simulator::new(model.clone(), options.clone()).unwrap();
        let (_, rec) = sim.step_recorded(&state, &control).unwrap();
        let c = rec.constraints().expect("a joint-friction row");
        println!("{name}: states {:?}, impulses {:?}", c.states, c.impulses.as_slice());
        let report = check_step(&model, &options, &ParamSpec::new(), &state, &control, &config).unwrap();
        assert!(report.passed(), "{name}:\n{report}");
    }
}
