//! Joint limits that hold (issue 17): position-limit rows created by prediction
//! (`q + h v_f`), and the re-solve loop that adds the position- and velocity-limit rows
//! that the impulses of other rows make necessary. Fast joints do not tunnel through
//! their position limits, velocity limits hold for every dof, a step that cannot hold
//! them says so, and the Jacobians of a step with a predicted limit row agree with
//! central finite differences.

use nalgebra::DVector;
use stiction::gradcheck::{check_step, FdMethod, GradcheckConfig};
use stiction::math::{SplitMix64, Vec3, SE3};
use stiction::model::samples::{arm7, rod};
use stiction::model::{ParamSpec, WORLD};
use stiction::solver::lcp::RowState;
use stiction::step::contact::LIMIT_TOLERANCE;
use stiction::step::{ContactOptions, RowKind};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// A chain of `n` revolute joints about y, each limited to `±limit` rad.
fn limited_chain(n: usize, limit: f64) -> Model {
    let mut b = ModelBuilder::new(format!("limited_chain{n}"));
    let mut parent = WORLD.to_string();
    for k in 0..n {
        let placement = if k == 0 { SE3::identity() } else { SE3::from_translation(Vec3::new(0.0, 0.0, -0.3)) };
        let name = format!("link{k}");
        b.add_body(
            &parent,
            Joint::revolute(format!("joint{k}"), Vec3::y())
                .with_placement(placement)
                .with_position_limits(&[-limit], &[limit]),
            rod(&name, 1.0, 0.3, 0.02, -Vec3::z()),
        );
        parent = name;
    }
    b.build().unwrap()
}

fn options(dt: f64) -> SimOptions {
    SimOptions { dt, contact: ContactOptions::default(), ..Default::default() }
}

/// The worst violations seen over a rollout, each relative to the documented tolerance
/// of its step (position: `h ε`, velocity: `ε`, `ε = LIMIT_TOLERANCE · max(1, ‖v_f‖∞, ‖v⁺‖∞)`).
#[derive(Default, Debug)]
struct Worst {
    /// Largest position violation (rad).
    position: f64,
    /// Largest velocity violation (rad/s).
    velocity: f64,
    /// Largest ratio violation / tolerance (≤ 1 when the limits hold).
    ratio: f64,
    /// Largest |q| reached on any limited coordinate, relative to its limit.
    reach: f64,
    /// Most LCP solves in one step.
    passes: usize,
}

/// Violations of the limits of a model of 1-dof joints by the step from `start` to
/// `next`, given the step's smooth update `v_f` (for the tolerance): (position,
/// velocity, ratio to the tolerance). The position violation is measured against the
/// documented bound: the limit itself for a joint that starts inside it; for one that
/// starts past it by `d`, what is left after one step at the recovery speed
/// `min(d/h, v_max)` (erp = 1).
fn violations(model: &Model, h: f64, v_free: &DVector<f64>, start: &State, next: &State) -> (f64, f64, f64) {
    let scale = v_free.iter().chain(next.v.iter()).fold(1.0f64, |s, x| s.max(x.abs()));
    let eps = LIMIT_TOLERANCE * scale;
    let (lo, hi, vmax) = (model.lower_limits(), model.upper_limits(), model.velocity_limits());
    let allowed = |d: f64, k: usize| (d - h * (d / h).min(vmax[k])).max(0.0);
    let (mut p, mut v) = (0.0f64, 0.0f64);
    for k in 0..model.nv() {
        if lo[k].is_finite() {
            p = p.max(lo[k] - next.q[k] - allowed(lo[k] - start.q[k], k));
        }
        if hi[k].is_finite() {
            p = p.max(next.q[k] - hi[k] - allowed(start.q[k] - hi[k], k));
        }
        if vmax[k].is_finite() {
            v = v.max(next.v[k].abs() - vmax[k]);
        }
    }
    (p, v, (p / (h * eps)).max(v / eps))
}

