//! The contact-free step: exact discrete free fall, external wrenches, spring
//! oscillation frequency, implicit damping stability, first-order convergence of both
//! velocity-product evaluations, fallback counting, and input errors.

use nalgebra::DVector;
use stiction::math::{Force, Inertia, Mat3, Vec3, SE3};
use stiction::model::samples::{arm7, pendulum_chain};
use stiction::step::{IntegratorOptions, VelocityProducts};
use stiction::{Body, Control, Error, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

fn free_body(g: Vec3) -> Model {
    let mut b = ModelBuilder::new("ball");
    b.floating_base(true).gravity(g);
    b.add_link(Body::new("ball", Inertia::solid_sphere(2.0, 0.1)));
    b.build().unwrap()
}

/// A simulator of the smooth integrator: these tests are about the velocity update, so
/// the constraint stage (joint limits, contacts) is off — arm7 reaches a joint limit
/// within the convergence test's half second, where the step is no longer smooth.
fn sim(model: Model, dt: f64, vp: VelocityProducts) -> Simulator {
    let integrator = IntegratorOptions { velocity_products: vp, ..Default::default() };
    let contact = stiction::step::ContactOptions { enabled: false, ..Default::default() };
    Simulator::new(model, SimOptions { dt, gravity: None, integrator, contact }).unwrap()
}

#[test]
fn free_fall_matches_the_discrete_solution_exactly() {
    let g = 9.81;
    let model = free_body(Vec3::new(0.0, 0.0, -g));
    let (h, n) = (0.01, 200);
    let mut s = sim(model.clone(), h, VelocityProducts::Midpoint);
    let mut st = State::neutral(&model);
    let ctrl = Control::torques(DVector::zeros(6));
    for _ in 0..n {
        st = s.step(&st, &ctrl).unwrap();
    }
    // semi-implicit Euler: v_N = −g h N, z_N = −g h² N(N+1)/2
    let nf = n as f64;
    assert!((st.v[5] + g * h * nf).abs() < 1e-12);
    assert!((st.q[2] + g * h * h * nf * (nf + 1.0) / 2.0).abs() < 1e-11, "{}", st.q[2]);
    assert!(st.q[0].abs() < 1e-15 && st.q[1].abs() < 1e-15);
}

#[test]
fn external_wrench_accelerates_the_body() {
    let model = free_body(Vec3::zeros());
    let mut s = sim(model.clone(), 1e-3, VelocityProducts::Midpoint);
    let st = State::neutral(&model);
    let f = Vec3::new(1.0, -2.0, 0.5);
    let ctrl = Control { tau: DVector::zeros(6), wrenches: Some(vec![Force::from_point_force(&Vec3::zeros(), &f)]) };
    let next = s.step(&st, &ctrl).unwrap();
    for k in 0..3 {
        assert!((next.v[3 + k] - 1e-3 * f[k] / 2.0).abs() < 1e-15);
    }
    // A pure moment spins it up: ω̇ = I⁻¹ n.
    let n = Vec3::new(0.0, 0.0, 0.3);
    let ctrl = Control { tau: DVector::zeros(6), wrenches: Some(vec![Force::new(n, Vec3::zeros())]) };
    let next = s.step(&st, &ctrl).unwrap();
    let i = 0.4 * 2.0 * 0.01;
    assert!((next.v[2] - 1e-3 * 0.3 / i).abs() < 1e-12);
}

#[test]
fn spring_mass_oscillates_at_its_natural_frequency() {
    let (m, k) = (2.0, 50.0);
    let mut b = ModelBuilder::new("spring");
    b.gravity(Vec3::zeros());
    b.add_body(
        "world",
        Joint::prismatic("slide", Vec3::x()).with_spring(k, &[0.0]),
        Body::new("mass", Inertia::solid_sphere(m, 0.05)),
    );
    let model = b.build().unwrap();
    let period = 2.0 * std::f64::consts::PI * (m / k).sqrt();
    let h = 1e-5;
    let steps = (period / h).round() as usize;
    let mut s = sim(model.clone(), h, VelocityProducts::Midpoint);
    let mut st = State { q: DVector::from_element(1, 0.1), v: DVector::zeros(1) };
    let ctrl = Control::torques(DVector::zeros(1));
    let mut min_x: f64 = 1.0;
    for _ in 0..steps {
        st = s.step(&st, &ctrl).unwrap();
        min_x = min_x.min(st.q[0]);
    }
    assert!((min_x + 0.1).abs() < 1e-4, "half a period reaches −x0: {min_x}");
    assert!((st.q[0] - 0.1).abs() < 1e-4, "one period returns to x0: {}", st.q[0]);
}

#[test]
fn stiff_damping_is_implicit_and_stable() {
    let (d, h) = (1e6, 1e-2);
    let mut b = ModelBuilder::new("damped");
    b.gravity(Vec3::zeros());
    b.add_body(
        "world",
        Joint::revolute("hinge", Vec3::y()).with_damping(d),
        stiction::model::samples::rod("rod", 1.0, 1.0, 0.02, -Vec3::z()),
    );
    let model = b.build().unwrap();
    let inertia = stiction::dynamics::crba(&model, &mut stiction::Data::new(&model), &[0.0]).unwrap()[(0, 0)];
    let mut s = sim(model, h, VelocityProducts::Midpoint);
    let mut st = State { q: DVector::from_element(1, 1.0), v: DVector::from_element(1, 3.0) };
    let ctrl = Control::torques(DVector::zeros(1));
    for _ in 0..20 {
        let next = s.step(&st, &ctrl).unwrap();
        // Backward Euler on I v̇ = −d v:  v⁺ = v · I / (I + h d), stable for any d.
        let expected = st.v[0] * inertia / (inertia + h * d);
        assert!((next.v[0] - expected).abs() <= 1e-12 * st.v[0].abs(), "{} vs {expected}", next.v[0]);
        st = next;
    }
}

#[test]
fn both_velocity_product_evaluations_converge_at_first_order() {
    let model = arm7();
    let q0 = model.random_configuration(3);
    let v0 = DVector::from_fn(7, |i, _| 0.5 - 0.15 * i as f64);
    let run = |dt: f64, vp| {
        let mut s = sim(model.clone(), dt, vp);
        let mut st = State { q: q0.clone(), v: v0.clone() };
        let ctrl = Control::torques(DVector::from_element(7, 0.5));
        for _ in 0..(0.5 / dt).round() as usize {
            st = s.step(&st, &ctrl).unwrap();
        }
        st.q
    };
    let reference = run(1e-5, VelocityProducts::Midpoint);
    for vp in [VelocityProducts::Explicit, VelocityProducts::Midpoint] {
        let e1 = (run(4e-3, vp) - &reference).amax();
        let e2 = (run(2e-3, vp) - &reference).amax();
        let e3 = (run(1e-3, vp) - &reference).amax();
        let (r1, r2) = (e1 / e2, e2 / e3);
        assert!(r1 > 1.6 && r2 > 1.6 && r1 < 2.6 && r2 < 2.6, "{vp:?}: error ratios {r1} {r2}");
    }
}

#[test]
fn midpoint_fallback_is_counted_and_reported() {
    let model = pendulum_chain(3, 0.5, 1.0);
    let integrator = IntegratorOptions {
        velocity_products: VelocityProducts::Midpoint,
        tolerance: 1e-300,
        max_iterations: 2,
        ..Default::default()
    };
    let mut s = Simulator::new(model.clone(), SimOptions { dt: 1e-2, gravity: None, integrator, ..Default::default() })
        .unwrap();
    let st = State { q: DVector::from_element(3, 0.5), v: DVector::from_element(3, 2.0) };
    s.step(&st, &Control::torques(DVector::zeros(3))).unwrap();
    assert!(s.last_step_stats().fallback);
    assert_eq!(s.stats().midpoint_fallbacks, 1);
    // The fallback is the explicit step.
    let mut e = sim(model, 1e-2, VelocityProducts::Explicit);
    let a = e.step(&st, &Control::torques(DVector::zeros(3))).unwrap();
    let mut s2 = s.clone();
    let b = s2.step(&st, &Control::torques(DVector::zeros(3))).unwrap();
    assert!((a.v - b.v).amax() < 1e-15);
}

#[test]
fn bad_inputs_are_typed_errors() {
    let model = arm7();
    assert!(matches!(
        Simulator::new(model.clone(), SimOptions { dt: 0.0, ..Default::default() }),
        Err(Error::InvalidInput(_))
    ));
    assert!(Simulator::new(model.clone(), SimOptions { dt: f64::NAN, ..Default::default() }).is_err());
    assert!(Simulator::new(
        model.clone(),
        SimOptions { gravity: Some(Vec3::new(0.0, f64::NAN, 0.0)), ..Default::default() }
    )
    .is_err());
    let mut s = Simulator::new(model.clone(), SimOptions::default()).unwrap();
    let mut st = State::neutral(&model);
    st.v[3] = f64::NAN;
    let e = s.step(&st, &Control::torques(DVector::zeros(7))).unwrap_err();
    assert!(matches!(e, Error::NonFinite { what: "v", index: 3, .. }), "{e}");
    let st = State::neutral(&model);
    assert!(matches!(s.step(&st, &Control::torques(DVector::zeros(6))), Err(Error::Dimension { what: "tau", .. })));
    let wrong = Control { tau: DVector::zeros(7), wrenches: Some(vec![Force::zero(); 2]) };
    assert!(matches!(s.step(&st, &wrong), Err(Error::Dimension { .. })));
}

#[test]
fn gravity_override_and_rollout() {
    let model = free_body(Vec3::new(0.0, 0.0, -9.81));
    let mut s = Simulator::new(
        model.clone(),
        SimOptions { dt: 1e-2, gravity: Some(Vec3::new(1.0, 0.0, 0.0)), ..Default::default() },
    )
    .unwrap();
    let controls = vec![Control::torques(DVector::zeros(6)); 10];
    let traj = s.rollout(&State::neutral(&model), &controls).unwrap();
    assert_eq!(traj.len(), 10);
    assert!((traj[9].v[3] - 0.1).abs() < 1e-12 && traj[9].v[5].abs() < 1e-15);
    let _ = (Mat3::identity(), SE3::identity());
}

#[test]
fn model_and_state_round_trip_through_json() {
    for model in [arm7(), stiction::model::samples::all_joint_types(), stiction::model::samples::humanoid()] {
        let json = model.to_json().unwrap();
        let back = Model::from_json(&json).unwrap();
        assert_eq!(back, model);
    }
    let st = State { q: DVector::from_vec(vec![1.0, 2.0]), v: DVector::from_vec(vec![3.0]) };
    assert_eq!(State::from_json(&st.to_json().unwrap()).unwrap(), st);
    // A JSON model is validated like a built one.
    let mut json: serde_json::Value = serde_json::from_str(&arm7().to_json().unwrap()).unwrap();
    json["links"][1]["inertia"]["mass"] = serde_json::json!(-1.0);
    let err = Model::from_json(&json.to_string()).unwrap_err();
    assert!(err.to_string().contains("mass"), "{err}");
}
