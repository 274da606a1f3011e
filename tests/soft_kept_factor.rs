//! The inexact-Newton mode of a soft-body step (`SoftLinearSolver::KeptFactor`): one kept
//! factor per step preconditioning conjugate gradients on the exact Hessian. Its steps,
//! static equilibria and gradients equal the direct mode's; its reports count what it
//! did (factorizations, conjugate-gradient iterations, projections, the final check);
//! the 10k-tet block of the speed target takes at most three Newton iterations and one
//! factorization; hard steps (large strain in one step, an indefinite Hessian) renew
//! the factor or project the element tangents and still reach the same solution.

use nalgebra::DVector;
use std::sync::Arc;
use stiction::math::{SplitMix64, Vec3};
use stiction::soft::generate::box_mesh;
use stiction::soft::{
    rollout, static_equilibrium, step, MaterialModel, SoftBody, SoftDamping, SoftLinearSolver, SoftMaterial,
    SoftOptions, SoftState, SoftStepRecord,
};

const KEPT: [SoftLinearSolver; 2] =
    [SoftLinearSolver::KeptFactor { single_precision: true }, SoftLinearSolver::KeptFactor { single_precision: false }];

/// A `c³`-cell block of side 0.2 m (6 tets per cell) clamped at z = 0, Neo-Hookean.
fn block(c: usize, youngs_modulus: f64) -> Arc<SoftBody> {
    let mesh = box_mesh([c, c, c], Vec3::new(0.2, 0.2, 0.2), Vec3::zeros()).unwrap();
    let base: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let material = SoftMaterial::new(MaterialModel::StableNeoHookean, youngs_modulus, 0.3, 1000.0);
    Arc::new(SoftBody::builder(mesh, material).pin_vertices(&base).build().unwrap())
}

/// The block at rest with the velocity field `v = f(x)`.
fn moving(body: &SoftBody, f: impl Fn(Vec3) -> Vec3) -> SoftState {
    let mut s = SoftState::rest(body);
    for i in 0..body.mesh().num_vertices() {
        let v = f(Vec3::new(s.x[3 * i], s.x[3 * i + 1], s.x[3 * i + 2]));
        for k in 0..3 {
            s.v[3 * i + k] = v[k];
        }
    }
    s
}

fn held(body: &SoftBody, s: &SoftState) -> DVector<f64> {
    DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| s.x[d]))
}

fn run(body: &Arc<SoftBody>, s: &SoftState, options: &SoftOptions) -> SoftStepRecord {
    step(body, s, &DVector::zeros(body.ndof()), &held(body, s), options).unwrap()
}

/// The bench's scene of issue #21's speed target: 10,368 tets swaying at `v = (2z, 0, 0)`,
/// dt = 10 ms. At most 3 Newton iterations and one factorization, the same end state.
#[test]
fn the_ten_thousand_tet_step_takes_three_newton_iterations_and_one_factorization() {
    let body = block(12, 1e5);
    assert_eq!(body.mesh().num_tets(), 10_368);
    let s = moving(&body, |x| Vec3::new(2.0 * x.z, 0.0, 0.0));
    let direct = run(&body, &s, &SoftOptions { dt: 1e-2, ..Default::default() });
    let options = SoftOptions { dt: 1e-2, linear_solver: SoftLinearSolver::KEPT_SINGLE, ..Default::default() };
    let kept = run(&body, &s, &options);
    let r = kept.report();
    eprintln!("direct: {:?}\nkept: {r:?}", direct.report());
    assert!(r.iterations <= 3, "{} Newton iterations", r.iterations);
    assert_eq!(r.factorizations, 1);
    assert!(r.final_check);
    assert_eq!(r.linear_iterations.len(), r.iterations);
    assert_eq!(r.step_norms.len(), r.iterations + 1);
    assert!(*r.step_norms.last().unwrap() <= 1e-10 * 0.2 * 3f64.sqrt());
    assert_eq!(direct.report().factorizations, direct.report().iterations);
    let dx = (&kept.next_state().x - &direct.next_state().x).amax();
    let dv = (&kept.next_state().v - &direct.next_state().v).amax();
    assert!(dx < 1e-12 && dv < 1e-10, "end state differs by {dx:.3e} m, {dv:.3e} m/s");
}