/// Steps `steps` times with `control(t)`, asserting after every step that the limits
/// hold within the documented tolerance and that nothing was reported violated.
fn run_holding(
    model: &Model,
    dt: f64,
    start: State,
    steps: usize,
    control: &mut dyn FnMut(usize) -> DVector<f64>,
    what: &str,
) -> (Worst, Simulator) {
    let mut sim = Simulator::new(model.clone(), options(dt)).unwrap();
    let mut state = start;
    let mut worst = Worst::default();
    for t in 0..steps {
        let next = sim.step(&state, &Control::torques(control(t))).unwrap();
        let v_free = sim.last_constraints().map(|c| c.v_free.clone()).unwrap_or_else(|| next.v.clone());
        if let Some(c) = sim.last_constraints() {
            assert!(c.limit_violations.is_empty(), "{what}, step {t}: reported {:?}", c.limit_violations);
            worst.passes = worst.passes.max(c.passes);
        }
        let (p, v, ratio) = violations(model, dt, &v_free, &state, &next);
        assert!(ratio <= 1.0, "{what}, step {t}: position violation {p:e} rad, velocity violation {v:e} rad/s");
        worst.position = worst.position.max(p);
        worst.velocity = worst.velocity.max(v);
        worst.ratio = worst.ratio.max(ratio);
        for k in 0..model.nv() {
            let limit = model.upper_limits()[k];
            if limit.is_finite() {
                worst.reach = worst.reach.max(next.q[k].abs() / limit);
            }
        }
        state = next;
    }
    assert_eq!(sim.stats().limit_violations, 0, "{what}");
    (worst, sim)
}

#[test]
fn a_fast_single_joint_does_not_tunnel_through_its_limits() {
    let model = limited_chain(1, 0.5);
    for dt in [1e-2, 1e-3] {
        for speed in [1000.0, 50.0, -1000.0, -50.0] {
            let start = State { q: DVector::from_vec(vec![0.0]), v: DVector::from_vec(vec![speed]) };
            let what = format!("single joint, dt = {dt}, v0 = {speed}");
            let (worst, _) = run_holding(&model, dt, start, 200, &mut |_| DVector::zeros(1), &what);
            // The joint reached its limit (the test is about the limit, not free motion).
            assert!(worst.reach > 1.0 - 1e-9, "{what}: {worst:?}");
            println!("{what}: max position violation {:.1e} rad, {:.2} of the tolerance", worst.position, worst.ratio);
        }
    }
    // The first step at 1,000 rad/s, dt = 10 ms (a free step would end at 10 rad):
    // the predicted upper row clamps and the joint stops exactly at the limit.
    let mut sim = Simulator::new(model.clone(), options(1e-2)).unwrap();
    let start = State { q: DVector::from_vec(vec![0.0]), v: DVector::from_vec(vec![1000.0]) };
    let next = sim.step(&start, &Control::torques(DVector::zeros(1))).unwrap();
    let c = sim.last_constraints().expect("a predicted limit row");
    let r = c.rows.iter().position(|k| *k == RowKind::JointUpper { dof: 0 }).expect("upper row");
    assert_eq!(c.states[r], RowState::Clamping);
    assert!((next.q[0] - 0.5).abs() < 1e-12 && (next.v[0] - 50.0).abs() < 1e-9, "{next:?}");
}

#[test]
fn a_fast_five_link_chain_holds_its_limits() {
    let model = limited_chain(5, 0.5);
    for dt in [1e-2, 1e-3] {
        for (name, v0) in [
            ("all +50", vec![50.0; 5]),
            ("alternating ±50", vec![50.0, -50.0, 50.0, -50.0, 50.0]),
            ("all −50", vec![-50.0; 5]),
        ] {
            let start = State { q: DVector::zeros(5), v: DVector::from_vec(v0) };
            let what = format!("5-link chain, dt = {dt}, {name}");
            let (worst, sim) = run_holding(&model, dt, start, 200, &mut |_| DVector::zeros(5), &what);
            assert!(worst.reach > 1.0 - 1e-9, "{what}: {worst:?}");
            println!(
                "{what}: max position violation {:.1e} rad ({:.2} of the tolerance), {} re-solves",
                worst.position,
                worst.ratio,
                sim.stats().limit_resolves
            );
        }
    }
}

