//! Jacobians of the recorded step (both velocity-product evaluations) against Ridders
//! finite differences of the step itself, for the test models at 20 random states:
//! every block ∂(q⁺, v⁺)/∂(q, v, τ) to 1e-7 relative to the block's largest entry.
//! Also: a recorded step's VJP equals Jᵀ times the cotangent.

mod common;
use common::{random_vector, ridders, test_models};
use nalgebra::{DMatrix, DVector};
use stiction::math::{Force, SplitMix64, Vec3};
use stiction::step::{IntegratorOptions, VelocityProducts};
use stiction::{Control, Model, SimOptions, Simulator, State};

const DT: f64 = 5e-3;
const TOL: f64 = 1e-7;

fn sim(model: &Model, vp: VelocityProducts) -> Simulator {
    let integrator = IntegratorOptions { velocity_products: vp, ..Default::default() };
    // The smooth step's Jacobians (random states may sit at joint limits; the constraint
    // stage's Jacobians are tested in tests/contact_gradients.rs).
    let contact = stiction::step::ContactOptions { enabled: false, ..Default::default() };
    Simulator::new(model.clone(), SimOptions { dt: DT, gravity: None, integrator, contact }).unwrap()
}

/// Step output as a tangent vector relative to the nominal output.
fn step_delta(s: &mut Simulator, st: &State, c: &Control, nominal: &State) -> DVector<f64> {
    let next = s.step(st, c).unwrap();
    let m = s.model();
    let dq = m.difference(&nominal.q, &next.q).unwrap();
    let mut out = DVector::zeros(2 * m.nv());
    out.rows_mut(0, m.nv()).copy_from(&dq);
    out.rows_mut(m.nv(), m.nv()).copy_from(&(&next.v - &nominal.v));
    out
}

fn block_err(name: &str, model: &str, a: &DMatrix<f64>, f: &DMatrix<f64>) -> f64 {
    let scale = f.amax().max(1e-12);
    let err = (a - f).amax() / scale;
    assert!(err < TOL, "{model}: {name} rel err {err:e} (scale {scale:e})\nanalytic {a}\nFD {f}");
    err
}

