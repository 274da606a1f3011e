//! Per-joint kinematics against finite differences: the motion subspace `S(q)` is the
//! derivative of `X_J(q ⊕ ε e_k)`, the bias `c_J` is the apparent derivative of
//! `S(q) q̇`, and `⊕`/`⊖` are inverse to each other — for every joint type.

mod common;
use common::{rel_err, ridders};
use nalgebra::DVector;
use stiction::math::{se3_log, Motion, SplitMix64, Vec3, SE3};
use stiction::JointType;

fn joint_types() -> Vec<JointType> {
    let a = Vec3::new(0.3, -0.5, 0.8).normalize();
    vec![
        JointType::Revolute { axis: a },
        JointType::Continuous { axis: Vec3::x() },
        JointType::Prismatic { axis: a },
        JointType::Screw { axis: a, pitch: 0.07 },
        JointType::Spherical,
        JointType::Free,
        JointType::Planar { normal: Vec3::new(0.2, 0.1, 1.0).normalize() },
        JointType::Universal { axis1: Vec3::x(), axis2: Vec3::new(0.0, 0.6, 0.8) },
    ]
}

fn random_q(kind: &JointType, rng: &mut SplitMix64) -> Vec<f64> {
    let mut q: Vec<f64> = (0..kind.nq()).map(|_| rng.range(-2.0, 2.0)).collect();
    match kind {
        JointType::Spherical => q.copy_from_slice(&rng.unit_quaternion()),
        JointType::Free => q[3..7].copy_from_slice(&rng.unit_quaternion()),
        _ => {}
    }
    q
}

fn transform(kind: &JointType, q: &[f64]) -> SE3 {
    let mut s = [Motion::zero(); 6];
    kind.kinematics(q, &[0.0; 6][..kind.nv()], &mut s).0
}

fn plus(kind: &JointType, q: &[f64], dv: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; kind.nq()];
    kind.integrate(q, dv, &mut out);
    out
}

#[test]
fn motion_subspace_is_the_derivative_of_the_joint_transform() {
    let mut rng = SplitMix64::new(21);
    for kind in joint_types() {
        for _ in 0..20 {
            let q = random_q(&kind, &mut rng);
            let nv = kind.nv();
            let mut s = [Motion::zero(); 6];
            let x0 = kind.kinematics(&q, &vec![0.0; nv], &mut s).0;
            for k in 0..nv {
                let f = |e: f64| {
                    let mut dv = vec![0.0; nv];
                    dv[k] = e;
                    let x = transform(&kind, &plus(&kind, &q, &dv));
                    DVector::from_column_slice(se3_log(&(x0.inverse() * x)).to_vector().as_slice())
                };
                let (d, _) = ridders(&f, 0.05);
                let expected = DVector::from_column_slice(s[k].to_vector().as_slice());
                assert!(rel_err(&d, &expected, 1.0) < 1e-9, "{} column {k}: {d} vs {expected}", kind.name());
            }
        }
    }
}

#[test]
fn joint_bias_is_the_apparent_derivative_of_s_qdot() {
    let mut rng = SplitMix64::new(22);
    for kind in joint_types() {
        for _ in 0..20 {
            let q = random_q(&kind, &mut rng);
            let nv = kind.nv();
            let qd: Vec<f64> = (0..nv).map(|_| rng.range(-2.0, 2.0)).collect();
            let mut s = [Motion::zero(); 6];
            let (_, c) = kind.kinematics(&q, &qd, &mut s);
            let f = |e: f64| {
                let dv: Vec<f64> = qd.iter().map(|x| x * e).collect();
                let qe = plus(&kind, &q, &dv);
                let mut se = [Motion::zero(); 6];
                kind.kinematics(&qe, &qd, &mut se);
                let sv = (0..nv).fold(Motion::zero(), |acc, k| acc + se[k] * qd[k]);
                DVector::from_column_slice(sv.to_vector().as_slice())
            };
            let (d, _) = ridders(&f, 0.05);
            let expected = DVector::from_column_slice(c.to_vector().as_slice());
            assert!(rel_err(&d, &expected, 1.0) < 1e-9, "{}: {d} vs {expected}", kind.name());
        }
    }
}

#[test]
fn integrate_and_difference_are_inverse() {
    let mut rng = SplitMix64::new(23);
    for kind in joint_types() {
        for _ in 0..20 {
            let q = random_q(&kind, &mut rng);
            let nv = kind.nv();
            let dv: Vec<f64> = (0..nv).map(|_| rng.range(-1.0, 1.0)).collect();
            let q1 = plus(&kind, &q, &dv);
            let mut back = vec![0.0; nv];
            kind.difference(&q, &q1, &mut back);
            for k in 0..nv {
                assert!((back[k] - dv[k]).abs() < 1e-12, "{}: {back:?} vs {dv:?}", kind.name());
            }
        }
    }
}

