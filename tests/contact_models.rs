//! The no-slip and purely viscous contact models (Drumwright 2015; `ContactModel`):
//! their physics (no tangential slip at all; viscous deceleration against the closed form
//! of linear damping; a force-closure grasp that holds), and their step Jacobians against
//! Ridders finite differences in a box-on-ground scene, a two-finger grasp and a planar
//! legged model standing, every block (q, v, τ, θ — including the viscous coefficient μ_v)
//! to 1e-6 relative inside one contact mode.

mod common;

use common::contact::{check_scenes, free_body, options, pose_q, Scene};
use nalgebra::DVector;
use stiction::constraint::ContactRows;
use stiction::dynamics::{forward_kinematics, Data};
use stiction::math::{Inertia, Vec3, SE3};
use stiction::model::{samples, Body, CollisionShape, Geometry, Material, WORLD};
use stiction::solver::lcp::SolvePath;
use stiction::step::{ConstraintRecord, ContactModel, ContactSolver, RowKind};
use stiction::{Control, Joint, Model, ModelBuilder, SimOptions, Simulator, State};

/// Per-shape viscous coefficient of the scenes (N·s/m); a pair uses the mean.
const MU_V: f64 = 2.0;

fn sim_options(model: ContactModel) -> SimOptions {
    let mut o = options();
    o.contact.model = model;
    o
}

/// Coulomb μ 0.3 (ignored by both models) and viscous μ_v.
fn mat(mu_v: f64) -> Material {
    Material::new(0.3, 0.0).with_viscous_friction(mu_v)
}

fn ground(b: &mut ModelBuilder, m: Material) {
    common::contact::ground(b, m, 0.0);
}

const BOX_H: Vec3 = Vec3::new(0.1, 0.08, 0.06);

fn box_model(name: &str, mu_v: f64) -> Model {
    let mut b = ModelBuilder::new(name);
    ground(&mut b, mat(mu_v));
    free_body(&mut b, "box", Geometry::Box { half_extents: BOX_H }, Inertia::solid_box(1.0, BOX_H * 2.0), mat(mu_v));
    b.build().unwrap()
}

/// A 1 kg box on the ground, pressed 0.2 mm in, turned 0.3 rad about z; `push` newtons
/// along its x axis, `vx` its x velocity.
fn box_scene(name: &'static str, model: ContactModel, push: f64, vx: f64) -> Scene {
    let m = box_model(name, MU_V);
    let q = pose_q(&m, Vec3::new(0.0, 0.0, BOX_H.z - 2e-4), Vec3::z(), 0.3);
    let mut v = DVector::zeros(6);
    v[3] = vx;
    let mut tau = DVector::zeros(6);
    tau[3] = push;
    let mut params: Vec<String> = vec!["mass:box".into(), "inertia:box".into(), "com:box".into()];
    if model == ContactModel::Viscous {
        params.extend(["viscous_friction:box".into(), "viscous_friction:world".into()]);
    }
    Scene { name, model: m, options: sim_options(model), state: State { q, v }, tau, params, spread: (2e-5, 2e-3) }
}

/// The grasp scene (`samples::two_finger_grasp`): `n` cubes squeezed with `squeeze`
/// newtons per finger, at rest.
fn grasp(n: usize, squeeze: f64, tilt: f64, layers: usize, m: Material) -> (Model, State, DVector<f64>) {
    let model = samples::two_finger_grasp(n, layers, m);
    let q = samples::two_finger_grasp_configuration(&model, n, tilt);
    let nv = model.nv();
    let mut tau = DVector::zeros(nv);
    tau[0] = squeeze;
    tau[1] = -squeeze;
    (model, State { q, v: DVector::zeros(nv) }, tau)
}

/// One cube between the fingers, tilted by 1.5 mrad: with the faces exactly parallel the
/// no-slip grasp is rigid and over-determined (the tangent rows fix the cube's rotation,
/// so the normal rows cannot also remove a tilted penetration) — every normal row is
/// tied and any perturbation picks a different subset of loaded corners, a
/// non-differentiable point. Tilted about an axis that is not a face's, one corner of
/// each face carries the load and the others separate by several cm/s, a mode that the
/// perturbations of the check keep. The viscous grasp lets the cube turn, so its faces
/// stay parallel: every corner loaded.
fn grasp_scene(name: &'static str, model: ContactModel) -> Scene {
    let tilt = if model == ContactModel::NoSlip { 1.5e-3 } else { 0.0 };
    let (m, state, tau) = grasp(1, 10.0, tilt, 1, mat(MU_V));
    let mut params: Vec<String> = vec!["mass:cube0".into(), "mass:left_finger".into(), "com:cube0".into()];
    if model == ContactModel::Viscous {
        params.extend(["viscous_friction:cube0".into(), "viscous_friction:left_finger".into()]);
    }
    Scene { name, model: m, options: sim_options(model), state, tau, params, spread: (2e-5, 2e-3) }
}