/// arm7 (limits ±2.8 rad, 2.5 rad/s). Its effort limits (87 N·m) are stored on the
/// model but not applied by the step (docs/contact.md), so torques of 1e4 act in full.
fn arm() -> Model {
    arm7()
}

#[test]
fn arm7_under_large_torques_holds_velocity_and_position_limits() {
    let model = arm();
    let nv = model.nv();
    assert!(model.velocity_limits().iter().all(|v| *v == 2.5));
    let dt = 1e-3;
    // Random torques of up to 1e4 N·m, each held for 100 steps (so that the joints,
    // starting at random poses within ±2.5 rad, run into their position limits too).
    let mut rng = SplitMix64::new(17);
    let start = State { q: DVector::from_fn(nv, |_, _| rng.range(-2.5, 2.5)), v: DVector::zeros(nv) };
    let mut tau = DVector::zeros(nv);
    let mut random = |t: usize| {
        if t % 100 == 0 {
            tau = DVector::from_fn(nv, |_, _| rng.range(-1e4, 1e4));
        }
        tau.clone()
    };
    let (worst, sim) = run_holding(&model, dt, start, 1000, &mut random, "arm7, random τ = 1e4");
    println!(
        "arm7 random τ = 1e4: max position violation {:.1e} rad, velocity violation {:.1e} rad/s ({:.2} of the \
         tolerance), {} re-solves over 1000 steps (at most {} solves in a step), {} LCP fallbacks, {} inexact solves",
        worst.position,
        worst.velocity,
        worst.ratio,
        sim.stats().limit_resolves,
        worst.passes,
        sim.stats().lcp_fallbacks,
        sim.stats().inexact_solves
    );
    // The loop had work to do (without it the velocity limits are exceeded).
    assert!(sim.stats().limit_resolves > 0);
    assert!(worst.reach > 1.0 - 1e-9, "{worst:?}");

    let mut constant = |_t: usize| DVector::from_element(nv, 1e4);
    // From 1 rad, 2.5 rad/s reaches the 2.8 rad limits within the 1,000 steps.
    let start = State { q: DVector::from_element(nv, 1.0), v: DVector::zeros(nv) };
    let (worst, sim) = run_holding(&model, dt, start, 1000, &mut constant, "arm7, constant τ = 1e4");
    println!(
        "arm7 constant τ = 1e4: max position violation {:.1e} rad, velocity violation {:.1e} rad/s ({:.2} of the \
         tolerance), {} re-solves (at most {} solves in a step)",
        worst.position,
        worst.velocity,
        worst.ratio,
        sim.stats().limit_resolves,
        worst.passes
    );
    assert!(worst.reach > 1.0 - 1e-9, "{worst:?}");
}

