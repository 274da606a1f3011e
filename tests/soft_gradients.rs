//! The adjoint of the soft body's implicit step against Ridders' extrapolation of finite
//! differences: every Jacobian block (state, velocities, vertex forces, pin targets,
//! E, ν, ρ and both damping coefficients) to 1e-6 relative, for every material, and the
//! VJP against the Jacobians' transpose.

use nalgebra::{DMatrix, DVector};
use std::sync::Arc;
use stiction::gradcheck::fd::ridders;
use stiction::math::{SplitMix64, Vec3};
use stiction::soft::{
    identify, rollout, step, MaterialModel, SoftBody, SoftDamping, SoftFitOptions, SoftIntegrator, SoftLinearSolver,
    SoftMaterial, SoftOptions, SoftState, SoftTrajectory, TetMesh,
};
use stiction::Result;

/// A box of `n` cells along x, 1 × 1 across, 6 tets per cell (Kuhn split).
fn bar(n: usize, size: f64) -> TetMesh {
    let idx = |i: usize, j: usize, k: usize| i + (n + 1) * (j + 2 * k);
    let mut vertices = Vec::new();
    for k in 0..2 {
        for j in 0..2 {
            for i in 0..=n {
                vertices.push(Vec3::new(i as f64 * size, j as f64 * size, k as f64 * size));
            }
        }
    }
    let mut tets = Vec::new();
    for i in 0..n {
        let c = |dx: usize, dy: usize, dz: usize| idx(i + dx, dy, dz);
        let (v0, v7) = (c(0, 0, 0), c(1, 1, 1));
        let paths = [
            [c(1, 0, 0), c(1, 1, 0)],
            [c(1, 0, 0), c(1, 0, 1)],
            [c(0, 1, 0), c(1, 1, 0)],
            [c(0, 1, 0), c(0, 1, 1)],
            [c(0, 0, 1), c(1, 0, 1)],
            [c(0, 0, 1), c(0, 1, 1)],
        ];
        for [a, b] in paths {
            let t = [v0, a, b, v7];
            let x = t.map(|v| vertices[v]);
            let vol = (x[1] - x[0]).dot(&(x[2] - x[0]).cross(&(x[3] - x[0])));
            tets.push(if vol > 0.0 { t } else { [v0, b, a, v7] });
        }
    }
    TetMesh::new(vertices, tets).unwrap()
}

struct Scene {
    body: Arc<SoftBody>,
    state: SoftState,
    u: DVector<f64>,
    targets: DVector<f64>,
    options: SoftOptions,
}

fn scene(model: MaterialModel, seed: u64) -> Scene {
    let mut rng = SplitMix64::new(seed);
    let mesh = bar(3, 0.1);
    let pins: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == 0.0).collect();
    let body = SoftBody::builder(mesh, SoftMaterial::new(model, 2e5, 0.3, 1000.0))
        .damping(SoftDamping { mass: 0.3, stiffness: 0.01 })
        .pin_vertices(&pins)
        .build()
        .unwrap();
    let n = body.ndof();
    let mut x = body.rest_positions();
    for d in 0..n {
        x[d] += 0.01 * (rng.uniform() - 0.5);
    }
    let v = DVector::from_fn(n, |_, _| 0.2 * (rng.uniform() - 0.5));
    let u = DVector::from_fn(n, |_, _| 0.5 * (rng.uniform() - 0.5));
    let targets = DVector::from_iterator(
        body.pinned_dofs().len(),
        body.pinned_dofs().iter().map(|&d| x[d] + 0.001 * (rng.uniform() - 0.5)),
    );
    Scene {
        body: Arc::new(body),
        state: SoftState { x, v },
        u,
        targets,
        options: SoftOptions { dt: 5e-3, ..Default::default() },
    }
}

/// `(x⁺, v⁺)` stacked, for FD.
fn outputs(
    s: &Scene,
    body: &Arc<SoftBody>,
    state: &SoftState,
    u: &DVector<f64>,
    targets: &DVector<f64>,
) -> Result<DVector<f64>> {
    let rec = step(body, state, u, targets, &s.options)?;
    let next = rec.next_state();
    Ok(DVector::from_iterator(2 * next.x.len(), next.x.iter().chain(next.v.iter()).copied()))
}

/// Ridders against one analytic column; returns the relative error.
fn column_error(analytic: DVector<f64>, f: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64) -> (f64, f64) {
    let est = ridders(f, h0).unwrap();
    let scale = analytic.amax().max(est.derivative.amax()).max(1e-8);
    ((&analytic - &est.derivative).amax() / scale, est.error.unwrap_or(0.0) / scale)
}

