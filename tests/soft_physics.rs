//! Soft-body physics against closed forms: momentum of a free body, the patch test,
//! uniaxial stretch of a Neo-Hookean bar, Newton's quadratic convergence, inversion
//! and bad input.

use nalgebra::DVector;
use std::sync::Arc;
use stiction::math::{Mat3, SplitMix64, Vec3};
use stiction::soft::generate::box_mesh;
use stiction::soft::{
    static_equilibrium, step, MaterialModel, NewtonReport, SoftBody, SoftDamping, SoftIntegrator, SoftMaterial,
    SoftOptions, SoftState, TetMesh,
};
use stiction::{Error, SoftError};

const ROTATION_INVARIANT: [MaterialModel; 3] =
    [MaterialModel::Corotated, MaterialModel::StVenantKirchhoff, MaterialModel::StableNeoHookean];
const ALL: [MaterialModel; 4] = [
    MaterialModel::LinearElastic,
    MaterialModel::Corotated,
    MaterialModel::StVenantKirchhoff,
    MaterialModel::StableNeoHookean,
];

fn material(model: MaterialModel) -> SoftMaterial {
    SoftMaterial::new(model, 1e5, 0.3, 1000.0)
}

/// The static equilibrium from the rest positions, with default options.
fn equilibrium(body: &SoftBody, u: &DVector<f64>, targets: &DVector<f64>) -> (DVector<f64>, NewtonReport) {
    static_equilibrium(body, &body.rest_positions(), u, targets, &SoftOptions::default()).unwrap()
}

/// The body deformed by noise, translating and spinning at `omega` about the origin, with
/// velocity noise.
fn tumbling(body: &SoftBody, seed: u64, omega: Vec3) -> SoftState {
    let mut rng = SplitMix64::new(seed);
    let mut s = SoftState::rest(body);
    for i in 0..body.mesh().num_vertices() {
        let x = Vec3::new(s.x[3 * i], s.x[3 * i + 1], s.x[3 * i + 2]);
        let v = Vec3::new(0.3, -0.1, 0.2) + omega.cross(&x);
        for k in 0..3 {
            s.x[3 * i + k] += 0.003 * (rng.uniform() - 0.5);
            s.v[3 * i + k] = v[k] + 0.05 * (rng.uniform() - 0.5);
        }
    }
    s
}

fn momenta(body: &SoftBody, s: &SoftState) -> (Vec3, Vec3) {
    let (mut p, mut l) = (Vec3::zeros(), Vec3::zeros());
    for (i, &m) in body.masses().iter().enumerate() {
        let x = Vec3::new(s.x[3 * i], s.x[3 * i + 1], s.x[3 * i + 2]);
        let v = Vec3::new(s.v[3 * i], s.v[3 * i + 1], s.v[3 * i + 2]);
        p += v * m;
        l += x.cross(&v) * m;
    }
    (p, l)
}

