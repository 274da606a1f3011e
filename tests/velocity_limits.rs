//! Joint velocity limits as unilateral constraint rows: the step holds `|v⁺| ≤ v_max`,
//! leaves slower joints alone, and its Jacobians agree with Ridders finite differences
//! inside the mode where the limit row clamps.

use nalgebra::DVector;
use stiction::gradcheck::{check_step, FdMethod, GradcheckConfig};
use stiction::math::{SplitMix64, Vec3};
use stiction::model::{ParamSpec, WORLD};
use stiction::solver::lcp::RowState;
use stiction::step::{ContactOptions, RowKind};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

const VMAX: [f64; 2] = [1.5, 2.0];

/// A two-link arm about y with velocity limits (1.5, 2) rad/s.
fn arm(limited: bool) -> Model {
    let mut b = ModelBuilder::new("limited_arm");
    let mut j1 = Joint::revolute("shoulder", Vec3::y());
    let mut j2 = Joint::revolute("elbow", Vec3::y())
        .with_placement(stiction::math::SE3::from_translation(Vec3::new(0.0, 0.0, -0.4)));
    if limited {
        j1 = j1.with_velocity_limits(&[VMAX[0]]);
        j2 = j2.with_velocity_limits(&[VMAX[1]]);
    }
    b.add_body(WORLD, j1, stiction::model::samples::rod("upper", 1.0, 0.4, 0.02, -Vec3::z()));
    b.add_body("upper", j2, stiction::model::samples::rod("lower", 0.6, 0.3, 0.02, -Vec3::z()));
    b.build().unwrap()
}

fn options() -> SimOptions {
    SimOptions { dt: 1e-3, contact: ContactOptions { warm_start: false, ..Default::default() }, ..Default::default() }
}

#[test]
fn velocity_limit_holds_and_leaves_slow_joints_alone() {
    let model = arm(true);
    let mut sim = Simulator::new(model.clone(), options()).unwrap();
    // Shoulder driven hard past its limit; the elbow slow.
    let state = State { q: DVector::from_vec(vec![0.3, -0.2]), v: DVector::from_vec(vec![1.49, 0.1]) };
    let control = Control::torques(DVector::from_vec(vec![200.0, 0.0]));
    let (next, rec) = sim.step_recorded(&state, &control).unwrap();
    assert!((next.v[0] - VMAX[0]).abs() < 1e-12, "shoulder {}", next.v[0]);
    let c = rec.constraints().expect("a velocity-limit row");
    let r = c.rows.iter().position(|k| *k == RowKind::VelocityUpper { dof: 0 }).expect("upper row on dof 0");
    assert_eq!(c.states[r], RowState::Clamping);
    assert!(c.impulses[r] > 0.0);
    // The elbow, pulled along by the coupling, stays inside its limit: its row (if the smooth
    // update got within half the limit) separates.
    assert!(next.v[1].abs() < VMAX[1]);
    for (k, st) in c.rows.iter().zip(&c.states) {
        if matches!(k, RowKind::VelocityUpper { dof: 1 } | RowKind::VelocityLower { dof: 1 }) {
            assert_eq!(*st, RowState::Separating);
        }
    }
    // The same driven the other way: the lower row.
    let state = State { q: state.q.clone(), v: DVector::from_vec(vec![-1.49, 0.1]) };
    let next = sim.step(&state, &Control::torques(DVector::from_vec(vec![-200.0, 0.0]))).unwrap();
    assert!((next.v[0] + VMAX[0]).abs() < 1e-12, "shoulder {}", next.v[0]);
    // Below the limits the limited arm steps exactly like the unlimited one.
    let slow = State { q: DVector::from_vec(vec![0.3, -0.2]), v: DVector::from_vec(vec![1.0, -1.2]) };
    let tau = Control::torques(DVector::from_vec(vec![0.5, -0.3]));
    let a = sim.step(&slow, &tau).unwrap();
    let b = Simulator::new(arm(false), options()).unwrap().step(&slow, &tau).unwrap();
    assert!((a.v - b.v).amax() < 1e-14 && (a.q - b.q).amax() < 1e-14);
}

#[test]
fn velocity_limit_jacobians_match_finite_differences() {
    let model = arm(true);
    let params = ParamSpec::parse(&model, &["mass:upper".to_string(), "mass:lower".to_string()]).unwrap();
    let nominal = State { q: DVector::from_vec(vec![0.3, -0.2]), v: DVector::from_vec(vec![1.45, 0.3]) };
    let tau = DVector::from_vec(vec![30.0, 2.0]);
    let mut rng = SplitMix64::new(3);
    let mut worst = 0.0f64;
    for k in 0..10 {
        let state = State {
            q: nominal.q.map(|x| x + rng.range(-0.05, 0.05)),
            v: nominal.v.map(|x| x + rng.range(-0.01, 0.01)),
        };
        let mut sim = Simulator::new(model.clone(), options()).unwrap();
        let (next, rec) = sim.step_recorded(&state, &Control::torques(tau.clone())).unwrap();
        // The shoulder's limit clamps (the mode of this check); the elbow moves freely,
        // driven through the coupling by the limit's impulse.
        assert!((next.v[0] - VMAX[0]).abs() < 1e-12 && next.v[1].abs() < VMAX[1], "state {k}: {next:?}");
        let c = rec.constraints().unwrap();
        assert_eq!(c.rows, vec![RowKind::VelocityUpper { dof: 0 }]);
        assert_eq!(c.states, vec![RowState::Clamping]);
        let config = GradcheckConfig { method: FdMethod::Ridders, step: 1e-3, rel_tol: 1e-6, abs_floor: 1e-5 };
        let report = check_step(&model, &options(), &params, &state, &Control::torques(tau.clone()), &config).unwrap();
        assert!(report.passed(), "state {k}\n{report}");
        worst = worst.max(report.max_rel_error());
        // The limited joint's velocity no longer depends on the inputs; the elbow's does.
        let j = rec.jacobians().unwrap();
        assert!(j.dv_dtau.row(0).amax() < 1e-12 && j.dv_dv.row(0).amax() < 1e-12 && j.dv_dq.row(0).amax() < 1e-12);
        assert!(j.dv_dtau[(1, 1)] > 1e-4 && j.dv_dq.row(1).amax() > 1e-3);
    }
    println!("velocity limits: worst {worst:.1e}");
}