#[test]
fn arm7_under_huge_torques_never_violates_a_limit_silently() {
    let model = arm();
    let nv = model.nv();
    let dt = 1e-3;
    for (name, seed) in [("constant", None), ("random", Some(5u64))] {
        let mut rng = SplitMix64::new(seed.unwrap_or(0));
        let mut sim = Simulator::new(model.clone(), options(dt)).unwrap();
        let mut state = State::neutral(&model);
        let (mut worst_p, mut worst_v, mut reported, mut held, mut passes) = (0.0f64, 0.0f64, 0usize, 0usize, 0);
        let mut error = None;
        for t in 0..1000 {
            let tau = match seed {
                None => DVector::from_element(nv, 1e6),
                Some(_) => DVector::from_fn(nv, |_, _| rng.range(-1e6, 1e6)),
            };
            let before = *sim.stats();
            let next = match sim.step(&state, &Control::torques(tau)) {
                Ok(next) => next,
                Err(e) => {
                    // A typed error is an acceptable outcome.
                    error = Some(format!("step {t}: {e}"));
                    break;
                }
            };
            let after = *sim.stats();
            let c = sim.last_constraints().expect("limit rows");
            passes = c.passes.max(passes);
            let (p, v, ratio) = violations(&model, dt, &c.v_free, &state, &next);
            worst_p = worst_p.max(p);
            worst_v = worst_v.max(v);
            if ratio > 1.0 {
                // Never silent: the step lists the violated limits and the counter moved.
                assert!(!c.limit_violations.is_empty(), "{name}, step {t}: silent violation p = {p:e}, v = {v:e}");
                assert_eq!(after.limit_violations, before.limit_violations + 1, "{name}, step {t}");
                reported += 1;
            } else {
                held += 1;
            }
            state = next;
        }
        println!(
            "arm7 {name} τ = 1e6: {held} steps held, {reported} reported violations, max position violation \
             {worst_p:.1e} rad, velocity violation {worst_v:.1e} rad/s, {} re-solves (at most {passes} solves in a \
             step), {} LCP fallbacks, {} inexact solves, error: {error:?}",
            sim.stats().limit_resolves,
            sim.stats().lcp_fallbacks,
            sim.stats().inexact_solves
        );
    }
}

#[test]
fn jacobians_of_a_step_with_a_predicted_limit_row_match_central_differences() {
    // Two links; the shoulder at 0.4 rad moving at 20 rad/s towards its 0.5 rad limit,
    // dt = 10 ms: the gap of 0.1 rad (ten times the margin) closes within the step, so
    // only the prediction creates the row, which clamps (q⁺ = 0.5).
    let model = limited_chain(2, 0.5);
    let dt = 1e-2;
    let opts = options(dt);
    let params = ParamSpec::parse(&model, &["mass:link0".to_string(), "mass:link1".to_string()]).unwrap();
    let nominal = State { q: DVector::from_vec(vec![0.4, 0.1]), v: DVector::from_vec(vec![20.0, -3.0]) };
    let tau = DVector::from_vec(vec![1.0, 0.5]);
    let mut rng = SplitMix64::new(11);
    let mut worst = 0.0f64;
    for k in 0..5 {
        let state =
            State { q: nominal.q.map(|x| x + rng.range(-0.01, 0.01)), v: nominal.v.map(|x| x + rng.range(-0.5, 0.5)) };
        let mut sim = Simulator::new(model.clone(), opts.clone()).unwrap();
        sim.set_params(params.clone());
        let (next, rec) = sim.step_recorded(&state, &Control::torques(tau.clone())).unwrap();
        let c = rec.constraints().expect("a predicted limit row");
        assert!(0.5 - state.q[0] > 5.0 * opts.contact.joint_limit_margin, "state {k}: not a predicted row");
        assert_eq!(c.rows, vec![RowKind::JointUpper { dof: 0 }], "state {k}");
        assert_eq!(c.states, vec![RowState::Clamping], "state {k}");
        assert!(c.added_rows.is_empty() && c.passes == 1);
        assert!((next.q[0] - 0.5).abs() < 1e-12, "state {k}: {next:?}");
        // The gap bias φ/h: v⁺ = (hi − q)/h, so ∂v⁺₀/∂q₀ = −1/h and q⁺₀ is constant.
        let j = rec.jacobians().unwrap();
        assert!((j.dv_dq[(0, 0)] + 1.0 / dt).abs() < 1e-9, "state {k}: {}", j.dv_dq[(0, 0)]);
        assert!(j.dq_dq.row(0).amax() < 1e-12 && j.dq_dv.row(0).amax() < 1e-12);
        let config = GradcheckConfig { method: FdMethod::Central, step: 3e-4, rel_tol: 1e-6, abs_floor: 1e-5 };
        let report = check_step(&model, &opts, &params, &state, &Control::torques(tau.clone()), &config).unwrap();
        assert!(report.passed(), "state {k}\n{report}");
        worst = worst.max(report.max_rel_error());
    }
    println!("predicted limit row: worst relative error {worst:.1e}");
}