/// Backward Euler keeps the linear momentum of a free, undamped body exactly. Its angular
/// momentum changes by exactly `h Σ m v⁺ × v` per step (the scheme's own drift, of order
/// `(hω)²`), which holds only if the internal forces have no net torque: checked to 1e-10.
#[test]
fn a_free_body_keeps_its_linear_momentum_and_its_angular_momentum_drifts_as_backward_euler_predicts() {
    for model in ROTATION_INVARIANT {
        let mesh = box_mesh([2, 2, 2], Vec3::new(0.2, 0.1, 0.1), Vec3::zeros()).unwrap();
        let body = Arc::new(SoftBody::builder(mesh, material(model)).gravity(Vec3::zeros()).build().unwrap());
        let mut s = tumbling(&body, 11, Vec3::new(1.0, -2.0, 3.0));
        let (p0, _) = momenta(&body, &s);
        let zero = DVector::zeros(body.ndof());
        let options = SoftOptions { dt: 1e-3, ..Default::default() };
        for _ in 0..100 {
            let (_, l) = momenta(&body, &s);
            let rec = step(&body, &s, &zero, &DVector::zeros(0), &options).unwrap();
            let next = rec.next_state().clone();
            let (p1, l1) = momenta(&body, &next);
            assert!((p1 - p0).norm() <= 1e-10 * p0.norm(), "{model:?}: linear momentum {p0:?} -> {p1:?}");
            let mut drift = Vec3::zeros();
            for (i, &m) in body.masses().iter().enumerate() {
                let v = Vec3::new(s.v[3 * i], s.v[3 * i + 1], s.v[3 * i + 2]);
                let vn = Vec3::new(next.v[3 * i], next.v[3 * i + 1], next.v[3 * i + 2]);
                drift += vn.cross(&v) * (m * options.dt);
            }
            assert!(
                (l1 - l - drift).norm() <= 1e-10 * l.norm(),
                "{model:?}: angular momentum {l:?} -> {l1:?}, drift {drift:?}"
            );
            s = next;
        }
    }
}

/// The patch test: the boundary of an irregular mesh moved by an affine map `x = A X + b`
/// leaves every interior vertex on the same map (uniform stress is in equilibrium), for
/// every material, at small and at large strain.
#[test]
fn every_material_passes_the_patch_test_on_an_irregular_mesh() {
    let regular = box_mesh([3, 3, 3], Vec3::new(0.3, 0.3, 0.3), Vec3::zeros()).unwrap();
    let mut rng = SplitMix64::new(5);
    let interior = |p: &Vec3| (0..3).all(|k| p[k] > 1e-9 && p[k] < 0.3 - 1e-9);
    let vertices: Vec<Vec3> = regular
        .vertices()
        .iter()
        .map(|p| {
            if interior(p) {
                p + Vec3::new(rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5) * 0.03
            } else {
                *p
            }
        })
        .collect();
    let mesh = TetMesh::new(vertices.clone(), regular.tets().to_vec()).unwrap();
    let boundary: Vec<usize> = (0..vertices.len()).filter(|&v| !interior(&vertices[v])).collect();
    let small = Mat3::identity() + Mat3::from_fn(|_, _| 0.01 * (rng.uniform() - 0.5));
    let large = Mat3::new(1.3, 0.2, 0.0, -0.1, 0.8, 0.1, 0.05, 0.0, 1.1);
    for model in ALL {
        let body = SoftBody::builder(mesh.clone(), material(model))
            .gravity(Vec3::zeros())
            .pin_vertices(&boundary)
            .build()
            .unwrap();
        for (name, a) in [("small", small), ("large", large)] {
            if model == MaterialModel::LinearElastic && name == "large" {
                continue;
            }
            let b = Vec3::new(0.01, -0.02, 0.03);
            let map = |p: &Vec3| a * p + b;
            let targets = DVector::from_iterator(
                body.pinned_dofs().len(),
                body.pinned_dofs().iter().map(|&d| map(&vertices[d / 3])[d % 3]),
            );
            let (x, report) = equilibrium(&body, &DVector::zeros(body.ndof()), &targets);
            for (i, p) in vertices.iter().enumerate() {
                let expect = map(p);
                for k in 0..3 {
                    assert!(
                        (x[3 * i + k] - expect[k]).abs() <= 1e-11,
                        "{model:?} {name}: vertex {i} off the affine map"
                    );
                }
            }
            eprintln!("{model:?} {name} strain: {} Newton iterations", report.iterations);
        }
    }
}