fn stacked(a: &DMatrix<f64>, b: &DMatrix<f64>, c: usize) -> DVector<f64> {
    DVector::from_iterator(a.nrows() + b.nrows(), a.column(c).iter().chain(b.column(c).iter()).copied())
}

/// A large-deformation scene: a softer bar of two regions (the first of `model`, the
/// second corotated and denser), sagging fast, with a long step.
fn two_region_scene(model: MaterialModel) -> Scene {
    let mut rng = SplitMix64::new(21);
    let mesh = bar(4, 0.1);
    let regions = mesh
        .tets()
        .iter()
        .map(|t| if t.iter().map(|&v| mesh.vertices()[v].x).sum::<f64>() < 0.8 { 0 } else { 1 })
        .collect();
    let mesh = TetMesh::with_regions(mesh.vertices().to_vec(), mesh.tets().to_vec(), regions).unwrap();
    let pins: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == 0.0).collect();
    let body = SoftBody::builder(mesh, SoftMaterial::new(model, 3e4, 0.35, 800.0))
        .region_material(1, SoftMaterial::new(MaterialModel::Corotated, 5e4, 0.2, 1500.0))
        .damping(SoftDamping { mass: 0.1, stiffness: 0.02 })
        .pin_vertices(&pins)
        .build()
        .unwrap();
    let n = body.ndof();
    let mut x = body.rest_positions();
    for i in 0..body.mesh().num_vertices() {
        // Bent down by a fifth of the length at the tip, plus noise.
        let along = x[3 * i] / 0.4;
        x[3 * i + 2] -= 0.08 * along * along;
        for k in 0..3 {
            x[3 * i + k] += 0.005 * (rng.uniform() - 0.5);
        }
    }
    for d in body.pinned_dofs() {
        x[*d] = body.rest_positions()[*d];
    }
    let v = DVector::from_fn(n, |i, _| if i % 3 == 2 { -1.0 } else { 0.0 } + 0.3 * (rng.uniform() - 0.5));
    let u = DVector::from_fn(n, |_, _| 2.0 * (rng.uniform() - 0.5));
    let targets = DVector::from_iterator(
        body.pinned_dofs().len(),
        body.pinned_dofs().iter().map(|&d| x[d] + 0.002 * (rng.uniform() - 0.5)),
    );
    Scene {
        body: Arc::new(body),
        state: SoftState { x, v },
        u,
        targets,
        options: SoftOptions { dt: 2e-2, ..Default::default() },
    }
}

fn check_model(model: MaterialModel) {
    check_scene(model, scene(model, 7), "small strain");
    check_scene(model, two_region_scene(model), "two regions, large strain");
    let mut midpoint = two_region_scene(model);
    midpoint.options.integrator = SoftIntegrator::ImplicitMidpoint;
    check_scene(model, midpoint, "two regions, implicit midpoint");
    // Inexact Newton with a kept single-precision factor: the forward step against
    // Ridders, its VJP (conjugate gradients with the kept factor) against the Jacobians
    // (a direct factorization).
    let mut kept = two_region_scene(model);
    kept.options.linear_solver = SoftLinearSolver::KEPT_SINGLE;
    check_scene(model, kept, "two regions, kept factor");
}