/// Steps of growing difficulty, both precisions: the end state equals the direct mode's
/// to well within Newton's tolerance, and the VJP (conjugate gradients with the kept
/// factor) equals the direct one's.
#[test]
fn kept_factor_steps_and_vjps_equal_the_direct_ones() {
    let body = block(4, 1e5);
    let mut rng = SplitMix64::new(11);
    let n = body.ndof();
    let gx = DVector::from_fn(n, |_, _| rng.uniform() - 0.5);
    let gv = DVector::from_fn(n, |_, _| rng.uniform() - 0.5);
    let cases: [(&str, f64, SoftState); 3] = [
        ("sway", 1e-2, moving(&body, |x| Vec3::new(2.0 * x.z, 0.0, 0.0))),
        ("twist", 2e-2, moving(&body, |x| Vec3::new(-(x.y - 0.1), x.x - 0.1, 0.0) * (20.0 * x.z))),
        ("crush", 4e-2, moving(&body, |x| Vec3::new(0.0, 0.0, -15.0 * x.z))),
    ];
    for (name, dt, s) in cases {
        let direct = run(&body, &s, &SoftOptions { dt, ..Default::default() });
        let g_direct = direct.vjp(&gx, &gv).unwrap();
        for solver in KEPT {
            let kept = run(&body, &s, &SoftOptions { dt, linear_solver: solver, ..Default::default() });
            let r = kept.report();
            eprintln!("{name} {solver:?}: {r:?}");
            let dx = (&kept.next_state().x - &direct.next_state().x).amax();
            assert!(dx < 1e-11, "{name} {solver:?}: end state differs by {dx:.3e} m");
            assert!(r.factorizations >= 1 && r.linear_iterations.iter().all(|&k| k >= 1));
            let g = kept.vjp(&gx, &gv).unwrap();
            for (what, a, b) in [
                ("x", &g.x, &g_direct.x),
                ("v", &g.v, &g_direct.v),
                ("targets", &g.targets, &g_direct.targets),
                ("theta", &g.theta, &g_direct.theta),
            ] {
                let err = (a - b).amax() / b.amax();
                assert!(err < 1e-9, "{name} {solver:?}: VJP in {what} differs by {err:.3e} (relative)");
            }
        }
    }
}

/// A step that crushes a soft block to half its height: the Hessian changes so much
/// that the kept factor is renewed, and the compressed elements' exact Hessian is
/// indefinite on the way, so that tangents are projected; the solution is the direct
/// mode's.
#[test]
fn a_crushing_step_renews_the_factor_and_projects_and_still_converges() {
    let body = block(4, 2e4);
    let s = moving(&body, |x| Vec3::new(0.0, 0.0, -40.0 * x.z));
    let dt = 5e-2;
    let direct = run(&body, &s, &SoftOptions { dt, ..Default::default() });
    let kept = run(&body, &s, &SoftOptions { dt, linear_solver: SoftLinearSolver::KEPT_SINGLE, ..Default::default() });
    let (rd, r) = (direct.report(), kept.report());
    eprintln!("direct: {rd:?}\nkept: {r:?}");
    assert!(r.factorizations > 1, "the factor was never renewed: {r:?}");
    assert!(r.projected_iterations > 0 && rd.projected_iterations > 0, "no projection: {r:?}");
    let dx = (&kept.next_state().x - &direct.next_state().x).amax();
    assert!(dx < 1e-9, "end state differs by {dx:.3e} m");
}

/// Static equilibrium of a cantilever under gravity: the same with either solver, to
/// within Newton's tolerance (the kept factor, from the straight rod, is far from the
/// Hessian of the bent one, so its final check step, at most the tolerance, leaves an
/// error of the same order rather than the direct mode's quadratically small one).
#[test]
fn kept_factor_static_equilibrium_equals_the_direct_one() {
    let mesh = box_mesh([8, 2, 2], Vec3::new(0.4, 0.05, 0.05), Vec3::zeros()).unwrap();
    let root: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == 0.0).collect();
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 1e6, 0.3, 1000.0))
        .pin_vertices(&root)
        .build()
        .unwrap();
    let (u, x0) = (DVector::zeros(body.ndof()), body.rest_positions());
    let targets = DVector::from_iterator(root.len() * 3, body.pinned_dofs().iter().map(|&d| x0[d]));
    let (xd, rd) = static_equilibrium(&body, &x0, &u, &targets, &SoftOptions::default()).unwrap();
    for solver in KEPT {
        let options = SoftOptions { linear_solver: solver, ..Default::default() };
        let (xk, rk) = static_equilibrium(&body, &x0, &u, &targets, &options).unwrap();
        eprintln!("direct {rd:?}\n{solver:?}: {rk:?}");
        let dx = (&xk - &xd).amax();
        let tolerance = options.tolerance * (0.4f64.powi(2) + 2.0 * 0.05f64.powi(2)).sqrt();
        assert!(dx < 0.5 * tolerance, "{solver:?}: equilibrium differs by {dx:.3e} m");
        assert!(rk.factorizations < rd.factorizations);
    }
}