/// A stable Neo-Hookean bar stretched to 1.5, 1.2 and 1.01 times its length, its sides free: the lateral
/// stretch b solves `P₂₂ = μ b + λ'(a b² − α) a b = 0` and the nominal stress is
/// `P₁₁ = μ a + λ'(a b² − α) b²` (λ' = λ + μ, α = 1 + μ/λ'); the reaction on the pulled
/// face divided by its rest area matches it to 1e-8.
#[test]
fn a_stretched_neo_hookean_bar_matches_the_closed_form_nominal_stress() {
    let (len, w) = (0.4, 0.1);
    let mesh = box_mesh([4, 2, 2], Vec3::new(len, w, w), Vec3::zeros()).unwrap();
    let verts = mesh.vertices().to_vec();
    let (e, nu) = (1e5, 0.3);
    let mu = e / (2.0 * (1.0 + nu));
    let lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
    let lp = lambda + mu;
    let alpha = 1.0 + mu / lp;
    // Stretches only: compressed, the slender bar's homogeneous state is a saddle (it buckles).
    for a in [1.5, 1.2, 1.01] {
        let mut dofs = Vec::new();
        let mut targets = Vec::new();
        for (i, p) in verts.iter().enumerate() {
            if p.x == 0.0 {
                dofs.push((i, 0));
                targets.push((3 * i, 0.0));
            }
            if p.x == len {
                dofs.push((i, 0));
                targets.push((3 * i, a * len));
            }
            if *p == Vec3::zeros() {
                dofs.extend([(i, 1), (i, 2)]);
                targets.extend([(3 * i + 1, 0.0), (3 * i + 2, 0.0)]);
            }
            if *p == Vec3::new(0.0, 0.0, w) {
                dofs.push((i, 1));
                targets.push((3 * i + 1, 0.0));
            }
        }
        let body = SoftBody::builder(mesh.clone(), SoftMaterial::new(MaterialModel::StableNeoHookean, e, nu, 1000.0))
            .gravity(Vec3::zeros())
            .pin_dofs(&dofs)
            .build()
            .unwrap();
        targets.sort_by_key(|t| t.0);
        let t = DVector::from_iterator(targets.len(), targets.iter().map(|t| t.1));
        let (x, _) = equilibrium(&body, &DVector::zeros(body.ndof()), &t);
        // μ + λ' a (a b² − α) = 0.
        let b2 = (alpha - mu / (lp * a)) / a;
        let b = b2.sqrt();
        let p11 = mu * a + lp * (a * b2 - alpha) * b2;
        let f = body.elastic_forces(&x).unwrap();
        let reaction: f64 = verts.iter().enumerate().filter(|(_, p)| p.x == len).map(|(i, _)| -f[3 * i]).sum();
        let nominal = reaction / (w * w);
        assert!((nominal - p11).abs() <= 1e-8 * p11.abs(), "stretch {a}: nominal stress {nominal} vs {p11}");
        for (i, p) in verts.iter().enumerate() {
            let expect = Vec3::new(a * p.x, b * p.y, b * p.z);
            for k in 0..3 {
                assert!((x[3 * i + k] - expect[k]).abs() <= 1e-10, "stretch {a}: vertex {i}");
            }
        }
    }
}

/// Newton converges quadratically near the solution: a Neo-Hookean cantilever bending
/// under its own weight (tip drop about a fifth of its length).
#[test]
fn newton_converges_quadratically_on_a_bending_cantilever() {
    let mesh = box_mesh([8, 2, 2], Vec3::new(0.4, 0.05, 0.05), Vec3::zeros()).unwrap();
    let clamp: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == 0.0).collect();
    let body = SoftBody::builder(mesh, SoftMaterial::new(MaterialModel::StableNeoHookean, 3e5, 0.3, 1000.0))
        .pin_vertices(&clamp)
        .build()
        .unwrap();
    let targets =
        DVector::from_iterator(body.pinned_dofs().len(), body.pinned_dofs().iter().map(|&d| body.rest_positions()[d]));
    let (x, report) = equilibrium(&body, &DVector::zeros(body.ndof()), &targets);
    let tip = x.iter().skip(2).step_by(3).fold(f64::INFINITY, |m, z| m.min(*z));
    eprintln!("tip z {tip:.4}, steps {:?}, lengths {:?}", report.step_norms, report.step_lengths);
    assert!(tip < -0.04, "the cantilever should bend visibly, tip at {tip}");
    let s = &report.step_norms;
    // The last full steps: s_{k+1} ≤ C s_k² with a modest C (quadratic), and far below linear.
    let k = s.len() - 1;
    assert!(k >= 2, "expected several iterations");
    let ratio = s[k] / (s[k - 1] * s[k - 1]);
    assert!(ratio < 1e3, "not quadratic: steps {s:?}");
    assert!(s[k] < 1e-3 * s[k - 1], "not superlinear: steps {s:?}");
}