fn check_scene(model: MaterialModel, s: Scene, label: &str) {
    let rec = step(&s.body, &s.state, &s.u, &s.targets, &s.options).unwrap();
    let j = rec.jacobians().unwrap();
    let n = s.body.ndof();
    let mut worst = 0.0f64;
    let mut check = |name: &str, c: usize, analytic: DVector<f64>, f: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64| {
        let (err, est) = column_error(analytic, f, h0);
        assert!(
            err < 1e-6,
            "{model:?} ({label}): {name} column {c}: relative error {err:.3e} (Ridders' estimate {est:.1e})"
        );
        worst = worst.max(err);
    };
    for c in 0..n {
        let f = |e: f64| {
            let mut st = s.state.clone();
            st.x[c] += e;
            outputs(&s, &s.body, &st, &s.u, &s.targets)
        };
        check("x", c, stacked(&j.x_x, &j.v_x, c), &f, 1e-4);
        let f = |e: f64| {
            let mut st = s.state.clone();
            st.v[c] += e;
            outputs(&s, &s.body, &st, &s.u, &s.targets)
        };
        check("v", c, stacked(&j.x_v, &j.v_v, c), &f, 1e-2);
        let f = |e: f64| {
            let mut u = s.u.clone();
            u[c] += e;
            outputs(&s, &s.body, &s.state, &u, &s.targets)
        };
        check("u", c, stacked(&j.x_u, &j.v_u, c), &f, 1.0);
    }
    for c in 0..s.targets.len() {
        let f = |e: f64| {
            let mut t = s.targets.clone();
            t[c] += e;
            outputs(&s, &s.body, &s.state, &s.u, &t)
        };
        check("targets", c, stacked(&j.x_targets, &j.v_targets, c), &f, 1e-4);
    }
    let theta = s.body.param_values();
    let names = s.body.param_names();
    for c in 0..theta.len() {
        let f = |e: f64| {
            let mut th = theta.clone();
            th[c] += e * theta[c].abs().max(1e-2);
            let body = Arc::new(s.body.with_param_values(th.as_slice())?);
            outputs(&s, &body, &s.state, &s.u, &s.targets).map(|o| o / theta[c].abs().max(1e-2))
        };
        check(&names[c], c, stacked(&j.x_theta, &j.v_theta, c), &f, 1e-2);
    }
    // The VJP is the Jacobians' transpose applied to the cotangents.
    let mut rng = SplitMix64::new(3);
    let gx = DVector::from_fn(n, |_, _| rng.uniform() - 0.5);
    let gv = DVector::from_fn(n, |_, _| rng.uniform() - 0.5);
    let g = rec.vjp(&gx, &gv).unwrap();
    let expect_x = j.x_x.transpose() * &gx + j.v_x.transpose() * &gv;
    let expect_theta = j.x_theta.transpose() * &gx + j.v_theta.transpose() * &gv;
    assert!((&g.x - &expect_x).amax() <= 1e-9 * expect_x.amax(), "{model:?}: VJP in x");
    assert!((&g.theta - &expect_theta).amax() <= 1e-9 * expect_theta.amax(), "{model:?}: VJP in θ");
    let r = rec.report();
    eprintln!(
        "{model:?} ({label}): worst relative error {worst:.2e}; Newton {} iterations, steps {:?}",
        r.iterations, r.step_norms
    );
}

#[test]
fn linear_elastic_step_jacobians_match_ridders() {
    check_model(MaterialModel::LinearElastic);
}

#[test]
fn corotated_step_jacobians_match_ridders() {
    check_model(MaterialModel::Corotated);
}

#[test]
fn st_venant_kirchhoff_step_jacobians_match_ridders() {
    check_model(MaterialModel::StVenantKirchhoff);
}

#[test]
fn stable_neo_hookean_step_jacobians_match_ridders() {
    check_model(MaterialModel::StableNeoHookean);
}

/// A 100-step rollout's reverse sweep against Ridders on a random linear loss of every
/// state: θ (both regions' E, ν, ρ and the damping), the initial state, and forces and
/// pin targets at chosen steps, to 1e-5 relative.
#[test]
fn a_hundred_step_rollout_vjp_matches_ridders() {
    let s = two_region_scene(MaterialModel::StableNeoHookean);
    let options = SoftOptions { dt: 5e-3, ..s.options };
    let steps = 100;
    let n = s.body.ndof();
    let mut rng = SplitMix64::new(99);
    let controls: Vec<DVector<f64>> = (0..steps).map(|_| DVector::from_fn(n, |_, _| rng.uniform() - 0.5)).collect();
    let targets: Vec<DVector<f64>> = (0..steps).map(|k| s.targets.map(|t| t + 1e-4 * (k as f64).sin())).collect();
    let wx: Vec<DVector<f64>> = (0..steps).map(|_| DVector::from_fn(n, |_, _| rng.uniform() - 0.5)).collect();
    let wv: Vec<DVector<f64>> = (0..steps).map(|_| DVector::from_fn(n, |_, _| 0.01 * (rng.uniform() - 0.5))).collect();
    let loss = |body: &Arc<SoftBody>,
                state: &SoftState,
                controls: &[DVector<f64>],
                targets: &[DVector<f64>]|
     -> Result<DVector<f64>> {
        let r = rollout(body, state, controls, targets, &options)?;
        let l: f64 = r.states().iter().enumerate().map(|(k, st)| wx[k].dot(&st.x) + wv[k].dot(&st.v)).sum();
        Ok(DVector::from_element(1, l))
    };
    let r = rollout(&s.body, &s.state, &controls, &targets, &options).unwrap();
    let g = r.backward(&wx, &wv).unwrap();
    let check = |name: &str, analytic: f64, f: &dyn Fn(f64) -> Result<DVector<f64>>, h0: f64| {
        let est = ridders(f, h0).unwrap();
        let fd = est.derivative[0];
        let err = (analytic - fd).abs() / analytic.abs().max(fd.abs());
        assert!(
            err < 1e-5,
            "{name}: analytic {analytic:.9e}, Ridders {fd:.9e} (± {:.1e}): relative error {err:.2e}",
            est.error.unwrap_or(0.0)
        );
        eprintln!("rollout {name}: relative error {err:.2e}");
    };
    let theta = s.body.param_values();
    for (c, name) in s.body.param_names().iter().enumerate() {
        let scale = theta[c].abs();
        let f = |e: f64| {
            let mut th = theta.clone();
            th[c] += e * scale;
            loss(&Arc::new(s.body.with_param_values(th.as_slice())?), &s.state, &controls, &targets).map(|l| l / scale)
        };
        check(name, g.theta[c], &f, 1e-3);
    }
    let dir = DVector::from_fn(n, |_, _| rng.uniform() - 0.5);
    let f = |e: f64| loss(&s.body, &SoftState { x: &s.state.x + &dir * e, v: s.state.v.clone() }, &controls, &targets);
    check("x0", g.x0.dot(&dir), &f, 1e-4);
    let f = |e: f64| loss(&s.body, &SoftState { x: s.state.x.clone(), v: &s.state.v + &dir * e }, &controls, &targets);
    check("v0", g.v0.dot(&dir), &f, 1e-2);
    for k in [0, 50, 99] {
        let f = |e: f64| {
            let mut c = controls.clone();
            c[k] += &dir * e;
            loss(&s.body, &s.state, &c, &targets)
        };
        check(&format!("u[{k}]"), g.u[k].dot(&dir), &f, 1.0);
    }
    let tdir = DVector::from_fn(s.targets.len(), |_, _| rng.uniform() - 0.5);
    let f = |e: f64| {
        let mut t = targets.clone();
        t[10] += &tdir * e;
        loss(&s.body, &s.state, &controls, &t)
    };
    check("targets[10]", g.targets[10].dot(&tdir), &f, 1e-4);
}