/// A planar biped: a 2 kg torso on a planar x–z–pitch joint, two legs (thigh and shin
/// rods of 0.15 m, hinges about y at the torso's ends) with 2 cm ball feet; knees bent
/// (hips ±0.3 rad, knees ∓0.6 rad) so that each foot stands below its hip, pressed
/// 0.15 mm into the ground, at rest; small hip and knee torques.
fn legged_scene(name: &'static str, model: ContactModel) -> Scene {
    let mut b = ModelBuilder::new(name);
    ground(&mut b, mat(MU_V));
    let (seg, r) = (0.15, 0.02);
    b.add_body(
        WORLD,
        Joint::planar("base", Vec3::y()),
        Body::new("torso", Inertia::solid_box(2.0, Vec3::new(0.3, 0.1, 0.05))),
    );
    for (leg, x) in [("front", 0.12), ("back", -0.12)] {
        b.add_body(
            "torso",
            Joint::revolute(format!("{leg}_hip"), Vec3::y())
                .with_placement(SE3::from_translation(Vec3::new(x, 0.0, 0.0))),
            stiction::model::samples::rod(&format!("{leg}_thigh"), 0.3, seg, 0.015, -Vec3::z()),
        );
        b.add_body(
            &format!("{leg}_thigh"),
            Joint::revolute(format!("{leg}_knee"), Vec3::y())
                .with_placement(SE3::from_translation(Vec3::new(0.0, 0.0, -seg))),
            stiction::model::samples::rod(&format!("{leg}_shin"), 0.2, seg, 0.015, -Vec3::z()).with_collision(
                CollisionShape::new(Geometry::Sphere { radius: r }, SE3::from_translation(Vec3::new(0.0, 0.0, -seg)))
                    .with_material(mat(MU_V)),
            ),
        );
    }
    let m = b.build().unwrap();
    let a: f64 = 0.3;
    let height = 2.0 * seg * a.cos() + r - 1.5e-4;
    let mut q = m.neutral();
    // Planar coordinates: x along x̂, the second along ŷ × x̂ = −ẑ, pitch about ŷ.
    q[1] = -height;
    for (k, angle) in [a, -2.0 * a, -a, 2.0 * a].iter().enumerate() {
        q[3 + k] = *angle;
    }
    let tau = DVector::from_vec(vec![0.0, 0.0, 0.0, 0.4, -0.3, -0.2, 0.3]);
    let mut params: Vec<String> = vec!["mass:torso".into(), "mass:front_shin".into(), "com:front_thigh".into()];
    if model == ContactModel::Viscous {
        params.extend(["viscous_friction:front_shin".into(), "viscous_friction:world".into()]);
    }
    let nv = m.nv();
    Scene {
        name,
        model: m,
        options: sim_options(model),
        state: State { q, v: DVector::zeros(nv) },
        tau,
        params,
        spread: (2e-5, 2e-3),
    }
}

fn scenes() -> Vec<Scene> {
    vec![
        box_scene("box_no_slip_pushed", ContactModel::NoSlip, 3.0, 0.0),
        box_scene("box_no_slip_moving", ContactModel::NoSlip, 0.0, 0.05),
        box_scene("box_viscous_moving", ContactModel::Viscous, 0.0, 0.5),
        box_scene("box_viscous_pushed", ContactModel::Viscous, 2.0, 0.0),
        grasp_scene("grasp_no_slip", ContactModel::NoSlip),
        grasp_scene("grasp_viscous", ContactModel::Viscous),
        legged_scene("biped_no_slip", ContactModel::NoSlip),
        legged_scene("biped_viscous", ContactModel::Viscous),
    ]
}

#[test]
fn contact_model_jacobians_match_finite_differences() {
    // The default solver: the pivoting method (PPM).
    check_scenes(scenes());
}

#[test]
fn contact_model_jacobians_match_finite_differences_with_the_boxed_lcp() {
    let scenes = scenes()
        .into_iter()
        .map(|mut s| {
            s.options.contact.solver = ContactSolver::BoxedLcp;
            s
        })
        .collect();
    check_scenes(scenes);
}

/// `J v⁺` of every constraint row of a recorded step (J at the step's start q).
fn row_velocities(model: &Model, q: &DVector<f64>, c: &ConstraintRecord, v_next: &DVector<f64>) -> DVector<f64> {
    let mut data = Data::new(model);
    forward_kinematics(model, &mut data, q.as_slice()).unwrap();
    let rows = ContactRows::new(model, &data, &c.contacts).unwrap();
    &rows.jacobian() * v_next
}