/// An inverting step keeps going with the stable Neo-Hookean model and reports the
/// inverted elements; bad materials and states are typed errors.
#[test]
fn inversion_is_reported_and_bad_input_is_refused() {
    let mesh = box_mesh([1, 1, 1], Vec3::new(0.1, 0.1, 0.1), Vec3::zeros()).unwrap();
    let top: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z > 0.05).collect();
    let bottom: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].z < 0.05).collect();
    let mut pins = top.clone();
    pins.extend(&bottom);
    let body = Arc::new(
        SoftBody::builder(mesh.clone(), material(MaterialModel::StableNeoHookean))
            .gravity(Vec3::zeros())
            .pin_vertices(&pins)
            .build()
            .unwrap(),
    );
    // Push the top face through the bottom face.
    let rest = body.rest_positions();
    let targets = DVector::from_iterator(
        body.pinned_dofs().len(),
        body.pinned_dofs().iter().map(|&d| if d % 3 == 2 && rest[d] > 0.05 { -0.05 } else { rest[d] }),
    );
    let rec =
        step(&body, &SoftState::rest(&body), &DVector::zeros(body.ndof()), &targets, &SoftOptions::default()).unwrap();
    assert!(rec.report().inverted_elements > 0, "the elements are inverted: {:?}", rec.report());
    assert!(rec.next_state().x.iter().all(|x| x.is_finite()));

    let bad = |m: SoftMaterial| SoftBody::builder(mesh.clone(), m).build().unwrap_err();
    for m in [
        SoftMaterial::new(MaterialModel::StableNeoHookean, 0.0, 0.3, 1000.0),
        SoftMaterial::new(MaterialModel::StableNeoHookean, f64::NAN, 0.3, 1000.0),
        SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.5, 1000.0),
        SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, -1.0, 1000.0),
        SoftMaterial::new(MaterialModel::StableNeoHookean, 1e5, 0.3, -1.0),
    ] {
        let err = bad(m);
        assert!(
            matches!(err.root(), Error::Soft(SoftError::InvalidMaterial { region, .. }) if region == "region 0"),
            "{err}"
        );
    }
    let mut s = SoftState::rest(&body);
    s.v[4] = f64::NAN;
    let err = step(&body, &s, &DVector::zeros(body.ndof()), &targets, &SoftOptions::default()).unwrap_err();
    assert!(matches!(err.root(), Error::NonFinite { index: 4, .. }), "{err}");
    let err = step(&body, &SoftState::rest(&body), &DVector::zeros(3), &targets, &SoftOptions::default()).unwrap_err();
    assert!(matches!(err.root(), Error::Dimension { .. }), "{err}");
    let err =
        SoftBody::builder(mesh.clone(), material(MaterialModel::Corotated)).pin_vertices(&[99]).build().unwrap_err();
    assert!(err.to_string().contains("vertex 99"), "{err}");
    let err = SoftBody::builder(mesh, material(MaterialModel::Corotated))
        .damping(SoftDamping { mass: -1.0, stiffness: 0.0 })
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("damping"), "{err}");
}