/// Returns the worst relative error and the number of states skipped because the
/// midpoint solve fell back to the explicit step (a switch of formula).
fn check(model: &Model, vp: VelocityProducts, seed: u64, states: usize) -> (f64, usize) {
    let mut rng = SplitMix64::new(seed);
    let mut worst: f64 = 0.0;
    let mut skipped = 0;
    let nv = model.nv();
    for k in 0..states {
        let st = State { q: model.random_configuration(seed * 100 + k as u64), v: random_vector(&mut rng, nv, 1.5) };
        // Wrenches of a physical size: a force of up to 1 g per unit mass at each body's
        // centre of mass (world wrenches are about the world origin).
        let wrenches = (k % 3 == 2).then(|| {
            let mut d = stiction::Data::new(model);
            stiction::dynamics::forward_kinematics(model, &mut d, st.q.as_slice()).unwrap();
            (0..model.nbodies())
                .map(|i| {
                    let b = &model.bodies()[i].inertia;
                    let f = Vec3::new(rng.range(-9.0, 9.0), rng.range(-9.0, 9.0), rng.range(-9.0, 9.0)) * b.mass;
                    Force::from_point_force(&d.x_world[i].act_point(&b.com()), &f)
                })
                .collect::<Vec<_>>()
        });
        // Torques scaled by each joint's inertia: accelerations of order 3 rad/s², as in a
        // physical motion (unscaled torques on 30 g finger links give 10⁶ rad/s²).
        let m = stiction::dynamics::crba(model, &mut stiction::Data::new(model), st.q.as_slice()).unwrap().clone();
        let tau = DVector::from_fn(nv, |i, _| m[(i, i)] * rng.range(-3.0, 3.0));
        let c = Control { tau, wrenches };
        let mut s = sim(model, vp);
        let (nominal, record) = s.step_recorded(&st, &c).unwrap();
        if record.fell_back() {
            // The step switched to the explicit formula here: not a point to difference across.
            skipped += 1;
            continue;
        }
        let jac = record.jacobians().unwrap();
        let s = std::cell::RefCell::new(s);
        let fd = |f: &dyn Fn(usize, f64) -> DVector<f64>| {
            let cols: Vec<DVector<f64>> = (0..nv).map(|j| ridders(&|e| f(j, e), 1e-2).0).collect();
            DMatrix::from_columns(&cols)
        };
        let unit = |j: usize| {
            let mut e = DVector::zeros(nv);
            e[j] = 1.0;
            e
        };
        let fq = fd(&|j, e| {
            let q = model.integrate(&st.q, &unit(j), e).unwrap();
            step_delta(&mut s.borrow_mut(), &State { q, v: st.v.clone() }, &c, &nominal)
        });
        let fv = fd(&|j, e| {
            step_delta(&mut s.borrow_mut(), &State { q: st.q.clone(), v: &st.v + unit(j) * e }, &c, &nominal)
        });
        let ft = fd(&|j, e| {
            let c2 = Control { tau: &c.tau + unit(j) * e, wrenches: c.wrenches.clone() };
            step_delta(&mut s.borrow_mut(), &st, &c2, &nominal)
        });
        let top = |m: &DMatrix<f64>| m.rows(0, nv).into_owned();
        let bot = |m: &DMatrix<f64>| m.rows(nv, nv).into_owned();
        let name = format!("{} ({vp:?}, state {k})", model.name());
        for (label, a, f) in [
            ("dq+/dq", &jac.dq_dq, top(&fq)),
            ("dv+/dq", &jac.dv_dq, bot(&fq)),
            ("dq+/dv", &jac.dq_dv, top(&fv)),
            ("dv+/dv", &jac.dv_dv, bot(&fv)),
            ("dq+/dtau", &jac.dq_dtau, top(&ft)),
            ("dv+/dtau", &jac.dv_dtau, bot(&ft)),
        ] {
            worst = worst.max(block_err(label, &name, a, &f));
        }
        // VJP = Jᵀ λ.
        let (lq, lv) = (random_vector(&mut rng, nv, 1.0), random_vector(&mut rng, nv, 1.0));
        let g = record.vjp(&lq, &lv).unwrap();
        let expect_q = jac.dq_dq.tr_mul(&lq) + jac.dv_dq.tr_mul(&lv);
        let expect_v = jac.dq_dv.tr_mul(&lq) + jac.dv_dv.tr_mul(&lv);
        let expect_t = jac.dq_dtau.tr_mul(&lq) + jac.dv_dtau.tr_mul(&lv);
        for (a, b) in [(&g.q, &expect_q), (&g.v, &expect_v), (&g.tau, &expect_t)] {
            assert!((a - b).amax() <= 1e-10 * b.amax().max(1.0), "{name}: VJP vs Jᵀλ");
        }
    }
    (worst, skipped)
}

#[test]
fn step_jacobians_match_ridders_midpoint() {
    for model in test_models().into_iter().filter(|m| m.nv() > 0) {
        let (w, skipped) = check(&model, VelocityProducts::Midpoint, 41, 20);
        eprintln!(
            "midpoint {:<20} nv {:3}: worst {w:.1e}, {skipped} states skipped (fallback)",
            model.name(),
            model.nv()
        );
        assert!(skipped <= 2, "{}: {skipped} of 20 states fell back", model.name());
    }
}

#[test]
fn step_jacobians_match_ridders_explicit() {
    for model in test_models().into_iter().filter(|m| m.nv() > 0) {
        let (w, skipped) = check(&model, VelocityProducts::Explicit, 42, 20);
        assert_eq!(skipped, 0);
        eprintln!("explicit {:<20} nv {:3}: worst {w:.1e}", model.name(), model.nv());
    }
}

/// A model without degrees of freedom (one welded body): the recorded step's Jacobians
/// are empty blocks (0 × 0, 0 × np) and its VJP empty vectors, not a panic.
#[test]
fn step_jacobians_of_a_model_without_dofs() {
    use stiction::model::ParamSpec;
    use stiction::{Body, Joint, JointType, ModelBuilder};
    let mut b = ModelBuilder::new("welded");
    b.add_link(Body::from_mass_properties("a", 1.0, Vec3::zeros(), nalgebra::Matrix3::identity() * 0.1));
    b.add_joint("world", "a", Joint::new("weld", JointType::Fixed));
    let model = b.build().unwrap();
    assert_eq!(model.nv(), 0);
    let mut s = sim(&model, VelocityProducts::Midpoint);
    s.set_params(ParamSpec::parse(&model, &["mass:a", "gravity"]).unwrap());
    let state = State { q: DVector::zeros(0), v: DVector::zeros(0) };
    let (_, rec) = s.step_recorded(&state, &Control::torques(DVector::zeros(0))).unwrap();
    let j = rec.jacobians().unwrap();
    assert_eq!(j.dv_dq.shape(), (0, 0));
    assert_eq!(j.dq_dtheta.shape(), (0, 4));
    assert_eq!(j.dv_dtheta.shape(), (0, 4));
    let g = rec.vjp(&DVector::zeros(0), &DVector::zeros(0)).unwrap();
    assert_eq!((g.q.len(), g.tau.len(), g.theta.len()), (0, 0, 4));
    assert!(g.theta.iter().all(|x| *x == 0.0));
}