/// The largest tangential contact velocity after a step.
fn max_slip(model: &Model, q: &DVector<f64>, c: &ConstraintRecord, v_next: &DVector<f64>) -> f64 {
    let w = row_velocities(model, q, c, v_next);
    (0..w.len()).filter(|r| r % 3 != 0).fold(0.0f64, |m, r| m.max(w[r].abs()))
}

#[test]
fn no_slip_box_pushed_sideways_never_slips() {
    // 5 N along the ground on a 1 kg box: Coulomb friction with μ = 0.3 (bound 2.9 N)
    // lets it slide; no slip holds every contact point still.
    let m = box_model("box_push", 0.0);
    // Touching (1e-7 m in), so that pushing the penetration out does not launch the box.
    let start = State { q: pose_q(&m, Vec3::new(0.0, 0.0, BOX_H.z - 1e-7), Vec3::z(), 0.3), v: DVector::zeros(6) };
    let mut tau = DVector::zeros(6);
    tau[3] = 5.0;
    let control = Control::torques(tau);
    for (model, must_hold) in [(ContactModel::NoSlip, true), (ContactModel::Coulomb, false)] {
        let mut sim = Simulator::new(m.clone(), sim_options(model)).unwrap();
        let mut st = start.clone();
        let mut worst = 0.0f64;
        for _ in 0..300 {
            let (next, rec) = sim.step_recorded(&st, &Control::torques(control.tau.clone())).unwrap();
            let c = rec.constraints().expect("the box touches the ground");
            assert_eq!(c.contacts.len(), 4, "a face on the ground: four corners");
            worst = worst.max(max_slip(&m, &st.q, c, &next.v));
            st = next;
        }
        let moved = ((st.q[0] - start.q[0]).powi(2) + (st.q[1] - start.q[1]).powi(2)).sqrt();
        if must_hold {
            assert!(worst <= 1e-9, "no-slip: tangential contact velocity {worst:e}");
            assert!(moved < 1e-12, "no-slip: the box moved {moved:e} m");
        } else {
            assert!(worst > 1e-3 && moved > 1e-3, "Coulomb: slip {worst:e}, moved {moved:e}");
        }
        println!("{}: max tangential velocity {worst:.1e} m/s, moved {moved:.1e} m", model.name());
    }
}

#[test]
fn viscous_box_decelerates_like_linear_damping() {
    // Four corners, each with the pair coefficient μ_v: m dv/dt = −4 μ_v v, so
    // v(t) = v0 exp(−4 μ_v t / m). The step treats the damping implicitly.
    let mu_v = 0.25; // per shape, so the pair's mean is 0.25 as well
    let m = box_model("box_viscous", mu_v);
    let v0 = 0.5;
    let mut v = DVector::zeros(6);
    v[3] = v0;
    // Touching (1e-7 m in): pushing a deeper penetration out would launch the box, and
    // the viscous rows act only at contacts that close within the step.
    let mut st = State { q: pose_q(&m, Vec3::new(0.0, 0.0, BOX_H.z - 1e-7), Vec3::z(), 0.0), v };
    let mut sim = Simulator::new(m.clone(), sim_options(ContactModel::Viscous)).unwrap();
    let dt = sim.options().dt;
    let mass = 1.0;
    let mut worst = 0.0f64;
    for k in 1..=1000 {
        let (next, rec) = sim.step_recorded(&st, &Control::torques(DVector::zeros(6))).unwrap();
        assert_eq!(rec.constraints().unwrap().contacts.len(), 4);
        st = next;
        if k % 100 == 0 {
            let t = k as f64 * dt;
            let exact = v0 * (-4.0 * mu_v * t / mass).exp();
            let err = (st.v[3] - exact).abs() / exact;
            assert!(err < 0.01, "t = {t}: v = {} vs closed form {exact} (rel err {err:e})", st.v[3]);
            worst = worst.max(err);
        }
    }
    // The decay is large enough to be measured: v(1 s) = v0 e^{-1}.
    assert!(st.v[3] < 0.4 * v0);
    println!("viscous: worst relative deviation from v0·exp(−4μ_v t/m) {worst:.1e}");
}