/// A cantilever (length 10 widths, ν = 0) under a small end load: its static tip deflection
/// converges to Euler–Bernoulli's `P L³ / (3 E I)` under mesh refinement (2 to 12 cells
/// across; the finest, 103,680 tets, within 2 %), for linear elasticity and the stable
/// Neo-Hookean model at small strain.
#[test]
fn a_cantilever_tip_deflection_converges_to_euler_bernoulli() {
    let (len, w, e): (f64, f64, f64) = (1.0, 0.1, 1e7);
    let inertia = w.powi(4) / 12.0;
    let load = 1.0;
    let exact = load * len.powi(3) / (3.0 * e * inertia);
    for model in [MaterialModel::LinearElastic, MaterialModel::StableNeoHookean] {
        let mut errors = Vec::new();
        for across in [2usize, 4, 6, 8, 12] {
            let mesh = box_mesh([10 * across, across, across], Vec3::new(len, w, w), Vec3::zeros()).unwrap();
            let clamp: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == 0.0).collect();
            let tip: Vec<usize> = (0..mesh.num_vertices()).filter(|&v| mesh.vertices()[v].x == len).collect();
            let body = SoftBody::builder(mesh, SoftMaterial::new(model, e, 0.0, 1000.0))
                .gravity(Vec3::zeros())
                .pin_vertices(&clamp)
                .build()
                .unwrap();
            let mut u = DVector::zeros(body.ndof());
            for &v in &tip {
                u[3 * v + 2] = -load / tip.len() as f64;
            }
            let targets = DVector::from_iterator(
                body.pinned_dofs().len(),
                body.pinned_dofs().iter().map(|&d| body.rest_positions()[d]),
            );
            let (x, _) = equilibrium(&body, &u, &targets);
            let rest = body.rest_positions();
            let deflection = -tip.iter().map(|&v| x[3 * v + 2] - rest[3 * v + 2]).sum::<f64>() / tip.len() as f64;
            errors.push((deflection - exact) / exact);
        }
        // Richardson: e(h) = e∞ + C h^p through the three finest meshes (h ∝ 1/6, 1/8, 1/12).
        let (e1, e2, e3) = (errors[2], errors[3], errors[4]);
        let p = solve_order(e1, e2, e3, [6.0, 8.0, 12.0]);
        let c = (e2 - e3) / ((1.0 / 8.0f64).powf(p) - (1.0 / 12.0f64).powf(p));
        let limit = e3 - c * (1.0 / 12.0f64).powf(p);
        eprintln!("{model:?}: relative errors {errors:?}, order {p:.2}, extrapolated {limit:.4}");
        assert!(errors.windows(2).all(|p| p[1].abs() < p[0].abs()), "{model:?}: no convergence {errors:?}");
        // The finest mesh (120 × 12 × 12 cells, 103,680 tets) itself is within 2 %, and the
        // sequence tends to a limit within 2 % (3D elasticity adds Timoshenko's shear share,
        // about 0.75 % at this slenderness with ν = 0).
        assert!(e3.abs() < 0.02, "{model:?}: the finest mesh is {e3} off Euler–Bernoulli");
        assert!(limit.abs() < 0.02, "{model:?}: the refined deflection tends to {limit} off Euler–Bernoulli");
    }
}