#[test]
fn jacobians_of_a_step_with_a_row_added_by_the_resolve_loop_match_finite_differences() {
    // Three links; the shoulder's predicted row stops it (20 rad/s, 0.1 rad from its
    // limit); the reaction swings the elbow, 0.2 rad from its limit and too slow for a
    // predicted row, over its limit: the loop adds the elbow's row, which clamps. The
    // wrist moves freely.
    let model = limited_chain(3, 0.5);
    let dt = 1e-2;
    let opts = options(dt);
    let params = ParamSpec::parse(&model, &["mass:link0".to_string(), "mass:link1".to_string()]).unwrap();
    let mut rng = SplitMix64::new(23);
    let mut worst = 0.0f64;
    for (k, (v1, v2)) in [(5.0, -5.0), (6.0, 0.0), (8.0, 5.0)].into_iter().enumerate() {
        let state = State {
            q: DVector::from_vec(vec![0.4 + rng.range(-0.01, 0.01), 0.3 + rng.range(-0.01, 0.01), 0.0]),
            v: DVector::from_vec(vec![20.0 + rng.range(-0.5, 0.5), v1, v2]),
        };
        let tau = DVector::from_fn(3, |_, _| rng.range(-1.0, 1.0));
        let mut sim = Simulator::new(model.clone(), opts.clone()).unwrap();
        sim.set_params(params.clone());
        let (next, rec) = sim.step_recorded(&state, &Control::torques(tau.clone())).unwrap();
        let c = rec.constraints().unwrap();
        assert_eq!(c.added_rows, vec![RowKind::JointUpper { dof: 1 }], "state {k}");
        assert_eq!(c.rows, vec![RowKind::JointUpper { dof: 0 }, RowKind::JointUpper { dof: 1 }], "state {k}");
        assert_eq!(c.states, vec![RowState::Clamping, RowState::Clamping], "state {k}");
        assert!(c.passes == 2 && c.impulses[1] > 1e-3, "state {k}: {:?}", c.impulses);
        assert!((next.q[1] - 0.5).abs() < 1e-12 && next.q[2].abs() < 0.4, "state {k}: {next:?}");
        let config = GradcheckConfig { method: FdMethod::Ridders, step: 1e-3, rel_tol: 1e-6, abs_floor: 1e-5 };
        let report = check_step(&model, &opts, &params, &state, &Control::torques(tau), &config).unwrap();
        assert!(report.passed(), "state {k}\n{report}");
        worst = worst.max(report.max_rel_error());
    }
    println!("row added by the loop: worst relative error {worst:.1e}");

    // Every recorded step whose rows the loop added is differentiable (the backward pass
    // rebuilds the added rows from the record): arm7 under random torques.
    let model = arm();
    let nv = model.nv();
    let mut rng = SplitMix64::new(17);
    let mut sim = Simulator::new(model.clone(), options(1e-3)).unwrap();
    let mut state = State { q: DVector::from_fn(nv, |_, _| rng.range(-2.5, 2.5)), v: DVector::zeros(nv) };
    let mut differentiated = 0;
    for _ in 0..300 {
        let tau = DVector::from_fn(nv, |_, _| rng.range(-1e4, 1e4));
        let (next, rec) = sim.step_recorded(&state, &Control::torques(tau)).unwrap();
        if rec.constraints().is_some_and(|c| !c.added_rows.is_empty()) {
            let j = rec.jacobians().unwrap();
            assert!(j.dv_dq.iter().chain(j.dv_dv.iter()).all(|x| x.is_finite()));
            differentiated += 1;
        }
        state = next;
    }
    assert!(differentiated > 0);
    println!("arm7: {differentiated} steps with rows added by the loop differentiated");
}