#[test]
fn no_slip_grasp_holds_two_boxes_for_100_steps() {
    // The paper's grasping experiment: two fingers squeeze two boxes side by side, 12
    // contacts per pair of touching bodies (three slabs a body, four corners a slab), 36 in
    // all, dt = 0.01 s, gravity down, nothing below.
    let steps = 100;
    for (model, must_hold) in [(ContactModel::NoSlip, true), (ContactModel::Coulomb, false)] {
        let (m, mut st, tau) = grasp(2, 20.0, 0.0, 3, Material::new(0.1, 0.0));
        let mut o = sim_options(model);
        o.dt = 0.01;
        o.contact.warm_start = true;
        let mut sim = Simulator::new(m.clone(), o).unwrap();
        let z0 = [st.q[4], st.q[11]];
        let mut contacts = 0;
        let mut worst_slip = 0.0f64;
        for _ in 0..steps {
            let (next, rec) = sim.step_recorded(&st, &Control::torques(tau.clone())).unwrap();
            let c = rec.constraints().expect("the fingers touch the boxes");
            contacts = contacts.max(c.contacts.len());
            worst_slip = worst_slip.max(max_slip(&m, &st.q, c, &next.v));
            st = next;
        }
        let drop = (z0[0] - st.q[4]).max(z0[1] - st.q[11]);
        println!(
            "{}: {contacts} contacts, boxes dropped {drop:.2e} m in {steps} steps, slip {worst_slip:.1e}",
            model.name()
        );
        if must_hold {
            assert_eq!(contacts, 36, "three face pairs, twelve contacts each");
            assert!(drop.abs() < 1e-6, "no-slip grasp: the boxes dropped {drop:e} m");
            assert!(worst_slip <= 1e-9, "no-slip grasp: tangential velocity {worst_slip:e}");
        } else {
            // μ = 0.1 with 20 N of squeeze holds 2 N per face, less than the boxes' weight.
            assert!(drop > 0.01, "Coulomb μ = 0.1 should not hold: dropped {drop:e} m");
        }
    }
}

#[test]
fn the_tangent_rows_of_each_model() {
    // No-slip: unbounded equality rows; viscous: regularized equality rows 1/(h μ_v);
    // viscous with μ_v = 0: frictionless (collapsed friction boxes).
    let s = box_scene("rows", ContactModel::NoSlip, 0.0, 0.0);
    for (model, mu_v) in [(ContactModel::NoSlip, MU_V), (ContactModel::Viscous, MU_V), (ContactModel::Viscous, 0.0)] {
        let m = box_model("rows", mu_v);
        let mut sim = Simulator::new(m, sim_options(model)).unwrap();
        let (_, rec) = sim.step_recorded(&s.state, &Control::torques(DVector::zeros(6))).unwrap();
        let c = rec.constraints().unwrap();
        for (r, kind) in c.rows.iter().enumerate() {
            let reg = c.regularization[r];
            match (kind, model) {
                (RowKind::ContactFriction { .. }, ContactModel::Viscous) if mu_v > 0.0 => {
                    assert!((reg - 1.0 / (sim.options().dt * mu_v)).abs() < 1e-9 * reg, "{reg}");
                }
                (RowKind::ContactFriction { .. }, ContactModel::Viscous) => {
                    assert_eq!(reg, 0.0);
                    assert!(c.impulses[r].abs() <= 1e-12, "μ_v = 0: no friction impulse");
                }
                _ => assert_eq!(reg, 0.0),
            }
        }
    }
}

/// The LCP tolerance of the scenes' options.
fn o_tolerance() -> f64 {
    options().contact.lcp.tolerance
}

#[test]
fn the_solvers_agree_on_the_contact_models() {
    // The pivoting solver (Auto) and the boxed LCP solver give the same velocities.
    for s in scenes() {
        let mut out = vec![];
        for solver in [ContactSolver::Auto, ContactSolver::BoxedLcp] {
            let mut o = s.options.clone();
            o.contact.solver = solver;
            let mut sim = Simulator::new(s.model.clone(), o).unwrap();
            out.push(sim.step(&s.state, &Control::torques(s.tau.clone())).unwrap().v);
            let stats = sim.last_constraints().unwrap().stats;
            // The boxed LCP solves exactly: by its first guess (every row clamping), by
            // pivoting with Dantzig, or by Lemke where Dantzig's friction fix-point fails
            // (the grasp with the split recovery, whose velocity stage has no push-out bias).
            let expected: &[SolvePath] = if solver == ContactSolver::Auto {
                &[SolvePath::Ppm]
            } else {
                &[SolvePath::FirstGuess, SolvePath::Dantzig, SolvePath::Lemke]
            };
            assert!(expected.contains(&stats.path), "{}: {:?}", s.name, stats.path);
            assert!(stats.residual <= o_tolerance(), "{}: {stats:?}", s.name);
        }
        let scale = out[1].amax().max(1.0);
        assert!((&out[0] - &out[1]).amax() <= 1e-9 * scale, "{}: {} vs {}", s.name, out[0], out[1]);
    }
}

#[test]
fn contact_model_names_round_trip() {
    for m in [ContactModel::Coulomb, ContactModel::NoSlip, ContactModel::Viscous] {
        assert_eq!(ContactModel::from_name(m.name()), Some(m));
    }
    assert_eq!(ContactModel::from_name("slippery"), None);
    let json = serde_json::to_string(&ContactModel::NoSlip).unwrap();
    assert_eq!(json, "\"no_slip\"");
}