#[test]
fn fixed_joint_has_no_coordinates() {
    let k = JointType::Fixed;
    assert_eq!((k.nq(), k.nv()), (0, 0));
    let mut s = [Motion::zero(); 6];
    let (x, c) = k.kinematics(&[], &[], &mut s);
    assert_eq!(x, SE3::identity());
    assert_eq!(c, Motion::zero());
}

/// Unit vector `e_i` of length `n`.
fn unit_vector(n: usize, i: usize) -> DVector<f64> {
    let mut e = DVector::zeros(n);
    e[i] = 1.0;
    e
}

/// `Model::tangent_gradient` is `Eᵀ g` with `E = ∂(q ⊕ δ)/∂δ`, checked column by column
/// against Ridders differences of `Model::integrate`.
#[test]
fn tangent_gradient_is_the_transposed_retraction_jacobian() {
    for model in [stiction::model::samples::all_joint_types(), stiction::model::samples::random_tree(6, 3, true)] {
        let mut rng = SplitMix64::new(11);
        for seed in 0..3 {
            // `q ⊕ 0` picks the quaternion sign the integrator writes (free joints go through
            // a rotation matrix), so the differences below start exactly at `q`.
            let raw = model.random_configuration(seed);
            let q = model.integrate(&raw, &DVector::zeros(model.nv()), 0.0).unwrap();
            let g = common::random_vector(&mut rng, model.nq(), 1.0);
            let analytic = model.tangent_gradient(&q, &g).unwrap();
            let mut fd = DVector::zeros(model.nv());
            for j in 0..model.nv() {
                let ej = unit_vector(model.nv(), j);
                let (col, _) = ridders(&|h| model.integrate(&q, &ej, h).unwrap(), 1e-3);
                fd[j] = g.dot(&col);
            }
            let e = rel_err(&analytic, &fd, 1.0);
            assert!(e < 1e-9, "{}: tangent_gradient off by {e:.2e}\n{analytic}\n{fd}", model.name());
        }
    }
}

/// `Model::coordinate_gradient` is `Dᵀ g` with `D = ∂(q̂ ⊖ q)/∂q` for quaternions of any
/// length (the difference normalises them), checked against Ridders differences of
/// `Model::difference`; and `D E = I`, so mapping to coordinates and back is the identity.
#[test]
fn coordinate_gradient_differentiates_the_normalised_difference() {
    for model in [stiction::model::samples::all_joint_types(), stiction::model::samples::random_tree(6, 3, true)] {
        let mut rng = SplitMix64::new(12);
        for seed in 0..3 {
            let unit_q = model.random_configuration(seed);
            // Stretch every coordinate by 1.3: quaternions become non-unit, the rest moves.
            let q = &unit_q * 1.3;
            let reference = model.normalize(&q).unwrap();
            let g = common::random_vector(&mut rng, model.nv(), 1.0);
            let analytic = model.coordinate_gradient(&q, &g).unwrap();
            let mut fd = DVector::zeros(model.nq());
            for i in 0..model.nq() {
                let ei = unit_vector(model.nq(), i);
                let (col, _) = ridders(&|h| model.difference(&reference, &(&q + &ei * h)).unwrap(), 1e-3);
                fd[i] = g.dot(&col);
            }
            let e = rel_err(&analytic, &fd, 1.0);
            assert!(e < 1e-9, "{}: coordinate_gradient off by {e:.2e}\n{analytic}\n{fd}", model.name());
            let back = model.tangent_gradient(&unit_q, &model.coordinate_gradient(&unit_q, &g).unwrap()).unwrap();
            assert!(rel_err(&back, &g, 1.0) < 1e-14, "{}: D E != I", model.name());
        }
    }
}

/// Both maps reject wrong lengths and degenerate quaternions with typed errors.
#[test]
fn gradient_maps_reject_bad_input() {
    let model = stiction::model::samples::all_joint_types();
    let q = model.neutral();
    assert!(model.tangent_gradient(&q, &DVector::zeros(model.nv())).is_err() || model.nq() == model.nv());
    assert!(model.coordinate_gradient(&q, &DVector::zeros(model.nq())).is_err());
    assert!(model.tangent_gradient(&DVector::zeros(model.nq()), &DVector::zeros(model.nq())).is_err());
    let mut nan = DVector::zeros(model.nv());
    nan[0] = f64::NAN;
    assert!(model.coordinate_gradient(&q, &nan).is_err());
}