/// A 1-DoF pendulum (hinge about y, a 1 kg ball of radius 0.1 m at 1 m; no gravity
/// torque worth mentioning at rest) whose ball penetrates the ground by `depth` at the
/// bottom of its swing, its hinge limited to `θ ≤ upper`.
fn limited_pendulum_in_ground(depth: f64, upper: f64) -> Model {
    use stiction::math::Inertia;
    use stiction::model::{Body, CollisionShape, Geometry, Material};
    let (l, r) = (1.0, 0.1);
    let mut b = ModelBuilder::new("limited_pendulum_in_ground");
    let m = Material::new(0.0, 0.0);
    b.add_link(
        Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity()).with_material(m)),
    );
    let at_end = SE3::from_translation(Vec3::new(0.0, 0.0, -l));
    let sphere = CollisionShape::new(Geometry::Sphere { radius: r }, at_end).with_material(m);
    let inertia = Inertia::from_com(1.0, Vec3::new(0.0, 0.0, -l), nalgebra::Matrix3::identity() * (0.4 * r * r));
    b.add_body(
        WORLD,
        Joint::revolute("hinge", Vec3::y())
            .with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, l + r - depth)))
            .with_position_limits(&[-1.0], &[upper]),
        Body::new("ball", inertia).with_collision(sphere),
    );
    b.build().unwrap()
}

/// The position stage (split recovery) can carry a joint that has no limit row over its
/// limit: the pendulum's ball, 5 mm in the ground at θ = 0.05 rad, is lifted by
/// `δθ = J_n|φ| / (J_n² + ρ I/m)` ≈ 0.054 rad, past the hinge's limit at 0.08 rad, which
/// is 0.03 rad away (beyond the row margin) and approached by no velocity. The limit
/// gets its row, the step is solved again (two passes), and the position stage stops
/// at the limit. Without that loop the step ended at θ⁺ = 0.104 (a soak of the humanoid
/// on the ground passed a limit by 2.4e-3 rad this way). The step's Jacobians, with the
/// added row in both stages, match Ridders differences.
#[test]
fn the_position_stage_holds_limits_that_had_no_row() {
    let model = limited_pendulum_in_ground(5e-3, 0.08);
    let opts = SimOptions { dt: 1e-3, ..Default::default() };
    let params = ParamSpec::parse(&model, &["mass:ball".to_string()]).unwrap();
    let mut rng = SplitMix64::new(5);
    for k in 0..5 {
        let state = State {
            q: DVector::from_vec(vec![0.05 + rng.range(-1e-3, 1e-3)]),
            v: DVector::from_vec(vec![rng.range(-0.05, 0.05)]),
        };
        let mut sim = Simulator::new(model.clone(), opts.clone()).unwrap();
        sim.set_params(params.clone());
        let (next, rec) = sim.step_recorded(&state, &Control::torques(DVector::zeros(1))).unwrap();
        let c = rec.constraints().unwrap();
        assert_eq!(c.added_rows, vec![RowKind::JointUpper { dof: 0 }], "state {k}");
        assert_eq!(c.passes, 2, "state {k}");
        assert!(c.correction.is_some() && c.limit_violations.is_empty(), "state {k}: {:?}", c.limit_violations);
        assert!((next.q[0] - 0.08).abs() <= 1e-12, "state {k}: θ⁺ = {}", next.q[0]);
        let config = GradcheckConfig { method: FdMethod::Ridders, step: 1e-4, rel_tol: 1e-6, abs_floor: 1e-5 };
        let report = check_step(&model, &opts, &params, &state, &Control::torques(DVector::zeros(1)), &config).unwrap();
        assert!(report.passed(), "state {k}\n{report}");
    }
    // Unlimited, the same correction goes past 0.08.
    let free = limited_pendulum_in_ground(5e-3, 10.0);
    let mut sim = Simulator::new(free, opts).unwrap();
    let next = sim
        .step(&State { q: DVector::from_vec(vec![0.05]), v: DVector::zeros(1) }, &Control::torques(DVector::zeros(1)))
        .unwrap();
    assert!(next.q[0] > 0.1, "θ⁺ = {}", next.q[0]);
}
