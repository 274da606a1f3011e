//! Integration tests of the gradient checker: the step check on real scenes (which
//! needs the analytic step Jacobians: until they exist the check must fail with the
//! "not implemented" error and nothing else), the finite-difference step Jacobians
//! against known structure, and scene files.

use nalgebra::DVector;
use stiction::gradcheck::{check_step, fd_step_jacobians, FdMethod, GradcheckConfig, Scene};
use stiction::model::{samples, ParamSpec};
use stiction::{Control, SimOptions, State};

fn scene(name: &str) -> Scene {
    Scene::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/scenes").join(name)).unwrap()
}

/// Runs the check on every case; passes when it passes, or when the analytic
/// Jacobians are still missing.
fn assert_passes_or_not_implemented(scene: &Scene, n: usize) {
    let config = GradcheckConfig { rel_tol: scene.tolerance.unwrap_or(1e-6), ..Default::default() };
    for (k, (state, control)) in scene.cases(n, 3).iter().enumerate() {
        match check_step(&scene.model, &scene.options, &scene.params, state, control, &config) {
            Ok(report) => assert!(report.passed(), "case {k}:\n{report}"),
            Err(e) => assert!(e.to_string().contains("not implemented"), "case {k}: unexpected error {e}"),
        }
    }
}

#[test]
fn arm7_scene_gradcheck() {
    let s = scene("arm7.json");
    assert_eq!(s.params.len(), 5);
    assert!(s.state.is_some() && s.control.is_some());
    assert_passes_or_not_implemented(&s, 1);
}

#[test]
fn all_joint_types_scene_gradcheck() {
    let s = scene("all_joint_types.json");
    assert_eq!(s.model.joints()[0].kind, stiction::JointType::Free);
    assert_passes_or_not_implemented(&s, 3);
}

/// The finite-difference Jacobians of a step have the structure the integrator implies:
/// for a free body without gravity, velocity products aside, `∂v⁺/∂τ = h M⁻¹`, and
/// `∂q⁺/∂τ = h ∂v⁺/∂τ` (q⁺ = q ⊕ h v⁺ with q fixed, first order in the tangent).
#[test]
fn fd_step_jacobians_have_the_expected_structure() {
    let model = samples::random_tree(1, 3, true);
    let options = SimOptions {
        dt: 1e-3,
        gravity: Some(stiction::math::Vec3::zeros()),
        integrator: stiction::step::IntegratorOptions {
            velocity_products: stiction::step::VelocityProducts::Explicit,
            ..Default::default()
        },
        ..Default::default()
    };
    let state = State { q: model.random_configuration(2), v: DVector::zeros(6) };
    let control = Control::torques(DVector::from_vec(vec![0.1, -0.2, 0.3, 1.0, 0.5, -0.4]));
    let params = ParamSpec::parse(&model, &["mass:b0"]).unwrap();
    let j = fd_step_jacobians(&model, &options, &params, &state, &control, FdMethod::Ridders, 1e-3).unwrap();
    let mut data = stiction::Data::new(&model);
    let m = stiction::dynamics::crba(&model, &mut data, state.q.as_slice()).unwrap().clone();
    let want = m.try_inverse().unwrap() * options.dt;
    assert!((&j.dv_dtau - &want).amax() < 1e-9 * want.amax(), "{}", (&j.dv_dtau - &want).amax());
    // From rest, q⁺ ⊖ q = h v⁺, and perturbations of it are measured through
    // J_r⁻¹(h v⁺) = 1 + O(|h v⁺|), so ∂q⁺/∂τ = h ∂v⁺/∂τ up to |h v⁺| ≈ h² |M⁻¹τ| ~ 1e-4.
    let diff = (&j.dq_dtau - &j.dv_dtau * options.dt).amax();
    assert!(diff < 1e-3 * j.dq_dtau.amax(), "{diff}");
    // ∂v⁺/∂m: v⁺ = h M⁻¹ τ, linear in 1/m for the translational part.
    assert_eq!(j.dv_dtheta.shape(), (6, 1));
    assert_eq!(j.dq_dq.shape(), (6, 6));
}

#[test]
fn check_step_reports_errors() {
    let model = samples::arm7();
    let options = SimOptions::default();
    let params = ParamSpec::new();
    let state = State::neutral(&model);
    let bad = Control::torques(DVector::zeros(3));
    assert!(check_step(&model, &options, &params, &state, &bad, &GradcheckConfig::default()).is_err());
    let control = Control::torques(DVector::zeros(7));
    // A spec parsed for another model does not fit.
    let big = samples::spatial_chain(12);
    let other = ParamSpec::parse(&big, &["damping:joint11"]).or_else(|_| {
        let name = format!("placement:{}", big.joints()[11].name);
        ParamSpec::parse(&big, &[name.as_str()])
    });
    let other = other.unwrap();
    let err = check_step(&model, &options, &other, &state, &control, &GradcheckConfig::default()).unwrap_err();
    assert!(err.to_string().contains("does not fit"), "{err}");
    let bad_config = GradcheckConfig { rel_tol: 0.0, ..Default::default() };
    assert!(check_step(&model, &options, &params, &state, &control, &bad_config).is_err());
}

/// A model without degrees of freedom: every block is empty (0 rows) and passes, with
/// both finite-difference methods; no panic on the empty blocks.
#[test]
fn gradcheck_of_a_model_without_dofs() {
    use stiction::{Body, Joint, JointType, ModelBuilder};
    let mut b = ModelBuilder::new("welded");
    b.add_link(Body::from_mass_properties(
        "a",
        1.0,
        stiction::math::Vec3::zeros(),
        nalgebra::Matrix3::identity() * 0.1,
    ));
    b.add_joint("world", "a", Joint::new("weld", JointType::Fixed));
    let model = b.build().unwrap();
    let params = ParamSpec::parse(&model, &["mass:a", "gravity"]).unwrap();
    let state = State { q: DVector::zeros(0), v: DVector::zeros(0) };
    let control = Control::torques(DVector::zeros(0));
    let config = GradcheckConfig { method: FdMethod::Both, ..Default::default() };
    let report = check_step(&model, &SimOptions::default(), &params, &state, &control, &config).unwrap();
    assert!(!report.blocks.is_empty());
    assert!(report.blocks.iter().all(|b| b.shape.0 == 0 && b.passed), "{report}");
    assert!(report.passed());
}

#[test]
fn a_scene_names_an_mjcf_file() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mjcf");
    let direct = stiction::io::load_mjcf(dir.join("arm.xml"), &Default::default()).unwrap();
    let s = Scene::parse(r#"{ "mjcf": "arm.xml", "params": ["gravity"] }"#, &dir).unwrap();
    assert_eq!(s.model, direct.model);
    assert_eq!(Some(s.options.dt), direct.timestep);
    assert_eq!(s.params.len(), 3);
    let e = Scene::parse(r#"{ "mjcf": "arm.xml", "sample": "arm7" }"#, &dir).unwrap_err().to_string();
    assert!(e.contains("exactly one model source"), "{e}");
    let e = Scene::parse(r#"{ "mjcf": "missing.xml" }"#, &dir).unwrap_err().to_string();
    assert!(e.contains("missing.xml"), "{e}");
}