/// Two boxes resting side by side on a plane: each on its own free joint from the world
/// (two trees), or the second on a free joint from the first (one tree of 12 dofs). The
/// two models have the same numbers of bodies and dofs, and a workspace that served one
/// must not carry its trees into the other's Jacobians or VJPs.
fn two_boxes(chained: bool) -> Model {
    use stiction::math::{Inertia, SE3};
    use stiction::model::{CollisionShape, Geometry, WORLD};
    use stiction::{Body, Joint, ModelBuilder};
    let h = 0.05;
    let mut b = ModelBuilder::new(if chained { "two_boxes_chained" } else { "two_boxes" });
    b.add_link(Body::massless(WORLD).with_collision(CollisionShape::new(Geometry::Plane, SE3::identity())));
    let shape = || CollisionShape::new(Geometry::Box { half_extents: Vec3::new(h, h, h) }, SE3::identity());
    let body = |name: &str, mass: f64| {
        Body::new(name, Inertia::solid_box(mass, Vec3::new(2.0 * h, 2.0 * h, 2.0 * h))).with_collision(shape())
    };
    b.add_body(WORLD, Joint::free("ja").with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, h))), body("a", 1.0));
    let (parent, z) = if chained { ("a", 0.0) } else { (WORLD, h) };
    b.add_body(parent, Joint::free("jb").with_placement(SE3::from_translation(Vec3::new(0.3, 0.0, z))), body("b", 2.5));
    b.build().unwrap()
}

/// A recorded step of `model` after 50 steps from rest (the contacts closed), pushed
/// sideways so that friction works.
fn resting_record(model: &Model) -> stiction::tape::StepRecord {
    let mut s = Simulator::new(model.clone(), SimOptions { dt: 1e-3, ..Default::default() }).unwrap();
    let mut state = State { q: model.neutral(), v: DVector::zeros(model.nv()) };
    let mut tau = DVector::zeros(model.nv());
    tau[0] = 0.4;
    let u = Control::torques(tau);
    for _ in 0..50 {
        state = s.step(&state, &u).unwrap();
    }
    let (_, rec) = s.step_recorded(&state, &u).unwrap();
    assert!(rec.constraints().is_some_and(|c| c.contacts.len() >= 8), "{}: both boxes rest on the plane", model.name());
    rec
}

/// A workspace that served a model of two trees, reused for a model of one tree with the
/// same numbers of bodies and dofs (and back): the Jacobians and VJPs equal those of a
/// fresh workspace.
#[test]
fn a_workspace_reused_for_another_tree_matches_a_fresh_one() {
    use stiction::tape::Workspace;
    let (apart, chained) = (two_boxes(false), two_boxes(true));
    assert_eq!((apart.nbodies(), apart.nv()), (chained.nbodies(), chained.nv()));
    let nv = apart.nv();
    let mut rng = SplitMix64::new(5);
    let (gq, gv) = (random_vector(&mut rng, nv, 1.0), random_vector(&mut rng, nv, 1.0));
    let mut ws = Workspace::new(&apart);
    for model in [&apart, &chained, &apart] {
        let rec = resting_record(model);
        let reused = rec.jacobians_with(&mut ws).unwrap();
        let fresh = rec.jacobians().unwrap();
        for (name, a, b) in [
            ("dq_dq", &reused.dq_dq, &fresh.dq_dq),
            ("dq_dv", &reused.dq_dv, &fresh.dq_dv),
            ("dv_dq", &reused.dv_dq, &fresh.dv_dq),
            ("dv_dv", &reused.dv_dv, &fresh.dv_dv),
            ("dv_dtau", &reused.dv_dtau, &fresh.dv_dtau),
        ] {
            assert_eq!(a, b, "{}: {name} with a reused workspace", model.name());
        }
        let reused = rec.vjp_with(&mut ws, &gq, &gv).unwrap();
        let fresh = rec.vjp(&gq, &gv).unwrap();
        assert_eq!((&reused.q, &reused.v, &reused.tau), (&fresh.q, &fresh.v, &fresh.tau), "{}: VJP", model.name());
    }
}