/// The order p with `(e₁ − e₂)/(e₂ − e₃) = (h₁^p − h₂^p)/(h₂^p − h₃^p)`, `h = 1/n`, by bisection.
fn solve_order(e1: f64, e2: f64, e3: f64, n: [f64; 3]) -> f64 {
    let target = (e1 - e2) / (e2 - e3);
    let ratio = |p: f64| ((1.0 / n[0]).powf(p) - (1.0 / n[1]).powf(p)) / ((1.0 / n[1]).powf(p) - (1.0 / n[2]).powf(p));
    let (mut lo, mut hi) = (0.1, 6.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if ratio(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The implicit midpoint rule keeps a free, undamped body's linear and angular momentum to
/// 1e-10 (every rotation-invariant material; under gravity, exactly as its impulse and
/// torque about the origin change them), and the total energy of a linear-elastic
/// body exactly (its energy is quadratic), while backward Euler loses energy.
#[test]
fn implicit_midpoint_keeps_momentum_and_the_energy_of_a_quadratic_material() {
    for model in ROTATION_INVARIANT.into_iter().chain([MaterialModel::LinearElastic]) {
        let mesh = box_mesh([2, 2, 2], Vec3::new(0.2, 0.1, 0.1), Vec3::zeros()).unwrap();
        let body =
            Arc::new(SoftBody::builder(mesh, material(model)).gravity(Vec3::new(0.0, 0.0, -9.81)).build().unwrap());
        let omega = if model == MaterialModel::LinearElastic { Vec3::zeros() } else { Vec3::new(1.0, -2.0, 3.0) };
        let mut s = tumbling(&body, 13, omega);
        let energy = |st: &SoftState| {
            let kinetic: f64 = (0..body.ndof()).map(|d| 0.5 * body.masses()[d / 3] * st.v[d] * st.v[d]).sum();
            let gravity: f64 = (0..body.mesh().num_vertices()).map(|i| body.masses()[i] * 9.81 * st.x[3 * i + 2]).sum();
            kinetic + gravity + body.elastic_energy(&st.x).unwrap()
        };
        let zero = DVector::zeros(body.ndof());
        let (p0, l0) = momenta(&body, &s);
        let e0 = energy(&s);
        let g = Vec3::new(0.0, 0.0, -9.81) * body.total_mass();
        let com = |st: &SoftState| -> Vec3 {
            (0..body.mesh().num_vertices())
                .map(|i| Vec3::new(st.x[3 * i], st.x[3 * i + 1], st.x[3 * i + 2]) * body.masses()[i])
                .sum()
        };
        let options = SoftOptions { dt: 1e-3, integrator: SoftIntegrator::ImplicitMidpoint, ..Default::default() };
        let mut t = 0.0;
        for _ in 0..100 {
            let c0 = com(&s);
            let rec = step(&body, &s, &zero, &DVector::zeros(0), &options).unwrap();
            let next = rec.next_state().clone();
            t += options.dt;
            let (p1, l1) = momenta(&body, &next);
            // Gravity changes P by M g t; its torque about the origin changes L by
            // h (x_mid_com × M g) per step.
            let expect_p = p0 + g * t;
            assert!((p1 - expect_p).norm() <= 1e-10 * p0.norm(), "{model:?}: linear momentum {p1:?} vs {expect_p:?}");
            let mid = (c0 + com(&next)) / (2.0 * body.total_mass());
            let (_, l_before) = momenta(&body, &s);
            let expect_l = l_before + mid.cross(&g) * options.dt;
            // Linear elasticity is not rotation invariant: its internal forces have a torque.
            assert!(
                model == MaterialModel::LinearElastic || (l1 - expect_l).norm() <= 1e-10 * l0.norm().max(p0.norm()),
                "{model:?}: angular momentum {l1:?} vs {expect_l:?}"
            );
            s = next;
        }
        if model == MaterialModel::LinearElastic {
            let e1 = energy(&s);
            assert!((e1 - e0).abs() <= 1e-10 * e0.abs(), "energy {e0} -> {e1}");
            let mut be = SoftState::rest(&body);
            be.x.copy_from(&s.x);
            be.v.copy_from(&s.v);
            let eb0 = energy(&be);
            for _ in 0..100 {
                be = step(&body, &be, &zero, &DVector::zeros(0), &SoftOptions { dt: 1e-3, ..Default::default() })
                    .unwrap()
                    .next_state()
                    .clone();
            }
            assert!(
                energy(&be) < eb0 - 1e-6 * eb0.abs(),
                "backward Euler should lose energy: {eb0} -> {}",
                energy(&be)
            );
        }
    }
}