/// A damped 30-step rollout: the tape's gradients through the kept factors equal the
/// direct tape's.
#[test]
fn kept_factor_rollout_gradients_equal_the_direct_ones() {
    let mesh = box_mesh([3, 3, 3], Vec3::new(0.1, 0.1, 0.1), Vec3::zeros()).unwrap();
    let base: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0).collect();
    let body = Arc::new(
        SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 5e4, 0.35, 1000.0))
            .damping(SoftDamping { mass: 0.5, stiffness: 0.002 })
            .pin_vertices(&base)
            .build()
            .unwrap(),
    );
    let n = body.ndof();
    let mut rng = SplitMix64::new(5);
    let s = moving(&body, |x| Vec3::new(3.0 * x.z, -x.z, 0.0));
    let steps = 30;
    let controls: Vec<DVector<f64>> =
        (0..steps).map(|_| DVector::from_fn(n, |_, _| 0.2 * (rng.uniform() - 0.5))).collect();
    let targets = vec![held(&body, &s); steps];
    let gx: Vec<DVector<f64>> = (0..steps).map(|_| DVector::from_fn(n, |_, _| rng.uniform() - 0.5)).collect();
    let gv: Vec<DVector<f64>> = (0..steps).map(|_| DVector::from_fn(n, |_, _| rng.uniform() - 0.5)).collect();
    let direct = rollout(&body, &s, &controls, &targets, &SoftOptions { dt: 5e-3, ..Default::default() }).unwrap();
    let gd = direct.backward(&gx, &gv).unwrap();
    let options = SoftOptions { dt: 5e-3, linear_solver: SoftLinearSolver::KEPT_SINGLE, ..Default::default() };
    let kept = rollout(&body, &s, &controls, &targets, &options).unwrap();
    let gk = kept.backward(&gx, &gv).unwrap();
    let rel = |a: &DVector<f64>, b: &DVector<f64>| (a - b).amax() / b.amax();
    assert!(rel(&gk.x0, &gd.x0) < 1e-8, "x0: {:.3e}", rel(&gk.x0, &gd.x0));
    assert!(rel(&gk.v0, &gd.v0) < 1e-8, "v0: {:.3e}", rel(&gk.v0, &gd.v0));
    assert!(rel(&gk.theta, &gd.theta) < 1e-8, "theta: {:.3e}", rel(&gk.theta, &gd.theta));
}

/// The top face of a block pushed through its bottom face within one step: the stable
/// Neo-Hookean model keeps going through inversion, with either solver, and both report
/// the inverted elements and reach the same configuration.
#[test]
fn a_step_through_inversion_keeps_going_with_a_kept_factor() {
    let mesh = box_mesh([3, 3, 2], Vec3::new(0.1, 0.1, 0.1), Vec3::zeros()).unwrap();
    let faces: Vec<usize> =
        (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z == 0.0 || mesh.vertices()[v].z == 0.1).collect();
    let material = SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, 1000.0);
    let body = Arc::new(SoftBody::builder(mesh, material).gravity(Vec3::zeros()).pin_vertices(&faces).build().unwrap());
    let rest = body.rest_positions();
    let targets = DVector::from_iterator(
        body.pinned_dofs().len(),
        body.pinned_dofs().iter().map(|&d| if d % 3 == 2 && rest[d] > 0.05 { -0.05 } else { rest[d] }),
    );
    let u = DVector::zeros(body.ndof());
    let direct = step(&body, &SoftState::rest(&body), &u, &targets, &SoftOptions::default()).unwrap();
    let options = SoftOptions { linear_solver: SoftLinearSolver::KEPT_SINGLE, ..Default::default() };
    let kept = step(&body, &SoftState::rest(&body), &u, &targets, &options).unwrap();
    let (rd, r) = (direct.report(), kept.report());
    eprintln!("direct: {rd:?}\nkept: {r:?}");
    assert!(rd.inverted_elements > 0 && r.inverted_elements == rd.inverted_elements);
    assert!(kept.next_state().x.iter().all(|x| x.is_finite()));
    let dx = (&kept.next_state().x - &direct.next_state().x).amax();
    assert!(dx < 1e-9, "end state differs by {dx:.3e} m");
}