/// System identification: E and ν of a swaying Neo-Hookean bar recovered from noise-free
/// observed positions to 1e-6 relative, from a start 50 % and 17 % off.
#[test]
fn identification_recovers_youngs_modulus_and_poisson_ratio_from_noise_free_data() {
    let s = two_region_scene(MaterialModel::StableNeoHookean);
    let options = SoftOptions { dt: 5e-3, ..s.options };
    let truth = s.body.param_values();
    let steps = 40;
    let controls = vec![s.u.clone(); steps];
    let targets = vec![s.targets.clone(); steps];
    let r = rollout(&s.body, &s.state, &controls, &targets, &options).unwrap();
    let observed =
        r.states().iter().enumerate().filter(|(k, _)| (k + 1) % 5 == 0).map(|(k, st)| (k + 1, st.x.clone())).collect();
    let data = SoftTrajectory { initial: s.state.clone(), controls, targets, observed, options };
    let mut start = truth.clone();
    start[0] *= 1.5;
    start[1] *= 0.83;
    let guess = s.body.with_param_values(start.as_slice()).unwrap();
    let fit = identify(&guess, &data, &["youngs_modulus:0", "poisson:0"], &SoftFitOptions::default()).unwrap();
    eprintln!(
        "fit: {:?} after {} iterations, cost {:.3e} -> {:.3e}",
        fit.values, fit.iterations, fit.initial_cost, fit.cost
    );
    for (c, &col) in [0usize, 1].iter().enumerate() {
        let err = (fit.values[c] - truth[col]).abs() / truth[col];
        assert!(err < 1e-6, "{}: fitted {} vs {} (relative error {err:.2e})", fit.names[c], fit.values[c], truth[col]);
    }
}

/// The public gradient checker covers soft bodies: every block of a two-region step passes
/// at 1e-6 with Ridders, and the report measures (an impossible tolerance fails it).
#[test]
fn the_gradient_checker_covers_soft_steps() {
    use stiction::gradcheck::{check_soft_step, FdMethod, GradcheckConfig, SOFT_STEP_BLOCKS};
    let s = two_region_scene(MaterialModel::StableNeoHookean);
    let config = GradcheckConfig::default();
    let report = check_soft_step(&s.body, &s.state, &s.u, &s.targets, &s.options, &config).unwrap();
    assert_eq!(report.blocks.len(), SOFT_STEP_BLOCKS.len());
    assert!(report.passed(), "{report}");
    eprintln!("{report}");
    let strict = GradcheckConfig { method: FdMethod::Central, rel_tol: 1e-14, ..config };
    let report = check_soft_step(&s.body, &s.state, &s.u, &s.targets, &s.options, &strict).unwrap();
    assert!(!report.passed(), "central differences cannot agree to 1e-14");
}
